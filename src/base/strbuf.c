/* strbuf.c - see strbuf.h. */
#include "strbuf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char strbuf_empty[1];

void strbuf_init(strbuf *sb, size_t max)
{
	sb->buf = NULL;
	sb->len = 0;
	sb->alloc = 0;
	sb->max = max;
}

void strbuf_release(strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
}

void strbuf_reset(strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

int strbuf_grow(strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1, n;
	char *p;

	if (need < sb->len)
		return -ENOMEM;
	if (sb->max && sb->len + extra > sb->max)
		return -E2BIG;
	if (need <= sb->alloc)
		return 0;
	n = sb->alloc ? sb->alloc : 64;
	while (n < need)
		n *= 2;
	p = realloc(sb->buf, n);
	if (!p)
		return -ENOMEM;
	sb->buf = p;
	sb->alloc = n;
	return 0;
}

int strbuf_add(strbuf *sb, const void *data, size_t len)
{
	int r = strbuf_grow(sb, len);

	if (r < 0)
		return r;
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_adds(strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(strbuf *sb, char c)
{
	return strbuf_add(sb, &c, 1);
}

int strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n, r;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return -EINVAL;
	r = strbuf_grow(sb, (size_t)n);
	if (r < 0)
		return r;
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return r;
}

char *strbuf_detach(strbuf *sb, size_t *ret_len)
{
	char *p = sb->buf;

	if (!p) {
		p = strdup(strbuf_empty);
		if (!p)
			return NULL;
	}
	if (ret_len)
		*ret_len = sb->len;
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	return p;
}

int strbuf_add_json_escaped(strbuf *sb, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p;
	int r = 0;

	for (p = (const unsigned char *)s; *p && r == 0; p++) {
		switch (*p) {
		case '"': r = strbuf_add(sb, "\\\"", 2); break;
		case '\\': r = strbuf_add(sb, "\\\\", 2); break;
		case '\n': r = strbuf_add(sb, "\\n", 2); break;
		case '\r': r = strbuf_add(sb, "\\r", 2); break;
		case '\t': r = strbuf_add(sb, "\\t", 2); break;
		default:
			if (*p < 0x20) {
				char u[6] = { '\\', 'u', '0', '0', hex[*p >> 4], hex[*p & 15] };
				r = strbuf_add(sb, u, 6);
			} else {
				r = strbuf_addch(sb, (char)*p);
			}
		}
	}
	return r;
}
