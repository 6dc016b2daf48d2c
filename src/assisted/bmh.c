/* bmh.c - pure BareMetalHost rules: the BMC address grammar, BMO's reboot and
 * detached annotation rules, and the hardwaredetails JSON BMAC writes (byte
 * for byte Go's encoding of BMO's HardwareDetails: its field order, its
 * omitempty rules, its HTML-safe string escapes and float format). */
#include "assisted/bmh.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/strbuf.h"
#include "base/util.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int bmh_parse_bmc_address(const char *address, struct bmh_bmc *ret, ah_err *err)
{
	static const struct {
		const char *scheme;
		bool https;
	} schemes[] = {
		{ "redfish-virtualmedia+http", false },  { "redfish-virtualmedia+https", true },
		{ "redfish-virtualmedia", true },        { "idrac-virtualmedia+http", false },
		{ "idrac-virtualmedia+https", true },    { "idrac-virtualmedia", true },
	};
	const char *sep, *rest, *slash;
	size_t i, slen, hlen;

	memset(ret, 0, sizeof(*ret));
	if (!address || !*address)
		return ah_err_set(err, EINVAL, 422, "Invalid", "spec.bmc.address: empty BMC address");
	sep = strstr(address, "://");
	if (!sep)
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  "spec.bmc.address: no scheme in BMC address (want redfish-virtualmedia://HOST/redfish/v1/Systems/ID)");
	slen = (size_t)(sep - address);
	for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
		if (strlen(schemes[i].scheme) == slen && strncasecmp(address, schemes[i].scheme, slen) == 0)
			break;
	if (i == sizeof(schemes) / sizeof(schemes[0]))
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  "spec.bmc.address: unsupported BMC driver \"%.*s\" (supported: redfish-virtualmedia, "
				  "redfish-virtualmedia+http, idrac-virtualmedia)",
				  (int)(slen > 64 ? 64 : slen), address);
	ret->https = schemes[i].https;
	rest = sep + 3;
	slash = strchr(rest, '/');
	hlen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (hlen == 0 || hlen > 255 || memchr(rest, '@', hlen) || memchr(rest, '?', hlen))
		return ah_err_set(err, EINVAL, 422, "Invalid", "spec.bmc.address: bad or missing host in BMC address");
	snprintf(ret->base, sizeof(ret->base), "%s://%.*s", ret->https ? "https" : "http", (int)hlen, rest);
	if (slash) {
		size_t plen = strlen(slash);

		while (plen > 1 && slash[plen - 1] == '/')
			plen--;
		if (plen >= sizeof(ret->system) || strpbrk(slash, "?# \t\r\n"))
			return ah_err_set(err, EINVAL, 422, "Invalid", "spec.bmc.address: bad system path in BMC address");
		/* The service root alone names no system (BMO: the path is the
		 * system id unless it is /redfish/v1). */
		if (!((plen == 11 && strncmp(slash, "/redfish/v1", 11) == 0) || plen == 1))
			snprintf(ret->system, sizeof(ret->system), "%.*s", (int)plen, slash);
	}
	return 0;
}

/* A reboot value: JSON {"mode": "hard"|"soft", "force": bool}; empty or not
 * JSON counts as soft and not forced. */
static void reboot_value(const char *v, bool *hard, bool *force)
{
	json_t *j = v && *v ? json_loads(v, 0, NULL) : NULL;

	*hard = false;
	*force = false;
	if (json_is_object(j)) {
		const char *mode = jstr(j, "mode");

		*hard = mode && strcmp(mode, "hard") == 0;
		*force = json_is_true(json_object_get(j, "force"));
	}
	json_decref(j);
}

static bool provisioned_state(const char *state)
{
	return state && (strcmp(state, BMH_ST_PROVISIONED) == 0 || strcmp(state, BMH_ST_EXT_PROVISIONED) == 0);
}

bool bmh_reboot_requested(const json_t *annotations, const char *state, bool *ret_hard)
{
	bool expect_force = !provisioned_state(state), any = false, hard = false;
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)annotations, k, v) {
		bool h, f;

		if (strcmp(k, BMH_ANN_REBOOT) != 0 && strncmp(k, BMH_ANN_REBOOT "/", sizeof(BMH_ANN_REBOOT)) != 0)
			continue;
		reboot_value(json_string_value(v), &h, &f);
		if (expect_force && !f)
			continue;
		any = true;
		hard = hard || h;
	}
	if (ret_hard)
		*ret_hard = hard;
	return any;
}

bool bmh_detached(const json_t *annotations, const char *state)
{
	const json_t *v = json_object_get(annotations, BMH_ANN_DETACHED);
	bool hard, force;

	if (!json_is_string(v))
		return false;
	if (provisioned_state(state) ||
	    (state && (strcmp(state, BMH_ST_READY) == 0 || strcmp(state, BMH_ST_AVAILABLE) == 0)))
		return true;
	reboot_value(json_string_value(v), &hard, &force);
	return force;
}

/* --- the state machine -------------------------------------------------------------- */

static bool is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* spec.online and a reboot request, in a state where the host just runs. */
static void power(const struct bmh_facts *f, struct bmh_step *ret)
{
	if (f->online && f->reboot)
		ret->action = BMH_ACT_REBOOT;
	else if (f->online && !f->powered_on)
		ret->action = BMH_ACT_POWER_ON;
	else if (!f->online && f->powered_on)
		ret->action = BMH_ACT_POWER_OFF;
}

void bmh_step(const struct bmh_facts *f, struct bmh_step *ret)
{
	const char *st = f->state ? f->state : "";

	memset(ret, 0, sizeof(*ret));
	if (is(st, BMH_ST_NONE)) {
		ret->next = f->deleting ? BMH_ST_DELETING : BMH_ST_REGISTERING;
	} else if (is(st, BMH_ST_REGISTERING)) {
		/* BMO: a host still registering is deleted at once. */
		if (f->deleting) {
			ret->next = BMH_ST_DELETING;
		} else {
			ret->action = BMH_ACT_REGISTER;
			ret->then = BMH_ST_PREPARING;
		}
	} else if (is(st, BMH_ST_INSPECTING) || is(st, BMH_ST_PREPARING) || is(st, "match profile")) {
		ret->next = f->deleting ? BMH_ST_POWERING_OFF_DELETE : BMH_ST_AVAILABLE;
	} else if (is(st, BMH_ST_AVAILABLE) || is(st, BMH_ST_READY)) {
		if (f->deleting)
			ret->next = BMH_ST_POWERING_OFF_DELETE;
		else if (f->online && f->image)
			ret->next = BMH_ST_PROVISIONING;
		else
			power(f, ret);
	} else if (is(st, BMH_ST_PROVISIONING)) {
		if (f->deleting || !f->image || f->image_changed) {
			ret->next = BMH_ST_DEPROVISIONING;
		} else {
			ret->action = BMH_ACT_PROVISION;
			ret->then = BMH_ST_PROVISIONED;
		}
	} else if (is(st, BMH_ST_PROVISIONED)) {
		if (f->deleting || !f->image || f->image_changed)
			ret->next = BMH_ST_DEPROVISIONING;
		else
			power(f, ret);
	} else if (is(st, BMH_ST_EXT_PROVISIONED)) {
		if (f->deleting)
			ret->next = BMH_ST_POWERING_OFF_DELETE;
		else
			power(f, ret);
	} else if (is(st, BMH_ST_DEPROVISIONING)) {
		ret->action = BMH_ACT_DEPROVISION;
		ret->then = f->deleting ? BMH_ST_POWERING_OFF_DELETE : BMH_ST_AVAILABLE;
	} else if (is(st, BMH_ST_POWERING_OFF_DELETE)) {
		ret->action = BMH_ACT_POWER_OFF;
		ret->then = BMH_ST_DELETING;
	} else if (!is(st, BMH_ST_DELETING)) {
		/* An unknown state (written by hand): start over. */
		ret->next = f->deleting ? BMH_ST_DELETING : BMH_ST_REGISTERING;
	}
}

/* --- hardwaredetails ---------------------------------------------------------- */

/* Go's encoding/json string: HTML-safe (<, >, & escaped), U+2028/2029
 * escaped, other control characters as \u00XX except \n \r \t. */
/* A bounded output buffer that remembers a failed append. */
struct gbuf {
	strbuf sb;
	bool failed;
};

static void gb_add(struct gbuf *b, const char *s)
{
	if (strbuf_adds(&b->sb, s) < 0)
		b->failed = true;
}

static void __attribute__((format(printf, 2, 3))) gb_addf(struct gbuf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (strbuf_vaddf(&b->sb, fmt, ap) < 0)
		b->failed = true;
	va_end(ap);
}

static void go_string(struct gbuf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	gb_add(b, "\"");
	for (; *p; p++) {
		if (*p == '"' || *p == '\\') {
			gb_addf(b, "\\%c", *p);
		} else if (*p == '\n') {
			gb_add(b, "\\n");
		} else if (*p == '\r') {
			gb_add(b, "\\r");
		} else if (*p == '\t') {
			gb_add(b, "\\t");
		} else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') {
			gb_addf(b, "\\u%04x", *p);
		} else if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
			gb_addf(b, "\\u202%c", p[2] == 0xa8 ? '8' : '9');
			p += 2;
		} else {
			gb_addf(b, "%c", *p);
		}
	}
	gb_add(b, "\"");
}

void bmh_go_float(double v, char *buf, size_t size)
{
	double a = fabs(v);
	int prec;

	if (!isfinite(v)) {
		snprintf(buf, size, "0");
		return;
	}
	/* Go: the shortest text that reads back as v; %e form below 1e-6
	 * and from 1e21 on, with a two-digit exponent at least. */
	if (a != 0 && (a < 1e-6 || a >= 1e21)) {
		for (prec = 0; prec < 17; prec++) {
			snprintf(buf, size, "%.*e", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
		return;
	}
	for (prec = 0; prec < 17; prec++) {
		snprintf(buf, size, "%.*f", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
}

/* A "key": prefix with the comma a previous member needs. */
static void key(struct gbuf *b, bool *first, const char *k)
{
	if (!*first)
		gb_add(b, ",");
	*first = false;
	go_string(b, k);
	gb_add(b, ":");
}

static void str_field(struct gbuf *b, bool *first, const char *k, const char *v)
{
	if (v && *v) {
		key(b, first, k);
		go_string(b, v);
	}
}

static void int_field(struct gbuf *b, bool *first, const char *k, long long v)
{
	if (v != 0) {
		key(b, first, k);
		gb_addf(b, "%lld", v);
	}
}

static long long jint(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : json_is_real(v) ? util_double_to_i64(json_real_value(v)) : 0;
}

/* The address part of "ip/prefix". */
static void nic(struct gbuf *b, bool *any, const json_t *iface, const char *cidr)
{
	char ip[128];
	bool first = true;
	const char *slash = strchr(cidr, '/');

	snprintf(ip, sizeof(ip), "%.*s", slash ? (int)(slash - cidr) : (int)strlen(cidr), cidr);
	if (*any)
		gb_add(b, ",");
	*any = true;
	gb_add(b, "{");
	str_field(b, &first, "name", jstr(iface, "name"));
	str_field(b, &first, "model", jstr(iface, "vendor"));
	str_field(b, &first, "mac", jstr(iface, "macAddress"));
	str_field(b, &first, "ip", ip);
	int_field(b, &first, "speedGbps", jint(iface, "speedMbps") / 1024);
	gb_add(b, "}");
}

int bmh_hardware_details(const json_t *inv, const char *hostname, char **ret)
{
	struct gbuf b;
	const json_t *sv = json_object_get(inv, "systemVendor"), *cpu = json_object_get(inv, "cpu"), *v, *ip;
	const json_t *flags = json_object_get(cpu, "flags");
	bool first = true, f2, any;
	size_t i, j;
	long long ram = jint(json_object_get(inv, "memory"), "physicalBytes");
	char num[64];

	b.failed = false;
	strbuf_init(&b.sb, 1 << 20);
	gb_add(&b, "{\"systemVendor\":{");
	f2 = true;
	str_field(&b, &f2, "manufacturer", jstr(sv, "manufacturer"));
	str_field(&b, &f2, "productName", jstr(sv, "productName"));
	str_field(&b, &f2, "serialNumber", jstr(sv, "serialNumber"));
	gb_add(&b, "},\"firmware\":{\"bios\":{}}");
	first = false;
	int_field(&b, &first, "ramMebibytes", ram > 0 ? ram / (1024 * 1024) : 0);
	any = false;
	json_array_foreach(json_object_get(inv, "interfaces"), i, v) {
		const char *fams[] = { "ipV6Addresses", "ipV4Addresses" };
		size_t f;

		for (f = 0; f < 2; f++)
			json_array_foreach(json_object_get(v, fams[f]), j, ip)
				if (json_is_string(ip)) {
					if (!any)
						gb_add(&b, ",\"nics\":[");
					nic(&b, &any, v, json_string_value(ip));
				}
	}
	if (any)
		gb_add(&b, "]");
	any = false;
	json_array_foreach(json_object_get(inv, "disks"), i, v) {
		const char *name = jstr(v, "byPath");
		const char *dt = jstr(v, "driveType");

		if (!name || !*name)
			name = jstr(v, "path");
		gb_add(&b, any ? "," : ",\"storage\":[");
		any = true;
		gb_add(&b, "{");
		f2 = true;
		str_field(&b, &f2, "name", name);
		if (dt && strcasecmp(dt, "HDD") == 0) {
			key(&b, &f2, "rotational");
			gb_add(&b, "true");
		}
		int_field(&b, &f2, "sizeBytes", jint(v, "sizeBytes"));
		str_field(&b, &f2, "vendor", jstr(v, "vendor"));
		str_field(&b, &f2, "model", jstr(v, "model"));
		str_field(&b, &f2, "serialNumber", jstr(v, "serial"));
		str_field(&b, &f2, "wwn", jstr(v, "wwn"));
		str_field(&b, &f2, "hctl", jstr(v, "hctl"));
		gb_add(&b, "}");
	}
	if (any)
		gb_add(&b, "]");
	gb_add(&b, ",\"cpu\":{");
	f2 = true;
	str_field(&b, &f2, "arch", jstr(cpu, "architecture"));
	str_field(&b, &f2, "model", jstr(cpu, "modelName"));
	v = json_object_get(cpu, "clockMegahertz");
	if (json_number_value(v) != 0) {
		bmh_go_float(json_number_value(v), num, sizeof(num));
		key(&b, &f2, "clockMegahertz");
		gb_add(&b, num);
	}
	if (json_array_size(flags) > 0) {
		key(&b, &f2, "flags");
		gb_add(&b, "[");
		json_array_foreach(flags, i, v) {
			if (i)
				gb_add(&b, ",");
			go_string(&b, json_string_value(v));
		}
		gb_add(&b, "]");
	}
	int_field(&b, &f2, "count", jint(cpu, "count"));
	gb_add(&b, "}");
	str_field(&b, &first, "hostname", hostname && *hostname ? hostname : jstr(inv, "hostname"));
	gb_add(&b, "}");
	if (b.failed) {
		strbuf_release(&b.sb);
		return -ENOMEM;
	}
	*ret = strbuf_detach(&b.sb, NULL);
	return 0;
}
