/* host.h - the host state machine (backend spec §1): RegisterHost (§1.1),
 * HostProgressChanged (§1.2), the explicit transitions of §1.3 (install,
 * installation failed, cancel, reset, bind, unbind, reclaim, media
 * disconnect) and RefreshHost (§1.4, every rule, main then pool).
 *
 * Hosts are jansson objects in the upstream snake_case host model (see
 * validations.h).  Times are unix seconds (integers): status_updated_at,
 * checked_in_at, progress.stage_started_at, progress.stage_updated_at,
 * logs_started_at, logs_collected_at.  A transition that changes "status"
 * also sets status_updated_at := now (left alone when now <= 0).
 *
 * The cluster, where a function takes one, is the upstream snake_case
 * cluster model (status, control_plane_count, high_availability_mode,
 * openshift_version, org_soft_timeouts_enabled, ...); NULL is allowed and
 * reads as "no cluster facts".
 *
 * All functions are pure and thread-safe. */
#ifndef AH_ASSISTED_HOST_H
#define AH_ASSISTED_HOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "assisted/progress.h"
#include "base/error.h"

/* Upstream status_info texts used by these transitions. */
#define HOST_INFO_DISCOVERING "Waiting for host to send hardware details"
#define HOST_INFO_DISCONNECTED "Host has stopped communicating with the installation service"
#define HOST_INFO_KNOWN "Host is ready to be installed"
#define HOST_INFO_READY_TO_BE_BOUND "Host is ready to be bound to a cluster"
#define HOST_INFO_BINDING "Host is waiting to be bound to the cluster"
#define HOST_INFO_UNBINDING "Host is waiting to be unbound from the cluster"
#define HOST_INFO_PREPARING "Host is preparing for installation"
#define HOST_INFO_MEDIA_DISCONNECTED \
	"Unable to read from the discovery media. It was either disconnected or poor network conditions prevented it from being read. Try using the minimal ISO option and be sure to keep the media connected until the installation is completed"

#define HOST_INFO_INSTALLING "Installation is in progress"
#define HOST_INFO_PREPARING_SUCCESSFUL "Host finished successfully to prepare for installation"
#define HOST_INFO_PREPARATION_FAILURE \
	"Host failed to prepare for installation due to following failing validation(s): $FAILING_VALIDATIONS"
#define HOST_INFO_PREPARATION_TIMEOUT \
	"The host has encountered a preparation timeout, the following conditions failed: $FAILING_CONDITIONS"
#define HOST_INFO_PREPARATION_TIMEOUT_DISK_SPEED "the installation disk speed check did not complete within the timeout."
#define HOST_INFO_PREPARATION_TIMEOUT_IMAGES "container availability was not determined within the timeout."
#define HOST_INFO_RESETTING_PENDING_USER_ACTION \
	"Host requires booting into the discovery image to complete resetting the installation"
#define HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS "Host is part of a cluster that failed to install"
#define HOST_INFO_INSTALLATION_TIMED_OUT "Host failed to install due to timeout while starting installation"
#define HOST_INFO_CONNECTION_TIMED_OUT_INSTALLING \
	"Host failed to install due to timeout while connecting to host during the installation phase."
#define HOST_INFO_CONNECTION_TIMED_OUT_PREPARING \
	"Host failed to install due to timeout while connecting to host during the preparation phase."
#define HOST_INFO_STAGE_TIMED_OUT \
	"Host failed to install because its installation stage $STAGE took longer than expected $MAX_TIME"
#define HOST_INFO_STAGE_NOT_PROGRESSING \
	"Host failed to install because its installation stage $STAGE did not sufficiently progress in the last $MAX_TIME."
#define HOST_INFO_REBOOT_TIMEOUT \
	"Host timed out when pulling the configuration files. Verify in the host console that the host boots from the OpenShift installation disk $INSTALLATION_DISK and has network access to the cluster API. The installation will resume after the host successfully boots and can access the cluster API"
#define HOST_INFO_REBOOTING_DAY2 \
	"Host has rebooted and no further updates will be posted. Please check console for progress and to possibly approve pending CSRs"
#define HOST_INFO_REBOOTING_FOR_RECLAIM "Host is rebooting into the discovery image"

/* Host-status groups: in the pool, with no cluster (the -unbound states,
 * unbinding, unbinding-pending-user-action; UNB in kubeapi.md), and INST6
 * (the installation started: preparing-*, installing*). */
bool host_status_unbound(const char *st);
bool host_status_inst6(const char *st);

/* RegisterHost (§1.1, first match): the state a (re-)registering host moves
 * to.  host_or_null NULL = new row: "discovering" when bound, else
 * "discovering-unbound".  Returns NULL when registration is refused; then
 * host_register_refusal() gives the HTTP status.  Borrowed static string. */
const char *host_register_state(const json_t *host_or_null, bool bound);

/* HTTP status of a refused registration: 409 for installed, 403 for
 * installing-pending-user-action at the reboot stage, else 400; 0 when
 * host_register_state() accepts. */
int host_register_refusal(const json_t *host);

/* Apply RegisterHost to host in place: new status, status_info
 * HOST_INFO_DISCOVERING for (un)bound discovering, clears what rule #3 / P2
 * clear (progress, inventory, bootstrap, images_status, ntp_sources,
 * logs_info, installation disk) or what #2 clears; registered_at := now
 * (and checked_in_at, role = suggested_role = "auto-assign" for a new row
 * when is_new).  0, or -EINVAL/-EPERM/-EBUSY with err set to 400/403/409. */
int host_register(json_t *host, bool is_new, bool bound, int64_t now, ah_err *err);

struct host_refresh_ctx {
	int64_t now;                     /* unix seconds */
	int disconnect_timeout_s;        /* 0 → 180 (HOST_MAX_DISCONNECTION_TIME) */
	const json_t *cluster;           /* NULL for unbound hosts; its "status" drives #2-#14, #20, #24 */
	const json_t *cluster_hosts;     /* all hosts of the cluster (hostname-unique, latency, #24 counts) */
	const char *service_agent_image; /* NULL → compatible-agent check disabled */
	const struct host_timeouts *timeouts; /* NULL → host_timeouts_configured(), else upstream defaults */
};

#define HOST_STATUS_INFO_MAX 2040

struct host_refresh_result {
	char status[48];
	char status_info[HOST_STATUS_INFO_MAX + 1]; /* truncated to 2040 bytes as upstream */
	json_t *validations_info;  /* owned; release with host_refresh_result_release() */
	json_t *validations;       /* owned; id → {category,status,message}, incl. suppressed */
	bool rule_matched;         /* false: no RefreshHost rule matched (upstream 409); status kept */
	bool status_changed;       /* status differs from host's */
	bool validations_changed;  /* validations_info differs from host's */
	bool changed;              /* anything differs (status, status_info, validations_info, updates) */
	/* Other host fields the matched rule sets (owned, never NULL on
	 * success; may be empty): "progress" (the whole new progress object,
	 * for #20 stage_updated_at and #22 stage_timed_out),
	 * "connection_timed_out" (#18/#19), "logs_info" ("timeout", #32). */
	json_t *updates;
	char rule[8];              /* the matched rule, e.g. "#21" or "P5"; "" when none */
};

/* Compute validations, then the next status/status_info by RefreshHost in
 * spec order (first match; main rules #1-#35 then pool rules P1-P5).  ret is
 * fully written on success.  Returns 0, -EOPNOTSUPP for statuses no rule
 * set covers (disabled, disabled-unbound), -EINVAL for a host without status,
 * -ENOMEM.
 *
 * Install-phase facts read from host: kind (day-2), progress
 * {current_stage, stage_updated_at, stage_timed_out}, connection_timed_out,
 * checked_in_at, status_updated_at, bootstrap, role/suggested_role,
 * disks_info/installation_disk_id (dsOK), images_status (imOK), logs_info,
 * logs_started_at, logs_collected_at.  From ctx->cluster: status,
 * control_plane_count / high_availability_mode (SNO), org_soft_timeouts_enabled,
 * last_installation_preparation.  Validations are only stored for the states
 * upstream computes them in; status_info templates expand $FAILING_VALIDATIONS,
 * $STAGE, $MAX_TIME and $INSTALLATION_DISK. */
int host_refresh(const json_t *host, const struct host_refresh_ctx *ctx, struct host_refresh_result *ret);

/* Write a refresh result onto host: status, status_info, validations_info
 * (as an object), the updates, and status_updated_at := now when the status
 * changed.  Does nothing when !r->rule_matched except validations_info. */
void host_refresh_apply(json_t *host, const struct host_refresh_result *r, int64_t now);

void host_refresh_result_release(struct host_refresh_result *r);

/* ---- installation phase (§1.2, §1.3, §6) ---- */

/* Whether the cluster model is a single-node one: high_availability_mode
 * "None", or control_plane_count 1 when that field is absent. */
bool host_cluster_is_sno(const json_t *cluster);

/* The stage list for host (effective role; bootstrap flag → the bootstrap
 * list, SNO list when the cluster is SNO; day-2 hosts of a non-kube-api
 * service cut after Rebooting: pass kube_api=true for the Agent flow, which
 * keeps the full list).  Static array, *n its length (0 for roles without
 * stages, e.g. auto-assign). */
const char *const *host_stages_of(const json_t *host, const json_t *cluster, bool kube_api, size_t *n);

/* InstallHost.  Day-1 (kind "Host"): known host with a real role (master,
 * arbiter, worker; auto-assign takes suggested_role) in a cluster whose
 * status is preparing-for-installation → preparing-for-installation
 * (HOST_INFO_PREPARING), the same move RefreshHost #2 makes, done at once;
 * also sets role := suggested_role for auto-assign, clears bootstrap for
 * workers, and progress_stages := the role's list.  Day-2
 * (kind AddToExistingClusterHost): known → installing (HOST_INFO_INSTALLING).
 * Already in the target state: 0, no change.  Refusals (err 409, host
 * unchanged): another status → -EBUSY "Host <id> is in <status> state,
 * expected known"; "approved" present and false (Agent flow) → -EPERM
 * "Host <id> is not approved"; no real role → -EBUSY "Can't install host
 * <id> due to invalid host role: <role>, should be one of [master arbiter
 * worker]"; day-1 with the cluster not preparing-for-installation → -EBUSY. */
int host_install(json_t *host, const json_t *cluster, int64_t now, ah_err *err);

/* The day-1 move to installing when the cluster starts installing:
 * preparing-successful → installing (HOST_INFO_INSTALLING), RefreshHost #5
 * done at once; also sets progress {current_stage "", installation_percentage 0}
 * and progress_stages.  -EBUSY/409 from other states. */
int host_start_installing(json_t *host, const json_t *cluster, int64_t now, ah_err *err);

/* PUT .../hosts/{id}/progress (§6) then HostProgressChanged (§1.2).
 * progress = {"current_stage": <stage>, "progress_info": <text, optional>};
 * cluster gives SNO-ness for the stage list (NULL = multi-node).
 * Checks, as upstream (err set, host unchanged on error):
 *   - current_stage missing → -EINVAL 400 "current_stage in body is
 *     required"; not an upstream stage → -EINVAL 400 "current_stage in body
 *     should be one of [...]"; progress_info not a string → -EINVAL 400;
 *   - host unbound (no cluster_id) → -EINVAL 400;
 *   - same stage and same info → 0, no change;
 *   - same stage, new info → progress_info and stage_updated_at only;
 *   - new stage: host ∉ {installing, installing-in-progress,
 *     installing-pending-user-action} → -EBUSY 409 "Can't set progress
 *     <stage> to host in status <status>"; once the host has a stage, a
 *     stage outside its list (host_stages_of, kube_api=true) → -EBUSY 409
 *     "Stages <stage> isn't available for host role <role> bootstrap
 *     <bool>", a lower one → -EBUSY 409 "Can't assign lower stage \"<new>\"
 *     after host has been in stage \"<cur>\"" (Failed is always accepted).
 * Effects: Failed → error, status_info "Failed - <info>" ("Failed" without
 * info), progress kept; otherwise the §1.2 table: Done → installed
 * (installing, installing-in-progress), day-2 Done →
 * added-to-existing-cluster with HOST_INFO_REBOOTING_DAY2, everything else
 * (including Done from installing-pending-user-action) →
 * installing-in-progress; status_info := the stage name.  progress :=
 * {current_stage, progress_info, installation_percentage ((i+1)*100/len,
 * 0 for a first stage outside the list), stage_started_at := now,
 * stage_updated_at := now, stage_timed_out false}; progress_stages is
 * filled when absent.  *ret_stage_changed (may be NULL) tells whether
 * current_stage changed (event host_install_progress_updated, cluster
 * progress recompute). */
int host_progress_changed(json_t *host, const json_t *progress, const json_t *cluster, int64_t now,
			  bool *ret_stage_changed, ah_err *err);

/* HostInstallationFailed (install step exit ≠ 0): installing,
 * installing-in-progress → error, status_info = reason (NULL → "installation
 * command failed").  -EBUSY 409 from other states. */
int host_installation_failed(json_t *host, const char *reason, int64_t now, ah_err *err);

/* CancelInstallation: installing-pending-user-action, installing,
 * installing-in-progress, installed, error → cancelled;
 * preparing-for-installation, preparing-successful, known → known.
 * status_info := reason (NULL → "Installation cancelled by user") in both
 * cases, as upstream's PostCancelInstallation.  -EBUSY 409 from other
 * states. */
int host_cancel_installation(json_t *host, const char *reason, int64_t now, ah_err *err);

/* ResettingPendingUserAction (reset cluster): resetting, discovering, known,
 * IPUA, installing, PFI, PS, PF, PFIN, RPUA, IIP, installed, error,
 * cancelled, added-to-existing-cluster → resetting-pending-user-action
 * (HOST_INFO_RESETTING_PENDING_USER_ACTION); the progress is cleared when
 * the host registers again (RegisterHost).  -EBUSY 409 from other states. */
int host_reset_pending_user_action(json_t *host, int64_t now, ah_err *err);

/* BindHost (pool): known-unbound → binding (HOST_INFO_BINDING), cluster_id
 * := cluster_id, clears progress, inventory, bootstrap, images_status.
 * -EBUSY 409 from other states, -EINVAL 400 for an empty cluster_id. */
int host_bind(json_t *host, const char *cluster_id, int64_t now, ah_err *err);

/* UnbindHost: PRE → unbinding (HOST_INFO_UNBINDING); PFI, PS, PF,
 * installing, IIP, IPUA, installed, added-to-existing-cluster, error,
 * cancelled → unbinding-pending-user-action (same text).  Wipes
 * cluster-derived fields (cluster_id, progress, progress_stages, logs,
 * installation disk, inventory, bootstrap, images_status, connectivity,
 * domain_resolutions, free_addresses, machine_config_pool_name,
 * api_vip_connectivity), role and suggested_role := auto-assign,
 * kind := Host.  Already unbound states: 0, no change.  -EBUSY 409 otherwise. */
int host_unbind(json_t *host, int64_t now, ah_err *err);

/* MediaDisconnect (step reply exit 256): PRE, binding → disconnected; the
 * four unbound states, unbinding → disconnected-unbound (both with
 * HOST_INFO_MEDIA_DISCONNECTED); PFI, PF, PS, installing, IIP → error with
 * HOST_INFO_MEDIA_DISCONNECTED, and an error host gets "Failed - <media
 * text>. <its status_info>" (the installer's own failure text is kept) —
 * these last two only when media_status was not already disconnected.
 * media_status := disconnected always.  Returns 1 if the status changed,
 * else 0. */
int host_media_disconnect(json_t *host, int64_t now);

#endif
