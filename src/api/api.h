/* api.h - the services behind the HTTP server, above the controllers: the
 * agent REST API (agentapi.c), the image service (imagesvc.c) and the
 * events URL (events.c).  Handlers read and write objects through the kube
 * layer (and the host pipeline of controllers/agent.h); they never call a
 * controller's reconcile.  Thread-safe: handlers run on connection threads. */
#ifndef AH_API_API_H
#define AH_API_API_H

#include <stdbool.h>

#include "controllers/hub.h"
#include "http/router.h"
#include "http/server.h"

/* Add the routes of the agent API, its downloads and events, and the image
 * service to r (before the Kubernetes API's: both live under /api). */
int hub_add_routes(struct hub *h, struct http_router *r);

#endif
