/* Tests for src/controllers/capi-common.c: conditions merged by type (the
 * types other controllers own stay; lastTransitionTime moves only with the
 * status), v1beta1 conditions, owner references, reference keys and groups,
 * generated name suffixes, the machine-template-hash, and contract
 * references resolved to the storage version of a kind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "controllers/capi.h"
#include "kube/registry.h"

static const char *cs(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void test_cond_set_merges_by_type(void **state)
{
	json_t *conds = json_pack("[{s:s,s:s,s:s,s:s}]", "type", "UpToDate", "status", "True", "reason", "UpToDate",
				  "lastTransitionTime", "2026-01-01T00:00:00Z");
	const json_t *c;

	(void)state;
	capi_cond_set(conds, "Ready", "False", "NotReady", "waiting", 3, "2026-01-02T00:00:00Z");
	assert_int_equal(json_array_size(conds), 2);
	/* Another controller's condition stays as it was. */
	c = capi_cond_get(conds, "UpToDate");
	assert_string_equal(cs(c, "lastTransitionTime"), "2026-01-01T00:00:00Z");
	c = capi_cond_get(conds, "Ready");
	assert_string_equal(cs(c, "status"), "False");
	assert_string_equal(cs(c, "reason"), "NotReady");
	assert_string_equal(cs(c, "message"), "waiting");
	assert_int_equal(json_integer_value(json_object_get(c, "observedGeneration")), 3);
	assert_false(capi_cond_true(conds, "Ready"));

	/* Same status: the transition time stays, the rest follows. */
	capi_cond_set(conds, "Ready", "False", "NotReady", "still waiting", 4, "2026-01-03T00:00:00Z");
	c = capi_cond_get(conds, "Ready");
	assert_string_equal(cs(c, "lastTransitionTime"), "2026-01-02T00:00:00Z");
	assert_string_equal(cs(c, "message"), "still waiting");
	assert_int_equal(json_array_size(conds), 2);

	/* A new status: a new transition time; an empty message, no generation. */
	capi_cond_set(conds, "Ready", "True", "Ready", NULL, -1, "2026-01-04T00:00:00Z");
	c = capi_cond_get(conds, "Ready");
	assert_string_equal(cs(c, "lastTransitionTime"), "2026-01-04T00:00:00Z");
	assert_string_equal(cs(c, "message"), "");
	assert_null(json_object_get(c, "observedGeneration"));
	assert_true(capi_cond_true(conds, "Ready"));
	assert_null(capi_cond_get(conds, "Available"));
	json_decref(conds);
}

static void test_v1beta1_conditions(void **state)
{
	json_t *conds = json_array();
	const json_t *c;

	(void)state;
	capi_v1b1_cond_set(conds, "BootstrapReady", false, "WaitingForDataSecret", "Info", "m", "2026-01-01T00:00:00Z");
	c = capi_cond_get(conds, "BootstrapReady");
	assert_string_equal(cs(c, "status"), "False");
	assert_string_equal(cs(c, "reason"), "WaitingForDataSecret");
	assert_string_equal(cs(c, "severity"), "Info");
	capi_v1b1_cond_set(conds, "BootstrapReady", true, "WaitingForDataSecret", "Info", "m", "2026-01-02T00:00:00Z");
	c = capi_cond_get(conds, "BootstrapReady");
	/* True carries neither reason nor severity (upstream's v1beta1 shape). */
	assert_string_equal(cs(c, "status"), "True");
	assert_null(json_object_get(c, "reason"));
	assert_null(json_object_get(c, "severity"));
	assert_null(json_object_get(c, "message"));
	assert_string_equal(cs(c, "lastTransitionTime"), "2026-01-02T00:00:00Z");
	assert_int_equal(json_array_size(conds), 1);
	json_decref(conds);
}

static void test_owner_refs(void **state)
{
	json_t *cl = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion", "cluster.x-k8s.io/v1beta2", "kind", "Cluster",
			       "metadata", "name", "c1", "namespace", "ns", "uid", "u-1");
	json_t *ref = capi_owner_ref(cl, false), *refs, *meta;

	(void)state;
	assert_string_equal(cs(ref, "apiVersion"), "cluster.x-k8s.io/v1beta2");
	assert_string_equal(cs(ref, "kind"), "Cluster");
	assert_string_equal(cs(ref, "name"), "c1");
	assert_string_equal(cs(ref, "uid"), "u-1");
	assert_true(json_is_false(json_object_get(ref, "controller")));
	assert_true(json_is_true(json_object_get(ref, "blockOwnerDeletion")));
	refs = json_pack("[o,{s:s,s:s,s:s,s:s,s:b}]", ref, "apiVersion", "cluster.x-k8s.io/v1beta2", "kind", "MachineSet",
			 "name", "ms", "uid", "u-2", "controller", 1);
	assert_true(capi_owner_has(refs, "u-1"));
	assert_true(capi_owner_has(refs, "u-2"));
	assert_false(capi_owner_has(refs, "u-3"));
	meta = json_pack("{s:O}", "ownerReferences", refs);
	assert_string_equal(capi_owner_name(meta, "cluster.x-k8s.io", "MachineSet", true), "ms");
	assert_string_equal(capi_owner_name(meta, NULL, "Cluster", false), "c1");
	/* The Cluster reference is not a controller; another group does not match. */
	assert_null(capi_owner_name(meta, NULL, "Cluster", true));
	assert_null(capi_owner_name(meta, "cluster.x-k8s", "MachineSet", false));
	assert_null(capi_owner_name(meta, "controlplane.cluster.x-k8s.io", "MachineSet", false));
	json_decref(meta);
	json_decref(refs);
	json_decref(cl);
}

static void test_ref_key_and_group(void **state)
{
	json_t *v2 = json_pack("{s:s,s:s,s:s}", "apiGroup", "infrastructure.cluster.x-k8s.io", "kind", "Metal3Machine",
			       "name", "m1");
	json_t *v1 = json_pack("{s:s,s:s,s:s}", "apiVersion", "bootstrap.cluster.x-k8s.io/v1alpha1", "kind",
			       "OpenshiftAssistedConfig", "name", "m1");
	json_t *core = json_pack("{s:s,s:s,s:s}", "apiVersion", "v1", "kind", "Secret", "name", "s");
	json_t *bad = json_pack("{s:s}", "kind", "Metal3Machine");
	char buf[128];

	(void)state;
	assert_true(capi_ref_key(v2, "ns", buf, sizeof(buf)));
	assert_string_equal(buf, "Metal3Machine/ns/m1");
	assert_false(capi_ref_key(bad, "ns", buf, sizeof(buf)));
	assert_false(capi_ref_key(NULL, "ns", buf, sizeof(buf)));
	assert_false(capi_ref_key(v2, "ns", buf, 8)); /* does not fit */
	capi_ref_group(v2, buf, sizeof(buf));
	assert_string_equal(buf, "infrastructure.cluster.x-k8s.io");
	capi_ref_group(v1, buf, sizeof(buf));
	assert_string_equal(buf, "bootstrap.cluster.x-k8s.io");
	capi_ref_group(core, buf, sizeof(buf));
	assert_string_equal(buf, "");
	json_decref(v2);
	json_decref(v1);
	json_decref(core);
	json_decref(bad);
}

static void test_random_suffix(void **state)
{
	char a[8], b[8];
	int i, j, differ = 0;

	(void)state;
	for (i = 0; i < 50; i++) {
		assert_int_equal(capi_random_suffix(a), 0);
		assert_int_equal(capi_random_suffix(b), 0);
		assert_int_equal(strlen(a), 5);
		for (j = 0; j < 5; j++)
			assert_non_null(strchr("bcdfghjklmnpqrstvwxz2456789", a[j]));
		differ += strcmp(a, b) != 0;
	}
	assert_true(differ > 40);
}

static void test_template_hash(void **state)
{
	json_t *t1 = json_pack("{s:{s:{s:s}},s:{s:s}}", "metadata", "labels", "a", "b", "spec", "clusterName", "c");
	json_t *t2 = json_pack("{s:{s:s},s:{s:{s:s}}}", "spec", "clusterName", "c", "metadata", "labels", "a", "b");
	json_t *t3 = json_pack("{s:{s:{s:s}},s:{s:s}}", "metadata", "labels", "a", "x", "spec", "clusterName", "c");
	char h1[16], h2[16], h3[16];
	size_t i;

	(void)state;
	capi_template_hash(t1, h1, sizeof(h1));
	capi_template_hash(t2, h2, sizeof(h2));
	capi_template_hash(t3, h3, sizeof(h3));
	/* Key order does not matter; any change does. */
	assert_string_equal(h1, h2);
	assert_string_not_equal(h1, h3);
	assert_true(strlen(h1) > 0 && strlen(h1) <= 10);
	for (i = 0; h1[i]; i++)
		assert_non_null(strchr("bcdfghjklmnpqrstvwxz2456789", h1[i]));
	capi_template_hash(NULL, h3, sizeof(h3));
	assert_true(strlen(h3) > 0);
	json_decref(t1);
	json_decref(t2);
	json_decref(t3);
}

static const char two_versions[] =
	"apiVersion: apiextensions.k8s.io/v1\n"
	"kind: CustomResourceDefinition\n"
	"metadata:\n"
	"  name: widgettemplates.infrastructure.capi-test.example.com\n"
	"spec:\n"
	"  group: infrastructure.capi-test.example.com\n"
	"  names:\n"
	"    kind: WidgetTemplate\n"
	"    listKind: WidgetTemplateList\n"
	"    plural: widgettemplates\n"
	"    singular: widgettemplate\n"
	"  scope: Namespaced\n"
	"  versions:\n"
	"  - name: v1alpha1\n"
	"    served: true\n"
	"    storage: false\n"
	"    schema:\n"
	"      openAPIV3Schema:\n"
	"        type: object\n"
	"        x-kubernetes-preserve-unknown-fields: true\n"
	"  - name: v1alpha2\n"
	"    served: true\n"
	"    storage: true\n"
	"    schema:\n"
	"      openAPIV3Schema:\n"
	"        type: object\n"
	"        x-kubernetes-preserve-unknown-fields: true\n";

static void test_ref_kind_resolves_storage_version(void **state)
{
	struct kube_registry *reg = NULL;
	const struct kube_kind *k;
	json_t *ref;
	ah_err err;

	(void)state;
	assert_int_equal(kube_registry_new(&reg, &err), 0);
	assert_int_equal(kube_registry_add_crd_text(reg, two_versions, sizeof(two_versions) - 1, "test", &err), 0);
	k = capi_kind(reg, "infrastructure.capi-test.example.com", "WidgetTemplate");
	assert_non_null(k);
	assert_string_equal(k->version, "v1alpha2");
	/* A v1beta2 reference names no version; a v1beta1 one names an old
	 * version: both resolve to the kind's stored version. */
	ref = json_pack("{s:s,s:s,s:s}", "apiGroup", "infrastructure.capi-test.example.com", "kind", "WidgetTemplate",
			"name", "w");
	k = capi_ref_kind(reg, ref);
	assert_non_null(k);
	assert_string_equal(k->version, "v1alpha2");
	json_decref(ref);
	ref = json_pack("{s:s,s:s,s:s}", "apiVersion", "infrastructure.capi-test.example.com/v1alpha1", "kind",
			"WidgetTemplate", "name", "w");
	k = capi_ref_kind(reg, ref);
	assert_non_null(k);
	assert_string_equal(k->version, "v1alpha2");
	json_decref(ref);
	ref = json_pack("{s:s,s:s,s:s}", "apiGroup", "infrastructure.capi-test.example.com", "kind", "Gadget", "name", "w");
	assert_null(capi_ref_kind(reg, ref));
	json_decref(ref);
	assert_null(capi_ref_kind(reg, NULL));
	assert_null(capi_kind(reg, "other.example.com", "WidgetTemplate"));
	kube_registry_free(reg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cond_set_merges_by_type),
		cmocka_unit_test(test_v1beta1_conditions),
		cmocka_unit_test(test_owner_refs),
		cmocka_unit_test(test_ref_key_and_group),
		cmocka_unit_test(test_random_suffix),
		cmocka_unit_test(test_template_hash),
		cmocka_unit_test(test_ref_kind_resolves_storage_version),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
