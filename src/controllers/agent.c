/* agent.c - the Agent controller and the host pipeline (backend.md §2,
 * kubeapi.md §4.4) that the agent REST API (api/agentapi.c) drives.
 *
 * A host is an Agent (name = host id) in its InfraEnv's namespace.  The
 * host model the state machine works on (assisted/host.h) is assembled from
 * the Agent (state, inventory, validations, approval, installation disk),
 * the spec fields last applied to the host (a private store record per
 * Agent, HOSTSPEC_RESOURCE, since the Agent shows no such fields) and the
 * lease: what the host reported that needs no object (its last check-in,
 * the time its status changed, ntp and resolution results), mirrored into
 * a private HOSTSTATE_RESOURCE record so a restart carries on from it.
 *
 * Every pass over a host (registration, poll, step reply, the disconnection
 * sweep, a change of its Agent) is one pipeline, host_pass(): apply the
 * Agent's spec (kubeapi.md §4.4 step 8), run the state machine, write what
 * the Agent shows.  Only a change is written, so a poll that changes
 * nothing writes nothing. */
#include "controllers/agent.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/conditions.h"
#include "assisted/host.h"
#include "assisted/inventory.h"
#include "assisted/progress.h"
#include "assisted/steps.h"
#include "assisted/validations.h"
#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "http/query.h"
#include "kube/selector.h"
#include "image/ignition.h"


static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* --- leases ----------------------------------------------------------------- */

/* Leases sit in a hash table keyed by (namespace, host id), so a poll finds
 * its host in O(1) among thousands.  Each is also on one of two lists:
 * active, ordered by check-in time (a check-in moves it to the tail), or
 * quiet, once the disconnection sweep has refreshed it.  The sweep then only
 * looks at the head of the active list: O(hosts due), not O(hosts). */

#define LEASE_MIN_BUCKETS 1024
#define SWEEP_MAX_PER_TICK 1000

static size_t lease_hash(const char *ns, const char *id)
{
	uint64_t x = 1469598103934665603ULL; /* FNV-1a */
	const char *p;

	for (p = ns; *p; p++)
		x = (x ^ (unsigned char)*p) * 1099511628211ULL;
	x = (x ^ '/') * 1099511628211ULL;
	for (p = id; *p; p++)
		x = (x ^ (unsigned char)*p) * 1099511628211ULL;
	return (size_t)x;
}

static void list_unlink(struct lease_list *ls, struct host_lease *l)
{
	if (l->prev)
		l->prev->next = l->next;
	else if (ls->head == l)
		ls->head = l->next;
	if (l->next)
		l->next->prev = l->prev;
	else if (ls->tail == l)
		ls->tail = l->prev;
	l->prev = l->next = NULL;
}

static void list_append(struct lease_list *ls, struct host_lease *l)
{
	l->next = NULL;
	l->prev = ls->tail;
	if (ls->tail)
		ls->tail->next = l;
	else
		ls->head = l;
	ls->tail = l;
}

static struct lease_list *lease_list_of(struct hub *h, const struct host_lease *l)
{
	return l->swept ? &h->lease_quiet : &h->lease_active;
}

/* Caller holds h->lock for all of these. */
static struct host_lease *lease_find(struct hub *h, const char *ns, const char *id)
{
	struct host_lease *l;

	if (!h->lease_nbuckets)
		return NULL;
	for (l = h->lease_buckets[lease_hash(ns, id) & (h->lease_nbuckets - 1)]; l; l = l->hnext)
		if (strcmp(l->id, id) == 0 && strcmp(l->ns, ns) == 0)
			return l;
	return NULL;
}

/* Keep at most one lease per bucket on average; a failed grow only makes
 * chains longer. */
static void lease_grow(struct hub *h)
{
	size_t n = h->lease_nbuckets ? h->lease_nbuckets * 2 : LEASE_MIN_BUCKETS, i;
	struct host_lease **nb = calloc(n, sizeof(*nb)), *l, *next;

	if (!nb)
		return;
	for (i = 0; i < h->lease_nbuckets; i++) {
		for (l = h->lease_buckets[i]; l; l = next) {
			size_t b = lease_hash(l->ns, l->id) & (n - 1);

			next = l->hnext;
			l->hnext = nb[b];
			nb[b] = l;
		}
	}
	free(h->lease_buckets);
	h->lease_buckets = nb;
	h->lease_nbuckets = n;
}

/* The host's lease, created on first sight with a check-in of now (a grace
 * period, e.g. from this process's start). */
static struct host_lease *lease_get(struct hub *h, const char *id, const char *ns, const char *ie_id)
{
	struct host_lease *l = lease_find(h, ns, id);
	size_t b;

	if (l)
		return l;
	if (h->lease_count >= h->lease_nbuckets)
		lease_grow(h);
	if (!h->lease_nbuckets)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->facts = json_object();
	if (!l->facts) {
		free(l);
		return NULL;
	}
	snprintf(l->id, sizeof(l->id), "%s", id);
	snprintf(l->ns, sizeof(l->ns), "%s", ns);
	snprintf(l->infra_env_id, sizeof(l->infra_env_id), "%s", ie_id);
	l->checked_in_at = time(NULL);
	b = lease_hash(ns, id) & (h->lease_nbuckets - 1);
	l->hnext = h->lease_buckets[b];
	h->lease_buckets[b] = l;
	h->lease_count++;
	list_append(&h->lease_active, l);
	return l;
}

/* A request from the host: it is connected now. */
static void lease_touch(struct hub *h, struct host_lease *l)
{
	list_unlink(lease_list_of(h, l), l);
	l->checked_in_at = time(NULL);
	l->swept = false;
	list_append(&h->lease_active, l);
}

static void lease_free(struct host_lease *l)
{
	json_decref(l->facts);
	json_decref(l->applied);
	free(l);
}

void hub_leases_release(struct hub *h)
{
	struct host_lease *l, *next;
	size_t i;

	for (i = 0; i < h->lease_nbuckets; i++) {
		for (l = h->lease_buckets[i]; l; l = next) {
			next = l->hnext;
			lease_free(l);
		}
	}
	free(h->lease_buckets);
	h->lease_buckets = NULL;
	h->lease_nbuckets = h->lease_count = 0;
	h->lease_active.head = h->lease_active.tail = NULL;
	h->lease_quiet.head = h->lease_quiet.tail = NULL;
}

/* --- the applied spec ------------------------------------------------------- */

/* The host fields an Agent's spec sets (besides the disk, which its status
 * shows as installation_disk_id), as agent_spec_apply() names them; the
 * spoke cleanup owed after an unbind ("deprovision_cd", "deprovision_node":
 * the cluster left and the host's Node there, deprovision_info upstream);
 * and
 * "bound_cd": the "ns/name" of the ClusterDeployment the host is bound to
 * ("" when unbound), the backend's cluster_id that the Agent's reference
 * only asks for (kubeapi.md §4.4 steps 5-6). */
/* Upstream's AgentStateAnnotation and AgentRoleAnnotation. */
#define ANN_RESTORE_STATE "agent.agent-install.openshift.io/state"
#define ANN_RESTORE_ROLE "agent.agent-install.openshift.io/role"

static const char *const applied_keys[] = { "role", "requested_hostname", "installer_args",
					    "ignition_config_overrides", "ignition_endpoint_token", "bound_cd",
					    "deprovision_cd", "deprovision_node", "node_labels", NULL };

/* Restore by Agent (upstream's restoreHostByAgent): an Agent replayed from a
 * backup has no record here and no status, but carries the state and role
 * annotations every Agent keeps (restore_annotations_sync()).  Its host
 * starts from them: bound to the Agent's ClusterDeployment when it names
 * one, with the saved role.  rec is the empty record being read. */
static void restore_seed(const json_t *agent, json_t *rec)
{
	const json_t *ann = json_object_get(json_object_get(agent, "metadata"), "annotations");
	const char *role = jstr(ann, ANN_RESTORE_ROLE);
	char key[520];

	if (!jstr(ann, ANN_RESTORE_STATE) ||
	    jstr(json_object_get(json_object_get(agent, "status"), "debugInfo"), "state"))
		return;
	hub_agent_cd_key(agent, key, sizeof(key));
	if (*key && strchr(key, '/'))
		json_object_set_new(rec, "bound_cd", json_string(key));
	if (role && *role && strcmp(role, "auto-assign") != 0)
		json_object_set_new(rec, "role", json_string(role));
}

/* The Agent's record of applied fields: an object of applied_keys plus the
 * Agent's uid, so that a record left behind by a deleted Agent of the same
 * name never applies to a new one.  Missing or foreign → {} (or what a
 * restored Agent starts from), with *found false. */
static json_t *applied_read(struct hub *h, const json_t *agent, bool *found)
{
	const json_t *meta = json_object_get(agent, "metadata");
	store_obj *so = NULL;
	json_t *rec = NULL, *out = json_object();
	const char *const *k;

	if (!out)
		return NULL;
	if (store_get(h->store, HOSTSPEC_RESOURCE, jstr(meta, "namespace"), jstr(meta, "name"), &so) == 0) {
		rec = json_loadb(so->json, so->len, 0, NULL);
		store_obj_free(so);
	}
	*found = rec && jstr(rec, "uid") && jstr(meta, "uid") && strcmp(jstr(rec, "uid"), jstr(meta, "uid")) == 0;
	if (*found) {
		for (k = applied_keys; *k; k++)
			if (jstr(rec, *k))
				json_object_set(out, *k, json_object_get(rec, *k));
	} else {
		restore_seed(agent, out);
	}
	json_decref(rec);
	return out;
}

static json_t *applied_of_host(const json_t *host)
{
	json_t *out = json_object();
	const char *const *k;

	for (k = applied_keys; out && *k; k++)
		if (jstr(host, *k))
			json_object_set(out, *k, json_object_get(host, *k));
	return out;
}

/* Keep what host now has applied, when it differs from the lease's copy:
 * the record first, then the copy (so a failed write is tried again on the
 * next pass).  0, or a negative errno with err set (a backend error). */
int hub_applied_save(struct hub *h, const json_t *agent, const json_t *host, ah_err *err)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	json_t *now = applied_of_host(host), *rec;
	struct text_render tr;
	struct host_lease *l;
	bool same;
	int r;

	if (!now)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, name);
	same = l && json_equal(l->applied, now);
	pthread_mutex_unlock(&h->lock);
	if (same) {
		json_decref(now);
		return 0;
	}
	rec = json_deep_copy(now);
	json_object_set_new(rec, "uid", json_string(jstr(meta, "uid") ? jstr(meta, "uid") : ""));
	tr.text = json_dumps(rec, JSON_COMPACT);
	json_decref(rec);
	r = hub_record_put(h->store, HOSTSPEC_RESOURCE, ns, name, HUB_RECORD_ANY, tr.text);
	free(tr.text);
	if (r < 0) {
		json_decref(now);
		return ah_err_set(err, r, 500, "InternalError", "failed to store the applied spec of host %s: %s", name,
				  strerror(-r));
	}
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, name);
	if (l) {
		json_decref(l->applied);
		l->applied = now;
		now = NULL;
	}
	pthread_mutex_unlock(&h->lock);
	json_decref(now);
	return 0;
}

static int check_ignition(const char *text, ah_err *err)
{
	/* Either sign of errno may come back; any non-zero is a refusal. */
	return ignition_validate_override(text, err) ? -EINVAL : 0;
}

/* The value of the ignition token Secret ns/name (agent_spec_ctx): the
 * token is a secret, so no message here carries it. */
static int read_ignition_token(void *opaque, const char *ns, const char *name, char **ret_token, ah_err *err)
{
	struct hub *h = opaque;
	json_t *sec = NULL, *text;
	const char *b64;
	unsigned char *raw = NULL;
	size_t len;
	int r;

	*ret_token = NULL;
	if (!*ns || !*name)
		return -ENOENT;
	r = kube_get(h->api, h->k_secret, ns, name, &sec, err);
	if (r < 0)
		return r;
	b64 = jstr(json_object_get(sec, "data"), AGENT_IGNITION_TOKEN_KEY);
	r = b64 ? util_base64_decode(b64, strlen(b64), &raw, &len) : -ENODATA;
	json_decref(sec);
	if (r == -EINVAL)
		r = -ENODATA;
	if (r < 0)
		return r;
	/* The host model is JSON: the token must be text. */
	text = strlen((char *)raw) == len ? json_stringn((char *)raw, len) : NULL;
	if (!text) {
		free(raw);
		return ah_err_set(err, EINVAL, 500, "InternalError", "key %s does not hold UTF-8 text",
				  AGENT_IGNITION_TOKEN_KEY);
	}
	json_decref(text);
	*ret_token = (char *)raw;
	return 0;
}

/* spec.nodeLabels checked as Kubernetes label keys and values, as upstream's
 * host update does: a bad one fails the whole update with a 400 (SpecSynced
 * InputError) whose message is the field errors of "node_labels", joined as
 * an aggregate error prints them. */
static int node_labels_check(const json_t *labels, ah_err *err)
{
	json_t *causes = json_array(), *c;
	strbuf sb = STRBUF_INIT;
	size_t i, n;

	if (!causes)
		return -ENOMEM;
	if (!labels || json_is_null(labels) || labels_validate(labels, causes) == 0) {
		json_decref(causes);
		return 0;
	}
	n = json_array_size(causes);
	if (n > 1)
		strbuf_adds(&sb, "[");
	json_array_foreach(causes, i, c)
		strbuf_addf(&sb, "%snode_labels: %s", i ? ", " : "", json_string_value(json_object_get(c, "message")));
	if (n > 1)
		strbuf_adds(&sb, "]");
	ah_err_set(err, EINVAL, 400, "BadRequest", "%s", sb.buf ? sb.buf : "node_labels: invalid");
	strbuf_release(&sb);
	json_decref(causes);
	return -EINVAL;
}

/* Keep the checked labels on the host (its "node_labels", a JSON object
 * text as upstream stores them); whether the host changed. */
static bool node_labels_apply(json_t *host, const json_t *labels)
{
	char *text = json_is_object(labels) && json_object_size(labels) ?
			     json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	const char *cur = jstr(host, "node_labels");
	bool changed;

	if (!text) {
		changed = cur != NULL;
		json_object_del(host, "node_labels");
		return changed;
	}
	changed = !cur || strcmp(cur, text) != 0;
	if (changed)
		json_object_set_new(host, "node_labels", json_string(text));
	free(text);
	return changed;
}

/* Apply the Agent's spec to host (kubeapi.md §4.4 step 8).  Returns whether
 * host changed; *ret_failed with err set when a value is bad (then nothing
 * is applied: InputError), the ignition token Secret cannot be read, or the
 * applied values could not be kept (BackendError, tried again on the next
 * pass; a change of the Secret queues the Agent again). */
static bool spec_sync(struct hub *h, const json_t *agent, json_t *host, bool *ret_failed, ah_err *err)
{
	const json_t *meta = json_object_get(agent, "metadata"), *spec = json_object_get(agent, "spec");
	struct agent_spec_ctx ctx = {
		.host_id = jstr(meta, "name"),
		.infra_env_id = jstr(host, "infra_env_id") ? jstr(host, "infra_env_id") : "",
		.validate_ignition = check_ignition,
		.get_ignition_token = read_ignition_token,
		.opaque = h,
	};
	bool changed = false;

	if (node_labels_check(json_object_get(spec, "nodeLabels"), err) < 0) {
		*ret_failed = true;
		return false;
	}
	*ret_failed = agent_spec_apply(host, spec, &ctx, &changed, err) < 0;
	if (!*ret_failed)
		changed |= node_labels_apply(host, json_object_get(spec, "nodeLabels"));
	if (changed && hub_applied_save(h, agent, host, err) < 0)
		*ret_failed = true;
	/* The host model travels on (registration and progress replies, the
	 * cluster side): like upstream's Host it only tells that a token is
	 * set.  The token stays in the applied record and the lease, where
	 * hub_host_ignition_token() finds it. */
	if (json_object_get(host, "ignition_endpoint_token")) {
		json_object_del(host, "ignition_endpoint_token");
		json_object_set_new(host, "ignition_endpoint_token_set", json_true());
	}
	return changed;
}

int hub_host_ignition_token(struct hub *h, const json_t *agent, char **ret)
{
	const json_t *meta = json_object_get(agent, "metadata");
	struct host_lease *l;
	const char *t;

	*ret = NULL;
	if (!jstr(meta, "namespace") || !jstr(meta, "name"))
		return 0;
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, jstr(meta, "namespace"), jstr(meta, "name"));
	t = l ? jstr(l->applied, "ignition_endpoint_token") : NULL;
	if (t && *t && !(*ret = strdup(t))) {
		pthread_mutex_unlock(&h->lock);
		return -ENOMEM;
	}
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* --- host model <-> Agent ---------------------------------------------------- */

bool hub_host_is_bound(const json_t *host)
{
	return jstr(host, "bound_cd") && *jstr(host, "bound_cd");
}

/* Install progress between the host model (snake_case, unix seconds) and
 * the Agent's status.progress (camelCase, RFC 3339 times). */
static void progress_from_agent(json_t *host, const json_t *p)
{
	time_t started = 0, updated = 0;
	json_t *stages;

	if (!json_is_object(p) || !jstr(p, "currentStage") || !*jstr(p, "currentStage"))
		return;
	if (jstr(p, "stageStartTime"))
		util_parse_rfc3339(jstr(p, "stageStartTime"), &started);
	if (jstr(p, "stageUpdateTime"))
		util_parse_rfc3339(jstr(p, "stageUpdateTime"), &updated);
	json_object_set_new(host, "progress",
			    json_pack("{s:s,s:s,s:I,s:I,s:I}", "current_stage", jstr(p, "currentStage"),
				      "progress_info", jstr(p, "progressInfo") ? jstr(p, "progressInfo") : "",
				      "installation_percentage",
				      (json_int_t)json_integer_value(json_object_get(p, "installationPercentage")),
				      "stage_started_at", (json_int_t)started, "stage_updated_at", (json_int_t)updated));
	stages = json_object_get(p, "progressStages");
	if (json_is_array(stages))
		json_object_set(host, "progress_stages", stages);
}

static json_t *progress_to_agent(const json_t *host)
{
	const json_t *p = json_object_get(host, "progress");
	const char *stage = jstr(p, "current_stage");
	char started[32], updated[32];
	json_t *out;

	if (!stage || !*stage)
		return NULL;
	util_time_rfc3339((time_t)json_integer_value(json_object_get(p, "stage_started_at")), started, sizeof(started));
	util_time_rfc3339((time_t)json_integer_value(json_object_get(p, "stage_updated_at")), updated, sizeof(updated));
	out = json_pack("{s:s,s:s,s:I,s:s,s:s}", "currentStage", stage, "progressInfo",
			jstr(p, "progress_info") ? jstr(p, "progress_info") : "", "installationPercentage",
			(json_int_t)json_integer_value(json_object_get(p, "installation_percentage")),
			"stageStartTime", started, "stageUpdateTime", updated);
	if (out && json_is_array(json_object_get(host, "progress_stages")))
		json_object_set(out, "progressStages", json_object_get(host, "progress_stages"));
	return out;
}

/* The host model of backend.md from the Agent and the lease (caller holds
 * h->lock; l->applied is loaded). */
static json_t *host_model(const json_t *agent, const struct host_lease *l)
{
	const json_t *meta = json_object_get(agent, "metadata"), *spec = json_object_get(agent, "spec");
	const json_t *status = json_object_get(agent, "status"), *dbg = json_object_get(status, "debugInfo");
	const char *inv = jstr(json_object_get(meta, "annotations"), ANN_INVENTORY);
	json_t *host = json_deep_copy(l->facts);
	const char *k, *role;
	json_t *v;

	if (!host)
		return NULL;
	json_object_set_new(host, "id", json_string(jstr(meta, "name")));
	json_object_set_new(host, "infra_env_id", json_string(l->infra_env_id));
	json_object_set_new(host, "kind", json_string(jstr(status, "kind") && *jstr(status, "kind") ?
						       jstr(status, "kind") : "Host"));
	if (json_is_true(json_object_get(status, "bootstrap")))
		json_object_set_new(host, "bootstrap", json_true());
	progress_from_agent(host, json_object_get(status, "progress"));
	json_object_set_new(host, "status_updated_at", json_integer(l->status_updated_at));
	if (jstr(dbg, "state")) {
		json_object_set_new(host, "status", json_string(jstr(dbg, "state")));
		json_object_set_new(host, "status_info", json_string(jstr(dbg, "stateInfo") ? jstr(dbg, "stateInfo") : ""));
	} else if (jstr(json_object_get(meta, "annotations"), ANN_RESTORE_STATE)) {
		/* A restored Agent (restore_seed()): its saved state. */
		json_object_set_new(host, "status", json_string(jstr(json_object_get(meta, "annotations"), ANN_RESTORE_STATE)));
		json_object_set_new(host, "status_info", json_string(""));
		if (jstr(json_object_get(meta, "annotations"), ANN_RESTORE_ROLE) &&
		    strcmp(jstr(json_object_get(meta, "annotations"), ANN_RESTORE_ROLE), "auto-assign") != 0)
			json_object_set_new(host, "suggested_role",
					    json_string(jstr(json_object_get(meta, "annotations"), ANN_RESTORE_ROLE)));
	}
	if (inv)
		json_object_set_new(host, "inventory", json_string(inv));
	/* Approval always syncs (kubeapi.md §4.4 step 8). */
	json_object_set_new(host, "approved", json_boolean(json_is_true(json_object_get(spec, "approved"))));
	json_object_set_new(host, "role", json_string("auto-assign"));
	json_object_foreach(l->applied, k, v)
		json_object_set(host, k, v);
	/* status.role shows the suggestion only while the role is auto-assign. */
	role = jstr(host, "role");
	if (jstr(status, "role") && role && strcmp(role, "auto-assign") == 0)
		json_object_set_new(host, "suggested_role", json_string(jstr(status, "role")));
	if (jstr(status, "installation_disk_id"))
		json_object_set_new(host, "installation_disk_id", json_string(jstr(status, "installation_disk_id")));
	/* A record from before bindings were kept: the host is bound where its
	 * Agent points unless its state says it is in the pool. */
	if (!jstr(host, "bound_cd")) {
		char key[520];

		hub_agent_cd_key(agent, key, sizeof(key));
		json_object_set_new(host, "bound_cd",
				    json_string(jstr(dbg, "state") && host_status_unbound(jstr(dbg, "state")) ? "" : key));
	}
	json_object_set_new(host, "cluster_id", json_string(*jstr(host, "bound_cd") ? "bound" : ""));
	json_object_set_new(host, "checked_in_at", json_integer(l->checked_in_at));
	if (json_object_get(status, "validationsInfo")) {
		char *vi = json_dumps(json_object_get(status, "validationsInfo"), JSON_COMPACT);

		json_object_set_new(host, "validations_info", json_string(vi ? vi : "{}"));
		free(vi);
	}
	json_object_foreach(l->facts, k, v)
		json_object_set(host, k, v);
	return host;
}

/* The time of the host's last status change, as this process saw it: the
 * age the state machine's timeouts count (a restart starts them afresh).
 * Caller holds h->lock. */
static void lease_note_status(struct host_lease *l, const json_t *agent)
{
	const char *st = jstr(json_object_get(json_object_get(agent, "status"), "debugInfo"), "state");

	if (!st)
		st = "";
	if (!l->status_updated_at || strcmp(l->last_status, st) != 0) {
		snprintf(l->last_status, sizeof(l->last_status), "%s", st);
		l->status_updated_at = time(NULL);
	}
}

/* --- the host's state record (HOSTSTATE_RESOURCE) -------------------------- */

/* The facts a state record keeps: the step results later passes decide on
 * (the host's clock, "timestamp", changes every poll and is left out). */
static const char *const state_fact_keys[] = { "ntp_sources", "domain_resolutions", "connectivity",
					       "disks_info", "images_status", "discovery_agent_version",
					       "api_vip_connectivity", NULL };

/* The record of the Agent's host, when it is the Agent's (same uid); else NULL. */
static json_t *state_read(struct hub *h, const json_t *agent, int64_t *ret_rev)
{
	const json_t *meta = json_object_get(agent, "metadata");
	store_obj *so = NULL;
	json_t *rec = NULL;

	if (!jstr(meta, "namespace") || !jstr(meta, "name") ||
	    store_get(h->store, HOSTSTATE_RESOURCE, jstr(meta, "namespace"), jstr(meta, "name"), &so) < 0)
		return NULL;
	rec = json_loadb(so->json, so->len, 0, NULL);
	if (ret_rev)
		*ret_rev = so->rev;
	store_obj_free(so);
	if (!rec || !jstr(rec, "uid") || !jstr(meta, "uid") || strcmp(jstr(rec, "uid"), jstr(meta, "uid")) != 0) {
		json_decref(rec);
		return NULL;
	}
	return rec;
}

/* Take over what the record says (caller holds h->lock): the check-in time
 * (no earlier than this process's start: the host could not call while we
 * were down), the time of the status change if the Agent still shows that
 * status, and the facts. */
static void state_apply(struct hub *h, struct host_lease *l, const json_t *agent, const json_t *rec)
{
	const char *st = jstr(json_object_get(json_object_get(agent, "status"), "debugInfo"), "state");
	const json_t *facts = json_object_get(rec, "facts");
	int64_t cin = json_integer_value(json_object_get(rec, "checkedInAt"));
	int64_t sua = json_integer_value(json_object_get(rec, "statusUpdatedAt"));
	const char *k;
	json_t *v;

	if (cin > 0)
		l->checked_in_at = cin > h->started_at ? cin : h->started_at;
	l->saved_checked_in_at = cin;
	if (st && jstr(rec, "status") && strcmp(jstr(rec, "status"), st) == 0 && sua > 0 &&
	    strlen(st) < sizeof(l->last_status)) {
		snprintf(l->last_status, sizeof(l->last_status), "%s", st);
		l->status_updated_at = sua;
		l->saved_status_updated_at = sua;
	}
	json_object_foreach((json_t *)facts, k, v)
		if (!json_object_get(l->facts, k))
			json_object_set(l->facts, k, v);
}

/* The check-in time is written only when it moved by more than this: a
 * quarter of the disconnection timeout (at least a second), so a host that
 * polls every few seconds costs one small write a few times per timeout. */
static int64_t checkin_step_s(const struct hub *h)
{
	int64_t s = h->cfg.host_disconnect_timeout_s / 4;

	/* With replicas the leader reads this record to learn of check-ins
	 * that reached another replica (checked_in_elsewhere()): keep it
	 * fresher, so a host is never found disconnected more than 15 s
	 * early. */
	if (h->cfg.leader_elect && s > 15)
		s = 15;

	return s > 0 ? s : 1;
}

/* Write the host's state record if what it holds moved (a status change,
 * the check-in time by more than checkin_step_s()); the facts ride along
 * with those writes rather than causing their own, since a host reports
 * them again on every step cycle and a step reply must stay one write.  One write
 * at a time per host; a failed write is tried again on the next pass.
 * Best effort: the host's calls never fail on it. */
static void state_persist(struct hub *h, const char *ns, const char *id)
{
	struct host_lease *l;
	struct text_render tr = { NULL };
	int64_t cin = 0, sua = 0;
	json_t *rec = NULL;
	uint64_t gen = 0;
	int r;

	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, id);
	if (l && l->state_loaded && !l->state_writing && l->uid[0] &&
	    (l->status_updated_at != l->saved_status_updated_at ||
	     l->checked_in_at - l->saved_checked_in_at >= checkin_step_s(h) ||
	     (h->cfg.leader_elect && l->facts_gen != l->saved_facts_gen))) {
		json_t *facts = json_object();
		const char *const *k;

		for (k = state_fact_keys; facts && *k; k++)
			if (json_object_get(l->facts, *k))
				json_object_set(facts, *k, json_object_get(l->facts, *k));
		rec = json_pack("{s:s,s:I,s:s,s:I,s:o*}", "uid", l->uid, "checkedInAt", (json_int_t)l->checked_in_at,
				"status", l->last_status, "statusUpdatedAt", (json_int_t)l->status_updated_at, "facts",
				facts);
		cin = l->checked_in_at;
		sua = l->status_updated_at;
		gen = l->facts_gen;
		l->state_writing = rec != NULL;
	}
	pthread_mutex_unlock(&h->lock);
	if (!rec)
		return;
	tr.text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(rec);
	r = hub_record_put(h->store, HOSTSTATE_RESOURCE, ns, id, HUB_RECORD_ANY, tr.text);
	free(tr.text);
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, id);
	if (l) {
		l->state_writing = false;
		if (r == 0) {
			l->saved_checked_in_at = cin;
			l->saved_status_updated_at = sua;
			l->saved_facts_gen = gen;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (r < 0)
		log_warn("host %s/%s: keeping its state: %s", ns, id, strerror(-r));
}


/* The host model of an Agent from its lease (created when missing, its
 * applied spec read from the store on first use).  NULL on allocation
 * failure. */
json_t *hub_host_of(struct hub *h, const json_t *agent, const char *ie_id, enum lease_use use)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ns = jstr(meta, "namespace"), *id = jstr(meta, "name");
	json_t *rec = NULL, *host = NULL, *state = NULL;
	struct host_lease *l;
	bool need, need_state, found = false;
	int64_t state_rev = 0;

	if (!ns || !id)
		return NULL;

	pthread_mutex_lock(&h->lock);
	l = lease_get(h, id, ns, ie_id);
	/* Replicas: another replica may have moved either record since. */
	need = l && (!l->applied || h->cfg.leader_elect);
	need_state = l && (!l->state_loaded || h->cfg.leader_elect);
	pthread_mutex_unlock(&h->lock);
	if (need && !(rec = applied_read(h, agent, &found)))
		return NULL;
	if (need_state)
		state = state_read(h, agent, &state_rev);
	pthread_mutex_lock(&h->lock);
	l = lease_get(h, id, ns, ie_id);
	/* Replicas take a stored record over their own copy; with none
	 * stored yet (nothing moved since what this replica started the host
	 * from, e.g. a restored Agent's saved role), the copy stays. */
	if (l && rec && (!l->applied || (h->cfg.leader_elect && found))) {
		json_decref(l->applied);
		l->applied = rec;
		rec = NULL;
	}
	if (l && need_state && !l->state_loaded) {
		snprintf(l->uid, sizeof(l->uid), "%s", jstr(meta, "uid") ? jstr(meta, "uid") : "");
		if (state)
			state_apply(h, l, agent, state);
		l->state_loaded = true;
		l->state_rev = state_rev;
	} else if (l && state && state_rev != l->state_rev) {
		/* A record newer than what this replica last took: its facts
		 * win unless this replica has facts of its own not yet saved
		 * (then it is the one the host talks to, and they are newer). */
		const json_t *facts = json_object_get(state, "facts");
		const char *k;
		json_t *v;

		l->state_rev = state_rev;
		if (l->facts_gen == l->saved_facts_gen && l->facts) {
			bool moved = false;

			json_object_foreach((json_t *)facts, k, v)
				if (!json_equal(json_object_get(l->facts, k), v)) {
					json_object_set(l->facts, k, v);
					moved = true;
				}
			if (moved)
				l->saved_facts_gen = ++l->facts_gen;
		}
	}
	if (l && l->applied) {
		if (use != LEASE_KEEP)
			lease_touch(h, l);
		if (use == LEASE_NEW_BOOT) {
			json_decref(l->facts);
			l->facts = json_object();
			l->fast_rev = 0;
			l->facts_gen++;
		}
		lease_note_status(l, agent);
		host = l->facts ? host_model(agent, l) : NULL;
	}
	pthread_mutex_unlock(&h->lock);
	json_decref(rec);
	json_decref(state);
	state_persist(h, ns, id);
	return host;
}

static json_t *parse_maybe_text(const json_t *v)
{
	if (json_is_string(v))
		return json_loads(json_string_value(v), 0, NULL);
	return json_incref((json_t *)v);
}

/* status.ntpSources from the host's ntp_sources; NULL when there are none. */
static json_t *ntp_sources_status(const json_t *host)
{
	json_t *ntp = parse_maybe_text(json_object_get(host, "ntp_sources")), *out = json_array(), *s;
	size_t i;

	json_array_foreach(ntp, i, s)
		json_array_append_new(out, json_pack("{s:s,s:s}", "sourceName",
						     jstr(s, "source_name") ? jstr(s, "source_name") : "",
						     "sourceState", jstr(s, "source_state") ? jstr(s, "source_state") : ""));
	json_decref(ntp);
	if (json_array_size(out))
		return out;
	json_decref(out);
	return NULL;
}

/* The Agent status the host model implies, on top of the old one. */
static json_t *agent_status(const json_t *agent, const json_t *host, const json_t *inv, const json_t *vi,
			    const ah_err *spec_err)
{
	const json_t *old = json_object_get(agent, "status");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
	const char *role = jstr(host, "role"), *suggested = jstr(host, "suggested_role");
	json_t *dbg, *conds, *ntp;
	char now[32];

	dbg = json_object_get(st, "debugInfo");
	if (!json_is_object(dbg)) {
		dbg = json_object();
		json_object_set_new(st, "debugInfo", dbg);
	}
	json_object_set_new(dbg, "state", json_string(jstr(host, "status") ? jstr(host, "status") : ""));
	json_object_set_new(dbg, "stateInfo", json_string(jstr(host, "status_info") ? jstr(host, "status_info") : ""));
	if (json_is_object(inv))
		json_object_set_new(st, "inventory", inventory_to_agent_status(inv));
	if (json_is_object(vi))
		json_object_set(st, "validationsInfo", (json_t *)vi);
	/* The role, or the suggested role while the role is auto-assign. */
	if ((!role || strcmp(role, "auto-assign") == 0) && suggested)
		role = suggested;
	if (role)
		json_object_set_new(st, "role", json_string(role));
	if (jstr(host, "installation_disk_id") && *jstr(host, "installation_disk_id"))
		json_object_set_new(st, "installation_disk_id", json_string(jstr(host, "installation_disk_id")));
	else
		json_object_del(st, "installation_disk_id");
	json_object_set_new(st, "kind", json_string(jstr(host, "kind") && *jstr(host, "kind") ? jstr(host, "kind") : "Host"));
	if (json_is_true(json_object_get(host, "bootstrap")))
		json_object_set_new(st, "bootstrap", json_true());
	else
		json_object_del(st, "bootstrap");
	{
		json_t *prog = progress_to_agent(host);

		if (prog)
			json_object_set_new(st, "progress", prog);
		else
			json_object_del(st, "progress");
	}
	if ((ntp = ntp_sources_status(host)))
		json_object_set_new(st, "ntpSources", ntp);
	conds = agent_conditions(jstr(host, "status"), jstr(host, "status_info"), vi,
				 json_is_true(json_object_get(host, "approved")), spec_err);
	if (jstr(host, "spoke_cleanup_error"))
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:n,s:n}", "type", "Cleanup", "status",
						       "False", "reason", "CleanupFailed", "message",
						       jstr(host, "spoke_cleanup_error"), "lastHeartbeatTime",
						       "lastTransitionTime"));
	util_now_rfc3339(now, sizeof(now));
	conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	return st;
}

/* The inventory labels and the raw inventory annotation (upstream keeps it
 * to rebuild a lost host), when they differ. */
static int sync_labels(struct hub *h, const json_t *agent, const json_t *inv)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	json_t *labels = inventory_labels(inv), *ann = json_object(), *patch, *ret = NULL;
	const json_t *ol = json_object_get(meta, "labels"), *oa = json_object_get(meta, "annotations");
	const char *k;
	json_t *v;
	bool differs = false;
	char *raw = json_dumps(inv, JSON_COMPACT), key[520], *slash;
	int r = 0;

	/* How an ACI finds its Agents (kubeapi.md §3): the namespace of the
	 * ClusterDeployment reference, "" when there is none. */
	hub_agent_cd_key(agent, key, sizeof(key));
	if ((slash = strchr(key, '/')))
		*slash = '\0';
	if (labels)
		json_object_set_new(labels, "agent-install.openshift.io/clusterdeployment-namespace", json_string(key));
	json_object_foreach(labels, k, v)
		if (!json_equal(json_object_get(ol, k), v))
			differs = true;
	if (raw && (!jstr(oa, ANN_INVENTORY) || strcmp(jstr(oa, ANN_INVENTORY), raw) != 0)) {
		json_object_set_new(ann, ANN_INVENTORY, json_string(raw));
		json_object_set_new(ann, "inventory.agent-install.openshift.io/version", json_string("0.1"));
		differs = true;
	}
	free(raw);
	if (differs) {
		ah_err err;

		patch = json_pack("{s:{s:O,s:O}}", "metadata", "labels", labels, "annotations", ann);
		r = kube_patch(h->api, h->k_agent, ns, name, "application/merge-patch+json", patch, NULL, &ret, &err);
		if (r < 0)
			log_warn("agent %s/%s: labels: %s", ns, name, err.message);
		json_decref(patch);
		json_decref(ret);
	}
	json_decref(labels);
	json_decref(ann);
	return r;
}

/* Write what the Agent shows of the host, if it differs. */
static int sync_agent_cas(struct hub *h, const json_t *agent, const json_t *host, const ah_err *spec_err,
			  bool cas);


/* status.debugInfo.eventsURL: the host's events, signed with its InfraEnv's
 * token (upstream: host_id and the infra-env key).  Set once, as upstream
 * does: the URL an Agent shows does not change under a user.  Tried again
 * on the next pass when the token cannot be read. */
static void status_events_url(struct hub *h, const json_t *agent, const json_t *host, json_t *st)
{
	const char *ie_id = jstr(host, "infra_env_id"), *name = jstr(json_object_get(agent, "metadata"), "name");
	json_t *ie, *dbg = json_object_get(st, "debugInfo");
	char *url = NULL;
	ah_err err;

	if (!ie_id || !*ie_id || !name || !json_is_object(dbg) || jstr(dbg, "eventsURL"))
		return;
	ie = json_pack("{s:{s:s}}", "metadata", "uid", ie_id);
	if (ie && hub_host_events_url(h, ie, name, &url, &err) == 0)
		json_object_set_new(dbg, "eventsURL", json_string(url));
	json_decref(ie);
	free(url);
}

/* The InfraEnv label and owner of an Agent, from the InfraEnv its host is
 * in (upstream's agent controller sets both on every pass): a label a user
 * removed or changed is put back.  Nothing is read when both already name
 * that InfraEnv. */
static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void infraenv_label_sync(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *meta = json_object_get(agent, "metadata"), *iemeta;
	json_t *ref;
	const char *ie_id = jstr(host, "infra_env_id"), *label = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	json_t *ie = NULL, *refs, *patch, *ret = NULL;
	bool owned = false;
	size_t i;
	ah_err err;

	if (!ie_id || !*ie_id || jstr(meta, "deletionTimestamp"))
		return;
	json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
		if (streq(jstr(ref, "kind"), "InfraEnv") && streq(jstr(ref, "uid"), ie_id)) {
			owned = true;
			if (label && streq(jstr(ref, "name"), label))
				return;
		}
	if (hub_find_infraenv(h, ie_id, &ie) < 0)
		return;
	iemeta = json_object_get(ie, "metadata");
	if (!jstr(iemeta, "name") || !streq(jstr(iemeta, "namespace"), jstr(meta, "namespace"))) {
		json_decref(ie);
		return;
	}
	patch = json_pack("{s:{s:{s:s}}}", "metadata", "labels", LABEL_INFRAENV, jstr(iemeta, "name"));
	if (!owned) {
		refs = json_array();
		json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
			if (!streq(jstr(ref, "kind"), "InfraEnv"))
				json_array_append(refs, ref);
		json_array_append_new(refs, json_pack("{s:s,s:s,s:s,s:s}", "apiVersion",
						      "agent-install.openshift.io/v1beta1", "kind", "InfraEnv",
						      "name", jstr(iemeta, "name"), "uid", ie_id));
		json_object_set_new(json_object_get(patch, "metadata"), "ownerReferences", refs);
	}
	if (kube_patch(h->api, h->k_agent, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json",
		       patch, NULL, &ret, &err) < 0)
		log_warn("agent %s/%s: infraenv label: %s", jstr(meta, "namespace"), jstr(meta, "name"), err.message);
	json_decref(ret);
	json_decref(patch);
	json_decref(ie);
}

/* The state and role annotations upstream's agent controller keeps on every
 * Agent, so that a backup of the Agent can bring its host back
 * (restore_seed()). */
static void restore_annotations_sync(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *meta = json_object_get(agent, "metadata"), *ann = json_object_get(meta, "annotations");
	const char *st = jstr(host, "status"), *role = jstr(host, "role") && *jstr(host, "role") ? jstr(host, "role")
												: "auto-assign";
	json_t *patch, *ret = NULL;
	ah_err err;

	if (!st || !*st || jstr(meta, "deletionTimestamp") ||
	    (streq(jstr(ann, ANN_RESTORE_STATE), st) && streq(jstr(ann, ANN_RESTORE_ROLE), role)))
		return;
	patch = json_pack("{s:{s:{s:s,s:s}}}", "metadata", "annotations", ANN_RESTORE_STATE, st, ANN_RESTORE_ROLE, role);
	if (kube_patch(h->api, h->k_agent, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json",
		       patch, NULL, &ret, &err) < 0 && err.status != 404)
		log_warn("agent %s/%s: state annotations: %s", jstr(meta, "namespace"), jstr(meta, "name"), err.message);
	json_decref(ret);
	json_decref(patch);
}

/* Write what the Agent shows of the host, if it differs; with cas, only if
 * the Agent is still the one the host was read from (a writer that is not
 * the host's own request must never undo what the request just wrote). */
static int sync_agent_cas(struct hub *h, const json_t *agent, const json_t *host, const ah_err *spec_err,
			  bool cas)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	json_t *inv = parse_maybe_text(json_object_get(host, "inventory"));
	json_t *vi = parse_maybe_text(json_object_get(host, "validations_info"));
	json_t *st = agent_status(agent, host, inv, vi, spec_err);
	int r = 0;

	status_events_url(h, agent, host, st);
	if (!json_equal(st, json_object_get(agent, "status"))) {
		struct kube_opts o = { .status = true };
		json_t *patch = json_pack("{s:O}", "status", st), *ret = NULL;
		const char *k;
		json_t *v;
		ah_err err;

		/* A merge patch keeps what it does not name: a field the host
		 * no longer has (progress, bootstrap, disk after an unbind) is
		 * removed by naming it null. */
		json_object_foreach(json_object_get(agent, "status"), k, v)
			if (!json_object_get(st, k))
				json_object_set_new(json_object_get(patch, "status"), k, json_null());

		if (cas)
			json_object_set_new(patch, "metadata",
					    json_pack("{s:s}", "resourceVersion",
						      jstr(meta, "resourceVersion") ? jstr(meta, "resourceVersion") : ""));
		r = kube_patch(h->api, h->k_agent, ns, name, "application/merge-patch+json", patch, &o, &ret, &err);
		if (r < 0 && cas && (r == -ESTALE || err.status == 409))
			r = -ESTALE;
		else if (r < 0)
			log_warn("agent %s/%s: status update: %s", ns, name, err.message);
		if (r == 0)
			hub_host_events(h, agent, host);
		json_decref(patch);
		json_decref(ret);
	}
	if (json_is_object(inv))
		sync_labels(h, agent, inv);
	infraenv_label_sync(h, agent, host);
	restore_annotations_sync(h, agent, host);
	json_decref(inv);
	json_decref(vi);
	json_decref(st);
	return r;
}

/* Run the state machine on the host model. */

void hub_host_cluster_load(struct hub *h, const json_t *agent, json_t *host, struct host_cluster *hc)
{
	char ns[256], name[256];

	(void)agent;
	hc->cluster = hc->hosts = NULL;
	if (!hub_host_is_bound(host) || sscanf(jstr(host, "bound_cd"), "%255[^/]/%255s", ns, name) != 2 ||
	    hub_cluster_context(h, ns, name, &hc->cluster, &hc->hosts) < 0)
		return;
	/* The real cluster id (the model's "bound" placeholder only says bound). */
	if (host && jstr(hc->cluster, "id"))
		json_object_set_new(host, "cluster_id", json_string(jstr(hc->cluster, "id")));
}

void hub_host_cluster_release(struct host_cluster *hc)
{
	json_decref(hc->cluster);
	json_decref(hc->hosts);
	hc->cluster = hc->hosts = NULL;
}

static void refresh_host(struct hub *h, json_t *host, const struct host_cluster *hc)
{
	struct host_refresh_ctx ctx = { 0 };
	struct host_refresh_result res = { 0 };

	ctx.now = time(NULL);
	ctx.disconnect_timeout_s = h->cfg.host_disconnect_timeout_s;
	ctx.cluster = hc ? hc->cluster : NULL;
	ctx.cluster_hosts = hc ? hc->hosts : NULL;
	if (host_refresh(host, &ctx, &res) == 0) {
		if (res.validations_changed)
			am_validations_changed(true, json_object_get(host, "validations_info"), res.validations_info);
		host_refresh_apply(host, &res, ctx.now);
	}
	host_refresh_result_release(&res);
}

/* One pass over a host: apply the Agent's spec, run the state machine when
 * asked (or when the spec changed the host, so validations follow at once),
 * and write what the Agent shows if it differs. */
/* The pass writes only over the Agent it read (compare-and-swap): the
 * cluster controller moves hosts too, and a pass must never undo what it
 * wrote in between.  -ESTALE then; the next poll recomputes. */
/* The installation disk is chosen when the inventory arrives; a host whose
 * Agent shows an inventory but no disk (that write was lost to a concurrent
 * one, or the Agent was restored) gets it chosen now, or its preparation
 * would wait forever for a disk speed check of no disk. */
static bool ensure_installation_disk(json_t *host)
{
	const char *cur = jstr(host, "installation_disk_id");
	json_t *inv;
	bool changed;

	if (cur && *cur)
		return false;
	inv = parse_maybe_text(json_object_get(host, "inventory"));
	if (!json_is_object(inv)) {
		json_decref(inv);
		return false;
	}
	host_choose_installation_disk(host, inv);
	changed = jstr(host, "installation_disk_id") && *jstr(host, "installation_disk_id");
	json_decref(inv);
	return changed;
}

/* --- binding (kubeapi.md §4.4 steps 5-6, §5) ------------------------------ */

/* "" and amd64 are x86_64, aarch64 is arm64 (the names an InfraEnv and a
 * release image use). */
static const char *norm_arch(const char *a)
{
	if (!a || !*a || !strcmp(a, "amd64"))
		return "x86_64";
	if (!strcmp(a, "aarch64"))
		return "arm64";
	return a;
}

/* Unbind the host from its cluster: unbinding from the discovery states,
 * unbinding-pending-user-action once the installation started. */
static int unbind_host(struct hub *h, const json_t *agent, json_t *host, ah_err *err)
{
	const char *st = jstr(host, "status");
	json_t *ie = NULL;
	int r;

	/* Step 5: an installing host of day 1 cannot just leave. */
	if (host_status_inst6(st) && strcmp(jstr(host, "kind") ? jstr(host, "kind") : "", "AddToExistingClusterHost") != 0) {
		char key[520];

		hub_agent_cd_key(agent, key, sizeof(key));
		if (!*key)
			return ah_err_set(err, EINVAL, 400, "BadRequest",
					  "cancelling non-day-2 host [%s] in the middle of installation is not allowed",
					  jstr(host, "id"));
	}
	/* A host of an InfraEnv bound to a cluster stays with it. */
	if (jstr(host, "infra_env_id") && hub_find_infraenv(h, jstr(host, "infra_env_id"), &ie) == 0) {
		const json_t *cref = json_object_get(json_object_get(ie, "spec"), "clusterRef");

		if (jstr(cref, "name") && *jstr(cref, "name")) {
			ah_err_set(err, EBUSY, 409, "Conflict", "Cannot unbind Host %s. InfraEnv %s is bound to Cluster %s",
				   jstr(host, "id"), jstr(host, "infra_env_id"), jstr(cref, "name"));
			json_decref(ie);
			return -EBUSY;
		}
	}
	json_decref(ie);
	{
		/* The Node the host was in the cluster, cleaned up once the host
		 * is back in the discovery image (§5: every unbind records it). */
		json_t *inv = parse_maybe_text(json_object_get(host, "inventory"));
		const char *node = jstr(host, "requested_hostname") && *jstr(host, "requested_hostname")
					   ? jstr(host, "requested_hostname") : jstr(inv, "hostname");

		json_object_set_new(host, "deprovision_node", json_string(node ? node : ""));
		json_object_set_new(host, "deprovision_cd", json_string(jstr(host, "bound_cd")));
		json_decref(inv);
	}
	r = host_unbind(host, time(NULL), err);
	if (r < 0) {
		json_object_del(host, "deprovision_node");
		json_object_del(host, "deprovision_cd");
		return r;
	}
	json_object_set_new(host, "bound_cd", json_string(""));
	json_object_set_new(host, "cluster_id", json_string(""));
	return 1;
}

/* Bind an unbound host to the cluster of the ClusterDeployment ns/name. */
static int bind_host(struct hub *h, json_t *host, const char *key, ah_err *err)
{
	char ns[256], name[256];
	json_t *cd = NULL, *cluster = NULL, *ie = NULL;
	const char *cst, *carch, *iarch = NULL;
	ah_err e2;
	int r;

	if (sscanf(key, "%255[^/]/%255s", ns, name) != 2)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "spec.clusterDeploymentName: invalid reference %s", key);
	if (kube_get(h->api, h->k_cd, ns, name, &cd, &e2) < 0)
		return ah_err_set(err, ENOENT, 500, "BackendError",
				  "failed to get clusterDeployment with name %s in namespace %s: "
				  "clusterdeployments.hive.openshift.io \"%s\" not found",
				  name, ns, name);
	json_decref(cd);
	/* Only a host ready to be bound moves; others wait for known-unbound
	 * (and the cluster is not loaded on every one of their polls). */
	if (strcmp(jstr(host, "status"), "known-unbound") != 0)
		return 0;
	if (hub_cluster_context(h, ns, name, &cluster, NULL) < 0)
		return ah_err_set(err, ENOENT, 500, "BackendError", "record not found");
	cst = jstr(cluster, "status") ? jstr(cluster, "status") : "";
	if (strcmp(cst, "insufficient") && strcmp(cst, "ready") && strcmp(cst, "pending-for-input") &&
	    strcmp(cst, "adding-hosts")) {
		ah_err_set(err, EBUSY, 409, "Conflict",
			   "Cluster %s is in %s state, host can register only in one of "
			   "[insufficient ready pending-for-input adding-hosts]",
			   jstr(cluster, "id") ? jstr(cluster, "id") : name, cst);
		json_decref(cluster);
		return -EBUSY;
	}
	carch = jstr(cluster, "cpu_architecture");
	if (jstr(host, "infra_env_id") && hub_find_infraenv(h, jstr(host, "infra_env_id"), &ie) == 0)
		iarch = jstr(json_object_get(ie, "spec"), "cpuArchitecture");
	if (carch && *carch && strcmp(carch, "multi") != 0 && strcmp(norm_arch(iarch), norm_arch(carch)) != 0) {
		ah_err_set(err, EINVAL, 400, "BadRequest", "InfraEnv's CPU architecture (%s) doesn't match the cluster (%s)",
			   norm_arch(iarch), norm_arch(carch));
		json_decref(ie);
		json_decref(cluster);
		return -EINVAL;
	}
	json_decref(ie);
	r = host_bind(host, jstr(cluster, "id") ? jstr(cluster, "id") : "bound", time(NULL), err);
	json_decref(cluster);
	if (r < 0)
		return r;
	json_object_set_new(host, "bound_cd", json_string(key));
	return 1;
}

static bool unbound_status(const char *st)
{
	size_t n = strlen(st);

	return n > 8 && strcmp(st + n - 8, "-unbound") == 0;
}

/* The Agent's ClusterDeployment reference against the host's binding:
 * cleared → unbind; set on an unbound host → bind (once it is
 * known-unbound); moved → unbind now, bind once back in the pool.  1 when
 * the host changed (the binding is kept at once), 0, or negative with err
 * set: the SpecSynced error (InputError for 4xx, BackendError otherwise). */
static int binding_sync(struct hub *h, const json_t *agent, json_t *host, ah_err *err)
{
	const char *have = jstr(host, "bound_cd") ? jstr(host, "bound_cd") : "";
	const char *st = jstr(host, "status");
	char want[520];
	int r = 0;

	if (!st || !*st)
		return 0;
	hub_agent_cd_key(agent, want, sizeof(want));
	if (*have && strcmp(have, want) != 0)
		r = unbind_host(h, agent, host, err);
	else if (*want && (!*have || unbound_status(st)))
		/* A host in the pool is bound to no cluster, whatever an
		 * applied record still says (a status write that raced with
		 * the bind's left it there): it binds (again). */
		r = bind_host(h, host, want, err);
	/* Kept on every pass (a no-op when unchanged), so that a binding
	 * only inferred from an older record is pinned before the reference
	 * changes. */
	if (r >= 0 && hub_applied_save(h, agent, host, err) < 0)
		return -EIO;
	return r;
}

#define ANN_SKIP_SPOKE_CLEANUP "agent.agent-install.openshift.io/skip-spoke-cleanup"

/* The spoke cleanup owed by an unbind (kubeapi.md §4.4 step 3), once the
 * host is back in the discovery image: its Node in the cluster it left is
 * deleted through that cluster's admin kubeconfig.  The skip annotation, or
 * no kubeconfig Secret, just clears it.  A failure shows in the Cleanup
 * condition ("spoke_cleanup_error") and is tried again in 10 s; setting the
 * annotation aborts it.  The SpokeCleanup controller (spoke.c) does the
 * deletion, off this pass.  1 when the owed cleanup was settled. */
static int spoke_cleanup(struct hub *h, const json_t *agent, json_t *host)
{
	static const char *const waiting[] = { "unbinding", "unbinding-pending-user-action", "reclaiming",
					       "reclaiming-rebooting", "binding", NULL };
	const json_t *meta = json_object_get(agent, "metadata");
	const char *cdkey = jstr(host, "deprovision_cd"), *st = jstr(host, "status");

	if (!cdkey || !*cdkey || !st)
		return 0;
	for (const char *const *w = waiting; *w; w++)
		if (strcmp(st, *w) == 0)
			return 0;
	/* The deletion itself is the SpokeCleanup controller's (spoke.c):
	 * this pass asks for it and takes its outcome. */
	if (!json_object_get(json_object_get(meta, "annotations"), ANN_SKIP_SPOKE_CLEANUP)) {
		char msg[AH_ERR_MSG_MAX];
		int o = hub_spoke_cleanup_outcome(h, agent, cdkey, jstr(host, "deprovision_node"), msg, sizeof(msg));

		if (o < 0)
			json_object_set_new(host, "spoke_cleanup_error", json_string(msg));
		if (o <= 0)
			return 0;
	}
	json_object_set_new(host, "deprovision_cd", json_string(""));
	json_object_set_new(host, "deprovision_node", json_string(""));
	json_object_del(host, "spoke_cleanup_error");
	return 1;
}

int hub_host_pass_in(struct hub *h, const json_t *agent, json_t *host, bool refresh,
			const struct host_cluster *hc)
{
	ah_err err, berr;
	bool failed = false;
	int b = binding_sync(h, agent, host, &berr);
	bool changed;

	/* Before the spec sync, which hides the applied token from the model:
	 * a save must keep the whole record. */
	if (spoke_cleanup(h, agent, host) > 0 && hub_applied_save(h, agent, host, &err) < 0)
		log_warn("host %s: %s", jstr(host, "id"), err.message);
	changed = spec_sync(h, agent, host, &failed, &err);

	if (b < 0 && !failed) {
		failed = true;
		err = berr;
	}

	changed |= ensure_installation_disk(host);

	/* A host that just bound or unbound is no longer the cluster's hc
	 * describes: its next pass runs the state machine. */
	if ((refresh || changed) && b <= 0)
		refresh_host(h, host, hc);
	return sync_agent_cas(h, agent, host, failed ? &err : NULL, true);
}

static void host_pass(struct hub *h, const json_t *agent, json_t *host, bool refresh)
{
	struct host_cluster hc;

	hub_host_cluster_load(h, agent, host, &hc);
	hub_host_pass_in(h, agent, host, refresh, &hc);
	hub_host_cluster_release(&hc);
}


/* Keep the step results the host model needs on later passes in the lease. */
void hub_save_facts(struct hub *h, const json_t *ie, const char *host_id, const json_t *host)
{
	static const char *transient[] = { "ntp_sources", "domain_resolutions", "connectivity",
					   "disks_info", "images_status", "discovery_agent_version", "timestamp",
					   "api_vip_connectivity", "media_status", NULL };
	const json_t *meta = json_object_get(ie, "metadata");
	struct host_lease *l;
	int i;

	pthread_mutex_lock(&h->lock);
	l = lease_find(h, jstr(meta, "namespace"), host_id);
	for (i = 0; l && transient[i]; i++)
		if (json_object_get(host, transient[i]) &&
		    !json_equal(json_object_get(l->facts, transient[i]), json_object_get(host, transient[i]))) {
			json_object_set(l->facts, transient[i], json_object_get(host, transient[i]));
			/* The host's clock alone does not end a quick poll: it is
			 * judged again at the next full pass. */
			if (strcmp(transient[i], "timestamp") != 0)
				l->facts_gen++;
		}
	pthread_mutex_unlock(&h->lock);
}

#define HOST_FULL_PASS_S 300

static bool quick_poll_state(const char *st)
{
	return !strcmp(st, "discovering-unbound") || !strcmp(st, "insufficient-unbound") ||
	       !strcmp(st, "known-unbound");
}

/* After a full pass: if nothing wrote the Agent meanwhile (its revision is
 * still the one the pass read), the next polls may be quick ones. */
void hub_quick_poll_arm(struct hub *h, const char *ns, const char *host_id, const json_t *agent,
			   const json_t *host, uint64_t gen)
{
	const char *rv = jstr(json_object_get(agent, "metadata"), "resourceVersion");
	store_obj *so = NULL;
	struct host_lease *l;
	int64_t rev = rv ? strtoll(rv, NULL, 10) : 0;

	if (store_get(h->store, h->k_agent->store_key, ns, host_id, &so) < 0)
		return;
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, host_id);
	if (l) {
		l->fast_rev = 0;
		if (rev > 0 && so->rev == rev && jstr(host, "status") && quick_poll_state(jstr(host, "status")) &&
		    strlen(jstr(host, "status")) < sizeof(l->fast_status)) {
			l->fast_rev = rev;
			l->fast_at = time(NULL);
			l->fast_gen = gen;
			snprintf(l->fast_status, sizeof(l->fast_status), "%s", jstr(host, "status"));
		}
	}
	pthread_mutex_unlock(&h->lock);
	store_obj_free(so);
}

/* A quick poll: the host's next steps from what the last full pass found,
 * without reading the Agent's JSON or running the state machine.  false:
 * do a full pass. */
bool hub_quick_poll(struct hub *h, const json_t *ie, const char *host_id, const struct steps_ctx *sctx,
		       long long ts, json_t **ret_steps)
{
	const json_t *meta = json_object_get(ie, "metadata");
	const char *ns = jstr(meta, "namespace"), *ie_id = jstr(meta, "uid");
	store_obj *so = NULL;
	struct host_lease *l;
	char status[48] = "";
	json_t *host;

	if (!ns || !ie_id || store_get(h->store, h->k_agent->store_key, ns, host_id, &so) < 0)
		return false;
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, host_id);
	if (l && l->fast_rev && l->fast_rev == so->rev && l->fast_gen == l->facts_gen &&
	    time(NULL) - l->fast_at < HOST_FULL_PASS_S && strcmp(l->infra_env_id, ie_id) == 0) {
		lease_touch(h, l);
		if (ts > 0)
			json_object_set_new(l->facts, "timestamp", json_integer(ts));
		snprintf(status, sizeof(status), "%s", l->fast_status);
	}
	pthread_mutex_unlock(&h->lock);
	store_obj_free(so);
	if (!status[0])
		return false;
	state_persist(h, ns, host_id);
	host = json_pack("{s:s, s:s}", "id", host_id, "status", status);
	*ret_steps = host ? host_next_steps(host, false, sctx) : NULL;
	json_decref(host);
	return *ret_steps != NULL;
}

static const char *infraenv_uid_of(const json_t *agent)
{
	json_t *ref;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(agent, "metadata"), "ownerReferences"), i, ref)
		if (jstr(ref, "kind") && strcmp(jstr(ref, "kind"), "InfraEnv") == 0 && jstr(ref, "uid"))
			return jstr(ref, "uid");
	return "";
}

/* The InfraEnv uid of an Agent: its owner, or, for an Agent without one (an
 * Agent restored from a backup carries only its infraenvs label), the
 * InfraEnv its label names in its namespace.  "" when neither is there. */
static const char *infraenv_uid_or_label(struct hub *h, const json_t *agent, char *buf, size_t size)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *uid = infraenv_uid_of(agent), *label = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	json_t *ie = NULL;
	ah_err err;

	if (*uid || !label || !*label || !jstr(meta, "namespace") ||
	    kube_get(h->api, h->k_infraenv, jstr(meta, "namespace"), label, &ie, &err) < 0)
		return uid;
	snprintf(buf, size, "%s", jstr(json_object_get(ie, "metadata"), "uid") ? jstr(json_object_get(ie, "metadata"), "uid") : "");
	json_decref(ie);
	return buf;
}

/* The host model (assisted/validations.h) of an Agent: state, inventory,
 * validations, approval, the spec fields last applied to the host (role,
 * requested_hostname, installation_disk_id, installer_args,
 * ignition_config_overrides) and its lease's facts. */
static json_t *agent_host(struct hub *h, const json_t *agent)
{
	char uid[64];

	return hub_host_of(h, agent, infraenv_uid_or_label(h, agent, uid, sizeof(uid)), LEASE_KEEP);
}

/* For the cluster side (cluster.c): the host model after this pass's spec
 * sync, with "spec_synced" (and, when false, "spec_sync_error" {status,
 * message}) so that the cluster can count Agents whose spec failed. */
json_t *hub_host_model(struct hub *h, const json_t *agent)
{
	json_t *host = agent_host(h, agent);
	bool failed = false;
	ah_err err;

	if (!host)
		return NULL;
	spec_sync(h, agent, host, &failed, &err);
	json_object_set_new(host, "spec_synced", json_boolean(!failed));
	if (failed)
		json_object_set_new(host, "spec_sync_error",
				    json_pack("{s:i,s:s}", "status", err.status, "message", err.message));
	return host;
}

int hub_host_sync(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *se = json_object_get(host, "spec_sync_error");
	ah_err err = { 0 };

	if (json_is_false(json_object_get(host, "spec_synced")) && json_is_object(se)) {
		err.status = (int)json_integer_value(json_object_get(se, "status"));
		snprintf(err.message, sizeof(err.message), "%s", jstr(se, "message") ? jstr(se, "message") : "");
		return sync_agent_cas(h, agent, host, &err, true);
	}
	return sync_agent_cas(h, agent, host, NULL, true);
}

/* Hosts that stopped polling: refresh them so the timeout moves them to
 * disconnected, without waiting for a request that will never come.  Under
 * the lock only the due ids are collected, from the head of the active
 * list (at most SWEEP_MAX_PER_TICK a tick; the rest wait a tick), so a
 * sweep never stalls the requests of live hosts. */
/* Several replicas (cfg.leader_elect): the host may have been calling
 * another replica, which keeps the check-in time in the host's state record
 * (state_persist()).  When that record is recent enough, the host is not
 * disconnected: take the time over and put its lease back among the active
 * ones.  true when it was so. */
static bool checked_in_elsewhere(struct hub *h, const json_t *agent, const char *ns, const char *id,
				 int64_t now)
{
	json_t *rec = state_read(h, agent, NULL);
	int64_t cin = rec ? json_integer_value(json_object_get(rec, "checkedInAt")) : 0;
	struct host_lease *l;
	bool back = false;

	json_decref(rec);
	if (cin <= 0 || now - cin > h->cfg.host_disconnect_timeout_s)
		return false;
	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, id);
	if (l && l->swept && cin > l->checked_in_at) {
		list_unlink(&h->lease_quiet, l);
		l->checked_in_at = cin;
		l->saved_checked_in_at = cin;
		l->swept = false;
		list_append(&h->lease_active, l);
		back = true;
	}
	pthread_mutex_unlock(&h->lock);
	return back;
}

void hub_check_disconnected(struct hub *h)
{
	int64_t now = time(NULL);
	json_t *due = json_array(), *d;
	struct host_lease *l;
	size_t i, n = 0;

	if (!due)
		return;
	pthread_mutex_lock(&h->lock);
	while ((l = h->lease_active.head) && n < SWEEP_MAX_PER_TICK &&
	       now - l->checked_in_at > h->cfg.host_disconnect_timeout_s) {
		list_unlink(&h->lease_active, l);
		l->swept = true;
		list_append(&h->lease_quiet, l);
		json_array_append_new(due, json_pack("[s,s,s]", l->ns, l->id, l->infra_env_id));
		n++;
	}
	pthread_mutex_unlock(&h->lock);
	json_array_foreach(due, i, d) {
		const char *ns = json_string_value(json_array_get(d, 0)), *id = json_string_value(json_array_get(d, 1));
		json_t *agent = NULL, *host;
		ah_err err;

		if (kube_get(h->api, h->k_agent, ns, id, &agent, &err) < 0)
			continue;
		if (h->cfg.leader_elect && checked_in_elsewhere(h, agent, ns, id, now)) {
			json_decref(agent);
			continue;
		}
		host = hub_host_of(h, agent, json_string_value(json_array_get(d, 2)), LEASE_KEEP);
		if (host)
			host_pass(h, agent, host, true);
		json_decref(host);
		json_decref(agent);
	}
	json_decref(due);
}

/* An Agent changed (its spec, or it is new to this process): apply its
 * spec and show the conditions it implies (SpecSynced, approval), and
 * adopt the host so that the disconnection timeout runs for it even if it
 * never polls again. */
bool hub_agent_reconcilable(const json_t *agent)
{
	/* A restored Agent (restore_seed()) has its saved state instead. */
	return !jstr(json_object_get(agent, "metadata"), "deletionTimestamp") &&
	       (jstr(json_object_get(json_object_get(agent, "status"), "debugInfo"), "state") ||
		jstr(json_object_get(json_object_get(agent, "metadata"), "annotations"), ANN_RESTORE_STATE));
}

int hub_reconcile_agent(struct hub *h, const char *ns, const char *name)
{
	json_t *agent = NULL, *host;
	ah_err err;

	if (kube_get(h->api, h->k_agent, ns, name, &agent, &err) < 0)
		return 0;
	if (!hub_agent_reconcilable(agent)) {
		json_decref(agent);
		return 0;
	}
	host = agent_host(h, agent);
	if (host)
		host_pass(h, agent, host, false);
	json_decref(host);
	json_decref(agent);
	return 0;
}

void hub_forget_host(struct hub *h, const char *ns, const char *name)
{
	struct host_lease **pp, *l = NULL;
	struct text_render tr = { "{}" };

	pthread_mutex_lock(&h->lock);
	if (h->lease_nbuckets) {
		for (pp = &h->lease_buckets[lease_hash(ns, name) & (h->lease_nbuckets - 1)]; (l = *pp);
		     pp = &l->hnext) {
			if (strcmp(l->id, name) == 0 && strcmp(l->ns, ns) == 0) {
				*pp = l->hnext;
				list_unlink(lease_list_of(h, l), l);
				h->lease_count--;
				break;
			}
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (l)
		lease_free(l);
	/* The applied spec and the state record go with their Agent (a
	 * missing record is fine). */
	store_delete(h->store, HOSTSPEC_RESOURCE, ns, name, 0, hub_render_text, &tr, NULL);
	store_delete(h->store, HOSTSTATE_RESOURCE, ns, name, 0, hub_render_text, &tr, NULL);
}

/* --- registration ----------------------------------------------------------- */

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	return rt_from_errno(hub_reconcile_agent(ctx, key->ns, key->name));
}

/* Our own status writes come back here too; reconciling them finds
 * nothing to write.  An Agent without a registered host (or one being
 * deleted) has nothing to reconcile: skipping it here saves a read per
 * write of such Agents.  A deleted Agent takes what was kept of its host. */
static void agent_event(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	if (ev->so->type == STORE_DELETED)
		hub_forget_host(ctx, ev->so->ns, ev->so->name);
	else if (!ev->obj || hub_agent_reconcilable(ev->obj))
		rt_enqueue(c, ev->so->ns, ev->so->name);
}

/* The ignition token Secret an Agent names (kubeapi.md §4.4 watches a
 * Secret → the Agents whose ignitionEndpointTokenReference names it). */
static void token_secret_index(const json_t *agent, json_t *out)
{
	const json_t *ref = json_object_get(json_object_get(agent, "spec"), "ignitionEndpointTokenReference");
	const char *ns = jstr(ref, "namespace"), *name = jstr(ref, "name");
	char key[600];

	if (json_is_object(ref)) {
		snprintf(key, sizeof(key), "%s/%s", ns ? ns : "", name ? name : "");
		json_array_append_new(out, json_string(key));
	}
}

static void secret_to_agents(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *pairs, *p;
	char key[600];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	pairs = rt_cache_list_by(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_TOKEN, key);
	json_array_foreach(pairs, i, p)
		rt_enqueue(c, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(pairs);
}

int hub_agent_register(struct hub *h)
{
	struct rt_controller_def d = {
		.name = "Agent",
		.reconcile = reconcile,
		.ctx = h,
		.watches = {
			{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_event },
			{ .resource = "secrets", .map = RT_MAP_FN, .fn = secret_to_agents },
		},
	};
	int r = rt_register(h->rt, &d, &h->c_agent);

	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_TOKEN, token_secret_index);
	return r;
}

uint64_t hub_host_facts_gen(struct hub *h, const char *ns, const char *host_id)
{
	struct host_lease *l;
	uint64_t gen;

	pthread_mutex_lock(&h->lock);
	l = lease_find(h, ns, host_id);
	gen = l ? l->facts_gen : 0;
	pthread_mutex_unlock(&h->lock);
	return gen;
}
