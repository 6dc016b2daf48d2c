/* api.h - Kubernetes object semantics over the store: what create, update,
 * patch and delete mean for metadata (uid, generation, resourceVersion,
 * finalizers, deletionTimestamp, ownerReferences), the status subresource,
 * schema pruning/defaulting/validation, per-kind admission rules, dry run,
 * namespace lifecycle and background garbage collection.
 *
 * Objects cross this interface as jansson values.  Functions that return an
 * object give the caller a new reference in *ret.  Every function may be
 * called from any thread.  Errors: negative errno with err filled (HTTP status,
 * Status.reason, message in the API server's words); for 422 Invalid the
 * field causes ({reason, message, field}) are appended to `causes` when it is
 * non-NULL. */
#ifndef AH_KUBE_API_H
#define AH_KUBE_API_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"
#include "kube/registry.h"
#include "store/store.h"

struct kube_api;

enum kube_op { KUBE_CREATE = 1, KUBE_UPDATE, KUBE_DELETE };
enum kube_field_validation { KUBE_FV_IGNORE, KUBE_FV_WARN, KUBE_FV_STRICT };

struct kube_opts {
	bool dry_run;                           /* dryRun=All: validate and admit, store nothing */
	bool status;                            /* the status subresource */
	enum kube_field_validation field_validation;
	json_t *warnings;                       /* array; "unknown field" warnings land here */
	json_t *causes;                         /* array; 422 causes land here */
	const char *propagation;                /* delete: Background (default), Orphan, Foreground */
	/* Field ownership (metadata.managedFields): the manager a write is
	 * recorded under (NULL: "agenthub", the hub's own controllers), and
	 * for server-side apply whether conflicts are overridden. */
	const char *field_manager;
	bool force;
	bool created;                           /* out: an apply created the object */
	json_t *managed;                        /* internal: managedFields already computed */
	const char *precondition_uid;           /* delete preconditions */
	const char *precondition_rv;
	/* create/update/patch: with want_text, a write that stored the object
	 * also leaves its stored JSON text here (the caller frees it), so a
	 * reply need not serialise the object again; NULL when nothing was
	 * written (dry run, no-op update) or the text was not at hand. */
	bool want_text;
	char *text;
	size_t text_len;
};

/* An admission rule for one kind.  old is NULL on create; obj is the object
 * about to be stored, which the rule may change (mutating admission).  Return
 * 0 to allow, or a negative errno with err set (e.g. 400 BadRequest). */
typedef int (*kube_admit_fn)(void *userdata, const struct kube_kind *kind, enum kube_op op,
			     const json_t *old, json_t *obj, ah_err *err);

int kube_api_new(store *s, const struct kube_registry *reg, struct kube_api **ret, ah_err *err);
/* Stops the garbage collector; does not close the store or free the registry. */
void kube_api_free(struct kube_api *api);

/* Register before serving; not thread-safe against concurrent requests. */
int kube_api_add_admission(struct kube_api *api, const char *store_key, kube_admit_fn fn,
			   void *userdata);

store *kube_api_store(struct kube_api *api);
const struct kube_registry *kube_api_registry(struct kube_api *api);

int kube_get(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
	     json_t **ret, ah_err *err);
/* The stored JSON text of one object, as kube_get() would return it (the
 * caller frees *ret_text). */
int kube_get_text(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		  char **ret_text, size_t *ret_len, ah_err *err);
int kube_create(struct kube_api *api, const struct kube_kind *k, const char *ns, json_t *body,
		struct kube_opts *o, json_t **ret, ah_err *err);
int kube_update(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		json_t *body, struct kube_opts *o, json_t **ret, ah_err *err);
/* patch_type: "application/merge-patch+json", "application/json-patch+json",
 * "application/strategic-merge-patch+json" or "application/apply-patch+yaml"
 * (server-side apply: patch is the applier's configuration, o->field_manager
 * is required, the object is created when absent and o->created says so;
 * a conflict is 409 with its causes in o->causes). */
int kube_patch(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
	       const char *patch_type, const json_t *patch, struct kube_opts *o, json_t **ret,
	       ah_err *err);
/* *ret is the object as it is after the call (with deletionTimestamp while
 * finalizers hold it), or the last state of a removed object. */
int kube_delete(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		struct kube_opts *o, json_t **ret, ah_err *err);

/* Fill the standard "not found" / "already exists" / "conflict" errors. */
int kube_err_not_found(ah_err *err, const struct kube_kind *k, const char *name);

/* The qualified resource name used in messages: "agents.agent-install.openshift.io"
 * or "secrets". */
const char *kube_kind_resource_name(const struct kube_kind *k);

#endif
