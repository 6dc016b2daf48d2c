/* hub.c - the hub's set-up, its look-ups and the controller loop; see hub.h.
 *
 * The controller loop follows the store's event log (the same one watches
 * read), queues the InfraEnvs an event concerns, and reconciles each: a
 * level-triggered loop that writes only what differs, so its own writes
 * come back as events that reconcile to nothing. */
#include "hub-internal.h"
#include "controllers/capi.h"
#include "controllers/leader.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/util.h"
#include "image/ignition.h"

int hub_parse_duration(const char *s, int *ret_seconds)
{
	long total = 0, n = 0;
	bool digits = false, any = false;
	const char *p;

	if (!s || !*s)
		return -EINVAL;
	for (p = s; *p; p++) {
		if (*p >= '0' && *p <= '9') {
			n = n * 10 + (*p - '0');
			digits = true;
			if (n > 100000000)
				return -EINVAL;
			continue;
		}
		if (!digits)
			return -EINVAL;
		switch (*p) {
		case 'h': total += n * 3600; break;
		case 'm': total += n * 60; break;
		case 's': total += n; break;
		default: return -EINVAL;
		}
		n = 0;
		digits = false;
		any = true;
	}
	if (digits)
		total += n; /* a bare number is seconds */
	else if (!any)
		return -EINVAL;
	if (total <= 0 || total > 30 * 24 * 3600)
		return -EINVAL;
	*ret_seconds = (int)total;
	return 0;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

const char *hub_norm_arch(const char *arch)
{
	if (!arch || !*arch || strcmp(arch, "amd64") == 0)
		return "x86_64";
	if (strcmp(arch, "aarch64") == 0)
		return "arm64";
	return arch;
}

/* --- look-ups -------------------------------------------------------------- */

static int first_visit(const char *ns, const char *name, void *ud)
{
	json_t *pair = json_pack("[ss]", ns, name);

	if (pair)
		json_array_append_new(ud, pair);
	return 1;
}

/* The InfraEnv the cache's uid index names, read from the store (fresh)
 * and checked: 0, -ENOENT, or another negative errno. */
static int infraenv_by_uid(struct hub *h, const char *uid, json_t **ret)
{
	json_t *pairs = json_array(), *ie = NULL;
	store_obj *so = NULL;
	int r;

	if (!pairs)
		return -ENOMEM;
	r = rt_cache_keys_by(h->rt, h->k_infraenv->store_key, HUB_IDX_UID, uid, first_visit, pairs);
	if (r >= 0 && json_array_size(pairs) == 0)
		r = -ENOENT;
	if (r >= 0)
		r = store_get(h->store, h->k_infraenv->store_key, json_string_value(json_array_get(json_array_get(pairs, 0), 0)),
			      json_string_value(json_array_get(json_array_get(pairs, 0), 1)), &so);
	json_decref(pairs);
	if (r < 0)
		return r;
	ie = json_loadb(so->json, so->len, 0, NULL);
	store_obj_free(so);
	/* Deleted and created again under the same name since the index saw it. */
	if (!ie || !jstr(json_object_get(ie, "metadata"), "uid") ||
	    strcmp(jstr(json_object_get(ie, "metadata"), "uid"), uid) != 0) {
		json_decref(ie);
		return -ENOENT;
	}
	*ret = ie;
	return 0;
}

/* The infra-env id of an InfraEnv is its metadata.uid: unique, immutable,
 * and known to the object itself.  Every agent request names one: it is
 * found through the runtime cache's uid index (records.h HUB_IDX_UID), one
 * store read, never a scan.  A miss waits (briefly) for the cache to take
 * the store's latest events, so an InfraEnv written a moment ago is found. */
int hub_find_infraenv(struct hub *h, const char *infra_env_id, json_t **ret)
{
	int r;

	if (!infra_env_id || strlen(infra_env_id) != 36)
		return -ENOENT;
	r = infraenv_by_uid(h, infra_env_id, ret);
	if (r == -ENOENT && rt_wait_synced(h->rt, 0, 1000) == 0)
		r = infraenv_by_uid(h, infra_env_id, ret);
	return r;
}

/* --- the per-InfraEnv image state (token, digest) --------------------------- */

char *hub_render_text(int64_t rev, size_t *ret_len, void *userdata)
{
	struct text_render *tr = userdata;
	char *s = strdup(tr->text);

	if (s)
		*ret_len = strlen(s);
	return s;
}

/* The InfraEnv's agent token: minted once and kept in the store, so the
 * token in every image stays the same across regenerations and restarts
 * (ECDSA signatures are not deterministic).  Rotation (README): a new
 * value of the annotation ANN_ROTATE_TOKEN mints a new token, and from
 * then on only that one is accepted (hub_infraenv_token_current).  The
 * record keeps the resourceVersion of the InfraEnv that asked, so a stale
 * copy of the InfraEnv (an older annotation) never rotates back. */
int hub_infraenv_token(struct hub *h, const json_t *infraenv, char **ret, ah_err *err)
{
	const json_t *meta = json_object_get(infraenv, "metadata");
	const char *uid = jstr(meta, "uid"), *want = jstr(json_object_get(meta, "annotations"), ANN_ROTATE_TOKEN);
	long long rv_now = jstr(meta, "resourceVersion") ? strtoll(jstr(meta, "resourceVersion"), NULL, 10) : 0;
	int attempt, r = -ESTALE;

	if (!uid)
		return ah_err_set(err, EINVAL, 500, "InternalError", "InfraEnv without uid");
	if (!want)
		want = "";
	for (attempt = 0; attempt < 8 && (r == -ESTALE || r == -EEXIST); attempt++) {
		store_obj *so = NULL;
		json_t *st = NULL, *claims;
		int64_t rev = 0;
		char *tok = NULL, *text;

		if (store_get(h->store, IMAGESTATE_RESOURCE, "", uid, &so) == 0) {
			st = json_loadb(so->json, so->len, 0, NULL);
			rev = so->rev;
			store_obj_free(so);
		}
		if (st && jstr(st, "token")) {
			const char *have = jstr(st, "rotation") ? jstr(st, "rotation") : "";

			if (strcmp(have, want) == 0 ||
			    rv_now <= (long long)json_integer_value(json_object_get(st, "rotation_rv"))) {
				*ret = strdup(jstr(st, "token"));
				json_decref(st);
				return *ret ? 0 : -ENOMEM;
			}
		}
		if (!st)
			st = json_object();
		claims = json_pack("{s:s}", "infra_env_id", uid);
		r = claims ? jwt_sign(h->keys, claims, &tok) : -ENOMEM;
		json_decref(claims);
		if (r < 0) {
			json_decref(st);
			return ah_err_set(err, r, 500, "InternalError", "signing the InfraEnv token failed");
		}
		json_object_set_new(st, "token", json_string(tok));
		json_object_set_new(st, "rotation", json_string(want));
		json_object_set_new(st, "rotation_rv", json_integer(rv_now));
		/* A new token is a new image at once: no regeneration cooldown. */
		json_object_del(st, "created");
		text = json_dumps(st, JSON_COMPACT);
		json_decref(st);
		r = hub_record_put(h->store, IMAGESTATE_RESOURCE, "", uid, rev, text);
		free(text);
		if (r == 0) {
			if (rev)
				log_info("InfraEnv %s/%s: agent token rotated; the previous one is refused from now on",
					 jstr(meta, "namespace"), jstr(meta, "name"));
			*ret = tok;
			return 0;
		}
		/* Another thread wrote it first: read theirs. */
		free(tok);
	}
	return ah_err_set(err, r, 500, "InternalError", "storing the InfraEnv token failed");
}

bool hub_infraenv_token_current(struct hub *h, const json_t *infraenv, const char *token)
{
	const char *uid = jstr(json_object_get(infraenv, "metadata"), "uid");
	store_obj *so = NULL;
	json_t *st;
	const char *cur;
	bool ok = true;

	if (!uid || !token)
		return false;
	if (store_get(h->store, IMAGESTATE_RESOURCE, "", uid, &so) < 0)
		return true; /* none minted yet: the signature and the InfraEnv suffice */
	st = json_loadb(so->json, so->len, 0, NULL);
	store_obj_free(so);
	cur = jstr(st, "token");
	if (cur)
		ok = strlen(cur) == strlen(token) && CRYPTO_memcmp(cur, token, strlen(cur)) == 0;
	json_decref(st);
	return ok;
}

static char *secret_value(struct hub *h, const char *ns, const char *name, const char *key, ah_err *err,
			  int *ret_r)
{
	json_t *sec = NULL;
	const char *b64;
	unsigned char *raw = NULL;
	size_t len;
	int r = kube_get(h->api, h->k_secret, ns, name, &sec, err);

	*ret_r = r;
	if (r < 0)
		return NULL;
	b64 = jstr(json_object_get(sec, "data"), key);
	if (!b64 || util_base64_decode(b64, strlen(b64), &raw, &len) < 0) {
		json_decref(sec);
		*ret_r = ah_err_set(err, ENOENT, 400, "BadRequest",
				    "secret %s/%s does not contain the key %s", ns, name, key);
		return NULL;
	}
	json_decref(sec);
	return (char *)raw;
}

/* The ironic agent's part of the discovery Ignition (§B.4): its
 * configuration file pointing at the hub's Ironic API and the unit that
 * runs it (the assisted agent then starts only when the deploy step says
 * so).  NULL unless the converged flow is on (the default) and the InfraEnv
 * carries enable-ironic-agent=true.  Malloc'd JSON text. */
#define IRONIC_AGENT_DEFAULT_IMAGE "quay.io/metal3-io/ironic-agent:latest"

static char *ironic_agent_override(struct hub *h, const json_t *ie, int *ret_r, ah_err *err)
{
	const json_t *ann = json_object_get(json_object_get(ie, "metadata"), "annotations");
	const char *image = jstr(ann, IRONIC_AGENT_IMAGE_OVERRIDE_ANN);
	char *conf = NULL, *data = NULL, *unit = NULL, *out = NULL;
	json_t *ign;

	*ret_r = 0;
	if (!h->cfg.converged_flow || !h->service_url || strcmp(jstr(ann, IRONIC_AGENT_ANN) ?: "", "true"))
		return NULL;
	if (!image || !*image)
		image = IRONIC_AGENT_DEFAULT_IMAGE;
	for (const char *c = image; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '%' || *c == '\\') {
			*ret_r = ah_err_set(err, EINVAL, 400, "BadRequest",
					    "annotation " IRONIC_AGENT_IMAGE_OVERRIDE_ANN ": not an image reference "
					    "(spaces, control characters, %% or \\ are not allowed)");
			return NULL;
		}
	if (strlen(image) > 1024) {
		*ret_r = ah_err_set(err, EINVAL, 400, "BadRequest",
				    "annotation " IRONIC_AGENT_IMAGE_OVERRIDE_ANN ": longer than 1024 characters");
		return NULL;
	}
	*ret_r = -ENOMEM;
	if (asprintf(&conf, "[DEFAULT]\napi_url = %s\ninsecure = True\nenable_vlan_interfaces = all\n",
		     h->service_url) < 0)
		return NULL;
	data = util_base64_encode(conf, strlen(conf));
	if (!data || asprintf(&unit, "[Unit]\nDescription=Ironic Agent\nAfter=network-online.target\nWants=network-online.target\n"
			    "[Service]\nTimeoutStartSec=0\nRestart=always\nExecStartPre=/bin/podman pull %s\n"
			    "ExecStart=/bin/podman run --privileged --network host --mount "
			    "type=bind,src=/etc/ironic-python-agent.conf,dst=/etc/ironic-python-agent/ignition.conf "
			    "--mount type=bind,src=/dev,dst=/dev --mount type=bind,src=/sys,dst=/sys "
			    "--mount type=bind,src=/run/dbus/system_bus_socket,dst=/run/dbus/system_bus_socket "
			    "--mount type=bind,src=/,dst=/mnt/coreos --env IPA_COREOS_IP_OPTIONS=ip=dhcp "
			    "--name ironic-agent %s\n[Install]\nWantedBy=multi-user.target\n",
		     image, image) < 0) {
		free(conf);
		free(data);
		return NULL;
	}
	{
		char src[8192];

		snprintf(src, sizeof(src), "data:text/plain;charset=utf-8;base64,%s", data);
		ign = json_pack("{s:{s:s},s:{s:[{s:s,s:i,s:b,s:{s:s}}]},s:{s:[{s:s,s:b,s:s}]}}",
				"ignition", "version", "3.2.0",
				"storage", "files", "path", "/etc/ironic-python-agent.conf", "mode", 0644,
				"overwrite", 1, "contents", "source", src,
				"systemd", "units", "name", "ironic-agent.service", "enabled", 1, "contents", unit);
	}
	if (ign)
		out = json_dumps(ign, JSON_COMPACT | JSON_SORT_KEYS);
	if (out)
		*ret_r = 0;
	json_decref(ign);
	free(conf);
	free(data);
	free(unit);
	return out;
}

int hub_build_ignition(struct hub *h, const json_t *ie, char **ret_ign, size_t *ret_len,
		       char ret_digest[65], ah_err *err)
{
	char *ironic = NULL;
	const json_t *spec = json_object_get(ie, "spec"), *meta = json_object_get(ie, "metadata");
	const json_t *proxy = json_object_get(spec, "proxy");
	const char *ns = jstr(meta, "namespace"), *psname = jstr(json_object_get(spec, "pullSecretRef"), "name");
	struct discovery_params p = { 0 };
	char *pull = NULL, *token = NULL, *ign = NULL;
	json_t *sn_files = NULL, *sn_units = NULL;
	size_t len = 0;
	int r;

	if (!psname || !*psname)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "Missing reference to pull secret");
	pull = secret_value(h, ns, psname, ".dockerconfigjson", err, &r);
	if (!pull) {
		if (r == -ENOENT && err->status == 404)
			ah_err_set(err, ENOENT, 400, "BadRequest", "failed to get pull secret for update: secrets \"%s\" not found",
				   psname);
		return r < 0 ? r : -EINVAL;
	}
	r = hub_infraenv_token(h, ie, &token, err);
	if (r < 0) {
		free(pull);
		return r;
	}
	p.service_base_url = h->service_url;
	p.infra_env_id = jstr(meta, "uid");
	p.agent_token = token;
	p.pull_secret = pull;
	p.ssh_authorized_key = jstr(spec, "sshAuthorizedKey");
	p.http_proxy = jstr(proxy, "httpProxy");
	p.https_proxy = jstr(proxy, "httpsProxy");
	p.no_proxy = jstr(proxy, "noProxy");
	p.additional_ntp_sources = json_object_get(spec, "additionalNTPSources");
	p.additional_trust_bundle = jstr(spec, "additionalTrustBundle");
	p.hub_ca_pem = h->hub_ca_pem;
	p.ignition_config_override = jstr(spec, "ignitionConfigOverride");
	p.internal_ignition_config_override = ironic = ironic_agent_override(h, ie, &r, err);
	if (r < 0) {
		free(pull);
		free(token);
		return r;
	}
	p.cpu_architecture = jstr(spec, "cpuArchitecture");
	p.os_image_version = jstr(spec, "osImageVersion");
	/* Static network from the selected NMStateConfigs (nmstate.c); too
	 * many for the embed area is the user's error, not a broken image. */
	r = hub_static_net_parts(h, ie, &sn_files, &sn_units, err);
	p.static_network_files = sn_files;
	p.static_network_units = sn_units;
	if (r == 0)
		r = ignition_build_discovery(&p, &ign, &len, err);
	if (r == 0 && sn_files && (r = hub_static_net_check_fit(h, ie, &p, ign, len, err)) < 0) {
		free(ign);
		ign = NULL;
	}
	free(pull);
	free(token);
	free(ironic);
	json_decref(sn_files);
	json_decref(sn_units);
	if (r < 0)
		return r;
	if (ret_digest) {
		unsigned char md[EVP_MAX_MD_SIZE];
		const struct os_image *os = hub_pick_os_image(h, p.os_image_version, p.cpu_architecture);
		EVP_MD_CTX *c = EVP_MD_CTX_new();
		unsigned mdlen = 0;
		int i;

		if (!c) {
			free(ign);
			return -ENOMEM;
		}
		EVP_DigestInit_ex(c, EVP_sha256(), NULL);
		EVP_DigestUpdate(c, ign, len);
		if (os) {
			EVP_DigestUpdate(c, os->version, strlen(os->version));
			EVP_DigestUpdate(c, os->url, strlen(os->url));
		}
		{
			char *kargs = json_dumps(json_object_get(spec, "kernelArguments"), JSON_COMPACT | JSON_ENCODE_ANY);

			if (kargs)
				EVP_DigestUpdate(c, kargs, strlen(kargs));
			free(kargs);
		}
		EVP_DigestFinal_ex(c, md, &mdlen);
		EVP_MD_CTX_free(c);
		for (i = 0; i < 32; i++)
			sprintf(ret_digest + 2 * i, "%02x", md[i]);
	}
	*ret_ign = ign;
	*ret_len = len;
	return 0;
}

/* --- the controllers ------------------------------------------------------- */

static void sweep_disconnected(void *ctx)
{
	double t0 = hm_now();

	hub_check_disconnected(ctx);
	am_monitor_pass(true, (hm_now() - t0) * 1000, 0);
}

/* Each controller file registers itself; this is the one list of them. */
/* standby: a replica that is not (yet) the leader keeps the runtime's
 * cache and indexes current, which the API handlers read, but runs no
 * reconcile and no ticker until leader_started() activates it. */
static int start_controllers(struct hub *h, bool standby)
{
	struct rt_options o = {
		.workers = 1,
		.standby = standby,
		/* Under a stream of writes one pass of the watch takes the
		 * events of several commits at once; reactions wait at most
		 * this long. */
		.min_pass_ms = 5,
	};
	int r = rt_new(h->store, &o, &h->rt);

	if (r == 0)
		r = hub_infraenv_register(h);
	if (r == 0)
		r = hub_agent_register(h);
	if (r == 0)
		r = hub_cluster_register(h);
	if (r == 0)
		r = hub_nmstate_register(h);
	if (r == 0)
		r = hub_osimages_register(h);
	if (r == 0)
		r = hub_spoke_register(h);
	if (r == 0)
		r = hub_records_register(h);
	if (r == 0)
		r = hub_bmh_register(h);
	/* The PPI controller first: it looks up the PreprovisioningImage kind
	 * BMAC watches in the converged flow. */
	if (r == 0)
		r = hub_ppi_register(h);
	if (r == 0)
		r = hub_bmac_register(h);
	if (r == 0)
		r = hub_classification_register(h);
	if (r == 0)
		r = hub_manifests_register(h);
	if (r == 0)
		r = hub_capi_cluster_register(h);
	if (r == 0)
		r = hub_capi_machine_register(h);
	if (r == 0)
		r = hub_capi_machineset_register(h);
	if (r == 0)
		r = hub_capm3_register(h);
	if (r == 0)
		r = hub_capoa_bootstrap_register(h);
	if (r == 0)
		r = hub_capoa_controlplane_register(h);
	/* Hosts that stopped polling are found by a sweep (agentapi.c). */
	if (r == 0)
		r = rt_ticker(h->rt, 1000, sweep_disconnected, h);
	if (r == 0)
		r = rt_start(h->rt);
	if (r == 0)
		hub_os_images_controllers_running(h);
	return r;
}

/* Leader election (cfg.leader_elect): the elector's thread lets the
 * controllers run once this replica holds the Lease.  Losing it ends the
 * process (as controller-runtime's manager does): a
 * replica that may no longer be the only one acting must stop at once; its
 * supervisor restarts it as a candidate. */
static void leader_started(void *ctx)
{
	struct hub *h = ctx;

	rt_activate(h->rt);
}

static void leader_lost(void *ctx)
{
	log_error("leader election lost: exiting so that the new leader runs the controllers alone");
	_exit(1);
}

int hub_new(struct kube_api *api, const struct hub_config *cfg, struct hub **ret, ah_err *err)
{
	struct hub *h = calloc(1, sizeof(*h));
	int r;

	if (!h)
		return -ENOMEM;
	h->api = api;
	h->store = kube_api_store(api);
	h->reg = kube_api_registry(api);
	h->cfg = *cfg;
	h->started_at = time(NULL);
	if (!h->cfg.host_disconnect_timeout_s)
		h->cfg.host_disconnect_timeout_s = 180;
	if (!h->cfg.image_cooldown_s)
		h->cfg.image_cooldown_s = 10;
	h->service_url = strdup(cfg->service_url ? cfg->service_url : "");
	h->hub_ca_pem = cfg->hub_ca_pem ? strdup(cfg->hub_ca_pem) : NULL;
	h->default_iso = cfg->default_iso ? strdup(cfg->default_iso) : NULL;
	h->k_infraenv = kube_registry_by_kind(h->reg, "agent-install.openshift.io/v1beta1", "InfraEnv");
	h->k_agent = kube_registry_by_kind(h->reg, "agent-install.openshift.io/v1beta1", "Agent");
	h->k_secret = kube_registry_by_kind(h->reg, "v1", "Secret");
	hub_cluster_init(h);
	pthread_mutex_init(&h->lock, NULL);
	r = hub_os_images_load(h, err);
	if (r == 0)
		r = hub_events_init(h, err);
	if (r == 0)
		r = jwt_keys_load_or_create(cfg->data_dir, &h->keys, err);
	if (r == 0)
		r = hub_admission_register(h, err);
	if (r == 0 && (r = start_controllers(h, h->cfg.leader_elect)) < 0)
		r = ah_err_set(err, -r, 500, "InternalError", "cannot start the controllers: %s", strerror(-r));
	if (r == 0 && h->cfg.leader_elect) {
		struct leader_config lc = {
			.ns = "kube-system", .name = "agenthub-controllers",
			.identity = cfg->leader_identity ? cfg->leader_identity : "agenthub",
			.started = leader_started, .lost = leader_lost, .ctx = h,
		};

		if ((r = leader_start(api, &lc, &h->leader)) < 0)
			r = ah_err_set(err, -r, 500, "InternalError", "cannot start leader election: %s",
				       strerror(-r));
	}
	if (r < 0) {
		hub_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

void hub_free(struct hub *h)
{
	if (!h)
		return;
	leader_stop(h->leader);
	rt_stop(h->rt);
	hub_bmh_stop(h);
	hub_capoa_bootstrap_stop(h);
	rt_free(h->rt);
	hub_records_free(h);
	hub_spoke_free(h);
	hub_leases_release(h);
	hub_os_images_free(h);
	jwt_keys_free(h->keys);
	hub_events_release(h);
	free(h->service_url);
	free(h->hub_ca_pem);
	free(h->default_iso);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
