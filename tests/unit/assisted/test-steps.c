/* test-steps.c - next steps per host status (backend §7.4) and step reply
 * handling (§7.5), with a deterministic random source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/steps.h"

static uint32_t counter(void *opaque)
{
	uint32_t *c = opaque;

	return (*c)++;
}

static const char CLUSTER[] =
	"{\"name\":\"c\",\"base_dns_domain\":\"example.com\",\"api_vips\":[{\"ip\":\"192.168.1.100\"}],"
	"\"ingress_vips\":[{\"ip\":\"192.168.1.101\"}]}";

/* Comma-separated step types of the response. */
static void types_of(const json_t *resp, char *buf, size_t size)
{
	json_t *s;
	size_t i, n = 0;

	buf[0] = '\0';
	json_array_foreach(json_object_get(resp, "instructions"), i, s)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "," : "",
				      json_string_value(json_object_get(s, "step_type")));
}

static void test_next_steps_table(void **state)
{
	static const struct {
		const char *status;
		bool day2, bound;
		const char *types;
		int secs;
		const char *post;
	} rows[] = {
		{ "known", false, true, "inventory,connectivity-check,ntp-synchronizer,domain-resolution,verify-vips", 60, "continue" },
		{ "insufficient", false, true, "inventory,connectivity-check,ntp-synchronizer,domain-resolution,verify-vips", 60, "continue" },
		{ "pending-for-input", false, true, "inventory,connectivity-check,ntp-synchronizer,domain-resolution,verify-vips", 60, "continue" },
		{ "discovering", false, true, "inventory", 60, "continue" },
		{ "disconnected", false, true, "inventory", 120, "continue" },
		{ "binding", false, true, "", 0, "exit" },
		{ "known", true, true, "inventory,connectivity-check,ntp-synchronizer,domain-resolution", 60, "continue" },
		{ "discovering", true, true, "inventory,ntp-synchronizer,domain-resolution", 60, "continue" },
		{ "pending-for-input", true, true, "inventory,connectivity-check", 60, "continue" },
		{ "disconnected", true, true, "inventory", 120, "continue" },
		{ "discovering-unbound", false, false, "inventory,ntp-synchronizer", 60, "continue" },
		{ "insufficient-unbound", false, false, "inventory,ntp-synchronizer", 60, "continue" },
		{ "known-unbound", false, false, "inventory,ntp-synchronizer", 60, "continue" },
		{ "disconnected-unbound", false, false, "inventory", 120, "continue" },
		{ "unbinding", false, false, "", 0, "exit" },
		{ "unbinding-pending-user-action", false, false, "", 0, "exit" },
		{ "disabled", false, true, "", 120, "continue" },
		{ "resetting", false, true, "", 120, "continue" },
		{ "installed", false, true, "", 60, "continue" },
	};
	json_t *cl = json_loads(CLUSTER, 0, NULL);
	json_t *peer = json_pack("{s:s, s:s}", "id", "h2", "inventory",
				 "{\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"m2\",\"ipv4_addresses\":[\"192.168.1.11/24\"]}]}");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = json_pack("{s:s, s:s}", "id", "h1", "status", rows[i].status);
		json_t *hosts = json_pack("[OO]", h, peer), *resp;
		uint32_t c = 0;
		struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .ntp_sources = "pool.ntp.org" };
		char types[512];

		if (rows[i].bound) {
			ctx.cluster = cl;
			ctx.cluster_hosts = hosts;
		}
		resp = host_next_steps(h, rows[i].day2, &ctx);
		types_of(resp, types, sizeof(types));
		if (strcmp(types, rows[i].types) != 0 ||
		    json_integer_value(json_object_get(resp, "next_instruction_seconds")) != rows[i].secs ||
		    strcmp(json_string_value(json_object_get(resp, "post_step_action")), rows[i].post) != 0)
			fail_msg("row %zu (%s): %s", i, rows[i].status, types);
		json_decref(resp);
		json_decref(hosts);
		json_decref(h);
	}
	json_decref(peer);
	json_decref(cl);
}

static void test_step_args(void **state)
{
	json_t *cl = json_loads(CLUSTER, 0, NULL);
	json_t *h = json_pack("{s:s, s:s}", "id", "h1", "status", "known");
	json_t *peer = json_pack("{s:s, s:s}", "id", "h2", "inventory",
				 "{\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"m2\",\"ipv4_addresses\":[\"192.168.1.11/24\"]}]}");
	json_t *hosts = json_pack("[OO]", h, peer), *resp, *steps;
	uint32_t c = 0xdeadbeef;
	struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .cluster = cl, .cluster_hosts = hosts,
				 .ntp_sources = "a,b", .release_image_host = "quay.io" };

	resp = host_next_steps(h, false, &ctx);
	steps = json_object_get(resp, "instructions");
	assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 0), "step_id")), "inventory-deadbeef");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 0), "args"), 0)), "h1");
	assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 1), "step_id")),
			    "connectivity-check-deadbef0");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 1), "args"), 0)),
			    "[{\"host_id\":\"h2\",\"nics\":[{\"name\":\"eth0\",\"mac\":\"m2\",\"ip_addresses\":[\"192.168.1.11\"]}]}]");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 2), "args"), 0)),
			    "{\"ntp_source\":\"a,b\"}");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 3), "args"), 0)),
			    "{\"domains\":[{\"domain_name\":\"api.c.example.com\"},{\"domain_name\":\"api-int.c.example.com\"},"
			    "{\"domain_name\":\"console-openshift-console.apps.c.example.com\"},"
			    "{\"domain_name\":\"validateNoWildcardDNS.c.example.com.\"},"
			    "{\"domain_name\":\"validateNoWildcardDNS.c.example.com\"},{\"domain_name\":\"quay.io\"}]}");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 4), "args"), 0)),
			    "[{\"vip\":\"192.168.1.100\",\"vip_type\":\"api\"},{\"vip\":\"192.168.1.101\",\"vip_type\":\"ingress\"}]");
	json_decref(resp);

	/* Upgrade wins in the upgradable states. */
	ctx.service_agent_image = "quay.io/agent:2";
	json_object_set_new(h, "discovery_agent_version", json_string("quay.io/agent:1"));
	resp = host_next_steps(h, false, &ctx);
	steps = json_object_get(resp, "instructions");
	assert_int_equal(json_array_size(steps), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(steps, 0), "step_type")), "upgrade-agent");
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 0), "args"), 0)),
			    "{\"agent_image\":\"quay.io/agent:2\"}");
	json_decref(resp);
	json_object_set_new(h, "discovery_agent_version", json_string("quay.io/agent:2"));
	resp = host_next_steps(h, false, &ctx);
	assert_int_equal(json_array_size(json_object_get(resp, "instructions")), 5);
	json_decref(resp);
	/* Default random source still gives "<type>-<8 hex>". */
	ctx.random32 = NULL;
	resp = host_next_steps(h, false, &ctx);
	assert_int_equal(strlen(json_string_value(json_object_get(
				 json_array_get(json_object_get(resp, "instructions"), 0), "step_id"))),
			 strlen("inventory-") + 8);
	json_decref(resp);
	json_decref(hosts);
	json_decref(peer);
	json_decref(h);
	json_decref(cl);
}

static json_t *reply(const char *type, int code, const char *output)
{
	return json_pack("{s:s, s:s, s:i, s:s, s:s}", "step_type", type, "step_id", "x-00000000", "exit_code", code,
			 "output", output, "error", "");
}

static void test_apply_replies(void **state)
{
	json_t *h = json_pack("{s:s, s:s, s:s}", "id", "h1", "status", "discovering", "cluster_id", "c1"), *r;
	ah_err err;

	r = reply("inventory", 0,
		  "{\"hostname\":\"h\",\"cpu\":{\"count\":4,\"architecture\":\"x86_64\"},\"memory\":{\"physical_bytes\":1},"
		  "\"disks\":[{\"name\":\"sda\",\"by_id\":\"/dev/disk/by-id/a\",\"drive_type\":\"SSD\",\"size_bytes\":200000000000},"
		  "{\"name\":\"sdb\",\"drive_type\":\"SSD\",\"size_bytes\":60000000000}]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);
	json_t *inv = json_object_get(h, "inventory");

	assert_true(json_is_object(inv));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(inv, "disks"), 1), "id")),
			    "/dev/sdb");
	assert_true(json_is_false(json_object_get(
		json_object_get(json_array_get(json_object_get(inv, "disks"), 1), "installation_eligibility"), "eligible")));
	assert_string_equal(json_string_value(json_object_get(h, "installation_disk_id")), "/dev/disk/by-id/a");
	assert_string_equal(json_string_value(json_object_get(h, "media_status")), "connected");

	/* Unbound hosts judge disks against 50 GB: sdb becomes eligible. */
	json_t *u = json_pack("{s:s, s:s}", "id", "h2", "status", "discovering-unbound");

	r = reply("inventory", 0, "{\"cpu\":{\"count\":4},\"memory\":{\"physical_bytes\":1},"
				  "\"disks\":[{\"name\":\"sdb\",\"drive_type\":\"SSD\",\"size_bytes\":60000000000}]}");
	assert_int_equal(host_apply_step_reply(u, r, &err), 0);
	assert_string_equal(json_string_value(json_object_get(u, "installation_disk_id")), "/dev/sdb");
	json_decref(r);
	json_decref(u);

	r = reply("ntp-synchronizer", 0, "{\"ntp_sources\":[{\"source_name\":\"a\",\"source_state\":\"synced\"}]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	assert_int_equal(json_array_size(json_object_get(h, "ntp_sources")), 1);
	json_decref(r);

	r = reply("connectivity-check", 0, "{\"remote_hosts\":[]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	assert_true(json_is_object(json_object_get(h, "connectivity")));
	json_decref(r);

	r = reply("domain-resolution", 0, "{\"resolutions\":[{\"domain_name\":\"api.c.example.com\"}]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	assert_true(json_is_object(json_object_get(h, "domain_resolutions")));
	json_decref(r);

	r = reply("installation-disk-speed-check", 0, "{\"io_sync_duration\":12,\"path\":\"/dev/disk/by-id/a\"}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);
	json_t *ds = json_object_get(json_object_get(json_object_get(h, "disks_info"), "/dev/disk/by-id/a"), "disk_speed");

	assert_true(json_is_true(json_object_get(ds, "tested")));
	assert_int_equal(json_integer_value(json_object_get(ds, "speed_ms")), 12);
	assert_int_equal(json_integer_value(json_object_get(ds, "exit_code")), 0);
	r = reply("installation-disk-speed-check", 0, "");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);

	r = reply("container-image-availability", 0,
		  "{\"images\":[{\"name\":\"quay.io/a\",\"result\":\"success\",\"size_bytes\":10,\"download_rate\":5}]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);
	r = reply("container-image-availability", 0,
		  "{\"images\":[{\"name\":\"quay.io/b\",\"result\":\"failure\"}]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);
	assert_int_equal(json_object_size(json_object_get(h, "images_status")), 2);

	/* Non-zero exit: ignored. */
	r = reply("ntp-synchronizer", 1, "{\"ntp_sources\":[]}");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	assert_int_equal(json_array_size(json_object_get(h, "ntp_sources")), 1);
	json_decref(r);

	/* Unknown step types are accepted. */
	r = reply("free-network-addresses", 0, "[]");
	assert_int_equal(host_apply_step_reply(h, r, &err), 0);
	json_decref(r);
	json_decref(h);
}

static void test_apply_errors_and_media(void **state)
{
	static const struct {
		const char *type, *output;
	} bad[] = {
		{ "inventory", "not json" },
		{ "inventory", "[]" },
		{ "inventory", "" },
		{ "inventory", "{\"disks\":{}}" },
		{ "ntp-synchronizer", "{\"ntp_sources\":{}}" },
		{ "connectivity-check", "[1]" },
		{ "container-image-availability", "{\"images\":3}" },
		{ "installation-disk-speed-check", "{\"io_sync_duration\":1}" },
	};
	json_t *h = json_pack("{s:s, s:s}", "id", "h1", "status", "known"), *r;
	ah_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = reply(bad[i].type, 0, bad[i].output);
		if (host_apply_step_reply(h, r, &err) != -EINVAL || err.status != 400)
			fail_msg("row %zu accepted", i);
		json_decref(r);
	}
	r = json_pack("{s:s, s:s}", "step_type", "inventory", "exit_code", "0");
	assert_int_equal(host_apply_step_reply(h, r, &err), -EINVAL);
	json_decref(r);

	static const struct {
		const char *from, *to;
	} media[] = {
		{ "known", "disconnected" },
		{ "binding", "disconnected" },
		{ "pending-for-input", "disconnected" },
		{ "known-unbound", "disconnected-unbound" },
		{ "unbinding", "disconnected-unbound" },
		{ "installed", "installed" },
	};
	for (size_t i = 0; i < sizeof(media) / sizeof(media[0]); i++) {
		json_object_set_new(h, "status", json_string(media[i].from));
		r = reply("inventory", 256, "");
		assert_int_equal(host_apply_step_reply(h, r, &err), 0);
		assert_string_equal(json_string_value(json_object_get(h, "status")), media[i].to);
		assert_string_equal(json_string_value(json_object_get(h, "media_status")), "disconnected");
		json_decref(r);
	}
	json_decref(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_steps_table),
		cmocka_unit_test(test_step_args),
		cmocka_unit_test(test_apply_replies),
		cmocka_unit_test(test_apply_errors_and_media),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
