/* agentapi.c - the upstream v2 agent REST API (backend.md §7) on Agents:
 * registration, next-step instructions, step replies, progress and the
 * host read.  Each call authenticates the host by its InfraEnv token and
 * hands the host to the pipeline of the Agent controller
 * (controllers/agent.h), which reads and writes the objects; the reply is
 * built here in upstream's shapes. */
#include "api/api-internal.h"
#include "controllers/agent.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/host.h"
#include "assisted/steps.h"
#include "assisted/validations.h"
#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/util.h"
#include "http/query.h"
#include "image/ignition.h"

#define AGENT_VERSION_HEADER "discovery_agent_version"
/* The installer images the install step names (upstream INSTALLER_IMAGE,
 * CONTROLLER_IMAGE defaults). */
#define INSTALLER_IMAGE "quay.io/edge-infrastructure/assisted-installer:latest"
#define CONTROLLER_IMAGE "quay.io/edge-infrastructure/assisted-installer-controller:latest"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Whether the Agent is a host of the InfraEnv ie: its InfraEnv owner
 * reference names ie's uid; an Agent without one (made by hand) belongs to
 * the InfraEnv its label names.  A token of one InfraEnv reads or changes
 * only the hosts this accepts (tenant isolation on the agent API). */
static bool agent_of_infraenv(const json_t *agent, const json_t *ie)
{
	const json_t *meta = json_object_get(ie, "metadata"), *ameta = json_object_get(agent, "metadata"), *ref;
	const char *label;
	bool owned = false;
	size_t i;

	json_array_foreach(json_object_get(ameta, "ownerReferences"), i, ref) {
		if (!jstr(ref, "kind") || strcmp(jstr(ref, "kind"), "InfraEnv") != 0)
			continue;
		owned = true;
		if (jstr(ref, "uid") && jstr(meta, "uid") && strcmp(jstr(ref, "uid"), jstr(meta, "uid")) == 0)
			return true;
	}
	if (owned)
		return false;
	label = jstr(json_object_get(ameta, "labels"), LABEL_INFRAENV);
	return label && jstr(meta, "name") && strcmp(label, jstr(meta, "name")) == 0;
}

/* --- authentication ------------------------------------------------------------ */

/* 0 with *ret_ie, or a reply queued in *res. */
static int auth_infraenv(struct hub *h, struct http_req *req, const char *ie_id, json_t **ret_ie,
			 enum http_result *res)
{
	const char *key = http_header(req, "X-Secret-Key");
	json_t *claims = NULL;
	const char *claim;
	ah_err err;

	if (!key || !*key || jwt_verify(h->keys, key, &claims, &err) < 0) {
		*res = hub_reply_error(req, 401, "Unauthorized");
		return -EACCES;
	}
	claim = jstr(claims, "infra_env_id");
	if (!claim || strcmp(claim, ie_id) != 0) {
		json_decref(claims);
		*res = hub_reply_error(req, 403, "Forbidden: the token is not for infra-env %s", ie_id);
		return -EPERM;
	}
	json_decref(claims);
	if (hub_find_infraenv(h, ie_id, ret_ie) < 0) {
		*res = hub_reply_error(req, 404, "infra-env %s not found", ie_id);
		return -ENOENT;
	}
	/* A rotated token is no longer the InfraEnv's. */
	if (!hub_infraenv_token_current(h, *ret_ie, key)) {
		json_decref(*ret_ie);
		*ret_ie = NULL;
		*res = hub_reply_error(req, 401, "Unauthorized");
		return -EACCES;
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

static enum http_result do_register(struct hub *h, struct http_req *req, const json_t *ie)
{
	const json_t *meta = json_object_get(ie, "metadata"), *spec = json_object_get(ie, "spec");
	const char *ns = jstr(meta, "namespace"), *iename = jstr(meta, "name"), *ie_id = jstr(meta, "uid");
	json_t *body = NULL, *agent = NULL, *created = NULL, *host, *reply;
	const char *host_id;
	enum http_result res;
	ah_err err;
	int r;

	if (parse_json_body(req, &body) < 0 || !json_is_object(body))
		return hub_reply_error(req, 400, "invalid request body: expected a JSON object");
	host_id = jstr(body, "host_id");
	if (!host_id || !util_is_uuid(host_id)) {
		json_decref(body);
		return hub_reply_error(req, 400, "host_id in body must be of type uuid");
	}
	if (json_object_get(body, "discovery_agent_version") && !json_is_string(json_object_get(body, "discovery_agent_version"))) {
		json_decref(body);
		return hub_reply_error(req, 400, "discovery_agent_version in body must be of type string");
	}
	/* An InfraEnv being deleted takes no new hosts (its last ones are
	 * on their way out). */
	if (jstr(meta, "deletionTimestamp")) {
		json_decref(body);
		return hub_reply_error(req, 404, "infra-env %s is being deleted", ie_id);
	}
	/* A host of an InfraEnv bound to a cluster registers into that
	 * cluster: gone (or going) → 404, and the agent stops (§7.3). */
	{
		const json_t *cref = json_object_get(spec, "clusterRef");
		json_t *cd = NULL;

		if (jstr(cref, "name") && *jstr(cref, "name")) {
			const char *cdns = jstr(cref, "namespace") && *jstr(cref, "namespace") ? jstr(cref, "namespace") : ns;
			bool gone = kube_get(h->api, h->k_cd, cdns, jstr(cref, "name"), &cd, &err) < 0 ||
				    jstr(json_object_get(cd, "metadata"), "deletionTimestamp");

			json_decref(cd);
			if (gone) {
				json_decref(body);
				return hub_reply_error(req, 404, "Cluster %s/%s of infra-env %s not found", cdns,
						 jstr(cref, "name"), ie_id);
			}
		}
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
			return hub_reply_error(req, 500, "failed to create the Agent: %s", err.message);
		}
		agent = created;
	} else if (r < 0) {
		json_decref(body);
		return hub_reply_error(req, 500, "%s", err.message);
	} else if (!agent_of_infraenv(agent, ie)) {
		/* The id is a host of another InfraEnv: refused, and that host
		 * is neither moved nor shown (its details stay its own). */
		log_info("agent API: host %s of another infra-env refused registration to infra-env %s", host_id, ie_id);
		res = hub_reply_error(req, 409, "Host %s is registered to another infra-env; it cannot register to infra-env %s",
				      host_id, ie_id);
		json_decref(agent);
		json_decref(body);
		return res;
	}
	/* A new boot: what the last one reported no longer holds. */
	host = hub_host_of(h, agent, ie_id, LEASE_NEW_BOOT);
	if (!host) {
		json_decref(agent);
		json_decref(body);
		return HTTP_NO;
	}
	if (host_register(host, created != NULL, hub_host_is_bound(host), time(NULL), &err) < 0) {
		json_decref(host);
		json_decref(agent);
		json_decref(body);
		return hub_reply_error(req, err.status ? (unsigned)err.status : 400, "%s", err.message);
	}
	json_object_set_new(host, "discovery_agent_version",
			    json_string(jstr(body, "discovery_agent_version") ? jstr(body, "discovery_agent_version") : ""));
	hub_save_facts(h, ie, host_id, host);
	/* The binding a new host starts with (its InfraEnv's cluster) is
	 * kept now: the Agent's reference may change from here on. */
	if (hub_applied_save(h, agent, host, &err) < 0)
		log_warn("host %s: %s", host_id, err.message);
	{
		struct host_cluster hc;

		hub_host_cluster_load(h, agent, host, &hc);
		/* §4.2: a host joining an installed cluster is a day-2 worker. */
		if (hc.cluster && jstr(hc.cluster, "kind") && strcmp(jstr(hc.cluster, "kind"), "AddHostsCluster") == 0 &&
		    jstr(host, "status") && strcmp(jstr(host, "status"), "discovering") == 0) {
			json_object_set_new(host, "kind", json_string("AddToExistingClusterHost"));
			json_object_set_new(host, "suggested_role", json_string("worker"));
		}
		hub_host_pass_in(h, agent, host, false, &hc);
		hub_host_cluster_release(&hc);
	}
	reply = json_deep_copy(host);
	{
		char href[256];
		json_t *a = json_pack("{s:s,s:s,s:s}", "infra_env_id", ie_id, "host_id", host_id, "agent_version",
				      jstr(body, "discovery_agent_version") ? jstr(body, "discovery_agent_version") : "");
		/* The agent's own text is encoded as a JSON string, never pasted. */
		char *args = a ? json_dumps(a, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

		json_decref(a);
		snprintf(href, sizeof(href), API_PREFIX "/infra-envs/%s/hosts/%s", ie_id, host_id);
		json_object_set_new(reply, "href", json_string(href));
		json_object_set_new(reply, "next_step_runner_command",
				    json_pack("{s:s,s:[s],s:i}", "command", "", "args", args ? args : "{}", "retry_seconds", 0));
		free(args);
	}
	res = http_reply_json(req, 201, reply);
	json_decref(reply);
	json_decref(host);
	json_decref(agent);
	json_decref(body);
	return res;
}

static int load_host_use(struct hub *h, const json_t *ie, const char *host_id, json_t **ret_agent,
			 json_t **ret_host, enum lease_use use)
{
	const json_t *meta = json_object_get(ie, "metadata");
	json_t *agent = NULL;
	ah_err err;

	if (kube_get(h->api, h->k_agent, jstr(meta, "namespace"), host_id, &agent, &err) < 0)
		return -ENOENT;
	/* An agent of one InfraEnv cannot touch another's hosts: to it they
	 * do not exist (upstream keys hosts by InfraEnv and id). */
	if (!agent_of_infraenv(agent, ie)) {
		json_decref(agent);
		return -ENOENT;
	}
	*ret_host = hub_host_of(h, agent, jstr(meta, "uid"), use);
	if (!*ret_host) {
		json_decref(agent);
		return -ENOMEM;
	}
	*ret_agent = agent;
	return 0;
}

/* The host's own request: it checked in now. */
static int load_host(struct hub *h, const json_t *ie, const char *host_id, json_t **ret_agent, json_t **ret_host)
{
	return load_host_use(h, ie, host_id, ret_agent, ret_host, LEASE_TOUCH);
}

/* The ACI's spec.ignitionEndpoint, where a day-2 host gets its ignition
 * (upstream's custom ignition endpoint): url is replaced with its URL and the
 * host's machine config pool (its role; worker while auto-assign), and *ret_ca
 * (malloc'd, NULL when none) is the PEM of the caCertificateReference
 * Secret's tls.crt.  url is left as it is when the cluster has no endpoint
 * or a reference cannot be read. */
static void ignition_endpoint_of(struct hub *h, const json_t *host, char *url, size_t url_size, char **ret_ca)
{
	char ns[256], name[256];
	const char *bound = jstr(host, "bound_cd"), *role = jstr(host, "role"), *ep_url, *b64;
	const struct kube_kind *k_secret = h->k_secret;
	json_t *cd = NULL, *aci = NULL, *sec = NULL;
	const json_t *ep, *ref;
	ah_err err;

	*ret_ca = NULL;
	if (!bound || sscanf(bound, "%255[^/]/%255s", ns, name) != 2 || !h->k_cd || !h->k_aci ||
	    kube_get(h->api, h->k_cd, ns, name, &cd, &err) < 0)
		return;
	ref = json_object_get(json_object_get(cd, "spec"), "clusterInstallRef");
	if (!jstr(ref, "name") || kube_get(h->api, h->k_aci, ns, jstr(ref, "name"), &aci, &err) < 0)
		goto out;
	ep = json_object_get(json_object_get(aci, "spec"), "ignitionEndpoint");
	ep_url = jstr(ep, "url");
	if (!ep_url || !*ep_url)
		goto out;
	if (!role || !*role || strcmp(role, "auto-assign") == 0)
		role = jstr(host, "suggested_role") && *jstr(host, "suggested_role") &&
				       strcmp(jstr(host, "suggested_role"), "auto-assign") != 0
			       ? jstr(host, "suggested_role") : "worker";
	if (strcmp(role, "bootstrap") == 0)
		role = "master";
	snprintf(url, url_size, "%s%s%s", ep_url, ep_url[strlen(ep_url) - 1] == '/' ? "" : "/", role);
	ref = json_object_get(ep, "caCertificateReference");
	if (!jstr(ref, "name") || !k_secret ||
	    kube_get(h->api, k_secret, jstr(ref, "namespace") && *jstr(ref, "namespace") ? jstr(ref, "namespace") : ns,
		     jstr(ref, "name"), &sec, &err) < 0)
		goto out;
	b64 = jstr(json_object_get(sec, "data"), "tls.crt");
	if (b64) {
		unsigned char *pem = NULL;
		size_t n = 0;

		if (util_base64_decode(b64, strlen(b64), &pem, &n) == 0) {
			*ret_ca = strndup((const char *)pem, n);
			free(pem);
		}
	}
out:
	json_decref(sec);
	json_decref(aci);
	json_decref(cd);
}

/* Day-2 hosts in known, insufficient or pending-for-input also check that
 * they can fetch their ignition from the spoke's API (backend.md §7.4,
 * api-vip-connectivity-check), which ignition-downloadable needs. */
static void add_api_vip_check(struct hub *h, const json_t *agent, json_t *steps, const json_t *host,
			      const json_t *cluster)
{
	static const char *const states[] = { "known", "insufficient", "pending-for-input", NULL };
	const char *st = jstr(host, "status"), *const *s;
	json_t *list = json_object_get(steps, "instructions"), *step;
	char id[64], url[512], hex[9];
	char *arg;
	size_t i;

	if (!cluster || !json_is_array(list) || !jstr(host, "kind") ||
	    strcmp(jstr(host, "kind"), "AddToExistingClusterHost") != 0 || !st)
		return;
	for (s = states; *s && strcmp(*s, st) != 0; s++)
		;
	if (!*s)
		return;
	json_array_foreach(list, i, step)
		if (jstr(step, "step_type") && strcmp(jstr(step, "step_type"), "api-vip-connectivity-check") == 0)
			return;
	if (util_random_hex(hex, 4) < 0)
		return;
	snprintf(id, sizeof(id), "api-vip-connectivity-check-%s", hex);
	snprintf(url, sizeof(url), "http://api.%s.%s:22624/config/worker", jstr(cluster, "name") ? jstr(cluster, "name") : "",
		 jstr(cluster, "base_dns_domain") ? jstr(cluster, "base_dns_domain") : "");
	{
		/* The Agent's ignitionEndpointTokenReference goes to the host
		 * here (as upstream), for fetching its pointer ignition. */
		char *token = NULL;
		json_t *a;

		char *ca = NULL;

		ignition_endpoint_of(h, host, url, sizeof(url), &ca);
		hub_host_ignition_token(h, agent, &token);
		a = host_api_vip_check_request(token, url, ca);
		free(ca);
		if (token) {
			OPENSSL_cleanse(token, strlen(token));
			free(token);
		}
		arg = a ? json_dumps(a, JSON_COMPACT) : NULL;
		json_decref(a);
	}
	if (arg)
		json_array_append_new(list, json_pack("{s:s,s:s,s:[s]}", "step_type", "api-vip-connectivity-check",
						      "step_id", id, "args", arg));
	free(arg);
}

static enum http_result do_instructions(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	json_t *agent = NULL, *host = NULL, *steps;
	struct steps_ctx sctx = { 0 };
	enum http_result res;

	struct host_cluster hc;
	long long ts = 0;
	uint64_t gen = 0;

	/* The host's clock (?timestamp=<unix s>) for time-synced-between-host-and-service. */
	if (http_query(req, "timestamp")) {
		char *end;

		ts = strtoll(http_query(req, "timestamp"), &end, 10);
		if (*end || ts <= 0)
			ts = 0;
	}
	sctx.infra_env_id = jstr(json_object_get(ie, "metadata"), "uid");
	if (hub_quick_poll(h, ie, host_id, &sctx, ts, &steps)) {
		res = http_reply_json(req, 200, steps);
		json_decref(steps);
		return res;
	}
	if (load_host(h, ie, host_id, &agent, &host) < 0)
		return hub_reply_error(req, 404, "host %s not found", host_id);
	if (ts > 0) {
		json_object_set_new(host, "timestamp", json_integer(ts));
		hub_save_facts(h, ie, host_id, host);
	}
	gen = hub_host_facts_gen(h, jstr(json_object_get(ie, "metadata"), "namespace"), host_id);
	hub_host_cluster_load(h, agent, host, &hc);
	hub_host_pass_in(h, agent, host, true, &hc);
	if (!hc.cluster)
		hub_quick_poll_arm(h, jstr(json_object_get(ie, "metadata"), "namespace"), host_id, agent, host, gen);
	sctx.cluster = hc.cluster;
	sctx.cluster_hosts = hc.hosts;
	sctx.infra_env_id = jstr(json_object_get(ie, "metadata"), "uid");
	sctx.installer_image = INSTALLER_IMAGE;
	sctx.controller_image = CONTROLLER_IMAGE;
	steps = host_next_steps(host, jstr(host, "kind") && strcmp(jstr(host, "kind"), "AddToExistingClusterHost") == 0,
				&sctx);
	add_api_vip_check(h, agent, steps, host, hc.cluster);
	hub_host_cluster_release(&hc);
	res = http_reply_json(req, 200, steps);
	json_decref(steps);
	json_decref(host);
	json_decref(agent);
	return res;
}

/* models/step_type.go: the step types an agent may reply to. */
#define STEP_TYPES_TEXT                                                                                  \
	"connectivity-check execute inventory install free-network-addresses dhcp-lease-allocate "     \
	"api-vip-connectivity-check tang-connectivity-check verify-vips ntp-synchronizer "              \
	"installation-disk-speed-check container-image-availability domain-resolution stop-installation " \
	"logs-gather next-step-runner upgrade-agent download-boot-artifacts reboot-for-reclaim"

static bool step_type_known(const char *t)
{
	static const char all[] = STEP_TYPES_TEXT;
	const char *p = all;
	size_t n;

	if (!t || !*t || strchr(t, ' '))
		return false;
	n = strlen(t);
	while ((p = strstr(p, t))) {
		if ((p == all || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
		p += n;
	}
	return false;
}

static enum http_result do_step_reply(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	json_t *agent = NULL, *host = NULL, *body = NULL, *old_images;
	struct host_cluster hc;
	bool media_was;
	enum http_result res;
	ah_err err;
	int r;

	if (parse_json_body(req, &body) < 0 || !json_is_object(body))
		return hub_reply_error(req, 400, "invalid step reply: expected a JSON object");
	if (!step_type_known(jstr(body, "step_type"))) {
		res = hub_reply_error(req, 400, "step_type in body should be one of [%s]: \"%s\"", STEP_TYPES_TEXT,
				      jstr(body, "step_type") ? jstr(body, "step_type") : "");
		json_decref(body);
		return res;
	}
	if (load_host(h, ie, host_id, &agent, &host) < 0) {
		json_decref(body);
		return hub_reply_error(req, 404, "host %s not found", host_id);
	}
	hub_host_cluster_load(h, agent, host, &hc);
	old_images = json_incref(json_object_get(host, "images_status"));
	media_was = jstr(host, "media_status") && strcmp(jstr(host, "media_status"), "disconnected") == 0;
	r = host_apply_step_reply_cluster(host, body, hc.cluster, &err);
	if (r == 0)
		am_step_reply(body, old_images);
	json_decref(old_images);
	/* A day-2 host's view of the spoke API (ignition-downloadable). */
	if (r == 0 && jstr(body, "step_type") && strcmp(jstr(body, "step_type"), "api-vip-connectivity-check") == 0 &&
	    json_integer_value(json_object_get(body, "exit_code")) == 0 && jstr(body, "output")) {
		json_t *out = json_loads(jstr(body, "output"), 0, NULL);

		if (json_is_object(out))
			json_object_set_new(host, "api_vip_connectivity", out);
		else
			json_decref(out);
	}
	/* verify-vips: the verdicts belong to the cluster (its record, which
	 * the cluster controller carries over while the VIPs are unchanged);
	 * written only when one changes, again over a concurrent write, and
	 * the controller's next pass re-evaluates api-vips-valid /
	 * ingress-vips-valid with them. */
	if (r == 0 && hc.cluster && jstr(hc.cluster, "id") && jstr(body, "step_type") &&
	    strcmp(jstr(body, "step_type"), "verify-vips") == 0) {
		char cdns[256], cdname[256];
		int attempt;

		for (attempt = 0; attempt < 8; attempt++) {
			struct text_render tr = { NULL };
			store_obj *so = NULL;
			json_t *st = NULL;
			int n = 0, u = -ENOENT;

			if (store_get(h->store, CLUSTERSTATE_RESOURCE, "", jstr(hc.cluster, "id"), &so) == 0)
				st = json_loadb(so->json, so->len, 0, NULL);
			if (st)
				n = host_apply_verify_vips_reply(st, body, &err);
			if (n > 0 && (tr.text = json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS)))
				u = hub_record_put(h->store, CLUSTERSTATE_RESOURCE, "", jstr(hc.cluster, "id"), so->rev,
						   tr.text);
			free(tr.text);
			json_decref(st);
			store_obj_free(so);
			if (u == 0 && jstr(host, "bound_cd") &&
			    sscanf(jstr(host, "bound_cd"), "%255[^/]/%255s", cdns, cdname) == 2)
				rt_enqueue(h->c_cd, cdns, cdname);
			if (u != -ESTALE)
				break;
		}
	}
	json_decref(body);
	if (r < 0) {
		hub_host_cluster_release(&hc);
		json_decref(host);
		json_decref(agent);
		return hub_reply_error(req, 400, "%s", err.message);
	}
	hub_save_facts(h, ie, host_id, host);
	/* The media went away (exit code 256): upstream's event comes before
	 * the status change it causes. */
	if (!media_was && jstr(host, "media_status") && strcmp(jstr(host, "media_status"), "disconnected") == 0)
		hub_host_media_event(h, agent, host);
	hub_host_pass_in(h, agent, host, true, &hc);
	hub_host_cluster_release(&hc);
	json_decref(host);
	json_decref(agent);
	return http_reply(req, 204, NULL, "", 0);
}

/* PUT .../hosts/{id}/progress (backend.md §6): the install stages.  A
 * report is never lost to a concurrent write of the Agent: on a conflict
 * it is applied again to the Agent as it is now. */
static enum http_result do_progress(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	json_t *agent = NULL, *host = NULL, *body = NULL, *prev = NULL;
	struct host_cluster hc = { 0 };
	bool changed = false;
	enum http_result res;
	int r = -ESTALE, attempt;
	ah_err err;

	if (parse_json_body(req, &body) < 0 || !json_is_object(body))
		return hub_reply_error(req, 400, "invalid progress: expected a JSON object");
	ah_err_clear(&err);
	for (attempt = 0; attempt < 8 && r == -ESTALE; attempt++) {
		json_decref(agent);
		json_decref(host);
		hub_host_cluster_release(&hc);
		agent = host = NULL;
		if (load_host(h, ie, host_id, &agent, &host) < 0) {
			json_decref(body);
			return hub_reply_error(req, 404, "host %s not found", host_id);
		}
		hub_host_cluster_load(h, agent, host, &hc);
		json_decref(prev);
		prev = json_incref(json_object_get(host, "progress"));
		r = host_progress_changed(host, body, hc.cluster, time(NULL), &changed, &err);
		if (r == 0)
			r = hub_host_pass_in(h, agent, host, false, &hc) == -ESTALE ? -ESTALE : 0;
	}
	if (r < 0 && r != -ESTALE) {
		log_debug("agent API: progress of host %s refused: %s", host_id, err.message);
		res = hub_reply_error(req, err.status ? (unsigned)err.status : 400, "%s", err.message);
	} else if (r == -ESTALE) {
		res = hub_reply_error(req, 503, "host %s is being updated, try again", host_id);
	} else {
		if (changed || !json_equal(json_object_get(prev, "progress_info"),
					   json_object_get(json_object_get(host, "progress"), "progress_info")))
			hub_host_progress_event(h, agent, host);
		if (changed) {
			am_host_stage_changed(prev, host, time(NULL));
		}
		res = http_reply_json(req, 200, host);
	}
	hub_host_cluster_release(&hc);
	json_decref(prev);
	json_decref(body);
	json_decref(host);
	json_decref(agent);
	return res;
}

/* What v2GetHost always carries: the cluster_id of a bound host (the host
 * model holds only a "bound" mark until its cluster is loaded), and the
 * fields upstream's swagger marks as always present (kind, status,
 * status_info, progress_stages), empty rather than missing. */
static void get_host_cluster_and_required(struct hub *h, const json_t *agent, json_t *host, json_t *out)
{
	const char *cid = jstr(host, "cluster_id");

	if (cid && *cid && strcmp(cid, "bound") != 0) {
		json_object_set_new(out, "cluster_id", json_string(cid));
	} else if (hub_host_is_bound(host)) {
		struct host_cluster hc;

		hub_host_cluster_load(h, agent, host, &hc);
		if (hc.cluster && jstr(hc.cluster, "id"))
			json_object_set_new(out, "cluster_id", json_string(jstr(hc.cluster, "id")));
		hub_host_cluster_release(&hc);
	}
	if (!json_object_get(out, "kind"))
		json_object_set_new(out, "kind", json_string("Host"));
	if (!json_object_get(out, "status"))
		json_object_set_new(out, "status", json_string(""));
	if (!json_object_get(out, "status_info"))
		json_object_set_new(out, "status_info", json_string(""));
	if (json_is_array(json_object_get(host, "progress_stages")))
		json_object_set(out, "progress_stages", json_object_get(host, "progress_stages"));
	else
		json_object_set_new(out, "progress_stages", json_array());
}

/* v2GetHost: the host as the service sees it (its state, role, progress),
 * for an agent or a person watching it (the simulator's --reboot-after). */
static enum http_result do_get_host(struct hub *h, struct http_req *req, const json_t *ie, const char *host_id)
{
	static const char *const keys[] = { "id", "infra_env_id", "kind", "status", "status_info", "role",
					    "suggested_role", "bootstrap", "requested_hostname",
					    "installation_disk_id", "checked_in_at", "status_updated_at", NULL };
	json_t *agent = NULL, *host = NULL, *out;
	const json_t *prog;
	enum http_result res;
	char href[256];

	/* Looking is not checking in: the host's lease is left as it is. */
	if (load_host_use(h, ie, host_id, &agent, &host, LEASE_KEEP) < 0)
		return hub_reply_error(req, 404, "Host %s not found in infra-env %s", host_id,
				 jstr(json_object_get(ie, "metadata"), "uid"));
	out = json_object();
	for (const char *const *k = keys; *k; k++)
		if (json_object_get(host, *k))
			json_object_set(out, *k, json_object_get(host, *k));
	get_host_cluster_and_required(h, agent, host, out);
	prog = json_object_get(host, "progress");
	if (json_is_object(prog))
		json_object_set_new(out, "progress",
				    json_pack("{s:s,s:I}", "current_stage",
					      jstr(prog, "current_stage") ? jstr(prog, "current_stage") : "",
					      "installation_percentage",
					      (json_int_t)json_integer_value(json_object_get(prog, "installation_percentage"))));
	snprintf(href, sizeof(href), API_PREFIX "/infra-envs/%s/hosts/%s", jstr(json_object_get(ie, "metadata"), "uid"),
		 host_id);
	json_object_set_new(out, "href", json_string(href));
	res = http_reply_json(req, 200, out);
	json_decref(out);
	json_decref(host);
	json_decref(agent);
	return res;
}

/* --- dispatch -------------------------------------------------------------------- */

/* What every agent API call does before its endpoint runs: the body bound,
 * the path's ids, the caller's token for that InfraEnv, no NUL in the
 * query, and (with_host) the host id a UUID.  true with *ret_ie (and
 * host_id filled), or false with the reply queued in *res. */
static bool prelude(struct hub *h, struct http_req *req, bool with_host, json_t **ret_ie, char host_id[64],
		    enum http_result *res)
{
	const char *p = req->path + strlen(API_PREFIX);
	char ie_id[64], hid[64];
	int n;

	*ret_ie = NULL;
	if (req->too_big) {
		*res = hub_reply_error(req, 413, "request body too large");
		return false;
	}
	ie_id[0] = hid[0] = '\0';
	n = sscanf(p, "/infra-envs/%63[^/]/hosts/%63[^/]", ie_id, hid);
	if (n < 1 || (with_host && n < 2)) {
		*res = hub_reply_error(req, 404, "path %s not found", req->path);
		return false;
	}
	if (auth_infraenv(h, req, ie_id, ret_ie, res) < 0)
		return false;
	if (http_query_nul(req)) {
		*res = hub_reply_error(req, 400, "%s in query must not hold a NUL byte", http_query_nul(req));
		goto fail;
	}
	/* As go-openapi: the path's ids are UUIDs, or 400 naming the one. */
	if (with_host && !util_is_uuid(hid)) {
		*res = hub_reply_error(req, 400, "host_id in path must be of type uuid: \"%s\"", hid);
		goto fail;
	}
	if (host_id)
		snprintf(host_id, 64, "%s", hid);
	return true;
fail:
	json_decref(*ret_ie);
	*ret_ie = NULL;
	return false;
}

typedef enum http_result (*host_endpoint)(struct hub *h, struct http_req *req, const json_t *ie,
					  const char *host_id);

static enum http_result with_host(void *cls, struct http_req *req, host_endpoint fn)
{
	char host_id[64];
	enum http_result res;
	json_t *ie;

	if (!prelude(cls, req, true, &ie, host_id, &res))
		return res;
	res = fn(cls, req, ie, host_id);
	json_decref(ie);
	return res;
}

static enum http_result route_register(void *cls, struct http_req *req)
{
	enum http_result res;
	json_t *ie;

	if (!prelude(cls, req, false, &ie, NULL, &res))
		return res;
	res = do_register(cls, req, ie);
	json_decref(ie);
	return res;
}

static enum http_result route_instructions(void *cls, struct http_req *req)
{
	return with_host(cls, req, do_instructions);
}

static enum http_result route_step_reply(void *cls, struct http_req *req)
{
	return with_host(cls, req, do_step_reply);
}

static enum http_result route_progress(void *cls, struct http_req *req)
{
	return with_host(cls, req, do_progress);
}

static enum http_result route_get_host(void *cls, struct http_req *req)
{
	return with_host(cls, req, do_get_host);
}

/* Any other path or method under the prefix: 404, after the same checks
 * (a caller without the InfraEnv's token learns nothing of its paths). */
static enum http_result route_other(void *cls, struct http_req *req)
{
	enum http_result res;
	json_t *ie;

	if (!prelude(cls, req, false, &ie, NULL, &res))
		return res;
	json_decref(ie);
	return hub_reply_error(req, 404, "path %s not found", req->path);
}

int hub_agentapi_routes(struct hub *h, struct http_router *r)
{
	static const struct {
		const char *method, *pattern;
		http_route_fn fn;
	} routes[] = {
		{ "POST", API_PREFIX "/infra-envs/*/hosts", route_register },
		{ "GET", API_PREFIX "/infra-envs/*/hosts/*/instructions", route_instructions },
		{ "POST", API_PREFIX "/infra-envs/*/hosts/*/instructions", route_step_reply },
		{ "PUT", API_PREFIX "/infra-envs/*/hosts/*/progress", route_progress },
		{ "GET", API_PREFIX "/infra-envs/*/hosts/*", route_get_host },
		{ NULL, API_PREFIX "/**", route_other },
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int e = http_router_add(r, routes[i].method, routes[i].pattern, routes[i].fn, h);

		if (e < 0)
			return e;
	}
	return 0;
}
