/* validations.c - the host validations that gate the pre-installation
 * states, the default hardware requirements and disk eligibility.  Messages
 * are the upstream ones (internal/host/validator.go). */
#include "assisted/validations.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/cidr.h"
#include "assisted/inventory.h"
#include "base/strbuf.h"
#include "base/util.h"

/* ---- small JSON getters ---- */

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static int64_t iget(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return util_double_to_i64(json_real_value(v));
	return 0;
}

static double dget(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* A member that may be stored as JSON text or as the value itself; returns
 * a new reference or NULL when absent/empty/unparseable. */
static json_t *jget(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (!v || json_is_null(v))
		return NULL;
	if (json_is_string(v)) {
		if (json_string_length(v) == 0)
			return NULL;
		return json_loads(json_string_value(v), JSON_DECODE_ANY, NULL);
	}
	return json_incref(v);
}

/* ---- requirements ---- */

static int version_ge(const char *v, int maj, int min)
{
	int a = 0, b = 0;

	if (!v || sscanf(v, "%d.%d", &a, &b) < 2)
		return 0;
	return a > maj || (a == maj && b >= min);
}

struct hw_req hw_requirements(enum hw_role role, const char *ver)
{
	static const struct hw_req table[] = {
		[HW_MASTER] = { 4, 16384, 100, 10, 100, 0 },
		[HW_ARBITER] = { 2, 8192, 50, 10, 1000, 0 },
		[HW_WORKER] = { 2, 8192, 100, 10, 1000, 10 },
		[HW_SNO] = { 8, 16384, 100, 10, -1, -1 },
		[HW_EDGE_WORKER] = { 2, 8192, 15, 10, -1, -1 },
	};
	struct hw_req r = table[role];

	if (role == HW_SNO && version_ge(ver, 4, 22))
		r.cpu_cores = 4;
	return r;
}

const char *host_effective_role(const json_t *host)
{
	const char *r = sget(host, "role");

	if (*r && strcmp(r, "auto-assign") != 0)
		return r;
	r = sget(host, "suggested_role");
	return *r ? r : "auto-assign";
}

static int64_t control_plane_count(const json_t *cluster)
{
	int64_t n = iget(cluster, "control_plane_count");

	if (n > 0)
		return n;
	if (!strcmp(sget(cluster, "high_availability_mode"), "None"))
		return 1;
	return 3;
}

static bool is_sno(const json_t *cluster)
{
	return cluster && control_plane_count(cluster) == 1;
}

static bool is_day2(const json_t *host, const json_t *cluster)
{
	return !strcmp(sget(host, "kind"), "AddToExistingClusterHost") ||
	       !strcmp(sget(cluster, "kind"), "AddHostsCluster");
}

enum hw_role hw_role_for_host(const json_t *host, const json_t *inv, const json_t *cluster)
{
	const char *role = host_effective_role(host);
	const json_t *sv = json_object_get(inv, "system_vendor");
	char prod[128];
	size_t n = 0;

	if (!cluster)
		return HW_ARBITER;
	if (!strcmp(role, "master") || !strcmp(role, "bootstrap"))
		return is_sno(cluster) ? HW_SNO : HW_MASTER;
	if (!strcmp(role, "arbiter"))
		return HW_ARBITER;
	for (const char *p = sget(sv, "product_name"); *p && n + 1 < sizeof(prod); p++)
		if (*p != ' ')
			prod[n++] = (char)tolower((unsigned char)*p);
	prod[n] = '\0';
	if (!strcmp(sget(json_object_get(inv, "cpu"), "architecture"), "aarch64") && !strcmp(prod, "bluefieldsoc"))
		return HW_EDGE_WORKER;
	return HW_WORKER;
}

/* ---- byte formatting (Go helpers the messages use) ---- */

void bytes_to_string(int64_t b, char *buf, size_t size)
{
	const int64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024, TiB = GiB * 1024, PiB = TiB * 1024;

	if (b >= PiB)
		snprintf(buf, size, "%.2f PiB", (double)b / (double)PiB);
	else if (b >= TiB)
		snprintf(buf, size, "%.2f TiB", (double)b / (double)TiB);
	else if (b >= GiB)
		snprintf(buf, size, "%.2f GiB", (double)b / (double)GiB);
	else if (b >= MiB)
		snprintf(buf, size, "%lld MiB", (long long)(b / MiB));
	else if (b >= KiB)
		snprintf(buf, size, "%lld KiB", (long long)(b / KiB));
	else
		snprintf(buf, size, "%lld bytes", (long long)b);
}

void humanize_bytes(uint64_t b, char *buf, size_t size)
{
	static const char *sfx[] = { "B", "kB", "MB", "GB", "TB", "PB", "EB" };
	double div = 1, val;
	int e = 0;

	if (b < 10) {
		snprintf(buf, size, "%llu B", (unsigned long long)b);
		return;
	}
	/* e = floor(log1000(b)) without libm. */
	while (e < 6 && (double)b / div >= 1000) {
		div *= 1000;
		e++;
	}
	val = (double)(uint64_t)((double)b / div * 10 + 0.5) / 10;
	snprintf(buf, size, val < 10 ? "%.1f %s" : "%.0f %s", val, sfx[e]);
}

/* ---- disks ---- */

void disk_identifier(const json_t *disk, char *buf, size_t size)
{
	if (*sget(disk, "by_id"))
		snprintf(buf, size, "%s", sget(disk, "by_id"));
	else if (*sget(disk, "by_path"))
		snprintf(buf, size, "%s", sget(disk, "by_path"));
	else
		snprintf(buf, size, "/dev/%s", sget(disk, "name"));
}

/* Valid installation drive types for a modern OCP (≥ 4.15) on arch. */
static size_t valid_drive_types(const char *arch, const char **out)
{
	size_t n = 0;

	out[n++] = "HDD";
	out[n++] = "SSD";
	out[n++] = "Multipath";
	out[n++] = "RAID";
	out[n++] = "iSCSI";
	if (!*arch || !strcmp(arch, "x86_64") || !strcmp(arch, "s390x"))
		out[n++] = "FC";
	if (!strcmp(arch, "s390x")) {
		out[n++] = "ECKD";
		out[n++] = "ECKD (ESE)";
		out[n++] = "FBA";
	}
	return n;
}

static bool valid_storage_type(const json_t *disk, const char *arch)
{
	const char *types[12];
	size_t n = valid_drive_types(arch, types);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(sget(disk, "drive_type"), types[i]))
			return true;
	return false;
}

json_t *disk_service_reasons(const json_t *disk, int64_t min_gb, const char *arch)
{
	json_t *r = json_array();
	int64_t min = min_gb * 1000000000LL, sz = iget(disk, "size_bytes");
	char a[32], b[32];

	if (sz < min) {
		strbuf sb = STRBUF_INIT;

		humanize_bytes((uint64_t)(sz < 0 ? 0 : sz), a, sizeof(a));
		humanize_bytes((uint64_t)min, b, sizeof(b));
		strbuf_addf(&sb, "Disk is too small (disk only has %s, but %s are required)", a, b);
		json_array_append_new(r, json_string(sb.buf));
		strbuf_release(&sb);
	}
	if (!valid_storage_type(disk, arch ? arch : "")) {
		const char *types[12];
		size_t n = valid_drive_types(arch ? arch : "", types);
		strbuf sb = STRBUF_INIT;

		strbuf_addf(&sb, "Drive type is %s, it must be one of ", sget(disk, "drive_type"));
		for (size_t i = 0; i < n; i++)
			strbuf_addf(&sb, "%s%s", i ? ", " : "", types[i]);
		strbuf_addch(&sb, '.');
		json_array_append_new(r, json_string(sb.buf));
		strbuf_release(&sb);
	}
	return r;
}

void inventory_apply_eligibility(json_t *inv, const json_t *host, const json_t *cluster)
{
	struct hw_req req = hw_requirements(hw_role_for_host(host, inv, cluster), sget(cluster, "openshift_version"));
	const char *arch = sget(json_object_get(inv, "cpu"), "architecture");
	json_t *disk;
	size_t i;
	char id[512];

	json_array_foreach(json_object_get(inv, "disks"), i, disk) {
		json_t *el = json_object_get(disk, "installation_eligibility");
		json_t *reasons = json_array(), *svc, *x;
		bool agent_ok = true;
		size_t j;

		if (!*sget(disk, "id")) {
			disk_identifier(disk, id, sizeof(id));
			json_object_set_new(disk, "id", json_string(id));
		}
		if (json_is_object(el)) {
			json_array_foreach(json_object_get(el, "not_eligible_reasons"), j, x)
				json_array_append(reasons, x);
			agent_ok = json_array_size(reasons) == 0;
		}
		svc = disk_service_reasons(disk, req.disk_size_gb, arch);
		json_array_extend(reasons, svc);
		json_decref(svc);
		json_object_set_new(disk, "installation_eligibility",
				    json_pack("{s:b, s:o}", "eligible", agent_ok && json_array_size(reasons) == 0,
					      "not_eligible_reasons", reasons));
	}
}

static bool disk_eligible(const json_t *disk)
{
	return json_is_true(json_object_get(json_object_get(disk, "installation_eligibility"), "eligible"));
}

static int disk_cmp(const void *pa, const void *pb)
{
	const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	bool ba = json_is_true(json_object_get(a, "bootable")), bb = json_is_true(json_object_get(b, "bootable"));
	bool na = !strncmp(sget(a, "name"), "nvme", 4), nb = !strncmp(sget(b, "name"), "nvme", 4);
	int c;

	if (ba != bb)
		return ba ? -1 : 1;
	if (na != nb)
		return na ? 1 : -1;
	if ((c = strcmp(sget(a, "drive_type"), sget(b, "drive_type"))) != 0)
		return c;
	if (iget(a, "size_bytes") != iget(b, "size_bytes"))
		return iget(a, "size_bytes") < iget(b, "size_bytes") ? -1 : 1;
	return strcmp(sget(a, "hctl"), sget(b, "hctl"));
}

void host_choose_installation_disk(json_t *host, const json_t *inv)
{
	const json_t *disks = json_object_get(inv, "disks");
	const char *cur = sget(host, "installation_disk_id");
	json_t *disk, **el, *pick = NULL;
	size_t i, n = 0;
	char id[512], dev[300];

	if (!*cur)
		cur = sget(host, "installation_disk_path");
	el = calloc(json_array_size(disks) + 1, sizeof(*el));
	if (!el)
		return;
	json_array_foreach(disks, i, disk) {
		if (!disk_eligible(disk))
			continue;
		el[n++] = disk;
		disk_identifier(disk, id, sizeof(id));
		snprintf(dev, sizeof(dev), "/dev/%s", sget(disk, "name"));
		if (*cur && !pick && (!strcmp(cur, id) || !strcmp(cur, sget(disk, "by_path")) || !strcmp(cur, dev)))
			pick = disk;
	}
	if (!pick && n > 0) {
		qsort(el, n, sizeof(*el), disk_cmp);
		pick = el[0];
	}
	if (pick) {
		disk_identifier(pick, id, sizeof(id));
		snprintf(dev, sizeof(dev), "/dev/%s", sget(pick, "name"));
		json_object_set_new(host, "installation_disk_id", json_string(id));
		json_object_set_new(host, "installation_disk_path", json_string(dev));
	} else {
		json_object_del(host, "installation_disk_id");
		json_object_del(host, "installation_disk_path");
	}
	free(el);
}

/* ---- IP helpers ---- */

static bool parse_cidr(const char *s, struct cidr *c, bool need_prefix)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);

	if (n >= sizeof(buf) || (need_prefix && !slash))
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
	c->prefix = slash ? atoi(slash + 1) : (c->family == 4 ? 32 : 128);
	return c->prefix >= 0 && c->prefix <= (c->family == 4 ? 32 : 128);
}

/* ---- the validation run ---- */

struct vctx {
	const json_t *host;
	const struct validation_ctx *c;
	const json_t *cluster;     /* NULL when unbound */
	json_t *inv;               /* valid inventory (cpu, memory, disks) or NULL */
	struct hw_req total;       /* requirements for the host's role */
	int64_t min_cpu, min_ram_mib;
	json_t *out;
};

static void put(struct vctx *v, const char *id, const char *cat, const char *status, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void put(struct vctx *v, const char *id, const char *cat, const char *status, const char *fmt, ...)
{
	strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	json_object_set_new(v->out, id, json_pack("{s:s, s:s, s:s}", "category", cat, "status", status, "message",
						  sb.buf ? sb.buf : ""));
	strbuf_release(&sb);
}

#define HW "hardware"
#define NET "network"
#define SUPPRESS "success-suppress-output"

static const char msg_media_disconnected[] =
	"Unable to read from the discovery media. It was either disconnected or poor network conditions prevented it from being read. Try using the minimal ISO option and be sure to keep the media connected until the installation is completed";

static const char *real_hostname(const json_t *host, const json_t *inv)
{
	const char *r = sget(host, "requested_hostname");

	return *r ? r : sget(inv, "hostname");
}

static bool hostname_syntax_ok(const char *h)
{
	size_t len = strlen(h), lab = 0;
	bool first = true;

	if (len == 0 || len > 63)
		return false;
	if (!(islower((unsigned char)h[0]) || isdigit((unsigned char)h[0])))
		return false;
	for (const char *p = h; *p; p++) {
		if (*p == '.') {
			if (!first && lab == 0)
				return false;
			if (first && lab > 63)
				return false;
			first = false;
			lab = 0;
			continue;
		}
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
			return false;
		lab++;
		if (lab > 63)
			return false;
	}
	return first || lab > 0;
}

static const char *const forbidden_hostnames[] = { "localhost", "localhost.localdomain", "localhost4",
						   "localhost4.localdomain4", "localhost6",
						   "localhost6.localdomain6", NULL };

static bool stage_in(const char *stage, const char *const *list)
{
	for (; *list; list++)
		if (!strcmp(stage, *list))
			return true;
	return false;
}

/* Stages after the host rebooted into the installed system: the agent is
 * gone, so its connection is no longer judged or shown (§3.1). */
static const char *const stages_after_reboot[] = { "Rebooting", "Waiting for ignition", "Configuring", "Joined",
						   "Done", NULL };
/* Stages of the bootstrap host before its reboot: the agent still reports. */
static const char *const bootstrap_stages_before_reboot[] = { "Starting installation", "Waiting for control plane",
							      "Waiting for bootkube", "Installing",
							      "Writing image to disk", "Waiting for controller",
							      NULL };

static void v_connection(struct vctx *v)
{
	int64_t to = v->c->disconnect_timeout_s > 0 ? v->c->disconnect_timeout_s : 180;
	int64_t at = iget(v->host, "checked_in_at");
	const char *stage = sget(json_object_get(v->host, "progress"), "current_stage");

	if (json_is_true(json_object_get(v->host, "bootstrap")))
		to += 120;
	if (*stage && stage_in(stage, stages_after_reboot)) {
		put(v, "connected", NET, SUPPRESS, "%s", "");
		put(v, "media-connected", NET, SUPPRESS, "%s", "");
		return;
	}
	if (at == 0 || v->c->now - at <= to || (*stage && !stage_in(stage, bootstrap_stages_before_reboot)))
		put(v, "connected", NET, "success", "Host is connected");
	else
		put(v, "connected", NET, "failure", "Host is disconnected");
	if (!strcmp(sget(v->host, "media_status"), "disconnected"))
		put(v, "media-connected", NET, "failure", "%s", msg_media_disconnected);
	else
		put(v, "media-connected", NET, "success", "Media device is connected");
}

static void v_hardware(struct vctx *v)
{
	const json_t *inv = v->inv;
	char a[32], b[32];
	const char *role = host_effective_role(v->host);

	if (inv)
		put(v, "has-inventory", HW, "success", "Valid inventory exists for the host");
	else
		put(v, "has-inventory", HW, "failure", "Inventory has not been received for the host");
	if (!inv) {
		put(v, "has-min-cpu-cores", HW, "pending", "Missing inventory");
		put(v, "has-min-memory", HW, "pending", "Missing inventory");
		put(v, "has-min-valid-disks", HW, "pending", "Missing inventory");
		put(v, "has-cpu-cores-for-role", HW, "pending", "Missing inventory or role");
		put(v, "has-memory-for-role", HW, "pending", "Missing inventory or role");
		return;
	}
	int64_t cores = iget(json_object_get(inv, "cpu"), "count");
	const json_t *mem = json_object_get(inv, "memory");
	int64_t phys = iget(mem, "physical_bytes");
	int64_t tol = 100;

	if (cores >= v->min_cpu)
		put(v, "has-min-cpu-cores", HW, "success", "Sufficient CPU cores");
	else
		put(v, "has-min-cpu-cores", HW, "failure",
		    "The host is not eligible to participate in Openshift Cluster because the minimum required CPU cores for any role is %lld, found only %lld",
		    (long long)v->min_cpu, (long long)cores);
	if (!strcmp(sget(mem, "physical_bytes_method"), "meminfo"))
		tol += v->min_ram_mib / 50;
	if (phys >= (v->min_ram_mib - tol) * 1048576LL) {
		put(v, "has-min-memory", HW, "success", "Sufficient minimum RAM");
	} else {
		bytes_to_string(v->min_ram_mib * 1048576LL, a, sizeof(a));
		bytes_to_string(phys, b, sizeof(b));
		put(v, "has-min-memory", HW, "failure",
		    "The host is not eligible to participate in Openshift Cluster because the minimum required RAM for any role is %s, found only %s",
		    a, b);
	}
	bool any = false;
	json_t *d;
	size_t i;

	json_array_foreach(json_object_get(inv, "disks"), i, d)
		if (disk_eligible(d))
			any = true;
	if (any)
		put(v, "has-min-valid-disks", HW, "success", "Sufficient disk capacity");
	else
		put(v, "has-min-valid-disks", HW, "failure",
		    "No eligible disks were found, please check specific disks to see why they are not eligible");
	if (cores >= v->total.cpu_cores)
		put(v, "has-cpu-cores-for-role", HW, "success", "Sufficient CPU cores for role %s", role);
	else
		put(v, "has-cpu-cores-for-role", HW, "failure", "Require at least %lld CPU cores for %s role, found only %lld",
		    (long long)v->total.cpu_cores, role, (long long)cores);
	if (phys >= (v->total.ram_mib - 100) * 1048576LL) {
		put(v, "has-memory-for-role", HW, "success", "Sufficient RAM for role %s", role);
	} else {
		bytes_to_string(v->total.ram_mib * 1048576LL, a, sizeof(a));
		bytes_to_string(phys, b, sizeof(b));
		put(v, "has-memory-for-role", HW, "failure", "Require at least %s RAM for role %s, found only %s", a, role,
		    b);
	}
}

static void v_hostname(struct vctx *v)
{
	const char *hn;
	json_t *h;
	size_t i;

	if (!v->inv) {
		put(v, "hostname-valid", HW, "failure", "Missing inventory");
		if (!v->cluster)
			put(v, "hostname-unique", HW, SUPPRESS, "%s", "");
		else
			put(v, "hostname-unique", HW, "pending", "Missing inventory");
		return;
	}
	hn = real_hostname(v->host, v->inv);
	bool forbidden = false;

	for (const char *const *f = forbidden_hostnames; *f; f++)
		if (!strcmp(hn, *f))
			forbidden = true;
	if (forbidden)
		put(v, "hostname-valid", HW, "failure", "The host name %s is forbidden", hn);
	else if (!hostname_syntax_ok(hn))
		put(v, "hostname-valid", HW, "failure", "Hostname %s is forbidden, hostname should match pattern %s", hn,
		    "^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$");
	else
		put(v, "hostname-valid", HW, "success", "Hostname %s is allowed", hn);
	if (!v->cluster) {
		put(v, "hostname-unique", HW, SUPPRESS, "%s", "");
		return;
	}
	json_array_foreach(v->c->cluster_hosts, i, h) {
		json_t *oi;
		bool same;

		if (!strcmp(sget(h, "id"), sget(v->host, "id")))
			continue;
		if (!(oi = inventory_of_host(h)))
			continue;
		same = !strcmp(real_hostname(h, oi), hn);
		json_decref(oi);
		if (same) {
			put(v, "hostname-unique", HW, "failure", "Hostname %s is not unique in cluster", hn);
			return;
		}
	}
	put(v, "hostname-unique", HW, "success", "Hostname %s is unique in cluster", hn);
}

static bool has_machine_networks(const json_t *cluster)
{
	return json_array_size(json_object_get(cluster, "machine_networks")) > 0;
}

static bool umn(const json_t *cluster)
{
	return json_is_true(json_object_get(cluster, "user_managed_networking"));
}

static void v_machine_cidr(struct vctx *v)
{
	const json_t *cl = v->cluster;
	bool day2 = is_day2(v->host, cl);

	if (!cl) {
		put(v, "machine-cidr-defined", NET, SUPPRESS, "Unexpected status %s", SUPPRESS);
		put(v, "belongs-to-machine-cidr", NET, SUPPRESS, "%s", "");
		return;
	}
	if (umn(cl))
		put(v, "machine-cidr-defined", NET, "success", "No Machine Network CIDR needed: User Managed Networking");
	else if (!strcmp(sget(cl, "kind"), "AddHostsCluster"))
		put(v, "machine-cidr-defined", NET, "success", "No Machine Network CIDR needed: Day2 cluster");
	else if (has_machine_networks(cl))
		put(v, "machine-cidr-defined", NET, "success", "Machine Network CIDR is defined");
	else if (json_is_true(json_object_get(cl, "vip_dhcp_allocation")))
		put(v, "machine-cidr-defined", NET, "failure", "Machine Network CIDR is undefined");
	else
		put(v, "machine-cidr-defined", NET, "failure",
		    "Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs");

	if (umn(cl) && !is_sno(cl)) {
		put(v, "belongs-to-machine-cidr", NET, "success",
		    "No machine network CIDR validation needed: User Managed Networking");
		return;
	}
	if (day2) {
		put(v, "belongs-to-machine-cidr", NET, "success", "No machine network CIDR validation needed: Day2 cluster");
		return;
	}
	if (!v->inv || !has_machine_networks(cl)) {
		put(v, "belongs-to-machine-cidr", NET, "pending", "Missing inventory or machine network CIDR");
		return;
	}
	json_t *mn, *ifc, *addr;
	size_t i, j, k;
	bool all = true;

	json_array_foreach(json_object_get(cl, "machine_networks"), i, mn) {
		struct cidr net, ip;
		bool found = false;

		if (!parse_cidr(sget(mn, "cidr"), &net, true))
			continue;
		json_array_foreach(json_object_get(v->inv, "interfaces"), j, ifc) {
			const char *key = net.family == 4 ? "ipv4_addresses" : "ipv6_addresses";

			json_array_foreach(json_object_get(ifc, key), k, addr)
				if (parse_cidr(json_string_value(addr) ? json_string_value(addr) : "", &ip, false) &&
				    cidr_contains(&net, &ip))
					found = true;
		}
		if (!found)
			all = false;
	}
	if (all)
		put(v, "belongs-to-machine-cidr", NET, "success", "Host belongs to all machine network CIDRs");
	else
		put(v, "belongs-to-machine-cidr", NET, "failure",
		    "Host does not belong to machine network CIDRs. Verify that the host belongs to every CIDR listed under machine networks");
}

static bool json_array_has_str(const json_t *a, const char *s)
{
	json_t *x;
	size_t i;

	json_array_foreach(a, i, x)
		if (json_is_string(x) && !strcmp(json_string_value(x), s))
			return true;
	return false;
}

/* The address families the cluster is configured with, as upstream decides
 * them for its L3 majority check: from the cluster, service and machine
 * networks together, so a user-managed-networking cluster without machine
 * networks still has its families. */
static void configured_families(const json_t *cl, bool *v4, bool *v6)
{
	static const char *const lists[] = { "cluster_networks", "service_networks", "machine_networks" };
	json_t *n;
	size_t i, k;

	for (k = 0; k < sizeof(lists) / sizeof(lists[0]); k++)
		json_array_foreach(json_object_get(cl, lists[k]), i, n) {
			struct cidr c;

			if (parse_cidr(sget(n, "cidr"), &c, true))
				*(c.family == 4 ? v4 : v6) = true;
		}
}

/* A user-managed load balancer makes the connectivity check L3, as
 * user-managed networking does. */
static bool lb_user_managed(const json_t *cl)
{
	const json_t *lb = json_object_get(cl, "load_balancer");

	return lb && !strcmp(sget(lb, "type") ? sget(lb, "type") : "", "user-managed");
}

static void v_majority(struct vctx *v)
{
	const json_t *cl = v->cluster;
	json_t *groups;
	const char *status = "success";

	if (!cl) {
		put(v, "belongs-to-majority-group", NET, SUPPRESS, "%s", "");
		return;
	}
	if (is_day2(v->host, cl)) {
		put(v, "belongs-to-majority-group", NET, "success",
		    "Day2 host is not required to be connected to other hosts in the cluster");
		return;
	}
	if (is_sno(cl)) {
		put(v, "belongs-to-majority-group", NET, "success",
		    "Host has connectivity to the majority of hosts in the cluster");
		return;
	}
	groups = jget(cl, "connectivity_majority_groups");
	if (!groups) {
		put(v, "belongs-to-majority-group", NET, "pending",
		    "Machine Network CIDR or Connectivity Majority Groups missing");
		return;
	}
	if (!json_is_object(groups)) {
		json_decref(groups);
		put(v, "belongs-to-majority-group", NET, "error", "Parse error for connectivity majority group");
		return;
	}
	const char *id = sget(v->host, "id");

	if (umn(cl) || lb_user_managed(cl)) {
		bool v4 = false, v6 = false;

		configured_families(cl, &v4, &v6);
		if (!v4 && !v6)
			status = "failure";
		if (v4 && !json_array_has_str(json_object_get(groups, "IPv4"), id))
			status = "failure";
		if (v6 && !json_array_has_str(json_object_get(groups, "IPv6"), id))
			status = "failure";
	} else if (!has_machine_networks(cl)) {
		status = "pending";
	} else {
		json_t *mn;
		size_t i;

		json_array_foreach(json_object_get(cl, "machine_networks"), i, mn)
			if (!json_array_has_str(json_object_get(groups, sget(mn, "cidr")), id))
				status = "failure";
	}
	json_decref(groups);
	if (!strcmp(status, "failure") && json_array_size(v->c->cluster_hosts) < 3) {
		put(v, "belongs-to-majority-group", NET, "pending",
		    "Not enough hosts in cluster to calculate connectivity groups");
		return;
	}
	if (!strcmp(status, "success"))
		put(v, "belongs-to-majority-group", NET, status, "Host has connectivity to the majority of hosts in the cluster");
	else if (!strcmp(status, "failure"))
		put(v, "belongs-to-majority-group", NET, status, "No connectivity to the majority of hosts in the cluster");
	else
		put(v, "belongs-to-majority-group", NET, status, "Not enough information to calculate host majority groups");
}

static void v_platform_network(struct vctx *v)
{
	const json_t *sv;
	const char *prod;

	if (!v->inv) {
		put(v, "valid-platform-network-settings", NET, "pending", "Missing inventory");
		return;
	}
	sv = json_object_get(v->inv, "system_vendor");
	if (!json_is_object(sv)) {
		put(v, "valid-platform-network-settings", NET, "error", "Validation error");
		return;
	}
	prod = sget(sv, "product_name");
	if (!strcmp(prod, "OpenStack Compute")) {
		if (!v->cluster)
			put(v, "valid-platform-network-settings", NET, SUPPRESS, "%s", "");
		else if (umn(v->cluster))
			put(v, "valid-platform-network-settings", NET, "success", "Platform %s is allowed", prod);
		else
			put(v, "valid-platform-network-settings", NET, "failure",
			    "Platform %s is allowed only for Single Node OpenShift or user-managed networking", prod);
		return;
	}
	put(v, "valid-platform-network-settings", NET, "success", "Platform %s is allowed", prod);
}

static const char *const unbound_states[] = { "insufficient-unbound", "disconnected-unbound",
					       "discovering-unbound", "known-unbound", NULL };

static bool in_set(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static void v_ntp_time(struct vctx *v)
{
	json_t *src = jget(v->host, "ntp_sources"), *x;
	const char *st;
	size_t i;
	int64_t ts = iget(v->host, "timestamp");

	if (src && !json_is_array(src)) {
		st = "error";
	} else {
		st = "failure";
		if (in_set(sget(v->host, "status"), unbound_states) && json_array_size(src) == 0)
			st = SUPPRESS;
		json_array_foreach(src, i, x)
			if (!strcmp(sget(x, "source_state"), "synced"))
				st = "success";
	}
	json_decref(src);
	if (!strcmp(st, "success"))
		put(v, "ntp-synced", NET, st, "Host NTP is synced");
	else if (!strcmp(st, "failure"))
		put(v, "ntp-synced", NET, st, "Host couldn't synchronize with any NTP server");
	else if (!strcmp(st, "error"))
		put(v, "ntp-synced", NET, st, "Parse error for NTP sources");
	else
		put(v, "ntp-synced", NET, st, "Unexpected status %s", st);

	if (ts == 0) {
		put(v, "time-synced-between-host-and-service", NET, "pending",
		    "Missing host time, can't determine synchronization between host and service");
		return;
	}
	int64_t diff = v->c->now - ts;
	char now[64];
	time_t t = (time_t)v->c->now;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(now, sizeof(now), "%Y-%m-%d %H:%M:%S +0000 UTC", &tm);
	if (diff > 20 * 60)
		put(v, "time-synced-between-host-and-service", NET, "failure",
		    "Host clock is not synchronized, service time is ahead of host's at least for %.1f minutes, please configure an NTP server via DHCP or set clock manually. Service time: %s",
		    20.0, now);
	else if (diff < -60 * 60)
		put(v, "time-synced-between-host-and-service", NET, "failure",
		    "Host clock is not synchronized, host time is ahead of service at least for %.1f minutes, please configure an NTP server via DHCP or set clock manually. Service time: %s",
		    60.0, now);
	else
		put(v, "time-synced-between-host-and-service", NET, "success", "Host clock is synchronized with service");
}

/* images_status may be an array or an object keyed by image name. */
static void v_images(struct vctx *v)
{
	json_t *im = jget(v->host, "images_status"), *x;
	strbuf names = STRBUF_INIT;
	const char *k;
	size_t i;
	bool bad = false;

	if (im && !json_is_array(im) && !json_is_object(im)) {
		json_decref(im);
		put(v, "container-images-available", NET, "error", "Validation error");
		return;
	}
	if (json_is_object(im)) {
		json_object_foreach(im, k, x)
			if (!strcmp(sget(x, "result"), "failure") ||
			    (iget(x, "size_bytes") > 0 && dget(x, "download_rate") < 0.001)) {
				strbuf_addf(&names, "%s%s", bad ? "," : "", *sget(x, "name") ? sget(x, "name") : k);
				bad = true;
			}
	} else {
		json_array_foreach(im, i, x)
			if (!strcmp(sget(x, "result"), "failure") ||
			    (iget(x, "size_bytes") > 0 && dget(x, "download_rate") < 0.001)) {
				strbuf_addf(&names, "%s%s", bad ? "," : "", sget(x, "name"));
				bad = true;
			}
	}
	json_decref(im);
	if (bad)
		put(v, "container-images-available", NET, "failure",
		    "Failed to fetch container images needed for installation from %s. This may be due to a network hiccup. Retry to install again. If this problem persists, check your network settings to make sure you\xe2\x80\x99re not blocked.",
		    names.buf);
	else
		put(v, "container-images-available", NET, "success",
		    "All required container images were either pulled successfully or no attempt was made to pull them");
	strbuf_release(&names);
}

/* disks_info[<boot disk id or path>].disk_speed, or NULL. */
static json_t *boot_disk_speed(const json_t *host)
{
	json_t *di = jget(host, "disks_info"), *ds = NULL, *e;

	if (!json_is_object(di)) {
		json_decref(di);
		return NULL;
	}
	e = json_object_get(di, sget(host, "installation_disk_id"));
	if (!e)
		e = json_object_get(di, sget(host, "installation_disk_path"));
	if ((ds = json_object_get(e, "disk_speed")))
		json_incref(ds);
	json_decref(di);
	return ds;
}

static void v_disk_speed(struct vctx *v)
{
	json_t *ds = boot_disk_speed(v->host);

	if (!ds || !json_is_true(json_object_get(ds, "tested")))
		put(v, "sufficient-installation-disk-speed", HW, "success",
		    "Speed of installation disk has not yet been measured");
	else if (iget(ds, "exit_code") == 0)
		put(v, "sufficient-installation-disk-speed", HW, "success", "Speed of installation disk is sufficient");
	else
		put(v, "sufficient-installation-disk-speed", HW, "failure",
		    "While preparing the previous installation the installation disk speed measurement failed or was found to be insufficient");
	json_decref(ds);
}

static const json_t *find_host(const json_t *hosts, const char *id)
{
	json_t *h;
	size_t i;

	json_array_foreach(hosts, i, h)
		if (!strcmp(sget(h, "id"), id))
			return h;
	return NULL;
}

/* Network latency (which=0) and packet loss (which=1) for the host's role. */
static void v_latency(struct vctx *v, int which)
{
	const char *id = which ? "sufficient-packet-loss-requirement-for-role"
			       : "sufficient-network-latency-requirement-for-role";
	const char *ok = which ? "Packet loss requirement has been satisfied."
			       : "Network latency requirement has been satisfied.";
	double thr = which ? v->total.packet_loss_percentage : v->total.network_latency_threshold_ms;
	const char *role = host_effective_role(v->host);
	json_t *conn, *rh, *l3;
	size_t i, j;
	strbuf fail = STRBUF_INIT, seen = STRBUF_INIT;

	if (!v->cluster) {
		put(v, id, NET, SUPPRESS, "%s", "");
		return;
	}
	if (json_array_size(v->c->cluster_hosts) == 1 || thr < 0 || !strcmp(role, "auto-assign") ||
	    is_day2(v->host, v->cluster)) {
		put(v, id, NET, "success", "%s", ok);
		return;
	}
	conn = jget(v->host, "connectivity");
	if (!conn) {
		put(v, id, NET, "pending", which ? "Missing packet loss information." : "Missing network latency information.");
		return;
	}
	if (!json_is_object(conn)) {
		json_decref(conn);
		put(v, id, NET, "error", "Parse error while attempting to process the connectivity report");
		return;
	}
	json_array_foreach(json_object_get(conn, "remote_hosts"), i, rh) {
		json_array_foreach(json_object_get(rh, "l3_connectivity"), j, l3) {
			double val = dget(l3, which ? "packet_loss_percentage" : "average_rtt_ms");
			const json_t *oh;
			json_t *oi;
			char key[80];

			if (val <= thr)
				continue;
			snprintf(key, sizeof(key), "|%s|", sget(l3, "remote_ip_address"));
			if (seen.buf && strstr(seen.buf, key))
				continue;
			oh = find_host(v->c->cluster_hosts, sget(rh, "host_id"));
			if (!oh || strcmp(host_effective_role(oh), role) != 0)
				continue;
			strbuf_adds(&seen, key);
			oi = inventory_of_host(oh);
			if (fail.len)
				strbuf_addch(&fail, ',');
			strbuf_addf(&fail, which ? " %s (%.2f%%)" : " %s (%.2f ms)", real_hostname(oh, oi), val);
			json_decref(oi);
		}
	}
	json_decref(conn);
	if (fail.len == 0)
		put(v, id, NET, "success", "%s", ok);
	else if (which)
		put(v, id, NET, "failure", "Packet loss percentage requirement of %s %.2f%% not met for connectivity between %s and%s.",
		    thr > 0 ? "less than or equals" : "equals", thr, sget(v->host, "id"), fail.buf);
	else
		put(v, id, NET, "failure", "Network latency requirements of %s %.2f ms not met for connectivity between %s and%s.",
		    thr > 0 ? "less than or equals" : "equals", thr, sget(v->host, "id"), fail.buf);
	strbuf_release(&fail);
	strbuf_release(&seen);
}

static void v_default_route(struct vctx *v)
{
	json_t *r;
	size_t i;

	if (!v->inv) {
		put(v, "has-default-route", NET, "pending", "Missing default routing information.");
		return;
	}
	json_array_foreach(json_object_get(v->inv, "routes"), i, r) {
		struct cidr d, g;
		static const unsigned char zero[16];

		if (!*sget(r, "destination") || !*sget(r, "gateway"))
			continue;
		if (!parse_cidr(sget(r, "destination"), &d, false) || !parse_cidr(sget(r, "gateway"), &g, false))
			continue;
		if (!memcmp(d.addr, zero, 16) && memcmp(g.addr, zero, 16)) {
			put(v, "has-default-route", NET, "success", "Host has been configured with at least one default route.");
			return;
		}
	}
	put(v, "has-default-route", NET, "failure", "Host has not yet been configured with a default route.");
}

/* 1 = resolves correctly, 0 = failure, -1 = parse error; *own_ip set when
 * the name resolves to one of the host's addresses. */
static int check_resolution(struct vctx *v, const char *name, char *own_ip, size_t sz)
{
	json_t *res = jget(v->host, "domain_resolutions"), *d, *a, *ifc;
	size_t i, j, k, l;
	int ret = 0;

	own_ip[0] = '\0';
	if (!json_is_object(res)) {
		json_decref(res);
		return res ? -1 : 0;
	}
	json_array_foreach(json_object_get(res, "resolutions"), i, d) {
		if (strcmp(sget(d, "domain_name"), name) != 0)
			continue;
		if (!json_array_size(json_object_get(d, "ipv4_addresses")) &&
		    !json_array_size(json_object_get(d, "ipv6_addresses")))
			continue;
		ret = 1;
		for (int fam = 0; fam < 2 && !own_ip[0]; fam++) {
			const char *rk = fam ? "ipv6_addresses" : "ipv4_addresses";

			json_array_foreach(json_object_get(d, rk), j, a) {
				json_array_foreach(json_object_get(v->inv, "interfaces"), k, ifc) {
					json_t *ia;

					json_array_foreach(json_object_get(ifc, rk), l, ia) {
						const char *s = json_string_value(ia), *ra = json_string_value(a);
						size_t n;

						if (!s || !ra)
							continue;
						n = strcspn(s, "/");
						if (strlen(ra) == n && !strncmp(s, ra, n))
							snprintf(own_ip, sz, "%s", ra);
					}
				}
			}
		}
		break;
	}
	json_decref(res);
	if (ret == 1 && own_ip[0])
		ret = 0;
	return ret;
}

static void v_domains(struct vctx *v)
{
	static const struct {
		const char *id, *prefix, *target;
	} checks[] = {
		{ "api-domain-name-resolved-correctly", "api", "API load balancer" },
		{ "api-int-domain-name-resolved-correctly", "api-int", "internal API load balancer" },
		{ "apps-domain-name-resolved-correctly", "console-openshift-console.apps", "application ingress" },
	};
	const json_t *cl = v->cluster;
	const char *base = sget(cl, "base_dns_domain"), *name = sget(cl, "name");

	for (size_t i = 0; i < 3; i++) {
		char dn[512], shown[512], own[64];
		const char *status;
		bool validate;

		if (!cl) {
			put(v, checks[i].id, NET, SUPPRESS, "%s", "");
			continue;
		}
		snprintf(dn, sizeof(dn), "%s.%s.%s", checks[i].prefix, name, base);
		if (i == 2)
			snprintf(shown, sizeof(shown), "*.apps.%s.%s", name, base);
		else
			snprintf(shown, sizeof(shown), "%s", dn);
		/* Managed networking (or day-1 SNO, which gets dnsmasq) needs no
		 * DNS entries from the user. */
		validate = umn(cl) && !(is_sno(cl) && !is_day2(v->host, cl));
		if (!validate)
			status = "success";
		else if (!*base)
			status = "error";
		else {
			int r = check_resolution(v, dn, own, sizeof(own));

			status = r > 0 ? "success" : r == 0 ? "failure" : "error";
		}
		if (!strcmp(status, "success")) {
			put(v, checks[i].id, NET, status, "Domain name resolution for the %s domain was successful or not required",
			    *base ? shown : checks[i].target);
		} else if (!strcmp(status, "error")) {
			if (!*base)
				put(v, checks[i].id, NET, status,
				    "DNS validation for the %s domain cannot be completed because the cluster does not have base_dns_domain set. Please update the cluster with the correct base_dns_domain",
				    checks[i].target);
			else
				put(v, checks[i].id, NET, status, "Error while evaluating DNS resolution on this host");
		} else if (own[0]) {
			put(v, checks[i].id, NET, status,
			    "Domain %s must not point at %s as it is the API address of this host. This domain must instead point at the IP address of a load balancer when using user managed networking in a multi control-plane node cluster",
			    shown, own);
		} else {
			put(v, checks[i].id, NET, status,
			    "Couldn't resolve domain name %s on the host. To continue installation, create the necessary DNS entries to resolve this domain name to your cluster's %s IP address",
			    shown, checks[i].target);
		}
	}
}

static void v_wildcard(struct vctx *v)
{
	const json_t *cl = v->cluster;
	json_t *res, *d;
	size_t i;
	char dn[512];

	if (!cl) {
		put(v, "dns-wildcard-not-configured", NET, SUPPRESS, "%s", "");
		return;
	}
	if (is_day2(v->host, cl)) {
		put(v, "dns-wildcard-not-configured", NET, "success", "DNS wildcard check is not required for day2");
		return;
	}
	res = jget(v->host, "domain_resolutions");
	if (!res) {
		put(v, "dns-wildcard-not-configured", NET, "pending",
		    "DNS wildcard check cannot be performed yet because the host has not yet performed DNS resolution");
		return;
	}
	if (!json_is_object(res)) {
		json_decref(res);
		put(v, "dns-wildcard-not-configured", NET, "error", "Error while parsing DNS resolution response");
		return;
	}
	snprintf(dn, sizeof(dn), "validateNoWildcardDNS.%s.%s", sget(cl, "name"), sget(cl, "base_dns_domain"));
	json_array_foreach(json_object_get(res, "resolutions"), i, d) {
		if (!strcmp(sget(d, "domain_name"), dn) && !json_array_size(json_object_get(d, "ipv4_addresses")) &&
		    !json_array_size(json_object_get(d, "ipv6_addresses"))) {
			json_decref(res);
			put(v, "dns-wildcard-not-configured", NET, "success", "DNS wildcard check was successful");
			return;
		}
	}
	json_decref(res);
	put(v, "dns-wildcard-not-configured", NET, "failure",
	    "DNS wildcard configuration was detected for domain *.%s.%s The installation will not be able to complete while the entry exists. Please remove it to proceed.",
	    sget(cl, "name"), sget(cl, "base_dns_domain"));
}

static void v_platform(struct vctx *v)
{
	const json_t *cl = v->cluster;
	const char *p = sget(json_object_get(cl, "platform"), "type");
	const char *man = sget(json_object_get(v->inv, "system_vendor"), "manufacturer");
	bool ok = true;

	if (!cl) {
		put(v, "compatible-with-cluster-platform", HW, SUPPRESS, "%s", "");
		return;
	}
	if (!strcmp(sget(cl, "kind"), "AddHostsCluster")) {
		put(v, "compatible-with-cluster-platform", HW, "success", "Host is compatible with cluster platform %s", p);
		return;
	}
	if (!v->inv || !*p) {
		put(v, "compatible-with-cluster-platform", HW, "pending", "Missing inventory or platform isn't set");
		return;
	}
	/* Provider plugins: vSphere and Nutanix accept only their own VMs. */
	if (!strcmp(p, "vsphere"))
		ok = !strcasecmp(man, "VMware, Inc.");
	else if (!strcmp(p, "nutanix"))
		ok = !strcasecmp(man, "Nutanix");
	if (ok)
		put(v, "compatible-with-cluster-platform", HW, "success", "Host is compatible with cluster platform %s", p);
	else
		put(v, "compatible-with-cluster-platform", HW, "failure",
		    "Host is not compatible with cluster platform %s; either disable this host or choose a compatible cluster platform (%s)",
		    p, "[baremetal none external]");
}

static bool encryption_for_role(const char *enable_on, const char *role)
{
	if (!strcmp(enable_on, "all"))
		return true;
	if (!strcmp(role, "master") || !strcmp(role, "bootstrap"))
		return strstr(enable_on, "masters") != NULL;
	if (!strcmp(role, "arbiter"))
		return strstr(enable_on, "arbiters") != NULL;
	if (!strcmp(role, "worker"))
		return strstr(enable_on, "workers") != NULL;
	return false;
}

static void v_disk_encryption(struct vctx *v)
{
	const json_t *de = json_object_get(v->cluster, "disk_encryption");
	const char *on = sget(de, "enable_on"), *mode = sget(de, "mode"), *role = host_effective_role(v->host);
	const char *tpm = sget(v->inv, "tpm_version");

	if (!v->cluster || !*on || !strcmp(on, "none")) {
		put(v, "disk-encryption-requirements-satisfied", HW, SUPPRESS, "%s", "");
		return;
	}
	if (!v->inv) {
		put(v, "disk-encryption-requirements-satisfied", HW, "pending", "Missing host inventory");
		return;
	}
	if (is_day2(v->host, v->cluster)) {
		/* Day-2 reads LUKS settings from the ignition; not modelled here. */
		put(v, "disk-encryption-requirements-satisfied", HW, SUPPRESS, "%s", "");
		return;
	}
	if (!strcmp(role, "auto-assign")) {
		put(v, "disk-encryption-requirements-satisfied", HW, "pending", "Missing role assignment");
		return;
	}
	if (!encryption_for_role(on, role)) {
		put(v, "disk-encryption-requirements-satisfied", HW, SUPPRESS, "%s", "");
		return;
	}
	if (!strcmp(mode, "tang")) {
		json_t *tc = jget(v->host, "tang_connectivity");

		if (!tc)
			put(v, "disk-encryption-requirements-satisfied", HW, "pending", "%s", "");
		else if (json_is_true(json_object_get(tc, "is_success")))
			put(v, "disk-encryption-requirements-satisfied", HW, "success",
			    "Installation disk can be encrypted using %s", mode);
		else
			put(v, "disk-encryption-requirements-satisfied", HW, "failure",
			    "Could not validate that all Tang servers are reachable and working: %s",
			    sget(v->host, "tang_connectivity"));
		json_decref(tc);
		return;
	}
	if (!strcmp(tpm, "2.0"))
		put(v, "disk-encryption-requirements-satisfied", HW, "success", "Installation disk can be encrypted using %s",
		    *mode ? mode : "tpmv2");
	else if (!*tpm || !strcmp(tpm, "none"))
		put(v, "disk-encryption-requirements-satisfied", HW, "failure",
		    "TPM version could not be found, make sure TPM is enabled in host's BIOS");
	else
		put(v, "disk-encryption-requirements-satisfied", HW, "failure",
		    "The host's TPM version is not supported, expected-version: %s, actual-version: %s", "2.0", tpm);
}

static void v_subnets(struct vctx *v)
{
	struct net { struct cidr c; const char *s, *ifc; } nets[64];
	size_t n = 0, i, j, k;
	json_t *ifc, *a;

	if (!v->inv || !v->cluster) {
		put(v, "non-overlapping-subnets", NET, "pending", "Missing inventory, or missing cluster");
		return;
	}
	json_array_foreach(json_object_get(v->inv, "interfaces"), i, ifc) {
		for (int fam = 0; fam < 2; fam++)
			json_array_foreach(json_object_get(ifc, fam ? "ipv6_addresses" : "ipv4_addresses"), j, a) {
				const char *s = json_string_value(a);

				if (s && n < 64 && parse_cidr(s, &nets[n].c, true)) {
					nets[n].s = s;
					nets[n].ifc = sget(ifc, "name");
					n++;
				}
			}
	}
	for (i = 0; i < n; i++)
		for (k = i + 1; k < n; k++) {
			struct cidr *x = &nets[i].c, *y = &nets[k].c;
			char sx[64], sy[64], ax[INET6_ADDRSTRLEN], ay[INET6_ADDRSTRLEN];
			unsigned char mx[16], my[16];

			if (x->family != y->family || !cidr_overlap(x, y))
				continue;
			/* Print network addresses as Go's IPNet does. */
			memcpy(mx, x->addr, 16);
			memcpy(my, y->addr, 16);
			for (int b = 0; b < 128; b++) {
				if (b >= x->prefix)
					mx[b / 8] &= (unsigned char)~(0x80 >> (b % 8));
				if (b >= y->prefix)
					my[b / 8] &= (unsigned char)~(0x80 >> (b % 8));
			}
			inet_ntop(x->family == 4 ? AF_INET : AF_INET6, mx, ax, sizeof(ax));
			inet_ntop(y->family == 4 ? AF_INET : AF_INET6, my, ay, sizeof(ay));
			snprintf(sx, sizeof(sx), "%s/%d", ax, x->prefix);
			snprintf(sy, sizeof(sy), "%s/%d", ay, y->prefix);
			if (!strcmp(sx, sy))
				put(v, "non-overlapping-subnets", NET, "failure",
				    "Address networks are overlapping: Address network %s appears on multiple interfaces [%s, %s]",
				    sx, nets[i].ifc, nets[k].ifc);
			else
				put(v, "non-overlapping-subnets", NET, "failure",
				    "Address networks are overlapping: Address networks %s in interface %s and %s in interface %s overlap",
				    sx, nets[i].ifc, sy, nets[k].ifc);
			return;
		}
	put(v, "non-overlapping-subnets", NET, "success", "Host subnets are not overlapping");
}

static void v_vsphere(struct vctx *v)
{
	json_t *d;
	size_t i;
	const char *arch = sget(json_object_get(v->inv, "cpu"), "architecture");

	if (!v->inv) {
		put(v, "vsphere-disk-uuid-enabled", HW, "pending", "Validation pending - no inventory");
		return;
	}
	if (!v->cluster) {
		put(v, "vsphere-disk-uuid-enabled", HW, "pending", "Validation pending - no cluster");
		return;
	}
	if (strcmp(sget(json_object_get(v->cluster, "platform"), "type"), "vsphere") != 0) {
		put(v, "vsphere-disk-uuid-enabled", HW, "success", "VSphere disk.EnableUUID is enabled for this virtual machine");
		return;
	}
	json_array_foreach(json_object_get(v->inv, "disks"), i, d)
		if (valid_storage_type(d, arch) && !json_is_true(json_object_get(d, "has_uuid"))) {
			put(v, "vsphere-disk-uuid-enabled", HW, "failure",
			    "VSphere disk.EnableUUID isn't enabled for this virtual machine, it's necessary for disks to be mounted properly");
			return;
		}
	put(v, "vsphere-disk-uuid-enabled", HW, "success", "VSphere disk.EnableUUID is enabled for this virtual machine");
}

static void v_agent_and_skip(struct vctx *v)
{
	const char *img = v->c->service_agent_image;
	const char *skip = sget(v->host, "skip_formatting_disks");
	const char *inst = sget(v->host, "installation_disk_id");

	if (!img)
		put(v, "compatible-agent", HW, "success", "Host agent compatibility checking is disabled");
	else if (!strcmp(img, sget(v->host, "discovery_agent_version")))
		put(v, "compatible-agent", HW, "success", "Host agent is compatible with the service");
	else
		put(v, "compatible-agent", HW, "failure",
		    "This host's agent is in the process of being upgraded to a compatible version. This might take a few minutes");

	/* skip_formatting_disks is a comma-separated list of disk ids. */
	bool inst_skipped = false, missing = false;
	const char *p = skip;

	while (*p) {
		size_t n = strcspn(p, ",");
		char id[512];
		json_t *d;
		size_t i;
		bool found = false;

		snprintf(id, sizeof(id), "%.*s", (int)(n < 511 ? n : 511), p);
		if (*inst && !strcmp(id, inst))
			inst_skipped = true;
		json_array_foreach(json_object_get(v->inv, "disks"), i, d) {
			char did[512];

			disk_identifier(d, did, sizeof(did));
			if (!strcmp(did, id))
				found = true;
		}
		if (n > 0 && !found)
			missing = true;
		p += n;
		if (*p == ',')
			p++;
	}
	if (inst_skipped)
		put(v, "no-skip-installation-disk", HW, "failure",
		    "Requesting to skip the formatting of the installation disk is not allowed. The installation disk must be formatted. Please either change this host's installation disk or do not skip the formatting of the installation disk");
	else
		put(v, "no-skip-installation-disk", HW, "success", "No request to skip formatting of the installation disk");
	if (!json_object_get(v->host, "inventory") || json_is_null(json_object_get(v->host, "inventory")) ||
	    (json_is_string(json_object_get(v->host, "inventory")) && !*sget(v->host, "inventory")))
		put(v, "no-skip-missing-disk", HW, "pending", "Host inventory not available yet");
	else if (*skip && !v->inv)
		put(v, "no-skip-missing-disk", HW, "error", "Failed to unmarshal this host's inventory");
	else if (missing)
		put(v, "no-skip-missing-disk", HW, "failure",
		    "One or more of the disks that you have requested to skip the formatting of are no longer present on this host. To ensure they haven't just changed their identity, please remove your request to skip their formatting and then if needed add them back using the new ID");
	else
		put(v, "no-skip-missing-disk", HW, "success",
		    "All disks that have skipped formatting are present in the host inventory");
}

static void v_ignition(struct vctx *v)
{
	json_t *r;

	if (!v->cluster || !is_day2(v->host, v->cluster)) {
		put(v, "ignition-downloadable", NET, SUPPRESS, "%s", "");
		return;
	}
	if (!*sget(v->host, "api_vip_connectivity") && !json_is_object(json_object_get(v->host, "api_vip_connectivity"))) {
		put(v, "ignition-downloadable", NET, "pending", "Ignition is not yet available, pending API connectivity");
		return;
	}
	r = jget(v->host, "api_vip_connectivity");
	if (!json_is_object(r))
		put(v, "ignition-downloadable", NET, "error", "Internal error - failed to parse agent API connectivity response");
	else if (json_is_true(json_object_get(r, "is_success")))
		put(v, "ignition-downloadable", NET, "success", "Ignition is downloadable");
	else if (!*sget(r, "url"))
		put(v, "ignition-downloadable", NET, "failure",
		    "This host has failed to download the ignition file from the cluster, please ensure the host can reach the cluster");
	else
		put(v, "ignition-downloadable", NET, "failure",
		    "This host has failed to download the ignition file from %s with the following error: %s. Please ensure the host can reach this URL",
		    sget(r, "url"), sget(r, "download_error"));
	json_decref(r);
}

json_t *host_validations(const json_t *host, const struct validation_ctx *ctx)
{
	struct vctx v = { .host = host, .c = ctx, .cluster = ctx->cluster };
	const char *ver = sget(ctx->cluster, "openshift_version");
	struct hw_req m, w;
	json_t *inv = inventory_of_host(host);

	/* Upstream treats an inventory without cpu, memory or disks as absent. */
	if (inv && json_is_object(json_object_get(inv, "cpu")) && json_is_object(json_object_get(inv, "memory")) &&
	    json_array_size(json_object_get(inv, "disks")) > 0)
		v.inv = inv;
	v.out = json_object();
	m = hw_requirements(is_sno(ctx->cluster) ? HW_SNO : HW_MASTER, ver);
	w = hw_requirements(HW_WORKER, ver);
	v.min_cpu = m.cpu_cores < w.cpu_cores ? m.cpu_cores : w.cpu_cores;
	v.min_ram_mib = m.ram_mib < w.ram_mib ? m.ram_mib : w.ram_mib;
	v.total = hw_requirements(hw_role_for_host(host, inv, ctx->cluster), ver);

	v_connection(&v);
	v_hardware(&v);
	v_hostname(&v);
	v_machine_cidr(&v);
	v_ignition(&v);
	v_majority(&v);
	v_platform_network(&v);
	v_ntp_time(&v);
	v_images(&v);
	v_disk_speed(&v);
	v_latency(&v, 0);
	v_latency(&v, 1);
	v_default_route(&v);
	v_domains(&v);
	v_platform(&v);
	v_wildcard(&v);
	v_disk_encryption(&v);
	v_subnets(&v);
	v_vsphere(&v);
	v_agent_and_skip(&v);
	json_decref(inv);
	return v.out;
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(sget(*(json_t *const *)a, "id"), sget(*(json_t *const *)b, "id"));
}

json_t *validations_info_from(const json_t *results)
{
	static const char *cats[] = { "hardware", "network", "operators" };
	json_t *out = json_object();
	const char *id;
	json_t *r;

	for (size_t c = 0; c < 3; c++) {
		json_t *tmp[128];
		size_t n = 0;

		json_object_foreach((json_t *)results, id, r) {
			if (strcmp(sget(r, "category"), cats[c]) != 0 || !strcmp(sget(r, "status"), SUPPRESS) || n >= 128)
				continue;
			tmp[n++] = json_pack("{s:s, s:s, s:s}", "id", id, "status", sget(r, "status"), "message",
					     sget(r, "message"));
		}
		if (!n)
			continue;
		qsort(tmp, n, sizeof(tmp[0]), entry_cmp);
		json_t *arr = json_array();

		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, tmp[i]);
		json_object_set_new(out, cats[c], arr);
	}
	return out;
}

bool validation_ok(const json_t *results, const char *id, const json_t *cluster)
{
	static const char *const non_ignorable[] = { "connected", "has-inventory", "inventory-not-fully-truncated",
						     "machine-cidr-defined", "hostname-unique", "hostname-valid", NULL };
	json_t *r = json_object_get(results, id), *ign;
	const char *st;

	if (!r)
		return true;
	st = sget(r, "status");
	if (!strcmp(st, "success") || !strcmp(st, SUPPRESS) || !strcmp(st, "disabled"))
		return true;
	if (cluster && !in_set(id, non_ignorable) && (ign = jget(cluster, "ignored_host_validations"))) {
		bool hit = json_array_has_str(ign, id) || json_array_has_str(ign, "all");

		json_decref(ign);
		return hit;
	}
	return false;
}
