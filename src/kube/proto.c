/* proto.c - Kubernetes protobuf bodies to JSON; see proto.h.
 *
 * One generic walker turns any generated message into JSON through the
 * protobuf-c descriptors (field names are the JSON names in every message of
 * the subset), with the few apimachinery types whose JSON form is not their
 * message form handled by name: Time and MicroTime (RFC 3339 strings),
 * Quantity (its string), FieldsV1 (raw JSON).  None of the messages is
 * recursive, so the depth of the walk is bounded by the .proto files. */
#include "proto.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/util.h"
#include "kube/proto/authentication.pb-c.h"
#include "kube/proto/authorization.pb-c.h"
#include "kube/proto/coordination.pb-c.h"
#include "kube/proto/core.pb-c.h"
#include "kube/proto/events.pb-c.h"
#include "kube/proto/meta.pb-c.h"
#include "kube/proto/rbac.pb-c.h"
#include "kube/proto/runtime.pb-c.h"

static const char magic[4] = { 'k', '8', 's', 0 };

struct kind_entry {
	const char *api_version; /* NULL: any (DeleteOptions travels in every group) */
	const char *kind;
	const ProtobufCMessageDescriptor *desc;
};

static const struct kind_entry kinds[] = {
	{ "v1", "Namespace", &k8s__io__api__core__v1__namespace__descriptor },
	{ "v1", "Secret", &k8s__io__api__core__v1__secret__descriptor },
	{ "v1", "ConfigMap", &k8s__io__api__core__v1__config_map__descriptor },
	{ "v1", "Event", &k8s__io__api__core__v1__event__descriptor },
	{ "v1", "ResourceQuota", &k8s__io__api__core__v1__resource_quota__descriptor },
	{ "v1", "LimitRange", &k8s__io__api__core__v1__limit_range__descriptor },
	{ "coordination.k8s.io/v1", "Lease", &k8s__io__api__coordination__v1__lease__descriptor },
	{ "events.k8s.io/v1", "Event", &k8s__io__api__events__v1__event__descriptor },
	{ NULL, "DeleteOptions", &k8s__io__apimachinery__pkg__apis__meta__v1__delete_options__descriptor },
	{ "v1", "ServiceAccount", &k8s__io__api__core__v1__service_account__descriptor },
	{ "rbac.authorization.k8s.io/v1", "Role", &k8s__io__api__rbac__v1__role__descriptor },
	{ "rbac.authorization.k8s.io/v1", "ClusterRole", &k8s__io__api__rbac__v1__cluster_role__descriptor },
	{ "rbac.authorization.k8s.io/v1", "RoleBinding", &k8s__io__api__rbac__v1__role_binding__descriptor },
	{ "rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &k8s__io__api__rbac__v1__cluster_role_binding__descriptor },
	{ "authentication.k8s.io/v1", "TokenRequest", &k8s__io__api__authentication__v1__token_request__descriptor },
	/* v1, v1beta1 and v1alpha1 share the message's shape. */
	{ NULL, "SelfSubjectReview", &k8s__io__api__authentication__v1__self_subject_review__descriptor },
	{ "authorization.k8s.io/v1", "SelfSubjectAccessReview",
	  &k8s__io__api__authorization__v1__self_subject_access_review__descriptor },
	{ "authorization.k8s.io/v1", "SelfSubjectRulesReview",
	  &k8s__io__api__authorization__v1__self_subject_rules_review__descriptor },
};

bool kube_proto_content_type(const char *ct)
{
	size_t n = strlen(KUBE_PROTO_MEDIA_TYPE);

	if (!ct)
		return false;
	while (*ct == ' ')
		ct++;
	return strncasecmp(ct, KUBE_PROTO_MEDIA_TYPE, n) == 0 &&
	       (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static int bad(ah_err *err, const char *what)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "the request body is not a valid protobuf object: %s",
			  what);
}

/* Go marshals metav1.Time as seconds only and a zero time as an empty
 * message; JSON carries "2006-01-02T15:04:05Z" (MicroTime: six decimals). */
static int time_json(const ProtobufCMessage *m, bool micro, json_t **ret, ah_err *err)
{
	/* Time and MicroTime share one layout. */
	const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time *t = (const void *)m;
	int64_t secs = t->has_seconds ? t->seconds : 0;
	int32_t nanos = t->has_nanos ? t->nanos : 0;
	char buf[64];
	struct tm tm;
	time_t tt;

	*ret = NULL;
	if ((secs == 0 && nanos == 0) || secs == -62135596800LL) /* unset, or Go's zero time */
		return 0;
	if (nanos < 0 || nanos > 999999999)
		return bad(err, "time nanos out of range");
	/* Years 0001..9999, what RFC 3339 (and Go's JSON encoder) can write. */
	if (secs < -62135596800LL || secs > 253402300799LL)
		return bad(err, "time out of range");
	tt = (time_t)secs;
	if (!gmtime_r(&tt, &tm))
		return bad(err, "time out of range");
	if (micro)
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(nanos / 1000));
	else
		snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	*ret = json_string(buf);
	return *ret ? 0 : -ENOMEM;
}

static int message_json(const ProtobufCMessage *m, json_t **ret, ah_err *err);

static bool is_map_entry(const ProtobufCMessageDescriptor *d)
{
	size_t n = strlen(d->short_name);

	return d->n_fields == 2 && n > 5 && strcmp(d->short_name + n - 5, "Entry") == 0 &&
	       strcmp(d->fields[0].name, "key") == 0 && strcmp(d->fields[1].name, "value") == 0;
}

/* One value of a field (a repeated field's element, or a singular field),
 * at p.  Sets *ret to NULL for a message that is empty in JSON. */
static int value_json(const ProtobufCFieldDescriptor *f, const void *p, json_t **ret, ah_err *err)
{
	*ret = NULL;
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		*ret = json_integer(*(const int32_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		*ret = json_integer(*(const uint32_t *)p);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		*ret = json_integer(*(const int64_t *)p);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		if (*(const uint64_t *)p > INT64_MAX)
			return bad(err, "integer out of range");
		*ret = json_integer((json_int_t) * (const uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		*ret = json_boolean(*(const protobuf_c_boolean *)p);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		*ret = json_real(*(const float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		*ret = json_real(*(const double *)p);
		break;
	case PROTOBUF_C_TYPE_ENUM:
		*ret = json_integer(*(const int *)p);
		break;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		/* Go strings are UTF-8 by convention only; JSON needs it. */
		*ret = json_string(s ? s : "");
		if (!*ret)
			return bad(err, "a string is not valid UTF-8");
		return 0;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = p;
		char *s = util_base64_encode(b->data ? b->data : (const uint8_t *)"", b->len);

		if (!s)
			return -ENOMEM;
		*ret = json_string(s);
		free(s);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		return message_json(*(ProtobufCMessage *const *)p, ret, err);
	}
	return *ret ? 0 : -ENOMEM;
}

/* Whether a singular scalar is its zero value (left out, as Go's omitempty does). */
static bool scalar_zero(const ProtobufCFieldDescriptor *f, const void *p)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		return *(const uint32_t *)p == 0;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return *(const uint64_t *)p == 0;
	case PROTOBUF_C_TYPE_BOOL:
		return !*(const protobuf_c_boolean *)p;
	case PROTOBUF_C_TYPE_FLOAT:
		return *(const float *)p == 0;
	case PROTOBUF_C_TYPE_DOUBLE:
		return *(const double *)p == 0;
	case PROTOBUF_C_TYPE_ENUM:
		return *(const int *)p == 0;
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)p;

		return !s || !*s;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)p)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(ProtobufCMessage *const *)p == NULL;
	}
	return true;
}

static size_t type_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_ENUM:
		return sizeof(int);
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

/* A repeated field: a JSON array, or an object for a map (later keys win,
 * as in Go). */
static int repeated_json(const ProtobufCFieldDescriptor *f, const void *base, json_t **ret, ah_err *err)
{
	size_t n = *(const size_t *)((const char *)base + f->quantifier_offset);
	const char *arr = *(char *const *)((const char *)base + f->offset);
	bool map = f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor);
	json_t *out = map ? json_object() : json_array();
	size_t i;
	int r = 0;

	if (!out)
		return -ENOMEM;
	for (i = 0; i < n && r == 0; i++) {
		const void *p = arr + i * type_size(f->type);
		json_t *v = NULL;

		if (map) {
			const ProtobufCMessage *e = *(ProtobufCMessage *const *)p;
			const ProtobufCMessageDescriptor *d = e->descriptor;
			const char *key = *(char *const *)((const char *)e + d->fields[0].offset);
			const void *vp = (const char *)e + d->fields[1].offset;

			/* A map value that is an absent message is its zero value. */
			if (d->fields[1].type == PROTOBUF_C_TYPE_MESSAGE && !*(ProtobufCMessage *const *)vp)
				v = json_string("");
			else if (d->fields[1].type == PROTOBUF_C_TYPE_STRING && !*(char *const *)vp)
				v = json_string("");
			else if ((r = value_json(&d->fields[1], vp, &v, err)) == 0 && !v)
				v = json_object();
			if (r == 0 && !v)
				r = -ENOMEM;
			/* json_object_set_new() takes v even when it fails
			 * (a key that is not UTF-8). */
			if (r == 0 && json_object_set_new(out, key ? key : "", v) < 0)
				r = bad(err, "a map key is not valid UTF-8");
			continue;
		}
		r = value_json(f, p, &v, err);
		if (r == 0 && !v)
			v = json_object(); /* an empty element message stays in the list */
		if (r == 0)
			json_array_append_new(out, v);
	}
	if (r < 0) {
		json_decref(out);
		return r;
	}
	*ret = out;
	return 0;
}

static int special_json(const ProtobufCMessage *m, json_t **ret, ah_err *err, bool *handled)
{
	const char *name = m->descriptor->name;

	*handled = true;
	if (strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.Time") == 0)
		return time_json(m, false, ret, err);
	if (strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime") == 0)
		return time_json(m, true, ret, err);
	if (strcmp(name, "k8s.io.apimachinery.pkg.api.resource.Quantity") == 0) {
		const char *s = *(char *const *)((const char *)m + m->descriptor->fields[0].offset);

		*ret = json_string(s ? s : "");
		return *ret ? 0 : bad(err, "a quantity is not valid UTF-8");
	}
	if (strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") == 0) {
		const K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__FieldsV1 *fv = (const void *)m;
		json_error_t jerr;

		*ret = NULL;
		if (!fv->has_raw || fv->raw.len == 0)
			return 0;
		*ret = json_loadb((const char *)fv->raw.data, fv->raw.len, JSON_DECODE_ANY, &jerr);
		return *ret ? 0 : bad(err, "managedFields fieldsV1 is not JSON");
	}
	*handled = false;
	return 0;
}

/* A message as a JSON object, its zero-valued singular fields left out;
 * *ret is NULL for a message with nothing in it. */
static int message_json(const ProtobufCMessage *m, json_t **ret, ah_err *err)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	json_t *out;
	bool handled;
	unsigned i;
	int r;

	*ret = NULL;
	r = special_json(m, ret, err, &handled);
	if (handled)
		return r;
	out = json_object();
	if (!out)
		return -ENOMEM;
	for (i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *p = (const char *)m + f->offset;
		json_t *v = NULL;

		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			if (*(const size_t *)((const char *)m + f->quantifier_offset) == 0)
				continue;
			r = repeated_json(f, m, &v, err);
		} else {
			if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
			    f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE &&
			    !*(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset))
				continue;
			if (scalar_zero(f, p))
				continue;
			r = value_json(f, p, &v, err);
		}
		if (r < 0) {
			json_decref(out);
			return r;
		}
		if (v)
			json_object_set_new(out, f->name, v);
	}
	if (json_object_size(out) == 0) {
		json_decref(out);
		return 0;
	}
	*ret = out;
	return 0;
}

int kube_proto_decode(const void *buf, size_t len, json_t **ret, ah_err *err)
{
	K8s__Io__Apimachinery__Pkg__Runtime__Unknown *u;
	const struct kind_entry *e = NULL;
	ProtobufCMessage *obj;
	const char *av, *kind;
	json_t *out, *body = NULL;
	size_t i;
	int r;

	if (len < sizeof(magic) || memcmp(buf, magic, sizeof(magic)) != 0)
		return bad(err, "it does not start with the Kubernetes protobuf prefix");
	u = k8s__io__apimachinery__pkg__runtime__unknown__unpack(NULL, len - sizeof(magic),
								  (const uint8_t *)buf + sizeof(magic));
	if (!u)
		return bad(err, "the envelope (runtime.Unknown) does not decode");
	av = u->typemeta && u->typemeta->apiversion ? u->typemeta->apiversion : "";
	kind = u->typemeta && u->typemeta->kind ? u->typemeta->kind : "";
	if (u->contentencoding && *u->contentencoding) {
		r = ah_err_set(err, EINVAL, 415, "UnsupportedMediaType",
			       "the body of the request was in an unknown format: content encoding %.64s",
			       u->contentencoding);
		goto out;
	}
	if (!*kind) {
		r = bad(err, "Object 'Kind' is missing");
		goto out;
	}
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].kind, kind) == 0 &&
		    (!kinds[i].api_version || strcmp(kinds[i].api_version, av) == 0)) {
			e = &kinds[i];
			break;
		}
	if (!e) {
		r = ah_err_set(err, EINVAL, 415, "UnsupportedMediaType",
			       "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (%.100s %.100s has no protobuf form here)",
			       av, kind);
		goto out;
	}
	obj = protobuf_c_message_unpack(e->desc, NULL, u->has_raw ? u->raw.len : 0,
					u->has_raw ? u->raw.data : (const uint8_t *)"");
	if (!obj) {
		r = bad(err, "the object does not decode");
		goto out;
	}
	r = message_json(obj, &body, err);
	protobuf_c_message_free_unpacked(obj, NULL);
	if (r < 0)
		goto out;
	out = json_object();
	if (!out) {
		json_decref(body);
		r = -ENOMEM;
		goto out;
	}
	if (*av)
		json_object_set_new(out, "apiVersion", json_string(av));
	if (!json_object_get(out, "apiVersion") && *av) {
		json_decref(out);
		json_decref(body);
		r = bad(err, "apiVersion is not valid UTF-8");
		goto out;
	}
	json_object_set_new(out, "kind", json_string(kind));
	if (!json_object_get(out, "kind")) {
		json_decref(out);
		json_decref(body);
		r = bad(err, "kind is not valid UTF-8");
		goto out;
	}
	if (body)
		json_object_update(out, body);
	json_decref(body);
	*ret = out;
	r = 0;
out:
	k8s__io__apimachinery__pkg__runtime__unknown__free_unpacked(u, NULL);
	return r;
}
