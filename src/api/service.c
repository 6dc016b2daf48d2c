/* service.c - the services' routes (api.h): the agent REST API, its signed
 * downloads and events, and the image service. */
#include "api/api-internal.h"

/* Route adapters: a handler that does not take the path declines it. */
static enum http_result route_downloads(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = hub_downloads(cls, req, &handled);

	return handled ? r : HTTP_NEXT;
}

static enum http_result route_events(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = hub_events_api(cls, req, &handled);

	return handled ? r : HTTP_NEXT;
}

static enum http_result route_ironic(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = hub_ironic_api(cls, req, &handled);

	return handled ? r : HTTP_NEXT;
}

static enum http_result route_imagesvc(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = hub_imagesvc(cls, req, &handled);

	return handled ? r : HTTP_NEXT;
}

static int add_all(struct hub *h, struct http_router *r, const struct http_route *routes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int e = http_router_add(r, routes[i].method, routes[i].pattern, routes[i].fn, h);

		if (e < 0)
			return e;
	}
	return 0;
}

int hub_add_routes(struct hub *h, struct http_router *r)
{
	/* The signed file downloads and the events sit under the agent API's
	 * prefix: they come first; the image service after the agent API. */
	static const struct http_route before[] = {
		{ NULL, API_PREFIX "/infra-envs/*/downloads/files", route_downloads, NULL },
		{ "GET", API_PREFIX "/events", route_events, NULL },
	};
	static const struct http_route after[] = {
		{ NULL, "/byapikey/**", route_imagesvc, NULL },
		{ NULL, "/images/**", route_imagesvc, NULL },
		{ NULL, "/boot-artifacts/**", route_imagesvc, NULL },
		/* The ironic agent's lookup and heartbeat (Ironic's API paths). */
		{ NULL, "/v1/lookup", route_ironic, NULL },
		{ NULL, "/v1/heartbeat/*", route_ironic, NULL },
	};
	int e = add_all(h, r, before, sizeof(before) / sizeof(before[0]));

	if (e == 0)
		e = hub_agentapi_routes(h, r);
	if (e == 0)
		e = add_all(h, r, after, sizeof(after) / sizeof(after[0]));
	return e;
}
