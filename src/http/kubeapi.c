/* kubeapi.c - Kubernetes REST endpoints; see kubeapi.h.
 *
 * Paths:
 *   /api/v1[/namespaces/NS]/PLURAL[/NAME[/status]]
 *   /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/status]]
 * plus discovery (/api, /apis, /apis/GROUP[/VERSION]), /openapi/v3 and
 * /version.  Lists are written from the stored text without parsing when
 * no selector needs the objects, so listing thousands of objects is a copy. */
#include "kubeapi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "base/yamljson.h"
#include "kube/selector.h"
#include "kube/table.h"

#define LIST_MAX_LIMIT 100000

struct kubeapi {
	struct kube_api *api;
	const struct kube_registry *reg;
	struct kubeapi_opts opts;
	char *openapi_index;
	pthread_t waker;
	bool waker_started;
	atomic_bool waker_stop;
};

/* Watches wait suspended (no thread each); this thread wakes them when the
 * store's revision moves. */
static void *waker_main(void *arg)
{
	struct kubeapi *ka = arg;
	store *s = kube_api_store(ka->api);
	int64_t rev = store_current_rev(s);

	while (!atomic_load(&ka->waker_stop)) {
		int64_t now = store_wait(s, rev, 1000);

		if (now != rev) {
			rev = now;
			http_streams_wake();
		}
	}
	return NULL;
}

int kubeapi_new(struct kube_api *api, const struct kubeapi_opts *opts, struct kubeapi **ret)
{
	struct kubeapi *ka = calloc(1, sizeof(*ka));

	if (!ka)
		return -ENOMEM;
	ka->api = api;
	ka->reg = kube_api_registry(api);
	ka->opts = *opts;
	if (!ka->opts.max_watch_seconds)
		ka->opts.max_watch_seconds = 1800;
	if (pthread_create(&ka->waker, NULL, waker_main, ka) != 0) {
		free(ka);
		return -EAGAIN;
	}
	ka->waker_started = true;
	*ret = ka;
	return 0;
}

void kubeapi_free(struct kubeapi *ka)
{
	if (!ka)
		return;
	if (ka->waker_started) {
		atomic_store(&ka->waker_stop, true);
		store_wake_all(kube_api_store(ka->api));
		pthread_join(ka->waker, NULL);
	}
	free(ka->openapi_index);
	free(ka);
}

/* --- Status responses ---------------------------------------------------- */

static json_t *status_json(const ah_err *err, const char *group, const char *kind_plural,
			   const char *name, json_t *causes)
{
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
			       "metadata", "status", "Failure", "message", err->message, "reason",
			       err->reason[0] ? err->reason : "InternalError", "code",
			       err->status ? err->status : 500);
	json_t *details = json_object();

	if (name && *name)
		json_object_set_new(details, "name", json_string(name));
	if (group && *group)
		json_object_set_new(details, "group", json_string(group));
	if (kind_plural && *kind_plural)
		json_object_set_new(details, "kind", json_string(kind_plural));
	if (causes && json_array_size(causes))
		json_object_set(details, "causes", causes);
	if (json_object_size(details))
		json_object_set_new(st, "details", details);
	else
		json_decref(details);
	return st;
}

enum http_result kubeapi_reply_status(struct http_req *req, const ah_err *err, const char *group,
				     const char *kind_plural, const char *name, json_t *causes)
{
	json_t *st = status_json(err, group, kind_plural, name, causes);
	enum http_result r = http_reply_json(req, err->status ? (unsigned)err->status : 500, st);

	json_decref(st);
	return r;
}

static enum http_result reply_err(struct http_req *req, int status, const char *reason,
				 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum http_result reply_err(struct http_req *req, int status, const char *reason,
				 const char *fmt, ...)
{
	ah_err err;
	va_list ap;

	va_start(ap, fmt);
	ah_err_setv(&err, EINVAL, status, reason, fmt, ap);
	va_end(ap);
	return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
}

/* --- discovery ----------------------------------------------------------- */

static enum http_result reply_version(struct http_req *req)
{
	json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor", "31",
			      "gitVersion", "v1.31.0+agenthub", "gitCommit", "", "gitTreeState", "clean",
			      "buildDate", "2026-11-21T00:00:00Z", "goVersion", "", "compiler", "gcc",
			      "platform", "linux/amd64");
	enum http_result r = http_reply_json(req, 200, v);

	json_decref(v);
	return r;
}

static json_t *resource_entry(const struct kube_kind *k, bool status)
{
	json_t *e;

	if (status)
		return json_pack("{s:s+,s:s,s:b,s:s,s:[sss]}", "name", k->plural, "/status", "singularName", "",
				 "namespaced", k->namespaced, "kind", k->kind, "verbs", "get", "patch",
				 "update");
	e = json_pack("{s:s,s:s,s:b,s:s,s:[ssssssss],s:O}", "name", k->plural, "singularName",
		      k->singular, "namespaced", k->namespaced, "kind", k->kind, "verbs", "create",
		      "delete", "deletecollection", "get", "list", "patch", "update", "watch",
		      "shortNames", k->short_names);
	if (json_array_size(k->categories))
		json_object_set(e, "categories", k->categories);
	return e;
}

static enum http_result reply_resource_list(struct kubeapi *ka, struct http_req *req,
					   const char *group, const char *version)
{
	json_t *list = json_array(), *doc;
	enum http_result r;
	size_t i;
	char gv[256];
	bool any = false;

	if (strcmp(group, "apiextensions.k8s.io") == 0 && strcmp(version, "v1") == 0) {
		json_array_append_new(list, json_pack("{s:s,s:s,s:b,s:s,s:[ss],s:[s]}", "name",
						      "customresourcedefinitions", "singularName",
						      "customresourcedefinition", "namespaced", 0, "kind",
						      "CustomResourceDefinition", "verbs", "get", "list",
						      "shortNames", "crd"));
		any = true;
	}
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];

		if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
			continue;
		any = true;
		json_array_append_new(list, resource_entry(k, false));
		if (k->has_status)
			json_array_append_new(list, resource_entry(k, true));
	}
	if (!any) {
		json_decref(list);
		return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
	}
	snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
	doc = json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
			"groupVersion", gv, "resources", list);
	r = http_reply_json(req, 200, doc);
	json_decref(doc);
	return r;
}

static json_t *group_entry(const char *group, const char *version)
{
	char gv[256];

	snprintf(gv, sizeof(gv), "%s/%s", group, version);
	return json_pack("{s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "name", group, "versions", "groupVersion",
			 gv, "version", version, "preferredVersion", "groupVersion", gv, "version",
			 version);
}

static json_t *all_groups(struct kubeapi *ka)
{
	json_t *groups = json_array(), *seen = json_object();
	size_t i;

	json_array_append_new(groups, group_entry("apiextensions.k8s.io", "v1"));
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];

		if (!k->group[0] || json_object_get(seen, k->group))
			continue;
		json_object_set_new(seen, k->group, json_true());
		json_array_append_new(groups, group_entry(k->group, k->version));
	}
	json_decref(seen);
	return groups;
}

static enum http_result reply_group(struct kubeapi *ka, struct http_req *req, const char *group)
{
	json_t *groups = all_groups(ka), *g;
	enum http_result r;
	size_t i;

	json_array_foreach(groups, i, g) {
		if (strcmp(json_string_value(json_object_get(g, "name")), group) == 0) {
			json_object_set_new(g, "kind", json_string("APIGroup"));
			json_object_set_new(g, "apiVersion", json_string("v1"));
			r = http_reply_json(req, 200, g);
			json_decref(groups);
			return r;
		}
	}
	json_decref(groups);
	return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
}

static enum http_result reply_discovery(struct kubeapi *ka, struct http_req *req, const char *path)
{
	json_t *doc;
	enum http_result r;

	if (strcmp(path, "/api") == 0) {
		doc = json_pack("{s:s,s:[s],s:[{s:s,s:s}]}", "kind", "APIVersions", "versions", "v1",
				"serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
				ka->opts.server_address ? ka->opts.server_address : "");
	} else {
		doc = json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
				all_groups(ka));
	}
	r = http_reply_json(req, 200, doc);
	json_decref(doc);
	return r;
}

/* --- OpenAPI v3 ---------------------------------------------------------- */

/* "agent-install.openshift.io" -> "io.openshift.agent-install" */
static void reverse_group(const char *group, char *out, size_t size)
{
	char tmp[256];
	char *parts[32];
	int n = 0, i;
	size_t used = 0;

	snprintf(tmp, sizeof(tmp), "%s", group);
	for (char *tok = strtok(tmp, "."); tok && n < 32; tok = strtok(NULL, "."))
		parts[n++] = tok;
	out[0] = '\0';
	for (i = n - 1; i >= 0; i--)
		used += (size_t)snprintf(out + used, used < size ? size - used : 0, "%s%s", parts[i],
					 i ? "." : "");
}

static void schema_name(const struct kube_kind *k, char *out, size_t size)
{
	char rg[256];

	if (!k->group[0]) {
		snprintf(out, size, "io.k8s.api.core.v1.%s", k->kind);
		return;
	}
	reverse_group(k->group, rg, sizeof(rg));
	snprintf(out, size, "%s.%s.%s", rg, k->version, k->kind);
}

static json_t *object_meta_schema(void)
{
	return json_pack(
		"{s:s,s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s},"
		"s:{s:s,s:s},s:{s:s,s:s,s:s},s:{s:s,s:s,s:s},s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:{s:s}},"
		"s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:{s:s}}}}",
		"type", "object", "description",
		"ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.",
		"properties",
		"name", "type", "string", "description", "Name must be unique within a namespace.",
		"generateName", "type", "string", "description", "An optional prefix used by the server to generate a unique name.",
		"namespace", "type", "string", "description", "Namespace defines the space within which each name must be unique.",
		"uid", "type", "string", "description", "UID is the unique in time and space value for this object.",
		"resourceVersion", "type", "string", "description", "An opaque value that represents the internal version of this object.",
		"selfLink", "type", "string", "description", "Deprecated.",
		"generation", "type", "integer", "description", "A sequence number representing a specific generation of the desired state.",
		"creationTimestamp", "type", "string", "format", "date-time", "description", "The time this object was created.",
		"deletionTimestamp", "type", "string", "format", "date-time", "description", "The time at which this resource will be deleted.",
		"labels", "type", "object", "description", "Map of string keys and values for organizing and categorizing objects.", "additionalProperties", "type", "string",
		"annotations", "type", "object", "description", "Unstructured key value map stored with a resource.", "additionalProperties", "type", "string",
		"finalizers", "type", "array", "description", "Must be empty before the object is deleted from the registry.", "items", "type", "string",
		"ownerReferences", "type", "array", "description", "List of objects depended by this object.", "items", "type", "object");
}

static json_t *param(const char *name, const char *in, const char *desc, bool required)
{
	json_t *p = json_pack("{s:s,s:s,s:s,s:{s:s},s:b}", "name", name, "in", in, "description", desc,
			      "schema", "type", "string", "required", required);

	if (strcmp(in, "query") == 0)
		json_object_set_new(p, "uniqueItems", json_true());
	return p;
}

static json_t *op(const struct kube_kind *k, const char *action, const char *verb, const char *ref,
		  bool body, bool patch)
{
	json_t *o = json_pack("{s:s,s:[s],s:s,s:{s:s,s:s,s:s}}", "operationId", verb, "tags", k->kind,
			      "x-kubernetes-action", action, "x-kubernetes-group-version-kind", "group",
			      k->group, "version", k->version, "kind", k->kind);
	json_t *params = json_array();
	json_t *content = json_pack("{s:{s:{s:s}}}", "application/json", "schema", "$ref", ref);

	json_object_set_new(o, "responses", json_pack("{s:{s:s,s:O}}", "200", "description", "OK", "content", content));
	json_array_append_new(params, param("dryRun", "query", "When present, indicates that modifications should not be persisted.", false));
	if (body) {
		json_array_append_new(params, param("fieldManager", "query", "fieldManager is a name associated with the actor or entity that is making these changes.", false));
		json_array_append_new(params, param("fieldValidation", "query", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields.", false));
		if (patch)
			json_object_set_new(o, "requestBody", json_pack("{s:{s:{s:{s:s}},s:{s:{s:s}},s:{s:{s:s}}},s:b}", "content",
								      "application/json-patch+json", "schema", "type", "object",
								      "application/merge-patch+json", "schema", "type", "object",
								      "application/apply-patch+yaml", "schema", "type", "object",
								      "required", 1));
		else
			json_object_set_new(o, "requestBody", json_pack("{s:O,s:b}", "content", content, "required", 1));
	}
	json_object_set_new(o, "parameters", params);
	json_decref(content);
	return o;
}

static void add_paths(json_t *paths, const struct kube_kind *k, const char *ref, const char *list_ref)
{
	char base[512], item[600];

	if (k->group[0])
		snprintf(base, sizeof(base), "/apis/%s/%s/%s%s", k->group, k->version,
			 k->namespaced ? "namespaces/{namespace}/" : "", k->plural);
	else
		snprintf(base, sizeof(base), "/api/v1/%s%s", k->namespaced ? "namespaces/{namespace}/" : "",
			 k->plural);
	snprintf(item, sizeof(item), "%s/{name}", base);
	json_object_set_new(paths, base, json_pack("{s:o,s:o}", "get", op(k, "list", "list", list_ref, false, false),
						   "post", op(k, "post", "create", ref, true, false)));
	json_object_set_new(paths, item, json_pack("{s:o,s:o,s:o,s:o}", "get", op(k, "get", "read", ref, false, false),
						   "put", op(k, "put", "replace", ref, true, false),
						   "patch", op(k, "patch", "patch", ref, true, true),
						   "delete", op(k, "delete", "delete", ref, false, false)));
	if (k->has_status) {
		char st[700];

		snprintf(st, sizeof(st), "%s/status", item);
		json_object_set_new(paths, st, json_pack("{s:o,s:o,s:o}", "get", op(k, "get", "readStatus", ref, false, false),
							 "put", op(k, "put", "replaceStatus", ref, true, false),
							 "patch", op(k, "patch", "patchStatus", ref, true, true)));
	}
}

/* Rewrite a CRD schema for OpenAPI: metadata becomes a $ref to ObjectMeta. */
static json_t *openapi_kind_schema(const struct kube_kind *k)
{
	json_t *s = json_deep_copy(k->schema), *props;

	if (!json_is_object(s))
		s = json_object();
	props = json_object_get(s, "properties");
	if (!json_is_object(props)) {
		props = json_object();
		json_object_set_new(s, "properties", props);
	}
	json_object_set_new(props, "metadata", json_pack("{s:[{s:s}],s:s}", "allOf", "$ref",
							 "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
							 "description", "Standard object's metadata."));
	if (!json_object_get(props, "apiVersion"))
		json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type", "string"));
	if (!json_object_get(props, "kind"))
		json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
	json_object_set_new(s, "x-kubernetes-group-version-kind",
			    json_pack("[{s:s,s:s,s:s}]", "group", k->group, "kind", k->kind, "version", k->version));
	return s;
}

static json_t *openapi_doc(struct kubeapi *ka, const char *group, const char *version)
{
	json_t *paths = json_object(), *schemas = json_object();
	size_t i;
	bool any = false;

	json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", object_meta_schema());
	json_object_set_new(schemas, "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
			    json_pack("{s:s,s:{s:{s:s},s:{s:s}}}", "type", "object", "properties",
				      "resourceVersion", "type", "string", "continue", "type", "string"));
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];
		char name[300], list_name[320], ref[400], list_ref[420];

		if (strcmp(k->group, group) != 0 || strcmp(k->version, version) != 0)
			continue;
		any = true;
		schema_name(k, name, sizeof(name));
		snprintf(list_name, sizeof(list_name), "%sList", name);
		snprintf(ref, sizeof(ref), "#/components/schemas/%s", name);
		snprintf(list_ref, sizeof(list_ref), "#/components/schemas/%s", list_name);
		json_object_set_new(schemas, name, openapi_kind_schema(k));
		json_object_set_new(schemas, list_name,
				    json_pack("{s:s,s:{s:{s:s},s:{s:s},s:{s:s,s:{s:s}},s:{s:s}},s:[{s:s,s:s,s:s}]}",
					      "type", "object", "properties", "apiVersion", "type", "string",
					      "kind", "type", "string", "items", "type", "array", "items",
					      "$ref", ref, "metadata", "$ref",
					      "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta",
					      "x-kubernetes-group-version-kind", "group", k->group, "kind",
					      k->list_kind, "version", k->version));
		add_paths(paths, k, ref, list_ref);
	}
	if (!any) {
		json_decref(paths);
		json_decref(schemas);
		return NULL;
	}
	return json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:o}}", "openapi", "3.0.0", "info", "title",
			 "agenthub", "version", "v1.31.0", "paths", paths, "components", "schemas",
			 schemas);
}

/* /openapi/v2 carries no definitions: kubectl reads the schemas from
 * /openapi/v3, and validates on the server (fieldValidation=Strict).  It still
 * fetches v2 (as protobuf) for client-side checks of `kind: List` files and
 * fails when it is missing; an empty document makes it skip those checks
 * and leave validation to us, which knows every schema. */
static enum http_result reply_openapi_v2(struct http_req *req)
{
	static const char pb[] = "\x0a\x03" "2.0" "\x12\x13" "\x0a\x08" "agenthub" "\x12\x07" "v1.31.0";
	static const char js[] = "{\"swagger\":\"2.0\",\"info\":{\"title\":\"agenthub\",\"version\":\"v1.31.0\"},"
				 "\"paths\":{},\"definitions\":{}}";
	const char *accept = http_header(req, "Accept");

	if (accept && strstr(accept, "protobuf"))
		return http_reply(req, 200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", pb,
				  sizeof(pb) - 1);
	return http_reply(req, 200, "application/json", js, sizeof(js) - 1);
}

static enum http_result reply_openapi(struct kubeapi *ka, struct http_req *req, const char *path)
{
	enum http_result r;
	json_t *doc;

	if (strcmp(path, "/openapi/v2") == 0)
		return reply_openapi_v2(req);
	if (strcmp(path, "/openapi/v3") == 0 || strcmp(path, "/openapi/v3/") == 0) {
		json_t *paths = json_object(), *seen = json_object();
		size_t i;

		for (i = 0; i < ka->reg->n; i++) {
			const struct kube_kind *k = ka->reg->kinds[i];
			char key[300], url[400];

			if (k->group[0])
				snprintf(key, sizeof(key), "apis/%s/%s", k->group, k->version);
			else
				snprintf(key, sizeof(key), "api/v1");
			if (json_object_get(seen, key))
				continue;
			json_object_set_new(seen, key, json_true());
			snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", key, "agenthub1");
			json_object_set_new(paths, key, json_pack("{s:s}", "serverRelativeURL", url));
		}
		json_decref(seen);
		doc = json_pack("{s:o}", "paths", paths);
	} else if (strncmp(path, "/openapi/v3/apis/", 17) == 0) {
		char g[256], v[64];

		if (sscanf(path + 17, "%255[^/]/%63s", g, v) != 2)
			return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
		doc = openapi_doc(ka, g, v);
	} else if (strcmp(path, "/openapi/v3/api/v1") == 0) {
		doc = openapi_doc(ka, "", "v1");
	} else {
		return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
	}
	if (!doc)
		return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
	r = http_reply_json(req, 200, doc);
	json_decref(doc);
	return r;
}

/* --- request parsing ----------------------------------------------------- */

struct target {
	const struct kube_kind *k;
	char group[256], version[64], plural[256];
	char ns[256];     /* "" = cluster-scoped or all namespaces */
	char name[256];   /* "" = collection */
	bool status;
	bool crd;         /* apiextensions customresourcedefinitions */
};

static bool seg(const char **p, char *out, size_t size)
{
	const char *s = *p, *e;
	size_t n;

	if (*s != '/')
		return false;
	s++;
	e = strchr(s, '/');
	n = e ? (size_t)(e - s) : strlen(s);
	if (n == 0 || n >= size)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	*p = s + n;
	return true;
}

/* Parse the resource part of a path; 0 ok, -ENOENT unknown path. */
static int parse_target(struct kubeapi *ka, const char *path, struct target *t)
{
	const char *p;
	char a[256], b[256];

	memset(t, 0, sizeof(*t));
	if (strncmp(path, "/api/v1/", 8) == 0) {
		p = path + 7;
	} else if (strncmp(path, "/apis/", 6) == 0) {
		p = path + 5;
		if (!seg(&p, t->group, sizeof(t->group)) || !seg(&p, t->version, sizeof(t->version)))
			return -ENOENT;
	} else {
		return -ENOENT;
	}
	if (!t->version[0])
		snprintf(t->version, sizeof(t->version), "v1");
	if (!seg(&p, a, sizeof(a)))
		return -ENOENT;
	if (strcmp(a, "namespaces") == 0 && *p == '/') {
		/* /namespaces/NS/PLURAL... or the namespace object itself. */
		const char *q = p;

		if (!seg(&q, b, sizeof(b)))
			return -ENOENT;
		if (*q == '/' && !t->group[0] && strcmp(q, "/status") == 0) {
			snprintf(t->plural, sizeof(t->plural), "namespaces");
			snprintf(t->name, sizeof(t->name), "%s", b);
			t->status = true;
		} else if (*q == '/' && strcmp(q, "/finalize") != 0) {
			snprintf(t->ns, sizeof(t->ns), "%s", b);
			p = q;
			if (!seg(&p, t->plural, sizeof(t->plural)))
				return -ENOENT;
			if (*p && !seg(&p, t->name, sizeof(t->name)))
				return -ENOENT;
			if (*p) {
				if (strcmp(p, "/status") != 0)
					return -ENOENT;
				t->status = true;
			}
		} else {
			snprintf(t->plural, sizeof(t->plural), "namespaces");
			snprintf(t->name, sizeof(t->name), "%s", b);
			if (*q)
				return -ENOENT;
		}
	} else {
		snprintf(t->plural, sizeof(t->plural), "%s", a);
		if (*p && !seg(&p, t->name, sizeof(t->name)))
			return -ENOENT;
		if (*p) {
			if (strcmp(p, "/status") != 0)
				return -ENOENT;
			t->status = true;
		}
	}
	if (strcmp(t->group, "apiextensions.k8s.io") == 0 && strcmp(t->plural, "customresourcedefinitions") == 0 &&
	    strcmp(t->version, "v1") == 0) {
		t->crd = true;
		return 0;
	}
	t->k = kube_registry_by_resource(ka->reg, t->group, t->version, t->plural);
	if (!t->k)
		return -ENOENT;
	if (t->status && !t->k->has_status)
		return -ENOENT;
	if (!t->k->namespaced && t->ns[0])
		return -ENOENT;
	return 0;
}

static bool wants_table(struct http_req *req)
{
	const char *accept = http_header(req, "Accept");

	return accept && strstr(accept, "as=Table") != NULL;
}

static enum table_include table_include_param(struct http_req *req)
{
	const char *inc = http_query(req, "includeObject");

	if (inc && strcmp(inc, "Object") == 0)
		return TABLE_INCLUDE_OBJECT;
	if (inc && strcmp(inc, "None") == 0)
		return TABLE_INCLUDE_NONE;
	return TABLE_INCLUDE_METADATA;
}

/* Reply with an object, as JSON or as a one-row Table. */
/* text (taken, may be NULL): obj's JSON text when the caller has it, sent
 * as is unless a Table was asked for. */
static enum http_result reply_object(struct http_req *req, const struct kube_kind *k, unsigned status,
				    const json_t *obj, json_t *warnings, char *text, size_t text_len)
{
	struct http_response *resp;
	size_t len;
	char *s;

	if (text && !(k && wants_table(req))) {
		s = text;
		len = text_len;
	} else if (k && wants_table(req)) {
		json_t *rows = json_array(), *tbl;

		json_array_append_new(rows, table_row(k->columns, obj, table_include_param(req), time(NULL)));
		tbl = json_pack("{s:s,s:s,s:{s:O},s:o,s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
				"metadata", "resourceVersion",
				json_object_get(json_object_get(obj, "metadata"), "resourceVersion") ?
				json_object_get(json_object_get(obj, "metadata"), "resourceVersion") : json_string(""),
				"columnDefinitions", table_column_definitions(k->columns), "rows", rows);
		s = json_dumps(tbl, JSON_COMPACT);
		json_decref(tbl);
		len = s ? strlen(s) : 0;
	} else {
		s = json_dumps(obj, JSON_COMPACT);
		len = s ? strlen(s) : 0;
	}
	if (s != text)
		free(text);
	if (!s)
		return HTTP_NO;
	resp = http_response_new(status, "application/json");
	if (!resp) {
		free(s);
		return HTTP_NO;
	}
	http_response_take_body(resp, s, len);
	if (warnings) {
		size_t i;
		json_t *w;

		json_array_foreach(warnings, i, w) {
			char hdr[1200];

			snprintf(hdr, sizeof(hdr), "299 - \"%s\"", json_string_value(w));
			/* Quotes inside the text would end the warning early. */
			for (char *c = hdr + 7; *c && c[1]; c++)
				if (*c == '"')
					*c = '\'';
			/* Past the response's header bound the rest are dropped. */
			http_response_add_header(resp, "Warning", hdr);
		}
	}
	return http_send(req, resp);
}

static enum http_result reply_kerr(struct http_req *req, const struct target *t, const ah_err *err,
				  const char *name, json_t *causes)
{
	const struct kube_kind *k = t->k;
	json_t *st;
	enum http_result r;

	/* Invalid errors name the kind (as the API server does); others the resource. */
	if (k && err->status == 422)
		st = status_json(err, k->group, k->kind, name, causes);
	else
		st = status_json(err, k ? k->group : NULL, k ? k->plural : NULL, name, causes);
	r = http_reply_json(req, err->status ? (unsigned)err->status : 500, st);
	json_decref(st);
	return r;
}

static int parse_body(struct http_req *req, json_t **ret, ah_err *err)
{
	json_error_t jerr;
	json_t *doc;

	if (req->body.len == 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "the request body is empty");
	doc = json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc) {
		/* kubectl and client-go send JSON; accept YAML too for curl users. */
		json_t *docs = NULL;
		ah_err yerr;

		if (yaml_parse_all(req->body.buf, req->body.len, &docs, &yerr) == 0 &&
		    json_array_size(docs) == 1 && json_is_object(json_array_get(docs, 0))) {
			doc = json_incref(json_array_get(docs, 0));
			json_decref(docs);
		} else {
			json_decref(docs);
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "the request body is not valid JSON: %s at line %d column %d",
					  jerr.text, jerr.line, jerr.column);
		}
	}
	*ret = doc;
	return 0;
}

static int parse_opts(struct http_req *req, struct kube_opts *o, ah_err *err)
{
	const char *dry = http_query(req, "dryRun");
	const char *fv = http_query(req, "fieldValidation");

	if (dry && *dry) {
		if (strcmp(dry, "All") != 0)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "Invalid dry run value: %s: supported values: \"All\"", dry);
		o->dry_run = true;
	}
	o->field_validation = KUBE_FV_WARN;
	if (fv && *fv) {
		if (strcmp(fv, "Strict") == 0)
			o->field_validation = KUBE_FV_STRICT;
		else if (strcmp(fv, "Ignore") == 0)
			o->field_validation = KUBE_FV_IGNORE;
		else if (strcmp(fv, "Warn") == 0)
			o->field_validation = KUBE_FV_WARN;
		else
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "fieldValidation: Unsupported value: \"%s\": supported values: \"Ignore\", \"Strict\", \"Warn\"", fv);
	}
	return 0;
}

/* --- list ---------------------------------------------------------------- */

struct list_ctx {
	struct http_req *req;
	const struct kube_kind *k;
	label_selector *ls;
	field_selector *fs;
	bool table;
	enum table_include include;
	time_t now;
	strbuf out;
	json_t *rows;
	size_t count, limit;
	bool more;
	char last_ns[256], last_name[256];
	int err;
};

static int list_visit(const store_obj *so, void *userdata)
{
	struct list_ctx *lc = userdata;
	json_t *obj = NULL;

	if (lc->limit && lc->count == lc->limit) {
		lc->more = true;
		return 1;
	}
	if (lc->ls || lc->fs || lc->table) {
		obj = json_loadb(so->json, so->len, 0, NULL);
		if (!obj)
			return 0;
		if (lc->ls && !label_selector_matches(lc->ls, json_object_get(json_object_get(obj, "metadata"), "labels"))) {
			json_decref(obj);
			return 0;
		}
		if (lc->fs && !field_selector_matches(lc->fs, obj)) {
			json_decref(obj);
			return 0;
		}
	}
	if (lc->table) {
		json_array_append_new(lc->rows, table_row(lc->k->columns, obj, lc->include, lc->now));
	} else {
		if (lc->count)
			strbuf_addch(&lc->out, ',');
		if (strbuf_add(&lc->out, so->json, so->len) < 0) {
			json_decref(obj);
			lc->err = -ENOMEM;
			return -ENOMEM;
		}
	}
	json_decref(obj);
	lc->count++;
	snprintf(lc->last_ns, sizeof(lc->last_ns), "%s", so->ns);
	snprintf(lc->last_name, sizeof(lc->last_name), "%s", so->name);
	return 0;
}

static const char *const field_selector_fields[] = { "metadata.name", "metadata.namespace", NULL };
/* Events are looked up by what they are about (kubectl describe does). */
static const char *const event_field_selector_fields[] = {
	"metadata.name", "metadata.namespace", "involvedObject.kind", "involvedObject.name",
	"involvedObject.namespace", "involvedObject.uid", "involvedObject.apiVersion",
	"involvedObject.resourceVersion", "involvedObject.fieldPath", "reason", "type", "reportingComponent",
	"source", NULL
};

static int parse_selectors(struct http_req *req, const struct kube_kind *k, label_selector **ls,
			   field_selector **fs, ah_err *err)
{
	const char *l = http_query(req, "labelSelector"), *f = http_query(req, "fieldSelector");
	int r;

	*ls = NULL;
	*fs = NULL;
	if (l && *l) {
		r = label_selector_parse(l, ls, err);
		if (r < 0)
			return r;
	}
	if (f && *f) {
		r = field_selector_parse(f, k && k->kind && strcmp(k->kind, "Event") == 0 ?
					   event_field_selector_fields : field_selector_fields, fs, err);
		if (r < 0) {
			label_selector_free(*ls);
			*ls = NULL;
			return r;
		}
	}
	return 0;
}

static char *encode_continue(int64_t rev, const char *ns, const char *name)
{
	json_t *t = json_pack("{s:I,s:s,s:s}", "rv", (json_int_t)rev, "ns", ns, "name", name);
	char *s = json_dumps(t, JSON_COMPACT), *b;

	json_decref(t);
	if (!s)
		return NULL;
	b = util_base64_encode(s, strlen(s));
	free(s);
	return b;
}

static int decode_continue(const char *tok, char *ns, size_t nsz, char *name, size_t namesz, ah_err *err)
{
	unsigned char *raw = NULL;
	size_t len;
	json_t *t;

	if (util_base64_decode(tok, strlen(tok), &raw, &len) < 0 ||
	    !(t = json_loadb((char *)raw, len, 0, NULL))) {
		free(raw);
		return ah_err_set(err, EINVAL, 400, "BadRequest", "continue key is not valid: illegal base64 data");
	}
	snprintf(ns, nsz, "%s", json_string_value(json_object_get(t, "ns")) ? json_string_value(json_object_get(t, "ns")) : "");
	snprintf(name, namesz, "%s", json_string_value(json_object_get(t, "name")) ? json_string_value(json_object_get(t, "name")) : "");
	json_decref(t);
	free(raw);
	return 0;
}

static enum http_result handle_watch(struct kubeapi *ka, struct http_req *req, const struct target *t);

static enum http_result handle_list(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	struct list_ctx lc = { .req = req, .k = t->k };
	const char *limit = http_query(req, "limit"), *cont = http_query(req, "continue");
	char after_ns[256] = "", after_name[256] = "";
	int64_t rev = 0;
	enum http_result res;
	ah_err err;
	int r;

	r = parse_selectors(req, t->k, &lc.ls, &lc.fs, &err);
	if (r < 0)
		return reply_kerr(req, t, &err, NULL, NULL);
	if (limit && *limit) {
		long l = strtol(limit, NULL, 10);

		lc.limit = l > 0 ? (size_t)(l > LIST_MAX_LIMIT ? LIST_MAX_LIMIT : l) : 0;
	}
	if (cont && *cont && decode_continue(cont, after_ns, sizeof(after_ns), after_name, sizeof(after_name), &err) < 0) {
		label_selector_free(lc.ls);
		field_selector_free(lc.fs);
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	lc.table = wants_table(req);
	lc.include = table_include_param(req);
	lc.now = time(NULL);
	lc.rows = json_array();
	strbuf_init(&lc.out, 0);
	r = store_list(kube_api_store(ka->api), t->k->store_key, t->ns[0] ? t->ns : NULL,
		       after_name[0] ? after_ns : NULL, after_name[0] ? after_name : NULL, list_visit, &lc, &rev);
	label_selector_free(lc.ls);
	field_selector_free(lc.fs);
	if (r < 0) {
		json_decref(lc.rows);
		strbuf_release(&lc.out);
		ah_err_set(&err, r, 500, "InternalError", "listing %s: %s", t->k->store_key, strerror(-r));
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	{
		strbuf sb = STRBUF_INIT;
		char *tok = lc.more ? encode_continue(rev, lc.last_ns, lc.last_name) : NULL;
		size_t len;
		char *body;

		if (lc.table) {
			json_t *tbl = json_pack("{s:s,s:s,s:{s:s+},s:o,s:o}", "kind", "Table", "apiVersion",
						"meta.k8s.io/v1", "metadata", "resourceVersion", "", "",
						"columnDefinitions", table_column_definitions(t->k->columns),
						"rows", lc.rows);
			char rvs[32];

			snprintf(rvs, sizeof(rvs), "%lld", (long long)rev);
			json_object_set_new(json_object_get(tbl, "metadata"), "resourceVersion", json_string(rvs));
			if (tok)
				json_object_set_new(json_object_get(tbl, "metadata"), "continue", json_string(tok));
			free(tok);
			res = http_reply_json(req, 200, tbl);
			json_decref(tbl);
			strbuf_release(&lc.out);
			return res;
		}
		json_decref(lc.rows);
		strbuf_grow(&sb, lc.out.len + 256);
		strbuf_addf(&sb, "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"",
			    t->k->api_version, t->k->list_kind, (long long)rev);
		if (tok)
			strbuf_addf(&sb, ",\"continue\":\"%s\"", tok);
		free(tok);
		strbuf_adds(&sb, "},\"items\":[");
		if (lc.out.len)
			strbuf_add(&sb, lc.out.buf, lc.out.len);
		strbuf_adds(&sb, "]}");
		strbuf_release(&lc.out);
		body = strbuf_detach(&sb, &len);
		if (!body)
			return HTTP_NO;
		return http_reply_owned(req, 200, "application/json", body, len);
	}
}

/* --- watch --------------------------------------------------------------- */

struct watch_state {
	struct kubeapi *ka;
	struct http_req *req;
	const struct kube_kind *k;
	char ns[256];
	label_selector *ls;
	field_selector *fs;
	bool table;
	enum table_include include;
	int64_t rev;
	bool initial;      /* send the current objects as ADDED first */
	bool first_table;  /* column definitions go with the first table event only */
	bool ended;
	int64_t deadline_ms;
	strbuf pending;
	size_t off;
};

static void watch_free(void *cls)
{
	struct watch_state *ws = cls;

	label_selector_free(ws->ls);
	field_selector_free(ws->fs);
	strbuf_release(&ws->pending);
	free(ws);
}

static const char *type_name(enum store_event_type t)
{
	return t == STORE_ADDED ? "ADDED" : t == STORE_DELETED ? "DELETED" : "MODIFIED";
}

static int watch_emit(struct watch_state *ws, const char *type, const store_obj *so)
{
	json_t *obj = NULL;

	if (ws->ls || ws->fs || ws->table) {
		obj = json_loadb(so->json, so->len, 0, NULL);
		if (!obj)
			return 0;
		if (ws->ls && !label_selector_matches(ws->ls, json_object_get(json_object_get(obj, "metadata"), "labels"))) {
			json_decref(obj);
			return 0;
		}
		if (ws->fs && !field_selector_matches(ws->fs, obj)) {
			json_decref(obj);
			return 0;
		}
	}
	strbuf_addf(&ws->pending, "{\"type\":\"%s\",\"object\":", type);
	if (ws->table) {
		json_t *rows = json_array(), *tbl;
		char *s;

		json_array_append_new(rows, table_row(ws->k->columns, obj, ws->include, time(NULL)));
		tbl = json_pack("{s:s,s:s,s:{s:O},s:o}", "kind", "Table", "apiVersion", "meta.k8s.io/v1",
				"metadata", "resourceVersion",
				json_object_get(json_object_get(obj, "metadata"), "resourceVersion"), "rows", rows);
		if (ws->first_table) {
			json_object_set_new(tbl, "columnDefinitions", table_column_definitions(ws->k->columns));
			ws->first_table = false;
		} else {
			json_object_set_new(tbl, "columnDefinitions", json_array());
		}
		s = json_dumps(tbl, JSON_COMPACT);
		json_decref(tbl);
		if (s)
			strbuf_adds(&ws->pending, s);
		free(s);
	} else {
		strbuf_add(&ws->pending, so->json, so->len);
	}
	strbuf_adds(&ws->pending, "}\n");
	json_decref(obj);
	return 0;
}

static int watch_initial_visit(const store_obj *so, void *userdata)
{
	return watch_emit(userdata, "ADDED", so);
}

static int watch_event_visit(const store_obj *so, void *userdata)
{
	struct watch_state *ws = userdata;

	watch_emit(ws, type_name(so->type), so);
	ws->rev = so->rev;
	return 0;
}

static void watch_gone(struct watch_state *ws)
{
	char msg[200];

	snprintf(msg, sizeof(msg), "too old resource version: %lld (%lld)", (long long)ws->rev,
		 (long long)store_compacted_rev(kube_api_store(ws->ka->api)));
	strbuf_addf(&ws->pending,
		    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		    "\"status\":\"Failure\",\"message\":\"%s\",\"reason\":\"Expired\",\"code\":410}}\n", msg);
	ws->ended = true;
}

static ssize_t watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct watch_state *ws = cls;
	store *s = kube_api_store(ws->ka->api);

	for (;;) {
		/* Taken before looking at the store, so a write after the look
		 * wakes this stream even if it has not suspended yet. */
		unsigned gen = http_streams_gen();

		if (ws->off < ws->pending.len) {
			size_t n = ws->pending.len - ws->off;

			if (n > max)
				n = max;
			memcpy(buf, ws->pending.buf + ws->off, n);
			ws->off += n;
			if (ws->off == ws->pending.len) {
				strbuf_reset(&ws->pending);
				ws->off = 0;
			}
			return (ssize_t)n;
		}
		if (ws->ended || http_server_stopping() || util_mono_ms() >= ws->deadline_ms)
			return HTTP_STREAM_END;
		if (ws->initial) {
			int64_t rev = 0;

			ws->initial = false;
			store_list(s, ws->k->store_key, ws->ns[0] ? ws->ns : NULL, NULL, NULL,
				   watch_initial_visit, ws, &rev);
			ws->rev = rev;
			continue;
		}
		{
			int64_t last = ws->rev;
			int r = store_events(s, ws->k->store_key, ws->ns[0] ? ws->ns : NULL, ws->rev, 256,
					     watch_event_visit, ws, &last);

			if (r == -ERANGE) {
				watch_gone(ws);
				continue;
			}
			if (r < 0)
				return HTTP_STREAM_ERROR;
			if (last > ws->rev)
				ws->rev = last;
			if (ws->pending.len)
				continue;
			/* Nothing yet: give the thread back until a write (or the
			 * server's one-second tick) wakes the stream. */
			if (http_stream_suspend(ws->req, gen))
				return 0;
		}
	}
}

static enum http_result handle_watch(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	struct watch_state *ws = calloc(1, sizeof(*ws));
	const char *rv = http_query(req, "resourceVersion"), *to = http_query(req, "timeoutSeconds");
	long timeout = ka->opts.max_watch_seconds;
	ah_err err;

	if (!ws)
		return HTTP_NO;
	if (parse_selectors(req, t->k, &ws->ls, &ws->fs, &err) < 0) {
		free(ws);
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	ws->ka = ka;
	ws->req = req;
	ws->k = t->k;
	snprintf(ws->ns, sizeof(ws->ns), "%s", t->ns);
	ws->table = wants_table(req);
	ws->first_table = true;
	ws->include = table_include_param(req);
	strbuf_init(&ws->pending, 0);
	if (to && *to) {
		long v = strtol(to, NULL, 10);

		if (v > 0 && v < timeout)
			timeout = v;
	}
	ws->deadline_ms = util_mono_ms() + timeout * 1000;
	if (!rv || !*rv || strcmp(rv, "0") == 0) {
		ws->initial = true;
	} else {
		char *end;

		ws->rev = strtoll(rv, &end, 10);
		if (*end || ws->rev < 0) {
			watch_free(ws);
			return reply_err(req, 400, "BadRequest", "invalid resource version: %s", rv);
		}
		if (ws->rev < store_compacted_rev(kube_api_store(ka->api)))
			watch_gone(ws);
	}
	return http_reply_stream(req, 200, "application/json", watch_read, ws, watch_free);
}

/* --- CRDs as objects ------------------------------------------------------ */

static enum http_result handle_crd(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	json_t *items = json_array(), *seen = json_object(), *doc;
	enum http_result r;
	size_t i;

	if (strcmp(req->method, "GET") != 0) {
		json_decref(items);
		json_decref(seen);
		return reply_err(req, 405, "MethodNotAllowed",
				 "the server does not allow this method on the requested resource: CustomResourceDefinitions are part of agenthub's build (config/crd/)");
	}
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];
		const char *name;

		if (!k->crd)
			continue;
		name = json_string_value(json_object_get(json_object_get(k->crd, "metadata"), "name"));
		if (!name || json_object_get(seen, name))
			continue;
		json_object_set_new(seen, name, json_true());
		if (t->name[0] && strcmp(t->name, name) == 0) {
			doc = json_deep_copy(k->crd);
			json_object_set_new(json_object_get(doc, "metadata"), "resourceVersion", json_string("1"));
			json_decref(items);
			json_decref(seen);
			r = http_reply_json(req, 200, doc);
			json_decref(doc);
			return r;
		}
		json_array_append(items, k->crd);
	}
	json_decref(seen);
	if (t->name[0]) {
		json_decref(items);
		return reply_err(req, 404, "NotFound",
				 "customresourcedefinitions.apiextensions.k8s.io \"%s\" not found", t->name);
	}
	doc = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
			"CustomResourceDefinitionList", "metadata", "resourceVersion", "1", "items", items);
	r = http_reply_json(req, 200, doc);
	json_decref(doc);
	return r;
}

/* --- object verbs --------------------------------------------------------- */

static enum http_result handle_delete_collection(struct kubeapi *ka, struct http_req *req,
						const struct target *t, struct kube_opts *o)
{
	struct list_ctx lc = { .req = req, .k = t->k, .table = false };
	json_t *names = json_array(), *n;
	int64_t rev = 0;
	ah_err err;
	size_t i;
	int r;

	r = parse_selectors(req, t->k, &lc.ls, &lc.fs, &err);
	if (r < 0) {
		json_decref(names);
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	strbuf_init(&lc.out, 0);
	lc.table = true; /* parse each object: we need their names */
	lc.rows = json_array();
	lc.include = TABLE_INCLUDE_METADATA;
	r = store_list(kube_api_store(ka->api), t->k->store_key, t->ns[0] ? t->ns : NULL, NULL, NULL,
		       list_visit, &lc, &rev);
	label_selector_free(lc.ls);
	field_selector_free(lc.fs);
	json_array_foreach(lc.rows, i, n) {
		json_t *meta = json_object_get(json_object_get(n, "object"), "metadata");

		json_array_append_new(names, json_pack("[s,s]",
			json_string_value(json_object_get(meta, "namespace")) ? json_string_value(json_object_get(meta, "namespace")) : "",
			json_string_value(json_object_get(meta, "name")) ? json_string_value(json_object_get(meta, "name")) : ""));
	}
	json_decref(lc.rows);
	strbuf_release(&lc.out);
	json_array_foreach(names, i, n) {
		json_t *ret = NULL;

		kube_delete(ka->api, t->k, json_string_value(json_array_get(n, 0)),
			    json_string_value(json_array_get(n, 1)), o, &ret, &err);
		json_decref(ret);
	}
	json_decref(names);
	{
		char body[512];

		snprintf(body, sizeof(body), "{\"apiVersion\":\"%s\",\"kind\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"},\"items\":[]}",
			 t->k->api_version, t->k->list_kind, (long long)store_current_rev(kube_api_store(ka->api)));
		return http_reply(req, 200, "application/json", body, strlen(body));
	}
}

static enum http_result handle_resource(struct kubeapi *ka, struct http_req *req, struct target *t)
{
	struct kube_opts o = { 0 };
	json_t *body = NULL, *ret = NULL, *causes = json_array(), *warnings = json_array();
	const char *m = req->method;
	enum http_result res;
	ah_err err;
	int r;

	ah_err_clear(&err);
	o.causes = causes;
	o.warnings = warnings;
	o.status = t->status;
	r = parse_opts(req, &o, &err);
	if (r < 0)
		goto fail;
	if (!t->name[0]) {
		if (strcmp(m, "GET") == 0) {
			const char *w = http_query(req, "watch");

			json_decref(causes);
			json_decref(warnings);
			if (w && (strcmp(w, "1") == 0 || strcmp(w, "true") == 0))
				return handle_watch(ka, req, t);
			return handle_list(ka, req, t);
		}
		if (strcmp(m, "POST") == 0) {
			r = parse_body(req, &body, &err);
			if (r < 0)
				goto fail;
			o.want_text = true;
			r = kube_create(ka->api, t->k, t->ns, body, &o, &ret, &err);
			if (r < 0)
				goto fail;
			res = reply_object(req, t->k, 201, ret, warnings, o.text, o.text_len);
			o.text = NULL;
			goto done;
		}
		if (strcmp(m, "DELETE") == 0) {
			json_decref(causes);
			json_decref(warnings);
			o.causes = o.warnings = NULL;
			return handle_delete_collection(ka, req, t, &o);
		}
		r = ah_err_set(&err, EINVAL, 405, "MethodNotAllowed",
			       "the server does not allow this method on the requested resource");
		goto fail;
	}
	if (strcmp(m, "GET") == 0) {
		if (!wants_table(req)) {
			char *text = NULL;
			size_t len = 0;

			r = kube_get_text(ka->api, t->k, t->ns, t->name, &text, &len, &err);
			if (r < 0)
				goto fail;
			res = reply_object(req, t->k, 200, NULL, NULL, text, len);
			goto done;
		}
		r = kube_get(ka->api, t->k, t->ns, t->name, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, 200, ret, NULL, NULL, 0);
		goto done;
	}
	if (strcmp(m, "PUT") == 0) {
		r = parse_body(req, &body, &err);
		if (r < 0)
			goto fail;
		o.want_text = true;
		r = kube_update(ka->api, t->k, t->ns, t->name, body, &o, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, 200, ret, warnings, o.text, o.text_len);
		o.text = NULL;
		goto done;
	}
	if (strcmp(m, "PATCH") == 0) {
		const char *ct = http_header(req, "Content-Type");

		if (!ct || (!strstr(ct, "merge-patch") && !strstr(ct, "json-patch") &&
			    !strstr(ct, "strategic-merge-patch"))) {
			r = ah_err_set(&err, EINVAL, 415, "UnsupportedMediaType",
				       "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json");
			goto fail;
		}
		r = parse_body(req, &body, &err);
		if (r < 0)
			goto fail;
		o.want_text = true;
		r = kube_patch(ka->api, t->k, t->ns, t->name, ct, body, &o, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, 200, ret, warnings, o.text, o.text_len);
		o.text = NULL;
		goto done;
	}
	if (strcmp(m, "DELETE") == 0) {
		const char *prop = http_query(req, "propagationPolicy");

		if (req->body.len > 0 && parse_body(req, &body, &err) == 0) {
			const char *bp = json_string_value(json_object_get(body, "propagationPolicy"));
			json_t *pre = json_object_get(body, "preconditions");

			if (bp)
				prop = bp;
			if (json_object_get(body, "dryRun") && json_array_size(json_object_get(body, "dryRun")))
				o.dry_run = true;
			o.precondition_uid = json_string_value(json_object_get(pre, "uid"));
			o.precondition_rv = json_string_value(json_object_get(pre, "resourceVersion"));
		}
		o.propagation = prop;
		r = kube_delete(ka->api, t->k, t->ns, t->name, &o, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, NULL, 200, ret, NULL, NULL, 0);
		goto done;
	}
	r = ah_err_set(&err, EINVAL, 405, "MethodNotAllowed",
		       "the server does not allow this method on the requested resource");
fail:
	{
		/* A create names its object in the body, not the URL. */
		const char *bname = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));

		res = reply_kerr(req, t, &err, t->name[0] ? t->name : bname, causes);
	}
done:
	free(o.text);
	json_decref(body);
	json_decref(ret);
	json_decref(causes);
	json_decref(warnings);
	return res;
}

static bool authorized(struct kubeapi *ka, struct http_req *req)
{
	const char *auth;

	if (!ka->opts.creds)
		return true;
	auth = http_header(req, "Authorization");
	if (!auth || strncmp(auth, "Bearer ", 7) != 0)
		return false;
	return creds_token_ok(ka->opts.creds, auth + 7);
}

enum http_result kubeapi_handle(struct kubeapi *ka, struct http_req *req, bool *handled)
{
	const char *path = req->path;
	struct target t;

	*handled = true;
	if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0 || strcmp(path, "/livez") == 0)
		return http_reply(req, 200, "text/plain", "ok", 2);
	if (strcmp(path, "/version") == 0 || strcmp(path, "/version/") == 0)
		return reply_version(req);
	if (strncmp(path, "/api", 4) != 0 && strncmp(path, "/openapi", 8) != 0) {
		*handled = false;
		return HTTP_NO;
	}
	if (!authorized(ka, req))
		return reply_err(req, 401, "Unauthorized", "Unauthorized");
	if (req->too_big)
		return reply_err(req, 413, "RequestEntityTooLarge",
				 "Request entity too large: limit is %zu bytes", req->body.max);
	if (strncmp(path, "/openapi/", 9) == 0)
		return reply_openapi(ka, req, path);
	if (strcmp(path, "/api") == 0 || strcmp(path, "/api/") == 0)
		return reply_discovery(ka, req, "/api");
	if (strcmp(path, "/apis") == 0 || strcmp(path, "/apis/") == 0)
		return reply_discovery(ka, req, "/apis");
	if (strcmp(path, "/api/v1") == 0 || strcmp(path, "/api/v1/") == 0)
		return reply_resource_list(ka, req, "", "v1");
	if (strncmp(path, "/apis/", 6) == 0) {
		char g[256], v[64];
		int n = sscanf(path + 6, "%255[^/]/%63[^/]", g, v);
		const char *rest = path + 6 + strlen(g);

		if (n == 1 && (*rest == '\0' || strcmp(rest, "/") == 0))
			return reply_group(ka, req, g);
		if (n == 2 && (rest[1 + strlen(v)] == '\0' || strcmp(rest + 1 + strlen(v), "/") == 0))
			return reply_resource_list(ka, req, g, v);
	}
	if (parse_target(ka, path, &t) < 0)
		return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
	if (t.crd)
		return handle_crd(ka, req, &t);
	return handle_resource(ka, req, &t);
}

static enum http_result route_kube(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = kubeapi_handle(cls, req, &handled);

	return handled ? r : HTTP_NEXT;
}

int kubeapi_add_routes(struct kubeapi *ka, struct http_router *r)
{
	static const char *const patterns[] = {
		"/healthz", "/readyz", "/livez", "/version", "/version/", "/api/**", "/apis/**", "/openapi/**",
	};

	for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++) {
		int e = http_router_add(r, NULL, patterns[i], route_kube, ka);

		if (e < 0)
			return e;
	}
	return 0;
}

enum http_result kubeapi_not_found(void *cls, struct http_req *req)
{
	static const char body[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
		"\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"code\":404}";

	(void)cls;
	return http_reply(req, 404, "application/json", body, sizeof(body) - 1);
}
