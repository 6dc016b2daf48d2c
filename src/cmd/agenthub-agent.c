/* agenthub-agent.c - the discovery agent's command line.
 *
 *   agenthub-agent inventory [--root DIR]   this machine's inventory JSON (upstream schema)
 *   agenthub-agent host-id [--root DIR]     the host id the upstream agent would register with
 *   agenthub-agent simulate --iso URL --hosts N ...   a fleet of virtual hosts (simulate.h) */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent/inventory.h"
#include "agent/simulate.h"
#include "assisted/progress.h"
#include "base/cli.h"
#include "version.h"

static void usage(FILE *f)
{
	fputs("usage: agenthub-agent --version\n"
	      "       agenthub-agent inventory [--root DIR]\n"
	      "       agenthub-agent host-id [--root DIR]\n"
	      "       agenthub-agent simulate (--iso URL... | --iso-list FILE | --ignition FILE...) --hosts N\n"
	      "           [--cpus C] [--memory-gib M] [--disk-gib D] [--subnet CIDR] [--stage-seconds S]\n"
	      "           [--fail-at-stage STAGE] [--seed S] [--cacert FILE] [--insecure]\n"
	      "           [--service-url URL] [--max-inflight K] [--duration SECONDS]\n"
	      "           [--max-poll-seconds S] [--ramp-seconds S] [--status-seconds S]\n"
	      "           [--reboot-after SECONDS] [--shared-connections]\n"
	      "\n"
	      "simulate: --iso and --ignition may be repeated (host i boots source i mod count);\n"
	      "--iso-list reads one URL per line (blank lines and # comments skipped).\n"
	      "--max-poll-seconds caps every pause between polls (default: the hub's\n"
	      "next_instruction_seconds, as upstream); --ramp-seconds spreads the boots (default 5).\n"
	      "A host told to exit in unbinding-pending-user-action stops; --reboot-after plays the\n"
	      "person (or BMC) who reboots it into the discovery image SECONDS later (same host id\n"
	      "and hardware, a fresh boot), and also reboots installed hosts once they show that\n"
	      "state (looked at every 10 s).\n"
	      "--seed S makes the host ids and hardware repeatable (the same S, the same hosts);\n"
	      "without it every run gets fresh host ids.  --fail-at-stage takes an upstream\n"
	      "stage name, e.g. \"Writing image to disk\".  --cacert is the hub's CA\n"
	      "(DIR/ca.crt, DIR being the hub's --data-dir).\n"
	      "Each host keeps its own keep-alive connection between polls, as a real agent does;\n"
	      "--shared-connections makes the hosts share at most --max-inflight connections.\n",
	      f);
}

static int parse_uint(const char *name, const char *v, unsigned long long max, unsigned long long *ret)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || x > max) {
		fprintf(stderr, "agenthub-agent simulate: --%s: invalid value '%s' (want a whole number from 0 to %llu)\n",
			name, v, max);
		return -1;
	}
	*ret = x;
	return 0;
}

static int cmd_inventory(int argc, char **argv, bool host_id)
{
	static const struct option longopts[] = { { "root", required_argument, NULL, 'r' },
						   { "help", no_argument, NULL, 'h' },
						   { NULL, 0, NULL, 0 } };
	const char *root = "/";
	ah_err err = { 0 };
	json_t *inv;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":r:h", longopts, NULL)) != -1) {
		if (c == 'r') {
			root = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			cli_option_error(stderr, host_id ? "agenthub-agent host-id" : "agenthub-agent inventory",
					 c, argv, longopts);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agenthub-agent: unexpected argument: %s (see --help)\n", argv[optind]);
		return 2;
	}
	if (host_id) {
		char id[37];
		inventory_host_id(root, id, sizeof(id));
		printf("%s\n", id);
		return 0;
	}
	if (inventory_collect(root, &inv, &err) < 0) {
		fprintf(stderr, "agenthub-agent: inventory: %s\n", err.message);
		return 1;
	}
	json_dumpf(inv, stdout, JSON_INDENT(2));
	fputc('\n', stdout);
	json_decref(inv);
	return 0;
}

/* Append the non-empty, non-comment lines of path to *list. */
static int read_list(const char *path, char ***list, unsigned *n)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (!f) {
		fprintf(stderr, "agenthub-agent simulate: --iso-list: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while ((len = getline(&line, &cap, f)) >= 0) {
		char *p = line, **nl;
		while (len > 0 && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t'))
			p[--len] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '#')
			continue;
		nl = realloc(*list, (*n + 1) * sizeof(**list));
		if (!nl || !(nl[*n] = strdup(p))) {
			if (nl)
				*list = nl;
			free(line);
			fclose(f);
			fprintf(stderr, "agenthub-agent simulate: out of memory\n");
			return -1;
		}
		*list = nl;
		(*n)++;
	}
	free(line);
	fclose(f);
	return 0;
}

static int add_source(char ***list, unsigned *n, const char *v)
{
	char **nl = realloc(*list, (*n + 1) * sizeof(**list));

	if (!nl || !(nl[*n] = strdup(v))) {
		if (nl)
			*list = nl;
		fprintf(stderr, "agenthub-agent simulate: out of memory\n");
		return -1;
	}
	*list = nl;
	(*n)++;
	return 0;
}

static int cmd_simulate(int argc, char **argv)
{
	enum { O_ISO = 256, O_IGN, O_HOSTS, O_CPUS, O_MEM, O_DISK, O_SUBNET, O_STAGE, O_FAIL, O_SEED,
	       O_CACERT, O_INSECURE, O_URL, O_INFLIGHT, O_DURATION, O_MAXPOLL, O_RAMP, O_STATUS, O_ISOLIST,
	       O_REBOOT, O_SHARED };
	static const struct option longopts[] = {
		{ "iso", required_argument, NULL, O_ISO },
		{ "ignition", required_argument, NULL, O_IGN },
		{ "hosts", required_argument, NULL, O_HOSTS },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "memory-gib", required_argument, NULL, O_MEM },
		{ "disk-gib", required_argument, NULL, O_DISK },
		{ "subnet", required_argument, NULL, O_SUBNET },
		{ "stage-seconds", required_argument, NULL, O_STAGE },
		{ "fail-at-stage", required_argument, NULL, O_FAIL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "cacert", required_argument, NULL, O_CACERT },
		{ "insecure", no_argument, NULL, O_INSECURE },
		{ "service-url", required_argument, NULL, O_URL },
		{ "max-inflight", required_argument, NULL, O_INFLIGHT },
		{ "duration", required_argument, NULL, O_DURATION },
		{ "max-poll-seconds", required_argument, NULL, O_MAXPOLL },
		{ "ramp-seconds", required_argument, NULL, O_RAMP },
		{ "status-seconds", required_argument, NULL, O_STATUS },
		{ "iso-list", required_argument, NULL, O_ISOLIST },
		{ "reboot-after", required_argument, NULL, O_REBOOT },
		{ "shared-connections", no_argument, NULL, O_SHARED },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct simulate_opts o;
	ah_err err = { 0 };
	unsigned long long v;
	char **isos = NULL, **igns = NULL;
	unsigned nisos = 0, nigns = 0;
	int c, rc = 2;
	bool seeded = false;

	simulate_opts_default(&o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *name = c >= O_ISO && c <= O_SHARED ? longopts[c - O_ISO].name : "";
		switch (c) {
		case O_ISO:
			if (add_source(&isos, &nisos, optarg) < 0)
				goto out;
			break;
		case O_ISOLIST:
			if (read_list(optarg, &isos, &nisos) < 0)
				goto out;
			break;
		case O_IGN:
			if (add_source(&igns, &nigns, optarg) < 0)
				goto out;
			break;
		case O_SUBNET: o.subnet = optarg; break;
		case O_FAIL: o.fail_at_stage = optarg; break;
		case O_CACERT: o.cacert = optarg; break;
		case O_INSECURE: o.insecure = true; break;
		case O_SHARED: o.shared_connections = true; break;
		case O_URL: o.service_url = optarg; break;
		case O_SEED:
			if (parse_uint(name, optarg, UINT64_MAX, &v) < 0)
				goto out;
			o.seed = v;
			seeded = true;
			break;
		case O_HOSTS: case O_CPUS: case O_MEM: case O_DISK: case O_STAGE: case O_INFLIGHT: case O_DURATION:
		case O_MAXPOLL: case O_RAMP: case O_STATUS:
			if (parse_uint(name, optarg, 1000000, &v) < 0)
				goto out;
			if (c == O_HOSTS) o.hosts = (unsigned)v;
			else if (c == O_CPUS) o.cpus = (unsigned)v;
			else if (c == O_MEM) o.memory_gib = (unsigned)v;
			else if (c == O_DISK) o.disk_gib = (unsigned)v;
			else if (c == O_STAGE) o.stage_seconds = (unsigned)v;
			else if (c == O_INFLIGHT) o.max_inflight = (unsigned)v;
			else if (c == O_MAXPOLL) o.max_poll_seconds = (unsigned)v;
			else if (c == O_RAMP) o.ramp_ms = (unsigned)v * 1000;
			else if (c == O_STATUS) o.status_seconds = v ? (unsigned)v : 1;
			else o.duration_seconds = (unsigned)v;
			break;
		case O_REBOOT:
			if (parse_uint(name, optarg, 1000000, &v) < 0)
				goto out;
			o.reboot_after_seconds = (int)v;
			break;
		case 'h':
			usage(stdout);
			rc = 0;
			goto out;
		default:
			cli_option_error(stderr, "agenthub-agent simulate", c, argv, longopts);
			goto out;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agenthub-agent simulate: unexpected argument: %s (see --help)\n", argv[optind]);
		goto out;
	}
	if (o.fail_at_stage && host_stage_id(o.fail_at_stage) < 0) {
		fprintf(stderr, "agenthub-agent simulate: --fail-at-stage: unknown stage \"%s\"; the upstream stages are:",
			o.fail_at_stage);
		for (int i = 0; i < HOST_STAGE_COUNT; i++)
			fprintf(stderr, "%s \"%s\"", i ? "," : "", host_stage_name(i));
		fputc('\n', stderr);
		goto out;
	}
	/* Fresh host ids on every run unless the seed is given: two runs
	 * against one hub would otherwise register the same hosts. */
	if (!seeded) {
		uint64_t r = 0;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		o.seed = r % 1000000000000ull + 2; /* keeps hostnames short; 1 is --seed's old default */
	}
	if (nisos && nigns) {
		fprintf(stderr, "agenthub-agent simulate: --iso/--iso-list and --ignition exclude each other\n");
		goto out;
	}
	if (!nisos && !nigns) {
		fprintf(stderr, "agenthub-agent simulate: a discovery image is required: --iso URL, --iso-list FILE "
			"(with at least one URL) or --ignition FILE\n");
		goto out;
	}
	o.sources = (const char *const *)(nisos ? isos : igns);
	o.nsources = nisos ? nisos : nigns;
	o.from_ignition = nigns > 0;
	rc = 0;
	if (simulate_run(&o, &err) < 0) {
		fprintf(stderr, "agenthub-agent simulate: %s\n", err.message);
		rc = 1;
	}
out:
	for (unsigned i = 0; i < nisos; i++)
		free(isos[i]);
	for (unsigned i = 0; i < nigns; i++)
		free(igns[i]);
	free(isos);
	free(igns);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("agenthub-agent %s (revision %s)\n", AGENTHUB_VERSION, AGENTHUB_REVISION);
		return 0;
	}
	if (!strcmp(argv[1], "inventory"))
		return cmd_inventory(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "host-id"))
		return cmd_inventory(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "simulate"))
		return cmd_simulate(argc - 1, argv + 1);
	{
		static const char *const commands[] = { "inventory", "host-id", "simulate", "version", "help", NULL };
		const char *hint = cli_suggest(argv[1] + strspn(argv[1], "-"), commands);

		if (hint)
			fprintf(stderr, "agenthub-agent: unknown %s %s; did you mean %s%s?\n",
				argv[1][0] == '-' ? "flag" : "command", argv[1],
				argv[1][0] == '-' && !strcmp(hint, "version") ? "--" : "", hint);
		else
			fprintf(stderr, "agenthub-agent: unknown %s %s (commands: inventory, host-id, simulate, version)\n",
				argv[1][0] == '-' ? "flag" : "command", argv[1]);
	}
	return 2;
}
