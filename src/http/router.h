/* router.h - the route table: (method, path pattern) -> handler, first
 * match wins.
 *
 * A pattern is a path whose segments are literal, "*" (any one non-empty
 * segment) or, as the last segment only, "**" (the rest of the path: zero or
 * more segments).  So the pattern  /api/ **  (without the space) matches
 * "/api", "/api/" and "/api/v1/x", and  /a/ * /b  (without the spaces)
 * matches "/a/x/b" only.  A route's method is an HTTP method or
 * NULL (any).  When a path matches some route but no route for its method,
 * the dispatch answers with the not_allowed handler (when set) else not_found.
 *
 * The table is bounded (HTTP_ROUTER_MAX routes), filled at start-up and
 * read-only afterwards: then any thread may dispatch.  A handler that
 * returns HTTP_NEXT declines: the next matching route gets the request.  Patterns and
 * methods are borrowed (string literals, in practice). */
#ifndef AH_HTTP_ROUTER_H
#define AH_HTTP_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include "http/server.h"

#define HTTP_ROUTER_MAX 64

typedef enum http_result (*http_route_fn)(void *cls, struct http_req *req);

struct http_route {
	const char *method;   /* NULL: any */
	const char *pattern;
	http_route_fn fn;
	void *cls;
};

struct http_router {
	struct http_route routes[HTTP_ROUTER_MAX];
	size_t n;
	http_route_fn not_found;    /* no path matched */
	void *not_found_cls;
	http_route_fn not_allowed;  /* a path matched, not its method; NULL: not_found */
	void *not_allowed_cls;
};

void http_router_init(struct http_router *r);
/* 0, -E2BIG when the table is full, -EINVAL for a malformed pattern
 * ("**" not last, not starting with '/'). */
int http_router_add(struct http_router *r, const char *method, const char *pattern,
		    http_route_fn fn, void *cls);
/* Pure: does path match pattern? */
bool http_pattern_match(const char *pattern, const char *path);
/* The first route matching method and path; NULL if none (then
 * *ret_path_matched says whether some route matched the path alone). */
const struct http_route *http_router_match(const struct http_router *r, const char *method,
					   const char *path, bool *ret_path_matched);
/* Run the matching routes' handlers in order until one does not decline
 * (then not_allowed / not_found). */
enum http_result http_router_dispatch(const struct http_router *r, struct http_req *req);

#endif
