/* steps.h - what the agent is told to run next (backend spec §7.4) and how
 * its step replies update the host facts (§7.5), for the pre-installation
 * states, bound and unbound.
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
};

/* The next-step response for host (its "status" and "id" are read):
 * {"next_instruction_seconds", "post_step_action" ("continue"|"exit"),
 *  "instructions":[{"step_type","step_id","args":[...]}]}.
 * Step ids are "<step_type>-<8 lower-case hex>".  Unlisted statuses get no
 * steps, 60 s, "continue".  Returns a new reference (NULL only on
 * allocation failure). */
json_t *host_next_steps(const json_t *host, bool day2, const struct steps_ctx *ctx);

/* Apply an agent step reply {step_type, step_id, exit_code, output, error}
 * to host (modified in place; output is the JSON text the agent sent):
 * - exit_code 256: MediaDisconnect: media_status := "disconnected" and
 *   PRE/binding → disconnected, unbound states/unbinding →
 *   disconnected-unbound with the media status_info; nothing else applied.
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
 * - other step types are accepted and ignored.
 * Returns 0, or -EINVAL with err 400 for a malformed reply or output. */
int host_apply_step_reply(json_t *host, const json_t *reply, ah_err *err);
/* Same, with the cluster facts (NULL = derive from cluster_id as above). */
int host_apply_step_reply_cluster(json_t *host, const json_t *reply, const json_t *cluster, ah_err *err);

#endif
