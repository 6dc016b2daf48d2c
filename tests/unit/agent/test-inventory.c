/* test-inventory.c - the inventory readers over a fake /proc, /sys and /dev tree built in
 * a temporary directory, plus a smoke run on the real machine. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/inventory.h"

static char root[PATH_MAX];

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(tmp, 0755);
			*p = '/';
		}
	}
	mkdir(tmp, 0755);
}

static void put(const char *rel, const void *data, size_t len)
{
	char path[2 * PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	*strrchr(path, '/') = '\0';
	mkdirs(path);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void puts_(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

static void link_(const char *rel, const char *target)
{
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	*strrchr(path, '/') = '\0';
	mkdirs(path);
	snprintf(path, sizeof(path), "%s%s", root, rel);
	assert_int_equal(symlink(target, path), 0);
}

static void dir_(const char *rel)
{
	char path[2 * PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", root, rel);
	mkdirs(path);
}

static int setup(void **state)
{
	unsigned char mbr[512] = { 0 };
	unsigned char sb[5] = { 6, 0, 0, 0, 1 };
	char rel[128];

	snprintf(root, sizeof(root), "%s/ah-inv-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert_non_null(mkdtemp(root));

	puts_("/proc/cpuinfo",
	      "processor\t: 0\nmodel name\t: Fake CPU @ 2.00GHz\ncpu MHz\t\t: 1999.5\n"
	      "flags\t\t: fpu vme sse2 vmx hypervisor\n\n"
	      "processor\t: 1\nmodel name\t: Fake CPU @ 2.00GHz\ncpu MHz\t\t: 2100.0\n"
	      "flags\t\t: fpu vme sse2 vmx hypervisor\n\n");
	puts_("/proc/sys/kernel/arch", "x86_64\n");
	puts_("/proc/sys/kernel/hostname", "fakehost\n");
	puts_("/proc/meminfo", "MemTotal:       16303100 kB\nMemFree:         1000 kB\n");
	puts_("/sys/devices/system/memory/block_size_bytes", "40000000\n");
	for (int i = 0; i < 16; i++) {
		snprintf(rel, sizeof(rel), "/sys/devices/system/memory/memory%d/online", i);
		puts_(rel, "1\n");
	}
	puts_("/sys/devices/system/memory/memory16/online", "0\n");

	/* sda: a bootable SSD with stable names; sdb: a removable HDD with a mounted
	 * partition; sr0: the live ISO; loop0 and a hidden nvme: not reported. */
	puts_("/sys/block/sda/size", "250069680\n");
	puts_("/sys/block/sda/queue/rotational", "0\n");
	puts_("/sys/block/sda/removable", "0\n");
	puts_("/sys/devices/pci/host0/0:0:0:0/model", "Samsung SSD 860\n");
	puts_("/sys/devices/pci/host0/0:0:0:0/vendor", "ATA     \n");
	puts_("/sys/devices/pci/host0/0:0:0:0/wwid", "naa.5002538e40a1b2c3\n");
	link_("/sys/block/sda/device", "../../devices/pci/host0/0:0:0:0");
	link_("/dev/disk/by-id/wwn-0x5002538e40a1b2c3", "../../sda");
	link_("/dev/disk/by-path/pci-0000:00:1f.2-ata-1", "../../sda");
	link_("/dev/disk/by-path/pci-0000:00:1f.2-ata-2", "../../sdb");
	mbr[510] = 0x55;
	mbr[511] = 0xaa;
	put("/dev/sda", mbr, sizeof(mbr));
	puts_("/sys/block/sdb/size", "2000\n");
	puts_("/sys/block/sdb/queue/rotational", "1\n");
	puts_("/sys/block/sdb/removable", "1\n");
	puts_("/sys/block/sr0/size", "2097152\n");
	puts_("/sys/block/sr0/removable", "1\n");
	puts_("/sys/block/loop0/size", "100\n");
	puts_("/sys/block/nvme0n1/size", "100\n");
	puts_("/sys/block/nvme0n1/hidden", "1\n");
	puts_("/proc/mounts", "/dev/sdb1 /mnt ext4 rw 0 0\n/dev/sr0 /run/media/iso iso9660 ro 0 0\n");

	puts_("/sys/class/net/lo/address", "00:00:00:00:00:00\n");
	puts_("/sys/class/net/eth0/address", "52:54:00:aa:bb:01\n");
	puts_("/sys/class/net/eth0/mtu", "1500\n");
	puts_("/sys/class/net/eth0/speed", "1000\n");
	puts_("/sys/class/net/eth0/carrier", "1\n");
	puts_("/sys/class/net/eth0/flags", "0x1003\n");
	puts_("/sys/class/net/eth0/device/vendor", "0x8086\n");
	puts_("/sys/class/net/eth0/device/device", "0x100e\n");
	puts_("/sys/class/net/bond0/address", "52:54:00:aa:bb:02\n");
	dir_("/sys/class/net/bond0/bonding");
	puts_("/sys/class/net/veth9/address", "52:54:00:aa:bb:03\n");

	puts_("/proc/net/route",
	      "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	      "eth0\t00000000\t0102010A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
	      "eth0\t0002010A\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n");
	puts_("/proc/net/ipv6_route",
	      "00000000000000000000000000000000 00 00000000000000000000000000000000 00 "
	      "fd000000000000000000000000000001 00000400 00000001 00000000 00000003     eth0\n"
	      "00000000000000000000000000000001 80 00000000000000000000000000000000 00 "
	      "00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo\n");

	dir_("/sys/firmware/efi");
	put("/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c", sb, sizeof(sb));
	puts_("/proc/cmdline", "BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=rhcos-417 ignition.firstboot\n");
	puts_("/sys/class/dmi/id/sys_vendor", "Dell Inc.\n");
	puts_("/sys/class/dmi/id/product_name", "PowerEdge R640\n");
	puts_("/sys/class/dmi/id/product_serial", "SER123\n");
	puts_("/sys/class/dmi/id/product_uuid", "4C4C4544-0042-3510-8051-B5C04F4E3232\n");
	puts_("/sys/class/tpm/tpm0/tpm_version_major", "2\n");
	puts_("/sys/bus/pci/devices/0000:00:02.0/class", "0x030000\n");
	puts_("/sys/bus/pci/devices/0000:00:02.0/vendor", "0x1234\n");
	puts_("/sys/bus/pci/devices/0000:00:02.0/device", "0x1111\n");
	puts_("/sys/bus/pci/devices/0000:00:03.0/class", "0x020000\n");
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

#define STR(obj, key) json_string_value(json_object_get((obj), (key)))
#define INT(obj, key) json_integer_value(json_object_get((obj), (key)))
#define BOOL(obj, key) json_is_true(json_object_get((obj), (key)))

static void test_cpu(void **state)
{
	json_t *cpu = inventory_cpu(root);

	assert_int_equal(INT(cpu, "count"), 2);
	assert_string_equal(STR(cpu, "model_name"), "Fake CPU @ 2.00GHz");
	assert_string_equal(STR(cpu, "architecture"), "x86_64");
	assert_true(json_real_value(json_object_get(cpu, "frequency")) == 2100.0);
	assert_int_equal(json_array_size(json_object_get(cpu, "flags")), 5);
	assert_string_equal(json_string_value(json_array_get(json_object_get(cpu, "flags"), 3)), "vmx");
	json_decref(cpu);
}

static void test_memory(void **state)
{
	json_t *m = inventory_memory(root);

	assert_int_equal(INT(m, "usable_bytes"), 16303100LL * 1024);
	assert_int_equal(INT(m, "physical_bytes"), 16LL << 30);
	assert_string_equal(STR(m, "physical_bytes_method"), "ghw");
	json_decref(m);
}

static json_t *disk_named(json_t *disks, const char *name)
{
	size_t i;
	json_t *d;

	json_array_foreach(disks, i, d)
		if (!strcmp(STR(d, "name"), name))
			return d;
	return NULL;
}

static void test_disks(void **state)
{
	json_t *disks = inventory_disks(root), *d, *e;

	assert_int_equal(json_array_size(disks), 3);
	assert_null(disk_named(disks, "loop0"));
	assert_null(disk_named(disks, "nvme0n1"));

	d = disk_named(disks, "sda");
	assert_non_null(d);
	assert_string_equal(STR(d, "path"), "/dev/sda");
	assert_string_equal(STR(d, "drive_type"), "SSD");
	assert_int_equal(INT(d, "size_bytes"), 250069680LL * 512);
	assert_string_equal(STR(d, "model"), "Samsung SSD 860");
	assert_string_equal(STR(d, "vendor"), "ATA");
	assert_string_equal(STR(d, "wwn"), "naa.5002538e40a1b2c3");
	assert_string_equal(STR(d, "hctl"), "0:0:0:0");
	assert_string_equal(STR(d, "by_id"), "/dev/disk/by-id/wwn-0x5002538e40a1b2c3");
	assert_string_equal(STR(d, "by_path"), "/dev/disk/by-path/pci-0000:00:1f.2-ata-1");
	assert_string_equal(STR(d, "id"), "/dev/disk/by-id/wwn-0x5002538e40a1b2c3");
	assert_true(BOOL(d, "bootable"));
	assert_false(BOOL(d, "removable"));
	e = json_object_get(d, "installation_eligibility");
	assert_true(BOOL(e, "eligible"));
	assert_int_equal(json_array_size(json_object_get(e, "not_eligible_reasons")), 0);

	d = disk_named(disks, "sdb");
	assert_string_equal(STR(d, "drive_type"), "HDD");
	assert_true(BOOL(d, "removable"));
	assert_false(BOOL(d, "bootable"));
	assert_string_equal(STR(d, "id"), "/dev/disk/by-path/pci-0000:00:1f.2-ata-2");
	e = json_object_get(d, "installation_eligibility");
	assert_false(BOOL(e, "eligible"));
	assert_string_equal(json_string_value(json_array_get(json_object_get(e, "not_eligible_reasons"), 0)),
			    "Disk has mounted partitions");

	d = disk_named(disks, "sr0");
	assert_string_equal(STR(d, "drive_type"), "ODD");
	assert_string_equal(STR(d, "id"), "/dev/sr0");
	assert_true(BOOL(d, "is_installation_media"));
	assert_false(BOOL(json_object_get(d, "installation_eligibility"), "eligible"));
	json_decref(disks);
}

static void test_interfaces(void **state)
{
	struct sockaddr_in addr = { .sin_family = AF_INET }, mask = { .sin_family = AF_INET };
	struct ifaddrs ifa = { .ifa_name = "eth0", .ifa_addr = (struct sockaddr *)&addr,
			       .ifa_netmask = (struct sockaddr *)&mask };
	json_t *list, *it, *flags;

	inet_pton(AF_INET, "10.1.2.3", &addr.sin_addr);
	inet_pton(AF_INET, "255.255.255.0", &mask.sin_addr);
	list = inventory_interfaces(root, &ifa);
	/* lo and the veth are not reported; eth0 is physical, bond0 a bond. */
	assert_int_equal(json_array_size(list), 2);
	it = json_array_get(list, 1);
	assert_string_equal(STR(it, "name"), "eth0");
	assert_string_equal(STR(it, "type"), "physical");
	assert_string_equal(STR(it, "mac_address"), "52:54:00:aa:bb:01");
	assert_string_equal(json_string_value(json_array_get(json_object_get(it, "ipv4_addresses"), 0)), "10.1.2.3/24");
	assert_int_equal(json_array_size(json_object_get(it, "ipv6_addresses")), 0);
	assert_int_equal(INT(it, "mtu"), 1500);
	assert_int_equal(INT(it, "speed_mbps"), 1000);
	assert_true(BOOL(it, "has_carrier"));
	assert_string_equal(STR(it, "vendor"), "0x8086");
	flags = json_object_get(it, "flags");
	assert_int_equal(json_array_size(flags), 3);
	assert_string_equal(json_string_value(json_array_get(flags, 0)), "up");
	assert_string_equal(json_string_value(json_array_get(flags, 2)), "multicast");
	it = json_array_get(list, 0);
	assert_string_equal(STR(it, "name"), "bond0");
	assert_string_equal(STR(it, "type"), "bond");
	json_decref(list);
}

static void test_routes(void **state)
{
	json_t *r = inventory_routes(root), *e;

	assert_int_equal(json_array_size(r), 3);
	e = json_array_get(r, 0);
	assert_string_equal(STR(e, "interface"), "eth0");
	assert_string_equal(STR(e, "destination"), "0.0.0.0");
	assert_string_equal(STR(e, "gateway"), "10.1.2.1");
	assert_int_equal(INT(e, "family"), AF_INET);
	assert_int_equal(INT(e, "metric"), 100);
	assert_string_equal(STR(json_array_get(r, 1), "destination"), "10.1.2.0");
	e = json_array_get(r, 2);
	assert_string_equal(STR(e, "destination"), "::");
	assert_string_equal(STR(e, "gateway"), "fd00::1");
	assert_int_equal(INT(e, "family"), AF_INET6);
	assert_int_equal(INT(e, "metric"), 1024);
	json_decref(r);
}

static void test_boot_vendor_tpm_gpu(void **state)
{
	json_t *b = inventory_boot(root), *v = inventory_system_vendor(root), *g = inventory_gpus(root);

	assert_string_equal(STR(b, "current_boot_mode"), "uefi");
	assert_string_equal(STR(b, "secure_boot_state"), "Enabled");
	assert_string_equal(STR(b, "device_type"), "ephemeral");
	assert_non_null(strstr(STR(b, "command_line"), "coreos.liveiso=rhcos-417"));
	assert_string_equal(STR(v, "manufacturer"), "Dell Inc.");
	assert_string_equal(STR(v, "product_name"), "PowerEdge R640");
	assert_string_equal(STR(v, "serial_number"), "SER123");
	assert_true(BOOL(v, "virtual")); /* the cpuinfo flags say "hypervisor" */
	assert_string_equal(inventory_tpm_version(root), "2.0");
	assert_int_equal(json_array_size(g), 1);
	assert_string_equal(STR(json_array_get(g, 0), "vendor_id"), "1234");
	assert_string_equal(STR(json_array_get(g, 0), "address"), "0000:00:02.0");
	json_decref(b);
	json_decref(v);
	json_decref(g);
}

static void test_collect_and_host_id(void **state)
{
	json_t *inv = NULL;
	ah_err err = { 0 };
	char id[37], rel[PATH_MAX + 16];
	static const char *const keys[] = { "cpu", "memory", "disks", "interfaces", "routes", "boot",
					    "system_vendor", "gpus", "hostname", "tpm_version" };

	assert_int_equal(inventory_collect(root, &inv, &err), 0);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_non_null(json_object_get(inv, keys[i]));
	assert_string_equal(STR(inv, "hostname"), "fakehost");
	/* A fake tree has no addresses. */
	assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(inv, "interfaces"), 1),
							 "ipv4_addresses")), 0);
	json_decref(inv);

	/* Host id: SMBIOS UUID lower-cased; a placeholder UUID falls through to the MAC;
	 * a baseboard serial wins over both. */
	inventory_host_id(root, id, sizeof(id));
	assert_string_equal(id, "4c4c4544-0042-3510-8051-b5c04f4e3232");
	puts_("/sys/class/dmi/id/product_uuid", "03000200-0400-0500-0006-000700080009\n");
	inventory_host_id(root, id, sizeof(id));
	assert_string_equal(id, "a0d9e086-ae60-bd63-5910-fed4736ccffa"); /* md5("52:54:00:aa:bb:01") */
	puts_("/sys/class/dmi/id/board_serial", "BSN-42\n");
	inventory_host_id(root, id, sizeof(id));
	assert_string_equal(id, "8c790540-aaaa-7956-4bf3-19dc71ec4890"); /* md5("BSN-42") */
	snprintf(rel, sizeof(rel), "%s/nonexistent", root);
	inventory_host_id(rel, id, sizeof(id));
	assert_string_equal(id, "deaddead-dead-dead-dead-deaddeaddead");
}

static void test_real_machine(void **state)
{
	json_t *inv = NULL, *cpu, *mem;
	ah_err err = { 0 };

	assert_int_equal(inventory_collect("/", &inv, &err), 0);
	cpu = json_object_get(inv, "cpu");
	mem = json_object_get(inv, "memory");
	assert_true(INT(cpu, "count") > 0);
	assert_true(INT(mem, "physical_bytes") > 0);
	assert_true(INT(mem, "usable_bytes") > 0);
	assert_true(INT(mem, "physical_bytes") >= INT(mem, "usable_bytes"));
	assert_true(strlen(STR(cpu, "architecture")) > 0);
	assert_true(json_is_array(json_object_get(inv, "disks")));
	assert_true(json_is_array(json_object_get(inv, "interfaces")));
	json_decref(inv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_disks),
		cmocka_unit_test(test_interfaces),
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_boot_vendor_tpm_gpu),
		cmocka_unit_test(test_collect_and_host_id),
		cmocka_unit_test(test_real_machine),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
