/* conditions.h - the Agent's status.conditions computed from the backend
 * host status (kubeapi spec §2.3), and the conditionsv1 timestamp rule.
 * Pure and thread-safe; returned arrays are new references the caller owns. */
#ifndef AH_ASSISTED_CONDITIONS_H
#define AH_ASSISTED_CONDITIONS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"

/* The six Agent conditions, in this order: SpecSynced, Connected,
 * RequirementsMet, Validated, Installed, Bound.  Each element is
 * {type, status ("True"|"False"|"Unknown"), reason, message,
 * lastHeartbeatTime: null, lastTransitionTime: null}; times are filled by
 * conditions_merge_times().
 * - status NULL means "no backend host": Connected, RequirementsMet,
 *   Validated, Installed, Bound are Unknown/NotAvailable.
 * - validations_info: the host's category → [{id,status,message}] (object
 *   or its JSON text); failing (failure/error) and pending lists exclude
 *   success, success-suppress-output and disabled entries.
 * - spec_err: the outcome of the spec sync (agent_spec_apply()).  NULL →
 *   SpecSynced True SyncOK; a user-class error (status 4xx, as upstream
 *   counts a backend 4xx) → False InputError; any other → False
 *   BackendError; the message carries spec_err->message. */
json_t *agent_conditions(const char *status, const char *status_info, const json_t *validations_info,
			 bool approved, const ah_err *spec_err);

/* For each condition in new_conds: when old_conds holds the same type with
 * the same status, copy its lastTransitionTime; otherwise set now_rfc3339.
 * lastHeartbeatTime is always null.  new_conds is modified in place. */
void conditions_merge_times(json_t *new_conds, const json_t *old_conds, const char *now_rfc3339);

/* ---- the Agent spec sync (kubeapi §4.4 step 8, §2 SpecSynced) ----
 *
 * The host model (validations.h) keeps what was last applied from the
 * Agent's spec: role ("auto-assign" when never set), requested_hostname,
 * installation_disk_id / installation_disk_path, installer_args (compact
 * JSON array text) and ignition_config_overrides (JSON text). */

/* Whether the spec's host fields may be applied in host status: PRE, the
 * four -unbound states and binding.  In other states upstream drops spec
 * edits silently (SpecSynced stays True); approval is not affected. */
bool agent_spec_applicable(const char *status);

struct agent_spec_ctx {
	const char *host_id;       /* for messages: the Agent name */
	const char *infra_env_id;  /* for messages */
	/* Check a non-empty ignitionConfigOverrides text: 0, or a negative
	 * errno with err set (status 400).  NULL: any JSON object passes. */
	int (*validate_ignition)(const char *text, ah_err *err);
	/* Read the value of key AGENT_IGNITION_TOKEN_KEY of the Secret ns/name
	 * (spec.ignitionEndpointTokenReference): 0 with *ret_token (malloc'd,
	 * the caller frees it); -ENOENT when the Secret does not exist;
	 * -ENODATA when it has no such key; any other negative errno with
	 * err set (its message is kept in the SpecSynced text, so it must
	 * not carry the token).  NULL: the reference is ignored and an
	 * applied token is left as it is. */
	int (*get_ignition_token)(void *opaque, const char *ns, const char *name, char **ret_token,
				  ah_err *err);
	void *opaque;
};

/* The key of the ignition token Secret (upstream IgnitionTokenKeyInSecret). */
#define AGENT_IGNITION_TOKEN_KEY "ignition-token"

/* Apply spec (the Agent's spec object) to host, in upstream order:
 * installerArgs, ignitionConfigOverrides, then the one host update of role,
 * hostname, installation_disk_id and the ignition endpoint token.  Empty
 * spec values leave the applied ones (upstream sends only non-empty
 * role/hostname/disk); an empty installerArgs or ignitionConfigOverrides
 * removes the applied one.
 * All or nothing: on the first bad value returns -EINVAL with err set
 * (status 400, the upstream message) and leaves host untouched.  In states
 * where agent_spec_applicable() is false, nothing is checked or applied,
 * except that the token Secret is still read, as upstream reads it before
 * it decides whether to send the host update.
 * The token: with spec.ignitionEndpointTokenReference {namespace, name},
 * the Secret's AGENT_IGNITION_TOKEN_KEY value becomes
 * host["ignition_endpoint_token"]; without it an applied token is removed.
 * A missing Secret or key fails the sync with -ENOENT / -ENODATA and err
 * status 500 (upstream counts it a backend error, so SpecSynced shows
 * BackendError): "Failed to get user-data secret: failed to get secret
 * <ns>/<name> from API: secrets \"<name>\" not found", or "secret <name>
 * did not contain key value".  The token itself never enters err.
 * The installation disk needs the host's inventory: without one it is left
 * for a later pass (no error).  *ret_changed (may be NULL) tells whether
 * host changed.  Pure; -ENOMEM on allocation failure. */
int agent_spec_apply(json_t *host, const json_t *spec, const struct agent_spec_ctx *ctx, bool *ret_changed,
		     ah_err *err);

/* The upstream checks agent_spec_apply() runs, for other callers: 0 or
 * -EINVAL with err (status 400) set to the upstream message. */
int agent_validate_hostname(const char *hostname, ah_err *err);
int agent_validate_installer_args(const json_t *args, ah_err *err);

#endif
