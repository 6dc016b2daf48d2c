/* util.c - see util.h. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

void util_time_rfc3339(time_t t, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void util_now_rfc3339(char *buf, size_t size)
{
	util_time_rfc3339(time(NULL), buf, size);
}

int util_parse_rfc3339(const char *s, time_t *ret)
{
	struct tm tm;
	const char *p;
	long off = 0;

	memset(&tm, 0, sizeof(tm));
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!p)
		return -EINVAL;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -EINVAL;
		off = (hh * 3600L + mm * 60L) * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*ret = timegm(&tm) - off;
	return 0;
}

int64_t util_mono_ms(void)
{
	return util_mono_us() / 1000;
}

int64_t util_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int util_random_bytes(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n > 0) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -EIO;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int util_uuid4(char *buf, size_t size)
{
	unsigned char b[16];

	if (size < 37 || util_random_bytes(b, sizeof(b)) < 0)
		return -EINVAL;
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
	return 0;
}

int util_random_hex(char *buf, size_t nbytes)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[64];
	size_t i;

	if (nbytes > sizeof(b) || util_random_bytes(b, nbytes) < 0)
		return -EINVAL;
	for (i = 0; i < nbytes; i++) {
		buf[2 * i] = hex[b[i] >> 4];
		buf[2 * i + 1] = hex[b[i] & 15];
	}
	buf[2 * nbytes] = '\0';
	return 0;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *util_base64_encode(const void *data, size_t len)
{
	const unsigned char *in = data;
	size_t i, o = 0;
	char *out = malloc(4 * ((len + 2) / 3) + 1);

	if (!out)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 | in[i + 2];

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = b64[(v >> 6) & 63];
		out[o++] = b64[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned)in[i] << 16 | (i + 1 < len ? (unsigned)in[i + 1] << 8 : 0);

		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

static int b64_val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;

	return p ? (int)(p - b64) : -1;
}

int util_base64_decode(const char *s, size_t slen, unsigned char **ret, size_t *ret_len)
{
	unsigned char *out;
	size_t i, o = 0, n = slen;
	unsigned acc = 0;
	int bits = 0;

	while (n > 0 && s[n - 1] == '=')
		n--;
	if (slen - n > 2)
		return -EINVAL;
	out = malloc(n * 3 / 4 + 2);
	if (!out)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		int v = b64_val(s[i]);

		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (bits >= 6) {
		free(out);
		return -EINVAL;
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 0;
}

int util_read_file(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, alloc = 0, n;

	if (!f)
		return -errno;
	for (;;) {
		if (alloc - len < 65536) {
			char *p = realloc(buf, alloc ? alloc * 2 : 65536 + 1);

			if (!p) {
				free(buf);
				fclose(f);
				return -ENOMEM;
			}
			buf = p;
			alloc = alloc ? alloc * 2 : 65536 + 1;
		}
		n = fread(buf + len, 1, alloc - len - 1, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[len] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

int util_write_file_atomic(const char *path, const void *data, size_t len, int mode)
{
	char tmp[4096];
	const char *p = data;
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int util_is_uuid(const char *s)
{
	size_t i;

	if (!s)
		return 0;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return 0;
		} else if (!isxdigit((unsigned char)s[i])) {
			return 0;
		}
	}
	return s[36] == '\0';
}

int64_t util_double_to_i64(double d)
{
	if (d != d)
		return 0;
	if (d >= 9223372036854775808.0)
		return INT64_MAX;
	if (d <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}
