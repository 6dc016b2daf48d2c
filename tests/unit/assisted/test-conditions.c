/* test-conditions.c - Agent conditions per host status (kubeapi §2.3), one
 * row per table line, the conditionsv1 transition-time rule, and the spec
 * sync behind SpecSynced (kubeapi §4.4 step 8), one row per rule. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
		json_t *a = agent_conditions(rows[i].status, "Done", vi, rows[i].approved, NULL);
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
	json_t *a = agent_conditions("known", "", NULL, true, NULL);

	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "reason")), "ValidationsUnknown");
	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "message")),
			    "The agent's validations have not yet been calculated");
	json_decref(a);
	/* validations_info given as JSON text */
	json_t *txt = json_string(VI_FAIL);

	a = agent_conditions("insufficient", "", txt, true, NULL);
	assert_string_equal(json_string_value(json_object_get(find(a, "Validated"), "message")),
			    "The agent's validations are failing: cpu bad,cidr missing");
	json_decref(a);
	json_decref(txt);
}

/* SpecSynced from the spec sync's outcome: none, a user-class (4xx) error,
 * any other error. */
static void test_spec_synced(void **state)
{
	static const struct {
		int status;
		const char *message, *st, *reason, *text;
	} srows[] = {
		{ 0, NULL, "True", "SyncOK", "The Spec has been successfully applied" },
		{ 400, "bad role", "False", "InputError", "The Spec could not be synced due to an input error: bad role" },
		{ 409, "Requested installation disk is not part of the host's valid disks", "False", "InputError",
		  "The Spec could not be synced due to an input error: Requested installation disk is not part of the host's valid disks" },
		{ 404, "gone", "False", "InputError", "The Spec could not be synced due to an input error: gone" },
		{ 500, "db down", "False", "BackendError", "The Spec could not be synced due to backend error: db down" },
		{ 0, "unclassified", "False", "BackendError",
		  "The Spec could not be synced due to backend error: unclassified" },
	};

	for (size_t i = 0; i < sizeof(srows) / sizeof(srows[0]); i++) {
		ah_err err = { .status = srows[i].status };
		json_t *a;
		const json_t *c;

		if (srows[i].message)
			snprintf(err.message, sizeof(err.message), "%s", srows[i].message);
		a = agent_conditions("known", "", NULL, true, srows[i].message ? &err : NULL);
		c = find(a, "SpecSynced");
		assert_ptr_equal(c, json_array_get(a, 0));
		assert_string_equal(json_string_value(json_object_get(c, "status")), srows[i].st);
		assert_string_equal(json_string_value(json_object_get(c, "reason")), srows[i].reason);
		assert_string_equal(json_string_value(json_object_get(c, "message")), srows[i].text);
		/* The other conditions do not depend on it. */
		assert_string_equal(json_string_value(json_object_get(find(a, "RequirementsMet"), "reason")),
				    "AgentIsReady");
		json_decref(a);
	}
}

/* ---- agent_spec_apply: one row per rule ---- */

static const char HOST[] =
	"{\"id\":\"H\",\"infra_env_id\":\"IE\",\"status\":\"known-unbound\",\"role\":\"auto-assign\","
	"\"suggested_role\":\"worker\",\"installation_disk_id\":\"/dev/disk/by-id/wwn-1\","
	"\"installation_disk_path\":\"/dev/sda\",\"inventory\":{\"disks\":["
	"{\"id\":\"/dev/disk/by-id/wwn-1\",\"name\":\"sda\",\"by_id\":\"/dev/disk/by-id/wwn-1\","
	"\"by_path\":\"/dev/disk/by-path/p1\",\"installation_eligibility\":{\"eligible\":true}},"
	"{\"id\":\"/dev/disk/by-path/p0\",\"name\":\"sr0\",\"by_path\":\"/dev/disk/by-path/p0\","
	"\"installation_eligibility\":{\"eligible\":false,\"not_eligible_reasons\":[\"installation media\"]}},"
	"{\"id\":\"/dev/disk/by-path/p2\",\"name\":\"sdb\",\"by_path\":\"/dev/disk/by-path/p2\","
	"\"installation_eligibility\":{\"eligible\":true}},"
	"{\"name\":\"sdc\",\"by_path\":\"/dev/disk/by-path/p3\"}]}}";

#define FLAGS "[--append-karg --delete-karg -n --copy-network --network-dir --save-partlabel --save-partindex --image-url --image-file]"
#define ARGS_ERR "Fail to unmarshal installer args for host H in infraEnv IE: "

struct spec_row {
	const char *status;   /* NULL: HOST's known-unbound */
	const char *spec;     /* the Agent spec (JSON) */
	const char *error;    /* expected message prefix; NULL = success */
	bool changed;
	const char *key;      /* a host field to check after the call */
	const char *value;    /* its expected value; NULL = absent */
};

static const struct spec_row spec_rows[] = {
	/* role */
	{ NULL, "{\"role\":\"master\"}", NULL, true, "role", "master" },
	{ NULL, "{\"role\":\"arbiter\"}", NULL, true, "role", "arbiter" },
	{ NULL, "{\"role\":\"worker\"}", NULL, true, "suggested_role", NULL },
	{ NULL, "{\"role\":\"auto-assign\"}", NULL, false, "role", "auto-assign" },
	{ NULL, "{\"role\":\"\"}", NULL, false, "role", "auto-assign" },
	{ NULL, "{\"role\":\"bogus\"}", "Requested role (bogus) is invalid for host H from infraEnv IE", false, "role",
	  "auto-assign" },
	{ NULL, "{\"role\":\"bootstrap\"}", "Requested role (bootstrap) is invalid for host H from infraEnv IE", false,
	  "role", "auto-assign" },
	/* hostname */
	{ NULL, "{\"hostname\":\"node-1.example.com\"}", NULL, true, "requested_hostname", "node-1.example.com" },
	{ NULL, "{\"hostname\":\"\"}", NULL, false, "requested_hostname", NULL },
	{ NULL, "{\"hostname\":\"Node1\"}",
	  "Hostname does not pass required regex validation: ^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$. Hostname: Node1",
	  false, "requested_hostname", NULL },
	{ NULL, "{\"hostname\":\"-node\"}", "Hostname does not pass required regex validation: ", false, NULL, NULL },
	{ NULL, "{\"hostname\":\"a..b\"}", "Hostname does not pass required regex validation: ", false, NULL, NULL },
	{ NULL, "{\"hostname\":\"node.\"}", "Hostname does not pass required regex validation: ", false, NULL, NULL },
	{ NULL, "{\"hostname\":\"under_score\"}", "Hostname does not pass required regex validation: ", false, NULL, NULL },
	{ NULL, "{\"hostname\":\"localhost\"}", "The host name localhost is forbidden", false, NULL, NULL },
	{ NULL, "{\"hostname\":\"localhost6.localdomain6\"}", "The host name localhost6.localdomain6 is forbidden", false,
	  NULL, NULL },
	/* installation disk: by id or /dev/<name>, eligible only */
	{ NULL, "{\"installation_disk_id\":\"/dev/sdb\"}", NULL, true, "installation_disk_id", "/dev/disk/by-path/p2" },
	{ NULL, "{\"installation_disk_id\":\"/dev/disk/by-path/p2\"}", NULL, true, "installation_disk_path", "/dev/sdb" },
	{ NULL, "{\"installation_disk_id\":\"/dev/sdc\"}", NULL, true, "installation_disk_id", "/dev/disk/by-path/p3" },
	{ NULL, "{\"installation_disk_id\":\"/dev/disk/by-path/p1\"}", NULL, false, "installation_disk_id",
	  "/dev/disk/by-id/wwn-1" },
	{ NULL, "{\"installation_disk_id\":\"/dev/sda\"}", NULL, false, "installation_disk_id", "/dev/disk/by-id/wwn-1" },
	{ NULL, "{\"installation_disk_id\":\"/dev/sr0\"}", "Requested installation disk is not part of the host's valid disks",
	  false, "installation_disk_id", "/dev/disk/by-id/wwn-1" },
	{ NULL, "{\"installation_disk_id\":\"/dev/disk/by-path/p0\"}",
	  "Requested installation disk is not part of the host's valid disks", false, NULL, NULL },
	{ NULL, "{\"installation_disk_id\":\"/dev/nvme9n1\"}",
	  "Requested installation disk is not part of the host's valid disks", false, NULL, NULL },
	/* installerArgs */
	{ NULL, "{\"installerArgs\":\"[\\\"--append-karg\\\", \\\"ip=dhcp\\\"]\"}", NULL, true, "installer_args",
	  "[\"--append-karg\",\"ip=dhcp\"]" },
	{ NULL, "{\"installerArgs\":\"null\"}", NULL, true, "installer_args", "[]" },
	{ NULL, "{\"installerArgs\":\"\"}", NULL, false, "installer_args", NULL },
	{ NULL, "{\"installerArgs\":\"[\\\"--save-partindex\\\",\\\"1,5-\\\"]\"}", NULL, true, "installer_args",
	  "[\"--save-partindex\",\"1,5-\"]" },
	{ NULL, "{\"installerArgs\":\"--append-karg\"}", ARGS_ERR, false, "installer_args", NULL },
	{ NULL, "{\"installerArgs\":\"{\\\"a\\\":1}\"}",
	  ARGS_ERR "json: cannot unmarshal object into Go value of type []string", false, NULL, NULL },
	{ NULL, "{\"installerArgs\":\"\\\"-n\\\"\"}", ARGS_ERR "json: cannot unmarshal string into Go value of type []string",
	  false, NULL, NULL },
	{ NULL, "{\"installerArgs\":\"[1]\"}", ARGS_ERR "json: cannot unmarshal number into Go value of type string", false,
	  NULL, NULL },
	{ NULL, "{\"installerArgs\":\"[\\\"--foo\\\"]\"}", "found unexpected flag --foo for installer - allowed flags are " FLAGS,
	  false, NULL, NULL },
	{ NULL, "{\"installerArgs\":\"[\\\"-n\\\",\\\"a b\\\"]\"}", "found unexpected chars in value a b for installer", false,
	  NULL, NULL },
	{ NULL, "{\"installerArgs\":\"[\\\"\\\"]\"}", "found unexpected chars in value  for installer", false, NULL, NULL },
	/* ignitionConfigOverrides (no validator given: any JSON) */
	{ NULL, "{\"ignitionConfigOverrides\":\"{\\\"ignition\\\":{\\\"version\\\":\\\"3.2.0\\\"}}\"}", NULL, true,
	  "ignition_config_overrides", "{\"ignition\":{\"version\":\"3.2.0\"}}" },
	{ NULL, "{\"ignitionConfigOverrides\":\"{bad\"}", "error parsing ignition: ", false, "ignition_config_overrides", NULL },
	/* all or nothing, in upstream order */
	{ NULL, "{\"role\":\"master\",\"hostname\":\"Bad\"}", "Hostname does not pass", false, "role", "auto-assign" },
	{ NULL, "{\"role\":\"nope\",\"installerArgs\":\"[2]\"}", ARGS_ERR, false, "role", "auto-assign" },
	{ NULL, "{\"role\":\"master\",\"hostname\":\"n1\",\"installation_disk_id\":\"/dev/sdb\"}", NULL, true,
	  "requested_hostname", "n1" },
	/* states: PRE, UNB and binding apply; others drop silently */
	{ "discovering", "{\"role\":\"worker\"}", NULL, true, "role", "worker" },
	{ "pending-for-input", "{\"hostname\":\"n2\"}", NULL, true, "requested_hostname", "n2" },
	{ "disconnected-unbound", "{\"role\":\"master\"}", NULL, true, "role", "master" },
	{ "binding", "{\"role\":\"master\"}", NULL, true, "role", "master" },
	{ "installing", "{\"role\":\"bogus\"}", NULL, false, "role", "auto-assign" },
	{ "installed", "{\"hostname\":\"n3\"}", NULL, false, "requested_hostname", NULL },
	{ "preparing-for-installation", "{\"installerArgs\":\"[1]\"}", NULL, false, NULL, NULL },
	{ "unbinding", "{\"role\":\"master\"}", NULL, false, "role", "auto-assign" },
};

static void test_spec_apply(void **state)
{
	struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE" };

	for (size_t i = 0; i < sizeof(spec_rows) / sizeof(spec_rows[0]); i++) {
		const struct spec_row *w = &spec_rows[i];
		json_t *host = json_loads(HOST, 0, NULL), *before, *spec = json_loads(w->spec, 0, NULL);
		bool changed = !w->changed;
		ah_err err = { 0 };
		int r;

		assert_non_null(host);
		assert_non_null(spec);
		if (w->status)
			json_object_set_new(host, "status", json_string(w->status));
		before = json_deep_copy(host);
		r = agent_spec_apply(host, spec, &ctx, &changed, &err);
		if (w->error) {
			if (r != -EINVAL || strncmp(err.message, w->error, strlen(w->error)) || err.status != 400)
				fail_msg("row %zu (%s): r=%d %d '%s'", i, w->spec, r, err.status, err.message);
			/* Never half-applied. */
			assert_true(json_equal(host, before));
		} else if (r != 0) {
			fail_msg("row %zu (%s): r=%d '%s'", i, w->spec, r, err.message);
		}
		if (changed != w->changed || changed != !json_equal(host, before))
			fail_msg("row %zu (%s): changed=%d", i, w->spec, changed);
		if (w->key) {
			const char *got = json_string_value(json_object_get(host, w->key));

			if (w->value ? !got || strcmp(got, w->value) : json_object_get(host, w->key) != NULL)
				fail_msg("row %zu (%s): %s=%s", i, w->spec, w->key, got ? got : "(absent)");
		}
		json_decref(before);
		json_decref(spec);
		json_decref(host);
	}
}

/* Without an inventory the disk cannot be judged yet: left for later. */
static void test_spec_disk_without_inventory(void **state)
{
	struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE" };
	json_t *host = json_pack("{s:s,s:s}", "id", "H", "status", "discovering-unbound");
	json_t *spec = json_pack("{s:s,s:s}", "installation_disk_id", "/dev/sda", "role", "worker");
	bool changed = false;
	ah_err err;

	assert_int_equal(agent_spec_apply(host, spec, &ctx, &changed, &err), 0);
	assert_true(changed);
	assert_null(json_object_get(host, "installation_disk_id"));
	assert_string_equal(json_string_value(json_object_get(host, "role")), "worker");
	json_decref(host);
	json_decref(spec);
}

static int reject_all(const char *text, ah_err *err)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "error parsing ignition: unsupported config version");
}

/* The ignition check is the caller's (the image layer's) and its message
 * is reported as is. */
static void test_spec_ignition_validator(void **state)
{
	struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE", .validate_ignition = reject_all };
	json_t *host = json_loads(HOST, 0, NULL);
	json_t *spec = json_pack("{s:s}", "ignitionConfigOverrides", "{\"ignition\":{\"version\":\"9.9.9\"}}");
	ah_err err;

	assert_int_equal(agent_spec_apply(host, spec, &ctx, NULL, &err), -EINVAL);
	assert_string_equal(err.message, "error parsing ignition: unsupported config version");
	json_decref(host);
	json_decref(spec);
}

/* ---- the ignition endpoint token (kubeapi §1.2, §4.4 step 8) ---- */

#define TOKEN "s3cr3t-t0ken"

/* The Secrets the reader knows: ns/tok holds the token, ns/nokey lacks the
 * key, ns/broken cannot be read; any other is missing. */
static int fake_token(void *opaque, const char *ns, const char *name, char **ret_token, ah_err *err)
{
	(*(int *)opaque)++;
	if (strcmp(ns, "ns") != 0)
		return -ENOENT;
	if (!strcmp(name, "tok"))
		return (*ret_token = strdup(TOKEN)) ? 0 : -ENOMEM;
	if (!strcmp(name, "nokey"))
		return -ENODATA;
	if (!strcmp(name, "broken"))
		return ah_err_set(err, EIO, 500, "InternalError", "store unavailable");
	return -ENOENT;
}

#define REF(n) "\"ignitionEndpointTokenReference\":{\"namespace\":\"ns\",\"name\":\"" n "\"}"
#define NOT_FOUND(n) "Failed to get user-data secret: failed to get secret ns/" n " from API: secrets \"" n "\" not found"

struct token_row {
	const char *status;  /* NULL: HOST's known-unbound */
	const char *spec;
	const char *before;  /* the host's applied token before; NULL = none */
	int r;               /* expected return */
	int err_status;      /* expected err status when r < 0 */
	const char *error;   /* expected message prefix when r < 0 */
	bool changed;
	const char *after;   /* the host's token after; NULL = none */
};

static const struct token_row token_rows[] = {
	/* applied in PRE, UNB and binding */
	{ NULL, "{" REF("tok") "}", NULL, 0, 0, NULL, true, TOKEN },
	{ NULL, "{" REF("tok") "}", TOKEN, 0, 0, NULL, false, TOKEN },
	{ NULL, "{" REF("tok") "}", "old", 0, 0, NULL, true, TOKEN },
	{ "binding", "{" REF("tok") "}", NULL, 0, 0, NULL, true, TOKEN },
	{ "insufficient", "{" REF("tok") "}", NULL, 0, 0, NULL, true, TOKEN },
	/* no reference: an applied token is removed */
	{ NULL, "{}", "old", 0, 0, NULL, true, NULL },
	{ NULL, "{}", NULL, 0, 0, NULL, false, NULL },
	/* the Secret or its key is missing: backend error, nothing applied */
	{ NULL, "{" REF("missing") "}", "old", -ENOENT, 500, NOT_FOUND("missing"), false, "old" },
	{ NULL, "{" REF("nokey") "}", NULL, -ENODATA, 500, "secret nokey did not contain key value", false, NULL },
	{ NULL, "{" REF("broken") "}", NULL, -EIO, 500,
	  "Failed to get user-data secret: failed to get secret ns/broken from cache: store unavailable", false, NULL },
	{ NULL, "{\"role\":\"master\"," REF("missing") "}", NULL, -ENOENT, 500, NOT_FOUND("missing"), false, NULL },
	/* upstream order: installer args, ignition overrides, then the token,
	 * then the host update's own checks */
	{ NULL, "{\"installerArgs\":\"[1]\"," REF("missing") "}", NULL, -EINVAL, 400, ARGS_ERR, false, NULL },
	{ NULL, "{\"ignitionConfigOverrides\":\"{bad\"," REF("missing") "}", NULL, -EINVAL, 400,
	  "error parsing ignition: ", false, NULL },
	{ NULL, "{\"hostname\":\"Bad\"," REF("missing") "}", NULL, -ENOENT, 500, NOT_FOUND("missing"), false, NULL },
	{ NULL, "{\"hostname\":\"Bad\"," REF("tok") "}", NULL, -EINVAL, 400, "Hostname does not pass", false, NULL },
	{ NULL, "{\"role\":\"master\"," REF("tok") "}", NULL, 0, 0, NULL, true, TOKEN },
	/* other states: the update is dropped silently, the Secret still read */
	{ "installing", "{" REF("tok") "}", "old", 0, 0, NULL, false, "old" },
	{ "installed", "{}", "old", 0, 0, NULL, false, "old" },
	{ "added-to-existing-cluster", "{" REF("missing") "}", "old", -ENOENT, 500, NOT_FOUND("missing"), false, "old" },
};

static void test_spec_ignition_token(void **state)
{
	for (size_t i = 0; i < sizeof(token_rows) / sizeof(token_rows[0]); i++) {
		const struct token_row *w = &token_rows[i];
		int reads = 0;
		struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE", .get_ignition_token = fake_token,
					      .opaque = &reads };
		json_t *host = json_loads(HOST, 0, NULL), *before, *spec = json_loads(w->spec, 0, NULL);
		bool changed = !w->changed;
		ah_err err = { 0 };
		const char *got;
		int r;

		assert_non_null(host);
		assert_non_null(spec);
		if (w->status)
			json_object_set_new(host, "status", json_string(w->status));
		if (w->before)
			json_object_set_new(host, "ignition_endpoint_token", json_string(w->before));
		before = json_deep_copy(host);
		r = agent_spec_apply(host, spec, &ctx, &changed, &err);
		if (r != w->r)
			fail_msg("row %zu (%s): r=%d '%s'", i, w->spec, r, err.message);
		if (r < 0) {
			if (err.status != w->err_status || strncmp(err.message, w->error, strlen(w->error)))
				fail_msg("row %zu (%s): %d '%s'", i, w->spec, err.status, err.message);
			/* Never half-applied, and the token never in a message. */
			assert_true(json_equal(host, before));
			assert_null(strstr(err.message, TOKEN));
		}
		if (changed != w->changed || changed != !json_equal(host, before))
			fail_msg("row %zu (%s): changed=%d", i, w->spec, changed);
		got = json_string_value(json_object_get(host, "ignition_endpoint_token"));
		if (w->after ? !got || strcmp(got, w->after) : json_object_get(host, "ignition_endpoint_token") != NULL)
			fail_msg("row %zu (%s): token=%s", i, w->spec, got ? got : "(absent)");
		/* The Secret is read once when referenced (unless an earlier
		 * check failed first), never otherwise. */
		if (reads != (strstr(w->spec, "ignitionEndpointTokenReference") &&
			      !(r < 0 && (strstr(w->spec, "installerArgs") || strstr(w->spec, "ignitionConfig")))))
			fail_msg("row %zu (%s): %d reads", i, w->spec, reads);
		json_decref(before);
		json_decref(spec);
		json_decref(host);
	}
}

/* Without a reader the reference is not ours: an applied token stays. */
static void test_spec_ignition_token_no_reader(void **state)
{
	struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE" };
	json_t *host = json_loads(HOST, 0, NULL), *spec = json_loads("{" REF("missing") "}", 0, NULL);
	bool changed = true;
	ah_err err = { 0 };

	json_object_set_new(host, "ignition_endpoint_token", json_string("old"));
	assert_int_equal(agent_spec_apply(host, spec, &ctx, &changed, &err), 0);
	assert_false(changed);
	assert_string_equal(json_string_value(json_object_get(host, "ignition_endpoint_token")), "old");
	json_decref(spec);
	json_decref(host);
}

/* A missing Secret shows as SpecSynced False BackendError, naming it. */
static void test_spec_ignition_token_condition(void **state)
{
	int reads = 0;
	struct agent_spec_ctx ctx = { .host_id = "H", .infra_env_id = "IE", .get_ignition_token = fake_token,
				      .opaque = &reads };
	json_t *host = json_loads(HOST, 0, NULL), *spec = json_loads("{" REF("missing") "}", 0, NULL), *conds, *c;
	ah_err err = { 0 };

	assert_int_equal(agent_spec_apply(host, spec, &ctx, NULL, &err), -ENOENT);
	conds = agent_conditions("known-unbound", "", NULL, true, &err);
	c = json_array_get(conds, 0);
	assert_string_equal(json_string_value(json_object_get(c, "type")), "SpecSynced");
	assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
	assert_string_equal(json_string_value(json_object_get(c, "reason")), "BackendError");
	assert_string_equal(json_string_value(json_object_get(c, "message")),
			    "The Spec could not be synced due to backend error: " NOT_FOUND("missing"));
	json_decref(conds);
	json_decref(spec);
	json_decref(host);
}

static void test_hostname_lengths(void **state)
{
	char name[300];
	ah_err err;

	/* 63-character labels are fine; 64 are not; the whole name may exceed
	 * 63 (the cap here is 253). */
	memset(name, 'a', 63);
	name[63] = '\0';
	assert_int_equal(agent_validate_hostname(name, &err), 0);
	memset(name, 'a', 64);
	name[64] = '\0';
	assert_int_equal(agent_validate_hostname(name, &err), -EINVAL);
	for (int i = 0; i < 249; i++)
		name[i] = i % 10 == 9 ? '.' : 'b';
	name[249] = '\0';
	assert_int_equal(agent_validate_hostname(name, &err), 0);
	memset(name, 'c', 254);
	name[254] = '\0';
	assert_int_equal(agent_validate_hostname(name, &err), -EINVAL);
	assert_string_equal(err.message, "hostname is too long");
	assert_int_equal(agent_validate_hostname("", &err), -EINVAL);
}

static void test_merge_times(void **state)
{
	json_t *old = agent_conditions("known", "", NULL, true, NULL), *nw;

	conditions_merge_times(old, NULL, "2026-01-01T00:00:00Z");
	assert_string_equal(json_string_value(json_object_get(find(old, "Connected"), "lastTransitionTime")),
			    "2026-01-01T00:00:00Z");
	assert_true(json_is_null(json_object_get(find(old, "Connected"), "lastHeartbeatTime")));
	nw = agent_conditions("disconnected", "", NULL, true, NULL);
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
		cmocka_unit_test(test_spec_apply),
		cmocka_unit_test(test_spec_disk_without_inventory),
		cmocka_unit_test(test_spec_ignition_validator),
		cmocka_unit_test(test_spec_ignition_token),
		cmocka_unit_test(test_spec_ignition_token_no_reader),
		cmocka_unit_test(test_spec_ignition_token_condition),
		cmocka_unit_test(test_hostname_lengths),
		cmocka_unit_test(test_merge_times),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
