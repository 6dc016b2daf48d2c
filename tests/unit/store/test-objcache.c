/* Tests for the object cache of src/store/sqlite.c: store_get() answers
 * from memory after writes and after misses, updates replace and deletes
 * remove, the byte bound holds under eviction, a cache fill that raced with
 * a write is refused, concurrent readers never go back in time, a failed
 * batch leaves the cache agreeing with SQLite, and a reopened store starts
 * cold.  Each test gets a fresh database in its own mkdtemp() directory. */
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

#include "store/store-internal.h"
#include "testutil.h"

struct fixture {
	char dir[64];
	char path[128];
	struct store_options opts;
	store *s;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "ah-objcache-test") < 0) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
	f->opts.sync_full = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	store_close(f->s);
	tu_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static void open_store(struct fixture *f)
{
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(store_open(f->path, &f->opts, &f->s), 0);
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

static void assert_text(const store_obj *o, int64_t rev, const char *tag)
{
	size_t len;
	char *want = render_tag(rev, &len, (void *)tag);

	assert_non_null(want);
	assert_int_equal(o->rev, rev);
	assert_string_equal(o->json, want);
	assert_int_equal(o->len, len);
	free(want);
}

static struct store_stats stats(store *s)
{
	struct store_stats st;

	store_stats(s, &st);
	return st;
}

/* ---- the rules, one row each ---------------------------------------- */

enum step_op { S_CREATE, S_UPDATE, S_UPDATE_STALE, S_DELETE, S_GET, S_REOPEN };

struct step {
	enum step_op op;
	const char *name;
	const char *tag;        /* what a get must find (NULL: -ENOENT) */
	int hit;                /* a get: 1 answered from the cache, 0 read SQLite */
	const char *why;
};

static const struct step steps[] = {
	{ S_CREATE, "a", "one", 0, "a create fills the cache" },
	{ S_GET, "a", "one", 1, "hit after create" },
	{ S_GET, "a", "one", 1, "hit again" },
	{ S_UPDATE, "a", "two", 0, "an update replaces the entry" },
	{ S_GET, "a", "two", 1, "hit sees the update" },
	{ S_GET, "nope", NULL, 0, "absence is not cached" },
	{ S_GET, "nope", NULL, 0, "absence is read again" },
	{ S_DELETE, "a", NULL, 0, "a delete removes the entry" },
	{ S_GET, "a", NULL, 0, "miss after delete" },
	{ S_CREATE, "a", "three", 0, "re-create fills it again" },
	{ S_GET, "a", "three", 1, "hit after re-create" },
	{ S_CREATE, "b", "four", 0, "second key" },
	{ S_UPDATE_STALE, "b", "five", 0, "a refused update leaves the entry" },
	{ S_GET, "b", "four", 1, "hit on the unchanged entry" },
	{ S_REOPEN, NULL, NULL, 0, "a reopened store starts cold" },
	{ S_GET, "a", "three", 0, "cold read of a" },
	{ S_GET, "a", "three", 1, "the miss filled the cache" },
	{ S_GET, "b", "four", 0, "cold read of b" },
	{ S_GET, "b", "four", 1, "hit on b" },
};

static void run_steps(struct fixture *f)
{
	const char *names[] = { "a", "b", "nope" };
	int64_t revs[3] = { 0 };
	size_t i, k;

	open_store(f);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *t = &steps[i];
		struct store_stats before = stats(f->s), after;
		store_obj *o = NULL;
		int64_t rev = 0;
		int rc;

		print_message("step %zu: %s\n", i, t->why);
		for (k = 0; t->name && strcmp(names[k], t->name); k++)
			;
		switch (t->op) {
		case S_CREATE:
			assert_int_equal(store_create(f->s, "pods", "ns", t->name, render_tag,
						      (void *)t->tag, &rev), 0);
			revs[k] = rev;
			break;
		case S_UPDATE:
			assert_int_equal(store_update(f->s, "pods", "ns", t->name, revs[k],
						      render_tag, (void *)t->tag, &rev), 0);
			revs[k] = rev;
			break;
		case S_UPDATE_STALE:
			assert_int_equal(store_update(f->s, "pods", "ns", t->name, revs[k] + 100,
						      render_tag, (void *)t->tag, &rev), -ESTALE);
			break;
		case S_DELETE:
			assert_int_equal(store_delete(f->s, "pods", "ns", t->name, revs[k],
						      render_tag, "gone", NULL), 0);
			break;
		case S_REOPEN:
			open_store(f);
			break;
		case S_GET:
			rc = store_get(f->s, "pods", "ns", t->name, &o);
			if (t->tag) {
				assert_int_equal(rc, 0);
				assert_string_equal(o->resource, "pods");
				assert_string_equal(o->ns, "ns");
				assert_string_equal(o->name, t->name);
				assert_text(o, revs[k], t->tag);
				store_obj_free(o);
			} else {
				assert_int_equal(rc, -ENOENT);
			}
			break;
		}
		after = stats(f->s);
		if (t->op == S_REOPEN) {
			assert_int_equal(after.cache_hits, 0);
			assert_int_equal(after.cache_misses, 0);
			assert_int_equal(after.cache_entries, 0);
		} else if (f->opts.cache_off) {
			assert_int_equal(after.cache_hits, 0);
			assert_int_equal(after.cache_misses, 0);
			assert_int_equal(after.cache_entries, 0);
		} else if (t->op == S_GET) {
			assert_int_equal(after.cache_hits - before.cache_hits, t->hit);
			assert_int_equal(after.cache_misses - before.cache_misses, !t->hit);
		} else {
			assert_int_equal(after.cache_hits, before.cache_hits);
			assert_int_equal(after.cache_misses, before.cache_misses);
		}
	}
}

static void test_rules(void **state)
{
	run_steps(*state);
}

/* The same answers with the cache turned off, and no cache counters. */
static void test_rules_cache_off(void **state)
{
	struct fixture *f = *state;

	f->opts.cache_off = 1;
	run_steps(f);
}

/* ---- the byte bound --------------------------------------------------- */

#define EVICT_N 400
#define EVICT_BOUND ((size_t)64 * 2048)

static void test_eviction_bound(void **state)
{
	struct fixture *f = *state;
	char name[32], tag[300], big[4000];
	struct store_stats st;
	int64_t revs[EVICT_N], rev;
	uint64_t hits;
	store_obj *o;
	size_t i;

	f->opts.cache_bytes = EVICT_BOUND;
	open_store(f);
	memset(tag, 'x', sizeof(tag) - 1);
	tag[sizeof(tag) - 1] = '\0';
	for (i = 0; i < EVICT_N; i++) {
		snprintf(name, sizeof(name), "obj-%zu", i);
		assert_int_equal(store_create(f->s, "pods", "ns", name, render_tag, tag,
					      &revs[i]), 0);
		st = stats(f->s);
		assert_true(st.cache_bytes <= EVICT_BOUND);
	}
	/* 400 objects of ~370 bytes do not fit in 128 KiB. */
	st = stats(f->s);
	assert_true(st.cache_entries > 0);
	assert_true(st.cache_entries < EVICT_N);

	/* Every object reads back right, from the cache or not, and the
	 * fills keep the bound. */
	for (i = 0; i < EVICT_N; i++) {
		snprintf(name, sizeof(name), "obj-%zu", i);
		assert_int_equal(store_get(f->s, "pods", "ns", name, &o), 0);
		assert_text(o, revs[i], tag);
		store_obj_free(o);
		st = stats(f->s);
		assert_true(st.cache_bytes <= EVICT_BOUND);
	}
	st = stats(f->s);
	assert_int_equal(st.cache_hits + st.cache_misses, EVICT_N);
	assert_true(st.cache_misses > 0);

	/* The most recently used entry survives; an object larger than a
	 * stripe's share of the bound is never cached. */
	snprintf(name, sizeof(name), "obj-%d", EVICT_N - 1);
	hits = stats(f->s).cache_hits;
	assert_int_equal(store_get(f->s, "pods", "ns", name, &o), 0);
	store_obj_free(o);
	assert_int_equal(stats(f->s).cache_hits, hits + 1);
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(store_create(f->s, "pods", "ns", "big", render_tag, big, &rev), 0);
	for (i = 0; i < 2; i++) {
		st = stats(f->s);
		assert_int_equal(store_get(f->s, "pods", "ns", "big", &o), 0);
		assert_text(o, rev, big);
		store_obj_free(o);
		assert_int_equal(stats(f->s).cache_misses, st.cache_misses + 1);
		assert_int_equal(stats(f->s).cache_hits, st.cache_hits);
	}

	/* Reopened: cold, and everything reads back from SQLite. */
	open_store(f);
	for (i = 0; i < EVICT_N; i++) {
		snprintf(name, sizeof(name), "obj-%zu", i);
		assert_int_equal(store_get(f->s, "pods", "ns", name, &o), 0);
		assert_text(o, revs[i], tag);
		store_obj_free(o);
	}
	st = stats(f->s);
	assert_int_equal(st.cache_hits, 0);
	assert_int_equal(st.cache_misses, EVICT_N);
	assert_true(st.cache_bytes <= EVICT_BOUND);
}

/* ---- a fill that raced with a write ------------------------------------ */

enum race_op { RACE_NONE, RACE_UPDATE, RACE_DELETE };

struct race {
	enum race_op op;
	int64_t read_rev;       /* what the missed read found */
	int64_t write_rev;      /* what the write in the window got */
	int calls;
};

/* Runs between the missed read and its cache fill, once. */
static void race_hook(store *s, const store_obj *read, void *userdata)
{
	struct race *r = userdata;

	if (r->calls++)
		return;
	r->read_rev = read->rev;
	if (r->op == RACE_UPDATE)
		assert_int_equal(store_update(s, "pods", "ns", "x", 0, render_tag, "new",
					      &r->write_rev), 0);
	else if (r->op == RACE_DELETE)
		assert_int_equal(store_delete(s, "pods", "ns", "x", 0, render_tag, "gone",
					      &r->write_rev), 0);
}

static void test_fill_race(void **state)
{
	static const struct {
		enum race_op op;
		int next_rc;            /* the get after the racing one */
		const char *next_tag;
		int next_hit;
	} rows[] = {
		/* Nothing in the window: the fill is taken. */
		{ RACE_NONE, 0, "old", 1 },
		/* The writer's entry wins over the older fill. */
		{ RACE_UPDATE, 0, "new", 1 },
		/* The fill must be refused, else the deleted object lives on. */
		{ RACE_DELETE, -ENOENT, NULL, 0 },
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct race r = { .op = rows[i].op };
		struct store_stats before;
		store_obj *o = NULL;
		int64_t rev;

		print_message("row %zu\n", i);
		open_store(f);
		store_delete(f->s, "pods", "ns", "x", 0, render_tag, "", NULL);
		assert_int_equal(store_create(f->s, "pods", "ns", "x", render_tag, "old", &rev), 0);
		open_store(f);  /* cold, so the next get misses */
		store__sqlite_set_get_hook(f->s, race_hook, &r);
		assert_int_equal(store_get(f->s, "pods", "ns", "x", &o), 0);
		store__sqlite_set_get_hook(f->s, NULL, NULL);
		assert_int_equal(r.calls, 1);
		assert_int_equal(r.read_rev, rev);
		/* The racing get answers what it read before the write. */
		assert_text(o, rev, "old");
		store_obj_free(o);
		o = NULL;

		before = stats(f->s);
		assert_int_equal(store_get(f->s, "pods", "ns", "x", &o), rows[i].next_rc);
		if (rows[i].next_tag) {
			assert_text(o, rows[i].op == RACE_NONE ? rev : r.write_rev,
				    rows[i].next_tag);
			store_obj_free(o);
		}
		assert_int_equal(stats(f->s).cache_hits - before.cache_hits, rows[i].next_hit);
	}
}

/* ---- concurrency: never back in time ---------------------------------- */

#define CC_KEYS 48
#define CC_WRITERS 3
#define CC_WRITES 300
#define CC_READERS 3
#define CC_MIN_READS 3000

struct cc {
	store *s;
	/* The highest revision acknowledged for each key, of any write. */
	_Atomic int64_t acked[CC_KEYS];
	atomic_int writers_left;
	atomic_int failures;
	atomic_long reads;
};

struct cc_thread {
	struct cc *cc;
	int id;
};

static void cc_name(char *buf, size_t size, int k)
{
	snprintf(buf, size, "key-%d", k);
}

static void cc_ack(struct cc *cc, int k, int64_t rev)
{
	int64_t cur = atomic_load(&cc->acked[k]);

	while (cur < rev && !atomic_compare_exchange_weak(&cc->acked[k], &cur, rev))
		;
}

static void *cc_writer(void *arg)
{
	struct cc_thread *t = arg;
	struct cc *cc = t->cc;
	char name[32];
	int64_t rev;
	int i, k, rc;

	for (i = 0; i < CC_WRITES; i++) {
		k = (i * 7 + t->id * 13) % CC_KEYS;
		cc_name(name, sizeof(name), k);
		if (i % 10 == 9)
			rc = store_delete(cc->s, "pods", "ns", name, 0, render_tag, "gone", &rev);
		else
			rc = store_update(cc->s, "pods", "ns", name, 0, render_tag, "upd", &rev);
		if (rc == -ENOENT)
			rc = store_create(cc->s, "pods", "ns", name, render_tag, "new", &rev);
		if (rc == 0)
			cc_ack(cc, k, rev);
		else if (rc != -EEXIST && rc != -ENOENT)
			atomic_fetch_add(&cc->failures, 1);
	}
	atomic_fetch_sub(&cc->writers_left, 1);
	return NULL;
}

static void *cc_reader(void *arg)
{
	struct cc_thread *t = arg;
	struct cc *cc = t->cc;
	int64_t seen[CC_KEYS] = { 0 };
	char name[32], want[64];
	long n;
	int k, rc;

	for (n = 0; n < CC_MIN_READS || atomic_load(&cc->writers_left) > 0; n++) {
		store_obj *o = NULL;
		int64_t floor;

		k = (int)((n * 5 + t->id) % CC_KEYS);
		cc_name(name, sizeof(name), k);
		floor = atomic_load(&cc->acked[k]);
		rc = store_get(cc->s, "pods", "ns", name, &o);
		if (rc == -ENOENT)
			continue;
		if (rc != 0) {
			atomic_fetch_add(&cc->failures, 1);
			continue;
		}
		/* Not older than anything acknowledged before the read began
		 * or seen by this thread, and the text is that revision's. */
		if (o->rev < floor || o->rev < seen[k])
			atomic_fetch_add(&cc->failures, 1);
		snprintf(want, sizeof(want), "{\"rev\":%" PRId64 ",", o->rev);
		if (strncmp(o->json, want, strlen(want)) != 0 || strlen(o->json) != o->len)
			atomic_fetch_add(&cc->failures, 1);
		seen[k] = o->rev;
		store_obj_free(o);
	}
	atomic_fetch_add(&cc->reads, n);
	return NULL;
}

struct listed {
	int64_t rev[CC_KEYS];
	char *json[CC_KEYS];
};

static int listed_visit(const store_obj *o, void *userdata)
{
	struct listed *l = userdata;
	int k;

	if (sscanf(o->name, "key-%d", &k) != 1 || k < 0 || k >= CC_KEYS)
		return -EINVAL;
	l->rev[k] = o->rev;
	l->json[k] = strdup(o->json);
	return 0;
}

static void test_concurrent(void **state)
{
	static const size_t bounds[] = { (size_t)64 * 512, 0 };
	struct fixture *f = *state;
	size_t b;

	for (b = 0; b < sizeof(bounds) / sizeof(bounds[0]); b++) {
		struct cc *cc = calloc(1, sizeof(*cc));
		struct cc_thread th[CC_WRITERS + CC_READERS];
		pthread_t tid[CC_WRITERS + CC_READERS];
		struct listed l;
		struct store_stats st;
		char name[32];
		int i, k;

		assert_non_null(cc);
		memset(&l, 0, sizeof(l));
		print_message("cache_bytes %zu\n", bounds[b]);
		f->opts.cache_bytes = bounds[b];
		open_store(f);
		cc->s = f->s;
		atomic_init(&cc->writers_left, CC_WRITERS);
		for (i = 0; i < CC_WRITERS + CC_READERS; i++) {
			th[i].cc = cc;
			th[i].id = i;
			assert_int_equal(pthread_create(&tid[i], NULL,
							i < CC_WRITERS ? cc_writer : cc_reader,
							&th[i]), 0);
		}
		for (i = 0; i < CC_WRITERS + CC_READERS; i++)
			assert_int_equal(pthread_join(tid[i], NULL), 0);
		assert_int_equal(atomic_load(&cc->failures), 0);
		assert_true(atomic_load(&cc->reads) >= CC_READERS * CC_MIN_READS);
		st = stats(f->s);
		assert_true(st.cache_hits > 0);
		assert_true(st.cache_bytes <= (bounds[b] ? bounds[b] : STORE_CACHE_BYTES_DEFAULT));

		/* At rest, the cache answers exactly what SQLite holds. */
		assert_int_equal(store_list(f->s, "pods", "ns", NULL, NULL, listed_visit, &l,
					    NULL), 0);
		for (k = 0; k < CC_KEYS; k++) {
			store_obj *o = NULL;
			int rc;

			cc_name(name, sizeof(name), k);
			rc = store_get(f->s, "pods", "ns", name, &o);
			if (!l.json[k]) {
				assert_int_equal(rc, -ENOENT);
				continue;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(o->rev, l.rev[k]);
			assert_string_equal(o->json, l.json[k]);
			store_obj_free(o);
			free(l.json[k]);
		}
		/* Start the next bound from an empty store. */
		for (k = 0; k < CC_KEYS; k++) {
			cc_name(name, sizeof(name), k);
			store_delete(f->s, "pods", "ns", name, 0, render_tag, "", NULL);
		}
		free(cc);
	}
}

/* ---- a failed batch --------------------------------------------------- */

static char *render_64k(int64_t rev, size_t *ret_len, void *userdata)
{
	char *t = malloc(65536);
	int n;

	if (!t)
		return NULL;
	n = snprintf(t, 65536, "{\"rev\":%" PRId64 ",\"pad\":\"", rev);
	memset(t + n, 'p', 65536 - n - 3);
	memcpy(t + 65536 - 3, "\"}", 3);
	*ret_len = 65535;
	return t;
}

static int get_list_visit(const store_obj *o, void *userdata)
{
	store_obj *l = userdata;

	if (strcmp(o->name, "k"))
		return 0;
	l->rev = o->rev;
	l->json = strdup(o->json);
	return l->json ? 1 : -ENOMEM;
}

/* Runs in a child: a cached key is updated until the file-size limit fails
 * a batch; the cache must then agree with SQLite.  Exit codes name the
 * failed check. */
static int failed_batch_child(const char *path)
{
	struct store_options opts = { .sync_full = 0 };
	struct rlimit rl = { .rlim_cur = 2u << 20, .rlim_max = RLIM_INFINITY };
	store_obj *o = NULL, l = { 0 };
	int64_t rev;
	store *s;
	int rc = 0, i;

	signal(SIGXFSZ, SIG_IGN);
	if (store_open(path, &opts, &s) != 0)
		return 10;
	if (store_create(s, "blobs", "", "k", render_tag, "small", &rev) != 0)
		return 11;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 12;
	for (i = 0; i < 1000 && rc == 0; i++)
		rc = store_update(s, "blobs", "", "k", 0, render_64k, NULL, &rev);
	if (rc != -EIO)
		return 13;
	if (store_get(s, "blobs", "", "k", &o) != 0)
		return 14;
	if (store_list(s, "blobs", "", NULL, NULL, get_list_visit, &l, NULL) != 0 || !l.json)
		return 15;
	if (o->rev != l.rev || strcmp(o->json, l.json) != 0)
		return 16;
	store_obj_free(o);
	free(l.json);
	store_close(s);
	return 0;
}

static void test_failed_batch(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(tu_run_child(failed_batch_child, f->path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rules_cache_off, setup, teardown),
		cmocka_unit_test_setup_teardown(test_eviction_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fill_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_failed_batch, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
