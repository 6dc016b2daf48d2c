/* ironic.c - the hub's client of the ironic agent's command API (ironic.h).
 * Each call is bounded: a connect and a total timeout, an answer of at most
 * IRONIC_BODY_MAX bytes, and a RUNNING command polled for at most poll_s
 * seconds.  The agent token goes in the URL's query (as Ironic's
 * agent_client does) and never into a message. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "controllers/ironic.h"

#define AGENT_CONNECT_TIMEOUT_MS 5000
#define AGENT_TIMEOUT_MS 30000

struct abody {
	char *buf;
	size_t len;
	bool too_big;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct abody *b = ud;
	size_t add = sz * n;
	char *nb;

	if (b->len + add > IRONIC_BODY_MAX) {
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

/* One request to the agent: 0 and *ret (the JSON answer), or negative. */
static int agent_call(const char *url, const char *method, const char *body, json_t **ret, ah_err *err)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hl = NULL;
	struct abody b = { 0 };
	long code = 0;
	CURLcode cr;
	int r;

	*ret = NULL;
	if (!c)
		return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)AGENT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)AGENT_TIMEOUT_MS);
	/* The agent serves its API with a certificate of its own making
	 * (Ironic's agent_verify_ca is off unless the agent sent one). */
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	hl = curl_slist_append(hl, "Accept: application/json");
	if (body) {
		hl = curl_slist_append(hl, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
	if (cr != CURLE_OK)
		r = ah_err_set(err, b.too_big ? EPROTO : EHOSTUNREACH, 0, "", "the ironic agent did not answer %s: %s",
			       method, b.too_big ? "answer too big" : curl_easy_strerror(cr));
	else if (code < 200 || code >= 300)
		r = ah_err_set(err, code == 401 || code == 403 ? EACCES : EPROTO, (int)code, "",
			       "the ironic agent answered %s with HTTP %ld", method, code);
	else if (!(*ret = json_loadb(b.buf ? b.buf : "", b.len, 0, NULL)))
		r = ah_err_set(err, EPROTO, (int)code, "", "the ironic agent's answer is not JSON");
	else
		r = 0;
	free(b.buf);
	return r;
}

static void sleep_s(unsigned s)
{
	struct timespec ts = { .tv_sec = s };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

int ironic_agent_command(const char *callback, const char *token, const char *name, const json_t *params,
			 unsigned poll_s, char *ret_status, size_t status_size, char *msg, size_t msg_size,
			 ah_err *err)
{
	char url[IRONIC_CALLBACK_MAX + 256], *body, *tok = NULL;
	size_t cl = strlen(callback);
	json_t *ans = NULL;
	const char *st, *id;
	unsigned waited = 0;
	int r;

	*ret_status = 0;
	*msg = 0;
	while (cl > 0 && callback[cl - 1] == '/')
		cl--;
	if (cl == 0 || cl > IRONIC_CALLBACK_MAX)
		return ah_err_set(err, EINVAL, 0, "", "bad agent callback URL");
	if (token && *token) {
		CURL *c = curl_easy_init();
		char *e = c ? curl_easy_escape(c, token, 0) : NULL;

		tok = e ? strdup(e) : NULL;
		curl_free(e);
		curl_easy_cleanup(c);
		if (!tok)
			return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	}
	{
		json_t *req = json_pack("{s:s, s:O}", "name", name, "params", params);

		body = req ? json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(req);
	}
	snprintf(url, sizeof(url), "%.*s/v1/commands/?wait=true%s", (int)cl, callback, tok ? "&agent_token=" : "");
	{
		/* The token joins the URL last, in a buffer of its own. */
		char *full = NULL;

		if (asprintf(&full, "%s%s", url, tok ? tok : "") < 0)
			full = NULL;
		r = body && full ? agent_call(full, "POST", body, &ans, err)
				 : ah_err_set(err, ENOMEM, 0, "", "out of memory");
		free(full);
	}
	free(body);
	while (r == 0) {
		st = json_string_value(json_object_get(ans, "command_status"));
		id = json_string_value(json_object_get(ans, "id"));
		snprintf(ret_status, status_size, "%s", st ? st : "");
		if (st && strcmp(st, "FAILED") == 0) {
			const json_t *ce = json_object_get(ans, "command_error");
			const char *m = json_string_value(json_object_get(ce, "details"));

			if (!m || !*m)
				m = json_string_value(json_object_get(ce, "message"));
			snprintf(msg, msg_size, "%s", m ? m : "the command failed");
		}
		if (!st || strcmp(st, "RUNNING") || !id || waited >= poll_s || strlen(id) > 64 || strpbrk(id, "/?#% "))
			break;
		sleep_s(1);
		waited++;
		{
			char *full = NULL;

			if (asprintf(&full, "%.*s/v1/commands/%s%s%s", (int)cl, callback, id, tok ? "?agent_token=" : "",
				     tok ? tok : "") < 0)
				full = NULL;
			json_decref(ans);
			ans = NULL;
			r = full ? agent_call(full, "GET", NULL, &ans, err) : ah_err_set(err, ENOMEM, 0, "", "out of memory");
			free(full);
		}
	}
	if (r == 0 && !*ret_status)
		r = ah_err_set(err, EPROTO, 0, "", "the ironic agent's answer has no command_status");
	json_decref(ans);
	if (tok) {
		memset(tok, 0, strlen(tok));
		free(tok);
	}
	return r;
}

int ironic_agent_last_status(const char *callback, const char *token, const char *command_name, char *ret_status,
			     size_t status_size, char *msg, size_t msg_size, ah_err *err)
{
	size_t cl = strlen(callback), i;
	char *url = NULL, *tok = NULL;
	json_t *ans = NULL, *c, *last = NULL;
	int r;

	*ret_status = 0;
	*msg = 0;
	while (cl > 0 && callback[cl - 1] == '/')
		cl--;
	if (cl == 0 || cl > IRONIC_CALLBACK_MAX)
		return ah_err_set(err, EINVAL, 0, "", "bad agent callback URL");
	if (token && *token) {
		CURL *h = curl_easy_init();
		char *e = h ? curl_easy_escape(h, token, 0) : NULL;

		tok = e ? strdup(e) : NULL;
		curl_free(e);
		curl_easy_cleanup(h);
		if (!tok)
			return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	}
	if (asprintf(&url, "%.*s/v1/commands/%s%s", (int)cl, callback, tok ? "?agent_token=" : "", tok ? tok : "") < 0)
		url = NULL;
	r = url ? agent_call(url, "GET", NULL, &ans, err) : ah_err_set(err, ENOMEM, 0, "", "out of memory");
	if (url) {
		memset(url, 0, strlen(url));
		free(url);
	}
	if (tok) {
		memset(tok, 0, strlen(tok));
		free(tok);
	}
	if (r < 0)
		return r;
	json_array_foreach(json_object_get(ans, "commands"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "command_name")) ?: "", command_name) == 0)
			last = c;
	if (!last) {
		json_decref(ans);
		return -ENOENT;
	}
	snprintf(ret_status, status_size, "%s", json_string_value(json_object_get(last, "command_status")) ?: "");
	if (strcmp(ret_status, "FAILED") == 0) {
		const json_t *ce = json_object_get(last, "command_error");
		const char *m = json_string_value(json_object_get(ce, "details"));

		if (!m || !*m)
			m = json_string_value(json_object_get(ce, "message"));
		snprintf(msg, msg_size, "%s", m ? m : "the command failed");
	}
	json_decref(ans);
	return 0;
}
