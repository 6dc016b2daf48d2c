/* steps.c - next-step instructions per host status and the handling of
 * step replies (instruction_manager.go and the *_cmd.go handlers upstream). */
#include "assisted/steps.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/cluster.h"
#include "assisted/host.h"
#include "assisted/inventory.h"
#include "assisted/validations.h"
#include "base/util.h"

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static void add_step(json_t *list, const struct steps_ctx *ctx, const char *type, json_t *args)
{
	uint32_t r = 0;
	char id[96];

	if (ctx && ctx->random32)
		r = ctx->random32(ctx->opaque);
	else
		util_random_bytes(&r, sizeof(r));
	snprintf(id, sizeof(id), "%s-%08x", type, r);
	json_array_append_new(list, json_pack("{s:s, s:s, s:o}", "step_type", type, "step_id", id, "args",
					      args ? args : json_array()));
}

/* args = [ "<compact JSON of v>" ] (v is consumed). */
static json_t *json_arg(json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);
	json_t *a = json_pack("[s]", s ? s : "{}");

	free(s);
	json_decref(v);
	return a;
}

static void step_inventory(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *args = json_pack("[s]", sget(host, "id"));

	if (ctx && ctx->inventory_disk_min_size_gb > 0) {
		char b[64];

		snprintf(b, sizeof(b), "--disk-min-size=%lld", (long long)ctx->inventory_disk_min_size_gb);
		json_array_append_new(args, json_string(b));
	}
	add_step(l, ctx, "inventory", args);
}

static void step_ntp(json_t *l, const struct steps_ctx *ctx)
{
	add_step(l, ctx, "ntp-synchronizer",
		 json_arg(json_pack("{s:s}", "ntp_source", ctx && ctx->ntp_sources ? ctx->ntp_sources : "")));
}

/* The other hosts of the cluster with their NICs; nothing when alone. */
static void step_connectivity(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *hosts = json_array(), *h, *ifc;
	size_t i, j;

	json_array_foreach(ctx ? ctx->cluster_hosts : NULL, i, h) {
		json_t *inv, *nics;

		if (!strcmp(sget(h, "id"), sget(host, "id")) || !(inv = inventory_of_host(h)))
			continue;
		nics = json_array();
		json_array_foreach(json_object_get(inv, "interfaces"), j, ifc) {
			json_t *ips = json_array(), *a;
			size_t k;

			json_array_foreach(json_object_get(ifc, "ipv4_addresses"), k, a)
				if (json_is_string(a))
					json_array_append_new(ips, json_stringn(json_string_value(a),
										strcspn(json_string_value(a), "/")));
			json_array_foreach(json_object_get(ifc, "ipv6_addresses"), k, a)
				if (json_is_string(a))
					json_array_append_new(ips, json_stringn(json_string_value(a),
										strcspn(json_string_value(a), "/")));
			json_array_append_new(nics, json_pack("{s:s, s:s, s:o}", "name", sget(ifc, "name"), "mac",
							      sget(ifc, "mac_address"), "ip_addresses", ips));
		}
		json_array_append_new(hosts, json_pack("{s:s, s:o}", "host_id", sget(h, "id"), "nics", nics));
		json_decref(inv);
	}
	if (json_array_size(hosts) == 0) {
		json_decref(hosts);
		return;
	}
	add_step(l, ctx, "connectivity-check", json_arg(hosts));
}

static void step_domains(json_t *l, const struct steps_ctx *ctx, bool day2)
{
	const json_t *cl = ctx ? ctx->cluster : NULL;
	const char *name = sget(cl, "name"), *base = sget(cl, "base_dns_domain");
	json_t *d = json_array();
	char b[512];

	if (*name && *base) {
		static const char *pre[] = { "api", "api-int", "console-openshift-console.apps" };

		for (size_t i = 0; i < 3; i++) {
			snprintf(b, sizeof(b), "%s.%s.%s", pre[i], name, base);
			json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
		}
		snprintf(b, sizeof(b), "validateNoWildcardDNS.%s.%s.", name, base);
		json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
		snprintf(b, sizeof(b), "validateNoWildcardDNS.%s.%s", name, base);
		json_array_append_new(d, json_pack("{s:s}", "domain_name", b));
	}
	if (!day2 && ctx && ctx->release_image_host && *ctx->release_image_host)
		json_array_append_new(d, json_pack("{s:s}", "domain_name", ctx->release_image_host));
	if (json_array_size(d) == 0) {
		json_decref(d);
		return;
	}
	add_step(l, ctx, "domain-resolution", json_arg(json_pack("{s:o}", "domains", d)));
}

static void step_verify_vips(json_t *l, const struct steps_ctx *ctx)
{
	const json_t *cl = ctx ? ctx->cluster : NULL;
	json_t *vips = json_array(), *x;
	size_t i;

	json_array_foreach(json_object_get(cl, "api_vips"), i, x)
		if (*sget(x, "ip"))
			json_array_append_new(vips, json_pack("{s:s, s:s}", "vip", sget(x, "ip"), "vip_type", "api"));
	json_array_foreach(json_object_get(cl, "ingress_vips"), i, x)
		if (*sget(x, "ip"))
			json_array_append_new(vips, json_pack("{s:s, s:s}", "vip", sget(x, "ip"), "vip_type", "ingress"));
	if (json_array_size(vips) == 0 || json_is_true(json_object_get(cl, "user_managed_networking"))) {
		json_decref(vips);
		return;
	}
	add_step(l, ctx, "verify-vips", json_arg(vips));
}


/* ---- installation phase (§7.4, §7.5) ---- */

static const char *boot_dev(const json_t *host)
{
	return *sget(host, "installation_disk_id") ? sget(host, "installation_disk_id")
						     : sget(host, "installation_disk_path");
}

/* A field stored as JSON or as JSON text; new reference or NULL. */
static json_t *jfield(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_string(v))
		return *json_string_value(v) ? json_loads(json_string_value(v), JSON_DECODE_ANY, NULL) : NULL;
	return v ? json_incref(v) : NULL;
}

static bool has_str(const json_t *arr, const char *s)
{
	json_t *x;
	size_t i;

	json_array_foreach(arr, i, x)
		if (json_is_string(x) && !strcmp(json_string_value(x), s))
			return true;
	return false;
}

static bool saves_partitions(const json_t *args)
{
	json_t *x;
	size_t i;

	json_array_foreach(args, i, x)
		if (json_is_string(x) && (strstr(json_string_value(x), "--save-partindex") ||
					  strstr(json_string_value(x), "--save-partlabel")))
			return true;
	return false;
}

/* ip (optionally "ip/prefix") inside cidr ("net/len"), same family. */
static bool cidr_contains(const char *cidr, const char *ip)
{
	char net[64], addr[64];
	unsigned char a[16], b[16];
	const char *slash = strchr(cidr, '/');
	int fam, len, bytes;

	if (!slash || (size_t)(slash - cidr) >= sizeof(net))
		return false;
	snprintf(net, sizeof(net), "%.*s", (int)(slash - cidr), cidr);
	snprintf(addr, sizeof(addr), "%.*s", (int)strcspn(ip, "/"), ip);
	fam = strchr(net, ':') ? AF_INET6 : AF_INET;
	if ((strchr(addr, ':') ? AF_INET6 : AF_INET) != fam || inet_pton(fam, net, a) != 1 || inet_pton(fam, addr, b) != 1)
		return false;
	len = atoi(slash + 1);
	bytes = fam == AF_INET ? 4 : 16;
	if (len < 0 || len > bytes * 8)
		return false;
	for (int i = 0; i < bytes; i++) {
		int bits = len - i * 8;
		unsigned char mask = bits >= 8 ? 0xff : bits <= 0 ? 0 : (unsigned char)(0xff << (8 - bits));

		if ((a[i] & mask) != (b[i] & mask))
			return false;
	}
	return true;
}

/* ip=<nic>:dhcp[6] for every NIC with an address in the primary machine
 * network (appendDHCPArgs); dual-stack clusters get "dhcp,dhcp6". */
static void dhcp_args(json_t *args, const json_t *cluster, const json_t *inv)
{
	json_t *mn = json_object_get(cluster, "machine_networks"), *nic, *x;
	const char *cidr = sget(json_array_get(mn, 0), "cidr");
	bool v6 = strchr(cidr, ':') != NULL, v4seen = false, v6seen = false;
	size_t i, j;

	if (!*cidr)
		return;
	json_array_foreach(mn, i, x) {
		if (strchr(sget(x, "cidr"), ':'))
			v6seen = true;
		else if (*sget(x, "cidr"))
			v4seen = true;
	}
	json_array_foreach(json_object_get(inv, "interfaces"), i, nic) {
		json_t *addrs = json_object_get(nic, v6 ? "ipv6_addresses" : "ipv4_addresses");
		char b[300];

		json_array_foreach(addrs, j, x)
			if (json_is_string(x) && cidr_contains(cidr, json_string_value(x))) {
				snprintf(b, sizeof(b), "ip=%s:%s", sget(nic, "name"),
					 v4seen && v6seen ? "dhcp,dhcp6" : v6 ? "dhcp6" : "dhcp");
				json_array_append_new(args, json_string("--append-karg"));
				json_array_append_new(args, json_string(b));
				break;
			}
	}
}

static const json_t *install_disk(const json_t *inv, const char *dev)
{
	json_t *d;
	size_t i;

	json_array_foreach(json_object_get(inv, "disks"), i, d) {
		char id[512], full[300];

		disk_identifier(d, id, sizeof(id));
		snprintf(full, sizeof(full), "/dev/%s", sget(d, "name"));
		if (!strcmp(dev, id) || !strcmp(dev, sget(d, "by_id")) || !strcmp(dev, sget(d, "by_path")) ||
		    !strcmp(dev, full) || !strcmp(dev, sget(d, "path")))
			return d;
	}
	return NULL;
}

/* constructHostInstallerArgs: the user's args, DHCP kargs, multipath and
 * iSCSI kargs, --copy-network with static networking.  NULL on a bad user
 * value. */
static json_t *installer_args(const json_t *host, const json_t *cluster, const json_t *inv,
			      const struct steps_ctx *ctx, ah_err *err)
{
	json_t *args = jfield(host, "installer_args"), *x;
	const json_t *disk;
	bool user_ip = false, stat = (ctx && ctx->static_network) ||
				     json_is_true(json_object_get(cluster, "static_network_configured"));
	size_t i;

	if (!args) {
		args = json_array();
	} else if (!json_is_array(args)) {
		json_decref(args);
		ah_err_set(err, EINVAL, 400, "BadRequest", "Fail to unmarshal installer args for host %s: not a JSON array",
			   sget(host, "id"));
		return NULL;
	} else {
		json_t *copy = json_array();

		json_array_foreach(args, i, x) {
			if (!json_is_string(x)) {
				json_decref(copy);
				json_decref(args);
				ah_err_set(err, EINVAL, 400, "BadRequest",
					   "Fail to unmarshal installer args for host %s: item %zu is not a string",
					   sget(host, "id"), i);
				return NULL;
			}
			json_array_append(copy, x);
			if (!strncmp(json_string_value(x), "ip=", 3))
				user_ip = true;
		}
		json_decref(args);
		args = copy;
	}
	if (!stat && !user_ip)
		dhcp_args(args, cluster, inv);
	disk = install_disk(inv, boot_dev(host));
	if (disk && !strcmp(sget(disk, "drive_type"), "Multipath")) {
		static const char *const mp[] = { "root=/dev/disk/by-label/dm-mpath-root", "rw", "rd.multipath=default" };

		for (size_t k = 0; k < 3; k++) {
			json_array_append_new(args, json_string("--append-karg"));
			json_array_append_new(args, json_string(mp[k]));
		}
	}
	if (disk && !strcmp(sget(disk, "drive_type"), "iSCSI")) {
		const char *hip = sget(json_object_get(disk, "iscsi"), "host_ip_address");
		json_t *nic;

		json_array_append_new(args, json_string("--append-karg"));
		json_array_append_new(args, json_string("rd.iscsi.firmware=1"));
		json_array_foreach(user_ip ? NULL : json_object_get(inv, "interfaces"), i, nic) {
			bool v6 = strchr(hip, ':') != NULL, hit = false;
			size_t j;

			json_array_foreach(json_object_get(nic, v6 ? "ipv6_addresses" : "ipv4_addresses"), j, x)
				if (json_is_string(x) && !strncmp(json_string_value(x), hip, strlen(hip)) &&
				    (json_string_value(x)[strlen(hip)] == '/' || !json_string_value(x)[strlen(hip)]))
					hit = true;
			if (hit && *hip) {
				char b[300];

				snprintf(b, sizeof(b), "ip=%s:%s", sget(nic, "name"), v6 ? "dhcp6" : "dhcp");
				json_array_append_new(args, json_string("--append-karg"));
				json_array_append_new(args, json_string(b));
				break;
			}
		}
	}
	if (stat && !has_str(args, "--copy-network"))
		json_array_append_new(args, json_string("--copy-network"));
	return args;
}

/* OCP base version (pre-release dropped) at least major.minor. */
static bool version_at_least(const char *v, int major, int minor)
{
	int a = 0, b = 0;

	if (sscanf(v ? v : "", "%d.%d", &a, &b) < 2)
		return false;
	return a > major || (a == major && b >= minor);
}

json_t *host_install_cmd(const json_t *host, const struct steps_ctx *ctx, ah_err *err)
{
	const json_t *cl = ctx ? ctx->cluster : NULL;
	const char *role = json_is_true(json_object_get(host, "bootstrap")) ? "bootstrap" : host_effective_role(host);
	const char *ie = ctx && ctx->infra_env_id ? ctx->infra_env_id : sget(host, "infra_env_id");
	const char *cid = *sget(host, "cluster_id") ? sget(host, "cluster_id") : sget(cl, "id");
	bool day2c = !strcmp(sget(cl, "kind"), "AddHostsCluster");
	json_t *inv, *args, *req, *fmt, *d, *skip;
	size_t i;

	if (!*sget(host, "id") || !*cid) {
		ah_err_set(err, EINVAL, 400, "BadRequest", "install: host id and cluster id are required");
		return NULL;
	}
	if (!*boot_dev(host)) {
		ah_err_set(err, EINVAL, 400, "BadRequest", "install: host %s has no installation disk", sget(host, "id"));
		return NULL;
	}
	inv = inventory_of_host(host);
	args = installer_args(host, cl, inv, ctx, err);
	if (!args) {
		json_decref(inv);
		return NULL;
	}
	req = json_pack("{s:s, s:b, s:s, s:s, s:s, s:s, s:s, s:s}", "boot_device", boot_dev(host), "check_cvo",
			ctx && ctx->check_cvo, "cluster_id", cid, "controller_image",
			ctx && ctx->controller_image ? ctx->controller_image : "", "host_id", sget(host, "id"),
			"infra_env_id", ie, "installer_image", ctx && ctx->installer_image ? ctx->installer_image : "",
			"role", role);
	if (json_integer_value(json_object_get(cl, "control_plane_count")) > 0)
		json_object_set(req, "control_plane_count", json_object_get(cl, "control_plane_count"));
	if (ctx && ctx->coreos_image && *ctx->coreos_image)
		json_object_set_new(req, "coreos_image", json_string(ctx->coreos_image));
	/* disks_to_format: bootable, fixed, local disks other than the live
	 * media, minus the ones the user asked to keep. */
	skip = json_array();
	{
		const char *s = sget(host, "skip_formatting_disks");

		while (*s) {
			size_t n = strcspn(s, ",");

			if (n)
				json_array_append_new(skip, json_stringn(s, n));
			s += n + (s[n] == ',');
		}
		if (saves_partitions(args))
			json_array_append_new(skip, json_string(boot_dev(host)));
	}
	fmt = json_array();
	json_array_foreach(json_object_get(inv, "disks"), i, d) {
		static const char *const skip_types[] = { "FC", "iSCSI", "LVM", "Multipath", NULL };
		bool removable = json_is_true(json_object_get(d, "removable")) || strstr(sget(d, "by_path"), "mmcblk");
		char id[512];

		if (!json_is_true(json_object_get(d, "bootable")) || removable || in(sget(d, "drive_type"), skip_types) ||
		    json_is_true(json_object_get(d, "is_installation_media")))
			continue;
		disk_identifier(d, id, sizeof(id));
		if (!has_str(skip, id))
			json_array_append_new(fmt, json_string(id));
	}
	json_decref(skip);
	if (json_array_size(fmt))
		json_object_set_new(req, "disks_to_format", fmt);
	else
		json_decref(fmt);
	if (ctx && ctx->enable_skip_mco_reboot && version_at_least(sget(cl, "openshift_version"), 4, 15) &&
	    strcmp(sget(cl, "cpu_architecture"), "s390x") != 0)
		json_object_set_new(req, "enable_skip_mco_reboot", json_true());
	if (json_array_size(args)) {
		char *s = json_dumps(args, JSON_COMPACT);

		json_object_set_new(req, "installer_args", json_string(s ? s : "[]"));
		free(s);
	}
	if (saves_partitions(args))
		json_object_set_new(req, "skip_installation_disk_cleanup", json_true());
	json_decref(args);
	if (!day2c) {
		const json_t *mg = ctx ? ctx->must_gather_images : NULL;

		if (ctx && ctx->mco_image && *ctx->mco_image)
			json_object_set_new(req, "mco_image", json_string(ctx->mco_image));
		if (json_object_size(mg) == 1 && json_is_string(json_object_get(mg, "ocp"))) {
			json_object_set(req, "must_gather_image", json_object_get(mg, "ocp"));
		} else if (json_object_size(mg) > 0) {
			char *s = json_dumps(mg, JSON_COMPACT | JSON_SORT_KEYS);

			json_object_set_new(req, "must_gather_image", json_string(s ? s : "{}"));
			free(s);
		}
		if (*sget(cl, "openshift_version"))
			json_object_set_new(req, "openshift_version", json_string(sget(cl, "openshift_version")));
	}
	if (ctx && ctx->notify_num_reboots)
		json_object_set_new(req, "notify_num_reboots", json_true());
	if (*sget(cl, "http_proxy") || *sget(cl, "https_proxy")) {
		json_t *px = json_object();
		const char *np = sget(cl, "no_proxy");
		char trimmed[2048];
		size_t a = strspn(np, " \t"), n = strlen(np + a);

		while (n && (np[a + n - 1] == ' ' || np[a + n - 1] == '\t'))
			n--;
		snprintf(trimmed, sizeof(trimmed), "%.*s", (int)n, np + a);
		if (*sget(cl, "http_proxy"))
			json_object_set_new(px, "http_proxy", json_string(sget(cl, "http_proxy")));
		if (*sget(cl, "https_proxy"))
			json_object_set_new(px, "https_proxy", json_string(sget(cl, "https_proxy")));
		if (!strcmp(trimmed, "*")) {
			json_object_set_new(px, "no_proxy", json_string("*"));
		} else {
			char b[4096];

			/* The installer must reach api-int and the local names. */
			snprintf(b, sizeof(b), "%s%s127.0.0.1,localhost,.svc,.cluster.local,api-int.%s.%s", trimmed,
				 *trimmed ? "," : "", sget(cl, "name"), sget(cl, "base_dns_domain"));
			json_object_set_new(px, "no_proxy", json_string(b));
		}
		json_object_set_new(req, "proxy", px);
	}
	if (ctx && ctx->service_ips && *ctx->service_ips) {
		json_t *ips = json_array();
		const char *s = ctx->service_ips;

		while (*s) {
			size_t n = strcspn(s, ",");

			if (n)
				json_array_append_new(ips, json_stringn(s, n));
			s += n + (s[n] == ',');
		}
		json_object_set_new(req, "service_ips", ips);
	}
	json_decref(inv);
	return req;
}

/* Add img to want unless empty, already listed, or pulled successfully
 * according to an images_status object. */
static void want_image(json_t *want, const json_t *st, const char *img)
{
	const json_t *s = json_is_object(st) && img ? json_object_get(st, img) : NULL;

	if (img && *img && !has_str(want, img) && strcmp(sget(s, "result"), "success") != 0)
		json_array_append_new(want, json_string(img));
}

/* The images a preparing host still has to pull: release, MCO, must-gather
 * and installer images not already pulled successfully. */
static void step_images(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *st = jfield(host, "images_status"), *want = json_array(), *x;
	const char *rel = ctx && ctx->release_image ? ctx->release_image : sget(ctx ? ctx->cluster : NULL, "ocp_release_image");
	const char *k;
	size_t i;

	want_image(want, st, rel);
	want_image(want, st, ctx ? ctx->mco_image : NULL);
	json_object_foreach(ctx ? (json_t *)ctx->must_gather_images : NULL, k, x)
		want_image(want, st, json_string_value(x));
	want_image(want, st, ctx ? ctx->installer_image : NULL);
	/* images_status may also be an array of {name,result}. */
	json_array_foreach(json_is_array(st) ? st : NULL, i, x)
		if (!strcmp(sget(x, "result"), "success"))
			for (size_t j = 0; j < json_array_size(want); j++)
				if (!strcmp(json_string_value(json_array_get(want, j)), sget(x, "name")))
					json_array_remove(want, j--);
	json_decref(st);
	if (json_array_size(want) == 0) {
		json_decref(want);
		return;
	}
	add_step(l, ctx, "container-image-availability",
		 json_arg(json_pack("{s:o, s:i}", "images", want, "timeout",
				    ctx && ctx->image_availability_timeout_s > 0 ? ctx->image_availability_timeout_s : 960)));
}

json_t *host_api_vip_check_request(const char *token, const char *url, const char *ca_cert)
{
	json_t *req = json_object();
	char *bearer = NULL;

	if (!req)
		return NULL;
	if (ca_cert && *ca_cert)
		json_object_set_new(req, "ca_certificate", json_string(ca_cert));
	if (token && *token) {
		if (asprintf(&bearer, "Bearer %s", token) < 0) {
			json_decref(req);
			return NULL;
		}
		json_object_set_new(req, "ignition_endpoint_token", json_string(token));
		json_object_set_new(req, "request_headers",
				    json_pack("[{s:s, s:s}]", "key", "Authorization", "value", bearer));
		free(bearer);
	}
	json_object_set_new(req, "url", json_string(url ? url : ""));
	return req;
}

/* Measure the installation disk once, unless its partitions are kept or
 * the host boots persistently (not from the discovery media). */
static void step_disk_speed(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *di = jfield(host, "disks_info"), *args = jfield(host, "installer_args"), *inv;
	const char *dev = boot_dev(host);
	bool skip = !*dev || saves_partitions(args) ||
		    json_is_true(json_object_get(json_object_get(json_object_get(di, dev), "disk_speed"), "tested"));
	char t[32];

	json_decref(di);
	json_decref(args);
	inv = inventory_of_host(host);
	if (!strcmp(sget(json_object_get(inv, "boot"), "device_type"), "persistent"))
		skip = true;
	json_decref(inv);
	if (skip)
		return;
	snprintf(t, sizeof(t), "%.2f", (double)(ctx && ctx->disk_check_timeout_s > 0 ? ctx->disk_check_timeout_s : 480));
	{
		json_t *p = json_pack("{s:s}", "path", dev);
		char *s = json_dumps(p, JSON_COMPACT);

		add_step(l, ctx, "installation-disk-speed-check", json_pack("[s, s]", s ? s : "{}", t));
		free(s);
		json_decref(p);
	}
}

static void step_install(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	json_t *req;

	if (!ctx || !ctx->cluster)
		return;
	req = host_install_cmd(host, ctx, NULL);
	if (req)
		add_step(l, ctx, "install", json_arg(req));
}

/* The first IPv4 address of the inventory, without its prefix length. */
static bool first_ipv4(const json_t *inv, char *buf, size_t size)
{
	json_t *ifc, *a;
	size_t j, k;

	json_array_foreach(json_object_get(inv, "interfaces"), j, ifc)
		json_array_foreach(json_object_get(ifc, "ipv4_addresses"), k, a)
			if (json_is_string(a)) {
				snprintf(buf, size, "%.*s", (int)strcspn(json_string_value(a), "/"), json_string_value(a));
				return true;
			}
	return false;
}

/* logs-gather while no logs were ever collected, then stop-installation. */
static void step_error(json_t *l, const json_t *host, const struct steps_ctx *ctx)
{
	const char *li = sget(host, "logs_info");
	json_t *lc = json_object_get(host, "logs_collected_at");

	if (strcmp(li, "completed") != 0 && strcmp(li, "timeout") != 0 && (!lc || json_integer_value(lc) == 0)) {
		bool boot = json_is_true(json_object_get(host, "bootstrap"));
		json_t *req = json_pack("{s:s, s:s, s:s, s:b, s:b}", "cluster_id", sget(host, "cluster_id"),
					"infra_env_id",
					ctx && ctx->infra_env_id ? ctx->infra_env_id : sget(host, "infra_env_id"),
					"host_id", sget(host, "id"), "bootstrap", boot, "installer_gather", 1);

		if (boot) {
			json_t *ips = json_array(), *h;
			size_t i;

			json_array_foreach(ctx ? ctx->cluster_hosts : NULL, i, h) {
				json_t *inv;
				char ip[64];

				if (!strcmp(sget(h, "id"), sget(host, "id")) || strcmp(host_effective_role(h), "master") != 0 ||
				    !(inv = inventory_of_host(h)))
					continue;
				if (first_ipv4(inv, ip, sizeof(ip)))
					json_array_append_new(ips, json_string(ip));
				json_decref(inv);
			}
			if (json_array_size(ips))
				json_object_set_new(req, "master_ips", ips);
			else
				json_decref(ips);
		}
		add_step(l, ctx, "logs-gather", json_arg(req));
	}
	add_step(l, ctx, "stop-installation", json_array());
}

json_t *host_next_steps(const json_t *host, bool day2, const struct steps_ctx *ctx)
{
	static const char *const upgradable[] = { "binding", "discovering", "discovering-unbound", "insufficient",
						  "insufficient-unbound", "known", "pending-for-input",
						  "known-unbound", NULL };
	const char *st = sget(host, "status");
	json_t *l = json_array();
	int secs = 60;
	const char *post = "continue";

	if (ctx && ctx->service_agent_image && in(st, upgradable) &&
	    strcmp(ctx->service_agent_image, sget(host, "discovery_agent_version")) != 0) {
		add_step(l, ctx, "upgrade-agent", json_arg(json_pack("{s:s}", "agent_image", ctx->service_agent_image)));
	} else if (!strcmp(st, "binding") || !strcmp(st, "unbinding") ||
		   !strcmp(st, "unbinding-pending-user-action")) {
		secs = 0;
		post = "exit";
	} else if (!strcmp(st, "discovering-unbound") || !strcmp(st, "insufficient-unbound") ||
		   !strcmp(st, "known-unbound")) {
		step_inventory(l, host, ctx);
		step_ntp(l, ctx);
	} else if (!strcmp(st, "disconnected-unbound") || !strcmp(st, "disconnected")) {
		step_inventory(l, host, ctx);
		secs = 120;
	} else if (!day2 && (!strcmp(st, "known") || !strcmp(st, "insufficient") || !strcmp(st, "pending-for-input"))) {
		/* tang-connectivity-check, free-network-addresses (not in kube-api
		 * mode) and dhcp-lease-allocate emit nothing unless configured;
		 * see the module report for what is modelled. */
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
		step_ntp(l, ctx);
		step_domains(l, ctx, false);
		step_verify_vips(l, ctx);
	} else if (!strcmp(st, "discovering")) {
		step_inventory(l, host, ctx);
		if (day2) {
			step_ntp(l, ctx);
			step_domains(l, ctx, true);
		}
	} else if (day2 && (!strcmp(st, "known") || !strcmp(st, "insufficient"))) {
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
		step_ntp(l, ctx);
		step_domains(l, ctx, true);
	} else if (day2 && !strcmp(st, "pending-for-input")) {
		step_inventory(l, host, ctx);
		step_connectivity(l, host, ctx);
	} else if (!strcmp(st, "preparing-for-installation")) {
		step_disk_speed(l, host, ctx);
		step_images(l, host, ctx);
	} else if (!strcmp(st, "installing")) {
		step_install(l, host, ctx);
	} else if (!strcmp(st, "error") || !strcmp(st, "cancelled")) {
		step_error(l, host, ctx);
		secs = 120;
	} else if (!strcmp(st, "disabled") || !strcmp(st, "resetting")) {
		secs = 120;
	}
	return json_pack("{s:i, s:s, s:o}", "next_instruction_seconds", secs, "post_step_action", post,
			 "instructions", l);
}

static int bad(ah_err *err, const char *type, const char *why)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "step %s: %s", type, why);
}

/* Parse output text into an object (or array when want_array). */
static int parse_output(const json_t *reply, const char *type, json_t **ret, ah_err *err)
{
	const char *out = sget(reply, "output");
	json_t *v;

	*ret = NULL;
	if (!*out)
		return 0;
	v = json_loads(out, JSON_DECODE_ANY, NULL);
	if (!json_is_object(v)) {
		json_decref(v);
		return bad(err, type, "output is not a JSON object");
	}
	*ret = v;
	return 0;
}

/* verify-vips output: a JSON list of {vip, vip_type, verification}
 * objects; *ret NULL for an empty output. */
static int vips_output(const json_t *reply, json_t **ret, ah_err *err)
{
	const char *text = sget(reply, "output");
	json_t *v, *x;
	size_t i;

	*ret = NULL;
	if (!*text)
		return 0;
	v = json_loads(text, JSON_DECODE_ANY, NULL);
	if (!json_is_array(v)) {
		json_decref(v);
		return bad(err, "verify-vips", "output is not a JSON list");
	}
	json_array_foreach(v, i, x)
		if (!json_is_object(x)) {
			json_decref(v);
			return bad(err, "verify-vips", "output entries must be objects {vip, vip_type, verification}");
		}
	*ret = v;
	return 0;
}

int host_apply_verify_vips_reply(json_t *cluster, const json_t *reply, ah_err *err)
{
	json_t *out;
	int r;

	if (strcmp(sget(reply, "step_type"), "verify-vips") != 0 ||
	    json_integer_value(json_object_get(reply, "exit_code")) != 0)
		return 0;
	if ((r = vips_output(reply, &out, err)) < 0 || !out)
		return r;
	r = cluster_apply_vip_verifications(cluster, out);
	json_decref(out);
	return r;
}

int host_apply_step_reply(json_t *host, const json_t *reply, ah_err *err)
{
	return host_apply_step_reply_now(host, reply, NULL, 0, err);
}

int host_apply_step_reply_cluster(json_t *host, const json_t *reply, const json_t *cluster, ah_err *err)
{
	return host_apply_step_reply_now(host, reply, cluster, 0, err);
}

int host_apply_step_reply_now(json_t *host, const json_t *reply, const json_t *cluster, int64_t now, ah_err *err)
{
	const char *type = sget(reply, "step_type");
	json_t *ec = json_object_get(reply, "exit_code"), *out = NULL, *empty = NULL;
	json_int_t code;
	int r;

	if (!json_is_object(reply) || !*type)
		return bad(err, "?", "reply must be an object with step_type");
	if (ec && !json_is_integer(ec))
		return bad(err, type, "exit_code must be an integer");
	code = ec ? json_integer_value(ec) : 0;
	if (json_object_get(reply, "output") && !json_is_string(json_object_get(reply, "output")))
		return bad(err, type, "output must be a string");
	if (code == 256) {
		host_media_disconnect(host, now);
		return 0;
	}
	if (!strcmp(type, "install")) {
		const char *e = sget(reply, "error");

		/* 125 "already in use": a second install of a host whose
		 * installer container is already running. */
		if (code == 0 || (code == 125 && strstr(e, "already in use")))
			return 0;
		if (strcmp(sget(host, "status"), "installing") != 0 && strcmp(sget(host, "status"), "installing-in-progress") != 0)
			return 0;
		return host_installation_failed(host, NULL, now, err);
	}
	if (code == 0)
		json_object_set_new(host, "media_status", json_string("connected"));
	if (!strcmp(type, "installation-disk-speed-check")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		const char *path = sget(out, "path");
		json_t *di = json_object_get(host, "disks_info");

		if (!*path) {
			json_decref(out);
			return bad(err, type, "output has no path");
		}
		if (json_is_string(di))
			di = json_loads(json_string_value(di), 0, NULL);
		else
			di = json_is_object(di) ? json_deep_copy(di) : NULL;
		if (!json_is_object(di)) {
			json_decref(di);
			di = json_object();
		}
		json_object_set_new(di, path, json_pack("{s:s, s:{s:b, s:I, s:I}}", "path", path, "disk_speed",
							"tested", 1, "exit_code", code, "speed_ms",
							util_double_to_i64(json_number_value(json_object_get(out, "io_sync_duration")))));
		json_object_set_new(host, "disks_info", di);
		json_decref(out);
		return 0;
	}
	if (code != 0)
		return 0;
	if (!strcmp(type, "inventory")) {
		const json_t *cl = cluster;

		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return bad(err, type, "empty output");
		if ((r = inventory_validate(out, err)) < 0) {
			json_decref(out);
			return r;
		}
		if (!cl && *sget(host, "cluster_id"))
			cl = empty = json_object();
		inventory_apply_eligibility(out, host, cl);
		host_choose_installation_disk(host, out);
		json_object_set_new(host, "inventory", out);
		json_decref(empty);
		return 0;
	}
	if (!strcmp(type, "ntp-synchronizer")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		json_t *src = json_object_get(out, "ntp_sources");

		if (src && !json_is_array(src)) {
			json_decref(out);
			return bad(err, type, "ntp_sources must be an array");
		}
		json_object_set_new(host, "ntp_sources", src ? json_incref(src) : json_array());
		json_decref(out);
		return 0;
	}
	if (!strcmp(type, "connectivity-check") || !strcmp(type, "domain-resolution")) {
		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		json_object_set_new(host, !strcmp(type, "connectivity-check") ? "connectivity" : "domain_resolutions", out);
		return 0;
	}
	if (!strcmp(type, "verify-vips")) {
		r = vips_output(reply, &out, err);
		json_decref(out);
		return r;
	}
	if (!strcmp(type, "container-image-availability")) {
		json_t *imgs, *im, *st;
		size_t i;

		if ((r = parse_output(reply, type, &out, err)) < 0)
			return r;
		if (!out)
			return 0;
		imgs = json_object_get(out, "images");
		if (imgs && !json_is_array(imgs)) {
			json_decref(out);
			return bad(err, type, "images must be an array");
		}
		st = json_object_get(host, "images_status");
		if (json_is_string(st))
			st = json_loads(json_string_value(st), 0, NULL);
		else
			st = json_is_object(st) ? json_deep_copy(st) : NULL;
		if (!json_is_object(st)) {
			json_decref(st);
			st = json_object();
		}
		json_array_foreach(imgs, i, im)
			if (json_is_object(im) && *sget(im, "name"))
				json_object_set(st, sget(im, "name"), im);
		json_object_set_new(host, "images_status", st);
		json_decref(out);
		return 0;
	}
	return 0;
}
