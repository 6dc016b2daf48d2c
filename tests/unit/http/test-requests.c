/* The agent API and the image service called through the route table with
 * in-memory requests (no socket, no server): a real hub (hub_new: its
 * controllers on the runtime) over a real SQLite store and real signing
 * keys.  Covers authentication and refusals of the agent API (upstream's
 * error JSON) and of the image service (its text and JSON errors, 405),
 * that the dispatch reaches the right handler, and the success paths: a
 * host registers, is read back, gets its instructions, and the discovery
 * ignition downloads with the InfraEnv's token. */
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

#include "api/api-internal.h"
#include "base/util.h"
#include "http/router.h"
#include "image/jwt.h"
#include "kube/registry.h"
#include "store/store.h"

#define IE1 "0f6a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
#define IE2 "1f6a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"

struct fixture {
	char dir[64];
	struct kube_registry *reg;
	store *store;
	struct kube_api *api;
	struct hub *h;
	struct http_router router;
	char *token;  /* signed for IE1 */
};

static enum http_result not_found(void *cls, struct http_req *req)
{
	(void)cls;
	return http_reply(req, 404, "text/plain", "router 404", 10);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct store_options so = { .event_log_keep = 1000, .sync_full = 0 };
	json_t *claims;
	char db[128];
	ah_err err;

	snprintf(f->dir, sizeof(f->dir), "/tmp/ah-test-requests-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(db, sizeof(db), "%s/db", f->dir);
	assert_int_equal(store_open(db, &so, &f->store), 0);
	assert_int_equal(kube_registry_new(&f->reg, &err), 0);
	assert_int_equal(kube_api_new(f->store, f->reg, &f->api, &err), 0);
	{
		struct hub_config cfg = { .data_dir = f->dir, .service_url = "https://hub.example:6443" };

		if (hub_new(f->api, &cfg, &f->h, &err) < 0)
			fail_msg("hub_new: %s", err.message);
	}
	claims = json_pack("{s:s}", "infra_env_id", IE1);
	assert_int_equal(jwt_sign(f->h->keys, claims, &f->token), 0);
	json_decref(claims);
	http_router_init(&f->router);
	f->router.not_found = not_found;
	assert_int_equal(hub_add_routes(f->h, &f->router), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	hub_free(f->h);
	kube_api_free(f->api);
	kube_registry_free(f->reg);
	store_close(f->store);
	free(f->token);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cleanup of %s failed\n", f->dir);
	free(f);
	return 0;
}

/* Run one request through the route table; returns its response (owned by
 * req: release with http_req_release_test). */
static const struct http_response *call(struct fixture *f, struct http_req *req, const char *method,
					const char *path, const char *const *headers,
					const char *const *query, const char *body)
{
	http_req_init_test(req, method, path, headers, query, body, body ? strlen(body) : 0);
	assert_int_equal(http_router_dispatch(&f->router, req), HTTP_YES);
	assert_non_null(req->response);
	return req->response;
}

static json_t *body_json(const struct http_response *resp)
{
	json_t *j = json_loadb(resp->body, resp->len, 0, NULL);

	if (!j)
		fail_msg("not JSON: %.*s", (int)resp->len, resp->body);
	return j;
}

static void assert_upstream_error(const struct http_response *resp, unsigned code, const char *reason)
{
	json_t *j = body_json(resp);
	char codes[8];

	assert_int_equal(resp->status, code);
	snprintf(codes, sizeof(codes), "%u", code);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "Error");
	assert_string_equal(json_string_value(json_object_get(j, "code")), codes);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), reason);
	json_decref(j);
}

static void test_agent_api_authentication(void **state)
{
	struct fixture *f = *state;
	const char *no_key[] = { "Content-Type", "application/json", NULL };
	const char *bad_key[] = { "X-Secret-Key", "not-a-token", NULL };
	const char *good_key[] = { "X-Secret-Key", f->token, NULL };
	const struct http_response *resp;
	struct http_req req;
	json_t *j;

	/* No key, a bad key: 401 in upstream's {code, message} shape. */
	resp = call(f, &req, "POST", API_PREFIX "/infra-envs/" IE1 "/hosts", no_key, NULL, "{}");
	assert_int_equal(resp->status, 401);
	j = body_json(resp);
	assert_int_equal(json_integer_value(json_object_get(j, "code")), 401);
	assert_string_equal(json_string_value(json_object_get(j, "message")), "Unauthorized");
	json_decref(j);
	http_req_release_test(&req);
	resp = call(f, &req, "GET", API_PREFIX "/infra-envs/" IE1 "/hosts/h1/instructions", bad_key, NULL, NULL);
	assert_int_equal(resp->status, 401);
	http_req_release_test(&req);

	/* A key for another InfraEnv: 403 naming the one asked for. */
	resp = call(f, &req, "POST", API_PREFIX "/infra-envs/" IE2 "/hosts", good_key, NULL, "{}");
	assert_int_equal(resp->status, 403);
	j = body_json(resp);
	assert_string_equal(json_string_value(json_object_get(j, "message")),
			    "Forbidden: the token is not for infra-env " IE2);
	json_decref(j);
	http_req_release_test(&req);

	/* The right key, no such InfraEnv in the store: 404. */
	resp = call(f, &req, "POST", API_PREFIX "/infra-envs/" IE1 "/hosts", good_key, NULL, "{}");
	assert_upstream_error(resp, 404, "infra-env " IE1 " not found");
	http_req_release_test(&req);
}

static void test_agent_api_refusals(void **state)
{
	struct fixture *f = *state;
	const struct http_response *resp;
	struct http_req req;

	/* A path under the prefix that is no endpoint. */
	resp = call(f, &req, "GET", API_PREFIX "/clusters", NULL, NULL, NULL);
	assert_upstream_error(resp, 404, "path " API_PREFIX "/clusters not found");
	http_req_release_test(&req);

	/* A body over the bound (the server sets too_big): 413 before anything. */
	http_req_init_test(&req, "POST", API_PREFIX "/infra-envs/" IE1 "/hosts", NULL, NULL, NULL, 0);
	req.too_big = true;
	assert_int_equal(http_router_dispatch(&f->router, &req), HTTP_YES);
	assert_upstream_error(req.response, 413, "request body too large");
	http_req_release_test(&req);
}

static void test_image_service(void **state)
{
	struct fixture *f = *state;
	const char *bad_key[] = { "api_key", "bad", "version", "4.20", "arch", "x86_64", NULL };
	const struct http_response *resp;
	struct http_req req;

	/* Only GET and HEAD: 405 in text. */
	resp = call(f, &req, "POST", "/images/" IE1 "/pxe-initrd", NULL, NULL, NULL);
	assert_int_equal(resp->status, 405);
	assert_string_equal(http_response_header(resp, "Content-Type"), "text/plain; charset=utf-8");
	assert_memory_equal(resp->body, "method not allowed", resp->len);
	http_req_release_test(&req);

	/* A bad api_key on the initrd: 401 in text, as image-service. */
	resp = call(f, &req, "GET", "/images/" IE1 "/pxe-initrd", NULL, bad_key, NULL);
	assert_int_equal(resp->status, 401);
	assert_memory_equal(resp->body, "Unauthorized", resp->len);
	http_req_release_test(&req);

	/* The signed files under the agent API: no api_key, 401 in JSON. */
	resp = call(f, &req, "GET", API_PREFIX "/infra-envs/" IE1 "/downloads/files", NULL, NULL, NULL);
	assert_int_equal(resp->status, 401);
	http_req_release_test(&req);
	/* ... and only GET/HEAD there. */
	resp = call(f, &req, "PUT", API_PREFIX "/infra-envs/" IE1 "/downloads/files", NULL, NULL, NULL);
	assert_upstream_error(resp, 405, "method PUT is not allowed, but [GET] are");
	http_req_release_test(&req);

	/* A path of none of the services declines to the router's not_found. */
	resp = call(f, &req, "GET", "/images/" IE1, NULL, NULL, NULL);
	assert_int_equal(resp->status, 404);
	assert_memory_equal(resp->body, "router 404", resp->len);
	http_req_release_test(&req);
}

/* A pull secret and an InfraEnv in ns1, created through the kube API as a
 * user would; *ret_token: the InfraEnv's agent token (what its image
 * carries).  Returns the InfraEnv (new reference). */
static json_t *make_infraenv(struct fixture *f, char **ret_token)
{
	const struct kube_kind *ksec = kube_registry_by_kind(f->reg, "v1", "Secret");
	const struct kube_kind *kie = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "InfraEnv");
	const char *dockercfg = "{\"auths\":{\"quay.io\":{\"auth\":\"dXNlcjpwYXNz\"}}}";
	char *b64 = NULL;
	json_t *sec, *ie, *ret = NULL;
	ah_err err;

	{
		const struct kube_kind *kns = kube_registry_by_kind(f->reg, "v1", "Namespace");
		json_t *nso = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
					"ns1");

		if (kube_create(f->api, kns, "", nso, NULL, &ret, &err) < 0)
			fail_msg("creating the Namespace: %s", err.message);
		json_decref(nso);
		json_decref(ret);
		ret = NULL;
	}
	b64 = util_base64_encode(dockercfg, strlen(dockercfg));
	assert_non_null(b64);
	sec = json_pack("{s:s,s:s,s:{s:s,s:s},s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata", "name",
			"pull-secret", "namespace", "ns1", "type", "kubernetes.io/dockerconfigjson", "data",
			".dockerconfigjson", b64);
	free(b64);
	if (kube_create(f->api, ksec, "ns1", sec, NULL, &ret, &err) < 0)
		fail_msg("creating the Secret: %s", err.message);
	json_decref(sec);
	json_decref(ret);
	ie = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:{s:s},s:s}}", "apiVersion", "agent-install.openshift.io/v1beta1",
		       "kind", "InfraEnv", "metadata", "name", "ie1", "namespace", "ns1", "spec", "pullSecretRef",
		       "name", "pull-secret", "sshAuthorizedKey", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample");
	ret = NULL;
	if (kube_create(f->api, kie, "ns1", ie, NULL, &ret, &err) < 0)
		fail_msg("creating the InfraEnv: %s", err.message);
	json_decref(ie);
	if (hub_infraenv_token(f->h, ret, ret_token, &err) < 0)
		fail_msg("the InfraEnv token: %s", err.message);
	return ret;
}

static void test_agent_api_host_lifecycle(void **state)
{
	struct fixture *f = *state;
	const char *host_id = "2b7c1d2e-3f40-4a5b-9c6d-7e8f90a1b2c3";
	const struct http_response *resp;
	struct http_req req;
	char *token = NULL, path[256], body[256];
	json_t *ie = make_infraenv(f, &token), *j;
	const char *ie_id = json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid"));
	const char *key[] = { "X-Secret-Key", token, "Content-Type", "application/json", NULL };
	json_t *agent = NULL;
	ah_err err;

	/* Register: 201 with the host, its href and the step runner. */
	snprintf(path, sizeof(path), API_PREFIX "/infra-envs/%s/hosts", ie_id);
	snprintf(body, sizeof(body), "{\"host_id\":\"%s\",\"discovery_agent_version\":\"v1.0\"}", host_id);
	resp = call(f, &req, "POST", path, key, NULL, body);
	if (resp->status != 201)
		fail_msg("register: %u %.*s", resp->status, (int)resp->len, resp->body);
	j = body_json(resp);
	assert_string_equal(json_string_value(json_object_get(j, "id")), host_id);
	assert_string_equal(json_string_value(json_object_get(j, "infra_env_id")), ie_id);
	assert_non_null(strstr(json_string_value(json_object_get(j, "href")), host_id));
	assert_non_null(json_object_get(j, "next_step_runner_command"));
	assert_non_null(json_string_value(json_object_get(j, "status")));
	json_decref(j);
	http_req_release_test(&req);
	/* ... and its Agent exists, labelled with its InfraEnv. */
	assert_int_equal(kube_get(f->api, f->h->k_agent, "ns1", host_id, &agent, &err), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(agent, "metadata"), "labels"),
							      LABEL_INFRAENV)), "ie1");
	json_decref(agent);

	/* GET the host back. */
	snprintf(path, sizeof(path), API_PREFIX "/infra-envs/%s/hosts/%s", ie_id, host_id);
	resp = call(f, &req, "GET", path, key, NULL, NULL);
	if (resp->status != 200)
		fail_msg("get host: %u %.*s", resp->status, (int)resp->len, resp->body);
	j = body_json(resp);
	assert_string_equal(json_string_value(json_object_get(j, "id")), host_id);
	assert_non_null(json_string_value(json_object_get(j, "status")));
	json_decref(j);
	http_req_release_test(&req);

	/* Its instructions: 200 with the steps to run. */
	snprintf(path, sizeof(path), API_PREFIX "/infra-envs/%s/hosts/%s/instructions", ie_id, host_id);
	resp = call(f, &req, "GET", path, key, NULL, NULL);
	if (resp->status != 200)
		fail_msg("instructions: %u %.*s", resp->status, (int)resp->len, resp->body);
	j = body_json(resp);
	assert_true(json_is_array(json_object_get(j, "instructions")));
	assert_true(json_array_size(json_object_get(j, "instructions")) > 0);
	assert_non_null(json_string_value(json_object_get(json_array_get(json_object_get(j, "instructions"), 0),
							  "step_type")));
	json_decref(j);
	http_req_release_test(&req);

	/* Another host id under a path that is not a UUID: 400 naming it. */
	snprintf(path, sizeof(path), API_PREFIX "/infra-envs/%s/hosts/not-a-uuid", ie_id);
	resp = call(f, &req, "GET", path, key, NULL, NULL);
	assert_int_equal(resp->status, 400);
	http_req_release_test(&req);

	json_decref(ie);
	free(token);
}

static void test_image_service_ignition(void **state)
{
	struct fixture *f = *state;
	const struct http_response *resp;
	struct http_req req;
	char *token = NULL, path[256];
	json_t *ie = make_infraenv(f, &token), *j;
	const char *ie_id = json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid"));
	const char *q[] = { "api_key", token, "file_name", "discovery.ign", NULL };
	char *ign_text;

	snprintf(path, sizeof(path), API_PREFIX "/infra-envs/%s/downloads/files", ie_id);
	resp = call(f, &req, "GET", path, NULL, q, NULL);
	if (resp->status != 200)
		fail_msg("discovery.ign: %u %.*s", resp->status, (int)resp->len, resp->body);
	j = body_json(resp);
	/* An Ignition config that carries the InfraEnv's id and the SSH key. */
	assert_non_null(json_string_value(json_object_get(json_object_get(j, "ignition"), "version")));
	ign_text = json_dumps(j, JSON_COMPACT);
	assert_non_null(strstr(ign_text, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIexample"));
	free(ign_text);
	json_decref(j);
	assert_non_null(strstr(http_response_header(resp, "Content-Disposition"), "discovery.ign"));
	http_req_release_test(&req);

	/* A valid token of another infra-env (f->token names IE1): not
	 * found, as upstream answers, and nothing of the image served. */
	{
		const char *q2[] = { "api_key", f->token, "file_name", "discovery.ign", NULL };

		resp = call(f, &req, "GET", path, NULL, q2, NULL);
		assert_int_equal(resp->status, 404);
		assert_null(memmem(resp->body, resp->len, "ignition", 8));
		http_req_release_test(&req);
	}
	json_decref(ie);
	free(token);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agent_api_authentication, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_api_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_service, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_api_host_lifecycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_service_ignition, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
