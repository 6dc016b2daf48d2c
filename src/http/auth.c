/* auth.c - authentication, impersonation, TokenRequest, the self-review
 * kinds and RBAC escalation checks; see auth.h. */
#include "http/auth.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/strbuf.h"
#include "base/util.h"
#include "base/yamljson.h"
#include "kube/proto.h"
#include "http/kubeapi.h"

#define ISSUER "https://kubernetes.default.svc.cluster.local"
#define SA_PREFIX "system:serviceaccount:"
#define SA_KEY "serviceaccounts"
#define TOKEN_CACHE_BUCKETS 256
#define TOKEN_CACHE_MAX 4096

struct token_entry {
	unsigned char digest[32];
	struct auth_identity id;
	time_t exp;
	uint64_t sa_stamp;
	struct token_entry *next;
};

struct auth_cache {
	pthread_mutex_t lock;
	struct token_entry *buckets[TOKEN_CACHE_BUCKETS];
	size_t n;
};

struct auth_cache *auth_cache_new(void)
{
	struct auth_cache *ac = calloc(1, sizeof(*ac));

	if (ac)
		pthread_mutex_init(&ac->lock, NULL);
	return ac;
}

static void token_cache_clear(struct auth_cache *ac)
{
	size_t i;

	for (i = 0; i < TOKEN_CACHE_BUCKETS; i++) {
		struct token_entry *e = ac->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e);
		}
		ac->buckets[i] = NULL;
	}
	ac->n = 0;
}

void auth_cache_free(struct auth_cache *ac)
{
	if (!ac)
		return;
	token_cache_clear(ac);
	pthread_mutex_destroy(&ac->lock);
	free(ac);
}

static bool token_cache_get(struct auth_cache *ac, const unsigned char digest[32], uint64_t stamp,
			    time_t now, struct auth_identity *ret)
{
	struct token_entry *e;
	bool hit = false;

	if (!ac)
		return false;
	pthread_mutex_lock(&ac->lock);
	for (e = ac->buckets[digest[0]]; e; e = e->next) {
		if (memcmp(e->digest, digest, 32) == 0) {
			if (e->exp > now && e->sa_stamp == stamp) {
				*ret = e->id;
				hit = true;
			}
			break;
		}
	}
	pthread_mutex_unlock(&ac->lock);
	return hit;
}

static void token_cache_put(struct auth_cache *ac, const unsigned char digest[32], uint64_t stamp,
			    time_t exp, const struct auth_identity *id)
{
	struct token_entry *e;

	if (!ac)
		return;
	pthread_mutex_lock(&ac->lock);
	for (e = ac->buckets[digest[0]]; e; e = e->next)
		if (memcmp(e->digest, digest, 32) == 0)
			break;
	if (!e) {
		if (ac->n >= TOKEN_CACHE_MAX)
			token_cache_clear(ac);
		e = calloc(1, sizeof(*e));
		if (e) {
			memcpy(e->digest, digest, 32);
			e->next = ac->buckets[digest[0]];
			ac->buckets[digest[0]] = e;
			ac->n++;
		}
	}
	if (e) {
		e->id = *id;
		e->exp = exp;
		e->sa_stamp = stamp;
	}
	pthread_mutex_unlock(&ac->lock);
}

static void add_group(struct auth_identity *id, const char *g)
{
	size_t i;

	for (i = 0; i < id->ngroups; i++)
		if (strcmp(id->groups[i], g) == 0)
			return;
	if (id->ngroups < RBAC_MAX_GROUPS)
		snprintf(id->groups[id->ngroups++], sizeof(id->groups[0]), "%s", g);
	if (strcmp(g, RBAC_MASTERS) == 0)
		id->masters = true;
}

void auth_rbac_user(const struct auth_identity *id, struct rbac_user *ret)
{
	size_t i;

	memset(ret, 0, sizeof(*ret));
	ret->name = id->user;
	for (i = 0; i < id->ngroups; i++)
		ret->groups[i] = id->groups[i];
	ret->ngroups = id->ngroups;
}

/* "system:serviceaccount:NS:NAME" into ns and name; false for another user. */
static bool sa_split(const char *user, char *ns, size_t ns_size, char *name, size_t name_size)
{
	const char *p, *colon;

	if (strncmp(user, SA_PREFIX, strlen(SA_PREFIX)) != 0)
		return false;
	p = user + strlen(SA_PREFIX);
	colon = strchr(p, ':');
	if (!colon || colon == p || !colon[1] || strchr(colon + 1, ':') ||
	    (size_t)(colon - p) >= ns_size || strlen(colon + 1) >= name_size)
		return false;
	snprintf(ns, ns_size, "%.*s", (int)(colon - p), p);
	snprintf(name, name_size, "%s", colon + 1);
	return true;
}

static void sa_identity(struct auth_identity *id, const char *ns, const char *name, const char *uid)
{
	char g[300];

	memset(id, 0, sizeof(*id));
	snprintf(id->user, sizeof(id->user), SA_PREFIX "%s:%s", ns, name);
	snprintf(id->uid, sizeof(id->uid), "%s", uid ? uid : "");
	add_group(id, "system:serviceaccounts");
	snprintf(g, sizeof(g), "system:serviceaccounts:%s", ns);
	add_group(id, g);
	add_group(id, "system:authenticated");
}

static const struct kube_kind *sa_kind(struct kube_api *api)
{
	return kube_registry_by_resource(kube_api_registry(api), "", "v1", SA_KEY);
}

static bool audience_ok(const json_t *aud)
{
	size_t i;
	json_t *v;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), AUTH_AUDIENCE) == 0;
	json_array_foreach(aud, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), AUTH_AUDIENCE) == 0)
			return true;
	return false;
}

static int sa_token_identity(struct kube_api *api, const struct creds *c, struct auth_cache *ac,
			     const char *token, struct auth_identity *ret)
{
	json_t *claims = NULL, *k8s, *sa, *obj = NULL;
	const char *ns, *name, *uid, *live_uid;
	time_t now = time(NULL);
	unsigned char digest[32];
	bool cacheable;
	uint64_t stamp;
	ah_err err;
	int r = -EACCES;

	if (strlen(token) > CREDS_JWT_MAX)
		return -EACCES;
	/* The stamp is read before the ServiceAccount: a change after it
	 * leaves an entry that no longer matches. */
	stamp = store_resource_stamp(kube_api_store(api), SA_KEY);
	cacheable = creds_sha256(token, digest);
	if (cacheable && token_cache_get(ac, digest, stamp, now, ret))
		return 0;
	if (creds_jwt_verify(c, token, &claims) < 0)
		return -EACCES;
	k8s = json_object_get(claims, "kubernetes.io");
	sa = json_object_get(k8s, "serviceaccount");
	ns = json_string_value(json_object_get(k8s, "namespace"));
	name = json_string_value(json_object_get(sa, "name"));
	uid = json_string_value(json_object_get(sa, "uid"));
	if (!ns || !name || !uid || !json_is_integer(json_object_get(claims, "exp")))
		goto out;
	if (json_integer_value(json_object_get(claims, "exp")) <= now)
		goto out;
	if (json_is_integer(json_object_get(claims, "nbf")) &&
	    json_integer_value(json_object_get(claims, "nbf")) > now + 60)
		goto out;
	if (!audience_ok(json_object_get(claims, "aud")))
		goto out;
	/* A token outlives neither its ServiceAccount nor a new one of the same name. */
	if (kube_get(api, sa_kind(api), ns, name, &obj, &err) < 0)
		goto out;
	live_uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));
	if (!live_uid || strcmp(live_uid, uid) != 0 ||
	    json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp"))
		goto out;
	sa_identity(ret, ns, name, uid);
	if (cacheable)
		token_cache_put(ac, digest, stamp, (time_t)json_integer_value(json_object_get(claims, "exp")), ret);
	r = 0;
out:
	json_decref(obj);
	json_decref(claims);
	return r;
}

int auth_authenticate(struct kube_api *api, const struct creds *c, struct auth_cache *ac,
		      struct http_req *req, struct auth_identity *ret)
{
	const char *auth = http_header(req, "Authorization"), *tok;

	if (!auth || strncmp(auth, "Bearer ", 7) != 0)
		return -EACCES;
	tok = auth + 7;
	/* A JWT has two dots; the admin token (hex) none. */
	if (!strchr(tok, '.')) {
		if (!creds_token_ok(c, tok))
			return -EACCES;
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->user, sizeof(ret->user), "%s", AUTH_ADMIN_USER);
		add_group(ret, RBAC_MASTERS);
		add_group(ret, "system:authenticated");
		return 0;
	}
	return sa_token_identity(api, c, ac, tok, ret);
}

/* --- impersonation ------------------------------------------------------- */

struct header_values {
	const char *name;
	const char *values[RBAC_MAX_GROUPS];
	size_t n;
	bool overflow;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct header_values *hv = cls;

	if (key && value && strcasecmp(key, hv->name) == 0) {
		if (hv->n < RBAC_MAX_GROUPS)
			hv->values[hv->n++] = value;
		else
			hv->overflow = true;
	}
	return MHD_YES;
}

static bool may_impersonate(struct rbac *rb, const struct auth_identity *id, const char *resource,
			    const char *ns, const char *name, struct rbac_attrs *a)
{
	struct rbac_user u;

	memset(a, 0, sizeof(*a));
	a->verb = "impersonate";
	a->resource_request = true;
	a->group = "";
	a->resource = resource;
	a->subresource = "";
	a->ns = ns;
	a->name = name;
	auth_rbac_user(id, &u);
	return rbac_allowed(rb, &u, a);
}

enum http_result auth_impersonate(struct rbac *rb, struct http_req *req, struct auth_identity *id,
				 bool *replied)
{
	const char *user = http_header(req, "Impersonate-User");
	struct header_values groups = { .name = "Impersonate-Group" };
	struct auth_identity next;
	struct rbac_attrs a;
	char ns[256], name[256];
	size_t i;

	*replied = false;
	if (req->conn)
		MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &groups);
	if (!user && groups.n == 0)
		return HTTP_YES;
	*replied = true;
	if (!user || !*user) {
		ah_err err;

		ah_err_set(&err, EINVAL, 500, "InternalError",
			   "Internal error occurred: requested impersonation of groups without impersonating a user");
		return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
	}
	if (groups.overflow || strlen(user) >= sizeof(next.user)) {
		ah_err err;

		ah_err_set(&err, EINVAL, 400, "BadRequest", "too many or too long impersonation headers");
		return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
	}
	if (sa_split(user, ns, sizeof(ns), name, sizeof(name))) {
		if (!may_impersonate(rb, id, "serviceaccounts", ns, name, &a))
			return auth_reply_forbidden(req, id, &a, "serviceaccounts");
		sa_identity(&next, ns, name, "");
	} else {
		if (!may_impersonate(rb, id, "users", "", user, &a))
			return auth_reply_forbidden(req, id, &a, "users");
		memset(&next, 0, sizeof(next));
		snprintf(next.user, sizeof(next.user), "%s", user);
	}
	for (i = 0; i < groups.n; i++) {
		if (!may_impersonate(rb, id, "groups", "", groups.values[i], &a))
			return auth_reply_forbidden(req, id, &a, "groups");
		add_group(&next, groups.values[i]);
	}
	if (strcmp(next.user, "system:anonymous") != 0)
		add_group(&next, "system:authenticated");
	*id = next;
	*replied = false;
	return HTTP_YES;
}

enum http_result auth_reply_forbidden(struct http_req *req, const struct auth_identity *id,
				     const struct rbac_attrs *a, const char *qualified_resource)
{
	char reason[1200];
	ah_err err;

	rbac_forbidden_reason(a, id->user, reason, sizeof(reason));
	if (!a->resource_request)
		ah_err_set(&err, EACCES, 403, "Forbidden", "forbidden: %s", reason);
	else if (a->name && *a->name)
		ah_err_set(&err, EACCES, 403, "Forbidden", "%s \"%s\" is forbidden: %s", qualified_resource,
			   a->name, reason);
	else
		ah_err_set(&err, EACCES, 403, "Forbidden", "%s is forbidden: %s", qualified_resource, reason);
	return kubeapi_reply_status(req, &err, a->resource_request ? a->group : NULL,
				    a->resource_request ? a->resource : NULL, a->name, NULL);
}

/* --- request bodies -------------------------------------------------------- */

static json_t *body_json(struct http_req *req)
{
	json_t *doc = NULL, *docs = NULL;
	ah_err err;

	if (req->body.len == 0)
		return NULL;
	doc = json_loadb(req->body.buf, req->body.len, JSON_REJECT_DUPLICATES, NULL);
	if (doc)
		return doc;
	if (yaml_parse_all(req->body.buf, req->body.len, &docs, &err) == 0 && json_array_size(docs) == 1 &&
	    json_is_object(json_array_get(docs, 0)))
		doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return doc;
}

static enum http_result reply_bad_body(struct http_req *req)
{
	ah_err err;

	ah_err_set(&err, EINVAL, 400, "BadRequest", "the request body is not a JSON object");
	return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
}

/* --- TokenRequest ---------------------------------------------------------- */

enum http_result auth_token_request(struct kube_api *api, const struct creds *c,
				   struct http_req *req, const char *ns, const char *name)
{
	json_t *body = body_json(req), *spec, *sa = NULL, *claims, *doc, *auds;
	json_int_t secs = AUTH_TOKEN_DEFAULT_SECONDS;
	const char *uid;
	char jti[40], exp_ts[40], now_ts[40];
	time_t now = time(NULL);
	enum http_result res;
	char *token;
	ah_err err;

	if (strcmp(req->method, "POST") != 0) {
		json_decref(body);
		ah_err_set(&err, EINVAL, 405, "MethodNotAllowed",
			   "the server does not allow this method on the requested resource");
		return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
	}
	if (!json_is_object(body)) {
		json_decref(body);
		return reply_bad_body(req);
	}
	spec = json_object_get(body, "spec");
	if (json_is_integer(json_object_get(spec, "expirationSeconds")))
		secs = json_integer_value(json_object_get(spec, "expirationSeconds"));
	if (secs < AUTH_TOKEN_MIN_SECONDS || secs > ((json_int_t)1 << 32)) {
		ah_err_set(&err, EINVAL, 422, "Invalid",
			   "TokenRequest.authentication.k8s.io \"%s\" is invalid: spec.expirationSeconds: Invalid value: %lld: %s",
			   name, (long long)secs, secs < AUTH_TOKEN_MIN_SECONDS ?
			   "may not specify a duration less than 10 minutes" :
			   "may not specify a duration larger than 2^32 seconds");
		json_decref(body);
		return kubeapi_reply_status(req, &err, "authentication.k8s.io", "TokenRequest", name, NULL);
	}
	if (secs > AUTH_TOKEN_MAX_SECONDS)
		secs = AUTH_TOKEN_MAX_SECONDS;
	if (kube_get(api, sa_kind(api), ns, name, &sa, &err) < 0) {
		json_decref(body);
		return kubeapi_reply_status(req, &err, "", "serviceaccounts", name, NULL);
	}
	uid = json_string_value(json_object_get(json_object_get(sa, "metadata"), "uid"));
	auds = json_object_get(spec, "audiences");
	auds = json_array_size(auds) ? json_deep_copy(auds) : json_pack("[s]", AUTH_AUDIENCE);
	util_uuid4(jti, sizeof(jti));
	claims = json_pack("{s:O,s:I,s:I,s:I,s:s,s:s,s:{s:s,s:{s:s,s:s}}}", "aud", auds, "exp",
			   (json_int_t)now + secs, "iat", (json_int_t)now, "nbf", (json_int_t)now, "iss", ISSUER,
			   "jti", jti, "kubernetes.io", "namespace", ns, "serviceaccount", "name", name, "uid",
			   uid ? uid : "");
	if (claims) {
		char sub[600];

		snprintf(sub, sizeof(sub), SA_PREFIX "%s:%s", ns, name);
		json_object_set_new(claims, "sub", json_string(sub));
	}
	token = claims ? creds_jwt_sign(c, claims) : NULL;
	json_decref(claims);
	if (!token) {
		json_decref(auds);
		json_decref(body);
		json_decref(sa);
		ah_err_set(&err, ENOMEM, 500, "InternalError", "signing the token failed");
		return kubeapi_reply_status(req, &err, NULL, NULL, NULL, NULL);
	}
	util_time_rfc3339(now + secs, exp_ts, sizeof(exp_ts));
	util_time_rfc3339(now, now_ts, sizeof(now_ts));
	doc = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:O,s:I,s:n},s:{s:s,s:s}}", "kind", "TokenRequest",
			"apiVersion", "authentication.k8s.io/v1", "metadata", "name", name, "namespace", ns,
			"creationTimestamp", now_ts, "spec", "audiences", auds, "expirationSeconds",
			(json_int_t)secs, "boundObjectRef", "status", "token", token, "expirationTimestamp",
			exp_ts);
	res = doc ? http_reply_json(req, 201, doc) : HTTP_NO;
	/* The reply holds its own copy: wipe ours. */
	memset(token, 0, strlen(token));
	free(token);
	json_decref(doc);
	json_decref(auds);
	json_decref(body);
	json_decref(sa);
	return res;
}

/* --- reviews ---------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static json_t *rules_review(struct rbac *rb, const struct rbac_user *u, const char *ns)
{
	json_t *rules = rbac_rules_for(rb, u, ns), *res = json_array(), *nonres = json_array(), *r;
	size_t i;

	json_array_foreach(rules, i, r) {
		if (json_array_size(json_object_get(r, "nonResourceURLs")))
			json_array_append_new(nonres, json_pack("{s:O,s:O}", "verbs", json_object_get(r, "verbs"),
								"nonResourceURLs", json_object_get(r, "nonResourceURLs")));
		else
			json_array_append(res, r);
	}
	json_decref(rules);
	return json_pack("{s:o,s:o,s:b}", "resourceRules", res, "nonResourceRules", nonres, "incomplete", 0);
}

enum http_result auth_review(struct rbac *rb, struct http_req *req, const struct kube_kind *k,
			    const struct auth_identity *id)
{
	json_t *body, *spec, *status = NULL;
	struct rbac_user u;
	enum http_result res;
	ah_err err;

	if (strcmp(req->method, "POST") != 0) {
		ah_err_set(&err, EINVAL, 405, "MethodNotAllowed",
			   "the server does not allow this method on the requested resource");
		return kubeapi_reply_status(req, &err, k->group, k->plural, NULL, NULL);
	}
	body = body_json(req);
	if (!json_is_object(body)) {
		json_decref(body);
		/* A SelfSubjectReview asks nothing: its body does not matter. */
		if (strcmp(k->kind, "SelfSubjectReview") != 0)
			return reply_bad_body(req);
		body = json_object();
	}
	auth_rbac_user(id, &u);
	spec = json_object_get(body, "spec");
	if (strcmp(k->kind, "SelfSubjectAccessReview") == 0) {
		json_t *ra = json_object_get(spec, "resourceAttributes");
		json_t *nra = json_object_get(spec, "nonResourceAttributes");
		struct rbac_attrs a = { 0 };

		if (!ra && !nra) {
			json_decref(body);
			ah_err_set(&err, EINVAL, 422, "Invalid",
				   "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified");
			return kubeapi_reply_status(req, &err, k->group, k->kind, NULL, NULL);
		}
		if (ra) {
			a.resource_request = true;
			a.verb = jstr(ra, "verb");
			a.group = jstr(ra, "group");
			a.resource = jstr(ra, "resource");
			a.subresource = jstr(ra, "subresource");
			a.name = jstr(ra, "name");
			a.ns = jstr(ra, "namespace");
		} else {
			a.verb = jstr(nra, "verb");
			a.path = jstr(nra, "path");
		}
		status = json_pack("{s:b}", "allowed", rbac_allowed(rb, &u, &a));
	} else if (strcmp(k->kind, "SelfSubjectRulesReview") == 0) {
		status = rules_review(rb, &u, jstr(spec, "namespace"));
	} else {
		json_t *groups = json_array();
		size_t i;

		for (i = 0; i < id->ngroups; i++)
			json_array_append_new(groups, json_string(id->groups[i]));
		status = json_pack("{s:{s:s,s:o}}", "userInfo", "username", id->user, "groups", groups);
		if (id->uid[0])
			json_object_set_new(json_object_get(status, "userInfo"), "uid", json_string(id->uid));
	}
	json_object_set_new(body, "status", status);
	json_object_set_new(body, "apiVersion", json_string(k->api_version));
	json_object_set_new(body, "kind", json_string(k->kind));
	if (!json_is_object(json_object_get(body, "metadata")))
		json_object_set_new(body, "metadata", json_object());
	json_object_set_new(json_object_get(body, "metadata"), "creationTimestamp", json_null());
	res = http_reply_json(req, 201, body);
	json_decref(body);
	return res;
}

void auth_namespace_default_sa(struct kube_api *api, struct http_req *req, const char *name)
{
	const struct kube_kind *nsk = kube_registry_by_resource(kube_api_registry(api), "", "v1", "namespaces");
	json_t *body = NULL, *ns = NULL, *sa = NULL, *ret = NULL;
	struct kube_opts o = { 0 };
	ah_err err;

	if (!name || !*name) {
		body = body_json(req);
		name = json_string_value(json_object_get(json_object_get(body, "metadata"), "name"));
	}
	if (!name || !*name || !nsk || kube_get(api, nsk, "", name, &ns, &err) < 0)
		goto out;
	if (json_object_get(json_object_get(ns, "metadata"), "deletionTimestamp"))
		goto out;
	if (kube_get(api, sa_kind(api), name, "default", &ret, &err) == 0)
		goto out;
	sa = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "ServiceAccount", "metadata",
		       "name", "default", "namespace", name);
	/* A concurrent request may have made it: -EEXIST is as good. */
	if (sa)
		kube_create(api, sa_kind(api), name, sa, &o, &ret, &err);
out:
	json_decref(body);
	json_decref(ns);
	json_decref(sa);
	json_decref(ret);
}

int auth_body_from_protobuf(struct http_req *req, ah_err *err)
{
	json_t *obj = NULL;
	char *text;
	int r;

	if (!kube_proto_content_type(http_header(req, "Content-Type")) || req->too_big)
		return 0;
	r = kube_proto_decode(req->body.buf, req->body.len, &obj, err);
	if (r < 0)
		return r;
	text = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	if (!text)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	strbuf_reset(&req->body);
	r = strbuf_add(&req->body, text, strlen(text));
	free(text);
	return r < 0 ? ah_err_set(err, -r, 413, "RequestEntityTooLarge", "the request body is too large") : 0;
}

/* --- escalation ------------------------------------------------------------ */

static int escalation_error(ah_err *err, const struct kube_kind *k, const char *name,
			    const struct auth_identity *id, const json_t *missing)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *m;
	int r;

	strbuf_addf(&sb, "user \"%s\" (groups=[", id->user);
	for (i = 0; i < id->ngroups; i++)
		strbuf_addf(&sb, "%s\"%s\"", i ? " " : "", id->groups[i]);
	strbuf_adds(&sb, "]) is attempting to grant RBAC permissions not currently held:");
	json_array_foreach(missing, i, m) {
		char rule[1024];

		if (i >= 20) {
			strbuf_adds(&sb, "\n...");
			break;
		}
		rbac_rule_string(m, rule, sizeof(rule));
		strbuf_addf(&sb, "\n%s", rule);
	}
	if (name && *name)
		r = ah_err_set(err, EACCES, 403, "Forbidden", "%s \"%s\" is forbidden: %s", k->store_key,
			       name, sb.buf ? sb.buf : "");
	else
		r = ah_err_set(err, EACCES, 403, "Forbidden", "%s is forbidden: %s", k->store_key,
			       sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	return r;
}

int auth_check_escalation(struct kube_api *api, struct rbac *rb, const struct auth_identity *id,
			  struct http_req *req, const struct kube_kind *k, const char *ns,
			  const char *name, ah_err *err)
{
	bool binding = strcmp(k->plural, "rolebindings") == 0 || strcmp(k->plural, "clusterrolebindings") == 0;
	bool role = strcmp(k->plural, "roles") == 0 || strcmp(k->plural, "clusterroles") == 0;
	json_t *obj = NULL, *granted = NULL, *held = NULL, *missing = NULL;
	const char *oname;
	struct rbac_user u;
	struct rbac_attrs a = { 0 };
	int r = 0;

	if (id->masters || !(binding || role) || strcmp(k->group, RBAC_GROUP) != 0)
		return 0;
	if (strcmp(req->method, "POST") != 0 && strcmp(req->method, "PUT") != 0 &&
	    strcmp(req->method, "PATCH") != 0)
		return 0;
	obj = body_json(req);
	if (!json_is_object(obj)) {
		/* Not ours to judge: the normal path rejects the body. */
		json_decref(obj);
		return 0;
	}
	if (strcmp(req->method, "PATCH") == 0) {
		/* What the patch would store, computed without storing it. */
		struct kube_opts o = { .dry_run = true };
		json_t *patched = NULL;

		r = kube_patch(api, k, ns, name, http_header(req, "Content-Type") ? http_header(req, "Content-Type") :
			       "application/merge-patch+json", obj, &o, &patched, err);
		json_decref(obj);
		obj = patched;
		/* Fail closed: a patch whose result cannot be computed here
		 * (the real patch would report the same error) is refused. */
		if (r < 0)
			return r;
	}
	oname = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	if (!oname)
		oname = name;
	auth_rbac_user(id, &u);
	a.resource_request = true;
	a.group = RBAC_GROUP;
	a.subresource = "";
	a.ns = ns;
	if (binding) {
		json_t *ref = json_object_get(obj, "roleRef");
		const char *rk = jstr(ref, "kind");

		a.verb = "bind";
		a.resource = strcmp(rk, "Role") == 0 ? "roles" : "clusterroles";
		a.name = jstr(ref, "name");
		if (rbac_allowed(rb, &u, &a))
			goto out;
		granted = rbac_role_rules(rb, rk, ns, jstr(ref, "name"));
	} else {
		a.verb = "escalate";
		a.resource = k->plural;
		a.name = oname ? oname : "";
		if (rbac_allowed(rb, &u, &a))
			goto out;
		granted = json_incref(json_object_get(obj, "rules"));
	}
	held = rbac_rules_for(rb, &u, ns);
	missing = json_array();
	if (rbac_uncovered(held, granted, missing) > 0)
		r = escalation_error(err, k, oname, id, missing);
out:
	json_decref(obj);
	json_decref(granted);
	json_decref(held);
	json_decref(missing);
	return r;
}
