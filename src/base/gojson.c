/* gojson.c - a JSON syntax checker that fails where Go's encoding/json
 * scanner fails and says what it says (gojson.h).  A recursive descent
 * over the buffer, no allocation; depth bounded like Go's scanner. */
#include "base/gojson.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define MAX_DEPTH 10000

struct scan {
	const unsigned char *p, *end;
	char *msg;
	size_t size;
	int depth;
};

/* Go's quoteChar: the byte as a rune, quoted by strconv.Quote between
 * single quotes. */
static void quote_char(unsigned char c, char out[16])
{
	static const char named[] = "\a\b\f\n\r\t\v";
	static const char letters[] = "abfnrtv";
	const char *n;

	if (c == '\'')
		snprintf(out, 16, "'\\''");
	else if (c == '"')
		snprintf(out, 16, "'\"'");
	else if (c == '\\')
		snprintf(out, 16, "'\\\\'");
	else if (c && (n = memchr(named, c, sizeof(named) - 1)) != NULL)
		snprintf(out, 16, "'\\%c'", letters[n - named]);
	else if (c < 0x20 || c == 0x7f)
		snprintf(out, 16, "'\\x%02x'", c);
	else if (c < 0x80)
		snprintf(out, 16, "'%c'", c);
	else if (c < 0xa1 || c == 0xad) /* C1 controls, NBSP, soft hyphen: not printable */
		snprintf(out, 16, "'\\u%04x'", c);
	else
		snprintf(out, 16, "'%c%c'", 0xc0 | (c >> 6), 0x80 | (c & 0x3f));
}

static int fail(struct scan *s, const char *context)
{
	char q[16];

	if (s->p >= s->end) {
		snprintf(s->msg, s->size, "unexpected end of JSON input");
	} else {
		quote_char(*s->p, q);
		snprintf(s->msg, s->size, "invalid character %s %s", q, context);
	}
	return -EINVAL;
}

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n'))
		s->p++;
}

static bool is_digit(const struct scan *s)
{
	return s->p < s->end && *s->p >= '0' && *s->p <= '9';
}

static bool is_hex(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int string_lit(struct scan *s)
{
	s->p++; /* the opening quote */
	while (s->p < s->end) {
		unsigned char c = *s->p;

		if (c == '"') {
			s->p++;
			return 0;
		}
		if (c < 0x20)
			return fail(s, "in string literal");
		if (c == '\\') {
			s->p++;
			if (s->p >= s->end)
				break;
			c = *s->p;
			if (c == 'u') {
				int i;

				for (i = 0; i < 4; i++) {
					s->p++;
					if (s->p >= s->end)
						return fail(s, "");
					if (!is_hex(*s->p))
						return fail(s, "in \\u hexadecimal character escape");
				}
			} else if (!memchr("bfnrt\\/\"", c, 8)) {
				return fail(s, "in string escape code");
			}
		}
		s->p++;
	}
	return fail(s, "");
}

static int number(struct scan *s)
{
	if (*s->p == '-') {
		s->p++;
		if (s->p >= s->end)
			return fail(s, "");
		if (!is_digit(s))
			return fail(s, "in numeric literal");
	}
	if (*s->p == '0') {
		s->p++;
	} else {
		while (is_digit(s))
			s->p++;
	}
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (s->p >= s->end)
			return fail(s, "");
		if (!is_digit(s))
			return fail(s, "after decimal point in numeric literal");
		while (is_digit(s))
			s->p++;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (s->p >= s->end)
			return fail(s, "");
		if (!is_digit(s))
			return fail(s, "in exponent of numeric literal");
		while (is_digit(s))
			s->p++;
	}
	return 0;
}

static int literal(struct scan *s, const char *word)
{
	char ctx[40];
	size_t i;

	for (i = 1; word[i]; i++) {
		s->p++;
		if (s->p >= s->end)
			return fail(s, "");
		if (*s->p != (unsigned char)word[i]) {
			snprintf(ctx, sizeof(ctx), "in literal %s (expecting '%c')", word, word[i]);
			return fail(s, ctx);
		}
	}
	s->p++;
	return 0;
}

static int value(struct scan *s);

static int object(struct scan *s)
{
	int r;

	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return 0;
	}
	for (;;) {
		if (s->p >= s->end || *s->p != '"')
			return fail(s, "looking for beginning of object key string");
		if ((r = string_lit(s)) < 0)
			return r;
		skip_ws(s);
		if (s->p >= s->end || *s->p != ':')
			return fail(s, "after object key");
		s->p++;
		skip_ws(s);
		if ((r = value(s)) < 0)
			return r;
		skip_ws(s);
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			return 0;
		}
		if (s->p >= s->end || *s->p != ',')
			return fail(s, "after object key:value pair");
		s->p++;
		skip_ws(s);
	}
}

static int array(struct scan *s)
{
	int r;

	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return 0;
	}
	for (;;) {
		if ((r = value(s)) < 0)
			return r;
		skip_ws(s);
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			return 0;
		}
		if (s->p >= s->end || *s->p != ',')
			return fail(s, "after array element");
		s->p++;
		skip_ws(s);
	}
}

static int value(struct scan *s)
{
	int r;

	if (s->p >= s->end)
		return fail(s, "");
	switch (*s->p) {
	case '{':
	case '[':
		if (++s->depth > MAX_DEPTH) {
			snprintf(s->msg, s->size, "exceeded max depth");
			return -EINVAL;
		}
		r = *s->p == '{' ? object(s) : array(s);
		s->depth--;
		return r;
	case '"':
		return string_lit(s);
	case 't':
		return literal(s, "true");
	case 'f':
		return literal(s, "false");
	case 'n':
		return literal(s, "null");
	default:
		if (*s->p == '-' || (*s->p >= '0' && *s->p <= '9'))
			return number(s);
		return fail(s, "looking for beginning of value");
	}
}

int gojson_check(const char *buf, size_t len, char *msg, size_t size)
{
	struct scan s = { (const unsigned char *)buf, (const unsigned char *)buf + len, msg, size, 0 };
	int r;

	if (size)
		msg[0] = '\0';
	skip_ws(&s);
	if ((r = value(&s)) < 0)
		return r;
	skip_ws(&s);
	if (s.p < s.end)
		return fail(&s, "after top-level value");
	return 0;
}
