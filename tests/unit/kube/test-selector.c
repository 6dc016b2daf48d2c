/* Tests for src/kube/selector.c: label selector grammar and matching, the
 * metav1.LabelSelector form, field selectors, and label/annotation checks,
 * with the API server's messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "kube/selector.h"

#define N(rows) (sizeof(rows) / sizeof(rows[0]))

/* The messages the validation helpers append, for exact comparisons. */
#define QNAME_MSG                                                                          \
	"must consist of alphanumeric characters, '-', '_' or '.', and must start and end " \
	"with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "     \
	"regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_MSG                                                                            \
	"a valid label must be an empty string or consist of alphanumeric characters, '-', " \
	"'_' or '.', and must start and end with an alphanumeric character (e.g. "           \
	"'MyValue',  or 'my_value',  or '12345', regex used for validation is "              \
	"'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
#define DNS_MSG                                                                         \
	"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "        \
	"characters, '-' or '.', and must start and end with an alphanumeric character " \
	"(e.g. 'example.com', regex used for validation is "                             \
	"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

/* A parse case: on success `canon` is the canonical string; otherwise the
 * exact 400 message. */
struct parse_row {
	const char *in;
	const char *canon;
	const char *msg;
};

#define PARSED(i, c) { .in = i, .canon = c }
#define REJECTED(i, m) { .in = i, .msg = m }

static void test_label_parse(void **state)
{
	static const struct parse_row rows[] = {
		PARSED("", ""),
		PARSED("x=a", "x=a"),
		PARSED("x==a", "x==a"),
		PARSED("x!=a", "x!=a"),
		PARSED("x in (a,b)", "x in (a,b)"),
		PARSED("x notin (b,a)", "x notin (a,b)"),
		PARSED("x", "x"),
		PARSED("!x", "!x"),
		PARSED("x>1", "x>1"),
		PARSED("x<10", "x<10"),
		PARSED("  x = a ,\ty  in ( b , c ) ,\n!z  ", "x=a,y in (b,c),!z"),
		PARSED("b=1,a=2", "a=2,b=1"),
		PARSED("x in (a,,b)", "x in (,a,b)"),
		PARSED("x in (,a)", "x in (,a)"),
		PARSED("x in (a,)", "x in (,a)"),
		PARSED("x in ()", "x in ()"),
		PARSED("x in (a,a)", "x in (a)"),
		PARSED("x=", "x="),
		PARSED("x=,y", "x=,y"),
		PARSED("in in (in,notin)", "in in (in,notin)"),
		PARSED("notin notin (x)", "notin notin (x)"),
		PARSED("example.com/app=web", "example.com/app=web"),
		PARSED("a.b-c_d=E-f.g_h", "a.b-c_d=E-f.g_h"),
		PARSED("app.kubernetes.io/name=agent,environment!=qa",
		       "app.kubernetes.io/name=agent,environment!=qa"),
		REJECTED("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
		REJECTED("=v", "found '=', expected: !, identifier, or 'end of string'"),
		REJECTED("k=v=w", "found '=', expected: ',' or 'end of string'"),
		REJECTED("k v",
			 "unable to parse requirement: found 'v', expected: '=', '!=', '==', 'in', "
			 "notin'"),
		REJECTED("a=b,", "found '', expected: identifier after ','"),
		REJECTED("a=b,=", "found '=', expected: identifier after ','"),
		REJECTED("a=b c", "found 'c', expected: ',' or 'end of string'"),
		REJECTED("===", "found '==', expected: !, identifier, or 'end of string'"),
		REJECTED("!!", "unable to parse requirement: found '!', expected: identifier"),
		REJECTED("!", "unable to parse requirement: found '', expected: identifier"),
		REJECTED("!,", "unable to parse requirement: found ',', expected: identifier"),
		REJECTED("!x=a", "found '=', expected: ',' or 'end of string'"),
		REJECTED("x in a", "unable to parse requirement: found 'a' expected: '('"),
		REJECTED("x in (=)",
			 "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
		REJECTED("x in (a,=)",
			 "unable to parse requirement: found '=', expected: ',', or identifier"),
		REJECTED("x in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
		REJECTED("x=(a)", "unable to parse requirement: found '(', expected: identifier"),
		REJECTED("app:monolith",
			 "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": name "
			 "part " QNAME_MSG),
		REJECTED("app.kubernetes_io/name=x",
			 "unable to parse requirement: <nil>: Invalid value: "
			 "\"app.kubernetes_io/name\": prefix part " DNS_MSG),
		REJECTED("a/b/c=x",
			 "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified "
			 "name " QNAME_MSG " with an optional DNS subdomain prefix and '/' (e.g. "
			 "'example.com/MyName')"),
		REJECTED("/a=b",
			 "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must "
			 "be non-empty"),
		REJECTED("a=b@",
			 "unable to parse requirement: values[0][a]: Invalid value: \"b@\": " VALUE_MSG),
		REJECTED("a>x",
			 "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
			 "operators, the value must be an integer"),
		REJECTED("a<-5",
			 "unable to parse requirement: values[0][a]: Invalid value: \"-5\": " VALUE_MSG),
		REJECTED("a in (x@,y@)",
			 "unable to parse requirement: [values[0][a]: Invalid value: \"x@\": " VALUE_MSG
			 ", values[1][a]: Invalid value: \"y@\": " VALUE_MSG "]"),
		REJECTED("k=caf\xc3\xa9\t",
			 "unable to parse requirement: values[0][k]: Invalid value: \"caf\xc3\xa9\": "
			 VALUE_MSG),
		REJECTED("k=\x01", "unable to parse requirement: values[0][k]: Invalid value: "
				   "\"\\x01\": " VALUE_MSG),
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		label_selector *sel = NULL;
		ah_err err = { 0 };
		int r = label_selector_parse(rows[i].in, &sel, &err);

		if (rows[i].msg) {
			if (r != -EINVAL || err.status != 400 || strcmp(err.reason, "BadRequest"))
				fail_msg("row %zu (%s): got %d/%d, want a 400", i, rows[i].in, r,
					 err.status);
			if (strcmp(err.message, rows[i].msg) != 0)
				fail_msg("row %zu (%s): message\n  %s\nwant\n  %s", i, rows[i].in,
					 err.message, rows[i].msg);
			continue;
		}
		if (r != 0)
			fail_msg("row %zu (%s): %s", i, rows[i].in, err.message);
		if (rows[i].canon) {
			char *s = label_selector_string(sel);

			if (strcmp(s, rows[i].canon) != 0)
				fail_msg("row %zu (%s): canonical %s, want %s", i, rows[i].in, s,
					 rows[i].canon);
			free(s);
		}
		label_selector_free(sel);
	}
}

/* Keys and values at their length limits. */
static void test_label_parse_lengths(void **state)
{
	static const struct {
		size_t prefix, name, value;
		const char *msg; /* NULL: accepted */
	} rows[] = {
		{ 0, 63, 63, NULL },
		{ 253, 63, 0, NULL },
		{ 0, 64, 0,
		  "unable to parse requirement: <nil>: Invalid value: \"%s\": name part must be no "
		  "more than 63 characters" },
		{ 254, 1, 0,
		  "unable to parse requirement: <nil>: Invalid value: \"%s\": prefix part must be "
		  "no more than 253 characters" },
		{ 0, 1, 64,
		  "unable to parse requirement: values[0][a]: Invalid value: \"%s\": must be no "
		  "more than 63 characters" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		char key[400] = "", val[100], sel_s[600], want[1200];
		label_selector *sel = NULL;
		ah_err err = { 0 };
		size_t k;
		int r;

		for (k = 0; k < rows[i].prefix; k++)
			key[k] = (k % 10 == 9) ? '.' : 'p';
		if (rows[i].prefix)
			key[rows[i].prefix] = '/';
		k = rows[i].prefix ? rows[i].prefix + 1 : 0;
		memset(key + k, 'a', rows[i].name);
		key[k + rows[i].name] = '\0';
		memset(val, 'v', rows[i].value);
		val[rows[i].value] = '\0';
		snprintf(sel_s, sizeof(sel_s), "%s=%s", key, val);
		r = label_selector_parse(sel_s, &sel, &err);
		if (!rows[i].msg) {
			if (r != 0)
				fail_msg("row %zu: %s", i, err.message);
			label_selector_free(sel);
			continue;
		}
		assert_int_equal(r, -EINVAL);
		snprintf(want, sizeof(want), rows[i].msg, rows[i].value > 63 ? val : key);
		if (strcmp(err.message, want) != 0)
			fail_msg("row %zu: message\n  %s\nwant\n  %s", i, err.message, want);
	}
}

static void test_label_match(void **state)
{
	static const struct {
		const char *sel, *labels; /* labels NULL: the object has none */
		bool want;
	} rows[] = {
		{ "", NULL, true },
		{ "", "{\"a\":\"b\"}", true },
		{ "x=a", "{\"x\":\"a\"}", true },
		{ "x=a", "{\"x\":\"b\"}", false },
		{ "x=a", "{}", false },
		{ "x=a", NULL, false },
		{ "x==a", "{\"x\":\"a\"}", true },
		{ "x!=a", "{}", true },
		{ "x!=a", NULL, true },
		{ "x!=a", "{\"x\":\"a\"}", false },
		{ "x!=a", "{\"x\":\"b\"}", true },
		{ "x in (a,b)", "{\"x\":\"b\"}", true },
		{ "x in (a,b)", "{\"x\":\"c\"}", false },
		{ "x in (a,b)", "{}", false },
		{ "x notin (a,b)", "{}", true },
		{ "x notin (a,b)", "{\"x\":\"c\"}", true },
		{ "x notin (a,b)", "{\"x\":\"a\"}", false },
		{ "x", "{\"x\":\"\"}", true },
		{ "x", "{}", false },
		{ "!x", "{}", true },
		{ "!x", "{\"x\":\"a\"}", false },
		{ "x>5", "{\"x\":\"10\"}", true },
		{ "x>5", "{\"x\":\"5\"}", false },
		{ "x>5", "{\"x\":\"abc\"}", false },
		{ "x>5", "{}", false },
		{ "x<5", "{\"x\":\"-3\"}", true },
		{ "x<5", "{\"x\":\"99999999999999999999\"}", false },
		{ "x=", "{\"x\":\"\"}", true },
		{ "x=", "{}", false },
		{ "x!=", "{}", true },
		{ "x in ()", "{\"x\":\"\"}", true },
		{ "x=a,y", "{\"x\":\"a\",\"y\":\"1\"}", true },
		{ "x=a,y", "{\"x\":\"a\"}", false },
		{ "x=a,x!=b", "{\"x\":\"a\"}", true },
		{ "agent-install.openshift.io/bmh=host-0",
		  "{\"agent-install.openshift.io/bmh\":\"host-0\",\"other\":\"x\"}", true },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *labels = rows[i].labels ? json_loads(rows[i].labels, 0, NULL) : NULL;
		label_selector *sel = NULL;
		ah_err err = { 0 };

		if (label_selector_parse(rows[i].sel, &sel, &err) != 0)
			fail_msg("row %zu: %s", i, err.message);
		if (label_selector_matches(sel, labels) != rows[i].want)
			fail_msg("row %zu: %s on %s should give %d", i, rows[i].sel,
				 rows[i].labels ? rows[i].labels : "(none)", rows[i].want);
		label_selector_free(sel);
		json_decref(labels);
	}
}

static void test_label_from_json(void **state)
{
	static const struct {
		const char *json; /* NULL: a NULL pointer */
		const char *canon, *msg;
		bool empty;
	} rows[] = {
#define FJ_OK(j, c, e) { .json = j, .canon = c, .empty = e }
#define FJ_ERR(j, m) { .json = j, .msg = m }
		FJ_OK(NULL, "", true),
		FJ_OK("null", "", true),
		FJ_OK("{}", "", true),
		FJ_OK("{\"matchLabels\":{},\"matchExpressions\":[]}", "", true),
		FJ_OK("{\"matchLabels\":{\"b\":\"1\",\"a\":\"2\"}}", "a=2,b=1", false),
		FJ_OK("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[\"b\",\"a\"]}]}", "k in (a,b)", false),
		FJ_OK("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]}", "k notin (a)", false),
		FJ_OK("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\"}]}", "k", false),
		FJ_OK("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"DoesNotExist\",\"values\":[]}]}", "!k", false),
		FJ_OK("{\"matchLabels\":{\"z\":\"1\"},\"matchExpressions\":[{\"key\":\"a\",\"operator\":"
		  "\"Exists\"}]}", "a,z=1", false),
		FJ_ERR("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Foo\"}]}", "\"Foo\" is not a valid label selector operator"),
		FJ_ERR("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\",\"values\":[]}]}", "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't "
		  "be empty"),
		FJ_ERR("{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Exists\",\"values\":[\"a\"]}]}", "values: Invalid value: []string{\"a\"}: values set must be empty for exists and "
		  "does not exist"),
		FJ_ERR("{\"matchLabels\":{\"a b\":\"x\"}}", "key: Invalid value: \"a b\": name part " QNAME_MSG),
		FJ_ERR("{\"matchLabels\":{\"a\":\"b c\"}}", "values[0][a]: Invalid value: \"b c\": " VALUE_MSG),
		FJ_ERR("{\"matchLabels\":{\"a\":1}}", "matchLabels must be an object of strings"),
		FJ_ERR("{\"matchExpressions\":{}}", "matchExpressions must be an array"),
		FJ_ERR("[]", "label selector must be an object"),
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *j = rows[i].json ? json_loads(rows[i].json, JSON_DECODE_ANY, NULL) : NULL;
		label_selector *sel = NULL;
		ah_err err = { 0 };
		int r = label_selector_from_json(j, &sel, &err);

		if (rows[i].msg) {
			if (r != -EINVAL || err.status != 400)
				fail_msg("row %zu: got %d, want a 400", i, r);
			if (strcmp(err.message, rows[i].msg) != 0)
				fail_msg("row %zu: message\n  %s\nwant\n  %s", i, err.message,
					 rows[i].msg);
		} else {
			char *s;

			if (r != 0)
				fail_msg("row %zu: %s", i, err.message);
			s = label_selector_string(sel);
			assert_string_equal(s, rows[i].canon);
			assert_int_equal(label_selector_is_empty(sel), rows[i].empty);
			free(s);
			label_selector_free(sel);
		}
		json_decref(j);
	}
}

static const char *const meta_fields[] = { "metadata.name", "metadata.namespace", NULL };

static void test_field_parse(void **state)
{
	static const struct {
		const char *in;
		bool any_field; /* parse with allowed == NULL */
		const char *canon, *msg;
	} rows[] = {
		{ "", false, "", NULL },
		{ "metadata.name=foo", false, "metadata.name=foo", NULL },
		{ "metadata.name==foo", false, "metadata.name=foo", NULL },
		{ "metadata.name!=foo", false, "metadata.name!=foo", NULL },
		{ "metadata.namespace=ns,metadata.name=a", false,
		  "metadata.name=a,metadata.namespace=ns", NULL },
		{ ",metadata.name=a,,", false, "metadata.name=a", NULL },
		{ "metadata.name=", false, "metadata.name=", NULL },
		{ "metadata.name=a\\,b\\=c\\\\d", false, "metadata.name=a\\,b\\=c\\\\d", NULL },
		{ "spec.x=1", true, "spec.x=1", NULL },
		{ "status.phase=Running", false, NULL, "field label not supported: status.phase" },
		{ "metadata.name = foo", false, NULL, "field label not supported: metadata.name " },
		{ "=x", false, NULL, "field label not supported: " },
		{ "metadata.name", false, NULL,
		  "invalid selector: 'metadata.name'; can't understand 'metadata.name'" },
		{ "metadata.name=a,nope", false, NULL,
		  "invalid selector: 'metadata.name=a,nope'; can't understand 'nope'" },
		{ "metadata.name=a=b", false, NULL,
		  "invalid field selector: unescaped character in value: 61" },
		{ "metadata.name!==b", false, NULL,
		  "invalid field selector: unescaped character in value: 61" },
		{ "metadata.name=a\\x", false, NULL,
		  "invalid field selector: invalid escape sequence: \\x" },
		{ "metadata.name=a\\", false, NULL,
		  "invalid field selector: invalid escape sequence: \\" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		field_selector *sel = NULL;
		ah_err err = { 0 };
		int r = field_selector_parse(rows[i].in, rows[i].any_field ? NULL : meta_fields, &sel,
					     &err);

		if (rows[i].msg) {
			if (r != -EINVAL || err.status != 400)
				fail_msg("row %zu (%s): got %d, want a 400", i, rows[i].in, r);
			if (strcmp(err.message, rows[i].msg) != 0)
				fail_msg("row %zu (%s): message\n  %s\nwant\n  %s", i, rows[i].in,
					 err.message, rows[i].msg);
		} else {
			char *s;

			if (r != 0)
				fail_msg("row %zu (%s): %s", i, rows[i].in, err.message);
			s = field_selector_string(sel);
			assert_string_equal(s, rows[i].canon);
			free(s);
			field_selector_free(sel);
		}
	}
}

static void test_field_match(void **state)
{
	static const char *obj_json =
		"{\"metadata\":{\"name\":\"a,b\",\"namespace\":\"n\"},\"spec\":{\"replicas\":3,"
		"\"paused\":false,\"ratio\":0.5,\"tags\":[\"x\"]}}";
	static const struct {
		const char *sel;
		bool want;
	} rows[] = {
		{ "", true },
		{ "metadata.name=a\\,b", true },
		{ "metadata.name==a\\,b", true },
		{ "metadata.name!=a\\,b", false },
		{ "metadata.name=a", false },
		{ "metadata.name=a\\,b,metadata.namespace=n", true },
		{ "metadata.name=a\\,b,metadata.namespace=m", false },
		{ "metadata.namespace=", false },
		{ "spec.missing=", true },
		{ "spec.missing!=", false },
		{ "spec.missing.deeper=", true },
		{ "spec.replicas=3", true },
		{ "spec.paused=false", true },
		{ "spec.ratio=0.5", true },
		{ "spec.tags=", true },
		{ "metadata=", true },
	};
	json_t *obj = json_loads(obj_json, 0, NULL);
	size_t i;

	for (i = 0; i < N(rows); i++) {
		field_selector *sel = NULL;
		ah_err err = { 0 };

		if (field_selector_parse(rows[i].sel, NULL, &sel, &err) != 0)
			fail_msg("row %zu: %s", i, err.message);
		if (field_selector_matches(sel, obj) != rows[i].want)
			fail_msg("row %zu: %s should give %d", i, rows[i].sel, rows[i].want);
		field_selector_free(sel);
	}
	json_decref(obj);
}

/* One labels_validate / annotations_validate case: the causes expected, as
 * "reason|field|message" lines joined with '\n'. */
struct validate_row {
	const char *json;
	const char *causes;
};

static void check_causes(const char *what, size_t i, const char *json, int n, json_t *causes,
			 const char *want)
{
	char got[8192] = "";
	json_t *c;
	size_t k;

	json_array_foreach(causes, k, c) {
		size_t len = strlen(got);

		snprintf(got + len, sizeof(got) - len, "%s%s|%s|%s", k ? "\n" : "",
			 json_string_value(json_object_get(c, "reason")),
			 json_string_value(json_object_get(c, "field")),
			 json_string_value(json_object_get(c, "message")));
	}
	if ((size_t)n != json_array_size(causes))
		fail_msg("%s row %zu: returned %d for %zu causes", what, i, n,
			 json_array_size(causes));
	if (strcmp(got, want) != 0)
		fail_msg("%s row %zu (%s): causes\n%s\nwant\n%s", what, i, json, got, want);
}

#define LBL "FieldValueInvalid|metadata.labels|Invalid value: "

static void test_labels_validate(void **state)
{
	static const struct validate_row rows[] = {
		{ "{}", "" },
		{ "null", "" },
		{ "{\"app\":\"web\",\"example.com/tier\":\"\",\"A-b_c.d\":\"X-y_z.9\"}", "" },
		{ "{\"bad key!\":\"v\"}", LBL "\"bad key!\": name part " QNAME_MSG },
		{ "{\"Example.com/app\":\"x\"}", LBL "\"Example.com/app\": prefix part " DNS_MSG },
		{ "{\"/app\":\"x\"}", LBL "\"/app\": prefix part must be non-empty" },
		{ "{\"a/b/c\":\"x\"}",
		  LBL "\"a/b/c\": a qualified name " QNAME_MSG " with an optional DNS subdomain "
		      "prefix and '/' (e.g. 'example.com/MyName')" },
		{ "{\"a/\":\"x\"}",
		  LBL "\"a/\": name part must be non-empty\n" LBL "\"a/\": name part " QNAME_MSG },
		{ "{\"\":\"x\"}", LBL "\"\": name part must be non-empty\n" LBL "\"\": name part " QNAME_MSG },
		{ "{\"-a\":\"x\"}", LBL "\"-a\": name part " QNAME_MSG },
		{ "{\"a..b/c\":\"x\"}", LBL "\"a..b/c\": prefix part " DNS_MSG },
		{ "{\"app\":\"-bad\"}", LBL "\"-bad\": " VALUE_MSG },
		{ "{\"app\":\"b\\nc\"}", LBL "\"b\\nc\": " VALUE_MSG },
		{ "{\"app\":5}", "FieldValueTypeInvalid|metadata.labels|Invalid value: 5: must be a "
				 "string" },
		{ "[]", "FieldValueTypeInvalid|metadata.labels|Invalid value: []: must be a string" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *labels = json_loads(rows[i].json, JSON_DECODE_ANY, NULL);
		json_t *causes = json_array();

		check_causes("labels", i, rows[i].json, labels_validate(labels, causes), causes,
			     rows[i].causes);
		json_decref(causes);
		json_decref(labels);
	}
}

/* Lengths: prefix 253, name 63, value 63, each one over. */
static void test_labels_validate_lengths(void **state)
{
	static const struct {
		size_t prefix, name, value;
		const char *causes; /* %s is the key or value named */
	} rows[] = {
		{ 253, 63, 63, "" },
		{ 254, 1, 0, LBL "\"%s\": prefix part must be no more than 253 characters" },
		{ 0, 64, 0, LBL "\"%s\": name part must be no more than 63 characters" },
		{ 0, 1, 64, LBL "\"%s\": must be no more than 63 characters" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		char key[400] = "", val[100], want[1024];
		json_t *labels = json_object(), *causes = json_array();
		size_t k, p = rows[i].prefix;

		for (k = 0; k < p; k++)
			key[k] = (k % 10 == 9) ? '.' : 'p';
		if (p)
			key[p++] = '/';
		memset(key + p, 'a', rows[i].name);
		key[p + rows[i].name] = '\0';
		memset(val, 'v', rows[i].value);
		val[rows[i].value] = '\0';
		json_object_set_new(labels, key, json_string(val));
		snprintf(want, sizeof(want), rows[i].causes, rows[i].value > 63 ? val : key);
		check_causes("lengths", i, key, labels_validate(labels, causes), causes, want);
		json_decref(causes);
		json_decref(labels);
	}
}

#define ANN "FieldValueInvalid|metadata.annotations|Invalid value: "

static void test_annotations_validate(void **state)
{
	static const struct validate_row rows[] = {
		{ "{}", "" },
		{ "{\"Example.COM/Some-Key\":\"any value at all: !@#\\n\"}", "" },
		{ "{\"kubectl.kubernetes.io/last-applied-configuration\":\"{}\"}", "" },
		{ "{\"bad key\":\"x\"}", ANN "\"bad key\": name part " QNAME_MSG },
		{ "{\"a/b/c\":\"x\"}",
		  ANN "\"a/b/c\": a qualified name " QNAME_MSG " with an optional DNS subdomain "
		      "prefix and '/' (e.g. 'example.com/MyName')" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		json_t *ann = json_loads(rows[i].json, 0, NULL), *causes = json_array();

		check_causes("annotations", i, rows[i].json, annotations_validate(ann, causes),
			     causes, rows[i].causes);
		json_decref(causes);
		json_decref(ann);
	}
}

/* The 256 KiB total counts keys and values. */
static void test_annotations_total_size(void **state)
{
	static const struct {
		size_t value_len;
		const char *causes;
	} rows[] = {
		{ 262144 - 1, "" },
		{ 262144, "FieldValueTooLong|metadata.annotations|Too long: must have at most 262144 "
			  "bytes" },
	};
	size_t i;

	for (i = 0; i < N(rows); i++) {
		char *v = malloc(rows[i].value_len + 1);
		json_t *ann = json_object(), *causes = json_array();

		memset(v, 'x', rows[i].value_len);
		v[rows[i].value_len] = '\0';
		json_object_set_new(ann, "k", json_string(v));
		check_causes("size", i, "big", annotations_validate(ann, causes), causes,
			     rows[i].causes);
		free(v);
		json_decref(causes);
		json_decref(ann);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_label_parse),
		cmocka_unit_test(test_label_parse_lengths),
		cmocka_unit_test(test_label_match),
		cmocka_unit_test(test_label_from_json),
		cmocka_unit_test(test_field_parse),
		cmocka_unit_test(test_field_match),
		cmocka_unit_test(test_labels_validate),
		cmocka_unit_test(test_labels_validate_lengths),
		cmocka_unit_test(test_annotations_validate),
		cmocka_unit_test(test_annotations_total_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
