/* Tests for src/http/router.c and the in-memory request/response objects of
 * src/http/server.c: patterns, first match, methods (405 vs 404), declining
 * handlers, the table bound, and handlers called without a socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/router.h"
#include "http/server.h"

static void test_pattern_match(void **state)
{
	static const struct {
		const char *pattern, *path;
		bool match;
	} rows[] = {
		{ "/readyz", "/readyz", true },
		{ "/readyz", "/readyz/", false },
		{ "/readyz", "/ready", false },
		{ "/readyz", "/readyzz", false },
		{ "/api/**", "/api", true },
		{ "/api/**", "/api/", true },
		{ "/api/**", "/api/v1/namespaces/x", true },
		{ "/api/**", "/apis/x", false },
		{ "/api/**", "/ap", false },
		{ "/a/*/b", "/a/x/b", true },
		{ "/a/*/b", "/a//b", false },
		{ "/a/*/b", "/a/x/y/b", false },
		{ "/a/*/b", "/a/x/b/", false },
		{ "/a/*/b", "/a/x", false },
		{ "/x/*/downloads/files", "/x/0f6a/downloads/files", true },
		{ "/x/*/downloads/files", "/x/0f6a/downloads/file", false },
		{ "/x/*/**", "/x/id", true },
		{ "/x/*/**", "/x/id/more/segments", true },
		{ "/x/*/**", "/x", false },
		{ "/", "/", true },
		{ "/**", "/anything/at/all", true },
		{ "/a", "", false },
		{ "/a", "a", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (http_pattern_match(rows[i].pattern, rows[i].path) != rows[i].match)
			fail_msg("pattern %s path \"%s\": expected %s", rows[i].pattern, rows[i].path,
				 rows[i].match ? "a match" : "no match");
	}
}

static int noop_calls;

static enum http_result noop(void *cls, struct http_req *req)
{
	(void)cls;
	(void)req;
	noop_calls++;
	return HTTP_YES;
}

static void test_add_bounds_and_bad_patterns(void **state)
{
	struct http_router r;

	(void)state;
	http_router_init(&r);
	assert_int_equal(http_router_add(&r, NULL, "no-slash", noop, NULL), -EINVAL);
	assert_int_equal(http_router_add(&r, NULL, "/a/**/b", noop, NULL), -EINVAL);
	assert_int_equal(http_router_add(&r, NULL, "/a**", noop, NULL), -EINVAL);
	assert_int_equal(http_router_add(&r, NULL, "/a", NULL, NULL), -EINVAL);
	for (int i = 0; i < HTTP_ROUTER_MAX; i++)
		assert_int_equal(http_router_add(&r, "GET", "/a", noop, NULL), 0);
	assert_int_equal(http_router_add(&r, "GET", "/a", noop, NULL), -E2BIG);
	assert_int_equal(r.n, HTTP_ROUTER_MAX);
}

/* Handlers that answer with their name, so a test sees which one ran. */
static enum http_result answer(void *cls, struct http_req *req)
{
	return http_reply(req, 200, "text/plain", cls, strlen(cls));
}

static enum http_result decline(void *cls, struct http_req *req)
{
	(void)cls;
	(void)req;
	return HTTP_NEXT;
}

static enum http_result not_allowed(void *cls, struct http_req *req)
{
	(void)cls;
	return http_reply(req, 405, "text/plain", "405", 3);
}

/* Dispatch an in-memory request; returns the status, *body the answer. */
static unsigned run(struct http_router *r, const char *method, const char *path, char *body, size_t size)
{
	struct http_req req;
	unsigned status;

	http_req_init_test(&req, method, path, NULL, NULL, NULL, 0);
	assert_int_equal(http_router_dispatch(r, &req), HTTP_YES);
	assert_non_null(req.response);
	status = req.response->status;
	snprintf(body, size, "%.*s", (int)req.response->len, req.response->body ? req.response->body : "");
	http_req_release_test(&req);
	return status;
}

static void test_dispatch(void **state)
{
	struct http_router r;
	char body[64];

	(void)state;
	http_router_init(&r);
	assert_int_equal(http_router_add(&r, NULL, "/api/x/*/files", answer, "files"), 0);
	assert_int_equal(http_router_add(&r, "GET", "/api/x/events", answer, "events"), 0);
	assert_int_equal(http_router_add(&r, NULL, "/api/x/**", decline, NULL), 0);
	assert_int_equal(http_router_add(&r, NULL, "/api/**", answer, "kube"), 0);
	assert_int_equal(http_router_add(&r, "POST", "/only-post", answer, "post"), 0);

	/* First match wins; a more general route later does not. */
	assert_int_equal(run(&r, "GET", "/api/x/abc/files", body, sizeof(body)), 200);
	assert_string_equal(body, "files");
	assert_int_equal(run(&r, "GET", "/api/x/events", body, sizeof(body)), 200);
	assert_string_equal(body, "events");
	/* A method that does not fit skips the route; a declining handler
	 * passes the request on. */
	assert_int_equal(run(&r, "DELETE", "/api/x/events", body, sizeof(body)), 200);
	assert_string_equal(body, "kube");
	assert_int_equal(run(&r, "GET", "/api/x/other", body, sizeof(body)), 200);
	assert_string_equal(body, "kube");
	/* No path matches: not_found (the built-in 404 when unset). */
	assert_int_equal(run(&r, "GET", "/nothing", body, sizeof(body)), 404);
	/* The path matches, not the method: 404 without not_allowed, 405 with. */
	assert_int_equal(run(&r, "GET", "/only-post", body, sizeof(body)), 404);
	r.not_allowed = not_allowed;
	assert_int_equal(run(&r, "GET", "/only-post", body, sizeof(body)), 405);
	assert_int_equal(run(&r, "POST", "/only-post", body, sizeof(body)), 200);
	assert_string_equal(body, "post");
}

static void test_request_and_response_objects(void **state)
{
	static const char *const headers[] = { "Content-Type", "application/json", "X-Secret-Key", "k", NULL };
	static const char *const query[] = { "a", "1", "b", "two", NULL };
	struct http_response *resp;
	struct http_req req;
	char name[8];

	(void)state;
	http_req_init_test(&req, "PUT", "/p", headers, query, "{\"x\":1}", 7);
	assert_string_equal(http_header(&req, "content-type"), "application/json");
	assert_string_equal(http_header(&req, "x-secret-key"), "k");
	assert_null(http_header(&req, "Range"));
	assert_string_equal(http_query(&req, "b"), "two");
	assert_null(http_query(&req, "B"));
	assert_int_equal(req.body.len, 7);
	assert_memory_equal(req.body.buf, "{\"x\":1}", 7);

	resp = http_response_new(201, "application/json");
	assert_non_null(resp);
	assert_int_equal(http_response_set_body(resp, "{}", 2), 0);
	/* Headers are bounded. */
	for (int i = 1; i < HTTP_MAX_HEADERS; i++) {
		snprintf(name, sizeof(name), "H%d", i);
		assert_int_equal(http_response_add_header(resp, name, "v"), 0);
	}
	assert_int_equal(http_response_add_header(resp, "One-Too-Many", "v"), -E2BIG);
	assert_string_equal(http_response_header(resp, "content-type"), "application/json");
	assert_int_equal(http_send(&req, resp), HTTP_YES);
	assert_int_equal(req.response->status, 201);
	assert_int_equal(req.response->len, 2);
	http_req_release_test(&req);
}

static int stream_freed;

static ssize_t count_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)cls;
	if (pos >= 5)
		return HTTP_STREAM_END;
	buf[0] = (char)('0' + pos);
	(void)max;
	return 1;
}

static void count_free(void *cls)
{
	(void)cls;
	stream_freed++;
}

static void test_stream_response_without_a_socket(void **state)
{
	struct http_response *resp = http_response_new(200, "text/plain");
	struct http_req req;
	char out[8] = { 0 };
	uint64_t pos = 0;
	ssize_t n;

	(void)state;
	http_req_init_test(&req, "GET", "/s", NULL, NULL, NULL, 0);
	http_response_set_stream(resp, 5, 0, count_read, NULL, count_free);
	http_response_set_download(resp);
	/* No server: no download cap applies; the stream is kept for the test. */
	assert_int_equal(http_send(&req, resp), HTTP_YES);
	while ((n = req.response->read(req.response->cls, pos, out + pos, sizeof(out) - 1 - pos)) > 0)
		pos += (uint64_t)n;
	assert_int_equal(n, HTTP_STREAM_END);
	assert_string_equal(out, "01234");
	assert_int_equal(req.response->size, 5);
	assert_false(http_stream_suspend(&req, http_streams_gen()));
	http_req_release_test(&req);
	assert_int_equal(stream_freed, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pattern_match),
		cmocka_unit_test(test_add_bounds_and_bad_patterns),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_request_and_response_objects),
		cmocka_unit_test(test_stream_response_without_a_socket),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
