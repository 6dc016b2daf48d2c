/* capoa-controlplane.c - the CAPOA control-plane provider (bmac-capi.md
 * §C.7-§C.10): three controllers talking through objects only.
 *
 *  - OpenshiftAssistedControlPlane (OACP): the finalizer, the version floor,
 *    the owner Cluster and its endpoint, the placeholder pull secret, the
 *    ClusterDeployment <oacp>, the release image and Kubernetes version, the
 *    control-plane Machines (one scale action per pass), the status.
 *  - CAPOAClusterDeployment: for a CD labelled cluster.x-k8s.io/cluster-name
 *    with an OACP of its name, the ClusterImageSet <cd>, the registry
 *    ConfigMap, the AgentClusterInstall <cd> and the CD's clusterInstallRef.
 *  - CAPOAAgentClusterInstall: for an ACI of an OACP, the kubeconfig Secret
 *    <cluster>-kubeconfig and the conditions KubeconfigAvailable/Available.
 *
 * Where upstream reads the release image (the Kubernetes version, a digest
 * for the ClusterImageSet) this hub cannot pull images: the Kubernetes
 * version comes from the OpenShift minor (assisted/capoa.h) when the hub
 * knows a release of that minor (an OS image of it, --os-images), and the
 * ClusterImageSet keeps the tag.  The workload cluster does not exist, so an
 * upgrade (§C.9) is not done: only the installed version is reported. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/capoa.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "kube/api.h"
#include "kube/registry.h"

#define FINALIZER_OACP "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/deprovision"
#define LBL_CLUSTER "cluster.x-k8s.io/cluster-name"
#define LBL_CP "cluster.x-k8s.io/control-plane"
#define LBL_CP_NAME "cluster.x-k8s.io/control-plane-name"
#define LBL_ACI_CONSUMER "agentclusterinstalls.agent-install.openshift.io/consumer"
#define ANN_PAUSED "cluster.x-k8s.io/paused"
#define ANN_RELEASE_OVERRIDE "cluster.x-k8s.io/release-image-repository-override"
#define ANN_IC_OVERRIDE "controlplane.cluster.x-k8s.io/install-config-override"
#define ANN_ACI_IC_OVERRIDES "agent-install.openshift.io/install-config-overrides"
#define ANN_CONVERSION "cluster.x-k8s.io/conversion-data"
#define ANN_CLONED_NAME "cluster.x-k8s.io/cloned-from-name"
#define ANN_CLONED_GK "cluster.x-k8s.io/cloned-from-groupkind"
#define ANN_BMAC_ROLE "bmac.agent-install.openshift.io/role"
#define PLACEHOLDER_PS "placeholder-pull-secret"
#define PLACEHOLDER_PS_JSON "{\"auths\":{\"fake-pull-secret\":{\"auth\":\"cGxhY2Vob2xkZXI6c2VjcmV0Cg==\"}}}"
#define REGISTRY_CM "additional-registry-config"
#define OACP_KIND "OpenshiftAssistedControlPlane"
#define OACP_APIVERSION "controlplane.cluster.x-k8s.io/v1alpha3"

#define IDX_OACP_CLUSTER "capoa-oacp-cluster"   /* OACP -> "ns/<cluster-name label>" */
#define IDX_OAC_CLUSTER "capoa-oac-cluster"     /* OAC -> "ns/<cluster-name label>" */
#define IDX_MD_CLUSTER "capoa-md-cluster"       /* MachineDeployment -> "ns/<cluster-name label>" */
#define IDX_MACHINE_CP "capoa-machine-cp"       /* CP Machine -> "ns/<control-plane-name label>" */

static const char *js(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool nonempty(const char *s)
{
	return s && *s;
}

static const char *meta(const json_t *o, const char *k)
{
	return js(json_object_get(o, "metadata"), k);
}

static const char *label(const json_t *o, const char *k)
{
	return js(json_object_get(json_object_get(o, "metadata"), "labels"), k);
}

static const char *annotation(const json_t *o, const char *k)
{
	return js(json_object_get(json_object_get(o, "metadata"), "annotations"), k);
}

/* A dotted path of object keys. */
static json_t *jget(const json_t *o, const char *path)
{
	char buf[256], *p, *save = NULL;
	json_t *cur = (json_t *)o;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = strtok_r(buf, ".", &save); p && cur; p = strtok_r(NULL, ".", &save))
		cur = json_object_get(cur, p);
	return cur;
}

/* A new reference: a deep copy of v when it is an object, else {}. */
static json_t *copy_obj(const json_t *v)
{
	return json_is_object(v) ? json_deep_copy(v) : json_object();
}

struct kinds {
	const struct kube_kind *oacp, *oac, *cluster, *machine, *md, *cm;
};

static bool get_kinds(struct hub *h, struct kinds *k)
{
	k->oacp = kube_registry_by_kind(h->reg, OACP_APIVERSION, OACP_KIND);
	k->oac = kube_registry_by_kind(h->reg, "bootstrap.cluster.x-k8s.io/v1alpha2", "OpenshiftAssistedConfig");
	k->cluster = kube_registry_by_kind(h->reg, "cluster.x-k8s.io/v1beta2", "Cluster");
	k->machine = kube_registry_by_kind(h->reg, "cluster.x-k8s.io/v1beta2", "Machine");
	k->md = kube_registry_by_kind(h->reg, "cluster.x-k8s.io/v1beta2", "MachineDeployment");
	k->cm = kube_registry_by_kind(h->reg, "v1", "ConfigMap");
	return k->oacp && k->oac && k->cluster && k->machine && k->md && k->cm && h->k_cd && h->k_aci &&
	       h->k_imageset && h->k_secret;
}

static int patch(struct hub *h, const struct kube_kind *k, const char *ns, const char *name, const json_t *p,
		 bool status, json_t **ret)
{
	struct kube_opts o = { .status = status };
	json_t *out = NULL;
	ah_err err;
	int r = kube_patch(h->api, k, ns, name, "application/merge-patch+json", p, &o, &out, &err);

	if (r < 0 && r != -ENOENT && r != -EEXIST)
		log_warn("%s %s/%s: %s patch: %s", k->kind, ns, name, status ? "status" : "object", err.message);
	if (ret)
		*ret = out;
	else
		json_decref(out);
	return r;
}

static int create(struct hub *h, const struct kube_kind *k, const char *ns, json_t *body, ah_err *err)
{
	json_t *out = NULL;
	int r = kube_create(h->api, k, ns, body, NULL, &out, err);

	json_decref(out);
	/* The next pass must see what was written (one scale action per pass). */
	if (r == 0)
		rt_wait_synced(h->rt, 0, 5000);
	return r;
}

/* A controller reference (controller and blockOwnerDeletion true), or a
 * plain owner reference (neither field), as controller-runtime's
 * SetControllerReference / SetOwnerReference write them. */
static json_t *owner_ref(const json_t *obj, const char *api_version, const char *kind, bool controller)
{
	json_t *r = json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", api_version, "kind", kind, "name", meta(obj, "name"),
			      "uid", meta(obj, "uid") ? meta(obj, "uid") : "");

	if (r && controller) {
		json_object_set_new(r, "controller", json_true());
		json_object_set_new(r, "blockOwnerDeletion", json_true());
	}
	return r;
}

/* The control-plane-name label value: the name, or a hash of it past 63
 * characters (CAPI's format: "hash_<base64url(fnv32a)>_z"). */
static void cp_name_value(const char *name, char *buf, size_t size)
{
	uint32_t hsh = 2166136261u;
	unsigned char b[4];
	char *enc;
	const char *p;

	if (strlen(name) <= 63) {
		snprintf(buf, size, "%s", name);
		return;
	}
	for (p = name; *p; p++)
		hsh = (hsh ^ (unsigned char)*p) * 16777619u;
	b[0] = hsh >> 24, b[1] = hsh >> 16, b[2] = hsh >> 8, b[3] = hsh;
	enc = util_base64_encode(b, 4);
	for (char *q = enc; q && *q; q++)
		*q = *q == '+' ? '-' : *q == '/' ? '_' : *q;
	if (enc && strchr(enc, '='))
		*strchr(enc, '=') = '\0';
	snprintf(buf, size, "hash_%s_z", enc ? enc : "");
	free(enc);
}

/* CP labels: the template labels plus the forced three. */
static json_t *cp_labels_for(const json_t *oacp, const char *cluster)
{
	const json_t *tl = jget(oacp, "spec.machineTemplate.metadata.labels");
	json_t *l = json_is_object(tl) ? json_deep_copy(tl) : json_object();
	char v[80];

	cp_name_value(meta(oacp, "name"), v, sizeof(v));
	json_object_set_new(l, LBL_CLUSTER, json_string(cluster ? cluster : ""));
	json_object_set_new(l, LBL_CP, json_string(""));
	json_object_set_new(l, LBL_CP_NAME, json_string(v));
	return l;
}

/* With the cluster-name label the Cluster controller set on the OACP. */
static json_t *cp_labels(const json_t *oacp)
{
	return cp_labels_for(oacp, label(oacp, LBL_CLUSTER));
}

/* The name of the OACP's owner Cluster, or NULL. */
static const char *owner_cluster(const json_t *oacp)
{
	const json_t *p;
	const char *name = NULL;
	size_t i;

	json_array_foreach(jget(oacp, "metadata.ownerReferences"), i, p)
		if (!strcmp(js(p, "kind") ? js(p, "kind") : "", "Cluster") &&
		    !strncmp(js(p, "apiVersion") ? js(p, "apiVersion") : "", "cluster.x-k8s.io/", 17))
			name = js(p, "name");
	return name;
}

/* ---- conditions (v1beta2 metav1.Condition) ---- */

static void set_cond(json_t *conds, const char *type, bool ok, const char *reason, const char *msg, int64_t gen)
{
	const char *status = ok ? "True" : "False";
	json_t *c = NULL, *e, *n;
	size_t i, at = 0;
	char now[40];

	if (ok)
		reason = type;
	json_array_foreach(conds, i, e)
		if (!c && !strcmp(js(e, "type") ? js(e, "type") : "", type)) {
			c = e;
			at = i;
		}
	if (c && !strcmp(js(c, "status") ? js(c, "status") : "", status) &&
	    !strcmp(js(c, "reason") ? js(c, "reason") : "", reason) &&
	    !strcmp(js(c, "message") ? js(c, "message") : "", msg ? msg : ""))
		return;
	if (c && !strcmp(js(c, "status") ? js(c, "status") : "", status) && js(c, "lastTransitionTime"))
		snprintf(now, sizeof(now), "%s", js(c, "lastTransitionTime"));
	else
		util_now_rfc3339(now, sizeof(now));
	n = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "type", type, "status", status, "reason", reason, "message",
		      msg ? msg : "", "lastTransitionTime", now, "observedGeneration", (json_int_t)gen);
	if (c)
		json_array_set_new(conds, at, n);
	else
		json_array_append_new(conds, n);
}

static const json_t *find_cond(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (!strcmp(js(c, "type") ? js(c, "type") : "", type))
			return c;
	return NULL;
}

static bool cond_true(const json_t *conds, const char *type)
{
	const json_t *c = find_cond(conds, type);

	return c && !strcmp(js(c, "status") ? js(c, "status") : "", "True");
}

/* Ready: the summary of MachinesReady, KubeconfigAvailable, Available,
 * MachinesCreated (the first one not True gives reason and message). */
static void set_ready(json_t *conds, int64_t gen)
{
	static const char *const parts[] = { "MachinesReady", "KubeconfigAvailable", "Available", "MachinesCreated" };
	size_t i;

	for (i = 0; i < 4; i++) {
		const json_t *c = find_cond(conds, parts[i]);

		if (!c) {
			char msg[96];

			snprintf(msg, sizeof(msg), "Condition %s not yet reported", parts[i]);
			set_cond(conds, "Ready", false, "NotReady", msg, gen);
			return;
		}
		if (!cond_true(conds, parts[i])) {
			set_cond(conds, "Ready", false, js(c, "reason") ? js(c, "reason") : "NotReady", js(c, "message"),
				 gen);
			return;
		}
	}
	set_cond(conds, "Ready", true, NULL, NULL, gen);
}

/* Write status when it differs from the object's, with the object's
 * resourceVersion as a precondition (a concurrent write is retried). */
static int write_status(struct hub *h, const struct kube_kind *k, const json_t *obj, json_t *status)
{
	json_t *p;
	int r;

	if (json_equal(json_object_get(obj, "status"), status))
		return 0;
	p = json_pack("{s:{s:s},s:O}", "metadata", "resourceVersion", meta(obj, "resourceVersion"), "status", status);
	r = patch(h, k, meta(obj, "namespace"), meta(obj, "name"), p, true, NULL);
	json_decref(p);
	return r == -ENOENT ? 0 : r;
}

/* ---- release image and architecture (§C.7 step 8) ---- */

struct collect {
	json_t *pairs;
};

static int collect_key(const char *ns, const char *name, void *ud)
{
	json_array_append_new(((struct collect *)ud)->pairs, json_pack("[s,s]", ns, name));
	return 0;
}

static json_t *keys_by(struct hub *h, const char *resource, const char *index, const char *ns, const char *val)
{
	struct collect c = { json_array() };
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ns, val);
	rt_cache_keys_by(h->rt, resource, index, key, collect_key, &c);
	return c.pairs;
}

/* The common cpuArchitecture of the cluster's OACs, else "multi". */
static void cluster_arch(struct hub *h, const struct kinds *k, const char *ns, const char *cluster, char *buf,
			 size_t size)
{
	json_t *pairs = nonempty(cluster) ? keys_by(h, k->oac->store_key, IDX_OAC_CLUSTER, ns, cluster) : json_array(),
	       *p;
	size_t i;

	buf[0] = '\0';
	json_array_foreach(pairs, i, p) {
		json_t *oac = rt_cache_get(h->rt, k->oac->store_key, ns, json_string_value(json_array_get(p, 1)));
		const char *a = js(jget(oac, "spec"), "cpuArchitecture");

		if (!nonempty(a))
			a = "x86_64";
		if (!buf[0])
			snprintf(buf, size, "%s", a);
		else if (strcmp(buf, a))
			snprintf(buf, size, "multi");
		json_decref(oac);
	}
	json_decref(pairs);
	if (!buf[0])
		snprintf(buf, size, "multi");
}

static char *release_image(struct hub *h, const struct kinds *k, const json_t *oacp)
{
	char arch[32];

	cluster_arch(h, k, meta(oacp, "namespace"), label(oacp, LBL_CLUSTER), arch, sizeof(arch));
	return capoa_release_image(js(jget(oacp, "spec"), "distributionVersion"), arch,
				   annotation(oacp, ANN_RELEASE_OVERRIDE));
}

/* Step 9: the Kubernetes version of the release, when the hub knows a
 * release of that OpenShift minor.  NULL with why filled otherwise. */
static const char *kube_version(struct hub *h, const char *ver, const char *image, char *why, size_t size)
{
	struct capoa_version v, o;
	const char *kube;
	size_t i;

	if (capoa_parse_version(ver, &v) < 0) {
		snprintf(why, size, "distributionVersion %s is not a version: no release image %s", ver ? ver : "",
			 image);
		return NULL;
	}
	for (i = 0; i < hub_os_images_count(h); i++) {
		const struct os_image *os = hub_os_image_at(h, i);

		if (capoa_parse_version(os->openshift_version, &o) == 0 && o.major == v.major && o.minor == v.minor)
			break;
	}
	kube = capoa_kube_version(v.major, v.minor);
	if (i == hub_os_images_count(h) || !kube) {
		snprintf(why, size, "image not found: %s: no release of OpenShift %ld.%ld is known to this hub", image,
			 v.major, v.minor);
		return NULL;
	}
	return kube;
}

/* ---- the OACP controller ---- */

static void random_suffix(char *buf)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char b[5];
	int i;

	if (util_random_bytes(b, sizeof(b)) < 0)
		memset(b, 0, sizeof(b));
	for (i = 0; i < 5; i++)
		buf[i] = alphabet[b[i] % (sizeof(alphabet) - 1)];
	buf[5] = '\0';
}

static const struct kube_kind *kind_in_group(struct hub *h, const char *group, const char *kind)
{
	static const char *const versions[] = { "v1beta2", "v1beta1", "v1alpha3", "v1alpha2", "v1alpha1", "v1" };
	char av[200];
	size_t i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		const struct kube_kind *k;

		snprintf(av, sizeof(av), "%s/%s", group, versions[i]);
		if ((k = kube_registry_by_kind(h->reg, av, kind)))
			return k;
	}
	return NULL;
}

static void merge_into(json_t *dst, const json_t *src)
{
	if (json_is_object(src))
		json_object_update(dst, (json_t *)src);
}

/* Scale up by one: the infrastructure clone, the OAC and the Machine, all
 * named <oacp>-<5 random>; on a failure the siblings already created are
 * deleted.  0, or a negative errno with *reason and msg filled. */
static int scale_up(struct hub *h, const struct kinds *k, const json_t *oacp, const char **reason, char *msg,
		    size_t size)
{
	const char *ns = meta(oacp, "namespace"), *cluster = label(oacp, LBL_CLUSTER);
	const json_t *mt = jget(oacp, "spec.machineTemplate"), *iref = json_object_get(mt, "infrastructureRef");
	const char *group = js(iref, "apiGroup"), *tkind = js(iref, "kind"), *tname = js(iref, "name");
	const struct kube_kind *kt = NULL, *ki = NULL;
	json_t *tmpl = NULL, *labels = cp_labels(oacp), *l, *a, *infra, *oac, *machine, *deletion;
	char name[300], ikind[128], gk[300], suffix[6];
	int r, created = 0;
	ah_err err;
	struct kube_opts dopts = { 0 };

	random_suffix(suffix);
	snprintf(name, sizeof(name), "%s-%s", meta(oacp, "name"), suffix);
	if (!nonempty(group) || !nonempty(tkind) || !nonempty(tname)) {
		*reason = "InfrastructureTemplateCloningFailed";
		snprintf(msg, size, "spec.machineTemplate.infrastructureRef: apiGroup, kind and name are required");
		json_decref(labels);
		return -EINVAL;
	}
	snprintf(ikind, sizeof(ikind), "%s", tkind);
	if (strlen(ikind) > 8 && !strcmp(ikind + strlen(ikind) - 8, "Template"))
		ikind[strlen(ikind) - 8] = '\0';
	kt = kind_in_group(h, group, tkind);
	if (kt) {
		char av[200];

		snprintf(av, sizeof(av), "%s/%s", kt->group, kt->version);
		ki = kube_registry_by_kind(h->reg, av, ikind);
	}
	if (!kt || !ki || kube_get(h->api, kt, ns, tname, &tmpl, &err) < 0) {
		*reason = "InfrastructureTemplateCloningFailed";
		snprintf(msg, size, "error fetching infrastructure template: failed to retrieve %.60s %.60s/%.100s: %.200s",
			 tkind, ns, tname,
			 !kt || !ki ? "the kind is not served" : err.message);
		json_decref(labels);
		return -ENOENT;
	}

	/* The infrastructure machine (CAPI's GenerateTemplate). */
	l = copy_obj(jget(tmpl, "spec.template.metadata.labels"));
	merge_into(l, labels);
	a = json_object();
	merge_into(a, jget(tmpl, "spec.template.metadata.annotations"));
	merge_into(a, jget(mt, "metadata.annotations"));
	snprintf(gk, sizeof(gk), "%s.%s", tkind, group);
	json_object_set_new(a, ANN_CLONED_NAME, json_string(tname));
	json_object_set_new(a, ANN_CLONED_GK, json_string(gk));
	infra = json_pack("{s:s+++,s:s,s:{s:s,s:s,s:o,s:o,s:[o]},s:o}", "apiVersion", kt->group, "/", kt->version, "",
			  "kind", ikind, "metadata", "name", name, "namespace", ns, "labels", l, "annotations", a,
			  "ownerReferences", owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "spec",
			  copy_obj(jget(tmpl, "spec.template.spec")));
	json_decref(tmpl);
	if (!infra) {
		json_decref(labels);
		return -ENOMEM;
	}
	r = create(h, ki, ns, infra, &err);
	json_decref(infra);
	if (r < 0) {
		*reason = "InfrastructureTemplateCloningFailed";
		snprintf(msg, size, "error creating infrastructure clone: %.400s", err.message);
		json_decref(labels);
		return r;
	}
	created = 1;

	/* The OpenshiftAssistedConfig. */
	l = json_object();
	merge_into(l, jget(oacp, "metadata.labels"));
	merge_into(l, labels);
	a = json_object();
	merge_into(a, jget(oacp, "metadata.annotations"));
	json_object_del(a, ANN_CONVERSION);
	merge_into(a, jget(mt, "metadata.annotations"));
	oac = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:o,s:[o]},s:o}", "apiVersion", "bootstrap.cluster.x-k8s.io/v1alpha2",
			"kind", "OpenshiftAssistedConfig", "metadata", "name", name, "namespace", ns, "labels", l,
			"annotations", a, "ownerReferences", owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "spec",
			copy_obj(jget(oacp, "spec.openshiftAssistedConfigSpec")));
	r = oac ? create(h, k->oac, ns, oac, &err) : -ENOMEM;
	json_decref(oac);
	if (r < 0) {
		*reason = "BootstrapTemplateCloningFailed";
		snprintf(msg, size, "error creating bootstrap config: %.400s", r == -ENOMEM ? "out of memory" : err.message);
		goto undo;
	}
	created = 2;

	/* The Machine. */
	a = json_object();
	merge_into(a, jget(mt, "metadata.annotations"));
	json_object_set_new(a, ANN_BMAC_ROLE, json_string("master"));
	deletion = json_is_object(json_object_get(mt, "deletion")) ? json_deep_copy(json_object_get(mt, "deletion"))
								    : json_pack("{s:i}", "nodeDeletionTimeoutSeconds", 10);
	machine = json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:o,s:[o]},s:{s:s,s:{s:{s:s,s:s,s:s}},s:{s:s,s:s,s:s},s:o}}",
			    "apiVersion", "cluster.x-k8s.io/v1beta2", "kind", "Machine", "metadata", "name", name,
			    "namespace", ns, "labels", labels, "annotations", a, "ownerReferences",
			    owner_ref(oacp, OACP_APIVERSION, OACP_KIND, true), "spec", "clusterName",
			    cluster ? cluster : "", "bootstrap", "configRef", "apiGroup", "bootstrap.cluster.x-k8s.io",
			    "kind", "OpenshiftAssistedConfig", "name", name, "infrastructureRef", "apiGroup", group,
			    "kind", ikind, "name", name, "deletion", deletion);
	r = machine ? create(h, k->machine, ns, machine, &err) : -ENOMEM;
	json_decref(machine);
	if (r < 0) {
		*reason = "MachineGenerationFailed";
		snprintf(msg, size, "error creating machine %.400s", r == -ENOMEM ? "out of memory" : err.message);
		goto undo;
	}
	json_decref(labels);
	return 0;
undo:
	json_decref(labels);
	if (created >= 2) {
		json_t *o = NULL;

		kube_delete(h->api, k->oac, ns, name, &dopts, &o, &err);
		json_decref(o);
	}
	if (created >= 1) {
		json_t *o = NULL;

		kube_delete(h->api, ki, ns, name, &dopts, &o, &err);
		json_decref(o);
	}
	return r;
}

static int64_t spec_int(const json_t *o, const char *path, int64_t dflt)
{
	const json_t *v = jget(o, path);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Is the Machine up to date: the deletion of the template, and an OAC whose
 * spec is the template's (the object found by the configRef). */
static bool machine_up_to_date(struct hub *h, const struct kinds *k, const json_t *oacp, const json_t *m)
{
	const json_t *mt = jget(oacp, "spec.machineTemplate");
	json_t *want = json_is_object(json_object_get(mt, "deletion")) ? json_incref(json_object_get(mt, "deletion"))
								       : json_pack("{s:i}", "nodeDeletionTimeoutSeconds", 10);
	json_t *oac = NULL, *have = copy_obj(jget(m, "spec.deletion"));
	bool ok = json_equal(want, have);
	ah_err err;

	json_decref(want);
	json_decref(have);
	if (ok && nonempty(js(jget(m, "spec.bootstrap.configRef"), "name")) &&
	    kube_get(h->api, k->oac, meta(m, "namespace"), js(jget(m, "spec.bootstrap.configRef"), "name"), &oac,
		     &err) == 0) {
		const json_t *t = jget(oacp, "spec.openshiftAssistedConfigSpec");
		json_t *tc = copy_obj(t), *sc = copy_obj(json_object_get(oac, "spec"));

		/* Semantically: the defaults the schema gives count as equal. */
		if (!json_object_get(tc, "cpuArchitecture") && json_object_get(sc, "cpuArchitecture"))
			json_object_set(tc, "cpuArchitecture", json_object_get(sc, "cpuArchitecture"));
		ok = json_equal(tc, sc);
		json_decref(tc);
		json_decref(sc);
		json_decref(oac);
	}
	return ok;
}

static void set_machine_up_to_date(struct hub *h, const struct kinds *k, const json_t *m, bool ok)
{
	json_t *conds = json_is_array(jget(m, "status.conditions")) ? json_deep_copy(jget(m, "status.conditions"))
								       : json_array(), *status;

	set_cond(conds, "UpToDate", ok, "NotUpToDate", ok ? NULL : "Machine is not up to date", 0);
	status = json_is_object(json_object_get(m, "status")) ? json_deep_copy(json_object_get(m, "status"))
							       : json_object();
	json_object_set_new(status, "conditions", conds);
	write_status(h, k->machine, m, status);
	json_decref(status);
}

static int cmp_machine_age(const void *a, const void *b)
{
	const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
	int c = strcmp(meta(x, "creationTimestamp") ? meta(x, "creationTimestamp") : "",
		       meta(y, "creationTimestamp") ? meta(y, "creationTimestamp") : "");

	return c ? c : strcmp(meta(x, "name"), meta(y, "name"));
}

static bool has_finalizer(const json_t *o)
{
	const json_t *f;
	size_t i;

	json_array_foreach(jget(o, "metadata.finalizers"), i, f)
		if (!strcmp(json_string_value(f) ? json_string_value(f) : "", FINALIZER_OACP))
			return true;
	return false;
}

static struct rt_result reconcile_oacp(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	struct kinds k;
	json_t *oacp = NULL, *cluster = NULL, *status = NULL, *conds, *pairs = NULL, *p, **machines = NULL;
	const char *ver, *cname, *creason = NULL;
	char why[512], msg[1100], sel[400], *image = NULL;
	int64_t gen, want;
	size_t i, n = 0, ready = 0, avail = 0, uptodate = 0;
	struct rt_result res = rt_done();
	bool deleting = false;
	ah_err err;
	int r;

	if (!get_kinds(h, &k))
		return rt_done();
	if (kube_get(h->api, k.oacp, key->ns, key->name, &oacp, &err) < 0)
		return rt_done();
	gen = spec_int(oacp, "metadata.generation", 0);

	/* 1. Deleting: the ClusterDeployment (the rest follows through
	 * ownerReferences), then the finalizer. */
	if (jget(oacp, "metadata.deletionTimestamp")) {
		if (has_finalizer(oacp)) {
			json_t *o = NULL, *fins = json_array(), *f;
			struct kube_opts dopts = { 0 };

			r = kube_delete(h->api, h->k_cd, key->ns, key->name, &dopts, &o, &err);
			json_decref(o);
			if (r < 0 && r != -ENOENT) {
				json_decref(oacp);
				return rt_error(r);
			}
			json_array_foreach(jget(oacp, "metadata.finalizers"), i, f)
				if (strcmp(json_string_value(f) ? json_string_value(f) : "", FINALIZER_OACP))
					json_array_append(fins, f);
			p = json_pack("{s:{s:s,s:o}}", "metadata", "resourceVersion", meta(oacp, "resourceVersion"),
				      "finalizers", fins);
			r = patch(h, k.oacp, key->ns, key->name, p, false, NULL);
			json_decref(p);
			json_decref(oacp);
			return r < 0 && r != -ENOENT ? rt_error(r) : rt_done();
		}
		json_decref(oacp);
		return rt_done();
	}
	/* 2. The finalizer. */
	if (!has_finalizer(oacp)) {
		json_t *fins = json_is_array(jget(oacp, "metadata.finalizers"))
				       ? json_deep_copy(jget(oacp, "metadata.finalizers")) : json_array(), *out = NULL;

		json_array_append_new(fins, json_string(FINALIZER_OACP));
		p = json_pack("{s:{s:s,s:o}}", "metadata", "resourceVersion", meta(oacp, "resourceVersion"), "finalizers",
			      fins);
		r = patch(h, k.oacp, key->ns, key->name, p, false, &out);
		json_decref(p);
		json_decref(oacp);
		if (r < 0)
			return r == -ENOENT ? rt_done() : rt_error(r);
		oacp = out;
	}
	status = json_is_object(json_object_get(oacp, "status")) ? json_deep_copy(json_object_get(oacp, "status"))
								  : json_object();
	conds = json_is_array(json_object_get(status, "conditions")) ? json_incref(json_object_get(status, "conditions"))
								      : json_array();
	json_object_set_new(status, "conditions", conds);
	ver = js(jget(oacp, "spec"), "distributionVersion");

	/* 3. The version floor. */
	if (!capoa_version_supported(ver)) {
		snprintf(msg, sizeof(msg), "version %s is not supported, the minimum supported version is 4.14.0", ver);
		set_cond(conds, "MachinesCreated", false, "MachineGenerationFailed", msg, gen);
		set_ready(conds, gen);
		goto write;
	}
	/* 4. The owner Cluster (its controller sets the ownerReference). */
	cname = owner_cluster(oacp);
	if (!cname || kube_get(h->api, k.cluster, key->ns, cname, &cluster, &err) < 0) {
		log_info("OpenshiftAssistedControlPlane %s/%s: cluster Controller has not yet set OwnerRef", key->ns,
			 key->name);
		res = rt_requeue_after(10000);
		goto out;
	}
	if (json_is_true(jget(cluster, "spec.paused")) || annotation(cluster, ANN_PAUSED) ||
	    annotation(oacp, ANN_PAUSED))
		goto out;
	/* 5. The endpoint and the infrastructure. */
	if (!nonempty(js(jget(cluster, "spec.controlPlaneEndpoint"), "host")) ||
	    spec_int(cluster, "spec.controlPlaneEndpoint.port", 0) == 0 ||
	    !json_is_true(jget(cluster, "status.initialization.infrastructureProvisioned"))) {
		res = rt_requeue_after(20000);
		goto out;
	}
	/* 6. The placeholder pull secret. */
	if (!nonempty(js(jget(oacp, "spec.config.pullSecretRef"), "name"))) {
		char *b64 = util_base64_encode(PLACEHOLDER_PS_JSON, strlen(PLACEHOLDER_PS_JSON));
		json_t *sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:[o]},s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
					"metadata", "name", PLACEHOLDER_PS, "namespace", key->ns, "ownerReferences",
					owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "type",
					"kubernetes.io/dockerconfigjson", "data", ".dockerconfigjson", b64 ? b64 : "");

		free(b64);
		r = sec ? create(h, h->k_secret, key->ns, sec, &err) : -ENOMEM;
		json_decref(sec);
		/* Upstream fails on AlreadyExists; a Secret of that name (the
		 * bootstrap provider's, another OACP's) is used as it is. */
		if (r < 0 && r != -EEXIST) {
			res = rt_error(r);
			goto out;
		}
		p = json_pack("{s:{s:{s:{s:s}}}}", "spec", "config", "pullSecretRef", "name", PLACEHOLDER_PS);
		json_t *out = NULL;
		r = patch(h, k.oacp, key->ns, key->name, p, false, &out);
		json_decref(p);
		if (r < 0) {
			res = rt_error(r);
			goto out;
		}
		json_object_set(oacp, "spec", json_object_get(out, "spec"));
		json_object_set(json_object_get(oacp, "metadata"), "resourceVersion", jget(out, "metadata.resourceVersion"));
		json_decref(out);
		/* The spec was replaced: what pointed into it is read again. */
		ver = js(jget(oacp, "spec"), "distributionVersion");
	}
	/* 7. The ClusterDeployment (create-only). */
	{
		json_t *cd = NULL;

		if (kube_get(h->api, h->k_cd, key->ns, key->name, &cd, &err) == -ENOENT) {
			const char *cn = js(jget(oacp, "spec.config"), "clusterName");

			cd = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o]},s:{s:s,s:{s:s,s:s,s:s,s:s},s:s,s:{s:{s:{}}},s:{s:s}}}",
				       "apiVersion", "hive.openshift.io/v1", "kind", "ClusterDeployment", "metadata", "name",
				       /* The cluster-name label is config.clusterName
				        * when set, as upstream's (surprise 3). */
				       key->name, "namespace", key->ns, "labels",
				       cp_labels_for(oacp, nonempty(cn) ? cn : cname), "ownerReferences",
				       owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "spec", "clusterName",
				       nonempty(cn) ? cn : cname, "clusterInstallRef", "group",
				       "extensions.hive.openshift.io", "version", "v1beta1", "kind", "AgentClusterInstall",
				       "name", key->name, "baseDomain",
				       js(jget(oacp, "spec.config"), "baseDomain") ? js(jget(oacp, "spec.config"), "baseDomain")
										  : "",
				       /* agentSelector: {} as upstream's zero
				        * LabelSelector serialises (the CRD requires it). */
				       "platform", "agentBareMetal", "agentSelector", "pullSecretRef", "name",
				       js(jget(oacp, "spec.config.pullSecretRef"), "name"));
			r = cd ? create(h, h->k_cd, key->ns, cd, &err) : -ENOMEM;
			if (r < 0 && r != -EEXIST)
				log_warn("OpenshiftAssistedControlPlane %s/%s: ClusterDeployment: %s", key->ns, key->name,
					 r == -ENOMEM ? "out of memory" : err.message);
		}
		json_decref(cd);
	}
	/* 8, 9. The release image and the Kubernetes version. */
	image = release_image(h, &k, oacp);
	{
		const char *kube = kube_version(h, ver, image ? image : "", why, sizeof(why));

		if (kube) {
			json_object_set_new(status, "version", json_string(kube));
			set_cond(conds, "KubernetesVersionAvailable", true, NULL, NULL, gen);
		} else {
			/* Upstream: the error in the condition; an image not
			 * found also marks the upgrade unavailable and ends the
			 * pass (no Machines); here both cases end it, as
			 * upstream's other errors would (surprise 5). */
			snprintf(msg, sizeof(msg), "failed to get k8s version from release image: %s", why);
			set_cond(conds, "KubernetesVersionAvailable", false, "KubernetesVersionUnavailable", msg, gen);
			snprintf(msg, sizeof(msg), "upgrade unavailable: %s", why);
			set_cond(conds, "UpgradeAvailable", false, "UpgradeImageUnavailable", msg, gen);
			set_ready(conds, gen);
			res = rt_error(-ENOENT);
			goto write;
		}
	}
	/* 10. Upgrades (§C.9): the workload cluster's ClusterVersion is out of
	 * reach; the installed version is the one the install ran with. */
	if (cond_true(conds, "KubeconfigAvailable")) {
		json_t *cd = NULL;

		if (kube_get(h->api, h->k_cd, key->ns, key->name, &cd, &err) == 0 &&
		    json_is_true(jget(cd, "spec.installed")) && !json_object_get(status, "distributionVersion"))
			json_object_set_new(status, "distributionVersion", json_string(ver));
		json_decref(cd);
		if (nonempty(js(status, "distributionVersion"))) {
			if (!strcmp(js(status, "distributionVersion"), ver)) {
				set_cond(conds, "UpgradeCompleted", true, NULL, NULL, gen);
			} else {
				snprintf(msg, sizeof(msg), "upgrade to version %s has failed\n"
					 "the workload cluster's ClusterVersion cannot be reached from this hub", ver);
				set_cond(conds, "UpgradeCompleted", false, "UpgradeFailed", msg, gen);
			}
		}
	}

	/* 11. Replicas: one action per pass. */
	{
		char cpv[80];

		cp_name_value(key->name, cpv, sizeof(cpv));
		pairs = keys_by(h, k.machine->store_key, IDX_MACHINE_CP, key->ns, cpv);
	}
	machines = calloc(json_array_size(pairs) + 1, sizeof(*machines));
	json_array_foreach(pairs, i, p) {
		json_t *m = NULL;

		if (machines && kube_get(h->api, k.machine, key->ns, json_string_value(json_array_get(p, 1)), &m, &err) == 0)
			machines[n++] = m;
	}
	if (!machines) {
		res = rt_error(-ENOMEM);
		goto out;
	}
	qsort(machines, n, sizeof(*machines), cmp_machine_age);
	want = spec_int(oacp, "spec.replicas", 1);
	for (i = 0; i < n; i++)
		if (jget(machines[i], "metadata.deletionTimestamp"))
			deleting = true;
	if (!deleting && (int64_t)n < want) {
		r = scale_up(h, &k, oacp, &creason, msg, sizeof(msg));
		if (r < 0) {
			set_cond(conds, "MachinesCreated", false, creason, msg, gen);
			res = rt_error(r);
		}
	} else if (!deleting && (int64_t)n > want) {
		json_t *o = NULL;
		struct kube_opts dopts = { 0 };

		r = kube_delete(h->api, k.machine, key->ns, meta(machines[0], "name"), &dopts, &o, &err);
		json_decref(o);
		if (r < 0 && r != -ENOENT)
			res = rt_error(r);
		else
			rt_wait_synced(h->rt, 0, 5000);
	}

	/* 12. Status. */
	for (i = 0; i < n; i++) {
		bool ok = machine_up_to_date(h, &k, oacp, machines[i]);

		ready += cond_true(jget(machines[i], "status.conditions"), "Ready");
		avail += cond_true(jget(machines[i], "status.conditions"), "Available");
		uptodate += ok;
		if (cond_true(jget(machines[i], "status.conditions"), "UpToDate") != ok ||
		    !find_cond(jget(machines[i], "status.conditions"), "UpToDate"))
			set_machine_up_to_date(h, &k, machines[i], ok);
	}
	json_object_set_new(status, "replicas", json_integer((json_int_t)n));
	json_object_set_new(status, "readyReplicas", json_integer((json_int_t)ready));
	json_object_set_new(status, "availableReplicas", json_integer((json_int_t)avail));
	json_object_set_new(status, "upToDateReplicas", json_integer((json_int_t)uptodate));
	{
		char cpv[80];

		cp_name_value(key->name, cpv, sizeof(cpv));
		/* Upstream leaves the selector unset; the scale subresource
		 * (kubectl scale) needs it. */
		snprintf(sel, sizeof(sel), "%s=%s,%s", LBL_CP_NAME, cpv, LBL_CP);
		json_object_set_new(status, "selector", json_string(sel));
	}
	/* Upstream's rules: MachinesCreated True once as many Machines are
	 * ready as wanted; MachinesReady only when Machines are wanted. */
	if ((int64_t)ready == want)
		set_cond(conds, "MachinesCreated", true, NULL, NULL, gen);
	if ((int64_t)ready == want && want > 0) {
		set_cond(conds, "MachinesReady", true, NULL, NULL, gen);
	} else if (want > 0) {
		snprintf(msg, sizeof(msg), "%zu of %lld machines are ready", ready, (long long)want);
		set_cond(conds, "MachinesReady", false, "MachinesNotReady", msg, gen);
	}
	set_ready(conds, gen);
	json_object_set_new(status, "observedGeneration", json_integer(gen));
write:
	if ((r = write_status(h, k.oacp, oacp, status)) < 0 && res.outcome == RT_DONE)
		res = rt_error(r);
out:
	for (i = 0; i < n; i++)
		json_decref(machines[i]);
	free(machines);
	json_decref(pairs);
	free(image);
	json_decref(status);
	json_decref(cluster);
	json_decref(oacp);
	return res;
}

/* ---- the ClusterDeployment controller (§C.8) ---- */

static bool differs(const json_t *have, const char *key, const json_t *want)
{
	return !json_equal(json_object_get(have, key), want);
}

static struct rt_result reconcile_cd(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	struct kinds k;
	json_t *cd = NULL, *oacp = NULL, *cluster = NULL, *aci = NULL, *p, *spec, *labels, *refs, *mds, *ann;
	const json_t *cfg;
	const char *cname, *cdlabel;
	char *image = NULL, *ico = NULL, why[512];
	int64_t workers = 0;
	bool baremetal;
	size_t i;
	ah_err err;
	int r = 0;

	if (!get_kinds(h, &k) || kube_get(h->api, h->k_cd, key->ns, key->name, &cd, &err) < 0)
		return rt_done();
	cdlabel = label(cd, LBL_CLUSTER);
	if (!cdlabel || kube_get(h->api, k.oacp, key->ns, key->name, &oacp, &err) < 0 ||
	    jget(cd, "metadata.deletionTimestamp") || !(cname = owner_cluster(oacp))) {
		json_decref(cd);
		return rt_done();
	}
	cfg = jget(oacp, "spec.config");

	/* 2, 3. The ClusterImageSet <cd> (the tag: no registry access here). */
	image = release_image(h, &k, oacp);
	{
		json_t *cis = NULL;

		if (kube_get(h->api, h->k_imageset, "", key->name, &cis, &err) == -ENOENT) {
			json_t *b = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:s}}", "apiVersion", "hive.openshift.io/v1",
					      "kind", "ClusterImageSet", "metadata", "name", key->name, "labels",
					      LBL_CLUSTER, cdlabel, "spec", "releaseImage", image ? image : "");

			r = b ? create(h, h->k_imageset, "", b, &err) : -ENOMEM;
			json_decref(b);
		} else if (cis && strcmp(js(jget(cis, "spec"), "releaseImage") ? js(jget(cis, "spec"), "releaseImage") : "",
				      image ? image : "")) {
			p = json_pack("{s:{s:s}}", "spec", "releaseImage", image ? image : "");
			r = patch(h, h->k_imageset, "", key->name, p, false, NULL);
			json_decref(p);
		}
		json_decref(cis);
		if (r < 0 && r != -EEXIST)
			goto fail;
		r = 0;
	}
	/* 4. The registry ConfigMap. */
	if (nonempty(js(json_object_get(cfg, "imageRegistryRef"), "name"))) {
		json_t *src = NULL, *data = json_object(), *have = NULL;
		static const char *const keys[] = { "registries.conf", "ca-bundle.crt" };

		if (kube_get(h->api, k.cm, key->ns, js(json_object_get(cfg, "imageRegistryRef"), "name"), &src, &err) < 0) {
			json_decref(data);
			r = -ENOENT;
			log_warn("ClusterDeployment %s/%s: imageRegistryRef: %s", key->ns, key->name, err.message);
			goto fail;
		}
		for (i = 0; i < 2; i++)
			if (js(json_object_get(src, "data"), keys[i]))
				json_object_set(data, keys[i], json_object_get(json_object_get(src, "data"), keys[i]));
		json_decref(src);
		if (kube_get(h->api, k.cm, key->ns, REGISTRY_CM, &have, &err) == -ENOENT) {
			json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s,s:[o]},s:O}", "apiVersion", "v1", "kind", "ConfigMap",
					      "metadata", "name", REGISTRY_CM, "namespace", key->ns, "ownerReferences",
					      owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "data", data);

			r = b ? create(h, k.cm, key->ns, b, &err) : -ENOMEM;
			json_decref(b);
		} else if (have && !json_equal(json_object_get(have, "data"), data)) {
			p = json_pack("{s:O}", "data", data);
			r = patch(h, k.cm, key->ns, REGISTRY_CM, p, false, NULL);
			json_decref(p);
		}
		json_decref(have);
		json_decref(data);
		if (r < 0 && r != -EEXIST)
			goto fail;
		r = 0;
	}
	/* 5. The AgentClusterInstall <cd>. */
	kube_get(h->api, k.cluster, key->ns, cname, &cluster, &err);
	mds = keys_by(h, k.md->store_key, IDX_MD_CLUSTER, key->ns, cname);
	json_array_foreach(mds, i, p) {
		json_t *md = rt_cache_get(h->rt, k.md->store_key, key->ns, json_string_value(json_array_get(p, 1)));

		/* Upstream dereferences spec.replicas unchecked: nil counts 0. */
		workers += spec_int(md, "spec.replicas", 0);
		json_decref(md);
	}
	json_decref(mds);
	baremetal = json_array_size(json_object_get(cfg, "apiVIPs")) && json_array_size(json_object_get(cfg, "ingressVIPs"));
	spec = json_pack("{s:{s:s},s:{s:s},s:s,s:{s:I,s:I}}", "clusterDeploymentRef", "name", key->name, "imageSetRef",
			 "name", key->name, "platformType", baremetal ? "BareMetal" : "None", "provisionRequirements",
			 "controlPlaneAgents", (json_int_t)spec_int(oacp, "spec.replicas", 1), "workerAgents",
			 (json_int_t)workers);
	if (baremetal) {
		json_object_set(spec, "apiVIPs", json_object_get(cfg, "apiVIPs"));
		json_object_set(spec, "ingressVIPs", json_object_get(cfg, "ingressVIPs"));
	}
	if (json_object_get(cfg, "diskEncryption"))
		json_object_set(spec, "diskEncryption", json_object_get(cfg, "diskEncryption"));
	if (json_object_get(cfg, "mastersSchedulable"))
		json_object_set(spec, "mastersSchedulable", json_object_get(cfg, "mastersSchedulable"));
	if (json_object_get(cfg, "proxy"))
		json_object_set(spec, "proxy", json_object_get(cfg, "proxy"));
	if (nonempty(js(cfg, "sshAuthorizedKey")))
		json_object_set_new(spec, "sshPublicKey", json_string(js(cfg, "sshAuthorizedKey")));
	{
		json_t *net = json_object(), *pods = jget(cluster, "spec.clusterNetwork.pods.cidrBlocks"),
		       *svcs = jget(cluster, "spec.clusterNetwork.services.cidrBlocks");

		if (json_array_size(pods))
			json_object_set_new(net, "clusterNetwork",
					    json_pack("[{s:O,s:i}]", "cidr", json_array_get(pods, 0), "hostPrefix", 23));
		if (json_array_size(svcs))
			json_object_set(net, "serviceNetwork", svcs);
		if (json_object_size(net))
			json_object_set_new(spec, "networking", net);
		else
			json_decref(net);
	}
	refs = json_is_array(json_object_get(cfg, "manifestsConfigMapRefs"))
		       ? json_deep_copy(json_object_get(cfg, "manifestsConfigMapRefs")) : json_array();
	if (nonempty(js(json_object_get(cfg, "imageRegistryRef"), "name")))
		json_array_append_new(refs, json_pack("{s:s}", "name", REGISTRY_CM));
	if (json_array_size(refs))
		json_object_set_new(spec, "manifestsConfigMapRefs", refs);
	else
		json_decref(refs);
	labels = cp_labels_for(oacp, cdlabel);
	json_object_set_new(labels, LBL_ACI_CONSUMER, json_string(OACP_KIND));
	ann = json_object();
	if ((r = capoa_install_config_override(json_object_get(cfg, "capabilities"), baremetal,
					       annotation(oacp, ANN_IC_OVERRIDE), &ico, why, sizeof(why))) < 0) {
		log_warn("ClusterDeployment %s/%s: %s", key->ns, key->name, why);
		json_decref(labels);
		json_decref(ann);
		json_decref(spec);
		goto fail;
	}
	if (ico)
		json_object_set_new(ann, ANN_ACI_IC_OVERRIDES, json_string(ico));
	if (kube_get(h->api, h->k_aci, key->ns, key->name, &aci, &err) == -ENOENT) {
		json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:O,s:[o]},s:O}", "apiVersion",
				      "extensions.hive.openshift.io/v1beta1", "kind", "AgentClusterInstall", "metadata",
				      "name", key->name, "namespace", key->ns, "labels", labels, "annotations", ann,
				      "ownerReferences", owner_ref(oacp, OACP_APIVERSION, OACP_KIND, false), "spec", spec);

		r = b ? create(h, h->k_aci, key->ns, b, &err) : -ENOMEM;
		if (r < 0 && r != -ENOMEM)
			log_warn("AgentClusterInstall %s/%s: %s", key->ns, key->name, err.message);
		json_decref(b);
	} else if (aci) {
		json_t *ps = json_object(), *pm = json_object(), *pl = json_object(), *pa = json_object(), *v;
		const char *kk;

		json_object_foreach(spec, kk, v)
			if (differs(json_object_get(aci, "spec"), kk, v))
				json_object_set(ps, kk, v);
		json_object_foreach(labels, kk, v)
			if (differs(jget(aci, "metadata.labels"), kk, v))
				json_object_set(pl, kk, v);
		json_object_foreach(ann, kk, v)
			if (differs(jget(aci, "metadata.annotations"), kk, v))
				json_object_set(pa, kk, v);
		if (!ico && annotation(aci, ANN_ACI_IC_OVERRIDES))
			json_object_set_new(pa, ANN_ACI_IC_OVERRIDES, json_null());
		if (json_object_size(pl))
			json_object_set(pm, "labels", pl);
		if (json_object_size(pa))
			json_object_set(pm, "annotations", pa);
		if (json_object_size(ps) || json_object_size(pm)) {
			p = json_pack("{s:O,s:O}", "metadata", pm, "spec", ps);
			r = patch(h, h->k_aci, key->ns, key->name, p, false, NULL);
			json_decref(p);
		}
		json_decref(ps);
		json_decref(pm);
		json_decref(pl);
		json_decref(pa);
	}
	json_decref(labels);
	json_decref(ann);
	json_decref(spec);
	if (r < 0 && r != -EEXIST)
		goto fail;
	r = 0;
	/* 6. The CD's clusterInstallRef. */
	{
		json_t *want = json_pack("{s:s,s:s,s:s,s:s}", "group", "extensions.hive.openshift.io", "version", "v1beta1",
					 "kind", "AgentClusterInstall", "name", key->name);

		if (!json_equal(jget(cd, "spec.clusterInstallRef"), want)) {
			p = json_pack("{s:{s:O}}", "spec", "clusterInstallRef", want);
			r = patch(h, h->k_cd, key->ns, key->name, p, false, NULL);
			json_decref(p);
		}
		json_decref(want);
	}
fail:
	free(ico);
	free(image);
	json_decref(aci);
	json_decref(cluster);
	json_decref(oacp);
	json_decref(cd);
	return r < 0 && r != -ENOENT ? rt_error(r) : r == -ENOENT ? rt_requeue_after(10000) : rt_done();
}

/* ---- the AgentClusterInstall controller (§C.8) ---- */

static struct rt_result reconcile_aci(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	struct kinds k;
	json_t *aci = NULL, *oacp = NULL, *status, *conds, *p, *init;
	const char *oname = NULL, *kc, *state, *cluster;
	char msg[300];
	int64_t gen;
	size_t i;
	ah_err err;
	int r = 0;

	if (!get_kinds(h, &k) || kube_get(h->api, h->k_aci, key->ns, key->name, &aci, &err) < 0)
		return rt_done();
	if (strcmp(label(aci, LBL_ACI_CONSUMER) ? label(aci, LBL_ACI_CONSUMER) : "", OACP_KIND)) {
		json_decref(aci);
		return rt_done();
	}
	/* 1. The owner OACP. */
	json_array_foreach(jget(aci, "metadata.ownerReferences"), i, p)
		if (!strcmp(js(p, "kind") ? js(p, "kind") : "", OACP_KIND))
			oname = js(p, "name");
	if (!oname) {
		log_warn("AgentClusterInstall %s/%s: no owner %s", key->ns, key->name, OACP_KIND);
		json_decref(aci);
		return rt_error(-ENOENT);
	}
	/* An owner that is gone: the garbage collector takes the ACI. */
	if (jget(aci, "metadata.deletionTimestamp") || kube_get(h->api, k.oacp, key->ns, oname, &oacp, &err) < 0) {
		json_decref(aci);
		return rt_done();
	}
	gen = spec_int(oacp, "metadata.generation", 0);
	cluster = label(oacp, LBL_CLUSTER) ? label(oacp, LBL_CLUSTER) : "";
	status = json_is_object(json_object_get(oacp, "status")) ? json_deep_copy(json_object_get(oacp, "status"))
								  : json_object();
	conds = json_is_array(json_object_get(status, "conditions")) ? json_incref(json_object_get(status, "conditions"))
								      : json_array();
	json_object_set_new(status, "conditions", conds);
	kc = js(jget(aci, "spec.clusterMetadata.adminKubeconfigSecretRef"), "name");
	if (!nonempty(kc)) {
		set_cond(conds, "KubeconfigAvailable", false, "KubeconfigUnavailable", "Kubeconfig not available", gen);
	} else {
		json_t *admin = NULL, *mine = NULL;
		char name[300];

		if (kube_get(h->api, h->k_secret, key->ns, kc, &admin, &err) < 0) {
			r = -ENOENT;
			goto out;
		}
		if (strcmp(label(admin, LBL_CLUSTER) ? label(admin, LBL_CLUSTER) : "", cluster)) {
			p = json_pack("{s:{s:{s:s}}}", "metadata", "labels", LBL_CLUSTER, cluster);
			patch(h, h->k_secret, key->ns, kc, p, false, NULL);
			json_decref(p);
		}
		snprintf(name, sizeof(name), "%s-kubeconfig", cluster);
		if (kube_get(h->api, h->k_secret, key->ns, name, &mine, &err) == -ENOENT) {
			const char *v = js(json_object_get(admin, "data"), "kubeconfig");
			json_t *b = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[o]},s:s,s:{s:s}}", "apiVersion", "v1", "kind",
					      "Secret", "metadata", "name", name, "namespace", key->ns, "labels",
					      LBL_CLUSTER, cluster, "ownerReferences",
					      owner_ref(oacp, OACP_APIVERSION, OACP_KIND, true), "type",
					      "cluster.x-k8s.io/secret", "data", "value", v ? v : "");

			r = b ? create(h, h->k_secret, key->ns, b, &err) : -ENOMEM;
			json_decref(b);
		}
		json_decref(mine);
		json_decref(admin);
		if (r < 0 && r != -EEXIST)
			goto out;
		r = 0;
		set_cond(conds, "KubeconfigAvailable", true, NULL, NULL, gen);
		init = json_is_object(json_object_get(status, "initialization"))
			       ? json_object_get(status, "initialization") : NULL;
		if (!init) {
			init = json_object();
			json_object_set_new(status, "initialization", init);
		}
		json_object_set_new(init, "controlPlaneInitialized", json_true());
	}
	state = js(jget(aci, "status.debugInfo"), "state");
	if (nonempty(state) && (!strcmp(state, "finalizing") || !strcmp(state, "adding-hosts"))) {
		set_cond(conds, "Available", true, NULL, NULL, gen);
	} else {
		snprintf(msg, sizeof(msg), "Controlplane installing, status: %s", state ? state : "");
		set_cond(conds, "Available", false, "ControlPlaneInstalling", msg, gen);
	}
	set_ready(conds, gen);
	r = write_status(h, k.oacp, oacp, status);
out:
	json_decref(status);
	json_decref(oacp);
	json_decref(aci);
	return r < 0 ? rt_error(r) : rt_done();
}

/* ---- watches and indexes ---- */

static void index_label(const json_t *obj, json_t *out, const char *lbl)
{
	const char *v = label(obj, lbl);
	char key[600];

	if (v) {
		snprintf(key, sizeof(key), "%s/%s", meta(obj, "namespace") ? meta(obj, "namespace") : "", v);
		json_array_append_new(out, json_string(key));
	}
}

static void idx_cluster(const json_t *obj, json_t *out)
{
	index_label(obj, out, LBL_CLUSTER);
}

static void idx_cp_machine(const json_t *obj, json_t *out)
{
	if (label(obj, LBL_CP))
		index_label(obj, out, LBL_CP_NAME);
}

/* A Cluster → its control plane, when that is an OACP. */
static void cluster_to_oacp(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	const json_t *ref = jget(ev->obj, "spec.controlPlaneRef");

	if (!strcmp(js(ref, "kind") ? js(ref, "kind") : "", OACP_KIND) && nonempty(js(ref, "name")))
		rt_enqueue(c, ev->so->ns, js(ref, "name"));
}

/* An object labelled with a cluster → the ClusterDeployments of that
 * cluster's control planes (each named after its OACP). */
static void cluster_label_to_cds(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const char *cl = ev->obj ? label(ev->obj, LBL_CLUSTER) : NULL;
	json_t *pairs, *p;
	size_t i;

	if (!cl && ev->obj && !strcmp(js(ev->obj, "kind") ? js(ev->obj, "kind") : "", "Cluster"))
		cl = ev->so->name;
	if (!cl || !h->k_cd)
		return;
	pairs = keys_by(h, kube_registry_by_kind(h->reg, OACP_APIVERSION, OACP_KIND)->store_key, IDX_OACP_CLUSTER,
			ev->so->ns, cl);
	json_array_foreach(pairs, i, p)
		rt_enqueue(c, ev->so->ns, json_string_value(json_array_get(p, 1)));
	json_decref(pairs);
}

/* Only the objects of this provider reach its queues (the hub's own
 * ClusterDeployments and ACIs are many, and not its business). */
static void capi_cd_self(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	if (ev->obj && label(ev->obj, LBL_CLUSTER))
		rt_enqueue(c, ev->so->ns, ev->so->name);
}

static void capi_aci_self(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	if (ev->obj && label(ev->obj, LBL_ACI_CONSUMER))
		rt_enqueue(c, ev->so->ns, ev->so->name);
}

int hub_capoa_controlplane_register(struct hub *h)
{
	struct kinds k;
	int r;

	if (!get_kinds(h, &k))
		return 0;
	r = rt_cache_resource(h->rt, k.oacp->store_key, false);
	if (r == 0)
		r = rt_cache_index(h->rt, k.oacp->store_key, IDX_OACP_CLUSTER, idx_cluster);
	if (r == 0)
		r = rt_cache_resource(h->rt, k.oac->store_key, true);
	if (r == 0)
		r = rt_cache_index(h->rt, k.oac->store_key, IDX_OAC_CLUSTER, idx_cluster);
	if (r == 0)
		r = rt_cache_resource(h->rt, k.md->store_key, true);
	if (r == 0)
		r = rt_cache_index(h->rt, k.md->store_key, IDX_MD_CLUSTER, idx_cluster);
	if (r == 0)
		r = rt_cache_resource(h->rt, k.machine->store_key, false);
	if (r == 0)
		r = rt_cache_index(h->rt, k.machine->store_key, IDX_MACHINE_CP, idx_cp_machine);
	if (r == 0) {
		struct rt_controller_def d = {
			.name = OACP_KIND, .reconcile = reconcile_oacp, .ctx = h,
			.watches = {
				{ .resource = k.oacp->store_key, .map = RT_MAP_SELF },
				{ .resource = k.machine->store_key, .map = RT_MAP_OWNER, .owner_kind = OACP_KIND },
				{ .resource = k.oac->store_key, .map = RT_MAP_OWNER, .owner_kind = OACP_KIND },
				{ .resource = h->k_cd->store_key, .map = RT_MAP_OWNER, .owner_kind = OACP_KIND },
				{ .resource = k.cluster->store_key, .map = RT_MAP_FN, .fn = cluster_to_oacp },
			},
		};
		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "CAPOAClusterDeployment", .reconcile = reconcile_cd, .ctx = h,
			.watches = {
				{ .resource = h->k_cd->store_key, .map = RT_MAP_FN, .fn = capi_cd_self },
				/* An OACP names its CD (upstream enqueues the OACP's
				 * own name); MachineDeployments, OACs and Clusters
				 * reach the CDs labelled with their cluster (upstream
				 * enqueues an MD's own name, which names no CD). */
				{ .resource = k.oacp->store_key, .map = RT_MAP_SELF },
				{ .resource = k.md->store_key, .map = RT_MAP_FN, .fn = cluster_label_to_cds },
				{ .resource = k.oac->store_key, .map = RT_MAP_FN, .fn = cluster_label_to_cds },
				{ .resource = k.cluster->store_key, .map = RT_MAP_FN, .fn = cluster_label_to_cds },
			},
		};
		r = rt_register(h->rt, &d, NULL);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "CAPOAAgentClusterInstall", .reconcile = reconcile_aci, .ctx = h,
			.watches = {
				{ .resource = h->k_aci->store_key, .map = RT_MAP_FN, .fn = capi_aci_self },
			},
		};
		r = rt_register(h->rt, &d, NULL);
	}
	return r;
}
