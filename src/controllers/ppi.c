/* ppi.c - the PreprovisioningImage controller of the converged flow
 * (bmac-capi.md §B): for each PreprovisioningImage labelled with an InfraEnv
 * (infraenvs.agent-install.openshift.io; others are not ours, as upstream's
 * cache never shows them) the status says which image its BareMetalHost
 * boots: the InfraEnv's ISO (or its initrd, kernel and rootfs), with Ready
 * and Error conditions mirroring the InfraEnv's ImageCreated.  A changed
 * image makes the owning BMH reboot ({"force": true}) unless it is
 * provisioned.  Runs in the converged flow (upstream ALLOW_CONVERGED_FLOW,
 * the default; not with `agenthub serve --converged-flow=false`, the live-ISO
 * flow).  It also sets the InfraEnv's enable-ironic-agent annotation (§B.4),
 * which makes hub_build_ignition() put the ironic agent into the discovery
 * Ignition; the URLs/image sources of §B.4 (the
 * customization Secret, Provisioning, ClusterVersion) are not read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/bmh.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/hub-internal.h"
#include "kube/api.h"
#include "kube/registry.h"

#define PPI_FINALIZER "preprovisioningimage.agent-install.openshift.io/ai-deprovision"
#define VELERO_LABEL "velero.io/exclude-from-backup"
#define IDX_PPI_INFRAENV "ppiInfraEnv"  /* PPI -> "ns/name" of its InfraEnv label */

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

static const char *norm_arch(const char *a)
{
	if (!a || !*a)
		return "x86_64";
	if (strcmp(a, "amd64") == 0)
		return "x86_64";
	if (strcmp(a, "aarch64") == 0)
		return "arm64";
	return a;
}

static bool has_str(const json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* A condition, keeping lastTransitionTime when the status did not move. */
static json_t *cond(const json_t *old_status, const char *type, const char *status, const char *reason,
		    const char *msg, json_int_t gen)
{
	const json_t *c;
	size_t i;
	char now[40];
	const char *ltt = NULL;

	json_array_foreach(json_object_get(old_status, "conditions"), i, c)
		if (strcmp(nz(jstr(c, "type")), type) == 0 && strcmp(nz(jstr(c, "status")), status) == 0)
			ltt = jstr(c, "lastTransitionTime");
	util_now_rfc3339(now, sizeof(now));
	return json_pack("{s:s,s:s,s:s,s:s,s:I,s:s}", "type", type, "status", status, "reason", reason, "message",
			 msg, "observedGeneration", gen, "lastTransitionTime", ltt ? ltt : now);
}

static void set_conditions(json_t *status, const json_t *old_status, bool ready, const char *ready_status,
			   bool error, const char *reason, const char *msg, json_int_t gen)
{
	json_t *conds = json_array();

	(void)ready;
	json_array_append_new(conds, cond(old_status, "Ready", ready_status, reason, msg, gen));
	json_array_append_new(conds, cond(old_status, "Error", error ? "True" : "False", reason, msg, gen));
	json_object_set_new(status, "conditions", conds);
}

/* A failure row: the image fields cleared, the conditions set. */
static void fail_row(json_t *status, const json_t *old, bool error, const char *reason, const char *msg, json_int_t gen)
{
	json_object_del(status, "imageUrl");
	json_object_del(status, "kernelUrl");
	json_object_del(status, "extraKernelParams");
	json_object_del(status, "format");
	json_object_del(status, "architecture");
	set_conditions(status, old, false, "False", error, reason, msg, gen);
}

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

static int write_status(struct hub *h, const char *ns, const char *name, json_t *status, const json_t *old)
{
	struct kube_opts o = { .status = true };
	json_t *patch, *ret = NULL;
	ah_err err = { 0 };
	int r;

	if (json_equal(status, old))
		return 0;
	patch = json_pack("{s:O}", "status", status);
	if (json_is_object(old))
		null_removed(json_object_get(patch, "status"), old);
	r = kube_patch(h->api, h->k_ppi, ns, name, "application/merge-patch+json", patch, &o, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	return r == -ENOENT ? 0 : r;
}

static int patch_meta(struct hub *h, const json_t *obj, const struct kube_kind *k, json_t *mp)
{
	const json_t *meta = json_object_get(obj, "metadata");
	json_t *patch, *ret = NULL;
	ah_err err = { 0 };
	int r;

	json_object_set(mp, "resourceVersion", json_object_get(meta, "resourceVersion"));
	patch = json_pack("{s:o}", "metadata", mp);
	r = kube_patch(h->api, k, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json", patch,
		       NULL, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	return r == -ENOENT ? 0 : r;
}

/* The name of the BareMetalHost that owns the PPI, or NULL. */
static const char *owner_bmh(const json_t *ppi)
{
	json_t *o;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(ppi, "metadata"), "ownerReferences"), i, o)
		if (strcmp(nz(jstr(o, "kind")), "BareMetalHost") == 0)
			return jstr(o, "name");
	return NULL;
}

static int reconcile_ppi(struct hub *h, const char *ns, const char *name, int64_t *ret_requeue)
{
	json_t *ppi = NULL, *ie = NULL, *bmh = NULL, *status = NULL;
	const json_t *meta, *spec, *old, *iec = NULL, *c;
	const char *ielabel, *bname;
	ah_err err = { 0 };
	json_int_t gen;
	char msg[512];
	size_t i;
	int r;

	*ret_requeue = 0;
	r = kube_get(h->api, h->k_ppi, ns, name, &ppi, &err);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	meta = json_object_get(ppi, "metadata");
	spec = json_object_get(ppi, "spec");
	old = json_object_get(ppi, "status");
	ielabel = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	gen = json_integer_value(json_object_get(meta, "generation"));
	bname = owner_bmh(ppi);
	if (!ielabel) {
		r = 0;
		goto out;
	}

	/* B.5: deletion waits for the BMH to let go of the image. */
	if (json_object_get(meta, "deletionTimestamp")) {
		bool release = true;

		if (!has_str(json_object_get(meta, "finalizers"), PPI_FINALIZER))
			goto out;
		if (bname && kube_get(h->api, h->k_bmh, ns, bname, &bmh, &err) == 0) {
			const char *st = nz(jstr(json_object_get(json_object_get(bmh, "status"), "provisioning"), "state"));

			if (strcmp(nz(jstr(json_object_get(bmh, "spec"), "automatedCleaningMode")), "disabled") != 0)
				release = json_object_get(json_object_get(bmh, "metadata"), "deletionTimestamp") &&
					  (strcmp(st, BMH_ST_POWERING_OFF_DELETE) == 0 || strcmp(st, BMH_ST_DELETING) == 0);
		}
		if (release) {
			json_t *out = json_array(), *f;

			json_array_foreach(json_object_get(meta, "finalizers"), i, f)
				if (strcmp(nz(json_string_value(f)), PPI_FINALIZER) != 0)
					json_array_append(out, f);
			r = patch_meta(h, ppi, h->k_ppi, json_pack("{s:o}", "finalizers", out));
		} else {
			*ret_requeue = 5000;
		}
		goto out;
	}
	if (!has_str(json_object_get(meta, "finalizers"), PPI_FINALIZER) ||
	    strcmp(nz(jstr(json_object_get(meta, "labels"), VELERO_LABEL)), "true") != 0) {
		json_t *fins = json_is_array(json_object_get(meta, "finalizers"))
				       ? json_deep_copy(json_object_get(meta, "finalizers")) : json_array();

		if (!has_str(fins, PPI_FINALIZER))
			json_array_append_new(fins, json_string(PPI_FINALIZER));
		r = patch_meta(h, ppi, h->k_ppi,
			       json_pack("{s:o,s:{s:s}}", "finalizers", fins, "labels", VELERO_LABEL, "true"));
		goto out; /* the write's event brings it back */
	}

	status = json_is_object(old) ? json_deep_copy(old) : json_object();
	if (!has_str(json_object_get(spec, "acceptFormats"), "iso") &&
	    !has_str(json_object_get(spec, "acceptFormats"), "initrd")) {
		fail_row(status, old, true, "UnsupportedImageFormat", "Unsupported image format", gen);
		goto write;
	}
	if (kube_get(h->api, h->k_infraenv, ns, ielabel, &ie, &err) < 0 ||
	    json_object_get(json_object_get(ie, "metadata"), "deletionTimestamp")) {
		snprintf(msg, sizeof(msg), "InfraEnv %s/%s is not found or is being deleted", ielabel, ns);
		fail_row(status, old, false, "InfraEnvNotAvailable", msg, gen);
		goto write;
	}
	{
		const char *pa = norm_arch(jstr(spec, "architecture"));
		const char *ia = norm_arch(jstr(json_object_get(ie, "spec"), "cpuArchitecture"));

		if (strcmp(pa, ia) != 0) {
			snprintf(msg, sizeof(msg),
				 "PreprovisioningImage CPU architecture (%s) does not match InfraEnv CPU architecture (%s)",
				 pa, ia);
			fail_row(status, old, true, "InfraEnvArchMismatch", msg, gen);
			goto write;
		}
	}
	/* 8. The ironic agent (§B.4): the annotation makes the image service
	 * put the ironic agent's configuration into the InfraEnv's discovery
	 * Ignition (hub.c); the InfraEnv's change regenerates its image and
	 * brings us back. */
	if (strcmp(nz(jstr(json_object_get(json_object_get(ie, "metadata"), "annotations"), IRONIC_AGENT_ANN)), "true")) {
		r = patch_meta(h, ie, h->k_infraenv, json_pack("{s:{s:s}}", "annotations", IRONIC_AGENT_ANN, "true"));
		if (r < 0) {
			snprintf(msg, sizeof(msg), "Could not add ironic agent to image: %s", strerror(-r));
			fail_row(status, old, true, "IronicAgentIgnitionUpdateFailure", msg, gen);
			goto write;
		}
		goto out;
	}
	json_array_foreach(json_object_get(json_object_get(ie, "status"), "conditions"), i, c)
		if (strcmp(nz(jstr(c, "type")), "ImageCreated") == 0)
			iec = c;
	{
		const json_t *ist = json_object_get(ie, "status");
		const char *created = jstr(ist, "createdTime");
		time_t ct;

		/* Upstream dereferences the condition unchecked; a created
		 * image without one waits here like one not created. */
		if (!created || !iec) {
			fail_row(status, old, false, "WaitingForInfraEnvImageToBeCreated",
				 "Waiting for InfraEnv image to be created", gen);
			goto write;
		}
		if (util_parse_rfc3339(created, &ct) == 0 && ct + h->cfg.image_cooldown_s > time(NULL)) {
			fail_row(status, old, false, "WaitingForInfraEnvImageToCoolDown",
				 "Waiting for InfraEnv image to cool down", gen);
			*ret_requeue = ((int64_t)(ct + h->cfg.image_cooldown_s - time(NULL))) * 1000 + 100;
			goto write;
		}
	}
	{
		const json_t *ist = json_object_get(ie, "status"), *ba = json_object_get(ist, "bootArtifacts");
		const char *want, *had = jstr(old, "imageUrl");
		bool changed;

		json_object_set_new(status, "architecture",
				    json_string(nz(jstr(json_object_get(ie, "spec"), "cpuArchitecture"))[0]
							? jstr(json_object_get(ie, "spec"), "cpuArchitecture") : "x86_64"));
		if (has_str(json_object_get(spec, "acceptFormats"), "iso")) {
			want = nz(jstr(ist, "isoDownloadURL"));
			json_object_set_new(status, "format", json_string("iso"));
			json_object_set_new(status, "imageUrl", json_string(want));
			json_object_del(status, "kernelUrl");
			json_object_del(status, "extraKernelParams");
		} else {
			json_t *args = json_array(), *ka;
			char *params;
			size_t n = 0;

			want = nz(jstr(ba, "initrd"));
			json_object_set_new(status, "format", json_string("initrd"));
			json_object_set_new(status, "imageUrl", json_string(want));
			json_object_set_new(status, "kernelUrl", json_string(nz(jstr(ba, "kernel"))));
			json_array_append_new(args, json_sprintf("coreos.live.rootfs_url=%s", nz(jstr(ba, "rootfs"))));
			json_array_append_new(args, json_string("rd.bootif=0"));
			json_array_foreach(json_object_get(json_object_get(ie, "spec"), "kernelArguments"), i, ka)
				if (strcmp(nz(jstr(ka, "operation")), "append") == 0 && jstr(ka, "value"))
					json_array_append_new(args, json_string(jstr(ka, "value")));
			json_array_foreach(args, i, ka)
				n += strlen(json_string_value(ka)) + 1;
			params = calloc(1, n + 1);
			if (params) {
				json_array_foreach(args, i, ka) {
					if (i)
						strcat(params, " ");
					strcat(params, json_string_value(ka));
				}
				json_object_set_new(status, "extraKernelParams", json_string(params));
			}
			free(params);
			json_decref(args);
		}
		set_conditions(status, old, true, nz(jstr(iec, "status")),
			       strcmp(nz(jstr(iec, "reason")), "ImageCreationError") == 0, nz(jstr(iec, "reason")),
			       nz(jstr(iec, "message")), gen);
		changed = had && *had && strcmp(had, want) != 0;
		if (!bname) {
			r = ah_err_set(&err, ENOENT, 0, "NoOwner", "no BareMetalHost owns it");
			log_warn("preprovisioningimage %s/%s: %s", ns, name, err.message);
		} else if (changed && kube_get(h->api, h->k_bmh, ns, bname, &bmh, &err) == 0 &&
			   strcmp(nz(jstr(json_object_get(json_object_get(bmh, "status"), "provisioning"), "state")),
				  BMH_ST_PROVISIONED) != 0) {
			/* A new image: the host boots it now (BMO honours the
			 * reboot outside provisioned only when forced). */
			r = patch_meta(h, bmh, h->k_bmh,
				       json_pack("{s:{s:s}}", "annotations", BMH_ANN_REBOOT, "{\"force\": true}"));
			if (r < 0)
				goto out;
		}
	}
write:
	r = write_status(h, ns, name, status, old);
out:
	json_decref(status);
	json_decref(bmh);
	json_decref(ie);
	json_decref(ppi);
	return r;
}

/* --- registration ------------------------------------------------------------ */

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	int64_t after = 0;
	int r = reconcile_ppi(ctx, key->ns, key->name, &after);

	if (r < 0)
		return rt_error(r);
	return after > 0 ? rt_requeue_after(after) : rt_done();
}

static void ppi_infraenv_index(const json_t *p, json_t *out)
{
	const json_t *meta = json_object_get(p, "metadata");
	const char *ns = jstr(meta, "namespace"), *ie = jstr(json_object_get(meta, "labels"), LABEL_INFRAENV);
	char key[600];

	if (ns && ie && *ie) {
		snprintf(key, sizeof(key), "%s/%s", ns, ie);
		json_array_append_new(out, json_string(key));
	}
}

static int collect(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

static void infraenv_to_ppis(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *keys = json_array(), *k;
	char key[600];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	rt_cache_keys_by(h->rt, h->k_ppi->store_key, IDX_PPI_INFRAENV, key, collect, keys);
	json_array_foreach(keys, i, k)
		rt_enqueue(c, json_string_value(json_array_get(k, 0)), json_string_value(json_array_get(k, 1)));
	json_decref(keys);
}

/* A BMH: the PPI of the same name. */
static void bmh_to_ppi(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	rt_enqueue(c, ev->so->ns, ev->so->name);
}

int hub_ppi_register(struct hub *h)
{
	int r;

	h->k_ppi = kube_registry_by_kind(h->reg, "metal3.io/v1alpha1", "PreprovisioningImage");
	if (!h->k_ppi || !h->k_bmh || !h->cfg.converged_flow)
		return 0;
	{
		struct rt_controller_def d = {
			.name = "PreprovisioningImage",
			.reconcile = reconcile,
			.ctx = h,
			.watches = {
				{ .resource = h->k_ppi->store_key, .map = RT_MAP_SELF },
				{ .resource = h->k_infraenv->store_key, .map = RT_MAP_FN, .fn = infraenv_to_ppis },
				{ .resource = h->k_bmh->store_key, .map = RT_MAP_FN, .fn = bmh_to_ppi },
			},
		};

		r = rt_register(h->rt, &d, &h->c_ppi);
	}
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_ppi->store_key, IDX_PPI_INFRAENV, ppi_infraenv_index);
	return r;
}
