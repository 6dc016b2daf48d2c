/* classification.c - AgentClassification (kubeapi.md §4.6): two controllers.
 *
 * "AgentLabel" (keyed by Agent; the classifications of its namespace also
 * queue it) evaluates every classification's jq query against the Agent's
 * status.inventory and keeps the label agentclassification.agent-install.
 * openshift.io/<labelKey> on it: labelValue when the query gives exactly
 * true, QUERYERROR-<labelValue> when it does not parse, fails or gives zero
 * or several values, absent otherwise (and while the classification is being
 * deleted).  A label is removed only while it holds one of the two values
 * the classification writes, so a user's own value stays.
 *
 * "AgentClassification" (keyed by classification; the Agents of its
 * namespace also queue it) adds the finalizer, counts the Agents whose label
 * is labelValue (matchedCount) or starts with QUERYERROR (errorCount), and
 * writes those with the QueryErrors condition; while being deleted it drops
 * the finalizer once nothing matches any more, without writing status.
 *
 * Queries run in libjq (Debian's jq, as upstream runs gojq).  jq has no way
 * to interrupt a running program, so queries that can loop or grow without
 * end (definitions, recursion, ranges, loops, reading more input) are
 * refused as query errors before they run, and at most two results are
 * taken; libjq runs under one lock. */
#include <jq.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "assisted/conditions.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/registry.h"

#define CLASS_GROUP "agent-install.openshift.io"
#define CLASS_FINALIZER "agentclassification." CLASS_GROUP
#define CLASS_LABEL_PREFIX "agentclassification." CLASS_GROUP "/"
#define QUERY_ERROR "QUERYERROR"
#define QUERY_MAX 4096

static pthread_mutex_t jq_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *cstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const struct kube_kind *class_kind(struct hub *h)
{
	return kube_registry_by_kind(h->reg, CLASS_GROUP "/v1beta1", "AgentClassification");
}

/* Whether query uses a construct that could run without end. */
static bool query_unbounded(const char *q)
{
	static const char *const words[] = { "def", "while", "until", "repeat", "recurse", "range", "limit",
					     "input", "inputs", "env", "walk", "paths", "getpath", "splits",
					     "combinations", "$__loc__", NULL };
	const char *const *w;

	if (strlen(q) > QUERY_MAX || strstr(q, ".."))
		return true;
	for (w = words; *w; w++) {
		size_t n = strlen(*w);
		const char *p;

		for (p = strstr(q, *w); p; p = strstr(p + 1, *w)) {
			bool start = p == q || !(p[-1] == '_' || p[-1] == '$' || (p[-1] >= 'a' && p[-1] <= 'z') ||
						 (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
			char e = p[n];
			bool end = !(e == '_' || (e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'));

			/* A field named like a builtin (.range) is a path, not a call. */
			if (start && end && (p == q || p[-1] != '.'))
				return true;
		}
	}
	return false;
}

static void jq_quiet(void *data, jv msg)
{
	(void)data;
	jv_free(msg);
}

int hub_classification_match(const char *query, const json_t *inventory)
{
	char *text = json_dumps(inventory ? inventory : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
	jq_state *jq;
	jv in, v;
	int n = 0, res = -1;

	if (!text || !query || query_unbounded(query)) {
		free(text);
		return -1;
	}
	pthread_mutex_lock(&jq_lock);
	jq = jq_init();
	if (!jq)
		goto out;
	jq_set_error_cb(jq, jq_quiet, NULL);
	if (!jq_compile(jq, query))
		goto out;
	in = jv_parse(text);
	if (!jv_is_valid(in)) {
		jv_free(in);
		goto out;
	}
	jq_start(jq, in, 0);
	while (n < 2 && jv_is_valid(v = jq_next(jq))) {
		res = jv_get_kind(v) == JV_KIND_TRUE;
		jv_free(v);
		n++;
	}
	if (n < 2 && jv_invalid_has_msg(jv_copy(v)))
		n = 0; /* the program failed */
	if (n < 2)
		jv_free(v);
	if (n != 1)
		res = -1;
out:
	if (jq)
		jq_teardown(&jq);
	pthread_mutex_unlock(&jq_lock);
	free(text);
	return res;
}

/* --- the label controller ------------------------------------------------------ */

struct keys {
	json_t *list;
};

static int collect(const char *ns, const char *name, void *ud)
{
	struct keys *k = ud;

	json_array_append_new(k->list, json_pack("[s,s]", ns, name));
	return 0;
}

static json_t *keys_in(struct hub *h, const char *resource, const char *ns)
{
	struct keys k = { json_array() };

	if (k.list)
		rt_cache_keys_ns(h->rt, resource, ns, collect, &k);
	return k.list;
}

/* labels is changed in place; whether it changed. */
static bool label_for(json_t *labels, const json_t *cls, const json_t *inventory)
{
	const json_t *spec = json_object_get(cls, "spec");
	const char *lk = cstr(spec, "labelKey"), *lv = cstr(spec, "labelValue");
	char key[320], errval[96];
	const char *cur, *want = NULL;
	int m;

	if (!lk || !lv || snprintf(key, sizeof(key), CLASS_LABEL_PREFIX "%s", lk) >= (int)sizeof(key))
		return false;
	snprintf(errval, sizeof(errval), QUERY_ERROR "-%s", lv);
	cur = cstr(labels, key);
	if (!cstr(json_object_get(cls, "metadata"), "deletionTimestamp")) {
		m = hub_classification_match(cstr(spec, "query"), inventory);
		want = m < 0 ? errval : m ? lv : NULL;
	}
	if (want) {
		if (same(cur, want))
			return false;
		json_object_set_new(labels, key, json_string(want));
		return true;
	}
	if (!cur || (!same(cur, lv) && !same(cur, errval)))
		return false;
	json_object_del(labels, key);
	return true;
}

static struct rt_result label_reconcile(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	const struct kube_kind *kc = class_kind(h);
	json_t *classes, *agent = NULL, *labels, *pair, *ret = NULL;
	bool changed = false;
	size_t i;
	ah_err err;
	int r;

	if (!kc)
		return rt_done();
	classes = keys_in(h, kc->store_key, key->ns);
	if (!json_array_size(classes)) {
		json_decref(classes);
		return rt_done();
	}
	if (kube_get(h->api, h->k_agent, key->ns, key->name, &agent, &err) < 0) {
		json_decref(classes);
		return rt_done();
	}
	labels = json_object_get(json_object_get(agent, "metadata"), "labels");
	labels = json_is_object(labels) ? json_deep_copy(labels) : json_object();
	json_array_foreach(classes, i, pair) {
		json_t *cls = NULL;

		if (kube_get(h->api, kc, key->ns, json_string_value(json_array_get(pair, 1)), &cls, &err) == 0)
			changed |= label_for(labels, cls,
					     json_object_get(json_object_get(agent, "status"), "inventory"));
		json_decref(cls);
	}
	r = 0;
	if (changed) {
		/* The whole label map, guarded by the Agent's version: a
		 * concurrent writer makes this pass run again. */
		json_t *patch = json_pack("{s:{s:o,s:O}}", "metadata", "labels", json_object(), "resourceVersion",
					  json_object_get(json_object_get(agent, "metadata"), "resourceVersion"));
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(json_object_get(agent, "metadata"), "labels"), k, v)
			if (!json_object_get(labels, k))
				json_object_set_new(json_object_get(json_object_get(patch, "metadata"), "labels"), k,
						    json_null());
		json_object_foreach(labels, k, v)
			json_object_set(json_object_get(json_object_get(patch, "metadata"), "labels"), k, v);
		r = kube_patch(h->api, h->k_agent, key->ns, key->name, "application/merge-patch+json", patch, NULL,
			       &ret, &err);
		if (r < 0 && err.status != 404)
			log_warn("agent %s/%s: classification labels: %s", key->ns, key->name, err.message);
		json_decref(patch);
		json_decref(ret);
	}
	json_decref(labels);
	json_decref(agent);
	json_decref(classes);
	return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
}

static void class_to_agents(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *agents = keys_in(h, h->k_agent->store_key, ev->so->ns), *pair;
	size_t i;

	json_array_foreach(agents, i, pair)
		rt_enqueue(c, json_string_value(json_array_get(pair, 0)), json_string_value(json_array_get(pair, 1)));
	json_decref(agents);
}

/* --- the classification controller --------------------------------------------- */

struct counts {
	struct hub *h;
	const char *key, *value;
	int matched, errors;
};

static void count_agents(struct hub *h, const char *ns, struct counts *c)
{
	json_t *agents = keys_in(h, h->k_agent->store_key, ns), *pair;
	size_t i;

	json_array_foreach(agents, i, pair) {
		json_t *a = NULL;
		const char *v;
		ah_err err;

		if (kube_get(h->api, h->k_agent, ns, json_string_value(json_array_get(pair, 1)), &a, &err) < 0)
			continue;
		v = cstr(json_object_get(json_object_get(a, "metadata"), "labels"), c->key);
		if (same(v, c->value))
			c->matched++;
		else if (v && strncmp(v, QUERY_ERROR, strlen(QUERY_ERROR)) == 0)
			c->errors++;
		json_decref(a);
	}
	json_decref(agents);
}

static bool has_finalizer(const json_t *meta)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(meta, "finalizers"), i, f)
		if (same(json_string_value(f), CLASS_FINALIZER))
			return true;
	return false;
}

static int set_finalizers(struct hub *h, const struct kube_kind *kc, const json_t *cls, bool want, ah_err *err)
{
	const json_t *meta = json_object_get(cls, "metadata");
	json_t *list = json_array(), *f, *patch, *ret = NULL;
	size_t i;
	int r;

	json_array_foreach(json_object_get(meta, "finalizers"), i, f)
		if (!same(json_string_value(f), CLASS_FINALIZER))
			json_array_append(list, f);
	if (want)
		json_array_append_new(list, json_string(CLASS_FINALIZER));
	patch = json_pack("{s:{s:o,s:O}}", "metadata", "finalizers", list, "resourceVersion",
			  json_object_get(meta, "resourceVersion"));
	r = kube_patch(h->api, kc, cstr(meta, "namespace"), cstr(meta, "name"), "application/merge-patch+json", patch,
		       NULL, &ret, err);
	json_decref(patch);
	json_decref(ret);
	return r;
}

static struct rt_result class_reconcile(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	const struct kube_kind *kc = class_kind(h);
	json_t *cls = NULL, *st, *cond, *conds, *ret = NULL;
	const json_t *meta, *spec, *old;
	char label[320], now[32];
	struct counts c = { h, label, NULL, 0, 0 };
	ah_err err;
	int r = 0;

	if (!kc || kube_get(h->api, kc, key->ns, key->name, &cls, &err) < 0)
		return rt_done();
	meta = json_object_get(cls, "metadata");
	spec = json_object_get(cls, "spec");
	if (!cstr(meta, "deletionTimestamp") && !has_finalizer(meta)) {
		r = set_finalizers(h, kc, cls, true, &err);
		json_decref(cls);
		/* The update is an event: the counts follow on the next pass. */
		return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	}
	snprintf(label, sizeof(label), CLASS_LABEL_PREFIX "%s", cstr(spec, "labelKey") ? cstr(spec, "labelKey") : "");
	c.value = cstr(spec, "labelValue") ? cstr(spec, "labelValue") : "";
	count_agents(h, key->ns, &c);
	if (cstr(meta, "deletionTimestamp")) {
		if (c.matched == 0 && has_finalizer(meta))
			r = set_finalizers(h, kc, cls, false, &err);
		json_decref(cls);
		return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	}
	old = json_object_get(cls, "status");
	st = json_is_object(old) ? json_deep_copy(old) : json_object();
	if (c.errors) {
		char msg[96];

		snprintf(msg, sizeof(msg), "%d Agents failed to apply the classification", c.errors);
		cond = json_pack("{s:s,s:s,s:s,s:s}", "type", "QueryErrors", "status", "True", "reason", "HasQueryErrors",
				 "message", msg);
	} else {
		cond = json_pack("{s:s,s:s,s:s,s:s}", "type", "QueryErrors", "status", "False", "reason",
				 "NoQueryErrors", "message", "No Agents failed to apply the classification");
	}
	conds = json_pack("[o]", cond);
	util_now_rfc3339(now, sizeof(now));
	conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	/* omitempty counts: a zero is absent, as upstream writes them. */
	if (c.matched)
		json_object_set_new(st, "matchedCount", json_integer(c.matched));
	else
		json_object_del(st, "matchedCount");
	if (c.errors)
		json_object_set_new(st, "errorCount", json_integer(c.errors));
	else
		json_object_del(st, "errorCount");
	if (!json_equal(st, old)) {
		struct kube_opts o = { .status = true };
		json_t *patch = json_pack("{s:O}", "status", st);

		if (json_is_object(old) && !json_object_get(st, "matchedCount") && json_object_get(old, "matchedCount"))
			json_object_set_new(json_object_get(patch, "status"), "matchedCount", json_null());
		if (json_is_object(old) && !json_object_get(st, "errorCount") && json_object_get(old, "errorCount"))
			json_object_set_new(json_object_get(patch, "status"), "errorCount", json_null());
		r = kube_patch(h->api, kc, key->ns, key->name, "application/merge-patch+json", patch, &o, &ret, &err);
		if (r < 0 && err.status != 404)
			log_warn("agentclassification %s/%s: status: %s", key->ns, key->name, err.message);
		json_decref(patch);
		json_decref(ret);
	}
	json_decref(st);
	json_decref(cls);
	return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
}

static void agent_to_classes(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const struct kube_kind *kc = class_kind(h);
	json_t *classes, *pair;
	size_t i;

	if (!kc)
		return;
	classes = keys_in(h, kc->store_key, ev->so->ns);
	json_array_foreach(classes, i, pair)
		rt_enqueue(c, json_string_value(json_array_get(pair, 0)), json_string_value(json_array_get(pair, 1)));
	json_decref(classes);
}

int hub_classification_register(struct hub *h)
{
	const struct kube_kind *kc = class_kind(h);
	int r;

	if (!kc)
		return 0; /* no AgentClassification CRD installed */
	r = rt_cache_resource(h->rt, kc->store_key, false);
	if (r == 0)
		r = rt_cache_resource(h->rt, h->k_agent->store_key, false);
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "AgentLabel",
			.reconcile = label_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = h->k_agent->store_key, .map = RT_MAP_SELF },
				{ .resource = kc->store_key, .map = RT_MAP_FN, .fn = class_to_agents },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "AgentClassification",
			.reconcile = class_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = kc->store_key, .map = RT_MAP_SELF },
				{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_classes },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	return r;
}
