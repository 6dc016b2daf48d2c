/* Tests for src/base/gojson.c: what Go's encoding/json accepts and the
 * syntax errors it reports, one row per scanner state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/gojson.h"

static void test_rows(void **state)
{
	static const struct { const char *in, *msg; } rows[] = {
		{ "12", NULL },
		{ " {\"a\":[1,-2.5e3,0,1E+2,true,false,null,\"\\u00e9\\n\"]} \n", NULL },
		{ "{}", NULL },
		{ "", "unexpected end of JSON input" },
		{ "   ", "unexpected end of JSON input" },
		{ "{\"auths\": {", "unexpected end of JSON input" },
		{ "\"abc", "unexpected end of JSON input" },
		{ "-", "unexpected end of JSON input" },
		{ "1.", "unexpected end of JSON input" },
		{ "tru", "unexpected end of JSON input" },
		{ "wrong_secret", "invalid character 'w' looking for beginning of value" },
		{ "nope", "invalid character 'o' in literal null (expecting 'u')" },
		{ "trUe", "invalid character 'U' in literal true (expecting 'u')" },
		{ "{\"a\" 1}", "invalid character '1' after object key" },
		{ "{\"a\":1 \"b\":2}", "invalid character '\"' after object key:value pair" },
		{ "{1:2}", "invalid character '1' looking for beginning of object key string" },
		{ "{\"a\":1,}", "invalid character '}' looking for beginning of object key string" },
		{ "[1 2]", "invalid character '2' after array element" },
		{ "[1,]", "invalid character ']' looking for beginning of value" },
		{ "{} x", "invalid character 'x' after top-level value" },
		{ "01", "invalid character '1' after top-level value" },
		{ "\"a\\qb\"", "invalid character 'q' in string escape code" },
		{ "\"\\u12x4\"", "invalid character 'x' in \\u hexadecimal character escape" },
		{ "-x", "invalid character 'x' in numeric literal" },
		{ "1.x", "invalid character 'x' after decimal point in numeric literal" },
		{ "1ex", "invalid character 'x' in exponent of numeric literal" },
		{ "\"a\nb\"", "invalid character '\\n' in string literal" },
		{ "'x'", "invalid character '\\'' looking for beginning of value" },
		{ "\\", "invalid character '\\\\' looking for beginning of value" },
		{ "\x01", "invalid character '\\x01' looking for beginning of value" },
	};
	char msg[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int r = gojson_check(rows[i].in, strlen(rows[i].in), msg, sizeof(msg));

		if (!rows[i].msg) {
			assert_int_equal(r, 0);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_string_equal(msg, rows[i].msg);
		}
	}
}

static void test_depth_bounded(void **state)
{
	size_t n = 10001;
	char *deep = malloc(2 * n), msg[64];

	assert_non_null(deep);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	assert_int_equal(gojson_check(deep, 2 * n, msg, sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "exceeded max depth");
	assert_int_equal(gojson_check(deep + 1, 2 * n - 2, msg, sizeof(msg)), 0);
	free(deep);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_depth_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
