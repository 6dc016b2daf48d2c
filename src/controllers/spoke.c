/* spoke.c - the installed cluster's API, reached with its admin kubeconfig,
 * for the spoke cleanup of a host that left it (kubeapi.md §4.4 step 3):
 * its Node is deleted once the host is back in the discovery image.
 *
 * The SpokeCleanup controller (keys: Agents) does the deletion, so that a
 * spoke that does not answer holds neither an Agent pass nor an agent API
 * call: the host pipeline (agent.c) asks through
 * hub_spoke_cleanup_outcome(), which queues the key and answers pending;
 * the reconcile deletes the Node, keeps the outcome and queues the Agent,
 * whose next pass takes it (and clears what was owed).  A failure is tried
 * again every SPOKE_RETRY_MS while the cleanup is still owed.  Outcomes
 * live in this process only: after a restart the pass asks again.
 *
 * The kubeconfig is the one in the ClusterDeployment's admin kubeconfig
 * Secret: the current context's cluster (server, CA or
 * insecure-skip-tls-verify) and user (client certificate and key, or a
 * bearer token).  Nothing of it is logged. */
#include "hub-internal.h"

#include <pthread.h>

#include <curl/curl.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "base/yamljson.h"

#define SPOKE_TIMEOUT_S 10L
#define SPOKE_RETRY_MS 10000
/* Outcomes kept at most (a cleanup is owed by few hosts at a time). */
#define SPOKE_JOBS_MAX 10000

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

/* --- the SpokeCleanup controller --------------------------------------------- */

struct hub_spoke {
	struct rt_controller *c;
	pthread_mutex_t lock;
	/* "ns/name" -> {"cd", "node", "state": "pending"|"done"|"failed",
	 * "error", "last_error"} */
	json_t *jobs;
};

static void job_key(const json_t *agent, char *buf, size_t size)
{
	const json_t *meta = json_object_get(agent, "metadata");

	snprintf(buf, size, "%s/%s", jstr(meta, "namespace") ? jstr(meta, "namespace") : "",
		 jstr(meta, "name") ? jstr(meta, "name") : "");
}

int hub_spoke_cleanup_outcome(struct hub *h, const json_t *agent, const char *cdkey, const char *node,
			      char *msg, size_t size)
{
	struct hub_spoke *sp = h->spoke;
	const json_t *meta = json_object_get(agent, "metadata");
	char key[600];
	json_t *job;
	const char *state, *last;
	int r = 0;

	if (!sp)
		return -EIO;
	if (!node)
		node = "";
	job_key(agent, key, sizeof(key));
	pthread_mutex_lock(&sp->lock);
	job = json_object_get(sp->jobs, key);
	if (job && (strcmp(jstr(job, "cd"), cdkey) != 0 || strcmp(jstr(job, "node"), node) != 0)) {
		json_object_del(sp->jobs, key); /* owed for another unbind now */
		job = NULL;
	}
	if (!job) {
		if (json_object_size(sp->jobs) >= SPOKE_JOBS_MAX) {
			pthread_mutex_unlock(&sp->lock);
			snprintf(msg, size, "too many spoke cleanups under way; trying again");
			return -EAGAIN;
		}
		json_object_set_new(sp->jobs, key, json_pack("{s:s,s:s,s:s}", "cd", cdkey, "node", node, "state", "pending"));
		pthread_mutex_unlock(&sp->lock);
		rt_enqueue(sp->c, jstr(meta, "namespace"), jstr(meta, "name"));
		return 0;
	}
	state = jstr(job, "state");
	last = jstr(job, "last_error");
	if (strcmp(state, "done") == 0) {
		json_object_del(sp->jobs, key);
		r = 1;
	} else if (last) {
		/* Failed (or being tried again after a failure): the last
		 * error shows until a try succeeds. */
		snprintf(msg, size, "%s", last);
		r = -EIO;
	}
	pthread_mutex_unlock(&sp->lock);
	return r;
}

/* Delete the Node the cleanup of agent owes; 0 (deleted, absent, or no
 * kubeconfig to reach the spoke with), or negative with err set. */
static int delete_owed_node(struct hub *h, const char *cdkey, const char *node, ah_err *err)
{
	char ns[256], name[256], secname[320];
	json_t *cd = NULL, *sec = NULL;
	const char *kc64, *ref;
	unsigned char *kc = NULL;
	size_t kclen = 0;
	int r = 0;

	if (sscanf(cdkey, "%255[^/]/%255s", ns, name) != 2)
		return 0;
	/* The Secret the ClusterDeployment names, or the usual name when the
	 * ClusterDeployment is gone. */
	snprintf(secname, sizeof(secname), "%s-admin-kubeconfig", name);
	if (kube_get(h->api, h->k_cd, ns, name, &cd, err) == 0) {
		ref = jstr(json_object_get(json_object_get(json_object_get(cd, "spec"), "clusterMetadata"),
					   "adminKubeconfigSecretRef"), "name");
		if (ref && *ref)
			snprintf(secname, sizeof(secname), "%s", ref);
	}
	json_decref(cd);
	if (kube_get(h->api, h->k_secret, ns, secname, &sec, err) == 0 &&
	    (kc64 = jstr(json_object_get(sec, "data"), "kubeconfig")) &&
	    util_base64_decode(kc64, strlen(kc64), &kc, &kclen) == 0) {
		r = hub_spoke_delete_node((const char *)kc, kclen, node, err);
		OPENSSL_cleanse(kc, kclen);
		free(kc);
	}
	json_decref(sec);
	return r;
}

#define ANN_SKIP_SPOKE_CLEANUP "agent.agent-install.openshift.io/skip-spoke-cleanup"

static bool still_owed(struct hub *h, const struct rt_key *key, const char *cd)
{
	json_t *agent = NULL, *rec = NULL;
	store_obj *so = NULL;
	const json_t *meta;
	bool owed;
	ah_err err;

	if (kube_get(h->api, h->k_agent, key->ns, key->name, &agent, &err) < 0)
		return false;
	meta = json_object_get(agent, "metadata");
	owed = !json_object_get(json_object_get(meta, "annotations"), ANN_SKIP_SPOKE_CLEANUP);
	if (owed && store_get(h->store, HOSTSPEC_RESOURCE, key->ns, key->name, &so) == 0) {
		rec = json_loadb(so->json, so->len, 0, NULL);
		store_obj_free(so);
		owed = jstr(rec, "uid") && jstr(meta, "uid") && strcmp(jstr(rec, "uid"), jstr(meta, "uid")) == 0 &&
		       jstr(rec, "deprovision_cd") && strcmp(jstr(rec, "deprovision_cd"), cd) == 0;
		json_decref(rec);
	}
	json_decref(agent);
	return owed;
}

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	struct hub *h = ctx;
	struct hub_spoke *sp = h->spoke;
	char k[600], *cd = NULL, *node = NULL;
	json_t *job;
	ah_err err;
	int r;

	snprintf(k, sizeof(k), "%s/%s", key->ns, key->name);
	pthread_mutex_lock(&sp->lock);
	job = json_object_get(sp->jobs, k);
	if (job && strcmp(jstr(job, "state"), "done") != 0) {
		cd = strdup(jstr(job, "cd"));
		node = strdup(jstr(job, "node"));
	}
	pthread_mutex_unlock(&sp->lock);
	if (!cd || !node) {
		free(cd);
		free(node);
		return rt_done();
	}
	/* Still owed?  Not when the Agent is gone, asks to skip it, or its
	 * host's record (agent.c) no longer owes this one. */
	if (!still_owed(h, key, cd)) {
		pthread_mutex_lock(&sp->lock);
		job = json_object_get(sp->jobs, k);
		if (job && strcmp(jstr(job, "cd"), cd) == 0 && strcmp(jstr(job, "node"), node) == 0)
			json_object_del(sp->jobs, k);
		pthread_mutex_unlock(&sp->lock);
		free(cd);
		free(node);
		return rt_done();
	}
	ah_err_clear(&err);
	r = delete_owed_node(h, cd, node, &err);
	if (r == 0 && *node)
		log_info("agent %s: node %s deleted from the cluster of %s", k, node, cd);
	pthread_mutex_lock(&sp->lock);
	job = json_object_get(sp->jobs, k);
	/* Unless the cleanup owed changed meanwhile, keep the outcome. */
	if (job && strcmp(jstr(job, "cd"), cd) == 0 && strcmp(jstr(job, "node"), node) == 0) {
		json_object_set_new(job, "state", json_string(r == 0 ? "done" : "failed"));
		if (r < 0)
			json_object_set_new(job, "last_error", json_string(err.message));
	}
	pthread_mutex_unlock(&sp->lock);
	free(cd);
	free(node);
	/* The Agent's pass takes the outcome (and shows a failure). */
	rt_enqueue(h->c_agent, key->ns, key->name);
	return r < 0 ? rt_requeue_after(SPOKE_RETRY_MS) : rt_done();
}

int hub_spoke_register(struct hub *h)
{
	struct hub_spoke *sp = calloc(1, sizeof(*sp));
	struct rt_controller_def d = {
		.name = "SpokeCleanup",
		.reconcile = reconcile,
		.ctx = h,
	};

	if (!sp)
		return -ENOMEM;
	sp->jobs = json_object();
	pthread_mutex_init(&sp->lock, NULL);
	h->spoke = sp;
	if (!sp->jobs)
		return -ENOMEM;
	return rt_register(h->rt, &d, &sp->c);
}

void hub_spoke_free(struct hub *h)
{
	if (!h->spoke)
		return;
	json_decref(h->spoke->jobs);
	pthread_mutex_destroy(&h->spoke->lock);
	free(h->spoke);
	h->spoke = NULL;
}
