/* kubeapi.h - the Kubernetes REST endpoints over kube/api.h: discovery,
 * OpenAPI v3, get/list/watch/create/update/patch/delete/deletecollection,
 * Table output, the status subresource, and bearer-token authentication.
 * Thread-safe: one instance serves every connection thread. */
#ifndef AH_HTTP_KUBEAPI_H
#define AH_HTTP_KUBEAPI_H

#include <stdbool.h>

#include "http/creds.h"
#include "http/router.h"
#include "http/server.h"
#include "kube/api.h"

struct kubeapi;

struct kubeapi_opts {
	const struct creds *creds;     /* token check; NULL = no authentication */
	const char *server_address;    /* host:port as clients reach it */
	int max_watch_seconds;         /* default 1800 */
};

int kubeapi_new(struct kube_api *api, const struct kubeapi_opts *opts, struct kubeapi **ret);
void kubeapi_free(struct kubeapi *ka);

/* Handle a request if its path belongs to the kube API (/api, /apis,
 * /openapi, /version, /healthz, /readyz, /livez); sets *handled. */
enum http_result kubeapi_handle(struct kubeapi *ka, struct http_req *req, bool *handled);

/* Add the kube API's paths to r (its handler declines what it does not
 * serve).  kubeapi_not_found: the API server's 404 Status, for any path. */
int kubeapi_add_routes(struct kubeapi *ka, struct http_router *r);
enum http_result kubeapi_not_found(void *cls, struct http_req *req);

/* Queue a Kubernetes Status response for err (and causes, may be NULL). */
enum http_result kubeapi_reply_status(struct http_req *req, const ah_err *err, const char *group,
				     const char *kind_plural, const char *name, json_t *causes);

#endif
