/* ironicapi.c - the part of Ironic's API the ironic agent calls (ironic.h):
 * GET /v1/lookup and POST /v1/heartbeat/{uuid}, on the agent API port.
 * Errors have Ironic's shape: {"error_message": "{\"faultstring\": ...}"}. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/api-internal.h"
#include "base/log.h"
#include "controllers/ironic.h"

static enum http_result ironic_error(struct http_req *req, unsigned status, const char *msg)
{
	json_t *fault = json_pack("{s:s, s:n}", "faultstring", msg, "debuginfo");
	char *text = fault ? json_dumps(fault, JSON_COMPACT) : NULL;
	json_t *doc = text ? json_pack("{s:s}", "error_message", text) : NULL;
	enum http_result r;

	r = doc ? http_reply_json(req, status, doc) : http_reply(req, 500, "text/plain", "", 0);
	json_decref(doc);
	free(text);
	json_decref(fault);
	return r;
}

enum http_result hub_ironic_api(struct hub *h, struct http_req *req, bool *handled)
{
	const char *p = req->path;
	enum http_result res;

	*handled = true;
	if (strcmp(p, "/v1/lookup") == 0) {
		json_t *doc = NULL;
		int r;

		if (strcmp(req->method, "GET") != 0)
			return ironic_error(req, 405, "The method is not allowed for this resource.");
		r = hub_ironic_lookup(h, http_query(req, "addresses"), &doc);
		if (r == -EINVAL)
			return ironic_error(req, 400, "Lookup needs the addresses argument: a comma separated list of "
						      "MAC addresses");
		if (r < 0)
			return ironic_error(req, r == -ENOENT ? 404 : 500,
					    r == -ENOENT ? "Node could not be found: no node with one of the given "
							   "addresses waits for its agent."
							 : "out of memory");
		log_info("ironic: lookup of %.200s: node %s", http_query(req, "addresses"),
			 json_string_value(json_object_get(json_object_get(doc, "node"), "uuid")));
		res = http_reply_json(req, 200, doc);
		json_decref(doc);
		return res;
	}
	if (strncmp(p, "/v1/heartbeat/", 14) == 0 && p[14] && !strchr(p + 14, '/')) {
		json_t *body;
		int r;

		if (strcmp(req->method, "POST") != 0)
			return ironic_error(req, 405, "The method is not allowed for this resource.");
		body = json_loadb(req->body.buf ? req->body.buf : "", req->body.len, 0, NULL);
		if (!json_is_object(body)) {
			json_decref(body);
			return ironic_error(req, 400, "Invalid heartbeat body: want a JSON object with callback_url and "
						      "agent_token");
		}
		r = hub_ironic_heartbeat(h, p + 14, json_string_value(json_object_get(body, "agent_token")),
					 json_string_value(json_object_get(body, "callback_url")));
		json_decref(body);
		if (r < 0)
			log_info("ironic: heartbeat of node %.64s refused: %s", p + 14,
				 r == -ENOENT ? "no such node" : r == -EACCES ? "bad agent token" : "bad callback_url");
		switch (r) {
		case 0:
			return http_reply(req, 202, "application/json", "", 0);
		case -ENOENT:
			return ironic_error(req, 404, "Node could not be found.");
		case -EACCES:
			return ironic_error(req, 401, "Invalid or missing agent token received.");
		default:
			return ironic_error(req, 400, "Invalid callback_url: want an http(s) URL of at most 512 bytes");
		}
	}
	*handled = false;
	return HTTP_NO;
}
