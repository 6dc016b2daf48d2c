/* strbuf.h - a growable byte buffer with a hard maximum.
 *
 * Lifecycle: strbuf_init() (or STRBUF_INIT), append, strbuf_release().  The
 * buffer is always NUL-terminated.  Appends return -ENOMEM on allocation
 * failure and -E2BIG when the result would pass `max` (0 = no bound); a failed
 * append leaves the buffer unchanged.  Not thread-safe; one owner at a time. */
#ifndef AH_BASE_STRBUF_H
#define AH_BASE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max;
} strbuf;

#define STRBUF_INIT { NULL, 0, 0, 0 }

void strbuf_init(strbuf *sb, size_t max);
void strbuf_release(strbuf *sb);
void strbuf_reset(strbuf *sb);
int strbuf_grow(strbuf *sb, size_t extra);
int strbuf_add(strbuf *sb, const void *data, size_t len);
int strbuf_adds(strbuf *sb, const char *s);
int strbuf_addch(strbuf *sb, char c);
int strbuf_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(strbuf *sb, const char *fmt, va_list ap);
/* Hand the buffer (malloc'd, NUL-terminated, never NULL on success) to the
 * caller, who frees it; the strbuf is reset to empty. */
char *strbuf_detach(strbuf *sb, size_t *ret_len);
/* Append s with JSON string escaping (no surrounding quotes). */
int strbuf_add_json_escaped(strbuf *sb, const char *s);

#endif
