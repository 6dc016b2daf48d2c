/* store.c - the public store API: argument checks shared by every backend,
 * then dispatch through the backend's ops table (see store-internal.h).
 * Which backend serves a store is decided once, by store_open() from the URL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store-internal.h"

#define EVENT_LOG_KEEP_DEFAULT 100000

void store_obj_free(store_obj *o)
{
	if (!o)
		return;
	free(o->resource);
	free(o->ns);
	free(o->name);
	free(o->json);
	free(o);
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

int store_open(const char *url, const struct store_options *opts, store **ret)
{
	struct store_options o = { .event_log_keep = EVENT_LOG_KEEP_DEFAULT, .sync_full = 1 };
	const char *path = url;

	if (!url || !ret)
		return -EINVAL;
	if (opts) {
		o = *opts;
		if (o.event_log_keep == 0)
			o.event_log_keep = EVENT_LOG_KEEP_DEFAULT;
	}
	/* PostgreSQL (postgres.c) is built only when libpq is found; without
	 * it, refusing the URL clearly beats creating a SQLite file named
	 * "postgres:". */
	if (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://")) {
#ifdef HAVE_LIBPQ
		return store__pg_open(url, &o, ret);
#else
		return -ENOTSUP;
#endif
	}
	if (has_prefix(url, "sqlite://"))
		path = url + strlen("sqlite://");
	else if (has_prefix(url, "sqlite:"))
		path = url + strlen("sqlite:");
	if (!*path)
		return -EINVAL;
	return store__sqlite_open(path, &o, ret);
}

const char *store_open_error(void)
{
#ifdef HAVE_LIBPQ
	return store__pg_open_error();
#else
	return "";
#endif
}

int store_url_is_postgres(const char *url)
{
	return url && (has_prefix(url, "postgres://") || has_prefix(url, "postgresql://"));
}

/* postgres://user:SECRET@host/db?password=SECRET&x=y: the user's password
 * in the authority and any password= parameter become "xxxxx". */
void store_url_redact(const char *url, char *buf, size_t size)
{
	const char *scheme, *auth, *at, *colon, *q;
	size_t n = 0;

	if (!size)
		return;
	buf[0] = '\0';
	if (!url)
		return;
	if (!store_url_is_postgres(url)) {
		snprintf(buf, size, "%s", url);
		return;
	}
	scheme = strstr(url, "://");
	auth = scheme + 3;
	at = strpbrk(auth, "@/?");
	colon = at && *at == '@' ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (colon)
		n = (size_t)snprintf(buf, size, "%.*sxxxxx", (int)(colon + 1 - url), url);
	else
		n = 0;
	for (q = colon ? at : url; *q && n < size; ) {
		if ((q[0] == '?' || q[0] == '&') && strncmp(q + 1, "password=", 9) == 0) {
			n += (size_t)snprintf(buf + n, size - n, "%.10sxxxxx", q);
			q += 10;
			q += strcspn(q, "&");
			continue;
		}
		buf[n++] = *q++;
		if (n < size)
			buf[n] = '\0';
	}
	if (n >= size)
		buf[size - 1] = '\0';
}

void store_close(store *s)
{
	if (s)
		s->ops->close(s);
}

int64_t store_current_rev(store *s)
{
	return s->ops->current_rev(s);
}

int64_t store_compacted_rev(store *s)
{
	return s->ops->compacted_rev(s);
}

static int key_part_ok(const char *p, int may_be_empty)
{
	size_t n;

	if (!p)
		return 0;
	n = strnlen(p, STORE_MAX_KEY + 1);
	return n <= STORE_MAX_KEY && (n > 0 || may_be_empty);
}

static int key_ok(const char *resource, const char *ns, const char *name)
{
	return key_part_ok(resource, 0) && key_part_ok(ns, 1) && key_part_ok(name, 0);
}

int store_get(store *s, const char *resource, const char *ns, const char *name,
	      store_obj **ret)
{
	if (!ret || !key_ok(resource, ns, name))
		return -EINVAL;
	return s->ops->get(s, resource, ns, name, ret);
}

static int do_write(store *s, enum store__op op, const char *resource, const char *ns,
		    const char *name, int64_t expect_rev, store_render_fn render,
		    void *userdata, int64_t *ret_rev)
{
	struct store__write w = {
		.op = op, .resource = resource, .ns = ns, .name = name,
		.expect_rev = expect_rev, .render = render, .userdata = userdata,
	};

	if (!render || expect_rev < 0 || !key_ok(resource, ns, name))
		return -EINVAL;
	return s->ops->write(s, &w, ret_rev);
}

int store_create(store *s, const char *resource, const char *ns, const char *name,
		 store_render_fn render, void *userdata, int64_t *ret_rev)
{
	return do_write(s, STORE__CREATE, resource, ns, name, 0, render, userdata, ret_rev);
}

int store_update(store *s, const char *resource, const char *ns, const char *name,
		 int64_t expect_rev, store_render_fn render, void *userdata, int64_t *ret_rev)
{
	return do_write(s, STORE__UPDATE, resource, ns, name, expect_rev, render, userdata,
			ret_rev);
}

int store_delete(store *s, const char *resource, const char *ns, const char *name,
		 int64_t expect_rev, store_render_fn render, void *userdata, int64_t *ret_rev)
{
	return do_write(s, STORE__DELETE, resource, ns, name, expect_rev, render, userdata,
			ret_rev);
}

int store_list(store *s, const char *resource, const char *ns, const char *after_ns,
	       const char *after_name, store_visit_fn visit, void *userdata, int64_t *ret_rev)
{
	if (!visit)
		return -EINVAL;
	if (resource && !key_part_ok(resource, 0))
		return -EINVAL;
	if (ns && !key_part_ok(ns, 1))
		return -EINVAL;
	if (after_name) {
		/* Across resources the (ns, name) position is ambiguous. */
		if (!resource || !key_part_ok(after_name, 1))
			return -EINVAL;
		if (!after_ns)
			after_ns = "";
		if (!key_part_ok(after_ns, 1))
			return -EINVAL;
	}
	return s->ops->list(s, resource, ns, after_ns, after_name, visit, userdata, ret_rev);
}

int store_events(store *s, const char *resource, const char *ns, int64_t after_rev,
		 size_t max, store_visit_fn visit, void *userdata, int64_t *ret_last)
{
	if (!visit || after_rev < 0)
		return -EINVAL;
	if (resource && !key_part_ok(resource, 0))
		return -EINVAL;
	if (ns && !key_part_ok(ns, 1))
		return -EINVAL;
	return s->ops->events(s, resource, ns, after_rev, max, visit, userdata, ret_last);
}

int64_t store_wait(store *s, int64_t after_rev, int timeout_ms)
{
	return s->ops->wait(s, after_rev, timeout_ms);
}

void store_wake_all(store *s)
{
	s->ops->wake_all(s);
}

uint64_t store_resource_stamp(store *s, const char *resource)
{
	return s->ops->resource_stamp(s, resource ? resource : "");
}

int64_t store_compact(store *s, size_t keep)
{
	return s->ops->compact(s, keep);
}

int store_copy_into(store *dst, store *src, size_t *ret_count, int64_t *ret_rev)
{
	if (!dst || !src || dst == src)
		return -EINVAL;
	if (!dst->ops->copy_from)
		return -ENOTSUP;
	return dst->ops->copy_from(dst, src, ret_count, ret_rev);
}

int store_session_lock_new(store *s, const char *name, store_session_lock **ret)
{
	if (!s || !name || !*name || !ret)
		return -EINVAL;
	if (!s->ops->session_lock_new)
		return -ENOTSUP;
	return s->ops->session_lock_new(s, name, ret);
}

int store_session_lock_try(store_session_lock *l, int timeout_ms)
{
	return l ? l->try_lock(l, timeout_ms) : -EINVAL;
}

int store_session_lock_break(store_session_lock *l, int timeout_ms)
{
	return l ? l->break_lock(l, timeout_ms) : -EINVAL;
}

void store_session_lock_free(store_session_lock *l)
{
	if (l)
		l->free(l);
}

void store_stats(store *s, struct store_stats *ret)
{
	s->ops->stats(s, ret);
}

int64_t store__wait_rev(_Atomic int64_t *rev, pthread_mutex_t *mu, pthread_cond_t *cond,
			const uint64_t *gen, int64_t after_rev, int timeout_ms)
{
	struct timespec deadline;
	uint64_t g;
	int64_t cur;

	if (timeout_ms >= 0) {
		clock_gettime(CLOCK_MONOTONIC, &deadline);
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(mu);
	g = *gen;
	while (atomic_load(rev) <= after_rev && g == *gen) {
		if (timeout_ms < 0)
			pthread_cond_wait(cond, mu);
		else if (pthread_cond_timedwait(cond, mu, &deadline) == ETIMEDOUT)
			break;
	}
	cur = atomic_load(rev);
	pthread_mutex_unlock(mu);
	return cur;
}

void store__wake_all(pthread_mutex_t *mu, pthread_cond_t *cond, uint64_t *gen)
{
	pthread_mutex_lock(mu);
	(*gen)++;
	pthread_cond_broadcast(cond);
	pthread_mutex_unlock(mu);
}

size_t store__stamp_slot(const char *resource)
{
	uint32_t h = 2166136261u;       /* FNV-1a */

	for (; *resource; resource++)
		h = (h ^ (unsigned char)*resource) * 16777619u;
	return h % STORE__STAMP_SLOTS;
}
