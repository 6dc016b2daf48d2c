/* capi-cluster.c - the Cluster controller, done by the hub in place of
 * Cluster API core (cluster.x-k8s.io/v1beta2 Cluster).
 *
 * For a Cluster it puts an ownerReference Cluster (not controller) and the
 * label cluster.x-k8s.io/cluster-name=<cluster> on the objects its
 * spec.infrastructureRef and spec.controlPlaneRef name (kinds resolved
 * through the registry), copies spec.controlPlaneEndpoint from the infra
 * cluster while its own is unset, and reports status.initialization
 * (infrastructureProvisioned from the infra cluster's provisioned / v1beta1
 * ready; controlPlaneInitialized from the control plane's), status.phase,
 * the v1beta2 conditions InfrastructureReady, ControlPlaneInitialized,
 * ControlPlaneAvailable, Available and their v1beta1 forms in
 * status.deprecated.v1beta1.conditions (real CAPM3 reads those).
 *
 * Finalizer cluster.cluster.x-k8s.io.  Deleting a Cluster deletes, in
 * upstream's order, its MachineDeployments, MachineSets and worker Machines
 * (those with no controller) and waits for them to be gone, then the
 * control plane object, then the infra cluster, and drops the finalizer
 * once both are gone.  Related objects are found through cache indexes:
 * the Clusters by "Kind/ns/name" of their refs, the MachineDeployments,
 * MachineSets and Machines by "ns/spec.clusterName". */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "controllers/capi.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/api.h"

#define WAIT_MS 5000

struct capi_cluster_ctl {
	struct hub *h;
	const struct kube_kind *k_cluster, *k_md, *k_ms, *k_machine;
};

/* The kinds, looked up per call from the hub's registry (ctx is the hub:
 * several hubs may run in one process, as in the unit tests). */
static bool ctl_init(struct capi_cluster_ctl *c, struct hub *h)
{
	c->h = h;
	c->k_cluster = capi_kind(h->reg, CAPI_GROUP, "Cluster");
	c->k_md = capi_kind(h->reg, CAPI_GROUP, "MachineDeployment");
	c->k_ms = capi_kind(h->reg, CAPI_GROUP, "MachineSet");
	c->k_machine = capi_kind(h->reg, CAPI_GROUP, "Machine");
	return c->k_cluster && c->k_md && c->k_ms && c->k_machine;
}

static bool is_true(const json_t *o, const char *a, const char *b)
{
	return json_is_true(capi_path(o, a, b));
}

static bool endpoint_valid(const json_t *ep)
{
	const char *host = capi_str(ep, "host");

	return host && *host && json_integer_value(json_object_get(ep, "port")) != 0;
}

/* status.deprecated.v1beta1.conditions of st, created when absent (borrowed). */
static json_t *v1b1_conds(json_t *st)
{
	json_t *dep = json_object_get(st, "deprecated"), *v1, *c;

	if (!json_is_object(dep))
		json_object_set_new(st, "deprecated", dep = json_object());
	v1 = json_object_get(dep, "v1beta1");
	if (!json_is_object(v1))
		json_object_set_new(dep, "v1beta1", v1 = json_object());
	c = json_object_get(v1, "conditions");
	if (!json_is_array(c))
		json_object_set_new(v1, "conditions", c = json_array());
	return c;
}

static json_t *conds_of(json_t *st)
{
	json_t *c = json_object_get(st, "conditions");

	if (!json_is_array(c))
		json_object_set_new(st, "conditions", c = json_array());
	return c;
}

static json_t *init_of(json_t *st)
{
	json_t *i = json_object_get(st, "initialization");

	if (!json_is_object(i))
		json_object_set_new(st, "initialization", i = json_object());
	return i;
}

/* The object ref names in ns: 0 with *ret (NULL when absent, *k then the
 * kind or NULL when the registry has none), or a negative errno. */
static int get_ref(struct hub *h, const json_t *ref, const char *ns, const struct kube_kind **k, json_t **ret,
		   ah_err *err)
{
	*ret = NULL;
	*k = capi_ref_kind(h->reg, ref);
	if (!*k || !capi_str(ref, "name"))
		return 0;
	if (kube_get(h->api, *k, ns, capi_str(ref, "name"), ret, err) < 0) {
		*ret = NULL;
		return err->status == 404 ? 0 : -EIO;
	}
	return 0;
}

static bool has_controller(const json_t *meta)
{
	const json_t *r;
	size_t i;

	json_array_foreach(json_object_get(meta, "ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")))
			return true;
	return false;
}

/* Delete the descendants of the Cluster; how many are left. */
static int delete_descendants(struct capi_cluster_ctl *c, const char *ns, const char *name, ah_err *err)
{
	const struct kube_kind *kinds[] = { c->k_md, c->k_ms, c->k_machine };
	int left = 0;
	size_t i, j;

	for (i = 0; i < 3; i++) {
		json_t *list = capi_list_by(c->h, kinds[i]->store_key, CAPI_IDX_CLUSTER_NAME, ns, name), *p;

		json_array_foreach(list, j, p) {
			const char *n = json_string_value(json_array_get(p, 1));
			json_t *obj = NULL;
			int r;

			if (kube_get(c->h->api, kinds[i], ns, n, &obj, err) < 0)
				continue;
			left++;
			/* A MachineSet of a deployment goes with the deployment; a
			 * Machine with a controller (a MachineSet, the control
			 * plane) or a control-plane Machine goes with it. */
			if ((i == 1 && capi_owner_name(json_object_get(obj, "metadata"), NULL, "MachineDeployment", true)) ||
			    (i == 2 && (has_controller(json_object_get(obj, "metadata")) ||
					json_object_get(capi_path(obj, "metadata", "labels"), CAPI_LABEL_CONTROL_PLANE)))) {
				json_decref(obj);
				continue;
			}
			r = capi_delete(c->h, kinds[i], ns, n, err);
			json_decref(obj);
			if (r < 0)
				log_warn("cluster %s/%s: deleting %s %s: %s", ns, name, kinds[i]->kind, n, err->message);
		}
		json_decref(list);
	}
	return left;
}

/* Count the Machines of the Cluster that are not control-plane Machines. */
static int workers_left(struct capi_cluster_ctl *c, const char *ns, const char *name, int *cp_left)
{
	json_t *list = capi_list_by(c->h, c->k_machine->store_key, CAPI_IDX_CLUSTER_NAME, ns, name), *p;
	int n = 0;
	size_t j;

	*cp_left = 0;
	json_array_foreach(list, j, p) {
		json_t *m = NULL;
		ah_err err;

		if (kube_get(c->h->api, c->k_machine, ns, json_string_value(json_array_get(p, 1)), &m, &err) < 0)
			continue;
		if (json_object_get(capi_path(m, "metadata", "labels"), CAPI_LABEL_CONTROL_PLANE))
			(*cp_left)++;
		else
			n++;
		json_decref(m);
	}
	json_decref(list);
	return n;
}

static int count_by(struct capi_cluster_ctl *c, const struct kube_kind *k, const char *ns, const char *name)
{
	json_t *list = capi_list_by(c->h, k->store_key, CAPI_IDX_CLUSTER_NAME, ns, name);
	int n = (int)json_array_size(list);

	json_decref(list);
	return n;
}

static struct rt_result cluster_delete(struct capi_cluster_ctl *c, json_t *cl)
{
	struct hub *h = c->h;
	const json_t *meta = json_object_get(cl, "metadata"), *spec = json_object_get(cl, "spec");
	const char *ns = capi_str(meta, "namespace"), *name = capi_str(meta, "name");
	const struct kube_kind *kcp = NULL, *ki = NULL;
	json_t *st, *cp = NULL, *infra = NULL;
	const char *reason, *msg = NULL;
	struct rt_result res = rt_done();
	char now[32];
	int cp_left = 0, workers, r;
	ah_err err;

	if (!capi_has_finalizer(cl, CAPI_FINALIZER_CLUSTER))
		return rt_done();
	/* 1. MachineDeployments, MachineSets, worker Machines. */
	delete_descendants(c, ns, name, &err);
	workers = count_by(c, c->k_md, ns, name) + count_by(c, c->k_ms, ns, name) + workers_left(c, ns, name, &cp_left);
	if (get_ref(h, json_object_get(spec, "controlPlaneRef"), ns, &kcp, &cp, &err) < 0 ||
	    get_ref(h, json_object_get(spec, "infrastructureRef"), ns, &ki, &infra, &err) < 0) {
		json_decref(cp);
		return rt_error(-EIO);
	}
	/* The stage, with upstream's reasons for the Deleting condition. */
	if (workers) {
		reason = "WaitingForWorkersDeletion";
		msg = "Waiting for MachineDeployments, MachineSets and worker Machines to be deleted";
	} else if (cp || cp_left) {
		reason = "WaitingForControlPlaneDeletion";
		msg = "Waiting for the control plane to be deleted";
	} else if (infra) {
		reason = "WaitingForInfrastructureDeletion";
		msg = "Waiting for the infrastructure cluster to be deleted";
	} else {
		reason = "DeletionCompleted";
	}
	util_now_rfc3339(now, sizeof(now));
	st = json_is_object(json_object_get(cl, "status")) ? json_deep_copy(json_object_get(cl, "status")) : json_object();
	json_object_set_new(st, "phase", json_string("Deleting"));
	capi_cond_set(conds_of(st), "Deleting", "True", reason, msg,
		      json_integer_value(json_object_get(meta, "generation")), now);
	r = capi_write_status(h, c->k_cluster, cl, st, &err);
	json_decref(st);
	if (r != 0) {
		/* Its event brings the next pass. */
		res = r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	} else if (workers) {
		res = rt_requeue_after(WAIT_MS);
	} else if (cp || cp_left) {
		/* 2. The control plane (its Machines go with it). */
		r = cp ? capi_delete(h, kcp, ns, capi_str(json_object_get(cp, "metadata"), "name"), &err) : 1;
		res = r < 0 ? rt_error(r) : rt_requeue_after(WAIT_MS);
	} else if (infra) {
		/* 3. The infra cluster. */
		r = capi_delete(h, ki, ns, capi_str(json_object_get(infra, "metadata"), "name"), &err);
		res = r < 0 ? rt_error(r) : rt_requeue_after(WAIT_MS);
	} else {
		r = capi_set_finalizer(h, c->k_cluster, cl, CAPI_FINALIZER_CLUSTER, false, &err);
		if (r < 0 && err.status != 404)
			res = rt_error(r);
		else
			log_info("cluster %s/%s: deleted", ns, name);
	}
	json_decref(cp);
	json_decref(infra);
	return res;
}

/* "* Type: message" lines of the conditions of types that are not True. */
static void not_true_summary(const json_t *conds, const char *const *types, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (; *types; types++) {
		const json_t *cd = capi_cond_get(conds, *types);
		const char *msg;

		if (capi_cond_true(conds, *types))
			continue;
		msg = capi_str(cd, "message") ? capi_str(cd, "message") : capi_str(cd, "reason") ? capi_str(cd, "reason") : "";
		n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s* %s: %s", n ? "\n" : "", *types, msg);
		if (n >= size)
			break;
	}
}

static struct rt_result cluster_reconcile(void *ctx, const struct rt_key *key)
{
	struct capi_cluster_ctl cc, *c = &cc;
	struct hub *h = ctx;
	json_t *cl = NULL, *infra = NULL, *cp = NULL, *labels, *st, *conds, *v1, *init;
	const json_t *meta, *spec, *infra_ref, *cp_ref, *cp_avail;
	const struct kube_kind *ki = NULL, *kc = NULL;
	bool provisioned, initialized;
	long long gen;
	char now[32], msg[512], phase[16];
	int r = 0;
	ah_err err;

	if (!ctl_init(c, h))
		return rt_done();
	if (kube_get(h->api, c->k_cluster, key->ns, key->name, &cl, &err) < 0)
		return err.status == 404 ? rt_done() : rt_error(-EIO);
	meta = json_object_get(cl, "metadata");
	spec = json_object_get(cl, "spec");
	gen = json_integer_value(json_object_get(meta, "generation"));
	if (capi_paused(cl, cl, msg, sizeof(msg))) {
		/* Nothing is reconciled, deletion included, until unpaused. */
		r = capi_write_paused(h, c->k_cluster, cl, msg, &err);
		json_decref(cl);
		return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	}
	if (capi_str(meta, "deletionTimestamp")) {
		struct rt_result res = cluster_delete(c, cl);

		json_decref(cl);
		return res;
	}
	if (!capi_has_finalizer(cl, CAPI_FINALIZER_CLUSTER)) {
		r = capi_set_finalizer(h, c->k_cluster, cl, CAPI_FINALIZER_CLUSTER, true, &err);
		json_decref(cl);
		/* The update is an event: the rest follows on the next pass. */
		return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	}

	labels = json_pack("{s:s}", CAPI_LABEL_CLUSTER_NAME, key->name);
	infra_ref = json_object_get(spec, "infrastructureRef");
	cp_ref = json_object_get(spec, "controlPlaneRef");
	if (get_ref(h, infra_ref, key->ns, &ki, &infra, &err) < 0 || get_ref(h, cp_ref, key->ns, &kc, &cp, &err) < 0) {
		r = -EIO;
		goto out;
	}
	if (infra && (r = capi_ensure_owner_labels(h, ki, infra, cl, false, labels, &err)) != 0)
		goto out; /* written: the infra cluster's event runs this again */
	if (cp && (r = capi_ensure_owner_labels(h, kc, cp, cl, false, labels, &err)) != 0)
		goto out;

	/* spec.controlPlaneEndpoint from the infra cluster, while unset. */
	if (infra && !endpoint_valid(json_object_get(spec, "controlPlaneEndpoint")) &&
	    endpoint_valid(capi_path(infra, "spec", "controlPlaneEndpoint"))) {
		const json_t *ep = capi_path(infra, "spec", "controlPlaneEndpoint");
		json_t *patch = json_pack("{s:{s:{s:O,s:O}},s:{s:O}}", "spec", "controlPlaneEndpoint", "host",
					  json_object_get(ep, "host"), "port", json_object_get(ep, "port"), "metadata",
					  "resourceVersion", json_object_get(meta, "resourceVersion")), *ret = NULL;

		r = kube_patch(h->api, c->k_cluster, key->ns, key->name, "application/merge-patch+json", patch, NULL, &ret,
			       &err);
		json_decref(patch);
		json_decref(ret);
		if (r >= 0)
			r = 1;
		goto out;
	}

	util_now_rfc3339(now, sizeof(now));
	st = json_is_object(json_object_get(cl, "status")) ? json_deep_copy(json_object_get(cl, "status")) : json_object();
	init = init_of(st);
	/* Once true, never false again (as upstream keeps them). */
	provisioned = json_is_true(json_object_get(init, "infrastructureProvisioned")) ||
		      (infra && (is_true(json_object_get(infra, "status"), "initialization", "provisioned") ||
				 is_true(infra, "status", "ready")));
	initialized = json_is_true(json_object_get(init, "controlPlaneInitialized")) ||
		      (cp && (is_true(json_object_get(cp, "status"), "initialization", "controlPlaneInitialized") ||
			      is_true(cp, "status", "initialized")));
	if (provisioned)
		json_object_set_new(init, "infrastructureProvisioned", json_true());
	if (initialized)
		json_object_set_new(init, "controlPlaneInitialized", json_true());
	if (!json_object_size(init))
		json_object_del(st, "initialization");

	conds = conds_of(st);
	v1 = v1b1_conds(st);
	/* InfrastructureReady: the infra cluster's Ready mirrored, or its provisioned flag. */
	if (!json_is_object(infra_ref)) {
		capi_cond_set(conds, "InfrastructureReady", "False", "ObjectDoesNotExist", "spec.infrastructureRef is not set", gen, now);
	} else if (!infra) {
		snprintf(msg, sizeof(msg), "%s does not exist", capi_str(infra_ref, "kind") ? capi_str(infra_ref, "kind") : "infrastructure");
		capi_cond_set(conds, "InfrastructureReady", "False",
			      provisioned ? "ObjectDeleted" : "ObjectDoesNotExist", msg, gen, now);
	} else if (capi_cond_get(capi_path(infra, "status", "conditions"), "Ready") &&
		   capi_str(capi_cond_get(capi_path(infra, "status", "conditions"), "Ready"), "reason")) {
		const json_t *rc = capi_cond_get(capi_path(infra, "status", "conditions"), "Ready");

		capi_cond_set(conds, "InfrastructureReady", capi_str(rc, "status"), capi_str(rc, "reason"),
			      capi_str(rc, "message"), gen, now);
	} else if (provisioned) {
		capi_cond_set(conds, "InfrastructureReady", "True", "Ready", NULL, gen, now);
	} else {
		snprintf(msg, sizeof(msg), "%s status.initialization.provisioned is false", capi_str(infra_ref, "kind"));
		capi_cond_set(conds, "InfrastructureReady", "False", "NotReady", msg, gen, now);
	}
	capi_v1b1_cond_set(v1, "InfrastructureReady", provisioned, "WaitingForInfrastructure", "Info", NULL, now);

	if (initialized)
		capi_cond_set(conds, "ControlPlaneInitialized", "True", "Initialized", NULL, gen, now);
	else
		capi_cond_set(conds, "ControlPlaneInitialized", "False", "NotInitialized", "Control plane not yet initialized",
			      gen, now);
	capi_v1b1_cond_set(v1, "ControlPlaneInitialized", initialized, "WaitingForControlPlaneProviderInitialized",
			   "Info", "Waiting for control plane provider to indicate the control plane has been initialized", now);

	cp_avail = cp ? capi_cond_get(capi_path(cp, "status", "conditions"), "Available") : NULL;
	if (!json_is_object(cp_ref)) {
		capi_cond_set(conds, "ControlPlaneAvailable", "False", "ObjectDoesNotExist", "spec.controlPlaneRef is not set", gen, now);
	} else if (!cp) {
		snprintf(msg, sizeof(msg), "%s does not exist", capi_str(cp_ref, "kind") ? capi_str(cp_ref, "kind") : "control plane");
		capi_cond_set(conds, "ControlPlaneAvailable", "False", "ObjectDoesNotExist", msg, gen, now);
	} else if (cp_avail && capi_str(cp_avail, "status") && capi_str(cp_avail, "reason")) {
		capi_cond_set(conds, "ControlPlaneAvailable", capi_str(cp_avail, "status"), capi_str(cp_avail, "reason"),
			      capi_str(cp_avail, "message"), gen, now);
	} else if (initialized) {
		capi_cond_set(conds, "ControlPlaneAvailable", "True", "Available", NULL, gen, now);
	} else {
		snprintf(msg, sizeof(msg), "%s status.initialization.controlPlaneInitialized is false", capi_str(cp_ref, "kind"));
		capi_cond_set(conds, "ControlPlaneAvailable", "False", "NotAvailable", msg, gen, now);
	}
	capi_v1b1_cond_set(v1, "ControlPlaneReady", capi_cond_true(conds, "ControlPlaneAvailable"),
			   "WaitingForControlPlane", "Info", NULL, now);
	capi_cond_set(conds, "Deleting", "False", "NotDeleting", NULL, gen, now);
	capi_set_paused_cond(st, false, NULL, gen, now);
	{
		static const char *const types[] = { "InfrastructureReady", "ControlPlaneAvailable", NULL };

		not_true_summary(conds, types, msg, sizeof(msg));
		if (!msg[0])
			capi_cond_set(conds, "Available", "True", "Available", NULL, gen, now);
		else
			capi_cond_set(conds, "Available", "False", "NotAvailable", msg, gen, now);
	}
	capi_v1b1_cond_set(v1, "Ready", capi_cond_true(conds, "Available"), "WaitingForInfrastructure", "Info", NULL, now);

	/* status.phase, as upstream's setPhase. */
	snprintf(phase, sizeof(phase), "%s", capi_str(st, "phase") ? capi_str(st, "phase") : "Pending");
	if (strcmp(phase, "Provisioned") != 0 && strcmp(phase, "Provisioning") != 0)
		snprintf(phase, sizeof(phase), "Pending");
	if (json_is_object(infra_ref) || json_is_object(cp_ref))
		snprintf(phase, sizeof(phase), "Provisioning");
	if (provisioned && endpoint_valid(json_object_get(spec, "controlPlaneEndpoint")))
		snprintf(phase, sizeof(phase), "Provisioned");
	json_object_set_new(st, "phase", json_string(phase));
	json_object_set_new(st, "observedGeneration", json_integer(gen));

	r = capi_write_status(h, c->k_cluster, cl, st, &err);
	json_decref(st);
out:
	if (r < 0 && err.status != 404 && err.status != 409)
		log_warn("cluster %s/%s: %s", key->ns, key->name, err.message);
	json_decref(labels);
	json_decref(infra);
	json_decref(cp);
	json_decref(cl);
	if (r < 0)
		return err.status == 404 ? rt_done() : rt_error(r);
	/* Without an endpoint or provisioned infrastructure yet, the infra
	 * cluster's own events bring the next pass. */
	return rt_done();
}

/* --- indexes and mappings -------------------------------------------------------- */

static void cluster_refs_index(const json_t *cl, json_t *out)
{
	const char *ns = capi_str(json_object_get(cl, "metadata"), "namespace");
	const json_t *spec = json_object_get(cl, "spec");
	char key[600];

	if (capi_ref_key(json_object_get(spec, "infrastructureRef"), ns, key, sizeof(key)))
		json_array_append_new(out, json_string(key));
	if (capi_ref_key(json_object_get(spec, "controlPlaneRef"), ns, key, sizeof(key)))
		json_array_append_new(out, json_string(key));
}

static void cluster_name_index(const json_t *obj, json_t *out)
{
	const char *ns = capi_str(json_object_get(obj, "metadata"), "namespace");
	const char *cn = capi_str(json_object_get(obj, "spec"), "clusterName");
	char key[600];

	if (!cn)
		cn = capi_str(capi_path(obj, "metadata", "labels"), CAPI_LABEL_CLUSTER_NAME);
	if (ns && cn && *cn) {
		snprintf(key, sizeof(key), "%s/%s", ns, cn);
		json_array_append_new(out, json_string(key));
	}
}

static void descendant_to_cluster(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	json_t *vals = json_array(), *v;
	size_t i;

	(void)ctx;
	if (ev->obj)
		cluster_name_index(ev->obj, vals);
	json_array_foreach(vals, i, v) {
		const char *s = json_string_value(v), *slash = strchr(s, '/');

		if (slash)
			rt_enqueue(rc, ev->so->ns, slash + 1);
	}
	json_decref(vals);
}

static void ref_to_cluster(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	struct capi_cluster_ctl cc, *c = &cc;
	const char *kind = ev->obj ? capi_str(ev->obj, "kind") : NULL;
	json_t *list, *p;
	char key[600];
	size_t i;

	if (!kind || !ctl_init(c, ctx))
		return;
	snprintf(key, sizeof(key), "%s/%s/%s", kind, ev->so->ns, ev->so->name);
	list = rt_cache_list_by(c->h->rt, c->k_cluster->store_key, CAPI_IDX_REFS, key);
	json_array_foreach(list, i, p)
		rt_enqueue(rc, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(list);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int hub_capi_cluster_register(struct hub *h)
{
	struct capi_cluster_ctl cc, *c = &cc;
	struct rt_controller_def d = { .name = "CAPICluster", .reconcile = cluster_reconcile, .ctx = h };
	const char *seen[RT_MAX_WATCHES];
	size_t i, nw = 0, ns = 0;
	int r;

	if (!ctl_init(c, h))
		return 0; /* no Cluster API kinds installed */
	r = rt_cache_index(h->rt, c->k_cluster->store_key, CAPI_IDX_REFS, cluster_refs_index);
	if (r == 0)
		r = rt_cache_index(h->rt, c->k_md->store_key, CAPI_IDX_CLUSTER_NAME, cluster_name_index);
	if (r == 0)
		r = rt_cache_index(h->rt, c->k_ms->store_key, CAPI_IDX_CLUSTER_NAME, cluster_name_index);
	if (r == 0)
		r = rt_cache_index(h->rt, c->k_machine->store_key, CAPI_IDX_CLUSTER_NAME, cluster_name_index);
	if (r < 0)
		return r;
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_cluster->store_key, .map = RT_MAP_SELF };
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_md->store_key, .map = RT_MAP_FN, .fn = descendant_to_cluster };
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_ms->store_key, .map = RT_MAP_FN, .fn = descendant_to_cluster };
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_machine->store_key, .map = RT_MAP_FN,
					     .fn = descendant_to_cluster };
	/* The infra clusters and control planes the registry knows: their
	 * events reach the Clusters that name them. */
	for (i = 0; i < h->reg->n && nw < RT_MAX_WATCHES; i++) {
		const struct kube_kind *k = h->reg->kinds[i];
		bool infra = strcmp(k->group, "infrastructure." CAPI_GROUP) == 0 && ends_with(k->kind, "Cluster");
		bool cp = strcmp(k->group, "controlplane." CAPI_GROUP) == 0 && !ends_with(k->kind, "Template");
		size_t j;

		if (!infra && !cp)
			continue;
		for (j = 0; j < ns && strcmp(seen[j], k->store_key) != 0; j++)
			;
		if (j < ns)
			continue;
		seen[ns++] = k->store_key;
		d.watches[nw++] = (struct rt_watch){ .resource = k->store_key, .map = RT_MAP_FN, .fn = ref_to_cluster };
	}
	return rt_register(h->rt, &d, NULL);
}
