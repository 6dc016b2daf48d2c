/* util.h - small helpers: time stamps, UUIDs, random tokens, base64.
 * All functions are thread-safe. */
#ifndef AH_BASE_UTIL_H
#define AH_BASE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* RFC 3339 UTC with second precision, as Kubernetes writes metav1.Time:
 * "2006-01-02T15:04:05Z".  buf must hold at least 21 bytes. */
void util_time_rfc3339(time_t t, char *buf, size_t size);
void util_now_rfc3339(char *buf, size_t size);
/* Parse the same format (also accepts fractional seconds and offsets);
 * returns 0 and stores the time, or -EINVAL. */
int util_parse_rfc3339(const char *s, time_t *ret);
/* Monotonic clock in milliseconds / microseconds. */
int64_t util_mono_ms(void);
int64_t util_mono_us(void);

/* d truncated toward zero into int64_t range: NaN is 0, values past either
 * end give that end (a plain cast of such a double is undefined). */
int64_t util_double_to_i64(double d);

/* Fill buf with n cryptographically random bytes; 0 or -EIO. */
int util_random_bytes(void *buf, size_t n);
/* A random RFC 4122 version 4 UUID, lower-case, into buf (>= 37 bytes). */
int util_uuid4(char *buf, size_t size);
/* Whether s is a UUID in its text form (8-4-4-4-12 hex digits, either
 * case), as go-openapi's "uuid" format accepts it. */
int util_is_uuid(const char *s);
/* n random bytes as lower-case hex into buf (>= 2n+1 bytes). */
int util_random_hex(char *buf, size_t nbytes);

/* Standard base64 with padding.  Returns a malloc'd NUL-terminated string the
 * caller frees, or NULL on allocation failure. */
char *util_base64_encode(const void *data, size_t len);
/* Decode standard base64 (padding optional, no whitespace allowed).  Returns
 * 0 and a malloc'd buffer (NUL-terminated for convenience) or -EINVAL/-ENOMEM. */
int util_base64_decode(const char *s, size_t slen, unsigned char **ret, size_t *ret_len);

/* Read a whole file into a malloc'd NUL-terminated buffer; 0 or -errno. */
int util_read_file(const char *path, char **ret, size_t *ret_len);
/* Write a file atomically (temp + fsync + rename) with the given mode. */
int util_write_file_atomic(const char *path, const void *data, size_t len, int mode);

#endif
