/* Tests for src/kube/proto.c with the RBAC and authentication kinds:
 * protobuf bodies as kubectl 1.32+ sends them decode to the JSON the API
 * paths read; unknown kinds and malformed bodies are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kube/proto.h"

/* A tiny protobuf writer for the test's messages. */
struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put_varint(struct buf *o, uint64_t v)
{
	do {
		uint8_t c = v & 0x7f;

		v >>= 7;
		o->b[o->n++] = (uint8_t)(c | (v ? 0x80 : 0));
	} while (v);
}

static void put_bytes(struct buf *o, unsigned field, const void *p, size_t len)
{
	put_varint(o, (uint64_t)field << 3 | 2);
	put_varint(o, len);
	memcpy(o->b + o->n, p, len);
	o->n += len;
}

static void put_str(struct buf *o, unsigned field, const char *s)
{
	put_bytes(o, field, s, strlen(s));
}

static void put_msg(struct buf *o, unsigned field, const struct buf *m)
{
	put_bytes(o, field, m->b, m->n);
}

static void put_int(struct buf *o, unsigned field, uint64_t v)
{
	put_varint(o, (uint64_t)field << 3);
	put_varint(o, v);
}

/* "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw}. */
static void envelope(struct buf *out, const char *api_version, const char *kind, const struct buf *raw)
{
	struct buf tm = { .n = 0 }, unk = { .n = 0 };

	put_str(&tm, 1, api_version);
	put_str(&tm, 2, kind);
	put_msg(&unk, 1, &tm);
	put_msg(&unk, 2, raw);
	put_str(&unk, 4, "application/vnd.kubernetes.protobuf");
	memcpy(out->b, "k8s\0", 4);
	out->n = 4;
	memcpy(out->b + 4, unk.b, unk.n);
	out->n += unk.n;
}

static json_t *J(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	assert_non_null(j);
	return j;
}

static void expect(const struct buf *body, const char *want_json)
{
	json_t *got = NULL, *want = J(want_json);

	ah_err err = { 0 };

	assert_int_equal(kube_proto_decode(body->b, body->n, &got, &err), 0);
	if (!json_equal(got, want)) {
		char *s = json_dumps(got, JSON_SORT_KEYS);

		fail_msg("got %s\nwant %s", s, want_json);
	}
	json_decref(got);
	json_decref(want);
}

static void test_rolebinding(void **state)
{
	struct buf meta = { .n = 0 }, label = { .n = 0 }, subj = { .n = 0 }, ref = { .n = 0 };
	struct buf raw = { .n = 0 }, body = { .n = 0 };

	put_str(&meta, 1, "creator");
	put_str(&meta, 3, "pool");
	put_str(&label, 1, "team");
	put_str(&label, 2, "blue");
	put_msg(&meta, 11, &label);
	put_str(&subj, 1, "ServiceAccount");
	put_str(&subj, 3, "creator");
	put_str(&subj, 4, "cluster-a");
	put_str(&ref, 1, "rbac.authorization.k8s.io");
	put_str(&ref, 2, "ClusterRole");
	put_str(&ref, 3, "agenthub-agent-binder");
	put_msg(&raw, 1, &meta);
	put_msg(&raw, 2, &subj);
	put_msg(&raw, 2, &subj);
	put_msg(&raw, 3, &ref);
	put_int(&raw, 99, 7); /* an unknown field is skipped */
	envelope(&body, "rbac.authorization.k8s.io/v1", "RoleBinding", &raw);
	expect(&body, "{\"apiVersion\":\"rbac.authorization.k8s.io/v1\",\"kind\":\"RoleBinding\","
		      "\"metadata\":{\"name\":\"creator\",\"namespace\":\"pool\",\"labels\":{\"team\":\"blue\"}},"
		      "\"subjects\":[{\"kind\":\"ServiceAccount\",\"name\":\"creator\",\"namespace\":\"cluster-a\"},"
		      "{\"kind\":\"ServiceAccount\",\"name\":\"creator\",\"namespace\":\"cluster-a\"}],"
		      "\"roleRef\":{\"apiGroup\":\"rbac.authorization.k8s.io\",\"kind\":\"ClusterRole\","
		      "\"name\":\"agenthub-agent-binder\"}}");
}

static void test_reviews_and_token(void **state)
{
	struct buf attrs = { .n = 0 }, spec = { .n = 0 }, raw = { .n = 0 }, body = { .n = 0 };

	put_str(&attrs, 1, "pool");
	put_str(&attrs, 2, "patch");
	put_str(&attrs, 3, "agent-install.openshift.io");
	put_str(&attrs, 5, "agents");
	put_msg(&spec, 1, &attrs);
	put_msg(&raw, 2, &spec);
	envelope(&body, "authorization.k8s.io/v1", "SelfSubjectAccessReview", &raw);
	expect(&body, "{\"apiVersion\":\"authorization.k8s.io/v1\",\"kind\":\"SelfSubjectAccessReview\","
		      "\"spec\":{\"resourceAttributes\":{\"namespace\":\"pool\",\"verb\":\"patch\","
		      "\"group\":\"agent-install.openshift.io\",\"resource\":\"agents\"}}}");

	memset(&spec, 0, sizeof(spec));
	memset(&raw, 0, sizeof(raw));
	put_int(&spec, 4, 7200);
	put_str(&spec, 1, "https://kubernetes.default.svc.cluster.local");
	put_msg(&raw, 2, &spec);
	envelope(&body, "authentication.k8s.io/v1", "TokenRequest", &raw);
	expect(&body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\","
		      "\"spec\":{\"expirationSeconds\":7200,\"audiences\":[\"https://kubernetes.default.svc.cluster.local\"]}}");

	memset(&raw, 0, sizeof(raw));
	envelope(&body, "authentication.k8s.io/v1", "SelfSubjectReview", &raw);
	expect(&body, "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"SelfSubjectReview\"}");
}

static void test_other_and_bad(void **state)
{
	struct buf raw = { .n = 0 }, body = { .n = 0 }, meta = { .n = 0 };
	json_t *got = NULL;
	ah_err err = { 0 };
	size_t cut;

	put_str(&meta, 1, "x");
	put_msg(&raw, 1, &meta);
	envelope(&body, "v1", "Pod", &raw);
	assert_true(kube_proto_decode(body.b, body.n, &got, &err) < 0);
	assert_int_equal(err.status, 415);
	assert_true(kube_proto_decode("{\"kind\":\"Role\"}", 15, &got, &err) < 0);
	assert_int_equal(err.status, 400);
	assert_true(kube_proto_decode("k8s", 3, &got, &err) < 0);
	envelope(&body, "rbac.authorization.k8s.io/v1", "Role", &raw);
	/* Every truncation of a valid body is refused or decodes; none crashes. */
	for (cut = 4; cut < body.n; cut++) {
		int r = kube_proto_decode(body.b, cut, &got, &err);

		if (r == 0)
			json_decref(got);
		else
			assert_int_equal(err.status, 400);
		got = NULL;
	}
	/* A length past the end, a bad wire type, an endless varint. */
	assert_true(kube_proto_decode("k8s\0\x12\x7f\x01\x02", 8, &got, &err) < 0);
	assert_true(kube_proto_decode("k8s\0\x0f\x01", 6, &got, &err) < 0);
	assert_true(kube_proto_decode("k8s\0\x08\xff\xff", 7, &got, &err) < 0);
	assert_null(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rolebinding),
		cmocka_unit_test(test_reviews_and_token),
		cmocka_unit_test(test_other_and_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
