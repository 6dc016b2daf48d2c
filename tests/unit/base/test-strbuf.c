/* Tests for src/base/strbuf.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

static void test_add_and_detach(void **state)
{
	strbuf sb = STRBUF_INIT;
	size_t len;
	char *s;

	assert_int_equal(strbuf_adds(&sb, "hello"), 0);
	assert_int_equal(strbuf_addf(&sb, " %d %s", 42, "x"), 0);
	assert_string_equal(sb.buf, "hello 42 x");
	s = strbuf_detach(&sb, &len);
	assert_int_equal(len, 10);
	assert_string_equal(s, "hello 42 x");
	assert_null(sb.buf);
	free(s);
}

static void test_max_is_hard(void **state)
{
	strbuf sb;

	strbuf_init(&sb, 8);
	assert_int_equal(strbuf_adds(&sb, "12345678"), 0);
	assert_int_equal(strbuf_addch(&sb, '9'), -E2BIG);
	assert_int_equal(sb.len, 8);
	assert_string_equal(sb.buf, "12345678");
	strbuf_release(&sb);
}

static void test_growth_many(void **state)
{
	strbuf sb = STRBUF_INIT;
	int i;

	for (i = 0; i < 10000; i++)
		assert_int_equal(strbuf_addch(&sb, (char)('a' + i % 26)), 0);
	assert_int_equal(sb.len, 10000);
	assert_int_equal(sb.buf[26], 'a');
	strbuf_release(&sb);
}

static void test_json_escape(void **state)
{
	strbuf sb = STRBUF_INIT;

	assert_int_equal(strbuf_add_json_escaped(&sb, "a\"b\\c\n\x01"), 0);
	assert_string_equal(sb.buf, "a\\\"b\\\\c\\n\\u0001");
	strbuf_release(&sb);
}

static void test_detach_empty(void **state)
{
	strbuf sb = STRBUF_INIT;
	char *s = strbuf_detach(&sb, NULL);

	assert_non_null(s);
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_and_detach),
		cmocka_unit_test(test_max_is_hard),
		cmocka_unit_test(test_growth_many),
		cmocka_unit_test(test_json_escape),
		cmocka_unit_test(test_detach_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
