/* conditions.h - the Agent's status.conditions computed from the backend
 * host status (kubeapi spec §2.3), and the conditionsv1 timestamp rule.
 * Pure and thread-safe; returned arrays are new references the caller owns. */
#ifndef AH_ASSISTED_CONDITIONS_H
#define AH_ASSISTED_CONDITIONS_H

#include <jansson.h>
#include <stdbool.h>

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
 * - spec_synced false → SpecSynced False with reason InputError when
 *   spec_sync_error starts with "input:" (the prefix is dropped), else
 *   BackendError. */
json_t *agent_conditions(const char *status, const char *status_info, const json_t *validations_info,
			 bool approved, bool spec_synced, const char *spec_sync_error);

/* For each condition in new_conds: when old_conds holds the same type with
 * the same status, copy its lastTransitionTime; otherwise set now_rfc3339.
 * lastHeartbeatTime is always null.  new_conds is modified in place. */
void conditions_merge_times(json_t *new_conds, const json_t *old_conds, const char *now_rfc3339);

#endif
