/* capoa.h - pure helpers of the CAPOA control-plane provider (bmac-capi.md
 * §C.7 steps 3, 8, 9 and §C.8 "Capabilities override"): the
 * distributionVersion as a version, the release image it names, the
 * Kubernetes version of an OpenShift minor, and the install-config
 * override carrying the capabilities.  Pure and thread-safe. */
#ifndef AH_ASSISTED_CAPOA_H
#define AH_ASSISTED_CAPOA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct capoa_version {
	long major, minor, patch;
	char pre[64];   /* the prerelease after '-' ("" = none) */
	char build[64]; /* the build metadata after '+' ("" = none) */
};

/* Parse a semantic version, tolerant as upstream's ParseTolerant is: a
 * leading "v", missing minor/patch ("4.19" = 4.19.0).  0, or -EINVAL. */
int capoa_parse_version(const char *s, struct capoa_version *ret);

/* §C.7 step 3: false only for a parseable version below 4.14.0 (a
 * version that does not parse is not refused here). */
bool capoa_version_supported(const char *s);

/* An OKD release: the prerelease starts with "okd-scos". */
bool capoa_is_okd(const struct capoa_version *v);

/* §C.7 step 8, a new string (NULL on ENOMEM): override (the annotation
 * cluster.x-k8s.io/release-image-repository-override, NULL/"" = none) →
 * "<override>:<ver>-<arch>"; OKD → "quay.io/okd/scos-release:<ver>"; else
 * "quay.io/openshift-release-dev/ocp-release:<ver>-<arch>". */
char *capoa_release_image(const char *version, const char *arch, const char *override);

/* The Kubernetes version of an OpenShift major.minor (a static string such
 * as "1.32": the release's Kubernetes minor, upstream's form without
 * the patch, which only the release image tells), from the table of
 * OpenShift 4.14 to 4.20, or NULL for a
 * minor the table does not hold. */
const char *capoa_kube_version(long major, long minor);

/* §C.8 "Capabilities override": the annotation
 * agent-install.openshift.io/install-config-overrides for capabilities
 * ({baselineCapability, additionalEnabledCapabilities[]}, may be NULL),
 * baremetal (platform BareMetal) and the user's annotation
 * controlplane.cluster.x-k8s.io/install-config-override (NULL/"" = none).
 * 0 with *ret a malloc'd JSON text, or NULL when there is nothing to set;
 * -EINVAL with why filled (a bad baseline, a user override that is not a
 * JSON object); -ENOMEM. */
int capoa_install_config_override(const json_t *capabilities, bool baremetal, const char *user,
				  char **ret, char *why, size_t why_size);

#endif
