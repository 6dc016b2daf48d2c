/* imagesvc.c - the image service: the discovery ISO of an InfraEnv streamed
 * as the base ISO with its Ignition payload overlaid at the embed area
 * (image.md §2.5), the PXE initrd with the payload appended, and the raw
 * boot artifacts.  Nothing is written per InfraEnv: every response reads the
 * base ISO and overlays the payload on the fly, so memory per download is
 * O(1).  Range (one range) and HEAD as Go's http.ServeContent does. */
#include "hub-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "image/iso.h"

static enum MHD_Result reply_text(struct http_req *req, unsigned status, const char *text)
{
	return http_reply(req, status, "text/plain; charset=utf-8", text, strlen(text));
}

enum src_kind { SRC_ISO, SRC_INITRD, SRC_FILE };

struct stream {
	enum src_kind kind;
	struct iso_overlay *iso;
	struct initrd_overlay *initrd;
	int fd;                /* SRC_FILE: the base ISO; the file is a slice of it */
	uint64_t file_off;
	uint64_t pos, end;     /* absolute positions in the served object */
};

static void stream_free(void *cls)
{
	struct stream *s = cls;

	iso_overlay_free(s->iso);
	initrd_overlay_free(s->initrd);
	if (s->fd >= 0)
		close(s->fd);
	free(s);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *s = cls;
	uint64_t at = s->pos + pos;
	ssize_t n;

	if (at >= s->end)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (max > s->end - at)
		max = (size_t)(s->end - at);
	switch (s->kind) {
	case SRC_ISO: n = iso_overlay_read(s->iso, at, buf, max); break;
	case SRC_INITRD: n = initrd_overlay_read(s->initrd, at, buf, max); break;
	default: n = pread(s->fd, buf, max, (off_t)(s->file_off + at)); break;
	}
	if (n <= 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return n;
}

/* Parse one "bytes=a-b" range against size.  0 = whole, 1 = range, -1 = unsatisfiable. */
static int parse_range(const char *h, uint64_t size, uint64_t *start, uint64_t *end)
{
	unsigned long long a = 0, b = 0;
	const char *p;
	char *e;

	if (!h || strncmp(h, "bytes=", 6) != 0 || strchr(h, ','))
		return 0; /* several ranges: serve the whole object (allowed) */
	p = h + 6;
	if (*p == '-') {
		b = strtoull(p + 1, &e, 10);
		if (*e || b == 0)
			return -1;
		*start = b >= size ? 0 : size - b;
		*end = size;
		return 1;
	}
	a = strtoull(p, &e, 10);
	if (*e != '-')
		return 0;
	if (a >= size)
		return -1;
	if (e[1] == '\0') {
		b = size - 1;
	} else {
		b = strtoull(e + 1, &e, 10);
		if (*e || b < a)
			return 0;
		if (b >= size)
			b = size - 1;
	}
	*start = a;
	*end = b + 1;
	return 1;
}

static enum MHD_Result serve(struct http_req *req, struct stream *s, uint64_t size, const char *filename)
{
	struct MHD_Response *resp;
	uint64_t start = 0, end = size;
	unsigned status = 200;
	enum MHD_Result r;
	char hdr[256];
	int rr = parse_range(http_header(req, "Range"), size, &start, &end);

	if (rr < 0) {
		stream_free(s);
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		snprintf(hdr, sizeof(hdr), "bytes */%llu", (unsigned long long)size);
		MHD_add_response_header(resp, "Content-Range", hdr);
		r = MHD_queue_response(req->conn, 416, resp);
		MHD_destroy_response(resp);
		return r;
	}
	if (rr > 0)
		status = 206;
	s->pos = start;
	s->end = end;
	resp = MHD_create_response_from_callback(end - start, 256 * 1024, stream_read, s, stream_free);
	if (!resp) {
		stream_free(s);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Accept-Ranges", "bytes");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	if (rr > 0) {
		snprintf(hdr, sizeof(hdr), "bytes %llu-%llu/%llu", (unsigned long long)start,
			 (unsigned long long)end - 1, (unsigned long long)size);
		MHD_add_response_header(resp, "Content-Range", hdr);
	}
	snprintf(hdr, sizeof(hdr), "attachment; filename=%s", filename);
	MHD_add_response_header(resp, "Content-Disposition", hdr);
	r = MHD_queue_response(req->conn, status, resp);
	MHD_destroy_response(resp);
	return r;
}

/* Verify an image token and find its InfraEnv; 0, or a reply was queued. */
static int authorize(struct hub *h, struct http_req *req, const char *token, const char *path_id,
		     json_t **ret_ie, enum MHD_Result *res)
{
	json_t *claims = NULL, *ie = NULL;
	const char *id;
	ah_err err;

	if (!token || jwt_verify(h->keys, token, &claims, &err) < 0) {
		*res = reply_text(req, 401, "Unauthorized");
		return -EACCES;
	}
	id = json_string_value(json_object_get(claims, "infra_env_id"));
	if (!id)
		id = json_string_value(json_object_get(claims, "sub"));
	if (!id || (path_id && strcmp(path_id, id) != 0) || hub_find_infraenv(h, id, &ie) < 0) {
		json_decref(claims);
		*res = reply_text(req, 404, "Object Not Found");
		return -ENOENT;
	}
	json_decref(claims);
	*ret_ie = ie;
	return 0;
}

static int payload_for(struct hub *h, const json_t *ie, unsigned char **ret, size_t *ret_len, ah_err *err)
{
	char *ign = NULL;
	size_t len = 0;
	int r = hub_build_ignition(h, ie, &ign, &len, NULL, err);

	if (r < 0)
		return r;
	r = ignition_payload_build(ign, len, ret, ret_len, err);
	free(ign);
	return r;
}

static const struct os_image *os_for(struct hub *h, const json_t *ie, const char *version, const char *arch)
{
	const json_t *spec = json_object_get(ie, "spec");

	if (!arch || !*arch)
		arch = json_string_value(json_object_get(spec, "cpuArchitecture"));
	return hub_pick_os_image(h, version, arch);
}

static enum MHD_Result serve_iso(struct hub *h, struct http_req *req, const char *token,
				 const char *version, const char *arch, const char *file)
{
	json_t *ie = NULL;
	const struct os_image *os;
	struct stream *s;
	unsigned char *payload = NULL;
	size_t plen = 0;
	enum MHD_Result res;
	char fname[128];
	ah_err err;
	int r;

	if (strcmp(file, "minimal.iso") != 0 && strcmp(file, "full.iso") != 0) {
		char msg[300];

		snprintf(msg, sizeof(msg), "unrecognized file name %s", file);
		return reply_text(req, 404, msg);
	}
	if (authorize(h, req, token, NULL, &ie, &res) < 0)
		return res;
	os = os_for(h, ie, version, arch);
	if (!os) {
		json_decref(ie);
		return reply_text(req, 404, "404 page not found");
	}
	r = payload_for(h, ie, &payload, &plen, &err);
	snprintf(fname, sizeof(fname), "%s-discovery.iso",
		 json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid")));
	json_decref(ie);
	if (r < 0)
		return reply_text(req, err.status >= 400 && err.status < 500 ? err.status : 500, err.message);
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(payload);
		return MHD_NO;
	}
	s->fd = -1;
	s->kind = SRC_ISO;
	r = iso_overlay_open(os->url, payload, plen, &s->iso, &err);
	free(payload);
	if (r < 0) {
		free(s);
		log_warn("image service: %s: %s", os->url, err.message);
		return reply_text(req, 500, "");
	}
	return serve(req, s, iso_overlay_size(s->iso), fname);
}

static enum MHD_Result serve_initrd(struct hub *h, struct http_req *req, const char *id)
{
	const char *token = http_query(req, "api_key");
	json_t *ie = NULL;
	const struct os_image *os;
	struct stream *s;
	unsigned char *payload = NULL;
	size_t plen = 0;
	enum MHD_Result res;
	char fname[128];
	ah_err err;
	int r;

	if (authorize(h, req, token, id, &ie, &res) < 0)
		return res;
	os = os_for(h, ie, http_query(req, "version"), http_query(req, "arch"));
	if (!os) {
		json_decref(ie);
		return reply_text(req, 400, "unknown version");
	}
	r = payload_for(h, ie, &payload, &plen, &err);
	json_decref(ie);
	if (r < 0)
		return reply_text(req, err.status >= 400 && err.status < 500 ? err.status : 500, err.message);
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(payload);
		return MHD_NO;
	}
	s->fd = -1;
	s->kind = SRC_INITRD;
	r = initrd_overlay_open(os->url, payload, plen, &s->initrd, &err);
	free(payload);
	if (r < 0) {
		free(s);
		return reply_text(req, 500, "");
	}
	snprintf(fname, sizeof(fname), "%s-initrd.img", id);
	return serve(req, s, initrd_overlay_size(s->initrd), fname);
}

static enum MHD_Result serve_artifact(struct hub *h, struct http_req *req, const char *which)
{
	const struct os_image *os = hub_pick_os_image(h, http_query(req, "version"), http_query(req, "arch"));
	const char *path = strcmp(which, "kernel") == 0 ? "/images/pxeboot/vmlinuz" :
			   strcmp(which, "rootfs") == 0 ? "/images/pxeboot/rootfs.img" : NULL;
	struct iso_area area;
	struct stream *s;
	ah_err err;
	int fd;

	if (!path)
		return reply_text(req, 404, "404 page not found");
	if (!os)
		return reply_text(req, 400, "unknown version");
	fd = open(os->url, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reply_text(req, 500, "");
	if (iso_find_file(fd, path, &area, &err) < 0) {
		close(fd);
		return reply_text(req, 404, "404 page not found");
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return MHD_NO;
	}
	s->kind = SRC_FILE;
	s->fd = fd;
	s->file_off = area.offset;
	return serve(req, s, area.length, strcmp(which, "kernel") == 0 ? "vmlinuz" : "rootfs.img");
}

enum MHD_Result hub_imagesvc(struct hub *h, struct http_req *req, bool *handled)
{
	const char *p = req->path;
	char a[2048], b[128], c[64], d[64];

	*handled = true;
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		if (strncmp(p, "/byapikey/", 10) == 0 || strncmp(p, "/images/", 8) == 0 ||
		    strncmp(p, "/boot-artifacts/", 16) == 0)
			return reply_text(req, 405, "method not allowed");
		*handled = false;
		return MHD_NO;
	}
	if (sscanf(p, "/byapikey/%2047[^/]/%127[^/]/%63[^/]/%63s", a, b, c, d) == 4)
		return serve_iso(h, req, a, b, c, d);
	if (sscanf(p, "/images/%63[^/]/%127s", c, b) == 2 && strcmp(b, "pxe-initrd") == 0)
		return serve_initrd(h, req, c);
	if (sscanf(p, "/boot-artifacts/%63s", c) == 1)
		return serve_artifact(h, req, c);
	*handled = false;
	return MHD_NO;
}
