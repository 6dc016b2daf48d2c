/* imagesvc.c - the image service: the discovery ISO of an InfraEnv streamed
 * as the base ISO with its Ignition payload overlaid at the embed area
 * (image.md §2.5), the PXE initrd with the payload appended, the raw boot
 * artifacts, and the signed files of $API/infra-envs/<id>/downloads/files
 * (the discovery Ignition, the iPXE script and the static network config,
 * image.md §3, §4.4 and §5).
 * Nothing is written per InfraEnv: every response reads the base ISO and
 * overlays the payload on the fly, so memory per download is O(1).  Range
 * (one range) and HEAD as Go's http.ServeContent does.  A payload the
 * embed area cannot hold is refused with an error, never streamed. */
#include "api/api-internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/util.h"
#include "image/ignition.h"
#include "http/query.h"
#include "image/ipxe.h"
#include "image/iso.h"

static enum http_result reply_text(struct http_req *req, unsigned status, const char *text)
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
		return HTTP_STREAM_END;
	if (max > s->end - at)
		max = (size_t)(s->end - at);
	switch (s->kind) {
	case SRC_ISO: n = iso_overlay_read(s->iso, at, buf, max); break;
	case SRC_INITRD: n = initrd_overlay_read(s->initrd, at, buf, max); break;
	default: n = pread(s->fd, buf, max, (off_t)(s->file_off + at)); break;
	}
	if (n <= 0)
		return HTTP_STREAM_ERROR;
	hm_image_bytes(s->kind == SRC_ISO ? "iso" : s->kind == SRC_INITRD ? "initrd" : "file", (size_t)n);
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

static enum http_result serve(struct http_req *req, struct stream *s, uint64_t size, const char *filename)
{
	struct http_response *resp;
	uint64_t start = 0, end = size;
	unsigned status = 200;
	char hdr[256];
	int rr = parse_range(http_header(req, "Range"), size, &start, &end);

	if (rr < 0) {
		stream_free(s);
		resp = http_response_new(416, NULL);
		snprintf(hdr, sizeof(hdr), "bytes */%llu", (unsigned long long)size);
		if (resp)
			http_response_add_header(resp, "Content-Range", hdr);
		return http_send(req, resp);
	}
	if (rr > 0)
		status = 206;
	s->pos = start;
	s->end = end;
	resp = http_response_new(status, "application/octet-stream");
	if (!resp) {
		stream_free(s);
		return HTTP_NO;
	}
	http_response_set_stream(resp, end - start, 256 * 1024, stream_read, s, stream_free);
	/* Counted against the server's cap on concurrent downloads. */
	http_response_set_download(resp);
	http_response_add_header(resp, "Accept-Ranges", "bytes");
	if (rr > 0) {
		snprintf(hdr, sizeof(hdr), "bytes %llu-%llu/%llu", (unsigned long long)start,
			 (unsigned long long)end - 1, (unsigned long long)size);
		http_response_add_header(resp, "Content-Range", hdr);
	}
	snprintf(hdr, sizeof(hdr), "attachment; filename=%s", filename);
	http_response_add_header(resp, "Content-Disposition", hdr);
	hm_image_download(s->kind == SRC_ISO ? "iso" : s->kind == SRC_INITRD ? "initrd" : "file");
	return http_send(req, resp);
}

enum http_result hub_reply_error(struct http_req *req, unsigned code, const char *fmt, ...)
{
	char msg[AH_ERR_MSG_MAX], codes[16];
	enum http_result r;
	json_t *body;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(codes, sizeof(codes), "%u", code);
	if (code == 401 || code == 403)
		body = json_pack("{s:i,s:s}", "code", code, "message", msg);
	else
		body = json_pack("{s:s,s:i,s:s,s:s,s:s}", "kind", "Error", "id", code, "href", "", "code", codes,
				 "reason", msg);
	r = http_reply_json(req, code, body);
	json_decref(body);
	return r;
}

/* An error the image layer or the ignition builder reported, as JSON. */
static enum http_result reply_err(struct http_req *req, const ah_err *err)
{
	unsigned status = err->status >= 400 && err->status < 600 ? (unsigned)err->status : 500;

	return hub_reply_error(req, status, "%s", err->message[0] ? err->message : "internal error");
}

/* Verify an image token and find its InfraEnv; 0, or a reply was queued.
 * A token for another InfraEnv than path_id is "Object Not Found", as
 * upstream's resource-scoped local authorization answers (backend.md §9). */
static int authorize(struct hub *h, struct http_req *req, const char *token, const char *path_id,
		     bool json_errors, json_t **ret_ie, enum http_result *res)
{
	json_t *claims = NULL, *ie = NULL;
	const char *id;
	ah_err err;

	if (!token || !*token || jwt_verify(h->keys, token, &claims, &err) < 0) {
		*res = json_errors ? hub_reply_error(req, 401, "Unauthorized") : reply_text(req, 401, "Unauthorized");
		return -EACCES;
	}
	id = json_string_value(json_object_get(claims, "infra_env_id"));
	if (!id)
		id = json_string_value(json_object_get(claims, "sub"));
	if (!id || (path_id && strcmp(path_id, id) != 0)) {
		json_decref(claims);
		*res = json_errors ? hub_reply_error(req, 404, "Object Not Found") :
				     reply_text(req, 404, "Object Not Found");
		return -ENOENT;
	}
	if (hub_find_infraenv(h, id, &ie) < 0) {
		*res = json_errors ? hub_reply_error(req, 404, "infra-env %s not found", id) :
				     reply_text(req, 404, "Object Not Found");
		json_decref(claims);
		return -ENOENT;
	}
	json_decref(claims);
	/* A rotated token is no longer the InfraEnv's. */
	if (!hub_infraenv_token_current(h, ie, token)) {
		json_decref(ie);
		*res = json_errors ? hub_reply_error(req, 401, "Unauthorized") : reply_text(req, 401, "Unauthorized");
		return -EACCES;
	}
	*ret_ie = ie;
	return 0;
}

/* What serve_iso and serve_initrd share: the token, the OS image (on disk)
 * and the Ignition payload of the InfraEnv. */
struct image_req {
	const struct os_image *os;
	uint64_t area_len;       /* the OS image's embed area, 0 if unknown */
	unsigned char *payload;  /* gzip'd cpio holding config.ign */
	size_t plen;
	char id[64];             /* the InfraEnv id */
};

/* 0 with *ir filled (free ir->payload), or a reply queued in *res.
 * unknown_status: the status for an unknown version/arch (ISO routes 404,
 * the initrd 400, as image-service). */
static int image_req_prepare(struct hub *h, struct http_req *req, const char *token, const char *path_id,
			     const char *version, const char *arch, unsigned unknown_status,
			     struct image_req *ir, enum http_result *res)
{
	const json_t *spec;
	json_t *ie = NULL;
	char *ign = NULL, msg[2048];
	size_t len = 0;
	ah_err err;
	int r;

	memset(ir, 0, sizeof(*ir));
	if (authorize(h, req, token, path_id, false, &ie, res) < 0)
		return -EACCES;
	spec = json_object_get(ie, "spec");
	if (!arch || !*arch)
		arch = json_string_value(json_object_get(spec, "cpuArchitecture"));
	ir->os = hub_pick_os_image(h, version, arch);
	snprintf(ir->id, sizeof(ir->id), "%s",
		 json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid")));
	if (!ir->os) {
		json_decref(ie);
		*res = reply_text(req, unknown_status, unknown_status == 404 ? "404 page not found" : "unknown version");
		return -ENOENT;
	}
	if (hub_os_image_ready(h, ir->os, &ir->area_len, msg, sizeof(msg)) < 0) {
		json_decref(ie);
		*res = hub_reply_error(req, 503, "%s", msg);
		return -EAGAIN;
	}
	ah_err_clear(&err);
	r = hub_build_ignition(h, ie, &ign, &len, NULL, &err);
	json_decref(ie);
	if (r == 0)
		r = ignition_payload_build(ign, len, &ir->payload, &ir->plen, &err);
	free(ign);
	if (r < 0) {
		*res = reply_err(req, &err);
		return r;
	}
	return 0;
}

static enum http_result serve_iso(struct hub *h, struct http_req *req, const char *token,
				 const char *version, const char *arch, const char *file)
{
	struct image_req ir;
	struct stream *s;
	enum http_result res;
	char fname[128];
	ah_err err;
	int r;

	if (strcmp(file, "minimal.iso") != 0 && strcmp(file, "full.iso") != 0) {
		char msg[300];

		snprintf(msg, sizeof(msg), "unrecognized file name %s", file);
		return reply_text(req, 404, msg);
	}
	if (image_req_prepare(h, req, token, NULL, version, arch, 404, &ir, &res) < 0)
		return res;
	/* Never a corrupt ISO: a payload the area cannot hold is refused
	 * (the InfraEnv's ImageCreated condition says the same). */
	ah_err_clear(&err);
	if (ignition_payload_check_area(ir.plen, ir.area_len ? ir.area_len : ISO_IGNITION_AREA_SIZE, &err) < 0) {
		free(ir.payload);
		return reply_err(req, &err);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(ir.payload);
		return HTTP_NO;
	}
	s->fd = -1;
	s->kind = SRC_ISO;
	r = iso_overlay_open(ir.os->path, ir.payload, ir.plen, &s->iso, &err);
	free(ir.payload);
	if (r < 0) {
		free(s);
		log_warn("image service: %s: %s", ir.os->path, err.message);
		if (r == -E2BIG)
			return hub_reply_error(req, 400, "%s", err.message);
		return hub_reply_error(req, 500, "the OS image %s cannot be read", ir.os->version);
	}
	snprintf(fname, sizeof(fname), "%s-discovery.iso", ir.id);
	return serve(req, s, iso_overlay_size(s->iso), fname);
}

static enum http_result serve_initrd(struct hub *h, struct http_req *req, const char *id)
{
	struct image_req ir;
	struct stream *s;
	enum http_result res;
	char fname[128];
	ah_err err;
	int r;

	if (image_req_prepare(h, req, http_query(req, "api_key"), id, http_query(req, "version"),
			      http_query(req, "arch"), 400, &ir, &res) < 0)
		return res;
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(ir.payload);
		return HTTP_NO;
	}
	s->fd = -1;
	s->kind = SRC_INITRD;
	r = initrd_overlay_open(ir.os->path, ir.payload, ir.plen, &s->initrd, &err);
	free(ir.payload);
	if (r < 0) {
		free(s);
		log_warn("image service: %s: %s", ir.os->path, err.message);
		return hub_reply_error(req, 500, "the OS image %s cannot be read", ir.os->version);
	}
	snprintf(fname, sizeof(fname), "%s-initrd.img", ir.id);
	return serve(req, s, initrd_overlay_size(s->initrd), fname);
}

static enum http_result serve_artifact(struct hub *h, struct http_req *req, const char *which)
{
	const struct os_image *os = hub_pick_os_image(h, http_query(req, "version"), http_query(req, "arch"));
	const char *path = strcmp(which, "kernel") == 0 ? "/images/pxeboot/vmlinuz" :
			   strcmp(which, "rootfs") == 0 ? "/images/pxeboot/rootfs.img" : NULL;
	struct iso_area area;
	struct stream *s;
	char msg[2048];
	ah_err err;
	int fd;

	if (!path)
		return reply_text(req, 404, "404 page not found");
	if (!os)
		return reply_text(req, 400, "unknown version");
	if (hub_os_image_ready(h, os, NULL, msg, sizeof(msg)) < 0)
		return hub_reply_error(req, 503, "%s", msg);
	fd = open(os->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return reply_text(req, 500, "");
	if (iso_find_file(fd, path, &area, &err) < 0) {
		close(fd);
		return reply_text(req, 404, "404 page not found");
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return HTTP_NO;
	}
	s->kind = SRC_FILE;
	s->fd = fd;
	s->file_off = area.offset;
	return serve(req, s, area.length, strcmp(which, "kernel") == 0 ? "vmlinuz" : "rootfs.img");
}

/* The deploy ramdisk of disk image deploys (controllers/ironic.h): a live
 * ISO whose Ignition runs only the ironic agent, pointed at the hub's Ironic
 * API (the agent API base).  The same for every host: the agent finds its
 * node by MAC (lookup) and gets its token there, so the image holds no
 * secret and needs no key. */
static const char IRONIC_AGENT_UNIT[] =
	"[Unit]\n"
	"Description=Ironic agent (deploy ramdisk)\n"
	"Wants=network-online.target\n"
	"After=network-online.target\n"
	"[Service]\n"
	"TimeoutStartSec=0\n"
	"Restart=on-failure\n"
	"ExecStart=/usr/bin/podman run --rm --privileged --network host --name ironic-agent "
	"-v /dev:/dev -v /sys:/sys -v /etc/ironic-python-agent.conf:/etc/ironic-python-agent/ignition.conf:z "
	"quay.io/metal3-io/ironic-agent-image:latest\n"
	"[Install]\n"
	"WantedBy=multi-user.target\n";

static char *data_url(const char *text)
{
	char *b = util_base64_encode(text, strlen(text)), *u = NULL;

	if (b && asprintf(&u, "data:text/plain;charset=utf-8;base64,%s", b) < 0)
		u = NULL;
	free(b);
	return u;
}

static enum http_result serve_ironic_iso(struct hub *h, struct http_req *req)
{
	const struct os_image *os = hub_pick_os_image(h, http_query(req, "version"), http_query(req, "arch"));
	char *conf = NULL, *curl = NULL, *caurl = NULL, *ign = NULL, msg[2048];
	unsigned char *payload = NULL;
	size_t plen = 0;
	uint64_t area_len = 0;
	json_t *doc = NULL;
	struct stream *s;
	ah_err err = { 0 };
	int r;

	if (!os)
		return reply_text(req, 404, "404 page not found");
	if (hub_os_image_ready(h, os, &area_len, msg, sizeof(msg)) < 0)
		return hub_reply_error(req, 503, "%s", msg);
	if (asprintf(&conf, "[DEFAULT]\napi_url = %s\ninsecure = false\n%s", h->service_url,
		     h->hub_ca_pem ? "cafile = /etc/ironic-python-agent/hub-ca.crt\n" : "") < 0)
		conf = NULL;
	curl = conf ? data_url(conf) : NULL;
	caurl = h->hub_ca_pem ? data_url(h->hub_ca_pem) : NULL;
	if (curl && (!h->hub_ca_pem || caurl))
		doc = json_pack("{s:{s:s}, s:{s:[{s:s, s:i, s:b, s:{s:s}}]}, s:{s:[{s:s, s:b, s:s}]}}", "ignition",
				"version", "3.2.0", "storage", "files", "path", "/etc/ironic-python-agent.conf", "mode",
				420, "overwrite", 1, "contents", "source", curl, "systemd", "units", "name",
				"ironic-agent.service", "enabled", 1, "contents", IRONIC_AGENT_UNIT);
	if (doc && caurl)
		json_array_append_new(json_object_get(json_object_get(doc, "storage"), "files"),
				      json_pack("{s:s, s:i, s:b, s:{s:s}}", "path", "/etc/ironic-python-agent/hub-ca.crt",
						"mode", 420, "overwrite", 1, "contents", "source", caurl));
	ign = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(doc);
	free(conf);
	free(curl);
	free(caurl);
	if (!ign)
		return HTTP_NO;
	r = ignition_payload_build(ign, strlen(ign), &payload, &plen, &err);
	free(ign);
	if (r == 0)
		r = ignition_payload_check_area(plen, area_len ? area_len : ISO_IGNITION_AREA_SIZE, &err);
	if (r < 0) {
		free(payload);
		return reply_err(req, &err);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		free(payload);
		return HTTP_NO;
	}
	s->fd = -1;
	s->kind = SRC_ISO;
	r = iso_overlay_open(os->path, payload, plen, &s->iso, &err);
	free(payload);
	if (r < 0) {
		free(s);
		log_warn("image service: %s: %s", os->path, err.message);
		return hub_reply_error(req, 500, "the OS image %s cannot be read", os->version);
	}
	return serve(req, s, iso_overlay_size(s->iso), "ironic-agent.iso");
}

enum http_result hub_imagesvc(struct hub *h, struct http_req *req, bool *handled)
{
	const char *p = req->path;
	char a[2048], b[128], c[64], d[64];

	*handled = true;
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
		if (strncmp(p, "/byapikey/", 10) == 0 || strncmp(p, "/images/", 8) == 0 ||
		    strncmp(p, "/boot-artifacts/", 16) == 0)
			return reply_text(req, 405, "method not allowed");
		*handled = false;
		return HTTP_NO;
	}
	if (sscanf(p, "/byapikey/%2047[^/]/%127[^/]/%63[^/]/%63s", a, b, c, d) == 4)
		return serve_iso(h, req, a, b, c, d);
	if (strcmp(p, "/images/ironic-agent.iso") == 0)
		return serve_ironic_iso(h, req);
	if (sscanf(p, "/images/%63[^/]/%127s", c, b) == 2 && strcmp(b, "pxe-initrd") == 0)
		return serve_initrd(h, req, c);
	if (sscanf(p, "/boot-artifacts/%63s", c) == 1)
		return serve_artifact(h, req, c);
	*handled = false;
	return HTTP_NO;
}

/* --- $API/infra-envs/<id>/downloads/files (image.md §3, §5) ---------------- */

/* A file, whole, as upstream's downloads: attachment; Last-Modified = when
 * the InfraEnv's image was generated (its createdTime).  take: whether the
 * response takes body over (a large body is not copied; it is freed even
 * when this fails) or copies it. */
static enum http_result reply_file_mode(struct http_req *req, char *body, size_t len, const char *filename,
				       const json_t *ie, bool take)
{
	const char *created = json_string_value(json_object_get(json_object_get(ie, "status"), "createdTime"));
	struct http_response *resp = http_response_new(200, "application/octet-stream");
	char hdr[256];
	time_t t = 0;
	struct tm tm;

	if (!resp || (take ? http_response_take_body(resp, body, len) : http_response_set_body(resp, body, len)) < 0) {
		if (take && !resp)
			free(body);
		http_response_free(resp);
		return HTTP_NO;
	}
	if (!created || util_parse_rfc3339(created, &t) < 0)
		t = time(NULL);
	gmtime_r(&t, &tm);
	strftime(hdr, sizeof(hdr), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	http_response_add_header(resp, "Last-Modified", hdr);
	snprintf(hdr, sizeof(hdr), "attachment; filename=\"%s\"", filename);
	http_response_add_header(resp, "Content-Disposition", hdr);
	return http_send(req, resp);
}

static enum http_result reply_file(struct http_req *req, const char *body, size_t len, const char *filename,
				  const json_t *ie)
{
	return reply_file_mode(req, (char *)body, len, filename, ie, false);
}

static bool mac_ok(const char *m)
{
	int i;

	if (strlen(m) != 17)
		return false;
	for (i = 0; i < 17; i++) {
		if (i % 3 == 2 ? m[i] != ':' : !strchr("0123456789abcdefABCDEF", m[i]))
			return false;
	}
	return true;
}

struct mac_find {
	const char *ie_name, *mac;
	int found;
	json_t *agent;  /* the (last) Agent whose inventory has the MAC */
};

static int mac_visit(const store_obj *so, void *userdata)
{
	struct mac_find *mf = userdata;
	json_t *a, *ifs, *itf;
	const char *owner;
	size_t i;

	if (!strcasestr(so->json, mf->mac))
		return 0;
	a = json_loadb(so->json, so->len, 0, NULL);
	owner = json_string_value(json_object_get(json_object_get(json_object_get(a, "metadata"), "labels"),
						  LABEL_INFRAENV));
	if (!owner || strcmp(owner, mf->ie_name) != 0) {
		json_decref(a);
		return 0;
	}
	ifs = json_object_get(json_object_get(json_object_get(a, "status"), "inventory"), "interfaces");
	json_array_foreach(ifs, i, itf) {
		const char *m = json_string_value(json_object_get(itf, "macAddress"));

		if (m && strcasecmp(m, mf->mac) == 0) {
			mf->found++;
			json_decref(mf->agent);
			mf->agent = json_incref(a);
			break;
		}
	}
	json_decref(a);
	return 0;
}

static int mac_pair_visit(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

/* boot-order-control: a host that is installed (or past the point of
 * writing its disk) boots from its disk: 404 makes iPXE fall through to
 * the next boot device (image.md §5.2).  0 = boot discovery. */
static int mac_gate(struct hub *h, struct http_req *req, const json_t *ie, const char *mac, enum http_result *res)
{
	static const char *const past_disk[] = { "Done", "Configuring", "Joined", "Rebooting", "Waiting for ignition" };
	const json_t *meta = json_object_get(ie, "metadata");
	struct mac_find mf = { .ie_name = json_string_value(json_object_get(meta, "name")), .mac = mac };
	const json_t *st;
	const char *state, *stage;
	size_t i;

	/* The Agents that reported the MAC, from the runtime cache's index
	 * (never a listing of the namespace), each read and checked. */
	{
		const char *ns = json_string_value(json_object_get(meta, "namespace"));
		json_t *pairs = json_array(), *p;
		char key[600];
		size_t k;

		snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", mac);
		for (k = strlen(ns ? ns : "") + 1; key[k]; k++)
			key[k] = (char)tolower((unsigned char)key[k]);
		if (pairs)
			rt_cache_keys_by(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_MAC, key, mac_pair_visit, pairs);
		json_array_foreach(pairs, k, p) {
			store_obj *so = NULL;

			if (store_get(h->store, h->k_agent->store_key, ns, json_string_value(json_array_get(p, 1)), &so) == 0) {
				mac_visit(so, &mf);
				store_obj_free(so);
			}
		}
		json_decref(pairs);
	}
	if (mf.found > 1) {
		json_decref(mf.agent);
		*res = hub_reply_error(req, 500, "found %d hosts with MAC address %s in infra-env %s", mf.found, mac,
				       json_string_value(json_object_get(meta, "uid")));
		return -EEXIST;
	}
	if (!mf.found)
		return 0;
	st = json_object_get(mf.agent, "status");
	state = json_string_value(json_object_get(json_object_get(st, "debugInfo"), "state"));
	stage = json_string_value(json_object_get(json_object_get(st, "progress"), "currentStage"));
	for (i = 0; state && stage && strcmp(state, "installing-in-progress") == 0 &&
		    i < sizeof(past_disk) / sizeof(past_disk[0]); i++)
		if (strcmp(stage, past_disk[i]) == 0)
			break;
	if (state && (strcmp(state, "installed") == 0 ||
		      (strcmp(state, "installing-in-progress") == 0 && stage && i < sizeof(past_disk) / sizeof(past_disk[0])))) {
		*res = hub_reply_error(req, 404, "host %s with MAC address %s should boot from its disk (%s)",
				       json_string_value(json_object_get(json_object_get(mf.agent, "metadata"), "name")),
				       mac, state);
		json_decref(mf.agent);
		return -ENOENT;
	}
	json_decref(mf.agent);
	return 0;
}

static enum http_result serve_ipxe(struct hub *h, struct http_req *req, const json_t *ie, const char *type)
{
	const json_t *spec = json_object_get(ie, "spec"), *meta = json_object_get(ie, "metadata");
	const char *mac = http_query(req, "mac");
	const struct os_image *os;
	json_t *ba = NULL;
	char *token = NULL, *kargs = NULL, *script = NULL;
	enum http_result res;
	ah_err err;
	int r;

	ah_err_clear(&err);
	if (mac && !mac_ok(mac))
		return hub_reply_error(req, 400, "mac in query must be of type mac: \"%s\"", mac);
	os = hub_pick_os_image(h, json_string_value(json_object_get(spec, "osImageVersion")),
			       json_string_value(json_object_get(spec, "cpuArchitecture")));
	if (!os)
		return hub_reply_error(req, 404, "Specified OSImageVersion is missing from AgentServiceConfig");
	if (hub_infraenv_token(h, ie, &token, &err) < 0)
		return reply_err(req, &err);
	if (mac) {
		if (mac_gate(h, req, ie, mac, &res) < 0) {
			free(token);
			return res;
		}
	} else if (type && strcmp(type, "boot-order-control") == 0) {
		/* Chain back here with the booting NIC's MAC: scheme://host of
		 * the service URL, its path dropped, query keys sorted. */
		const char *host = strstr(h->service_url, "://");
		char url[4096];

		host = host ? host + 3 : h->service_url;
		snprintf(url, sizeof(url), "%.*s%.*s" API_PREFIX "/infra-envs/%s/downloads/files?api_key=%s&file_name=ipxe-script",
			 (int)(host - h->service_url), h->service_url, (int)strcspn(host, "/"), host,
			 json_string_value(json_object_get(meta, "uid")), token);
		free(token);
		script = ipxe_redirect_script(url);
		if (!script)
			return hub_reply_error(req, 500, "cannot render the iPXE script");
		res = reply_file(req, script, strlen(script), "ipxe-script", ie);
		free(script);
		return res;
	}
	r = kernel_args_apply(json_object_get(spec, "kernelArguments"), NULL, &kargs, &err);
	if (r < 0) {
		free(token);
		return reply_err(req, &err);
	}
	ba = hub_boot_artifacts(h, ie, os, token);
	free(token);
	if (ba)
		script = ipxe_script(json_string_value(json_object_get(ba, "kernel")),
				     json_string_value(json_object_get(ba, "initrd")),
				     json_string_value(json_object_get(ba, "rootfs")), kargs);
	json_decref(ba);
	free(kargs);
	if (!script)
		return hub_reply_error(req, 500, "cannot render the iPXE script");
	res = reply_file(req, script, strlen(script), "ipxe-script", ie);
	free(script);
	return res;
}

static enum http_result serve_ignition(struct hub *h, struct http_req *req, const json_t *ie)
{
	char *ign = NULL;
	size_t len = 0;
	enum http_result res;
	ah_err err;

	ah_err_clear(&err);
	/* The very bytes the ISO and the initrd carry. */
	if (hub_build_ignition(h, ie, &ign, &len, NULL, &err) < 0)
		return reply_err(req, &err);
	res = reply_file(req, ign, len, "discovery.ign", ie);
	free(ign);
	return res;
}

/* The NetworkManager keyfiles and MAC maps of the selected NMStateConfigs
 * as upstream's debug archive (image.md §4.4): a tar, built in memory from
 * the same bundle the image carries. */
static enum http_result serve_static_network(struct hub *h, struct http_req *req, const json_t *ie)
{
	const char *uid = json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid"));
	char *tar = NULL, fname[128];
	size_t len = 0;
	ah_err err;

	ah_err_clear(&err);
	if (hub_static_net_archive(h, ie, &tar, &len, &err) < 0)
		return reply_err(req, &err);
	if (!tar)
		return hub_reply_error(req, 404, "infra-env %s has no static network configuration", uid);
	snprintf(fname, sizeof(fname), "%s-static-network-config.tar", uid);
	return reply_file_mode(req, tar, len, fname, ie, true);
}

enum http_result hub_downloads(struct hub *h, struct http_req *req, bool *handled)
{
	static const char prefix[] = API_PREFIX "/infra-envs/";
	const char *p = req->path, *file, *type, *iso_type;
	char id[64], rest[32];
	json_t *ie = NULL;
	enum http_result res;
	int n = 0;

	*handled = false;
	if (strncmp(p, prefix, sizeof(prefix) - 1) != 0)
		return HTTP_NO;
	if (sscanf(p + sizeof(prefix) - 1, "%63[^/]/%31s%n", id, rest, &n) != 2 ||
	    p[sizeof(prefix) - 1 + (size_t)n] != '\0' || strcmp(rest, "downloads/files") != 0)
		return HTTP_NO;
	*handled = true;
	if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0)
		return hub_reply_error(req, 405, "method %s is not allowed, but [GET] are", req->method);
	/* As go-openapi: authentication first, then the parameters. */
	if (authorize(h, req, http_query(req, "api_key"), id, true, &ie, &res) < 0)
		return res;
	/* A NUL cuts the value short for every reader: "discovery.ign%00x"
	 * is not discovery.ign. */
	if (http_query_nul(req)) {
		res = hub_reply_error(req, 400, "%s in query must not hold a NUL byte", http_query_nul(req));
		json_decref(ie);
		return res;
	}
	file = http_query(req, "file_name");
	type = http_query(req, "ipxe_script_type");
	iso_type = http_query(req, "discovery_iso_type");
	if (!file || !*file)
		res = hub_reply_error(req, 400, "file_name in query is required");
	else if (strcmp(file, "discovery.ign") != 0 && strcmp(file, "ipxe-script") != 0 &&
		 strcmp(file, "static-network-config") != 0)
		res = hub_reply_error(req, 400,
				      "file_name in query should be one of [discovery.ign ipxe-script static-network-config]: \"%s\"",
				      file);
	else if (type && strcmp(type, "discovery-image-always") != 0 && strcmp(type, "boot-order-control") != 0)
		res = hub_reply_error(req, 400,
				      "ipxe_script_type in query should be one of [discovery-image-always boot-order-control]: \"%s\"",
				      type);
	else if (type && strcmp(file, "ipxe-script") != 0)
		res = hub_reply_error(req, 400, "ipxe_script_type can only be set with file_name ipxe-script, not %s",
				      file);
	else if (iso_type && strcmp(iso_type, "full-iso") != 0 && strcmp(iso_type, "minimal-iso") != 0 &&
		 strcmp(iso_type, "disconnected-iso") != 0)
		res = hub_reply_error(req, 400,
				      "discovery_iso_type in query should be one of [full-iso minimal-iso disconnected-iso]: \"%s\"",
				      iso_type);
	else if (strcmp(file, "discovery.ign") == 0)
		res = serve_ignition(h, req, ie);
	else if (strcmp(file, "static-network-config") == 0)
		res = serve_static_network(h, req, ie);
	else
		res = serve_ipxe(h, req, ie, type);
	json_decref(ie);
	return res;
}
