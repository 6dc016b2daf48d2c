/* api.h - the services behind the HTTP server, above the controllers: the
 * agent REST API (agentapi.c), the image service (imagesvc.c) and the
 * events URL (events.c).  Handlers read and write objects through the kube
 * layer (and the host pipeline of controllers/agent.h); they never call a
 * controller's reconcile.  Thread-safe: handlers run on connection threads. */
#ifndef AH_API_API_H
#define AH_API_API_H

#include <stdbool.h>

#include "controllers/hub.h"
#include "http/server.h"

/* Serve the agent API, image service and events paths; *handled false
 * otherwise (the caller goes on to the Kubernetes API). */
enum MHD_Result hub_handle(struct hub *h, struct http_req *req, bool *handled);

#endif
