/* agenthub.c - the hub daemon's command line: `agenthub serve` runs the
 * Kubernetes-compatible API on the embedded store. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assisted/progress.h"
#include "base/util.h"
#include "base/cli.h"
#include "base/hubmetrics.h"
#include "api/api.h"
#include "base/log.h"
#include "base/metrics.h"
#include "controllers/evlimit.h"
#include "controllers/hub.h"
#include "controllers/redfish.h"
#include "http/creds.h"
#include "http/kubeapi.h"
#include "http/server.h"
#include "kube/api.h"
#include "kube/registry.h"
#include "store/store.h"
#include "version.h"

#define DEFAULT_MAX_BODY (3u * 1024 * 1024)

static volatile sig_atomic_t got_signal;

/* The data directory holds every Secret (in the store), the CA key and
 * the tokens: it is 0700 and each file in it 0600, whatever the umask or
 * an older version left.  Looser modes are tightened at start, each with a
 * log line; entries are read through their descriptors (O_NOFOLLOW), so a
 * symbolic link is never followed out of the directory.  Bounded: at most
 * 4 levels deep.  Takes (and closes) dfd. */
static int tighten_dir(int dfd, const char *path, int depth)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (fstat(dfd, &st) < 0) {
		r = -errno;
		close(dfd);
		return r;
	}
	if ((st.st_mode & 077) && fchmod(dfd, 0700) == 0) {
		log_warn("data directory %s was mode %04o: now 0700", path, (unsigned)(st.st_mode & 07777));
	} else if (st.st_mode & 077) {
		r = -errno;
		close(dfd);
		return r;
	}
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return r;
	}
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		int fd;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue; /* a symbolic link, or gone meanwhile */
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (depth < 4)
				r = tighten_dir(fd, sub, depth + 1) < 0 ? -1 : r; /* closes fd */
			else
				close(fd);
			continue;
		}
		if (S_ISREG(st.st_mode) && (st.st_mode & 077)) {
			if (fchmod(fd, 0600) == 0)
				log_warn("%s was mode %04o: now 0600 (the data directory holds secrets)", sub,
					 (unsigned)(st.st_mode & 07777));
			else
				r = -errno;
		}
		close(fd);
	}
	closedir(d);
	return r;
}

static int secure_data_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	return tighten_dir(fd, dir, 0);
}

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
	bool live_iso_flow;             /* --converged-flow=false */
	const char *os_images;
	const char *service_url;
	const char *metrics_listen;
	const char *log_format;
	struct host_timeouts timeouts; /* environment, then --host-timeout / --host-disconnect-timeout */
	const char *event_rate_limits; /* EVENT_RATE_LIMITS, then --event-rate-limits */
	unsigned max_conns, max_downloads, http_threads, idle_timeout, request_timeout;
};

extern char **environ;

struct app {
	struct kubeapi *ka;
	struct hub *hub;
	struct kube_api *api;
	const struct creds *creds;
	const char *data_dir;
	struct http_server *srv; /* set once started (atomic: requests may come first) */
	struct http_router router;  /* filled before the server starts, read-only after */
};

#define METRICS_MAX_BYTES (64u * 1024 * 1024)

static const char UNAUTHORIZED[] =
	"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
	"\"message\":\"Unauthorized\",\"reason\":\"Unauthorized\",\"code\":401}";

struct host_count {
	json_t *by_status; /* status -> count */
};

static int count_host(const store_obj *so, void *userdata)
{
	struct host_count *hc = userdata;
	json_t *obj = json_loadb(so->json, so->len, 0, NULL);
	const char *st = json_string_value(json_object_get(
		json_object_get(json_object_get(obj, "status"), "debugInfo"), "state"));
	json_t *n;

	if (!st || !*st)
		st = "unknown";
	n = json_object_get(hc->by_status, st);
	json_object_set_new(hc->by_status, st, json_integer(json_integer_value(n) + 1));
	json_decref(obj);
	return 0;
}

/* The gauges computed at scrape time, then every family as text. */
static enum http_result reply_metrics(struct app *app, struct http_req *req)
{
	const struct kube_kind *k = kube_registry_by_kind(kube_api_registry(app->api),
							  "agent-install.openshift.io/v1beta1", "Agent");
	struct http_server *srv = __atomic_load_n(&app->srv, __ATOMIC_ACQUIRE);
	struct host_count hc = { json_object() };
	strbuf sb = STRBUF_INIT;
	const char *key;
	json_t *v;
	size_t len;
	char *body;

	if (srv)
		hm_open_connections(http_server_connections(srv));
	if (k && hc.by_status &&
	    store_list(kube_api_store(app->api), k->store_key, NULL, NULL, NULL, count_host, &hc, NULL) == 0) {
		hm_hosts_begin();
		json_object_foreach(hc.by_status, key, v)
			hm_hosts_status(key, (double)json_integer_value(v));
	}
	json_decref(hc.by_status);
	hm_directory_usage(app->data_dir);
	strbuf_init(&sb, METRICS_MAX_BYTES);
	if (metrics_render(&sb) < 0) {
		strbuf_release(&sb);
		return http_reply(req, 500, "text/plain", "metrics too large\n", 18);
	}
	body = strbuf_detach(&sb, &len);
	if (!body)
		return HTTP_NO;
	return http_reply_owned(req, 200, METRICS_CONTENT_TYPE, body, len);
}

static int add_query_arg(void *cls, const char *key, const char *value)
{
	strbuf *q = cls;

	if (q->len)
		strbuf_addch(q, '&');
	strbuf_adds(q, key);
	if (value) {
		strbuf_addch(q, '=');
		strbuf_adds(q, value);
	}
	return 0;
}

/* One line per request with -v: the path and query with secrets redacted. */
static void log_one_request(struct http_req *req, double seconds)
{
	strbuf q = STRBUF_INIT;
	char path[1024], client[INET6_ADDRSTRLEN + 16];

	if (!log_enabled(LOG_LVL_DEBUG))
		return;
	strbuf_init(&q, 4096);
	http_query_each(req, add_query_arg, &q);
	log_redact_path(req->path, q.buf, path, sizeof(path));
	strbuf_release(&q);
	http_client_address(req, client, sizeof(client));
	log_request(req->method, path, req->status, seconds * 1000.0, client);
}

/* GET /metrics on the API port: the admin token only. */
static enum http_result route_metrics(void *cls, struct http_req *req)
{
	struct app *app = cls;
	const char *auth = http_header(req, "Authorization");

	if (!auth || strncmp(auth, "Bearer ", 7) != 0 || !creds_token_ok(app->creds, auth + 7))
		return http_reply(req, 401, "application/json", UNAUTHORIZED, strlen(UNAUTHORIZED));
	return reply_metrics(app, req);
}

/* What a fleet of hosts polls (the agent API, the events URL, the image
 * service): the server answers these on its bulk lane, so kubectl and the
 * Kubernetes API never queue behind them (http/server.h, "Workers"). */
static const char *const bulk_prefixes[] = { "/api/assisted-install/", "/images/", "/byapikey/",
					     "/boot-artifacts/", NULL };

static enum http_result handle(void *userdata, struct http_req *req)
{
	struct app *app = userdata;
	double t0 = hm_now(), dt;
	enum http_result r;

	hm_request_inflight(req->method, req->path, 1);
	r = http_router_dispatch(&app->router, req);
	hm_request_inflight(req->method, req->path, -1);
	dt = hm_now() - t0;
	hm_request(req->method, req->path, req->status, dt, req->resp_bytes, req->resp_sized);
	log_one_request(req, dt);
	return r;
}

/* The plain-HTTP port of --metrics-listen: /metrics for scrapers, nothing
 * else. */
static enum http_result handle_metrics_port(void *userdata, struct http_req *req)
{
	static const char nf[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
				 "\"message\":\"only /metrics is served on this port\",\"reason\":\"NotFound\",\"code\":404}";

	if (strcmp(req->path, "/metrics") == 0 && (strcmp(req->method, "GET") == 0 || strcmp(req->method, "HEAD") == 0))
		return reply_metrics(userdata, req);
	return http_reply(req, 404, "application/json", nf, strlen(nf));
}

static void usage_main(FILE *f)
{
	fprintf(f,
		"usage: agenthub COMMAND [options]\n"
		"\n"
		"commands:\n"
		"  serve      run the hub (the Kubernetes API on an embedded store); see agenthub serve --help\n"
		"  migrate    copy a stopped hub's SQLite store into an empty PostgreSQL database\n"
		"  version    print the version and the git revision this binary was built from\n"
		"  help       this text\n"
		"\n"
		"options:\n"
		"  --version  same as the version command\n"
		"  -h, --help this text\n");
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
		"  --store URL           sqlite (default: DIR/agenthub.db), a path to a database file,\n"
		"                        or postgres://USER@HOST:PORT/DB?sslmode=... (several replicas)\n"
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
		"  --event-rate-limits JSON\n"
		"                        upstream's EVENT_RATE_LIMITS, e.g. '{\"host_status_updated\":\"10m\"}':\n"
		"                        an event of a listed name about the same host, cluster or\n"
		"                        infra-env is recorded at most once in that time; wins over\n"
		"                        the environment variable (default: the upgrade_agent_* events\n"
		"                        at 1h, as upstream)\n"
		"  --metrics-listen HOST:PORT\n"
		"                        also serve /metrics (Prometheus text format) over plain HTTP\n"
		"                        there, without authentication, for scrapers; /metrics on the\n"
		"                        API port needs the admin token\n"
		"  --log-format text|json\n"
		"                        log lines as text (default) or one JSON object per line\n"
		"  -v, --verbose         debug logging, and one line per request\n"
		"  --max-connections N   connections served at once (default 16384); requests on\n"
		"                        connections past it get 503 with Retry-After\n"
		"  --converged-flow[=true|false]\n"
		"                        the converged ZTP flow (upstream ALLOW_CONVERGED_FLOW,\n"
		"                        default true): BMHs labelled with an InfraEnv get their\n"
		"                        PreprovisioningImage, the ironic agent goes into the\n"
		"                        InfraEnv's discovery Ignition and BMAC sets customDeploy\n"
		"                        start_assisted_install; =false: the live-ISO flow (BMAC\n"
		"                        sets the BMH's image to the InfraEnv's ISO) and no\n"
		"                        PreprovisioningImage controller\n"
		"  --bmc-max-in-flight N Redfish requests to BareMetalHosts' BMCs in flight at once\n"
		"                        (default 16; as many threads run BMC operations)\n"
		"  --max-downloads N     image downloads in flight at once (default 1024); more get\n"
		"                        503 with Retry-After\n"
		"  --http-threads N      HTTP threads, each serving its share of the connections\n"
		"                        (default 8)\n"
		"  --idle-timeout SECONDS\n"
		"                        a connection that sends no complete request line this long\n"
		"                        after connecting or after its last request is closed\n"
		"                        (default 120: upstream agents poll every 60 s)\n"
		"  --request-timeout SECONDS\n"
		"                        a request must arrive whole (headers and body) this long\n"
		"                        after its first line, or the connection is closed (default 30)\n"
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

/* EVENT_RATE_LIMITS text checked before the start, so that a bad value
 * stops it with a message naming where it came from (what names the
 * variable or flag). */
static int check_event_rate_limits(const char *what, const char *text)
{
	struct ev_limiter *l = NULL;
	ah_err err;
	int r;

	ah_err_clear(&err);
	r = ev_limiter_new(0, &l);
	if (r == 0)
		r = ev_limiter_configure(l, text, &err);
	ev_limiter_free(l);
	if (r < 0) {
		const char *m = *err.message ? err.message : strerror(-r);

		if (strncmp(m, "EVENT_RATE_LIMITS: ", 19) == 0)
			m += 19;
		fprintf(stderr, "agenthub: %s: %s\n", what, m);
	}
	return r;
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

/* HOST:PORT, [V6]:PORT or :PORT with a port from 0 to 65535; the message
 * names the flag and what is wrong. */
static int check_listen(const char *flag, const char *listen)
{
	const char *colon = listen[0] == '[' ? strchr(listen, ']') : strrchr(listen, ':');
	char *end;
	long port;

	if (colon && listen[0] == '[')
		colon = colon[1] == ':' ? colon + 1 : NULL;
	if (!colon) {
		fprintf(stderr, "agenthub: %s %s: expected HOST:PORT (e.g. 127.0.0.1:6443, [::1]:6443 or :6443)\n",
			flag, listen);
		return -EINVAL;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || port < 0 || port > 65535) {
		fprintf(stderr, "agenthub: %s %s: invalid port %s (expected a number from 0 to 65535)\n",
			flag, listen, colon + 1);
		return -EINVAL;
	}
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
		{ "metrics-listen", required_argument, NULL, 'm' },
		{ "event-rate-limits", required_argument, NULL, 'E' },
		{ "log-format", required_argument, NULL, 'f' },
		{ "max-connections", required_argument, NULL, 'C' },
		{ "max-downloads", required_argument, NULL, 'D' },
		{ "http-threads", required_argument, NULL, 'H' },
		{ "idle-timeout", required_argument, NULL, 'I' },
		{ "request-timeout", required_argument, NULL, 'R' },
		{ "bmc-max-in-flight", required_argument, NULL, 'K' },
		{ "converged-flow", optional_argument, NULL, 'G' },
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
	o->event_rate_limits = getenv("EVENT_RATE_LIMITS");
	if (o->event_rate_limits && check_event_rate_limits("environment variable EVENT_RATE_LIMITS",
							    o->event_rate_limits) < 0)
		return -EINVAL;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
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
		case 'm': o->metrics_listen = optarg; break;
		case 'E':
			if (check_event_rate_limits("--event-rate-limits", optarg) < 0)
				return -EINVAL;
			o->event_rate_limits = optarg;
			break;
		case 'f':
			if (strcmp(optarg, "text") != 0 && strcmp(optarg, "json") != 0) {
				fprintf(stderr, "agenthub: --log-format: expected text or json, got %s\n", optarg);
				return -EINVAL;
			}
			o->log_format = optarg;
			break;
		case 'C': case 'D': case 'H': case 'I': case 'R': case 'K': {
			static const struct { char c; const char *flag; unsigned min, max; } lim[] = {
				{ 'C', "--max-connections", 1, 1000000 },
				{ 'D', "--max-downloads", 1, 100000 },
				{ 'H', "--http-threads", 1, 64 },
				{ 'I', "--idle-timeout", 1, 86400 },
				{ 'R', "--request-timeout", 1, 3600 },
				{ 'K', "--bmc-max-in-flight", 1, 4096 },
			};
			unsigned long v;
			size_t i;

			for (i = 0; lim[i].c != c; i++)
				;
			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end || errno || v < lim[i].min || v > lim[i].max) {
				fprintf(stderr, "agenthub: %s: expected a number from %u to %u, got %s\n",
					lim[i].flag, lim[i].min, lim[i].max, optarg);
				return -EINVAL;
			}
			switch (c) {
			case 'C': o->max_conns = (unsigned)v; break;
			case 'D': o->max_downloads = (unsigned)v; break;
			case 'H': o->http_threads = (unsigned)v; break;
			case 'I': o->idle_timeout = (unsigned)v; break;
			case 'K': rf_set_max_in_flight((int)v); break;
			default: o->request_timeout = (unsigned)v; break;
			}
			break;
		}
		case 'G':
			if (!optarg || strcmp(optarg, "true") == 0) {
				o->live_iso_flow = false;
			} else if (strcmp(optarg, "false") == 0) {
				o->live_iso_flow = true;
			} else {
				fprintf(stderr, "agenthub: --converged-flow: expected true or false, got %s\n", optarg);
				return -EINVAL;
			}
			break;
		case 'v': o->verbose = 1; break;
		case 'h': usage(stdout); exit(0);
		default:
			cli_option_error(stderr, "agenthub serve", c, argv, longopts);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agenthub serve: unexpected argument: %s (see agenthub serve --help)\n", argv[optind]);
		return -EINVAL;
	}
	if (check_listen("--listen", o->listen) < 0 ||
	    (o->metrics_listen && check_listen("--metrics-listen", o->metrics_listen) < 0))
		return -EINVAL;
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
	struct http_server *srv = NULL, *msrv = NULL;
	struct kubeapi_opts kao = { 0 };
	struct http_server_opts hso = { 0 };
	struct app app = { 0 };
	char host[256], db[4096], db_shown[4096], kubeconfig[4096], url[512], addr[300];
	const char *hosts[3];
	char svc_host[256] = "";
	struct sigaction sa;
	sigset_t stop_signals, wait_mask;
	ah_err err;
	int r, rc = 1;

	ah_err_clear(&err);
	if (parse_serve(argc, argv, &o) < 0)
		return 2;
	/* SIGTERM and SIGINT stay blocked in every thread (they inherit the
	 * mask) and are taken only by the main loop's sigsuspend(): one that
	 * comes during start-up, even just as the API answers its first
	 * readyz, then drains instead of killing, and none is lost between a
	 * check and a wait. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGTERM);
	sigaddset(&stop_signals, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stop_signals, &wait_mask);
	if (o.verbose)
		log_set_level(LOG_LVL_DEBUG);
	if (o.log_format && strcmp(o.log_format, "json") == 0)
		log_set_format(LOG_FMT_JSON);
	/* Every file the hub creates (store, WAL, keys, kubeconfig) is the
	 * owner's only. */
	umask(077);
	if (mkdir(o.data_dir, 0700) < 0 && errno != EEXIST) {
		log_error("cannot create data directory %s: %s", o.data_dir, strerror(errno));
		return 1;
	}
	if (secure_data_dir(o.data_dir) < 0) {
		log_error("cannot make data directory %s private (0700, files 0600): %s", o.data_dir, strerror(errno));
		return 1;
	}
	listen_host(o.listen, host, sizeof(host));
	hosts[0] = host;
	hosts[1] = NULL;
	/* The serving certificate also names the --service-url host: replicas
	 * behind one balancer address each present a certificate for it. */
	if (o.service_url && strstr(o.service_url, "://")) {
		const char *a = strstr(o.service_url, "://") + 3;

		if (*a == '[')
			snprintf(svc_host, sizeof(svc_host), "%.*s", (int)strcspn(a + 1, "]"), a + 1);
		else
			snprintf(svc_host, sizeof(svc_host), "%.*s", (int)strcspn(a, ":/?#"), a);
		if (svc_host[0]) {
			hosts[1] = svc_host;
			hosts[2] = NULL;
		}
	}
	r = creds_load_or_create(o.data_dir, hosts, &creds, &err);
	if (r < 0) {
		log_error("credentials in %s: %s", o.data_dir, err.message);
		return 1;
	}
	if (o.store_url)
		snprintf(db, sizeof(db), "%s", o.store_url);
	else
		snprintf(db, sizeof(db), "%s/agenthub.db", o.data_dir);
	/* A PostgreSQL URL may carry a password: logs show it redacted. */
	store_url_redact(db, db_shown, sizeof(db_shown));
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
			else if (r == -EPROTO)
				log_error("cannot open the store %s: the file is not an agenthub store of a schema this build knows; "
					  "refusing to serve it (point --data-dir elsewhere, or restore the right file)", db);
			else if (r == -EUCLEAN)
				log_error("the store %s is corrupt (SQLite's PRAGMA quick_check failed): refusing to serve it. "
					  "Stop here and restore the file from a backup (or run `sqlite3 %s .recover` into a new "
					  "file and put that in its place); moving it aside starts an empty store",
					  db, db);
			else if (store_url_is_postgres(db))
				log_error("cannot open the store %s: %s%s%s", db_shown, strerror(-r),
					  *store_open_error() ? ": " : "", store_open_error());
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
		hc.event_rate_limits = o.event_rate_limits;
		hc.converged_flow = !o.live_iso_flow;
		hc.host_disconnect_timeout_s = o.timeouts.disconnect_s < INT_MAX ? (int)o.timeouts.disconnect_s : INT_MAX;
		/* Replicas on one PostgreSQL database elect the one that runs the
		 * controllers.  Identity: <hostname>_<id>, the id kept in
		 * DIR/replica.id so that a replica restarted on its data directory
		 * knows the Lease it held as its own (no 15 s wait); so each
		 * replica needs its own data directory. */
		char ident[400], hn[256] = "agenthub", rid[40] = "";

		if (store_url_is_postgres(db)) {
			char idp[4200];
			ssize_t got;
			int fd;

			gethostname(hn, sizeof(hn) - 1);
			snprintf(idp, sizeof(idp), "%s/replica.id", o.data_dir);
			/* Held (flock) for the life of the process, never closed:
			 * two processes on one data directory would share one
			 * identity and both think they lead. */
			fd = open(idp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
			if (fd < 0) {
				log_error("cannot open %s: %s", idp, strerror(errno));
				goto out_ka;
			}
			if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
				log_error("cannot use the data directory %s: another agenthub process is using it",
					  o.data_dir);
				close(fd);
				goto out_ka;
			}
			got = pread(fd, rid, sizeof(rid) - 1, 0);
			rid[got > 0 ? got : 0] = '\0';
			rid[strcspn(rid, "\n")] = '\0';
			if (strlen(rid) != 16 || strspn(rid, "0123456789abcdef") != 16) {
				if (util_random_hex(rid, 8) < 0 || ftruncate(fd, 0) < 0 ||
				    pwrite(fd, rid, 16, 0) != 16 || pwrite(fd, "\n", 1, 16) != 1 || fsync(fd) < 0) {
					log_error("cannot write %s: %s", idp, strerror(errno));
					goto out_ka;
				}
			}
			snprintf(ident, sizeof(ident), "%s_%s", hn, rid);
			hc.leader_elect = true;
			hc.leader_identity = ident;
		}
		/* Before the hub starts its threads: they read it from then on. */
		host_timeouts_configure(&o.timeouts);
		r = hub_new(api, &hc, &app.hub, &err);
		if (r < 0) {
			log_error("starting the hub: %s", err.message);
			goto out_ka;
		}
	}
	http_router_init(&app.router);
	app.router.not_found = kubeapi_not_found;
	if (http_router_add(&app.router, "GET", "/metrics", route_metrics, &app) < 0 ||
	    hub_add_routes(app.hub, &app.router) < 0 || kubeapi_add_routes(app.ka, &app.router) < 0) {
		log_error("the route table is full");
		goto out_ka;
	}
	hso.listen = o.listen;
	hso.cert_pem = creds.cert_pem;
	hso.key_pem = creds.key_pem;
	hso.max_body = o.max_body;
	app.api = api;
	app.creds = &creds;
	app.data_dir = o.data_dir;
	hso.max_conns = o.max_conns;
	hso.max_downloads = o.max_downloads;
	hso.threads = o.http_threads;
	hso.idle_timeout = o.idle_timeout;
	hso.request_timeout = o.request_timeout;
	hso.bulk_prefixes = bulk_prefixes;
	r = http_server_start(&hso, handle, &app, &srv, &err);
	if (r < 0) {
		log_error("%s", err.message);
		goto out_ka;
	}
	__atomic_store_n(&app.srv, srv, __ATOMIC_RELEASE);
	if (o.metrics_listen) {
		struct http_server_opts mo = { .listen = o.metrics_listen, .max_body = 1024, .max_conns = 64,
					       .threads = 2, .workers = 1, .interactive_workers = 1 };

		r = http_server_start(&mo, handle_metrics_port, &app, &msrv, &err);
		if (r < 0) {
			log_error("--metrics-listen: %s", err.message);
			goto out_srv;
		}
		log_info("serving /metrics over plain HTTP on %s (port %u)", o.metrics_listen, http_server_port(msrv));
	}
	{
		const char *lc = o.listen[0] == '[' ? strchr(o.listen, ']') + 1 : strrchr(o.listen, ':');
		bool any = o.listen[0] == ':' || strncmp(o.listen, "0.0.0.0:", 8) == 0 ||
			   strncmp(o.listen, "[::]:", 5) == 0;
		unsigned port = http_server_port(srv);

		/* The real address: with port 0 the kernel chose the port. */
		if (o.listen[0] == ':')
			log_info("listening on 0.0.0.0:%u", port);
		else
			log_info("listening on %.*s:%u", (int)(lc - o.listen), o.listen, port);
		if (any)
			log_warn("--listen %s listens on every interface: any machine that reaches this one "
				 "can connect (use 127.0.0.1:%u for this machine only)", o.listen, port);
		if (strchr(host, ':'))
			snprintf(url, sizeof(url), "https://[%s]:%u", host, port);
		else
			snprintf(url, sizeof(url), "https://%s:%u", host, port);
	}
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", o.data_dir);
	r = creds_write_kubeconfig(kubeconfig, url, &creds, &err);
	if (r < 0) {
		log_error("writing %s: %s", kubeconfig, err.message);
		goto out_srv;
	}
	log_info("agenthub serving the Kubernetes API on %s (store %s, revision %lld)", url, db_shown,
		 (long long)store_current_rev(kube_api_store(api)));
	{
		char abs[4096];

		log_info("kubectl: export KUBECONFIG=%s",
			 realpath(kubeconfig, abs) ? abs : kubeconfig);
	}
	while (!got_signal)
		sigsuspend(&wait_mask);
	log_info("signal %d: draining and stopping", (int)got_signal);
	rc = 0;
out_srv:
	http_server_set_stopping();
	store_wake_all(kube_api_store(api));
	http_server_stop(msrv);
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
	metrics_reset();
	return rc;
}

static void usage_migrate(FILE *f)
{
	fprintf(f,
		"usage: agenthub migrate --from sqlite:DIR/agenthub.db --to postgres://USER@HOST:PORT/DB?sslmode=...\n"
		"\n"
		"Copies every object of a hub's store into an empty PostgreSQL database (the schema is\n"
		"created), keeping each object's resourceVersion, in one transaction.  The hub must be\n"
		"stopped; afterwards start it (and more replicas) with --store postgres://...\n"
		"\n"
		"options:\n"
		"  --from URL   the source store (a SQLite file, \"sqlite:\" prefix optional)\n"
		"  --to URL     the target PostgreSQL database; must hold no agenthub objects\n"
		"  -h, --help   this text\n");
}

static int cmd_migrate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "to", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *from = NULL, *to = NULL;
	char from_shown[4096], to_shown[4096];
	store *src = NULL, *dst = NULL;
	size_t n = 0;
	int64_t rev = 0;
	int c, r;

	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'f': from = optarg; break;
		case 't': to = optarg; break;
		case 'h': usage_migrate(stdout); return 0;
		default:
			cli_option_error(stderr, "agenthub migrate", c, argv, longopts);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "agenthub migrate: unexpected argument: %s (see agenthub migrate --help)\n",
			argv[optind]);
		return 2;
	}
	if (!from || !to) {
		fprintf(stderr, "agenthub migrate: --%s is required (see agenthub migrate --help)\n",
			from ? "to" : "from");
		return 2;
	}
	store_url_redact(from, from_shown, sizeof(from_shown));
	store_url_redact(to, to_shown, sizeof(to_shown));
	if (store_url_is_postgres(from)) {
		fprintf(stderr, "agenthub migrate: --from: %s is PostgreSQL; the source must be a SQLite store\n",
			from_shown);
		return 2;
	}
	if (!store_url_is_postgres(to)) {
		fprintf(stderr, "agenthub migrate: --to: %s is not a postgres:// URL\n", to_shown);
		return 2;
	}
	if (access(from + (strncmp(from, "sqlite:", 7) == 0 ? 7 : 0), R_OK) < 0) {
		fprintf(stderr, "agenthub migrate: --from: %s: %s\n", from_shown, strerror(errno));
		return 1;
	}
	r = store_open(from, NULL, &src);
	if (r < 0) {
		fprintf(stderr, "agenthub migrate: cannot open %s: %s\n", from_shown,
			r == -EBUSY ? "an agenthub process is using it (stop the hub first)" : strerror(-r));
		return 1;
	}
	r = store_open(to, NULL, &dst);
	if (r < 0) {
		fprintf(stderr, "agenthub migrate: cannot open %s: %s%s%s\n", to_shown, strerror(-r),
			*store_open_error() ? ": " : "", store_open_error());
		store_close(src);
		return 1;
	}
	r = store_copy_into(dst, src, &n, &rev);
	store_close(dst);
	store_close(src);
	if (r == -ENOTEMPTY) {
		fprintf(stderr, "agenthub migrate: %s already holds agenthub objects; migrate only into an "
			"empty database (nothing was copied)\n", to_shown);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "agenthub migrate: copying into %s failed (nothing was copied): %s\n", to_shown,
			strerror(-r));
		return 1;
	}
	printf("migrated %zu objects at revision %lld from %s to %s\n", n, (long long)rev, from_shown,
	       to_shown);
	return 0;
}

static int cmd_version(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: agenthub version\n\nPrints the version and the git revision this binary was built from.\n");
			return 0;
		}
		fprintf(stderr, "agenthub version: unexpected argument: %s (see agenthub version --help)\n", argv[i]);
		return 2;
	}
	printf("agenthub %s (revision %s)\n", AGENTHUB_VERSION, AGENTHUB_REVISION);
	return 0;
}

int main(int argc, char **argv)
{
	static const char *const commands[] = { "serve", "migrate", "version", "help", NULL };
	const char *hint;

	if (argc < 2) {
		usage_main(stderr);
		return 2;
	}
	if (strcmp(argv[1], "serve") == 0)
		return serve(argc - 1, argv + 1);
	if (strcmp(argv[1], "migrate") == 0)
		return cmd_migrate(argc - 1, argv + 1);
	if (strcmp(argv[1], "version") == 0 || strcmp(argv[1], "--version") == 0)
		return cmd_version(argc - 1, argv + 1);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
		usage_main(stdout);
		return 0;
	}
	if (argv[1][0] == '-') {
		const char *names[] = { "help", "version", NULL };
		const char *bare = argv[1] + strspn(argv[1], "-");

		hint = cli_suggest(bare, names);
		if (hint)
			fprintf(stderr, "agenthub: unknown flag %s; did you mean --%s?\n", argv[1], hint);
		else
			fprintf(stderr, "agenthub: unknown flag %s (flags of serve go after it: agenthub serve %s)\n",
				argv[1], argv[1]);
		return 2;
	}
	hint = cli_suggest(argv[1], commands);
	if (hint)
		fprintf(stderr, "agenthub: unknown command %s; did you mean %s?\n", argv[1], hint);
	else
		fprintf(stderr, "agenthub: unknown command %s (commands: serve, migrate, version, help)\n", argv[1]);
	return 2;
}
