/* agent.h - the host pipeline of the Agent controller (agent.c), as the
 * agent REST API (api/agentapi.c) drives it.  Every call reads and writes
 * objects through the kube layer and the host's private records; none
 * reconciles another object.  Thread-safe (h->lock guards the leases). */
#ifndef AH_CONTROLLERS_AGENT_H
#define AH_CONTROLLERS_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "controllers/hub-internal.h"

struct steps_ctx;

/* How a pass uses the host's lease. */
enum lease_use {
	LEASE_KEEP,     /* a pass of our own: the host did not call */
	LEASE_TOUCH,    /* the host called: it checked in now */
	LEASE_NEW_BOOT, /* the host registered: also forget what its last boot said */
};

/* The cluster of a bound host (cluster.c), for its validations, its
 * install-phase transitions and its steps; both NULL when unbound. */
struct host_cluster {
	json_t *cluster, *hosts;
};

/* The host model of an Agent from its lease (created when missing; its
 * applied spec and state record read from the store on first use).  New
 * reference; NULL on allocation failure. */
json_t *hub_host_of(struct hub *h, const json_t *agent, const char *ie_id, enum lease_use use);
/* Whether the host model is bound to a cluster. */
bool hub_host_is_bound(const json_t *host);
/* Keep the spec fields applied to host in the Agent's private record. */
int hub_applied_save(struct hub *h, const json_t *agent, const json_t *host, ah_err *err);
/* Load (release) the cluster of a bound host into hc. */
void hub_host_cluster_load(struct hub *h, const json_t *agent, json_t *host, struct host_cluster *hc);
void hub_host_cluster_release(struct host_cluster *hc);
/* One pass of the pipeline: bind/unbind, spec sync, state machine (with
 * refresh), and the Agent write if anything changed (compare-and-swap:
 * -ESTALE when the Agent moved meanwhile). */
int hub_host_pass_in(struct hub *h, const json_t *agent, json_t *host, bool refresh,
		     const struct host_cluster *hc);
/* Keep the step results of a reply that later passes need (lease and
 * state record). */
void hub_save_facts(struct hub *h, const json_t *ie, const char *host_id, const json_t *host);
/* The counter save_facts bumps for the host (0 without a lease). */
uint64_t hub_host_facts_gen(struct hub *h, const char *ns, const char *host_id);
/* The quick poll of an unbound host whose Agent and facts did not change
 * since a full pass: arm after a full pass; quick_poll() gives the next
 * steps in *ret_steps (new reference) or false for a full pass. */
void hub_quick_poll_arm(struct hub *h, const char *ns, const char *host_id, const json_t *agent,
			const json_t *host, uint64_t gen);
bool hub_quick_poll(struct hub *h, const json_t *ie, const char *host_id, const struct steps_ctx *sctx,
		    long long ts, json_t **ret_steps);

#endif
