/* spoke.c - the installed cluster's API, reached with its admin kubeconfig,
 * for the spoke cleanup of a host that left it (kubeapi.md §4.4 step 3):
 * its Node is deleted once the host is back in the discovery image.
 *
 * The kubeconfig is the one in the ClusterDeployment's admin kubeconfig
 * Secret: the current context's cluster (server, CA or
 * insecure-skip-tls-verify) and user (client certificate and key, or a
 * bearer token).  Nothing of it is logged. */
#include "hub-internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "base/yamljson.h"

#define SPOKE_TIMEOUT_S 10L

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The entry of list (clusters, users, contexts) named name, or the first. */
static const json_t *named(const json_t *list, const char *name, const char *inner)
{
	const json_t *e;
	size_t i;

	json_array_foreach(list, i, e)
		if (!name || (jstr(e, "name") && strcmp(jstr(e, "name"), name) == 0))
			return json_object_get(e, inner);
	return NULL;
}

struct blob {
	unsigned char *data;
	size_t len;
};

static void blob_free(struct blob *b)
{
	if (b->data) {
		OPENSSL_cleanse(b->data, b->len);
		free(b->data);
	}
	b->data = NULL;
	b->len = 0;
}

static int b64field(const json_t *o, const char *key, struct blob *out, ah_err *err)
{
	const char *s = jstr(o, key);

	if (!s)
		return 0;
	if (util_base64_decode(s, strlen(s), &out->data, &out->len) < 0)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "kubeconfig: %s is not valid base64", key);
	return 0;
}

static size_t discard(char *p, size_t size, size_t n, void *userdata)
{
	(void)p;
	(void)userdata;
	return size * n;
}

/* Percent-encode a Node name for the path (names are DNS labels; anything
 * else is encoded rather than trusted). */
static void path_escape(const char *in, char *out, size_t size)
{
	size_t o = 0;

	for (; *in && o + 4 < size; in++) {
		unsigned char c = (unsigned char)*in;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '.' || c == '_')
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, size - o, "%%%02X", c);
	}
	out[o] = '\0';
}

int hub_spoke_delete_node(const char *kubeconfig, size_t len, const char *node, ah_err *err)
{
	json_t *docs = NULL;
	const json_t *kc, *ctx, *cluster, *user;
	struct blob ca = { 0 }, crt = { 0 }, key = { 0 };
	char url[1024], esc[600], curl_msg[CURL_ERROR_SIZE] = "", *auth = NULL;
	struct curl_slist *hdrs = NULL;
	const char *server, *cur;
	long code = 0;
	CURL *c = NULL;
	CURLcode cr;
	int r = 0;

	if (!node || !*node)
		return 0; /* no hostname: no Node to look for */
	if (yaml_parse_all(kubeconfig, len, &docs, err) < 0)
		return -EINVAL;
	kc = json_array_get(docs, 0);
	cur = jstr(kc, "current-context");
	ctx = named(json_object_get(kc, "contexts"), cur, "context");
	cluster = named(json_object_get(kc, "clusters"), ctx ? jstr(ctx, "cluster") : NULL, "cluster");
	user = named(json_object_get(kc, "users"), ctx ? jstr(ctx, "user") : NULL, "user");
	server = jstr(cluster, "server");
	if (!server || strncmp(server, "https://", 8) != 0) {
		r = ah_err_set(err, EINVAL, 400, "BadRequest", "kubeconfig: no https server for the spoke cluster");
		goto out;
	}
	if (b64field(cluster, "certificate-authority-data", &ca, err) < 0 ||
	    b64field(user, "client-certificate-data", &crt, err) < 0 ||
	    b64field(user, "client-key-data", &key, err) < 0) {
		r = -EINVAL;
		goto out;
	}
	path_escape(node, esc, sizeof(esc));
	snprintf(url, sizeof(url), "%s/api/v1/nodes/%s", server, esc);
	c = curl_easy_init();
	if (!c) {
		r = ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
		goto out;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, SPOKE_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, SPOKE_TIMEOUT_S);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
	if (ca.data) {
		struct curl_blob b = { .data = ca.data, .len = ca.len, .flags = CURL_BLOB_COPY };

		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
	}
	if (json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"))) {
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (crt.data && key.data) {
		struct curl_blob bc = { .data = crt.data, .len = crt.len, .flags = CURL_BLOB_COPY };
		struct curl_blob bk = { .data = key.data, .len = key.len, .flags = CURL_BLOB_COPY };

		curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &bc);
		curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &bk);
		curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
	}
	if (jstr(user, "token") && asprintf(&auth, "Authorization: Bearer %s", jstr(user, "token")) > 0) {
		hdrs = curl_slist_append(hdrs, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	}
	cr = curl_easy_perform(c);
	if (cr != CURLE_OK) {
		r = ah_err_set(err, EIO, 500, "InternalError", "failed to delete node %s on the spoke cluster at %s: %s",
			       node, server, curl_msg[0] ? curl_msg : curl_easy_strerror(cr));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	/* Deleted, being deleted, or not there: the spoke no longer has it. */
	if (code != 200 && code != 202 && code != 404)
		r = ah_err_set(err, EIO, 500, "InternalError",
			       "failed to delete node %s on the spoke cluster at %s: HTTP %ld", node, server, code);
out:
	if (c)
		curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	if (auth) {
		OPENSSL_cleanse(auth, strlen(auth));
		free(auth);
	}
	blob_free(&ca);
	blob_free(&crt);
	blob_free(&key);
	json_decref(docs);
	return r;
}
