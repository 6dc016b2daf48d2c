/* convert.c - events.k8s.io/v1 Event <-> core v1 Event; see convert.h.
 * The field mapping is upstream's (k8s.io/kubernetes pkg/apis/events/v1
 * conversion): note/message, regarding/involvedObject,
 * reportingController/reportingComponent, deprecatedSource/source,
 * deprecatedFirstTimestamp/firstTimestamp, deprecatedLastTimestamp/
 * lastTimestamp, deprecatedCount/count; every other field keeps its name. */
#include "convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static bool converts(const struct kube_kind *view)
{
	return view && view->stored_as && strcmp(view->kind, "Event") == 0;
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

json_t *kube_convert(const struct kube_kind *view, const json_t *obj, bool to_stored)
{
	const struct kube_kind *to;
	const char *key;
	json_t *out, *v;

	if (!converts(view) || !json_is_object(obj))
		return json_incref((json_t *)obj);
	to = to_stored ? view->stored_as : view;
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

char *kube_convert_json_pointer(const struct kube_kind *view, const char *path)
{
	const char *rest, *nk;
	char first[64];
	size_t n;
	char *out = NULL;

	if (!converts(view) || !path || path[0] != '/')
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
