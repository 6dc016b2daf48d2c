/* table.c - meta.k8s.io/v1 Table rows from printer columns; see table.h.
 *
 * Follows apiextensions-apiserver's CRD table convertor: a Name column
 * first, then one column per additionalPrinterColumn whose JSONPath is run
 * with missing keys allowed; only the first value a path selects is shown;
 * string columns print any value the way client-go's jsonpath prints it
 * (Go's fmt), other types keep values of their type only, and date columns
 * show the age as apimachinery's duration.HumanDuration. */
#include "table.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gofmt.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "kube/jsonpath.h"

/* metav1.ObjectMeta's API documentation, which the API server uses as the
 * descriptions of the Name and Age columns. */
#define NAME_DESCRIPTION                                                                          \
	"Name must be unique within a namespace. Is required when creating resources, although "  \
	"some resources may allow a client to request the generation of an appropriate name "     \
	"automatically. Name is primarily intended for creation idempotence and configuration "   \
	"definition. Cannot be updated. More info: "                                              \
	"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
#define CREATION_TIMESTAMP_DESCRIPTION                                                            \
	"CreationTimestamp is a timestamp representing the server time when this object was "     \
	"created. It is not guaranteed to be set in happens-before order across separate "         \
	"operations. Clients may not set this value. It is represented in RFC3339 form and is in " \
	"UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "                 \
	"https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

/* Cells kube-apiserver's printers compute in Go for built-in kinds, which no
 * JSONPath expresses; a built-in kind's column asks for one with the key
 * "x-agenthub-compute" (see registry.c). */
enum compute {
	COMPUTE_NONE,
	COMPUTE_NAME,         /* metadata.name; no automatic Name column then */
	COMPUTE_COUNT,        /* entries of the maps at .data and .binaryData */
	COMPUTE_EV_LAST_SEEN, /* printEvent's lastTimestamp fallbacks */
	COMPUTE_EV_FIRST_SEEN,
	COMPUTE_EV_OBJECT,    /* lower(involvedObject.kind)/name */
	COMPUTE_EV_SOURCE,
	COMPUTE_EV_COUNT,
	COMPUTE_EV_MESSAGE,   /* trimmed */
	COMPUTE_QUOTA_REQUEST,
	COMPUTE_QUOTA_LIMIT,
	COMPUTE_CREATED_AT,   /* creationTimestamp as RFC 3339 (LimitRange) */
};

static const char *const compute_names[] = {
	[COMPUTE_NAME] = "name",
	[COMPUTE_COUNT] = "count",
	[COMPUTE_EV_LAST_SEEN] = "event-last-seen",
	[COMPUTE_EV_FIRST_SEEN] = "event-first-seen",
	[COMPUTE_EV_OBJECT] = "event-object",
	[COMPUTE_EV_SOURCE] = "event-source",
	[COMPUTE_EV_COUNT] = "event-count",
	[COMPUTE_EV_MESSAGE] = "event-message",
	[COMPUTE_QUOTA_REQUEST] = "quota-request",
	[COMPUTE_QUOTA_LIMIT] = "quota-limit",
	[COMPUTE_CREATED_AT] = "created-at",
};

struct column {
	char *name, *type, *format, *description;
	json_int_t priority;
	jsonpath *path; /* NULL for the Name column */
	enum compute compute;
};

struct table_columns {
	struct column *cols;
	size_t n;
};

static void column_release(struct column *c)
{
	free(c->name);
	free(c->type);
	free(c->format);
	free(c->description);
	jsonpath_free(c->path);
}

void table_columns_free(table_columns *tc)
{
	size_t i;

	if (!tc)
		return;
	for (i = 0; i < tc->n; i++)
		column_release(&tc->cols[i]);
	free(tc->cols);
	free(tc);
}

static int column_set(struct column *c, const char *name, const char *type, const char *format,
		      const char *description, json_int_t priority)
{
	c->name = strdup(name);
	c->type = strdup(type);
	c->format = strdup(format);
	c->description = strdup(description);
	c->priority = priority;
	return c->name && c->type && c->format && c->description ? 0 : -ENOMEM;
}

static int add_path_column(table_columns *tc, const json_t *pc, ah_err *err)
{
	const char *name = json_string_value(json_object_get(pc, "name"));
	const char *type = json_string_value(json_object_get(pc, "type"));
	const char *path = json_string_value(json_object_get(pc, "jsonPath"));
	const char *format = json_string_value(json_object_get(pc, "format"));
	const char *desc = json_string_value(json_object_get(pc, "description"));
	const json_t *prio = json_object_get(pc, "priority");
	struct column *c = &tc->cols[tc->n];
	char *defdesc = NULL;
	int r;

	if (!name || !type || !path)
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  "printer column needs name, type and jsonPath");
	memset(c, 0, sizeof(*c));
	tc->n++;
	if (!desc || !*desc) {
		/* The API server's default description. */
		if (asprintf(&defdesc, "Custom resource definition column (in JSONPath format): %s",
			     path) < 0)
			return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
		desc = defdesc;
	}
	r = column_set(c, name, type, format ? format : "", desc,
		       json_is_integer(prio) ? json_integer_value(prio) : 0);
	free(defdesc);
	if (r < 0)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	r = jsonpath_compile(path, &c->path, err);
	if (r < 0) {
		ah_err_set(err, -r, 422, "Invalid", "unrecognized column definition \"%s\"", path);
		return r;
	}
	{
		const char *cmp = json_string_value(json_object_get(pc, "x-agenthub-compute"));
		size_t i;

		for (i = 1; cmp && i < sizeof(compute_names) / sizeof(compute_names[0]); i++)
			if (strcmp(cmp, compute_names[i]) == 0)
				c->compute = (enum compute)i;
		if (cmp && !c->compute)
			return ah_err_set(err, EINVAL, 422, "Invalid", "unknown computed column \"%s\"", cmp);
	}
	return 0;
}

static bool has_name_column(const json_t *printer_columns)
{
	size_t i;
	const json_t *pc;

	json_array_foreach(printer_columns, i, pc) {
		const char *cmp = json_string_value(json_object_get(pc, "x-agenthub-compute"));

		if (cmp && strcmp(cmp, "name") == 0)
			return true;
	}
	return false;
}

int table_columns_compile(const json_t *printer_columns, table_columns **ret, ah_err *err)
{
	size_t n = json_array_size(printer_columns), i;
	table_columns *tc = calloc(1, sizeof(*tc));
	json_t *age = NULL;
	int r;

	if (!tc)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	tc->cols = calloc(n + 2, sizeof(*tc->cols));
	if (!tc->cols) {
		free(tc);
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	}
	if (!has_name_column(printer_columns)) {
		r = column_set(&tc->cols[0], "Name", "string", "name", NAME_DESCRIPTION, 0);
		tc->cols[0].compute = COMPUTE_NAME;
		tc->n = 1;
		if (r < 0) {
			ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
			goto fail;
		}
	}
	if (n == 0) {
		/* serveDefaultColumnsIfEmpty. */
		age = json_pack("{s:s, s:s, s:s, s:s}", "name", "Age", "type", "date", "jsonPath",
				".metadata.creationTimestamp", "description",
				CREATION_TIMESTAMP_DESCRIPTION);
		if (!age) {
			r = ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
			goto fail;
		}
		r = add_path_column(tc, age, err);
		json_decref(age);
		if (r < 0)
			goto fail;
	}
	for (i = 0; i < n; i++) {
		r = add_path_column(tc, json_array_get(printer_columns, i), err);
		if (r < 0)
			goto fail;
	}
	*ret = tc;
	return 0;
fail:
	table_columns_free(tc);
	return r;
}

json_t *table_column_definitions(const table_columns *tc)
{
	json_t *defs = json_array();
	size_t i;

	if (!defs || !tc)
		return defs;
	for (i = 0; i < tc->n; i++) {
		const struct column *c = &tc->cols[i];

		if (json_array_append_new(defs, json_pack("{s:s, s:s, s:s, s:s, s:I}", "name",
							  c->name, "type", c->type, "format",
							  c->format, "description",
							  c->description, "priority",
							  c->priority)) < 0) {
			json_decref(defs);
			return NULL;
		}
	}
	return defs;
}

void table_human_duration(long long s, char *buf, size_t size)
{
	long long m, h;

	/* A deviation of up to a second counts as now (clock skew). */
	if (s < -1) {
		snprintf(buf, size, "<invalid>");
		return;
	}
	if (s < 0) {
		snprintf(buf, size, "0s");
		return;
	}
	if (s < 60 * 2) {
		snprintf(buf, size, "%llds", s);
		return;
	}
	m = s / 60;
	if (m < 10) {
		if (s % 60 == 0)
			snprintf(buf, size, "%lldm", m);
		else
			snprintf(buf, size, "%lldm%llds", m, s % 60);
		return;
	}
	if (m < 60 * 3) {
		snprintf(buf, size, "%lldm", m);
		return;
	}
	h = s / 3600;
	if (h < 8) {
		if (m % 60 == 0)
			snprintf(buf, size, "%lldh", h);
		else
			snprintf(buf, size, "%lldh%lldm", h, m % 60);
	} else if (h < 48) {
		snprintf(buf, size, "%lldh", h);
	} else if (h < 24 * 8) {
		if (h % 24 == 0)
			snprintf(buf, size, "%lldd", h / 24);
		else
			snprintf(buf, size, "%lldd%lldh", h / 24, h % 24);
	} else if (h < 24 * 365 * 2) {
		snprintf(buf, size, "%lldd", h / 24);
	} else if (h < 24 * 365 * 8) {
		if ((h / 24) % 365 == 0)
			snprintf(buf, size, "%lldy", h / 24 / 365);
		else
			snprintf(buf, size, "%lldy%lldd", h / 24 / 365, (h / 24) % 365);
	} else {
		snprintf(buf, size, "%lldy", h / 24 / 365);
	}
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* fmt.Fprint of a value decoded from JSON: strings bare, maps as
 * "map[k:v k2:v2]" with sorted keys, slices as "[a b]", nil as "<nil>". */
static void go_print(strbuf *sb, const json_t *v)
{
	size_t i, n;

	switch (json_typeof(v)) {
	case JSON_STRING:
		strbuf_add(sb, json_string_value(v), json_string_length(v));
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
	case JSON_NULL:
		strbuf_adds(sb, "<nil>");
		break;
	case JSON_ARRAY:
		strbuf_addch(sb, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				strbuf_addch(sb, ' ');
			go_print(sb, json_array_get(v, i));
		}
		strbuf_addch(sb, ']');
		break;
	case JSON_OBJECT: {
		const char **keys;
		const char *k;
		json_t *x;

		n = json_object_size(v);
		keys = calloc(n ? n : 1, sizeof(*keys));
		if (!keys)
			break;
		i = 0;
		json_object_foreach((json_t *)v, k, x)
			keys[i++] = k;
		qsort(keys, n, sizeof(*keys), cmp_cstr);
		strbuf_adds(sb, "map[");
		for (i = 0; i < n; i++) {
			if (i)
				strbuf_addch(sb, ' ');
			strbuf_adds(sb, keys[i]);
			strbuf_addch(sb, ':');
			go_print(sb, json_object_get(v, keys[i]));
		}
		strbuf_addch(sb, ']');
		free(keys);
		break;
	}
	}
}

/* cellForJSONValue, plus the string case (PrintResults). */
static json_t *cell_for(const struct column *c, const json_t *v, time_t now)
{
	if (!strcmp(c->type, "string")) {
		strbuf sb = STRBUF_INIT;
		json_t *cell;

		if (json_is_string(v))
			return json_incref((json_t *)v);
		go_print(&sb, v);
		cell = json_stringn(sb.buf ? sb.buf : "", sb.len);
		strbuf_release(&sb);
		return cell ? cell : json_null();
	}
	if (json_is_null(v))
		return json_null();
	if (!strcmp(c->type, "integer")) {
		if (json_is_integer(v))
			return json_incref((json_t *)v);
		if (json_is_real(v)) {
			double d = json_real_value(v);

			/* Go's int64(float64): truncation (saturated here). */
			if (d >= 9223372036854775807.0)
				return json_integer(INT64_MAX);
			if (d <= -9223372036854775808.0)
				return json_integer(INT64_MIN);
			return json_integer((json_int_t)d);
		}
	} else if (!strcmp(c->type, "number")) {
		if (json_is_number(v))
			return json_real(json_number_value(v));
	} else if (!strcmp(c->type, "boolean")) {
		if (json_is_boolean(v))
			return json_incref((json_t *)v);
	} else if (!strcmp(c->type, "date")) {
		const char *s = json_string_value(v);
		char buf[32];
		time_t t;

		if (!s)
			return json_null();
		/* metav1.Time's query-parameter form: "" and "null" are the zero
		 * time, which shows as "<unknown>". */
		if (!*s || !strcmp(s, "null"))
			return json_string("<unknown>");
		if (util_parse_rfc3339(s, &t) < 0)
			return json_string("<invalid>");
		table_human_duration((long long)(now - t), buf, sizeof(buf));
		return json_string(buf);
	}
	return json_null();
}

static const char *sget(const json_t *obj, const char *a, const char *b)
{
	const json_t *v = json_object_get(obj, a);

	if (b)
		v = json_object_get(v, b);
	return json_string_value(v) ? json_string_value(v) : "";
}

/* translateTimestampSince: "<unknown>" for a zero time. */
static json_t *age_cell(const char *ts, time_t now)
{
	char buf[32];
	time_t t;

	if (!*ts || util_parse_rfc3339(ts, &t) < 0)
		return json_string("<unknown>");
	table_human_duration((long long)(now - t), buf, sizeof(buf));
	return json_string(buf);
}

/* printResourceQuota: "name: used/hard" for each hard limit, sorted, split
 * into the limits.* ones and the rest. */
static json_t *quota_cell(const json_t *obj, bool limits)
{
	const json_t *st = json_object_get(obj, "status");
	const json_t *hard = json_object_get(st, "hard"), *used = json_object_get(st, "used");
	const char **keys;
	const char *key;
	const json_t *v;
	strbuf sb = STRBUF_INIT;
	size_t n = 0, i;
	json_t *cell;

	keys = calloc(json_object_size(hard) + 1, sizeof(*keys));
	if (!keys)
		return json_null();
	json_object_foreach((json_t *)hard, key, v)
		if ((strncmp(key, "limits.", 7) == 0) == limits)
			keys[n++] = key;
	qsort(keys, n, sizeof(*keys), cmp_cstr);
	for (i = 0; i < n; i++) {
		const char *h = json_string_value(json_object_get(hard, keys[i]));
		const char *u = json_string_value(json_object_get(used, keys[i]));

		strbuf_addf(&sb, "%s%s: %s/%s", i ? ", " : "", keys[i], u ? u : "0", h ? h : "");
	}
	free(keys);
	cell = json_stringn(sb.buf ? sb.buf : "", sb.len);
	strbuf_release(&sb);
	return cell ? cell : json_null();
}

static json_t *computed_cell(enum compute c, const json_t *obj, time_t now)
{
	const json_t *series = json_object_get(obj, "series");

	switch (c) {
	case COMPUTE_COUNT:
		return json_integer((json_int_t)(json_object_size(json_object_get(obj, "data")) +
						 json_object_size(json_object_get(obj, "binaryData"))));
	case COMPUTE_EV_FIRST_SEEN:
	case COMPUTE_EV_LAST_SEEN: {
		const char *first = sget(obj, "firstTimestamp", NULL), *last = sget(obj, "lastTimestamp", NULL);

		if (!*first)
			first = sget(obj, "eventTime", NULL);
		if (c == COMPUTE_EV_FIRST_SEEN)
			return age_cell(first, now);
		if (json_is_object(series))
			return age_cell(sget(series, "lastObservedTime", NULL), now);
		return age_cell(*last ? last : first, now);
	}
	case COMPUTE_EV_OBJECT: {
		const char *kind = sget(obj, "involvedObject", "kind"), *name = sget(obj, "involvedObject", "name");
		char *s = NULL, *p;
		json_t *cell;

		if (asprintf(&s, "%s/%s", kind, name) < 0)
			return json_null();
		for (p = s; *p && *p != '/'; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p + 32);
		cell = json_string(s);
		free(s);
		return cell ? cell : json_null();
	}
	case COMPUTE_EV_SOURCE: {
		const char *comp = sget(obj, "source", "component"), *inst = sget(obj, "source", "host");
		char *s = NULL;
		json_t *cell;

		if (!*comp)
			comp = sget(obj, "reportingComponent", NULL);
		if (!*inst)
			inst = sget(obj, "reportingInstance", NULL);
		if (!*comp)
			return json_string("");
		if (!*inst)
			return json_string(comp);
		if (asprintf(&s, "%s, %s", comp, inst) < 0)
			return json_null();
		cell = json_string(s);
		free(s);
		return cell ? cell : json_null();
	}
	case COMPUTE_EV_COUNT: {
		json_int_t n = json_integer_value(json_object_get(obj, "count"));

		if (json_is_object(series))
			n = json_integer_value(json_object_get(series, "count"));
		else if (n == 0)
			n = 1;
		return json_integer(n);
	}
	case COMPUTE_EV_MESSAGE: {
		const char *m = sget(obj, "message", NULL);
		size_t len;

		while (*m == ' ' || *m == '\t' || *m == '\n' || *m == '\r')
			m++;
		len = strlen(m);
		while (len && (m[len - 1] == ' ' || m[len - 1] == '\t' || m[len - 1] == '\n' || m[len - 1] == '\r'))
			len--;
		{
			json_t *cell = json_stringn(m, len);

			return cell ? cell : json_null();
		}
	}
	case COMPUTE_QUOTA_REQUEST:
		return quota_cell(obj, false);
	case COMPUTE_QUOTA_LIMIT:
		return quota_cell(obj, true);
	case COMPUTE_CREATED_AT: {
		const char *ts = sget(obj, "metadata", "creationTimestamp");

		return *ts ? json_string(ts) : json_null();
	}
	default:
		return json_null();
	}
}

json_t *table_row(const table_columns *tc, const json_t *obj, enum table_include include,
		  time_t now)
{
	json_t *row = NULL, *cells = json_array(), *meta = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	size_t i;

	if (!cells || !tc)
		goto fail;
	for (i = 0; i < tc->n; i++) {
		json_t *vals, *cell;

		if (tc->cols[i].compute == COMPUTE_NAME) {
			if (json_array_append_new(cells, json_string(name ? name : "")) < 0)
				goto fail;
			continue;
		}
		if (tc->cols[i].compute) {
			if (json_array_append_new(cells, computed_cell(tc->cols[i].compute, obj, now)) < 0)
				goto fail;
			continue;
		}
		vals = jsonpath_eval(tc->cols[i].path, obj);
		if (!vals)
			goto fail;
		cell = json_array_size(vals) ? cell_for(&tc->cols[i], json_array_get(vals, 0), now)
					     : json_null();
		json_decref(vals);
		if (json_array_append_new(cells, cell) < 0)
			goto fail;
	}
	row = json_object();
	if (!row || json_object_set_new(row, "cells", cells) < 0) {
		cells = NULL;
		goto fail;
	}
	cells = NULL;
	if (include == TABLE_INCLUDE_METADATA) {
		json_t *pom = json_pack("{s:s, s:s, s:o}", "kind", "PartialObjectMetadata",
					"apiVersion", "meta.k8s.io/v1", "metadata",
					json_is_object(meta) ? json_deep_copy(meta) : json_object());

		if (json_object_set_new(row, "object", pom) < 0)
			goto fail;
	} else if (include == TABLE_INCLUDE_OBJECT) {
		if (json_object_set_new(row, "object", json_deep_copy(obj)) < 0)
			goto fail;
	}
	return row;
fail:
	json_decref(cells);
	json_decref(row);
	return NULL;
}

/* --- prepared rows ---------------------------------------------------------
 * Everything of a row but its time-dependent cells, as JSON text. */

struct prep_cell {
	char *text;     /* the cell's JSON text; NULL for a date cell */
	json_t *date;   /* a date cell's selected value (NULL: nothing selected) */
};

struct table_row_prep {
	size_t n;
	struct prep_cell *cells;
	char *object;   /* ,"object":{...} or "" */
	size_t bytes;
};

void table_row_prep_free(table_row_prep *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++) {
		free(p->cells[i].text);
		json_decref(p->cells[i].date);
	}
	free(p->cells);
	free(p->object);
	free(p);
}

size_t table_row_prep_bytes(const table_row_prep *p)
{
	return p ? p->bytes : 0;
}

table_row_prep *table_row_prepare(const table_columns *tc, const json_t *obj, enum table_include include)
{
	table_row_prep *p;
	json_t *meta = json_object_get(obj, "metadata");
	size_t i;

	if (!tc || include == TABLE_INCLUDE_OBJECT)
		return NULL;
	for (i = 0; i < tc->n; i++)
		if (tc->cols[i].compute && tc->cols[i].compute != COMPUTE_NAME)
			return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cells = calloc(tc->n ? tc->n : 1, sizeof(*p->cells));
	if (!p->cells)
		goto fail;
	p->n = tc->n;
	p->bytes = sizeof(*p) + tc->n * sizeof(*p->cells);
	for (i = 0; i < tc->n; i++) {
		const struct column *c = &tc->cols[i];
		json_t *cell, *vals;

		if (c->compute == COMPUTE_NAME) {
			const char *name = json_string_value(json_object_get(meta, "name"));

			cell = json_string(name ? name : "");
		} else {
			vals = jsonpath_eval(c->path, obj);
			if (!vals)
				goto fail;
			if (!strcmp(c->type, "date")) {
				if (json_array_size(vals))
					p->cells[i].date = json_deep_copy(json_array_get(vals, 0));
				json_decref(vals);
				p->bytes += 64;
				continue;
			}
			cell = json_array_size(vals) ? cell_for(c, json_array_get(vals, 0), 0) : json_null();
			json_decref(vals);
		}
		p->cells[i].text = cell ? json_dumps(cell, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		json_decref(cell);
		if (!p->cells[i].text)
			goto fail;
		p->bytes += strlen(p->cells[i].text) + 1;
	}
	if (include == TABLE_INCLUDE_METADATA) {
		json_t *pom = json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata",
					"apiVersion", "meta.k8s.io/v1", "metadata",
					json_is_object(meta) ? meta : json_object());
		char *s = pom ? json_dumps(pom, JSON_COMPACT) : NULL;

		json_decref(pom);
		if (!s)
			goto fail;
		p->object = malloc(strlen(s) + 12);
		if (p->object)
			sprintf(p->object, ",\"object\":%s", s);
		free(s);
	} else {
		p->object = strdup("");
	}
	if (!p->object)
		goto fail;
	p->bytes += strlen(p->object) + 1;
	return p;
fail:
	table_row_prep_free(p);
	return NULL;
}

int table_row_finish(const table_columns *tc, const table_row_prep *p, time_t now, strbuf *out)
{
	int r = strbuf_adds(out, "{\"cells\":[");

	for (size_t i = 0; r >= 0 && i < p->n; i++) {
		if (i)
			r = strbuf_addch(out, ',');
		if (r < 0)
			break;
		if (p->cells[i].text) {
			r = strbuf_adds(out, p->cells[i].text);
		} else {
			json_t *cell = p->cells[i].date ? cell_for(&tc->cols[i], p->cells[i].date, now) : json_null();
			char *s = cell ? json_dumps(cell, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;

			json_decref(cell);
			r = s ? strbuf_adds(out, s) : -ENOMEM;
			free(s);
		}
	}
	if (r >= 0)
		r = strbuf_addch(out, ']');
	if (r >= 0)
		r = strbuf_adds(out, p->object);
	if (r >= 0)
		r = strbuf_addch(out, '}');
	return r < 0 ? r : 0;
}
