/* events.c - GET /api/assisted-install/v2/events (backend.md §8, URL
 * authorization §9) over the Events the hub records (controllers/events.c
 * stores each with its upstream fields in the HUB_EVENT_ANNOTATION). */
#include "api/api-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"

#define EVENTS_LIMIT_DEFAULT 5000

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static bool severity_valid(const char *s)
{
	return streq(s, HUB_EV_INFO) || streq(s, HUB_EV_WARNING) || streq(s, HUB_EV_ERROR) ||
	       streq(s, HUB_EV_CRITICAL);
}

/* --- GET /v2/events ------------------------------------------------------------ */

struct ev_query {
	const char *cluster_id, *infra_env_id, *message;
	json_t *host_ids;   /* array of strings; empty = any */
	json_t *severities; /* array; empty = any */
	json_t *categories; /* array; empty = ["user"] */
	bool cluster_level, descending;
	long limit, offset;
};

static void add_split(json_t *arr, const char *v)
{
	const char *p = v;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t n = c ? (size_t)(c - p) : strlen(p);

		if (n)
			json_array_append_new(arr, json_stringn(p, n));
		p = c ? c + 1 : NULL;
	}
}

static int collect_arg(void *cls, const char *key, const char *value)
{
	struct ev_query *q = cls;

	if (!key || !value)
		return 0;
	if (strcmp(key, "host_ids") == 0 || strcmp(key, "host_ids[]") == 0 || strcmp(key, "host_id") == 0)
		add_split(q->host_ids, value);
	else if (strcmp(key, "severities") == 0 || strcmp(key, "severities[]") == 0)
		add_split(q->severities, value);
	else if (strcmp(key, "categories") == 0 || strcmp(key, "categories[]") == 0)
		add_split(q->categories, value);
	return 0;
}

static bool in_array(const json_t *arr, const char *s)
{
	const json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (streq(json_string_value(v), s))
			return true;
	return false;
}

/* Whether an upstream event passes the filters other than severity. */
static bool event_matches(const struct ev_query *q, const json_t *ev)
{
	const char *host = jstr(ev, "host_id");

	if (q->cluster_id && !streq(jstr(ev, "cluster_id"), q->cluster_id))
		return false;
	if (q->infra_env_id && !streq(jstr(ev, "infra_env_id"), q->infra_env_id))
		return false;
	if (json_array_size(q->host_ids) && !in_array(q->host_ids, host) && !(q->cluster_level && !host))
		return false;
	if (json_array_size(q->categories) ? !in_array(q->categories, jstr(ev, "category")) :
	    !streq(jstr(ev, "category") ? jstr(ev, "category") : "user", "user"))
		return false;
	if (q->message && *q->message && !strstr(jstr(ev, "message") ? jstr(ev, "message") : "", q->message))
		return false;
	return true;
}

struct list_ctx {
	const struct ev_query *q;
	json_t *out;   /* array of [event_time, rv, upstream event] */
	const char *needle;
};

static int list_visit(const store_obj *so, void *userdata)
{
	struct list_ctx *lc = userdata;
	json_t *obj, *up;
	const char *text;

	/* Most Events are about something else: skip them unparsed. */
	if (!strstr(so->json, HUB_EVENT_ANNOTATION) || (lc->needle && !strstr(so->json, lc->needle)))
		return 0;
	obj = json_loadb(so->json, so->len, 0, NULL);
	text = jstr(json_object_get(json_object_get(obj, "metadata"), "annotations"), HUB_EVENT_ANNOTATION);
	up = text ? json_loads(text, 0, NULL) : NULL;
	if (json_is_object(up) && event_matches(lc->q, up))
		json_array_append_new(lc->out, json_pack("[s,I,o]", jstr(up, "event_time") ? jstr(up, "event_time") : "",
							 (json_int_t)so->rev, json_incref(up)));
	json_decref(up);
	json_decref(obj);
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(json_string_value(json_array_get(x, 0)), json_string_value(json_array_get(y, 0)));
	json_int_t rx = json_integer_value(json_array_get(x, 1)), ry = json_integer_value(json_array_get(y, 1));

	if (c)
		return c;
	return rx < ry ? -1 : rx > ry;
}

/* Errors in upstream's shapes (hub_reply_error, imagesvc.c). */
static enum http_result reply_error(struct http_req *req, unsigned code, const char *msg)
{
	return hub_reply_error(req, code, "%s", msg);
}

static const char *request_token(struct http_req *req)
{
	const char *t = http_query(req, "api_key");

	if (t && *t)
		return t;
	t = http_header(req, "X-Secret-Key");
	if (t && *t)
		return t;
	t = http_header(req, "Authorization");
	if (t && strncasecmp(t, "Bearer ", 7) == 0)
		t += 7;
	return t && *t ? t : NULL;
}

/* Whether the Agent host_id belongs to the InfraEnv infra_env_id. */
static bool host_in_infraenv(struct hub *h, const char *infra_env_id, const char *host_id)
{
	json_t *ie = NULL, *agent = NULL;
	struct hub_event_ref ref;
	bool ok = false;
	ah_err err;

	if (hub_find_infraenv(h, infra_env_id, &ie) < 0)
		return false;
	if (kube_get(h->api, h->k_agent, jstr(json_object_get(ie, "metadata"), "namespace"), host_id, &agent,
		     &err) == 0) {
		hub_event_ref_agent(agent, NULL, &ref);
		ok = streq(ref.infra_env_id, infra_env_id);
	}
	json_decref(agent);
	json_decref(ie);
	return ok;
}

/* backend.md §9: a URL token opens only the events of what it names; an
 * InfraEnv's token only while that InfraEnv exists and the token is its
 * current one (not rotated). */
static bool scope_ok(struct hub *h, const json_t *claims, const char *token, const struct ev_query *q)
{
	const char *cid = jstr(claims, "cluster_id"), *iid = jstr(claims, "infra_env_id");
	const json_t *v;
	json_t *ie = NULL;
	bool current;
	size_t i;

	if (cid && q->cluster_id && strcmp(cid, q->cluster_id) == 0)
		return true;
	if (!iid || hub_find_infraenv(h, iid, &ie) < 0)
		return false;
	current = hub_infraenv_token_current(h, ie, token);
	json_decref(ie);
	if (!current)
		return false;
	if (q->infra_env_id)
		return strcmp(iid, q->infra_env_id) == 0;
	if (!json_array_size(q->host_ids))
		return false;
	json_array_foreach(q->host_ids, i, v)
		if (!host_in_infraenv(h, iid, json_string_value(v)))
			return false;
	return true;
}

static enum http_result serve_events(struct hub *h, struct http_req *req)
{
	const struct kube_kind *k = kube_registry_by_kind(h->reg, "v1", "Event");
	struct ev_query q = { 0 };
	struct list_ctx lc = { .q = &q };
	const char *token = request_token(req), *s;
	json_t *claims = NULL, *body = NULL, **rows = NULL;
	long counts[4] = { 0 }, total = 0;
	static const char *const sevs[] = { HUB_EV_INFO, HUB_EV_WARNING, HUB_EV_ERROR, HUB_EV_CRITICAL };
	struct http_response *resp;
	enum http_result res;
	char *text, num[32];
	size_t i, n;
	ah_err err;

	if (!token || strlen(token) > JWT_TOKEN_MAX || jwt_verify(h->keys, token, &claims, &err) < 0)
		return reply_error(req, 401, "Unauthorized");
	q.cluster_id = http_query(req, "cluster_id");
	q.infra_env_id = http_query(req, "infra_env_id");
	q.message = http_query(req, "message");
	q.host_ids = json_array();
	q.severities = json_array();
	q.categories = json_array();
	q.limit = EVENTS_LIMIT_DEFAULT;
	if (q.cluster_id && !*q.cluster_id)
		q.cluster_id = NULL;
	if (q.infra_env_id && !*q.infra_env_id)
		q.infra_env_id = NULL;
	http_query_each(req, collect_arg, &q);
	s = http_query(req, "cluster_level");
	q.cluster_level = s && strcmp(s, "true") == 0;
	s = http_query(req, "order");
	if (s && strcmp(s, "descending") != 0 && strcmp(s, "ascending") != 0) {
		res = reply_error(req, 400, "order: must be ascending or descending");
		goto out;
	}
	q.descending = s && strcmp(s, "descending") == 0;
	s = http_query(req, "limit");
	if (s) {
		char *end;

		q.limit = strtol(s, &end, 10);
		if (*end || !*s || q.limit < -1) {
			res = reply_error(req, 400, "limit: must be an integer, -1 for no limit");
			goto out;
		}
	}
	s = http_query(req, "offset");
	if (s) {
		char *end;

		q.offset = strtol(s, &end, 10);
		if (*end || !*s || q.offset < 0) {
			res = reply_error(req, 400, "offset: must be a non-negative integer");
			goto out;
		}
	}
	for (i = 0; i < json_array_size(q.severities); i++) {
		if (!severity_valid(json_string_value(json_array_get(q.severities, i)))) {
			res = reply_error(req, 400, "severities: each must be info, warning, error or critical");
			goto out;
		}
	}
	if (!scope_ok(h, claims, token, &q)) {
		res = reply_error(req, 401, "Unauthorized");
		goto out;
	}
	lc.out = json_array();
	lc.needle = q.cluster_id ? q.cluster_id : q.infra_env_id ? q.infra_env_id :
		    json_array_size(q.host_ids) == 1 && !q.cluster_level ?
		    json_string_value(json_array_get(q.host_ids, 0)) : NULL;
	if (!k || store_list(h->store, k->store_key, NULL, NULL, NULL, list_visit, &lc, NULL) < 0) {
		json_decref(lc.out);
		res = reply_error(req, 500, "listing events failed");
		goto out;
	}
	n = json_array_size(lc.out);
	rows = n ? calloc(n, sizeof(*rows)) : NULL;
	if (n && !rows) {
		json_decref(lc.out);
		res = HTTP_NO;
		goto out;
	}
	for (i = 0; i < n; i++)
		rows[i] = json_array_get(lc.out, i);
	if (n)
		qsort(rows, n, sizeof(*rows), cmp_rows);
	body = json_array();
	for (i = 0; i < n; i++) {
		json_t *up = json_array_get(rows[q.descending ? n - 1 - i : i], 2), *ev;
		const char *sev = jstr(up, "severity");
		size_t j;

		for (j = 0; j < 4; j++)
			if (streq(sev, sevs[j]))
				counts[j]++;
		if (json_array_size(q.severities) && !in_array(q.severities, sev))
			continue;
		total++;
		if (total <= q.offset || (q.limit >= 0 && (long)json_array_size(body) >= q.limit))
			continue;
		ev = json_deep_copy(up);
		json_object_del(ev, "category");
		json_array_append_new(body, ev);
	}
	free(rows);
	json_decref(lc.out);
	/* Keys in upstream's (alphabetical) order. */
	text = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
	resp = text ? http_response_new(200, "application/json") : NULL;
	if (!resp) {
		free(text);
		res = HTTP_NO;
		goto out;
	}
	http_response_take_body(resp, text, strlen(text));
	http_response_add_header(resp, "Cache-Control", "no-cache, private");
	snprintf(num, sizeof(num), "%ld", counts[0]);
	http_response_add_header(resp, "Severity-Count-Info", num);
	snprintf(num, sizeof(num), "%ld", counts[1]);
	http_response_add_header(resp, "Severity-Count-Warning", num);
	snprintf(num, sizeof(num), "%ld", counts[2]);
	http_response_add_header(resp, "Severity-Count-Error", num);
	snprintf(num, sizeof(num), "%ld", counts[3]);
	http_response_add_header(resp, "Severity-Count-Critical", num);
	snprintf(num, sizeof(num), "%ld", total);
	http_response_add_header(resp, "Event-Count", num);
	res = http_send(req, resp);
out:
	json_decref(body);
	json_decref(claims);
	json_decref(q.host_ids);
	json_decref(q.severities);
	json_decref(q.categories);
	return res;
}

enum http_result hub_events_api(struct hub *h, struct http_req *req, bool *handled)
{
	*handled = false;
	if (strcmp(req->path, API_PREFIX "/events") != 0 || strcmp(req->method, "GET") != 0)
		return HTTP_NO;
	*handled = true;
	return serve_events(h, req);
}
