/* hub.c - the hub's set-up, its look-ups and the controller loop; see hub.h.
 *
 * The controller loop follows the store's event log (the same one watches
 * read), queues the InfraEnvs an event concerns, and reconciles each: a
 * level-triggered loop that writes only what differs, so its own writes
 * come back as events that reconcile to nothing. */
#include "hub-internal.h"

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

/* --- OS images ------------------------------------------------------------ */

static int load_os_images(struct hub *h, ah_err *err)
{
	json_error_t jerr;
	json_t *list, *e;
	size_t i;

	if (!h->cfg.os_images_file) {
		h->os_images = calloc(1, sizeof(*h->os_images));
		if (!h->os_images)
			return -ENOMEM;
		h->os_images[0].openshift_version = strdup("4.19");
		h->os_images[0].cpu_architecture = strdup("x86_64");
		h->os_images[0].url = strdup(h->default_iso ? h->default_iso : "");
		h->os_images[0].version = strdup("419.96.202510010000-0");
		h->n_os_images = 1;
		return hub_os_images_start(h, err);
	}
	list = json_load_file(h->cfg.os_images_file, 0, &jerr);
	if (!json_is_array(list) || json_array_size(list) == 0) {
		json_decref(list);
		return ah_err_set(err, EINVAL, 0, "", "--os-images %s: expected a non-empty JSON array: %s",
				  h->cfg.os_images_file, jerr.text);
	}
	h->os_images = calloc(json_array_size(list), sizeof(*h->os_images));
	if (!h->os_images) {
		json_decref(list);
		return -ENOMEM;
	}
	json_array_foreach(list, i, e) {
		const char *keys[] = { "openshift_version", "cpu_architecture", "url", "version" };
		size_t k;

		for (k = 0; k < 4; k++) {
			if (!jstr(e, keys[k]) || !*jstr(e, keys[k])) {
				json_decref(list);
				return ah_err_set(err, EINVAL, 0, "",
						  "--os-images %s: entry %zu has no \"%s\"", h->cfg.os_images_file,
						  i, keys[k]);
			}
		}
		/* Besides local paths, http(s) URLs are downloaded once (osimages.c). */
		if (strstr(jstr(e, "url"), "://") && strncmp(jstr(e, "url"), "file://", 7) != 0 &&
		    strncmp(jstr(e, "url"), "http://", 7) != 0 && strncmp(jstr(e, "url"), "https://", 8) != 0) {
			json_decref(list);
			return ah_err_set(err, EINVAL, 0, "",
					  "--os-images %s: entry %zu: \"url\" must be a local path or a file, http or https URL",
					  h->cfg.os_images_file, i);
		}
		h->os_images[i].openshift_version = strdup(jstr(e, "openshift_version"));
		h->os_images[i].cpu_architecture = strdup(jstr(e, "cpu_architecture"));
		h->os_images[i].url = strdup(strncmp(jstr(e, "url"), "file://", 7) == 0 ?
					     jstr(e, "url") + 7 : jstr(e, "url"));
		h->os_images[i].version = strdup(jstr(e, "version"));
		h->n_os_images++;
	}
	json_decref(list);
	return hub_os_images_start(h, err);
}

/* Compare dotted versions numerically ("4.10" > "4.9"). */
static int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		while (*a && (*a < '0' || *a > '9'))
			a++;
		while (*b && (*b < '0' || *b > '9'))
			b++;
	}
	return 0;
}

const struct os_image *hub_pick_os_image(struct hub *h, const char *version, const char *arch)
{
	const struct os_image *best = NULL;
	size_t i;

	if (!arch || !*arch)
		arch = "x86_64";
	if (strcmp(arch, "arm64") == 0)
		arch = "aarch64";
	for (i = 0; i < h->n_os_images; i++) {
		const struct os_image *o = &h->os_images[i];

		if (strcmp(o->cpu_architecture, arch) != 0)
			continue;
		if (version && *version) {
			if (strcmp(o->version, version) == 0 || strcmp(o->openshift_version, version) == 0)
				return o;
			continue;
		}
		if (!best || version_cmp(o->openshift_version, best->openshift_version) > 0)
			best = o;
	}
	return best;
}

/* --- look-ups -------------------------------------------------------------- */

struct find_ctx {
	const char *uid;
	json_t *found;
};

static int find_visit(const store_obj *so, void *userdata)
{
	struct find_ctx *fc = userdata;
	char needle[80];

	snprintf(needle, sizeof(needle), "\"uid\":\"%s\"", fc->uid);
	if (!strstr(so->json, needle))
		return 0;
	fc->found = json_loadb(so->json, so->len, 0, NULL);
	if (fc->found && strcmp(json_string_value(json_object_get(json_object_get(fc->found, "metadata"), "uid")) ?
				json_string_value(json_object_get(json_object_get(fc->found, "metadata"), "uid")) : "", fc->uid) != 0) {
		json_decref(fc->found);
		fc->found = NULL;
		return 0;
	}
	return 1;
}

/* The infra-env id of an InfraEnv is its metadata.uid: unique, immutable,
 * and known to the object itself. */
int hub_find_infraenv(struct hub *h, const char *infra_env_id, json_t **ret)
{
	struct find_ctx fc = { .uid = infra_env_id };
	const char *key = NULL;
	char ns[256], name[256];
	store_obj *so = NULL;
	int r;

	if (!infra_env_id || strlen(infra_env_id) != 36)
		return -ENOENT;
	/* Every agent request names its infra-env: remember where each uid
	 * lives so that a lookup is one read, not a scan of all InfraEnvs.
	 * The uid is checked on every hit (a deleted and recreated InfraEnv
	 * has a new one), and a miss falls back to the scan. */
	pthread_mutex_lock(&h->ie_lock);
	key = json_string_value(json_object_get(h->ie_by_uid, infra_env_id));
	if (key && sscanf(key, "%255[^/]/%255s", ns, name) != 2)
		key = NULL;
	pthread_mutex_unlock(&h->ie_lock);
	if (key && store_get(h->store, h->k_infraenv->store_key, ns, name, &so) == 0) {
		if (find_visit(so, &fc) == 1) {
			store_obj_free(so);
			*ret = fc.found;
			return 0;
		}
		store_obj_free(so);
	}
	r = store_list(h->store, h->k_infraenv->store_key, NULL, NULL, NULL, find_visit, &fc, NULL);
	if (r < 0)
		return r;
	pthread_mutex_lock(&h->ie_lock);
	if (!fc.found) {
		json_object_del(h->ie_by_uid, infra_env_id);
	} else {
		const json_t *meta = json_object_get(fc.found, "metadata");
		char buf[520];

		if (json_object_size(h->ie_by_uid) >= 65536)
			json_object_clear(h->ie_by_uid);
		snprintf(buf, sizeof(buf), "%s/%s", json_string_value(json_object_get(meta, "namespace")),
			 json_string_value(json_object_get(meta, "name")));
		json_object_set_new(h->ie_by_uid, infra_env_id, json_string(buf));
	}
	pthread_mutex_unlock(&h->ie_lock);
	if (!fc.found)
		return -ENOENT;
	*ret = fc.found;
	return 0;
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
		{
			struct text_render tr = { text };

			r = !text ? -ENOMEM :
			    rev ? store_update(h->store, IMAGESTATE_RESOURCE, "", uid, rev, hub_render_text, &tr, NULL) :
				  store_create(h->store, IMAGESTATE_RESOURCE, "", uid, hub_render_text, &tr, NULL);
		}
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

int hub_build_ignition(struct hub *h, const json_t *ie, char **ret_ign, size_t *ret_len,
		       char ret_digest[65], ah_err *err)
{
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
static int start_controllers(struct hub *h)
{
	struct rt_options o = {
		.workers = 1,
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
		r = hub_classification_register(h);
	if (r == 0)
		r = hub_manifests_register(h);
	/* Hosts that stopped polling are found by a sweep (agentapi.c). */
	if (r == 0)
		r = rt_ticker(h->rt, 1000, sweep_disconnected, h);
	if (r == 0)
		r = rt_start(h->rt);
	if (r == 0 && h->os_init) {
		pthread_mutex_lock(&h->os_lock);
		h->controllers_running = true;
		pthread_mutex_unlock(&h->os_lock);
	}
	return r;
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
	h->ie_by_uid = json_object();
	pthread_mutex_init(&h->ie_lock, NULL);
	r = load_os_images(h, err);
	if (r == 0)
		r = jwt_keys_load_or_create(cfg->data_dir, &h->keys, err);
	if (r == 0)
		r = hub_admission_register(h, err);
	if (r == 0 && (r = start_controllers(h)) < 0)
		r = ah_err_set(err, -r, 500, "InternalError", "cannot start the controllers: %s", strerror(-r));
	if (r < 0) {
		hub_free(h);
		return r;
	}
	*ret = h;
	return 0;
}

void hub_free(struct hub *h)
{
	size_t i;

	if (!h)
		return;
	rt_free(h->rt);
	hub_leases_release(h);
	hub_os_images_stop(h);
	for (i = 0; i < h->n_os_images; i++) {
		free(h->os_images[i].openshift_version);
		free(h->os_images[i].cpu_architecture);
		free(h->os_images[i].url);
		free(h->os_images[i].version);
	}
	free(h->os_images);
	jwt_keys_free(h->keys);
	json_decref(h->ie_by_uid);
	pthread_mutex_destroy(&h->ie_lock);
	free(h->service_url);
	free(h->hub_ca_pem);
	free(h->default_iso);
	pthread_mutex_destroy(&h->lock);
	free(h);
}
