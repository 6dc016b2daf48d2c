/* runtime.c - the controller runtime (runtime.h): per-controller
 * de-duplicating queues with back-off and delayed requeues, the worker
 * threads that drain them, the store watch that feeds them, and the shared
 * cache with its indexes.
 *
 * Locking: rt->lock guards every queue, the tickers and the counters;
 * rt->clock guards the cache.  Neither is held while a reconcile, a mapping
 * function or a ticker runs, except that mapping functions run with neither
 * held and rt_enqueue() takes rt->lock briefly. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/runtime.h"

/* One key of one controller's queue.  It lives in the controller's table
 * while it is ready, running, delayed or failing; otherwise it is freed. */
struct rt_entry {
	struct rt_key key;
	bool ready;        /* on the ready list */
	bool running;      /* a worker is reconciling it */
	bool dirty;        /* queued again while running */
	int64_t due;       /* monotonic ms of a delayed run; 0 = none */
	size_t heap_idx;   /* its slot in the delay heap when due != 0 */
	int failures;      /* consecutive errors (back-off exponent) */
	struct rt_entry *rnext; /* ready list */
	struct rt_entry *hnext; /* hash chain */
};

struct rt_controller {
	struct rt *rt;
	struct rt_controller_def def;
	struct rt_entry **buckets;
	size_t nbuckets, count;
	struct rt_entry *rhead, *rtail;
	struct rt_entry **heap; /* min-heap on due */
	size_t nheap, heapcap;
	struct rt_stats st;
	char metric_name[64]; /* the name in lower case: the metrics' controller label */
};

struct rt_index {
	char *name;
	rt_index_fn fn;
	json_t *map; /* value -> {"ns/name": true} */
};

struct rt_cres {
	char *resource;
	bool keep;
	json_t *objs;   /* "ns/name" -> object (keep) or true */
	json_t *by_ns;  /* ns -> {name: true} */
	json_t *vals;   /* "ns/name" -> [values of index 0, values of index 1, ...] */
	struct rt_index idx[RT_MAX_INDEXES];
	size_t nidx;
};

struct rt_ticker {
	int64_t period_ms, next_at;
	rt_tick_fn fn;
	void *ctx;
	bool running;
};

struct rt {
	store *store;
	struct rt_options opts;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t synced;  /* last_rev moved (rt_wait_synced) */
	bool stop, started;
	struct rt_controller *ctl[RT_MAX_CONTROLLERS];
	size_t nctl, rr;
	struct rt_ticker tickers[8];
	size_t ntickers;
	uint64_t events;

	pthread_mutex_t clock;
	uint64_t cache_gen;     /* odd while resync() refills the cache (rt_cache_generation) */
	struct rt_cres cres[16];
	size_t ncres;

	pthread_t *workers;
	size_t nworkers;
	pthread_t watcher;
	bool watching;
	int64_t last_rev;
};

bool rt_key_set(struct rt_key *ret, const char *kind, const char *ns, const char *name)
{
	if (!kind || !ns || !name || strlen(kind) >= sizeof(ret->kind) || strlen(ns) >= sizeof(ret->ns) ||
	    strlen(name) >= sizeof(ret->name) || !*name)
		return false;
	strcpy(ret->kind, kind);
	strcpy(ret->ns, ns);
	strcpy(ret->name, name);
	return true;
}

static int64_t deadline_ts(int64_t at_ms, struct timespec *ts)
{
	ts->tv_sec = at_ms / 1000;
	ts->tv_nsec = (long)(at_ms % 1000) * 1000000L;
	return at_ms;
}

/* --- the queue of one controller (rt->lock held) -------------------------- */

static size_t key_hash(const char *ns, const char *name)
{
	size_t h = 1469598103934665603ull;
	const char *p;

	for (p = ns; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ '/') * 1099511628211ull;
	for (p = name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

static struct rt_entry *entry_find(struct rt_controller *c, const char *ns, const char *name)
{
	struct rt_entry *e;

	if (!c->nbuckets)
		return NULL;
	for (e = c->buckets[key_hash(ns, name) % c->nbuckets]; e; e = e->hnext)
		if (strcmp(e->key.ns, ns) == 0 && strcmp(e->key.name, name) == 0)
			return e;
	return NULL;
}

static int table_grow(struct rt_controller *c)
{
	size_t n = c->nbuckets ? c->nbuckets * 2 : 64, i;
	struct rt_entry **nb = calloc(n, sizeof(*nb)), *e, *next;

	if (!nb)
		return -ENOMEM;
	for (i = 0; i < c->nbuckets; i++)
		for (e = c->buckets[i]; e; e = next) {
			size_t b = key_hash(e->key.ns, e->key.name) % n;

			next = e->hnext;
			e->hnext = nb[b];
			nb[b] = e;
		}
	free(c->buckets);
	c->buckets = nb;
	c->nbuckets = n;
	return 0;
}

static struct rt_entry *entry_get(struct rt_controller *c, const char *ns, const char *name, int *ret_r)
{
	struct rt_entry *e = entry_find(c, ns, name);
	size_t b;

	*ret_r = 0;
	if (e)
		return e;
	if (c->count >= RT_QUEUE_MAX) {
		*ret_r = -ENOBUFS;
		return NULL;
	}
	if (c->count >= c->nbuckets && table_grow(c) < 0) {
		*ret_r = -ENOMEM;
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !rt_key_set(&e->key, c->def.name, ns, name)) {
		free(e);
		*ret_r = e ? -EINVAL : -ENOMEM;
		return NULL;
	}
	b = key_hash(ns, name) % c->nbuckets;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	c->count++;
	return e;
}

/* Free the entry when nothing refers to it any more. */
static void entry_maybe_drop(struct rt_controller *c, struct rt_entry *e)
{
	struct rt_entry **pp;

	if (e->ready || e->running || e->due || e->failures)
		return;
	for (pp = &c->buckets[key_hash(e->key.ns, e->key.name) % c->nbuckets]; *pp; pp = &(*pp)->hnext)
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	c->count--;
	free(e);
}

static void heap_swap(struct rt_controller *c, size_t a, size_t b)
{
	struct rt_entry *t = c->heap[a];

	c->heap[a] = c->heap[b];
	c->heap[b] = t;
	c->heap[a]->heap_idx = a;
	c->heap[b]->heap_idx = b;
}

static void heap_up(struct rt_controller *c, size_t i)
{
	while (i > 0 && c->heap[(i - 1) / 2]->due > c->heap[i]->due) {
		heap_swap(c, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(struct rt_controller *c, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < c->nheap && c->heap[l]->due < c->heap[m]->due)
			m = l;
		if (r < c->nheap && c->heap[r]->due < c->heap[m]->due)
			m = r;
		if (m == i)
			return;
		heap_swap(c, i, m);
		i = m;
	}
}

static struct rt_entry *heap_pop(struct rt_controller *c)
{
	struct rt_entry *e = c->heap[0];

	c->nheap--;
	if (c->nheap) {
		c->heap[0] = c->heap[c->nheap];
		c->heap[0]->heap_idx = 0;
		heap_down(c, 0);
	}
	e->due = 0;
	return e;
}

/* Schedule e at due (monotonic ms); the earliest due time wins. */
static int entry_delay(struct rt_controller *c, struct rt_entry *e, int64_t due)
{
	if (due <= 0)
		due = 1;
	c->st.requeues++;
	if (e->due) {
		if (e->due <= due)
			return 0;
		e->due = due;
		heap_up(c, e->heap_idx);
		return 0;
	}
	if (c->nheap == c->heapcap) {
		size_t n = c->heapcap ? c->heapcap * 2 : 64;
		struct rt_entry **nh = realloc(c->heap, n * sizeof(*nh));

		if (!nh)
			return -ENOMEM;
		c->heap = nh;
		c->heapcap = n;
	}
	e->due = due;
	e->heap_idx = c->nheap;
	c->heap[c->nheap++] = e;
	heap_up(c, e->heap_idx);
	return 0;
}

static void entry_ready(struct rt_controller *c, struct rt_entry *e)
{
	if (e->running) {
		e->dirty = true;
		return;
	}
	if (e->ready)
		return;
	e->ready = true;
	e->rnext = NULL;
	if (c->rtail)
		c->rtail->rnext = e;
	else
		c->rhead = e;
	c->rtail = e;
	pthread_cond_signal(&c->rt->cond);
}

static int64_t backoff_ms(int failures)
{
	int64_t d = RT_BACKOFF_BASE_MS;
	int i;

	for (i = 1; i < failures && d < RT_BACKOFF_MAX_MS; i++)
		d *= 2;
	return d < RT_BACKOFF_MAX_MS ? d : RT_BACKOFF_MAX_MS;
}

/* --- public queue calls --------------------------------------------------- */

int rt_enqueue(struct rt_controller *c, const char *ns, const char *name)
{
	struct rt_entry *e;
	int r;

	if (!c || !ns || !name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&c->rt->lock);
	e = entry_get(c, ns, name, &r);
	if (e)
		entry_ready(c, e);
	else if (r == -ENOBUFS)
		c->st.dropped++;
	pthread_mutex_unlock(&c->rt->lock);
	return r;
}

int rt_enqueue_after(struct rt_controller *c, const char *ns, const char *name, int64_t delay_ms)
{
	struct rt_entry *e;
	int r;

	if (!c || !ns || !name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&c->rt->lock);
	e = entry_get(c, ns, name, &r);
	if (e) {
		r = entry_delay(c, e, util_mono_ms() + (delay_ms > 0 ? delay_ms : 0));
		pthread_cond_signal(&c->rt->cond); /* the earliest deadline may have moved */
		if (r < 0)
			entry_maybe_drop(c, e);
	} else if (r == -ENOBUFS) {
		c->st.dropped++;
	}
	pthread_mutex_unlock(&c->rt->lock);
	return r;
}

struct rt_controller *rt_controller_by_name(struct rt *rt, const char *name)
{
	size_t i;

	for (i = 0; i < rt->nctl; i++)
		if (strcmp(rt->ctl[i]->def.name, name) == 0)
			return rt->ctl[i];
	return NULL;
}

/* --- workers -------------------------------------------------------------- */

/* Move due delayed keys to the ready lists; returns the earliest deadline
 * still pending (delays and tickers), 0 = none.  rt->lock held. */
static int64_t promote_due(struct rt *rt, int64_t now)
{
	int64_t next = 0;
	size_t i;

	for (i = 0; i < rt->nctl; i++) {
		struct rt_controller *c = rt->ctl[i];

		while (c->nheap && c->heap[0]->due <= now) {
			struct rt_entry *e = heap_pop(c);

			entry_ready(c, e);
		}
		if (c->nheap && (!next || c->heap[0]->due < next))
			next = c->heap[0]->due;
	}
	for (i = 0; i < rt->ntickers; i++)
		if (!rt->tickers[i].running && (!next || rt->tickers[i].next_at < next))
			next = rt->tickers[i].next_at;
	return next;
}

static void finish(struct rt_controller *c, struct rt_entry *e, struct rt_result res)
{
	int64_t now = util_mono_ms();

	e->running = false;
	c->st.reconciles++;
	switch (res.outcome) {
	case RT_DONE:
		e->failures = 0;
		break;
	case RT_REQUEUE_AFTER:
		e->failures = 0;
		entry_delay(c, e, now + (res.after_ms > 0 ? res.after_ms : 0));
		break;
	case RT_ERROR:
	default:
		if (e->failures < 64)
			e->failures++;
		c->st.errors++;
		/* Logged once per failed reconcile, with the key; the retry
		 * waits out the back-off even if the key was queued again
		 * meanwhile (a failing reconcile must not spin). */
		log_warn("controller %s: reconcile of %s/%s failed: %s (retry in %lld ms)", c->def.name,
			 e->key.ns, e->key.name, strerror(-res.err), (long long)backoff_ms(e->failures));
		e->dirty = false;
		entry_delay(c, e, now + backoff_ms(e->failures));
		break;
	}
	if (e->dirty) {
		e->dirty = false;
		entry_ready(c, e);
	}
	entry_maybe_drop(c, e);
}

static void *worker_main(void *arg)
{
	struct rt *rt = arg;

	pthread_setname_np(pthread_self(), "ah-reconcile");
	pthread_mutex_lock(&rt->lock);
	while (!rt->stop) {
		int64_t now = util_mono_ms(), next = promote_due(rt, now);
		struct rt_controller *c = NULL;
		struct rt_entry *e = NULL;
		size_t i;

		if (rt->opts.standby) {
			pthread_cond_wait(&rt->cond, &rt->lock);
			continue;
		}
		for (i = 0; i < rt->ntickers; i++) {
			struct rt_ticker *t = &rt->tickers[i];

			if (t->running || t->next_at > now)
				continue;
			t->running = true;
			pthread_mutex_unlock(&rt->lock);
			t->fn(t->ctx);
			pthread_mutex_lock(&rt->lock);
			t->running = false;
			t->next_at = util_mono_ms() + t->period_ms;
			break;
		}
		if (i < rt->ntickers)
			continue;
		for (i = 0; i < rt->nctl && !e; i++) {
			c = rt->ctl[(rt->rr + i) % rt->nctl];
			e = c->rhead;
		}
		if (e) {
			struct rt_result res;

			rt->rr = (rt->rr + i) % (rt->nctl ? rt->nctl : 1);
			c->rhead = e->rnext;
			if (!c->rhead)
				c->rtail = NULL;
			e->ready = false;
			e->running = true;
			{
				struct rt_key k = e->key;
				double t0 = hm_now();

				pthread_mutex_unlock(&rt->lock);
				res = c->def.reconcile(c->def.ctx, &k);
				hm_reconcile(c->metric_name,
					     res.outcome == RT_DONE ? HM_SUCCESS :
					     res.outcome == RT_REQUEUE_AFTER ? HM_REQUEUE_AFTER : HM_ERROR,
					     hm_now() - t0);
				pthread_mutex_lock(&rt->lock);
			}
			finish(c, e, res);
			hm_queue_depth(c->metric_name, c->count);
			continue;
		}
		if (next) {
			struct timespec ts;

			deadline_ts(next, &ts);
			pthread_cond_timedwait(&rt->cond, &rt->lock, &ts);
		} else {
			pthread_cond_wait(&rt->cond, &rt->lock);
		}
	}
	pthread_mutex_unlock(&rt->lock);
	return NULL;
}

/* --- the cache ------------------------------------------------------------ */

static struct rt_cres *cres_find(struct rt *rt, const char *resource)
{
	size_t i;

	for (i = 0; i < rt->ncres; i++)
		if (strcmp(rt->cres[i].resource, resource) == 0)
			return &rt->cres[i];
	return NULL;
}

int rt_cache_resource(struct rt *rt, const char *resource, bool keep_objects)
{
	struct rt_cres *cr = cres_find(rt, resource);

	if (cr) {
		cr->keep = cr->keep || keep_objects;
		return 0;
	}
	if (rt->ncres == sizeof(rt->cres) / sizeof(rt->cres[0]))
		return -E2BIG;
	cr = &rt->cres[rt->ncres];
	memset(cr, 0, sizeof(*cr));
	cr->resource = strdup(resource);
	cr->keep = keep_objects;
	cr->objs = json_object();
	cr->by_ns = json_object();
	cr->vals = json_object();
	if (!cr->resource || !cr->objs || !cr->by_ns || !cr->vals) {
		free(cr->resource);
		json_decref(cr->objs);
		json_decref(cr->by_ns);
		json_decref(cr->vals);
		return -ENOMEM;
	}
	rt->ncres++;
	return 0;
}

int rt_cache_index(struct rt *rt, const char *resource, const char *index, rt_index_fn fn)
{
	struct rt_cres *cr;
	int r = rt_cache_resource(rt, resource, false);

	if (r < 0)
		return r;
	cr = cres_find(rt, resource);
	if (cr->nidx == RT_MAX_INDEXES)
		return -E2BIG;
	cr->idx[cr->nidx].name = strdup(index);
	cr->idx[cr->nidx].fn = fn;
	cr->idx[cr->nidx].map = json_object();
	if (!cr->idx[cr->nidx].name || !cr->idx[cr->nidx].map) {
		free(cr->idx[cr->nidx].name);
		json_decref(cr->idx[cr->nidx].map);
		return -ENOMEM;
	}
	cr->nidx++;
	return 0;
}

static void cres_remove(struct rt_cres *cr, const char *ns, const char *name, const char *k)
{
	json_t *old = json_object_get(cr->vals, k), *set;
	size_t i, j;

	for (i = 0; old && i < cr->nidx; i++) {
		json_t *vs = json_array_get(old, i);

		for (j = 0; j < json_array_size(vs); j++) {
			const char *v = json_string_value(json_array_get(vs, j));

			set = json_object_get(cr->idx[i].map, v);
			json_object_del(set, k);
			if (set && json_object_size(set) == 0)
				json_object_del(cr->idx[i].map, v);
		}
	}
	json_object_del(cr->vals, k);
	json_object_del(cr->objs, k);
	set = json_object_get(cr->by_ns, ns);
	json_object_del(set, name);
	if (set && json_object_size(set) == 0)
		json_object_del(cr->by_ns, ns);
}

static void cres_put(struct rt_cres *cr, const char *ns, const char *name, const char *k, const json_t *obj)
{
	json_t *vals = json_array(), *set;
	size_t i, j;

	cres_remove(cr, ns, name, k);
	for (i = 0; i < cr->nidx; i++) {
		json_t *vs = json_array();

		cr->idx[i].fn(obj, vs);
		for (j = 0; j < json_array_size(vs); j++) {
			const char *v = json_string_value(json_array_get(vs, j));

			if (!v)
				continue;
			set = json_object_get(cr->idx[i].map, v);
			if (!set) {
				set = json_object();
				json_object_set_new(cr->idx[i].map, v, set);
			}
			json_object_set_new(set, k, json_true());
		}
		json_array_append_new(vals, vs);
	}
	json_object_set_new(cr->vals, k, vals);
	json_object_set_new(cr->objs, k, cr->keep ? json_incref((json_t *)obj) : json_true());
	set = json_object_get(cr->by_ns, ns);
	if (!set) {
		set = json_object();
		json_object_set_new(cr->by_ns, ns, set);
	}
	json_object_set_new(set, name, json_true());
}

json_t *rt_cache_get(struct rt *rt, const char *resource, const char *ns, const char *name)
{
	struct rt_cres *cr = cres_find(rt, resource);
	json_t *o = NULL;
	char k[RT_NS_MAX + RT_NAME_MAX + 2];

	if (!cr || !cr->keep)
		return NULL;
	snprintf(k, sizeof(k), "%s/%s", ns, name);
	pthread_mutex_lock(&rt->clock);
	o = json_object_get(cr->objs, k);
	if (o && !json_is_true(o))
		json_incref(o);
	else
		o = NULL;
	pthread_mutex_unlock(&rt->clock);
	return o;
}

int rt_cache_keys_ns(struct rt *rt, const char *resource, const char *ns, rt_key_visit_fn visit, void *ud)
{
	struct rt_cres *cr = cres_find(rt, resource);
	const char *name;
	json_t *v;

	if (!cr)
		return -ENOENT;
	pthread_mutex_lock(&rt->clock);
	json_object_foreach(json_object_get(cr->by_ns, ns), name, v)
		if (visit(ns, name, ud))
			break;
	pthread_mutex_unlock(&rt->clock);
	return 0;
}

int rt_cache_keys_all(struct rt *rt, const char *resource, rt_key_visit_fn visit, void *ud)
{
	struct rt_cres *cr = cres_find(rt, resource);
	const char *ns, *name;
	json_t *set, *v;

	if (!cr)
		return -ENOENT;
	pthread_mutex_lock(&rt->clock);
	json_object_foreach(cr->by_ns, ns, set) {
		json_object_foreach(set, name, v)
			if (visit(ns, name, ud))
				goto out;
	}
out:
	pthread_mutex_unlock(&rt->clock);
	return 0;
}

int rt_cache_keys_by(struct rt *rt, const char *resource, const char *index, const char *val,
		     rt_key_visit_fn visit, void *ud)
{
	struct rt_cres *cr = cres_find(rt, resource);
	const char *k;
	json_t *v;
	size_t i;

	if (!cr)
		return -ENOENT;
	for (i = 0; i < cr->nidx; i++)
		if (strcmp(cr->idx[i].name, index) == 0)
			break;
	if (i == cr->nidx)
		return -ENOENT;
	pthread_mutex_lock(&rt->clock);
	json_object_foreach(json_object_get(cr->idx[i].map, val), k, v) {
		const char *slash = strchr(k, '/');
		char ns[RT_NS_MAX + 1];
		size_t n = (size_t)(slash - k);

		if (!slash || n >= sizeof(ns))
			continue;
		memcpy(ns, k, n);
		ns[n] = 0;
		if (visit(ns, slash + 1, ud))
			break;
	}
	pthread_mutex_unlock(&rt->clock);
	return 0;
}

static int collect_visit(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

json_t *rt_cache_list_by(struct rt *rt, const char *resource, const char *index, const char *val)
{
	json_t *out = json_array();

	if (out)
		rt_cache_keys_by(rt, resource, index, val, collect_visit, out);
	return out;
}

/* --- feeding events ------------------------------------------------------- */

static bool watched(struct rt *rt, const char *resource)
{
	size_t i, j;

	for (i = 0; i < rt->nctl; i++)
		for (j = 0; j < RT_MAX_WATCHES && rt->ctl[i]->def.watches[j].resource; j++)
			if (strcmp(rt->ctl[i]->def.watches[j].resource, resource) == 0)
				return true;
	return false;
}

static void map_event(struct rt *rt, const struct rt_event *ev)
{
	size_t i, j, k;

	for (i = 0; i < rt->nctl; i++) {
		struct rt_controller *c = rt->ctl[i];

		for (j = 0; j < RT_MAX_WATCHES && c->def.watches[j].resource; j++) {
			const struct rt_watch *w = &c->def.watches[j];
			const json_t *refs;

			if (strcmp(w->resource, ev->so->resource) != 0)
				continue;
			switch (w->map) {
			case RT_MAP_SELF:
				rt_enqueue(c, ev->so->ns, ev->so->name);
				break;
			case RT_MAP_OWNER:
				refs = json_object_get(json_object_get(ev->obj, "metadata"), "ownerReferences");
				for (k = 0; k < json_array_size(refs); k++) {
					const json_t *ref = json_array_get(refs, k);
					const char *kind = json_string_value(json_object_get(ref, "kind"));
					const char *name = json_string_value(json_object_get(ref, "name"));

					if (kind && name && strcmp(kind, w->owner_kind) == 0)
						rt_enqueue(c, ev->so->ns, name);
				}
				break;
			case RT_MAP_FN:
				w->fn(c, c->def.ctx, ev);
				break;
			}
		}
	}
}

/* One event between the cache update and its mapping to keys. */
struct pending {
	store_obj so;   /* resource, ns, name, rev, type owned; no text */
	json_t *obj, *old;
};

static void pending_release(struct pending *p)
{
	free(p->so.resource);
	free(p->so.ns);
	free(p->so.name);
	json_decref(p->obj);
	json_decref(p->old);
}

/* Step 1 of feeding an event: parse it and update the cache.  false when
 * no controller cares about the resource (*ret untouched). */
static bool feed_cache(struct rt *rt, const store_obj *so, struct pending *ret)
{
	struct rt_cres *cr = cres_find(rt, so->resource);
	json_t *obj = NULL, *old = NULL;
	char k[RT_NS_MAX + RT_NAME_MAX + 2];

	if (!cr && !watched(rt, so->resource))
		return false;
	obj = json_loadb(so->json, so->len, 0, NULL);
	if (cr && strlen(so->ns) <= RT_NS_MAX && strlen(so->name) <= RT_NAME_MAX) {
		snprintf(k, sizeof(k), "%s/%s", so->ns, so->name);
		pthread_mutex_lock(&rt->clock);
		if (cr->nidx && json_object_get(cr->vals, k)) {
			json_t *vals = json_object_get(cr->vals, k);
			size_t i;

			old = json_object();
			for (i = 0; old && i < cr->nidx; i++)
				json_object_set(old, cr->idx[i].name, json_array_get(vals, i));
		}
		if (so->type == STORE_DELETED || !obj)
			cres_remove(cr, so->ns, so->name, k);
		else
			cres_put(cr, so->ns, so->name, k, obj);
		pthread_mutex_unlock(&rt->clock);
	}
	pthread_mutex_lock(&rt->lock);
	rt->events++;
	pthread_mutex_unlock(&rt->lock);
	memset(ret, 0, sizeof(*ret));
	ret->so.resource = strdup(so->resource);
	ret->so.ns = strdup(so->ns);
	ret->so.name = strdup(so->name);
	ret->so.rev = so->rev;
	ret->so.type = so->type;
	ret->so.json = (char *)"";
	ret->obj = obj;
	ret->old = old;
	if (!ret->so.resource || !ret->so.ns || !ret->so.name) {
		pending_release(ret);
		return false;
	}
	return true;
}

/* Step 2: map it to the controllers' keys. */
static void feed_map(struct rt *rt, const struct pending *p)
{
	struct rt_event ev = { .so = &p->so, .obj = p->obj, .old_index = p->old };

	map_event(rt, &ev);
}

void rt_feed(struct rt *rt, const store_obj *so)
{
	struct pending p;

	if (!feed_cache(rt, so, &p))
		return;
	feed_map(rt, &p);
	pending_release(&p);
}

/* A watch pass updates the cache with all its events before it maps any:
 * a reconcile it queues sees the indexes as of the whole pass (say, all
 * the Agents bound to a cluster in one batch), not half of it. */
struct batch {
	struct rt *rt;
	struct pending *p;
	size_t n, cap;
};

static int feed_visit(const store_obj *so, void *ud)
{
	struct batch *b = ud;

	if (b->n == b->cap) {
		size_t nc = b->cap ? b->cap * 2 : 64;
		struct pending *np = realloc(b->p, nc * sizeof(*np));

		if (!np) {
			rt_feed(b->rt, so); /* no room to wait: map it now */
			return 0;
		}
		b->p = np;
		b->cap = nc;
	}
	if (feed_cache(b->rt, so, &b->p[b->n]))
		b->n++;
	return 0;
}

static int list_visit(const store_obj *so, void *ud)
{
	store_obj copy = *so;

	copy.type = STORE_ADDED;
	rt_feed(ud, &copy);
	return 0;
}

/* Every cached or watched resource, listed whole: the start, and the way
 * back after the watch fell behind the compacted log. */
static void resync(struct rt *rt)
{
	const char *done[RT_MAX_CONTROLLERS * RT_MAX_WATCHES + 16];
	size_t nd = 0, i, j, k;

	pthread_mutex_lock(&rt->clock);
	__atomic_add_fetch(&rt->cache_gen, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < rt->ncres; i++) {
		struct rt_cres *cr = &rt->cres[i];

		json_object_clear(cr->objs);
		json_object_clear(cr->by_ns);
		json_object_clear(cr->vals);
		for (j = 0; j < cr->nidx; j++)
			json_object_clear(cr->idx[j].map);
	}
	pthread_mutex_unlock(&rt->clock);
	for (i = 0; i < rt->ncres; i++)
		done[nd++] = rt->cres[i].resource;
	for (i = 0; i < rt->nctl; i++)
		for (j = 0; j < RT_MAX_WATCHES && rt->ctl[i]->def.watches[j].resource; j++) {
			const char *res = rt->ctl[i]->def.watches[j].resource;

			for (k = 0; k < nd && strcmp(done[k], res) != 0; k++)
				;
			if (k == nd)
				done[nd++] = res;
		}
	for (k = 0; k < nd; k++)
		store_list(rt->store, done[k], NULL, NULL, NULL, list_visit, rt, NULL);
	__atomic_add_fetch(&rt->cache_gen, 1, __ATOMIC_SEQ_CST);
}

uint64_t rt_cache_generation(struct rt *rt)
{
	return __atomic_load_n(&rt->cache_gen, __ATOMIC_SEQ_CST);
}

static void *watch_main(void *arg)
{
	struct rt *rt = arg;
	int64_t pass_start = 0;

	pthread_setname_np(pthread_self(), "ah-watch");
	for (;;) {
		int64_t last = rt->last_rev;
		int r;

		pthread_mutex_lock(&rt->lock);
		/* Passes start at most every min_pass_ms: under a stream of
		 * writes one pass takes the events of several commits. */
		while (!rt->stop && rt->opts.min_pass_ms > 0 && util_mono_ms() < pass_start + rt->opts.min_pass_ms) {
			struct timespec ts;

			deadline_ts(pass_start + rt->opts.min_pass_ms, &ts);
			pthread_cond_timedwait(&rt->cond, &rt->lock, &ts);
		}
		if (rt->stop) {
			pthread_mutex_unlock(&rt->lock);
			break;
		}
		pthread_mutex_unlock(&rt->lock);
		store_wait(rt->store, rt->last_rev, -1);
		pthread_mutex_lock(&rt->lock);
		if (rt->stop) {
			pthread_mutex_unlock(&rt->lock);
			break;
		}
		pthread_mutex_unlock(&rt->lock);
		pass_start = util_mono_ms();
		{
			struct batch b = { .rt = rt };
			size_t i;

			r = store_events(rt->store, NULL, NULL, rt->last_rev, 1000, feed_visit, &b, &last);
			for (i = 0; i < b.n; i++) {
				feed_map(rt, &b.p[i]);
				pending_release(&b.p[i]);
			}
			free(b.p);
		}
		if (r == -ERANGE) {
			last = store_current_rev(rt->store);
			resync(rt);
		}
		pthread_mutex_lock(&rt->lock);
		rt->last_rev = last;
		pthread_cond_broadcast(&rt->synced);
		pthread_mutex_unlock(&rt->lock);
	}
	return NULL;
}

/* --- lifecycle ------------------------------------------------------------ */

int rt_new(store *s, const struct rt_options *opts, struct rt **ret)
{
	struct rt *rt = calloc(1, sizeof(*rt));
	pthread_condattr_t ca;

	if (!rt)
		return -ENOMEM;
	rt->store = s;
	if (opts)
		rt->opts = *opts;
	if (rt->opts.workers <= 0)
		rt->opts.workers = 1;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_mutex_init(&rt->clock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rt->cond, &ca);
	pthread_cond_init(&rt->synced, &ca);
	pthread_condattr_destroy(&ca);
	*ret = rt;
	return 0;
}

int rt_register(struct rt *rt, const struct rt_controller_def *def, struct rt_controller **ret)
{
	struct rt_controller *c;

	if (rt->started || !def->name || !def->reconcile || strlen(def->name) >= RT_KIND_MAX)
		return -EINVAL;
	if (rt->nctl == RT_MAX_CONTROLLERS)
		return -E2BIG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->rt = rt;
	c->def = *def;
	for (size_t j = 0; def->name && def->name[j] && j + 1 < sizeof(c->metric_name); j++)
		c->metric_name[j] = (char)((def->name[j] >= 'A' && def->name[j] <= 'Z') ? def->name[j] + 32 : def->name[j]);
	rt->ctl[rt->nctl++] = c;
	if (ret)
		*ret = c;
	return 0;
}

const json_t *rt_event_old_index(const struct rt_event *ev, const char *index)
{
	return ev->old_index ? json_object_get(ev->old_index, index) : NULL;
}

int rt_watch_add(struct rt_controller *c, const struct rt_watch *w)
{
	size_t j;

	if (c->rt->started)
		return -EINVAL;
	for (j = 0; j < RT_MAX_WATCHES && c->def.watches[j].resource; j++)
		;
	if (j == RT_MAX_WATCHES)
		return -E2BIG;
	c->def.watches[j] = *w;
	return 0;
}

int rt_ticker(struct rt *rt, int64_t period_ms, rt_tick_fn fn, void *ctx)
{
	struct rt_ticker *t;

	if (rt->ntickers == sizeof(rt->tickers) / sizeof(rt->tickers[0]))
		return -E2BIG;
	t = &rt->tickers[rt->ntickers++];
	t->period_ms = period_ms > 0 ? period_ms : 1;
	t->next_at = util_mono_ms() + t->period_ms;
	t->fn = fn;
	t->ctx = ctx;
	return 0;
}

int rt_start(struct rt *rt)
{
	size_t i;

	if (rt->started)
		return -EALREADY;
	rt->started = true;
	pthread_mutex_lock(&rt->lock);
	for (i = 0; i < rt->ntickers; i++)
		rt->tickers[i].next_at = util_mono_ms() + rt->tickers[i].period_ms;
	pthread_mutex_unlock(&rt->lock);
	if (rt->store && !rt->opts.no_watch) {
		/* Events after this revision are replayed over the listing: a
		 * key may be queued twice, which the queue folds into one. */
		rt->last_rev = store_current_rev(rt->store);
		resync(rt);
	}
	rt->workers = calloc((size_t)rt->opts.workers, sizeof(pthread_t));
	if (!rt->workers)
		return -ENOMEM;
	for (i = 0; i < (size_t)rt->opts.workers; i++) {
		if (pthread_create(&rt->workers[i], NULL, worker_main, rt) != 0)
			break;
		rt->nworkers++;
	}
	if (!rt->nworkers)
		return -EAGAIN;
	if (rt->store && !rt->opts.no_watch) {
		if (pthread_create(&rt->watcher, NULL, watch_main, rt) != 0)
			return -EAGAIN;
		rt->watching = true;
	}
	return 0;
}

void rt_activate(struct rt *rt)
{
	size_t i;

	if (!rt)
		return;
	pthread_mutex_lock(&rt->lock);
	if (rt->opts.standby) {
		rt->opts.standby = false;
		for (i = 0; i < rt->ntickers; i++)
			rt->tickers[i].next_at = util_mono_ms() + rt->tickers[i].period_ms;
		pthread_cond_broadcast(&rt->cond);
	}
	pthread_mutex_unlock(&rt->lock);
}

void rt_stop(struct rt *rt)
{
	size_t i;

	if (!rt)
		return;
	pthread_mutex_lock(&rt->lock);
	rt->stop = true;
	pthread_cond_broadcast(&rt->cond);
	pthread_cond_broadcast(&rt->synced);
	pthread_mutex_unlock(&rt->lock);
	if (rt->watching) {
		/* store_wake_all() is not sticky: the watcher may enter
		 * store_wait() just after it, so wake until it is gone. */
		for (;;) {
			struct timespec ts;

			store_wake_all(rt->store);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 50 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			if (pthread_timedjoin_np(rt->watcher, NULL, &ts) == 0)
				break;
		}
		rt->watching = false;
	}
	for (i = 0; i < rt->nworkers; i++)
		pthread_join(rt->workers[i], NULL);
	rt->nworkers = 0;
}

void rt_free(struct rt *rt)
{
	size_t i, j;

	if (!rt)
		return;
	rt_stop(rt);
	free(rt->workers);
	for (i = 0; i < rt->nctl; i++) {
		struct rt_controller *c = rt->ctl[i];

		for (j = 0; j < c->nbuckets; j++) {
			struct rt_entry *e, *next;

			for (e = c->buckets[j]; e; e = next) {
				next = e->hnext;
				free(e);
			}
		}
		free(c->buckets);
		free(c->heap);
		free(c);
	}
	for (i = 0; i < rt->ncres; i++) {
		struct rt_cres *cr = &rt->cres[i];

		free(cr->resource);
		json_decref(cr->objs);
		json_decref(cr->by_ns);
		json_decref(cr->vals);
		for (j = 0; j < cr->nidx; j++) {
			free(cr->idx[j].name);
			json_decref(cr->idx[j].map);
		}
	}
	pthread_mutex_destroy(&rt->lock);
	pthread_mutex_destroy(&rt->clock);
	pthread_cond_destroy(&rt->cond);
	pthread_cond_destroy(&rt->synced);
	free(rt);
}

/* --- counters ------------------------------------------------------------- */

void rt_controller_stats(struct rt_controller *c, struct rt_stats *ret)
{
	pthread_mutex_lock(&c->rt->lock);
	*ret = c->st;
	ret->events = c->rt->events;
	ret->queued = c->count;
	pthread_mutex_unlock(&c->rt->lock);
}

void rt_stats(struct rt *rt, struct rt_stats *ret)
{
	size_t i;

	memset(ret, 0, sizeof(*ret));
	pthread_mutex_lock(&rt->lock);
	for (i = 0; i < rt->nctl; i++) {
		struct rt_controller *c = rt->ctl[i];

		ret->reconciles += c->st.reconciles;
		ret->errors += c->st.errors;
		ret->requeues += c->st.requeues;
		ret->dropped += c->st.dropped;
		ret->queued += c->count;
	}
	ret->events = rt->events;
	pthread_mutex_unlock(&rt->lock);
}

int rt_key_failures(struct rt_controller *c, const char *ns, const char *name)
{
	struct rt_entry *e;
	int n;

	pthread_mutex_lock(&c->rt->lock);
	e = entry_find(c, ns, name);
	n = e ? e->failures : 0;
	pthread_mutex_unlock(&c->rt->lock);
	return n;
}

int rt_wait_synced(struct rt *rt, int64_t rev, int64_t timeout_ms)
{
	int64_t until = util_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int r = 0;

	if (!rt->store || rt->opts.no_watch || !rt->watching)
		return 0; /* fed by hand: rt_feed() is synchronous */
	if (rev <= 0)
		rev = store_current_rev(rt->store);
	pthread_mutex_lock(&rt->lock);
	while (rt->last_rev < rev && !rt->stop) {
		struct timespec ts;

		if (util_mono_ms() >= until) {
			r = -ETIMEDOUT;
			break;
		}
		deadline_ts(until, &ts);
		pthread_cond_timedwait(&rt->synced, &rt->lock, &ts);
	}
	pthread_mutex_unlock(&rt->lock);
	return r;
}
