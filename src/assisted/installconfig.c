/* installconfig.c - install-config.yaml from the cluster model and hosts,
 * the install-config-overrides annotation decoded onto it the way Go's
 * encoding/json decodes into an existing struct (DisallowUnknownFields:
 * keys matched exactly or case-insensitively, objects merged, array
 * elements decoded onto the existing ones, null clears pointers and
 * slices), and a small YAML printer.  Pure and thread-safe. */
#include "assisted/installconfig.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/x509.h>

#include "assisted/cluster.h"
#include "assisted/validations.h"
#include "base/strbuf.h"
#include "base/util.h"

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* ---- the schema of installcfg.InstallerConfigBaremetal ---- */

enum ftype { F_OBJ, F_ARR, F_STR, F_INT, F_BOOL };

struct field {
	const char *name;
	enum ftype type;
	bool nullable;              /* Go pointer or slice: null clears it */
	const struct field *kids;   /* F_OBJ: fields (name NULL ends); F_ARR: kids[0] = element */
};

#define S(n) { n, F_STR, false, NULL }
#define SP(n) { n, F_STR, true, NULL }
#define I(n) { n, F_INT, false, NULL }
#define B(n) { n, F_BOOL, false, NULL }
#define O(n, k) { n, F_OBJ, false, k }
#define OP(n, k) { n, F_OBJ, true, k }
#define A(n, e) { n, F_ARR, true, e }
#define END { NULL, F_STR, false, NULL }

static const struct field str_elem[] = { S(""), END };
static const struct field proxy_f[] = { S("httpProxy"), S("httpsProxy"), S("noProxy"), END };
static const struct field cn_f[] = { S("cidr"), I("hostPrefix"), END };
static const struct field cn_e[] = { O("", cn_f), END };
static const struct field mn_f[] = { S("cidr"), END };
static const struct field mn_e[] = { O("", mn_f), END };
static const struct field net_f[] = { S("networkType"), A("clusterNetwork", cn_e), A("machineNetwork", mn_e),
				      A("serviceNetwork", str_elem), END };
static const struct field meta_f[] = { S("name"), END };
static const struct field pool_f[] = { S("hyperthreading"), S("name"), I("replicas"), END };
static const struct field pool_e[] = { O("", pool_f), END };
static const struct field bmc_f[] = { S("username"), S("password"), S("address"), B("disableCertificateVerification"),
				      END };
static const struct field bmhost_f[] = { S("name"), S("role"), S("bootMACAddress"), S("bootMode"), O("bmc", bmc_f),
					 S("hardwareProfile"), END };
static const struct field bmhost_e[] = { O("", bmhost_f), END };
static const struct field baremetal_f[] = {
	S("provisioningNetwork"), A("apiVIPs", str_elem), S("apiVIP"), A("ingressVIPs", str_elem), S("ingressVIP"),
	A("hosts", bmhost_e), S("clusterOSImage"), S("clusterProvisioningIP"), S("provisioningNetworkInterface"),
	SP("provisioningNetworkCIDR"), S("provisioningDHCPRange"), END
};
static const struct field none_f[] = { END };
static const struct field topo_f[] = { S("computeCluster"), S("datacenter"), S("datastore"), S("folder"),
				       A("networks", str_elem), S("resourcePool"), END };
static const struct field fd_f[] = { S("name"), S("region"), S("server"), O("topology", topo_f), S("zone"), END };
static const struct field fd_e[] = { O("", fd_f), END };
static const struct field vc_f[] = { A("datacenters", str_elem), S("password"), I("port"), S("server"), S("user"), END };
static const struct field vc_e[] = { O("", vc_f), END };
static const struct field vsphere_f[] = {
	S("vCenter"), S("username"), S("password"), S("datacenter"), S("defaultDatastore"), S("folder"), S("network"),
	S("cluster"), S("apiVIP"), S("ingressVIP"), A("ingressVIPs", str_elem), A("apiVIPs", str_elem),
	A("failureDomains", fd_e), A("vcenters", vc_e), END
};
/* The Nutanix and External structs carry yaml tags only, so encoding/json
 * matches their Go field names. */
static const struct field nx_ep_f[] = { I("ID"), I("NutanixPrismCentralID"), S("Address"), I("Port"), END };
static const struct field nx_pc_f[] = { I("ID"), I("NutanixInstallConfigPlatformID"), O("Endpoint", nx_ep_f),
					S("Username"), S("Password"), END };
static const struct field nx_pe_f[] = { I("ID"), I("NutanixInstallConfigPlatformID"), O("Endpoint", nx_ep_f),
					S("UUID"), S("Name"), END };
static const struct field nx_pe_e[] = { O("", nx_pe_f), END };
static const struct field nutanix_f[] = { I("ID"), A("APIVIPs", str_elem), S("DeprecatedAPIVIP"),
					  A("IngressVIPs", str_elem), S("DeprecatedIngressVIP"),
					  O("PrismCentral", nx_pc_f), A("PrismElements", nx_pe_e),
					  A("SubnetUUIDs", str_elem), END };
static const struct field external_f[] = { S("PlatformName"), S("CloudControllerManager"), END };
static const struct field platform_f[] = { OP("baremetal", baremetal_f), OP("none", none_f),
					   OP("vsphere", vsphere_f), OP("nutanix", nutanix_f),
					   OP("external", external_f), END };
static const struct field bip_f[] = { S("installationDisk"), END };
static const struct field ics_f[] = { A("mirrors", str_elem), S("source"), END };
static const struct field ics_e[] = { O("", ics_f), END };
static const struct field ids_f[] = { S("source"), A("mirrors", str_elem), END };
static const struct field ids_e[] = { O("", ids_f), END };
static const struct field caps_f[] = { S("baselineCapabilitySet"), A("additionalEnabledCapabilities", str_elem), END };
static const struct field root_f[] = {
	S("apiVersion"), S("baseDomain"), OP("proxy", proxy_f), O("networking", net_f), O("metadata", meta_f),
	A("compute", pool_e), O("controlPlane", pool_f), OP("arbiter", pool_f), O("platform", platform_f),
	OP("bootstrapInPlace", bip_f), B("fips"), S("cpuPartitioningMode"), S("pullSecret"), S("sshKey"),
	S("additionalTrustBundle"), A("imageContentSources", ics_e), A("imageDigestSources", ids_e),
	OP("capabilities", caps_f), S("featureSet"), A("featureGates", str_elem), END
};

/* ---- decoding an override onto the tree ---- */

static const char *json_kind(const json_t *v, char *buf, size_t size)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "object";
	case JSON_ARRAY:
		return "array";
	case JSON_STRING:
		return "string";
	case JSON_TRUE:
	case JSON_FALSE:
		return "bool";
	case JSON_INTEGER:
		snprintf(buf, size, "number %lld", (long long)json_integer_value(v));
		return buf;
	case JSON_REAL:
		snprintf(buf, size, "number %g", json_real_value(v));
		return buf;
	default:
		return "null";
	}
}

static const char *go_type(const struct field *f)
{
	switch (f->type) {
	case F_OBJ:
		return "struct";
	case F_ARR:
		return "slice";
	case F_INT:
		return "int";
	case F_BOOL:
		return "bool";
	default:
		return "string";
	}
}

static int type_error(const json_t *v, const struct field *f, const char *path, char *why, size_t size)
{
	char kb[64];

	snprintf(why, size, "json: cannot unmarshal %s into Go struct field InstallerConfigBaremetal.%s of type %s",
		 json_kind(v, kb, sizeof(kb)), path, go_type(f));
	return -EINVAL;
}

static const struct field *find_field(const struct field *kids, const char *key)
{
	for (const struct field *f = kids; f->name; f++)
		if (!strcmp(f->name, key))
			return f;
	for (const struct field *f = kids; f->name; f++)
		if (!strcasecmp(f->name, key))
			return f;
	return NULL;
}

/* Decode v onto *slot (a new reference or NULL) following f.  On success
 * *slot holds the result (NULL = remove the key). */
static int decode(const struct field *f, json_t **slot, const json_t *v, const char *path, char *why, size_t size)
{
	if (json_is_null(v)) {
		if (f->nullable) {
			json_decref(*slot);
			*slot = NULL;
		}
		return 0;
	}
	switch (f->type) {
	case F_STR:
		if (!json_is_string(v))
			return type_error(v, f, path, why, size);
		break;
	case F_INT:
		if (!json_is_integer(v))
			return type_error(v, f, path, why, size);
		break;
	case F_BOOL:
		if (!json_is_boolean(v))
			return type_error(v, f, path, why, size);
		break;
	case F_OBJ: {
		const char *key;
		json_t *val, *obj;

		if (!json_is_object(v))
			return type_error(v, f, path, why, size);
		obj = json_is_object(*slot) ? json_deep_copy(*slot) : json_object();
		json_object_foreach((json_t *)v, key, val) {
			const struct field *k = find_field(f->kids, key);
			json_t *cur;
			char sub[512];
			int r;

			if (!k) {
				snprintf(why, size, "json: unknown field \"%s\"", key);
				json_decref(obj);
				return -EINVAL;
			}
			snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k->name);
			cur = json_incref(json_object_get(obj, k->name));
			if ((r = decode(k, &cur, val, sub, why, size)) < 0) {
				json_decref(cur);
				json_decref(obj);
				return r;
			}
			if (cur)
				json_object_set_new(obj, k->name, cur);
			else
				json_object_del(obj, k->name);
		}
		json_decref(*slot);
		*slot = obj;
		return 0;
	}
	case F_ARR: {
		json_t *arr, *old = json_is_array(*slot) ? *slot : NULL;
		size_t i;

		if (!json_is_array(v))
			return type_error(v, f, path, why, size);
		arr = json_array();
		for (i = 0; i < json_array_size(v); i++) {
			json_t *cur = old && i < json_array_size(old) ? json_deep_copy(json_array_get(old, i)) : NULL;
			int r;

			if ((r = decode(&f->kids[0], &cur, json_array_get(v, i), path, why, size)) < 0) {
				json_decref(cur);
				json_decref(arr);
				return r;
			}
			json_array_append_new(arr, cur ? cur : json_null());
		}
		json_decref(*slot);
		*slot = arr;
		return 0;
	}
	}
	json_decref(*slot);
	*slot = json_deep_copy(v);
	return 0;
}

/* ---- PEM bundle check (installer's validate.go semantics) ---- */

/* One whole DER X.509 certificate, with nothing after it. */
static bool der_certificate(const unsigned char *p, size_t n)
{
	const unsigned char *q = p;
	X509 *x;

	if (n > LONG_MAX)
		return false;
	x = d2i_X509(NULL, &q, (long)n);
	if (!x)
		return false;
	X509_free(x);
	return q == p + n;
}

static int pem_bundle_check(const char *bundle, char *why, size_t size)
{
	const char *p = bundle;

	for (;;) {
		const char *b = strstr(p, "-----BEGIN "), *le, *body, *end;
		char label[128], marker[160];
		char *clean;
		unsigned char *der = NULL;
		size_t dlen = 0, k = 0;
		bool ok;

		if (!b || !(le = strstr(b + 11, "-----")) || (size_t)(le - (b + 11)) >= sizeof(label)) {
			snprintf(why, size, "invalid block");
			return -EINVAL;
		}
		snprintf(label, sizeof(label), "%.*s", (int)(le - (b + 11)), b + 11);
		body = le + 5;
		snprintf(marker, sizeof(marker), "-----END %s-----", label);
		if (!(end = strstr(body, marker))) {
			snprintf(why, size, "invalid block");
			return -EINVAL;
		}
		clean = malloc((size_t)(end - body) + 1);
		if (!clean)
			return -ENOMEM;
		for (const char *c = body; c < end; c++)
			if (!isspace((unsigned char)*c))
				clean[k++] = *c;
		clean[k] = '\0';
		if (util_base64_decode(clean, k, &der, &dlen) < 0) {
			free(clean);
			snprintf(why, size, "invalid block");
			return -EINVAL;
		}
		free(clean);
		ok = der_certificate(der, dlen);
		free(der);
		if (!ok) {
			snprintf(why, size, "parse failed: x509: malformed certificate");
			return -EINVAL;
		}
		p = end + strlen(marker);
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			return 0;
	}
}

#define OVERRIDES_PREFIX "Failed to parse '" INSTALLCONFIG_OVERRIDES_ANNOTATION "' annotation: "

static int overrides_err(ah_err *err, const char *why)
{
	return ah_err_set(err, EINVAL, 400, "InputError", OVERRIDES_PREFIX "%s", why);
}

/* Parse the annotation the way json.Decoder.Decode does: the first JSON
 * value only; whitespace alone is EOF. */
static int parse_overrides(const char *text, json_t **ret, ah_err *err)
{
	json_error_t je;
	const char *p = text;
	json_t *v;

	while (*p && isspace((unsigned char)*p))
		p++;
	if (!*p)
		return overrides_err(err, "EOF");
	v = json_loads(p, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &je);
	if (!v) {
		char why[300];

		snprintf(why, sizeof(why), "invalid JSON at line %d, column %d: %s", je.line, je.column, je.text);
		return overrides_err(err, why);
	}
	if (!json_is_object(v) && !json_is_null(v)) {
		char why[200], kb[64];

		snprintf(why, sizeof(why), "json: cannot unmarshal %s into Go value of type installcfg.InstallerConfigBaremetal",
			 json_kind(v, kb, sizeof(kb)));
		json_decref(v);
		return overrides_err(err, why);
	}
	*ret = v;
	return 0;
}

/* Decode the overrides onto *tree (replaced on success). */
static int apply_overrides(json_t **tree, const char *text, ah_err *err)
{
	static const struct field root = { "", F_OBJ, false, root_f };
	json_t *v = NULL, *cur;
	char why[1024];
	int r;

	if ((r = parse_overrides(text, &v, err)) < 0)
		return r;
	if (json_is_null(v)) {
		json_decref(v);
		return 0;
	}
	cur = json_incref(*tree);
	r = decode(&root, &cur, v, "", why, sizeof(why));
	json_decref(v);
	if (r < 0) {
		json_decref(cur);
		return overrides_err(err, why);
	}
	json_decref(*tree);
	*tree = cur;
	return 0;
}

int installconfig_check_overrides(const char *overrides_json, ah_err *err)
{
	json_t *tree;
	const char *tb;
	char why[256];
	int r;

	if (!overrides_json || !*overrides_json)
		return 0;
	tree = json_object();
	if ((r = apply_overrides(&tree, overrides_json, err)) < 0) {
		json_decref(tree);
		return r;
	}
	tb = sget(tree, "additionalTrustBundle");
	r = *tb ? pem_bundle_check(tb, why, sizeof(why)) : 0;
	json_decref(tree);
	if (r == -EINVAL)
		return overrides_err(err, why);
	if (r < 0)
		return ah_err_set(err, r, 500, "InternalError", "out of memory checking the overrides");
	return 0;
}

/* ---- building the tree ---- */

static const char *ht_for(const json_t *cluster, const char *pool)
{
	const char *ht = sget(cluster, "hyperthreading");

	if (!*ht || !strcmp(ht, "all"))
		return "Enabled";
	return strstr(ht, pool) ? "Enabled" : "Disabled";
}

static int count_role(const json_t *hosts, const char *role)
{
	const json_t *h;
	size_t i;
	int n = 0;

	json_array_foreach(hosts, i, h) {
		const char *r = host_effective_role(h);

		if (!strcmp(r, role) || (!strcmp(role, "master") && !strcmp(r, "bootstrap")))
			n++;
	}
	return n;
}

static json_t *host_inv(const json_t *h)
{
	json_t *v = json_object_get(h, "inventory");

	if (json_is_string(v))
		return json_loads(json_string_value(v), 0, NULL);
	return json_is_object(v) ? json_incref(v) : NULL;
}

static char *no_proxy(const json_t *cluster)
{
	static const char *const lists[] = { "cluster_networks", "service_networks", "machine_networks" };
	const char *np = sget(cluster, "no_proxy");
	strbuf sb = STRBUF_INIT;
	const json_t *x;
	size_t i;

	while (*np == ' ')
		np++;
	if (!strcmp(np, "*"))
		return strdup("*");
	for (const char *p = np; *p;) {
		size_t n = strcspn(p, ",");

		if (n)
			strbuf_addf(&sb, "%s%.*s", sb.len ? "," : "", (int)n, p);
		p += n;
		if (*p == ',')
			p++;
	}
	strbuf_addf(&sb, "%s.%s.%s", sb.len ? "," : "", sget(cluster, "name"), sget(cluster, "base_dns_domain"));
	for (size_t l = 0; l < 3; l++)
		json_array_foreach(json_object_get(cluster, lists[l]), i, x)
			strbuf_addf(&sb, ",%s", sget(x, "cidr"));
	return strbuf_detach(&sb, NULL);
}

/* inet_pton-based helpers: the network "a/p" of an address in CIDR form,
 * and whether an address (CIDR form) lies in a network. */
static bool split_cidr(const char *s, int *family, unsigned char addr[16], int *prefix)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (!slash || n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, buf, addr) == 1)
		*family = 4;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		*family = 6;
	else
		return false;
	*prefix = atoi(slash + 1);
	return *prefix >= 0 && *prefix <= (*family == 4 ? 32 : 128);
}

static void mask(unsigned char addr[16], int prefix)
{
	for (int i = 0; i < 16; i++) {
		int bits = prefix - i * 8;

		if (bits < 8)
			addr[i] &= bits <= 0 ? 0 : (unsigned char)(0xff << (8 - bits));
	}
}

static bool network_of(const char *addr_cidr, char *buf, size_t size)
{
	unsigned char a[16];
	char ip[INET6_ADDRSTRLEN];
	int f, p;

	if (!split_cidr(addr_cidr, &f, a, &p))
		return false;
	mask(a, p);
	inet_ntop(f == 4 ? AF_INET : AF_INET6, a, ip, sizeof(ip));
	snprintf(buf, size, "%s/%d", ip, p);
	return true;
}

static bool addr_in_network(const char *addr_cidr, const char *net)
{
	unsigned char a[16], n[16];
	int fa, fn, pa, pn;

	if (!split_cidr(addr_cidr, &fa, a, &pa) || !split_cidr(net, &fn, n, &pn) || fa != fn)
		return false;
	mask(a, pn);
	mask(n, pn);
	return !memcmp(a, n, 16);
}

/* The MAC of the NIC holding an address in cidr, else the first NIC's. */
static const char *boot_mac(const json_t *inv, const char *cidr)
{
	const char *keys[] = { "ipv4_addresses", "ipv6_addresses" };
	const json_t *nic, *a;
	size_t i, j;

	json_array_foreach(json_object_get(inv, "interfaces"), i, nic)
		for (int f = 0; f < 2; f++)
			json_array_foreach(json_object_get(nic, keys[f]), j, a)
				if (*cidr && json_is_string(a) && addr_in_network(json_string_value(a), cidr))
					return sget(nic, "mac_address");
	return sget(json_array_get(json_object_get(inv, "interfaces"), 0), "mac_address");
}

static json_t *baremetal_hosts(const json_t *cluster, const json_t *hosts)
{
	json_t *out = json_array();
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h) {
		json_t *inv = host_inv(h);
		const char *name = *sget(h, "requested_hostname") ? sget(h, "requested_hostname") : sget(inv, "hostname");
		const char *role = host_effective_role(h);
		const char *mode = sget(json_object_get(inv, "boot"), "current_boot_mode");

		if (!strcmp(role, "bootstrap"))
			role = "master";
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:b}, s:s}", "name", name,
						     "role", role, "bootMACAddress",
						     boot_mac(inv, sget(json_array_get(json_object_get(cluster,
												       "machine_networks"),
											0),
									   "cidr")),
						     "bootMode", !*mode || !strcmp(mode, "uefi") ? "UEFI" : "legacy", "bmc",
						     "username", "", "password", "", "address", "",
						     "disableCertificateVerification", 0, "hardwareProfile", ""));
		json_decref(inv);
	}
	return out;
}

static json_t *vip_strings(const json_t *cluster, const char *list)
{
	json_t *out = json_array();
	const json_t *x;
	size_t i;

	json_array_foreach(json_object_get(cluster, list), i, x)
		json_array_append_new(out, json_string(sget(x, "ip")));
	return out;
}

static bool version_ge(const char *v, int maj, int min)
{
	int a = 0, b = 0;

	if (!v || sscanf(v, "%d.%d", &a, &b) < 2)
		return true; /* unknown: the current format */
	return a > maj || (a == maj && b >= min);
}

static void add_vips(json_t *p, const json_t *cluster)
{
	if (version_ge(sget(cluster, "openshift_version"), 4, 12)) {
		json_object_set_new(p, "apiVIPs", vip_strings(cluster, "api_vips"));
		json_object_set_new(p, "ingressVIPs", vip_strings(cluster, "ingress_vips"));
	} else {
		json_object_set_new(p, "apiVIP",
				    json_string(sget(json_array_get(json_object_get(cluster, "api_vips"), 0), "ip")));
		json_object_set_new(p, "ingressVIP",
				    json_string(sget(json_array_get(json_object_get(cluster, "ingress_vips"), 0), "ip")));
	}
}

static const json_t *bootstrap(const json_t *hosts)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h)
		if (json_is_true(json_object_get(h, "bootstrap")))
			return h;
	return json_array_get(hosts, 0);
}

/* The bootstrap host's networks (first IPv4 and first IPv6), for
 * user-managed networking without a machine network. */
static void machine_networks_from_bootstrap(json_t *networking, const json_t *hosts)
{
	json_t *inv = host_inv(bootstrap(hosts)), *mn = json_array();
	const char *keys[] = { "ipv4_addresses", "ipv6_addresses" };
	const json_t *nic, *a;
	size_t i, j;

	for (int f = 0; f < 2 && inv; f++) {
		bool done = false;

		json_array_foreach(json_object_get(inv, "interfaces"), i, nic)
			json_array_foreach(json_object_get(nic, keys[f]), j, a) {
				const char *s = json_string_value(a);
				char net[80];

				if (done || !s || !network_of(s, net, sizeof(net)))
					continue;
				json_array_append_new(mn, json_pack("{s:s}", "cidr", net));
				done = true;
			}
	}
	json_decref(inv);
	if (json_array_size(mn))
		json_object_set_new(networking, "machineNetwork", mn);
	else
		json_decref(mn);
}

static const char *install_disk(const json_t *h)
{
	const char *p = sget(h, "installation_disk_path");

	return *p ? p : sget(h, "installation_disk_id");
}

json_t *installconfig_tree(const json_t *cluster, const json_t *hosts, const char *pull_secret,
			   const char *overrides_json_or_null, ah_err *err)
{
	const char *plat = sget(json_object_get(cluster, "platform"), "type");
	bool sno = cluster_is_sno(cluster);
	json_t *cfg, *net, *cn, *mn, *sn, *p, *x;
	const char *tb_cluster = sget(cluster, "additional_trust_bundle");
	size_t i;
	int arbiters;

	if (!*sget(cluster, "name") || !*sget(cluster, "base_dns_domain") || !pull_secret || !*pull_secret) {
		ah_err_set(err, EINVAL, 400, "BadRequest", "install-config: the cluster has no %s",
			   !*sget(cluster, "name") ? "name" : !*sget(cluster, "base_dns_domain") ? "base_dns_domain"
											 : "pull secret");
		return NULL;
	}
	cfg = json_pack("{s:s, s:s, s:{s:s}, s:b, s:s, s:s}", "apiVersion", "v1", "baseDomain",
			sget(cluster, "base_dns_domain"), "metadata", "name", sget(cluster, "name"), "fips", 0,
			"pullSecret", pull_secret, "sshKey", sget(cluster, "ssh_public_key"));
	json_object_set_new(cfg, "compute",
			    json_pack("[{s:s, s:s, s:i}]", "hyperthreading", ht_for(cluster, "workers"), "name", "worker",
				      "replicas", count_role(hosts, "worker")));
	json_object_set_new(cfg, "controlPlane",
			    json_pack("{s:s, s:s, s:i}", "hyperthreading", ht_for(cluster, "masters"), "name", "master",
				      "replicas", count_role(hosts, "master")));
	if ((arbiters = count_role(hosts, "arbiter")) > 0)
		json_object_set_new(cfg, "arbiter",
				    json_pack("{s:s, s:s, s:i}", "hyperthreading", ht_for(cluster, "arbiters"), "name",
					      "arbiter", "replicas", arbiters));
	cn = json_array();
	mn = json_array();
	sn = json_array();
	json_array_foreach(json_object_get(cluster, "cluster_networks"), i, x)
		json_array_append_new(cn, json_pack("{s:s, s:I}", "cidr", sget(x, "cidr"), "hostPrefix",
						    json_integer_value(json_object_get(x, "host_prefix"))));
	json_array_foreach(json_object_get(cluster, "machine_networks"), i, x)
		json_array_append_new(mn, json_pack("{s:s}", "cidr", sget(x, "cidr")));
	json_array_foreach(json_object_get(cluster, "service_networks"), i, x)
		json_array_append_new(sn, json_string(sget(x, "cidr")));
	net = json_pack("{s:s, s:o, s:o}", "networkType", sget(cluster, "network_type"), "clusterNetwork", cn,
			"serviceNetwork", sn);
	if (json_array_size(mn))
		json_object_set_new(net, "machineNetwork", mn);
	else
		json_decref(mn);
	if (!json_object_get(net, "machineNetwork") && (sno || json_is_true(json_object_get(cluster,
											       "user_managed_networking"))))
		machine_networks_from_bootstrap(net, hosts);
	json_object_set_new(cfg, "networking", net);
	if (*sget(cluster, "http_proxy") || *sget(cluster, "https_proxy")) {
		char *np = no_proxy(cluster);
		json_t *px = json_object();

		if (*sget(cluster, "http_proxy"))
			json_object_set_new(px, "httpProxy", json_string(sget(cluster, "http_proxy")));
		if (*sget(cluster, "https_proxy"))
			json_object_set_new(px, "httpsProxy", json_string(sget(cluster, "https_proxy")));
		if (np && *np)
			json_object_set_new(px, "noProxy", json_string(np));
		free(np);
		json_object_set_new(cfg, "proxy", px);
	}
	p = json_object();
	if (!strcmp(plat, "baremetal")) {
		json_t *bm = json_pack("{s:s}", "provisioningNetwork", "Disabled");

		add_vips(bm, cluster);
		json_object_set_new(bm, "hosts", baremetal_hosts(cluster, hosts));
		json_object_set_new(p, "baremetal", bm);
	} else if (!strcmp(plat, "vsphere") || !strcmp(plat, "nutanix")) {
		json_t *v = json_object();

		if (!json_is_true(json_object_get(cluster, "user_managed_networking")))
			add_vips(v, cluster);
		json_object_set_new(p, plat, v);
	} else if (!strcmp(plat, "external")) {
		const json_t *e = json_object_get(json_object_get(cluster, "platform"), "external");

		json_object_set_new(p, "external", json_pack("{s:s, s:s}", "platformName", sget(e, "platform_name"),
							     "cloudControllerManager",
							     sget(e, "cloud_controller_manager")));
	} else {
		json_object_set_new(p, "none", json_object());
	}
	json_object_set_new(cfg, "platform", p);
	if (sno && *install_disk(bootstrap(hosts)))
		json_object_set_new(cfg, "bootstrapInPlace",
				    json_pack("{s:s}", "installationDisk", install_disk(bootstrap(hosts))));
	if (overrides_json_or_null && *overrides_json_or_null) {
		const char *tb;
		char why[256];
		int r;

		if (apply_overrides(&cfg, overrides_json_or_null, err) < 0) {
			json_decref(cfg);
			return NULL;
		}
		tb = sget(cfg, "additionalTrustBundle");
		if (*tb && (r = pem_bundle_check(tb, why, sizeof(why))) < 0) {
			json_decref(cfg);
			if (r == -EINVAL)
				overrides_err(err, why);
			else
				ah_err_set(err, r, 500, "InternalError", "out of memory checking the overrides");
			return NULL;
		}
	}
	/* The override's bundle first, then the cluster's (InfraEnv) bundles. */
	if (*tb_cluster) {
		strbuf sb = STRBUF_INIT;
		const char *ov = sget(cfg, "additionalTrustBundle");
		size_t b = 0, e;

		strbuf_addf(&sb, "%s%s%s", ov, *ov ? "\n" : "", tb_cluster);
		e = sb.len;
		while (b < e && isspace((unsigned char)sb.buf[b]))
			b++;
		while (e > b && isspace((unsigned char)sb.buf[e - 1]))
			e--;
		json_object_set_new(cfg, "additionalTrustBundle", json_stringn(sb.buf + b, e - b));
		strbuf_release(&sb);
	}
	return cfg;
}

/* ---- YAML printing ---- */

static bool is_keyword(const char *s)
{
	static const char *const kw[] = { "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", NULL };

	for (const char *const *k = kw; *k; k++)
		if (!strcasecmp(s, *k))
			return true;
	return false;
}

static bool looks_numeric(const char *s)
{
	char *end;

	if (!*s)
		return false;
	strtod(s, &end);
	if (!*end)
		return true;
	if (s[0] == '.' && (!strcasecmp(s, ".inf") || !strcasecmp(s, ".nan")))
		return true;
	return (isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+') && isdigit((unsigned char)s[1]))) &&
	       strchr(s, ':') != NULL;
}

static bool plain_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || is_keyword(s) || looks_numeric(s))
		return false;
	if (strchr("-.:/", s[0]) && s[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '.' || c == '_' || c == '/' || c == '-')
			continue;
		if (c == ':' && i + 1 < n && s[i + 1] != ' ')
			continue;
		return false;
	}
	return true;
}

/* Length of a character YAML cannot carry raw in a scalar at s (C0 controls
 * but the line feed, DEL, the C1 controls U+0080-U+009F and the line/paragraph
 * separators U+2028/U+2029, which parsers fold into line breaks), or 0. */
static size_t yaml_special_len(const unsigned char *s)
{
	if ((*s < 0x20 && *s != '\n') || *s == 0x7f)
		return 1;
	if (s[0] == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
		return 2;
	if (s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9))
		return 3;
	return 0;
}

/* A double-quoted YAML scalar: every special character escaped. */
static void yaml_double_quoted(strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	strbuf_addch(sb, '"');
	while (*p) {
		size_t l = yaml_special_len(p);

		if (*p == '"' || *p == '\\') {
			strbuf_addch(sb, '\\');
			strbuf_addch(sb, (char)*p);
		} else if (*p == '\n') {
			strbuf_adds(sb, "\\n");
		} else if (*p == '\t') {
			strbuf_adds(sb, "\\t");
		} else if (l == 1) {
			strbuf_addf(sb, "\\x%02X", *p);
		} else if (l == 2) {
			if (p[1] == 0x85)
				strbuf_adds(sb, "\\N");
			else
				strbuf_addf(sb, "\\x%02X", p[1]);
		} else if (l == 3) {
			strbuf_adds(sb, p[2] == 0xa8 ? "\\L" : "\\P");
		} else {
			strbuf_addch(sb, (char)*p);
		}
		p += l ? l : 1;
	}
	strbuf_addch(sb, '"');
}

static void yaml_string(strbuf *sb, const char *s, int indent)
{
	bool ctrl = false, nl = strchr(s, '\n') != NULL;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (yaml_special_len(p))
			ctrl = true;
	if (!ctrl && plain_ok(s)) {
		strbuf_adds(sb, s);
	} else if (nl && !ctrl && s[0] != ' ' && s[0] != '\n') {
		size_t n = strlen(s), trail = 0;
		const char *p = s;

		while (trail < n && s[n - 1 - trail] == '\n')
			trail++;
		strbuf_adds(sb, trail == 0 ? "|-" : trail == 1 ? "|" : "|+");
		while (*p) {
			size_t l = strcspn(p, "\n");

			strbuf_addch(sb, '\n');
			if (l)
				strbuf_addf(sb, "%*s%.*s", indent, "", (int)l, p);
			p += l;
			if (*p == '\n')
				p++;
		}
	} else if (!ctrl && !nl) {
		strbuf_addch(sb, '\'');
		for (const char *p = s; *p; p++) {
			if (*p == '\'')
				strbuf_addch(sb, '\'');
			strbuf_addch(sb, *p);
		}
		strbuf_addch(sb, '\'');
	} else {
		yaml_double_quoted(sb, s);
	}
}

static void yaml_scalar(strbuf *sb, const json_t *v, int indent)
{
	switch (json_typeof(v)) {
	case JSON_STRING:
		yaml_string(sb, json_string_value(v), indent);
		break;
	case JSON_INTEGER:
		strbuf_addf(sb, "%lld", (long long)json_integer_value(v));
		break;
	case JSON_REAL:
		strbuf_addf(sb, "%.17g", json_real_value(v));
		break;
	case JSON_TRUE:
		strbuf_adds(sb, "true");
		break;
	case JSON_FALSE:
		strbuf_adds(sb, "false");
		break;
	case JSON_OBJECT:
		strbuf_adds(sb, "{}");
		break;
	case JSON_ARRAY:
		strbuf_adds(sb, "[]");
		break;
	default:
		strbuf_adds(sb, "null");
	}
}

static bool is_block(const json_t *v)
{
	return (json_is_object(v) && json_object_size(v) > 0) || (json_is_array(v) && json_array_size(v) > 0);
}

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void yaml_node(strbuf *sb, const json_t *v, int indent, bool inline_first);

/* Mapping entries at indent; inline_first: the first key continues the
 * current line (after "- "). */
static void yaml_map(strbuf *sb, const json_t *v, int indent, bool inline_first)
{
	size_t n = json_object_size(v), i = 0;
	const char **keys = malloc(n * sizeof(*keys));
	const char *k;
	json_t *x;

	if (!keys)
		return;
	json_object_foreach((json_t *)v, k, x)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (i = 0; i < n; i++) {
		x = json_object_get(v, keys[i]);
		if (!(i == 0 && inline_first))
			strbuf_addf(sb, "%*s", indent, "");
		yaml_string(sb, keys[i], indent + 2);
		strbuf_addch(sb, ':');
		if (json_is_object(x) && json_object_size(x) > 0) {
			strbuf_addch(sb, '\n');
			yaml_map(sb, x, indent + 2, false);
		} else if (json_is_array(x) && json_array_size(x) > 0) {
			strbuf_addch(sb, '\n');
			yaml_node(sb, x, indent, false);
		} else {
			strbuf_addch(sb, ' ');
			yaml_scalar(sb, x, indent + 2);
			strbuf_addch(sb, '\n');
		}
	}
	free(keys);
}

static void yaml_node(strbuf *sb, const json_t *v, int indent, bool inline_first)
{
	if (json_is_object(v) && json_object_size(v) > 0) {
		yaml_map(sb, v, indent, inline_first);
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		const json_t *x;
		size_t i;

		json_array_foreach(v, i, x) {
			if (!(i == 0 && inline_first))
				strbuf_addf(sb, "%*s", indent, "");
			strbuf_adds(sb, "- ");
			if (is_block(x) && json_is_object(x)) {
				yaml_map(sb, x, indent + 2, true);
			} else if (is_block(x)) {
				yaml_node(sb, x, indent + 2, true);
			} else {
				yaml_scalar(sb, x, indent + 2);
				strbuf_addch(sb, '\n');
			}
		}
	} else {
		yaml_scalar(sb, v, indent);
		strbuf_addch(sb, '\n');
	}
}

char *installconfig_json_to_yaml(const json_t *v)
{
	strbuf sb = STRBUF_INIT;

	yaml_node(&sb, v, 0, false);
	if (!sb.buf)
		return strdup("");
	return strbuf_detach(&sb, NULL);
}

char *installconfig_build(const json_t *cluster, const json_t *hosts, const char *pull_secret,
			  const char *overrides_json_or_null, ah_err *err)
{
	json_t *tree = installconfig_tree(cluster, hosts, pull_secret, overrides_json_or_null, err);
	char *y;

	if (!tree)
		return NULL;
	y = installconfig_json_to_yaml(tree);
	json_decref(tree);
	if (!y)
		ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory printing the install-config");
	return y;
}
