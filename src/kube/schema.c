/* schema.c - structural OpenAPI v3 schemas: pruning, defaulting and
 * validation of custom resources; see schema.h.
 *
 * Pruning and defaulting follow apiextensions-apiserver's structural
 * algorithms (pruning.Prune, defaulting.PruneNonNullableNullsWithoutDefaults,
 * defaulting.Default).  Validation follows kube-openapi's SchemaValidator as
 * the API server runs it for custom resources: per node and in this order,
 * type, allOf/anyOf/oneOf/not, string (maxLength, minLength, pattern), format,
 * number (multipleOf, minimum, maximum), array (items, minItems, maxItems,
 * uniqueItems), enum, object (min/maxProperties, additionalProperties,
 * properties, required); the x-kubernetes-list-type checks then run as a
 * second pass, as apiextensions does.  Each problem becomes a cause the way
 * apiextensions' kubeOpenAPIResultToFieldErrors turns kube-openapi errors into
 * field errors, and values are printed the way Go's fmt prints them in
 * field.Error.ErrorBody, so that messages read exactly like the API server's.
 *
 * Patterns are Go RE2; they are translated to POSIX extended regular
 * expressions and compiled once per pattern string into a process-wide cache,
 * because schemas are shared between threads and compiling per request would
 * dominate validation time. */
#include "base/util.h"
#include "schema.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h> /* classification macros only: no libm */
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gofmt.h"
#include "base/strbuf.h"

/* ---------------------------------------------------------------------------
 * Schema accessors.  A schema node is a JSON object; anything else is treated
 * as "no schema" so a malformed CRD can never crash the server. */

static const json_t *sget(const json_t *s, const char *key)
{
	return json_is_object(s) ? json_object_get(s, key) : NULL;
}

static bool sflag(const json_t *s, const char *key)
{
	return json_is_true(sget(s, key));
}

static const json_t *sprops(const json_t *s)
{
	const json_t *p = sget(s, "properties");

	return json_is_object(p) ? p : NULL;
}

static const json_t *sprop(const json_t *s, const char *key)
{
	const json_t *p = json_object_get(sprops(s), key);

	return json_is_object(p) ? p : NULL;
}

/* additionalProperties: returns the value schema, or NULL; *allows_any is set
 * when it is `true` (any value, kept whole). */
static const json_t *saddl(const json_t *s, bool *allows_any)
{
	const json_t *a = sget(s, "additionalProperties");

	if (allows_any)
		*allows_any = json_is_true(a);
	return json_is_object(a) ? a : NULL;
}

static const json_t *sitems(const json_t *s)
{
	const json_t *i = sget(s, "items");

	return json_is_object(i) ? i : NULL;
}

/* The schema of one key of an object: a declared property, else the
 * additionalProperties schema (the structural getSchemaForField). */
static const json_t *field_schema(const json_t *s, const char *key)
{
	const json_t *p = sprop(s, key);

	return p ? p : saddl(s, NULL);
}

static bool sint(const json_t *s, const char *key, long long *ret)
{
	const json_t *v = sget(s, key);

	if (json_is_integer(v)) {
		*ret = json_integer_value(v);
		return true;
	}
	if (json_is_real(v) && isfinite(json_real_value(v))) {
		*ret = util_double_to_i64(json_real_value(v));
		return true;
	}
	return false;
}

static bool snum(const json_t *s, const char *key, double *ret)
{
	const json_t *v = sget(s, key);

	if (!json_is_number(v))
		return false;
	*ret = json_number_value(v);
	return true;
}

static bool is_meta_key(const char *key)
{
	return !strcmp(key, "apiVersion") || !strcmp(key, "kind") || !strcmp(key, "metadata");
}

/* ---------------------------------------------------------------------------
 * Field paths: "spec.interfaces[0].macAddress".  Push returns the old length
 * so the caller can pop back to it. */

static const char *pstr(const strbuf *p)
{
	return p->buf ? p->buf : "";
}

static size_t path_push_key(strbuf *p, const char *key)
{
	size_t old = p->len;

	if (p->len)
		strbuf_addch(p, '.');
	strbuf_adds(p, key);
	return old;
}

static size_t path_push_index(strbuf *p, size_t i)
{
	size_t old = p->len;

	strbuf_addf(p, "[%zu]", i);
	return old;
}

/* Path.Key(k) in apimachinery: "spec.labels[key]". */
static size_t path_push_mapkey(strbuf *p, const char *key)
{
	size_t old = p->len;

	strbuf_addf(p, "[%s]", key);
	return old;
}

static void path_pop(strbuf *p, size_t old)
{
	if (old <= p->len) {
		p->len = old;
		if (p->buf)
			p->buf[old] = '\0';
	}
}

static double dabs(double v)
{
	return v < 0 ? -v : v;
}

/* ---------------------------------------------------------------------------
 * Go-style value printing.  The API server builds messages with fmt; these
 * reproduce the few verbs it uses on JSON values. */

/* encoding/json's float64: plain decimal between 1e-6 and 1e21, else the
 * exponent form with "e-07" shortened to "e-7". */
static void go_float_json(strbuf *sb, double v)
{
	char digits[32];
	int nd, dp;

	if (!isfinite(v) || v == 0) {
		strbuf_addch(sb, '0');
		return;
	}
	if (v < 0)
		strbuf_addch(sb, '-');
	nd = gofmt_shortest_digits(v, digits, &dp);
	if (dabs(v) < 1e-6 || dabs(v) >= 1e21) {
		int exp = dp - 1;

		strbuf_addch(sb, digits[0]);
		if (nd > 1) {
			strbuf_addch(sb, '.');
			strbuf_add(sb, digits + 1, nd - 1);
		}
		strbuf_addf(sb, "e%c%d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
	} else {
		gofmt_f(sb, digits, nd, dp);
	}
}

/* Length of the UTF-8 sequence at s (1 for an invalid byte) and its rune. */
static size_t utf8_decode(const unsigned char *s, size_t len, uint32_t *ret)
{
	uint32_t c = s[0];
	size_t n, i;

	if (c < 0x80) {
		*ret = c;
		return 1;
	}
	n = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
	if (n == 0 || n > len)
		goto bad;
	c &= 0x7f >> n;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			goto bad;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*ret = c;
	return n;
bad:
	*ret = 0xfffd;
	return 1;
}

/* Go's unicode.IsPrint for the runes JSON text is likely to carry: every
 * assigned graphic rune prints as itself; these spaces, format characters
 * and controls are escaped by strconv.Quote.  (Unassigned code points are
 * not tracked: they print as themselves here.) */
static bool go_is_print(uint32_t c)
{
	if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad)
		return false;
	if ((c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) ||
	    (c >= 0x205f && c <= 0x206f) || c == 0x3000 || c == 0xfeff ||
	    (c >= 0xfff9 && c <= 0xfffb) || c == 0x1680 || c == 0x180e)
		return false;
	return true;
}

/* strconv.Quote (fmt's %q of a string). */
static void go_quote(strbuf *sb, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	strbuf_addch(sb, '"');
	while (i < len) {
		uint32_t c;
		size_t n = utf8_decode(p + i, len - i, &c);

		if (c == 0xfffd && n == 1 && p[i] >= 0x80) {
			strbuf_addf(sb, "\\x%02x", p[i]);
		} else if (c == '"' || c == '\\') {
			strbuf_addch(sb, '\\');
			strbuf_addch(sb, (char)c);
		} else if (go_is_print(c)) {
			strbuf_add(sb, p + i, n);
		} else {
			switch (c) {
			case '\a': strbuf_adds(sb, "\\a"); break;
			case '\b': strbuf_adds(sb, "\\b"); break;
			case '\f': strbuf_adds(sb, "\\f"); break;
			case '\n': strbuf_adds(sb, "\\n"); break;
			case '\r': strbuf_adds(sb, "\\r"); break;
			case '\t': strbuf_adds(sb, "\\t"); break;
			case '\v': strbuf_adds(sb, "\\v"); break;
			default:
				if (c < 0x20 || c == 0x7f)
					strbuf_addf(sb, "\\x%02x", (unsigned)c);
				else if (c < 0x10000)
					strbuf_addf(sb, "\\u%04x", (unsigned)c);
				else
					strbuf_addf(sb, "\\U%08x", (unsigned)c);
			}
		}
		i += n;
	}
	strbuf_addch(sb, '"');
}

static void go_quote_str(strbuf *sb, const char *s)
{
	go_quote(sb, s, strlen(s));
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of an object in Go's map print order (sorted).  The caller frees
 * the array, not the keys. */
static const char **sorted_keys(const json_t *o, size_t *ret_n)
{
	size_t n = json_object_size(o), i = 0;
	const char **keys = calloc(n ? n : 1, sizeof(*keys));
	const char *k;
	json_t *v;

	if (!keys) {
		*ret_n = 0;
		return NULL;
	}
	json_object_foreach((json_t *)o, k, v)
		keys[i++] = k;
	qsort(keys, n, sizeof(*keys), cmp_cstr);
	*ret_n = n;
	return keys;
}

/* fmt's %#v of a value decoded from JSON into interface{}. */
static void go_sharpv(strbuf *sb, const json_t *v, bool in_interface)
{
	size_t i, n;

	switch (json_typeof(v)) {
	case JSON_NULL:
		strbuf_adds(sb, in_interface ? "interface {}(nil)" : "<nil>");
		break;
	case JSON_STRING:
		go_quote(sb, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		strbuf_addf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		gofmt_float_v(sb, json_real_value(v));
		break;
	case JSON_TRUE:
		strbuf_adds(sb, "true");
		break;
	case JSON_FALSE:
		strbuf_adds(sb, "false");
		break;
	case JSON_ARRAY:
		strbuf_adds(sb, "[]interface {}{");
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				strbuf_adds(sb, ", ");
			go_sharpv(sb, json_array_get(v, i), true);
		}
		strbuf_addch(sb, '}');
		break;
	case JSON_OBJECT: {
		const char **keys = sorted_keys(v, &n);

		strbuf_adds(sb, "map[string]interface {}{");
		for (i = 0; i < n; i++) {
			if (i)
				strbuf_adds(sb, ", ");
			go_quote_str(sb, keys[i]);
			strbuf_addch(sb, ':');
			go_sharpv(sb, json_object_get(v, keys[i]), true);
		}
		strbuf_addch(sb, '}');
		free(keys);
		break;
	}
	}
}

/* encoding/json's Marshal of a decoded value (compact, keys sorted, <>&
 * escaped as Go does by default). */
static void go_json(strbuf *sb, const json_t *v)
{
	size_t i, n;

	switch (json_typeof(v)) {
	case JSON_NULL:
		strbuf_adds(sb, "null");
		break;
	case JSON_TRUE:
		strbuf_adds(sb, "true");
		break;
	case JSON_FALSE:
		strbuf_adds(sb, "false");
		break;
	case JSON_INTEGER:
		strbuf_addf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		go_float_json(sb, json_real_value(v));
		break;
	case JSON_STRING: {
		const unsigned char *s = (const unsigned char *)json_string_value(v);
		size_t len = json_string_length(v);

		strbuf_addch(sb, '"');
		for (i = 0; i < len; i++) {
			unsigned char c = s[i];

			if (c == '"' || c == '\\') {
				strbuf_addch(sb, '\\');
				strbuf_addch(sb, (char)c);
			} else if (c == '\n') {
				strbuf_adds(sb, "\\n");
			} else if (c == '\r') {
				strbuf_adds(sb, "\\r");
			} else if (c == '\t') {
				strbuf_adds(sb, "\\t");
			} else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
				strbuf_addf(sb, "\\u%04x", c);
			} else if (c == 0xe2 && i + 2 < len && s[i + 1] == 0x80 &&
				   (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
				strbuf_addf(sb, "\\u202%c", s[i + 2] == 0xa8 ? '8' : '9');
				i += 2;
			} else {
				strbuf_addch(sb, (char)c);
			}
		}
		strbuf_addch(sb, '"');
		break;
	}
	case JSON_ARRAY:
		strbuf_addch(sb, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				strbuf_addch(sb, ',');
			go_json(sb, json_array_get(v, i));
		}
		strbuf_addch(sb, ']');
		break;
	case JSON_OBJECT: {
		const char **keys = sorted_keys(v, &n);
		json_t *ks;

		strbuf_addch(sb, '{');
		for (i = 0; i < n; i++) {
			if (i)
				strbuf_addch(sb, ',');
			ks = json_string(keys[i]);
			go_json(sb, ks);
			json_decref(ks);
			strbuf_addch(sb, ':');
			go_json(sb, json_object_get(v, keys[i]));
		}
		strbuf_addch(sb, '}');
		free(keys);
		break;
	}
	}
}

/* field.Error.ErrorBody's rendering of a BadValue: NULL stands for the
 * interface{}("") apiextensions passes when kube-openapi gave no value. */
static void go_badvalue(strbuf *sb, const json_t *v)
{
	if (!v) {
		strbuf_adds(sb, "\"\"");
		return;
	}
	switch (json_typeof(v)) {
	case JSON_NULL:
		strbuf_adds(sb, "null");
		break;
	case JSON_STRING:
		go_quote(sb, json_string_value(v), json_string_length(v));
		break;
	case JSON_REAL:
		gofmt_float_v(sb, json_real_value(v));
		break;
	default:
		go_sharpv(sb, v, false);
	}
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	default: return "null";
	}
}

/* ---------------------------------------------------------------------------
 * RE2 to POSIX ERE translation and the compiled-pattern cache. */

/* Append the literal character c outside a bracket expression. */
static void ere_literal(strbuf *out, unsigned char c)
{
	if (c == ']')
		strbuf_adds(out, "[]]");
	else if (c == '}')
		strbuf_adds(out, "[}]");
	else if (strchr(".[()*+?{|^$\\", c) && c)
		strbuf_addf(out, "\\%c", c);
	else
		strbuf_addch(out, (char)c);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \xHH or \x{HH}: only ASCII code points are translated (a wider one would
 * need UTF-8 encoding and grouping; CRDs do not use them).  p points after
 * the 'x'.  Returns the byte and advances *pp, or -1. */
static int hex_escape(const char **pp)
{
	const char *p = *pp;
	int v = 0, n = 0;

	if (*p == '{') {
		p++;
		while (hexval(*p) >= 0 && n < 8) {
			v = v * 16 + hexval(*p++);
			n++;
		}
		if (*p != '}' || n == 0)
			return -1;
		p++;
	} else {
		if (hexval(p[0]) < 0 || hexval(p[1]) < 0)
			return -1;
		v = hexval(p[0]) * 16 + hexval(p[1]);
		p += 2;
	}
	if (v == 0 || v >= 0x80)
		return -1;
	*pp = p;
	return v;
}

/* Character escapes shared by both contexts: returns the byte or -1. */
static int char_escape(char e, const char **pp)
{
	switch (e) {
	case 't': return '\t';
	case 'n': return '\n';
	case 'r': return '\r';
	case 'f': return '\f';
	case 'v': return '\v';
	case 'a': return '\a';
	case 'x': return hex_escape(pp);
	default:
		if (e && ispunct((unsigned char)e))
			return (unsigned char)e;
		return -1;
	}
}

struct bracket {
	strbuf body;
	bool rbracket, lbracket, caret, dash;
};

static void bracket_add_char(struct bracket *b, int c)
{
	switch (c) {
	case ']': b->rbracket = true; break;
	case '[': b->lbracket = true; break;
	case '^': b->caret = true; break;
	case '-': b->dash = true; break;
	default: strbuf_addch(&b->body, (char)c);
	}
}

/* One escape inside a bracket: a class (\d \w \s) goes into the body and
 * yields -2; a character yields its byte; anything else -1. */
static int bracket_escape(const char **pp, struct bracket *b)
{
	char e = (*pp)[1];

	if (!e)
		return -1;
	*pp += 2;
	switch (e) {
	case 'd':
		strbuf_adds(&b->body, "0-9");
		return -2;
	case 'w':
		strbuf_adds(&b->body, "0-9A-Za-z_");
		return -2;
	case 's':
		strbuf_adds(&b->body, "\t\n\f\r ");
		return -2;
	default:
		return char_escape(e, pp);
	}
}

/* Translate a bracket expression; *pp points after '['.  POSIX brackets take
 * no escapes, so the members are collected and written back with ']' first
 * and '^', '-' last, where they are literal. */
static int tr_bracket(const char **pp, strbuf *out)
{
	const char *p = *pp;
	struct bracket b = { STRBUF_INIT, false, false, false, false };
	bool neg = false, first = true, empty;
	int r = 0;

	if (*p == '^') {
		neg = true;
		p++;
	}
	for (;;) {
		int lo, hi;

		if (*p == '\0') {
			r = -EINVAL;
			goto out;
		}
		if (*p == ']' && !first) {
			p++;
			break;
		}
		first = false;
		if (p[0] == '[' && p[1] == ':') {
			const char *end = strstr(p + 2, ":]");

			if (!end || p[2] == '^') {
				r = -EINVAL;
				goto out;
			}
			strbuf_add(&b.body, p, (size_t)(end + 2 - p));
			p = end + 2;
			continue;
		}
		if (*p == '\\') {
			lo = bracket_escape(&p, &b);
			if (lo == -2)
				continue;
		} else if ((unsigned char)*p >= 0x80) {
			/* A multi-byte rune in a set cannot be expressed
			 * byte-wise without over- or under-matching. */
			lo = -1;
		} else {
			lo = (unsigned char)*p++;
		}
		if (lo < 0) {
			r = -EINVAL;
			goto out;
		}
		if (p[0] == '-' && p[1] != ']' && p[1] != '\0') {
			p++;
			if (*p == '\\')
				hi = bracket_escape(&p, &b);
			else if ((unsigned char)*p >= 0x80 || (p[0] == '[' && p[1] == ':'))
				hi = -1;
			else
				hi = (unsigned char)*p++;
			if (hi < 0 || hi < lo || strchr("[]^-", lo) || strchr("[]^-", hi)) {
				r = -EINVAL;
				goto out;
			}
			strbuf_addf(&b.body, "%c-%c", lo, hi);
			continue;
		}
		bracket_add_char(&b, lo);
	}
	empty = !neg && !b.rbracket && b.body.len == 0 && !b.lbracket;
	if (empty && b.caret && !b.dash) {
		strbuf_adds(out, "\\^");
	} else {
		strbuf_addch(out, '[');
		if (neg)
			strbuf_addch(out, '^');
		if (b.rbracket)
			strbuf_addch(out, ']');
		if (b.body.len)
			strbuf_add(out, b.body.buf, b.body.len);
		if (b.lbracket)
			strbuf_addch(out, '[');
		if (empty && b.caret && b.dash) {
			strbuf_adds(out, "-^");
		} else {
			if (b.caret)
				strbuf_addch(out, '^');
			if (b.dash)
				strbuf_addch(out, '-');
		}
		strbuf_addch(out, ']');
	}
	*pp = p;
out:
	strbuf_release(&b.body);
	return r;
}

/* {n}, {n,} or {n,m}: the length of a valid repetition at p, else 0 (RE2
 * then reads the brace as a literal). */
static size_t repetition_len(const char *p)
{
	const char *q = p + 1;

	if (!isdigit((unsigned char)*q))
		return 0;
	while (isdigit((unsigned char)*q))
		q++;
	if (*q == ',') {
		q++;
		while (isdigit((unsigned char)*q))
			q++;
	}
	return *q == '}' ? (size_t)(q + 1 - p) : 0;
}

static bool is_quantifier_at(const char *p)
{
	return *p == '*' || *p == '+' || *p == '?' || (*p == '{' && repetition_len(p));
}

int schema_re2_to_posix(const char *re2, char **ret, int *ret_cflags)
{
	strbuf out = STRBUF_INIT;
	const char *p = re2;
	bool dotall = false;
	int cflags = REG_EXTENDED | REG_NOSUB, r = 0;

	/* Leading flags, "(?i)" and the like. */
	if (p[0] == '(' && p[1] == '?') {
		const char *q = p + 2;

		while (*q && strchr("isU", *q))
			q++;
		if (*q == ')' && q > p + 2) {
			for (q = p + 2; *q != ')'; q++) {
				if (*q == 'i')
					cflags |= REG_ICASE;
				else if (*q == 's')
					dotall = true;
				/* U (ungreedy) does not change what matches. */
			}
			p = q + 1;
		}
	}
	while (*p && r == 0) {
		unsigned char ch = (unsigned char)*p;
		size_t n;
		int c;

		switch (ch) {
		case '\\': {
			char e = p[1];

			if (!e) {
				r = -EINVAL;
				break;
			}
			p += 2;
			switch (e) {
			case 'd': strbuf_adds(&out, "[0-9]"); break;
			case 'D': strbuf_adds(&out, "[^0-9]"); break;
			case 'w': strbuf_adds(&out, "[0-9A-Za-z_]"); break;
			case 'W': strbuf_adds(&out, "[^0-9A-Za-z_]"); break;
			case 's': strbuf_adds(&out, "[\t\n\f\r ]"); break;
			case 'S': strbuf_adds(&out, "[^\t\n\f\r ]"); break;
			case 'A': strbuf_addch(&out, '^'); break;
			case 'z': strbuf_addch(&out, '$'); break;
			default:
				c = char_escape(e, &p);
				if (c < 0)
					r = -EINVAL;
				else
					ere_literal(&out, (unsigned char)c);
			}
			break;
		}
		case '[':
			p++;
			r = tr_bracket(&p, &out);
			break;
		case '(':
			if (p[1] != '?') {
				strbuf_addch(&out, '(');
				p++;
			} else if (p[2] == ':') {
				strbuf_addch(&out, '(');
				p += 3;
			} else if (p[2] == '<' || (p[2] == 'P' && p[3] == '<')) {
				const char *end = strchr(p, '>');

				if (!end) {
					r = -EINVAL;
					break;
				}
				strbuf_addch(&out, '(');
				p = end + 1;
			} else {
				/* Flags in the middle of a pattern change matching
				 * for a part only; POSIX has no way to say that. */
				r = -EINVAL;
			}
			break;
		case '.':
			/* RE2's dot does not match a newline unless (?s). */
			strbuf_adds(&out, dotall ? "." : "[^\n]");
			p++;
			break;
		case '*':
		case '+':
		case '?':
			strbuf_addch(&out, (char)ch);
			p++;
			if (*p == '?') /* non-greedy: the same strings match */
				p++;
			break;
		case '{':
			n = repetition_len(p);
			if (n) {
				strbuf_add(&out, p, n);
				p += n;
				if (*p == '?')
					p++;
			} else {
				strbuf_adds(&out, "[{]");
				p++;
			}
			break;
		case '}':
		case ']':
			ere_literal(&out, ch);
			p++;
			break;
		default:
			if (ch >= 0xc0) {
				/* A multi-byte rune: group it when a quantifier
				 * follows, so the quantifier applies to the rune. */
				n = 1;
				while (((unsigned char)p[n] & 0xc0) == 0x80)
					n++;
				if (is_quantifier_at(p + n)) {
					strbuf_addch(&out, '(');
					strbuf_add(&out, p, n);
					strbuf_addch(&out, ')');
				} else {
					strbuf_add(&out, p, n);
				}
				p += n;
			} else {
				strbuf_addch(&out, (char)ch);
				p++;
			}
		}
	}
	if (r == 0) {
		*ret = strbuf_detach(&out, NULL);
		if (!*ret)
			r = -ENOMEM;
	}
	strbuf_release(&out);
	if (r == 0)
		*ret_cflags = cflags;
	return r;
}

#define RE_CACHE_MAX 1024

struct re_entry {
	struct re_entry *next;
	bool usable; /* false: untranslatable or rejected by regcomp */
	regex_t re;
	char pattern[];
};

static pthread_mutex_t re_lock = PTHREAD_MUTEX_INITIALIZER;
static struct re_entry *re_cache;
static size_t re_count;

static struct re_entry *re_compile(const char *pattern)
{
	size_t len = strlen(pattern);
	struct re_entry *e = calloc(1, sizeof(*e) + len + 1);
	char *ere;
	int cflags;

	if (!e)
		return NULL;
	memcpy(e->pattern, pattern, len + 1);
	if (schema_re2_to_posix(pattern, &ere, &cflags) == 0) {
		e->usable = regcomp(&e->re, ere, cflags) == 0;
		free(ere);
	}
	return e;
}

static void re_entry_free(struct re_entry *e)
{
	if (e->usable)
		regfree(&e->re);
	free(e);
}

int schema_pattern_match(const char *pattern, const char *s, size_t len)
{
	struct re_entry *e, *own = NULL;
	regmatch_t m[1];
	int r;

	pthread_mutex_lock(&re_lock);
	for (e = re_cache; e; e = e->next)
		if (strcmp(e->pattern, pattern) == 0)
			break;
	if (!e && re_count < RE_CACHE_MAX) {
		e = re_compile(pattern);
		if (e) {
			e->next = re_cache;
			re_cache = e;
			re_count++;
		}
	}
	pthread_mutex_unlock(&re_lock);
	if (!e) {
		/* The cache is full (CRDs never have that many patterns) or
		 * memory is short: compile for this call only. */
		e = own = re_compile(pattern);
		if (!e)
			return -ENOMEM;
	}
	/* A pattern this translator cannot express is treated as matching:
	 * rejecting valid objects would be worse than letting a rare invalid
	 * value through, and the API server validated the CRD's pattern when
	 * the CRD was created, so it is known to be a valid RE2. */
	if (!e->usable) {
		r = 1;
	} else {
		/* regexec may share one compiled regex between threads (POSIX
		 * lists it as thread-safe; glibc locks inside).  REG_STARTEND
		 * lets a string with NUL bytes be matched whole. */
		m[0].rm_so = 0;
		m[0].rm_eo = (regoff_t)len;
		r = regexec(&e->re, s, 1, m, REG_STARTEND) == 0;
	}
	if (own)
		re_entry_free(own);
	return r;
}

void schema_pattern_cache_clear(void)
{
	struct re_entry *e, *next;

	pthread_mutex_lock(&re_lock);
	for (e = re_cache; e; e = next) {
		next = e->next;
		re_entry_free(e);
	}
	re_cache = NULL;
	re_count = 0;
	pthread_mutex_unlock(&re_lock);
}

/* ---------------------------------------------------------------------------
 * Formats (kube-openapi's strfmt.Default validators for the ones checked
 * here; other format names are accepted unchecked, as int32/int64/float/double
 * are by the API server, which does not register them as string formats). */

static bool all_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* time.Parse("2006-01-02", s). */
static bool is_date(const char *s, size_t len)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int y, m, d, max;

	if (len != 10 || s[4] != '-' || s[7] != '-' || !all_digits(s, 4) || !all_digits(s + 5, 2) ||
	    !all_digits(s + 8, 2))
		return false;
	y = atoi(s);
	m = (s[5] - '0') * 10 + (s[6] - '0');
	d = (s[8] - '0') * 10 + (s[9] - '0');
	if (m < 1 || m > 12)
		return false;
	max = mdays[m - 1];
	if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
		max = 29;
	return d >= 1 && d <= max;
}

static bool tz_at(const char *s, size_t len)
{
	if (len == 1 && s[0] == 'z')
		return true;
	return len == 6 && (s[0] == '+' || s[0] == '-') && all_digits(s + 1, 2) && s[3] == ':' &&
	       all_digits(s + 4, 2);
}

/* strfmt.IsDateTime: lower-cased, split at 't'; a valid date, then
 * ^(\d\d):(\d\d):(\d\d)(.[0-9]+)?(z|[+-]\d\d:\d\d)$ with hh<=23, mm, ss<=59. */
static bool is_date_time(const char *s, size_t len)
{
	char buf[128];
	const char *t, *tm, *end;
	size_t i, tlen;

	if (len < 4 || len >= sizeof(buf))
		return false;
	for (i = 0; i < len; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[len] = '\0';
	t = memchr(buf, 't', len);
	if (!t || !is_date(buf, (size_t)(t - buf)))
		return false;
	tm = t + 1;
	end = memchr(tm, 't', (size_t)(buf + len - tm));
	tlen = end ? (size_t)(end - tm) : (size_t)(buf + len - tm);
	if (tlen < 9 || !all_digits(tm, 2) || tm[2] != ':' || !all_digits(tm + 3, 2) ||
	    tm[5] != ':' || !all_digits(tm + 6, 2))
		return false;
	if (memcmp(tm, "23", 2) > 0 || memcmp(tm + 3, "59", 2) > 0 || memcmp(tm + 6, "59", 2) > 0)
		return false;
	if (tz_at(tm + 8, tlen - 8))
		return true;
	/* Optional fraction: any one character, then digits. */
	if (tlen > 9 && tm[8] != '\n' && isdigit((unsigned char)tm[9])) {
		i = 9;
		while (i < tlen && isdigit((unsigned char)tm[i]))
			i++;
		return tz_at(tm + i, tlen - i);
	}
	return false;
}

/* base64.StdEncoding.DecodeString: padded, \r and \n ignored. */
static bool is_base64(const char *s, size_t len)
{
	size_t i, n = 0, pad = 0;

	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\r' || c == '\n')
			continue;
		if (c == '=') {
			pad++;
		} else {
			if (pad || !(isalnum(c) || c == '+' || c == '/'))
				return false;
		}
		n++;
	}
	return n % 4 == 0 && pad <= 2;
}

static bool is_uuid(const char *s, size_t len)
{
	static const int groups[5] = { 8, 4, 4, 4, 12 };
	size_t i = 0;
	int g, k;

	for (g = 0; g < 5; g++) {
		if (g > 0 && i < len && s[i] == '-')
			i++;
		for (k = 0; k < groups[g]; k++, i++)
			if (i >= len || !isxdigit((unsigned char)s[i]))
				return false;
	}
	return i == len;
}

/* net.ParseIP; `family` is the character the format requires ('.' for ipv4,
 * ':' for ipv6), as strfmt checks it. */
static bool is_ip(const char *s, size_t len, char family)
{
	char buf[64];
	unsigned char addr[16];

	if (len == 0 || len >= sizeof(buf) || memchr(s, '\0', len))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET, buf, addr) != 1 && inet_pton(AF_INET6, buf, addr) != 1)
		return false;
	return strchr(buf, family) != NULL;
}

static bool is_cidr(const char *s, size_t len)
{
	char buf[64];
	unsigned char addr[16];
	char *slash;
	int bits;

	if (len == 0 || len >= sizeof(buf) || memchr(s, '\0', len))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	slash = strchr(buf, '/');
	if (!slash || !slash[1] || !all_digits(slash + 1, strlen(slash + 1)) || strlen(slash + 1) > 3)
		return false;
	*slash = '\0';
	if (inet_pton(AF_INET, buf, addr) == 1)
		bits = 32;
	else if (inet_pton(AF_INET6, buf, addr) == 1)
		bits = 128;
	else
		return false;
	return atoi(slash + 1) <= bits;
}

/* 1 valid, 0 invalid, -1 a format this file does not check. */
static int format_check(const char *format, const char *s, size_t len)
{
	if (!strcmp(format, "date-time") || !strcmp(format, "datetime"))
		return is_date_time(s, len);
	if (!strcmp(format, "date"))
		return is_date(s, len);
	if (!strcmp(format, "byte"))
		return is_base64(s, len);
	if (!strcmp(format, "uuid"))
		return is_uuid(s, len);
	if (!strcmp(format, "ipv4"))
		return is_ip(s, len, '.');
	if (!strcmp(format, "ipv6"))
		return is_ip(s, len, ':');
	if (!strcmp(format, "cidr"))
		return is_cidr(s, len);
	return -1;
}

/* ---------------------------------------------------------------------------
 * Pruning. */

struct pctx {
	json_t *pruned;
	strbuf path;
};

static void record_unknown(struct pctx *c, const char *key)
{
	size_t old;

	if (!c->pruned)
		return;
	old = path_push_key(&c->path, key);
	json_array_append_new(c->pruned, json_string(pstr(&c->path)));
	path_pop(&c->path, old);
}

/* apiVersion, kind and metadata of an embedded resource survive pruning
 * when they have the right type; at the root they always do (the kube layer
 * checks them). */
static bool keep_meta(const json_t *s, const char *key, const json_t *v, bool root)
{
	if (!is_meta_key(key))
		return false;
	if (root)
		return true;
	if (!sflag(s, "x-kubernetes-embedded-resource"))
		return false;
	return strcmp(key, "metadata") ? json_is_string(v) : json_is_object(v);
}

static void prune_value(json_t *x, const json_t *s, struct pctx *c, bool root);

/* Under x-kubernetes-preserve-unknown-fields: unknown fields stay, declared
 * ones are still pruned inside. */
static void skip_prune(json_t *x, const json_t *s, struct pctx *c, bool root)
{
	const char *k;
	json_t *v;
	size_t i, old;

	if (!s)
		return;
	if (json_is_object(x)) {
		json_object_foreach(x, k, v) {
			const json_t *sub;

			if ((root || sflag(s, "x-kubernetes-embedded-resource")) && is_meta_key(k))
				continue;
			sub = field_schema(s, k);
			if (sub) {
				old = path_push_key(&c->path, k);
				prune_value(v, sub, c, false);
				path_pop(&c->path, old);
			}
		}
	} else if (json_is_array(x)) {
		json_array_foreach(x, i, v) {
			old = path_push_index(&c->path, i);
			skip_prune(v, sitems(s), c, false);
			path_pop(&c->path, old);
		}
	}
}

static void prune_value(json_t *x, const json_t *s, struct pctx *c, bool root)
{
	const char *k;
	json_t *v;
	void *tmp;
	size_t i, old;

	if (s && sflag(s, "x-kubernetes-preserve-unknown-fields")) {
		skip_prune(x, s, c, root);
		return;
	}
	if (json_is_object(x)) {
		json_object_foreach_safe(x, tmp, k, v) {
			const json_t *sub;
			bool any = false;

			if (s && keep_meta(s, k, v, root))
				continue;
			sub = sprop(s, k);
			if (!sub)
				sub = saddl(s, &any);
			if (sub) {
				old = path_push_key(&c->path, k);
				prune_value(v, sub, c, false);
				path_pop(&c->path, old);
			} else if (!any) {
				record_unknown(c, k);
				json_object_del(x, k);
			}
		}
	} else if (json_is_array(x)) {
		json_array_foreach(x, i, v) {
			old = path_push_index(&c->path, i);
			prune_value(v, s ? sitems(s) : NULL, c, false);
			path_pop(&c->path, old);
		}
	}
}

static bool nullable(const json_t *s)
{
	return sflag(s, "nullable");
}

static bool has_default(const json_t *s)
{
	return sget(s, "default") != NULL;
}

static void prune_nulls(json_t *x, const json_t *s, bool root)
{
	const char *k;
	json_t *v;
	void *tmp;
	size_t i;

	if (json_is_object(x)) {
		json_object_foreach_safe(x, tmp, k, v) {
			const json_t *sub;

			if (root && !strcmp(k, "metadata"))
				continue;
			sub = s ? field_schema(s, k) : NULL;
			if (json_is_null(v) && sub && !nullable(sub) && !has_default(sub))
				json_object_del(x, k);
			else
				prune_nulls(v, sub, false);
		}
	} else if (json_is_array(x)) {
		json_array_foreach(x, i, v)
			prune_nulls(v, s ? sitems(s) : NULL, false);
	}
}

void schema_prune(const json_t *schema, json_t *obj, json_t *pruned)
{
	struct pctx c = { pruned, STRBUF_INIT };

	if (!json_is_object(schema) || !obj)
		return;
	prune_value(obj, schema, &c, true);
	prune_nulls(obj, schema, true);
	strbuf_release(&c.path);
}

/* ---------------------------------------------------------------------------
 * Defaulting. */

static bool nonnullable_null(const json_t *v, const json_t *s)
{
	return json_is_null(v) && s && !nullable(s);
}

static void default_value(json_t *x, const json_t *s)
{
	const json_t *props, *addl, *def;
	const char *k;
	json_t *v;
	void *it;
	size_t i;

	if (!json_is_object(s))
		return;
	if (json_is_object(x)) {
		props = sprops(s);
		json_object_foreach((json_t *)props, k, v) {
			json_t *cur;

			def = sget(v, "default");
			if (!def)
				continue;
			cur = json_object_get(x, k);
			if (!cur || nonnullable_null(cur, v))
				json_object_set_new(x, k, json_deep_copy(def));
		}
		addl = saddl(s, NULL);
		for (it = json_object_iter(x); it; it = json_object_iter_next(x, it)) {
			const json_t *sub;

			k = json_object_iter_key(it);
			v = json_object_iter_value(it);
			sub = sprop(s, k);
			if (!sub && addl) {
				sub = addl;
				def = sget(addl, "default");
				if (def && nonnullable_null(v, addl)) {
					json_object_iter_set_new(x, it, json_deep_copy(def));
					v = json_object_iter_value(it);
				}
			}
			default_value(v, sub);
		}
	} else if (json_is_array(x)) {
		const json_t *items = sitems(s);

		def = sget(items, "default");
		json_array_foreach(x, i, v) {
			if (def && nonnullable_null(v, items)) {
				json_array_set_new(x, i, json_deep_copy(def));
				v = json_array_get(x, i);
			}
			default_value(v, items);
		}
	}
}

void schema_default(const json_t *schema, json_t *obj)
{
	if (json_is_object(schema) && obj)
		default_value(obj, schema);
}

/* ---------------------------------------------------------------------------
 * Validation. */

struct vctx {
	json_t *causes; /* may be NULL: count only */
	int n;
	strbuf path;
};

/* Append {reason, message, field}; takes the message buffer's contents. */
static void add_cause(struct vctx *c, const char *reason, const char *field, strbuf *msg)
{
	c->n++;
	if (c->causes)
		json_array_append_new(c->causes,
				      json_pack("{s:s, s:s, s:s}", "reason", reason, "message",
						msg->buf ? msg->buf : "", "field", field));
	strbuf_release(msg);
}

/* "Invalid value: <value>: <path> in body <fmt...>" (field.Invalid with a
 * kube-openapi message as detail). */
static void invalid_in_body(struct vctx *c, const json_t *bad, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void invalid_in_body(struct vctx *c, const json_t *bad, const char *fmt, ...)
{
	strbuf m = STRBUF_INIT;
	va_list ap;

	strbuf_adds(&m, "Invalid value: ");
	go_badvalue(&m, bad);
	strbuf_addf(&m, ": %s in body ", pstr(&c->path));
	va_start(ap, fmt);
	strbuf_vaddf(&m, fmt, ap);
	va_end(ap);
	add_cause(c, "FieldValueInvalid", pstr(&c->path), &m);
}

/* The composite errors of allOf/anyOf/oneOf/not are not field errors in
 * kube-openapi, so apiextensions reports them against the nil root path
 * (printed "<nil>") with an empty value. */
static void composite(struct vctx *c, const char *what, const char *extra)
{
	strbuf m = STRBUF_INIT;

	strbuf_adds(&m, "Invalid value: \"\": ");
	go_quote_str(&m, pstr(&c->path));
	strbuf_addf(&m, " %s%s", what, extra);
	add_cause(c, "FieldValueInvalid", "<nil>", &m);
}

struct types {
	const char *v[2];
	int n;
};

static void schema_types(const json_t *s, struct types *t)
{
	const char *type = json_string_value(sget(s, "type"));

	t->n = 0;
	if (sflag(s, "x-kubernetes-int-or-string")) {
		t->v[0] = "integer";
		t->v[1] = "string";
		t->n = 2;
	} else if (type && *type) {
		t->v[0] = type;
		t->n = 1;
	}
}

static bool types_has(const struct types *t, const char *name)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->v[i], name))
			return true;
	return false;
}

/* swag.IsFloat64AJSONInteger.  (Casts instead of trunc/round: the layer's
 * libraries do not link libm.) */
static bool float_is_json_integer(double f)
{
	double r;

	if (!isfinite(f) || dabs(f) > 9007199254740992.0)
		return false;
	if (f == (double)(long long)f)
		return true;
	r = (double)(long long)(f + (f >= 0 ? 0.5 : -0.5));
	return dabs(f - r) / (dabs(f) + dabs(r)) < 1e-9;
}

/* The deliberate departure from kube-openapi's wording: its type error ends
 * with a repetition of the value's type (`...must be of type boolean:
 * "string"`), and for a non-string value in a field with a format it names
 * the format and Go's internal type ("must be of type date-time: \"int64\"").
 * Here both read `Invalid value: "<given>": <path> in body must be of type
 * <types>`. */
static void type_error(struct vctx *c, const char *given, const struct types *t, const char *alt)
{
	strbuf m = STRBUF_INIT;

	strbuf_adds(&m, "Invalid value: ");
	go_quote_str(&m, given);
	strbuf_addf(&m, ": %s in body must be of type ", pstr(&c->path));
	if (t->n == 0)
		strbuf_adds(&m, alt);
	else if (t->n == 1)
		strbuf_adds(&m, t->v[0]);
	else
		strbuf_addf(&m, "%s,%s", t->v[0], t->v[1]);
	add_cause(c, "FieldValueTypeInvalid", pstr(&c->path), &m);
}

static void validate_type(struct vctx *c, const json_t *s, const json_t *v)
{
	struct types t;
	const char *format = json_string_value(sget(s, "format"));
	const char *given = json_type_name(v);
	bool float_int, int_float;

	schema_types(s, &t);
	if (!format)
		format = "";
	if (t.n == 0 && !*format)
		return;
	if (json_is_null(v)) {
		if (t.n > 0 && !types_has(&t, "null") && !nullable(s))
			type_error(c, "null", &t, format);
		return;
	}
	float_int = json_is_real(v) && float_is_json_integer(json_real_value(v)) &&
		    types_has(&t, "integer");
	int_float = json_is_integer(v) && types_has(&t, "number");
	if (!json_is_string(v) && !json_is_array(v) && *format) {
		const char *gofmt = json_is_integer(v) ? "int64" : json_is_real(v) ? "float64" : "";

		if (!(types_has(&t, given) || !strcmp(gofmt, format) || float_int || int_float)) {
			type_error(c, given, &t, format);
			return;
		}
	}
	/* A format on a non-numeric type short-cuts the check for strings and
	 * arrays in kube-openapi's type validator. */
	if (!types_has(&t, "number") && !types_has(&t, "integer") && *format &&
	    (json_is_string(v) || json_is_array(v)))
		return;
	/* A schema without a type (a format alone) accepts any JSON type. */
	if (t.n == 0)
		return;
	if (!(types_has(&t, given) || float_int || int_float))
		type_error(c, given, &t, format);
}

static void validate_node(struct vctx *c, const json_t *s, const json_t *v, bool root);

/* Validate v against s into a fresh array; returns the cause count. */
static int validate_into(struct vctx *c, const json_t *s, const json_t *v, bool root, json_t *into)
{
	json_t *saved = c->causes;
	int saved_n = c->n, n;

	c->causes = into;
	c->n = 0;
	validate_node(c, s, v, root);
	n = c->n;
	c->causes = saved;
	c->n = saved_n;
	return n;
}

static void merge_causes(struct vctx *c, json_t *from, int n)
{
	c->n += n;
	if (c->causes && from)
		json_array_extend(c->causes, from);
}

static void validate_combinators(struct vctx *c, const json_t *s, const json_t *v, bool root)
{
	const json_t *list, *branch;
	size_t i;

	/* kube-openapi keeps the failures of the branch with the most
	 * successful checks; the branch with the fewest causes stands in for
	 * it here. */
	list = sget(s, "anyOf");
	if (json_is_array(list) && json_array_size(list) > 0) {
		json_t *best = NULL;
		int best_n = 0;
		bool ok = false;

		json_array_foreach(list, i, branch) {
			json_t *tmp = json_array();
			int n = validate_into(c, branch, v, root, tmp);

			if (n == 0) {
				ok = true;
				json_decref(tmp);
				break;
			}
			if (!best || n < best_n) {
				json_decref(best);
				best = tmp;
				best_n = n;
			} else {
				json_decref(tmp);
			}
		}
		if (!ok) {
			composite(c, "must validate at least one schema (anyOf)", "");
			merge_causes(c, best, best_n);
		}
		json_decref(best);
	}
	list = sget(s, "oneOf");
	if (json_is_array(list) && json_array_size(list) > 0) {
		json_t *best = NULL;
		int best_n = 0, valid = 0;

		json_array_foreach(list, i, branch) {
			json_t *tmp = json_array();
			int n = validate_into(c, branch, v, root, tmp);

			if (n == 0)
				valid++;
			if (n > 0 && valid == 0 && (!best || n < best_n)) {
				json_decref(best);
				best = tmp;
				best_n = n;
			} else {
				json_decref(tmp);
			}
		}
		if (valid != 1) {
			char extra[64];

			if (valid == 0)
				snprintf(extra, sizeof(extra), ". Found none valid");
			else
				snprintf(extra, sizeof(extra), ". Found %d valid alternatives", valid);
			composite(c, "must validate one and only one schema (oneOf)", extra);
			if (valid == 0)
				merge_causes(c, best, best_n);
		}
		json_decref(best);
	}
	list = sget(s, "allOf");
	if (json_is_array(list) && json_array_size(list) > 0) {
		size_t valid = 0;

		json_array_foreach(list, i, branch) {
			json_t *tmp = json_array();
			int n = validate_into(c, branch, v, root, tmp);

			if (n == 0)
				valid++;
			merge_causes(c, tmp, n);
			json_decref(tmp);
		}
		if (valid != json_array_size(list))
			composite(c, "must validate all the schemas (allOf)",
				  valid == 0 ? ". None validated" : "");
	}
	branch = sget(s, "not");
	if (json_is_object(branch) && validate_into(c, branch, v, root, NULL) == 0)
		composite(c, "must not validate the schema (not)", "");
}

/* utf8.RuneCount over a valid UTF-8 string (jansson guarantees validity). */
static size_t rune_count(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

static void validate_string(struct vctx *c, const json_t *s, const json_t *v)
{
	const char *str = json_string_value(v), *pattern;
	size_t len = json_string_length(v), runes = rune_count(str, len);
	long long lim;

	if (sint(s, "maxLength", &lim) && (long long)runes > lim) {
		strbuf m = STRBUF_INIT;

		strbuf_addf(&m, "Too long: may not be longer than %lld", lim);
		add_cause(c, "FieldValueTooLong", pstr(&c->path), &m);
		return;
	}
	if (sint(s, "minLength", &lim) && (long long)runes < lim) {
		invalid_in_body(c, v, "should be at least %lld chars long", lim);
		return;
	}
	pattern = json_string_value(sget(s, "pattern"));
	if (pattern && *pattern && schema_pattern_match(pattern, str, len) == 0)
		invalid_in_body(c, v, "should match '%s'", pattern);
}

static void validate_format(struct vctx *c, const json_t *s, const json_t *v)
{
	const char *format = json_string_value(sget(s, "format"));
	strbuf m = STRBUF_INIT;

	if (!format || format_check(format, json_string_value(v), json_string_length(v)) != 0)
		return;
	/* kube-openapi's InvalidType with the string as data: this one keeps
	 * the value at the end, as the API server writes it. */
	strbuf_adds(&m, "Invalid value: ");
	go_badvalue(&m, v);
	strbuf_addf(&m, ": %s in body must be of type %s: ", pstr(&c->path), format);
	go_badvalue(&m, v);
	add_cause(c, "FieldValueTypeInvalid", pstr(&c->path), &m);
}

static long long float_to_int64(double f)
{
	if (!(f == f))
		return 0;
	if (f >= 9223372036854775807.0)
		return INT64_MAX;
	if (f <= -9223372036854775808.0)
		return INT64_MIN;
	return (long long)f;
}

static void validate_number(struct vctx *c, const json_t *s, const json_t *v)
{
	double mult, lim;
	bool excl;

	if (json_is_integer(v)) {
		/* Integers are checked natively, against limits truncated to
		 * int64, as MinimumNativeType and friends do. */
		long long d = json_integer_value(v), l;

		if (snum(s, "multipleOf", &mult)) {
			long long f = float_to_int64(mult);

			if (f > 0 && d % f != 0)
				invalid_in_body(c, v, "should be a multiple of %lld", f);
			else if (f == 0 && mult > 0 && !float_is_json_integer((1 / mult) * (double)d)) {
				strbuf fs = STRBUF_INIT;

				/* A factor below 1 would divide by zero in Go;
				 * check it as a float instead. */
				gofmt_float_v(&fs, mult);
				invalid_in_body(c, v, "should be a multiple of %s", fs.buf);
				strbuf_release(&fs);
			}
		}
		if (snum(s, "minimum", &lim)) {
			excl = sflag(s, "exclusiveMinimum");
			l = float_to_int64(lim);
			if (excl ? d <= l : d < l)
				invalid_in_body(c, v, "should be greater than %s%lld",
						excl ? "" : "or equal to ", l);
		}
		if (snum(s, "maximum", &lim)) {
			excl = sflag(s, "exclusiveMaximum");
			l = float_to_int64(lim);
			if (excl ? d >= l : d > l)
				invalid_in_body(c, v, "should be less than %s%lld",
						excl ? "" : "or equal to ", l);
		}
	} else {
		double d = json_real_value(v);
		strbuf fs = STRBUF_INIT;

		if (snum(s, "multipleOf", &mult) && mult > 0) {
			double q = mult < 1 ? 1 / mult * d : d / mult;

			if (!float_is_json_integer(q)) {
				gofmt_float_v(&fs, mult);
				invalid_in_body(c, v, "should be a multiple of %s", fs.buf);
				strbuf_reset(&fs);
			}
		}
		if (snum(s, "minimum", &lim)) {
			excl = sflag(s, "exclusiveMinimum");
			if (excl ? d <= lim : d < lim) {
				gofmt_float_v(&fs, lim);
				invalid_in_body(c, v, "should be greater than %s%s",
						excl ? "" : "or equal to ", fs.buf);
				strbuf_reset(&fs);
			}
		}
		if (snum(s, "maximum", &lim)) {
			excl = sflag(s, "exclusiveMaximum");
			if (excl ? d >= lim : d > lim) {
				gofmt_float_v(&fs, lim);
				invalid_in_body(c, v, "should be less than %s%s",
						excl ? "" : "or equal to ", fs.buf);
				strbuf_reset(&fs);
			}
		}
		strbuf_release(&fs);
	}
}

/* Duplicate detection in O(n log n): each element is keyed by a canonical
 * text (compact JSON, sorted keys; integers and floats stay distinct, as Go
 * compares int64 and float64 map keys), then sorted. */
struct dupkey {
	char *text;
	size_t index;
};

static int cmp_dupkey(const void *a, const void *b)
{
	const struct dupkey *x = a, *y = b;
	int r = strcmp(x->text, y->text);

	if (r)
		return r;
	return x->index < y->index ? -1 : x->index > y->index;
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/* keys[i] may be NULL for "unspecified" (a list-map item without its key),
 * which is its own value.  Returns the indexes of the second appearance of
 * every repeated value, ascending, in a malloc'd array (NULL if none). */
static size_t *find_duplicates(json_t *const *keys, size_t n, size_t *ret_n)
{
	struct dupkey *d;
	size_t *out = NULL, nout = 0, i;

	*ret_n = 0;
	if (n < 2)
		return NULL;
	d = calloc(n, sizeof(*d));
	if (!d)
		return NULL;
	for (i = 0; i < n; i++) {
		d[i].index = i;
		d[i].text = keys[i] ? json_dumps(keys[i], JSON_COMPACT | JSON_SORT_KEYS |
							      JSON_ENCODE_ANY)
				    : strdup("\x01unspecified");
		if (!d[i].text)
			goto out;
	}
	qsort(d, n, sizeof(*d), cmp_dupkey);
	out = calloc(n, sizeof(*out));
	if (!out)
		goto out;
	for (i = 1; i < n; i++)
		if (!strcmp(d[i].text, d[i - 1].text) && (i < 2 || strcmp(d[i - 1].text, d[i - 2].text)))
			out[nout++] = d[i].index;
	qsort(out, nout, sizeof(*out), cmp_size);
out:
	for (i = 0; i < n; i++)
		free(d[i].text);
	free(d);
	if (!nout) {
		free(out);
		return NULL;
	}
	*ret_n = nout;
	return out;
}

static bool has_duplicates(const json_t *arr)
{
	size_t n = json_array_size(arr), nd = 0, i;
	json_t **keys = calloc(n ? n : 1, sizeof(*keys));
	size_t *dups;

	if (!keys)
		return false;
	for (i = 0; i < n; i++)
		keys[i] = json_array_get(arr, i);
	dups = find_duplicates(keys, n, &nd);
	free(dups);
	free(keys);
	return nd > 0;
}

static void validate_array(struct vctx *c, const json_t *s, const json_t *v)
{
	const json_t *items = sitems(s), *el;
	size_t i, old, size = json_array_size(v);
	long long lim;

	if (items) {
		json_array_foreach(v, i, el) {
			old = path_push_index(&c->path, i);
			validate_node(c, items, el, false);
			path_pop(&c->path, old);
		}
	}
	if (sint(s, "minItems", &lim) && (long long)size < lim) {
		json_t *n = json_integer((json_int_t)size);

		invalid_in_body(c, n, "should have at least %lld items", lim);
		json_decref(n);
	}
	if (sint(s, "maxItems", &lim) && (long long)size > lim) {
		strbuf m = STRBUF_INIT;

		strbuf_addf(&m, "Too many: %zu: must have at most %lld items", size, lim);
		add_cause(c, "FieldValueTooMany", pstr(&c->path), &m);
	}
	if (sflag(s, "uniqueItems") && has_duplicates(v))
		invalid_in_body(c, NULL, "shouldn't contain duplicates");
}

/* Numbers match by value whatever their JSON type, as Go converts the value
 * to the enum member's type before comparing. */
static bool enum_equal(const json_t *a, const json_t *b)
{
	if (json_is_integer(a) && json_is_integer(b))
		return json_integer_value(a) == json_integer_value(b);
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	return json_equal(a, b);
}

static void validate_enum(struct vctx *c, const json_t *s, const json_t *v)
{
	const json_t *list = sget(s, "enum"), *e;
	strbuf m = STRBUF_INIT;
	size_t i;

	if (!json_is_array(list) || json_array_size(list) == 0)
		return;
	/* Go never matches a null against an enum (its reflect value is
	 * invalid), so a nullable enum field rejects null there; here a null
	 * in a nullable field is not checked against the enum (see
	 * validate_node), and one listed in the enum matches. */
	json_array_foreach(list, i, e)
		if (enum_equal(v, e))
			return;
	strbuf_adds(&m, "Unsupported value: ");
	go_badvalue(&m, v);
	strbuf_adds(&m, ": supported values: ");
	json_array_foreach(list, i, e) {
		if (i)
			strbuf_adds(&m, ", ");
		if (json_is_string(e)) {
			go_quote(&m, json_string_value(e), json_string_length(e));
		} else {
			strbuf js = STRBUF_INIT;

			go_json(&js, e);
			go_quote(&m, js.buf ? js.buf : "", js.len);
			strbuf_release(&js);
		}
	}
	add_cause(c, "FieldValueNotSupported", pstr(&c->path), &m);
}

/* additionalProperties: false.  The field is the object's path, the message
 * kube-openapi's "<path>.<key> in body is a forbidden property". */
static void forbidden_property(struct vctx *c, const char *key)
{
	strbuf m = STRBUF_INIT;

	strbuf_adds(&m, "Invalid value: ");
	go_quote_str(&m, key);
	strbuf_addf(&m, ": %s.%s in body is a forbidden property", pstr(&c->path), key);
	add_cause(c, "FieldValueInvalid", pstr(&c->path), &m);
}

static void validate_object(struct vctx *c, const json_t *s, const json_t *v, bool root)
{
	const json_t *props = sprops(s), *addl, *ps, *req, *r;
	size_t n = json_object_size(v), i, old;
	const char *k;
	json_t *val;
	long long lim;
	bool any;

	if (sint(s, "minProperties", &lim) && (long long)n < lim) {
		json_t *nv = json_integer((json_int_t)n);

		invalid_in_body(c, nv, "should have at least %lld properties", lim);
		json_decref(nv);
		return;
	}
	if (sint(s, "maxProperties", &lim) && (long long)n > lim) {
		strbuf m = STRBUF_INIT;

		strbuf_addf(&m, "Too many: %zu: must have at most %lld items", n, lim);
		add_cause(c, "FieldValueTooMany", pstr(&c->path), &m);
		return;
	}
	addl = saddl(s, &any);
	if (json_is_false(sget(s, "additionalProperties"))) {
		json_object_foreach((json_t *)v, k, val) {
			if (json_object_get(props, k) || (root && !strcmp(k, "metadata")))
				continue;
			forbidden_property(c, k);
		}
	} else if (addl) {
		json_object_foreach((json_t *)v, k, val) {
			if (json_object_get(props, k) || (root && !strcmp(k, "metadata")))
				continue;
			old = path_push_key(&c->path, k);
			validate_node(c, addl, val, false);
			path_pop(&c->path, old);
		}
	}
	json_object_foreach((json_t *)props, k, ps) {
		if (root && !strcmp(k, "metadata"))
			continue;
		val = json_object_get(v, k);
		if (!val)
			continue;
		old = path_push_key(&c->path, k);
		validate_node(c, ps, val, false);
		path_pop(&c->path, old);
	}
	req = sget(s, "required");
	json_array_foreach(req, i, r) {
		const char *name = json_string_value(r);

		if (!name || json_object_get(v, name))
			continue;
		old = path_push_key(&c->path, name);
		{
			strbuf m = STRBUF_INIT;

			strbuf_adds(&m, "Required value");
			add_cause(c, "FieldValueRequired", pstr(&c->path), &m);
		}
		path_pop(&c->path, old);
	}
}

static void validate_node(struct vctx *c, const json_t *s, const json_t *v, bool root)
{
	if (!json_is_object(s) || !v)
		return;
	validate_type(c, s, v);
	if (json_is_null(v)) {
		if (!nullable(s))
			validate_enum(c, s, v);
		return;
	}
	validate_combinators(c, s, v, root);
	if (json_is_string(v)) {
		validate_string(c, s, v);
		validate_format(c, s, v);
	}
	if (json_is_number(v))
		validate_number(c, s, v);
	if (json_is_array(v))
		validate_array(c, s, v);
	validate_enum(c, s, v);
	if (json_is_object(v))
		validate_object(c, s, v, root);
}

/* x-kubernetes-list-type: set and map uniqueness (apiextensions'
 * listtype.ValidateListSetsAndMaps). */

static void duplicate_cause(struct vctx *c, size_t index, const json_t *bad)
{
	strbuf m = STRBUF_INIT;
	size_t old = path_push_index(&c->path, index);

	strbuf_adds(&m, "Duplicate value: ");
	go_badvalue(&m, bad);
	add_cause(c, "FieldValueDuplicate", pstr(&c->path), &m);
	path_pop(&c->path, old);
}

static void list_map_check(struct vctx *c, const json_t *s, const json_t *arr)
{
	const json_t *mk = sget(s, "x-kubernetes-list-map-keys"), *el;
	size_t n = json_array_size(arr), i, j, nd = 0, *dups;
	json_t **keys;

	json_array_foreach(arr, i, el) {
		if (!json_is_null(el) && !json_is_object(el)) {
			size_t old = path_push_index(&c->path, i);
			strbuf m = STRBUF_INIT;

			strbuf_adds(&m, "Invalid value: ");
			go_badvalue(&m, el);
			strbuf_adds(&m, ": must be an object for an array of list-type map");
			add_cause(c, "FieldValueInvalid", pstr(&c->path), &m);
			path_pop(&c->path, old);
			return;
		}
	}
	if (n < 2 || !json_is_array(mk) || json_array_size(mk) == 0)
		return;
	keys = calloc(n, sizeof(*keys));
	if (!keys)
		return;
	for (i = 0; i < n; i++) {
		el = json_array_get(arr, i);
		if (json_array_size(mk) == 1) {
			json_t *kv = json_object_get(el, json_string_value(json_array_get(mk, 0)));

			keys[i] = kv ? json_incref(kv) : NULL;
		} else {
			keys[i] = json_object();
			for (j = 0; j < json_array_size(mk); j++) {
				const char *kf = json_string_value(json_array_get(mk, j));
				json_t *kv = kf ? json_object_get(el, kf) : NULL;

				if (kv)
					json_object_set(keys[i], kf, kv);
			}
		}
	}
	dups = find_duplicates(keys, n, &nd);
	for (i = 0; i < nd; i++) {
		json_t *shown;

		if (json_array_size(mk) == 1) {
			shown = json_object();
			if (keys[dups[i]])
				json_object_set(shown, json_string_value(json_array_get(mk, 0)),
						keys[dups[i]]);
		} else {
			shown = json_incref(keys[dups[i]]);
		}
		duplicate_cause(c, dups[i], shown);
		json_decref(shown);
	}
	free(dups);
	for (i = 0; i < n; i++)
		json_decref(keys[i]);
	free(keys);
}

static void listtype_node(struct vctx *c, const json_t *s, const json_t *v, bool root);

static void listtype_array(struct vctx *c, const json_t *s, const json_t *arr)
{
	const char *lt = json_string_value(sget(s, "x-kubernetes-list-type"));
	const json_t *items = sitems(s), *el;
	size_t i, n = json_array_size(arr), nd = 0, *dups, old;

	if (lt && !strcmp(lt, "set")) {
		json_t **keys = calloc(n ? n : 1, sizeof(*keys));

		if (keys) {
			for (i = 0; i < n; i++)
				keys[i] = json_array_get(arr, i);
			dups = find_duplicates(keys, n, &nd);
			for (i = 0; i < nd; i++)
				duplicate_cause(c, dups[i], json_array_get(arr, dups[i]));
			free(dups);
			free(keys);
		}
	} else if (lt && !strcmp(lt, "map")) {
		list_map_check(c, s, arr);
	}
	if (items) {
		json_array_foreach(arr, i, el) {
			old = path_push_index(&c->path, i);
			listtype_node(c, items, el, false);
			path_pop(&c->path, old);
		}
	}
}

static void listtype_node(struct vctx *c, const json_t *s, const json_t *v, bool root)
{
	const json_t *addl, *sub;
	const char *k;
	json_t *val;
	size_t old;

	if (!json_is_object(s))
		return;
	if (json_is_array(v)) {
		listtype_array(c, s, v);
		return;
	}
	if (!json_is_object(v))
		return;
	addl = saddl(s, NULL);
	json_object_foreach((json_t *)v, k, val) {
		if (root && !strcmp(k, "metadata"))
			continue;
		sub = sprop(s, k);
		if (sub) {
			old = path_push_key(&c->path, k);
			listtype_node(c, sub, val, false);
			path_pop(&c->path, old);
		} else if (addl) {
			old = path_push_mapkey(&c->path, k);
			listtype_node(c, addl, val, false);
			path_pop(&c->path, old);
		}
	}
}

int schema_validate(const json_t *schema, const json_t *obj, json_t *causes)
{
	struct vctx c = { causes, 0, STRBUF_INIT };

	if (!json_is_object(schema) || !obj)
		return 0;
	validate_node(&c, schema, obj, true);
	listtype_node(&c, schema, obj, true);
	strbuf_release(&c.path);
	return c.n;
}

/* ---------------------------------------------------------------------------
 * Look-up. */

const json_t *schema_lookup(const json_t *schema, const char *path)
{
	const json_t *s = schema;
	const char *p = path;

	if (!json_is_object(s) || !path)
		return NULL;
	while (*p) {
		size_t len = strcspn(p, "."), name_len = len, brackets = 0;

		while (name_len >= 2 && p[name_len - 2] == '[' && p[name_len - 1] == ']') {
			name_len -= 2;
			brackets++;
		}
		if (name_len > 0) {
			char *key = strndup(p, name_len);

			if (!key)
				return NULL;
			s = field_schema(s, key);
			free(key);
			if (!s)
				return NULL;
		}
		while (brackets--) {
			s = sitems(s);
			if (!s)
				return NULL;
		}
		p += len;
		if (*p == '.')
			p++;
	}
	return s;
}
