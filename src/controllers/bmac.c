/* bmac.c - the Bare Metal Agent Controller (bmac-capi.md §A, live-ISO flow):
 * for each BareMetalHost labelled with an InfraEnv it puts the InfraEnv's
 * ISO on the host (spec.image, online), pairs the host's Agent by MAC
 * (namespace-wide, through a cache index of the Agents' inventory MACs),
 * approves it and copies the BMH annotations to its spec and labels, writes
 * the inspect.metal3.io/hardwaredetails annotation from its inventory,
 * detaches and pauses the BMH once the host installed, and when the Agent is
 * unbound (UnbindingPendingUserAction) takes the image away so the BMH
 * controller reboots the host into discovery.  Keys are BMHs. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/bmh.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/hub-internal.h"
#include "kube/api.h"
#include "kube/registry.h"

#define BMAC_PREFIX "bmac.agent-install.openshift.io/"
#define BMAC_FINALIZER BMAC_PREFIX "deprovision"
#define BMAC_AGENT_LABEL_PREFIX "bmac.agent-install.openshift.io.agent-label."
#define BMAC_NODE_LABEL_PREFIX "bmac.agent-install.openshift.io.node-label."
#define AGENT_BMH_LABEL "agent-install.openshift.io/bmh"
#define BACKUP_LABEL "cluster.open-cluster-management.io/backup"
#define DETACHED_VALUE "assisted-service-controller"
#define ANN_BMH_STATUS "baremetalhost.metal3.io/status"
#define ANN_SPOKE_CREATED BMAC_PREFIX "spoke-bmh-machine-created"
#define IDX_AGENT_MAC "bmacMAC"        /* Agent -> "ns/mac" of each inventory interface (lower case) */
#define IDX_BMH_MAC "bmacBootMAC"      /* BMH -> "ns/mac" of spec.bootMACAddress (lower case) */
#define IDX_BMH_INFRAENV "bmacInfraEnv" /* BMH -> "ns/name" of its InfraEnv label (lower case) */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* Equal strings, NULL equal only to NULL. */
static bool same_str_or_null(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void lower_key(char *buf, size_t size, const char *ns, const char *v)
{
	size_t i;

	snprintf(buf, size, "%s/%s", ns, v);
	for (i = strlen(ns) + 1; buf[i]; i++)
		buf[i] = (char)tolower((unsigned char)buf[i]);
}

/* --- indexes and watches --------------------------------------------------------- */

static void agent_mac_index(const json_t *a, json_t *out)
{
	const char *ns = jstr(json_object_get(a, "metadata"), "namespace");
	json_t *iface;
	size_t i;
	char key[400];

	json_array_foreach(json_object_get(json_object_get(json_object_get(a, "status"), "inventory"), "interfaces"), i,
			   iface) {
		const char *mac = jstr(iface, "macAddress");

		if (ns && mac && *mac) {
			lower_key(key, sizeof(key), ns, mac);
			json_array_append_new(out, json_string(key));
		}
	}
}

static void bmh_mac_index(const json_t *b, json_t *out)
{
	const char *ns = jstr(json_object_get(b, "metadata"), "namespace");
	const char *mac = jstr(json_object_get(b, "spec"), "bootMACAddress");
	char key[400];

	if (ns && mac && *mac) {
		lower_key(key, sizeof(key), ns, mac);
		json_array_append_new(out, json_string(key));
	}
}

static void bmh_infraenv_index(const json_t *b, json_t *out)
{
	const json_t *meta = json_object_get(b, "metadata");
	const char *ns = jstr(meta, "namespace"), *ie = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	char key[600];

	if (ns && ie && *ie) {
		lower_key(key, sizeof(key), ns, ie);
		json_array_append_new(out, json_string(key));
	}
}

static int collect(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

static void enqueue_all(struct rt_controller *c, json_t *keys)
{
	json_t *k;
	size_t i;

	json_array_foreach(keys, i, k)
		rt_enqueue(c, json_string_value(json_array_get(k, 0)), json_string_value(json_array_get(k, 1)));
}

/* An Agent: the BMH its label names, else the BMHs whose boot MAC it has
 * (before and after this event). */
static void agent_to_bmhs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const char *bmh = jstr(json_object_get(json_object_get(ev->obj, "metadata"), "labels"), AGENT_BMH_LABEL);
	json_t *keys = json_array(), *vals = json_array(), *v;
	const json_t *old = rt_event_old_index(ev, IDX_AGENT_MAC);
	size_t i;

	if (bmh)
		rt_enqueue(c, ev->so->ns, bmh);
	if (ev->obj)
		agent_mac_index(ev->obj, vals);
	json_array_extend(vals, (json_t *)(old ? old : vals));
	json_array_foreach(vals, i, v)
		rt_cache_keys_by(h->rt, h->k_bmh->store_key, IDX_BMH_MAC, json_string_value(v), collect, keys);
	enqueue_all(c, keys);
	json_decref(keys);
	json_decref(vals);
}

/* An InfraEnv with an ISO URL: the BMHs that name it. */
static void infraenv_to_bmhs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *keys = json_array();
	char key[600];

	lower_key(key, sizeof(key), ev->so->ns, ev->so->name);
	rt_cache_keys_by(h->rt, h->k_bmh->store_key, IDX_BMH_INFRAENV, key, collect, keys);
	enqueue_all(c, keys);
	json_decref(keys);
}

/* --- the reconcile ------------------------------------------------------------- */

/* The newest Agent of ns with an interface whose MAC is mac. */
static json_t *find_agent(struct hub *h, const char *ns, const char *mac)
{
	json_t *keys = json_array(), *k, *best = NULL;
	char key[400];
	size_t i;

	if (!mac || !*mac) {
		json_decref(keys);
		return NULL;
	}
	lower_key(key, sizeof(key), ns, mac);
	rt_cache_keys_by(h->rt, h->k_agent->store_key, IDX_AGENT_MAC, key, collect, keys);
	json_array_foreach(keys, i, k) {
		json_t *a = NULL;
		ah_err err = { 0 };

		if (kube_get(h->api, h->k_agent, ns, json_string_value(json_array_get(k, 1)), &a, &err) < 0)
			continue;
		if (!best || strcmp(nz(jstr(json_object_get(a, "metadata"), "creationTimestamp")),
				    nz(jstr(json_object_get(best, "metadata"), "creationTimestamp"))) > 0) {
			json_decref(best);
			best = a;
		} else {
			json_decref(a);
		}
	}
	json_decref(keys);
	return best;
}

static const json_t *condition(const json_t *obj, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "status"), "conditions"), i, c)
		if (json_string_value(json_object_get(c, "type")) && strcmp(jstr(c, "type"), type) == 0)
			return c;
	return NULL;
}

#define CUSTOM_DEPLOY_METHOD "start_assisted_install"

/* The BMH's PreprovisioningImage (same name) is Ready with reason
 * InfraEnvAvailable: the converged flow's condition for customDeploy. */
static bool ppi_available(struct hub *h, const char *ns, const char *name)
{
	json_t *ppi = NULL;
	const json_t *c;
	ah_err err = { 0 };
	bool ok;

	if (!h->k_ppi || kube_get(h->api, h->k_ppi, ns, name, &ppi, &err) < 0)
		return false;
	c = condition(ppi, "Ready");
	ok = c && same_str_or_null(jstr(c, "status"), "True") && same_str_or_null(jstr(c, "reason"), "InfraEnvAvailable");
	json_decref(ppi);
	return ok;
}

static bool has_str(const json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* What one pass changes on the BMH: merge-patch parts. */
struct bmh_edit {
	json_t *ann, *labels, *spec;
	json_t *finalizers; /* the new list, or NULL = unchanged */
};

static void set_ann(struct bmh_edit *e, const json_t *ann, const char *k, const char *v)
{
	if (!same_str_or_null(jstr(ann, k), v))
		json_object_set_new(e->ann, k, v ? json_string(v) : json_null());
}

static int apply_edit(struct hub *h, const json_t *bmh, struct bmh_edit *e)
{
	const json_t *meta = json_object_get(bmh, "metadata");
	json_t *patch = json_object(), *m = json_object(), *ret = NULL;
	ah_err err = { 0 };
	int r = 0;

	if (json_object_size(e->ann))
		json_object_set(m, "annotations", e->ann);
	if (json_object_size(e->labels))
		json_object_set(m, "labels", e->labels);
	if (e->finalizers)
		json_object_set(m, "finalizers", e->finalizers);
	if (json_object_size(m))
		json_object_set(patch, "metadata", m);
	if (json_object_size(e->spec))
		json_object_set(patch, "spec", e->spec);
	if (json_object_size(patch)) {
		json_object_set(m, "resourceVersion", json_object_get(meta, "resourceVersion"));
		if (!json_object_get(patch, "metadata"))
			json_object_set(patch, "metadata", m);
		r = kube_patch(h->api, h->k_bmh, jstr(meta, "namespace"), jstr(meta, "name"),
			       "application/merge-patch+json", patch, NULL, &ret, &err);
		if (r == -ENOENT)
			r = 0;
		else if (r < 0 && r != -EEXIST && err.status != 409)
			log_warn("bmac: baremetalhost %s/%s: %s", jstr(meta, "namespace"), jstr(meta, "name"),
				 err.message);
	}
	json_decref(ret);
	json_decref(m);
	json_decref(patch);
	return r;
}

/* The Agent's spec and labels from the BMH (§A.6.6). */
static int reconcile_agent(struct hub *h, const json_t *bmh, const json_t *agent, const json_t *ie)
{
	static const struct {
		const char *ann, *field;
	} copy[] = {
		{ BMAC_PREFIX "role", "role" },
		{ BMAC_PREFIX "hostname", "hostname" },
		{ BMAC_PREFIX "machine-config-pool", "machineConfigPool" },
		{ BMAC_PREFIX "installer-args", "installerArgs" },
		{ BMAC_PREFIX "ignition-config-overrides", "ignitionConfigOverrides" },
	};
	const json_t *bmeta = json_object_get(bmh, "metadata"), *ann = json_object_get(bmeta, "annotations");
	const json_t *ameta = json_object_get(agent, "metadata"), *aspec = json_object_get(agent, "spec");
	const json_t *alabels = json_object_get(ameta, "labels");
	json_t *spec = json_object(), *labels = json_object(), *node_labels = json_object(), *patch, *ret = NULL, *v;
	const char *k;
	ah_err err = { 0 };
	size_t i;
	int r = 0;

	for (i = 0; i < sizeof(copy) / sizeof(copy[0]); i++) {
		const char *val = jstr(ann, copy[i].ann);

		if (val && !same_str_or_null(jstr(aspec, copy[i].field), val))
			json_object_set_new(spec, copy[i].field, json_string(val));
	}
	if (!json_is_true(json_object_get(aspec, "approved")))
		json_object_set_new(spec, "approved", json_true());
	/* cluster-reference "ns/name" binds the Agent (late binding: only
	 * for an InfraEnv without clusterRef); empty unbinds it. */
	{
		const char *ref = jstr(ann, BMAC_PREFIX "cluster-reference"), *slash;
		const json_t *cdn = json_object_get(aspec, "clusterDeploymentName");
		bool ie_bound = json_is_object(json_object_get(json_object_get(ie, "spec"), "clusterRef"));

		if (ref && *ref) {
			slash = strchr(ref, '/');
			if (ie_bound || !slash || slash == ref || !slash[1] || strchr(slash + 1, '/')) {
				log_warn("bmac: baremetalhost %s/%s: annotation %scluster-reference %s",
					 jstr(bmeta, "namespace"), jstr(bmeta, "name"), BMAC_PREFIX,
					 ie_bound ? "is not allowed: the InfraEnv has a clusterRef"
						  : "must be NAMESPACE/NAME");
				r = -EINVAL;
			} else if (!same_str_or_null(jstr(cdn, "name"), slash + 1) ||
				   strlen(nz(jstr(cdn, "namespace"))) != (size_t)(slash - ref) ||
				   strncmp(nz(jstr(cdn, "namespace")), ref, (size_t)(slash - ref)) != 0) {
				json_object_set_new(spec, "clusterDeploymentName",
						    json_pack("{s:s,s:s%}", "name", slash + 1, "namespace", ref,
							      (size_t)(slash - ref)));
			}
		} else if (ref && json_is_object(cdn) && !ie_bound) {
			json_object_set_new(spec, "clusterDeploymentName", json_null());
		}
	}
	if (!same_str_or_null(jstr(alabels, AGENT_BMH_LABEL), jstr(bmeta, "name")))
		json_object_set_new(labels, AGENT_BMH_LABEL, json_string(jstr(bmeta, "name")));
	json_object_foreach((json_t *)ann, k, v) {
		if (strncmp(k, BMAC_AGENT_LABEL_PREFIX, strlen(BMAC_AGENT_LABEL_PREFIX)) == 0 && json_is_string(v) &&
		    k[strlen(BMAC_AGENT_LABEL_PREFIX)] &&
		    !same_str_or_null(jstr(alabels, k + strlen(BMAC_AGENT_LABEL_PREFIX)), json_string_value(v)))
			json_object_set(labels, k + strlen(BMAC_AGENT_LABEL_PREFIX), v);
		if (strncmp(k, BMAC_NODE_LABEL_PREFIX, strlen(BMAC_NODE_LABEL_PREFIX)) == 0 && json_is_string(v) &&
		    k[strlen(BMAC_NODE_LABEL_PREFIX)])
			json_object_set(node_labels, k + strlen(BMAC_NODE_LABEL_PREFIX), v);
	}
	/* The node labels are replaced as a whole (absent and empty alike). */
	if (json_object_size(node_labels) || json_object_size(json_object_get(aspec, "nodeLabels")))
		if (!json_equal(node_labels, json_object_get(aspec, "nodeLabels")))
			json_object_set_new(spec, "nodeLabels", json_object_size(node_labels) ? json_incref(node_labels)
										 : json_null());
	if (r == 0 && (json_object_size(spec) || json_object_size(labels))) {
		patch = json_pack("{s:{s:O,s:O}}", "metadata", "labels", labels, "resourceVersion",
				  json_object_get(ameta, "resourceVersion"));
		if (json_object_size(spec))
			json_object_set(patch, "spec", spec);
		r = kube_patch(h->api, h->k_agent, jstr(ameta, "namespace"), jstr(ameta, "name"),
			       "application/merge-patch+json", patch, NULL, &ret, &err);
		if (r < 0 && r != -ENOENT && err.status != 409)
			log_warn("bmac: agent %s/%s: %s", jstr(ameta, "namespace"), jstr(ameta, "name"), err.message);
		if (r == -ENOENT)
			r = 0;
		json_decref(patch);
		json_decref(ret);
	}
	json_decref(spec);
	json_decref(labels);
	json_decref(node_labels);
	return r;
}

static bool installed_stage(const json_t *agent)
{
	const char *st = jstr(json_object_get(json_object_get(agent, "status"), "progress"), "currentStage");

	return st && (strcmp(st, "Failed") == 0 || strcmp(st, "Rebooting") == 0 || strcmp(st, "Joined") == 0 ||
		      strcmp(st, "Done") == 0);
}

static int reconcile_bmac(struct hub *h, const char *ns, const char *name, int64_t *ret_requeue)
{
	json_t *bmh = NULL, *agent = NULL, *ie = NULL;
	const json_t *meta, *ann, *labels, *spec, *status, *bound;
	struct bmh_edit e = { json_object(), json_object(), json_object(), NULL };
	const char *ielabel, *state, *url;
	ah_err err = { 0 };
	bool deleting, unbinding;
	int r;

	*ret_requeue = 0;
	r = kube_get(h->api, h->k_bmh, ns, name, &bmh, &err);
	if (r < 0) {
		r = r == -ENOENT ? 0 : r;
		goto out;
	}
	meta = json_object_get(bmh, "metadata");
	ann = json_object_get(meta, "annotations");
	labels = json_object_get(meta, "labels");
	spec = json_object_get(bmh, "spec");
	status = json_object_get(bmh, "status");
	state = jstr(json_object_get(status, "provisioning"), "state");
	if (!state)
		state = "";
	deleting = json_object_get(meta, "deletionTimestamp") != NULL;
	ielabel = jstr(labels, LABEL_INFRAENV);

	/* 4. The finalizer: only on labelled BMHs; on delete the BMH is
	 * handed back to the BMH controller (unpaused) and let go. */
	if (!ielabel || deleting) {
		if (has_str(json_object_get(meta, "finalizers"), BMAC_FINALIZER)) {
			json_t *f;
			size_t i;

			e.finalizers = json_array();
			json_array_foreach(json_object_get(meta, "finalizers"), i, f)
				if (!same_str_or_null(json_string_value(f), BMAC_FINALIZER))
					json_array_append(e.finalizers, f);
			if (deleting)
				set_ann(&e, ann, BMH_ANN_PAUSED, NULL);
		}
		r = apply_edit(h, bmh, &e);
		goto out;
	}
	agent = find_agent(h, ns, jstr(spec, "bootMACAddress"));
	if (kube_get(h->api, h->k_infraenv, ns, ielabel, &ie, &err) < 0)
		ie = NULL;
	if (ie && !same_str_or_null(jstr(labels, BACKUP_LABEL), "true"))
		json_object_set_new(e.labels, BACKUP_LABEL, json_string("true"));
	if (!has_str(json_object_get(meta, "finalizers"), BMAC_FINALIZER)) {
		e.finalizers = json_is_array(json_object_get(meta, "finalizers"))
				       ? json_deep_copy(json_object_get(meta, "finalizers")) : json_array();
		json_array_append_new(e.finalizers, json_string(BMAC_FINALIZER));
	}

	/* 5. Unbind: the host goes back to discovery (live ISO: the image
	 * is taken away, so the BMH deprovisions, then gets it again). */
	bound = condition(agent, "Bound");
	unbinding = bound && same_str_or_null(jstr(bound, "reason"), "UnbindingPendingUserAction");
	if (unbinding && h->cfg.converged_flow) {
		/* Converged (§A.6.2): a provisioned host loses its customDeploy
		 * (the hub deprovisions it; 7 sets it again once available). */
		if (json_object_get(ann, BMH_ANN_DETACHED)) {
			set_ann(&e, ann, BMH_ANN_DETACHED, NULL);
			set_ann(&e, ann, BMH_ANN_PAUSED, NULL);
			set_ann(&e, ann, ANN_BMH_STATUS, NULL);
		}
		set_ann(&e, ann, BMH_ANN_HWDETAILS, NULL);
		set_ann(&e, ann, ANN_SPOKE_CREATED, NULL);
		if (!strcmp(state, "provisioned") || !strcmp(state, "deprovisioning")) {
			if (!strcmp(state, "provisioned") && json_object_get(spec, "customDeploy") &&
			    !json_is_null(json_object_get(spec, "customDeploy")))
				json_object_set_new(e.spec, "customDeploy", json_null());
			r = apply_edit(h, bmh, &e);
			goto out;
		}
	} else if (unbinding && json_object_get(ann, BMH_ANN_DETACHED)) {
		/* Once: with the detached annotation gone the next passes go
		 * on (and put the image back when the host is available). */
		set_ann(&e, ann, BMH_ANN_DETACHED, NULL);
		set_ann(&e, ann, BMH_ANN_PAUSED, NULL);
		set_ann(&e, ann, ANN_BMH_STATUS, NULL);
		set_ann(&e, ann, BMH_ANN_HWDETAILS, NULL);
		set_ann(&e, ann, ANN_SPOKE_CREATED, NULL);
		json_object_set_new(e.spec, "image", json_null());
		r = apply_edit(h, bmh, &e);
		goto out;
	}

	/* 6. Detach (and pause) once the host installed; not while it waits
	 * to be rebooted into discovery. */
	if (!unbinding && (h->cfg.converged_flow ? !strcmp(state, "provisioned") : agent && installed_stage(agent))) {
		set_ann(&e, ann, BMH_ANN_DETACHED, json_object_get(ann, BMH_ANN_DETACHED) ? jstr(ann, BMH_ANN_DETACHED)
											: DETACHED_VALUE);
		if (same_str_or_null(jstr(status, "operationalStatus"), "detached") &&
		    !json_object_get(ann, BMH_ANN_PAUSED)) {
			char *st = json_dumps(status, JSON_COMPACT);

			set_ann(&e, ann, ANN_BMH_STATUS, st);
			set_ann(&e, ann, BMH_ANN_PAUSED, DETACHED_VALUE);
			free(st);
		}
	}

	/* 7. The live ISO on the host (§A.6.4). */
	if (!ie) {
		r = apply_edit(h, bmh, &e);
		goto out;
	}
	if (h->cfg.converged_flow && !json_object_get(ann, BMH_ANN_DETACHED)) {
		/* Converged (§A.6.5): the ironic agent in the PreprovisioningImage
		 * starts the assisted agent as the deploy step; image, inspection
		 * and cleaning are left as they are. */
		if (!same_str_or_null(jstr(json_object_get(spec, "customDeploy"), "method"), CUSTOM_DEPLOY_METHOD)) {
			if (ppi_available(h, ns, name))
				json_object_set_new(e.spec, "customDeploy",
						    json_pack("{s:s}", "method", CUSTOM_DEPLOY_METHOD));
			r = apply_edit(h, bmh, &e);
			goto out;
		}
	} else if (!json_object_get(ann, BMH_ANN_DETACHED)) {
		const char *created = jstr(json_object_get(ie, "status"), "createdTime");
		time_t ct;

		url = jstr(json_object_get(ie, "status"), "isoDownloadURL");
		if (!json_object_get(ann, BMH_ANN_INSPECT))
			set_ann(&e, ann, BMH_ANN_INSPECT, "disabled");
		if (!same_str_or_null(jstr(spec, "automatedCleaningMode"), "disabled"))
			json_object_set_new(e.spec, "automatedCleaningMode", json_string("disabled"));
		if (!url || !*url) {
			r = apply_edit(h, bmh, &e);
			goto out;
		}
		if (!same_str_or_null(jstr(json_object_get(spec, "image"), "url"), url)) {
			/* A new image is put on a host only once it settled. */
			if (created && util_parse_rfc3339(created, &ct) == 0 &&
			    ct + h->cfg.image_cooldown_s > time(NULL)) {
				*ret_requeue = ((int64_t)(ct + h->cfg.image_cooldown_s - time(NULL))) * 1000 + 100;
				r = apply_edit(h, bmh, &e);
				goto out;
			}
			if (strcmp(state, BMH_ST_READY) != 0 && strcmp(state, BMH_ST_AVAILABLE) != 0) {
				if (json_object_get(spec, "image") && !json_is_null(json_object_get(spec, "image")))
					json_object_set_new(e.spec, "image", json_null());
			} else {
				json_object_set_new(e.spec, "image", json_pack("{s:s,s:s}", "url", url, "format", "live-iso"));
				if (!json_is_true(json_object_get(spec, "online")))
					json_object_set_new(e.spec, "online", json_true());
			}
			r = apply_edit(h, bmh, &e);
			goto out;
		}
	}
	if (!agent) {
		r = apply_edit(h, bmh, &e);
		goto out;
	}

	/* 9. The Agent's spec; 10. the hardware details. */
	r = reconcile_agent(h, bmh, agent, ie);
	if (r == 0 && !h->cfg.converged_flow && json_array_size(json_object_get(json_object_get(json_object_get(agent, "status"), "inventory"),
						      "interfaces")) > 0 &&
	    !json_object_get(ann, BMH_ANN_HWDETAILS) &&
	    !*nz(jstr(json_object_get(status, "hardware"), "hostname"))) {
		char *hw = NULL;

		/* The Agent's spec as this pass left it: the annotation's
		 * hostname when there is one. */
		const char *hn = jstr(ann, BMAC_PREFIX "hostname");

		if (!hn)
			hn = jstr(json_object_get(agent, "spec"), "hostname");
		if (bmh_hardware_details(json_object_get(json_object_get(agent, "status"), "inventory"), hn, &hw) == 0) {
			set_ann(&e, ann, BMH_ANN_HWDETAILS, hw);
			free(hw);
		}
	}
	if (r == 0)
		r = apply_edit(h, bmh, &e);
out:
	json_decref(e.ann);
	json_decref(e.labels);
	json_decref(e.spec);
	json_decref(e.finalizers);
	json_decref(agent);
	json_decref(ie);
	json_decref(bmh);
	return r;
}

/* --- registration ------------------------------------------------------------ */

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	int64_t after = 0;
	int r = reconcile_bmac(ctx, key->ns, key->name, &after);

	if (r < 0)
		return rt_error(r);
	return after > 0 ? rt_requeue_after(after) : rt_done();
}

int hub_bmac_register(struct hub *h)
{
	int r;

	if (!h->k_bmh)
		return 0;
	{
		struct rt_controller_def d = {
			.name = "BMAC",
			.reconcile = reconcile,
			.ctx = h,
			.watches = {
				{ .resource = h->k_bmh->store_key, .map = RT_MAP_SELF },
				{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_bmhs },
				{ .resource = h->k_infraenv->store_key, .map = RT_MAP_FN, .fn = infraenv_to_bmhs },
			},
		};

		/* The PreprovisioningImage gates customDeploy: its BMH has its name. */
		if (h->cfg.converged_flow && h->k_ppi)
			d.watches[3] = (struct rt_watch){ .resource = h->k_ppi->store_key, .map = RT_MAP_SELF };

		r = rt_register(h->rt, &d, &h->c_bmac);
	}
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, IDX_AGENT_MAC, agent_mac_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_bmh->store_key, IDX_BMH_MAC, bmh_mac_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_bmh->store_key, IDX_BMH_INFRAENV, bmh_infraenv_index);
	return r;
}
