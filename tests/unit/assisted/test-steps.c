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
		{ "preparing-for-installation", false, true, "installation-disk-speed-check,container-image-availability", 60,
		  "continue" },
		{ "preparing-successful", false, true, "", 60, "continue" },
		{ "installing", false, true, "install", 60, "continue" },
		{ "installing", true, true, "install", 60, "continue" },
		{ "installing-in-progress", false, true, "", 60, "continue" },
		{ "installing-in-progress", true, true, "", 60, "continue" },
		{ "installing-pending-user-action", false, true, "", 60, "continue" },
		{ "added-to-existing-cluster", true, true, "", 60, "continue" },
		{ "error", false, true, "logs-gather,stop-installation", 120, "continue" },
		{ "cancelled", false, true, "logs-gather,stop-installation", 120, "continue" },
		{ "error", true, true, "logs-gather,stop-installation", 120, "continue" },
	};
	json_t *cl = json_loads(CLUSTER, 0, NULL);
	json_t *peer = json_pack("{s:s, s:s}", "id", "h2", "inventory",
				 "{\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"m2\",\"ipv4_addresses\":[\"192.168.1.11/24\"]}]}");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "h1", "status", rows[i].status, "cluster_id", "c1",
				      "role", "master", "installation_disk_id", "/dev/disk/by-id/wwn-1");
		json_t *hosts = json_pack("[OO]", h, peer), *resp;
		uint32_t c = 0;
		struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .ntp_sources = "pool.ntp.org",
					 .release_image = "quay.io/ocp-release:4.16.0-x86_64",
					 .installer_image = "quay.io/assisted-installer:1" };
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
		{ "verify-vips", "{\"vip\":\"1.2.3.4\"}" },
		{ "verify-vips", "[\"1.2.3.4\"]" },
		{ "verify-vips", "nope" },
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
		{ "installing", "error" },
		{ "installing-in-progress", "error" },
		{ "preparing-for-installation", "error" },
		{ "preparing-successful", "error" },
		{ "preparing-failed", "error" },
	};
	for (size_t i = 0; i < sizeof(media) / sizeof(media[0]); i++) {
		json_object_set_new(h, "status", json_string(media[i].from));
		json_object_del(h, "media_status");
		r = reply("inventory", 256, "");
		assert_int_equal(host_apply_step_reply(h, r, &err), 0);
		assert_string_equal(json_string_value(json_object_get(h, "status")), media[i].to);
		assert_string_equal(json_string_value(json_object_get(h, "media_status")), "disconnected");
		json_decref(r);
	}
	json_decref(h);
}

static const char INV[] =
	"{\"hostname\":\"m0\",\"boot\":{\"device_type\":\"ephemeral\"},"
	"\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"m1\",\"ipv4_addresses\":[\"192.168.1.10/24\"],\"ipv6_addresses\":[\"fd00::10/64\"]},"
	"{\"name\":\"eth1\",\"mac_address\":\"m2\",\"ipv4_addresses\":[\"10.9.0.5/16\"]}],"
	"\"disks\":[{\"name\":\"sda\",\"by_id\":\"/dev/disk/by-id/wwn-1\",\"drive_type\":\"SSD\",\"bootable\":true,\"size_bytes\":200000000000},"
	"{\"name\":\"sdb\",\"by_id\":\"/dev/disk/by-id/wwn-2\",\"drive_type\":\"HDD\",\"bootable\":true,\"size_bytes\":200000000000},"
	"{\"name\":\"sdc\",\"by_id\":\"/dev/disk/by-id/wwn-3\",\"drive_type\":\"HDD\",\"bootable\":false,\"size_bytes\":200000000000},"
	"{\"name\":\"sdd\",\"by_id\":\"/dev/disk/by-id/wwn-4\",\"drive_type\":\"FC\",\"bootable\":true,\"size_bytes\":200000000000},"
	"{\"name\":\"sr0\",\"by_id\":\"/dev/disk/by-id/cd\",\"drive_type\":\"ODD\",\"bootable\":true,\"is_installation_media\":true,\"size_bytes\":1000},"
	"{\"name\":\"sde\",\"by_id\":\"/dev/disk/by-id/usb\",\"drive_type\":\"HDD\",\"bootable\":true,\"removable\":true,\"size_bytes\":1000}]}";

static const char ICLUSTER[] =
	"{\"id\":\"c1\",\"name\":\"sno\",\"base_dns_domain\":\"example.com\",\"kind\":\"Cluster\",\"openshift_version\":\"4.16.0\","
	"\"cpu_architecture\":\"x86_64\",\"control_plane_count\":1,\"high_availability_mode\":\"None\","
	"\"machine_networks\":[{\"cidr\":\"192.168.1.0/24\"}],\"ocp_release_image\":\"quay.io/ocp-release:4.16.0-x86_64\"}";

/* The install step's argument, one row per rule of InstallCmdRequest. */
static void test_install_args(void **state)
{
	static const struct {
		const char *name;
		const char *host_patch, *cluster_patch;
		bool static_net, skip_mco, notify;
		const char *want; /* the whole request, keys sorted */
	} rows[] = {
		{ "SNO bootstrap", "{\"bootstrap\":true}", NULL, false, false, false,
		  "{\"boot_device\":\"/dev/disk/by-id/wwn-1\",\"check_cvo\":true,\"cluster_id\":\"c1\",\"control_plane_count\":1,"
		  "\"controller_image\":\"quay.io/controller:1\",\"coreos_image\":\"quay.io/rhcos:1\","
		  "\"disks_to_format\":[\"/dev/disk/by-id/wwn-1\",\"/dev/disk/by-id/wwn-2\"],\"host_id\":\"h1\","
		  "\"infra_env_id\":\"ie1\",\"installer_args\":\"[\\\"--append-karg\\\",\\\"ip=eth0:dhcp\\\"]\","
		  "\"installer_image\":\"quay.io/installer:1\",\"mco_image\":\"quay.io/mco:1\","
		  "\"must_gather_image\":\"quay.io/mg:1\",\"openshift_version\":\"4.16.0\",\"role\":\"bootstrap\","
		  "\"service_ips\":[\"10.0.0.1\",\"10.0.0.2\"]}" },
		{ "worker with user args, skip-MCO-reboot, notify, static network, proxy",
		  "{\"role\":\"worker\",\"installer_args\":\"[\\\"--append-karg\\\",\\\"nosmt\\\"]\"}",
		  "{\"http_proxy\":\"http://p:3128\",\"no_proxy\":\" .corp \",\"control_plane_count\":3}", true, true, true,
		  "{\"boot_device\":\"/dev/disk/by-id/wwn-1\",\"check_cvo\":true,\"cluster_id\":\"c1\",\"control_plane_count\":3,"
		  "\"controller_image\":\"quay.io/controller:1\",\"coreos_image\":\"quay.io/rhcos:1\","
		  "\"disks_to_format\":[\"/dev/disk/by-id/wwn-1\",\"/dev/disk/by-id/wwn-2\"],"
		  "\"enable_skip_mco_reboot\":true,\"host_id\":\"h1\",\"infra_env_id\":\"ie1\","
		  "\"installer_args\":\"[\\\"--append-karg\\\",\\\"nosmt\\\",\\\"--copy-network\\\"]\","
		  "\"installer_image\":\"quay.io/installer:1\",\"mco_image\":\"quay.io/mco:1\","
		  "\"must_gather_image\":\"quay.io/mg:1\",\"notify_num_reboots\":true,\"openshift_version\":\"4.16.0\","
		  "\"proxy\":{\"http_proxy\":\"http://p:3128\",\"no_proxy\":\".corp,127.0.0.1,localhost,.svc,.cluster.local,api-int.sno.example.com\"},"
		  "\"role\":\"worker\",\"service_ips\":[\"10.0.0.1\",\"10.0.0.2\"]}" },
		{ "user ip= arg and saved partitions; skipped disk", 
		  "{\"role\":\"master\",\"skip_formatting_disks\":\"/dev/disk/by-id/wwn-2\","
		  "\"installer_args\":\"[\\\"--append-karg\\\",\\\"ip=eth1:dhcp\\\",\\\"--save-partindex\\\",\\\"5\\\"]\"}",
		  "{\"https_proxy\":\"https://p\",\"no_proxy\":\"*\"}", false, false, false,
		  "{\"boot_device\":\"/dev/disk/by-id/wwn-1\",\"check_cvo\":true,\"cluster_id\":\"c1\",\"control_plane_count\":1,"
		  "\"controller_image\":\"quay.io/controller:1\",\"coreos_image\":\"quay.io/rhcos:1\",\"host_id\":\"h1\","
		  "\"infra_env_id\":\"ie1\","
		  "\"installer_args\":\"[\\\"--append-karg\\\",\\\"ip=eth1:dhcp\\\",\\\"--save-partindex\\\",\\\"5\\\"]\","
		  "\"installer_image\":\"quay.io/installer:1\",\"mco_image\":\"quay.io/mco:1\","
		  "\"must_gather_image\":\"quay.io/mg:1\",\"openshift_version\":\"4.16.0\","
		  "\"proxy\":{\"https_proxy\":\"https://p\",\"no_proxy\":\"*\"},\"role\":\"master\","
		  "\"service_ips\":[\"10.0.0.1\",\"10.0.0.2\"],\"skip_installation_disk_cleanup\":true}" },
		{ "day-2 worker, dual-stack DHCP, old OCP: no skip-MCO-reboot",
		  "{\"role\":\"worker\",\"kind\":\"AddToExistingClusterHost\"}",
		  "{\"kind\":\"AddHostsCluster\",\"openshift_version\":\"4.14.3\",\"control_plane_count\":0,"
		  "\"machine_networks\":[{\"cidr\":\"192.168.1.0/24\"},{\"cidr\":\"fd00::/64\"}]}", false, true, false,
		  "{\"boot_device\":\"/dev/disk/by-id/wwn-1\",\"check_cvo\":true,\"cluster_id\":\"c1\","
		  "\"controller_image\":\"quay.io/controller:1\",\"coreos_image\":\"quay.io/rhcos:1\","
		  "\"disks_to_format\":[\"/dev/disk/by-id/wwn-1\",\"/dev/disk/by-id/wwn-2\"],\"host_id\":\"h1\","
		  "\"infra_env_id\":\"ie1\",\"installer_args\":\"[\\\"--append-karg\\\",\\\"ip=eth0:dhcp,dhcp6\\\"]\","
		  "\"installer_image\":\"quay.io/installer:1\",\"role\":\"worker\",\"service_ips\":[\"10.0.0.1\",\"10.0.0.2\"]}" },
	};
	json_t *mg = json_pack("{s:s}", "ocp", "quay.io/mg:1");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "h1", "status", "installing", "cluster_id", "c1",
				      "installation_disk_id", "/dev/disk/by-id/wwn-1", "inventory", INV);
		json_t *cl = json_loads(ICLUSTER, 0, NULL), *p, *req, *want;
		struct steps_ctx ctx = { .cluster = cl, .infra_env_id = "ie1", .installer_image = "quay.io/installer:1",
					 .controller_image = "quay.io/controller:1", .mco_image = "quay.io/mco:1",
					 .coreos_image = "quay.io/rhcos:1", .must_gather_images = mg,
					 .service_ips = "10.0.0.1,10.0.0.2", .check_cvo = true };
		ah_err err = { 0 };

		ctx.static_network = rows[i].static_net;
		ctx.enable_skip_mco_reboot = rows[i].skip_mco;
		ctx.notify_num_reboots = rows[i].notify;
		p = json_loads(rows[i].host_patch, 0, NULL);
		json_object_update(h, p);
		json_decref(p);
		if (rows[i].cluster_patch) {
			p = json_loads(rows[i].cluster_patch, 0, NULL);
			assert_non_null(p);
			json_object_update(cl, p);
			json_decref(p);
		}
		req = host_install_cmd(h, &ctx, &err);
		if (!req)
			fail_msg("%s: %s", rows[i].name, err.message);
		want = json_loads(rows[i].want, 0, NULL);
		assert_non_null(want);
		if (!json_equal(req, want)) {
			char *got = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);

			fail_msg("%s: %s", rows[i].name, got);
		}
		json_decref(want);
		json_decref(req);
		json_decref(cl);
		json_decref(h);
	}
	json_decref(mg);
}

/* The install step carries the request as one JSON string; bad installer
 * args or a missing disk emit no install step. */
static void test_install_step(void **state)
{
	json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "id", "h1", "status", "installing", "cluster_id", "c1",
			      "installation_disk_id", "/dev/disk/by-id/wwn-1", "inventory", INV, "bootstrap", 1);
	json_t *cl = json_loads(ICLUSTER, 0, NULL), *resp, *st, *req;
	json_t *mg = json_pack("{s:s, s:s}", "ocp", "quay.io/mg:1", "cnv", "quay.io/cnv-mg:1");
	uint32_t c = 0;
	struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .cluster = cl, .infra_env_id = "ie1",
				 .installer_image = "quay.io/installer:1", .controller_image = "quay.io/controller:1",
				 .must_gather_images = mg };
	ah_err err = { 0 };

	resp = host_next_steps(h, false, &ctx);
	st = json_array_get(json_object_get(resp, "instructions"), 0);
	assert_string_equal(json_string_value(json_object_get(st, "step_id")), "install-00000000");
	assert_int_equal(json_array_size(json_object_get(st, "args")), 1);
	req = json_loads(json_string_value(json_array_get(json_object_get(st, "args"), 0)), 0, NULL);
	assert_string_equal(json_string_value(json_object_get(req, "role")), "bootstrap");
	assert_string_equal(json_string_value(json_object_get(req, "must_gather_image")),
			    "{\"cnv\":\"quay.io/cnv-mg:1\",\"ocp\":\"quay.io/mg:1\"}");
	json_decref(req);
	json_decref(resp);

	json_object_set_new(h, "installer_args", json_string("{\"a\":1}"));
	assert_null(host_install_cmd(h, &ctx, &err));
	assert_int_equal(err.status, 400);
	assert_non_null(strstr(err.message, "installer args"));
	resp = host_next_steps(h, false, &ctx);
	assert_int_equal(json_array_size(json_object_get(resp, "instructions")), 0);
	json_decref(resp);
	json_object_set_new(h, "installer_args", json_string("[1]"));
	assert_null(host_install_cmd(h, &ctx, &err));
	json_object_del(h, "installer_args");
	json_object_del(h, "installation_disk_id");
	assert_null(host_install_cmd(h, &ctx, &err));
	assert_non_null(strstr(err.message, "installation disk"));
	json_decref(mg);
	json_decref(cl);
	json_decref(h);
}

/* preparing-for-installation: what is measured and pulled, and when not. */
static void test_prepare_steps(void **state)
{
	static const struct {
		const char *name, *patch;
		const char *types;
		const char *images; /* container-image-availability arg, NULL = not checked */
	} rows[] = {
		{ "fresh host", "{}", "installation-disk-speed-check,container-image-availability",
		  "{\"images\":[\"quay.io/ocp-release:4.16.0-x86_64\",\"quay.io/mco:1\",\"quay.io/mg:1\",\"quay.io/installer:1\"],\"timeout\":960}" },
		{ "disk measured, release pulled",
		  "{\"disks_info\":{\"/dev/disk/by-id/wwn-1\":{\"disk_speed\":{\"tested\":true,\"exit_code\":0}}},"
		  "\"images_status\":{\"quay.io/ocp-release:4.16.0-x86_64\":{\"name\":\"quay.io/ocp-release:4.16.0-x86_64\",\"result\":\"success\"},"
		  "\"quay.io/mco:1\":{\"name\":\"quay.io/mco:1\",\"result\":\"failure\"}}}",
		  "container-image-availability",
		  "{\"images\":[\"quay.io/mco:1\",\"quay.io/mg:1\",\"quay.io/installer:1\"],\"timeout\":960}" },
		{ "everything pulled (array form), partitions kept",
		  "{\"installer_args\":\"[\\\"--save-partlabel\\\",\\\"data\\\"]\",\"images_status\":["
		  "{\"name\":\"quay.io/ocp-release:4.16.0-x86_64\",\"result\":\"success\"},{\"name\":\"quay.io/mco:1\",\"result\":\"success\"},"
		  "{\"name\":\"quay.io/mg:1\",\"result\":\"success\"},{\"name\":\"quay.io/installer:1\",\"result\":\"success\"}]}",
		  "", NULL },
		{ "persistent boot", "{\"inventory\":{\"boot\":{\"device_type\":\"persistent\"}}}", "container-image-availability",
		  NULL },
	};
	json_t *cl = json_loads(ICLUSTER, 0, NULL), *mg = json_pack("{s:s}", "ocp", "quay.io/mg:1");

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", "h1", "status", "preparing-for-installation",
				      "cluster_id", "c1", "installation_disk_id", "/dev/disk/by-id/wwn-1", "inventory", INV);
		json_t *p = json_loads(rows[i].patch, 0, NULL), *resp, *s;
		uint32_t c = 0;
		struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .cluster = cl, .mco_image = "quay.io/mco:1",
					 .installer_image = "quay.io/installer:1", .must_gather_images = mg };
		char types[256];
		size_t j;

		json_object_update(h, p);
		json_decref(p);
		resp = host_next_steps(h, false, &ctx);
		types_of(resp, types, sizeof(types));
		if (strcmp(types, rows[i].types) != 0)
			fail_msg("%s: %s", rows[i].name, types);
		json_array_foreach(json_object_get(resp, "instructions"), j, s) {
			const char *t = json_string_value(json_object_get(s, "step_type"));
			json_t *args = json_object_get(s, "args");

			if (!strcmp(t, "installation-disk-speed-check")) {
				assert_int_equal(json_array_size(args), 2);
				assert_string_equal(json_string_value(json_array_get(args, 0)),
						    "{\"path\":\"/dev/disk/by-id/wwn-1\"}");
				assert_string_equal(json_string_value(json_array_get(args, 1)), "480.00");
			} else if (rows[i].images) {
				assert_string_equal(json_string_value(json_array_get(args, 0)), rows[i].images);
			}
		}
		json_decref(resp);
		json_decref(h);
	}
	json_decref(mg);
	json_decref(cl);
}

/* error/cancelled: logs-gather only while logs were never collected;
 * the bootstrap host also names the masters. */
static void test_error_steps(void **state)
{
	json_t *h = json_pack("{s:s, s:s, s:s, s:s, s:b}", "id", "h1", "status", "error", "cluster_id", "c1",
			      "infra_env_id", "ie1", "bootstrap", 1);
	json_t *m = json_pack("{s:s, s:s, s:s}", "id", "h2", "role", "master", "inventory",
			      "{\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"192.168.1.11/24\"]}]}");
	json_t *w = json_pack("{s:s, s:s, s:s}", "id", "h3", "role", "worker", "inventory",
			      "{\"interfaces\":[{\"name\":\"eth0\",\"ipv4_addresses\":[\"192.168.1.12/24\"]}]}");
	json_t *hosts = json_pack("[OOO]", h, m, w), *resp, *steps;
	uint32_t c = 0;
	struct steps_ctx ctx = { .random32 = counter, .opaque = &c, .cluster_hosts = hosts };

	resp = host_next_steps(h, false, &ctx);
	steps = json_object_get(resp, "instructions");
	assert_int_equal(json_array_size(steps), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_array_get(steps, 0), "args"), 0)),
			    "{\"cluster_id\":\"c1\",\"infra_env_id\":\"ie1\",\"host_id\":\"h1\",\"bootstrap\":true,"
			    "\"installer_gather\":true,\"master_ips\":[\"192.168.1.11\"]}");
	assert_int_equal(json_array_size(json_object_get(json_array_get(steps, 1), "args")), 0);
	json_decref(resp);
	json_object_set_new(h, "logs_info", json_string("completed"));
	resp = host_next_steps(h, false, &ctx);
	assert_int_equal(json_array_size(json_object_get(resp, "instructions")), 1);
	json_decref(resp);
	json_decref(hosts);
	json_decref(w);
	json_decref(m);
	json_decref(h);
}

/* install step replies: failure moves the host to error, except the
 * "already in use" restart case. */
static void test_install_reply(void **state)
{
	static const struct {
		const char *from;
		int code;
		const char *error;
		const char *to, *info;
	} rows[] = {
		{ "installing", 0, "", "installing", "" },
		{ "installing", 1, "boom", "error", "installation command failed" },
		{ "installing-in-progress", 2, "", "error", "installation command failed" },
		{ "installing", 125, "container name already in use", "installing", "" },
		{ "installing", 125, "other", "error", "installation command failed" },
		{ "installed", 1, "", "installed", "" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *h = json_pack("{s:s, s:s, s:s}", "id", "h1", "status", rows[i].from, "status_info", "");
		json_t *r = json_pack("{s:s, s:s, s:i, s:s, s:s}", "step_type", "install", "step_id", "install-1",
				      "exit_code", rows[i].code, "output", "", "error", rows[i].error);
		ah_err err = { 0 };

		assert_int_equal(host_apply_step_reply_now(h, r, NULL, 1700000000, &err), 0);
		if (strcmp(json_string_value(json_object_get(h, "status")), rows[i].to) != 0 ||
		    strcmp(json_string_value(json_object_get(h, "status_info")), rows[i].info) != 0)
			fail_msg("row %zu: %s", i, json_string_value(json_object_get(h, "status")));
		if (strcmp(rows[i].from, rows[i].to) != 0)
			assert_int_equal(json_integer_value(json_object_get(h, "status_updated_at")), 1700000000);
		json_decref(r);
		json_decref(h);
	}
}

/* verify-vips replies seen from the cluster, one row per case. */
static void test_verify_vips_to_cluster(void **state)
{
	static const struct {
		const char *name;
		const char *type;
		int exit_code;
		const char *output;
		int rc;
		const char *api, *ingress; /* verifications after ("" = none) */
	} rows[] = {
		{ "both succeeded", "verify-vips", 0,
		  "[{\"vip\":\"192.168.111.5\",\"vip_type\":\"api\",\"verification\":\"succeeded\"},"
		  "{\"vip\":\"192.168.111.6\",\"vip_type\":\"ingress\",\"verification\":\"succeeded\"}]",
		  2, "succeeded", "succeeded" },
		{ "ingress in use", "verify-vips", 0,
		  "[{\"vip\":\"192.168.111.6\",\"vip_type\":\"ingress\",\"verification\":\"failed\"}]", 1, "",
		  "failed" },
		{ "another address: ignored", "verify-vips", 0,
		  "[{\"vip\":\"192.168.111.7\",\"vip_type\":\"api\",\"verification\":\"failed\"}]", 0, "", "" },
		{ "unknown type: ignored", "verify-vips", 0,
		  "[{\"vip\":\"192.168.111.5\",\"vip_type\":\"dns\",\"verification\":\"failed\"}]", 0, "", "" },
		{ "failed command", "verify-vips", 1,
		  "[{\"vip\":\"192.168.111.5\",\"vip_type\":\"api\",\"verification\":\"failed\"}]", 0, "", "" },
		{ "empty output", "verify-vips", 0, "", 0, "", "" },
		{ "other step", "ntp-synchronizer", 0, "{\"ntp_sources\":[]}", 0, "", "" },
		{ "not a list", "verify-vips", 0, "{}", -EINVAL, "", "" },
		{ "not objects", "verify-vips", 0, "[1]", -EINVAL, "", "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *cl = json_pack("{s:[{s:s}], s:[{s:s}]}", "api_vips", "ip", "192.168.111.5", "ingress_vips", "ip",
				       "192.168.111.6");
		json_t *r = reply(rows[i].type, rows[i].exit_code, rows[i].output);
		const char *api, *ing;
		ah_err err = { 0 };
		int rc = host_apply_verify_vips_reply(cl, r, &err);

		api = json_string_value(json_object_get(json_array_get(json_object_get(cl, "api_vips"), 0), "verification"));
		ing = json_string_value(
			json_object_get(json_array_get(json_object_get(cl, "ingress_vips"), 0), "verification"));
		if (rc != rows[i].rc || strcmp(api ? api : "", rows[i].api) || strcmp(ing ? ing : "", rows[i].ingress))
			fail_msg("%s: rc %d api %s ingress %s", rows[i].name, rc, api ? api : "", ing ? ing : "");
		if (rc == -EINVAL)
			assert_int_equal(err.status, 400);
		json_decref(r);
		json_decref(cl);
	}
}

/* api-vip-connectivity-check: the ignition token rides in the request
 * (upstream APIVipConnectivityRequest, fields in its order). */
static void test_api_vip_request(void **state)
{
	static const char URL[] = "http://api.c.example.com:22624/config/worker";
	static const struct {
		const char *token, *ca, *want;
	} rows[] = {
		{ NULL, NULL, "{\"url\":\"http://api.c.example.com:22624/config/worker\"}" },
		{ "", "", "{\"url\":\"http://api.c.example.com:22624/config/worker\"}" },
		{ "tok3n", NULL,
		  "{\"ignition_endpoint_token\":\"tok3n\",\"request_headers\":[{\"key\":\"Authorization\","
		  "\"value\":\"Bearer tok3n\"}],\"url\":\"http://api.c.example.com:22624/config/worker\"}" },
		{ NULL, "PEM", "{\"ca_certificate\":\"PEM\",\"url\":\"http://api.c.example.com:22624/config/worker\"}" },
		{ "t", "PEM",
		  "{\"ca_certificate\":\"PEM\",\"ignition_endpoint_token\":\"t\",\"request_headers\":[{\"key\":"
		  "\"Authorization\",\"value\":\"Bearer t\"}],\"url\":\"http://api.c.example.com:22624/config/worker\"}" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *req = host_api_vip_check_request(rows[i].token, URL, rows[i].ca);
		char *got;

		assert_non_null(req);
		got = json_dumps(req, JSON_COMPACT);
		if (strcmp(got, rows[i].want))
			fail_msg("row %zu: %s", i, got);
		free(got);
		json_decref(req);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_next_steps_table),
		cmocka_unit_test(test_step_args),
		cmocka_unit_test(test_apply_replies),
		cmocka_unit_test(test_apply_errors_and_media),
		cmocka_unit_test(test_install_args),
		cmocka_unit_test(test_install_step),
		cmocka_unit_test(test_prepare_steps),
		cmocka_unit_test(test_error_steps),
		cmocka_unit_test(test_install_reply),
		cmocka_unit_test(test_api_vip_request),
		cmocka_unit_test(test_verify_vips_to_cluster),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
