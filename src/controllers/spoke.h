/* spoke.h - the installed cluster's API through its admin kubeconfig
 * (spoke.c), for the spoke cleanup of a host that left it. */
#ifndef AH_CONTROLLERS_SPOKE_H
#define AH_CONTROLLERS_SPOKE_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"

/* Delete Node node on the cluster a kubeconfig (YAML, len bytes) points at
 * (spoke.c): 0 when deleted or absent, negative with err set otherwise. */
int hub_spoke_delete_node(const char *kubeconfig, size_t len, const char *node, ah_err *err);

/* The SpokeCleanup controller (keys: Agents).  outcome: the cleanup the
 * Agent's host owes (cdkey "ns/name" of the ClusterDeployment it left,
 * node its Node's name): 1 done (the pass clears what was owed), 0 under
 * way (queued now if it was not), or negative with msg set: the last try
 * failed (tried again every 10 s while owed).  Thread-safe. */
struct hub;
int hub_spoke_register(struct hub *h);
void hub_spoke_free(struct hub *h);
int hub_spoke_cleanup_outcome(struct hub *h, const json_t *agent, const char *cdkey, const char *node,
			      char *msg, size_t size);

#endif
