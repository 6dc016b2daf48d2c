/* api.c - Kubernetes object semantics over the store; see api.h.
 *
 * Every write is a read-compute-write against one revision of the object: the
 * store's expect_rev precondition turns a concurrent change into -ESTALE,
 * which an update reports as 409 Conflict and a patch retries, as the API
 * server does.  Objects are written with their resourceVersion already inside
 * (the render callback), so reads hand out stored text unchanged. */
#include "api.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/gojson.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "kube/convert.h"
#include "kube/fieldmgr.h"
#include "kube/patch.h"
#include "kube/schema.h"
#include "kube/selector.h"

#define PATCH_RETRIES 8

struct admission {
	char *store_key;
	kube_admit_fn fn;
	void *userdata;
};

/* Work for the garbage collector: an owner that is gone (uid set, no
 * store_key), a terminating namespace (uid NULL), or an owner that is being
 * deleted and held by the collector's own finalizer (store_key and name
 * set): "orphan" (dependents lose their ownerReference first) or
 * "foregroundDeletion" (dependents go first; the owner waits for those with
 * blockOwnerDeletion=true). */
struct gc_item {
	char *uid;
	char *ns; /* "" for a cluster-scoped owner: look in every namespace */
	bool orphan;
	char *store_key, *name; /* an owner held by the orphan/foregroundDeletion finalizer */
	struct gc_item *next;
};

#define FINALIZER_ORPHAN "orphan"
#define FINALIZER_FOREGROUND "foregroundDeletion"

/* A namespace seen to exist, valid while the store's stamp for namespaces
 * is still `stamp` (see store_resource_stamp()). */
struct ns_seen {
	char *name;
	bool terminating;
	uint64_t stamp;
	struct ns_seen *next;
};

#define NS_SEEN_BUCKETS 256
#define NS_SEEN_MAX 4096

struct kube_api {
	store *store;
	const struct kube_registry *reg;
	struct admission *adm;
	size_t n_adm;
	pthread_t gc_thread;
	pthread_mutex_t gc_lock;
	pthread_cond_t gc_cond;
	struct gc_item *gc_head, *gc_tail;
	struct gc_item *gc_waiting; /* foreground deletions waiting for dependents */
	char **ns_terminating;
	size_t n_ns_terminating;
	bool gc_stop;
	bool gc_started;
	/* Every namespaced create checks its namespace: remembered here so
	 * that check is not a store read each time. */
	pthread_mutex_t ns_lock;
	struct ns_seen *ns_seen[NS_SEEN_BUCKETS];
	size_t n_ns_seen;
};

const char *kube_kind_resource_name(const struct kube_kind *k)
{
	return k->store_key;
}

int kube_err_not_found(ah_err *err, const struct kube_kind *k, const char *name)
{
	return ah_err_set(err, ENOENT, 404, "NotFound", "%s \"%s\" not found",
			  kube_kind_resource_name(k), name);
}

static int err_conflict(ah_err *err, const struct kube_kind *k, const char *name)
{
	return ah_err_set(err, ESTALE, 409, "Conflict",
			  "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
			  "please apply your changes to the latest version and try again",
			  kube_kind_resource_name(k), name);
}

static int err_store(ah_err *err, int r)
{
	return ah_err_set(err, r, 500, "InternalError", "storage error: %s", strerror(-r));
}

store *kube_api_store(struct kube_api *api)
{
	return api->store;
}

const struct kube_registry *kube_api_registry(struct kube_api *api)
{
	return api->reg;
}

int kube_api_add_admission(struct kube_api *api, const char *store_key, kube_admit_fn fn,
			   void *userdata)
{
	struct admission *a = realloc(api->adm, (api->n_adm + 1) * sizeof(*a));

	if (!a)
		return -ENOMEM;
	api->adm = a;
	a[api->n_adm].store_key = strdup(store_key);
	a[api->n_adm].fn = fn;
	a[api->n_adm].userdata = userdata;
	if (!a[api->n_adm].store_key)
		return -ENOMEM;
	api->n_adm++;
	return 0;
}

static int run_admission(struct kube_api *api, const struct kube_kind *k, enum kube_op op,
			 const json_t *old, json_t *obj, ah_err *err)
{
	size_t i;

	for (i = 0; i < api->n_adm; i++) {
		int r;

		if (strcmp(api->adm[i].store_key, k->store_key) != 0)
			continue;
		r = api->adm[i].fn(api->adm[i].userdata, k, op, old, obj, err);
		if (r < 0)
			return r;
	}
	return 0;
}

/* --- helpers over objects ------------------------------------------------ */

static json_t *meta_of(json_t *obj)
{
	json_t *m = json_object_get(obj, "metadata");

	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(obj, "metadata", m);
	}
	return m;
}

static const char *mstr(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(json_object_get(obj, "metadata"), key));
}

/* How an object becomes stored text.  The store calls render_obj() on its
 * single writer thread, the one serial step every write waits for, once the
 * revision is known.  So the JSON is serialised beforehand on the caller's
 * own thread (render_prepare) with a placeholder resourceVersion, and
 * render_obj() only splices the revision in.  The placeholder is random per
 * process and must occur exactly once in the text; otherwise (or without
 * memory) render_obj() serialises the object itself, as it always may. */
struct render_ctx {
	json_t *obj;
	char *pre;              /* the text with the placeholder, or NULL */
	size_t pre_len, rv_off; /* placeholder at pre + rv_off */
	json_t *saved_rv;       /* resourceVersion before render_prepare() */
	bool rendered;
};

#define RV_PLACEHOLDER_LEN 28

static char rv_placeholder[RV_PLACEHOLDER_LEN + 1];
static pthread_once_t rv_placeholder_once = PTHREAD_ONCE_INIT;

static void rv_placeholder_init(void)
{
	unsigned char b[(RV_PLACEHOLDER_LEN - 4) / 2];
	size_t i;

	util_random_bytes(b, sizeof(b));
	memcpy(rv_placeholder, "ahrv", 4);
	for (i = 0; i < sizeof(b); i++)
		snprintf(rv_placeholder + 4 + 2 * i, 3, "%02x", b[i]);
}

static void render_prepare(struct render_ctx *rc)
{
	json_t *meta = meta_of(rc->obj);
	char *s, *at;

	pthread_once(&rv_placeholder_once, rv_placeholder_init);
	rc->pre = NULL;
	rc->rendered = false;
	rc->saved_rv = json_incref(json_object_get(meta, "resourceVersion"));
	json_object_set_new(meta, "resourceVersion", json_string(rv_placeholder));
	s = json_dumps(rc->obj, JSON_COMPACT);
	at = s ? strstr(s, rv_placeholder) : NULL;
	if (!at || strstr(at + 1, rv_placeholder)) {
		free(s);
		return;
	}
	rc->pre = s;
	rc->pre_len = strlen(s);
	rc->rv_off = (size_t)(at - s);
}

/* After the store call: drop the text; if nothing was rendered, the object
 * gets back the resourceVersion it had. */
static void render_release(struct render_ctx *rc)
{
	if (!rc->rendered) {
		if (rc->saved_rv)
			json_object_set(meta_of(rc->obj), "resourceVersion", rc->saved_rv);
		else
			json_object_del(meta_of(rc->obj), "resourceVersion");
	}
	json_decref(rc->saved_rv);
	rc->saved_rv = NULL;
	free(rc->pre);
	rc->pre = NULL;
}

/* rc->pre with `rev` in place of the placeholder (rc->pre must be set). */
static char *splice_rev(const struct render_ctx *rc, int64_t rev, size_t *ret_len)
{
	size_t n, tail;
	char rv[32], *s;

	n = (size_t)snprintf(rv, sizeof(rv), "%lld", (long long)rev);
	tail = rc->pre_len - rc->rv_off - RV_PLACEHOLDER_LEN;
	s = malloc(rc->rv_off + n + tail + 1);
	if (!s)
		return NULL;
	memcpy(s, rc->pre, rc->rv_off);
	memcpy(s + rc->rv_off, rv, n);
	memcpy(s + rc->rv_off + n, rc->pre + rc->rv_off + RV_PLACEHOLDER_LEN, tail + 1);
	*ret_len = rc->rv_off + n + tail;
	return s;
}

static char *render_obj(int64_t rev, size_t *ret_len, void *userdata)
{
	struct render_ctx *rc = userdata;
	char rv[32], *s;

	snprintf(rv, sizeof(rv), "%lld", (long long)rev);
	json_object_set_new(meta_of(rc->obj), "resourceVersion", json_string(rv));
	rc->rendered = true;
	if (rc->pre)
		return splice_rev(rc, rev, ret_len);
	s = json_dumps(rc->obj, JSON_COMPACT);
	if (s)
		*ret_len = strlen(s);
	return s;
}

/* The text render_obj() stored for `rev`, for the caller's reply. */
static void render_keep(struct render_ctx *rc, int64_t rev, struct kube_opts *o)
{
	size_t len = 0;
	char *s;

	if (!o || !o->want_text || !rc->pre)
		return;
	s = splice_rev(rc, rev, &len);
	if (!s)
		return;
	free(o->text);
	o->text = s;
	o->text_len = len;
}

static int load_obj(const store_obj *so, json_t **ret, ah_err *err)
{
	json_error_t jerr;
	json_t *o = json_loadb(so->json, so->len, 0, &jerr);

	if (!o)
		return ah_err_set(err, EIO, 500, "InternalError", "stored object %s/%s is corrupt: %s",
				  so->ns, so->name, jerr.text);
	*ret = o;
	return 0;
}

/* The stored object, or NotFound / a store error. */
static int get_stored(struct kube_api *api, const struct kube_kind *k, const char *ns,
		      const char *name, store_obj **ret, ah_err *err)
{
	int r = store_get(api->store, k->store_key, k->namespaced ? ns : "", name, ret);

	if (r == -ENOENT)
		return kube_err_not_found(err, k, name);
	if (r < 0)
		return err_store(err, r);
	return 0;
}

int kube_get(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
	     json_t **ret, ah_err *err)
{
	store_obj *so = NULL;
	int r = get_stored(api, k, ns, name, &so, err);

	if (r < 0)
		return r;
	r = load_obj(so, ret, err);
	store_obj_free(so);
	return r;
}

int kube_get_text(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		  char **ret_text, size_t *ret_len, ah_err *err)
{
	store_obj *so = NULL;
	int r = get_stored(api, k, ns, name, &so, err);

	if (r < 0)
		return r;
	*ret_text = so->json;
	*ret_len = so->len;
	so->json = NULL;
	store_obj_free(so);
	return 0;
}

/* Is the name a lowercase RFC 1123 subdomain (or label when label_only)? */
static const char *name_problem(const char *name, bool label_only)
{
	size_t len = strlen(name), i;

	if (len == 0)
		return "empty";
	if (len > (label_only ? 63u : 253u))
		return label_only ? "must be no more than 63 characters"
				  : "must be no more than 253 characters";
	for (i = 0; i < len; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (alnum)
			continue;
		if (c == '-' && i > 0 && i + 1 < len)
			continue;
		if (c == '.' && !label_only && i > 0 && i + 1 < len && name[i - 1] != '.' &&
		    name[i - 1] != '-' && name[i + 1] != '-')
			continue;
		return label_only
			? "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
			: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
	}
	return NULL;
}

/* RBAC objects are named as path segments ("system:basic-user"), as
 * kube-apiserver's ValidateRBACName does. */
static const char *path_segment_problem(const char *name)
{
	if (!*name)
		return "empty";
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return "may not be '.' or '..'";
	if (strchr(name, '/'))
		return "may not contain '/'";
	if (strchr(name, '%'))
		return "may not contain '%'";
	return NULL;
}

static void add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_cause(json_t *causes, const char *reason, const char *field, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason", reason, "message", msg,
						"field", field));
}

/* Build the 422 error from the causes: "<Kind>.<group> "<name>" is invalid: ..." */
static int invalid_error(const struct kube_kind *k, const char *name, json_t *causes, ah_err *err)
{
	strbuf sb = STRBUF_INIT;
	size_t i, n = json_array_size(causes);
	json_t *c;

	if (k->group[0])
		strbuf_addf(&sb, "%s.%s \"%s\" is invalid: ", k->kind, k->group, name);
	else
		strbuf_addf(&sb, "%s \"%s\" is invalid: ", k->kind, name);
	if (n > 1)
		strbuf_addch(&sb, '[');
	json_array_foreach(causes, i, c) {
		const char *f = json_string_value(json_object_get(c, "field"));

		if (i)
			strbuf_adds(&sb, ", ");
		if (f && *f)
			strbuf_addf(&sb, "%s: ", f);
		strbuf_adds(&sb, json_string_value(json_object_get(c, "message")));
	}
	if (n > 1)
		strbuf_addch(&sb, ']');
	ah_err_set(err, EINVAL, 422, "Invalid", "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	return -EINVAL;
}

static bool is_secret(const struct kube_kind *k);

/* kube-apiserver's ValidateSecret for the Docker config types: the key
 * holds JSON (Go's syntax error, the value redacted).  A missing key is
 * let through, unlike kube-apiserver: upstream's own example manifest
 * agentClusterInstall-with-ignitionEndpoint.yaml has a dockerconfigjson
 * Secret holding only tls.crt, and every upstream example must apply. */
static int secret_validate(const json_t *obj, json_t *causes)
{
	const char *type = json_string_value(json_object_get(obj, "type")), *key, *b64;
	unsigned char *raw = NULL;
	char field[64], msg[256];
	size_t len = 0;
	int n = 0;

	if (type && strcmp(type, "kubernetes.io/dockerconfigjson") == 0)
		key = ".dockerconfigjson";
	else if (type && strcmp(type, "kubernetes.io/dockercfg") == 0)
		key = ".dockercfg";
	else
		return 0;
	snprintf(field, sizeof(field), "data[%s]", key);
	b64 = json_string_value(json_object_get(json_object_get(obj, "data"), key));
	/* Not base64 is the schema's cause, reported there. */
	if (!b64 || util_base64_decode(b64, strlen(b64), &raw, &len) < 0)
		return 0;
	if (gojson_check((const char *)raw, len, msg, sizeof(msg)) < 0) {
		add_cause(causes, "FieldValueInvalid", field, "Invalid value: \"<secret contents redacted>\": %s", msg);
		n = 1;
	}
	explicit_bzero(raw, len); /* a pull secret */
	free(raw);
	return n;
}

/* Validate metadata and the object against the kind's schema, after pruning
 * and defaulting.  Collects causes; returns the count.  With
 * fieldValidation=Strict an unknown field is a decoding error, not a cause:
 * 400 BadRequest "strict decoding error: unknown field \"spec.x\"" (every
 * unknown field named, comma-separated, as kube-apiserver does), reported
 * before any validation; then the return is negative with err set. */
static int check_object(const struct kube_kind *k, json_t *obj, struct kube_opts *o, json_t *causes,
			ah_err *err)
{
	strbuf strict = STRBUF_INIT;
	json_t *meta = json_object_get(obj, "metadata"), *pruned = json_array();
	const char *name = mstr(obj, "name");
	const char *problem;
	size_t i;
	json_t *p;
	int n = 0;

	if (name && (problem = strcmp(k->group, "rbac.authorization.k8s.io") == 0 ? path_segment_problem(name) :
			       name_problem(name, strcmp(k->plural, "namespaces") == 0))) {
		add_cause(causes, "FieldValueInvalid", "metadata.name", "Invalid value: \"%s\": %s", name,
			  problem);
		n++;
	}
	n += labels_validate(json_object_get(meta, "labels"), causes);
	n += annotations_validate(json_object_get(meta, "annotations"), causes);
	if (!k->builtin || json_is_true(json_object_get(k->schema, "x-kubernetes-preserve-unknown-fields")) == 0) {
		schema_prune(k->schema, obj, pruned);
		schema_default(k->schema, obj);
	}
	json_array_foreach(pruned, i, p) {
		const char *path = json_string_value(p);

		if (o && o->field_validation == KUBE_FV_STRICT) {
			strbuf_adds(&strict, strict.len ? ", " : "strict decoding error: ");
			strbuf_addf(&strict, "unknown field \"%s\"", path);
		} else if (o && o->warnings && o->field_validation == KUBE_FV_WARN) {
			char w[600];

			snprintf(w, sizeof(w), "unknown field \"%s\"", path);
			json_array_append_new(o->warnings, json_string(w));
		}
	}
	json_decref(pruned);
	if (strict.len) {
		ah_err_set(err, EINVAL, 400, "BadRequest", "%s", strict.buf);
		strbuf_release(&strict);
		return -EINVAL;
	}
	strbuf_release(&strict);
	n += schema_validate(k->schema, obj, causes);
	if (is_secret(k))
		n += secret_validate(obj, causes);
	return n;
}

static bool is_secret(const struct kube_kind *k)
{
	return k->builtin && strcmp(k->plural, "secrets") == 0;
}

/* Secrets: stringData is write-only and merges into data, base64-encoded. */
static void secret_fold_string_data(json_t *obj)
{
	json_t *sd = json_object_get(obj, "stringData"), *data, *v;
	const char *key;

	if (!json_is_object(sd))
		return;
	data = json_object_get(obj, "data");
	if (!json_is_object(data)) {
		data = json_object();
		json_object_set_new(obj, "data", data);
	}
	json_object_foreach(sd, key, v) {
		const char *s = json_string_value(v);
		char *b;

		if (!s)
			continue;
		b = util_base64_encode(s, strlen(s));
		if (b)
			json_object_set_new(data, key, json_string(b));
		free(b);
	}
	json_object_del(obj, "stringData");
}

/* Defaults kube-apiserver applies to built-in kinds on every write: a
 * Secret without a type is Opaque; a namespace carries the label
 * kubernetes.io/metadata.name with its own name, set and kept. */
static void builtin_defaults(const struct kube_kind *k, json_t *obj)
{
	if (!k->builtin || k->group[0])
		return;
	if (strcmp(k->plural, "secrets") == 0) {
		const char *t = json_string_value(json_object_get(obj, "type"));

		if (!t || !*t)
			json_object_set_new(obj, "type", json_string("Opaque"));
	} else if (strcmp(k->plural, "namespaces") == 0) {
		json_t *meta = meta_of(obj), *labels = json_object_get(meta, "labels");
		const char *name = mstr(obj, "name");

		if (!name || !*name)
			return;
		if (!json_is_object(labels)) {
			labels = json_object();
			json_object_set_new(meta, "labels", labels);
		}
		json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
	}
}

/* Everything but metadata and status: a change here bumps generation. */
static bool spec_member(const char *key)
{
	return strcmp(key, "metadata") != 0 && strcmp(key, "status") != 0;
}

static bool spec_equal(const json_t *a, const json_t *b)
{
	const char *key;
	json_t *v;
	size_t na = 0, nb = 0;

	json_object_foreach((json_t *)a, key, v) {
		if (!spec_member(key))
			continue;
		na++;
		if (!json_equal(v, json_object_get(b, key)))
			return false;
	}
	json_object_foreach((json_t *)b, key, v)
		nb += spec_member(key);
	return na == nb;
}

static size_t ns_bucket(const char *ns)
{
	uint32_t h = 2166136261u;       /* FNV-1a */

	for (; *ns; ns++)
		h = (h ^ (unsigned char)*ns) * 16777619u;
	return h % NS_SEEN_BUCKETS;
}

static void ns_seen_clear(struct kube_api *api)
{
	size_t i;

	for (i = 0; i < NS_SEEN_BUCKETS; i++) {
		while (api->ns_seen[i]) {
			struct ns_seen *e = api->ns_seen[i];

			api->ns_seen[i] = e->next;
			free(e->name);
			free(e);
		}
	}
	api->n_ns_seen = 0;
}

/* Only namespaces that exist are remembered, so asking for made-up names
 * cannot fill the table; a full table is simply emptied. */
static void ns_seen_put(struct kube_api *api, const char *ns, bool terminating, uint64_t stamp)
{
	size_t b = ns_bucket(ns);
	struct ns_seen *e;

	pthread_mutex_lock(&api->ns_lock);
	for (e = api->ns_seen[b]; e && strcmp(e->name, ns) != 0; e = e->next)
		;
	if (!e) {
		if (api->n_ns_seen >= NS_SEEN_MAX)
			ns_seen_clear(api);
		e = calloc(1, sizeof(*e));
		if (e)
			e->name = strdup(ns);
		if (!e || !e->name) {
			free(e);
			pthread_mutex_unlock(&api->ns_lock);
			return;
		}
		e->next = api->ns_seen[b];
		api->ns_seen[b] = e;
		api->n_ns_seen++;
	}
	e->terminating = terminating;
	e->stamp = stamp;
	pthread_mutex_unlock(&api->ns_lock);
}

static bool ns_exists(struct kube_api *api, const char *ns, bool *terminating)
{
	/* Read before the namespace: a write in between changes the stamp,
	 * so what is remembered below is never newer than its stamp. */
	uint64_t stamp = store_resource_stamp(api->store, "namespaces");
	struct ns_seen *e;
	store_obj *so = NULL;
	bool ok;

	pthread_mutex_lock(&api->ns_lock);
	for (e = api->ns_seen[ns_bucket(ns)]; e; e = e->next) {
		if (strcmp(e->name, ns) == 0 && e->stamp == stamp) {
			*terminating = e->terminating;
			pthread_mutex_unlock(&api->ns_lock);
			return true;
		}
	}
	pthread_mutex_unlock(&api->ns_lock);

	ok = store_get(api->store, "namespaces", "", ns, &so) == 0;
	*terminating = false;
	if (ok && strstr(so->json, "\"deletionTimestamp\""))
		*terminating = true;
	store_obj_free(so);
	if (ok)
		ns_seen_put(api, ns, *terminating, stamp);
	return ok;
}

static void random_suffix(char *buf)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char b[5];
	int i;

	util_random_bytes(b, sizeof(b));
	for (i = 0; i < 5; i++)
		buf[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
	buf[5] = '\0';
}

static int check_type_meta(const struct kube_kind *k, json_t *body, ah_err *err)
{
	const char *av = json_string_value(json_object_get(body, "apiVersion"));
	const char *kind = json_string_value(json_object_get(body, "kind"));

	if (!json_is_object(body))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "the body of the request is not a JSON object");
	if (!av || !*av) {
		json_object_set_new(body, "apiVersion", json_string(k->api_version));
		av = k->api_version;
	}
	if (!kind || !*kind) {
		json_object_set_new(body, "kind", json_string(k->kind));
		kind = k->kind;
	}
	if (strcmp(av, k->api_version) != 0 || strcmp(kind, k->kind) != 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "the API version in the data (%s) does not match the expected API version (%s)",
				  av, k->api_version);
	if (!json_is_object(json_object_get(body, "metadata")))
		json_object_set_new(body, "metadata", json_object());
	return 0;
}

/* The managedFields of a write: computed from what changed (Update), or
 * as server-side apply already set them (o->managed). */
static void fm_who_init(struct fm_who *who, const struct kube_kind *k, struct kube_opts *o, char *now, size_t nsz)
{
	util_now_rfc3339(now, nsz);
	who->manager = o && o->field_manager ? o->field_manager : "agenthub";
	who->api_version = k->api_version;
	who->subresource = o && o->status ? "status" : "";
	who->time = now;
	who->schema = k->builtin ? NULL : k->schema;
	who->status_separate = k->has_status;
}

/* managedFields a client sent ([{}] only: a reset), as kube-apiserver
 * reads them: entries whose operation is not Apply or Update, or whose
 * fieldsType is not FieldsV1, are 422 causes. */
static bool managed_is_reset(const json_t *mf)
{
	size_t i;
	json_t *e;

	if (!json_array_size(mf))
		return false;
	json_array_foreach(mf, i, e)
		if (!json_is_object(e) || json_object_size(e) != 0)
			return false;
	return true;
}

static int check_sent_managed(const json_t *mf, json_t *causes)
{
	size_t i, n = json_array_size(causes);
	json_t *e;

	if (!mf || json_is_null(mf) || managed_is_reset(mf))
		return 0;
	if (!json_is_array(mf)) {
		add_cause(causes, "FieldValueInvalid", "metadata.managedFields", "Invalid value: must be a list");
		return 1;
	}
	json_array_foreach(mf, i, e) {
		const char *op = json_string_value(json_object_get(e, "operation"));
		const char *ft = json_string_value(json_object_get(e, "fieldsType"));
		char field[80];

		if (!json_is_object(e)) {
			snprintf(field, sizeof(field), "metadata.managedFields[%zu]", i);
			add_cause(causes, "FieldValueInvalid", field, "Invalid value: must be an object");
			continue;
		}
		if (!op || (strcmp(op, "Apply") != 0 && strcmp(op, "Update") != 0)) {
			snprintf(field, sizeof(field), "metadata.managedFields[%zu].operation", i);
			add_cause(causes, "FieldValueNotSupported", field,
				  "Unsupported value: \"%s\": supported values: \"Apply\", \"Update\"", op ? op : "");
		}
		if (!ft || strcmp(ft, "FieldsV1") != 0) {
			snprintf(field, sizeof(field), "metadata.managedFields[%zu].fieldsType", i);
			add_cause(causes, "FieldValueNotSupported", field,
				  "Unsupported value: \"%s\": supported values: \"FieldsV1\"", ft ? ft : "");
		}
	}
	return json_array_size(causes) > n;
}

/* sent: the managedFields the client's object carried (NULL: none).  As
 * kube-apiserver: on the main resource, [{}] resets them (the write's own
 * changes are then all they hold), a non-empty list replaces the live ones
 * before the write is recorded on top, and an absent or empty list keeps
 * the live ones (clients that do not know the field never strip it); the
 * status subresource always starts from the live ones. */
static int record_managed_sent(const struct kube_kind *k, struct kube_opts *o, const json_t *old, json_t *obj,
			       const json_t *sent)
{
	struct fm_who who;
	json_t *base, *bmeta;
	char now[32];
	int r;

	if (o && o->managed) {
		if (json_array_size(o->managed))
			json_object_set(meta_of(obj), "managedFields", o->managed);
		else
			json_object_del(meta_of(obj), "managedFields");
		return 0;
	}
	fm_who_init(&who, k, o, now, sizeof(now));
	if ((o && o->status) || !json_array_size(sent))
		return fm_record_update(&who, old, obj);
	/* old with the sent entries in place of its own. */
	base = old ? json_copy((json_t *)old) : json_object();
	bmeta = old ? json_copy(json_object_get(old, "metadata")) : json_object();
	if (!base || !bmeta) {
		json_decref(base);
		json_decref(bmeta);
		return -ENOMEM;
	}
	if (managed_is_reset(sent))
		json_object_del(bmeta, "managedFields");
	else
		json_object_set(bmeta, "managedFields", (json_t *)sent);
	json_object_set_new(base, "metadata", bmeta);
	r = fm_record_update(&who, base, obj);
	json_decref(base);
	return r;
}

/* A write through a CRD version served converted from the storage version
 * (kube/convert.h): the body is checked in its own version first, as
 * kube-apiserver does (type meta, metadata, pruning with the served
 * version's schema and its unknown-field warnings or strict errors,
 * defaulting, validation), then converted.  0 and *conv (a new object in
 * the stored form), or a negative errno with err set. */
static int to_storage_version(const struct kube_kind *k, const json_t *body, struct kube_opts *o, json_t **conv,
			      ah_err *err)
{
	json_t *copy = json_deep_copy(body), *causes = o && o->causes ? json_incref(o->causes) : json_array();
	int n;

	*conv = NULL;
	n = copy ? check_type_meta(k, copy, err) : -ENOMEM;
	if (n == 0)
		n = check_object(k, copy, o, causes, err);
	if (n > 0)
		n = invalid_error(k, mstr(copy, "name") ? mstr(copy, "name") : "", causes, err);
	if (n == 0) {
		*conv = kube_convert(k, copy, true);
		if (!*conv)
			n = -ENOMEM;
	}
	json_decref(copy);
	json_decref(causes);
	return n;
}

int kube_create(struct kube_api *api, const struct kube_kind *k, const char *ns, json_t *body,
		struct kube_opts *o, json_t **ret, ah_err *err)
{
	if (kube_convert_is_version(k)) {
		json_t *conv;
		int cr = to_storage_version(k, body, o, &conv, err);

		if (cr < 0)
			return cr;
		cr = kube_create(api, k->stored_as, ns, conv, o, ret, err);
		json_decref(conv);
		return cr;
	}
	json_t *obj, *meta, *sent_mf = NULL, *causes = o && o->causes ? json_incref(o->causes) : json_array();
	const char *name, *bns;
	char uid[40], now[32], gen_name[300];
	struct render_ctx rc;
	bool terminating;
	int64_t rev = 0;
	int r, attempts;

	r = check_type_meta(k, body, err);
	if (r < 0)
		goto out_causes;
	obj = json_deep_copy(body);
	meta = meta_of(obj);
	bns = mstr(obj, "namespace");
	if (k->namespaced) {
		if (bns && *bns && ns && *ns && strcmp(bns, ns) != 0) {
			r = ah_err_set(err, EINVAL, 400, "BadRequest",
				       "the namespace of the provided object does not match the namespace sent on the request");
			goto out;
		}
		if (!ns || !*ns)
			ns = bns && *bns ? bns : "default";
		json_object_set_new(meta, "namespace", json_string(ns));
		if (!ns_exists(api, ns, &terminating)) {
			r = ah_err_set(err, ENOENT, 404, "NotFound", "namespaces \"%s\" not found", ns);
			goto out;
		}
		if (terminating) {
			r = ah_err_set(err, EPERM, 403, "Forbidden",
				       "%s \"%s\" is forbidden: unable to create new content in namespace %s because it is being terminated",
				       kube_kind_resource_name(k), mstr(obj, "name") ? mstr(obj, "name") : "", ns);
			goto out;
		}
	} else {
		json_object_del(meta, "namespace");
		ns = "";
	}
	/* Server-owned fields are never taken from the client. */
	json_object_del(meta, "uid");
	json_object_del(meta, "resourceVersion");
	json_object_del(meta, "creationTimestamp");
	json_object_del(meta, "deletionTimestamp");
	json_object_del(meta, "deletionGracePeriodSeconds");
	json_object_del(meta, "generation");
	sent_mf = json_incref(json_object_get(meta, "managedFields"));
	json_object_del(meta, "managedFields");
	json_object_del(meta, "selfLink");
	if (k->has_status)
		json_object_del(obj, "status");
	if (is_secret(k))
		secret_fold_string_data(obj);
	if (strcmp(k->plural, "namespaces") == 0 && !k->group[0]) {
		json_t *st = json_pack("{s:s}", "phase", "Active");
		json_t *spec = json_object_get(obj, "spec");

		json_object_set_new(obj, "status", st);
		if (!json_is_object(spec)) {
			spec = json_object();
			json_object_set_new(obj, "spec", spec);
		}
		if (!json_object_get(spec, "finalizers"))
			json_object_set_new(spec, "finalizers", json_pack("[s]", "kubernetes"));
	}
	name = mstr(obj, "name");
	if ((!name || !*name) && !json_string_value(json_object_get(meta, "generateName"))) {
		add_cause(causes, "FieldValueRequired", "metadata.name", "Required value: name or generateName is required");
		r = invalid_error(k, "", causes, err);
		goto out;
	}
	util_uuid4(uid, sizeof(uid));
	util_now_rfc3339(now, sizeof(now));
	json_object_set_new(meta, "uid", json_string(uid));
	json_object_set_new(meta, "creationTimestamp", json_string(now));
	if (!k->builtin)
		json_object_set_new(meta, "generation", json_integer(1));

	for (attempts = 0;; attempts++) {
		if (!name || !*name) {
			char sfx[8];

			random_suffix(sfx);
			snprintf(gen_name, sizeof(gen_name), "%s%s",
				 json_string_value(json_object_get(meta, "generateName")), sfx);
			json_object_set_new(meta, "name", json_string(gen_name));
		}
		builtin_defaults(k, obj);
		if (attempts == 0) {
			int bad, bad_mf;

			bad_mf = check_sent_managed(sent_mf, causes);
			bad = check_object(k, obj, o, causes, err);
			if (bad == 0 && bad_mf)
				bad = 1;
			if (bad < 0) {
				r = bad;
				goto out;
			}
			if (bad > 0) {
				r = invalid_error(k, mstr(obj, "name") ? mstr(obj, "name") : "", causes, err);
				goto out;
			}
			r = run_admission(api, k, KUBE_CREATE, NULL, obj, err);
			if (r < 0)
				goto out;
			r = record_managed_sent(k, o, NULL, obj, sent_mf);
			if (r < 0) {
				r = ah_err_set(err, r, 500, "InternalError", "out of memory");
				goto out;
			}
		}
		if (o && o->dry_run) {
			store_obj *so = NULL;

			r = store_get(api->store, k->store_key, ns, mstr(obj, "name"), &so);
			store_obj_free(so);
			if (r == 0) {
				r = ah_err_set(err, EEXIST, 409, "AlreadyExists", "%s \"%s\" already exists",
					       kube_kind_resource_name(k), mstr(obj, "name"));
				goto out;
			}
			r = 0;
			break;
		}
		rc = (struct render_ctx){ .obj = obj };
		render_prepare(&rc);
		r = store_create(api->store, k->store_key, ns, mstr(obj, "name"), render_obj, &rc, &rev);
		if (r == 0)
			render_keep(&rc, rev, o);
		render_release(&rc);
		if (r == -EEXIST && (!name || !*name) && attempts < 8)
			continue;
		if (r == -EEXIST) {
			r = ah_err_set(err, EEXIST, 409, "AlreadyExists", "%s \"%s\" already exists",
				       kube_kind_resource_name(k), mstr(obj, "name"));
			goto out;
		}
		if (r < 0) {
			r = err_store(err, r);
			goto out;
		}
		break;
	}
	*ret = obj;
	json_decref(causes);
	json_decref(sent_mf);
	return 0;
out:
	json_decref(obj);
out_causes:
	json_decref(causes);
	json_decref(sent_mf);
	return r;
}

static bool finalizers_empty(const json_t *obj)
{
	return json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) == 0;
}

static bool is_deleting(const json_t *obj)
{
	return mstr(obj, "deletionTimestamp") != NULL;
}

static bool has_finalizer(const json_t *obj, const char *f)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), f) == 0)
			return true;
	return false;
}

/* The garbage collector's own writes (an owner reference of a dependent, an
 * orphan or foregroundDeletion finalizer of an owner) are recorded as
 * kube-controller-manager's, as its PATCHes are in kube-apiserver: what it
 * removes is no one's any more. */
static void gc_record(const struct kube_kind *k, const json_t *old, json_t *upd)
{
	struct kube_opts o = { .field_manager = "kube-controller-manager" };

	if (record_managed_sent(k, &o, old, upd, NULL) < 0)
		log_warn("garbage collector: recording managedFields of %s: out of memory", k->store_key);
}

static void gc_enqueue(struct kube_api *api, const char *uid, const char *ns, bool orphan);
static void gc_enqueue_held(struct kube_api *api, const struct kube_kind *k, const char *ns,
			    const char *name, const char *uid);
static int remove_now(struct kube_api *api, const struct kube_kind *k, const char *ns,
		      const char *name, json_t *obj, int64_t expect_rev, bool orphan, ah_err *err);

/* Compute the object an update stores, from the old one and the client's.
 * Returns 0 with *ret, or an error.  With body_owned the caller gives body
 * up (a patch result nobody else sees) and it becomes *ret as it is. */
static int merge_update(const struct kube_kind *k, const json_t *old, json_t *body, bool body_owned,
			struct kube_opts *o, json_t **ret, ah_err *err)
{
	json_t *obj, *meta, *ometa = json_object_get(old, "metadata");
	const char *keep[] = { "uid", "creationTimestamp", "deletionTimestamp",
			       "deletionGracePeriodSeconds", "namespace", "name", NULL };
	size_t i;

	if (o && o->status) {
		/* Status subresource: take only .status from the client. */
		obj = json_deep_copy(old);
		if (json_object_get(body, "status"))
			json_object_set(obj, "status", json_object_get(body, "status"));
		else
			json_object_del(obj, "status");
		*ret = obj;
		return 0;
	}
	obj = body_owned ? json_incref(body) : json_deep_copy(body);
	meta = meta_of(obj);
	for (i = 0; keep[i]; i++) {
		json_t *v = json_object_get(ometa, keep[i]);

		if (v)
			json_object_set(meta, keep[i], v);
		else
			json_object_del(meta, keep[i]);
	}
	json_object_del(meta, "managedFields");
	json_object_del(meta, "selfLink");
	if (k->has_status) {
		json_t *st = json_object_get(old, "status");

		if (st)
			json_object_set(obj, "status", st);
		else
			json_object_del(obj, "status");
	}
	if (strcmp(k->plural, "namespaces") == 0 && !k->group[0]) {
		json_object_set(obj, "status", json_object_get(old, "status"));
		json_object_set(obj, "spec", json_object_get(old, "spec"));
	}
	if (is_secret(k))
		secret_fold_string_data(obj);
	builtin_defaults(k, obj);
	/* A Secret's type is immutable (ValidateSecretUpdate). */
	if (is_secret(k)) {
		const char *ot = json_string_value(json_object_get(old, "type"));
		const char *nt = json_string_value(json_object_get(obj, "type"));

		if (ot && nt && strcmp(ot, nt) != 0) {
			json_t *causes = o && o->causes ? json_incref(o->causes) : json_array();
			int r;

			add_cause(causes, "FieldValueInvalid", "type", "Invalid value: \"%s\": field is immutable", nt);
			r = invalid_error(k, mstr(old, "name"), causes, err);
			json_decref(causes);
			json_decref(obj);
			return r;
		}
	}
	/* No new finalizers on an object that is going away. */
	if (is_deleting(old)) {
		json_t *nf = json_object_get(meta, "finalizers"), *of = json_object_get(ometa, "finalizers"), *f, *g;
		size_t j;

		json_array_foreach(nf, i, f) {
			bool found = false;

			json_array_foreach(of, j, g)
				if (json_equal(f, g))
					found = true;
			if (!found) {
				json_t *causes = o && o->causes ? json_incref(o->causes) : json_array();
				int r;

				add_cause(causes, "FieldValueForbidden", "metadata.finalizers",
					  "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"%s\"}",
					  json_string_value(f) ? json_string_value(f) : "");
				r = invalid_error(k, mstr(old, "name"), causes, err);
				json_decref(causes);
				json_decref(obj);
				return r;
			}
		}
	}
	*ret = obj;
	return 0;
}

/* The shared tail of update and patch: validate, admit, write at old_rev.
 * body_rv: the resourceVersion the client sent ("" = unconditional);
 * body_owned: as merge_update(). */
static int do_update(struct kube_api *api, const struct kube_kind *k, const char *ns,
		     const char *name, json_t *old, int64_t old_rev, json_t *body, bool body_owned,
		     const char *body_rv, struct kube_opts *o, json_t **ret, ah_err *err)
{
	json_t *obj = NULL, *sent_mf = NULL, *causes = o && o->causes ? json_incref(o->causes) : json_array();
	struct render_ctx rc;
	int64_t new_rev = 0;
	bool bad_mf = false;
	int r;

	if (body_rv && *body_rv && strtoll(body_rv, NULL, 10) != old_rev) {
		r = err_conflict(err, k, name);
		goto out;
	}
	sent_mf = json_incref(json_object_get(json_object_get(body, "metadata"), "managedFields"));
	r = merge_update(k, old, body, body_owned, o, &obj, err);
	if (r < 0)
		goto out;
	bad_mf = !(o && o->status) && check_sent_managed(sent_mf, causes);
	/* Same resourceVersion as the old one while we compare and validate. */
	json_object_set(meta_of(obj), "resourceVersion", json_object_get(json_object_get(old, "metadata"), "resourceVersion"));
	if (!k->builtin) {
		json_int_t gen = json_integer_value(json_object_get(json_object_get(old, "metadata"), "generation"));

		if (gen < 1)
			gen = 1;
		if (!spec_equal(old, obj))
			gen++;
		json_object_set_new(meta_of(obj), "generation", json_integer(gen));
	}
	r = check_object(k, obj, o, causes, err);
	if (r < 0)
		goto out;
	if (r > 0 || bad_mf) {
		r = invalid_error(k, name, causes, err);
		goto out;
	}
	r = run_admission(api, k, KUBE_UPDATE, old, obj, err);
	if (r < 0)
		goto out;
	r = record_managed_sent(k, o, old, obj, sent_mf);
	if (r < 0) {
		r = ah_err_set(err, r, 500, "InternalError", "out of memory");
		goto out;
	}
	if (json_equal(old, obj)) {
		/* A no-op update writes nothing and keeps the resourceVersion. */
		*ret = obj;
		obj = NULL;
		r = 0;
		goto out;
	}
	if (is_deleting(obj) && finalizers_empty(obj)) {
		if (o && o->dry_run) {
			*ret = obj;
			obj = NULL;
			r = 0;
			goto out;
		}
		r = remove_now(api, k, ns, name, obj, old_rev, false, err);
		if (r == 0) {
			*ret = obj;
			obj = NULL;
		}
		goto out;
	}
	if (o && o->dry_run) {
		*ret = obj;
		obj = NULL;
		r = 0;
		goto out;
	}
	rc = (struct render_ctx){ .obj = obj };
	render_prepare(&rc);
	r = store_update(api->store, k->store_key, ns, name, old_rev, render_obj, &rc, &new_rev);
	if (r == 0)
		render_keep(&rc, new_rev, o);
	render_release(&rc);
	if (r == -ESTALE) {
		r = err_conflict(err, k, name);
		goto out;
	}
	if (r == -ENOENT) {
		r = kube_err_not_found(err, k, name);
		goto out;
	}
	if (r < 0) {
		r = err_store(err, r);
		goto out;
	}
	*ret = obj;
	obj = NULL;
out:
	json_decref(obj);
	json_decref(causes);
	json_decref(sent_mf);
	return r;
}

static int get_with_rev(struct kube_api *api, const struct kube_kind *k, const char *ns,
			const char *name, json_t **ret, int64_t *ret_rev, ah_err *err)
{
	store_obj *so = NULL;
	int r = get_stored(api, k, ns, name, &so, err);

	if (r < 0)
		return r;
	*ret_rev = so->rev;
	r = load_obj(so, ret, err);
	store_obj_free(so);
	return r;
}

int kube_update(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		json_t *body, struct kube_opts *o, json_t **ret, ah_err *err)
{
	json_t *old = NULL;
	const char *bname, *bns, *rv;
	int64_t rev;
	int r;

	if (kube_convert_is_version(k)) {
		json_t *conv;

		r = to_storage_version(k, body, o, &conv, err);
		if (r < 0)
			return r;
		r = kube_update(api, k->stored_as, ns, name, conv, o, ret, err);
		json_decref(conv);
		return r;
	}
	if (!k->namespaced)
		ns = "";
	r = check_type_meta(k, body, err);
	if (r < 0)
		return r;
	bname = mstr(body, "name");
	bns = mstr(body, "namespace");
	if (bname && strcmp(bname, name) != 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "the name of the object (%s) does not match the name on the URL (%s)", bname, name);
	if (k->namespaced && bns && *bns && strcmp(bns, ns) != 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "the namespace of the provided object does not match the namespace sent on the request");
	rv = mstr(body, "resourceVersion");
	if (!k->builtin && (!rv || !*rv)) {
		json_t *causes = o && o->causes ? json_incref(o->causes) : json_array();

		add_cause(causes, "FieldValueInvalid", "metadata.resourceVersion",
			  "Invalid value: 0x0: must be specified for an update");
		r = invalid_error(k, name, causes, err);
		json_decref(causes);
		return r;
	}
	r = get_with_rev(api, k, ns, name, &old, &rev, err);
	if (r < 0)
		return r;
	r = do_update(api, k, ns, name, old, rev, body, false, rv, o, ret, err);
	json_decref(old);
	return r;
}

/* Server-side apply: config is the applier's whole intent for the fields it
 * manages (see fieldmgr.h).  Creates the object when absent. */
static int kube_apply(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		      const json_t *patch, struct kube_opts *o, json_t **ret, ah_err *err)
{
	struct kube_opts none = { 0 };
	json_t *config;
	const char *cname;
	int attempt, r = 0;

	if (!o)
		o = &none;
	if (!o->field_manager || !*o->field_manager)
		return ah_err_set(err, EINVAL, 422, "Invalid",
				  "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply requests");
	if (!json_is_object(patch))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "error decoding YAML: the applied configuration is not an object");
	if (!json_string_value(json_object_get(patch, "apiVersion")) || !json_string_value(json_object_get(patch, "kind")))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "Object 'Kind' is missing in '%s'", "the applied configuration");
	cname = mstr(patch, "name");
	if (cname && strcmp(cname, name) != 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "the name of the object (%s) does not match the name on the URL (%s)", cname, name);
	config = json_deep_copy(patch);
	if (!config)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	r = check_type_meta(k, config, err);
	if (r < 0) {
		json_decref(config);
		return r;
	}
	json_object_set_new(meta_of(config), "name", json_string(name));
	if (k->namespaced)
		json_object_set_new(meta_of(config), "namespace", json_string(ns));
	/* The main resource ignores status and the status subresource all but
	 * status (kube's reset fields). */
	if (k->has_status && !o->status)
		json_object_del(config, "status");
	for (attempt = 0; attempt < PATCH_RETRIES; attempt++) {
		json_t *old = NULL, *applied = NULL, *managed;
		struct fm_who who;
		char now[32];
		const char *rv;
		int64_t rev = 0;

		fm_who_init(&who, k, o, now, sizeof(now));
		r = get_with_rev(api, k, ns, name, &old, &rev, err);
		if (r == -ENOENT) {
			if (o->status) {
				json_decref(config);
				return r;
			}
			ah_err_clear(err);
			r = fm_apply(&who, NULL, config, o->force, o->causes, &applied, err);
			if (r < 0)
				break;
			managed = json_incref(json_object_get(json_object_get(applied, "metadata"), "managedFields"));
			o->managed = managed ? managed : json_array();
			r = kube_create(api, k, ns, applied, o, ret, err);
			json_decref(o->managed);
			o->managed = NULL;
			json_decref(applied);
			if (r == -EEXIST)
				continue; /* created meanwhile: apply to it */
			if (r == 0)
				o->created = true;
			break;
		}
		if (r < 0)
			break;
		r = fm_apply(&who, old, config, o->force, o->causes, &applied, err);
		if (r < 0) {
			json_decref(old);
			break;
		}
		managed = json_incref(json_object_get(json_object_get(applied, "metadata"), "managedFields"));
		o->managed = managed ? managed : json_array();
		/* A resourceVersion in the configuration is a precondition. */
		rv = mstr(config, "resourceVersion");
		r = do_update(api, k, ns, name, old, rev, applied, true, rv ? rv : "", o, ret, err);
		json_decref(o->managed);
		o->managed = NULL;
		json_decref(old);
		json_decref(applied);
		if (r == -ESTALE && !rv)
			continue;
		break;
	}
	json_decref(config);
	return r;
}

int kube_patch(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
	       const char *patch_type, const json_t *patch, struct kube_opts *o, json_t **ret,
	       ah_err *err)
{
	int attempt, r = 0;

	/* A CRD version served converted from the storage version: the patch
	 * applies to the object as that version shows it, which is then
	 * checked in that version and converted back (kube-apiserver patches
	 * in the request's version too).  An apply configuration is converted
	 * as it is. */
	const struct kube_kind *view = kube_convert_is_version(k) ? k : NULL;

	if (view)
		k = view->stored_as;
	if (!k->namespaced)
		ns = "";
	if (strstr(patch_type, "apply-patch")) {
		json_t *conv = view ? kube_convert_partial(view, patch, true) : json_incref((json_t *)patch);

		if (!conv)
			return -ENOMEM;
		r = kube_apply(api, k, ns, name, conv, o, ret, err);
		json_decref(conv);
		return r;
	}
	for (attempt = 0; attempt < PATCH_RETRIES; attempt++) {
		json_t *old = NULL, *patched = NULL, *base;
		const char *rv, *orv;
		bool precondition, merge = false;
		int64_t rev;

		r = get_with_rev(api, k, ns, name, &old, &rev, err);
		if (r < 0)
			return r;
		base = view ? kube_convert(view, old, false) : json_incref(old);
		if (!base) {
			json_decref(old);
			return -ENOMEM;
		}
		if (strstr(patch_type, "json-patch"))
			r = patch_json(base, patch, &patched, err);
		else if (strstr(patch_type, "strategic-merge-patch"))
			r = patch_strategic(base, patch, k->smp_lists, &patched, err);
		else {
			merge = true;
			r = patch_merge(base, patch, &patched, err);
		}
		json_decref(base);
		if (r < 0) {
			json_decref(old);
			return r;
		}
		if (view && json_is_object(patched)) {
			json_t *conv = NULL;

			r = to_storage_version(view, patched, o, &conv, err);
			json_decref(patched);
			if (r < 0) {
				json_decref(old);
				return r;
			}
			/* The conversion's result shares nothing with the patch. */
			patched = conv;
			merge = true;
		}
		if (!json_is_object(patched)) {
			json_decref(old);
			json_decref(patched);
			return ah_err_set(err, EINVAL, 422, "Invalid", "the patch did not produce an object");
		}
		/* A resourceVersion in the patch is a precondition; otherwise the
		 * patch applies to whatever is current (retrying on a race). */
		rv = mstr(patched, "resourceVersion");
		orv = mstr(old, "resourceVersion");
		if (rv && orv && strcmp(rv, orv) == 0)
			rv = NULL;
		precondition = rv != NULL;
		if (check_type_meta(k, patched, err) < 0) {
			json_decref(old);
			json_decref(patched);
			return -EINVAL;
		}
		/* A merge patch's result shares nothing with old or the patch
		 * (patch_merge copies both), so do_update may take it as it is;
		 * the other two may share parts of the patch, which a retry
		 * applies again.  rv is not used after the call. */
		r = do_update(api, k, ns, name, old, rev, patched, merge, rv ? rv : "", o, ret, err);
		json_decref(old);
		json_decref(patched);
		if (r == -ESTALE && !precondition)
			continue;
		return r;
	}
	return r;
}

/* Remove from the store and queue the dependents for the collector. */
static int remove_now(struct kube_api *api, const struct kube_kind *k, const char *ns,
		      const char *name, json_t *obj, int64_t expect_rev, bool orphan, ah_err *err)
{
	struct render_ctx rc = { .obj = obj };
	int r = store_delete(api->store, k->store_key, ns, name, expect_rev, render_obj, &rc, NULL);

	if (r == -ESTALE)
		return err_conflict(err, k, name);
	if (r == -ENOENT)
		return kube_err_not_found(err, k, name);
	if (r < 0)
		return err_store(err, r);
	if (mstr(obj, "uid"))
		gc_enqueue(api, mstr(obj, "uid"), k->namespaced ? ns : "", orphan);
	if (!k->group[0] && strcmp(k->plural, "namespaces") == 0) {
		/* Nothing may outlive its namespace (the namespace waited for its
		 * content through its finalizer, see ns_sweep()). */
	}
	return 0;
}

int kube_delete(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
		struct kube_opts *o, json_t **ret, ah_err *err)
{
	json_t *obj = NULL;
	int64_t rev;
	int r, attempt;
	bool orphan = o && o->propagation && strcmp(o->propagation, "Orphan") == 0;
	bool foreground = o && o->propagation && strcmp(o->propagation, "Foreground") == 0;
	bool is_ns = !k->group[0] && strcmp(k->plural, "namespaces") == 0;
	/* Orphan and Foreground deletions are carried out by the collector
	 * under a finalizer, as kube-apiserver does: the object stays, with a
	 * deletionTimestamp, until its dependents are dealt with. */
	bool held = (orphan || foreground) && !is_ns;

	/* kube-apiserver's NamespaceLifecycle admission: the system
	 * namespaces stay. */
	if (is_ns && (strcmp(name, "default") == 0 || strcmp(name, "kube-system") == 0 ||
		      strcmp(name, "kube-public") == 0))
		return ah_err_set(err, EPERM, 403, "Forbidden",
				  "namespaces \"%s\" is forbidden: this namespace may not be deleted", name);
	if (!k->namespaced)
		ns = "";
	for (attempt = 0; attempt < PATCH_RETRIES; attempt++) {
		r = get_with_rev(api, k, ns, name, &obj, &rev, err);
		if (r < 0)
			return r;
		if (o && o->precondition_uid && *o->precondition_uid &&
		    strcmp(o->precondition_uid, mstr(obj, "uid") ? mstr(obj, "uid") : "") != 0) {
			json_decref(obj);
			return ah_err_set(err, ESTALE, 409, "Conflict",
					  "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in precondition: %s, UID in object meta: %s",
					  kube_kind_resource_name(k), name, o->precondition_uid,
					  mstr(obj, "uid") ? mstr(obj, "uid") : "");
		}
		if (o && o->precondition_rv && *o->precondition_rv &&
		    strcmp(o->precondition_rv, mstr(obj, "resourceVersion") ? mstr(obj, "resourceVersion") : "") != 0) {
			json_decref(obj);
			return ah_err_set(err, ESTALE, 409, "Conflict",
					  "Operation cannot be fulfilled on %s \"%s\": Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
					  kube_kind_resource_name(k), name, o->precondition_rv,
					  mstr(obj, "resourceVersion") ? mstr(obj, "resourceVersion") : "");
		}
		r = run_admission(api, k, KUBE_DELETE, obj, obj, err);
		if (r < 0) {
			json_decref(obj);
			return r;
		}
		if (is_deleting(obj)) {
			/* Deleting again changes nothing, but a foreground delete
			 * of an object other finalizers hold: kube-apiserver adds
			 * foregroundDeletion then. */
			if (!foreground || is_ns || has_finalizer(obj, FINALIZER_FOREGROUND) ||
			    has_finalizer(obj, FINALIZER_ORPHAN)) {
				*ret = obj;
				return 0;
			}
		}
		if (!finalizers_empty(obj) || is_ns || held) {
			/* Finalizers hold it: mark it and let their owners finish.
			 * A namespace always goes through Terminating so its content
			 * is removed first. */
			json_t *upd = json_deep_copy(obj);
			struct render_ctx rc = { .obj = upd };
			char now[32];

			util_now_rfc3339(now, sizeof(now));
			if (!is_deleting(upd)) {
				json_object_set_new(meta_of(upd), "deletionTimestamp", json_string(now));
				json_object_set_new(meta_of(upd), "deletionGracePeriodSeconds", json_integer(0));
			}
			if (is_ns)
				json_object_set_new(upd, "status", json_pack("{s:s}", "phase", "Terminating"));
			if (held && !is_ns) {
				json_t *fin = json_object_get(meta_of(upd), "finalizers");

				if (!json_is_array(fin)) {
					fin = json_array();
					json_object_set_new(meta_of(upd), "finalizers", fin);
				}
				json_array_append_new(fin, json_string(orphan ? FINALIZER_ORPHAN : FINALIZER_FOREGROUND));
			}
			json_decref(obj);
			if (o && o->dry_run) {
				*ret = upd;
				return 0;
			}
			r = store_update(api->store, k->store_key, ns, name, rev, render_obj, &rc, NULL);
			if (r == -ESTALE) {
				json_decref(upd);
				continue;
			}
			if (r < 0) {
				json_decref(upd);
				return err_store(err, r);
			}
			if (is_ns)
				gc_enqueue(api, NULL, name, false);
			else if (held)
				gc_enqueue_held(api, k, ns, name, mstr(upd, "uid"));
			*ret = upd;
			return 0;
		}
		if (o && o->dry_run) {
			*ret = obj;
			return 0;
		}
		r = remove_now(api, k, ns, name, obj, rev, orphan, err);
		if (r == -ESTALE) {
			json_decref(obj);
			continue;
		}
		if (r < 0) {
			json_decref(obj);
			return r;
		}
		*ret = obj;
		return 0;
	}
	return err_conflict(err, k, name);
}

/* --- garbage collection and namespace termination ------------------------ */

static void gc_enqueue(struct kube_api *api, const char *uid, const char *ns, bool orphan)
{
	struct gc_item *it = calloc(1, sizeof(*it));

	if (!it)
		return;
	it->uid = uid ? strdup(uid) : NULL;
	it->ns = strdup(ns ? ns : "");
	it->orphan = orphan;
	pthread_mutex_lock(&api->gc_lock);
	if (api->gc_tail)
		api->gc_tail->next = it;
	else
		api->gc_head = it;
	api->gc_tail = it;
	pthread_cond_signal(&api->gc_cond);
	pthread_mutex_unlock(&api->gc_lock);
}

static void gc_enqueue_held(struct kube_api *api, const struct kube_kind *k, const char *ns,
			    const char *name, const char *uid)
{
	struct gc_item *it = calloc(1, sizeof(*it));

	if (!it)
		return;
	it->uid = strdup(uid ? uid : "");
	it->ns = strdup(k->namespaced && ns ? ns : "");
	it->store_key = strdup(k->store_key);
	it->name = strdup(name);
	if (!it->uid || !it->ns || !it->store_key || !it->name) {
		free(it->uid);
		free(it->ns);
		free(it->store_key);
		free(it->name);
		free(it);
		return;
	}
	pthread_mutex_lock(&api->gc_lock);
	if (api->gc_tail)
		api->gc_tail->next = it;
	else
		api->gc_head = it;
	api->gc_tail = it;
	pthread_cond_signal(&api->gc_cond);
	pthread_mutex_unlock(&api->gc_lock);
}

static void gc_item_free(struct gc_item *it)
{
	free(it->uid);
	free(it->ns);
	free(it->store_key);
	free(it->name);
	free(it);
}

struct dep_ref {
	char *store_key, *ns, *name;
};

struct dep_scan {
	const char *uid;
	const char *ns_only; /* namespace being terminated: collect everything */
	struct dep_ref *refs;
	size_t n, alloc;
};

static int dep_visit(const store_obj *so, void *userdata)
{
	struct dep_scan *ds = userdata;
	struct dep_ref *p;

	if (ds->uid) {
		char needle[64];

		snprintf(needle, sizeof(needle), "\"uid\":\"%s\"", ds->uid);
		/* Cheap text filter before anything is parsed: the owner's uid must
		 * appear somewhere other than the object's own uid. */
		if (!strstr(so->json, "\"ownerReferences\"") || !strstr(so->json, needle))
			return 0;
	} else if (strcmp(so->ns, ds->ns_only) != 0) {
		return 0;
	}
	if (ds->n == ds->alloc) {
		size_t na = ds->alloc ? ds->alloc * 2 : 16;

		p = realloc(ds->refs, na * sizeof(*p));
		if (!p)
			return -ENOMEM;
		ds->refs = p;
		ds->alloc = na;
	}
	p = &ds->refs[ds->n++];
	p->store_key = strdup(so->resource);
	p->ns = strdup(so->ns);
	p->name = strdup(so->name);
	return 0;
}

static void dep_scan_release(struct dep_scan *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++) {
		free(ds->refs[i].store_key);
		free(ds->refs[i].ns);
		free(ds->refs[i].name);
	}
	free(ds->refs);
}

/* An object lost its owner `uid`: drop the reference, and delete the object
 * when no owner is left (unless orphaning). */
static void gc_dependent(struct kube_api *api, const struct dep_ref *d, const char *uid, bool orphan)
{
	const struct kube_kind *k = kube_registry_by_store_key(api->reg, d->store_key);
	int attempt;

	if (!k)
		return;
	for (attempt = 0; attempt < PATCH_RETRIES; attempt++) {
		json_t *obj = NULL, *refs, *ref, *keep;
		int64_t rev;
		ah_err err;
		size_t i;
		bool found = false;
		int r;

		if (get_with_rev(api, k, d->ns, d->name, &obj, &rev, &err) < 0)
			return;
		refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
		keep = json_array();
		json_array_foreach(refs, i, ref) {
			if (strcmp(json_string_value(json_object_get(ref, "uid")) ? json_string_value(json_object_get(ref, "uid")) : "", uid) == 0)
				found = true;
			else
				json_array_append(keep, ref);
		}
		if (!found) {
			json_decref(keep);
			json_decref(obj);
			return;
		}
		if (json_array_size(keep) > 0 || orphan) {
			json_t *upd = json_deep_copy(obj);
			struct render_ctx rc = { .obj = upd };

			if (json_array_size(keep) > 0)
				json_object_set(meta_of(upd), "ownerReferences", keep);
			else
				json_object_del(meta_of(upd), "ownerReferences");
			gc_record(k, obj, upd);
			r = store_update(api->store, k->store_key, d->ns, d->name, rev, render_obj, &rc, NULL);
			json_decref(upd);
		} else {
			json_t *ret = NULL;
			struct kube_opts o = { .propagation = "Background" };

			r = kube_delete(api, k, d->ns, d->name, &o, &ret, &err);
			json_decref(ret);
			if (r < 0 && r != -ENOENT)
				log_warn("garbage collector: deleting %s %s/%s: %s", k->store_key, d->ns,
					 d->name, err.message);
			r = 0;
		}
		json_decref(keep);
		json_decref(obj);
		if (r != -ESTALE)
			return;
	}
}

static void gc_owner_gone(struct kube_api *api, struct gc_item *it)
{
	struct dep_scan ds = { .uid = it->uid };
	size_t i;

	/* Namespaced dependents live in the owner's namespace; a cluster-scoped
	 * owner may own objects anywhere. */
	if (store_list(api->store, NULL, NULL, NULL, NULL, dep_visit, &ds, NULL) == 0) {
		for (i = 0; i < ds.n; i++)
			if (!*it->ns || strcmp(ds.refs[i].ns, it->ns) == 0)
				gc_dependent(api, &ds.refs[i], it->uid, it->orphan);
	}
	dep_scan_release(&ds);
}

/* Whether d still names owner `uid` with blockOwnerDeletion=true (an owner
 * deleted in the foreground waits for it); false once it is gone. */
static bool dep_blocks(struct kube_api *api, const struct dep_ref *d, const char *uid, bool *ret_deleting,
		       bool *ret_refers)
{
	const struct kube_kind *k = kube_registry_by_store_key(api->reg, d->store_key);
	json_t *obj = NULL, *ref;
	int64_t rev;
	ah_err err;
	size_t i;
	bool blocks = false;

	*ret_deleting = false;
	*ret_refers = false;
	if (!k || get_with_rev(api, k, d->ns, d->name, &obj, &rev, &err) < 0)
		return false;
	*ret_deleting = is_deleting(obj);
	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), i, ref) {
		const char *u = json_string_value(json_object_get(ref, "uid"));

		if (u && strcmp(u, uid) == 0) {
			*ret_refers = true;
			if (json_is_true(json_object_get(ref, "blockOwnerDeletion")))
				blocks = true;
		}
	}
	json_decref(obj);
	return blocks;
}

/* Whether any object names `uid` as an owner (a cheap text scan: it may say
 * yes for an object whose own uid is `uid` and that has owners). */
static bool has_dependents(struct kube_api *api, const char *uid)
{
	struct dep_scan ds = { .uid = uid };
	size_t i;
	bool any = false;

	if (store_list(api->store, NULL, NULL, NULL, NULL, dep_visit, &ds, NULL) == 0) {
		for (i = 0; i < ds.n && !any; i++) {
			const struct kube_kind *k = kube_registry_by_store_key(api->reg, ds.refs[i].store_key);
			bool deleting, refers;

			(void)dep_blocks(api, &ds.refs[i], uid, &deleting, &refers);
			any = refers && k;
		}
	}
	dep_scan_release(&ds);
	return any;
}

/* Drop one finalizer of the collector's from a held owner; the owner goes
 * when it was the last one.  -ESTALE on a race (the caller retries). */
static int release_held(struct kube_api *api, const struct kube_kind *k, const char *ns, const char *name,
			const char *uid, const char *finalizer)
{
	int attempt;

	for (attempt = 0; attempt < PATCH_RETRIES; attempt++) {
		json_t *obj = NULL, *before, *fin, *keep, *f;
		int64_t rev;
		ah_err err;
		size_t i;
		int r;

		if (get_with_rev(api, k, ns, name, &obj, &rev, &err) < 0)
			return 0;
		if (strcmp(mstr(obj, "uid") ? mstr(obj, "uid") : "", uid) != 0 || !has_finalizer(obj, finalizer)) {
			json_decref(obj);
			return 0;
		}
		before = json_deep_copy(obj);
		fin = json_object_get(json_object_get(obj, "metadata"), "finalizers");
		keep = json_array();
		json_array_foreach(fin, i, f)
			if (!json_string_value(f) || strcmp(json_string_value(f), finalizer) != 0)
				json_array_append(keep, f);
		if (json_array_size(keep))
			json_object_set_new(meta_of(obj), "finalizers", keep);
		else {
			json_decref(keep);
			json_object_del(meta_of(obj), "finalizers");
		}
		if (is_deleting(obj) && finalizers_empty(obj)) {
			/* Dependents were dealt with: an orphaned owner leaves them
			 * be, a foreground one has none left that block. */
			r = remove_now(api, k, ns, name, obj, rev, strcmp(finalizer, FINALIZER_ORPHAN) == 0, &err);
		} else {
			struct render_ctx rc = { .obj = obj };

			if (before)
				gc_record(k, before, obj);
			r = store_update(api->store, k->store_key, ns, name, rev, render_obj, &rc, NULL);
		}
		json_decref(before);
		json_decref(obj);
		if (r != -ESTALE)
			return r;
	}
	return -ESTALE;
}

/* An owner held by "orphan" or "foregroundDeletion".  Returns true when it is
 * dealt with, false while it must wait (foreground: blocking dependents
 * still exist); a waiting owner is looked at again every second. */
static bool gc_held(struct kube_api *api, struct gc_item *it)
{
	const struct kube_kind *k = kube_registry_by_store_key(api->reg, it->store_key);
	struct dep_scan ds = { .uid = it->uid };
	json_t *owner = NULL;
	int64_t rev;
	ah_err err;
	bool orphan, done = true;
	size_t i;

	if (!k || get_with_rev(api, k, it->ns, it->name, &owner, &rev, &err) < 0)
		return true;
	if (strcmp(mstr(owner, "uid") ? mstr(owner, "uid") : "", it->uid) != 0 || !is_deleting(owner)) {
		json_decref(owner);
		return true;
	}
	orphan = has_finalizer(owner, FINALIZER_ORPHAN);
	if (!orphan && !has_finalizer(owner, FINALIZER_FOREGROUND)) {
		json_decref(owner);
		return true;
	}
	json_decref(owner);
	if (store_list(api->store, NULL, NULL, NULL, NULL, dep_visit, &ds, NULL) < 0) {
		dep_scan_release(&ds);
		return false;
	}
	for (i = 0; i < ds.n; i++) {
		const struct dep_ref *d = &ds.refs[i];
		bool deleting, refers;

		if (*it->ns && strcmp(d->ns, it->ns) != 0)
			continue;
		if (orphan) {
			gc_dependent(api, d, it->uid, true);
			continue;
		}
		(void)dep_blocks(api, d, it->uid, &deleting, &refers);
		if (!refers)
			continue;
		if (!deleting) {
			/* kube's collector deletes a dependent that has dependents
			 * of its own in the foreground too, a leaf in the
			 * background; one with other owners only loses this
			 * reference. */
			const struct kube_kind *dk = kube_registry_by_store_key(api->reg, d->store_key);
			json_t *dobj = NULL;
			int64_t drev;
			char duid[64] = "";
			size_t owners = 0;

			if (dk && get_with_rev(api, dk, d->ns, d->name, &dobj, &drev, &err) == 0) {
				snprintf(duid, sizeof(duid), "%s", mstr(dobj, "uid") ? mstr(dobj, "uid") : "");
				owners = json_array_size(json_object_get(json_object_get(dobj, "metadata"),
									 "ownerReferences"));
				json_decref(dobj);
			}
			if (duid[0] && owners <= 1 && has_dependents(api, duid)) {
				struct kube_opts o = { .propagation = "Foreground" };
				json_t *ret = NULL;

				kube_delete(api, dk, d->ns, d->name, &o, &ret, &err);
				json_decref(ret);
			} else {
				gc_dependent(api, d, it->uid, false);
			}
		}
		if (dep_blocks(api, d, it->uid, &deleting, &refers))
			done = false;
	}
	dep_scan_release(&ds);
	if (orphan)
		release_held(api, k, it->ns, it->name, it->uid, FINALIZER_ORPHAN);
	else if (done)
		release_held(api, k, it->ns, it->name, it->uid, FINALIZER_FOREGROUND);
	return orphan || done;
}

/* Delete every object of a terminating namespace; once none is left, the
 * namespace itself goes.  Objects held by finalizers keep it Terminating. */
static bool ns_sweep(struct kube_api *api, const char *ns)
{
	struct dep_scan ds = { .ns_only = ns };
	const struct kube_kind *nsk = kube_registry_by_store_key(api->reg, "namespaces");
	json_t *obj = NULL;
	int64_t rev;
	ah_err err;
	size_t i;
	bool done = false;

	if (store_list(api->store, NULL, NULL, NULL, NULL, dep_visit, &ds, NULL) < 0) {
		dep_scan_release(&ds);
		return false;
	}
	for (i = 0; i < ds.n; i++) {
		const struct kube_kind *k = kube_registry_by_store_key(api->reg, ds.refs[i].store_key);
		struct kube_opts o = { .propagation = "Background" };
		json_t *ret = NULL;

		if (!k || !k->namespaced)
			continue;
		kube_delete(api, k, ds.refs[i].ns, ds.refs[i].name, &o, &ret, &err);
		json_decref(ret);
	}
	if (ds.n == 0 && nsk && get_with_rev(api, nsk, "", ns, &obj, &rev, &err) == 0) {
		if (is_deleting(obj))
			done = remove_now(api, nsk, "", ns, obj, rev, false, &err) == 0;
		json_decref(obj);
	} else if (ds.n == 0) {
		done = true;
	}
	dep_scan_release(&ds);
	return done;
}

static void *gc_main(void *arg)
{
	struct kube_api *api = arg;

	pthread_setname_np(pthread_self(), "ah-gc");
	pthread_mutex_lock(&api->gc_lock);
	while (!api->gc_stop) {
		struct gc_item *it = api->gc_head;

		if (!it) {
			struct timespec ts;
			size_t i, n = api->n_ns_terminating;
			char **pending = NULL;
			struct gc_item *waiting = api->gc_waiting;

			/* Foreground deletions waiting for their dependents are
			 * looked at again every second, like terminating
			 * namespaces. */
			if (waiting) {
				api->gc_waiting = NULL;
				pthread_mutex_unlock(&api->gc_lock);
				while (waiting) {
					struct gc_item *w = waiting;

					waiting = w->next;
					w->next = NULL;
					if (gc_held(api, w)) {
						gc_item_free(w);
					} else {
						pthread_mutex_lock(&api->gc_lock);
						w->next = api->gc_waiting;
						api->gc_waiting = w;
						pthread_mutex_unlock(&api->gc_lock);
					}
				}
				pthread_mutex_lock(&api->gc_lock);
			}

			/* Terminating namespaces are re-swept every second until
			 * their finalizer-held content is gone. */
			if (n) {
				pending = api->ns_terminating;
				api->ns_terminating = NULL;
				api->n_ns_terminating = 0;
				pthread_mutex_unlock(&api->gc_lock);
				for (i = 0; i < n; i++) {
					if (ns_sweep(api, pending[i])) {
						free(pending[i]);
						pending[i] = NULL;
					}
				}
				pthread_mutex_lock(&api->gc_lock);
				for (i = 0; i < n; i++) {
					char **p;

					if (!pending[i])
						continue;
					p = realloc(api->ns_terminating, (api->n_ns_terminating + 1) * sizeof(*p));
					if (!p) {
						free(pending[i]);
						continue;
					}
					api->ns_terminating = p;
					p[api->n_ns_terminating++] = pending[i];
				}
				free(pending);
			}
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 1;
			pthread_cond_timedwait(&api->gc_cond, &api->gc_lock, &ts);
			continue;
		}
		api->gc_head = it->next;
		if (!api->gc_head)
			api->gc_tail = NULL;
		pthread_mutex_unlock(&api->gc_lock);
		if (it->store_key) {
			if (!gc_held(api, it)) {
				pthread_mutex_lock(&api->gc_lock);
				it->next = api->gc_waiting;
				api->gc_waiting = it;
				it = NULL;
				pthread_mutex_unlock(&api->gc_lock);
			}
		} else if (it->uid) {
			gc_owner_gone(api, it);
		} else {
			pthread_mutex_lock(&api->gc_lock);
			{
				char **p = realloc(api->ns_terminating,
						   (api->n_ns_terminating + 1) * sizeof(*p));

				if (p) {
					api->ns_terminating = p;
					p[api->n_ns_terminating++] = strdup(it->ns);
				}
			}
			pthread_mutex_unlock(&api->gc_lock);
		}
		if (it)
			gc_item_free(it);
		pthread_mutex_lock(&api->gc_lock);
	}
	pthread_mutex_unlock(&api->gc_lock);
	return NULL;
}

/* At start-up: finish what a previous run left half-done (owners deleted
 * before a crash, namespaces left Terminating). */
struct startup_scan {
	json_t *uids;   /* object: uid -> true for every live object */
	json_t *owned;  /* array of [store_key, ns, name, [owner uids]] */
	json_t *terminating; /* array of namespace names */
	json_t *held;   /* array of [store_key, ns, name, uid]: orphan/foreground deletions */
};

static int startup_visit(const store_obj *so, void *userdata)
{
	struct startup_scan *ss = userdata;
	json_t *obj = json_loadb(so->json, so->len, 0, NULL), *refs, *ref, *uids;
	const char *uid;
	size_t i;

	if (!obj)
		return 0;
	uid = mstr(obj, "uid");
	if (uid)
		json_object_set_new(ss->uids, uid, json_true());
	if (strcmp(so->resource, "namespaces") == 0 && mstr(obj, "deletionTimestamp"))
		json_array_append_new(ss->terminating, json_string(so->name));
	else if (uid && is_deleting(obj) &&
		 (has_finalizer(obj, FINALIZER_ORPHAN) || has_finalizer(obj, FINALIZER_FOREGROUND)))
		json_array_append_new(ss->held, json_pack("[s,s,s,s]", so->resource, so->ns, so->name, uid));
	refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
	if (json_array_size(refs)) {
		uids = json_array();
		json_array_foreach(refs, i, ref)
			json_array_append(uids, json_object_get(ref, "uid"));
		json_array_append_new(ss->owned, json_pack("[s,s,s,o]", so->resource, so->ns, so->name, uids));
	}
	json_decref(obj);
	return 0;
}

static void gc_startup(struct kube_api *api)
{
	struct startup_scan ss = { json_object(), json_array(), json_array(), json_array() };
	json_t *row, *u;
	size_t i, j;

	if (store_list(api->store, NULL, NULL, NULL, NULL, startup_visit, &ss, NULL) == 0) {
		json_array_foreach(ss.owned, i, row) {
			json_array_foreach(json_array_get(row, 3), j, u) {
				const char *uid = json_string_value(u);

				if (uid && !json_object_get(ss.uids, uid)) {
					struct dep_ref d = {
						(char *)json_string_value(json_array_get(row, 0)),
						(char *)json_string_value(json_array_get(row, 1)),
						(char *)json_string_value(json_array_get(row, 2)) };

					gc_dependent(api, &d, uid, false);
				}
			}
		}
		json_array_foreach(ss.terminating, i, u)
			gc_enqueue(api, NULL, json_string_value(u), false);
		json_array_foreach(ss.held, i, row) {
			const struct kube_kind *k =
				kube_registry_by_store_key(api->reg, json_string_value(json_array_get(row, 0)));

			if (k)
				gc_enqueue_held(api, k, json_string_value(json_array_get(row, 1)),
						json_string_value(json_array_get(row, 2)),
						json_string_value(json_array_get(row, 3)));
		}
	}
	json_decref(ss.held);
	json_decref(ss.uids);
	json_decref(ss.owned);
	json_decref(ss.terminating);
}

static int ensure_namespace(struct kube_api *api, const char *name)
{
	const struct kube_kind *k = kube_registry_by_store_key(api->reg, "namespaces");
	json_t *body = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
				 "metadata", "name", name);
	json_t *ret = NULL;
	ah_err err;
	int r = kube_create(api, k, "", body, NULL, &ret, &err);

	json_decref(body);
	json_decref(ret);
	return r == -EEXIST ? 0 : r;
}

int kube_api_new(store *s, const struct kube_registry *reg, struct kube_api **ret, ah_err *err)
{
	struct kube_api *api = calloc(1, sizeof(*api));
	static const char *initial_ns[] = { "default", "kube-system", "kube-public", NULL };
	int i, r;

	if (!api)
		return -ENOMEM;
	api->store = s;
	api->reg = reg;
	pthread_mutex_init(&api->gc_lock, NULL);
	pthread_cond_init(&api->gc_cond, NULL);
	pthread_mutex_init(&api->ns_lock, NULL);
	for (i = 0; initial_ns[i]; i++) {
		r = ensure_namespace(api, initial_ns[i]);
		if (r < 0) {
			kube_api_free(api);
			return ah_err_set(err, r, 500, "InternalError", "creating namespace %s: %s",
					  initial_ns[i], strerror(-r));
		}
	}
	gc_startup(api);
	if (pthread_create(&api->gc_thread, NULL, gc_main, api) != 0) {
		kube_api_free(api);
		return ah_err_set(err, EAGAIN, 500, "InternalError", "cannot start the garbage collector");
	}
	api->gc_started = true;
	*ret = api;
	return 0;
}

void kube_api_free(struct kube_api *api)
{
	size_t i;

	if (!api)
		return;
	if (api->gc_started) {
		pthread_mutex_lock(&api->gc_lock);
		api->gc_stop = true;
		pthread_cond_broadcast(&api->gc_cond);
		pthread_mutex_unlock(&api->gc_lock);
		pthread_join(api->gc_thread, NULL);
	}
	while (api->gc_head) {
		struct gc_item *it = api->gc_head;

		api->gc_head = it->next;
		gc_item_free(it);
	}
	while (api->gc_waiting) {
		struct gc_item *it = api->gc_waiting;

		api->gc_waiting = it->next;
		gc_item_free(it);
	}
	for (i = 0; i < api->n_ns_terminating; i++)
		free(api->ns_terminating[i]);
	free(api->ns_terminating);
	for (i = 0; i < api->n_adm; i++)
		free(api->adm[i].store_key);
	free(api->adm);
	ns_seen_clear(api);
	pthread_mutex_destroy(&api->ns_lock);
	pthread_mutex_destroy(&api->gc_lock);
	pthread_cond_destroy(&api->gc_cond);
	free(api);
}
