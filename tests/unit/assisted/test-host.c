/* test-host.c - RegisterHost and RefreshHost (one row per transition) and
 * the host validations they rest on (backend spec §1.1, §1.4, §3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/host.h"
#include "assisted/progress.h"
#include "assisted/validations.h"

#define NOW 1700000000

static const char GOOD_INV[] =
	"{\"hostname\":\"host-1\",\"cpu\":{\"count\":8,\"architecture\":\"x86_64\",\"flags\":[\"vmx\"]},"
	"\"memory\":{\"physical_bytes\":34359738368,\"usable_bytes\":33000000000},"
	"\"disks\":[{\"name\":\"sda\",\"by_id\":\"/dev/disk/by-id/wwn-1\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,"
	"\"installation_eligibility\":{\"eligible\":true,\"not_eligible_reasons\":[]}}],"
	"\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"52:54:00:00:00:01\",\"ipv4_addresses\":[\"192.168.1.10/24\"],\"ipv6_addresses\":[]}],"
	"\"routes\":[{\"interface\":\"eth0\",\"destination\":\"0.0.0.0\",\"gateway\":\"192.168.1.1\",\"family\":2}],"
	"\"system_vendor\":{\"manufacturer\":\"QEMU\",\"product_name\":\"Standard PC\",\"virtual\":true}}";

static const char CLUSTER[] =
	"{\"name\":\"c\",\"base_dns_domain\":\"example.com\",\"control_plane_count\":3,\"status\":\"insufficient\","
	"\"machine_networks\":[{\"cidr\":\"192.168.1.0/24\"}],\"platform\":{\"type\":\"baremetal\"},"
	"\"connectivity_majority_groups\":\"{\\\"192.168.1.0/24\\\":[\\\"h1\\\"]}\"}";

static const char RESOLUTIONS[] =
	"{\"resolutions\":[{\"domain_name\":\"validateNoWildcardDNS.c.example.com\",\"ipv4_addresses\":[],\"ipv6_addresses\":[]}]}";

/* A bound host with the good inventory; patch (JSON text, may be NULL) is
 * merged over it. */
static json_t *mkhost(const char *status, bool with_inv, const char *patch)
{
	json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:s}", "id", "h1", "status", status, "cluster_id", "c1",
			      "role", "auto-assign", "checked_in_at", (json_int_t)NOW - 10, "timestamp",
			      (json_int_t)NOW, "status_info", "");
	json_object_set_new(h, "ntp_sources", json_pack("[{s:s, s:s}]", "source_name", "pool", "source_state", "synced"));

	if (with_inv) {
		json_object_set_new(h, "inventory", json_string(GOOD_INV));
		json_object_set_new(h, "installation_disk_id", json_string("/dev/disk/by-id/wwn-1"));
		json_object_set_new(h, "domain_resolutions", json_string(RESOLUTIONS));
	}
	if (patch) {
		json_t *p = json_loads(patch, 0, NULL);

		assert_non_null(p);
		json_object_update(h, p);
		json_decref(p);
	}
	return h;
}

/* ---- RegisterHost ---- */

static void test_register(void **state)
{
	static const struct {
		const char *from, *stage, *kind;
		bool bound;
		const char *to;
		int refusal;
	} rows[] = {
		{ NULL, NULL, NULL, true, "discovering", 0 },
		{ NULL, NULL, NULL, false, "discovering-unbound", 0 },
		{ "preparing-for-installation", NULL, NULL, true, "known", 0 },
		{ "preparing-successful", NULL, NULL, true, "known", 0 },
		{ "known", NULL, NULL, true, "discovering", 0 },
		{ "discovering", NULL, NULL, true, "discovering", 0 },
		{ "insufficient", NULL, NULL, true, "discovering", 0 },
		{ "disconnected", NULL, NULL, true, "discovering", 0 },
		{ "pending-for-input", NULL, NULL, true, "discovering", 0 },
		{ "resetting-pending-user-action", NULL, NULL, true, "discovering", 0 },
		{ "binding", NULL, NULL, true, "discovering", 0 },
		{ "resetting", "Rebooting", NULL, true, "resetting", 0 },
		{ "resetting", "Installing", NULL, true, "discovering", 0 },
		{ "installing-in-progress", "Rebooting", NULL, true, "installing-pending-user-action", 0 },
		{ "added-to-existing-cluster", "Done", "AddToExistingClusterHost", true, "installing-pending-user-action", 0 },
		{ "installing-pending-user-action", "Rebooting", NULL, true, NULL, 403 },
		{ "installing", NULL, NULL, true, "error", 0 },
		{ "installing-in-progress", "Installing", NULL, true, "error", 0 },
		{ "error", NULL, NULL, true, "error", 0 },
		{ "installed", NULL, NULL, true, NULL, 409 },
		{ "discovering-unbound", NULL, NULL, false, "discovering-unbound", 0 },
		{ "disconnected-unbound", NULL, NULL, false, "discovering-unbound", 0 },
		{ "insufficient-unbound", NULL, NULL, false, "discovering-unbound", 0 },
		{ "known-unbound", NULL, NULL, false, "discovering-unbound", 0 },
		{ "unbinding", NULL, NULL, false, "discovering-unbound", 0 },
		{ "unbinding-pending-user-action", NULL, NULL, false, "discovering-unbound", 0 },
		{ "reclaiming-rebooting", NULL, NULL, false, "discovering-unbound", 0 },
		{ "cancelled", NULL, NULL, true, NULL, 400 },
		{ "preparing-failed", NULL, NULL, true, NULL, 400 },
		{ "reclaiming", NULL, NULL, false, NULL, 400 },
		{ "installing-pending-user-action", "Installing", NULL, true, NULL, 400 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = NULL;
		const char *got;

		if (rows[i].from) {
			h = json_pack("{s:s, s:{s:s}, s:s}", "status", rows[i].from, "progress", "current_stage",
				      rows[i].stage ? rows[i].stage : "", "kind", rows[i].kind ? rows[i].kind : "Host");
		}
		got = host_register_state(h, rows[i].bound);
		if (rows[i].to) {
			assert_non_null(got);
			assert_string_equal(got, rows[i].to);
		} else {
			assert_null(got);
			assert_int_equal(host_register_refusal(h), rows[i].refusal);
		}
		json_decref(h);
	}
}

static void test_register_apply(void **state)
{
	json_t *h = mkhost("known", true, "{\"ntp_sources\":[],\"bootstrap\":true}");
	ah_err err;

	assert_int_equal(host_register(h, false, true, NOW, &err), 0);
	assert_string_equal(json_string_value(json_object_get(h, "status")), "discovering");
	assert_string_equal(json_string_value(json_object_get(h, "status_info")), HOST_INFO_DISCOVERING);
	assert_null(json_object_get(h, "inventory"));
	assert_null(json_object_get(h, "ntp_sources"));
	assert_true(json_is_false(json_object_get(h, "bootstrap")));
	assert_int_equal(json_integer_value(json_object_get(h, "registered_at")), NOW);
	json_decref(h);

	h = json_pack("{s:s}", "status", "installed");
	assert_int_equal(host_register(h, false, true, NOW, &err), -EBUSY);
	assert_int_equal(err.status, 409);
	json_decref(h);

	h = json_object();
	assert_int_equal(host_register(h, true, false, NOW, &err), 0);
	assert_string_equal(json_string_value(json_object_get(h, "status")), "discovering-unbound");
	assert_string_equal(json_string_value(json_object_get(h, "role")), "auto-assign");
	assert_string_equal(json_string_value(json_object_get(h, "suggested_role")), "auto-assign");
	json_decref(h);
}

/* ---- RefreshHost ---- */

struct refresh_row {
	const char *name;
	const char *from;
	bool inv;
	const char *patch;          /* merged over the host */
	int cluster;                /* 0 none (unbound), 1 CLUSTER */
	const char *cluster_patch;
	const char *to;
	const char *info;           /* expected status_info (exact) or NULL */
	int rc;
};

static const char MCIDR_UNDEF[] =
	"Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs";

static const struct refresh_row refresh_rows[] = {
	{ "#26 discovering without inventory", "discovering", false, NULL, 1, NULL, "discovering", HOST_INFO_DISCOVERING, 0 },
	{ "#13 discovering disconnected", "discovering", false, "{\"checked_in_at\":1699999000}", 1, NULL, "disconnected",
	  HOST_INFO_DISCONNECTED, 0 },
	{ "#13 known media disconnected", "known", true, "{\"media_status\":\"disconnected\"}", 1, NULL, "disconnected",
	  HOST_INFO_MEDIA_DISCONNECTED, 0 },
	{ "#13 insufficient disconnected", "insufficient", true, "{\"checked_in_at\":1699999000}", 1, NULL,
	  "disconnected", HOST_INFO_DISCONNECTED, 0 },
	{ "#13 pending-for-input disconnected", "pending-for-input", true, "{\"checked_in_at\":1699999000}", 1, NULL,
	  "disconnected", HOST_INFO_DISCONNECTED, 0 },
	{ "#13 disconnected stays", "disconnected", true, "{\"checked_in_at\":1699999000}", 1, NULL, "disconnected",
	  HOST_INFO_DISCONNECTED, 0 },
	{ "bootstrap gets 2 more minutes", "known", true, "{\"checked_in_at\":1699999750,\"bootstrap\":true}", 1, NULL,
	  "known", HOST_INFO_KNOWN, 0 },
	{ "#26 disconnected reconnects without inventory", "disconnected", false, NULL, 1, NULL, "discovering",
	  HOST_INFO_DISCOVERING, 0 },
	{ "#27 insufficient hardware", "discovering", true,
	  "{\"inventory\":{\"hostname\":\"host-1\",\"cpu\":{\"count\":1},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sda\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,\"installation_eligibility\":{\"eligible\":true}}]}}",
	  1, NULL, "insufficient",
	  "Host does not meet the minimum hardware requirements: Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks ; Host has not yet been configured with a default route. ; Require at least 2 CPU cores for auto-assign role, found only 1 ; The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is 2, found only 1",
	  0 },
	{ "#27 no eligible disk", "known", true,
	  "{\"inventory\":{\"hostname\":\"host-1\",\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sr0\",\"drive_type\":\"ODD\",\"size_bytes\":1000,\"installation_eligibility\":{\"eligible\":false}}]}}",
	  1, NULL, "insufficient",
	  "Host does not meet the minimum hardware requirements: Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks ; Host has not yet been configured with a default route. ; No eligible disks were found, please check specific disks to see why they are not eligible",
	  0 },
	{ "#28 pending for input", "discovering", true, NULL, 1, "{\"machine_networks\":[]}", "pending-for-input", NULL, 0 },
	{ "#30 discovering to known", "discovering", true, NULL, 1, NULL, "known", HOST_INFO_KNOWN, 0 },
	{ "#30 insufficient to known", "insufficient", true, NULL, 1, NULL, "known", HOST_INFO_KNOWN, 0 },
	{ "#30 pending-for-input to known", "pending-for-input", true, NULL, 1, NULL, "known", HOST_INFO_KNOWN, 0 },
	{ "#30 disconnected to known", "disconnected", true, NULL, 1, NULL, "known", HOST_INFO_KNOWN, 0 },
	{ "#31 known stays known", "known", true, NULL, 1, NULL, "known", HOST_INFO_KNOWN, 0 },
	{ "#31 known, cluster preparing but auto-assign role", "known", true, NULL, 1,
	  "{\"status\":\"preparing-for-installation\"}", "known", HOST_INFO_KNOWN, 0 },
	{ "#2 known to preparing", "known", true, "{\"role\":\"master\"}", 1, "{\"status\":\"preparing-for-installation\"}",
	  "preparing-for-installation", HOST_INFO_PREPARING, 0 },
	{ "#7 known, slow disk", "known", true,
	  "{\"disks_info\":{\"/dev/disk/by-id/wwn-1\":{\"disk_speed\":{\"tested\":true,\"exit_code\":1}}}}", 1, NULL,
	  "insufficient",
	  "Host cannot be installed due to following failing validation(s): While preparing the previous installation the installation disk speed measurement failed or was found to be insufficient",
	  0 },
	{ "#29 forbidden hostname", "insufficient", true, "{\"requested_hostname\":\"localhost\"}", 1, NULL, "insufficient",
	  "Host cannot be installed due to following failing validation(s): The host name localhost is forbidden", 0 },
	{ "#29 no default route, sorted messages", "discovering", true, "{\"requested_hostname\":\"Bad_Name\",\"inventory\":"
	  "{\"hostname\":\"x\",\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"192.168.1.10/24\"]}],"
	  "\"disks\":[{\"name\":\"sda\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,\"installation_eligibility\":{\"eligible\":true}}],\"system_vendor\":{}}}",
	  1, NULL, "insufficient",
	  "Host cannot be installed due to following failing validation(s): Host has not yet been configured with a default route. ; Hostname Bad_Name is forbidden, hostname should match pattern ^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$",
	  0 },
	{ "#29 not in machine network", "discovering", true, NULL, 1, "{\"machine_networks\":[{\"cidr\":\"10.0.0.0/16\"}],"
	  "\"connectivity_majority_groups\":{\"10.0.0.0/16\":[\"h1\"]}}", "insufficient",
	  "Host cannot be installed due to following failing validation(s): Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks",
	  0 },
	{ "#29 ignored validation passes", "discovering", true, "{\"inventory\":"
	  "{\"hostname\":\"host-1\",\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"192.168.1.10/24\"]}],"
	  "\"disks\":[{\"name\":\"sda\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,\"installation_eligibility\":{\"eligible\":true}}],\"system_vendor\":{}}}",
	  1, "{\"ignored_host_validations\":\"[\\\"has-default-route\\\"]\"}", "known", HOST_INFO_KNOWN, 0 },
	{ "#29 wildcard DNS pending", "discovering", true, "{\"domain_resolutions\":null}", 1, NULL, "insufficient",
	  "Host cannot be installed due to following failing validation(s): ", 0 },
	{ "#29 full truncation", "discovering", true, "{\"inventory\":"
	  "{\"hostname\":\"host-1\",\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},\"truncation\":{\"type\":\"full\"},"
	  "\"disks\":[{\"name\":\"sda\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,\"installation_eligibility\":{\"eligible\":true}}],\"system_vendor\":{}}}",
	  1, NULL, "discovering", HOST_INFO_DISCOVERING, 0 },
	{ "#33 error stays", "error", true, "{\"status_info\":\"boom\"}", 1, NULL, "error", "boom", 0 },
	{ "#33 cancelled stays", "cancelled", true, "{\"status_info\":\"x\"}", 1, NULL, "cancelled", "x", 0 },
	{ "out of scope: disabled is dead", "disabled", true, NULL, 1, NULL, NULL, NULL, -EOPNOTSUPP },
	{ "P4 binding stays", "binding", true, "{\"status_info\":\"" HOST_INFO_BINDING "\"}", 1, NULL, "binding",
	  HOST_INFO_BINDING, 0 },
	{ "P4 unbinding stays", "unbinding", true, "{\"cluster_id\":\"\",\"status_info\":\"" HOST_INFO_UNBINDING "\"}", 0,
	  NULL, "unbinding", HOST_INFO_UNBINDING, 0 },
	{ "P1 unbinding disconnected", "unbinding", true, "{\"cluster_id\":\"\",\"checked_in_at\":1699999000}", 0, NULL,
	  "disconnected-unbound", HOST_INFO_DISCONNECTED, 0 },
	{ "P1 known-unbound disconnected", "known-unbound", true, "{\"cluster_id\":\"\",\"checked_in_at\":1699999000}", 0,
	  NULL, "disconnected-unbound", HOST_INFO_DISCONNECTED, 0 },
	{ "P1 disconnected-unbound stays", "disconnected-unbound", false, "{\"cluster_id\":\"\",\"checked_in_at\":1699999000}",
	  0, NULL, "disconnected-unbound", HOST_INFO_DISCONNECTED, 0 },
	{ "P2 discovering-unbound without inventory", "discovering-unbound", false, "{\"cluster_id\":\"\"}", 0, NULL,
	  "discovering-unbound", HOST_INFO_DISCOVERING, 0 },
	{ "P2 disconnected-unbound reconnects", "disconnected-unbound", false, "{\"cluster_id\":\"\"}", 0, NULL,
	  "discovering-unbound", HOST_INFO_DISCOVERING, 0 },
	{ "P3 insufficient-unbound memory", "known-unbound", true, "{\"cluster_id\":\"\",\"inventory\":"
	  "{\"hostname\":\"host-1\",\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":4294967296},"
	  "\"disks\":[{\"name\":\"sda\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000,\"installation_eligibility\":{\"eligible\":true}}]}}",
	  0, NULL, "insufficient-unbound",
	  "Host does not meet the minimum hardware requirements: Host has not yet been configured with a default route. ; Require at least 8.00 GiB RAM for role auto-assign, found only 4.00 GiB ; The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is 8.00 GiB, found only 4.00 GiB",
	  0 },
	{ "P3 insufficient-unbound hostname", "discovering-unbound", true, "{\"cluster_id\":\"\",\"requested_hostname\":\"localhost\"}",
	  0, NULL, "insufficient-unbound", "Host does not meet the minimum hardware requirements: The host name localhost is forbidden", 0 },
	{ "P5 discovering-unbound to known-unbound", "discovering-unbound", true, "{\"cluster_id\":\"\"}", 0, NULL,
	  "known-unbound", HOST_INFO_READY_TO_BE_BOUND, 0 },
	{ "P5 insufficient-unbound to known-unbound", "insufficient-unbound", true, "{\"cluster_id\":\"\"}", 0, NULL,
	  "known-unbound", HOST_INFO_READY_TO_BE_BOUND, 0 },
	{ "P5 disconnected-unbound to known-unbound", "disconnected-unbound", true, "{\"cluster_id\":\"\"}", 0, NULL,
	  "known-unbound", HOST_INFO_READY_TO_BE_BOUND, 0 },
	{ "unbound, connected, media disconnected: no rule", "known-unbound", true,
	  "{\"cluster_id\":\"\",\"media_status\":\"disconnected\"}", 0, NULL, "known-unbound", NULL, 0 },
};

static void test_refresh(void **state)
{
	for (size_t i = 0; i < sizeof(refresh_rows) / sizeof(refresh_rows[0]); i++) {
		const struct refresh_row *r = &refresh_rows[i];
		json_t *h = mkhost(r->from, r->inv, r->patch), *cl = NULL, *hosts;
		struct host_refresh_ctx ctx = { .now = NOW };
		struct host_refresh_result res;
		int rc;

		if (r->cluster) {
			cl = json_loads(CLUSTER, 0, NULL);
			if (r->cluster_patch) {
				json_t *p = json_loads(r->cluster_patch, 0, NULL);

				assert_non_null(p);
				json_object_update(cl, p);
				json_decref(p);
			}
		}
		hosts = json_pack("[O]", h);
		ctx.cluster = cl;
		ctx.cluster_hosts = hosts;
		rc = host_refresh(h, &ctx, &res);
		if (rc != r->rc)
			fail_msg("%s: rc %d", r->name, rc);
		if (rc == 0) {
			if (strcmp(res.status, r->to) != 0)
				fail_msg("%s: got %s (%s)", r->name, res.status, res.status_info);
			if (r->info && strncmp(res.status_info, r->info, strlen(r->info)) != 0)
				fail_msg("%s: status_info '%s'", r->name, res.status_info);
			if (r->info && r->info[strlen(r->info) - 1] != ' ' && strcmp(res.status_info, r->info) != 0)
				fail_msg("%s: status_info '%s'", r->name, res.status_info);
			host_refresh_result_release(&res);
		}
		json_decref(hosts);
		json_decref(cl);
		json_decref(h);
	}
}

static void test_refresh_changed(void **state)
{
	json_t *h = mkhost("known", true, "{\"status_info\":\"" HOST_INFO_KNOWN "\"}"), *cl = json_loads(CLUSTER, 0, NULL);
	json_t *hosts = json_pack("[O]", h);
	struct host_refresh_ctx ctx = { .now = NOW, .cluster = cl, .cluster_hosts = hosts };
	struct host_refresh_result res;

	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_true(res.changed);
	assert_false(res.status_changed);
	assert_true(res.validations_changed);
	json_object_set(h, "validations_info", res.validations_info);
	host_refresh_result_release(&res);
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_false(res.changed);
	assert_true(res.rule_matched);
	host_refresh_result_release(&res);
	json_decref(hosts);
	json_decref(cl);
	json_decref(h);
}

/* ---- RefreshHost, installation-phase rules (§1.4 #1-#25, #32-#35) ---- */

#define AGO(s) (NOW - (s))
#define DS_OK "\"disks_info\":{\"/dev/disk/by-id/wwn-1\":{\"disk_speed\":{\"tested\":true,\"exit_code\":0}}}"
#define DS_BAD "\"disks_info\":{\"/dev/disk/by-id/wwn-1\":{\"disk_speed\":{\"tested\":true,\"exit_code\":1}}}"
#define IM_OK "\"images_status\":{\"quay.io/rel\":{\"name\":\"quay.io/rel\",\"result\":\"success\"}}"
#define IM_BAD "\"images_status\":{\"quay.io/rel\":{\"name\":\"quay.io/rel\",\"result\":\"failure\"}}"
#define STALE "\"checked_in_at\":1699999000"

struct irow {
	const char *name;
	const char *from;
	const char *patch;         /* merged over the host (with inventory) */
	const char *cluster_patch; /* merged over CLUSTER */
	bool soft;                 /* ENABLE_SOFT_TIMEOUTS and org_soft_timeouts_enabled */
	const char *to;
	const char *info;          /* NULL: not checked; exact otherwise */
	const char *rule;          /* the matched rule, "" = none */
	const char *upd;           /* expected ret.updates (JSON), NULL = {} */
	const char *others;        /* the other hosts of the cluster (JSON array), NULL = none */
};

static const struct irow install_rows[] = {
	{ "#1 reclaim timed out", "reclaiming", "{\"status_updated_at\":%d}", NULL, false,
	  "unbinding-pending-user-action", HOST_INFO_UNBINDING, "#1", NULL, NULL },
	{ "#35 reclaiming within the hour", "reclaiming-rebooting", "{\"status_info\":\"r\",\"status_updated_at\":1699999400}", NULL,
	  false, "reclaiming-rebooting", "r", "#35", NULL, NULL },
	{ "#3 prepared: disk measured, images pulled", "preparing-for-installation",
	  "{\"role\":\"master\"," DS_OK "," IM_OK "}", "{\"status\":\"preparing-for-installation\"}", false,
	  "preparing-successful", HOST_INFO_PREPARING_SUCCESSFUL, "#3",
	  "{\"logs_info\":\"\",\"logs_started_at\":0,\"logs_collected_at\":0}", NULL },
	{ "#3 prepared: partitions saved, no measurement", "preparing-for-installation",
	  "{\"role\":\"worker\",\"installer_args\":\"[\\\"--save-partindex\\\",\\\"5\\\"]\"," IM_OK "}",
	  "{\"status\":\"preparing-for-installation\"}", false, "preparing-successful", HOST_INFO_PREPARING_SUCCESSFUL,
	  "#3", "{\"logs_info\":\"\",\"logs_started_at\":0,\"logs_collected_at\":0}", NULL },
	{ "#4 preparing-successful waits for the cluster", "preparing-successful",
	  "{\"status_info\":\"" HOST_INFO_PREPARING_SUCCESSFUL "\"}", "{\"status\":\"preparing-for-installation\"}", false,
	  "preparing-successful", HOST_INFO_PREPARING_SUCCESSFUL, "#4", NULL, NULL },
	{ "#5 cluster installing", "preparing-successful", NULL, "{\"status\":\"installing\"}", false, "installing",
	  HOST_INFO_INSTALLING, "#5", NULL, NULL },
	{ "#6 cluster left preparation", "preparing-for-installation", "{\"role\":\"master\"}", "{\"status\":\"ready\"}",
	  false, "known", HOST_INFO_KNOWN, "#6", NULL, NULL },
	{ "#7 preparing, slow disk", "preparing-for-installation", "{" DS_BAD "}",
	  "{\"status\":\"preparing-for-installation\"}", false, "insufficient",
	  "Host cannot be installed due to following failing validation(s): While preparing the previous installation the installation disk speed measurement failed or was found to be insufficient",
	  "#7", NULL, NULL },
	{ "#7 preparing-failed, slow disk", "preparing-failed", "{" DS_BAD "}", "{\"status\":\"ready\"}", false,
	  "insufficient", NULL, "#7", NULL, NULL },
	{ "#8 preparation timed out: disk and images", "preparing-for-installation", "{\"status_updated_at\":%d}",
	  "{\"status\":\"preparing-for-installation\"}", false, "preparing-failed",
	  "The host has encountered a preparation timeout, the following conditions failed: the installation disk speed check did not complete within the timeout. container availability was not determined within the timeout.",
	  "#8", NULL, NULL },
	{ "#8 preparation timed out: images only", "preparing-for-installation", "{\"status_updated_at\":%d," DS_OK "}",
	  "{\"status\":\"preparing-for-installation\"}", false, "preparing-failed",
	  "The host has encountered a preparation timeout, the following conditions failed: container availability was not determined within the timeout.",
	  "#8", NULL, NULL },
	{ "#9 images failed", "preparing-for-installation", "{" IM_BAD "}", "{\"status\":\"preparing-for-installation\"}",
	  false, "preparing-failed",
	  "Host failed to prepare for installation due to following failing validation(s): Failed to fetch container images needed for installation from quay.io/rel. This may be due to a network hiccup. Retry to install again. If this problem persists, check your network settings to make sure you\xe2\x80\x99re not blocked.",
	  "#9", NULL, NULL },
	{ "#10 still preparing", "preparing-for-installation", "{\"status_info\":\"" HOST_INFO_PREPARING "\"}",
	  "{\"status\":\"preparing-for-installation\"}", false, "preparing-for-installation", HOST_INFO_PREPARING, "#10",
	  NULL, NULL },
	{ "#11 preparing-failed, cluster back to ready", "preparing-failed", NULL, "{\"status\":\"ready\"}", false, "known",
	  HOST_INFO_KNOWN, "#11", NULL, NULL },
	{ "#12 preparing-successful, cluster back to ready", "preparing-successful", NULL, "{\"status\":\"ready\"}", false,
	  "known", HOST_INFO_KNOWN, "#12", NULL, NULL },
	{ "#13 preparing-failed disconnected", "preparing-failed", "{" STALE "}", "{\"status\":\"ready\"}", false,
	  "disconnected", HOST_INFO_DISCONNECTED, "#13", NULL, NULL },
	{ "#14 installing, cluster error", "installing", NULL, "{\"status\":\"error\"}", false, "error",
	  HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS, "#14", NULL, NULL },
	{ "#14 installed, cluster error", "installed", NULL, "{\"status\":\"error\"}", false, "error",
	  HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS, "#14", NULL, NULL },
	{ "#14 pending user action, cluster error", "installing-pending-user-action", NULL, "{\"status\":\"error\"}", false,
	  "error", HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS, "#14", NULL, NULL },
	{ "#14 resetting-pending-user-action, cluster error", "resetting-pending-user-action", NULL,
	  "{\"status\":\"error\"}", false, "error", HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS, "#14", NULL, NULL },
	{ "#14 not for day-2: no rule", "installing-in-progress",
	  "{\"kind\":\"AddToExistingClusterHost\",\"status_info\":\"Installing\"}", "{\"status\":\"error\"}", false,
	  "installing-in-progress", "Installing", "", NULL, NULL },
	{ "#15 installing for over 20 minutes", "installing", "{\"status_updated_at\":%d}", "{\"status\":\"installing\"}",
	  false, "error", HOST_INFO_INSTALLATION_TIMED_OUT, "#15", NULL, NULL },
	{ "#16 preparing disconnected", "preparing-for-installation", "{" STALE "}",
	  "{\"status\":\"preparing-for-installation\"}", false, "disconnected", HOST_INFO_DISCONNECTED, "#16", NULL, NULL },
	{ "#16 preparing-successful, media gone", "preparing-successful", "{\"media_status\":\"disconnected\"}",
	  "{\"status\":\"installing\"}", false, "disconnected", HOST_INFO_MEDIA_DISCONNECTED, "#16", NULL, NULL },
	{ "#17 agent lost before the reboot", "installing-in-progress",
	  "{" STALE ",\"progress\":{\"current_stage\":\"Writing image to disk\",\"stage_updated_at\":1699999900}}",
	  "{\"status\":\"installing\"}", false, "error", HOST_INFO_CONNECTION_TIMED_OUT_INSTALLING, "#17", NULL, NULL },
	{ "#17 not after the reboot", "installing-in-progress",
	  "{" STALE ",\"status_info\":\"Configuring\",\"progress\":{\"current_stage\":\"Configuring\",\"stage_updated_at\":1699999900}}",
	  "{\"status\":\"installing\"}", false, "installing-in-progress", "Configuring", "#25", NULL, NULL },
	{ "#18 soft: flag the lost connection", "installing-in-progress",
	  "{" STALE ",\"progress\":{\"current_stage\":\"Installing\",\"stage_updated_at\":1699999900}}",
	  "{\"status\":\"installing\"}", true, "installing-in-progress", NULL, "#18", "{\"connection_timed_out\":true}", NULL },
	{ "#19 soft: connection back", "installing-in-progress",
	  "{\"connection_timed_out\":true,\"progress\":{\"current_stage\":\"Installing\",\"stage_updated_at\":1699999900}}",
	  "{\"status\":\"installing\"}", true, "installing-in-progress", NULL, "#19", "{\"connection_timed_out\":false}", NULL },
	{ "#20 waiting for the user: stage clock held", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":%d}}",
	  "{\"status\":\"installing-pending-user-action\"}", false, "installing-in-progress", NULL, "#20",
	  "{\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":1700000000}}", NULL },
	{ "#21 stage timed out", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Installing\",\"stage_updated_at\":%d}}", "{\"status\":\"installing\"}", false,
	  "error", "Host failed to install because its installation stage Installing took longer than expected 1h0m0s",
	  "#21", NULL, NULL },
	{ "#21 writing image not progressing", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Writing image to disk\",\"stage_updated_at\":%d}}",
	  "{\"status\":\"installing\"}", false, "error",
	  "Host failed to install because its installation stage Writing image to disk did not sufficiently progress in the last 30m0s.",
	  "#21", NULL, NULL },
	{ "#21 copying registry data not progressing", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Copying registry data to disk\",\"stage_updated_at\":%d}}",
	  "{\"status\":\"installing\"}", false, "error",
	  "Host failed to install because its installation stage Copying registry data to disk did not sufficiently progress in the last 1h30m0s.",
	  "#21", NULL, NULL },
	{ "#22 soft: stage timed out, keep going", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Configuring\",\"stage_updated_at\":%d}}", "{\"status\":\"installing\"}", true,
	  "installing-in-progress", NULL, "#22",
	  "{\"progress\":{\"current_stage\":\"Configuring\",\"stage_updated_at\":%d,\"stage_timed_out\":true}}", NULL },
	{ "#23 reboot timed out", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":%d}}", "{\"status\":\"installing\"}", false,
	  "installing-pending-user-action",
	  "Host timed out when pulling the configuration files. Verify in the host console that the host boots from the OpenShift installation disk (sda, /dev/disk/by-id/wwn-1) and has network access to the cluster API. The installation will resume after the host successfully boots and can access the cluster API",
	  "#23", NULL, NULL },
	{ "#23 not yet: SNO reboot has 80 minutes", "installing-in-progress",
	  "{\"status_info\":\"Rebooting\",\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":1699997000}}",
	  "{\"status\":\"installing\",\"control_plane_count\":1}", false, "installing-in-progress", "Rebooting", "#25",
	  NULL, NULL },
	{ "#23 multi-node reboot after 50 minutes", "installing-in-progress",
	  "{\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":1699997000}}",
	  "{\"status\":\"installing\"}", false, "installing-pending-user-action", NULL, "#23", NULL, NULL },
	{ "#24 pending user action too long, cluster has enough", "installing-pending-user-action",
	  "{\"role\":\"worker\",\"status_info\":\"x\",\"status_updated_at\":%d}", "{\"status\":\"finalizing\",\"control_plane_count\":1}",
	  false, "error", "x", "#24", NULL,
	  "[{\"id\":\"h2\",\"role\":\"master\",\"bootstrap\":true,\"status\":\"installed\"}]" },
	{ "#24 not while the cluster lacks it", "installing-pending-user-action",
	  "{\"role\":\"master\",\"status_info\":\"x\",\"status_updated_at\":%d}",
	  "{\"status\":\"installing-pending-user-action\"}", false, "installing-pending-user-action", "x", "#25", NULL,
	  "[{\"id\":\"h2\",\"role\":\"master\",\"status\":\"installed\"},{\"id\":\"h3\",\"role\":\"master\",\"status\":\"installed\"}]" },
	{ "#25 pending user action, cluster lacks masters", "installing-pending-user-action",
	  "{\"role\":\"master\",\"status_info\":\"x\",\"status_updated_at\":%d}", "{\"status\":\"installing\"}", false,
	  "installing-pending-user-action", "x", "#25", NULL, NULL },
	{ "#25 installing, fresh", "installing", "{\"status_info\":\"" HOST_INFO_INSTALLING "\"}",
	  "{\"status\":\"installing\"}", false, "installing", HOST_INFO_INSTALLING, "#25", NULL, NULL },
	{ "#25 installed", "installed", "{\"status_info\":\"Done\"}", "{\"status\":\"installed\"}", false, "installed",
	  "Done", "#25", NULL, NULL },
	{ "#32 error, logs never came", "error", "{\"status_info\":\"boom\",\"status_updated_at\":%d}", NULL, false, "error",
	  "boom", "#32", "{\"logs_info\":\"timeout\"}", NULL },
	{ "#32 cancelled, log collection stalled", "cancelled",
	  "{\"status_info\":\"c\",\"logs_info\":\"requested\",\"logs_started_at\":%d}", NULL, false, "cancelled", "c", "#32",
	  "{\"logs_info\":\"timeout\"}", NULL },
	{ "#33 error, logs collected", "error", "{\"status_info\":\"boom\",\"logs_info\":\"completed\",\"status_updated_at\":%d}",
	  NULL, false, "error", "boom", "#33", NULL, NULL },
	{ "#34 added-to-existing-cluster", "added-to-existing-cluster",
	  "{\"kind\":\"AddToExistingClusterHost\",\"status_info\":\"d\"}", "{\"status\":\"adding-hosts\"}", false,
	  "added-to-existing-cluster", "d", "#34", NULL, NULL },
};

/* Every %d in a patch is "a long time ago" (2 days before NOW). */
static json_t *ipatch(const char *fmt)
{
	char buf[2048];
	json_t *p;

	snprintf(buf, sizeof(buf), fmt, (int)AGO(2 * 86400), (int)AGO(2 * 86400));
	p = json_loads(buf, 0, NULL);
	if (!p)
		fail_msg("bad patch %s", buf);
	return p;
}

static void test_refresh_install(void **state)
{
	for (size_t i = 0; i < sizeof(install_rows) / sizeof(install_rows[0]); i++) {
		const struct irow *r = &install_rows[i];
		json_t *h = mkhost(r->from, true, NULL), *cl = json_loads(CLUSTER, 0, NULL), *hosts, *want;
		struct host_timeouts t;
		struct host_refresh_ctx ctx = { .now = NOW };
		struct host_refresh_result res;
		json_t *p;

		if (r->patch) {
			p = ipatch(r->patch);
			json_object_update(h, p);
			json_decref(p);
		}
		if (r->cluster_patch) {
			p = ipatch(r->cluster_patch);
			json_object_update(cl, p);
			json_decref(p);
		}
		host_timeouts_init(&t);
		t.soft = r->soft;
		json_object_set_new(cl, "org_soft_timeouts_enabled", json_boolean(r->soft));
		hosts = json_pack("[O]", h);
		if (r->others) {
			p = json_loads(r->others, 0, NULL);
			assert_non_null(p);
			json_array_extend(hosts, p);
			json_decref(p);
		}
		ctx.cluster = cl;
		ctx.cluster_hosts = hosts;
		ctx.timeouts = &t;
		if (host_refresh(h, &ctx, &res) != 0)
			fail_msg("%s: refresh failed", r->name);
		if (strcmp(res.status, r->to) != 0)
			fail_msg("%s: got %s (%s) by %s", r->name, res.status, res.status_info, res.rule);
		if (strcmp(res.rule, r->rule) != 0)
			fail_msg("%s: rule %s", r->name, res.rule);
		if (r->info && strcmp(res.status_info, r->info) != 0)
			fail_msg("%s: status_info '%s'", r->name, res.status_info);
		want = r->upd ? ipatch(r->upd) : json_object();
		if (!json_equal(want, res.updates)) {
			char *got = json_dumps(res.updates, JSON_COMPACT | JSON_SORT_KEYS);

			fail_msg("%s: updates %s", r->name, got);
		}
		assert_int_equal(res.rule_matched, *r->rule != '\0');
		json_decref(want);
		host_refresh_result_release(&res);
		json_decref(hosts);
		json_decref(cl);
		json_decref(h);
	}
}

/* Applying a result writes status, status_info, updates and the status
 * clock; the reclaim timeout also unbinds. */
static void test_refresh_apply(void **state)
{
	json_t *h = mkhost("installing-in-progress", true,
			   "{\"progress\":{\"current_stage\":\"Rebooting\",\"stage_updated_at\":1699990000}}");
	json_t *cl = json_pack("{s:s}", "status", "installing-pending-user-action");
	struct host_refresh_ctx ctx = { .now = NOW, .cluster = cl };
	struct host_refresh_result res;

	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_string_equal(res.rule, "#20");
	assert_true(res.changed);
	host_refresh_apply(h, &res, NOW);
	host_refresh_result_release(&res);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(h, "progress"), "stage_updated_at")), NOW);
	assert_null(json_object_get(h, "status_updated_at"));
	/* touched at most once a minute */
	ctx.now = NOW + 30;
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_int_equal(json_object_size(res.updates), 0);
	host_refresh_result_release(&res);
	json_decref(h);

	h = mkhost("reclaiming", true, "{\"status_updated_at\":1699990000,\"role\":\"master\",\"bootstrap\":true}");
	ctx.now = NOW;
	ctx.cluster = NULL;
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	host_refresh_apply(h, &res, NOW);
	host_refresh_result_release(&res);
	assert_string_equal(json_string_value(json_object_get(h, "status")), "unbinding-pending-user-action");
	assert_int_equal(json_integer_value(json_object_get(h, "status_updated_at")), NOW);
	assert_null(json_object_get(h, "cluster_id"));
	assert_null(json_object_get(h, "inventory"));
	assert_string_equal(json_string_value(json_object_get(h, "role")), "auto-assign");
	assert_false(json_is_true(json_object_get(h, "bootstrap")));
	json_decref(h);
	json_decref(cl);
}

/* Stage timeouts come from the knobs. */
static void test_refresh_stage_knob(void **state)
{
	json_t *h = mkhost("installing-in-progress", true,
			   "{\"progress\":{\"current_stage\":\"Installing\",\"stage_updated_at\":1699999000}}");
	json_t *cl = json_pack("{s:s}", "status", "installing");
	struct host_timeouts t;
	struct host_refresh_ctx ctx = { .now = NOW, .cluster = cl, .timeouts = &t };
	struct host_refresh_result res;

	host_timeouts_init(&t);
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_string_equal(res.status, "installing-in-progress");
	host_refresh_result_release(&res);
	assert_int_equal(host_timeouts_set(&t, "HOST_STAGE_INSTALLING_TIMEOUT", "10m", NULL), 0);
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_string_equal(res.status, "error");
	assert_string_equal(res.status_info,
			    "Host failed to install because its installation stage Installing took longer than expected 10m0s");
	host_refresh_result_release(&res);
	/* Without a table in the context, the process-wide one applies. */
	ctx.timeouts = NULL;
	host_timeouts_configure(&t);
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_string_equal(res.status, "error");
	host_refresh_result_release(&res);
	host_timeouts_configure(NULL);
	assert_int_equal(host_refresh(h, &ctx, &res), 0);
	assert_string_equal(res.status, "installing-in-progress");
	host_refresh_result_release(&res);
	json_decref(h);
	json_decref(cl);
}

/* ---- HostProgressChanged (§1.2, §6) ---- */

struct prow {
	const char *name;
	const char *from;
	const char *host_patch;
	bool sno;
	const char *progress; /* request body */
	int rc;
	int http;
	const char *to;
	const char *info;     /* status_info after (or the error message) */
	int pct;              /* installation_percentage after, -1 = not checked */
	bool stage_changed;
};

static const struct prow progress_rows[] = {
	{ "first stage: installing to in-progress", "installing", "{\"role\":\"master\"}", false,
	  "{\"current_stage\":\"Starting installation\"}", 0, 0, "installing-in-progress", "Starting installation", 12,
	  true },
	{ "bootstrap moves forward", "installing-in-progress",
	  "{\"role\":\"master\",\"bootstrap\":true,\"progress\":{\"current_stage\":\"Installing\"}}", false,
	  "{\"current_stage\":\"Waiting for control plane\",\"progress_info\":\"waiting\"}", 0, 0,
	  "installing-in-progress", "Waiting for control plane", 45, true },
	{ "SNO bootstrap: Waiting for bootkube is third", "installing-in-progress",
	  "{\"role\":\"master\",\"bootstrap\":true,\"progress\":{\"current_stage\":\"Installing\"}}", true,
	  "{\"current_stage\":\"Waiting for bootkube\"}", 0, 0, "installing-in-progress", "Waiting for bootkube", 37, true },
	{ "worker Done: installed", "installing-in-progress",
	  "{\"role\":\"worker\",\"progress\":{\"current_stage\":\"Joined\"}}", false, "{\"current_stage\":\"Done\"}", 0, 0,
	  "installed", "Done", 100, true },
	{ "master Done from installing", "installing", "{\"role\":\"master\"}", false, "{\"current_stage\":\"Done\"}", 0, 0,
	  "installed", "Done", 100, true },
	{ "Done while pending user action: in progress", "installing-pending-user-action",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Rebooting\"}}", false, "{\"current_stage\":\"Done\"}", 0, 0,
	  "installing-in-progress", "Done", 100, true },
	{ "pending user action, next stage", "installing-pending-user-action",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Rebooting\"}}", false,
	  "{\"current_stage\":\"Configuring\"}", 0, 0, "installing-in-progress", "Configuring", 75, true },
	{ "day-2 Done: added to existing cluster", "installing-in-progress",
	  "{\"role\":\"worker\",\"kind\":\"AddToExistingClusterHost\",\"progress\":{\"current_stage\":\"Joined\"}}", false,
	  "{\"current_stage\":\"Done\"}", 0, 0, "added-to-existing-cluster", HOST_INFO_REBOOTING_DAY2, 100, true },
	{ "day-2 Rebooting (kube-api): in progress", "installing-in-progress",
	  "{\"role\":\"worker\",\"kind\":\"AddToExistingClusterHost\",\"progress\":{\"current_stage\":\"Writing image to disk\"}}",
	  false, "{\"current_stage\":\"Rebooting\"}", 0, 0, "installing-in-progress", "Rebooting", 55, true },
	{ "Failed with info", "installing-in-progress",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Writing image to disk\",\"installation_percentage\":37}}",
	  false, "{\"current_stage\":\"Failed\",\"progress_info\":\"disk write error\"}", 0, 0, "error",
	  "Failed - disk write error", 37, true },
	{ "Failed without info", "installing", "{\"role\":\"master\"}", false, "{\"current_stage\":\"Failed\"}", 0, 0,
	  "error", "Failed", -1, true },
	{ "same stage, same info: no-op", "installing-in-progress",
	  "{\"role\":\"master\",\"status_info\":\"Installing\",\"progress\":{\"current_stage\":\"Installing\",\"progress_info\":\"a\",\"installation_percentage\":25}}",
	  false, "{\"current_stage\":\"Installing\",\"progress_info\":\"a\"}", 0, 0, "installing-in-progress", "Installing",
	  25, false },
	{ "same stage, new info", "installing-in-progress",
	  "{\"role\":\"master\",\"status_info\":\"Installing\",\"progress\":{\"current_stage\":\"Installing\",\"progress_info\":\"a\",\"installation_percentage\":25}}",
	  false, "{\"current_stage\":\"Installing\",\"progress_info\":\"b\"}", 0, 0, "installing-in-progress", "Installing",
	  25, false },
	{ "lower stage refused", "installing-in-progress",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Rebooting\"}}", false, "{\"current_stage\":\"Installing\"}",
	  -EBUSY, 409, "installing-in-progress",
	  "Can't assign lower stage \"Installing\" after host has been in stage \"Rebooting\"", -1, false },
	{ "stage not in the role's list", "installing-in-progress",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Installing\"}}", false,
	  "{\"current_stage\":\"Waiting for ignition\"}", -EBUSY, 409, "installing-in-progress",
	  "Stages Waiting for ignition isn't available for host role master bootstrap false", -1, false },
	{ "not installing", "known", "{\"role\":\"master\"}", false, "{\"current_stage\":\"Installing\"}", -EBUSY, 409,
	  "known", "Can't set progress <Installing> to host in status <known>", -1, false },
	{ "installed refuses a new stage", "installed",
	  "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Done\"}}", false, "{\"current_stage\":\"Joined\"}", -EBUSY,
	  409, "installed", "Can't set progress <Joined> to host in status <installed>", -1, false },
	{ "unknown stage", "installing", "{\"role\":\"master\"}", false, "{\"current_stage\":\"Flying\"}", -EINVAL, 400,
	  "installing",
	  "current_stage in body should be one of [Starting installation Waiting for control plane Waiting for bootkube Waiting for controller Installing Writing image to disk Copying registry data to disk Rebooting Waiting for ignition Configuring Joined Done Failed]",
	  -1, false },
	{ "missing stage", "installing", "{\"role\":\"master\"}", false, "{\"progress_info\":\"x\"}", -EINVAL, 400,
	  "installing", "current_stage in body is required", -1, false },
	{ "info not a string", "installing", "{\"role\":\"master\"}", false,
	  "{\"current_stage\":\"Installing\",\"progress_info\":5}", -EINVAL, 400, "installing",
	  "progress_info in body must be of type string", -1, false },
	{ "unbound host", "installing", "{\"role\":\"master\",\"cluster_id\":\"\"}", false,
	  "{\"current_stage\":\"Installing\"}", -EINVAL, 400, "installing", "Host h1 is not bound to any cluster", -1, false },
};

static void test_progress_changed(void **state)
{
	for (size_t i = 0; i < sizeof(progress_rows) / sizeof(progress_rows[0]); i++) {
		const struct prow *r = &progress_rows[i];
		json_t *h = mkhost(r->from, true, r->host_patch), *body = json_loads(r->progress, 0, NULL);
		json_t *cl = json_pack("{s:s, s:i}", "status", "installing", "control_plane_count", r->sno ? 1 : 3);
		json_t *before = json_deep_copy(h), *p;
		ah_err err = { 0 };
		bool changed = true;
		int rc = host_progress_changed(h, body, cl, NOW, &changed, &err);

		if (rc != r->rc)
			fail_msg("%s: rc %d (%s)", r->name, rc, err.message);
		if (rc < 0) {
			if (err.status != r->http || strcmp(err.message, r->info) != 0)
				fail_msg("%s: %d %s", r->name, err.status, err.message);
			if (!json_equal(before, h))
				fail_msg("%s: host changed on error", r->name);
		} else {
			if (strcmp(json_string_value(json_object_get(h, "status")), r->to) != 0)
				fail_msg("%s: status %s", r->name, json_string_value(json_object_get(h, "status")));
			if (strcmp(json_string_value(json_object_get(h, "status_info")), r->info) != 0)
				fail_msg("%s: info %s", r->name, json_string_value(json_object_get(h, "status_info")));
			p = json_object_get(h, "progress");
			if (r->pct >= 0 && json_integer_value(json_object_get(p, "installation_percentage")) != r->pct)
				fail_msg("%s: pct %lld", r->name,
					 (long long)json_integer_value(json_object_get(p, "installation_percentage")));
			if (changed != r->stage_changed)
				fail_msg("%s: stage_changed %d", r->name, changed);
			if (changed && strcmp(json_string_value(json_object_get(body, "current_stage")), "Failed") != 0) {
				assert_int_equal(json_integer_value(json_object_get(p, "stage_started_at")), NOW);
				assert_int_equal(json_integer_value(json_object_get(p, "stage_updated_at")), NOW);
				assert_string_equal(json_string_value(json_object_get(p, "current_stage")),
						    json_string_value(json_object_get(body, "current_stage")));
			}
			if (strcmp(r->from, r->to) != 0)
				assert_int_equal(json_integer_value(json_object_get(h, "status_updated_at")), NOW);
		}
		json_decref(before);
		json_decref(body);
		json_decref(cl);
		json_decref(h);
	}
}

/* Same stage with new info touches only progress_info and stage_updated_at. */
static void test_progress_same_stage(void **state)
{
	json_t *h = mkhost("installing-in-progress", true,
			   "{\"role\":\"master\",\"progress\":{\"current_stage\":\"Installing\",\"progress_info\":\"a\","
			   "\"stage_started_at\":5,\"stage_updated_at\":6,\"installation_percentage\":25}}");
	json_t *body = json_pack("{s:s, s:s}", "current_stage", "Installing", "progress_info", "b");
	json_t *p;

	assert_int_equal(host_progress_changed(h, body, NULL, NOW, NULL, NULL), 0);
	p = json_object_get(h, "progress");
	assert_string_equal(json_string_value(json_object_get(p, "progress_info")), "b");
	assert_int_equal(json_integer_value(json_object_get(p, "stage_started_at")), 5);
	assert_int_equal(json_integer_value(json_object_get(p, "stage_updated_at")), NOW);
	assert_int_equal(json_integer_value(json_object_get(p, "installation_percentage")), 25);
	json_decref(body);
	json_decref(h);
}

/* ---- explicit transitions (§1.3) ---- */

enum op { INSTALL, START, FAILED, CANCEL, RESET, BIND, UNBIND, MEDIA };

struct trow {
	const char *name;
	enum op op;
	const char *from;
	const char *patch;
	const char *cluster_status;
	int rc;
	const char *to;
	const char *info; /* NULL: not checked */
};

static const struct trow trans_rows[] = {
	{ "install: known master, cluster preparing", INSTALL, "known", "{\"role\":\"master\",\"approved\":true}",
	  "preparing-for-installation", 0, "preparing-for-installation", HOST_INFO_PREPARING },
	{ "install: auto-assign takes the suggested role", INSTALL, "known",
	  "{\"suggested_role\":\"worker\",\"bootstrap\":true}", "preparing-for-installation", 0,
	  "preparing-for-installation", HOST_INFO_PREPARING },
	{ "install: day-2 known to installing", INSTALL, "known",
	  "{\"role\":\"worker\",\"kind\":\"AddToExistingClusterHost\"}", "adding-hosts", 0, "installing",
	  HOST_INFO_INSTALLING },
	{ "install: already preparing", INSTALL, "preparing-for-installation", "{\"role\":\"master\"}",
	  "preparing-for-installation", 0, "preparing-for-installation", NULL },
	{ "install: not approved", INSTALL, "known", "{\"role\":\"master\",\"approved\":false}",
	  "preparing-for-installation", -EPERM, "known", NULL },
	{ "install: insufficient", INSTALL, "insufficient", "{\"role\":\"master\"}", "preparing-for-installation", -EBUSY,
	  "insufficient", NULL },
	{ "install: no role", INSTALL, "known", NULL, "preparing-for-installation", -EBUSY, "known", NULL },
	{ "install: cluster not preparing", INSTALL, "known", "{\"role\":\"master\"}", "ready", -EBUSY, "known", NULL },
	{ "start: preparing-successful to installing", START, "preparing-successful", "{\"role\":\"master\"}",
	  "installing", 0, "installing", HOST_INFO_INSTALLING },
	{ "start: known refused", START, "known", "{\"role\":\"master\"}", "installing", -EBUSY, "known", NULL },
	{ "install failed: installing", FAILED, "installing", NULL, "installing", 0, "error", "installation command failed" },
	{ "install failed: in progress", FAILED, "installing-in-progress", NULL, "installing", 0, "error",
	  "installation command failed" },
	{ "install failed: installed refused", FAILED, "installed", NULL, "installing", -EBUSY, "installed", NULL },
	{ "cancel: installing", CANCEL, "installing", NULL, "installing", 0, "cancelled", "Installation cancelled by user" },
	{ "cancel: pending user action", CANCEL, "installing-pending-user-action", NULL, "installing", 0, "cancelled",
	  NULL },
	{ "cancel: in progress", CANCEL, "installing-in-progress", NULL, "installing", 0, "cancelled", NULL },
	{ "cancel: installed", CANCEL, "installed", NULL, "installing", 0, "cancelled", NULL },
	{ "cancel: error", CANCEL, "error", NULL, "error", 0, "cancelled", NULL },
	{ "cancel: preparing", CANCEL, "preparing-for-installation", NULL, "preparing-for-installation", 0, "known", NULL },
	{ "cancel: preparing-successful", CANCEL, "preparing-successful", NULL, "preparing-for-installation", 0, "known",
	  NULL },
	{ "cancel: known", CANCEL, "known", NULL, "ready", 0, "known", NULL },
	{ "cancel: discovering refused", CANCEL, "discovering", NULL, "ready", -EBUSY, "discovering", NULL },
	{ "reset: installed", RESET, "installed", NULL, "error", 0, "resetting-pending-user-action",
	  HOST_INFO_RESETTING_PENDING_USER_ACTION },
	{ "reset: preparing-failed", RESET, "preparing-failed", NULL, "error", 0, "resetting-pending-user-action", NULL },
	{ "reset: added-to-existing-cluster", RESET, "added-to-existing-cluster", NULL, "error", 0,
	  "resetting-pending-user-action", NULL },
	{ "reset: insufficient refused", RESET, "insufficient", NULL, "error", -EBUSY, "insufficient", NULL },
	{ "bind: known-unbound", BIND, "known-unbound", "{\"cluster_id\":\"\"}", NULL, 0, "binding", HOST_INFO_BINDING },
	{ "bind: discovering-unbound refused", BIND, "discovering-unbound", "{\"cluster_id\":\"\"}", NULL, -EBUSY,
	  "discovering-unbound", NULL },
	{ "unbind: known", UNBIND, "known", NULL, NULL, 0, "unbinding", HOST_INFO_UNBINDING },
	{ "unbind: installed", UNBIND, "installed", NULL, NULL, 0, "unbinding-pending-user-action", HOST_INFO_UNBINDING },
	{ "unbind: error", UNBIND, "error", NULL, NULL, 0, "unbinding-pending-user-action", HOST_INFO_UNBINDING },
	{ "unbind: already unbound", UNBIND, "known-unbound", "{\"cluster_id\":\"\"}", NULL, 0, "known-unbound", NULL },
	{ "unbind: resetting refused", UNBIND, "resetting", NULL, NULL, -EBUSY, "resetting", NULL },
	{ "media: installing to error", MEDIA, "installing", NULL, NULL, 1, "error", HOST_INFO_MEDIA_DISCONNECTED },
	{ "media: preparing to error", MEDIA, "preparing-for-installation", NULL, NULL, 1, "error",
	  HOST_INFO_MEDIA_DISCONNECTED },
	{ "media: error keeps the installer text", MEDIA, "error", "{\"status_info\":\"Failed - boom\"}", NULL, 0, "error",
	  "Failed - " HOST_INFO_MEDIA_DISCONNECTED ". Failed - boom" },
	{ "media: known to disconnected", MEDIA, "known", NULL, NULL, 1, "disconnected", HOST_INFO_MEDIA_DISCONNECTED },
	{ "media: known-unbound", MEDIA, "known-unbound", NULL, NULL, 1, "disconnected-unbound", NULL },
	{ "media: installed untouched", MEDIA, "installed", "{\"status_info\":\"Done\"}", NULL, 0, "installed", "Done" },
};

static void test_transitions(void **state)
{
	for (size_t i = 0; i < sizeof(trans_rows) / sizeof(trans_rows[0]); i++) {
		const struct trow *r = &trans_rows[i];
		json_t *h = mkhost(r->from, true, r->patch), *before = json_deep_copy(h);
		json_t *cl = r->cluster_status ? json_pack("{s:s, s:i}", "status", r->cluster_status, "control_plane_count", 3)
					       : NULL;
		ah_err err = { 0 };
		int rc = 0;

		switch (r->op) {
		case INSTALL: rc = host_install(h, cl, NOW, &err); break;
		case START: rc = host_start_installing(h, cl, NOW, &err); break;
		case FAILED: rc = host_installation_failed(h, NULL, NOW, &err); break;
		case CANCEL: rc = host_cancel_installation(h, NULL, NOW, &err); break;
		case RESET: rc = host_reset_pending_user_action(h, NOW, &err); break;
		case BIND: rc = host_bind(h, "c1", NOW, &err); break;
		case UNBIND: rc = host_unbind(h, NOW, &err); break;
		case MEDIA: rc = host_media_disconnect(h, NOW); break;
		}
		if (rc != r->rc)
			fail_msg("%s: rc %d (%s)", r->name, rc, err.message);
		if (rc < 0) {
			if (err.status != 409)
				fail_msg("%s: http %d", r->name, err.status);
			if (!json_equal(before, h))
				fail_msg("%s: host changed on error", r->name);
		}
		if (strcmp(json_string_value(json_object_get(h, "status")), r->to) != 0)
			fail_msg("%s: status %s", r->name, json_string_value(json_object_get(h, "status")));
		if (r->info && strcmp(json_string_value(json_object_get(h, "status_info")), r->info) != 0)
			fail_msg("%s: info %s", r->name, json_string_value(json_object_get(h, "status_info")));
		if (rc >= 0 && strcmp(r->from, r->to) != 0)
			assert_int_equal(json_integer_value(json_object_get(h, "status_updated_at")), NOW);
		json_decref(before);
		json_decref(cl);
		json_decref(h);
	}
}

/* Side effects of install, bind and unbind on the other fields. */
static void test_transition_fields(void **state)
{
	json_t *cl = json_pack("{s:s, s:i}", "status", "preparing-for-installation", "control_plane_count", 3);
	json_t *h = mkhost("known", true, "{\"suggested_role\":\"worker\",\"bootstrap\":true}");

	assert_int_equal(host_install(h, cl, NOW, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(h, "role")), "worker");
	assert_false(json_is_true(json_object_get(h, "bootstrap")));
	assert_int_equal(json_array_size(json_object_get(h, "progress_stages")), 9);
	json_decref(h);

	h = mkhost("known-unbound", true, "{\"cluster_id\":\"\",\"progress\":{\"current_stage\":\"Done\"}}");
	assert_int_equal(host_bind(h, "c9", NOW, NULL), 0);
	assert_string_equal(json_string_value(json_object_get(h, "cluster_id")), "c9");
	assert_null(json_object_get(h, "inventory"));
	assert_null(json_object_get(h, "progress"));
	json_decref(h);

	h = mkhost("installed", true, "{\"role\":\"master\",\"bootstrap\":true,\"kind\":\"AddToExistingClusterHost\","
				      "\"progress\":{\"current_stage\":\"Done\"},\"installation_disk_id\":\"x\"}");
	assert_int_equal(host_unbind(h, NOW, NULL), 0);
	assert_null(json_object_get(h, "cluster_id"));
	assert_null(json_object_get(h, "progress"));
	assert_null(json_object_get(h, "installation_disk_id"));
	assert_string_equal(json_string_value(json_object_get(h, "role")), "auto-assign");
	assert_string_equal(json_string_value(json_object_get(h, "kind")), "Host");
	assert_false(json_is_true(json_object_get(h, "bootstrap")));
	json_decref(h);
	json_decref(cl);
}

/* The stage list follows the effective role, the bootstrap flag and SNO. */
static void test_stages_of(void **state)
{
	static const struct {
		const char *patch;
		int cp;
		size_t n;
		const char *third;
	} rows[] = {
		{ "{\"role\":\"master\",\"bootstrap\":true}", 3, 11, "Writing image to disk" },
		{ "{\"role\":\"master\",\"bootstrap\":true}", 1, 8, "Waiting for bootkube" },
		{ "{\"role\":\"master\"}", 3, 8, "Writing image to disk" },
		{ "{\"suggested_role\":\"worker\"}", 3, 9, "Writing image to disk" },
		{ "{\"role\":\"arbiter\"}", 2, 8, "Writing image to disk" },
		{ "{}", 3, 0, NULL },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = mkhost("installing", false, rows[i].patch);
		json_t *cl = json_pack("{s:i}", "control_plane_count", rows[i].cp);
		size_t n;
		const char *const *l = host_stages_of(h, cl, true, &n);

		assert_int_equal(n, rows[i].n);
		if (rows[i].third)
			assert_string_equal(l[2], rows[i].third);
		json_decref(cl);
		json_decref(h);
	}
}

/* Validation results by id: one row per validation case. */
struct vrow {
	const char *name;
	const char *patch;
	int cluster; /* 0 unbound, 1 bound */
	const char *cluster_patch;
	const char *id, *status, *message;
};

static const struct vrow vrows[] = {
	{ "connected", NULL, 1, NULL, "connected", "success", "Host is connected" },
	{ "disconnected", "{\"checked_in_at\":1699999000}", 1, NULL, "connected", "failure", "Host is disconnected" },
	{ "never checked in", "{\"checked_in_at\":0}", 1, NULL, "connected", "success", "Host is connected" },
	{ "quiet while writing to disk", "{\"checked_in_at\":1699999000,\"progress\":{\"current_stage\":"
	  "\"Writing image to disk\"}}", 1, NULL, "connected", "failure", "Host is disconnected" },
	{ "quiet worker waiting for control plane", "{\"checked_in_at\":1699999000,\"progress\":{\"current_stage\":"
	  "\"Waiting for control plane\"}}", 1, NULL, "connected", "failure", "Host is disconnected" },
	{ "quiet after starting installation", "{\"checked_in_at\":1699999000,\"progress\":{\"current_stage\":"
	  "\"Waiting for ignition\"}}", 1, NULL, "connected", "success-suppress-output", "" },
	{ "rebooted", "{\"checked_in_at\":1699999000,\"progress\":{\"current_stage\":\"Rebooting\"}}", 1, NULL,
	  "connected", "success-suppress-output", "" },
	{ "rebooted media", "{\"media_status\":\"disconnected\",\"progress\":{\"current_stage\":\"Done\"}}", 1,
	  NULL, "media-connected", "success-suppress-output", "" },
	{ "media", NULL, 1, NULL, "media-connected", "success", "Media device is connected" },
	{ "inventory", NULL, 1, NULL, "has-inventory", "success", "Valid inventory exists for the host" },
	{ "no inventory", "{\"inventory\":\"\"}", 1, NULL, "has-inventory", "failure",
	  "Inventory has not been received for the host" },
	{ "no inventory cpu", "{\"inventory\":\"\"}", 1, NULL, "has-min-cpu-cores", "pending", "Missing inventory" },
	{ "cpu", NULL, 1, NULL, "has-min-cpu-cores", "success", "Sufficient CPU cores" },
	{ "memory", NULL, 1, NULL, "has-min-memory", "success", "Sufficient minimum RAM" },
	{ "memory tolerance", "{\"inventory\":{\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":8485076992},"
	  "\"disks\":[{\"name\":\"sda\"}]}}", 1, NULL, "has-min-memory", "success", "Sufficient minimum RAM" },
	{ "disks", NULL, 1, NULL, "has-min-valid-disks", "success", "Sufficient disk capacity" },
	{ "cpu for master", "{\"role\":\"master\",\"inventory\":{\"cpu\":{\"count\":2},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sda\"}]}}", 1, NULL, "has-cpu-cores-for-role", "failure",
	  "Require at least 4 CPU cores for master role, found only 2" },
	{ "cpu for SNO 4.21", "{\"role\":\"master\",\"inventory\":{\"cpu\":{\"count\":4},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sda\"}]}}", 1, "{\"control_plane_count\":1,\"openshift_version\":\"4.21.0\"}",
	  "has-cpu-cores-for-role", "failure", "Require at least 8 CPU cores for master role, found only 4" },
	{ "cpu for SNO 4.22", "{\"role\":\"master\",\"inventory\":{\"cpu\":{\"count\":4},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sda\"}]}}", 1, "{\"control_plane_count\":1,\"openshift_version\":\"4.22.1\"}",
	  "has-cpu-cores-for-role", "success", "Sufficient CPU cores for role master" },
	{ "memory for worker", NULL, 1, NULL, "has-memory-for-role", "success", "Sufficient RAM for role auto-assign" },
	{ "hostname valid", NULL, 1, NULL, "hostname-valid", "success", "Hostname host-1 is allowed" },
	{ "hostname forbidden", "{\"requested_hostname\":\"localhost.localdomain\"}", 1, NULL, "hostname-valid", "failure",
	  "The host name localhost.localdomain is forbidden" },
	{ "hostname unique", NULL, 1, NULL, "hostname-unique", "success", "Hostname host-1 is unique in cluster" },
	{ "hostname unique unbound", NULL, 0, NULL, "hostname-unique", "success-suppress-output", "" },
	{ "machine cidr", NULL, 1, NULL, "machine-cidr-defined", "success", "Machine Network CIDR is defined" },
	{ "machine cidr umn", NULL, 1, "{\"user_managed_networking\":true}", "machine-cidr-defined", "success",
	  "No Machine Network CIDR needed: User Managed Networking" },
	{ "machine cidr dhcp", NULL, 1, "{\"machine_networks\":[],\"vip_dhcp_allocation\":true}", "machine-cidr-defined",
	  "failure", "Machine Network CIDR is undefined" },
	{ "machine cidr undefined", NULL, 1, "{\"machine_networks\":[]}", "machine-cidr-defined", "failure", MCIDR_UNDEF },
	{ "belongs", NULL, 1, NULL, "belongs-to-machine-cidr", "success", "Host belongs to all machine network CIDRs" },
	{ "majority", NULL, 1, NULL, "belongs-to-majority-group", "success",
	  "Host has connectivity to the majority of hosts in the cluster" },
	{ "majority few hosts", NULL, 1, "{\"connectivity_majority_groups\":{\"192.168.1.0/24\":[]}}",
	  "belongs-to-majority-group", "pending", "Not enough hosts in cluster to calculate connectivity groups" },
	{ "majority missing", NULL, 1, "{\"connectivity_majority_groups\":\"\"}", "belongs-to-majority-group", "pending",
	  "Machine Network CIDR or Connectivity Majority Groups missing" },
	{ "ntp missing bound", "{\"ntp_sources\":null}", 1, NULL, "ntp-synced", "failure", "Host couldn't synchronize with any NTP server" },
	{ "ntp synced", "{\"ntp_sources\":[{\"source_name\":\"a\",\"source_state\":\"synced\"}]}", 1, NULL, "ntp-synced",
	  "success", "Host NTP is synced" },
	{ "ntp unbound none", "{\"status\":\"known-unbound\",\"ntp_sources\":\"\"}", 0, NULL, "ntp-synced", "success-suppress-output",
	  "Unexpected status success-suppress-output" },
	{ "time synced", NULL, 1, NULL, "time-synced-between-host-and-service", "success",
	  "Host clock is synchronized with service" },
	{ "time behind", "{\"timestamp\":1699990000}", 1, NULL, "time-synced-between-host-and-service", "failure",
	  "Host clock is not synchronized, service time is ahead of host's at least for 20.0 minutes, please configure an NTP server via DHCP or set clock manually. Service time: 2023-11-14 22:13:20 +0000 UTC" },
	{ "time missing", "{\"timestamp\":0}", 1, NULL, "time-synced-between-host-and-service", "pending",
	  "Missing host time, can't determine synchronization between host and service" },
	{ "images", NULL, 1, NULL, "container-images-available", "success",
	  "All required container images were either pulled successfully or no attempt was made to pull them" },
	{ "images failed", "{\"images_status\":{\"quay.io/a\":{\"name\":\"quay.io/a\",\"result\":\"failure\"}}}", 1, NULL,
	  "container-images-available", "failure",
	  "Failed to fetch container images needed for installation from quay.io/a. This may be due to a network hiccup. Retry to install again. If this problem persists, check your network settings to make sure you\xe2\x80\x99re not blocked." },
	{ "disk speed untested", NULL, 1, NULL, "sufficient-installation-disk-speed", "success",
	  "Speed of installation disk has not yet been measured" },
	{ "disk speed ok", "{\"disks_info\":{\"/dev/disk/by-id/wwn-1\":{\"disk_speed\":{\"tested\":true,\"exit_code\":0}}}}",
	  1, NULL, "sufficient-installation-disk-speed", "success", "Speed of installation disk is sufficient" },
	{ "latency auto-assign", NULL, 1, NULL, "sufficient-network-latency-requirement-for-role", "success",
	  "Network latency requirement has been satisfied." },
	{ "latency single host", "{\"role\":\"master\"}", 1, NULL, "sufficient-network-latency-requirement-for-role", "success",
	  "Network latency requirement has been satisfied." },
	{ "default route", NULL, 1, NULL, "has-default-route", "success",
	  "Host has been configured with at least one default route." },
	{ "api domain managed", NULL, 1, NULL, "api-domain-name-resolved-correctly", "success",
	  "Domain name resolution for the api.c.example.com domain was successful or not required" },
	{ "apps domain umn missing", NULL, 1, "{\"user_managed_networking\":true}", "apps-domain-name-resolved-correctly",
	  "failure",
	  "Couldn't resolve domain name *.apps.c.example.com on the host. To continue installation, create the necessary DNS entries to resolve this domain name to your cluster's application ingress IP address" },
	{ "api-int umn own ip", "{\"domain_resolutions\":{\"resolutions\":[{\"domain_name\":\"api-int.c.example.com\",\"ipv4_addresses\":[\"192.168.1.10\"]}]}}",
	  1, "{\"user_managed_networking\":true}", "api-int-domain-name-resolved-correctly", "failure",
	  "Domain api-int.c.example.com must not point at 192.168.1.10 as it is the API address of this host. This domain must instead point at the IP address of a load balancer when using user managed networking in a multi control-plane node cluster" },
	{ "api umn ok", "{\"domain_resolutions\":{\"resolutions\":[{\"domain_name\":\"api.c.example.com\",\"ipv4_addresses\":[\"192.168.1.5\"]}]}}",
	  1, "{\"user_managed_networking\":true}", "api-domain-name-resolved-correctly", "success",
	  "Domain name resolution for the api.c.example.com domain was successful or not required" },
	{ "api umn no base", NULL, 1, "{\"user_managed_networking\":true,\"base_dns_domain\":\"\"}",
	  "api-domain-name-resolved-correctly", "error",
	  "DNS validation for the API load balancer domain cannot be completed because the cluster does not have base_dns_domain set. Please update the cluster with the correct base_dns_domain" },
	{ "wildcard ok", NULL, 1, NULL, "dns-wildcard-not-configured", "success", "DNS wildcard check was successful" },
	{ "wildcard found", "{\"domain_resolutions\":{\"resolutions\":[{\"domain_name\":\"validateNoWildcardDNS.c.example.com\",\"ipv4_addresses\":[\"1.2.3.4\"]}]}}",
	  1, NULL, "dns-wildcard-not-configured", "failure",
	  "DNS wildcard configuration was detected for domain *.c.example.com The installation will not be able to complete while the entry exists. Please remove it to proceed." },
	{ "platform", NULL, 1, NULL, "compatible-with-cluster-platform", "success",
	  "Host is compatible with cluster platform baremetal" },
	{ "platform unset", NULL, 1, "{\"platform\":{}}", "compatible-with-cluster-platform", "pending",
	  "Missing inventory or platform isn't set" },
	{ "platform network openstack", "{\"inventory\":{\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},"
	  "\"disks\":[{\"name\":\"sda\"}],\"system_vendor\":{\"product_name\":\"OpenStack Compute\"}}}", 1, NULL,
	  "valid-platform-network-settings", "failure",
	  "Platform OpenStack Compute is allowed only for Single Node OpenShift or user-managed networking" },
	{ "platform network", NULL, 1, NULL, "valid-platform-network-settings", "success", "Platform Standard PC is allowed" },
	{ "encryption tpm missing", "{\"role\":\"master\"}", 1, "{\"disk_encryption\":{\"enable_on\":\"all\",\"mode\":\"tpmv2\"}}",
	  "disk-encryption-requirements-satisfied", "failure",
	  "TPM version could not be found, make sure TPM is enabled in host's BIOS" },
	{ "encryption auto-assign", NULL, 1, "{\"disk_encryption\":{\"enable_on\":\"all\",\"mode\":\"tpmv2\"}}",
	  "disk-encryption-requirements-satisfied", "pending", "Missing role assignment" },
	{ "subnets", NULL, 1, NULL, "non-overlapping-subnets", "success", "Host subnets are not overlapping" },
	{ "subnets overlap", "{\"inventory\":{\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},\"disks\":[{\"name\":\"sda\"}],"
	  "\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"10.0.0.5/16\"]},{\"name\":\"eth1\",\"ipv4_addresses\":[\"10.0.1.5/24\"]}]}}",
	  1, NULL, "non-overlapping-subnets", "failure",
	  "Address networks are overlapping: Address networks 10.0.0.0/16 in interface eth0 and 10.0.1.0/24 in interface eth1 overlap" },
	{ "subnets same", "{\"inventory\":{\"cpu\":{\"count\":8},\"memory\":{\"physical_bytes\":34359738368},\"disks\":[{\"name\":\"sda\"}],"
	  "\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"10.0.0.5/24\"]},{\"name\":\"eth1\",\"ipv4_addresses\":[\"10.0.0.6/24\"]}]}}",
	  1, NULL, "non-overlapping-subnets", "failure",
	  "Address networks are overlapping: Address network 10.0.0.0/24 appears on multiple interfaces [eth0, eth1]" },
	{ "vsphere not vsphere", NULL, 1, NULL, "vsphere-disk-uuid-enabled", "success",
	  "VSphere disk.EnableUUID is enabled for this virtual machine" },
	{ "vsphere no uuid", NULL, 1, "{\"platform\":{\"type\":\"vsphere\"}}", "vsphere-disk-uuid-enabled", "failure",
	  "VSphere disk.EnableUUID isn't enabled for this virtual machine, it's necessary for disks to be mounted properly" },
	{ "agent check disabled", NULL, 1, NULL, "compatible-agent", "success", "Host agent compatibility checking is disabled" },
	{ "skip install disk", "{\"skip_formatting_disks\":\"/dev/disk/by-id/wwn-1\"}", 1, NULL, "no-skip-installation-disk",
	  "failure",
	  "Requesting to skip the formatting of the installation disk is not allowed. The installation disk must be formatted. Please either change this host's installation disk or do not skip the formatting of the installation disk" },
	{ "skip missing disk", "{\"skip_formatting_disks\":\"/dev/disk/by-id/gone\"}", 1, NULL, "no-skip-missing-disk",
	  "failure",
	  "One or more of the disks that you have requested to skip the formatting of are no longer present on this host. To ensure they haven't just changed their identity, please remove your request to skip their formatting and then if needed add them back using the new ID" },
	{ "ignition day-1", NULL, 1, NULL, "ignition-downloadable", "success-suppress-output", "" },
	{ "ignition day-2 pending", "{\"kind\":\"AddToExistingClusterHost\"}", 1, NULL, "ignition-downloadable", "pending",
	  "Ignition is not yet available, pending API connectivity" },
};

static void test_validations(void **state)
{
	for (size_t i = 0; i < sizeof(vrows) / sizeof(vrows[0]); i++) {
		const struct vrow *r = &vrows[i];
		json_t *h = mkhost("discovering", true, r->patch), *cl = NULL, *hosts = json_pack("[O]", h), *res, *v;
		struct validation_ctx ctx = { .now = NOW, .cluster_hosts = hosts };

		if (r->cluster) {
			cl = json_loads(CLUSTER, 0, NULL);
			if (r->cluster_patch) {
				json_t *p = json_loads(r->cluster_patch, 0, NULL);

				assert_non_null(p);
				json_object_update(cl, p);
				json_decref(p);
			}
		}
		ctx.cluster = cl;
		res = host_validations(h, &ctx);
		v = json_object_get(res, r->id);
		if (!v)
			fail_msg("%s: %s missing", r->name, r->id);
		if (strcmp(json_string_value(json_object_get(v, "status")), r->status) != 0 ||
		    strcmp(json_string_value(json_object_get(v, "message")), r->message) != 0)
			fail_msg("%s: %s = %s '%s'", r->name, r->id, json_string_value(json_object_get(v, "status")),
				 json_string_value(json_object_get(v, "message")));
		json_decref(res);
		json_decref(hosts);
		json_decref(cl);
		json_decref(h);
	}
}

/* Latency and packet loss need peers: pending without a report, failure
 * naming same-role peers above the threshold. */
static void test_latency(void **state)
{
	json_t *h = mkhost("known", true, "{\"role\":\"master\"}");
	json_t *peer = mkhost("known", true, "{\"id\":\"h2\",\"role\":\"master\",\"requested_hostname\":\"peer\"}");
	json_t *cl = json_loads(CLUSTER, 0, NULL), *hosts = json_pack("[OO]", h, peer), *res;
	struct validation_ctx ctx = { .now = NOW, .cluster = cl, .cluster_hosts = hosts };

	res = host_validations(h, &ctx);
	assert_string_equal(json_string_value(json_object_get(json_object_get(res,
		"sufficient-network-latency-requirement-for-role"), "message")), "Missing network latency information.");
	assert_string_equal(json_string_value(json_object_get(json_object_get(res,
		"sufficient-packet-loss-requirement-for-role"), "message")), "Missing packet loss information.");
	json_decref(res);
	json_object_set_new(h, "connectivity", json_string(
		"{\"remote_hosts\":[{\"host_id\":\"h2\",\"l3_connectivity\":[{\"remote_ip_address\":\"192.168.1.11\","
		"\"average_rtt_ms\":150,\"packet_loss_percentage\":0}]}]}"));
	res = host_validations(h, &ctx);
	assert_string_equal(json_string_value(json_object_get(json_object_get(res,
		"sufficient-network-latency-requirement-for-role"), "message")),
		"Network latency requirements of less than or equals 100.00 ms not met for connectivity between h1 and peer (150.00 ms).");
	assert_string_equal(json_string_value(json_object_get(json_object_get(res,
		"sufficient-packet-loss-requirement-for-role"), "message")),
		"Packet loss requirement has been satisfied.");
	json_decref(res);
	json_decref(hosts);
	json_decref(cl);
	json_decref(peer);
	json_decref(h);
}

static void test_validations_info_form(void **state)
{
	json_t *h = mkhost("discovering", true, "{\"cluster_id\":\"\"}"), *res, *vi, *hw;
	struct validation_ctx ctx = { .now = NOW };
	size_t i;
	json_t *e;

	res = host_validations(h, &ctx);
	vi = validations_info_from(res);
	hw = json_object_get(vi, "hardware");
	assert_true(json_is_array(hw));
	assert_non_null(json_object_get(vi, "network"));
	assert_null(json_object_get(vi, "operators"));
	json_array_foreach(hw, i, e) {
		assert_string_not_equal(json_string_value(json_object_get(e, "status")), "success-suppress-output");
		if (i > 0)
			assert_true(strcmp(json_string_value(json_object_get(json_array_get(hw, i - 1), "id")),
					   json_string_value(json_object_get(e, "id"))) < 0);
		assert_int_equal(json_object_size(e), 3);
	}
	json_decref(vi);
	json_decref(res);
	json_decref(h);
}

static void test_disks(void **state)
{
	static const struct {
		const char *disk;
		int64_t min_gb;
		const char *arch;
		const char *reasons;
	} rows[] = {
		{ "{\"drive_type\":\"SSD\",\"size_bytes\":200000000000}", 100, "x86_64", "[]" },
		{ "{\"drive_type\":\"HDD\",\"size_bytes\":10000000000}", 100, "x86_64",
		  "[\"Disk is too small (disk only has 10 GB, but 100 GB are required)\"]" },
		{ "{\"drive_type\":\"ODD\",\"size_bytes\":1031798784}", 50, "x86_64",
		  "[\"Disk is too small (disk only has 1.0 GB, but 50 GB are required)\",\"Drive type is ODD, it must be one of HDD, SSD, Multipath, RAID, iSCSI, FC.\"]" },
		{ "{\"drive_type\":\"FC\",\"size_bytes\":200000000000}", 100, "aarch64",
		  "[\"Drive type is FC, it must be one of HDD, SSD, Multipath, RAID, iSCSI.\"]" },
		{ "{\"drive_type\":\"ECKD\",\"size_bytes\":200000000000}", 100, "s390x", "[]" },
		{ "{\"drive_type\":\"SSD\"}", 100, "x86_64", "[\"Disk is too small (disk only has 0 B, but 100 GB are required)\"]" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *d = json_loads(rows[i].disk, 0, NULL), *want = json_loads(rows[i].reasons, 0, NULL);
		json_t *got = disk_service_reasons(d, rows[i].min_gb, rows[i].arch);

		if (!json_equal(got, want)) {
			char *s = json_dumps(got, 0);

			fail_msg("row %zu: %s", i, s);
		}
		json_decref(d);
		json_decref(want);
		json_decref(got);
	}
}

static void test_disk_choice(void **state)
{
	json_t *inv = json_loads(
		"{\"cpu\":{\"architecture\":\"x86_64\"},\"disks\":["
		"{\"name\":\"nvme0n1\",\"drive_type\":\"SSD\",\"size_bytes\":500000000000},"
		"{\"name\":\"sdb\",\"by_path\":\"/dev/disk/by-path/b\",\"drive_type\":\"SSD\",\"size_bytes\":300000000000},"
		"{\"name\":\"sda\",\"drive_type\":\"HDD\",\"size_bytes\":300000000000},"
		"{\"name\":\"sdc\",\"drive_type\":\"HDD\",\"size_bytes\":20000000000},"
		"{\"name\":\"sr0\",\"drive_type\":\"ODD\",\"size_bytes\":1000,\"installation_eligibility\":{\"not_eligible_reasons\":[\"Disk is removable\"]}}]}",
		0, NULL);
	json_t *host = json_pack("{s:s}", "cluster_id", "c1"), *cl = json_object(), *sr0;

	inventory_apply_eligibility(inv, host, cl);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(inv, "disks"), 1), "id")),
			    "/dev/disk/by-path/b");
	sr0 = json_object_get(json_array_get(json_object_get(inv, "disks"), 4), "installation_eligibility");
	assert_true(json_is_false(json_object_get(sr0, "eligible")));
	assert_int_equal(json_array_size(json_object_get(sr0, "not_eligible_reasons")), 3);
	host_choose_installation_disk(host, inv);
	/* non-nvme first, then HDD before SSD, then size. */
	assert_string_equal(json_string_value(json_object_get(host, "installation_disk_id")), "/dev/sda");
	assert_string_equal(json_string_value(json_object_get(host, "installation_disk_path")), "/dev/sda");
	/* keep the current choice while it stays eligible */
	json_object_set_new(host, "installation_disk_id", json_string("/dev/disk/by-path/b"));
	host_choose_installation_disk(host, inv);
	assert_string_equal(json_string_value(json_object_get(host, "installation_disk_id")), "/dev/disk/by-path/b");
	assert_string_equal(json_string_value(json_object_get(host, "installation_disk_path")), "/dev/sdb");
	json_decref(cl);
	json_decref(host);
	json_decref(inv);
}

static void test_formatting(void **state)
{
	char b[64];

	bytes_to_string(8192LL * 1048576, b, sizeof(b));
	assert_string_equal(b, "8.00 GiB");
	bytes_to_string(512LL * 1048576, b, sizeof(b));
	assert_string_equal(b, "512 MiB");
	bytes_to_string(100, b, sizeof(b));
	assert_string_equal(b, "100 bytes");
	humanize_bytes(120000000000ULL, b, sizeof(b));
	assert_string_equal(b, "120 GB");
	humanize_bytes(108984320ULL, b, sizeof(b));
	assert_string_equal(b, "109 MB");
	humanize_bytes(946864128ULL, b, sizeof(b));
	assert_string_equal(b, "947 MB");
	humanize_bytes(5, b, sizeof(b));
	assert_string_equal(b, "5 B");
}

static void test_requirements(void **state)
{
	struct hw_req r = hw_requirements(HW_MASTER, NULL);

	assert_int_equal(r.cpu_cores, 4);
	assert_int_equal(r.ram_mib, 16384);
	assert_int_equal(r.disk_size_gb, 100);
	r = hw_requirements(HW_ARBITER, "4.18");
	assert_int_equal(r.disk_size_gb, 50);
	r = hw_requirements(HW_SNO, "4.21");
	assert_int_equal(r.cpu_cores, 8);
	r = hw_requirements(HW_SNO, "4.22");
	assert_int_equal(r.cpu_cores, 4);
	r = hw_requirements(HW_EDGE_WORKER, NULL);
	assert_int_equal(r.disk_size_gb, 15);
	r = hw_requirements(HW_WORKER, NULL);
	assert_true(r.packet_loss_percentage == 10);
}

/* The host-status groups, one row per state of the 28 (backend.md §1). */
static void test_status_groups(void **state)
{
	static const struct {
		const char *st;
		bool unbound, inst6;
	} rows[] = {
		{ "discovering", false, false },
		{ "known", false, false },
		{ "disconnected", false, false },
		{ "insufficient", false, false },
		{ "disabled", false, false },
		{ "preparing-for-installation", false, true },
		{ "preparing-failed", false, true },
		{ "preparing-successful", false, true },
		{ "pending-for-input", false, false },
		{ "installing", false, true },
		{ "installing-in-progress", false, true },
		{ "installing-pending-user-action", false, true },
		{ "resetting-pending-user-action", false, false },
		{ "installed", false, false },
		{ "error", false, false },
		{ "resetting", false, false },
		{ "added-to-existing-cluster", false, false },
		{ "cancelled", false, false },
		{ "binding", false, false },
		{ "unbinding", true, false },
		{ "unbinding-pending-user-action", true, false },
		{ "known-unbound", true, false },
		{ "disconnected-unbound", true, false },
		{ "insufficient-unbound", true, false },
		{ "disabled-unbound", true, false },
		{ "discovering-unbound", true, false },
		{ "reclaiming", false, false },
		{ "reclaiming-rebooting", false, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (host_status_unbound(rows[i].st) != rows[i].unbound || host_status_inst6(rows[i].st) != rows[i].inst6)
			fail_msg("row %zu (%s)", i, rows[i].st);
	}
	assert_false(host_status_unbound(NULL));
	assert_false(host_status_inst6(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_register),     cmocka_unit_test(test_register_apply),
		cmocka_unit_test(test_status_groups),
		cmocka_unit_test(test_refresh),      cmocka_unit_test(test_refresh_changed),
		cmocka_unit_test(test_refresh_install), cmocka_unit_test(test_refresh_apply),
		cmocka_unit_test(test_refresh_stage_knob), cmocka_unit_test(test_progress_changed),
		cmocka_unit_test(test_progress_same_stage), cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_transition_fields), cmocka_unit_test(test_stages_of),
		cmocka_unit_test(test_validations),  cmocka_unit_test(test_validations_info_form),
		cmocka_unit_test(test_latency),
		cmocka_unit_test(test_disks),        cmocka_unit_test(test_disk_choice),
		cmocka_unit_test(test_formatting),   cmocka_unit_test(test_requirements),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
