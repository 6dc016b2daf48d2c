/* Tests for src/image/iso.c: finding files and the Ignition embed area in
 * the test ISO scripts/make-test-iso.sh builds, the gzip newc payload, the
 * ISO and PXE initrd overlays (checked against the base file and against
 * xorriso's own reading of a materialized ISO), and corrupt images.
 * Tests that need the ISO are skipped, with a note, when xorriso is absent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/util.h"
#include "image/iso.h"

static char tmpdir[64];
static char iso_path[128];
static unsigned char *iso_bytes; /* the pristine test ISO, whole */
static size_t iso_len;
static bool have_iso;

static const char *sample_ign =
	"{\"ignition\":{\"version\":\"3.1.0\"},\"passwd\":{\"users\":[{\"name\":\"core\","
	"\"sshAuthorizedKeys\":[\"ssh-ed25519 AAAA test\"]}]},\"storage\":{\"files\":[{"
	"\"path\":\"/etc/assisted/agent-installer\",\"mode\":420,\"contents\":{\"source\":"
	"\"data:,hello\"}}]}}";

/* The repository root: $MESON_SOURCE_ROOT, else derived from __FILE__, which
 * Meson gives relative to the build root: try it from the working directory,
 * then from the build root (this executable lives in <build>/tests/unit/). */
static void repo_root(char *buf, size_t size)
{
	const char *env = getenv("MESON_SOURCE_ROOT");
	const char *suffix = "tests/unit/image/test-iso.c";
	char rel[PATH_MAX], exe[PATH_MAX], probe_path[PATH_MAX * 2];

	if (env && *env) {
		snprintf(buf, size, "%s", env);
		return;
	}
	snprintf(rel, sizeof(rel), "%s", __FILE__);
	size_t n = strlen(rel), s = strlen(suffix);
	if (n >= s && strcmp(rel + n - s, suffix) == 0)
		rel[n - s] = '\0';
	if (rel[0] == '\0')
		snprintf(rel, sizeof(rel), ".");
	snprintf(buf, size, "%s", rel);
	snprintf(probe_path, sizeof(probe_path), "%s/scripts/make-test-iso.sh", rel);
	if (rel[0] == '/' || access(probe_path, R_OK) == 0)
		return;
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return;
	exe[l] = '\0';
	for (int up = 0; up < 3; up++) { /* drop the file name, unit/, tests/ */
		char *slash = strrchr(exe, '/');
		if (!slash)
			return;
		*slash = '\0';
	}
	snprintf(probe_path, sizeof(probe_path), "%s/%s", exe, rel);
	if (strlen(probe_path) < size)
		snprintf(buf, size, "%s", probe_path);
}

static int group_setup(void **state)
{
	char root[PATH_MAX], cmd[PATH_MAX + 256];

	strcpy(tmpdir, "/tmp/test-iso-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	snprintf(iso_path, sizeof(iso_path), "%s/discovery-test.iso", tmpdir);
	if (system("command -v xorriso >/dev/null 2>&1") != 0) {
		fprintf(stderr, "note: xorriso not found; the ISO tests are skipped\n");
		return 0;
	}
	repo_root(root, sizeof(root));
	snprintf(cmd, sizeof(cmd), "bash '%s/scripts/make-test-iso.sh' '%s'", root, tmpdir);
	if (system(cmd) != 0) {
		fprintf(stderr, "make-test-iso.sh failed: %s\n", cmd);
		return -1;
	}
	char *data;
	if (util_read_file(iso_path, &data, &iso_len) < 0)
		return -1;
	iso_bytes = (unsigned char *)data;
	have_iso = true;
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[256];

	free(iso_bytes);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

#define NEED_ISO()                                                                   \
	do {                                                                         \
		if (!have_iso)                                                       \
			skip();                                                      \
	} while (0)

static int open_iso(void)
{
	int fd = open(iso_path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void test_find_area(void **state)
{
	struct iso_area a;
	ah_err err = { 0 };
	int fd;

	NEED_ISO();
	fd = open_iso();
	assert_int_equal(iso_find_embed_area(fd, &a, &err), 0);
	assert_int_equal(a.offset % ISO_SECTOR_SIZE, 0);
	assert_true(a.offset >= 32768 + 2048);
	assert_int_equal(a.length, ISO_IGNITION_AREA_SIZE);
	for (uint64_t i = 0; i < a.length; i++)
		if (iso_bytes[a.offset + i] != 0)
			fail_msg("pristine area byte %llu is not zero", (unsigned long long)i);

	char vol[64];
	assert_int_equal(iso_volume_id(fd, vol, sizeof(vol), &err), 0);
	assert_string_equal(vol, "rhcos-test-discovery");
	close(fd);
}

static void test_find_file_rows(void **state)
{
	static const struct {
		const char *path;
		int want;
		long size; /* -1: any */
	} rows[] = {
		{ "images/ignition.img", 0, 262144 },
		{ "/images/ignition.img", 0, 262144 },
		{ "images/pxeboot/vmlinuz", 0, 4096 },
		{ "images/pxeboot/rootfs.img", 0, 8192 },
		{ "images/pxeboot/initrd.img", 0, -1 },
		{ "coreos/igninfo.json", 0, 32 },
		{ "coreos/kargs.json", 0, -1 },
		{ "EFI/fedora/grub.cfg", 0, -1 },
		{ "isolinux/isolinux.cfg", 0, -1 },
		/* plain ISO9660 names as coreos-installer matches them */
		{ "IMAGES/IGNITION.IMG", 0, 262144 },
		{ "COREOS/IGNINFO.JSO", 0, 32 },
		{ "images//pxeboot/vmlinuz", 0, 4096 },
		{ "images", -EISDIR, 0 },
		{ "/", -EISDIR, 0 },
		{ "", -EISDIR, 0 },
		{ "images/nope.img", -ENOENT, 0 },
		{ "nope/ignition.img", -ENOENT, 0 },
		{ "images/ignition.img/x", -ENOENT, 0 },
		{ "coreos/igninfo", -ENOENT, 0 },
	};
	int fd;

	NEED_ISO();
	fd = open_iso();
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct iso_area a = { 0, 0 };
		ah_err err = { 0 };
		int r = iso_find_file(fd, rows[i].path, &a, &err);
		if (r != rows[i].want)
			fail_msg("row %s: got %d want %d (%s)", rows[i].path, r, rows[i].want,
				 err.message);
		if (r == 0 && rows[i].size >= 0)
			assert_int_equal(a.length, rows[i].size);
		if (r == 0) {
			assert_int_equal(a.offset % ISO_SECTOR_SIZE, 0);
			assert_true(a.offset + a.length <= iso_len);
		} else {
			assert_true(err.message[0] != '\0');
		}
	}
	/* igninfo.json holds exactly what coreos-installer reads. */
	struct iso_area a;
	assert_int_equal(iso_find_file(fd, "coreos/igninfo.json", &a, NULL), 0);
	assert_memory_equal(iso_bytes + a.offset, "{\"file\": \"images/ignition.img\"}\n", 32);
	close(fd);
}

/* An ISO without Rock Ridge and without igninfo.json: the plain 8.3 names
 * and the /images/ignition.img fallback are what find the area. */
static void test_plain_iso_fallback(void **state)
{
	char stage[192], cmd[1024], path[256];
	struct iso_area a;
	ah_err err = { 0 };
	static unsigned char zeros[8192];

	NEED_ISO();
	snprintf(stage, sizeof(stage), "%s/plain", tmpdir);
	snprintf(path, sizeof(path), "%s/images", stage);
	assert_int_equal(mkdir(stage, 0755), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/images/ignition.img", stage);
	write_file(path, zeros, sizeof(zeros));
	snprintf(path, sizeof(path), "%s/plain.iso", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "xorriso -report_about SORRY -as mkisofs -quiet -o '%s' '%s' >/dev/null 2>&1",
		 path, stage);
	assert_int_equal(system(cmd), 0);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(iso_find_embed_area(fd, &a, &err), 0);
	assert_int_equal(a.length, sizeof(zeros));
	assert_int_equal(iso_find_file(fd, "coreos/igninfo.json", &a, &err), -ENOENT);
	char *json;
	size_t jl;
	assert_int_equal(iso_extract_ignition(fd, &json, &jl, &err), -ENOENT);
	close(fd);
}

/* Gunzip a whole buffer (test helper, independent of iso.c). */
static unsigned char *gunzip(const unsigned char *in, size_t len, size_t *out_len)
{
	size_t cap = 1 << 20;
	unsigned char *out = malloc(cap);
	z_stream zs;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*out_len = zs.total_out;
	/* only NUL padding may follow the gzip member */
	for (uInt i = 0; i < zs.avail_in; i++)
		assert_int_equal(zs.next_in[i], 0);
	inflateEnd(&zs);
	return out;
}

static void test_cpio_rows(void **state)
{
	static const char *configs[] = { "", "{", "{}", "{\"\"", "{\"a\"", "{\"a\":", NULL };
	char big[5000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 7; i++) {
		const char *cfg = configs[i] ? configs[i] : big;
		size_t clen = strlen(cfg), plen, rlen;
		unsigned char *payload;
		char want[256];
		ah_err err = { 0 };

		assert_int_equal(ignition_payload_build(cfg, clen, &payload, &plen, &err), 0);
		/* gzip header as Go writes it: deflate, no flags, mtime 0, OS 255 */
		assert_memory_equal(payload, "\x1f\x8b\x08\x00\x00\x00\x00\x00", 8);
		assert_int_equal(payload[9], 255);
		assert_int_equal(plen % 4, 0);

		unsigned char *raw = gunzip(payload, plen, &rlen);
		size_t data_at = 110 + 11 + 3; /* "config.ign\0" padded to 4 */
		size_t trailer_at = data_at + clen + ((4 - clen % 4) % 4);
		snprintf(want, sizeof(want),
			 "070701" "00000001" "000081A4" "00000000" "00000000" "00000001"
			 "00000000" "%08zX" "00000000" "00000000" "00000000" "00000000"
			 "0000000B" "00000000" "config.ign",
			 clen);
		assert_memory_equal(raw, want, 110 + 10);
		assert_memory_equal(raw + 120, "\0\0\0\0", data_at - 120);
		assert_memory_equal(raw + data_at, cfg, clen);
		for (size_t k = data_at + clen; k < trailer_at; k++)
			assert_int_equal(raw[k], 0);
		assert_int_equal(trailer_at % 4, 0);
		assert_memory_equal(raw + trailer_at,
				    "070701" "00000000" "00000000" "00000000" "00000000"
				    "00000001" "00000000" "00000000" "00000000" "00000000"
				    "00000000" "00000000" "0000000B" "00000000" "TRAILER!!!\0\0",
				    110 + 12);
		/* nothing after the trailer */
		assert_int_equal(rlen, trailer_at + 124);

		char *back;
		size_t blen;
		assert_int_equal(ignition_payload_extract(payload, plen, &back, &blen, &err), 0);
		assert_int_equal(blen, clen);
		assert_string_equal(back, cfg);
		free(back);
		free(raw);
		free(payload);
	}
}

static void test_payload_extract_rows(void **state)
{
	unsigned char area[1024];
	char *json;
	size_t jl;
	ah_err err = { 0 };

	memset(area, 0, sizeof(area));
	assert_int_equal(ignition_payload_extract(area, sizeof(area), &json, &jl, &err), -ENOENT);
	memcpy(area, "\xfd" "7zXZ\0", 6);
	assert_int_equal(ignition_payload_extract(area, sizeof(area), &json, &jl, &err),
			 -ENOTSUP);
	memcpy(area, "\x1f\x8b\x08\x00garbage", 11);
	assert_int_equal(ignition_payload_extract(area, sizeof(area), &json, &jl, &err), -EINVAL);
	memcpy(area, "hello", 5);
	assert_int_equal(ignition_payload_extract(area, sizeof(area), &json, &jl, &err), -EINVAL);

	/* Two payloads back to back: the last config.ign wins. */
	unsigned char *p1, *p2;
	size_t l1, l2;
	assert_int_equal(ignition_payload_build("{\"first\":1}", 11, &p1, &l1, &err), 0);
	assert_int_equal(ignition_payload_build("{\"second\":2}", 12, &p2, &l2, &err), 0);
	memset(area, 0, sizeof(area));
	memcpy(area, p1, l1);
	memcpy(area + l1 + 8, p2, l2);
	assert_int_equal(ignition_payload_extract(area, sizeof(area), &json, &jl, &err), 0);
	assert_string_equal(json, "{\"second\":2}");
	free(json);
	/* A truncated payload fails cleanly. */
	assert_int_equal(ignition_payload_extract(p1, l1 / 2, &json, &jl, &err), -EINVAL);
	free(p1);
	free(p2);
}

/* The expected overlaid image: base with payload + zeros in the area. */
static unsigned char *expected_image(const struct iso_area *a, const unsigned char *p, size_t plen)
{
	unsigned char *img = malloc(iso_len);
	memcpy(img, iso_bytes, iso_len);
	memset(img + a->offset, 0, a->length);
	memcpy(img + a->offset, p, plen);
	return img;
}

static unsigned char *read_all_random(struct iso_overlay *ov, unsigned seed)
{
	uint64_t size = iso_overlay_size(ov);
	unsigned char *out = malloc(size);
	uint64_t off = 0;

	srand(seed);
	while (off < size) {
		size_t n = (size_t)(rand() % 70000) + 1;
		if (rand() % 8 == 0)
			n = (size_t)(rand() % 7) + 1;
		ssize_t r = iso_overlay_read(ov, off, out + off, n);
		assert_true(r > 0);
		assert_true((size_t)r == n || off + (uint64_t)r == size);
		off += (uint64_t)r;
	}
	return out;
}

static void test_overlay_read(void **state)
{
	unsigned char *payload, *want, *got;
	size_t plen;
	struct iso_overlay *ov;
	struct iso_area a;
	ah_err err = { 0 };

	NEED_ISO();
	assert_int_equal(ignition_payload_build(sample_ign, strlen(sample_ign), &payload, &plen,
						&err),
			 0);
	assert_int_equal(iso_overlay_open(iso_path, payload, plen, &ov, &err), 0);
	assert_int_equal(iso_overlay_size(ov), iso_len);
	a = iso_overlay_area(ov);
	want = expected_image(&a, payload, plen);
	for (unsigned seed = 1; seed <= 3; seed++) {
		got = read_all_random(ov, seed);
		assert_memory_equal(got, want, iso_len);
		free(got);
	}
	/* random positioned reads, including ones across the area's edges */
	unsigned char buf[9000];
	srand(7);
	for (int i = 0; i < 2000; i++) {
		uint64_t off;
		switch (i % 4) {
		case 0: off = a.offset - (uint64_t)(rand() % 4096); break;
		case 1: off = a.offset + plen - (uint64_t)(rand() % 4096); break;
		case 2: off = a.offset + a.length - (uint64_t)(rand() % 4096); break;
		default: off = (uint64_t)rand() % iso_len; break;
		}
		size_t n = (size_t)(rand() % (int)sizeof(buf)) + 1;
		ssize_t r = iso_overlay_read(ov, off, buf, n);
		size_t expect = off + n > iso_len ? iso_len - off : n;
		assert_int_equal(r, (ssize_t)expect);
		assert_memory_equal(buf, want + off, expect);
	}
	/* at and past the end */
	assert_int_equal(iso_overlay_read(ov, iso_len, buf, 10), 0);
	assert_int_equal(iso_overlay_read(ov, iso_len + 12345, buf, 10), 0);
	assert_int_equal(iso_overlay_read(ov, iso_len - 3, buf, 10), 3);
	assert_int_equal(iso_overlay_read(ov, 0, buf, 0), 0);

	/* materialized: iso_extract_ignition and xorriso read it back */
	char out_iso[192], out_img[192], cmd[1024];
	snprintf(out_iso, sizeof(out_iso), "%s/overlaid.iso", tmpdir);
	snprintf(out_img, sizeof(out_img), "%s/extracted.img", tmpdir);
	write_file(out_iso, want, iso_len);
	int fd = open(out_iso, O_RDONLY);
	char *json;
	size_t jl;
	assert_int_equal(iso_extract_ignition(fd, &json, &jl, &err), 0);
	assert_string_equal(json, sample_ign);
	free(json);
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "xorriso -report_about SORRY -indev '%s' -osirrox on -extract /images/ignition.img "
		 "'%s' >/dev/null 2>&1",
		 out_iso, out_img);
	assert_int_equal(system(cmd), 0);
	char *img;
	size_t img_len;
	assert_int_equal(util_read_file(out_img, &img, &img_len), 0);
	assert_int_equal(img_len, a.length);
	assert_memory_equal(img, payload, plen);
	for (size_t i = plen; i < img_len; i++)
		assert_int_equal(img[i], 0);
	free(img);

	/* the pristine ISO has nothing to extract */
	fd = open_iso();
	assert_int_equal(iso_extract_ignition(fd, &json, &jl, &err), -ENOENT);
	close(fd);

	iso_overlay_free(ov);
	free(want);
	free(payload);
}

struct reader_arg {
	struct iso_overlay *ov;
	const unsigned char *want;
	unsigned seed;
	int bad;
};

static void *reader(void *p)
{
	struct reader_arg *ra = p;
	unsigned char buf[65536];
	unsigned seed = ra->seed;

	for (int i = 0; i < 500; i++) {
		uint64_t off = (uint64_t)rand_r(&seed) % iso_len;
		size_t n = (size_t)rand_r(&seed) % sizeof(buf) + 1;
		ssize_t r = iso_overlay_read(ra->ov, off, buf, n);
		size_t expect = off + n > iso_len ? iso_len - off : n;
		if (r != (ssize_t)expect || memcmp(buf, ra->want + off, expect) != 0)
			ra->bad++;
	}
	return NULL;
}

/* Several threads read one overlay, sharing one base fd. */
static void test_overlay_threads(void **state)
{
	unsigned char *payload, *want;
	size_t plen;
	struct iso_overlay *ov;
	struct iso_area a;
	pthread_t th[4];
	struct reader_arg ra[4];
	ah_err err = { 0 };

	NEED_ISO();
	assert_int_equal(ignition_payload_build(sample_ign, strlen(sample_ign), &payload, &plen,
						&err),
			 0);
	int fd = open_iso();
	assert_int_equal(iso_overlay_open_fd(fd, payload, plen, &ov, &err), 0);
	a = iso_overlay_area(ov);
	want = expected_image(&a, payload, plen);
	for (int i = 0; i < 4; i++) {
		ra[i] = (struct reader_arg){ ov, want, (unsigned)i + 100, 0 };
		assert_int_equal(pthread_create(&th[i], NULL, reader, &ra[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(ra[i].bad, 0);
	}
	iso_overlay_free(ov);
	/* the fd stays the caller's */
	assert_true(fcntl(fd, F_GETFD) >= 0);
	close(fd);
	free(want);
	free(payload);
}

static void test_too_big(void **state)
{
	struct iso_overlay *ov = NULL;
	ah_err err = { 0 };
	unsigned char *big = calloc(1, ISO_IGNITION_AREA_SIZE + 2048);

	/* the pure size check, as assisted-service runs it */
	static const struct {
		size_t len;
		int want;
		const char *msg;
	} rows[] = {
		{ 0, 0, NULL },
		{ 262144, 0, NULL },
		{ 262145, -E2BIG,
		  "The ignition archive size (256 KiB) is over the maximum allowable size (256 KiB)" },
		{ 300 * 1024 + 5, -E2BIG,
		  "The ignition archive size (300 KiB) is over the maximum allowable size (256 KiB)" },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ah_err e = { 0 };
		assert_int_equal(ignition_payload_check_size(rows[i].len, &e), rows[i].want);
		if (rows[i].msg) {
			assert_string_equal(e.message, rows[i].msg);
			assert_int_equal(e.status, 400);
		}
	}

	NEED_ISO();
	assert_int_equal(iso_overlay_open(iso_path, big, ISO_IGNITION_AREA_SIZE + 1, &ov, &err),
			 -E2BIG);
	assert_null(ov);
	assert_string_equal(err.message, "The ignition archive size (256 KiB) is over the "
					 "maximum allowable size (256 KiB)");
	assert_int_equal(iso_overlay_open(iso_path, big, ISO_IGNITION_AREA_SIZE + 2048, &ov, &err),
			 -E2BIG);
	assert_string_equal(err.message, "The ignition archive size (258 KiB) is over the "
					 "maximum allowable size (256 KiB)");
	/* exactly the area fits, and then no zero fill is left */
	memset(big, 0xAB, ISO_IGNITION_AREA_SIZE);
	assert_int_equal(iso_overlay_open(iso_path, big, ISO_IGNITION_AREA_SIZE, &ov, &err), 0);
	struct iso_area a = iso_overlay_area(ov);
	unsigned char b[4];
	assert_int_equal(iso_overlay_read(ov, a.offset + a.length - 2, b, 4), 4);
	assert_memory_equal(b, "\xab\xab", 2);
	assert_memory_equal(b + 2, iso_bytes + a.offset + a.length, 2);
	iso_overlay_free(ov);
	assert_int_equal(iso_overlay_open("/nonexistent.iso", big, 1, &ov, &err), -ENOENT);
	free(big);
}

/* The same check against the embed area a given ISO really has. */
static void test_check_area_rows(void **state)
{
	static const struct {
		size_t len;
		uint64_t area;
		int want;
		const char *msg;
	} rows[] = {
		{ 0, ISO_IGNITION_AREA_SIZE, 0, NULL },
		{ ISO_IGNITION_AREA_SIZE, ISO_IGNITION_AREA_SIZE, 0, NULL },
		{ ISO_IGNITION_AREA_SIZE + 1, ISO_IGNITION_AREA_SIZE, -E2BIG,
		  "The ignition archive size (256 KiB) is over the maximum allowable size (256 KiB)" },
		/* a grown area (image.md 1.5) holds more */
		{ 400 * 1024, 512 * 1024, 0, NULL },
		{ 600 * 1024 + 1023, 512 * 1024, -E2BIG,
		  "The ignition archive size (600 KiB) is over the maximum allowable size (512 KiB)" },
		/* s390x-style window smaller than a KiB rounds down, as upstream's integer division */
		{ 1024, 1023, -E2BIG,
		  "The ignition archive size (1 KiB) is over the maximum allowable size (0 KiB)" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ah_err e = { 0 };

		assert_int_equal(ignition_payload_check_area(rows[i].len, rows[i].area, &e), rows[i].want);
		if (rows[i].msg) {
			assert_string_equal(e.message, rows[i].msg);
			assert_int_equal(e.status, 400);
		}
	}
}

static void test_initrd_overlay(void **state)
{
	unsigned char *payload;
	size_t plen;
	struct initrd_overlay *ov;
	struct iso_area in;
	ah_err err = { 0 };
	int fd;

	NEED_ISO();
	assert_int_equal(ignition_payload_build(sample_ign, strlen(sample_ign), &payload, &plen,
						&err),
			 0);
	fd = open_iso();
	assert_int_equal(iso_find_file(fd, "images/pxeboot/initrd.img", &in, &err), 0);
	close(fd);
	assert_int_equal(initrd_overlay_open(iso_path, payload, plen, &ov, &err), 0);
	uint64_t size = initrd_overlay_size(ov);
	assert_int_equal(size, in.length + plen);
	unsigned char *got = malloc(size);
	uint64_t off = 0;
	srand(3);
	while (off < size) {
		size_t n = (size_t)(rand() % 97) + 1;
		ssize_t r = initrd_overlay_read(ov, off, got + off, n);
		assert_true(r > 0);
		off += (uint64_t)r;
	}
	assert_memory_equal(got, iso_bytes + in.offset, in.length);
	assert_memory_equal(got + in.length, payload, plen);
	assert_int_equal(initrd_overlay_read(ov, size, got, 1), 0);
	/* the kernel sees two concatenated gzip cpio archives; so do we */
	char *json;
	size_t jl;
	assert_int_equal(ignition_payload_extract(got, size, &json, &jl, &err), 0);
	assert_string_equal(json, sample_ign);
	free(json);
	initrd_overlay_free(ov);
	free(got);
	free(payload);
}

/* Write a mutated copy of the ISO and run every entry point on it. */
static int probe(const unsigned char *img, size_t len, ah_err *err)
{
	char path[192];
	struct iso_area a;
	char *json = NULL;
	size_t jl;
	int fd, r;

	snprintf(path, sizeof(path), "%s/corrupt.iso", tmpdir);
	write_file(path, img, len);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	r = iso_find_embed_area(fd, &a, err);
	if (r == 0)
		assert_true(a.offset + a.length <= len);
	if (iso_extract_ignition(fd, &json, &jl, NULL) == 0)
		free(json);
	(void)iso_find_file(fd, "images/pxeboot/initrd.img", &a, NULL);
	close(fd);
	return r;
}

static size_t root_dir_off(const unsigned char *img)
{
	uint32_t lba;
	memcpy(&lba, img + 32768 + 156 + 2, 4); /* the test host is little-endian */
	return (size_t)lba * 2048;
}

/* Byte offset of the record named name (ISO9660 name prefix) in the dir at off. */
static size_t find_rec(const unsigned char *img, size_t dir_off, const char *name)
{
	size_t pos = dir_off;
	while (img[pos] != 0) {
		if (img[pos + 32] >= strlen(name) && memcmp(img + pos + 33, name, strlen(name)) == 0)
			return pos;
		pos += img[pos];
	}
	fail_msg("record %s not found", name);
	return 0;
}

static void test_corrupt_rows(void **state)
{
	NEED_ISO();
	unsigned char *img = malloc(iso_len);
	size_t root = root_dir_off(iso_bytes);
	size_t images = find_rec(iso_bytes, root, "IMAGES");
	size_t coreos = find_rec(iso_bytes, root, "COREOS");
	uint32_t coreos_lba;
	memcpy(&coreos_lba, iso_bytes + coreos + 2, 4);
	size_t igninfo = find_rec(iso_bytes, (size_t)coreos_lba * 2048, "IGNINFO");
	uint32_t igninfo_lba;
	memcpy(&igninfo_lba, iso_bytes + igninfo + 2, 4);
	size_t igninfo_data = (size_t)igninfo_lba * 2048;

	enum { TRUNC, POKE8, POKE32, BYTES };
	static const struct {
		const char *name;
		int kind;
		int where;  /* 0 absolute, 1 root dir, 2 images rec, 3 igninfo data, 4 PVD */
		size_t off;
		uint32_t val;
		const char *bytes;
		int want;
		const char *msg;
	} rows[] = {
		{ "empty file", TRUNC, 0, 0, 0, NULL, -EINVAL, "too small" },
		{ "truncated in system area", TRUNC, 0, 1000, 0, NULL, -EINVAL, "too small" },
		{ "truncated after PVD", TRUNC, 0, 40000, 0, NULL, -EINVAL, "incomplete" },
		{ "truncated mid area", TRUNC, 0, 100000, 0, NULL, -EINVAL, "incomplete" },
		{ "wrong magic", POKE8, 4, 1, 'X', NULL, -EINVAL, "magic" },
		{ "no PVD, only terminator", POKE8, 4, 0, 255, NULL, -EINVAL, "primary" },
		{ "PVD version 2", POKE8, 4, 6, 2, NULL, -EINVAL, "version" },
		{ "volume size too big", POKE32, 4, 80, 0x7fffffff, NULL, -EINVAL, "incomplete" },
		{ "root record length 0", POKE8, 4, 156, 0, NULL, -EINVAL, "root" },
		{ "root not a dir", POKE8, 4, 156 + 25, 0, NULL, -EINVAL, "root" },
		{ "root extent past end", POKE32, 4, 156 + 2, 0x00ffffff, NULL, -EINVAL, "past the end" },
		{ "root size huge", POKE32, 4, 156 + 10, 0xfffffff0, NULL, -EINVAL, "past the end" },
		{ "dir record length 5", POKE8, 2, 0, 5, NULL, -EINVAL, "record length" },
		{ "root '.' record length 0 hides the sector", POKE8, 1, 0, 0, NULL, -ENOENT, "no Ignition embed area" },
		{ "dir record name too long", POKE8, 2, 32, 200, NULL, -EINVAL, "name" },
		{ "images points at root (loop)", POKE32, 2, 2, 0, NULL, -ENOENT, "not found" },
		{ "images extent past end", POKE32, 2, 2, 0x00ffffff, NULL, -EINVAL, "past the end" },
		{ "images not a dir", POKE8, 2, 25, 0, NULL, -ENOENT, "not found" },
		{ "igninfo garbage", BYTES, 3, 0, 0, "{\"file\": 7}", -EINVAL, "file" },
		{ "igninfo not json", BYTES, 3, 0, 0, "nonsense", -EINVAL, "JSON" },
		{ "igninfo names a missing file", BYTES, 3, 0, 0, "{\"file\":\"x/y\"}     ", -ENOENT, "x/y" },
		{ "igninfo names a dir", BYTES, 3, 0, 0, "{\"file\":\"images\"}     ", -EISDIR, NULL },
		{ "igninfo offset past file", BYTES, 3, 0, 0, "{\"file\":\"coreos/kargs.json\",\"offset\":999999}", -EINVAL, "offset" },
		{ "igninfo negative length", BYTES, 3, 0, 0, "{\"file\":\"images/ignition.img\",\"length\":-1}", -EINVAL, "length" },
		{ "igninfo length too long", BYTES, 3, 0, 0, "{\"file\":\"images/ignition.img\",\"length\":262145}", -EINVAL, "area" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t len = iso_len, base = 0;
		ah_err err = { 0 };
		memcpy(img, iso_bytes, iso_len);
		switch (rows[i].where) {
		case 1: base = root; break;
		case 2: base = images; break;
		case 3: base = igninfo_data; break;
		case 4: base = 32768; break;
		default: break;
		}
		switch (rows[i].kind) {
		case TRUNC: len = rows[i].off; break;
		case POKE8: img[base + rows[i].off] = (unsigned char)rows[i].val; break;
		case POKE32: memcpy(img + base + rows[i].off, &rows[i].val, 4); break;
		case BYTES:
			memcpy(img + base, rows[i].bytes, strlen(rows[i].bytes));
			if (rows[i].where == 3) { /* igninfo's recorded size must cover it */
				uint32_t sz = (uint32_t)strlen(rows[i].bytes);
				uint32_t lba = (uint32_t)(igninfo_data / 2048);
				size_t rec = find_rec(img, (size_t)coreos_lba * 2048, "IGNINFO");
				memcpy(img + rec + 2, &lba, 4);
				memcpy(img + rec + 10, &sz, 4);
			}
			break;
		}
		int r = probe(img, len, &err);
		if (r != rows[i].want)
			fail_msg("row '%s': got %d want %d (%s)", rows[i].name, r, rows[i].want,
				 err.message);
		assert_true(err.message[0] != '\0');
		if (rows[i].msg && !strstr(err.message, rows[i].msg))
			fail_msg("row '%s': message '%s' lacks '%s'", rows[i].name, err.message,
				 rows[i].msg);
	}

	/* The legacy "coreiso+" header is the last resort (spec 1.2). */
	struct {
		uint64_t off, len;
		int want;
	} legacy[] = {
		{ 73728, 262144, 0 },
		{ 73728, (uint64_t)iso_len, -EINVAL },
		{ 100, 10, -EINVAL },
		{ 73728, 0, -EINVAL },
	};
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++) {
		char path[192];
		struct iso_area a;
		ah_err err = { 0 };
		memcpy(img, iso_bytes, iso_len);
		img[root] = 0; /* hide every file */
		memcpy(img + 32744, "coreiso+", 8);
		memcpy(img + 32752, &legacy[i].off, 8);
		memcpy(img + 32760, &legacy[i].len, 8);
		snprintf(path, sizeof(path), "%s/legacy.iso", tmpdir);
		write_file(path, img, iso_len);
		int fd = open(path, O_RDONLY);
		assert_int_equal(iso_find_embed_area(fd, &a, &err), legacy[i].want);
		if (legacy[i].want == 0) {
			assert_int_equal(a.offset, legacy[i].off);
			assert_int_equal(a.length, legacy[i].len);
		} else {
			assert_non_null(strstr(err.message, "coreiso+"));
		}
		close(fd);
	}

	/* Random byte flips in the metadata: never a crash, areas in bounds. */
	srand(42);
	for (int i = 0; i < 300; i++) {
		memcpy(img, iso_bytes, iso_len);
		for (int k = 0; k < 8; k++) {
			size_t at = 32768 + (size_t)rand() % (root + 8192 - 32768);
			img[at] = (unsigned char)rand();
		}
		ah_err err = { 0 };
		(void)probe(img, iso_len, &err);
	}
	free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_area),
		cmocka_unit_test(test_find_file_rows),
		cmocka_unit_test(test_plain_iso_fallback),
		cmocka_unit_test(test_cpio_rows),
		cmocka_unit_test(test_payload_extract_rows),
		cmocka_unit_test(test_overlay_read),
		cmocka_unit_test(test_overlay_threads),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_check_area_rows),
		cmocka_unit_test(test_initrd_overlay),
		cmocka_unit_test(test_corrupt_rows),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
