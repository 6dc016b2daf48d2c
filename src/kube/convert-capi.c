/* convert-capi.c - the built-in conversions between the served versions of
 * the Cluster API OpenShift Assisted kinds (bmac-capi.md C.1-C.3), with the
 * field mapping of upstream's conversion functions:
 *
 * OpenshiftAssistedConfig v1alpha1 <-> v1alpha2 (storage): the spec is the
 * same but for the v1alpha2-only pre/post-bootstrap commands, sentinel
 * directory, kubeconfig path and nodeRegistration.providerID; status.ready
 * <-> status.initialization.dataSecretCreated (a data Secret name also
 * means created), the v1beta1 conditions <-> status.v1beta1Conditions,
 * dataSecretName and observedGeneration as they are; infraEnvRef,
 * agentRef and failureReason/Message exist in v1alpha1 only.
 * OpenshiftAssistedConfigTemplate likewise under spec.template.spec.
 *
 * OpenshiftAssistedControlPlane v1alpha2 <-> v1alpha3 (storage):
 * machineTemplate.infrastructureRef ObjectReference {apiVersion,kind,name}
 * <-> {apiGroup,kind,name} (back as apiGroup + "/v1beta1"); the
 * nodeDrainTimeout / nodeVolumeDetachTimeout / nodeDeletionTimeout
 * durations <-> machineTemplate.deletion.*Seconds; status conditions in
 * the v1beta1 form <-> metav1 conditions (an empty reason becomes
 * "Unknown"; back with severity Info on conditions that are not True),
 * updatedReplicas <-> upToDateReplicas, initialized <->
 * initialization.controlPlaneInitialized; v1alpha2's ready is the
 * Available condition being True and unavailableReplicas is spec.replicas
 * less availableReplicas.  Fields only one side has come back through the
 * conversion-data annotation (convert.c). */
#include <stdio.h>
#include <string.h>

#include "convert-internal.h"
#include "kube/convert.h"

/* ---- helpers ---------------------------------------------------------------- */

static bool is_true_at(const json_t *o, const char *path)
{
	return json_is_true(cv_get(o, path));
}

static bool nonempty_string_at(const json_t *o, const char *path)
{
	const char *s = json_string_value(cv_get(o, path));

	return s && *s;
}

/* v1beta1 conditions (severity, optional reason/message) -> metav1. */
static json_t *conditions_to_metav1(const json_t *in)
{
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(in, i, c) {
		const char *reason = json_string_value(json_object_get(c, "reason"));
		const char *message = json_string_value(json_object_get(c, "message"));
		json_t *n;

		if (!json_is_object(c))
			continue;
		n = json_object();
		json_object_set(n, "type", json_object_get(c, "type"));
		json_object_set(n, "status", json_object_get(c, "status"));
		if (json_object_get(c, "lastTransitionTime"))
			json_object_set(n, "lastTransitionTime", json_object_get(c, "lastTransitionTime"));
		json_object_set_new(n, "reason", json_string(reason && *reason ? reason : "Unknown"));
		json_object_set_new(n, "message", json_string(message ? message : ""));
		json_array_append_new(out, n);
	}
	return out;
}

/* metav1 conditions -> v1beta1 (severity Info on those not True). */
static json_t *conditions_to_v1beta1(const json_t *in)
{
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(in, i, c) {
		const char *status = json_string_value(json_object_get(c, "status"));
		const char *reason = json_string_value(json_object_get(c, "reason"));
		const char *message = json_string_value(json_object_get(c, "message"));
		json_t *n;

		if (!json_is_object(c))
			continue;
		n = json_object();
		json_object_set(n, "type", json_object_get(c, "type"));
		json_object_set(n, "status", json_object_get(c, "status"));
		if (json_object_get(c, "lastTransitionTime"))
			json_object_set(n, "lastTransitionTime", json_object_get(c, "lastTransitionTime"));
		if (reason && *reason)
			json_object_set_new(n, "reason", json_string(reason));
		if (message && *message)
			json_object_set_new(n, "message", json_string(message));
		if (!status || strcmp(status, "True") != 0)
			json_object_set_new(n, "severity", json_string("Info"));
		json_array_append_new(out, n);
	}
	return out;
}

static void convert_conditions(json_t *out, const char *from, const char *to, bool to_metav1)
{
	json_t *c = cv_take(out, from);

	if (json_is_array(c))
		cv_set(out, to, to_metav1 ? conditions_to_metav1(c) : conditions_to_v1beta1(c));
	json_decref(c);
}

/* ---- OpenshiftAssistedConfig(Template) ---------------------------------------------- */

#define OAC_SPEC_HUB_ONLY(p) p "preBootstrapCommands", p "postBootstrapCommands", \
	p "bootstrapCommandSentinelDir", p "postBootstrapKubeconfigPath", p "nodeRegistration.providerID"

static void oac_to_hub(json_t *out, const json_t *restored)
{
	bool created = is_true_at(out, "status.ready") || nonempty_string_at(out, "status.dataSecretName");

	(void)restored;
	if (!json_is_object(json_object_get(out, "status")))
		return;
	cv_del(out, "status.ready");
	if (created)
		cv_set(out, "status.initialization.dataSecretCreated", json_true());
	if (json_is_string(cv_get(out, "status.dataSecretName")) && !nonempty_string_at(out, "status.dataSecretName"))
		cv_del(out, "status.dataSecretName");
	/* v1alpha1 conditions and v1alpha2's v1beta1Conditions have one form. */
	cv_move(out, "status.conditions", "status.v1beta1Conditions");
	cv_del(out, "status.infraEnvRef");
	cv_del(out, "status.agentRef");
	cv_del(out, "status.failureReason");
	cv_del(out, "status.failureMessage");
}

static void oac_to_spoke(json_t *out, const json_t *restored)
{
	(void)restored;
	if (!json_is_object(json_object_get(out, "status")))
		return;
	if (is_true_at(out, "status.initialization.dataSecretCreated"))
		cv_set(out, "status.ready", json_true());
	cv_del(out, "status.initialization");
	cv_del(out, "status.conditions");
	cv_move(out, "status.v1beta1Conditions", "status.conditions");
}

static const char *const oac_hub_restore[] = { OAC_SPEC_HUB_ONLY("spec."), "status.conditions", NULL };
static const char *const oac_spoke_restore[] = { "status.infraEnvRef", "status.agentRef", "status.failureReason",
						  "status.failureMessage", NULL };

static void nothing(json_t *out, const json_t *restored)
{
	(void)out;
	(void)restored;
}

static const char *const oact_hub_restore[] = { OAC_SPEC_HUB_ONLY("spec.template.spec."), NULL };

/* ---- OpenshiftAssistedControlPlane ---------------------------------------------------- */

static const char *const durations[][2] = {
	/* { v1alpha2 machineTemplate.<>, v1alpha3 machineTemplate.deletion.<> } */
	{ "nodeDrainTimeout", "nodeDrainTimeoutSeconds" },
	{ "nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds" },
	{ "nodeDeletionTimeout", "nodeDeletionTimeoutSeconds" },
};

static void oacp_to_hub(json_t *out, const json_t *restored)
{
	json_t *mt = cv_get(out, "spec.machineTemplate"), *ref, *status;
	size_t i;

	(void)restored;
	if (json_is_object(mt)) {
		ref = cv_take(mt, "infrastructureRef");
		if (json_is_object(ref)) {
			const char *av = json_string_value(json_object_get(ref, "apiVersion"));
			const char *slash = av ? strchr(av, '/') : NULL;
			json_t *n = json_object();

			json_object_set_new(n, "apiGroup", json_stringn(av ? av : "", slash ? (size_t)(slash - av) : 0));
			json_object_set_new(n, "kind", json_string(json_string_value(json_object_get(ref, "kind")) ?
								   json_string_value(json_object_get(ref, "kind")) : ""));
			json_object_set_new(n, "name", json_string(json_string_value(json_object_get(ref, "name")) ?
								   json_string_value(json_object_get(ref, "name")) : ""));
			json_object_set_new(mt, "infrastructureRef", n);
		}
		json_decref(ref);
		for (i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
			json_t *d = cv_take(mt, durations[i][0]);
			long long secs;

			if (json_is_string(d) && kube_parse_go_duration(json_string_value(d), &secs) == 0) {
				char path[96];

				snprintf(path, sizeof(path), "deletion.%s", durations[i][1]);
				cv_set(mt, path, json_integer(secs));
			}
			json_decref(d);
		}
	}
	status = json_object_get(out, "status");
	if (!json_is_object(status))
		return;
	convert_conditions(out, "status.conditions", "status.conditions", true);
	if (json_integer_value(json_object_get(status, "replicas")) <= 0)
		json_object_del(status, "replicas");
	if (json_integer_value(json_object_get(status, "readyReplicas")) <= 0)
		json_object_del(status, "readyReplicas");
	cv_move(out, "status.updatedReplicas", "status.upToDateReplicas");
	if (json_integer_value(json_object_get(status, "upToDateReplicas")) <= 0)
		json_object_del(status, "upToDateReplicas");
	if (json_is_string(json_object_get(status, "version")) && !nonempty_string_at(out, "status.version"))
		json_object_del(status, "version");
	if (is_true_at(out, "status.initialized"))
		cv_set(out, "status.initialization.controlPlaneInitialized", json_true());
	json_object_del(status, "initialized");
	json_object_del(status, "ready");
	json_object_del(status, "unavailableReplicas");
	json_object_del(status, "clusterDeploymentRef");
	json_object_del(status, "failureReason");
	json_object_del(status, "failureMessage");
}

static void oacp_to_spoke(json_t *out, const json_t *restored)
{
	json_t *mt = cv_get(out, "spec.machineTemplate"), *ref, *status, *c;
	size_t i;

	if (json_is_object(mt)) {
		ref = cv_take(mt, "infrastructureRef");
		if (json_is_object(ref)) {
			const char *g = json_string_value(json_object_get(ref, "apiGroup"));
			const json_t *old = cv_get(restored, "spec.machineTemplate.infrastructureRef");
			json_t *n = json_object();
			char av[300];

			json_object_set(n, "kind", json_object_get(ref, "kind"));
			json_object_set(n, "name", json_object_get(ref, "name"));
			if (g && *g) {
				snprintf(av, sizeof(av), "%s/v1beta1", g);
				json_object_set_new(n, "apiVersion", json_string(av));
			}
			/* The rest of the v1alpha2 reference, when it still names
			 * the same object. */
			if (json_is_object(old) && json_equal(json_object_get(old, "kind"), json_object_get(ref, "kind")) &&
			    json_equal(json_object_get(old, "name"), json_object_get(ref, "name"))) {
				const char *key;
				json_t *v;

				json_object_foreach((json_t *)old, key, v) {
					if (strcmp(key, "apiVersion") == 0) {
						const char *ov = json_string_value(v), *sl = ov ? strchr(ov, '/') : NULL;

						if (!g || !sl || strncmp(ov, g, (size_t)(sl - ov)) != 0 || g[sl - ov])
							continue;
					}
					json_object_set(n, key, v);
				}
			}
			json_object_set_new(mt, "infrastructureRef", n);
		}
		json_decref(ref);
		for (i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
			char path[96], buf[64];
			json_t *s;

			snprintf(path, sizeof(path), "deletion.%s", durations[i][1]);
			s = cv_get(mt, path);
			if (json_is_integer(s)) {
				kube_format_go_duration(json_integer_value(s), buf, sizeof(buf));
				json_object_set_new(mt, durations[i][0], json_string(buf));
			}
		}
		cv_del(mt, "deletion");
	}
	status = json_object_get(out, "status");
	if (!json_is_object(status))
		return;
	json_array_foreach(json_object_get(status, "conditions"), i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));

		if (t && st && strcmp(t, "Available") == 0 && strcmp(st, "True") == 0)
			json_object_set_new(status, "ready", json_true());
	}
	convert_conditions(out, "status.conditions", "status.conditions", false);
	cv_move(out, "status.upToDateReplicas", "status.updatedReplicas");
	if (json_is_integer(json_object_get(status, "availableReplicas"))) {
		json_int_t want = json_integer_value(cv_get(out, "spec.replicas"));
		json_int_t un = want - json_integer_value(json_object_get(status, "availableReplicas"));

		json_object_set_new(status, "unavailableReplicas", json_integer(un < 0 ? 0 : un));
	}
	json_object_del(status, "availableReplicas");
	if (is_true_at(out, "status.initialization.controlPlaneInitialized"))
		json_object_set_new(status, "initialized", json_true());
	json_object_del(status, "initialization");
	json_object_del(status, "observedGeneration");
}

static const char *const oacp_hub_restore[] = { OAC_SPEC_HUB_ONLY("spec.openshiftAssistedConfigSpec."),
						 "status.availableReplicas", "status.observedGeneration", NULL };
static const char *const oacp_spoke_restore[] = { "status.clusterDeploymentRef", "status.failureReason",
						   "status.failureMessage", NULL };

const struct cv_version cv_capi_versions[] = {
	{ "bootstrap.cluster.x-k8s.io", "OpenshiftAssistedConfig", "v1alpha2", "v1alpha1",
	  oac_to_hub, oac_to_spoke, oac_hub_restore, oac_spoke_restore },
	{ "bootstrap.cluster.x-k8s.io", "OpenshiftAssistedConfigTemplate", "v1alpha2", "v1alpha1",
	  nothing, nothing, oact_hub_restore, NULL },
	{ "controlplane.cluster.x-k8s.io", "OpenshiftAssistedControlPlane", "v1alpha3", "v1alpha2",
	  oacp_to_hub, oacp_to_spoke, oacp_hub_restore, oacp_spoke_restore },
};
const unsigned cv_capi_versions_count = sizeof(cv_capi_versions) / sizeof(cv_capi_versions[0]);
