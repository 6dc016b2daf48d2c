/* jsonpath.c - the Kubernetes JSONPath subset; see jsonpath.h.
 *
 * Semantics follow k8s.io/client-go/util/jsonpath with missing keys allowed
 * (as the API server's printer columns and `kubectl wait --for=jsonpath`
 * run it): a field of a non-object or a missing key selects nothing; an
 * index outside the array, a filter over a non-array or a comparison of
 * incompatible types is an evaluation error, and an error yields no values
 * at all (the API server then shows an empty cell).
 *
 * A path compiles to a list of steps applied to a list of values, the way
 * client-go walks its node list.  Two deliberate differences: a bracketed
 * quoted key (['a.b'] or ["a.b"]) is one literal key, where client-go
 * re-parses it and splits at the dots; and a filter whose left side selects
 * nothing skips that element (newer client-go) rather than failing. */
#include "jsonpath.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define JP_MAX_EXPR 4096  /* longer expressions are refused */
#define JP_MAX_DEPTH 8    /* filters nested inside filters */

enum step_kind { STEP_FIELD, STEP_WILDCARD, STEP_SLICE, STEP_FILTER };

enum filter_op { OP_EXISTS, OP_EQ, OP_NE, OP_LT, OP_GT, OP_LE, OP_GE };

struct operand {
	enum { OPND_PATH, OPND_STRING, OPND_INT, OPND_FLOAT, OPND_BOOL } kind;
	jsonpath *path;
	json_t *literal; /* string, integer, real or boolean */
};

struct filter {
	jsonpath *left;
	enum filter_op op;
	struct operand right;
};

struct slice {
	bool known[3];
	long v[3];
	bool derived_end; /* [i]: the end is i+1, counted like client-go */
};

struct step {
	enum step_kind kind;
	char *name;         /* STEP_FIELD; "" selects the value itself */
	struct slice sl;    /* STEP_SLICE */
	struct filter *flt; /* STEP_FILTER */
};

struct jsonpath {
	struct step *steps;
	size_t n, alloc;
};

/* ---------------------------------------------------------------------------
 * Freeing. */

static void filter_free(struct filter *f)
{
	if (!f)
		return;
	jsonpath_free(f->left);
	jsonpath_free(f->right.path);
	json_decref(f->right.literal);
	free(f);
}

void jsonpath_free(jsonpath *jp)
{
	size_t i;

	if (!jp)
		return;
	for (i = 0; i < jp->n; i++) {
		free(jp->steps[i].name);
		filter_free(jp->steps[i].flt);
	}
	free(jp->steps);
	free(jp);
}

/* ---------------------------------------------------------------------------
 * Parsing. */

struct parser {
	const char *s;   /* the expression (inside any braces) */
	size_t pos, len;
	int depth;
	ah_err *err;
};

static int perr(struct parser *p, const char *what)
{
	return ah_err_set(p->err, EINVAL, 400, "BadRequest", "jsonpath: %s at offset %zu", what,
			  p->pos);
}

static struct step *add_step(jsonpath *jp, enum step_kind kind)
{
	struct step *st;

	if (jp->n == jp->alloc) {
		size_t na = jp->alloc ? jp->alloc * 2 : 4;
		struct step *ns = realloc(jp->steps, na * sizeof(*ns));

		if (!ns)
			return NULL;
		jp->steps = ns;
		jp->alloc = na;
	}
	st = &jp->steps[jp->n++];
	memset(st, 0, sizeof(*st));
	st->kind = kind;
	return st;
}

/* client-go's isTerminator: what ends a dotted field name. */
static bool is_terminator(char c)
{
	return c == '\0' || c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '.' ||
	       c == ',' || c == '[' || c == ']' || c == '$' || c == '@' || c == '{' || c == '}';
}

static char peek(const struct parser *p)
{
	return p->pos < p->len ? p->s[p->pos] : '\0';
}

/* A dotted field: up to a terminator, a backslash escaping the next
 * character (".metadata.labels.app\.kubernetes\.io/name"). */
static int parse_field(struct parser *p, jsonpath *jp)
{
	char *name = malloc(p->len - p->pos + 1);
	size_t n = 0;
	struct step *st;

	if (!name)
		return -ENOMEM;
	while (p->pos < p->len && !is_terminator(p->s[p->pos])) {
		if (p->s[p->pos] == '\\') {
			if (p->pos + 1 == p->len) {
				free(name);
				return perr(p, "trailing backslash");
			}
			p->pos++;
		}
		name[n++] = p->s[p->pos++];
	}
	name[n] = '\0';
	if (n == 1 && name[0] == '*') {
		free(name);
		return add_step(jp, STEP_WILDCARD) ? 0 : -ENOMEM;
	}
	st = add_step(jp, STEP_FIELD);
	if (!st) {
		free(name);
		return -ENOMEM;
	}
	st->name = name;
	return 0;
}

/* A quoted string starting at p->pos (the quote); unescapes \\, \', \",
 * \n, \t, \r.  Returns a malloc'd string or NULL (error set). */
static char *parse_quoted(struct parser *p)
{
	char q = p->s[p->pos++], *out = malloc(p->len - p->pos + 1);
	size_t n = 0;

	if (!out) {
		ah_err_set(p->err, ENOMEM, 500, "InternalError", "out of memory");
		return NULL;
	}
	while (p->pos < p->len && p->s[p->pos] != q) {
		char c = p->s[p->pos++];

		if (c == '\\' && p->pos < p->len) {
			c = p->s[p->pos++];
			if (c == 'n')
				c = '\n';
			else if (c == 't')
				c = '\t';
			else if (c == 'r')
				c = '\r';
		}
		if (c == '\0') {
			free(out);
			perr(p, "NUL in quoted string");
			return NULL;
		}
		out[n++] = c;
	}
	if (p->pos >= p->len) {
		free(out);
		perr(p, "unterminated quoted string");
		return NULL;
	}
	p->pos++;
	out[n] = '\0';
	return out;
}

static int parse_int(const char *s, size_t len, long *ret)
{
	char buf[24], *end;
	long v;

	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (*end || errno || v > INT_MAX || v < -INT_MAX)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* [i], [-1], [a:b], [a:b:c], [:], [*]. */
static int parse_slice(struct parser *p, jsonpath *jp, const char *text, size_t len)
{
	struct slice sl;
	struct step *st;
	size_t i, part = 0, start = 0;

	memset(&sl, 0, sizeof(sl));
	if (len == 1 && text[0] == '*') {
		text = ":";
		len = 1;
	}
	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != ':')
			continue;
		if (part > 2)
			return perr(p, "invalid array index");
		if (i > start) {
			if (parse_int(text + start, i - start, &sl.v[part]) < 0)
				return perr(p, "array index is not a number");
			sl.known[part] = true;
		}
		part++;
		start = i + 1;
	}
	if (part == 1) {
		/* A plain index: the end is derived, as client-go does. */
		if (!sl.known[0])
			return perr(p, "empty array index");
		sl.known[1] = true;
		sl.v[1] = sl.v[0] + 1;
		sl.derived_end = true;
	}
	st = add_step(jp, STEP_SLICE);
	if (!st)
		return -ENOMEM;
	st->sl = sl;
	return 0;
}

static int parse_path(struct parser *p, jsonpath *jp, bool in_filter);

static int compile_sub(struct parser *outer, const char *s, size_t len, jsonpath **ret)
{
	struct parser p = { s, 0, len, outer->depth + 1, outer->err };
	jsonpath *jp;
	int r;

	if (p.depth > JP_MAX_DEPTH)
		return perr(outer, "filters nested too deeply");
	jp = calloc(1, sizeof(*jp));
	if (!jp)
		return -ENOMEM;
	r = parse_path(&p, jp, true);
	if (r < 0) {
		jsonpath_free(jp);
		return r;
	}
	*ret = jp;
	return 0;
}

static void trim(const char **s, size_t *len)
{
	while (*len && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
		(*len)--;
}

static int parse_operand(struct parser *p, const char *s, size_t len, struct operand *o)
{
	trim(&s, &len);
	if (len == 0)
		return perr(p, "empty filter operand");
	if (s[0] == '\'' || s[0] == '"') {
		struct parser q = { s, 0, len, p->depth, p->err };
		char *str = parse_quoted(&q);

		if (!str)
			return -EINVAL;
		if (q.pos != len) {
			free(str);
			return perr(p, "text after quoted string in filter");
		}
		o->kind = OPND_STRING;
		o->literal = json_string(str);
		free(str);
		return o->literal ? 0 : perr(p, "filter string is not UTF-8");
	}
	if (len == 4 && !memcmp(s, "true", 4)) {
		o->kind = OPND_BOOL;
		o->literal = json_true();
		return 0;
	}
	if (len == 5 && !memcmp(s, "false", 5)) {
		o->kind = OPND_BOOL;
		o->literal = json_false();
		return 0;
	}
	if (s[0] == '-' || s[0] == '+' || (s[0] >= '0' && s[0] <= '9')) {
		char buf[64], *end;
		long long iv;
		double dv;

		if (len >= sizeof(buf))
			return perr(p, "filter number too long");
		memcpy(buf, s, len);
		buf[len] = '\0';
		if (strspn(buf + 1, "0123456789.") != len - 1)
			return perr(p, "cannot parse filter number");
		errno = 0;
		iv = strtoll(buf, &end, 10);
		if (!*end && !errno) {
			o->kind = OPND_INT;
			o->literal = json_integer(iv);
			return o->literal ? 0 : -ENOMEM;
		}
		errno = 0;
		dv = strtod(buf, &end);
		if (*end || errno)
			return perr(p, "cannot parse filter number");
		o->kind = OPND_FLOAT;
		o->literal = json_real(dv);
		return o->literal ? 0 : -ENOMEM;
	}
	if (s[0] == '@' || s[0] == '$' || s[0] == '.' || s[0] == '[') {
		o->kind = OPND_PATH;
		return compile_sub(p, s, len, &o->path);
	}
	return perr(p, "unrecognized filter operand");
}

/* "[?(" ... ")]": p->pos is just after "[?(". */
static int parse_filter(struct parser *p, jsonpath *jp)
{
	size_t start = p->pos, end, i, ops, ope;
	char quote = 0;
	struct filter *f;
	struct step *st;
	int r;

	/* The closing parenthesis is the first one outside quotes that is
	 * followed by ']'. */
	for (end = start; end < p->len; end++) {
		char c = p->s[end];

		if (quote) {
			if (c == '\\')
				end++;
			else if (c == quote)
				quote = 0;
		} else if (c == '\'' || c == '"') {
			quote = c;
		} else if (c == ')' && end + 1 < p->len && p->s[end + 1] == ']') {
			break;
		}
	}
	if (end >= p->len)
		return perr(p, "unterminated filter");
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	/* Left side: up to the first operator character outside quotes. */
	quote = 0;
	for (ops = start; ops < end; ops++) {
		char c = p->s[ops];

		if (quote) {
			if (c == quote)
				quote = 0;
		} else if (c == '\'' || c == '"') {
			quote = c;
		} else if (strchr("!<>=", c)) {
			break;
		}
	}
	for (ope = ops; ope < end && strchr("!<>=", p->s[ope]); ope++)
		;
	if (ops == end) {
		f->op = OP_EXISTS;
	} else {
		static const struct { const char *text; enum filter_op op; } opt[] = {
			{ "==", OP_EQ }, { "!=", OP_NE }, { "<", OP_LT },
			{ ">", OP_GT },  { "<=", OP_LE }, { ">=", OP_GE },
		};
		bool found = false;

		for (i = 0; i < sizeof(opt) / sizeof(opt[0]); i++) {
			if (strlen(opt[i].text) == ope - ops &&
			    !memcmp(opt[i].text, p->s + ops, ope - ops)) {
				f->op = opt[i].op;
				found = true;
			}
		}
		if (!found) {
			filter_free(f);
			p->pos = ops;
			return perr(p, "unrecognized filter operator");
		}
	}
	{
		const char *ls = p->s + start;
		size_t llen = ops - start;

		trim(&ls, &llen);
		if (llen == 0) {
			filter_free(f);
			return perr(p, "empty filter");
		}
		r = compile_sub(p, ls, llen, &f->left);
	}
	if (r == 0 && f->op != OP_EXISTS)
		r = parse_operand(p, p->s + ope, end - ope, &f->right);
	if (r < 0) {
		filter_free(f);
		return r;
	}
	st = add_step(jp, STEP_FILTER);
	if (!st) {
		filter_free(f);
		return -ENOMEM;
	}
	st->flt = f;
	p->pos = end + 2;
	return 0;
}

static int parse_bracket(struct parser *p, jsonpath *jp)
{
	size_t start, end;
	struct step *st;

	if (p->pos + 2 < p->len && p->s[p->pos + 1] == '?' && p->s[p->pos + 2] == '(') {
		p->pos += 3;
		return parse_filter(p, jp);
	}
	p->pos++;
	while (peek(p) == ' ')
		p->pos++;
	if (peek(p) == '\'' || peek(p) == '"') {
		char *key = parse_quoted(p);

		if (!key)
			return -EINVAL;
		while (peek(p) == ' ')
			p->pos++;
		if (peek(p) != ']') {
			free(key);
			return perr(p, peek(p) == ',' ? "unions are not supported" : "expected ]");
		}
		p->pos++;
		st = add_step(jp, STEP_FIELD);
		if (!st) {
			free(key);
			return -ENOMEM;
		}
		st->name = key;
		return 0;
	}
	start = p->pos;
	for (end = start; end < p->len && p->s[end] != ']'; end++)
		if (p->s[end] == ',')
			return perr(p, "unions are not supported");
	if (end >= p->len)
		return perr(p, "unterminated array index");
	p->pos = end + 1;
	{
		const char *t = p->s + start;
		size_t tl = end - start;

		trim(&t, &tl);
		return parse_slice(p, jp, t, tl);
	}
}

static int parse_path(struct parser *p, jsonpath *jp, bool in_filter)
{
	int r;

	while (p->pos < p->len) {
		char c = p->s[p->pos];

		switch (c) {
		case ' ':
		case '\t':
			p->pos++;
			break;
		case '$':
		case '@':
			/* The current object (the element, inside a filter). */
			p->pos++;
			break;
		case '.':
			if (p->pos + 1 < p->len && p->s[p->pos + 1] == '.')
				return perr(p, "recursive descent (..) is not supported");
			p->pos++;
			r = parse_field(p, jp);
			if (r < 0)
				return r;
			break;
		case '[':
			r = parse_bracket(p, jp);
			if (r < 0)
				return r;
			break;
		case '{':
		case '}':
			/* Text between actions ({.a}{"\n"}{.b}) is not supported. */
			return perr(p, "only one {} action is supported");
		default:
			return perr(p, in_filter ? "unexpected character in filter path"
						 : "unexpected character (text outside {} and "
						   "range/end are not supported)");
		}
	}
	return 0;
}

/* Whether the character at i is escaped (an odd run of backslashes). */
static bool escaped_at(const char *s, size_t i)
{
	size_t n = 0;

	while (i > n && s[i - n - 1] == '\\')
		n++;
	return n % 2 == 1;
}

int jsonpath_compile(const char *expr, jsonpath **ret, ah_err *err)
{
	struct parser p = { expr, 0, 0, 0, err };
	jsonpath *jp;
	int r;

	if (!expr)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "jsonpath: empty expression");
	p.len = strlen(expr);
	if (p.len > JP_MAX_EXPR)
		return ah_err_set(err, E2BIG, 400, "BadRequest", "jsonpath: expression too long");
	trim(&p.s, &p.len);
	/* An escaped blank at the end belongs to the last field. */
	if (p.len && p.s + p.len < expr + strlen(expr) && escaped_at(p.s, p.len))
		p.len++;
	if (p.len && p.s[0] == '{') {
		/* One {...} action; the brace must close at the very end. */
		if (p.len < 2 || p.s[p.len - 1] != '}' || escaped_at(p.s, p.len - 1))
			return ah_err_set(err, EINVAL, 400, "BadRequest", "jsonpath: unclosed action");
		p.s++;
		p.len -= 2;
	}
	jp = calloc(1, sizeof(*jp));
	if (!jp)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	r = parse_path(&p, jp, false);
	if (r < 0) {
		jsonpath_free(jp);
		if (r == -ENOMEM)
			ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
		return r;
	}
	*ret = jp;
	return 0;
}

/* ---------------------------------------------------------------------------
 * Evaluation.  Lists of borrowed values; an error empties the result. */

struct vlist {
	const json_t **v;
	size_t n, alloc;
};

static int vl_add(struct vlist *l, const json_t *v)
{
	if (l->n == l->alloc) {
		size_t na = l->alloc ? l->alloc * 2 : 8;
		const json_t **nv = realloc(l->v, na * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		l->v = nv;
		l->alloc = na;
	}
	l->v[l->n++] = v;
	return 0;
}

static void vl_release(struct vlist *l)
{
	free(l->v);
	l->v = NULL;
	l->n = l->alloc = 0;
}

static int eval_list(const jsonpath *jp, const struct vlist *in, struct vlist *out);

static int eval_slice(const struct slice *sl, const json_t *arr, struct vlist *out)
{
	long len = (long)json_array_size(arr), start, end, step = 1, i;

	start = sl->known[0] ? sl->v[0] : 0;
	if (start < 0)
		start += len;
	end = sl->known[1] ? sl->v[1] : len;
	if (end < 0 || (end == 0 && sl->derived_end))
		end += len;
	if (start == end)
		return 0;
	if (start < 0 || start >= len || end < 0 || end > len || start > end)
		return -ERANGE;
	if (sl->known[2]) {
		if (sl->v[2] <= 0)
			return -EINVAL;
		step = sl->v[2];
	}
	for (i = start; i < end; i += step)
		if (vl_add(out, json_array_get(arr, (size_t)i)) < 0)
			return -ENOMEM;
	return 0;
}

/* text/template's basic kinds, as client-go's filter comparisons use them. */
enum kind { K_INVALID, K_BOOL, K_INT, K_FLOAT, K_STRING };

static enum kind basic_kind(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_TRUE:
	case JSON_FALSE: return K_BOOL;
	case JSON_INTEGER: return K_INT;
	case JSON_REAL: return K_FLOAT;
	case JSON_STRING: return K_STRING;
	default: return K_INVALID;
	}
}

/* <0 error, else 1 pass / 0 fail. */
static int compare(const json_t *a, const json_t *b, enum filter_op op)
{
	enum kind ka = basic_kind(a), kb = basic_kind(b);
	int c;

	if (ka == K_INVALID || kb == K_INVALID || ka != kb)
		return -EINVAL;
	switch (ka) {
	case K_BOOL:
		if (op != OP_EQ && op != OP_NE)
			return -EINVAL;
		c = json_is_true(a) != json_is_true(b);
		break;
	case K_INT: {
		json_int_t x = json_integer_value(a), y = json_integer_value(b);

		c = x < y ? -1 : x > y;
		break;
	}
	case K_FLOAT: {
		double x = json_real_value(a), y = json_real_value(b);

		c = x < y ? -1 : x > y;
		break;
	}
	default: {
		size_t la = json_string_length(a), lb = json_string_length(b);
		int m = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);

		c = m ? m : (la < lb ? -1 : la > lb);
	}
	}
	switch (op) {
	case OP_EQ: return c == 0;
	case OP_NE: return c != 0;
	case OP_LT: return c < 0;
	case OP_GT: return c > 0;
	case OP_LE: return c <= 0;
	case OP_GE: return c >= 0;
	default: return -EINVAL;
	}
}

/* Evaluate a filter's sub-path against one element. */
static int eval_sub(const jsonpath *jp, const json_t *el, struct vlist *out)
{
	struct vlist in = { NULL, 0, 0 };
	int r = vl_add(&in, el);

	if (r == 0)
		r = eval_list(jp, &in, out);
	vl_release(&in);
	return r;
}

static int eval_filter(const struct filter *f, const json_t *arr, struct vlist *out)
{
	size_t i;
	const json_t *el;

	if (!json_is_array(arr))
		return -EINVAL;
	json_array_foreach(arr, i, el) {
		struct vlist lefts = { NULL, 0, 0 }, rights = { NULL, 0, 0 };
		const json_t *right;
		int r = eval_sub(f->left, el, &lefts);

		if (r == 0 && f->op == OP_EXISTS) {
			if (lefts.n > 0)
				r = vl_add(out, el);
		} else if (r == 0 && lefts.n == 1) {
			if (f->right.kind == OPND_PATH) {
				r = eval_sub(f->right.path, el, &rights);
				right = rights.n == 1 ? rights.v[0] : NULL;
				if (r == 0 && rights.n > 1)
					r = -EINVAL;
			} else {
				right = f->right.literal;
			}
			if (r == 0 && right) {
				r = compare(lefts.v[0], right, f->op);
				if (r > 0)
					r = vl_add(out, el);
			}
		} else if (r == 0 && lefts.n > 1) {
			r = -EINVAL; /* can only compare one element at a time */
		}
		vl_release(&lefts);
		vl_release(&rights);
		if (r < 0)
			return r;
	}
	return 0;
}

static int eval_step(const struct step *st, const struct vlist *in, struct vlist *out)
{
	size_t i, j;
	int r = 0;

	for (i = 0; i < in->n && r == 0; i++) {
		const json_t *v = in->v[i], *x;
		const char *k;

		switch (st->kind) {
		case STEP_FIELD:
			if (!st->name[0]) {
				r = vl_add(out, v);
			} else if (json_is_object(v)) {
				x = json_object_get(v, st->name);
				if (x)
					r = vl_add(out, x);
			}
			break;
		case STEP_WILDCARD:
			if (json_is_object(v)) {
				json_object_foreach((json_t *)v, k, x)
					if ((r = vl_add(out, x)) < 0)
						break;
			} else if (json_is_array(v)) {
				json_array_foreach(v, j, x)
					if ((r = vl_add(out, x)) < 0)
						break;
			}
			break;
		case STEP_SLICE:
			if (json_is_null(v))
				break;
			if (!json_is_array(v))
				return -EINVAL;
			r = eval_slice(&st->sl, v, out);
			break;
		case STEP_FILTER:
			r = eval_filter(st->flt, v, out);
			break;
		}
	}
	return r;
}

static int eval_list(const jsonpath *jp, const struct vlist *in, struct vlist *out)
{
	struct vlist cur = { NULL, 0, 0 }, next = { NULL, 0, 0 };
	size_t i;
	int r = 0;

	for (i = 0; i < in->n && r == 0; i++)
		r = vl_add(&cur, in->v[i]);
	for (i = 0; i < jp->n && r == 0; i++) {
		r = eval_step(&jp->steps[i], &cur, &next);
		vl_release(&cur);
		cur = next;
		next.v = NULL;
		next.n = next.alloc = 0;
	}
	vl_release(&next);
	for (i = 0; i < cur.n && r == 0; i++)
		r = vl_add(out, cur.v[i]);
	vl_release(&cur);
	return r;
}

json_t *jsonpath_eval(const jsonpath *jp, const json_t *doc)
{
	struct vlist in = { NULL, 0, 0 }, out = { NULL, 0, 0 };
	json_t *res = json_array();
	size_t i;
	int r;

	if (!res)
		return NULL;
	if (!jp || !doc)
		return res;
	r = vl_add(&in, doc);
	if (r == 0)
		r = eval_list(jp, &in, &out);
	if (r == 0)
		for (i = 0; i < out.n; i++)
			if (json_array_append(res, (json_t *)out.v[i]) < 0) {
				r = -ENOMEM;
				break;
			}
	vl_release(&in);
	vl_release(&out);
	if (r == -ENOMEM) {
		json_decref(res);
		return NULL;
	}
	if (r < 0)
		json_array_clear(res);
	return res;
}
