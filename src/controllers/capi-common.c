/* capi-common.c - helpers the CAPI core controllers share (capi.h):
 * conditions merged by type (a Machine's UpToDate is CAPOA's, the hub only
 * adds its own types), contract references resolved through the registry,
 * owner references, labels, finalizers and status written with a
 * resourceVersion guard so a concurrent writer makes the pass run again
 * instead of being overwritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "controllers/capi.h"
#include "controllers/hub-internal.h"
#include "kube/api.h"

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

const json_t *capi_cond_get(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (same(capi_str(c, "type"), type))
			return c;
	return NULL;
}

bool capi_cond_true(const json_t *conds, const char *type)
{
	return same(capi_str(capi_cond_get(conds, type), "status"), "True");
}

void capi_cond_set(json_t *conds, const char *type, const char *status, const char *reason, const char *message,
		   long long generation, const char *now)
{
	json_t *old = (json_t *)capi_cond_get(conds, type), *c;
	const char *ltt = now;
	size_t i;

	if (old && same(capi_str(old, "status"), status) && capi_str(old, "lastTransitionTime"))
		ltt = capi_str(old, "lastTransitionTime");
	/* metav1.Condition: message is required (may be empty). */
	c = json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", type, "status", status, "reason", reason, "message",
		      message ? message : "", "lastTransitionTime", ltt);
	if (generation >= 0)
		json_object_set_new(c, "observedGeneration", json_integer(generation));
	if (old) {
		json_array_foreach(conds, i, old)
			if (same(capi_str(old, "type"), type)) {
				json_array_set_new(conds, i, c);
				return;
			}
	}
	json_array_append_new(conds, c);
}

void capi_v1b1_cond_set(json_t *conds, const char *type, bool ok, const char *reason, const char *severity,
			const char *message, const char *now)
{
	const json_t *old = capi_cond_get(conds, type);
	const char *status = ok ? "True" : "False", *ltt = now;
	json_t *c, *o;
	size_t i;

	if (old && same(capi_str(old, "status"), status) && capi_str(old, "lastTransitionTime"))
		ltt = capi_str(old, "lastTransitionTime");
	c = json_pack("{s:s,s:s,s:s}", "type", type, "status", status, "lastTransitionTime", ltt);
	if (!ok) {
		if (reason)
			json_object_set_new(c, "reason", json_string(reason));
		if (severity)
			json_object_set_new(c, "severity", json_string(severity));
		if (message && *message)
			json_object_set_new(c, "message", json_string(message));
	}
	json_array_foreach(conds, i, o)
		if (same(capi_str(o, "type"), type)) {
			json_array_set_new(conds, i, c);
			return;
		}
	json_array_append_new(conds, c);
}

bool capi_paused(const json_t *cluster, const json_t *obj, char *msg, size_t size)
{
	bool spec = json_is_true(capi_path(cluster, "spec", "paused"));
	bool ann = json_object_get(capi_path(obj, "metadata", "annotations"), CAPI_ANN_PAUSED) != NULL;
	const char *kind = capi_str(obj, "kind");

	msg[0] = '\0';
	if (!spec && !ann)
		return false;
	snprintf(msg, size, "%s%s%s%s", spec ? "Cluster spec.paused is set to true" : "", spec && ann ? ", " : "",
		 ann ? (kind ? kind : "Object") : "", ann ? " has the " CAPI_ANN_PAUSED " annotation" : "");
	return true;
}

void capi_set_paused_cond(json_t *st, bool paused, const char *msg, long long generation, const char *now)
{
	json_t *conds = json_object_get(st, "conditions");

	if (!json_is_array(conds))
		json_object_set_new(st, "conditions", conds = json_array());
	if (paused)
		capi_cond_set(conds, "Paused", "True", "Paused", msg, generation, now);
	else
		capi_cond_set(conds, "Paused", "False", "NotPaused", NULL, generation, now);
}

int capi_write_paused(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *msg, ah_err *err)
{
	json_t *st = json_is_object(json_object_get(obj, "status")) ? json_deep_copy(json_object_get(obj, "status"))
								   : json_object();
	char now[32];
	int r;

	util_now_rfc3339(now, sizeof(now));
	capi_set_paused_cond(st, true, msg, json_integer_value(capi_path(obj, "metadata", "generation")), now);
	r = capi_write_status(h, k, obj, st, err);
	json_decref(st);
	return r;
}

json_t *capi_owner_ref(const json_t *obj, bool controller)
{
	const json_t *meta = json_object_get(obj, "metadata");

	return json_pack("{s:s?,s:s?,s:s?,s:s?,s:b,s:b}", "apiVersion", capi_str(obj, "apiVersion"), "kind",
			 capi_str(obj, "kind"), "name", capi_str(meta, "name"), "uid", capi_str(meta, "uid"),
			 "controller", controller, "blockOwnerDeletion", true);
}

bool capi_owner_has(const json_t *refs, const char *uid)
{
	const json_t *r;
	size_t i;

	json_array_foreach(refs, i, r)
		if (same(capi_str(r, "uid"), uid))
			return true;
	return false;
}

const char *capi_owner_name(const json_t *meta, const char *group, const char *kind, bool controller)
{
	const json_t *r;
	size_t i, n = group ? strlen(group) : 0;

	json_array_foreach(json_object_get(meta, "ownerReferences"), i, r) {
		const char *av = capi_str(r, "apiVersion");

		if (!same(capi_str(r, "kind"), kind) || (controller && !json_is_true(json_object_get(r, "controller"))))
			continue;
		if (group && (!av || strncmp(av, group, n) != 0 || av[n] != '/'))
			continue;
		return capi_str(r, "name");
	}
	return NULL;
}

int capi_random_suffix(char *buf)
{
	/* The alphabet of Kubernetes' generated names: no vowels, no
	 * look-alike digits, so no word is spelled by accident. */
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char raw[5];
	int r = util_random_bytes(raw, sizeof(raw)), i;

	if (r < 0)
		return r;
	for (i = 0; i < 5; i++)
		buf[i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
	buf[5] = '\0';
	return 0;
}

void capi_template_hash(const json_t *tmpl, char *buf, size_t size)
{
	static const char alphabet[] = "bcdfghjklmnpqrstvwxz2456789";
	char *text = json_dumps(tmpl ? tmpl : json_null(), JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
	uint32_t hv = 2166136261u; /* FNV-1a, 32 bits */
	char digits[16];
	size_t i;

	for (i = 0; text && text[i]; i++) {
		hv ^= (unsigned char)text[i];
		hv *= 16777619u;
	}
	free(text);
	/* The decimal digits spelled in the name alphabet, as a label value
	 * that never looks like a number or a word. */
	snprintf(digits, sizeof(digits), "%u", hv);
	for (i = 0; digits[i] && i + 1 < size; i++)
		buf[i] = alphabet[(unsigned char)digits[i] % (sizeof(alphabet) - 1)];
	if (size)
		buf[i < size ? i : size - 1] = '\0';
}

void capi_ref_group(const json_t *ref, char *buf, size_t size)
{
	const char *g = capi_str(ref, "apiGroup"), *av = capi_str(ref, "apiVersion"), *slash;

	if (g) {
		snprintf(buf, size, "%s", g);
	} else if (av && (slash = strchr(av, '/'))) {
		snprintf(buf, size, "%.*s", (int)(slash - av), av);
	} else {
		snprintf(buf, size, "%s", "");
	}
}

bool capi_ref_key(const json_t *ref, const char *ns, char *buf, size_t size)
{
	const char *kind = capi_str(ref, "kind"), *name = capi_str(ref, "name");

	if (!kind || !*kind || !name || !*name || !ns)
		return false;
	return snprintf(buf, size, "%s/%s/%s", kind, ns, name) < (int)size;
}

static bool is_storage_version(const struct kube_kind *k)
{
	const json_t *v;
	size_t i;

	if (!k->crd)
		return true;
	json_array_foreach(capi_path(k->crd, "spec", "versions"), i, v)
		if (same(capi_str(v, "name"), k->version))
			return json_is_true(json_object_get(v, "storage"));
	return false;
}

const struct kube_kind *capi_kind(const struct kube_registry *reg, const char *group, const char *kind)
{
	const struct kube_kind *first = NULL;
	size_t i;

	for (i = 0; reg && group && kind && i < reg->n; i++) {
		const struct kube_kind *k = reg->kinds[i];

		if (!same(k->group, group) || !same(k->kind, kind))
			continue;
		if (is_storage_version(k))
			return k;
		if (!first)
			first = k;
	}
	return first;
}

const struct kube_kind *capi_ref_kind(const struct kube_registry *reg, const json_t *ref)
{
	char group[256];

	if (!json_is_object(ref))
		return NULL;
	capi_ref_group(ref, group, sizeof(group));
	return capi_kind(reg, group, capi_str(ref, "kind"));
}

static int guarded_patch(struct hub *h, const struct kube_kind *k, const json_t *obj, json_t *patch, bool status,
			 ah_err *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	struct kube_opts o = { .status = status };
	json_t *ret = NULL;
	int r;

	if (!json_object_get(patch, "metadata"))
		json_object_set_new(patch, "metadata", json_object());
	json_object_set(json_object_get(patch, "metadata"), "resourceVersion", json_object_get(meta, "resourceVersion"));
	r = kube_patch(h->api, k, capi_str(meta, "namespace"), capi_str(meta, "name"), "application/merge-patch+json",
		       patch, &o, &ret, err);
	json_decref(ret);
	return r < 0 ? r : 1;
}

int capi_ensure_owner_labels(struct hub *h, const struct kube_kind *k, const json_t *obj, const json_t *owner,
			     bool controller, const json_t *labels, ah_err *err)
{
	const json_t *meta = json_object_get(obj, "metadata"), *refs = json_object_get(meta, "ownerReferences");
	const json_t *have = json_object_get(meta, "labels");
	json_t *v, *patch = json_object(), *pm = json_object(), *lp = json_object();
	const char *key;
	int r = 0;

	json_object_set_new(patch, "metadata", pm);
	if (owner && !capi_owner_has(refs, capi_str(json_object_get(owner, "metadata"), "uid"))) {
		json_t *list = json_is_array(refs) ? json_deep_copy(refs) : json_array();

		json_array_append_new(list, capi_owner_ref(owner, controller));
		json_object_set_new(pm, "ownerReferences", list);
	}
	json_object_foreach((json_t *)labels, key, v)
		if (!json_equal(json_object_get(have, key), v))
			json_object_set(lp, key, v);
	if (json_object_size(lp))
		json_object_set(pm, "labels", lp);
	json_decref(lp);
	if (json_object_size(pm))
		r = guarded_patch(h, k, obj, patch, false, err);
	json_decref(patch);
	return r;
}

bool capi_has_finalizer(const json_t *obj, const char *finalizer)
{
	const json_t *f;
	size_t i;

	json_array_foreach(capi_path(obj, "metadata", "finalizers"), i, f)
		if (same(json_string_value(f), finalizer))
			return true;
	return false;
}

int capi_set_finalizer(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *finalizer, bool want,
		       ah_err *err)
{
	json_t *list, *patch;
	const json_t *f;
	size_t i;
	int r;

	if (capi_has_finalizer(obj, finalizer) == want)
		return 0;
	list = json_array();
	json_array_foreach(capi_path(obj, "metadata", "finalizers"), i, f)
		if (!same(json_string_value(f), finalizer))
			json_array_append(list, (json_t *)f);
	if (want)
		json_array_append_new(list, json_string(finalizer));
	patch = json_pack("{s:{s:o}}", "metadata", "finalizers", list);
	r = guarded_patch(h, k, obj, patch, false, err);
	json_decref(patch);
	return r;
}

int capi_write_status(struct hub *h, const struct kube_kind *k, const json_t *obj, const json_t *status, ah_err *err)
{
	const json_t *old = json_object_get(obj, "status"), *v;
	json_t *patch, *st;
	const char *key;
	int r;

	if (json_equal(old, status))
		return 0;
	st = json_deep_copy(status);
	json_object_foreach((json_t *)old, key, v)
		if (!json_object_get(st, key))
			json_object_set_new(st, key, json_null());
	patch = json_pack("{s:o}", "status", st);
	r = guarded_patch(h, k, obj, patch, true, err);
	json_decref(patch);
	return r;
}

int capi_delete(struct hub *h, const struct kube_kind *k, const char *ns, const char *name, ah_err *err)
{
	json_t *obj = NULL, *ret = NULL;
	int r;

	if (!k || !name)
		return 0;
	r = kube_get(h->api, k, ns, name, &obj, err);
	if (r < 0)
		return err->status == 404 ? 0 : r;
	if (!capi_str(json_object_get(obj, "metadata"), "deletionTimestamp")) {
		struct kube_opts o = { .propagation = "Background" };

		r = kube_delete(h->api, k, ns, name, &o, &ret, err);
		json_decref(ret);
		if (r < 0 && err->status != 404 && err->status != 409) {
			json_decref(obj);
			return r;
		}
	}
	json_decref(obj);
	return 1;
}

struct collect {
	json_t *list;
	const char *ns;
};

static int collect_visit(const char *ns, const char *name, void *ud)
{
	struct collect *c = ud;

	json_array_append_new(c->list, json_pack("[s,s]", ns, name));
	return 0;
}

json_t *capi_list_by(struct hub *h, const char *resource, const char *index, const char *ns, const char *val)
{
	struct collect c = { json_array(), ns };
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ns, val);
	rt_cache_keys_by(h->rt, resource, index, key, collect_visit, &c);
	return c.list;
}
