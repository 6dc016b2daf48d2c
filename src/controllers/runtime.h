/* runtime.h - the controller runtime: controllers register with it, it
 * watches the store, keeps a shared cache with indexes, and runs each
 * controller's reconcile from a de-duplicating work queue.
 *
 * The contract, in short (kubeapi.md's controllers are level-triggered):
 *
 *  - A controller (struct rt_controller_def) has a name, a reconcile function
 *    and the kinds it watches.  For each watched resource it says how an
 *    event maps to its own keys: the object itself (RT_MAP_SELF), its owner
 *    (RT_MAP_OWNER: the ownerReferences of a given Kind), or a function
 *    (RT_MAP_FN) that may look keys up in the cache's indexes and calls
 *    rt_enqueue().  Adding a controller is its own file plus one
 *    rt_register() call; nothing in the runtime names a controller.
 *
 *  - The cache: rt_cache_resource() declares a resource the runtime keeps
 *    current from the store's event log.  Every cached resource has its
 *    per-namespace listing; rt_cache_index() adds an index (a function that
 *    returns the index values of an object: a label, an owner uid, a field
 *    such as an Agent's spec.clusterDeploymentName).  Lookups give keys, so a
 *    reconcile never scans a namespace or the store to find related objects.
 *    A resource declared with keep_objects also keeps the parsed objects
 *    (rt_cache_get()); for big, numerous objects (Agents with their
 *    inventory) only the keys and index values are kept and the object is
 *    read through the store, whose own object cache answers from memory.
 *
 *  - One queue per controller, keys are struct rt_key (kind, namespace,
 *    name; cluster-scoped keys have ns "").  A key queued twice runs once; a
 *    key queued while its reconcile runs is run again after it, never by two
 *    threads at once.  rt_enqueue_after() schedules a delayed run (the
 *    earliest due time wins).
 *
 *  - Reconcile returns rt_done(), rt_requeue_after(ms) or rt_error(r): on
 *    an error the runtime logs it once with the key, counts it
 *    (rt_stats()) and runs the key again after a per-key exponential
 *    back-off (RT_BACKOFF_BASE_MS doubling up to RT_BACKOFF_MAX_MS); a
 *    success resets the back-off.  No result is dropped.
 *
 *  - Workers wait on a condition variable until the next event or the
 *    earliest deadline (a delayed key, a ticker): no polling interval.
 *
 * Threads: every function may be called from any thread, including from a
 * reconcile or a mapping function, except rt_free() (not concurrently with
 * anything else) and the registration calls (before rt_start()).
 * Bounds: each queue holds at most RT_QUEUE_MAX distinct keys; an enqueue
 * beyond that is refused with -ENOBUFS and counted. */
#ifndef AH_CONTROLLERS_RUNTIME_H
#define AH_CONTROLLERS_RUNTIME_H

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define RT_KIND_MAX 48
#define RT_NS_MAX 254
#define RT_NAME_MAX 254
#define RT_BACKOFF_BASE_MS 250
#define RT_BACKOFF_MAX_MS 60000
#define RT_QUEUE_MAX 1000000
#define RT_MAX_CONTROLLERS 32
#define RT_MAX_WATCHES 8
#define RT_MAX_INDEXES 8

struct rt_key {
	char kind[RT_KIND_MAX]; /* the controller's name for what it reconciles ("Agent") */
	char ns[RT_NS_MAX + 1]; /* "" for cluster-scoped objects */
	char name[RT_NAME_MAX + 1];
};

/* Fill *ret; false (and *ret unspecified) when a part is too long. */
bool rt_key_set(struct rt_key *ret, const char *kind, const char *ns, const char *name);

enum rt_outcome { RT_DONE = 0, RT_REQUEUE_AFTER, RT_ERROR };

struct rt_result {
	enum rt_outcome outcome;
	int64_t after_ms; /* RT_REQUEUE_AFTER */
	int err;          /* RT_ERROR: a negative errno */
};

static inline struct rt_result rt_done(void)
{
	return (struct rt_result){ RT_DONE, 0, 0 };
}
static inline struct rt_result rt_requeue_after(int64_t ms)
{
	return (struct rt_result){ RT_REQUEUE_AFTER, ms, 0 };
}
static inline struct rt_result rt_error(int err)
{
	return (struct rt_result){ RT_ERROR, 0, err < 0 ? err : -EIO };
}
/* 0 or more → done; negative → error. */
static inline struct rt_result rt_from_errno(int r)
{
	return r < 0 ? rt_error(r) : rt_done();
}

struct rt;
struct rt_controller;

/* One store event (or a resync visit, type STORE_ADDED) as controllers see
 * it: so gives resource, ns, name, rev and type (its text is not kept:
 * so->json is ""); obj is the parsed object (for a delete: its last
 * state), or NULL when the text does not parse.  The events of one watch
 * pass (at most 1000) all reach the cache before any is mapped. */
struct rt_event {
	const store_obj *so;
	const json_t *obj;
	const json_t *old_index; /* cached resources: {index name: [values]} the
				  * object had before this event (an update
				  * that moved it tells its old place); NULL
				  * when it was not cached */
};

/* The values of index the object had before ev (borrowed; NULL = none). */
const json_t *rt_event_old_index(const struct rt_event *ev, const char *index);

typedef struct rt_result (*rt_reconcile_fn)(void *ctx, const struct rt_key *key);
/* Map one event to keys: call rt_enqueue(c, ...) for each. */
typedef void (*rt_map_fn)(struct rt_controller *c, void *ctx, const struct rt_event *ev);
/* Add an object's index values to out (a JSON array of strings). */
typedef void (*rt_index_fn)(const json_t *obj, json_t *out);
typedef void (*rt_tick_fn)(void *ctx);

enum rt_map { RT_MAP_SELF = 1, RT_MAP_OWNER, RT_MAP_FN };

struct rt_watch {
	const char *resource;   /* store resource ("agents.agent-install.openshift.io") */
	enum rt_map map;
	const char *owner_kind; /* RT_MAP_OWNER: the ownerReferences Kind to follow */
	rt_map_fn fn;           /* RT_MAP_FN */
};

struct rt_controller_def {
	const char *name;       /* also the kind of its keys */
	rt_reconcile_fn reconcile;
	void *ctx;
	struct rt_watch watches[RT_MAX_WATCHES]; /* ends at the first resource == NULL */
};

struct rt_options {
	int workers;            /* reconcile threads; 0 = 1 */
	int64_t min_pass_ms;    /* coalesce store events for at most this long (0 = none) */
	bool no_watch;          /* tests: no store watch thread (feed with rt_feed()) */
	bool standby;           /* start with the cache and queues fed but no
				   reconcile or ticker run until rt_activate()
				   (a replica that is not the leader) */
};

/* s may be NULL with opts->no_watch (queue and cache tests).  *ret owned by
 * the caller, freed with rt_free(). */
int rt_new(store *s, const struct rt_options *opts, struct rt **ret);
void rt_free(struct rt *rt);
/* Leave standby: reconciles of what was queued meanwhile, and tickers, run
 * from now on.  A no-op on a runtime that is not in standby. */
void rt_activate(struct rt *rt);

/* Registration, before rt_start().  The def's strings must outlive rt.
 * *ret (may be NULL) is the controller's handle.  -E2BIG past the caps. */
int rt_register(struct rt *rt, const struct rt_controller_def *def, struct rt_controller **ret);
int rt_cache_resource(struct rt *rt, const char *resource, bool keep_objects);
int rt_cache_index(struct rt *rt, const char *resource, const char *index, rt_index_fn fn);
/* Add a watch to a registered controller (a module that maps its own
 * resource to another controller's keys, e.g. NMStateConfig → InfraEnv). */
int rt_watch_add(struct rt_controller *c, const struct rt_watch *w);
/* Call fn(ctx) every period_ms (the first time period_ms after start). */
int rt_ticker(struct rt *rt, int64_t period_ms, rt_tick_fn fn, void *ctx);

/* Fill the cache from the store, queue every watched object (RT_MAP_SELF),
 * start the workers and the watch.  0 or a negative errno. */
int rt_start(struct rt *rt);
/* Stop the threads (joins them); idempotent.  rt_free() calls it. */
void rt_stop(struct rt *rt);

/* Queue a key now / after delay_ms.  0, -ENOBUFS (queue full), -EINVAL. */
int rt_enqueue(struct rt_controller *c, const char *ns, const char *name);
int rt_enqueue_after(struct rt_controller *c, const char *ns, const char *name, int64_t delay_ms);
struct rt_controller *rt_controller_by_name(struct rt *rt, const char *name);

/* Feed one event by hand (tests, or a caller that already has it): updates
 * the cache and maps it to the controllers' keys. */
void rt_feed(struct rt *rt, const store_obj *so);

/* Cache lookups.  get: a new reference to the cached object, or NULL (not
 * cached, or the resource keeps no objects).  keys: call visit(ns, name) for
 * each object of resource in ns / with index value val; visit returns 0 to
 * go on, non-zero to stop.  The cache lock is held during the visits: visit
 * must not call back into the cache (collect, then act). */
json_t *rt_cache_get(struct rt *rt, const char *resource, const char *ns, const char *name);
typedef int (*rt_key_visit_fn)(const char *ns, const char *name, void *ud);
int rt_cache_keys_ns(struct rt *rt, const char *resource, const char *ns, rt_key_visit_fn visit, void *ud);
int rt_cache_keys_all(struct rt *rt, const char *resource, rt_key_visit_fn visit, void *ud);
int rt_cache_keys_by(struct rt *rt, const char *resource, const char *index, const char *val,
		     rt_key_visit_fn visit, void *ud);
/* The same, collected: a new JSON array of ["ns", "name"] pairs. */
json_t *rt_cache_list_by(struct rt *rt, const char *resource, const char *index, const char *val);

/* The cache's generation: odd while the cache is being refilled from the
 * store (at start, and after the watch fell behind the compacted log),
 * when a lookup may miss an object that exists.  A caller that acts on a
 * miss (deletes something) compares the generation before and after its
 * lookup, and looks again later if it was odd or moved. */
uint64_t rt_cache_generation(struct rt *rt);

/* Wait until the cache has taken every store event up to rev (0 = the
 * store's current revision): a reader that just missed in the cache asks
 * whether a write it could know about is still on its way.  0, or
 * -ETIMEDOUT after timeout_ms.  Immediately 0 without a store watch. */
int rt_wait_synced(struct rt *rt, int64_t rev, int64_t timeout_ms);

/* Counters (a snapshot), for tests and a later /metrics. */
struct rt_stats {
	uint64_t reconciles;     /* reconcile calls */
	uint64_t errors;         /* reconciles that returned an error */
	uint64_t requeues;       /* delayed requeues scheduled (results and calls) */
	uint64_t dropped;        /* enqueues refused (queue full) */
	uint64_t events;         /* store events fed */
	size_t queued;           /* keys waiting now (ready or delayed) */
};
void rt_stats(struct rt *rt, struct rt_stats *ret);
/* The same for one controller. */
void rt_controller_stats(struct rt_controller *c, struct rt_stats *ret);
/* The current back-off failure count of a key (tests). */
int rt_key_failures(struct rt_controller *c, const char *ns, const char *name);

#endif
