/* authpb.c - protobuf bodies of the authentication and RBAC kinds; see
 * authpb.h.  A small table-driven decoder: each message is a list of
 * (field number, JSON name, type) rows. */
#include "http/authpb.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 12

enum pbt { PB_STR, PB_INT, PB_BOOL, PB_MSG, PB_MAP };

struct pbm;
struct pbf {
	unsigned num;
	const char *name;
	enum pbt t;
	bool rep;
	const struct pbm *m;
};
struct pbm {
	const struct pbf *f;
	size_t n;
};

#define MSG(name, ...) static const struct pbf name##_f[] = { __VA_ARGS__ }; \
	static const struct pbm name = { name##_f, sizeof(name##_f) / sizeof(name##_f[0]) }

MSG(owner_ref, { 1, "kind", PB_STR, false, NULL }, { 3, "name", PB_STR, false, NULL },
    { 4, "uid", PB_STR, false, NULL }, { 5, "apiVersion", PB_STR, false, NULL },
    { 6, "controller", PB_BOOL, false, NULL }, { 7, "blockOwnerDeletion", PB_BOOL, false, NULL });
MSG(object_meta, { 1, "name", PB_STR, false, NULL }, { 2, "generateName", PB_STR, false, NULL },
    { 3, "namespace", PB_STR, false, NULL }, { 5, "uid", PB_STR, false, NULL },
    { 6, "resourceVersion", PB_STR, false, NULL }, { 11, "labels", PB_MAP, false, NULL },
    { 12, "annotations", PB_MAP, false, NULL }, { 13, "ownerReferences", PB_MSG, true, &owner_ref },
    { 14, "finalizers", PB_STR, true, NULL });
MSG(policy_rule, { 1, "verbs", PB_STR, true, NULL }, { 2, "apiGroups", PB_STR, true, NULL },
    { 3, "resources", PB_STR, true, NULL }, { 4, "resourceNames", PB_STR, true, NULL },
    { 5, "nonResourceURLs", PB_STR, true, NULL });
MSG(selector_req, { 1, "key", PB_STR, false, NULL }, { 2, "operator", PB_STR, false, NULL },
    { 3, "values", PB_STR, true, NULL });
MSG(label_selector, { 1, "matchLabels", PB_MAP, false, NULL },
    { 2, "matchExpressions", PB_MSG, true, &selector_req });
MSG(aggregation_rule, { 1, "clusterRoleSelectors", PB_MSG, true, &label_selector });
MSG(role, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "rules", PB_MSG, true, &policy_rule });
MSG(cluster_role, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "rules", PB_MSG, true, &policy_rule },
    { 3, "aggregationRule", PB_MSG, false, &aggregation_rule });
MSG(subject, { 1, "kind", PB_STR, false, NULL }, { 2, "apiGroup", PB_STR, false, NULL },
    { 3, "name", PB_STR, false, NULL }, { 4, "namespace", PB_STR, false, NULL });
MSG(role_ref, { 1, "apiGroup", PB_STR, false, NULL }, { 2, "kind", PB_STR, false, NULL },
    { 3, "name", PB_STR, false, NULL });
MSG(binding, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "subjects", PB_MSG, true, &subject },
    { 3, "roleRef", PB_MSG, false, &role_ref });
MSG(object_ref, { 1, "kind", PB_STR, false, NULL }, { 2, "namespace", PB_STR, false, NULL },
    { 3, "name", PB_STR, false, NULL }, { 4, "uid", PB_STR, false, NULL },
    { 5, "apiVersion", PB_STR, false, NULL });
MSG(local_ref, { 1, "name", PB_STR, false, NULL });
MSG(service_account, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "secrets", PB_MSG, true, &object_ref },
    { 3, "imagePullSecrets", PB_MSG, true, &local_ref },
    { 4, "automountServiceAccountToken", PB_BOOL, false, NULL });
MSG(resource_attrs, { 1, "namespace", PB_STR, false, NULL }, { 2, "verb", PB_STR, false, NULL },
    { 3, "group", PB_STR, false, NULL }, { 4, "version", PB_STR, false, NULL },
    { 5, "resource", PB_STR, false, NULL }, { 6, "subresource", PB_STR, false, NULL },
    { 7, "name", PB_STR, false, NULL });
MSG(non_resource_attrs, { 1, "path", PB_STR, false, NULL }, { 2, "verb", PB_STR, false, NULL });
MSG(ssar_spec, { 1, "resourceAttributes", PB_MSG, false, &resource_attrs },
    { 2, "nonResourceAttributes", PB_MSG, false, &non_resource_attrs });
MSG(ssar, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "spec", PB_MSG, false, &ssar_spec });
MSG(ssrr_spec, { 1, "namespace", PB_STR, false, NULL });
MSG(ssrr, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "spec", PB_MSG, false, &ssrr_spec });
MSG(ssr, { 1, "metadata", PB_MSG, false, &object_meta });
MSG(bound_ref, { 1, "kind", PB_STR, false, NULL }, { 2, "apiVersion", PB_STR, false, NULL },
    { 3, "name", PB_STR, false, NULL }, { 4, "uid", PB_STR, false, NULL });
MSG(token_spec, { 1, "audiences", PB_STR, true, NULL }, { 3, "boundObjectRef", PB_MSG, false, &bound_ref },
    { 4, "expirationSeconds", PB_INT, false, NULL });
MSG(token_request, { 1, "metadata", PB_MSG, false, &object_meta }, { 2, "spec", PB_MSG, false, &token_spec });
MSG(type_meta, { 1, "apiVersion", PB_STR, false, NULL }, { 2, "kind", PB_STR, false, NULL });
/* runtime.Unknown: raw (2) is decoded by hand once the kind is known. */
MSG(unknown, { 1, "typeMeta", PB_MSG, false, &type_meta });

static const struct {
	const char *kind;
	const struct pbm *m;
} kinds[] = {
	{ "ServiceAccount", &service_account },
	{ "Role", &role },
	{ "ClusterRole", &cluster_role },
	{ "RoleBinding", &binding },
	{ "ClusterRoleBinding", &binding },
	{ "TokenRequest", &token_request },
	{ "SelfSubjectAccessReview", &ssar },
	{ "SelfSubjectRulesReview", &ssrr },
	{ "SelfSubjectReview", &ssr },
};

static int varint(const uint8_t **p, const uint8_t *end, uint64_t *ret)
{
	uint64_t v = 0;
	int shift;

	for (shift = 0; shift < 64 && *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct pbf *field_of(const struct pbm *m, unsigned num)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->f[i].num == num)
			return &m->f[i];
	return NULL;
}

static int decode(const uint8_t *p, const uint8_t *end, const struct pbm *m, json_t *obj, int depth);

static int map_entry(const uint8_t *p, const uint8_t *end, json_t *map)
{
	json_t *e = json_object();
	static const struct pbf kv_f[] = { { 1, "k", PB_STR, false, NULL }, { 2, "v", PB_STR, false, NULL } };
	static const struct pbm kv = { kv_f, 2 };
	int r = decode(p, end, &kv, e, 1);

	if (r == 0) {
		const char *key = json_string_value(json_object_get(e, "k"));
		const char *val = json_string_value(json_object_get(e, "v"));

		json_object_set_new(map, key ? key : "", json_string(val ? val : ""));
	}
	json_decref(e);
	return r;
}

static void put(json_t *obj, const struct pbf *f, json_t *v)
{
	if (!v)
		return;
	if (f->rep) {
		json_t *arr = json_object_get(obj, f->name);

		if (!json_is_array(arr)) {
			arr = json_array();
			json_object_set_new(obj, f->name, arr);
		}
		json_array_append_new(arr, v);
	} else {
		json_object_set_new(obj, f->name, v);
	}
}

static int decode(const uint8_t *p, const uint8_t *end, const struct pbm *m, json_t *obj, int depth)
{
	if (depth > MAX_DEPTH)
		return -EINVAL;
	while (p < end) {
		uint64_t key, v, len;
		unsigned wt;
		const struct pbf *f;

		if (varint(&p, end, &key) < 0)
			return -EINVAL;
		wt = (unsigned)(key & 7);
		f = key >> 3 <= 0xffffffffu ? field_of(m, (unsigned)(key >> 3)) : NULL;
		switch (wt) {
		case 0:
			if (varint(&p, end, &v) < 0)
				return -EINVAL;
			if (f && f->t == PB_INT)
				put(obj, f, json_integer((json_int_t)v));
			else if (f && f->t == PB_BOOL)
				put(obj, f, json_boolean(v != 0));
			break;
		case 1:
			if (end - p < 8)
				return -EINVAL;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return -EINVAL;
			p += 4;
			break;
		case 2:
			if (varint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
				return -EINVAL;
			if (f && f->t == PB_STR) {
				put(obj, f, json_stringn((const char *)p, (size_t)len));
			} else if (f && f->t == PB_MSG) {
				json_t *sub = json_object();
				int r = decode(p, p + len, f->m, sub, depth + 1);

				if (r < 0) {
					json_decref(sub);
					return r;
				}
				put(obj, f, sub);
			} else if (f && f->t == PB_MAP) {
				json_t *map = json_object_get(obj, f->name);

				if (!json_is_object(map)) {
					map = json_object();
					json_object_set_new(obj, f->name, map);
				}
				if (map_entry(p, p + len, map) < 0)
					return -EINVAL;
			}
			p += len;
			break;
		default:
			return -EINVAL;
		}
	}
	return 0;
}

int authpb_decode(const void *buf, size_t len, json_t **ret)
{
	const uint8_t *p = buf, *end = p + len, *raw = NULL;
	uint64_t raw_len = 0;
	json_t *env, *obj;
	const char *kind, *api_version;
	size_t i;
	int r;

	if (len < 4 || memcmp(p, "k8s\0", 4) != 0)
		return -EINVAL;
	p += 4;
	env = json_object();
	r = decode(p, end, &unknown, env, 0);
	/* Find raw (field 2, bytes) by hand. */
	while (r == 0 && p < end) {
		uint64_t key, v;

		if (varint(&p, end, &key) < 0)
			r = -EINVAL;
		else if ((key & 7) == 2) {
			if (varint(&p, end, &v) < 0 || v > (uint64_t)(end - p)) {
				r = -EINVAL;
			} else {
				if (key >> 3 == 2) {
					raw = p;
					raw_len = v;
				}
				p += v;
			}
		} else if ((key & 7) == 0) {
			if (varint(&p, end, &v) < 0)
				r = -EINVAL;
		} else {
			r = -EINVAL;
		}
	}
	kind = json_string_value(json_object_get(json_object_get(env, "typeMeta"), "kind"));
	api_version = json_string_value(json_object_get(json_object_get(env, "typeMeta"), "apiVersion"));
	if (r < 0 || !kind || !api_version || !raw) {
		json_decref(env);
		return r < 0 ? r : -EINVAL;
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0])) {
		json_decref(env);
		return -ENOTSUP;
	}
	obj = json_pack("{s:s,s:s}", "apiVersion", api_version, "kind", kind);
	json_decref(env);
	r = decode(raw, raw + raw_len, kinds[i].m, obj, 0);
	if (r < 0) {
		json_decref(obj);
		return r;
	}
	*ret = obj;
	return 0;
}
