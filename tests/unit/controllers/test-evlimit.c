/* Tests for src/controllers/evlimit.c: upstream's default limits, the
 * EVENT_RATE_LIMITS override and its errors, per-entity windows, and the
 * bound on remembered entities. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "controllers/evlimit.h"

#define HOUR_MS (3600 * 1000LL)

static void test_defaults_are_upstreams(void **state)
{
	struct ev_limiter *l;
	char buf[256];

	(void)state;
	assert_int_equal(ev_limiter_new(0, &l), 0);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_started"), HOUR_MS);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_finished"), HOUR_MS);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_failed"), HOUR_MS);
	assert_int_equal(ev_limiter_limit_ms(l, "host_status_updated"), 0);
	ev_limiter_describe(l, buf, sizeof(buf));
	assert_string_equal(buf, "upgrade_agent_failed=1h0m0s upgrade_agent_finished=1h0m0s upgrade_agent_started=1h0m0s");
	/* Unlimited names pass every time and are not remembered. */
	for (int i = 0; i < 10; i++)
		assert_true(ev_limiter_allow(l, "host_status_updated", NULL, "h1", "ie1", i));
	assert_int_equal(ev_limiter_size(l), 0);
	ev_limiter_free(l);
	/* No limiter: nothing is limited. */
	assert_true(ev_limiter_allow(NULL, "upgrade_agent_failed", NULL, "h1", NULL, 0));
}

static void test_one_per_window_per_entity(void **state)
{
	struct ev_limiter *l;

	(void)state;
	assert_int_equal(ev_limiter_new(0, &l), 0);
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie1", 1000));
	/* The same entity within the hour: dropped, and a drop does not move the window. */
	assert_false(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie1", 1001));
	assert_false(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie1", 1000 + HOUR_MS - 1));
	/* Another host, another infra-env, another cluster, another name: their own windows. */
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h2", "ie1", 1002));
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie2", 1003));
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", NULL, "h1", "ie1", 1004));
	assert_true(ev_limiter_allow(l, "upgrade_agent_started", "c1", "h1", "ie1", 1005));
	/* Once the hour has passed it is recorded again, and a new window starts. */
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie1", 1000 + HOUR_MS));
	assert_false(ev_limiter_allow(l, "upgrade_agent_failed", "c1", "h1", "ie1", 1000 + HOUR_MS + 5));
	ev_limiter_free(l);
}

static void test_configure_overrides_and_adds(void **state)
{
	struct ev_limiter *l;
	ah_err err;

	(void)state;
	assert_int_equal(ev_limiter_new(0, &l), 0);
	assert_int_equal(ev_limiter_configure(l, "{\"upgrade_agent_failed\":\"2h\",\"host_status_updated\":\"1m30s\"}",
					      &err), 0);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_failed"), 2 * HOUR_MS);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_started"), HOUR_MS);
	assert_int_equal(ev_limiter_limit_ms(l, "host_status_updated"), 90 * 1000);
	assert_true(ev_limiter_allow(l, "host_status_updated", NULL, "h1", "ie1", 0));
	assert_false(ev_limiter_allow(l, "host_status_updated", NULL, "h1", "ie1", 89999));
	assert_true(ev_limiter_allow(l, "host_status_updated", NULL, "h1", "ie1", 90000));
	/* Empty text changes nothing. */
	assert_int_equal(ev_limiter_configure(l, "", &err), 0);
	assert_int_equal(ev_limiter_configure(l, NULL, &err), 0);
	assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_failed"), 2 * HOUR_MS);
	ev_limiter_free(l);
}

static void test_configure_errors_change_nothing(void **state)
{
	static const struct {
		const char *text, *needle;
	} rows[] = {
		{ "not json", "failed to parse EVENT_RATE_LIMITS json" },
		{ "[\"x\"]", "failed to parse EVENT_RATE_LIMITS json" },
		{ "{\"upgrade_agent_failed\":\"2h\",\"host_status_updated\":\"soon\"}",
		  "invalid duration for event 'host_status_updated': soon" },
		{ "{\"upgrade_agent_failed\":3600}", "invalid duration for event 'upgrade_agent_failed'" },
		{ "{\"\":\"1h\"}", "event name" },
	};
	struct ev_limiter *l;
	size_t i;
	ah_err err;

	(void)state;
	assert_int_equal(ev_limiter_new(0, &l), 0);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ah_err_clear(&err);
		assert_int_equal(ev_limiter_configure(l, rows[i].text, &err), -EINVAL);
		if (!strstr(err.message, rows[i].needle))
			fail_msg("%s: %s", rows[i].text, err.message);
		assert_non_null(strstr(err.message, "EVENT_RATE_LIMITS"));
		/* Not half-applied. */
		assert_int_equal(ev_limiter_limit_ms(l, "upgrade_agent_failed"), HOUR_MS);
		assert_int_equal(ev_limiter_limit_ms(l, "host_status_updated"), 0);
	}
	ev_limiter_free(l);
}

static void test_memory_is_bounded(void **state)
{
	struct ev_limiter *l;
	char host[32];
	int i;

	(void)state;
	assert_int_equal(ev_limiter_new(100, &l), 0);
	for (i = 0; i < 10000; i++) {
		snprintf(host, sizeof(host), "h%d", i);
		assert_true(ev_limiter_allow(l, "upgrade_agent_failed", NULL, host, "ie", 1000 + i));
		assert_true(ev_limiter_size(l) <= 100);
	}
	assert_int_equal(ev_limiter_size(l), 100);
	/* The youngest are remembered, the oldest forgotten. */
	assert_false(ev_limiter_allow(l, "upgrade_agent_failed", NULL, "h9999", "ie", 20000));
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", NULL, "h0", "ie", 20000));
	/* Entries whose window has passed are dropped as time moves on. */
	assert_true(ev_limiter_allow(l, "upgrade_agent_failed", NULL, "late", "ie", 20000 + HOUR_MS));
	assert_int_equal(ev_limiter_size(l), 1);
	ev_limiter_free(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_are_upstreams),
		cmocka_unit_test(test_one_per_window_per_entity),
		cmocka_unit_test(test_configure_overrides_and_adds),
		cmocka_unit_test(test_configure_errors_change_nothing),
		cmocka_unit_test(test_memory_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
