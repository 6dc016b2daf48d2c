/* server.c - libmicrohttpd glue; see server.h.
 *
 * Thread per connection: a watch may block its thread for as long as the
 * client keeps the stream open without holding up anyone else. */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"

struct http_server {
	struct MHD_Daemon *d;
	http_handler_fn handler;
	void *userdata;
	size_t max_body;
	char *cert, *key;
	unsigned port;
};

/* TLS 1.2 and 1.3 only (GnuTLS priority string). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"


static atomic_bool stopping;

bool http_server_stopping(void)
{
	return atomic_load(&stopping);
}

void http_server_set_stopping(void)
{
	atomic_store(&stopping, true);
}

const char *http_query(struct http_req *req, const char *key)
{
	return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *http_header(struct http_req *req, const char *name)
{
	return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

static enum MHD_Result queue(struct http_req *req, unsigned status, const char *ct,
			     struct MHD_Response *resp)
{
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	if (ct)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ct);
	MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
	r = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

enum MHD_Result http_reply(struct http_req *req, unsigned status, const char *content_type,
			   const char *body, size_t len)
{
	return queue(req, status, content_type,
		     MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY));
}

enum MHD_Result http_reply_owned(struct http_req *req, unsigned status, const char *content_type,
				 char *body, size_t len)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);

	if (!resp)
		free(body);
	return queue(req, status, content_type, resp);
}

enum MHD_Result http_reply_json(struct http_req *req, unsigned status, const json_t *doc)
{
	char *s = json_dumps(doc, JSON_COMPACT);

	if (!s)
		return MHD_NO;
	return http_reply_owned(req, status, "application/json", s, strlen(s));
}

enum MHD_Result http_reply_stream(struct http_req *req, unsigned status, const char *content_type,
				  MHD_ContentReaderCallback read, void *cls,
				  MHD_ContentReaderFreeCallback free_cls)
{
	struct MHD_Response *resp =
		MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, read, cls, free_cls);

	if (!resp) {
		if (free_cls)
			free_cls(cls);
		return MHD_NO;
	}
	return queue(req, status, content_type, resp);
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

	if (!req) {
		req = calloc(1, sizeof(*req));
		if (!req)
			return MHD_NO;
		req->conn = conn;
		req->method = method;
		req->path = url;
		strbuf_init(&req->body, srv->max_body);
		*con_cls = req;
		/* A declared length over the bound is refused now, before any of
		 * the body is read (MHD then discards it and closes). */
		if (declared_too_big(req, srv->max_body)) {
			req->too_big = true;
			strbuf_release(&req->body);
			return srv->handler(srv->userdata, req);
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
	return srv->handler(srv->userdata, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_req *req = *con_cls;

	if (req) {
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
	/* Clients that hang up mid-handshake are routine, not warnings. */
	if (strstr(line, "TLS") || strstr(line, "closed") || strstr(line, "Socket"))
		log_debug("http: %s", line);
	else
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

int http_server_start(const struct http_server_opts *opts, http_handler_fn handler,
		      void *userdata, struct http_server **ret, ah_err *err)
{
	struct http_server *srv = calloc(1, sizeof(*srv));
	struct sockaddr_storage ss;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
			 MHD_USE_ERROR_LOG;
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
	lfd = open_listener(&ss, opts->listen, &srv->port, err);
	if (lfd < 0) {
		free(srv);
		return lfd;
	}
	srv->handler = handler;
	srv->userdata = userdata;
	srv->max_body = opts->max_body;
	if (opts->cert_pem) {
		flags |= MHD_USE_TLS;
		srv->cert = strdup(opts->cert_pem);
		srv->key = strdup(opts->key_pem);
	}
	srv->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
				  MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv,
				  MHD_OPTION_LISTEN_SOCKET, lfd,
				  MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
				  MHD_OPTION_CONNECTION_LIMIT, opts->max_conns ? opts->max_conns : 4096u,
				  opts->cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, srv->cert,
				  MHD_OPTION_HTTPS_MEM_KEY, srv->key,
				  MHD_OPTION_HTTPS_PRIORITIES, TLS_PRIORITIES,
				  MHD_OPTION_END);
	if (!srv->d) {
		/* MHD may have closed lfd on its failure paths: not closed again here. */
		free(srv->cert);
		free(srv->key);
		free(srv);
		return ah_err_set(err, EIO, 0, "", "cannot serve on %s: the HTTP server did not start (see the log above)",
				  opts->listen);
	}
	*ret = srv;
	return 0;
}

unsigned http_server_port(struct http_server *srv)
{
	return srv->port;
}

void http_server_stop(struct http_server *srv)
{
	if (!srv)
		return;
	MHD_stop_daemon(srv->d);
	free(srv->cert);
	free(srv->key);
	free(srv);
}
