/* test-inventory.c - inventory bounds, the Agent status.inventory mapping
 * (kubeapi §1.2) and the inventory labels (kubeapi §3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "assisted/inventory.h"

static void test_validate(void **state)
{
	static const struct {
		const char *json;
		int rc;
	} rows[] = {
		{ "{}", 0 },
		{ "{\"cpu\":{\"count\":4},\"memory\":{\"physical_bytes\":1},\"disks\":[],\"interfaces\":[]}", 0 },
		{ "[]", -EINVAL },
		{ "\"x\"", -EINVAL },
		{ "{\"disks\":{}}", -EINVAL },
		{ "{\"cpu\":[]}", -EINVAL },
		{ "{\"cpu\":{\"count\":\"4\"}}", -EINVAL },
		{ "{\"memory\":{\"physical_bytes\":true}}", -EINVAL },
		{ "{\"interfaces\":null}", 0 },
	};
	ah_err err;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *v = json_loads(rows[i].json, JSON_DECODE_ANY, NULL);

		assert_non_null(v);
		if (inventory_validate(v, &err) != rows[i].rc)
			fail_msg("row %zu", i);
		if (rows[i].rc)
			assert_int_equal(err.status, 400);
		json_decref(v);
	}
}

static void test_validate_bounds(void **state)
{
	json_t *inv = json_object(), *disks = json_array();
	ah_err err;

	for (int i = 0; i < INVENTORY_MAX_ITEMS + 1; i++)
		json_array_append_new(disks, json_object());
	json_object_set_new(inv, "disks", disks);
	assert_int_equal(inventory_validate(inv, &err), -EINVAL);
	json_object_set_new(inv, "disks", json_array());
	json_object_set_new(inv, "hostname", json_pack("s%", "x", (size_t)1));
	{
		char *big = calloc(INVENTORY_MAX_BYTES + 2, 1);

		memset(big, 'a', INVENTORY_MAX_BYTES + 1);
		json_object_set_new(inv, "hostname", json_string(big));
		free(big);
	}
	assert_int_equal(inventory_validate(inv, &err), -EINVAL);
	json_decref(inv);
	assert_int_equal(inventory_validate(NULL, &err), -EINVAL);
}

static void test_of_host(void **state)
{
	json_t *h = json_pack("{s:s}", "inventory", "{\"hostname\":\"a\"}"), *inv;

	inv = inventory_of_host(h);
	assert_string_equal(json_string_value(json_object_get(inv, "hostname")), "a");
	json_decref(inv);
	json_object_set_new(h, "inventory", json_string("not json"));
	assert_null(inventory_of_host(h));
	json_object_set_new(h, "inventory", json_string(""));
	assert_null(inventory_of_host(h));
	json_object_set_new(h, "inventory", json_pack("{s:s}", "hostname", "b"));
	inv = inventory_of_host(h);
	assert_string_equal(json_string_value(json_object_get(inv, "hostname")), "b");
	json_decref(inv);
	json_decref(h);
}

static void test_agent_status(void **state)
{
	static const char in[] =
		"{\"hostname\":\"h\",\"bmc_address\":\"1.2.3.4\",\"bmc_v6address\":\"::1\","
		"\"memory\":{\"physical_bytes\":100,\"usable_bytes\":90,\"physical_bytes_method\":\"dmidecode\"},"
		"\"cpu\":{\"count\":4,\"frequency\":2400.5,\"flags\":[\"vmx\"],\"model_name\":\"X\",\"architecture\":\"x86_64\"},"
		"\"interfaces\":[{\"name\":\"eth0\",\"mac_address\":\"m\",\"ipv4_addresses\":[\"10.0.0.1/24\"],\"has_carrier\":true,"
		"\"biosdevname\":\"em1\",\"client_id\":\"c\",\"speed_mbps\":1000,\"mtu\":1500,\"vendor\":\"v\",\"product\":\"p\"}],"
		"\"disks\":[{\"id\":\"/dev/disk/by-id/x\",\"name\":\"sda\",\"drive_type\":\"SSD\",\"by_id\":\"/dev/disk/by-id/x\","
		"\"by_path\":\"/dev/disk/by-path/y\",\"size_bytes\":5,\"bootable\":true,\"io_perf\":{\"sync_duration\":3},"
		"\"installation_eligibility\":{\"eligible\":true}},{\"name\":\"sdb\"}],"
		"\"boot\":{\"current_boot_mode\":\"uefi\",\"pxe_interface\":\"eth0\",\"device_type\":\"persistent\"},"
		"\"system_vendor\":{\"manufacturer\":\"M\",\"product_name\":\"P\",\"serial_number\":\"S\",\"virtual\":true},"
		"\"gpus\":[{\"vendor\":\"NVIDIA\",\"vendor_id\":\"10de\",\"device_id\":\"1\",\"name\":\"g\",\"address\":\"0000:01\"}]}";
	static const char want[] =
		"{\"hostname\":\"h\",\"bmcAddress\":\"1.2.3.4\",\"bmcV6Address\":\"::1\","
		"\"memory\":{\"physicalBytes\":100,\"usableBytes\":90},"
		"\"cpu\":{\"count\":4,\"clockMegahertz\":2400,\"flags\":[\"vmx\"],\"modelName\":\"X\",\"architecture\":\"x86_64\"},"
		"\"interfaces\":[{\"name\":\"eth0\",\"macAddress\":\"m\",\"ipV4Addresses\":[\"10.0.0.1/24\"],\"ipV6Addresses\":[],"
		"\"flags\":[],\"hasCarrier\":true,\"biosDevName\":\"em1\",\"clientID\":\"c\",\"speedMbps\":1000,\"mtu\":1500,"
		"\"vendor\":\"v\",\"product\":\"p\"}],"
		"\"disks\":[{\"id\":\"/dev/disk/by-id/x\",\"name\":\"sda\",\"driveType\":\"SSD\",\"byID\":\"/dev/disk/by-id/x\","
		"\"byPath\":\"/dev/disk/by-path/y\",\"sizeBytes\":5,\"bootable\":true,\"ioPerf\":{\"syncDurationMilliseconds\":3},"
		"\"installationEligibility\":{\"eligible\":true,\"notEligibleReasons\":[]}},"
		"{\"id\":\"\",\"name\":\"sdb\",\"installationEligibility\":{\"notEligibleReasons\":[]}}],"
		"\"boot\":{\"currentBootMode\":\"uefi\",\"pxeInterface\":\"eth0\",\"deviceType\":\"persistent\"},"
		"\"systemVendor\":{\"manufacturer\":\"M\",\"productName\":\"P\",\"serialNumber\":\"S\",\"virtual\":true},"
		"\"gpus\":[{\"vendor\":\"NVIDIA\",\"vendorID\":\"10de\",\"deviceID\":\"1\",\"name\":\"g\",\"address\":\"0000:01\"}]}";
	json_t *i = json_loads(in, 0, NULL), *w = json_loads(want, 0, NULL), *got = inventory_to_agent_status(i);

	if (!json_equal(got, w)) {
		char *s = json_dumps(got, JSON_SORT_KEYS);

		fail_msg("%s", s);
	}
	json_decref(got);
	got = inventory_to_agent_status(NULL);
	assert_int_equal(json_object_size(got), 0);
	json_decref(got);
	json_decref(i);
	json_decref(w);
}

static void test_label_values(void **state)
{
	static const struct {
		const char *in, *out;
		bool ok;
	} rows[] = {
		{ "Red Hat", "RedHat", true },
		{ "QEMU", "QEMU", true },
		{ "KVM (RHEL 9)", "KVMRHEL9", true },
		{ "", "", true },
		{ "-abc-", "-abc-", false },
		{ "Dell Inc.", "DellInc.", false },
		{ "a_b.c-d", "a_b.c-d", true },
		{ "0123456789012345678901234567890123456789012345678901234567890123", NULL, false },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		bool ok = inventory_label_value(rows[i].in, buf, sizeof(buf));

		if (ok != rows[i].ok || (rows[i].out && strcmp(buf, rows[i].out) != 0))
			fail_msg("row %zu: %d '%s'", i, ok, buf);
	}
}

static void test_labels(void **state)
{
	static const struct {
		const char *inv, *want;
	} rows[] = {
		{ "{\"disks\":[{\"drive_type\":\"HDD\"},{\"drive_type\":\"SSD\"}],\"cpu\":{\"architecture\":\"x86_64\",\"flags\":[\"svm\"]},"
		  "\"system_vendor\":{\"manufacturer\":\"Red Hat\",\"product_name\":\"KVM\",\"virtual\":true}}",
		  "{\"inventory.agent-install.openshift.io/storage-hasnonrotationaldisk\":\"true\","
		  "\"inventory.agent-install.openshift.io/cpu-architecture\":\"x86_64\","
		  "\"inventory.agent-install.openshift.io/cpu-virtenabled\":\"true\","
		  "\"inventory.agent-install.openshift.io/host-manufacturer\":\"RedHat\","
		  "\"inventory.agent-install.openshift.io/host-productname\":\"KVM\","
		  "\"inventory.agent-install.openshift.io/host-isvirtual\":\"true\"}" },
		{ "{\"disks\":[{\"drive_type\":\"HDD\"}],\"cpu\":{\"architecture\":\"aarch64\",\"flags\":[]},"
		  "\"system_vendor\":{\"manufacturer\":\"Dell Inc.\",\"product_name\":\"PowerEdge R640\"}}",
		  "{\"inventory.agent-install.openshift.io/storage-hasnonrotationaldisk\":\"false\","
		  "\"inventory.agent-install.openshift.io/cpu-architecture\":\"aarch64\","
		  "\"inventory.agent-install.openshift.io/cpu-virtenabled\":\"false\","
		  "\"inventory.agent-install.openshift.io/host-productname\":\"PowerEdgeR640\","
		  "\"inventory.agent-install.openshift.io/host-isvirtual\":\"false\"}" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *inv = json_loads(rows[i].inv, 0, NULL), *w = json_loads(rows[i].want, 0, NULL);
		json_t *got = inventory_labels(inv);

		if (!json_equal(got, w)) {
			char *s = json_dumps(got, JSON_SORT_KEYS);

			fail_msg("row %zu: %s", i, s);
		}
		json_decref(got);
		json_decref(inv);
		json_decref(w);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate),     cmocka_unit_test(test_validate_bounds),
		cmocka_unit_test(test_of_host),      cmocka_unit_test(test_agent_status),
		cmocka_unit_test(test_label_values), cmocka_unit_test(test_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
