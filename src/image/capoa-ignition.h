/* capoa-ignition.h - the installed-node Ignition of the CAPI OpenShift
 * Assisted bootstrap provider (spec bmac-capi.md §C.6): systemd units and
 * scripts that read the config drive's metadata, name the node, add kubelet
 * labels and a provider ID, and run the bootstrap commands of an
 * OpenshiftAssistedConfig.  Pure: JSON text in, JSON text out.
 *
 * Two outputs:
 *  - capoa_ignition_agent_override(): the Agent's ignitionConfigOverrides
 *    (§C.5): every C.6 piece the options call for, Ignition-v3.1-merged with
 *    the config's ignition-override annotation;
 *  - capoa_ignition_bootstrap_data(): the bootstrap data Secret's value
 *    (§C.4 step 13): the InfraEnv's discovery ignition with the
 *    configdrive-metadata and set-hostname pieces appended when a node name
 *    is set, unchanged otherwise.
 *
 * Variable references ("$VAR" / "${VAR}") in the node name, label values and
 * provider ID must name a variable matching ^[A-Za-z_][A-Za-z0-9_]*$; they
 * are read from /etc/metadata_env on the node, never expanded by a shell. */
#ifndef AH_IMAGE_CAPOA_IGNITION_H
#define AH_IMAGE_CAPOA_IGNITION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

#define CAPOA_DEFAULT_SENTINEL_DIR "/var/lib/capoa"
#define CAPOA_DEFAULT_KUBECONFIG "/var/lib/kubelet/kubeconfig"

/* From an OpenshiftAssistedConfig spec (borrowed; NULL = unset). */
struct capoa_node_opts {
	const char *node_name;        /* nodeRegistration.name */
	const json_t *kubelet_labels; /* nodeRegistration.kubeletExtraLabels: ["k=v", ...] */
	const char *provider_id;      /* nodeRegistration.providerID */
	const json_t *pre_commands;   /* preBootstrapCommands: [string] */
	const json_t *post_commands;  /* postBootstrapCommands: [string] */
	const char *sentinel_dir;     /* bootstrapCommandSentinelDir */
	const char *kubeconfig_path;  /* postBootstrapKubeconfigPath */
};

/* Fill o from an OpenshiftAssistedConfig's spec (borrowed references). */
void capoa_node_opts_from_spec(const json_t *spec, struct capoa_node_opts *o);

/* Whether name is a valid variable name (^[A-Za-z_][A-Za-z0-9_]*$). */
bool capoa_var_name_valid(const char *name);

/* The Agent ignitionConfigOverrides text (compact JSON, malloc'd in *ret).
 * override_annotation: the ignition-override annotation's text (NULL or
 * "" = none; not valid JSON = ignored, as upstream).  -EINVAL with err
 * (status 400) naming the field for a bad option or an annotation that is
 * JSON but not an Ignition object; -ENOMEM. */
int capoa_ignition_agent_override(const struct capoa_node_opts *o, const char *override_annotation, char **ret,
				  ah_err *err);

/* The bootstrap data: discovery (the discovery ignition text, len bytes)
 * with configdrive-metadata + set-hostname appended when o->node_name is set.
 * *ret malloc'd (NUL-terminated), *ret_len its length.  -EINVAL with err
 * when discovery is not a JSON object or the node name is bad; -ENOMEM. */
int capoa_ignition_bootstrap_data(const char *discovery, size_t len, const struct capoa_node_opts *o, char **ret,
				  size_t *ret_len, ah_err *err);

/* The discovery ignition URL built from an InfraEnv's status.debugInfo.
 * eventsURL (§C.4 step 11): base (NULL = the eventsURL's scheme://host[:port])
 * + /api/assisted-install/v2/infra-envs/<infra_env_id>/downloads/files?
 * api_key=<api_key>&file_name=discovery.ign, both values taken from the
 * eventsURL's query.  malloc'd, or NULL with why (no secret in it). */
char *capoa_ignition_url(const char *events_url, const char *base, char *why, size_t why_size);

#endif
