/* kubeapi.c - Kubernetes REST endpoints; see kubeapi.h.
 *
 * Paths:
 *   /api/v1[/namespaces/NS]/PLURAL[/NAME[/status]]
 *   /apis/GROUP/VERSION[/namespaces/NS]/PLURAL[/NAME[/status]]
 * plus discovery (/api, /apis, /apis/GROUP[/VERSION]), /openapi/v3 and
 * /version.  Lists are written from the stored text without parsing when
 * no selector needs the objects, so listing thousands of objects is a copy. */
#include "kubeapi.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "base/yamljson.h"
#include "http/auth.h"
#include "http/query.h"
#include "kube/convert.h"
#include "kube/listtoken.h"
#include "kube/proto.h"
#include "kube/rbac.h"
#include "kube/selector.h"
#include "kube/table.h"

#define LIST_MAX_LIMIT 100000

struct kubeapi {
	struct kube_api *api;
	const struct kube_registry *reg;
	struct kubeapi_opts opts;
	char *openapi_index;
	struct rbac *rbac;
	struct auth_cache *tokens;
	pthread_t waker;
	bool waker_started;
	atomic_bool waker_stop;
	struct row_cache *rows;
	json_t *crds;       /* the CRDs as served objects (built once; read-only) */
};

static json_t *served_crds(const struct kube_registry *reg);

/* --- prepared Table rows ------------------------------------------------------
 * kubectl get asks for a Table; building a row means parsing the object
 * (an Agent with its inventory is ~11 KB of JSON).  Rows are prepared once per
 * object revision (kube/table.h) and kept here, keyed by kind, namespace and
 * name with the revision, columns and include they were made for; a list of
 * unchanged objects then only copies text (an Agent's row is ~6 KB, its
 * metadata with managedFields; 10,000 take ~60 MiB).  Bounded: past ROW_CACHE_BYTES the
 * whole cache is dropped and refills as lists run. */
#define ROW_CACHE_BUCKETS 16384u
#define ROW_CACHE_BYTES ((size_t)128 << 20)

struct row_entry {
	struct row_entry *next;
	uint32_t hash;
	int64_t rev;
	const table_columns *tc;
	enum table_include include;
	table_row_prep *prep;
	size_t bytes;
	char key[];           /* store_key "\0" ns "\0" name */
};

struct row_cache {
	pthread_mutex_t mu;
	size_t bytes;
	struct row_entry *b[ROW_CACHE_BUCKETS];
};

static uint32_t row_hash(const char *res, const char *ns, const char *name)
{
	uint32_t h = 2166136261u;
	const char *parts[3] = { res, ns, name };

	for (int i = 0; i < 3; i++) {
		for (const char *c = parts[i]; *c; c++)
			h = (h ^ (unsigned char)*c) * 16777619u;
		h = (h ^ 0xff) * 16777619u;
	}
	return h;
}

static bool row_key_is(const struct row_entry *e, const char *res, const char *ns, const char *name)
{
	const char *k = e->key;

	if (strcmp(k, res))
		return false;
	k += strlen(k) + 1;
	if (strcmp(k, ns))
		return false;
	k += strlen(k) + 1;
	return strcmp(k, name) == 0;
}

static void row_cache_clear(struct row_cache *rc)
{
	for (unsigned i = 0; i < ROW_CACHE_BUCKETS; i++) {
		while (rc->b[i]) {
			struct row_entry *e = rc->b[i];

			rc->b[i] = e->next;
			table_row_prep_free(e->prep);
			free(e);
		}
	}
	rc->bytes = 0;
}

static void row_cache_free(struct row_cache *rc)
{
	if (!rc)
		return;
	row_cache_clear(rc);
	pthread_mutex_destroy(&rc->mu);
	free(rc);
}

/* Append the row of so to out from the cache: 1 done, 0 not cached. */
static int row_cache_emit(struct row_cache *rc, const char *res, const table_columns *tc,
			  enum table_include include, const store_obj *so, time_t now, strbuf *out)
{
	uint32_t h = row_hash(res, so->ns, so->name);
	int r = 0;

	pthread_mutex_lock(&rc->mu);
	for (struct row_entry *e = rc->b[h % ROW_CACHE_BUCKETS]; e; e = e->next) {
		if (e->hash == h && e->rev == so->rev && e->tc == tc && e->include == include &&
		    row_key_is(e, res, so->ns, so->name)) {
			r = table_row_finish(tc, e->prep, now, out) < 0 ? -ENOMEM : 1;
			break;
		}
	}
	pthread_mutex_unlock(&rc->mu);
	return r;
}

/* Prepare the row of obj (so's parse), keep it, and append it to out: 1 done,
 * 0 it cannot be prepared (the caller builds it as a JSON row). */
static int row_cache_add_emit(struct row_cache *rc, const char *res, const table_columns *tc,
			      enum table_include include, const store_obj *so, const json_t *obj,
			      time_t now, strbuf *out)
{
	table_row_prep *p = table_row_prepare(tc, obj, include);
	size_t lr = strlen(res) + 1, ln = strlen(so->ns) + 1, lm = strlen(so->name) + 1;
	uint32_t h = row_hash(res, so->ns, so->name);
	struct row_entry *e, **pp;
	int r;

	if (!p)
		return 0;
	r = table_row_finish(tc, p, now, out) < 0 ? -ENOMEM : 1;
	e = malloc(sizeof(*e) + lr + ln + lm);
	if (!e) {
		table_row_prep_free(p);
		return r;
	}
	e->hash = h;
	e->rev = so->rev;
	e->tc = tc;
	e->include = include;
	e->prep = p;
	e->bytes = sizeof(*e) + lr + ln + lm + table_row_prep_bytes(p);
	memcpy(e->key, res, lr);
	memcpy(e->key + lr, so->ns, ln);
	memcpy(e->key + lr + ln, so->name, lm);
	pthread_mutex_lock(&rc->mu);
	/* One entry per key: an older revision's goes. */
	for (pp = &rc->b[h % ROW_CACHE_BUCKETS]; *pp; pp = &(*pp)->next) {
		struct row_entry *o = *pp;

		if (o->hash == h && row_key_is(o, res, so->ns, so->name)) {
			*pp = o->next;
			rc->bytes -= o->bytes;
			table_row_prep_free(o->prep);
			free(o);
			break;
		}
	}
	if (rc->bytes + e->bytes > ROW_CACHE_BYTES)
		row_cache_clear(rc);
	e->next = rc->b[h % ROW_CACHE_BUCKETS];
	rc->b[h % ROW_CACHE_BUCKETS] = e;
	rc->bytes += e->bytes;
	pthread_mutex_unlock(&rc->mu);
	return r;
}

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
	ka->tokens = auth_cache_new();
	ka->rows = calloc(1, sizeof(*ka->rows));
	if (!ka->tokens || !ka->rows) {
		auth_cache_free(ka->tokens);
		free(ka->rows);
		free(ka);
		return -ENOMEM;
	}
	pthread_mutex_init(&ka->rows->mu, NULL);
	{
		ah_err err;
		int r = rbac_new(api, &ka->rbac, &err);

		if (r == 0)
			r = rbac_bootstrap(ka->rbac, &err);
		if (r < 0) {
			log_error("RBAC: %s", err.message);
			kubeapi_free(ka);
			return r;
		}
	}
	if (!ka->opts.max_watch_seconds)
		ka->opts.max_watch_seconds = 1800;
	ka->crds = served_crds(ka->reg);
	if (!ka->crds) {
		kubeapi_free(ka);
		return -ENOMEM;
	}
	if (pthread_create(&ka->waker, NULL, waker_main, ka) != 0) {
		row_cache_free(ka->rows);
		rbac_free(ka->rbac);
		auth_cache_free(ka->tokens);
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
	json_decref(ka->crds);
	rbac_free(ka->rbac);
	auth_cache_free(ka->tokens);
	row_cache_free(ka->rows);
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
	if (causes && json_array_size(causes)) {
		json_object_set(details, "causes", causes);
	} else if (err->status == 422 && strstr(err->message, " is invalid: ")) {
		/* An admission rule's one field error ("K \"n\" is invalid: FIELD: DETAIL"):
		 * kubectl prints an Invalid error from its causes. */
		const char *f = strstr(err->message, " is invalid: ") + 13, *sep = strstr(f, ": ");

		if (sep)
			json_object_set_new(details, "causes", json_pack("[{s:s,s:s#,s:s}]", "reason",
				"FieldValueInvalid", "field", f, (int)(sep - f), "message", sep + 2));
	}
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

	if (k->review)
		return json_pack("{s:s,s:s,s:b,s:s,s:[s]}", "name", k->plural, "singularName", "",
				 "namespaced", k->namespaced, "kind", k->kind, "verbs", "create");
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
		json_array_append_new(json_object_get(json_array_get(list, json_array_size(list) - 1), "verbs"),
				      json_string("watch"));
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
		if (k->scale_spec_replicas)
			json_array_append_new(list, json_pack("{s:s+,s:s,s:b,s:s,s:s,s:s,s:[sss]}", "name", k->plural,
							      "/scale", "singularName", "", "namespaced", k->namespaced,
							      "group", "autoscaling", "version", "v1", "kind", "Scale",
							      "verbs", "get", "patch", "update"));
		if (!k->group[0] && strcmp(k->plural, "serviceaccounts") == 0)
			json_array_append_new(list, json_pack("{s:s,s:s,s:b,s:s,s:s,s:s,s:[s]}", "name",
							      "serviceaccounts/token", "singularName", "",
							      "namespaced", 1, "group", "authentication.k8s.io",
							      "version", "v1", "kind", "TokenRequest",
							      "verbs", "create"));
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

/* Kubernetes version priority (apimachinery's version.CompareKubeAwareVersionStrings):
 * GA before beta before alpha, higher numbers first, anything else last by name.
 * Returns <0 when a goes before b. */
static int parse_kube_version(const char *v, long *major, int *stage, long *minor)
{
	char *end;

	if (v[0] != 'v' || v[1] < '1' || v[1] > '9')
		return -1;
	*major = strtol(v + 1, &end, 10);
	*minor = 0;
	if (!*end) {
		*stage = 2;
		return 0;
	}
	if (strncmp(end, "beta", 4) == 0)
		*stage = 1, end += 4;
	else if (strncmp(end, "alpha", 5) == 0)
		*stage = 0, end += 5;
	else
		return -1;
	if (*end < '1' || *end > '9')
		return -1;
	*minor = strtol(end, &end, 10);
	return *end ? -1 : 0;
}

static int version_priority_cmp(const char *a, const char *b)
{
	long ma, mb, na, nb;
	int sa, sb;
	bool ka = parse_kube_version(a, &ma, &sa, &na) == 0, kb = parse_kube_version(b, &mb, &sb, &nb) == 0;

	if (ka != kb)
		return ka ? -1 : 1;
	if (!ka)
		return strcmp(a, b);
	if (sa != sb)
		return sb - sa;
	if (ma != mb)
		return ma > mb ? -1 : 1;
	if (na != nb)
		return na > nb ? -1 : 1;
	return 0;
}

/* One APIGroup entry: every served version of the group, the preferred
 * (highest priority) first, as kube-apiserver lists them. */
static json_t *group_entry(struct kubeapi *ka, const char *group)
{
	const char *versions[16];
	size_t n = 0, i, j;
	json_t *list = json_array(), *e;
	char gv[256];

	if (strcmp(group, "apiextensions.k8s.io") == 0)
		versions[n++] = "v1";
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];
		bool dup = false;

		if (strcmp(k->group, group) != 0)
			continue;
		for (j = 0; j < n && !dup; j++)
			dup = strcmp(versions[j], k->version) == 0;
		if (!dup && n < sizeof(versions) / sizeof(versions[0]))
			versions[n++] = k->version;
	}
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && version_priority_cmp(versions[j], versions[j - 1]) < 0; j--) {
			const char *t = versions[j];

			versions[j] = versions[j - 1];
			versions[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		snprintf(gv, sizeof(gv), "%s/%s", group, versions[i]);
		json_array_append_new(list, json_pack("{s:s,s:s}", "groupVersion", gv, "version", versions[i]));
	}
	e = json_pack("{s:s,s:o,s:O}", "name", group, "versions", list, "preferredVersion", json_array_get(list, 0));
	return e;
}

static json_t *all_groups(struct kubeapi *ka)
{
	json_t *groups = json_array(), *seen = json_object();
	size_t i;

	json_array_append_new(groups, group_entry(ka, "apiextensions.k8s.io"));
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];

		if (!k->group[0] || json_object_get(seen, k->group))
			continue;
		json_object_set_new(seen, k->group, json_true());
		json_array_append_new(groups, group_entry(ka, k->group));
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

	size_t gl = strlen(k->group);

	if (!k->group[0]) {
		snprintf(out, size, "io.k8s.api.core.v1.%s", k->kind);
		return;
	}
	/* Built-in groups: io.k8s.api.coordination.v1.Lease, as upstream names them. */
	if (gl > 7 && strcmp(k->group + gl - 7, ".k8s.io") == 0) {
		snprintf(out, size, "io.k8s.api.%.*s.%s.%s", (int)(gl - 7), k->group, k->version, k->kind);
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

/* /openapi/v2 as JSON carries a definition for every kind the hub serves
 * (the same schemas as /openapi/v3, with swagger 2.0 references), for
 * `kubectl get --raw /openapi/v2` and older tools.  kubectl itself fetches
 * v2 as protobuf for client-side checks of `kind: List` files; that form
 * stays a document without definitions, which makes kubectl skip those checks
 * and leave validation to the server (fieldValidation), which knows every
 * schema. */
static enum http_result reply_openapi_v2(struct kubeapi *ka, struct http_req *req)
{
	static const char pb[] = "\x0a\x03" "2.0" "\x12\x13" "\x0a\x08" "agenthub" "\x12\x07" "v1.31.0";
	const char *accept = http_header(req, "Accept");
	json_t *defs, *seen, *doc;
	strbuf sb = STRBUF_INIT;
	char *text, *p;
	size_t i, len;

	if (accept && strstr(accept, "protobuf"))
		return http_reply(req, 200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf", pb,
				  sizeof(pb) - 1);
	defs = json_object();
	seen = json_object();
	for (i = 0; i < ka->reg->n; i++) {
		const struct kube_kind *k = ka->reg->kinds[i];
		char gv[400];
		json_t *d;

		snprintf(gv, sizeof(gv), "%s/%s", k->group, k->version);
		if (json_object_get(seen, gv))
			continue;
		json_object_set_new(seen, gv, json_true());
		d = openapi_doc(ka, k->group, k->version);
		json_object_update(defs, json_object_get(json_object_get(d, "components"), "schemas"));
		json_decref(d);
	}
	json_decref(seen);
	doc = json_pack("{s:s,s:{s:s,s:s},s:{},s:o}", "swagger", "2.0", "info", "title", "agenthub",
			"version", "v1.31.0", "paths", "definitions", defs);
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		return HTTP_NO;
	/* swagger 2.0 references live under #/definitions/. */
	for (p = text;;) {
		char *q = strstr(p, "#/components/schemas/");

		if (!q) {
			strbuf_adds(&sb, p);
			break;
		}
		strbuf_add(&sb, p, (size_t)(q - p));
		strbuf_adds(&sb, "#/definitions/");
		p = q + strlen("#/components/schemas/");
	}
	free(text);
	text = strbuf_detach(&sb, &len);
	if (!text)
		return HTTP_NO;
	return http_reply_owned(req, 200, "application/json", text, len);
}

static enum http_result reply_openapi(struct kubeapi *ka, struct http_req *req, const char *path)
{
	enum http_result r;
	json_t *doc;

	if (strcmp(path, "/openapi/v2") == 0)
		return reply_openapi_v2(ka, req);
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
	bool scale;       /* the scale subresource (autoscaling/v1 Scale) */
	bool token;       /* serviceaccounts/NAME/token (TokenRequest) */
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
				if (strcmp(p, "/token") == 0 && !t->group[0] &&
				    strcmp(t->plural, "serviceaccounts") == 0)
					t->token = true;
				else if (strcmp(p, "/scale") == 0)
					t->scale = true;
				else if (strcmp(p, "/status") != 0)
					return -ENOENT;
				else
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
			if (strcmp(p, "/scale") == 0)
				t->scale = true;
			else if (strcmp(p, "/status") != 0)
				return -ENOENT;
			else
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
	if (t->scale && !t->k->scale_spec_replicas)
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

/* Metadata-only replies (client-go's metadata client, controller-runtime's
 * PartialObjectMetadata): an Accept media type with
 * as=PartialObjectMetadata or as=PartialObjectMetadataList and
 * g=meta.k8s.io; the version (v1 or v1beta1) it names, or NULL.  Tables
 * win when asked for first.  Replies are JSON whatever the media type (the
 * client reads a reply by its Content-Type). */
static const char *wants_meta(struct http_req *req)
{
	const char *accept = http_header(req, "Accept"), *p;

	if (!accept || wants_table(req) || !strstr(accept, "as=PartialObjectMetadata"))
		return NULL;
	for (p = accept; p && *p; ) {
		const char *end = strchr(p, ','), *as = strstr(p, "as=PartialObjectMetadata"), *g = strstr(p, "g=meta.k8s.io");
		const char *v = strstr(p, "v=v1beta1");

		if (as && (!end || as < end) && g && (!end || g < end))
			return v && (!end || v < end) ? "v1beta1" : "v1";
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

/* The PartialObjectMetadata of an object: its metadata under the meta.k8s.io
 * kind, as JSON text (a new string) or NULL. */
static char *meta_text(const json_t *obj, const char *version)
{
	json_t *m = json_object_get(obj, "metadata");
	json_t *pom = json_pack("{s:s,s:s+,s:o}", "kind", "PartialObjectMetadata", "apiVersion", "meta.k8s.io/", version,
				"metadata", m ? json_incref(m) : json_object());
	char *s = pom ? json_dumps(pom, JSON_COMPACT) : NULL;

	json_decref(pom);
	return s;
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

/* A kind served from another kind's storage (events.k8s.io Events) reads
 * and writes through the stored kind; objects are converted at the edge. */
#define STORED(k) ((k)->stored_as ? (k)->stored_as : (k))
/* Writes through a CRD version served converted from the storage version
 * go to the kube layer as that version (it checks the body in that version
 * and converts it); events.k8s.io Events are converted here. */
#define WRITE_KIND(k) (kube_convert_is_version(k) ? (k) : STORED(k))

/* Convert a request body (object or patch) of a converted kind to the stored
 * form in place; a JSON Patch has its paths rewritten. */
static void body_to_stored(const struct kube_kind *k, json_t **body, const char *content_type)
{
	json_t *c;

	if (!k->stored_as || !*body || kube_convert_is_version(k))
		return;
	if (content_type && strstr(content_type, "json-patch") && json_is_array(*body)) {
		size_t i;
		json_t *op;

		json_array_foreach(*body, i, op) {
			const char *keys[] = { "path", "from" };

			for (size_t j = 0; j < 2; j++) {
				const char *p = json_string_value(json_object_get(op, keys[j]));
				char *np = p ? kube_convert_json_pointer(k, p) : NULL;

				if (np)
					json_object_set_new(op, keys[j], json_string(np));
				free(np);
			}
		}
		return;
	}
	c = kube_convert(k, *body, true);
	if (c) {
		json_decref(*body);
		*body = c;
	}
}

/* The stored JSON text of an object as a converted kind shows it; a new
 * string, or NULL when the text does not parse. */
static char *text_from_stored(const struct kube_kind *k, const char *text, size_t len, size_t *ret_len)
{
	json_t *o = json_loadb(text, len, 0, NULL), *c;
	char *s;

	if (!o)
		return NULL;
	c = kube_convert(k, o, false);
	json_decref(o);
	s = c ? json_dumps(c, JSON_COMPACT) : NULL;
	json_decref(c);
	*ret_len = s ? strlen(s) : 0;
	return s;
}

/* The body in protobuf when the client's Accept picks it and the kind has
 * a protobuf form (built-in kinds; custom resources stay JSON, as
 * kube-apiserver answers for them): json (taken, *len bytes) is re-encoded,
 * or kept as is when the object holds a member the protobuf subset does not
 * carry (nothing is dropped).  Returns the body to send; *ctype its type. */
static char *maybe_protobuf(struct http_req *req, const struct kube_kind *k, char *json, size_t *len,
			    const char **ctype)
{
	unsigned char *pb = NULL;
	size_t pblen = 0;
	json_error_t jerr;
	json_t *o;
	int r;

	if (!kube_proto_accept_first(http_header(req, "Accept")) || !kube_proto_kind(k->api_version, k->kind))
		return json;
	o = json_loadb(json, *len, 0, &jerr);
	if (!o)
		return json;
	r = json_object_get(o, "items") ? kube_proto_encode_list(o, &pb, &pblen) : kube_proto_encode(o, &pb, &pblen);
	json_decref(o);
	if (r < 0)
		return json;
	free(json);
	*len = pblen;
	*ctype = KUBE_PROTO_MEDIA_TYPE;
	return (char *)pb;
}

/* Reply with an object, as JSON or as a one-row Table. */
/* text (taken, may be NULL): obj's JSON text when the caller has it, sent
 * as is unless a Table was asked for. */
static enum http_result reply_object(struct http_req *req, const struct kube_kind *k, unsigned status,
				    const json_t *obj, json_t *warnings, char *text, size_t text_len)
{
	const char *ctype = "application/json", *meta = wants_meta(req);
	struct http_response *resp;
	size_t len;
	char *s;

	if (meta && (obj || text)) {
		json_t *o = obj ? json_incref((json_t *)obj) : json_loadb(text, text_len, 0, NULL), *c;
		const char *kind = json_string_value(json_object_get(o, "kind"));

		if (o && json_is_object(json_object_get(o, "metadata")) && !(kind && strcmp(kind, "Status") == 0)) {
			c = k && kube_convert_is_version(k) ? kube_convert(k, o, false) : json_incref(o);
			s = c ? meta_text(c, meta) : NULL;
			json_decref(c);
			json_decref(o);
			if (s) {
				free(text);
				text = s;
				text_len = strlen(s);
				k = NULL; /* as it is: no conversion, Table or protobuf */
			}
		} else {
			json_decref(o);
		}
	}
	if (k && k->stored_as && !wants_table(req)) {
		size_t clen = 0;
		char *c = NULL;

		if (text) {
			c = text_from_stored(k, text, text_len, &clen);
		} else if (obj) {
			json_t *co = kube_convert(k, obj, false);

			c = co ? json_dumps(co, JSON_COMPACT) : NULL;
			clen = c ? strlen(c) : 0;
			json_decref(co);
		}
		if (c) {
			free(text);
			text = c;
			text_len = clen;
		}
	}
	if (text && !(k && wants_table(req))) {
		s = text;
		len = text_len;
	} else if (k && wants_table(req)) {
		json_t *rows = json_array(), *tbl, *vobj = kube_convert_is_version(k) ? kube_convert(k, obj, false) :
			json_incref((json_t *)obj);

		json_array_append_new(rows, table_row(k->columns, vobj, table_include_param(req), time(NULL)));
		json_decref(vobj);
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
	if (k && !wants_table(req))
		s = maybe_protobuf(req, k, s, &len, &ctype);
	resp = http_response_new(status, ctype);
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
			const char *c = json_string_value(w);
			size_t n = 0;

			/* A quoted-string, as kube-apiserver writes it: '"' and
			 * '\\' escaped with a backslash (client-go unescapes). */
			n += (size_t)snprintf(hdr, sizeof(hdr), "299 - \"");
			for (; c && *c && n + 4 < sizeof(hdr); c++) {
				if (*c == '"' || *c == '\\')
					hdr[n++] = '\\';
				hdr[n++] = *c;
			}
			hdr[n++] = '"';
			hdr[n] = '\0';
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

/* The media type of the request body, lower-case, without parameters
 * ("application/json; charset=utf-8" is "application/json"); "" when the
 * request names none, which kube-apiserver reads as its first supported
 * type, JSON. */
static void body_media_type(struct http_req *req, char *out, size_t size)
{
	const char *ct = http_header(req, "Content-Type");
	size_t n = 0;

	if (ct)
		while (*ct == ' ' || *ct == '\t')
			ct++;
	while (ct && ct[n] && ct[n] != ';' && ct[n] != ' ' && ct[n] != '\t' && n + 1 < size) {
		out[n] = (char)tolower((unsigned char)ct[n]);
		n++;
	}
	out[n] = '\0';
}

enum body_kind {
	BODY_OBJECT, /* create, update: application/json or application/yaml */
	BODY_PATCH,  /* the body of a JSON, merge or strategic merge patch: JSON */
	BODY_APPLY,  /* a server-side apply patch (application/apply-patch+yaml): YAML, of which JSON is a subset */
	BODY_DELETE, /* DeleteOptions: JSON */
};

/* Decode the request body by its Content-Type: JSON for application/json
 * (and a patch's types), YAML only for application/yaml; anything else is
 * 415.  Both decoders refuse NUL bytes, duplicate keys and numbers out of
 * range with 400 and the reason. */
static int parse_body(struct http_req *req, enum body_kind kind, json_t **ret, ah_err *err)
{
	char mt[128];
	json_error_t jerr;
	json_t *doc;

	body_media_type(req, mt, sizeof(mt));
	/* kubectl 1.32+ and client-go send built-in kinds as protobuf: such a
	 * body was turned into its JSON text by auth_body_from_protobuf()
	 * before the request was dispatched. */
	if (kind != BODY_PATCH && kind != BODY_APPLY && kube_proto_content_type(http_header(req, "Content-Type")))
		snprintf(mt, sizeof(mt), "application/json");
	if (kind == BODY_OBJECT && mt[0] && strcmp(mt, "application/json") != 0 && strcmp(mt, "application/yaml") != 0)
		return ah_err_set(err, EINVAL, 415, "UnsupportedMediaType",
				  "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml");
	if (req->body.len == 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "the request body is empty");
	if ((kind == BODY_OBJECT && strcmp(mt, "application/yaml") == 0) || kind == BODY_APPLY) {
		json_t *docs = NULL;
		int r = yaml_parse_all(req->body.buf, req->body.len, &docs, err);

		if (r < 0)
			return r == -ENOMEM ? ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory") : r;
		if (json_array_size(docs) != 1 || !json_is_object(json_array_get(docs, 0))) {
			json_decref(docs);
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "the request body must be one YAML document holding an object");
		}
		*ret = json_incref(json_array_get(docs, 0));
		json_decref(docs);
		return 0;
	}
	/* jansson refuses a NUL byte (raw or \u0000), integers and reals out
	 * of range, and with JSON_REJECT_DUPLICATES a key given twice. */
	doc = json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "the request body is not valid JSON: %s at line %d column %d", jerr.text, jerr.line,
				  jerr.column);
	*ret = doc;
	return 0;
}

/* Query parameters as kube-apiserver decodes them into ListOptions,
 * GetOptions and DeleteOptions: a value that does not parse is 400 naming
 * the parameter, before anything is read or written. */
static int query_int(struct http_req *req, const char *key, ah_err *err)
{
	const char *v = http_query(req, key);
	char *end;

	if (!v || !*v)
		return 0;
	errno = 0;
	(void)strtoll(v, &end, 10);
	if (*end || errno == ERANGE)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "%s: Invalid value: \"%s\": strconv.ParseInt: parsing \"%s\": %s", key, v, v,
				  errno == ERANGE ? "value out of range" : "invalid syntax");
	return 0;
}

static int query_bool(struct http_req *req, const char *key, ah_err *err)
{
	const char *v = http_query(req, key);
	bool b;

	if (!v || !*v || http_parse_bool(v, &b) == 0)
		return 0;
	return ah_err_set(err, EINVAL, 400, "BadRequest",
			  "%s: Invalid value: \"%s\": strconv.ParseBool: parsing \"%s\": invalid syntax", key, v, v);
}

/* A resourceVersion is the decimal revision of the store (kube's etcd
 * storage: a uint64). */
static int query_rv(struct http_req *req, ah_err *err)
{
	const char *v = http_query(req, "resourceVersion"), *m = http_query(req, "resourceVersionMatch");
	const char *p;

	if (v && *v) {
		for (p = v; *p >= '0' && *p <= '9'; p++)
			;
		if (*p || p - v > 19)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "resourceVersion: Invalid value: \"%s\": invalid resource version", v);
	}
	if (m && *m && strcmp(m, "NotOlderThan") != 0 && strcmp(m, "Exact") != 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "resourceVersionMatch: Unsupported value: \"%s\": supported values: \"Exact\", \"NotOlderThan\"", m);
	return 0;
}

static int check_propagation(const char *v, ah_err *err)
{
	if (!v || strcmp(v, "Orphan") == 0 || strcmp(v, "Background") == 0 || strcmp(v, "Foreground") == 0)
		return 0;
	return ah_err_set(err, EINVAL, 422, "Invalid",
			  "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"%s\": supported values: \"Foreground\", \"Background\", \"Orphan\"",
			  v);
}

static int check_query(struct http_req *req, bool named, ah_err *err)
{
	const char *m = req->method, *nul = http_query_nul(req);
	int r = 0;

	if (nul)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "%s: Invalid value: the query parameter holds a NUL byte",
				  nul);
	if (strcmp(m, "GET") == 0) {
		r = query_rv(req, err);
		if (r == 0 && !named) {
			static const char *const ints[] = { "limit", "timeoutSeconds", NULL };
			static const char *const bools[] = { "watch", "allowWatchBookmarks", "sendInitialEvents", NULL };

			for (int i = 0; r == 0 && ints[i]; i++)
				r = query_int(req, ints[i], err);
			for (int i = 0; r == 0 && bools[i]; i++)
				r = query_bool(req, bools[i], err);
			if (r == 0 && http_query(req, "continue") && *http_query(req, "continue") &&
			    http_query(req, "resourceVersion") && *http_query(req, "resourceVersion") &&
			    strcmp(http_query(req, "resourceVersion"), "0") != 0)
				r = ah_err_set(err, EINVAL, 400, "BadRequest",
					       "resourceVersion: Forbidden: specifying resource version is not allowed when using continue");
		}
	} else if (strcmp(m, "DELETE") == 0) {
		r = query_int(req, "gracePeriodSeconds", err);
		if (r == 0)
			r = query_bool(req, "orphanDependents", err);
		if (r == 0)
			r = check_propagation(http_query(req, "propagationPolicy"), err);
	}
	return r;
}

/* The field manager of a write: the fieldManager parameter, else the
 * program name of the User-Agent ("kubectl/v1.31.0 (linux/amd64) ..." ->
 * "kubectl"), as kube-apiserver derives it; at most 128 characters. */
static void field_manager(struct http_req *req, char *out, size_t size)
{
	const char *fm = http_query(req, "fieldManager"), *ua = http_header(req, "User-Agent");
	size_t n;

	if (fm && *fm) {
		snprintf(out, size, "%s", fm);
		return;
	}
	ua = ua ? ua : "";
	n = strcspn(ua, "/");
	if (n > 128)
		n = 128;
	snprintf(out, size, "%.*s", (int)n, ua);
}

static int parse_opts(struct http_req *req, struct kube_opts *o, ah_err *err)
{
	const char *dry = http_query(req, "dryRun");
	const char *fv = http_query(req, "fieldValidation");
	const char *fm = http_query(req, "fieldManager");

	if (fm && (strlen(fm) > 128 || strpbrk(fm, "\n\r\t")))
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  strlen(fm) > 128 ?
				  "fieldManager: Too long: may not be more than 128 bytes" :
				  "fieldManager: Invalid value: \"%s\": must only contain printable characters", fm);

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
	struct row_cache *cache; /* set: Table rows go to out as text */
	const struct kube_kind *k;
	label_selector *ls;
	field_selector *fs;
	bool table;
	const char *meta;        /* metadata-only items: meta.k8s.io version */
	enum table_include include;
	time_t now;
	strbuf out;
	json_t *rows;
	size_t count, limit;
	bool more;
	char last_ns[256], last_name[256];
	int err;
};

static void out_truncate(strbuf *sb, size_t len)
{
	if (sb->buf && len < sb->len) {
		sb->len = len;
		sb->buf[len] = '\0';
	}
}

static int list_visit(const store_obj *so, void *userdata)
{
	struct list_ctx *lc = userdata;
	json_t *obj = NULL;

	if (lc->limit && lc->count == lc->limit) {
		lc->more = true;
		return 1;
	}
	if (lc->cache && !lc->ls && !lc->fs) {
		size_t mark = lc->out.len;
		int r;

		if (lc->count)
			strbuf_addch(&lc->out, ',');
		r = row_cache_emit(lc->cache, lc->k->store_key, lc->k->columns, lc->include, so, lc->now, &lc->out);
		if (r > 0)
			goto counted;
		out_truncate(&lc->out, mark);
		if (r < 0) {
			lc->err = r;
			return r;
		}
	}
	if (lc->ls || lc->fs || lc->table || lc->meta) {
		obj = json_loadb(so->json, so->len, 0, NULL);
		if (!obj)
			return 0;
		if ((lc->table || lc->meta) && kube_convert_is_version(lc->k)) {
			json_t *c = kube_convert(lc->k, obj, false);

			json_decref(obj);
			obj = c;
			if (!obj)
				return 0;
		}
		if (lc->ls && !label_selector_matches(lc->ls, json_object_get(json_object_get(obj, "metadata"), "labels"))) {
			json_decref(obj);
			return 0;
		}
		if (lc->fs && !field_selector_matches(lc->fs, obj)) {
			json_decref(obj);
			return 0;
		}
	}
	if (lc->cache) {
		size_t mark = lc->out.len;
		int r = 0;

		if (lc->count)
			strbuf_addch(&lc->out, ',');
		r = row_cache_add_emit(lc->cache, lc->k->store_key, lc->k->columns, lc->include, so, obj, lc->now,
				       &lc->out);
		if (r == 0) {
			/* Not preparable: the row built as JSON, as text. */
			json_t *row = table_row(lc->k->columns, obj, lc->include, lc->now);
			char *txt = row ? json_dumps(row, JSON_COMPACT) : NULL;

			json_decref(row);
			r = txt && strbuf_adds(&lc->out, txt) >= 0 ? 1 : -ENOMEM;
			free(txt);
		}
		if (r < 0) {
			out_truncate(&lc->out, mark);
			json_decref(obj);
			lc->err = r;
			return r;
		}
	} else if (lc->table) {
		json_array_append_new(lc->rows, table_row(lc->k->columns, obj, lc->include, lc->now));
	} else if (lc->meta) {
		char *c = meta_text(obj, lc->meta);

		if (c && lc->count)
			strbuf_addch(&lc->out, ',');
		if (!c || strbuf_adds(&lc->out, c) < 0) {
			free(c);
			json_decref(obj);
			lc->err = -ENOMEM;
			return -ENOMEM;
		}
		free(c);
	} else if (lc->k->stored_as) {
		size_t clen = 0;
		char *c = text_from_stored(lc->k, so->json, so->len, &clen);

		if (c && lc->count)
			strbuf_addch(&lc->out, ',');
		if (c && strbuf_add(&lc->out, c, clen) < 0) {
			free(c);
			json_decref(obj);
			lc->err = -ENOMEM;
			return -ENOMEM;
		}
		free(c);
		if (!c) {
			json_decref(obj);
			return 0;
		}
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
counted:
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

static enum http_result handle_watch(struct kubeapi *ka, struct http_req *req, const struct target *t);

static enum http_result handle_list(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	struct list_ctx lc = { .req = req, .k = t->k };
	const char *limit = http_query(req, "limit"), *cont = http_query(req, "continue");
	char after_ns[256] = "", after_name[256] = "";
	int64_t rev = 0, cont_rev = 0;
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
	if (cont && *cont && kube_continue_decode(cont, strlen(cont), &cont_rev, after_ns, sizeof(after_ns), after_name,
						  sizeof(after_name), &err) < 0) {
		label_selector_free(lc.ls);
		field_selector_free(lc.fs);
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	lc.table = wants_table(req);
	lc.meta = wants_meta(req);
	lc.include = table_include_param(req);
	lc.now = time(NULL);
	/* Rows are cached per stored object; a converted version has its own
	 * columns over its own form, so it is not cached. */
	if (lc.table && !kube_convert_is_version(t->k))
		lc.cache = ka->rows;
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
		char *tok = lc.more ? kube_continue_encode(rev, lc.last_ns, lc.last_name) : NULL;
		size_t len;
		char *body;

		if (lc.table && lc.cache) {
			/* The Table as text, in the order table_row's JSON would give. */
			json_t *defs = table_column_definitions(t->k->columns);
			char *dtxt = defs ? json_dumps(defs, JSON_COMPACT) : NULL;

			json_decref(defs);
			json_decref(lc.rows);
			strbuf_grow(&sb, lc.out.len + 1024);
			strbuf_addf(&sb, "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":"
				    "{\"resourceVersion\":\"%lld\"", (long long)rev);
			if (tok) {
				strbuf_adds(&sb, ",\"continue\":\"");
				strbuf_add_json_escaped(&sb, tok);
				strbuf_addch(&sb, '"');
			}
			free(tok);
			strbuf_adds(&sb, "},\"columnDefinitions\":");
			strbuf_adds(&sb, dtxt ? dtxt : "[]");
			free(dtxt);
			strbuf_adds(&sb, ",\"rows\":[");
			if (lc.out.len)
				strbuf_add(&sb, lc.out.buf, lc.out.len);
			strbuf_adds(&sb, "]}");
			strbuf_release(&lc.out);
			body = strbuf_detach(&sb, &len);
			if (!body)
				return HTTP_NO;
			return http_reply_owned(req, 200, "application/json", body, len);
		}
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
		if (lc.meta)
			strbuf_addf(&sb, "{\"apiVersion\":\"meta.k8s.io/%s\",\"kind\":\"PartialObjectMetadataList\","
				    "\"metadata\":{\"resourceVersion\":\"%lld\"", lc.meta, (long long)rev);
		else
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
		{
			const char *ctype = "application/json";

			if (!lc.meta)
				body = maybe_protobuf(req, t->k, body, &len, &ctype);
			return http_reply_owned(req, 200, ctype, body, len);
		}
	}
}

/* --- watch --------------------------------------------------------------- */

/* A watch with a label or field selector follows each object in and out of
 * the selection, as kube-apiserver's watch cache does with the previous
 * object: ADDED when an object starts matching, DELETED (carrying its new
 * state) when it stops, MODIFIED only while it keeps matching.  The previous
 * state is remembered as the set of keys ("ns/name") that matched when last
 * seen.  A watch that starts from a resourceVersion fills that set from the
 * objects as they are when it starts (the store keeps no older states), so
 * an object that changed between that revision and the start is judged by
 * its current state.  The set holds at most the objects that match. */
struct watch_state {
	struct kubeapi *ka;
	struct http_req *req;
	const struct kube_kind *k;
	char ns[256];
	label_selector *ls;
	field_selector *fs;
	json_t *matched;   /* with a selector: keys of objects in the selection */
	bool table;
	const char *meta;  /* metadata-only events: meta.k8s.io version */
	bool proto;        /* protobuf framing (the client asked for it first) */
	enum table_include include;
	int64_t rev;
	bool initial;      /* send the current objects as ADDED first */
	bool initial_end;  /* sendInitialEvents: a BOOKMARK ends the initial ADDED */
	bool bookmarks;    /* allowWatchBookmarks */
	int64_t next_bookmark_ms; /* 0: none due */
	bool first_table;  /* column definitions go with the first table event only */
	bool ended;
	int64_t deadline_ms;
	strbuf pending;
	size_t off;
	bool counted;      /* in the open watch streams gauge */
};

/* kube-apiserver's bookmark frequency, and how long before the watch's
 * deadline the last bookmark goes (cacheWatcher.nextBookmarkTime). */
#define WATCH_BOOKMARK_MS 60000
#define WATCH_BOOKMARK_BEFORE_DEADLINE_MS 2000

static void watch_free(void *cls)
{
	struct watch_state *ws = cls;

	if (ws->counted)
		hm_watch(-1);
	label_selector_free(ws->ls);
	field_selector_free(ws->fs);
	json_decref(ws->matched);
	strbuf_release(&ws->pending);
	free(ws);
}

static const char *type_name(enum store_event_type t)
{
	return t == STORE_ADDED ? "ADDED" : t == STORE_DELETED ? "DELETED" : "MODIFIED";
}

/* The next time a bookmark is due: a minute on, or 2 s before the deadline
 * if that comes first; 0 when none is (that moment has passed). */
static int64_t watch_next_bookmark(const struct watch_state *ws, int64_t now)
{
	int64_t t = now + WATCH_BOOKMARK_MS, pre = ws->deadline_ms - WATCH_BOOKMARK_BEFORE_DEADLINE_MS;

	if (pre < t)
		t = pre;
	return t > now ? t : 0;
}

/* Queue one event whose object is JSON text: a JSON line, or on a
 * protobuf watch a length-prefixed WatchEvent frame.  An object the
 * protobuf subset cannot carry (none of the stored built-in kinds should
 * hold one: their unknown fields are pruned) ends the stream with an ERROR
 * event, so the client re-lists rather than missing a field. */
static void watch_put(struct watch_state *ws, const char *type, const char *obj, size_t len)
{
	unsigned char *pb = NULL;
	size_t n = 0;
	json_t *o;
	int r = -EINVAL;

	if (!ws->proto) {
		strbuf_addf(&ws->pending, "{\"type\":\"%s\",\"object\":", type);
		strbuf_add(&ws->pending, obj, len);
		strbuf_adds(&ws->pending, "}\n");
		return;
	}
	o = json_loadb(obj, len, 0, NULL);
	if (o && json_is_string(json_object_get(o, "kind")) &&
	    strcmp(json_string_value(json_object_get(o, "kind")), "Status") == 0)
		r = kube_proto_encode_status(o, &pb, &n);
	else if (o)
		r = kube_proto_encode(o, &pb, &n);
	json_decref(o);
	if (r < 0) {
		json_t *st = json_pack("{s:s,s:s,s:s,s:i}", "status", "Failure", "reason", "InternalError",
				       "message", "an object of this watch has no protobuf form; watch it as JSON",
				       "code", 500);

		r = st ? kube_proto_encode_status(st, &pb, &n) : -ENOMEM;
		json_decref(st);
		type = "ERROR";
		ws->ended = true;
	}
	if (r == 0)
		kube_proto_watch_frame(&ws->pending, type, pb, n);
	free(pb);
}

/* A BOOKMARK: an object of the kind carrying only its resourceVersion (and,
 * ending sendInitialEvents, the k8s.io/initial-events-end annotation). */
static void watch_bookmark(struct watch_state *ws, bool initial_end)
{
	char o[1024];
	char av[64];
	int n;

	if (ws->meta)
		snprintf(av, sizeof(av), "meta.k8s.io/%s", ws->meta);
	n = snprintf(o, sizeof(o),
			 "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":{\"resourceVersion\":\"%lld\"%s}}",
			 ws->meta ? "PartialObjectMetadata" : ws->k->kind, ws->meta ? av : ws->k->api_version,
			 (long long)ws->rev,
			 initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");

	if (n > 0 && (size_t)n < sizeof(o))
		watch_put(ws, "BOOKMARK", o, (size_t)n);
}

/* The event type to send for an object a selector watch sees, or NULL for
 * none; updates the set of matching keys. */
static const char *watch_selected_type(struct watch_state *ws, const char *type, const store_obj *so,
				       bool matches)
{
	char key[520];
	bool was;

	snprintf(key, sizeof(key), "%s/%s", so->ns ? so->ns : "", so->name ? so->name : "");
	was = json_object_get(ws->matched, key) != NULL;
	if (strcmp(type, "DELETED") == 0) {
		if (!was && !matches)
			return NULL;
		json_object_del(ws->matched, key);
		return "DELETED";
	}
	if (matches) {
		json_object_set_new(ws->matched, key, json_true());
		return was ? "MODIFIED" : "ADDED";
	}
	if (!was)
		return NULL;
	json_object_del(ws->matched, key);
	return "DELETED";
}

/* Queue one event for the object, after the selector filter.  With
 * emit false the object only enters the set of matching keys (a watch from
 * a resourceVersion learning what matches now). */
static int watch_emit_opt(struct watch_state *ws, const char *type, const store_obj *so, bool emit)
{
	json_t *obj = NULL;

	if (ws->ls || ws->fs || ws->table || ws->meta) {
		obj = json_loadb(so->json, so->len, 0, NULL);
		if (!obj)
			return 0;
		if ((ws->table || ws->meta) && kube_convert_is_version(ws->k)) {
			json_t *c = kube_convert(ws->k, obj, false);

			json_decref(obj);
			obj = c;
			if (!obj)
				return 0;
		}
	}
	if (ws->ls || ws->fs) {
		bool m = (!ws->ls || label_selector_matches(ws->ls, json_object_get(json_object_get(obj, "metadata"), "labels"))) &&
			 (!ws->fs || field_selector_matches(ws->fs, obj));

		type = watch_selected_type(ws, type, so, m);
		if (!type || !emit) {
			json_decref(obj);
			return 0;
		}
	}
	if (ws->meta) {
		char *c = meta_text(obj, ws->meta);

		if (c)
			watch_put(ws, type, c, strlen(c));
		free(c);
		json_decref(obj);
		return 0;
	}
	if (!ws->table) {
		if (ws->k->stored_as) {
			size_t clen = 0;
			char *c = text_from_stored(ws->k, so->json, so->len, &clen);

			if (c)
				watch_put(ws, type, c, clen);
			else
				watch_put(ws, type, "{}", 2);
			free(c);
		} else {
			watch_put(ws, type, so->json, so->len);
		}
		json_decref(obj);
		return 0;
	}
	strbuf_addf(&ws->pending, "{\"type\":\"%s\",\"object\":", type);
	{
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
	}
	strbuf_adds(&ws->pending, "}\n");
	json_decref(obj);
	return 0;
}

static int watch_emit(struct watch_state *ws, const char *type, const store_obj *so)
{
	return watch_emit_opt(ws, type, so, true);
}

static int watch_learn_visit(const store_obj *so, void *userdata)
{
	return watch_emit_opt(userdata, "ADDED", so, false);
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
	char o[400];
	int n = snprintf(o, sizeof(o),
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			 "\"message\":\"too old resource version: %lld (%lld)\",\"reason\":\"Expired\",\"code\":410}",
			 (long long)ws->rev, (long long)store_compacted_rev(kube_api_store(ws->ka->api)));

	watch_put(ws, "ERROR", o, (size_t)n);
	ws->ended = true;
}

/* Queue a bookmark if one is due; return how long until the next one (at
 * most a second). */
static int watch_due(struct watch_state *ws)
{
	int64_t now = util_mono_ms();

	if (!ws->bookmarks || !ws->next_bookmark_ms)
		return 1000;
	if (now >= ws->next_bookmark_ms) {
		watch_bookmark(ws, false);
		ws->next_bookmark_ms = watch_next_bookmark(ws, now);
		return 0;
	}
	return ws->next_bookmark_ms - now < 1000 ? (int)(ws->next_bookmark_ms - now) : 1000;
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
			if (ws->initial_end)
				watch_bookmark(ws, true);
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
			/* A bookmark due (the server's one-second tick wakes the
			 * stream for it)? */
			watch_due(ws);
			if (ws->pending.len)
				continue;
			/* Nothing yet: give the thread back until a write (or the
			 * server's one-second tick) wakes the stream. */
			if (http_stream_suspend(ws->req, gen))
				return 0;
		}
	}
}

/* Go's strconv.ParseBool, as kube-apiserver reads boolean query parameters;
 * -1 for anything else. */
static int parse_bool(const char *v)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True", NULL };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False", NULL };
	size_t i;

	for (i = 0; yes[i]; i++)
		if (strcmp(v, yes[i]) == 0)
			return 1;
	for (i = 0; no[i]; i++)
		if (strcmp(v, no[i]) == 0)
			return 0;
	return -1;
}

/* ListOptions validation of a watch (kube-apiserver's validateWatchOptions):
 * 422 naming ListOptions.meta.k8s.io. */
static enum http_result reply_list_options_invalid(struct http_req *req, const char *field, const char *reason,
						  const char *detail)
{
	json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s+++++,s:s,s:{s:s,s:s,s:[{s:s,s:s++,s:s}]},s:i}",
			       "kind", "Status", "apiVersion", "v1", "metadata", "status", "Failure",
			       "message", "ListOptions.meta.k8s.io \"\" is invalid: ", field, ": ",
			       strcmp(reason, "FieldValueForbidden") == 0 ? "Forbidden" : "Unsupported value", ": ", detail,
			       "reason", "Invalid", "details", "group", "meta.k8s.io", "kind", "ListOptions",
			       "causes", "reason", reason, "message",
			       strcmp(reason, "FieldValueForbidden") == 0 ? "Forbidden" : "Unsupported value", ": ", detail,
			       "field", field, "code", 422);
	enum http_result r = http_reply_json(req, 422, st);

	json_decref(st);
	return r;
}

static enum http_result handle_watch(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	struct watch_state *ws;
	const char *rv = http_query(req, "resourceVersion"), *to = http_query(req, "timeoutSeconds");
	const char *bm = http_query(req, "allowWatchBookmarks"), *sie = http_query(req, "sendInitialEvents");
	const char *match = http_query(req, "resourceVersionMatch");
	long timeout = ka->opts.max_watch_seconds;
	int send_initial = -1; /* unset */
	ah_err err;

	if (sie && *sie) {
		send_initial = parse_bool(sie);
		if (send_initial < 0)
			return reply_err(req, 400, "BadRequest", "sendInitialEvents: invalid value \"%s\"", sie);
	}
	if (send_initial >= 0 && (!match || strcmp(match, "NotOlderThan") != 0))
		return reply_list_options_invalid(req, "resourceVersionMatch", "FieldValueForbidden",
						  "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
	if (match && *match) {
		if (send_initial < 0)
			return reply_list_options_invalid(req, "resourceVersionMatch", "FieldValueForbidden",
							  "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
		if (strcmp(match, "NotOlderThan") != 0)
		{
			char d[400];

			snprintf(d, sizeof(d), "\"%.300s\": supported values: \"NotOlderThan\"", match);
			return reply_list_options_invalid(req, "resourceVersionMatch", "FieldValueNotSupported", d);
		}
	}
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return HTTP_NO;
	if (parse_selectors(req, t->k, &ws->ls, &ws->fs, &err) < 0) {
		free(ws);
		return reply_kerr(req, t, &err, NULL, NULL);
	}
	if ((ws->ls || ws->fs) && !(ws->matched = json_object())) {
		watch_free(ws);
		return HTTP_NO;
	}
	ws->ka = ka;
	ws->req = req;
	ws->k = t->k;
	snprintf(ws->ns, sizeof(ws->ns), "%s", t->ns);
	ws->table = wants_table(req);
	ws->meta = wants_meta(req);
	ws->proto = !ws->table && !ws->meta && kube_proto_accept_first(http_header(req, "Accept")) &&
		    kube_proto_kind(t->k->api_version, t->k->kind);
	ws->first_table = true;
	ws->include = table_include_param(req);
	ws->bookmarks = bm && parse_bool(bm) == 1;
	strbuf_init(&ws->pending, 0);
	if (to && *to) {
		long v = strtol(to, NULL, 10);

		if (v > 0 && v < timeout)
			timeout = v;
	}
	ws->deadline_ms = util_mono_ms() + timeout * 1000;
	ws->next_bookmark_ms = watch_next_bookmark(ws, util_mono_ms());
	if (send_initial == 1) {
		/* The current state (which is never older than any revision
		 * asked for), then a bookmark saying the initial events ended. */
		ws->initial = true;
		ws->initial_end = ws->bookmarks;
		if (rv && *rv && strcmp(rv, "0") != 0) {
			char *end;
			long long want = strtoll(rv, &end, 10);

			if (*end || want < 0) {
				watch_free(ws);
				return reply_err(req, 400, "BadRequest", "invalid resource version: %s", rv);
			}
		}
	} else if (send_initial < 0 && (!rv || !*rv || strcmp(rv, "0") == 0)) {
		ws->initial = true;
	} else if (!rv || !*rv || strcmp(rv, "0") == 0) {
		/* sendInitialEvents=false without a revision: from now on. */
		ws->rev = store_current_rev(kube_api_store(ka->api));
		if (ws->matched)
			store_list(kube_api_store(ka->api), ws->k->store_key, ws->ns[0] ? ws->ns : NULL, NULL, NULL,
				   watch_learn_visit, ws, NULL);
	} else {
		char *end;

		ws->rev = strtoll(rv, &end, 10);
		if (*end || ws->rev < 0) {
			watch_free(ws);
			return reply_err(req, 400, "BadRequest", "invalid resource version: %s", rv);
		}
		if (ws->rev < store_compacted_rev(kube_api_store(ka->api)))
			watch_gone(ws);
		else if (ws->matched)
			store_list(kube_api_store(ka->api), ws->k->store_key, ws->ns[0] ? ws->ns : NULL, NULL, NULL,
				   watch_learn_visit, ws, NULL);
	}
	ws->counted = true;
	hm_watch(1);
	return http_reply_stream(req, 200,
				 ws->proto ? KUBE_PROTO_MEDIA_TYPE ";stream=watch" : "application/json",
				 watch_read, ws, watch_free);
}

/* --- CRDs as objects ------------------------------------------------------ */

/* The CRDs are part of the build: served read-only, at resourceVersion 1,
 * with the metadata and status a cluster would show (a uid derived from the
 * name, so it is the same on every start and every replica; Established). */
#define CRD_RV "1"

static json_t *served_crds(const struct kube_registry *reg)
{
	json_t *out = json_array(), *seen = json_object();
	char now[32];
	size_t i;

	util_now_rfc3339(now, sizeof(now));
	for (i = 0; out && i < reg->n; i++) {
		const struct kube_kind *k = reg->kinds[i];
		json_t *doc, *meta, *versions, *v, *stored;
		const char *name;
		uint64_t h = 1469598103934665603ULL;
		char uid[40];
		size_t j;

		if (!k->crd)
			continue;
		name = json_string_value(json_object_get(json_object_get(k->crd, "metadata"), "name"));
		if (!name || json_object_get(seen, name))
			continue;
		json_object_set_new(seen, name, json_true());
		stored = json_array();
		for (const char *c = name; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
		snprintf(uid, sizeof(uid), "%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(h >> 32), (unsigned)(h >> 16) & 0xffff,
			 (unsigned)h & 0xfff, (unsigned)(h >> 40) & 0xfff, (unsigned long long)(h * 31) & 0xffffffffffffULL);
		doc = json_deep_copy(k->crd);
		meta = json_object_get(doc, "metadata");
		json_object_set_new(meta, "uid", json_string(uid));
		json_object_set_new(meta, "resourceVersion", json_string(CRD_RV));
		json_object_set_new(meta, "generation", json_integer(1));
		json_object_set_new(meta, "creationTimestamp", json_string(now));
		versions = json_object_get(json_object_get(doc, "spec"), "versions");
		json_array_foreach(versions, j, v)
			if (json_is_true(json_object_get(v, "storage")))
				json_array_append(stored, json_object_get(v, "name"));
		json_object_set_new(doc, "status", json_pack("{s:O,s:o,s:[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]}",
			"acceptedNames", json_object_get(json_object_get(doc, "spec"), "names"), "storedVersions", stored,
			"conditions", "type", "NamesAccepted", "status", "True", "lastTransitionTime", now,
			"reason", "NoConflicts", "message", "no conflicts found",
			"type", "Established", "status", "True", "lastTransitionTime", now,
			"reason", "InitialNamesAccepted", "message", "the initial names have been accepted"));
		json_array_append_new(out, doc);
	}
	json_decref(seen);
	return out;
}

static const char *crd_name(const json_t *crd)
{
	return json_string_value(json_object_get(json_object_get(crd, "metadata"), "name"));
}

static char *crd_text(const json_t *crd, const char *meta)
{
	return meta ? meta_text(crd, meta) : json_dumps(crd, JSON_COMPACT);
}

/* A watch of the CRDs: they never change, so it is the initial ADDED events
 * (when asked for), then bookmarks until the deadline. */
struct crd_watch {
	struct http_req *req;
	strbuf pending;
	size_t off;
	const char *meta;
	bool bookmarks;
	int64_t deadline_ms, next_bookmark_ms;
};

static void crd_watch_free(void *cls)
{
	struct crd_watch *cw = cls;

	hm_watch(-1);
	strbuf_release(&cw->pending);
	free(cw);
}

static void crd_watch_bookmark(struct crd_watch *cw, bool initial_end)
{
	strbuf_addf(&cw->pending, "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"%s\",\"apiVersion\":\"%s%s\","
		    "\"metadata\":{\"resourceVersion\":\"" CRD_RV "\"%s}}}\n",
		    cw->meta ? "PartialObjectMetadata" : "CustomResourceDefinition",
		    cw->meta ? "meta.k8s.io/" : "apiextensions.k8s.io/v1", cw->meta ? cw->meta : "",
		    initial_end ? ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}" : "");
}

static int64_t crd_next_bookmark(const struct crd_watch *cw, int64_t now)
{
	int64_t t = now + WATCH_BOOKMARK_MS, pre = cw->deadline_ms - WATCH_BOOKMARK_BEFORE_DEADLINE_MS;

	if (pre < t)
		t = pre;
	return t > now ? t : 0;
}

static ssize_t crd_watch_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct crd_watch *cw = cls;

	(void)pos;
	for (;;) {
		unsigned gen = http_streams_gen();
		int64_t now;

		if (cw->off < cw->pending.len) {
			size_t n = cw->pending.len - cw->off;

			if (n > max)
				n = max;
			memcpy(buf, cw->pending.buf + cw->off, n);
			cw->off += n;
			if (cw->off == cw->pending.len) {
				strbuf_reset(&cw->pending);
				cw->off = 0;
			}
			return (ssize_t)n;
		}
		now = util_mono_ms();
		if (http_server_stopping() || now >= cw->deadline_ms)
			return HTTP_STREAM_END;
		if (cw->bookmarks && cw->next_bookmark_ms && now >= cw->next_bookmark_ms) {
			crd_watch_bookmark(cw, false);
			cw->next_bookmark_ms = crd_next_bookmark(cw, now);
			continue;
		}
		/* Nothing will happen but time: the server's one-second tick
		 * wakes the stream. */
		if (http_stream_suspend(cw->req, gen))
			return 0;
	}
}

static enum http_result crd_watch_start(struct kubeapi *ka, struct http_req *req, label_selector *ls,
					 field_selector *fs)
{
	const char *rv = http_query(req, "resourceVersion"), *to = http_query(req, "timeoutSeconds");
	const char *bm = http_query(req, "allowWatchBookmarks"), *sie = http_query(req, "sendInitialEvents");
	const char *match = http_query(req, "resourceVersionMatch");
	long timeout = ka->opts.max_watch_seconds;
	int send_initial = -1;
	bool initial;
	struct crd_watch *cw;
	json_t *crd;
	size_t i;

	if (sie && *sie && (send_initial = parse_bool(sie)) < 0)
		return reply_err(req, 400, "BadRequest", "sendInitialEvents: invalid value \"%s\"", sie);
	if (send_initial >= 0 && (!match || strcmp(match, "NotOlderThan") != 0))
		return reply_list_options_invalid(req, "resourceVersionMatch", "FieldValueForbidden",
						  "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan");
	if (match && *match && send_initial < 0)
		return reply_list_options_invalid(req, "resourceVersionMatch", "FieldValueForbidden",
						  "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided");
	if (rv && *rv) {
		char *end;
		long long v = strtoll(rv, &end, 10);

		if (*end || v < 0)
			return reply_err(req, 400, "BadRequest", "invalid resource version: %s", rv);
	}
	/* From "now" (a resourceVersion, or sendInitialEvents=false) nothing
	 * ever happens; otherwise the CRDs come first. */
	initial = send_initial == 1 || (send_initial < 0 && (!rv || !*rv || strcmp(rv, "0") == 0));
	cw = calloc(1, sizeof(*cw));
	if (!cw)
		return HTTP_NO;
	cw->req = req;
	cw->meta = wants_meta(req);
	cw->bookmarks = bm && parse_bool(bm) == 1;
	strbuf_init(&cw->pending, 0);
	if (to && *to) {
		long v = strtol(to, NULL, 10);

		if (v > 0 && v < timeout)
			timeout = v;
	}
	cw->deadline_ms = util_mono_ms() + timeout * 1000;
	cw->next_bookmark_ms = crd_next_bookmark(cw, util_mono_ms());
	json_array_foreach(initial ? ka->crds : NULL, i, crd) {
		char *txt;

		if (ls && !label_selector_matches(ls, json_object_get(json_object_get(crd, "metadata"), "labels")))
			continue;
		if (fs && !field_selector_matches(fs, crd))
			continue;
		txt = crd_text(crd, cw->meta);
		if (txt)
			strbuf_addf(&cw->pending, "{\"type\":\"ADDED\",\"object\":%s}\n", txt);
		free(txt);
	}
	if (send_initial == 1 && cw->bookmarks)
		crd_watch_bookmark(cw, true);
	hm_watch(1);
	return http_reply_stream(req, 200, "application/json", crd_watch_read, cw, crd_watch_free);
}

/* A Table of CRDs, with kube-apiserver's columns (NAME, CREATED AT). */
static json_t *crd_table(struct http_req *req, json_t *items)
{
	enum table_include inc = table_include_param(req);
	json_t *rows = json_array(), *crd;
	size_t i;

	json_array_foreach(items, i, crd) {
		json_t *row = json_pack("{s:[s,O]}", "cells", crd_name(crd),
					json_object_get(json_object_get(crd, "metadata"), "creationTimestamp"));

		if (inc == TABLE_INCLUDE_OBJECT)
			json_object_set(row, "object", crd);
		else if (inc == TABLE_INCLUDE_METADATA)
			json_object_set_new(row, "object", json_pack("{s:s,s:s,s:O}", "kind", "PartialObjectMetadata",
								     "apiVersion", "meta.k8s.io/v1", "metadata",
								     json_object_get(crd, "metadata")));
		json_array_append_new(rows, row);
	}
	return json_pack("{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:s,s:i}],s:o}", "kind", "Table",
			 "apiVersion", "meta.k8s.io/v1", "metadata", "resourceVersion", CRD_RV, "columnDefinitions",
			 "name", "Name", "type", "string", "format", "name", "description",
			 "Name must be unique within a namespace.", "priority", 0,
			 "name", "Created At", "type", "date", "format", "", "description",
			 "CreationTimestamp is a timestamp representing the server time when this object was created.",
			 "priority", 0, "rows", rows);
}

/* GET of customresourcedefinitions: get, list (label and field selectors),
 * watch; as objects, as a Table, or metadata-only. */
static enum http_result handle_crd(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	const char *meta = wants_meta(req);
	label_selector *ls = NULL;
	field_selector *fs = NULL;
	json_t *items, *crd = NULL, *doc;
	enum http_result r;
	bool w = false;
	ah_err err;
	size_t i;

	if (strcmp(req->method, "GET") != 0)
		return reply_err(req, 405, "MethodNotAllowed",
				 "the server does not allow this method on the requested resource: CustomResourceDefinitions are part of agenthub's build (config/crd/)");
	if (t->name[0]) {
		char *txt;

		json_t *c;

		crd = NULL;
		json_array_foreach(ka->crds, i, c)
			if (!crd && strcmp(crd_name(c), t->name) == 0)
				crd = c;
		if (!crd)
			return reply_err(req, 404, "NotFound",
					 "customresourcedefinitions.apiextensions.k8s.io \"%s\" not found", t->name);
		if (wants_table(req)) {
			json_t *one = json_pack("[O]", crd);

			doc = crd_table(req, one);
			json_decref(one);
			r = http_reply_json(req, 200, doc);
			json_decref(doc);
			return r;
		}
		txt = crd_text(crd, meta);
		return txt ? http_reply_owned(req, 200, "application/json", txt, strlen(txt)) : HTTP_NO;
	}
	if (parse_selectors(req, NULL, &ls, &fs, &err) < 0)
		return kubeapi_reply_status(req, &err, "apiextensions.k8s.io", "customresourcedefinitions", NULL, NULL);
	if (http_query(req, "watch") && http_parse_bool(http_query(req, "watch"), &w) == 0 && w) {
		r = crd_watch_start(ka, req, ls, fs);
		label_selector_free(ls);
		field_selector_free(fs);
		return r;
	}
	items = json_array();
	json_array_foreach(ka->crds, i, crd) {
		if (ls && !label_selector_matches(ls, json_object_get(json_object_get(crd, "metadata"), "labels")))
			continue;
		if (fs && !field_selector_matches(fs, crd))
			continue;
		if (meta)
			json_array_append_new(items, json_pack("{s:s,s:s+,s:O}", "kind", "PartialObjectMetadata",
							       "apiVersion", "meta.k8s.io/", meta, "metadata",
							       json_object_get(crd, "metadata")));
		else
			json_array_append(items, crd);
	}
	label_selector_free(ls);
	field_selector_free(fs);
	if (wants_table(req)) {
		doc = crd_table(req, items);
		json_decref(items);
	} else if (meta) {
		doc = json_pack("{s:s+,s:s,s:{s:s},s:o}", "apiVersion", "meta.k8s.io/", meta, "kind",
				"PartialObjectMetadataList", "metadata", "resourceVersion", CRD_RV, "items", items);
	} else {
		doc = json_pack("{s:s,s:s,s:{s:s},s:o}", "apiVersion", "apiextensions.k8s.io/v1", "kind",
				"CustomResourceDefinitionList", "metadata", "resourceVersion", CRD_RV, "items", items);
	}
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

		kube_delete(ka->api, STORED(t->k), json_string_value(json_array_get(n, 0)),
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

/* The patch type a PATCH's Content-Type names (parameters such as
 * "; charset=utf-8" ignored, case-insensitive), as one of the constant
 * strings kube_patch() takes; NULL for a type this kind does not accept.
 * Custom resources take no strategic merge patch: they have no Go struct
 * with patch tags, and kube-apiserver answers 415. */
static const char *patch_media_type(const char *ct, const struct kube_kind *k)
{
	static const char *const types[] = { "application/json-patch+json", "application/merge-patch+json",
					      "application/strategic-merge-patch+json",
					      "application/apply-patch+yaml", NULL };
	size_t len, i;

	if (!ct)
		return NULL;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	len = strcspn(ct, ";");
	while (len && (ct[len - 1] == ' ' || ct[len - 1] == '\t'))
		len--;
	for (i = 0; types[i]; i++) {
		if (strlen(types[i]) != len || strncasecmp(ct, types[i], len) != 0)
			continue;
		if (i == 2 && !k->builtin)
			return NULL;
		return types[i];
	}
	return NULL;
}

static enum http_result handle_resource(struct kubeapi *ka, struct http_req *req, struct target *t)
{
	struct kube_opts o = { 0 };
	char manager[160];
	json_t *body = NULL, *ret = NULL, *causes = json_array(), *warnings = json_array();
	const char *m = req->method;
	enum http_result res;
	ah_err err;
	int r;

	ah_err_clear(&err);
	o.causes = causes;
	o.warnings = warnings;
	o.status = t->status;
	field_manager(req, manager, sizeof(manager));
	o.field_manager = manager;
	r = parse_opts(req, &o, &err);
	if (r == 0)
		r = check_query(req, t->name[0] != '\0', &err);
	if (r < 0)
		goto fail;
	if (!t->name[0]) {
		if (strcmp(m, "GET") == 0) {
			bool w = false;

			json_decref(causes);
			json_decref(warnings);
			/* Checked by check_query: Go's ParseBool ("True" from the
			 * Python client included). */
			if (http_query(req, "watch") && http_parse_bool(http_query(req, "watch"), &w) == 0 && w)
				return handle_watch(ka, req, t);
			return handle_list(ka, req, t);
		}
		if (strcmp(m, "POST") == 0) {
			r = parse_body(req, BODY_OBJECT, &body, &err);
			if (r < 0)
				goto fail;
			body_to_stored(t->k, &body, NULL);
			o.want_text = true;
			r = kube_create(ka->api, WRITE_KIND(t->k), t->ns, body, &o, &ret, &err);
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

			r = kube_get_text(ka->api, STORED(t->k), t->ns, t->name, &text, &len, &err);
			if (r < 0)
				goto fail;
			res = reply_object(req, t->k, 200, NULL, NULL, text, len);
			goto done;
		}
		r = kube_get(ka->api, STORED(t->k), t->ns, t->name, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, 200, ret, NULL, NULL, 0);
		goto done;
	}
	if (strcmp(m, "PUT") == 0) {
		r = parse_body(req, BODY_OBJECT, &body, &err);
		if (r < 0)
			goto fail;
		body_to_stored(t->k, &body, NULL);
		o.want_text = true;
		r = kube_update(ka->api, WRITE_KIND(t->k), t->ns, t->name, body, &o, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, 200, ret, warnings, o.text, o.text_len);
		o.text = NULL;
		goto done;
	}
	if (strcmp(m, "PATCH") == 0) {
		const char *ct = patch_media_type(http_header(req, "Content-Type"), t->k);

		if (!ct) {
			r = ah_err_set(&err, EINVAL, 415, "UnsupportedMediaType",
				       "the body of the request was in an unknown format - accepted media types include: %s",
				       t->k->builtin ?
				       "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml" :
				       "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml");
			goto fail;
		}
		const char *force = http_query(req, "force");
		bool apply = strstr(ct, "apply-patch") != NULL;

		if (force && *force) {
			if (!apply) {
				r = ah_err_set(&err, EINVAL, 422, "Invalid",
					       "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch");
				goto fail;
			}
			o.force = parse_bool(force) == 1;
		}
		r = parse_body(req, apply ? BODY_APPLY : BODY_PATCH, &body, &err);
		if (r < 0)
			goto fail;
		body_to_stored(t->k, &body, ct);
		o.want_text = true;
		r = kube_patch(ka->api, WRITE_KIND(t->k), t->ns, t->name, ct, body, &o, &ret, &err);
		if (r < 0)
			goto fail;
		res = reply_object(req, t->k, o.created ? 201 : 200, ret, warnings, o.text, o.text_len);
		o.text = NULL;
		goto done;
	}
	if (strcmp(m, "DELETE") == 0) {
		const char *prop = http_query(req, "propagationPolicy");

		if (req->body.len > 0) {
			r = parse_body(req, BODY_DELETE, &body, &err);
			if (r < 0)
				goto fail;
		}
		if (body) {
			const char *bp = json_string_value(json_object_get(body, "propagationPolicy"));
			json_t *pre = json_object_get(body, "preconditions");

			if (json_object_get(body, "propagationPolicy") && !json_is_null(json_object_get(body, "propagationPolicy")) && !bp) {
				r = ah_err_set(&err, EINVAL, 400, "BadRequest", "propagationPolicy: must be a string");
				goto fail;
			}
			if (bp)
				prop = bp;
			r = check_propagation(bp, &err);
			if (r < 0)
				goto fail;
			if (json_object_get(body, "dryRun") && json_array_size(json_object_get(body, "dryRun")))
				o.dry_run = true;
			o.precondition_uid = json_string_value(json_object_get(pre, "uid"));
			o.precondition_rv = json_string_value(json_object_get(pre, "resourceVersion"));
		}
		o.propagation = prop;
		r = kube_delete(ka->api, STORED(t->k), t->ns, t->name, &o, &ret, &err);
		if (r < 0)
			goto fail;
		if (t->k->stored_as && ret) {
			json_t *c = kube_convert(t->k, ret, false);

			json_decref(ret);
			ret = c;
		}
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

/* --- the scale subresource ----------------------------------------------- */

/* A CRD's scale paths are simple JSON paths (".spec.replicas"). */
static json_t *path_get(const json_t *o, const char *path)
{
	char key[128];
	const char *p = path, *dot;

	if (!path || *p != '.')
		return NULL;
	p++;
	while (o && (dot = strchr(p, '.')) != NULL) {
		size_t n = (size_t)(dot - p);

		if (n >= sizeof(key))
			return NULL;
		memcpy(key, p, n);
		key[n] = '\0';
		o = json_object_get(o, key);
		p = dot + 1;
	}
	return json_is_object(o) ? json_object_get(o, p) : NULL;
}

static int path_set(json_t *o, const char *path, json_t *v)
{
	char key[128];
	const char *p = path, *dot;

	if (!path || *p != '.') {
		json_decref(v);
		return -EINVAL;
	}
	p++;
	while ((dot = strchr(p, '.')) != NULL) {
		size_t n = (size_t)(dot - p);
		json_t *next;

		if (n >= sizeof(key)) {
			json_decref(v);
			return -EINVAL;
		}
		memcpy(key, p, n);
		key[n] = '\0';
		next = json_object_get(o, key);
		if (!json_is_object(next)) {
			next = json_object();
			json_object_set_new(o, key, next);
		}
		o = next;
		p = dot + 1;
	}
	return json_object_set_new(o, p, v);
}

/* The autoscaling/v1 Scale of an object (stored form), as kube-apiserver
 * builds it for a custom resource. */
static json_t *scale_of(const struct kube_kind *k, const json_t *obj)
{
	const json_t *meta = json_object_get(obj, "metadata");
	json_t *sc, *m = json_object(), *spec = json_object(), *status = json_object();
	json_t *sel = path_get(obj, k->scale_label_selector);
	json_int_t want = json_integer_value(path_get(obj, k->scale_spec_replicas));
	const char *keys[] = { "name", "namespace", "uid", "resourceVersion", "creationTimestamp" };
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (json_object_get(meta, keys[i]))
			json_object_set(m, keys[i], json_object_get(meta, keys[i]));
	if (want)
		json_object_set_new(spec, "replicas", json_integer(want));
	json_object_set_new(status, "replicas", json_integer(json_integer_value(path_get(obj, k->scale_status_replicas))));
	if (json_is_string(sel) && json_string_length(sel))
		json_object_set(status, "selector", sel);
	sc = json_pack("{s:s,s:s,s:o,s:o,s:o}", "kind", "Scale", "apiVersion", "autoscaling/v1", "metadata", m,
		       "spec", spec, "status", status);
	return sc;
}

/* GET, PUT and PATCH (JSON merge, strategic merge, JSON patch) of
 * .../NAME/scale for kinds whose CRD declares the scale subresource: the
 * Scale's spec.replicas is written to the object's spec replicas path;
 * status.replicas and status.selector are read from the object. */
static enum http_result handle_scale(struct kubeapi *ka, struct http_req *req, const struct target *t)
{
	const struct kube_kind *sk = STORED(t->k);
	struct kube_opts o = { 0 };
	json_t *body = NULL, *obj = NULL, *ret = NULL, *scale = NULL, *want = NULL, *causes = json_array();
	const char *m = req->method, *ct = NULL;
	char manager[128];
	enum http_result res;
	ah_err err;
	int r, attempt;

	ah_err_clear(&err);
	o.causes = causes;
	field_manager(req, manager, sizeof(manager));
	o.field_manager = manager;
	r = parse_opts(req, &o, &err);
	if (r == 0)
		r = check_query(req, true, &err);
	if (r < 0)
		goto fail;
	if (strcmp(m, "GET") == 0) {
		r = kube_get(ka->api, sk, t->ns, t->name, &obj, &err);
		if (r < 0)
			goto fail;
		scale = scale_of(sk, obj);
		res = http_reply_json(req, 200, scale);
		goto done;
	}
	if (strcmp(m, "PUT") == 0) {
		r = parse_body(req, BODY_OBJECT, &body, &err);
	} else if (strcmp(m, "PATCH") == 0) {
		ct = http_header(req, "Content-Type");
		if (!ct || (!strstr(ct, "merge-patch+json") && !strstr(ct, "json-patch+json"))) {
			r = ah_err_set(&err, EINVAL, 415, "UnsupportedMediaType",
				       "the body of the request was in an unknown format - accepted media types include: "
				       "application/json-patch+json, application/merge-patch+json, "
				       "application/strategic-merge-patch+json");
			goto fail;
		}
		r = parse_body(req, BODY_PATCH, &body, &err);
	} else {
		r = ah_err_set(&err, EINVAL, 405, "MethodNotAllowed",
			       "the server does not allow this method on the requested resource");
	}
	if (r < 0)
		goto fail;
	for (attempt = 0; attempt < 8; attempt++) {
		const char *want_rv, *rv;
		json_t *rj;

		json_decref(obj);
		json_decref(scale);
		json_decref(want);
		obj = scale = want = NULL;
		r = kube_get(ka->api, sk, t->ns, t->name, &obj, &err);
		if (r < 0)
			goto fail;
		scale = scale_of(sk, obj);
		if (body && strcmp(m, "PUT") == 0) {
			want = json_incref(body);
		} else if (strstr(ct, "json-patch+json") && !strstr(ct, "merge")) {
			r = patch_json(scale, body, &want, &err);
		} else {
			r = patch_merge(scale, body, &want, &err);
		}
		if (r < 0)
			goto fail;
		if (!json_is_object(want)) {
			r = ah_err_set(&err, EINVAL, 400, "BadRequest", "the body of the request is not a Scale object");
			goto fail;
		}
		rj = json_object_get(json_object_get(want, "spec"), "replicas");
		if (rj && !json_is_null(rj) && !json_is_integer(rj)) {
			r = ah_err_set(&err, EINVAL, 400, "BadRequest",
				       "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal %s into Go struct field ScaleSpec.spec.replicas of type int32",
				       json_is_string(rj) ? "string" : json_is_real(rj) ? "number" : json_is_boolean(rj) ? "bool" :
				       json_is_array(rj) ? "array" : "object");
			goto fail;
		}
		if (json_integer_value(rj) < 0 || json_integer_value(rj) > 2147483647) {
			r = ah_err_set(&err, EINVAL, 422, "Invalid",
				       "Scale.autoscaling \"%s\" is invalid: spec.replicas: Invalid value: %lld: must be greater than or equal to 0",
				       t->name, (long long)json_integer_value(rj));
			if (json_integer_value(rj) > 2147483647)
				ah_err_set(&err, EINVAL, 422, "Invalid",
					   "Scale.autoscaling \"%s\" is invalid: spec.replicas: Invalid value: %lld: must be less than or equal to 2147483647",
					   t->name, (long long)json_integer_value(rj));
			goto fail;
		}
		/* A resourceVersion in the Scale is a precondition. */
		want_rv = json_string_value(json_object_get(json_object_get(want, "metadata"), "resourceVersion"));
		rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
		if (want_rv && *want_rv && (!rv || strcmp(want_rv, rv) != 0)) {
			r = ah_err_set(&err, ESTALE, 409, "Conflict",
				       "Operation cannot be fulfilled on %s \"%s\": the object has been modified; please apply your changes to the latest version and try again",
				       kube_kind_resource_name(sk), t->name);
			goto fail;
		}
		r = path_set(obj, sk->scale_spec_replicas, json_integer(json_integer_value(rj)));
		if (r < 0) {
			r = ah_err_set(&err, EINVAL, 500, "InternalError", "bad specReplicasPath %s", sk->scale_spec_replicas);
			goto fail;
		}
		json_decref(ret);
		ret = NULL;
		r = kube_update(ka->api, sk, t->ns, t->name, obj, &o, &ret, &err);
		if (r == -ESTALE && !(want_rv && *want_rv))
			continue;
		break;
	}
	if (r < 0)
		goto fail;
	json_decref(scale);
	scale = scale_of(sk, ret ? ret : obj);
	res = http_reply_json(req, 200, scale);
	goto done;
fail:
	res = kubeapi_reply_status(req, &err, t->k->group, t->k->plural, t->name, causes);
done:
	free(o.text);
	json_decref(body);
	json_decref(obj);
	json_decref(ret);
	json_decref(scale);
	json_decref(want);
	json_decref(causes);
	return res;
}

/* The RBAC attributes of a resource request, as kube-apiserver's RequestInfo. */
static void target_attrs(struct http_req *req, const struct target *t, struct rbac_attrs *a)
{
	const char *m = req->method, *w = http_query(req, "watch");

	memset(a, 0, sizeof(*a));
	a->resource_request = true;
	a->group = t->group;
	a->resource = t->plural;
	a->subresource = t->status ? "status" : t->scale ? "scale" : t->token ? "token" : "";
	a->name = t->name;
	/* A namespace's own requests are in that namespace. */
	a->ns = t->ns[0] || strcmp(t->plural, "namespaces") != 0 || t->group[0] ? t->ns : t->name;
	if (strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0)
		a->verb = t->name[0] ? "get" : w && (strcmp(w, "1") == 0 || strcmp(w, "true") == 0) ? "watch" : "list";
	else if (strcmp(m, "POST") == 0)
		a->verb = "create";
	else if (strcmp(m, "PUT") == 0)
		a->verb = "update";
	else if (strcmp(m, "PATCH") == 0)
		a->verb = "patch";
	else if (strcmp(m, "DELETE") == 0)
		a->verb = t->name[0] ? "delete" : "deletecollection";
	else
		a->verb = "";
}

/* Authorize a request: 0 when it may go on (id filled), else a reply was
 * queued and *res holds its result. */
static int authorize(struct kubeapi *ka, struct http_req *req, const struct target *t,
		     struct auth_identity *id, enum http_result *res)
{
	struct rbac_attrs a;
	struct rbac_user u;
	char lower[16];
	bool replied;
	size_t i;

	if (!ka->opts.creds) {
		memset(id, 0, sizeof(*id));
		snprintf(id->user, sizeof(id->user), "%s", AUTH_ADMIN_USER);
		id->masters = true;
		return 0;
	}
	if (auth_authenticate(ka->api, ka->opts.creds, ka->tokens, req, id) < 0) {
		*res = reply_err(req, 401, "Unauthorized", "Unauthorized");
		return -EACCES;
	}
	*res = auth_impersonate(ka->rbac, req, id, &replied);
	if (replied)
		return -EACCES;
	if (id->masters)
		return 0;
	if (t) {
		target_attrs(req, t, &a);
	} else {
		memset(&a, 0, sizeof(a));
		for (i = 0; req->method[i] && i + 1 < sizeof(lower); i++)
			lower[i] = (char)(req->method[i] >= 'A' && req->method[i] <= 'Z' ? req->method[i] + 32 : req->method[i]);
		lower[i] = '\0';
		a.verb = lower;
		a.path = req->path;
	}
	auth_rbac_user(id, &u);
	if (rbac_allowed(ka->rbac, &u, &a))
		return 0;
	*res = auth_reply_forbidden(req, id, &a, t ? (t->k ? kube_kind_resource_name(t->k) : t->plural) : NULL);
	return -EACCES;
}

enum http_result kubeapi_handle(struct kubeapi *ka, struct http_req *req, bool *handled)
{
	const char *path = req->path;
	struct auth_identity id;
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
	if (req->too_big)
		return reply_err(req, 413, "RequestEntityTooLarge",
				 "Request entity too large: limit is %zu bytes", req->body.max);
	if (parse_target(ka, path, &t) < 0) {
		enum http_result res;

		/* Discovery, OpenAPI and unknown paths: non-resource requests. */
		if (authorize(ka, req, NULL, &id, &res) < 0)
			return res;
	} else {
		enum http_result res;
		ah_err err;

		if (authorize(ka, req, &t, &id, &res) < 0)
			return res;
		if (auth_body_from_protobuf(req, &err) < 0)
			return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
		if (t.crd)
			return handle_crd(ka, req, &t);
		if (t.token)
			return auth_token_request(ka->api, ka->opts.creds, req, t.ns, t.name);
		if (t.k->review)
			return auth_review(ka->rbac, req, t.k, &id);
		if (auth_check_escalation(ka->api, ka->rbac, &id, req, t.k, t.ns, t.name, &err) < 0)
			return kubeapi_reply_status(req, &err, t.k->group, t.k->plural, t.name, NULL);
		res = t.scale ? handle_scale(ka, req, &t) : handle_resource(ka, req, &t);
		if (!t.group[0] && strcmp(t.plural, "namespaces") == 0 && !t.status &&
		    (strcmp(req->method, "POST") == 0 || strcmp(req->method, "PATCH") == 0 ||
		     strcmp(req->method, "PUT") == 0))
			auth_namespace_default_sa(ka->api, req, t.name);
		return res;
	}
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
	return reply_err(req, 404, "NotFound", "the server could not find the requested resource");
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
