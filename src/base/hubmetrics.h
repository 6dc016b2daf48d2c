/* hubmetrics.h - the metric families agenthub exposes, and one call per
 * place that counts something (metrics.h holds the registry and the text
 * format).
 *
 * Two groups:
 *  - am_*: upstream assisted-service's metrics, with its names (prefix
 *    "service_", counters without "_total"), types, labels and buckets
 *    (shared/spec/more-bmh-capi-metrics-ui-scaleout.md §C), emitted where
 *    upstream emits them: a cluster registered, a cluster's install started
 *    or ended, a host's install stage changed, a validation turned from
 *    success to failure, a cluster deleted, a disk-speed or image
 *    availability step reply; plus its HTTP middleware metrics
 *    (http_request_duration_seconds, ...) for the agent REST API.
 *  - hm_*: the hub's own (prefix "agenthub_", and controller-runtime's
 *    names for the controllers): requests by route, in-flight requests and
 *    open connections, store commits, watch streams, controller queues and
 *    reconciles, hosts by status, image downloads.
 *
 * Every function is thread-safe and cheap (a mutex, a lookup, an add); none
 * fails (out of memory loses a sample).  Inputs are borrowed. */
#ifndef AH_BASE_HUBMETRICS_H
#define AH_BASE_HUBMETRICS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds on a monotonic clock, for durations. */
double hm_now(void);

/* ---- upstream assisted-service ---------------------------------------- */

/* A cluster was registered (service_assisted_installer_cluster_creations). */
void am_cluster_registered(void);
/* A cluster's status went from `from` to `to`: preparing-for-installation →
 * installing counts an installation start; installed, cancelled, error and
 * installing-pending-user-action observe the install's duration (now -
 * install_started_at, seconds; skipped when it never started) by result. */
void am_cluster_status(const char *from, const char *to, int64_t install_started_at, int64_t now);
/* A host's install stage changed: prev_progress is its progress before
 * ({current_stage, stage_started_at}; NULL: none yet), host the host model after (role,
 * bootstrap, inventory as text or object, progress.current_stage).
 * Observes the previous stage's duration by phase and result; on Done or
 * Failed also counts the host and observes its cores, RAM, disks and NICs. */
void am_host_stage_changed(const json_t *prev_progress, const json_t *host, int64_t now);
/* Validations ({category: [{id, status, message}]}, as text or object)
 * before and after a refresh: each id that went from success to failure
 * counts once (host: true for host validations, false for cluster ones). */
void am_validations_changed(bool host, const json_t *before, const json_t *after);
/* A cluster is being deleted: each failing validation of the cluster
 * (aci_status.validationsInfo) and of each Agent in agents (their
 * status.validationsInfo) counts once. */
void am_cluster_deleted(const json_t *aci, const json_t *agents);
/* A step reply ({step_type, exit_code, output}) was applied; old_images is
 * the host's images_status before it (text, object or NULL): disk-speed
 * checks observe io_sync_duration, image availability the download rate of
 * each image seen for the first time. */
void am_step_reply(const json_t *reply, const json_t *old_images);
/* A monitoring pass: operation "HostMonitoring" or "ClusterMonitoring",
 * its duration in milliseconds and the number of objects it looked at. */
void am_monitor_pass(bool hosts, double ms, size_t n);

/* ---- HTTP ------------------------------------------------------------- */

/* The route of a request path: names, namespaces, ids and tokens replaced
 * by placeholders ("/apis/agent-install.openshift.io/v1beta1/namespaces/
 * {namespace}/agents/{name}", "/api/assisted-install/v2/infra-envs/
 * {infra_env_id}/hosts/{host_id}/instructions"); query strings dropped;
 * "other" for paths no service answers. */
void hm_route(const char *path, char *buf, size_t size);
/* A request started (delta 1) or ended (delta -1). */
void hm_request_inflight(const char *method, const char *path, int delta);
/* A request ended with status code after seconds; resp_bytes the body's
 * size when known (sized false for streams). */
void hm_request(const char *method, const char *path, unsigned code, double seconds,
		size_t resp_bytes, bool sized);
/* The open connections of the API server (set at scrape time). */
void hm_open_connections(unsigned n);

/* ---- store, watches ----------------------------------------------------- */

/* One commit batch of the store's writer: its duration and write count. */
void hm_store_commit(double seconds, size_t batch);
/* A watch stream opened (1) or closed (-1). */
void hm_watch(int delta);

/* ---- controllers (called by the controller runtime) -------------------- */

enum hm_result { HM_SUCCESS, HM_ERROR, HM_REQUEUE, HM_REQUEUE_AFTER };
/* One reconcile of an object by controller, with its result and duration
 * (controller_runtime_reconcile_total / _errors_total / _time_seconds). */
void hm_reconcile(const char *controller, enum hm_result result, double seconds);
/* The items waiting in controller's queue (workqueue_depth{name}). */
void hm_queue_depth(const char *controller, size_t n);
/* An item was added to controller's queue (workqueue_adds_total{name}). */
void hm_queue_add(const char *controller);

/* ---- scrape-time gauges -------------------------------------------------- */

/* Hosts by status: call hm_hosts_begin(), then hm_hosts_status() for each
 * status with its count. */
void hm_hosts_begin(void);
void hm_hosts_status(const char *status, double n);
/* The data directory's usage (bytes under it, bounded walk), the free bytes
 * of its filesystem and the filesystem's usage percentage. */
void hm_directory_usage(const char *dir);

/* ---- image service ------------------------------------------------------- */

/* An image download began (kind: "iso", "initrd", "kernel", "rootfs", ...). */
void hm_image_download(const char *kind);
/* n bytes of an image of that kind were sent. */
void hm_image_bytes(const char *kind, size_t n);
/* A Redfish request to a BMC ended (result "ok", "error": an HTTP error
 * answer, "unreachable": no answer); the requests in flight now and the most
 * seen at once. */
void hm_bmc_request(const char *result);
void hm_bmc_in_flight(int now, int max_seen);

#endif
