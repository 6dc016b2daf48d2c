/* iso.h - CoreOS live ISO embed areas: find the Ignition area, build the
 * payload that goes in it, and stream an ISO (or PXE initrd) with the payload
 * overlaid, without writing anything to disk (spec/image.md 1.1-1.6, 2.5, 2.7).
 *
 * The ISO reader parses files that are only partly trusted: every offset and
 * length read from the image is bounds-checked against the file size, reads
 * are bounded, and a malformed image yields -EINVAL (or -ENOENT for a missing
 * file) with a message in the ah_err, never a crash.  fuzz/fuzz-iso.c drives it.
 *
 * Functions return 0 (or a byte count) on success and a negative errno on
 * failure.  Everything here is thread-safe: there is no shared state, and an
 * overlay may be read by several threads at once (each read is a pread). */
#ifndef AH_IMAGE_ISO_H
#define AH_IMAGE_ISO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define ISO_SECTOR_SIZE 2048
/* Every shipped Ignition embed area is this long (spec 1.2). */
#define ISO_IGNITION_AREA_SIZE 262144
/* Upper bound for data the reader loads into memory from an image: one
 * directory, igninfo.json, an embed area, a decompressed archive. */
#define ISO_READ_MAX (16u * 1024 * 1024)

/* A byte range of the ISO file. */
struct iso_area {
	uint64_t offset;
	uint64_t length;
};

/* Locate the file at `path` ('/'-separated, leading '/' optional) in the
 * ISO9660 image on fd.  Each component matches a Rock Ridge NM name exactly,
 * or the plain ISO9660 name the way coreos-installer matches it (upper-cased,
 * ";1" and trailing "." stripped, 8.3-truncated or whole).  On success
 * *ret is the file's byte range.  -ENOENT if absent, -EISDIR for a directory,
 * -EINVAL (with a message) for a malformed image, -EIO on read errors. */
int iso_find_file(int fd, const char *path, struct iso_area *ret, ah_err *err);

/* Locate the Ignition embed area as coreos-installer does: /coreos/igninfo.json
 * (keys "file", optional "offset", "length"), else /images/ignition.img, else
 * the legacy "coreiso+" header at byte 32744.  -ENOENT when there is none. */
int iso_find_embed_area(int fd, struct iso_area *ret, ah_err *err);

/* The ISO's primary volume id (PVD byte 40, 32 bytes, trailing spaces
 * trimmed) into buf (>= 33 bytes). */
int iso_volume_id(int fd, char *buf, size_t size, ah_err *err);

/* Build the Ignition payload as assisted-image-service does: a newc cpio
 * archive holding `config.ign` (mode 0100644, ino 1, mtime 0) and the
 * TRAILER!!! entry, gzip-compressed (default level, mtime 0), then NUL-padded
 * to a multiple of 4 bytes.  *ret is malloc'd; the caller frees it.
 * -ENOMEM, or -EINVAL when len exceeds ISO_READ_MAX. */
int ignition_payload_build(const char *ign, size_t len, unsigned char **ret, size_t *ret_len,
			   ah_err *err);

/* The assisted-service size check: -E2BIG (HTTP 400) with "The ignition
 * archive size (X KiB) is over the maximum allowable size (256 KiB)" when
 * archive_len > ISO_IGNITION_AREA_SIZE. */
int ignition_payload_check_size(size_t archive_len, ah_err *err);
/* The same against an embed area of area_len bytes (the message then names
 * area_len in KiB as the maximum). */
int ignition_payload_check_area(size_t archive_len, uint64_t area_len, ah_err *err);

/* Inverse of the above, on an ISO: find the area, gunzip it (concatenated
 * gzip members and NUL padding between them are allowed), and return the
 * last `config.ign` member as a malloc'd NUL-terminated string the caller
 * frees.  -ENOENT when the area is pristine (all zeros) or holds no
 * config.ign; -ENOTSUP for other compressions (coreos-installer's xz). */
int iso_extract_ignition(int fd, char **ret_json, size_t *ret_len, ah_err *err);
/* The same on a buffer holding an embed area's (or an initrd's) bytes. */
int ignition_payload_extract(const unsigned char *area, size_t len, char **ret_json,
			     size_t *ret_len, ah_err *err);

/* An ISO with an Ignition payload overlaid at its embed area (spec 2.5 rows 1
 * and 2): byte i is the payload's byte (i - area.offset) inside the payload,
 * zero in the rest of the area, else the base ISO's byte.  Memory is O(1) in
 * the ISO size; the payload is copied.  Reads may run concurrently from
 * several threads; open and free may not race with reads. */
struct iso_overlay;

/* Open iso_path (the overlay owns that fd) and find its embed area.
 * A payload longer than the area gives -E2BIG (HTTP 500) and the message
 * "The ignition archive size (X KiB) is over the maximum allowable size (Y KiB)". */
int iso_overlay_open(const char *iso_path, const unsigned char *payload, size_t plen,
		     struct iso_overlay **ret, ah_err *err);
/* The same on an fd the caller keeps open (read-only, shared; never closed
 * here) for the overlay's whole lifetime. */
int iso_overlay_open_fd(int fd, const unsigned char *payload, size_t plen,
			struct iso_overlay **ret, ah_err *err);
/* Total length of the overlaid image (the base ISO's size at open time). */
uint64_t iso_overlay_size(const struct iso_overlay *ov);
/* The embed area the payload sits in. */
struct iso_area iso_overlay_area(const struct iso_overlay *ov);
/* Copy up to len bytes at off into buf; returns the count (0 at or past the
 * end, short only at the end) or -errno (-EIO if the base ISO shrank). */
ssize_t iso_overlay_read(struct iso_overlay *ov, uint64_t off, void *buf, size_t len);
void iso_overlay_free(struct iso_overlay *ov);

/* The PXE initrd with appended Ignition (spec 1.6, 2.7): the ISO's
 * /images/pxeboot/initrd.img bytes followed by `tail` (the Ignition payload,
 * to which the caller may have appended further archives, such as the
 * minimal-ISO ramdisk).  Same ownership, thread-safety and read semantics as
 * iso_overlay; the tail is copied. */
struct initrd_overlay;

int initrd_overlay_open(const char *iso_path, const unsigned char *tail, size_t tlen,
			struct initrd_overlay **ret, ah_err *err);
int initrd_overlay_open_fd(int fd, const unsigned char *tail, size_t tlen,
			   struct initrd_overlay **ret, ah_err *err);
uint64_t initrd_overlay_size(const struct initrd_overlay *ov);
ssize_t initrd_overlay_read(struct initrd_overlay *ov, uint64_t off, void *buf, size_t len);
void initrd_overlay_free(struct initrd_overlay *ov);

#endif
