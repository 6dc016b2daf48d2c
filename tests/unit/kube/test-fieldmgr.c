/* Tests for src/kube/fieldmgr.c: the FieldsV1 sets kube-apiserver records
 * for applies and updates (list-type map/set/atomic from the schema, "."
 * for added maps and list items, the server-owned metadata left out), the
 * set algebra, path strings, and server-side apply (merge, conflicts in
 * kube-apiserver's words, force, removal of given-up fields). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kube/fieldmgr.h"

/* A CRD-like schema with one list of each type and an atomic map. */
static const char *const SCHEMA =
	"{\"type\":\"object\",\"properties\":{"
	"\"spec\":{\"type\":\"object\",\"properties\":{"
	"  \"approved\":{\"type\":\"boolean\"},"
	"  \"role\":{\"type\":\"string\"},"
	"  \"atomicList\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"  \"setList\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\",\"items\":{\"type\":\"string\"}},"
	"  \"ports\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"map\","
	"     \"x-kubernetes-list-map-keys\":[\"port\",\"protocol\"],"
	"     \"items\":{\"type\":\"object\",\"properties\":{\"port\":{\"type\":\"integer\"},"
	"        \"protocol\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"}}}},"
	"  \"selector\":{\"type\":\"object\",\"x-kubernetes-map-type\":\"atomic\"}}},"
	"\"status\":{\"type\":\"object\",\"properties\":{\"state\":{\"type\":\"string\"}}}}}";

static json_t *load(const char *what, const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, JSON_DECODE_ANY, &je);

	if (!j)
		fail_msg("%s: bad test JSON %s: %s", what, s, je.text);
	return j;
}

static void expect_json(const char *what, const json_t *got, const char *want_s)
{
	json_t *want = load(what, want_s);

	if (!json_equal(got, want)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

		fail_msg("%s:\n got  %s\n want %s", what, g ? g : "(null)", want_s);
	}
	json_decref(want);
}

static struct fm_who who_for(const json_t *schema, const char *manager, const char *sub)
{
	struct fm_who w = { .manager = manager, .api_version = "example.com/v1", .subresource = sub,
			    .time = "2024-05-01T10:00:00Z", .schema = schema, .status_separate = true };

	return w;
}

/* --- fields of an object (what an applier owns) ----------------------------- */

struct fields_row {
	const char *name;
	const char *obj;
	const char *sub;   /* subresource */
	const char *want;  /* FieldsV1 */
};

static const struct fields_row fields_rows[] = {
	{ "scalars; apiVersion, kind and server metadata owned by no one",
	  "{\"apiVersion\":\"example.com/v1\",\"kind\":\"K\",\"metadata\":{\"name\":\"a\",\"namespace\":\"n\","
	  "\"uid\":\"u\",\"resourceVersion\":\"3\",\"labels\":{\"app\":\"x\"}},\"spec\":{\"approved\":true,\"role\":\"\"}}",
	  "", "{\"f:metadata\":{\"f:labels\":{\"f:app\":{}}},\"f:spec\":{\"f:approved\":{},\"f:role\":{}}}" },
	{ "atomic list and atomic map are leaves",
	  "{\"spec\":{\"atomicList\":[\"a\",\"b\"],\"selector\":{\"matchLabels\":{\"a\":\"b\"}}}}", "",
	  "{\"f:spec\":{\"f:atomicList\":{},\"f:selector\":{}}}" },
	{ "set items by value",
	  "{\"spec\":{\"setList\":[\"a\",\"b\"]}}", "",
	  "{\"f:spec\":{\"f:setList\":{\"v:\\\"a\\\"\":{},\"v:\\\"b\\\"\":{}}}}" },
	{ "map-list items by their keys, each a member",
	  "{\"spec\":{\"ports\":[{\"port\":80,\"protocol\":\"TCP\",\"name\":\"http\"}]}}", "",
	  "{\"f:spec\":{\"f:ports\":{\"k:{\\\"port\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\":"
	  "{\".\":{},\"f:name\":{},\"f:port\":{},\"f:protocol\":{}}}}}" },
	{ "metadata lists: finalizers a set, ownerReferences by uid",
	  "{\"metadata\":{\"finalizers\":[\"f1\"],\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"o\"}]}}", "",
	  "{\"f:metadata\":{\"f:finalizers\":{\"v:\\\"f1\\\"\":{}},"
	  "\"f:ownerReferences\":{\"k:{\\\"uid\\\":\\\"u1\\\"}\":{}}}}" },
	{ "main resource owns no status", "{\"spec\":{\"role\":\"m\"},\"status\":{\"state\":\"x\"}}", "",
	  "{\"f:spec\":{\"f:role\":{}}}" },
	{ "status subresource owns only status", "{\"spec\":{\"role\":\"m\"},\"status\":{\"state\":\"x\"}}",
	  "status", "{\"f:status\":{\"f:state\":{}}}" },
	{ "empty granular map owns nothing", "{\"spec\":{}}", "", "{}" },
};

static void test_fields_of(void **state)
{
	json_t *schema = load("schema", SCHEMA);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fields_rows) / sizeof(fields_rows[0]); i++) {
		const struct fields_row *r = &fields_rows[i];
		struct fm_who w = who_for(schema, "m", r->sub);
		json_t *obj = load(r->name, r->obj), *set = fm_fields_of(&w, obj), *v1 = fm_set_to_v1(set);

		expect_json(r->name, v1, r->want);
		json_decref(obj);
		json_decref(set);
		json_decref(v1);
	}
	json_decref(schema);
}

/* --- set algebra and paths ------------------------------------------------------ */

struct set_row {
	const char *name;
	char op; /* u, d, i */
	const char *a, *b, *want; /* FieldsV1 */
};

static const struct set_row set_rows[] = {
	{ "union of leaves", 'u', "{\"f:a\":{}}", "{\"f:b\":{}}", "{\"f:a\":{},\"f:b\":{}}" },
	{ "union keeps membership and children", 'u', "{\"f:m\":{\".\":{}}}", "{\"f:m\":{\"f:x\":{}}}",
	  "{\"f:m\":{\".\":{},\"f:x\":{}}}" },
	{ "difference drops a leaf and the empty parent", 'd', "{\"f:spec\":{\"f:a\":{}}}",
	  "{\"f:spec\":{\"f:a\":{}}}", "{}" },
	{ "difference keeps other children", 'd', "{\"f:spec\":{\"f:a\":{},\"f:b\":{}}}",
	  "{\"f:spec\":{\"f:a\":{}}}", "{\"f:spec\":{\"f:b\":{}}}" },
	{ "difference of a member keeps its children", 'd', "{\"f:m\":{\".\":{},\"f:x\":{}}}",
	  "{\"f:m\":{}}", "{\"f:m\":{\"f:x\":{}}}" },
	{ "intersection", 'i', "{\"f:spec\":{\"f:a\":{},\"f:b\":{}}}", "{\"f:spec\":{\"f:b\":{},\"f:c\":{}}}",
	  "{\"f:spec\":{\"f:b\":{}}}" },
	{ "intersection of disjoint sets is empty", 'i', "{\"f:a\":{}}", "{\"f:b\":{}}", "{}" },
};

static void test_set_algebra(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(set_rows) / sizeof(set_rows[0]); i++) {
		const struct set_row *r = &set_rows[i];
		json_t *a1 = load(r->name, r->a), *b1 = load(r->name, r->b);
		json_t *a = fm_set_from_v1(a1), *b = fm_set_from_v1(b1), *res, *v1;

		res = r->op == 'u' ? fm_set_union(a, b) : r->op == 'd' ? fm_set_difference(a, b) :
		      fm_set_intersection(a, b);
		v1 = fm_set_to_v1(res);
		expect_json(r->name, v1, r->want);
		assert_int_equal(fm_set_empty(res), strcmp(r->want, "{}") == 0);
		json_decref(a1);
		json_decref(b1);
		json_decref(a);
		json_decref(b);
		json_decref(res);
		json_decref(v1);
	}
}

static void test_path_string(void **state)
{
	static const struct {
		const char *keys, *want;
	} rows[] = {
		{ "[\"f:spec\",\"f:approved\"]", ".spec.approved" },
		{ "[\"f:spec\",\"f:ports\",\"k:{\\\"port\\\":80,\\\"protocol\\\":\\\"TCP\\\"}\",\"f:name\"]",
		  ".spec.ports[port=80,protocol=\"TCP\"].name" },
		{ "[\"f:metadata\",\"f:finalizers\",\"v:\\\"a\\\"\"]", ".metadata.finalizers[=\"a\"]" },
		{ "[\"f:spec\",\"f:x\",\"i:3\"]", ".spec.x[3]" },
		{ "[\"f:metadata\",\"f:labels\",\"f:app.kubernetes.io/name\"]", ".metadata.labels.app.kubernetes.io/name" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *k = load("keys", rows[i].keys);
		char *s = fm_path_string(k);

		assert_string_equal(s, rows[i].want);
		free(s);
		json_decref(k);
	}
}

/* --- updates ---------------------------------------------------------------------- */

struct update_row {
	const char *name;
	const char *old;     /* NULL: create */
	const char *obj;
	const char *manager, *sub;
	const char *want;    /* managedFields as stored (times are the fixed test time) */
};

#define T "\"time\":\"2024-05-01T10:00:00Z\""
#define OLDT "\"time\":\"2020-01-01T00:00:00Z\""

static const struct update_row update_rows[] = {
	{ "create: added maps are members, metadata is not", NULL,
	  "{\"metadata\":{\"name\":\"a\",\"labels\":{\"x\":\"1\"}},\"spec\":{\"approved\":false}}", "kubectl-create", "",
	  "[{\"manager\":\"kubectl-create\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:labels\":{\".\":{},\"f:x\":{}}},"
	  "\"f:spec\":{\".\":{},\"f:approved\":{}}}}]" },
	{ "create: a new set or map list is a member with its items (owner references atomic)", NULL,
	  "{\"metadata\":{\"name\":\"a\",\"finalizers\":[\"f1\"],\"ownerReferences\":[{\"uid\":\"u1\",\"name\":\"o\"}]}}",
	  "m", "",
	  "[{\"manager\":\"m\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{\"f:finalizers\":{\".\":{},\"v:\\\"f1\\\"\":{}},"
	  "\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"u1\\\"}\":{}}}}}]" },
	{ "an update takes the changed field from its owner",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"a\",\"operation\":\"Update\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:approved\":{},\"f:role\":{}}}}]},\"spec\":{\"approved\":false,\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":true,\"role\":\"\"}}", "b", "",
	  "[{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," OLDT ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}},"
	  "{\"manager\":\"b\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:approved\":{}}}}]" },
	{ "a removed field is no one's; an entry left empty goes",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"a\",\"operation\":\"Update\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]},\"spec\":{\"approved\":false,\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":true}}", "b", "",
	  "[{\"manager\":\"b\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:approved\":{}}}}]" },
	{ "no change: entries as they were (no new time)",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"a\",\"operation\":\"Update\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]},\"spec\":{\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"role\":\"\"}}", "b", "",
	  "[{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," OLDT ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]" },
	{ "an owner changing its own field: only its time changes",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"a\",\"operation\":\"Update\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]},\"spec\":{\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"role\":\"master\"}}", "a", "",
	  "[{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]" },
	{ "an owner changing a field another also owns: the other loses it",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"a\",\"operation\":\"Update\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}},{\"manager\":\"k\",\"operation\":\"Apply\","
	  "\"apiVersion\":\"example.com/v1\"," OLDT ",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]},\"spec\":{\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"role\":\"master\"}}", "a", "",
	  "[{\"manager\":\"a\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:role\":{}}}}]" },
	{ "status subresource: its own entry, status fields only",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"role\":\"\"},\"status\":{\"state\":\"known\"}}", "agenthub", "status",
	  "[{\"manager\":\"agenthub\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{\".\":{},\"f:state\":{}}},\"subresource\":\"status\"}]" },
	{ "a new list-map item is a member with its fields; a changed one only the change",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":1,\"protocol\":\"TCP\",\"name\":\"a\"}]}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"ports\":[{\"port\":1,\"protocol\":\"TCP\",\"name\":\"b\"},"
	  "{\"port\":2,\"protocol\":\"UDP\"}]}}", "m", "",
	  "[{\"manager\":\"m\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," T ","
	  "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:ports\":{"
	  "\"k:{\\\"port\\\":1,\\\"protocol\\\":\\\"TCP\\\"}\":{\"f:name\":{}},"
	  "\"k:{\\\"port\\\":2,\\\"protocol\\\":\\\"UDP\\\"}\":{\".\":{},\"f:port\":{},\"f:protocol\":{}}}}}}]" },
};

static void test_record_update(void **state)
{
	json_t *schema = load("schema", SCHEMA);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(update_rows) / sizeof(update_rows[0]); i++) {
		const struct update_row *r = &update_rows[i];
		struct fm_who w = who_for(schema, r->manager, r->sub);
		json_t *old = r->old ? load(r->name, r->old) : NULL, *obj = load(r->name, r->obj);

		assert_int_equal(fm_record_update(&w, old, obj), 0);
		expect_json(r->name, json_object_get(json_object_get(obj, "metadata"), "managedFields") ?
			    json_object_get(json_object_get(obj, "metadata"), "managedFields") : json_array(),
			    r->want);
		json_decref(old);
		json_decref(obj);
	}
	json_decref(schema);
}

/* --- apply --------------------------------------------------------------------------- */

struct apply_row {
	const char *name;
	const char *live;   /* NULL: absent */
	const char *config;
	bool force;
	const char *want_spec;  /* the resulting .spec; NULL on conflict */
	const char *want_msg;   /* the conflict message */
	const char *want_fields; /* the applier's fieldsV1 (NULL: not checked) */
};

#define LIVE_PATCHED                                                                                   \
	"{\"metadata\":{\"name\":\"a\",\"managedFields\":["                                              \
	"{\"manager\":\"kubectl\",\"operation\":\"Apply\",\"apiVersion\":\"example.com/v1\"," OLDT ","   \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:role\":{},\"f:setList\":{\"v:\\\"a\\\"\":{}}}}}," \
	"{\"manager\":\"kubectl-patch\",\"operation\":\"Update\",\"apiVersion\":\"example.com/v1\"," OLDT "," \
	"\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:approved\":{}}}}]},"                    \
	"\"spec\":{\"approved\":true,\"role\":\"m\",\"setList\":[\"a\",\"z\"]}}"

static const struct apply_row apply_rows[] = {
	{ "create", NULL, "{\"apiVersion\":\"example.com/v1\",\"kind\":\"K\",\"metadata\":{\"name\":\"a\"},"
	  "\"spec\":{\"approved\":false}}", false, "{\"approved\":false}", NULL,
	  "{\"f:spec\":{\"f:approved\":{}}}" },
	{ "same value as another manager's: shared, no conflict", LIVE_PATCHED,
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":true,\"role\":\"m\",\"setList\":[\"a\"]}}", false,
	  "{\"approved\":true,\"role\":\"m\",\"setList\":[\"a\",\"z\"]}", NULL,
	  "{\"f:spec\":{\"f:approved\":{},\"f:role\":{},\"f:setList\":{\"v:\\\"a\\\"\":{}}}}" },
	{ "another value: conflict in kube-apiserver's words", LIVE_PATCHED,
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":false,\"role\":\"m\"}}", false, NULL,
	  "Apply failed with 1 conflict: conflict with \"kubectl-patch\" using example.com/v1: .spec.approved", NULL },
	{ "force takes it", LIVE_PATCHED,
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":false,\"role\":\"m\",\"setList\":[\"a\"]}}", true,
	  "{\"approved\":false,\"role\":\"m\",\"setList\":[\"a\",\"z\"]}", NULL, NULL },
	{ "given-up fields go unless someone else owns them; set items too", LIVE_PATCHED,
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{}}", false, "{\"approved\":true,\"setList\":[\"z\"]}", NULL, "{}" },
	/* kubectl's client-side-apply migration leaves the applier owning
	 * .spec as a member; applying spec's children again keeps spec. */
	{ "a member given up keeps the children still applied",
	  "{\"metadata\":{\"name\":\"a\",\"managedFields\":[{\"manager\":\"kubectl\",\"operation\":\"Apply\","
	  "\"apiVersion\":\"example.com/v1\",\"time\":\"2020-01-01T00:00:00Z\",\"fieldsType\":\"FieldsV1\","
	  "\"fieldsV1\":{\"f:spec\":{\".\":{},\"f:approved\":{},\"f:role\":{}}}}]},"
	  "\"spec\":{\"approved\":true,\"role\":\"\"}}",
	  "{\"metadata\":{\"name\":\"a\"},\"spec\":{\"approved\":true,\"role\":\"\"}}", false,
	  "{\"approved\":true,\"role\":\"\"}", NULL, "{\"f:spec\":{\"f:approved\":{},\"f:role\":{}}}" },
};

static void test_apply(void **state)
{
	json_t *schema = load("schema", SCHEMA);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(apply_rows) / sizeof(apply_rows[0]); i++) {
		const struct apply_row *r = &apply_rows[i];
		struct fm_who w = who_for(schema, "kubectl", "");
		json_t *live = r->live ? load(r->name, r->live) : NULL, *cfg = load(r->name, r->config);
		json_t *out = NULL, *causes = json_array();
		ah_err err;
		int rc = fm_apply(&w, live, cfg, r->force, causes, &out, &err);

		if (!r->want_spec) {
			assert_int_equal(rc, -EBUSY);
			assert_int_equal(err.status, 409);
			assert_string_equal(err.reason, "Conflict");
			assert_string_equal(err.message, r->want_msg);
			expect_json(r->name, causes,
				    "[{\"reason\":\"FieldManagerConflict\",\"message\":"
				    "\"conflict with \\\"kubectl-patch\\\" using example.com/v1\",\"field\":\".spec.approved\"}]");
		} else {
			json_t *mf, *e;
			size_t j;
			bool seen = false;

			assert_int_equal(rc, 0);
			expect_json(r->name, json_object_get(out, "spec"), r->want_spec);
			mf = json_object_get(json_object_get(out, "metadata"), "managedFields");
			json_array_foreach(mf, j, e) {
				const char *m = json_string_value(json_object_get(e, "manager"));

				if (strcmp(m, "kubectl") == 0) {
					seen = true;
					assert_string_equal(json_string_value(json_object_get(e, "operation")), "Apply");
					if (r->want_fields)
						expect_json(r->name, json_object_get(e, "fieldsV1"), r->want_fields);
				}
				/* force: the other manager lost the field */
				if (r->force && strcmp(m, "kubectl-patch") == 0)
					fail_msg("%s: kubectl-patch still owns fields", r->name);
			}
			assert_true(seen || (r->want_fields && strcmp(r->want_fields, "{}") == 0));
		}
		json_decref(live);
		json_decref(cfg);
		json_decref(out);
		json_decref(causes);
	}
	json_decref(schema);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields_of),
		cmocka_unit_test(test_set_algebra),
		cmocka_unit_test(test_path_string),
		cmocka_unit_test(test_record_update),
		cmocka_unit_test(test_apply),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
