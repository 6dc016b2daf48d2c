/* fieldmgr.c - managedFields and server-side apply; see fieldmgr.h.
 *
 * Three walks over objects, each guided by the kind's schema: the fields an
 * object sets (fields_walk), the fields an update changed or removed
 * (diff_walk), and the merge of an applied configuration into the live
 * object (merge_val).  Ownership is then set algebra on FieldsV1-shaped
 * trees. */
#include "fieldmgr.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

enum level { LV_ROOT, LV_META, LV_OTHER };

/* kube's metadata semantics (ObjectMeta's patch tags and list types). */
static json_t *meta_schema;
static pthread_once_t meta_once = PTHREAD_ONCE_INIT;

static void meta_schema_init(void)
{
	meta_schema = json_loads(
		"{\"type\":\"object\",\"properties\":{"
		"\"labels\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
		"\"annotations\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
		"\"finalizers\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"string\"}},"
		"\"ownerReferences\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
		"\"x-kubernetes-list-map-keys\":[\"uid\"],"
		"\"items\":{\"type\":\"object\",\"x-kubernetes-map-type\":\"atomic\"}}}}",
		0, NULL);
}

static const json_t *metadata_schema(void)
{
	pthread_once(&meta_once, meta_schema_init);
	return meta_schema;
}

/* Keys no manager owns, per level. */
static bool skipped(const struct fm_who *who, enum level lv, const char *key)
{
	static const char *const meta_skip[] = { "name", "namespace", "uid", "resourceVersion", "generation",
						  "creationTimestamp", "deletionTimestamp",
						  "deletionGracePeriodSeconds", "selfLink", "managedFields", NULL };
	size_t i;

	if (lv == LV_ROOT) {
		bool status_sub = who->subresource && strcmp(who->subresource, "status") == 0;

		if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
			return true;
		if (who->status_separate)
			return status_sub ? strcmp(key, "status") != 0 : strcmp(key, "status") == 0;
		return false;
	}
	if (lv == LV_META)
		for (i = 0; meta_skip[i]; i++)
			if (strcmp(key, meta_skip[i]) == 0)
				return true;
	return false;
}

static const json_t *sch_prop(const json_t *sch, enum level lv, const char *key)
{
	const json_t *p;

	if (lv == LV_ROOT && strcmp(key, "metadata") == 0)
		return metadata_schema();
	if (!sch)
		return NULL;
	p = json_object_get(json_object_get(sch, "properties"), key);
	if (p)
		return p;
	p = json_object_get(sch, "additionalProperties");
	return json_is_object(p) ? p : NULL;
}

static enum level child_level(enum level lv, const char *key)
{
	return lv == LV_ROOT && strcmp(key, "metadata") == 0 ? LV_META : LV_OTHER;
}

static bool map_atomic(const json_t *sch)
{
	const char *t = json_string_value(json_object_get(sch, "x-kubernetes-map-type"));

	return t && strcmp(t, "atomic") == 0;
}

/* "atomic" (the default), "set" or "map". */
static const char *list_type(const json_t *sch)
{
	const char *t = json_string_value(json_object_get(sch, "x-kubernetes-list-type"));

	return t ? t : "atomic";
}

static void mark(json_t *node)
{
	if (!json_object_get(node, "."))
		json_object_set_new(node, ".", json_object());
}

/* The path element of a list item: "v:<json>" in a set, "k:<json of the
 * keys>" in a map list, "i:<index>" otherwise.  Caller frees. */
static char *item_key(const json_t *sch, const char *lt, const json_t *item, size_t idx)
{
	char *s, *out = NULL;

	if (strcmp(lt, "set") == 0) {
		s = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
		if (s && asprintf(&out, "v:%s", s) < 0)
			out = NULL;
		free(s);
		return out;
	}
	if (strcmp(lt, "map") == 0 && json_is_object(item)) {
		json_t *keys = json_object_get(sch, "x-kubernetes-list-map-keys"), *k, *kv = json_object();
		size_t i;

		json_array_foreach(keys, i, k) {
			json_t *v = json_object_get(item, json_string_value(k) ? json_string_value(k) : "");

			if (v)
				json_object_set(kv, json_string_value(k), v);
		}
		if (json_object_size(kv)) {
			s = json_dumps(kv, JSON_COMPACT | JSON_SORT_KEYS);
			if (s && asprintf(&out, "k:%s", s) < 0)
				out = NULL;
			free(s);
			json_decref(kv);
			return out;
		}
		json_decref(kv);
	}
	if (asprintf(&out, "i:%zu", idx) < 0)
		out = NULL;
	return out;
}

static void set_child(json_t *node, const char *key, json_t *child)
{
	if (json_object_size(child))
		json_object_set_new(node, key, child);
	else
		json_decref(child);
}

static void fields_walk(const struct fm_who *who, const json_t *sch, enum level lv, const json_t *v, json_t *node)
{
	if (json_is_object(v) && (lv != LV_OTHER || !map_atomic(sch))) {
		const char *key;
		json_t *child;

		json_object_foreach((json_t *)v, key, child) {
			json_t *cn;
			char *fk;

			if (skipped(who, lv, key) || asprintf(&fk, "f:%s", key) < 0)
				continue;
			cn = json_object();
			fields_walk(who, sch_prop(sch, lv, key), child_level(lv, key), child, cn);
			set_child(node, fk, cn);
			free(fk);
		}
		return;
	}
	if (json_is_array(v) && strcmp(list_type(sch), "atomic") != 0) {
		const char *lt = list_type(sch);
		const json_t *isch = json_object_get(sch, "items");
		json_t *item;
		size_t i;

		json_array_foreach(v, i, item) {
			char *ik = item_key(sch, lt, item, i);
			json_t *in;

			if (!ik)
				continue;
			in = json_object();
			if (strcmp(lt, "map") == 0)
				fields_walk(who, isch, LV_OTHER, item, in);
			mark(in);
			json_object_set_new(node, ik, in);
			free(ik);
		}
		return;
	}
	mark(node);
}

json_t *fm_fields_of(const struct fm_who *who, const json_t *obj)
{
	json_t *root = json_object();

	fields_walk(who, who->schema, LV_ROOT, obj, root);
	return root;
}

/* --- set algebra ----------------------------------------------------------- */

bool fm_set_empty(const json_t *s)
{
	return !json_is_object(s) || json_object_size(s) == 0;
}

json_t *fm_set_union(const json_t *a, const json_t *b)
{
	json_t *out = json_is_object(a) ? json_deep_copy(a) : json_object(), *bv;
	const char *k;

	json_object_foreach((json_t *)b, k, bv) {
		json_t *av = json_object_get(out, k);

		if (strcmp(k, ".") == 0)
			mark(out);
		else if (av)
			json_object_set_new(out, k, fm_set_union(av, bv));
		else
			json_object_set_new(out, k, json_deep_copy(bv));
	}
	return out;
}

json_t *fm_set_difference(const json_t *a, const json_t *b)
{
	json_t *out = json_object(), *av;
	const char *k;

	json_object_foreach((json_t *)a, k, av) {
		json_t *bv = json_object_get(b, k);

		if (strcmp(k, ".") == 0) {
			if (!bv)
				mark(out);
		} else if (!bv) {
			json_object_set_new(out, k, json_deep_copy(av));
		} else {
			set_child(out, k, fm_set_difference(av, bv));
		}
	}
	return out;
}

json_t *fm_set_intersection(const json_t *a, const json_t *b)
{
	json_t *out = json_object(), *av;
	const char *k;

	json_object_foreach((json_t *)a, k, av) {
		json_t *bv = json_object_get(b, k);

		if (!bv)
			continue;
		if (strcmp(k, ".") == 0)
			mark(out);
		else
			set_child(out, k, fm_set_intersection(av, bv));
	}
	return out;
}

/* Drop from s every subtree that `removed` marks (a removed node carries
 * "."); empty nodes left behind go too. */
static void prune_removed(json_t *s, const json_t *removed)
{
	const char *k;
	json_t *rv;

	json_object_foreach((json_t *)removed, k, rv) {
		json_t *sv = json_object_get(s, k);

		if (!sv || strcmp(k, ".") == 0)
			continue;
		if (json_object_get(rv, "."))
			json_object_del(s, k);
		else {
			prune_removed(sv, rv);
			if (!json_object_size(sv))
				json_object_del(s, k);
		}
	}
}

json_t *fm_set_from_v1(const json_t *v1)
{
	json_t *out = json_object(), *v;
	const char *k;

	if (!json_is_object(v1) || json_object_size(v1) == 0) {
		mark(out);
		return out;
	}
	json_object_foreach((json_t *)v1, k, v) {
		if (strcmp(k, ".") == 0)
			mark(out);
		else
			json_object_set_new(out, k, fm_set_from_v1(v));
	}
	return out;
}

json_t *fm_set_to_v1(const json_t *s)
{
	json_t *out = json_object(), *v;
	const char *k;

	if (json_object_size(s) == 1 && json_object_get(s, "."))
		return out;
	json_object_foreach((json_t *)s, k, v)
		json_object_set_new(out, k, strcmp(k, ".") == 0 ? json_object() : fm_set_to_v1(v));
	return out;
}

char *fm_path_string(const json_t *keys)
{
	strbuf sb = STRBUF_INIT;
	json_t *k;
	size_t i;

	json_array_foreach(keys, i, k) {
		const char *s = json_string_value(k);

		if (!s || strlen(s) < 2)
			continue;
		if (s[0] == 'f') {
			strbuf_addf(&sb, ".%s", s + 2);
		} else if (s[0] == 'v') {
			strbuf_addf(&sb, "[=%s]", s + 2);
		} else if (s[0] == 'i') {
			strbuf_addf(&sb, "[%s]", s + 2);
		} else if (s[0] == 'k') {
			json_t *kv = json_loads(s + 2, 0, NULL), *v;
			const char *name;
			bool first = true;

			strbuf_addch(&sb, '[');
			json_object_foreach(kv, name, v) {
				char *vs = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

				strbuf_addf(&sb, "%s%s=%s", first ? "" : ",", name, vs ? vs : "");
				free(vs);
				first = false;
			}
			strbuf_addch(&sb, ']');
			json_decref(kv);
		}
	}
	if (!sb.len)
		strbuf_adds(&sb, "");
	return strbuf_detach(&sb, NULL);
}

/* --- values at paths ----------------------------------------------------- */

static bool item_matches(const char *key, const json_t *item, size_t idx)
{
	if (key[0] == 'v') {
		json_t *v = json_loads(key + 2, JSON_DECODE_ANY, NULL);
		bool eq = v && json_equal(v, item);

		json_decref(v);
		return eq;
	}
	if (key[0] == 'k') {
		json_t *kv = json_loads(key + 2, 0, NULL), *v;
		const char *name;
		bool eq = kv != NULL && json_is_object(item);

		json_object_foreach(kv, name, v)
			if (!json_equal(json_object_get(item, name), v))
				eq = false;
		json_decref(kv);
		return eq;
	}
	if (key[0] == 'i')
		return (size_t)strtoul(key + 2, NULL, 10) == idx;
	return false;
}

/* The child of v that a path element names, and its index in a list. */
static json_t *child_at(const json_t *v, const char *key, size_t *ret_idx)
{
	if (key[0] == 'f')
		return json_object_get(v, key + 2);
	if (json_is_array(v)) {
		json_t *item;
		size_t i;

		json_array_foreach(v, i, item)
			if (item_matches(key, item, i)) {
				if (ret_idx)
					*ret_idx = i;
				return item;
			}
	}
	return NULL;
}

static const json_t *value_at(const json_t *obj, const json_t *keys)
{
	json_t *k;
	size_t i;

	json_array_foreach(keys, i, k) {
		obj = child_at(obj, json_string_value(k), NULL);
		if (!obj)
			return NULL;
	}
	return obj;
}

/* --- update: what changed ----------------------------------------------------- */

/* chg/rem: the set nodes for this path.  added_mark: a map node that did
 * not exist before becomes a member itself (kube's Added). */
static void diff_walk(const struct fm_who *who, const json_t *sch, enum level lv, const json_t *old,
		      const json_t *nw, json_t *chg, json_t *rem)
{
	if (json_is_object(nw) && (lv != LV_OTHER || !map_atomic(sch))) {
		const char *key;
		json_t *child, *none = NULL;

		if (!json_is_object(old) && lv == LV_OTHER) {
			/* A map that was not there: it is Added, itself a member. */
			fields_walk(who, sch, lv, nw, chg);
			mark(chg);
			return;
		}
		if (!json_is_object(old))
			old = none = json_object();
		json_object_foreach((json_t *)nw, key, child) {
			json_t *oc = json_object_get(old, key), *cn, *rn;
			char *fk;

			if (skipped(who, lv, key) || (oc && json_equal(oc, child)) || asprintf(&fk, "f:%s", key) < 0)
				continue;
			cn = json_object();
			rn = json_object();
			diff_walk(who, sch_prop(sch, lv, key), child_level(lv, key), oc, child, cn, rn);
			set_child(chg, fk, cn);
			set_child(rem, fk, rn);
			free(fk);
		}
		json_object_foreach((json_t *)old, key, child) {
			char *fk;

			if (json_object_get(nw, key) || skipped(who, lv, key) || asprintf(&fk, "f:%s", key) < 0)
				continue;
			json_object_set_new(rem, fk, json_pack("{s:{}}", "."));
			free(fk);
		}
		json_decref(none);
		return;
	}
	if (json_is_array(nw) && !json_is_array(old) && strcmp(list_type(sch), "atomic") != 0) {
		/* A set or map list that was not there: Added, itself a member,
		 * with its items. */
		fields_walk(who, sch, lv, nw, chg);
		mark(chg);
		return;
	}
	if (json_is_array(nw) && json_is_array(old) && strcmp(list_type(sch), "atomic") != 0) {
		const char *lt = list_type(sch);
		const json_t *isch = json_object_get(sch, "items");
		json_t *item;
		size_t i;

		json_array_foreach(nw, i, item) {
			char *ik = item_key(sch, lt, item, i);
			json_t *oi, *in, *rn;

			if (!ik)
				continue;
			oi = child_at(old, ik, NULL);
			if (oi && json_equal(oi, item)) {
				free(ik);
				continue;
			}
			in = json_object();
			rn = json_object();
			if (!oi) {
				if (strcmp(lt, "map") == 0)
					fields_walk(who, isch, LV_OTHER, item, in);
				mark(in);
			} else {
				diff_walk(who, isch, LV_OTHER, oi, item, in, rn);
			}
			set_child(chg, ik, in);
			set_child(rem, ik, rn);
			free(ik);
		}
		json_array_foreach(old, i, item) {
			char *ik = item_key(sch, lt, item, i);

			if (ik && !child_at(nw, ik, NULL))
				json_object_set_new(rem, ik, json_pack("{s:{}}", "."));
			free(ik);
		}
		return;
	}
	if (!json_equal(old, nw))
		mark(chg);
}

/* --- entries ---------------------------------------------------------------- */

static const char *es(const json_t *e, const char *k)
{
	const char *s = json_string_value(json_object_get(e, k));

	return s ? s : "";
}

/* Entries in working form: {manager, operation, apiVersion, time,
 * subresource, set}. */
static json_t *entries_load(const json_t *obj)
{
	json_t *mf = json_object_get(json_object_get(obj, "metadata"), "managedFields"), *e, *out = json_array();
	size_t i;

	json_array_foreach(mf, i, e) {
		json_t *w;

		if (!json_is_object(e))
			continue;
		w = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "manager", es(e, "manager"), "operation",
			      *es(e, "operation") ? es(e, "operation") : "Update", "apiVersion", es(e, "apiVersion"),
			      "time", es(e, "time"), "subresource", es(e, "subresource"),
			      "set", fm_set_from_v1(json_object_get(e, "fieldsV1")));
		if (w)
			json_array_append_new(out, w);
	}
	return out;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	static const char *const keys[] = { "operation", "time", "manager", "subresource", "apiVersion", NULL };
	size_t i;

	for (i = 0; keys[i]; i++) {
		int c = strcmp(es(a, keys[i]), es(b, keys[i]));

		if (c)
			return c;
	}
	return 0;
}

/* Back to managedFields on obj: empty entries dropped, kube's order. */
static int entries_store(json_t *entries, json_t *obj)
{
	json_t **v, *out = json_array(), *meta = json_object_get(obj, "metadata");
	size_t n = json_array_size(entries), i, m = 0;

	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(obj, "metadata", meta);
	}
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v || !out) {
		free(v);
		json_decref(out);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++)
		if (!fm_set_empty(json_object_get(json_array_get(entries, i), "set")))
			v[m++] = json_array_get(entries, i);
	qsort(v, m, sizeof(*v), entry_cmp);
	for (i = 0; i < m; i++) {
		json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "manager", es(v[i], "manager"), "operation",
				      es(v[i], "operation"), "apiVersion", es(v[i], "apiVersion"), "time",
				      es(v[i], "time"), "fieldsType", "FieldsV1", "fieldsV1",
				      fm_set_to_v1(json_object_get(v[i], "set")));

		if (!e)
			continue;
		if (*es(v[i], "subresource"))
			json_object_set_new(e, "subresource", json_string(es(v[i], "subresource")));
		json_array_append_new(out, e);
	}
	free(v);
	if (json_array_size(out))
		json_object_set_new(meta, "managedFields", out);
	else {
		json_decref(out);
		json_object_del(meta, "managedFields");
	}
	return 0;
}

static json_t *entry_find(json_t *entries, const struct fm_who *who, const char *op)
{
	json_t *e;
	size_t i;

	json_array_foreach(entries, i, e) {
		if (strcmp(es(e, "manager"), who->manager ? who->manager : "") != 0 ||
		    strcmp(es(e, "operation"), op) != 0 ||
		    strcmp(es(e, "subresource"), who->subresource ? who->subresource : "") != 0)
			continue;
		/* An updater is one per apiVersion; an applier whatever it uses. */
		if (strcmp(op, "Update") == 0 && strcmp(es(e, "apiVersion"), who->api_version ? who->api_version : "") != 0)
			continue;
		return e;
	}
	e = json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "manager", who->manager ? who->manager : "", "operation", op,
		      "apiVersion", who->api_version ? who->api_version : "", "time", who->time ? who->time : "",
		      "subresource", who->subresource ? who->subresource : "", "set", json_object());
	json_array_append_new(entries, e);
	return e;
}

/* Whether the FieldsV1 tree v1 holds every member of the internal set s
 * (covers), or any of them (overlaps); walks both without allocating. */
static bool v1_member(const json_t *v1)
{
	return json_object_size(v1) == 0 || json_object_get(v1, ".");
}

static bool v1_covers(const json_t *v1, const json_t *s)
{
	const char *k;
	json_t *sv;

	json_object_foreach((json_t *)s, k, sv) {
		json_t *c;

		if (strcmp(k, ".") == 0) {
			if (!v1_member(v1))
				return false;
			continue;
		}
		c = json_object_get(v1, k);
		if (!c || !v1_covers(c, sv))
			return false;
	}
	return true;
}

static bool v1_overlaps(const json_t *v1, const json_t *s)
{
	const char *k;
	json_t *sv;

	json_object_foreach((json_t *)s, k, sv) {
		json_t *c;

		if (strcmp(k, ".") == 0) {
			if (v1_member(v1))
				return true;
			continue;
		}
		c = json_object_get(v1, k);
		if (c && v1_overlaps(c, sv))
			return true;
	}
	return false;
}

/* The common case of a controller writing what it already owns: who's
 * entry covers every changed field, nothing was removed and no other entry
 * owns any of them.  Then only that entry's time changes (nothing at all
 * within the same second), without rebuilding the entries.  Returns true
 * when it handled the write. */
static bool record_fast(const struct fm_who *who, const json_t *old, json_t *obj, const json_t *chg,
			const json_t *rem)
{
	json_t *mf = json_object_get(json_object_get(old, "metadata"), "managedFields"), *e, *mine = NULL, *copy;
	size_t i, at = 0;

	if (!fm_set_empty(rem) || !json_array_size(mf))
		return false;
	json_array_foreach(mf, i, e) {
		bool me = strcmp(es(e, "manager"), who->manager ? who->manager : "") == 0 &&
			  strcmp(es(e, "operation"), "Update") == 0 &&
			  strcmp(es(e, "subresource"), who->subresource ? who->subresource : "") == 0 &&
			  strcmp(es(e, "apiVersion"), who->api_version ? who->api_version : "") == 0;

		if (me) {
			if (mine || !v1_covers(json_object_get(e, "fieldsV1"), chg))
				return false;
			mine = e;
			at = i;
		} else if (v1_overlaps(json_object_get(e, "fieldsV1"), chg)) {
			return false;
		}
	}
	if (!mine || !json_is_object(json_object_get(obj, "metadata")))
		return false;
	if (strcmp(es(mine, "time"), who->time ? who->time : "") == 0) {
		json_object_set(json_object_get(obj, "metadata"), "managedFields", mf);
		return true;
	}
	copy = json_copy(mf);
	e = json_copy(mine);
	if (!copy || !e) {
		json_decref(copy);
		json_decref(e);
		return false;
	}
	json_object_set_new(e, "time", json_string(who->time ? who->time : ""));
	json_array_set_new(copy, at, e);
	/* kube's order puts later times last among updaters. */
	if (at + 1 < json_array_size(copy) && entry_cmp(&e, &(json_t *){ json_array_get(copy, at + 1) }) > 0) {
		json_decref(copy);
		return false;
	}
	json_object_set_new(json_object_get(obj, "metadata"), "managedFields", copy);
	return true;
}

int fm_record_update(const struct fm_who *who, const json_t *old, json_t *obj)
{
	json_t *chg = json_object(), *rem = json_object(), *entries, *e, *meta;
	size_t i;
	int r;

	if (!chg || !rem) {
		json_decref(chg);
		json_decref(rem);
		return -ENOMEM;
	}
	diff_walk(who, who->schema, LV_ROOT, old ? old : json_object_get(obj, "no such key"), obj, chg, rem);
	meta = json_object_get(obj, "metadata");
	if (fm_set_empty(chg) && fm_set_empty(rem)) {
		/* Nothing anyone owns changed: the entries stay as they were. */
		json_t *mf = json_object_get(json_object_get(old, "metadata"), "managedFields");

		if (json_is_object(meta)) {
			if (mf)
				json_object_set(meta, "managedFields", mf);
			else
				json_object_del(meta, "managedFields");
		}
		json_decref(chg);
		json_decref(rem);
		return 0;
	}
	if (old && record_fast(who, old, obj, chg, rem)) {
		json_decref(chg);
		json_decref(rem);
		return 0;
	}
	entries = old ? entries_load(old) : json_array();
	json_array_foreach(entries, i, e) {
		json_t *s = fm_set_difference(json_object_get(e, "set"), chg);

		prune_removed(s, rem);
		json_object_set_new(e, "set", s);
	}
	e = entry_find(entries, who, "Update");
	json_object_set_new(e, "set", fm_set_union(json_object_get(e, "set"), chg));
	json_object_set_new(e, "time", json_string(who->time ? who->time : ""));
	r = entries_store(entries, obj);
	json_decref(entries);
	json_decref(chg);
	json_decref(rem);
	return r;
}

/* --- apply ---------------------------------------------------------------- */

static json_t *merge_val(const struct fm_who *who, const json_t *sch, enum level lv, const json_t *live,
			 const json_t *cfg)
{
	if (json_is_object(cfg) && json_is_object(live) && (lv != LV_OTHER || !map_atomic(sch))) {
		json_t *out = json_deep_copy(live), *c;
		const char *k;

		json_object_foreach((json_t *)cfg, k, c)
			json_object_set_new(out, k, merge_val(who, sch_prop(sch, lv, k), child_level(lv, k),
							      json_object_get(live, k), c));
		return out;
	}
	if (json_is_array(cfg) && json_is_array(live) && strcmp(list_type(sch), "atomic") != 0) {
		const char *lt = list_type(sch);
		const json_t *isch = json_object_get(sch, "items");
		json_t *out = json_deep_copy(live), *item;
		size_t i;

		json_array_foreach(cfg, i, item) {
			char *ik = item_key(sch, lt, item, i);
			size_t at = 0;
			json_t *li = ik && ik[0] != 'i' ? child_at(out, ik, &at) : NULL;

			if (li)
				json_array_set_new(out, at, strcmp(lt, "map") == 0 ?
							merge_val(who, isch, LV_OTHER, li, item) : json_deep_copy(item));
			else
				json_array_append_new(out, json_deep_copy(item));
			free(ik);
		}
		return out;
	}
	return json_deep_copy(cfg);
}

/* Remove from obj what the applier gave up (set `gone` at this path) and no
 * one else (`others`) owns. */
static void remove_given_up(json_t *obj, const json_t *gone, const json_t *others)
{
	const char *k;
	json_t *g;
	void *tmp;

	json_object_foreach_safe((json_t *)gone, tmp, k, g) {
		json_t *o = json_object_get(others, k), *child;
		size_t idx = 0;

		if (strcmp(k, ".") == 0)
			continue;
		child = child_at(obj, k, &idx);
		if (!child)
			continue;
		if (!o && json_object_get(g, ".")) {
			if (k[0] == 'f')
				json_object_del(obj, k + 2);
			else if (json_is_array(obj))
				json_array_remove(obj, idx);
			continue;
		}
		remove_given_up(child, g, o);
	}
}

struct conflict_ctx {
	const json_t *live, *cfg;
	json_t *keys;      /* the path so far */
	json_t *found;     /* array of path strings */
	json_t *taken;     /* the conflicting paths as a set */
};

static void conflicts_walk(struct conflict_ctx *cc, const json_t *both, json_t *taken)
{
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)both, k, v) {
		if (strcmp(k, ".") == 0)
			continue;
		json_array_append_new(cc->keys, json_string(k));
		if (json_object_get(v, ".") && json_object_size(v) == 1) {
			const json_t *a = value_at(cc->live, cc->keys), *b = value_at(cc->cfg, cc->keys);

			if (!a || !b || !json_equal(a, b)) {
				char *p = fm_path_string(cc->keys);

				json_array_append_new(cc->found, json_string(p ? p : ""));
				free(p);
				json_object_set_new(taken, k, json_pack("{s:{}}", "."));
			}
		} else {
			json_t *t = json_object();

			conflicts_walk(cc, v, t);
			set_child(taken, k, t);
		}
		json_array_remove(cc->keys, json_array_size(cc->keys) - 1);
	}
}

static void print_manager(strbuf *sb, const json_t *e)
{
	strbuf_addf(sb, "\"%s\"", es(e, "manager"));
	if (*es(e, "subresource"))
		strbuf_addf(sb, " with subresource \"%s\"", es(e, "subresource"));
	if (strcmp(es(e, "operation"), "Update") == 0)
		strbuf_addf(sb, " using %s", es(e, "apiVersion"));
}

static int conflict_error(json_t *entries, json_t *per_entry, size_t total, json_t *causes, ah_err *err)
{
	strbuf sb = STRBUF_INIT, who = STRBUF_INIT;
	json_t *paths, *e, **order;
	size_t i, j, n = json_array_size(entries), m = 0;

	order = calloc(n ? n : 1, sizeof(*order));
	for (i = 0; order && i < n; i++)
		if (json_array_size(json_array_get(per_entry, i)))
			order[m++] = json_array_get(entries, i);
	/* kube-apiserver lists managers sorted by their identity; the name
	 * leads it, which is what a reader sees. */
	if (order)
		qsort(order, m, sizeof(*order), entry_cmp);
	if (total == 1)
		strbuf_adds(&sb, "Apply failed with 1 conflict: ");
	else
		strbuf_addf(&sb, "Apply failed with %zu conflicts: ", total);
	for (i = 0; i < m; i++) {
		size_t at = 0;

		json_array_foreach(entries, j, e)
			if (e == order[i])
				at = j;
		paths = json_array_get(per_entry, at);
		strbuf_reset(&who);
		print_manager(&who, order[i]);
		if (total == 1) {
			strbuf_addf(&sb, "conflict with %s: %s", who.buf, json_string_value(json_array_get(paths, 0)));
		} else {
			strbuf_addf(&sb, "%sconflicts with %s:", i ? "\n" : "", who.buf);
			json_array_foreach(paths, j, e)
				strbuf_addf(&sb, "\n- %s", json_string_value(e));
		}
		json_array_foreach(paths, j, e) {
			if (!causes)
				break;
			char msg[600];

			snprintf(msg, sizeof(msg), "conflict with %s", who.buf);
			json_array_append_new(causes, json_pack("{s:s,s:s,s:s}", "reason", "FieldManagerConflict",
								"message", msg, "field", json_string_value(e)));
		}
	}
	free(order);
	ah_err_set(err, EBUSY, 409, "Conflict", "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
	strbuf_release(&who);
	return -EBUSY;
}

int fm_apply(const struct fm_who *who, const json_t *live, const json_t *config, bool force,
	     json_t *causes, json_t **ret, ah_err *err)
{
	json_t *applied = fm_fields_of(who, config), *entries = live ? entries_load(live) : json_array();
	json_t *per_entry = json_array(), *me, *e, *others, *gone, *out;
	size_t i, total = 0;
	json_t *empty = json_object();

	me = entry_find(entries, who, "Apply");
	/* Conflicts: fields config sets to another value than live's that
	 * another manager owns. */
	json_array_foreach(entries, i, e) {
		struct conflict_ctx cc = { live ? live : empty, config, json_array(), json_array(), NULL };
		json_t *both, *taken = json_object();

		if (e != me) {
			both = fm_set_intersection(applied, json_object_get(e, "set"));
			conflicts_walk(&cc, both, taken);
			json_decref(both);
		}
		total += json_array_size(cc.found);
		json_array_append_new(per_entry, cc.found);
		json_decref(cc.keys);
		/* With force the applier takes them: the other loses them. */
		if (force && json_object_size(taken))
			json_object_set_new(e, "set", fm_set_difference(json_object_get(e, "set"), taken));
		json_decref(taken);
	}
	if (total && !force) {
		int r = conflict_error(entries, per_entry, total, causes, err);

		json_decref(per_entry);
		json_decref(applied);
		json_decref(entries);
		json_decref(empty);
		return r;
	}
	json_decref(per_entry);
	out = live ? merge_val(who, who->schema, LV_ROOT, live, config) : json_deep_copy(config);
	/* What the applier owned and no longer sets goes, unless someone else
	 * owns it or it still holds fields someone owns (the applier's new set
	 * included: a map the applier owned as a member keeps the children it
	 * still applies, as structured-merge-diff adds owned items back). */
	gone = fm_set_difference(json_object_get(me, "set"), applied);
	others = json_deep_copy(applied);
	json_array_foreach(entries, i, e) {
		if (e != me) {
			json_t *u = fm_set_union(others, json_object_get(e, "set"));

			json_decref(others);
			others = u;
		}
	}
	remove_given_up(out, gone, others);
	json_decref(gone);
	json_decref(others);
	json_object_set(me, "set", applied);
	json_object_set_new(me, "time", json_string(who->time ? who->time : ""));
	json_object_set_new(me, "apiVersion", json_string(who->api_version ? who->api_version : ""));
	if (entries_store(entries, out) < 0) {
		json_decref(out);
		out = NULL;
	}
	json_decref(entries);
	json_decref(applied);
	json_decref(empty);
	if (!out)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	*ret = out;
	return 0;
}
