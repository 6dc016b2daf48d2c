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

#include "agent/inventory.h"
#include "agent/simulate.h"

static void usage(FILE *f)
{
	fputs("usage: agenthub-agent inventory [--root DIR]\n"
	      "       agenthub-agent host-id [--root DIR]\n"
	      "       agenthub-agent simulate (--iso URL | --ignition FILE) --hosts N [--cpus C]\n"
	      "           [--memory-gib M] [--disk-gib D] [--subnet CIDR] [--stage-seconds S]\n"
	      "           [--fail-at-stage STAGE] [--seed S] [--cacert FILE] [--insecure]\n"
	      "           [--service-url URL] [--max-inflight K] [--duration SECONDS]\n",
	      f);
}

static int parse_uint(const char *name, const char *v, unsigned long long max, unsigned long long *ret)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || end == v || *end || v[0] == '-' || x > max) {
		fprintf(stderr, "agenthub-agent: %s: invalid value '%s'\n", name, v);
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

	while ((c = getopt_long(argc, argv, "r:h", longopts, NULL)) != -1) {
		if (c == 'r') {
			root = optarg;
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
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

static int cmd_simulate(int argc, char **argv)
{
	enum { O_ISO = 256, O_IGN, O_HOSTS, O_CPUS, O_MEM, O_DISK, O_SUBNET, O_STAGE, O_FAIL, O_SEED,
	       O_CACERT, O_INSECURE, O_URL, O_INFLIGHT, O_DURATION };
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
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct simulate_opts o;
	ah_err err = { 0 };
	unsigned long long v;
	int c;

	simulate_opts_default(&o);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		const char *name = c >= O_ISO && c <= O_DURATION ? longopts[c - O_ISO].name : "";
		switch (c) {
		case O_ISO: o.iso_url = optarg; break;
		case O_IGN: o.ignition_file = optarg; break;
		case O_SUBNET: o.subnet = optarg; break;
		case O_FAIL: o.fail_at_stage = optarg; break;
		case O_CACERT: o.cacert = optarg; break;
		case O_INSECURE: o.insecure = true; break;
		case O_URL: o.service_url = optarg; break;
		case O_SEED:
			if (parse_uint(name, optarg, UINT64_MAX, &v) < 0)
				return 2;
			o.seed = v;
			break;
		case O_HOSTS: case O_CPUS: case O_MEM: case O_DISK: case O_STAGE: case O_INFLIGHT: case O_DURATION:
			if (parse_uint(name, optarg, 1000000, &v) < 0)
				return 2;
			if (c == O_HOSTS) o.hosts = (unsigned)v;
			else if (c == O_CPUS) o.cpus = (unsigned)v;
			else if (c == O_MEM) o.memory_gib = (unsigned)v;
			else if (c == O_DISK) o.disk_gib = (unsigned)v;
			else if (c == O_STAGE) o.stage_seconds = (unsigned)v;
			else if (c == O_INFLIGHT) o.max_inflight = (unsigned)v;
			else o.duration_seconds = (unsigned)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!!o.iso_url == !!o.ignition_file) {
		fprintf(stderr, "agenthub-agent simulate: give exactly one of --iso and --ignition\n");
		return 2;
	}
	if (simulate_run(&o, &err) < 0) {
		fprintf(stderr, "agenthub-agent simulate: %s\n", err.message);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "inventory"))
		return cmd_inventory(argc - 1, argv + 1, false);
	if (!strcmp(argv[1], "host-id"))
		return cmd_inventory(argc - 1, argv + 1, true);
	if (!strcmp(argv[1], "simulate"))
		return cmd_simulate(argc - 1, argv + 1);
	fprintf(stderr, "agenthub-agent: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
