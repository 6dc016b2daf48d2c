/* agenthub-agent.c - the discovery agent's command line.
 *
 *   agenthub-agent inventory [--root DIR]   this machine's inventory JSON (upstream schema)
 *   agenthub-agent host-id [--root DIR]     the host id the upstream agent would register with
 *   agenthub-agent simulate --iso URL --hosts N ...   a fleet of virtual hosts (simulate.h)
 *   agenthub-agent simulate --bmc HOST:PORT --hosts N --bmh-manifests FILE ...
 *                                           the same machines behind a Redfish BMC (bmc.h)
 *
 * The BMC's transport is src/http's server (this file is the cmd layer, which may use every
 * layer); the Redfish logic itself is src/agent/bmc.c, which sees no HTTP library. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "agent/bmc.h"
#include "agent/inventory.h"
#include "agent/simulate.h"
#include "assisted/progress.h"
#include "base/cli.h"
#include "http/creds.h"
#include "http/server.h"
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
	      "       agenthub-agent simulate --bmc HOST:PORT --hosts N --bmh-manifests FILE\n"
	      "           [--bmh-namespace NS] [--bmh-infraenv NAME] [--bmc-user U --bmc-password P]\n"
	      "           [--bmc-tls [--bmc-tls-dir DIR]] [--cacert FILE | --insecure] [other simulate flags]\n"
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
	      "--shared-connections makes the hosts share at most --max-inflight connections.\n"
	      "\n"
	      "simulate --bmc: N machines, powered off, behind one Redfish service on HOST:PORT\n"
	      "(port 0 picks a free one; HTTPS with --bmc-tls, its CA and certificate kept in\n"
	      "--bmc-tls-dir, default a new directory under TMPDIR).  FILE receives per machine a\n"
	      "BMC credentials Secret and a BareMetalHost (namespace NS, default \"default\"; label\n"
	      "infraenvs.agent-install.openshift.io: NAME with --bmh-infraenv) for `kubectl apply -f`.\n"
	      "Basic auth with --bmc-user/--bmc-password (default admin/password).  A machine powered\n"
	      "on from the virtual CD downloads the inserted image (--cacert/--insecure apply) and runs\n"
	      "as a discovery host; from its disk after an install it runs the installed system.\n"
	      "Use --seed to keep the same machines (MACs, system ids) across runs.  A machine whose\n"
	      "image runs the ironic agent (converged flow) talks to Ironic's API instead and starts\n"
	      "its assisted agent when the deploy step arrives at http(s)://HOST:PORT/ipa/<id>.\n",
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

struct bmc_cli {
	const char *listen, *manifests, *ns, *infraenv, *user, *password, *tls_dir;
	bool tls;
};

/* A DNS-1123 label or subdomain, as Kubernetes wants names and namespaces. */
static bool dns_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n > max || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || (max > 63 && *p == '.')))
			return false;
	return true;
}

static enum http_result bmc_http(void *ud, struct http_req *req)
{
	struct bmc_request q = { .method = req->method, .path = req->path,
				 .authorization = http_header(req, "Authorization"),
				 .if_match = http_header(req, "If-Match"),
				 .agent_token = http_query(req, "agent_token"), .body = req->body.buf ? req->body.buf : "",
				 .len = req->body.len, .too_big = req->too_big };
	struct bmc_reply r;
	struct http_response *resp;

	bmc_handle(ud, &q, &r);
	resp = http_response_new(r.status, r.body ? "application/json" : NULL);
	if (!resp) {
		bmc_reply_release(&r);
		return HTTP_NO;
	}
	if (r.body && http_response_take_body(resp, r.body, strlen(r.body)) < 0)
		r.status = 500;
	r.body = NULL;
	http_response_add_header(resp, "OData-Version", "4.0");
	if (r.etag[0])
		http_response_add_header(resp, "ETag", r.etag);
	if (r.allow)
		http_response_add_header(resp, "Allow", r.allow);
	if (r.authenticate)
		http_response_add_header(resp, "WWW-Authenticate", "Basic realm=\"agenthub-bmc\"");
	return http_send(req, resp);
}

/* simulate --bmc: the machines, their BMC, its HTTP(S) server and the manifests. */
static int run_bmc(struct simulate_opts *o, const struct bmc_cli *bc)
{
	struct fakehost_fleet fleet;
	struct bmc_machine_def *defs = NULL;
	char (*ids)[37] = NULL, (*names)[32] = NULL, (*macs)[18] = NULL;
	struct bmc *b = NULL;
	struct http_server *srv = NULL;
	struct creds creds = { 0 };
	char host[256], addr[300], tlsdir[4096], ipa[400];
	const char *colon;
	ah_err err = { 0 };
	int rc = 2, fd;
	FILE *f;

	if (!bc->manifests) {
		fprintf(stderr, "agenthub-agent simulate: --bmc needs --bmh-manifests FILE (where the BareMetalHosts "
			"and their Secrets are written)\n");
		return 2;
	}
	colon = strrchr(bc->listen, ':');
	if (!colon || colon == bc->listen || !colon[1] || (size_t)(colon - bc->listen) >= sizeof(host)) {
		fprintf(stderr, "agenthub-agent simulate: --bmc: want HOST:PORT (e.g. 127.0.0.1:8000), got '%s'\n",
			bc->listen);
		return 2;
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - bc->listen), bc->listen);
	if (!dns_name_ok(bc->ns, 63)) {
		fprintf(stderr, "agenthub-agent simulate: --bmh-namespace: '%s' is not a valid namespace (a DNS-1123 "
			"label: lower-case letters, digits and '-', at most 63)\n", bc->ns);
		return 2;
	}
	if (bc->infraenv && !dns_name_ok(bc->infraenv, 253)) {
		fprintf(stderr, "agenthub-agent simulate: --bmh-infraenv: '%s' is not a valid InfraEnv name (a "
			"DNS-1123 subdomain)\n", bc->infraenv);
		return 2;
	}
	if (!*bc->user || !*bc->password || strchr(bc->user, ':')) {
		fprintf(stderr, "agenthub-agent simulate: --bmc-user and --bmc-password must not be empty, and the "
			"user must not contain ':'\n");
		return 2;
	}
	if (bc->tls_dir && !bc->tls) {
		fprintf(stderr, "agenthub-agent simulate: --bmc-tls-dir needs --bmc-tls\n");
		return 2;
	}
	if (o->hosts == 0) {
		fprintf(stderr, "agenthub-agent simulate: --hosts must be positive\n");
		return 2;
	}
	if (fakehost_fleet_init(&fleet, o->seed, o->hosts, o->cpus, o->memory_gib, o->disk_gib, o->subnet, &err) < 0) {
		fprintf(stderr, "agenthub-agent simulate: %s\n", err.message);
		return 2;
	}
	rc = 1;
	defs = calloc(o->hosts, sizeof(*defs));
	ids = calloc(o->hosts, sizeof(*ids));
	names = calloc(o->hosts, sizeof(*names));
	macs = calloc(o->hosts, sizeof(*macs));
	if (!defs || !ids || !names || !macs) {
		fprintf(stderr, "agenthub-agent simulate: out of memory\n");
		goto out;
	}
	for (unsigned i = 0; i < o->hosts; i++) {
		fakehost_host_id(&fleet, i, ids[i]);
		fakehost_hostname(&fleet, i, names[i]);
		fakehost_mac(&fleet, i, macs[i]);
		defs[i] = (struct bmc_machine_def){ .id = ids[i], .name = names[i], .mac = macs[i],
						    .cpus = o->cpus, .memory_gib = o->memory_gib };
	}
	if (bmc_new(defs, o->hosts, &(struct bmc_opts){ .user = bc->user, .password = bc->password }, &b, &err) < 0) {
		fprintf(stderr, "agenthub-agent simulate: %s\n", err.message);
		goto out;
	}
	if (bc->tls) {
		const char *hosts[] = { host[0] == '[' ? NULL : host, NULL };
		const char *tmp = getenv("TMPDIR");

		if (bc->tls_dir) {
			snprintf(tlsdir, sizeof(tlsdir), "%s", bc->tls_dir);
		} else {
			snprintf(tlsdir, sizeof(tlsdir), "%s/agenthub-bmc-XXXXXX", tmp && *tmp ? tmp : "/tmp");
			if (!mkdtemp(tlsdir)) {
				fprintf(stderr, "agenthub-agent simulate: %s: %s\n", tlsdir, strerror(errno));
				goto out;
			}
		}
		/* Wildcard listen addresses are no names a certificate can carry. */
		if (hosts[0] && (!strcmp(host, "0.0.0.0") || !strcmp(host, "::")))
			hosts[0] = NULL;
		if (creds_load_or_create(tlsdir, hosts, &creds, &err) < 0) {
			fprintf(stderr, "agenthub-agent simulate: --bmc-tls: %s\n", err.message);
			goto out;
		}
	}
	{
		struct http_server_opts so = { .listen = bc->listen, .cert_pem = bc->tls ? creds.cert_pem : NULL,
					       .key_pem = bc->tls ? creds.key_pem : NULL, .max_body = 64 * 1024,
					       .max_conns = 512, .threads = 2, .idle_timeout = 60,
					       .request_timeout = 30 };
		if (http_server_start(&so, bmc_http, b, &srv, &err) < 0) {
			fprintf(stderr, "agenthub-agent simulate: --bmc %s: %s\n", bc->listen, err.message);
			goto out;
		}
	}
	snprintf(addr, sizeof(addr), "%s:%u", host, http_server_port(srv));
	fd = open(bc->manifests, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f || bmc_write_manifests(b, f, addr, bc->tls, bc->ns, bc->infraenv) < 0) {
		fprintf(stderr, "agenthub-agent simulate: --bmh-manifests %s: %s\n", bc->manifests,
			strerror(errno ? errno : EIO));
		if (f)
			fclose(f);
		else if (fd >= 0)
			close(fd);
		goto out;
	}
	if (fclose(f) != 0) {
		fprintf(stderr, "agenthub-agent simulate: --bmh-manifests %s: %s\n", bc->manifests, strerror(errno));
		goto out;
	}
	fprintf(stderr, "simulate: BMC: Redfish service on %s://%s/redfish/v1/ (%u systems); BareMetalHosts in %s\n",
		bc->tls ? "https" : "http", addr, o->hosts, bc->manifests);
	if (bc->tls)
		fprintf(stderr, "simulate: BMC: its CA is %s/ca.crt\n", tlsdir);
	snprintf(ipa, sizeof(ipa), "%s://%s/ipa", bc->tls ? "https" : "http", addr);
	o->ipa_callback = ipa;
	o->bmc = b;
	rc = 0;
	if (simulate_run(o, &err) < 0) {
		fprintf(stderr, "agenthub-agent simulate: %s\n", err.message);
		rc = 1;
	}
out:
	if (srv)
		http_server_stop(srv);
	bmc_free(b);
	creds_release(&creds);
	free(defs);
	free(ids);
	free(names);
	free(macs);
	return rc;
}

static int cmd_simulate(int argc, char **argv)
{
	enum { O_ISO = 256, O_IGN, O_HOSTS, O_CPUS, O_MEM, O_DISK, O_SUBNET, O_STAGE, O_FAIL, O_SEED,
	       O_CACERT, O_INSECURE, O_URL, O_INFLIGHT, O_DURATION, O_MAXPOLL, O_RAMP, O_STATUS, O_ISOLIST,
	       O_REBOOT, O_SHARED, O_BMC, O_MANIFESTS, O_BMHNS, O_BMHIE, O_BMCUSER, O_BMCPASS, O_BMCTLS,
	       O_BMCTLSDIR };
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
		{ "bmc", required_argument, NULL, O_BMC },
		{ "bmh-manifests", required_argument, NULL, O_MANIFESTS },
		{ "bmh-namespace", required_argument, NULL, O_BMHNS },
		{ "bmh-infraenv", required_argument, NULL, O_BMHIE },
		{ "bmc-user", required_argument, NULL, O_BMCUSER },
		{ "bmc-password", required_argument, NULL, O_BMCPASS },
		{ "bmc-tls", no_argument, NULL, O_BMCTLS },
		{ "bmc-tls-dir", required_argument, NULL, O_BMCTLSDIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct simulate_opts o;
	ah_err err = { 0 };
	unsigned long long v;
	char **isos = NULL, **igns = NULL;
	unsigned nisos = 0, nigns = 0;
	int c, rc = 2;
	bool seeded = false, reboot_set = false;
	struct bmc_cli bc = { .ns = "default", .user = "admin", .password = "password" };

	simulate_opts_default(&o);
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		const char *name = c >= O_ISO && c <= O_BMCTLSDIR ? longopts[c - O_ISO].name : "";
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
			reboot_set = true;
			break;
		case O_BMC: bc.listen = optarg; break;
		case O_MANIFESTS: bc.manifests = optarg; break;
		case O_BMHNS: bc.ns = optarg; break;
		case O_BMHIE: bc.infraenv = optarg; break;
		case O_BMCUSER: bc.user = optarg; break;
		case O_BMCPASS: bc.password = optarg; break;
		case O_BMCTLS: bc.tls = true; break;
		case O_BMCTLSDIR: bc.tls_dir = optarg; break;
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
	if (bc.listen) {
		if (nisos || nigns || reboot_set) {
			fprintf(stderr, "agenthub-agent simulate: --bmc excludes --iso, --iso-list, --ignition and "
				"--reboot-after: the machines boot what their BMC gives them, and the hub reboots them\n");
			goto out;
		}
		rc = run_bmc(&o, &bc);
		goto out;
	}
	if (bc.manifests || bc.infraenv || bc.tls || bc.tls_dir || strcmp(bc.ns, "default") ||
	    strcmp(bc.user, "admin") || strcmp(bc.password, "password")) {
		fprintf(stderr, "agenthub-agent simulate: --bmh-*, --bmc-user, --bmc-password and --bmc-tls* need "
			"--bmc HOST:PORT\n");
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
