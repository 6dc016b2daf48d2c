/* rbac.c - RBAC authorization: rule matching, rule resolution from the store
 * with a per-subject cache, admission checks of the RBAC kinds and the
 * bootstrap policy.  See rbac.h. */
#include "rbac.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "kube/selector.h"

#define KEY_ROLES "roles." RBAC_GROUP
#define KEY_CROLES "clusterroles." RBAC_GROUP
#define KEY_RB "rolebindings." RBAC_GROUP
#define KEY_CRB "clusterrolebindings." RBAC_GROUP

/* Cached rule sets: bounded, emptied whole when full (a rebuild is a few
 * store reads, and a hub has few distinct subjects). */
#define CACHE_BUCKETS 256
#define CACHE_MAX 4096
/* Aggregated ClusterRoles may aggregate aggregated ones (admin <- edit <- view). */
#define AGGREGATION_DEPTH 4
/* Bounds on what one escalation check expands a rule into. */
#define ATOMS_MAX 4096

/* --- pure ------------------------------------------------------------------ */

static bool has(const json_t *arr, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(arr, i, v) {
		const char *x = json_string_value(v);

		if (x && strcmp(x, s) == 0)
			return true;
	}
	return false;
}

static bool has_or_all(const json_t *arr, const char *s)
{
	return has(arr, "*") || has(arr, s);
}

static bool resource_matches(const json_t *resources, const char *res, const char *sub)
{
	char combined[600];
	size_t i;
	json_t *v;

	if (sub && *sub)
		snprintf(combined, sizeof(combined), "%s/%s", res, sub);
	else
		snprintf(combined, sizeof(combined), "%s", res);
	json_array_foreach(resources, i, v) {
		const char *r = json_string_value(v);

		if (!r)
			continue;
		if (strcmp(r, "*") == 0 || strcmp(r, combined) == 0)
			return true;
		if (sub && *sub && strncmp(r, "*/", 2) == 0 && strcmp(r + 2, sub) == 0)
			return true;
	}
	return false;
}

static bool url_matches(const json_t *urls, const char *path)
{
	size_t i;
	json_t *v;

	json_array_foreach(urls, i, v) {
		const char *u = json_string_value(v);
		size_t n;

		if (!u)
			continue;
		if (strcmp(u, "*") == 0 || strcmp(u, path) == 0)
			return true;
		n = strlen(u);
		if (n && u[n - 1] == '*' && strncmp(u, path, n - 1) == 0)
			return true;
	}
	return false;
}

bool rbac_rule_allows(const json_t *rule, const struct rbac_attrs *a)
{
	const json_t *names;

	if (!json_is_object(rule) || !has_or_all(json_object_get(rule, "verbs"), a->verb))
		return false;
	if (!a->resource_request)
		return url_matches(json_object_get(rule, "nonResourceURLs"), a->path ? a->path : "");
	if (!has_or_all(json_object_get(rule, "apiGroups"), a->group ? a->group : ""))
		return false;
	if (!resource_matches(json_object_get(rule, "resources"), a->resource ? a->resource : "",
			      a->subresource))
		return false;
	names = json_object_get(rule, "resourceNames");
	if (json_array_size(names) == 0)
		return true;
	return a->name && *a->name && has(names, a->name);
}

bool rbac_rules_allow(const json_t *rules, const struct rbac_attrs *a)
{
	size_t i;
	json_t *r;

	json_array_foreach(rules, i, r)
		if (rbac_rule_allows(r, a))
			return true;
	return false;
}

bool rbac_user_in_group(const struct rbac_user *u, const char *group)
{
	size_t i;

	for (i = 0; i < u->ngroups; i++)
		if (u->groups[i] && strcmp(u->groups[i], group) == 0)
			return true;
	return false;
}

bool rbac_subject_matches(const json_t *subject, const char *binding_ns, const struct rbac_user *u)
{
	const char *kind = json_string_value(json_object_get(subject, "kind"));
	const char *name = json_string_value(json_object_get(subject, "name"));

	if (!kind || !name)
		return false;
	if (strcmp(kind, "User") == 0)
		return strcmp(name, u->name) == 0;
	if (strcmp(kind, "Group") == 0)
		return rbac_user_in_group(u, name);
	if (strcmp(kind, "ServiceAccount") == 0) {
		const char *ns = json_string_value(json_object_get(subject, "namespace"));
		char want[600];

		if (!ns || !*ns)
			ns = binding_ns;
		if (!ns || !*ns)
			return false;
		snprintf(want, sizeof(want), "system:serviceaccount:%s:%s", ns, name);
		return strcmp(want, u->name) == 0;
	}
	return false;
}

void rbac_forbidden_reason(const struct rbac_attrs *a, const char *user, char *buf, size_t size)
{
	char res[600];

	if (!a->resource_request) {
		snprintf(buf, size, "User \"%s\" cannot %s path \"%s\"", user, a->verb,
			 a->path ? a->path : "");
		return;
	}
	if (a->subresource && *a->subresource)
		snprintf(res, sizeof(res), "%s/%s", a->resource, a->subresource);
	else
		snprintf(res, sizeof(res), "%s", a->resource);
	if (a->ns && *a->ns)
		snprintf(buf, size, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" in the namespace \"%s\"",
			 user, a->verb, res, a->group, a->ns);
	else
		snprintf(buf, size, "User \"%s\" cannot %s resource \"%s\" in API group \"%s\" at the cluster scope",
			 user, a->verb, res, a->group);
}

/* Does owner rule o cover the atomic rule (one verb, group, resource, name
 * or one verb and URL)?  A "*" asked for is covered only by "*" held. */
static bool atom_covered(const json_t *o, const char *verb, const char *group, const char *res,
			 const char *name, const char *url)
{
	if (!has_or_all(json_object_get(o, "verbs"), verb))
		return false;
	if (url) {
		json_t *urls = json_object_get(o, "nonResourceURLs");

		return url_matches(urls, url) && (strcmp(url, "*") != 0 || has(urls, "*"));
	}
	if (!has_or_all(json_object_get(o, "apiGroups"), group))
		return false;
	if (!has(json_object_get(o, "resources"), "*") && !has(json_object_get(o, "resources"), res)) {
		const char *slash = strchr(res, '/');
		char star[300];

		if (!slash)
			return false;
		snprintf(star, sizeof(star), "*%s", slash);
		if (!has(json_object_get(o, "resources"), star))
			return false;
	}
	if (json_array_size(json_object_get(o, "resourceNames")) == 0)
		return true;
	return name && has(json_object_get(o, "resourceNames"), name);
}

static bool any_covers(const json_t *owner, const char *verb, const char *group, const char *res,
		       const char *name, const char *url)
{
	size_t i;
	json_t *o;

	json_array_foreach(owner, i, o)
		if (atom_covered(o, verb, group, res, name, url))
			return true;
	return false;
}

static json_t *atom(const char *verb, const char *group, const char *res, const char *name,
		    const char *url)
{
	if (url)
		return json_pack("{s:[s],s:[s]}", "nonResourceURLs", url, "verbs", verb);
	if (name)
		return json_pack("{s:[s],s:[s],s:[s],s:[s]}", "apiGroups", group, "resources", res,
				 "resourceNames", name, "verbs", verb);
	return json_pack("{s:[s],s:[s],s:[s]}", "apiGroups", group, "resources", res, "verbs", verb);
}

size_t rbac_uncovered(const json_t *owner, const json_t *rules, json_t *missing)
{
	size_t n = 0, tried = 0, i, iv, ig, ir, in;
	json_t *rule, *v, *g, *r, *nm;

	json_array_foreach(rules, i, rule) {
		json_t *verbs = json_object_get(rule, "verbs"), *urls = json_object_get(rule, "nonResourceURLs");
		json_t *names = json_object_get(rule, "resourceNames");

		json_array_foreach(verbs, iv, v) {
			const char *verb = json_string_value(v);

			if (!verb)
				continue;
			json_array_foreach(urls, ir, r) {
				const char *url = json_string_value(r);

				if (url && ++tried < ATOMS_MAX && !any_covers(owner, verb, NULL, NULL, NULL, url)) {
					json_array_append_new(missing, atom(verb, NULL, NULL, NULL, url));
					n++;
				}
			}
			json_array_foreach(json_object_get(rule, "apiGroups"), ig, g) {
				json_array_foreach(json_object_get(rule, "resources"), ir, r) {
					const char *group = json_string_value(g), *res = json_string_value(r);

					if (!group || !res)
						continue;
					if (json_array_size(names) == 0) {
						if (++tried < ATOMS_MAX &&
						    !any_covers(owner, verb, group, res, NULL, NULL)) {
							json_array_append_new(missing, atom(verb, group, res, NULL, NULL));
							n++;
						}
						continue;
					}
					json_array_foreach(names, in, nm) {
						const char *name = json_string_value(nm);

						if (name && ++tried < ATOMS_MAX &&
						    !any_covers(owner, verb, group, res, name, NULL)) {
							json_array_append_new(missing, atom(verb, group, res, name, NULL));
							n++;
						}
					}
				}
			}
		}
	}
	/* Past the bound nothing more is checked: refuse rather than allow. */
	if (tried >= ATOMS_MAX) {
		json_array_append_new(missing, json_pack("{s:[s],s:[s],s:[s]}", "apiGroups", "*", "resources",
							 "*", "verbs", "*"));
		n++;
	}
	return n;
}

static void add_list(strbuf *sb, const char *label, const json_t *arr, bool *first)
{
	size_t i;
	json_t *v;

	if (json_array_size(arr) == 0)
		return;
	strbuf_addf(sb, "%s%s:[", *first ? "" : ", ", label);
	json_array_foreach(arr, i, v)
		strbuf_addf(sb, "%s\"%s\"", i ? " " : "", json_string_value(v) ? json_string_value(v) : "");
	strbuf_adds(sb, "]");
	*first = false;
}

void rbac_rule_string(const json_t *rule, char *buf, size_t size)
{
	strbuf sb = STRBUF_INIT;
	bool first = true;

	strbuf_adds(&sb, "{");
	add_list(&sb, "APIGroups", json_object_get(rule, "apiGroups"), &first);
	add_list(&sb, "Resources", json_object_get(rule, "resources"), &first);
	add_list(&sb, "ResourceNames", json_object_get(rule, "resourceNames"), &first);
	add_list(&sb, "NonResourceURLs", json_object_get(rule, "nonResourceURLs"), &first);
	add_list(&sb, "Verbs", json_object_get(rule, "verbs"), &first);
	strbuf_adds(&sb, "}");
	snprintf(buf, size, "%s", sb.buf ? sb.buf : "{}");
	strbuf_release(&sb);
}

/* --- resolution from the store ------------------------------------------- */

struct cache_entry {
	char *key;
	json_t *rules;
	uint64_t stamps[4];
	struct cache_entry *next;
};

struct rbac {
	struct kube_api *api;
	store *store;
	pthread_mutex_t lock;
	struct cache_entry *buckets[CACHE_BUCKETS];
	size_t n;
};

static const char *const stamp_keys[4] = { KEY_ROLES, KEY_CROLES, KEY_RB, KEY_CRB };

static void read_stamps(struct rbac *rb, uint64_t out[4])
{
	int i;

	for (i = 0; i < 4; i++)
		out[i] = store_resource_stamp(rb->store, stamp_keys[i]);
}

static json_t *load(struct rbac *rb, const char *key, const char *ns, const char *name)
{
	store_obj *o = NULL;
	json_t *j;

	if (store_get(rb->store, key, ns, name, &o) < 0)
		return NULL;
	j = json_loadb(o->json, o->len, 0, NULL);
	store_obj_free(o);
	return j;
}

struct collect {
	json_t *items;
};

static int collect_visit(const store_obj *so, void *userdata)
{
	struct collect *c = userdata;
	json_t *j = json_loadb(so->json, so->len, 0, NULL);

	if (j)
		json_array_append_new(c->items, j);
	return 0;
}

static json_t *list_all(struct rbac *rb, const char *key, const char *ns)
{
	struct collect c = { json_array() };

	store_list(rb->store, key, ns, NULL, NULL, collect_visit, &c, NULL);
	return c.items;
}

static void extend(json_t *dst, const json_t *src)
{
	size_t i;
	json_t *v;

	json_array_foreach(src, i, v)
		if (json_is_object(v))
			json_array_append(dst, v);
}

static void clusterrole_rules(struct rbac *rb, const json_t *role, json_t *out, int depth);

static void aggregate(struct rbac *rb, const json_t *role, json_t *out, int depth)
{
	json_t *sels = json_object_get(json_object_get(role, "aggregationRule"), "clusterRoleSelectors");
	const char *self = json_string_value(json_object_get(json_object_get(role, "metadata"), "name"));
	json_t *all, *cr, *sel;
	size_t i, j;

	if (json_array_size(sels) == 0 || depth <= 0)
		return;
	all = list_all(rb, KEY_CROLES, "");
	json_array_foreach(all, i, cr) {
		const char *name = json_string_value(json_object_get(json_object_get(cr, "metadata"), "name"));
		json_t *labels = json_object_get(json_object_get(cr, "metadata"), "labels");

		if (!name || (self && strcmp(name, self) == 0))
			continue;
		json_array_foreach(sels, j, sel) {
			label_selector *ls = NULL;
			bool m;

			if (label_selector_from_json(sel, &ls, NULL) < 0)
				continue;
			/* An empty selector selects nothing here, as upstream. */
			m = !label_selector_is_empty(ls) && label_selector_matches(ls, labels);
			label_selector_free(ls);
			if (m) {
				clusterrole_rules(rb, cr, out, depth - 1);
				break;
			}
		}
	}
	json_decref(all);
}

/* An aggregated role's rules are what it aggregates (the aggregation
 * controller overwrites its stored rules with them). */
static void clusterrole_rules(struct rbac *rb, const json_t *role, json_t *out, int depth)
{
	if (json_array_size(json_object_get(json_object_get(role, "aggregationRule"), "clusterRoleSelectors")))
		aggregate(rb, role, out, depth);
	else
		extend(out, json_object_get(role, "rules"));
}

json_t *rbac_role_rules(struct rbac *rb, const char *kind, const char *ns, const char *name)
{
	json_t *out = json_array(), *role;

	if (!kind || !name)
		return out;
	if (strcmp(kind, "Role") == 0) {
		if (!ns || !*ns)
			return out;
		role = load(rb, KEY_ROLES, ns, name);
		if (role)
			extend(out, json_object_get(role, "rules"));
	} else if (strcmp(kind, "ClusterRole") == 0) {
		role = load(rb, KEY_CROLES, "", name);
		if (role)
			clusterrole_rules(rb, role, out, AGGREGATION_DEPTH);
	} else {
		return out;
	}
	json_decref(role);
	return out;
}

static void bindings_rules(struct rbac *rb, const struct rbac_user *u, const char *key,
			   const char *ns, json_t *out)
{
	json_t *items = list_all(rb, key, ns), *b, *s;
	size_t i, j;

	json_array_foreach(items, i, b) {
		json_t *ref = json_object_get(b, "roleRef"), *rules;

		json_array_foreach(json_object_get(b, "subjects"), j, s) {
			if (!rbac_subject_matches(s, ns, u))
				continue;
			rules = rbac_role_rules(rb, json_string_value(json_object_get(ref, "kind")), ns,
						json_string_value(json_object_get(ref, "name")));
			extend(out, rules);
			json_decref(rules);
			break;
		}
	}
	json_decref(items);
}

static json_t *resolve(struct rbac *rb, const struct rbac_user *u, const char *ns)
{
	json_t *out = json_array();

	bindings_rules(rb, u, KEY_CRB, "", out);
	if (ns && *ns)
		bindings_rules(rb, u, KEY_RB, ns, out);
	return out;
}

static char *cache_key(const struct rbac_user *u, const char *ns, unsigned *ret_hash)
{
	strbuf sb = STRBUF_INIT;
	unsigned h = 5381;
	size_t i;
	char *s;

	strbuf_adds(&sb, u->name);
	for (i = 0; i < u->ngroups; i++) {
		strbuf_adds(&sb, "\x01");
		strbuf_adds(&sb, u->groups[i]);
	}
	strbuf_adds(&sb, "\x02");
	strbuf_adds(&sb, ns ? ns : "");
	s = strbuf_detach(&sb, NULL);
	for (i = 0; s && s[i]; i++)
		h = h * 33 + (unsigned char)s[i];
	*ret_hash = h % CACHE_BUCKETS;
	return s;
}

static void cache_clear(struct rbac *rb)
{
	size_t i;

	for (i = 0; i < CACHE_BUCKETS; i++) {
		struct cache_entry *e = rb->buckets[i], *next;

		for (; e; e = next) {
			next = e->next;
			free(e->key);
			json_decref(e->rules);
			free(e);
		}
		rb->buckets[i] = NULL;
	}
	rb->n = 0;
}

json_t *rbac_rules_for(struct rbac *rb, const struct rbac_user *u, const char *ns)
{
	uint64_t stamps[4];
	unsigned h;
	char *key = cache_key(u, ns, &h);
	struct cache_entry *e;
	json_t *rules;

	if (!key)
		return NULL;
	/* Stamps read before the objects: a change after this read leaves a
	 * stamp that differs from the one stored with the entry. */
	read_stamps(rb, stamps);
	pthread_mutex_lock(&rb->lock);
	for (e = rb->buckets[h]; e; e = e->next) {
		if (strcmp(e->key, key) == 0 && memcmp(e->stamps, stamps, sizeof(stamps)) == 0) {
			rules = json_incref(e->rules);
			pthread_mutex_unlock(&rb->lock);
			free(key);
			return rules;
		}
	}
	pthread_mutex_unlock(&rb->lock);
	rules = resolve(rb, u, ns);
	pthread_mutex_lock(&rb->lock);
	for (e = rb->buckets[h]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			break;
	if (!e) {
		if (rb->n >= CACHE_MAX)
			cache_clear(rb);
		e = calloc(1, sizeof(*e));
		if (e) {
			e->key = key;
			key = NULL;
			e->next = rb->buckets[h];
			rb->buckets[h] = e;
			rb->n++;
		}
	}
	if (e) {
		json_decref(e->rules);
		e->rules = json_incref(rules);
		memcpy(e->stamps, stamps, sizeof(stamps));
	}
	pthread_mutex_unlock(&rb->lock);
	free(key);
	return rules;
}

bool rbac_allowed(struct rbac *rb, const struct rbac_user *u, const struct rbac_attrs *a)
{
	json_t *rules;
	bool ok;

	if (rbac_user_in_group(u, RBAC_MASTERS))
		return true;
	rules = rbac_rules_for(rb, u, a->resource_request ? a->ns : "");
	ok = rules && rbac_rules_allow(rules, a);
	json_decref(rules);
	return ok;
}

/* --- admission: the fields the API server checks on RBAC objects --------- */

static int invalid(ah_err *err, const struct kube_kind *k, const json_t *obj, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int invalid(ah_err *err, const struct kube_kind *k, const json_t *obj, const char *fmt, ...)
{
	char detail[1024];
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return ah_err_set(err, EINVAL, 422, "Invalid", "%s.%s \"%s\" is invalid: %s", k->kind, k->group,
			  name ? name : "", detail);
}

static int check_rules(const struct kube_kind *k, const json_t *obj, bool allow_urls, ah_err *err)
{
	json_t *rules = json_object_get(obj, "rules"), *r;
	size_t i;

	if (rules && !json_is_array(rules))
		return invalid(err, k, obj, "rules: Invalid value: \"%s\": must be an array",
			       json_is_object(rules) ? "object" : "value");
	json_array_foreach(rules, i, r) {
		bool urls = json_array_size(json_object_get(r, "nonResourceURLs")) > 0;
		bool res = json_array_size(json_object_get(r, "resources")) > 0;

		if (json_array_size(json_object_get(r, "verbs")) == 0)
			return invalid(err, k, obj, "rules[%zu].verbs: Required value: verbs must contain at least one value", i);
		if (urls && !allow_urls)
			return invalid(err, k, obj, "rules[%zu].nonResourceURLs: Invalid value: %s: namespaced rules cannot apply to non-resource URLs",
				       i, "[]");
		if (urls && res)
			return invalid(err, k, obj, "rules[%zu].nonResourceURLs: Invalid value: %s: rules cannot apply to both regular resources and non-resource URLs",
				       i, "[]");
		if (!urls && !res)
			return invalid(err, k, obj, "rules[%zu].resources: Required value: resource rules must supply at least one resource", i);
		if (res && json_array_size(json_object_get(r, "apiGroups")) == 0)
			return invalid(err, k, obj, "rules[%zu].apiGroups: Required value: resource rules must supply at least one api group", i);
	}
	return 0;
}

static int check_binding(const struct kube_kind *k, const json_t *old, const json_t *obj, ah_err *err)
{
	json_t *ref = json_object_get(obj, "roleRef"), *s;
	const char *kind = json_string_value(json_object_get(ref, "kind"));
	const char *group = json_string_value(json_object_get(ref, "apiGroup"));
	const char *name = json_string_value(json_object_get(ref, "name"));
	bool cluster = !k->namespaced;
	size_t i;

	if (!kind || !*kind)
		return invalid(err, k, obj, "roleRef.kind: Required value");
	if (strcmp(kind, "ClusterRole") != 0 && (cluster || strcmp(kind, "Role") != 0))
		return invalid(err, k, obj, "roleRef.kind: Unsupported value: \"%s\": supported values: %s",
			       kind, cluster ? "\"ClusterRole\"" : "\"Role\", \"ClusterRole\"");
	if (!group || strcmp(group, RBAC_GROUP) != 0)
		return invalid(err, k, obj, "roleRef.apiGroup: Unsupported value: \"%s\": supported values: \"%s\"",
			       group ? group : "", RBAC_GROUP);
	if (!name || !*name)
		return invalid(err, k, obj, "roleRef.name: Required value");
	if (old && !json_equal(json_object_get(old, "roleRef"), ref))
		return invalid(err, k, obj, "roleRef: Invalid value: {\"apiGroup\":\"%s\",\"kind\":\"%s\",\"name\":\"%s\"}: cannot change roleRef",
			       group, kind, name);
	json_array_foreach(json_object_get(obj, "subjects"), i, s) {
		const char *sk = json_string_value(json_object_get(s, "kind"));
		const char *sn = json_string_value(json_object_get(s, "name"));

		if (!sn || !*sn)
			return invalid(err, k, obj, "subjects[%zu].name: Required value", i);
		if (!sk || (strcmp(sk, "User") != 0 && strcmp(sk, "Group") != 0 &&
			    strcmp(sk, "ServiceAccount") != 0))
			return invalid(err, k, obj, "subjects[%zu].kind: Unsupported value: \"%s\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
				       i, sk ? sk : "");
		if (strcmp(sk, "ServiceAccount") == 0 && cluster &&
		    !*(json_string_value(json_object_get(s, "namespace")) ? json_string_value(json_object_get(s, "namespace")) : ""))
			return invalid(err, k, obj, "subjects[%zu].namespace: Required value", i);
	}
	return 0;
}

static int rbac_admit(void *userdata, const struct kube_kind *k, enum kube_op op, const json_t *old,
		      json_t *obj, ah_err *err)
{
	if (op == KUBE_DELETE)
		return 0;
	if (strcmp(k->plural, "roles") == 0)
		return check_rules(k, obj, false, err);
	if (strcmp(k->plural, "clusterroles") == 0)
		return check_rules(k, obj, true, err);
	return check_binding(k, op == KUBE_UPDATE ? old : NULL, obj, err);
}

int rbac_new(struct kube_api *api, struct rbac **ret, ah_err *err)
{
	struct rbac *rb = calloc(1, sizeof(*rb));
	size_t i;
	int r;

	if (!rb)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	rb->api = api;
	rb->store = kube_api_store(api);
	pthread_mutex_init(&rb->lock, NULL);
	for (i = 0; i < 4; i++) {
		r = kube_api_add_admission(api, stamp_keys[i], rbac_admit, rb);
		if (r < 0) {
			rbac_free(rb);
			return ah_err_set(err, r, 500, "InternalError", "registering RBAC admission");
		}
	}
	*ret = rb;
	return 0;
}

void rbac_free(struct rbac *rb)
{
	if (!rb)
		return;
	cache_clear(rb);
	pthread_mutex_destroy(&rb->lock);
	free(rb);
}

/* --- bootstrap policy ----------------------------------------------------- */

/* The hub's kinds by API group, for the aggregated admin/edit/view roles. */
#define HUB_GROUPS "\"agent-install.openshift.io\",\"hive.openshift.io\",\"extensions.hive.openshift.io\",\"metal3.io\""
#define WRITE_VERBS "\"create\",\"delete\",\"deletecollection\",\"patch\",\"update\""
#define READ_VERBS "\"get\",\"list\",\"watch\""
#define META(name, labels) "\"metadata\":{\"name\":\"" name "\",\"labels\":{\"kubernetes.io/bootstrapping\":\"rbac-defaults\"" labels "}," \
	"\"annotations\":{\"rbac.authorization.kubernetes.io/autoupdate\":\"true\"}}"
#define AGG(label) "\"aggregationRule\":{\"clusterRoleSelectors\":[{\"matchLabels\":{\"rbac.authorization.k8s.io/" label "\":\"true\"}}]}"
#define TO(label) ",\"rbac.authorization.k8s.io/" label "\":\"true\""

static const char bootstrap_roles[] = "["
	"{" META("cluster-admin", "") ",\"rules\":["
	"{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},"
	"{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]},"
	"{" META("system:aggregate-to-admin", TO("aggregate-to-admin")) ",\"rules\":["
	"{\"apiGroups\":[\"" RBAC_GROUP "\"],\"resources\":[\"rolebindings\",\"roles\"],\"verbs\":[" WRITE_VERBS "," READ_VERBS "]},"
	"{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":[\"localsubjectaccessreviews\"],\"verbs\":[\"create\"]}]},"
	"{" META("system:aggregate-to-edit", TO("aggregate-to-edit")) ",\"rules\":["
	"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"secrets\",\"serviceaccounts\",\"events\"],\"verbs\":[" WRITE_VERBS "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[" READ_VERBS "]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts/token\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts\"],\"verbs\":[\"impersonate\"]},"
	"{\"apiGroups\":[" HUB_GROUPS "],\"resources\":[\"*\"],\"verbs\":[" WRITE_VERBS "]}]},"
	"{" META("system:aggregate-to-view", TO("aggregate-to-view")) ",\"rules\":["
	"{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"events\",\"namespaces\",\"namespaces/status\",\"serviceaccounts\"],\"verbs\":[" READ_VERBS "]},"
	"{\"apiGroups\":[" HUB_GROUPS "],\"resources\":[\"*\"],\"verbs\":[" READ_VERBS "]}]},"
	"{" META("system:discovery", "") ",\"rules\":[{\"nonResourceURLs\":[\"/api\",\"/api/*\",\"/apis\",\"/apis/*\","
	"\"/healthz\",\"/livez\",\"/openapi\",\"/openapi/*\",\"/readyz\",\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]},"
	"{" META("system:public-info-viewer", "") ",\"rules\":[{\"nonResourceURLs\":[\"/healthz\",\"/livez\","
	"\"/readyz\",\"/version\",\"/version/\"],\"verbs\":[\"get\"]}]},"
	"{" META("system:basic-user", "") ",\"rules\":["
	"{\"apiGroups\":[\"authorization.k8s.io\"],\"resources\":[\"selfsubjectaccessreviews\",\"selfsubjectrulesreviews\"],\"verbs\":[\"create\"]},"
	"{\"apiGroups\":[\"authentication.k8s.io\"],\"resources\":[\"selfsubjectreviews\"],\"verbs\":[\"create\"]}]},"
	/* Aggregated roles last, so that what they aggregate exists. */
	"{" META("view", TO("aggregate-to-edit")) "," AGG("aggregate-to-view") ",\"rules\":[]},"
	"{" META("edit", TO("aggregate-to-admin")) "," AGG("aggregate-to-edit") ",\"rules\":[]},"
	"{" META("admin", "") "," AGG("aggregate-to-admin") ",\"rules\":[]}"
	"]";

#define CRB(name, role, subjects) "{" META(name, "") ",\"roleRef\":{\"apiGroup\":\"" RBAC_GROUP "\"," \
	"\"kind\":\"ClusterRole\",\"name\":\"" role "\"},\"subjects\":[" subjects "]}"
#define GROUP_SUBJECT(g) "{\"apiGroup\":\"" RBAC_GROUP "\",\"kind\":\"Group\",\"name\":\"" g "\"}"

static const char bootstrap_bindings[] = "["
	CRB("cluster-admin", "cluster-admin", GROUP_SUBJECT(RBAC_MASTERS)) ","
	CRB("system:discovery", "system:discovery", GROUP_SUBJECT("system:authenticated")) ","
	CRB("system:basic-user", "system:basic-user", GROUP_SUBJECT("system:authenticated")) ","
	CRB("system:public-info-viewer", "system:public-info-viewer",
	    GROUP_SUBJECT("system:authenticated") "," GROUP_SUBJECT("system:unauthenticated"))
	"]";

static int create_missing(struct rbac *rb, const char *plural, const char *text, ah_err *err)
{
	const struct kube_kind *k = kube_registry_by_resource(kube_api_registry(rb->api), RBAC_GROUP,
							       "v1", plural);
	json_t *items = json_loads(text, 0, NULL), *it;
	size_t i;
	int r = 0;

	if (!k || !items) {
		json_decref(items);
		return ah_err_set(err, EINVAL, 500, "InternalError", "RBAC bootstrap: %s not known", plural);
	}
	json_array_foreach(items, i, it) {
		const char *name = json_string_value(json_object_get(json_object_get(it, "metadata"), "name"));
		struct kube_opts o = { 0 };
		json_t *ret = NULL, *body;
		ah_err e;

		if (kube_get(rb->api, k, "", name, &ret, &e) == 0) {
			json_decref(ret);
			continue;
		}
		body = json_deep_copy(it);
		json_object_set_new(body, "apiVersion", json_string(k->api_version));
		json_object_set_new(body, "kind", json_string(k->kind));
		/* The aggregated roles carry their rules as the aggregation
		 * controller would write them. */
		if (json_object_get(body, "aggregationRule")) {
			json_t *rules = json_array();

			aggregate(rb, body, rules, AGGREGATION_DEPTH);
			json_object_set_new(body, "rules", rules);
		}
		r = kube_create(rb->api, k, "", body, &o, &ret, err);
		json_decref(body);
		json_decref(ret);
		if (r < 0 && r != -EEXIST)
			break;
		r = 0;
	}
	json_decref(items);
	return r;
}

int rbac_bootstrap(struct rbac *rb, ah_err *err)
{
	int r = create_missing(rb, "clusterroles", bootstrap_roles, err);

	if (r == 0)
		r = create_missing(rb, "clusterrolebindings", bootstrap_bindings, err);
	return r;
}
