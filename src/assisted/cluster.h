/* cluster.h - the cluster side of an installation: the cluster model built
 * from ClusterDeployment + AgentClusterInstall + ClusterImageSet (kubeapi
 * spec §1.3, §4.3), cluster validations (backend §4), the cluster state
 * machine (backend §2: RefreshStatus first match, explicit transitions,
 * finalizing stages and progress), roles and the bootstrap host (§5), the
 * auto-install gate (kubeapi §4.3 step 9) and the AgentClusterInstall
 * conditions (kubeapi §2.1).
 *
 * The cluster is a jansson object in the upstream snake_case cluster model:
 *   id, name, base_dns_domain, openshift_version, ocp_release_image,
 *   cpu_architecture, kind ("Cluster" | "AddHostsCluster"), status,
 *   status_info, status_updated_at (unix seconds), control_plane_count,
 *   high_availability_mode ("Full" | "None"), user_managed_networking,
 *   vip_dhcp_allocation, platform{type}, load_balancer{type},
 *   api_vips[{ip}], ingress_vips[{ip}], machine_networks[{cidr}],
 *   cluster_networks[{cidr, host_prefix}], service_networks[{cidr}],
 *   network_type, ssh_public_key, pull_secret_set, hyperthreading,
 *   schedulable_masters, http_proxy, https_proxy, no_proxy,
 *   additional_ntp_source, disk_encryption{enable_on, mode, tang_servers},
 *   ignored_cluster_validations / ignored_host_validations (JSON text),
 *   install_started_at, install_completed_at (unix seconds, 0 = unset),
 *   progress{preparing_stage_percentage, installing_stage_percentage,
 *   finalizing_stage_percentage, total_percentage, finalizing_stage,
 *   finalizing_stage_started_at, finalizing_stage_timed_out},
 *   last_installation_preparation{status, reason},
 *   validations_info (JSON text, as upstream stores it), tags.
 * Hosts are a JSON array of host objects in the model of validations.h.
 * Two keys are read from a host besides the upstream ones, because they
 * live on the Agent and not in the backend host: "approved" (bool, the
 * Agent's spec.approved) and "spec_synced" (bool, false when the Agent's
 * SpecSynced condition is False; absent = true).
 *
 * Everything here is pure (no I/O, no clock: times come in as arguments)
 * and thread-safe.  Returned JSON values and strings are new and owned by
 * the caller. */
#ifndef AH_ASSISTED_CLUSTER_H
#define AH_ASSISTED_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Upstream status_info texts (internal/cluster/common.go). */
#define CLUSTER_INFO_PENDING_FOR_INPUT "User input required"
#define CLUSTER_INFO_INSUFFICIENT "Cluster is not ready for install"
#define CLUSTER_INFO_READY "Cluster ready to be installed"
#define CLUSTER_INFO_PREPARING "Preparing cluster for installation"
#define CLUSTER_INFO_PREPARING_TIMEOUT "Preparing cluster for installation timeout"
#define CLUSTER_INFO_UNPREPARING_HOST "At least one host has stopped preparing for installation"
#define CLUSTER_INFO_PREPARE_FAILED "Cluster failed to prepare for installation"
#define CLUSTER_INFO_INSTALLING "Installation in progress"
#define CLUSTER_INFO_PENDING_USER_ACTION "Cluster has hosts pending user action"
#define CLUSTER_INFO_FINALIZING "Finalizing cluster installation"
#define CLUSTER_INFO_INSTALLED "Cluster is installed"
#define CLUSTER_INFO_ERROR "cluster has hosts in error"
#define CLUSTER_INFO_CANCELLED "Canceled cluster installation"
#define CLUSTER_INFO_ADDING_HOSTS "cluster is adding hosts to existing OCP cluster"

#define CLUSTER_STATUS_INFO_MAX 2040

/* ---------------------------------------------------------------------- */
/* The model from the CRs (kubeapi §4.3 steps 2-4, platform and versions). */

/* Build the spec-derived part of the cluster model from the ClusterDeployment,
 * its AgentClusterInstall and the ClusterImageSet (NULL when the ACI has no
 * imageSetRef or the set does not exist).  Sets name, base_dns_domain,
 * openshift_version / ocp_release_image / cpu_architecture (from the release
 * image tag, see cluster_release_from_image), networks (backend defaults
 * 10.128.0.0/14 /23 and 172.30.0.0/16 when absent), network_type (explicit,
 * else OVNKubernetes for IPv6, SNO or version >= 4.12, else OpenShiftSDN),
 * api_vips / ingress_vips (lists; the singular when the list is empty),
 * user_managed_networking (spec OR SNO), platform, high_availability_mode,
 * control_plane_count, hyperthreading, schedulable_masters, proxy, NTP,
 * disk_encryption, load_balancer, ssh_public_key (trimmed), kind "Cluster"
 * (or "AddHostsCluster" when the CD is installed).  The ACI annotations
 * give ignored_cluster_validations / ignored_host_validations (JSON text
 * arrays) and install_config_overrides (checked with
 * installconfig_check_overrides(), so a bad override is an InputError
 * here).  It does NOT set id, status or any other state field (see
 * cluster_model_carry_state), nor pull_secret_set (the caller reads the
 * Secret and sets it), nor additional_trust_bundle (the InfraEnvs' PEM).
 * Returns NULL with err set on bad input; err->reason is "InputError"
 * (status 400) for user errors with the upstream texts ("ClusterImageSet
 * must be specified in AgentClusterInstall.Spec.ImageSetRef for cluster that
 * is not installed", "PullSecret is required for ClusterDeployment
 * <n>/<ns>", "Missing reference to pull secret", "apiVIP must be the same
 * as the first element of apiVIPs", the platform/UMN texts, ...) and
 * "BackendError" (status 500) where upstream wraps the error (a missing
 * ClusterImageSet: "ClusterImageSet <n> not found. Please ensure the
 * ClusterImageSet exists"). */
json_t *cluster_model_from_crs(const json_t *cd, const json_t *aci, const json_t *imageset, ah_err *err);

/* Copy the state fields (id, kind when AddHostsCluster, status, status_info,
 * status_updated_at, install_started_at, install_completed_at, progress,
 * last_installation_preparation, validations_info, pull_secret_set,
 * logs_info, connectivity_majority_groups, ...) of prev into model, so a
 * model rebuilt from the CRs keeps the state machine position.  prev may be
 * NULL (no-op). */
void cluster_model_carry_state(json_t *model, const json_t *prev);

/* Whether the CRs describe an installed cluster, the test of the
 * registration (kubeapi.md §4.3 step 3, surprise 10): the
 * ClusterDeployment's spec.installed, or the AgentClusterInstall's Completed
 * condition with reason InstallationCompleted (a cluster whose record was
 * lost after it installed). */
bool cluster_crs_installed(const json_t *cd, const json_t *aci);

/* Register model (built by cluster_model_from_crs(), no status yet) as an
 * imported day-2 cluster (§4.3 step 3 "Import day-2"): kind AddHostsCluster,
 * status adding-hosts with CLUSTER_INFO_ADDING_HOSTS, api_vip_dnsname
 * "api.<name>.<base_dns_domain>", openshift_cluster_id from the ACI's
 * spec.clusterMetadata.clusterID (the CD's when the ACI has none), and
 * status_updated_at := now.  Nothing else of the model changes. */
void cluster_import_day2(json_t *model, const json_t *cd, const json_t *aci, int64_t now);

/* OpenShift version and architecture from a release image pull spec tag,
 * e.g. "quay.io/openshift-release-dev/ocp-release:4.14.0-x86_64" → "4.14.0",
 * "x86_64"; "...:4.15.0-rc.1-multi" → "4.15.0-rc.1", "multi"; a tag without
 * an arch suffix gives arch "x86_64".  Returns 0, or -EINVAL when the image
 * has no tag that starts with a version (digest-only references). */
int cluster_release_from_image(const char *image, char *ret_version, size_t vsize, char *ret_arch,
			       size_t asize);

/* True when the cluster is single-node (control_plane_count 1, or
 * high_availability_mode "None"). */
bool cluster_is_sno(const json_t *cluster);

/* Apply a verify-vips step reply (its decoded output: [{vip, vip_type
 * "api"|"ingress", verification "succeeded"|"failed"|"unverified"}]) onto
 * the cluster's api_vips / ingress_vips[].verification.  The
 * api-vips-valid / ingress-vips-valid validations read it (falling back to
 * the hosts' free_addresses); without either a VIP stays "not verified
 * yet" and a multi-node cluster never becomes ready.  Returns the number
 * of VIPs changed, or -EINVAL when output is not an array. */
int cluster_apply_vip_verifications(json_t *cluster, const json_t *output);

/* ---------------------------------------------------------------------- */
/* Validations (backend §4) and RefreshStatus (backend §2.1). */

struct cluster_refresh_ctx {
	int64_t now;                /* unix seconds */
	int prepare_timeout_s;      /* 0 → 600 (PREPARE_FOR_INSTALLATION_TIMEOUT) */
	int install_timeout_s;      /* 0 → 86400 (INSTALLATION_TIMEOUT) */
	int finalizing_timeout_s;   /* 0 → 18000 (FINALIZING_TIMEOUT) */
	bool soft_timeouts;         /* soft timeouts enabled (rules #12-#15) */
	bool kubeconfig_uploaded;   /* the <cluster_id>/kubeconfig object exists (rule #23) */
	bool custom_manifests;      /* a user manifest exists (custom-manifests-requirements-satisfied) */
	const char *disabled_validations; /* DISABLED_CLUSTER_VALIDATIONS, comma list; NULL = none */
};

struct cluster_refresh_result {
	char status[48];
	char status_info[CLUSTER_STATUS_INFO_MAX + 1];
	json_t *cluster;          /* owned: a copy of the cluster with every change applied
				   * (status, status_info, status_updated_at, validations_info,
				   * progress, last_installation_preparation, SNO VIPs, ...) */
	json_t *validations;      /* owned: id → {category, status, message}; empty when the
				   * status does not evaluate validations */
	json_t *validations_info; /* owned: {category: [{id,status,message}]}, or NULL when not evaluated */
	json_t *events;           /* owned: array of {name, severity, message} to emit besides
				   * the status change itself (the caller's cluster_status_updated):
				   * cluster_validation_failed/_fixed, cluster_installation_failed
				   * (critical), finalizing_stage_timed_out,
				   * cluster_installation_completed */
	bool rule_matched;        /* false: no rule matched (upstream 409); status kept */
	bool status_changed;      /* status differs from the input's */
	bool validations_changed; /* validations_info differs */
	bool changed;             /* ret.cluster differs from the input at all */
};

/* Compute the cluster validations (only in insufficient, ready,
 * pending-for-input, preparing-for-installation) and the next status by
 * RefreshStatus, first match (§2.1 rules #1-#26).  hosts are the cluster's
 * hosts.  ret is fully written on success.  Returns 0, -EINVAL for a cluster
 * without status, -ENOMEM. */
int cluster_refresh(const json_t *cluster, const json_t *hosts, const struct cluster_refresh_ctx *ctx,
		    struct cluster_refresh_result *ret);

void cluster_refresh_result_release(struct cluster_refresh_result *r);

/* The validations alone: id → {category, status, message} (every id of
 * §4, with "disabled" for ids in ctx->disabled_validations).  New object. */
json_t *cluster_validations(const json_t *cluster, const json_t *hosts, const struct cluster_refresh_ctx *ctx);

/* ---------------------------------------------------------------------- */
/* Explicit transitions.  Each works on cluster in place and returns 0, or a
 * negative errno with err set (status 409 "Conflict" when the current state
 * does not allow it, 400 "BadRequest" for bad arguments); on error nothing
 * is changed.  now is unix seconds. */

/* PrepareForInstallation: ready → preparing-for-installation,
 * install_started_at := now, last_installation_preparation.status :=
 * "not_started", progress reset.  Call cluster_assign_roles() first. */
int cluster_prepare_for_installation(json_t *cluster, int64_t now, ah_err *err);

/* The asynchronous preparation result (manifests/install-config generated or
 * failed): last_installation_preparation := {status "success"|"failed",
 * reason}.  Only in preparing-for-installation (else -EBUSY).  The next
 * cluster_refresh() moves the cluster (rules #7, #9). */
int cluster_preparation_done(json_t *cluster, bool success, const char *reason, ah_err *err);

/* CancelInstallation: installing, installing-pending-user-action, error,
 * finalizing → cancelled; preparing-for-installation → ready. */
int cluster_cancel(json_t *cluster, int64_t now, ah_err *err);

/* ResetCluster: preparing-for-installation, installing,
 * installing-pending-user-action, error, cancelled, finalizing →
 * insufficient with status_info "cluster was reset by user"; clears
 * progress, logs, openshift_cluster_id and the SNO VIPs, and sets the
 * preparation status "not_started". */
int cluster_reset(json_t *cluster, int64_t now, ah_err *err);

/* Installation failure reported for the cluster (installer/controller):
 * installing, finalizing, installing-pending-user-action → error with
 * status_info reason (NULL → CLUSTER_INFO_ERROR). */
int cluster_install_failed(json_t *cluster, const char *reason, int64_t now, ah_err *err);

/* PUT progress: set progress.finalizing_stage (one of the §2.2 stage names)
 * in installing, finalizing, installing-pending-user-action (else 400);
 * unknown stage → 400.  A change resets finalizing_stage_started_at := now
 * and finalizing_stage_timed_out := false. */
int cluster_set_finalizing_stage(json_t *cluster, const char *stage, int64_t now, ah_err *err);

/* actions/allow-add-hosts: installed with kind Cluster → adding-hosts, kind
 * AddHostsCluster; the status_info stays as it was ("Cluster is installed"). */
int cluster_allow_add_hosts(json_t *cluster, int64_t now, ah_err *err);

/* Finalizing stage timeout in seconds (§2.2 defaults; hard when !soft). */
int cluster_finalizing_stage_timeout(const char *stage, bool soft);

/* Recompute progress (§2.2) from the hosts' stages and the cluster status:
 * preparing 100 once installing, installing% from host stages, total =
 * 0.1 prep + 0.7 inst + 0.15 fin (100 when installed). */
void cluster_update_progress(json_t *cluster, const json_t *hosts);

/* ---------------------------------------------------------------------- */
/* Roles and bootstrap (backend §5). */

/* Suggest roles (suggested_role) for every host of the cluster, weakest
 * first: day-2 → worker; masters first while fewer than
 * control_plane_count hosts are masters and the host meets the master (or
 * SNO) cpu/memory requirements; arbiter for control_plane_count 2 without
 * one; else worker.  Hosts with a set role keep role == suggested_role.
 * Modifies hosts in place.  Returns 0, or -ENOMEM (hosts unchanged). */
int cluster_suggest_roles(const json_t *cluster, json_t *hosts);

/* At installation start: every auto-assign host takes role :=
 * suggested_role; workers lose bootstrap; if no host is bootstrap, the last
 * effective master in known / preparing-for-installation (array order)
 * becomes bootstrap; SNO → the one master is master + bootstrap.
 * Returns 0, or -EINVAL with err set when no host can be bootstrap. */
int cluster_assign_roles(const json_t *cluster, json_t *hosts, ah_err *err);

/* ---------------------------------------------------------------------- */
/* Auto-install gate and ACI conditions (kubeapi §2.1, §4.3 step 9). */

/* The ACI's provisionRequirements. */
struct aci_requirements {
	int control_plane_agents;
	int worker_agents;
	int arbiter_agents;
};

/* Fill from ACI spec.provisionRequirements (missing = 0). */
void aci_requirements_from(const json_t *aci, struct aci_requirements *ret);

struct cluster_host_counts {
	int masters, arbiters, workers; /* over ALL hosts, by effective role (suggested_role for auto-assign) */
	int known;                      /* hosts in status known */
	int approved_known;             /* known and approved */
	int unsynced;                   /* hosts with spec_synced false */
	int total;
};

void cluster_count_hosts(const json_t *hosts, struct cluster_host_counts *ret);

enum cluster_gate {
	CLUSTER_GATE_OK,                  /* install may start now */
	CLUSTER_GATE_NOT_READY,           /* cluster status is not ready */
	CLUSTER_GATE_UNSYNCED_AGENTS,     /* some Agent has SpecSynced False */
	CLUSTER_GATE_INSUFFICIENT_AGENTS, /* role counts != provisionRequirements (extra hosts block) */
	CLUSTER_GATE_UNAPPROVED_AGENTS,   /* approved known hosts != expected total */
};

/* Whether the day-1 install may start by itself (the hold is the caller's
 * business), checked in the RequirementsMet order: status ready; role
 * counts equal to the requirements exactly (extra hosts block); no Agent
 * with SpecSynced False; known == approved-known == expected total. */
enum cluster_gate cluster_install_gate(const json_t *cluster, const json_t *hosts,
				       const struct aci_requirements *req);

struct aci_conditions_in {
	struct aci_requirements req;
	const json_t *hosts;          /* the cluster's hosts (counts, only used while ready) */
	bool hold;                    /* spec.holdInstallation or CD reconcile-pause */
	bool spec_synced;             /* false → SpecSynced False */
	bool spec_error_is_input;     /* InputError (true) or BackendError (false) */
	const char *spec_error;       /* the error detail (never holds a secret) */
	const char *cvo_status;       /* cluster-version operator status, NULL = none */
	const char *cvo_message;
	const json_t *old_conditions; /* the ACI's current conditions (LastInstallationPreparationFailed
				       * is kept when the preparation status is not_started) */
};

/* The seven ACI conditions in this order: SpecSynced, RequirementsMet,
 * Validated, Completed, Failed, Stopped, LastInstallationPreparationFailed
 * (the last one omitted when not_started and absent from old_conditions).
 * Each is {type, status, reason, message, lastProbeTime: null,
 * lastTransitionTime: null}; fill times with aci_conditions_merge_times().
 * cluster_or_null NULL = no backend cluster (the five status conditions
 * Unknown/NotAvailable "Information not available"). */
json_t *aci_conditions(const json_t *cluster_or_null, const struct aci_conditions_in *in);

/* Conditions when the ClusterDeployment is missing: SpecSynced False
 * InputError "The Spec could not be synced due to an input error:
 * ClusterDeployment with name '<n>' in namespace '<ns>' not found. Ensure
 * that the CRD is already applied." and the other five
 * Unknown/NotAvailable. */
json_t *aci_conditions_cd_missing(const char *cd_name, const char *ns);

/* Hive's rule: for each condition in new_conds, when old_conds has the same
 * type with the same status, reason and message, keep its lastTransitionTime
 * and lastProbeTime; otherwise set both to now_rfc3339.  In place. */
void aci_conditions_merge_times(json_t *new_conds, const json_t *old_conds, const char *now_rfc3339);

/* The ACI status.debugInfo state/stateInfo and the rest of the status the
 * controller mirrors from the cluster: {state, stateInfo}, progress
 * {totalPercentage}, apiVIP(s), ingressVIP(s), userManagedNetworking,
 * platformType (CRD spelling: BareMetal, None, ...), machineNetwork,
 * validationsInfo (object), connectivityMajorityGroups (JSON text).  New
 * object; merge it into the ACI status key by key (debugInfo holds only
 * state and stateInfo, so eventsURL / logsURL must be kept). */
json_t *aci_status_from_cluster(const json_t *cluster);

#endif
