/* manifests.c - the manifests ConfigMaps of an AgentClusterInstall
 * (spec.manifestsConfigMapRefs, or the deprecated manifestsConfigMapRef) as
 * the cluster's custom manifests.
 *
 * Upstream uploads the ConfigMaps' manifests to the cluster, and the
 * cluster validation custom-manifests-requirements-satisfied (third-party
 * network types) passes once a manifest is there.  Here the ConfigMaps are
 * read where the cluster is built: they count as uploaded while every
 * referenced ConfigMap exists and together they hold at least one key.  A
 * ConfigMap created, changed or deleted queues the ClusterDeployments whose
 * ACIs name it (an index on ACIs, "ns/name" of each ConfigMap), so deleting
 * one makes the validation fail and recreating it makes it pass again. */
#include <stdio.h>
#include <string.h>

#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/registry.h"

#define IDX_ACI_MANIFESTS "manifestsConfigMap"

static const char *mstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The names of the ConfigMaps aci references (a new array): the list beats
 * the single reference, as upstream reads them. */
static json_t *manifest_names(const json_t *aci)
{
	const json_t *spec = json_object_get(aci, "spec"), *refs = json_object_get(spec, "manifestsConfigMapRefs"), *r;
	json_t *names = json_array();
	size_t i;

	if (json_array_size(refs)) {
		json_array_foreach(refs, i, r)
			if (mstr(r, "name") && *mstr(r, "name"))
				json_array_append_new(names, json_string(mstr(r, "name")));
	} else if (mstr(json_object_get(spec, "manifestsConfigMapRef"), "name") &&
		   *mstr(json_object_get(spec, "manifestsConfigMapRef"), "name")) {
		json_array_append_new(names, json_string(mstr(json_object_get(spec, "manifestsConfigMapRef"), "name")));
	}
	return names;
}

bool hub_manifests_present(struct hub *h, const json_t *aci)
{
	const struct kube_kind *k_cm = kube_registry_by_kind(h->reg, "v1", "ConfigMap");
	const char *ns = mstr(json_object_get(aci, "metadata"), "namespace");
	json_t *names = manifest_names(aci), *n;
	size_t i, keys = 0;
	bool all = k_cm != NULL && ns != NULL;

	json_array_foreach(names, i, n) {
		json_t *cm = NULL;
		ah_err err;

		if (!all || kube_get(h->api, k_cm, ns, json_string_value(n), &cm, &err) < 0) {
			all = false;
			break;
		}
		keys += json_object_size(json_object_get(cm, "data")) + json_object_size(json_object_get(cm, "binaryData"));
		json_decref(cm);
	}
	json_decref(names);
	return all && keys > 0;
}

static void aci_manifests_index(const json_t *aci, json_t *out)
{
	const char *ns = mstr(json_object_get(aci, "metadata"), "namespace");
	json_t *names = manifest_names(aci), *n;
	char key[520];
	size_t i;

	json_array_foreach(names, i, n) {
		snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", json_string_value(n));
		json_array_append_new(out, json_string(key));
	}
	json_decref(names);
}

static void configmap_to_cds(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *acis, *p;
	char key[520];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	acis = rt_cache_list_by(h->rt, h->k_aci->store_key, IDX_ACI_MANIFESTS, key);
	json_array_foreach(acis, i, p) {
		json_t *aci = rt_cache_get(h->rt, h->k_aci->store_key, json_string_value(json_array_get(p, 0)),
					   json_string_value(json_array_get(p, 1)));
		const char *cd = mstr(json_object_get(json_object_get(aci, "spec"), "clusterDeploymentRef"), "name");

		if (cd)
			rt_enqueue(c, json_string_value(json_array_get(p, 0)), cd);
		json_decref(aci);
	}
	json_decref(acis);
}

int hub_manifests_register(struct hub *h)
{
	struct rt_watch w = { .resource = "configmaps", .map = RT_MAP_FN, .fn = configmap_to_cds };
	int r;

	if (!h->c_cd || !h->k_aci)
		return 0;
	r = rt_cache_index(h->rt, h->k_aci->store_key, IDX_ACI_MANIFESTS, aci_manifests_index);
	if (r == 0)
		r = rt_watch_add(h->c_cd, &w);
	return r;
}
