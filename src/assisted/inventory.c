/* inventory.c - parse, bound and re-shape the agent's hardware inventory.
 * The camelCase mapping mirrors the Agent CRD's HostInventory types; the
 * label rules mirror the agent controller (kubeapi spec §1.2 and §3). */
#include "assisted/inventory.h"
#include "base/util.h"

#include <errno.h>
#include <string.h>

json_t *inventory_of_host(const json_t *host)
{
	json_t *v = json_object_get(host, "inventory");

	if (json_is_object(v))
		return json_incref(v);
	if (json_is_string(v) && json_string_length(v) > 0) {
		json_t *p = json_loads(json_string_value(v), 0, NULL);

		if (json_is_object(p))
			return p;
		json_decref(p);
	}
	return NULL;
}

static int check_type(const json_t *inv, const char *key, json_type want, ah_err *err)
{
	json_t *v = json_object_get(inv, key);

	if (!v || json_is_null(v))
		return 0;
	if (want == JSON_INTEGER ? !json_is_number(v) : json_typeof(v) != want)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "inventory.%s has the wrong type", key);
	if (want == JSON_ARRAY && json_array_size(v) > INVENTORY_MAX_ITEMS)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "inventory.%s has too many items", key);
	return 0;
}

int inventory_validate(const json_t *inv, ah_err *err)
{
	static const char *arrays[] = { "interfaces", "disks", "gpus", "routes" };
	static const char *objects[] = { "cpu", "memory", "boot", "system_vendor", "truncation" };
	size_t n;
	int r;

	if (!json_is_object(inv))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "inventory must be a JSON object");
	/* JSON_COMPACT size without building the text twice for small inputs. */
	n = json_dumpb(inv, NULL, 0, JSON_COMPACT);
	if (n == 0 || n > INVENTORY_MAX_BYTES)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "inventory is larger than %u bytes",
				  INVENTORY_MAX_BYTES);
	for (size_t i = 0; i < sizeof(arrays) / sizeof(arrays[0]); i++)
		if ((r = check_type(inv, arrays[i], JSON_ARRAY, err)) < 0)
			return r;
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if ((r = check_type(inv, objects[i], JSON_OBJECT, err)) < 0)
			return r;
	if ((r = check_type(json_object_get(inv, "cpu"), "count", JSON_INTEGER, err)) < 0)
		return r;
	if ((r = check_type(json_object_get(inv, "memory"), "physical_bytes", JSON_INTEGER, err)) < 0)
		return r;
	return 0;
}

/* Copy src[from] to dst[to] when present and not null. */
static void cp(json_t *dst, const char *to, const json_t *src, const char *from)
{
	json_t *v = json_object_get(src, from);

	if (v && !json_is_null(v))
		json_object_set(dst, to, v);
}

/* Like cp but always sets an array (empty when missing). */
static void cp_list(json_t *dst, const char *to, const json_t *src, const char *from)
{
	json_t *v = json_object_get(src, from);

	json_object_set_new(dst, to, json_is_array(v) ? json_deep_copy(v) : json_array());
}

struct map { const char *to, *from; };

static json_t *map_obj(const json_t *src, const struct map *m)
{
	json_t *o = json_object();

	for (; m->to; m++)
		cp(o, m->to, src, m->from);
	return o;
}

static const struct map iface_map[] = {
	{ "vendor", "vendor" }, { "name", "name" }, { "hasCarrier", "has_carrier" },
	{ "product", "product" }, { "mtu", "mtu" }, { "biosDevName", "biosdevname" },
	{ "clientID", "client_id" }, { "macAddress", "mac_address" }, { "speedMbps", "speed_mbps" },
	{ NULL, NULL } };
static const struct map disk_map[] = {
	{ "driveType", "drive_type" }, { "vendor", "vendor" }, { "name", "name" }, { "path", "path" },
	{ "hctl", "hctl" }, { "byPath", "by_path" }, { "byID", "by_id" }, { "model", "model" },
	{ "wwn", "wwn" }, { "serial", "serial" }, { "sizeBytes", "size_bytes" },
	{ "bootable", "bootable" }, { "smart", "smart" }, { NULL, NULL } };
static const struct map gpu_map[] = {
	{ "address", "address" }, { "deviceID", "device_id" }, { "name", "name" },
	{ "vendor", "vendor" }, { "vendorID", "vendor_id" }, { NULL, NULL } };

json_t *inventory_to_agent_status(const json_t *inv)
{
	json_t *o = json_object(), *sub, *arr, *v;
	size_t i;

	if (!json_is_object(inv))
		return o;
	cp(o, "hostname", inv, "hostname");
	cp(o, "bmcAddress", inv, "bmc_address");
	cp(o, "bmcV6Address", inv, "bmc_v6address");
	if ((sub = json_object_get(inv, "memory")) && json_is_object(sub)) {
		static const struct map m[] = { { "physicalBytes", "physical_bytes" },
						{ "usableBytes", "usable_bytes" }, { NULL, NULL } };
		json_object_set_new(o, "memory", map_obj(sub, m));
	}
	if ((sub = json_object_get(inv, "cpu")) && json_is_object(sub)) {
		static const struct map m[] = { { "count", "count" }, { "clockMegahertz", "frequency" },
						{ "flags", "flags" }, { "modelName", "model_name" },
						{ "architecture", "architecture" }, { NULL, NULL } };
		json_t *c = map_obj(sub, m);

		/* Upstream frequency is a float; the CRD field is an integer. */
		if ((v = json_object_get(c, "clockMegahertz")) && json_is_real(v))
			json_object_set_new(c, "clockMegahertz", json_integer(util_double_to_i64(json_real_value(v))));
		json_object_set_new(o, "cpu", c);
	}
	arr = json_array();
	json_array_foreach(json_object_get(inv, "interfaces"), i, v) {
		json_t *x = map_obj(v, iface_map);

		cp_list(x, "ipV4Addresses", v, "ipv4_addresses");
		cp_list(x, "ipV6Addresses", v, "ipv6_addresses");
		cp_list(x, "flags", v, "flags");
		json_array_append_new(arr, x);
	}
	json_object_set_new(o, "interfaces", arr);
	arr = json_array();
	json_array_foreach(json_object_get(inv, "disks"), i, v) {
		json_t *x = map_obj(v, disk_map), *el = json_object_get(v, "installation_eligibility");
		json_t *e = json_object(), *io = json_object_get(v, "io_perf");

		json_t *id = json_object_get(v, "id");
		json_object_set_new(x, "id", json_string(json_is_string(id) ? json_string_value(id) : ""));
		cp(e, "eligible", el, "eligible");
		cp_list(e, "notEligibleReasons", el, "not_eligible_reasons");
		json_object_set_new(x, "installationEligibility", e);
		if (json_is_object(io)) {
			json_t *p = json_object();

			cp(p, "syncDurationMilliseconds", io, "sync_duration");
			json_object_set_new(x, "ioPerf", p);
		}
		json_array_append_new(arr, x);
	}
	json_object_set_new(o, "disks", arr);
	if ((sub = json_object_get(inv, "boot")) && json_is_object(sub)) {
		static const struct map m[] = { { "currentBootMode", "current_boot_mode" },
						{ "pxeInterface", "pxe_interface" },
						{ "deviceType", "device_type" }, { NULL, NULL } };
		json_object_set_new(o, "boot", map_obj(sub, m));
	}
	if ((sub = json_object_get(inv, "system_vendor")) && json_is_object(sub)) {
		static const struct map m[] = { { "serialNumber", "serial_number" },
						{ "productName", "product_name" },
						{ "manufacturer", "manufacturer" }, { "virtual", "virtual" },
						{ NULL, NULL } };
		json_object_set_new(o, "systemVendor", map_obj(sub, m));
	}
	if (json_is_array(json_object_get(inv, "gpus"))) {
		arr = json_array();
		json_array_foreach(json_object_get(inv, "gpus"), i, v)
			json_array_append_new(arr, map_obj(v, gpu_map));
		json_object_set_new(o, "gpus", arr);
	}
	return o;
}

static bool label_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_' || c == '.';
}

static bool alnum(char c)
{
	return label_char(c) && c != '-' && c != '_' && c != '.';
}

bool inventory_label_value(const char *in, char *buf, size_t size)
{
	size_t n = 0;

	for (; in && *in && n + 1 < size; in++)
		if (label_char(*in))
			buf[n++] = *in;
	buf[n] = '\0';
	/* ^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$ and at most 63 chars. */
	if (n == 0)
		return true;
	return n <= 63 && alnum(buf[0]) && alnum(buf[n - 1]);
}

static void add_label(json_t *o, const char *key, const char *value)
{
	char buf[256];
	char full[128];

	if (!inventory_label_value(value, buf, sizeof(buf)))
		return;
	snprintf(full, sizeof(full), "inventory.agent-install.openshift.io/%s", key);
	json_object_set_new(o, full, json_string(buf));
}

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

json_t *inventory_labels(const json_t *inv)
{
	json_t *o = json_object(), *v, *cpu, *sv;
	bool ssd = false, virt = false;
	size_t i;

	if (!json_is_object(inv))
		return o;
	json_array_foreach(json_object_get(inv, "disks"), i, v)
		if (strcmp(sget(v, "drive_type"), "SSD") == 0)
			ssd = true;
	add_label(o, "storage-hasnonrotationaldisk", ssd ? "true" : "false");
	cpu = json_object_get(inv, "cpu");
	add_label(o, "cpu-architecture", sget(cpu, "architecture"));
	json_array_foreach(json_object_get(cpu, "flags"), i, v) {
		const char *f = json_string_value(v);

		if (f && (!strcmp(f, "vmx") || !strcmp(f, "svm")))
			virt = true;
	}
	add_label(o, "cpu-virtenabled", virt ? "true" : "false");
	sv = json_object_get(inv, "system_vendor");
	add_label(o, "host-manufacturer", sget(sv, "manufacturer"));
	add_label(o, "host-productname", sget(sv, "product_name"));
	add_label(o, "host-isvirtual", json_is_true(json_object_get(sv, "virtual")) ? "true" : "false");
	return o;
}
