/* registry.h - the kinds the API serves: CRD-defined kinds loaded from the
 * project's CustomResourceDefinition manifests (config/crd/, embedded into
 * the binary at build time) plus the built-in kinds (Namespace, Secret,
 * ConfigMap, Event, ResourceQuota, LimitRange, Service, ServiceAccount;
 * coordination.k8s.io Lease; events.k8s.io Event; the RBAC kinds and the
 * review kinds of authorization.k8s.io and authentication.k8s.io) and
 * CustomResourceDefinition itself.
 *
 * A registry is built once at start-up and is read-only afterwards, so it may
 * be shared by every thread without locking. */
#ifndef AH_KUBE_REGISTRY_H
#define AH_KUBE_REGISTRY_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "kube/patch.h"
#include "kube/table.h"

struct kube_kind {
	char *group;        /* "" for the core group */
	char *version;
	char *kind;
	char *list_kind;
	char *plural;
	char *singular;
	json_t *short_names; /* array of strings */
	json_t *categories;  /* array of strings */
	bool namespaced;
	bool has_status;     /* status subresource */
	bool builtin;        /* core kind: strategic merge patch, no schema pruning */
	bool review;         /* create-only review kind (SelfSubjectAccessReview, ...):
				answered from the request, never stored */
	char *api_version;   /* "group/version" or "v1" */
	char *store_key;     /* "plural.group" or "plural": the store's resource name */
	json_t *schema;      /* openAPIV3Schema (borrowed from crd) */
	json_t *crd;         /* the CRD object as served (CRD-defined kinds), or NULL */
	table_columns *columns;
	json_t *printer_columns;
	const struct smp_list_meta *smp_lists;
	/* The scale subresource (autoscaling/v1 Scale), from the CRD version's
	 * subresources.scale: simple JSON paths (".spec.replicas"); NULL when
	 * the kind has none (label_selector may be NULL alone). */
	char *scale_spec_replicas;
	char *scale_status_replicas;
	char *scale_label_selector;
	/* Kinds served from another kind's storage (events.k8s.io Event from
	 * the core Event; a CRD's served versions other than its storage
	 * version, from the storage version's kind): the stored kind, whose
	 * objects are converted on the way in and out (kube/convert.h); NULL
	 * for every other kind.  Such a kind shares its store_key with the
	 * stored kind; kube_registry_by_store_key() returns the stored kind. */
	const struct kube_kind *stored_as;
};

struct kube_registry {
	struct kube_kind **kinds;
	size_t n;
};

/* Build the registry from the embedded CRD manifests plus the built-in kinds.
 * Caller owns *ret; free with kube_registry_free(). */
int kube_registry_new(struct kube_registry **ret, ah_err *err);
/* Add the kinds of every CRD in a YAML/JSON text (multi-document allowed). */
int kube_registry_add_crd_text(struct kube_registry *reg, const char *text, size_t len,
			       const char *origin, ah_err *err);
void kube_registry_free(struct kube_registry *reg);

/* Look-ups; NULL when absent.  group "" is the core group. */
const struct kube_kind *kube_registry_by_resource(const struct kube_registry *reg,
						  const char *group, const char *version,
						  const char *plural);
const struct kube_kind *kube_registry_by_kind(const struct kube_registry *reg,
					      const char *api_version, const char *kind);
const struct kube_kind *kube_registry_by_store_key(const struct kube_registry *reg,
						   const char *store_key);

/* The embedded manifests (generated at build time from the YAML files in config/crd). */
struct embedded_file {
	const char *name;
	const char *data;
	unsigned long len;
};
extern const struct embedded_file ah_embedded_crds[];
extern const unsigned long ah_embedded_crds_count;

#endif
