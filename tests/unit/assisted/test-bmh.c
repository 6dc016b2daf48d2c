/* test-bmh.c - BMC address grammar, BMO's reboot and detached annotation
 * rules, and the byte-exact hardwaredetails JSON (Go's encoding of BMO's
 * HardwareDetails). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/bmh.h"

static void test_bmc_address(void **state)
{
	static const struct {
		const char *addr;
		int r;
		const char *base, *system, *msg;
	} rows[] = {
		{ "redfish-virtualmedia+http://127.0.0.1:8000/redfish/v1/Systems/abc", 0, "http://127.0.0.1:8000",
		  "/redfish/v1/Systems/abc", NULL },
		{ "redfish-virtualmedia://bmc.example.com/redfish/v1/Systems/1/", 0, "https://bmc.example.com",
		  "/redfish/v1/Systems/1", NULL },
		{ "idrac-virtualmedia://10.0.0.5/redfish/v1/Systems/System.Embedded.1", 0, "https://10.0.0.5",
		  "/redfish/v1/Systems/System.Embedded.1", NULL },
		{ "redfish-virtualmedia+https://[fd00::1]:8443/redfish/v1", 0, "https://[fd00::1]:8443", "", NULL },
		{ "REDFISH-VIRTUALMEDIA+HTTP://h:1", 0, "http://h:1", "", NULL },
		{ "ipmi://192.0.2.1:623", -EINVAL, NULL, NULL, "unsupported BMC driver \"ipmi\"" },
		{ "redfish://192.0.2.1/redfish/v1/Systems/1", -EINVAL, NULL, NULL, "unsupported BMC driver \"redfish\"" },
		{ "192.0.2.1", -EINVAL, NULL, NULL, "no scheme" },
		{ "", -EINVAL, NULL, NULL, "empty" },
		{ NULL, -EINVAL, NULL, NULL, "empty" },
		{ "redfish-virtualmedia://user@h/redfish/v1", -EINVAL, NULL, NULL, "host" },
		{ "redfish-virtualmedia:///redfish/v1", -EINVAL, NULL, NULL, "host" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct bmh_bmc b;
		ah_err err = { 0 };
		int r = bmh_parse_bmc_address(rows[i].addr, &b, &err);

		assert_int_equal(r, rows[i].r);
		if (r == 0) {
			assert_string_equal(b.base, rows[i].base);
			assert_string_equal(b.system, rows[i].system);
		} else {
			assert_non_null(strstr(err.message, rows[i].msg));
			assert_non_null(strstr(err.message, "spec.bmc.address"));
		}
	}
}

static void test_reboot_rules(void **state)
{
	static const struct {
		const char *ann;   /* JSON object of annotations */
		const char *state;
		bool want, hard;
	} rows[] = {
		{ "{}", "provisioned", false, false },
		{ "{\"reboot.metal3.io\": \"\"}", "provisioned", true, false },
		{ "{\"reboot.metal3.io\": \"\"}", "available", false, false },        /* not forced */
		{ "{\"reboot.metal3.io\": \"{\\\"force\\\": true}\"}", "available", true, false },
		{ "{\"reboot.metal3.io/x\": \"{\\\"mode\\\": \\\"hard\\\"}\"}", "provisioned", true, true },
		{ "{\"reboot.metal3.io/x\": \"{\\\"mode\\\": \\\"hard\\\"}\"}", "inspecting", false, false },
		{ "{\"reboot.metal3.io/a\": \"\", \"reboot.metal3.io/b\": \"{\\\"mode\\\":\\\"hard\\\"}\"}",
		  "externally provisioned", true, true },
		{ "{\"reboot.metal3.iox\": \"\"}", "provisioned", false, false },     /* not the key */
		{ "{\"reboot.metal3.io\": \"not json\"}", "provisioned", true, false }, /* soft */
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *a = json_loads(rows[i].ann, 0, NULL);
		bool hard = false;

		assert_non_null(a);
		assert_int_equal(bmh_reboot_requested(a, rows[i].state, &hard), rows[i].want);
		assert_int_equal(hard, rows[i].hard);
		json_decref(a);
	}
}

static void test_detached_rules(void **state)
{
	json_t *none = json_object();
	json_t *plain = json_pack("{s:s}", "baremetalhost.metal3.io/detached", "assisted-service-controller");
	json_t *force = json_pack("{s:s}", "baremetalhost.metal3.io/detached", "{\"force\": true}");

	(void)state;
	assert_false(bmh_detached(none, "provisioned"));
	assert_true(bmh_detached(plain, "provisioned"));
	assert_true(bmh_detached(plain, "available"));
	assert_true(bmh_detached(plain, "ready"));
	assert_true(bmh_detached(plain, "externally provisioned"));
	assert_false(bmh_detached(plain, "provisioning"));
	assert_false(bmh_detached(plain, "registering"));
	assert_true(bmh_detached(force, "provisioning"));
	json_decref(none);
	json_decref(plain);
	json_decref(force);
}

static void test_go_float(void **state)
{
	static const struct {
		double v;
		const char *s;
	} rows[] = {
		{ 2400, "2400" }, { 2400.5, "2400.5" }, { 0.1, "0.1" }, { 1e21, "1e+21" }, { 1e-7, "1e-07" },
		{ 3792.999, "3792.999" }, { 0, "0" },
	};
	size_t i;
	char buf[64];

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bmh_go_float(rows[i].v, buf, sizeof(buf));
		assert_string_equal(buf, rows[i].s);
	}
}

static void test_hardware_details_bytes(void **state)
{
	const char *inv_text =
		"{\"hostname\": \"host-a\","
		" \"interfaces\": ["
		"  {\"name\": \"eth0\", \"vendor\": \"0x8086\", \"macAddress\": \"52:54:00:AA:BB:CC\","
		"   \"ipV4Addresses\": [\"192.168.1.10/24\"], \"ipV6Addresses\": [\"fe80::1/64\"], \"speedMbps\": 1000},"
		"  {\"name\": \"eth1\", \"macAddress\": \"52:54:00:00:00:02\", \"ipV4Addresses\": [], \"speedMbps\": 25600,"
		"   \"ipV6Addresses\": []},"
		"  {\"name\": \"eth2\", \"macAddress\": \"52:54:00:00:00:03\", \"ipV4Addresses\": [\"10.0.0.3/8\"],"
		"   \"speedMbps\": 25600}],"
		" \"disks\": ["
		"  {\"path\": \"/dev/sda\", \"byPath\": \"/dev/disk/by-path/pci-0\", \"driveType\": \"HDD\","
		"   \"sizeBytes\": 120000000000, \"model\": \"QEMU <HARDDISK>\", \"serial\": \"S1\", \"hctl\": \"0:0:0:0\","
		"   \"vendor\": \"ATA\", \"wwn\": \"\"},"
		"  {\"path\": \"/dev/vdb\", \"driveType\": \"SSD\", \"sizeBytes\": 0, \"wwn\": \"0x5000\"}],"
		" \"memory\": {\"physicalBytes\": 17179869184, \"usableBytes\": 16000000000},"
		" \"cpu\": {\"architecture\": \"x86_64\", \"modelName\": \"Intel & co\", \"clockMegahertz\": 2400.5,"
		"   \"flags\": [\"fpu\", \"vme\"], \"count\": 4},"
		" \"systemVendor\": {\"manufacturer\": \"Red Hat\", \"productName\": \"KVM\", \"serialNumber\": \"\","
		"   \"virtual\": true}}";
	const char *want =
		"{\"systemVendor\":{\"manufacturer\":\"Red Hat\",\"productName\":\"KVM\"},\"firmware\":{\"bios\":{}},"
		"\"ramMebibytes\":16384,"
		"\"nics\":[{\"name\":\"eth0\",\"model\":\"0x8086\",\"mac\":\"52:54:00:AA:BB:CC\",\"ip\":\"fe80::1\"},"
		"{\"name\":\"eth0\",\"model\":\"0x8086\",\"mac\":\"52:54:00:AA:BB:CC\",\"ip\":\"192.168.1.10\"},"
		"{\"name\":\"eth2\",\"mac\":\"52:54:00:00:00:03\",\"ip\":\"10.0.0.3\",\"speedGbps\":25}],"
		"\"storage\":[{\"name\":\"/dev/disk/by-path/pci-0\",\"rotational\":true,\"sizeBytes\":120000000000,"
		"\"vendor\":\"ATA\",\"model\":\"QEMU \\u003cHARDDISK\\u003e\",\"serialNumber\":\"S1\",\"hctl\":\"0:0:0:0\"},"
		"{\"name\":\"/dev/vdb\",\"wwn\":\"0x5000\"}],"
		"\"cpu\":{\"arch\":\"x86_64\",\"model\":\"Intel \\u0026 co\",\"clockMegahertz\":2400.5,"
		"\"flags\":[\"fpu\",\"vme\"],\"count\":4},\"hostname\":\"host-a\"}";
	json_t *inv = json_loads(inv_text, 0, NULL);
	char *out = NULL;

	(void)state;
	assert_non_null(inv);
	assert_int_equal(bmh_hardware_details(inv, NULL, &out), 0);
	assert_string_equal(out, want);
	free(out);
	/* The Agent's spec hostname wins over the inventory's. */
	assert_int_equal(bmh_hardware_details(inv, "spec-name", &out), 0);
	assert_non_null(strstr(out, ",\"hostname\":\"spec-name\"}"));
	free(out);
	json_decref(inv);
	/* Nothing known: the struct-typed fields stay, zero values go. */
	inv = json_object();
	assert_int_equal(bmh_hardware_details(inv, "", &out), 0);
	assert_string_equal(out, "{\"systemVendor\":{},\"firmware\":{\"bios\":{}},\"cpu\":{}}");
	free(out);
	json_decref(inv);
}

/* One row per transition of BMO's state machine the hub runs. */
static void test_state_steps(void **state)
{
	static const struct {
		struct bmh_facts f;
		const char *next;
		enum bmh_action action;
		const char *then;
	} rows[] = {
		{ { .state = "" }, "registering", BMH_ACT_NONE, NULL },
		{ { .state = "", .deleting = true }, "deleting", BMH_ACT_NONE, NULL },
		{ { .state = "registering" }, NULL, BMH_ACT_REGISTER, "preparing" },
		{ { .state = "registering", .deleting = true }, "deleting", BMH_ACT_NONE, NULL },
		{ { .state = "inspecting" }, "available", BMH_ACT_NONE, NULL },
		{ { .state = "preparing" }, "available", BMH_ACT_NONE, NULL },
		{ { .state = "match profile" }, "available", BMH_ACT_NONE, NULL },
		{ { .state = "preparing", .deleting = true }, "powering off before delete", BMH_ACT_NONE, NULL },
		/* available: provisions only when online with an image */
		{ { .state = "available", .online = true, .image = true }, "provisioning", BMH_ACT_NONE, NULL },
		{ { .state = "ready", .online = true, .image = true }, "provisioning", BMH_ACT_NONE, NULL },
		{ { .state = "available", .online = false, .image = true }, NULL, BMH_ACT_NONE, NULL },
		{ { .state = "available", .online = false, .image = true, .powered_on = true }, NULL, BMH_ACT_POWER_OFF,
		  NULL },
		{ { .state = "available", .online = true }, NULL, BMH_ACT_POWER_ON, NULL },
		{ { .state = "available", .online = true, .powered_on = true }, NULL, BMH_ACT_NONE, NULL },
		{ { .state = "available", .online = true, .powered_on = true, .reboot = true }, NULL, BMH_ACT_REBOOT,
		  NULL },
		{ { .state = "available", .deleting = true, .online = true, .image = true }, "powering off before delete",
		  BMH_ACT_NONE, NULL },
		/* provisioning: the live-ISO deploy, unless the image moved */
		{ { .state = "provisioning", .online = true, .image = true }, NULL, BMH_ACT_PROVISION, "provisioned" },
		{ { .state = "provisioning", .image = true, .image_changed = true }, "deprovisioning", BMH_ACT_NONE, NULL },
		{ { .state = "provisioning" }, "deprovisioning", BMH_ACT_NONE, NULL },
		{ { .state = "provisioning", .image = true, .deleting = true }, "deprovisioning", BMH_ACT_NONE, NULL },
		/* provisioned: image removed or changed deprovisions; else power */
		{ { .state = "provisioned", .online = true, .image = true, .powered_on = true }, NULL, BMH_ACT_NONE, NULL },
		{ { .state = "provisioned", .online = true, .image = false, .image_changed = true }, "deprovisioning",
		  BMH_ACT_NONE, NULL },
		{ { .state = "provisioned", .online = true, .image = true, .image_changed = true }, "deprovisioning",
		  BMH_ACT_NONE, NULL },
		{ { .state = "provisioned", .online = false, .image = true, .powered_on = true }, NULL, BMH_ACT_POWER_OFF,
		  NULL },
		{ { .state = "provisioned", .online = true, .image = true, .powered_on = true, .reboot = true }, NULL,
		  BMH_ACT_REBOOT, NULL },
		{ { .state = "provisioned", .online = false, .image = true, .reboot = true }, NULL, BMH_ACT_NONE, NULL },
		{ { .state = "provisioned", .image = true, .deleting = true }, "deprovisioning", BMH_ACT_NONE, NULL },
		{ { .state = "externally provisioned", .online = true }, NULL, BMH_ACT_POWER_ON, NULL },
		{ { .state = "externally provisioned", .deleting = true }, "powering off before delete", BMH_ACT_NONE,
		  NULL },
		/* deprovisioning: back to available, or on to delete */
		{ { .state = "deprovisioning" }, NULL, BMH_ACT_DEPROVISION, "available" },
		{ { .state = "deprovisioning", .deleting = true }, NULL, BMH_ACT_DEPROVISION,
		  "powering off before delete" },
		{ { .state = "powering off before delete", .deleting = true }, NULL, BMH_ACT_POWER_OFF, "deleting" },
		{ { .state = "deleting", .deleting = true }, NULL, BMH_ACT_NONE, NULL },
		{ { .state = "bogus" }, "registering", BMH_ACT_NONE, NULL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct bmh_step st;

		bmh_step(&rows[i].f, &st);
		if (rows[i].next)
			assert_string_equal(st.next, rows[i].next);
		else
			assert_null(st.next);
		assert_int_equal(st.action, rows[i].action);
		if (rows[i].then)
			assert_string_equal(st.then, rows[i].then);
		else
			assert_null(st.then);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bmc_address),    cmocka_unit_test(test_reboot_rules),
		cmocka_unit_test(test_detached_rules), cmocka_unit_test(test_go_float),
		cmocka_unit_test(test_hardware_details_bytes), cmocka_unit_test(test_state_steps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
