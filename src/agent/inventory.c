/* inventory.c - the real machine's inventory from /proc, /sys and /dev (see inventory.h).
 *
 * Each reader is a small function over files below a root prefix; missing files leave the
 * upstream zero value, because the agent runs unprivileged in tests and containers where
 * much of /sys is absent or root-only. */
#include "agent/inventory.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "base/util.h"

/* Largest single /sys or /proc file we read (cpuinfo on big machines is ~1 MiB). */
#define INV_FILE_MAX (8u << 20)

static const char *root_or_slash(const char *root)
{
	return (root && *root) ? root : "/";
}

static void mkpath(char *out, size_t size, const char *root, const char *rel)
{
	root = root_or_slash(root);
	if (strcmp(root, "/") == 0)
		snprintf(out, size, "%s", rel);
	else
		snprintf(out, size, "%s%s%s", root, rel[0] == '/' ? "" : "/", rel);
}

/* Whole file under root into a malloc'd string (caller frees), or NULL. */
static char *slurp(const char *root, const char *rel)
{
	char path[PATH_MAX];
	char *data = NULL;
	size_t len = 0;

	mkpath(path, sizeof(path), root, rel);
	if (util_read_file(path, &data, &len) < 0)
		return NULL;
	if (len > INV_FILE_MAX) {
		free(data);
		return NULL;
	}
	return data;
}

/* First line of a small file, trailing whitespace trimmed, into buf; 0 or -errno. */
static int read_line(const char *root, const char *rel, char *buf, size_t size)
{
	char path[PATH_MAX];
	FILE *f;
	size_t n;

	mkpath(path, sizeof(path), root, rel);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)size, f)) {
		fclose(f);
		buf[0] = '\0';
		return -ENODATA;
	}
	fclose(f);
	n = strlen(buf);
	while (n > 0 && isspace((unsigned char)buf[n - 1]))
		buf[--n] = '\0';
	return 0;
}

static int64_t read_i64(const char *root, const char *rel, int64_t dflt)
{
	char buf[64], *end;
	long long v;

	if (read_line(root, rel, buf, sizeof(buf)) < 0)
		return dflt;
	errno = 0;
	v = strtoll(buf, &end, 0);
	if (errno || end == buf)
		return dflt;
	return v;
}

static bool exists(const char *root, const char *rel)
{
	char path[PATH_MAX];

	mkpath(path, sizeof(path), root, rel);
	return access(path, F_OK) == 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in a directory (no dot entries); returns count, *ret is malloc'd
 * (free each name and the array), or -errno. */
static int list_dir(const char *root, const char *rel, char ***ret)
{
	char path[PATH_MAX];
	DIR *d;
	struct dirent *de;
	char **v = NULL;
	int n = 0, cap = 0;

	mkpath(path, sizeof(path), root, rel);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nv = realloc(v, sizeof(*v) * (size_t)(cap ? cap * 2 : 16));
			if (!nv)
				goto oom;
			v = nv;
			cap = cap ? cap * 2 : 16;
		}
		v[n] = strdup(de->d_name);
		if (!v[n])
			goto oom;
		n++;
	}
	closedir(d);
	if (n)
		qsort(v, (size_t)n, sizeof(*v), cmp_str);
	*ret = v;
	return n;
oom:
	closedir(d);
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* "key\t: value" lines of /proc/cpuinfo; returns a pointer to the value inside line or
 * NULL.  The line is modified (the newline is cut). */
static const char *cpuinfo_value(char *line, const char *key)
{
	size_t kl = strlen(key);
	char *p;

	if (strncmp(line, key, kl) != 0)
		return NULL;
	p = line + kl;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ')
		p++;
	p[strcspn(p, "\n")] = '\0';
	return p;
}

json_t *inventory_cpu(const char *root)
{
	json_t *cpu = json_object(), *flags = json_array();
	char *data = slurp(root, "/proc/cpuinfo");
	char model[256] = "", arch[sizeof(((struct utsname *)0)->machine)] = "";
	double mhz = 0;
	int count = 0;
	bool have_flags = false;

	if (!cpu || !flags)
		goto oom;
	if (data) {
		char *save = NULL;
		for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			const char *v;
			if (cpuinfo_value(line, "processor")) {
				count++;
			} else if ((v = cpuinfo_value(line, "model name")) && !model[0]) {
				snprintf(model, sizeof(model), "%s", v);
			} else if ((v = cpuinfo_value(line, "cpu MHz"))) {
				double m = strtod(v, NULL);
				if (m > mhz)
					mhz = m;
			} else if (!have_flags && ((v = cpuinfo_value(line, "flags")) ||
						   (v = cpuinfo_value(line, "Features")))) {
				char *copy = strdup(v), *s2 = NULL;
				if (!copy)
					goto oom;
				for (char *f = strtok_r(copy, " ", &s2); f; f = strtok_r(NULL, " ", &s2))
					json_array_append_new(flags, json_string(f));
				free(copy);
				have_flags = true;
			}
		}
	}
	if (mhz == 0) {
		int64_t khz = read_i64(root, "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", 0);
		mhz = (double)khz / 1000.0;
	}
	if (read_line(root, "/proc/sys/kernel/arch", arch, sizeof(arch)) < 0 &&
	    strcmp(root_or_slash(root), "/") == 0) {
		struct utsname u;
		if (uname(&u) == 0)
			snprintf(arch, sizeof(arch), "%s", u.machine);
	}
	json_object_set_new(cpu, "count", json_integer(count));
	json_object_set_new(cpu, "frequency", json_real(mhz));
	json_object_set_new(cpu, "flags", flags);
	json_object_set_new(cpu, "model_name", json_string(model));
	json_object_set_new(cpu, "architecture", json_string(arch));
	free(data);
	return cpu;
oom:
	free(data);
	json_decref(flags);
	json_decref(cpu);
	return NULL;
}

json_t *inventory_memory(const char *root)
{
	json_t *mem = json_object();
	char *data = slurp(root, "/proc/meminfo");
	int64_t total = 0, physical = 0;
	const char *method = "meminfo";
	char **blocks = NULL;
	int n;

	if (!mem) {
		free(data);
		return NULL;
	}
	if (data) {
		const char *p = strstr(data, "MemTotal:");
		if (p)
			total = strtoll(p + 9, NULL, 10) * 1024;
	}
	free(data);
	n = list_dir(root, "/sys/devices/system/memory", &blocks);
	if (n > 0) {
		char buf[64];
		int64_t bsize = 0;
		int online = 0;
		if (read_line(root, "/sys/devices/system/memory/block_size_bytes", buf, sizeof(buf)) == 0)
			bsize = strtoll(buf, NULL, 16);
		for (int i = 0; i < n; i++) {
			char rel[PATH_MAX];
			if (strncmp(blocks[i], "memory", 6) != 0 || !isdigit((unsigned char)blocks[i][6]))
				continue;
			snprintf(rel, sizeof(rel), "/sys/devices/system/memory/%s/online", blocks[i]);
			if (read_i64(root, rel, 0) == 1)
				online++;
		}
		if (bsize > 0 && online > 0 && bsize * online >= total) {
			physical = bsize * online;
			method = "ghw";
		}
	}
	if (n > 0)
		free_list(blocks, n);
	if (!physical)
		physical = total;
	json_object_set_new(mem, "physical_bytes", json_integer(physical));
	json_object_set_new(mem, "usable_bytes", json_integer(total));
	json_object_set_new(mem, "physical_bytes_method", json_string(method));
	return mem;
}

/* The symlink in dev/disk/<dir> whose target's basename is `name`, as an absolute
 * /dev/disk/... path into out; sorted order makes the choice stable.  "" if none. */
static void find_link(const char *root, const char *dir, const char *name, char *out, size_t size)
{
	char rel[PATH_MAX], **ents = NULL;
	int n;

	out[0] = '\0';
	snprintf(rel, sizeof(rel), "/dev/disk/%s", dir);
	n = list_dir(root, rel, &ents);
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX], target[PATH_MAX], lrel[PATH_MAX];
		ssize_t l;
		const char *base;

		snprintf(lrel, sizeof(lrel), "/dev/disk/%s/%s", dir, ents[i]);
		mkpath(path, sizeof(path), root, lrel);
		l = readlink(path, target, sizeof(target) - 1);
		if (l <= 0)
			continue;
		target[l] = '\0';
		base = strrchr(target, '/');
		base = base ? base + 1 : target;
		if (strcmp(base, name) == 0) {
			snprintf(out, size, "%s", lrel);
			break;
		}
	}
	if (n > 0)
		free_list(ents, n);
}

/* Whether /dev/<name> or one of its partitions is mounted; sets *iso when a mount
 * point ends in "iso" (the live ISO, i.e. installation media). */
static bool disk_mounted(const char *mounts, const char *name, bool *iso)
{
	char dev[PATH_MAX];
	size_t dl;
	bool any = false;
	const char *line = mounts;

	snprintf(dev, sizeof(dev), "/dev/%s", name);
	dl = strlen(dev);
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t ll = eol ? (size_t)(eol - line) : strlen(line);
		if (ll > dl && strncmp(line, dev, dl) == 0) {
			const char *rest = line + dl;
			/* sda, sda1, nvme0n1p1: the device name followed by a space, a digit or 'p'. */
			if (*rest == ' ' || isdigit((unsigned char)*rest) ||
			    (*rest == 'p' && isdigit((unsigned char)rest[1]))) {
				const char *mp = memchr(line, ' ', ll);
				any = true;
				if (mp) {
					const char *mpe = memchr(mp + 1, ' ', ll - (size_t)(mp + 1 - line));
					if (mpe && mpe - mp > 3 && strncmp(mpe - 3, "iso", 3) == 0)
						*iso = true;
				}
			}
		}
		line = eol ? eol + 1 : NULL;
	}
	return any;
}

static bool disk_bootable(const char *root, const char *name)
{
	char rel[PATH_MAX], path[PATH_MAX];
	unsigned char mbr[512];
	int fd;
	ssize_t n;

	snprintf(rel, sizeof(rel), "/dev/%s", name);
	mkpath(path, sizeof(path), root, rel);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return false;
	n = pread(fd, mbr, sizeof(mbr), 0);
	close(fd);
	return n == (ssize_t)sizeof(mbr) && mbr[510] == 0x55 && mbr[511] == 0xaa;
}

static json_t *one_disk(const char *root, const char *name, const char *mounts)
{
	json_t *d = json_object(), *reasons = json_array(), *elig = json_object();
	char rel[PATH_MAX], buf[512], by_id[PATH_MAX], by_path[PATH_MAX];
	bool iso = false, mounted, odd;
	const char *drive;

	if (!name || !d || !reasons || !elig) {
		json_decref(d);
		json_decref(reasons);
		json_decref(elig);
		return NULL;
	}
	odd = strncmp(name, "sr", 2) == 0;
	snprintf(rel, sizeof(rel), "/sys/block/%s/queue/rotational", name);
	if (odd)
		drive = "ODD";
	else if (strncmp(name, "fd", 2) == 0)
		drive = "FDD";
	else
		drive = read_i64(root, rel, -1) == 1 ? "HDD" : read_i64(root, rel, -1) == 0 ? "SSD" : "Unknown";

	find_link(root, "by-id", name, by_id, sizeof(by_id));
	find_link(root, "by-path", name, by_path, sizeof(by_path));
	snprintf(buf, sizeof(buf), "/dev/%s", name);
	json_object_set_new(d, "id", json_string(by_id[0] ? by_id : by_path[0] ? by_path : buf));
	json_object_set_new(d, "name", json_string(name));
	json_object_set_new(d, "path", json_string(buf));
	json_object_set_new(d, "by_id", json_string(by_id));
	json_object_set_new(d, "by_path", json_string(by_path));
	json_object_set_new(d, "drive_type", json_string(drive));

	snprintf(rel, sizeof(rel), "/sys/block/%s/size", name);
	json_object_set_new(d, "size_bytes", json_integer(read_i64(root, rel, 0) * 512));

	static const struct { const char *key, *file; } strs[] = {
		{ "model", "device/model" }, { "vendor", "device/vendor" },
		{ "serial", "device/serial" }, { "wwn", "device/wwid" },
	};
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
		snprintf(rel, sizeof(rel), "/sys/block/%s/%s", name, strs[i].file);
		if (read_line(root, rel, buf, sizeof(buf)) < 0) {
			/* Some drivers (virtio, nvme) keep wwid one level up. */
			snprintf(rel, sizeof(rel), "/sys/block/%s/%s", name,
				 strcmp(strs[i].key, "wwn") == 0 ? "wwid" : strs[i].file);
			if (read_line(root, rel, buf, sizeof(buf)) < 0)
				buf[0] = '\0';
		}
		json_object_set_new(d, strs[i].key, json_string(buf));
	}
	/* The SCSI address is the name of the device directory, e.g. "0:0:0:0". */
	{
		char path[PATH_MAX], target[PATH_MAX];
		ssize_t l;
		const char *base = "";
		snprintf(rel, sizeof(rel), "/sys/block/%s/device", name);
		mkpath(path, sizeof(path), root, rel);
		l = readlink(path, target, sizeof(target) - 1);
		if (l > 0) {
			target[l] = '\0';
			base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
			if (!strchr(base, ':'))
				base = "";
		}
		json_object_set_new(d, "hctl", json_string(base));
	}
	snprintf(rel, sizeof(rel), "/sys/block/%s/removable", name);
	json_object_set_new(d, "removable", json_boolean(read_i64(root, rel, 0) == 1));
	json_object_set_new(d, "bootable", json_boolean(disk_bootable(root, name)));

	mounted = mounts && disk_mounted(mounts, name, &iso);
	json_object_set_new(d, "is_installation_media", json_boolean(iso || odd));
	if (iso || odd)
		json_array_append_new(reasons, json_string("Disk appears to be an ISO installation media (has partition with type iso9660)"));
	else if (mounted)
		json_array_append_new(reasons, json_string("Disk has mounted partitions"));
	snprintf(rel, sizeof(rel), "/sys/block/%s/dm/uuid", name);
	if (read_line(root, rel, buf, sizeof(buf)) == 0 && strncmp(buf, "LVM-", 4) == 0)
		json_array_append_new(reasons, json_string("Disk is an LVM logical volume"));
	json_object_set_new(elig, "eligible", json_boolean(json_array_size(reasons) == 0));
	json_object_set_new(elig, "not_eligible_reasons", reasons);
	json_object_set_new(d, "installation_eligibility", elig);
	json_object_set_new(d, "holders", json_string(""));
	json_object_set_new(d, "has_uuid", json_boolean(false));
	return d;
}

json_t *inventory_disks(const char *root)
{
	json_t *disks = json_array();
	char **names = NULL, *mounts;
	int n;

	if (!disks)
		return NULL;
	mounts = slurp(root, "/proc/mounts");
	n = list_dir(root, "/sys/block", &names);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i];
		char rel[PATH_MAX];
		json_t *d;

		if (!strncmp(nm, "loop", 4) || !strncmp(nm, "ram", 3) || !strncmp(nm, "zram", 4) ||
		    !strncmp(nm, "dm-", 3) || !strncmp(nm, "md", 2) || !strncmp(nm, "nbd", 3))
			continue;
		snprintf(rel, sizeof(rel), "/sys/block/%s/hidden", nm);
		if (read_i64(root, rel, 0) == 1)
			continue;
		d = one_disk(root, nm, mounts);
		if (!d || json_array_append_new(disks, d) < 0) {
			free_list(names, n);
			free(mounts);
			json_decref(disks);
			return NULL;
		}
	}
	if (n > 0)
		free_list(names, n);
	free(mounts);
	return disks;
}

/* Go's net.Flags names, which upstream reports. */
static json_t *iface_flags(unsigned flags)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ IFF_UP, "up" }, { IFF_BROADCAST, "broadcast" }, { IFF_LOOPBACK, "loopback" },
		{ IFF_POINTOPOINT, "pointtopoint" }, { IFF_MULTICAST, "multicast" },
		{ IFF_RUNNING, "running" },
	};
	json_t *a = json_array();

	for (size_t i = 0; a && i < sizeof(names) / sizeof(names[0]); i++)
		if (flags & names[i].bit)
			json_array_append_new(a, json_string(names[i].name));
	return a;
}

static int prefix_len(const struct sockaddr *mask)
{
	const unsigned char *b;
	size_t n;
	int bits = 0;

	if (!mask)
		return 0;
	if (mask->sa_family == AF_INET) {
		b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
		n = 4;
	} else {
		b = (const unsigned char *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
		n = 16;
	}
	for (size_t i = 0; i < n; i++)
		bits += __builtin_popcount(b[i]);
	return bits;
}

json_t *inventory_interfaces(const char *root, const struct ifaddrs *ifa)
{
	json_t *list = json_array();
	char **names = NULL;
	int n;

	if (!list)
		return NULL;
	n = list_dir(root, "/sys/class/net", &names);
	for (int i = 0; i < n; i++) {
		const char *nm = names[i];
		char rel[PATH_MAX], buf[256];
		const char *type;
		json_t *it, *v4, *v6;

		if (strcmp(nm, "lo") == 0)
			continue;
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/device", nm);
		if (exists(root, rel)) {
			type = "physical";
		} else {
			snprintf(rel, sizeof(rel), "/sys/class/net/%s/bonding", nm);
			if (exists(root, rel)) {
				type = "bond";
			} else {
				snprintf(rel, sizeof(rel), "/proc/net/vlan/%s", nm);
				if (!exists(root, rel))
					continue; /* bridges, veths, tunnels: not reported upstream */
				type = "vlan";
			}
		}
		it = json_object();
		v4 = json_array();
		v6 = json_array();
		if (!it || !v4 || !v6) {
			json_decref(it);
			json_decref(v4);
			json_decref(v6);
			free_list(names, n);
			json_decref(list);
			return NULL;
		}
		json_object_set_new(it, "name", json_string(nm));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/address", nm);
		json_object_set_new(it, "mac_address",
				    json_string(read_line(root, rel, buf, sizeof(buf)) == 0 ? buf : ""));
		for (const struct ifaddrs *a = ifa; a; a = a->ifa_next) {
			char ip[INET6_ADDRSTRLEN], cidr[INET6_ADDRSTRLEN + 16];
			if (!a->ifa_addr || strcmp(a->ifa_name, nm) != 0)
				continue;
			if (a->ifa_addr->sa_family == AF_INET) {
				inet_ntop(AF_INET, &((const struct sockaddr_in *)a->ifa_addr)->sin_addr, ip, sizeof(ip));
				snprintf(cidr, sizeof(cidr), "%s/%d", ip, prefix_len(a->ifa_netmask));
				json_array_append_new(v4, json_string(cidr));
			} else if (a->ifa_addr->sa_family == AF_INET6) {
				inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, ip, sizeof(ip));
				snprintf(cidr, sizeof(cidr), "%s/%d", ip, prefix_len(a->ifa_netmask));
				json_array_append_new(v6, json_string(cidr));
			}
		}
		json_object_set_new(it, "ipv4_addresses", v4);
		json_object_set_new(it, "ipv6_addresses", v6);
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/mtu", nm);
		json_object_set_new(it, "mtu", json_integer(read_i64(root, rel, 0)));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/speed", nm);
		json_object_set_new(it, "speed_mbps", json_integer(read_i64(root, rel, -1)));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/carrier", nm);
		json_object_set_new(it, "has_carrier", json_boolean(read_i64(root, rel, 0) == 1));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/flags", nm);
		json_object_set_new(it, "flags", iface_flags((unsigned)read_i64(root, rel, 0)));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/device/vendor", nm);
		json_object_set_new(it, "vendor", json_string(read_line(root, rel, buf, sizeof(buf)) == 0 ? buf : ""));
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/device/device", nm);
		json_object_set_new(it, "product", json_string(read_line(root, rel, buf, sizeof(buf)) == 0 ? buf : ""));
		json_object_set_new(it, "biosdevname", json_string(""));
		json_object_set_new(it, "client_id", json_string(""));
		json_object_set_new(it, "type", json_string(type));
		json_array_append_new(list, it);
	}
	if (n > 0)
		free_list(names, n);
	return list;
}

static json_t *route(const char *iface, const char *dst, const char *gw, int family, int64_t metric)
{
	json_t *r = json_object();

	if (!r)
		return NULL;
	json_object_set_new(r, "interface", json_string(iface));
	json_object_set_new(r, "destination", json_string(dst));
	json_object_set_new(r, "gateway", json_string(gw));
	json_object_set_new(r, "family", json_integer(family));
	json_object_set_new(r, "metric", json_integer(metric));
	return r;
}

static void hex_to_in6(const char *hex, struct in6_addr *a)
{
	for (int i = 0; i < 16; i++) {
		unsigned v = 0;
		sscanf(hex + 2 * i, "%2x", &v);
		a->s6_addr[i] = (unsigned char)v;
	}
}

json_t *inventory_routes(const char *root)
{
	json_t *routes = json_array();
	char *data;

	if (!routes)
		return NULL;
	data = slurp(root, "/proc/net/route");
	if (data) {
		char *save = NULL;
		bool header = true;
		for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char iface[IF_NAMESIZE + 1];
			unsigned dst, gw, flags, mask;
			int refcnt, use, metric;
			char d[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
			struct in_addr a;

			if (header) {
				header = false;
				continue;
			}
			if (sscanf(line, "%16s %x %x %x %d %d %d %x", iface, &dst, &gw, &flags, &refcnt, &use,
				   &metric, &mask) != 8)
				continue;
			/* The kernel prints the addresses as host-order hex of network-order words. */
			a.s_addr = dst;
			inet_ntop(AF_INET, &a, d, sizeof(d));
			a.s_addr = gw;
			inet_ntop(AF_INET, &a, g, sizeof(g));
			json_array_append_new(routes, route(iface, d, g, AF_INET, metric));
		}
		free(data);
	}
	data = slurp(root, "/proc/net/ipv6_route");
	if (data) {
		char *save = NULL;
		for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char dsth[33], srch[33], nhh[33], iface[IF_NAMESIZE + 1];
			unsigned dplen, splen, metric, refcnt, use, flags;
			struct in6_addr a;
			char d[INET6_ADDRSTRLEN], g[INET6_ADDRSTRLEN];

			if (sscanf(line, "%32s %x %32s %x %32s %x %x %x %x %16s", dsth, &dplen, srch, &splen,
				   nhh, &metric, &refcnt, &use, &flags, iface) != 10)
				continue;
			/* Skip loopback, reject routes, multicast and the kernel's local-table
			 * host routes for our own addresses: upstream lists the main table. */
			if (strcmp(iface, "lo") == 0 || (flags & 0x0200) || !strncmp(dsth, "ff", 2) ||
			    (dplen == 128 && metric == 0))
				continue;
			hex_to_in6(dsth, &a);
			inet_ntop(AF_INET6, &a, d, sizeof(d));
			hex_to_in6(nhh, &a);
			inet_ntop(AF_INET6, &a, g, sizeof(g));
			json_array_append_new(routes, route(iface, d, g, AF_INET6, metric));
		}
		free(data);
	}
	return routes;
}

json_t *inventory_boot(const char *root)
{
	json_t *boot = json_object();
	char cmdline[4096] = "";
	const char *sb = "NotSupported";
	bool efi;

	if (!boot)
		return NULL;
	read_line(root, "/proc/cmdline", cmdline, sizeof(cmdline));
	efi = exists(root, "/sys/firmware/efi");
	if (efi) {
		char path[PATH_MAX];
		unsigned char var[5];
		int fd;
		sb = "Unknown";
		/* efivarfs: 4 bytes of attributes, then the one-byte SecureBoot value. */
		mkpath(path, sizeof(path), root,
		       "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c");
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, var, sizeof(var)) == (ssize_t)sizeof(var))
				sb = var[4] ? "Enabled" : "Disabled";
			close(fd);
		}
	}
	json_object_set_new(boot, "current_boot_mode", json_string(efi ? "uefi" : "bios"));
	json_object_set_new(boot, "command_line", json_string(cmdline));
	json_object_set_new(boot, "secure_boot_state", json_string(sb));
	/* A live ISO or PXE boot runs from RAM; anything else booted from a disk. */
	json_object_set_new(boot, "device_type",
			    json_string(strstr(cmdline, "coreos.liveiso") || strstr(cmdline, "coreos.live.rootfs_url")
						? "ephemeral" : "persistent"));
	return boot;
}

static bool cpu_has_hypervisor_flag(const char *root)
{
	char *data = slurp(root, "/proc/cpuinfo");
	bool r = false;

	if (data) {
		const char *f = strstr(data, "\nflags");
		if (f) {
			const char *eol = strchr(f + 1, '\n');
			const char *h = strstr(f, " hypervisor");
			r = h && (!eol || h < eol);
		}
	}
	free(data);
	return r;
}

json_t *inventory_system_vendor(const char *root)
{
	static const char *const virt[] = { "KVM", "QEMU", "VMware", "VirtualBox", "Xen", "Bochs",
					    "Virtual Machine", "oVirt", "OpenStack", "RHEV", "Amazon EC2",
					    "Google Compute Engine" };
	json_t *v = json_object();
	char vendor[256] = "", product[256] = "", serial[256] = "";
	bool is_virtual;

	if (!v)
		return NULL;
	read_line(root, "/sys/class/dmi/id/sys_vendor", vendor, sizeof(vendor));
	read_line(root, "/sys/class/dmi/id/product_name", product, sizeof(product));
	read_line(root, "/sys/class/dmi/id/product_serial", serial, sizeof(serial));
	is_virtual = cpu_has_hypervisor_flag(root);
	for (size_t i = 0; !is_virtual && i < sizeof(virt) / sizeof(virt[0]); i++)
		is_virtual = strstr(vendor, virt[i]) || strstr(product, virt[i]);
	json_object_set_new(v, "manufacturer", json_string(vendor));
	json_object_set_new(v, "product_name", json_string(product));
	json_object_set_new(v, "serial_number", json_string(serial));
	json_object_set_new(v, "virtual", json_boolean(is_virtual));
	return v;
}

json_t *inventory_gpus(const char *root)
{
	json_t *gpus = json_array();
	char **devs = NULL;
	int n;

	if (!gpus)
		return NULL;
	n = list_dir(root, "/sys/bus/pci/devices", &devs);
	for (int i = 0; i < n; i++) {
		char rel[PATH_MAX], vendor[32] = "", device[32] = "";
		json_t *g;

		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/class", devs[i]);
		if ((read_i64(root, rel, 0) >> 16) != 0x03)
			continue;
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/vendor", devs[i]);
		read_line(root, rel, vendor, sizeof(vendor));
		snprintf(rel, sizeof(rel), "/sys/bus/pci/devices/%s/device", devs[i]);
		read_line(root, rel, device, sizeof(device));
		g = json_object();
		if (!g)
			break;
		/* Upstream reports the PCI ids without the 0x prefix; names need pci.ids. */
		json_object_set_new(g, "vendor_id", json_string(strncmp(vendor, "0x", 2) ? vendor : vendor + 2));
		json_object_set_new(g, "device_id", json_string(strncmp(device, "0x", 2) ? device : device + 2));
		json_object_set_new(g, "address", json_string(devs[i]));
		json_object_set_new(g, "vendor", json_string(""));
		json_object_set_new(g, "name", json_string(""));
		json_array_append_new(gpus, g);
	}
	if (n > 0)
		free_list(devs, n);
	return gpus;
}

const char *inventory_tpm_version(const char *root)
{
	int64_t major;

	if (!exists(root, "/sys/class/tpm/tpm0"))
		return "none";
	major = read_i64(root, "/sys/class/tpm/tpm0/tpm_version_major", 0);
	return major == 2 ? "2.0" : "1.2";
}

int inventory_collect(const char *root, json_t **ret_inv, ah_err *err)
{
	json_t *inv = json_object();
	struct ifaddrs *ifa = NULL;
	char host[256] = "";
	json_t *parts[9];
	static const char *const keys[] = { "cpu", "memory", "disks", "interfaces", "routes",
					    "boot", "system_vendor", "gpus" };

	if (!inv)
		return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	if (strcmp(root_or_slash(root), "/") == 0 && getifaddrs(&ifa) < 0)
		ifa = NULL;
	parts[0] = inventory_cpu(root);
	parts[1] = inventory_memory(root);
	parts[2] = inventory_disks(root);
	parts[3] = inventory_interfaces(root, ifa);
	parts[4] = inventory_routes(root);
	parts[5] = inventory_boot(root);
	parts[6] = inventory_system_vendor(root);
	parts[7] = inventory_gpus(root);
	if (ifa)
		freeifaddrs(ifa);
	for (int i = 0; i < 8; i++) {
		if (!parts[i] || json_object_set_new(inv, keys[i], parts[i]) < 0) {
			for (int j = i + 1; j < 8; j++)
				json_decref(parts[j]);
			json_decref(inv);
			return ah_err_set(err, ENOMEM, 0, "", "out of memory");
		}
	}
	read_line(root, "/proc/sys/kernel/hostname", host, sizeof(host));
	json_object_set_new(inv, "hostname", json_string(host));
	json_object_set_new(inv, "bmc_address", json_string(""));
	json_object_set_new(inv, "bmc_v6address", json_string(""));
	json_object_set_new(inv, "tpm_version", json_string(inventory_tpm_version(root)));
	*ret_inv = inv;
	return 0;
}

static void md5_uuid(const char *s, char *buf, size_t size)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int dl = 0;

	EVP_Digest(s, strlen(s), d, &dl, EVP_md5(), NULL);
	snprintf(buf, size, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13],
		 d[14], d[15]);
}

void inventory_host_id(const char *root, char *buf, size_t size)
{
	char v[256];
	char **nics = NULL;
	char best[32] = "";
	int n;

	if (read_line(root, "/sys/class/dmi/id/board_serial", v, sizeof(v)) == 0 && v[0] &&
	    strcasecmp(v, "unknown") != 0 && strcasecmp(v, "none") != 0) {
		md5_uuid(v, buf, size);
		return;
	}
	if (read_line(root, "/sys/class/dmi/id/product_uuid", v, sizeof(v)) == 0 && v[0] &&
	    strcasecmp(v, "unknown") != 0 && strcmp(v, "00000000-0000-0000-0000-000000000000") != 0 &&
	    strcasecmp(v, "03000200-0400-0500-0006-000700080009") != 0) {
		for (char *p = v; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		snprintf(buf, size, "%s", v);
		return;
	}
	n = list_dir(root, "/sys/class/net", &nics);
	for (int i = 0; i < n; i++) {
		char rel[PATH_MAX], mac[32];
		if (strcmp(nics[i], "lo") == 0)
			continue;
		snprintf(rel, sizeof(rel), "/sys/class/net/%s/address", nics[i]);
		if (read_line(root, rel, mac, sizeof(mac)) == 0 && mac[0] &&
		    strcmp(mac, "00:00:00:00:00:00") != 0 && (!best[0] || strcmp(mac, best) < 0))
			snprintf(best, sizeof(best), "%s", mac);
	}
	if (n > 0)
		free_list(nics, n);
	if (best[0])
		md5_uuid(best, buf, size);
	else
		snprintf(buf, size, "deaddead-dead-dead-dead-deaddeaddead");
}
