/* fuzz-iso.c - libFuzzer target for src/image/iso.c (the ISO9660 reader,
 * the embed-area lookup, the gzip/cpio payload reader, the overlays).  Not
 * built by default; build and run it from the repository root with:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     fuzz/fuzz-iso.c src/image/iso.c src/base/error.c -ljansson -lz -o fuzz-iso
 *   ./fuzz-iso -max_len=200000 [corpus-dir]
 *
 * A good seed is the head of the test ISO (build/testiso/discovery-test.iso
 * cut to its first 80 KiB still holds every directory).  The input is used
 * both as an ISO image (through a memfd) and as raw embed-area bytes.
 * Besides crashes and leaks it checks invariants, and aborts when one breaks:
 *   - every area or file found lies inside the image;
 *   - every failure carries a message;
 *   - an overlay read back whole equals the image with the payload and zero
 *     fill in the area, and nothing else changed;
 *   - ignition_payload_build then ignition_payload_extract gives the input back. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "image/iso.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond,     \
				__FILE__, __LINE__);                                 \
			abort();                                                     \
		}                                                                    \
	} while (0)

static void check_overlay(int fd, const uint8_t *data, size_t size)
{
	static const unsigned char payload[] = "PAYLOAD-BYTES";
	struct iso_overlay *ov = NULL;
	ah_err err = { 0 };
	int r = iso_overlay_open_fd(fd, payload, sizeof(payload), &ov, &err);

	if (r < 0) {
		CHECK(err.message[0] != '\0' || r == -ENOMEM);
		return;
	}
	struct iso_area a = iso_overlay_area(ov);
	CHECK(iso_overlay_size(ov) == size);
	unsigned char *buf = malloc(size ? size : 1);
	CHECK(buf);
	uint64_t off = 0;
	size_t step = 1 + size % 4093;
	while (off < size) {
		ssize_t n = iso_overlay_read(ov, off, buf + off, step);
		CHECK(n > 0);
		off += (uint64_t)n;
	}
	CHECK(iso_overlay_read(ov, size, buf, 1) == 0);
	for (uint64_t i = 0; i < size; i++) {
		unsigned char want = data[i];
		if (i >= a.offset && i < a.offset + a.length)
			want = i - a.offset < sizeof(payload) ? payload[i - a.offset] : 0;
		CHECK(buf[i] == want);
	}
	free(buf);
	iso_overlay_free(ov);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *paths[] = { "images/pxeboot/initrd.img", "coreos/kargs.json",
				       "IMAGES/IGNITION.IMG", "a/b/c/d/e/f/g" };
	struct iso_area a;
	ah_err err = { 0 };
	char *json = NULL;
	size_t jl = 0;
	int fd, r;

	/* As raw embed-area bytes. */
	r = ignition_payload_extract(data, size, &json, &jl, &err);
	if (r == 0) {
		CHECK(json[jl] == '\0');
		free(json);
	} else {
		CHECK(err.message[0] != '\0' || r == -ENOMEM);
	}

	/* Round trip of the payload format. */
	unsigned char *p = NULL;
	size_t plen = 0;
	if (ignition_payload_build((const char *)data, size, &p, &plen, NULL) == 0) {
		CHECK(plen % 4 == 0);
		CHECK(ignition_payload_extract(p, plen, &json, &jl, NULL) == 0);
		CHECK(jl == size && memcmp(json, data, size) == 0);
		free(json);
		free(p);
	}

	/* As an ISO image. */
	fd = memfd_create("fuzz-iso", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	memset(&err, 0, sizeof(err));
	r = iso_find_embed_area(fd, &a, &err);
	if (r == 0)
		CHECK(a.offset <= size && a.length <= size - a.offset);
	else
		CHECK(err.message[0] != '\0' || r == -ENOMEM);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		memset(&err, 0, sizeof(err));
		r = iso_find_file(fd, paths[i], &a, &err);
		if (r == 0)
			CHECK(a.offset <= size && a.length <= size - a.offset);
		else
			CHECK(err.message[0] != '\0' || r == -ENOMEM);
	}
	if (iso_extract_ignition(fd, &json, &jl, NULL) == 0)
		free(json);
	check_overlay(fd, data, size);
	struct initrd_overlay *io = NULL;
	if (initrd_overlay_open_fd(fd, (const unsigned char *)"x", 1, &io, NULL) == 0) {
		unsigned char b[64];
		CHECK(initrd_overlay_read(io, initrd_overlay_size(io) - 1, b, sizeof(b)) == 1);
		CHECK(b[0] == 'x');
		initrd_overlay_free(io);
	}
	close(fd);
	return 0;
}
