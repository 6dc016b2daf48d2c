/* cluster.c - the cluster model built from the CRs, cluster validations,
 * RefreshStatus and the explicit cluster transitions, roles and bootstrap,
 * the auto-install gate and the AgentClusterInstall conditions.
 *
 * The rule tables follow internal/cluster/statemachine.go: rules are tried
 * in insertion order and the first whose source state and condition match
 * wins.  Nothing here does I/O or reads a clock. */
#include "assisted/cluster.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/cidr.h"
#include "assisted/installconfig.h"
#include "assisted/progress.h"
#include "assisted/validations.h"
#include "base/strbuf.h"
#include "base/util.h"

/* ---- small JSON helpers ---- */

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static json_int_t iget(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return util_double_to_i64(json_real_value(v));
	return 0;
}

static bool bget(const json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

static const json_t *path(const json_t *o, const char *a, const char *b)
{
	const json_t *v = json_object_get(o, a);

	return b ? json_object_get(v, b) : v;
}

static bool in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

/* A field that upstream stores as JSON text may arrive as text or as the
 * decoded value; either way return a new reference (NULL when absent or
 * unparsable). */
static json_t *jval(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_string(v)) {
		if (!*json_string_value(v))
			return NULL;
		return json_loads(json_string_value(v), 0, NULL);
	}
	if (!v || json_is_null(v))
		return NULL;
	return json_incref(v);
}

static void set_str(json_t *o, const char *k, const char *v)
{
	json_object_set_new(o, k, json_string(v ? v : ""));
}

static bool host_done_status(const json_t *h, const char *const *set)
{
	return in(sget(h, "status"), set);
}

bool cluster_is_sno(const json_t *cluster)
{
	const char *ha = sget(cluster, "high_availability_mode");

	if (*ha)
		return !strcmp(ha, "None");
	return iget(cluster, "control_plane_count") == 1;
}

static bool umn(const json_t *cluster)
{
	return bget(cluster, "user_managed_networking");
}

static bool dhcp(const json_t *cluster)
{
	return bget(cluster, "vip_dhcp_allocation");
}

static json_int_t control_plane_count(const json_t *cluster)
{
	json_int_t n = iget(cluster, "control_plane_count");

	if (n > 0)
		return n;
	return cluster_is_sno(cluster) ? 1 : 3;
}

/* ---- IP and CIDR helpers (inet_pton only; pure) ---- */

static bool parse_cidr(const char *s, struct cidr *c, bool need_prefix)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	char *end;
	long p;

	if (n == 0 || n >= sizeof(buf) || (need_prefix && !slash))
		return false;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(c, 0, sizeof(*c));
	if (inet_pton(AF_INET, buf, c->addr) == 1)
		c->family = 4;
	else if (inet_pton(AF_INET6, buf, c->addr) == 1)
		c->family = 6;
	else
		return false;
	if (!slash) {
		c->prefix = c->family == 4 ? 32 : 128;
		return true;
	}
	if (!slash[1])
		return false;
	p = strtol(slash + 1, &end, 10);
	if (*end || p < 0 || p > (c->family == 4 ? 32 : 128))
		return false;
	c->prefix = (int)p;
	return true;
}

static void cidr_mask(struct cidr *c)
{
	int bytes = c->family == 4 ? 4 : 16;

	for (int i = 0; i < bytes; i++) {
		int bits = c->prefix - i * 8;

		if (bits >= 8)
			continue;
		c->addr[i] &= bits <= 0 ? 0 : (unsigned char)(0xff << (8 - bits));
	}
}

/* "a.b.c.d/p" (network form) into buf. */
static void cidr_format(const struct cidr *c, bool with_prefix, char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(c->family == 4 ? AF_INET : AF_INET6, c->addr, ip, sizeof(ip));
	if (with_prefix)
		snprintf(buf, size, "%s/%d", ip, c->prefix);
	else
		snprintf(buf, size, "%s", ip);
}

static bool ip_in_cidr(const char *ip, const char *cidr)
{
	struct cidr a, n;

	return parse_cidr(ip, &a, false) && parse_cidr(cidr, &n, true) && cidr_contains(&n, &a);
}

static bool is_ipv6(const char *s)
{
	struct cidr c;

	return parse_cidr(s, &c, false) && c.family == 6;
}

/* ---- hosts ---- */

static json_t *host_inventory(const json_t *host)
{
	json_t *inv = jval(host, "inventory");

	if (inv && !json_is_object(inv)) {
		json_decref(inv);
		return NULL;
	}
	return inv;
}

static bool has_inventories(const json_t *hosts)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h) {
		json_t *inv = host_inventory(h);

		if (inv) {
			json_decref(inv);
			return true;
		}
	}
	return false;
}

/* The network (CIDR form) of the host address that holds ip, or "". */
static bool host_network_of(const json_t *inv, const char *ip, char *buf, size_t size)
{
	struct cidr vip, a;
	const json_t *nic, *addr;
	size_t i, j;

	if (!parse_cidr(ip, &vip, false))
		return false;
	json_array_foreach(json_object_get(inv, "interfaces"), i, nic) {
		const char *key = vip.family == 4 ? "ipv4_addresses" : "ipv6_addresses";

		json_array_foreach(json_object_get(nic, key), j, addr) {
			if (!json_is_string(addr) || !parse_cidr(json_string_value(addr), &a, true))
				continue;
			if (cidr_contains(&a, &vip)) {
				cidr_mask(&a);
				cidr_format(&a, true, buf, size);
				return true;
			}
		}
	}
	return false;
}

/* First host address inside cidr (without prefix) into buf. */
static bool host_ip_in(const json_t *inv, const char *cidr, char *buf, size_t size)
{
	struct cidr net, a;
	const json_t *nic, *addr;
	size_t i, j;

	if (!parse_cidr(cidr, &net, true))
		return false;
	json_array_foreach(json_object_get(inv, "interfaces"), i, nic) {
		const char *key = net.family == 4 ? "ipv4_addresses" : "ipv6_addresses";

		json_array_foreach(json_object_get(nic, key), j, addr) {
			if (!json_is_string(addr) || !parse_cidr(json_string_value(addr), &a, true))
				continue;
			if (cidr_contains(&net, &a)) {
				cidr_format(&a, false, buf, size);
				return true;
			}
		}
	}
	return false;
}

static const char *cidr_at(const json_t *cluster, const char *list, size_t i)
{
	return sget(json_array_get(json_object_get(cluster, list), i), "cidr");
}

static bool machine_cidr_available(const json_t *cluster)
{
	return *cidr_at(cluster, "machine_networks", 0) != '\0';
}

static const json_t *bootstrap_host(const json_t *hosts)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h)
		if (bget(h, "bootstrap"))
			return h;
	return NULL;
}

/* ---- the model from the CRs ---- */

static int input_err(ah_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int input_err(ah_err *err, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ah_err_setv(err, EINVAL, 400, "InputError", fmt, ap);
	va_end(ap);
	return r;
}

int cluster_release_from_image(const char *image, char *ret_version, size_t vsize, char *ret_arch, size_t asize)
{
	static const char *const arches[] = { "x86_64", "aarch64", "arm64", "ppc64le", "s390x", "multi", NULL };
	const char *slash, *colon, *tag;
	char t[256];
	size_t n;

	if (!image || !*image || strchr(image, '@'))
		return -EINVAL;
	slash = strrchr(image, '/');
	colon = strrchr(slash ? slash : image, ':');
	if (!colon || !colon[1])
		return -EINVAL;
	tag = colon + 1;
	if (tag[0] < '0' || tag[0] > '9' || !strchr(tag, '.'))
		return -EINVAL;
	n = strlen(tag);
	if (n >= sizeof(t))
		return -EINVAL;
	memcpy(t, tag, n + 1);
	snprintf(ret_arch, asize, "x86_64");
	for (const char *const *a = arches; *a; a++) {
		size_t al = strlen(*a);

		if (n > al + 1 && t[n - al - 1] == '-' && !strcmp(t + n - al, *a)) {
			snprintf(ret_arch, asize, "%s", !strcmp(*a, "arm64") ? "aarch64" : *a);
			t[n - al - 1] = '\0';
			break;
		}
	}
	snprintf(ret_version, vsize, "%s", t);
	return 0;
}

static bool version_ge(const char *v, int maj, int min)
{
	int a = 0, b = 0;

	if (!v || sscanf(v, "%d.%d", &a, &b) < 2)
		return false;
	return a > maj || (a == maj && b >= min);
}

/* Normalise a CIDR the way the backend stores it; -EINVAL with the Go
 * ParseCIDR text when it does not parse. */
static int norm_cidr(const char *field, const char *s, char *buf, size_t size, ah_err *err)
{
	struct cidr c;

	if (!parse_cidr(s, &c, true))
		return input_err(err, "%s: invalid CIDR address: %s", field, s);
	cidr_format(&c, true, buf, size);
	return 0;
}

static int model_networks(json_t *m, const json_t *net, ah_err *err)
{
	json_t *mn = json_array(), *cn = json_array(), *sn = json_array(), *x;
	char buf[80];
	size_t i;
	int r = 0;

	json_object_set_new(m, "machine_networks", mn);
	json_object_set_new(m, "cluster_networks", cn);
	json_object_set_new(m, "service_networks", sn);
	json_array_foreach(json_object_get(net, "machineNetwork"), i, x) {
		if ((r = norm_cidr("spec.networking.machineNetwork", sget(x, "cidr"), buf, sizeof(buf), err)) < 0)
			return r;
		json_array_append_new(mn, json_pack("{s:s}", "cidr", buf));
	}
	json_array_foreach(json_object_get(net, "clusterNetwork"), i, x) {
		if ((r = norm_cidr("spec.networking.clusterNetwork", sget(x, "cidr"), buf, sizeof(buf), err)) < 0)
			return r;
		json_array_append_new(cn, json_pack("{s:s, s:I}", "cidr", buf, "host_prefix", iget(x, "hostPrefix")));
	}
	json_array_foreach(json_object_get(net, "serviceNetwork"), i, x) {
		if ((r = norm_cidr("spec.networking.serviceNetwork", json_string_value(x) ? json_string_value(x) : "",
				   buf, sizeof(buf), err)) < 0)
			return r;
		json_array_append_new(sn, json_pack("{s:s}", "cidr", buf));
	}
	if (json_array_size(cn) == 0)
		json_array_append_new(cn, json_pack("{s:s, s:i}", "cidr", "10.128.0.0/14", "host_prefix", 23));
	if (json_array_size(sn) == 0)
		json_array_append_new(sn, json_pack("{s:s}", "cidr", "172.30.0.0/16"));
	return 0;
}

static bool any_ipv6_network(const json_t *m)
{
	static const char *const lists[] = { "machine_networks", "cluster_networks", "service_networks" };
	const json_t *x;
	size_t i;

	for (size_t l = 0; l < 3; l++)
		json_array_foreach(json_object_get(m, lists[l]), i, x)
			if (is_ipv6(sget(x, "cidr")))
				return true;
	return false;
}

/* VIP list from the plural field, else the singular one; a singular that
 * disagrees with the first element of the list is an error. */
static int model_vips(json_t *m, const json_t *spec, const char *plural, const char *singular,
		      const char *key, ah_err *err)
{
	const json_t *list = json_object_get(spec, plural), *x;
	const char *one = sget(spec, singular);
	json_t *out = json_array();
	size_t i;

	json_object_set_new(m, key, out);
	if (json_array_size(list) > 0 && *one && strcmp(one, json_string_value(json_array_get(list, 0)) ?: ""))
		return input_err(err, "%s must be the same as the first element of %s", singular, plural);
	json_array_foreach(list, i, x)
		if (json_is_string(x) && *json_string_value(x))
			json_array_append_new(out, json_pack("{s:s}", "ip", json_string_value(x)));
	if (json_array_size(out) == 0 && *one)
		json_array_append_new(out, json_pack("{s:s}", "ip", one));
	return 0;
}

static const char *pool_ht(const json_t *pool)
{
	const char *ht = sget(pool, "hyperthreading");

	return *ht ? ht : "Enabled";
}

static void model_hyperthreading(json_t *m, const json_t *spec)
{
	const json_t *cp = json_object_get(spec, "controlPlane"), *arb = json_object_get(spec, "arbiter");
	const json_t *worker = NULL, *x;
	bool me, ae, we;
	char buf[64] = "";
	size_t i;

	json_array_foreach(json_object_get(spec, "compute"), i, x)
		if (!strcmp(sget(x, "name"), "worker"))
			worker = x;
	if (!cp && !arb && !worker) {
		set_str(m, "hyperthreading", "all");
		return;
	}
	me = !cp || !strcmp(pool_ht(cp), "Enabled");
	ae = arb && !strcmp(pool_ht(arb), "Enabled");
	we = !worker || !strcmp(pool_ht(worker), "Enabled");
	if (me && we && (ae || !arb)) {
		set_str(m, "hyperthreading", "all");
		return;
	}
	if (me)
		strcat(buf, "masters");
	if (ae)
		strcat(buf, *buf ? ",arbiters" : "arbiters");
	if (we)
		strcat(buf, *buf ? ",workers" : "workers");
	set_str(m, "hyperthreading", *buf ? buf : "none");
}

static int model_platform(json_t *m, const json_t *spec, bool sno, const json_t *umn_spec, ah_err *err)
{
	static const struct {
		const char *crd, *backend;
	} map[] = { { "BareMetal", "baremetal" }, { "None", "none" }, { "VSphere", "vsphere" },
		    { "Nutanix", "nutanix" }, { "External", "external" } };
	const char *pt = sget(spec, "platformType"), *plat = NULL;
	bool u;
	json_t *p;

	if (sno && json_is_false(umn_spec))
		return input_err(err, "UserManagedNetworking must be set to true with SNO");
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(pt, map[i].crd))
			plat = map[i].backend;
	if (*pt && !plat)
		return input_err(err, "spec.platformType: unsupported platform type \"%s\"", pt);
	if (!plat)
		plat = (sno || json_is_true(umn_spec)) ? "none" : "baremetal";
	if (json_is_boolean(umn_spec))
		u = json_is_true(umn_spec) || sno;
	else
		u = sno || !strcmp(plat, "none") || !strcmp(plat, "external");
	if (sno && !strcmp(plat, "vsphere"))
		return input_err(err, "Single node cluster is not supported alongside vsphere platform");
	if (sno && !strcmp(plat, "baremetal"))
		return input_err(err, "Can't set baremetal platform on single node OpenShift");
	if (u && (!strcmp(plat, "baremetal") || !strcmp(plat, "nutanix")))
		return input_err(err, "Can't set %s platform with user-managed-networking enabled", plat);
	if (!u && (!strcmp(plat, "none") || !strcmp(plat, "external")))
		return input_err(err, "Can't set %s platform with user-managed-networking disabled", plat);
	p = json_pack("{s:s}", "type", plat);
	if (!strcmp(plat, "external")) {
		const json_t *ext = json_object_get(spec, "external");

		if (!json_is_object(ext)) {
			json_decref(p);
			return input_err(err, "For external platform, the external platform spec must be set");
		}
		json_object_set_new(p, "external",
				    json_pack("{s:s, s:s}", "platform_name",
					      *sget(ext, "platformName") ? sget(ext, "platformName") : "Unknown",
					      "cloud_controller_manager", sget(ext, "cloudControllerManager")));
	}
	json_object_set_new(m, "platform", p);
	json_object_set_new(m, "user_managed_networking", json_boolean(u));
	return 0;
}

/* The ignored-validations annotation: comma list → JSON array text; absent
 * → field not set (service defaults); present but empty → "[]". */
static int model_ignored(json_t *m, const json_t *aci, const char *annotation, const char *key, ah_err *err)
{
	const json_t *v = json_object_get(path(aci, "metadata", "annotations"), annotation);
	const char *s, *p;
	json_t *arr;
	char *txt;

	if (!json_is_string(v))
		return 0;
	s = json_string_value(v);
	arr = json_array();
	p = s;
	while (*s) {
		size_t n = strcspn(p, ",");
		const char *b = p, *e = p + n;
		char id[256];
		size_t k;
		bool dup = false;
		json_t *x;

		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == b) {
			json_decref(arr);
			return input_err(err, "empty ignored validation ID found in '%s'", s);
		}
		snprintf(id, sizeof(id), "%.*s", (int)(e - b), b);
		json_array_foreach(arr, k, x)
			if (!strcmp(json_string_value(x), id))
				dup = true;
		if (!dup)
			json_array_append_new(arr, json_string(id));
		p += n;
		if (*p != ',')
			break;
		p++;
	}
	txt = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	set_str(m, key, txt);
	free(txt);
	return 0;
}

json_t *cluster_model_from_crs(const json_t *cd, const json_t *aci, const json_t *imageset, ah_err *err)
{
	const json_t *cds = json_object_get(cd, "spec"), *spec = json_object_get(aci, "spec");
	const json_t *net = json_object_get(spec, "networking"), *req = json_object_get(spec, "provisionRequirements");
	const json_t *psr = json_object_get(cds, "pullSecretRef"), *umn_spec;
	const char *imageset_ref = sget(json_object_get(spec, "imageSetRef"), "name"), *ann;
	bool installed = bget(cds, "installed");
	json_int_t cp = iget(req, "controlPlaneAgents"), workers = iget(req, "workerAgents");
	bool sno = cp == 1 && workers == 0;
	json_t *m = json_object();
	char ver[128] = "", arch[32] = "";
	int r;

	if (!json_is_object(cd) || !json_is_object(aci)) {
		json_decref(m);
		ah_err_set(err, EINVAL, 400, "InputError", "a ClusterDeployment and an AgentClusterInstall are required");
		return NULL;
	}
	if (!installed && !psr) {
		input_err(err, "PullSecret is required for ClusterDeployment %s/%s", sget(path(cd, "metadata", NULL), "name"),
			  sget(path(cd, "metadata", NULL), "namespace"));
		goto fail;
	}
	if (psr && !*sget(psr, "name")) {
		input_err(err, "Missing reference to pull secret");
		goto fail;
	}
	if (!installed && !*imageset_ref) {
		input_err(err, "ClusterImageSet must be specified in AgentClusterInstall.Spec.ImageSetRef for cluster that is not installed");
		goto fail;
	}
	if (*imageset_ref && !imageset && !installed) {
		ah_err_set(err, ENOENT, 500, "BackendError", "ClusterImageSet %s not found. Please ensure the ClusterImageSet exists",
			   imageset_ref);
		goto fail;
	}
	if (imageset) {
		const char *img = sget(json_object_get(imageset, "spec"), "releaseImage");

		set_str(m, "ocp_release_image", img);
		if (cluster_release_from_image(img, ver, sizeof(ver), arch, sizeof(arch)) == 0) {
			set_str(m, "openshift_version", ver);
			set_str(m, "cpu_architecture", arch);
		} else if (!installed) {
			input_err(err, "failed to get the OpenShift version of release image %s: reference the release by a tag such as 4.14.0-x86_64",
				  img);
			goto fail;
		}
	}
	set_str(m, "kind", installed ? "AddHostsCluster" : "Cluster");
	set_str(m, "name", sget(cds, "clusterName"));
	set_str(m, "base_dns_domain", sget(cds, "baseDomain"));
	json_object_set_new(m, "control_plane_count", json_integer(cp));
	set_str(m, "high_availability_mode", sno ? "None" : "Full");
	json_object_set_new(m, "vip_dhcp_allocation", json_false());
	if ((r = model_networks(m, net, err)) < 0)
		goto fail;
	umn_spec = json_object_get(net, "userManagedNetworking");
	if ((r = model_platform(m, spec, sno, umn_spec, err)) < 0)
		goto fail;
	/* Upstream's registration refuses VIPs with user-managed networking
	 * (an update says it the other way round: cluster.c swaps it). */
	if (!sno && umn(m) && (json_array_size(json_object_get(spec, "apiVIPs")) || *sget(spec, "apiVIP"))) {
		input_err(err, "API VIPs cannot be set with User Managed Networking");
		goto fail;
	}
	if (!sno && umn(m) && (json_array_size(json_object_get(spec, "ingressVIPs")) || *sget(spec, "ingressVIP"))) {
		input_err(err, "Ingress VIPs cannot be set with User Managed Networking");
		goto fail;
	}
	if (sno || umn(m)) {
		json_object_set_new(m, "api_vips", json_array());
		json_object_set_new(m, "ingress_vips", json_array());
	} else if ((r = model_vips(m, spec, "apiVIPs", "apiVIP", "api_vips", err)) < 0 ||
		   (r = model_vips(m, spec, "ingressVIPs", "ingressVIP", "ingress_vips", err)) < 0) {
		goto fail;
	}
	if (*sget(net, "networkType"))
		set_str(m, "network_type", sget(net, "networkType"));
	else if (!installed)
		set_str(m, "network_type",
			any_ipv6_network(m) || sno || version_ge(ver, 4, 12) ? "OVNKubernetes" : "OpenShiftSDN");
	/* OpenShiftSDN: never on a single node, and gone from 4.15 on, as
	 * upstream's registration and feature support say. */
	if (!installed && !strcmp(sget(m, "network_type"), "OpenShiftSDN")) {
		if (sno) {
			input_err(err, "OpenShiftSDN network type is not allowed in single node mode");
			goto fail;
		}
		if (version_ge(ver, 4, 15)) {
			input_err(err, "Openshift version %s is not supported for OpenShiftSDN NetworkType", ver);
			goto fail;
		}
	}
	model_hyperthreading(m, spec);
	json_object_set_new(m, "schedulable_masters", json_boolean(bget(spec, "mastersSchedulable")));
	{
		const char *k = sget(spec, "sshPublicKey");
		size_t n = strlen(k);

		while (*k == ' ' || *k == '\n' || *k == '\t' || *k == '\r')
			k++, n--;
		while (n > 0 && (k[n - 1] == ' ' || k[n - 1] == '\n' || k[n - 1] == '\t' || k[n - 1] == '\r'))
			n--;
		json_object_set_new(m, "ssh_public_key", json_stringn(k, n));
	}
	{
		const json_t *px = json_object_get(spec, "proxy");

		set_str(m, "http_proxy", sget(px, "httpProxy"));
		set_str(m, "https_proxy", sget(px, "httpsProxy"));
		set_str(m, "no_proxy", sget(px, "noProxy"));
	}
	{
		strbuf sb = STRBUF_INIT;
		const json_t *x;
		size_t i;

		json_array_foreach(json_object_get(spec, "ntpSources"), i, x)
			if (json_is_string(x))
				strbuf_addf(&sb, "%s%s", sb.len ? "," : "", json_string_value(x));
		set_str(m, "additional_ntp_source", sb.buf ? sb.buf : "");
		strbuf_release(&sb);
	}
	{
		const json_t *de = json_object_get(spec, "diskEncryption");
		json_t *d = json_pack("{s:s, s:s}", "enable_on",
				      *sget(de, "enableOn") ? sget(de, "enableOn") : "none", "mode",
				      *sget(de, "mode") ? sget(de, "mode") : "tpmv2");

		if (*sget(de, "tangServers"))
			set_str(d, "tang_servers", sget(de, "tangServers"));
		json_object_set_new(m, "disk_encryption", d);
	}
	{
		const char *lb = sget(json_object_get(spec, "loadBalancer"), "type");

		json_object_set_new(m, "load_balancer", json_pack("{s:s}", "type",
								  !strcmp(lb, "UserManaged") ? "user-managed"
											     : "cluster-managed"));
	}
	ann = sget(path(aci, "metadata", "labels"), "agentclusterinstalls.agent-install.openshift.io/consumer");
	if (*ann)
		set_str(m, "tags", ann);
	if ((r = model_ignored(m, aci, "agent-install.openshift.io/ignored-cluster-validations",
			       "ignored_cluster_validations", err)) < 0 ||
	    (r = model_ignored(m, aci, "agent-install.openshift.io/ignored-host-validations",
			       "ignored_host_validations", err)) < 0)
		goto fail;
	ann = sget(path(aci, "metadata", "annotations"), INSTALLCONFIG_OVERRIDES_ANNOTATION);
	if (*ann && !installed) {
		if (installconfig_check_overrides(ann, err) < 0)
			goto fail;
		set_str(m, "install_config_overrides", ann);
	}
	return m;
fail:
	json_decref(m);
	return NULL;
}

void cluster_model_carry_state(json_t *model, const json_t *prev)
{
	static const char *const keys[] = { "id", "status", "status_info", "status_updated_at", "install_started_at",
					    "install_completed_at", "progress", "last_installation_preparation",
					    "validations_info", "pull_secret_set", "logs_info",
					    "controller_logs_started_at", "controller_logs_collected_at",
					    "connectivity_majority_groups", "monitored_operators", "openshift_cluster_id",
					    "created_at", "ip_collisions", "machine_network_cidr_updated_at",
					    "api_vip_dnsname", NULL };
	static const char *const frozen[] = { "installing", "installing-pending-user-action", "finalizing",
					      "installed", "adding-hosts", "error", "cancelled", NULL };

	if (!model || !json_is_object(prev))
		return;
	for (const char *const *k = keys; *k; k++) {
		json_t *v = json_object_get(prev, *k);

		if (v && !json_object_get(model, *k))
			json_object_set(model, *k, v);
	}
	if (!strcmp(sget(prev, "kind"), "AddHostsCluster"))
		set_str(model, "kind", "AddHostsCluster");
	/* An auto-assigned machine network survives a rebuild from a spec
	 * that names none. */
	if (json_array_size(json_object_get(model, "machine_networks")) == 0 &&
	    json_array_size(json_object_get(prev, "machine_networks")) > 0)
		json_object_set(model, "machine_networks", json_object_get(prev, "machine_networks"));
	/* SNO VIPs are the host IP once installing; keep them. */
	if (cluster_is_sno(model) && in(sget(prev, "status"), frozen)) {
		json_object_set(model, "api_vips", json_object_get(prev, "api_vips"));
		json_object_set(model, "ingress_vips", json_object_get(prev, "ingress_vips"));
	} else {
		/* Keep each VIP's verification while its address is unchanged. */
		static const char *const lists[] = { "api_vips", "ingress_vips" };

		for (size_t l = 0; l < 2; l++) {
			json_t *nv = json_object_get(model, lists[l]), *x;
			const json_t *ov = json_object_get(prev, lists[l]), *y;
			size_t i, j;

			json_array_foreach(nv, i, x)
				json_array_foreach(ov, j, y)
					if (!strcmp(sget(x, "ip"), sget(y, "ip")) && json_object_get(y, "verification"))
						json_object_set(x, "verification", json_object_get(y, "verification"));
		}
	}
}

bool cluster_crs_installed(const json_t *cd, const json_t *aci)
{
	const json_t *c;
	size_t i;

	if (bget(json_object_get(cd, "spec"), "installed"))
		return true;
	json_array_foreach(path(aci, "status", "conditions"), i, c)
		if (!strcmp(sget(c, "type"), "Completed"))
			return !strcmp(sget(c, "status"), "True") && !strcmp(sget(c, "reason"), "InstallationCompleted");
	return false;
}

void cluster_import_day2(json_t *model, const json_t *cd, const json_t *aci, int64_t now)
{
	const char *id = sget(path(aci, "spec", "clusterMetadata"), "clusterID");
	char dns[600];

	if (!*id)
		id = sget(path(cd, "spec", "clusterMetadata"), "clusterID");
	set_str(model, "kind", "AddHostsCluster");
	set_str(model, "status", "adding-hosts");
	set_str(model, "status_info", CLUSTER_INFO_ADDING_HOSTS);
	json_object_set_new(model, "status_updated_at", json_integer(now));
	snprintf(dns, sizeof(dns), "api.%s.%s", sget(model, "name"), sget(model, "base_dns_domain"));
	set_str(model, "api_vip_dnsname", dns);
	set_str(model, "openshift_cluster_id", id);
}

int cluster_apply_vip_verifications(json_t *cluster, const json_t *output)
{
	const json_t *r;
	size_t i;
	int n = 0;

	if (!json_is_array(output))
		return -EINVAL;
	json_array_foreach(output, i, r) {
		const char *type = sget(r, "vip_type");
		json_t *list = json_object_get(cluster, !strcmp(type, "ingress") ? "ingress_vips" : "api_vips"), *x;
		size_t j;

		if (strcmp(type, "api") && strcmp(type, "ingress"))
			continue;
		json_array_foreach(list, j, x)
			if (!strcmp(sget(x, "ip"), sget(r, "vip")) && *sget(r, "verification") &&
			    strcmp(sget(x, "verification"), sget(r, "verification"))) {
				set_str(x, "verification", sget(r, "verification"));
				n++;
			}
	}
	return n;
}

/* ---- validations (backend §4) ---- */

#define NET "network"
#define HOSTS "hosts-data"
#define CONF "configuration"
#define OPS "operators"

struct cv {
	const json_t *cluster;
	const json_t *hosts;
	const struct cluster_refresh_ctx *ctx;
	bool has_inv;
	json_t *out;
};

static void put(struct cv *v, const char *id, const char *cat, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void put(struct cv *v, const char *id, const char *cat, const char *status, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_object_set_new(v->out, id, json_pack("{s:s, s:s, s:s}", "category", cat, "status", status, "message", msg));
}

static bool status_of(const struct cv *v, const char *id, const char *st)
{
	return !strcmp(sget(json_object_get(v->out, id), "status"), st);
}

static void v_machine_cidr_defined(struct cv *v)
{
	const json_t *c = v->cluster;

	if (umn(c) && !cluster_is_sno(c))
		put(v, "machine-cidr-defined", NET, "success", "No Machine Network CIDR needed: User Managed Networking");
	else if (machine_cidr_available(c))
		put(v, "machine-cidr-defined", NET, "success", "The Machine Network CIDR is defined.");
	else if (!v->has_inv)
		put(v, "machine-cidr-defined", NET, "pending", "Hosts have not been discovered yet");
	else if (dhcp(c))
		put(v, "machine-cidr-defined", NET, "failure",
		    "The Machine Network CIDR is undefined; setting the Machine Network CIDR initiates the VIPs DHCP lease allocation.");
	else if (cluster_is_sno(c))
		put(v, "machine-cidr-defined", NET, "failure",
		    "The Machine Network CIDR is undefined; Setting Machine Network CIDR is required for single node cluster");
	else
		put(v, "machine-cidr-defined", NET, "failure",
		    "The Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs.");
}

/* The network of a host address that holds vip ("" and false when none). */
static bool calculate_machine_cidr(const json_t *hosts, const char *vip, char *buf, size_t size)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h) {
		json_t *inv = host_inventory(h);
		bool ok = inv && host_network_of(inv, vip, buf, size);

		json_decref(inv);
		if (ok)
			return true;
	}
	return false;
}

/* go-multierror's default list format. */
static void multierror(strbuf *out, char errs[][512], size_t n)
{
	if (n == 1) {
		strbuf_addf(out, "1 error occurred:\n\t* %s\n\n", errs[0]);
		return;
	}
	strbuf_addf(out, "%zu errors occurred:", n);
	for (size_t i = 0; i < n; i++)
		strbuf_addf(out, "\n\t* %s", errs[i]);
	strbuf_adds(out, "\n\n");
}

static void v_machine_cidr_equals(struct cv *v)
{
	const json_t *c = v->cluster, *api = json_object_get(c, "api_vips"), *ing = json_object_get(c, "ingress_vips");
	char errs[4][512];
	size_t n = 0;

	if (umn(c)) {
		put(v, "machine-cidr-equals-to-calculated-cidr", NET, "success",
		    "The Cluster Machine CIDR is not required: User Managed Networking");
		return;
	}
	if (json_array_size(api) == 0 && json_array_size(ing) == 0) {
		put(v, "machine-cidr-equals-to-calculated-cidr", NET, "pending",
		    "The Machine Network CIDR, API virtual IPs, or Ingress virtual IPs are undefined.");
		return;
	}
	if (!v->has_inv) {
		put(v, "machine-cidr-equals-to-calculated-cidr", NET, "pending", "Hosts have not been discovered yet");
		return;
	}
	for (size_t i = 0; i < json_array_size(api) && n < 4; i++) {
		const char *vip = sget(json_array_get(api, i), "ip");
		char calc[80];

		if (!*vip)
			vip = sget(json_array_get(ing, i), "ip");
		if (!calculate_machine_cidr(v->hosts, vip, calc, sizeof(calc))) {
			snprintf(errs[n++], sizeof(errs[0]), "No suitable matching CIDR found for VIP %s", vip);
			continue;
		}
		if (machine_cidr_available(c) && strcmp(calc, cidr_at(c, "machine_networks", i)))
			snprintf(errs[n++], sizeof(errs[0]), "The Cluster Machine CIDR %s is different than the calculated CIDR %s.",
				 cidr_at(c, "machine_networks", i), calc);
	}
	if (n) {
		strbuf sb = STRBUF_INIT;

		multierror(&sb, errs, n);
		put(v, "machine-cidr-equals-to-calculated-cidr", NET, "failure", "%s", sb.buf);
		strbuf_release(&sb);
		return;
	}
	put(v, "machine-cidr-equals-to-calculated-cidr", NET, "success",
	    "The Cluster Machine CIDR is equivalent to the calculated CIDR.");
}

static void vips_defined(struct cv *v, const char *id, const char *list, const char *name)
{
	const json_t *c = v->cluster;

	if (umn(c))
		put(v, id, NET, "success", "%s virtual IPs are not required: User Managed Networking", name);
	else if (cluster_is_sno(c))
		put(v, id, NET, "success", "%s virtual IPs are not required: SNO", name);
	else if (json_array_size(json_object_get(c, list)) > 0)
		put(v, id, NET, "success", "%s virtual IPs are defined.", name);
	else if (dhcp(c) && !status_of(v, "machine-cidr-defined", "success"))
		put(v, id, NET, "pending", "The Machine Network CIDR is undefined");
	else if (dhcp(c))
		put(v, id, NET, "failure",
		    "%s virtual IPs are undefined; after the Machine Network CIDR has been defined, %s virtual IPs are received from a DHCP lease allocation task which may take up to 2 minutes.",
		    name, name);
	else
		put(v, id, NET, "failure", "%s virtual IPs are undefined and must be provided.", name);
}

enum vipv { VIP_UNVERIFIED, VIP_SUCCEEDED, VIP_FAILED };

/* Whether vip is in the hosts' free-address list of network (upstream
 * IpInFreeList): succeeded when listed, failed when some host scanned the
 * network without listing it, unverified when nobody scanned it. */
static enum vipv vip_free(const json_t *hosts, const char *vip, const char *network)
{
	enum vipv r = VIP_UNVERIFIED;
	const json_t *h, *f, *a;
	size_t i, j, k;

	json_array_foreach(hosts, i, h) {
		json_t *fa = jval(h, "free_addresses");

		json_array_foreach(fa, j, f) {
			if (strcmp(sget(f, "network"), network))
				continue;
			json_array_foreach(json_object_get(f, "free_addresses"), k, a)
				if (json_is_string(a) && !strcmp(json_string_value(a), vip)) {
					json_decref(fa);
					return VIP_SUCCEEDED;
				}
			r = VIP_FAILED;
		}
		json_decref(fa);
	}
	return r;
}

static bool is_broadcast(const char *ip, const char *cidr)
{
	struct cidr a, n;

	if (!parse_cidr(ip, &a, false) || a.family != 4 || !parse_cidr(cidr, &n, true) || n.prefix >= 31)
		return false;
	for (int b = n.prefix; b < 32; b++)
		if (!(a.addr[b / 8] & (0x80 >> (b % 8))))
			return false;
	return true;
}

static bool machine_cidr_big_enough(const json_t *hosts, const char *cidr)
{
	struct cidr n;
	int bits;

	if (!parse_cidr(cidr, &n, true))
		return true;
	bits = n.family == 4 ? 32 : 128;
	if (json_array_size(hosts) == 1)
		return n.prefix <= bits - 1;
	if (bits - n.prefix >= 62)
		return true;
	return (long long)(1LL << (bits - n.prefix)) - (long long)json_array_size(hosts) - 4 >= 0;
}

/* upstream VerifyVip: the verification outcome and, unless succeeded, a message. */
static enum vipv verify_vip(const json_t *hosts, const char *cidr, const json_t *vip, const char *name, char *msg,
			    size_t size)
{
	const char *ip = sget(vip, "ip"), *ver = sget(vip, "verification");
	enum vipv r;

	if (!*cidr) {
		snprintf(msg, size, "%s <%s> cannot be set if Machine Network CIDR is empty", name, ip);
		return VIP_UNVERIFIED;
	}
	if (!ip_in_cidr(ip, cidr)) {
		snprintf(msg, size, "%s <%s> does not belong to machine-network-cidr <%s>", name, ip, cidr);
		return VIP_FAILED;
	}
	if (is_broadcast(ip, cidr)) {
		snprintf(msg, size, "%s <%s> is the broadcast address of machine-network-cidr <%s>", name, ip, cidr);
		return VIP_FAILED;
	}
	if (!strcmp(ver, "succeeded"))
		r = VIP_SUCCEEDED;
	else if (!strcmp(ver, "failed"))
		r = VIP_FAILED;
	else
		r = vip_free(hosts, ip, cidr);
	if (r == VIP_FAILED)
		snprintf(msg, size, "%s <%s> is already in use in cidr %s%s", name, ip, cidr,
			 machine_cidr_big_enough(hosts, cidr)
				 ? ""
				 : ". The machine network range is too small for the cluster. Please redefine the network.");
	else if (r == VIP_UNVERIFIED)
		snprintf(msg, size, "%s <%s> are not verified yet.", name, ip);
	return r;
}

static void vips_valid(struct cv *v, const char *id, const char *list, const char *name, const char *lname)
{
	const json_t *c = v->cluster, *vips = json_object_get(c, list), *x;
	strbuf msgs = STRBUF_INIT, ips = STRBUF_INIT;
	bool failed = false;
	size_t i;

	if (umn(c)) {
		put(v, id, NET, "success", "%s virtual IPs are not required: User Managed Networking", name);
		return;
	}
	if (cluster_is_sno(c)) {
		put(v, id, NET, "success", "%s virtual IPs are not required: SNO", name);
		return;
	}
	if (json_array_size(vips) == 0) {
		put(v, id, NET, "pending", "%s virtual IPs are undefined.", name);
		return;
	}
	if (!v->has_inv || !status_of(v, "machine-cidr-defined", "success")) {
		put(v, id, NET, "pending", "Hosts have not been discovered yet");
		return;
	}
	json_array_foreach(vips, i, x) {
		char msg[512] = "";
		enum vipv r = verify_vip(v->hosts, cidr_at(c, "machine_networks", i), x, lname, msg, sizeof(msg));

		if (r != VIP_SUCCEEDED) {
			failed = true;
			strbuf_addf(&msgs, "%s%s", msgs.len ? ";" : "", msg);
		}
		strbuf_addf(&ips, "%s%s", ips.len ? ", " : "", sget(x, "ip"));
	}
	if (failed)
		put(v, id, NET, "failure", "%s", msgs.buf ? msgs.buf : "");
	else
		put(v, id, NET, "success", "%s %s belongs to the Machine CIDR and is not in use.", lname, ips.buf);
	strbuf_release(&msgs);
	strbuf_release(&ips);
}

static void v_cidrs_defined(struct cv *v)
{
	if (json_array_size(json_object_get(v->cluster, "cluster_networks")) > 0)
		put(v, "cluster-cidr-defined", NET, "success", "The Cluster Network CIDR is defined.");
	else
		put(v, "cluster-cidr-defined", NET, "failure", "The Cluster Network CIDR is undefined.");
	if (json_array_size(json_object_get(v->cluster, "service_networks")) > 0)
		put(v, "service-cidr-defined", NET, "success", "The Service Network CIDR is defined.");
	else
		put(v, "service-cidr-defined", NET, "failure", "The Service Network CIDR is undefined.");
}

static bool machine_network_required(const json_t *c)
{
	return !umn(c) || cluster_is_sno(c);
}

static void overlap_pair(strbuf *sb, const char *a, const char *b, const char *suffix_fmt, bool prefix)
{
	struct cidr x, y;

	if (!*a || !*b)
		return;
	if (!parse_cidr(a, &x, true)) {
		strbuf_addf(sb, "%sFailed to parse CIDR '%s': invalid CIDR address: %s", sb->len ? "\n" : "", a, a);
		return;
	}
	if (!parse_cidr(b, &y, true)) {
		strbuf_addf(sb, "%sFailed to parse CIDR '%s': invalid CIDR address: %s", sb->len ? "\n" : "", b, b);
		return;
	}
	if (!cidr_overlap(&x, &y))
		return;
	if (prefix)
		strbuf_addf(sb, "%s%sCIDRS %s and %s overlap", sb->len ? "\n" : "", suffix_fmt, a, b);
	else
		strbuf_addf(sb, "%sCIDRS %s and %s overlap%s", sb->len ? "\n" : "", a, b, suffix_fmt);
}

static void v_no_overlap(struct cv *v)
{
	const json_t *c = v->cluster, *mn = json_object_get(c, "machine_networks"),
		     *cn = json_object_get(c, "cluster_networks"), *sn = json_object_get(c, "service_networks");
	strbuf sb = STRBUF_INIT;

	if (!status_of(v, "cluster-cidr-defined", "success") || !status_of(v, "service-cidr-defined", "success") ||
	    (machine_network_required(c) && !status_of(v, "machine-cidr-defined", "success"))) {
		if (umn(c))
			put(v, "no-cidrs-overlapping", NET, "pending",
			    "At least one of the CIDRs (Cluster Network, Service Network) is undefined.");
		else
			put(v, "no-cidrs-overlapping", NET, "pending",
			    "At least one of the CIDRs (Machine Network, Cluster Network, Service Network) is undefined.");
		return;
	}
	if (json_array_size(cn) != json_array_size(sn)) {
		put(v, "no-cidrs-overlapping", NET, "error", "A mismatch between the number of Cluster and Service networks");
		return;
	}
	for (size_t i = 0; i < json_array_size(mn); i++) {
		const char *m = cidr_at(c, "machine_networks", i);

		for (size_t j = 0; j < json_array_size(cn); j++)
			overlap_pair(&sb, m, cidr_at(c, "cluster_networks", j), " (machine network and cluster network)", false);
		for (size_t j = 0; j < json_array_size(sn); j++)
			overlap_pair(&sb, m, cidr_at(c, "service_networks", j), " (machine network and service network)", false);
		for (size_t j = 0; j < i; j++)
			overlap_pair(&sb, m, cidr_at(c, "machine_networks", j), "invalid machine networks: ", true);
	}
	for (size_t i = 0; i < json_array_size(cn); i++) {
		const char *cc = cidr_at(c, "cluster_networks", i);

		for (size_t j = 0; j < json_array_size(sn); j++)
			overlap_pair(&sb, cidr_at(c, "service_networks", j), cc, " (service network and cluster network)", false);
		for (size_t j = 0; j < i; j++)
			overlap_pair(&sb, cc, cidr_at(c, "cluster_networks", j), "invalid cluster networks: ", true);
	}
	for (size_t i = 0; i < json_array_size(sn); i++)
		for (size_t j = 0; j < i; j++)
			overlap_pair(&sb, cidr_at(c, "service_networks", i), cidr_at(c, "service_networks", j),
				     "invalid service networks: ", true);
	if (sb.len)
		put(v, "no-cidrs-overlapping", NET, "failure", "CIDRS Overlapping: %s.", sb.buf);
	else
		put(v, "no-cidrs-overlapping", NET, "success", "No CIDRS are overlapping.");
	strbuf_release(&sb);
}

static bool uses_host_prefix(const char *network_type)
{
	return !strcmp(network_type, "OVNKubernetes") || !strcmp(network_type, "OpenShiftSDN");
}

/* VerifyNetworkHostPrefix + VerifyClusterCidrSize; msg set on failure. */
static bool prefix_ok(json_int_t hp, const char *cidr, size_t nhosts, char *msg, size_t size)
{
	struct cidr c;
	int bits;
	size_t want;
	json_int_t delta;

	if (hp < 1) {
		snprintf(msg, size, "Invalid Cluster Network prefix: Host prefix, now %lld, must be a positive integer.",
			 (long long)hp);
		return false;
	}
	if (!parse_cidr(cidr, &c, true)) {
		snprintf(msg, size, "Failed to parse CIDR '%s': invalid CIDR address: %s", cidr, cidr);
		return false;
	}
	bits = c.family == 4 ? 32 : 128;
	if (hp > bits - 7) {
		snprintf(msg, size, "Host prefix, now %lld, must be less than or equal to %d to allow at least 128 addresses",
			 (long long)hp, bits - 7);
		return false;
	}
	want = nhosts == 1 ? 1 : (nhosts > 4 ? nhosts : 4);
	delta = hp - c.prefix;
	if (delta < 0)
		delta = 0;
	if (delta < 63 && (unsigned long long)want > (1ULL << delta)) {
		int sh = bits - (int)hp < 63 ? bits - (int)hp : 63;

		snprintf(msg, size,
			 "Cluster network CIDR prefix %d does not contain enough addresses for %zu hosts each one with %lld prefix (%llu addresses)",
			 c.prefix, nhosts, (long long)hp, 1ULL << sh);
		return false;
	}
	return true;
}

static void v_network_prefix(struct cv *v)
{
	const json_t *c = v->cluster, *x;
	const char *nt = sget(c, "network_type");
	size_t i, n = json_array_size(v->hosts);
	char msg[512];

	if (!status_of(v, "cluster-cidr-defined", "success")) {
		put(v, "network-prefix-valid", NET, "pending", "The Cluster Network CIDR is undefined.");
		return;
	}
	json_array_foreach(json_object_get(c, "cluster_networks"), i, x) {
		json_int_t hp = iget(x, "host_prefix");

		/* Third-party CNIs may leave hostPrefix unset; judge them
		 * by the defaults the spec names (25 for IPv4, 64 for IPv6). */
		if (hp == 0 && !uses_host_prefix(nt))
			hp = is_ipv6(sget(x, "cidr")) ? 64 : 25;
		if (!prefix_ok(hp, sget(x, "cidr"), n, msg, sizeof(msg))) {
			put(v, "network-prefix-valid", NET, "failure", "%s", msg);
			return;
		}
	}
	put(v, "network-prefix-valid", NET, "success", "The Cluster Network prefix is valid.");
}

/* Address families of a network list as a bit set (1 = v4, 2 = v6); -1 on
 * a bad CIDR. */
static int families(const json_t *c, const char *list)
{
	const json_t *x;
	struct cidr cc;
	size_t i;
	int f = 0;

	json_array_foreach(json_object_get(c, list), i, x) {
		if (!parse_cidr(sget(x, "cidr"), &cc, true))
			return -1;
		f |= cc.family == 4 ? 1 : 2;
	}
	return f;
}

static void v_same_families(struct cv *v)
{
	const json_t *c = v->cluster;
	bool req = machine_network_required(c);
	int sf, cf, mf;

	if (!req && (!status_of(v, "cluster-cidr-defined", "success") || !status_of(v, "service-cidr-defined", "success"))) {
		put(v, "networks-same-address-families", NET, "pending",
		    "At least one of the CIDRs (Cluster Network, Service Network) is undefined.");
		return;
	}
	if (req && (!status_of(v, "machine-cidr-defined", "success") || !status_of(v, "cluster-cidr-defined", "success") ||
		    !status_of(v, "service-cidr-defined", "success"))) {
		put(v, "networks-same-address-families", NET, "pending",
		    "At least one of the CIDRs (Machine Network, Cluster Network, Service Network) is undefined.");
		return;
	}
	sf = families(c, "service_networks");
	cf = families(c, "cluster_networks");
	if (sf < 0 || cf < 0) {
		put(v, "networks-same-address-families", NET, "error", "Bad CIDR(s) appears in one of the networks");
		return;
	}
	if (sf != cf) {
		put(v, "networks-same-address-families", NET, "failure",
		    "Address families of networks (ServiceNetworks, ClusterNetworks) are not the same.");
		return;
	}
	if (req && machine_cidr_available(c)) {
		mf = families(c, "machine_networks");
		if (mf < 0) {
			put(v, "networks-same-address-families", NET, "error",
			    "Error getting machine address families for cluster %s", sget(c, "id"));
			return;
		}
		if (mf != sf) {
			put(v, "networks-same-address-families", NET, "failure",
			    "Address families of networks (MachineNetworks, ServiceNetworks, ClusterNetworks) are not the same.");
			return;
		}
	}
	put(v, "networks-same-address-families", NET, "success", "Same address families for all networks.");
}

static void v_network_type(struct cv *v)
{
	static const char *const valid[] = { "OVNKubernetes", "OpenShiftSDN", "Cilium", "Calico", "CiscoACI", "None",
					     NULL };
	const json_t *c = v->cluster;
	const char *nt = sget(c, "network_type");

	if (*nt && !in(nt, valid))
		put(v, "network-type-valid", NET, "failure",
		    "The network type is not valid; the valid network types are OpenShiftSDN, OVNKubernetes, Cilium, Calico, CiscoACI or None");
	else if (!strcmp(nt, "OpenShiftSDN") && any_ipv6_network(c))
		put(v, "network-type-valid", NET, "failure",
		    "The cluster is configured with IPv6 which is not supported by OpenShiftSDN; use OVNKubernetes instead");
	else if (!strcmp(nt, "OpenShiftSDN") && cluster_is_sno(c))
		put(v, "network-type-valid", NET, "failure",
		    "High-availability mode 'None' (SNO) is not supported by OpenShiftSDN; use another network type instead");
	else if (dhcp(c) && !strcmp(nt, "OVNKubernetes"))
		put(v, "network-type-valid", NET, "failure",
		    "VIP DHCP allocation is not supported when the cluster is configured to use OVNKubernetes.");
	else
		put(v, "network-type-valid", NET, "success", "The cluster has a valid network type");
}

static void v_custom_manifests(struct cv *v)
{
	const char *nt = sget(v->cluster, "network_type");

	if (!*nt || uses_host_prefix(nt) || !strcmp(nt, "None") || (v->ctx && v->ctx->custom_manifests))
		put(v, "custom-manifests-requirements-satisfied", NET, "success",
		    "Custom manifests requirements are satisfied");
	else
		put(v, "custom-manifests-requirements-satisfied", NET, "failure",
		    "When using a third-party network plugin (%s), custom manifests are required to configure it. Upload custom manifests to continue.",
		    nt);
}

static void v_ntp(struct cv *v)
{
	static const char *const skip[] = { "disconnected", "resetting-pending-user-action", "discovering", NULL };
	json_int_t mn = 0, mx = 0;
	const json_t *h;
	size_t i;

	json_array_foreach(v->hosts, i, h) {
		json_int_t t = iget(h, "timestamp");

		if (t == 0 || in(sget(h, "status"), skip))
			continue;
		if (mn == 0 || t < mn)
			mn = t;
		if (t > mx)
			mx = t;
	}
	if ((mx - mn) / 60 <= 4)
		put(v, "ntp-server-configured", NET, "success", "No ntp problems found");
	else
		put(v, "ntp-server-configured", NET, "failure",
		    "Hosts' clocks are not synchronized (there's more than a 4 minutes gap between clocks), please configure an NTP server via DHCP or set clocks manually.");
}

/* Whether host meets the master (or SNO) cpu/memory requirement. */
static bool valid_master_candidate(const json_t *host, const json_t *cluster)
{
	json_t *inv = host_inventory(host);
	struct hw_req r = hw_requirements(cluster_is_sno(cluster) ? HW_SNO : HW_MASTER, sget(cluster, "openshift_version"));
	json_int_t cores, mem;
	bool ok;

	if (!inv)
		return false;
	cores = iget(json_object_get(inv, "cpu"), "count");
	mem = iget(json_object_get(inv, "memory"), "physical_bytes");
	ok = cores >= r.cpu_cores && mem >= (r.ram_mib - 100) * 1024 * 1024;
	json_decref(inv);
	return ok;
}

static void v_masters_count(struct cv *v)
{
	const json_t *c = v->cluster, *h;
	json_int_t want = control_plane_count(c);
	int masters = 0, workers = 0, arbiters = 0;
	bool sno = cluster_is_sno(c), ok;
	size_t i;

	json_array_foreach(v->hosts, i, h) {
		const char *role = host_effective_role(h);

		if (!strcmp(role, "master") || !strcmp(role, "bootstrap"))
			masters++;
		else if (!strcmp(role, "worker"))
			workers++;
		else if (!strcmp(role, "arbiter"))
			arbiters++;
	}
	json_array_foreach(v->hosts, i, h) {
		const char *role = host_effective_role(h);

		if (!strcmp(role, "master") || !strcmp(role, "bootstrap") || !strcmp(role, "worker") ||
		    !strcmp(role, "arbiter"))
			continue;
		if (masters < want && valid_master_candidate(h, c))
			masters++;
		else
			workers++;
	}
	ok = masters == want && !(sno && workers != 0) && !(want == 2 && arbiters == 0);
	if (ok)
		put(v, "sufficient-masters-count", HOSTS, "success",
		    "The cluster has the exact amount of dedicated control plane nodes.");
	else if (sno)
		put(v, "sufficient-masters-count", HOSTS, "failure",
		    "Single-node clusters must have a single control plane node and no workers.");
	else
		put(v, "sufficient-masters-count", HOSTS, "failure",
		    "The cluster must have exactly %lld dedicated control plane nodes. Add or remove hosts, or change their roles configurations to meet the requirement.",
		    (long long)want);
}

static void v_hosts_ready(struct cv *v)
{
	static const char *const ready[] = { "known", "preparing-for-installation", "preparing-successful", NULL };
	const json_t *h;
	size_t i;

	json_array_foreach(v->hosts, i, h)
		if (!host_done_status(h, ready)) {
			put(v, "all-hosts-are-ready-to-install", HOSTS, "failure",
			    "The cluster has hosts that are not ready to install.");
			return;
		}
	put(v, "all-hosts-are-ready-to-install", HOSTS, "success", "All hosts in the cluster are ready to install.");
}

static const char *const operator_ids[] = {
	"lso", "odf", "cnv", "lvm", "mce", "mtv", "osc", "node-feature-discovery", "nvidia-gpu", "pipelines",
	"servicemesh", "serverless", "openshift-ai", "authorino", "nmstate", "amd-gpu", "kmm", "node-healthcheck",
	"self-node-remediation", "fence-agents-remediation", "node-maintenance", "kube-descheduler",
	"cluster-observability", "numa-resources", "oadp", "metallb", "loki", "openshift-logging", NULL
};

static bool operator_selected(const json_t *c, const char *name)
{
	const json_t *op;
	size_t i;

	json_array_foreach(json_object_get(c, "monitored_operators"), i, op)
		if (!strcmp(sget(op, "name"), name) && strcmp(sget(op, "operator_type"), "builtin"))
			return true;
	return false;
}

static void v_operators(struct cv *v)
{
	for (const char *const *op = operator_ids; *op; op++) {
		char id[96];

		snprintf(id, sizeof(id), "%s-requirements-satisfied", *op);
		/* No operator bundle is installable through this service, so
		 * a selected operator can never have its requirements met. */
		if (operator_selected(v->cluster, *op))
			put(v, id, OPS, "failure", "%s is not supported by this service", *op);
		else
			put(v, id, OPS, "success", "%s is disabled", *op);
	}
}

static bool csv_has(const char *list, const char *id)
{
	size_t n = strlen(id);

	for (const char *p = list; p && *p;) {
		size_t m = strcspn(p, ",");
		const char *b = p, *e = p + m;

		while (b < e && *b == ' ')
			b++;
		while (e > b && e[-1] == ' ')
			e--;
		if ((size_t)(e - b) == n && !strncmp(b, id, n))
			return true;
		p += m;
		if (*p == ',')
			p++;
	}
	return false;
}

json_t *cluster_validations(const json_t *cluster, const json_t *hosts, const struct cluster_refresh_ctx *ctx)
{
	struct cv v = { .cluster = cluster, .hosts = hosts, .ctx = ctx, .out = json_object() };
	const char *id;
	json_t *r;

	v.has_inv = has_inventories(hosts);
	v_machine_cidr_defined(&v);
	v_cidrs_defined(&v);
	v_machine_cidr_equals(&v);
	vips_defined(&v, "api-vips-defined", "api_vips", "API");
	vips_defined(&v, "ingress-vips-defined", "ingress_vips", "Ingress");
	vips_valid(&v, "api-vips-valid", "api_vips", "API", "api vips");
	vips_valid(&v, "ingress-vips-valid", "ingress_vips", "Ingress", "ingress vips");
	v_no_overlap(&v);
	v_network_prefix(&v);
	v_same_families(&v);
	v_network_type(&v);
	v_custom_manifests(&v);
	v_ntp(&v);
	if (*sget(cluster, "base_dns_domain"))
		put(&v, "dns-domain-defined", NET, "success", "The base domain is defined.");
	else
		put(&v, "dns-domain-defined", NET, "failure", "The base domain is undefined and must be provided.");
	v_hosts_ready(&v);
	v_masters_count(&v);
	if (bget(cluster, "pull_secret_set"))
		put(&v, "pull-secret-set", CONF, "success", "The pull secret is set.");
	else
		put(&v, "pull-secret-set", CONF, "failure", "The pull secret is not set.");
	put(&v, "platform-requirements-satisfied", CONF, "success", "Platform requirements satisfied");
	v_operators(&v);
	if (ctx && ctx->disabled_validations && *ctx->disabled_validations)
		json_object_foreach(v.out, id, r)
			if (csv_has(ctx->disabled_validations, id)) {
				set_str(r, "status", "disabled");
				set_str(r, "message", "Validation disabled");
			}
	return v.out;
}

/* The displayed form: {category: [{id,status,message}]} sorted by id. */
static json_t *cluster_validations_info(const json_t *results)
{
	static const char *const cats[] = { "configuration", "hosts-data", "network", "operators" };
	json_t *out = json_object();

	for (size_t c = 0; c < 4; c++) {
		const char *ids[128];
		size_t n = 0;
		const char *id;
		json_t *r, *arr;

		json_object_foreach((json_t *)results, id, r)
			if (!strcmp(sget(r, "category"), cats[c]) && n < 128)
				ids[n++] = id;
		if (!n)
			continue;
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j > 0 && strcmp(ids[j - 1], ids[j]) > 0; j--) {
				const char *t = ids[j];

				ids[j] = ids[j - 1];
				ids[j - 1] = t;
			}
		arr = json_array();
		for (size_t i = 0; i < n; i++) {
			r = json_object_get(results, ids[i]);
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "id", ids[i], "status", sget(r, "status"),
							     "message", sget(r, "message")));
		}
		json_object_set_new(out, cats[c], arr);
	}
	return out;
}

/* Whether validation id lets the state machine pass: success or disabled,
 * or ignored through ignored_cluster_validations (not for non-ignorable ids). */
static bool vok(const json_t *results, const char *id, const json_t *cluster)
{
	static const char *const non_ignorable[] = { "api-vips-defined", "ingress-vips-defined",
						     "all-hosts-are-ready-to-install", "sufficient-masters-count",
						     "pull-secret-set", NULL };
	const char *st = sget(json_object_get(results, id), "status");
	json_t *ign;
	bool hit = false;
	const json_t *x;
	size_t i;

	if (!json_object_get(results, id) || !strcmp(st, "success") || !strcmp(st, "disabled"))
		return true;
	if (in(id, non_ignorable) || !(ign = jval(cluster, "ignored_cluster_validations")))
		return false;
	json_array_foreach(ign, i, x)
		if (json_is_string(x) && (!strcmp(json_string_value(x), id) || !strcmp(json_string_value(x), "all")))
			hit = true;
	json_decref(ign);
	return hit;
}

/* ---- RefreshStatus (backend §2.1) ---- */

struct rr {
	const json_t *in;
	json_t *out;
	const json_t *hosts;
	const struct cluster_refresh_ctx *ctx;
	json_t *events;
	bool matched;
};

static void event(struct rr *r, const char *name, const char *severity, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void event(struct rr *r, const char *name, const char *severity, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(r->events, json_pack("{s:s, s:s, s:s}", "name", name, "severity", severity, "message", msg));
}

static json_t *progress_obj(json_t *cluster)
{
	json_t *p = json_object_get(cluster, "progress");

	if (!json_is_object(p)) {
		p = json_object();
		json_object_set_new(cluster, "progress", p);
	}
	return p;
}

/* Write status and status_info (truncated as upstream); a status change
 * also stamps status_updated_at and, for the final states,
 * install_completed_at. */
static void set_status(json_t *c, const char *st, const char *info, int64_t now)
{
	static const char *const completed[] = { "installed", "error", "cancelled", NULL };
	char buf[CLUSTER_STATUS_INFO_MAX + 1];

	snprintf(buf, sizeof(buf), "%s", info ? info : "");
	if (strcmp(sget(c, "status"), st)) {
		json_object_set_new(c, "status_updated_at", json_integer(now));
		if (in(st, completed))
			json_object_set_new(c, "install_completed_at", json_integer(now));
	}
	set_str(c, "status", st);
	set_str(c, "status_info", buf);
}

static void rr_to(struct rr *r, const char *st, const char *info)
{
	r->matched = true;
	set_status(r->out, st, info, r->ctx->now);
}

static void rr_error(struct rr *r, const char *info)
{
	rr_to(r, "error", info);
	event(r, "cluster_installation_failed", "critical", "Failed installing cluster. Reason: %s", info);
}

static int count_role_in(const json_t *hosts, const char *role, const char *const *statuses)
{
	const json_t *h;
	size_t i;
	int n = 0;

	json_array_foreach(hosts, i, h) {
		const char *er = host_effective_role(h);

		if (strcmp(er, role) && !(!strcmp(role, "master") && !strcmp(er, "bootstrap")))
			continue;
		if (!statuses || host_done_status(h, statuses))
			n++;
	}
	return n;
}

/* "Enough" hosts of each role in statuses (§2.1 predicates). */
static bool enough(const json_t *cluster, const json_t *hosts, const char *const *statuses)
{
	int masters = count_role_in(hosts, "master", statuses), all_masters = count_role_in(hosts, "master", NULL);
	int workers = count_role_in(hosts, "worker", statuses), all_workers = count_role_in(hosts, "worker", NULL);
	int arbiters = count_role_in(hosts, "arbiter", statuses), all_arbiters = count_role_in(hosts, "arbiter", NULL);
	int min_masters;

	if (cluster_is_sno(cluster))
		return masters >= 1;
	min_masters = all_arbiters > 0 || control_plane_count(cluster) == 2 ? 2 : 3;
	if (masters < min_masters || masters < all_masters)
		return false;
	if (all_arbiters > 0 && arbiters < 1)
		return false;
	if (all_workers >= 2 && workers < 2)
		return false;
	return true;
}

static const char *const INST_SET[] = { "installing", "installing-in-progress", "installed",
					"installing-pending-user-action", "preparing-successful", NULL };
static const char *const FIN_SET[] = { "installed", NULL };

static bool any_host(const json_t *hosts, const char *status)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h)
		if (!strcmp(sget(h, "status"), status))
			return true;
	return false;
}

static bool all_hosts_in(const json_t *hosts, const char *const *set)
{
	const json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h)
		if (!host_done_status(h, set))
			return false;
	return true;
}

int cluster_finalizing_stage_timeout(const char *stage, bool soft)
{
	static const struct {
		const char *stage;
		int hard_min, soft_min;
	} t[] = {
		{ "Waiting for cluster operators", 600, 70 },
		{ "Adding router ca", 70, 70 },
		{ "Applying olm manifests", 10, 10 },
		{ "Waiting for olm operators csv initialization", 70, 70 },
		{ "Waiting for olm operators csv", 70, 70 },
		{ "Waiting for OLM operator setup jobs", 10, 10 },
		{ "Done", 70, 70 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (stage && !strcmp(stage, t[i].stage))
			return (soft ? t[i].soft_min : t[i].hard_min) * 60;
	return 70 * 60;
}

static bool stage_non_failing(const char *stage)
{
	static const char *const nf[] = { "Applying olm manifests", "Waiting for olm operators csv initialization",
					  "Waiting for olm operators csv", NULL };

	return in(stage, nf);
}

/* All monitored operators done: builtin available, OLM available or failed. */
static bool operators_complete(const json_t *cluster)
{
	const json_t *op;
	size_t i;

	json_array_foreach(json_object_get(cluster, "monitored_operators"), i, op) {
		const char *st = sget(op, "status");

		if (!strcmp(sget(op, "operator_type"), "olm")) {
			if (strcmp(st, "available") && strcmp(st, "failed"))
				return false;
		} else if (strcmp(st, "available")) {
			return false;
		}
	}
	return true;
}

/* The host IP an SNO cluster's VIPs take at installing (the bootstrap host's
 * address in the primary machine network). */
static bool sno_host_ip(const json_t *cluster, const json_t *hosts, char *buf, size_t size)
{
	const json_t *b = bootstrap_host(hosts);
	json_t *inv;
	bool ok = false;

	if (!b)
		b = json_array_get(hosts, 0);
	inv = host_inventory(b);
	if (!inv)
		return false;
	if (machine_cidr_available(cluster))
		ok = host_ip_in(inv, cidr_at(cluster, "machine_networks", 0), buf, size);
	if (!ok) {
		const json_t *nic, *a;
		size_t i, j;
		struct cidr c;

		json_array_foreach(json_object_get(inv, "interfaces"), i, nic)
			json_array_foreach(json_object_get(nic, "ipv4_addresses"), j, a)
				if (!ok && json_is_string(a) && parse_cidr(json_string_value(a), &c, true)) {
					cidr_format(&c, false, buf, size);
					ok = true;
				}
	}
	json_decref(inv);
	return ok;
}

/* The primary network of a single host: the one holding its default
 * gateway, else its first IPv4 network, else its first network. */
static bool host_primary_network(const json_t *host, char *buf, size_t size)
{
	json_t *inv = host_inventory(host);
	const json_t *nic, *a, *rt;
	bool ok = false;
	size_t i, j, k;
	struct cidr c;

	if (!inv)
		return false;
	for (int pass = 0; pass < 3 && !ok; pass++)
		json_array_foreach(json_object_get(inv, "interfaces"), i, nic) {
			const char *keys[] = { "ipv4_addresses", "ipv6_addresses" };

			for (int f = 0; f < 2 && !ok; f++) {
				if (pass == 1 && f == 1)
					continue;
				json_array_foreach(json_object_get(nic, keys[f]), j, a) {
					if (ok || !json_is_string(a) || !parse_cidr(json_string_value(a), &c, true))
						continue;
					if (pass == 0) {
						bool gw = false;

						json_array_foreach(json_object_get(inv, "routes"), k, rt)
							if (*sget(rt, "gateway") && ip_in_cidr(sget(rt, "gateway"),
												json_string_value(a)) &&
							    (!strcmp(sget(rt, "destination"), "0.0.0.0") ||
							     !strcmp(sget(rt, "destination"), "::")))
								gw = true;
						if (!gw)
							continue;
					}
					cidr_mask(&c);
					cidr_format(&c, true, buf, size);
					ok = true;
				}
			}
		}
	json_decref(inv);
	return ok;
}

/* The pre-install monitor's automatic machine network: SNO takes its
 * host's primary network, multi-node clusters with VIPs the network that
 * holds the first API VIP. */
static void auto_machine_network(json_t *c, const json_t *hosts)
{
	char net[80];

	if (machine_cidr_available(c) || dhcp(c))
		return;
	if (cluster_is_sno(c)) {
		if (json_array_size(hosts) != 1 || !host_primary_network(json_array_get(hosts, 0), net, sizeof(net)))
			return;
	} else {
		const char *vip = sget(json_array_get(json_object_get(c, "api_vips"), 0), "ip");

		if (umn(c) || !*vip || !calculate_machine_cidr(hosts, vip, net, sizeof(net)))
			return;
	}
	json_object_set_new(c, "machine_networks", json_pack("[{s:s}]", "cidr", net));
}

static bool log_timed_out(const json_t *c, const struct cluster_refresh_ctx *ctx)
{
	const char *li = sget(c, "logs_info");
	json_int_t started = iget(c, "controller_logs_started_at"), collected = iget(c, "controller_logs_collected_at");

	if (!*li && started == 0)
		return ctx->now - iget(c, "status_updated_at") > 10 * 60;
	if (!strcmp(li, "requested") && collected == 0)
		return ctx->now - started > 60 * 60;
	if (!strcmp(li, "requested"))
		return ctx->now - collected > 60 * 60;
	if (!strcmp(li, "collecting"))
		return ctx->now - collected > 60 * 60;
	return false;
}

static void refresh_pre_install(struct rr *r, const json_t *res)
{
	const json_t *c = r->out;
	bool pend = vok(res, "machine-cidr-defined", c) && vok(res, "cluster-cidr-defined", c) &&
		    vok(res, "service-cidr-defined", c) && vok(res, "dns-domain-defined", c) &&
		    vok(res, "pull-secret-set", c);
	bool vips = vok(res, "api-vips-defined", c) && vok(res, "ingress-vips-defined", c);
	static const char *const req_ids[] = { "machine-cidr-equals-to-calculated-cidr", "api-vips-valid",
					       "ingress-vips-valid", "all-hosts-are-ready-to-install",
					       "sufficient-masters-count", "network-prefix-valid", "no-cidrs-overlapping",
					       "ntp-server-configured", "network-type-valid",
					       "custom-manifests-requirements-satisfied", "networks-same-address-families",
					       NULL };
	bool req = true;
	const char *id;
	json_t *x;

	for (const char *const *p = req_ids; *p; p++)
		req = req && vok(res, *p, c);
	json_object_foreach((json_t *)res, id, x)
		if (!strcmp(sget(x, "category"), OPS))
			req = req && vok(res, id, c);
	if (!dhcp(c) && !(vips && pend))
		rr_to(r, "pending-for-input", CLUSTER_INFO_PENDING_FOR_INPUT);
	else if (!dhcp(c) && vips && pend && !req)
		rr_to(r, "insufficient", CLUSTER_INFO_INSUFFICIENT);
	else if (dhcp(c) && !pend)
		rr_to(r, "pending-for-input", CLUSTER_INFO_PENDING_FOR_INPUT);
	else if (dhcp(c) && pend && !(req && vips))
		rr_to(r, "insufficient", CLUSTER_INFO_INSUFFICIENT);
	else if (pend && vips && req)
		rr_to(r, "ready", CLUSTER_INFO_READY);
}

static void refresh_preparing(struct rr *r)
{
	static const char *const ps[] = { "preparing-successful", NULL };
	static const char *const prep_ok[] = { "preparing-for-installation", "preparing-successful", "preparing-failed",
					       "known", NULL };
	json_t *c = r->out;
	const char *lip = sget(json_object_get(c, "last_installation_preparation"), "status");
	int64_t timeout = r->ctx->prepare_timeout_s > 0 ? r->ctx->prepare_timeout_s : 600;
	bool failed_host = any_host(r->hosts, "preparing-failed"), unpreparing = !all_hosts_in(r->hosts, prep_ok);

	if (r->ctx->now - iget(c, "status_updated_at") > timeout && !failed_host) {
		rr_to(r, "ready", CLUSTER_INFO_PREPARING_TIMEOUT);
		json_object_set_new(c, "last_installation_preparation",
				    json_pack("{s:s, s:s}", "status", "failed", "reason",
					      "Installation failed. Try again, and contact support if the issue persists."));
	} else if (all_hosts_in(r->hosts, ps) && !strcmp(lip, "success")) {
		json_t *p;

		rr_to(r, "installing", CLUSTER_INFO_INSTALLING);
		if (cluster_is_sno(c)) {
			char ip[64];

			if (sno_host_ip(c, r->hosts, ip, sizeof(ip))) {
				json_object_set_new(c, "api_vips", json_pack("[{s:s}]", "ip", ip));
				json_object_set_new(c, "ingress_vips", json_pack("[{s:s}]", "ip", ip));
			}
		}
		p = progress_obj(c);
		json_object_set_new(p, "preparing_for_installation_stage_percentage", json_integer(100));
		json_object_set_new(p, "total_percentage", json_integer(10));
	} else if (unpreparing) {
		rr_to(r, "insufficient", CLUSTER_INFO_UNPREPARING_HOST);
	} else if (failed_host || !strcmp(lip, "failed")) {
		rr_to(r, "ready", CLUSTER_INFO_PREPARE_FAILED);
	}
}

static void refresh_installing(struct rr *r)
{
	json_t *c = r->out;
	const char *st = sget(r->in, "status");
	bool ipua = !strcmp(st, "installing-pending-user-action"), inst = !strcmp(st, "installing"),
	     fin = !strcmp(st, "finalizing");
	bool Inst = enough(c, r->hosts, INST_SET), Fin = enough(c, r->hosts, FIN_SET);
	bool PUA = any_host(r->hosts, "installing-pending-user-action");
	int64_t itimeout = r->ctx->install_timeout_s > 0 ? r->ctx->install_timeout_s : 86400;
	int64_t ftimeout = r->ctx->finalizing_timeout_s > 0 ? r->ctx->finalizing_timeout_s : 18000;
	bool soft = r->ctx->soft_timeouts;
	bool install_timed_out = r->ctx->now - iget(c, "install_started_at") > itimeout;
	json_t *p = progress_obj(c);
	const char *stage = sget(p, "finalizing_stage");
	int64_t stage_started = iget(p, "finalizing_stage_started_at");
	int stage_to = cluster_finalizing_stage_timeout(stage, soft);
	bool stage_timed_out, flag = bget(p, "finalizing_stage_timed_out");
	char info[512];

	if (!stage_started)
		stage_started = iget(c, "status_updated_at");
	stage_timed_out = r->ctx->now - stage_started > stage_to;
	if (ipua && !(Inst || Fin)) {
		rr_error(r, CLUSTER_INFO_ERROR);
	} else if (ipua && install_timed_out) {
		rr_error(r, "cluster installation timed out while pending user action (a manual booting from installation disk)");
	} else if ((inst || fin) && install_timed_out && soft) {
		snprintf(info, sizeof(info), "cluster installation timeout (%lld minutes) has expired",
			 (long long)(itimeout / 60));
		rr_error(r, info);
	} else if (fin && r->ctx->now - iget(c, "status_updated_at") > ftimeout && !soft) {
		rr_error(r, "Cluster installation timeout while finalizing");
	} else if (fin && !soft && stage_timed_out && !stage_non_failing(stage)) {
		snprintf(info, sizeof(info), "Cluster finalizing stage '%s' has been timed out after timeout duration of %d minutes",
			 stage, stage_to / 60);
		rr_error(r, info);
	} else if (fin && !flag && (soft || stage_non_failing(stage)) && stage_timed_out) {
		snprintf(info, sizeof(info),
			 "Cluster finalizing stage '%s' is taking longer than the expected duration (%d minutes). To troubleshoot use kubeconfig or connect to any node using ssh",
			 stage, stage_to / 60);
		rr_to(r, "finalizing", info);
		json_object_set_new(p, "finalizing_stage_timed_out", json_true());
		event(r, "finalizing_stage_timed_out", "warning", "%s", info);
	} else if (ipua && PUA && (Inst || Fin)) {
		r->matched = true;
	} else if (ipua && !PUA && Inst && !Fin) {
		rr_to(r, "installing", CLUSTER_INFO_INSTALLING);
	} else if (ipua && !PUA && Fin) {
		rr_to(r, "finalizing", CLUSTER_INFO_FINALIZING);
		json_object_set_new(p, "finalizing_stage_started_at", json_integer(r->ctx->now));
		json_object_set_new(p, "finalizing_stage_timed_out", json_false());
	} else if ((inst || fin) && (Inst || Fin) && PUA) {
		rr_to(r, "installing-pending-user-action", CLUSTER_INFO_PENDING_USER_ACTION);
	} else if (inst && Fin && !PUA) {
		rr_to(r, "finalizing", CLUSTER_INFO_FINALIZING);
		json_object_set_new(p, "finalizing_stage_started_at", json_integer(r->ctx->now));
		json_object_set_new(p, "finalizing_stage_timed_out", json_false());
	} else if (inst && !Fin && !PUA && Inst) {
		rr_to(r, "installing", CLUSTER_INFO_INSTALLING);
	} else if (fin && all_hosts_in(r->hosts, (const char *const[]){ "installed", "error", NULL }) &&
		   r->ctx->kubeconfig_uploaded && operators_complete(c)) {
		int installed_workers = count_role_in(r->hosts, "worker", FIN_SET);

		rr_to(r, "installed", installed_workers < count_role_in(r->hosts, "worker", NULL)
					      ? "Cluster is installed but some workers did not join"
					      : CLUSTER_INFO_INSTALLED);
		event(r, "cluster_installation_completed", "info", "%s", "Successfully completed installing cluster");
	} else if (inst && !Fin && !Inst) {
		rr_error(r, CLUSTER_INFO_ERROR);
	} else if (fin) {
		r->matched = true;
	}
}

void cluster_update_progress(json_t *cluster, const json_t *hosts)
{
	static const char *const started[] = { "installing", "installing-pending-user-action", "finalizing",
					       "installed", "adding-hosts", NULL };
	const char *st = sget(cluster, "status");
	json_t *p = progress_obj(cluster);
	bool sno = cluster_is_sno(cluster);
	json_int_t prep = iget(p, "preparing_for_installation_stage_percentage"), inst = 0, fin = 0, total;
	long long num = 0, den = 0;
	const json_t *h, *op;
	size_t i, nops = 0, done = 0;

	if (in(st, started))
		prep = 100;
	json_array_foreach(hosts, i, h) {
		const char *role = bget(h, "bootstrap") ? "bootstrap" : host_effective_role(h);
		size_t n;
		const char *const *stages = host_install_stages(role, sno, false, &n);
		int idx = host_stage_index(stages, n, sget(json_object_get(h, "progress"), "current_stage"));

		den += (long long)n;
		if (idx >= 0)
			num += idx + 1;
	}
	if (den > 0)
		inst = (json_int_t)(num * 100 / den);
	json_array_foreach(json_object_get(cluster, "monitored_operators"), i, op) {
		const char *ost = sget(op, "status");

		nops++;
		if (!strcmp(ost, "available") || (!strcmp(sget(op, "operator_type"), "olm") && !strcmp(ost, "failed")))
			done++;
	}
	if (nops)
		fin = (json_int_t)(done * 100 / nops);
	if (!strcmp(st, "installed") || !strcmp(st, "adding-hosts"))
		fin = 100;
	total = (json_int_t)(0.1 * (double)prep + 0.7 * (double)inst + 0.15 * (double)fin);
	if (!strcmp(st, "installed") || !strcmp(st, "adding-hosts"))
		total = 100;
	json_object_set_new(p, "preparing_for_installation_stage_percentage", json_integer(prep));
	json_object_set_new(p, "installing_stage_percentage", json_integer(inst));
	json_object_set_new(p, "finalizing_stage_percentage", json_integer(fin));
	json_object_set_new(p, "total_percentage", json_integer(total));
}

static bool json_text_equal(const json_t *a_text_or_obj, const json_t *b)
{
	json_t *a = NULL;
	bool eq;

	if (json_is_string(a_text_or_obj))
		a = json_loads(json_string_value(a_text_or_obj), 0, NULL);
	else if (a_text_or_obj)
		a = json_incref((json_t *)a_text_or_obj);
	eq = a && b && json_equal(a, b);
	json_decref(a);
	return eq;
}

/* cluster_validation_failed / _fixed for ids that flipped between success
 * and failure since the stored validations_info. */
static void validation_events(struct rr *r, const json_t *old_info, const json_t *results)
{
	json_t *old = NULL;
	const char *cat, *id;
	json_t *list, *x, *nr;
	size_t i;

	if (json_is_string(old_info))
		old = json_loads(json_string_value(old_info), 0, NULL);
	else if (json_is_object(old_info))
		old = json_incref((json_t *)old_info);
	if (!old)
		return;
	json_object_foreach(old, cat, list)
		json_array_foreach(list, i, x) {
			id = sget(x, "id");
			nr = json_object_get(results, id);
			if (!nr)
				continue;
			if (strcmp(sget(x, "status"), "failure") != 0 && !strcmp(sget(nr, "status"), "failure"))
				event(r, "cluster_validation_failed", "warning", "Cluster validation '%s' %s", id,
				      !strcmp(sget(x, "status"), "success") ? "that used to succeed is now failing" : "failed");
			else if (!strcmp(sget(x, "status"), "failure") && !strcmp(sget(nr, "status"), "success"))
				event(r, "cluster_validation_fixed", "info", "Cluster validation '%s' is now fixed", id);
		}
	json_decref(old);
}

int cluster_refresh(const json_t *cluster, const json_t *hosts, const struct cluster_refresh_ctx *ctx,
		    struct cluster_refresh_result *ret)
{
	static const char *const pre[] = { "pending-for-input", "ready", "insufficient", NULL };
	static const char *const validated[] = { "pending-for-input", "ready", "insufficient",
						 "preparing-for-installation", NULL };
	static const char *const install[] = { "installing", "finalizing", "installing-pending-user-action", NULL };
	static const char *const noop[] = { "preparing-for-installation", "finalizing", "installed", "error",
					    "cancelled", "adding-hosts", "unmonitored", NULL };
	struct rr r = { .in = cluster, .hosts = hosts, .ctx = ctx };
	const char *st = sget(cluster, "status");
	json_t *res = NULL, *empty = NULL;

	if (!json_is_object(cluster) || !*st || !ctx)
		return -EINVAL;
	if (!json_is_array(hosts))
		hosts = r.hosts = empty = json_array();
	r.out = json_deep_copy(cluster);
	r.events = json_array();
	if (!r.out || !r.events) {
		json_decref(r.out);
		json_decref(r.events);
		json_decref(empty);
		return -ENOMEM;
	}
	memset(ret, 0, sizeof(*ret));
	if (in(st, validated)) {
		if (in(st, pre))
			auto_machine_network(r.out, hosts);
		res = cluster_validations(r.out, hosts, ctx);
		ret->validations_info = cluster_validations_info(res);
		ret->validations_changed = !json_text_equal(json_object_get(cluster, "validations_info"),
							    ret->validations_info);
		if (ret->validations_changed) {
			char *txt = json_dumps(ret->validations_info, JSON_COMPACT);

			validation_events(&r, json_object_get(cluster, "validations_info"), res);
			set_str(r.out, "validations_info", txt);
			free(txt);
		}
	}
	if (in(st, pre))
		refresh_pre_install(&r, res);
	else if (!strcmp(st, "preparing-for-installation"))
		refresh_preparing(&r);
	else if (in(st, install))
		refresh_installing(&r);
	else if ((!strcmp(st, "error") || !strcmp(st, "cancelled")) && log_timed_out(cluster, ctx)) {
		r.matched = true;
		set_str(r.out, "logs_info", "timeout");
	}
	if (!r.matched && in(st, noop))
		r.matched = true;
	if (in(sget(r.out, "status"), install) || !strcmp(sget(r.out, "status"), "installed"))
		cluster_update_progress(r.out, hosts);
	ret->rule_matched = r.matched;
	snprintf(ret->status, sizeof(ret->status), "%s", sget(r.out, "status"));
	snprintf(ret->status_info, sizeof(ret->status_info), "%s", sget(r.out, "status_info"));
	ret->status_changed = strcmp(st, ret->status) != 0;
	ret->changed = !json_equal(cluster, r.out);
	ret->cluster = r.out;
	ret->validations = res ? res : json_object();
	ret->events = r.events;
	json_decref(empty);
	return 0;
}

void cluster_refresh_result_release(struct cluster_refresh_result *r)
{
	if (!r)
		return;
	json_decref(r->cluster);
	json_decref(r->validations);
	json_decref(r->validations_info);
	json_decref(r->events);
	r->cluster = r->validations = r->validations_info = r->events = NULL;
}

/* ---- explicit transitions ---- */

static int conflict(ah_err *err, const char *what, const json_t *c)
{
	return ah_err_set(err, EBUSY, 409, "Conflict", "cluster %s: %s is not allowed in status %s", sget(c, "id"), what,
			  *sget(c, "status") ? sget(c, "status") : "(none)");
}

static void reset_progress(json_t *c)
{
	json_object_set_new(c, "progress",
			    json_pack("{s:i, s:i, s:i, s:i}", "preparing_for_installation_stage_percentage", 0,
				      "installing_stage_percentage", 0, "finalizing_stage_percentage", 0,
				      "total_percentage", 0));
}

static void reset_logs(json_t *c)
{
	set_str(c, "logs_info", "");
	json_object_set_new(c, "controller_logs_started_at", json_integer(0));
	json_object_set_new(c, "controller_logs_collected_at", json_integer(0));
}

int cluster_prepare_for_installation(json_t *cluster, int64_t now, ah_err *err)
{
	if (strcmp(sget(cluster, "status"), "ready"))
		return conflict(err, "PrepareForInstallation", cluster);
	set_status(cluster, "preparing-for-installation", CLUSTER_INFO_PREPARING, now);
	json_object_set_new(cluster, "install_started_at", json_integer(now));
	reset_logs(cluster);
	reset_progress(cluster);
	json_object_set_new(cluster, "last_installation_preparation", json_pack("{s:s, s:s}", "status", "not_started",
										 "reason", ""));
	return 0;
}

int cluster_preparation_done(json_t *cluster, bool success, const char *reason, ah_err *err)
{
	if (strcmp(sget(cluster, "status"), "preparing-for-installation"))
		return conflict(err, "the preparation result", cluster);
	json_object_set_new(cluster, "last_installation_preparation",
			    json_pack("{s:s, s:s}", "status", success ? "success" : "failed", "reason",
				      success || !reason ? "" : reason));
	return 0;
}

int cluster_cancel(json_t *cluster, int64_t now, ah_err *err)
{
	static const char *const to_cancelled[] = { "installing", "installing-pending-user-action", "error", "finalizing",
						    NULL };
	const char *st = sget(cluster, "status");

	if (in(st, to_cancelled))
		set_status(cluster, "cancelled", CLUSTER_INFO_CANCELLED, now);
	else if (!strcmp(st, "preparing-for-installation"))
		set_status(cluster, "ready", CLUSTER_INFO_CANCELLED, now);
	else
		return conflict(err, "CancelInstallation", cluster);
	return 0;
}

int cluster_reset(json_t *cluster, int64_t now, ah_err *err)
{
	static const char *const from[] = { "preparing-for-installation", "installing", "installing-pending-user-action",
					    "error", "cancelled", "finalizing", NULL };

	if (!in(sget(cluster, "status"), from))
		return conflict(err, "ResetCluster", cluster);
	set_status(cluster, "insufficient", "cluster was reset by user", now);
	reset_progress(cluster);
	reset_logs(cluster);
	set_str(cluster, "openshift_cluster_id", "");
	json_object_set_new(cluster, "last_installation_preparation", json_pack("{s:s, s:s}", "status", "not_started",
										 "reason", ""));
	if (cluster_is_sno(cluster)) {
		json_object_set_new(cluster, "api_vips", json_array());
		json_object_set_new(cluster, "ingress_vips", json_array());
	}
	return 0;
}

int cluster_install_failed(json_t *cluster, const char *reason, int64_t now, ah_err *err)
{
	static const char *const from[] = { "installing", "finalizing", "installing-pending-user-action", NULL };

	if (!in(sget(cluster, "status"), from))
		return conflict(err, "an installation failure", cluster);
	set_status(cluster, "error", reason && *reason ? reason : CLUSTER_INFO_ERROR, now);
	return 0;
}

int cluster_set_finalizing_stage(json_t *cluster, const char *stage, int64_t now, ah_err *err)
{
	static const char *const stages[] = { "Waiting for cluster operators", "Adding router ca",
					      "Applying olm manifests", "Waiting for olm operators csv initialization",
					      "Waiting for olm operators csv", "Waiting for OLM operator setup jobs",
					      "Done", NULL };
	static const char *const from[] = { "installing", "finalizing", "installing-pending-user-action", NULL };
	json_t *p;

	if (!in(sget(cluster, "status"), from))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "Cluster %s is in %s state, progress can be updated only in installing, finalizing or installing-pending-user-action state",
				  sget(cluster, "id"), sget(cluster, "status"));
	if (!stage || !in(stage, stages))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "finalizing_stage: unknown stage \"%s\"", stage ? stage : "");
	p = progress_obj(cluster);
	if (!strcmp(sget(p, "finalizing_stage"), stage))
		return 0;
	set_str(p, "finalizing_stage", stage);
	json_object_set_new(p, "finalizing_stage_started_at", json_integer(now));
	json_object_set_new(p, "finalizing_stage_timed_out", json_false());
	return 0;
}

int cluster_allow_add_hosts(json_t *cluster, int64_t now, ah_err *err)
{
	if (strcmp(sget(cluster, "status"), "installed") || strcmp(sget(cluster, "kind"), "Cluster"))
		return conflict(err, "allow-add-hosts", cluster);
	/* Upstream's transform to day 2 changes the status and kind only: the
	 * status_info stays "Cluster is installed" (a cluster imported for day 2
	 * gets CLUSTER_INFO_ADDING_HOSTS instead). */
	set_status(cluster, "adding-hosts", sget(cluster, "status_info"), now);
	set_str(cluster, "kind", "AddHostsCluster");
	return 0;
}

/* ---- roles and bootstrap (backend §5) ---- */

static bool is_day2_host(const json_t *h)
{
	return !strcmp(sget(h, "kind"), "AddToExistingClusterHost");
}

static bool auto_role(const json_t *h)
{
	const char *role = sget(h, "role");

	return !*role || !strcmp(role, "auto-assign");
}

/* Refresh order weight (§0): weaker hosts first. */
static double host_weight(const json_t *h)
{
	json_t *inv = host_inventory(h);
	const json_t *d;
	double w, disk = 0;
	size_t i;

	if (!inv)
		return -1e18;
	json_array_foreach(json_object_get(inv, "disks"), i, d) {
		const json_t *el = json_object_get(d, "installation_eligibility");

		if (!el || bget(el, "eligible"))
			disk += (double)iget(d, "size_bytes") / 1e9;
	}
	w = (double)(iget(json_object_get(inv, "cpu"), "count") - 4) +
	    0.1 * ((double)iget(json_object_get(inv, "memory"), "usable_bytes") / (1024.0 * 1024 * 1024) - 16) +
	    0.004 * (disk - 100);
	json_decref(inv);
	return w;
}

static bool meets(const json_t *host, const json_t *cluster, enum hw_role role)
{
	json_t *inv = host_inventory(host);
	struct hw_req r = hw_requirements(role, sget(cluster, "openshift_version"));
	bool ok;

	if (!inv)
		return false;
	ok = iget(json_object_get(inv, "cpu"), "count") >= r.cpu_cores &&
	     iget(json_object_get(inv, "memory"), "physical_bytes") >= (r.ram_mib - 100) * 1024 * 1024;
	json_decref(inv);
	return ok;
}

int cluster_suggest_roles(const json_t *cluster, json_t *hosts)
{
	size_t n = json_array_size(hosts), *order;
	double *weight;
	json_int_t want = control_plane_count(cluster);
	int masters = 0, arbiters = 0;
	json_t *h;
	size_t i;

	order = malloc((n ? n : 1) * sizeof(*order));
	weight = malloc((n ? n : 1) * sizeof(*weight));
	if (!order || !weight) {
		free(order);
		free(weight);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		h = json_array_get(hosts, i);
		order[i] = i;
		weight[i] = host_weight(h);
		if (is_day2_host(h)) {
			set_str(h, "suggested_role", "worker");
		} else if (!auto_role(h)) {
			set_str(h, "suggested_role", sget(h, "role"));
			if (!strcmp(sget(h, "role"), "master"))
				masters++;
			else if (!strcmp(sget(h, "role"), "arbiter"))
				arbiters++;
		}
	}
	/* Stable insertion sort by weight: weakest first, ties in array order. */
	for (i = 1; i < n; i++)
		for (size_t j = i; j > 0 && weight[order[j - 1]] > weight[order[j]]; j--) {
			size_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		h = json_array_get(hosts, order[i]);
		if (is_day2_host(h) || !auto_role(h))
			continue;
		if (masters < want && meets(h, cluster, cluster_is_sno(cluster) ? HW_SNO : HW_MASTER)) {
			set_str(h, "suggested_role", "master");
			masters++;
		} else if (want == 2 && arbiters == 0 && meets(h, cluster, HW_ARBITER)) {
			set_str(h, "suggested_role", "arbiter");
			arbiters++;
		} else {
			set_str(h, "suggested_role", "worker");
		}
	}
	free(order);
	free(weight);
	return 0;
}

int cluster_assign_roles(const json_t *cluster, json_t *hosts, ah_err *err)
{
	static const char *const boot_ok[] = { "known", "preparing-for-installation", NULL };
	json_t *h, *last = NULL;
	bool need_suggest = false, have_bootstrap = false;
	size_t i;

	json_array_foreach(hosts, i, h) {
		const char *sr = sget(h, "suggested_role");

		if (auto_role(h) && (!*sr || !strcmp(sr, "auto-assign")))
			need_suggest = true;
	}
	if (need_suggest && cluster_suggest_roles(cluster, hosts) < 0)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory suggesting roles");
	json_array_foreach(hosts, i, h) {
		if (auto_role(h))
			set_str(h, "role", sget(h, "suggested_role"));
		if (strcmp(sget(h, "role"), "master"))
			json_object_set_new(h, "bootstrap", json_false());
		else if (bget(h, "bootstrap"))
			have_bootstrap = true;
	}
	if (have_bootstrap)
		return 0;
	json_array_foreach(hosts, i, h)
		if (!strcmp(sget(h, "role"), "master") && !is_day2_host(h) &&
		    (host_done_status(h, boot_ok) || cluster_is_sno(cluster)))
			last = h;
	if (!last)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "cluster %s has no master host that can be the bootstrap",
				  sget(cluster, "id"));
	json_object_set_new(last, "bootstrap", json_true());
	return 0;
}

/* ---- auto-install gate and ACI conditions (kubeapi §2.1, §4.3) ---- */

void aci_requirements_from(const json_t *aci, struct aci_requirements *ret)
{
	const json_t *pr = path(json_object_get(aci, "spec"), "provisionRequirements", NULL);

	ret->control_plane_agents = (int)iget(pr, "controlPlaneAgents");
	ret->worker_agents = (int)iget(pr, "workerAgents");
	ret->arbiter_agents = (int)iget(pr, "arbiterAgents");
}

void cluster_count_hosts(const json_t *hosts, struct cluster_host_counts *ret)
{
	const json_t *h;
	size_t i;

	memset(ret, 0, sizeof(*ret));
	json_array_foreach(hosts, i, h) {
		const char *role = host_effective_role(h);
		json_t *ss = json_object_get(h, "spec_synced");

		ret->total++;
		if (!strcmp(role, "master") || !strcmp(role, "bootstrap"))
			ret->masters++;
		else if (!strcmp(role, "arbiter"))
			ret->arbiters++;
		else if (!strcmp(role, "worker"))
			ret->workers++;
		if (!strcmp(sget(h, "status"), "known")) {
			ret->known++;
			if (bget(h, "approved"))
				ret->approved_known++;
		}
		if (json_is_false(ss))
			ret->unsynced++;
	}
}

enum cluster_gate cluster_install_gate(const json_t *cluster, const json_t *hosts, const struct aci_requirements *req)
{
	struct cluster_host_counts n;
	int expected = req->control_plane_agents + req->worker_agents + req->arbiter_agents;

	if (strcmp(sget(cluster, "status"), "ready"))
		return CLUSTER_GATE_NOT_READY;
	cluster_count_hosts(hosts, &n);
	if (n.masters != req->control_plane_agents || n.workers != req->worker_agents ||
	    n.arbiters != req->arbiter_agents)
		return CLUSTER_GATE_INSUFFICIENT_AGENTS;
	if (n.unsynced)
		return CLUSTER_GATE_UNSYNCED_AGENTS;
	if (n.approved_known != expected || n.known != expected)
		return CLUSTER_GATE_UNAPPROVED_AGENTS;
	return CLUSTER_GATE_OK;
}

static json_t *acond(const char *type, const char *status, const char *reason, const char *msg)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:n, s:n}", "type", type, "status", status, "reason", reason, "message",
			 msg ? msg : "", "lastProbeTime", "lastTransitionTime");
}

static json_t *acondf(const char *type, const char *status, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static json_t *acondf(const char *type, const char *status, const char *reason, const char *fmt, ...)
{
	strbuf sb = STRBUF_INIT;
	va_list ap;
	json_t *c;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	c = acond(type, status, reason, sb.buf);
	strbuf_release(&sb);
	return c;
}

#define NOT_AVAILABLE "Information not available"
#define UNKNOWN_STATUS "The installation status is currently not recognized:"

static json_t *spec_synced(const struct aci_conditions_in *ci)
{
	if (ci->spec_synced)
		return acond("SpecSynced", "True", "SyncOK", "SyncOK");
	if (ci->spec_error_is_input)
		return acondf("SpecSynced", "False", "InputError", "The Spec could not be synced due to an input error: %s",
			      ci->spec_error ? ci->spec_error : "");
	return acondf("SpecSynced", "False", "BackendError", "The Spec could not be synced due to backend error: %s",
		      ci->spec_error ? ci->spec_error : "");
}

static json_t *requirements_met(const char *st, const struct aci_conditions_in *ci)
{
	static const char *const already[] = { "preparing-for-installation", "installing",
					       "installing-pending-user-action", "adding-hosts", "finalizing", NULL };
	const char *T = "RequirementsMet";

	if (!strcmp(st, "ready")) {
		struct cluster_host_counts n;
		int expected = ci->req.control_plane_agents + ci->req.worker_agents + ci->req.arbiter_agents;

		cluster_count_hosts(ci->hosts, &n);
		if (n.masters != ci->req.control_plane_agents || n.workers != ci->req.worker_agents ||
		    n.arbiters != ci->req.arbiter_agents)
			return acondf(T, "False", "InsufficientAgents",
				      "The cluster currently requires exactly %d master agents, %d arbiter agents and %d worker agents, but currently registered %d master agents, %d arbiter agents and %d worker agents",
				      ci->req.control_plane_agents, ci->req.arbiter_agents, ci->req.worker_agents, n.masters,
				      n.arbiters, n.workers);
		if (n.unsynced)
			return acondf(T, "False", "UnsyncedAgents", "The cluster currently has %d agents with spec error",
				      n.unsynced);
		if (n.approved_known < expected)
			return acondf(T, "False", "UnapprovedAgents", "The installation is pending on the approval of %d agents",
				      expected - n.approved_known);
		return acond(T, "True", "ClusterIsReady", "The cluster is ready to begin the installation");
	}
	if (!strcmp(st, "insufficient") || !strcmp(st, "pending-for-input"))
		return acond(T, "False", "ClusterNotReady", "The cluster is not ready to begin the installation");
	if (in(st, already))
		return acond(T, "True", "ClusterAlreadyInstalling", "The cluster requirements are met");
	if (!strcmp(st, "installed") || !strcmp(st, "error"))
		return acond(T, "True", "ClusterInstallationStopped", "The cluster installation stopped");
	return acondf(T, "Unknown", "UnknownStatus", "%s %s", UNKNOWN_STATUS, st);
}

/* Messages of validations that are not success (disabled included),
 * ","-joined, categories and ids in sorted order. */
static void failing_list(const json_t *cluster, strbuf *sb)
{
	json_t *vi = jval(cluster, "validations_info");
	const char *cats[16];
	size_t n = 0;
	const char *cat;
	json_t *list;

	json_object_foreach(vi, cat, list)
		if (n < 16)
			cats[n++] = cat;
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && strcmp(cats[j - 1], cats[j]) > 0; j--) {
			const char *t = cats[j];

			cats[j] = cats[j - 1];
			cats[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		const json_t *x;
		size_t k;

		json_array_foreach(json_object_get(vi, cats[i]), k, x)
			if (strcmp(sget(x, "status"), "success"))
				strbuf_addf(sb, "%s%s", sb->len ? "," : "", sget(x, "message"));
	}
	json_decref(vi);
}

static bool validations_empty(const json_t *cluster)
{
	json_t *vi = jval(cluster, "validations_info");
	bool empty = !vi || (json_is_object(vi) && json_object_size(vi) == 0);

	json_decref(vi);
	return empty;
}

static json_t *validated(const json_t *cluster, const char *st)
{
	const char *T = "Validated";
	strbuf sb = STRBUF_INIT;
	json_t *c;

	if (!strcmp(st, "insufficient") || !strcmp(st, "pending-for-input")) {
		failing_list(cluster, &sb);
		if (!strcmp(st, "insufficient"))
			c = acondf(T, "False", "ValidationsFailing", "The cluster's validations are failing: %s",
				   sb.buf ? sb.buf : "");
		else
			c = acondf(T, "False", "ValidationsUserPending", "The cluster's validations are pending for user: %s",
				   sb.buf ? sb.buf : "");
		strbuf_release(&sb);
		return c;
	}
	if (strcmp(st, "adding-hosts") && validations_empty(cluster))
		return acond(T, "Unknown", "ValidationsUnknown", "The cluster's validations have not yet been calculated");
	return acond(T, "True", "ValidationsPassing", "The cluster's validations are passing");
}

static json_t *completed(const json_t *cluster, const char *st, const struct aci_conditions_in *ci)
{
	static const char *const progress[] = { "preparing-for-installation", "installing", "finalizing",
						"installing-pending-user-action", NULL };
	const char *T = "Completed", *info = sget(cluster, "status_info");

	if (!strcmp(st, "installed") || !strcmp(st, "adding-hosts"))
		return acondf(T, "True", "InstallationCompleted", "The installation has completed: %s", info);
	if (!strcmp(st, "error"))
		return acondf(T, "False", "InstallationFailed", "The installation has failed: %s", info);
	if (!strcmp(st, "ready") && ci->hold)
		return acond(T, "False", "InstallationOnHold",
			     "The installation is on hold. To unhold set holdInstallation to false");
	if (!strcmp(st, "ready") || !strcmp(st, "insufficient") || !strcmp(st, "pending-for-input"))
		return acond(T, "False", "InstallationNotStarted", "The installation has not yet started");
	if (in(st, progress)) {
		if (ci->cvo_status && *ci->cvo_status)
			return acondf(T, "False", "InstallationInProgress",
				      "The installation is in progress: %s. Cluster version status: %s, message: %s", info,
				      ci->cvo_status, ci->cvo_message ? ci->cvo_message : "");
		return acondf(T, "False", "InstallationInProgress", "The installation is in progress: %s", info);
	}
	return acondf(T, "Unknown", "UnknownStatus", "%s %s", UNKNOWN_STATUS, st);
}

static json_t *old_cond(const json_t *old, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(old, i, c)
		if (!strcmp(sget(c, "type"), type))
			return (json_t *)c;
	return NULL;
}

static void last_prep(json_t *out, const json_t *cluster, const json_t *old_conditions)
{
	const char *T = "LastInstallationPreparationFailed";
	const json_t *lip = json_object_get(cluster, "last_installation_preparation");
	const char *st = sget(lip, "status");
	json_t *o;

	if (!strcmp(st, "not_started") || !cluster) {
		if ((o = old_cond(old_conditions, T)))
			json_array_append_new(out, json_deep_copy(o));
		return;
	}
	if (!strcmp(st, "failed"))
		json_array_append_new(out, acond(T, "True", "The last installation preparation failed", sget(lip, "reason")));
	else if (!strcmp(st, "success"))
		json_array_append_new(out, acond(T, "False", "There is no failing prior preparation attempt", ""));
	else
		json_array_append_new(out, acond(T, "False", "Cluster preparation has never been performed for this cluster",
						 ""));
}

static void not_available(json_t *out)
{
	static const char *const types[] = { "RequirementsMet", "Validated", "Completed", "Failed", "Stopped", NULL };

	for (const char *const *t = types; *t; t++)
		json_array_append_new(out, acond(*t, "Unknown", "NotAvailable", NOT_AVAILABLE));
}

json_t *aci_conditions(const json_t *cluster, const struct aci_conditions_in *ci)
{
	json_t *out = json_array();
	const char *st;

	json_array_append_new(out, spec_synced(ci));
	if (!cluster || !*sget(cluster, "status")) {
		not_available(out);
		last_prep(out, NULL, ci->old_conditions);
		return out;
	}
	st = sget(cluster, "status");
	json_array_append_new(out, requirements_met(st, ci));
	json_array_append_new(out, validated(cluster, st));
	json_array_append_new(out, completed(cluster, st, ci));
	if (!strcmp(st, "error"))
		json_array_append_new(out, acondf("Failed", "True", "InstallationFailed", "The installation failed: %s",
						  sget(cluster, "status_info")));
	else
		json_array_append_new(out, acond("Failed", "False", "InstallationNotFailed", "The installation has not failed"));
	if (!strcmp(st, "error"))
		json_array_append_new(out, acond("Stopped", "True", "InstallationFailed",
						 "The installation has stopped due to error"));
	else if (!strcmp(st, "cancelled"))
		json_array_append_new(out, acond("Stopped", "True", "InstallationCancelled",
						 "The installation has stopped because it was cancelled"));
	else if (!strcmp(st, "installed") || !strcmp(st, "adding-hosts"))
		json_array_append_new(out, acond("Stopped", "True", "InstallationCompleted",
						 "The installation has stopped because it completed successfully"));
	else
		json_array_append_new(out, acond("Stopped", "False", "InstallationNotStopped",
						 "The installation is waiting to start or in progress"));
	last_prep(out, cluster, ci->old_conditions);
	return out;
}

json_t *aci_conditions_cd_missing(const char *cd_name, const char *ns)
{
	json_t *out = json_array();

	json_array_append_new(out, acondf("SpecSynced", "False", "InputError",
					  "The Spec could not be synced due to an input error: ClusterDeployment with name '%s' in namespace '%s' not found. Ensure that the CRD is already applied.",
					  cd_name ? cd_name : "", ns ? ns : ""));
	not_available(out);
	return out;
}

void aci_conditions_merge_times(json_t *new_conds, const json_t *old_conds, const char *now)
{
	json_t *c;
	size_t i;

	json_array_foreach(new_conds, i, c) {
		const json_t *o = old_cond(old_conds, sget(c, "type"));
		const json_t *lt = json_object_get(o, "lastTransitionTime"), *lp = json_object_get(o, "lastProbeTime");

		if (o && !strcmp(sget(o, "status"), sget(c, "status")) && !strcmp(sget(o, "reason"), sget(c, "reason")) &&
		    !strcmp(sget(o, "message"), sget(c, "message")) && json_is_string(lt)) {
			json_object_set(c, "lastTransitionTime", (json_t *)lt);
			json_object_set(c, "lastProbeTime", json_is_string(lp) ? (json_t *)lp : (json_t *)lt);
		} else {
			set_str(c, "lastTransitionTime", now);
			set_str(c, "lastProbeTime", now);
		}
	}
}

static const char *crd_platform(const char *t)
{
	static const char *const map[][2] = { { "baremetal", "BareMetal" }, { "none", "None" }, { "vsphere", "VSphere" },
					      { "nutanix", "Nutanix" }, { "external", "External" }, { "oci", "External" } };

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(t, map[i][0]))
			return map[i][1];
	return "";
}

json_t *aci_status_from_cluster(const json_t *cluster)
{
	json_t *s = json_object(), *api = json_array(), *ing = json_array(), *mn = json_array(), *vi, *x;
	size_t i;

	json_object_set_new(s, "debugInfo", json_pack("{s:s, s:s}", "state", sget(cluster, "status"), "stateInfo",
						       sget(cluster, "status_info")));
	json_object_set_new(s, "progress", json_pack("{s:I}", "totalPercentage",
						      iget(json_object_get(cluster, "progress"), "total_percentage")));
	json_array_foreach(json_object_get(cluster, "api_vips"), i, x)
		json_array_append_new(api, json_string(sget(x, "ip")));
	json_array_foreach(json_object_get(cluster, "ingress_vips"), i, x)
		json_array_append_new(ing, json_string(sget(x, "ip")));
	json_array_foreach(json_object_get(cluster, "machine_networks"), i, x)
		json_array_append_new(mn, json_pack("{s:s}", "cidr", sget(x, "cidr")));
	set_str(s, "apiVIP", sget(json_array_get(json_object_get(cluster, "api_vips"), 0), "ip"));
	set_str(s, "ingressVIP", sget(json_array_get(json_object_get(cluster, "ingress_vips"), 0), "ip"));
	json_object_set_new(s, "apiVIPs", api);
	json_object_set_new(s, "ingressVIPs", ing);
	json_object_set_new(s, "machineNetwork", mn);
	json_object_set_new(s, "userManagedNetworking", json_boolean(umn(cluster)));
	set_str(s, "platformType", crd_platform(sget(json_object_get(cluster, "platform"), "type")));
	if ((vi = jval(cluster, "validations_info")))
		json_object_set_new(s, "validationsInfo", vi);
	/* Upstream mirrors the JSON text as it is stored. */
	if ((x = jval(cluster, "connectivity_majority_groups"))) {
		char *txt = json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);

		if (txt)
			set_str(s, "connectivityMajorityGroups", txt);
		free(txt);
		json_decref(x);
	}
	return s;
}
