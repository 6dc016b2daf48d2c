/* sqlite.c - the embedded SQLite backend of the object store.
 *
 * One database file in WAL mode with three tables: objects (the current text
 * of every key), events (one row per write, keyed by its revision, read by
 * watches) and meta (schema version, current and compacted revision).
 *
 * Writes: callers queue a request and sleep; a single writer thread owns the
 * read-write connection, takes up to BATCH_MAX queued requests, applies each
 * (own precondition check, own render call, own revision) inside one
 * BEGIN IMMEDIATE ... COMMIT, syncs once, and only then wakes each caller with
 * its result.  That is group commit: under load one fsync acknowledges
 * hundreds of writes.  A request that fails its precondition fails alone; a
 * storage failure fails the whole batch with -EIO and acknowledges nothing.
 *
 * Reads: a pool of read-only connections, so reads never wait for the writer
 * (WAL readers see the last commit that finished before they began).  Each
 * list or events call runs in one read transaction, and the revision it
 * reports is read from meta inside that same transaction.
 *
 * Event-log compaction piggybacks on write batches: once the log has grown a
 * slack beyond event_log_keep, the next batch also deletes the oldest events
 * (a bounded chunk of them) and advances the compacted revision.
 *
 * Point reads go through an object cache first: (resource, ns, name) ->
 * (rev, text), split into CACHE_STRIPES stripes, each a small hash table with
 * its own mutex, per-stripe LRU list and a byte budget (1/CACHE_STRIPES of
 * cache_bytes).  It must answer exactly what a SQLite read would answer at
 * the same moment, and it does so with one rule on each side.  The writer
 * marks the key's slot (each stripe has CACHE_SLOTS generation slots)
 * pending just before COMMIT, and right after COMMIT stores the text it
 * rendered (or drops the key on a delete, or on a failed batch whose COMMIT
 * may or may not have landed), clears the mark and bumps the slot's
 * generation: all before stamps, publish() and any acknowledgement.  While a
 * slot is pending the cache answers nothing from it, so a reader never sees
 * the cache lag behind a committed row.  A reader that misses records the
 * slot's generation, reads SQLite, and inserts what it read only if the
 * generation is unchanged and the slot not pending: then no COMMIT touched
 * the slot since before its read began, so what it read is still current.
 * An entry is never replaced by an older revision.
 *
 * Recent events are served from memory too: the writer appends every
 * committed write's event (its own copy of the text, refcounted) to the
 * event ring right after COMMIT, before stamps, publish() and any
 * acknowledgement, and drops the oldest beyond a count and a byte bound.
 * Revisions are contiguous, so the ring holds exactly the revisions
 * (base, base + count] and finds the first one a call needs by arithmetic.
 * store_events() answers from the ring when after_rev >= base, i.e. when
 * the ring holds every revision it has to scan; otherwise the whole call
 * reads SQLite.  The ring also carries the compacted revision of the same
 * commit, so its -ERANGE answer is the one a SQLite read would give.  A
 * reader takes references to the matching events under the ring's mutex
 * and visits them after unlocking, so a visit callback may call into the
 * store.  A failed batch (whose COMMIT may or may not have landed) empties
 * the ring and marks it invalid; it becomes valid again, empty at base =
 * the committed revision, with the first batch that reads the revision in
 * its own transaction and finds what the writer believes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/hubmetrics.h"
#include "store/store-internal.h"

#define SCHEMA_VERSION 1
/* Requests per transaction: big enough that 64 or more concurrent writers
 * share one fsync, small enough that a batch holds the write lock briefly. */
#define BATCH_MAX 512
/* Events deleted by automatic compaction in one batch, so that catching up
 * on a large backlog (e.g. after lowering event_log_keep) never stalls
 * writes for long. */
#define COMPACT_CHUNK 8192
/* Idle read connections kept open.  More may exist while busy (a reader is
 * never waited for, see reader_take()), but the excess is closed on return. */
#define READERS_IDLE_MAX 32
#define BUSY_TIMEOUT_MS 10000
/* Resources hash into this many store_resource_stamp() counters. */
#define STAMP_SLOTS STORE__STAMP_SLOTS
/* Object cache: lock stripes, and generation slots in each stripe (a write
 * refuses concurrent cache fills of 1/(stripes * slots) of the keys). */
#define CACHE_STRIPES 64
#define CACHE_SLOTS 64
#define CACHE_BUCKETS_MIN 16

enum wreq_kind { WREQ_WRITE, WREQ_COMPACT };

/* One queued request; lives on its caller's stack until `done` is set.
 *
 * How callers sleep: every request is labelled with the number of the batch
 * that will take it, and all callers sleep on one futex word (ack_word) with
 * the label's bit as their FUTEX_WAIT_BITSET mask.  After a commit the writer
 * sets each request's `done` and then wakes the whole batch with a single
 * FUTEX_WAKE_BITSET, without holding any lock: one system call per batch
 * instead of one per caller, so the serial writer thread is not preempted
 * dozens of times by the callers it wakes before it can start the next batch
 * (on a loaded machine that wake loop was a quarter of each batch's time), and
 * callers queued for the next batch (another bit) stay asleep.  Only one
 * batch label is ever waited on besides the running batch's, so 32 bits
 * never alias. */
struct wreq {
	struct wreq *next;
	enum wreq_kind kind;
	const struct store__write *w;   /* WREQ_WRITE */
	size_t keep;                    /* WREQ_COMPACT */
	int result;
	int64_t rev;    /* write: its revision; compact: the new compacted rev */
	char *text;     /* write: the rendered text, kept for the cache and ring */
	size_t len;
	enum store_event_type type;     /* write: the event it made */
	bool cache_pending;     /* its cache slot is marked pending */
	_Atomic uint32_t batch; /* the batch that takes it (qmu; the writer relabels) */
	_Atomic uint32_t done;  /* set by the writer; the last touch of the request */
};

enum { LIST_RESOURCE = 1, LIST_NS = 2, LIST_AFTER = 4, LIST_VARIANTS = 8 };
enum { EV_RESOURCE = 1, EV_NS = 2, EV_VARIANTS = 4 };

/* A read-only connection with its statements, prepared on first use. */
struct reader {
	struct reader *next;
	sqlite3 *db;
	sqlite3_stmt *get, *begin, *end, *meta;
	sqlite3_stmt *list[LIST_VARIANTS];
	sqlite3_stmt *events[EV_VARIANTS];
};

/* One cached object.  The key is "resource\0ns\0name\0". */
struct centry {
	struct centry *hnext;           /* hash chain */
	struct centry *newer, *older;   /* the stripe's LRU list */
	uint64_t hash;
	int64_t rev;
	char *json;                     /* owned, NUL at [len] */
	size_t len;
	size_t cost;                    /* bytes charged against the budget */
	size_t klen;
	char key[];
};

/* One event in the ring, in one allocation: json (NUL at [len]) and then
 * "resource\0ns\0name\0".  The ring holds one reference and each reader
 * that is about to visit it one more; the last to let go frees it. */
struct ringev {
	_Atomic uint32_t refs;
	enum store_event_type type;
	int64_t rev;
	struct ringev *dnext;           /* the writer's list of evicted events */
	char *resource, *ns, *name;     /* point into buf */
	size_t len;
	size_t cost;                    /* bytes charged against the bound */
	char buf[];
};

/* The event ring.  Everything is guarded by mu; only the writer thread
 * changes it.  While valid, slot[(head + i) % cap] holds revision
 * base + 1 + i for i < count, and compacted is the compacted revision of
 * the commit that base + count belongs to. */
struct evring {
	pthread_mutex_t mu;
	bool on;                        /* fixed at open */
	bool valid;
	struct ringev **slot;
	size_t cap, head, count, bytes;
	size_t max_events, max_bytes;   /* fixed at open */
	int64_t base, compacted;
};

/* Everything in a stripe is guarded by its mu.  gen[i] is bumped by every
 * change of pending[i], which counts writes to slot i being committed. */
struct cstripe {
	_Alignas(64) pthread_mutex_t mu;
	struct centry **tab;
	size_t tabsize, count, bytes;
	struct centry *newest, *oldest;
	uint64_t hits, misses;
	uint64_t gen[CACHE_SLOTS];
	uint32_t pending[CACHE_SLOTS];
};

struct sq {
	struct store base;
	char *path;
	int lock_fd;            /* flock()ed PATH-lock: one process per database */
	struct store_options opts;

	/* The object cache (NULL when turned off); budget is per stripe. */
	struct cstripe *cache;
	size_t cache_budget;
	store__get_hook_fn get_hook;
	void *get_hook_ud;

	struct evring ring;
	_Atomic uint64_t ring_hits, ring_misses;

	/* Used only by the writer thread once open returned. */
	sqlite3 *wdb;
	sqlite3_stmt *w_begin, *w_commit, *w_rollback, *w_getrev, *w_insert, *w_update,
		*w_delete, *w_event, *w_setmeta, *w_getmeta, *w_compact;
	int64_t w_rev;          /* committed revision */
	int64_t w_compacted;    /* committed compacted revision */
	pthread_t writer;

	/* The request queue. */
	pthread_mutex_t qmu;
	pthread_cond_t qcond;
	struct wreq *qhead, *qtail;
	size_t qlen;
	bool stopping;
	uint32_t next_batch;    /* the label of the batch that takes the queue */
	_Atomic uint32_t ack_word;      /* futex: bumped after each batch */

	/* store_resource_stamp(): bumped by the writer right after each
	 * COMMIT for every resource the batch wrote, before the commit is
	 * published or acknowledged. */
	_Atomic uint64_t stamps[STAMP_SLOTS];

	/* Published after each commit, for lock-free reads. */
	_Atomic int64_t rev;
	_Atomic int64_t compacted;
	_Atomic uint64_t n_commits, n_writes;
	_Atomic size_t max_batch;

	/* store_wait(): rev changes and wake_gen bumps are broadcast on wcond. */
	pthread_mutex_t wmu;
	pthread_cond_t wcond;
	uint64_t wake_gen;

	pthread_mutex_t rmu;
	struct reader *ridle;
	size_t nidle;

	/* Checkpoints run on their own connection and thread: a checkpoint
	 * copies the WAL into the database file and syncs it, which would
	 * otherwise stall whichever commit crossed SQLite's auto-checkpoint
	 * threshold and show up as the writers' tail latency. */
	sqlite3 *cdb;
	pthread_t ckpt;
	bool ckpt_started, ckpt_stop;
	uint64_t ckpt_pending;
	pthread_mutex_t cmu;
	pthread_cond_t ccond;
};

static struct sq *to_sq(store *s)
{
	return (struct sq *)s;
}

static int sql_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return 0;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_NOTADB:
		return -EPROTO;
	case SQLITE_CORRUPT:
		return -EUCLEAN;
	default:
		return -EIO;
	}
}

static int prep(sqlite3 *db, sqlite3_stmt **slot, const char *sql)
{
	if (*slot)
		return 0;
	return sql_errno(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL));
}

/* Run a statement that returns no rows, and reset it for the next use. */
static int step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : sql_errno(rc ? rc : SQLITE_ERROR);
}

static int exec(sqlite3 *db, const char *sql)
{
	return sql_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

static void bind_key(sqlite3_stmt *st, int first, const char *resource, const char *ns,
		     const char *name)
{
	sqlite3_bind_text(st, first, resource, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, first + 1, ns, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, first + 2, name, -1, SQLITE_STATIC);
}

/* ---- object cache ----------------------------------------------------- */

/* A key in its cached form with its hash: FNV-1a, then splitmix64's
 * finalizer, so that stripe, slot and bucket can each take their own bits.
 * Key parts are at most STORE_MAX_KEY bytes (store.c checks). */
struct ckey {
	uint64_t hash;
	size_t len;
	char buf[3 * (STORE_MAX_KEY + 1)];
};

static void ckey_init(struct ckey *k, const char *resource, const char *ns, const char *name)
{
	size_t a = strlen(resource) + 1, b = strlen(ns) + 1, c = strlen(name) + 1, i;
	uint64_t h = 14695981039346656037ull;

	memcpy(k->buf, resource, a);
	memcpy(k->buf + a, ns, b);
	memcpy(k->buf + a + b, name, c);
	k->len = a + b + c;
	for (i = 0; i < k->len; i++)
		h = (h ^ (unsigned char)k->buf[i]) * 1099511628211ull;
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	k->hash = h ^ (h >> 31);
}

static struct cstripe *cache_stripe(struct sq *q, uint64_t hash)
{
	return &q->cache[hash % CACHE_STRIPES];
}

static size_t cache_slot(uint64_t hash)
{
	return (size_t)(hash / CACHE_STRIPES) % CACHE_SLOTS;
}

static size_t cache_bucket(const struct cstripe *st, uint64_t hash)
{
	return (size_t)(hash >> 32) & (st->tabsize - 1);
}

/* A new entry for key k owning json (NUL at [len]), or NULL when it could
 * never fit the budget or memory ran out (json is then not taken). */
static struct centry *centry_new(const struct sq *q, const struct ckey *k, int64_t rev,
				 char *json, size_t len)
{
	size_t cost = sizeof(struct centry) + k->len + len + 1;
	struct centry *e;

	if (cost > q->cache_budget)
		return NULL;
	e = malloc(sizeof(*e) + k->len);
	if (!e)
		return NULL;
	memset(e, 0, sizeof(*e));
	e->hash = k->hash;
	e->rev = rev;
	e->json = json;
	e->len = len;
	e->cost = cost;
	e->klen = k->len;
	memcpy(e->key, k->buf, k->len);
	return e;
}

/* Free a list of entries chained by hnext. */
static void centry_free_list(struct centry *e)
{
	while (e) {
		struct centry *next = e->hnext;

		free(e->json);
		free(e);
		e = next;
	}
}

/* The chain link that points at the entry for k, or NULL. */
static struct centry **cache_find(struct cstripe *st, uint64_t hash, const char *key,
				  size_t klen)
{
	struct centry **pp = &st->tab[cache_bucket(st, hash)];

	for (; *pp; pp = &(*pp)->hnext)
		if ((*pp)->hash == hash && (*pp)->klen == klen &&
		    memcmp((*pp)->key, key, klen) == 0)
			return pp;
	return NULL;
}

static void lru_unlink(struct cstripe *st, struct centry *e)
{
	if (e->newer)
		e->newer->older = e->older;
	else
		st->newest = e->older;
	if (e->older)
		e->older->newer = e->newer;
	else
		st->oldest = e->newer;
}

static void lru_push(struct cstripe *st, struct centry *e)
{
	e->newer = NULL;
	e->older = st->newest;
	if (st->newest)
		st->newest->newer = e;
	else
		st->oldest = e;
	st->newest = e;
}

/* Take *pp out of the stripe and onto the *dead list (freed after unlock). */
static void cache_unlink(struct cstripe *st, struct centry **pp, struct centry **dead)
{
	struct centry *e = *pp;

	*pp = e->hnext;
	lru_unlink(st, e);
	st->count--;
	st->bytes -= e->cost;
	e->hnext = *dead;
	*dead = e;
}

/* Double the table once it holds more entries than buckets; if memory is
 * short the chains just grow longer. */
static void cache_grow(struct cstripe *st)
{
	size_t n = st->tabsize * 2, i;
	struct centry **tab, *e;

	if (st->count <= st->tabsize || n > SIZE_MAX / sizeof(*tab))
		return;
	tab = calloc(n, sizeof(*tab));
	if (!tab)
		return;
	for (i = 0; i < st->tabsize; i++) {
		while ((e = st->tab[i])) {
			size_t b = (size_t)(e->hash >> 32) & (n - 1);

			st->tab[i] = e->hnext;
			e->hnext = tab[b];
			tab[b] = e;
		}
	}
	free(st->tab);
	st->tab = tab;
	st->tabsize = n;
}

/* Add e (its key absent from the stripe, its cost within the budget) as the
 * newest entry, evicting the least recently used ones beyond the budget. */
static void cache_link(struct sq *q, struct cstripe *st, struct centry *e, struct centry **dead)
{
	size_t b = cache_bucket(st, e->hash);

	e->hnext = st->tab[b];
	st->tab[b] = e;
	lru_push(st, e);
	st->count++;
	st->bytes += e->cost;
	while (st->bytes > q->cache_budget && st->oldest != e) {
		struct centry *old = st->oldest;

		cache_unlink(st, cache_find(st, old->hash, old->key, old->klen), dead);
	}
	cache_grow(st);
}

/* Answer a read from the cache: 1 with o's rev, json and len filled in, or
 * 0 on a miss with *ret_gen set for cache_offer(), or -ENOMEM. */
static int cache_lookup(struct sq *q, const struct ckey *k, store_obj *o, uint64_t *ret_gen)
{
	struct cstripe *st = cache_stripe(q, k->hash);
	size_t slot = cache_slot(k->hash);
	struct centry **pp, *e;
	int rc = 0;

	pthread_mutex_lock(&st->mu);
	pp = cache_find(st, k->hash, k->buf, k->len);
	/* A pending slot's entries may be older than the committed rows. */
	if (pp && !st->pending[slot]) {
		e = *pp;
		o->json = malloc(e->len + 1);
		if (o->json) {
			memcpy(o->json, e->json, e->len + 1);
			o->len = e->len;
			o->rev = e->rev;
			if (st->newest != e) {
				lru_unlink(st, e);
				lru_push(st, e);
			}
			st->hits++;
			rc = 1;
		} else {
			rc = -ENOMEM;
		}
	} else {
		st->misses++;
		*ret_gen = st->gen[slot];
	}
	pthread_mutex_unlock(&st->mu);
	return rc;
}

/* Offer what a missed read found in SQLite, read after cache_lookup()
 * returned gen.  Taken only if no write to the slot was committed or begun
 * since, and only over an older revision. */
static void cache_offer(struct sq *q, const struct ckey *k, uint64_t gen, int64_t rev,
			const char *json, size_t len)
{
	struct cstripe *st = cache_stripe(q, k->hash);
	size_t slot = cache_slot(k->hash);
	struct centry *e, **pp, *dead = NULL;
	char *copy;

	if (sizeof(struct centry) + k->len + len + 1 > q->cache_budget)
		return;
	copy = malloc(len + 1);
	if (!copy)
		return;
	memcpy(copy, json, len);
	copy[len] = '\0';
	e = centry_new(q, k, rev, copy, len);
	if (!e) {
		free(copy);
		return;
	}
	pthread_mutex_lock(&st->mu);
	if (st->gen[slot] == gen && !st->pending[slot]) {
		pp = cache_find(st, k->hash, k->buf, k->len);
		if (!pp || (*pp)->rev < rev) {
			if (pp)
				cache_unlink(st, pp, &dead);
			cache_link(q, st, e, &dead);
			e = NULL;
		}
	}
	pthread_mutex_unlock(&st->mu);
	if (e) {
		e->hnext = dead;
		dead = e;
	}
	centry_free_list(dead);
}

/* Just before COMMIT: mark the slot of every key the batch changed, so
 * that from now until cache_write_end() nothing is answered from or filled
 * into it. */
static void cache_write_begin(struct sq *q, struct wreq **batch, size_t n)
{
	struct ckey k;
	size_t i;

	if (!q->cache)
		return;
	for (i = 0; i < n; i++) {
		struct wreq *r = batch[i];
		struct cstripe *st;
		size_t slot;

		if (r->kind != WREQ_WRITE || r->result != 0)
			continue;
		ckey_init(&k, r->w->resource, r->w->ns, r->w->name);
		st = cache_stripe(q, k.hash);
		slot = cache_slot(k.hash);
		pthread_mutex_lock(&st->mu);
		st->pending[slot]++;
		st->gen[slot]++;
		pthread_mutex_unlock(&st->mu);
		r->cache_pending = true;
	}
}

/* Right after COMMIT (or its failure), before anyone hears of the batch:
 * store each write's outcome in batch order, so the last write to a key
 * wins (a delete's text is its DELETED event, never cached), and unmark
 * its slot.  When the batch failed, every key it carried
 * is dropped, since a failed COMMIT may still have landed.  Consumes the
 * kept texts. */
static void cache_write_end(struct sq *q, struct wreq **batch, size_t n, bool failed)
{
	struct ckey k;
	size_t i;

	for (i = 0; i < n; i++) {
		struct wreq *r = batch[i];
		struct centry *e = NULL, **pp, *dead = NULL;
		struct cstripe *st;
		size_t slot;

		if (r->kind != WREQ_WRITE)
			continue;
		if (!q->cache || (!failed && !r->cache_pending)) {
			free(r->text);
			r->text = NULL;
			continue;
		}
		ckey_init(&k, r->w->resource, r->w->ns, r->w->name);
		st = cache_stripe(q, k.hash);
		slot = cache_slot(k.hash);
		if (!failed && r->text && r->w->op != STORE__DELETE) {
			e = centry_new(q, &k, r->rev, r->text, r->len);
			if (!e)
				free(r->text);
		} else {
			free(r->text);
		}
		r->text = NULL;
		pthread_mutex_lock(&st->mu);
		pp = cache_find(st, k.hash, k.buf, k.len);
		if (pp)
			cache_unlink(st, pp, &dead);
		if (e)
			cache_link(q, st, e, &dead);
		if (r->cache_pending)
			st->pending[slot]--;
		st->gen[slot]++;
		pthread_mutex_unlock(&st->mu);
		r->cache_pending = false;
		centry_free_list(dead);
	}
}

static void cache_stats(struct sq *q, struct store_stats *ret)
{
	size_t i;

	for (i = 0; q->cache && i < CACHE_STRIPES; i++) {
		struct cstripe *st = &q->cache[i];

		pthread_mutex_lock(&st->mu);
		ret->cache_hits += st->hits;
		ret->cache_misses += st->misses;
		ret->cache_bytes += st->bytes;
		ret->cache_entries += st->count;
		pthread_mutex_unlock(&st->mu);
	}
}

static void cache_free(struct sq *q)
{
	size_t i, j;

	if (!q->cache)
		return;
	for (i = 0; i < CACHE_STRIPES; i++) {
		struct cstripe *st = &q->cache[i];

		for (j = 0; st->tab && j < st->tabsize; j++)
			centry_free_list(st->tab[j]);
		free(st->tab);
		pthread_mutex_destroy(&st->mu);
	}
	free(q->cache);
	q->cache = NULL;
}

static int cache_init(struct sq *q)
{
	size_t bytes = q->opts.cache_bytes ? q->opts.cache_bytes : STORE_CACHE_BYTES_DEFAULT;
	size_t i;

	if (q->opts.cache_off)
		return 0;
	q->cache = aligned_alloc(_Alignof(struct cstripe), CACHE_STRIPES * sizeof(struct cstripe));
	if (!q->cache)
		return -ENOMEM;
	memset(q->cache, 0, CACHE_STRIPES * sizeof(struct cstripe));
	q->cache_budget = bytes / CACHE_STRIPES;
	for (i = 0; i < CACHE_STRIPES; i++)
		pthread_mutex_init(&q->cache[i].mu, NULL);
	for (i = 0; i < CACHE_STRIPES; i++) {
		struct cstripe *st = &q->cache[i];

		st->tabsize = CACHE_BUCKETS_MIN;
		st->tab = calloc(st->tabsize, sizeof(*st->tab));
		if (!st->tab) {
			cache_free(q);
			return -ENOMEM;
		}
	}
	return 0;
}

void store__sqlite_set_get_hook(store *s, store__get_hook_fn fn, void *userdata)
{
	struct sq *q = to_sq(s);

	q->get_hook = fn;
	q->get_hook_ud = userdata;
}

/* ---- event ring ------------------------------------------------------- */

/* The ring's first array; it doubles up to max_events as it fills. */
#define RING_CAP_MIN 64
/* Matching events a reader collects on its stack before it allocates. */
#define RING_STACK 64
/* ring_events(): not answered, read SQLite instead. */
#define RING_MISS 1

static void ringev_put(struct ringev *e)
{
	if (atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
		free(e);
}

/* Drop the ring's reference to each event on a dnext list. */
static void ringev_put_list(struct ringev *e)
{
	while (e) {
		struct ringev *next = e->dnext;

		ringev_put(e);
		e = next;
	}
}

/* The event of a committed write, with its own copy of the text and key,
 * or NULL when memory ran out. */
static struct ringev *ringev_new(const struct wreq *r)
{
	const struct store__write *w = r->w;
	size_t a = strlen(w->resource) + 1, b = strlen(w->ns) + 1, c = strlen(w->name) + 1;
	size_t n = r->len + 1 + a + b + c;
	struct ringev *e = malloc(sizeof(*e) + n);

	if (!e)
		return NULL;
	atomic_init(&e->refs, 1);
	e->type = r->type;
	e->rev = r->rev;
	e->dnext = NULL;
	e->len = r->len;
	e->cost = sizeof(*e) + n;
	memcpy(e->buf, r->text, r->len);
	e->buf[r->len] = '\0';
	e->resource = e->buf + r->len + 1;
	memcpy(e->resource, w->resource, a);
	e->ns = e->resource + a;
	memcpy(e->ns, w->ns, b);
	e->name = e->ns + b;
	memcpy(e->name, w->name, c);
	return e;
}

/* Take the oldest event out onto *dead (mu held); base moves past it. */
static void ring_pop(struct evring *g, struct ringev **dead)
{
	struct ringev *e = g->slot[g->head];

	g->slot[g->head] = NULL;
	g->head = (g->head + 1) % g->cap;
	g->count--;
	g->bytes -= e->cost;
	g->base = e->rev;
	e->dnext = *dead;
	*dead = e;
}

/* Double the array (mu held), up to max_events; false when it may not or
 * memory ran out. */
static bool ring_grow(struct evring *g)
{
	size_t n = g->cap ? g->cap * 2 : RING_CAP_MIN, i;
	struct ringev **slot;

	if (n > g->max_events)
		n = g->max_events;
	if (n <= g->cap || n > SIZE_MAX / sizeof(*slot))
		return false;
	slot = calloc(n, sizeof(*slot));
	if (!slot)
		return false;
	for (i = 0; i < g->count; i++)
		slot[i] = g->slot[(g->head + i) % g->cap];
	free(g->slot);
	g->slot = slot;
	g->cap = n;
	g->head = 0;
	return true;
}

/* Append the event of revision base + count + 1 (mu held), then drop the
 * oldest until both bounds hold, which drops e itself when it alone is
 * over the byte bound: the ring is then empty and starts after it. */
static void ring_push(struct evring *g, struct ringev *e, struct ringev **dead)
{
	if (g->count == g->cap && !ring_grow(g)) {
		if (!g->count) {
			g->base = e->rev;
			e->dnext = *dead;
			*dead = e;
			return;
		}
		ring_pop(g, dead);
	}
	g->slot[(g->head + g->count) % g->cap] = e;
	g->count++;
	g->bytes += e->cost;
	while (g->count && (g->count > g->max_events || g->bytes > g->max_bytes))
		ring_pop(g, dead);
}

/* Empty the ring and stop answering from it (mu held). */
static void ring_clear(struct evring *g, struct ringev **dead)
{
	while (g->count)
		ring_pop(g, dead);
	g->valid = false;
}

/* After a failed batch: the ring may lack a commit that landed, so it
 * answers nothing until ring_commit() makes it valid again. */
static void ring_invalidate(struct sq *q)
{
	struct evring *g = &q->ring;
	struct ringev *dead = NULL;

	if (!g->on || !g->valid)
		return;
	pthread_mutex_lock(&g->mu);
	ring_clear(g, &dead);
	pthread_mutex_unlock(&g->mu);
	ringev_put_list(dead);
}

/* Right after a successful COMMIT, before anyone hears of it: append the
 * event of every write the batch committed and take the batch's compacted
 * revision.  start_rev and end_rev are the committed revisions before and
 * after the batch; revalidate says the batch read start_rev from the
 * database in its own transaction, so an invalid ring may start there.
 * An event that cannot be allocated drops the ring's older events: the
 * ring then starts after it, and never has a hole. */
static void ring_commit(struct sq *q, struct wreq **batch, size_t n, int64_t start_rev,
			int64_t end_rev, int64_t compacted, bool revalidate)
{
	struct evring *g = &q->ring;
	struct ringev *ev[BATCH_MAX], *dead = NULL;
	int64_t gap = 0;
	size_t i, m = 0;

	if (!g->on || (!g->valid && !revalidate))
		return;
	for (i = 0; i < n; i++) {
		struct wreq *r = batch[i];

		if (r->kind != WREQ_WRITE || r->result != 0)
			continue;
		ev[m] = r->text ? ringev_new(r) : NULL;
		if (ev[m])
			m++;
		else
			gap = r->rev;
	}
	pthread_mutex_lock(&g->mu);
	if (!g->valid) {
		g->valid = true;
		g->base = start_rev;
	}
	if (gap) {
		while (g->count)
			ring_pop(g, &dead);
		g->base = gap;
	}
	for (i = 0; i < m; i++) {
		if (ev[i]->rev > g->base) {
			ring_push(g, ev[i], &dead);
		} else {
			ev[i]->dnext = dead;
			dead = ev[i];
		}
	}
	g->compacted = compacted;
	/* Cannot happen while revisions are contiguous; if it ever did, an
	 * answer from SQLite beats a wrong one. */
	if (g->base + (int64_t)g->count != end_rev)
		ring_clear(g, &dead);
	pthread_mutex_unlock(&g->mu);
	ringev_put_list(dead);
}

/* store_events() from the ring: RING_MISS when it does not hold every
 * revision after after_rev; otherwise the call's result, as sq_events()
 * would give it.  Visits happen after the mutex is released, on events
 * the call holds a reference to. */
static int ring_events(struct sq *q, const char *resource, const char *ns, int64_t after_rev,
		       size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last)
{
	struct evring *g = &q->ring;
	struct ringev *stack[RING_STACK], **list = stack;
	size_t n = 0, want, k, i, count = 0;
	int64_t rev, last = 0;
	int res = 0;

	pthread_mutex_lock(&g->mu);
	if (!g->valid || after_rev < g->base) {
		pthread_mutex_unlock(&g->mu);
		return RING_MISS;
	}
	if (after_rev < g->compacted) {
		pthread_mutex_unlock(&g->mu);
		return -ERANGE;
	}
	rev = g->base + (int64_t)g->count;
	if (after_rev < rev) {
		k = (size_t)(after_rev - g->base);
		want = g->count - k;
		if (max && max < want)
			want = max;
		if (want > RING_STACK) {
			list = malloc(want * sizeof(*list));
			if (!list) {
				pthread_mutex_unlock(&g->mu);
				return RING_MISS;
			}
		}
		for (; k < g->count && n < want; k++) {
			struct ringev *e = g->slot[(g->head + k) % g->cap];

			if ((resource && strcmp(e->resource, resource)) ||
			    (ns && strcmp(e->ns, ns)))
				continue;
			atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
			list[n++] = e;
		}
	}
	pthread_mutex_unlock(&g->mu);

	for (i = 0; i < n && !res; i++) {
		struct ringev *e = list[i];
		store_obj o = {
			.resource = e->resource, .ns = e->ns, .name = e->name,
			.rev = e->rev, .type = e->type, .json = e->buf, .len = e->len,
		};
		int v = visit(&o, userdata);

		count++;
		last = e->rev;
		if (v)
			res = v < 0 ? v : 1;
	}
	for (i = 0; i < n; i++)
		ringev_put(list[i]);
	if (list != stack)
		free(list);
	if (res < 0)
		return res;
	if (ret_last) {
		/* The same rule as sq_events(), with the ring's newest
		 * revision as the snapshot's. */
		if (res == 1 || (max && count == max))
			*ret_last = last;
		else
			*ret_last = rev > after_rev ? rev : after_rev;
	}
	return 0;
}

static void ring_stats(struct sq *q, struct store_stats *ret)
{
	struct evring *g = &q->ring;

	ret->event_ring_hits = atomic_load_explicit(&q->ring_hits, memory_order_relaxed);
	ret->event_ring_misses = atomic_load_explicit(&q->ring_misses, memory_order_relaxed);
	pthread_mutex_lock(&g->mu);
	ret->event_ring_events = g->count;
	ret->event_ring_bytes = g->bytes;
	pthread_mutex_unlock(&g->mu);
}

static void ring_free(struct evring *g)
{
	struct ringev *dead = NULL;

	if (g->slot)
		ring_clear(g, &dead);
	ringev_put_list(dead);
	free(g->slot);
	g->slot = NULL;
	pthread_mutex_destroy(&g->mu);
}

/* ---- writer side ------------------------------------------------------ */

/* Read the current and compacted revision through the writer connection. */
static int writer_read_meta(struct sq *q, int64_t *ret_rev, int64_t *ret_compacted)
{
	sqlite3_stmt *st = q->w_getmeta;
	int rc = sqlite3_step(st);
	int r = 0;

	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER &&
	    sqlite3_column_type(st, 1) == SQLITE_INTEGER) {
		*ret_rev = sqlite3_column_int64(st, 0);
		*ret_compacted = sqlite3_column_int64(st, 1);
	} else {
		r = rc == SQLITE_ROW ? -EPROTO : sql_errno(rc ? rc : SQLITE_ERROR);
	}
	sqlite3_reset(st);
	return r;
}

/* Apply one write inside the open transaction at revision `rev`.  Returns a
 * negative errno only when the transaction itself is broken (the batch
 * fails); the request's own outcome goes to r->result.  The text stays in
 * r->text for the event ring, and a created or updated object's for the
 * object cache. */
static int apply_write(struct sq *q, struct wreq *r, int64_t rev)
{
	const struct store__write *w = r->w;
	int *ret_result = &r->result;
	sqlite3_stmt *st = q->w_getrev;
	int64_t cur = 0;
	bool exists;
	size_t len = SIZE_MAX;
	char *text;
	int rc, type;

	bind_key(st, 1, w->resource, w->ns, w->name);
	rc = sqlite3_step(st);
	exists = rc == SQLITE_ROW;
	if (exists)
		cur = sqlite3_column_int64(st, 0);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return sql_errno(rc);

	if (w->op == STORE__CREATE && exists) {
		*ret_result = -EEXIST;
		return 0;
	}
	if (w->op != STORE__CREATE && !exists) {
		*ret_result = -ENOENT;
		return 0;
	}
	if (w->op != STORE__CREATE && w->expect_rev > 0 && w->expect_rev != cur) {
		*ret_result = -ESTALE;
		return 0;
	}

	text = w->render(rev, &len, w->userdata);
	if (!text) {
		*ret_result = -ECANCELED;
		return 0;
	}
	/* A callback that forgot the length still produced a C string. */
	if (len == SIZE_MAX)
		len = strlen(text);
	if (len > STORE_MAX_JSON) {
		free(text);
		*ret_result = -EFBIG;
		return 0;
	}
	/* What is stored ends at len; the cached copy must end there too. */
	text[len] = '\0';

	switch (w->op) {
	case STORE__CREATE:
		st = q->w_insert;
		bind_key(st, 1, w->resource, w->ns, w->name);
		sqlite3_bind_int64(st, 4, rev);
		sqlite3_bind_text64(st, 5, text, len, SQLITE_STATIC, SQLITE_UTF8);
		type = STORE_ADDED;
		break;
	case STORE__UPDATE:
		st = q->w_update;
		bind_key(st, 1, w->resource, w->ns, w->name);
		sqlite3_bind_int64(st, 4, rev);
		sqlite3_bind_text64(st, 5, text, len, SQLITE_STATIC, SQLITE_UTF8);
		type = STORE_MODIFIED;
		break;
	default:
		st = q->w_delete;
		bind_key(st, 1, w->resource, w->ns, w->name);
		type = STORE_DELETED;
		break;
	}
	rc = step_done(st);
	if (!rc) {
		st = q->w_event;
		sqlite3_bind_int64(st, 1, rev);
		bind_key(st, 2, w->resource, w->ns, w->name);
		sqlite3_bind_int(st, 5, type);
		sqlite3_bind_text64(st, 6, text, len, SQLITE_STATIC, SQLITE_UTF8);
		rc = step_done(st);
	}
	if (!rc && (q->ring.on || (q->cache && w->op != STORE__DELETE))) {
		r->text = text;
		r->len = len;
		r->type = type;
	} else {
		free(text);
	}
	if (!rc)
		*ret_result = 0;
	return rc;
}

/* Delete events up to `target` (no further than `limit` past *compacted). */
static int compact_to(struct sq *q, int64_t target, int64_t limit, int64_t *compacted)
{
	int rc;

	if (limit > 0 && target > *compacted + limit)
		target = *compacted + limit;
	if (target <= *compacted)
		return 0;
	sqlite3_bind_int64(q->w_compact, 1, target);
	rc = step_done(q->w_compact);
	if (!rc)
		*compacted = target;
	return rc;
}

static void publish(struct sq *q, int64_t rev, int64_t compacted)
{
	atomic_store(&q->compacted, compacted);
	pthread_mutex_lock(&q->wmu);
	atomic_store(&q->rev, rev);
	pthread_cond_broadcast(&q->wcond);
	pthread_mutex_unlock(&q->wmu);
}

static size_t stamp_slot(const char *resource)
{
	return store__stamp_slot(resource);
}

static void futex_wait_bits(_Atomic uint32_t *word, uint32_t val, uint32_t bits)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET_PRIVATE, val, NULL, NULL, bits);
}

static void futex_wake_bits(_Atomic uint32_t *word, uint32_t bits)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, bits);
}

static uint32_t batch_bit(uint32_t label)
{
	return 1u << (label % 32);
}

static void run_batch(struct sq *q, struct wreq **batch, size_t n, uint32_t label)
{
	int64_t rev = q->w_rev, compacted = q->w_compacted;
	int64_t keep = (int64_t)q->opts.event_log_keep;
	uint64_t acked = 0;
	bool ring_revalidate = false;
	double t0 = hm_now();
	int fatal;
	size_t i;

	fatal = step_done(q->w_begin);

	/* After a failed batch the event ring starts again only from a
	 * revision read under the write lock, so that it can never lack a
	 * commit whose COMMIT failed but landed. */
	if (!fatal && q->ring.on && !q->ring.valid) {
		int64_t mrev, mcompacted;

		ring_revalidate = writer_read_meta(q, &mrev, &mcompacted) == 0 &&
				  mrev == q->w_rev && mcompacted == q->w_compacted;
	}

	/* Amortized compaction: act only once the log is a slack (1/16 of
	 * keep) beyond its bound, then trim it back to exactly `keep`. */
	if (!fatal && rev - compacted > keep + keep / 16)
		fatal = compact_to(q, rev - keep, COMPACT_CHUNK, &compacted);

	for (i = 0; i < n && !fatal; i++) {
		struct wreq *r = batch[i];

		if (r->kind == WREQ_COMPACT) {
			int64_t target = r->keep >= (size_t)rev ? 0 : rev - (int64_t)r->keep;

			fatal = compact_to(q, target, 0, &compacted);
			r->result = 0;
			continue;
		}
		fatal = apply_write(q, r, rev + 1);
		if (!fatal && r->result == 0)
			r->rev = ++rev;
	}

	if (!fatal && (rev != q->w_rev || compacted != q->w_compacted)) {
		sqlite3_bind_int64(q->w_setmeta, 1, rev);
		sqlite3_bind_int64(q->w_setmeta, 2, compacted);
		fatal = step_done(q->w_setmeta);
	}
	if (!fatal) {
		cache_write_begin(q, batch, n);
		fatal = step_done(q->w_commit);
	}
	/* Before anyone hears of the commit (stamps, publish, acks); even
	 * after a failure, as a failed COMMIT may have landed (see below).
	 * The cache goes first: a stamp that has not moved since before a
	 * store_get() vouches for the answer, also one from the cache.  The
	 * ring copies the texts before cache_write_end() consumes them. */
	if (fatal)
		ring_invalidate(q);
	else
		ring_commit(q, batch, n, q->w_rev, rev, compacted, ring_revalidate);
	cache_write_end(q, batch, n, fatal != 0);
	for (i = 0; i < n; i++)
		if (batch[i]->kind == WREQ_WRITE)
			atomic_fetch_add(&q->stamps[stamp_slot(batch[i]->w->resource)], 1);

	if (fatal) {
		/* Some failures roll the transaction back by themselves. */
		if (!sqlite3_get_autocommit(q->wdb))
			step_done(q->w_rollback);
		/* Re-read what is really committed, so that a revision is
		 * never handed out twice even if the failed COMMIT did land. */
		if (writer_read_meta(q, &rev, &compacted) == 0 && rev >= q->w_rev) {
			q->w_rev = rev;
			q->w_compacted = compacted;
			publish(q, rev, compacted);
		}
	} else {
		q->w_rev = rev;
		q->w_compacted = compacted;
		atomic_fetch_add(&q->n_commits, 1);
		pthread_mutex_lock(&q->cmu);
		q->ckpt_pending++;
		pthread_mutex_unlock(&q->cmu);
		if (n > atomic_load(&q->max_batch))
			atomic_store(&q->max_batch, n);
		publish(q, rev, compacted);
		hm_store_commit(hm_now() - t0, n);
	}

	for (i = 0; i < n; i++) {
		struct wreq *r = batch[i];

		if (fatal)
			r->result = -EIO;
		else if (r->kind == WREQ_COMPACT)
			r->rev = compacted;
		else if (r->result == 0)
			acked++;
	}
	atomic_fetch_add(&q->n_writes, acked);
	/* Nothing of batch[i] may be touched once it is done. */
	for (i = 0; i < n; i++)
		atomic_store_explicit(&batch[i]->done, 1, memory_order_release);
	atomic_fetch_add(&q->ack_word, 1);
	futex_wake_bits(&q->ack_word, batch_bit(label));
}

#define CKPT_INTERVAL_MS 200

static void *ckpt_main(void *arg)
{
	struct sq *q = arg;

	pthread_setname_np(pthread_self(), "ah-checkpoint");
	pthread_mutex_lock(&q->cmu);
	while (!q->ckpt_stop) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += CKPT_INTERVAL_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&q->ccond, &q->cmu, &ts);
		if (q->ckpt_stop || !q->ckpt_pending)
			continue;
		q->ckpt_pending = 0;
		pthread_mutex_unlock(&q->cmu);
		/* PASSIVE never blocks the writer or readers; whatever it could
		 * not copy this time is copied next time. */
		sqlite3_wal_checkpoint_v2(q->cdb, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
		pthread_mutex_lock(&q->cmu);
	}
	pthread_mutex_unlock(&q->cmu);
	return NULL;
}

static int ckpt_start(struct sq *q)
{
	int rc = sqlite3_open_v2(q->path, &q->cdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK)
		return q->cdb ? sql_errno(rc) : -ENOMEM;
	sqlite3_busy_timeout(q->cdb, BUSY_TIMEOUT_MS);
	rc = exec(q->cdb, q->opts.sync_full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
	if (rc)
		return rc;
	rc = -pthread_create(&q->ckpt, NULL, ckpt_main, q);
	if (!rc)
		q->ckpt_started = true;
	return rc;
}

static void ckpt_stop(struct sq *q)
{
	if (q->ckpt_started) {
		pthread_mutex_lock(&q->cmu);
		q->ckpt_stop = true;
		pthread_cond_signal(&q->ccond);
		pthread_mutex_unlock(&q->cmu);
		pthread_join(q->ckpt, NULL);
		q->ckpt_started = false;
	}
	sqlite3_close(q->cdb);
	q->cdb = NULL;
}

static void *writer_main(void *arg)
{
	struct sq *q = arg;
	struct wreq *batch[BATCH_MAX];

	pthread_setname_np(pthread_self(), "ah-store-writer");
	for (;;) {
		size_t n = 0;
		uint32_t label;
		struct wreq *rest;

		pthread_mutex_lock(&q->qmu);
		while (!q->qhead && !q->stopping)
			pthread_cond_wait(&q->qcond, &q->qmu);
		/* On close, drain what is queued before leaving. */
		if (!q->qhead) {
			pthread_mutex_unlock(&q->qmu);
			break;
		}
		while (q->qhead && n < BATCH_MAX) {
			batch[n++] = q->qhead;
			q->qhead = q->qhead->next;
		}
		if (!q->qhead)
			q->qtail = NULL;
		q->qlen -= n;
		label = q->next_batch++;
		/* What did not fit waits for the next batch. */
		for (rest = q->qhead; rest; rest = rest->next)
			atomic_store(&rest->batch, q->next_batch);
		pthread_mutex_unlock(&q->qmu);
		run_batch(q, batch, n, label);
	}
	return NULL;
}

/* Queue a request and sleep until the writer has committed it. */
static int submit(struct sq *q, struct wreq *r)
{
	int res;

	r->next = NULL;
	r->result = -EIO;
	atomic_init(&r->done, 0);
	pthread_mutex_lock(&q->qmu);
	if (q->stopping) {
		pthread_mutex_unlock(&q->qmu);
		return -EIO;
	}
	atomic_init(&r->batch, q->next_batch);
	if (q->qtail)
		q->qtail->next = r;
	else
		q->qhead = r;
	q->qtail = r;
	q->qlen++;
	/* The writer sleeps only when it found the queue empty. */
	if (q->qhead == r)
		pthread_cond_signal(&q->qcond);
	pthread_mutex_unlock(&q->qmu);
	for (;;) {
		/* Read the word before `done`: a batch that finishes after
		 * this check bumps the word, so the wait returns at once. */
		uint32_t seen = atomic_load(&q->ack_word);

		if (atomic_load_explicit(&r->done, memory_order_acquire))
			break;
		futex_wait_bits(&q->ack_word, seen, batch_bit(atomic_load(&r->batch)));
	}
	res = r->result;
	return res;
}

static int sq_write(store *s, const struct store__write *w, int64_t *ret_rev)
{
	struct wreq r = { .kind = WREQ_WRITE, .w = w };
	int rc = submit(to_sq(s), &r);

	if (rc == 0 && ret_rev)
		*ret_rev = r.rev;
	return rc;
}

static int64_t sq_compact(store *s, size_t keep)
{
	struct sq *q = to_sq(s);
	struct wreq r = { .kind = WREQ_COMPACT, .keep = keep };

	if (submit(q, &r) != 0)
		return atomic_load(&q->compacted);
	return r.rev;
}

/* ---- read side -------------------------------------------------------- */

static void reader_free(struct reader *r)
{
	size_t i;

	if (!r)
		return;
	sqlite3_finalize(r->get);
	sqlite3_finalize(r->begin);
	sqlite3_finalize(r->end);
	sqlite3_finalize(r->meta);
	for (i = 0; i < LIST_VARIANTS; i++)
		sqlite3_finalize(r->list[i]);
	for (i = 0; i < EV_VARIANTS; i++)
		sqlite3_finalize(r->events[i]);
	sqlite3_close(r->db);
	free(r);
}

/* Take an idle reader or open a new one.  Never blocks waiting for another
 * caller to return one: a visit callback may itself read, and waiting there
 * could deadlock.  The number open is bounded by the number of threads
 * reading at once. */
static int reader_take(struct sq *q, struct reader **ret)
{
	struct reader *r;
	int rc;

	pthread_mutex_lock(&q->rmu);
	r = q->ridle;
	if (r) {
		q->ridle = r->next;
		q->nidle--;
	}
	pthread_mutex_unlock(&q->rmu);
	if (r) {
		*ret = r;
		return 0;
	}

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	rc = sqlite3_open_v2(q->path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(r->db, 1);
		rc = sqlite3_busy_timeout(r->db, BUSY_TIMEOUT_MS);
	}
	if (rc != SQLITE_OK) {
		reader_free(r);
		return sql_errno(rc);
	}
	*ret = r;
	return 0;
}

/* Give a reader back; a reader that saw an error is closed instead, so a
 * half-finished transaction never leaks into the next call. */
static void reader_put(struct sq *q, struct reader *r, bool broken)
{
	if (!broken) {
		pthread_mutex_lock(&q->rmu);
		if (q->nidle < READERS_IDLE_MAX) {
			r->next = q->ridle;
			q->ridle = r;
			q->nidle++;
			r = NULL;
		}
		pthread_mutex_unlock(&q->rmu);
	}
	reader_free(r);
}

/* Open a read transaction and read the snapshot's revisions in it. */
static int read_begin(struct reader *r, int64_t *ret_rev, int64_t *ret_compacted)
{
	int rc;

	rc = prep(r->db, &r->begin, "BEGIN");
	if (!rc)
		rc = prep(r->db, &r->end, "COMMIT");
	if (!rc)
		rc = prep(r->db, &r->meta,
			  "SELECT (SELECT value FROM meta WHERE key = 'rev'),"
			  " (SELECT value FROM meta WHERE key = 'compacted')");
	if (!rc)
		rc = step_done(r->begin);
	if (rc)
		return rc;
	rc = sqlite3_step(r->meta);
	if (rc == SQLITE_ROW) {
		*ret_rev = sqlite3_column_int64(r->meta, 0);
		*ret_compacted = sqlite3_column_int64(r->meta, 1);
		rc = 0;
	} else {
		rc = sql_errno(rc ? rc : SQLITE_ERROR);
	}
	sqlite3_reset(r->meta);
	return rc;
}

static int read_end(struct reader *r)
{
	return step_done(r->end);
}

/* Read one object's rev and text from SQLite into o. */
static int read_object(struct sq *q, const char *resource, const char *ns, const char *name,
		       store_obj *o)
{
	struct reader *r;
	sqlite3_stmt *st;
	const char *text;
	int rc;

	rc = reader_take(q, &r);
	if (rc)
		return rc;
	rc = prep(r->db, &r->get,
		  "SELECT rev, json FROM objects WHERE resource = ?1 AND ns = ?2 AND name = ?3");
	if (rc) {
		reader_put(q, r, true);
		return rc;
	}
	st = r->get;
	bind_key(st, 1, resource, ns, name);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		rc = -ENOENT;
	} else if (rc != SQLITE_ROW) {
		rc = sql_errno(rc);
	} else {
		o->rev = sqlite3_column_int64(st, 0);
		text = (const char *)sqlite3_column_text(st, 1);
		o->len = (size_t)sqlite3_column_bytes(st, 1);
		o->json = malloc(o->len + 1);
		if (!text || !o->json) {
			rc = -ENOMEM;
		} else {
			memcpy(o->json, text, o->len + 1);
			rc = 0;
		}
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	reader_put(q, r, rc != 0 && rc != -ENOENT);
	return rc;
}

/* From the cache when it holds the key; otherwise from SQLite, offering
 * what was read to the cache under the generation taken before the read. */
static int sq_get(store *s, const char *resource, const char *ns, const char *name,
		  store_obj **ret)
{
	struct sq *q = to_sq(s);
	struct ckey key;
	uint64_t gen = 0;
	store_obj *o;
	int rc = 0;

	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->resource = strdup(resource);
	o->ns = strdup(ns);
	o->name = strdup(name);
	if (!o->resource || !o->ns || !o->name)
		rc = -ENOMEM;
	if (!rc && q->cache) {
		ckey_init(&key, resource, ns, name);
		rc = cache_lookup(q, &key, o, &gen);
	}
	/* 0: a miss, or no cache; 1: a hit. */
	if (rc == 0) {
		rc = read_object(q, resource, ns, name, o);
		if (!rc && q->cache) {
			if (q->get_hook)
				q->get_hook(s, o, q->get_hook_ud);
			cache_offer(q, &key, gen, o->rev, o->json, o->len);
		}
	} else if (rc == 1) {
		rc = 0;
	}
	if (rc) {
		store_obj_free(o);
		return rc;
	}
	*ret = o;
	return 0;
}

static sqlite3_stmt *list_stmt(struct reader *r, int variant, int *ret_rc)
{
	char sql[512];
	const char *sep = " WHERE ";
	int n;

	if (r->list[variant]) {
		*ret_rc = 0;
		return r->list[variant];
	}
	n = snprintf(sql, sizeof(sql), "SELECT resource, ns, name, rev, json FROM objects");
	if (variant & LIST_RESOURCE) {
		n += snprintf(sql + n, sizeof(sql) - n, "%sresource = ?1", sep);
		sep = " AND ";
	}
	if (variant & LIST_NS) {
		n += snprintf(sql + n, sizeof(sql) - n, "%sns = ?2", sep);
		sep = " AND ";
	}
	/* Within one namespace the bound is on the name alone, so SQLite walks
	 * the primary key in order and stops at the page's end.  With the row
	 * value (ns, name) > (?3, ?4) it sorted every row after the bound (JSON
	 * included) in a temporary file first: the first page of 10,000 Agents
	 * cost 300 ms, the last 10.  Same rows: the bound namespace before ns
	 * means all of ns (names are never empty), after it none (NULL). */
	if ((variant & LIST_AFTER) && (variant & LIST_NS))
		n += snprintf(sql + n, sizeof(sql) - n,
			      "%sname > (CASE WHEN ?3 = ?2 THEN ?4 WHEN ?3 < ?2 THEN '' END)", sep);
	else if (variant & LIST_AFTER)
		n += snprintf(sql + n, sizeof(sql) - n, "%s(ns, name) > (?3, ?4)", sep);
	snprintf(sql + n, sizeof(sql) - n, " ORDER BY resource, ns, name");
	*ret_rc = prep(r->db, &r->list[variant], sql);
	return r->list[variant];
}

/* Hand rows of `st` (columns: resource, ns, name, rev, [type,] json) to visit.
 * Returns 0 when the rows ran out, 1 when visit stopped, a negative errno on
 * a visit or SQL error (*sql_failed tells which).  *ret_count and
 * *ret_last_rev count and name the visited rows. */
static int visit_rows(sqlite3_stmt *st, bool with_type, store_visit_fn visit,
		      void *userdata, size_t *ret_count, int64_t *ret_last_rev,
		      bool *sql_failed)
{
	int rc, j = with_type ? 5 : 4;

	*sql_failed = false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		store_obj o = {
			.resource = (char *)sqlite3_column_text(st, 0),
			.ns = (char *)sqlite3_column_text(st, 1),
			.name = (char *)sqlite3_column_text(st, 2),
			.rev = sqlite3_column_int64(st, 3),
			.type = with_type ? (enum store_event_type)sqlite3_column_int(st, 4) : 0,
			.json = (char *)sqlite3_column_text(st, j),
		};
		int v;

		o.len = (size_t)sqlite3_column_bytes(st, j);
		if (!o.resource || !o.ns || !o.name || !o.json) {
			*sql_failed = true;
			return -ENOMEM;
		}
		v = visit(&o, userdata);
		(*ret_count)++;
		*ret_last_rev = o.rev;
		if (v)
			return v < 0 ? v : 1;
	}
	if (rc == SQLITE_DONE)
		return 0;
	*sql_failed = true;
	return sql_errno(rc);
}

static int sq_list(store *s, const char *resource, const char *ns, const char *after_ns,
		   const char *after_name, store_visit_fn visit, void *userdata, int64_t *ret_rev)
{
	struct sq *q = to_sq(s);
	int variant = (resource ? LIST_RESOURCE : 0) | (ns ? LIST_NS : 0) |
		      (after_name ? LIST_AFTER : 0);
	int64_t rev = 0, compacted = 0, last = 0;
	size_t count = 0;
	bool sql_failed = false;
	struct reader *r;
	sqlite3_stmt *st;
	int rc, res;

	rc = reader_take(q, &r);
	if (rc)
		return rc;
	st = list_stmt(r, variant, &rc);
	if (!rc)
		rc = read_begin(r, &rev, &compacted);
	if (rc) {
		reader_put(q, r, true);
		return rc;
	}
	if (resource)
		sqlite3_bind_text(st, 1, resource, -1, SQLITE_STATIC);
	if (ns)
		sqlite3_bind_text(st, 2, ns, -1, SQLITE_STATIC);
	if (after_name) {
		sqlite3_bind_text(st, 3, after_ns, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, after_name, -1, SQLITE_STATIC);
	}
	res = visit_rows(st, false, visit, userdata, &count, &last, &sql_failed);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	rc = read_end(r);
	reader_put(q, r, sql_failed || rc);
	if (res < 0)
		return res;
	if (rc)
		return rc;
	if (ret_rev)
		*ret_rev = rev;
	return 0;
}

static sqlite3_stmt *events_stmt(struct reader *r, int variant, int *ret_rc)
{
	char sql[512];
	int n;

	if (r->events[variant]) {
		*ret_rc = 0;
		return r->events[variant];
	}
	n = snprintf(sql, sizeof(sql),
		     "SELECT resource, ns, name, rev, type, json FROM events WHERE rev > ?1");
	if (variant & EV_RESOURCE)
		n += snprintf(sql + n, sizeof(sql) - n, " AND resource = ?2");
	if (variant & EV_NS)
		n += snprintf(sql + n, sizeof(sql) - n, " AND ns = ?3");
	snprintf(sql + n, sizeof(sql) - n, " ORDER BY rev LIMIT ?4");
	*ret_rc = prep(r->db, &r->events[variant], sql);
	return r->events[variant];
}

static int sq_events(store *s, const char *resource, const char *ns, int64_t after_rev,
		     size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last)
{
	struct sq *q = to_sq(s);
	int variant = (resource ? EV_RESOURCE : 0) | (ns ? EV_NS : 0);
	int64_t rev = 0, compacted = 0, last = 0;
	size_t count = 0;
	bool sql_failed = false;
	struct reader *r;
	sqlite3_stmt *st;
	int rc, res;

	if (q->ring.on) {
		rc = ring_events(q, resource, ns, after_rev, max, visit, userdata, ret_last);
		if (rc != RING_MISS) {
			atomic_fetch_add_explicit(&q->ring_hits, 1, memory_order_relaxed);
			return rc;
		}
	}
	atomic_fetch_add_explicit(&q->ring_misses, 1, memory_order_relaxed);
	rc = reader_take(q, &r);
	if (rc)
		return rc;
	st = events_stmt(r, variant, &rc);
	if (!rc)
		rc = read_begin(r, &rev, &compacted);
	if (rc) {
		reader_put(q, r, true);
		return rc;
	}
	if (after_rev < compacted) {
		rc = read_end(r);
		reader_put(q, r, rc != 0);
		return -ERANGE;
	}
	sqlite3_bind_int64(st, 1, after_rev);
	if (resource)
		sqlite3_bind_text(st, 2, resource, -1, SQLITE_STATIC);
	if (ns)
		sqlite3_bind_text(st, 3, ns, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, max == 0 || max > INT64_MAX ? -1 : (int64_t)max);
	res = visit_rows(st, true, visit, userdata, &count, &last, &sql_failed);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	rc = read_end(r);
	reader_put(q, r, sql_failed || rc);
	if (res < 0)
		return res;
	if (rc)
		return rc;
	if (ret_last) {
		/* Stopped by the callback or by `max`: resume after the last
		 * event handed out.  Otherwise the whole log up to the
		 * snapshot was scanned, matching or not. */
		if (res == 1 || (max && count == max))
			*ret_last = last;
		else
			*ret_last = rev > after_rev ? rev : after_rev;
	}
	return 0;
}

/* ---- waiting, stats --------------------------------------------------- */

static int64_t sq_current_rev(store *s)
{
	return atomic_load(&to_sq(s)->rev);
}

static int64_t sq_compacted_rev(store *s)
{
	return atomic_load(&to_sq(s)->compacted);
}

static int64_t sq_wait(store *s, int64_t after_rev, int timeout_ms)
{
	struct sq *q = to_sq(s);

	return store__wait_rev(&q->rev, &q->wmu, &q->wcond, &q->wake_gen, after_rev, timeout_ms);
}

static void sq_wake_all(store *s)
{
	struct sq *q = to_sq(s);

	store__wake_all(&q->wmu, &q->wcond, &q->wake_gen);
}

static uint64_t sq_resource_stamp(store *s, const char *resource)
{
	return atomic_load(&to_sq(s)->stamps[stamp_slot(resource)]);
}

static void sq_stats(store *s, struct store_stats *ret)
{
	struct sq *q = to_sq(s);

	ret->commits = atomic_load(&q->n_commits);
	ret->writes = atomic_load(&q->n_writes);
	ret->max_batch = atomic_load(&q->max_batch);
	pthread_mutex_lock(&q->qmu);
	ret->queued = q->qlen;
	pthread_mutex_unlock(&q->qmu);
	ret->cache_hits = ret->cache_misses = 0;
	ret->cache_bytes = ret->cache_entries = 0;
	cache_stats(q, ret);
	ring_stats(q, ret);
}

/* ---- open, close ------------------------------------------------------ */

static void writer_finalize(struct sq *q)
{
	sqlite3_stmt **all[] = {
		&q->w_begin, &q->w_commit, &q->w_rollback, &q->w_getrev, &q->w_insert,
		&q->w_update, &q->w_delete, &q->w_event, &q->w_setmeta, &q->w_getmeta,
		&q->w_compact,
	};
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		sqlite3_finalize(*all[i]);
		*all[i] = NULL;
	}
}

static void sq_free(struct sq *q)
{
	struct reader *r;

	while ((r = q->ridle)) {
		q->ridle = r->next;
		reader_free(r);
	}
	ckpt_stop(q);
	/* Closed last, so the writer connection is the last one open and
	 * checkpoints the WAL into the database file. */
	writer_finalize(q);
	sqlite3_close(q->wdb);
	pthread_mutex_destroy(&q->qmu);
	pthread_cond_destroy(&q->qcond);
	pthread_mutex_destroy(&q->wmu);
	pthread_cond_destroy(&q->wcond);
	pthread_mutex_destroy(&q->rmu);
	pthread_mutex_destroy(&q->cmu);
	pthread_cond_destroy(&q->ccond);
	cache_free(q);
	ring_free(&q->ring);
	if (q->lock_fd >= 0)
		close(q->lock_fd); /* releases the lock */
	free(q->path);
	free(q);
}

static void sq_close(store *s)
{
	struct sq *q = to_sq(s);

	pthread_mutex_lock(&q->qmu);
	q->stopping = true;
	pthread_cond_signal(&q->qcond);
	pthread_mutex_unlock(&q->qmu);
	pthread_join(q->writer, NULL);
	sq_free(q);
}

/* Make the new file's directory entry durable too (SQLite syncs the
 * directory for its journals, not for the database file itself). */
static int sync_parent_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc = 0;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		rc = -EIO;
	close(fd);
	return rc;
}

static int query_int(sqlite3 *db, const char *sql, int64_t *ret, bool *ret_found)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	/* A plain SQLITE_ERROR here is a missing table: not our schema. */
	if (rc == SQLITE_ERROR)
		return -EPROTO;
	if (rc != SQLITE_OK)
		return sql_errno(rc);
	rc = sqlite3_step(st);
	*ret_found = rc == SQLITE_ROW;
	if (rc == SQLITE_ROW)
		*ret = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : sql_errno(rc);
}

/* Create the schema in a new database, or check the version of an old one.
 * Leaves the committed revisions in q->w_rev / q->w_compacted. */
static int init_schema(struct sq *q)
{
	int64_t n = 0, version = 0;
	bool found;
	int rc;

	rc = exec(q->wdb, "BEGIN IMMEDIATE");
	if (rc)
		return rc;
	rc = query_int(q->wdb, "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
		       &n, &found);
	if (!rc && n == 0) {
		char sql[1024];

		snprintf(sql, sizeof(sql),
			 "CREATE TABLE objects (resource TEXT NOT NULL, ns TEXT NOT NULL,"
			 " name TEXT NOT NULL, rev INTEGER NOT NULL, json TEXT NOT NULL,"
			 " PRIMARY KEY (resource, ns, name));"
			 "CREATE TABLE events (rev INTEGER PRIMARY KEY, resource TEXT NOT NULL,"
			 " ns TEXT NOT NULL, name TEXT NOT NULL, type INTEGER NOT NULL,"
			 " json TEXT NOT NULL);"
			 "CREATE TABLE meta (key TEXT PRIMARY KEY, value);"
			 "INSERT INTO meta VALUES ('schema', %d), ('rev', 0), ('compacted', 0);",
			 SCHEMA_VERSION);
		rc = exec(q->wdb, sql);
	}
	if (!rc) {
		/* Any other SQLite file (or a future schema) is refused. */
		rc = query_int(q->wdb, "SELECT value FROM meta WHERE key = 'schema'",
			       &version, &found);
		if (!rc && (!found || version != SCHEMA_VERSION))
			rc = -EPROTO;
	}
	if (!rc)
		rc = exec(q->wdb, "COMMIT");
	if (rc)
		exec(q->wdb, "ROLLBACK");
	return rc;
}

static int prepare_writer(struct sq *q)
{
	static const struct { size_t off; const char *sql; } stmts[] = {
		{ offsetof(struct sq, w_begin), "BEGIN IMMEDIATE" },
		{ offsetof(struct sq, w_commit), "COMMIT" },
		{ offsetof(struct sq, w_rollback), "ROLLBACK" },
		{ offsetof(struct sq, w_getrev),
		  "SELECT rev FROM objects WHERE resource = ?1 AND ns = ?2 AND name = ?3" },
		{ offsetof(struct sq, w_insert),
		  "INSERT INTO objects (resource, ns, name, rev, json) VALUES (?1, ?2, ?3, ?4, ?5)" },
		{ offsetof(struct sq, w_update),
		  "UPDATE objects SET rev = ?4, json = ?5"
		  " WHERE resource = ?1 AND ns = ?2 AND name = ?3" },
		{ offsetof(struct sq, w_delete),
		  "DELETE FROM objects WHERE resource = ?1 AND ns = ?2 AND name = ?3" },
		{ offsetof(struct sq, w_event),
		  "INSERT INTO events (rev, resource, ns, name, type, json)"
		  " VALUES (?1, ?2, ?3, ?4, ?5, ?6)" },
		{ offsetof(struct sq, w_setmeta),
		  "UPDATE meta SET value = CASE key WHEN 'rev' THEN ?1 ELSE ?2 END"
		  " WHERE key IN ('rev', 'compacted')" },
		{ offsetof(struct sq, w_getmeta),
		  "SELECT (SELECT value FROM meta WHERE key = 'rev'),"
		  " (SELECT value FROM meta WHERE key = 'compacted')" },
		{ offsetof(struct sq, w_compact), "DELETE FROM events WHERE rev <= ?1" },
	};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		rc = prep(q->wdb, (sqlite3_stmt **)((char *)q + stmts[i].off), stmts[i].sql);
		if (rc)
			return rc;
	}
	return 0;
}

/* PRAGMA quick_check before serving: a store with a damaged page
 * (a bad disk, a torn copy) is refused whole with -EUCLEAN rather than
 * served until a read hits the damage.  It reads every page once; a
 * store of 100,000 objects takes well under a second. */
static int integrity_check(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	bool ok = false;
	int rc;

	rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		ok = sqlite3_column_text(st, 0) && strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return ok ? 0 : -EUCLEAN;
	return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB ? -EUCLEAN : sql_errno(rc);
}

static int open_writer(struct sq *q)
{
	sqlite3_stmt *st = NULL;
	char pragmas[256];
	bool wal;
	int rc;

	rc = sqlite3_open_v2(q->path, &q->wdb,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK)
		return q->wdb ? sql_errno(rc) : -ENOMEM;
	sqlite3_extended_result_codes(q->wdb, 1);
	sqlite3_busy_timeout(q->wdb, BUSY_TIMEOUT_MS);

	/* journal_mode answers with the mode now in force; anything but WAL
	 * (e.g. a filesystem without shared memory) is a failure. */
	rc = sqlite3_prepare_v2(q->wdb, "PRAGMA journal_mode = WAL", -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(st);
	wal = rc == SQLITE_ROW && sqlite3_column_text(st, 0) &&
	      strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
	sqlite3_finalize(st);
	if (!wal)
		return rc == SQLITE_ROW ? -EIO : sql_errno(rc ? rc : SQLITE_ERROR);

	/* The writer's page cache survives commits (it is the only writer),
	 * so a generous one saves re-reading the index pages every batch. */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA synchronous = %s; PRAGMA cache_size = -32768;"
		 " PRAGMA journal_size_limit = 67108864; PRAGMA wal_autocheckpoint = 0;",
		 q->opts.sync_full ? "FULL" : "NORMAL");
	rc = exec(q->wdb, pragmas);
	if (!rc)
		rc = integrity_check(q->wdb);
	if (!rc)
		rc = init_schema(q);
	if (!rc)
		rc = prepare_writer(q);
	if (!rc)
		rc = writer_read_meta(q, &q->w_rev, &q->w_compacted);
	if (!rc && q->opts.sync_full)
		rc = sync_parent_dir(q->path);
	return rc;
}

static const struct store_ops sqlite_ops = {
	.close = sq_close,
	.current_rev = sq_current_rev,
	.compacted_rev = sq_compacted_rev,
	.get = sq_get,
	.write = sq_write,
	.list = sq_list,
	.events = sq_events,
	.wait = sq_wait,
	.wake_all = sq_wake_all,
	.compact = sq_compact,
	.resource_stamp = sq_resource_stamp,
	.stats = sq_stats,
};

/* SQLite's memory statistics take one process-wide mutex on every
 * allocation, which all reader connections and the writer then contend for;
 * nothing here reads those statistics.  Only possible before SQLite
 * initialises, so a process that used SQLite first keeps the default. */
static void sqlite_global_setup(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* The revision counter and the object cache hold only while this process
 * is the database's one writer, so a second process (a second `agenthub
 * serve` on the same data directory) is refused with -EBUSY.  The lock goes
 * with the process, also on kill -9. */
static int lock_database(struct sq *q)
{
	size_t n = strlen(q->path);
	char *lp = malloc(n + sizeof("-lock"));

	if (!lp)
		return -ENOMEM;
	memcpy(lp, q->path, n);
	memcpy(lp + n, "-lock", sizeof("-lock"));
	q->lock_fd = open(lp, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	free(lp);
	if (q->lock_fd < 0)
		return -errno;
	if (flock(q->lock_fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? -EBUSY : -errno;
	return 0;
}

int store__sqlite_open(const char *path, const struct store_options *opts, store **ret)
{
	static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
	pthread_condattr_t ca;
	struct sq *q;
	int rc;

	pthread_once(&setup_once, sqlite_global_setup);
	/* Connections are opened NOMUTEX and used from several threads, one
	 * at a time each: that needs a library built thread-safe. */
	if (!sqlite3_threadsafe())
		return -ENOTSUP;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->base.ops = &sqlite_ops;
	q->opts = *opts;
	/* Keeps the compaction arithmetic (keep + keep / 16) far from overflow. */
	if (q->opts.event_log_keep > ((size_t)1 << 40))
		q->opts.event_log_keep = (size_t)1 << 40;
	q->path = strdup(path);
	q->lock_fd = -1;
	pthread_mutex_init(&q->qmu, NULL);
	pthread_cond_init(&q->qcond, NULL);
	pthread_mutex_init(&q->wmu, NULL);
	pthread_mutex_init(&q->rmu, NULL);
	pthread_mutex_init(&q->cmu, NULL);
	pthread_mutex_init(&q->ring.mu, NULL);
	q->ring.on = !q->opts.event_ring_off;
	q->ring.max_events = q->opts.event_ring_events ? q->opts.event_ring_events
						       : STORE_EVENT_RING_EVENTS_DEFAULT;
	q->ring.max_bytes = q->opts.event_ring_bytes ? q->opts.event_ring_bytes
						     : STORE_EVENT_RING_BYTES_DEFAULT;
	/* store_wait() timeouts must not jump with the wall clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&q->wcond, &ca);
	pthread_cond_init(&q->ccond, &ca);
	pthread_condattr_destroy(&ca);
	if (!q->path) {
		sq_free(q);
		return -ENOMEM;
	}

	rc = lock_database(q);
	if (!rc)
		rc = cache_init(q);
	if (!rc)
		rc = open_writer(q);
	if (!rc) {
		atomic_store(&q->rev, q->w_rev);
		atomic_store(&q->compacted, q->w_compacted);
		/* Empty and valid: it holds every revision after the current. */
		q->ring.valid = true;
		q->ring.base = q->w_rev;
		q->ring.compacted = q->w_compacted;
		rc = ckpt_start(q);
		if (!rc)
			rc = -pthread_create(&q->writer, NULL, writer_main, q);
	}
	if (rc) {
		sq_free(q);
		return rc;
	}
	*ret = &q->base;
	return 0;
}
