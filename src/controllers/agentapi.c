/* agentapi.c - the upstream v2 agent REST API (backend.md §7) on Agents.
 *
 * A host is an Agent (name = host id) in its InfraEnv's namespace.  The
 * host model the state machine works on (assisted/host.h) is assembled from
 * the Agent (state, inventory, validations, approval, role) plus the lease:
 * what this boot of the host reported that needs no object (its last
 * check-in, ntp and resolution results).  Only a change of what the Agent
 * shows is written, so a poll that changes nothing writes nothing. */
#include "hub-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/conditions.h"
#include "assisted/host.h"
#include "assisted/inventory.h"
#include "assisted/steps.h"
#include "base/log.h"
#include "base/util.h"

#define AGENT_VERSION_HEADER "discovery_agent_version"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* --- replies in upstream shapes ------------------------------------------- */

static enum MHD_Result api_error(struct http_req *req, unsigned code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static enum MHD_Result api_error(struct http_req *req, unsigned code, const char *fmt, ...)
{
	char msg[1024], codes[16];
	json_t *body;
	enum MHD_Result r;
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

/* --- leases ----------------------------------------------------------------- */

static struct host_lease *lease_get(struct hub *h, const char *id, const char *ns, const char *ie_id)
{
	struct host_lease *l;

	for (l = h->leases; l; l = l->next)
		if (strcmp(l->id, id) == 0 && strcmp(l->ns, ns) == 0)
			return l;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	snprintf(l->id, sizeof(l->id), "%s", id);
	snprintf(l->ns, sizeof(l->ns), "%s", ns);
	snprintf(l->infra_env_id, sizeof(l->infra_env_id), "%s", ie_id);
	l->facts = json_object();
	l->next = h->leases;
	h->leases = l;
	return l;
}

/* --- host model <-> Agent ---------------------------------------------------- */

static bool agent_bound(const json_t *agent)
{
	const json_t *ref = json_object_get(json_object_get(agent, "spec"), "clusterDeploymentName");

	return jstr(ref, "name") && *jstr(ref, "name");
}

/* The host model of backend.md from the Agent and the lease (caller holds h->lock). */
static json_t *host_model(const json_t *agent, const struct host_lease *l)
{
	const json_t *meta = json_object_get(agent, "metadata"), *spec = json_object_get(agent, "spec");
	const json_t *status = json_object_get(agent, "status"), *dbg = json_object_get(status, "debugInfo");
	const char *inv = jstr(json_object_get(meta, "annotations"), ANN_INVENTORY);
	json_t *host = json_deep_copy(l->facts);
	const char *k;
	json_t *v;

	json_object_set_new(host, "id", json_string(jstr(meta, "name")));
	json_object_set_new(host, "infra_env_id", json_string(l->infra_env_id));
	json_object_set_new(host, "kind", json_string("Host"));
	if (jstr(dbg, "state")) {
		json_object_set_new(host, "status", json_string(jstr(dbg, "state")));
		json_object_set_new(host, "status_info", json_string(jstr(dbg, "stateInfo") ? jstr(dbg, "stateInfo") : ""));
	}
	if (inv)
		json_object_set_new(host, "inventory", json_string(inv));
	json_object_set_new(host, "approved", json_boolean(json_is_true(json_object_get(spec, "approved"))));
	json_object_set_new(host, "role", json_string(jstr(spec, "role") && *jstr(spec, "role") ?
						       jstr(spec, "role") : "auto-assign"));
	if (jstr(status, "role"))
		json_object_set_new(host, "suggested_role", json_string(jstr(status, "role")));
	if (jstr(spec, "hostname"))
		json_object_set_new(host, "requested_hostname", json_string(jstr(spec, "hostname")));
	if (jstr(spec, "installation_disk_id"))
		json_object_set_new(host, "installation_disk_id", json_string(jstr(spec, "installation_disk_id")));
	else if (jstr(status, "installation_disk_id"))
		json_object_set_new(host, "installation_disk_id", json_string(jstr(status, "installation_disk_id")));
	json_object_set_new(host, "cluster_id", json_string(agent_bound(agent) ? "bound" : ""));
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

static json_t *parse_maybe_text(const json_t *v)
{
	if (json_is_string(v))
		return json_loads(json_string_value(v), 0, NULL);
	return json_incref((json_t *)v);
}

/* Write what the Agent shows of the host, if it differs. */
static int sync_agent(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	const json_t *old = json_object_get(agent, "status");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object();
	json_t *inv = parse_maybe_text(json_object_get(host, "inventory"));
	json_t *vi = parse_maybe_text(json_object_get(host, "validations_info"));
	json_t *dbg, *conds;
	char now[32];
	int r = 0;

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
		json_object_set(st, "validationsInfo", vi);
	if (jstr(host, "suggested_role"))
		json_object_set_new(st, "role", json_string(jstr(host, "suggested_role")));
	else if (jstr(host, "role"))
		json_object_set_new(st, "role", json_string(jstr(host, "role")));
	if (jstr(host, "installation_disk_id"))
		json_object_set_new(st, "installation_disk_id", json_string(jstr(host, "installation_disk_id")));
	json_object_set_new(st, "kind", json_string("Host"));
	{
		json_t *ntp = parse_maybe_text(json_object_get(host, "ntp_sources")), *out = json_array(), *s;
		size_t i;

		json_array_foreach(ntp, i, s)
			json_array_append_new(out, json_pack("{s:s,s:s}", "sourceName",
							     jstr(s, "source_name") ? jstr(s, "source_name") : "",
							     "sourceState", jstr(s, "source_state") ? jstr(s, "source_state") : ""));
		if (json_array_size(out))
			json_object_set_new(st, "ntpSources", out);
		else
			json_decref(out);
		json_decref(ntp);
	}
	conds = agent_conditions(jstr(host, "status"), jstr(host, "status_info"), vi,
				 json_is_true(json_object_get(json_object_get(agent, "spec"), "approved")), true, NULL);
	util_now_rfc3339(now, sizeof(now));
	conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	if (!json_equal(st, old)) {
		struct kube_opts o = { .status = true };
		json_t *patch = json_pack("{s:O}", "status", st), *ret = NULL;
		ah_err err;

		r = kube_patch(h->api, h->k_agent, ns, name, "application/merge-patch+json", patch, &o, &ret, &err);
		if (r < 0)
			log_warn("agent %s/%s: status update: %s", ns, name, err.message);
		json_decref(patch);
		json_decref(ret);
	}
	/* The inventory labels and the raw inventory annotation (upstream keeps
	 * it to rebuild a lost host). */
	if (json_is_object(inv)) {
		json_t *labels = inventory_labels(inv), *ann = json_object(), *patch, *ret = NULL;
		const json_t *ol = json_object_get(meta, "labels"), *oa = json_object_get(meta, "annotations");
		const char *k;
		json_t *v;
		bool differs = false;
		char *raw = json_dumps(inv, JSON_COMPACT);

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
	}
	json_decref(inv);
	json_decref(vi);
	json_decref(st);
	return r;
}

/* Run the state machine on the host and write the Agent if it changed. */
static void refresh_and_sync(struct hub *h, const json_t *agent, json_t *host)
{
	struct host_refresh_ctx ctx = { 0 };
	struct host_refresh_result res = { 0 };

	ctx.now = time(NULL);
	ctx.disconnect_timeout_s = h->cfg.host_disconnect_timeout_s;
	if (host_refresh(host, &ctx, &res) == 0) {
		json_object_set_new(host, "status", json_string(res.status));
		json_object_set_new(host, "status_info", json_string(res.status_info));
		if (res.validations_info)
			json_object_set(host, "validations_info", res.validations_info);
	}
	host_refresh_result_release(&res);
	sync_agent(h, agent, host);
}

/* --- authentication ------------------------------------------------------------ */

/* 0 with *ret_ie, or a reply queued in *res. */
static int auth_infraenv(struct hub *h, struct http_req *req, const char *ie_id, json_t **ret_ie,
			 enum MHD_Result *res)
{
	const char *key = http_header(req, "X-Secret-Key");
	json_t *claims = NULL;
	const char *claim;
	ah_err err;

	if (!key || !*key || jwt_verify(h->keys, key, &claims, &err) < 0) {
		*res = api_error(req, 401, "Unauthorized");
		return -EACCES;
	}
	claim = jstr(claims, "infra_env_id");
	if (!claim || strcmp(claim, ie_id) != 0) {
		json_decref(claims);
		*res = api_error(req, 403, "Forbidden: the token is not for infra-env %s", ie_id);
		return -EPERM;
	}
	json_decref(claims);
	if (hub_find_infraenv(h, ie_id, ret_ie) < 0) {
		*res = api_error(req, 404, "infra-env %s not found", ie_id);
		return -ENOENT;
	}
	return 0;
}

static int parse_json_body(struct http_req *req, json_t **ret)
{
	json_error_t jerr;

	if (req->too_big)
		return -E2BIG;
	*ret = json_loadb(req->body.buf ? req->body.buf : "", req->body.len, 0, &jerr);
	return *ret ? 0 : -EINVAL;
}

/* --- endpoints -------------------------------------------------------------------- */

static enum MHD_Result do_register(struct hub *h, struct http_req *req, const json_t *ie)
{
	const json_t *meta = json_object_get(ie, "metadata"), *spec = json_object_get(ie, "spec");
	const char *ns = jstr(meta, "namespace"), *iename = jstr(meta, "name"), *ie_id = jstr(meta, "uid");
	json_t *body = NULL, *agent = NULL, *created = NULL, *host, *reply;
	struct host_lease *l;
	const char *host_id;
	enum MHD_Result res;
	ah_err err;
	int r;

	if (parse_json_body(req, &body) < 0 || !json_is_object(body))
		return api_error(req, 400, "invalid request body: expected a JSON object");
	host_id = jstr(body, "host_id");
	if (!host_id || strlen(host_id) != 36) {
		json_decref(body);
		return api_error(req, 400, "host_id: a UUID is required");
	}
	r = kube_get(h->api, h->k_agent, ns, host_id, &agent, &err);
	if (r == -ENOENT) {
		json_t *a = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s},s:[{s:s,s:s,s:s,s:s}]},s:{s:b,s:s}}",
				      "apiVersion", "agent-install.openshift.io/v1beta1", "kind", "Agent",
				      "metadata", "name", host_id, "namespace", ns, "labels", LABEL_INFRAENV, iename,
				      "ownerReferences", "apiVersion", "agent-install.openshift.io/v1beta1",
				      "kind", "InfraEnv", "name", iename, "uid", ie_id,
				      "spec", "approved",
				      json_is_true(json_object_get(json_object_get(spec, "agentApproval"), "autoApprove")),
				      "role", "");
		const json_t *al = json_object_get(spec, "agentLabels");
		const json_t *cref = json_object_get(spec, "clusterRef");
		const char *k;
		json_t *v;

		json_object_foreach((json_t *)al, k, v)
			json_object_set(json_object_get(json_object_get(a, "metadata"), "labels"), k, v);
		if (jstr(cref, "name"))
			json_object_set_new(json_object_get(a, "spec"), "clusterDeploymentName",
					    json_pack("{s:s,s:s}", "name", jstr(cref, "name"), "namespace",
						      jstr(cref, "namespace") ? jstr(cref, "namespace") : ns));
		r = kube_create(h->api, h->k_agent, ns, a, NULL, &created, &err);
		json_decref(a);
		if (r < 0) {
			json_decref(body);
			return api_error(req, 500, "failed to create the Agent: %s", err.message);
		}
		agent = created;
	} else if (r < 0) {
		json_decref(body);
		return api_error(req, 500, "%s", err.message);
	}
	pthread_mutex_lock(&h->lock);
	l = lease_get(h, host_id, ns, ie_id);
	if (!l) {
		pthread_mutex_unlock(&h->lock);
		json_decref(agent);
		json_decref(body);
		return MHD_NO;
	}
	l->checked_in_at = time(NULL);
	l->swept = false;
	/* A new boot: what the last one reported no longer holds. */
	json_decref(l->facts);
	l->facts = json_object();
	host = host_model(agent, l);
	pthread_mutex_unlock(&h->lock);
	if (host_register(host, created != NULL, agent_bound(agent), time(NULL), &err) < 0) {
		json_decref(host);
		json_decref(agent);
		json_decref(body);
		return api_error(req, err.status ? (unsigned)err.status : 400, "%s", err.message);
	}
	json_object_set_new(host, "discovery_agent_version",
			    json_string(jstr(body, "discovery_agent_version") ? jstr(body, "discovery_agent_version") : ""));
	sync_agent(h, agent, host);
	reply = json_deep_copy(host);
	{
		char href[256], args[256];

		snprintf(href, sizeof(href), API_PREFIX "/infra-envs/%s/hosts/%s", ie_id, host_id);
		json_object_set_new(reply, "href", json_string(href));
		snprintf(args, sizeof(args), "{\"infra_env_id\":\"%s\",\"host_id\":\"%s\",\"agent_version\":\"%s\"}",
			 ie_id, host_id, jstr(body, "discovery_agent_version") ? jstr(body, "discovery_agent_version") : "");
		json_object_set_new(reply, "next_step_runner_command",
				    json_pack("{s:s,s:[s],s:i}", "command", "", "args", args, "retry_seconds", 0));
	}
	res = http_reply_json(req, 201, reply);
	json_decref(reply);
	json_decref(host);
	json_decref(agent);
	json_decref(body);
	return res;
}

static int load_host(struct hub *h, const json_t *ie, const char *host_id, json_t **ret_agent,
		     json_t **ret_host)
{
	const json_t *meta = json_object_get(ie, "metadata");
	struct host_lease *l;
	json_t *agent = NULL;
	ah_err err;

	if (kube_get(h->api, h->k_agent, jstr(meta, "namespace"), host_id, &agent, &err) < 0)
		return -ENOENT;
	/* An agent of one InfraEnv cannot touch another's hosts. */
	if (!jstr(json_object_get(json_object_get(agent, "metadata"), "labels"), LABEL_INFRAENV) ||
	    strcmp(jstr(json_object_get(json_object_get(agent, "metadata"), "labels"), LABEL_INFRAENV),
		   jstr(meta, "name")) != 0) {
		json_decref(agent);
		return -ENOENT;
	}
	pthread_mutex_lock(&h->lock);
	l = lease_get(h, host_id, jstr(meta, "namespace"), jstr(meta, "uid"));
	if (l) {
		l->checked_in_at = time(NULL);
		l->swept = false;
	}
	*ret_host = l ? host_model(agent, l) : NULL;
	pthread_mutex_unlock(&h->lock);
	if (!*ret_host) {
		json_decref(agent);
		return -ENOMEM;
	}
	*ret_agent = agent;
	return 0;
}

static void save_facts(struct hub *h, const json_t *ie, const char *host_id, const json_t *host)
{
	static const char *transient[] = { "ntp_sources", "domain_resolutions", "connectivity",
					   "disks_info", "images_status", "discovery_agent_version", NULL };
	const json_t *meta = json_object_get(ie, "metadata");
	struct host_lease *l;
	int i;

	pthread_mutex_lock(&h->lock);
	l = lease_get(h, host_id, jstr(meta, "namespace"), jstr(meta, "uid"));
	for (i = 0; l && transient[i]; i++)
		if (json_object_get(host, transient[i]))
			json_object_set(l->facts, transient[i], json_object_get(host, transient[i]));
	pthread_mutex_unlock(&h->lock);
}

static enum MHD_Result do_instructions(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	json_t *agent = NULL, *host = NULL, *steps;
	struct steps_ctx sctx = { 0 };
	enum MHD_Result res;

	if (load_host(h, ie, host_id, &agent, &host) < 0)
		return api_error(req, 404, "host %s not found", host_id);
	refresh_and_sync(h, agent, host);
	steps = host_next_steps(host, false, &sctx);
	res = http_reply_json(req, 200, steps);
	json_decref(steps);
	json_decref(host);
	json_decref(agent);
	return res;
}

static enum MHD_Result do_step_reply(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	json_t *agent = NULL, *host = NULL, *body = NULL;
	ah_err err;
	int r;

	if (parse_json_body(req, &body) < 0 || !json_is_object(body))
		return api_error(req, 400, "invalid step reply: expected a JSON object");
	if (load_host(h, ie, host_id, &agent, &host) < 0) {
		json_decref(body);
		return api_error(req, 404, "host %s not found", host_id);
	}
	r = host_apply_step_reply(host, body, &err);
	json_decref(body);
	if (r < 0) {
		json_decref(host);
		json_decref(agent);
		return api_error(req, 400, "%s", err.message);
	}
	save_facts(h, ie, host_id, host);
	refresh_and_sync(h, agent, host);
	json_decref(host);
	json_decref(agent);
	return http_reply(req, 204, NULL, "", 0);
}

enum MHD_Result hub_agentapi(struct hub *h, struct http_req *req, bool *handled)
{
	const char *p = req->path;
	char ie_id[64], host_id[64], rest[64];
	json_t *ie = NULL;
	enum MHD_Result res;
	int n;

	*handled = false;
	if (strncmp(p, API_PREFIX "/", strlen(API_PREFIX) + 1) != 0)
		return MHD_NO;
	*handled = true;
	if (req->too_big)
		return api_error(req, 413, "request body too large");
	p += strlen(API_PREFIX);
	ie_id[0] = host_id[0] = rest[0] = '\0';
	n = sscanf(p, "/infra-envs/%63[^/]/hosts/%63[^/]/%63s", ie_id, host_id, rest);
	if (n < 1)
		n = sscanf(p, "/infra-envs/%63[^/]/hosts", ie_id) == 1 ? 1 : 0;
	if (n == 0)
		return api_error(req, 404, "path %s not found", req->path);
	if (auth_infraenv(h, req, ie_id, &ie, &res) < 0)
		return res;
	if (n == 1 && strcmp(req->method, "POST") == 0 && strstr(p, "/hosts") && !host_id[0]) {
		res = do_register(h, req, ie);
	} else if (n == 3 && strcmp(rest, "instructions") == 0 && strcmp(req->method, "GET") == 0) {
		res = do_instructions(h, req, ie, host_id);
	} else if (n == 3 && strcmp(rest, "instructions") == 0 && strcmp(req->method, "POST") == 0) {
		res = do_step_reply(h, req, ie, host_id);
	} else {
		res = api_error(req, 404, "path %s not found", req->path);
	}
	json_decref(ie);
	return res;
}

/* Hosts that stopped polling: refresh them so the timeout moves them to
 * disconnected, without waiting for a request that will never come. */
void hub_check_disconnected(struct hub *h)
{
	int64_t now = time(NULL);
	json_t *due = json_array(), *d;
	struct host_lease *l;
	size_t i;

	pthread_mutex_lock(&h->lock);
	for (l = h->leases; l; l = l->next)
		if (!l->swept && now - l->checked_in_at > h->cfg.host_disconnect_timeout_s) {
			l->swept = true;
			json_array_append_new(due, json_pack("[s,s]", l->ns, l->id));
		}
	pthread_mutex_unlock(&h->lock);
	json_array_foreach(due, i, d) {
		const char *ns = json_string_value(json_array_get(d, 0)), *id = json_string_value(json_array_get(d, 1));
		json_t *agent = NULL, *host = NULL;
		ah_err err;

		if (kube_get(h->api, h->k_agent, ns, id, &agent, &err) < 0)
			continue;
		pthread_mutex_lock(&h->lock);
		for (l = h->leases; l; l = l->next)
			if (strcmp(l->id, id) == 0 && strcmp(l->ns, ns) == 0)
				host = host_model(agent, l);
		pthread_mutex_unlock(&h->lock);
		if (host)
			refresh_and_sync(h, agent, host);
		json_decref(host);
		json_decref(agent);
	}
	json_decref(due);
}

/* An Agent changed (its spec, or it is new to this process): show the
 * conditions its spec implies (approval), and adopt the host so that the
 * disconnection timeout runs for it even if it never polls again. */
int hub_reconcile_agent(struct hub *h, const char *ns, const char *name)
{
	json_t *agent = NULL, *host = NULL, *ref;
	const char *ie_id = "";
	struct host_lease *l;
	ah_err err;
	size_t i;

	if (kube_get(h->api, h->k_agent, ns, name, &agent, &err) < 0)
		return 0;
	if (jstr(json_object_get(agent, "metadata"), "deletionTimestamp") ||
	    !jstr(json_object_get(json_object_get(agent, "status"), "debugInfo"), "state")) {
		json_decref(agent);
		return 0;
	}
	json_array_foreach(json_object_get(json_object_get(agent, "metadata"), "ownerReferences"), i, ref)
		if (jstr(ref, "kind") && strcmp(jstr(ref, "kind"), "InfraEnv") == 0 && jstr(ref, "uid"))
			ie_id = jstr(ref, "uid");
	pthread_mutex_lock(&h->lock);
	l = lease_get(h, name, ns, ie_id);
	if (l && l->checked_in_at == 0)
		l->checked_in_at = time(NULL); /* a grace period from our start */
	host = l ? host_model(agent, l) : NULL;
	pthread_mutex_unlock(&h->lock);
	if (host)
		sync_agent(h, agent, host);
	json_decref(host);
	json_decref(agent);
	return 0;
}

void hub_forget_host(struct hub *h, const char *ns, const char *name)
{
	struct host_lease **pp, *l;

	pthread_mutex_lock(&h->lock);
	for (pp = &h->leases; (l = *pp); pp = &l->next) {
		if (strcmp(l->id, name) == 0 && strcmp(l->ns, ns) == 0) {
			*pp = l->next;
			json_decref(l->facts);
			free(l);
			break;
		}
	}
	pthread_mutex_unlock(&h->lock);
}
