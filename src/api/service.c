/* service.c - the one dispatch entry of the services (api.h): each service
 * says whether a path is its own. */
#include "api/api-internal.h"

enum MHD_Result hub_handle(struct hub *h, struct http_req *req, bool *handled)
{
	/* The signed file downloads sit under the agent API's prefix. */
	enum MHD_Result r = hub_downloads(h, req, handled);

	if (*handled)
		return r;
	r = hub_events_api(h, req, handled);
	if (*handled)
		return r;
	r = hub_agentapi(h, req, handled);
	if (*handled)
		return r;
	return hub_imagesvc(h, req, handled);
}
