/* server.c - libmicrohttpd glue; see server.h.
 *
 * MHD runs a pool of epoll threads; connections never own a thread.  A
 * sweeper thread enforces the idle and request deadlines (MHD's own timeout
 * is an inactivity timeout, which a client trickling bytes defeats) and
 * wakes waiting streams once a second. */
#include "server.h"

#include <microhttpd.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"

/* Per-connection buffer memory (MHD reads request headers into it and
 * writes response headers from it). */
#define CONN_MEMORY (16 * 1024)
/* The largest read of a download's stream (MHD's buffer for it). */
#define DOWNLOAD_BLOCK (64 * 1024)
/* A download's socket send buffer (the kernel doubles it). */
#define DOWNLOAD_SNDBUF (64 * 1024)

struct conn_ctx {
	struct conn_ctx *prev, *next;
	int fd;
	_Atomic int64_t deadline_ms;  /* 0: none (a request is being answered) */
	bool cut;                     /* shut down by the sweeper */
};

/* A lane: a FIFO of requests and the worker threads that answer them. */
struct lane {
	struct http_server *srv;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct http_req *head, *tail;
	unsigned queued;
	bool stop;       /* no more pushes; the workers drain and end */
	int nice_delta;
	unsigned n;
	pthread_t *threads;
	unsigned started;
};

enum { LANE_INTERACTIVE, LANE_BULK, LANES };

struct http_server {
	struct MHD_Daemon *d;
	struct lane lanes[LANES];
	char **bulk_prefixes;
	http_handler_fn handler;
	void *userdata;
	size_t max_body;
	char *cert, *key;
	unsigned port;
	unsigned max_conns, max_downloads;
	int64_t idle_ms, request_ms;
	atomic_uint nconns, ndownloads;
	atomic_uint_least64_t refused_conns, refused_downloads, timed_out;
	pthread_mutex_t conn_lock;    /* the connection list */
	struct conn_ctx *conns;
	pthread_t sweeper;
	bool sweeper_started;
	pthread_mutex_t sweep_lock;
	pthread_cond_t sweep_cond;
	bool sweep_stop;
};

/* TLS 1.2 and 1.3 only (GnuTLS priority string). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"
#define RETRY_AFTER_SECONDS "5"

static atomic_bool stopping;

bool http_server_stopping(void)
{
	return atomic_load(&stopping);
}

void http_server_set_stopping(void)
{
	atomic_store(&stopping, true);
}

/* --- streams that wait --------------------------------------------------- */

/* One server per process: the suspended list is global so producers (the
 * store's watchers) need no server pointer. */
static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static struct http_req *wait_head;
static unsigned wait_gen, wait_count;
static bool wait_closed;

unsigned http_streams_gen(void)
{
	unsigned g;

	pthread_mutex_lock(&wait_lock);
	g = wait_gen;
	pthread_mutex_unlock(&wait_lock);
	return g;
}

bool http_stream_suspend(struct http_req *req, unsigned gen)
{
	bool ok = false;

	if (!req->conn)
		return false;
	pthread_mutex_lock(&wait_lock);
	if (gen == wait_gen && !wait_closed && !http_server_stopping() && !req->suspended) {
		MHD_suspend_connection(req->conn);
		req->suspended = true;
		req->wait_prev = NULL;
		req->wait_next = wait_head;
		if (wait_head)
			wait_head->wait_prev = req;
		wait_head = req;
		wait_count++;
		ok = true;
	}
	pthread_mutex_unlock(&wait_lock);
	return ok;
}

static void wait_unlink(struct http_req *req)
{
	if (req->wait_prev)
		req->wait_prev->wait_next = req->wait_next;
	else
		wait_head = req->wait_next;
	if (req->wait_next)
		req->wait_next->wait_prev = req->wait_prev;
	req->wait_next = req->wait_prev = NULL;
	req->suspended = false;
	wait_count--;
}

void http_streams_wake(void)
{
	pthread_mutex_lock(&wait_lock);
	wait_gen++;
	while (wait_head) {
		struct http_req *req = wait_head;

		wait_unlink(req);
		MHD_resume_connection(req->conn);
	}
	pthread_mutex_unlock(&wait_lock);
}

/* --- requests ------------------------------------------------------------ */

static const char *pair_lookup(const char *const *pairs, const char *key, bool nocase)
{
	for (size_t i = 0; pairs && pairs[i]; i += 2)
		if (nocase ? strcasecmp(pairs[i], key) == 0 : strcmp(pairs[i], key) == 0)
			return pairs[i + 1];
	return NULL;
}

const char *http_query(struct http_req *req, const char *key)
{
	if (!req->conn)
		return pair_lookup(req->test_query, key, false);
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_header(struct http_req *req, const char *name)
{
	if (!req->conn)
		return pair_lookup(req->test_headers, name, true);
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

struct query_each {
	http_query_fn fn;
	void *cls;
};

static enum MHD_Result query_each_cb(void *cls, enum MHD_ValueKind kind, const char *key,
				     const char *value)
{
	struct query_each *qe = cls;

	(void)kind;
	return qe->fn(qe->cls, key, value) < 0 ? MHD_NO : MHD_YES;
}

void http_client_address(struct http_req *req, char *buf, size_t size)
{
	const union MHD_ConnectionInfo *ci =
		req->conn ? MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;
	char ip[INET6_ADDRSTRLEN] = "-";

	if (sa && sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "%s:%u", ip, ntohs(s4->sin_port));
	} else if (sa && sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "[%s]:%u", ip, ntohs(s6->sin6_port));
	} else {
		snprintf(buf, size, "-");
	}
}

void http_query_each(struct http_req *req, http_query_fn fn, void *cls)
{
	struct query_each qe = { fn, cls };

	if (!req->conn) {
		for (size_t i = 0; req->test_query && req->test_query[i]; i += 2)
			if (fn(cls, req->test_query[i], req->test_query[i + 1]) < 0)
				return;
		return;
	}
	MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, query_each_cb, &qe);
}

void http_req_init_test(struct http_req *req, const char *method, const char *path,
			const char *const *headers, const char *const *query,
			const char *body, size_t len)
{
	memset(req, 0, sizeof(*req));
	req->method = method;
	req->path = path;
	req->test_headers = headers;
	req->test_query = query;
	strbuf_init(&req->body, 0);
	if (body)
		strbuf_add(&req->body, body, len);
}

void http_req_release_test(struct http_req *req)
{
	strbuf_release(&req->body);
	http_response_free(req->response);
	req->response = NULL;
}

/* --- responses ----------------------------------------------------------- */

struct http_response *http_response_new(unsigned status, const char *content_type)
{
	struct http_response *resp = calloc(1, sizeof(*resp));

	if (!resp)
		return NULL;
	resp->status = status;
	if (content_type && http_response_add_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) < 0) {
		free(resp);
		return NULL;
	}
	return resp;
}

static void drop_body(struct http_response *resp)
{
	free(resp->body);
	resp->body = NULL;
	resp->len = 0;
	if (resp->free_cls)
		resp->free_cls(resp->cls);
	resp->read = NULL;
	resp->free_cls = NULL;
	resp->cls = NULL;
}

int http_response_take_body(struct http_response *resp, char *body, size_t len)
{
	drop_body(resp);
	resp->body = body;
	resp->len = len;
	return 0;
}

int http_response_set_body(struct http_response *resp, const char *body, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, body, len);
	copy[len] = '\0';
	return http_response_take_body(resp, copy, len);
}

int http_response_set_stream(struct http_response *resp, uint64_t size, size_t block,
			     http_read_fn read, void *cls, http_free_fn free_cls)
{
	drop_body(resp);
	resp->read = read;
	resp->cls = cls;
	resp->free_cls = free_cls;
	resp->size = size;
	resp->block = block ? block : 64 * 1024;
	return 0;
}

void http_response_set_download(struct http_response *resp)
{
	resp->download = true;
}

int http_response_add_header(struct http_response *resp, const char *name, const char *value)
{
	char *n, *v;

	if (resp->nheaders >= HTTP_MAX_HEADERS)
		return -E2BIG;
	n = strdup(name);
	v = strdup(value);
	if (!n || !v) {
		free(n);
		free(v);
		return -ENOMEM;
	}
	resp->headers[resp->nheaders].name = n;
	resp->headers[resp->nheaders].value = v;
	resp->nheaders++;
	return 0;
}

const char *http_response_header(const struct http_response *resp, const char *name)
{
	for (unsigned i = 0; resp && i < resp->nheaders; i++)
		if (strcasecmp(resp->headers[i].name, name) == 0)
			return resp->headers[i].value;
	return NULL;
}

void http_response_free(struct http_response *resp)
{
	if (!resp)
		return;
	drop_body(resp);
	for (unsigned i = 0; i < resp->nheaders; i++) {
		free(resp->headers[i].name);
		free(resp->headers[i].value);
	}
	free(resp);
}

/* A download's stream, counted while in flight. */
struct dl_stream {
	struct http_server *srv;
	http_read_fn read;
	http_free_fn free_cls;
	void *cls;
};

static ssize_t dl_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct dl_stream *dl = cls;

	return dl->read(dl->cls, pos, buf, max);
}

static void dl_free(void *cls)
{
	struct dl_stream *dl = cls;

	if (dl->free_cls)
		dl->free_cls(dl->cls);
	atomic_fetch_sub(&dl->srv->ndownloads, 1);
	free(dl);
}

/* The 503 of a full server: the agent API's error shape under its prefix,
 * the Kubernetes Status elsewhere. */
static struct http_response *busy_response(struct http_req *req, const char *what)
{
	struct http_response *resp = http_response_new(503, "application/json");
	char body[512];

	if (!resp)
		return NULL;
	if (req->path && strncmp(req->path, "/api/assisted-install/", 22) == 0)
		snprintf(body, sizeof(body),
			 "{\"code\":\"503\",\"href\":\"\",\"id\":503,\"kind\":\"Error\","
			 "\"reason\":\"%s; retry later\"}", what);
	else
		snprintf(body, sizeof(body),
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\","
			 "\"message\":\"%s; retry later\",\"reason\":\"ServiceUnavailable\",\"code\":503,"
			 "\"details\":{\"retryAfterSeconds\":%s}}", what, RETRY_AFTER_SECONDS);
	if (http_response_set_body(resp, body, strlen(body)) < 0 ||
	    http_response_add_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER_SECONDS) < 0) {
		http_response_free(resp);
		return NULL;
	}
	return resp;
}

static enum http_result queue_response(struct http_req *req, struct http_response *resp);

enum http_result http_send(struct http_req *req, struct http_response *resp)
{
	struct http_server *srv = req->server;

	if (!resp)
		return HTTP_NO;
	if (resp->download && resp->read && srv) {
		if (atomic_fetch_add(&srv->ndownloads, 1) >= srv->max_downloads) {
			atomic_fetch_sub(&srv->ndownloads, 1);
			atomic_fetch_add(&srv->refused_downloads, 1);
			http_response_free(resp);
			resp = busy_response(req, "too many downloads in progress");
			if (!resp)
				return HTTP_NO;
		} else {
			struct dl_stream *dl = malloc(sizeof(*dl));

			/* MHD holds a buffer of this size per response: hundreds
			 * of slow downloads must not each hold a large one. */
			if (resp->block > DOWNLOAD_BLOCK)
				resp->block = DOWNLOAD_BLOCK;
			/* A slow reader must drain the socket's send buffer before
			 * the next write, and MHD counts a connection with no write
			 * for its timeout as dead: with the kernel's autotuned
			 * buffer (megabytes) a client reading 4 KiB/s had none for
			 * minutes and was cut mid-download.  A bounded buffer keeps
			 * the writes coming (and the memory small). */
			if (req->conn_ctx && ((struct conn_ctx *)req->conn_ctx)->fd >= 0) {
				int sz = DOWNLOAD_SNDBUF;

				setsockopt(((struct conn_ctx *)req->conn_ctx)->fd, SOL_SOCKET, SO_SNDBUF, &sz,
					   sizeof(sz));
			}

			if (!dl) {
				atomic_fetch_sub(&srv->ndownloads, 1);
				http_response_free(resp);
				return HTTP_NO;
			}
			dl->srv = srv;
			dl->read = resp->read;
			dl->free_cls = resp->free_cls;
			dl->cls = resp->cls;
			resp->read = dl_read;
			resp->free_cls = dl_free;
			resp->cls = dl;
		}
	}
	req->status = resp->status;
	req->resp_sized = !resp->read;
	req->resp_bytes = resp->read ? 0 : resp->len;
	if (!http_response_header(resp, "Cache-Control"))
		http_response_add_header(resp, "Cache-Control", "no-cache, private");
	if (!req->conn) {
		/* A request built by a test: keep the response for it to read. */
		http_response_free(req->response);
		req->response = resp;
		return HTTP_YES;
	}
	if (req->deferred) {
		/* On a worker: the pool thread queues it once resumed. */
		if (req->pending) {
			http_response_free(resp);
			return HTTP_NO;
		}
		req->pending = resp;
		return HTTP_YES;
	}
	return queue_response(req, resp);
}

/* Hand resp to MHD on req's connection (a pool thread); consumes resp. */
static enum http_result queue_response(struct http_req *req, struct http_response *resp)
{
	struct MHD_Response *mr;
	enum MHD_Result r;

	if (resp->read) {
		mr = MHD_create_response_from_callback(resp->size, resp->block, resp->read, resp->cls,
						       resp->free_cls);
		if (!mr) {
			http_response_free(resp);
			return HTTP_NO;
		}
		/* MHD owns the stream now. */
		resp->read = NULL;
		resp->free_cls = NULL;
		resp->cls = NULL;
	} else if (resp->body) {
		mr = MHD_create_response_from_buffer(resp->len, resp->body, MHD_RESPMEM_MUST_FREE);
		if (mr)
			resp->body = NULL;
	} else {
		mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!mr) {
		http_response_free(resp);
		return HTTP_NO;
	}
	for (unsigned i = 0; i < resp->nheaders; i++)
		MHD_add_response_header(mr, resp->headers[i].name, resp->headers[i].value);
	r = MHD_queue_response(req->conn, resp->status, mr);
	MHD_destroy_response(mr);
	http_response_free(resp);
	return r == MHD_YES ? HTTP_YES : HTTP_NO;
}

enum http_result http_reply(struct http_req *req, unsigned status, const char *content_type,
			   const char *body, size_t len)
{
	struct http_response *resp = http_response_new(status, content_type);

	if (!resp || http_response_set_body(resp, body, len) < 0) {
		http_response_free(resp);
		return HTTP_NO;
	}
	return http_send(req, resp);
}

enum http_result http_reply_owned(struct http_req *req, unsigned status, const char *content_type,
				 char *body, size_t len)
{
	struct http_response *resp = http_response_new(status, content_type);

	if (!resp) {
		free(body);
		return HTTP_NO;
	}
	http_response_take_body(resp, body, len);
	return http_send(req, resp);
}

enum http_result http_reply_json(struct http_req *req, unsigned status, const json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);

	if (!s)
		return HTTP_NO;
	return http_reply_owned(req, status, "application/json", s, strlen(s));
}

enum http_result http_reply_stream(struct http_req *req, unsigned status, const char *content_type,
				  http_read_fn read, void *cls, http_free_fn free_cls)
{
	struct http_response *resp = http_response_new(status, content_type);

	if (!resp) {
		if (free_cls)
			free_cls(cls);
		return HTTP_NO;
	}
	http_response_set_stream(resp, HTTP_SIZE_UNKNOWN, 64 * 1024, read, cls, free_cls);
	return http_send(req, resp);
}

/* --- connections and their deadlines ------------------------------------- */

static struct conn_ctx *conn_ctx_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void set_deadline(struct conn_ctx *cc, int64_t ms_from_now)
{
	if (cc)
		atomic_store(&cc->deadline_ms, ms_from_now ? util_mono_ms() + ms_from_now : 0);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct http_server *srv = cls;
	struct conn_ctx *cc = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
			MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);

		atomic_fetch_add(&srv->nconns, 1);
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return; /* no deadline for this one: MHD's inactivity timeout still holds */
		cc->fd = ci ? ci->connect_fd : -1;
		set_deadline(cc, srv->idle_ms);
		pthread_mutex_lock(&srv->conn_lock);
		cc->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = cc;
		srv->conns = cc;
		pthread_mutex_unlock(&srv->conn_lock);
		*socket_context = cc;
		return;
	}
	/* MHD_CONNECTION_NOTIFY_CLOSED: the fd is closed after this returns, so
	 * the sweeper (under conn_lock) never shuts down a reused fd. */
	atomic_fetch_sub(&srv->nconns, 1);
	if (!cc)
		return;
	pthread_mutex_lock(&srv->conn_lock);
	if (cc->prev)
		cc->prev->next = cc->next;
	else
		srv->conns = cc->next;
	if (cc->next)
		cc->next->prev = cc->prev;
	pthread_mutex_unlock(&srv->conn_lock);
	free(cc);
	*socket_context = NULL;
}

/* The request line has arrived: the rest of the request has request_ms. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct http_server *srv = cls;

	(void)uri;
	set_deadline(conn_ctx_of(conn), srv->request_ms);
	return NULL;
}

static void *sweeper_main(void *arg)
{
	struct http_server *srv = arg;

	pthread_mutex_lock(&srv->sweep_lock);
	while (!srv->sweep_stop) {
		struct timespec ts;
		int64_t now;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&srv->sweep_cond, &srv->sweep_lock, &ts);
		if (srv->sweep_stop)
			break;
		pthread_mutex_unlock(&srv->sweep_lock);
		now = util_mono_ms();
		pthread_mutex_lock(&srv->conn_lock);
		for (struct conn_ctx *cc = srv->conns; cc; cc = cc->next) {
			int64_t dl = atomic_load(&cc->deadline_ms);

			if (dl && now >= dl && !cc->cut && cc->fd >= 0) {
				/* MHD sees the end of the stream and closes it. */
				shutdown(cc->fd, SHUT_RDWR);
				cc->cut = true;
				atomic_fetch_add(&srv->timed_out, 1);
			}
		}
		pthread_mutex_unlock(&srv->conn_lock);
		/* Waiting streams look at their deadlines (and at shutdown). */
		http_streams_wake();
		pthread_mutex_lock(&srv->sweep_lock);
	}
	pthread_mutex_unlock(&srv->sweep_lock);
	return NULL;
}

/* --- workers ------------------------------------------------------------- */

static void *worker_main(void *arg)
{
	struct lane *l = arg;
	struct http_server *srv = l->srv;

	pthread_setname_np(pthread_self(), l == &srv->lanes[LANE_BULK] ? "ah-http-bulk" : "ah-http-kube");
	if (l->nice_delta) {
		/* Linux: a thread's own nice value (lowering it needs no privilege). */
		pid_t tid = (pid_t)syscall(SYS_gettid);

		errno = 0;
		int cur = getpriority(PRIO_PROCESS, (id_t)tid);

		if (errno == 0)
			setpriority(PRIO_PROCESS, (id_t)tid, cur + l->nice_delta);
	}
	pthread_mutex_lock(&l->mu);
	for (;;) {
		struct http_req *req;

		while (!l->head && !l->stop)
			pthread_cond_wait(&l->cv, &l->mu);
		if (!l->head)
			break; /* stopping and drained */
		req = l->head;
		l->head = req->lane_next;
		if (!l->head)
			l->tail = NULL;
		l->queued--;
		pthread_mutex_unlock(&l->mu);
		req->lane_next = NULL;
		req->result = srv->handler(srv->userdata, req);
		req->answered = true;
		/* The pool thread takes it from here (on_request again). */
		MHD_resume_connection(req->conn);
		pthread_mutex_lock(&l->mu);
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

/* The lane of req; NULL: answered on the pool thread itself (a read of the
 * interactive kind: it never waits for a commit, and the hand-off to a worker
 * would cost more than the answer). */
static struct lane *lane_for(struct http_server *srv, const struct http_req *req)
{
	for (char **p = srv->bulk_prefixes; p && *p; p++)
		if (req->path && strncmp(req->path, *p, strlen(*p)) == 0)
			return &srv->lanes[LANE_BULK];
	if (req->method && (!strcmp(req->method, "GET") || !strcmp(req->method, "HEAD")))
		return NULL;
	return &srv->lanes[LANE_INTERACTIVE];
}

/* Suspend req's connection and queue req to its lane: false when it has
 * none or the lane takes no more (the server stops): the caller answers it
 * inline. */
static bool lane_push(struct http_server *srv, struct http_req *req)
{
	struct lane *l = lane_for(srv, req);

	if (!l)
		return false;
	pthread_mutex_lock(&l->mu);
	if (l->stop || !l->started) {
		pthread_mutex_unlock(&l->mu);
		return false;
	}
	req->deferred = true;
	MHD_suspend_connection(req->conn);
	req->lane_next = NULL;
	if (l->tail)
		l->tail->lane_next = req;
	else
		l->head = req;
	l->tail = req;
	l->queued++;
	pthread_cond_signal(&l->cv);
	pthread_mutex_unlock(&l->mu);
	return true;
}

static void lanes_stop(struct http_server *srv)
{
	for (int i = 0; i < LANES; i++) {
		struct lane *l = &srv->lanes[i];

		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_broadcast(&l->cv);
		pthread_mutex_unlock(&l->mu);
		for (unsigned t = 0; t < l->started; t++)
			pthread_join(l->threads[t], NULL);
		l->started = 0;
	}
}

static void lanes_free(struct http_server *srv)
{
	for (int i = 0; i < LANES; i++) {
		free(srv->lanes[i].threads);
		pthread_mutex_destroy(&srv->lanes[i].mu);
		pthread_cond_destroy(&srv->lanes[i].cv);
	}
	for (char **p = srv->bulk_prefixes; p && *p; p++)
		free(*p);
	free(srv->bulk_prefixes);
}

static int lanes_init(struct http_server *srv, const struct http_server_opts *opts)
{
	const unsigned n[LANES] = {
		[LANE_INTERACTIVE] = opts->interactive_workers ? opts->interactive_workers
							       : HTTP_DEFAULT_INTERACTIVE_WORKERS,
		[LANE_BULK] = opts->workers ? opts->workers : HTTP_DEFAULT_WORKERS,
	};
	size_t np = 0;

	for (int i = 0; i < LANES; i++) {
		struct lane *l = &srv->lanes[i];

		l->srv = srv;
		pthread_mutex_init(&l->mu, NULL);
		pthread_cond_init(&l->cv, NULL);
		l->n = n[i];
		l->nice_delta = i == LANE_BULK ? HTTP_BULK_NICE : 0;
		l->threads = calloc(l->n, sizeof(*l->threads));
		if (!l->threads)
			return -ENOMEM;
	}
	while (opts->bulk_prefixes && opts->bulk_prefixes[np])
		np++;
	srv->bulk_prefixes = calloc(np + 1, sizeof(*srv->bulk_prefixes));
	if (!srv->bulk_prefixes)
		return -ENOMEM;
	for (size_t i = 0; i < np; i++)
		if (!(srv->bulk_prefixes[i] = strdup(opts->bulk_prefixes[i])))
			return -ENOMEM;
	return 0;
}

/* Start the workers (after MHD: they resume its connections). */
static void lanes_start(struct http_server *srv)
{
	for (int i = 0; i < LANES; i++) {
		struct lane *l = &srv->lanes[i];

		pthread_mutex_lock(&l->mu);
		for (unsigned t = 0; t < l->n; t++) {
			if (pthread_create(&l->threads[t], NULL, worker_main, l) != 0)
				break;
			l->started++;
		}
		pthread_mutex_unlock(&l->mu);
		if (l->started < l->n)
			log_warn("http: %u of %u %s workers started", l->started, l->n,
				 i == LANE_BULK ? "bulk" : "interactive");
	}
}

/* Run the handler: on a worker, or here when the lanes take no more. */
static enum MHD_Result run_handler(struct http_server *srv, struct http_req *req)
{
	if (lane_push(srv, req))
		return MHD_YES;
	return srv->handler(srv->userdata, req) == HTTP_YES ? MHD_YES : MHD_NO;
}

static bool declared_too_big(struct http_req *req, size_t max)
{
	const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
	unsigned long long v;
	char *end;

	if (!cl || !max)
		return false;
	errno = 0;
	v = strtoull(cl, &end, 10);
	/* Overflow counts as too big; a malformed value is MHD's to refuse. */
	return end != cl && (errno == ERANGE || v > max);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct http_server *srv = cls;
	struct http_req *req = *con_cls;

	(void)version;
	if (req && req->answered) {
		/* Resumed: the worker ran the handler; send what it queued. */
		struct http_response *resp = req->pending;

		req->pending = NULL;
		req->answered = false;
		req->deferred = false;
		if (!resp)
			return MHD_NO;
		if (req->result != HTTP_YES) {
			http_response_free(resp);
			return MHD_NO;
		}
		return queue_response(req, resp) == HTTP_YES ? MHD_YES : MHD_NO;
	}
	if (req && req->deferred)
		return MHD_YES; /* not expected: suspended while a worker has it */
	if (!req) {
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		req->conn = conn;
		req->server = srv;
		req->method = method;
		req->path = url;
		req->conn_ctx = conn_ctx_of(conn);
		strbuf_init(&req->body, srv->max_body);
		*con_cls = req;
		if (atomic_load(&srv->nconns) > srv->max_conns) {
			struct http_response *resp = busy_response(req, "too many connections");

			atomic_fetch_add(&srv->refused_conns, 1);
			if (resp)
				http_response_add_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
			set_deadline(req->conn_ctx, 0);
			return http_send(req, resp) == HTTP_YES ? MHD_YES : MHD_NO;
		}
		/* A declared length over the bound is refused now, before any of
		 * the body is read (MHD then discards it and closes). */
		if (declared_too_big(req, srv->max_body)) {
			req->too_big = true;
			strbuf_release(&req->body);
			set_deadline(req->conn_ctx, 0);
			return srv->handler(srv->userdata, req) == HTTP_YES ? MHD_YES : MHD_NO;
		}
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (!req->too_big && strbuf_add(&req->body, upload_data, *upload_data_size) < 0) {
			/* Keep reading (and dropping) the rest so the 413 can be sent. */
			req->too_big = true;
			strbuf_release(&req->body);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	set_deadline(req->conn_ctx, 0);
	return run_handler(srv, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *srv = cls;
	struct http_req *req = *con_cls;

	(void)toe;
	/* Idle again: the next request line is due within idle_ms. */
	set_deadline(conn_ctx_of(conn), srv->idle_ms);
	if (req) {
		pthread_mutex_lock(&wait_lock);
		if (req->suspended)
			wait_unlink(req);
		pthread_mutex_unlock(&wait_lock);
		http_response_free(req->pending);
		strbuf_release(&req->body);
		free(req);
		*con_cls = NULL;
	}
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;

	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	/* Clients that hang up (mid-handshake, mid-request, mid-stream) are
	 * routine: not logged at all, even with -v. */
	static const char *const routine[] = { "TLS", "handshake", "closed", "Socket", "terminated", "reset by peer",
					       "Broken pipe", "pull function", "push function", "Failed to send",
					       "Failed to receive", "timed out", "unexpected", NULL };

	for (const char *const *p = routine; *p; p++)
		if (strstr(line, *p))
			return;
	log_warn("http: %s", line);
}

static int parse_listen(const char *listen, struct sockaddr_storage *ss, ah_err *err)
{
	char host[256];
	const char *colon;
	long port;
	char *end;

	memset(ss, 0, sizeof(*ss));
	if (listen[0] == '[') {
		const char *rb = strchr(listen, ']');

		if (!rb || rb[1] != ':')
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(rb - listen - 1), listen + 1);
		colon = rb + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - listen), listen);
	}
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535)
		goto bad;
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			goto bad;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (!host[0] || strcmp(host, "0.0.0.0") == 0)
			s4->sin_addr.s_addr = htonl(INADDR_ANY);
		else if (strcmp(host, "localhost") == 0)
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			goto bad;
	}
	return 0;
bad:
	return ah_err_set(err, EINVAL, 0, "", "--listen %s: expected HOST:PORT with a numeric address",
			  listen);
}

/* Our own listening socket, so a port in use fails with the system's reason
 * ("Address already in use").  SO_REUSEADDR only (a restart may bind while
 * old connections sit in TIME_WAIT); never SO_REUSEPORT, which would let a
 * second hub bind the same port and take half of the connections. */
static int open_listener(const struct sockaddr_storage *ss, const char *listen_str,
			 unsigned *ret_port, ah_err *err)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	struct sockaddr_storage bound;
	int fd, one = 1, e;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) < 0 || listen(fd, 4096) < 0)
		goto fail;
	len = sizeof(bound);
	if (getsockname(fd, (struct sockaddr *)&bound, &len) < 0)
		goto fail;
	*ret_port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
						   : ((struct sockaddr_in *)&bound)->sin_port);
	return fd;
fail:
	e = errno;
	if (fd >= 0)
		close(fd);
	return ah_err_set(err, e, 0, "", "cannot listen on %s: %s", listen_str, strerror(e));
}

/* Connections are file descriptors: take all the hard limit allows. */
static rlim_t raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 1024;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t want = rl.rlim_max;

		rl.rlim_cur = want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

int http_server_start(const struct http_server_opts *opts, http_handler_fn handler,
		      void *userdata, struct http_server **ret, ah_err *err)
{
	struct http_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	unsigned threads = opts->threads ? opts->threads : HTTP_DEFAULT_THREADS;
	unsigned hard;
	rlim_t nofile;
	int r, lfd;

	if (!srv)
		return -ENOMEM;
	r = parse_listen(opts->listen, &ss, err);
	if (r < 0) {
		free(srv);
		return r;
	}
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->handler = handler;
	srv->userdata = userdata;
	srv->max_body = opts->max_body;
	srv->max_conns = opts->max_conns ? opts->max_conns : HTTP_DEFAULT_MAX_CONNS;
	srv->max_downloads = opts->max_downloads ? opts->max_downloads : HTTP_DEFAULT_MAX_DOWNLOADS;
	srv->idle_ms = 1000LL * (opts->idle_timeout ? opts->idle_timeout : HTTP_DEFAULT_IDLE_TIMEOUT);
	srv->request_ms = 1000LL * (opts->request_timeout ? opts->request_timeout : HTTP_DEFAULT_REQUEST_TIMEOUT);
	/* Past max_conns requests get 503; the listener takes a margin more
	 * so those clients hear why before it refuses outright. */
	hard = srv->max_conns + srv->max_conns / 16 + 16;
	nofile = raise_nofile();
	/* Each download holds a file too; keep some for the store and logs. */
	if ((rlim_t)hard + srv->max_downloads + 256 > nofile) {
		rlim_t room = nofile > (rlim_t)srv->max_downloads + 512 ? nofile - srv->max_downloads - 256 : 256;

		log_warn("http: open file limit %llu: at most %llu connections (--max-connections %u)",
			 (unsigned long long)nofile, (unsigned long long)room, srv->max_conns);
		hard = (unsigned)room;
		if (srv->max_conns > hard)
			srv->max_conns = hard - hard / 17;
	}
	lfd = open_listener(&ss, opts->listen, &srv->port, err);
	if (lfd < 0) {
		free(srv);
		return lfd;
	}
	if (opts->cert_pem) {
		flags |= MHD_USE_TLS;
		srv->cert = strdup(opts->cert_pem);
		srv->key = strdup(opts->key_pem);
	}
	if (lanes_init(srv, opts) < 0) {
		close(lfd);
		lanes_free(srv);
		free(srv->cert);
		free(srv->key);
		free(srv);
		return ah_err_set(err, ENOMEM, 0, "", "cannot serve on %s: out of memory", opts->listen);
	}
	pthread_mutex_init(&srv->conn_lock, NULL);
	pthread_mutex_init(&srv->sweep_lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&srv->sweep_cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	pthread_mutex_lock(&wait_lock);
	wait_closed = false;
	pthread_mutex_unlock(&wait_lock);
	srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
				  MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_THREAD_POOL_SIZE, threads,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				  MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
				  MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
				  /* A backstop: MHD closes a connection silent this long. */
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(srv->idle_ms / 1000),
				  MHD_OPTION_CONNECTION_LIMIT, hard,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY,
				  opts->cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, srv->cert,
				  MHD_OPTION_HTTPS_MEM_KEY, srv->key,
				  MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
				  MHD_OPTION_END);
	if (!srv->d) {
		/* MHD may have closed lfd on its failure paths: not closed again here. */
		pthread_mutex_destroy(&srv->conn_lock);
		pthread_mutex_destroy(&srv->sweep_lock);
		pthread_cond_destroy(&srv->sweep_cond);
		lanes_free(srv);
		free(srv->cert);
		free(srv->key);
		free(srv);
		return ah_err_set(err, EIO, 0, "", "cannot serve on %s: the HTTP server did not start (see the log above)",
				  opts->listen);
	}
	lanes_start(srv);
	if (pthread_create(&srv->sweeper, NULL, sweeper_main, srv) == 0)
		srv->sweeper_started = true;
	else
		log_warn("http: no sweeper thread: request and idle timeouts are MHD's inactivity timeout only");
	log_info("http: %u threads, %u+%u workers, up to %u connections (%u before 503), %u downloads, "
		 "idle timeout %llds, request timeout %llds, open file limit %llu",
		 threads, srv->lanes[LANE_INTERACTIVE].started, srv->lanes[LANE_BULK].started, hard, srv->max_conns, srv->max_downloads, (long long)(srv->idle_ms / 1000),
		 (long long)(srv->request_ms / 1000), (unsigned long long)nofile);
	*ret = srv;
	return 0;
}

unsigned http_server_port(struct http_server *srv)
{
	return srv->port;
}

void http_server_stats(struct http_server *srv, struct http_server_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->connections = atomic_load(&srv->nconns);
	ret->downloads = atomic_load(&srv->ndownloads);
	pthread_mutex_lock(&wait_lock);
	ret->suspended = wait_count;
	pthread_mutex_unlock(&wait_lock);
	ret->refused_conns = atomic_load(&srv->refused_conns);
	ret->refused_downloads = atomic_load(&srv->refused_downloads);
	ret->timed_out = atomic_load(&srv->timed_out);
	for (int i = 0; i < LANES; i++) {
		pthread_mutex_lock(&srv->lanes[i].mu);
		ret->queued[i] = srv->lanes[i].queued;
		pthread_mutex_unlock(&srv->lanes[i].mu);
	}
}

unsigned http_server_connections(struct http_server *srv)
{
	return atomic_load(&srv->nconns);
}

void http_server_stop(struct http_server *srv)
{
	if (!srv)
		return;
	http_server_set_stopping();
	if (srv->sweeper_started) {
		pthread_mutex_lock(&srv->sweep_lock);
		srv->sweep_stop = true;
		pthread_cond_signal(&srv->sweep_cond);
		pthread_mutex_unlock(&srv->sweep_lock);
		pthread_join(srv->sweeper, NULL);
	}
	/* Queued requests are answered (their connections resumed); requests
	 * that arrive from now on run on the pool threads. */
	lanes_stop(srv);
	/* MHD must not stop with suspended connections: resume them all and
	 * let no stream suspend again; their readers see stopping and end. */
	pthread_mutex_lock(&wait_lock);
	wait_closed = true;
	pthread_mutex_unlock(&wait_lock);
	http_streams_wake();
	MHD_stop_daemon(srv->d);
	pthread_mutex_destroy(&srv->conn_lock);
	pthread_mutex_destroy(&srv->sweep_lock);
	pthread_cond_destroy(&srv->sweep_cond);
	lanes_free(srv);
	free(srv->cert);
	free(srv->key);
	free(srv);
}
