/* Tests for src/base/yamljson.c: scalar typing as Kubernetes reads YAML. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/yamljson.h"

static json_t *one(const char *y)
{
	json_t *docs = NULL, *d;
	ah_err err;

	assert_int_equal(yaml_parse_all(y, strlen(y), &docs, &err), 0);
	assert_int_equal(json_array_size(docs), 1);
	d = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return d;
}

static void test_scalars(void **state)
{
	static const struct { const char *yaml, *json; } rows[] = {
		{ "a: 1", "{\"a\": 1}" },
		{ "a: \"1\"", "{\"a\": \"1\"}" },
		{ "a: true", "{\"a\": true}" },
		{ "a: 'true'", "{\"a\": \"true\"}" },
		{ "a: ~", "{\"a\": null}" },
		{ "a:", "{\"a\": null}" },
		{ "a: 1.5", "{\"a\": 1.5}" },
		{ "a: 0.1", "{\"a\": 0.1}" },
		{ "a: 10.128.0.0/14", "{\"a\": \"10.128.0.0/14\"}" },
		{ "a: 1.2.3.8", "{\"a\": \"1.2.3.8\"}" },
		{ "a: v1beta1", "{\"a\": \"v1beta1\"}" },
		{ "a: -3", "{\"a\": -3}" },
		{ "a: [x, 2]", "{\"a\": [\"x\", 2]}" },
		{ "a: !!str 5", "{\"a\": \"5\"}" },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *got = one(rows[i].yaml);
		json_t *want = json_loads(rows[i].json, 0, NULL);

		if (!json_equal(got, want)) {
			char *g = json_dumps(got, 0);

			fail_msg("row %zu: %s gave %s", i, rows[i].yaml, g);
		}
		json_decref(got);
		json_decref(want);
	}
}

static void test_multi_doc(void **state)
{
	const char *y = "---\nkind: A\n---\n---\nkind: B\n";
	json_t *docs;
	ah_err err;

	assert_int_equal(yaml_parse_all(y, strlen(y), &docs, &err), 0);
	assert_int_equal(json_array_size(docs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(docs, 1), "kind")), "B");
	json_decref(docs);
}

static void test_errors(void **state)
{
	const char *bad = "a: [1, 2\nb: c";
	json_t *docs = NULL;
	ah_err err;

	assert_true(yaml_parse_all(bad, strlen(bad), &docs, &err) < 0);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.message, "yaml: line"));
	assert_true(yaml_parse_all("b: *x", 5, &docs, &err) < 0);
	assert_non_null(strstr(err.message, "unknown anchor"));
}

static void test_aliases(void **state)
{
	json_t *got = one("a: &x {k: [1, 2]}\nb: *x");
	json_t *want = json_loads("{\"a\": {\"k\": [1, 2]}, \"b\": {\"k\": [1, 2]}}", 0, NULL);

	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

static void test_alias_bomb_bounded(void **state)
{
	char buf[8192];
	size_t n = 0;
	json_t *docs = NULL;
	ah_err err;
	int i;

	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n");
	for (i = 1; i < 9; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i,
				      i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1, i - 1);
	assert_true(yaml_parse_all(buf, n, &docs, &err) < 0);
	assert_non_null(strstr(err.message, "excessive aliasing"));
}

static void test_deep_nesting_bounded(void **state)
{
	char buf[4096];
	json_t *docs = NULL;
	ah_err err;
	int i;

	for (i = 0; i < 1000; i++)
		buf[i] = '[';
	buf[1000] = '\0';
	assert_true(yaml_parse_all(buf, strlen(buf), &docs, &err) < 0);
}

static void refused(const char *y, size_t len, const char *why)
{
	json_t *docs = NULL;
	ah_err err;

	assert_true(yaml_parse_all(y, len, &docs, &err) < 0);
	assert_null(docs);
	assert_int_equal(err.status, 400);
	if (!strstr(err.message, why))
		fail_msg("%s: message %s lacks %s", y, err.message, why);
}

static void test_hostile_scalars_and_keys(void **state)
{
	refused("a: \"x\\0y\"\n", strlen("a: \"x\\0y\"\n"), "NUL");
	refused("\"k\\0\": 1\n", strlen("\"k\\0\": 1\n"), "NUL");
	refused("a: 1\nb: 2\na: 3\n", strlen("a: 1\nb: 2\na: 3\n"), "key \"a\" already set in map");
	refused("a: 99999999999999999999\n", strlen("a: 99999999999999999999\n"), "out of the 64-bit range");
	refused("a: -99999999999999999999\n", strlen("a: -99999999999999999999\n"), "out of the 64-bit range");
	refused("a: 1e999\n", strlen("a: 1e999\n"), "floating-point range");
	refused("? [a]\n: 1\n", strlen("? [a]\n: 1\n"), "key must be a scalar");
	refused("? {a: 1}\n: 1\n", strlen("? {a: 1}\n: 1\n"), "key must be a scalar");
	refused("x: &k [1]\n? *k\n: 2\n", strlen("x: &k [1]\n? *k\n: 2\n"), "key must be a scalar");
}

/* Nested mapping keys that doubled in size at each level (an 80-byte
 * body took 1.6 GB): refused at the first complex key. */
static void test_nested_keys_bounded(void **state)
{
	char buf[256];
	size_t n = 0;
	int i;

	for (i = 0; i < 60; i++)
		buf[n++] = '{', buf[n++] = '{';
	buf[n] = '\0';
	refused(buf, n, "key must be a scalar");
}

/* Aliases are bounded by the bytes they copy, not the values: few large
 * strings copied many times stop at the bound. */
static void test_alias_bytes_bounded(void **state)
{
	size_t len = 64 * 1024, n = 0, cap = len + 256 * 1024;
	char *buf = malloc(cap);
	int i;

	assert_non_null(buf);
	n += (size_t)snprintf(buf, cap, "s: &s \"");
	memset(buf + n, 'x', len);
	n += len;
	n += (size_t)snprintf(buf + n, cap - n, "\"\nl: [");
	for (i = 0; i < 1000; i++)
		n += (size_t)snprintf(buf + n, cap - n, "*s,");
	n += (size_t)snprintf(buf + n, cap - n, "*s]\n");
	refused(buf, n, "excessive aliasing");
	free(buf);
}

static void test_scalar_keys_printed(void **state)
{
	json_t *got = one("1: a\ntrue: b\n");
	json_t *want = json_loads("{\"1\": \"a\", \"true\": \"b\"}", 0, NULL);

	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_multi_doc),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_deep_nesting_bounded),
		cmocka_unit_test(test_aliases),
		cmocka_unit_test(test_alias_bomb_bounded),
		cmocka_unit_test(test_hostile_scalars_and_keys),
		cmocka_unit_test(test_nested_keys_bounded),
		cmocka_unit_test(test_alias_bytes_bounded),
		cmocka_unit_test(test_scalar_keys_printed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
