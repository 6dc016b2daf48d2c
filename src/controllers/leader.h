/* leader.h - leader election through a coordination.k8s.io/v1 Lease in the
 * store, as client-go's leaderelection does it: several agenthub replicas on
 * one PostgreSQL database, one of them runs the controllers.
 *
 * Every retry period a candidate reads the Lease.  It creates it when
 * absent; takes it over when the record (holder, renewTime) has not changed
 * for a whole lease duration by this process's own clock (so clocks of the
 * replicas need not agree); and, holding it, renews renewTime.  Every write
 * carries the resourceVersion it read, so of two candidates at most one
 * wins.  A leader that cannot renew for the renew deadline has lost: it
 * calls `lost`, which must stop it acting as leader (the hub exits, as
 * controller-runtime's manager does).  leader_stop() of a leader gives the
 * Lease up (holder cleared) so another replica takes over at once.
 *
 * On a store with session locks (PostgreSQL: an advisory lock on a
 * connection of its own, released by the server when that session ends)
 * only the lock's holder may write the Lease, and so lead.  A guard thread
 * proves the hold every second; a leader that cannot (its session is gone,
 * or the server does not answer within a second) or whose last proof is
 * older than 3 s has lost.  When a leader dies its session ends at once, a
 * follower takes the lock within a second and, 5 s later (by when a leader
 * whose session ended has stopped), the Lease: failover in about 6 s
 * instead of a lease duration.  A holder that is connected but hung (the
 * Lease not renewed for a lease duration) has its session ended by the
 * others (pg_terminate_backend), so the Lease's expiry still bounds it. */
#ifndef AH_CONTROLLERS_LEADER_H
#define AH_CONTROLLERS_LEADER_H

#include <stdbool.h>

#include "kube/api.h"

struct leader_config {
	const char *ns, *name;          /* where the Lease lives */
	const char *identity;           /* this replica: hostname_randomhex */
	int lease_s, renew_s, retry_s;  /* 15, 10, 2 as upstream (0: those) */
	void (*started)(void *ctx);     /* became leader (on the elector's thread) */
	void (*lost)(void *ctx);        /* could not renew within renew_s */
	void *ctx;
};

struct leader;

int leader_start(struct kube_api *api, const struct leader_config *cfg, struct leader **ret);
/* Stop electing; a leader releases the Lease.  NULL is fine. */
void leader_stop(struct leader *l);
bool leader_is_leader(struct leader *l);

#endif
