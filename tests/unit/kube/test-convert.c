/* Tests for src/kube/convert.c: events.k8s.io/v1 Events and core v1 Events
 * are one resource; every renamed field maps both ways, merge patches and
 * JSON Patch paths are rewritten, other kinds pass through untouched.  The
 * CRD versions (convert-capi.c): OpenshiftAssistedConfig v1alpha1 <->
 * v1alpha2 and OpenshiftAssistedControlPlane v1alpha2 <-> v1alpha3 with the
 * conversion-data annotation; Go durations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/convert.h"
#include "kube/registry.h"

static struct kube_registry *reg;

static int setup(void **state)
{
	ah_err err;

	(void)state;
	return kube_registry_new(&reg, &err);
}

static int teardown(void **state)
{
	(void)state;
	kube_registry_free(reg);
	return 0;
}

static json_t *parse(const char *s)
{
	json_error_t jerr;
	json_t *v = json_loads(s, 0, &jerr);

	if (!v)
		fail_msg("bad test JSON %s: %s", s, jerr.text);
	return v;
}

static void expect(const json_t *got, const char *want)
{
	json_t *w = parse(want);

	if (!json_equal(got, w)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);

		fail_msg("got  %s\nwant %s", g, want);
	}
	json_decref(w);
}

static const char core_event[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"},"
	"\"involvedObject\":{\"kind\":\"Agent\",\"name\":\"a\"},\"related\":{\"kind\":\"Pod\",\"name\":\"p\"},"
	"\"reason\":\"R\",\"message\":\"M\",\"source\":{\"component\":\"c\",\"host\":\"h\"},"
	"\"firstTimestamp\":\"2026-01-01T00:00:00Z\",\"lastTimestamp\":\"2026-01-02T00:00:00Z\","
	"\"count\":3,\"type\":\"Normal\",\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
	"\"series\":{\"count\":2,\"lastObservedTime\":\"2026-01-02T00:00:00.000000Z\"},"
	"\"action\":\"A\",\"reportingComponent\":\"rc\",\"reportingInstance\":\"ri\"}";
static const char v1_event[] =
	"{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"},"
	"\"regarding\":{\"kind\":\"Agent\",\"name\":\"a\"},\"related\":{\"kind\":\"Pod\",\"name\":\"p\"},"
	"\"reason\":\"R\",\"note\":\"M\",\"deprecatedSource\":{\"component\":\"c\",\"host\":\"h\"},"
	"\"deprecatedFirstTimestamp\":\"2026-01-01T00:00:00Z\",\"deprecatedLastTimestamp\":\"2026-01-02T00:00:00Z\","
	"\"deprecatedCount\":3,\"type\":\"Normal\",\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
	"\"series\":{\"count\":2,\"lastObservedTime\":\"2026-01-02T00:00:00.000000Z\"},"
	"\"action\":\"A\",\"reportingController\":\"rc\",\"reportingInstance\":\"ri\"}";

static void test_event_round_trip(void **state)
{
	const struct kube_kind *v1 = kube_registry_by_resource(reg, "events.k8s.io", "v1", "events");
	const struct kube_kind *core = kube_registry_by_resource(reg, "", "v1", "events");
	json_t *c = parse(core_event), *out, *back;

	(void)state;
	assert_non_null(v1);
	assert_non_null(core);
	assert_ptr_equal(v1->stored_as, core);
	assert_string_equal(v1->store_key, "events");
	assert_ptr_equal(kube_registry_by_store_key(reg, "events"), core);
	out = kube_convert(v1, c, false);
	expect(out, v1_event);
	back = kube_convert(v1, out, true);
	expect(back, core_event);
	json_decref(out);
	json_decref(back);
	/* The stored kind itself converts nothing. */
	out = kube_convert(core, c, false);
	assert_ptr_equal(out, c);
	json_decref(out);
	json_decref(c);
}

static void test_event_patches(void **state)
{
	const struct kube_kind *v1 = kube_registry_by_resource(reg, "events.k8s.io", "v1", "events");
	json_t *p = parse("{\"note\":\"new\",\"deprecatedCount\":null,\"message\":\"ignored\"}"), *out;
	char *s;

	(void)state;
	/* A merge patch renames what it has; a core name in a v1 body is no
	 * field of the v1 kind and is dropped. */
	out = kube_convert(v1, p, true);
	expect(out, "{\"message\":\"new\",\"count\":null}");
	json_decref(out);
	json_decref(p);
	s = kube_convert_json_pointer(v1, "/note");
	assert_string_equal(s, "/message");
	free(s);
	s = kube_convert_json_pointer(v1, "/regarding/name");
	assert_string_equal(s, "/involvedObject/name");
	free(s);
	s = kube_convert_json_pointer(v1, "/metadata/labels/x");
	assert_string_equal(s, "/metadata/labels/x");
	free(s);
	s = kube_convert_json_pointer(v1, "");
	assert_string_equal(s, "");
	free(s);
}

static const struct kube_kind *kind(const char *av, const char *k)
{
	const struct kube_kind *r = kube_registry_by_kind(reg, av, k);

	assert_non_null(r);
	return r;
}

static void test_registry_versions(void **state)
{
	const struct kube_kind *v1 = kind("bootstrap.cluster.x-k8s.io/v1alpha1", "OpenshiftAssistedConfig");
	const struct kube_kind *v2 = kind("bootstrap.cluster.x-k8s.io/v1alpha2", "OpenshiftAssistedConfig");
	const struct kube_kind *c3 = kind("controlplane.cluster.x-k8s.io/v1alpha3", "OpenshiftAssistedControlPlane");

	(void)state;
	assert_ptr_equal(v1->stored_as, v2);
	assert_null(v2->stored_as);
	assert_null(c3->stored_as);
	assert_true(kube_convert_is_version(v1));
	assert_false(kube_convert_is_version(v2));
	assert_string_equal(v1->store_key, v2->store_key);
	/* The store key names the stored kind, never a converted one. */
	assert_ptr_equal(kube_registry_by_store_key(reg, v1->store_key), v2);
	assert_ptr_equal(kube_registry_by_store_key(reg, c3->store_key), c3);
}

static void test_go_durations(void **state)
{
	static const struct { const char *in; long long secs; } good[] = {
		{ "0", 0 }, { "10s", 10 }, { "1m30s", 90 }, { "1h", 3600 }, { "1.5h", 5400 }, { "300ms", 0 },
		{ "2500ms", 2 }, { "-5s", -5 }, { "+1m", 60 }, { "1h2m3s4ms", 3723 }, { "3\xc2\xb5s", 0 },
		{ "99999999h", 2147483647 },
	};
	static const char *const bad[] = { "", "s", "10", "1x", "1e3s", "soon", "-", "1h-2m", " 1s", "1s ", "0x10s" };
	static const struct { long long secs; const char *out; } fmt[] = {
		{ 0, "0s" }, { 10, "10s" }, { 90, "1m30s" }, { 3600, "1h0m0s" }, { 3723, "1h2m3s" }, { -61, "-1m1s" },
	};
	char buf[64];
	long long v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(kube_parse_go_duration(good[i].in, &v), 0);
		if (v != good[i].secs)
			fail_msg("%s: got %lld want %lld", good[i].in, v, good[i].secs);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (kube_parse_go_duration(bad[i], &v) == 0)
			fail_msg("%s parsed as %lld", bad[i], v);
	for (i = 0; i < sizeof(fmt) / sizeof(fmt[0]); i++) {
		kube_format_go_duration(fmt[i].secs, buf, sizeof(buf));
		assert_string_equal(buf, fmt[i].out);
	}
}

static json_t *without_annotation(json_t *o)
{
	json_t *ann = json_object_get(json_object_get(o, "metadata"), "annotations");

	json_object_del(ann, KUBE_CONVERSION_DATA_ANNOTATION);
	if (json_is_object(ann) && !json_object_size(ann))
		json_object_del(json_object_get(o, "metadata"), "annotations");
	return o;
}

static void test_oac(void **state)
{
	const struct kube_kind *v1 = kind("bootstrap.cluster.x-k8s.io/v1alpha1", "OpenshiftAssistedConfig");
	json_t *spoke = parse("{\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha1\",\"kind\":\"OpenshiftAssistedConfig\","
			      "\"metadata\":{\"name\":\"c\"},\"spec\":{\"sshAuthorizedKey\":\"k\"},"
			      "\"status\":{\"ready\":true,\"dataSecretName\":\"\",\"agentRef\":{\"name\":\"a\"},"
			      "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	json_t *hub = kube_convert(v1, spoke, true), *ann, *back, *data;

	(void)state;
	ann = json_object_get(json_object_get(json_object_get(hub, "metadata"), "annotations"),
			      KUBE_CONVERSION_DATA_ANNOTATION);
	assert_true(json_is_string(ann));
	data = parse(json_string_value(ann));
	assert_string_equal(json_string_value(json_object_get(data, "apiVersion")), "bootstrap.cluster.x-k8s.io/v1alpha1");
	assert_null(json_object_get(data, "metadata"));
	json_decref(data);
	expect(without_annotation(json_deep_copy(hub)),
	       "{\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha2\",\"kind\":\"OpenshiftAssistedConfig\","
	       "\"metadata\":{\"name\":\"c\"},\"spec\":{\"sshAuthorizedKey\":\"k\"},"
	       "\"status\":{\"initialization\":{\"dataSecretCreated\":true},"
	       "\"v1beta1Conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	/* Back: agentRef comes from the annotation, the annotation now holds the hub. */
	back = kube_convert(v1, hub, false);
	expect(without_annotation(json_deep_copy(back)),
	       "{\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha1\",\"kind\":\"OpenshiftAssistedConfig\","
	       "\"metadata\":{\"name\":\"c\"},\"spec\":{\"sshAuthorizedKey\":\"k\"},"
	       "\"status\":{\"ready\":true,\"agentRef\":{\"name\":\"a\"},"
	       "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
	json_decref(back);
	json_decref(hub);
	json_decref(spoke);

	/* v1alpha2-only fields leave on the way to v1alpha1 and come back. */
	hub = parse("{\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha2\",\"kind\":\"OpenshiftAssistedConfig\","
		    "\"metadata\":{\"name\":\"c\"},\"spec\":{\"preBootstrapCommands\":[\"a\"],"
		    "\"nodeRegistration\":{\"name\":\"n\",\"providerID\":\"p\"}},"
		    "\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"\","
		    "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}],\"dataSecretName\":\"s\"}}");
	spoke = kube_convert(v1, hub, false);
	expect(json_object_get(spoke, "spec"), "{\"nodeRegistration\":{\"name\":\"n\"}}");
	expect(json_object_get(spoke, "status"), "{\"dataSecretName\":\"s\"}");
	back = kube_convert(v1, spoke, true);
	expect(json_object_get(back, "spec"), "{\"preBootstrapCommands\":[\"a\"],"
	       "\"nodeRegistration\":{\"name\":\"n\",\"providerID\":\"p\"}}");
	expect(json_object_get(json_object_get(back, "status"), "conditions"),
	       "[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"R\",\"message\":\"\","
	       "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]");
	json_decref(back);
	json_decref(spoke);
	json_decref(hub);
}

static void test_oacp(void **state)
{
	const struct kube_kind *v2 = kind("controlplane.cluster.x-k8s.io/v1alpha2", "OpenshiftAssistedControlPlane");
	json_t *spoke = parse("{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1alpha2\",\"kind\":\"OpenshiftAssistedControlPlane\","
			      "\"metadata\":{\"name\":\"cp\"},\"spec\":{\"replicas\":3,\"distributionVersion\":\"4.19.0\","
			      "\"machineTemplate\":{\"infrastructureRef\":{\"apiVersion\":\"infrastructure.cluster.x-k8s.io/v1beta1\","
			      "\"kind\":\"Metal3MachineTemplate\",\"name\":\"t\",\"uid\":\"u\"},\"nodeDrainTimeout\":\"2m\","
			      "\"nodeVolumeDetachTimeout\":\"bogus\"}},"
			      "\"status\":{\"initialized\":true,\"ready\":true,\"replicas\":0,\"updatedReplicas\":2,\"version\":\"\","
			      "\"failureReason\":\"f\",\"conditions\":[{\"type\":\"Available\",\"status\":\"False\","
			      "\"severity\":\"Warning\",\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
	json_t *hub = kube_convert_partial(v2, spoke, true), *back;

	(void)state;
	expect(hub, "{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1alpha3\",\"kind\":\"OpenshiftAssistedControlPlane\","
	       "\"metadata\":{\"name\":\"cp\"},\"spec\":{\"replicas\":3,\"distributionVersion\":\"4.19.0\","
	       "\"machineTemplate\":{\"infrastructureRef\":{\"apiGroup\":\"infrastructure.cluster.x-k8s.io\","
	       "\"kind\":\"Metal3MachineTemplate\",\"name\":\"t\"},\"deletion\":{\"nodeDrainTimeoutSeconds\":120}}},"
	       "\"status\":{\"initialization\":{\"controlPlaneInitialized\":true},\"upToDateReplicas\":2,"
	       "\"conditions\":[{\"type\":\"Available\",\"status\":\"False\",\"reason\":\"Unknown\",\"message\":\"\","
	       "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}");
	json_decref(hub);
	/* Whole objects: the reference's uid and the failure come back. */
	hub = kube_convert(v2, spoke, true);
	back = kube_convert(v2, hub, false);
	expect(json_object_get(json_object_get(back, "spec"), "machineTemplate"),
	       "{\"infrastructureRef\":{\"apiVersion\":\"infrastructure.cluster.x-k8s.io/v1beta1\","
	       "\"kind\":\"Metal3MachineTemplate\",\"name\":\"t\",\"uid\":\"u\"},\"nodeDrainTimeout\":\"2m0s\"}");
	assert_string_equal(json_string_value(json_object_get(json_object_get(back, "status"), "failureReason")), "f");
	assert_true(json_is_true(json_object_get(json_object_get(back, "status"), "initialized")));
	json_decref(back);
	json_decref(hub);
	json_decref(spoke);
	/* An object in another form is not converted. */
	spoke = parse("{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1alpha3\",\"kind\":\"OpenshiftAssistedControlPlane\"}");
	hub = kube_convert(v2, spoke, true);
	expect(hub, "{\"apiVersion\":\"controlplane.cluster.x-k8s.io/v1alpha3\",\"kind\":\"OpenshiftAssistedControlPlane\"}");
	json_decref(hub);
	json_decref(spoke);
}

static void test_oac_template(void **state)
{
	const struct kube_kind *v1 = kind("bootstrap.cluster.x-k8s.io/v1alpha1", "OpenshiftAssistedConfigTemplate");
	json_t *hub = parse("{\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha2\",\"kind\":\"OpenshiftAssistedConfigTemplate\","
			    "\"metadata\":{\"name\":\"t\",\"annotations\":{\"a\":\"b\"}},\"spec\":{\"template\":{"
			    "\"metadata\":{\"labels\":{\"l\":\"v\"}},\"spec\":{\"sshAuthorizedKey\":\"k\","
			    "\"postBootstrapCommands\":[\"x\"],\"bootstrapCommandSentinelDir\":\"/var/s\"}}}}");
	json_t *spoke = kube_convert(v1, hub, false), *back;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(spoke, "apiVersion")), "bootstrap.cluster.x-k8s.io/v1alpha1");
	expect(json_object_get(spoke, "spec"),
	       "{\"template\":{\"metadata\":{\"labels\":{\"l\":\"v\"}},\"spec\":{\"sshAuthorizedKey\":\"k\"}}}");
	/* Other annotations stay; the conversion data joins them. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(spoke, "metadata"),
									      "annotations"), "a")), "b");
	back = kube_convert(v1, spoke, true);
	assert_true(json_equal(json_object_get(back, "spec"), json_object_get(hub, "spec")));
	json_decref(back);
	json_decref(spoke);
	json_decref(hub);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_round_trip),
		cmocka_unit_test(test_event_patches),
		cmocka_unit_test(test_registry_versions),
		cmocka_unit_test(test_go_durations),
		cmocka_unit_test(test_oac),
		cmocka_unit_test(test_oacp),
		cmocka_unit_test(test_oac_template),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
