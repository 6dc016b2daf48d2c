/* fakehost.c - identities, inventories and step replies of simulated hosts (see fakehost.h).
 *
 * Identities come from a splitmix64 stream keyed by (seed, index), so a fleet is
 * reproducible and hosts never collide within a fleet.  Replies are the successful
 * outcome of each upstream step, shaped as the service decodes them (backend.md §7.5). */
#include "agent/fakehost.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define GIB (1024ull * 1024 * 1024)
#define NIC_NAME "ens3"

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint32_t bcast(const struct fakehost_fleet *f)
{
	return f->net | (f->prefix >= 32 ? 0 : (uint32_t)((1ull << (32 - f->prefix)) - 1));
}

static void ip_str(uint32_t a, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255);
}

static int parse_cidr(const char *s, uint32_t *ret_net, unsigned *ret_prefix)
{
	char ip[32];
	const char *slash = strchr(s, '/');
	struct in_addr a;
	char *end;
	unsigned long p;

	if (!slash || (size_t)(slash - s) >= sizeof(ip))
		return -EINVAL;
	memcpy(ip, s, (size_t)(slash - s));
	ip[slash - s] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -EINVAL;
	errno = 0;
	p = strtoul(slash + 1, &end, 10);
	if (errno || *end || end == slash + 1 || p > 32)
		return -EINVAL;
	*ret_prefix = (unsigned)p;
	*ret_net = ntohl(a.s_addr) & (p ? ~(uint32_t)0 << (32 - p) : 0);
	return 0;
}

int fakehost_fleet_init(struct fakehost_fleet *f, uint64_t seed, unsigned hosts, unsigned cpus,
			unsigned memory_gib, unsigned disk_gib, const char *subnet, ah_err *err)
{
	struct fakehost_fleet t = { .seed = seed, .hosts = hosts, .cpus = cpus,
				    .memory_gib = memory_gib, .disk_gib = disk_gib };
	uint64_t last;

	if (!hosts || !cpus || !memory_gib || !disk_gib)
		return ah_err_set(err, EINVAL, 0, "", "hosts, cpus, memory and disk must be positive");
	if (parse_cidr(subnet, &t.net, &t.prefix) < 0 || t.prefix < 8 || t.prefix > 30)
		return ah_err_set(err, EINVAL, 0, "", "subnet %s: want an IPv4 a.b.c.d/n with 8 <= n <= 30",
				  subnet);
	last = (uint64_t)t.net + FAKEHOST_FIRST_HOST + hosts - 1;
	if (last >= bcast(&t))
		return ah_err_set(err, EINVAL, 0, "",
				  "%u hosts do not fit in %s (host i gets address .%u+i); pass a wider --subnet, e.g. 10.128.0.0/16",
				  hosts, subnet, FAKEHOST_FIRST_HOST);
	*f = t;
	return 0;
}

void fakehost_host_id(const struct fakehost_fleet *f, unsigned i, char buf[37])
{
	uint64_t x = f->seed * 0x100000001b3ull ^ ((uint64_t)i << 1 | 1);
	uint64_t hi = splitmix64(&x), lo = splitmix64(&x);

	/* RFC 4122 version 4, variant 10. */
	hi = (hi & ~0xf000ull) | 0x4000ull;
	lo = (lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;
	snprintf(buf, 37, "%08" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%04" PRIx64 "-%012" PRIx64,
		 hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48, lo & (uint64_t)0xffffffffffffull);
}

void fakehost_mac(const struct fakehost_fleet *f, unsigned i, char buf[18])
{
	/* 02: locally administered, unicast; then the seed's low byte and the index. */
	snprintf(buf, 18, "02:%02x:%02x:%02x:%02x:%02x", (unsigned)(f->seed & 255), (i >> 24) & 255,
		 (i >> 16) & 255, (i >> 8) & 255, i & 255);
}

void fakehost_ipv4(const struct fakehost_fleet *f, unsigned i, char buf[16])
{
	ip_str(f->net + FAKEHOST_FIRST_HOST + i, buf);
}

void fakehost_hostname(const struct fakehost_fleet *f, unsigned i, char buf[32])
{
	snprintf(buf, 32, "sim-%" PRIu64 "-%u", f->seed % 1000000, i);
}

static json_t *str_array(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < n; k++)
		json_array_append_new(a, json_string(v[k]));
	return a;
}

json_t *fakehost_inventory(const struct fakehost_fleet *f, unsigned i)
{
	static const char *const cpu_flags[] = { "fpu", "vme", "de", "pse", "tsc", "msr", "pae", "mce",
						 "cx8", "apic", "sep", "mtrr", "pge", "cmov", "pat",
						 "clflush", "mmx", "fxsr", "sse", "sse2", "ht", "syscall",
						 "nx", "lm", "constant_tsc", "pni", "vmx", "ssse3",
						 "cx16", "sse4_1", "sse4_2", "x2apic", "popcnt", "aes",
						 "xsave", "avx", "hypervisor", "avx2" };
	static const char *const flags[] = { "up", "broadcast", "multicast", "running" };
	char id[37], mac[18], ip[16], gw[16], net[16], host[32], cidr[24], serial[32], wwn[40];
	uint64_t mem = (uint64_t)f->memory_gib * GIB;
	json_t *inv;

	fakehost_host_id(f, i, id);
	fakehost_mac(f, i, mac);
	fakehost_ipv4(f, i, ip);
	ip_str(f->net + 1, gw);
	ip_str(f->net, net);
	fakehost_hostname(f, i, host);
	snprintf(cidr, sizeof(cidr), "%s/%u", ip, f->prefix);
	snprintf(serial, sizeof(serial), "SIM%.8s%.4s", id, id + 9);
	snprintf(wwn, sizeof(wwn), "0x5%.7s%.8s", id + 24, id);

	inv = json_pack(
		"{s:s, s:s, s:s, s:s, s:[{s:s, s:s, s:[s], s:[], s:i, s:i, s:b, s:o, s:s, s:s, s:s, s:s, s:s}],"
		" s:[{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:b, s:b, s:b, s:s,"
		"     s:{s:b, s:[]}},"
		"    {s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:b, s:b, s:b, s:s,"
		"     s:{s:b, s:[s]}}],"
		" s:{s:s, s:s, s:s, s:s},"
		" s:{s:s, s:s, s:s, s:b},"
		" s:{s:I, s:I, s:s},"
		" s:{s:i, s:f, s:o, s:s, s:s},"
		" s:[],"
		" s:[{s:s, s:s, s:s, s:i, s:i}, {s:s, s:s, s:s, s:i, s:i}]}",
		"hostname", host, "bmc_address", "", "bmc_v6address", "", "tpm_version", "none",
		"interfaces",
		"name", NIC_NAME, "mac_address", mac, "ipv4_addresses", cidr, "ipv6_addresses",
		"mtu", 1500, "speed_mbps", 10000, "has_carrier", 1, "flags", str_array(flags, 4),
		"vendor", "0x1af4", "product", "0x0001", "biosdevname", "", "client_id", "", "type", "physical",
		"disks",
		"id", "/dev/disk/by-path/pci-0000:00:05.0", "name", "vda", "path", "/dev/vda",
		"by_id", "", "by_path", "/dev/disk/by-path/pci-0000:00:05.0", "hctl", "",
		"model", "", "vendor", "0x1af4", "serial", serial, "wwn", wwn,
		"size_bytes", (json_int_t)((uint64_t)f->disk_gib * GIB), "drive_type", "SSD",
		"bootable", 0, "removable", 0, "is_installation_media", 0, "holders", "",
		"installation_eligibility", "eligible", 1, "not_eligible_reasons",
		"id", "/dev/disk/by-path/pci-0000:00:01.1-ata-1", "name", "sr0", "path", "/dev/sr0",
		"by_id", "", "by_path", "/dev/disk/by-path/pci-0000:00:01.1-ata-1", "hctl", "0:0:0:0",
		"model", "QEMU DVD-ROM", "vendor", "QEMU", "serial", "QM00001", "wwn", "",
		"size_bytes", (json_int_t)(1200ull * 1024 * 1024), "drive_type", "ODD",
		"bootable", 1, "removable", 1, "is_installation_media", 1, "holders", "",
		"installation_eligibility", "eligible", 0, "not_eligible_reasons",
		"Disk appears to be an ISO installation media (has partition with type iso9660)",
		"boot", "current_boot_mode", "uefi", "command_line",
		"BOOT_IMAGE=/images/pxeboot/vmlinuz coreos.liveiso=rhcos ignition.firstboot ignition.platform.id=metal",
		"secure_boot_state", "Disabled", "device_type", "ephemeral",
		"system_vendor", "manufacturer", "Red Hat", "product_name", "KVM", "serial_number", serial,
		"virtual", 1,
		"memory", "physical_bytes", (json_int_t)mem, "usable_bytes", (json_int_t)(mem - mem / 50),
		"physical_bytes_method", "dmidecode",
		"cpu", "count", (int)f->cpus, "frequency", 2400.0, "flags",
		str_array(cpu_flags, sizeof(cpu_flags) / sizeof(cpu_flags[0])),
		"model_name", "Intel Xeon Processor (Simulated)", "architecture", "x86_64",
		"gpus",
		"routes",
		"interface", NIC_NAME, "destination", "0.0.0.0", "gateway", gw, "family", 2, "metric", 100,
		"interface", NIC_NAME, "destination", net, "gateway", "0.0.0.0", "family", 2, "metric", 100);
	return inv;
}

/* A step argument: a JSON string holding JSON text (the usual form), or an already
 * decoded value.  New reference or NULL. */
static json_t *arg_json(const json_t *args, size_t idx)
{
	json_t *a = json_array_get(args, idx);

	if (!a)
		return NULL;
	if (json_is_string(a))
		return json_loads(json_string_value(a), JSON_DECODE_ANY, NULL);
	return json_incref(a);
}

/* "10.0.0.5/24" -> "10.0.0.5" into buf. */
static void strip_prefix(const char *s, char *buf, size_t size)
{
	size_t n = strcspn(s, "/");

	if (n >= size)
		n = size - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

static json_t *reply_connectivity(const struct fakehost_fleet *f, unsigned i, const json_t *args)
{
	json_t *hosts = arg_json(args, 0), *remote = json_array(), *h;
	char ip[16];
	size_t k;

	fakehost_ipv4(f, i, ip);
	json_array_foreach(hosts, k, h) {
		json_t *l2 = json_array(), *l3 = json_array(), *mtu = json_array(), *nic;
		size_t n;

		json_array_foreach(json_object_get(h, "nics"), n, nic) {
			json_t *addr;
			size_t m;
			json_array_foreach(json_object_get(nic, "ip_addresses"), m, addr) {
				char rip[64];
				if (!json_is_string(addr) || strchr(json_string_value(addr), ':'))
					continue;
				strip_prefix(json_string_value(addr), rip, sizeof(rip));
				json_array_append_new(l2, json_pack("{s:s, s:s, s:s, s:s, s:b}", "outgoing_nic", NIC_NAME,
								    "outgoing_ip_address", ip, "remote_ip_address", rip,
								    "remote_mac", json_string_value(json_object_get(nic, "mac")) ?: "",
								    "successful", 1));
				json_array_append_new(l3, json_pack("{s:s, s:s, s:b, s:f, s:f}", "outgoing_nic", NIC_NAME,
								    "remote_ip_address", rip, "successful", 1,
								    "average_rtt_ms", 0.25, "packet_loss_percentage", 0.0));
				json_array_append_new(mtu, json_pack("{s:s, s:s, s:b}", "outgoing_nic", NIC_NAME,
								     "remote_ip_address", rip, "mtu_successful", 1));
			}
		}
		json_array_append_new(remote, json_pack("{s:s, s:o, s:o, s:o}", "host_id",
							json_string_value(json_object_get(h, "host_id")) ?: "",
							"l2_connectivity", l2, "l3_connectivity", l3, "mtu_report", mtu));
	}
	json_decref(hosts);
	return json_pack("{s:o}", "remote_hosts", remote);
}

static json_t *reply_free_addresses(const struct fakehost_fleet *f, const json_t *args)
{
	json_t *nets = arg_json(args, 0), *out = json_array(), *n;
	size_t k;

	/* Upstream passes one JSON string holding the list; accept a plain list of CIDRs too. */
	if (!json_is_array(nets)) {
		json_decref(nets);
		nets = json_incref((json_t *)args);
	}
	json_array_foreach(nets, k, n) {
		uint32_t net, first = f->net + FAKEHOST_FIRST_HOST, last = first + f->hosts - 1;
		unsigned prefix;
		json_t *free_list;

		if (!json_is_string(n) || parse_cidr(json_string_value(n), &net, &prefix) < 0 || prefix < 22 ||
		    prefix > 30)
			continue;
		free_list = json_array();
		for (uint32_t a = net + 1; a < (net | ((1u << (32 - prefix)) - 1)); a++) {
			char s[16];
			if (a == f->net + 1 || (a >= first && a <= last))
				continue; /* the gateway and the fleet's own hosts are taken */
			ip_str(a, s);
			json_array_append_new(free_list, json_string(s));
		}
		json_array_append_new(out, json_pack("{s:s, s:o}", "network", json_string_value(n),
						     "free_addresses", free_list));
	}
	json_decref(nets);
	return out;
}

static json_t *reply_ntp(const struct fakehost_fleet *f, const json_t *args)
{
	json_t *a = arg_json(args, 0), *out = json_array();
	const char *src = json_string_value(json_object_get(a, "ntp_source"));
	char gw[16];

	ip_str(f->net + 1, gw);
	json_array_append_new(out, json_pack("{s:s, s:s}", "source_name", gw, "source_state", "synced"));
	if (src && *src) {
		char *copy = strdup(src), *save = NULL;
		for (char *s = copy ? strtok_r(copy, ",", &save) : NULL; s; s = strtok_r(NULL, ",", &save))
			json_array_append_new(out, json_pack("{s:s, s:s}", "source_name", s, "source_state",
							     "combined"));
		free(copy);
	}
	json_decref(a);
	return json_pack("{s:o}", "ntp_sources", out);
}

static json_t *reply_domains(const struct fakehost_fleet *f, const json_t *args)
{
	json_t *a = arg_json(args, 0), *out = json_array(), *d;
	size_t k;

	json_array_foreach(json_object_get(a, "domains"), k, d) {
		const char *name = json_string_value(json_object_get(d, "domain_name"));
		json_t *v4 = json_array();
		char ip[16];

		if (!name)
			name = "";
		/* No wildcard DNS: the probe name resolves to nothing; api/api-int and the
		 * ingress names resolve to fixed addresses at the start of the subnet. */
		if (strncmp(name, "validateNoWildcardDNS", 21) != 0) {
			ip_str(f->net + (strncmp(name, "api", 3) == 0 ? 5 : 6), ip);
			json_array_append_new(v4, json_string(ip));
		}
		json_array_append_new(out, json_pack("{s:s, s:o, s:[], s:[]}", "domain_name", name,
						     "ipv4_addresses", v4, "ipv6_addresses", "cnames"));
	}
	json_decref(a);
	return json_pack("{s:o}", "resolutions", out);
}

static json_t *reply_images(const json_t *args)
{
	json_t *a = arg_json(args, 0), *out = json_array(), *img;
	size_t k;

	json_array_foreach(json_object_get(a, "images"), k, img)
		if (json_is_string(img))
			json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:f, s:f}", "name", json_string_value(img),
							     "result", "success", "size_bytes", (json_int_t)450000000,
							     "time", 9.0, "download_rate", 50.0));
	json_decref(a);
	return json_pack("{s:o}", "images", out);
}

/* The real agent asks the VIP's network who holds the address (ARP): an
 * answer means it is taken ("failed"), silence that it is free
 * ("succeeded").  Here the gateway and the fleet's own hosts answer; a VIP
 * outside the fleet's subnet is on no network of the host, so nothing can be
 * asked ("unverified"). */
static const char *vip_verdict(const struct fakehost_fleet *f, const char *vip)
{
	uint32_t a, first = f->net + FAKEHOST_FIRST_HOST, last = first + f->hosts - 1;
	struct in_addr in;

	if (!vip || inet_pton(AF_INET, vip, &in) != 1)
		return "unverified";
	a = ntohl(in.s_addr);
	if ((a & ~(bcast(f) ^ f->net)) != f->net)
		return "unverified";
	if (a == f->net + 1 || (a >= first && a <= last))
		return "failed";
	return "succeeded";
}

static json_t *reply_vips(const struct fakehost_fleet *f, const json_t *args)
{
	json_t *a = arg_json(args, 0), *out = json_array(), *v;
	size_t k;

	json_array_foreach(a, k, v)
		json_array_append_new(out, json_pack("{s:O, s:O, s:s}", "vip", json_object_get(v, "vip") ?: json_null(),
						     "vip_type", json_object_get(v, "vip_type") ?: json_null(),
						     "verification",
						     vip_verdict(f, json_string_value(json_object_get(v, "vip")))));
	json_decref(a);
	return out;
}

static json_t *reply_dhcp(const struct fakehost_fleet *f)
{
	char api[16], ingress[16], lapi[160], ling[160];

	ip_str(bcast(f) - 2, api);
	ip_str(bcast(f) - 3, ingress);
	snprintf(lapi, sizeof(lapi), "lease {\n  interface \"%s\";\n  fixed-address %s;\n}\n", NIC_NAME, api);
	snprintf(ling, sizeof(ling), "lease {\n  interface \"%s\";\n  fixed-address %s;\n}\n", NIC_NAME, ingress);
	return json_pack("{s:s, s:s, s:s, s:s}", "api_vip_address", api, "ingress_vip_address", ingress,
			 "api_vip_lease", lapi, "ingress_vip_lease", ling);
}

int fakehost_step_reply(const struct fakehost_fleet *f, unsigned i, const char *step_type,
			const json_t *args, int *ret_exit_code, char **ret_output)
{
	json_t *out = NULL, *a;
	char *text;

	if (!strcmp(step_type, "inventory")) {
		out = fakehost_inventory(f, i);
	} else if (!strcmp(step_type, "connectivity-check")) {
		out = reply_connectivity(f, i, args);
	} else if (!strcmp(step_type, "free-network-addresses")) {
		out = reply_free_addresses(f, args);
	} else if (!strcmp(step_type, "dhcp-lease-allocate")) {
		out = reply_dhcp(f);
	} else if (!strcmp(step_type, "ntp-synchronizer")) {
		out = reply_ntp(f, args);
	} else if (!strcmp(step_type, "domain-resolution")) {
		out = reply_domains(f, args);
	} else if (!strcmp(step_type, "installation-disk-speed-check")) {
		a = arg_json(args, 0);
		out = json_pack("{s:i, s:s}", "io_sync_duration", 2, "path",
				json_string_value(json_object_get(a, "path")) ?: "/dev/vda");
		json_decref(a);
	} else if (!strcmp(step_type, "container-image-availability")) {
		out = reply_images(args);
	} else if (!strcmp(step_type, "api-vip-connectivity-check")) {
		a = arg_json(args, 0);
		out = json_pack("{s:b, s:s, s:s}", "is_success", 1, "url",
				json_string_value(json_object_get(a, "url")) ?: "", "download_error", "");
		json_decref(a);
	} else if (!strcmp(step_type, "tang-connectivity-check")) {
		out = json_pack("{s:b, s:[]}", "is_success", 1, "tang_server_response");
	} else if (!strcmp(step_type, "verify-vips")) {
		out = reply_vips(f, args);
	} else if (!strcmp(step_type, "upgrade-agent")) {
		a = arg_json(args, 0);
		out = json_pack("{s:s, s:s}", "agent_image",
				json_string_value(json_object_get(a, "agent_image")) ?: "", "result", "success");
		json_decref(a);
	} else {
		/* install, logs-gather, stop-installation, reclaim steps and anything unknown:
		 * the command ran and printed nothing. */
		text = strdup("");
		if (!text)
			return -ENOMEM;
		*ret_exit_code = 0;
		*ret_output = text;
		return 0;
	}
	if (!out)
		return -ENOMEM;
	text = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	if (!text)
		return -ENOMEM;
	*ret_exit_code = 0;
	*ret_output = text;
	return 0;
}

static const char *const STAGES_BOOTSTRAP[] = {
	"Starting installation", "Installing", "Writing image to disk", "Copying registry data to disk",
	"Waiting for control plane", "Waiting for bootkube", "Waiting for controller", "Rebooting",
	"Configuring", "Joined", "Done",
};
static const char *const STAGES_MASTER[] = {
	"Starting installation", "Installing", "Writing image to disk", "Copying registry data to disk",
	"Rebooting", "Configuring", "Joined", "Done",
};
static const char *const STAGES_WORKER[] = {
	"Starting installation", "Installing", "Writing image to disk", "Waiting for control plane",
	"Rebooting", "Waiting for ignition", "Configuring", "Joined", "Done",
};
static const char *const STAGES_SNO[] = {
	"Starting installation", "Installing", "Waiting for bootkube", "Writing image to disk",
	"Copying registry data to disk", "Rebooting", "Joined", "Done",
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

const char *const *fakehost_install_stages(const json_t *install_args, size_t *ret_n)
{
	json_t *a = arg_json(install_args, 0);
	const char *role = json_string_value(json_object_get(a, "role"));
	json_int_t cp = json_integer_value(json_object_get(a, "control_plane_count"));
	const char *const *v;

	if (role && !strcmp(role, "bootstrap")) {
		if (cp == 1) {
			v = STAGES_SNO;
			*ret_n = N(STAGES_SNO);
		} else {
			v = STAGES_BOOTSTRAP;
			*ret_n = N(STAGES_BOOTSTRAP);
		}
	} else if (role && (!strcmp(role, "master") || !strcmp(role, "arbiter"))) {
		v = cp == 1 ? STAGES_SNO : STAGES_MASTER;
		*ret_n = cp == 1 ? N(STAGES_SNO) : N(STAGES_MASTER);
	} else {
		v = STAGES_WORKER;
		*ret_n = N(STAGES_WORKER);
	}
	json_decref(a);
	return v;
}

/* Decode an Ignition data URL ("data:[<type>][;base64],<data>", percent-encoded when not
 * base64) into a malloc'd NUL-terminated string. */
static int data_url_decode(const char *url, char **ret)
{
	const char *comma;
	char *out;
	size_t n = 0;

	if (strncmp(url, "data:", 5) != 0 || !(comma = strchr(url, ',')))
		return -EINVAL;
	if (comma - url >= 7 && !strncmp(comma - 7, ";base64", 7)) {
		unsigned char *bin;
		size_t len;
		int r = util_base64_decode(comma + 1, strlen(comma + 1), &bin, &len);
		if (r < 0)
			return r;
		*ret = (char *)bin;
		return 0;
	}
	out = malloc(strlen(comma + 1) + 1);
	if (!out)
		return -ENOMEM;
	for (const char *p = comma + 1; *p; p++) {
		unsigned v;
		if (*p == '%' && p[1] && p[2] && sscanf(p + 1, "%2x", &v) == 1) {
			out[n++] = (char)v;
			p += 2;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	*ret = out;
	return 0;
}

/* Value of "--flag VALUE" or "--flag=VALUE" in a command line; malloc'd or NULL. */
static char *flag_value(const char *cmd, const char *flag)
{
	size_t fl = strlen(flag);

	for (const char *p = strstr(cmd, flag); p; p = strstr(p + 1, flag)) {
		const char *v = p + fl;
		if (p != cmd && p[-1] != ' ')
			continue;
		if (*v != ' ' && *v != '=')
			continue;
		v++;
		while (*v == ' ')
			v++;
		return strndup(v, strcspn(v, " \n"));
	}
	return NULL;
}

static int ipa_config(const json_t *ign, struct fakehost_config *c, ah_err *err);

int fakehost_config_from_ignition(const char *ign_json, struct fakehost_config *ret, ah_err *err)
{
	struct fakehost_config c = { 0 };
	json_error_t jerr;
	json_t *ign = json_loads(ign_json, 0, &jerr), *u, *file;
	const char *contents = NULL;
	char *exec = NULL, *insecure = NULL, *cacert = NULL;
	size_t k;
	int r = -EINVAL;

	if (!ign)
		return ah_err_set(err, EINVAL, 0, "", "ignition: %s", jerr.text);
	json_array_foreach(json_object_get(json_object_get(ign, "systemd"), "units"), k, u)
		if (!strcmp(json_string_value(json_object_get(u, "name")) ?: "", "agent.service"))
			contents = json_string_value(json_object_get(u, "contents"));
	if (!contents) {
		/* A deploy ramdisk runs only the ironic agent. */
		if ((r = ipa_config(ign, &c, err)) < 0)
			goto out;
		if (!c.ipa_api_url) {
			r = ah_err_set(err, EINVAL, 0, "", "ignition has no agent.service unit (nor the ironic agent)");
			goto out;
		}
		if (!(c.agent_version = strdup("")) || !(c.token = strdup("")))
			goto oom;
		*ret = c;
		memset(&c, 0, sizeof(c));
		r = 0;
		goto out;
	}
	for (const char *line = contents; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		size_t ll = strcspn(line, "\n");
		if (!strncmp(line, "ExecStart=", 10)) {
			free(exec);
			exec = strndup(line + 10, ll - 10);
		} else if (!strncmp(line, "Environment=PULL_SECRET_TOKEN=", 30)) {
			/* systemd halves "%%"; the token is written with '%' doubled. */
			const char *v = line + 30;
			size_t vl = ll - 30, n = 0;
			free(c.token);
			c.token = malloc(vl + 1);
			if (!c.token)
				goto oom;
			for (size_t j = 0; j < vl; j++) {
				c.token[n++] = v[j];
				if (v[j] == '%' && j + 1 < vl && v[j + 1] == '%')
					j++;
			}
			c.token[n] = '\0';
		}
	}
	if (!exec) {
		ah_err_set(err, EINVAL, 0, "", "agent.service has no ExecStart");
		goto out;
	}
	c.service_url = flag_value(exec, "--url");
	c.infra_env_id = flag_value(exec, "--infra-env-id");
	c.agent_version = flag_value(exec, "--agent-version");
	insecure = flag_value(exec, "--insecure");
	cacert = flag_value(exec, "--cacert");
	if (!c.service_url || !c.infra_env_id) {
		ah_err_set(err, EINVAL, 0, "", "agent.service ExecStart lacks --url or --infra-env-id");
		goto out;
	}
	c.insecure = insecure && !strcmp(insecure, "true");
	if (!c.agent_version && !(c.agent_version = strdup("")))
		goto oom;
	if (!c.token && !(c.token = strdup("")))
		goto oom;
	if (cacert) {
		json_array_foreach(json_object_get(json_object_get(ign, "storage"), "files"), k, file) {
			const char *src;
			if (strcmp(json_string_value(json_object_get(file, "path")) ?: "", cacert) != 0)
				continue;
			src = json_string_value(json_object_get(json_object_get(file, "contents"), "source"));
			free(c.ca_pem);
			c.ca_pem = NULL;
			if (!src || data_url_decode(src, &c.ca_pem) < 0) {
				ah_err_set(err, EINVAL, 0, "", "ignition file %s: bad data URL", cacert);
				goto out;
			}
		}
	}
	if ((r = ipa_config(ign, &c, err)) < 0)
		goto out;
	*ret = c;
	memset(&c, 0, sizeof(c));
	r = 0;
	goto out;
oom:
	r = ah_err_set(err, ENOMEM, 0, "", "out of memory");
out:
	fakehost_config_release(&c);
	free(exec);
	free(insecure);
	free(cacert);
	json_decref(ign);
	return r;
}

/* The value of `key = value` in an ini text, up to a comma or the end of the line
 * (malloc'd), or NULL. */
static char *ini_value(const char *text, const char *key)
{
	size_t kl = strlen(key);

	for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *v = line;
		while (*v == ' ' || *v == '\t')
			v++;
		if (strncmp(v, key, kl))
			continue;
		v += kl;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != '=')
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		return strndup(v, strcspn(v, ",\r\n \t"));
	}
	return NULL;
}

/* The ironic agent's configuration, when the Ignition starts it (converged flow). */
static int ipa_config(const json_t *ign, struct fakehost_config *c, ah_err *err)
{
	const json_t *u, *file;
	char *conf = NULL, *insecure;
	bool unit = false;
	size_t k;

	json_array_foreach(json_object_get(json_object_get(ign, "systemd"), "units"), k, u)
		if (!strcmp(json_string_value(json_object_get(u, "name")) ?: "", "ironic-agent.service") &&
		    !json_is_false(json_object_get(u, "enabled")))
			unit = true;
	if (!unit)
		return 0;
	json_array_foreach(json_object_get(json_object_get(ign, "storage"), "files"), k, file) {
		const char *src;
		if (strcmp(json_string_value(json_object_get(file, "path")) ?: "", "/etc/ironic-python-agent.conf"))
			continue;
		src = json_string_value(json_object_get(json_object_get(file, "contents"), "source"));
		free(conf);
		conf = NULL;
		if (!src || data_url_decode(src, &conf) < 0)
			return ah_err_set(err, EINVAL, 0, "", "ignition file /etc/ironic-python-agent.conf: bad data URL");
	}
	if (!conf)
		return 0;
	c->ipa_api_url = ini_value(conf, "api_url");
	c->ipa_inspection_url = ini_value(conf, "inspection_callback_url");
	insecure = ini_value(conf, "insecure");
	c->ipa_insecure = insecure && (!strcasecmp(insecure, "true") || !strcmp(insecure, "1"));
	free(insecure);
	free(conf);
	if (!c->ipa_api_url || (strncmp(c->ipa_api_url, "http://", 7) && strncmp(c->ipa_api_url, "https://", 8)))
		return ah_err_set(err, EINVAL, 0, "", "/etc/ironic-python-agent.conf: api_url is missing or not an "
				  "http(s) URL");
	if (c->ipa_inspection_url && !*c->ipa_inspection_url) {
		free(c->ipa_inspection_url);
		c->ipa_inspection_url = NULL;
	}
	return 0;
}

json_t *fakehost_ipa_inventory(const struct fakehost_fleet *f, unsigned i)
{
	json_t *a = fakehost_inventory(f, i), *inv = NULL, *nics = json_array(), *disks = json_array();
	const json_t *n, *d, *cpu, *mem;
	size_t k;

	if (!a || !nics || !disks)
		goto out;
	json_array_foreach(json_object_get(a, "interfaces"), k, n) {
		const char *cidr = json_string_value(json_array_get(json_object_get(n, "ipv4_addresses"), 0)) ?: "";
		json_array_append_new(nics, json_pack("{s:s, s:s, s:s%, s:n, s:b, s:n, s:s, s:s, s:n, s:n, s:I}", "name",
						      json_string_value(json_object_get(n, "name")) ?: "", "mac_address",
						      json_string_value(json_object_get(n, "mac_address")) ?: "",
						      "ipv4_address", cidr, strcspn(cidr, "/"), "ipv6_address",
						      "has_carrier", 1, "lldp", "vendor",
						      json_string_value(json_object_get(n, "vendor")) ?: "", "product",
						      json_string_value(json_object_get(n, "product")) ?: "", "client_id",
						      "biosdevname", "speed_mbps",
						      json_integer_value(json_object_get(n, "speed_mbps"))));
	}
	json_array_foreach(json_object_get(a, "disks"), k, d) {
		if (json_is_true(json_object_get(d, "is_installation_media")))
			continue; /* IPA lists block devices, not the virtual CD */
		json_array_append_new(disks, json_pack("{s:s, s:s, s:I, s:b, s:s, s:s, s:s, s:n, s:n, s:s, s:s}", "name",
						       json_string_value(json_object_get(d, "path")) ?: "", "model",
						       json_string_value(json_object_get(d, "model")) ?: "", "size",
						       json_integer_value(json_object_get(d, "size_bytes")), "rotational",
						       !strcmp(json_string_value(json_object_get(d, "drive_type")) ?: "", "HDD"),
						       "wwn", json_string_value(json_object_get(d, "wwn")) ?: "", "serial",
						       json_string_value(json_object_get(d, "serial")) ?: "", "vendor",
						       json_string_value(json_object_get(d, "vendor")) ?: "",
						       "wwn_with_extension", "wwn_vendor_extension", "hctl",
						       json_string_value(json_object_get(d, "hctl")) ?: "", "by_path",
						       json_string_value(json_object_get(d, "by_path")) ?: ""));
	}
	cpu = json_object_get(a, "cpu");
	mem = json_object_get(a, "memory");
	inv = json_pack("{s:o, s:{s:s, s:s, s:i, s:s, s:O}, s:o, s:{s:I, s:I}, s:s, s:n,"
			" s:{s:s, s:s, s:s, s:{}}, s:{s:s, s:s}, s:s}",
			"interfaces", nics,
			"cpu", "model_name", json_string_value(json_object_get(cpu, "model_name")) ?: "", "frequency",
			"2400", "count", (int)json_integer_value(json_object_get(cpu, "count")), "architecture",
			json_string_value(json_object_get(cpu, "architecture")) ?: "", "flags",
			json_object_get(cpu, "flags"),
			"disks", disks,
			"memory", "total", json_integer_value(json_object_get(mem, "usable_bytes")), "physical_mb",
			json_integer_value(json_object_get(mem, "physical_bytes")) / (1024 * 1024),
			"bmc_address", "0.0.0.0", "bmc_v6address",
			"system_vendor", "product_name",
			json_string_value(json_object_get(json_object_get(a, "system_vendor"), "product_name")) ?: "",
			"serial_number",
			json_string_value(json_object_get(json_object_get(a, "system_vendor"), "serial_number")) ?: "",
			"manufacturer",
			json_string_value(json_object_get(json_object_get(a, "system_vendor"), "manufacturer")) ?: "",
			"firmware",
			"boot", "current_boot_mode", "uefi", "pxe_interface",
			json_string_value(json_object_get(json_array_get(json_object_get(a, "interfaces"), 0),
							  "mac_address")) ?: "",
			"hostname", json_string_value(json_object_get(a, "hostname")) ?: "");
	nics = disks = NULL; /* json_pack's "o" took them, also on failure */
out:
	json_decref(nics);
	json_decref(disks);
	json_decref(a);
	return inv;
}

void fakehost_config_release(struct fakehost_config *c)
{
	free(c->service_url);
	free(c->infra_env_id);
	free(c->agent_version);
	free(c->token);
	free(c->ca_pem);
	free(c->ipa_api_url);
	free(c->ipa_inspection_url);
	memset(c, 0, sizeof(*c));
}
