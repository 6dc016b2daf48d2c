/* yamljson.c - see yamljson.h.  A small recursive-descent walk over libyaml
 * events; nesting depth is bounded so a hostile document cannot blow the stack. */
#include "yamljson.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define YAML_MAX_DEPTH 128

static json_t *scalar_value(const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	const char *tag = (const char *)ev->data.scalar.tag;
	char *end;

	if (tag && strcmp(tag, YAML_STR_TAG) == 0)
		return json_stringn(v, len);
	if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return json_stringn(v, len);
	if (len == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 || strcmp(v, "Null") == 0 ||
	    strcmp(v, "NULL") == 0)
		return json_null();
	if (strcmp(v, "true") == 0 || strcmp(v, "True") == 0 || strcmp(v, "TRUE") == 0)
		return json_true();
	if (strcmp(v, "false") == 0 || strcmp(v, "False") == 0 || strcmp(v, "FALSE") == 0)
		return json_false();
	if ((v[0] >= '0' && v[0] <= '9') || ((v[0] == '-' || v[0] == '+') && len > 1)) {
		long long ll;

		errno = 0;
		if (len > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o'))
			ll = strtoll(v + 2, &end, v[1] == 'x' ? 16 : 8);
		else
			ll = strtoll(v, &end, 10);
		if (*end == '\0' && errno == 0)
			return json_integer(ll);
		{
			double d;

			errno = 0;
			d = strtod(v, &end);
			if (*end == '\0' && errno == 0 && strpbrk(v, "0123456789") &&
			    !strpbrk(v, "xXpP"))
				return json_real(d);
		}
	}
	if (strcmp(v, ".inf") == 0 || strcmp(v, ".nan") == 0)
		return json_stringn(v, len);
	return json_stringn(v, len);
}

struct yparser {
	yaml_parser_t p;
	ah_err *err;
	json_t *anchors;   /* anchor name -> value, for aliases */
	size_t budget;     /* values an alias may still copy: bounds "billion laughs" */
};

#define YAML_ALIAS_BUDGET 1000000

static size_t count_values(const json_t *v)
{
	size_t n = 1, i;
	const char *k;
	json_t *c;

	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, c)
			n += count_values(c);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, c)
			n += count_values(c);
	}
	return n;
}

static void remember_anchor(struct yparser *yp, const yaml_char_t *anchor, json_t *v)
{
	if (anchor && v)
		json_object_set(yp->anchors, (const char *)anchor, v);
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
		r = parse_node(yp, &ev, &key, depth + 1);
		yaml_event_delete(&ev);
		if (r < 0)
			goto fail;
		if (!json_is_string(key)) {
			/* Kubernetes accepts non-string keys by printing them. */
			char *s = json_dumps(key, JSON_ENCODE_ANY);

			json_decref(key);
			key = json_string(s ? s : "");
			free(s);
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
	if (depth > YAML_MAX_DEPTH)
		return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				  "error converting YAML to JSON: nesting deeper than %d", YAML_MAX_DEPTH);
	int r;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		*ret = scalar_value(ev);
		remember_anchor(yp, ev->data.scalar.anchor, *ret);
		return *ret ? 0 : -ENOMEM;
	case YAML_MAPPING_START_EVENT:
		r = parse_mapping(yp, ret, depth);
		if (r == 0)
			remember_anchor(yp, ev->data.mapping_start.anchor, *ret);
		return r;
	case YAML_SEQUENCE_START_EVENT:
		r = parse_sequence(yp, ret, depth);
		if (r == 0)
			remember_anchor(yp, ev->data.sequence_start.anchor, *ret);
		return r;
	case YAML_ALIAS_EVENT: {
		json_t *v = json_object_get(yp->anchors, (const char *)ev->data.alias.anchor);
		size_t n;

		if (!v)
			return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
					  "error converting YAML to JSON: yaml: unknown anchor '%s' referenced",
					  (const char *)ev->data.alias.anchor);
		n = count_values(v);
		if (n > yp->budget)
			return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
					  "error converting YAML to JSON: yaml: document contains excessive aliasing");
		yp->budget -= n;
		*ret = json_deep_copy(v);
		return *ret ? 0 : -ENOMEM;
	}
	default:
		return ah_err_set(yp->err, EINVAL, 400, "BadRequest",
				  "error converting YAML to JSON: unexpected event %d", ev->type);
	}
}

int yaml_parse_all(const char *buf, size_t len, json_t **ret, ah_err *err)
{
	struct yparser yp = { .err = err, .budget = YAML_ALIAS_BUDGET };
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
