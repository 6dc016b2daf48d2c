/* infraenv.c - the InfraEnv controller: the discovery image of each
 * InfraEnv, its URLs and the ImageCreated condition (kubeapi.md §4.1, §2.4).
 *
 * The image is regenerated only when its inputs change (the ignition's
 * content, the OS image, the kernel arguments): a digest of them is kept in
 * the hub's private image-state record, and the ISO URL (and createdTime)
 * move only with it.  Labels and annotations are not inputs.
 *
 * An image is only announced when the image service can serve it: its OS
 * image is on disk (a remote one may still be downloading, osimages.c) and
 * the Ignition payload fits the ISO's embed area, checked on every
 * generation; otherwise ImageCreated is False and the URL is withdrawn. */
#include "hub-internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/cluster.h"
#include "assisted/host.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "base/util.h"
#include "image/iso.h"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* Read/modify the image-state record {token, digest, created, url}. */
static json_t *imagestate_get(struct hub *h, const char *uid, int64_t *ret_rev)
{
	store_obj *so = NULL;
	json_t *st = NULL;

	*ret_rev = 0;
	if (store_get(h->store, IMAGESTATE_RESOURCE, "", uid, &so) == 0) {
		st = json_loadb(so->json, so->len, 0, NULL);
		*ret_rev = so->rev;
		store_obj_free(so);
	}
	return st ? st : json_object();
}

static int imagestate_put(struct hub *h, const char *uid, json_t *st, int64_t rev)
{
	struct text_render tr = { json_dumps(st, JSON_COMPACT) };
	int r;

	if (!tr.text)
		return -ENOMEM;
	r = hub_record_put(h->store, IMAGESTATE_RESOURCE, "", uid, rev, tr.text);
	free(tr.text);
	return r;
}

/* Build a conditionsv1 condition, keeping lastTransitionTime unless the
 * status flips. */
static json_t *condition(const json_t *old_conds, const char *type, const char *status,
			 const char *reason, const char *message)
{
	const char *ltt = NULL;
	char now[32];
	json_t *c;
	size_t i;

	util_now_rfc3339(now, sizeof(now));
	json_array_foreach(old_conds, i, c) {
		if (jstr(c, "type") && strcmp(jstr(c, "type"), type) == 0 && jstr(c, "status") &&
		    strcmp(jstr(c, "status"), status) == 0)
			ltt = jstr(c, "lastTransitionTime");
	}
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:n}", "type", type, "status", status, "reason", reason,
			 "message", message, "lastTransitionTime", ltt ? ltt : now, "lastHeartbeatTime");
}

static void put_condition(json_t *status, json_t *cond)
{
	json_t *conds = json_object_get(status, "conditions"), *c, *out = json_array();
	size_t i;
	bool placed = false;

	json_array_foreach(conds, i, c) {
		if (strcmp(jstr(c, "type") ? jstr(c, "type") : "", jstr(cond, "type")) == 0) {
			json_array_append(out, cond);
			placed = true;
		} else {
			json_array_append(out, c);
		}
	}
	if (!placed)
		json_array_append(out, cond);
	json_decref(cond);
	json_object_set_new(status, "conditions", out);
}

/* In the merge patch p (a copy of the new object), null each field of old
 * that went away, at any depth of objects (a merge patch keeps what it does
 * not name). */
static void null_removed(json_t *p, const json_t *old)
{
	const char *k;
	json_t *v, *pv;

	json_object_foreach((json_t *)old, k, v) {
		pv = json_object_get(p, k);
		if (!pv)
			json_object_set_new(p, k, json_null());
		else if (json_is_object(pv) && json_is_object(v))
			null_removed(pv, v);
	}
}

/* A merge patch from old_status to status. */
static int patch_status(struct hub *h, const char *ns, const char *name, json_t *status,
			const json_t *old_status)
{
	struct kube_opts o = { .status = true };
	json_t *patch = json_pack("{s:o}", "status", json_deep_copy(status)), *ret = NULL;
	ah_err err;
	int r;

	if (json_is_object(old_status))
		null_removed(json_object_get(patch, "status"), old_status);
	r = kube_patch(h->api, h->k_infraenv, ns, name, "application/merge-patch+json", patch, &o, &ret,
		       &err);
	if (r < 0 && r != -ENOENT)
		log_warn("infraenv %s/%s: status update: %s", ns, name, err.message);
	json_decref(patch);
	json_decref(ret);
	return r;
}

static int set_finalizer(struct hub *h, const json_t *ie, bool present)
{
	const json_t *meta = json_object_get(ie, "metadata");
	json_t *fins = json_object_get(meta, "finalizers"), *f, *out = json_array(), *patch, *ret = NULL;
	bool has = false;
	ah_err err;
	size_t i;
	int r;

	json_array_foreach(fins, i, f) {
		if (json_string_value(f) && strcmp(json_string_value(f), FINALIZER_INFRAENV) == 0)
			has = true;
		else
			json_array_append(out, f);
	}
	if (has == present) {
		json_decref(out);
		return 0;
	}
	if (present)
		json_array_append_new(out, json_string(FINALIZER_INFRAENV));
	/* The resourceVersion makes this a compare-and-swap on the list. */
	patch = json_pack("{s:{s:o,s:O}}", "metadata", "finalizers", out, "resourceVersion",
			  json_object_get(meta, "resourceVersion"));
	r = kube_patch(h->api, h->k_infraenv, jstr(meta, "namespace"), jstr(meta, "name"),
		       "application/merge-patch+json", patch, NULL, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	return r;
}

static void url_for(struct hub *h, char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void url_for(struct hub *h, char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, size, "%s", h->service_url);

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < size)
		vsnprintf(buf + n, size - (size_t)n, fmt, ap);
	va_end(ap);
}

json_t *hub_boot_artifacts(struct hub *h, const json_t *ie, const struct os_image *os, const char *token)
{
	const json_t *spec = json_object_get(ie, "spec");
	const char *uid = jstr(json_object_get(ie, "metadata"), "uid"), *type = jstr(spec, "ipxeScriptType");
	json_t *ba = json_object();
	char buf[4096];

	if (!ba)
		return NULL;
	url_for(h, buf, sizeof(buf), "/boot-artifacts/kernel?arch=%s&version=%s", os->cpu_architecture,
		os->openshift_version);
	json_object_set_new(ba, "kernel", json_string(buf));
	url_for(h, buf, sizeof(buf), "/boot-artifacts/rootfs?arch=%s&version=%s", os->cpu_architecture,
		os->openshift_version);
	json_object_set_new(ba, "rootfs", json_string(buf));
	{
		/* The initrd carries the ignition as the ISO does: a new image
		 * is a new initrd URL too (the digest's prefix, as the ISO's). */
		int64_t rev = 0;
		json_t *st = uid ? imagestate_get(h, uid, &rev) : NULL;
		const char *digest = jstr(st, "digest");

		url_for(h, buf, sizeof(buf), "/images/%s/pxe-initrd?api_key=%s&arch=%s&version=%s%s%.12s", uid ? uid : "",
			token, os->cpu_architecture, os->openshift_version, digest ? "&digest=" : "",
			digest ? digest : "");
		json_decref(st);
	}
	json_object_set_new(ba, "initrd", json_string(buf));
	url_for(h, buf, sizeof(buf), API_PREFIX "/infra-envs/%s/downloads/files?api_key=%s&file_name=ipxe-script%s",
		uid, token, type && strcmp(type, "BootOrderControl") == 0 ? "&ipxe_script_type=boot-order-control" : "");
	json_object_set_new(ba, "ipxeScript", json_string(buf));
	url_for(h, buf, sizeof(buf), API_PREFIX "/infra-envs/%s/downloads/files?api_key=%s&file_name=discovery.ign",
		uid, token);
	json_object_set_new(ba, "discoveryIgnitionURL", json_string(buf));
	return ba;
}

/* What the image service needs beyond a valid ignition: the OS image on
 * disk, and a payload that fits its embed area.  Checked on every
 * generation (upstream checks the size only when the override changes,
 * and a too large static network config then fails at download).
 * static_plen: the payload length hub_build_ignition() already measured
 * for its static-network check (which names how many NMStateConfigs fit),
 * or 0: gzipping a 10,000-host payload again would cost as much as that
 * check. */
static int image_servable(struct hub *h, const struct os_image *os, const char *ign, size_t len,
			  size_t static_plen, ah_err *err)
{
	unsigned char *payload = NULL;
	uint64_t area = 0;
	size_t plen = static_plen;
	char msg[2048];
	int r = hub_os_image_ready(h, os, &area, msg, sizeof(msg));

	if (r < 0)
		return ah_err_set(err, EAGAIN, 503, "ServiceUnavailable", "%s", msg);
	if (!plen) {
		r = ignition_payload_build(ign, len, &payload, &plen, err);
		if (r < 0)
			return r;
		free(payload);
	}
	return ignition_payload_check_area(plen, area ? area : ISO_IGNITION_AREA_SIZE, err);
}

/* Whether the InfraEnv gets the full ISO: asked for, or s390x, which
 * always boots the full one (kubeapi.md §1, imageType). */
static bool full_iso(const json_t *spec)
{
	const char *type = jstr(spec, "imageType"), *arch = jstr(spec, "cpuArchitecture");

	return (type && strcmp(type, "full-iso") == 0) || (arch && strcmp(arch, "s390x") == 0);
}

/* An InfraEnv bound to a cluster must boot the cluster's architecture:
 * a single-architecture release must match it, a multi-architecture one
 * must have an OS image of that architecture for its version, as
 * upstream's RegisterInfraEnv and UpdateInfraEnv check.  A cluster not
 * fully defined yet (no CD, ACI, image set, or an untagged release) is
 * not checked, as for late binding. */
static int check_cluster_arch(struct hub *h, const json_t *ie, ah_err *err)
{
	const json_t *spec = json_object_get(ie, "spec"), *cref = json_object_get(spec, "clusterRef");
	const char *name = jstr(cref, "name"), *ns = jstr(cref, "namespace");
	const char *want = jstr(spec, "cpuArchitecture");
	json_t *cd = NULL, *aci = NULL, *is = NULL;
	char ver[128] = "", arch[32] = "", mm[128];
	ah_err e;
	int r = 0;

	if (!name || !*name)
		return 0;
	if (!ns || !*ns)
		ns = jstr(json_object_get(ie, "metadata"), "namespace");
	want = want && *want ? want : "x86_64";
	ah_err_clear(&e);
	if (kube_get(h->api, h->k_cd, ns, name, &cd, &e) < 0 ||
	    !jstr(json_object_get(json_object_get(cd, "spec"), "clusterInstallRef"), "name") ||
	    kube_get(h->api, h->k_aci, ns, jstr(json_object_get(json_object_get(cd, "spec"), "clusterInstallRef"), "name"),
		     &aci, &e) < 0 ||
	    !jstr(json_object_get(json_object_get(aci, "spec"), "imageSetRef"), "name") || !h->k_imageset ||
	    kube_get(h->api, h->k_imageset, "", jstr(json_object_get(json_object_get(aci, "spec"), "imageSetRef"), "name"),
		     &is, &e) < 0 ||
	    cluster_release_from_image(jstr(json_object_get(is, "spec"), "releaseImage"), ver, sizeof(ver), arch,
				       sizeof(arch)) < 0)
		goto out;
	if (strcmp(arch, "multi") != 0) {
		if (strcmp(hub_norm_arch(arch), hub_norm_arch(want)) != 0)
			r = ah_err_set(err, EINVAL, 400, "BadRequest",
				       "Specified CPU architecture (%s) doesn't match the cluster (%s)", want,
				       hub_norm_arch(arch));
		goto out;
	}
	{
		/* The release's major.minor against the OS images (the hub's
		 * release list), naming the versions the architecture has. */
		strbuf avail = STRBUF_INIT;
		bool found = false;
		size_t i, n = strspn(ver, "0123456789");

		if (ver[n] == '.')
			n += 1 + strspn(ver + n + 1, "0123456789");
		snprintf(mm, sizeof(mm), "%.*s", (int)n, ver);
		for (i = 0; i < hub_os_images_count(h) && !found; i++) {
			const struct os_image *o = hub_os_image_at(h, i);
			size_t on = strlen(mm);

			if (strcmp(hub_norm_arch(o->cpu_architecture), hub_norm_arch(want)) != 0)
				continue;
			if (strncmp(o->openshift_version, mm, on) == 0 &&
			    (o->openshift_version[on] == '\0' || o->openshift_version[on] == '.'))
				found = true;
			else if (!strstr(avail.buf ? avail.buf : "", o->openshift_version))
				strbuf_addf(&avail, "%s%s", avail.len ? "," : "", o->openshift_version);
		}
		if (!found) {
			if (avail.len)
				r = ah_err_set(err, EINVAL, 400, "BadRequest",
					       "The requested RHCOS version (%s, arch: %s) does not have a matching OpenShift release image. "
					       "These are the OCP versions for which a matching release image has been found for arch %s "
					       "please review your release images or choose your OCP version to match one of these: %s",
					       mm, want, want, avail.buf);
			else
				r = ah_err_set(err, EINVAL, 400, "BadRequest",
					       "The requested RHCOS version (%s, arch: %s) does not have a matching OpenShift release image. "
					       "There are no OCP versions available in release images for arch %s.",
					       mm, want, want);
		}
		strbuf_release(&avail);
	}
out:
	json_decref(cd);
	json_decref(aci);
	json_decref(is);
	return r;
}

/* --- deletion (late-binding.md "Teardown") ------------------------------------ */

struct release_ctx {
	struct hub *h;
	json_t *del;  /* names of Agents to delete */
	int kept;     /* Agents bound and not installed */
};

static int release_visit(const char *ns, const char *name, void *userdata)
{
	struct release_ctx *rc = userdata;

	json_array_append_new(rc->del, json_string(name));
	return 0;
}

/* Whether the InfraEnv's teardown deletes this Agent (else it keeps it). */
static bool release_now(const json_t *a)
{
	const char *st = jstr(json_object_get(json_object_get(a, "status"), "debugInfo"), "state");

	/* A host that never reported a state has no cluster yet. */
	return !st || !*st || host_status_unbound(st) || strcmp(st, "installed") == 0 ||
	       strcmp(st, "added-to-existing-cluster") == 0;
}

/* An InfraEnv being deleted takes its unbound and installed hosts with it;
 * the others (bound to a cluster, not installed) keep it until they are
 * deleted or unbound.  The number of those kept, or a negative errno.  Its
 * Agents come from the cache's HUB_IDX_AGENT_INFRAENV index, each read
 * again before it is judged. */
static int release_agents(struct hub *h, const char *ns, const char *name)
{
	struct release_ctx rc = { .h = h, .del = json_array() };
	json_t *v;
	size_t i;
	int r;
	char key[600];

	if (!rc.del)
		return -ENOMEM;
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	r = rt_cache_keys_by(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_INFRAENV, key, release_visit, &rc);
	for (i = 0; i < json_array_size(rc.del);) {
		json_t *a = NULL;
		ah_err err;
		const char *label;

		v = json_array_get(rc.del, i);
		if (kube_get(h->api, h->k_agent, ns, json_string_value(v), &a, &err) < 0) {
			json_array_remove(rc.del, i);
			continue;
		}
		label = jstr(json_object_get(json_object_get(a, "metadata"), "labels"), LABEL_INFRAENV);
		if (!label || strcmp(label, name) != 0 || !release_now(a)) {
			if (label && strcmp(label, name) == 0)
				rc.kept++;
			json_array_remove(rc.del, i);
		} else {
			i++;
		}
		json_decref(a);
	}
	json_array_foreach(rc.del, i, v) {
		json_t *ret = NULL;
		ah_err err;

		if (kube_delete(h->api, h->k_agent, ns, json_string_value(v), NULL, &ret, &err) < 0 &&
		    err.status != 404) {
			log_warn("infraenv %s/%s: deleting Agent %s: %s", ns, name, json_string_value(v), err.message);
			rc.kept++;
		}
		json_decref(ret);
	}
	json_decref(rc.del);
	return r < 0 ? r : rc.kept;
}

int hub_reconcile_infraenv(struct hub *h, const char *ns, const char *name)
{
	json_t *ie = NULL, *status, *old_status, *st = NULL;
	const json_t *meta, *spec;
	const char *uid, *ver, *arch;
	const struct os_image *os;
	char *ign = NULL, *token = NULL, digest[65] = "", buf[4096], now[32];
	size_t len = 0, static_hosts = 0, static_plen = 0;
	int64_t strev = 0;
	ah_err err;
	int r;

	ah_err_clear(&err);
	if (kube_get(h->api, h->k_infraenv, ns, name, &ie, &err) < 0)
		return 0;
	meta = json_object_get(ie, "metadata");
	spec = json_object_get(ie, "spec");
	uid = jstr(meta, "uid");
	if (jstr(meta, "deletionTimestamp")) {
		int kept = release_agents(h, ns, name);

		if (kept != 0) {
			/* Looked at again until the last bound host is gone. */
			rt_enqueue_after(h->c_infraenv, ns, name, 5000);
			json_decref(ie);
			return 0;
		}
		/* The hosts went with their Agents; the image state goes now. */
		store_delete(h->store, IMAGESTATE_RESOURCE, "", uid, 0, hub_render_text,
			     &(struct text_render){ .text = "{}" }, NULL);
		set_finalizer(h, ie, false);
		json_decref(ie);
		return 0;
	}
	if (set_finalizer(h, ie, true) < 0) {
		json_decref(ie);
		rt_enqueue_after(h->c_infraenv, ns, name, 1000);
		return 0;
	}
	old_status = json_object_get(ie, "status");
	status = json_is_object(old_status) ? json_deep_copy(old_status) : json_object();
	json_object_set_new(status, "agentLabelSelector",
			    json_pack("{s:{s:s}}", "matchLabels", LABEL_INFRAENV, name));
	ver = jstr(spec, "osImageVersion");
	arch = jstr(spec, "cpuArchitecture");
	os = hub_pick_os_image(h, ver, arch);
	if ((r = check_cluster_arch(h, ie, &err)) < 0) {
		/* reported below */
	} else if (!os) {
		r = ah_err_set(&err, ENOENT, 404, "NotFound", "Specified OSImageVersion is missing from AgentServiceConfig");
	} else {
		r = hub_build_ignition(h, ie, &ign, &len, digest, &err);
	}
	if (r == 0) {
		hub_static_net_last_build(uid, ign, len, &static_hosts, &static_plen);
		r = image_servable(h, os, ign, len, static_plen, &err);
	}
	if (r == 0)
		r = hub_infraenv_token(h, ie, &token, &err);
	if (r < 0) {
		char msg[AH_ERR_MSG_MAX + 64];
		bool client = err.status >= 400 && err.status < 500;

		snprintf(msg, sizeof(msg), client ? "Failed to create image: %s" :
			 "Failed to create image due to an internal error: %s", err.message);
		put_condition(status, condition(json_object_get(old_status, "conditions"), "ImageCreated",
						"False", "ImageCreationError", msg));
		json_object_del(status, "isoDownloadURL");
		json_object_del(status, "createdTime");
		if (!json_equal(status, old_status))
			patch_status(h, ns, name, status, old_status);
		json_decref(status);
		json_decref(ie);
		free(ign);
		free(token);
		return 0;
	}
	free(ign);
	st = imagestate_get(h, uid, &strev);
	util_now_rfc3339(now, sizeof(now));
	if (!jstr(st, "digest") || strcmp(jstr(st, "digest"), digest) != 0) {
		time_t last = 0;

		/* Regeneration cooldown: a burst of edits yields one new image. */
		if (jstr(st, "created") && util_parse_rfc3339(jstr(st, "created"), &last) == 0 &&
		    time(NULL) - last < h->cfg.image_cooldown_s) {
			int64_t wait_ms = ((int64_t)h->cfg.image_cooldown_s - (time(NULL) - last)) * 1000;

			json_decref(st);
			json_decref(status);
			json_decref(ie);
			free(token);
			rt_enqueue_after(h->c_infraenv, ns, name, wait_ms);
			return 0;
		}
		json_object_set_new(st, "digest", json_string(digest));
		json_object_set_new(st, "created", json_string(now));
		if (!jstr(st, "token"))
			json_object_set_new(st, "token", json_string(token));
		if (imagestate_put(h, uid, st, strev) < 0) {
			json_decref(st);
			json_decref(status);
			json_decref(ie);
			free(token);
			rt_enqueue_after(h->c_infraenv, ns, name, 1000);
			return 0;
		}
		{
			struct hub_event_ref ref;
			const char *ssh = jstr(spec, "sshAuthorizedKey");

			hub_event_ref_object(ie, &ref);
			ref.infra_env_id = uid;
			hub_event(h, &ref, HUB_EV_INFO, "image_info_updated",
				  "Updated image information (Image type is \"%s\", SSH public key %s)",
				  full_iso(spec) ? "full-iso" : "minimal-iso", ssh && *ssh ? "is set" : "is not set");
		}
	}
	/* The digest's prefix in the URL makes a new image a new URL. */
	url_for(h, buf, sizeof(buf), "/byapikey/%s/%s/%s/%s.iso?digest=%.12s", token, os->openshift_version,
		os->cpu_architecture, full_iso(spec) ? "full" : "minimal", jstr(st, "digest"));
	json_object_set_new(status, "isoDownloadURL", json_string(buf));
	json_object_set_new(status, "createdTime", json_string(jstr(st, "created")));
	json_object_set_new(status, "bootArtifacts", hub_boot_artifacts(h, ie, os, token));
	{
		json_t *dbg = json_object_get(status, "debugInfo");

		if (!json_is_object(dbg)) {
			dbg = json_object();
			json_object_set_new(status, "debugInfo", dbg);
		}
		url_for(h, buf, sizeof(buf), API_PREFIX "/events?api_key=%s&infra_env_id=%s", token, uid);
		json_object_set_new(dbg, "eventsURL", json_string(buf));
		/* Signed like the other download URLs; gone with the last
		 * selected NMStateConfig. */
		if (static_hosts) {
			url_for(h, buf, sizeof(buf),
				API_PREFIX "/infra-envs/%s/downloads/files?api_key=%s&file_name=static-network-config",
				uid, token);
			json_object_set_new(dbg, "staticNetworkDownloadURL", json_string(buf));
		} else {
			json_object_del(dbg, "staticNetworkDownloadURL");
		}
	}
	put_condition(status, condition(json_object_get(old_status, "conditions"), "ImageCreated", "True",
					"InfraEnvAvailable", "InfraEnv is available: Image has been created"));
	if (!json_equal(status, old_status))
		patch_status(h, ns, name, status, old_status);
	json_decref(st);
	json_decref(status);
	json_decref(ie);
	free(token);
	return 0;
}

/* --- registration ----------------------------------------------------------- */

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	return rt_from_errno(hub_reconcile_infraenv(ctx, key->ns, key->name));
}

/* The InfraEnv whose label an Agent carries: "ns/name". */
static void agent_infraenv_index(const json_t *agent, json_t *out)
{
	const json_t *meta = json_object_get(agent, "metadata");
	const char *ie = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	char key[600];

	if (ie && jstr(meta, "namespace")) {
		snprintf(key, sizeof(key), "%s/%s", jstr(meta, "namespace"), ie);
		json_array_append_new(out, json_string(key));
	}
}

/* The MAC addresses an Agent's inventory reports: "ns/mac" in lower case
 * (the image service's boot-order gate looks a booting host up by it). */
static void agent_mac_index(const json_t *agent, json_t *out)
{
	const char *ns = jstr(json_object_get(agent, "metadata"), "namespace");
	const json_t *ifs = json_object_get(json_object_get(json_object_get(agent, "status"), "inventory"), "interfaces");
	const json_t *itf;
	char key[600];
	size_t i, k;

	if (!ns)
		return;
	json_array_foreach(ifs, i, itf) {
		const char *m = jstr(itf, "macAddress");

		if (!m || !*m)
			continue;
		snprintf(key, sizeof(key), "%s/%s", ns, m);
		for (k = strlen(ns) + 1; key[k]; k++)
			key[k] = (char)tolower((unsigned char)key[k]);
		json_array_append_new(out, json_string(key));
	}
}

static int enqueue_visit(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

/* The pull secret an InfraEnv names: "ns/name" (the only Secret its image
 * is built from). */
#define IDX_IE_PULL_SECRET "pullSecret"
static void infraenv_pull_secret_index(const json_t *ie, json_t *out)
{
	const char *ns = jstr(json_object_get(ie, "metadata"), "namespace");
	const char *name = jstr(json_object_get(json_object_get(ie, "spec"), "pullSecretRef"), "name");
	char key[600];

	if (ns && name && *name) {
		snprintf(key, sizeof(key), "%s/%s", ns, name);
		json_array_append_new(out, json_string(key));
	}
}

/* A Secret changed: the InfraEnvs that name it as their pull secret look
 * again (the cache's index; a missing Secret that appears is found the
 * same way). */
static void secret_to_infraenvs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *keys = json_array(), *k;
	char key[600];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	rt_cache_keys_by(h->rt, h->k_infraenv->store_key, IDX_IE_PULL_SECRET, key, enqueue_visit, keys);
	json_array_foreach(keys, i, k)
		rt_enqueue(c, json_string_value(json_array_get(k, 0)), json_string_value(json_array_get(k, 1)));
	json_decref(keys);
}

int hub_infraenv_register(struct hub *h)
{
	struct rt_controller_def d = {
		.name = "InfraEnv",
		.reconcile = reconcile,
		.ctx = h,
		.watches = {
			{ .resource = h->k_infraenv->store_key, .map = RT_MAP_SELF },
			{ .resource = "secrets", .map = RT_MAP_FN, .fn = secret_to_infraenvs },
		},
	};
	int r = rt_register(h->rt, &d, &h->c_infraenv);

	if (r == 0)
		r = rt_cache_resource(h->rt, h->k_infraenv->store_key, true);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_INFRAENV, agent_infraenv_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_infraenv->store_key, IDX_IE_PULL_SECRET, infraenv_pull_secret_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_MAC, agent_mac_index);
	return r;
}
