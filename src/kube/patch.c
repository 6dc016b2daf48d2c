/* patch.c - JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic
 * merge patch, as the Kubernetes API server applies them; see patch.h.
 *
 * Each entry point deep-copies the document and patches the copy, so a
 * failure part way leaves nothing behind (JSON patch is all-or-nothing) and
 * the result shares no nodes with the caller's values.  Recursion follows
 * the nesting of the inputs, which the JSON parser bounds.
 *
 * The strategic merge patch reproduces k8s.io/apimachinery's strategicpatch
 * as the server runs it (parallel lists merged, unmatched nulls dropped),
 * including how merged lists are ordered, because `kubectl apply` relies on
 * that order and users see it in `kubectl get -o yaml`. */
#include "kube/patch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

/* The API server refuses JSON patches with more operations than this. */
#define JSONPATCH_MAX_OPS 10000
/* Bound on the nodes "copy" operations may add, so that a small patch that
 * copies the document into itself again and again cannot exhaust memory. */
#define JSONPATCH_MAX_COPY_NODES (1u << 20)

/* jansson's iterators take non-const pointers but do not modify the value. */
static json_t *mut(const json_t *j)
{
	return (json_t *)j;
}

static int oom(ah_err *err)
{
	return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
}

/* JSON equality where numbers compare by value (1 equals 1.0), as the API
 * server's decoded documents (every number a float64) compare. */
static bool json_same(const json_t *a, const json_t *b)
{
	const char *key;
	json_t *v;
	size_t i;

	if (!a || !b)
		return a == b;
	if (json_is_number(a) && json_is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return false;
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach(mut(a), key, v)
			if (!json_same(v, json_object_get(b, key)))
				return false;
		return true;
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (i = 0; i < json_array_size(a); i++)
			if (!json_same(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	default:
		return true;
	}
}

/* ---- JSON merge patch (RFC 7386) ------------------------------------------ */

/* Merge patch into target (a reference the function takes over, or NULL);
 * returns the merged value (a new reference) or NULL when out of memory. */
static json_t *merge_value(json_t *target, const json_t *patch)
{
	const char *key;
	json_t *v;

	if (!json_is_object(patch)) {
		json_decref(target);
		return json_deep_copy(patch);
	}
	if (!json_is_object(target)) {
		json_decref(target);
		if (!(target = json_object()))
			return NULL;
	}
	json_object_foreach(mut(patch), key, v) {
		json_t *merged;

		if (json_is_null(v)) {
			json_object_del(target, key);
			continue;
		}
		merged = merge_value(json_incref(json_object_get(target, key)), v);
		if (!merged || json_object_set_new(target, key, merged) < 0) {
			json_decref(target);
			return NULL;
		}
	}
	return target;
}

int patch_merge(const json_t *doc, const json_t *patch, json_t **ret, ah_err *err)
{
	json_t *res;

	if (!patch)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "the merge patch is empty");
	res = merge_value(doc ? json_deep_copy(doc) : NULL, patch);
	if (!res)
		return oom(err);
	*ret = res;
	return 0;
}

/* ---- JSON patch (RFC 6902, pointers per RFC 6901) -------------------------- */

struct jptr {
	char **tok; /* unescaped reference tokens */
	size_t n;
};

static void jptr_free(struct jptr *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free(p->tok[i]);
	free(p->tok);
	p->tok = NULL;
	p->n = 0;
}

/* 0, -EINVAL for a string that is not a JSON pointer, -ENOMEM. */
static int jptr_parse(const char *s, struct jptr *p)
{
	size_t n = 0, i;
	const char *c;

	p->tok = NULL;
	p->n = 0;
	if (!*s)
		return 0;
	if (*s != '/')
		return -EINVAL;
	for (c = s; *c; c++) {
		if (*c == '/')
			n++;
		else if (*c == '~' && c[1] != '0' && c[1] != '1')
			return -EINVAL;
	}
	if (!(p->tok = calloc(n, sizeof(char *))))
		return -ENOMEM;
	for (i = 0, c = s + 1; i < n; i++) {
		size_t len = strcspn(c, "/");
		char *t = malloc(len + 1), *o = t;
		size_t k;

		if (!t) {
			jptr_free(p);
			return -ENOMEM;
		}
		p->tok[p->n++] = t;
		for (k = 0; k < len; k++) {
			if (c[k] == '~') {
				*o++ = c[k + 1] == '0' ? '~' : '/';
				k++;
			} else {
				*o++ = c[k];
			}
		}
		*o = '\0';
		c += len + 1;
	}
	return 0;
}

/* An RFC 6901 array index: "0" or a number without leading zeros. */
static bool parse_index(const char *t, size_t *ret)
{
	size_t v = 0;

	if (!*t || (t[0] == '0' && t[1]))
		return false;
	for (; *t; t++) {
		if (*t < '0' || *t > '9' || v > (SIZE_MAX / 2) / 10)
			return false;
		v = v * 10 + (size_t)(*t - '0');
	}
	*ret = v;
	return true;
}

/* The value reached by the first `depth` tokens, or NULL. */
static json_t *jptr_walk(json_t *root, const struct jptr *p, size_t depth)
{
	json_t *cur = root;
	size_t i, idx;

	for (i = 0; cur && i < depth; i++) {
		if (json_is_object(cur))
			cur = json_object_get(cur, p->tok[i]);
		else if (json_is_array(cur) && parse_index(p->tok[i], &idx))
			cur = json_array_get(cur, idx);
		else
			return NULL;
	}
	return cur;
}

static json_t *jptr_get(json_t *root, const struct jptr *p)
{
	return jptr_walk(root, p, p->n);
}

struct jpatch {
	json_t *root;
	size_t copied; /* nodes added by copy operations so far */
	ah_err *err;
};

static int jp_fail(struct jpatch *jp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int jp_fail(struct jpatch *jp, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ah_err_setv(jp->err, EINVAL, 422, "Invalid", fmt, ap);
	va_end(ap);
	return r;
}

/* Add `value` (taken over) at p.  `who` names the operation in messages:
 * "add", or "move"/"copy" whose destination this is. */
static int jp_add(struct jpatch *jp, const char *who, const char *path, const struct jptr *p,
		  json_t *value)
{
	json_t *parent;
	const char *last;
	size_t idx;

	if (p->n == 0) {
		json_decref(jp->root);
		jp->root = value;
		return 0;
	}
	parent = jptr_walk(jp->root, p, p->n - 1);
	last = p->tok[p->n - 1];
	if (json_is_object(parent)) {
		if (json_object_set_new(parent, last, value) < 0)
			return oom(jp->err);
		return 0;
	}
	if (json_is_array(parent)) {
		if (strcmp(last, "-") == 0) {
			if (json_array_append_new(parent, value) < 0)
				return oom(jp->err);
			return 0;
		}
		if (!parse_index(last, &idx) || idx > json_array_size(parent)) {
			json_decref(value);
			return jp_fail(jp,
				       "error in %s for path: '%s': Unable to access invalid index: %s: "
				       "invalid index referenced",
				       who, path, last);
		}
		if (json_array_insert_new(parent, idx, value) < 0)
			return oom(jp->err);
		return 0;
	}
	json_decref(value);
	if (strcmp(who, "add") != 0)
		return jp_fail(jp,
			       "%s operation does not apply: doc is missing destination path: %s: "
			       "missing value",
			       who, path);
	return jp_fail(jp, "add operation does not apply: doc is missing path: \"%s\": missing value",
		       path);
}

/* Remove the value at p; with ret_removed, hand it to the caller. */
static int jp_remove(struct jpatch *jp, const char *path, const struct jptr *p,
		     json_t **ret_removed)
{
	json_t *parent, *v;
	const char *last;
	size_t idx;

	if (p->n == 0)
		return jp_fail(jp, "remove operation does not apply: cannot remove the whole "
				   "document");
	parent = jptr_walk(jp->root, p, p->n - 1);
	last = p->tok[p->n - 1];
	if (json_is_object(parent)) {
		if (!(v = json_object_get(parent, last)))
			return jp_fail(jp,
				       "error in remove for path: '%s': Unable to remove nonexistent "
				       "key: %s: missing value",
				       path, last);
		if (ret_removed)
			*ret_removed = json_incref(v);
		json_object_del(parent, last);
		return 0;
	}
	if (json_is_array(parent)) {
		if (!parse_index(last, &idx) || idx >= json_array_size(parent))
			return jp_fail(jp,
				       "error in remove for path: '%s': Unable to remove invalid "
				       "index: %s: invalid index referenced",
				       path, last);
		if (ret_removed)
			*ret_removed = json_incref(json_array_get(parent, idx));
		json_array_remove(parent, idx);
		return 0;
	}
	return jp_fail(jp, "remove operation does not apply: doc is missing path: \"%s\": "
			   "missing value",
		       path);
}

static int jp_replace(struct jpatch *jp, const char *path, const struct jptr *p, json_t *value)
{
	json_t *parent;
	const char *last;
	size_t idx;

	if (p->n == 0) {
		json_decref(jp->root);
		jp->root = value;
		return 0;
	}
	parent = jptr_walk(jp->root, p, p->n - 1);
	last = p->tok[p->n - 1];
	if (json_is_object(parent) && json_object_get(parent, last)) {
		if (json_object_set_new(parent, last, value) < 0)
			return oom(jp->err);
		return 0;
	}
	if (json_is_array(parent) && parse_index(last, &idx) && idx < json_array_size(parent)) {
		if (json_array_set_new(parent, idx, value) < 0)
			return oom(jp->err);
		return 0;
	}
	json_decref(value);
	if (json_is_object(parent) || json_is_array(parent))
		return jp_fail(jp, "replace operation does not apply: doc is missing key: %s: "
				   "missing value",
			       path);
	return jp_fail(jp, "replace operation does not apply: doc is missing path: %s: missing "
			   "value",
		       path);
}

static bool jptr_is_proper_prefix(const struct jptr *a, const struct jptr *b)
{
	size_t i;

	if (a->n >= b->n)
		return false;
	for (i = 0; i < a->n; i++)
		if (strcmp(a->tok[i], b->tok[i]) != 0)
			return false;
	return true;
}

static size_t count_nodes(const json_t *v, size_t limit)
{
	size_t n = 1, i;
	const char *key;
	json_t *c;

	if (json_is_object(v)) {
		json_object_foreach(mut(v), key, c) {
			n += count_nodes(c, limit);
			if (n > limit)
				break;
		}
	} else if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v) && n <= limit; i++)
			n += count_nodes(json_array_get(v, i), limit);
	}
	return n;
}

enum jp_kind { JP_ADD, JP_REMOVE, JP_REPLACE, JP_MOVE, JP_COPY, JP_TEST };

static const char *const jp_names[] = { "add", "remove", "replace", "move", "copy", "test" };

static int jp_apply_one(struct jpatch *jp, enum jp_kind kind, const json_t *op)
{
	const char *path = json_string_value(json_object_get(op, "path"));
	const char *from = json_string_value(json_object_get(op, "from"));
	const json_t *value = json_object_get(op, "value");
	struct jptr p, f = { 0 };
	json_t *v, *dup;
	size_t nodes;
	int r;

	if (jptr_parse(path, &p) < 0)
		return oom(jp->err);
	if ((kind == JP_MOVE || kind == JP_COPY) && jptr_parse(from, &f) < 0) {
		jptr_free(&p);
		return oom(jp->err);
	}
	switch (kind) {
	case JP_ADD:
	case JP_REPLACE:
		if (!(dup = json_deep_copy(value))) {
			r = oom(jp->err);
			break;
		}
		r = kind == JP_ADD ? jp_add(jp, "add", path, &p, dup) : jp_replace(jp, path, &p, dup);
		break;
	case JP_REMOVE:
		r = jp_remove(jp, path, &p, NULL);
		break;
	case JP_MOVE:
		if (!jptr_get(jp->root, &f)) {
			r = jp_fail(jp, "move operation does not apply: doc is missing from path: %s: "
					"missing value",
				    from);
			break;
		}
		if (strcmp(from, path) == 0) {
			r = 0;
			break;
		}
		if (jptr_is_proper_prefix(&f, &p)) {
			r = jp_fail(jp, "move operation does not apply: cannot move %s into its own "
					"child %s",
				    from, path);
			break;
		}
		v = NULL;
		r = jp_remove(jp, from, &f, &v);
		if (r == 0)
			r = jp_add(jp, "move", path, &p, v);
		break;
	case JP_COPY:
		if (!(v = jptr_get(jp->root, &f))) {
			r = jp_fail(jp, "copy operation does not apply: doc is missing from path: %s: "
					"missing value",
				    from);
			break;
		}
		nodes = count_nodes(v, JSONPATCH_MAX_COPY_NODES);
		if (nodes > JSONPATCH_MAX_COPY_NODES - jp->copied) {
			r = jp_fail(jp,
				    "Unable to complete the copy, the accumulated size increase of "
				    "copy is %zu, exceeding the limit %u",
				    jp->copied + nodes, JSONPATCH_MAX_COPY_NODES);
			break;
		}
		jp->copied += nodes;
		if (!(dup = json_deep_copy(v))) {
			r = oom(jp->err);
			break;
		}
		r = jp_add(jp, "copy", path, &p, dup);
		break;
	case JP_TEST:
	default:
		v = jptr_get(jp->root, &p);
		if (!v && p.n > 0) {
			json_t *parent = jptr_walk(jp->root, &p, p.n - 1);

			if (!json_is_object(parent) && !json_is_array(parent)) {
				r = jp_fail(jp, "test operation does not apply: is missing path: %s: "
						"missing value",
					    path);
				break;
			}
		}
		r = v && json_same(v, value) ? 0
					     : jp_fail(jp, "testing value %s failed: test failed", path);
		break;
	}
	jptr_free(&p);
	jptr_free(&f);
	return r;
}

static int jp_bad_op(ah_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int jp_bad_op(ah_err *err, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ah_err_set(err, EINVAL, 400, "BadRequest", "invalid JSON patch operation: %s", msg);
}

/* Check the shape of every operation before applying any, so that a
 * malformed document is a 400 whatever the document holds. */
static int jp_check(const json_t *ops, enum jp_kind *kinds, ah_err *err)
{
	const json_t *op;
	size_t i;

	json_array_foreach(mut(ops), i, op) {
		const json_t *o = json_object_get(op, "op");
		const char *name, *ptr_fields[2] = { "path", "from" };
		int k, f;
		struct jptr p;

		if (!json_is_object(op))
			return jp_bad_op(err, "operation %zu is not an object", i);
		if (!json_is_string(o))
			return jp_bad_op(err, "operation %zu has no \"op\"", i);
		name = json_string_value(o);
		for (k = 0; k < 6 && strcmp(jp_names[k], name) != 0; k++)
			;
		if (k == 6)
			return jp_bad_op(err, "unknown op \"%s\" in operation %zu", name, i);
		kinds[i] = (enum jp_kind)k;
		for (f = 0; f < ((k == JP_MOVE || k == JP_COPY) ? 2 : 1); f++) {
			const json_t *ps = json_object_get(op, ptr_fields[f]);
			int r;

			if (!json_is_string(ps))
				return jp_bad_op(err, "%s operation %zu has no \"%s\"", name, i,
						 ptr_fields[f]);
			r = jptr_parse(json_string_value(ps), &p);
			if (r == -ENOMEM)
				return oom(err);
			if (r < 0)
				return jp_bad_op(err,
						 "%s operation %zu: \"%s\" %s is not a JSON pointer",
						 name, i, ptr_fields[f], json_string_value(ps));
			jptr_free(&p);
		}
		if ((k == JP_ADD || k == JP_REPLACE || k == JP_TEST) && !json_object_get(op, "value"))
			return jp_bad_op(err, "%s operation %zu has no \"value\"", name, i);
	}
	return 0;
}

int patch_json(const json_t *doc, const json_t *ops, json_t **ret, ah_err *err)
{
	struct jpatch jp = { .err = err };
	enum jp_kind *kinds;
	size_t i, n;
	int r = 0;

	if (!json_is_array(ops))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "invalid JSON patch: the patch must be a JSON array of operations");
	n = json_array_size(ops);
	if (n > JSONPATCH_MAX_OPS)
		return ah_err_set(err, E2BIG, 413, "RequestEntityTooLarge",
				  "The allowed maximum operations in a JSON patch is %d, got %zu",
				  JSONPATCH_MAX_OPS, n);
	if (!(kinds = calloc(n ? n : 1, sizeof(*kinds))))
		return oom(err);
	if ((r = jp_check(ops, kinds, err)) < 0)
		goto out;
	if (!(jp.root = doc ? json_deep_copy(doc) : json_null())) {
		r = oom(err);
		goto out;
	}
	for (i = 0; i < n && r == 0; i++)
		r = jp_apply_one(&jp, kinds[i], json_array_get(ops, i));
	if (r < 0) {
		json_decref(jp.root);
		goto out;
	}
	*ret = jp.root;
out:
	free(kinds);
	return r;
}

/* ---- strategic merge patch -------------------------------------------------- */

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define SET_ORDER "$setElementOrder"
#define DELETE_PRIMITIVE "$deleteFromPrimitiveList"

/* The metadata lists every kind has (ObjectMeta's patch tags). */
static const struct smp_list_meta smp_builtin_lists[] = {
	{ "metadata.ownerReferences", "uid" },
	{ "metadata.finalizers", NULL },
	{ NULL, NULL },
};

struct smp {
	const struct smp_list_meta *lists;
	ah_err *err;
};

static int smp_fail(struct smp *s, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int smp_fail(struct smp *s, int status, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ah_err_setv(s->err, EINVAL, status, status == 400 ? "BadRequest" : "Invalid", fmt, ap);
	va_end(ap);
	return r;
}

/* A short JSON rendering of v for error messages (caller frees). */
static char *smp_dump(const json_t *v)
{
	char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	if (d && strlen(d) > 300)
		strcpy(d + 296, "...");
	return d;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether the list at `path` merges, and by which key (NULL: a set of
 * primitives).  Lists not declared are replaced whole. */
static bool smp_list_lookup(const struct smp *s, const char *path, const char **ret_key)
{
	const struct smp_list_meta *m;

	for (m = smp_builtin_lists; m->path; m++)
		if (strcmp(m->path, path) == 0)
			goto found;
	for (m = s->lists; m && m->path; m++)
		if (strcmp(m->path, path) == 0)
			goto found;
	*ret_key = NULL;
	return false;
found:
	*ret_key = m->merge_key;
	return true;
}

/* "<base>.<key>", "<key>" at the root, or "<base>[]" for list items. */
static char *path_join(const char *base, const char *key)
{
	size_t bl = strlen(base), kl = key ? strlen(key) : 2;
	char *p = malloc(bl + kl + 2);

	if (!p)
		return NULL;
	if (!key)
		snprintf(p, bl + kl + 2, "%s[]", base);
	else if (!bl)
		snprintf(p, bl + kl + 2, "%s", key);
	else
		snprintf(p, bl + kl + 2, "%s.%s", base, key);
	return p;
}

/* -- identities of list items, hashed -- */

/* Lists are merged by identity: the merge key's value for lists of objects,
 * the item itself for primitives.  A canonical string of the identity keys a
 * jansson object used as a hash table, so that merging and ordering stay
 * linear in the list sizes. */
struct idmap {
	json_t *map; /* identity string -> first position */
	strbuf key;
};

static int idmap_init(struct idmap *m)
{
	strbuf_init(&m->key, 0);
	m->map = json_object();
	return m->map ? 0 : -ENOMEM;
}

static void idmap_release(struct idmap *m)
{
	json_decref(m->map);
	m->map = NULL;
	strbuf_release(&m->key);
}

static int id_key(strbuf *sb, const json_t *v)
{
	char *d;
	double x;
	int r;

	strbuf_reset(sb);
	switch (json_typeof(v)) {
	case JSON_STRING:
		r = strbuf_addch(sb, 's');
		return r ? r : strbuf_add(sb, json_string_value(v), json_string_length(v));
	case JSON_INTEGER:
		return strbuf_addf(sb, "n%" JSON_INTEGER_FORMAT, json_integer_value(v));
	case JSON_REAL:
		x = json_real_value(v);
		/* 1.0 and 1 are one number, as in the API server. */
		if (x > -9.0e18 && x < 9.0e18 && (double)(long long)x == x)
			return strbuf_addf(sb, "n%lld", (long long)x);
		return strbuf_addf(sb, "n%.17g", x);
	case JSON_TRUE:
		return strbuf_addch(sb, 't');
	case JSON_FALSE:
		return strbuf_addch(sb, 'f');
	case JSON_NULL:
		return strbuf_addch(sb, 'z');
	default:
		if (!(d = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)))
			return -ENOMEM;
		r = strbuf_addf(sb, "j%s", d);
		free(d);
		return r;
	}
}

/* Record id at pos unless already there.  A NULL id (an item without its
 * merge key) is never recorded. */
static int idmap_add(struct idmap *m, const json_t *id, size_t pos)
{
	json_t *n;
	int r;

	if (!id)
		return 0;
	if ((r = id_key(&m->key, id)) < 0)
		return r;
	if (json_object_getn(m->map, m->key.buf, m->key.len))
		return 0;
	if (!(n = json_integer((json_int_t)pos)) ||
	    json_object_setn_new_nocheck(m->map, m->key.buf, m->key.len, n) < 0)
		return -ENOMEM;
	return 0;
}

/* The recorded position of id, or -1. */
static int idmap_get(struct idmap *m, const json_t *id, long *ret)
{
	json_t *n;
	int r;

	*ret = -1;
	if (!id)
		return 0;
	if ((r = id_key(&m->key, id)) < 0)
		return r;
	if ((n = json_object_getn(m->map, m->key.buf, m->key.len)))
		*ret = (long)json_integer_value(n);
	return 0;
}

static const json_t *ident(const json_t *item, const char *merge_key)
{
	if (!merge_key)
		return item;
	return json_is_object(item) ? json_object_get(item, merge_key) : NULL;
}

static int idmap_fill(struct idmap *m, const json_t *list, const char *merge_key)
{
	size_t i;
	int r = 0;

	for (i = 0; r == 0 && i < json_array_size(list); i++)
		r = idmap_add(m, ident(json_array_get(list, i), merge_key), i);
	return r;
}

/* -- ordering -- */

struct ranked {
	json_t *item;
	long patch_pos;  /* position in the patch order, -1 if not named there */
	long server_pos; /* position in the original list, -1 if new */
	size_t pos;      /* position in the merged list */
};

static int cmp_patch_pos(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->patch_pos != y->patch_pos)
		return x->patch_pos < y->patch_pos ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The order the API server gives a merged list: the items named in the
 * patch order (the patch list, or $setElementOrder) come in that order; the
 * others ("server-only") keep their order and are slotted in before the
 * first patch item that comes after them in the original list.  A server-
 * only item is never put before an item new to the list, so `kubectl patch`
 * adding an item puts it first.  Takes over `merged`. */
static int smp_order(struct smp *s, json_t *merged, struct idmap *patch_order,
		     struct idmap *server_order, const char *merge_key, json_t **ret)
{
	size_t n = json_array_size(merged), i, nl = 0, nr = 0, a, b;
	struct ranked *left = NULL, *right = NULL;
	json_t *out = NULL;
	int r = -ENOMEM;

	if (n == 0) {
		*ret = merged;
		return 0;
	}
	left = calloc(n, sizeof(*left));
	right = calloc(n, sizeof(*right));
	if (!left || !right || !(out = json_array()))
		goto done;
	for (i = 0; i < n; i++) {
		struct ranked rk = { json_array_get(merged, i), -1, -1, i };
		const json_t *id = ident(rk.item, merge_key);

		if ((r = idmap_get(patch_order, id, &rk.patch_pos)) < 0 ||
		    (r = idmap_get(server_order, id, &rk.server_pos)) < 0)
			goto done;
		if (rk.patch_pos >= 0)
			right[nr++] = rk;
		else
			left[nl++] = rk;
	}
	qsort(right, nr, sizeof(*right), cmp_patch_pos);
	for (a = b = 0; a < nl || b < nr;) {
		json_t *take;

		if (a < nl && b < nr)
			take = (left[a].server_pos >= 0 && right[b].server_pos >= 0 &&
				left[a].server_pos < right[b].server_pos)
				       ? left[a++].item
				       : right[b++].item;
		else
			take = a < nl ? left[a++].item : right[b++].item;
		if (json_array_append(out, take) < 0) {
			r = -ENOMEM;
			goto done;
		}
	}
	r = 0;
done:
	free(left);
	free(right);
	json_decref(merged);
	if (r < 0) {
		json_decref(out);
		return oom(s->err);
	}
	*ret = out;
	return 0;
}

/* -- maps and lists -- */

static int smp_map(struct smp *s, json_t *orig, const json_t *patch, const char *path,
		   json_t **ret);

enum kind { K_NONE, K_OBJECT, K_ARRAY, K_STRING, K_NUMBER, K_BOOL, K_NULL };

static enum kind kind_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return K_OBJECT;
	case JSON_ARRAY: return K_ARRAY;
	case JSON_STRING: return K_STRING;
	case JSON_INTEGER:
	case JSON_REAL: return K_NUMBER;
	case JSON_TRUE:
	case JSON_FALSE: return K_BOOL;
	default: return K_NULL;
	}
}

/* All items of both lists must have one kind, and not be lists. */
static int list_kind(struct smp *s, const json_t *a, const json_t *b, const char *path,
		     enum kind *ret)
{
	const json_t *lists[2] = { a, b };
	enum kind k = K_NONE;
	size_t i, l;

	for (l = 0; l < 2; l++) {
		for (i = 0; i < json_array_size(lists[l]); i++) {
			enum kind ek = kind_of(json_array_get(lists[l], i));

			if (k == K_NONE && ek == K_ARRAY)
				return smp_fail(s, 422, "lists of lists are not supported (at %s)",
						path);
			if (k == K_NONE)
				k = ek;
			else if (ek != k)
				return smp_fail(s, 422, "list element types are not identical in %s",
						path);
		}
	}
	*ret = k;
	return 0;
}

static int no_merge_key(struct smp *s, const json_t *item, const char *merge_key)
{
	char *d = smp_dump(item);
	int r = smp_fail(s, 400, "map: %s does not contain declared merge key: %s",
			 d ? d : "{...}", merge_key);

	free(d);
	return r;
}

static int bad_directive(struct smp *s, const json_t *directive, const json_t *map)
{
	char *dd = json_is_string(directive) ? NULL : smp_dump(directive), *dm = smp_dump(map);
	int r = smp_fail(s, 400, "unknown patch type: %s in map: %s",
			 json_is_string(directive) ? json_string_value(directive) : (dd ? dd : "?"),
			 dm ? dm : "{...}");

	free(dd);
	free(dm);
	return r;
}

static int smp_clean_list(struct smp *s, const json_t *v, const char *path, json_t **ret);

/* A value from the patch for a place the document does not have (or has
 * with another type): nulls dropped and directives applied, as if merged
 * into an empty value. */
static int smp_clean(struct smp *s, const json_t *v, const char *path, json_t **ret)
{
	if (json_is_object(v))
		return smp_map(s, NULL, v, path, ret);
	if (json_is_array(v))
		return smp_clean_list(s, v, path, ret);
	if (!(*ret = json_deep_copy(v)))
		return oom(s->err);
	return 0;
}

/* Primitive lists with patchStrategy merge: the union, without repeats. */
static int merge_primitives(struct smp *s, json_t *orig, const json_t *patch, json_t **ret)
{
	struct idmap seen, porder, sorder;
	json_t *merged = json_array();
	size_t i;
	int r = 0;

	idmap_init(&seen);
	idmap_init(&porder);
	idmap_init(&sorder);
	if (!merged || !seen.map || !porder.map || !sorder.map)
		r = -ENOMEM;
	if (r == 0)
		r = idmap_fill(&sorder, orig, NULL);
	if (r == 0)
		r = idmap_fill(&porder, patch, NULL);
	for (i = 0; r == 0 && i < json_array_size(orig) + json_array_size(patch); i++) {
		bool from_orig = i < json_array_size(orig);
		const json_t *v = from_orig ? json_array_get(orig, i)
					    : json_array_get(patch, i - json_array_size(orig));
		size_t before = json_object_size(seen.map);

		if ((r = idmap_add(&seen, v, i)) < 0)
			break;
		if (json_object_size(seen.map) == before)
			continue;
		if (json_array_append_new(merged, json_deep_copy(v)) < 0)
			r = -ENOMEM;
	}
	json_decref(orig);
	if (r < 0) {
		json_decref(merged);
		r = oom(s->err);
	} else {
		r = smp_order(s, merged, &porder, &sorder, NULL, ret);
	}
	idmap_release(&seen);
	idmap_release(&porder);
	idmap_release(&sorder);
	return r;
}

/* Lists of objects merged by key, with "$patch" items: delete removes the
 * items with that key, replace makes the patch items the whole list. */
static int merge_objects(struct smp *s, json_t *orig, const json_t *patch, const char *mk,
			 const char *path, json_t **ret)
{
	struct idmap del, pos, porder, sorder;
	json_t *base = NULL, *plain = NULL, *item;
	char *ipath = path_join(path, NULL);
	bool replace = false;
	size_t i;
	int r = 0;

	idmap_init(&del);
	idmap_init(&pos);
	idmap_init(&porder);
	idmap_init(&sorder);
	if (!ipath || !del.map || !pos.map || !porder.map || !sorder.map ||
	    !(base = json_array()) || !(plain = json_array())) {
		r = oom(s->err);
		goto out;
	}
	json_array_foreach(mut(patch), i, item) {
		const json_t *d = json_object_get(item, DIRECTIVE);
		const char *ds = json_string_value(d);

		if (!d || (ds && strcmp(ds, "merge") == 0)) {
			/* "$patch": "merge" asks for what merging does anyway. */
			if (d && json_object_size(item) == 1)
				continue;
			if (json_array_append(plain, mut(item)) < 0) {
				r = oom(s->err);
				goto out;
			}
		} else if (ds && strcmp(ds, "delete") == 0) {
			const json_t *id = json_object_get(item, mk);

			if (!id) {
				r = no_merge_key(s, item, mk);
				goto out;
			}
			if (idmap_add(&del, id, i) < 0) {
				r = oom(s->err);
				goto out;
			}
		} else if (ds && strcmp(ds, "replace") == 0) {
			replace = true;
		} else {
			r = bad_directive(s, d, item);
			goto out;
		}
	}
	json_array_foreach(plain, i, item) {
		if (!json_object_get(item, mk)) {
			r = no_merge_key(s, item, mk);
			goto out;
		}
	}
	if (!replace) {
		/* The original items that survive the deletions, in order. */
		json_array_foreach(orig, i, item) {
			long d;

			if (idmap_get(&del, ident(item, mk), &d) < 0 ||
			    (d < 0 && json_array_append(base, item) < 0)) {
				r = oom(s->err);
				goto out;
			}
		}
	}
	if (idmap_fill(&sorder, base, mk) < 0 || idmap_fill(&pos, base, mk) < 0 ||
	    idmap_fill(&porder, plain, mk) < 0) {
		r = oom(s->err);
		goto out;
	}
	json_array_foreach(plain, i, item) {
		const json_t *id = json_object_get(item, mk);
		json_t *merged;
		long at;

		if (idmap_get(&pos, id, &at) < 0) {
			r = oom(s->err);
			goto out;
		}
		if (at >= 0) {
			if ((r = smp_map(s, json_incref(json_array_get(base, (size_t)at)), item,
					 ipath, &merged)) < 0)
				goto out;
			if (json_array_set_new(base, (size_t)at, merged) < 0) {
				r = oom(s->err);
				goto out;
			}
		} else {
			if ((r = smp_map(s, NULL, item, ipath, &merged)) < 0)
				goto out;
			if (json_array_append_new(base, merged) < 0 ||
			    idmap_add(&pos, id, json_array_size(base) - 1) < 0) {
				r = oom(s->err);
				goto out;
			}
		}
	}
	r = smp_order(s, base, &porder, &sorder, mk, ret);
	base = NULL;
out:
	json_decref(orig);
	json_decref(base);
	json_decref(plain);
	free(ipath);
	idmap_release(&del);
	idmap_release(&pos);
	idmap_release(&porder);
	idmap_release(&sorder);
	return r;
}

/* A list declared with patchStrategy merge.  Takes over orig. */
static int smp_merge_list(struct smp *s, json_t *orig, const json_t *patch, const char *mk,
			  const char *path, json_t **ret)
{
	enum kind k = K_OBJECT;
	int r;

	if (json_array_size(orig) == 0 && json_array_size(patch) == 0) {
		*ret = orig;
		return 0;
	}
	if ((r = list_kind(s, orig, patch, path, &k)) < 0) {
		json_decref(orig);
		return r;
	}
	if (k != K_OBJECT)
		return merge_primitives(s, orig, patch, ret);
	if (!mk) {
		json_decref(orig);
		return smp_fail(s, 422, "cannot merge lists without merge key for %s", path);
	}
	return merge_objects(s, orig, patch, mk, path, ret);
}

/* A list value from the patch where the document has none. */
static int smp_clean_list(struct smp *s, const json_t *v, const char *path, json_t **ret)
{
	char *ipath = NULL;
	const char *mk;
	json_t *out, *item;
	size_t i;
	int r = 0;

	if (smp_list_lookup(s, path, &mk) && json_is_object(json_array_get(v, 0))) {
		if (!(out = json_array()))
			return oom(s->err);
		return smp_merge_list(s, out, v, mk, path, ret);
	}
	if (!(out = json_array()) || !(ipath = path_join(path, NULL))) {
		json_decref(out);
		return oom(s->err);
	}
	json_array_foreach(mut(v), i, item) {
		json_t *c;

		if ((r = smp_clean(s, item, ipath, &c)) < 0)
			break;
		if (json_array_append_new(out, c) < 0) {
			r = oom(s->err);
			break;
		}
	}
	free(ipath);
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	return 0;
}

/* $deleteFromPrimitiveList/<f>: drop the listed values.  Takes over orig. */
static int delete_from(struct smp *s, json_t *orig, const json_t *values, json_t **ret)
{
	struct idmap del;
	json_t *out = json_array(), *item;
	size_t i;
	int r = 0;

	idmap_init(&del);
	if (!out || !del.map || idmap_fill(&del, values, NULL) < 0)
		r = -ENOMEM;
	json_array_foreach(orig, i, item) {
		long d;

		if (r < 0)
			break;
		if (idmap_get(&del, item, &d) < 0 || (d < 0 && json_array_append(out, item) < 0))
			r = -ENOMEM;
	}
	idmap_release(&del);
	json_decref(orig);
	if (r < 0) {
		json_decref(out);
		return oom(s->err);
	}
	*ret = out;
	return 0;
}

/* A list present in both: merged when declared so, else replaced.  Takes
 * over orig. */
static int smp_list(struct smp *s, json_t *orig, const json_t *patch, const char *path,
		    json_t **ret)
{
	const char *mk;

	if (!smp_list_lookup(s, path, &mk)) {
		json_decref(orig);
		return smp_clean_list(s, patch, path, ret);
	}
	return smp_merge_list(s, orig, patch, mk, path, ret);
}

/* $setElementOrder/<f> items must follow the order of the patch list. */
static int check_set_order(struct smp *s, const json_t *plist, const json_t *order,
			   const char *mk)
{
	size_t p = 0, o = 0, np = json_array_size(plist), no = json_array_size(order);

	while (p < np && o < no) {
		const json_t *pi = json_array_get(plist, p), *oi = json_array_get(order, o);

		if (json_is_object(pi) && json_object_get(pi, DIRECTIVE)) {
			p++;
			continue;
		}
		if (mk && (!json_is_object(oi) || !json_object_get(oi, mk)))
			return no_merge_key(s, oi, mk);
		if (json_same(ident(pi, mk), ident(oi, mk)))
			p++;
		o++;
	}
	while (p < np && json_is_object(json_array_get(plist, p)) &&
	       json_object_get(json_array_get(plist, p), DIRECTIVE))
		p++;
	if (p < np) {
		char *a = smp_dump(plist), *b = smp_dump(order);
		int r = smp_fail(s, 400,
				 "The order in patch list: %s doesn't match $setElementOrder list: %s",
				 a ? a : "[...]", b ? b : "[...]");

		free(a);
		free(b);
		return r;
	}
	return 0;
}

/* The original-list order the API server compares against when it applies
 * $setElementOrder to a list of objects that the patch also merges.  Its
 * merge deletes the "$patch": "delete" items in place and appends new items
 * into the room that leaves, and its ordering step reads the original list
 * through the same memory; so the order it sees is the surviving items, then
 * the first new items (as many as were deleted).  Visible when items the
 * patch does not name sit next to deleted ones (upstream fixture "add map
 * and delete map from merging list with conflict"). */
static int aliased_server_order(const json_t *ov, const json_t *pv, const char *mk,
				struct idmap *sorder)
{
	struct idmap del, have;
	bool replace = false;
	size_t i, pos = 0, room;
	json_t *item;
	int r = 0;

	idmap_init(&del);
	idmap_init(&have);
	if (!del.map || !have.map)
		r = -ENOMEM;
	json_array_foreach(mut(pv), i, item) {
		const char *d = json_string_value(json_object_get(item, DIRECTIVE));

		if (r == 0 && d && strcmp(d, "delete") == 0)
			r = idmap_add(&del, json_object_get(item, mk), i);
		else if (d && strcmp(d, "replace") == 0)
			replace = true;
	}
	json_array_foreach(mut(ov), i, item) {
		const json_t *id = ident(item, mk);
		long gone;

		if (r == 0)
			r = idmap_get(&del, id, &gone);
		if (r < 0 || gone >= 0)
			continue;
		r = idmap_add(sorder, id, pos++);
		if (r == 0)
			r = idmap_add(&have, id, 0);
	}
	/* With "$patch": "replace" the new items go to another list. */
	room = replace ? 0 : json_array_size(ov) - pos;
	json_array_foreach(mut(pv), i, item) {
		const json_t *id = json_object_get(item, mk);
		const char *d = json_string_value(json_object_get(item, DIRECTIVE));
		long seen;

		if (r < 0 || room == 0)
			break;
		if ((d && strcmp(d, "merge") != 0) || !id)
			continue;
		if ((r = idmap_get(&have, id, &seen)) < 0 || seen >= 0)
			continue;
		r = idmap_add(sorder, id, pos++);
		if (r == 0)
			r = idmap_add(&have, id, 0);
		room--;
	}
	idmap_release(&del);
	idmap_release(&have);
	return r;
}

/* Handle "$setElementOrder/<field>": merge the list (if the patch has one)
 * and put it in the given order. */
static int smp_set_order(struct smp *s, json_t *orig, const json_t *patch, const char *key,
			 const json_t *order, const char *path, json_t *done)
{
	const char *field = key + strlen(SET_ORDER) + 1, *mk = NULL;
	json_t *ov = json_object_get(orig, field), *merged = NULL;
	const json_t *pv = json_object_get(patch, field);
	struct idmap porder, sorder;
	char *fpath = NULL;
	enum kind k = K_NONE;
	bool declared;
	size_t i;
	int r;

	if (!json_is_array(order))
		return smp_fail(s, 400, "invalid patch format of setElementOrder list");
	if (pv && !json_is_array(pv))
		return smp_fail(s, 400, "invalid patch format of setElementOrder list: %s is not a "
					"list in the patch",
				field);
	if (ov && !json_is_array(ov))
		return smp_fail(s, 422, "%s%s%s is not a list, so $setElementOrder cannot apply",
				path, *path ? "." : "", field);
	if (json_object_set_new(done, field, json_true()) < 0)
		return oom(s->err);
	if (!ov && !pv)
		return 0;
	if (!(fpath = path_join(path, field)))
		return oom(s->err);
	declared = smp_list_lookup(s, fpath, &mk);
	for (i = 0; k == K_NONE && i < json_array_size(ov); i++)
		k = kind_of(json_array_get(ov, i));
	for (i = 0; k == K_NONE && i < json_array_size(pv); i++)
		k = kind_of(json_array_get(pv, i));
	if (k != K_OBJECT || !declared)
		mk = NULL;
	idmap_init(&porder);
	idmap_init(&sorder);
	if (!porder.map || !sorder.map) {
		r = oom(s->err);
		goto out;
	}
	if ((r = check_set_order(s, pv, order, mk)) < 0)
		goto out;
	/* The server order is the original list's, before merging. */
	r = ov && pv && mk ? aliased_server_order(ov, pv, mk, &sorder) : idmap_fill(&sorder, ov, mk);
	if (r < 0 || idmap_fill(&porder, order, mk) < 0) {
		r = oom(s->err);
		goto out;
	}
	if (ov && !pv)
		r = (merged = json_incref(ov)) ? 0 : oom(s->err);
	else if (!ov)
		r = smp_clean_list(s, pv, fpath, &merged);
	else
		r = smp_list(s, json_incref(ov), pv, fpath, &merged);
	if (r < 0)
		goto out;
	if ((r = smp_order(s, merged, &porder, &sorder, mk, &merged)) < 0)
		goto out;
	if (json_object_set_new(orig, field, merged) < 0)
		r = oom(s->err);
out:
	idmap_release(&porder);
	idmap_release(&sorder);
	free(fpath);
	return r;
}

/* $retainKeys: keys of the map not listed are cleared; every key the patch
 * sets must be listed. */
static int smp_retain_keys(struct smp *s, json_t *orig, const json_t *patch, const json_t *keep)
{
	const char *key;
	json_t *v, *set = json_object();
	void *tmp;
	size_t i;
	int r = 0;

	if (!set)
		return oom(s->err);
	if (!json_is_array(keep)) {
		r = smp_fail(s, 400, "invalid patch format of retainKeys");
		goto out;
	}
	json_array_foreach(mut(keep), i, v) {
		if (!json_is_string(v)) {
			r = smp_fail(s, 400, "invalid patch format of retainKeys");
			goto out;
		}
		if (json_object_set_new(set, json_string_value(v), json_true()) < 0) {
			r = oom(s->err);
			goto out;
		}
	}
	json_object_foreach(mut(patch), key, v) {
		if (json_is_null(v) || strcmp(key, DIRECTIVE) == 0 || strcmp(key, RETAIN_KEYS) == 0 ||
		    has_prefix(key, DELETE_PRIMITIVE) || has_prefix(key, SET_ORDER))
			continue;
		if (!json_object_get(set, key)) {
			r = smp_fail(s, 400, "invalid patch format of retainKeys: %s is not in the "
					     "$retainKeys list",
				     key);
			goto out;
		}
	}
	json_object_foreach_safe(orig, tmp, key, v)
		if (!json_object_get(set, key))
			json_object_del(orig, key);
out:
	json_decref(set);
	return r;
}

/* Merge patch (an object) into orig (taken over; NULL for none). */
static int smp_map(struct smp *s, json_t *orig, const json_t *patch, const char *path,
		   json_t **ret)
{
	const json_t *d = json_object_get(patch, DIRECTIVE), *keep;
	const char *key;
	json_t *pv, *done = NULL;
	int r = 0;

	if (d) {
		const char *ds = json_string_value(d);

		if (ds && strcmp(ds, "delete") == 0) {
			json_decref(orig);
			if (!(*ret = json_object()))
				return oom(s->err);
			return 0;
		}
		if (ds && strcmp(ds, "replace") == 0) {
			json_decref(orig);
			orig = NULL;
		} else if (!ds || strcmp(ds, "merge") != 0) {
			json_decref(orig);
			return bad_directive(s, d, patch);
		}
	}
	if (!orig && !(orig = json_object()))
		return oom(s->err);
	if (!(done = json_object())) {
		r = oom(s->err);
		goto out;
	}
	if ((keep = json_object_get(patch, RETAIN_KEYS)) &&
	    (r = smp_retain_keys(s, orig, patch, keep)) < 0)
		goto out;
	/* Ordering directives first: they merge their list themselves. */
	json_object_foreach(mut(patch), key, pv) {
		if (!has_prefix(key, SET_ORDER))
			continue;
		if (key[strlen(SET_ORDER)] != '/') {
			r = smp_fail(s, 400, "invalid patch format of setElementOrder list");
			goto out;
		}
		if ((r = smp_set_order(s, orig, patch, key, pv, path, done)) < 0)
			goto out;
	}
	json_object_foreach(mut(patch), key, pv) {
		const char *field = key;
		bool del_list = false;
		json_t *ov, *nv = NULL;
		char *fpath;

		if (strcmp(key, DIRECTIVE) == 0 || strcmp(key, RETAIN_KEYS) == 0 ||
		    has_prefix(key, SET_ORDER) || json_object_get(done, key))
			continue;
		if (has_prefix(key, DELETE_PRIMITIVE)) {
			if (key[strlen(DELETE_PRIMITIVE)] != '/' || !json_is_array(pv)) {
				r = smp_fail(s, 400, "invalid patch format of primitive list");
				goto out;
			}
			field = key + strlen(DELETE_PRIMITIVE) + 1;
			del_list = true;
		}
		if (json_is_null(pv)) {
			json_object_del(orig, field);
			continue;
		}
		ov = json_object_get(orig, field);
		if (del_list && !json_is_array(ov))
			continue;
		if (!(fpath = path_join(path, field))) {
			r = oom(s->err);
			goto out;
		}
		if (del_list)
			r = delete_from(s, json_incref(ov), pv, &nv);
		else if (json_is_object(ov) && json_is_object(pv))
			r = smp_map(s, json_incref(ov), pv, fpath, &nv);
		else if (json_is_array(ov) && json_is_array(pv))
			r = smp_list(s, json_incref(ov), pv, fpath, &nv);
		else
			r = smp_clean(s, pv, fpath, &nv);
		free(fpath);
		if (r < 0)
			goto out;
		if (json_object_set_new(orig, field, nv) < 0) {
			r = oom(s->err);
			goto out;
		}
	}
out:
	json_decref(done);
	if (r < 0) {
		json_decref(orig);
		return r;
	}
	*ret = orig;
	return 0;
}

int patch_strategic(const json_t *doc, const json_t *patch, const struct smp_list_meta *lists,
		    json_t **ret, ah_err *err)
{
	struct smp s = { lists, err };
	json_t *copy;

	if (!json_is_object(patch))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "a strategic merge patch must be a JSON object");
	if (doc && !json_is_null(doc) && !json_is_object(doc))
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  "the document to patch is not a JSON object");
	copy = json_is_object(doc) ? json_deep_copy(doc) : json_object();
	if (!copy)
		return oom(err);
	return smp_map(&s, copy, patch, "", ret);
}
