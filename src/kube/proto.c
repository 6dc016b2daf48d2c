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
#include <strings.h>
#include <time.h>

#include "base/strbuf.h"
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

/* ---- Encoding: JSON to protobuf (responses) ----
 *
 * The inverse walk: each JSON member is found among the message's fields by
 * name and written in wire form; a member the subset does not carry, or a
 * value of the wrong JSON type, makes the whole encoding -ENOTSUP so that the
 * caller answers JSON instead and no field is ever lost. */

static int put_varint(strbuf *sb, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	do {
		b[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	return strbuf_add(sb, b, n);
}

static int put_tag(strbuf *sb, uint32_t field, unsigned wire)
{
	return put_varint(sb, ((uint64_t)field << 3) | wire);
}

static int put_bytes_field(strbuf *sb, uint32_t field, const void *data, size_t len)
{
	int r = put_tag(sb, field, 2);

	if (r == 0)
		r = put_varint(sb, len);
	if (r == 0 && len)
		r = strbuf_add(sb, data, len);
	return r;
}

static int enc_message(strbuf *sb, const ProtobufCMessageDescriptor *d, const json_t *v);

/* "2006-01-02T15:04:05[.ffffff]Z" into seconds and nanoseconds. */
static int enc_time(strbuf *sb, const json_t *v)
{
	const char *s = json_string_value(v), *dot;
	int64_t nanos = 0;
	time_t t;
	int r = 0;

	if (!s || util_parse_rfc3339(s, &t) < 0)
		return -ENOTSUP;
	dot = strchr(s, '.');
	if (dot) {
		int64_t scale = 100000000;

		for (dot++; *dot >= '0' && *dot <= '9'; dot++, scale /= 10)
			if (scale)
				nanos += (*dot - '0') * scale;
	}
	if (t) {
		r = put_tag(sb, 1, 0);
		if (r == 0)
			r = put_varint(sb, (uint64_t)(int64_t)t);
	}
	if (r == 0 && nanos) {
		r = put_tag(sb, 2, 0);
		if (r == 0)
			r = put_varint(sb, (uint64_t)nanos);
	}
	return r;
}

static int enc_special(strbuf *sb, const ProtobufCMessageDescriptor *d, const json_t *v, bool *handled)
{
	const char *name = d->name;

	*handled = true;
	if (strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.Time") == 0 ||
	    strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime") == 0)
		return enc_time(sb, v);
	if (strcmp(name, "k8s.io.apimachinery.pkg.api.resource.Quantity") == 0) {
		char num[32];
		const char *s = json_string_value(v);

		if (!s && json_is_integer(v)) {
			snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
			s = num;
		}
		if (!s)
			return -ENOTSUP;
		return put_bytes_field(sb, 1, s, strlen(s));
	}
	if (strcmp(name, "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") == 0) {
		char *raw = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		int r;

		if (!raw)
			return -ENOMEM;
		r = put_bytes_field(sb, 1, raw, strlen(raw));
		free(raw);
		return r;
	}
	*handled = false;
	return 0;
}

/* One value of field f (a singular field, or one element of a repeated one). */
static int enc_value(strbuf *sb, const ProtobufCFieldDescriptor *f, const json_t *v)
{
	int r;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_ENUM:
		if (!json_is_integer(v))
			return -ENOTSUP;
		r = put_tag(sb, f->id, 0);
		return r ? r : put_varint(sb, (uint64_t)json_integer_value(v));
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SINT64: {
		int64_t x;

		if (!json_is_integer(v))
			return -ENOTSUP;
		x = json_integer_value(v);
		r = put_tag(sb, f->id, 0);
		return r ? r : put_varint(sb, ((uint64_t)x << 1) ^ (uint64_t)(x >> 63));
	}
	case PROTOBUF_C_TYPE_BOOL:
		if (!json_is_boolean(v))
			return -ENOTSUP;
		r = put_tag(sb, f->id, 0);
		return r ? r : put_varint(sb, json_is_true(v) ? 1 : 0);
	case PROTOBUF_C_TYPE_DOUBLE: {
		double x = json_number_value(v);
		unsigned char b[8];
		uint64_t u;
		int i;

		if (!json_is_number(v))
			return -ENOTSUP;
		memcpy(&u, &x, 8);
		for (i = 0; i < 8; i++)
			b[i] = (unsigned char)(u >> (8 * i));
		r = put_tag(sb, f->id, 1);
		return r ? r : strbuf_add(sb, b, 8);
	}
	case PROTOBUF_C_TYPE_STRING:
		if (!json_is_string(v))
			return -ENOTSUP;
		return put_bytes_field(sb, f->id, json_string_value(v), json_string_length(v));
	case PROTOBUF_C_TYPE_BYTES: {
		unsigned char *raw = NULL;
		size_t n = 0;

		if (!json_is_string(v) ||
		    util_base64_decode(json_string_value(v), json_string_length(v), &raw, &n) < 0)
			return -ENOTSUP;
		r = put_bytes_field(sb, f->id, raw, n);
		free(raw);
		return r;
	}
	case PROTOBUF_C_TYPE_MESSAGE: {
		strbuf sub = STRBUF_INIT;

		r = enc_message(&sub, f->descriptor, v);
		if (r == 0)
			r = put_bytes_field(sb, f->id, sub.buf, sub.len);
		strbuf_release(&sub);
		return r;
	}
	default:
		return -ENOTSUP; /* fixed-width and float types: not in the subset */
	}
}

static const ProtobufCFieldDescriptor *field_named(const ProtobufCMessageDescriptor *d, const char *name)
{
	unsigned i;

	for (i = 0; i < d->n_fields; i++)
		if (strcmp(d->fields[i].name, name) == 0)
			return &d->fields[i];
	return NULL;
}

static int enc_message(strbuf *sb, const ProtobufCMessageDescriptor *d, const json_t *v)
{
	const char *key;
	json_t *mv;
	bool handled;
	int r;

	r = enc_special(sb, d, v, &handled);
	if (handled)
		return r;
	if (!json_is_object(v))
		return -ENOTSUP;
	json_object_foreach((json_t *)v, key, mv) {
		const ProtobufCFieldDescriptor *f = field_named(d, key);

		if (json_is_null(mv))
			continue;
		if (!f)
			return -ENOTSUP;
		if (f->label != PROTOBUF_C_LABEL_REPEATED) {
			r = enc_value(sb, f, mv);
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE && is_map_entry(f->descriptor)) {
			const ProtobufCMessageDescriptor *e = f->descriptor;
			const char *mk;
			json_t *me;

			if (!json_is_object(mv))
				return -ENOTSUP;
			r = 0;
			json_object_foreach(mv, mk, me) {
				strbuf ent = STRBUF_INIT;
				json_t *k = json_string(mk);

				r = k ? enc_value(&ent, &e->fields[0], k) : -ENOMEM;
				json_decref(k);
				if (r == 0)
					r = enc_value(&ent, &e->fields[1], me);
				if (r == 0)
					r = put_bytes_field(sb, f->id, ent.buf, ent.len);
				strbuf_release(&ent);
				if (r < 0)
					break;
			}
		} else {
			size_t i;
			json_t *el;

			if (!json_is_array(mv))
				return -ENOTSUP;
			r = 0;
			json_array_foreach(mv, i, el) {
				r = enc_value(sb, f, el);
				if (r < 0)
					break;
			}
		}
		if (r < 0)
			return r;
	}
	return 0;
}

static const struct kind_entry *kind_for(const char *api_version, const char *kind)
{
	size_t i;

	if (!api_version || !kind)
		return NULL;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].api_version && strcmp(kinds[i].kind, kind) == 0 &&
		    strcmp(kinds[i].api_version, api_version) == 0)
			return &kinds[i];
	return NULL;
}

bool kube_proto_kind(const char *api_version, const char *kind)
{
	return kind_for(api_version, kind) != NULL;
}

/* The object's own message (no envelope), apiVersion and kind left out. */
static int enc_object(strbuf *sb, const struct kind_entry *e, const json_t *obj)
{
	json_t *body;
	int r;

	if (!json_is_object(obj))
		return -ENOTSUP;
	body = json_copy((json_t *)obj);
	if (!body)
		return -ENOMEM;
	json_object_del(body, "apiVersion");
	json_object_del(body, "kind");
	r = enc_message(sb, e->desc, body);
	json_decref(body);
	return r;
}

/* magic + runtime.Unknown{typeMeta, raw, contentEncoding "", contentType ""}. */
static int envelope(const char *api_version, const char *kind, const strbuf *raw, unsigned char **ret,
		    size_t *ret_len)
{
	strbuf out = STRBUF_INIT, tm = STRBUF_INIT;
	size_t len;
	int r;

	r = put_bytes_field(&tm, 1, api_version, strlen(api_version));
	if (r == 0)
		r = put_bytes_field(&tm, 2, kind, strlen(kind));
	if (r == 0)
		r = strbuf_add(&out, magic, sizeof(magic));
	if (r == 0)
		r = put_bytes_field(&out, 1, tm.buf, tm.len);
	if (r == 0)
		r = put_bytes_field(&out, 2, raw->buf, raw->len);
	if (r == 0)
		r = put_bytes_field(&out, 3, "", 0);
	if (r == 0)
		r = put_bytes_field(&out, 4, "", 0);
	strbuf_release(&tm);
	if (r < 0) {
		strbuf_release(&out);
		return r;
	}
	*ret = (unsigned char *)strbuf_detach(&out, &len);
	*ret_len = len;
	return *ret ? 0 : -ENOMEM;
}

int kube_proto_encode(const json_t *obj, unsigned char **ret, size_t *ret_len)
{
	const char *av = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const struct kind_entry *e = kind_for(av, kind);
	strbuf raw = STRBUF_INIT;
	int r;

	if (!e)
		return -ENOTSUP;
	r = enc_object(&raw, e, obj);
	if (r == 0)
		r = envelope(av, kind, &raw, ret, ret_len);
	strbuf_release(&raw);
	return r;
}

int kube_proto_encode_list(const json_t *list, unsigned char **ret, size_t *ret_len)
{
	const char *av = json_string_value(json_object_get(list, "apiVersion"));
	const char *kind = json_string_value(json_object_get(list, "kind"));
	const json_t *meta = json_object_get(list, "metadata"), *items = json_object_get(list, "items");
	const struct kind_entry *e;
	strbuf raw = STRBUF_INIT, lm = STRBUF_INIT;
	char item_kind[128];
	const char *key;
	json_t *v, *el;
	size_t n, i;
	int r = 0;

	n = kind ? strlen(kind) : 0;
	if (n < 5 || n - 4 >= sizeof(item_kind) || strcmp(kind + n - 4, "List") != 0)
		return -ENOTSUP;
	memcpy(item_kind, kind, n - 4);
	item_kind[n - 4] = '\0';
	e = kind_for(av, item_kind);
	if (!e || (items && !json_is_array(items)) || (meta && !json_is_object(meta)))
		return -ENOTSUP;
	/* ListMeta: selfLink 1, resourceVersion 2, continue 3, remainingItemCount 4. */
	json_object_foreach((json_t *)meta, key, v) {
		if (strcmp(key, "resourceVersion") == 0 && json_is_string(v))
			r = put_bytes_field(&lm, 2, json_string_value(v), json_string_length(v));
		else if (strcmp(key, "continue") == 0 && json_is_string(v))
			r = put_bytes_field(&lm, 3, json_string_value(v), json_string_length(v));
		else if (strcmp(key, "selfLink") == 0 && json_is_string(v))
			r = put_bytes_field(&lm, 1, json_string_value(v), json_string_length(v));
		else if (strcmp(key, "remainingItemCount") == 0 && json_is_integer(v))
			r = put_tag(&lm, 4, 0) < 0 ? -ENOMEM : put_varint(&lm, (uint64_t)json_integer_value(v));
		else
			r = -ENOTSUP;
		if (r < 0)
			goto out;
	}
	r = put_bytes_field(&raw, 1, lm.buf, lm.len);
	json_array_foreach((json_t *)items, i, el) {
		strbuf one = STRBUF_INIT;

		if (r < 0)
			break;
		r = enc_object(&one, e, el);
		if (r == 0)
			r = put_bytes_field(&raw, 2, one.buf, one.len);
		strbuf_release(&one);
	}
	if (r == 0)
		r = envelope(av, kind, &raw, ret, ret_len);
out:
	strbuf_release(&lm);
	strbuf_release(&raw);
	return r;
}

/* Accept: the media ranges in order of q (stable: the client's order among
 * equals), as kube-apiserver's negotiation takes them; the first one the hub
 * can answer decides.  Protobuf answers only the plain form (a range with
 * as=Table or other conversions goes on to the next one). */
bool kube_proto_accept_first(const char *accept)
{
	char buf[1024];
	struct { const char *type; double q; bool plain; } r[32];
	size_t n = 0, i, j;
	char *save = NULL, *tok;

	if (!accept || strlen(accept) >= sizeof(buf))
		return false;
	strcpy(buf, accept);
	for (tok = strtok_r(buf, ",", &save); tok && n < 32; tok = strtok_r(NULL, ",", &save)) {
		char *semi, *p, *psave = NULL;

		while (*tok == ' ' || *tok == '\t')
			tok++;
		r[n].type = tok;
		r[n].q = 1;
		r[n].plain = true;
		semi = strchr(tok, ';');
		if (semi) {
			*semi = '\0';
			for (p = strtok_r(semi + 1, ";", &psave); p; p = strtok_r(NULL, ";", &psave)) {
				while (*p == ' ')
					p++;
				if (strncmp(p, "q=", 2) == 0)
					r[n].q = strtod(p + 2, NULL);
				else
					r[n].plain = false;
			}
		}
		for (p = tok + strlen(tok); p > tok && (p[-1] == ' ' || p[-1] == '\t'); p--)
			p[-1] = '\0';
		n++;
	}
	/* Stable insertion sort by q, highest first. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && r[j].q > r[j - 1].q; j--) {
			__typeof__(r[0]) t = r[j];

			r[j] = r[j - 1];
			r[j - 1] = t;
		}
	for (i = 0; i < n; i++) {
		if (r[i].q <= 0)
			continue;
		if (strcasecmp(r[i].type, KUBE_PROTO_MEDIA_TYPE) == 0) {
			if (r[i].plain)
				return true;
			continue;
		}
		if (strcasecmp(r[i].type, "application/json") == 0 || strcasecmp(r[i].type, "application/yaml") == 0 ||
		    strcmp(r[i].type, "*/*") == 0 || strcasecmp(r[i].type, "application/*") == 0)
			return false;
	}
	return false;
}

/* meta/v1 Status: metadata (ListMeta) 1, status 2, message 3, reason 4,
 * details 5 (not written: the watch's errors carry none), code 6. */
int kube_proto_encode_status(const json_t *st, unsigned char **ret, size_t *ret_len)
{
	static const struct { const char *name; uint32_t id; } strs[] = {
		{ "status", 2 }, { "message", 3 }, { "reason", 4 },
	};
	strbuf raw = STRBUF_INIT;
	size_t i;
	int r;

	r = put_bytes_field(&raw, 1, "", 0);
	for (i = 0; r == 0 && i < sizeof(strs) / sizeof(strs[0]); i++) {
		const char *s = json_string_value(json_object_get(st, strs[i].name));

		if (s)
			r = put_bytes_field(&raw, strs[i].id, s, strlen(s));
	}
	if (r == 0 && json_is_integer(json_object_get(st, "code"))) {
		r = put_tag(&raw, 6, 0);
		if (r == 0)
			r = put_varint(&raw, (uint64_t)json_integer_value(json_object_get(st, "code")));
	}
	if (r == 0)
		r = envelope("v1", "Status", &raw, ret, ret_len);
	strbuf_release(&raw);
	return r;
}

int kube_proto_watch_frame(strbuf *out, const char *type, const unsigned char *obj, size_t obj_len)
{
	strbuf ev = STRBUF_INIT, ext = STRBUF_INIT;
	unsigned char len[4];
	int r;

	r = put_bytes_field(&ext, 1, obj, obj_len);
	if (r == 0)
		r = put_bytes_field(&ev, 1, type, strlen(type));
	if (r == 0)
		r = put_bytes_field(&ev, 2, ext.buf, ext.len);
	if (r == 0 && ev.len > UINT32_MAX)
		r = -EFBIG;
	if (r == 0) {
		len[0] = (unsigned char)(ev.len >> 24);
		len[1] = (unsigned char)(ev.len >> 16);
		len[2] = (unsigned char)(ev.len >> 8);
		len[3] = (unsigned char)ev.len;
		r = strbuf_add(out, len, 4);
	}
	if (r == 0)
		r = strbuf_add(out, ev.buf, ev.len);
	strbuf_release(&ev);
	strbuf_release(&ext);
	return r;
}
