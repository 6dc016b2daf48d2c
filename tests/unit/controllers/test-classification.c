/* Tests for src/controllers/classification.c: the AgentClassification query
 * outcome (kubeapi.md §4.6), one row per case: exactly true, another single
 * value, a parse error, a runtime error, no value, several values, and the
 * constructs refused because they could run without end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "controllers/hub-internal.h"

#define INV "{\"cpu\":{\"count\":16,\"architecture\":\"x86_64\"},\"memory\":{\"physicalBytes\":34359738368}," \
	    "\"disks\":[{\"sizeBytes\":1},{\"sizeBytes\":2}],\"range\":3}"

static void test_match(void **state)
{
	static const struct {
		const char *query;
		int want;
	} rows[] = {
		{ ".cpu.count == 16 and .memory.physicalBytes >= 33285996544 and .memory.physicalBytes < 35433480192", 1 },
		{ ".cpu.architecture == \"x86_64\"", 1 },
		{ ".cpu.count < 4", 0 },
		{ ".cpu.count", 0 },                 /* one value, not a boolean */
		{ ".missing.field == null", 1 },
		{ ".cpu.count ==", -1 },             /* does not parse */
		{ ".cpu.count + \"a\"", -1 },        /* fails */
		{ "empty", -1 },                     /* no value */
		{ ".disks[] | .sizeBytes > 0", -1 }, /* several values */
		{ ".range == 3", 1 },                /* a field named like a builtin */
		{ "[range(1e9)] | length > 0", -1 }, /* could run without end */
		{ "def f: f; f", -1 },
		{ "[..] | length > 0", -1 },
		{ "[recurse] | length > 0", -1 },
		{ "last(repeat(1)) == 1", -1 },
		{ "until(false; .) == 1", -1 },
	};
	json_t *inv = json_loads(INV, 0, NULL);

	(void)state;
	assert_non_null(inv);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = hub_classification_match(rows[i].query, inv);

		if (got != rows[i].want)
			fail_msg("row %zu (%s): got %d, want %d", i, rows[i].query, got, rows[i].want);
	}
	/* No inventory yet: the query sees null. */
	assert_int_equal(hub_classification_match(". == null", NULL), 1);
	json_decref(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
