/* capi-machineset.c - the MachineDeployment and MachineSet controllers, done
 * by the hub in place of Cluster API core (cluster.x-k8s.io/v1beta2).
 *
 * MachineDeployment: finalizer cluster.x-k8s.io/machinedeployment, the
 * cluster-name label and an ownerReference to its Cluster; spec.replicas
 * defaulted to 1 (CAPOA reads it without a nil check); one MachineSet per
 * template hash (labels cluster.x-k8s.io/deployment-name and
 * machine-template-hash, controller ownerReference MachineDeployment) that
 * gets spec.replicas; MachineSets of an older template are scaled to zero
 * and deleted once empty.  Status: replicas, readyReplicas,
 * availableReplicas, upToDateReplicas summed over its MachineSets, the
 * selector (for the scale subresource), phase (ScalingUp, ScalingDown,
 * Running) and the Available, ScalingUp and ScalingDown conditions.
 *
 * MachineSet: finalizer cluster.x-k8s.io/machineset; keeps spec.replicas
 * Machines named <machineset>-<5 random> with the labels
 * cluster.x-k8s.io/set-name, cluster.x-k8s.io/deployment-name and
 * cluster.x-k8s.io/cluster-name.  For each new Machine the bootstrap config
 * template (spec.template.spec.bootstrap.configRef, e.g.
 * OpenshiftAssistedConfigTemplate) and the infrastructure template
 * (spec.template.spec.infrastructureRef, e.g. Metal3MachineTemplate) are
 * cloned, named after the Machine: the template's spec.template.spec, its
 * labels and annotations plus cluster.x-k8s.io/cloned-from-name and
 * cluster.x-k8s.io/cloned-from-groupkind.  Scaling down deletes first the
 * Machines annotated cluster.x-k8s.io/delete-machine, then those not Ready,
 * then the oldest (the newest with spec.deletion.order Newest).  A deleted
 * MachineSet deletes its Machines and waits for them to be gone.
 *
 * Before creating, a pass waits for the cache to hold every write made so
 * far (rt_wait_synced()) and counts again, so Machines (MachineSets) it just
 * created are never missed and created twice. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "controllers/capi.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/api.h"

#define WAIT_MS 5000
#define SYNC_MS 2000
#define CREATE_PER_PASS 10

struct capi_ms_ctl {
	struct hub *h;
	const struct kube_kind *k_cluster, *k_md, *k_ms, *k_machine;
};

/* The kinds, looked up per call from the hub's registry (ctx is the hub:
 * several hubs may run in one process, as in the unit tests). */
static bool ctl_init(struct capi_ms_ctl *c, struct hub *h)
{
	c->h = h;
	c->k_cluster = capi_kind(h->reg, CAPI_GROUP, "Cluster");
	c->k_md = capi_kind(h->reg, CAPI_GROUP, "MachineDeployment");
	c->k_ms = capi_kind(h->reg, CAPI_GROUP, "MachineSet");
	c->k_machine = capi_kind(h->reg, CAPI_GROUP, "Machine");
	return c->k_cluster && c->k_md && c->k_ms && c->k_machine;
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static json_t *copy_obj(const json_t *o)
{
	return json_is_object(o) ? json_deep_copy(o) : json_object();
}

static json_t *get_list(struct capi_ms_ctl *c, const struct kube_kind *k, const char *index, const char *ns,
			const char *val)
{
	json_t *keys = capi_list_by(c->h, k->store_key, index, ns, val), *out = json_array(), *p;
	size_t i;

	json_array_foreach(keys, i, p) {
		json_t *o = NULL;
		ah_err err;

		if (kube_get(c->h->api, k, ns, json_string_value(json_array_get(p, 1)), &o, &err) == 0)
			json_array_append_new(out, o);
	}
	json_decref(keys);
	return out;
}

/* "k=v,k=v" of a matchLabels object, keys sorted (jansson keeps insertion
 * order; the caller's object is built sorted). */
static void selector_string(const json_t *match, char *buf, size_t size)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	buf[0] = '\0';
	json_object_foreach((json_t *)match, k, v) {
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s=%s", n ? "," : "", k,
				      json_string_value(v) ? json_string_value(v) : "");
		if (n >= size) {
			buf[size - 1] = '\0';
			break;
		}
	}
}

/* The finalizer, the cluster-name label and (owner non-NULL) an
 * ownerReference: 1 when written. */
static int ensure_meta(struct capi_ms_ctl *c, const struct kube_kind *k, const json_t *obj, const char *finalizer,
		       const json_t *owner, ah_err *err)
{
	const char *cn = capi_str(json_object_get(obj, "spec"), "clusterName");
	json_t *labels = cn ? json_pack("{s:s}", CAPI_LABEL_CLUSTER_NAME, cn) : json_object();
	int r = capi_ensure_owner_labels(c->h, k, obj, owner, false, labels, err);

	json_decref(labels);
	if (r != 0)
		return r;
	return capi_set_finalizer(c->h, k, obj, finalizer, true, err);
}

/* Whether obj's reconcile is paused; then its Paused condition is written
 * (*r: the write's result). */
static bool paused(struct capi_ms_ctl *c, const struct kube_kind *k, const json_t *obj, int *r, ah_err *err)
{
	const char *cn = capi_str(json_object_get(obj, "spec"), "clusterName");
	json_t *cl = NULL;
	char msg[256];
	bool p;

	if (!cn || kube_get(c->h->api, c->k_cluster, capi_str(json_object_get(obj, "metadata"), "namespace"), cn, &cl,
			     err) < 0)
		cl = NULL;
	p = capi_paused(cl, obj, msg, sizeof(msg));
	json_decref(cl);
	if (p)
		*r = capi_write_paused(c->h, k, obj, msg, err);
	return p;
}

static int patch_spec(struct capi_ms_ctl *c, const struct kube_kind *k, const json_t *obj, json_t *spec, ah_err *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	json_t *patch = json_pack("{s:o,s:{s:O}}", "spec", spec, "metadata", "resourceVersion",
				  json_object_get(meta, "resourceVersion")),
	       *ret = NULL;
	int r = kube_patch(c->h->api, k, capi_str(meta, "namespace"), capi_str(meta, "name"),
			   "application/merge-patch+json", patch, NULL, &ret, err);

	json_decref(patch);
	json_decref(ret);
	return r < 0 ? r : 1;
}

/* Delete every object of list (kind k); how many are left. */
static int delete_all(struct capi_ms_ctl *c, const struct kube_kind *k, const json_t *list, ah_err *err)
{
	const json_t *o;
	size_t i;
	int left = 0;

	json_array_foreach(list, i, o) {
		const json_t *meta = json_object_get(o, "metadata");

		if (capi_delete(c->h, k, capi_str(meta, "namespace"), capi_str(meta, "name"), err) != 0)
			left++;
	}
	return left;
}

/* --- MachineSet ---------------------------------------------------------------- */

/* Clone the template ref names into an object named name; 0 with *ret_ref
 * the new object's {apiGroup, kind, name}, or a negative errno. */
static int clone_template(struct capi_ms_ctl *c, const json_t *ref, const char *ns, const char *name,
			  const json_t *labels, const json_t *ms, json_t **ret_ref, ah_err *err)
{
	const struct kube_kind *kt = capi_ref_kind(c->h->reg, ref), *kc;
	json_t *tmpl = NULL, *obj, *lab, *ann, *ret = NULL;
	const json_t *tt;
	char kind[RT_KIND_MAX + 16], gk[400];
	const char *k;
	json_t *v;
	size_t n;
	int r;

	if (!kt) {
		return ah_err_set(err, EINVAL, 422, "Invalid", "%s %s: no such kind",
				  capi_str(ref, "kind") ? capi_str(ref, "kind") : "template",
				  capi_str(ref, "name") ? capi_str(ref, "name") : "");
	}
	n = strlen(kt->kind);
	if (n <= 8 || strcmp(kt->kind + n - 8, "Template") != 0 || n - 8 >= sizeof(kind)) {
		return ah_err_set(err, EINVAL, 422, "Invalid", "%s is not a template kind", kt->kind);
	}
	snprintf(kind, sizeof(kind), "%.*s", (int)(n - 8), kt->kind);
	kc = capi_kind(c->h->reg, kt->group, kind);
	if (!kc) {
		return ah_err_set(err, EINVAL, 422, "Invalid", "%s.%s: no such kind", kind, kt->group);
	}
	r = kube_get(c->h->api, kt, ns, capi_str(ref, "name"), &tmpl, err);
	if (r < 0)
		return r;
	tt = capi_path(tmpl, "spec", "template");
	lab = copy_obj(capi_path(tt, "metadata", "labels"));
	json_object_foreach((json_t *)labels, k, v)
		json_object_set(lab, k, v);
	ann = copy_obj(capi_path(tt, "metadata", "annotations"));
	snprintf(gk, sizeof(gk), "%s.%s", kt->kind, kt->group);
	json_object_set_new(ann, CAPI_ANN_CLONED_FROM_NAME, json_string(capi_str(ref, "name")));
	json_object_set_new(ann, CAPI_ANN_CLONED_FROM_GROUPKIND, json_string(gk));
	obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o,s:[o]},s:o}", "apiVersion", kc->api_version, "kind", kc->kind,
			"metadata", "name", name, "namespace", ns, "labels", lab, "annotations", ann, "ownerReferences",
			capi_owner_ref(ms, false), "spec", copy_obj(json_object_get(tt, "spec")));
	r = kube_create(c->h->api, kc, ns, obj, NULL, &ret, err);
	json_decref(obj);
	json_decref(ret);
	json_decref(tmpl);
	if (r < 0)
		return r;
	*ret_ref = json_pack("{s:s,s:s,s:s}", "apiGroup", kc->group, "kind", kc->kind, "name", name);
	return 0;
}

static int create_machine(struct capi_ms_ctl *c, const json_t *ms, ah_err *err)
{
	const json_t *meta = json_object_get(ms, "metadata"), *spec = json_object_get(ms, "spec");
	const json_t *tmpl = json_object_get(spec, "template"), *tspec = json_object_get(tmpl, "spec");
	const char *ns = capi_str(meta, "namespace"), *msname = capi_str(meta, "name");
	const char *cn = capi_str(spec, "clusterName"), *dn = capi_str(json_object_get(meta, "labels"), CAPI_LABEL_DEPLOYMENT_NAME);
	json_t *labels = json_object(), *mlabels, *mspec, *boot = NULL, *infra = NULL, *m, *ret = NULL;
	const struct kube_kind *kb = NULL, *ki = NULL;
	char suffix[8], name[RT_NAME_MAX + 1];
	int r;

	r = capi_random_suffix(suffix);
	if (r < 0)
		return r;
	/* As Kubernetes' generated names: the base cut so the name stays a
	 * valid label value (63). */
	snprintf(name, sizeof(name), "%.57s-%s", msname, suffix);
	json_object_set_new(labels, CAPI_LABEL_SET_NAME, json_string(msname));
	if (dn)
		json_object_set_new(labels, CAPI_LABEL_DEPLOYMENT_NAME, json_string(dn));
	if (cn)
		json_object_set_new(labels, CAPI_LABEL_CLUSTER_NAME, json_string(cn));

	if (json_is_object(capi_path(tspec, "bootstrap", "configRef"))) {
		r = clone_template(c, capi_path(tspec, "bootstrap", "configRef"), ns, name, labels, ms, &boot, err);
		if (r < 0)
			goto fail;
		kb = capi_ref_kind(c->h->reg, boot);
	}
	r = clone_template(c, json_object_get(tspec, "infrastructureRef"), ns, name, labels, ms, &infra, err);
	if (r < 0)
		goto fail;
	ki = capi_ref_kind(c->h->reg, infra);

	mlabels = copy_obj(capi_path(tmpl, "metadata", "labels"));
	json_object_update(mlabels, labels);
	mspec = copy_obj(tspec);
	if (cn)
		json_object_set_new(mspec, "clusterName", json_string(cn));
	if (boot) {
		json_t *b = json_object_get(mspec, "bootstrap");

		if (!json_is_object(b))
			json_object_set_new(mspec, "bootstrap", b = json_object());
		json_object_set(b, "configRef", boot);
	}
	json_object_set(mspec, "infrastructureRef", infra);
	m = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o,s:[o]},s:o}", "apiVersion", c->k_machine->api_version, "kind", "Machine",
		      "metadata", "name", name, "namespace", ns, "labels", mlabels, "annotations",
		      copy_obj(capi_path(tmpl, "metadata", "annotations")), "ownerReferences", capi_owner_ref(ms, true),
		      "spec", mspec);
	r = kube_create(c->h->api, c->k_machine, ns, m, NULL, &ret, err);
	json_decref(m);
	json_decref(ret);
	if (r < 0)
		goto fail;
	log_info("machineset %s/%s: created machine %s", ns, msname, name);
	json_decref(labels);
	json_decref(boot);
	json_decref(infra);
	return 0;
fail:
	{
		/* The siblings made so far go (as upstream deletes them). */
		ah_err e2;

		if (boot && kb)
			capi_delete(c->h, kb, ns, name, &e2);
		if (infra && ki)
			capi_delete(c->h, ki, ns, name, &e2);
	}
	json_decref(labels);
	json_decref(boot);
	json_decref(infra);
	return r;
}

/* Deletion priority of a Machine: lower goes first. */
static int delete_rank(const json_t *m)
{
	if (json_object_get(capi_path(m, "metadata", "annotations"), CAPI_ANN_DELETE_MACHINE))
		return 0;
	if (!capi_cond_true(capi_path(m, "status", "conditions"), "Ready"))
		return 1;
	return 2;
}

static bool newest_first;

static int cmp_delete(const void *a, const void *b)
{
	const json_t *ma = *(json_t *const *)a, *mb = *(json_t *const *)b;
	int ra = delete_rank(ma), rb = delete_rank(mb), c;
	const char *ta = capi_str(json_object_get(ma, "metadata"), "creationTimestamp");
	const char *tb = capi_str(json_object_get(mb, "metadata"), "creationTimestamp");

	if (ra != rb)
		return ra - rb;
	c = strcmp(ta ? ta : "", tb ? tb : "");
	if (c == 0)
		c = strcmp(capi_str(json_object_get(ma, "metadata"), "name"), capi_str(json_object_get(mb, "metadata"), "name"));
	return newest_first ? -c : c;
}

static pthread_mutex_t sort_lock = PTHREAD_MUTEX_INITIALIZER;

/* The Machines of active to delete, n of them, in upstream's order. */
static json_t *pick_for_deletion(const json_t *active, size_t n, bool newest)
{
	size_t len = json_array_size(active), i;
	json_t **v = calloc(len ? len : 1, sizeof(*v)), *out = json_array();

	if (!v)
		return out;
	for (i = 0; i < len; i++)
		v[i] = json_array_get(active, i);
	pthread_mutex_lock(&sort_lock);
	newest_first = newest;
	qsort(v, len, sizeof(*v), cmp_delete);
	pthread_mutex_unlock(&sort_lock);
	for (i = 0; i < n && i < len; i++)
		json_array_append(out, v[i]);
	free(v);
	return out;
}

static struct rt_result ms_reconcile(void *ctx, const struct rt_key *key)
{
	struct capi_ms_ctl cc, *c = &cc;
	struct hub *h = ctx;
	json_t *ms = NULL, *machines, *active, *st, *conds;
	const json_t *meta, *spec, *m;
	long long desired, gen;
	int ready = 0, avail = 0, uptodate = 0, r = 0;
	char sel[1024], now[32], msg[AH_ERR_MSG_MAX + 128], blocked[AH_ERR_MSG_MAX] = "";
	size_t i;
	ah_err err;

	if (!ctl_init(c, h))
		return rt_done();
	if (kube_get(h->api, c->k_ms, key->ns, key->name, &ms, &err) < 0)
		return err.status == 404 ? rt_done() : rt_error(-EIO);
	meta = json_object_get(ms, "metadata");
	spec = json_object_get(ms, "spec");
	gen = json_integer_value(json_object_get(meta, "generation"));
	machines = get_list(c, c->k_machine, CAPI_IDX_SET, key->ns, key->name);
	if (paused(c, c->k_ms, ms, &r, &err))
		goto out;
	if (capi_str(meta, "deletionTimestamp")) {
		if (capi_has_finalizer(ms, CAPI_FINALIZER_MACHINESET)) {
			if (delete_all(c, c->k_machine, machines, &err))
				r = 2;
			else
				r = capi_set_finalizer(h, c->k_ms, ms, CAPI_FINALIZER_MACHINESET, false, &err);
		}
		goto out;
	}
	if ((r = ensure_meta(c, c->k_ms, ms, CAPI_FINALIZER_MACHINESET, NULL, &err)) != 0)
		goto out;

	desired = json_is_integer(json_object_get(spec, "replicas")) ? json_integer_value(json_object_get(spec, "replicas")) : 1;
	if ((long long)json_array_size(machines) < desired) {
		/* About to create: first let the cache take every write so far
		 * (Machines this controller just made), then count again. */
		rt_wait_synced(h->rt, 0, SYNC_MS);
		json_decref(machines);
		machines = get_list(c, c->k_machine, CAPI_IDX_SET, key->ns, key->name);
	}
	active = json_array();
	json_array_foreach(machines, i, m)
		if (!capi_str(json_object_get(m, "metadata"), "deletionTimestamp"))
			json_array_append(active, (json_t *)m);
	if ((long long)json_array_size(active) < desired) {
		long long n = desired - (long long)json_array_size(active);

		for (i = 0; i < (size_t)n && i < CREATE_PER_PASS && r >= 0; i++)
			r = create_machine(c, ms, &err);
		if (r < 0) {
			log_warn("machineset %s/%s: creating a machine: %s", key->ns, key->name, err.message);
			snprintf(blocked, sizeof(blocked), "%s", err.message);
		}
	} else if ((long long)json_array_size(active) > desired) {
		json_t *del = pick_for_deletion(active, json_array_size(active) - (size_t)desired,
						same(capi_str(capi_path(spec, "deletion", "order") ? json_object_get(spec, "deletion") : NULL,
							      "order"),
						     "Newest"));

		json_array_foreach(del, i, m)
			log_info("machineset %s/%s: scaling down: deleting machine %s", key->ns, key->name,
				 capi_str(json_object_get(m, "metadata"), "name"));
		delete_all(c, c->k_machine, del, &err);
		json_decref(del);
	}
	json_decref(active);

	json_array_foreach(machines, i, m) {
		const json_t *mc = capi_path(m, "status", "conditions"), *u = capi_cond_get(mc, "UpToDate");

		ready += capi_cond_true(mc, "Ready");
		avail += capi_cond_true(mc, "Available");
		uptodate += !u || same(capi_str(u, "status"), "True");
	}
	util_now_rfc3339(now, sizeof(now));
	st = copy_obj(json_object_get(ms, "status"));
	json_object_set_new(st, "replicas", json_integer((json_int_t)json_array_size(machines)));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(avail));
	json_object_set_new(st, "upToDateReplicas", json_integer(uptodate));
	selector_string(capi_path(spec, "selector", "matchLabels"), sel, sizeof(sel));
	json_object_set_new(st, "selector", json_string(sel));
	json_object_set_new(st, "observedGeneration", json_integer(gen));
	conds = json_object_get(st, "conditions");
	if (!json_is_array(conds))
		json_object_set_new(st, "conditions", conds = json_array());
	if ((long long)json_array_size(machines) < desired) {
		snprintf(msg, sizeof(msg), "Scaling up from %zu to %lld replicas%s%s", json_array_size(machines), desired,
			 blocked[0] ? " is blocked because:\n* " : "", blocked);
		capi_cond_set(conds, "ScalingUp", "True", "ScalingUp", msg, gen, now);
	} else {
		capi_cond_set(conds, "ScalingUp", "False", "NotScalingUp", NULL, gen, now);
	}
	if ((long long)json_array_size(machines) > desired) {
		snprintf(msg, sizeof(msg), "Scaling down from %zu to %lld replicas", json_array_size(machines), desired);
		capi_cond_set(conds, "ScalingDown", "True", "ScalingDown", msg, gen, now);
	} else {
		capi_cond_set(conds, "ScalingDown", "False", "NotScalingDown", NULL, gen, now);
	}
	capi_set_paused_cond(st, false, NULL, gen, now);
	if (ready == (int)json_array_size(machines))
		capi_cond_set(conds, "MachinesReady", "True", "Ready", NULL, gen, now);
	else
		capi_cond_set(conds, "MachinesReady", "False", "NotReady", NULL, gen, now);
	{
		ah_err e2;
		int r2 = capi_write_status(h, c->k_ms, ms, st, &e2);

		if (r >= 0 && r2 < 0) {
			r = r2;
			err = e2;
		}
	}
	json_decref(st);
out:
	json_decref(machines);
	json_decref(ms);
	/* A template that is missing (or a refused clone) is retried with
	 * back-off: nothing watches the templates. */
	if (blocked[0])
		return rt_error(-EAGAIN);
	if (r < 0 && err.status != 404 && err.status != 409)
		log_warn("machineset %s/%s: %s", key->ns, key->name, err.message);
	if (r < 0)
		return err.status == 404 ? rt_done() : rt_error(r);
	return r == 2 ? rt_requeue_after(WAIT_MS) : rt_done();
}

/* --- MachineDeployment ------------------------------------------------------------ */

static json_t *new_machineset(struct capi_ms_ctl *c, const json_t *md, const char *hash, long long replicas)
{
	const json_t *meta = json_object_get(md, "metadata"), *spec = json_object_get(md, "spec");
	const char *name = capi_str(meta, "name"), *cn = capi_str(spec, "clusterName");
	json_t *tmpl = copy_obj(json_object_get(spec, "template")), *tmeta, *tl, *labels, *match, *ms;
	char suffix[8], msname[RT_NAME_MAX + 1];

	if (capi_random_suffix(suffix) < 0) {
		json_decref(tmpl);
		return NULL;
	}
	snprintf(msname, sizeof(msname), "%.57s-%s", name, suffix);
	tmeta = json_object_get(tmpl, "metadata");
	if (!json_is_object(tmeta))
		json_object_set_new(tmpl, "metadata", tmeta = json_object());
	tl = json_object_get(tmeta, "labels");
	if (!json_is_object(tl))
		json_object_set_new(tmeta, "labels", tl = json_object());
	match = json_object();
	if (cn)
		json_object_set_new(match, CAPI_LABEL_CLUSTER_NAME, json_string(cn));
	json_object_set_new(match, CAPI_LABEL_DEPLOYMENT_NAME, json_string(name));
	json_object_set_new(match, CAPI_LABEL_TEMPLATE_HASH, json_string(hash));
	json_object_update(tl, match);
	labels = json_deep_copy(tl);
	ms = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o]},s:{s:I,s:{s:o},s:o}}", "apiVersion", c->k_ms->api_version, "kind",
		       "MachineSet", "metadata", "name", msname, "namespace", capi_str(meta, "namespace"), "labels", labels,
		       "ownerReferences", capi_owner_ref(md, true), "spec", "replicas", (json_int_t)replicas, "selector",
		       "matchLabels", match, "template", tmpl);
	if (cn)
		json_object_set_new(json_object_get(ms, "spec"), "clusterName", json_string(cn));
	if (json_is_object(json_object_get(spec, "deletion")))
		json_object_set(json_object_get(ms, "spec"), "deletion", json_object_get(spec, "deletion"));
	return ms;
}

static struct rt_result md_reconcile(void *ctx, const struct rt_key *key)
{
	struct capi_ms_ctl cc, *c = &cc;
	struct hub *h = ctx;
	json_t *md = NULL, *sets = NULL, *cl = NULL, *st = NULL, *conds, *match;
	const json_t *meta, *spec, *s, *cur = NULL;
	long long desired, gen, replicas = 0, ready = 0, avail = 0, uptodate = 0;
	char hash[16], sel[1024], now[32], msg[AH_ERR_MSG_MAX + 128];
	const char *cn, *phase;
	bool synced;
	size_t i;
	int r = 0;
	ah_err err;

	if (!ctl_init(c, h))
		return rt_done();
	if (kube_get(h->api, c->k_md, key->ns, key->name, &md, &err) < 0)
		return err.status == 404 ? rt_done() : rt_error(-EIO);
	meta = json_object_get(md, "metadata");
	spec = json_object_get(md, "spec");
	gen = json_integer_value(json_object_get(meta, "generation"));
	cn = capi_str(spec, "clusterName");
	sets = get_list(c, c->k_ms, CAPI_IDX_DEPLOYMENT, key->ns, key->name);
	if (paused(c, c->k_md, md, &r, &err))
		goto out;
	if (capi_str(meta, "deletionTimestamp")) {
		if (capi_has_finalizer(md, CAPI_FINALIZER_MACHINEDEPLOYMENT)) {
			if (delete_all(c, c->k_ms, sets, &err))
				r = 2;
			else
				r = capi_set_finalizer(h, c->k_md, md, CAPI_FINALIZER_MACHINEDEPLOYMENT, false, &err);
		}
		goto out;
	}
	if (cn && kube_get(h->api, c->k_cluster, key->ns, cn, &cl, &err) < 0)
		cl = NULL;
	if ((r = ensure_meta(c, c->k_md, md, CAPI_FINALIZER_MACHINEDEPLOYMENT, cl, &err)) != 0)
		goto out;
	if (!json_is_integer(json_object_get(spec, "replicas"))) {
		/* Upstream's default (CAPOA reads spec.replicas without a nil check). */
		r = patch_spec(c, c->k_md, md, json_pack("{s:i}", "replicas", 1), &err);
		goto out;
	}
	desired = json_integer_value(json_object_get(spec, "replicas"));
	capi_template_hash(json_object_get(spec, "template"), hash, sizeof(hash));

	for (synced = false;; synced = true) {
		json_array_foreach(sets, i, s) {
			const json_t *sm = json_object_get(s, "metadata");

			if (capi_str(sm, "deletionTimestamp") ||
			    !capi_owner_name(sm, CAPI_GROUP, "MachineDeployment", true))
				continue;
			if (same(capi_str(json_object_get(sm, "labels"), CAPI_LABEL_TEMPLATE_HASH), hash) && !cur)
				cur = s;
		}
		if (cur || synced)
			break;
		/* About to create: first let the cache take every write so
		 * far (a MachineSet this controller just made), then look again. */
		rt_wait_synced(h->rt, 0, SYNC_MS);
		json_decref(sets);
		sets = get_list(c, c->k_ms, CAPI_IDX_DEPLOYMENT, key->ns, key->name);
	}
	if (!cur) {
		json_t *ms = new_machineset(c, md, hash, desired), *ret = NULL;

		r = ms ? kube_create(h->api, c->k_ms, key->ns, ms, NULL, &ret, &err) : -ENOMEM;
		if (r >= 0)
			log_info("machinedeployment %s/%s: created machineset %s", key->ns, key->name,
				 capi_str(json_object_get(ret, "metadata"), "name"));
		json_decref(ms);
		json_decref(ret);
		if (r >= 0)
			r = 1;
		goto out;
	}
	if (json_integer_value(capi_path(cur, "spec", "replicas")) != desired ||
	    !json_is_integer(capi_path(cur, "spec", "replicas"))) {
		r = patch_spec(c, c->k_ms, cur, json_pack("{s:I}", "replicas", (json_int_t)desired), &err);
		if (r < 0)
			goto out;
	}
	/* MachineSets of an older template: to zero, then gone. */
	json_array_foreach(sets, i, s) {
		const json_t *sm = json_object_get(s, "metadata");

		if (s == cur || capi_str(sm, "deletionTimestamp") || !capi_owner_name(sm, CAPI_GROUP, "MachineDeployment", true))
			continue;
		if (json_integer_value(capi_path(s, "spec", "replicas")) != 0)
			r = patch_spec(c, c->k_ms, s, json_pack("{s:i}", "replicas", 0), &err);
		else if (json_integer_value(capi_path(s, "status", "replicas")) == 0)
			r = capi_delete(h, c->k_ms, key->ns, capi_str(sm, "name"), &err);
		if (r < 0)
			goto out;
	}

	json_array_foreach(sets, i, s) {
		const json_t *ss = json_object_get(s, "status");

		replicas += json_integer_value(json_object_get(ss, "replicas"));
		ready += json_integer_value(json_object_get(ss, "readyReplicas"));
		avail += json_integer_value(json_object_get(ss, "availableReplicas"));
		if (s == cur)
			uptodate += json_integer_value(json_object_get(ss, "upToDateReplicas"));
	}
	util_now_rfc3339(now, sizeof(now));
	st = copy_obj(json_object_get(md, "status"));
	json_object_set_new(st, "replicas", json_integer(replicas));
	json_object_set_new(st, "readyReplicas", json_integer(ready));
	json_object_set_new(st, "availableReplicas", json_integer(avail));
	json_object_set_new(st, "upToDateReplicas", json_integer(uptodate));
	match = json_object();
	if (json_is_object(capi_path(spec, "selector", "matchLabels"))) {
		json_object_update(match, (json_t *)capi_path(spec, "selector", "matchLabels"));
	} else {
		if (cn)
			json_object_set_new(match, CAPI_LABEL_CLUSTER_NAME, json_string(cn));
		json_object_set_new(match, CAPI_LABEL_DEPLOYMENT_NAME, json_string(key->name));
	}
	selector_string(match, sel, sizeof(sel));
	json_decref(match);
	json_object_set_new(st, "selector", json_string(sel));
	phase = desired == replicas ? "Running" : desired < replicas ? "ScalingDown" : "ScalingUp";
	json_object_set_new(st, "phase", json_string(phase));
	json_object_set_new(st, "observedGeneration", json_integer(gen));
	conds = json_object_get(st, "conditions");
	if (!json_is_array(conds))
		json_object_set_new(st, "conditions", conds = json_array());
	capi_set_paused_cond(st, false, NULL, gen, now);
	if (avail >= desired) {
		capi_cond_set(conds, "Available", "True", "Available", NULL, gen, now);
	} else {
		snprintf(msg, sizeof(msg), "%lld available replicas, at least %lld required", avail, desired);
		capi_cond_set(conds, "Available", "False", "NotAvailable", msg, gen, now);
	}
	if (replicas < desired) {
		const json_t *su = capi_cond_get(capi_path(cur, "status", "conditions"), "ScalingUp");

		/* The MachineSet's reason it cannot scale up, if any. */
		if (capi_cond_true(capi_path(cur, "status", "conditions"), "ScalingUp") && capi_str(su, "message") &&
		    strstr(capi_str(su, "message"), "blocked"))
			snprintf(msg, sizeof(msg), "%s", capi_str(su, "message"));
		else
			snprintf(msg, sizeof(msg), "Scaling up from %lld to %lld replicas", replicas, desired);
		capi_cond_set(conds, "ScalingUp", "True", "ScalingUp", msg, gen, now);
	} else {
		capi_cond_set(conds, "ScalingUp", "False", "NotScalingUp", NULL, gen, now);
	}
	if (replicas > desired) {
		snprintf(msg, sizeof(msg), "Scaling down from %lld to %lld replicas", replicas, desired);
		capi_cond_set(conds, "ScalingDown", "True", "ScalingDown", msg, gen, now);
	} else {
		capi_cond_set(conds, "ScalingDown", "False", "NotScalingDown", NULL, gen, now);
	}
	r = capi_write_status(h, c->k_md, md, st, &err);
out:
	json_decref(st);
	json_decref(cl);
	json_decref(sets);
	json_decref(md);
	if (r < 0 && err.status != 404 && err.status != 409)
		log_warn("machinedeployment %s/%s: %s", key->ns, key->name, err.message);
	if (r < 0)
		return err.status == 404 ? rt_done() : rt_error(r);
	return r == 2 ? rt_requeue_after(WAIT_MS) : rt_done();
}

/* --- indexes and registration ------------------------------------------------------- */

static void label_index(const json_t *obj, const char *label, json_t *out)
{
	const char *ns = capi_str(json_object_get(obj, "metadata"), "namespace");
	const char *v = capi_str(capi_path(obj, "metadata", "labels"), label);
	char key[600];

	if (ns && v && *v) {
		snprintf(key, sizeof(key), "%s/%s", ns, v);
		json_array_append_new(out, json_string(key));
	}
}

static void machine_set_index(const json_t *m, json_t *out)
{
	label_index(m, CAPI_LABEL_SET_NAME, out);
}

static void ms_deployment_index(const json_t *ms, json_t *out)
{
	label_index(ms, CAPI_LABEL_DEPLOYMENT_NAME, out);
}

static void cluster_to(struct rt_controller *rc, struct hub *h, bool sets, const struct rt_event *ev)
{
	struct capi_ms_ctl cc;
	json_t *list, *p;
	char key[600];
	size_t i;

	if (!ctl_init(&cc, h))
		return;
	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	list = rt_cache_list_by(h->rt, (sets ? cc.k_ms : cc.k_md)->store_key, CAPI_IDX_CLUSTER_NAME, key);
	json_array_foreach(list, i, p)
		rt_enqueue(rc, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(list);
}

/* A Cluster (spec.paused) queues its MachineSets / MachineDeployments. */
static void cluster_to_sets(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	cluster_to(rc, ctx, true, ev);
}

static void cluster_to_deployments(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	cluster_to(rc, ctx, false, ev);
}

int hub_capi_machineset_register(struct hub *h)
{
	struct capi_ms_ctl cc, *c = &cc;
	int r;

	if (!ctl_init(c, h))
		return 0; /* no Cluster API kinds installed */
	r = rt_cache_index(h->rt, c->k_machine->store_key, CAPI_IDX_SET, machine_set_index);
	if (r == 0)
		r = rt_cache_index(h->rt, c->k_ms->store_key, CAPI_IDX_DEPLOYMENT, ms_deployment_index);
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "CAPIMachineSet",
			.reconcile = ms_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = c->k_ms->store_key, .map = RT_MAP_SELF },
				{ .resource = c->k_machine->store_key, .map = RT_MAP_OWNER, .owner_kind = "MachineSet" },
				{ .resource = c->k_cluster->store_key, .map = RT_MAP_FN, .fn = cluster_to_sets },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "CAPIMachineDeployment",
			.reconcile = md_reconcile,
			.ctx = h,
			.watches = {
				{ .resource = c->k_md->store_key, .map = RT_MAP_SELF },
				{ .resource = c->k_ms->store_key, .map = RT_MAP_OWNER, .owner_kind = "MachineDeployment" },
				{ .resource = c->k_cluster->store_key, .map = RT_MAP_FN, .fn = cluster_to_deployments },
			},
		};

		r = rt_register(h->rt, &d, NULL);
	}
	return r;
}
