/* Tests for src/controllers/records.c: every private record kind is
 * declared with a schema, writes are validated against it (a bad record is
 * refused and nothing is written), and the write modes (create,
 * compare-and-swap, create-or-replace) behave as records.h says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "controllers/records.h"
#include "testutil.h"

static void test_declared(void **state)
{
	static const char *const names[] = { HOSTSPEC_RESOURCE, HOSTSTATE_RESOURCE, IMAGESTATE_RESOURCE,
					     CLUSTERSTATE_RESOURCE, EVENTTOKEN_RESOURCE, NULL };
	ah_err err;

	for (const char *const *n = names; *n; n++) {
		const struct hub_record_kind *k = hub_record_kind(*n);

		assert_non_null(k);
		assert_non_null(k->owner_kind);
		assert_non_null(k->schema);
		assert_int_equal(strncmp(*n, "agenthub.internal.", 18), 0);
	}
	assert_null(hub_record_kind("agenthub.internal.nosuch"));
	ah_err_clear(&err);
	assert_int_equal(hub_record_check("agenthub.internal.nosuch", "{}", 2, &err), -EINVAL);
	assert_non_null(strstr(err.message, "not a declared record kind"));
}

static int check(const char *res, const char *text, ah_err *err)
{
	ah_err_clear(err);
	return hub_record_check(res, text, strlen(text), err);
}

static void test_schemas(void **state)
{
	ah_err err;

	/* Valid records as the hub writes them. */
	assert_int_equal(check(HOSTSTATE_RESOURCE,
			       "{\"uid\":\"u1\",\"checkedInAt\":1700000000,\"status\":\"known\","
			       "\"statusUpdatedAt\":1700000001,\"facts\":{\"ntp_sources\":[]}}", &err), 0);
	assert_int_equal(check(HOSTSPEC_RESOURCE, "{\"uid\":\"u1\",\"role\":\"master\",\"bound_cd\":\"ns/cd\"}", &err), 0);
	assert_int_equal(check(IMAGESTATE_RESOURCE,
			       "{\"token\":\"t\",\"rotation\":\"\",\"rotation_rv\":3,\"digest\":"
			       "\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
			       "\"created\":\"2026-01-02T03:04:05Z\"}", &err), 0);
	assert_int_equal(check(CLUSTERSTATE_RESOURCE, "{\"id\":\"c\",\"anything\":{\"x\":1}}", &err), 0);
	assert_int_equal(check(EVENTTOKEN_RESOURCE, "{\"token\":\"t\"}", &err), 0);

	/* Refused, with the field named. */
	assert_int_equal(check(HOSTSTATE_RESOURCE, "{\"uid\":\"u1\",\"checkedInAt\":\"soon\",\"status\":\"\","
			       "\"statusUpdatedAt\":0}", &err), -EINVAL);
	assert_non_null(strstr(err.message, "checkedInAt"));
	assert_int_equal(check(HOSTSTATE_RESOURCE, "{\"checkedInAt\":1,\"status\":\"\",\"statusUpdatedAt\":0}", &err),
			 -EINVAL);
	assert_non_null(strstr(err.message, "uid"));
	assert_int_equal(check(HOSTSPEC_RESOURCE, "{\"uid\":\"u\",\"role\":5}", &err), -EINVAL);
	assert_non_null(strstr(err.message, "role"));
	assert_int_equal(check(HOSTSPEC_RESOURCE, "{\"uid\":\"u\",\"password\":\"x\"}", &err), -EINVAL);
	assert_int_equal(check(IMAGESTATE_RESOURCE, "{\"digest\":\"not-hex\"}", &err), -EINVAL);
	assert_non_null(strstr(err.message, "digest"));
	assert_int_equal(check(EVENTTOKEN_RESOURCE, "{}", &err), -EINVAL);
	assert_int_equal(check(EVENTTOKEN_RESOURCE, "[1]", &err), -EINVAL);
	assert_int_equal(check(EVENTTOKEN_RESOURCE, "{\"token\":", &err), -EINVAL);
}

static void test_put(void **state)
{
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	char dir[64], db[128];
	store *s = NULL;
	store_obj *o = NULL;
	int64_t rev;

	assert_int_equal(tu_tmpdir(dir, sizeof(dir), "ah-test-records"), 0);
	snprintf(db, sizeof(db), "%s/db", dir);
	assert_int_equal(store_open(db, &so, &s), 0);

	/* A refused record writes nothing. */
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", HUB_RECORD_ANY, "{\"token\":1}"), -EINVAL);
	assert_int_equal(store_get(s, EVENTTOKEN_RESOURCE, "", "u1", &o), -ENOENT);

	/* create, then create again: -EEXIST; any: replaces. */
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", 0, "{\"token\":\"a\"}"), 0);
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", 0, "{\"token\":\"b\"}"), -EEXIST);
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", HUB_RECORD_ANY, "{\"token\":\"c\"}"), 0);
	assert_int_equal(store_get(s, EVENTTOKEN_RESOURCE, "", "u1", &o), 0);
	assert_string_equal(o->json, "{\"token\":\"c\"}");
	rev = o->rev;
	store_obj_free(o);

	/* compare-and-swap on the revision */
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", rev + 100, "{\"token\":\"d\"}"), -ESTALE);
	assert_int_equal(hub_record_put(s, EVENTTOKEN_RESOURCE, "", "u1", rev, "{\"token\":\"d\"}"), 0);
	/* A record that does not exist yet, written with "any". */
	assert_int_equal(hub_record_put(s, HOSTSPEC_RESOURCE, "ns", "a", HUB_RECORD_ANY, "{\"uid\":\"x\"}"), 0);
	assert_int_equal(hub_record_delete(s, HOSTSPEC_RESOURCE, "ns", "a", 0), 0);
	assert_int_equal(store_get(s, HOSTSPEC_RESOURCE, "ns", "a", &o), -ENOENT);

	store_close(s);
	tu_tmpdir_remove(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declared),
		cmocka_unit_test(test_schemas),
		cmocka_unit_test(test_put),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
