/* steps.h - what the agent is told to run next (backend spec §7.4) and how
 * its step replies update the host facts (§7.5), for every host status:
 * discovery, bound and unbound, and the installation phase
 * (preparing-for-installation, installing, error/cancelled...).
 *
 * Pure and thread-safe as long as the caller's random source is. */
#ifndef AH_ASSISTED_STEPS_H
#define AH_ASSISTED_STEPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

struct steps_ctx {
	/* Random source for step ids: returns 32 random bits.  NULL → the base
	 * layer's util_random_bytes(). */
	uint32_t (*random32)(void *opaque);
	void *opaque;
	const char *service_agent_image; /* NULL → never ask for upgrade-agent */
	const json_t *cluster;           /* upstream cluster model; NULL when unbound */
	const json_t *cluster_hosts;     /* all hosts of the cluster (connectivity-check peers) */
	const char *ntp_sources;         /* additional NTP sources "a,b" ("" when none) */
	const char *release_image_host;  /* day-1 domain-resolution extra name, NULL/"" none */
	int64_t inventory_disk_min_size_gb; /* 0 → no --disk-min-size argument */

	/* Installation phase (§7.5 install, installation-disk-speed-check,
	 * container-image-availability, logs-gather).  The cluster facts come
	 * from cluster: id, kind, openshift_version, cpu_architecture,
	 * control_plane_count, high_availability_mode, name, base_dns_domain,
	 * http_proxy, https_proxy, no_proxy, machine_networks,
	 * static_network_configured, ocp_release_image. */
	const char *infra_env_id;        /* NULL → host["infra_env_id"] */
	const char *installer_image;     /* INSTALLER_IMAGE (assisted-installer) */
	const char *controller_image;    /* CONTROLLER_IMAGE (assisted-installer-controller) */
	const char *mco_image;           /* machine-config-operator image of the release; NULL → none */
	const char *coreos_image;        /* rhel-coreos image of the release; NULL → none */
	const char *release_image;       /* NULL → cluster["ocp_release_image"] */
	/* must-gather images by name ({"ocp": img, "cnv": img...}); a map with
	 * only "ocp" is sent as that image string, else as its JSON text. */
	const json_t *must_gather_images;
	const char *service_ips;         /* SERVICE_IPS "a,b" → ["a","b"]; NULL/"" → omitted */
	bool check_cvo;                  /* CHECK_CLUSTER_VERSION */
	bool enable_skip_mco_reboot;     /* ENABLE_SKIP_MCO_REBOOT (then also needs OCP ≥ 4.15, not s390x) */
	bool notify_num_reboots;         /* true unless kube-api mode (upstream: !kubeApiEnabled) */
	bool static_network;             /* the host's InfraEnv has static network config */
	int disk_check_timeout_s;        /* 0 → 480 (DISK_CHECK_TIMEOUT 8m) */
	int image_availability_timeout_s; /* 0 → 960 (IMAGE_AVAILABILITY_TIMEOUT 16m) */
};

/* The next-step response for host (its "status" and "id" are read):
 * {"next_instruction_seconds", "post_step_action" ("continue"|"exit"),
 *  "instructions":[{"step_type","step_id","args":[...]}]}.
 * Step ids are "<step_type>-<8 lower-case hex>".  Unlisted statuses get no
 * steps, 60 s, "continue".  Installation phase (§7.4):
 *   preparing-for-installation: installation-disk-speed-check (unless the
 *     boot disk was measured, the boot device is persistent, or the
 *     installer args save partitions) and container-image-availability
 *     (images not yet successfully pulled), 60 s;
 *   installing: install (day-1 and day-2), 60 s;
 *   installing-in-progress: none, 60 s;
 *   error, cancelled: logs-gather while logs were never collected, then
 *     stop-installation, 120 s;
 *   preparing-successful, installing-pending-user-action, installed,
 *   added-to-existing-cluster: default (none, 60 s).
 * The install step needs ctx->cluster; without it (or when
 * host_install_cmd() refuses the host) no install step is emitted.
 * Upstream records installer_version := the installer image when it hands
 * out the install step: the caller does that (this function does not
 * modify host).  tang-connectivity-check, free-network-addresses and
 * dhcp-lease-allocate are not modelled (they emit nothing unless
 * configured upstream).  Returns a new reference (NULL only on
 * allocation failure). */
json_t *host_next_steps(const json_t *host, bool day2, const struct steps_ctx *ctx);

/* The `install` step's argument: the InstallCmdRequest JSON object
 * (keys sorted as upstream's model): boot_device, check_cvo, cluster_id,
 * control_plane_count, controller_image, coreos_image, disks_to_format,
 * enable_skip_mco_reboot, host_id, infra_env_id, installer_args,
 * installer_image, mco_image, must_gather_image, notify_num_reboots,
 * openshift_version, proxy, role, service_ips,
 * skip_installation_disk_cleanup; empty optional fields omitted as Go's
 * omitempty does.  role is "bootstrap" when host.bootstrap, else the
 * effective role.  installer_args = the host's installer_args (JSON array
 * text, from the Agent spec) + the ip=<nic>:dhcp[6] kernel args of NICs in
 * the primary machine network (unless static network or a user ip= arg) +
 * multipath/iSCSI kargs + "--copy-network" with static networking, as a
 * JSON array text.  A cluster without machine networks gets no DHCP
 * kargs (upstream derives the network from the hosts for user-managed
 * networking; the s390x kargs are not modelled).  Day-2 (cluster kind
 * AddHostsCluster) omits mco/must-gather/openshift_version.  Returns a new object, or NULL with
 * err (400) for unparsable host installer_args or missing host id /
 * cluster id / boot device. */
json_t *host_install_cmd(const json_t *host, const struct steps_ctx *ctx, ah_err *err);

/* The api-vip-connectivity-check argument (§7.5), upstream's
 * APIVipConnectivityRequest with its keys in upstream's order:
 * ca_certificate (when ca_cert is non-empty), ignition_endpoint_token and
 * request_headers [{"key":"Authorization","value":"Bearer <token>"}] (when
 * token, the host's ignition endpoint token that the Agent's
 * ignitionEndpointTokenReference names, is non-empty), then url.  This is
 * where upstream hands the token to the host: it proves the host to the
 * spoke's ignition endpoint (the install request carries no token).
 * New object, NULL on allocation failure. */
json_t *host_api_vip_check_request(const char *token, const char *url, const char *ca_cert);

/* Apply an agent step reply {step_type, step_id, exit_code, output, error}
 * to host (modified in place; output is the JSON text the agent sent):
 * - exit_code 256: MediaDisconnect (host_media_disconnect(): PRE/binding
 *   → disconnected, unbound states/unbinding → disconnected-unbound,
 *   PFI/PF/PS/installing/IIP → error); nothing else applied.
 * - other non-zero exit codes are ignored except installation-disk-speed-check
 *   (recorded as a failed measurement); exit 0 sets media_status "connected".
 * - inventory: validated (inventory.h), disk ids + eligibility filled,
 *   installation disk chosen (validations.h), stored as an object in
 *   host["inventory"].  Disk sizes are judged for the host's role in a
 *   multi-node cluster when cluster_id is set, else for an unbound host
 *   (arbiter, 50 GB); use host_apply_step_reply_cluster() to pass the
 *   cluster facts (SNO, OCP version).
 * - ntp-synchronizer → ntp_sources (array), connectivity-check →
 *   connectivity, domain-resolution → domain_resolutions,
 *   installation-disk-speed-check → disks_info[path].disk_speed,
 *   container-image-availability → images_status (object keyed by image
 *   name, merged); empty output of the last two is ignored.
 * - install: exit ≠ 0 → HostInstallationFailed (installing,
 *   installing-in-progress → error, status_info "installation command
 *   failed" or the reply's error text), except exit 125 with an
 *   "already in use" error (a second install of the same host), ignored.
 * - verify-vips: the output must be a list of objects (nothing stored on
 *   the host; host_apply_verify_vips_reply() takes it to the cluster).
 * - stop-installation, logs-gather: accepted, nothing stored.
 * - other step types are accepted and ignored.
 * Returns 0, or -EINVAL with err 400 for a malformed reply or output. */
int host_apply_step_reply(json_t *host, const json_t *reply, ah_err *err);
/* Same, with the cluster facts (NULL = derive from cluster_id as above). */
int host_apply_step_reply_cluster(json_t *host, const json_t *reply, const json_t *cluster, ah_err *err);
/* A verify-vips reply (§7.5) seen from the cluster: the verdicts
 * [{vip, vip_type, verification}] of its output go to the cluster model's
 * api_vips / ingress_vips[].verification (cluster_apply_vip_verifications()),
 * which the api-vips-valid / ingress-vips-valid validations read.  Other
 * step types, a non-zero exit code or an empty output change nothing.
 * Returns the number of VIPs whose verification changed, or -EINVAL with
 * err 400 when the output is not a list of objects (cluster unchanged). */
int host_apply_verify_vips_reply(json_t *cluster, const json_t *reply, ah_err *err);

/* Same, with the time (unix seconds) used for status_updated_at when the
 * reply moves the status (media disconnect, install failure); the two
 * functions above pass 0, which leaves status_updated_at alone. */
int host_apply_step_reply_now(json_t *host, const json_t *reply, const json_t *cluster, int64_t now, ah_err *err);

#endif
