/* capm3-data.c - CAPM3's Metal3DataTemplate / Metal3DataClaim / Metal3Data
 * work for a Metal3Machine with a dataTemplate, done inline by the
 * Metal3Machine controller (capm3.c) once it has chosen a host: a claim
 * <m3m> owned by the Metal3Machine, an index for it in the template's
 * status.indexes (the lowest free one), the Metal3Data <template>-<index>
 * and the Secret <m3m>-metadata (key metaData) the BareMetalHost's config
 * drive carries as meta_data.json.
 *
 * The metaData: the keys BMO puts in every config drive (uuid = the BMH
 * UID, metal3-namespace, metal3-name, local-hostname, local_hostname and
 * name = the BMH's), then the template's spec.metaData items (strings,
 * objectNames, namespaces, indexes, fromLabels, fromAnnotations,
 * fromHostInterfaces) and providerid "<ns>/<bmh>/<m3m>", as CAPM3 renders
 * them.  Not done: the IP pool items (ipAddressesFromIPPool and the like)
 * and networkData templating; a template that uses them gets a condition
 * naming the field. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "controllers/capm3.h"
#include "kube/api.h"
#include "kube/registry.h"

#define METADATA_SUFFIX "-metadata"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

static const json_t *meta_of(const json_t *o)
{
	return json_object_get(o, "metadata");
}

static bool lower_eq(const char *a, const char *b)
{
	return a && strcasecmp(a, b) == 0;
}

/* The object an item names (metal3machine, machine, baremetalhost). */
static const json_t *item_object(const char *which, const json_t *m3m, const json_t *machine, const json_t *bmh)
{
	if (lower_eq(which, "metal3machine"))
		return m3m;
	if (lower_eq(which, "machine"))
		return machine;
	if (lower_eq(which, "baremetalhost"))
		return bmh;
	return NULL;
}

/* The metaData map (a JSON object of strings) or NULL with msg. */
static json_t *render(const json_t *tmpl, const json_t *m3m, const json_t *machine, const json_t *bmh, int64_t index,
		      char *msg, size_t size)
{
	const json_t *md = json_object_get(json_object_get(tmpl, "spec"), "metaData"), *e;
	const json_t *bm = meta_of(bmh);
	const char *ns = jstr(meta_of(m3m), "namespace");
	static const char *const pools[] = { "ipAddressesFromIPPool", "prefixesFromIPPool", "gatewaysFromIPPool",
					     "dnsServersFromIPPool" };
	json_t *out = json_object();
	char buf[1200];
	size_t i;

	json_object_set_new(out, "uuid", json_string(nz(jstr(bm, "uid"))));
	json_object_set_new(out, "metal3-namespace", json_string(nz(jstr(bm, "namespace"))));
	json_object_set_new(out, "metal3-name", json_string(nz(jstr(bm, "name"))));
	json_object_set_new(out, "local-hostname", json_string(nz(jstr(bm, "name"))));
	json_object_set_new(out, "local_hostname", json_string(nz(jstr(bm, "name"))));
	json_object_set_new(out, "name", json_string(nz(jstr(bm, "name"))));
	for (i = 0; i < sizeof(pools) / sizeof(pools[0]); i++)
		if (json_array_size(json_object_get(md, pools[i]))) {
			snprintf(msg, size, "Metal3DataTemplate %s: spec.metaData.%s: IP pools are not supported",
				 nz(jstr(meta_of(tmpl), "name")), pools[i]);
			goto bad;
		}
	json_array_foreach(json_object_get(md, "strings"), i, e)
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"), json_string(nz(jstr(e, "value"))));
	json_array_foreach(json_object_get(md, "namespaces"), i, e)
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"), json_string(nz(ns)));
	json_array_foreach(json_object_get(md, "objectNames"), i, e) {
		const json_t *o = item_object(jstr(e, "object"), m3m, machine, bmh);

		if (!o) {
			snprintf(msg, size, "spec.metaData.objectNames[%zu].object: unknown object type \"%s\"", i,
				 nz(jstr(e, "object")));
			goto bad;
		}
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"), json_string(nz(jstr(meta_of(o), "name"))));
	}
	json_array_foreach(json_object_get(md, "indexes"), i, e) {
		int64_t step = json_integer_value(json_object_get(e, "step"));
		int64_t off = json_integer_value(json_object_get(e, "offset"));

		if (!step)
			step = 1;
		snprintf(buf, sizeof(buf), "%s%lld%s", nz(jstr(e, "prefix")), (long long)(off + index * step),
			 nz(jstr(e, "suffix")));
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"), json_string(buf));
	}
	json_array_foreach(json_object_get(md, "fromLabels"), i, e) {
		const json_t *o = item_object(jstr(e, "object"), m3m, machine, bmh);

		if (!o) {
			snprintf(msg, size, "spec.metaData.fromLabels[%zu].object: unknown object type \"%s\"", i,
				 nz(jstr(e, "object")));
			goto bad;
		}
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"),
					    json_string(nz(jstr(json_object_get(meta_of(o), "labels"),
								nz(jstr(e, "label"))))));
	}
	json_array_foreach(json_object_get(md, "fromAnnotations"), i, e) {
		const json_t *o = item_object(jstr(e, "object"), m3m, machine, bmh);

		if (!o) {
			snprintf(msg, size, "spec.metaData.fromAnnotations[%zu].object: unknown object type \"%s\"", i,
				 nz(jstr(e, "object")));
			goto bad;
		}
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"),
					    json_string(nz(jstr(json_object_get(meta_of(o), "annotations"),
								nz(jstr(e, "annotation"))))));
	}
	json_array_foreach(json_object_get(md, "fromHostInterfaces"), i, e) {
		const char *mac = NULL;

		if (json_is_true(json_object_get(e, "fromBootMAC"))) {
			mac = jstr(json_object_get(bmh, "spec"), "bootMACAddress");
			if (!mac || !*mac) {
				snprintf(msg, size, "metadata key \"%s\": BareMetalHost %s/%s spec.bootMACAddress is empty",
					 nz(jstr(e, "key")), nz(jstr(bm, "namespace")), nz(jstr(bm, "name")));
				goto bad;
			}
		} else {
			const json_t *nic;
			size_t j;

			json_array_foreach(json_object_get(json_object_get(json_object_get(bmh, "status"), "hardware"),
							   "nics"),
					   j, nic)
				if (jstr(nic, "name") && strcmp(jstr(nic, "name"), nz(jstr(e, "interface"))) == 0) {
					mac = jstr(nic, "mac");
					break;
				}
			if (!mac) {
				snprintf(msg, size, "NIC name not found %s", nz(jstr(e, "interface")));
				goto bad;
			}
		}
		if (jstr(e, "key"))
			json_object_set_new(out, jstr(e, "key"), json_string(mac));
	}
	snprintf(buf, sizeof(buf), "%s/%s/%s", nz(ns), nz(jstr(bm, "name")), nz(jstr(meta_of(m3m), "name")));
	json_object_set_new(out, "providerid", json_string(buf));
	return out;
bad:
	json_decref(out);
	return NULL;
}

/* The map as YAML: one `"key": "value"` line per key, sorted. */
static char *to_yaml(const json_t *map)
{
	const char **keys;
	const char *k;
	json_t *v;
	size_t n = json_object_size(map), i = 0, j, len = 0;
	char *out, *p;

	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		return NULL;
	json_object_foreach((json_t *)map, k, v)
		keys[i++] = k;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) {
			const char *t = keys[j];

			keys[j] = keys[j - 1];
			keys[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		json_t *kj = json_string(keys[i]);
		char *a = json_dumps(kj, JSON_ENCODE_ANY), *b = json_dumps(json_object_get(map, keys[i]), JSON_ENCODE_ANY);

		len += (a ? strlen(a) : 0) + (b ? strlen(b) : 0) + 3;
		free(a);
		free(b);
		json_decref(kj);
	}
	out = p = malloc(len + 1);
	if (!out) {
		free(keys);
		return NULL;
	}
	*p = 0;
	for (i = 0; i < n; i++) {
		json_t *kj = json_string(keys[i]);
		char *a = json_dumps(kj, JSON_ENCODE_ANY), *b = json_dumps(json_object_get(map, keys[i]), JSON_ENCODE_ANY);

		p += sprintf(p, "%s: %s\n", nz(a), nz(b));
		free(a);
		free(b);
		json_decref(kj);
	}
	free(keys);
	return out;
}

static json_t *owner_ref(const char *api_version, const char *kind, const json_t *obj, bool controller)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:b,s:b}", "apiVersion", api_version, "kind", kind, "name",
			 nz(jstr(meta_of(obj), "name")), "uid", nz(jstr(meta_of(obj), "uid")), "controller", controller,
			 "blockOwnerDeletion", true);
}

/* Get ns/name of k, creating it from body (stolen) when absent. */
static int get_or_create(struct hub *h, const struct kube_kind *k, const char *ns, const char *name, json_t *body,
			 json_t **ret)
{
	ah_err err = { 0 };
	int r = kube_get(h->api, k, ns, name, ret, &err);

	if (r == -ENOENT) {
		r = kube_create(h->api, k, ns, body, NULL, ret, &err);
		if (r < 0 && err.status == 409)
			r = -EAGAIN;
		else if (r < 0)
			log_warn("capm3: creating %s %s/%s: %s", k->kind, ns, name, err.message);
	}
	json_decref(body);
	return r;
}

static int status_patch(struct hub *h, const struct kube_kind *k, const json_t *obj, json_t *status, bool guard)
{
	struct kube_opts o = { .status = true };
	json_t *patch = json_pack("{s:o}", "status", status), *ret = NULL;
	ah_err err = { 0 };
	int r;

	if (guard)
		json_object_set_new(patch, "metadata",
				    json_pack("{s:O}", "resourceVersion",
					      json_object_get(meta_of(obj), "resourceVersion")));
	r = kube_patch(h->api, k, jstr(meta_of(obj), "namespace"), jstr(meta_of(obj), "name"),
		       "application/merge-patch+json", patch, &o, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	if (r < 0 && err.status == 409)
		return -EAGAIN;
	if (r < 0 && r != -ENOENT)
		log_warn("capm3: %s %s/%s: writing status: %s", k->kind, jstr(meta_of(obj), "namespace"),
			 jstr(meta_of(obj), "name"), err.message);
	return r == -ENOENT ? 0 : r;
}

/* The claim's index in the template (taking the lowest free one). */
static int claim_index(struct hub *h, const struct kube_kind *kt, const json_t *tmpl, const char *claim,
		       int64_t *ret)
{
	const json_t *idx = json_object_get(json_object_get(tmpl, "status"), "indexes"), *v;
	const char *k;
	int64_t i;

	if (json_is_integer(json_object_get(idx, claim))) {
		*ret = json_integer_value(json_object_get(idx, claim));
		return 0;
	}
	for (i = 0;; i++) {
		bool used = false;

		json_object_foreach((json_t *)idx, k, v)
			if (json_integer_value(v) == i)
				used = true;
		if (!used)
			break;
	}
	*ret = i;
	return status_patch(h, kt, tmpl, json_pack("{s:{s:I}}", "indexes", claim, (json_int_t)i), true);
}

int capm3_data_render(struct hub *h, const json_t *m3m, const json_t *machine, const json_t *bmh,
		      const char *cluster, char **ret_secret, char **ret_data, char *msg, size_t msg_size)
{
	const struct kube_kind *kt = capm3_kind(h, "Metal3DataTemplate"), *kc = capm3_kind(h, "Metal3DataClaim");
	const struct kube_kind *kd = capm3_kind(h, "Metal3Data");
	const json_t *ref = json_object_get(json_object_get(m3m, "spec"), "dataTemplate");
	const char *ns = jstr(meta_of(m3m), "namespace"), *name = jstr(meta_of(m3m), "name");
	const char *tname = jstr(ref, "name");
	json_t *tmpl = NULL, *claim = NULL, *data = NULL, *secret = NULL, *map = NULL, *labels;
	char dname[600], sname[600], *yaml = NULL, *b64 = NULL;
	ah_err err = { 0 };
	int64_t index = 0;
	int r;

	*ret_secret = *ret_data = NULL;
	if (!kt || !kc || !kd) {
		snprintf(msg, msg_size, "the Metal3DataTemplate kinds are not served");
		return -EINVAL;
	}
	if (!tname || !*tname) {
		snprintf(msg, msg_size, "spec.dataTemplate.name: Required value");
		return -EINVAL;
	}
	if (*nz(jstr(ref, "namespace")) && strcmp(jstr(ref, "namespace"), ns) != 0) {
		snprintf(msg, msg_size, "spec.dataTemplate.namespace: must be the Metal3Machine's namespace %s", ns);
		return -EINVAL;
	}
	r = kube_get(h->api, kt, ns, tname, &tmpl, &err);
	if (r == -ENOENT) {
		snprintf(msg, msg_size, "Metal3DataTemplate %s/%s not found", ns, tname);
		return 1;
	}
	if (r < 0)
		return r;
	labels = cluster && *cluster ? json_pack("{s:s}", CAPI_LABEL_CLUSTER, cluster) : json_object();
	r = get_or_create(h, kc, ns, name,
			  json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:[o]},s:{s:{s:s,s:s}}}", "apiVersion", CAPM3_API_VERSION,
				    "kind", "Metal3DataClaim", "metadata", "name", name, "namespace", ns, "labels",
				    labels, "ownerReferences", owner_ref(CAPM3_API_VERSION, "Metal3Machine", m3m, true),
				    "spec", "template", "name", tname, "namespace", ns),
			  &claim);
	if (r == 0)
		r = claim_index(h, kt, tmpl, name, &index);
	if (r < 0)
		goto out;
	snprintf(dname, sizeof(dname), "%s-%lld", tname, (long long)index);
	snprintf(sname, sizeof(sname), "%s%s", name, METADATA_SUFFIX);
	r = get_or_create(
		h, kd, ns, dname,
		json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:[o,o]},s:{s:I,s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}}}", "apiVersion",
			  CAPM3_API_VERSION, "kind", "Metal3Data", "metadata", "name", dname, "namespace", ns, "labels",
			  labels, "ownerReferences", owner_ref(CAPM3_API_VERSION, "Metal3DataTemplate", tmpl, true),
			  owner_ref(CAPM3_API_VERSION, "Metal3DataClaim", claim, false), "spec", "index",
			  (json_int_t)index, "template", "name", tname, "namespace", ns, "claim", "name", name,
			  "namespace", ns, "metaData", "name", sname, "namespace", ns),
		&data);
	if (r < 0)
		goto out;
	map = render(tmpl, m3m, machine, bmh, index, msg, msg_size);
	if (!map) {
		r = -EINVAL;
		goto out;
	}
	yaml = to_yaml(map);
	b64 = yaml ? util_base64_encode(yaml, strlen(yaml)) : NULL;
	if (!b64) {
		r = -ENOMEM;
		goto out;
	}
	r = kube_get(h->api, h->k_secret, ns, sname, &secret, &err);
	if (r == 0 && !(jstr(json_object_get(secret, "data"), "metaData") &&
			strcmp(jstr(json_object_get(secret, "data"), "metaData"), b64) == 0)) {
		/* Rendered for another host (or by hand): rendered again. */
		json_t *ret = NULL;

		json_object_set_new(secret, "data", json_pack("{s:s}", "metaData", b64));
		r = kube_update(h->api, h->k_secret, ns, sname, secret, NULL, &ret, &err);
		json_decref(ret);
		if (r < 0 && err.status == 409)
			r = -EAGAIN;
	} else if (r == -ENOENT) {
		json_t *ret = NULL;
		json_t *body = json_pack("{s:s,s:s,s:{s:s,s:s,s:O,s:[o]},s:s,s:{s:s}}", "apiVersion", "v1", "kind",
					 "Secret", "metadata", "name", sname, "namespace", ns, "labels", labels,
					 "ownerReferences", owner_ref(CAPM3_API_VERSION, "Metal3Data", data, true),
					 "type", "Opaque", "data", "metaData", b64);

		r = kube_create(h->api, h->k_secret, ns, body, NULL, &ret, &err);
		if (r < 0 && err.status == 409)
			r = -EAGAIN;
		json_decref(ret);
		json_decref(body);
	}
	if (r < 0) {
		if (r != -EAGAIN)
			log_warn("capm3: Secret %s/%s: %s", ns, sname, err.message);
		goto out;
	}
	if (!json_is_true(json_object_get(json_object_get(data, "status"), "ready")))
		r = status_patch(h, kd, data, json_pack("{s:b}", "ready", 1), false);
	if (r == 0 && !jstr(json_object_get(json_object_get(claim, "status"), "renderedData"), "name"))
		r = status_patch(h, kc, claim,
				 json_pack("{s:{s:s,s:s,s:s,s:s}}", "renderedData", "apiVersion", CAPM3_API_VERSION,
					   "kind", "Metal3Data", "name", dname, "namespace", ns),
				 false);
	if (r == 0) {
		*ret_secret = strdup(sname);
		*ret_data = strdup(dname);
		if (!*ret_secret || !*ret_data) {
			free(*ret_secret);
			free(*ret_data);
			*ret_secret = *ret_data = NULL;
			r = -ENOMEM;
		}
	}
out:
	free(yaml);
	free(b64);
	json_decref(map);
	json_decref(secret);
	json_decref(data);
	json_decref(claim);
	json_decref(labels);
	json_decref(tmpl);
	return r;
}

int capm3_data_release(struct hub *h, const json_t *m3m)
{
	const struct kube_kind *kt = capm3_kind(h, "Metal3DataTemplate"), *kc = capm3_kind(h, "Metal3DataClaim");
	const struct kube_kind *kd = capm3_kind(h, "Metal3Data");
	const char *ns = jstr(meta_of(m3m), "namespace"), *name = jstr(meta_of(m3m), "name");
	const char *tname = jstr(json_object_get(json_object_get(m3m, "spec"), "dataTemplate"), "name");
	json_t *claim = NULL, *tmpl = NULL, *ret = NULL;
	ah_err err = { 0 };
	int r = 0;

	if (!kt || !kc || !kd || !tname)
		return 0;
	if (kube_get(h->api, kc, ns, name, &claim, &err) == 0) {
		const char *d = jstr(json_object_get(json_object_get(claim, "status"), "renderedData"), "name");

		if (d && kube_delete(h->api, kd, ns, d, NULL, &ret, &err) < 0 && err.status != 404)
			r = -EIO;
		json_decref(ret);
		ret = NULL;
		if (r == 0 && kube_delete(h->api, kc, ns, name, NULL, &ret, &err) < 0 && err.status != 404)
			r = -EIO;
		json_decref(ret);
		json_decref(claim);
		if (r < 0) {
			log_warn("capm3: releasing the data of Metal3Machine %s/%s: %s", ns, name, err.message);
			return r;
		}
	}
	if (kube_get(h->api, kt, ns, tname, &tmpl, &err) == 0) {
		if (json_object_get(json_object_get(json_object_get(tmpl, "status"), "indexes"), name))
			r = status_patch(h, kt, tmpl, json_pack("{s:{s:n}}", "indexes", name), true);
		json_decref(tmpl);
	}
	return r;
}
