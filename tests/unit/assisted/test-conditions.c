/* test-conditions.c - Agent conditions per host status (kubeapi §2.3), one
 * row per table line, and the conditionsv1 transition-time rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/conditions.h"

static const char VI_FAIL[] =
	"{\"hardware\":[{\"id\":\"has-min-cpu-cores\",\"status\":\"failure\",\"message\":\"cpu bad\"},"
	"{\"id\":\"has-inventory\",\"status\":\"success\",\"message\":\"ok\"}],"
	"\"network\":[{\"id\":\"machine-cidr-defined\",\"status\":\"pending\",\"message\":\"cidr missing\"},"
	"{\"id\":\"ntp-synced\",\"status\":\"disabled\",\"message\":\"off\"}]}";

struct row {
	const char *status;
	bool approved;
	const char *type, *st, *reason, *message;
};

static const struct row rows[] = {
	{ "disconnected", true, "Connected", "False", "AgentIsDisconnected",
	  "The agent has not contacted the installation service in some time, user action should be taken" },
	{ "disconnected-unbound", true, "Connected", "False", "AgentIsDisconnected",
	  "The agent has not contacted the installation service in some time, user action should be taken" },
	{ "known", true, "Connected", "True", "AgentIsConnected",
	  "The agent's connection to the installation service is unimpaired" },
	{ "known", true, "RequirementsMet", "True", "AgentIsReady", "The agent is ready to begin the installation" },
	{ "known-unbound", true, "RequirementsMet", "True", "AgentIsReady", "The agent is ready to begin the installation" },
	{ "known", false, "RequirementsMet", "False", "AgentIsNotApproved", "The agent is not approved" },
	{ "insufficient", true, "RequirementsMet", "False", "AgentNotReady", "The agent is not ready to begin the installation" },
	{ "discovering-unbound", true, "RequirementsMet", "False", "AgentNotReady",
	  "The agent is not ready to begin the installation" },
	{ "pending-for-input", true, "RequirementsMet", "False", "AgentNotReady",
	  "The agent is not ready to begin the installation" },
	{ "installing-in-progress", true, "RequirementsMet", "True", "AgentAlreadyInstalling",
	  "Installation already started and is in progress" },
	{ "preparing-for-installation", true, "RequirementsMet", "True", "AgentAlreadyInstalling",
	  "Installation already started and is in progress" },
	{ "installed", true, "RequirementsMet", "True", "AgentInstallationStopped", "The agent installation stopped" },
	{ "error", true, "RequirementsMet", "True", "AgentInstallationStopped", "The agent installation stopped" },
	{ "added-to-existing-cluster", true, "RequirementsMet", "True", "AgentInstallationStopped",
	  "The agent installation stopped" },
	{ "binding", true, "RequirementsMet", "False", "Binding", "The agent is currently binding to a cluster deployment" },
	{ "unbinding", true, "Validated", "False", "Unbinding", "The agent is currently unbinding from a cluster deployment" },
	{ "unbinding-pending-user-action", true, "Installed", "False", "Unbinding",
	  "The agent is currently unbinding from a cluster deployment" },
	{ "binding", true, "Installed", "False", "Binding", "The agent is currently binding to a cluster deployment" },
	{ "cancelled", true, "RequirementsMet", "Unknown", "UnknownStatus",
	  "The installation status is currently not recognized: cancelled" },
	{ "preparing-failed", true, "Installed", "Unknown", "UnknownStatus",
	  "The installation status is currently not recognized: preparing-failed" },
	{ "insufficient", true, "Validated", "False", "ValidationsFailing",
	  "The agent's validations are failing: cpu bad,cidr missing" },
	{ "insufficient-unbound", true, "Validated", "False", "ValidationsFailing",
	  "The agent's validations are failing: cpu bad,cidr missing" },
	{ "pending-for-input", true, "Validated", "False", "ValidationsUserPending",
	  "The agent's validations are pending for user: cpu bad,cidr missing" },
	{ "known", true, "Validated", "True", "ValidationsPassing", "The agent's validations are passing" },
	{ "installed", true, "Installed", "True", "InstallationCompleted", "The installation has completed: Done" },
	{ "added-to-existing-cluster", true, "Installed", "True", "InstallationCompleted",
	  "The installation has completed: Done" },
	{ "error", true, "Installed", "False", "InstallationFailed", "The installation has failed: Done" },
	{ "known", true, "Installed", "False", "InstallationNotStarted", "The installation has not yet started" },
	{ "known-unbound", true, "Installed", "False", "InstallationNotStarted", "The installation has not yet started" },
	{ "installing", true, "Installed", "False", "InstallationInProgress", "The installation is in progress: Done" },
	{ "binding", true, "Bound", "False", "Binding", "The agent is currently binding to a cluster deployment" },
	{ "unbinding", true, "Bound", "False", "Unbinding", "The agent is currently unbinding from a cluster deployment" },
	{ "unbinding-pending-user-action", true, "Bound", "False", "UnbindingPendingUserAction",
	  "The agent is currently unbinding; Pending host reboot from infraenv image" },
	{ "known-unbound", true, "Bound", "False", "Unbound", "The agent is not bound to any cluster deployment" },
	{ "disabled-unbound", true, "Bound", "False", "Unbound", "The agent is not bound to any cluster deployment" },
	{ "known", true, "Bound", "True", "Bound", "The agent is bound to a cluster deployment" },
	{ "reclaiming", true, "Bound", "True", "Bound", "The agent is bound to a cluster deployment" },
	{ NULL, true, "Installed", "Unknown", "NotAvailable", "Information not available" },
	{ NULL, true, "Bound", "Unknown", "NotAvailable", "Information not available" },
	{ NULL, true, "Connected", "Unknown", "NotAvailable", "Information not available" },
};

static const json_t *find(const json_t *a, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(a, i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")), type))
			return c;
	return NULL;
}

static void test_table(void **state)
{
	json_t *vi = json_loads(VI_FAIL, 0, NULL);

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *a = agent_conditions(rows[i].status, "Done", vi, rows[i].approved, true, NULL);
		const json_t *c = find(a, rows[i].type);

		assert_int_equal(json_array_size(a), 6);
		assert_non_null(c);
		if (strcmp(json_string_value(json_object_get(c, "status")), rows[i].st) ||
		    strcmp(json_string_value(json_object_get(c, "reason")), rows[i].reason) ||
		    strcmp(json_string_value(json_object_get(c, "message")), rows[i].message))
			fail_msg("row %zu (%s %s): %s %s '%s'", i, rows[i].status ? rows[i].status : "-", rows[i].type,
				 json_string_value(json_object_get(c, "status")), json_string_value(json_object_get(c, "reason")),
				 json_string_value(json_object_get(c, "message")));
		json_decref(a);
	}
	json_decref(vi);
}

static void test_validated_unknown_and_text(void **state)
{
	json_t *a = agent_conditions("known", "", NULL, true, true, NULL);

	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "reason")), "ValidationsUnknown");
	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "message")),
			    "The agent's validations have not yet been calculated");
	json_decref(a);
	/* validations_info given as JSON text */
	json_t *txt = json_string(VI_FAIL);

	a = agent_conditions("insufficient", "", txt, true, true, NULL);
	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "message")),
			    "The agent's validations are failing: cpu bad,cidr missing");
	json_decref(a);
	json_decref(txt);
}

static void test_spec_synced(void **state)
{
	json_t *a = agent_conditions("known", "", NULL, true, true, NULL);
	const json_t *c = find(a, "SpecSynced");

	assert_ptr_equal(c, json_array_get(a, 0));
	assert_string_equal(json_string_value(json_object_get(c, "reason")), "SyncOK");
	assert_string_equal(json_string_value(json_object_get(c, "message")), "The Spec has been successfully applied");
	json_decref(a);
	a = agent_conditions("known", "", NULL, true, false, "input: bad role");
	c = find(a, "SpecSynced");
	assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
	assert_string_equal(json_string_value(json_object_get(c, "reason")), "InputError");
	assert_string_equal(json_string_value(json_object_get(c, "message")),
			    "The Spec could not be synced due to an input error: bad role");
	json_decref(a);
	a = agent_conditions("known", "", NULL, true, false, "db down");
	c = find(a, "SpecSynced");
	assert_string_equal(json_string_value(json_object_get(c, "reason")), "BackendError");
	assert_string_equal(json_string_value(json_object_get(c, "message")),
			    "The Spec could not be synced due to backend error: db down");
	json_decref(a);
}

static void test_merge_times(void **state)
{
	json_t *old = agent_conditions("known", "", NULL, true, true, NULL), *nw;

	conditions_merge_times(old, NULL, "2026-01-01T00:00:00Z");
	assert_string_equal(json_string_value(json_object_get(find(old, "Connected"), "lastTransitionTime")),
			    "2026-01-01T00:00:00Z");
	assert_true(json_is_null(json_object_get(find(old, "Connected"), "lastHeartbeatTime")));
	nw = agent_conditions("disconnected", "", NULL, true, true, NULL);
	conditions_merge_times(nw, old, "2026-01-02T00:00:00Z");
	/* Connected flipped True → False: new time. */
	assert_string_equal(json_string_value(json_object_get(find(nw, "Connected"), "lastTransitionTime")),
			    "2026-01-02T00:00:00Z");
	/* Bound stays True: time kept even though nothing else changed. */
	assert_string_equal(json_string_value(json_object_get(find(nw, "Bound"), "lastTransitionTime")),
			    "2026-01-01T00:00:00Z");
	/* Installed keeps status False but its reason is the same; kept. */
	assert_string_equal(json_string_value(json_object_get(find(nw, "Installed"), "lastTransitionTime")),
			    "2026-01-01T00:00:00Z");
	json_decref(nw);
	json_decref(old);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_validated_unknown_and_text),
		cmocka_unit_test(test_spec_synced),
		cmocka_unit_test(test_merge_times),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
