/* Tests for src/assisted/pullsecret.c: upstream's ParsePullSecret rules,
 * one row per reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "assisted/pullsecret.h"

static void test_rows(void **state)
{
	static const struct { const char *in, *why; } rows[] = {
		{ "{\"auths\":{\"quay.io\":{\"auth\":\"dXNlcjpwYXNz\",\"email\":\"a@b\"}}}", NULL },
		{ " {\"auths\":{\"r\":{}}}\n", NULL },
		{ "{\"auths\":{\"r\":{\"auth\":\"\"}}}", NULL },
		{ "wrong_secret", "pull secret must be a well-formed JSON" },
		{ "[]", "pull secret must be a well-formed JSON" },
		{ "{\"auths\":\"x\"}", "pull secret must be a well-formed JSON" },
		{ "{\"auths\":{\"r\":1}}", "pull secret must be a well-formed JSON" },
		{ "{}", "pull secret must contain 'auths' JSON-object field" },
		{ "null", "pull secret must contain 'auths' JSON-object field" },
		{ "{\"auths\":{}}", "pull secret must contain 'auths' JSON-object field" },
		{ "{\"auths\":{\"r\":{\"auth\":5}}}", "invalid pull secret: 'auth' field of \"r\" is 5 but should be a string" },
		{ "{\"auths\":{\"r\":{\"auth\":\"!!\"}}}", "invalid pull secret: 'auth' field of \"r\" is not base64-encoded" },
		{ "{\"auths\":{\"r\":{\"auth\":\"dXNlcg==\"}}}",
		  "invalid pull secret: 'auth' for r is not in 'user:password' format" },
	};
	char why[256];
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int r = pullsecret_check(rows[i].in, why, sizeof(why));

		if (!rows[i].why) {
			assert_int_equal(r, 0);
		} else {
			assert_int_equal(r, -EINVAL);
			assert_string_equal(why, rows[i].why);
		}
	}
	assert_int_equal(pullsecret_check(NULL, why, sizeof(why)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
