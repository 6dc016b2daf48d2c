/* test-simulate.c - the simulator's pure rules: what an instructions reply says about a
 * host's state, how long to sleep, which failures are retried and after how long. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/simulate.h"

/* One row per rule of simulate_state_after_instructions (backend.md §7.4). */
static void test_state_after_instructions(void **state)
{
	static const struct {
		enum simulate_state cur;
		const char *reply;
		enum simulate_state want;
	} rows[] = {
		/* unbound discovering/insufficient/known: inventory + ntp every 60 s */
		{ SIM_UNREGISTERED,
		  "{\"next_instruction_seconds\":60,\"post_step_action\":\"continue\",\"instructions\":"
		  "[{\"step_type\":\"inventory\"},{\"step_type\":\"ntp-synchronizer\"}]}", SIM_DISCOVERY },
		/* day-1 discovering: inventory alone, 60 s */
		{ SIM_DISCOVERY, "{\"next_instruction_seconds\":60,\"instructions\":[{\"step_type\":\"inventory\"}]}",
		  SIM_DISCOVERY },
		/* disconnected: inventory alone, 120 s */
		{ SIM_DISCOVERY, "{\"next_instruction_seconds\":120,\"instructions\":[{\"step_type\":\"inventory\"}]}",
		  SIM_DISCONNECTED },
		/* back from disconnected */
		{ SIM_DISCONNECTED,
		  "{\"next_instruction_seconds\":60,\"instructions\":[{\"step_type\":\"inventory\"},"
		  "{\"step_type\":\"connectivity-check\"}]}", SIM_DISCOVERY },
		/* binding / unbinding: exit */
		{ SIM_DISCOVERY, "{\"next_instruction_seconds\":0,\"post_step_action\":\"exit\",\"instructions\":[]}",
		  SIM_BINDING },
		/* preparing-for-installation */
		{ SIM_DISCOVERY,
		  "{\"next_instruction_seconds\":60,\"instructions\":[{\"step_type\":\"installation-disk-speed-check\"},"
		  "{\"step_type\":\"container-image-availability\"}]}", SIM_PREPARING },
		{ SIM_DISCOVERY, "{\"instructions\":[{\"step_type\":\"container-image-availability\"}]}", SIM_PREPARING },
		/* installing */
		{ SIM_PREPARING, "{\"instructions\":[{\"step_type\":\"install\"},{\"step_type\":\"dhcp-lease-allocate\"}]}",
		  SIM_INSTALLING },
		/* installing-in-progress: no steps, nothing learnt */
		{ SIM_INSTALLING, "{\"next_instruction_seconds\":60,\"instructions\":[]}", SIM_INSTALLING },
		/* error / cancelled */
		{ SIM_INSTALLING, "{\"next_instruction_seconds\":120,\"instructions\":[{\"step_type\":\"stop-installation\"}]}",
		  SIM_ERROR },
		{ SIM_DISCOVERY, "{\"instructions\":[{\"step_type\":\"logs-gather\"}]}", SIM_ERROR },
		/* disabled, resetting, unlisted states: no steps */
		{ SIM_DISCOVERY, "{\"next_instruction_seconds\":120,\"instructions\":[]}", SIM_DISCOVERY },
		/* upgrade-agent alone says nothing of the state */
		{ SIM_DISCOVERY, "{\"instructions\":[{\"step_type\":\"upgrade-agent\"}]}", SIM_DISCOVERY },
		/* what the host itself reported stays */
		{ SIM_FAILED, "{\"instructions\":[{\"step_type\":\"stop-installation\"}]}", SIM_FAILED },
		{ SIM_INSTALLED, "{\"post_step_action\":\"exit\",\"instructions\":[]}", SIM_INSTALLED },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *j = json_loads(rows[i].reply, 0, NULL);
		enum simulate_state got;

		assert_non_null(j);
		got = simulate_state_after_instructions(rows[i].cur, j);
		if (got != rows[i].want)
			fail_msg("row %zu: %s -> %s, want %s", i, simulate_state_names[rows[i].cur],
				 simulate_state_names[got], simulate_state_names[rows[i].want]);
		json_decref(j);
	}
	for (int i = 0; i < SIM_NSTATES; i++)
		assert_non_null(simulate_state_names[i]);
}

static void test_next_seconds(void **state)
{
	static const struct {
		const char *reply;
		unsigned cap;
		int want;
	} rows[] = {
		{ "{\"next_instruction_seconds\":60}", 0, 60 },
		{ "{\"next_instruction_seconds\":120}", 0, 120 },
		{ "{\"next_instruction_seconds\":0}", 0, 0 },        /* binding: at once */
		{ "{\"next_instruction_seconds\":60.0}", 0, 60 },    /* a whole real */
		{ "{\"next_instruction_seconds\":1.5}", 0, 60 },     /* not whole: the default */
		{ "{}", 0, 60 },                                     /* missing: the default */
		{ "{\"next_instruction_seconds\":\"60\"}", 0, 60 },  /* not a number */
		{ "{\"next_instruction_seconds\":-1}", 0, 60 },
		{ "{\"next_instruction_seconds\":86400}", 0, 60 },   /* beyond an hour */
		{ "{\"next_instruction_seconds\":60}", 2, 2 },       /* --max-poll-seconds */
		{ "{\"next_instruction_seconds\":1}", 2, 1 },
		{ "{}", 5, 5 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *j = json_loads(rows[i].reply, 0, NULL);
		int got;

		assert_non_null(j);
		got = simulate_next_seconds(j, rows[i].cap);
		if (got != rows[i].want)
			fail_msg("row %zu (%s, cap %u): %d, want %d", i, rows[i].reply, rows[i].cap, got, rows[i].want);
		json_decref(j);
	}
}

static void test_transient(void **state)
{
	static const struct {
		bool transport;
		long code;
		bool want;
	} rows[] = {
		{ true, 0, true },      /* connection refused, timeout, reset */
		{ false, 503, true },
		{ false, 504, true },
		{ false, 500, false },
		{ false, 502, false },
		{ false, 400, false },
		{ false, 401, false },
		{ false, 403, false },
		{ false, 404, false },
		{ false, 409, false },
		{ false, 200, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (simulate_transient(rows[i].transport, rows[i].code) != rows[i].want)
			fail_msg("row %zu: transport=%d code=%ld", i, rows[i].transport, rows[i].code);
}

static void test_retry_delay(void **state)
{
	uint64_t rng = 42;
	int lo = 1 << 30, hi = 0;

	(void)state;
	assert_int_equal(simulate_retry_delay_ms(0, &rng), -1);
	for (int round = 0; round < 2000; round++) {
		for (unsigned a = 1; a <= 3; a++) {
			int ms = simulate_retry_delay_ms(a, &rng);
			assert_in_range(ms, 2000, 10000);
			lo = ms < lo ? ms : lo;
			hi = ms > hi ? ms : hi;
		}
		assert_int_equal(simulate_retry_delay_ms(4, &rng), -1);
	}
	/* Jittered over the whole window, not a constant. */
	assert_true(lo < 3000);
	assert_true(hi > 9000);
}

static void test_opts_default(void **state)
{
	struct simulate_opts o;
	ah_err err = { 0 };

	(void)state;
	simulate_opts_default(&o);
	assert_int_equal(o.hosts, 1);
	assert_int_equal(o.max_poll_seconds, 0);
	assert_int_equal(o.ramp_ms, 5000);
	assert_int_equal(o.status_seconds, 10);
	assert_string_equal(o.subnet, "192.168.111.0/24");
	/* No source: a clear error, before any network access. */
	assert_int_equal(simulate_run(&o, &err), -EINVAL);
	assert_non_null(strstr(err.message, "--iso"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_after_instructions),
		cmocka_unit_test(test_next_seconds),
		cmocka_unit_test(test_transient),
		cmocka_unit_test(test_retry_delay),
		cmocka_unit_test(test_opts_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
