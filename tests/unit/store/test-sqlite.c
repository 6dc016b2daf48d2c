/* Tests for src/store/sqlite.c (through store.h): revisions, preconditions,
 * list snapshots and pagination, the event log and its compaction, reopen,
 * group commit under concurrency, a batch with a failing member, store_wait,
 * a full disk, and durability of acknowledged writes across SIGKILL.
 * Each test gets a fresh database in its own mkdtemp() directory.
 *
 * Built a second time as test-postgres.c with STORE_TEST_PG defined: the
 * same tests (less the SQLite-file ones) against src/store/postgres.c on a
 * real PostgreSQL server (pgtest.h), each test on a fresh database, plus
 * tests of several stores (replicas) on one database. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "testutil.h"
#ifdef STORE_TEST_PG
#include "pgtest.h"

static struct tu_pg pg;
#endif

struct fixture {
	char dir[64];
	char path[256];         /* the file, or for PostgreSQL the URL */
	store *s;
};

static const struct store_options fast_opts = { .event_log_keep = 0, .sync_full = 0 };

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	if (tu_tmpdir(f->dir, sizeof(f->dir), "ah-store-test") < 0) {
		free(f);
		return -1;
	}
	snprintf(f->path, sizeof(f->path), "%s/store.db", f->dir);
#ifdef STORE_TEST_PG
	if (tu_pg_createdb(&pg, f->path, sizeof(f->path)) < 0) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
#endif
	if (store_open(f->path, &fast_opts, &f->s) != 0) {
		rmdir(f->dir);
		free(f);
		return -1;
	}
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

static void reopen(struct fixture *f, const struct store_options *opts)
{
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(store_open(f->path, opts, &f->s), 0);
}

/* Renders {"rev":N,"tag":"<userdata>"} and counts its calls. */
static atomic_int render_calls;

static char *render_tag(int64_t rev, size_t *ret_len, void *userdata)
{
	char *t;
	int n;

	atomic_fetch_add(&render_calls, 1);
	n = asprintf(&t, "{\"rev\":%lld,\"tag\":\"%s\"}", (long long)rev,
		     userdata ? (const char *)userdata : "");
	if (n < 0)
		return NULL;
	*ret_len = (size_t)n;
	return t;
}

static char *render_refuse(int64_t rev, size_t *ret_len, void *userdata)
{
	atomic_fetch_add(&render_calls, 1);
	return NULL;
}

static char *render_huge(int64_t rev, size_t *ret_len, void *userdata)
{
	char *t = malloc(STORE_MAX_JSON + 2);

	if (!t)
		return NULL;
	memset(t, 'x', STORE_MAX_JSON + 1);
	t[STORE_MAX_JSON + 1] = '\0';
	*ret_len = STORE_MAX_JSON + 1;
	return t;
}

/* Leaves *ret_len alone: the store must fall back to strlen(). */
static char *render_nolen(int64_t rev, size_t *ret_len, void *userdata)
{
	return strdup("{\"nolen\":true}");
}

static char *expected_text(int64_t rev, const char *tag)
{
	size_t len;

	return render_tag(rev, &len, (void *)tag);
}

static void assert_obj(store *s, const char *res, const char *ns, const char *name,
		       int64_t rev, const char *tag)
{
	store_obj *o = NULL;
	char *want = expected_text(rev, tag);

	assert_int_equal(store_get(s, res, ns, name, &o), 0);
	assert_string_equal(o->resource, res);
	assert_string_equal(o->ns, ns);
	assert_string_equal(o->name, name);
	assert_int_equal(o->rev, rev);
	assert_string_equal(o->json, want);
	assert_int_equal(o->len, strlen(want));
	free(want);
	store_obj_free(o);
}

static int64_t mk(store *s, const char *res, const char *ns, const char *name, const char *tag)
{
	int64_t rev = 0;

	assert_int_equal(store_create(s, res, ns, name, render_tag, (void *)tag, &rev), 0);
	return rev;
}

static void test_crud_revisions(void **state)
{
	struct fixture *f = *state;
	store_obj *o = NULL;
	int64_t rev = 0;

	assert_int_equal(store_current_rev(f->s), 0);
	assert_int_equal(store_compacted_rev(f->s), 0);
	assert_int_equal(mk(f->s, "pods", "default", "a", "v1"), 1);
	assert_obj(f->s, "pods", "default", "a", 1, "v1");
	assert_int_equal(store_update(f->s, "pods", "default", "a", 1, render_tag, "v2", &rev), 0);
	assert_int_equal(rev, 2);
	assert_obj(f->s, "pods", "default", "a", 2, "v2");
	/* expect_rev 0: unconditional. */
	assert_int_equal(store_update(f->s, "pods", "default", "a", 0, render_tag, "v3", &rev), 0);
	assert_int_equal(rev, 3);
	assert_int_equal(mk(f->s, "nodes", "", "n1", "node"), 4);
	assert_obj(f->s, "nodes", "", "n1", 4, "node");
	assert_int_equal(store_delete(f->s, "pods", "default", "a", 3, render_tag, "gone", &rev), 0);
	assert_int_equal(rev, 5);
	assert_int_equal(store_get(f->s, "pods", "default", "a", &o), -ENOENT);
	assert_null(o);
	assert_int_equal(store_current_rev(f->s), 5);
	/* The key is free again and the revision keeps counting. */
	assert_int_equal(mk(f->s, "pods", "default", "a", "again"), 6);
	/* ret_rev may be NULL. */
	assert_int_equal(store_update(f->s, "pods", "default", "a", 6, render_tag, "x", NULL), 0);
	assert_int_equal(store_current_rev(f->s), 7);
}

/* store_resource_stamp(): moves with every write of the resource (even a
 * refused one), not with reads; another resource's writes leave it (the
 * two names below hash to different slots). */
static void test_resource_stamp(void **state)
{
	struct fixture *f = *state;
	uint64_t s0 = store_resource_stamp(f->s, "things"), s1, s2, o0;
	store_obj *o = NULL;

	mk(f->s, "things", "ns", "x", "v1");
	s1 = store_resource_stamp(f->s, "things");
	assert_true(s1 != s0);
	assert_int_equal(store_get(f->s, "things", "ns", "x", &o), 0);
	store_obj_free(o);
	assert_true(store_resource_stamp(f->s, "things") == s1);
	o0 = store_resource_stamp(f->s, "others");
	mk(f->s, "others", "ns", "y", "v1");
	assert_true(store_resource_stamp(f->s, "others") != o0);
#ifndef STORE_TEST_PG
	/* With several replicas a notification of a write may move every
	 * stamp (store.h: "it may change on other writes too"). */
	assert_true(store_resource_stamp(f->s, "things") == s1);
#endif
	s1 = store_resource_stamp(f->s, "things");
	/* A write refused by its precondition still moves it (it may have
	 * raced with one that landed). */
	assert_int_equal(store_update(f->s, "things", "ns", "x", 999, render_tag, "v2", NULL), -ESTALE);
	s2 = store_resource_stamp(f->s, "things");
	assert_true(s2 != s1);
	assert_int_equal(store_delete(f->s, "things", "ns", "x", 0, render_tag, "gone", NULL), 0);
	assert_true(store_resource_stamp(f->s, "things") != s2);
}

static void test_preconditions(void **state)
{
	struct fixture *f = *state;
	char longname[STORE_MAX_KEY + 2];
	store_obj *o = NULL;
	int64_t rev = -1;

	mk(f->s, "pods", "ns", "a", "v1");
	atomic_store(&render_calls, 0);
	assert_int_equal(store_create(f->s, "pods", "ns", "a", render_tag, "dup", &rev), -EEXIST);
	assert_int_equal(rev, -1);
	assert_int_equal(store_update(f->s, "pods", "ns", "b", 0, render_tag, "", &rev), -ENOENT);
	assert_int_equal(store_update(f->s, "pods", "ns", "a", 99, render_tag, "", &rev), -ESTALE);
	assert_int_equal(store_delete(f->s, "pods", "ns", "a", 99, render_tag, "", &rev), -ESTALE);
	assert_int_equal(store_delete(f->s, "pods", "ns", "b", 0, render_tag, "", &rev), -ENOENT);
	/* Same name, other namespace or resource: a different key. */
	assert_int_equal(store_update(f->s, "pods", "other", "a", 0, render_tag, "", &rev), -ENOENT);
	assert_int_equal(store_update(f->s, "svc", "ns", "a", 0, render_tag, "", &rev), -ENOENT);
	/* Failed preconditions never call render nor consume a revision. */
	assert_int_equal(atomic_load(&render_calls), 0);
	assert_int_equal(store_current_rev(f->s), 1);
	assert_obj(f->s, "pods", "ns", "a", 1, "v1");

	atomic_store(&render_calls, 0);
	assert_int_equal(store_create(f->s, "pods", "ns", "c", render_refuse, NULL, &rev),
			 -ECANCELED);
	assert_int_equal(atomic_load(&render_calls), 1);
	assert_int_equal(store_update(f->s, "pods", "ns", "a", 1, render_refuse, NULL, &rev),
			 -ECANCELED);
	assert_int_equal(store_create(f->s, "pods", "ns", "c", render_huge, NULL, &rev), -EFBIG);
	assert_int_equal(store_get(f->s, "pods", "ns", "c", &o), -ENOENT);
	assert_int_equal(store_current_rev(f->s), 1);
	assert_obj(f->s, "pods", "ns", "a", 1, "v1");

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(store_create(f->s, NULL, "ns", "x", render_tag, "", &rev), -EINVAL);
	assert_int_equal(store_create(f->s, "pods", NULL, "x", render_tag, "", &rev), -EINVAL);
	assert_int_equal(store_create(f->s, "pods", "ns", "", render_tag, "", &rev), -EINVAL);
	assert_int_equal(store_create(f->s, "", "ns", "x", render_tag, "", &rev), -EINVAL);
	assert_int_equal(store_create(f->s, "pods", "ns", longname, render_tag, "", &rev), -EINVAL);
	assert_int_equal(store_create(f->s, "pods", "ns", "x", NULL, NULL, &rev), -EINVAL);
	assert_int_equal(store_get(f->s, "pods", "ns", longname, &o), -EINVAL);
	longname[STORE_MAX_KEY] = '\0';
	assert_int_equal(store_create(f->s, "pods", "ns", longname, render_tag, "", &rev), 0);
	assert_int_equal(rev, 2);
}

static int64_t seen_rev;

static char *render_record(int64_t rev, size_t *ret_len, void *userdata)
{
	seen_rev = rev;
	return render_tag(rev, ret_len, userdata);
}

/* ~200 KB of non-ASCII text, to check that stored text comes back byte for byte. */
static char *render_large(int64_t rev, size_t *ret_len, void *userdata)
{
	static const char piece[] = "\xc3\xa9t\xc3\xa9 \xe2\x82\xac ";
	size_t n = 20000, plen = sizeof(piece) - 1, i;
	char *t = malloc(n * plen + 1);

	if (!t)
		return NULL;
	for (i = 0; i < n; i++)
		memcpy(t + i * plen, piece, plen);
	t[n * plen] = '\0';
	*ret_len = n * plen;
	return t;
}

static void test_render_sees_revision(void **state)
{
	struct fixture *f = *state;
	store_obj *o = NULL;
	int64_t rev = 0;
	size_t len;
	char *want;

	mk(f->s, "a", "", "one", "");
	mk(f->s, "a", "", "two", "");
	assert_int_equal(store_create(f->s, "cm", "ns", "x", render_record, "hello", &rev), 0);
	assert_int_equal(seen_rev, 3);
	assert_int_equal(rev, 3);
	assert_obj(f->s, "cm", "ns", "x", 3, "hello");
	assert_int_equal(store_update(f->s, "cm", "ns", "x", 3, render_record, "bye", &rev), 0);
	assert_int_equal(seen_rev, 4);
	assert_obj(f->s, "cm", "ns", "x", 4, "bye");

	assert_int_equal(store_create(f->s, "cm", "ns", "nolen", render_nolen, NULL, &rev), 0);
	assert_int_equal(store_get(f->s, "cm", "ns", "nolen", &o), 0);
	assert_string_equal(o->json, "{\"nolen\":true}");
	assert_int_equal(o->len, strlen("{\"nolen\":true}"));
	store_obj_free(o);

	assert_int_equal(store_create(f->s, "cm", "ns", "large", render_large, NULL, &rev), 0);
	assert_int_equal(store_get(f->s, "cm", "ns", "large", &o), 0);
	want = render_large(0, &len, NULL);
	assert_int_equal(o->len, len);
	assert_memory_equal(o->json, want, len + 1);
	free(want);
	store_obj_free(o);
}

/* Collects "ns/name" of visited objects, stopping after `limit` (0 = all). */
struct collect {
	char keys[64][64];
	char nss[64][32], names[64][32];
	int64_t revs[64];
	int types[64];
	size_t n, limit;
	int fail_with;
	store *write_during;   /* if set: create pods/zzz/zzz on the first visit */
};

static int collect_visit(const store_obj *o, void *userdata)
{
	struct collect *c = userdata;

	if (c->fail_with)
		return c->fail_with;
	if (c->write_during && c->n == 0)
		assert_int_equal(store_create(c->write_during, "pods", "zzz", "zzz", render_tag,
					      "late", NULL), 0);
	assert_true(c->n < 64);
	assert_int_equal(strlen(o->json), o->len);
	snprintf(c->keys[c->n], sizeof(c->keys[0]), "%s/%s/%s", o->resource, o->ns, o->name);
	snprintf(c->nss[c->n], sizeof(c->nss[0]), "%s", o->ns);
	snprintf(c->names[c->n], sizeof(c->names[0]), "%s", o->name);
	c->revs[c->n] = o->rev;
	c->types[c->n] = o->type;
	c->n++;
	return c->limit && c->n >= c->limit ? 1 : 0;
}

static void assert_keys(const struct collect *c, const char *const *want, size_t n)
{
	size_t i;

	assert_int_equal(c->n, n);
	for (i = 0; i < n; i++)
		assert_string_equal(c->keys[i], want[i]);
}

static void test_list(void **state)
{
	struct fixture *f = *state;
	struct collect c;
	int64_t rev = -1;
	store_obj *o = NULL;

	mk(f->s, "pods", "b", "x", "");
	mk(f->s, "pods", "a", "y", "");
	mk(f->s, "pods", "a", "x", "");
	mk(f->s, "pods", "", "z", "");
	mk(f->s, "cm", "a", "q", "");
	mk(f->s, "pods", "a", "x2", "");

	{
		static const char *const want[] = {
			"pods//z", "pods/a/x", "pods/a/x2", "pods/a/y", "pods/b/x" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", NULL, NULL, NULL, collect_visit, &c,
					    &rev), 0);
		assert_keys(&c, want, 5);
		assert_int_equal(rev, 6);
		assert_int_equal(c.revs[0], 4);
	}
	{
		static const char *const want[] = { "pods/a/x", "pods/a/x2", "pods/a/y" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", "a", NULL, NULL, collect_visit, &c,
					    NULL), 0);
		assert_keys(&c, want, 3);
	}
	{
		static const char *const want[] = { "pods/a/x2", "pods/a/y", "pods/b/x" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", NULL, "a", "x", collect_visit, &c,
					    NULL), 0);
		assert_keys(&c, want, 3);
	}
	{
		static const char *const want[] = { "pods/a/x2", "pods/a/y" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", "a", "a", "x", collect_visit, &c,
					    NULL), 0);
		assert_keys(&c, want, 2);
	}
	{
		/* A bound in another namespace: one before "a" leaves all of "a",
		 * one after it nothing (within "a" the bound is on names only). */
		static const char *const want[] = { "pods/a/x", "pods/a/x2", "pods/a/y" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", "a", "", "zz", collect_visit, &c, NULL), 0);
		assert_keys(&c, want, 3);
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", "a", "b", "", collect_visit, &c, NULL), 0);
		assert_int_equal(c.n, 0);
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, "pods", "a", "a", "y", collect_visit, &c, NULL), 0);
		assert_int_equal(c.n, 0);
	}
	{
		/* Pages of two, each resuming after the last key seen. */
		static const char *const want[] = {
			"pods//z", "pods/a/x", "pods/a/x2", "pods/a/y", "pods/b/x" };
		char after_ns[64] = "", after_name[64] = "";
		const char *an = NULL;
		size_t total = 0, pages = 0;

		for (;;) {
			struct collect page = { .limit = 2 };
			size_t i;

			assert_int_equal(store_list(f->s, "pods", NULL, after_ns, an,
						    collect_visit, &page, NULL), 0);
			for (i = 0; i < page.n; i++)
				assert_string_equal(page.keys[i], want[total + i]);
			total += page.n;
			pages++;
			if (page.n < 2)
				break;
			strcpy(after_ns, page.nss[page.n - 1]);
			strcpy(after_name, page.names[page.n - 1]);
			an = after_name;
		}
		assert_int_equal(total, 5);
		assert_int_equal(pages, 3);
	}
	{
		static const char *const want[] = {
			"cm/a/q", "pods//z", "pods/a/x", "pods/a/x2", "pods/a/y", "pods/b/x" };
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, NULL, NULL, NULL, NULL, collect_visit, &c,
					    NULL), 0);
		assert_keys(&c, want, 6);
		memset(&c, 0, sizeof(c));
		assert_int_equal(store_list(f->s, NULL, NULL, "a", "x", collect_visit, &c,
					    NULL), -EINVAL);
	}
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_list(f->s, "none", NULL, NULL, NULL, collect_visit, &c, &rev), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(rev, 6);

	memset(&c, 0, sizeof(c));
	c.fail_with = -EINTR;
	rev = -1;
	assert_int_equal(store_list(f->s, "pods", NULL, NULL, NULL, collect_visit, &c, &rev),
			 -EINTR);
	assert_int_equal(rev, -1);

	/* A write made during the list is not in its snapshot. */
	memset(&c, 0, sizeof(c));
	c.write_during = f->s;
	assert_int_equal(store_list(f->s, "pods", NULL, NULL, NULL, collect_visit, &c, &rev), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(rev, 6);
	assert_int_equal(store_current_rev(f->s), 7);
	assert_int_equal(store_get(f->s, "pods", "zzz", "zzz", &o), 0);
	store_obj_free(o);
}

static void test_events(void **state)
{
	struct fixture *f = *state;
	struct collect c;
	int64_t last = -1;

	mk(f->s, "pods", "a", "x", "c1");                       /* 1 */
	mk(f->s, "cm", "a", "c", "c2");                         /* 2 */
	assert_int_equal(store_update(f->s, "pods", "a", "x", 1, render_tag, "u3", NULL), 0);
	mk(f->s, "pods", "b", "y", "c4");                       /* 4 */
	assert_int_equal(store_delete(f->s, "pods", "a", "x", 0, render_tag, "gone", NULL), 0);

	{
		static const char *const want[] = {
			"pods/a/x", "cm/a/c", "pods/a/x", "pods/b/y", "pods/a/x" };
		static const int types[] = {
			STORE_ADDED, STORE_ADDED, STORE_MODIFIED, STORE_ADDED, STORE_DELETED };
		size_t i;

		memset(&c, 0, sizeof(c));
		assert_int_equal(store_events(f->s, NULL, NULL, 0, 0, collect_visit, &c, &last), 0);
		assert_keys(&c, want, 5);
		for (i = 0; i < 5; i++) {
			assert_int_equal(c.revs[i], (int64_t)i + 1);
			assert_int_equal(c.types[i], types[i]);
		}
		assert_int_equal(last, 5);
	}
	{
		/* The DELETED event carries the delete's rendered text. */
		struct collect one = { .limit = 1 };

		assert_int_equal(store_events(f->s, "pods", "a", 4, 0, collect_visit, &one, &last), 0);
		assert_int_equal(one.n, 1);
		assert_int_equal(one.types[0], STORE_DELETED);
		assert_int_equal(last, 5);
	}
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, "pods", NULL, 0, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 4);
	assert_int_equal(c.revs[0], 1);
	assert_int_equal(c.revs[1], 3);
	assert_int_equal(c.revs[2], 4);
	assert_int_equal(c.revs[3], 5);

	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, "pods", "a", 0, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 3);
	assert_int_equal(c.revs[2], 5);

	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, "a", 3, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 1);
	assert_int_equal(c.revs[0], 5);

	/* max bounds the count; ret_last says where to resume. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, 0, 2, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(last, 2);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, last, 2, collect_visit, &c, &last), 0);
	assert_int_equal(c.revs[0], 3);
	assert_int_equal(last, 4);

	/* No match: the scan still advances to the end of the log. */
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, "cm", NULL, 2, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(last, 5);

	/* Stopped by the callback: resume after the event it took. */
	memset(&c, 0, sizeof(c));
	c.limit = 3;
	assert_int_equal(store_events(f->s, NULL, NULL, 0, 0, collect_visit, &c, &last), 0);
	assert_int_equal(last, 3);

	memset(&c, 0, sizeof(c));
	c.fail_with = -EPIPE;
	assert_int_equal(store_events(f->s, NULL, NULL, 0, 0, collect_visit, &c, &last), -EPIPE);

	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, 5, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(last, 5);
}

static void test_compaction(void **state)
{
	struct fixture *f = *state;
	struct store_options opts = { .event_log_keep = 160, .sync_full = 0 };
	struct collect c;
	int64_t last, cur, comp;
	char name[32];
	int i;

	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		mk(f->s, "pods", "ns", name, "");
	}
	assert_int_equal(store_compact(f->s, 5), 15);
	assert_int_equal(store_compacted_rev(f->s), 15);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, 14, 0, collect_visit, &c, &last), -ERANGE);
	assert_int_equal(store_events(f->s, NULL, NULL, 0, 0, collect_visit, &c, &last), -ERANGE);
	assert_int_equal(c.n, 0);
	assert_int_equal(store_events(f->s, NULL, NULL, 15, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 5);
	assert_int_equal(c.revs[0], 16);
	/* Keeping more than exists changes nothing; objects are untouched. */
	assert_int_equal(store_compact(f->s, 1000), 15);
	assert_int_equal(store_current_rev(f->s), 20);
	assert_obj(f->s, "pods", "ns", "o0", 1, "");

	/* Automatic: the log is trimmed back to `keep` once it passed a slack. */
	reopen(f, &opts);
	assert_int_equal(store_compacted_rev(f->s), 15);
	for (i = 20; i < 1000; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		mk(f->s, "pods", "ns", name, "");
		cur = store_current_rev(f->s);
		comp = store_compacted_rev(f->s);
		assert_true(cur - comp <= 160 + 160 / 16 + 1);
	}
	cur = store_current_rev(f->s);
	comp = store_compacted_rev(f->s);
	assert_true(comp >= cur - 171 && comp <= cur - 160);
	memset(&c, 0, sizeof(c));
	c.limit = 1;
	assert_int_equal(store_events(f->s, NULL, NULL, comp, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.revs[0], comp + 1);
	assert_int_equal(store_events(f->s, NULL, NULL, comp - 1, 0, collect_visit, &c, &last),
			 -ERANGE);
	assert_int_equal(store_compact(f->s, 0), cur);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, cur, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 0);
	assert_int_equal(last, cur);
}

static void test_reopen(void **state)
{
	struct fixture *f = *state;
	struct collect c;
	int64_t last;

	mk(f->s, "pods", "a", "x", "one");
	mk(f->s, "pods", "a", "y", "two");
	assert_int_equal(store_delete(f->s, "pods", "a", "y", 2, render_tag, "", NULL), 0);
	mk(f->s, "cm", "", "z", "three");
	assert_int_equal(store_compact(f->s, 2), 2);
	reopen(f, &fast_opts);
	assert_int_equal(store_current_rev(f->s), 4);
	assert_int_equal(store_compacted_rev(f->s), 2);
	assert_obj(f->s, "pods", "a", "x", 1, "one");
	assert_obj(f->s, "cm", "", "z", 4, "three");
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, 1, 0, collect_visit, &c, &last), -ERANGE);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_events(f->s, NULL, NULL, 2, 0, collect_visit, &c, &last), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(c.types[0], STORE_DELETED);
	assert_int_equal(mk(f->s, "pods", "a", "y", "back"), 5);
#ifndef STORE_TEST_PG
	/* The "sqlite:" prefix names the same file. */
	{
		char url[300];

		store_close(f->s);
		f->s = NULL;
		snprintf(url, sizeof(url), "sqlite:%s", f->path);
		assert_int_equal(store_open(url, NULL, &f->s), 0);
		assert_int_equal(store_current_rev(f->s), 5);
	}
#endif
}

#define N_THREADS 16
#define N_PER_THREAD 500

struct creator {
	store *s;
	int id;
	int64_t revs[N_PER_THREAD];
	int failures;
};

static void *creator_main(void *arg)
{
	struct creator *c = arg;
	char name[32];
	int i;

	for (i = 0; i < N_PER_THREAD; i++) {
		snprintf(name, sizeof(name), "t%02d-%04d", c->id, i);
		if (store_create(c->s, "things", "ns", name, render_tag, NULL, &c->revs[i]) != 0)
			c->failures++;
	}
	return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int check_rev_in_text(const store_obj *o, void *userdata)
{
	long long r = -1;

	sscanf(o->json, "{\"rev\":%lld", &r);
	if (r != o->rev)
		return -EBADMSG;
	(*(size_t *)userdata)++;
	return 0;
}

static void test_concurrent_creates(void **state)
{
	struct fixture *f = *state;
	static struct creator cs[N_THREADS];
	pthread_t th[N_THREADS];
	static int64_t all[N_THREADS * N_PER_THREAD];
	struct store_stats st;
	size_t n = 0, i;
	int64_t last;
	int t;

	for (t = 0; t < N_THREADS; t++) {
		memset(&cs[t], 0, sizeof(cs[t]));
		cs[t].s = f->s;
		cs[t].id = t;
		assert_int_equal(pthread_create(&th[t], NULL, creator_main, &cs[t]), 0);
	}
	for (t = 0; t < N_THREADS; t++) {
		assert_int_equal(pthread_join(th[t], NULL), 0);
		assert_int_equal(cs[t].failures, 0);
		memcpy(all + t * N_PER_THREAD, cs[t].revs, sizeof(cs[t].revs));
		/* One thread's writes are acknowledged in order. */
		for (i = 1; i < N_PER_THREAD; i++)
			assert_true(cs[t].revs[i] > cs[t].revs[i - 1]);
	}
	qsort(all, N_THREADS * N_PER_THREAD, sizeof(all[0]), cmp_i64);
	for (i = 0; i < N_THREADS * N_PER_THREAD; i++)
		assert_int_equal(all[i], (int64_t)i + 1);
	assert_int_equal(store_current_rev(f->s), N_THREADS * N_PER_THREAD);

	assert_int_equal(store_list(f->s, "things", NULL, NULL, NULL, check_rev_in_text, &n,
				    NULL), 0);
	assert_int_equal(n, N_THREADS * N_PER_THREAD);
	n = 0;
	assert_int_equal(store_events(f->s, NULL, NULL, 0, 0, check_rev_in_text, &n, &last), 0);
	assert_int_equal(n, N_THREADS * N_PER_THREAD);
	assert_int_equal(last, N_THREADS * N_PER_THREAD);

	store_stats(f->s, &st);
	assert_int_equal(st.writes, N_THREADS * N_PER_THREAD);
	assert_true(st.commits <= st.writes);
	assert_int_equal(st.queued, 0);
	print_message("  %llu commits for %llu writes, largest batch %zu\n",
		      (unsigned long long)st.commits, (unsigned long long)st.writes, st.max_batch);
}

/* A render that holds the writer thread until released, so that the
 * requests queued meanwhile all land in the next batch. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_state;   /* 0 idle, 1 writer inside render, 2 released */

static char *render_gate(int64_t rev, size_t *ret_len, void *userdata)
{
	pthread_mutex_lock(&gate_mu);
	gate_state = 1;
	pthread_cond_broadcast(&gate_cond);
	while (gate_state != 2)
		pthread_cond_wait(&gate_cond, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	return render_tag(rev, ret_len, userdata);
}

struct job {
	store *s;
	int op;                 /* 'c' create, 'u' update, 'd' delete */
	const char *name;
	int64_t expect;
	store_render_fn render;
	int result;
	int64_t rev;
};

static void *job_main(void *arg)
{
	struct job *j = arg;

	if (j->op == 'c')
		j->result = store_create(j->s, "pods", "ns", j->name, j->render, "", &j->rev);
	else if (j->op == 'u')
		j->result = store_update(j->s, "pods", "ns", j->name, j->expect, j->render, "",
					 &j->rev);
	else
		j->result = store_delete(j->s, "pods", "ns", j->name, j->expect, j->render, "",
					 &j->rev);
	return NULL;
}

static void test_batch_partial_failure(void **state)
{
	struct fixture *f = *state;
	struct job blocker = { .op = 'c', .name = "blocker", .render = render_gate };
	struct job jobs[] = {
		{ .op = 'c', .name = "new1", .render = render_tag },
		{ .op = 'c', .name = "exists", .render = render_tag },
		{ .op = 'u', .name = "upd", .expect = 1, .render = render_tag },
		{ .op = 'u', .name = "upd", .expect = 2, .render = render_tag },
		{ .op = 'c', .name = "new2", .render = render_tag },
		{ .op = 'd', .name = "missing", .render = render_tag },
		{ .op = 'c', .name = "refused", .render = render_refuse },
		{ .op = 'c', .name = "new3", .render = render_tag },
	};
	const size_t n = sizeof(jobs) / sizeof(jobs[0]);
	pthread_t bt, th[sizeof(jobs) / sizeof(jobs[0])];
	struct store_stats before, st;
	struct collect c;
	int64_t revs[8], rev;
	store_obj *o = NULL;
	size_t i, k = 0;

	mk(f->s, "pods", "ns", "exists", "");
	mk(f->s, "pods", "ns", "upd", "");
	blocker.s = f->s;
	gate_state = 0;
	assert_int_equal(pthread_create(&bt, NULL, job_main, &blocker), 0);
	pthread_mutex_lock(&gate_mu);
	while (gate_state != 1)
		pthread_cond_wait(&gate_cond, &gate_mu);
	pthread_mutex_unlock(&gate_mu);

	/* The writer is now stuck inside a transaction; reads still work and
	 * see only committed state. */
	assert_int_equal(store_get(f->s, "pods", "ns", "exists", &o), 0);
	store_obj_free(o);
	assert_int_equal(store_get(f->s, "pods", "ns", "blocker", &o), -ENOENT);
	memset(&c, 0, sizeof(c));
	assert_int_equal(store_list(f->s, "pods", NULL, NULL, NULL, collect_visit, &c, &rev), 0);
	assert_int_equal(c.n, 2);
	assert_int_equal(rev, 2);

	store_stats(f->s, &before);
	for (i = 0; i < n; i++) {
		jobs[i].s = f->s;
		assert_int_equal(pthread_create(&th[i], NULL, job_main, &jobs[i]), 0);
	}
	do {
		usleep(1000);
		store_stats(f->s, &st);
	} while (st.queued < n);

	pthread_mutex_lock(&gate_mu);
	gate_state = 2;
	pthread_cond_broadcast(&gate_cond);
	pthread_mutex_unlock(&gate_mu);
	assert_int_equal(pthread_join(bt, NULL), 0);
	assert_int_equal(blocker.result, 0);
	assert_int_equal(blocker.rev, 3);
	for (i = 0; i < n; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);

	assert_int_equal(jobs[0].result, 0);
	assert_int_equal(jobs[1].result, -EEXIST);
	assert_int_equal(jobs[2].result, -ESTALE);
	assert_int_equal(jobs[3].result, 0);
	assert_int_equal(jobs[4].result, 0);
	assert_int_equal(jobs[5].result, -ENOENT);
	assert_int_equal(jobs[6].result, -ECANCELED);
	assert_int_equal(jobs[7].result, 0);
	for (i = 0; i < n; i++)
		if (jobs[i].result == 0)
			revs[k++] = jobs[i].rev;
	qsort(revs, k, sizeof(revs[0]), cmp_i64);
	assert_int_equal(k, 4);
	for (i = 0; i < k; i++)
		assert_int_equal(revs[i], 4 + (int64_t)i);
	assert_int_equal(store_current_rev(f->s), 7);

	/* The blocker's batch and one more carried all eight requests. */
	store_stats(f->s, &st);
	assert_int_equal(st.commits - before.commits, 2);
	assert_true(st.max_batch >= n);
	assert_obj(f->s, "pods", "ns", "upd", jobs[3].rev, "");
	assert_obj(f->s, "pods", "ns", "new3", jobs[7].rev, "");
	assert_int_equal(store_get(f->s, "pods", "ns", "refused", &o), -ENOENT);
}

struct waiter {
	store *s;
	int64_t after;
	int timeout;
	int64_t result;
	int64_t woke_ms;        /* now_ms() when store_wait() returned */
	atomic_int done;
};

static int64_t now_ms(void);

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;

	w->result = store_wait(w->s, w->after, w->timeout);
	w->woke_ms = now_ms();
	atomic_store(&w->done, 1);
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_wait(void **state)
{
	struct fixture *f = *state;
	struct waiter w = { .s = f->s, .after = 1, .timeout = 10000 };
	pthread_t th;
	int64_t t0;

	mk(f->s, "a", "", "one", "");
	/* Already past: returns at once. */
	assert_int_equal(store_wait(f->s, 0, 10000), 1);

	t0 = now_ms();
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&w.done), 0);
	mk(f->s, "a", "", "two", "");
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.result, 2);
	assert_true(now_ms() - t0 < 5000);

	t0 = now_ms();
	assert_int_equal(store_wait(f->s, 2, 100), 2);
	assert_true(now_ms() - t0 >= 90);

	/* wake_all releases a waiter with no timeout and nothing to see. */
	memset(&w, 0, sizeof(w));
	w.s = f->s;
	w.after = 1000;
	w.timeout = -1;
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
	while (!atomic_load(&w.done)) {
		usleep(10 * 1000);
		store_wake_all(f->s);
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(w.result, 2);
}

static void test_open_errors(void **state)
{
	struct fixture *f = *state;
	char path[192];
	sqlite3 *db;
	store *s = NULL;
	int fd, rc;

	/* A PostgreSQL URL goes to PostgreSQL (or is refused by a build
	 * without libpq), never to a SQLite file named after it.  Nothing
	 * listens on port 1. */
	rc = store_open("postgres://user@localhost:1/agenthub?connect_timeout=2", NULL, &s);
	assert_true(rc == -ENOTSUP || rc == -ECONNREFUSED);
	rc = store_open("postgresql://localhost:1/x?connect_timeout=2", NULL, &s);
	assert_true(rc == -ENOTSUP || rc == -ECONNREFUSED);
	assert_int_equal(access("postgres:", F_OK), -1);
	assert_int_equal(access("postgresql:", F_OK), -1);
	assert_int_equal(store_open("sqlite:", NULL, &s), -EINVAL);
	assert_int_equal(store_open(NULL, NULL, &s), -EINVAL);
	assert_null(s);

	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", f->dir);
	assert_true(store_open(path, NULL, &s) < 0);

	snprintf(path, sizeof(path), "%s/garbage.db", f->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	for (int i = 0; i < 100; i++)
		assert_int_equal(write(fd, "this is not a database. ", 24), 24);
	close(fd);
	assert_int_equal(store_open(path, NULL, &s), -EPROTO);

	snprintf(path, sizeof(path), "%s/foreign.db", f->dir);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE t (x)", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(path, NULL, &s), -EPROTO);

	/* A schema version from the future is refused, not misread. */
	mk(f->s, "a", "", "x", "");
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "UPDATE meta SET value = 99 WHERE key = 'schema'",
				      NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(store_open(f->path, NULL, &s), -EPROTO);
	assert_null(s);
}

/* A store with one damaged page is refused at open (PRAGMA quick_check),
 * not served until a read reaches the damage. */
static void test_corrupt_page_refused(void **state)
{
	struct fixture *f = *state;
	char name[32], junk[1024];
	struct stat st;
	store *s = NULL;
	int fd, i;

	for (i = 0; i < 400; i++) {
		snprintf(name, sizeof(name), "obj-%04d", i);
		mk(f->s, "things", "ns", name, "some payload to fill a few pages of the table");
	}
	store_close(f->s);
	f->s = NULL;
	assert_int_equal(store_open(f->path, NULL, &s), 0);
	store_close(s);
	s = NULL;
	assert_int_equal(stat(f->path, &st), 0);
	assert_true(st.st_size > 16 * 4096);
	for (i = 0; i < (int)sizeof(junk); i++)
		junk[i] = (char)(i * 37 + 11);
	fd = open(f->path, O_WRONLY);
	assert_true(fd >= 0);
	/* The middle of a page in the middle of the file: a b-tree page. */
	assert_int_equal(pwrite(fd, junk, sizeof(junk), (st.st_size / 4096 / 2) * 4096 + 1024), (ssize_t)sizeof(junk));
	close(fd);
	assert_int_equal(store_open(f->path, NULL, &s), -EUCLEAN);
	assert_null(s);
}

/* ~64 KB per object, so that a small file-size limit is hit quickly. */
static char *render_64k(int64_t rev, size_t *ret_len, void *userdata)
{
	char *t = malloc(65536);

	if (!t)
		return NULL;
	memset(t, 'a' + (int)(rev % 26), 65535);
	t[65535] = '\0';
	*ret_len = 65535;
	return t;
}

/* Runs in a child: writes until the file-size limit stops it.  Exit codes
 * name the first check that failed. */
static int full_disk_child(const char *path, int fd)
{
	struct rlimit rl = { .rlim_cur = 2u << 20, .rlim_max = RLIM_INFINITY };
	store *s;
	char name[32];
	int64_t rev;
	int rc = 0, i, n = 0;
	store_obj *o;

	signal(SIGXFSZ, SIG_IGN);
	if (store_open(path, &fast_opts, &s) != 0)
		return 10;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 11;
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "big%d", i);
		rc = store_create(s, "blobs", "", name, render_64k, NULL, &rev);
		if (rc)
			break;
		n++;
		if (dprintf(fd, "%s\n", name) < 0)
			return 12;
	}
	if (rc != -EIO || n == 0)
		return 13;
	/* Reads still work, and failed writes stay failed without crashing. */
	if (store_get(s, "blobs", "", "big0", &o) != 0)
		return 14;
	store_obj_free(o);
	if (store_create(s, "blobs", "", "more", render_64k, NULL, &rev) != -EIO)
		return 15;
	if (store_current_rev(s) != n)
		return 16;
	/* Space comes back: so do writes, with the next revision. */
	rl.rlim_cur = RLIM_INFINITY;
	if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
		return 17;
	if (store_create(s, "blobs", "", "after", render_tag, NULL, &rev) != 0 || rev != n + 1)
		return 18;
	if (dprintf(fd, "after\n") < 0)
		return 19;
	store_close(s);
	return 0;
}

static size_t read_names(int fd, char ***ret_names)
{
	size_t cap = 1 << 16, len = 0, n = 0, i, start = 0;
	char *buf = malloc(cap);
	char **names = NULL;
	ssize_t r;

	assert_non_null(buf);
	while ((r = read(fd, buf + len, cap - len - 1)) > 0 || (r < 0 && errno == EINTR)) {
		if (r < 0)
			continue;
		len += (size_t)r;
		if (cap - len < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
	}
	/* A write cut by SIGKILL can leave a partial last line: ignore it. */
	for (i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		buf[i] = '\0';
		names = realloc(names, (n + 1) * sizeof(*names));
		assert_non_null(names);
		names[n++] = strdup(buf + start);
		start = i + 1;
	}
	free(buf);
	*ret_names = names;
	return n;
}

static void free_names(char **names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void test_full_disk(void **state)
{
	struct fixture *f = *state;
	char **names;
	size_t n, i;
	int p[2], status;
	store_obj *o;
	pid_t pid;

	store_close(f->s);
	f->s = NULL;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(full_disk_child(f->path, p[1]));
	}
	close(p[1]);
	n = read_names(p[0], &names);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(n >= 2);
	assert_int_equal(store_open(f->path, &fast_opts, &f->s), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(store_get(f->s, "blobs", "", names[i], &o), 0);
		store_obj_free(o);
	}
	assert_int_equal(store_current_rev(f->s), n);
	free_names(names, n);
}

struct crasher {
	store *s;
	int fd;
	int id;
};

static void *crasher_main(void *arg)
{
	struct crasher *c = arg;
	char name[64];
	int i, len;

	for (i = 0;; i++) {
		len = snprintf(name, sizeof(name), "k%d-%d\n", c->id, i);
		name[len - 1] = '\0';
		if (store_create(c->s, "crash", "ns", name, render_tag, NULL, NULL) != 0)
			_exit(20);
		name[len - 1] = '\n';
		/* One short write(2) per name: a pipe keeps it whole. */
		if (write(c->fd, name, (size_t)len) != len)
			_exit(21);
	}
	return NULL;
}

static void crash_child(const char *path, int fd)
{
	struct store_options opts = { .sync_full = 1 };
	struct crasher cs[4];
	pthread_t th[4];
	store *s;
	int i;

	if (store_open(path, &opts, &s) != 0)
		_exit(22);
	for (i = 0; i < 4; i++) {
		cs[i] = (struct crasher){ .s = s, .fd = fd, .id = i };
		if (pthread_create(&th[i], NULL, crasher_main, &cs[i]) != 0)
			_exit(23);
	}
	for (;;)
		pause();
}

static void test_crash_durability(void **state)
{
	struct fixture *f = *state;
	char **names;
	size_t n, i;
	int p[2], status;
	store_obj *o;
	pid_t pid;

	store_close(f->s);
	f->s = NULL;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		crash_child(f->path, p[1]);
	}
	close(p[1]);
	/* The child blocks if the pipe fills up; that only lowers how many
	 * writes it gets acknowledged, so the parent simply waits. */
	usleep(300 * 1000);
	assert_int_equal(kill(pid, SIGKILL), 0);
	n = read_names(p[0], &names);
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(n > 0);

	assert_int_equal(store_open(f->path, &fast_opts, &f->s), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(store_get(f->s, "crash", "ns", names[i], &o), 0);
		store_obj_free(o);
	}
	/* Writes in flight at the kill may have landed too, unacknowledged. */
	assert_true(store_current_rev(f->s) >= (int64_t)n);
	print_message("  %zu acknowledged writes before SIGKILL, all present\n", n);
	free_names(names, n);
}

/* Session locks: one holder at a time; a held lock is proved on every try;
 * freeing the holder (its session ends) lets another take it; break ends
 * the holder's session.  SQLite has none. */
static void test_session_lock(void **state)
{
	struct fixture *f = *state;
	store_session_lock *a = NULL, *b = NULL;

#ifdef STORE_TEST_PG
	assert_int_equal(store_session_lock_new(f->s, "leader", &a), 0);
	assert_int_equal(store_session_lock_new(f->s, "leader", &b), 0);
	assert_int_equal(store_session_lock_try(a, 2000), 1);
	assert_int_equal(store_session_lock_try(b, 2000), 0);
	assert_int_equal(store_session_lock_try(a, 2000), 1);     /* still held */
	store_session_lock_free(a);
	a = NULL;
	assert_int_equal(store_session_lock_try(b, 2000), 1);
	/* Another name is another lock. */
	assert_int_equal(store_session_lock_new(f->s, "other", &a), 0);
	assert_int_equal(store_session_lock_try(a, 2000), 1);
	store_session_lock_free(a);
	/* Break: b's session is ended, so the next proof fails and a third
	 * session takes the lock. */
	assert_int_equal(store_session_lock_new(f->s, "leader", &a), 0);
	assert_int_equal(store_session_lock_try(a, 2000), 0);
	assert_int_equal(store_session_lock_break(a, 2000), 1);
	assert_true(store_session_lock_try(b, 2000) < 0);
	assert_int_equal(store_session_lock_try(a, 2000), 1);
	/* b reconnects; the lock is a's now. */
	assert_int_equal(store_session_lock_try(b, 2000), 0);
	store_session_lock_free(a);
	store_session_lock_free(b);
#else
	assert_int_equal(store_session_lock_new(f->s, "leader", &a), -ENOTSUP);
	assert_null(a);
	(void)b;
#endif
	assert_int_equal(store_session_lock_new(f->s, "", &a), -EINVAL);
	store_session_lock_free(NULL);
}

#ifdef STORE_TEST_PG
/* Two stores on one database, as two replicas: one revision sequence,
 * preconditions across them, and a write through one wakes store_wait()
 * on the other within 100 ms and shows in its events. */
struct xcreator {
	store *s;
	int id;
	int n;
	int64_t *revs;
};

static void *xcreator_main(void *arg)
{
	struct xcreator *c = arg;
	char name[32];
	int i;

	for (i = 0; i < c->n; i++) {
		snprintf(name, sizeof(name), "x%d-%d", c->id, i);
		if (store_create(c->s, "things", "ns", name, render_tag, NULL, &c->revs[i]) != 0)
			c->revs[i] = -1;
	}
	return NULL;
}

static void test_two_replicas(void **state)
{
	struct fixture *f = *state;
	store *b = NULL;
	struct waiter w;
	struct collect c;
	pthread_t th[4];
	struct xcreator xc[4];
	static int64_t revs[4][200], all[800];
	int64_t t0, rev, last, worst = 0;
	int i, k;

	assert_int_equal(store_open(f->path, &fast_opts, &b), 0);
	assert_int_equal(mk(f->s, "pods", "ns", "a", "one"), 1);
	/* b sees a's write at once on a read, and its revision on the next
	 * wake-up. */
	assert_obj(b, "pods", "ns", "a", 1, "one");
	assert_int_equal(store_wait(b, 0, 2000), 1);
	/* A write through b gets the next revision. */
	assert_int_equal(mk(b, "pods", "ns", "b", "two"), 2);
	assert_int_equal(store_update(f->s, "pods", "ns", "b", 1, render_tag, "x", NULL), -ESTALE);
	assert_int_equal(store_update(f->s, "pods", "ns", "b", 2, render_tag, "x", &rev), 0);
	assert_int_equal(rev, 3);
	assert_int_equal(store_create(b, "pods", "ns", "a", render_tag, "y", NULL), -EEXIST);

	/* Cross-replica wake-up latency, ten times. */
	for (k = 0; k < 10; k++) {
		/* b has caught up with everything so far first. */
		rev = store_current_rev(f->s);
		assert_int_equal(store_wait(b, rev - 1, 2000), rev);
		memset(&w, 0, sizeof(w));
		w.s = b;
		w.after = rev;
		w.timeout = 5000;
		assert_int_equal(pthread_create(&th[0], NULL, waiter_main, &w), 0);
		usleep(20 * 1000);
		/* From the write's acknowledgement to b's wake-up (negative
		 * when b woke before the writer's caller did). */
		rev = mk(f->s, "pods", "ns", k % 2 ? "a2" : "b2", "w");
		t0 = now_ms();
		assert_int_equal(pthread_join(th[0], NULL), 0);
		assert_true(w.result >= rev);
		if (w.woke_ms - t0 > worst)
			worst = w.woke_ms - t0;
		assert_int_equal(store_delete(f->s, "pods", "ns", k % 2 ? "a2" : "b2", 0,
					      render_tag, "", NULL), 0);
	}
	print_message("  worst cross-replica wake-up after the ack %lld ms\n", (long long)worst);
	assert_true(worst < 100);

	/* Both replicas write at once: one contiguous sequence, and each
	 * replica's events list all of them in order. */
	rev = store_current_rev(f->s);
	for (i = 0; i < 4; i++) {
		xc[i] = (struct xcreator){ .s = i % 2 ? b : f->s, .id = i, .n = 200,
					   .revs = revs[i] };
		assert_int_equal(pthread_create(&th[i], NULL, xcreator_main, &xc[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		memcpy(all + i * 200, revs[i], sizeof(revs[i]));
	}
	qsort(all, 800, sizeof(all[0]), cmp_i64);
	for (i = 0; i < 800; i++)
		assert_int_equal(all[i], rev + 1 + i);
	memset(&c, 0, sizeof(c));
	c.limit = 0;
	assert_int_equal(store_events(b, "things", NULL, rev, 0, check_rev_in_text,
				      &(size_t){ 0 }, &last), 0);
	assert_int_equal(last, rev + 800);
	assert_int_equal(store_wait(b, rev + 799, 2000), rev + 800);
	assert_int_equal(store_wait(f->s, rev + 799, 2000), rev + 800);

	/* Compaction through one is the other's -ERANGE. */
	assert_int_equal(store_compact(f->s, 10), rev + 790);
	assert_int_equal(store_events(b, NULL, NULL, rev, 0, collect_visit, &c, &last), -ERANGE);
	store_close(b);
}

static void test_pg_open_errors(void **state)
{
	struct fixture *f = *state;
	char url[300], red[300];
	PGconn *c;
	PGresult *r;
	store *s = NULL;

	/* Nothing listens there: refused, with libpq's reason, no password. */
	snprintf(url, sizeof(url), "postgres://u:s3cret@/x?host=%s&port=1&connect_timeout=2",
		 f->dir);
	assert_int_equal(store_open(url, NULL, &s), -ECONNREFUSED);
	assert_true(strlen(store_open_error()) > 0);
	assert_null(strstr(store_open_error(), "s3cret"));

	store_url_redact("postgres://u:s3cret@h:5432/db?sslmode=require", red, sizeof(red));
	assert_string_equal(red, "postgres://u:xxxxx@h:5432/db?sslmode=require");
	store_url_redact("postgresql://h/db?sslmode=require&password=s3cret&x=1", red,
			 sizeof(red));
	assert_string_equal(red, "postgresql://h/db?sslmode=require&password=xxxxx&x=1");
	store_url_redact("postgres://u@h/db", red, sizeof(red));
	assert_string_equal(red, "postgres://u@h/db");
	store_url_redact("/var/lib/agenthub/agenthub.db", red, sizeof(red));
	assert_string_equal(red, "/var/lib/agenthub/agenthub.db");

	/* A schema newer than this build is refused, not served. */
	store_close(f->s);
	f->s = NULL;
	c = PQconnectdb(f->path);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, "UPDATE ah_meta SET v = 99 WHERE k = 'schema'");
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	PQfinish(c);
	assert_int_equal(store_open(f->path, NULL, &s), -EPROTO);
	assert_non_null(strstr(store_open_error(), "99"));
}
#endif

int main(void)
{
#ifdef STORE_TEST_PG
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crud_revisions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_preconditions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resource_stamp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_render_sees_revision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_creates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_partial_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_durability, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_replicas, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pg_open_errors, setup, teardown),
	};
	int rc = tu_pg_start(&pg);

	if (rc == 1) {
		printf("SKIP: PostgreSQL server binaries not installed "
		       "(/usr/lib/postgresql/*/bin/initdb; Debian package postgresql)\n");
		return 77;
	}
	if (rc < 0) {
		tu_pg_stop(&pg);
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_pg_stop(&pg);
	return rc;
#else
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_crud_revisions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_preconditions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resource_stamp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_render_sees_revision, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list, setup, teardown),
		cmocka_unit_test_setup_teardown(test_events, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compaction, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_concurrent_creates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_partial_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_open_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_corrupt_page_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_disk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_crash_durability, setup, teardown),
		cmocka_unit_test_setup_teardown(test_session_lock, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
#endif
}
