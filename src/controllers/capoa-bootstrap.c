/* capoa-bootstrap.c - the CAPI OpenShift Assisted bootstrap provider
 * (bmac-capi.md §C.4, §C.5), run by the hub's controller runtime in place of
 * CAPOA's bootstrap manager.  Two controllers:
 *
 * "OpenshiftAssistedConfig" (keyed by OAC): with its owner Machine and the
 * Machine's Cluster provisioned, finds the ClusterDeployment labelled with
 * the cluster's name (any namespace, exactly one; a cache index) and its
 * AgentClusterInstall, gates workers on the install state, creates InfraEnv
 * <Machine name> (never updated afterwards), fetches its discovery ignition
 * over HTTPS from the URL built from the InfraEnv's eventsURL (§C.4 step
 * 11), appends the installed-node pieces (capoa-ignition.h) and creates the
 * bootstrap data Secret <oac> once.  Status: dataSecretName,
 * initialization.dataSecretCreated, v1beta1Conditions (DataSecretAvailable
 * and its summary Ready) and, beyond upstream (which leaves them empty),
 * the same two conditions in the v1beta2 conditions; observedGeneration
 * after a pass without error.  Deleting: the InfraEnv goes (its Agents
 * follow), then the finalizer.
 *   Watches: OACs; Machines (their bootstrap.configRef); InfraEnvs (owner
 *   OAC); ClusterDeployments, AgentClusterInstalls and Clusters (the OACs
 *   labelled with their cluster name; upstream's CD mapper enqueues the CD's
 *   own name, and workers poll the install state every 60 s).
 *
 * "CAPOAAgent" (keyed by Agent): Agent → its InfraEnv (label) → owner
 * Machine → configRef OAC; sets role, approved (one Agent per InfraEnv
 * label, across namespaces) and ignitionConfigOverrides, and then
 * installerArgs from the OAC's kernelArguments, in one update, only when
 * one of the three differs.  An Agent whose InfraEnv has no Machine owner
 * is not a CAPI one and is left alone (upstream logs an error for it); the
 * mapper already drops those events, so other Agents cost one cache look-up.
 *
 * The ignition fetch is one bounded HTTPS GET (connect 5 s, whole transfer
 * 20 s, body at most 32 MiB), trusting the system roots, the hub's own CA
 * and the CA bundle named by ASSISTED_CA_BUNDLE_* (§C.4 step 12) when it
 * exists.  It never runs on a reconcile thread (the hub has one for all
 * controllers): the reconcile asks for it (a bounded job list, one job per
 * OAC), a small pool of threads (started on demand, at most
 * FETCH_THREADS_MAX) runs it and queues the OAC again, and the next pass
 * takes the result, only when it is for the URL the InfraEnv names now and
 * younger than FETCH_RESULT_TTL_MS. */
#include <curl/curl.h>
#include <pthread.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"
#include "base/util.h"
#include "controllers/hub-internal.h"
#include "controllers/runtime.h"
#include "image/capoa-ignition.h"
#include "kube/api.h"
#include "kube/registry.h"

#define CAPI_GROUP "cluster.x-k8s.io"
#define BOOT_GROUP "bootstrap." CAPI_GROUP
#define OAC_KIND "OpenshiftAssistedConfig"
#define OAC_FINALIZER "openshiftassistedconfig." BOOT_GROUP "/deprovision"
#define LABEL_CLUSTER_NAME CAPI_GROUP "/cluster-name"
#define LABEL_CONTROL_PLANE CAPI_GROUP "/control-plane"
#define LABEL_OAC BOOT_GROUP "/openshiftAssistedConfig"
#define ANN_DISCOVERY_OVERRIDE "openshiftassistedconfig." CAPI_GROUP "/discovery-ignition-override"
#define ANN_IGNITION_OVERRIDE "openshiftassistedconfig." CAPI_GROUP "/ignition-override"
#define PLACEHOLDER_PULL_SECRET "placeholder-pull-secret"
#define PLACEHOLDER_DOCKERCONFIG "{\"auths\":{\"fake-pull-secret\":{\"auth\":\"cGxhY2Vob2xkZXI6c2VjcmV0Cg==\"}}}"
#define SECRET_TYPE CAPI_GROUP "/secret"

#define COND_DATA_SECRET "DataSecretAvailable"
#define R_INFRAENV_FAILED "InfraEnvFailed"
#define R_SECRET_FAILED "CreatingSecretFailed"
#define R_WAIT_INSTALL "WaitingForInstallComplete"
#define R_WAIT_AI "WaitingForAssistedInstaller"
#define R_WAIT_INFRA "WaitingForClusterInfrastructure"
#define R_WAIT_INFRAENV "WaitingForInfraEnvToBeReady"

#define RETRY_HIGH_MS 60000
#define RETRY_MS 20000
#define FETCH_CONNECT_MS 5000L
#define FETCH_TIMEOUT_MS 20000L
#define FETCH_MAX (32u << 20)
#define FETCH_JOBS_MAX 4096        /* OACs with a fetch asked for or its result unread */
#define FETCH_THREADS_MAX 4
#define FETCH_RESULT_TTL_MS 60000  /* an unread result older than this is fetched again */

#define IDX_CD_CAPI_CLUSTER "capiClusterName"  /* ClusterDeployment -> its cluster-name label */
#define IDX_OAC_CAPI_CLUSTER "capiClusterName" /* OAC -> its cluster-name label */
#define IDX_AGENT_IE_LABEL "infraEnvLabel"     /* Agent -> its InfraEnv label value */

struct capoa {
	struct hub *h;
	const struct kube_kind *k_oac, *k_machine, *k_cluster, *k_cm;
	struct rt_controller *c_oac, *c_agent;
};

static struct capoa capoa_ctx; /* one hub per process: the controllers' context */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const json_t *meta(const json_t *o)
{
	return json_object_get(o, "metadata");
}

static bool is_set(const char *s)
{
	return s && *s;
}

static const char *label(const json_t *o, const char *k)
{
	return jstr(json_object_get(meta(o), "labels"), k);
}

static bool has_label(const json_t *o, const char *k)
{
	return json_object_get(json_object_get(meta(o), "labels"), k) != NULL;
}

static bool deleting(const json_t *o)
{
	return is_set(jstr(meta(o), "deletionTimestamp"));
}

/* The group of an apiVersion ("cluster.x-k8s.io/v1beta2" -> "cluster.x-k8s.io"). */
static bool api_group_is(const char *api_version, const char *group)
{
	size_t n = strlen(group);

	return api_version && strncmp(api_version, group, n) == 0 && api_version[n] == '/';
}

/* The ownerReference of kind in group, or NULL. */
static const json_t *owner_ref(const json_t *obj, const char *group, const char *kind)
{
	const json_t *o;
	size_t i;

	json_array_foreach(json_object_get(meta(obj), "ownerReferences"), i, o)
		if (jstr(o, "kind") && strcmp(jstr(o, "kind"), kind) == 0 && api_group_is(jstr(o, "apiVersion"), group))
			return o;
	return NULL;
}

static json_t *owner_of(const json_t *obj)
{
	return json_pack("{s:s?,s:s?,s:s?,s:s?}", "apiVersion", jstr(obj, "apiVersion"), "kind", jstr(obj, "kind"),
			 "name", jstr(meta(obj), "name"), "uid", jstr(meta(obj), "uid"));
}

/* --- indexes and mappers ------------------------------------------------------ */

static void cluster_name_index(const json_t *obj, json_t *out)
{
	const char *v = label(obj, LABEL_CLUSTER_NAME);

	if (is_set(v))
		json_array_append_new(out, json_string(v));
}

static void agent_ie_label_index(const json_t *agent, json_t *out)
{
	const char *v = label(agent, LABEL_INFRAENV);

	if (is_set(v))
		json_array_append_new(out, json_string(v));
}

static void machine_to_oac(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	const json_t *ref = json_object_get(json_object_get(json_object_get(ev->obj, "spec"), "bootstrap"), "configRef");
	const char *kind = jstr(ref, "kind"), *group = jstr(ref, "apiGroup");

	(void)ctx;
	if (!ev->obj || !is_set(jstr(ref, "name")) || !kind || strcmp(kind, OAC_KIND) != 0)
		return;
	if (group && strcmp(group, BOOT_GROUP) != 0)
		return;
	rt_enqueue(c, ev->so->ns, jstr(ref, "name"));
}

/* OACs labelled with the cluster name: namespace ns only, or any ("" ). */
static void enqueue_oacs_of(struct rt_controller *c, const char *cluster, const char *ns)
{
	json_t *pairs, *p;
	size_t i;

	if (!is_set(cluster))
		return;
	pairs = rt_cache_list_by(capoa_ctx.h->rt, capoa_ctx.k_oac->store_key, IDX_OAC_CAPI_CLUSTER, cluster);
	json_array_foreach(pairs, i, p) {
		const char *pns = json_string_value(json_array_get(p, 0));

		if (!*ns || strcmp(ns, pns) == 0)
			rt_enqueue(c, pns, json_string_value(json_array_get(p, 1)));
	}
	json_decref(pairs);
}

static void cd_to_oacs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	const json_t *old = rt_event_old_index(ev, IDX_CD_CAPI_CLUSTER), *v;
	size_t i;

	(void)ctx;
	if (ev->obj)
		enqueue_oacs_of(c, label(ev->obj, LABEL_CLUSTER_NAME), "");
	json_array_foreach(old, i, v)
		enqueue_oacs_of(c, json_string_value(v), "");
}

/* Only the Agents of a Machine's InfraEnv (the cached InfraEnv has an owner
 * Machine): the others never reach the Agent reconcile. */
static void agent_to_self(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct capoa *cp = ctx;
	const char *ie_name = ev->obj ? label(ev->obj, LABEL_INFRAENV) : NULL;
	json_t *ie;

	if (!is_set(ie_name) || ev->so->type == STORE_DELETED)
		return;
	ie = rt_cache_get(cp->h->rt, cp->h->k_infraenv->store_key, ev->so->ns, ie_name);
	if (ie && owner_ref(ie, CAPI_GROUP, "Machine"))
		rt_enqueue(c, ev->so->ns, ev->so->name);
	json_decref(ie);
}

/* An AgentClusterInstall labelled with the cluster name (as the control
 * plane makes it): its state gates workers. */
static void aci_to_oacs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	(void)ctx;
	if (ev->obj)
		enqueue_oacs_of(c, label(ev->obj, LABEL_CLUSTER_NAME), "");
}

static void cluster_to_oacs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	(void)ctx;
	enqueue_oacs_of(c, ev->so->name, ev->so->ns);
}

/* --- conditions and status ------------------------------------------------------ */

struct pass {
	const char *status;   /* of DataSecretAvailable: "True", "False", NULL = not set this pass */
	const char *reason;
	const char *severity; /* v1beta1: Info / Warning when False */
	char message[512];
};

static void mark(struct pass *p, const char *status, const char *reason, const char *severity, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void mark(struct pass *p, const char *status, const char *reason, const char *severity, const char *fmt, ...)
{
	va_list ap;

	p->status = status;
	p->reason = reason;
	p->severity = severity;
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof(p->message), fmt, ap);
	va_end(ap);
}

static const json_t *cond_find(const json_t *list, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(list, i, c)
		if (jstr(c, "type") && strcmp(jstr(c, "type"), type) == 0)
			return c;
	return NULL;
}

/* Set condition type in list (a new array, from old) with the transition
 * time kept when its status did not move. */
static void cond_put(json_t *list, const json_t *old_list, const char *type, const char *status, const char *reason,
		     const char *severity, const char *message, json_int_t generation, bool v1beta2)
{
	const json_t *old = cond_find(old_list, type);
	char now[64];
	json_t *c;
	size_t i;

	util_now_rfc3339(now, sizeof(now));
	c = json_pack("{s:s,s:s,s:s}", "type", type, "status", status, "lastTransitionTime",
		      old && jstr(old, "status") && strcmp(jstr(old, "status"), status) == 0 && jstr(old, "lastTransitionTime")
			      ? jstr(old, "lastTransitionTime")
			      : now);
	if (!c)
		return;
	if (is_set(reason))
		json_object_set_new(c, "reason", json_string(reason));
	/* metav1.Condition requires a message ("" is one); v1beta1 omits an empty one. */
	if (is_set(message) || v1beta2)
		json_object_set_new(c, "message", json_string(message ? message : ""));
	if (!v1beta2 && is_set(severity))
		json_object_set_new(c, "severity", json_string(severity));
	if (v1beta2 && generation > 0)
		json_object_set_new(c, "observedGeneration", json_integer(generation));
	for (i = 0; i < json_array_size(list); i++)
		if (strcmp(jstr(json_array_get(list, i), "type"), type) == 0) {
			json_array_set_new(list, i, c);
			return;
		}
	json_array_append_new(list, c);
}

/* Copy the list, without its entries of types DataSecretAvailable and Ready. */
static json_t *cond_others(const json_t *old)
{
	json_t *out = json_array();
	const json_t *c;
	size_t i;

	json_array_foreach(old, i, c)
		if (jstr(c, "type") && strcmp(jstr(c, "type"), COND_DATA_SECRET) != 0 && strcmp(jstr(c, "type"), "Ready") != 0)
			json_array_append(out, (json_t *)c);
	return out;
}

/* Write the status a pass arrived at (when it differs). */
static int write_status(struct capoa *cp, const json_t *oac, const struct pass *p, bool ok, const char *secret_name)
{
	const json_t *st = json_object_get(oac, "status");
	const json_t *old1 = json_object_get(st, "v1beta1Conditions"), *old2 = json_object_get(st, "conditions");
	json_int_t gen = json_integer_value(json_object_get(meta(oac), "generation"));
	json_t *want = json_deep_copy(json_is_object(st) ? st : NULL), *c1, *c2, *patch, *ret = NULL;
	struct kube_opts o = { .status = true };
	ah_err err = { 0 };
	int r = 0;

	if (!want)
		want = json_object();
	if (p->status) {
		bool t = strcmp(p->status, "True") == 0;

		c1 = cond_others(old1);
		c2 = cond_others(old2);
		cond_put(c1, old1, COND_DATA_SECRET, p->status, t ? NULL : p->reason, t ? NULL : p->severity, p->message, 0,
			 false);
		/* Ready: the summary of DataSecretAvailable (its only condition). */
		cond_put(c1, old1, "Ready", p->status, t ? NULL : p->reason, t ? NULL : p->severity, p->message, 0, false);
		cond_put(c2, old2, COND_DATA_SECRET, p->status, t ? COND_DATA_SECRET : p->reason, NULL, p->message, gen, true);
		cond_put(c2, old2, "Ready", p->status, t ? "Ready" : p->reason, NULL, p->message, gen, true);
		json_object_set_new(want, "v1beta1Conditions", c1);
		json_object_set_new(want, "conditions", c2);
	}
	if (secret_name) {
		json_object_set_new(want, "dataSecretName", json_string(secret_name));
		json_object_set_new(want, "initialization", json_pack("{s:b}", "dataSecretCreated", 1));
	}
	if (ok && gen > 0)
		json_object_set_new(want, "observedGeneration", json_integer(gen));
	if (json_equal(want, st)) {
		json_decref(want);
		return 0;
	}
	patch = json_pack("{s:{s:O},s:o}", "metadata", "resourceVersion", json_object_get(meta(oac), "resourceVersion"),
			  "status", want);
	if (patch)
		r = kube_patch(cp->h->api, cp->k_oac, jstr(meta(oac), "namespace"), jstr(meta(oac), "name"),
			       "application/merge-patch+json", patch, &o, &ret, &err);
	if (r < 0 && err.status != 404 && err.status != 409)
		log_warn("openshiftassistedconfig %s/%s: status: %s", jstr(meta(oac), "namespace"), jstr(meta(oac), "name"),
			 err.message);
	json_decref(patch);
	json_decref(ret);
	return r < 0 && err.status == 404 ? 0 : r;
}

/* --- finalizer ----------------------------------------------------------------------- */

/* Add (present) or remove the finalizer: 0 when nothing was to do, 1 when
 * written, -ENOENT when the object is gone, or another negative errno. */
static int set_finalizer(struct capoa *cp, const json_t *oac, bool present)
{
	const json_t *fins = json_object_get(meta(oac), "finalizers"), *f;
	json_t *list = json_array(), *patch, *ret = NULL;
	bool found = false;
	ah_err err = { 0 };
	size_t i;
	int r;

	json_array_foreach(fins, i, f) {
		if (json_string_value(f) && strcmp(json_string_value(f), OAC_FINALIZER) == 0) {
			found = true;
			if (!present)
				continue;
		}
		json_array_append(list, (json_t *)f);
	}
	if (found == present) {
		json_decref(list);
		return 0;
	}
	if (present)
		json_array_append_new(list, json_string(OAC_FINALIZER));
	patch = json_pack("{s:{s:o,s:O}}", "metadata", "finalizers", list, "resourceVersion",
			  json_object_get(meta(oac), "resourceVersion"));
	r = kube_patch(cp->h->api, cp->k_oac, jstr(meta(oac), "namespace"), jstr(meta(oac), "name"),
		       "application/merge-patch+json", patch, NULL, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	if (r < 0 && err.status == 404)
		return -ENOENT;
	return r < 0 ? r : 1;
}

/* --- the ignition fetch ------------------------------------------------------------ */

struct body {
	char *data;
	size_t len;
	bool too_big;
};

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
	struct body *b = ud;
	size_t add = size * n;
	char *q;

	if (b->len + add > FETCH_MAX) {
		b->too_big = true;
		return 0;
	}
	q = realloc(b->data, b->len + add + 1);
	if (!q)
		return 0;
	memcpy(q + b->len, p, add);
	b->data = q;
	b->len += add;
	b->data[b->len] = 0;
	return add;
}

static const char *env_or(const char *name, const char *def)
{
	const char *v = getenv(name);

	return is_set(v) ? v : def;
}

/* The CA bundle of §C.4 step 12 (malloc'd PEM) or NULL when absent. */
static char *ca_bundle(struct capoa *cp)
{
	const char *res = env_or("ASSISTED_CA_BUNDLE_RESOURCE", "secret");
	const char *ns = env_or("ASSISTED_CA_BUNDLE_NAMESPACE", "assisted-installer");
	const char *name = env_or("ASSISTED_CA_BUNDLE_NAME", "assisted-installer-ca");
	const char *key = env_or("ASSISTED_CA_BUNDLE_KEY", "ca.crt");
	bool cm = strcasecmp(res, "configmap") == 0;
	const struct kube_kind *k = cm ? cp->k_cm : cp->h->k_secret;
	json_t *obj = NULL;
	ah_err err = { 0 };
	const char *v;
	char *out = NULL;

	if (!k || kube_get(cp->h->api, k, ns, name, &obj, &err) < 0)
		return NULL;
	v = jstr(json_object_get(obj, "data"), key);
	if (v && cm) {
		out = strdup(v);
	} else if (v) {
		unsigned char *raw = NULL;
		size_t len = 0;

		if (util_base64_decode(v, strlen(v), &raw, &len) == 0) {
			out = malloc(len + 1);
			if (out) {
				memcpy(out, raw, len);
				out[len] = 0;
			}
			free(raw);
		}
	}
	json_decref(obj);
	return out;
}

/* The ignition URL of §C.4 step 11 (malloc'd), or NULL with why. */
static char *ignition_url(const char *events_url, const char *ie_ns, char *why, size_t why_size)
{
	const char *internal = getenv("USE_INTERNAL_IMAGE_URL");
	char base[1024];

	if (internal && strcasecmp(internal, "true") == 0) {
		snprintf(base, sizeof(base), "http://%s.%s.svc.cluster.local:8090",
			 env_or("ASSISTED_SERVICE_NAME", "assisted-service"), env_or("ASSISTED_INSTALLER_NAMESPACE", ie_ns));
		return capoa_ignition_url(events_url, base, why, why_size);
	}
	return capoa_ignition_url(events_url, NULL, why, why_size);
}

/* One fetch: what to get, and its result once done.  The URL holds the
 * InfraEnv's api_key: it is wiped when freed and never logged. */
struct fetch_job {
	char ns[RT_NS_MAX + 1], name[RT_NAME_MAX + 1];
	char *url, *cas;   /* cas: the extra PEM roots, or NULL for the system ones */
	bool running, done;
	int64_t done_ms;
	int err;           /* 0: body is the ignition */
	char *body;
	size_t len;
	char why[512];
	struct fetch_job *next;  /* all jobs */
	struct fetch_job *qnext; /* waiting for a thread */
};

static struct fetcher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct fetch_job *jobs, *qhead, *qtail;
	size_t njobs;
	bool stop;
	int nthreads, idle;
	pthread_t threads[FETCH_THREADS_MAX];
} fetcher = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void fetch_job_free(struct fetch_job *j)
{
	if (!j)
		return;
	if (j->url) {
		explicit_bzero(j->url, strlen(j->url));
		free(j->url);
	}
	free(j->cas);
	free(j->body);
	free(j);
}

/* Aborts a transfer when the hub stops. */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)ud, (void)dt, (void)dn, (void)ut, (void)un;
	return __atomic_load_n(&fetcher.stop, __ATOMIC_RELAXED) ? 1 : 0;
}

/* GET j->url into j->body, or j->err and j->why (no secrets: the URL's
 * query is never shown).  Runs on a fetch thread. */
static void fetch_run(struct fetch_job *j)
{
	char curl_msg[CURL_ERROR_SIZE] = "";
	struct body b = { 0 };
	long code = 0;
	CURLcode cr;
	CURL *c = curl_easy_init();

	if (!c) {
		j->err = -ENOMEM;
		snprintf(j->why, sizeof(j->why), "out of memory");
		return;
	}
	curl_easy_setopt(c, CURLOPT_URL, j->url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, curl_msg);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
#endif
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, FETCH_CONNECT_MS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, FETCH_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)FETCH_MAX);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	if (j->cas) {
		/* The hub's CA and the bundle, besides the system roots (CAPATH). */
		struct curl_blob blob = { .data = j->cas, .len = strlen(j->cas), .flags = CURL_BLOB_COPY };

		curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
		curl_easy_setopt(c, CURLOPT_CAPATH, "/etc/ssl/certs");
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (cr != CURLE_OK || code != 200) {
		if (b.too_big)
			snprintf(j->why, sizeof(j->why), "ignition larger than %u bytes", FETCH_MAX);
		else if (cr != CURLE_OK)
			snprintf(j->why, sizeof(j->why), "ignition request failed: %s",
				 curl_msg[0] ? curl_msg : curl_easy_strerror(cr));
		else
			snprintf(j->why, sizeof(j->why), "ignition request returned status %ld", code);
		free(b.data);
		j->err = -EIO;
		return;
	}
	j->body = b.data ? b.data : strdup("");
	j->len = b.len;
	j->err = j->body ? 0 : -ENOMEM;
	if (!j->body)
		snprintf(j->why, sizeof(j->why), "out of memory");
}

static void *fetch_worker(void *ud)
{
	struct fetcher *f = ud;

	pthread_mutex_lock(&f->lock);
	for (;;) {
		struct fetch_job *j;

		f->idle++;
		while (!f->stop && !f->qhead)
			pthread_cond_wait(&f->cond, &f->lock);
		f->idle--;
		if (f->stop)
			break;
		j = f->qhead;
		f->qhead = j->qnext;
		if (!f->qhead)
			f->qtail = NULL;
		j->qnext = NULL;
		j->running = true;
		pthread_mutex_unlock(&f->lock);
		fetch_run(j);
		pthread_mutex_lock(&f->lock);
		j->done = true;
		j->done_ms = util_mono_ms();
		if (!f->stop && capoa_ctx.c_oac)
			rt_enqueue(capoa_ctx.c_oac, j->ns, j->name);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

/* Unlink *pp, not running (under the lock; a job waiting for a thread is
 * also taken off that queue). */
static void fetch_unlink(struct fetch_job **pp)
{
	struct fetch_job *j = *pp, **qp, *prev = NULL;

	*pp = j->next;
	fetcher.njobs--;
	for (qp = &fetcher.qhead; *qp; prev = *qp, qp = &(*qp)->qnext)
		if (*qp == j) {
			*qp = j->qnext;
			if (fetcher.qtail == j)
				fetcher.qtail = prev;
			break;
		}
}

/* Drop the OAC's job and result (a running fetch is left to end: its result
 * is dropped by the next poll). */
static void fetch_forget(const char *ns, const char *name)
{
	struct fetch_job **pp, *j, *gone = NULL;

	pthread_mutex_lock(&fetcher.lock);
	for (pp = &fetcher.jobs; (j = *pp); pp = &j->next)
		if (strcmp(j->ns, ns) == 0 && strcmp(j->name, name) == 0)
			break;
	if (j && (!j->running || j->done)) {
		fetch_unlink(pp);
		gone = j;
	}
	pthread_mutex_unlock(&fetcher.lock);
	fetch_job_free(gone);
}

enum { FETCH_PENDING = 1 };

/* Ask for url for the OAC ns/name.  0: the fetch of that very URL ended,
 * recently: *ret (the body, owned by the caller; NULL with why on a
 * failure); FETCH_PENDING: it runs (the OAC is queued again when it ends);
 * negative: refused (-ENOBUFS, -ENOMEM) with why.  cas is taken. */
static int fetch_poll(const char *ns, const char *name, const char *url, char *cas, char **ret, size_t *ret_len,
		      char *why, size_t why_size)
{
	struct fetch_job **pp, *j, *old = NULL;
	int r = FETCH_PENDING;

	*ret = NULL;
	*ret_len = 0;
	pthread_mutex_lock(&fetcher.lock);
	for (pp = &fetcher.jobs; (j = *pp); pp = &j->next)
		if (strcmp(j->ns, ns) == 0 && strcmp(j->name, name) == 0)
			break;
	if (j && !j->done && strcmp(j->url, url) == 0) {
		pthread_mutex_unlock(&fetcher.lock);
		free(cas);
		return FETCH_PENDING;
	}
	if (j && j->running && !j->done) {
		/* For another URL: its result is dropped when it ends (the
		 * OAC is queued again then). */
		pthread_mutex_unlock(&fetcher.lock);
		free(cas);
		return FETCH_PENDING;
	}
	if (j && !j->done) {
		/* For another URL, still waiting for a thread: replaced. */
		fetch_unlink(pp);
		old = j;
	} else if (j) {
		fetch_unlink(pp);
		if (strcmp(j->url, url) == 0 && util_mono_ms() - j->done_ms <= FETCH_RESULT_TTL_MS) {
			pthread_mutex_unlock(&fetcher.lock);
			free(cas);
			if (j->err < 0)
				snprintf(why, why_size, "%s", j->why);
			else {
				*ret = j->body;
				*ret_len = j->len;
				j->body = NULL;
			}
			r = j->err;
			fetch_job_free(j);
			return r;
		}
		old = j; /* for another URL, or stale */
	}
	if (fetcher.njobs >= FETCH_JOBS_MAX) {
		/* Unread results go first: their OACs fetch again. */
		for (pp = &fetcher.jobs; (j = *pp); pp = &j->next)
			if (j->done)
				break;
		if (!j) {
			pthread_mutex_unlock(&fetcher.lock);
			fetch_job_free(old);
			free(cas);
			snprintf(why, why_size, "too many ignition requests in flight");
			return -ENOBUFS;
		}
		fetch_unlink(pp);
		fetch_job_free(j);
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		snprintf(j->ns, sizeof(j->ns), "%s", ns);
		snprintf(j->name, sizeof(j->name), "%s", name);
		j->url = strdup(url);
		j->cas = cas;
		cas = NULL;
	}
	if (!j || !j->url) {
		fetch_job_free(j);
		snprintf(why, why_size, "out of memory");
		r = -ENOMEM;
	} else {
		j->next = fetcher.jobs;
		fetcher.jobs = j;
		fetcher.njobs++;
		if (fetcher.qtail)
			fetcher.qtail->qnext = j;
		else
			fetcher.qhead = j;
		fetcher.qtail = j;
		/* No fetch threads until the first fetch; one more when every
		 * started one is busy, up to the bound. */
		if (fetcher.idle == 0 && fetcher.nthreads < FETCH_THREADS_MAX && !fetcher.stop &&
		    pthread_create(&fetcher.threads[fetcher.nthreads], NULL, fetch_worker, &fetcher) == 0)
			fetcher.nthreads++;
		pthread_cond_signal(&fetcher.cond);
	}
	pthread_mutex_unlock(&fetcher.lock);
	fetch_job_free(old);
	free(cas);
	return r;
}

/* The extra PEM roots for a fetch (malloc'd): the hub's CA and the bundle,
 * or NULL when neither is set (the system roots only).  Read on the
 * reconcile thread. */
static char *fetch_cas(struct capoa *cp)
{
	char *bundle = ca_bundle(cp), *cas = NULL;

	if ((is_set(cp->h->hub_ca_pem) || is_set(bundle)) &&
	    asprintf(&cas, "%s\n%s\n", cp->h->hub_ca_pem ? cp->h->hub_ca_pem : "", bundle ? bundle : "") < 0)
		cas = NULL;
	free(bundle);
	return cas;
}

/* At hub shutdown (after the runtime stopped): the threads end (a running
 * transfer is aborted) and the jobs go. */
void hub_capoa_bootstrap_stop(struct hub *h)
{
	struct fetch_job *j;
	int i, n;

	(void)h;
	pthread_mutex_lock(&fetcher.lock);
	__atomic_store_n(&fetcher.stop, true, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&fetcher.cond);
	n = fetcher.nthreads;
	pthread_mutex_unlock(&fetcher.lock);
	for (i = 0; i < n; i++)
		pthread_join(fetcher.threads[i], NULL);
	pthread_mutex_lock(&fetcher.lock);
	while ((j = fetcher.jobs)) {
		fetcher.jobs = j->next;
		fetch_job_free(j);
	}
	fetcher.qhead = fetcher.qtail = NULL;
	fetcher.njobs = 0;
	fetcher.nthreads = fetcher.idle = 0;
	__atomic_store_n(&fetcher.stop, false, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fetcher.lock);
	capoa_ctx.c_oac = NULL;
}

/* --- the OAC reconcile --------------------------------------------------------------- */

static int find_cd(struct capoa *cp, const char *cluster, json_t **ret_cd, json_t **ret_aci, char *why, size_t why_size)
{
	struct hub *h = cp->h;
	json_t *pairs = rt_cache_list_by(h->rt, h->k_cd->store_key, IDX_CD_CAPI_CLUSTER, cluster), *cd = NULL, *aci = NULL;
	const char *ns, *aci_name;
	ah_err err = { 0 };

	if (json_array_size(pairs) != 1) {
		snprintf(why, why_size, "found %zu ClusterDeployments labelled %s=%s, want exactly 1", json_array_size(pairs),
			 LABEL_CLUSTER_NAME, cluster);
		json_decref(pairs);
		return -ENOENT;
	}
	ns = json_string_value(json_array_get(json_array_get(pairs, 0), 0));
	if (kube_get(h->api, h->k_cd, ns, json_string_value(json_array_get(json_array_get(pairs, 0), 1)), &cd, &err) < 0) {
		snprintf(why, why_size, "cannot read the ClusterDeployment: %.600s", err.message);
		json_decref(pairs);
		return -ENOENT;
	}
	json_decref(pairs);
	aci_name = jstr(json_object_get(json_object_get(cd, "spec"), "clusterInstallRef"), "name");
	if (!is_set(aci_name)) {
		snprintf(why, why_size, "cluster deployment does not reference ACI");
		json_decref(cd);
		return -ENOENT;
	}
	if (!h->k_aci || kube_get(h->api, h->k_aci, jstr(meta(cd), "namespace"), aci_name, &aci, &err) < 0) {
		snprintf(why, why_size, "cannot read AgentClusterInstall %.200s: %.400s", aci_name, err.message);
		json_decref(cd);
		return -ENOENT;
	}
	*ret_cd = cd;
	*ret_aci = aci;
	return 0;
}

static int ensure_pull_secret(struct capoa *cp, const json_t *oac)
{
	json_t *body, *ret = NULL;
	char *b64 = util_base64_encode(PLACEHOLDER_DOCKERCONFIG, strlen(PLACEHOLDER_DOCKERCONFIG));
	ah_err err = { 0 };
	int r;

	if (!b64)
		return -ENOMEM;
	body = json_pack("{s:s,s:s,s:{s:s,s:s,s:[o]},s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata",
			 "name", PLACEHOLDER_PULL_SECRET, "namespace", jstr(meta(oac), "namespace"), "ownerReferences",
			 owner_of(oac), "type", "kubernetes.io/dockerconfigjson", "data", ".dockerconfigjson", b64);
	free(b64);
	if (!body)
		return -ENOMEM;
	r = kube_create(cp->h->api, cp->h->k_secret, jstr(meta(oac), "namespace"), body, NULL, &ret, &err);
	json_decref(body);
	json_decref(ret);
	return r < 0 && err.status == 409 ? 0 : r;
}

/* InfraEnv <machine>: read, or created (§C.4 step 8).  0 with *ret, or an
 * error with why. */
static int ensure_infraenv(struct capoa *cp, const json_t *oac, const json_t *machine, const json_t *cd, json_t **ret,
			   char *why, size_t why_size)
{
	struct hub *h = cp->h;
	const char *ns = jstr(meta(oac), "namespace"), *name = jstr(meta(machine), "name");
	const json_t *spec = json_object_get(oac, "spec"), *v;
	const char *ov = jstr(json_object_get(meta(oac), "annotations"), ANN_DISCOVERY_OVERRIDE);
	json_t *ie = NULL, *body, *ies, *labels;
	ah_err err = { 0 };
	int r;

	r = kube_get(h->api, h->k_infraenv, ns, name, &ie, &err);
	if (r == 0) {
		*ret = ie;
		return 0;
	}
	if (err.status != 404) {
		snprintf(why, why_size, "%.600s", err.message);
		return r;
	}
	labels = json_pack("{s:s}", LABEL_OAC, jstr(meta(oac), "name"));
	if (is_set(label(oac, LABEL_CLUSTER_NAME)))
		json_object_set_new(labels, LABEL_CLUSTER_NAME, json_string(label(oac, LABEL_CLUSTER_NAME)));
	ies = json_pack("{s:{s:s,s:s},s:s,s:s}", "clusterRef", "name", jstr(meta(cd), "name"), "namespace",
			jstr(meta(cd), "namespace"), "imageType", "full-iso", "cpuArchitecture",
			is_set(jstr(spec, "cpuArchitecture")) ? jstr(spec, "cpuArchitecture") : "x86_64");
	if ((v = json_object_get(spec, "proxy")) && json_is_object(v))
		json_object_set(ies, "proxy", (json_t *)v);
	if ((v = json_object_get(spec, "additionalNTPSources")) && json_array_size(v))
		json_object_set(ies, "additionalNTPSources", (json_t *)v);
	if (is_set(jstr(spec, "sshAuthorizedKey")))
		json_object_set(ies, "sshAuthorizedKey", json_object_get(spec, "sshAuthorizedKey"));
	if ((v = json_object_get(spec, "nmStateConfigLabelSelector")) && json_is_object(v))
		json_object_set(ies, "nmStateConfigLabelSelector", (json_t *)v);
	if (is_set(jstr(spec, "additionalTrustBundle")))
		json_object_set(ies, "additionalTrustBundle", json_object_get(spec, "additionalTrustBundle"));
	if (is_set(jstr(spec, "osImageVersion")))
		json_object_set(ies, "osImageVersion", json_object_get(spec, "osImageVersion"));
	if (is_set(ov)) {
		json_t *ovj = json_loads(ov, 0, NULL);

		if (!ovj) {
			json_decref(labels);
			json_decref(ies);
			snprintf(why, why_size, "annotation %s is not valid JSON", ANN_DISCOVERY_OVERRIDE);
			return -EINVAL;
		}
		json_decref(ovj);
		json_object_set_new(ies, "ignitionConfigOverride", json_string(ov));
	}
	if (is_set(jstr(json_object_get(spec, "pullSecretRef"), "name"))) {
		json_object_set_new(ies, "pullSecretRef", json_pack("{s:s}", "name", jstr(json_object_get(spec, "pullSecretRef"), "name")));
	} else {
		if ((r = ensure_pull_secret(cp, oac)) < 0) {
			json_decref(labels);
			json_decref(ies);
			snprintf(why, why_size, "cannot create Secret %s", PLACEHOLDER_PULL_SECRET);
			return r;
		}
		json_object_set_new(ies, "pullSecretRef", json_pack("{s:s}", "name", PLACEHOLDER_PULL_SECRET));
	}
	body = json_pack("{s:s,s:s,s:{s:s,s:s,s:o,s:[o,o]},s:o}", "apiVersion", h->k_infraenv->api_version, "kind", "InfraEnv",
			 "metadata", "name", name, "namespace", ns, "labels", labels, "ownerReferences", owner_of(oac),
			 owner_of(machine), "spec", ies);
	if (!body)
		return -ENOMEM;
	r = kube_create(h->api, h->k_infraenv, ns, body, NULL, &ie, &err);
	json_decref(body);
	if (r < 0 && err.status == 409)
		r = kube_get(h->api, h->k_infraenv, ns, name, &ie, &err);
	if (r < 0) {
		snprintf(why, why_size, "%.600s", err.message);
		return r;
	}
	*ret = ie;
	return 0;
}

static int create_data_secret(struct capoa *cp, const json_t *oac, const char *value, size_t len)
{
	char *b64 = util_base64_encode(value, len), *fmt = util_base64_encode("ignition", 8);
	json_t *body, *ret = NULL;
	ah_err err = { 0 };
	int r;

	if (!b64 || !fmt) {
		free(b64);
		free(fmt);
		return -ENOMEM;
	}
	body = json_pack("{s:s,s:s,s:{s:s,s:s,s:[o]},s:s,s:{s:s,s:s}}", "apiVersion", "v1", "kind", "Secret", "metadata",
			 "name", jstr(meta(oac), "name"), "namespace", jstr(meta(oac), "namespace"), "ownerReferences",
			 owner_of(oac), "type", SECRET_TYPE, "data", "value", b64, "format", fmt);
	free(b64);
	free(fmt);
	if (!body)
		return -ENOMEM;
	r = kube_create(cp->h->api, cp->h->k_secret, jstr(meta(oac), "namespace"), body, NULL, &ret, &err);
	json_decref(body);
	json_decref(ret);
	if (r < 0 && err.status != 409)
		log_warn("openshiftassistedconfig %s/%s: bootstrap data secret: %s", jstr(meta(oac), "namespace"),
			 jstr(meta(oac), "name"), err.message);
	return r < 0 && err.status == 409 ? 0 : r;
}

static bool secret_exists(struct capoa *cp, const char *ns, const char *name)
{
	json_t *s = NULL;
	ah_err err = { 0 };
	bool ok = kube_get(cp->h->api, cp->h->k_secret, ns, name, &s, &err) == 0;

	json_decref(s);
	return ok;
}

static struct rt_result reconcile_delete(struct capoa *cp, const json_t *oac, const json_t *machine, const char *machine_name)
{
	const char *ns = jstr(meta(oac), "namespace");
	json_t *ret = NULL;
	ah_err err = { 0 };
	const json_t *f;
	bool ours = false;
	size_t i;
	int r;

	json_array_foreach(json_object_get(meta(oac), "finalizers"), i, f)
		ours |= json_string_value(f) && strcmp(json_string_value(f), OAC_FINALIZER) == 0;
	if (!ours)
		return rt_done();
	if (machine && has_label(machine, LABEL_CONTROL_PLANE) && !deleting(machine)) {
		log_warn("openshiftassistedconfig %s/%s: control plane config deleted while its Machine %s is not",
			 ns, jstr(meta(oac), "name"), machine_name);
		return rt_error(-EBUSY);
	}
	r = kube_delete(cp->h->api, cp->h->k_infraenv, ns, machine_name, NULL, &ret, &err);
	json_decref(ret);
	if (r < 0 && err.status != 404)
		return rt_error(r);
	r = set_finalizer(cp, oac, false);
	return r == -ENOENT ? rt_done() : rt_from_errno(r < 0 ? r : 0);
}

static struct rt_result oac_reconcile(void *ctx, const struct rt_key *key)
{
	struct capoa *cp = ctx;
	struct hub *h = cp->h;
	json_t *oac = NULL, *machine = NULL, *cluster = NULL, *cd = NULL, *aci = NULL, *ie = NULL;
	struct pass p = { 0 };
	struct rt_result res = rt_done();
	const json_t *mref;
	const char *cluster_name, *secret_name = NULL;
	char why[768] = "", *url = NULL, *ign = NULL, *data = NULL;
	size_t ign_len = 0, data_len = 0;
	ah_err err = { 0 };
	int r;

	if (kube_get(h->api, cp->k_oac, key->ns, key->name, &oac, &err) < 0) {
		if (err.status == 404)
			fetch_forget(key->ns, key->name);
		return err.status == 404 ? rt_done() : rt_error(-EIO);
	}
	/* 1. The owner Machine. */
	mref = owner_ref(oac, CAPI_GROUP, "Machine");
	if (!mref || !is_set(jstr(mref, "name")))
		goto out_nostatus;
	if (kube_get(h->api, cp->k_machine, key->ns, jstr(mref, "name"), &machine, &err) < 0) {
		machine = NULL;
		if (!deleting(oac))
			goto out_nostatus;
	}
	/* 2. Deleting. */
	if (deleting(oac)) {
		fetch_forget(key->ns, key->name);
		res = reconcile_delete(cp, oac, machine, jstr(mref, "name"));
		goto out_nostatus;
	}
	/* 3. The finalizer. */
	if ((r = set_finalizer(cp, oac, true)) < 0) {
		res = r == -ENOENT ? rt_done() : rt_error(r);
		goto out_nostatus;
	}
	if (r == 1) {
		json_t *fresh = NULL;

		/* Read again: the status patch is guarded by the version. */
		if (kube_get(h->api, cp->k_oac, key->ns, key->name, &fresh, &err) < 0)
			goto out_nostatus;
		json_decref(oac);
		oac = fresh;
	}
	/* 4. The Cluster. */
	cluster_name = jstr(json_object_get(machine, "spec"), "clusterName");
	if (!is_set(cluster_name) || kube_get(h->api, cp->k_cluster, key->ns, cluster_name, &cluster, &err) < 0)
		goto out_nostatus;
	/* 5. Its infrastructure. */
	if (!json_is_true(json_object_get(json_object_get(json_object_get(cluster, "status"), "initialization"),
					  "infrastructureProvisioned"))) {
		mark(&p, "False", R_WAIT_INFRA, "Info", "%s", "");
		res = rt_requeue_after(RETRY_HIGH_MS);
		goto out;
	}
	/* 6. The ClusterDeployment and its ACI. */
	if (find_cd(cp, cluster_name, &cd, &aci, why, sizeof(why)) < 0) {
		mark(&p, "False", R_WAIT_AI, "Info", "%s", why);
		res = rt_requeue_after(RETRY_MS);
		goto out;
	}
	/* 7. Workers wait for the cluster to take hosts. */
	if (!has_label(machine, LABEL_CONTROL_PLANE)) {
		const char *state = jstr(json_object_get(json_object_get(aci, "status"), "debugInfo"), "state");

		if (state && *state && strcmp(state, "adding-hosts") != 0 && strcmp(state, "pending-for-input") != 0 &&
		    strcmp(state, "insufficient") != 0) {
			mark(&p, "False", R_WAIT_INSTALL, "Info", "%s", "");
			res = rt_requeue_after(RETRY_HIGH_MS);
			goto out;
		}
	}
	/* 8. The InfraEnv. */
	if ((r = ensure_infraenv(cp, oac, machine, cd, &ie, why, sizeof(why))) < 0) {
		mark(&p, "False", R_INFRAENV_FAILED, "Warning", "%s", why);
		res = rt_error(r);
		goto out;
	}
	/* 9. Done before. */
	if (json_is_true(json_object_get(json_object_get(json_object_get(oac, "status"), "initialization"), "dataSecretCreated")) &&
	    secret_exists(cp, key->ns, key->name)) {
		fetch_forget(key->ns, key->name);
		mark(&p, "True", NULL, NULL, "%s", "");
		secret_name = key->name;
		goto out;
	}
	/* 10. The InfraEnv's eventsURL. */
	{
		const char *ev = jstr(json_object_get(json_object_get(ie, "status"), "debugInfo"), "eventsURL");

		if (!is_set(ev)) {
			mark(&p, "False", R_WAIT_INFRAENV, "Info", "%s", "");
			res = rt_error(-EAGAIN);
			goto out;
		}
		/* 11, 12. The discovery ignition. */
		url = ignition_url(ev, key->ns, why, sizeof(why));
		r = url ? fetch_poll(key->ns, key->name, url, fetch_cas(cp), &ign, &ign_len, why, sizeof(why)) : -EINVAL;
		if (r == FETCH_PENDING) {
			/* The fetch thread queues the OAC when done; the delay
			 * is a backstop only. */
			res = rt_requeue_after(FETCH_TIMEOUT_MS + RETRY_MS);
			goto out_nostatus;
		}
		if (r < 0) {
			mark(&p, "False", R_WAIT_AI, "Info", "failed retrieving ignition: %s", why);
			res = rt_requeue_after(RETRY_MS);
			goto out;
		}
	}
	/* 13. The installed-node pieces. */
	{
		struct capoa_node_opts o;

		capoa_node_opts_from_spec(json_object_get(oac, "spec"), &o);
		if (capoa_ignition_bootstrap_data(ign, ign_len, &o, &data, &data_len, &err) < 0) {
			mark(&p, "False", R_SECRET_FAILED, "Warning", "%s", err.message);
			res = rt_error(-EINVAL);
			goto out;
		}
	}
	/* 14. The Secret. */
	if ((r = create_data_secret(cp, oac, data, data_len)) < 0) {
		mark(&p, "False", R_SECRET_FAILED, "Warning", "%s", "");
		res = rt_error(r);
		goto out;
	}
	/* 15. */
	secret_name = key->name;
	mark(&p, "True", NULL, NULL, "%s", "");
out:
	r = write_status(cp, oac, &p, res.outcome != RT_ERROR, secret_name);
	if (r < 0 && res.outcome != RT_ERROR)
		res = rt_error(r);
out_nostatus:
	free(url);
	free(ign);
	free(data);
	json_decref(ie);
	json_decref(cd);
	json_decref(aci);
	json_decref(cluster);
	json_decref(machine);
	json_decref(oac);
	return res;
}

/* --- the Agent controller (§C.5) ------------------------------------------------------ */

/* Whether another Agent with the same InfraEnv label (any namespace) is approved. */
static bool other_approved(struct capoa *cp, const json_t *agent, const char *ie_label)
{
	struct hub *h = cp->h;
	json_t *pairs = rt_cache_list_by(h->rt, h->k_agent->store_key, IDX_AGENT_IE_LABEL, ie_label), *p;
	bool found = false;
	size_t i;

	json_array_foreach(pairs, i, p) {
		const char *ns = json_string_value(json_array_get(p, 0)), *name = json_string_value(json_array_get(p, 1));
		json_t *a = NULL;
		ah_err err = { 0 };

		if (strcmp(name, jstr(meta(agent), "name")) == 0)
			continue;
		if (kube_get(h->api, h->k_agent, ns, name, &a, &err) == 0 &&
		    json_is_true(json_object_get(json_object_get(a, "spec"), "approved")))
			found = true;
		json_decref(a);
		if (found)
			break;
	}
	json_decref(pairs);
	return !found;
}

static struct rt_result agent_reconcile(void *ctx, const struct rt_key *key)
{
	struct capoa *cp = ctx;
	struct hub *h = cp->h;
	json_t *agent = NULL, *ie = NULL, *machine = NULL, *oac = NULL, *args = NULL, *ret = NULL;
	struct rt_result res = rt_done();
	const json_t *mref, *ref, *spec, *k;
	const char *ie_name, *role, *cur_ign;
	struct capoa_node_opts o;
	char *ign = NULL, *args_text = NULL;
	bool approve;
	ah_err err = { 0 };
	size_t i;
	int r;

	if (kube_get(h->api, h->k_agent, key->ns, key->name, &agent, &err) < 0)
		return rt_done();
	ie_name = label(agent, LABEL_INFRAENV);
	if (!is_set(ie_name) || deleting(agent) ||
	    kube_get(h->api, h->k_infraenv, key->ns, ie_name, &ie, &err) < 0)
		goto out;
	mref = owner_ref(ie, CAPI_GROUP, "Machine");
	if (!mref || kube_get(h->api, cp->k_machine, key->ns, jstr(mref, "name"), &machine, &err) < 0)
		goto out; /* not a CAPI Agent (or its Machine is gone) */
	ref = json_object_get(json_object_get(json_object_get(machine, "spec"), "bootstrap"), "configRef");
	if (!is_set(jstr(ref, "name")))
		goto out;
	if (kube_get(h->api, cp->k_oac, key->ns, jstr(ref, "name"), &oac, &err) < 0) {
		res = err.status == 404 ? rt_requeue_after(RETRY_MS) : rt_error(-EIO);
		goto out;
	}
	role = has_label(machine, LABEL_CONTROL_PLANE) ? "master" : "worker";
	capoa_node_opts_from_spec(json_object_get(oac, "spec"), &o);
	if (capoa_ignition_agent_override(&o, jstr(json_object_get(meta(oac), "annotations"), ANN_IGNITION_OVERRIDE), &ign,
					  &err) < 0) {
		log_warn("agent %s/%s: openshiftassistedconfig %s: %s", key->ns, key->name, jstr(meta(oac), "name"),
			 err.message);
		res = rt_error(-EINVAL);
		goto out;
	}
	approve = other_approved(cp, agent, ie_name);
	spec = json_object_get(agent, "spec");
	cur_ign = jstr(spec, "ignitionConfigOverrides");
	if (jstr(spec, "role") && strcmp(jstr(spec, "role"), role) == 0 && cur_ign && strcmp(cur_ign, ign) == 0 &&
	    json_is_true(json_object_get(spec, "approved")) == approve)
		goto out;
	args = json_array();
	json_array_foreach(json_object_get(json_object_get(oac, "spec"), "kernelArguments"), i, k) {
		char flag[128];

		snprintf(flag, sizeof(flag), "--%s-karg", jstr(k, "operation") ? jstr(k, "operation") : "");
		json_array_append_new(args, json_string(flag));
		json_array_append_new(args, json_string(jstr(k, "value") ? jstr(k, "value") : ""));
	}
	args_text = json_dumps(args, JSON_COMPACT);
	{
		json_t *body = json_deep_copy(agent), *bs;

		if (!body || !args_text) {
			json_decref(body);
			res = rt_error(-ENOMEM);
			goto out;
		}
		bs = json_object_get(body, "spec");
		if (!json_is_object(bs)) {
			bs = json_object();
			json_object_set_new(body, "spec", bs);
		}
		json_object_set_new(bs, "role", json_string(role));
		json_object_set_new(bs, "ignitionConfigOverrides", json_string(ign));
		json_object_set_new(bs, "approved", json_boolean(approve));
		json_object_set_new(bs, "installerArgs", json_string(args_text));
		json_object_del(body, "status");
		r = kube_update(h->api, h->k_agent, key->ns, key->name, body, NULL, &ret, &err);
		json_decref(body);
		if (r < 0 && err.status != 404) {
			if (err.status != 409)
				log_warn("agent %s/%s: capoa spec: %s", key->ns, key->name, err.message);
			res = rt_error(r);
		}
	}
out:
	free(ign);
	free(args_text);
	json_decref(args);
	json_decref(ret);
	json_decref(oac);
	json_decref(machine);
	json_decref(ie);
	json_decref(agent);
	return res;
}

/* --- registration -------------------------------------------------------------------- */

int hub_capoa_bootstrap_register(struct hub *h)
{
	struct capoa *cp = &capoa_ctx;
	int r;

	cp->h = h;
	cp->k_oac = kube_registry_by_kind(h->reg, BOOT_GROUP "/v1alpha2", OAC_KIND);
	cp->k_machine = kube_registry_by_kind(h->reg, CAPI_GROUP "/v1beta2", "Machine");
	cp->k_cluster = kube_registry_by_kind(h->reg, CAPI_GROUP "/v1beta2", "Cluster");
	cp->k_cm = kube_registry_by_kind(h->reg, "v1", "ConfigMap");
	if (!cp->k_oac || !cp->k_machine || !cp->k_cluster || !h->k_cd || !h->k_aci)
		return 0;
	{
		struct rt_controller_def d = {
			.name = OAC_KIND,
			.reconcile = oac_reconcile,
			.ctx = cp,
			.watches = {
				{ .resource = cp->k_oac->store_key, .map = RT_MAP_SELF },
				{ .resource = cp->k_machine->store_key, .map = RT_MAP_FN, .fn = machine_to_oac },
				{ .resource = h->k_infraenv->store_key, .map = RT_MAP_OWNER, .owner_kind = OAC_KIND },
				{ .resource = h->k_cd->store_key, .map = RT_MAP_FN, .fn = cd_to_oacs },
				{ .resource = cp->k_cluster->store_key, .map = RT_MAP_FN, .fn = cluster_to_oacs },
				{ .resource = h->k_aci->store_key, .map = RT_MAP_FN, .fn = aci_to_oacs },
			},
		};

		r = rt_register(h->rt, &d, &cp->c_oac);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "CAPOAAgent",
			.reconcile = agent_reconcile,
			.ctx = cp,
			.watches = {
				{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_self },
			},
		};

		r = rt_register(h->rt, &d, &cp->c_agent);
	}
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_cd->store_key, IDX_CD_CAPI_CLUSTER, cluster_name_index);
	if (r == 0)
		r = rt_cache_index(h->rt, cp->k_oac->store_key, IDX_OAC_CAPI_CLUSTER, cluster_name_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, IDX_AGENT_IE_LABEL, agent_ie_label_index);
	return r;
}
