/* Tests for src/kube/proto.c: bodies captured from kubectl 1.33 (kubectl
 * -v=9 prints them) decode into the JSON kubectl would have sent; messages
 * built with the generated packers cover the apimachinery types (Time,
 * MicroTime, FieldsV1, maps, owner references), Lease, events.k8s.io Events
 * and DeleteOptions; malformed and foreign bodies are refused with the right
 * Status reason. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/proto.h"
#include "kube/proto/coordination.pb-c.h"
#include "kube/proto/core.pb-c.h"
#include "kube/proto/events.pb-c.h"
#include "kube/proto/meta.pb-c.h"
#include "kube/proto/runtime.pb-c.h"

/* kubectl 1.33: kubectl create namespace vec-ns */
static const char ns_body[] =
	"\x6b\x38\x73\x00\x0a\x0f\x0a\x02\x76\x31\x12\x09\x4e\x61\x6d\x65"
	"\x73\x70\x61\x63\x65\x12\x1e\x0a\x16\x0a\x06\x76\x65\x63\x2d\x6e"
	"\x73\x12\x00\x1a\x00\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00\x12"
	"\x00\x1a\x02\x0a\x00\x1a\x00\x22\x00";
/* kubectl 1.33: kubectl create configmap cm1 -n vec-ns --from-literal=k=v
 * --from-file=bin=bin.dat (bin.dat: 00 01 02 ff) */
static const char cm_body[] =
	"\x6b\x38\x73\x00\x0a\x0f\x0a\x02\x76\x31\x12\x09\x43\x6f\x6e\x66"
	"\x69\x67\x4d\x61\x70\x12\x30\x0a\x19\x0a\x03\x63\x6d\x31\x12\x00"
	"\x1a\x06\x76\x65\x63\x2d\x6e\x73\x22\x00\x2a\x00\x32\x00\x38\x00"
	"\x42\x00\x12\x06\x0a\x01\x6b\x12\x01\x76\x1a\x0b\x0a\x03\x62\x69"
	"\x6e\x12\x04\x00\x01\x02\xff\x1a\x00\x22\x00";
/* kubectl 1.33: kubectl create secret generic sec1 -n vec-ns
 * --from-literal=user=admin --from-literal=pw=s3cret */
static const char secret_body[] =
	"\x6b\x38\x73\x00\x0a\x0c\x0a\x02\x76\x31\x12\x06\x53\x65\x63\x72"
	"\x65\x74\x12\x3b\x0a\x1a\x0a\x04\x73\x65\x63\x31\x12\x00\x1a\x06"
	"\x76\x65\x63\x2d\x6e\x73\x22\x00\x2a\x00\x32\x00\x38\x00\x42\x00"
	"\x12\x0c\x0a\x02\x70\x77\x12\x06\x73\x33\x63\x72\x65\x74\x12\x0d"
	"\x0a\x04\x75\x73\x65\x72\x12\x05\x61\x64\x6d\x69\x6e\x1a\x00\x1a"
	"\x00\x22\x00";

static void expect_json(const void *buf, size_t len, const char *want)
{
	json_t *got = NULL, *exp;
	json_error_t jerr;
	ah_err err = { 0 };
	char *s;

	exp = json_loads(want, 0, &jerr);
	if (!exp)
		fail_msg("bad expected JSON %s: %s", want, jerr.text);
	if (kube_proto_decode(buf, len, &got, &err) != 0)
		fail_msg("decode failed: %d %s", err.status, err.message);
	s = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
	if (!json_equal(got, exp)) {
		char *w = json_dumps(exp, JSON_COMPACT | JSON_SORT_KEYS);

		fail_msg("got  %s\nwant %s", s, w);
	}
	/* apiVersion and kind come first, as in the JSON clients send. */
	assert_true(strncmp(s, "{", 1) == 0);
	free(s);
	s = json_dumps(got, JSON_COMPACT);
	if (json_object_get(exp, "apiVersion"))
		assert_true(strncmp(s, "{\"apiVersion\":", 14) == 0);
	free(s);
	json_decref(got);
	json_decref(exp);
}

static void expect_error(const void *buf, size_t len, int status, const char *reason)
{
	json_t *got = NULL;
	ah_err err = { 0 };

	assert_true(kube_proto_decode(buf, len, &got, &err) < 0);
	assert_null(got);
	assert_int_equal(err.status, status);
	assert_string_equal(err.reason, reason);
	assert_true(strlen(err.message) > 0);
}

/* Wrap a packed object in the "k8s\0" + runtime.Unknown envelope. */
static uint8_t *envelope(const char *api_version, const char *kind, const ProtobufCMessage *obj,
			 const char *encoding, size_t *ret_len)
{
	K8s__Io__Apimachinery__Pkg__Runtime__TypeMeta tm = K8S__IO__APIMACHINERY__PKG__RUNTIME__TYPE_META__INIT;
	K8s__Io__Apimachinery__Pkg__Runtime__Unknown u = K8S__IO__APIMACHINERY__PKG__RUNTIME__UNKNOWN__INIT;
	size_t n = obj ? protobuf_c_message_get_packed_size(obj) : 0;
	uint8_t *raw = malloc(n + 1), *out;

	assert_non_null(raw);
	if (obj)
		protobuf_c_message_pack(obj, raw);
	tm.apiversion = (char *)api_version;
	tm.kind = (char *)kind;
	u.typemeta = &tm;
	u.has_raw = obj != NULL;
	u.raw.data = raw;
	u.raw.len = n;
	u.contentencoding = (char *)encoding;
	n = k8s__io__apimachinery__pkg__runtime__unknown__get_packed_size(&u);
	out = malloc(n + 4);
	assert_non_null(out);
	memcpy(out, "k8s", 4);
	k8s__io__apimachinery__pkg__runtime__unknown__pack(&u, out + 4);
	free(raw);
	*ret_len = n + 4;
	return out;
}

static void test_kubectl_bodies(void **state)
{
	(void)state;
	expect_json(ns_body, sizeof(ns_body) - 1,
		    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"vec-ns\"}}");
	expect_json(cm_body, sizeof(cm_body) - 1,
		    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm1\",\"namespace\":\"vec-ns\"},"
		    "\"data\":{\"k\":\"v\"},\"binaryData\":{\"bin\":\"AAEC/w==\"}}");
	expect_json(secret_body, sizeof(secret_body) - 1,
		    "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"sec1\",\"namespace\":\"vec-ns\"},"
		    "\"data\":{\"pw\":\"czNjcmV0\",\"user\":\"YWRtaW4=\"}}");
}

typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta ObjectMeta;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Time Time;
typedef K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__MicroTime MicroTime;

static void test_metadata(void **state)
{
	ObjectMeta m = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
	Time created = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
	Time zero = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry l1 =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry l2 =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__LABELS_ENTRY__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ObjectMeta__LabelsEntry *labels[] = { &l1, &l2 };
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__OwnerReference o =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OWNER_REFERENCE__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__OwnerReference *owners[] = { &o };
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ManagedFieldsEntry mf =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MANAGED_FIELDS_ENTRY__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__ManagedFieldsEntry *mfs[] = { &mf };
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__FieldsV1 fv = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__FIELDS_V1__INIT;
	K8s__Io__Api__Core__V1__ConfigMap cm = K8S__IO__API__CORE__V1__CONFIG_MAP__INIT;
	char *fins[] = { "example.com/x", "" };
	static const char fields[] = "{\"f:data\":{\"f:k\":{}}}";
	uint8_t *buf;
	size_t len;

	(void)state;
	m.name = "cm";
	m.generatename = "";      /* empty strings are left out (omitempty) */
	m.namespace_ = "ns1";
	m.has_generation = 1;
	m.generation = 0;         /* zero numbers too */
	created.has_seconds = 1;
	created.seconds = 1700000000;
	m.creationtimestamp = &created;
	m.deletiontimestamp = &zero; /* Go's zero time is an empty message: no field */
	l1.key = "app";
	l1.value = "web";
	l2.key = "empty";
	l2.value = "";            /* map values stay, even empty */
	m.n_labels = 2;
	m.labels = labels;
	o.apiversion = "v1";
	o.kind = "ConfigMap";
	o.name = "owner";
	o.uid = "u-1";
	o.has_controller = 1;
	o.controller = 1;
	m.n_ownerreferences = 1;
	m.ownerreferences = owners;
	m.n_finalizers = 2;
	m.finalizers = fins;      /* list elements stay, even empty */
	mf.manager = "kubectl";
	mf.operation = "Update";
	mf.time = &created;
	mf.fieldstype = "FieldsV1";
	fv.has_raw = 1;
	fv.raw.data = (uint8_t *)fields;
	fv.raw.len = strlen(fields);
	mf.fieldsv1 = &fv;
	m.n_managedfields = 1;
	m.managedfields = mfs;
	cm.metadata = &m;
	cm.has_immutable = 1;
	cm.immutable = 1;
	buf = envelope("v1", "ConfigMap", &cm.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"immutable\":true,\"metadata\":{"
		    "\"name\":\"cm\",\"namespace\":\"ns1\",\"creationTimestamp\":\"2023-11-14T22:13:20Z\","
		    "\"labels\":{\"app\":\"web\",\"empty\":\"\"},"
		    "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"owner\",\"uid\":\"u-1\",\"controller\":true}],"
		    "\"finalizers\":[\"example.com/x\",\"\"],"
		    "\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"time\":\"2023-11-14T22:13:20Z\","
		    "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:data\":{\"f:k\":{}}}}]}}");
	free(buf);

	/* Go's zero time written as seconds (-62135596800) is no time either. */
	created.seconds = -62135596800LL;
	m.n_managedfields = 0;
	m.n_ownerreferences = 0;
	m.n_labels = 0;
	m.n_finalizers = 0;
	buf = envelope("v1", "ConfigMap", &cm.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"immutable\":true,\"metadata\":{\"name\":\"cm\",\"namespace\":\"ns1\"}}");
	free(buf);
}

static void test_lease(void **state)
{
	K8s__Io__Api__Coordination__V1__Lease l = K8S__IO__API__COORDINATION__V1__LEASE__INIT;
	K8s__Io__Api__Coordination__V1__LeaseSpec spec = K8S__IO__API__COORDINATION__V1__LEASE_SPEC__INIT;
	ObjectMeta m = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
	MicroTime renew = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MICRO_TIME__INIT;
	uint8_t *buf;
	size_t len;

	(void)state;
	m.name = "leader";
	m.namespace_ = "kube-system";
	spec.holderidentity = "pod-a_1234";
	spec.has_leasedurationseconds = 1;
	spec.leasedurationseconds = 15;
	renew.has_seconds = 1;
	renew.seconds = 1700000000;
	renew.has_nanos = 1;
	renew.nanos = 123456789;
	spec.renewtime = &renew;
	spec.acquiretime = &renew;
	spec.has_leasetransitions = 1;
	spec.leasetransitions = 3;
	l.metadata = &m;
	l.spec = &spec;
	buf = envelope("coordination.k8s.io/v1", "Lease", &l.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\","
		    "\"metadata\":{\"name\":\"leader\",\"namespace\":\"kube-system\"},"
		    "\"spec\":{\"holderIdentity\":\"pod-a_1234\",\"leaseDurationSeconds\":15,"
		    "\"acquireTime\":\"2023-11-14T22:13:20.123456Z\",\"renewTime\":\"2023-11-14T22:13:20.123456Z\","
		    "\"leaseTransitions\":3}}");
	free(buf);
}

static void test_events(void **state)
{
	K8s__Io__Api__Events__V1__Event ev = K8S__IO__API__EVENTS__V1__EVENT__INIT;
	K8s__Io__Api__Core__V1__Event cev = K8S__IO__API__CORE__V1__EVENT__INIT;
	K8s__Io__Api__Core__V1__ObjectReference ref = K8S__IO__API__CORE__V1__OBJECT_REFERENCE__INIT;
	K8s__Io__Api__Core__V1__EventSource src = K8S__IO__API__CORE__V1__EVENT_SOURCE__INIT;
	ObjectMeta m = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
	MicroTime t = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MICRO_TIME__INIT;
	Time first = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__TIME__INIT;
	uint8_t *buf;
	size_t len;

	(void)state;
	m.name = "a.17";
	m.namespace_ = "demo";
	ref.kind = "Agent";
	ref.name = "a";
	ref.namespace_ = "demo";
	ref.apiversion = "agent-install.openshift.io/v1beta1";
	t.has_seconds = 1;
	t.seconds = 0x65000000;
	ev.metadata = &m;
	ev.eventtime = &t;
	ev.reportingcontroller = "example.com/ctl";
	ev.reportinginstance = "ctl-1";
	ev.action = "Reconcile";
	ev.reason = "Synced";
	ev.regarding = &ref;
	ev.note = "all good";
	ev.type = "Normal";
	buf = envelope("events.k8s.io/v1", "Event", &ev.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"a.17\",\"namespace\":\"demo\"},"
		    "\"eventTime\":\"2023-09-12T06:06:56.000000Z\",\"reportingController\":\"example.com/ctl\","
		    "\"reportingInstance\":\"ctl-1\",\"action\":\"Reconcile\",\"reason\":\"Synced\","
		    "\"regarding\":{\"kind\":\"Agent\",\"namespace\":\"demo\",\"name\":\"a\","
		    "\"apiVersion\":\"agent-install.openshift.io/v1beta1\"},\"note\":\"all good\",\"type\":\"Normal\"}");
	free(buf);

	cev.metadata = &m;
	cev.involvedobject = &ref;
	cev.reason = "Synced";
	cev.message = "all good";
	src.component = "ctl";
	cev.source = &src;
	first.has_seconds = 1;
	first.seconds = 0x65000000;
	cev.firsttimestamp = &first;
	cev.lasttimestamp = &first;
	cev.has_count = 1;
	cev.count = 2;
	cev.type = "Warning";
	buf = envelope("v1", "Event", &cev.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"a.17\",\"namespace\":\"demo\"},"
		    "\"involvedObject\":{\"kind\":\"Agent\",\"namespace\":\"demo\",\"name\":\"a\","
		    "\"apiVersion\":\"agent-install.openshift.io/v1beta1\"},\"reason\":\"Synced\",\"message\":\"all good\","
		    "\"source\":{\"component\":\"ctl\"},\"firstTimestamp\":\"2023-09-12T06:06:56Z\","
		    "\"lastTimestamp\":\"2023-09-12T06:06:56Z\",\"count\":2,\"type\":\"Warning\"}");
	free(buf);
}

static void test_delete_options_and_quota(void **state)
{
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__DeleteOptions d =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__DELETE_OPTIONS__INIT;
	K8s__Io__Apimachinery__Pkg__Apis__Meta__V1__Preconditions pre =
		K8S__IO__APIMACHINERY__PKG__APIS__META__V1__PRECONDITIONS__INIT;
	K8s__Io__Api__Core__V1__ResourceQuota q = K8S__IO__API__CORE__V1__RESOURCE_QUOTA__INIT;
	K8s__Io__Api__Core__V1__ResourceQuotaSpec qs = K8S__IO__API__CORE__V1__RESOURCE_QUOTA_SPEC__INIT;
	K8s__Io__Api__Core__V1__ResourceQuotaSpec__HardEntry h = K8S__IO__API__CORE__V1__RESOURCE_QUOTA_SPEC__HARD_ENTRY__INIT;
	K8s__Io__Api__Core__V1__ResourceQuotaSpec__HardEntry *hard[] = { &h };
	K8s__Io__Apimachinery__Pkg__Api__Resource__Quantity qty = K8S__IO__APIMACHINERY__PKG__API__RESOURCE__QUANTITY__INIT;
	ObjectMeta m = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
	char *dry[] = { "All" };
	uint8_t *buf;
	size_t len;

	(void)state;
	d.propagationpolicy = "Foreground";
	pre.uid = "u-1";
	d.preconditions = &pre;
	d.has_graceperiodseconds = 1;
	d.graceperiodseconds = 0;
	d.n_dryrun = 1;
	d.dryrun = dry;
	/* DeleteOptions travels with the group of the resource it deletes. */
	buf = envelope("coordination.k8s.io/v1", "DeleteOptions", &d.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"DeleteOptions\","
		    "\"preconditions\":{\"uid\":\"u-1\"},\"propagationPolicy\":\"Foreground\",\"dryRun\":[\"All\"]}");
	free(buf);

	m.name = "q";
	qty.string = "10";
	h.key = "pods";
	h.value = &qty;
	qs.n_hard = 1;
	qs.hard = hard;
	q.metadata = &m;
	q.spec = &qs;
	buf = envelope("v1", "ResourceQuota", &q.base, NULL, &len);
	expect_json(buf, len,
		    "{\"apiVersion\":\"v1\",\"kind\":\"ResourceQuota\",\"metadata\":{\"name\":\"q\"},\"spec\":{\"hard\":{\"pods\":\"10\"}}}");
	free(buf);
}

static void test_rejections(void **state)
{
	K8s__Io__Api__Core__V1__Secret s = K8S__IO__API__CORE__V1__SECRET__INIT;
	ObjectMeta m = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__OBJECT_META__INIT;
	MicroTime bad_t = K8S__IO__APIMACHINERY__PKG__APIS__META__V1__MICRO_TIME__INIT;
	K8s__Io__Api__Coordination__V1__Lease l = K8S__IO__API__COORDINATION__V1__LEASE__INIT;
	K8s__Io__Api__Coordination__V1__LeaseSpec spec = K8S__IO__API__COORDINATION__V1__LEASE_SPEC__INIT;
	uint8_t *buf;
	size_t len;
	char trunc[sizeof(ns_body)];

	(void)state;
	/* JSON sent with the protobuf content type, or no magic. */
	expect_error("{\"kind\":\"Namespace\"}", 20, 400, "BadRequest");
	expect_error("", 0, 400, "BadRequest");
	expect_error("k8s", 3, 400, "BadRequest");
	/* A body cut short inside the object. */
	memcpy(trunc, ns_body, sizeof(ns_body));
	expect_error(trunc, sizeof(ns_body) - 12, 400, "BadRequest");
	/* A custom resource has no protobuf form: 415, as kube-apiserver says. */
	m.name = "x";
	s.metadata = &m;
	buf = envelope("agent-install.openshift.io/v1beta1", "Agent", &s.base, NULL, &len);
	expect_error(buf, len, 415, "UnsupportedMediaType");
	free(buf);
	/* The same message under the wrong group is not the kind either. */
	buf = envelope("v2", "Secret", &s.base, NULL, &len);
	expect_error(buf, len, 415, "UnsupportedMediaType");
	free(buf);
	buf = envelope("v1", "", &s.base, NULL, &len);
	expect_error(buf, len, 400, "BadRequest");
	free(buf);
	buf = envelope("v1", "Secret", &s.base, "gzip", &len);
	expect_error(buf, len, 415, "UnsupportedMediaType");
	free(buf);
	/* Strings that are not UTF-8 cannot become JSON. */
	m.name = "bad\xff";
	buf = envelope("v1", "Secret", &s.base, NULL, &len);
	expect_error(buf, len, 400, "BadRequest");
	free(buf);
	/* Times outside 0001..9999 and nanos out of range. */
	m.name = "x";
	bad_t.has_seconds = 1;
	bad_t.seconds = 253402300800LL;
	spec.renewtime = &bad_t;
	l.metadata = &m;
	l.spec = &spec;
	buf = envelope("coordination.k8s.io/v1", "Lease", &l.base, NULL, &len);
	expect_error(buf, len, 400, "BadRequest");
	free(buf);
	bad_t.seconds = 1;
	bad_t.has_nanos = 1;
	bad_t.nanos = 1000000000;
	buf = envelope("coordination.k8s.io/v1", "Lease", &l.base, NULL, &len);
	expect_error(buf, len, 400, "BadRequest");
	free(buf);
	/* An empty object of a known kind is just its type. */
	buf = envelope("v1", "Secret", NULL, NULL, &len);
	expect_json(buf, len, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\"}");
	free(buf);
}

static void test_content_type(void **state)
{
	(void)state;
	assert_true(kube_proto_content_type("application/vnd.kubernetes.protobuf"));
	assert_true(kube_proto_content_type("application/vnd.kubernetes.protobuf; charset=binary"));
	assert_true(kube_proto_content_type("Application/Vnd.Kubernetes.Protobuf"));
	assert_true(kube_proto_content_type("application/vnd.kubernetes.protobuf;stream=watch"));
	assert_false(kube_proto_content_type("application/json"));
	assert_false(kube_proto_content_type("application/vnd.kubernetes.protobufx"));
	assert_false(kube_proto_content_type(NULL));
}

/* Encoding answers: each object encodes and decodes back to itself. */
static void roundtrip(const char *text)
{
	json_error_t jerr;
	json_t *in = json_loads(text, 0, &jerr), *out = NULL;
	unsigned char *pb = NULL;
	size_t len = 0;
	ah_err err;

	assert_non_null(in);
	assert_int_equal(kube_proto_encode(in, &pb, &len), 0);
	assert_memory_equal(pb, "k8s\0", 4);
	assert_int_equal(kube_proto_decode(pb, len, &out, &err), 0);
	if (!json_equal(in, out)) {
		char *a = json_dumps(in, JSON_SORT_KEYS), *b = json_dumps(out, JSON_SORT_KEYS);

		fail_msg("%s\n!=\n%s", a, b);
	}
	json_decref(in);
	json_decref(out);
	free(pb);
}

static void test_encode_roundtrip(void **state)
{
	(void)state;
	roundtrip("{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"n\","
		  "\"uid\":\"u-1\",\"resourceVersion\":\"7\",\"creationTimestamp\":\"2026-01-02T03:04:05Z\","
		  "\"labels\":{\"kubernetes.io/metadata.name\":\"n\"},\"managedFields\":[{\"manager\":\"kubectl\","
		  "\"operation\":\"Update\",\"apiVersion\":\"v1\",\"time\":\"2026-01-02T03:04:05Z\","
		  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{}}}}]},"
		  "\"spec\":{\"finalizers\":[\"kubernetes\"]},\"status\":{\"phase\":\"Active\"}}");
	roundtrip("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"s\",\"namespace\":\"x\","
		  "\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"c\",\"uid\":\"u\","
		  "\"controller\":true}],\"finalizers\":[\"a/b\"]},\"data\":{\"k\":\"AP8=\",\"e\":\"\"},"
		  "\"type\":\"Opaque\",\"immutable\":true}");
	roundtrip("{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":\"l\"},"
		  "\"spec\":{\"holderIdentity\":\"a\",\"leaseDurationSeconds\":15,"
		  "\"renewTime\":\"2026-01-01T00:00:00.250000Z\",\"leaseTransitions\":2}}");
}

static void test_encode_refusals(void **state)
{
	unsigned char *pb = NULL;
	size_t len = 0;
	json_t *o;

	(void)state;
	/* A member the subset does not carry: JSON is answered instead. */
	o = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},"
		       "\"surprise\":1}", 0, NULL);
	assert_int_equal(kube_proto_encode(o, &pb, &len), -ENOTSUP);
	json_decref(o);
	/* A value of the wrong JSON type. */
	o = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"data\":{\"a\":1}}", 0, NULL);
	assert_int_equal(kube_proto_encode(o, &pb, &len), -ENOTSUP);
	json_decref(o);
	/* Custom resources have no protobuf form. */
	o = json_loads("{\"apiVersion\":\"agent-install.openshift.io/v1beta1\",\"kind\":\"Agent\"}", 0, NULL);
	assert_int_equal(kube_proto_encode(o, &pb, &len), -ENOTSUP);
	json_decref(o);
	assert_null(pb);
}

static void test_accept(void **state)
{
	(void)state;
	assert_true(kube_proto_accept_first("application/vnd.kubernetes.protobuf,application/json"));
	assert_true(kube_proto_accept_first("application/vnd.kubernetes.protobuf, */*"));
	assert_true(kube_proto_accept_first("application/json;q=0.5, application/vnd.kubernetes.protobuf"));
	assert_false(kube_proto_accept_first("application/json, application/vnd.kubernetes.protobuf"));
	assert_false(kube_proto_accept_first("application/vnd.kubernetes.protobuf;q=0, application/json"));
	assert_false(kube_proto_accept_first("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
					     "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"));
	assert_false(kube_proto_accept_first("*/*"));
	assert_false(kube_proto_accept_first(NULL));
	assert_false(kube_proto_accept_first(""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kubectl_bodies),
		cmocka_unit_test(test_metadata),
		cmocka_unit_test(test_lease),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_delete_options_and_quota),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_content_type),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_encode_refusals),
		cmocka_unit_test(test_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
