/* store.h - the object store: JSON documents keyed by (resource, namespace, name)
 * with one global, monotonically increasing revision (the Kubernetes
 * resourceVersion) and an event log that watches read from.
 *
 * The store knows nothing of Kubernetes: it keeps opaque JSON text.  The kube
 * layer renders each object's text *with* its resourceVersion already inside:
 * every write takes a render callback that the store calls, under its write
 * lock, with the revision the write will get.  So reads and lists can hand out
 * stored text as is, without parsing.
 *
 * Durability: a write returns 0 only after its transaction is committed and
 * synced to disk (SQLite WAL with synchronous=FULL).  Concurrent writers are
 * group-committed: one writer thread takes every queued write, applies them in
 * a single transaction and syncs once, then wakes each caller with its result.
 *
 * Namespaces: cluster-scoped objects use ns "" (never NULL).
 * Threads: every function may be called from any thread concurrently.
 * Errors: 0 or negative errno: -ENOENT (no such object), -EEXIST (create of an
 * existing key), -ESTALE (expect_rev given and not the current revision),
 * -ERANGE (watch from a revision older than the compacted one: HTTP 410),
 * -ECANCELED (render callback refused), -EIO (storage failure, including a
 * full disk: the write is then not acknowledged), -EINVAL (NULL or empty key
 * part, or a key part longer than STORE_MAX_KEY), -EFBIG (rendered text longer
 * than STORE_MAX_JSON), -ENOMEM. */
#ifndef AH_STORE_STORE_H
#define AH_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

typedef struct store store;

/* Hard caps: bytes in each of resource, ns and name, and in one object's text. */
#define STORE_MAX_KEY 512
#define STORE_MAX_JSON (8u << 20)

enum store_event_type { STORE_ADDED = 1, STORE_MODIFIED = 2, STORE_DELETED = 3 };

/* One stored object or event.  All strings are owned by the struct. */
typedef struct store_obj {
	char *resource;
	char *ns;
	char *name;
	int64_t rev;      /* the revision of the last write to it (mod revision) */
	enum store_event_type type; /* only meaningful for events */
	char *json;       /* NUL-terminated text */
	size_t len;
} store_obj;

void store_obj_free(store_obj *o);

/* Produce the text to store for a write that gets revision `rev`.  Return a
 * malloc'd NUL-terminated string (ownership passes to the store) and its
 * length, or NULL to abort the write with -ECANCELED.  Called exactly once per
 * write attempt that passed its preconditions, on the store's writer thread,
 * so it must be quick and must not call back into the store.  For a delete the
 * text is what the DELETED event carries. */
typedef char *(*store_render_fn)(int64_t rev, size_t *ret_len, void *userdata);

/* The object cache: store_get() answers from memory for objects recently
 * read or written, which is exactly what SQLite would answer at that moment
 * (the writer updates the cache before any write is acknowledged or
 * published, and a key being committed is never answered from it).  It
 * assumes, like the revision counter, that this process is the only writer
 * of the database file.  cache_bytes bounds the text and bookkeeping it
 * keeps (0: STORE_CACHE_BYTES_DEFAULT); an object larger than 1/64 of the
 * bound is never cached. */
#define STORE_CACHE_BYTES_DEFAULT ((size_t)64 << 20)

/* The event ring: store_events() answers from memory when every event it
 * has to scan is among the most recent ones, which the writer keeps before
 * any write is acknowledged or published; otherwise it reads SQLite.  The
 * answer is the same either way.  The ring holds at most event_ring_events
 * events (0: STORE_EVENT_RING_EVENTS_DEFAULT) and at most event_ring_bytes
 * of their text and bookkeeping (0: STORE_EVENT_RING_BYTES_DEFAULT); the
 * oldest drop off first. */
#define STORE_EVENT_RING_EVENTS_DEFAULT 4096
#define STORE_EVENT_RING_BYTES_DEFAULT ((size_t)16 << 20)

struct store_options {
	size_t event_log_keep;  /* events kept for watches (default 100000) */
	int sync_full;          /* 1 (default): fsync each commit; 0: for tests only */
	size_t cache_bytes;     /* object cache bound (0: the default) */
	int cache_off;          /* 1: no object cache, every store_get() reads SQLite */
	size_t event_ring_events; /* event ring bound in events (0: the default) */
	size_t event_ring_bytes;  /* event ring bound in bytes (0: the default) */
	int event_ring_off;     /* 1: no event ring, every store_events() reads SQLite */
};

/* url: a filesystem path to the SQLite database file ("sqlite:" prefix
 * optional), or a libpq URL "postgres://..." / "postgresql://..." (-ENOTSUP
 * when built without libpq).  opts may be NULL.
 *
 * PostgreSQL (postgres.c): any number of processes may open one database at
 * once; the guarantees above hold across all of them (one global revision,
 * preconditions, durable acknowledged writes, -ERANGE once compacted), and
 * store_wait() wakes on another process's write as soon as PostgreSQL
 * delivers its NOTIFY (it also polls every 500 ms).  There is no object
 * cache and no event ring (cache_* and event_ring_* options are ignored):
 * every read asks PostgreSQL.  store_resource_stamp() changes on another
 * process's write only once this process learns of it (as store_wait()
 * does).  sync_full is the server's business (synchronous_commit).  Open
 * errors: -ECONNREFUSED (cannot connect or log in), -EPROTO (schema newer
 * than this build), -EIO; store_open_error() then says why.
 *
 * SQLite: the parent directory must exist; the file is created.
 * -EPROTO if the file is not a SQLite database or holds a schema version
 * this build does not know; -EUCLEAN if SQLite's PRAGMA quick_check finds
 * it damaged (it is checked at every open, before anything is served).
 * store_close() must not race with any other call on the same store. */
int store_open(const char *url, const struct store_options *opts, store **ret);
void store_close(store *s);

/* Why the last store_open() on this thread failed, when the backend knows
 * more than the errno (libpq's message; never the password); "" if not. */
const char *store_open_error(void);
/* 1 if url names a PostgreSQL database. */
int store_url_is_postgres(const char *url);
/* Copy url into buf (always NUL-terminated) with any password replaced by
 * "xxxxx", for logs and error messages. */
void store_url_redact(const char *url, char *buf, size_t size);

/* The newest committed revision (0 for an empty store). */
int64_t store_current_rev(store *s);
/* The oldest revision a watch may start after (events at or below are gone). */
int64_t store_compacted_rev(store *s);

int store_get(store *s, const char *resource, const char *ns, const char *name,
	      store_obj **ret);

/* Create; -EEXIST if the key exists.  On success *ret_rev (may be NULL) is the
 * new revision. */
int store_create(store *s, const char *resource, const char *ns, const char *name,
		 store_render_fn render, void *userdata, int64_t *ret_rev);

/* Replace; -ENOENT if absent; -ESTALE if expect_rev > 0 and differs from the
 * object's current revision. */
int store_update(store *s, const char *resource, const char *ns, const char *name,
		 int64_t expect_rev, store_render_fn render, void *userdata, int64_t *ret_rev);

/* Delete; same preconditions as update.  render gives the DELETED event's text. */
int store_delete(store *s, const char *resource, const char *ns, const char *name,
		 int64_t expect_rev, store_render_fn render, void *userdata, int64_t *ret_rev);

/* Visit objects of `resource` (ns NULL = all namespaces) in key order
 * (ns, name), starting strictly after (after_ns, after_name) when after_name
 * is non-NULL, from one consistent snapshot.  The callback returns 0 to go on,
 * 1 to stop early, or a negative errno to abort (returned as is).  The obj is
 * valid only during the callback.  *ret_rev (may be NULL) is the snapshot's
 * revision.  resource NULL visits every resource, in (resource, ns, name)
 * order, and then takes no after_name (-EINVAL). */
typedef int (*store_visit_fn)(const store_obj *obj, void *userdata);
int store_list(store *s, const char *resource, const char *ns, const char *after_ns,
	       const char *after_name, store_visit_fn visit, void *userdata, int64_t *ret_rev);

/* Visit events with revision > after_rev, oldest first, for `resource`
 * (NULL = all) and ns (NULL = all), at most `max` of them (0 = no bound).
 * -ERANGE if after_rev < store_compacted_rev().  *ret_last (may be NULL) is
 * the revision up to which the log was scanned (so the caller resumes there,
 * even when no event matched the filter). */
int store_events(store *s, const char *resource, const char *ns, int64_t after_rev,
		 size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last);

/* Block until store_current_rev() > after_rev, or timeout_ms passes (< 0:
 * no timeout), or store_wake_all() is called.  Returns the current revision. */
int64_t store_wait(store *s, int64_t after_rev, int timeout_ms);
/* Wake every store_wait() caller (used at shutdown). */
void store_wake_all(store *s);

/* A stamp that changes whenever an object of `resource` is written (it may
 * change on other writes too): lets a cache of objects of a rarely written
 * resource check "nothing changed since" without a read.  A write's stamp
 * change is visible before the write is acknowledged, so a value read
 * before a store_get() that still holds later means the object read is
 * still current. */
uint64_t store_resource_stamp(store *s, const char *resource);

/* Drop events so at most opts.event_log_keep remain; done automatically
 * after commits, exposed for tests.  Returns the new compacted revision. */
int64_t store_compact(store *s, size_t keep);

/* Copy every object of src into dst, which must be empty (revision 0, no
 * objects: else -ENOTEMPTY), keeping each object's revision and text, in one
 * transaction: dst ends at src's revision with its event log compacted up to
 * it (a watch from an older revision gets -ERANGE, i.e. relists).  From one
 * snapshot of src.  dst must be PostgreSQL (else -ENOTSUP): `agenthub
 * migrate`.  *ret_count and *ret_rev (may be NULL): objects copied, revision. */
int store_copy_into(store *dst, store *src, size_t *ret_count, int64_t *ret_rev);

/* A session lock: a named lock that one database session at a time holds,
 * on a connection of its own, and that the database server releases the
 * moment that session ends (the process died, its connection dropped), so
 * another process learns of a dead holder at once instead of waiting out a
 * lease.  PostgreSQL: an advisory lock; SQLite (one process): -ENOTSUP.
 * Not thread-safe: one thread at a time per lock.
 *
 * store_session_lock_try(): 1 when this session holds the lock after the
 * call (taken now, or still held: a round trip to the server proved it),
 * 0 when another session holds it, < 0 when the server gave no answer
 * within timeout_ms or the connection failed: the connection is then closed
 * (which releases the lock on the server, if it still had it) and the lock
 * must be taken to be lost; the next call reconnects.
 * store_session_lock_break(): end the session of whoever else holds it
 * (a holder that is connected but no longer alive); 1 when one was ended.
 * store_session_lock_free(): release (if held) and close.  NULL is fine. */
typedef struct store_session_lock store_session_lock;
int store_session_lock_new(store *s, const char *name, store_session_lock **ret);
int store_session_lock_try(store_session_lock *l, int timeout_ms);
int store_session_lock_break(store_session_lock *l, int timeout_ms);
void store_session_lock_free(store_session_lock *l);

/* Counters for metrics and tests; a snapshot, not a consistent cut. */
struct store_stats {
	uint64_t commits;       /* write transactions committed */
	uint64_t writes;        /* writes acknowledged with 0 */
	size_t max_batch;       /* the most requests one commit carried */
	size_t queued;          /* writes waiting for the writer thread now */
	uint64_t cache_hits;    /* store_get() answered from the object cache */
	uint64_t cache_misses;  /* store_get() that read SQLite */
	size_t cache_bytes;     /* bytes the cache charges now (<= its bound) */
	size_t cache_entries;   /* objects in the cache now */
	uint64_t event_ring_hits;   /* store_events() answered from the event ring */
	uint64_t event_ring_misses; /* store_events() that read SQLite */
	size_t event_ring_events;   /* events in the ring now */
	size_t event_ring_bytes;    /* bytes the ring charges now (<= its bound) */
};
void store_stats(store *s, struct store_stats *ret);

#endif
