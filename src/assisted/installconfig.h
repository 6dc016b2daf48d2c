/* installconfig.h - install-config.yaml in the real OpenShift format, built
 * from the cluster model and its hosts (kubeapi spec §4.3 step 5,
 * internal/installcfg), with the
 * agent-install.openshift.io/install-config-overrides annotation decoded onto
 * it (unknown fields rejected, additionalTrustBundle PEM checked).
 *
 * Pure and thread-safe.  The pull secret is written into the document only;
 * it never appears in an error message. */
#ifndef AH_ASSISTED_INSTALLCONFIG_H
#define AH_ASSISTED_INSTALLCONFIG_H

#include <jansson.h>

#include "base/error.h"

#define INSTALLCONFIG_OVERRIDES_ANNOTATION "agent-install.openshift.io/install-config-overrides"

/* The install-config as a JSON object (the same tree the YAML is printed
 * from), built from the cluster model (cluster.h) and its hosts (roles by
 * effective role, bootstrap flag, inventory, installation_disk_path).
 * The cluster's additional_trust_bundle (the PEM bundles of its InfraEnvs,
 * set by the caller) is appended after an override's bundle.  Contents:
 * apiVersion v1, baseDomain, metadata.name, networking
 * {networkType, clusterNetwork[{cidr, hostPrefix}], serviceNetwork[],
 * machineNetwork[{cidr}]}, controlPlane / compute pools {name,
 * hyperthreading, replicas} (arbiter pool when arbiters exist), platform
 * (baremetal {apiVIPs, ingressVIPs, hosts...} or none {}), fips, pullSecret,
 * sshKey, proxy, additionalTrustBundle (cluster additional_trust_bundle),
 * bootstrapInPlace{installationDisk} for SNO, capabilities when set.
 * overrides_json_or_null: the annotation value, decoded onto the tree as
 * Go's encoding/json decodes into the existing struct: objects merge,
 * array elements decode onto the existing ones, null clears optional
 * fields, keys match exactly or case-insensitively, wrong types and fields
 * not in the install-config schema are rejected.  Returns NULL with err set
 * (reason "InputError", status 400, message "Failed to parse
 * 'agent-install.openshift.io/install-config-overrides' annotation:
 * <reason>") on a bad override, or with an error naming the missing field
 * when the cluster lacks what the document needs. */
json_t *installconfig_tree(const json_t *cluster, const json_t *hosts, const char *pull_secret,
			   const char *overrides_json_or_null, ah_err *err);

/* installconfig_tree() printed as YAML (block style, keys sorted as
 * sigs.k8s.io/yaml prints them).  Returns a malloc'd NUL-terminated string the caller frees,
 * or NULL with err set. */
char *installconfig_build(const json_t *cluster, const json_t *hosts, const char *pull_secret,
			  const char *overrides_json_or_null, ah_err *err);

/* Check an overrides annotation value alone (for SpecSynced before the
 * install): valid JSON object, only install-config fields, well-formed
 * additionalTrustBundle PEM.  0, or -EINVAL with err set as above. */
int installconfig_check_overrides(const char *overrides_json, ah_err *err);

/* Print any JSON value as a YAML block document (strings quoted when a plain
 * scalar would read back differently).  malloc'd string, or NULL on
 * allocation failure. */
char *installconfig_json_to_yaml(const json_t *v);

#endif
