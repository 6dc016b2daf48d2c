/* fieldmgr.h - field ownership (metadata.managedFields) and server-side
 * apply, as kube-apiserver's field manager (structured-merge-diff) does them.
 *
 * A field set is a JSON tree in the FieldsV1 shape: keys "f:<field>",
 * "k:<json of the list-map keys>" (an item of a list-type=map list),
 * "v:<json value>" (an item of a list-type=set list) and "i:<index>"; a node
 * that is itself a member carries ".".  Internally every member carries "."
 * (a leaf is {".":{}}); on the wire a member without children is written {},
 * as kube-apiserver writes it (fm_set_to_v1() / fm_set_from_v1()).
 *
 * List and map semantics come from the kind's OpenAPI v3 schema
 * (x-kubernetes-list-type atomic/set/map with x-kubernetes-list-map-keys,
 * x-kubernetes-map-type atomic); a list without a list type is atomic, an
 * object granular.  metadata has kube's fixed semantics (labels and
 * annotations granular, finalizers a set, ownerReferences a map by uid of
 * atomic items) and
 * the fields the server sets (name, namespace, uid, resourceVersion,
 * generation, creationTimestamp, deletionTimestamp,
 * deletionGracePeriodSeconds, selfLink, managedFields) are owned by no one;
 * nor are apiVersion and kind.
 *
 * Pure functions over jansson values: no I/O, no shared state, thread-safe.
 * Returned trees are new references the caller owns. */
#ifndef AH_KUBE_FIELDMGR_H
#define AH_KUBE_FIELDMGR_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"

/* Who writes: the managedFields entry a write is recorded under. */
struct fm_who {
	const char *manager;     /* fieldManager, e.g. "kubectl-client-side-apply" */
	const char *api_version; /* "agent-install.openshift.io/v1beta1" */
	const char *subresource; /* "" or NULL for the main resource, "status" */
	const char *time;        /* RFC 3339, e.g. "2024-05-01T10:00:00Z" */
	const json_t *schema;    /* the kind's openAPIV3Schema, NULL for built-ins */
	bool status_separate;    /* the kind has a status subresource: the main
				    resource owns no status fields and the status
				    subresource only status fields */
};

/* The set of fields an object sets (kube's ToFieldSet: list items are
 * members, maps are not, leaves are), restricted as who says
 * (main resource or status). */
json_t *fm_fields_of(const struct fm_who *who, const json_t *obj);

/* Set algebra on field sets in internal form. */
json_t *fm_set_union(const json_t *a, const json_t *b);
json_t *fm_set_difference(const json_t *a, const json_t *b);
json_t *fm_set_intersection(const json_t *a, const json_t *b);
bool fm_set_empty(const json_t *s);
/* FieldsV1 (wire) <-> internal form. */
json_t *fm_set_from_v1(const json_t *v1);
json_t *fm_set_to_v1(const json_t *s);
/* A member path as kube-apiserver prints it: ".spec.approved",
 * ".spec.items[name=\"a\"].x", ".metadata.finalizers[=\"f\"]", "[3]".
 * keys: the path elements ("f:spec", ...). */
char *fm_path_string(const json_t *keys);

/* Record an Update by who: the fields changed between old (NULL on create)
 * and obj become who's, and no one else's; removed fields are no one's.
 * Sets obj's metadata.managedFields from old's (old's entries unchanged when
 * nothing changed, so a no-op write stays a no-op).  0 or -ENOMEM. */
int fm_record_update(const struct fm_who *who, const json_t *old, json_t *obj);

/* Server-side apply of config (the applier's whole intent) by who onto live
 * (NULL: the object does not exist).  On success *ret is the new object
 * with its managedFields set: config merged into live by the schema's list
 * semantics, fields the applier owned before and no longer sets removed
 * unless someone else owns them, the applier's Apply entry holding exactly
 * the fields of config.  Fields that config sets to a value other than
 * live's and that another manager owns are conflicts: without force a 409
 * Conflict (err, causes appended to `causes` when non-NULL) in
 * kube-apiserver's words; with force the applier takes them over. */
int fm_apply(const struct fm_who *who, const json_t *live, const json_t *config, bool force,
	     json_t *causes, json_t **ret, ah_err *err);

#endif
