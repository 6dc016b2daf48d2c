/* Tests for src/kube/table.c: HumanDuration, column definitions, cells of
 * every column type, the row's object, and the project's Agent columns
 * (skipped when config/crd/ is not found). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/util.h"
#include "base/yamljson.h"
#include "kube/table.h"

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

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

#define MIN 60LL
#define HOUR 3600LL
#define DAY 86400LL

static void test_human_duration(void **state)
{
	static const struct {
		long long s;
		const char *want;
	} rows[] = {
		{ -3, "<invalid>" },
		{ -2, "<invalid>" },
		{ -1, "0s" },
		{ 0, "0s" },
		{ 1, "1s" },
		{ 119, "119s" },
		{ 2 * MIN, "2m" },
		{ 2 * MIN + 1, "2m1s" },
		{ 5 * MIN + 30, "5m30s" },
		{ 10 * MIN - 1, "9m59s" },
		{ 10 * MIN, "10m" },
		{ 10 * MIN + 59, "10m" },
		{ 3 * HOUR - 1, "179m" },
		{ 3 * HOUR, "3h" },
		{ 3 * HOUR + 12 * MIN, "3h12m" },
		{ 8 * HOUR - 1, "7h59m" },
		{ 8 * HOUR, "8h" },
		{ 48 * HOUR - 1, "47h" },
		{ 2 * DAY, "2d" },
		{ 2 * DAY + HOUR, "2d1h" },
		{ 4 * DAY + 4 * HOUR + 59 * MIN, "4d4h" },
		{ 8 * DAY - 1, "7d23h" },
		{ 8 * DAY, "8d" },
		{ 400 * DAY, "400d" },
		{ 730 * DAY - 1, "729d" },
		{ 730 * DAY, "2y" },
		{ 750 * DAY, "2y20d" },
		{ 8 * 365 * DAY - 1, "7y364d" },
		{ 8 * 365 * DAY, "8y" },
		{ 10 * 365 * DAY + 100 * DAY, "10y" },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char buf[32];

		table_human_duration(rows[i].s, buf, sizeof(buf));
		if (strcmp(buf, rows[i].want))
			fail_msg("%lld s: got %s, want %s", rows[i].s, buf, rows[i].want);
	}
}

#define NAME_DESC                                                                                 \
	"Name must be unique within a namespace. Is required when creating resources, although "  \
	"some resources may allow a client to request the generation of an appropriate name "     \
	"automatically. Name is primarily intended for creation idempotence and configuration "   \
	"definition. Cannot be updated. More info: "                                              \
	"https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"

#define AGE_DESC                                                                                  \
	"CreationTimestamp is a timestamp representing the server time when this object was "     \
	"created. It is not guaranteed to be set in happens-before order across separate "         \
	"operations. Clients may not set this value. It is represented in RFC3339 form and is in " \
	"UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "                 \
	"https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

static void test_default_columns(void **state)
{
	table_columns *tc;
	json_t *defs, *obj, *row, *empty = json_array();
	ah_err err;
	time_t created;

	assert_int_equal(table_columns_compile(NULL, &tc, &err), 0);
	defs = table_column_definitions(tc);
	assert_int_equal(json_array_size(defs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 0), "name")), "Name");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 0), "type")), "string");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 0), "format")), "name");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 0), "description")),
			    NAME_DESC);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(defs, 0), "priority")), 0);
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 1), "name")), "Age");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 1), "type")), "date");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 1), "format")), "");
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 1), "description")),
			    AGE_DESC);
	json_decref(defs);

	obj = yaml("{metadata: {name: x, creationTimestamp: '2025-10-15T17:10:55Z'}}");
	assert_int_equal(util_parse_rfc3339("2025-10-15T17:10:55Z", &created), 0);
	row = table_row(tc, obj, TABLE_INCLUDE_NONE, created + 3 * HOUR + 12 * MIN + 5);
	{
		char *d = dump(row);

		assert_string_equal(d, "{\"cells\":[\"x\",\"3h12m\"]}");
		free(d);
	}
	json_decref(row);
	json_decref(obj);
	table_columns_free(tc);

	/* An empty array is the same as none. */
	assert_int_equal(table_columns_compile(empty, &tc, &err), 0);
	defs = table_column_definitions(tc);
	assert_int_equal(json_array_size(defs), 2);
	json_decref(defs);
	table_columns_free(tc);
	json_decref(empty);
}

static const char columns_yaml[] =
	"[{name: S, type: string, jsonPath: .spec.s, description: a string},"
	" {name: SN, type: string, jsonPath: .spec.n},"
	" {name: SF, type: string, jsonPath: .spec.f},"
	" {name: SBig, type: string, jsonPath: .spec.big},"
	" {name: SO, type: string, jsonPath: .spec.o},"
	" {name: SL, type: string, jsonPath: .spec.list},"
	" {name: SNull, type: string, jsonPath: .spec.nul},"
	" {name: SB, type: string, jsonPath: .spec.b},"
	" {name: I, type: integer, jsonPath: .spec.n, priority: 1},"
	" {name: IF, type: integer, jsonPath: .spec.f},"
	" {name: IS, type: integer, jsonPath: .spec.s},"
	" {name: N, type: number, jsonPath: .spec.n},"
	" {name: NF, type: number, jsonPath: .spec.f},"
	" {name: B, type: boolean, jsonPath: .spec.b},"
	" {name: BS, type: boolean, jsonPath: .spec.s},"
	" {name: D, type: date, jsonPath: .metadata.creationTimestamp, format: date-time},"
	" {name: DI, type: date, jsonPath: .spec.s},"
	" {name: DE, type: date, jsonPath: .spec.empty},"
	" {name: DN, type: date, jsonPath: .spec.n},"
	" {name: M, type: string, jsonPath: .spec.missing},"
	" {name: Multi, type: string, jsonPath: '.spec.list[*]'},"
	" {name: C, type: string, jsonPath: '.status.conditions[?(@.type==\"Ready\")].status'},"
	" {name: X, type: string, jsonPath: '.spec.list[9]'},"
	" {name: NullInt, type: integer, jsonPath: .spec.nul}]";

static const char object_yaml[] =
	"{apiVersion: test.io/v1, kind: Thing, metadata: {name: t1, namespace: ns, uid: u, "
	"creationTimestamp: '2025-10-15T17:10:55Z', labels: {a: b}}, "
	"spec: {s: hello, n: 5, f: 1.5, big: 2500000.0, o: {b: [x, y], a: 1}, list: [x, y], "
	"nul: null, b: true, empty: ''}, "
	"status: {conditions: [{type: Ready, status: 'True'}]}}";

static void test_cells(void **state)
{
	json_t *cols = yaml(columns_yaml), *obj = yaml(object_yaml), *row, *cells, *defs, *want;
	table_columns *tc;
	ah_err err;
	time_t created;
	size_t i;

	assert_int_equal(table_columns_compile(cols, &tc, &err), 0);
	assert_int_equal(util_parse_rfc3339("2025-10-15T17:10:55Z", &created), 0);
	row = table_row(tc, obj, TABLE_INCLUDE_NONE, created + 5 * MIN + 30);
	assert_null(json_object_get(row, "object"));
	cells = json_object_get(row, "cells");
	want = yaml("[t1, hello, '5', '1.5', '2.5e+06', 'map[a:1 b:[x y]]', '[x y]', '<nil>', 'true',"
		    " 5, 1, null, 5.0, 1.5, true, null, 5m30s, <invalid>, <unknown>, null, null,"
		    " x, 'True', null, null]");
	if (!json_equal(cells, want)) {
		char *g = dump(cells);

		fail_msg("cells %s", g);
	}
	/* The number column holds floats, the integer column integers. */
	assert_true(json_is_real(json_array_get(cells, 12)));
	assert_true(json_is_integer(json_array_get(cells, 9)));
	json_decref(want);

	defs = table_column_definitions(tc);
	assert_int_equal(json_array_size(defs), json_array_size(cols) + 1);
	want = yaml("[{name: S, type: string, format: '', description: a string, priority: 0},"
		    " {name: SN, type: string, format: '', description: 'Custom resource definition "
		    "column (in JSONPath format): .spec.n', priority: 0}]");
	for (i = 0; i < 2; i++)
		assert_true(json_equal(json_array_get(defs, i + 1), json_array_get(want, i)));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(defs, 9), "priority")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 16), "format")),
			    "date-time");
	json_decref(want);
	json_decref(defs);
	json_decref(row);
	json_decref(cols);
	json_decref(obj);
	table_columns_free(tc);
}

static void test_row_object(void **state)
{
	json_t *cols = yaml("[{name: S, type: string, jsonPath: .spec.s}]"), *obj = yaml(object_yaml);
	json_t *row, *want;
	table_columns *tc;
	ah_err err;

	assert_int_equal(table_columns_compile(cols, &tc, &err), 0);
	row = table_row(tc, obj, TABLE_INCLUDE_METADATA, 0);
	want = json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata", "apiVersion",
			 "meta.k8s.io/v1", "metadata", json_object_get(obj, "metadata"));
	assert_true(json_equal(json_object_get(row, "object"), want));
	/* A copy: the row outlives changes to the object. */
	assert_ptr_not_equal(json_object_get(json_object_get(row, "object"), "metadata"),
			     json_object_get(obj, "metadata"));
	json_decref(want);
	json_decref(row);

	row = table_row(tc, obj, TABLE_INCLUDE_OBJECT, 0);
	assert_true(json_equal(json_object_get(row, "object"), obj));
	assert_ptr_not_equal(json_object_get(row, "object"), obj);
	json_decref(row);

	/* No metadata at all: an empty name, an empty PartialObjectMetadata. */
	json_decref(obj);
	obj = yaml("{spec: {s: v}}");
	row = table_row(tc, obj, TABLE_INCLUDE_METADATA, 0);
	want = yaml("{cells: ['', v], object: {kind: PartialObjectMetadata, "
		    "apiVersion: meta.k8s.io/v1, metadata: {}}}");
	assert_true(json_equal(row, want));
	json_decref(want);
	json_decref(row);
	json_decref(obj);
	json_decref(cols);
	table_columns_free(tc);
}

static void test_bad_columns(void **state)
{
	static const struct {
		const char *cols, *message;
	} rows[] = {
		{ "[{name: A, type: string}]", "printer column needs name, type and jsonPath" },
		{ "[{type: string, jsonPath: .a}]", "printer column needs name, type and jsonPath" },
		{ "[{name: A, jsonPath: .a}]", "printer column needs name, type and jsonPath" },
		{ "[{name: A, type: string, jsonPath: .a}, {name: B, type: string, jsonPath: '{.a}{.b}'}]",
		  "unrecognized column definition \"{.a}{.b}\"" },
		{ "[{name: A, type: string, jsonPath: '.a[?(@.x=~1)]'}]",
		  "unrecognized column definition \".a[?(@.x=~1)]\"" },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *cols = yaml(rows[i].cols);
		table_columns *tc = (table_columns *)0x1;
		ah_err err;

		assert_int_equal(table_columns_compile(cols, &tc, &err), -EINVAL);
		assert_ptr_equal(tc, (table_columns *)0x1);
		assert_int_equal(err.status, 422);
		assert_string_equal(err.message, rows[i].message);
		json_decref(cols);
	}
	table_columns_free(NULL);
}

/* The Agent CRD's printer columns, from config/crd/ (MESON_SOURCE_ROOT, or
 * the current directory and its parents). */
static json_t *agent_columns(void)
{
	static const char *const ups[] = { ".", "..", "../..", "../../..", "../../../.." };
	const char *root = getenv("MESON_SOURCE_ROOT");
	char path[PATH_MAX];
	json_t *docs = NULL, *cols = NULL;
	char *buf = NULL;
	size_t len, i;
	ah_err err;

	if (root && *root && strlen(root) < sizeof(path) - 64) {
		snprintf(path, sizeof(path), "%s/config/crd/agent-install.openshift.io_agents.yaml", root);
		util_read_file(path, &buf, &len);
	}
	for (i = 0; !buf && i < sizeof(ups) / sizeof(ups[0]); i++) {
		snprintf(path, sizeof(path), "%s/config/crd/agent-install.openshift.io_agents.yaml", ups[i]);
		if (util_read_file(path, &buf, &len) < 0)
			buf = NULL;
	}
	/* Meson compiles this file by a path relative to the build directory,
	 * where `meson test` runs it: the source root is that path minus
	 * tests/unit/kube/test-table.c. */
	if (!buf) {
		const char *self = __FILE__, *tail = strstr(self, "tests/unit/kube/");
		int plen = tail ? (int)(tail - self) : -1;

		if (plen >= 0 && plen < (int)sizeof(path) - 64) {
			snprintf(path, sizeof(path), "%.*sconfig/crd/agent-install.openshift.io_agents.yaml",
				 plen, self);
			if (util_read_file(path, &buf, &len) < 0)
				buf = NULL;
		}
	}
	if (!buf)
		return NULL;
	if (yaml_parse_all(buf, len, &docs, &err) == 0) {
		json_t *v0 = json_array_get(json_object_get(json_object_get(json_array_get(docs, 0), "spec"),
							    "versions"),
					    0);

		cols = json_incref(json_object_get(v0, "additionalPrinterColumns"));
		json_decref(docs);
	}
	free(buf);
	return cols;
}

static void test_agent_columns(void **state)
{
	json_t *cols = agent_columns(), *defs, *obj, *row, *want;
	table_columns *tc;
	ah_err err;

	if (!cols) {
		print_message("skipping: Agent CRD not available\n");
		return;
	}
	assert_int_equal(table_columns_compile(cols, &tc, &err), 0);
	defs = table_column_definitions(tc);
	assert_int_equal(json_array_size(defs), json_array_size(cols) + 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(defs, 0), "name")), "Name");
	obj = yaml("{metadata: {name: 5e2a2e6f-hostid}, spec: {approved: false, "
		   "clusterDeploymentName: {name: cd, namespace: ns}}, status: {role: master}}");
	row = table_row(tc, obj, TABLE_INCLUDE_NONE, 0);
	/* Name, Cluster, Approved, Role, then Stage and the hostnames unset. */
	want = yaml("[5e2a2e6f-hostid, cd, false, master]");
	{
		json_t *cells = json_object_get(row, "cells");
		size_t i;

		for (i = 0; i < json_array_size(want); i++)
			assert_true(json_equal(json_array_get(cells, i), json_array_get(want, i)));
		for (; i < json_array_size(cells); i++)
			assert_true(json_is_null(json_array_get(cells, i)));
	}
	json_decref(want);
	json_decref(row);
	json_decref(obj);
	json_decref(defs);
	json_decref(cols);
	table_columns_free(tc);
}

/* Computed cells of built-in kinds (kube-apiserver's Go printers). */
static void check_cells(const char *columns, const char *object, time_t now, const char *want_cells,
			const char *want_names)
{
	json_t *cols = yaml(columns), *obj = yaml(object), *row, *defs, *want = yaml(want_cells);
	json_t *names = yaml(want_names), *d;
	table_columns *tc;
	ah_err err;
	size_t i;
	char *got;

	assert_int_equal(table_columns_compile(cols, &tc, &err), 0);
	row = table_row(tc, obj, TABLE_INCLUDE_NONE, now);
	got = dump(json_object_get(row, "cells"));
	if (!json_equal(json_object_get(row, "cells"), want))
		fail_msg("cells %s, want %s", got, want_cells);
	free(got);
	defs = table_column_definitions(tc);
	assert_int_equal(json_array_size(defs), json_array_size(names));
	json_array_foreach(defs, i, d)
		assert_string_equal(json_string_value(json_object_get(d, "name")),
				    json_string_value(json_array_get(names, i)));
	json_decref(defs);
	json_decref(row);
	json_decref(obj);
	json_decref(cols);
	json_decref(want);
	json_decref(names);
	table_columns_free(tc);
}

static void test_computed_columns(void **state)
{
	time_t now;

	(void)state;
	assert_int_equal(util_parse_rfc3339("2026-01-01T01:00:00Z", &now), 0);
	/* ConfigMap DATA counts data and binaryData entries. */
	check_cells("[{name: Data, type: string, jsonPath: .data, x-agenthub-compute: count}]",
		    "{metadata: {name: c}, data: {a: '1', b: '2'}, binaryData: {z: AA==}}", now,
		    "[c, 3]", "[Name, Data]");
	check_cells("[{name: Data, type: string, jsonPath: .data, x-agenthub-compute: count}]",
		    "{metadata: {name: c}}", now, "[c, 0]", "[Name, Data]");
	/* Events: no leading Name column (it comes last, computed), OBJECT as
	 * lower-case kind/name, LAST SEEN falling back to firstTimestamp, then
	 * eventTime; the series' count and time win; the message trimmed. */
	{
		const char *cols =
			"[{name: Last Seen, type: string, jsonPath: .lastTimestamp, x-agenthub-compute: event-last-seen},"
			" {name: Object, type: string, jsonPath: .involvedObject, x-agenthub-compute: event-object},"
			" {name: Source, type: string, jsonPath: .source, x-agenthub-compute: event-source},"
			" {name: Message, type: string, jsonPath: .message, x-agenthub-compute: event-message},"
			" {name: First Seen, type: string, jsonPath: .firstTimestamp, x-agenthub-compute: event-first-seen},"
			" {name: Count, type: string, jsonPath: .count, x-agenthub-compute: event-count},"
			" {name: Name, type: string, jsonPath: .metadata.name, x-agenthub-compute: name}]";
		const char *names = "[Last Seen, Object, Source, Message, First Seen, Count, Name]";

		check_cells(cols,
			    "{metadata: {name: e1}, involvedObject: {kind: ConfigMap, name: cm}, "
			    "source: {component: kubelet, host: n1}, message: \"  hi there \\n\", "
			    "firstTimestamp: '2026-01-01T00:00:00Z', lastTimestamp: '2026-01-01T00:59:00Z', count: 4}",
			    now, "['60s', configmap/cm, 'kubelet, n1', hi there, 60m, 4, e1]", names);
		check_cells(cols,
			    "{metadata: {name: e2}, involvedObject: {kind: Agent, name: a}, "
			    "reportingComponent: ctl, eventTime: '2026-01-01T00:30:00.000000Z'}",
			    now, "[30m, agent/a, ctl, '', 30m, 1, e2]", names);
		check_cells(cols,
			    "{metadata: {name: e3}, involvedObject: {kind: Agent, name: a}, "
			    "eventTime: '2026-01-01T00:00:00.000000Z', "
			    "series: {count: 9, lastObservedTime: '2026-01-01T00:58:00.000000Z'}}",
			    now, "[2m, agent/a, '', '', 60m, 9, e3]", names);
		check_cells(cols, "{metadata: {name: e4}}", now,
			    "[<unknown>, /, '', '', <unknown>, 1, e4]", names);
	}
	/* ResourceQuota REQUEST and LIMIT from status, sorted. */
	check_cells("[{name: Request, type: string, jsonPath: .status.hard, x-agenthub-compute: quota-request},"
		    " {name: Limit, type: string, jsonPath: .status.hard, x-agenthub-compute: quota-limit}]",
		    "{metadata: {name: q}, status: {hard: {pods: '10', cpu: '2', limits.cpu: '4'}, "
		    "used: {pods: '1', limits.cpu: '0'}}}", now,
		    "[q, 'cpu: 0/2, pods: 1/10', 'limits.cpu: 0/4']", "[Name, Request, Limit]");
	/* LimitRange CREATED AT: the timestamp itself. */
	check_cells("[{name: Created At, type: date, jsonPath: .metadata.creationTimestamp, x-agenthub-compute: created-at}]",
		    "{metadata: {name: l, creationTimestamp: '2026-01-01T00:00:00Z'}}", now,
		    "[l, '2026-01-01T00:00:00Z']", "[Name, Created At]");
	/* An unknown computation is refused. */
	{
		json_t *cols = yaml("[{name: X, type: string, jsonPath: .x, x-agenthub-compute: nope}]");
		table_columns *tc = NULL;
		ah_err err;

		assert_true(table_columns_compile(cols, &tc, &err) < 0);
		assert_int_equal(err.status, 422);
		json_decref(cols);
	}
}

/* A prepared row finished at any time is exactly table_row's JSON text. */
static void test_prepared_rows(void **state)
{
	json_t *cols = yaml(columns_yaml), *obj = yaml(object_yaml);
	const enum table_include inc[] = { TABLE_INCLUDE_NONE, TABLE_INCLUDE_METADATA };
	table_columns *tc, *tc0;
	ah_err err;
	time_t created;

	(void)state;
	assert_int_equal(table_columns_compile(cols, &tc, &err), 0);
	assert_int_equal(table_columns_compile(NULL, &tc0, &err), 0);
	assert_int_equal(util_parse_rfc3339("2025-10-15T17:10:55Z", &created), 0);
	for (size_t i = 0; i < 2; i++) {
		table_row_prep *p = table_row_prepare(tc, obj, inc[i]), *p0 = table_row_prepare(tc0, obj, inc[i]);
		const time_t at[] = { created + 5 * MIN + 30, created + 3 * HOUR + 12 * MIN + 5 };

		assert_non_null(p);
		assert_non_null(p0);
		assert_true(table_row_prep_bytes(p) > 0);
		for (size_t j = 0; j < 2; j++) {
			json_t *row = table_row(tc, obj, inc[i], at[j]), *row0 = table_row(tc0, obj, inc[i], at[j]);
			char *want = dump(row), *want0 = dump(row0);
			strbuf sb = STRBUF_INIT, sb0 = STRBUF_INIT;

			assert_int_equal(table_row_finish(tc, p, at[j], &sb), 0);
			assert_int_equal(table_row_finish(tc0, p0, at[j], &sb0), 0);
			assert_string_equal(sb.buf, want);
			assert_string_equal(sb0.buf, want0);
			strbuf_release(&sb);
			strbuf_release(&sb0);
			free(want);
			free(want0);
			json_decref(row);
			json_decref(row0);
		}
		table_row_prep_free(p);
		table_row_prep_free(p0);
	}
	/* The whole object is not kept: the caller builds that row. */
	assert_null(table_row_prepare(tc, obj, TABLE_INCLUDE_OBJECT));
	table_columns_free(tc);
	table_columns_free(tc0);
	json_decref(cols);
	json_decref(obj);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_human_duration),
		cmocka_unit_test(test_default_columns),
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_row_object),
		cmocka_unit_test(test_bad_columns),
		cmocka_unit_test(test_agent_columns),
		cmocka_unit_test(test_computed_columns),
		cmocka_unit_test(test_prepared_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
