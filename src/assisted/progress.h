/* progress.h - the installation progress stages a host reports (backend
 * spec §6), their order per role, the percentage they stand for, and the
 * stage timeouts and other install-phase knobs (§1.5).
 *
 * Everything here is pure and thread-safe: stage lists are static tables,
 * struct host_timeouts is plain data the caller owns. */
#ifndef AH_ASSISTED_PROGRESS_H
#define AH_ASSISTED_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* The upstream stage names (models/host_stage.go), exactly. */
#define HOST_STAGE_STARTING_INSTALLATION "Starting installation"
#define HOST_STAGE_WAITING_FOR_CONTROL_PLANE "Waiting for control plane"
#define HOST_STAGE_WAITING_FOR_BOOTKUBE "Waiting for bootkube"
#define HOST_STAGE_WAITING_FOR_CONTROLLER "Waiting for controller"
#define HOST_STAGE_INSTALLING "Installing"
#define HOST_STAGE_WRITING_IMAGE_TO_DISK "Writing image to disk"
#define HOST_STAGE_COPYING_REGISTRY_DATA "Copying registry data to disk"
#define HOST_STAGE_REBOOTING "Rebooting"
#define HOST_STAGE_WAITING_FOR_IGNITION "Waiting for ignition"
#define HOST_STAGE_CONFIGURING "Configuring"
#define HOST_STAGE_JOINED "Joined"
#define HOST_STAGE_DONE "Done"
#define HOST_STAGE_FAILED "Failed"

/* Number of stages in the enum above (13). */
#define HOST_STAGE_COUNT 13

/* Index of stage in the enum (0..HOST_STAGE_COUNT-1), or -1 when stage is
 * not an upstream stage name (NULL allowed). */
int host_stage_id(const char *stage);

/* Name of enum index id (NULL when out of range).  Static string. */
const char *host_stage_name(int id);

/* The ordered stages of a host installing with role ("bootstrap", "master",
 * "arbiter", "worker"; anything else is treated as worker, as upstream's
 * default branch does) in a single-node cluster (sno) or not.  day2 cuts
 * the list after "Rebooting" (the non-kube-api day-2 list); kube-api day-2
 * hosts use the full list, so pass day2=false for them.  *n receives the
 * length.  Returns a static NULL-terminated array. */
const char *const *host_install_stages(const char *role, bool sno, bool day2, size_t *n);

/* Position of stage in stages[0..n) or -1. */
int host_stage_index(const char *const *stages, size_t n, const char *stage);

/* installation_percentage of a host at stage: (index+1)*100/len, integer
 * division as upstream (int64 arithmetic); -1 when the stage is not in the
 * role's list. */
int host_install_percentage(const char *role, bool sno, bool day2, const char *stage);

/* The install-phase timeouts (§1.5), in seconds.  A zero field means the
 * upstream default; host_timeouts_init() fills the defaults explicitly. */
struct host_timeouts {
	int64_t prepare_s;          /* PREPARE_FOR_INSTALLATION_HOST_TIMEOUT, 8m */
	int64_t installing_s;       /* installing → error, 20m (hardcoded upstream) */
	int64_t pending_user_action_s; /* HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT, 60m */
	int64_t log_collection_s;   /* HOST_LOG_COLLECTION_TIMEOUT, 10m */
	int64_t log_pending_s;      /* HOST_LOG_PENDING_TIMEOUT, 2m */
	int64_t reclaim_s;          /* reclaiming → UPUA, 60m (hardcoded upstream) */
	int64_t stage_s[HOST_STAGE_COUNT]; /* HOST_STAGE_<NAME>_TIMEOUT per stage id */
	int64_t sno_rebooting_s;    /* Rebooting on SNO, 80m (hardcoded upstream) */
	int64_t disconnect_s;       /* HOST_MAX_DISCONNECTION_TIME, 3m (the hub's host_disconnect_timeout_s) */
	bool soft;                  /* ENABLE_SOFT_TIMEOUTS (also needs the cluster's org_soft_timeouts_enabled) */
};

/* Fill t with the upstream defaults. */
void host_timeouts_init(struct host_timeouts *t);

/* The timeout of stage for a host (sno: single-node cluster), honouring t
 * (NULL = defaults; zero fields = defaults).  Unknown stages get 60m. */
int64_t host_stage_timeout_s(const struct host_timeouts *t, const char *stage, bool sno);

/* The environment name of a stage's timeout knob:
 * "HOST_STAGE_" + stage upper-cased with spaces → '_' + "_TIMEOUT", e.g.
 * HOST_STAGE_WRITING_IMAGE_TO_DISK_TIMEOUT.  Writes at most size bytes. */
void host_stage_timeout_env(const char *stage, char *buf, size_t size);

/* Set one knob by its upstream environment name (HOST_MAX_DISCONNECTION_TIME,
 * PREPARE_FOR_INSTALLATION_HOST_TIMEOUT, HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT,
 * HOST_LOG_COLLECTION_TIMEOUT, HOST_LOG_PENDING_TIMEOUT, ENABLE_SOFT_TIMEOUTS,
 * HOST_STAGE_*_TIMEOUT).  Durations are Go duration text ("30m", "1h30m",
 * "90s", "1.5h") or plain seconds, at least one second; ENABLE_SOFT_TIMEOUTS
 * takes true/false.  Returns 0, -ENOENT when name is not a knob (t
 * unchanged), or -EINVAL with err naming the knob and the reason (t
 * unchanged). */
int host_timeouts_set(struct host_timeouts *t, const char *name, const char *value, ah_err *err);

/* The timeouts of this process, which host_refresh() uses when its context
 * names none: `agenthub serve` installs what the operator configured (the
 * upstream environment variables and --host-timeout flags) once, before any
 * thread starts, as upstream reads its environment into one process-wide
 * config.  t is copied; NULL restores the upstream defaults.  Not
 * thread-safe against concurrent host_timeouts_configured() readers. */
void host_timeouts_configure(const struct host_timeouts *t);

/* The table host_timeouts_configure() installed, or NULL (the upstream
 * defaults apply).  Static storage, valid until the next configure. */
const struct host_timeouts *host_timeouts_configured(void);

/* Parse a Go duration ("1h0m0s", "30m", "1.5h", "250ms" rounds down to
 * whole seconds) or plain non-negative seconds into *ret_s.  0 or -EINVAL. */
int host_parse_duration(const char *text, int64_t *ret_s);

/* Go's time.Duration.String() of whole seconds: 3600 → "1h0m0s",
 * 1800 → "30m0s", 45 → "45s", 0 → "0s" (for $MAX_TIME). */
void host_format_duration(int64_t secs, char *buf, size_t size);

#endif
