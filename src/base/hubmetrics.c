/* hubmetrics.c - see hubmetrics.h.  The upstream families copy
 * assisted-service's internal/metrics definitions (names, label names,
 * buckets); the hub's own follow Prometheus naming (agenthub_*, base units,
 * _total counters) and controller-runtime's names for the controllers. */
#define _XOPEN_SOURCE 700
#include "hubmetrics.h"

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "base/metrics.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

double hm_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- upstream assisted-service ---------------------------------------- */

static const double b_install_s[] = { 1, 5, 10, 30, 60, 120, 300, 600, 900, 1200, 1800 };
static const double b_op_ms[] = { 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200,
				  1400, 1600, 1800, 2000, 2400, 2800, 3200, 3600, 4000, 5000 };
static const double b_cores[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };
static const double b_ram[] = { 8, 16, 32, 64, 128, 256, 512, 1024, 2048 };
static const double b_disk[] = { 250, 500, 1000, 2000, 4000, 8000, 16000 };
static const double b_nic[] = { 1, 10, 20, 40, 100 };
static const double b_sync[] = { 1, 5, 10, 15, 20 };
static const double b_pull[] = { 0.1, 0.5, 1, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50 };
static const double b_cycle_ms[] = { 1000, 5000, 10000, 30000, 60000, 120000, 300000, 600000 };

static const char *const l_result[] = { "result", NULL };
static const char *const l_operation[] = { "operation", NULL };
static const char *const l_phase_result[] = { "phase", "result", NULL };
static const char *const l_role_result[] = { "role", "result", NULL };
static const char *const l_disk_role_result[] = { "diskType", "role", "result", NULL };
static const char *const l_image_result[] = { "imageName", "result", NULL };
static const char *const l_host_validation[] = { "hostValidationType", NULL };
static const char *const l_cluster_validation[] = { "clusterValidationType", NULL };
static const char *const l_fullscan[] = { "fullscan", NULL };
static const char *const l_directory[] = { "directory", NULL };

static struct metric m_cluster_creations = METRIC_COUNTER(
	"service_assisted_installer_cluster_creations", "Number of cluster resources created", NULL);
static struct metric m_install_started = METRIC_COUNTER(
	"service_assisted_installer_cluster_installation_started",
	"Number of clusters that entered installing state", NULL);
static struct metric m_install_seconds = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_installation_seconds",
	"Histogram/sum/count of installation time for completed clusters", l_result, b_install_s);
static struct metric m_operation_ms = METRIC_HISTOGRAM(
	"service_assisted_installer_operation_duration_miliseconds",
	"Histogram/sum/count of operation time for specific operation, by name", l_operation, b_op_ms);
static struct metric m_phase_seconds = METRIC_HISTOGRAM(
	"service_assisted_installer_host_installation_phase_seconds",
	"Histogram/sum/count of time for each phase, by phase, final install result", l_phase_result,
	b_install_s);
static struct metric m_cluster_hosts = METRIC_COUNTER(
	"service_assisted_installer_cluster_hosts",
	"Number of hosts for completed clusters, by role, result", l_role_result);
static struct metric m_host_cores = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_host_cores",
	"Histogram/sum/count of CPU cores in hosts of completed clusters, by role, result", l_role_result,
	b_cores);
static struct metric m_host_ram = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_host_ram_gb",
	"Histogram/sum/count of physical RAM in hosts of completed clusters, by role, result", l_role_result,
	b_ram);
static struct metric m_host_disk = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_host_disk_gb",
	"Histogram/sum/count of installation disk capacity in hosts of completed clusters, by type, raid (level), role, result",
	l_disk_role_result, b_disk);
static struct metric m_host_nic = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_host_nic_gb",
	"Histogram/sum/count of management network NIC speed in hosts of completed clusters, by role, result",
	l_role_result, b_nic);
static struct metric m_disk_sync = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_host_disk_sync_duration_ms",
	"Histogram/sum/count of the disk's fdatasync duration (fetched from fio)", NULL, b_sync);
static struct metric m_image_pull = METRIC_HISTOGRAM(
	"service_assisted_installer_cluster_image_pull_status",
	"Histogram/sum/count of the images' pull statuses", l_image_result, b_pull);
static struct metric m_host_val_failed = METRIC_COUNTER(
	"service_assisted_installer_host_validation_is_in_failed_status_on_cluster_deletion",
	"Number of host validation errors", l_host_validation);
static struct metric m_host_val_changed = METRIC_COUNTER(
	"service_assisted_installer_host_validation_failed_after_success_before_installation",
	"Number of host validations that already succeed but start to fail again", l_host_validation);
static struct metric m_cluster_val_failed = METRIC_COUNTER(
	"service_assisted_installer_cluster_validation_is_in_failed_status_on_cluster_deletion",
	"Number of cluster validation errors", l_cluster_validation);
static struct metric m_cluster_val_changed = METRIC_COUNTER(
	"service_assisted_installer_cluster_validation_failed_after_success_before_installation",
	"Number of cluster validations that already succeed but start to fail again", l_cluster_validation);
static struct metric m_fs_usage = METRIC_GAUGE(
	"service_assisted_installer_filesystem_usage_percentage",
	"The percentage of the filesystem usage by the service", NULL);
static struct metric m_hosts_cycle = METRIC_HISTOGRAM(
	"service_assisted_installer_monitored_hosts_cycle_duration_ms",
	"Histogram/sum/count of the duration of a host monitor cycle", l_fullscan, b_cycle_ms);
static struct metric m_clusters_cycle = METRIC_HISTOGRAM(
	"service_assisted_installer_monitored_clusters_cycle_duration_ms",
	"Histogram/sum/count of the duration of a cluster monitor cycle", l_fullscan, b_cycle_ms);
static struct metric m_dir_usage = METRIC_GAUGE(
	"assisted_installer_directory_usage_bytes", "The total disk usage of the directory", l_directory);
static struct metric m_fs_free = METRIC_GAUGE(
	"assisted_installer_fs_free_bytes", "The free space of the filesystem of the directory", l_directory);

static const char *sget(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* A JSON value stored either as an object or as its text; a new reference. */
static json_t *as_object(const json_t *v)
{
	if (json_is_string(v))
		return json_loads(json_string_value(v), 0, NULL);
	return json_is_object(v) ? json_incref((json_t *)v) : NULL;
}

void am_cluster_registered(void)
{
	metric_inc(&m_cluster_creations, NULL);
}

void am_cluster_status(const char *from, const char *to, int64_t install_started_at, int64_t now)
{
	static const char *const ends[] = { "installed", "cancelled", "error", "installing-pending-user-action", NULL };

	if (!to || (from && strcmp(from, to) == 0))
		return;
	if (from && strcmp(from, "preparing-for-installation") == 0 && strcmp(to, "installing") == 0)
		metric_inc(&m_install_started, NULL);
	for (const char *const *e = ends; *e; e++)
		if (strcmp(to, *e) == 0 && install_started_at > 0 && now >= install_started_at)
			metric_observe(&m_install_seconds, METRIC_VALUES(to), (double)(now - install_started_at));
}

void am_host_stage_changed(const json_t *prev_progress, const json_t *host, int64_t now)
{
	const json_t *cur = json_object_get(host, "progress");
	const char *prev_stage = sget(prev_progress, "current_stage"), *stage = sget(cur, "current_stage");
	const char *role = json_is_true(json_object_get(host, "bootstrap")) ? "bootstrap" : sget(host, "role");
	bool failed = strcmp(stage, "Failed") == 0;

	if (!*stage || strcmp(prev_stage, stage) == 0)
		return;
	if (failed || strcmp(stage, "Done") == 0) {
		json_t *inv = as_object(json_object_get(host, "inventory")), *d;
		size_t i;

		metric_inc(&m_cluster_hosts, METRIC_VALUES(role, stage));
		if (inv) {
			metric_observe(&m_host_cores, METRIC_VALUES(role, stage),
				       (double)json_integer_value(json_object_get(json_object_get(inv, "cpu"), "count")));
			metric_observe(&m_host_ram, METRIC_VALUES(role, stage),
				       floor((double)json_integer_value(json_object_get(json_object_get(inv, "memory"),
											 "physical_bytes")) / GIB));
			json_array_foreach(json_object_get(inv, "disks"), i, d)
				metric_observe(&m_host_disk, METRIC_VALUES(sget(d, "drive_type"), role, stage),
					       floor((double)json_integer_value(json_object_get(d, "size_bytes")) / GIB));
			json_array_foreach(json_object_get(inv, "interfaces"), i, d)
				metric_observe(&m_host_nic, METRIC_VALUES(role, stage),
					       json_number_value(json_object_get(d, "speed_mbps")));
			json_decref(inv);
		}
	}
	if (*prev_stage) {
		json_int_t started = json_integer_value(json_object_get(prev_progress, "stage_started_at"));

		if (started > 0 && now >= started)
			metric_observe(&m_phase_seconds, METRIC_VALUES(prev_stage, failed ? "Failed" : "Done"),
				       (double)(now - started));
	}
}

/* Each validation of vi (object form) with status "failure", or the
 * status of id in before (lookup mode).  Returns the status of id or "". */
static const char *validation_status(const json_t *vi, const char *id)
{
	const char *cat;
	json_t *list, *v;
	size_t i;

	json_object_foreach((json_t *)vi, cat, list)
		json_array_foreach(list, i, v)
			if (strcmp(sget(v, "id"), id) == 0)
				return sget(v, "status");
	return "";
}

void am_validations_changed(bool host, const json_t *before, const json_t *after)
{
	json_t *b = as_object(before), *a = as_object(after), *list, *v;
	const char *cat;
	size_t i;

	if (b && a) {
		json_object_foreach(a, cat, list)
			json_array_foreach(list, i, v)
				if (strcmp(sget(v, "status"), "failure") == 0 &&
				    strcmp(validation_status(b, sget(v, "id")), "success") == 0)
					metric_inc(host ? &m_host_val_changed : &m_cluster_val_changed,
						   METRIC_VALUES(sget(v, "id")));
	}
	json_decref(a);
	json_decref(b);
}

static void count_failed(struct metric *m, const json_t *vi)
{
	const char *cat;
	json_t *list, *v;
	size_t i;

	json_object_foreach((json_t *)vi, cat, list)
		json_array_foreach(list, i, v)
			if (strcmp(sget(v, "status"), "failure") == 0)
				metric_inc(m, METRIC_VALUES(sget(v, "id")));
}

void am_cluster_deleted(const json_t *aci, const json_t *agents)
{
	json_t *a;
	size_t i;

	count_failed(&m_cluster_val_failed, json_object_get(json_object_get(aci, "status"), "validationsInfo"));
	json_array_foreach((json_t *)agents, i, a)
		count_failed(&m_host_val_failed, json_object_get(json_object_get(a, "status"), "validationsInfo"));
}

void am_step_reply(const json_t *reply, const json_t *old_images)
{
	const char *type = sget(reply, "step_type");
	json_t *out;

	if (json_integer_value(json_object_get(reply, "exit_code")) != 0 || !*sget(reply, "output"))
		return;
	if (strcmp(type, "installation-disk-speed-check") != 0 && strcmp(type, "container-image-availability") != 0)
		return;
	out = json_loads(sget(reply, "output"), 0, NULL);
	if (strcmp(type, "installation-disk-speed-check") == 0) {
		if (json_is_number(json_object_get(out, "io_sync_duration")))
			metric_observe(&m_disk_sync, NULL, json_number_value(json_object_get(out, "io_sync_duration")));
	} else {
		json_t *old = as_object(old_images), *im;
		size_t i;

		json_array_foreach(json_object_get(out, "images"), i, im)
			if (*sget(im, "name") && !json_object_get(old, sget(im, "name")))
				metric_observe(&m_image_pull, METRIC_VALUES(sget(im, "name"), sget(im, "result")),
					       json_number_value(json_object_get(im, "download_rate")));
		json_decref(old);
	}
	json_decref(out);
}

void am_monitor_pass(bool hosts, double ms, size_t n)
{
	metric_observe(&m_operation_ms, METRIC_VALUES(hosts ? "HostMonitoring" : "ClusterMonitoring"), ms);
	metric_observe(hosts ? &m_hosts_cycle : &m_clusters_cycle, METRIC_VALUES("true"), ms);
	(void)n;
}

/* ---- HTTP ------------------------------------------------------------- */

static const double b_http_s[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				   0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };
static const double b_go_default[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const double b_size[] = { 100, 1000, 10000, 100000, 1e6, 1e7, 1e8, 1e9 };
static const char *const l_route_method_code[] = { "route", "method", "code", NULL };
static const char *const l_route_method[] = { "route", "method", NULL };
static const char *const l_up_code[] = { "service", "handler", "method", "code", NULL };
static const char *const l_up[] = { "service", "handler", "method", NULL };

static struct metric m_requests = METRIC_COUNTER(
	"agenthub_http_requests_total", "HTTP requests answered, by route, method and status code.",
	l_route_method_code);
static struct metric m_request_seconds = METRIC_HISTOGRAM(
	"agenthub_http_request_duration_seconds",
	"Time from a request's last body byte to its response being queued, by route and method.",
	l_route_method, b_http_s);
static struct metric m_inflight = METRIC_GAUGE(
	"agenthub_http_requests_in_flight", "Requests being handled now.", NULL);
static struct metric m_connections = METRIC_GAUGE(
	"agenthub_http_open_connections", "Open connections to the API server.", NULL);
static struct metric m_up_duration = METRIC_HISTOGRAM(
	"http_request_duration_seconds", "The latency of the HTTP requests.", l_up_code, b_go_default);
static struct metric m_up_size = METRIC_HISTOGRAM(
	"http_response_size_bytes", "The size of the HTTP responses.", l_up_code, b_size);
static struct metric m_up_inflight = METRIC_GAUGE(
	"http_requests_inflight", "The number of inflight requests being handled at the same time.", l_up);

#define AGENT_API "/api/assisted-install"

static bool looks_like_id(const char *s, size_t n)
{
	size_t digits = 0;

	for (size_t i = 0; i < n; i++)
		digits += s[i] >= '0' && s[i] <= '9';
	/* Ids and tokens: long, and nearly always with a digit; anything
	 * past 32 bytes is treated as one whatever it holds. */
	return (n >= 16 && digits > 0) || n > 32;
}

/* Append "/seg" to buf (bounded). */
static void add_seg(char *buf, size_t size, const char *seg, size_t n)
{
	size_t len = strlen(buf);

	if (len + 1 < size)
		snprintf(buf + len, size - len, "/%.*s", (int)n, seg);
}

static void route_kube(const char *path, char *buf, size_t size)
{
	const char *segs[16];
	size_t lens[16], n = 0, i = 0;

	for (const char *p = path; *p && n < 16;) {
		size_t l;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		l = strcspn(p, "/");
		segs[n] = p;
		lens[n++] = l;
		p += l;
	}
	buf[0] = '\0';
	/* api/v1 or apis/group/version */
	if (n >= 1) {
		size_t head = lens[0] == 3 ? 2 : 3;

		for (; i < head && i < n; i++)
			add_seg(buf, size, segs[i], lens[i]);
	}
	if (i < n && lens[i] == 10 && strncmp(segs[i], "namespaces", 10) == 0 && i + 2 < n) {
		add_seg(buf, size, "namespaces/{namespace}", 22);
		i += 2;
	}
	if (i < n)
		add_seg(buf, size, segs[i], lens[i]), i++;
	if (i < n)
		add_seg(buf, size, "{name}", 6), i++;
	for (; i < n; i++)
		add_seg(buf, size, segs[i], lens[i]);
	if (!buf[0])
		snprintf(buf, size, "/");
}

void hm_route(const char *path, char *buf, size_t size)
{
	static const char *const exact[] = { "/healthz", "/readyz", "/livez", "/version", "/metrics", "/api", "/apis",
					     NULL };
	static const struct { const char *after, *ph; } ids[] = {
		{ "infra-envs", "{infra_env_id}" }, { "hosts", "{host_id}" }, { "clusters", "{cluster_id}" },
		{ "images", "{image_id}" }, { "boot-artifacts", "{artifact}" }, { "byapikey", "{token}" },
		{ "bytoken", "{token}" }, { "byid", "{id}" },
	};
	size_t plen = strcspn(path, "?");
	char prev[32] = "";

	for (const char *const *e = exact; *e; e++)
		if (strlen(*e) == plen && strncmp(path, *e, plen) == 0) {
			snprintf(buf, size, "%s", *e);
			return;
		}
	if (strncmp(path, AGENT_API "/", sizeof(AGENT_API)) == 0 || strncmp(path, "/images/", 8) == 0 ||
	    strncmp(path, "/boot-artifacts/", 16) == 0 || strncmp(path, "/byid/", 6) == 0 ||
	    strncmp(path, "/byapikey/", 10) == 0 || strncmp(path, "/bytoken/", 9) == 0) {
		buf[0] = '\0';
		for (const char *p = path; p < path + plen;) {
			size_t l;
			const char *ph = NULL;

			while (*p == '/')
				p++;
			l = strcspn(p, "/?");
			if (!l)
				break;
			for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]) && !ph; k++)
				if (strcmp(prev, ids[k].after) == 0)
					ph = ids[k].ph;
			if (!ph && looks_like_id(p, l))
				ph = l > 48 ? "{token}" : "{id}";
			if (ph)
				add_seg(buf, size, ph, strlen(ph));
			else
				add_seg(buf, size, p, l);
			snprintf(prev, sizeof(prev), "%.*s", (int)(l < 31 ? l : 31), p);
			p += l;
		}
		return;
	}
	if (strncmp(path, "/api/", 5) == 0 || strncmp(path, "/apis/", 6) == 0) {
		char tmp[1024];

		snprintf(tmp, sizeof(tmp), "%.*s", (int)plen, path);
		route_kube(tmp, buf, size);
		return;
	}
	if (strncmp(path, "/openapi/", 9) == 0) {
		snprintf(buf, size, "%.*s", (int)(plen < 200 ? plen : 200), path);
		return;
	}
	snprintf(buf, size, "other");
}

/* The swagger path pattern of an agent API route ("/v2/infra-envs/..."). */
static const char *upstream_handler(const char *route)
{
	return strncmp(route, AGENT_API "/", sizeof(AGENT_API)) == 0 ? route + sizeof(AGENT_API) - 1 : NULL;
}

void hm_request_inflight(const char *method, const char *path, int delta)
{
	char route[512];
	const char *h;

	metric_add(&m_inflight, NULL, delta);
	if (strncmp(path, AGENT_API "/", sizeof(AGENT_API)) != 0)
		return;
	hm_route(path, route, sizeof(route));
	if ((h = upstream_handler(route)))
		metric_add(&m_up_inflight, METRIC_VALUES("assisted-installer", h, method), delta);
}

void hm_request(const char *method, const char *path, unsigned code, double seconds, size_t resp_bytes,
		bool sized)
{
	char route[512], codes[8];
	const char *h;

	hm_route(path, route, sizeof(route));
	snprintf(codes, sizeof(codes), "%u", code);
	metric_inc(&m_requests, METRIC_VALUES(route, method, codes));
	metric_observe(&m_request_seconds, METRIC_VALUES(route, method), seconds);
	if ((h = upstream_handler(route))) {
		metric_observe(&m_up_duration, METRIC_VALUES("assisted-installer", h, method, codes), seconds);
		if (sized)
			metric_observe(&m_up_size, METRIC_VALUES("assisted-installer", h, method, codes),
				       (double)resp_bytes);
	}
}

void hm_open_connections(unsigned n)
{
	metric_set(&m_connections, NULL, n);
}

/* ---- store, watches ----------------------------------------------------- */

static const double b_commit_s[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
				     0.025, 0.05, 0.1, 0.25, 0.5, 1 };
static const double b_batch[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512 };

static struct metric m_commit_seconds = METRIC_HISTOGRAM(
	"agenthub_store_commit_duration_seconds",
	"Time the store's writer took for one batch, from BEGIN to durable COMMIT.", NULL, b_commit_s);
static struct metric m_commit_batch = METRIC_HISTOGRAM(
	"agenthub_store_commit_batch_size", "Writes acknowledged by one durable commit (group commit).", NULL,
	b_batch);
static struct metric m_watches = METRIC_GAUGE(
	"agenthub_watch_streams", "Open watch streams.", NULL);

void hm_store_commit(double seconds, size_t batch)
{
	metric_observe(&m_commit_seconds, NULL, seconds);
	metric_observe(&m_commit_batch, NULL, (double)batch);
}

void hm_watch(int delta)
{
	metric_add(&m_watches, NULL, delta);
}

/* ---- controllers -------------------------------------------------------- */

static const double b_reconcile_s[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4,
					0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0,
					3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60 };
static const char *const l_controller_result[] = { "controller", "result", NULL };
static const char *const l_controller[] = { "controller", NULL };
static const char *const l_name[] = { "name", NULL };

static struct metric m_reconcile_total = METRIC_COUNTER(
	"controller_runtime_reconcile_total", "Total number of reconciliations per controller",
	l_controller_result);
static struct metric m_reconcile_errors = METRIC_COUNTER(
	"controller_runtime_reconcile_errors_total", "Total number of reconciliation errors per controller",
	l_controller);
static struct metric m_reconcile_time = METRIC_HISTOGRAM(
	"controller_runtime_reconcile_time_seconds", "Length of time per reconciliation per controller",
	l_controller, b_reconcile_s);
static struct metric m_queue_depth = METRIC_GAUGE(
	"workqueue_depth", "Current depth of workqueue", l_name);
static struct metric m_queue_adds = METRIC_COUNTER(
	"workqueue_adds_total", "Total number of adds handled by workqueue", l_name);

void hm_reconcile(const char *controller, enum hm_result result, double seconds)
{
	static const char *const names[] = { "success", "error", "requeue", "requeue_after" };

	metric_inc(&m_reconcile_total, METRIC_VALUES(controller, names[result]));
	if (result == HM_ERROR)
		metric_inc(&m_reconcile_errors, METRIC_VALUES(controller));
	metric_observe(&m_reconcile_time, METRIC_VALUES(controller), seconds);
}

void hm_queue_depth(const char *controller, size_t n)
{
	metric_set(&m_queue_depth, METRIC_VALUES(controller), (double)n);
}

void hm_queue_add(const char *controller)
{
	metric_inc(&m_queue_adds, METRIC_VALUES(controller));
}

/* ---- scrape-time gauges -------------------------------------------------- */

static const char *const l_status[] = { "status", NULL };
static struct metric m_hosts = METRIC_GAUGE(
	"agenthub_hosts", "Agents by host status (status.debugInfo.state), counted at scrape time.", l_status);

void hm_hosts_begin(void)
{
	metric_clear(&m_hosts);
}

void hm_hosts_status(const char *status, double n)
{
	metric_set(&m_hosts, METRIC_VALUES(status && *status ? status : "unknown"), n);
}

/* nftw has no user pointer: the walk's state is per thread. */
static _Thread_local struct { double bytes; long entries; } walk;

#define WALK_MAX_ENTRIES 200000

static int walk_visit(const char *path, const struct stat *st, int type, struct FTW *f)
{
	if (type == FTW_F)
		walk.bytes += (double)st->st_size;
	return ++walk.entries >= WALK_MAX_ENTRIES ? 1 : 0;
}

void hm_directory_usage(const char *dir)
{
	struct statvfs vfs;

	walk.bytes = 0;
	walk.entries = 0;
	if (nftw(dir, walk_visit, 16, FTW_PHYS) >= 0)
		metric_set(&m_dir_usage, METRIC_VALUES(dir), walk.bytes);
	if (statvfs(dir, &vfs) == 0 && vfs.f_blocks > 0) {
		double total = (double)vfs.f_blocks * (double)vfs.f_frsize;
		double avail = (double)vfs.f_bavail * (double)vfs.f_frsize;
		double freeb = (double)vfs.f_bfree * (double)vfs.f_frsize;

		metric_set(&m_fs_free, METRIC_VALUES(dir), avail);
		metric_set(&m_fs_usage, NULL, floor((total - freeb) / total * 1000.0) / 10.0);
	}
}

/* ---- image service ------------------------------------------------------- */

static const char *const l_kind[] = { "kind", NULL };
static struct metric m_downloads = METRIC_COUNTER(
	"agenthub_image_downloads_total", "Image downloads begun, by kind (iso, initrd, file).", l_kind);
static struct metric m_download_bytes = METRIC_COUNTER(
	"agenthub_image_download_bytes_total", "Image bytes sent, by kind.", l_kind);

void hm_image_download(const char *kind)
{
	metric_inc(&m_downloads, METRIC_VALUES(kind));
}

void hm_image_bytes(const char *kind, size_t n)
{
	metric_add(&m_download_bytes, METRIC_VALUES(kind), (double)n);
}

/* ---- BMC (Redfish) requests ------------------------------------------------ */

static struct metric m_bmc_requests = METRIC_COUNTER(
	"agenthub_bmc_requests_total",
	"Redfish requests sent to BareMetalHosts' BMCs (each try), by result (ok, error, unreachable).", l_result);
static struct metric m_bmc_inflight = METRIC_GAUGE(
	"agenthub_bmc_requests_in_flight", "Redfish requests to BMCs in flight now.", NULL);
static struct metric m_bmc_inflight_max = METRIC_GAUGE(
	"agenthub_bmc_requests_in_flight_max", "The most Redfish requests to BMCs in flight at once since start.",
	NULL);

void hm_bmc_request(const char *result)
{
	metric_inc(&m_bmc_requests, METRIC_VALUES(result));
}

void hm_bmc_in_flight(int now, int max_seen)
{
	metric_set(&m_bmc_inflight, NULL, now);
	metric_set(&m_bmc_inflight_max, NULL, max_seen);
}
