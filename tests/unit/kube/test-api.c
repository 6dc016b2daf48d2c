/* Tests for src/kube/api.c: Kubernetes object semantics over a real SQLite
 * store in a temporary directory, with the project's embedded CRDs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "kube/api.h"
#include "kube/registry.h"
#include "store/store.h"

struct fixture {
	char dir[64];
	store *s;
	struct kube_registry *reg;
	struct kube_api *api;
	const struct kube_kind *agent, *cm, *ns, *infraenv;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	char db[128];
	ah_err err;

	snprintf(f->dir, sizeof(f->dir), "/tmp/ah-test-api-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(db, sizeof(db), "%s/db", f->dir);
	assert_int_equal(store_open(db, &so, &f->s), 0);
	assert_int_equal(kube_registry_new(&f->reg, &err), 0);
	assert_int_equal(kube_api_new(f->s, f->reg, &f->api, &err), 0);
	f->agent = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "Agent");
	f->infraenv = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "InfraEnv");
	f->cm = kube_registry_by_kind(f->reg, "v1", "ConfigMap");
	f->ns = kube_registry_by_kind(f->reg, "v1", "Namespace");
	assert_non_null(f->agent);
	assert_non_null(f->cm);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	kube_api_free(f->api);
	kube_registry_free(f->reg);
	store_close(f->s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", f->dir);
	free(f);
	return 0;
}

static json_t *agent_body(const char *name, bool approved)
{
	return json_pack("{s:s,s:s,s:{s:s},s:{s:b,s:s}}", "apiVersion", "agent-install.openshift.io/v1beta1",
			 "kind", "Agent", "metadata", "name", name, "spec", "approved", approved, "role", "");
}

static const char *meta(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(json_object_get(o, "metadata"), k));
}

static json_int_t gen(const json_t *o)
{
	return json_integer_value(json_object_get(json_object_get(o, "metadata"), "generation"));
}

static void test_create_sets_server_fields(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a1", false), *o = NULL, *g = NULL;
	ah_err err;

	json_object_set_new(json_object_get(b, "metadata"), "uid", json_string("client-uid"));
	json_object_set_new(b, "status", json_pack("{s:s}", "role", "master"));
	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), 0);
	assert_string_not_equal(meta(o, "uid"), "client-uid");
	assert_non_null(meta(o, "resourceVersion"));
	assert_non_null(meta(o, "creationTimestamp"));
	assert_string_equal(meta(o, "namespace"), "default");
	assert_int_equal(gen(o), 1);
	/* Status is ignored on create for a kind with a status subresource. */
	assert_null(json_object_get(o, "status"));
	assert_int_equal(kube_get(f->api, f->agent, "default", "a1", &g, &err), 0);
	assert_true(json_equal(o, g));
	json_decref(o);
	json_decref(g);
	o = NULL;
	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), -EEXIST);
	assert_int_equal(err.status, 409);
	assert_string_equal(err.reason, "AlreadyExists");
	json_decref(b);
}

static void test_create_in_missing_namespace(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a1", false), *o = NULL;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->agent, "nope", b, NULL, &o, &err), -ENOENT);
	assert_int_equal(err.status, 404);
	assert_string_equal(err.message, "namespaces \"nope\" not found");
	json_decref(b);
}

static void test_generate_name(void **state)
{
	struct fixture *f = *state;
	json_t *b = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
			      "generateName", "cfg-"), *o1 = NULL, *o2 = NULL;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->cm, "default", b, NULL, &o1, &err), 0);
	assert_int_equal(kube_create(f->api, f->cm, "default", b, NULL, &o2, &err), 0);
	assert_int_equal(strncmp(meta(o1, "name"), "cfg-", 4), 0);
	assert_int_equal(strlen(meta(o1, "name")), 9);
	assert_string_not_equal(meta(o1, "name"), meta(o2, "name"));
	json_decref(o1);
	json_decref(o2);
	json_decref(b);
}

static void test_validation_names_the_field(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a2", false), *o = NULL, *causes = json_array();
	struct kube_opts opts = { .causes = causes };
	ah_err err;

	json_object_set_new(json_object_get(b, "spec"), "approved", json_string("string"));
	assert_int_equal(kube_create(f->api, f->agent, "default", b, &opts, &o, &err), -EINVAL);
	assert_int_equal(err.status, 422);
	assert_string_equal(err.reason, "Invalid");
	assert_non_null(strstr(err.message,
			       "spec.approved: Invalid value: \"string\": spec.approved in body must be of type boolean"));
	assert_true(json_array_size(causes) >= 1);
	/* Nothing was stored. */
	assert_int_equal(kube_get(f->api, f->agent, "default", "a2", &o, &err), -ENOENT);
	json_decref(causes);
	json_decref(b);
}

static void test_update_conflict_and_generation(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a3", false), *o = NULL, *u = NULL, *stale;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), 0);
	stale = json_deep_copy(o);
	json_object_set_new(json_object_get(o, "spec"), "approved", json_true());
	assert_int_equal(kube_update(f->api, f->agent, "default", "a3", o, NULL, &u, &err), 0);
	assert_int_equal(gen(u), 2);
	assert_string_not_equal(meta(u, "resourceVersion"), meta(stale, "resourceVersion"));
	json_decref(u);
	u = NULL;
	/* A metadata-only change keeps the generation. */
	{
		json_t *lp = json_pack("{s:{s:{s:s}}}", "metadata", "labels", "a", "b");

		assert_int_equal(kube_patch(f->api, f->agent, "default", "a3", "application/merge-patch+json",
					    lp, NULL, &u, &err), 0);
		json_decref(lp);
	}
	assert_int_equal(gen(u), 2);
	json_decref(u);
	u = NULL;
	/* The stale copy is refused with 409. */
	json_object_set_new(json_object_get(stale, "spec"), "hostname", json_string("x"));
	assert_int_equal(kube_update(f->api, f->agent, "default", "a3", stale, NULL, &u, &err), -ESTALE);
	assert_int_equal(err.status, 409);
	assert_string_equal(err.reason, "Conflict");
	assert_non_null(strstr(err.message, "the object has been modified"));
	json_decref(stale);
	json_decref(o);
	json_decref(b);
}

static void test_status_subresource(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a4", false), *o = NULL, *u = NULL, *p;
	struct kube_opts st = { .status = true };
	ah_err err;

	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), 0);
	p = json_pack("{s:{s:s},s:{s:b}}", "status", "role", "master", "spec", "approved", 1);
	assert_int_equal(kube_patch(f->api, f->agent, "default", "a4", "application/merge-patch+json", p,
				    &st, &u, &err), 0);
	/* Status changed, spec did not, generation did not move. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(u, "status"), "role")), "master");
	assert_true(json_is_false(json_object_get(json_object_get(u, "spec"), "approved")));
	assert_int_equal(gen(u), 1);
	json_decref(u);
	u = NULL;
	/* On the main resource, status is ignored. */
	json_decref(p);
	p = json_pack("{s:{s:s},s:{s:b}}", "status", "role", "worker", "spec", "approved", 1);
	assert_int_equal(kube_patch(f->api, f->agent, "default", "a4", "application/merge-patch+json", p,
				    NULL, &u, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(u, "status"), "role")), "master");
	assert_true(json_is_true(json_object_get(json_object_get(u, "spec"), "approved")));
	assert_int_equal(gen(u), 2);
	json_decref(u);
	json_decref(p);
	json_decref(o);
	json_decref(b);
}

static void test_noop_update_writes_nothing(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a5", false), *o = NULL, *u = NULL, *p = json_object();
	int64_t before;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), 0);
	before = store_current_rev(f->s);
	assert_int_equal(kube_patch(f->api, f->agent, "default", "a5", "application/merge-patch+json", p,
				    NULL, &u, &err), 0);
	assert_int_equal(store_current_rev(f->s), before);
	assert_string_equal(meta(u, "resourceVersion"), meta(o, "resourceVersion"));
	json_decref(u);
	json_decref(p);
	json_decref(o);
	json_decref(b);
}

static void test_finalizers_hold_deletion(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a6", false), *o = NULL, *d = NULL, *u = NULL, *p;
	ah_err err;

	json_object_set_new(json_object_get(b, "metadata"), "finalizers", json_pack("[s]", "example.com/hold"));
	assert_int_equal(kube_create(f->api, f->agent, "default", b, NULL, &o, &err), 0);
	assert_int_equal(kube_delete(f->api, f->agent, "default", "a6", NULL, &d, &err), 0);
	assert_non_null(meta(d, "deletionTimestamp"));
	json_decref(d);
	d = NULL;
	/* Still there; no new finalizers may be added now. */
	assert_int_equal(kube_get(f->api, f->agent, "default", "a6", &d, &err), 0);
	json_decref(d);
	p = json_pack("{s:{s:[ss]}}", "metadata", "finalizers", "example.com/hold", "example.com/new");
	assert_int_equal(kube_patch(f->api, f->agent, "default", "a6", "application/merge-patch+json", p,
				    NULL, &u, &err), -EINVAL);
	assert_int_equal(err.status, 422);
	json_decref(p);
	/* Removing the finalizer completes the deletion. */
	p = json_pack("{s:{s:n}}", "metadata", "finalizers");
	assert_int_equal(kube_patch(f->api, f->agent, "default", "a6", "application/merge-patch+json", p,
				    NULL, &u, &err), 0);
	json_decref(u);
	d = NULL;
	assert_int_equal(kube_get(f->api, f->agent, "default", "a6", &d, &err), -ENOENT);
	json_decref(p);
	json_decref(o);
	json_decref(b);
}

static bool wait_gone(struct fixture *f, const struct kube_kind *k, const char *ns, const char *name)
{
	int i;

	for (i = 0; i < 100; i++) {
		json_t *o = NULL;
		ah_err err;

		if (kube_get(f->api, k, ns, name, &o, &err) == -ENOENT)
			return true;
		json_decref(o);
		usleep(50 * 1000);
	}
	return false;
}

static void test_owner_references_cascade(void **state)
{
	struct fixture *f = *state;
	json_t *owner = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap", "metadata",
				  "name", "owner"), *o = NULL, *d = NULL, *dep, *x = NULL;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->cm, "default", owner, NULL, &o, &err), 0);
	dep = agent_body("a7", false);
	json_object_set_new(json_object_get(dep, "metadata"), "ownerReferences",
			    json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "ConfigMap", "name",
				      "owner", "uid", meta(o, "uid")));
	assert_int_equal(kube_create(f->api, f->agent, "default", dep, NULL, &x, &err), 0);
	json_decref(x);
	assert_int_equal(kube_delete(f->api, f->cm, "default", "owner", NULL, &d, &err), 0);
	assert_true(wait_gone(f, f->agent, "default", "a7"));
	json_decref(d);
	json_decref(dep);
	json_decref(o);
	json_decref(owner);
}

static void test_namespace_termination(void **state)
{
	struct fixture *f = *state;
	json_t *nsb = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
				"name", "tmp"), *o = NULL, *d = NULL, *b = agent_body("a8", false), *x = NULL;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->ns, "", nsb, NULL, &o, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "status"), "phase")), "Active");
	assert_int_equal(kube_create(f->api, f->agent, "tmp", b, NULL, &x, &err), 0);
	json_decref(x);
	assert_int_equal(kube_delete(f->api, f->ns, "", "tmp", NULL, &d, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(d, "status"), "phase")), "Terminating");
	/* The namespace was seen (and cached) by the create above: a create
	 * now must still see it terminating, and once gone, missing. */
	{
		json_t *b2 = agent_body("a9", false), *y = NULL;
		int r = kube_create(f->api, f->agent, "tmp", b2, NULL, &y, &err);

		assert_true(r < 0);
		assert_true(err.status == 403 || err.status == 404);
		json_decref(y);
		y = NULL;
		assert_true(wait_gone(f, f->agent, "tmp", "a8"));
		assert_true(wait_gone(f, f->ns, "", "tmp"));
		assert_int_equal(kube_create(f->api, f->agent, "tmp", b2, NULL, &y, &err), -ENOENT);
		assert_int_equal(err.status, 404);
		json_decref(b2);
	}
	json_decref(d);
	json_decref(o);
	json_decref(nsb);
	json_decref(b);
}

static void test_dry_run_stores_nothing(void **state)
{
	struct fixture *f = *state;
	json_t *b = agent_body("a9", false), *o = NULL;
	struct kube_opts dry = { .dry_run = true };
	int64_t before = store_current_rev(f->s);
	ah_err err;

	assert_int_equal(kube_create(f->api, f->agent, "default", b, &dry, &o, &err), 0);
	assert_string_equal(meta(o, "name"), "a9");
	json_decref(o);
	o = NULL;
	assert_int_equal(store_current_rev(f->s), before);
	assert_int_equal(kube_get(f->api, f->agent, "default", "a9", &o, &err), -ENOENT);
	json_decref(b);
}

static void test_defaulting_from_crd(void **state)
{
	struct fixture *f = *state;
	json_t *b = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:s},s:s}}", "apiVersion",
			      "agent-install.openshift.io/v1beta1", "kind", "InfraEnv", "metadata", "name",
			      "ie", "spec", "pullSecretRef", "name", "ps", "unknownField", "x"), *o = NULL;
	ah_err err;

	assert_int_equal(kube_create(f->api, f->infraenv, "default", b, NULL, &o, &err), 0);
	/* Unknown fields are pruned; CRD defaults are applied. */
	assert_null(json_object_get(json_object_get(o, "spec"), "unknownField"));
	assert_string_equal(json_string_value(json_object_get(json_object_get(o, "spec"), "cpuArchitecture")),
			    "x86_64");
	json_decref(o);
	json_decref(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_create_sets_server_fields, setup, teardown),
		cmocka_unit_test_setup_teardown(test_create_in_missing_namespace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_generate_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_validation_names_the_field, setup, teardown),
		cmocka_unit_test_setup_teardown(test_update_conflict_and_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_subresource, setup, teardown),
		cmocka_unit_test_setup_teardown(test_noop_update_writes_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finalizers_hold_deletion, setup, teardown),
		cmocka_unit_test_setup_teardown(test_owner_references_cascade, setup, teardown),
		cmocka_unit_test_setup_teardown(test_namespace_termination, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dry_run_stores_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_defaulting_from_crd, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
