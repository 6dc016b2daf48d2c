/* redfish.c - a small, bounded Redfish client on libcurl (see redfish.h):
 * one easy handle per request, timeouts, retries with back-off on transport
 * errors and 5xx, a process-wide cap on requests in flight. */
#include "controllers/redfish.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/hubmetrics.h"

static pthread_mutex_t rf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rf_cond = PTHREAD_COND_INITIALIZER;
static int rf_limit = RF_MAX_IN_FLIGHT_DEFAULT, rf_in_flight, rf_peak;
static uint64_t rf_calls;

void rf_set_max_in_flight(int n)
{
	pthread_mutex_lock(&rf_lock);
	rf_limit = n < 1 ? 1 : n > 4096 ? 4096 : n;
	pthread_mutex_unlock(&rf_lock);
}

int rf_max_in_flight(void)
{
	int n;

	pthread_mutex_lock(&rf_lock);
	n = rf_limit;
	pthread_mutex_unlock(&rf_lock);
	return n;
}

void rf_stats(struct rf_stats *ret)
{
	pthread_mutex_lock(&rf_lock);
	ret->calls = rf_calls;
	ret->max_in_flight_seen = rf_peak;
	pthread_mutex_unlock(&rf_lock);
}

static void slot_take(void)
{
	pthread_mutex_lock(&rf_lock);
	while (rf_in_flight >= rf_limit)
		pthread_cond_wait(&rf_cond, &rf_lock);
	rf_in_flight++;
	rf_calls++;
	if (rf_in_flight > rf_peak)
		rf_peak = rf_in_flight;
	hm_bmc_in_flight(rf_in_flight, rf_peak);
	pthread_mutex_unlock(&rf_lock);
}

static void slot_give(void)
{
	pthread_mutex_lock(&rf_lock);
	rf_in_flight--;
	hm_bmc_in_flight(rf_in_flight, rf_peak);
	pthread_cond_signal(&rf_cond);
	pthread_mutex_unlock(&rf_lock);
}

struct body {
	char *buf;
	size_t len;
	bool too_big;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct body *b = ud;
	size_t add = sz * n;
	char *nb;

	if (b->len + add > RF_BODY_MAX) {
		b->too_big = true;
		return 0;
	}
	nb = realloc(b->buf, b->len + add + 1);
	if (!nb)
		return 0;
	memcpy(nb + b->len, p, add);
	b->buf = nb;
	b->len += add;
	b->buf[b->len] = 0;
	return add;
}

struct hdrs {
	char etag[256];
};

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct hdrs *h = ud;
	size_t len = sz * n;

	if (len > 5 && strncasecmp(p, "ETag:", 5) == 0) {
		size_t i = 5, e = len;

		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		while (e > i && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' '))
			e--;
		snprintf(h->etag, sizeof(h->etag), "%.*s", (int)(e - i), p + i);
	}
	return len;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* One request with its tries.  path is absolute ("/redfish/v1/...").  On
 * 2xx: 0, *ret_body (may be NULL) the parsed answer or NULL when empty,
 * etag (may be NULL) its ETag.  Otherwise negative with err. */
static int rf_call(const struct rf_conn *c, const char *method, const char *path, const json_t *req,
		   const char *if_match, json_t **ret_body, char *etag, size_t etag_size, ah_err *err)
{
	char url[1024], curl_msg[CURL_ERROR_SIZE];
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	long code = 0, backoff = RF_BACKOFF_MS;
	int attempt, r = -EIO;

	if (ret_body)
		*ret_body = NULL;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", c->bmc.base, path) >= sizeof(url)) {
		free(text);
		return ah_err_set(err, EINVAL, 0, "BadRequest", "BMC URL too long");
	}
	for (attempt = 1; attempt <= RF_TRIES; attempt++) {
		CURL *h = curl_easy_init();
		struct curl_slist *hl = NULL;
		struct body b = { 0 };
		struct hdrs hd = { "" };
		char im[300];
		CURLcode cr;
		bool retry = false;

		if (!h) {
			r = -ENOMEM;
			break;
		}
		curl_msg[0] = 0;
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_msg);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)RF_CONNECT_TIMEOUT_MS);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)RF_TIMEOUT_MS);
		curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->user ? c->user : "");
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->password ? c->password : "");
		if (c->insecure) {
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
		}
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		hl = curl_slist_append(hl, "Accept: application/json");
		hl = curl_slist_append(hl, "OData-Version: 4.0");
		if (text) {
			hl = curl_slist_append(hl, "Content-Type: application/json");
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
		} else if (strcmp(method, "POST") == 0) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		}
		if (if_match && *if_match) {
			snprintf(im, sizeof(im), "If-Match: %s", if_match);
			hl = curl_slist_append(hl, im);
		}
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &b);
		curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(h, CURLOPT_HEADERDATA, &hd);
		slot_take();
		cr = curl_easy_perform(h);
		slot_give();
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
		hm_bmc_request(cr != CURLE_OK ? "unreachable" : code >= 200 && code < 300 ? "ok" : "error");
		curl_slist_free_all(hl);
		curl_easy_cleanup(h);
		if (cr == CURLE_OPERATION_TIMEDOUT) {
			r = ah_err_set(err, ETIMEDOUT, 0, "Timeout", "BMC at %s did not answer %s %s within %d ms",
				       c->bmc.base, method, path, RF_TIMEOUT_MS);
			retry = true;
		} else if (cr != CURLE_OK && b.too_big) {
			r = ah_err_set(err, EPROTO, 0, "BadResponse", "BMC answer to %s %s is over %d bytes", method,
				       path, RF_BODY_MAX);
		} else if (cr != CURLE_OK) {
			r = ah_err_set(err, EHOSTUNREACH, 0, "Unreachable", "cannot reach the BMC at %s: %s", c->bmc.base,
				       curl_msg[0] ? curl_msg : curl_easy_strerror(cr));
			retry = true;
		} else if (code == 401 || code == 403) {
			r = ah_err_set(err, EACCES, (int)code, "Unauthorized",
				       "BMC at %s rejected the credentials (HTTP %ld)", c->bmc.base, code);
		} else if (code == 404) {
			r = ah_err_set(err, ENOENT, 404, "NotFound", "BMC at %s has no %s (HTTP 404)", c->bmc.base, path);
		} else if (code >= 500) {
			r = ah_err_set(err, EIO, (int)code, "BMCError", "BMC at %s answered %s %s with HTTP %ld",
				       c->bmc.base, method, path, code);
			retry = true;
		} else if (code < 200 || code >= 300) {
			r = ah_err_set(err, code == 412 ? ESTALE : EPROTO, (int)code, "BMCError",
				       "BMC at %s answered %s %s with HTTP %ld", c->bmc.base, method, path, code);
		} else {
			r = 0;
			if (ret_body && b.len) {
				*ret_body = json_loadb(b.buf, b.len, 0, NULL);
				if (!*ret_body)
					r = ah_err_set(err, EPROTO, (int)code, "BadResponse",
						       "BMC answer to %s %s is not JSON", method, path);
			}
			if (etag)
				snprintf(etag, etag_size, "%s", hd.etag);
		}
		free(b.buf);
		if (!retry || attempt == RF_TRIES)
			break;
		sleep_ms(backoff);
		backoff *= 2;
	}
	free(text);
	return r;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *odata_id(const json_t *o)
{
	return jstr(o, "@odata.id");
}

/* The CD member of a VirtualMedia collection. */
static int find_cd(const struct rf_conn *c, const char *coll_path, char *out, size_t size, ah_err *err)
{
	json_t *coll = NULL, *m;
	size_t i;
	int r = rf_call(c, "GET", coll_path, NULL, NULL, &coll, NULL, 0, err);

	if (r < 0)
		return r;
	json_array_foreach(json_object_get(coll, "Members"), i, m) {
		json_t *vm = NULL, *t;
		const char *id = odata_id(m);
		size_t j;
		bool cd = false, dvd = false;

		if (!id || rf_call(c, "GET", id, NULL, NULL, &vm, NULL, 0, NULL) < 0)
			continue;
		json_array_foreach(json_object_get(vm, "MediaTypes"), j, t) {
			if (json_string_value(t) && strcmp(json_string_value(t), "CD") == 0)
				cd = true;
			if (json_string_value(t) && strcmp(json_string_value(t), "DVD") == 0)
				dvd = true;
		}
		json_decref(vm);
		if (cd || (dvd && !*out))
			snprintf(out, size, "%s", id);
		if (cd)
			break;
	}
	json_decref(coll);
	return 0;
}

int rf_get_system(const struct rf_conn *c, struct rf_system *ret, ah_err *err)
{
	json_t *sys = NULL, *coll = NULL;
	const char *path = c->bmc.system, *s;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!*path) {
		r = rf_call(c, "GET", "/redfish/v1/Systems", NULL, NULL, &coll, NULL, 0, err);
		if (r < 0)
			return r;
		path = odata_id(json_array_get(json_object_get(coll, "Members"), 0));
		if (!path) {
			json_decref(coll);
			return ah_err_set(err, ENOENT, 404, "NotFound", "BMC at %s lists no system", c->bmc.base);
		}
	}
	snprintf(ret->path, sizeof(ret->path), "%s", path);
	json_decref(coll);
	r = rf_call(c, "GET", ret->path, NULL, NULL, &sys, NULL, 0, err);
	if (r < 0)
		return r;
	s = jstr(sys, "PowerState");
	if (!s) {
		json_decref(sys);
		return ah_err_set(err, EPROTO, 0, "BadResponse", "BMC at %s: %s has no PowerState", c->bmc.base, ret->path);
	}
	ret->powered_on = strcmp(s, "On") == 0 || strcmp(s, "PoweringOn") == 0;
	if (odata_id(json_object_get(sys, "VirtualMedia")))
		r = find_cd(c, odata_id(json_object_get(sys, "VirtualMedia")), ret->cd, sizeof(ret->cd), err);
	if (r == 0 && !*ret->cd) {
		const char *mgr = odata_id(json_array_get(json_object_get(json_object_get(sys, "Links"), "ManagedBy"), 0));
		json_t *m = NULL;

		if (mgr && rf_call(c, "GET", mgr, NULL, NULL, &m, NULL, 0, err) == 0 &&
		    odata_id(json_object_get(m, "VirtualMedia")))
			r = find_cd(c, odata_id(json_object_get(m, "VirtualMedia")), ret->cd, sizeof(ret->cd), err);
		json_decref(m);
	}
	json_decref(sys);
	return r;
}

int rf_reset(const struct rf_conn *c, const struct rf_system *s, const char *type, ah_err *err)
{
	char path[600];
	json_t *body = json_pack("{s:s}", "ResetType", type);
	int r;

	snprintf(path, sizeof(path), "%s/Actions/ComputerSystem.Reset", s->path);
	r = rf_call(c, "POST", path, body, NULL, NULL, NULL, 0, err);
	json_decref(body);
	return r;
}

int rf_set_boot(const struct rf_conn *c, const struct rf_system *s, const char *target, const char *enabled,
		const char *mode, ah_err *err)
{
	json_t *boot = json_pack("{s:s,s:s}", "BootSourceOverrideTarget", target, "BootSourceOverrideEnabled", enabled);
	json_t *body = json_pack("{s:o}", "Boot", boot);
	char etag[256] = "";
	int r, i;

	if (mode)
		json_object_set_new(boot, "BootSourceOverrideMode", json_string(mode));
	/* The ETag guards against a concurrent change; a 412 means it moved
	 * between our GET and PATCH: read it again, once. */
	for (i = 0; i < 2; i++) {
		r = rf_call(c, "GET", s->path, NULL, NULL, NULL, etag, sizeof(etag), err);
		if (r == 0)
			r = rf_call(c, "PATCH", s->path, body, etag, NULL, NULL, 0, err);
		if (r != -ESTALE)
			break;
	}
	json_decref(body);
	return r;
}

int rf_eject(const struct rf_conn *c, const struct rf_system *s, ah_err *err)
{
	char path[600];
	json_t *empty = json_object();
	int r;

	if (!*s->cd)
		return ah_err_set(err, ENOTSUP, 0, "NoVirtualMedia", "BMC system %s has no virtual CD", s->path);
	snprintf(path, sizeof(path), "%s/Actions/VirtualMedia.EjectMedia", s->cd);
	r = rf_call(c, "POST", path, empty, NULL, NULL, NULL, 0, err);
	json_decref(empty);
	return r;
}

int rf_insert(const struct rf_conn *c, const struct rf_system *s, const char *image_url, ah_err *err)
{
	char path[600];
	json_t *body;
	int r;

	if (!*s->cd)
		return ah_err_set(err, ENOTSUP, 0, "NoVirtualMedia", "BMC system %s has no virtual CD", s->path);
	snprintf(path, sizeof(path), "%s/Actions/VirtualMedia.InsertMedia", s->cd);
	body = json_pack("{s:s}", "Image", image_url);
	r = rf_call(c, "POST", path, body, NULL, NULL, NULL, 0, err);
	json_decref(body);
	return r;
}
