/* convert.c - kinds served from another kind's storage; see convert.h.
 *
 * events.k8s.io/v1 Event <-> core v1 Event: the field mapping is upstream's
 * (k8s.io/kubernetes pkg/apis/events/v1 conversion): note/message,
 * regarding/involvedObject, reportingController/reportingComponent,
 * deprecatedSource/source, deprecatedFirstTimestamp/firstTimestamp,
 * deprecatedLastTimestamp/lastTimestamp, deprecatedCount/count; every other
 * field keeps its name.
 *
 * CRD versions: the built-in conversions of convert-capi.c, wrapped here
 * with what every one of them does (apiVersion, the conversion-data
 * annotation, pruning to the target version's schema). */
#include "convert.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert-internal.h"
#include "kube/schema.h"

static const char *const event_map[][2] = {
	/* { events.k8s.io/v1, core v1 } */
	{ "note", "message" },
	{ "regarding", "involvedObject" },
	{ "reportingController", "reportingComponent" },
	{ "deprecatedSource", "source" },
	{ "deprecatedFirstTimestamp", "firstTimestamp" },
	{ "deprecatedLastTimestamp", "lastTimestamp" },
	{ "deprecatedCount", "count" },
};

static bool is_event(const struct kube_kind *view)
{
	return view && view->stored_as && !view->crd && strcmp(view->kind, "Event") == 0;
}

bool kube_convert_is_version(const struct kube_kind *view)
{
	return view && view->stored_as && view->crd;
}

static const char *rename_key(const char *key, bool to_stored)
{
	size_t i;

	for (i = 0; i < sizeof(event_map) / sizeof(event_map[0]); i++) {
		if (strcmp(key, event_map[i][to_stored ? 0 : 1]) == 0)
			return event_map[i][to_stored ? 1 : 0];
		/* A name of the other form has no place here: drop it, as
		 * the typed conversion would. */
		if (strcmp(key, event_map[i][to_stored ? 1 : 0]) == 0)
			return NULL;
	}
	return key;
}

static json_t *event_convert(const struct kube_kind *view, const json_t *obj, bool to_stored)
{
	const struct kube_kind *to = to_stored ? view->stored_as : view;
	const char *key;
	json_t *out, *v;

	out = json_object();
	if (!out)
		return NULL;
	json_object_foreach((json_t *)obj, key, v) {
		const char *nk = rename_key(key, to_stored);

		if (!nk)
			continue;
		if (strcmp(nk, "apiVersion") == 0 && json_is_string(v))
			v = json_string(to->api_version);
		else
			json_incref(v);
		if (json_object_set_new(out, nk, v) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

/* ---- dotted paths ---------------------------------------------------------- */

/* The parent object of the last step of path and that step's name (in buf);
 * with create, missing or non-object parents are made. */
static json_t *parent_of(json_t *o, const char *path, char *buf, size_t size, bool create)
{
	const char *p = path, *dot;

	while ((dot = strchr(p, '.')) != NULL) {
		size_t n = (size_t)(dot - p);
		json_t *next;

		if (n >= size || !json_is_object(o))
			return NULL;
		memcpy(buf, p, n);
		buf[n] = '\0';
		next = json_object_get(o, buf);
		if (!json_is_object(next)) {
			if (!create)
				return NULL;
			next = json_object();
			if (json_object_set_new(o, buf, next) < 0)
				return NULL;
		}
		o = next;
		p = dot + 1;
	}
	if (strlen(p) >= size || !json_is_object(o))
		return NULL;
	strcpy(buf, p);
	return o;
}

json_t *cv_get(const json_t *o, const char *path)
{
	char key[128];
	json_t *parent = parent_of((json_t *)o, path, key, sizeof(key), false);

	return parent ? json_object_get(parent, key) : NULL;
}

void cv_set(json_t *o, const char *path, json_t *v)
{
	char key[128];
	json_t *parent;

	if (!v)
		return;
	parent = parent_of(o, path, key, sizeof(key), true);
	if (parent)
		json_object_set_new(parent, key, v);
	else
		json_decref(v);
}

json_t *cv_take(json_t *o, const char *path)
{
	char key[128];
	json_t *parent = parent_of(o, path, key, sizeof(key), false), *v;

	if (!parent)
		return NULL;
	v = json_incref(json_object_get(parent, key));
	if (v)
		json_object_del(parent, key);
	return v;
}

void cv_del(json_t *o, const char *path)
{
	json_decref(cv_take(o, path));
}

void cv_move(json_t *o, const char *from, const char *to)
{
	json_t *v = cv_take(o, from);

	if (v)
		cv_set(o, to, v);
}

void cv_drop_empty(json_t *o, const char *path)
{
	json_t *v = cv_get(o, path);

	if (json_is_object(v) && json_object_size(v) == 0)
		cv_del(o, path);
}

/* ---- Go durations ---------------------------------------------------------- */

int kube_parse_go_duration(const char *s, long long *seconds)
{
	static const struct { const char *unit; double secs; } units[] = {
		{ "ns", 1e-9 }, { "us", 1e-6 }, { "\xc2\xb5s", 1e-6 }, { "\xce\xbcs", 1e-6 },
		{ "ms", 1e-3 }, { "s", 1 }, { "m", 60 }, { "h", 3600 },
	};
	double total = 0;
	bool neg = false;

	if (!s || !*s)
		return -1;
	if (*s == '-' || *s == '+')
		neg = *s++ == '-';
	if (strcmp(s, "0") == 0) {
		*seconds = 0;
		return 0;
	}
	if (!*s)
		return -1;
	while (*s) {
		char *end;
		double v;
		size_t i, best = 0, best_len = 0;

		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return -1;
		errno = 0;
		v = strtod(s, &end);
		if (end == s || errno || strchr("eExXpP", *(end - 1)) != NULL)
			return -1;
		for (const char *q = s; q < end; q++)
			if (!((*q >= '0' && *q <= '9') || *q == '.'))
				return -1;
		s = end;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t n = strlen(units[i].unit);

			if (strncmp(s, units[i].unit, n) == 0 && n > best_len) {
				best = i;
				best_len = n;
			}
		}
		if (!best_len)
			return -1;
		total += v * units[best].secs;
		s += best_len;
	}
	if (neg)
		total = -total;
	if (!isfinite(total))
		return -1;
	total = trunc(total);
	if (total > INT_MAX)
		total = INT_MAX;
	if (total < INT_MIN)
		total = INT_MIN;
	*seconds = (long long)total;
	return 0;
}

void kube_format_go_duration(long long seconds, char *buf, size_t size)
{
	unsigned long long a = seconds < 0 ? (unsigned long long)(-(seconds + 1)) + 1 : (unsigned long long)seconds;
	const char *sign = seconds < 0 ? "-" : "";

	if (a >= 3600)
		snprintf(buf, size, "%s%lluh%llum%llus", sign, a / 3600, a % 3600 / 60, a % 60);
	else if (a >= 60)
		snprintf(buf, size, "%s%llum%llus", sign, a / 60, a % 60);
	else
		snprintf(buf, size, "%s%llus", sign, a);
}

/* ---- CRD versions -------------------------------------------------------- */

static const struct cv_version *find_version(const struct kube_kind *view)
{
	unsigned i;

	for (i = 0; i < cv_capi_versions_count; i++) {
		const struct cv_version *c = &cv_capi_versions[i];

		if (strcmp(c->group, view->group) == 0 && strcmp(c->kind, view->kind) == 0 &&
		    strcmp(c->spoke, view->version) == 0 && strcmp(c->hub, view->stored_as->version) == 0)
			return c;
	}
	return NULL;
}

/* The object an earlier conversion left in the annotation, when it is in
 * the `to` form. */
static json_t *restored_from(const json_t *obj, const struct kube_kind *to)
{
	/* The annotation key has dots: looked up directly, not as a path. */
	const char *text = json_string_value(json_object_get(cv_get(obj, "metadata.annotations"),
							     KUBE_CONVERSION_DATA_ANNOTATION));
	json_t *r;

	if (!text)
		return NULL;
	r = json_loads(text, 0, NULL);
	if (!json_is_object(r) || !json_is_string(json_object_get(r, "apiVersion")) ||
	    strcmp(json_string_value(json_object_get(r, "apiVersion")), to->api_version) != 0) {
		json_decref(r);
		return NULL;
	}
	return r;
}

/* Sets the annotation on out to src without metadata, as Cluster API's
 * MarshalData does. */
static void annotate(json_t *out, const json_t *src)
{
	json_t *copy = json_object(), *ann;
	const char *key;
	json_t *v;
	char *text;

	json_object_foreach((json_t *)src, key, v)
		if (strcmp(key, "metadata") != 0)
			json_object_set(copy, key, v);
	text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(copy);
	if (!text)
		return;
	ann = cv_get(out, "metadata.annotations");
	if (!json_is_object(ann)) {
		ann = json_object();
		cv_set(out, "metadata.annotations", ann);
	}
	json_object_set_new(ann, KUBE_CONVERSION_DATA_ANNOTATION, json_string(text));
	free(text);
}

static json_t *version_convert(const struct kube_kind *view, const json_t *obj, bool to_stored, bool whole)
{
	const struct kube_kind *from = to_stored ? view : view->stored_as, *to = to_stored ? view->stored_as : view;
	const struct cv_version *c = find_version(view);
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	json_t *out, *restored = NULL, *ann;
	const char *const *restore;

	if (!json_is_object(obj))
		return json_incref((json_t *)obj);
	out = json_deep_copy(obj);
	if (!out)
		return NULL;
	if (av && strcmp(av, from->api_version) != 0)
		return out;
	if (av)
		json_object_set_new(out, "apiVersion", json_string(to->api_version));
	if (whole)
		restored = restored_from(obj, to);
	ann = cv_get(out, "metadata.annotations");
	if (json_is_object(ann) && whole) {
		json_object_del(ann, KUBE_CONVERSION_DATA_ANNOTATION);
		if (!json_object_size(ann))
			cv_del(out, "metadata.annotations");
	}
	if (c) {
		if (to_stored)
			c->to_hub(out, restored);
		else
			c->to_spoke(out, restored);
		restore = to_stored ? c->hub_restore : c->spoke_restore;
		for (; restored && restore && *restore; restore++) {
			json_t *v = cv_get(restored, *restore);

			if (v && !cv_get(out, *restore))
				cv_set(out, *restore, json_deep_copy(v));
		}
	}
	json_decref(restored);
	/* What the target version does not declare goes (hub-only fields on
	 * the way out; the stored kind's own pruning does the way in). */
	if (!to_stored && view->schema)
		schema_prune(view->schema, out, NULL);
	if (whole && c)
		annotate(out, obj);
	return out;
}

/* ---- entry points ---------------------------------------------------------- */

json_t *kube_convert(const struct kube_kind *view, const json_t *obj, bool to_stored)
{
	if (is_event(view) && json_is_object(obj))
		return event_convert(view, obj, to_stored);
	if (kube_convert_is_version(view))
		return version_convert(view, obj, to_stored, true);
	return json_incref((json_t *)obj);
}

json_t *kube_convert_partial(const struct kube_kind *view, const json_t *obj, bool to_stored)
{
	if (is_event(view) && json_is_object(obj))
		return event_convert(view, obj, to_stored);
	if (kube_convert_is_version(view))
		return version_convert(view, obj, to_stored, false);
	return json_incref((json_t *)obj);
}

char *kube_convert_json_pointer(const struct kube_kind *view, const char *path)
{
	const char *rest, *nk;
	char first[64];
	size_t n;
	char *out = NULL;

	if (!is_event(view) || !path || path[0] != '/')
		return strdup(path ? path : "");
	rest = strchr(path + 1, '/');
	n = rest ? (size_t)(rest - path - 1) : strlen(path + 1);
	if (n >= sizeof(first))
		return strdup(path);
	memcpy(first, path + 1, n);
	first[n] = '\0';
	nk = rename_key(first, true);
	if (!nk || nk == first)
		return strdup(path);
	if (asprintf(&out, "/%s%s", nk, rest ? rest : "") < 0)
		return NULL;
	return out;
}
