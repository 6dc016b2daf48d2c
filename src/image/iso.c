/* iso.c - CoreOS live ISO embed areas: a small, defensive ISO9660 reader that
 * finds files by path, the Ignition payload (gzip newc cpio) builder and
 * extractor, and the overlays that stream an ISO or a PXE initrd with the
 * payload in place.  See iso.h for the API and spec/image.md section 1. */
#include "image/iso.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define SYSTEM_AREA_END 32768u
#define VD_MAX 64 /* volume descriptors scanned before giving up */
#define DIR_REC_MIN 34
#define PATH_MAX_LEN 1024
#define PATH_MAX_DEPTH 16
#define IGNINFO_MAX 65536
#define LEGACY_HDR_OFF 32744u
#define INITRD_TAIL_MAX (64u * 1024 * 1024)
#define CPIO_HDR_LEN 110
#define CPIO_TRAILER "TRAILER!!!"

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* pread exactly len bytes: 0, -EIO on an I/O error, -ENODATA at end of file. */
static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	unsigned char *p = buf;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		if (n == 0)
			return -ENODATA;
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/* ---- ISO9660 reader ---- */

struct iso_ctx {
	int fd;
	uint64_t file_size;
	uint32_t root_lba;
	uint32_t root_size;
	unsigned char pvd[ISO_SECTOR_SIZE];
};

/* One directory record, decoded. */
struct dir_rec {
	uint32_t lba;
	uint32_t size;
	uint8_t flags;
};

static int read_err(ah_err *err, int r, const char *what)
{
	if (r == -ENODATA)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "malformed ISO image: %s lies past the end of the file", what);
	return ah_err_set(err, r, 500, "InternalError", "reading ISO image (%s): %s", what,
			  strerror(-r));
}

static int extent_check(const struct iso_ctx *c, uint32_t lba, uint64_t size, const char *what,
			ah_err *err)
{
	uint64_t start = (uint64_t)lba * ISO_SECTOR_SIZE;

	if (start > c->file_size || size > c->file_size - start)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "malformed ISO image: %s extends past the end of the file", what);
	return 0;
}

static int iso_ctx_open(int fd, struct iso_ctx *c, ah_err *err)
{
	struct stat st;
	bool found = false;
	int r;

	memset(c, 0, sizeof(*c));
	c->fd = fd;
	if (fstat(fd, &st) < 0)
		return ah_err_set(err, -errno, 500, "InternalError", "stat ISO image: %s",
				  strerror(errno));
	c->file_size = (uint64_t)st.st_size;
	if (c->file_size < SYSTEM_AREA_END + ISO_SECTOR_SIZE)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "not an ISO9660 image: file is too small");
	for (unsigned i = 0; i < VD_MAX; i++) {
		unsigned char *vd = c->pvd;
		r = pread_full(fd, vd, ISO_SECTOR_SIZE, SYSTEM_AREA_END + (uint64_t)i * ISO_SECTOR_SIZE);
		if (r < 0)
			return read_err(err, r, "volume descriptor");
		if (memcmp(vd + 1, "CD001", 5) != 0)
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "not an ISO9660 image: bad volume descriptor magic");
		if (vd[0] == 255)
			break;
		if (vd[0] == 1) {
			if (vd[6] != 1)
				return ah_err_set(err, -EINVAL, 500, "InternalError",
						  "malformed ISO image: primary volume descriptor version %u",
						  vd[6]);
			found = true;
			break;
		}
	}
	if (!found)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "not an ISO9660 image: no primary volume descriptor");
	if ((uint64_t)le32(c->pvd + 80) * ISO_SECTOR_SIZE > c->file_size)
		return ah_err_set(err, -EINVAL, 500, "InternalError", "ISO image is incomplete");
	const unsigned char *root = c->pvd + 156;
	if (root[0] < DIR_REC_MIN || !(root[25] & 0x02))
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "malformed ISO image: bad root directory record");
	c->root_lba = le32(root + 2);
	c->root_size = le32(root + 10);
	return extent_check(c, c->root_lba, c->root_size, "root directory", err);
}

/* The Rock Ridge NM name of a directory record, if any, into nm (>= 256). */
static bool rr_name(const unsigned char *rec, size_t len, char *nm)
{
	size_t name_len = rec[32];
	size_t p = 33 + name_len + (name_len % 2 == 0 ? 1 : 0);
	size_t n = 0;
	bool found = false;

	while (p + 4 <= len) {
		size_t elen = rec[p + 2];
		if (elen < 4 || elen > len - p)
			break;
		if (rec[p] == 'S' && rec[p + 1] == 'T')
			break;
		if (rec[p] == 'N' && rec[p + 1] == 'M' && elen >= 5) {
			/* flags 0x02/0x04 mean "." and ".."; those are never looked up */
			size_t piece = elen - 5;
			if (n + piece > 255)
				return false;
			memcpy(nm + n, rec + p + 5, piece);
			n += piece;
			found = true;
		}
		p += elen;
	}
	nm[n] = '\0';
	return found && n > 0;
}

/* Does the plain ISO9660 name (name, n bytes) stand for component comp?
 * coreos-installer upper-cases the wanted name and truncates it to 8.3;
 * images written at higher ISO levels keep whole names, so accept both. */
static bool iso_name_matches(const unsigned char *name, size_t n, const char *comp)
{
	char iso[256], want[16];
	const char *dot;
	size_t b, e;

	memcpy(iso, name, n);
	iso[n] = '\0';
	char *semi = strchr(iso, ';');
	if (semi)
		*semi = '\0';
	n = strlen(iso);
	while (n > 0 && iso[n - 1] == '.')
		iso[--n] = '\0';
	if (n == 0)
		return false;
	if (strcasecmp(iso, comp) == 0)
		return true;
	dot = strrchr(comp, '.');
	b = dot ? (size_t)(dot - comp) : strlen(comp);
	e = dot ? strlen(dot + 1) : 0;
	if (b > 8)
		b = 8;
	if (e > 3)
		e = 3;
	memcpy(want, comp, b);
	if (dot && e > 0) {
		want[b] = '.';
		memcpy(want + b + 1, dot + 1, e);
		want[b + 1 + e] = '\0';
	} else {
		want[b] = '\0';
	}
	return strcasecmp(iso, want) == 0;
}

/* Find comp in the directory at (lba, size). */
static int dir_lookup(const struct iso_ctx *c, uint32_t lba, uint32_t size, const char *comp,
		      struct dir_rec *ret, ah_err *err)
{
	unsigned char sec[ISO_SECTOR_SIZE];
	char nm[256];
	int r;

	r = extent_check(c, lba, size, "directory", err);
	if (r < 0)
		return r;
	if (size > ISO_READ_MAX)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "malformed ISO image: directory of %u bytes", size);
	for (uint32_t so = 0; so < size; so += ISO_SECTOR_SIZE) {
		size_t avail = size - so < ISO_SECTOR_SIZE ? size - so : ISO_SECTOR_SIZE;
		/* Read only the directory's own bytes: a short last sector may
		 * end the file. */
		memset(sec, 0, sizeof(sec));
		r = pread_full(c->fd, sec, avail, (uint64_t)lba * ISO_SECTOR_SIZE + so);
		if (r < 0)
			return read_err(err, r, "directory");
		size_t pos = 0;
		while (pos < avail) {
			const unsigned char *rec = sec + pos;
			size_t len = rec[0];
			if (len == 0)
				break; /* records never cross a sector: the rest is padding */
			if (len < DIR_REC_MIN || len > avail - pos)
				return ah_err_set(err, -EINVAL, 500, "InternalError",
						  "malformed ISO image: bad directory record length %zu",
						  len);
			size_t name_len = rec[32];
			if (33 + name_len > len)
				return ah_err_set(err, -EINVAL, 500, "InternalError",
						  "malformed ISO image: directory record name overflows");
			bool special = name_len == 1 && (rec[33] == 0 || rec[33] == 1);
			if (!special && name_len > 0 &&
			    ((rr_name(rec, len, nm) && strcmp(nm, comp) == 0) ||
			     iso_name_matches(rec + 33, name_len, comp))) {
				ret->lba = le32(rec + 2);
				ret->size = le32(rec + 10);
				ret->flags = rec[25];
				return 0;
			}
			pos += len;
		}
	}
	return -ENOENT;
}

static int iso_ctx_find(const struct iso_ctx *c, const char *path, struct iso_area *ret,
			ah_err *err)
{
	char buf[PATH_MAX_LEN];
	char *save = NULL, *comp;
	struct dir_rec cur = { c->root_lba, c->root_size, 0x02 };
	unsigned depth = 0;
	int r;

	if (strlen(path) >= sizeof(buf))
		return ah_err_set(err, -EINVAL, 500, "InternalError", "ISO path too long");
	strcpy(buf, path);
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		if (++depth > PATH_MAX_DEPTH || strlen(comp) > 255)
			return ah_err_set(err, -EINVAL, 500, "InternalError", "ISO path too deep");
		if (!(cur.flags & 0x02))
			return ah_err_set(err, -ENOENT, 404, "NotFound",
					  "%s not found in the ISO image", path);
		r = dir_lookup(c, cur.lba, cur.size, comp, &cur, err);
		if (r == -ENOENT)
			return ah_err_set(err, -ENOENT, 404, "NotFound",
					  "%s not found in the ISO image", path);
		if (r < 0)
			return r;
	}
	if (depth == 0 || (cur.flags & 0x02))
		return ah_err_set(err, -EISDIR, 500, "InternalError",
				  "%s is a directory in the ISO image", path);
	if (cur.flags & 0x80)
		return ah_err_set(err, -ENOTSUP, 500, "InternalError",
				  "%s is a multi-extent file in the ISO image", path);
	r = extent_check(c, cur.lba, cur.size, path, err);
	if (r < 0)
		return r;
	ret->offset = (uint64_t)cur.lba * ISO_SECTOR_SIZE;
	ret->length = cur.size;
	return 0;
}

int iso_find_file(int fd, const char *path, struct iso_area *ret, ah_err *err)
{
	struct iso_ctx c;
	int r = iso_ctx_open(fd, &c, err);

	if (r < 0)
		return r;
	return iso_ctx_find(&c, path, ret, err);
}

int iso_volume_id(int fd, char *buf, size_t size, ah_err *err)
{
	struct iso_ctx c;
	size_t n = 32;
	int r = iso_ctx_open(fd, &c, err);

	if (r < 0)
		return r;
	if (size < 33)
		return -EINVAL;
	while (n > 0 && (c.pvd[40 + n - 1] == ' ' || c.pvd[40 + n - 1] == '\0'))
		n--;
	memcpy(buf, c.pvd + 40, n);
	buf[n] = '\0';
	return 0;
}

static int json_u64(json_t *o, const char *key, uint64_t *ret, ah_err *err)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json: %s must be a non-negative integer", key);
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

/* Area from igninfo.json (spec 1.2 step 1). */
static int area_from_igninfo(const struct iso_ctx *c, const struct iso_area *info,
			     struct iso_area *ret, ah_err *err)
{
	char *text;
	json_t *root;
	json_error_t jerr;
	struct iso_area file;
	uint64_t off = 0, len = 0;
	int r;

	if (info->length > IGNINFO_MAX)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json is too large");
	text = malloc(info->length + 1);
	if (!text)
		return -ENOMEM;
	r = pread_full(c->fd, text, info->length, info->offset);
	if (r < 0) {
		free(text);
		return read_err(err, r, "coreos/igninfo.json");
	}
	root = json_loadb(text, info->length, 0, &jerr);
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json is not a JSON object");
	}
	const char *path = json_string_value(json_object_get(root, "file"));
	if (!path) {
		json_decref(root);
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json: missing \"file\"");
	}
	r = json_u64(root, "offset", &off, err);
	if (r == 0)
		r = json_u64(root, "length", &len, err);
	if (r == 0)
		r = iso_ctx_find(c, path, &file, err);
	json_decref(root);
	if (r < 0)
		return r;
	if (off > file.length)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json: offset past the end of the file");
	if (len == 0)
		len = file.length - off;
	if (len > file.length - off)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "coreos/igninfo.json: area past the end of the file");
	ret->offset = file.offset + off;
	ret->length = len;
	return 0;
}

int iso_find_embed_area(int fd, struct iso_area *ret, ah_err *err)
{
	struct iso_ctx c;
	struct iso_area a, info;
	unsigned char hdr[24];
	int r;

	r = iso_ctx_open(fd, &c, err);
	if (r < 0)
		return r;
	r = iso_ctx_find(&c, "coreos/igninfo.json", &info, err);
	if (r == 0) {
		r = area_from_igninfo(&c, &info, &a, err);
		if (r < 0)
			return r;
		*ret = a;
		return 0;
	}
	if (r != -ENOENT)
		return r;
	r = iso_ctx_find(&c, "images/ignition.img", &a, err);
	if (r == 0) {
		ah_err_clear(err);
		*ret = a;
		return 0;
	}
	if (r != -ENOENT)
		return r;
	/* Legacy header in the last 24 bytes of the System Area (spec 1.2). */
	r = pread_full(fd, hdr, sizeof(hdr), LEGACY_HDR_OFF);
	if (r < 0)
		return read_err(err, r, "legacy header");
	if (memcmp(hdr, "coreiso+", 8) == 0) {
		a.offset = le64(hdr + 8);
		a.length = le64(hdr + 16);
		if (a.offset < SYSTEM_AREA_END || a.offset > c.file_size ||
		    a.length > c.file_size - a.offset || a.length == 0)
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "malformed ISO image: bad coreiso+ header");
		ah_err_clear(err);
		*ret = a;
		return 0;
	}
	return ah_err_set(err, -ENOENT, 500, "InternalError",
			  "the ISO image has no Ignition embed area");
}

/* ---- payload: newc cpio + gzip ---- */

static size_t pad4(size_t n)
{
	return (4 - (n & 3)) & 3;
}

/* Append one newc entry (header, name, data) at out; returns bytes written. */
static size_t cpio_entry(unsigned char *out, unsigned ino, unsigned mode, const char *name,
			 const void *data, size_t size)
{
	char hdr[CPIO_HDR_LEN + 1];
	size_t namesize = strlen(name) + 1, n = 0;

	snprintf(hdr, sizeof(hdr),
		 "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", ino, mode, 0u,
		 0u, 1u, 0u, (unsigned)size, 0u, 0u, 0u, 0u, (unsigned)namesize, 0u);
	memcpy(out, hdr, CPIO_HDR_LEN);
	n = CPIO_HDR_LEN;
	memcpy(out + n, name, namesize);
	n += namesize;
	memset(out + n, 0, pad4(n));
	n += pad4(n);
	if (size > 0) {
		memcpy(out + n, data, size);
		n += size;
		memset(out + n, 0, pad4(n));
		n += pad4(n);
	}
	return n;
}

int ignition_payload_build(const char *ign, size_t len, unsigned char **ret, size_t *ret_len,
			   ah_err *err)
{
	unsigned char *cpio = NULL, *gz = NULL;
	size_t clen, cap;
	z_stream zs;
	gz_header gh;
	int r;

	if (len > ISO_READ_MAX)
		return ah_err_set(err, -EINVAL, 400, "BadRequest",
				  "ignition config of %zu bytes is too large", len);
	cap = 2 * (CPIO_HDR_LEN + 16) + len + 8;
	cpio = malloc(cap);
	if (!cpio)
		return -ENOMEM;
	clen = cpio_entry(cpio, 1, 0100644, "config.ign", ign, len);
	clen += cpio_entry(cpio + clen, 0, 0, CPIO_TRAILER, NULL, 0);

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		free(cpio);
		return -ENOMEM;
	}
	/* Go's gzip writer: mtime 0, no name, OS 255 ("unknown"). */
	memset(&gh, 0, sizeof(gh));
	gh.os = 255;
	deflateSetHeader(&zs, &gh);
	cap = deflateBound(&zs, clen) + 4;
	gz = malloc(cap);
	if (!gz) {
		deflateEnd(&zs);
		free(cpio);
		return -ENOMEM;
	}
	zs.next_in = cpio;
	zs.avail_in = (uInt)clen;
	zs.next_out = gz;
	zs.avail_out = (uInt)(cap - 4);
	r = deflate(&zs, Z_FINISH);
	size_t glen = zs.total_out;
	deflateEnd(&zs);
	free(cpio);
	if (r != Z_STREAM_END) {
		free(gz);
		return ah_err_set(err, -EIO, 500, "InternalError", "gzip failed");
	}
	memset(gz + glen, 0, pad4(glen));
	glen += pad4(glen);
	*ret = gz;
	*ret_len = glen;
	return 0;
}

static int too_big(ah_err *err, size_t len, uint64_t max, int status)
{
	return ah_err_set(err, -E2BIG, status, status == 400 ? "BadRequest" : "InternalError",
			  "The ignition archive size (%d KiB) is over the maximum allowable size (%d KiB)",
			  (int)(len / 1024), (int)(max / 1024));
}

int ignition_payload_check_size(size_t archive_len, ah_err *err)
{
	return ignition_payload_check_area(archive_len, ISO_IGNITION_AREA_SIZE, err);
}

int ignition_payload_check_area(size_t archive_len, uint64_t area_len, ah_err *err)
{
	if (archive_len > area_len)
		return too_big(err, archive_len, area_len, 400);
	return 0;
}

/* Parse hex field i (0 = ino) of the newc header at h; -1 if not hex. */
static int64_t cpio_field(const unsigned char *h, int i)
{
	uint32_t v = 0;

	for (int k = 0; k < 8; k++) {
		unsigned char ch = h[6 + 8 * i + k];
		int d;
		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else
			return -1;
		v = v << 4 | (uint32_t)d;
	}
	return v;
}

/* Find the last regular file config.ign in concatenated newc archives. */
static int cpio_find_config(const unsigned char *buf, size_t len, const unsigned char **ret,
			    size_t *ret_len, ah_err *err)
{
	size_t pos = 0;
	bool found = false;

	while (pos < len) {
		if (buf[pos] == 0) {
			pos++;
			continue;
		}
		if (len - pos < CPIO_HDR_LEN ||
		    (memcmp(buf + pos, "070701", 6) != 0 && memcmp(buf + pos, "070702", 6) != 0))
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "malformed cpio archive in the embed area");
		int64_t mode = cpio_field(buf + pos, 1);
		int64_t fsize = cpio_field(buf + pos, 6);
		int64_t nsize = cpio_field(buf + pos, 11);
		if (mode < 0 || fsize < 0 || nsize < 1)
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "malformed cpio header in the embed area");
		size_t name_at = pos + CPIO_HDR_LEN;
		if ((uint64_t)nsize > len - name_at || buf[name_at + nsize - 1] != '\0')
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "malformed cpio name in the embed area");
		const char *name = (const char *)buf + name_at;
		size_t data_at = name_at + (size_t)nsize;
		data_at += pad4(data_at);
		if (data_at > len || (uint64_t)fsize > len - data_at)
			return ah_err_set(err, -EINVAL, 500, "InternalError",
					  "truncated cpio member in the embed area");
		if (strcmp(name, "config.ign") == 0 && (mode & 0170000) == 0100000) {
			*ret = buf + data_at;
			*ret_len = (size_t)fsize;
			found = true;
		}
		pos = data_at + (size_t)fsize;
		pos += pad4(pos);
	}
	if (!found)
		return ah_err_set(err, -ENOENT, 404, "NotFound", "no config.ign in the embed area");
	return 0;
}

/* Decompress the gzip members in area (NULs between them skipped). */
static int gunzip_members(const unsigned char *area, size_t len, unsigned char **ret,
			  size_t *ret_len, ah_err *err)
{
	size_t cap = 65536, out_len = 0, pos = 0;
	unsigned char *out = malloc(cap);
	int r = 0;

	if (!out)
		return -ENOMEM;
	while (pos < len) {
		if (area[pos] == 0) {
			pos++;
			continue;
		}
		if (len - pos < 2 || area[pos] != 0x1f || area[pos + 1] != 0x8b) {
			r = ah_err_set(err, -EINVAL, 500, "InternalError",
				       "embed area holds data that is not gzip");
			goto fail;
		}
		z_stream zs;
		memset(&zs, 0, sizeof(zs));
		if (inflateInit2(&zs, 15 + 16) != Z_OK) {
			r = -ENOMEM;
			goto fail;
		}
		zs.next_in = (unsigned char *)area + pos;
		zs.avail_in = (uInt)(len - pos);
		int zr;
		do {
			if (out_len == cap) {
				if (cap >= ISO_READ_MAX) {
					inflateEnd(&zs);
					r = ah_err_set(err, -EINVAL, 500, "InternalError",
						       "embed area decompresses to over %u bytes",
						       ISO_READ_MAX);
					goto fail;
				}
				unsigned char *n = realloc(out, cap * 2);
				if (!n) {
					inflateEnd(&zs);
					r = -ENOMEM;
					goto fail;
				}
				out = n;
				cap *= 2;
			}
			zs.next_out = out + out_len;
			zs.avail_out = (uInt)(cap - out_len);
			zr = inflate(&zs, Z_NO_FLUSH);
			out_len = cap - zs.avail_out;
		} while (zr == Z_OK);
		pos = len - zs.avail_in;
		inflateEnd(&zs);
		if (zr != Z_STREAM_END) {
			r = ah_err_set(err, -EINVAL, 500, "InternalError",
				       "corrupt gzip data in the embed area");
			goto fail;
		}
	}
	*ret = out;
	*ret_len = out_len;
	return 0;
fail:
	free(out);
	return r;
}

int ignition_payload_extract(const unsigned char *area, size_t len, char **ret_json,
			     size_t *ret_len, ah_err *err)
{
	size_t start = 0;
	unsigned char *raw = NULL;
	size_t raw_len = 0;
	const unsigned char *cfg;
	size_t cfg_len;
	int r;

	/* zlib counts input in 32-bit units. */
	if (len > UINT32_MAX)
		return ah_err_set(err, -E2BIG, 500, "InternalError", "embed area is too large");
	while (start < len && area[start] == 0)
		start++;
	if (start == len)
		return ah_err_set(err, -ENOENT, 404, "NotFound", "the embed area is empty");
	if (len - start >= 6 && memcmp(area + start, "\xfd" "7zXZ", 5) == 0)
		return ah_err_set(err, -ENOTSUP, 500, "InternalError",
				  "xz-compressed embed areas are not supported");
	if (len - start >= 4 && memcmp(area + start, "\x28\xb5\x2f\xfd", 4) == 0)
		return ah_err_set(err, -ENOTSUP, 500, "InternalError",
				  "zstd-compressed embed areas are not supported");
	if (len - start >= 6 && memcmp(area + start, "0707", 4) == 0) {
		r = cpio_find_config(area, len, &cfg, &cfg_len, err);
	} else {
		r = gunzip_members(area, len, &raw, &raw_len, err);
		if (r < 0)
			return r;
		r = cpio_find_config(raw, raw_len, &cfg, &cfg_len, err);
	}
	if (r == 0) {
		char *s = malloc(cfg_len + 1);
		if (!s) {
			r = -ENOMEM;
		} else {
			memcpy(s, cfg, cfg_len);
			s[cfg_len] = '\0';
			*ret_json = s;
			*ret_len = cfg_len;
		}
	}
	free(raw);
	return r;
}

int iso_extract_ignition(int fd, char **ret_json, size_t *ret_len, ah_err *err)
{
	struct iso_area a;
	unsigned char *buf;
	int r;

	r = iso_find_embed_area(fd, &a, err);
	if (r < 0)
		return r;
	if (a.length > ISO_READ_MAX)
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "embed area of %llu bytes is too large",
				  (unsigned long long)a.length);
	buf = malloc(a.length ? a.length : 1);
	if (!buf)
		return -ENOMEM;
	r = pread_full(fd, buf, a.length, a.offset);
	if (r < 0)
		r = read_err(err, r, "embed area");
	else
		r = ignition_payload_extract(buf, a.length, ret_json, ret_len, err);
	free(buf);
	return r;
}

/* ---- overlays ---- */

struct iso_overlay {
	int fd;
	bool own_fd;
	uint64_t size;
	struct iso_area area;
	size_t plen;
	unsigned char payload[];
};

static int open_ro(const char *path, ah_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ah_err_set(err, -errno, 500, "InternalError", "open %s: %s", path,
				  strerror(errno));
	return fd;
}

int iso_overlay_open_fd(int fd, const unsigned char *payload, size_t plen,
			struct iso_overlay **ret, ah_err *err)
{
	struct iso_ctx c;
	struct iso_area a;
	struct iso_overlay *ov;
	int r;

	r = iso_find_embed_area(fd, &a, err);
	if (r < 0)
		return r;
	if (plen > a.length)
		return too_big(err, plen, a.length, 500);
	r = iso_ctx_open(fd, &c, err);
	if (r < 0)
		return r;
	ov = malloc(sizeof(*ov) + plen);
	if (!ov)
		return -ENOMEM;
	ov->fd = fd;
	ov->own_fd = false;
	ov->size = c.file_size;
	ov->area = a;
	ov->plen = plen;
	if (plen)
		memcpy(ov->payload, payload, plen);
	*ret = ov;
	return 0;
}

int iso_overlay_open(const char *iso_path, const unsigned char *payload, size_t plen,
		     struct iso_overlay **ret, ah_err *err)
{
	struct iso_overlay *ov;
	int fd = open_ro(iso_path, err);
	int r;

	if (fd < 0)
		return fd;
	r = iso_overlay_open_fd(fd, payload, plen, &ov, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	ov->own_fd = true;
	*ret = ov;
	return 0;
}

uint64_t iso_overlay_size(const struct iso_overlay *ov)
{
	return ov->size;
}

struct iso_area iso_overlay_area(const struct iso_overlay *ov)
{
	return ov->area;
}

static ssize_t base_read(int fd, uint64_t off, void *buf, size_t len)
{
	int r = pread_full(fd, buf, len, off);

	return r < 0 ? -EIO : (ssize_t)len;
}

ssize_t iso_overlay_read(struct iso_overlay *ov, uint64_t off, void *buf, size_t len)
{
	unsigned char *out = buf;
	uint64_t a0 = ov->area.offset, p1 = a0 + ov->plen, a1 = a0 + ov->area.length;
	size_t done = 0;

	if (off >= ov->size)
		return 0;
	if (len > ov->size - off)
		len = (size_t)(ov->size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t cur = off + done;
		size_t n = len - done;
		if (cur < a0) {
			if (n > a0 - cur)
				n = (size_t)(a0 - cur);
			if (base_read(ov->fd, cur, out + done, n) < 0)
				return -EIO;
		} else if (cur < p1) {
			if (n > p1 - cur)
				n = (size_t)(p1 - cur);
			memcpy(out + done, ov->payload + (cur - a0), n);
		} else if (cur < a1) {
			if (n > a1 - cur)
				n = (size_t)(a1 - cur);
			memset(out + done, 0, n);
		} else if (base_read(ov->fd, cur, out + done, n) < 0) {
			return -EIO;
		}
		done += n;
	}
	return (ssize_t)done;
}

void iso_overlay_free(struct iso_overlay *ov)
{
	if (!ov)
		return;
	if (ov->own_fd)
		close(ov->fd);
	free(ov);
}

struct initrd_overlay {
	int fd;
	bool own_fd;
	struct iso_area initrd;
	size_t tlen;
	unsigned char tail[];
};

int initrd_overlay_open_fd(int fd, const unsigned char *tail, size_t tlen,
			   struct initrd_overlay **ret, ah_err *err)
{
	struct iso_area a;
	struct initrd_overlay *ov;
	int r;

	if (tlen > INITRD_TAIL_MAX)
		return ah_err_set(err, -E2BIG, 500, "InternalError",
				  "initrd tail of %zu bytes is too large", tlen);
	r = iso_find_file(fd, "images/pxeboot/initrd.img", &a, err);
	if (r < 0)
		return r;
	ov = malloc(sizeof(*ov) + tlen);
	if (!ov)
		return -ENOMEM;
	ov->fd = fd;
	ov->own_fd = false;
	ov->initrd = a;
	ov->tlen = tlen;
	if (tlen)
		memcpy(ov->tail, tail, tlen);
	*ret = ov;
	return 0;
}

int initrd_overlay_open(const char *iso_path, const unsigned char *tail, size_t tlen,
			struct initrd_overlay **ret, ah_err *err)
{
	struct initrd_overlay *ov;
	int fd = open_ro(iso_path, err);
	int r;

	if (fd < 0)
		return fd;
	r = initrd_overlay_open_fd(fd, tail, tlen, &ov, err);
	if (r < 0) {
		close(fd);
		return r;
	}
	ov->own_fd = true;
	*ret = ov;
	return 0;
}

uint64_t initrd_overlay_size(const struct initrd_overlay *ov)
{
	return ov->initrd.length + ov->tlen;
}

ssize_t initrd_overlay_read(struct initrd_overlay *ov, uint64_t off, void *buf, size_t len)
{
	unsigned char *out = buf;
	uint64_t size = initrd_overlay_size(ov), blen = ov->initrd.length;
	size_t done = 0;

	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		uint64_t cur = off + done;
		size_t n = len - done;
		if (cur < blen) {
			if (n > blen - cur)
				n = (size_t)(blen - cur);
			if (base_read(ov->fd, ov->initrd.offset + cur, out + done, n) < 0)
				return -EIO;
		} else {
			memcpy(out + done, ov->tail + (cur - blen), n);
		}
		done += n;
	}
	return (ssize_t)done;
}

void initrd_overlay_free(struct initrd_overlay *ov)
{
	if (!ov)
		return;
	if (ov->own_fd)
		close(ov->fd);
	free(ov);
}
