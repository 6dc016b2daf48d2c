/* Tests for src/kube/schema.c: pruning, defaulting, validation messages, the
 * RE2 translation, and the project's own CRDs from config/crd/ (rows skip
 * when those files are missing).  Schemas and objects are written as YAML
 * flow text to keep the tables readable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "base/yamljson.h"
#include "kube/schema.h"

static json_t *yaml(const char *text)
{
	json_t *docs, *doc;
	ah_err err;

	if (yaml_parse_all(text, strlen(text), &docs, &err) < 0)
		fail_msg("bad test YAML %s: %s", text, err.message);
	doc = json_incref(json_array_get(docs, 0));
	json_decref(docs);
	if (!doc)
		fail_msg("empty test YAML %s", text);
	return doc;
}

static char *dump(const json_t *v)
{
	return json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
}

/* The spec schema of a row, inside a CRD-like root. */
static json_t *root_schema(const char *spec)
{
	char buf[4096];

	snprintf(buf, sizeof(buf),
		 "{type: object, properties: {apiVersion: {type: string}, kind: {type: string}, "
		 "metadata: {type: object}, spec: %s}}",
		 spec);
	return yaml(buf);
}

static json_t *root_object(const char *spec)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "{apiVersion: test.io/v1, kind: Thing, metadata: {name: t}, spec: %s}",
		 spec);
	return yaml(buf);
}

struct want {
	const char *field, *reason, *message;
};

static void check_causes(const char *row, const json_t *causes, int n, const struct want *want,
			 size_t nwant)
{
	size_t count = 0, i;

	while (count < nwant && want[count].field)
		count++;
	if ((size_t)n != json_array_size(causes) || (size_t)n != count) {
		char *d = dump(causes);

		fail_msg("row \"%s\": %d causes (%zu in array), want %zu: %s", row, n,
			 json_array_size(causes), count, d);
	}
	for (i = 0; i < count; i++) {
		const json_t *c = json_array_get(causes, i);
		const char *f = json_string_value(json_object_get(c, "field"));
		const char *r = json_string_value(json_object_get(c, "reason"));
		const char *m = json_string_value(json_object_get(c, "message"));

		if (!f || !r || !m || strcmp(f, want[i].field) || strcmp(r, want[i].reason) ||
		    strcmp(m, want[i].message))
			fail_msg("row \"%s\" cause %zu:\n got  %s / %s / %s\n want %s / %s / %s", row, i,
				 f, r, m, want[i].field, want[i].reason, want[i].message);
	}
}

/* ------------------------------------------------------------------------ */

#define MAC "^([0-9A-Fa-f]{2}[:]){5}([0-9A-Fa-f]{2})$"
#define TI "FieldValueTypeInvalid"
#define INV "FieldValueInvalid"

static const struct vrow {
	const char *name, *schema, *spec;
	struct want want[5];
} vrows[] = {
	{ "boolean given a string", "{type: object, properties: {approved: {type: boolean}}}",
	  "{approved: 'yes'}",
	  { { "spec.approved", TI,
	      "Invalid value: \"string\": spec.approved in body must be of type boolean" } } },
	{ "integer given a float", "{type: object, properties: {n: {type: integer}}}", "{n: 1.5}",
	  { { "spec.n", TI, "Invalid value: \"number\": spec.n in body must be of type integer" } } },
	{ "integer accepts an integral float", "{type: object, properties: {n: {type: integer}}}",
	  "{n: 2.0}", { { 0 } } },
	{ "number accepts an integer", "{type: object, properties: {n: {type: number}}}", "{n: 2}",
	  { { 0 } } },
	{ "string given an object", "{type: object, properties: {s: {type: string}}}", "{s: {a: 1}}",
	  { { "spec.s", TI, "Invalid value: \"object\": spec.s in body must be of type string" } } },
	{ "array given an object", "{type: object, properties: {l: {type: array, items: {type: integer}}}}",
	  "{l: {a: 1}}",
	  { { "spec.l", TI, "Invalid value: \"object\": spec.l in body must be of type array" } } },
	{ "object given an array", "{type: object, properties: {o: {type: object}}}", "{o: [1]}",
	  { { "spec.o", TI, "Invalid value: \"array\": spec.o in body must be of type object" } } },
	{ "null in a non-nullable field", "{type: object, properties: {s: {type: string}}}",
	  "{s: null}",
	  { { "spec.s", TI, "Invalid value: \"null\": spec.s in body must be of type string" } } },
	{ "nullable accepts null", "{type: object, properties: {s: {type: string, nullable: true}}}",
	  "{s: null}", { { 0 } } },
	{ "nullable enum accepts null",
	  "{type: object, properties: {s: {type: string, nullable: true, enum: [a]}}}", "{s: null}",
	  { { 0 } } },
	{ "int-or-string accepts both",
	  "{type: object, properties: {a: {x-kubernetes-int-or-string: true}, "
	  "b: {x-kubernetes-int-or-string: true}}}",
	  "{a: 5, b: '50%'}", { { 0 } } },
	{ "int-or-string rejects a boolean",
	  "{type: object, properties: {a: {x-kubernetes-int-or-string: true}}}", "{a: true}",
	  { { "spec.a", TI,
	      "Invalid value: \"boolean\": spec.a in body must be of type integer,string" } } },
	{ "int-or-string with anyOf",
	  "{type: object, properties: {a: {x-kubernetes-int-or-string: true, "
	  "anyOf: [{type: integer}, {type: string}]}}}",
	  "{a: true}",
	  { { "spec.a", TI,
	      "Invalid value: \"boolean\": spec.a in body must be of type integer,string" },
	    { "<nil>", INV,
	      "Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)" },
	    { "spec.a", TI, "Invalid value: \"boolean\": spec.a in body must be of type integer" } } },
	{ "anyOf satisfied",
	  "{type: object, properties: {a: {x-kubernetes-int-or-string: true, "
	  "anyOf: [{type: integer}, {type: string}]}}}",
	  "{a: 3}", { { 0 } } },
	{ "required", "{type: object, required: [pullSecretRef], properties: {pullSecretRef: {type: object}}}",
	  "{}", { { "spec.pullSecretRef", "FieldValueRequired", "Required value" } } },
	{ "enum of strings",
	  "{type: object, properties: {ipxeScriptType: {type: string, "
	  "enum: ['', DiscoveryImageAlways, BootOrderControl]}}}",
	  "{ipxeScriptType: x}",
	  { { "spec.ipxeScriptType", "FieldValueNotSupported",
	      "Unsupported value: \"x\": supported values: \"\", \"DiscoveryImageAlways\", "
	      "\"BootOrderControl\"" } } },
	{ "enum value quoted as Go does",
	  "{type: object, properties: {s: {type: string, enum: [a]}}}", "{s: \"q\\\"\\n\\u00e9\"}",
	  { { "spec.s", "FieldValueNotSupported",
	      "Unsupported value: \"q\\\"\\n\xc3\xa9\": supported values: \"a\"" } } },
	{ "enum of integers", "{type: object, properties: {n: {type: integer, enum: [1, 2]}}}",
	  "{n: 3}",
	  { { "spec.n", "FieldValueNotSupported", "Unsupported value: 3: supported values: \"1\", \"2\"" } } },
	{ "enum matches numbers by value", "{type: object, properties: {n: {type: number, enum: [1, 2.5]}}}",
	  "{n: 1.0}", { { 0 } } },
	{ "type error and enum both reported",
	  "{type: object, properties: {s: {type: string, enum: [a, b]}}}", "{s: 5}",
	  { { "spec.s", TI, "Invalid value: \"integer\": spec.s in body must be of type string" },
	    { "spec.s", "FieldValueNotSupported",
	      "Unsupported value: 5: supported values: \"a\", \"b\"" } } },
	{ "pattern inside an array item",
	  "{type: object, properties: {interfaces: {type: array, items: {type: object, "
	  "properties: {macAddress: {type: string, pattern: '" MAC "'}}}}}}",
	  "{interfaces: [{macAddress: '52:54:00:aa:bb:cc'}, {macAddress: 'AA:BB:CC:DD:EE:FF'}, "
	  "{macAddress: zz}]}",
	  { { "spec.interfaces[2].macAddress", INV,
	      "Invalid value: \"zz\": spec.interfaces[2].macAddress in body should match '" MAC "'" } } },
	{ "minimum", "{type: object, properties: {d: {type: integer, minimum: 0}}}", "{d: -1}",
	  { { "spec.d", INV, "Invalid value: -1: spec.d in body should be greater than or equal to 0" } } },
	{ "exclusiveMinimum",
	  "{type: object, properties: {d: {type: integer, minimum: 0, exclusiveMinimum: true}}}",
	  "{d: 0}", { { "spec.d", INV, "Invalid value: 0: spec.d in body should be greater than 0" } } },
	{ "maximum", "{type: object, properties: {d: {type: integer, maximum: 10}}}", "{d: 11}",
	  { { "spec.d", INV, "Invalid value: 11: spec.d in body should be less than or equal to 10" } } },
	{ "exclusiveMaximum",
	  "{type: object, properties: {d: {type: integer, maximum: 10, exclusiveMaximum: true}}}",
	  "{d: 10}", { { "spec.d", INV, "Invalid value: 10: spec.d in body should be less than 10" } } },
	{ "float minimum", "{type: object, properties: {f: {type: number, minimum: 0.5}}}",
	  "{f: 0.25}",
	  { { "spec.f", INV,
	      "Invalid value: 0.25: spec.f in body should be greater than or equal to 0.5" } } },
	{ "floats print as Go's %v", "{type: object, properties: {f: {type: number, maximum: 1000000}}}",
	  "{f: 2500000.5}",
	  { { "spec.f", INV,
	      "Invalid value: 2.5000005e+06: spec.f in body should be less than or equal to 1e+06" } } },
	{ "integer against a fractional minimum (truncated, as Go)",
	  "{type: object, properties: {a: {type: integer, minimum: 1.5}, b: {type: integer, minimum: 1.5}}}",
	  "{a: 1, b: 0}",
	  { { "spec.b", INV, "Invalid value: 0: spec.b in body should be greater than or equal to 1" } } },
	{ "multipleOf", "{type: object, properties: {d: {type: integer, multipleOf: 5}}}", "{d: 7}",
	  { { "spec.d", INV, "Invalid value: 7: spec.d in body should be a multiple of 5" } } },
	{ "float multipleOf",
	  "{type: object, properties: {a: {type: number, multipleOf: 0.5}, b: {type: number, multipleOf: 0.5}}}",
	  "{a: 1.5, b: 0.75}",
	  { { "spec.b", INV, "Invalid value: 0.75: spec.b in body should be a multiple of 0.5" } } },
	{ "minLength", "{type: object, properties: {s: {type: string, minLength: 3}}}", "{s: ab}",
	  { { "spec.s", INV, "Invalid value: \"ab\": spec.s in body should be at least 3 chars long" } } },
	{ "maxLength", "{type: object, properties: {s: {type: string, maxLength: 3}}}", "{s: abcd}",
	  { { "spec.s", "FieldValueTooLong", "Too long: may not be longer than 3" } } },
	{ "maxLength counts runes", "{type: object, properties: {s: {type: string, maxLength: 3}}}",
	  "{s: \"\\u00e9\\u00e9\\u00e9\"}", { { 0 } } },
	{ "maxLength stops the string checks",
	  "{type: object, properties: {s: {type: string, maxLength: 2, pattern: '^a+$'}}}", "{s: bbb}",
	  { { "spec.s", "FieldValueTooLong", "Too long: may not be longer than 2" } } },
	{ "minItems",
	  "{type: object, properties: {l: {type: array, minItems: 2, items: {type: string}}}}",
	  "{l: [a]}",
	  { { "spec.l", INV, "Invalid value: 1: spec.l in body should have at least 2 items" } } },
	{ "maxItems",
	  "{type: object, properties: {apiVIPs: {type: array, maxItems: 2, items: {type: string}}}}",
	  "{apiVIPs: [a, b, c]}",
	  { { "spec.apiVIPs", "FieldValueTooMany", "Too many: 3: must have at most 2 items" } } },
	{ "uniqueItems",
	  "{type: object, properties: {l: {type: array, uniqueItems: true, items: {type: integer}}}}",
	  "{l: [1, 2, 1]}",
	  { { "spec.l", INV, "Invalid value: \"\": spec.l in body shouldn't contain duplicates" } } },
	{ "uniqueItems keeps integers and floats apart",
	  "{type: object, properties: {l: {type: array, uniqueItems: true}}}", "{l: [1, 1.0, a]}",
	  { { 0 } } },
	{ "items validated with their index",
	  "{type: object, properties: {l: {type: array, items: {type: integer}}}}", "{l: [1, x]}",
	  { { "spec.l[1]", TI, "Invalid value: \"string\": spec.l[1] in body must be of type integer" } } },
	{ "minProperties",
	  "{type: object, properties: {m: {type: object, minProperties: 1, "
	  "additionalProperties: {type: string}}}}",
	  "{m: {}}",
	  { { "spec.m", INV, "Invalid value: 0: spec.m in body should have at least 1 properties" } } },
	{ "maxProperties stops the object checks",
	  "{type: object, properties: {m: {type: object, maxProperties: 1, "
	  "additionalProperties: {type: string}}}}",
	  "{m: {a: x, b: 2}}",
	  { { "spec.m", "FieldValueTooMany", "Too many: 2: must have at most 1 items" } } },
	{ "additionalProperties values",
	  "{type: object, properties: {labels: {type: object, additionalProperties: {type: string}}}}",
	  "{labels: {a: x, b: 1}}",
	  { { "spec.labels.b", TI,
	      "Invalid value: \"integer\": spec.labels.b in body must be of type string" } } },
	{ "map key with dots in the path",
	  "{type: object, properties: {m: {type: object, additionalProperties: {type: object, "
	  "properties: {n: {type: integer}}}}}}",
	  "{m: {'a.b': {n: x}}}",
	  { { "spec.m.a.b.n", TI,
	      "Invalid value: \"string\": spec.m.a.b.n in body must be of type integer" } } },
	{ "additionalProperties false",
	  "{type: object, properties: {m: {type: object, properties: {a: {type: string}}, "
	  "additionalProperties: false}}}",
	  "{m: {a: x, z: 1}}",
	  { { "spec.m", INV, "Invalid value: \"z\": spec.m.z in body is a forbidden property" } } },
	{ "format date-time",
	  "{type: object, properties: {t: {type: string, format: date-time}}}", "{t: yesterday}",
	  { { "spec.t", TI,
	      "Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\"" } } },
	{ "date-time forms",
	  "{type: object, properties: {a: {type: string, format: date-time}, "
	  "b: {type: string, format: date-time}, c: {type: string, format: date-time}, "
	  "d: {type: string, format: date-time}, e: {type: string, format: date-time}, "
	  "f: {type: string, format: date-time}}}",
	  "{a: '2025-10-15T17:10:55Z', b: '2025-10-15t17:10:55.5+02:00', c: '2024-02-29T00:00:00Z', "
	  "d: '2025-02-29T00:00:00Z', e: '2025-10-15T24:00:00Z', f: '2025-10-15 17:10:55Z'}",
	  { { "spec.d", TI,
	      "Invalid value: \"2025-02-29T00:00:00Z\": spec.d in body must be of type date-time: "
	      "\"2025-02-29T00:00:00Z\"" },
	    { "spec.e", TI,
	      "Invalid value: \"2025-10-15T24:00:00Z\": spec.e in body must be of type date-time: "
	      "\"2025-10-15T24:00:00Z\"" },
	    { "spec.f", TI,
	      "Invalid value: \"2025-10-15 17:10:55Z\": spec.f in body must be of type date-time: "
	      "\"2025-10-15 17:10:55Z\"" } } },
	{ "format date", "{type: object, properties: {d: {type: string, format: date}}}",
	  "{d: '2025-13-01'}",
	  { { "spec.d", TI,
	      "Invalid value: \"2025-13-01\": spec.d in body must be of type date: \"2025-13-01\"" } } },
	{ "format byte",
	  "{type: object, properties: {a: {type: string, format: byte}, b: {type: string, format: byte}}}",
	  "{a: YWJj, b: abc}",
	  { { "spec.b", TI, "Invalid value: \"abc\": spec.b in body must be of type byte: \"abc\"" } } },
	{ "formats ipv4 ipv6 cidr uuid",
	  "{type: object, properties: {a: {type: string, format: ipv4}, b: {type: string, format: ipv6}, "
	  "c: {type: string, format: cidr}, d: {type: string, format: uuid}, "
	  "e: {type: string, format: ipv4}, f: {type: string, format: cidr}}}",
	  "{a: 10.0.0.300, b: '10.0.0.1', c: '10.0.0.0/33', d: not-a-uuid, e: 10.1.2.3, "
	  "f: 'fd00::/64'}",
	  { { "spec.a", TI, "Invalid value: \"10.0.0.300\": spec.a in body must be of type ipv4: \"10.0.0.300\"" },
	    { "spec.b", TI, "Invalid value: \"10.0.0.1\": spec.b in body must be of type ipv6: \"10.0.0.1\"" },
	    { "spec.c", TI, "Invalid value: \"10.0.0.0/33\": spec.c in body must be of type cidr: \"10.0.0.0/33\"" },
	    { "spec.d", TI, "Invalid value: \"not-a-uuid\": spec.d in body must be of type uuid: \"not-a-uuid\"" } } },
	{ "int32 and int64 formats are not range-checked",
	  "{type: object, properties: {n: {type: integer, format: int32}}}", "{n: 9999999999}",
	  { { 0 } } },
	{ "integer in a date-time field",
	  "{type: object, properties: {t: {type: string, format: date-time}}}", "{t: 5}",
	  { { "spec.t", TI, "Invalid value: \"integer\": spec.t in body must be of type string" } } },
	{ "list-type set",
	  "{type: object, properties: {l: {type: array, x-kubernetes-list-type: set, "
	  "items: {type: string}}}}",
	  "{l: [a, b, a, a, b]}",
	  { { "spec.l[2]", "FieldValueDuplicate", "Duplicate value: \"a\"" },
	    { "spec.l[4]", "FieldValueDuplicate", "Duplicate value: \"b\"" } } },
	{ "list-type map, one key",
	  "{type: object, properties: {ifs: {type: array, x-kubernetes-list-type: map, "
	  "x-kubernetes-list-map-keys: [name], items: {type: object, properties: "
	  "{name: {type: string}, mac: {type: string}}}}}}",
	  "{ifs: [{name: eth0, mac: a}, {name: eth1}, {name: eth0, mac: b}]}",
	  { { "spec.ifs[2]", "FieldValueDuplicate",
	      "Duplicate value: map[string]interface {}{\"name\":\"eth0\"}" } } },
	{ "list-type map, two keys",
	  "{type: object, properties: {ports: {type: array, x-kubernetes-list-type: map, "
	  "x-kubernetes-list-map-keys: [port, protocol], items: {type: object, properties: "
	  "{port: {type: integer}, protocol: {type: string}}}}}}",
	  "{ports: [{port: 80, protocol: TCP}, {port: 80, protocol: UDP}, {port: 80, protocol: TCP}]}",
	  { { "spec.ports[2]", "FieldValueDuplicate",
	      "Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}" } } },
	{ "list-type map, key missing",
	  "{type: object, properties: {ifs: {type: array, x-kubernetes-list-type: map, "
	  "x-kubernetes-list-map-keys: [name], items: {type: object, properties: "
	  "{name: {type: string}, mac: {type: string}}}}}}",
	  "{ifs: [{mac: a}, {mac: b}]}",
	  { { "spec.ifs[1]", "FieldValueDuplicate", "Duplicate value: map[string]interface {}{}" } } },
	{ "list-type map of non-objects",
	  "{type: object, properties: {ifs: {type: array, x-kubernetes-list-type: map, "
	  "x-kubernetes-list-map-keys: [name], items: {type: object}}}}",
	  "{ifs: [a]}",
	  { { "spec.ifs[0]", TI, "Invalid value: \"string\": spec.ifs[0] in body must be of type object" },
	    { "spec.ifs[0]", INV,
	      "Invalid value: \"a\": must be an object for an array of list-type map" } } },
	{ "list-type inside a map value",
	  "{type: object, properties: {m: {type: object, additionalProperties: {type: array, "
	  "x-kubernetes-list-type: set, items: {type: integer}}}}}",
	  "{m: {k: [1, 1]}}", { { "spec.m[k][1]", "FieldValueDuplicate", "Duplicate value: 1" } } },
	{ "several causes, in order",
	  "{type: object, required: [name], properties: {approved: {type: boolean}, "
	  "count: {type: integer, minimum: 1}, name: {type: string}}}",
	  "{approved: 1, count: 0}",
	  { { "spec.approved", TI,
	      "Invalid value: \"integer\": spec.approved in body must be of type boolean" },
	    { "spec.count", INV,
	      "Invalid value: 0: spec.count in body should be greater than or equal to 1" },
	    { "spec.name", "FieldValueRequired", "Required value" } } },
	{ "oneOf, none valid", "{type: object, properties: {x: {oneOf: [{type: string}, {type: integer}]}}}",
	  "{x: true}",
	  { { "<nil>", INV,
	      "Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). "
	      "Found none valid" },
	    { "spec.x", TI, "Invalid value: \"boolean\": spec.x in body must be of type string" } } },
	{ "oneOf, two valid", "{type: object, properties: {x: {oneOf: [{minimum: 1}, {maximum: 10}]}}}",
	  "{x: 5}",
	  { { "<nil>", INV,
	      "Invalid value: \"\": \"spec.x\" must validate one and only one schema (oneOf). "
	      "Found 2 valid alternatives" } } },
	{ "allOf", "{type: object, properties: {x: {allOf: [{minimum: 1}, {maximum: 10}]}}}",
	  "{x: 20}",
	  { { "spec.x", INV, "Invalid value: 20: spec.x in body should be less than or equal to 10" },
	    { "<nil>", INV, "Invalid value: \"\": \"spec.x\" must validate all the schemas (allOf)" } } },
	{ "not", "{type: object, properties: {x: {type: string, not: {enum: [forbidden]}}}}",
	  "{x: forbidden}",
	  { { "<nil>", INV, "Invalid value: \"\": \"spec.x\" must not validate the schema (not)" } } },
	{ "preserve-unknown-fields still validates declared fields",
	  "{type: object, x-kubernetes-preserve-unknown-fields: true, properties: {n: {type: integer}}}",
	  "{n: x, other: 1}",
	  { { "spec.n", TI, "Invalid value: \"string\": spec.n in body must be of type integer" } } },
};

static void test_validate_rows(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(vrows) / sizeof(vrows[0]); i++) {
		json_t *schema = root_schema(vrows[i].schema), *obj = root_object(vrows[i].spec);
		json_t *causes = json_array();
		int n = schema_validate(schema, obj, causes);

		check_causes(vrows[i].name, causes, n, vrows[i].want,
			     sizeof(vrows[i].want) / sizeof(vrows[i].want[0]));
		/* Counting without an array gives the same number. */
		assert_int_equal(schema_validate(schema, obj, NULL), n);
		json_decref(causes);
		json_decref(schema);
		json_decref(obj);
	}
}

static void test_validate_root(void **state)
{
	/* metadata is the kube layer's: a schema that contradicts it is not
	 * applied, and neither is a NULL schema. */
	json_t *schema = yaml("{type: object, properties: {metadata: {type: string}, "
			      "spec: {type: object}}}");
	json_t *obj = yaml("{metadata: {name: x}, spec: {}}");
	json_t *causes = json_array();

	assert_int_equal(schema_validate(schema, obj, causes), 0);
	assert_int_equal(schema_validate(NULL, obj, causes), 0);
	assert_int_equal(json_array_size(causes), 0);
	json_decref(causes);
	json_decref(schema);
	json_decref(obj);
}

/* ------------------------------------------------------------------------ */

static const struct prow {
	const char *name, *schema, *in, *out;
	const char *pruned[4];
} prows[] = {
	{ "unknown fields, metadata kept",
	  "{type: object, properties: {spec: {type: object, properties: {a: {type: string}}}}}",
	  "{apiVersion: v1, kind: K, metadata: {name: x, foo: 1}, spec: {a: x, b: 1}, status: {c: 1}}",
	  "{apiVersion: v1, kind: K, metadata: {name: x, foo: 1}, spec: {a: x}}",
	  { "spec.b", "status" } },
	{ "inside array items",
	  "{type: object, properties: {spec: {type: object, properties: {list: {type: array, "
	  "items: {type: object, properties: {a: {type: integer}}}}}}}}",
	  "{spec: {list: [{a: 1, bar: 2}, {bar: 3}]}}", "{spec: {list: [{a: 1}, {}]}}",
	  { "spec.list[0].bar", "spec.list[1].bar" } },
	{ "preserve-unknown-fields keeps unknown, prunes declared",
	  "{type: object, properties: {spec: {type: object, properties: {p: {type: object, "
	  "x-kubernetes-preserve-unknown-fields: true, properties: {a: {type: object, "
	  "properties: {b: {type: integer}}}}}}}}}",
	  "{spec: {p: {x: 1, a: {b: 1, c: 2}}}}", "{spec: {p: {x: 1, a: {b: 1}}}}",
	  { "spec.p.a.c" } },
	{ "additionalProperties schema applies to map values",
	  "{type: object, properties: {spec: {type: object, properties: {m: {type: object, "
	  "additionalProperties: {type: object, properties: {v: {type: string}}}}}}}}",
	  "{spec: {m: {k1: {v: a, extra: 1}, k2: {}}}}", "{spec: {m: {k1: {v: a}, k2: {}}}}",
	  { "spec.m.k1.extra" } },
	{ "additionalProperties true keeps values whole",
	  "{type: object, properties: {spec: {type: object, properties: {m: {type: object, "
	  "additionalProperties: true}}}}}",
	  "{spec: {m: {k: {deep: [1, {x: 2}]}}}}", "{spec: {m: {k: {deep: [1, {x: 2}]}}}}", { 0 } },
	{ "embedded resource keeps apiVersion, kind, metadata",
	  "{type: object, properties: {spec: {type: object, properties: {template: {type: object, "
	  "x-kubernetes-embedded-resource: true, properties: {spec: {type: object, "
	  "properties: {n: {type: integer}}}}}}}}}",
	  "{spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p, any: 1}, "
	  "spec: {n: 1, m: 2}, other: 1}}}",
	  "{spec: {template: {apiVersion: v1, kind: Pod, metadata: {name: p, any: 1}, spec: {n: 1}}}}",
	  { "spec.template.spec.m", "spec.template.other" } },
	{ "embedded resource with a non-string kind",
	  "{type: object, properties: {spec: {type: object, properties: {template: {type: object, "
	  "x-kubernetes-embedded-resource: true}}}}}",
	  "{spec: {template: {kind: 5}}}", "{spec: {template: {}}}", { "spec.template.kind" } },
	{ "nulls: non-nullable without default dropped, not reported",
	  "{type: object, properties: {spec: {type: object, properties: {a: {type: string}, "
	  "b: {type: string, nullable: true}, c: {type: string, default: x}, "
	  "d: {type: object, additionalProperties: {type: string}}}}}}",
	  "{metadata: null, spec: {a: null, b: null, c: null, d: {k: null}}}",
	  "{metadata: null, spec: {b: null, c: null, d: {}}}", { 0 } },
	{ "root preserve-unknown-fields",
	  "{type: object, x-kubernetes-preserve-unknown-fields: true}",
	  "{spec: {anything: [1, {x: 2}]}}", "{spec: {anything: [1, {x: 2}]}}", { 0 } },
	{ "array without an items schema",
	  "{type: object, properties: {spec: {type: object, properties: {l: {type: array}}}}}",
	  "{spec: {l: [{a: 1}, 2]}}", "{spec: {l: [{}, 2]}}", { "spec.l[0].a" } },
	{ "object without properties",
	  "{type: object, properties: {spec: {type: object, properties: {o: {type: object}}}}}",
	  "{spec: {o: {a: 1, b: {c: 2}}}}", "{spec: {o: {}}}", { "spec.o.a", "spec.o.b" } },
};

static void test_prune_rows(void **state)
{
	size_t i, j;

	for (i = 0; i < sizeof(prows) / sizeof(prows[0]); i++) {
		json_t *schema = yaml(prows[i].schema), *obj = yaml(prows[i].in);
		json_t *want = yaml(prows[i].out), *pruned = json_array();
		size_t np = 0;

		schema_prune(schema, obj, pruned);
		if (!json_equal(obj, want)) {
			char *g = dump(obj);

			fail_msg("row \"%s\": got %s", prows[i].name, g);
		}
		while (np < 4 && prows[i].pruned[np])
			np++;
		if (json_array_size(pruned) != np) {
			char *g = dump(pruned);

			fail_msg("row \"%s\": pruned %s", prows[i].name, g);
		}
		for (j = 0; j < np; j++)
			assert_string_equal(json_string_value(json_array_get(pruned, j)),
					    prows[i].pruned[j]);
		/* Without a report array the result is the same. */
		json_decref(obj);
		obj = yaml(prows[i].in);
		schema_prune(schema, obj, NULL);
		assert_true(json_equal(obj, want));
		json_decref(schema);
		json_decref(obj);
		json_decref(want);
		json_decref(pruned);
	}
}

static void test_prune_null_schema(void **state)
{
	json_t *obj = yaml("{spec: {a: 1}}"), *copy = json_deep_copy(obj);

	schema_prune(NULL, obj, NULL);
	schema_default(NULL, obj);
	assert_true(json_equal(obj, copy));
	json_decref(obj);
	json_decref(copy);
}

/* ------------------------------------------------------------------------ */

static const struct drow {
	const char *name, *spec_schema, *in, *out;
} drows[] = {
	{ "absent properties",
	  "{type: object, properties: {a: {type: string, default: x}, b: {type: integer, default: 3}}}",
	  "{spec: {b: 1}}", "{spec: {a: x, b: 1}}" },
	{ "inside array items",
	  "{type: object, properties: {l: {type: array, items: {type: object, properties: "
	  "{op: {type: string, default: append}}}}}}",
	  "{spec: {l: [{}, {op: delete}]}}", "{spec: {l: [{op: append}, {op: delete}]}}" },
	{ "inside map values",
	  "{type: object, properties: {m: {type: object, additionalProperties: {type: object, "
	  "properties: {w: {type: integer, default: 1}}}}}}",
	  "{spec: {m: {a: {}, b: {w: 5}}}}", "{spec: {m: {a: {w: 1}, b: {w: 5}}}}" },
	{ "inside a default just applied",
	  "{type: object, properties: {o: {type: object, default: {}, properties: "
	  "{x: {type: string, default: y}, l: {type: array, default: [{}], items: {type: object, "
	  "properties: {z: {type: integer, default: 0}}}}}}}}",
	  "{spec: {}}", "{spec: {o: {x: y, l: [{z: 0}]}}}" },
	{ "non-nullable null replaced", "{type: object, properties: {c: {type: string, default: x}}}",
	  "{spec: {c: null}}", "{spec: {c: x}}" },
	{ "nullable null kept",
	  "{type: object, properties: {c: {type: string, nullable: true, default: x}}}",
	  "{spec: {c: null}}", "{spec: {c: null}}" },
	{ "null array item replaced",
	  "{type: object, properties: {l: {type: array, items: {type: string, default: z}}}}",
	  "{spec: {l: [a, null]}}", "{spec: {l: [a, z]}}" },
	{ "null map value replaced",
	  "{type: object, properties: {m: {type: object, additionalProperties: {type: string, default: d}}}}",
	  "{spec: {m: {a: null, b: x}}}", "{spec: {m: {a: d, b: x}}}" },
	{ "no parent, no default", "{type: object, properties: {a: {type: string, default: x}}}",
	  "{metadata: {name: n}}", "{metadata: {name: n}}" },
	{ "set values kept", "{type: object, properties: {a: {type: string, default: x}}}",
	  "{spec: {a: ''}}", "{spec: {a: ''}}" },
};

static void test_default_rows(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(drows) / sizeof(drows[0]); i++) {
		json_t *schema = root_schema(drows[i].spec_schema), *obj = yaml(drows[i].in);
		json_t *want = yaml(drows[i].out);

		schema_default(schema, obj);
		if (!json_equal(obj, want)) {
			char *g = dump(obj);

			fail_msg("row \"%s\": got %s", drows[i].name, g);
		}
		json_decref(schema);
		json_decref(obj);
		json_decref(want);
	}
}

static void test_default_is_a_copy(void **state)
{
	json_t *schema = root_schema("{type: object, properties: {o: {type: object, default: {k: [1]}}}}");
	json_t *obj = yaml("{spec: {}}"), *before = json_deep_copy(schema);

	schema_default(schema, obj);
	json_array_append_new(json_object_get(json_object_get(json_object_get(obj, "spec"), "o"), "k"),
			      json_integer(2));
	assert_true(json_equal(schema, before));
	json_decref(schema);
	json_decref(obj);
	json_decref(before);
}

/* ------------------------------------------------------------------------ */

static void test_lookup(void **state)
{
	static const struct {
		const char *path, *want_description; /* NULL: not found */
	} rows[] = {
		{ "", "root" },
		{ "spec", "spec" },
		{ "spec.interfaces", "list" },
		{ "spec.interfaces[]", "item" },
		{ "spec.interfaces[].macAddress", "mac" },
		{ "spec.labels.anything", "label value" },
		{ "spec.nope", NULL },
		{ "spec.interfaces[][]", NULL },
		{ "spec.interfaces.macAddress", NULL },
	};
	json_t *schema = yaml("{description: root, type: object, properties: {spec: {description: spec, "
			      "type: object, properties: {interfaces: {description: list, type: array, "
			      "items: {description: item, type: object, properties: {macAddress: "
			      "{description: mac, type: string}}}}, labels: {type: object, "
			      "additionalProperties: {description: label value, type: string}}}}}}");
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const json_t *s = schema_lookup(schema, rows[i].path);

		if (!rows[i].want_description) {
			if (s)
				fail_msg("lookup \"%s\" found something", rows[i].path);
			continue;
		}
		if (!s)
			fail_msg("lookup \"%s\" found nothing", rows[i].path);
		assert_string_equal(json_string_value(json_object_get(s, "description")),
				    rows[i].want_description);
	}
	assert_null(schema_lookup(NULL, "spec"));
	json_decref(schema);
}

/* ------------------------------------------------------------------------ */

static const struct rerow {
	const char *re2;
	const char *posix; /* NULL: untranslatable (matches everything) */
	int cflags_icase;
	const char *match[4], *nomatch[4];
} rerows[] = {
	{ MAC, MAC, 0, { "52:54:00:aa:bb:cc", "AA:BB:CC:DD:EE:FF" },
	  { "zz", "52:54:00:aa:bb", "52:54:00:aa:bb:cc:dd", "52-54-00-aa-bb-cc" } },
	{ "^(?:(?:[^ \\t\\n\\r\"]+)|(?:\"[^\"]*\"))+$", "^(([^ \t\n\r\"]+)|(\"[^\"]*\"))+$", 0,
	  { "quiet", "console=ttyS0,115200n8", "x=\"a b\"", "\"a b\"" },
	  { "a b", "", "\"open", "a\tb" } },
	{ "\\d{3}-\\w+\\s?$", "[0-9]{3}-[0-9A-Za-z_]+[\t\n\f\r ]?$", 0, { "abc123-x_y", "123-a " },
	  { "12-a", "123-", "123-a  " } },
	{ "^\\S+\\s\\D\\W$", "^[^\t\n\f\r ]+[\t\n\f\r ][^0-9][^0-9A-Za-z_]$", 0, { "ab c!" },
	  { "ab 1!", "ab cd" } },
	{ "^a.b$", "^a[^\n]b$", 0, { "axb", "a b" }, { "a\nb", "ab" } },
	{ "(?s)^a.b$", "^a.b$", 0, { "a\nb" }, { "ab" } },
	{ "(?i)^abc$", "^abc$", 1, { "ABC", "abc" }, { "abd" } },
	{ "^a+?b??$", "^a+b?$", 0, { "aaa", "ab" }, { "b" } },
	{ "^a{,2}$", "^a[{],2[}]$", 0, { "a{,2}" }, { "aa" } },
	{ "^x{2,3}$", "^x{2,3}$", 0, { "xx", "xxx" }, { "x", "xxxx" } },
	{ "^[]a\\-\\^]+$", "^[]a^-]+$", 0, { "]a-^" }, { "b", "" } },
	{ "^[\\^]$", "^\\^$", 0, { "^" }, { "a" } },
	{ "^[a-z\\d_-]+$", "^[a-z0-9_-]+$", 0, { "ab-1_c" }, { "AB" } },
	{ "^a\\.b\\/c\\$$", "^a\\.b/c\\$$", 0, { "a.b/c$" }, { "axb/c$" } },
	{ "^\\x41\\x{42}$", "^AB$", 0, { "AB" }, { "ab" } },
	{ "^\xc2\xb5+$", "^(\xc2\xb5)+$", 0, { "\xc2\xb5\xc2\xb5" }, { "\xc2\xb5x", "\xc2" } },
	{ "^([0-9]+(\\.[0-9]+)?(ns|us|\xc2\xb5s|ms|s|m|h))+$",
	  "^([0-9]+(\\.[0-9]+)?(ns|us|\xc2\xb5s|ms|s|m|h))+$", 0, { "1h30m", "5\xc2\xb5s", "1.5s" },
	  { "5x", "h", "" } },
	{ "^(?P<n>a)(?<m>b)$", "^(a)(b)$", 0, { "ab" }, { "a" } },
	{ "\\Aab\\z", "^ab$", 0, { "ab" }, { "xab" } },
	{ "[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", "[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", 0,
	  { "mac 00:11:22:33:44:55 here" }, { "00:11" } },
	{ "[[:alpha:]]+", "[[:alpha:]]+", 0, { "abc" }, { "123" } },
	{ "\\pL+", NULL, 0, { "anything", "" }, { NULL } },
	{ "(?m)^a$", NULL, 0, { "b" }, { NULL } },
	{ "^[\xc3\xa9]$", NULL, 0, { "x" }, { NULL } },
	{ "\\bfoo\\b", NULL, 0, { "x" }, { NULL } },
	{ "^a(?i)b$", NULL, 0, { "x" }, { NULL } },
	{ "[abc", NULL, 0, { "x" }, { NULL } },
	{ "abc\\", NULL, 0, { "x" }, { NULL } },
	{ "[a\\", NULL, 0, { "x" }, { NULL } },
};

static void test_re2_rows(void **state)
{
	size_t i, j;

	for (i = 0; i < sizeof(rerows) / sizeof(rerows[0]); i++) {
		const struct rerow *r = &rerows[i];
		char *posix = NULL;
		int cflags = 0, rc = schema_re2_to_posix(r->re2, &posix, &cflags);

		if (!r->posix) {
			if (rc != -EINVAL)
				fail_msg("pattern \"%s\" translated to \"%s\"", r->re2, posix);
		} else {
			if (rc != 0)
				fail_msg("pattern \"%s\" did not translate", r->re2);
			if (strcmp(posix, r->posix))
				fail_msg("pattern \"%s\" -> \"%s\", want \"%s\"", r->re2, posix, r->posix);
			assert_int_equal(!!(cflags & REG_ICASE), r->cflags_icase);
			free(posix);
		}
		for (j = 0; j < 4 && r->match[j]; j++)
			if (schema_pattern_match(r->re2, r->match[j], strlen(r->match[j])) != 1)
				fail_msg("pattern \"%s\" should match \"%s\"", r->re2, r->match[j]);
		for (j = 0; j < 4 && r->nomatch[j]; j++)
			if (schema_pattern_match(r->re2, r->nomatch[j], strlen(r->nomatch[j])) != 0)
				fail_msg("pattern \"%s\" should not match \"%s\"", r->re2, r->nomatch[j]);
	}
}

static void test_pattern_match_edges(void **state)
{
	/* Translates, but regcomp refuses it: treated as matching. */
	assert_int_equal(schema_pattern_match("^a{2,1}$", "zzz", 3), 1);
	/* A NUL inside the value is part of it. */
	assert_int_equal(schema_pattern_match("^a$", "a\0b", 3), 0);
	assert_int_equal(schema_pattern_match("^a", "a\0b", 3), 1);
	/* The cache survives a clear and refills. */
	schema_pattern_cache_clear();
	assert_int_equal(schema_pattern_match(MAC, "52:54:00:aa:bb:cc", 17), 1);
}

/* ------------------------------------------------------------------------ */
/* The project's CRDs (config/crd/), found from MESON_SOURCE_ROOT or the
 * current directory and its parents. */

static char crd_dir[PATH_MAX];

static bool find_crd_dir(void)
{
	static const char *const ups[] = { ".", "..", "../..", "../../..", "../../../..",
					   "../../../../.." };
	const char *root = getenv("MESON_SOURCE_ROOT");
	struct stat st;
	size_t i;

	if (root && *root && strlen(root) < sizeof(crd_dir) - 16) {
		snprintf(crd_dir, sizeof(crd_dir), "%s/config/crd", root);
		if (stat(crd_dir, &st) == 0 && S_ISDIR(st.st_mode))
			return true;
	}
	for (i = 0; i < sizeof(ups) / sizeof(ups[0]); i++) {
		snprintf(crd_dir, sizeof(crd_dir), "%s/config/crd", ups[i]);
		if (stat(crd_dir, &st) == 0 && S_ISDIR(st.st_mode))
			return true;
	}
	/* Meson compiles this file by a path relative to the build directory,
	 * where `meson test` runs it: the source root is that path minus
	 * tests/unit/kube/test-schema.c. */
	{
		const char *self = __FILE__, *tail = strstr(self, "tests/unit/kube/");
		int plen = tail ? (int)(tail - self) : -1;

		if (plen >= 0 && plen < (int)sizeof(crd_dir) - 16) {
			snprintf(crd_dir, sizeof(crd_dir), "%.*sconfig/crd", plen, self);
			if (plen == 0)
				snprintf(crd_dir, sizeof(crd_dir), "config/crd");
			if (stat(crd_dir, &st) == 0 && S_ISDIR(st.st_mode))
				return true;
		}
	}
	crd_dir[0] = '\0';
	return false;
}

/* The served version's schema of the CRD in config/crd/<file>, or NULL. */
static json_t *crd_schema(const char *file)
{
	char path[PATH_MAX + 128], *buf;
	size_t len;
	json_t *docs, *schema = NULL;
	ah_err err;

	if (!crd_dir[0] && !find_crd_dir())
		return NULL;
	snprintf(path, sizeof(path), "%s/%s", crd_dir, file);
	if (util_read_file(path, &buf, &len) < 0)
		return NULL;
	if (yaml_parse_all(buf, len, &docs, &err) == 0) {
		json_t *v0 = json_array_get(json_object_get(json_object_get(json_array_get(docs, 0), "spec"),
							    "versions"),
					    0);

		schema = json_incref(json_object_get(json_object_get(v0, "schema"), "openAPIV3Schema"));
		json_decref(docs);
	} else {
		print_message("skipping %s: %s\n", file, err.message);
	}
	free(buf);
	return schema;
}

static const struct crdrow {
	const char *name, *file, *obj;
	struct want want[4];
} crdrows[] = {
	{ "InfraEnv: enum, pattern in a list, minimum",
	  "agent-install.openshift.io_infraenvs.yaml",
	  "{apiVersion: agent-install.openshift.io/v1beta1, kind: InfraEnv, metadata: {name: e, "
	  "namespace: n}, spec: {pullSecretRef: {name: ps}, ipxeScriptType: x, kernelArguments: "
	  "[{operation: append, value: 'rd.break'}, {operation: append, value: 'a b'}], "
	  "networkDiscoveryDelaySeconds: -1}}",
	  { { "spec.ipxeScriptType", "FieldValueNotSupported",
	      "Unsupported value: \"x\": supported values: \"\", \"DiscoveryImageAlways\", "
	      "\"BootOrderControl\"" },
	    { "spec.kernelArguments[1].value", INV,
	      "Invalid value: \"a b\": spec.kernelArguments[1].value in body should match "
	      "'^(?:(?:[^ \\t\\n\\r\"]+)|(?:\"[^\"]*\"))+$'" },
	    { "spec.networkDiscoveryDelaySeconds", INV,
	      "Invalid value: -1: spec.networkDiscoveryDelaySeconds in body should be greater than "
	      "or equal to 0" } } },
	{ "InfraEnv: required pullSecretRef", "agent-install.openshift.io_infraenvs.yaml",
	  "{apiVersion: agent-install.openshift.io/v1beta1, kind: InfraEnv, metadata: {name: e}, "
	  "spec: {}}",
	  { { "spec.pullSecretRef", "FieldValueRequired", "Required value" } } },
	{ "NMStateConfig: MAC pattern and required name",
	  "agent-install.openshift.io_nmstateconfigs.yaml",
	  "{apiVersion: agent-install.openshift.io/v1beta1, kind: NMStateConfig, metadata: {name: c}, "
	  "spec: {config: {interfaces: []}, interfaces: [{macAddress: zz}]}}",
	  { { "spec.interfaces[0].macAddress", INV,
	      "Invalid value: \"zz\": spec.interfaces[0].macAddress in body should match '" MAC "'" },
	    { "spec.interfaces[0].name", "FieldValueRequired", "Required value" } } },
	{ "Agent: approved must be a boolean", "agent-install.openshift.io_agents.yaml",
	  "{apiVersion: agent-install.openshift.io/v1beta1, kind: Agent, metadata: {name: a}, "
	  "spec: {approved: 'yes', role: worker}}",
	  { { "spec.approved", TI,
	      "Invalid value: \"string\": spec.approved in body must be of type boolean" } } },
	{ "AgentClusterInstall: too many apiVIPs",
	  "extensions.hive.openshift.io_agentclusterinstalls.yaml",
	  "{apiVersion: extensions.hive.openshift.io/v1beta1, kind: AgentClusterInstall, "
	  "metadata: {name: a}, spec: {clusterDeploymentRef: {name: c}, networking: {}, "
	  "provisionRequirements: {controlPlaneAgents: 3}, apiVIPs: [1.1.1.1, 1.1.1.2, 1.1.1.3]}}",
	  { { "spec.apiVIPs", "FieldValueTooMany", "Too many: 3: must have at most 2 items" } } },
};

static void test_crd_rows(void **state)
{
	size_t i, done = 0;

	for (i = 0; i < sizeof(crdrows) / sizeof(crdrows[0]); i++) {
		json_t *schema = crd_schema(crdrows[i].file), *obj, *causes;
		int n;

		if (!schema) {
			print_message("skipping row \"%s\": %s not available\n", crdrows[i].name,
				      crdrows[i].file);
			continue;
		}
		obj = yaml(crdrows[i].obj);
		causes = json_array();
		schema_prune(schema, obj, NULL);
		schema_default(schema, obj);
		n = schema_validate(schema, obj, causes);
		check_causes(crdrows[i].name, causes, n, crdrows[i].want,
			     sizeof(crdrows[i].want) / sizeof(crdrows[i].want[0]));
		json_decref(causes);
		json_decref(obj);
		json_decref(schema);
		done++;
	}
	if (!done)
		print_message("no CRD rows ran (config/crd not found)\n");
}

static void test_crd_prune_and_default(void **state)
{
	json_t *schema = crd_schema("agent-install.openshift.io_infraenvs.yaml"), *obj, *pruned;

	if (!schema) {
		print_message("skipping: InfraEnv CRD not available\n");
		return;
	}
	obj = yaml("{apiVersion: agent-install.openshift.io/v1beta1, kind: InfraEnv, metadata: "
		   "{name: e}, spec: {pullSecretRef: {name: ps}, foo: 1, ipxeScriptType: null}}");
	pruned = json_array();
	schema_prune(schema, obj, pruned);
	schema_default(schema, obj);
	assert_int_equal(json_array_size(pruned), 1);
	assert_string_equal(json_string_value(json_array_get(pruned, 0)), "spec.foo");
	assert_string_equal(json_string_value(json_object_get(json_object_get(obj, "spec"),
							      "ipxeScriptType")),
			    "DiscoveryImageAlways");
	assert_int_equal(schema_validate(schema, obj, NULL), 0);
	json_decref(pruned);
	json_decref(obj);
	json_decref(schema);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate_rows),
		cmocka_unit_test(test_validate_root),
		cmocka_unit_test(test_prune_rows),
		cmocka_unit_test(test_prune_null_schema),
		cmocka_unit_test(test_default_rows),
		cmocka_unit_test(test_default_is_a_copy),
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_re2_rows),
		cmocka_unit_test(test_pattern_match_edges),
		cmocka_unit_test(test_crd_rows),
		cmocka_unit_test(test_crd_prune_and_default),
	};
	int r = cmocka_run_group_tests(tests, NULL, NULL);

	schema_pattern_cache_clear();
	return r;
}
