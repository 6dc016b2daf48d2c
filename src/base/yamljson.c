/* yamljson.c - see yamljson.h.  A small recursive-descent walk over libyaml
 * events; nesting depth is bounded so a hostile document cannot blow the
 * stack, and the number of nodes and bytes of the expanded document (alias
 * copies included) are bounded before each node is built. */
#include "yamljson.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_DEPTH 128

struct yparser {
	yaml_parser_t p;
	ah_err *err;
	json_t *anchors;   /* anchor name -> [value, nodes, bytes], for aliases */
	size_t nodes;      /* nodes built so far, aliases' copies included */
	size_t bytes;      /* text built so far (scalars, keys), copies included */
};

/* Bounds checked while the document is built, before any node past them
 * exists: a small hostile document (aliases of aliases, "billion
 * laughs") stops at them instead of taking the process's memory. */
#define YAML_MAX_NODES 500000
#define YAML_MAX_BYTES (16u << 20)
/* Each node also costs this much toward YAML_MAX_BYTES. */
#define YAML_NODE_COST 16

static int too_big(struct yparser *yp)
{
	return ah_err_set(yp->err, E2BIG, 400, "BadRequest",
			  "error converting YAML to JSON: yaml: document is too large once expanded (more than %d nodes or %u bytes)",
			  YAML_MAX_NODES, YAML_MAX_BYTES);
}

/* Account n nodes and len bytes of text; -E2BIG past a bound. */
static int charge(struct yparser *yp, size_t n, size_t len)
{
	if (n > YAML_MAX_NODES - yp->nodes || len > YAML_MAX_BYTES || n > (YAML_MAX_BYTES - len) / YAML_NODE_COST ||
	    len + n * YAML_NODE_COST > YAML_MAX_BYTES - yp->bytes)
		return too_big(yp);
	yp->nodes += n;
	yp->bytes += len + n * YAML_NODE_COST;
	return 0;
}

static int bad_scalar(struct yparser *yp, const yaml_event_t *ev, const char *what)
{
	return ah_err_set(yp->err, EINVAL, 400, "BadRequest", "error converting YAML to JSON: yaml: line %zu: %s",
			  ev->start_mark.line + 1, what);
}

/* Whether v is a plain integer in decimal (optional sign, digits only). */
static bool decimal_digits(const char *v)
{
	if (*v == '-' || *v == '+')
		v++;
	if (!*v)
		return false;
	for (; *v; v++)
		if (*v < '0' || *v > '9')
			return false;
	return true;
}

static int scalar_value(struct yparser *yp, const yaml_event_t *ev, json_t **ret)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	char *end;

	/* "\0" in a double-quoted scalar: JSON bodies cannot hold a NUL, and
	 * neither can YAML ones (every C reader would stop at it). */
	if (memchr(v, '\0', len))
		return bad_scalar(yp, ev, "a NUL character is not allowed");
	*ret = NULL;
	if (tag && strcmp(tag, YAML_STR_TAG) == 0)
		*ret = json_stringn(v, len);
	else if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		*ret = json_stringn(v, len);
	else if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
		 strcmp(v, "NULL") == 0)
		*ret = json_null();
	else if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "TRUE") == 0)
		*ret = json_true();
	else if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0)
		*ret = json_false();
	else if ((v[0] >= '0' && v[0] <= '9') || ((v[0] == '-' || v[0] == '+') && len > 1)) {
		long long ll;

		errno = 0;
		if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o'))
			ll = strtoll(v + 2, &end, v[1] == 'x' ? 16 : 8);
		else
			ll = strtoll(v, &end, 10);
		if (*end == '\0' && errno == ERANGE)
			return bad_scalar(yp, ev, "an integer is out of the 64-bit range");
		if (*end == '\0' && errno == 0)
			*ret = json_integer(ll);
		else if (!decimal_digits(v)) {
			double d;

			errno = 0;
			d = strtod(v, &end);
			if (*end == '\0' && strpbrk(v, "0123456789") && !strpbrk(v, "xXpP")) {
				if (errno == ERANGE && (d > 1.0 || d < -1.0))
					return bad_scalar(yp, ev, "a number is out of the 64-bit floating-point range");
				if (errno == 0)
					*ret = json_real(d);
			}
		}
		if (!*ret)
			*ret = json_stringn(v, len);
	} else {
		*ret = json_stringn(v, len);
	}
	return *ret ? 0 : -ENOMEM;
}

/* An anchor keeps its value and what building it cost, so that each
 * alias charges the bounds the same again before it copies. */
static void remember_anchor(struct yparser *yp, const yaml_char_t *anchor, json_t *v, size_t nodes0,
			    size_t bytes0)
{
	if (anchor && v)
		json_object_set_new(yp->anchors, (const char *)anchor,
				    json_pack("[O,I,I]", v, (json_int_t)(yp->nodes - nodes0),
					      (json_int_t)(yp->bytes - bytes0)));
}

static int next_event(struct yparser *yp, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&yp->p, ev))
		return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				  "error converting YAML to JSON: yaml: line %zu: %s",
				  yp->p.problem_mark.line + 1,
				  yp->p.problem ? yp->p.problem : "parse error");
	return 0;
}

static int parse_node(struct yparser *yp, yaml_event_t *ev, json_t **ret, int depth);

static int parse_mapping(struct yparser *yp, json_t **ret, int depth)
{
	json_t *obj = json_object();
	yaml_event_t ev;
	size_t line;
	int r;

	if (!obj)
		return -ENOMEM;
	for (;;) {
		json_t *key = NULL, *val = NULL;

		r = next_event(yp, &ev);
		if (r < 0)
			goto fail;
		if (ev.type == YAML_MAPPING_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		/* sigs.k8s.io/yaml prints scalar keys (1, true) as strings and
		 * refuses the rest: a mapping or sequence as a key (whose printed
		 * form would double at each level of nesting). */
		if (ev.type != YAML_SCALAR_EVENT && ev.type != YAML_ALIAS_EVENT) {
			r = bad_scalar(yp, &ev, "a mapping key must be a scalar");
			yaml_event_delete(&ev);
			goto fail;
		}
		r = parse_node(yp, &ev, &key, depth + 1);
		line = ev.start_mark.line + 1;
		yaml_event_delete(&ev);
		if (r < 0)
			goto fail;
		if (json_is_object(key) || json_is_array(key)) {
			json_decref(key);
			r = ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				       "error converting YAML to JSON: yaml: line %zu: a mapping key must be a scalar", line);
			goto fail;
		}
		if (!json_is_string(key)) {
			char *s = json_dumps(key, JSON_ENCODE_ANY);

			json_decref(key);
			key = json_string(s ? s : "");
			free(s);
			if (!key) {
				r = -ENOMEM;
				goto fail;
			}
		}
		if (json_object_get(obj, json_string_value(key))) {
			r = ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				       "error converting YAML to JSON: yaml: line %zu: key \"%.200s\" already set in map", line,
				       json_string_value(key));
			json_decref(key);
			goto fail;
		}
		r = next_event(yp, &ev);
		if (r < 0) {
			json_decref(key);
			goto fail;
		}
		r = parse_node(yp, &ev, &val, depth + 1);
		yaml_event_delete(&ev);
		if (r < 0) {
			json_decref(key);
			goto fail;
		}
		json_object_set_new(obj, json_string_value(key), val);
		json_decref(key);
	}
	*ret = obj;
	return 0;
fail:
	json_decref(obj);
	return r;
}

static int parse_sequence(struct yparser *yp, json_t **ret, int depth)
{
	json_t *arr = json_array();
	yaml_event_t ev;
	int r;

	if (!arr)
		return -ENOMEM;
	for (;;) {
		json_t *val = NULL;

		r = next_event(yp, &ev);
		if (r < 0)
			goto fail;
		if (ev.type == YAML_SEQUENCE_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		r = parse_node(yp, &ev, &val, depth + 1);
		yaml_event_delete(&ev);
		if (r < 0)
			goto fail;
		json_array_append_new(arr, val);
	}
	*ret = arr;
	return 0;
fail:
	json_decref(arr);
	return r;
}

static int parse_node(struct yparser *yp, yaml_event_t *ev, json_t **ret, int depth)
{
	size_t nodes0 = yp->nodes, bytes0 = yp->bytes;
	int r;

	if (depth > YAML_MAX_DEPTH)
		return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				  "error converting YAML to JSON: nesting deeper than %d", YAML_MAX_DEPTH);
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		r = charge(yp, 1, ev->data.scalar.length);
		if (r == 0)
			r = scalar_value(yp, ev, ret);
		if (r == 0)
			remember_anchor(yp, ev->data.scalar.anchor, *ret, nodes0, bytes0);
		return r;
	case YAML_MAPPING_START_EVENT:
		r = charge(yp, 1, 0);
		if (r == 0)
			r = parse_mapping(yp, ret, depth);
		if (r == 0)
			remember_anchor(yp, ev->data.mapping_start.anchor, *ret, nodes0, bytes0);
		return r;
	case YAML_SEQUENCE_START_EVENT:
		r = charge(yp, 1, 0);
		if (r == 0)
			r = parse_sequence(yp, ret, depth);
		if (r == 0)
			remember_anchor(yp, ev->data.sequence_start.anchor, *ret, nodes0, bytes0);
		return r;
	case YAML_ALIAS_EVENT: {
		json_t *a = json_object_get(yp->anchors, (const char *)ev->data.alias.anchor);
		size_t n, b;

		if (!a)
			return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
					  "error converting YAML to JSON: yaml: unknown anchor '%s' referenced",
					  (const char *)ev->data.alias.anchor);
		/* The copy costs what the anchor's value cost: the bounds are
		 * on the expanded document, checked before copying. */
		n = (size_t)json_integer_value(json_array_get(a, 1));
		b = (size_t)json_integer_value(json_array_get(a, 2));
		if (n > YAML_MAX_NODES - yp->nodes || b > YAML_MAX_BYTES - yp->bytes)
			return ah_err_set(yp->err, E2BIG, 400, "BadRequest",
					  "error converting YAML to JSON: yaml: document contains excessive aliasing (more than %d nodes or %u bytes once expanded)",
					  YAML_MAX_NODES, YAML_MAX_BYTES);
		yp->nodes += n;
		yp->bytes += b;
		*ret = json_deep_copy(json_array_get(a, 0));
		return *ret ? 0 : -ENOMEM;
	}
	default:
		return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				  "error converting YAML to JSON: unexpected event %d", ev->type);
	}
}

int yaml_parse_all(const char *buf, size_t len, json_t **ret, ah_err *err)
{
	struct yparser yp = { .err = err };
	json_t *docs = json_array();
	yaml_event_t ev;
	int r = 0;

	if (!docs)
		return -ENOMEM;
	if (!yaml_parser_initialize(&yp.p)) {
		json_decref(docs);
		return -ENOMEM;
	}
	yaml_parser_set_input_string(&yp.p, (const unsigned char *)buf, len);
	yp.anchors = json_object();
	for (;;) {
		r = next_event(&yp, &ev);
		if (r < 0)
			break;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			break;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			json_t *doc = NULL;

			yaml_event_delete(&ev);
			r = next_event(&yp, &ev);
			if (r < 0)
				break;
			if (ev.type == YAML_DOCUMENT_END_EVENT) {
				yaml_event_delete(&ev);
				continue;
			}
			r = parse_node(&yp, &ev, &doc, 0);
			yaml_event_delete(&ev);
			if (r < 0)
				break;
			if (!json_is_null(doc))
				json_array_append_new(docs, doc);
			else
				json_decref(doc);
			continue;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&yp.p);
	json_decref(yp.anchors);
	if (r < 0) {
		json_decref(docs);
		return r;
	}
	*ret = docs;
	return 0;
}
