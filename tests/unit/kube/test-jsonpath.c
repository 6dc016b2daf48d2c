/* Tests for src/kube/jsonpath.c: one row per expression against one
 * document, plus the expressions the compiler must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/yamljson.h"
#include "kube/jsonpath.h"

static json_t *yaml(const char *text)
{
	json_t *docs, *doc;
	ah_err err;

	if (yaml_parse_all(text, strlen(text), &docs, &err) < 0)
		fail_msg("bad test YAML %s: %s", text, err.message);
	doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	return doc;
}

static const char doc_yaml[] =
	"{metadata: {name: n, labels: {'app.kubernetes.io/name': web, tier: db}, "
	"annotations: {'a.b/c': x}},"
	" spec: {approved: true, count: 3, ratio: 1.5, list: [a, b, c, d], empty: [], nothing: null,"
	" interfaces: [{name: eth0, mac: m0, up: true}, {name: eth1, mac: m1, up: false}],"
	" ports: [{name: http, port: 80}, {name: https, port: 443}]},"
	" status: {conditions: [{type: Ready, status: 'True', n: 1},"
	" {type: Validated, status: 'False', n: 2}, {type: Other, n: 2.5}]}}";

static const struct row {
	const char *expr, *want; /* want: YAML flow list */
} rows[] = {
	/* fields, with and without {} and $ */
	{ ".metadata.name", "[n]" },
	{ "{.metadata.name}", "[n]" },
	{ " { .metadata.name } ", "[n]" },
	{ "$.metadata.name", "[n]" },
	{ "{$.metadata.name}", "[n]" },
	{ ".spec.approved", "[true]" },
	{ ".spec.count", "[3]" },
	{ ".spec.ratio", "[1.5]" },
	{ ".spec.nothing", "[null]" },
	{ ".spec.missing", "[]" },
	{ ".spec.nothing.deeper", "[]" },
	{ ".metadata.name.deeper", "[]" },
	{ ".spec.list.deeper", "[]" },
	/* indexes and slices */
	{ ".spec.list[0]", "[a]" },
	{ ".spec.list[3]", "[d]" },
	{ ".spec.list[-1]", "[d]" },
	{ ".spec.list[-4]", "[a]" },
	{ ".spec.list[4]", "[]" },
	{ ".spec.list[-5]", "[]" },
	{ ".spec.list[1:3]", "[b, c]" },
	{ ".spec.list[:2]", "[a, b]" },
	{ ".spec.list[2:]", "[c, d]" },
	{ ".spec.list[-2:]", "[c, d]" },
	{ ".spec.list[0:4:2]", "[a, c]" },
	{ ".spec.list[2:2]", "[]" },
	{ ".spec.list[3:1]", "[]" },
	{ ".spec.list[0:9]", "[]" },
	{ ".spec.list[ 1 ]", "[b]" },
	{ ".spec.list[*]", "[a, b, c, d]" },
	{ ".spec.list[:]", "[a, b, c, d]" },
	{ ".spec.empty[*]", "[]" },
	{ ".spec.empty[0]", "[]" },
	{ ".spec.nothing[0]", "[]" },
	{ ".metadata[0]", "[]" },
	{ ".spec.interfaces[*].name", "[eth0, eth1]" },
	{ ".spec.interfaces[1].mac", "[m1]" },
	{ ".spec.interfaces[-1].mac", "[m1]" },
	/* wildcards */
	{ ".metadata.labels.*", "[web, db]" },
	{ ".spec.list.*", "[a, b, c, d]" },
	{ ".spec.interfaces.*.name", "[eth0, eth1]" },
	/* quoted and escaped keys */
	{ ".metadata.labels['app.kubernetes.io/name']", "[web]" },
	{ ".metadata.labels[\"tier\"]", "[db]" },
	{ ".metadata.labels[ 'tier' ]", "[db]" },
	{ ".metadata.labels.app\\.kubernetes\\.io/name", "[web]" },
	{ "{.metadata.labels.app\\.kubernetes\\.io/name}", "[web]" },
	{ ".metadata.labels.a\\{b", "[]" },
	{ "{.metadata.labels.a\\{b}", "[]" },
	{ ".metadata.annotations['a.b/c']", "[x]" },
	{ "{.metadata['labels']['tier']}", "[db]" },
	/* filters */
	{ ".status.conditions[?(@.type==\"Ready\")].status", "['True']" },
	{ "{.status.conditions[?(@.type==\"Ready\")].status}", "['True']" },
	{ ".status.conditions[?(@.type == 'Validated')].status", "['False']" },
	{ ".status.conditions[?(@.type!=\"Ready\")].type", "[Validated, Other]" },
	{ ".status.conditions[?(@.status)].type", "[Ready, Validated]" },
	{ ".status.conditions[?(@.status==\"True\")].type", "[Ready]" },
	{ ".status.conditions[?(@.type==@.status)].type", "[]" },
	{ ".status.conditions[?(@.type==\"Nope\")].type", "[]" },
	{ ".spec.ports[?(@.port>80)].name", "[https]" },
	{ ".spec.ports[?(@.port<=443)].name", "[http, https]" },
	{ ".spec.ports[?(@.port>=443)].name", "[https]" },
	{ ".spec.ports[?(@.port<443)].name", "[http]" },
	{ ".spec.ports[?(@.name>\"http\")].port", "[443]" },
	{ ".spec.interfaces[?(@.up==true)].name", "[eth0]" },
	{ ".spec.interfaces[?(@.up!=true)].name", "[eth1]" },
	{ ".spec.interfaces[?(@.name=='eth1')].mac", "[m1]" },
	{ ".status.conditions[?(@.n>=2.0)].type", "[]" },
	{ ".status.conditions[?(@.n==2)].type", "[]" },
	{ ".spec.ports[?(@.port==80.0)].name", "[]" },
	{ ".spec.interfaces[?(@.up<true)].name", "[]" },
	{ ".spec.ports[?(@.port==\"80\")].name", "[]" },
	{ ".metadata[?(@.name)]", "[]" },
	{ ".spec.missing[?(@.name)]", "[]" },
	{ ".status.conditions[?(@.type==\"Ready\")]", "[{type: Ready, status: 'True', n: 1}]" },
	{ ".status.conditions[?(@.type=='a)b')].type", "[]" },
	{ ".status.conditions[?(@.type=='{a}')].type", "[]" },
	{ "{.status.conditions[?(@.type=='{a}')].type}", "[]" },
};

static void test_rows(void **state)
{
	json_t *doc = yaml(doc_yaml), *before = json_deep_copy(doc);
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		jsonpath *jp = NULL;
		json_t *got, *again, *want = yaml(rows[i].want);
		ah_err err;

		if (jsonpath_compile(rows[i].expr, &jp, &err) < 0)
			fail_msg("\"%s\" did not compile: %s", rows[i].expr, err.message);
		got = jsonpath_eval(jp, doc);
		if (!json_equal(got, want)) {
			char *g = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);

			fail_msg("\"%s\" gave %s", rows[i].expr, g);
		}
		/* A compiled path is reusable and evaluation pure. */
		again = jsonpath_eval(jp, doc);
		assert_true(json_equal(got, again));
		json_decref(again);
		json_decref(got);
		json_decref(want);
		jsonpath_free(jp);
	}
	assert_true(json_equal(doc, before));
	json_decref(doc);
	json_decref(before);
}

static void test_results_are_the_documents_values(void **state)
{
	json_t *doc = yaml(doc_yaml), *got;
	jsonpath *jp;
	ah_err err;

	assert_int_equal(jsonpath_compile("$", &jp, &err), 0);
	got = jsonpath_eval(jp, doc);
	assert_int_equal(json_array_size(got), 1);
	assert_ptr_equal(json_array_get(got, 0), doc);
	json_decref(got);
	jsonpath_free(jp);

	assert_int_equal(jsonpath_compile(".spec.interfaces[0]", &jp, &err), 0);
	got = jsonpath_eval(jp, doc);
	assert_ptr_equal(json_array_get(got, 0),
			 json_array_get(json_object_get(json_object_get(doc, "spec"), "interfaces"), 0));
	json_decref(got);
	/* NULL document: nothing selected. */
	got = jsonpath_eval(jp, NULL);
	assert_int_equal(json_array_size(got), 0);
	json_decref(got);
	jsonpath_free(jp);
	json_decref(doc);
}

static void test_refused(void **state)
{
	static const char *const bad[] = {
		"{.a}{.b}",
		"{.a}{\"\\n\"}",
		"{.a",
		"text {.a}",
		".a[",
		".a[x]",
		".a[1,2]",
		".a['x','y']",
		".a[1:2:3:4]",
		".a[99999999999]",
		"..a",
		".a..b",
		".a[?(@.x=~'y')]",
		".a[?(@.x===1)]",
		".a[?(@.x==)]",
		".a[?()]",
		".a[?(@.x=='y'",
		".a[?(@.x=='y)]",
		".a[?(@.x==y)]",
		".a[?(@.x==1e5)]",
		"a.b",
		"{range .items[*]}{.x}{end}",
		".a['unterminated]",
		".a[\"x\" ]]",
		".a[]",
		/* found by fuzz/fuzz-jsonpath.c */
		".a}",
		"{.a\\}",
		".a\\",
		".a{.b}",
	};
	char longexpr[5000];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		jsonpath *jp = (jsonpath *)0x1;
		ah_err err;

		ah_err_clear(&err);
		if (jsonpath_compile(bad[i], &jp, &err) != -EINVAL)
			fail_msg("\"%s\" compiled", bad[i]);
		assert_ptr_equal(jp, (jsonpath *)0x1);
		assert_int_equal(err.status, 400);
		assert_true(strncmp(err.message, "jsonpath: ", 10) == 0);
	}
	memset(longexpr, 'a', sizeof(longexpr) - 1);
	longexpr[0] = '.';
	longexpr[sizeof(longexpr) - 1] = '\0';
	{
		jsonpath *jp;
		ah_err err;

		assert_int_equal(jsonpath_compile(longexpr, &jp, &err), -E2BIG);
		assert_int_equal(jsonpath_compile(NULL, &jp, &err), -EINVAL);
	}
	jsonpath_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows),
		cmocka_unit_test(test_results_are_the_documents_values),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
