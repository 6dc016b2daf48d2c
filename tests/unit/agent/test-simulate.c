/* test-simulate.c - the simulator's pure rules: what an instructions reply says about a
 * host's state, how long to sleep, which failures are retried and after how long, what a
 * host told to exit (or an installed host) does given its state on the hub. */
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

/* One row per rule of simulate_check_action: after "exit" (installed false) and for the
 * watched installed hosts (installed true), with and without --reboot-after. */
static void test_check_action(void **state)
{
	static const char *const upua = "{\"status\":\"unbinding-pending-user-action\",\"kind\":\"Host\"}";
	static const struct {
		bool installed, reboot;
		long code;
		const char *body;
		enum simulate_check want;
	} rows[] = {
		/* binding and unbinding: the agent restarts and registers again (§7.3) */
		{ false, false, 200, "{\"status\":\"binding\"}", SIM_CHECK_REGISTER },
		{ false, true, 200, "{\"status\":\"binding\"}", SIM_CHECK_REGISTER },
		{ false, false, 200, "{\"status\":\"unbinding\"}", SIM_CHECK_REGISTER },
		{ false, true, 200, "{\"status\":\"unbinding\"}", SIM_CHECK_REGISTER },
		/* reclaiming-rebooting also exits and registers (rule P2) */
		{ false, false, 200, "{\"status\":\"reclaiming-rebooting\"}", SIM_CHECK_REGISTER },
		/* moved on meanwhile (bound and known): register as the agent would */
		{ false, false, 200, "{\"status\":\"known\"}", SIM_CHECK_REGISTER },
		/* UPUA: waits for a person; --reboot-after is that person */
		{ false, false, 200, upua, SIM_CHECK_STOP },
		{ false, true, 200, upua, SIM_CHECK_REBOOT },
		/* the host is gone: register (a new host), as after a 404 on instructions */
		{ false, false, 404, NULL, SIM_CHECK_REGISTER },
		{ false, true, 404, NULL, SIM_CHECK_REGISTER },
		/* failures and answers without a state: ask again, never guess */
		{ false, true, 0, NULL, SIM_CHECK_AGAIN },
		{ false, true, 503, NULL, SIM_CHECK_AGAIN },
		{ false, true, 500, NULL, SIM_CHECK_AGAIN },
		{ false, true, 401, NULL, SIM_CHECK_AGAIN },
		{ false, true, 200, NULL, SIM_CHECK_AGAIN },
		{ false, true, 200, "{\"status\":\"\"}", SIM_CHECK_AGAIN },
		{ false, true, 200, "{\"status\":7}", SIM_CHECK_AGAIN },
		{ false, true, 200, "[]", SIM_CHECK_AGAIN },
		/* installed hosts: keep watching until UPUA, forget them once gone */
		{ true, true, 200, "{\"status\":\"installed\"}", SIM_CHECK_AGAIN },
		{ true, true, 200, "{\"status\":\"added-to-existing-cluster\"}", SIM_CHECK_AGAIN },
		{ true, true, 200, "{\"status\":\"unbinding\"}", SIM_CHECK_AGAIN },
		{ true, true, 200, upua, SIM_CHECK_REBOOT },
		{ true, false, 200, upua, SIM_CHECK_STOP },
		{ true, true, 404, NULL, SIM_CHECK_FORGET },
		{ true, true, 0, NULL, SIM_CHECK_AGAIN },
		{ true, true, 503, NULL, SIM_CHECK_AGAIN },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *j = rows[i].body ? json_loads(rows[i].body, JSON_DECODE_ANY, NULL) : NULL;
		enum simulate_check got;

		if (rows[i].body)
			assert_non_null(j);
		got = simulate_check_action(rows[i].installed, rows[i].reboot, rows[i].code, j);
		if (got != rows[i].want)
			fail_msg("row %zu (installed=%d reboot=%d %ld %s): %d, want %d", i, rows[i].installed,
				 rows[i].reboot, rows[i].code, rows[i].body ? rows[i].body : "-", got, rows[i].want);
		json_decref(j);
	}
}

static void test_watch_delay(void **state)
{
	static const struct {
		bool rebooted;
		int reboot_after;
		unsigned cap;
		int lo, hi; /* -1, -1: no watch */
	} rows[] = {
		{ false, -1, 0, -1, -1 },      /* neither */
		{ true, -1, 0, -1, -1 },       /* installed, but nobody reboots: no requests */
		{ false, 2, 0, -1, -1 },       /* still polling: its agent reports itself */
		{ true, 2, 0, 8000, 12000 },   /* about every 10 s */
		{ true, 0, 0, 8000, 12000 },   /* --reboot-after 0 is a reboot at once, still a watch */
		{ true, 2, 1, 1000, 1000 },    /* --max-poll-seconds caps it */
		{ true, 2, 11, 8000, 11000 },
		{ true, 2, 60, 8000, 12000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint64_t rng = 7 + i;
		int lo = 1 << 30, hi = -2;

		for (int k = 0; k < 500; k++) {
			int ms = simulate_watch_delay_ms(rows[i].rebooted, rows[i].reboot_after, rows[i].cap, &rng);
			lo = ms < lo ? ms : lo;
			hi = ms > hi ? ms : hi;
		}
		if (lo < rows[i].lo || hi > rows[i].hi)
			fail_msg("row %zu: delays %d..%d, want within %d..%d", i, lo, hi, rows[i].lo, rows[i].hi);
	}
	/* Jittered: not every host looks at the same instant. */
	{
		uint64_t rng = 3;
		int lo = 1 << 30, hi = 0;

		for (int k = 0; k < 2000; k++) {
			int ms = simulate_watch_delay_ms(true, 5, 0, &rng);
			lo = ms < lo ? ms : lo;
			hi = ms > hi ? ms : hi;
		}
		assert_true(lo < 8500);
		assert_true(hi > 11500);
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
	assert_int_equal(o.reboot_after_seconds, -1); /* nobody reboots hosts unless asked */
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
		cmocka_unit_test(test_check_action),
		cmocka_unit_test(test_watch_delay),
		cmocka_unit_test(test_transient),
		cmocka_unit_test(test_retry_delay),
		cmocka_unit_test(test_opts_default),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
