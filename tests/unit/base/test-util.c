/* Tests for src/base/util.c: time stamps, UUIDs, base64 round trips. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void test_rfc3339_roundtrip(void **state)
{
	char buf[32];
	time_t t;

	util_time_rfc3339(1760548255, buf, sizeof(buf));
	assert_string_equal(buf, "2025-10-15T17:10:55Z");
	assert_int_equal(util_parse_rfc3339(buf, &t), 0);
	assert_int_equal(t, 1760548255);
	assert_int_equal(util_parse_rfc3339("2025-10-15T19:10:55.123+02:00", &t), 0);
	assert_int_equal(t, 1760548255);
	assert_int_equal(util_parse_rfc3339("yesterday", &t), -EINVAL);
	assert_int_equal(util_parse_rfc3339("2025-10-15T17:10:55", &t), -EINVAL);
}

static void test_uuid4_shape(void **state)
{
	char a[37], b[37];

	assert_int_equal(util_uuid4(a, sizeof(a)), 0);
	assert_int_equal(util_uuid4(b, sizeof(b)), 0);
	assert_int_equal(strlen(a), 36);
	assert_int_equal(a[14], '4');
	assert_true(strchr("89ab", a[19]) != NULL);
	assert_string_not_equal(a, b);
}

static void test_base64_rows(void **state)
{
	static const struct { const char *plain, *enc; } rows[] = {
		{ "", "" }, { "f", "Zg==" }, { "fo", "Zm8=" }, { "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" }, { "foobar", "Zm9vYmFy" },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *e = util_base64_encode(rows[i].plain, strlen(rows[i].plain));
		unsigned char *d;
		size_t dlen;

		assert_string_equal(e, rows[i].enc);
		assert_int_equal(util_base64_decode(e, strlen(e), &d, &dlen), 0);
		assert_int_equal(dlen, strlen(rows[i].plain));
		assert_memory_equal(d, rows[i].plain, dlen);
		free(e);
		free(d);
	}
}

static void test_base64_rejects_garbage(void **state)
{
	unsigned char *d;
	size_t dlen;

	assert_int_equal(util_base64_decode("Zm9v!", 5, &d, &dlen), -EINVAL);
	assert_int_equal(util_base64_decode("Z", 1, &d, &dlen), -EINVAL);
}

static void test_random_hex(void **state)
{
	char h[65];

	assert_int_equal(util_random_hex(h, 32), 0);
	assert_int_equal(strlen(h), 64);
	assert_int_equal(strspn(h, "0123456789abcdef"), 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc3339_roundtrip),
		cmocka_unit_test(test_uuid4_shape),
		cmocka_unit_test(test_base64_rows),
		cmocka_unit_test(test_base64_rejects_garbage),
		cmocka_unit_test(test_random_hex),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
