/* server.h - the HTTPS server (libmicrohttpd, thread per connection) with a
 * bounded request body and one handler callback for every request.
 *
 * The handler runs on the connection's own thread once the whole body has
 * arrived (or once it passed the bound: req->too_big).  It must queue exactly
 * one response with http_reply*() / http_reply_stream() and return their
 * result.  A streaming response's callback may block (watches do). */
#ifndef AH_HTTP_SERVER_H
#define AH_HTTP_SERVER_H

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "base/strbuf.h"

struct http_req {
	struct MHD_Connection *conn;
	const char *method;
	const char *path;
	strbuf body;
	bool too_big;
	unsigned status;   /* the status queued (0 until then), for logs and metrics */
	size_t resp_bytes; /* the body's size when resp_sized (not for streams) */
	bool resp_sized;
};

typedef enum MHD_Result (*http_handler_fn)(void *userdata, struct http_req *req);

struct http_server_opts {
	const char *listen;    /* "HOST:PORT" or "[v6]:PORT" */
	const char *cert_pem;  /* NULL = plain HTTP */
	const char *key_pem;
	size_t max_body;       /* bytes; larger bodies get 413 */
	unsigned max_conns;
};

struct http_server;

int http_server_start(const struct http_server_opts *opts, http_handler_fn handler,
		      void *userdata, struct http_server **ret, ah_err *err);
/* Stops accepting, waits for in-flight requests; streaming callbacks must
 * notice shutdown by themselves (see http_server_stopping()). */
void http_server_stop(struct http_server *srv);
bool http_server_stopping(void);
void http_server_set_stopping(void);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(struct http_server *srv);
/* The connections open now. */
unsigned http_server_connections(struct http_server *srv);

const char *http_query(struct http_req *req, const char *key);
const char *http_header(struct http_req *req, const char *name);

/* Queue a response; body is copied. */
enum MHD_Result http_reply(struct http_req *req, unsigned status, const char *content_type,
			   const char *body, size_t len);
/* Queue a response taking ownership of a malloc'd body. */
enum MHD_Result http_reply_owned(struct http_req *req, unsigned status, const char *content_type,
				 char *body, size_t len);
enum MHD_Result http_reply_json(struct http_req *req, unsigned status, const json_t *doc);
/* Stream of unknown length (chunked); read is called repeatedly and may
 * block; it returns bytes written, or MHD_CONTENT_READER_END_OF_STREAM. */
enum MHD_Result http_reply_stream(struct http_req *req, unsigned status, const char *content_type,
				  MHD_ContentReaderCallback read, void *cls,
				  MHD_ContentReaderFreeCallback free_cls);

#endif
