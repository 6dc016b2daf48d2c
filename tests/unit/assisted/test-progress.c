/* test-progress.c - install stages per role, installation percentage and
 * the install-phase timeout knobs (backend spec §1.5, §6). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/progress.h"

/* One row per role list of §6. */
static void test_stage_lists(void **state)
{
	static const struct {
		const char *role;
		bool sno, day2;
		const char *stages; /* '|'-joined */
	} rows[] = {
		{ "bootstrap", false, false,
		  "Starting installation|Installing|Writing image to disk|Copying registry data to disk|Waiting for control plane|"
		  "Waiting for bootkube|Waiting for controller|Rebooting|Configuring|Joined|Done" },
		{ "master", false, false,
		  "Starting installation|Installing|Writing image to disk|Copying registry data to disk|Rebooting|Configuring|Joined|Done" },
		{ "arbiter", false, false,
		  "Starting installation|Installing|Writing image to disk|Copying registry data to disk|Rebooting|Configuring|Joined|Done" },
		{ "worker", false, false,
		  "Starting installation|Installing|Writing image to disk|Waiting for control plane|Rebooting|Waiting for ignition|"
		  "Configuring|Joined|Done" },
		{ "bootstrap", true, false,
		  "Starting installation|Installing|Waiting for bootkube|Writing image to disk|Copying registry data to disk|Rebooting|"
		  "Joined|Done" },
		/* SNO only changes the bootstrap list */
		{ "master", true, false,
		  "Starting installation|Installing|Writing image to disk|Copying registry data to disk|Rebooting|Configuring|Joined|Done" },
		{ "worker", false, true, "Starting installation|Installing|Writing image to disk|Waiting for control plane|Rebooting" },
		{ "master", false, true, "Starting installation|Installing|Writing image to disk|Copying registry data to disk|Rebooting" },
		{ "auto-assign", false, false, "" },
		{ NULL, false, false, "" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t n;
		const char *const *l = host_install_stages(rows[i].role, rows[i].sno, rows[i].day2, &n);
		char got[1024] = "";

		for (size_t j = 0; j < n; j++) {
			if (j)
				strcat(got, "|");
			strcat(got, l[j]);
		}
		if (strcmp(got, rows[i].stages) != 0)
			fail_msg("%s sno=%d day2=%d: %s", rows[i].role ? rows[i].role : "(null)", rows[i].sno, rows[i].day2,
				 got);
	}
}

static void test_percentage(void **state)
{
	static const struct {
		const char *role;
		bool sno;
		const char *stage;
		int pct;
	} rows[] = {
		{ "master", false, "Starting installation", 12 },  /* 1/8 */
		{ "master", false, "Rebooting", 62 },              /* 5/8 = 62.5 truncated */
		{ "master", false, "Done", 100 },
		{ "bootstrap", false, "Waiting for controller", 63 }, /* 7/11 */
		{ "bootstrap", true, "Waiting for bootkube", 37 },    /* 3/8 */
		{ "worker", false, "Waiting for ignition", 66 },      /* 6/9 */
		{ "worker", false, "Copying registry data to disk", -1 },
		{ "master", false, "Failed", -1 },
		{ "auto-assign", false, "Installing", -1 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (host_install_percentage(rows[i].role, rows[i].sno, false, rows[i].stage) != rows[i].pct)
			fail_msg("%s %s: %d", rows[i].role, rows[i].stage,
				 host_install_percentage(rows[i].role, rows[i].sno, false, rows[i].stage));
}

static void test_stage_ids(void **state)
{
	assert_int_equal(host_stage_id("Starting installation"), 0);
	assert_int_equal(host_stage_id("Failed"), HOST_STAGE_COUNT - 1);
	assert_int_equal(host_stage_id("failed"), -1);
	assert_int_equal(host_stage_id(NULL), -1);
	for (int i = 0; i < HOST_STAGE_COUNT; i++)
		assert_int_equal(host_stage_id(host_stage_name(i)), i);
	assert_null(host_stage_name(HOST_STAGE_COUNT));
	assert_null(host_stage_name(-1));
}

/* Defaults of §1.5, one row per stage. */
static void test_stage_timeouts(void **state)
{
	static const struct {
		const char *stage;
		bool sno;
		int64_t s;
	} rows[] = {
		{ "Starting installation", false, 30 * 60 },
		{ "Waiting for control plane", false, 60 * 60 },
		{ "Waiting for controller", false, 60 * 60 },
		{ "Waiting for bootkube", false, 60 * 60 },
		{ "Installing", false, 60 * 60 },
		{ "Joined", false, 60 * 60 },
		{ "Writing image to disk", false, 30 * 60 },
		{ "Copying registry data to disk", false, 90 * 60 },
		{ "Rebooting", false, 40 * 60 },
		{ "Rebooting", true, 80 * 60 },
		{ "Configuring", false, 60 * 60 },
		{ "Waiting for ignition", false, 24 * 60 * 60 },
		{ "Done", false, 60 * 60 },
		{ "Something else", false, 60 * 60 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(host_stage_timeout_s(NULL, rows[i].stage, rows[i].sno), rows[i].s);
	}
}

static void test_env_names(void **state)
{
	char b[96];

	host_stage_timeout_env("Writing image to disk", b, sizeof(b));
	assert_string_equal(b, "HOST_STAGE_WRITING_IMAGE_TO_DISK_TIMEOUT");
	host_stage_timeout_env("Joined", b, sizeof(b));
	assert_string_equal(b, "HOST_STAGE_JOINED_TIMEOUT");
	host_stage_timeout_env("Waiting for control plane", b, 12);
	assert_string_equal(b, "HOST_STAGE_");
}

static void test_knobs(void **state)
{
	static const struct {
		const char *name, *value;
		int rc;
		const char *stage; /* checked stage, NULL = field below */
		int64_t want;
	} rows[] = {
		{ "HOST_STAGE_WRITING_IMAGE_TO_DISK_TIMEOUT", "45m", 0, "Writing image to disk", 45 * 60 },
		{ "HOST_STAGE_REBOOTING_TIMEOUT", "1h30m", 0, "Rebooting", 90 * 60 },
		{ "HOST_STAGE_WAITING_FOR_IGNITION_TIMEOUT", "90", 0, "Waiting for ignition", 90 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "1.5h", 0, "Installing", 90 * 60 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "soon", -EINVAL, "Installing", 60 * 60 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "-5", -EINVAL, "Installing", 60 * 60 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "5x", -EINVAL, "Installing", 60 * 60 },
		{ "HOST_STAGE_FLYING_TIMEOUT", "5m", -ENOENT, NULL, 0 },
		{ "PREPARE_FOR_INSTALLATION_HOST_TIMEOUT", "2m", 0, NULL, 120 },
		{ "PREPARE_FOR_INSTALLATION_HOST_TIMEOUT", "0s", -EINVAL, NULL, 0 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "0", -EINVAL, "Installing", 60 * 60 },
		{ "HOST_STAGE_INSTALLING_TIMEOUT", "250ms", -EINVAL, "Installing", 60 * 60 },
		{ "HOST_MAX_DISCONNECTION_TIME", "", -EINVAL, NULL, 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct host_timeouts t;
		ah_err err = { 0 };
		int rc;

		host_timeouts_init(&t);
		rc = host_timeouts_set(&t, rows[i].name, rows[i].value, &err);
		if (rc != rows[i].rc)
			fail_msg("%s=%s: rc %d", rows[i].name, rows[i].value, rc);
		if (rc == -EINVAL) {
			assert_int_equal(err.status, 400);
			assert_non_null(strstr(err.message, rows[i].name));
		}
		if (rows[i].stage)
			assert_int_equal(host_stage_timeout_s(&t, rows[i].stage, false), rows[i].want);
		else if (rc == 0)
			assert_int_equal(t.prepare_s, rows[i].want);
	}
	{
		struct host_timeouts t;

		host_timeouts_init(&t);
		assert_int_equal(host_timeouts_set(&t, "ENABLE_SOFT_TIMEOUTS", "true", NULL), 0);
		assert_true(t.soft);
		assert_int_equal(host_timeouts_set(&t, "ENABLE_SOFT_TIMEOUTS", "maybe", NULL), -EINVAL);
		assert_true(t.soft);
		/* SNO reboot keeps its own timeout whatever Rebooting is set to */
		assert_int_equal(host_timeouts_set(&t, "HOST_STAGE_REBOOTING_TIMEOUT", "1m", NULL), 0);
		assert_int_equal(host_stage_timeout_s(&t, "Rebooting", true), 80 * 60);
	}
}

static void test_durations(void **state)
{
	static const struct {
		int64_t s;
		const char *text;
	} fmt[] = { { 3600, "1h0m0s" }, { 1800, "30m0s" }, { 45, "45s" }, { 0, "0s" }, { 86400, "24h0m0s" },
		    { 5400, "1h30m0s" }, { 3661, "1h1m1s" } };
	char b[32];
	int64_t v;

	for (size_t i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		host_format_duration(fmt[i].s, b, sizeof(b));
		assert_string_equal(b, fmt[i].text);
		assert_int_equal(host_parse_duration(fmt[i].text, &v), 0);
		assert_int_equal(v, fmt[i].s);
	}
	assert_int_equal(host_parse_duration("250ms", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(host_parse_duration("", &v), -EINVAL);
	assert_int_equal(host_parse_duration("h", &v), -EINVAL);
	assert_int_equal(host_parse_duration("1d", &v), -EINVAL);
}

static void test_disconnection_knob_and_process_table(void **state)
{
	struct host_timeouts t;

	(void)state;
	host_timeouts_init(&t);
	assert_int_equal(t.disconnect_s, 180);
	assert_int_equal(host_timeouts_set(&t, "HOST_MAX_DISCONNECTION_TIME", "45s", NULL), 0);
	assert_int_equal(t.disconnect_s, 45);
	assert_null(host_timeouts_configured());
	host_timeouts_configure(&t);
	/* A copy: later changes to the caller's table do not leak in. */
	t.disconnect_s = 1;
	assert_int_equal(host_timeouts_configured()->disconnect_s, 45);
	host_timeouts_configure(NULL);
	assert_null(host_timeouts_configured());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stage_lists),    cmocka_unit_test(test_percentage),
		cmocka_unit_test(test_stage_ids),      cmocka_unit_test(test_stage_timeouts),
		cmocka_unit_test(test_env_names),      cmocka_unit_test(test_knobs),
		cmocka_unit_test(test_durations),      cmocka_unit_test(test_disconnection_knob_and_process_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
