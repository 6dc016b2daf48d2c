/* router.c - the route table; see router.h.  Matching walks the pattern
 * and the path segment by segment, without copying either. */
#include "router.h"

#include <errno.h>
#include <string.h>

void http_router_init(struct http_router *r)
{
	memset(r, 0, sizeof(*r));
}

static bool pattern_ok(const char *pattern)
{
	const char *dd;

	if (!pattern || pattern[0] != '/')
		return false;
	dd = strstr(pattern, "**");
	/* "**" only as the whole last segment. */
	return !dd || (dd[-1] == '/' && dd[2] == '\0');
}

int http_router_add(struct http_router *r, const char *method, const char *pattern,
		    http_route_fn fn, void *cls)
{
	if (!pattern_ok(pattern) || !fn)
		return -EINVAL;
	if (r->n >= HTTP_ROUTER_MAX)
		return -E2BIG;
	r->routes[r->n++] = (struct http_route){ method, pattern, fn, cls };
	return 0;
}

/* Length of the segment at s (up to '/' or the end). */
static size_t seg_len(const char *s)
{
	const char *e = strchr(s, '/');

	return e ? (size_t)(e - s) : strlen(s);
}

bool http_pattern_match(const char *pattern, const char *path)
{
	const char *p = pattern, *q = path;

	if (!path || path[0] != '/')
		return false;
	for (;;) {
		size_t pl, ql;

		/* Both at a '/', or the pattern at its final "**" segment. */
		if (strcmp(p, "/**") == 0)
			return true;
		if (*p == '\0' || *q == '\0')
			return *p == '\0' && *q == '\0';
		p++;
		q++;
		pl = seg_len(p);
		ql = seg_len(q);
		if (pl == 1 && p[0] == '*') {
			if (ql == 0)
				return false;
		} else if (pl != ql || memcmp(p, q, pl) != 0) {
			return false;
		}
		p += pl;
		q += ql;
	}
}

const struct http_route *http_router_match(const struct http_router *r, const char *method,
					   const char *path, bool *ret_path_matched)
{
	bool path_matched = false;

	for (size_t i = 0; i < r->n; i++) {
		const struct http_route *rt = &r->routes[i];

		if (!http_pattern_match(rt->pattern, path))
			continue;
		if (!rt->method || (method && strcmp(rt->method, method) == 0)) {
			if (ret_path_matched)
				*ret_path_matched = true;
			return rt;
		}
		path_matched = true;
	}
	if (ret_path_matched)
		*ret_path_matched = path_matched;
	return NULL;
}

enum http_result http_router_dispatch(const struct http_router *r, struct http_req *req)
{
	bool path_matched = false;

	for (size_t i = 0; i < r->n; i++) {
		const struct http_route *rt = &r->routes[i];
		enum http_result res;

		if (!http_pattern_match(rt->pattern, req->path))
			continue;
		if (rt->method && (!req->method || strcmp(rt->method, req->method) != 0)) {
			path_matched = true;
			continue;
		}
		res = rt->fn(rt->cls, req);
		if (res != HTTP_NEXT)
			return res;
	}
	if (path_matched && r->not_allowed)
		return r->not_allowed(r->not_allowed_cls, req);
	if (r->not_found)
		return r->not_found(r->not_found_cls, req);
	return http_reply(req, 404, "text/plain", "not found\n", 10);
}
