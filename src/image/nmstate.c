/* nmstate.c - nmstate documents to NetworkManager keyfiles, MAC maps, the
 * static-network bundle and its host scripts.  See nmstate.h.
 *
 * A document is first parsed into a table of interfaces (struct iface),
 * checking every key as it goes; routes and DNS servers are then attached to
 * interfaces, and each interface is printed as one keyfile in a fixed key
 * order.  Two passes keep the checks apart from the printing, so a document
 * either converts whole or fails with one message naming the field. */
#include "image/nmstate.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/strbuf.h"
#include "base/util.h"
#include "base/yamljson.h"

#define MAX_IFACES 256
#define IFNAMSIZ_MAX 15

enum itype { IT_ETHERNET, IT_BOND, IT_VLAN, IT_BRIDGE };
static const char *const itype_nmstate[] = { "ethernet", "bond", "vlan", "linux-bridge" };
static const char *const itype_nm[] = { "ethernet", "bond", "vlan", "bridge" };

enum istate { ST_UP, ST_DOWN, ST_ABSENT };
enum method { M_DISABLED, M_AUTO, M_DHCP, M_MANUAL, M_LINK_LOCAL };
static const char *const method_names[] = { "disabled", "auto", "dhcp", "manual", "link-local" };

struct ipcfg {
	enum method method;
	json_t *addrs;          /* strings "ip/prefix" */
	bool ignore_dns, ignore_routes, never_default;
	long long route_table, route_metric;
	bool has_table, has_metric;
	json_t *dns;            /* strings */
	json_t *search;         /* strings */
	json_t *routes;         /* [line, options or null] */
};

struct iface {
	const char *name;
	enum itype type;
	const json_t *j;        /* NULL: a port the document only names */
	enum istate state;
	const char *mac;
	bool ident_mac;
	long long mtu;
	const char *controller;
	enum itype ctype;
	const json_t *port_opts; /* bridge port object */
	struct ipcfg ip[2];     /* [0] IPv4, [1] IPv6 */
};

struct doc {
	struct iface *f;        /* cap entries, allocated once: pointers stay valid */
	size_t n, cap;
};

static int bad(ah_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(ah_err *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ah_err_setv(err, EINVAL, 400, "BadRequest", fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void doc_release(struct doc *d)
{
	for (size_t i = 0; i < d->n; i++)
		for (int k = 0; k < 2; k++) {
			json_decref(d->f[i].ip[k].addrs);
			json_decref(d->f[i].ip[k].dns);
			json_decref(d->f[i].ip[k].search);
			json_decref(d->f[i].ip[k].routes);
		}
	d->n = 0;
	free(d->f);
	d->f = NULL;
}

static struct iface *find_iface(struct doc *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->f[i].name, name) == 0)
			return &d->f[i];
	return NULL;
}

/* ---------- value checks ---------- */

static int check_keys(const json_t *o, const char *const *allowed, const char *where, ah_err *err)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v) {
		size_t i;

		for (i = 0; allowed[i]; i++)
			if (strcmp(k, allowed[i]) == 0)
				break;
		if (!allowed[i])
			return bad(err, "%s: unsupported key \"%s\"", where, k);
	}
	return 0;
}

/* Kernel interface names: 1-15 characters; we also keep out what would
 * break a keyfile, the MAC map or the bundle. */
static bool ifname_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > IFNAMSIZ_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

static bool mac_ok(const char *s)
{
	if (!s || strlen(s) != 17)
		return false;
	for (int i = 0; i < 17; i++) {
		if (i % 3 == 2) {
			if (s[i] != ':')
				return false;
		} else if (!isxdigit((unsigned char)s[i])) {
			return false;
		}
	}
	return true;
}

/* A boolean field; absent keeps *out. */
static int get_bool(const json_t *o, const char *k, bool *out, const char *where, ah_err *err)
{
	const json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return bad(err, "%s.%s: must be true or false", where, k);
	*out = json_is_true(v);
	return 0;
}

/* An integer field in [lo, hi], also accepted as a string of digits. */
static int get_int(const json_t *v, long long lo, long long hi, long long *out, const char *where,
		   ah_err *err)
{
	long long x;

	if (json_is_integer(v)) {
		x = json_integer_value(v);
	} else if (json_is_string(v) && *json_string_value(v)) {
		const char *s = json_string_value(v);
		char *end;

		for (const char *p = s; *p; p++)
			if (!isdigit((unsigned char)*p))
				return bad(err, "%s: \"%s\" is not an integer", where, s);
		x = strtoll(s, &end, 10);
	} else {
		return bad(err, "%s: must be an integer", where);
	}
	if (x < lo || x > hi)
		return bad(err, "%s: %lld is out of range %lld-%lld", where, x, lo, hi);
	*out = x;
	return 0;
}

static int family_of(const char *addr)
{
	unsigned char buf[16];

	if (inet_pton(AF_INET, addr, buf) == 1)
		return 4;
	if (inet_pton(AF_INET6, addr, buf) == 1)
		return 6;
	return 0;
}

/* "addr/plen" of the given family (0 = either); returns the family or 0. */
static int parse_cidr(const char *s, int want)
{
	char addr[64];
	const char *slash = strchr(s, '/');
	long long plen;
	int fam;

	if (!slash || (size_t)(slash - s) >= sizeof(addr) || !slash[1] || strlen(slash + 1) > 3)
		return 0;
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = '\0';
	fam = family_of(addr);
	if (!fam || (want && fam != want))
		return 0;
	for (const char *p = slash + 1; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	plen = atoll(slash + 1);
	if (plen > (fam == 4 ? 32 : 128))
		return 0;
	return fam;
}

static int push_str(json_t *a, const char *s)
{
	return json_array_append_new(a, json_string(s)) < 0 ? -ENOMEM : 0;
}

/* ---------- interfaces ---------- */

static int parse_ip(struct iface *f, int fam, ah_err *err)
{
	static const char *const keys4[] = { "enabled", "dhcp", "address", "auto-dns", "auto-routes",
					     "auto-gateway", "auto-route-table-id",
					     "auto-route-metric", NULL };
	static const char *const keys6[] = { "enabled", "dhcp", "autoconf", "address", "auto-dns",
					     "auto-routes", "auto-gateway", "auto-route-table-id",
					     "auto-route-metric", NULL };
	const char *sect = fam == 4 ? "ipv4" : "ipv6";
	const json_t *j = json_object_get(f->j, sect), *addrs;
	struct ipcfg *c = &f->ip[fam == 6];
	bool enabled = true, dhcp = false, autoconf = false, dyn;
	bool auto_dns = true, auto_routes = true, auto_gw = true;
	char where[64];
	size_t i;
	json_t *a;
	int r;

	snprintf(where, sizeof(where), "interface %s: %s", f->name, sect);
	c->method = M_DISABLED;
	if (!(c->addrs = json_array()) || !(c->dns = json_array()) || !(c->search = json_array()) ||
	    !(c->routes = json_array()))
		return -ENOMEM;
	if (!j || json_is_null(j))
		return 0;
	if (!json_is_object(j))
		return bad(err, "%s: must be a mapping", where);
	if ((r = check_keys(j, fam == 4 ? keys4 : keys6, where, err)) < 0 ||
	    (r = get_bool(j, "enabled", &enabled, where, err)) < 0 ||
	    (r = get_bool(j, "dhcp", &dhcp, where, err)) < 0 ||
	    (r = get_bool(j, "autoconf", &autoconf, where, err)) < 0 ||
	    (r = get_bool(j, "auto-dns", &auto_dns, where, err)) < 0 ||
	    (r = get_bool(j, "auto-routes", &auto_routes, where, err)) < 0 ||
	    (r = get_bool(j, "auto-gateway", &auto_gw, where, err)) < 0)
		return r;
	addrs = json_object_get(j, "address");
	if (!enabled) {
		const char *k;
		json_t *v;

		json_object_foreach((json_t *)j, k, v)
			if (strcmp(k, "enabled") != 0 && !json_is_false(v) && !json_is_null(v) &&
			    !(json_is_array(v) && json_array_size(v) == 0))
				return bad(err, "%s.%s: needs %s.enabled: true", where, k, sect);
		return 0;
	}
	if (addrs && !json_is_null(addrs) && !json_is_array(addrs))
		return bad(err, "%s.address: must be a list", where);
	json_array_foreach(addrs, i, a) {
		const char *ip = json_string_value(json_object_get(a, "ip"));
		long long plen;
		char buf[192];

		if (!json_is_object(a))
			return bad(err, "%s.address[%zu]: must be a mapping", where, i);
		if ((r = check_keys(a, (const char *const[]){ "ip", "prefix-length", NULL }, where,
				    err)) < 0)
			return r;
		if (!ip)
			return bad(err, "%s.address[%zu].ip: required", where, i);
		if (family_of(ip) != fam)
			return bad(err, "%s.address[%zu].ip: \"%s\" is not a valid IPv%d address", where,
				   i, ip, fam);
		snprintf(buf, sizeof(buf), "%s.address[%zu].prefix-length", where, i);
		if (!json_object_get(a, "prefix-length"))
			return bad(err, "%s: required", buf);
		if ((r = get_int(json_object_get(a, "prefix-length"), 0, fam == 4 ? 32 : 128, &plen,
				 buf, err)) < 0)
			return r;
		snprintf(buf, sizeof(buf), "%s/%lld", ip, plen);
		if ((r = push_str(c->addrs, buf)) < 0)
			return r;
	}
	if (fam == 4)
		c->method = dhcp ? M_AUTO : json_array_size(c->addrs) ? M_MANUAL : M_DISABLED;
	else
		c->method = autoconf ? M_AUTO : dhcp ? M_DHCP :
			    json_array_size(c->addrs) ? M_MANUAL : M_LINK_LOCAL;
	dyn = c->method == M_AUTO || c->method == M_DHCP;
	if (!dyn) {
		static const char *const dyn_keys[] = { "auto-dns", "auto-routes", "auto-gateway",
							"auto-route-table-id", "auto-route-metric" };

		for (i = 0; i < 5; i++)
			if (json_object_get(j, dyn_keys[i]))
				return bad(err, "%s.%s: only applies with %s", where, dyn_keys[i],
					   fam == 4 ? "dhcp: true" : "dhcp or autoconf: true");
		return 0;
	}
	c->ignore_dns = !auto_dns;
	c->ignore_routes = !auto_routes;
	c->never_default = !auto_gw;
	if (json_object_get(j, "auto-route-table-id")) {
		char buf[192];

		snprintf(buf, sizeof(buf), "%s.auto-route-table-id", where);
		if ((r = get_int(json_object_get(j, "auto-route-table-id"), 0, 4294967295LL,
				 &c->route_table, buf, err)) < 0)
			return r;
		c->has_table = true;
	}
	if (json_object_get(j, "auto-route-metric")) {
		char buf[192];

		snprintf(buf, sizeof(buf), "%s.auto-route-metric", where);
		if ((r = get_int(json_object_get(j, "auto-route-metric"), 0, 4294967295LL,
				 &c->route_metric, buf, err)) < 0)
			return r;
		c->has_metric = true;
	}
	return 0;
}

static const char *const bond_modes[] = { "balance-rr", "active-backup", "balance-xor", "broadcast",
					  "802.3ad", "balance-tlb", "balance-alb", NULL };
static const char *const bond_options[] = {
	"ad_actor_sys_prio", "ad_actor_system", "ad_select", "ad_user_port_key", "all_slaves_active",
	"arp_all_targets", "arp_interval", "arp_ip_target", "arp_missed_max", "arp_validate",
	"downdelay", "fail_over_mac", "lacp_active", "lacp_rate", "lp_interval", "miimon",
	"min_links", "ns_ip6_target", "num_grat_arp", "num_unsol_na", "packets_per_slave",
	"peer_notif_delay", "primary", "primary_reselect", "resend_igmp", "tlb_dynamic_lb",
	"updelay", "use_carrier", "xmit_hash_policy", NULL
};

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

/* Make `name` a port of `ctl`, adding an ethernet interface for a port the
 * document only names (nmstate assumes ethernet for those). */
static int add_port(struct doc *d, struct iface *ctl, const char *name, const json_t *opts,
		    const char *where, ah_err *err)
{
	struct iface *p;

	if (!name || !ifname_ok(name))
		return bad(err, "%s: \"%s\" is not a valid interface name", where, name ? name : "");
	p = find_iface(d, name);
	if (!p) {
		if (d->n == d->cap)
			return bad(err, "interfaces: more than %d", MAX_IFACES);
		p = &d->f[d->n++];
		memset(p, 0, sizeof(*p));
		p->name = name;
		p->type = IT_ETHERNET;
		if (!(p->ip[0].addrs = json_array()) || !(p->ip[0].dns = json_array()) ||
		    !(p->ip[0].search = json_array()) || !(p->ip[0].routes = json_array()) ||
		    !(p->ip[1].addrs = json_array()) || !(p->ip[1].dns = json_array()) ||
		    !(p->ip[1].search = json_array()) || !(p->ip[1].routes = json_array()))
			return -ENOMEM;
	}
	if (p == ctl)
		return bad(err, "%s: interface %s cannot be its own port", where, name);
	if (p->state == ST_ABSENT)
		return bad(err, "%s: port %s has state absent", where, name);
	if (p->controller)
		return bad(err, "%s: %s is already a port of %s", where, name, p->controller);
	for (int k = 0; k < 2; k++)
		if (p->ip[k].method != M_DISABLED)
			return bad(err, "%s: port %s must not have %s enabled", where, name,
				   k ? "ipv6" : "ipv4");
	p->controller = ctl->name;
	p->ctype = ctl->type;
	p->port_opts = opts;
	return 0;
}

static int parse_bond(struct doc *d, struct iface *f, ah_err *err)
{
	const json_t *la = json_object_get(f->j, "link-aggregation"), *ports, *opts, *v;
	const char *mode, *k;
	char where[64];
	size_t i;
	int r;

	snprintf(where, sizeof(where), "interface %s: link-aggregation", f->name);
	if (!json_is_object(la))
		return bad(err, "%s: required for a bond", where);
	if ((r = check_keys(la, (const char *const[]){ "mode", "port", "ports", "options", NULL },
			    where, err)) < 0)
		return r;
	mode = json_string_value(json_object_get(la, "mode"));
	if (!mode)
		return bad(err, "%s.mode: required", where);
	if (!in_list(mode, bond_modes))
		return bad(err, "%s.mode: unknown bond mode \"%s\"", where, mode);
	opts = json_object_get(la, "options");
	if (opts && !json_is_null(opts)) {
		if (!json_is_object(opts))
			return bad(err, "%s.options: must be a mapping", where);
		json_object_foreach((json_t *)opts, k, v) {
			if (!in_list(k, bond_options))
				return bad(err, "%s.options: unknown bond option \"%s\"", where, k);
			if (!json_is_string(v) && !json_is_integer(v) && !json_is_boolean(v))
				return bad(err, "%s.options.%s: must be a scalar", where, k);
			if (json_is_string(v) && (strchr(json_string_value(v), '\n') ||
						  !*json_string_value(v)))
				return bad(err, "%s.options.%s: invalid value", where, k);
		}
	}
	ports = json_object_get(la, "port");
	if (!ports)
		ports = json_object_get(la, "ports");
	if (ports && !json_is_null(ports) && !json_is_array(ports))
		return bad(err, "%s.port: must be a list of interface names", where);
	json_array_foreach(ports, i, v) {
		char pw[192];

		snprintf(pw, sizeof(pw), "%s.port[%zu]", where, i);
		if ((r = add_port(d, f, json_string_value(v), NULL, pw, err)) < 0)
			return r;
	}
	return 0;
}

static int parse_bridge(struct doc *d, struct iface *f, ah_err *err)
{
	static const char *const stp_keys[] = { "enabled", "forward-delay", "hello-time", "max-age",
						"priority", NULL };
	const json_t *br = json_object_get(f->j, "bridge"), *opts, *stp, *ports, *p;
	char where[64];
	size_t i;
	int r;

	snprintf(where, sizeof(where), "interface %s: bridge", f->name);
	if (!br || json_is_null(br))
		return 0;
	if (!json_is_object(br))
		return bad(err, "%s: must be a mapping", where);
	if ((r = check_keys(br, (const char *const[]){ "options", "port", "ports", NULL }, where,
			    err)) < 0)
		return r;
	opts = json_object_get(br, "options");
	if (opts && !json_is_null(opts)) {
		char ow[192];

		snprintf(ow, sizeof(ow), "%s.options", where);
		if (!json_is_object(opts))
			return bad(err, "%s: must be a mapping", ow);
		if ((r = check_keys(opts, (const char *const[]){ "stp", "mac-ageing-time",
								  "multicast-snooping", NULL },
				    ow, err)) < 0)
			return r;
		stp = json_object_get(opts, "stp");
		if (stp && !json_is_object(stp))
			return bad(err, "%s.stp: must be a mapping", ow);
		if (stp) {
			bool b;

			snprintf(ow, sizeof(ow), "%s.options.stp", where);
			if ((r = check_keys(stp, stp_keys, ow, err)) < 0 ||
			    (r = get_bool(stp, "enabled", &b, ow, err)) < 0)
				return r;
			for (i = 1; stp_keys[i]; i++) {
				long long x;
				char kw[320];

				if (!json_object_get(stp, stp_keys[i]))
					continue;
				snprintf(kw, sizeof(kw), "%s.%s", ow, stp_keys[i]);
				if ((r = get_int(json_object_get(stp, stp_keys[i]), 0, 65535, &x, kw,
						 err)) < 0)
					return r;
			}
		}
		if (json_object_get(opts, "mac-ageing-time")) {
			long long x;

			snprintf(ow, sizeof(ow), "%s.options.mac-ageing-time", where);
			if ((r = get_int(json_object_get(opts, "mac-ageing-time"), 0, 1000000, &x, ow,
					 err)) < 0)
				return r;
		}
		if ((r = get_bool(opts, "multicast-snooping", &(bool){ false }, where, err)) < 0)
			return r;
	}
	ports = json_object_get(br, "port");
	if (!ports)
		ports = json_object_get(br, "ports");
	if (ports && !json_is_null(ports) && !json_is_array(ports))
		return bad(err, "%s.port: must be a list", where);
	json_array_foreach(ports, i, p) {
		char pw[192];
		long long x;

		snprintf(pw, sizeof(pw), "%s.port[%zu]", where, i);
		if (!json_is_object(p))
			return bad(err, "%s: must be a mapping with a name", pw);
		if ((r = check_keys(p, (const char *const[]){ "name", "stp-hairpin-mode",
							       "stp-path-cost", "stp-priority", NULL },
				    pw, err)) < 0 ||
		    (r = get_bool(p, "stp-hairpin-mode", &(bool){ false }, pw, err)) < 0)
			return r;
		if (json_object_get(p, "stp-path-cost") &&
		    (r = get_int(json_object_get(p, "stp-path-cost"), 1, 65535, &x, pw, err)) < 0)
			return r;
		if (json_object_get(p, "stp-priority") &&
		    (r = get_int(json_object_get(p, "stp-priority"), 0, 63, &x, pw, err)) < 0)
			return r;
		if ((r = add_port(d, f, json_string_value(json_object_get(p, "name")), p, pw, err)) < 0)
			return r;
	}
	return 0;
}

static int parse_vlan(struct iface *f, ah_err *err)
{
	const json_t *v = json_object_get(f->j, "vlan");
	const char *base;
	char where[64];
	long long id;
	int r;

	snprintf(where, sizeof(where), "interface %s: vlan", f->name);
	if (!json_is_object(v))
		return bad(err, "%s: required for a vlan", where);
	if ((r = check_keys(v, (const char *const[]){ "base-iface", "id", NULL }, where, err)) < 0)
		return r;
	base = json_string_value(json_object_get(v, "base-iface"));
	if (!base || !ifname_ok(base))
		return bad(err, "%s.base-iface: required (an interface name)", where);
	if (strcmp(base, f->name) == 0)
		return bad(err, "%s.base-iface: a vlan cannot sit on itself", where);
	if (!json_object_get(v, "id"))
		return bad(err, "%s.id: required", where);
	strcat(where, ".id");
	return get_int(json_object_get(v, "id"), 0, 4094, &id, where, err);
}

/* Common keys of every interface; type-specific ones are added per type. */
static int parse_iface(struct iface *f, const json_t *j, size_t idx, ah_err *err)
{
	static const char *const common[] = { "name", "type", "state", "mac-address", "identifier",
					      "mtu", "ipv4", "ipv6", NULL };
	static const char *const extra[] = { NULL, "link-aggregation", "vlan", "bridge" };
	const char *type, *state, *ident;
	const char *k;
	json_t *v;
	int r;

	memset(f, 0, sizeof(*f));
	f->j = j;
	if (!json_is_object(j))
		return bad(err, "interfaces[%zu]: must be a mapping", idx);
	f->name = json_string_value(json_object_get(j, "name"));
	if (!f->name)
		return bad(err, "interfaces[%zu].name: required", idx);
	if (!ifname_ok(f->name))
		return bad(err, "interfaces[%zu].name: \"%s\" is not a valid interface name (1-15 "
			   "letters, digits, '_', '.', '-')", idx, f->name);
	type = json_string_value(json_object_get(j, "type"));
	if (!type)
		return bad(err, "interface %s: type is required", f->name);
	if (strcmp(type, "ethernet") == 0 || strcmp(type, "802-3-ethernet") == 0)
		f->type = IT_ETHERNET;
	else if (strcmp(type, "bond") == 0)
		f->type = IT_BOND;
	else if (strcmp(type, "vlan") == 0)
		f->type = IT_VLAN;
	else if (strcmp(type, "linux-bridge") == 0)
		f->type = IT_BRIDGE;
	else
		return bad(err, "interface %s: unsupported interface type \"%s\" (supported: "
			   "ethernet, bond, vlan, linux-bridge)", f->name, type);
	json_object_foreach((json_t *)j, k, v) {
		if (in_list(k, common) || (extra[f->type] && strcmp(k, extra[f->type]) == 0))
			continue;
		return bad(err, "interface %s: unsupported key \"%s\" for type %s", f->name, k,
			   itype_nmstate[f->type]);
	}
	state = json_string_value(json_object_get(j, "state"));
	if (json_object_get(j, "state") && !state)
		return bad(err, "interface %s: state must be up, down or absent", f->name);
	if (!state || strcmp(state, "up") == 0)
		f->state = ST_UP;
	else if (strcmp(state, "down") == 0)
		f->state = ST_DOWN;
	else if (strcmp(state, "absent") == 0)
		f->state = ST_ABSENT;
	else
		return bad(err, "interface %s: state \"%s\" must be up, down or absent", f->name,
			   state);
	if (json_object_get(j, "mac-address")) {
		f->mac = json_string_value(json_object_get(j, "mac-address"));
		if (!mac_ok(f->mac))
			return bad(err, "interface %s: mac-address: \"%s\" is not a MAC address "
				   "(xx:xx:xx:xx:xx:xx)", f->name, f->mac ? f->mac : "");
	}
	ident = json_string_value(json_object_get(j, "identifier"));
	if (json_object_get(j, "identifier")) {
		if (!ident || (strcmp(ident, "name") != 0 && strcmp(ident, "mac-address") != 0))
			return bad(err, "interface %s: identifier must be name or mac-address",
				   f->name);
		f->ident_mac = strcmp(ident, "mac-address") == 0;
		if (f->ident_mac && !f->mac)
			return bad(err, "interface %s: identifier mac-address needs mac-address",
				   f->name);
	}
	if (json_object_get(j, "mtu")) {
		char where[64];

		snprintf(where, sizeof(where), "interface %s: mtu", f->name);
		if ((r = get_int(json_object_get(j, "mtu"), 68, 65535, &f->mtu, where, err)) < 0)
			return r;
	}
	if ((r = parse_ip(f, 4, err)) < 0 || (r = parse_ip(f, 6, err)) < 0)
		return r;
	return 0;
}

/* ---------- routes and DNS ---------- */

static int parse_routes(struct doc *d, const json_t *routes, ah_err *err)
{
	static const char *const keys[] = { "destination", "next-hop-interface", "next-hop-address",
					    "metric", "table-id", "state", NULL };
	const json_t *list, *rt;
	size_t i;
	int r;

	if (!routes || json_is_null(routes))
		return 0;
	if (!json_is_object(routes))
		return bad(err, "routes: must be a mapping");
	if ((r = check_keys(routes, (const char *const[]){ "config", NULL }, "routes", err)) < 0)
		return r;
	list = json_object_get(routes, "config");
	if (list && !json_is_null(list) && !json_is_array(list))
		return bad(err, "routes.config: must be a list");
	json_array_foreach(list, i, rt) {
		const char *dst, *via, *dev, *state;
		char where[48], line[200], opts[48] = "";
		long long metric = 0, table = 0;
		struct iface *f;
		int fam;

		snprintf(where, sizeof(where), "routes.config[%zu]", i);
		if (!json_is_object(rt))
			return bad(err, "%s: must be a mapping", where);
		if ((r = check_keys(rt, keys, where, err)) < 0)
			return r;
		state = json_string_value(json_object_get(rt, "state"));
		if (json_object_get(rt, "state") && (!state || strcmp(state, "absent") != 0))
			return bad(err, "%s.state: only absent is allowed", where);
		if (state)
			continue; /* removes a route: there is nothing to generate */
		dst = json_string_value(json_object_get(rt, "destination"));
		if (!dst)
			return bad(err, "%s.destination: required", where);
		fam = parse_cidr(dst, 0);
		if (!fam)
			return bad(err, "%s.destination: \"%s\" is not an address/prefix", where, dst);
		dev = json_string_value(json_object_get(rt, "next-hop-interface"));
		if (!dev)
			return bad(err, "%s.next-hop-interface: required", where);
		f = find_iface(d, dev);
		if (!f || !f->j || f->state == ST_ABSENT)
			return bad(err, "%s.next-hop-interface: \"%s\" is not an interface of this "
				   "config", where, dev);
		if (f->ip[fam == 6].method == M_DISABLED)
			return bad(err, "%s: interface %s has ipv%d disabled", where, dev, fam);
		via = json_string_value(json_object_get(rt, "next-hop-address"));
		if (json_object_get(rt, "next-hop-address") && (!via || family_of(via) != fam))
			return bad(err, "%s.next-hop-address: not a valid IPv%d address", where, fam);
		if (json_object_get(rt, "metric")) {
			char w[64];

			snprintf(w, sizeof(w), "%s.metric", where);
			if ((r = get_int(json_object_get(rt, "metric"), 0, 4294967295LL, &metric, w,
					 err)) < 0)
				return r;
		}
		if (json_object_get(rt, "table-id")) {
			char w[64];

			snprintf(w, sizeof(w), "%s.table-id", where);
			if ((r = get_int(json_object_get(rt, "table-id"), 0, 4294967295LL, &table, w,
					 err)) < 0)
				return r;
		}
		if (json_object_get(rt, "metric"))
			snprintf(line, sizeof(line), "%s,%s,%lld", dst,
				 via ? via : fam == 4 ? "0.0.0.0" : "::", metric);
		else if (via)
			snprintf(line, sizeof(line), "%s,%s", dst, via);
		else
			snprintf(line, sizeof(line), "%s", dst);
		if (table)
			snprintf(opts, sizeof(opts), "table=%lld", table);
		if (json_array_append_new(f->ip[fam == 6].routes,
					  json_pack("[s,s?]", line, *opts ? opts : NULL)) < 0)
			return -ENOMEM;
	}
	return 0;
}

static bool has_default_route(const struct iface *f, int k)
{
	size_t i;
	json_t *rt;

	json_array_foreach(f->ip[k].routes, i, rt) {
		const char *s = json_string_value(json_array_get(rt, 0));

		if (strncmp(s, k ? "::/0," : "0.0.0.0/0,", k ? 5 : 10) == 0 ||
		    strcmp(s, k ? "::/0" : "0.0.0.0/0") == 0)
			return true;
	}
	return false;
}

/* Where DNS settings of family k go: the interface of a default route, else
 * the first with static addresses, else the first with the family enabled. */
static struct iface *dns_holder(struct doc *d, int k)
{
	for (int pass = 0; pass < 3; pass++)
		for (size_t i = 0; i < d->n; i++) {
			struct iface *f = &d->f[i];
			enum method m = f->ip[k].method;

			if (!f->j || f->state == ST_ABSENT || f->controller || m == M_DISABLED)
				continue;
			if ((pass == 0 && has_default_route(f, k)) ||
			    (pass == 1 && m == M_MANUAL) || (pass == 2 && m != M_LINK_LOCAL))
				return f;
		}
	return NULL;
}

static int parse_dns(struct doc *d, const json_t *dr, ah_err *err)
{
	const json_t *cfg, *servers, *search, *v;
	struct iface *holder[2] = { NULL, NULL }, *sh;
	size_t i;
	int r;

	if (!dr || json_is_null(dr))
		return 0;
	if (!json_is_object(dr))
		return bad(err, "dns-resolver: must be a mapping");
	if ((r = check_keys(dr, (const char *const[]){ "config", NULL }, "dns-resolver", err)) < 0)
		return r;
	cfg = json_object_get(dr, "config");
	if (!cfg || json_is_null(cfg))
		return 0;
	if (!json_is_object(cfg))
		return bad(err, "dns-resolver.config: must be a mapping");
	if ((r = check_keys(cfg, (const char *const[]){ "server", "search", NULL },
			    "dns-resolver.config", err)) < 0)
		return r;
	servers = json_object_get(cfg, "server");
	search = json_object_get(cfg, "search");
	if (servers && !json_is_null(servers) && !json_is_array(servers))
		return bad(err, "dns-resolver.config.server: must be a list");
	if (search && !json_is_null(search) && !json_is_array(search))
		return bad(err, "dns-resolver.config.search: must be a list");
	json_array_foreach(servers, i, v) {
		const char *s = json_string_value(v);
		int fam = s ? family_of(s) : 0;

		if (!fam)
			return bad(err, "dns-resolver.config.server[%zu]: \"%s\" is not an IP address",
				   i, s ? s : "");
		if (!holder[fam == 6] && !(holder[fam == 6] = dns_holder(d, fam == 6)))
			return bad(err, "dns-resolver.config.server[%zu]: no interface has IPv%d "
				   "enabled to hold DNS server %s", i, fam, s);
		if ((r = push_str(holder[fam == 6]->ip[fam == 6].dns, s)) < 0)
			return r;
	}
	if (json_array_size(search) == 0)
		return 0;
	sh = holder[0] ? holder[0] : holder[1];
	int k = holder[0] ? 0 : 1;

	if (!sh) {
		k = 0;
		sh = dns_holder(d, 0);
		if (!sh) {
			k = 1;
			sh = dns_holder(d, 1);
		}
	}
	if (!sh)
		return bad(err, "dns-resolver.config.search: no interface has IP enabled to hold it");
	json_array_foreach(search, i, v) {
		const char *s = json_string_value(v);

		if (!s || !*s || strpbrk(s, " \t\n;=,"))
			return bad(err, "dns-resolver.config.search[%zu]: \"%s\" is not a domain", i,
				   s ? s : "");
		if ((r = push_str(sh->ip[k].search, s)) < 0)
			return r;
	}
	return 0;
}

static int parse_doc(const json_t *config, struct doc *d, ah_err *err)
{
	const json_t *ifs;
	size_t i, ndef;
	int r;

	d->n = 0;
	if (!json_is_object(config))
		return bad(err, "config: must be a mapping (an nmstate document)");
	if ((r = check_keys(config, (const char *const[]){ "interfaces", "dns-resolver", "routes",
							    NULL },
			    "config", err)) < 0)
		return r;
	ifs = json_object_get(config, "interfaces");
	if (!json_is_array(ifs) || json_array_size(ifs) == 0)
		return bad(err, "interfaces: at least one interface is required");
	if (json_array_size(ifs) > MAX_IFACES)
		return bad(err, "interfaces: more than %d", MAX_IFACES);
	/* Room for every interface and every port name, so no entry moves. */
	d->cap = json_array_size(ifs);
	for (i = 0; i < json_array_size(ifs); i++) {
		const json_t *f = json_array_get(ifs, i);
		const json_t *la = json_object_get(f, "link-aggregation");
		const json_t *br = json_object_get(f, "bridge");

		d->cap += json_array_size(json_object_get(la, "port")) +
			  json_array_size(json_object_get(la, "ports")) +
			  json_array_size(json_object_get(br, "port")) +
			  json_array_size(json_object_get(br, "ports"));
	}
	if (d->cap > MAX_IFACES)
		d->cap = MAX_IFACES;
	d->f = calloc(d->cap, sizeof(*d->f));
	if (!d->f)
		return -ENOMEM;
	for (i = 0; i < json_array_size(ifs); i++) {
		struct iface *f = &d->f[d->n];

		r = parse_iface(f, json_array_get(ifs, i), i, err);
		d->n++; /* owned arrays are released even on error */
		if (r < 0)
			return r;
		for (size_t j = 0; j + 1 < d->n; j++)
			if (strcmp(d->f[j].name, f->name) == 0)
				return bad(err, "interfaces: %s is defined twice", f->name);
	}
	ndef = d->n;
	for (i = 0; i < ndef; i++) {
		struct iface *f = &d->f[i];

		if (f->state == ST_ABSENT)
			continue;
		if (f->type == IT_BOND)
			r = parse_bond(d, f, err);
		else if (f->type == IT_BRIDGE)
			r = parse_bridge(d, f, err);
		else if (f->type == IT_VLAN)
			r = parse_vlan(f, err);
		else
			r = 0;
		if (r < 0)
			return r;
	}
	if ((r = parse_routes(d, json_object_get(config, "routes"), err)) < 0 ||
	    (r = parse_dns(d, json_object_get(config, "dns-resolver"), err)) < 0)
		return r;
	for (i = 0; i < d->n; i++)
		if (d->f[i].state != ST_ABSENT)
			return 0;
	return bad(err, "nmstate generated an empty NetworkManager config file content");
}

/* ---------- keyfiles ---------- */

void nmstate_stable_uuid(const char *type, const char *name, char *buf, size_t size)
{
	/* RFC 4122 name space for URLs. */
	static const unsigned char ns_url[16] = { 0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1,
						  0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8 };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	memset(md, 0, sizeof(md));
	if (c) {
		EVP_DigestInit_ex(c, EVP_sha1(), NULL);
		EVP_DigestUpdate(c, ns_url, sizeof(ns_url));
		EVP_DigestUpdate(c, type, strlen(type));
		EVP_DigestUpdate(c, "://", 3);
		EVP_DigestUpdate(c, name, strlen(name));
		EVP_DigestFinal_ex(c, md, &mdlen);
		EVP_MD_CTX_free(c);
	}
	md[6] = (unsigned char)((md[6] & 0x0f) | 0x50);
	md[8] = (unsigned char)((md[8] & 0x3f) | 0x80);
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", md[0], md[1],
		 md[2], md[3], md[4], md[5], md[6], md[7], md[8], md[9], md[10], md[11], md[12],
		 md[13], md[14], md[15]);
}

static int add_list(strbuf *sb, const char *key, const json_t *list)
{
	size_t i;
	json_t *v;
	int r = 0;

	if (json_array_size(list) == 0)
		return 0;
	r |= strbuf_addf(sb, "%s=", key);
	json_array_foreach(list, i, v)
		r |= strbuf_addf(sb, "%s;", json_string_value(v));
	r |= strbuf_addch(sb, '\n');
	return r;
}

static int emit_ip(strbuf *sb, const struct iface *f, int k)
{
	const struct ipcfg *c = &f->ip[k];
	size_t i;
	json_t *v;
	int r = 0;

	r |= strbuf_adds(sb, k ? "\n[ipv6]\n" : "\n[ipv4]\n");
	json_array_foreach(c->addrs, i, v)
		r |= strbuf_addf(sb, "address%zu=%s\n", i + 1, json_string_value(v));
	if (k)
		r |= strbuf_adds(sb, "addr-gen-mode=eui64\n");
	r |= add_list(sb, "dns", c->dns);
	if (json_array_size(c->dns) || json_array_size(c->search))
		r |= strbuf_adds(sb, "dns-priority=40\n");
	r |= add_list(sb, "dns-search", c->search);
	if (c->ignore_dns)
		r |= strbuf_adds(sb, "ignore-auto-dns=true\n");
	if (c->ignore_routes)
		r |= strbuf_adds(sb, "ignore-auto-routes=true\n");
	r |= strbuf_addf(sb, "method=%s\n", method_names[c->method]);
	if (c->never_default)
		r |= strbuf_adds(sb, "never-default=true\n");
	json_array_foreach(c->routes, i, v) {
		r |= strbuf_addf(sb, "route%zu=%s\n", i + 1, json_string_value(json_array_get(v, 0)));
		if (json_string_value(json_array_get(v, 1)))
			r |= strbuf_addf(sb, "route%zu_options=%s\n", i + 1,
					 json_string_value(json_array_get(v, 1)));
	}
	if (c->has_metric)
		r |= strbuf_addf(sb, "route-metric=%lld\n", c->route_metric);
	if (c->has_table)
		r |= strbuf_addf(sb, "route-table=%lld\n", c->route_table);
	return r;
}

static int add_scalar(strbuf *sb, const char *key, const json_t *v)
{
	if (json_is_integer(v))
		return strbuf_addf(sb, "%s=%lld\n", key, (long long)json_integer_value(v));
	if (json_is_boolean(v))
		return strbuf_addf(sb, "%s=%s\n", key, json_is_true(v) ? "true" : "false");
	return strbuf_addf(sb, "%s=%s\n", key, json_string_value(v));
}

static int emit_keyfile(strbuf *sb, const struct iface *f)
{
	char uuid[40];
	int r = 0;

	nmstate_stable_uuid(itype_nmstate[f->type], f->name, uuid, sizeof(uuid));
	r |= strbuf_addf(sb, "[connection]\nid=%s\nuuid=%s\ntype=%s\n", f->name, uuid,
			 itype_nm[f->type]);
	if (!f->ident_mac)
		r |= strbuf_addf(sb, "interface-name=%s\n", f->name);
	r |= strbuf_addf(sb, "autoconnect=%s\nautoconnect-priority=1\n",
			 f->state == ST_DOWN ? "false" : "true");
	if (f->type == IT_BOND || f->type == IT_BRIDGE)
		r |= strbuf_adds(sb, "autoconnect-slaves=1\n");
	if (f->controller)
		r |= strbuf_addf(sb, "master=%s\nslave-type=%s\n", f->controller,
				 f->ctype == IT_BOND ? "bond" : "bridge");
	if (f->mac || f->mtu) {
		r |= strbuf_adds(sb, "\n[ethernet]\n");
		if (f->mac && !f->ident_mac)
			r |= strbuf_addf(sb, "cloned-mac-address=%s\n", f->mac);
		if (f->ident_mac)
			r |= strbuf_addf(sb, "mac-address=%s\n", f->mac);
		if (f->mtu)
			r |= strbuf_addf(sb, "mtu=%lld\n", f->mtu);
	}
	if (f->type == IT_BOND) {
		const json_t *la = json_object_get(f->j, "link-aggregation");
		const json_t *opts = json_object_get(la, "options");
		const char **keys;
		size_t n = 0, i;
		const char *k;
		json_t *v;

		r |= strbuf_addf(sb, "\n[bond]\nmode=%s\n",
				 json_string_value(json_object_get(la, "mode")));
		/* Sorted, so the output does not depend on the YAML's key order. */
		keys = calloc(json_object_size(opts) + 1, sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		json_object_foreach((json_t *)opts, k, v)
			keys[n++] = k;
		qsort(keys, n, sizeof(*keys), strcmp_ptr);
		for (i = 0; i < n; i++)
			r |= add_scalar(sb, keys[i], json_object_get(opts, keys[i]));
		free(keys);
	}
	if (f->type == IT_BRIDGE) {
		const json_t *opts = json_object_get(json_object_get(f->j, "bridge"), "options");
		const json_t *stp = json_object_get(opts, "stp"), *v;
		static const char *const stp_keys[] = { "forward-delay", "hello-time", "max-age",
							"priority" };

		r |= strbuf_adds(sb, "\n[bridge]\n");
		if ((v = json_object_get(opts, "mac-ageing-time")))
			r |= add_scalar(sb, "ageing-time", v);
		for (size_t i = 0; i < 4; i++)
			if ((v = json_object_get(stp, stp_keys[i])))
				r |= add_scalar(sb, stp_keys[i], v);
		if ((v = json_object_get(opts, "multicast-snooping")))
			r |= add_scalar(sb, "multicast-snooping", v);
		/* NetworkManager enables STP unless told otherwise; nmstate too. */
		v = json_object_get(stp, "enabled");
		r |= strbuf_addf(sb, "stp=%s\n", json_is_false(v) ? "false" : "true");
	}
	if (f->type == IT_VLAN) {
		const json_t *v = json_object_get(f->j, "vlan");
		long long id = 0;

		get_int(json_object_get(v, "id"), 0, 4094, &id, "vlan.id", NULL);
		r |= strbuf_addf(sb, "\n[vlan]\nid=%lld\nparent=%s\n", id,
				 json_string_value(json_object_get(v, "base-iface")));
	}
	if (f->controller && f->ctype == IT_BRIDGE && f->port_opts &&
	    json_object_size(f->port_opts) > 1) {
		const json_t *v;

		r |= strbuf_adds(sb, "\n[bridge-port]\n");
		if ((v = json_object_get(f->port_opts, "stp-hairpin-mode")))
			r |= add_scalar(sb, "hairpin-mode", v);
		if ((v = json_object_get(f->port_opts, "stp-path-cost")))
			r |= add_scalar(sb, "path-cost", v);
		if ((v = json_object_get(f->port_opts, "stp-priority")))
			r |= add_scalar(sb, "priority", v);
	}
	if (!f->controller) {
		r |= emit_ip(sb, f, 0);
		r |= emit_ip(sb, f, 1);
	}
	return r < 0 ? -ENOMEM : 0;
}

/* ---------- one host ---------- */

static bool physical_name(const char *s)
{
	return strncmp(s, "en", 2) == 0 && s[2] && strchr("PsvxXbucaipod", s[2]);
}

static int cmp_str_json(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* A VLAN's base interface needs no definition of its own. */
static bool is_vlan_base(const struct doc *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++) {
		const char *base = json_string_value(json_object_get(json_object_get(d->f[i].j, "vlan"),
								     "base-iface"));

		if (d->f[i].type == IT_VLAN && d->f[i].state != ST_ABSENT && base &&
		    strcmp(base, name) == 0)
			return true;
	}
	return false;
}

/* Parse and check one host; on success the keyfiles (strbuf per file, as
 * {"name","contents"}) and/or the MAC map text are produced. */
static int convert_host(const json_t *config, const json_t *interfaces, json_t **ret_files,
			char **ret_ini, ah_err *err)
{
	struct doc *d = calloc(1, sizeof(*d));
	json_t *files = NULL, *lines = NULL, *seen = NULL, *v;
	strbuf sb = STRBUF_INIT;
	size_t i;
	int r;

	if (!d)
		return -ENOMEM;
	if ((r = parse_doc(config, d, err)) < 0)
		goto out;
	r = -ENOMEM;
	if (!(files = json_array()) || !(lines = json_array()) || !(seen = json_object()))
		goto out;
	if (ret_ini) {
		if (!json_is_array(interfaces) || json_array_size(interfaces) == 0) {
			r = bad(err, "spec.interfaces: at least one interface must be provided");
			goto out;
		}
		json_array_foreach(interfaces, i, v) {
			const char *name = json_string_value(json_object_get(v, "name"));
			const char *mac = json_string_value(json_object_get(v, "macAddress"));
			char key[64], up[18];
			struct iface *f;

			if (!name || !*name) {
				r = bad(err, "spec.interfaces[%zu].name: required", i);
				goto out;
			}
			if (!mac || !*mac) {
				r = bad(err, "spec.interfaces[%zu].macAddress: required (interface %s has "
					"no MAC address)", i, name);
				goto out;
			}
			if (!mac_ok(mac)) {
				r = bad(err, "spec.interfaces[%zu].macAddress: \"%s\" is not a MAC address "
					"(xx:xx:xx:xx:xx:xx)", i, mac);
				goto out;
			}
			f = find_iface(d, name);
			if ((!f && !is_vlan_base(d, name)) || (f && f->state == ST_ABSENT)) {
				r = bad(err, "spec.interfaces[%zu].name: interface %s is not in spec.config",
					i, name);
				goto out;
			}
			for (int k = 0; k < 18; k++)
				up[k] = (char)toupper((unsigned char)mac[k]);
			snprintf(key, sizeof(key), "m:%s", up);
			if (json_object_get(seen, key)) {
				r = bad(err, "spec.interfaces: MACs and interfaces must be unique: MAC %s "
					"is listed twice", mac);
				goto out;
			}
			snprintf(key, sizeof(key), "n:%s", name);
			if (json_object_get(seen, key)) {
				r = bad(err, "spec.interfaces: MACs and interfaces must be unique: "
					"interface %s is listed twice", name);
				goto out;
			}
			snprintf(key, sizeof(key), "m:%s", up);
			if (json_object_set_new(seen, key, json_true()) < 0)
				goto out;
			snprintf(key, sizeof(key), "n:%s", name);
			if (json_object_set_new(seen, key, json_true()) < 0)
				goto out;
			if (strbuf_addf(&sb, "%s=%s", mac, name) < 0 ||
			    json_array_append_new(lines, json_string(sb.buf)) < 0)
				goto out;
			strbuf_reset(&sb);
		}
		for (i = 0; i < d->n; i++) {
			const struct iface *f = &d->f[i];
			char key[64];

			snprintf(key, sizeof(key), "n:%s", f->name);
			if (f->type != IT_ETHERNET || f->state == ST_ABSENT || f->ident_mac ||
			    json_object_get(seen, key) || physical_name(f->name))
				continue;
			r = bad(err, "mac-interface mapping for interface %s is missing and not a "
				"physical interface", f->name);
			goto out;
		}
		/* A VLAN on an interface the document does not define must
		 * still find its base on the host. */
		for (i = 0; i < d->n; i++) {
			const char *base = json_string_value(json_object_get(
				json_object_get(d->f[i].j, "vlan"), "base-iface"));
			char key[64];

			if (d->f[i].type != IT_VLAN || d->f[i].state == ST_ABSENT || !base ||
			    find_iface(d, base))
				continue;
			snprintf(key, sizeof(key), "n:%s", base);
			if (json_object_get(seen, key) || physical_name(base))
				continue;
			r = bad(err, "mac-interface mapping for interface %s is missing and not a "
				"physical interface", base);
			goto out;
		}
	}
	for (i = 0; i < d->n; i++) {
		char fname[32];

		if (d->f[i].state == ST_ABSENT)
			continue;
		strbuf_reset(&sb);
		if ((r = emit_keyfile(&sb, &d->f[i])) < 0)
			goto out;
		snprintf(fname, sizeof(fname), "%s.nmconnection", d->f[i].name);
		r = -ENOMEM;
		if (json_array_append_new(files, json_pack("{s:s,s:s}", "name", fname, "contents",
							   sb.buf)) < 0)
			goto out;
	}
	if (ret_ini) {
		json_t **arr = calloc(json_array_size(lines) + 1, sizeof(*arr));

		if (!arr)
			goto out;
		json_array_foreach(lines, i, v)
			arr[i] = v;
		qsort(arr, json_array_size(lines), sizeof(*arr), cmp_str_json);
		strbuf_reset(&sb);
		for (i = 0; i < json_array_size(lines); i++)
			if (strbuf_addf(&sb, "%s\n", json_string_value(arr[i])) < 0) {
				free(arr);
				goto out;
			}
		free(arr);
		*ret_ini = strbuf_detach(&sb, NULL);
	}
	if (ret_files) {
		*ret_files = files;
		files = NULL;
	}
	r = 0;
out:
	doc_release(d);
	free(d);
	json_decref(files);
	json_decref(lines);
	json_decref(seen);
	strbuf_release(&sb);
	return r;
}

int nmstate_to_keyfiles(const json_t *config, json_t **ret, ah_err *err)
{
	return convert_host(config, NULL, ret, NULL, err);
}

int nmstate_mac_interface_ini(const json_t *config, const json_t *interfaces, char **ret,
			      ah_err *err)
{
	return convert_host(config, interfaces, NULL, ret, err);
}

int nmstate_parse_yaml(const char *text, size_t len, json_t **ret, ah_err *err)
{
	json_t *docs = NULL, *d;
	int r;

	if ((r = yaml_parse_all(text, len, &docs, err)) < 0) {
		if (err) {
			err->status = 400;
			ah_err_prefix(err, "invalid nmstate YAML");
		}
		return r;
	}
	if (json_array_size(docs) != 1 || !json_is_object(json_array_get(docs, 0))) {
		json_decref(docs);
		return bad(err, "invalid nmstate YAML: expected one mapping");
	}
	d = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	*ret = d;
	return 0;
}

/* ---------- the bundle and its Ignition parts ---------- */

int nmstate_bundle_build(const struct nmstate_host *hosts, size_t n, char **ret, size_t *ret_len,
			 ah_err *err)
{
	strbuf sb = STRBUF_INIT;
	json_t *macs = json_object(), *files = NULL, *f;
	char *ini = NULL;
	size_t h, i;
	int r = -ENOMEM;

	if (!macs || strbuf_adds(&sb, NMSTATE_BUNDLE_MAGIC "\n") < 0)
		goto out;
	for (h = 0; h < n; h++) {
		const char *label = hosts[h].label ? hosts[h].label : "";

		if ((r = convert_host(hosts[h].config, hosts[h].interfaces, &files, &ini, err)) < 0) {
			ah_err_prefix(err, "NMStateConfig %s", label);
			goto out;
		}
		json_array_foreach(hosts[h].interfaces, i, f) {
			const char *mac = json_string_value(json_object_get(f, "macAddress"));
			const char *other;
			char up[18];

			for (int k = 0; k < 18; k++)
				up[k] = (char)toupper((unsigned char)mac[k]);
			other = json_string_value(json_object_get(macs, up));
			if (other) {
				r = bad(err, "NMStateConfig %s: MAC %s is also listed by NMStateConfig %s",
					label, mac, other);
				goto out;
			}
			r = -ENOMEM;
			if (json_object_set_new(macs, up, json_string(label)) < 0)
				goto out;
		}
		r = -ENOMEM;
		if (strbuf_addf(&sb, "@\n>mac_interface.ini\n%s", ini) < 0)
			goto out;
		json_array_foreach(files, i, f)
			if (strbuf_addf(&sb, ">%s\n%s", json_string_value(json_object_get(f, "name")),
					json_string_value(json_object_get(f, "contents"))) < 0)
				goto out;
		json_decref(files);
		files = NULL;
		free(ini);
		ini = NULL;
	}
	*ret = strbuf_detach(&sb, ret_len);
	r = 0;
out:
	strbuf_release(&sb);
	json_decref(macs);
	json_decref(files);
	free(ini);
	return r;
}

/* gzip (mtime 0: deterministic) of data.  Level 1: the embed payload
 * gzips the whole ignition again, and measured on 10,000 sample hosts the
 * final payload comes out smaller (94 KB against 108 KB at level 9) and
 * the bundle compresses 14 times faster. */
static int gzip_fast(const char *data, size_t len, unsigned char **ret, size_t *ret_len)
{
	z_stream zs;
	unsigned char *out;
	size_t cap;
	int zr;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, len);
	out = malloc(cap);
	if (!out) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	zr = deflate(&zs, Z_FINISH);
	*ret_len = zs.total_out;
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(out);
		return -ENOMEM;
	}
	*ret = out;
	return 0;
}

static json_t *file_entry(const char *path, int mode, const char *source, bool gzip)
{
	json_t *f = json_pack("{s:s,s:b,s:{s:s},s:{s:s},s:i}", "path", path, "overwrite", 1, "user",
			      "name", "root", "contents", "source", source, "mode", mode);

	if (f && gzip &&
	    json_object_set_new(json_object_get(f, "contents"), "compression", json_string("gzip")) < 0) {
		json_decref(f);
		return NULL;
	}
	return f;
}

static json_t *script_entry(const char *path, const char *text)
{
	char *b64 = util_base64_encode(text, strlen(text)), *src = NULL;
	json_t *f = NULL;

	if (b64 && asprintf(&src, "data:text/plain;base64,%s", b64) >= 0) {
		f = file_entry(path, 493, src, false);
		free(src);
	}
	free(b64);
	return f;
}

int nmstate_ignition_parts(const struct nmstate_host *hosts, size_t n, json_t **ret_files,
			   json_t **ret_units, ah_err *err)
{
	char *bundle = NULL, *b64 = NULL, *src = NULL;
	unsigned char *gz = NULL;
	size_t blen = 0, gzlen = 0;
	json_t *files = NULL, *units = NULL;
	int r;

	if (n == 0)
		return bad(err, "no static network configuration");
	if ((r = nmstate_bundle_build(hosts, n, &bundle, &blen, err)) < 0)
		return r;
	r = -ENOMEM;
	if (blen > UINT32_MAX / 2 || gzip_fast(bundle, blen, &gz, &gzlen) < 0)
		goto out;
	b64 = util_base64_encode(gz, gzlen);
	if (!b64 || asprintf(&src, "data:;base64,%s", b64) < 0) {
		src = NULL;
		goto out;
	}
	files = json_array();
	units = json_array();
	if (!files || !units ||
	    json_array_append_new(files, script_entry(NMSTATE_COMMON_SCRIPT_PATH,
						      nmstate_common_script)) < 0 ||
	    json_array_append_new(files, script_entry(NMSTATE_PRE_SCRIPT_PATH,
						      nmstate_pre_network_script)) < 0 ||
	    json_array_append_new(files, file_entry(NMSTATE_BUNDLE_PATH, 384, src, true)) < 0 ||
	    json_array_append_new(units, json_pack("{s:s,s:b,s:s}", "name", NMSTATE_UNIT_NAME,
						   "enabled", 1, "contents",
						   nmstate_pre_network_unit)) < 0)
		goto out;
	*ret_files = files;
	*ret_units = units;
	files = units = NULL;
	r = 0;
out:
	free(bundle);
	free(gz);
	free(b64);
	free(src);
	json_decref(files);
	json_decref(units);
	return r;
}

/* ---------- host scripts (bash) and the unit that runs them ---------- */

const char nmstate_common_script[] =
	"#!/bin/bash\n"
	"# common_network_script.sh - shared by the static-network scripts of the\n"
	"# discovery image: where the configuration lives, where NetworkManager reads\n"
	"# keyfiles, and which NICs (by MAC address) this host has.  PATH_PREFIX and\n"
	"# SYS_CLASS_NET let the scripts run on a copy of a file system.\n"
	"\n"
	"PATH_PREFIX=${PATH_PREFIX:-}\n"
	"SYS_CLASS_NET=${SYS_CLASS_NET:-/sys/class/net}\n"
	"NETWORK_DIR=\"${PATH_PREFIX}/etc/assisted/network\"\n"
	"BUNDLE=\"${PATH_PREFIX}/etc/assisted/static-network.bundle\"\n"
	"if [ -e \"${PATH_PREFIX}/etc/initrd-release\" ]; then\n"
	"\tTARGET_DIR=\"${PATH_PREFIX}/etc/coreos-firstboot-network\"\n"
	"else\n"
	"\tTARGET_DIR=\"${PATH_PREFIX}/etc/NetworkManager/system-connections\"\n"
	"fi\n"
	"\n"
	"# NICs appear while their drivers load: wait until the list of names (lo\n"
	"# aside) has not changed for NIC_SETTLE_SECONDS (default 3), 30 s at most.\n"
	"wait_for_nics() {\n"
	"\tlocal settle=${NIC_SETTLE_SECONDS:-3} waited=0 same=0 prev=\"\" cur\n"
	"\twhile [ \"$same\" -lt \"$settle\" ] && [ \"$waited\" -lt 30 ]; do\n"
	"\t\tcur=$(ls \"$SYS_CLASS_NET\" 2>/dev/null | grep -vx lo | sort | tr '\\n' ' ')\n"
	"\t\tif [ \"$cur\" = \"$prev\" ]; then\n"
	"\t\t\tsame=$((same + 1))\n"
	"\t\telse\n"
	"\t\t\tsame=0\n"
	"\t\t\tprev=$cur\n"
	"\t\tfi\n"
	"\t\tsleep 1\n"
	"\t\twaited=$((waited + 1))\n"
	"\tdone\n"
	"}\n"
	"\n"
	"# One \"MAC nic\" line per NIC but lo, the MAC in upper case.\n"
	"list_macs() {\n"
	"\tlocal d n\n"
	"\tfor d in \"$SYS_CLASS_NET\"/*; do\n"
	"\t\tn=${d##*/}\n"
	"\t\t[ \"$n\" = lo ] && continue\n"
	"\t\t[ -r \"$d/address\" ] || continue\n"
	"\t\tprintf '%s %s\\n' \"$(tr '[:lower:]' '[:upper:]' < \"$d/address\")\" \"$n\"\n"
	"\tdone\n"
	"}\n";

const char nmstate_pre_network_script[] =
	"#!/bin/bash\n"
	"# pre-network-manager-config.sh - runs before NetworkManager starts: finds\n"
	"# this host's static network configuration by its MAC addresses and installs\n"
	"# its keyfiles under the host's real NIC names.\n"
	"set -u\n"
	"umask 077\n"
	". \"${SCRIPT_DIR:-/usr/local/bin}/common_network_script.sh\"\n"
	"\n"
	"if [ ! -e \"$BUNDLE\" ] && [ ! -d \"$NETWORK_DIR\" ]; then\n"
	"\techo \"no static network configuration\"\n"
	"\texit 0\n"
	"fi\n"
	"wait_for_nics\n"
	"macs=$(list_macs)\n"
	"\n"
	"# The bundle carries every host of the InfraEnv: unpack only the hosts whose\n"
	"# MAC map lists one of our MACs, as $NETWORK_DIR/host<N>/.\n"
	"if [ -e \"$BUNDLE\" ]; then\n"
	"\tmkdir -p \"$NETWORK_DIR\"\n"
	"\tawk -v dir=\"$NETWORK_DIR\" -v macs=\"$macs\" '\n"
	"\tfunction flush(  i, d) {\n"
	"\t\tif (host < 0 || !hit)\n"
	"\t\t\treturn\n"
	"\t\td = dir \"/host\" host\n"
	"\t\tsystem(\"mkdir -p \\\"\" d \"\\\"\")\n"
	"\t\tfor (i = 1; i <= nf; i++) {\n"
	"\t\t\tprintf \"%s\", body[i] > (d \"/\" fname[i])\n"
	"\t\t\tclose(d \"/\" fname[i])\n"
	"\t\t}\n"
	"\t}\n"
	"\tBEGIN {\n"
	"\t\tn = split(macs, l, \"\\n\")\n"
	"\t\tfor (i = 1; i <= n; i++) {\n"
	"\t\t\tsplit(l[i], p, \" \")\n"
	"\t\t\tif (p[1] != \"\")\n"
	"\t\t\t\tmine[p[1]] = 1\n"
	"\t\t}\n"
	"\t\thost = -1\n"
	"\t}\n"
	"\tNR == 1 {\n"
	"\t\tif ($0 != \"#agenthub-static-network-bundle v1\") {\n"
	"\t\t\tprint \"unknown static network bundle format\" > \"/dev/stderr\"\n"
	"\t\t\tbad = 1\n"
	"\t\t\texit 1\n"
	"\t\t}\n"
	"\t\tnext\n"
	"\t}\n"
	"\t/^@/ { flush(); host++; nf = 0; hit = 0; next }\n"
	"\t/^>/ { nf++; fname[nf] = substr($0, 2); body[nf] = \"\"; next }\n"
	"\t{\n"
	"\t\tbody[nf] = body[nf] $0 \"\\n\"\n"
	"\t\tif (fname[nf] == \"mac_interface.ini\") {\n"
	"\t\t\tsplit($0, kv, \"=\")\n"
	"\t\t\tif (toupper(kv[1]) in mine)\n"
	"\t\t\t\thit = 1\n"
	"\t\t}\n"
	"\t}\n"
	"\tEND { if (!bad) flush() }\n"
	"\t' \"$BUNDLE\" || exit 1\n"
	"fi\n"
	"\n"
	"declare -A nic_of=()\n"
	"while read -r mac nic; do\n"
	"\t[ -n \"$mac\" ] && nic_of[$mac]=$nic\n"
	"done <<< \"$macs\"\n"
	"\n"
	"# A logical name, or <logical>.<vlan id>, under the real NIC's name (the\n"
	"# NIC part shortened so the whole stays within 15 characters).\n"
	"real_name() {\n"
	"\tlocal v=$1 head rest\n"
	"\tif [ -n \"${map[$v]:-}\" ]; then\n"
	"\t\tprintf '%s' \"${map[$v]}\"\n"
	"\t\treturn\n"
	"\tfi\n"
	"\thead=${v%%.*}\n"
	"\tif [ \"$head\" != \"$v\" ] && [ -n \"${map[$head]:-}\" ]; then\n"
	"\t\trest=${v#\"$head\"}\n"
	"\t\tprintf '%s%s' \"${map[$head]:0:$((15 - ${#rest}))}\" \"$rest\"\n"
	"\t\treturn\n"
	"\tfi\n"
	"\tprintf '%s' \"$v\"\n"
	"}\n"
	"\n"
	"mkdir -p \"${PATH_PREFIX}/run\"\n"
	"staging=$(mktemp -d -p \"${PATH_PREFIX}/run\" static-network.XXXXXX) || exit 1\n"
	"trap 'rm -rf \"$staging\"' EXIT\n"
	"matched=0\n"
	"for hdir in \"$NETWORK_DIR\"/host*; do\n"
	"\t[ -f \"$hdir/mac_interface.ini\" ] || continue\n"
	"\tcompgen -G \"$hdir/*.nmconnection\" > /dev/null || continue\n"
	"\tunset map\n"
	"\tdeclare -A map=()\n"
	"\tpairs=\"\"\n"
	"\twhile IFS='=' read -r mac logical || [ -n \"$mac\" ]; do\n"
	"\t\tnic=${nic_of[${mac^^}]:-}\n"
	"\t\tif [ -n \"$nic\" ]; then\n"
	"\t\t\tmap[$logical]=$nic\n"
	"\t\t\tpairs=\"$pairs$logical=$nic \"\n"
	"\t\tfi\n"
	"\tdone < \"$hdir/mac_interface.ini\"\n"
	"\t[ -n \"$pairs\" ] || continue\n"
	"\tmatched=1\n"
	"\techo \"${hdir##*/} matches this host: $pairs\"\n"
	"\tfor f in \"$hdir\"/*.nmconnection; do\n"
	"\t\tbase=${f##*/}\n"
	"\t\tout=\"$(real_name \"${base%.nmconnection}\").nmconnection\"\n"
	"\t\tif [ -e \"$staging/$out\" ]; then\n"
	"\t\t\techo \"skipping $f: $out exists already\"\n"
	"\t\t\tcontinue\n"
	"\t\tfi\n"
	"\t\t# Values naming a logical interface (interface-name, id, parent,\n"
	"\t\t# master, a bond primary) now name the real one.\n"
	"\t\tawk -v pairs=\"$pairs\" '\n"
	"\t\tfunction real(v,   p, head, rest) {\n"
	"\t\t\tif (v in m)\n"
	"\t\t\t\treturn m[v]\n"
	"\t\t\tp = index(v, \".\")\n"
	"\t\t\tif (p > 1) {\n"
	"\t\t\t\thead = substr(v, 1, p - 1)\n"
	"\t\t\t\trest = substr(v, p)\n"
	"\t\t\t\tif (head in m)\n"
	"\t\t\t\t\treturn substr(m[head], 1, 15 - length(rest)) rest\n"
	"\t\t\t}\n"
	"\t\t\treturn v\n"
	"\t\t}\n"
	"\t\tBEGIN {\n"
	"\t\t\tn = split(pairs, l, \" \")\n"
	"\t\t\tfor (i = 1; i <= n; i++) {\n"
	"\t\t\t\tsplit(l[i], kv, \"=\")\n"
	"\t\t\t\tm[kv[1]] = kv[2]\n"
	"\t\t\t}\n"
	"\t\t}\n"
	"\t\t/^[^=[]+=/ {\n"
	"\t\t\tp = index($0, \"=\")\n"
	"\t\t\tprint substr($0, 1, p) real(substr($0, p + 1))\n"
	"\t\t\tnext\n"
	"\t\t}\n"
	"\t\t{ print }\n"
	"\t\t' \"$f\" > \"$staging/$out\" || exit 1\n"
	"\tdone\n"
	"done\n"
	"if [ \"$matched\" = 0 ]; then\n"
	"\techo \"no static network configuration matches this host's MAC addresses\"\n"
	"\texit 0\n"
	"fi\n"
	"mkdir -p \"$TARGET_DIR\"\n"
	"rm -f \"$TARGET_DIR\"/*\n"
	"cp \"$staging\"/* \"$TARGET_DIR\"/\n"
	"chmod 600 \"$TARGET_DIR\"/*\n"
	"echo \"installed: $(cd \"$TARGET_DIR\" && ls | tr '\\n' ' ')\"\n";

const char nmstate_pre_network_unit[] =
	"[Unit]\n"
	"Description=Install this host's static network configuration before NetworkManager\n"
	"DefaultDependencies=no\n"
	"After=systemd-udev-settle.service\n"
	"Before=NetworkManager.service network-pre.target\n"
	"\n"
	"[Service]\n"
	"Type=oneshot\n"
	"RemainAfterExit=yes\n"
	"TimeoutSec=60\n"
	"ExecStart=/bin/bash /usr/local/bin/pre-network-manager-config.sh\n"
	"\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";


/* ---------- the debug archive of a bundle ---------- */

#define TAR_BLOCK 512
#define TAR_NAME_MAX 100
#define TAR_PREFIX_MAX 155

struct tar_file {
	size_t host;
	const char *name, *data;
	size_t name_len, data_len;
};

static size_t tar_pad(size_t n)
{
	return (TAR_BLOCK - n % TAR_BLOCK) % TAR_BLOCK;
}

/* A NUL-terminated octal number filling width bytes. */
static void tar_octal(char *field, size_t width, unsigned long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%0*llo", (int)width - 1, v);
	memcpy(field, buf, width);
}

/* One ustar header.  The path is /etc/assisted/network/host<N>/<name>;
 * when it is longer than the name field the directory goes to the prefix
 * field (the caller checked that name fits alone). */
static void tar_header(unsigned char *h, const struct tar_file *f)
{
	char dir[64];
	size_t dlen, i;
	unsigned sum = 0;

	memset(h, 0, TAR_BLOCK);
	dlen = (size_t)snprintf(dir, sizeof(dir), NMSTATE_NETWORK_DIR "/host%zu", f->host);
	if (dlen + 1 + f->name_len <= TAR_NAME_MAX) {
		memcpy(h, dir, dlen);
		h[dlen] = '/';
		memcpy(h + dlen + 1, f->name, f->name_len);
	} else {
		memcpy(h, f->name, f->name_len);
		memcpy(h + 345, dir, dlen);
	}
	tar_octal((char *)h + 100, 8, 0600);
	tar_octal((char *)h + 108, 8, 0);
	tar_octal((char *)h + 116, 8, 0);
	tar_octal((char *)h + 124, 12, f->data_len);
	tar_octal((char *)h + 136, 12, 0);
	memset(h + 148, ' ', 8);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	for (i = 0; i < TAR_BLOCK; i++)
		sum += h[i];
	tar_octal((char *)h + 148, 7, sum);
}

static bool tar_name_ok(const char *s, size_t n)
{
	if (n == 0 || n > TAR_NAME_MAX || (n == 1 && s[0] == '.') ||
	    (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	return !memchr(s, '/', n) && !memchr(s, '\0', n);
}

int nmstate_bundle_tar(const char *bundle, size_t len, char **ret, size_t *ret_len, ah_err *err)
{
	static const char magic[] = NMSTATE_BUNDLE_MAGIC "\n";
	struct tar_file *files = NULL, *tmp;
	size_t n = 0, cap = 0, hosts = 0, pos = sizeof(magic) - 1, total = 2 * TAR_BLOCK, i;
	bool in_file = false;
	unsigned char *out, *p;
	int r;

	if (len < sizeof(magic) - 1 || memcmp(bundle, magic, sizeof(magic) - 1) != 0)
		return bad(err, "static network bundle: the first line is not \"%s\"",
			   NMSTATE_BUNDLE_MAGIC);
	/* Lines as the host script reads them: '@' starts a host, '>' a file,
	 * anything else is a line of the current file.  A file's contents are
	 * one slice of the bundle, so nothing is copied before the output. */
	while (pos < len) {
		const char *line = bundle + pos, *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : 0;

		if (!nl) {
			r = bad(err, "static network bundle: the line at byte %zu has no newline", pos);
			goto fail;
		}
		if (line[0] == '@') {
			hosts++;
			in_file = false;
		} else if (line[0] == '>') {
			if (!hosts) {
				r = bad(err, "static network bundle: a file at byte %zu comes before any host",
					pos);
				goto fail;
			}
			if (!tar_name_ok(line + 1, ll - 1)) {
				r = bad(err, "static network bundle: the file name at byte %zu is not a "
					"plain file name of 1 to %d bytes", pos, TAR_NAME_MAX);
				goto fail;
			}
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				tmp = realloc(files, cap * sizeof(*files));
				if (!tmp) {
					r = -ENOMEM;
					goto fail;
				}
				files = tmp;
			}
			files[n++] = (struct tar_file){ .host = hosts - 1, .name = line + 1,
							.name_len = ll - 1, .data = nl + 1 };
			in_file = true;
		} else {
			if (!in_file) {
				r = bad(err, "static network bundle: the line at byte %zu is in no file",
					pos);
				goto fail;
			}
			files[n - 1].data_len = (size_t)(nl + 1 - files[n - 1].data);
		}
		pos += ll + 1;
	}
	for (i = 0; i < n; i++) {
		/* The size field holds 11 octal digits. */
		if (files[i].data_len > 077777777777ULL) {
			r = bad(err, "static network bundle: file %.*s is too large for a tar entry",
				(int)files[i].name_len, files[i].name);
			goto fail;
		}
		total += TAR_BLOCK + files[i].data_len + tar_pad(files[i].data_len);
	}
	p = out = calloc(1, total);
	if (!out) {
		r = -ENOMEM;
		goto fail;
	}
	for (i = 0; i < n; i++) {
		tar_header(p, &files[i]);
		p += TAR_BLOCK;
		memcpy(p, files[i].data, files[i].data_len);
		p += files[i].data_len + tar_pad(files[i].data_len);
	}
	free(files);
	*ret = (char *)out;
	*ret_len = total;
	return 0;
fail:
	free(files);
	return r;
}
