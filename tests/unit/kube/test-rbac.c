/* Tests for src/kube/rbac.c's pure part: PolicyRule matching (verbs, groups,
 * resources and subresources, "*" forms, resourceNames, non-resource URLs),
 * subject matching, the escalation "covers" check and kube-apiserver's
 * Forbidden wording.  One row per case. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/rbac.h"
#include "kube/registry.h"
#include "store/store.h"
#include "testutil.h"

#define N(rows) (sizeof(rows) / sizeof(rows[0]))

static json_t *J(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (!j)
		fail_msg("bad JSON in test: %s: %s", text, e.text);
	return j;
}

struct allow_row {
	const char *rule;
	const char *verb, *group, *resource, *sub, *name, *ns, *path; /* path set: non-resource */
	bool want;
};

#define AGENTS "{\"apiGroups\":[\"agent-install.openshift.io\"],\"resources\":[\"agents\"],\"verbs\":[\"get\",\"list\",\"watch\",\"patch\"]}"

static void test_rule_allows(void **state)
{
	static const struct allow_row rows[] = {
		{ AGENTS, "patch", "agent-install.openshift.io", "agents", "", "a1", "pool", NULL, true },
		{ AGENTS, "list", "agent-install.openshift.io", "agents", "", "", "pool", NULL, true },
		{ AGENTS, "delete", "agent-install.openshift.io", "agents", "", "a1", "pool", NULL, false },
		{ AGENTS, "get", "hive.openshift.io", "agents", "", "a1", "pool", NULL, false },
		{ AGENTS, "get", "agent-install.openshift.io", "infraenvs", "", "x", "pool", NULL, false },
		/* A subresource needs its own entry. */
		{ AGENTS, "patch", "agent-install.openshift.io", "agents", "status", "a1", "pool", NULL, false },
		{ "{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}", "deletecollection", "x.io", "things", "status", "", "", NULL, true },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"*/status\"],\"verbs\":[\"get\"]}", "get", "", "namespaces", "status", "n", "n", NULL, true },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"*/status\"],\"verbs\":[\"get\"]}", "get", "", "namespaces", "", "n", "n", NULL, false },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"serviceaccounts/token\"],\"verbs\":[\"create\"]}", "create", "", "serviceaccounts", "token", "sa", "ns", NULL, true },
		/* resourceNames: only the named objects, never a list or create. */
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"ps\"],\"verbs\":[\"get\",\"list\"]}", "get", "", "secrets", "", "ps", "ns", NULL, true },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"ps\"],\"verbs\":[\"get\",\"list\"]}", "get", "", "secrets", "", "bmc", "ns", NULL, false },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"ps\"],\"verbs\":[\"get\",\"list\"]}", "list", "", "secrets", "", "", "ns", NULL, false },
		/* Non-resource URLs: exact, trailing-* prefix, and never for resources. */
		{ "{\"nonResourceURLs\":[\"/apis/*\",\"/version\"],\"verbs\":[\"get\"]}", "get", NULL, NULL, NULL, NULL, NULL, "/apis/hive.openshift.io/v1", true },
		{ "{\"nonResourceURLs\":[\"/apis/*\",\"/version\"],\"verbs\":[\"get\"]}", "get", NULL, NULL, NULL, NULL, NULL, "/version", true },
		{ "{\"nonResourceURLs\":[\"/apis/*\",\"/version\"],\"verbs\":[\"get\"]}", "get", NULL, NULL, NULL, NULL, NULL, "/apis", false },
		{ "{\"nonResourceURLs\":[\"/apis/*\",\"/version\"],\"verbs\":[\"get\"]}", "post", NULL, NULL, NULL, NULL, NULL, "/version", false },
		{ "{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}", "get", "", "secrets", "", "x", "ns", NULL, false },
		{ "{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}", "get", NULL, NULL, NULL, NULL, NULL, "/healthz", false },
		{ "{\"verbs\":[]}", "get", "", "secrets", "", "x", "ns", NULL, false },
		{ "{\"apiGroups\":[\"\"],\"resources\":[\"users\"],\"verbs\":[\"impersonate\"]}", "impersonate", "", "users", "", "bob", "", NULL, true },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		const struct allow_row *r = &rows[i];
		struct rbac_attrs a = { .verb = r->verb, .resource_request = r->path == NULL, .group = r->group,
					.resource = r->resource, .subresource = r->sub, .name = r->name,
					.ns = r->ns, .path = r->path };
		json_t *rule = J(r->rule), *rules = json_array();

		json_array_append(rules, rule);
		if (rbac_rule_allows(rule, &a) != r->want || rbac_rules_allow(rules, &a) != r->want)
			fail_msg("row %zu: %s %s/%s/%s%s: want %d", i, r->rule, r->verb,
				 r->resource ? r->resource : "", r->sub ? r->sub : "", r->path ? r->path : "", r->want);
		json_decref(rule);
		json_decref(rules);
	}
}

static void test_subjects(void **state)
{
	static const struct {
		const char *subject, *binding_ns;
		bool want;
	} rows[] = {
		{ "{\"kind\":\"User\",\"name\":\"system:serviceaccount:pool:creator\"}", "", true },
		{ "{\"kind\":\"User\",\"name\":\"bob\"}", "", false },
		{ "{\"kind\":\"Group\",\"name\":\"system:serviceaccounts:pool\"}", "", true },
		{ "{\"kind\":\"Group\",\"name\":\"system:masters\"}", "", false },
		{ "{\"kind\":\"ServiceAccount\",\"name\":\"creator\",\"namespace\":\"pool\"}", "", true },
		/* A RoleBinding's ServiceAccount subject defaults to its namespace. */
		{ "{\"kind\":\"ServiceAccount\",\"name\":\"creator\"}", "pool", true },
		{ "{\"kind\":\"ServiceAccount\",\"name\":\"creator\"}", "", false },
		{ "{\"kind\":\"ServiceAccount\",\"name\":\"creator\",\"namespace\":\"other\"}", "pool", false },
		{ "{\"kind\":\"Robot\",\"name\":\"creator\"}", "pool", false },
		{ "{\"kind\":\"User\"}", "", false },
	};
	struct rbac_user u = { .name = "system:serviceaccount:pool:creator",
			       .groups = { "system:serviceaccounts", "system:serviceaccounts:pool", "system:authenticated" },
			       .ngroups = 3 };
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *s = J(rows[i].subject);

		if (rbac_subject_matches(s, rows[i].binding_ns, &u) != rows[i].want)
			fail_msg("row %zu: %s in %s: want %d", i, rows[i].subject, rows[i].binding_ns, rows[i].want);
		json_decref(s);
	}
	assert_true(rbac_user_in_group(&u, "system:authenticated"));
	assert_false(rbac_user_in_group(&u, RBAC_MASTERS));
}

static void test_uncovered(void **state)
{
	static const struct {
		const char *owner, *granted;
		size_t want_missing;
		const char *first; /* compact form of the first missing rule, when any */
	} rows[] = {
		{ "[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]",
		  "[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]},{\"nonResourceURLs\":[\"*\"],\"verbs\":[\"*\"]}]", 0, NULL },
		/* "*" asked for is covered only by "*" held. */
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\",\"list\",\"watch\",\"create\",\"update\",\"patch\",\"delete\",\"deletecollection\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"*\"]}]", 1,
		  "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}" },
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\",\"configmaps\"],\"verbs\":[\"get\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"verbs\":[\"get\"]}]", 0, NULL },
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\"],\"verbs\":[\"get\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"configmaps\",\"secrets\"],\"verbs\":[\"get\",\"list\"]}]", 3,
		  "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}" },
		/* Named grants are covered by unnamed holdings, not the reverse. */
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"ps\"],\"verbs\":[\"get\"]}]", 0, NULL },
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"resourceNames\":[\"ps\"],\"verbs\":[\"get\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"],\"verbs\":[\"get\"]}]", 1,
		  "{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}" },
		{ "[{\"apiGroups\":[\"\"],\"resources\":[\"*/status\"],\"verbs\":[\"get\"]}]",
		  "[{\"apiGroups\":[\"\"],\"resources\":[\"namespaces/status\"],\"verbs\":[\"get\"]}]", 0, NULL },
		{ "[{\"nonResourceURLs\":[\"/apis/*\"],\"verbs\":[\"get\"]}]",
		  "[{\"nonResourceURLs\":[\"/apis/hive.openshift.io\",\"/version\"],\"verbs\":[\"get\"]}]", 1,
		  "{NonResourceURLs:[\"/version\"], Verbs:[\"get\"]}" },
		{ "[]", "[]", 0, NULL },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *owner = J(rows[i].owner), *granted = J(rows[i].granted), *missing = json_array();
		size_t n = rbac_uncovered(owner, granted, missing);
		char buf[512] = "";

		if (n != rows[i].want_missing || json_array_size(missing) != n)
			fail_msg("row %zu: %zu missing, want %zu", i, n, rows[i].want_missing);
		if (rows[i].first) {
			rbac_rule_string(json_array_get(missing, 0), buf, sizeof(buf));
			if (strcmp(buf, rows[i].first) != 0)
				fail_msg("row %zu: first missing %s, want %s", i, buf, rows[i].first);
		}
		json_decref(owner);
		json_decref(granted);
		json_decref(missing);
	}
}

static void test_forbidden_reason(void **state)
{
	static const struct {
		struct rbac_attrs a;
		const char *want;
	} rows[] = {
		{ { "patch", true, "agent-install.openshift.io", "agents", "", "x", "pool", NULL },
		  "User \"system:serviceaccount:ns:sa\" cannot patch resource \"agents\" in API group \"agent-install.openshift.io\" in the namespace \"pool\"" },
		{ { "list", true, "", "secrets", "", "", "pool", NULL },
		  "User \"system:serviceaccount:ns:sa\" cannot list resource \"secrets\" in API group \"\" in the namespace \"pool\"" },
		{ { "create", true, "rbac.authorization.k8s.io", "clusterrolebindings", "", "", "", NULL },
		  "User \"system:serviceaccount:ns:sa\" cannot create resource \"clusterrolebindings\" in API group \"rbac.authorization.k8s.io\" at the cluster scope" },
		{ { "update", true, "agent-install.openshift.io", "agents", "status", "x", "pool", NULL },
		  "User \"system:serviceaccount:ns:sa\" cannot update resource \"agents/status\" in API group \"agent-install.openshift.io\" in the namespace \"pool\"" },
		{ { "get", false, NULL, NULL, NULL, NULL, NULL, "/metrics" },
		  "User \"system:serviceaccount:ns:sa\" cannot get path \"/metrics\"" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		char buf[600];

		rbac_forbidden_reason(&rows[i].a, "system:serviceaccount:ns:sa", buf, sizeof(buf));
		assert_string_equal(buf, rows[i].want);
	}
}

/* --- with a store: bootstrap, resolution, aggregation, cache invalidation */

struct fixture {
	char dir[64];
	store *s;
	struct kube_registry *reg;
	struct kube_api *api;
	struct rbac *rb;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	char db[128];
	ah_err err;

	assert_int_equal(tu_tmpdir(f->dir, sizeof(f->dir), "ah-test-rbac"), 0);
	snprintf(db, sizeof(db), "%s/db", f->dir);
	assert_int_equal(store_open(db, &so, &f->s), 0);
	assert_int_equal(kube_registry_new(&f->reg, &err), 0);
	assert_int_equal(kube_api_new(f->s, f->reg, &f->api, &err), 0);
	assert_int_equal(rbac_new(f->api, &f->rb, &err), 0);
	if (rbac_bootstrap(f->rb, &err) != 0)
		fail_msg("bootstrap: %s", err.message);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	rbac_free(f->rb);
	kube_api_free(f->api);
	kube_registry_free(f->reg);
	store_close(f->s);
	tu_tmpdir_remove(f->dir);
	free(f);
	return 0;
}

static int create(struct fixture *f, const char *plural, const char *ns, const char *text, ah_err *err)
{
	const struct kube_kind *k = kube_registry_by_resource(f->reg, strcmp(plural, "namespaces") == 0 ? "" : RBAC_GROUP,
							       "v1", plural);
	json_t *body = J(text), *ret = NULL;
	struct kube_opts o = { 0 };
	int r;

	assert_non_null(k);
	r = kube_create(f->api, k, ns, body, &o, &ret, err);
	json_decref(body);
	json_decref(ret);
	return r;
}

static int delete(struct fixture *f, const char *plural, const char *ns, const char *name)
{
	const struct kube_kind *k = kube_registry_by_resource(f->reg, RBAC_GROUP, "v1", plural);
	json_t *ret = NULL;
	struct kube_opts o = { 0 };
	ah_err err;
	int r = kube_delete(f->api, k, ns, name, &o, &ret, &err);

	json_decref(ret);
	return r;
}

static bool can(struct fixture *f, const char *user, const char *verb, const char *group,
		const char *resource, const char *ns)
{
	struct rbac_user u = { .name = user, .groups = { "system:authenticated" }, .ngroups = 1 };
	struct rbac_attrs a = { .verb = verb, .resource_request = true, .group = group, .resource = resource,
				.subresource = "", .name = "", .ns = ns };

	return rbac_allowed(f->rb, &u, &a);
}

static void test_store_resolution(void **state)
{
	struct fixture *f = *state;
	struct rbac_user masters = { .name = "system:admin", .groups = { RBAC_MASTERS }, .ngroups = 1 };
	struct rbac_attrs anything = { .verb = "delete", .resource_request = true, .group = "x", .resource = "y",
				       .subresource = "", .name = "z", .ns = "" };
	ah_err err;

	assert_true(rbac_allowed(f->rb, &masters, &anything));
	/* Bootstrap is idempotent. */
	assert_int_equal(rbac_bootstrap(f->rb, &err), 0);
	assert_int_equal(create(f, "namespaces", "", "{\"metadata\":{\"name\":\"pool\"}}", &err), 0);
	assert_false(can(f, "jane", "list", "agent-install.openshift.io", "agents", "pool"));
	/* Discovery is every authenticated user's. */
	{
		struct rbac_user u = { .name = "jane", .groups = { "system:authenticated" }, .ngroups = 1 };
		struct rbac_attrs a = { .verb = "get", .path = "/apis/hive.openshift.io/v1" };

		assert_true(rbac_allowed(f->rb, &u, &a));
		a.verb = "post";
		assert_false(rbac_allowed(f->rb, &u, &a));
	}
	/* A RoleBinding to the aggregated "view" takes effect at once, in its namespace only ... */
	assert_int_equal(create(f, "rolebindings", "pool",
				"{\"metadata\":{\"name\":\"jane\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
				"\"kind\":\"ClusterRole\",\"name\":\"view\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"jane\"}]}",
				&err), 0);
	assert_true(can(f, "jane", "list", "agent-install.openshift.io", "agents", "pool"));
	assert_false(can(f, "jane", "patch", "agent-install.openshift.io", "agents", "pool"));
	assert_false(can(f, "jane", "get", "", "secrets", "pool"));
	assert_false(can(f, "jane", "list", "agent-install.openshift.io", "agents", "other"));
	assert_false(can(f, "jane", "list", "agent-install.openshift.io", "agents", ""));
	/* ... a new aggregated-to-view role widens it (and edit, admin) ... */
	assert_false(can(f, "jane", "get", "", "widgets", "pool"));
	assert_int_equal(create(f, "clusterroles", "",
				"{\"metadata\":{\"name\":\"widgets\",\"labels\":{\"rbac.authorization.k8s.io/aggregate-to-view\":\"true\"}},"
				"\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"widgets\"],\"verbs\":[\"get\"]}]}", &err), 0);
	assert_true(can(f, "jane", "get", "", "widgets", "pool"));
	/* ... and deleting the binding takes it away (the cache follows the store). */
	assert_int_equal(delete(f, "rolebindings", "pool", "jane"), 0);
	assert_false(can(f, "jane", "list", "agent-install.openshift.io", "agents", "pool"));
	/* A ClusterRoleBinding to a Role-like ClusterRole applies everywhere. */
	assert_int_equal(create(f, "clusterrolebindings", "",
				"{\"metadata\":{\"name\":\"jane-edit\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
				"\"kind\":\"ClusterRole\",\"name\":\"edit\"},\"subjects\":[{\"kind\":\"User\",\"name\":\"jane\"}]}",
				&err), 0);
	assert_true(can(f, "jane", "get", "", "secrets", "other"));
	assert_true(can(f, "jane", "list", "agent-install.openshift.io", "agents", ""));
	assert_false(can(f, "jane", "create", RBAC_GROUP, "rolebindings", "pool"));
	assert_false(can(f, "bob", "get", "", "widgets", "pool"));
}

static void test_store_admission(void **state)
{
	struct fixture *f = *state;
	ah_err err;

	assert_int_equal(create(f, "namespaces", "", "{\"metadata\":{\"name\":\"pool\"}}", &err), 0);
	assert_int_equal(create(f, "rolebindings", "pool",
				"{\"metadata\":{\"name\":\"x\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
				"\"kind\":\"Foo\",\"name\":\"view\"}}", &err), -EINVAL);
	assert_int_equal(err.status, 422);
	assert_string_equal(err.message, "RoleBinding.rbac.authorization.k8s.io \"x\" is invalid: roleRef.kind: "
			    "Unsupported value: \"Foo\": supported values: \"Role\", \"ClusterRole\"");
	assert_int_equal(create(f, "clusterrolebindings", "",
				"{\"metadata\":{\"name\":\"x\"},\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\","
				"\"kind\":\"Role\",\"name\":\"view\"}}", &err), -EINVAL);
	assert_int_equal(create(f, "roles", "pool",
				"{\"metadata\":{\"name\":\"r\"},\"rules\":[{\"nonResourceURLs\":[\"/x\"],\"verbs\":[\"get\"]}]}",
				&err), -EINVAL);
	assert_non_null(strstr(err.message, "namespaced rules cannot apply to non-resource URLs"));
	assert_int_equal(create(f, "roles", "pool",
				"{\"metadata\":{\"name\":\"r\"},\"rules\":[{\"apiGroups\":[\"\"],\"resources\":[\"secrets\"]}]}",
				&err), -EINVAL);
	assert_non_null(strstr(err.message, "rules[0].verbs: Required value"));
	/* RBAC names are path segments: colons are fine. */
	assert_int_equal(create(f, "roles", "pool",
				"{\"metadata\":{\"name\":\"team:reader\"},\"rules\":[{\"apiGroups\":[\"\"],"
				"\"resources\":[\"configmaps\"],\"verbs\":[\"get\"]}]}", &err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_allows),
		cmocka_unit_test(test_subjects),
		cmocka_unit_test(test_uncovered),
		cmocka_unit_test(test_forbidden_reason),
		cmocka_unit_test_setup_teardown(test_store_resolution, setup, teardown),
		cmocka_unit_test_setup_teardown(test_store_admission, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
