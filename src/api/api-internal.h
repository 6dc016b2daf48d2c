/* api-internal.h - shared between the files of src/api/ only. */
#ifndef AH_API_API_INTERNAL_H
#define AH_API_API_INTERNAL_H

#include "api/api.h"
#include "controllers/hub-internal.h"

/* Agent API (agentapi.c), image service (imagesvc.c), events (events.c). */
enum http_result hub_agentapi(struct hub *h, struct http_req *req, bool *handled);
/* The ironic agent's lookup and heartbeat (ironicapi.c, controllers/ironic.h). */
enum http_result hub_ironic_api(struct hub *h, struct http_req *req, bool *handled);
enum http_result hub_imagesvc(struct hub *h, struct http_req *req, bool *handled);
/* GET/HEAD $API/infra-envs/<id>/downloads/files (discovery.ign, ipxe-script). */
enum http_result hub_downloads(struct hub *h, struct http_req *req, bool *handled);
/* GET /api/assisted-install/v2/events; *handled false for other paths. */
enum http_result hub_events_api(struct hub *h, struct http_req *req, bool *handled);
/* An upstream error body: {"code","message"} for 401/403, else
 * {"kind":"Error","id","href","code","reason"}. */
enum http_result hub_reply_error(struct http_req *req, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
