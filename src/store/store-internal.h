/* store-internal.h - the backend interface behind store.h.
 *
 * store.c owns the public entry points: it checks arguments (non-NULL keys,
 * size caps) once for every backend and then dispatches through the backend's
 * ops table.  A backend (sqlite.c today, postgres.c later) embeds `struct
 * store` as the first member of its own state and fills in every op.  Ops get
 * arguments that are already validated and must keep the threading and error
 * contract of store.h.  Private to src/store/. */
#ifndef AH_STORE_STORE_INTERNAL_H
#define AH_STORE_STORE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "store/store.h"

enum store__op { STORE__CREATE = 1, STORE__UPDATE, STORE__DELETE };

/* One write as the front end hands it to a backend. */
struct store__write {
	enum store__op op;
	const char *resource;
	const char *ns;
	const char *name;
	int64_t expect_rev;     /* update/delete: 0 = no precondition */
	store_render_fn render;
	void *userdata;
};

struct store_ops {
	void (*close)(store *s);
	int64_t (*current_rev)(store *s);
	int64_t (*compacted_rev)(store *s);
	int (*get)(store *s, const char *resource, const char *ns, const char *name,
		   store_obj **ret);
	int (*write)(store *s, const struct store__write *w, int64_t *ret_rev);
	int (*list)(store *s, const char *resource, const char *ns, const char *after_ns,
		    const char *after_name, store_visit_fn visit, void *userdata,
		    int64_t *ret_rev);
	int (*events)(store *s, const char *resource, const char *ns, int64_t after_rev,
		      size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last);
	int64_t (*wait)(store *s, int64_t after_rev, int timeout_ms);
	void (*wake_all)(store *s);
	int64_t (*compact)(store *s, size_t keep);
	uint64_t (*resource_stamp)(store *s, const char *resource);
	void (*stats)(store *s, struct store_stats *ret);
	/* Optional (NULL: -ENOTSUP): store_copy_into() with this as dst. */
	int (*copy_from)(store *dst, store *src, size_t *ret_count, int64_t *ret_rev);
	/* Optional (NULL: -ENOTSUP): store_session_lock_new(). */
	int (*session_lock_new)(store *s, const char *name, store_session_lock **ret);
};

/* A backend's session lock embeds this first. */
struct store_session_lock {
	int (*try_lock)(store_session_lock *l, int timeout_ms);
	int (*break_lock)(store_session_lock *l, int timeout_ms);
	void (*free)(store_session_lock *l);
};

struct store {
	const struct store_ops *ops;
};

/* What both backends share (store.c). */

/* store_wait() over a backend's published revision: wait until *rev passes
 * after_rev, *gen moves (store_wake_all()) or timeout_ms (< 0: no limit)
 * runs out, on cond (a CLOCK_MONOTONIC condition variable) under mu; the
 * revision then.  store__wake_all() moves *gen and wakes every waiter. */
int64_t store__wait_rev(_Atomic int64_t *rev, pthread_mutex_t *mu, pthread_cond_t *cond,
			const uint64_t *gen, int64_t after_rev, int timeout_ms);
void store__wake_all(pthread_mutex_t *mu, pthread_cond_t *cond, uint64_t *gen);
/* The store_resource_stamp() slot of a resource (FNV-1a) among STORE__STAMP_SLOTS. */
#define STORE__STAMP_SLOTS 64
size_t store__stamp_slot(const char *resource);

/* Open the SQLite backend on a plain filesystem path (prefix already
 * stripped).  opts is never NULL here: store.c fills in the defaults. */
int store__sqlite_open(const char *path, const struct store_options *opts, store **ret);

/* Open the PostgreSQL backend (postgres.c, only when built with libpq) on a
 * postgres:// URL, and the detail of its last open failure on this thread. */
int store__pg_open(const char *url, const struct store_options *opts, store **ret);
const char *store__pg_open_error(void);

/* Test hook of the SQLite backend: when set, store_get() calls fn after a
 * cache miss read the object from SQLite (`read`, valid only during the
 * call) and before it offers what it read to the object cache, so a test
 * can slip a write into exactly that window.  fn may call into the store.
 * Set it only while no other thread uses the store; NULL removes it. */
typedef void (*store__get_hook_fn)(store *s, const store_obj *read, void *userdata);
void store__sqlite_set_get_hook(store *s, store__get_hook_fn fn, void *userdata);

#endif
