/* validations.h - host validations before installation (backend spec §3),
 * hardware requirements per role (§3.4) and installation-disk eligibility
 * and choice (§5).
 *
 * Host facts are a jansson object in the upstream host model's snake_case
 * (status, inventory, role, suggested_role, bootstrap, cluster_id,
 * checked_in_at, media_status, ntp_sources, connectivity, domain_resolutions,
 * disks_info, images_status, requested_hostname, installation_disk_id,
 * timestamp, discovery_agent_version, kind, skip_formatting_disks ...).
 * Cluster facts use the upstream cluster model: control_plane_count,
 * high_availability_mode, openshift_version, user_managed_networking, kind,
 * machine_networks[{cidr}], cluster_networks, service_networks,
 * vip_dhcp_allocation, platform{type}, name, base_dns_domain,
 * connectivity_majority_groups, ignored_host_validations, disk_encryption
 * {enable_on, mode}.
 *
 * Everything here is pure and thread-safe; returned JSON values are new
 * references owned by the caller. */
#ifndef AH_ASSISTED_VALIDATIONS_H
#define AH_ASSISTED_VALIDATIONS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Hardware requirements of one role (shipped default_hw_requirements.json).
 * Thresholds are -1 when the role has none. */
struct hw_req {
	int64_t cpu_cores;
	int64_t ram_mib;
	int64_t disk_size_gb;
	double disk_speed_threshold_ms;
	double network_latency_threshold_ms;
	double packet_loss_percentage;
};

/* Role keys of the requirement table. */
enum hw_role { HW_MASTER, HW_ARBITER, HW_WORKER, HW_SNO, HW_EDGE_WORKER };

/* Requirements for role at openshift_version (NULL/"" = default entry); the
 * "min_version 4.22" override (sno cpu_cores 4) is applied.  Never fails. */
struct hw_req hw_requirements(enum hw_role role, const char *openshift_version);

/* The requirement role used for a host (§3.4): NULL cluster (unbound) →
 * HW_ARBITER (smallest disk); effective role master → SNO when the cluster
 * has one control-plane node; arbiter; aarch64 BlueField → edge-worker;
 * otherwise worker. */
enum hw_role hw_role_for_host(const json_t *host, const json_t *inventory, const json_t *cluster);

/* The effective role: role, or suggested_role when role is auto-assign or
 * empty ("auto-assign" when both are unset).  Borrowed string. */
const char *host_effective_role(const json_t *host);

/* Service-side reasons (appended to the agent's) why a disk may not be the
 * installation disk: too small for min_disk_gb, unsupported drive type for
 * arch.  Returns a new array (empty when eligible). */
json_t *disk_service_reasons(const json_t *disk, int64_t min_disk_gb, const char *arch);

/* Upstream disk identifier: by_id, else by_path, else "/dev/<name>".
 * Writes into buf (size >= 256 recommended). */
void disk_identifier(const json_t *disk, char *buf, size_t size);

/* Fill disks[].id and disks[].installation_eligibility in inv (modified in
 * place) for the host's requirement role.  Legacy agents that sent no
 * eligibility are treated as eligible before the service reasons. */
void inventory_apply_eligibility(json_t *inv, const json_t *host, const json_t *cluster);

/* Choose the installation disk (§5): keep host's current
 * installation_disk_id / installation_disk_path if it still names an eligible
 * disk, else the first eligible disk ordered bootable first, non-nvme first,
 * drive_type asc, size asc, hctl asc.  Writes installation_disk_id and
 * installation_disk_path into host (or removes them when no disk is
 * eligible). */
void host_choose_installation_disk(json_t *host, const json_t *inv);

struct validation_ctx {
	int64_t now;                     /* unix seconds */
	int disconnect_timeout_s;        /* 0 → 180 */
	const json_t *cluster;           /* NULL for unbound hosts */
	const json_t *cluster_hosts;     /* array of host objects, may include this host */
	const char *service_agent_image; /* NULL → agent compatibility check disabled */
};

/* Run the host validations.  Returns a new object id → {"category",
 * "status", "message"} holding every computed validation, including
 * success-suppress-output ones (use validations_info_from() for the stored
 * form).  Never NULL except on allocation failure. */
json_t *host_validations(const json_t *host, const struct validation_ctx *ctx);

/* The stored/displayed form: {"hardware":[...],"network":[...],
 * "operators":[...]} with {id,status,message} lists sorted by id, without
 * success-suppress-output entries.  Categories with no entry are omitted. */
json_t *validations_info_from(const json_t *results);

/* Whether validation id counts as passed for the state machine: status
 * success, success-suppress-output or disabled, or the id is ignored by the
 * cluster's ignored_host_validations (not for non-ignorable ids).  An id
 * that was not computed counts as passed. */
bool validation_ok(const json_t *results, const char *id, const json_t *cluster);

/* Go's conversions.BytesToString ("16.00 GiB", "512 MiB") into buf. */
void bytes_to_string(int64_t b, char *buf, size_t size);
/* go-humanize Bytes (SI: "120 GB", "1.0 GB", "0 B") into buf. */
void humanize_bytes(uint64_t b, char *buf, size_t size);

#endif
