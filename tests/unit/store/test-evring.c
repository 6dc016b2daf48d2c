/* Tests for the event ring of src/store/sqlite.c: store_events() answered
 * from memory gives exactly what SQLite gives (a ring store and a ring-off
 * store doing the same writes are compared, one row per kind of call), a
 * call older than the ring reads SQLite, compaction still answers -ERANGE,
 * deletes carry their DELETED text, both bounds hold, a visit callback may
 * call into the store, a failed batch empties the ring, and readers that
 * follow the log while writers write see every revision once, in order.
 * Each test gets a fresh directory from mkdtemp(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "store/store.h"
#include "testutil.h"

struct fixture {
	char dir[64];
	char on_path[128], off_path[128];
	store *on, *off;        /* the ring store and the ring-off store */
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "ah-evring-test") < 0) {
		free(f);
		return -1;
	}
	snprintf(f->on_path, sizeof(f->on_path), "%s/on.db", f->dir);
	snprintf(f->off_path, sizeof(f->off_path), "%s/off.db", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	store_close(f->on);
	store_close(f->off);
	tu_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

/* Open both stores; on_opts gets the ring, the ring-off store the same
 * options with the ring turned off. */
static void open_pair(struct fixture *f, const struct store_options *on_opts)
{
	struct store_options off = *on_opts;

	off.event_ring_off = 1;
	assert_int_equal(store_open(f->on_path, on_opts, &f->on), 0);
	assert_int_equal(store_open(f->off_path, &off, &f->off), 0);
}

/* Renders {"rev":N,"tag":"<userdata>"}. */
static char *render_tag(int64_t rev, size_t *ret_len, void *userdata)
{
	char *t;
	int n;

	n = asprintf(&t, "{\"rev\":%" PRId64 ",\"tag\":\"%s\"}", rev,
		     userdata ? (const char *)userdata : "");
	if (n < 0)
		return NULL;
	*ret_len = (size_t)n;
	return t;
}

static char *render_refuse(int64_t rev, size_t *ret_len, void *userdata)
{
	return NULL;
}

/* {"rev":N,"pad":"ppp..."} of exactly *(size_t *)userdata bytes. */
static char *render_padded(int64_t rev, size_t *ret_len, void *userdata)
{
	size_t len = *(const size_t *)userdata;
	char *t = malloc(len + 1);
	int n;

	if (!t)
		return NULL;
	n = snprintf(t, len + 1, "{\"rev\":%" PRId64 ",\"pad\":\"", rev);
	memset(t + n, 'p', len - (size_t)n - 2);
	memcpy(t + len - 2, "\"}", 3);
	*ret_len = len;
	return t;
}

static struct store_stats stats(store *s)
{
	struct store_stats st;

	store_stats(s, &st);
	return st;
}

/* ---- collecting what store_events() visits --------------------------- */

#define EV_MAX 4096

struct ev {
	int64_t rev;
	int type;
	char *resource, *ns, *name, *json;
	size_t len;
};

struct collect {
	struct ev ev[EV_MAX];
	size_t n;
	size_t stop_after;      /* return 1 after this many (0: never) */
	int fail_with;          /* return this from the first visit (0: never) */
};

static int collect_visit(const store_obj *o, void *userdata)
{
	struct collect *c = userdata;
	struct ev *e;

	if (c->fail_with)
		return c->fail_with;
	if (c->n == EV_MAX)
		return -ENOSPC;
	e = &c->ev[c->n++];
	e->rev = o->rev;
	e->type = o->type;
	e->resource = strdup(o->resource);
	e->ns = strdup(o->ns);
	e->name = strdup(o->name);
	e->json = strdup(o->json);
	e->len = o->len;
	if (!e->resource || !e->ns || !e->name || !e->json)
		return -ENOMEM;
	return c->stop_after && c->n == c->stop_after ? 1 : 0;
}

static void collect_reset(struct collect *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->ev[i].resource);
		free(c->ev[i].ns);
		free(c->ev[i].name);
		free(c->ev[i].json);
	}
	memset(c, 0, sizeof(*c));
}

static struct collect *collect_new(void)
{
	struct collect *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	return c;
}

static void collect_free(struct collect *c)
{
	collect_reset(c);
	free(c);
}

static void assert_same_events(const struct collect *a, const struct collect *b)
{
	size_t i;

	assert_int_equal(a->n, b->n);
	for (i = 0; i < a->n; i++) {
		assert_int_equal(a->ev[i].rev, b->ev[i].rev);
		assert_int_equal(a->ev[i].type, b->ev[i].type);
		assert_string_equal(a->ev[i].resource, b->ev[i].resource);
		assert_string_equal(a->ev[i].ns, b->ev[i].ns);
		assert_string_equal(a->ev[i].name, b->ev[i].name);
		assert_int_equal(a->ev[i].len, b->ev[i].len);
		assert_string_equal(a->ev[i].json, b->ev[i].json);
	}
}

/* The log of s from after_rev, read through SQLite or the ring, must hold
 * every revision up to the current one exactly once, each event's text
 * naming its own revision. */
static void assert_log_whole(store *s, int64_t after_rev)
{
	struct collect *c = collect_new();
	int64_t last = -1, cur = store_current_rev(s);
	char want[64];
	size_t i;

	assert_int_equal(store_events(s, NULL, NULL, after_rev, 0, collect_visit, c, &last), 0);
	assert_int_equal(last, cur);
	assert_int_equal(c->n, (size_t)(cur - after_rev));
	for (i = 0; i < c->n; i++) {
		assert_int_equal(c->ev[i].rev, after_rev + 1 + (int64_t)i);
		snprintf(want, sizeof(want), "{\"rev\":%" PRId64 ",", c->ev[i].rev);
		assert_memory_equal(c->ev[i].json, want, strlen(want));
	}
	collect_free(c);
}

/* ---- the same writes on both stores ---------------------------------- */

/* A fixed script of creates, updates, deletes and refused writes across
 * two resources and three namespaces (one cluster-scoped).  Returns the
 * current revision; every store it runs on ends with the same log. */
static int64_t play(store *s, int steps)
{
	static const char *const tags[] = { "alpha", "beta", "gamma", "delta" };
	char name[16];
	int i, rc;

	for (i = 0; i < steps; i++) {
		const char *res = i % 3 == 0 ? "cm" : "pods";
		const char *ns = i % 4 == 0 ? "" : (i % 2 ? "a" : "b");
		void *tag = (void *)tags[i % 4];

		snprintf(name, sizeof(name), "o%d", i % 10);
		if (i % 11 == 10) {
			/* Refused by its render callback: no revision. */
			rc = store_create(s, res, ns, "refused", render_refuse, NULL, NULL);
			assert_int_equal(rc, -ECANCELED);
			continue;
		}
		if (i % 5 == 4) {
			/* A failed precondition: no revision either. */
			rc = store_update(s, res, ns, name, 1, render_tag, tag, NULL);
			assert_true(rc == -ESTALE || rc == -ENOENT);
			continue;
		}
		if (i % 7 == 6) {
			rc = store_delete(s, res, ns, name, 0, render_tag, "gone", NULL);
			assert_true(rc == 0 || rc == -ENOENT);
			continue;
		}
		rc = store_create(s, res, ns, name, render_tag, tag, NULL);
		if (rc == -EEXIST)
			rc = store_update(s, res, ns, name, 0, render_tag, tag, NULL);
		assert_int_equal(rc, 0);
	}
	return store_current_rev(s);
}

#define RING_EVENTS 40

/* One store_events() call; after_rev is cur - back (or `at` when abs). */
struct query {
	const char *resource, *ns;
	int64_t back;
	bool abs;
	int64_t at;
	size_t max;
	size_t stop_after;
	int fail_with;
	bool hit;               /* the ring store answers from the ring */
	const char *why;
};

static const struct query queries[] = {
	{ NULL, NULL, 0, false, 0, 0, 0, 0, true, "nothing new: empty, ret_last = current" },
	{ NULL, NULL, 5, false, 0, 0, 0, 0, true, "the five newest" },
	{ NULL, NULL, RING_EVENTS, false, 0, 0, 0, 0, true, "exactly the ring's start" },
	{ NULL, NULL, RING_EVENTS + 1, false, 0, 0, 0, 0, false, "one older than the ring" },
	{ NULL, NULL, 0, true, 0, 0, 0, 0, false, "the whole log" },
	{ "pods", NULL, 30, false, 0, 0, 0, 0, true, "one resource" },
	{ "pods", "a", 30, false, 0, 0, 0, 0, true, "one resource in one namespace" },
	{ NULL, "b", 30, false, 0, 0, 0, 0, true, "one namespace across resources" },
	{ "cm", "", 30, false, 0, 0, 0, 0, true, "cluster-scoped" },
	{ "nosuch", NULL, 30, false, 0, 0, 0, 0, true, "no match: ret_last still advances" },
	{ "pods", "nosuch", 30, false, 0, 0, 0, 0, true, "no match in a namespace" },
	{ NULL, NULL, 30, false, 0, 3, 0, 0, true, "max cuts: ret_last = the third" },
	{ "cm", NULL, 30, false, 0, 2, 0, 0, true, "max cuts a filtered scan" },
	{ "cm", NULL, 30, false, 0, 1000, 0, 0, true, "max beyond what matches" },
	{ NULL, NULL, 3, false, 0, 3, 0, 0, true, "max equal to what is there" },
	{ NULL, NULL, 30, false, 0, 0, 2, 0, true, "the callback stops after two" },
	{ "pods", NULL, 30, false, 0, 5, 5, 0, true, "stop and max on the same event" },
	{ NULL, NULL, 30, false, 0, 0, 0, -EPIPE, true, "the callback's error comes back" },
	{ NULL, NULL, -5, false, 0, 0, 0, 0, true, "after a revision not yet written" },
	{ "pods", "a", 60, false, 0, 2, 0, 0, false, "older than the ring, filtered, max" },
	{ NULL, NULL, 0, true, 0, 0, 3, 0, false, "older than the ring, stopped" },
	{ NULL, NULL, 0, true, 0, 0, 0, -EPIPE, false, "older than the ring, error" },
};

static void test_matches_sqlite(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_ring_events = RING_EVENTS };
	struct collect *a = collect_new(), *b = collect_new();
	int64_t cur;
	size_t i;

	open_pair(f, &opts);
	cur = play(f->on, 150);
	assert_int_equal(play(f->off, 150), cur);
	assert_true(cur > 2 * RING_EVENTS);
	assert_int_equal(stats(f->on).event_ring_events, RING_EVENTS);
	print_message("%" PRId64 " revisions, ring of %d\n", cur, RING_EVENTS);
	for (i = 0; i < sizeof(queries) / sizeof(queries[0]); i++) {
		const struct query *q = &queries[i];
		int64_t after = q->abs ? q->at : cur - q->back;
		int64_t last_a = -7, last_b = -7;
		struct store_stats before = stats(f->on), after_st;
		int rc_a, rc_b;

		collect_reset(a);
		collect_reset(b);
		a->stop_after = b->stop_after = q->stop_after;
		a->fail_with = b->fail_with = q->fail_with;
		rc_a = store_events(f->on, q->resource, q->ns, after, q->max, collect_visit, a,
				    &last_a);
		rc_b = store_events(f->off, q->resource, q->ns, after, q->max, collect_visit, b,
				    &last_b);
		after_st = stats(f->on);
		print_message("row %zu: %s: rc %d, %zu events, ret_last %" PRId64 "\n", i, q->why,
			      rc_a, a->n, last_a);
		assert_int_equal(rc_a, rc_b);
		assert_int_equal(rc_a, q->fail_with);
		assert_int_equal(last_a, last_b);
		if (q->fail_with)
			assert_int_equal(last_a, -7);
		assert_same_events(a, b);
		assert_int_equal(after_st.event_ring_hits - before.event_ring_hits, q->hit ? 1 : 0);
		assert_int_equal(after_st.event_ring_misses - before.event_ring_misses,
				 q->hit ? 0 : 1);
	}
	/* The ring-off store never answers from memory. */
	assert_int_equal(stats(f->off).event_ring_hits, 0);
	assert_int_equal(stats(f->off).event_ring_events, 0);
	assert_int_equal(stats(f->off).event_ring_misses, sizeof(queries) / sizeof(queries[0]));
	assert_log_whole(f->on, 0);
	collect_free(a);
	collect_free(b);
}

/* ---- compaction ------------------------------------------------------ */

struct crow {
	int64_t back;           /* after_rev = compacted - back */
	int want_rc;
	const char *why;
};

static const struct crow crows[] = {
	{ 1000, -ERANGE, "far before the compacted revision" },
	{ 1, -ERANGE, "just before the compacted revision" },
	{ 0, 0, "at the compacted revision" },
	{ -1, 0, "just after it" },
};

static void check_compaction(struct fixture *f, const char *when)
{
	struct collect *a = collect_new(), *b = collect_new();
	int64_t comp = store_compacted_rev(f->on), cur = store_current_rev(f->on);
	size_t i;

	assert_int_equal(store_compacted_rev(f->off), comp);
	assert_int_equal(store_current_rev(f->off), cur);
	print_message("%s: compacted %" PRId64 ", current %" PRId64 "\n", when, comp, cur);
	for (i = 0; i < sizeof(crows) / sizeof(crows[0]); i++) {
		int64_t after = comp - crows[i].back, last_a = -7, last_b = -7;
		struct store_stats before = stats(f->on);
		int rc;

		if (after < 0)
			after = 0;
		collect_reset(a);
		collect_reset(b);
		rc = store_events(f->on, NULL, NULL, after, 0, collect_visit, a, &last_a);
		assert_int_equal(rc, crows[i].want_rc);
		assert_int_equal(store_events(f->off, NULL, NULL, after, 0, collect_visit, b,
					      &last_b), crows[i].want_rc);
		/* The ring holds more than the log keeps: it answers all. */
		assert_int_equal(stats(f->on).event_ring_hits, before.event_ring_hits + 1);
		assert_int_equal(last_a, last_b);
		assert_same_events(a, b);
		if (rc == 0) {
			assert_int_equal(last_a, after > cur ? after : cur);
			assert_int_equal(a->n, after > cur ? 0 : (size_t)(cur - after));
		} else {
			assert_int_equal(last_a, -7);
			assert_int_equal(a->n, 0);
		}
		print_message("  %s (after_rev %" PRId64 "): rc %d, %zu events\n", crows[i].why,
			      after, rc, a->n);
	}
	collect_free(a);
	collect_free(b);
}

static void test_compaction(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_log_keep = 16 };
	int64_t cur;

	open_pair(f, &opts);
	cur = play(f->on, 120);
	assert_int_equal(play(f->off, 120), cur);
	/* Automatic compaction trimmed the log while the ring kept it all. */
	assert_true(store_compacted_rev(f->on) > 0);
	assert_int_equal(stats(f->on).event_ring_events, (size_t)cur);
	check_compaction(f, "automatic");
	assert_int_equal(store_compact(f->on, 5), cur - 5);
	assert_int_equal(store_compact(f->off, 5), cur - 5);
	check_compaction(f, "store_compact(5)");
	assert_int_equal(store_compact(f->on, 0), cur);
	assert_int_equal(store_compact(f->off, 0), cur);
	check_compaction(f, "store_compact(0)");
	/* Writes after compaction are served again. */
	play(f->on, 10);
	play(f->off, 10);
	check_compaction(f, "after ten more steps");
	assert_int_equal(stats(f->on).event_ring_misses, 0);
}

/* ---- deletes ---------------------------------------------------------- */

static void test_deleted_text(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0 };
	struct collect *c = collect_new();
	int64_t r1, r2, r3, last;
	store_obj *o = NULL;
	char *want;
	size_t len;

	open_pair(f, &opts);
	assert_int_equal(store_create(f->on, "pods", "a", "x", render_tag, "made", &r1), 0);
	assert_int_equal(store_update(f->on, "pods", "a", "x", r1, render_tag, "changed", &r2), 0);
	assert_int_equal(store_delete(f->on, "pods", "a", "x", r2, render_tag, "gone", &r3), 0);
	assert_int_equal(store_events(f->on, "pods", "a", 0, 0, collect_visit, c, &last), 0);
	assert_int_equal(stats(f->on).event_ring_hits, 1);
	assert_int_equal(c->n, 3);
	assert_int_equal(last, r3);
	assert_int_equal(c->ev[0].type, STORE_ADDED);
	assert_int_equal(c->ev[1].type, STORE_MODIFIED);
	assert_int_equal(c->ev[2].type, STORE_DELETED);
	assert_int_equal(c->ev[2].rev, r3);
	want = render_tag(r3, &len, "gone");
	assert_string_equal(c->ev[2].json, want);
	assert_int_equal(c->ev[2].len, len);
	free(want);
	/* The DELETED text is an event, never the object. */
	assert_int_equal(store_get(f->on, "pods", "a", "x", &o), -ENOENT);
	assert_int_equal(store_create(f->on, "pods", "a", "x", render_tag, "again", &r1), 0);
	assert_int_equal(store_get(f->on, "pods", "a", "x", &o), 0);
	want = render_tag(r1, &len, "again");
	assert_string_equal(o->json, want);
	free(want);
	store_obj_free(o);
	collect_free(c);
}

/* ---- bounds ----------------------------------------------------------- */

static void test_count_bound(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_ring_events = 10 };
	struct collect *c = collect_new();
	struct store_stats st;
	int64_t cur;
	char name[16];
	int i;

	open_pair(f, &opts);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		assert_int_equal(store_create(f->on, "pods", "a", name, render_tag, "t", NULL), 0);
		assert_true(stats(f->on).event_ring_events <= 10);
	}
	cur = store_current_rev(f->on);
	assert_int_equal(stats(f->on).event_ring_events, 10);
	assert_int_equal(store_events(f->on, NULL, NULL, cur - 10, 0, collect_visit, c, NULL), 0);
	assert_int_equal(c->n, 10);
	collect_reset(c);
	assert_int_equal(store_events(f->on, NULL, NULL, cur - 11, 0, collect_visit, c, NULL), 0);
	assert_int_equal(c->n, 11);
	st = stats(f->on);
	print_message("count bound 10: %zu events, %zu bytes, %" PRIu64 " hits, %" PRIu64
		      " misses\n", st.event_ring_events, st.event_ring_bytes, st.event_ring_hits,
		      st.event_ring_misses);
	assert_int_equal(st.event_ring_hits, 1);
	assert_int_equal(st.event_ring_misses, 1);
	assert_log_whole(f->on, 0);
	collect_free(c);
}

static void test_byte_bound(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_ring_bytes = 8192 };
	struct collect *c = collect_new();
	struct store_stats st;
	size_t len = 300, big = 9000, held;
	int64_t cur, last;
	char name[16];
	int i;

	open_pair(f, &opts);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "o%d", i % 7);
		if (store_create(f->on, "pods", "a", name, render_padded, &len, NULL) == -EEXIST)
			assert_int_equal(store_update(f->on, "pods", "a", name, 0, render_padded,
						      &len, NULL), 0);
		st = stats(f->on);
		assert_true(st.event_ring_bytes <= 8192);
	}
	st = stats(f->on);
	held = st.event_ring_events;
	cur = store_current_rev(f->on);
	print_message("byte bound 8192: %zu events of %zu bytes held, %zu bytes charged\n",
		      held, len, st.event_ring_bytes);
	assert_true(held > 10 && held < 8192 / len);
	assert_int_equal(store_events(f->on, NULL, NULL, cur - (int64_t)held, 0, collect_visit, c,
				      &last), 0);
	assert_int_equal(c->n, held);
	assert_int_equal(last, cur);
	assert_int_equal(stats(f->on).event_ring_misses, 0);
	collect_reset(c);
	assert_int_equal(store_events(f->on, NULL, NULL, cur - (int64_t)held - 1, 0, collect_visit,
				      c, &last), 0);
	assert_int_equal(c->n, held + 1);
	assert_int_equal(stats(f->on).event_ring_misses, 1);

	/* An event larger than the whole bound empties the ring, which then
	 * starts after it. */
	assert_int_equal(store_create(f->on, "pods", "a", "big", render_padded, &big, &cur), 0);
	st = stats(f->on);
	assert_int_equal(st.event_ring_events, 0);
	assert_int_equal(st.event_ring_bytes, 0);
	collect_reset(c);
	assert_int_equal(store_events(f->on, NULL, NULL, cur, 0, collect_visit, c, &last), 0);
	assert_int_equal(c->n, 0);
	assert_int_equal(last, cur);
	assert_int_equal(stats(f->on).event_ring_hits, st.event_ring_hits + 1);
	assert_int_equal(store_events(f->on, NULL, NULL, cur - 1, 0, collect_visit, c, &last), 0);
	assert_int_equal(stats(f->on).event_ring_misses, st.event_ring_misses + 1);
	assert_int_equal(c->n, 1);
	assert_int_equal(c->ev[0].len, big);
	/* And the next small one is held again. */
	assert_int_equal(store_create(f->on, "pods", "a", "small", render_padded, &len, &cur), 0);
	assert_int_equal(stats(f->on).event_ring_events, 1);
	assert_log_whole(f->on, 0);
	collect_free(c);
}

static void test_off(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_ring_off = 1 };
	struct collect *c = collect_new();
	struct store_stats st;

	assert_int_equal(store_open(f->on_path, &opts, &f->on), 0);
	play(f->on, 30);
	assert_int_equal(store_events(f->on, NULL, NULL, store_current_rev(f->on) - 1, 0,
				      collect_visit, c, NULL), 0);
	assert_int_equal(c->n, 1);
	assert_log_whole(f->on, 0);
	st = stats(f->on);
	assert_int_equal(st.event_ring_hits, 0);
	assert_int_equal(st.event_ring_misses, 2);
	assert_int_equal(st.event_ring_events, 0);
	assert_int_equal(st.event_ring_bytes, 0);
	collect_free(c);
}

/* ---- a visit callback that calls into the store ----------------------- */

struct reenter {
	store *s;
	int64_t wrote;
	size_t seen;
};

static int reenter_visit(const store_obj *o, void *userdata)
{
	struct reenter *r = userdata;
	store_obj *g = NULL;
	char name[32];

	r->seen++;
	/* A read and a write from inside the visit: the writer must not wait
	 * for a lock this call holds. */
	if (store_get(r->s, o->resource, o->ns, o->name, &g) == 0)
		store_obj_free(g);
	snprintf(name, sizeof(name), "during-%" PRId64, o->rev);
	return store_create(r->s, "cm", "a", name, render_tag, "during", &r->wrote);
}

static void test_visit_reenters(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0 };
	struct reenter r = { 0 };
	int64_t cur, last;

	open_pair(f, &opts);
	cur = play(f->on, 20);
	r.s = f->on;
	assert_int_equal(store_events(f->on, "pods", NULL, cur - 6, 0, reenter_visit, &r, &last),
			 0);
	assert_true(r.seen > 0);
	/* The call's answer is the ring as it was: the writes made during
	 * the visits come after it. */
	assert_int_equal(last, cur);
	assert_int_equal(r.wrote, cur + (int64_t)r.seen);
	assert_int_equal(stats(f->on).event_ring_hits, 1);
	assert_log_whole(f->on, cur - 6);
}

/* ---- a failed batch --------------------------------------------------- */

static char *render_64k(int64_t rev, size_t *ret_len, void *userdata)
{
	static size_t len = 65535;

	return render_padded(rev, ret_len, &len);
}

/* Runs in a child: updates fill the file-size limit until a batch fails;
 * the ring must then be empty and every call read SQLite, until the first
 * batch after the limit is lifted starts it again at the committed
 * revision.  Exit codes name the failed check. */
static int failed_batch_child(const char *path)
{
	struct store_options opts = { .sync_full = 0 };
	struct rlimit rl = { .rlim_cur = 2u << 20, .rlim_max = RLIM_INFINITY };
	struct collect *c = calloc(1, sizeof(*c)), *d = calloc(1, sizeof(*d));
	struct store_stats st;
	int64_t rev, failed_at, after, last;
	store *s;
	int rc = 0, i;
	size_t k;

	signal(SIGXFSZ, SIG_IGN);
	if (!c || !d || store_open(path, &opts, &s) != 0)
		return 10;
	if (store_create(s, "blobs", "", "k", render_tag, "small", &rev) != 0)
		return 11;
	if (store_events(s, NULL, NULL, rev - 1, 0, collect_visit, c, NULL) != 0 || c->n != 1)
		return 12;
	if (stats(s).event_ring_hits != 1 || stats(s).event_ring_events != 1)
		return 13;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 14;
	for (i = 0; i < 1000 && rc == 0; i++)
		rc = store_update(s, "blobs", "", "k", 0, render_64k, NULL, &rev);
	if (rc != -EIO)
		return 15;
	/* Emptied: even a call after the current revision reads SQLite. */
	failed_at = store_current_rev(s);
	st = stats(s);
	if (st.event_ring_events != 0 || st.event_ring_bytes != 0)
		return 16;
	collect_reset(c);
	if (store_events(s, NULL, NULL, failed_at, 0, collect_visit, c, &last) != 0 ||
	    c->n != 0 || last != failed_at)
		return 17;
	if (stats(s).event_ring_misses != st.event_ring_misses + 1 ||
	    stats(s).event_ring_hits != st.event_ring_hits)
		return 18;

	/* Lift the limit: the next batch starts the ring again. */
	rl.rlim_cur = RLIM_INFINITY;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 19;
	for (i = 0; i < 5; i++)
		if (store_update(s, "blobs", "", "k", 0, render_tag, "after", &rev) != 0)
			return 20;
	st = stats(s);
	if (st.event_ring_events != 5)
		return 21;
	after = store_current_rev(s) - 5;
	collect_reset(c);
	if (store_events(s, NULL, NULL, after, 0, collect_visit, c, &last) != 0 || c->n != 5 ||
	    last != after + 5 || stats(s).event_ring_hits != st.event_ring_hits + 1)
		return 22;
	/* One older than the ring: from SQLite, and still whole. */
	if (store_events(s, NULL, NULL, after - 1, 0, collect_visit, d, &last) != 0 ||
	    d->n != 6 || d->ev[0].rev != after ||
	    stats(s).event_ring_misses != st.event_ring_misses + 1)
		return 23;

	/* What the ring gave equals what a store without a ring reads back. */
	store_close(s);
	opts.event_ring_off = 1;
	if (store_open(path, &opts, &s) != 0)
		return 25;
	collect_reset(d);
	if (store_events(s, NULL, NULL, after, 0, collect_visit, d, &last) != 0 || d->n != c->n)
		return 26;
	for (k = 0; k < c->n; k++)
		if (c->ev[k].rev != d->ev[k].rev || c->ev[k].type != d->ev[k].type ||
		    strcmp(c->ev[k].json, d->ev[k].json) || strcmp(c->ev[k].name, d->ev[k].name))
			return 27;
	/* And the log has no hole around the failure. */
	collect_reset(d);
	if (store_events(s, NULL, NULL, 0, 0, collect_visit, d, &last) != 0 ||
	    last != store_current_rev(s) || d->n != (size_t)last)
		return 28;
	for (k = 0; k < d->n; k++)
		if (d->ev[k].rev != (int64_t)k + 1)
			return 29;
	collect_free(c);
	collect_free(d);
	store_close(s);
	return 0;
}

static void test_failed_batch(void **state)
{
	struct fixture *f = *state;
	int rc = tu_run_child(failed_batch_child, f->on_path);

	print_message("child exited with %d\n", rc);
	assert_int_equal(rc, 0);
}

/* ---- followers while writers write ------------------------------------ */

#define CC_WRITERS 4
#define CC_WRITES 200
#define CC_RING 64

struct follower {
	store *s;
	const char *resource, *ns;
	size_t max;
	bool slow;              /* sleeps between calls, so it falls behind */
	int64_t start_after;    /* first call once the log is past this */
	_Atomic int64_t *final; /* set once every writer is done */
	int64_t *revs;          /* what it saw, in order */
	size_t n, cap;
	int err;                /* first broken rule, 0 if none */
	int64_t last;
	size_t calls;
};

static int follow_visit(const store_obj *o, void *userdata)
{
	struct follower *fl = userdata;
	char want[64];

	snprintf(want, sizeof(want), "{\"rev\":%" PRId64 ",", o->rev);
	if (strncmp(o->json, want, strlen(want)))
		fl->err = fl->err ? fl->err : 1;
	if (o->rev <= fl->last || (fl->n && o->rev <= fl->revs[fl->n - 1]))
		fl->err = fl->err ? fl->err : 2;
	if (fl->resource && strcmp(o->resource, fl->resource))
		fl->err = fl->err ? fl->err : 3;
	if (fl->ns && strcmp(o->ns, fl->ns))
		fl->err = fl->err ? fl->err : 4;
	if (fl->n == fl->cap)
		return -ENOSPC;
	fl->revs[fl->n++] = o->rev;
	return 0;
}

static void *follower_main(void *arg)
{
	struct follower *fl = arg;
	int64_t final, next;
	int rc;

	while (store_current_rev(fl->s) <= fl->start_after && !atomic_load(fl->final))
		store_wait(fl->s, fl->start_after, 20);
	for (;;) {
		final = atomic_load(fl->final);
		if (final && fl->last >= final)
			break;
		next = fl->last;
		rc = store_events(fl->s, fl->resource, fl->ns, fl->last, fl->max, follow_visit, fl,
				  &next);
		fl->calls++;
		if (rc) {
			fl->err = fl->err ? fl->err : rc;
			break;
		}
		if (next < fl->last)
			fl->err = fl->err ? fl->err : 5;
		fl->last = next;
		if (fl->slow)
			usleep(3000);
		else if (!final)
			store_wait(fl->s, fl->last, 20);
	}
	return NULL;
}

struct writer {
	store *s;
	int id;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char name[32];
	int i;

	for (i = 0; i < CC_WRITES; i++) {
		const char *res = (i + w->id) % 2 ? "pods" : "cm";
		const char *ns = i % 3 ? "a" : "b";

		snprintf(name, sizeof(name), "w%d-%d", w->id, i % 20);
		if (i % 9 == 8)
			store_delete(w->s, res, ns, name, 0, render_tag, "gone", NULL);
		else if (store_create(w->s, res, ns, name, render_tag, "c", NULL) == -EEXIST)
			store_update(w->s, res, ns, name, 0, render_tag, "u", NULL);
	}
	return NULL;
}

static void test_concurrent_followers(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .sync_full = 0, .event_ring_events = CC_RING };
	struct follower fl[] = {
		{ .max = 0 }, { .max = 7 }, { .max = 0, .slow = true },
		{ .resource = "pods", .max = 5 }, { .ns = "b", .max = 0, .slow = true },
		{ .resource = "cm", .ns = "a", .max = 3 },
		/* Starts when the ring no longer holds revision 1: its first
		 * call reads SQLite, later ones the ring. */
		{ .max = 0, .start_after = 3 * CC_RING },
	};
	const size_t nf = sizeof(fl) / sizeof(fl[0]);
	struct writer w[CC_WRITERS];
	pthread_t wt[CC_WRITERS], ft[sizeof(fl) / sizeof(fl[0])];
	_Atomic int64_t final = 0;
	struct collect *all = collect_new();
	struct store_stats st;
	int64_t cur, last;
	size_t i, k, j;

	assert_int_equal(store_open(f->on_path, &opts, &f->on), 0);
	for (i = 0; i < nf; i++) {
		fl[i].s = f->on;
		fl[i].final = &final;
		fl[i].cap = CC_WRITERS * CC_WRITES + 16;
		fl[i].revs = calloc(fl[i].cap, sizeof(int64_t));
		assert_non_null(fl[i].revs);
		assert_int_equal(pthread_create(&ft[i], NULL, follower_main, &fl[i]), 0);
	}
	for (i = 0; i < CC_WRITERS; i++) {
		w[i].s = f->on;
		w[i].id = (int)i;
		assert_int_equal(pthread_create(&wt[i], NULL, writer_main, &w[i]), 0);
	}
	for (i = 0; i < CC_WRITERS; i++)
		pthread_join(wt[i], NULL);
	cur = store_current_rev(f->on);
	atomic_store(&final, cur);
	store_wake_all(f->on);
	for (i = 0; i < nf; i++)
		pthread_join(ft[i], NULL);

	st = stats(f->on);
	assert_true(st.event_ring_misses >= 1);
	assert_true(st.event_ring_hits >= 1);
	/* The whole log, from SQLite (older than the ring). */
	assert_int_equal(store_events(f->on, NULL, NULL, 0, 0, collect_visit, all, &last), 0);
	assert_int_equal(last, cur);
	assert_int_equal(all->n, (size_t)cur);
	for (i = 0; i < nf; i++) {
		print_message("follower %zu (%s/%s max %zu%s%s): %zu events in %zu calls, err %d\n",
			      i, fl[i].resource ? fl[i].resource : "*", fl[i].ns ? fl[i].ns : "*",
			      fl[i].max, fl[i].slow ? " slow" : "",
			      fl[i].start_after ? " late" : "", fl[i].n, fl[i].calls, fl[i].err);
		assert_int_equal(fl[i].err, 0);
		assert_int_equal(fl[i].last, cur);
		/* Exactly the matching revisions of the whole log, in order. */
		for (k = 0, j = 0; k < all->n; k++) {
			if ((fl[i].resource && strcmp(all->ev[k].resource, fl[i].resource)) ||
			    (fl[i].ns && strcmp(all->ev[k].ns, fl[i].ns)))
				continue;
			assert_true(j < fl[i].n);
			assert_int_equal(fl[i].revs[j], all->ev[k].rev);
			j++;
		}
		assert_int_equal(j, fl[i].n);
		free(fl[i].revs);
	}
	/* A follower that is caught up is always answered from the ring. */
	st = stats(f->on);
	collect_reset(all);
	assert_int_equal(store_events(f->on, NULL, NULL, cur, 0, collect_visit, all, &last), 0);
	assert_int_equal(last, cur);
	assert_int_equal(all->n, 0);
	assert_int_equal(stats(f->on).event_ring_hits, st.event_ring_hits + 1);
	print_message("%" PRId64 " revisions; %" PRIu64 " ring hits, %" PRIu64 " misses\n", cur,
		      st.event_ring_hits, st.event_ring_misses);
	collect_free(all);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_matches_sqlite, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_text, setup, teardown),
		cmocka_unit_test_setup_teardown(test_count_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_visit_reenters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_followers, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
