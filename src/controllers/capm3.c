/* capm3.c - what CAPM3 (cluster-api-provider-metal3) does, in place of its
 * controllers (spec more-bmh-capi-metrics-ui-scaleout.md §B.1 item 6,
 * bmac-capi.md §C.11):
 *
 *  - Metal3Cluster: once its Cluster owns it, a finalizer, and status.ready
 *    (status.initialization.provisioned too) when spec.controlPlaneEndpoint
 *    is valid (host and port set), with CAPM3's conditions.
 *  - Metal3Machine: once a Machine owns it, its Cluster's infrastructure is
 *    provisioned and the Machine has its bootstrap data Secret, it takes a
 *    free BareMetalHost of its namespace matching spec.hostSelector and sets
 *    on it, in one write, the image (or customDeploy), userData, metaData,
 *    automatedCleaningMode, online and consumerRef; the annotation
 *    metal3.io/BareMetalHost names the host.  Ready (and provisioned) once
 *    the host is provisioned; spec.providerID metal3://<ns>/<bmh>/<m3m>
 *    once its node exists (here: the Agent of the Machine's InfraEnv is
 *    installed, as CAPI-PLAN decides).  Deleted, it takes the image and
 *    data away (the BMH controller deprovisions the host and powers it
 *    off), then frees the host and drops its finalizer.
 *
 * Free hosts are found through a cache index of the BareMetalHosts that are
 * free (by namespace), never by listing; the Metal3Machines waiting for one
 * are an index too, so a host that becomes free wakes them. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/bmh.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/capm3.h"
#include "kube/api.h"
#include "kube/registry.h"
#include "kube/selector.h"

#define M3M_FINALIZER "metal3machine.infrastructure.cluster.x-k8s.io"
#define M3C_FINALIZER "metal3cluster.infrastructure.cluster.x-k8s.io"
#define ANN_HOST "metal3.io/BareMetalHost"
#define ANN_UNHEALTHY "capm3.metal3.io/unhealthy"
#define ANN_UNHEALTHY_OLD "capi.metal3.io/unhealthy"
#define CAPM3_PAUSED_VALUE "metal3.io/capm3"
#define REQUEUE_MS 30000 /* CAPM3's requeueAfter */
#define WAKE_MAX 64      /* waiting Metal3Machines one freed host wakes */
#define CANDIDATES_MAX 4096

#define IDX_BMH_FREE "capm3Free"         /* BMH -> "ns" when free for a Metal3Machine */
#define IDX_BMH_CONSUMER "capm3Consumer" /* BMH -> "ns/m3m" of its Metal3Machine consumer */
#define IDX_M3M_WAITING "capm3Waiting"   /* Metal3Machine -> "ns" while it has no host */
#define IDX_M3M_MACHINE "capm3Machine"   /* Metal3Machine -> "ns/machine" of its owner Machine */
#define IDX_M3M_CLUSTER "capm3Cluster"   /* Metal3Machine -> "ns/cluster" (cluster-name label) */
#define IDX_M3M_TEMPLATE "capm3Template" /* Metal3Machine -> "ns/template" it was cloned from */
#define ANN_CLONED_NAME "cluster.x-k8s.io/cloned-from-name"
#define ANN_CLONED_GK "cluster.x-k8s.io/cloned-from-groupkind"
#define CLONED_GK "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static const json_t *meta_of(const json_t *o)
{
	return json_object_get(o, "metadata");
}

const struct kube_kind *capm3_kind(struct hub *h, const char *kind)
{
	return kube_registry_by_kind(h->reg, CAPM3_API_VERSION, kind);
}

const struct kube_kind *capm3_capi_kind(struct hub *h, const char *kind)
{
	return kube_registry_by_kind(h->reg, CAPI_API_VERSION, kind);
}

static bool has_str(const json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (same(json_string_value(v), s))
			return true;
	return false;
}

/* The name of obj's owner of kind in group (any version), or NULL. */
static const char *owner_name(const json_t *obj, const char *group, const char *kind)
{
	json_t *o;
	size_t i, gl = strlen(group);

	json_array_foreach(json_object_get(meta_of(obj), "ownerReferences"), i, o) {
		const char *av = nz(jstr(o, "apiVersion"));

		if (same(jstr(o, "kind"), kind) && strncmp(av, group, gl) == 0 && av[gl] == '/')
			return jstr(o, "name");
	}
	return NULL;
}

/* --- conditions ---------------------------------------------------------- */

/* Set a condition in list (an array in status at key, created when absent);
 * v1beta1: CAPI v1beta1 form (severity, no reason when True); else metav1.
 * lastTransitionTime moves only when the status does. */
static void set_cond(json_t *status, const char *key, bool v1beta1, const char *type, bool ok, const char *reason,
		     const char *severity, const char *msg)
{
	json_t *list = json_object_get(status, key), *c, *nc;
	const char *st = ok ? "True" : "False";
	char now[40];
	size_t i;

	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(status, key, list);
	}
	util_now_rfc3339(now, sizeof(now));
	nc = json_pack("{s:s,s:s}", "type", type, "status", st);
	if (!v1beta1 || !ok) {
		if (reason && *reason)
			json_object_set_new(nc, "reason", json_string(reason));
		else if (!v1beta1)
			json_object_set_new(nc, "reason", json_string(ok ? type : "NotReady"));
		if (v1beta1 && severity)
			json_object_set_new(nc, "severity", json_string(severity));
		if (msg && *msg)
			json_object_set_new(nc, "message", json_string(msg));
	}
	/* metav1.Condition: message is required (may be empty). */
	if (!v1beta1 && !json_object_get(nc, "message"))
		json_object_set_new(nc, "message", json_string(msg ? msg : ""));
	json_array_foreach(list, i, c) {
		if (!same(jstr(c, "type"), type))
			continue;
		if (same(jstr(c, "status"), st) && jstr(c, "lastTransitionTime"))
			json_object_set(nc, "lastTransitionTime", json_object_get(c, "lastTransitionTime"));
		else
			json_object_set_new(nc, "lastTransitionTime", json_string(now));
		json_array_set_new(list, i, nc);
		return;
	}
	json_object_set_new(nc, "lastTransitionTime", json_string(now));
	json_array_append_new(list, nc);
}

/* A condition in both forms: status.conditions (v1beta1, reason1) and
 * status.v1beta2.conditions (reason2). */
static void cond2(json_t *status, const char *type1, const char *type2, bool ok, const char *reason1,
		  const char *reason2, const char *severity, const char *msg1, const char *msg2)
{
	json_t *v2 = json_object_get(status, "v1beta2");

	if (!json_is_object(v2)) {
		v2 = json_object();
		json_object_set_new(status, "v1beta2", v2);
	}
	set_cond(status, "conditions", true, type1, ok, reason1, severity, msg1);
	set_cond(v2, "conditions", false, type2, ok, reason2, NULL, msg2);
}

static const json_t *find_cond(const json_t *list, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(list, i, c)
		if (same(jstr(c, "type"), type))
			return c;
	return NULL;
}

/* The Ready summaries of the conditions in both lists: True when all
 * of types are True, else False with the first False one's reason. */
static void summarize(json_t *status, const char *const *types1, const char *const *types2)
{
	const json_t *l1 = json_object_get(status, "conditions");
	const json_t *l2 = json_object_get(json_object_get(status, "v1beta2"), "conditions");
	const json_t *bad1 = NULL, *bad2 = NULL;
	char msg[1024];
	size_t i;

	for (i = 0; types1[i] && !bad1; i++) {
		const json_t *c = find_cond(l1, types1[i]);

		if (c && !same(jstr(c, "status"), "True"))
			bad1 = c;
	}
	for (i = 0; types2[i] && !bad2; i++) {
		const json_t *c = find_cond(l2, types2[i]);

		if (c && !same(jstr(c, "status"), "True"))
			bad2 = c;
	}
	set_cond(status, "conditions", true, "Ready", !bad1, bad1 ? jstr(bad1, "reason") : NULL,
		 bad1 ? jstr(bad1, "severity") : NULL, bad1 ? jstr(bad1, "message") : NULL);
	if (bad2)
		snprintf(msg, sizeof(msg), "* %s: %s", nz(jstr(bad2, "type")),
			 *nz(jstr(bad2, "message")) ? jstr(bad2, "message") : nz(jstr(bad2, "reason")));
	set_cond(json_object_get(status, "v1beta2"), "conditions", false, "Ready", !bad2, bad2 ? "NotReady" : "Ready",
		 NULL, bad2 ? msg : NULL);
}

/* --- writes -------------------------------------------------------------- */

static int write_status(struct hub *h, const struct kube_kind *k, const json_t *obj, json_t *status)
{
	struct kube_opts o = { .status = true };
	json_t *patch, *ret = NULL, *old = json_object_get(obj, "status"), *v;
	const char *key;
	ah_err err = { 0 };
	int r;

	if (json_equal(status, old))
		return 0;
	patch = json_pack("{s:O}", "status", status);
	/* Keys this pass dropped go too. */
	json_object_foreach(old, key, v)
		if (!json_object_get(status, key))
			json_object_set_new(json_object_get(patch, "status"), key, json_null());
	r = kube_patch(h->api, k, jstr(meta_of(obj), "namespace"), jstr(meta_of(obj), "name"),
		       "application/merge-patch+json", patch, &o, &ret, &err);
	if (r < 0 && r != -ENOENT && err.status != 409)
		log_warn("capm3: %s %s/%s: writing status: %s", k->kind, jstr(meta_of(obj), "namespace"),
			 jstr(meta_of(obj), "name"), err.message);
	json_decref(patch);
	json_decref(ret);
	return r == -ENOENT ? 0 : r;
}

/* A merge patch guarded by obj's resourceVersion (a 409 is a retry). */
static int patch_obj(struct hub *h, const struct kube_kind *k, const json_t *obj, json_t *patch)
{
	json_t *m = json_object_get(patch, "metadata"), *ret = NULL;
	ah_err err = { 0 };
	int r;

	if (!json_is_object(m)) {
		m = json_object();
		json_object_set_new(patch, "metadata", m);
	}
	json_object_set(m, "resourceVersion", json_object_get(meta_of(obj), "resourceVersion"));
	r = kube_patch(h->api, k, jstr(meta_of(obj), "namespace"), jstr(meta_of(obj), "name"),
		       "application/merge-patch+json", patch, NULL, &ret, &err);
	if (r < 0 && r != -ENOENT && err.status != 409)
		log_warn("capm3: %s %s/%s: %s", k->kind, jstr(meta_of(obj), "namespace"), jstr(meta_of(obj), "name"),
			 err.message);
	json_decref(ret);
	json_decref(patch);
	if (r == -ENOENT)
		return 0;
	return r < 0 && err.status == 409 ? -EAGAIN : r;
}

/* The finalizers of obj with f added (add) or removed; NULL = no change. */
static json_t *finalizers_with(const json_t *obj, const char *f, bool add)
{
	const json_t *cur = json_object_get(meta_of(obj), "finalizers");
	json_t *out, *v;
	size_t i;

	if (has_str(cur, f) == add)
		return NULL;
	out = json_array();
	json_array_foreach(cur, i, v)
		if (!same(json_string_value(v), f))
			json_array_append(out, v);
	if (add)
		json_array_append_new(out, json_string(f));
	return out;
}

static int set_finalizer(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *f, bool add)
{
	json_t *fl = finalizers_with(obj, f, add);

	if (!fl)
		return 0;
	return patch_obj(h, k, obj, json_pack("{s:{s:o}}", "metadata", "finalizers", fl));
}

/* --- indexes ------------------------------------------------------------- */

static bool bmh_free(const json_t *b)
{
	const json_t *meta = meta_of(b), *ann = json_object_get(meta, "annotations");
	const json_t *spec = json_object_get(b, "spec"), *status = json_object_get(b, "status");
	const json_t *cr = json_object_get(spec, "consumerRef");
	const char *state = jstr(json_object_get(status, "provisioning"), "state");

	return (!cr || json_is_null(cr)) && !json_object_get(meta, "deletionTimestamp") &&
	       !*nz(jstr(status, "errorMessage")) && !json_object_get(ann, BMH_ANN_PAUSED) &&
	       !json_object_get(ann, ANN_UNHEALTHY) && !json_object_get(ann, ANN_UNHEALTHY_OLD) &&
	       (same(state, BMH_ST_READY) || same(state, BMH_ST_AVAILABLE));
}

static void bmh_free_index(const json_t *b, json_t *out)
{
	const char *ns = jstr(meta_of(b), "namespace");

	if (ns && bmh_free(b))
		json_array_append_new(out, json_string(ns));
}

static void bmh_consumer_index(const json_t *b, json_t *out)
{
	const json_t *cr = json_object_get(json_object_get(b, "spec"), "consumerRef");
	char key[600];

	if (same(jstr(cr, "kind"), "Metal3Machine") && jstr(cr, "name")) {
		snprintf(key, sizeof(key), "%s/%s",
			 *nz(jstr(cr, "namespace")) ? jstr(cr, "namespace") : nz(jstr(meta_of(b), "namespace")),
			 jstr(cr, "name"));
		json_array_append_new(out, json_string(key));
	}
}

static void m3m_waiting_index(const json_t *m, json_t *out)
{
	const json_t *meta = meta_of(m);

	if (jstr(meta, "namespace") && !json_object_get(json_object_get(meta, "annotations"), ANN_HOST) &&
	    !json_object_get(meta, "deletionTimestamp"))
		json_array_append_new(out, json_string(jstr(meta, "namespace")));
}

static void m3m_machine_index(const json_t *m, json_t *out)
{
	const char *owner = owner_name(m, CAPI_GROUP, "Machine");
	char key[600];

	if (owner && jstr(meta_of(m), "namespace")) {
		snprintf(key, sizeof(key), "%s/%s", jstr(meta_of(m), "namespace"), owner);
		json_array_append_new(out, json_string(key));
	}
}

static void m3m_cluster_index(const json_t *m, json_t *out)
{
	const char *cl = jstr(json_object_get(meta_of(m), "labels"), CAPI_LABEL_CLUSTER);
	char key[600];

	if (cl && jstr(meta_of(m), "namespace")) {
		snprintf(key, sizeof(key), "%s/%s", jstr(meta_of(m), "namespace"), cl);
		json_array_append_new(out, json_string(key));
	}
}

static void m3m_template_index(const json_t *m, json_t *out)
{
	const json_t *ann = json_object_get(meta_of(m), "annotations");
	char key[600];

	if (jstr(ann, ANN_CLONED_NAME) && same(jstr(ann, ANN_CLONED_GK), CLONED_GK) && jstr(meta_of(m), "namespace")) {
		snprintf(key, sizeof(key), "%s/%s", jstr(meta_of(m), "namespace"), jstr(ann, ANN_CLONED_NAME));
		json_array_append_new(out, json_string(key));
	}
}

static int collect(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

struct collect_max {
	json_t *keys;
	size_t max;
};

static int collect_upto(const char *ns, const char *name, void *ud)
{
	struct collect_max *c = ud;

	json_array_append_new(c->keys, json_pack("[ss]", ns, name));
	return json_array_size(c->keys) >= c->max;
}

static void enqueue_keys(struct rt_controller *c, json_t *keys)
{
	json_t *k;
	size_t i;

	json_array_foreach(keys, i, k)
		rt_enqueue(c, json_string_value(json_array_get(k, 0)), json_string_value(json_array_get(k, 1)));
}

/* --- watches ------------------------------------------------------------- */

/* A BMH: its consumer; when it is free, Metal3Machines waiting in its
 * namespace (a bounded number: the rest retry on their own). */
static void bmh_to_m3ms(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const json_t *cr = json_object_get(json_object_get(ev->obj, "spec"), "consumerRef");
	const json_t *old = rt_event_old_index(ev, IDX_BMH_CONSUMER);
	json_t *v;
	size_t i;

	if (same(jstr(cr, "kind"), "Metal3Machine") && jstr(cr, "name"))
		rt_enqueue(c, *nz(jstr(cr, "namespace")) ? jstr(cr, "namespace") : ev->so->ns, jstr(cr, "name"));
	json_array_foreach(old, i, v) {
		const char *s = json_string_value(v), *slash = s ? strchr(s, '/') : NULL;
		char ns[RT_NS_MAX + 1];

		if (slash && (size_t)(slash - s) <= RT_NS_MAX) {
			snprintf(ns, sizeof(ns), "%.*s", (int)(slash - s), s);
			rt_enqueue(c, ns, slash + 1);
		}
	}
	if (ev->obj && ev->so->type != STORE_DELETED && bmh_free(ev->obj)) {
		struct collect_max cm = { json_array(), WAKE_MAX };
		const struct kube_kind *k = capm3_kind(h, "Metal3Machine");

		if (k)
			rt_cache_keys_by(h->rt, k->store_key, IDX_M3M_WAITING, ev->so->ns, collect_upto, &cm);
		enqueue_keys(c, cm.keys);
		json_decref(cm.keys);
	}
}

/* A Machine: its infrastructure machine, and the Metal3Machines it owns. */
static void machine_to_m3ms(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const json_t *ref = json_object_get(json_object_get(ev->obj, "spec"), "infrastructureRef");
	const struct kube_kind *k = capm3_kind(h, "Metal3Machine");
	json_t *keys = json_array();
	char key[600];

	if (same(jstr(ref, "kind"), "Metal3Machine") && jstr(ref, "name"))
		rt_enqueue(c, ev->so->ns, jstr(ref, "name"));
	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	if (k)
		rt_cache_keys_by(h->rt, k->store_key, IDX_M3M_MACHINE, key, collect, keys);
	enqueue_keys(c, keys);
	json_decref(keys);
}

/* A Cluster: the Metal3Machines of it (its infrastructure may be ready now). */
static void cluster_to_m3ms(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const struct kube_kind *k = capm3_kind(h, "Metal3Machine");
	json_t *keys = json_array();
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	if (k)
		rt_cache_keys_by(h->rt, k->store_key, IDX_M3M_CLUSTER, key, collect, keys);
	enqueue_keys(c, keys);
	json_decref(keys);
}

/* An Agent: the Metal3Machine of the Machine its InfraEnv is named after. */
static void agent_to_m3ms(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const char *ie = jstr(json_object_get(meta_of(ev->obj), "labels"), LABEL_INFRAENV);
	const struct kube_kind *k = capm3_kind(h, "Metal3Machine");
	json_t *keys;
	char key[600];

	if (!ie || !k)
		return;
	keys = json_array();
	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ie);
	rt_cache_keys_by(h->rt, k->store_key, IDX_M3M_MACHINE, key, collect, keys);
	enqueue_keys(c, keys);
	json_decref(keys);
}

/* A Metal3MachineTemplate: the Metal3Machines cloned from it. */
static void template_to_m3ms(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const struct kube_kind *k = capm3_kind(h, "Metal3Machine");
	json_t *keys = json_array();
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	if (k)
		rt_cache_keys_by(h->rt, k->store_key, IDX_M3M_TEMPLATE, key, collect, keys);
	enqueue_keys(c, keys);
	json_decref(keys);
}

/* A Cluster: its Metal3Cluster. */
static void cluster_to_m3c(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	const json_t *ref = json_object_get(json_object_get(ev->obj, "spec"), "infrastructureRef");

	(void)ctx;
	if (same(jstr(ref, "kind"), "Metal3Cluster") && jstr(ref, "name"))
		rt_enqueue(c, ev->so->ns, jstr(ref, "name"));
}

/* --- Metal3Cluster ------------------------------------------------------- */

static int reconcile_m3c(struct hub *h, const char *ns, const char *name, int64_t *requeue)
{
	const struct kube_kind *k = capm3_kind(h, "Metal3Cluster");
	const struct kube_kind *km = capm3_kind(h, "Metal3Machine");
	json_t *m3c = NULL, *status;
	const json_t *ep;
	const char *cluster;
	ah_err err = { 0 };
	bool valid;
	int r;

	r = kube_get(h->api, k, ns, name, &m3c, &err);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	cluster = owner_name(m3c, CAPI_GROUP, "Cluster");
	if (json_object_get(meta_of(m3c), "deletionTimestamp")) {
		/* Not while Metal3Machines of its cluster are left. */
		json_t *keys = json_array();
		char key[600];

		if (cluster && km) {
			snprintf(key, sizeof(key), "%s/%s", ns, cluster);
			rt_cache_keys_by(h->rt, km->store_key, IDX_M3M_CLUSTER, key, collect, keys);
		}
		if (json_array_size(keys) > 0) {
			*requeue = 10000;
			r = 0;
		} else {
			r = set_finalizer(h, k, m3c, M3C_FINALIZER, false);
		}
		json_decref(keys);
		json_decref(m3c);
		return r;
	}
	if (!cluster) {
		/* "Waiting for Cluster Controller to set OwnerRef on Metal3Cluster". */
		json_decref(m3c);
		return 0;
	}
	if (!has_str(json_object_get(meta_of(m3c), "finalizers"), M3C_FINALIZER)) {
		r = set_finalizer(h, k, m3c, M3C_FINALIZER, true);
		json_decref(m3c);
		return r;
	}
	ep = json_object_get(json_object_get(m3c, "spec"), "controlPlaneEndpoint");
	valid = *nz(jstr(ep, "host")) && json_integer_value(json_object_get(ep, "port")) != 0;
	status = json_is_object(json_object_get(m3c, "status")) ? json_deep_copy(json_object_get(m3c, "status"))
								: json_object();
	json_object_set_new(status, "ready", json_boolean(valid));
	json_object_set_new(status, "initialization", json_pack("{s:b}", "provisioned", valid));
	if (valid) {
		char now[40];

		json_object_del(status, "failureReason");
		json_object_del(status, "failureMessage");
		cond2(status, "BaremetalInfrastructureReady", "BaremetalInfrastructureReady", true, NULL, "Ready", NULL,
		      NULL, NULL);
		if (!json_is_true(json_object_get(json_object_get(m3c, "status"), "ready"))) {
			util_now_rfc3339(now, sizeof(now));
			json_object_set_new(status, "lastUpdated", json_string(now));
		}
	} else {
		json_object_set_new(status, "failureReason", json_string("InvalidConfiguration"));
		json_object_set_new(status, "failureMessage", json_string("Invalid ControlPlaneEndpoint values"));
		cond2(status, "BaremetalInfrastructureReady", "BaremetalInfrastructureReady", false,
		      "ControlPlaneEndpointFailed", "ControlPlaneEndpointFailed", "Error",
		      "invalid field ControlPlaneEndpoint", "invalid field ControlPlaneEndpoint");
	}
	{
		static const char *const t[] = { "BaremetalInfrastructureReady", NULL };

		summarize(status, t, t);
	}
	r = write_status(h, k, m3c, status);
	json_decref(status);
	json_decref(m3c);
	return r;
}

/* --- Metal3Machine: choosing a host --------------------------------------- */

/* CAPM3's hostSelector (matchLabels, matchExpressions with its operators,
 * any case) as a label selector. */
static int host_selector(const json_t *hs, label_selector **ret, char *msg, size_t size)
{
	json_t *sel = json_object(), *exprs = json_array(), *e;
	ah_err err = { 0 };
	size_t i;
	int r;

	if (json_is_object(json_object_get(hs, "matchLabels")))
		json_object_set(sel, "matchLabels", json_object_get(hs, "matchLabels"));
	json_array_foreach(json_object_get(hs, "matchExpressions"), i, e) {
		char op[32];
		const char *o = nz(jstr(e, "operator")), *want = NULL;
		size_t j;

		for (j = 0; o[j] && j < sizeof(op) - 1; j++)
			op[j] = (char)tolower((unsigned char)o[j]);
		op[j] = 0;
		if (!strcmp(op, "in") || !strcmp(op, "=") || !strcmp(op, "=="))
			want = "In";
		else if (!strcmp(op, "notin") || !strcmp(op, "!="))
			want = "NotIn";
		else if (!strcmp(op, "exists"))
			want = "Exists";
		else if (!strcmp(op, "!") || !strcmp(op, "doesnotexist"))
			want = "DoesNotExist";
		if (!want) {
			snprintf(msg, size, "spec.hostSelector.matchExpressions[%zu].operator: Unsupported value: \"%s\"",
				 i, o);
			json_decref(sel);
			json_decref(exprs);
			return -EINVAL;
		}
		json_array_append_new(exprs, json_pack("{s:O?,s:s,s:O?}", "key", json_object_get(e, "key"), "operator",
						       want, "values", json_object_get(e, "values")));
	}
	if (json_array_size(exprs))
		json_object_set(sel, "matchExpressions", exprs);
	r = label_selector_from_json(sel, ret, &err);
	if (r < 0)
		snprintf(msg, size, "spec.hostSelector: %.900s", err.message);
	json_decref(sel);
	json_decref(exprs);
	return r;
}

static bool consumer_is(const json_t *bmh, const char *ns, const char *name)
{
	const json_t *cr = json_object_get(json_object_get(bmh, "spec"), "consumerRef");
	const char *av = nz(jstr(cr, "apiVersion"));

	return same(jstr(cr, "kind"), "Metal3Machine") && same(jstr(cr, "name"), name) &&
	       same(*nz(jstr(cr, "namespace")) ? jstr(cr, "namespace") : jstr(meta_of(bmh), "namespace"), ns) &&
	       strncmp(av, CAPM3_GROUP "/", strlen(CAPM3_GROUP) + 1) == 0;
}

/* The host for m3m: one it already consumes, else a random free one that
 * its selector matches.  New ref or NULL; -EINVAL with msg for a bad
 * selector. */
static int choose_host(struct hub *h, const json_t *m3m, json_t **ret, char *msg, size_t size)
{
	const char *ns = jstr(meta_of(m3m), "namespace"), *name = jstr(meta_of(m3m), "name");
	json_t *keys = json_array(), *k, *pick = NULL;
	label_selector *sel = NULL;
	struct collect_max cm = { keys, CANDIDATES_MAX };
	char key[600];
	size_t i, n = 0;
	int r;

	*ret = NULL;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	rt_cache_keys_by(h->rt, h->k_bmh->store_key, IDX_BMH_CONSUMER, key, collect, keys);
	json_array_foreach(keys, i, k) {
		json_t *b = rt_cache_get(h->rt, h->k_bmh->store_key, ns, json_string_value(json_array_get(k, 1)));

		if (b && consumer_is(b, ns, name)) {
			json_decref(keys);
			*ret = b;
			return 0;
		}
		json_decref(b);
	}
	json_array_clear(keys);
	r = host_selector(json_object_get(json_object_get(m3m, "spec"), "hostSelector"), &sel, msg, size);
	if (r < 0) {
		json_decref(keys);
		return r;
	}
	rt_cache_keys_by(h->rt, h->k_bmh->store_key, IDX_BMH_FREE, ns, collect_upto, &cm);
	json_array_foreach(keys, i, k) {
		json_t *b = rt_cache_get(h->rt, h->k_bmh->store_key, ns, json_string_value(json_array_get(k, 1)));
		uint32_t rnd = 0;

		if (!b || !bmh_free(b) || !label_selector_matches(sel, json_object_get(meta_of(b), "labels"))) {
			json_decref(b);
			continue;
		}
		/* Reservoir sampling: each match equally likely, as CAPM3's
		 * random pick. */
		n++;
		util_random_bytes(&rnd, sizeof(rnd));
		if (rnd % n == 0) {
			json_decref(pick);
			pick = b;
		} else {
			json_decref(b);
		}
	}
	label_selector_free(sel);
	json_decref(keys);
	*ret = pick;
	return 0;
}

/* --- Metal3Machine: the node (the Machine's Agent installed) ---------------- */

static bool agent_installed(const json_t *a)
{
	const json_t *c = find_cond(json_object_get(json_object_get(a, "status"), "conditions"), "Installed");
	const char *st = jstr(json_object_get(json_object_get(a, "status"), "debugInfo"), "state");

	return (c && same(jstr(c, "status"), "True")) || same(st, "installed") || same(st, "added-to-existing-cluster");
}

static bool node_exists(struct hub *h, const char *ns, const char *machine)
{
	json_t *keys = json_array(), *k;
	char key[600];
	bool found = false;
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ns, machine);
	rt_cache_keys_by(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_INFRAENV, key, collect, keys);
	json_array_foreach(keys, i, k) {
		json_t *a = NULL;
		ah_err err = { 0 };

		if (kube_get(h->api, h->k_agent, json_string_value(json_array_get(k, 0)),
			     json_string_value(json_array_get(k, 1)), &a, &err) == 0 &&
		    agent_installed(a))
			found = true;
		json_decref(a);
		if (found)
			break;
	}
	json_decref(keys);
	return found;
}

/* CAPM3's machine addresses from the host's hardware details. */
static json_t *host_addresses(const json_t *bmh)
{
	const json_t *hw = json_object_get(json_object_get(bmh, "status"), "hardware"), *nic;
	json_t *out = json_array();
	size_t i;

	json_array_foreach(json_object_get(hw, "nics"), i, nic)
		if (*nz(jstr(nic, "ip")))
			json_array_append_new(out, json_pack("{s:s,s:s}", "type", "InternalIP", "address", jstr(nic, "ip")));
	if (*nz(jstr(hw, "hostname"))) {
		json_array_append_new(out, json_pack("{s:s,s:s}", "type", "Hostname", "address", jstr(hw, "hostname")));
		json_array_append_new(out,
				      json_pack("{s:s,s:s}", "type", "InternalDNS", "address", jstr(hw, "hostname")));
	}
	return out;
}

/* --- Metal3Machine: release ------------------------------------------------ */

static bool host_settled(const json_t *bmh)
{
	const json_t *status = json_object_get(bmh, "status");
	const char *st = nz(jstr(json_object_get(status, "provisioning"), "state"));

	if (!strcmp(st, BMH_ST_NONE) || !strcmp(st, BMH_ST_REGISTERING) || !strcmp(st, BMH_ST_INSPECTING) ||
	    !strcmp(st, BMH_ST_READY) || !strcmp(st, BMH_ST_AVAILABLE) || !strcmp(st, "unmanaged") ||
	    !strcmp(st, "match profile"))
		return true;
	if (!strcmp(st, BMH_ST_EXT_PROVISIONED))
		return !json_is_true(json_object_get(status, "poweredOn"));
	return false;
}

static int release(struct hub *h, const struct kube_kind *k, json_t *m3m, json_t *status, int64_t *requeue)
{
	const char *ns = jstr(meta_of(m3m), "namespace"), *name = jstr(meta_of(m3m), "name");
	const char *hk = jstr(json_object_get(meta_of(m3m), "annotations"), ANN_HOST), *slash;
	json_t *bmh = NULL;
	ah_err err = { 0 };
	int r = 0;

	if (!has_str(json_object_get(meta_of(m3m), "finalizers"), M3M_FINALIZER))
		return 0;
	cond2(status, "Ready", "Ready", false, "Deleting", "Deleting", "Info", NULL, NULL);
	slash = hk ? strchr(hk, '/') : NULL;
	if (slash && kube_get(h->api, h->k_bmh, ns, slash + 1, &bmh, &err) < 0)
		bmh = NULL;
	if (!slash) {
		/* Gone between the host's write and the annotation: the host
		 * that names it as its consumer. */
		json_t *keys = json_array();
		char key[600];

		snprintf(key, sizeof(key), "%s/%s", ns, name);
		rt_cache_keys_by(h->rt, h->k_bmh->store_key, IDX_BMH_CONSUMER, key, collect, keys);
		if (json_array_size(keys) &&
		    kube_get(h->api, h->k_bmh, ns, json_string_value(json_array_get(json_array_get(keys, 0), 1)), &bmh,
			     &err) < 0)
			bmh = NULL;
		json_decref(keys);
	}
	if (bmh && consumer_is(bmh, ns, name)) {
		const json_t *spec = json_object_get(bmh, "spec");
		json_t *sp = json_object();
		bool online = json_is_true(json_object_get(spec, "disablePowerOff"));
		static const char *const drop[] = { "image", "customDeploy", "userData", "metaData", "networkData" };
		size_t i;

		for (i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
			if (json_object_get(spec, drop[i]) && !json_is_null(json_object_get(spec, drop[i])))
				json_object_set_new(sp, drop[i], json_null());
		if (json_is_true(json_object_get(spec, "online")) != online)
			json_object_set_new(sp, "online", json_boolean(online));
		if (json_object_size(sp)) {
			r = patch_obj(h, h->k_bmh, bmh, json_pack("{s:o}", "spec", sp));
			*requeue = 1000;
			goto out;
		}
		json_decref(sp);
		if (!host_settled(bmh)) {
			/* "deprovisioning BareMetalHost, requeuing" */
			*requeue = 5000;
			goto out;
		}
		{
			json_t *patch = json_pack("{s:{s:n}}", "spec", "consumerRef");
			const json_t *labels = json_object_get(meta_of(bmh), "labels");
			const json_t *ann = json_object_get(meta_of(bmh), "annotations");
			const char *cl = jstr(json_object_get(meta_of(m3m), "labels"), CAPI_LABEL_CLUSTER);
			json_t *m = json_object();

			if (jstr(labels, CAPI_LABEL_CLUSTER) && (!cl || same(jstr(labels, CAPI_LABEL_CLUSTER), cl)))
				json_object_set_new(m, "labels", json_pack("{s:n}", CAPI_LABEL_CLUSTER));
			if (same(jstr(ann, BMH_ANN_PAUSED), CAPM3_PAUSED_VALUE))
				json_object_set_new(m, "annotations", json_pack("{s:n}", BMH_ANN_PAUSED));
			json_object_set_new(patch, "metadata", m);
			r = patch_obj(h, h->k_bmh, bmh, patch);
			if (r < 0)
				goto out;
		}
		hub_event(h,
			  &(struct hub_event_ref){ .ns = ns, .kind = "Metal3Machine", .name = name,
						   .uid = jstr(meta_of(m3m), "uid"), .api_version = CAPM3_API_VERSION },
			  HUB_EV_INFO, "bare_metal_host_released",
			  "Metal3Machine %s/%s released BareMetalHost %s/%s", ns, name, ns, jstr(meta_of(bmh), "name"));
	}
	r = capm3_data_release(h, m3m);
	if (r == 0)
		r = set_finalizer(h, k, m3m, M3M_FINALIZER, false);
out:
	json_decref(bmh);
	return r;
}

/* --- Metal3Machine --------------------------------------------------------- */

static void wait_cond(json_t *status, const char *reason1, const char *reason2, const char *msg2)
{
	cond2(status, "AssociateBMH", "AssociateBareMetalHost", false, reason1, reason2, "Info", NULL, msg2);
}

static const char *const M3M_SUMMARY1[] = { "AssociateBMH", "Metal3DataReady", "KubernetesNodeReady", NULL };
static const char *const M3M_SUMMARY2[] = { "AssociateBareMetalHost", "AssociateMetal3MachineMetaData",
					    "Metal3DataReady", NULL };

static bool cluster_infra_ready(const json_t *cluster)
{
	const json_t *st = json_object_get(cluster, "status");
	const json_t *c = find_cond(
		json_object_get(json_object_get(json_object_get(st, "deprecated"), "v1beta1"), "conditions"),
		"InfrastructureReady");

	return json_is_true(json_object_get(json_object_get(st, "initialization"), "infrastructureProvisioned")) ||
	       json_is_true(json_object_get(st, "infrastructureReady")) || (c && same(jstr(c, "status"), "True"));
}

/* Take a host: the one write to it, then the annotation. */
static int associate(struct hub *h, const struct kube_kind *k, const json_t *m3m, const json_t *machine,
		     const char *cluster, json_t *status, int64_t *requeue)
{
	const char *ns = jstr(meta_of(m3m), "namespace"), *name = jstr(meta_of(m3m), "name");
	const json_t *spec = json_object_get(m3m, "spec"), *img = json_object_get(spec, "image");
	const json_t *cd = json_object_get(spec, "customDeploy");
	const char *dsn = jstr(json_object_get(json_object_get(machine, "spec"), "bootstrap"), "dataSecretName");
	json_t *bmh = NULL, *bspec, *patch;
	char msg[1024] = "", *secret = NULL, *data = NULL;
	int r;

	if (!dsn || !*dsn) {
		wait_cond(status, "WaitingForBootstrapReady", "WaitingForBootstrapData",
			  "Waiting for bootstrap data to be ready before proceeding");
		return 0;
	}
	if (!*nz(jstr(img, "url")) && !*nz(jstr(cd, "method"))) {
		snprintf(msg, sizeof(msg), "Metal3Machine %s has neither Image.URL nor CustomDeploy.Method configured",
			 name);
		goto failed;
	}
	r = choose_host(h, m3m, &bmh, msg, sizeof(msg));
	if (r < 0)
		goto failed;
	if (!bmh) {
		const json_t *was = find_cond(json_object_get(json_object_get(status, "v1beta2"), "conditions"),
					      "AssociateBareMetalHost");

		cond2(status, "AssociateBMH", "AssociateBareMetalHost", false, "AssociateBMHFailed",
		      "AssociateBareMetalHostFailed", "Error",
		      "no available host found. Requeuing. Object will be requeued after 30s",
		      "failed to associate the Metal3Machine to a BareMetalHost: no available host found. Requeuing. "
		      "Object will be requeued after 30s");
		if (!was || !same(jstr(was, "reason"), "AssociateBareMetalHostFailed"))
			hub_event(h,
				  &(struct hub_event_ref){ .ns = ns, .kind = "Metal3Machine", .name = name,
							   .uid = jstr(meta_of(m3m), "uid"),
							   .api_version = CAPM3_API_VERSION },
				  HUB_EV_WARNING, "no_available_host",
				  "No available BareMetalHost in namespace %s for Metal3Machine %s (a host must match "
				  "spec.hostSelector, have no consumer, no error, not be paused or unhealthy, and be in "
				  "state ready or available); waiting",
				  ns, name);
		*requeue = REQUEUE_MS;
		return 0;
	}
	if (json_object_get(spec, "dataTemplate") && !json_is_null(json_object_get(spec, "dataTemplate"))) {
		r = capm3_data_render(h, m3m, machine, bmh, cluster, &secret, &data, msg, sizeof(msg));
		if (r < 0) {
			cond2(status, "Metal3DataReady", "AssociateMetal3MachineMetaData", false,
			      "AssociateM3MetaDataFailed", "AssociateMetal3MachineMetaDataFailed", "Warning", msg,
			      msg);
			json_decref(bmh);
			return r == -EINVAL ? 0 : r;
		}
		if (r > 0) {
			cond2(status, "Metal3DataReady", "Metal3DataReady", false, "WaitingForMetal3Data",
			      "WaitingForMetal3Data", "Info", msg, msg);
			*requeue = REQUEUE_MS;
			json_decref(bmh);
			return 0;
		}
	}
	/* The one write to the host. */
	bspec = json_object();
	if (!json_object_get(json_object_get(bmh, "spec"), "image") &&
	    !json_object_get(json_object_get(bmh, "spec"), "customDeploy")) {
		if (*nz(jstr(img, "url"))) {
			json_t *bi = json_pack("{s:s}", "url", jstr(img, "url"));

			if (jstr(img, "checksum"))
				json_object_set(bi, "checksum", json_object_get(img, "checksum"));
			if (jstr(img, "checksumType"))
				json_object_set(bi, "checksumType", json_object_get(img, "checksumType"));
			if (jstr(img, "format"))
				json_object_set(bi, "format", json_object_get(img, "format"));
			json_object_set_new(bspec, "image", bi);
		}
		if (*nz(jstr(cd, "method")))
			json_object_set_new(bspec, "customDeploy", json_pack("{s:s}", "method", jstr(cd, "method")));
		json_object_set_new(bspec, "userData", json_pack("{s:s,s:s}", "name", dsn, "namespace", ns));
		if (secret)
			json_object_set_new(bspec, "metaData", json_pack("{s:s,s:s}", "name", secret, "namespace", ns));
	}
	if (*nz(jstr(spec, "automatedCleaningMode")))
		json_object_set(bspec, "automatedCleaningMode", json_object_get(spec, "automatedCleaningMode"));
	json_object_set_new(bspec, "online", json_true());
	json_object_set_new(bspec, "consumerRef", json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", CAPM3_API_VERSION,
							    "kind", "Metal3Machine", "name", name, "namespace", ns));
	patch = json_pack("{s:o,s:{s:{s:s}}}", "spec", bspec, "metadata", "labels", CAPI_LABEL_CLUSTER, nz(cluster));
	r = patch_obj(h, h->k_bmh, bmh, patch);
	if (r == -EAGAIN) {
		/* Someone else wrote the host first: choose again. */
		*requeue = 200;
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	r = patch_obj(h, k, m3m,
		      json_pack("{s:{s:{s:s++}}}", "metadata", "annotations", ANN_HOST, ns, "/",
				jstr(meta_of(bmh), "name")));
	if (r == -EAGAIN) {
		*requeue = 200;
		r = 0;
		goto out;
	}
	if (r < 0)
		goto out;
	json_object_set_new(status, "userData", json_pack("{s:s,s:s}", "name", dsn, "namespace", ns));
	if (secret) {
		json_object_set_new(status, "metaData", json_pack("{s:s,s:s}", "name", secret, "namespace", ns));
		json_object_set_new(status, "renderedData",
				    json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", CAPM3_API_VERSION, "kind", "Metal3Data",
					      "name", data, "namespace", ns));
		cond2(status, "Metal3DataReady", "Metal3DataReady", true, NULL, "Metal3DataSecretsReady", NULL, NULL,
		      NULL);
	}
	cond2(status, "AssociateBMH", "AssociateBareMetalHost", true, NULL, "AssociateBareMetalHostSuccess", NULL, NULL,
	      NULL);
	set_cond(json_object_get(status, "v1beta2"), "conditions", false, "AssociateMetal3MachineMetaData", true,
		 "AssociateMetal3MachineMetaDataSuccess", NULL, NULL);
	hub_event(h,
		  &(struct hub_event_ref){ .ns = ns, .kind = "Metal3Machine", .name = name,
					   .uid = jstr(meta_of(m3m), "uid"), .api_version = CAPM3_API_VERSION },
		  HUB_EV_INFO, "bare_metal_host_associated", "Metal3Machine %s/%s associated with BareMetalHost %s/%s",
		  ns, name, ns, jstr(meta_of(bmh), "name"));
out:
	free(secret);
	free(data);
	json_decref(bmh);
	return r;
failed:
	cond2(status, "AssociateBMH", "AssociateBareMetalHost", false, "AssociateBMHFailed",
	      "AssociateBareMetalHostFailed", "Error", msg, msg);
	json_decref(bmh);
	return 0;
}

/* CAPM3's Metal3MachineTemplate controller: a Metal3Machine cloned from a
 * template takes the template's automatedCleaningMode.  1 when it wrote
 * (the write brings the next pass), 0 when nothing to do. */
static int template_cleaning_mode(struct hub *h, const struct kube_kind *k, const json_t *m3m)
{
	const json_t *ann = json_object_get(meta_of(m3m), "annotations");
	const struct kube_kind *kt = capm3_kind(h, "Metal3MachineTemplate");
	const char *tname = jstr(ann, ANN_CLONED_NAME), *acm;
	json_t *t = NULL;
	ah_err err = { 0 };
	int r = 0;

	if (!kt || !tname || !same(jstr(ann, ANN_CLONED_GK), CLONED_GK) ||
	    kube_get(h->api, kt, jstr(meta_of(m3m), "namespace"), tname, &t, &err) < 0)
		return 0;
	acm = jstr(json_object_get(json_object_get(json_object_get(t, "spec"), "template"), "spec"),
		   "automatedCleaningMode");
	if (acm && *acm && !same(jstr(json_object_get(m3m, "spec"), "automatedCleaningMode"), acm)) {
		r = patch_obj(h, k, m3m, json_pack("{s:{s:s}}", "spec", "automatedCleaningMode", acm));
		if (r == 0)
			r = 1;
	}
	json_decref(t);
	return r;
}

static int reconcile_m3m(struct hub *h, const char *ns, const char *name, int64_t *requeue)
{
	const struct kube_kind *k = capm3_kind(h, "Metal3Machine");
	const struct kube_kind *kmach = capm3_capi_kind(h, "Machine"), *kcl = capm3_capi_kind(h, "Cluster");
	json_t *m3m = NULL, *machine = NULL, *cluster = NULL, *m3c = NULL, *bmh = NULL, *status;
	const char *mname, *cname, *hk;
	ah_err err = { 0 };
	int r;

	r = kube_get(h->api, k, ns, name, &m3m, &err);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	status = json_is_object(json_object_get(m3m, "status")) ? json_deep_copy(json_object_get(m3m, "status"))
								: json_object();
	if (!json_object_get(status, "ready"))
		json_object_set_new(status, "ready", json_false());
	if (json_object_get(meta_of(m3m), "deletionTimestamp")) {
		r = release(h, k, m3m, status, requeue);
		if (r == -EAGAIN) {
			*requeue = 200;
			r = 0;
		}
		goto out;
	}
	if (!has_str(json_object_get(meta_of(m3m), "finalizers"), M3M_FINALIZER)) {
		r = set_finalizer(h, k, m3m, M3M_FINALIZER, true);
		if (r == -EAGAIN)
			*requeue = 200, r = 0;
		json_decref(status);
		json_decref(m3m);
		return r;
	}
	r = template_cleaning_mode(h, k, m3m);
	if (r != 0) {
		if (r == -EAGAIN)
			*requeue = 200;
		r = r == -EAGAIN || r > 0 ? 0 : r;
		goto out;
	}
	mname = owner_name(m3m, CAPI_GROUP, "Machine");
	if (!mname || !kmach || kube_get(h->api, kmach, ns, mname, &machine, &err) < 0) {
		machine = NULL;
		wait_cond(status, "WaitingForM3MachineOwnerRef", "WaitingForMetal3MachineOwnerRef", NULL);
		goto summary;
	}
	cname = jstr(json_object_get(meta_of(machine), "labels"), CAPI_LABEL_CLUSTER);
	if (!cname)
		cname = jstr(json_object_get(machine, "spec"), "clusterName");
	if (!cname || !kcl || kube_get(h->api, kcl, ns, cname, &cluster, &err) < 0) {
		cluster = NULL;
		cond2(status, "AssociateBMH", "AssociateBareMetalHost", false, "WaitingForClusterInfrastructure",
		      "WaitingForClusterInfrastructureReady", "Info", NULL,
		      "Machine is missing cluster label or cluster does not exist");
		goto summary;
	}
	if (!cluster_infra_ready(cluster)) {
		wait_cond(status, "WaitingForClusterInfrastructure", "WaitingForClusterInfrastructureReady",
			  "Waiting for Metal3Cluster Controller to create cluster infrastructure");
		goto summary;
	}
	if (!capm3_kind(h, "Metal3Cluster") ||
	    kube_get(h->api, capm3_kind(h, "Metal3Cluster"), ns,
		     nz(jstr(json_object_get(json_object_get(cluster, "spec"), "infrastructureRef"), "name")), &m3c,
		     &err) < 0) {
		m3c = NULL;
		wait_cond(status, "WaitingforMetal3Cluster", "WaitingforMetal3Cluster",
			  "Waiting for Metal3Cluster Controller to create the Metal3Cluster");
		goto summary;
	}
	hk = jstr(json_object_get(meta_of(m3m), "annotations"), ANN_HOST);
	if (!hk) {
		r = associate(h, k, m3m, machine, cname, status, requeue);
		goto summary;
	}
	{
		const char *slash = strchr(hk, '/');

		if (!slash || kube_get(h->api, h->k_bmh, ns, slash + 1, &bmh, &err) < 0 ||
		    !consumer_is(bmh, ns, name)) {
			char msg[600];

			json_decref(bmh);
			bmh = NULL;
			snprintf(msg, sizeof(msg), "BareMetalHost not found for machine %s", mname);
			cond2(status, "AssociateBMH", "AssociateBareMetalHost", false, "MissingBMH",
			      "AssociateBareMetalHostFailed", "Warning", msg, msg);
			*requeue = REQUEUE_MS;
			goto summary;
		}
	}
	cond2(status, "AssociateBMH", "AssociateBareMetalHost", true, NULL, "AssociateBareMetalHostSuccess", NULL, NULL,
	      NULL);
	{
		/* As CAPM3's update pass: the host stays online with the
		 * Metal3Machine's cleaning mode. */
		const json_t *bspec = json_object_get(bmh, "spec");
		const char *acm = jstr(json_object_get(m3m, "spec"), "automatedCleaningMode");
		json_t *sp = json_object();

		if (!json_is_true(json_object_get(bspec, "online")))
			json_object_set_new(sp, "online", json_true());
		if (acm && *acm && !same(jstr(bspec, "automatedCleaningMode"), acm))
			json_object_set_new(sp, "automatedCleaningMode", json_string(acm));
		if (json_object_size(sp)) {
			r = patch_obj(h, h->k_bmh, bmh, json_pack("{s:o}", "spec", sp));
			if (r == -EAGAIN)
				*requeue = 200, r = 0;
			if (r < 0)
				goto summary;
		} else {
			json_decref(sp);
		}
	}
	if (same(jstr(json_object_get(json_object_get(bmh, "status"), "provisioning"), "state"), BMH_ST_PROVISIONED)) {
		json_t *addrs = host_addresses(bmh);

		json_object_set_new(status, "ready", json_true());
		json_object_set_new(status, "initialization", json_pack("{s:b}", "provisioned", 1));
		if (json_array_size(addrs))
			json_object_set(status, "addresses", addrs);
		json_decref(addrs);
		if (!*nz(jstr(json_object_get(m3m, "spec"), "providerID")) && node_exists(h, ns, mname)) {
			char pid[800];

			snprintf(pid, sizeof(pid), "metal3://%s/%s/%s", ns, jstr(meta_of(bmh), "name"), name);
			r = patch_obj(h, k, m3m, json_pack("{s:{s:s}}", "spec", "providerID", pid));
			if (r == -EAGAIN)
				*requeue = 200, r = 0;
			if (r < 0)
				goto summary;
		}
	}
summary:
	summarize(status, M3M_SUMMARY1, M3M_SUMMARY2);
	if (r == 0) {
		json_t *cur = NULL;

		/* The status goes onto what is stored now (the passes above
		 * may have moved it). */
		if (kube_get(h->api, k, ns, name, &cur, &err) == 0) {
			r = write_status(h, k, cur, status);
			json_decref(cur);
		}
	}
out:
	json_decref(status);
	json_decref(bmh);
	json_decref(m3c);
	json_decref(cluster);
	json_decref(machine);
	json_decref(m3m);
	return r;
}

/* --- registration ------------------------------------------------------------ */

static struct rt_result result(int r, int64_t after)
{
	if (r == -EAGAIN)
		return rt_requeue_after(200);
	if (r < 0)
		return rt_error(r);
	return after > 0 ? rt_requeue_after(after) : rt_done();
}

static struct rt_result m3m_reconcile(void *ctx, const struct rt_key *key)
{
	int64_t after = 0;
	int r = reconcile_m3m(ctx, key->ns, key->name, &after);

	return result(r, after);
}

static struct rt_result m3c_reconcile(void *ctx, const struct rt_key *key)
{
	int64_t after = 0;
	int r = reconcile_m3c(ctx, key->ns, key->name, &after);

	return result(r, after);
}

int hub_capm3_register(struct hub *h)
{
	const struct kube_kind *km = capm3_kind(h, "Metal3Machine"), *kc = capm3_kind(h, "Metal3Cluster");
	const struct kube_kind *kmach = capm3_capi_kind(h, "Machine"), *kcl = capm3_capi_kind(h, "Cluster");
	const struct kube_kind *kt = capm3_kind(h, "Metal3MachineTemplate");
	int r;

	if (!km || !kc || !kt || !kmach || !kcl || !h->k_bmh)
		return 0;
	{
		struct rt_controller_def d = {
			.name = "Metal3Cluster",
			.reconcile = m3c_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = kc->store_key, .map = RT_MAP_SELF },
				{ .resource = kcl->store_key, .map = RT_MAP_FN, .fn = cluster_to_m3c },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "Metal3Machine",
			.reconcile = m3m_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = km->store_key, .map = RT_MAP_SELF },
				{ .resource = kmach->store_key, .map = RT_MAP_FN, .fn = machine_to_m3ms },
				{ .resource = kcl->store_key, .map = RT_MAP_FN, .fn = cluster_to_m3ms },
				{ .resource = h->k_bmh->store_key, .map = RT_MAP_FN, .fn = bmh_to_m3ms },
				{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_m3ms },
				{ .resource = kt->store_key, .map = RT_MAP_FN, .fn = template_to_m3ms },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_bmh->store_key, IDX_BMH_FREE, bmh_free_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_bmh->store_key, IDX_BMH_CONSUMER, bmh_consumer_index);
	if (r == 0)
		r = rt_cache_index(h->rt, km->store_key, IDX_M3M_WAITING, m3m_waiting_index);
	if (r == 0)
		r = rt_cache_index(h->rt, km->store_key, IDX_M3M_MACHINE, m3m_machine_index);
	if (r == 0)
		r = rt_cache_index(h->rt, km->store_key, IDX_M3M_CLUSTER, m3m_cluster_index);
	if (r == 0)
		r = rt_cache_index(h->rt, km->store_key, IDX_M3M_TEMPLATE, m3m_template_index);
	return r;
}
