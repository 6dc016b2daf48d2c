/* nmstate.c - static networking for the InfraEnv controller: the
 * NMStateConfigs an InfraEnv selects become the static-network part of its
 * discovery ignition (kubeapi.md 1.4 and 4.1, image.md 4); NMStateConfig
 * events requeue the InfraEnvs they concern.
 *
 * Selection: an InfraEnv's spec.nmStateConfigLabelSelector picks the
 * NMStateConfigs of its own namespace (an empty selector picks none).
 * Upstream lists them in every namespace while its watch only requeues
 * same-namespace InfraEnvs; keeping to one namespace makes both agree and
 * keeps one tenant's configs out of another's image.  Hosts are numbered in
 * (namespace, name) order, so the image does not change between listings.
 * The static-network-config download is the tar of the very bundle the
 * image carries (image/nmstate.h nmstate_bundle_tar()).
 *
 * Lookups go through the runtime's cache, never a listing: NMStateConfigs
 * are cached (parsed) with an index of their labels ("ns/key=value"), so
 * an InfraEnv's selector finds its candidates by one of its matchLabels
 * (or an In expression's values); InfraEnvs are indexed by the label
 * pairs their selector names, so an NMStateConfig event finds the
 * InfraEnvs it concerns.  Only a selector made of nothing but
 * NotIn/Exists/DoesNotExist expressions, which names no value, reads the
 * cache's namespace listing. */
#include "hub-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "image/ignition.h"
#include "image/iso.h"
#include "image/nmstate.h"
#include "kube/selector.h"

#define NMSTATE_KIND_API "agent-install.openshift.io/v1beta1"

#define NMSTATE_RESOURCE "nmstateconfigs.agent-install.openshift.io"
/* NMStateConfig -> "ns/key=value" of each of its labels. */
#define IDX_NMSTATE_LABEL "labels"
/* InfraEnv -> "ns/key=value" of each pair its selector requires (matchLabels,
 * In values), or "ns/" plus "*" when it names none (only negative expressions). */
#define IDX_IE_SELECTS "nmStateSelects"

/* The last static-network parts of each InfraEnv with the fingerprint of
 * their inputs (name:resourceVersion of each selected config), so a
 * re-render (every reconcile, every ISO download) of an unchanged set
 * converts nothing.  Entries are keyed by content, so sharing them between
 * the hubs of one process is safe.  Guarded by cache_lock. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *cache_parts;     /* InfraEnv uid -> {"key", "files", "units"} */
#define CACHE_PARTS_MAX 64

/* What the last hub_build_ignition() on this thread learned about static
 * networking (hub_static_net_last_build()): parts() starts a build and
 * resets it, check_fit() records the payload length it measured.  The
 * buffer pointer is only compared, never read. */
static _Thread_local struct {
	char uid[64];
	size_t hosts;
	const char *ign;       /* the ignition check_fit() measured */
	size_t len, payload_len;
} last_build;

static int collect_pair(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

/* The index values "ns/key=value" every NMStateConfig a selector matches
 * carries one of: its first matchLabels pair, else the values of its first
 * In expression; false when it names none (only NotIn, Exists and
 * DoesNotExist). */
static bool selector_values(const char *ns, const json_t *selj, json_t *out)
{
	const json_t *ml = json_object_get(selj, "matchLabels"), *e, *v;
	const char *k;
	char buf[1024];
	size_t i, j;

	json_object_foreach((json_t *)ml, k, v) {
		if (!json_is_string(v))
			continue;
		snprintf(buf, sizeof(buf), "%s/%s=%s", ns, k, json_string_value(v));
		json_array_append_new(out, json_string(buf));
		return true;
	}
	json_array_foreach(json_object_get(selj, "matchExpressions"), i, e) {
		const char *op = json_string_value(json_object_get(e, "operator"));
		const char *key = json_string_value(json_object_get(e, "key"));
		bool any = false;

		if (!op || !key || strcmp(op, "In") != 0)
			continue;
		json_array_foreach(json_object_get(e, "values"), j, v)
			if (json_is_string(v)) {
				snprintf(buf, sizeof(buf), "%s/%s=%s", ns, key, json_string_value(v));
				json_array_append_new(out, json_string(buf));
				any = true;
			}
		/* "In ()" matches nothing: no value is the right answer. */
		return any || json_array_size(json_object_get(e, "values")) == 0;
	}
	return false;
}

/* The candidates for a selector: the NMStateConfigs of ns that carry the
 * label pair (or any of the In values) with the fewest holders, or the
 * namespace's when it names no value.  A new array of ["ns","name"]. */
static json_t *candidates(struct hub *h, const char *ns, const json_t *selj)
{
	json_t *vals = json_array(), *best = NULL, *v;
	size_t i;

	if (!vals)
		return NULL;
	if (!selector_values(ns, selj, vals)) {
		best = json_array();
		if (best)
			rt_cache_keys_ns(h->rt, NMSTATE_RESOURCE, ns, collect_pair, best);
		json_decref(vals);
		return best;
	}
	/* The union over the values (one, or an In expression's), filtered
	 * by the whole selector afterwards. */
	best = json_array();
	json_array_foreach(vals, i, v)
		if (best)
			rt_cache_keys_by(h->rt, NMSTATE_RESOURCE, IDX_NMSTATE_LABEL, json_string_value(v), collect_pair,
					 best);
	json_decref(vals);
	return best;
}

static int cmp_names(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;

	return strcmp(json_string_value(json_object_get(json_object_get(x, "metadata"), "name")),
		      json_string_value(json_object_get(json_object_get(y, "metadata"), "name")));
}

/* The selected NMStateConfigs as builder input.  *ret_objs owns the
 * objects the hosts point into; *ret_hosts and its labels are malloc'd;
 * *ret_key (may be NULL) the fingerprint of the selection.  Call with
 * cache_lock held. */
static int load_hosts(struct hub *h, const json_t *ie, json_t **ret_objs,
		      struct nmstate_host **ret_hosts, char ***ret_labels, size_t *ret_n,
		      char **ret_key, ah_err *err)
{
	const json_t *meta = json_object_get(ie, "metadata");
	const json_t *selj = json_object_get(json_object_get(ie, "spec"), "nmStateConfigLabelSelector");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	strbuf key = STRBUF_INIT;
	struct nmstate_host *hosts = NULL;
	label_selector *sel = NULL;
	char **labels = NULL;
	json_t *objs = NULL, *cands, *pair, **arr = NULL, *seen;
	size_t i, n, na = 0;
	json_t *o;
	int r = 0;

	*ret_objs = NULL;
	*ret_hosts = NULL;
	*ret_labels = NULL;
	*ret_n = 0;
	if (ret_key)
		*ret_key = NULL;
	if (!ns || !selj || json_is_null(selj))
		return 0;
	if ((r = label_selector_from_json(selj, &sel, err)) < 0) {
		ah_err_prefix(err, "spec.nmStateConfigLabelSelector");
		err->status = 400;
		return r;
	}
	if (label_selector_is_empty(sel)) {
		label_selector_free(sel);
		return 0;
	}
	cands = candidates(h, ns, selj);
	objs = json_array();
	arr = cands ? calloc(json_array_size(cands) + 1, sizeof(*arr)) : NULL;
	if (!cands || !objs || !arr) {
		label_selector_free(sel);
		json_decref(cands);
		json_decref(objs);
		free(arr);
		return -ENOMEM;
	}
	seen = json_object();
	json_array_foreach(cands, i, pair) {
		const char *name = json_string_value(json_array_get(pair, 1));

		/* In values: an object may carry only one of them, but be safe. */
		if (!seen || json_object_get(seen, name) || json_object_set_new(seen, name, json_true()) < 0)
			continue;
		o = rt_cache_get(h->rt, NMSTATE_RESOURCE, ns, name);
		if (!o)
			continue;
		if (!label_selector_matches(sel, json_object_get(json_object_get(o, "metadata"), "labels"))) {
			json_decref(o);
			continue;
		}
		arr[na++] = o;
	}
	label_selector_free(sel);
	json_decref(cands);
	json_decref(seen);
	/* Hosts are numbered in name order: the image does not change with
	 * the order of a lookup. */
	qsort(arr, na, sizeof(*arr), cmp_names);
	for (i = 0; i < na; i++) {
		const json_t *m = json_object_get(arr[i], "metadata");

		if (r == 0 && (json_array_append(objs, arr[i]) < 0 ||
			       strbuf_addf(&key, "%s:%s,", json_string_value(json_object_get(m, "name")),
					   json_string_value(json_object_get(m, "resourceVersion")) ?
					   json_string_value(json_object_get(m, "resourceVersion")) : "") < 0))
			r = -ENOMEM;
		json_decref(arr[i]);
	}
	free(arr);
	if (r < 0) {
		json_decref(objs);
		strbuf_release(&key);
		return r;
	}
	n = json_array_size(objs);
	if (n == 0) {
		json_decref(objs);
		strbuf_release(&key);
		return 0;
	}
	hosts = calloc(n, sizeof(*hosts));
	labels = calloc(n, sizeof(*labels));
	if (!hosts || !labels) {
		free(hosts);
		free(labels);
		json_decref(objs);
		strbuf_release(&key);
		return -ENOMEM;
	}
	json_array_foreach(objs, i, o) {
		const json_t *m = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");

		if (asprintf(&labels[i], "%s/%s", json_string_value(json_object_get(m, "namespace")),
			     json_string_value(json_object_get(m, "name"))) < 0) {
			labels[i] = NULL;
			r = -ENOMEM;
		}
		hosts[i].label = labels[i];
		hosts[i].config = json_object_get(spec, "config");
		hosts[i].interfaces = json_object_get(spec, "interfaces");
	}
	if (r < 0) {
		for (i = 0; i < n; i++)
			free(labels[i]);
		free(labels);
		free(hosts);
		json_decref(objs);
		strbuf_release(&key);
		return r;
	}
	*ret_objs = objs;
	*ret_hosts = hosts;
	*ret_labels = labels;
	*ret_n = n;
	if (ret_key)
		*ret_key = strbuf_detach(&key, NULL);
	strbuf_release(&key);
	return 0;
}

static void free_hosts(json_t *objs, struct nmstate_host *hosts, char **labels, size_t n)
{
	for (size_t i = 0; labels && i < n; i++)
		free(labels[i]);
	free(labels);
	free(hosts);
	json_decref(objs);
}

int hub_static_net_parts(struct hub *h, const json_t *ie, json_t **ret_files, json_t **ret_units,
			 ah_err *err)
{
	const char *uid = json_string_value(json_object_get(json_object_get(ie, "metadata"), "uid"));
	struct nmstate_host *hosts;
	char **labels, *key = NULL;
	json_t *objs, *c;
	size_t n;
	int r;

	*ret_files = NULL;
	*ret_units = NULL;
	memset(&last_build, 0, sizeof(last_build));
	snprintf(last_build.uid, sizeof(last_build.uid), "%s", uid ? uid : "");
	pthread_mutex_lock(&cache_lock);
	if ((r = load_hosts(h, ie, &objs, &hosts, &labels, &n, &key, err)) < 0 || n == 0)
		goto out;
	last_build.hosts = n;
	c = uid ? json_object_get(cache_parts, uid) : NULL;
	if (c && strcmp(json_string_value(json_object_get(c, "key")), key) == 0) {
		/* Shared, read-only: the ignition builder copies what it uses. */
		*ret_files = json_incref(json_object_get(c, "files"));
		*ret_units = json_incref(json_object_get(c, "units"));
	} else if ((r = nmstate_ignition_parts(hosts, n, ret_files, ret_units, err)) == 0 && uid) {
		if (!cache_parts || json_object_size(cache_parts) >= CACHE_PARTS_MAX) {
			json_decref(cache_parts);
			cache_parts = json_object();
		}
		if (cache_parts)
			json_object_set_new(cache_parts, uid,
					    json_pack("{s:s,s:O,s:O}", "key", key, "files", *ret_files,
						      "units", *ret_units));
	}
	free_hosts(objs, hosts, labels, n);
out:
	pthread_mutex_unlock(&cache_lock);
	free(key);
	return r;
}

/* Length of the embed-area payload of the ignition built from p with the
 * first k hosts; 0 or -errno. */
static int payload_len(struct discovery_params *p, const struct nmstate_host *hosts, size_t k,
		       size_t *ret, ah_err *err)
{
	json_t *files = NULL, *units = NULL;
	unsigned char *payload = NULL;
	char *ign = NULL;
	size_t len = 0;
	int r = 0;

	if (k)
		r = nmstate_ignition_parts(hosts, k, &files, &units, err);
	p->static_network_files = files;
	p->static_network_units = units;
	if (r == 0)
		r = ignition_build_discovery(p, &ign, &len, err);
	if (r == 0)
		r = ignition_payload_build(ign, len, &payload, ret, err);
	free(ign);
	free(payload);
	json_decref(files);
	json_decref(units);
	p->static_network_files = NULL;
	p->static_network_units = NULL;
	return r;
}

int hub_static_net_check_fit(struct hub *h, const json_t *ie, const struct discovery_params *params,
			     const char *ign, size_t len, ah_err *err)
{
	struct discovery_params p = *params;
	struct nmstate_host *hosts;
	unsigned char *payload = NULL;
	size_t plen = 0, n, lo, hi, sz;
	char **labels;
	json_t *objs;
	int r;

	if ((r = ignition_payload_build(ign, len, &payload, &plen, err)) < 0)
		return r;
	free(payload);
	last_build.ign = ign;
	last_build.len = len;
	last_build.payload_len = plen;
	if (plen <= ISO_IGNITION_AREA_SIZE)
		return 0;
	/* Too big: find how many of the selected configs would fit, so the
	 * message tells the user what to aim for.  lo fits, hi does not. */
	pthread_mutex_lock(&cache_lock);
	r = load_hosts(h, ie, &objs, &hosts, &labels, &n, NULL, err);
	pthread_mutex_unlock(&cache_lock);
	if (r < 0)
		return r;
	lo = 0;
	hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if ((r = payload_len(&p, hosts, mid, &sz, err)) < 0) {
			free_hosts(objs, hosts, labels, n);
			return r;
		}
		if (sz <= ISO_IGNITION_AREA_SIZE)
			lo = mid;
		else
			hi = mid;
	}
	free_hosts(objs, hosts, labels, n);
	return ah_err_set(err, E2BIG, 400, "BadRequest",
			  "The ignition archive size (%zu KiB) is over the maximum allowable size "
			  "(%d KiB): %zu NMStateConfigs are selected and at most %zu fit",
			  plen / 1024, ISO_IGNITION_AREA_SIZE / 1024, n, lo);
}

int hub_static_net_last_build(const char *uid, const char *ign, size_t len, size_t *ret_hosts,
			      size_t *ret_payload_len)
{
	*ret_hosts = 0;
	*ret_payload_len = 0;
	if (!uid || !last_build.uid[0] || strcmp(uid, last_build.uid) != 0)
		return -ENOENT;
	*ret_hosts = last_build.hosts;
	if (last_build.ign && last_build.ign == ign && last_build.len == len)
		*ret_payload_len = last_build.payload_len;
	return 0;
}

int hub_static_net_archive(struct hub *h, const json_t *ie, char **ret, size_t *ret_len,
			   ah_err *err)
{
	struct nmstate_host *hosts;
	char **labels, *bundle = NULL;
	size_t n, blen = 0;
	json_t *objs;
	int r;

	*ret = NULL;
	*ret_len = 0;
	pthread_mutex_lock(&cache_lock);
	r = load_hosts(h, ie, &objs, &hosts, &labels, &n, NULL, err);
	pthread_mutex_unlock(&cache_lock);
	if (r < 0 || n == 0)
		return r;
	/* Through the bundle: the archive holds what the image holds. */
	r = nmstate_bundle_build(hosts, n, &bundle, &blen, err);
	free_hosts(objs, hosts, labels, n);
	if (r == 0)
		r = nmstate_bundle_tar(bundle, blen, ret, ret_len, err);
	free(bundle);
	return r;
}

/* Index: an NMStateConfig's labels as "ns/key=value". */
static void nmstate_label_index(const json_t *obj, json_t *out)
{
	const json_t *meta = json_object_get(obj, "metadata"), *v;
	const char *ns = json_string_value(json_object_get(meta, "namespace")), *k;
	char buf[1024];

	if (!ns)
		return;
	json_object_foreach(json_object_get(meta, "labels"), k, v)
		if (json_is_string(v)) {
			snprintf(buf, sizeof(buf), "%s/%s=%s", ns, k, json_string_value(v));
			json_array_append_new(out, json_string(buf));
		}
}

/* Index: what an InfraEnv's selector requires, or "ns/" plus "*" (see above); no
 * value for an InfraEnv that selects nothing. */
static void infraenv_selects_index(const json_t *obj, json_t *out)
{
	const json_t *meta = json_object_get(obj, "metadata");
	const json_t *selj = json_object_get(json_object_get(obj, "spec"), "nmStateConfigLabelSelector");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	label_selector *sel = NULL;
	char buf[600];

	if (!ns || !json_is_object(selj) || label_selector_from_json(selj, &sel, NULL) < 0)
		return;
	if (!label_selector_is_empty(sel) && !selector_values(ns, selj, out)) {
		snprintf(buf, sizeof(buf), "%s/*", ns);
		json_array_append_new(out, json_string(buf));
	}
	label_selector_free(sel);
}

/* An NMStateConfig was written or deleted: queue the InfraEnvs whose
 * selector names one of its label pairs, now or before this event (a
 * label edit concerns those that selected the old ones too), and those
 * whose selector names no value (kubeapi.md §4.2).  Reconciling one it
 * does not concern in the end writes nothing. */
static void nmstate_to_infraenvs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *vals = json_array(), *pairs = json_array(), *v, *pair;
	const json_t *old = rt_event_old_index(ev, IDX_NMSTATE_LABEL);
	char buf[600];
	size_t i;

	if (!vals || !pairs) {
		json_decref(vals);
		json_decref(pairs);
		return;
	}
	if (ev->obj)
		nmstate_label_index(ev->obj, vals);
	json_array_foreach(old, i, v)
		json_array_append(vals, v);
	snprintf(buf, sizeof(buf), "%s/*", ev->so->ns);
	json_array_append_new(vals, json_string(buf));
	json_array_foreach(vals, i, v)
		rt_cache_keys_by(h->rt, h->k_infraenv->store_key, IDX_IE_SELECTS, json_string_value(v), collect_pair,
				 pairs);
	json_array_foreach(pairs, i, pair)
		rt_enqueue(c, json_string_value(json_array_get(pair, 0)), json_string_value(json_array_get(pair, 1)));
	json_decref(vals);
	json_decref(pairs);
}

int hub_nmstate_register(struct hub *h)
{
	struct rt_watch w = {
		.resource = NMSTATE_RESOURCE,
		.map = RT_MAP_FN,
		.fn = nmstate_to_infraenvs,
	};
	int r = rt_cache_resource(h->rt, NMSTATE_RESOURCE, true);

	if (r == 0)
		r = rt_cache_index(h->rt, NMSTATE_RESOURCE, IDX_NMSTATE_LABEL, nmstate_label_index);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_infraenv->store_key, IDX_IE_SELECTS, infraenv_selects_index);
	if (r == 0)
		r = rt_watch_add(h->c_infraenv, &w);
	return r;
}
