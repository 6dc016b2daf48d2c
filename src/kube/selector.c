/* selector.c - label selectors, field selectors and label/annotation syntax
 * checks, with the API server's grammar and error texts; see selector.h.
 *
 * The label selector grammar and its messages follow
 * k8s.io/apimachinery/pkg/labels: a lexer turns the string into tokens, a
 * recursive-descent parser builds requirements, and every key and value is
 * checked as a qualified name / label value.  Users' scripts match on these
 * messages, so they are reproduced word for word (quirks included). */
#include "kube/selector.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

/* The validation vocabulary of k8s.io/apimachinery/pkg/util/validation. */
#define QNAME_FMT "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
#define QNAME_ERR                                                                          \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end " \
	"with an alphanumeric character"
#define QNAME_REGEX_ERR                                                                     \
	QNAME_ERR " (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation " \
		  "is '" QNAME_FMT "')"
#define LABEL_VALUE_FMT "(" QNAME_FMT ")?"
#define LABEL_VALUE_REGEX_ERR                                                               \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', " \
	"'_' or '.', and must start and end with an alphanumeric character (e.g. "           \
	"'MyValue',  or 'my_value',  or '12345', regex used for validation is '"             \
	LABEL_VALUE_FMT "')"
#define DNS1123_LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
#define DNS1123_SUBDOMAIN_FMT DNS1123_LABEL_FMT "(\\." DNS1123_LABEL_FMT ")*"
#define DNS1123_SUBDOMAIN_REGEX_ERR                                                     \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "        \
	"characters, '-' or '.', and must start and end with an alphanumeric character " \
	"(e.g. 'example.com', regex used for validation is '" DNS1123_SUBDOMAIN_FMT "')"

#define QNAME_MAX 63
#define LABEL_VALUE_MAX 63
#define DNS1123_SUBDOMAIN_MAX 253
#define ANNOTATIONS_TOTAL_MAX (256 * 1024)

/* ---- syntax checks ------------------------------------------------------ */

static bool is_alnum(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$ */
static bool qname_part_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || !is_alnum((unsigned char)s[0]) || !is_alnum((unsigned char)s[n - 1]))
		return false;
	for (i = 1; i + 1 < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
			return false;
	}
	return true;
}

static bool dns_char_ok(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* Dot-separated labels, each [a-z0-9]([-a-z0-9]*[a-z0-9])? */
static bool dns1123_subdomain_ok(const char *s, size_t n)
{
	size_t start = 0, i;

	if (n == 0)
		return false;
	for (i = 0; i <= n; i++) {
		if (i < n && s[i] != '.')
			continue;
		if (i == start || !dns_char_ok((unsigned char)s[start]) ||
		    !dns_char_ok((unsigned char)s[i - 1]))
			return false;
		for (size_t j = start; j < i; j++)
			if (!dns_char_ok((unsigned char)s[j]) && s[j] != '-')
				return false;
		start = i + 1;
	}
	return true;
}

/* At most four messages come out of one qualified-name check. */
#define MSGS_MAX 4
#define MSG_LEN 640

struct msgs {
	int n;
	char m[MSGS_MAX][MSG_LEN];
};

static void msgs_add(struct msgs *ms, const char *prefix, const char *text)
{
	if (ms->n < MSGS_MAX)
		snprintf(ms->m[ms->n++], MSG_LEN, "%s%s", prefix, text);
}

static void max_len_msg(char *buf, size_t size, int max)
{
	snprintf(buf, size, "must be no more than %d characters", max);
}

/* validation.IsQualifiedName */
static void check_qualified_name(const char *s, size_t n, struct msgs *ms)
{
	const char *slash = memchr(s, '/', n), *name = s;
	size_t name_len = n;
	char tmp[64];

	if (slash) {
		size_t plen = (size_t)(slash - s);

		if (memchr(slash + 1, '/', n - plen - 1)) {
			msgs_add(ms, "a qualified name ",
				 QNAME_REGEX_ERR " with an optional DNS subdomain prefix and '/' "
						 "(e.g. 'example.com/MyName')");
			return;
		}
		if (plen == 0) {
			msgs_add(ms, "prefix part ", "must be non-empty");
		} else {
			if (plen > DNS1123_SUBDOMAIN_MAX) {
				max_len_msg(tmp, sizeof(tmp), DNS1123_SUBDOMAIN_MAX);
				msgs_add(ms, "prefix part ", tmp);
			}
			if (!dns1123_subdomain_ok(s, plen))
				msgs_add(ms, "prefix part ", DNS1123_SUBDOMAIN_REGEX_ERR);
		}
		name = slash + 1;
		name_len = n - plen - 1;
	}
	if (name_len == 0) {
		msgs_add(ms, "name part ", "must be non-empty");
	} else if (name_len > QNAME_MAX) {
		max_len_msg(tmp, sizeof(tmp), QNAME_MAX);
		msgs_add(ms, "name part ", tmp);
	}
	if (!qname_part_ok(name, name_len))
		msgs_add(ms, "name part ", QNAME_REGEX_ERR);
}

/* validation.IsValidLabelValue */
static void check_label_value(const char *s, size_t n, struct msgs *ms)
{
	char tmp[64];

	if (n > LABEL_VALUE_MAX) {
		max_len_msg(tmp, sizeof(tmp), LABEL_VALUE_MAX);
		msgs_add(ms, "", tmp);
	}
	if (n > 0 && !qname_part_ok(s, n))
		msgs_add(ms, "", LABEL_VALUE_REGEX_ERR);
}

/* Go's %q: a double-quoted string with Go escapes, so messages show bad
 * values exactly as the API server prints them. */
static int add_go_quoted(strbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	int r = strbuf_addch(sb, '"');
	size_t i = 0;

	while (r == 0 && i < n) {
		unsigned char c = (unsigned char)s[i];
		size_t seq = 0;

		if (c >= 0x20 && c < 0x7f) {
			if (c == '"' || c == '\\')
				r = strbuf_addch(sb, '\\');
			if (r == 0)
				r = strbuf_addch(sb, (char)c);
			i++;
			continue;
		}
		switch (c) {
		case '\a': r = strbuf_adds(sb, "\\a"); i++; continue;
		case '\b': r = strbuf_adds(sb, "\\b"); i++; continue;
		case '\f': r = strbuf_adds(sb, "\\f"); i++; continue;
		case '\n': r = strbuf_adds(sb, "\\n"); i++; continue;
		case '\r': r = strbuf_adds(sb, "\\r"); i++; continue;
		case '\t': r = strbuf_adds(sb, "\\t"); i++; continue;
		case '\v': r = strbuf_adds(sb, "\\v"); i++; continue;
		default: break;
		}
		if (c >= 0xc2 && c <= 0xdf)
			seq = 2;
		else if (c >= 0xe0 && c <= 0xef)
			seq = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			seq = 4;
		if (seq && i + seq <= n) {
			size_t k;

			for (k = 1; k < seq; k++)
				if (((unsigned char)s[i + k] & 0xc0) != 0x80)
					break;
			if (k == seq) {
				/* C1 controls (U+0080..U+009F) are not printable for Go. */
				if (seq == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)
					r = strbuf_addf(sb, "\\u00%02x", (unsigned char)s[i + 1]);
				else
					r = strbuf_add(sb, s + i, seq);
				i += seq;
				continue;
			}
		}
		r = strbuf_adds(sb, "\\x");
		if (r == 0)
			r = strbuf_addch(sb, hex[c >> 4]);
		if (r == 0)
			r = strbuf_addch(sb, hex[c & 15]);
		i++;
	}
	if (r == 0)
		r = strbuf_addch(sb, '"');
	return r;
}

/* ---- causes for labels_validate / annotations_validate ------------------- */

static int add_cause(json_t *causes, const char *reason, const char *message, const char *field)
{
	json_t *c = json_pack("{s:s, s:s, s:s}", "reason", reason, "message", message, "field",
			      field);

	if (!c || json_array_append_new(causes, c) < 0)
		return 0;
	return 1;
}

/* "Invalid value: <%q of value>: <detail>" as field.Error.ErrorBody() writes it. */
static int add_invalid(json_t *causes, const char *field, const char *value, size_t vlen,
		       const char *detail)
{
	strbuf sb = STRBUF_INIT;
	int n = 0;

	if (strbuf_adds(&sb, "Invalid value: ") == 0 && add_go_quoted(&sb, value, vlen) == 0 &&
	    strbuf_addf(&sb, ": %s", detail) == 0)
		n = add_cause(causes, "FieldValueInvalid", sb.buf, field);
	strbuf_release(&sb);
	return n;
}

static int add_type_invalid(json_t *causes, const char *field, const json_t *value)
{
	char *dump = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
	strbuf sb = STRBUF_INIT;
	int n = 0;

	if (dump && strbuf_addf(&sb, "Invalid value: %s: must be a string", dump) == 0)
		n = add_cause(causes, "FieldValueTypeInvalid", sb.buf, field);
	free(dump);
	strbuf_release(&sb);
	return n;
}

/* jansson's iterators take non-const pointers but do not modify the value. */
static json_t *mut(const json_t *j)
{
	return (json_t *)j;
}

static const char *FIELD_LABELS = "metadata.labels";
static const char *FIELD_ANNOTATIONS = "metadata.annotations";

int labels_validate(const json_t *labels, json_t *causes)
{
	const char *key;
	json_t *value;
	int n = 0;

	if (!labels || json_is_null(labels) || !causes)
		return 0;
	if (!json_is_object(labels))
		return add_type_invalid(causes, FIELD_LABELS, labels);
	json_object_foreach(mut(labels), key, value) {
		struct msgs ms = { 0 };
		int i;

		check_qualified_name(key, strlen(key), &ms);
		for (i = 0; i < ms.n; i++)
			n += add_invalid(causes, FIELD_LABELS, key, strlen(key), ms.m[i]);
		if (json_is_null(value))
			continue;
		if (!json_is_string(value)) {
			n += add_type_invalid(causes, FIELD_LABELS, value);
			continue;
		}
		ms.n = 0;
		check_label_value(json_string_value(value), json_string_length(value), &ms);
		for (i = 0; i < ms.n; i++)
			n += add_invalid(causes, FIELD_LABELS, json_string_value(value),
					 json_string_length(value), ms.m[i]);
	}
	return n;
}

int annotations_validate(const json_t *annotations, json_t *causes)
{
	const char *key;
	json_t *value;
	size_t total = 0;
	int n = 0;

	if (!annotations || json_is_null(annotations) || !causes)
		return 0;
	if (!json_is_object(annotations))
		return add_type_invalid(causes, FIELD_ANNOTATIONS, annotations);
	json_object_foreach(mut(annotations), key, value) {
		size_t klen = strlen(key), i;
		struct msgs ms = { 0 };
		char *lower = malloc(klen + 1);

		/* Annotation keys are qualified names in which case does not
		 * matter; the message still shows the key as written. */
		if (lower) {
			for (i = 0; i <= klen; i++)
				lower[i] = (key[i] >= 'A' && key[i] <= 'Z') ? (char)(key[i] + 32)
									    : key[i];
			check_qualified_name(lower, klen, &ms);
			free(lower);
		}
		for (int k = 0; k < ms.n; k++)
			n += add_invalid(causes, FIELD_ANNOTATIONS, key, klen, ms.m[k]);
		total += klen;
		if (json_is_string(value))
			total += json_string_length(value);
		else if (!json_is_null(value))
			n += add_type_invalid(causes, FIELD_ANNOTATIONS, value);
	}
	if (total > ANNOTATIONS_TOTAL_MAX) {
		char msg[96];

		snprintf(msg, sizeof(msg), "Too long: must have at most %d bytes",
			 ANNOTATIONS_TOTAL_MAX);
		n += add_cause(causes, "FieldValueTooLong", msg, FIELD_ANNOTATIONS);
	}
	return n;
}

/* ---- label selectors ------------------------------------------------------ */

enum sel_op { OP_IN, OP_NOTIN, OP_EQ, OP_DEQ, OP_NEQ, OP_EXISTS, OP_NOT_EXISTS, OP_GT, OP_LT };

struct requirement {
	char *key;
	enum sel_op op;
	char **values; /* sorted, without duplicates */
	size_t nvalues;
	size_t ord; /* position before sorting, for a stable sort */
};

struct label_selector {
	struct requirement *reqs; /* sorted by key */
	size_t n;
};

static void requirement_release(struct requirement *r)
{
	size_t i;

	free(r->key);
	for (i = 0; i < r->nvalues; i++)
		free(r->values[i]);
	free(r->values);
}

void label_selector_free(label_selector *sel)
{
	size_t i;

	if (!sel)
		return;
	for (i = 0; i < sel->n; i++)
		requirement_release(&sel->reqs[i]);
	free(sel->reqs);
	free(sel);
}

bool label_selector_is_empty(const label_selector *sel)
{
	return !sel || sel->n == 0;
}

/* Go's strconv.ParseInt(s, 10, 64): optional sign, decimal digits, no
 * spaces, in range. */
static bool parse_int64(const char *s, long long *ret)
{
	bool neg = false;
	unsigned long long v = 0, lim;

	if (*s == '+' || *s == '-')
		neg = *s++ == '-';
	if (!*s)
		return false;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (lim - (unsigned long long)(*s - '0')) / 10)
			return false;
		v = v * 10 + (unsigned long long)(*s - '0');
	}
	if (neg)
		*ret = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
	else
		*ret = (long long)v;
	return true;
}

static bool requirement_matches(const struct requirement *r, const json_t *labels)
{
	const json_t *v = json_is_object(labels) ? json_object_get(labels, r->key) : NULL;
	const char *s = v && json_is_string(v) ? json_string_value(v) : "";
	bool has = v != NULL, found = false;
	long long a, b;
	size_t i;

	switch (r->op) {
	case OP_EXISTS:
		return has;
	case OP_NOT_EXISTS:
		return !has;
	case OP_GT:
	case OP_LT:
		if (!has || r->nvalues != 1 || !parse_int64(s, &a) || !parse_int64(r->values[0], &b))
			return false;
		return r->op == OP_GT ? a > b : a < b;
	default:
		break;
	}
	for (i = 0; i < r->nvalues && has; i++)
		if (strcmp(r->values[i], s) == 0)
			found = true;
	if (r->op == OP_NOTIN || r->op == OP_NEQ)
		return !has || !found; /* absent labels satisfy "not equal" */
	return has && found;
}

bool label_selector_matches(const label_selector *sel, const json_t *labels)
{
	size_t i;

	if (!sel)
		return true;
	for (i = 0; i < sel->n; i++)
		if (!requirement_matches(&sel->reqs[i], labels))
			return false;
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sort the values and drop duplicates, as the API server's string sets do. */
static void values_normalize(struct requirement *r)
{
	size_t i, out = 0;

	if (r->nvalues > 1)
		qsort(r->values, r->nvalues, sizeof(char *), cmp_str);
	for (i = 0; i < r->nvalues; i++) {
		if (out > 0 && strcmp(r->values[out - 1], r->values[i]) == 0) {
			free(r->values[i]);
			continue;
		}
		r->values[out++] = r->values[i];
	}
	r->nvalues = out;
}

static int cmp_req(const void *a, const void *b)
{
	const struct requirement *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Requirements sorted by key, stably, so String() and matching are
 * deterministic. */
static void reqs_sort(struct requirement *reqs, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		reqs[i].ord = i;
	if (n > 1)
		qsort(reqs, n, sizeof(*reqs), cmp_req);
}

/* An aggregate of field errors, printed like utilerrors.Aggregate: one
 * message alone, several as "[a, b]" without repeats. */
struct errlist {
	json_t *msgs;
};

static int errlist_add(struct errlist *el, const char *field, const char *value, size_t vlen,
		       bool value_is_list, char *const *list, size_t nlist, const char *detail)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	int r;

	if (!el->msgs && !(el->msgs = json_array()))
		return -ENOMEM;
	r = strbuf_addf(&sb, "%s: Invalid value: ", field);
	if (r == 0 && value_is_list) {
		r = strbuf_adds(&sb, "[]string{");
		for (i = 0; r == 0 && i < nlist; i++) {
			if (i)
				r = strbuf_adds(&sb, ", ");
			if (r == 0)
				r = add_go_quoted(&sb, list[i], strlen(list[i]));
		}
		if (r == 0)
			r = strbuf_addch(&sb, '}');
	} else if (r == 0) {
		r = add_go_quoted(&sb, value, vlen);
	}
	if (r == 0)
		r = strbuf_addf(&sb, ": %s", detail);
	if (r == 0) {
		json_t *m;

		json_array_foreach(el->msgs, i, m)
			if (strcmp(json_string_value(m), sb.buf) == 0)
				goto out;
		if (json_array_append_new(el->msgs, json_string(sb.buf)) < 0)
			r = -ENOMEM;
	}
out:
	strbuf_release(&sb);
	return r;
}

static int errlist_set(struct errlist *el, ah_err *err, const char *prefix)
{
	strbuf sb = STRBUF_INIT;
	size_t i, n = json_array_size(el->msgs);
	json_t *m;
	int r = strbuf_adds(&sb, prefix);

	if (r == 0 && n > 1)
		r = strbuf_addch(&sb, '[');
	json_array_foreach(el->msgs, i, m) {
		if (r == 0 && i)
			r = strbuf_adds(&sb, ", ");
		if (r == 0)
			r = strbuf_adds(&sb, json_string_value(m));
	}
	if (r == 0 && n > 1)
		r = strbuf_addch(&sb, ']');
	if (r == 0)
		r = ah_err_set(err, EINVAL, 400, "BadRequest", "%s", sb.buf);
	else
		r = ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	strbuf_release(&sb);
	return r;
}

/* labels.NewRequirement's checks; key_path/values_path are the field paths
 * the API server prints ("key", "values"). */
static int requirement_check(const struct requirement *r, struct errlist *el)
{
	struct msgs ms = { 0 };
	char joined[MSGS_MAX * MSG_LEN + 8], path[64];
	size_t i, klen = strlen(r->key);
	int rc = 0, k;

	check_qualified_name(r->key, klen, &ms);
	if (ms.n) {
		joined[0] = '\0';
		for (k = 0; k < ms.n; k++) {
			if (k)
				strcat(joined, "; ");
			strcat(joined, ms.m[k]);
		}
		rc = errlist_add(el, "key", r->key, klen, false, NULL, 0, joined);
	}
	switch (r->op) {
	case OP_IN:
	case OP_NOTIN:
		if (rc == 0 && r->nvalues == 0)
			rc = errlist_add(el, "values", NULL, 0, true, r->values, r->nvalues,
					 "for 'in', 'notin' operators, values set can't be empty");
		break;
	case OP_EQ:
	case OP_DEQ:
	case OP_NEQ:
		if (rc == 0 && r->nvalues != 1)
			rc = errlist_add(el, "values", NULL, 0, true, r->values, r->nvalues,
					 "exact-match compatibility requires one single value");
		break;
	case OP_EXISTS:
	case OP_NOT_EXISTS:
		if (rc == 0 && r->nvalues != 0)
			rc = errlist_add(el, "values", NULL, 0, true, r->values, r->nvalues,
					 "values set must be empty for exists and does not exist");
		break;
	case OP_GT:
	case OP_LT:
		if (rc == 0 && r->nvalues != 1)
			rc = errlist_add(el, "values", NULL, 0, true, r->values, r->nvalues,
					 "for 'Gt', 'Lt' operators, exactly one value is required");
		for (i = 0; rc == 0 && i < r->nvalues; i++) {
			long long dummy;

			if (parse_int64(r->values[i], &dummy))
				continue;
			snprintf(path, sizeof(path), "values[%zu]", i);
			rc = errlist_add(el, path, r->values[i], strlen(r->values[i]), false, NULL,
					 0,
					 "for 'Gt', 'Lt' operators, the value must be an integer");
		}
		break;
	}
	for (i = 0; rc == 0 && i < r->nvalues; i++) {
		strbuf fp = STRBUF_INIT;

		ms.n = 0;
		check_label_value(r->values[i], strlen(r->values[i]), &ms);
		if (!ms.n)
			continue;
		joined[0] = '\0';
		for (k = 0; k < ms.n; k++) {
			if (k)
				strcat(joined, "; ");
			strcat(joined, ms.m[k]);
		}
		rc = strbuf_addf(&fp, "values[%zu][%s]", i, r->key);
		if (rc == 0)
			rc = errlist_add(el, fp.buf, r->values[i], strlen(r->values[i]), false, NULL,
					 0, joined);
		strbuf_release(&fp);
	}
	return rc;
}

/* -- lexer -- */

enum tok {
	T_EOS,
	T_CPAR,
	T_COMMA,
	T_NOT,
	T_DEQ,
	T_EQ,
	T_GT,
	T_ID,
	T_IN,
	T_LT,
	T_NEQ,
	T_NOTIN,
	T_OPAR,
};

struct item {
	enum tok tok;
	const char *lit;
	size_t len;
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_special(char c)
{
	return c && strchr("=!(),><", c) != NULL;
}

/* string2token for the operator symbols; -1 when s is not one. */
static int symbol_token(const char *s, size_t n)
{
	if (n == 1) {
		switch (s[0]) {
		case ')': return T_CPAR;
		case ',': return T_COMMA;
		case '!': return T_NOT;
		case '=': return T_EQ;
		case '>': return T_GT;
		case '<': return T_LT;
		case '(': return T_OPAR;
		}
	} else if (n == 2 && s[1] == '=') {
		if (s[0] == '=')
			return T_DEQ;
		if (s[0] == '!')
			return T_NEQ;
	}
	return -1;
}

/* Tokenise s; every single special character is itself a token, so the
 * lexer cannot fail.  The literals point into s. */
static int lex(const char *s, struct item **ret, size_t *ret_n)
{
	size_t n = 0, cap = 8, pos = 0;
	struct item *items = malloc(cap * sizeof(*items));

	if (!items)
		return -ENOMEM;
	for (;;) {
		struct item it;

		while (is_ws(s[pos]))
			pos++;
		it.lit = s + pos;
		if (!s[pos]) {
			it.tok = T_EOS;
			it.len = 0;
		} else if (is_special(s[pos])) {
			int last = -1, t;
			size_t len = 0;

			/* Grow the symbol while it is still a token ("!" then "!="),
			 * and stop at the first character that would spoil it. */
			while (is_special(s[pos + len])) {
				t = symbol_token(s + pos, len + 1);
				if (t < 0 && last >= 0)
					break;
				last = t;
				len++;
			}
			it.tok = (enum tok)last;
			it.len = len;
			pos += len;
		} else {
			size_t len = 0;

			while (s[pos + len] && !is_special(s[pos + len]) && !is_ws(s[pos + len]))
				len++;
			it.tok = T_ID;
			if (len == 2 && memcmp(s + pos, "in", 2) == 0)
				it.tok = T_IN;
			else if (len == 5 && memcmp(s + pos, "notin", 5) == 0)
				it.tok = T_NOTIN;
			it.len = len;
			pos += len;
		}
		if (n == cap) {
			struct item *p = realloc(items, 2 * cap * sizeof(*items));

			if (!p) {
				free(items);
				return -ENOMEM;
			}
			items = p;
			cap *= 2;
		}
		items[n++] = it;
		if (it.tok == T_EOS)
			break;
	}
	*ret = items;
	*ret_n = n;
	return 0;
}

/* -- parser -- */

struct parser {
	const struct item *items;
	size_t pos;
	ah_err *err;
};

/* In the Values context "in" and "notin" are ordinary identifiers
 * ("x in (in)"). */
static enum tok ctx_tok(const struct item *it, bool values)
{
	if (values && (it->tok == T_IN || it->tok == T_NOTIN))
		return T_ID;
	return it->tok;
}

static const struct item *peek(struct parser *p)
{
	return &p->items[p->pos];
}

static const struct item *next(struct parser *p)
{
	const struct item *it = &p->items[p->pos];

	if (it->tok != T_EOS)
		p->pos++;
	return it;
}

static int parse_fail(struct parser *p, const char *fmt, const struct item *it, bool in_req)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, (int)it->len, it->lit);
	return ah_err_set(p->err, EINVAL, 400, "BadRequest", "%s%s",
			  in_req ? "unable to parse requirement: " : "", msg);
}

static int values_push(struct requirement *r, const char *s, size_t n)
{
	char **v = realloc(r->values, (r->nvalues + 1) * sizeof(char *));

	if (!v)
		return -ENOMEM;
	r->values = v;
	if (!(v[r->nvalues] = strndup(s, n)))
		return -ENOMEM;
	r->nvalues++;
	return 0;
}

static int oom(ah_err *err)
{
	return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
}

/* parseValues and parseIdentifiersList: "(a,b)", "()", "(,a,)".  Empty
 * entries stand for the empty value; duplicates vanish in values_normalize. */
static int parse_values(struct parser *p, struct requirement *r)
{
	const struct item *it = next(p);

	if (ctx_tok(it, true) != T_OPAR)
		return parse_fail(p, "found '%.*s' expected: '('", it, true);
	it = peek(p);
	switch (ctx_tok(it, true)) {
	case T_CPAR:
		next(p);
		return values_push(r, "", 0) < 0 ? oom(p->err) : 0;
	case T_ID:
	case T_COMMA:
		break;
	default:
		return parse_fail(p, "found '%.*s', expected: ',', ')' or identifier", it, true);
	}
	for (;;) {
		const struct item *cur = next(p), *la = peek(p);

		switch (ctx_tok(cur, true)) {
		case T_ID:
			if (values_push(r, cur->lit, cur->len) < 0)
				return oom(p->err);
			if (ctx_tok(la, true) == T_COMMA)
				continue;
			if (ctx_tok(la, true) == T_CPAR) {
				next(p);
				return 0;
			}
			return parse_fail(p, "found '%.*s', expected: ',' or ')'", la, true);
		case T_COMMA:
			if (r->nvalues == 0 && values_push(r, "", 0) < 0)
				return oom(p->err);
			if (ctx_tok(la, true) == T_CPAR) {
				next(p);
				return values_push(r, "", 0) < 0 ? oom(p->err) : 0;
			}
			if (ctx_tok(la, true) == T_COMMA) {
				next(p);
				if (values_push(r, "", 0) < 0)
					return oom(p->err);
			}
			continue;
		default:
			return parse_fail(p, "found '%.*s', expected: ',', or identifier", cur, true);
		}
	}
}

static int parse_requirement(struct parser *p, struct requirement *r)
{
	const struct item *it = next(p), *la;
	struct msgs ms = { 0 };
	bool not = false;
	int k;

	if (it->tok == T_NOT) {
		not = true;
		it = next(p);
	}
	if (ctx_tok(it, true) != T_ID)
		return parse_fail(p, "found '%.*s', expected: identifier", it, true);
	check_qualified_name(it->lit, it->len, &ms);
	if (ms.n) {
		strbuf sb = STRBUF_INIT;
		int rc = strbuf_adds(&sb, "unable to parse requirement: <nil>: Invalid value: ");

		if (rc == 0)
			rc = add_go_quoted(&sb, it->lit, it->len);
		if (rc == 0)
			rc = strbuf_adds(&sb, ": ");
		for (k = 0; rc == 0 && k < ms.n; k++)
			rc = strbuf_addf(&sb, "%s%s", k ? "; " : "", ms.m[k]);
		if (rc == 0)
			rc = ah_err_set(p->err, EINVAL, 400, "BadRequest", "%s", sb.buf);
		else
			rc = oom(p->err);
		strbuf_release(&sb);
		return rc;
	}
	if (!(r->key = strndup(it->lit, it->len)))
		return oom(p->err);
	la = peek(p);
	if (not || la->tok == T_EOS || la->tok == T_COMMA) {
		r->op = not ? OP_NOT_EXISTS : OP_EXISTS;
		return 0;
	}
	it = next(p);
	switch (ctx_tok(it, false)) {
	case T_IN: r->op = OP_IN; break;
	case T_NOTIN: r->op = OP_NOTIN; break;
	case T_EQ: r->op = OP_EQ; break;
	case T_DEQ: r->op = OP_DEQ; break;
	case T_NEQ: r->op = OP_NEQ; break;
	case T_GT: r->op = OP_GT; break;
	case T_LT: r->op = OP_LT; break;
	default:
		/* The missing quote before notin is the API server's. */
		return parse_fail(p, "found '%.*s', expected: '=', '!=', '==', 'in', notin'", it,
				  true);
	}
	if (r->op == OP_IN || r->op == OP_NOTIN)
		return parse_values(p, r);
	la = peek(p);
	if (la->tok == T_EOS || la->tok == T_COMMA)
		return values_push(r, "", 0) < 0 ? oom(p->err) : 0;
	it = next(p);
	if (ctx_tok(it, true) != T_ID)
		return parse_fail(p, "found '%.*s', expected: identifier", it, true);
	return values_push(r, it->lit, it->len) < 0 ? oom(p->err) : 0;
}

static int selector_push(label_selector *sel, size_t *cap, struct requirement *r)
{
	if (sel->n == *cap) {
		size_t nc = *cap ? *cap * 2 : 4;
		struct requirement *p = realloc(sel->reqs, nc * sizeof(*p));

		if (!p)
			return -ENOMEM;
		sel->reqs = p;
		*cap = nc;
	}
	sel->reqs[sel->n++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

int label_selector_parse(const char *s, label_selector **ret, ah_err *err)
{
	struct parser p = { .err = err };
	label_selector *sel = calloc(1, sizeof(*sel));
	struct item *items = NULL;
	size_t nitems, cap = 0;
	int r;

	if (!sel)
		return oom(err);
	if (!s)
		s = "";
	if (lex(s, &items, &nitems) < 0) {
		free(sel);
		return oom(err);
	}
	p.items = items;
	for (;;) {
		const struct item *it = peek(&p);
		struct requirement req = { 0 };
		struct errlist el = { 0 };

		if (it->tok == T_EOS)
			break;
		if (it->tok != T_NOT && ctx_tok(it, true) != T_ID) {
			r = parse_fail(&p, "found '%.*s', expected: !, identifier, or 'end of string'",
				       it, false);
			goto fail;
		}
		r = parse_requirement(&p, &req);
		if (r == 0) {
			values_normalize(&req);
			r = requirement_check(&req, &el);
			if (r < 0)
				r = oom(err);
			else if (json_array_size(el.msgs))
				r = errlist_set(&el, err, "unable to parse requirement: ");
		}
		json_decref(el.msgs);
		if (r == 0 && selector_push(sel, &cap, &req) < 0)
			r = oom(err);
		if (r < 0) {
			requirement_release(&req);
			goto fail;
		}
		it = next(&p);
		if (it->tok == T_EOS)
			break;
		if (it->tok != T_COMMA) {
			r = parse_fail(&p, "found '%.*s', expected: ',' or 'end of string'", it, false);
			goto fail;
		}
		it = peek(&p);
		if (it->tok != T_NOT && ctx_tok(it, true) != T_ID) {
			r = parse_fail(&p, "found '%.*s', expected: identifier after ','", it, false);
			goto fail;
		}
	}
	free(items);
	reqs_sort(sel->reqs, sel->n);
	*ret = sel;
	return 0;
fail:
	free(items);
	label_selector_free(sel);
	return r;
}

static int json_fail(ah_err *err, const char *msg)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "%s", msg);
}

int label_selector_from_json(const json_t *js, label_selector **ret, ah_err *err)
{
	label_selector *sel = calloc(1, sizeof(*sel));
	const json_t *ml, *me, *v, *expr;
	struct requirement req = { 0 };
	struct errlist el = { 0 };
	const char *key;
	size_t cap = 0, i;
	int r = 0;

	if (!sel)
		return oom(err);
	if (!js || json_is_null(js))
		goto done;
	if (!json_is_object(js)) {
		r = json_fail(err, "label selector must be an object");
		goto fail;
	}
	ml = json_object_get(js, "matchLabels");
	me = json_object_get(js, "matchExpressions");
	if (ml && !json_is_null(ml) && !json_is_object(ml)) {
		r = json_fail(err, "matchLabels must be an object of strings");
		goto fail;
	}
	if (me && !json_is_null(me) && !json_is_array(me)) {
		r = json_fail(err, "matchExpressions must be an array");
		goto fail;
	}
	if (json_is_object(ml)) {
		json_object_foreach(mut(ml), key, v) {
			if (!json_is_string(v)) {
				r = json_fail(err, "matchLabels must be an object of strings");
				goto fail;
			}
			req.op = OP_EQ;
			if (!(req.key = strdup(key)) ||
			    values_push(&req, json_string_value(v), json_string_length(v)) < 0) {
				r = oom(err);
				goto fail;
			}
			if ((r = requirement_check(&req, &el)) < 0 || json_array_size(el.msgs)) {
				r = r < 0 ? oom(err) : errlist_set(&el, err, "");
				goto fail;
			}
			values_normalize(&req);
			if (selector_push(sel, &cap, &req) < 0) {
				r = oom(err);
				goto fail;
			}
		}
	}
	json_array_foreach(me, i, expr) {
		const json_t *k = json_object_get(expr, "key"), *o = json_object_get(expr, "operator");
		const json_t *vals = json_object_get(expr, "values");
		const char *op;
		size_t j;

		if (!json_is_object(expr) || !json_is_string(k) || !json_is_string(o) ||
		    (vals && !json_is_null(vals) && !json_is_array(vals))) {
			r = json_fail(err, "matchExpressions entries need a string key and operator "
					   "and an array of string values");
			goto fail;
		}
		op = json_string_value(o);
		if (strcmp(op, "In") == 0) {
			req.op = OP_IN;
		} else if (strcmp(op, "NotIn") == 0) {
			req.op = OP_NOTIN;
		} else if (strcmp(op, "Exists") == 0) {
			req.op = OP_EXISTS;
		} else if (strcmp(op, "DoesNotExist") == 0) {
			req.op = OP_NOT_EXISTS;
		} else {
			strbuf sb = STRBUF_INIT;

			if (add_go_quoted(&sb, op, strlen(op)) == 0 &&
			    strbuf_adds(&sb, " is not a valid label selector operator") == 0)
				r = json_fail(err, sb.buf);
			else
				r = oom(err);
			strbuf_release(&sb);
			goto fail;
		}
		if (!(req.key = strdup(json_string_value(k)))) {
			r = oom(err);
			goto fail;
		}
		for (j = 0; j < json_array_size(vals); j++) {
			const json_t *s = json_array_get(vals, j);

			if (!json_is_string(s)) {
				r = json_fail(err, "matchExpressions values must be strings");
				goto fail;
			}
			if (values_push(&req, json_string_value(s), json_string_length(s)) < 0) {
				r = oom(err);
				goto fail;
			}
		}
		if ((r = requirement_check(&req, &el)) < 0 || json_array_size(el.msgs)) {
			r = r < 0 ? oom(err) : errlist_set(&el, err, "");
			goto fail;
		}
		values_normalize(&req);
		if (selector_push(sel, &cap, &req) < 0) {
			r = oom(err);
			goto fail;
		}
	}
done:
	reqs_sort(sel->reqs, sel->n);
	*ret = sel;
	return 0;
fail:
	json_decref(el.msgs);
	requirement_release(&req);
	label_selector_free(sel);
	return r;
}

char *label_selector_string(const label_selector *sel)
{
	static const char *const opstr[] = {
		[OP_IN] = " in ", [OP_NOTIN] = " notin ", [OP_EQ] = "=", [OP_DEQ] = "==",
		[OP_NEQ] = "!=", [OP_EXISTS] = "", [OP_NOT_EXISTS] = "", [OP_GT] = ">",
		[OP_LT] = "<",
	};
	strbuf sb = STRBUF_INIT;
	size_t i, j;
	int r = strbuf_adds(&sb, "");

	for (i = 0; sel && r == 0 && i < sel->n; i++) {
		const struct requirement *q = &sel->reqs[i];
		bool set = q->op == OP_IN || q->op == OP_NOTIN;

		r = strbuf_addf(&sb, "%s%s%s%s%s", i ? "," : "", q->op == OP_NOT_EXISTS ? "!" : "",
				q->key, opstr[q->op], set ? "(" : "");
		if (q->op == OP_EXISTS || q->op == OP_NOT_EXISTS)
			continue;
		for (j = 0; r == 0 && j < q->nvalues; j++)
			r = strbuf_addf(&sb, "%s%s", j ? "," : "", q->values[j]);
		if (r == 0 && set)
			r = strbuf_addch(&sb, ')');
	}
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

/* ---- field selectors ------------------------------------------------------ */

struct field_term {
	char *field;
	char *value;
	bool negate;
	char *canon; /* "field=value" / "field!=value", escaped; the sort key */
};

struct field_selector {
	struct field_term *terms; /* in the order of their sorted source terms */
	size_t n;
};

void field_selector_free(field_selector *sel)
{
	size_t i;

	if (!sel)
		return;
	for (i = 0; i < sel->n; i++) {
		free(sel->terms[i].field);
		free(sel->terms[i].value);
		free(sel->terms[i].canon);
	}
	free(sel->terms);
	free(sel);
}

/* fields.UnescapeValue: "\\", "\," and "\=" are the only escapes, and a bare
 * "," or "=" is an error. */
static int unescape_value(const char *s, size_t n, char **ret, ah_err *err)
{
	char *out = malloc(n + 1), *o = out;
	size_t i;

	if (!out)
		return oom(err);
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\') {
			if (i + 1 == n) {
				free(out);
				return ah_err_set(err, EINVAL, 400, "BadRequest",
						  "invalid field selector: invalid escape sequence: \\");
			}
			c = s[++i];
			if (c != '\\' && c != ',' && c != '=') {
				unsigned char u = (unsigned char)c;
				size_t len = 1;

				/* Show the whole UTF-8 character after the backslash. */
				if (u >= 0xc0)
					while (i + len < n && ((unsigned char)s[i + len] & 0xc0) == 0x80)
						len++;
				free(out);
				return ah_err_set(err, EINVAL, 400, "BadRequest",
						  "invalid field selector: invalid escape sequence: "
						  "\\%.*s",
						  (int)len, s + i);
			}
		} else if (c == ',' || c == '=') {
			free(out);
			/* The API server formats the rune with %v, which prints its
			 * code point (61 for '='); kept as is. */
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "invalid field selector: unescaped character in value: %d",
					  (int)(unsigned char)c);
		}
		*o++ = c;
	}
	*o = '\0';
	*ret = out;
	return 0;
}

static int cmp_term_src(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

static int cmp_term_canon(const void *a, const void *b)
{
	const struct field_term *x = a, *y = b;

	return strcmp(x->canon, y->canon);
}

static char *term_canon(const struct field_term *t)
{
	strbuf sb = STRBUF_INIT;
	const char *v;
	int r = strbuf_addf(&sb, "%s%s", t->field, t->negate ? "!=" : "=");

	for (v = t->value; r == 0 && *v; v++) {
		if (*v == '\\' || *v == ',' || *v == '=')
			r = strbuf_addch(&sb, '\\');
		if (r == 0)
			r = strbuf_addch(&sb, *v);
	}
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}

int field_selector_parse(const char *s, const char *const *allowed, field_selector **ret,
			 ah_err *err)
{
	field_selector *sel = calloc(1, sizeof(*sel));
	char **parts = NULL;
	size_t nparts = 0, i, start = 0, len;
	bool slash = false;
	int r = 0;

	if (!sel)
		return oom(err);
	if (!s)
		s = "";
	len = strlen(s);
	/* Split on commas that are not escaped; empty terms are skipped. */
	for (i = 0; len && i <= len; i++) {
		if (i < len && slash) {
			slash = false;
			continue;
		}
		if (i < len && s[i] == '\\') {
			slash = true;
			continue;
		}
		if (i < len && s[i] != ',')
			continue;
		if (i > start) {
			char **p = realloc(parts, (nparts + 1) * sizeof(char *));

			if (!p || !(p[nparts] = strndup(s + start, i - start))) {
				parts = p ? p : parts;
				r = oom(err);
				goto out;
			}
			parts = p;
			nparts++;
		}
		start = i + 1;
	}
	/* The API server sorts the terms before reading them; errors are
	 * reported for the first bad term in that order. */
	if (nparts > 1)
		qsort(parts, nparts, sizeof(char *), cmp_term_src);
	if (nparts && !(sel->terms = calloc(nparts, sizeof(*sel->terms)))) {
		r = oom(err);
		goto out;
	}
	for (i = 0; i < nparts; i++) {
		const char *t = parts[i], *op = NULL;
		size_t oplen = 0, k;
		struct field_term *ft = &sel->terms[sel->n];

		for (k = 0; t[k] && !op; k++) {
			if (strncmp(t + k, "!=", 2) == 0 || strncmp(t + k, "==", 2) == 0)
				op = t + k, oplen = 2;
			else if (t[k] == '=')
				op = t + k, oplen = 1;
		}
		if (!op) {
			r = ah_err_set(err, EINVAL, 400, "BadRequest",
				       "invalid selector: '%s'; can't understand '%s'", s, t);
			goto out;
		}
		if (!(ft->field = strndup(t, (size_t)(op - t)))) {
			r = oom(err);
			goto out;
		}
		ft->negate = op[0] == '!';
		sel->n++;
		if ((r = unescape_value(op + oplen, strlen(op + oplen), &ft->value, err)) < 0)
			goto out;
		if (!(ft->canon = term_canon(ft))) {
			r = oom(err);
			goto out;
		}
	}
	for (i = 0; allowed && i < sel->n; i++) {
		const char *const *a;

		for (a = allowed; *a && strcmp(*a, sel->terms[i].field) != 0; a++)
			;
		if (!*a) {
			r = ah_err_set(err, EINVAL, 400, "BadRequest", "field label not supported: %s",
				       sel->terms[i].field);
			goto out;
		}
	}
	/* Sorted by their canonical form so that the string form is a fixed
	 * point of parsing. */
	if (sel->n > 1)
		qsort(sel->terms, sel->n, sizeof(*sel->terms), cmp_term_canon);
out:
	for (i = 0; i < nparts; i++)
		free(parts[i]);
	free(parts);
	if (r < 0) {
		field_selector_free(sel);
		return r;
	}
	*ret = sel;
	return 0;
}

/* The field's value as the API server's field sets hold it: strings as they
 * are, numbers and booleans in their JSON form, anything else (or nothing)
 * as "". */
static void field_value(const json_t *obj, const char *path, char *buf, size_t size,
			const char **ret)
{
	const json_t *cur = obj;
	const char *p = path;

	*ret = "";
	while (cur && *p) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);

		if (!json_is_object(cur))
			return;
		cur = json_object_getn(cur, p, n);
		p += n + (dot ? 1 : 0);
		if (dot && !*p)
			return;
	}
	if (!cur)
		return;
	if (json_is_string(cur)) {
		*ret = json_string_value(cur);
	} else if (json_is_integer(cur)) {
		snprintf(buf, size, "%" JSON_INTEGER_FORMAT, json_integer_value(cur));
		*ret = buf;
	} else if (json_is_real(cur)) {
		snprintf(buf, size, "%.17g", json_real_value(cur));
		*ret = buf;
	} else if (json_is_boolean(cur)) {
		*ret = json_is_true(cur) ? "true" : "false";
	}
}

bool field_selector_matches(const field_selector *sel, const json_t *obj)
{
	size_t i;

	for (i = 0; sel && i < sel->n; i++) {
		char buf[64];
		const char *v;

		field_value(obj, sel->terms[i].field, buf, sizeof(buf), &v);
		if ((strcmp(v, sel->terms[i].value) == 0) == sel->terms[i].negate)
			return false;
	}
	return true;
}

char *field_selector_string(const field_selector *sel)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	int r = strbuf_adds(&sb, "");

	for (i = 0; sel && r == 0 && i < sel->n; i++)
		r = strbuf_addf(&sb, "%s%s", i ? "," : "", sel->terms[i].canon);
	if (r < 0) {
		strbuf_release(&sb);
		return NULL;
	}
	return strbuf_detach(&sb, NULL);
}
