/* Tests for src/controllers/runtime.c: queue de-duplication, per-key
 * back-off after errors, delayed requeues, no concurrent reconcile of one
 * key, cache indexes and event mapping (self, owner, function), the
 * store watch feeding a controller, and waiting for the cache to catch up
 * with the store (rt_wait_synced). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "controllers/runtime.h"
#include "testutil.h"

#define MAX_CALLS 64

struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cond;
	int calls;
	int64_t at[MAX_CALLS];
	char names[MAX_CALLS][256];
	char kinds[MAX_CALLS][256];
	char nss[MAX_CALLS][256];
	/* behaviour */
	int fail_first;         /* return an error for this many calls */
	int64_t requeue_ms;     /* > 0: first call asks for a requeue after this */
	int sleep_ms;           /* each call sleeps this long */
	atomic_int inflight, max_inflight;
};

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cond, NULL);
}

static void rec_release(struct rec *r)
{
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cond);
}

static struct rt_result rec_reconcile(void *ctx, const struct rt_key *key)
{
	struct rec *r = ctx;
	int n, cur;

	cur = atomic_fetch_add(&r->inflight, 1) + 1;
	if (cur > atomic_load(&r->max_inflight))
		atomic_store(&r->max_inflight, cur);
	if (r->sleep_ms)
		usleep((useconds_t)r->sleep_ms * 1000);
	atomic_fetch_sub(&r->inflight, 1);
	pthread_mutex_lock(&r->mu);
	n = r->calls;
	if (n < MAX_CALLS) {
		r->at[n] = util_mono_ms();
		snprintf(r->names[n], sizeof(r->names[n]), "%s", key->name);
		snprintf(r->kinds[n], sizeof(r->kinds[n]), "%s", key->kind);
		snprintf(r->nss[n], sizeof(r->nss[n]), "%s", key->ns);
	}
	r->calls++;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->mu);
	if (n < r->fail_first)
		return rt_error(-EIO);
	if (n == 0 && r->requeue_ms > 0)
		return rt_requeue_after(r->requeue_ms);
	return rt_done();
}

/* Wait until at least n calls happened or timeout_ms passed; the count. */
static int rec_wait(struct rec *r, int n, int timeout_ms)
{
	int64_t end = util_mono_ms() + timeout_ms;
	int calls;

	pthread_mutex_lock(&r->mu);
	while (r->calls < n && util_mono_ms() < end) {
		pthread_mutex_unlock(&r->mu);
		usleep(2000);
		pthread_mutex_lock(&r->mu);
	}
	calls = r->calls;
	pthread_mutex_unlock(&r->mu);
	return calls;
}

static struct rt *new_rt(int workers)
{
	struct rt_options o = { .workers = workers, .no_watch = true };
	struct rt *rt = NULL;

	assert_int_equal(rt_new(NULL, &o, &rt), 0);
	return rt;
}

static struct rt_controller *add_ctl(struct rt *rt, const char *name, struct rec *r)
{
	struct rt_controller_def d = { .name = name, .reconcile = rec_reconcile, .ctx = r };
	struct rt_controller *c = NULL;

	assert_int_equal(rt_register(rt, &d, &c), 0);
	return c;
}

static void test_dedup(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller *c;
	struct rt_stats st;

	rec_init(&r);
	c = add_ctl(rt, "Thing", &r);
	/* Queued three times before any worker runs: one reconcile. */
	assert_int_equal(rt_enqueue(c, "ns", "a"), 0);
	assert_int_equal(rt_enqueue(c, "ns", "a"), 0);
	assert_int_equal(rt_enqueue(c, "ns", "a"), 0);
	assert_int_equal(rt_enqueue(c, "ns", "b"), 0);
	assert_int_equal(rt_enqueue(c, "", "cluster-scoped"), 0);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rec_wait(&r, 3, 2000), 3);
	usleep(100 * 1000);
	assert_int_equal(r.calls, 3);
	assert_string_equal(r.names[0], "a");
	assert_string_equal(r.kinds[0], "Thing");
	assert_string_equal(r.names[1], "b");
	assert_string_equal(r.names[2], "cluster-scoped");
	assert_string_equal(r.nss[2], "");
	rt_controller_stats(c, &st);
	assert_int_equal(st.reconciles, 3);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.queued, 0); /* nothing left behind */
	/* Bad keys are refused. */
	assert_int_equal(rt_enqueue(c, "ns", ""), -EINVAL);
	rt_free(rt);
	rec_release(&r);
}

/* A standby runtime (a replica that does not lead) queues but reconciles
 * nothing until rt_activate(); then what was queued runs once. */
static void test_standby(void **state)
{
	struct rt_options o = { .workers = 1, .no_watch = true, .standby = true };
	struct rt *rt = NULL;
	struct rec r;
	struct rt_controller *c;

	assert_int_equal(rt_new(NULL, &o, &rt), 0);
	rec_init(&r);
	c = add_ctl(rt, "Thing", &r);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rt_enqueue(c, "ns", "a"), 0);
	assert_int_equal(rt_enqueue(c, "ns", "a"), 0);
	usleep(200 * 1000);
	assert_int_equal(r.calls, 0);
	rt_activate(rt);
	assert_int_equal(rec_wait(&r, 1, 2000), 1);
	usleep(100 * 1000);
	assert_int_equal(r.calls, 1);
	rt_activate(rt); /* a no-op now */
	rt_free(rt);
	rec_release(&r);
}

static void test_backoff(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller *c;
	struct rt_stats st;

	rec_init(&r);
	r.fail_first = 3;
	c = add_ctl(rt, "Thing", &r);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rt_enqueue(c, "ns", "x"), 0);
	/* Fails at t0, retried after 250 ms, fails, after 500 ms, fails, after
	 * 1000 ms succeeds: 4 calls in about 1.75 s. */
	assert_int_equal(rec_wait(&r, 1, 3000), 1);
	usleep(50 * 1000);
	assert_int_equal(r.calls, 1); /* not retried at once */
	assert_int_equal(rt_key_failures(c, "ns", "x"), 1);
	assert_int_equal(rec_wait(&r, 4, 5000), 4);
	assert_true(r.at[1] - r.at[0] >= RT_BACKOFF_BASE_MS);
	assert_true(r.at[2] - r.at[1] >= 2 * RT_BACKOFF_BASE_MS);
	assert_true(r.at[3] - r.at[2] >= 4 * RT_BACKOFF_BASE_MS);
	usleep(50 * 1000);
	rt_controller_stats(c, &st);
	assert_int_equal(st.errors, 3);
	assert_int_equal(st.reconciles, 4);
	assert_int_equal(rt_key_failures(c, "ns", "x"), 0); /* reset by the success */
	assert_int_equal(st.queued, 0);
	rt_free(rt);
	rec_release(&r);
}

static void test_backoff_not_bypassed(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller *c;

	rec_init(&r);
	r.fail_first = 2;
	r.sleep_ms = 30;
	c = add_ctl(rt, "Thing", &r);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rt_enqueue(c, "ns", "x"), 0);
	usleep(10 * 1000);
	/* Queued again while the failing reconcile runs: the retry still waits
	 * for the back-off instead of running right after the failure. */
	assert_int_equal(rt_enqueue(c, "ns", "x"), 0);
	assert_int_equal(rec_wait(&r, 2, 3000), 2);
	assert_true(r.at[1] - r.at[0] >= RT_BACKOFF_BASE_MS);
	rt_free(rt);
	rec_release(&r);
}

static void test_delayed_requeue(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller *c;
	int64_t t0;

	rec_init(&r);
	r.requeue_ms = 300;
	c = add_ctl(rt, "Thing", &r);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rt_enqueue(c, "ns", "d"), 0);
	assert_int_equal(rec_wait(&r, 2, 3000), 2);
	assert_true(r.at[1] - r.at[0] >= 300);
	assert_true(r.at[1] - r.at[0] < 2000);
	/* rt_enqueue_after(): not before its time; the earliest due wins. */
	t0 = util_mono_ms();
	assert_int_equal(rt_enqueue_after(c, "ns", "e", 1000), 0);
	assert_int_equal(rt_enqueue_after(c, "ns", "e", 200), 0);
	assert_int_equal(rt_enqueue_after(c, "ns", "e", 5000), 0);
	assert_int_equal(rec_wait(&r, 3, 3000), 3);
	assert_string_equal(r.names[2], "e");
	assert_true(r.at[2] - t0 >= 200);
	assert_true(r.at[2] - t0 < 900);
	usleep(100 * 1000);
	assert_int_equal(r.calls, 3); /* the later requeues folded into it */
	rt_free(rt);
	rec_release(&r);
}

struct hammer {
	struct rt_controller *c;
	atomic_bool stop;
};

static void *hammer_main(void *arg)
{
	struct hammer *hm = arg;

	while (!atomic_load(&hm->stop)) {
		rt_enqueue(hm->c, "ns", "hot");
		usleep(500);
	}
	return NULL;
}

static void test_no_concurrent_key(void **state)
{
	struct rt *rt = new_rt(4);
	struct rec r;
	struct hammer hm;
	pthread_t th[3];
	int i, calls;

	rec_init(&r);
	r.sleep_ms = 5;
	hm.c = add_ctl(rt, "Thing", &r);
	atomic_store(&hm.stop, false);
	assert_int_equal(rt_start(rt), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, hammer_main, &hm), 0);
	usleep(300 * 1000);
	atomic_store(&hm.stop, true);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	calls = rec_wait(&r, 1000000, 100);
	/* Four workers, one key queued thousands of times: it ran many times,
	 * one at a time, and once more after the last enqueue at most. */
	assert_true(calls >= 10);
	assert_int_equal(atomic_load(&r.max_inflight), 1);
	rt_free(rt);
	rec_release(&r);
}

static void test_parallel_keys(void **state)
{
	struct rt *rt = new_rt(4);
	struct rec r;
	struct rt_controller *c;
	int i;

	rec_init(&r);
	r.sleep_ms = 100;
	c = add_ctl(rt, "Thing", &r);
	for (i = 0; i < 4; i++) {
		char n[16];

		snprintf(n, sizeof(n), "k%d", i);
		rt_enqueue(c, "ns", n);
	}
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rec_wait(&r, 4, 3000), 4);
	/* Different keys do run side by side on several workers. */
	assert_true(atomic_load(&r.max_inflight) >= 2);
	rt_free(rt);
	rec_release(&r);
}

static void cd_index(const json_t *obj, json_t *out)
{
	const char *cd = json_string_value(
		json_object_get(json_object_get(json_object_get(obj, "spec"), "clusterDeploymentName"), "name"));

	if (cd)
		json_array_append_new(out, json_string(cd));
}

static void label_index(const json_t *obj, json_t *out)
{
	const char *v = json_string_value(
		json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), "infraenvs"));

	if (v)
		json_array_append_new(out, json_string(v));
}

static void feed(struct rt *rt, enum store_event_type type, const char *res, const char *ns, const char *name,
		 const char *json)
{
	store_obj so = { (char *)res, (char *)ns, (char *)name, 1, type, (char *)json, strlen(json) };

	rt_feed(rt, &so);
}

static int count_visit(const char *ns, const char *name, void *ud)
{
	(*(int *)ud)++;
	return 0;
}

/* An Agent event maps to the ClusterDeployment it names (an index lookup
 * from the other side: the CD controller asks which Agents name a CD). */
static char last_old_cd[64];

static void agent_to_cd(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	json_t *vals = json_array();
	const json_t *old = rt_event_old_index(ev, "cd");
	size_t i;

	snprintf(last_old_cd, sizeof(last_old_cd), "%s",
		 json_string_value(json_array_get(old, 0)) ? json_string_value(json_array_get(old, 0)) : "");

	cd_index(ev->obj, vals);
	for (i = 0; i < json_array_size(vals); i++)
		rt_enqueue(c, ev->so->ns, json_string_value(json_array_get(vals, i)));
	json_decref(vals);
}

static void test_cache_index(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller_def d = { .name = "ClusterDeployment", .reconcile = rec_reconcile, .ctx = &r,
				       .watches = { { .resource = "agents", .map = RT_MAP_FN, .fn = agent_to_cd },
						    { .resource = "cds", .map = RT_MAP_SELF } } };
	const char *res = "agents";
	json_t *l, *o;
	int n = 0;

	rec_init(&r);
	assert_int_equal(rt_register(rt, &d, NULL), 0);
	assert_int_equal(rt_cache_index(rt, res, "cd", cd_index), 0);
	assert_int_equal(rt_cache_index(rt, res, "label", label_index), 0);
	assert_int_equal(rt_cache_resource(rt, "cds", true), 0);
	feed(rt, STORE_ADDED, res, "a", "h1",
	     "{\"metadata\":{\"labels\":{\"infraenvs\":\"ie\"}},\"spec\":{\"clusterDeploymentName\":{\"name\":\"c1\"}}}");
	feed(rt, STORE_ADDED, res, "a", "h2", "{\"spec\":{\"clusterDeploymentName\":{\"name\":\"c1\"}}}");
	feed(rt, STORE_ADDED, res, "b", "h3", "{\"spec\":{\"clusterDeploymentName\":{\"name\":\"c1\"}}}");
	feed(rt, STORE_ADDED, "cds", "a", "c1", "{\"spec\":{\"x\":1}}");
	feed(rt, STORE_ADDED, "unrelated", "a", "z", "{}");

	l = rt_cache_list_by(rt, res, "cd", "c1");
	assert_int_equal(json_array_size(l), 3);
	json_decref(l);
	l = rt_cache_list_by(rt, res, "label", "ie");
	assert_int_equal(json_array_size(l), 1);
	assert_string_equal(json_string_value(json_array_get(json_array_get(l, 0), 1)), "h1");
	json_decref(l);
	assert_int_equal(rt_cache_keys_ns(rt, res, "a", count_visit, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(rt_cache_keys_by(rt, res, "nope", "c1", count_visit, &n), -ENOENT);
	/* A kept object; an index-only resource keeps no object. */
	o = rt_cache_get(rt, "cds", "a", "c1");
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "spec"), "x")), 1);
	json_decref(o);
	assert_null(rt_cache_get(rt, res, "a", "h1"));

	n = 0;
	assert_int_equal(rt_cache_keys_all(rt, res, count_visit, &n), 0);
	assert_int_equal(n, 3);
	/* An update moves the object between index values; the mapping sees
	 * where it was. */
	feed(rt, STORE_MODIFIED, res, "a", "h2", "{\"spec\":{\"clusterDeploymentName\":{\"name\":\"c2\"}}}");
	assert_string_equal(last_old_cd, "c1");
	l = rt_cache_list_by(rt, res, "cd", "c1");
	assert_int_equal(json_array_size(l), 2);
	json_decref(l);
	l = rt_cache_list_by(rt, res, "cd", "c2");
	assert_int_equal(json_array_size(l), 1);
	json_decref(l);
	/* A delete removes it from every index and the namespace listing. */
	feed(rt, STORE_DELETED, res, "a", "h1", "{\"spec\":{\"clusterDeploymentName\":{\"name\":\"c1\"}}}");
	l = rt_cache_list_by(rt, res, "cd", "c1");
	assert_int_equal(json_array_size(l), 1);
	json_decref(l);
	l = rt_cache_list_by(rt, res, "label", "ie");
	assert_int_equal(json_array_size(l), 0);
	json_decref(l);
	n = 0;
	rt_cache_keys_ns(rt, res, "a", count_visit, &n);
	assert_int_equal(n, 1);

	/* The events were mapped to CD keys: a/c1 (three times, one key),
	 * b/c1, a/c2; the CD's own event folded into a/c1. */
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rec_wait(&r, 3, 2000), 3);
	usleep(100 * 1000);
	assert_int_equal(r.calls, 3);
	rt_free(rt);
	rec_release(&r);
}

static void test_owner_map(void **state)
{
	struct rt *rt = new_rt(1);
	struct rec r;
	struct rt_controller_def d = {
		.name = "InfraEnv", .reconcile = rec_reconcile, .ctx = &r,
		.watches = { { .resource = "agents", .map = RT_MAP_OWNER, .owner_kind = "InfraEnv" } }
	};

	rec_init(&r);
	assert_int_equal(rt_register(rt, &d, NULL), 0);
	feed(rt, STORE_ADDED, "agents", "ns", "h1",
	     "{\"metadata\":{\"ownerReferences\":[{\"kind\":\"Other\",\"name\":\"o\"},"
	     "{\"kind\":\"InfraEnv\",\"name\":\"ie1\"}]}}");
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rec_wait(&r, 1, 2000), 1);
	usleep(100 * 1000);
	assert_int_equal(r.calls, 1);
	assert_string_equal(r.names[0], "ie1");
	assert_string_equal(r.nss[0], "ns");
	rt_free(rt);
	rec_release(&r);
}

static int tick_count;

static void ticker(void *ctx)
{
	__atomic_add_fetch(&tick_count, 1, __ATOMIC_SEQ_CST);
}

static char *render_text(int64_t rev, size_t *ret_len, void *ud)
{
	*ret_len = strlen(ud);
	return strdup(ud);
}

/* The store watch feeds the controller: objects present at the start are
 * queued, later writes too; tickers fire on their period. */
static void test_store_watch(void **state)
{
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	struct rt_options o = { .workers = 1, .min_pass_ms = 5 };
	struct rec r;
	struct rt_controller_def d = { .name = "Thing", .reconcile = rec_reconcile, .ctx = &r,
				       .watches = { { .resource = "things", .map = RT_MAP_SELF } } };
	char dir[64], db[128];
	store *s = NULL;
	struct rt *rt = NULL;

	rec_init(&r);
	assert_int_equal(tu_tmpdir(dir, sizeof(dir), "ah-test-runtime"), 0);
	snprintf(db, sizeof(db), "%s/db", dir);
	assert_int_equal(store_open(db, &so, &s), 0);
	assert_int_equal(store_create(s, "things", "ns", "before", render_text, "{}", NULL), 0);
	assert_int_equal(store_create(s, "others", "ns", "x", render_text, "{}", NULL), 0);
	assert_int_equal(rt_new(s, &o, &rt), 0);
	assert_int_equal(rt_register(rt, &d, NULL), 0);
	assert_int_equal(rt_ticker(rt, 100, ticker, NULL), 0);
	assert_int_equal(rt_start(rt), 0);
	assert_int_equal(rec_wait(&r, 1, 2000), 1);
	assert_string_equal(r.names[0], "before");
	assert_int_equal(store_create(s, "things", "", "after", render_text, "{}", NULL), 0);
	assert_int_equal(rec_wait(&r, 2, 2000), 2);
	assert_string_equal(r.names[1], "after");
	usleep(350 * 1000);
	assert_true(__atomic_load_n(&tick_count, __ATOMIC_SEQ_CST) >= 2);
	assert_int_equal(r.calls, 2);
	rt_free(rt);
	store_close(s);
	tu_tmpdir_remove(dir);
	rec_release(&r);
}

static void uid_index(const json_t *obj, json_t *out)
{
	const char *u = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));

	if (u)
		json_array_append_new(out, json_string(u));
}

/* rt_wait_synced(): a write is in the cache's index once it returns 0,
 * even with the watch coalescing events for a while. */
static void test_wait_synced(void **state)
{
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	struct rt_options o = { .workers = 1, .min_pass_ms = 200 };
	char dir[64], db[128];
	store *s = NULL;
	struct rt *rt = NULL, *rt2;
	json_t *l;

	assert_int_equal(tu_tmpdir(dir, sizeof(dir), "ah-test-runtime"), 0);
	snprintf(db, sizeof(db), "%s/db", dir);
	assert_int_equal(store_open(db, &so, &s), 0);
	assert_int_equal(rt_new(s, &o, &rt), 0);
	assert_int_equal(rt_cache_index(rt, "things", "uid", uid_index), 0);
	assert_int_equal(rt_cache_generation(rt), 0);
	assert_int_equal(rt_start(rt), 0);
	/* The start filled the cache: one refill, done (even). */
	assert_int_equal(rt_cache_generation(rt), 2);
	for (int i = 0; i < 3; i++) {
		char name[16], text[64];

		snprintf(name, sizeof(name), "t%d", i);
		snprintf(text, sizeof(text), "{\"metadata\":{\"uid\":\"u-%d\"}}", i);
		assert_int_equal(store_create(s, "things", "ns", name, render_text, text, NULL), 0);
		assert_int_equal(rt_wait_synced(rt, 0, 3000), 0);
		snprintf(text, sizeof(text), "u-%d", i);
		l = rt_cache_list_by(rt, "things", "uid", text);
		assert_int_equal(json_array_size(l), 1);
		assert_string_equal(json_string_value(json_array_get(json_array_get(l, 0), 1)), name);
		json_decref(l);
	}
	/* A revision the store has not reached: a bounded wait. */
	assert_int_equal(rt_wait_synced(rt, store_current_rev(s) + 100, 50), -ETIMEDOUT);
	rt_free(rt);
	/* Fed by hand (no watch): nothing to wait for. */
	rt2 = new_rt(1);
	assert_int_equal(rt_wait_synced(rt2, 12345, 10), 0);
	rt_free(rt2);
	store_close(s);
	tu_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dedup),
		cmocka_unit_test(test_standby),
		cmocka_unit_test(test_backoff),
		cmocka_unit_test(test_backoff_not_bypassed),
		cmocka_unit_test(test_delayed_requeue),
		cmocka_unit_test(test_no_concurrent_key),
		cmocka_unit_test(test_parallel_keys),
		cmocka_unit_test(test_cache_index),
		cmocka_unit_test(test_owner_map),
		cmocka_unit_test(test_store_watch),
		cmocka_unit_test(test_wait_synced),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
