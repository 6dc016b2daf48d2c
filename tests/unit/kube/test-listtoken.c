/* Tests for src/kube/listtoken.c: continue tokens round-trip, and tokens
 * a client forged or mangled are 400. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "kube/listtoken.h"

static void test_round_trip(void **state)
{
	char ns[256], name[256];
	int64_t rev = 0;
	ah_err err;
	char *tok = kube_continue_encode(42, "spoke", "agent-1");

	assert_non_null(tok);
	assert_int_equal(kube_continue_decode(tok, strlen(tok), &rev, ns, sizeof(ns), name, sizeof(name), &err), 0);
	assert_int_equal(rev, 42);
	assert_string_equal(ns, "spoke");
	assert_string_equal(name, "agent-1");
	free(tok);
}

static void refused(const char *json)
{
	char ns[256], name[256], *tok = util_base64_encode(json, strlen(json));
	int64_t rev = 0;
	ah_err err;

	assert_non_null(tok);
	assert_int_equal(kube_continue_decode(tok, strlen(tok), &rev, ns, sizeof(ns), name, sizeof(name), &err), -EINVAL);
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.message, "continue key is not valid"));
	free(tok);
}

static void test_refusals(void **state)
{
	char ns[16], name[16], big[600];
	int64_t rev;
	ah_err err;

	assert_int_equal(kube_continue_decode("!!!", 3, &rev, ns, sizeof(ns), name, sizeof(name), &err), -EINVAL);
	assert_int_equal(err.status, 400);
	refused("[1,2]");
	refused("{\"rv\":1,\"ns\":5,\"name\":\"a\"}");
	refused("{\"rv\":-1,\"ns\":\"a\",\"name\":\"a\"}");
	refused("{\"rv\":\"1\",\"ns\":\"a\",\"name\":\"a\"}");
	refused("{\"rv\":1,\"ns\":\"a\",\"ns\":\"b\",\"name\":\"a\"}");
	/* A name longer than the page's buffer is not cut short. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "{\"ns\":\"\",\"name\":\"", 17);
	memcpy(big + sizeof(big) - 3, "\"}", 3);
	refused(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
