/* patch.h - the three Kubernetes patch formats, as pure functions over jansson
 * values.  None modifies its inputs; each returns a new document the caller
 * owns.  Thread-safe (no shared state).
 *
 * Errors: -EINVAL with err->status 400/422 and a message like the real API
 * server's (e.g. "the server rejected our request due to an error in our
 * request" is NOT used; say what is wrong: "jsonpatch test operation does not
 * apply: ..."), -ENOMEM. */
#ifndef AH_KUBE_PATCH_H
#define AH_KUBE_PATCH_H

#include <jansson.h>

#include "base/error.h"

/* RFC 7386 JSON merge patch (application/merge-patch+json).  *ret is a new
 * tree that shares no part with doc or patch (callers may change it). */
int patch_merge(const json_t *doc, const json_t *patch, json_t **ret, ah_err *err);

/* RFC 6902 JSON patch (application/json-patch+json): add, remove, replace,
 * move, copy, test; JSON pointers per RFC 6901 (~0, ~1, "-" for append).
 * All-or-nothing: any failing op fails the whole patch. */
int patch_json(const json_t *doc, const json_t *ops, json_t **ret, ah_err *err);

/* How a list at a given path merges under a strategic merge patch. */
struct smp_list_meta {
	const char *path;      /* dotted path from the root, "[]" for list items, e.g.
				  "metadata.ownerReferences" or "spec.containers[].ports" */
	const char *merge_key; /* list of objects merged by this key; NULL for a
				  list of primitives merged as a set */
};

/* Strategic merge patch (application/strategic-merge-patch+json), as kubectl
 * sends for `annotate`, `label` and `apply` on built-in kinds.  Objects merge
 * recursively like a merge patch; a list whose path is in `lists` (terminated
 * by an entry with path NULL) merges by key (objects) or as a set
 * (primitives, patchStrategy=merge); every other list is replaced whole.
 * Directives honoured: "$patch": "replace" | "delete" (on maps and on list
 * items), "$retainKeys", "$deleteFromPrimitiveList/<field>",
 * "$setElementOrder/<field>" (used for ordering, then dropped).
 * The metadata lists of every kind (ownerReferences by uid, finalizers as a
 * set) are always included, whatever `lists` says. */
int patch_strategic(const json_t *doc, const json_t *patch, const struct smp_list_meta *lists,
		    json_t **ret, ah_err *err);

#endif
