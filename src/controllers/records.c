/* records.c - the hub's private record kinds: their schemas, the one
 * validating write, and their garbage collectors; see records.h. */
#include "hub-internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "kube/schema.h"

const struct hub_record_kind hub_record_kinds[] = {
	{ HOSTSPEC_RESOURCE, "agent-install.openshift.io/v1beta1", "Agent", HUB_RECORD_BY_NAME,
	  "{\"type\":\"object\",\"required\":[\"uid\"],\"additionalProperties\":false,\"properties\":{"
	  "\"uid\":{\"type\":\"string\"},\"role\":{\"type\":\"string\"},"
	  "\"requested_hostname\":{\"type\":\"string\"},\"installer_args\":{\"type\":\"string\"},"
	  "\"ignition_config_overrides\":{\"type\":\"string\"},\"ignition_endpoint_token\":{\"type\":\"string\"},"
	  "\"bound_cd\":{\"type\":\"string\"},\"deprovision_cd\":{\"type\":\"string\"},"
	  "\"deprovision_node\":{\"type\":\"string\"},\"node_labels\":{\"type\":\"string\"}}}" },
	{ HOSTSTATE_RESOURCE, "agent-install.openshift.io/v1beta1", "Agent", HUB_RECORD_BY_NAME,
	  "{\"type\":\"object\",\"required\":[\"uid\",\"checkedInAt\",\"status\",\"statusUpdatedAt\"],"
	  "\"additionalProperties\":false,\"properties\":{"
	  "\"uid\":{\"type\":\"string\",\"minLength\":1},\"checkedInAt\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"status\":{\"type\":\"string\"},\"statusUpdatedAt\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"facts\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}" },
	{ IMAGESTATE_RESOURCE, "agent-install.openshift.io/v1beta1", "InfraEnv", HUB_RECORD_BY_UID,
	  "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
	  "\"token\":{\"type\":\"string\",\"minLength\":1},\"rotation\":{\"type\":\"string\"},"
	  "\"rotation_rv\":{\"type\":\"integer\"},\"digest\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\"},"
	  "\"created\":{\"type\":\"string\",\"format\":\"date-time\"},\"url\":{\"type\":\"string\"}}}" },
	{ CLUSTERSTATE_RESOURCE, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", HUB_RECORD_BY_UID,
	  /* The cluster model (assisted/cluster.h): its own fields vary with
	   * the cluster's history; the ones the hub decides on are typed. */
	  "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,\"properties\":{"
	  "\"id\":{\"type\":\"string\"}}}" },
	{ EVENTTOKEN_RESOURCE, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall", HUB_RECORD_BY_UID,
	  "{\"type\":\"object\",\"required\":[\"token\"],\"additionalProperties\":false,\"properties\":{"
	  "\"token\":{\"type\":\"string\",\"minLength\":1}}}" },
	{ NULL, NULL, NULL, 0, NULL },
};

#define NKINDS (sizeof(hub_record_kinds) / sizeof(hub_record_kinds[0]) - 1)

/* The parsed schemas, once per process (the table is constant). */
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static json_t *schemas[NKINDS];

static void schemas_load(void)
{
	for (size_t i = 0; i < NKINDS; i++) {
		json_error_t jerr;

		schemas[i] = json_loads(hub_record_kinds[i].schema, 0, &jerr);
		if (!schemas[i])
			log_error("record kind %s: bad schema: %s", hub_record_kinds[i].resource, jerr.text);
	}
}

static int kind_index(const char *resource)
{
	for (size_t i = 0; i < NKINDS; i++)
		if (strcmp(hub_record_kinds[i].resource, resource) == 0)
			return (int)i;
	return -1;
}

const struct hub_record_kind *hub_record_kind(const char *resource)
{
	int i = resource ? kind_index(resource) : -1;

	return i < 0 ? NULL : &hub_record_kinds[i];
}

int hub_record_check(const char *resource, const char *text, size_t len, ah_err *err)
{
	int i = resource ? kind_index(resource) : -1;
	json_t *obj, *causes;
	json_error_t jerr;
	int n;

	if (i < 0)
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: not a declared record kind",
				  resource ? resource : "(null)");
	pthread_once(&schemas_once, schemas_load);
	if (!schemas[i])
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: no schema", resource);
	obj = json_loadb(text, len, 0, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: not a JSON object", resource);
	}
	causes = json_array();
	if (!causes) {
		json_decref(obj);
		return -ENOMEM;
	}
	n = schema_validate(schemas[i], obj, causes);
	json_decref(obj);
	if (n > 0) {
		const json_t *c = json_array_get(causes, 0);
		const char *field = json_string_value(json_object_get(c, "field"));
		const char *msg = json_string_value(json_object_get(c, "message"));

		ah_err_set(err, EINVAL, 500, "InternalError", "%s: %s: %s", resource,
			   field && *field ? field : "(root)", msg ? msg : "invalid");
		json_decref(causes);
		return -EINVAL;
	}
	json_decref(causes);
	return 0;
}

int hub_record_put(store *s, const char *resource, const char *ns, const char *name, int64_t rev,
		   const char *text)
{
	struct text_render tr = { (char *)text };
	ah_err err;
	int r;

	if (!text)
		return -ENOMEM;
	ah_err_clear(&err);
	if ((r = hub_record_check(resource, text, strlen(text), &err)) < 0) {
		if (r == -EINVAL)
			log_error("record %s/%s: refused: %s", ns && *ns ? ns : "-", name, err.message);
		return r;
	}
	if (rev > 0)
		return store_update(s, resource, ns, name, rev, hub_render_text, &tr, NULL);
	if (rev == 0)
		return store_create(s, resource, ns, name, hub_render_text, &tr, NULL);
	r = store_update(s, resource, ns, name, 0, hub_render_text, &tr, NULL);
	if (r == -ENOENT)
		r = store_create(s, resource, ns, name, hub_render_text, &tr, NULL);
	if (r == -EEXIST)
		r = store_update(s, resource, ns, name, 0, hub_render_text, &tr, NULL);
	return r;
}

int hub_record_delete(store *s, const char *resource, const char *ns, const char *name, int64_t rev)
{
	struct text_render tr = { .text = "{}" };

	return store_delete(s, resource, ns, name, rev, hub_render_text, &tr, NULL);
}

/* --- garbage collection ------------------------------------------------------ */

struct gc {
	struct hub *h;
	const struct hub_record_kind *kind;
	const struct kube_kind *owner;
	struct rt_controller *c;
};

struct hub_records {
	struct gc gc[NKINDS];
};

static int found_visit(const char *ns, const char *name, void *ud)
{
	*(bool *)ud = true;
	return 1;
}

/* Whether the record's owner lives: 1, 0, or a negative errno. */
static int owner_lives(struct gc *g, const char *ns, const char *name, const json_t *rec)
{
	store_obj *so = NULL;
	bool found = false;
	int r;

	if (g->kind->key == HUB_RECORD_BY_UID) {
		uint64_t gen = rt_cache_generation(g->h->rt);

		r = rt_cache_keys_by(g->h->rt, g->owner->store_key, HUB_IDX_UID, name, found_visit, &found);
		if (r < 0 || found)
			return r < 0 ? r : 1;
		/* A miss while the cache is refilled proves nothing. */
		if ((gen & 1) || rt_cache_generation(g->h->rt) != gen)
			return -EAGAIN;
		return 0;
	}
	r = store_get(g->h->store, g->owner->store_key, ns, name, &so);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	/* A record names its owner's uid: one left by a deleted Agent of the
	 * same name belongs to no one. */
	if (json_string_value(json_object_get(rec, "uid"))) {
		const char *want = json_string_value(json_object_get(rec, "uid"));
		char needle[128];

		/* The stored text is compact: the uid found as it is written
		 * spares parsing a big Agent; otherwise parse to be sure. */
		snprintf(needle, sizeof(needle), "\"uid\":\"%s\"", want);
		found = *want && strlen(want) < 100 && memmem(so->json, so->len, needle, strlen(needle));
		if (!found) {
			json_t *o = json_loadb(so->json, so->len, 0, NULL);
			const char *uid = json_string_value(json_object_get(json_object_get(o, "metadata"), "uid"));

			found = uid && strcmp(uid, want) == 0;
			json_decref(o);
		}
	} else {
		found = true;
	}
	store_obj_free(so);
	return found;
}

static struct rt_result gc_reconcile(void *ctx, const struct rt_key *key)
{
	struct gc *g = ctx;
	store_obj *so = NULL;
	json_t *rec;
	int r = store_get(g->h->store, g->kind->resource, key->ns, key->name, &so);

	if (r == -ENOENT)
		return rt_done();
	if (r < 0)
		return rt_error(r);
	rec = json_loadb(so->json, so->len, 0, NULL);
	r = owner_lives(g, key->ns, key->name, rec);
	json_decref(rec);
	if (r == -EAGAIN) {
		store_obj_free(so);
		return rt_requeue_after(1000);
	}
	if (r == 0) {
		r = hub_record_delete(g->h->store, g->kind->resource, key->ns, key->name, so->rev);
		if (r == 0)
			log_debug("record %s %s/%s: its %s is gone", g->kind->resource, *key->ns ? key->ns : "-",
				  key->name, g->kind->owner_kind);
		/* Written again meanwhile (a new owner of the same name): look again. */
		if (r == -ESTALE)
			r = rt_enqueue(g->c, key->ns, key->name);
		else if (r == -ENOENT)
			r = 0;
	}
	store_obj_free(so);
	return rt_from_errno(r);
}

/* A record was created (or found at start): is its owner there? */
static void record_event(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	if (ev->so->type == STORE_ADDED)
		rt_enqueue(c, ev->so->ns, ev->so->name);
}

/* An owner was deleted: its record goes. */
static void owner_event(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct gc *g = ctx;
	const char *uid;

	if (ev->so->type != STORE_DELETED)
		return;
	if (g->kind->key == HUB_RECORD_BY_NAME) {
		rt_enqueue(c, ev->so->ns, ev->so->name);
		return;
	}
	uid = json_string_value(json_object_get(json_object_get(ev->obj, "metadata"), "uid"));
	if (uid && *uid)
		rt_enqueue(c, "", uid);
}

static void uid_index(const json_t *obj, json_t *out)
{
	const char *uid = json_string_value(json_object_get(json_object_get(obj, "metadata"), "uid"));

	if (uid && *uid)
		json_array_append_new(out, json_string(uid));
}

int hub_records_register(struct hub *h)
{
	struct hub_records *recs = calloc(1, sizeof(*recs));
	int r = 0;

	if (!recs)
		return -ENOMEM;
	h->records = recs;
	for (size_t i = 0; i < NKINDS && r == 0; i++) {
		struct gc *g = &recs->gc[i];
		const struct hub_record_kind *k = &hub_record_kinds[i];

		g->h = h;
		g->kind = k;
		g->owner = kube_registry_by_kind(h->reg, k->owner_api, k->owner_kind);
		if (!g->owner)
			continue; /* a registry without the owner's kind: nothing owns these */
		{
			struct rt_controller_def d = {
				.name = k->resource,
				.reconcile = gc_reconcile,
				.ctx = g,
				.watches = {
					{ .resource = k->resource, .map = RT_MAP_FN, .fn = record_event },
					{ .resource = g->owner->store_key, .map = RT_MAP_FN, .fn = owner_event },
				},
			};

			r = rt_register(h->rt, &d, &g->c);
		}
		if (r == 0 && k->key == HUB_RECORD_BY_UID)
			r = rt_cache_resource(h->rt, g->owner->store_key, false);
	}
	/* One uid index per owner resource (declared once). */
	for (size_t i = 0; i < NKINDS && r == 0; i++) {
		bool seen = false;

		if (!recs->gc[i].owner || hub_record_kinds[i].key != HUB_RECORD_BY_UID)
			continue;
		for (size_t j = 0; j < i; j++)
			if (recs->gc[j].owner == recs->gc[i].owner && hub_record_kinds[j].key == HUB_RECORD_BY_UID)
				seen = true;
		if (!seen)
			r = rt_cache_index(h->rt, recs->gc[i].owner->store_key, HUB_IDX_UID, uid_index);
	}
	return r;
}

void hub_records_free(struct hub *h)
{
	free(h->records);
	h->records = NULL;
}
