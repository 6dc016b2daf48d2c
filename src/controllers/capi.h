/* capi.h - what the CAPI core controllers (capi-cluster.c, capi-machine.c,
 * capi-machineset.c) share: the cluster.x-k8s.io names, resolving a
 * contract reference ({apiGroup, kind, name}) to a kind through the
 * registry, conditions merged by type, owner references, labels and
 * finalizers written with a resourceVersion guard.
 *
 * The pure helpers (capi_cond_*, capi_owner_*, capi_random_suffix,
 * capi_template_hash, capi_ref_key) touch only their arguments and may be
 * called from any thread.  The others read and write through h->api and
 * may be called from any reconcile. */
#ifndef AH_CONTROLLERS_CAPI_H
#define AH_CONTROLLERS_CAPI_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "kube/registry.h"

struct hub;

#define CAPI_GROUP "cluster.x-k8s.io"
#define CAPI_API_VERSION CAPI_GROUP "/v1beta2"
#define CAPI_LABEL_CLUSTER_NAME CAPI_GROUP "/cluster-name"
#define CAPI_LABEL_SET_NAME CAPI_GROUP "/set-name"
#define CAPI_LABEL_DEPLOYMENT_NAME CAPI_GROUP "/deployment-name"
#define CAPI_LABEL_CONTROL_PLANE CAPI_GROUP "/control-plane"
#define CAPI_LABEL_TEMPLATE_HASH "machine-template-hash"
#define CAPI_ANN_PAUSED CAPI_GROUP "/paused"
#define CAPI_ANN_DELETE_MACHINE CAPI_GROUP "/delete-machine"
#define CAPI_ANN_CLONED_FROM_NAME CAPI_GROUP "/cloned-from-name"
#define CAPI_ANN_CLONED_FROM_GROUPKIND CAPI_GROUP "/cloned-from-groupkind"
#define CAPI_FINALIZER_CLUSTER "cluster.cluster.x-k8s.io"
#define CAPI_FINALIZER_MACHINE "machine.cluster.x-k8s.io"
#define CAPI_FINALIZER_MACHINESET CAPI_GROUP "/machineset"
#define CAPI_FINALIZER_MACHINEDEPLOYMENT CAPI_GROUP "/machinedeployment"

/* Cache indexes on the CAPI kinds (declared by the controller that owns the kind). */
#define CAPI_IDX_CLUSTER_NAME "capiClusterName" /* MD, MS, Machine -> "ns/spec.clusterName" */
#define CAPI_IDX_REFS "capiRefs"                /* Cluster, Machine -> "Kind/ns/name" of each ref */
#define CAPI_IDX_NAME "capiName"                /* Machine -> "ns/name" (does it exist?) */
#define CAPI_IDX_SET "capiSetName"              /* Machine -> "ns/<set-name label>" */
#define CAPI_IDX_DEPLOYMENT "capiDeploymentName" /* MS -> "ns/<deployment-name label>" */

/* --- pure helpers ----------------------------------------------------------- */

/* Set condition type in conds (an array, changed in place) to status,
 * reason, message (NULL: "", a metav1.Condition always has one) and observedGeneration (< 0: none): the
 * other types stay as they are (other controllers own them).
 * lastTransitionTime is kept when the status did not change, else now. */
void capi_cond_set(json_t *conds, const char *type, const char *status, const char *reason, const char *message,
		   long long generation, const char *now);
/* The same for a v1beta1 condition (status.deprecated.v1beta1.conditions):
 * True carries no reason; False carries reason and severity. */
void capi_v1b1_cond_set(json_t *conds, const char *type, bool ok, const char *reason, const char *severity,
			const char *message, const char *now);
/* The condition of type in conds (borrowed), or NULL. */
const json_t *capi_cond_get(const json_t *conds, const char *type);
/* Whether conds holds type with status "True". */
bool capi_cond_true(const json_t *conds, const char *type);

/* Whether reconciling obj is paused, as upstream decides: its Cluster
 * (may be NULL) has spec.paused true, or obj carries the annotation
 * cluster.x-k8s.io/paused.  When paused, msg holds the Paused condition's
 * message ("Cluster spec.paused is set to true, Machine has the
 * cluster.x-k8s.io/paused annotation"). */
bool capi_paused(const json_t *cluster, const json_t *obj, char *msg, size_t size);
/* Set the Paused condition of status st (True "Paused" with msg, or False
 * "NotPaused"). */
void capi_set_paused_cond(json_t *st, bool paused, const char *msg, long long generation, const char *now);
/* Write the Paused condition (True) of a paused obj: 0 nothing to write, 1
 * written, or a negative errno. */
int capi_write_paused(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *msg, ah_err *err);

/* An owner reference to obj (apiVersion, kind, name, uid), new. */
json_t *capi_owner_ref(const json_t *obj, bool controller);
/* Whether refs (an ownerReferences array) holds one with uid. */
bool capi_owner_has(const json_t *refs, const char *uid);
/* The name of the owner of kind (and group, NULL: any) in meta's
 * ownerReferences, controller only when controller is set; borrowed. */
const char *capi_owner_name(const json_t *meta, const char *group, const char *kind, bool controller);

/* Five characters from Kubernetes' name-suffix alphabet (no vowels, no
 * 0/1/3): buf holds at least 6 bytes.  0 or a negative errno. */
int capi_random_suffix(char *buf);
/* The machine-template-hash of a template (spec.template of a
 * MachineDeployment): a stable short label value that changes with any
 * change of the template.  buf holds at least 16 bytes. */
void capi_template_hash(const json_t *tmpl, char *buf, size_t size);
/* "Kind/ns/name" of a reference ({apiGroup, kind, name} or v1beta1
 * {apiVersion, kind, name}) in ns; false when it lacks kind or name. */
bool capi_ref_key(const json_t *ref, const char *ns, char *buf, size_t size);
/* The group of a reference: apiGroup, or the group part of apiVersion;
 * writes "" for the core group. */
void capi_ref_group(const json_t *ref, char *buf, size_t size);

/* --- through the API ---------------------------------------------------------- */

/* The kind a reference names (its group and kind; the served version that
 * is stored), or NULL when the registry has no such kind. */
const struct kube_kind *capi_ref_kind(const struct kube_registry *reg, const json_t *ref);
/* The kind of group and kind name, any version (storage first); NULL when absent. */
const struct kube_kind *capi_kind(const struct kube_registry *reg, const char *group, const char *kind);

/* Make obj (of kind k) carry owner (its ownerReference, controller as
 * given, added when no reference with owner's uid is there) and every
 * label of labels (may be NULL): one merge patch guarded by obj's
 * resourceVersion, nothing written when all is there.  0, 1 when it wrote,
 * or a negative errno (err filled). */
int capi_ensure_owner_labels(struct hub *h, const struct kube_kind *k, const json_t *obj, const json_t *owner,
			     bool controller, const json_t *labels, ah_err *err);
/* Add (want) or remove finalizer on obj: a guarded merge patch; 1 when it
 * wrote, 0 when there was nothing to do, or a negative errno. */
int capi_set_finalizer(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *finalizer,
		       bool want, ah_err *err);
bool capi_has_finalizer(const json_t *obj, const char *finalizer);
/* Write status (the whole status object) of obj through the status
 * subresource, guarded by obj's resourceVersion, when it differs from
 * obj's; fields of the old status absent from status are removed.  1 when
 * written, 0 when equal, or a negative errno. */
int capi_write_status(struct hub *h, const struct kube_kind *k, const json_t *obj, const json_t *status, ah_err *err);
/* Delete ns/name of kind k unless it is gone or already being deleted
 * (background propagation).  0 when it is gone, 1 while it still exists,
 * or a negative errno. */
int capi_delete(struct hub *h, const struct kube_kind *k, const char *ns, const char *name, ah_err *err);
/* A new array of ["ns","name"] pairs of resource with index value val. */
json_t *capi_list_by(struct hub *h, const char *resource, const char *index, const char *ns, const char *val);

static inline const char *capi_str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static inline const json_t *capi_path(const json_t *o, const char *a, const char *b)
{
	return json_object_get(json_object_get(o, a), b);
}

/* The registration functions, one per file (called from start_controllers()). */
int hub_capi_cluster_register(struct hub *h);
int hub_capi_machine_register(struct hub *h);
int hub_capi_machineset_register(struct hub *h);

#endif
