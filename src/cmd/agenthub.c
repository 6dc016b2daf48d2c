/* agenthub.c - the hub daemon's command line: `agenthub serve` runs the
 * Kubernetes-compatible API on the embedded store. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assisted/progress.h"
#include "base/log.h"
#include "api/api.h"
#include "controllers/hub.h"
#include "http/creds.h"
#include "http/kubeapi.h"
#include "http/server.h"
#include "kube/api.h"
#include "kube/registry.h"
#include "store/store.h"

#define DEFAULT_MAX_BODY (3u * 1024 * 1024)

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct serve_opts {
	const char *data_dir;
	const char *listen;
	const char *store_url;
	size_t event_log_keep;
	size_t max_body;
	size_t cache_bytes;
	int verbose;
	const char *os_images;
	const char *service_url;
	struct host_timeouts timeouts; /* environment, then --host-timeout / --host-disconnect-timeout */
};

extern char **environ;

struct app {
	struct kubeapi *ka;
	struct hub *hub;
};

static enum MHD_Result handle(void *userdata, struct http_req *req)
{
	struct app *app = userdata;
	bool handled = false;
	enum MHD_Result r = hub_handle(app->hub, req, &handled);

	if (handled)
		return r;
	r = kubeapi_handle(app->ka, req, &handled);
	if (handled)
		return r;
	return http_reply(req, 404, "application/json",
			  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			  "\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"code\":404}",
			  strlen("{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
				 "\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"code\":404}"));
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: agenthub serve [options]\n"
		"\n"
		"Runs the hub: the Kubernetes API for the Assisted Installer kinds on an embedded store.\n"
		"\n"
		"options:\n"
		"  --data-dir DIR        where the store, credentials and kubeconfig live (default ./data)\n"
		"  --listen HOST:PORT    HTTPS address (default 127.0.0.1:6443)\n"
		"  --store URL           sqlite (default: DIR/agenthub.db) or a path to a database file\n"
		"  --event-log-keep N    events kept for watches before compaction (default 100000)\n"
		"  --max-body-bytes N    largest accepted request body (default 3145728)\n"
		"  --object-cache-bytes N\n"
		"                        memory for recently read or written objects, which point\n"
		"                        reads then take without the database (default 67108864;\n"
		"                        0 turns the cache off)\n"
		"  --os-images FILE      JSON list of OS images (openshift_version, cpu_architecture,\n"
		"                        url, version) as upstream's OS_IMAGES; url is a local path or\n"
		"                        an http(s) URL, downloaded once into DIR/os-images; default:\n"
		"                        the test ISO built with agenthub (build/testiso/discovery-test.iso)\n"
		"  --service-url URL     how hosts reach this hub (default https://LISTEN)\n"
		"  --host-disconnect-timeout DURATION\n"
		"                        silence after which a host is disconnected (default 3m;\n"
		"                        same as --host-timeout HOST_MAX_DISCONNECTION_TIME=DURATION)\n"
		"  --host-timeout NAME=DURATION\n"
		"                        a host timeout by its upstream name, repeatable; wins over the\n"
		"                        environment variable of the same name: HOST_MAX_DISCONNECTION_TIME,\n"
		"                        PREPARE_FOR_INSTALLATION_HOST_TIMEOUT,\n"
		"                        HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT,\n"
		"                        HOST_LOG_COLLECTION_TIMEOUT, HOST_LOG_PENDING_TIMEOUT,\n"
		"                        HOST_STAGE_<STAGE>_TIMEOUT (e.g. HOST_STAGE_INSTALLING_TIMEOUT),\n"
		"                        ENABLE_SOFT_TIMEOUTS=true|false\n"
		"  -v, --verbose         debug logging\n"
		"  -h, --help            this text\n");
}

/* The upstream timeout knobs set in the environment (as the upstream service
 * reads them); other variables are not ours and are left alone.  A knob with a
 * bad value stops the start: running with a timeout the operator did not
 * intend is worse than not running. */
static int timeouts_from_environment(struct host_timeouts *t)
{
	host_timeouts_init(t);
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[128];
		ah_err err;
		int r;

		if (!eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		ah_err_clear(&err);
		r = host_timeouts_set(t, name, eq + 1, &err);
		if (r == -EINVAL) {
			fprintf(stderr, "agenthub: environment variable %s\n", err.message);
			return r;
		}
		if (r == 0)
			log_info("host timeout %s=%s (environment)", name, eq + 1);
	}
	return 0;
}

/* One timeout from the command line; flag is the option, for the message. */
static int timeout_flag(const char *flag, const char *name, const char *value, struct host_timeouts *t)
{
	ah_err err;
	int r;

	ah_err_clear(&err);
	r = host_timeouts_set(t, name, value, &err);
	if (r == -ENOENT) {
		fprintf(stderr,
			"agenthub: %s: unknown timeout %s (expected HOST_MAX_DISCONNECTION_TIME, "
			"PREPARE_FOR_INSTALLATION_HOST_TIMEOUT, HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT, "
			"HOST_LOG_COLLECTION_TIMEOUT, HOST_LOG_PENDING_TIMEOUT, ENABLE_SOFT_TIMEOUTS or "
			"HOST_STAGE_<STAGE>_TIMEOUT for an upstream stage)\n",
			flag, name);
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "agenthub: %s %s\n", flag, err.message);
		return r;
	}
	log_info("host timeout %s=%s (%s)", name, value, flag);
	return 0;
}

static int parse_serve(int argc, char **argv, struct serve_opts *o)
{
	static const struct option longopts[] = {
		{ "data-dir", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "store", required_argument, NULL, 's' },
		{ "event-log-keep", required_argument, NULL, 'e' },
		{ "max-body-bytes", required_argument, NULL, 'b' },
		{ "object-cache-bytes", required_argument, NULL, 'c' },
		{ "os-images", required_argument, NULL, 'o' },
		{ "service-url", required_argument, NULL, 'u' },
		{ "host-disconnect-timeout", required_argument, NULL, 't' },
		{ "host-timeout", required_argument, NULL, 'T' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	o->data_dir = "data";
	o->listen = "127.0.0.1:6443";
	o->event_log_keep = 100000;
	o->max_body = DEFAULT_MAX_BODY;
	o->cache_bytes = STORE_CACHE_BYTES_DEFAULT;
	if (timeouts_from_environment(&o->timeouts) < 0)
		return -EINVAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'd': o->data_dir = optarg; break;
		case 'l': o->listen = optarg; break;
		case 's': o->store_url = optarg; break;
		case 'e':
			o->event_log_keep = strtoul(optarg, &end, 10);
			if (*end || o->event_log_keep < 1) {
				fprintf(stderr, "agenthub: --event-log-keep: expected a positive number, got %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'b':
			o->max_body = strtoul(optarg, &end, 10);
			if (*end || o->max_body < 1024) {
				fprintf(stderr, "agenthub: --max-body-bytes: expected a number >= 1024, got %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'c':
			errno = 0;
			o->cache_bytes = strtoull(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno) {
				fprintf(stderr, "agenthub: --object-cache-bytes: expected a number of bytes (0: no cache), got %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'o': o->os_images = optarg; break;
		case 'u': o->service_url = optarg; break;
		case 't':
			if (timeout_flag("--host-disconnect-timeout", "HOST_MAX_DISCONNECTION_TIME", optarg,
					 &o->timeouts) < 0)
				return -EINVAL;
			break;
		case 'T': {
			const char *eq = strchr(optarg, '=');
			char name[128];

			if (!eq || eq == optarg || (size_t)(eq - optarg) >= sizeof(name)) {
				fprintf(stderr, "agenthub: --host-timeout: expected NAME=DURATION, got %s\n", optarg);
				return -EINVAL;
			}
			snprintf(name, sizeof(name), "%.*s", (int)(eq - optarg), optarg);
			if (timeout_flag("--host-timeout", name, eq + 1, &o->timeouts) < 0)
				return -EINVAL;
			break;
		}
		case 'v': o->verbose = 1; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agenthub: unexpected argument: %s\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* The host part of HOST:PORT, for the certificate and the kubeconfig. */
static void listen_host(const char *listen, char *host, size_t size)
{
	const char *colon;

	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		snprintf(host, size, "%.*s", rb ? (int)(rb - listen - 1) : 0, listen + 1);
		return;
	}
	colon = strrchr(listen, ':');
	snprintf(host, size, "%.*s", colon ? (int)(colon - listen) : (int)strlen(listen), listen);
	if (!host[0] || strcmp(host, "0.0.0.0") == 0)
		snprintf(host, size, "127.0.0.1");
}

static int serve(int argc, char **argv)
{
	struct serve_opts o = { 0 };
	struct store_options so = { 0 };
	struct creds creds = { 0 };
	struct kube_registry *reg = NULL;
	struct kube_api *api = NULL;
	struct http_server *srv = NULL;
	struct kubeapi_opts kao = { 0 };
	struct http_server_opts hso = { 0 };
	struct app app = { 0 };
	char host[256], db[4096], kubeconfig[4096], url[512], addr[300];
	const char *hosts[2];
	struct sigaction sa;
	ah_err err;
	int r, rc = 1;

	ah_err_clear(&err);
	if (parse_serve(argc, argv, &o) < 0)
		return 2;
	if (o.verbose)
		log_set_level(LOG_LVL_DEBUG);
	if (mkdir(o.data_dir, 0700) < 0 && errno != EEXIST) {
		log_error("cannot create data directory %s: %s", o.data_dir, strerror(errno));
		return 1;
	}
	listen_host(o.listen, host, sizeof(host));
	hosts[0] = host;
	hosts[1] = NULL;
	r = creds_load_or_create(o.data_dir, hosts, &creds, &err);
	if (r < 0) {
		log_error("credentials in %s: %s", o.data_dir, err.message);
		return 1;
	}
	if (o.store_url)
		snprintf(db, sizeof(db), "%s", o.store_url);
	else
		snprintf(db, sizeof(db), "%s/agenthub.db", o.data_dir);
	so.event_log_keep = o.event_log_keep;
	so.sync_full = 1;
	so.cache_bytes = o.cache_bytes;
	so.cache_off = o.cache_bytes == 0;
	{
		store *st = NULL;

		r = store_open(db, &so, &st);
		if (r < 0) {
			if (r == -EBUSY)
				log_error("cannot open the store %s: another agenthub process is using it", db);
			else
				log_error("cannot open the store %s: %s", db, strerror(-r));
			goto out_creds;
		}
		r = kube_registry_new(&reg, &err);
		if (r < 0) {
			log_error("loading kinds: %s", err.message);
			store_close(st);
			goto out_creds;
		}
		r = kube_api_new(st, reg, &api, &err);
		if (r < 0) {
			log_error("starting the API: %s", err.message);
			kube_registry_free(reg);
			store_close(st);
			goto out_creds;
		}
	}
	if (strchr(host, ':'))
		snprintf(addr, sizeof(addr), "[%s]%s", host, strrchr(o.listen, ':'));
	else
		snprintf(addr, sizeof(addr), "%s%s", host, strrchr(o.listen, ':'));
	kao.creds = &creds;
	kao.server_address = addr;
	r = kubeapi_new(api, &kao, &app.ka);
	if (r < 0)
		goto out_api;
	{
		struct hub_config hc = { 0 };
		char exe[4096], iso[4200], surl[512];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		if (strrchr(exe, '/'))
			*strrchr(exe, '/') = '\0';
		snprintf(iso, sizeof(iso), "%s/testiso/discovery-test.iso", exe);
		snprintf(surl, sizeof(surl), "https://%s", addr);
		hc.data_dir = o.data_dir;
		hc.service_url = o.service_url ? o.service_url : surl;
		hc.hub_ca_pem = creds.ca_pem;
		hc.os_images_file = o.os_images;
		hc.default_iso = iso;
		hc.host_disconnect_timeout_s = o.timeouts.disconnect_s < INT_MAX ? (int)o.timeouts.disconnect_s : INT_MAX;
		/* Before the hub starts its threads: they read it from then on. */
		host_timeouts_configure(&o.timeouts);
		r = hub_new(api, &hc, &app.hub, &err);
		if (r < 0) {
			log_error("starting the hub: %s", err.message);
			goto out_ka;
		}
	}
	hso.listen = o.listen;
	hso.cert_pem = creds.cert_pem;
	hso.key_pem = creds.key_pem;
	hso.max_body = o.max_body;
	r = http_server_start(&hso, handle, &app, &srv, &err);
	if (r < 0) {
		log_error("%s", err.message);
		goto out_ka;
	}
	snprintf(url, sizeof(url), "https://%s", addr);
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", o.data_dir);
	r = creds_write_kubeconfig(kubeconfig, url, &creds, &err);
	if (r < 0) {
		log_error("writing %s: %s", kubeconfig, err.message);
		goto out_srv;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	log_info("agenthub serving the Kubernetes API on %s (store %s, revision %lld)", url, db,
		 (long long)store_current_rev(kube_api_store(api)));
	{
		char abs[4096];

		log_info("kubectl: export KUBECONFIG=%s",
			 realpath(kubeconfig, abs) ? abs : kubeconfig);
	}
	while (!got_signal)
		pause();
	log_info("signal %d: draining and stopping", (int)got_signal);
	rc = 0;
out_srv:
	http_server_set_stopping();
	store_wake_all(kube_api_store(api));
	http_server_stop(srv);
out_ka:
	hub_free(app.hub);
	kubeapi_free(app.ka);
out_api:
	{
		store *st = kube_api_store(api);

		kube_api_free(api);
		kube_registry_free(reg);
		store_close(st);
	}
out_creds:
	creds_release(&creds);
	if (rc == 0)
		log_info("stopped cleanly");
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return serve(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "help") == 0)) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
