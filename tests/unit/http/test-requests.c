/* The agent API and the image service called through the route table with
 * in-memory requests (no socket, no server): a partial hub over a real
 * SQLite store and real signing keys, as tests/unit/controllers does, with
 * no controller threads.  Covers authentication and refusals of the agent
 * API (upstream's error JSON) and of the image service (its text and JSON
 * errors, 405), and that the dispatch reaches the right handler. */
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
#include "http/router.h"
#include "image/jwt.h"
#include "kube/registry.h"
#include "store/store.h"

#define IE1 "0f6a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"
#define IE2 "1f6a1b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b"

struct fixture {
	char dir[64];
	struct kube_registry *reg;
	struct hub h;
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
	assert_int_equal(store_open(db, &so, &f->h.store), 0);
	assert_int_equal(kube_registry_new(&f->reg, &err), 0);
	assert_int_equal(kube_api_new(f->h.store, f->reg, &f->h.api, &err), 0);
	f->h.reg = f->reg;
	f->h.k_infraenv = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "InfraEnv");
	f->h.k_agent = kube_registry_by_kind(f->reg, "agent-install.openshift.io/v1beta1", "Agent");
	f->h.service_url = strdup("https://hub.example:6443");
	pthread_mutex_init(&f->h.ie_lock, NULL);
	f->h.ie_by_uid = json_object();
	assert_int_equal(jwt_keys_load_or_create(f->dir, &f->h.keys, &err), 0);
	claims = json_pack("{s:s}", "infra_env_id", IE1);
	assert_int_equal(jwt_sign(f->h.keys, claims, &f->token), 0);
	json_decref(claims);
	http_router_init(&f->router);
	f->router.not_found = not_found;
	assert_int_equal(hub_add_routes(&f->h, &f->router), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	kube_api_free(f->h.api);
	kube_registry_free(f->reg);
	store_close(f->h.store);
	jwt_keys_free(f->h.keys);
	json_decref(f->h.ie_by_uid);
	pthread_mutex_destroy(&f->h.ie_lock);
	free(f->h.service_url);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_agent_api_authentication, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_api_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_image_service, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
