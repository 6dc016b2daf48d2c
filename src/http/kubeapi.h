/* kubeapi.h - the Kubernetes REST endpoints over kube/api.h: discovery,
 * OpenAPI v3, get/list/watch/create/update/patch/delete/deletecollection,
 * Table output, the status subresource, and bearer-token authentication.
 * Thread-safe: one instance serves every connection thread. */
#ifndef AH_HTTP_KUBEAPI_H
#define AH_HTTP_KUBEAPI_H

#include <microhttpd.h>
#include <stdbool.h>

#include "http/creds.h"
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
enum MHD_Result kubeapi_handle(struct kubeapi *ka, struct http_req *req, bool *handled);

/* Queue a Kubernetes Status response for err (and causes, may be NULL). */
enum MHD_Result kubeapi_reply_status(struct http_req *req, const ah_err *err, const char *group,
				     const char *kind_plural, const char *name, json_t *causes);

#endif
