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
 * image carries (image/nmstate.h nmstate_bundle_tar()). */
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

/* Parsed NMStateConfigs with the exact stored text each came from, so a
 * listing parses only what changed (parsing 10,000 objects costs more than
 * converting them); and the last static-network parts of each InfraEnv with
 * the fingerprint of their inputs, so a re-render (every reconcile, every
 * ISO download) of an unchanged set converts nothing.  Entries are keyed by
 * content, so sharing them between the hubs of one process is safe.  Both
 * maps are guarded by cache_lock; a namespace's entries are replaced by each
 * listing of it, so deleted objects do not linger. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *cache_objs;      /* ns -> {name -> {"text", "obj", "id"}} */
static json_t *cache_parts;     /* InfraEnv uid -> {"key", "files", "units"} */
static json_int_t cache_next_id;
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

struct selected {
	const label_selector *sel;
	json_t *old_ns, *new_ns;   /* cache entries of the namespace: before / seen now */
	json_t *objs;              /* the matching NMStateConfigs */
	strbuf key;                /* "name:id," of each match: the fingerprint */
	int r;
};

static int select_visit(const store_obj *so, void *userdata)
{
	struct selected *s = userdata;
	json_t *e = json_object_get(s->old_ns, so->name), *o;
	const char *text = json_string_value(json_object_get(e, "text"));

	if (!text || json_string_length(json_object_get(e, "text")) != so->len ||
	    memcmp(text, so->json, so->len) != 0) {
		o = json_loadb(so->json, so->len, 0, NULL);
		e = json_pack("{s:s%,s:o,s:I}", "text", so->json, so->len, "obj", o, "id",
			      ++cache_next_id);
		if (!o || !e) {
			json_decref(e);
			s->r = -ENOMEM;
			return 1;
		}
	} else {
		json_incref(e);
	}
	if (json_object_set_new(s->new_ns, so->name, e) < 0) {
		s->r = -ENOMEM;
		return 1;
	}
	o = json_object_get(e, "obj");
	if (!label_selector_matches(s->sel, json_object_get(json_object_get(o, "metadata"), "labels")))
		return 0;
	if (json_array_append(s->objs, o) < 0 ||
	    strbuf_addf(&s->key, "%s:%" JSON_INTEGER_FORMAT ",", so->name,
			json_integer_value(json_object_get(e, "id"))) < 0) {
		s->r = -ENOMEM;
		return 1;
	}
	return 0;
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
	const struct kube_kind *k = kube_registry_by_kind(h->reg, NMSTATE_KIND_API, "NMStateConfig");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	struct selected s = { .key = STRBUF_INIT };
	struct nmstate_host *hosts = NULL;
	label_selector *sel = NULL;
	char **labels = NULL;
	size_t i, n;
	json_t *o;
	int r;

	*ret_objs = NULL;
	*ret_hosts = NULL;
	*ret_labels = NULL;
	*ret_n = 0;
	if (ret_key)
		*ret_key = NULL;
	if (!k || !ns || !selj || json_is_null(selj))
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
	if (!cache_objs && !(cache_objs = json_object())) {
		label_selector_free(sel);
		return -ENOMEM;
	}
	s.sel = sel;
	s.old_ns = json_object_get(cache_objs, ns);
	s.new_ns = json_object();
	s.objs = json_array();
	if (!s.objs || !s.new_ns) {
		label_selector_free(sel);
		json_decref(s.objs);
		json_decref(s.new_ns);
		return -ENOMEM;
	}
	r = store_list(h->store, k->store_key, ns, NULL, NULL, select_visit, &s, NULL);
	label_selector_free(sel);
	if (r >= 0)
		r = s.r;
	if (r >= 0 && json_object_set(cache_objs, ns, s.new_ns) < 0)
		r = -ENOMEM;
	json_decref(s.new_ns);
	if (r < 0) {
		json_decref(s.objs);
		strbuf_release(&s.key);
		return ah_err_set(err, r, 500, "InternalError", "listing NMStateConfigs failed");
	}
	n = json_array_size(s.objs);
	if (n == 0) {
		json_decref(s.objs);
		strbuf_release(&s.key);
		return 0;
	}
	hosts = calloc(n, sizeof(*hosts));
	labels = calloc(n, sizeof(*labels));
	if (!hosts || !labels) {
		free(hosts);
		free(labels);
		json_decref(s.objs);
		strbuf_release(&s.key);
		return -ENOMEM;
	}
	json_array_foreach(s.objs, i, o) {
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
		json_decref(s.objs);
		strbuf_release(&s.key);
		return r;
	}
	*ret_objs = s.objs;
	*ret_hosts = hosts;
	*ret_labels = labels;
	*ret_n = n;
	if (ret_key)
		*ret_key = strbuf_detach(&s.key, NULL);
	strbuf_release(&s.key);
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

static int collect_visit(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_string(name));
	return 0;
}

/* An NMStateConfig was written: queue the InfraEnvs of its namespace that
 * select it (kubeapi.md §4.2), read from the runtime's cache. */
static void nmstate_to_infraenvs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	const json_t *labels = json_object_get(json_object_get(ev->obj, "metadata"), "labels");
	/* The event holds only the new labels: after a label edit the
	 * InfraEnvs that selected the old ones must look again too. */
	bool any_selector = ev->so->type == STORE_MODIFIED;
	json_t *names = json_array(), *v;
	size_t i;

	rt_cache_keys_ns(h->rt, h->k_infraenv->store_key, ev->so->ns, collect_visit, names);
	json_array_foreach(names, i, v) {
		json_t *ie = rt_cache_get(h->rt, h->k_infraenv->store_key, ev->so->ns, json_string_value(v));
		const json_t *selj = json_object_get(json_object_get(ie, "spec"), "nmStateConfigLabelSelector");
		label_selector *sel = NULL;

		/* Upstream's mapper compares matchLabels only; the whole
		 * selector is the same for those and exact when
		 * matchExpressions are used too. */
		if (json_is_object(selj) && label_selector_from_json(selj, &sel, NULL) == 0 &&
		    !label_selector_is_empty(sel) && (any_selector || label_selector_matches(sel, labels)))
			rt_enqueue(c, ev->so->ns, json_string_value(v));
		label_selector_free(sel);
		json_decref(ie);
	}
	json_decref(names);
}

int hub_nmstate_register(struct hub *h)
{
	struct rt_watch w = {
		.resource = "nmstateconfigs.agent-install.openshift.io",
		.map = RT_MAP_FN,
		.fn = nmstate_to_infraenvs,
	};

	return rt_watch_add(h->c_infraenv, &w);
}
