/* Tests for src/kube/patch.c: RFC 7386 appendix A, RFC 6902 appendix A, and
 * the strategic merge patches kubectl sends (annotate, label, apply). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kube/patch.h"

enum kind { MERGE, JSONPATCH, SMP, SMP_FIXTURE };

/* One case: on success `want` is the result; on failure `status` is the
 * HTTP status and `msg` the message (exact, or a substring with sub). */
struct row {
	const char *name;
	const char *doc;
	const char *patch;
	const char *want;
	int status;
	const char *msg;
	bool sub;
};

static const struct smp_list_meta pod_lists[] = {
	{ "spec.containers", "name" },
	{ "spec.containers[].ports", "containerPort" },
	{ "spec.containers[].env", "name" },
	{ "spec.volumes", "name" },
	{ NULL, NULL },
};

/* The list metadata of apimachinery's strategicpatch test type, for the
 * upstream fixtures below. */
static const struct smp_list_meta fixture_lists[] = {
	{ "mergingList", "name" },
	{ "mergingIntList", NULL },
	{ "mergingList[].mergingList", "name" },
	{ "mergeItemPtr", "name" },
	{ "retainKeysMap.mergingList", "name" },
	{ NULL, NULL },
};

static json_t *load(const char *name, const char *s)
{
	json_error_t je;
	json_t *j = json_loads(s, JSON_DECODE_ANY, &je);

	if (!j)
		fail_msg("%s: bad test JSON %s: %s", name, s, je.text);
	return j;
}

static void run_rows(enum kind kind, const struct row *rows, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		json_t *doc = load(r->name, r->doc), *patch = load(r->name, r->patch);
		char *before = json_dumps(doc, JSON_ENCODE_ANY | JSON_SORT_KEYS);
		json_t *got = NULL;
		ah_err err = { 0 };
		char *after;
		int rc;

		if (kind == MERGE)
			rc = patch_merge(doc, patch, &got, &err);
		else if (kind == JSONPATCH)
			rc = patch_json(doc, patch, &got, &err);
		else
			rc = patch_strategic(doc, patch, kind == SMP ? pod_lists : fixture_lists, &got,
					     &err);

		after = json_dumps(doc, JSON_ENCODE_ANY | JSON_SORT_KEYS);
		if (strcmp(before, after) != 0)
			fail_msg("%s: the input document was modified", r->name);
		if (r->want) {
			json_t *want = load(r->name, r->want);

			if (rc != 0)
				fail_msg("%s: failed (%d): %s", r->name, rc, err.message);
			if (!json_equal(got, want)) {
				char *g = json_dumps(got, JSON_ENCODE_ANY);

				fail_msg("%s: got %s, want %s", r->name, g, r->want);
			}
			json_decref(want);
		} else {
			if (rc == 0) {
				char *g = json_dumps(got, JSON_ENCODE_ANY);

				fail_msg("%s: succeeded with %s, want status %d", r->name, g,
					 r->status);
			}
			if (err.status != r->status)
				fail_msg("%s: status %d (%s), want %d", r->name, err.status,
					 err.message, r->status);
			if (rc != (r->status == 413 ? -E2BIG : -EINVAL))
				fail_msg("%s: returned %d", r->name, rc);
			if (r->msg && (r->sub ? !strstr(err.message, r->msg)
					      : strcmp(err.message, r->msg) != 0))
				fail_msg("%s: message\n  %s\nwant%s\n  %s", r->name, err.message,
					 r->sub ? " it to contain" : "", r->msg);
		}
		json_decref(got);
		json_decref(doc);
		json_decref(patch);
		free(before);
		free(after);
	}
}

#define OK(n, d, p, w) { .name = n, .doc = d, .patch = p, .want = w }
#define FAIL(n, d, p, st, m) { .name = n, .doc = d, .patch = p, .status = st, .msg = m }
#define FAILSUB(n, d, p, st, m) \
	{ .name = n, .doc = d, .patch = p, .status = st, .msg = m, .sub = true }
#define ROWS(kind, rows) run_rows(kind, rows, sizeof(rows) / sizeof(rows[0]))

/* RFC 7386 appendix A, one row each, then the section 3 example. */
static void test_merge_rfc7386(void **state)
{
	static const struct row rows[] = {
		OK("A1 replace", "{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"),
		OK("A2 add", "{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"),
		OK("A3 delete", "{\"a\":\"b\"}", "{\"a\":null}", "{}"),
		OK("A4 delete one", "{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"),
		OK("A5 list by string", "{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"),
		OK("A6 string by list", "{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"),
		OK("A7 nested", "{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}", "{\"a\":{\"b\":\"d\"}}"),
		OK("A8 list replaced", "{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"),
		OK("A9 arrays", "[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"),
		OK("A10 object by array", "{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"),
		OK("A11 null patch", "{\"a\":\"foo\"}", "null", "null"),
		OK("A12 string patch", "{\"a\":\"foo\"}", "\"bar\"", "\"bar\""),
		OK("A13 null kept in target", "{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"),
		OK("A14 array target", "[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"),
		OK("A15 nested null dropped", "{}", "{\"a\":{\"bb\":{\"ccc\":null}}}", "{\"a\":{\"bb\":{}}}"),
		OK("section 3 example", "{\"title\":\"Goodbye!\",\"author\":{\"givenName\":\"John\",\"familyName\":"
		  "\"Doe\"},\"tags\":[\"example\",\"sample\"],\"content\":\"This will be "
		  "unchanged\"}", "{\"title\":\"Hello!\",\"phoneNumber\":\"+01-123-456-7890\",\"author\":{"
		  "\"familyName\":null},\"tags\":[\"example\"]}", "{\"title\":\"Hello!\",\"author\":{\"givenName\":\"John\"},\"tags\":[\"example\"],"
		  "\"content\":\"This will be unchanged\",\"phoneNumber\":\"+01-123-456-7890\"}"),
		OK("kubectl patch --type merge annotation", "{\"metadata\":{\"name\":\"x\",\"annotations\":{\"a\":\"1\"}}}", "{\"metadata\":{\"annotations\":{\"b\":\"2\",\"a\":null}}}", "{\"metadata\":{\"name\":\"x\",\"annotations\":{\"b\":\"2\"}}}"),
		OK("merge patch replaces lists", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}", "{\"metadata\":{\"finalizers\":[\"c\"]}}", "{\"metadata\":{\"finalizers\":[\"c\"]}}"),
	};

	ROWS(MERGE, rows);
}

/* The merge result is a tree of its own: the update path stores it as it
 * is and changes it (metadata, defaults), which must touch neither the
 * stored object nor the client's patch. */
static void test_merge_result_shares_nothing(void **state)
{
	const char *doc_s = "{\"metadata\":{\"name\":\"x\",\"labels\":{\"a\":\"1\"}},"
			    "\"spec\":{\"list\":[1,2],\"kept\":{\"deep\":{\"v\":true}}}}";
	const char *patch_s = "{\"metadata\":{\"labels\":{\"b\":\"2\"}},"
			      "\"spec\":{\"new\":{\"n\":[{\"x\":1}]},\"list\":[3]}}";
	json_t *doc = json_loads(doc_s, 0, NULL), *patch = json_loads(patch_s, 0, NULL);
	json_t *doc0 = json_deep_copy(doc), *patch0 = json_deep_copy(patch), *res = NULL;
	ah_err err;

	(void)state;
	assert_int_equal(patch_merge(doc, patch, &res, &err), 0);
	/* Change every part of the result that came from either input. */
	json_object_set_new(json_object_get(json_object_get(res, "metadata"), "labels"), "c", json_string("3"));
	json_object_set_new(json_object_get(json_object_get(json_object_get(res, "spec"), "kept"), "deep"), "v",
			    json_false());
	json_array_append_new(json_object_get(json_object_get(res, "spec"), "list"), json_integer(4));
	json_object_set_new(json_array_get(json_object_get(json_object_get(json_object_get(res, "spec"), "new"), "n"), 0),
			    "x", json_integer(2));
	assert_true(json_equal(doc, doc0));
	assert_true(json_equal(patch, patch0));
	json_decref(res);
	json_decref(doc);
	json_decref(patch);
	json_decref(doc0);
	json_decref(patch0);
}

/* RFC 6902 appendix A (A.13 is below: it is a parser matter). */
static void test_json_patch_rfc6902(void **state)
{
	static const struct row rows[] = {
		OK("A.1 add member", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\"}]", "{\"baz\":\"qux\",\"foo\":\"bar\"}"),
		OK("A.2 add array element", "{\"foo\":[\"bar\",\"baz\"]}", "[{\"op\":\"add\",\"path\":\"/foo/1\",\"value\":\"qux\"}]", "{\"foo\":[\"bar\",\"qux\",\"baz\"]}"),
		OK("A.3 remove member", "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"remove\",\"path\":\"/baz\"}]", "{\"foo\":\"bar\"}"),
		OK("A.4 remove array element", "{\"foo\":[\"bar\",\"qux\",\"baz\"]}", "[{\"op\":\"remove\",\"path\":\"/foo/1\"}]", "{\"foo\":[\"bar\",\"baz\"]}"),
		OK("A.5 replace", "{\"baz\":\"qux\",\"foo\":\"bar\"}", "[{\"op\":\"replace\",\"path\":\"/baz\",\"value\":\"boo\"}]", "{\"baz\":\"boo\",\"foo\":\"bar\"}"),
		OK("A.6 move", "{\"foo\":{\"bar\":\"baz\",\"waldo\":\"fred\"},\"qux\":{\"corge\":\"grault\"}}", "[{\"op\":\"move\",\"from\":\"/foo/waldo\",\"path\":\"/qux/thud\"}]", "{\"foo\":{\"bar\":\"baz\"},\"qux\":{\"corge\":\"grault\",\"thud\":\"fred\"}}"),
		OK("A.7 move array element", "{\"foo\":[\"all\",\"grass\",\"cows\",\"eat\"]}", "[{\"op\":\"move\",\"from\":\"/foo/1\",\"path\":\"/foo/3\"}]", "{\"foo\":[\"all\",\"cows\",\"eat\",\"grass\"]}"),
		OK("A.8 test success", "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"qux\"},"
		  "{\"op\":\"test\",\"path\":\"/foo/1\",\"value\":2}]", "{\"baz\":\"qux\",\"foo\":[\"a\",2,\"c\"]}"),
		FAIL("A.9 test error", "{\"baz\":\"qux\"}", "[{\"op\":\"test\",\"path\":\"/baz\",\"value\":\"bar\"}]", 422, "testing value /baz failed: test failed"),
		OK("A.10 add nested object", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/child\",\"value\":{\"grandchild\":{}}}]", "{\"foo\":\"bar\",\"child\":{\"grandchild\":{}}}"),
		OK("A.11 unrecognized elements ignored", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"xyz\":123}]", "{\"foo\":\"bar\",\"baz\":\"qux\"}"),
		FAIL("A.12 add to nonexistent target", "{\"foo\":\"bar\"}", "[{\"op\":\"add\",\"path\":\"/baz/bat\",\"value\":\"qux\"}]", 422, "add operation does not apply: doc is missing path: \"/baz/bat\": missing value"),
		OK("A.14 ~ escape ordering", "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":10}]", "{\"/\":9,\"~1\":10}"),
		FAIL("A.15 string is not number", "{\"/\":9,\"~1\":10}", "[{\"op\":\"test\",\"path\":\"/~01\",\"value\":\"10\"}]", 422, "testing value /~01 failed: test failed"),
		OK("A.16 add array value", "{\"foo\":[\"bar\"]}", "[{\"op\":\"add\",\"path\":\"/foo/-\",\"value\":[\"abc\",\"def\"]}]", "{\"foo\":[\"bar\",[\"abc\",\"def\"]]}"),
	};

	ROWS(JSONPATCH, rows);
}

/* A.13: a member given twice.  Which "op" wins is the parser's business;
 * agenthub parses patch bodies with JSON_REJECT_DUPLICATES, which refuses it. */
static void test_json_patch_rfc6902_a13(void **state)
{
	const char *s = "[{\"op\":\"add\",\"path\":\"/baz\",\"value\":\"qux\",\"op\":\"remove\"}]";
	json_error_t je;

	assert_null(json_loads(s, JSON_REJECT_DUPLICATES, &je));
	assert_non_null(strstr(je.text, "duplicate object key"));
}

static void test_json_patch_more(void **state)
{
	static const struct row rows[] = {
		FAIL("all or nothing", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2},"
		  "{\"op\":\"remove\",\"path\":\"/nope\"}]", 422, "error in remove for path: '/nope': Unable to remove nonexistent key: nope: "
		  "missing value"),
		OK("empty patch", "{\"a\":1}", "[]", "{\"a\":1}"),
		OK("kubectl test then replace", "{\"metadata\":{\"resourceVersion\":\"5\"},\"spec\":{\"x\":1}}", "[{\"op\":\"test\",\"path\":\"/metadata/resourceVersion\",\"value\":\"5\"},"
		  "{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":2}]", "{\"metadata\":{\"resourceVersion\":\"5\"},\"spec\":{\"x\":2}}"),
		FAIL("test failing names the path", "{\"spec\":{\"x\":1}}", "[{\"op\":\"test\",\"path\":\"/spec/x\",\"value\":2}]", 422, "testing value /spec/x failed: test failed"),
		FAIL("test missing member", "{\"spec\":{}}", "[{\"op\":\"test\",\"path\":\"/spec/x\",\"value\":null}]", 422, "testing value /spec/x failed: test failed"),
		FAIL("test missing parent", "{}", "[{\"op\":\"test\",\"path\":\"/spec/x\",\"value\":1}]", 422, "test operation does not apply: is missing path: /spec/x: missing value"),
		OK("test 1 equals 1.0", "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0}]", "{\"a\":1}"),
		OK("test objects ignore key order", "{\"a\":{\"x\":1,\"y\":[1,2]}}", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":{\"y\":[1,2],\"x\":1}}]", "{\"a\":{\"x\":1,\"y\":[1,2]}}"),
		OK("test whole document", "{\"a\":1}", "[{\"op\":\"test\",\"path\":\"\",\"value\":{\"a\":1}}]", "{\"a\":1}"),
		OK("add replaces the whole document", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"\",\"value\":{\"b\":2}}]", "{\"b\":2}"),
		OK("add replaces an existing member", "{\"a\":1}", "[{\"op\":\"add\",\"path\":\"/a\",\"value\":2}]", "{\"a\":2}"),
		FAIL("add missing path under spec", "{\"spec\":{}}", "[{\"op\":\"add\",\"path\":\"/spec/foo/bar\",\"value\":1}]", 422, "add operation does not apply: doc is missing path: \"/spec/foo/bar\": missing "
		  "value"),
		OK("add append with -", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/-\",\"value\":2}]", "{\"a\":[1,2]}"),
		OK("add at end index", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/1\",\"value\":2}]", "{\"a\":[1,2]}"),
		FAIL("add past the end", "{\"a\":[1]}", "[{\"op\":\"add\",\"path\":\"/a/2\",\"value\":2}]", 422, "error in add for path: '/a/2': Unable to access invalid index: 2: invalid index "
		  "referenced"),
		FAILSUB("leading zero index", "{\"a\":[1,2]}", "[{\"op\":\"add\",\"path\":\"/a/01\",\"value\":2}]", 422, "Unable to access invalid index: 01"),
		OK("member named by number in object", "{\"a\":{\"0\":\"x\"}}", "[{\"op\":\"replace\",\"path\":\"/a/0\",\"value\":\"y\"}]", "{\"a\":{\"0\":\"y\"}}"),
		FAIL("remove array index out of range", "{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/1\"}]", 422, "error in remove for path: '/a/1': Unable to remove invalid index: 1: invalid "
		  "index referenced"),
		FAILSUB("remove - is not an index", "{\"a\":[1]}", "[{\"op\":\"remove\",\"path\":\"/a/-\"}]", 422, "Unable to remove invalid index: -"),
		FAIL("remove missing parent", "{}", "[{\"op\":\"remove\",\"path\":\"/a/b\"}]", 422, "remove operation does not apply: doc is missing path: \"/a/b\": missing value"),
		FAILSUB("remove whole document", "{}", "[{\"op\":\"remove\",\"path\":\"\"}]", 422, "cannot remove the whole document"),
		FAIL("replace missing key", "{\"spec\":{}}", "[{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}]", 422, "replace operation does not apply: doc is missing key: /spec/x: missing value"),
		FAIL("replace missing parent", "{}", "[{\"op\":\"replace\",\"path\":\"/spec/x\",\"value\":1}]", 422, "replace operation does not apply: doc is missing path: /spec/x: missing value"),
		OK("replace array element", "{\"a\":[1,2]}", "[{\"op\":\"replace\",\"path\":\"/a/1\",\"value\":3}]", "{\"a\":[1,3]}"),
		FAIL("move missing from", "{}", "[{\"op\":\"move\",\"from\":\"/x\",\"path\":\"/y\"}]", 422, "move operation does not apply: doc is missing from path: /x: missing value"),
		FAIL("move into own child", "{\"a\":{\"b\":1}}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a/c\"}]", 422, "move operation does not apply: cannot move /a into its own child /a/c"),
		OK("move onto itself", "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]", "{\"a\":1}"),
		FAIL("move to missing destination", "{\"a\":1}", "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/x/y\"}]", 422, "move operation does not apply: doc is missing destination path: /x/y: missing "
		  "value"),
		OK("copy", "{\"a\":{\"b\":[1]}}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/c\"},"
		  "{\"op\":\"add\",\"path\":\"/c/b/-\",\"value\":2}]", "{\"a\":{\"b\":[1]},\"c\":{\"b\":[1,2]}}"),
		FAIL("copy missing from", "{}", "[{\"op\":\"copy\",\"from\":\"/x\",\"path\":\"/y\"}]", 422, "copy operation does not apply: doc is missing from path: /x: missing value"),
		OK("escaped pointer tokens", "{\"a/b\":{\"m~n\":1}}", "[{\"op\":\"replace\",\"path\":\"/a~1b/m~0n\",\"value\":2}]", "{\"a/b\":{\"m~n\":2}}"),
		FAIL("not an array", "{}", "{\"op\":\"add\"}", 400, "invalid JSON patch: the patch must be a JSON array of operations"),
		FAIL("operation not an object", "{}", "[1]", 400, "invalid JSON patch operation: operation 0 is not an object"),
		FAIL("missing op", "{}", "[{\"path\":\"/a\"}]", 400, "invalid JSON patch operation: operation 0 has no \"op\""),
		FAIL("unknown op", "{}", "[{\"op\":\"Add\",\"path\":\"/a\",\"value\":1}]", 400, "invalid JSON patch operation: unknown op \"Add\" in operation 0"),
		FAIL("missing path", "{}", "[{\"op\":\"remove\"}]", 400, "invalid JSON patch operation: remove operation 0 has no \"path\""),
		FAIL("missing value", "{}", "[{\"op\":\"add\",\"path\":\"/a\"}]", 400, "invalid JSON patch operation: add operation 0 has no \"value\""),
		FAIL("missing from", "{}", "[{\"op\":\"copy\",\"path\":\"/a\"}]", 400, "invalid JSON patch operation: copy operation 0 has no \"from\""),
		FAIL("pointer without slash", "{}", "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", 400, "invalid JSON patch operation: add operation 0: \"path\" a is not a JSON pointer"),
		FAILSUB("bad tilde escape", "{}", "[{\"op\":\"add\",\"path\":\"/a~2\",\"value\":1}]", 400, "is not a JSON pointer"),
		FAILSUB("malformed op after a failing one is still 400", "{}", "[{\"op\":\"remove\",\"path\":\"/x\"},{\"op\":\"nope\"}]", 400, "unknown op \"nope\" in operation 1"),
		FAILSUB("copy bomb is bounded", "{\"a\":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}", "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"},"
		  "{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/a/0\"}]", 422, "Unable to complete the copy, the accumulated size increase"),
	};

	ROWS(JSONPATCH, rows);
}

static void test_json_patch_too_many_ops(void **state)
{
	json_t *doc = json_object(), *ops = json_array(), *got = NULL;
	ah_err err = { 0 };
	int i;

	for (i = 0; i < 10001; i++)
		json_array_append_new(ops, json_pack("{s:s, s:s, s:i}", "op", "test", "path", "",
						     "value", 0));
	assert_int_equal(patch_json(doc, ops, &got, &err), -E2BIG);
	assert_int_equal(err.status, 413);
	assert_string_equal(err.reason, "RequestEntityTooLarge");
	assert_string_equal(err.message,
			    "The allowed maximum operations in a JSON patch is 10000, got 10001");
	json_decref(ops);
	json_decref(doc);
}

#define POD(containers) "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":" containers "}}"

/* Strategic merge patches as kubectl sends them. */
static void test_smp_kubectl(void **state)
{
	static const struct row rows[] = {
		OK("annotate adds", "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":\"1\"}}}", "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}", "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"x\":\"1\",\"k\":\"v\"}}}"),
		OK("annotate on an object without annotations", "{\"metadata\":{\"name\":\"a\"}}", "{\"metadata\":{\"annotations\":{\"k\":\"v\"}}}", "{\"metadata\":{\"name\":\"a\",\"annotations\":{\"k\":\"v\"}}}"),
		OK("annotate k- deletes", "{\"metadata\":{\"annotations\":{\"k\":\"v\",\"x\":\"1\"}}}", "{\"metadata\":{\"annotations\":{\"k\":null}}}", "{\"metadata\":{\"annotations\":{\"x\":\"1\"}}}"),
		OK("label --overwrite", "{\"metadata\":{\"labels\":{\"app\":\"a\"}}}", "{\"metadata\":{\"labels\":{\"app\":\"b\"}}}", "{\"metadata\":{\"labels\":{\"app\":\"b\"}}}"),
		OK("null for an absent key is dropped", "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}", "{\"metadata\":{\"labels\":{\"gone\":null}}}", "{\"metadata\":{\"labels\":{\"a\":\"1\"}}}"),
		OK("nulls inside a new value are dropped", "{\"spec\":{}}", "{\"spec\":{\"template\":{\"a\":1,\"b\":null,\"c\":{\"d\":null}}}}", "{\"spec\":{\"template\":{\"a\":1,\"c\":{}}}}"),
		OK("null deletes a whole map", "{\"metadata\":{\"labels\":{\"a\":\"1\"},\"name\":\"n\"}}", "{\"metadata\":{\"labels\":null}}", "{\"metadata\":{\"name\":\"n\"}}"),
		OK("type change replaces", "{\"spec\":{\"x\":\"s\"}}", "{\"spec\":{\"x\":{\"a\":1}}}", "{\"spec\":{\"x\":{\"a\":1}}}"),
		OK("undeclared list is replaced", "{\"spec\":{\"args\":[\"a\",\"b\"]}}", "{\"spec\":{\"args\":[\"c\"]}}", "{\"spec\":{\"args\":[\"c\"]}}"),
		OK("empty patch", "{\"a\":1}", "{}", "{\"a\":1}"),
		OK("empty document", "null", "{\"metadata\":{\"name\":\"x\"}}", "{\"metadata\":{\"name\":\"x\"}}"),
	};

	ROWS(SMP, rows);
}

static void test_smp_metadata_lists(void **state)
{
	static const struct row rows[] = {
		OK("finalizers union, new first", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}", "{\"metadata\":{\"finalizers\":[\"c\",\"a\"]}}", "{\"metadata\":{\"finalizers\":[\"c\",\"a\",\"b\"]}}"),
		OK("finalizers add one", "{\"metadata\":{\"finalizers\":[\"a\"]}}", "{\"metadata\":{\"finalizers\":[\"b\"]}}", "{\"metadata\":{\"finalizers\":[\"b\",\"a\"]}}"),
		OK("finalizers already there", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}", "{\"metadata\":{\"finalizers\":[\"b\"]}}", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}"),
		OK("finalizers on an object without", "{\"metadata\":{\"name\":\"x\"}}", "{\"metadata\":{\"finalizers\":[\"a\"]}}", "{\"metadata\":{\"name\":\"x\",\"finalizers\":[\"a\"]}}"),
		OK("deleteFromPrimitiveList/finalizers", "{\"metadata\":{\"finalizers\":[\"a\",\"b\",\"c\"]}}", "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\",\"zz\"]}}", "{\"metadata\":{\"finalizers\":[\"a\",\"c\"]}}"),
		OK("deleteFromPrimitiveList on an absent list", "{\"metadata\":{\"name\":\"x\"}}", "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":[\"b\"]}}", "{\"metadata\":{\"name\":\"x\"}}"),
		OK("apply 3-way on finalizers", "{\"metadata\":{\"finalizers\":[\"a\",\"b\"]}}", "{\"metadata\":{\"$setElementOrder/finalizers\":[\"b\",\"c\"],"
		  "\"$deleteFromPrimitiveList/finalizers\":[\"a\"],\"finalizers\":[\"c\"]}}", "{\"metadata\":{\"finalizers\":[\"b\",\"c\"]}}"),
		OK("ownerReferences merge by uid", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"x\",\"controller\":true},"
		  "{\"uid\":\"2\",\"name\":\"y\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\",\"blockOwnerDeletion\":true}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"name\":\"x\",\"controller\":true},"
		  "{\"uid\":\"2\",\"name\":\"y\",\"blockOwnerDeletion\":true}]}}"),
		OK("ownerReferences new one goes first", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\"},{\"uid\":\"2\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"3\",\"name\":\"z\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"3\",\"name\":\"z\"},{\"uid\":\"1\"},"
		  "{\"uid\":\"2\"}]}}"),
		OK("ownerReferences $patch delete", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\"},{\"uid\":\"2\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"$patch\":\"delete\",\"uid\":\"1\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"2\"}]}}"),
		OK("ownerReferences field nulled inside an item", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"controller\":true}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"controller\":null}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\"}]}}"),
		OK("new ownerReferences list drops delete items", "{\"metadata\":{}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\",\"x\":null},"
		  "{\"$patch\":\"delete\",\"uid\":\"2\"}]}}", "{\"metadata\":{\"ownerReferences\":[{\"uid\":\"1\"}]}}"),
		FAIL("ownerReferences item without uid", "{\"metadata\":{\"ownerReferences\":[]}}", "{\"metadata\":{\"ownerReferences\":[{\"name\":\"x\"}]}}", 400, "map: {\"name\":\"x\"} does not contain declared merge key: uid"),
		FAIL("finalizers as objects", "{\"metadata\":{\"finalizers\":[\"a\"]}}", "{\"metadata\":{\"finalizers\":[{\"a\":1}]}}", 422, "list element types are not identical in metadata.finalizers"),
		FAILSUB("finalizers list of lists", "{\"metadata\":{\"finalizers\":[]}}", "{\"metadata\":{\"finalizers\":[[\"a\"]]}}", 422, "lists of lists are not supported"),
		FAIL("deleteFromPrimitiveList not a list", "{\"metadata\":{\"finalizers\":[\"a\"]}}", "{\"metadata\":{\"$deleteFromPrimitiveList/finalizers\":\"a\"}}", 400, "invalid patch format of primitive list"),
	};

	ROWS(SMP, rows);
}

static void test_smp_apply(void **state)
{
	static const struct row rows[] = {
		OK("apply: change, add and reorder containers", POD("[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":\"b:1\"}]"), "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"},"
		  "{\"name\":\"c\"}],\"containers\":[{\"name\":\"a\",\"image\":\"a:2\"},"
		  "{\"name\":\"c\",\"image\":\"c:1\"}]}}", POD("[{\"name\":\"b\",\"image\":\"b:1\"},{\"name\":\"a\",\"image\":\"a:2\"},"
		      "{\"name\":\"c\",\"image\":\"c:1\"}]")),
		OK("apply: remove a container", POD("[{\"name\":\"a\",\"image\":\"a:1\"},{\"name\":\"b\",\"image\":\"b:1\"}]"), "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],"
		  "\"containers\":[{\"$patch\":\"delete\",\"name\":\"b\"}]}}", POD("[{\"name\":\"a\",\"image\":\"a:1\"}]")),
		OK("apply: reorder only", POD("[{\"name\":\"a\"},{\"name\":\"b\"}]"), "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}", POD("[{\"name\":\"b\"},{\"name\":\"a\"}]")),
		OK("apply: server-only items keep their place", POD("[{\"name\":\"a\"},{\"name\":\"s\"},{\"name\":\"b\"}]"), "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
		  "\"containers\":[{\"name\":\"b\",\"image\":\"x\"}]}}", POD("[{\"name\":\"a\"},{\"name\":\"s\"},{\"name\":\"b\",\"image\":\"x\"}]")),
		OK("apply: list created with its order", "{\"spec\":{}}", "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"b\"},{\"name\":\"a\"}],"
		  "\"containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}", "{\"spec\":{\"containers\":[{\"name\":\"b\"},{\"name\":\"a\"}]}}"),
		FAILSUB("apply: order not matching the patch list", POD("[{\"name\":\"a\"}]"), "{\"spec\":{\"$setElementOrder/containers\":[{\"name\":\"a\"}],"
		  "\"containers\":[{\"name\":\"b\"}]}}", 400, "doesn't match $setElementOrder list"),
		OK("apply: retainKeys clears the other strategy", "{\"spec\":{\"strategy\":{\"type\":\"RollingUpdate\",\"rollingUpdate\":{\"maxSurge\":1}}}}", "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"type\":\"Recreate\","
		  "\"rollingUpdate\":null}}}", "{\"spec\":{\"strategy\":{\"type\":\"Recreate\"}}}"),
		OK("apply: retainKeys keeps listed fields", "{\"spec\":{\"volume\":{\"name\":\"v\",\"hostPath\":{\"path\":\"/a\"},\"emptyDir\":{}}}}", "{\"spec\":{\"volume\":{\"$retainKeys\":[\"name\",\"hostPath\"],"
		  "\"hostPath\":{\"type\":\"Directory\"}}}}", "{\"spec\":{\"volume\":{\"name\":\"v\",\"hostPath\":{\"path\":\"/a\","
		  "\"type\":\"Directory\"}}}}"),
		FAILSUB("apply: field missing from retainKeys", "{\"spec\":{\"strategy\":{}}}", "{\"spec\":{\"strategy\":{\"$retainKeys\":[\"type\"],\"other\":1}}}", 400, "invalid patch format of retainKeys"),
		FAIL("apply: retainKeys not a list", "{\"spec\":{}}", "{\"spec\":{\"$retainKeys\":\"type\"}}", 400, "invalid patch format of retainKeys"),
		OK("nested merge list by containerPort, new port first", POD("[{\"name\":\"a\",\"ports\":[{\"containerPort\":80,\"name\":\"http\"}]}]"), "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":443,"
		  "\"name\":\"https\"}]}]}}", POD("[{\"name\":\"a\",\"ports\":[{\"containerPort\":443,\"name\":\"https\"},"
		      "{\"containerPort\":80,\"name\":\"http\"}]}]")),
		OK("merge key 80 matches 80.0, the patch value wins", POD("[{\"name\":\"a\",\"ports\":[{\"containerPort\":80}]}]"), "{\"spec\":{\"containers\":[{\"name\":\"a\",\"ports\":[{\"containerPort\":80.0,"
		  "\"protocol\":\"TCP\"}]}]}}", POD("[{\"name\":\"a\",\"ports\":[{\"containerPort\":80.0,\"protocol\":\"TCP\"}]}]")),
		OK("env merged by name inside a container", POD("[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"Y\","
		      "\"value\":\"2\"}]}]"), "{\"spec\":{\"containers\":[{\"name\":\"a\",\"env\":[{\"name\":\"Y\",\"value\":\"3\"}]}]}}", POD("[{\"name\":\"a\",\"env\":[{\"name\":\"X\",\"value\":\"1\"},{\"name\":\"Y\","
		      "\"value\":\"3\"}]}]")),
		OK("$patch replace on a map", "{\"spec\":{\"template\":{\"a\":1,\"b\":2}}}", "{\"spec\":{\"template\":{\"$patch\":\"replace\",\"x\":1,\"y\":null}}}", "{\"spec\":{\"template\":{\"x\":1}}}"),
		OK("$patch replace on a list", POD("[{\"name\":\"a\"},{\"name\":\"b\"}]"), "{\"spec\":{\"containers\":[{\"name\":\"z\",\"image\":\"i\"},{\"$patch\":\"replace\"}]}}", POD("[{\"name\":\"z\",\"image\":\"i\"}]")),
		OK("$patch delete on a map", "{\"spec\":{\"strategy\":{\"type\":\"x\"},\"a\":1}}", "{\"spec\":{\"strategy\":{\"$patch\":\"delete\"}}}", "{\"spec\":{\"strategy\":{},\"a\":1}}"),
		OK("$patch merge on a map is the default", "{\"spec\":{\"a\":1}}", "{\"spec\":{\"$patch\":\"merge\",\"b\":2}}", "{\"spec\":{\"a\":1,\"b\":2}}"),
		OK("$patch delete of an absent item", POD("[{\"name\":\"a\"}]"), "{\"spec\":{\"containers\":[{\"$patch\":\"delete\",\"name\":\"nope\"}]}}", POD("[{\"name\":\"a\"}]")),
		FAIL("unknown $patch", "{\"spec\":{}}", "{\"spec\":{\"$patch\":\"frobnicate\"}}", 400, "unknown patch type: frobnicate in map: {\"$patch\":\"frobnicate\"}"),
		FAILSUB("unknown $patch in a list", POD("[]"), "{\"spec\":{\"containers\":[{\"$patch\":\"nope\",\"name\":\"a\"}]}}", 400, "unknown patch type: nope in map"),
		FAIL("$patch delete item without merge key", POD("[{\"name\":\"a\"}]"), "{\"spec\":{\"containers\":[{\"$patch\":\"delete\"}]}}", 400, "map: {\"$patch\":\"delete\"} does not contain declared merge key: name"),
		FAIL("patch is not an object", "{}", "[1]", 400, "a strategic merge patch must be a JSON object"),
		FAIL("bad setElementOrder key", "{}", "{\"$setElementOrder\":[]}", 400, "invalid patch format of setElementOrder list"),
	};

	ROWS(SMP, rows);
}

/* Cases from k8s.io/apimachinery strategicpatch's test fixtures (the
 * three-way patch applied to "current", giving "result"), in JSON. */
static void test_smp_upstream_fixtures(void **state)
{
	static const struct row rows[] = {
		OK("nested patch merge with empty list",
		   "{\"name\":\"hi\",\"mergingList\":[{\"name\":\"hello2\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"hello\"},{\"name\":\"doesntexist\"}],"
		   "\"mergingList\":[{\"name\":\"hello\"}]}",
		   "{\"name\":\"hi\",\"mergingList\":[{\"name\":\"hello\"},{\"name\":\"hello2\"}]}"),
		OK("delete items in lists of scalars", "{\"mergingIntList\":[1,2,3]}",
		   "{\"$setElementOrder/mergingIntList\":[1,2],"
		   "\"$deleteFromPrimitiveList/mergingIntList\":[3]}",
		   "{\"mergingIntList\":[1,2]}"),
		OK("add an item in a list and preserve order",
		   "{\"mergingList\":[{\"name\":\"1\",\"other\":\"a\"},{\"name\":\"2\",\"value\":\"2\","
		   "\"other\":\"b\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"3\"},{\"name\":\"1\"},{\"name\":\"2\"}],"
		   "\"mergingList\":[{\"name\":\"3\",\"value\":\"3\"}]}",
		   "{\"mergingList\":[{\"name\":\"3\",\"value\":\"3\"},{\"name\":\"1\",\"other\":\"a\"},"
		   "{\"name\":\"2\",\"value\":\"2\",\"other\":\"b\"}]}"),
		OK("add map and delete map from merging list with conflict",
		   "{\"mergingList\":[{\"name\":\"1\",\"other\":\"a\"},{\"name\":\"4\",\"other\":\"c\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"2\"},{\"name\":\"3\"}],"
		   "\"mergingList\":[{\"name\":\"2\"},{\"name\":\"3\"},{\"name\":\"1\",\"$patch\":\"delete\"}]}",
		   "{\"mergingList\":[{\"name\":\"4\",\"other\":\"c\"},{\"name\":\"2\"},{\"name\":\"3\"}]}"),
		OK("delete and reorder in one list, reorder in another",
		   "{\"mergingList\":[{\"name\":\"a\",\"value\":\"a\"},{\"name\":\"b\",\"value\":\"b\"}],"
		   "\"mergeItemPtr\":[{\"name\":\"c\",\"value\":\"c\"},{\"name\":\"d\",\"value\":\"d\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"b\"}],"
		   "\"$setElementOrder/mergeItemPtr\":[{\"name\":\"d\"},{\"name\":\"c\"}],"
		   "\"mergingList\":[{\"$patch\":\"delete\",\"name\":\"a\"}]}",
		   "{\"mergingList\":[{\"name\":\"b\",\"value\":\"b\"}],"
		   "\"mergeItemPtr\":[{\"name\":\"d\",\"value\":\"d\"},{\"name\":\"c\",\"value\":\"c\"}]}"),
		OK("set element order with duplicates in the list",
		   "{\"mergingList\":[{\"name\":\"1\"},{\"name\":\"2\",\"value\":\"dup1\"},{\"name\":\"3\"},"
		   "{\"name\":\"2\",\"value\":\"dup2\"},{\"name\":\"4\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"2\"},{\"name\":\"1\"},{\"name\":\"4\"},"
		   "{\"name\":\"3\"},{\"name\":\"2\"}]}",
		   "{\"mergingList\":[{\"name\":\"2\",\"value\":\"dup1\"},{\"name\":\"2\",\"value\":\"dup2\"},"
		   "{\"name\":\"1\"},{\"name\":\"4\"},{\"name\":\"3\"}]}"),
		OK("setElementOrder names an item not in the list",
		   "{\"mergingList\":[{\"name\":\"1\"},{\"name\":\"3\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"3\"},{\"name\":\"2\"},{\"name\":\"1\"}],"
		   "\"mergingList\":[{\"name\":\"3\",\"value\":\"3\"},{\"name\":\"1\",\"value\":\"1\"}]}",
		   "{\"mergingList\":[{\"name\":\"3\",\"value\":\"3\"},{\"name\":\"1\",\"value\":\"1\"}]}"),
		OK("setElementOrder names an int not in the list", "{\"mergingIntList\":[1,3]}",
		   "{\"$setElementOrder/mergingIntList\":[3,2,1]}", "{\"mergingIntList\":[3,1]}"),
		OK("retainKeys map with no change",
		   "{\"retainKeysMap\":{\"name\":\"foo\",\"mergingList\":[{\"name\":\"a\"},{\"name\":\"b\"},"
		   "{\"name\":\"c\"}]}}",
		   "{\"retainKeysMap\":{\"$retainKeys\":[\"mergingList\",\"name\",\"value\"],"
		   "\"$setElementOrder/mergingList\":[{\"name\":\"a\"},{\"name\":\"b\"}],\"value\":\"bar\"}}",
		   "{\"retainKeysMap\":{\"name\":\"foo\",\"mergingList\":[{\"name\":\"a\"},{\"name\":\"b\"},"
		   "{\"name\":\"c\"}],\"value\":\"bar\"}}"),
		OK("add map to merging list by pointer",
		   "{\"mergeItemPtr\":[{\"name\":\"1\",\"other\":\"a\"},{\"name\":\"3\"}]}",
		   "{\"$setElementOrder/mergeItemPtr\":[{\"name\":\"1\"},{\"name\":\"2\"}],"
		   "\"mergeItemPtr\":[{\"name\":\"2\"}]}",
		   "{\"mergeItemPtr\":[{\"name\":\"1\",\"other\":\"a\"},{\"name\":\"2\"},{\"name\":\"3\"}]}"),
		OK("add map to merging list by pointer with conflict",
		   "{\"mergeItemPtr\":[{\"name\":\"3\"}]}",
		   "{\"$setElementOrder/mergeItemPtr\":[{\"name\":\"1\"},{\"name\":\"2\"}],"
		   "\"mergeItemPtr\":[{\"name\":\"1\"},{\"name\":\"2\"}]}",
		   "{\"mergeItemPtr\":[{\"name\":\"1\"},{\"name\":\"2\"},{\"name\":\"3\"}]}"),
		OK("add field to map in merging list nested in merging list, reordered",
		   "{\"mergingList\":[{\"name\":\"1\",\"other\":\"a\",\"mergingList\":[{\"name\":\"2\","
		   "\"value\":\"2\",\"other\":\"d\"}]},{\"name\":\"2\",\"other\":\"b\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"1\"},{\"name\":\"2\"}],"
		   "\"mergingList\":[{\"$setElementOrder/mergingList\":[{\"name\":\"2\"},{\"name\":\"1\"}],"
		   "\"name\":\"1\",\"mergingList\":[{\"name\":\"1\",\"value\":\"1\"}]}]}",
		   "{\"mergingList\":[{\"name\":\"1\",\"other\":\"a\",\"mergingList\":[{\"name\":\"2\","
		   "\"value\":\"2\",\"other\":\"d\"},{\"name\":\"1\",\"value\":\"1\"}]},"
		   "{\"name\":\"2\",\"other\":\"b\"}]}"),
		OK("delete field from map in merging list",
		   "{\"mergingList\":[{\"name\":\"1\",\"value\":\"1\",\"other\":\"a\"},"
		   "{\"name\":\"2\",\"value\":\"2\",\"other\":\"b\"}]}",
		   "{\"$setElementOrder/mergingList\":[{\"name\":\"1\"},{\"name\":\"2\"}],"
		   "\"mergingList\":[{\"name\":\"1\",\"value\":null}]}",
		   "{\"mergingList\":[{\"name\":\"1\",\"other\":\"a\"},"
		   "{\"name\":\"2\",\"value\":\"2\",\"other\":\"b\"}]}"),
		OK("preserve the order from the patch in a merging int list",
		   "{\"mergingIntList\":[1,2,3]}", "{\"mergingIntList\":[3,1]}",
		   "{\"mergingIntList\":[2,3,1]}"),
	};

	ROWS(SMP_FIXTURE, rows);
}

/* The list metadata given by the caller and the built-in metadata lists
 * combine; a NULL table is allowed. */
static void test_smp_null_lists(void **state)
{
	json_t *doc = json_loads("{\"metadata\":{\"finalizers\":[\"a\"]},\"spec\":{\"l\":[1]}}", 0,
				 NULL);
	json_t *patch = json_loads("{\"metadata\":{\"finalizers\":[\"b\"]},\"spec\":{\"l\":[2]}}", 0,
				   NULL);
	json_t *want = json_loads("{\"metadata\":{\"finalizers\":[\"b\",\"a\"]},\"spec\":{\"l\":[2]}}",
				  0, NULL);
	json_t *got = NULL;
	ah_err err = { 0 };

	assert_int_equal(patch_strategic(doc, patch, NULL, &got, &err), 0);
	assert_true(json_equal(got, want));
	json_decref(got);
	json_decref(doc);
	json_decref(patch);
	json_decref(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_rfc7386),
		cmocka_unit_test(test_merge_result_shares_nothing),
		cmocka_unit_test(test_json_patch_rfc6902),
		cmocka_unit_test(test_json_patch_rfc6902_a13),
		cmocka_unit_test(test_json_patch_more),
		cmocka_unit_test(test_json_patch_too_many_ops),
		cmocka_unit_test(test_smp_kubectl),
		cmocka_unit_test(test_smp_metadata_lists),
		cmocka_unit_test(test_smp_apply),
		cmocka_unit_test(test_smp_upstream_fixtures),
		cmocka_unit_test(test_smp_null_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
