/* records.h - the hub's private record kinds (agenthub.internal.*).
 *
 * What the hub keeps for itself beside the objects users see: a host's
 * applied spec fields and its state (check-in time, status-change time,
 * step facts), an InfraEnv's image state (token, digest), a cluster's
 * state and its events token.  Each kind is declared here with its owner
 * (the object whose life it follows) and a schema; records are JSON text
 * in the store, keyed as the table below says.
 *
 *  - Writes go through hub_record_put(), which validates the text against
 *    the kind's schema (kube/schema.h, as the API server does for other
 *    kinds) and refuses what does not match with -EINVAL (a bug of the
 *    hub: logged with the kind, key and the first cause; nothing is
 *    written).
 *  - Garbage collection: hub_records_register() registers one small
 *    controller per kind on the runtime.  Its keys are the records; a
 *    record is queued when it is created (and at start, so what was left
 *    while the hub was down is found), and when its owner is deleted.  Its
 *    reconcile deletes the record when the owner is gone (or is another
 *    object of the same name: a different uid), with a compare-and-swap on
 *    the record's revision so a record written meanwhile for a new owner
 *    stays.  Owners are found by name (Agents) or through the runtime
 *    cache's HUB_IDX_UID index (InfraEnvs, AgentClusterInstalls), never by
 *    a listing. */
#ifndef AH_CONTROLLERS_RECORDS_H
#define AH_CONTROLLERS_RECORDS_H

#include <stdint.h>

#include "base/error.h"
#include "store/store.h"

/* Per Agent (its namespace and name; the record names the Agent's uid):
 * the spec fields last applied to its host (agent.c). */
#define HOSTSPEC_RESOURCE "agenthub.internal.hostspecs"
/* Per Agent (its namespace and name): the host's state
 * {"uid", "checkedInAt", "status", "statusUpdatedAt", "facts"} (agent.c). */
#define HOSTSTATE_RESOURCE "agenthub.internal.hoststates"
/* Per InfraEnv (cluster-scoped, named by the InfraEnv's uid): its token
 * and image digest (hub.c, infraenv.c). */
#define IMAGESTATE_RESOURCE "agenthub.internal.imagestates"
/* Per AgentClusterInstall (cluster-scoped, named by its uid): the cluster
 * model's state (cluster.c). */
#define CLUSTERSTATE_RESOURCE "agenthub.internal.clusterstates"
/* Per AgentClusterInstall (cluster-scoped, named by its uid): the token of
 * its eventsURL (events.c). */
#define EVENTTOKEN_RESOURCE "agenthub.internal.eventtokens"

/* Index (on the InfraEnv and AgentClusterInstall caches) of metadata.uid. */
#define HUB_IDX_UID "uid"

enum hub_record_owner_key {
	HUB_RECORD_BY_NAME = 1, /* the record's (ns, name) is the owner's, and "uid" names it */
	HUB_RECORD_BY_UID,      /* the record's name is the owner's metadata.uid */
};

struct hub_record_kind {
	const char *resource;     /* the store resource (*_RESOURCE above) */
	const char *owner_api;    /* the owner's apiVersion and Kind */
	const char *owner_kind;
	enum hub_record_owner_key key;
	const char *schema;       /* an OpenAPI v3 schema (JSON text) */
};

/* The declared kinds, ending with a NULL resource. */
extern const struct hub_record_kind hub_record_kinds[];
/* The declared kind of resource, or NULL. */
const struct hub_record_kind *hub_record_kind(const char *resource);

/* 0 when text (len bytes) is a valid record of resource; -EINVAL with err
 * naming the field and the reason (or an undeclared resource); -ENOMEM. */
int hub_record_check(const char *resource, const char *text, size_t len, ah_err *err);

/* Write a record after hub_record_check().  rev > 0: replace that revision
 * (-ESTALE if it moved); rev == 0: create (-EEXIST if present);
 * rev == HUB_RECORD_ANY: create or replace whatever is there.  0 or a
 * negative errno (-EINVAL: refused by the schema, logged). */
#define HUB_RECORD_ANY ((int64_t)-1)
int hub_record_put(store *s, const char *resource, const char *ns, const char *name, int64_t rev,
		   const char *text);
/* Delete a record (rev as for store_delete: 0 = any).  0, -ENOENT, ... */
int hub_record_delete(store *s, const char *resource, const char *ns, const char *name, int64_t rev);

struct hub;
/* Register the garbage collectors of the declared kinds (see above) and
 * the uid indexes they read.  Before the runtime starts.  0 or -errno. */
int hub_records_register(struct hub *h);
/* Free what hub_records_register() allocated (after the runtime stopped). */
void hub_records_free(struct hub *h);

#endif
