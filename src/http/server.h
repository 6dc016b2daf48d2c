/* server.h - the HTTPS server: libmicrohttpd in its event-driven mode (a
 * small pool of threads, each running epoll over its share of the
 * connections), a bounded request body and one handler callback for every
 * request.
 *
 * Workers: the pool threads only move bytes (TLS, parsing, sending).  Once
 * the whole body of a request has arrived, its connection is suspended and
 * the request queued to a worker thread of one of two lanes, which runs the
 * handler and resumes the connection; the pool thread then sends the
 * response.  So a handler may block (a store write waiting for its group
 * commit) without stalling the other connections of its pool thread, and the
 * two lanes keep one kind of traffic from queueing behind the other: paths
 * under opts->bulk_prefixes (the agent API and the image service: thousands
 * of hosts polling) go to the bulk lane, whose threads also run at a lower
 * CPU priority; other requests that may write (not GET or HEAD: the
 * Kubernetes API's creates, updates, patches, deletes) to the interactive
 * lane; other GET and HEAD requests (reads: they never wait for a commit,
 * and the hand-off would cost more than most answers) run on the pool
 * thread itself, so kubectl never queues behind agent polls.  The
 * number of threads is fixed (pool + workers + the sweeper), whatever the
 * number of connections.  The handler runs on the pool thread itself, as
 * before, for a body over the bound (req->too_big, at once) and while the
 * server stops.  It must queue exactly one response with http_reply*() /
 * http_send() and return their result.
 * A streaming response never blocks: when its read callback has nothing to
 * send it calls http_stream_suspend() and returns 0; http_streams_wake()
 * (called by whoever produces the data, and once a second by the server)
 * resumes it.
 *
 * Bounds (struct http_server_opts): connections past max_conns get 503 with
 * Retry-After (the listener accepts a few more so the client hears why,
 * then refuses); concurrent downloads past max_downloads get 503 with
 * Retry-After; a connection must send a complete request line within
 * idle_timeout of connecting or of its previous request, and a request must
 * arrive whole (line, headers and body) within request_timeout of its
 * first line, or the connection is closed. */
#ifndef AH_HTTP_SERVER_H
#define AH_HTTP_SERVER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/strbuf.h"

struct http_response;
struct http_server;
struct MHD_Connection;  /* only server.c looks inside */

/* What a handler returns: the result of queueing its response.  HTTP_NO
 * makes the server drop the connection (nothing could be queued).
 * HTTP_NEXT (routes only, see router.h): this handler declines the request
 * without answering; the next matching route gets it. */
enum http_result { HTTP_NO = 0, HTTP_YES = 1, HTTP_NEXT = 2 };

/* A request.  From the server: conn is set and headers/query come from it.
 * From a test (http_req_init_test): conn is NULL, headers and query are
 * NULL-terminated name/value arrays, and http_send() keeps the response in
 * req->response for the test to read. */
struct http_req {
	struct MHD_Connection *conn;
	struct http_server *server;
	const char *method;
	const char *path;
	strbuf body;
	bool too_big;
	unsigned status;   /* the status queued (0 until then), for logs and metrics */
	size_t resp_bytes; /* the body's size when resp_sized (not for streams) */
	bool resp_sized;
	const char *const *test_headers;  /* { name, value, ..., NULL } */
	const char *const *test_query;
	struct http_response *response;   /* a test request's response */
	void *conn_ctx;                   /* the server's per-connection state */
	struct http_req *wait_next, *wait_prev; /* on the suspended list */
	bool suspended;
	/* A request answered by a worker (see "Workers" above). */
	struct http_req *lane_next;       /* on its lane's queue */
	struct http_response *pending;    /* queued by the handler, sent on resume */
	enum http_result result;          /* what the handler returned */
	bool deferred;                    /* the handler runs on a worker */
	bool answered;                    /* the worker is done: send pending */
};

/* A request for a unit test: no socket; strings are borrowed (they must
 * outlive req), the body is copied.  Release with http_req_release_test(). */
void http_req_init_test(struct http_req *req, const char *method, const char *path,
			const char *const *headers, const char *const *query,
			const char *body, size_t len);
void http_req_release_test(struct http_req *req);

typedef enum http_result (*http_handler_fn)(void *userdata, struct http_req *req);

#define HTTP_DEFAULT_MAX_CONNS 16384u
#define HTTP_DEFAULT_MAX_DOWNLOADS 1024u
#define HTTP_DEFAULT_THREADS 8u
#define HTTP_DEFAULT_IDLE_TIMEOUT 120u     /* seconds; upstream agents poll every ~60 s */
#define HTTP_DEFAULT_REQUEST_TIMEOUT 30u   /* seconds */
#define HTTP_DEFAULT_WORKERS 16u           /* bulk lane */
#define HTTP_DEFAULT_INTERACTIVE_WORKERS 16u
#define HTTP_BULK_NICE 10                  /* the bulk lane's nice, above the process's */

struct http_server_opts {
	const char *listen;    /* "HOST:PORT" or "[v6]:PORT" */
	const char *cert_pem;  /* NULL = plain HTTP */
	const char *key_pem;
	size_t max_body;       /* bytes; larger bodies get 413 */
	unsigned max_conns;    /* 0 = HTTP_DEFAULT_MAX_CONNS */
	unsigned max_downloads;/* 0 = HTTP_DEFAULT_MAX_DOWNLOADS */
	unsigned threads;      /* 0 = HTTP_DEFAULT_THREADS */
	unsigned idle_timeout; /* seconds; 0 = default */
	unsigned request_timeout; /* seconds; 0 = default */
	unsigned workers;      /* bulk lane threads; 0 = HTTP_DEFAULT_WORKERS */
	unsigned interactive_workers; /* 0 = HTTP_DEFAULT_INTERACTIVE_WORKERS */
	const char *const *bulk_prefixes; /* NULL-terminated path prefixes; NULL = none */
};

/* Also raises RLIMIT_NOFILE to its hard limit (connections are fds). */
int http_server_start(const struct http_server_opts *opts, http_handler_fn handler,
		      void *userdata, struct http_server **ret, ah_err *err);
/* Stops accepting, resumes every suspended stream (their read callbacks
 * must notice http_server_stopping() and end), waits for in-flight requests. */
void http_server_stop(struct http_server *srv);
bool http_server_stopping(void);
void http_server_set_stopping(void);
/* The port actually bound (useful with port 0). */
unsigned http_server_port(struct http_server *srv);
/* The connections open now. */
unsigned http_server_connections(struct http_server *srv);

struct http_server_stats {
	unsigned connections;   /* open now */
	unsigned downloads;     /* download responses in flight */
	unsigned suspended;     /* streams waiting for data */
	uint64_t refused_conns; /* requests answered 503 past max_conns */
	uint64_t refused_downloads;
	uint64_t timed_out;     /* connections closed by the request/idle timeouts */
	unsigned queued[2];     /* requests waiting for a worker: interactive, bulk */
};
void http_server_stats(struct http_server *srv, struct http_server_stats *ret);

const char *http_query(struct http_req *req, const char *key);
const char *http_header(struct http_req *req, const char *name);
/* The client's address as "IP:PORT" or "[IPv6]:PORT" ("-" when unknown,
 * e.g. a test request). */
void http_client_address(struct http_req *req, char *buf, size_t size);
/* Every query argument in order; fn returns < 0 to stop. */
typedef int (*http_query_fn)(void *cls, const char *key, const char *value);
void http_query_each(struct http_req *req, http_query_fn fn, void *cls);

/* --- responses -------------------------------------------------------------
 * A response object: status, headers, and a body that is a buffer or a
 * stream.  Built by a handler, then handed to http_send(), which consumes
 * it (whatever it returns).  Not shared between threads. */

struct http_response;
#define HTTP_SIZE_UNKNOWN UINT64_MAX
#define HTTP_STREAM_END ((ssize_t)-1)   /* the end of the stream */
#define HTTP_STREAM_ERROR ((ssize_t)-2) /* a failure: the connection is closed */
#define HTTP_MAX_HEADERS 32

/* Returns bytes written to buf (at most max), 0 after http_stream_suspend(),
 * HTTP_STREAM_END or HTTP_STREAM_ERROR.  pos is the offset in the stream. */
typedef ssize_t (*http_read_fn)(void *cls, uint64_t pos, char *buf, size_t max);
typedef void (*http_free_fn)(void *cls);

struct http_response {
	unsigned status;
	unsigned nheaders;
	struct { char *name, *value; } headers[HTTP_MAX_HEADERS];
	char *body;            /* owned; NULL for a stream */
	size_t len;
	http_read_fn read;     /* a stream when set */
	http_free_fn free_cls;
	void *cls;
	uint64_t size;         /* stream size or HTTP_SIZE_UNKNOWN (chunked) */
	size_t block;          /* stream read size */
	bool download;         /* counts against max_downloads */
};

/* NULL on allocation failure.  content_type may be NULL. */
struct http_response *http_response_new(unsigned status, const char *content_type);
/* The body: copied / taken (a malloc'd buffer, freed even on failure). */
int http_response_set_body(struct http_response *resp, const char *body, size_t len);
int http_response_take_body(struct http_response *resp, char *body, size_t len);
/* A stream; free_cls(cls) runs when the response is done or dropped (also
 * when this call fails). */
int http_response_set_stream(struct http_response *resp, uint64_t size, size_t block,
			     http_read_fn read, void *cls, http_free_fn free_cls);
/* Mark a stream as a download: past max_downloads in flight, http_send()
 * answers 503 with Retry-After instead (and frees the stream). */
void http_response_set_download(struct http_response *resp);
/* Name and value are copied; -E2BIG past HTTP_MAX_HEADERS. */
int http_response_add_header(struct http_response *resp, const char *name, const char *value);
const char *http_response_header(const struct http_response *resp, const char *name);
void http_response_free(struct http_response *resp);

/* Queue resp on req's connection; consumes resp. */
enum http_result http_send(struct http_req *req, struct http_response *resp);

/* Queue a response; body is copied. */
enum http_result http_reply(struct http_req *req, unsigned status, const char *content_type,
			   const char *body, size_t len);
/* Queue a response taking ownership of a malloc'd body. */
enum http_result http_reply_owned(struct http_req *req, unsigned status, const char *content_type,
				 char *body, size_t len);
enum http_result http_reply_json(struct http_req *req, unsigned status, const json_t *doc);
/* Stream of unknown length (chunked); see http_read_fn. */
enum http_result http_reply_stream(struct http_req *req, unsigned status, const char *content_type,
				  http_read_fn read, void *cls, http_free_fn free_cls);

/* --- streams that wait ------------------------------------------------------
 * A stream's read callback with nothing to send:
 *     unsigned gen = http_streams_gen();   (before looking for data)
 *     ... look, find nothing ...
 *     if (http_stream_suspend(req, gen)) return 0;  else look again
 * http_stream_suspend() returns false (and does not suspend) when a wake
 * happened since gen or the server is stopping, so no wake is lost.
 * Thread-safe. */
unsigned http_streams_gen(void);
bool http_stream_suspend(struct http_req *req, unsigned gen);
/* Resume every suspended stream (their read callbacks run again). */
void http_streams_wake(void);

#endif
