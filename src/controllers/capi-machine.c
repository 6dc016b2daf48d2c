/* capi-machine.c - the Machine controller, done by the hub in place of
 * Cluster API core (cluster.x-k8s.io/v1beta2 Machine).
 *
 * For a Machine it adds the finalizer machine.cluster.x-k8s.io and the label
 * cluster.x-k8s.io/cluster-name=<spec.clusterName>; puts that label and a
 * controller ownerReference Machine on the bootstrap config
 * (spec.bootstrap.configRef) and the infra machine (spec.infrastructureRef);
 * once the bootstrap config reports its data secret created
 * (status.initialization.dataSecretCreated, or v1beta1 status.ready) copies
 * its status.dataSecretName into spec.bootstrap.dataSecretName; copies the
 * infra machine's spec.providerID into spec.providerID; and reports
 * status.initialization, status.nodeRef, status.phase and its own
 * conditions (BootstrapConfigReady, InfrastructureReady, NodeHealthy,
 * NodeReady, Ready, Available, Deleting; v1beta1 BootstrapReady,
 * InfrastructureReady, Ready), merged by type so that a condition another
 * controller writes (CAPOA's UpToDate) stays.
 *
 * There is no workload cluster to find a Node in: the Node of a Machine is
 * the Agent in InfraEnv <machine> (label infraenvs.agent-install.openshift.io
 * in the Machine's namespace) once installed; its hostname names the Node.
 * The Machine is Ready and Available when the infra machine is provisioned,
 * the bootstrap data is created and that Agent is installed.
 *
 * Deleting a Machine deletes the infra machine and the bootstrap config,
 * waits until both are gone, then drops the finalizer (no drain: there is
 * no Node to drain). */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "controllers/capi.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/api.h"

#define WAIT_MS 5000

struct capi_machine_ctl {
	struct hub *h;
	const struct kube_kind *k_machine, *k_cluster;
};

/* The kinds, looked up per call from the hub's registry (ctx is the hub:
 * several hubs may run in one process, as in the unit tests). */
static bool ctl_init(struct capi_machine_ctl *c, struct hub *h)
{
	c->h = h;
	c->k_machine = capi_kind(h->reg, CAPI_GROUP, "Machine");
	c->k_cluster = capi_kind(h->reg, CAPI_GROUP, "Cluster");
	return c->k_machine && c->k_cluster;
}

static bool truthy(const json_t *o, const char *a, const char *b)
{
	return json_is_true(capi_path(o, a, b));
}

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static json_t *sub(json_t *o, const char *k, bool array)
{
	json_t *v = json_object_get(o, k);

	if (array ? !json_is_array(v) : !json_is_object(v))
		json_object_set_new(o, k, v = array ? json_array() : json_object());
	return v;
}

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

/* The installed Agent of the Machine (InfraEnv <machine>): 1 with its Node
 * name in node, 0 when there is none. */
static int installed_agent(struct hub *h, const char *ns, const char *machine, char *node, size_t size)
{
	json_t *list = capi_list_by(h, h->k_agent->store_key, HUB_IDX_AGENT_INFRAENV, ns, machine), *p;
	size_t i;
	int found = 0;

	json_array_foreach(list, i, p) {
		json_t *a = NULL;
		const char *state, *host;
		ah_err err;

		if (kube_get(h->api, h->k_agent, json_string_value(json_array_get(p, 0)),
			     json_string_value(json_array_get(p, 1)), &a, &err) < 0)
			continue;
		state = capi_str(capi_path(a, "status", "debugInfo"), "state");
		if (capi_cond_true(capi_path(a, "status", "conditions"), "Installed") || same(state, "installed") ||
		    same(state, "added-to-existing-cluster")) {
			host = capi_str(json_object_get(a, "spec"), "hostname");
			if (!host || !*host)
				host = capi_str(capi_path(a, "status", "inventory"), "hostname");
			if (!host || !*host)
				host = json_string_value(json_array_get(p, 1));
			snprintf(node, size, "%s", host);
			found = 1;
		}
		json_decref(a);
		if (found)
			break;
	}
	json_decref(list);
	return found;
}

static struct rt_result machine_delete(struct capi_machine_ctl *c, json_t *m)
{
	struct hub *h = c->h;
	const json_t *meta = json_object_get(m, "metadata"), *spec = json_object_get(m, "spec");
	const char *ns = capi_str(meta, "namespace"), *name = capi_str(meta, "name");
	const struct kube_kind *ki = NULL, *kb = NULL;
	json_t *st, *im = NULL, *bc = NULL;
	const char *reason;
	char now[32];
	int r, left = 0;
	ah_err err;

	if (!capi_has_finalizer(m, CAPI_FINALIZER_MACHINE))
		return rt_done();
	if (get_ref(h, json_object_get(spec, "infrastructureRef"), ns, &ki, &im, &err) < 0 ||
	    get_ref(h, capi_path(spec, "bootstrap", "configRef"), ns, &kb, &bc, &err) < 0)
		return rt_error(-EIO);
	reason = im ? "WaitingForInfrastructureDeletion" : bc ? "WaitingForBootstrapDeletion" : "DeletionCompleted";
	util_now_rfc3339(now, sizeof(now));
	st = json_is_object(json_object_get(m, "status")) ? json_deep_copy(json_object_get(m, "status")) : json_object();
	if (!same(capi_str(st, "phase"), "Deleting")) {
		json_object_set_new(st, "phase", json_string("Deleting"));
		json_object_set_new(st, "lastUpdated", json_string(now));
	}
	capi_cond_set(sub(st, "conditions", true), "Deleting", "True", reason, NULL,
		      json_integer_value(json_object_get(meta, "generation")), now);
	r = capi_write_status(h, c->k_machine, m, st, &err);
	json_decref(st);
	if (r != 0) {
		json_decref(im);
		json_decref(bc);
		return r < 0 && err.status != 404 ? rt_error(r) : rt_done();
	}
	if (im) {
		r = capi_delete(h, ki, ns, capi_str(json_object_get(im, "metadata"), "name"), &err);
		left += r != 0;
	}
	if (bc && r >= 0) {
		r = capi_delete(h, kb, ns, capi_str(json_object_get(bc, "metadata"), "name"), &err);
		left += r != 0;
	}
	json_decref(im);
	json_decref(bc);
	if (r < 0)
		return rt_error(r);
	if (left)
		return rt_requeue_after(WAIT_MS); /* their deletion events come sooner */
	r = capi_set_finalizer(h, c->k_machine, m, CAPI_FINALIZER_MACHINE, false, &err);
	if (r < 0 && err.status != 404)
		return rt_error(r);
	log_info("machine %s/%s: deleted", ns, name);
	return rt_done();
}

/* The finalizer, the cluster-name label and, for a Machine nothing owns,
 * an ownerReference to its Cluster: one guarded metadata patch.  1 when
 * written. */
static int machine_metadata(struct capi_machine_ctl *c, const json_t *m, ah_err *err)
{
	const json_t *meta = json_object_get(m, "metadata");
	const char *cn = capi_str(json_object_get(m, "spec"), "clusterName");
	json_t *labels = cn ? json_pack("{s:s}", CAPI_LABEL_CLUSTER_NAME, cn) : json_object(), *cl = NULL;
	int r;

	if (cn && !json_array_size(json_object_get(meta, "ownerReferences")) &&
	    kube_get(c->h->api, c->k_cluster, capi_str(meta, "namespace"), cn, &cl, err) < 0)
		cl = NULL;
	r = capi_ensure_owner_labels(c->h, c->k_machine, m, cl, false, labels, err);
	json_decref(labels);
	json_decref(cl);
	if (r != 0)
		return r;
	return capi_set_finalizer(c->h, c->k_machine, m, CAPI_FINALIZER_MACHINE, true, err);
}

static struct rt_result machine_reconcile(void *ctx, const struct rt_key *key)
{
	struct capi_machine_ctl cc, *c = &cc;
	struct hub *h = ctx;
	json_t *m = NULL, *bc = NULL, *im = NULL, *labels = NULL, *st, *init, *conds, *v1, *spec_patch = NULL;
	const json_t *meta, *spec, *bref, *iref;
	const struct kube_kind *kb = NULL, *ki = NULL;
	bool boot_done = false, infra_done = false, node = false;
	const char *cn, *dsn, *pid;
	char now[32], node_name[256], msg[256];
	long long gen;
	int r = 0;
	ah_err err;

	if (!ctl_init(c, h))
		return rt_done();
	if (kube_get(h->api, c->k_machine, key->ns, key->name, &m, &err) < 0)
		return err.status == 404 ? rt_done() : rt_error(-EIO);
	meta = json_object_get(m, "metadata");
	spec = json_object_get(m, "spec");
	gen = json_integer_value(json_object_get(meta, "generation"));
	{
		json_t *cl = NULL;
		bool paused;

		if (!capi_str(spec, "clusterName") ||
		    kube_get(h->api, c->k_cluster, key->ns, capi_str(spec, "clusterName"), &cl, &err) < 0)
			cl = NULL;
		paused = capi_paused(cl, m, msg, sizeof(msg));
		json_decref(cl);
		if (paused) {
			r = capi_write_paused(h, c->k_machine, m, msg, &err);
			goto out;
		}
	}
	if (capi_str(meta, "deletionTimestamp")) {
		struct rt_result res = machine_delete(c, m);

		json_decref(m);
		return res;
	}
	if ((r = machine_metadata(c, m, &err)) != 0)
		goto out; /* written: its event brings the next pass */

	cn = capi_str(spec, "clusterName");
	labels = cn ? json_pack("{s:s}", CAPI_LABEL_CLUSTER_NAME, cn) : json_object();
	bref = capi_path(spec, "bootstrap", "configRef");
	iref = json_object_get(spec, "infrastructureRef");
	if (get_ref(h, bref, key->ns, &kb, &bc, &err) < 0 || get_ref(h, iref, key->ns, &ki, &im, &err) < 0) {
		r = -EIO;
		goto out;
	}
	if (bc && (r = capi_ensure_owner_labels(h, kb, bc, m, true, labels, &err)) != 0)
		goto out;
	if (im && (r = capi_ensure_owner_labels(h, ki, im, m, true, labels, &err)) != 0)
		goto out;

	/* Bootstrap data and provider ID into the Machine's spec. */
	spec_patch = json_object();
	if (bc) {
		boot_done = truthy(json_object_get(bc, "status"), "initialization", "dataSecretCreated") ||
			    truthy(bc, "status", "ready");
		dsn = capi_str(json_object_get(bc, "status"), "dataSecretName");
		if (boot_done && dsn && *dsn && !same(capi_str(capi_path(m, "spec", "bootstrap"), "dataSecretName"), dsn))
			json_object_set_new(spec_patch, "bootstrap", json_pack("{s:s}", "dataSecretName", dsn));
		boot_done = boot_done && dsn && *dsn;
	} else if (!json_is_object(bref)) {
		dsn = capi_str(capi_path(m, "spec", "bootstrap"), "dataSecretName");
		boot_done = dsn && *dsn;
	}
	if (im) {
		pid = capi_str(json_object_get(im, "spec"), "providerID");
		if (pid && *pid && !same(capi_str(spec, "providerID"), pid))
			json_object_set_new(spec_patch, "providerID", json_string(pid));
		infra_done = truthy(json_object_get(im, "status"), "initialization", "provisioned") ||
			     truthy(im, "status", "ready");
	}
	if (json_object_size(spec_patch)) {
		json_t *patch = json_pack("{s:O,s:{s:O}}", "spec", spec_patch, "metadata", "resourceVersion",
					  json_object_get(meta, "resourceVersion")), *ret = NULL;

		r = kube_patch(h->api, c->k_machine, key->ns, key->name, "application/merge-patch+json", patch, NULL, &ret,
			       &err);
		json_decref(patch);
		json_decref(ret);
		if (r >= 0)
			r = 1;
		goto out;
	}

	util_now_rfc3339(now, sizeof(now));
	st = json_is_object(json_object_get(m, "status")) ? json_deep_copy(json_object_get(m, "status")) : json_object();
	init = sub(st, "initialization", false);
	/* Once true, never false again (as upstream keeps them). */
	boot_done = boot_done || json_is_true(json_object_get(init, "bootstrapDataSecretCreated"));
	infra_done = infra_done || json_is_true(json_object_get(init, "infrastructureProvisioned"));
	if (boot_done)
		json_object_set_new(init, "bootstrapDataSecretCreated", json_true());
	if (infra_done)
		json_object_set_new(init, "infrastructureProvisioned", json_true());
	if (!json_object_size(init))
		json_object_del(st, "initialization");
	node = boot_done && infra_done && installed_agent(h, key->ns, key->name, node_name, sizeof(node_name));
	if (node)
		json_object_set_new(st, "nodeRef", json_pack("{s:s}", "name", node_name));

	conds = sub(st, "conditions", true);
	v1 = sub(sub(sub(st, "deprecated", false), "v1beta1", false), "conditions", true);
	if (boot_done) {
		capi_cond_set(conds, "BootstrapConfigReady", "True", bc ? "Ready" : "DataSecretProvided", NULL, gen, now);
	} else if (json_is_object(bref) && !bc) {
		snprintf(msg, sizeof(msg), "%s does not exist", capi_str(bref, "kind") ? capi_str(bref, "kind") : "bootstrap config");
		capi_cond_set(conds, "BootstrapConfigReady", "False", "ObjectDoesNotExist", msg, gen, now);
	} else {
		snprintf(msg, sizeof(msg), "%s status.initialization.dataSecretCreated is false",
			 capi_str(bref, "kind") ? capi_str(bref, "kind") : "bootstrap config");
		capi_cond_set(conds, "BootstrapConfigReady", "False", "NotReady", msg, gen, now);
	}
	capi_v1b1_cond_set(v1, "BootstrapReady", boot_done, "WaitingForDataSecret", "Info", NULL, now);
	if (infra_done) {
		capi_cond_set(conds, "InfrastructureReady", "True", "Ready", NULL, gen, now);
	} else if (json_is_object(iref) && !im) {
		snprintf(msg, sizeof(msg), "%s does not exist", capi_str(iref, "kind") ? capi_str(iref, "kind") : "infrastructure");
		capi_cond_set(conds, "InfrastructureReady", "False", "ObjectDoesNotExist", msg, gen, now);
	} else {
		/* As CAPI's mirror of the infra machine's Ready condition: a v1beta1-contract
		 * provider (CAPM3) reports it in status.v1beta2.conditions. */
		const json_t *ir = capi_cond_get(capi_path(json_object_get(im, "status"), "v1beta2", "conditions"),
						 "Ready");

		if (ir && capi_str(ir, "status") && strcmp(capi_str(ir, "status"), "True") != 0 &&
		    capi_str(ir, "message") && *capi_str(ir, "message")) {
			capi_cond_set(conds, "InfrastructureReady", capi_str(ir, "status"),
				      capi_str(ir, "reason") ? capi_str(ir, "reason") : "NotReady", capi_str(ir, "message"),
				      gen, now);
		} else {
			snprintf(msg, sizeof(msg), "%s status.initialization.provisioned is false",
				 capi_str(iref, "kind") ? capi_str(iref, "kind") : "infrastructure");
			capi_cond_set(conds, "InfrastructureReady", "False", "NotReady", msg, gen, now);
		}
	}
	capi_v1b1_cond_set(v1, "InfrastructureReady", infra_done, "WaitingForInfrastructure", "Info", NULL, now);
	if (node) {
		capi_cond_set(conds, "NodeReady", "True", "NodeReady", NULL, gen, now);
		capi_cond_set(conds, "NodeHealthy", "True", "NodeHealthy", NULL, gen, now);
	} else {
		const char *why = boot_done && infra_done ? "Waiting for the Agent of the Machine to be installed"
							  : "Waiting for a Node";

		capi_cond_set(conds, "NodeReady", "Unknown", "NodeDoesNotExist", why, gen, now);
		capi_cond_set(conds, "NodeHealthy", "Unknown", "NodeDoesNotExist", why, gen, now);
	}
	capi_cond_set(conds, "Deleting", "False", "NotDeleting", NULL, gen, now);
	capi_set_paused_cond(st, false, NULL, gen, now);
	if (node) {
		capi_cond_set(conds, "Ready", "True", "Ready", NULL, gen, now);
		capi_cond_set(conds, "Available", "True", "Available", NULL, gen, now);
	} else {
		snprintf(msg, sizeof(msg), "%s%s%s",
			 boot_done ? "" : "* BootstrapConfigReady: waiting for bootstrap data\n",
			 infra_done ? "" : "* InfrastructureReady: waiting for the infrastructure\n",
			 "* NodeHealthy: Waiting for a Node");
		capi_cond_set(conds, "Ready", "False", "NotReady", msg, gen, now);
		capi_cond_set(conds, "Available", "False", "NotReady", "* Ready: not ready", gen, now);
	}
	capi_v1b1_cond_set(v1, "Ready", node, "WaitingForNode", "Info", NULL, now);

	{
		/* status.phase, as upstream's setMachinePhaseAndLastUpdated. */
		const char *old = capi_str(st, "phase"), *phase = old ? old : "Pending";

		if (same(phase, "Deleting"))
			phase = "Pending";
		if (boot_done && !infra_done)
			phase = "Provisioning";
		if (capi_str(spec, "providerID") && *capi_str(spec, "providerID"))
			phase = "Provisioned";
		if (node && infra_done)
			phase = "Running";
		if (!same(old, phase)) {
			json_object_set_new(st, "phase", json_string(phase));
			json_object_set_new(st, "lastUpdated", json_string(now));
		}
	}
	json_object_set_new(st, "observedGeneration", json_integer(gen));
	r = capi_write_status(h, c->k_machine, m, st, &err);
	json_decref(st);
out:
	if (r < 0 && err.status != 404 && err.status != 409)
		log_warn("machine %s/%s: %s", key->ns, key->name, err.message);
	json_decref(spec_patch);
	json_decref(labels);
	json_decref(bc);
	json_decref(im);
	json_decref(m);
	if (r < 0)
		return err.status == 404 ? rt_done() : rt_error(r);
	return rt_done();
}

/* --- indexes and mappings -------------------------------------------------------- */

static void machine_refs_index(const json_t *m, json_t *out)
{
	const char *ns = capi_str(json_object_get(m, "metadata"), "namespace");
	const json_t *spec = json_object_get(m, "spec");
	char key[600];

	if (capi_ref_key(capi_path(spec, "bootstrap", "configRef"), ns, key, sizeof(key)))
		json_array_append_new(out, json_string(key));
	if (capi_ref_key(json_object_get(spec, "infrastructureRef"), ns, key, sizeof(key)))
		json_array_append_new(out, json_string(key));
}

static void ref_to_machine(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	struct capi_machine_ctl cc, *c = &cc;
	const char *kind = ev->obj ? capi_str(ev->obj, "kind") : NULL;
	json_t *list, *p;
	char key[600];
	size_t i;

	if (!kind || !ctl_init(c, ctx))
		return;
	snprintf(key, sizeof(key), "%s/%s/%s", kind, ev->so->ns, ev->so->name);
	list = rt_cache_list_by(c->h->rt, c->k_machine->store_key, CAPI_IDX_REFS, key);
	json_array_foreach(list, i, p)
		rt_enqueue(rc, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(list);
}

/* A Cluster (spec.paused) queues its Machines. */
static void cluster_to_machines(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	struct capi_machine_ctl cc, *c = &cc;
	json_t *list, *p;
	char key[600];
	size_t i;

	if (!ctl_init(c, ctx))
		return;
	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	list = rt_cache_list_by(c->h->rt, c->k_machine->store_key, CAPI_IDX_CLUSTER_NAME, key);
	json_array_foreach(list, i, p)
		rt_enqueue(rc, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(list);
}

static void machine_name_index(const json_t *m, json_t *out)
{
	const json_t *meta = json_object_get(m, "metadata");
	char key[600];

	if (capi_str(meta, "namespace") && capi_str(meta, "name")) {
		snprintf(key, sizeof(key), "%s/%s", capi_str(meta, "namespace"), capi_str(meta, "name"));
		json_array_append_new(out, json_string(key));
	}
}

/* An Agent of InfraEnv <machine> queues Machine <machine> when there is one
 * (most Agents belong to no Machine). */
static void agent_to_machine(struct rt_controller *rc, void *ctx, const struct rt_event *ev)
{
	const char *ie = ev->obj ? capi_str(capi_path(ev->obj, "metadata", "labels"), LABEL_INFRAENV) : NULL;
	struct capi_machine_ctl cc;
	json_t *list;
	char key[600];

	if (!ie || !*ie || !ctl_init(&cc, ctx))
		return;
	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ie);
	list = rt_cache_list_by(cc.h->rt, cc.k_machine->store_key, CAPI_IDX_NAME, key);
	if (json_array_size(list))
		rt_enqueue(rc, ev->so->ns, ie);
	json_decref(list);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

int hub_capi_machine_register(struct hub *h)
{
	struct capi_machine_ctl cc, *c = &cc;
	struct rt_controller_def d = { .name = "CAPIMachine", .reconcile = machine_reconcile, .ctx = h };
	const char *seen[RT_MAX_WATCHES];
	size_t i, nw = 0, ns = 0;
	int r;

	if (!ctl_init(c, h))
		return 0; /* no Cluster API kinds installed */
	r = rt_cache_index(h->rt, c->k_machine->store_key, CAPI_IDX_REFS, machine_refs_index);
	if (r == 0)
		r = rt_cache_index(h->rt, c->k_machine->store_key, CAPI_IDX_NAME, machine_name_index);
	if (r < 0)
		return r;
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_machine->store_key, .map = RT_MAP_SELF };
	d.watches[nw++] = (struct rt_watch){ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_machine };
	d.watches[nw++] = (struct rt_watch){ .resource = c->k_cluster->store_key, .map = RT_MAP_FN,
					     .fn = cluster_to_machines };
	/* The bootstrap configs and infra machines the registry knows. */
	for (i = 0; i < h->reg->n && nw < RT_MAX_WATCHES; i++) {
		const struct kube_kind *k = h->reg->kinds[i];
		bool boot = strcmp(k->group, "bootstrap." CAPI_GROUP) == 0 && !ends_with(k->kind, "Template");
		bool infra = strcmp(k->group, "infrastructure." CAPI_GROUP) == 0 && ends_with(k->kind, "Machine");
		size_t j;

		if (!boot && !infra)
			continue;
		for (j = 0; j < ns && strcmp(seen[j], k->store_key) != 0; j++)
			;
		if (j < ns)
			continue;
		seen[ns++] = k->store_key;
		d.watches[nw++] = (struct rt_watch){ .resource = k->store_key, .map = RT_MAP_FN, .fn = ref_to_machine };
	}
	return rt_register(h->rt, &d, NULL);
}
