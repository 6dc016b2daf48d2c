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

static enum http_result route_agentapi(void *cls, struct http_req *req)
{
	bool handled;
	enum http_result r = hub_agentapi(cls, req, &handled);

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

int hub_add_routes(struct hub *h, struct http_router *r)
{
	/* The signed file downloads and the events sit under the agent API's
	 * prefix: they come first. */
	static const struct {
		const char *method, *pattern;
		http_route_fn fn;
	} routes[] = {
		{ NULL, API_PREFIX "/infra-envs/*/downloads/files", route_downloads },
		{ "GET", API_PREFIX "/events", route_events },
		{ NULL, API_PREFIX "/**", route_agentapi },
		{ NULL, "/byapikey/**", route_imagesvc },
		{ NULL, "/images/**", route_imagesvc },
		{ NULL, "/boot-artifacts/**", route_imagesvc },
		{ NULL, "/v1/lookup", route_ironic },
		{ NULL, "/v1/heartbeat/*", route_ironic },
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int e = http_router_add(r, routes[i].method, routes[i].pattern, routes[i].fn, h);

		if (e < 0)
			return e;
	}
	return 0;
}
