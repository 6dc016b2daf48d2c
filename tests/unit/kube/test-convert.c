/* Tests for src/kube/convert.c: events.k8s.io/v1 Events and core v1 Events
 * are one resource; every renamed field maps both ways, merge patches and
 * JSON Patch paths are rewritten, other kinds pass through untouched. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/convert.h"
#include "kube/registry.h"

static struct kube_registry *reg;

static int setup(void **state)
{
	ah_err err;

	(void)state;
	return kube_registry_new(&reg, &err);
}

static int teardown(void **state)
{
	(void)state;
	kube_registry_free(reg);
	return 0;
}

static json_t *parse(const char *s)
{
	json_error_t jerr;
	json_t *v = json_loads(s, 0, &jerr);

	if (!v)
		fail_msg("bad test JSON %s: %s", s, jerr.text);
	return v;
}

static void expect(const json_t *got, const char *want)
{
	json_t *w = parse(want);

	if (!json_equal(got, w)) {
		char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);

		fail_msg("got  %s\nwant %s", g, want);
	}
	json_decref(w);
}

static const char core_event[] =
	"{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"},"
	"\"involvedObject\":{\"kind\":\"Agent\",\"name\":\"a\"},\"related\":{\"kind\":\"Pod\",\"name\":\"p\"},"
	"\"reason\":\"R\",\"message\":\"M\",\"source\":{\"component\":\"c\",\"host\":\"h\"},"
	"\"firstTimestamp\":\"2026-01-01T00:00:00Z\",\"lastTimestamp\":\"2026-01-02T00:00:00Z\","
	"\"count\":3,\"type\":\"Normal\",\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
	"\"series\":{\"count\":2,\"lastObservedTime\":\"2026-01-02T00:00:00.000000Z\"},"
	"\"action\":\"A\",\"reportingComponent\":\"rc\",\"reportingInstance\":\"ri\"}";
static const char v1_event[] =
	"{\"apiVersion\":\"events.k8s.io/v1\",\"kind\":\"Event\",\"metadata\":{\"name\":\"e\",\"namespace\":\"n\"},"
	"\"regarding\":{\"kind\":\"Agent\",\"name\":\"a\"},\"related\":{\"kind\":\"Pod\",\"name\":\"p\"},"
	"\"reason\":\"R\",\"note\":\"M\",\"deprecatedSource\":{\"component\":\"c\",\"host\":\"h\"},"
	"\"deprecatedFirstTimestamp\":\"2026-01-01T00:00:00Z\",\"deprecatedLastTimestamp\":\"2026-01-02T00:00:00Z\","
	"\"deprecatedCount\":3,\"type\":\"Normal\",\"eventTime\":\"2026-01-01T00:00:00.000000Z\","
	"\"series\":{\"count\":2,\"lastObservedTime\":\"2026-01-02T00:00:00.000000Z\"},"
	"\"action\":\"A\",\"reportingController\":\"rc\",\"reportingInstance\":\"ri\"}";

static void test_event_round_trip(void **state)
{
	const struct kube_kind *v1 = kube_registry_by_resource(reg, "events.k8s.io", "v1", "events");
	const struct kube_kind *core = kube_registry_by_resource(reg, "", "v1", "events");
	json_t *c = parse(core_event), *out, *back;

	(void)state;
	assert_non_null(v1);
	assert_non_null(core);
	assert_ptr_equal(v1->stored_as, core);
	assert_string_equal(v1->store_key, "events");
	assert_ptr_equal(kube_registry_by_store_key(reg, "events"), core);
	out = kube_convert(v1, c, false);
	expect(out, v1_event);
	back = kube_convert(v1, out, true);
	expect(back, core_event);
	json_decref(out);
	json_decref(back);
	/* The stored kind itself converts nothing. */
	out = kube_convert(core, c, false);
	assert_ptr_equal(out, c);
	json_decref(out);
	json_decref(c);
}

static void test_event_patches(void **state)
{
	const struct kube_kind *v1 = kube_registry_by_resource(reg, "events.k8s.io", "v1", "events");
	json_t *p = parse("{\"note\":\"new\",\"deprecatedCount\":null,\"message\":\"ignored\"}"), *out;
	char *s;

	(void)state;
	/* A merge patch renames what it has; a core name in a v1 body is no
	 * field of the v1 kind and is dropped. */
	out = kube_convert(v1, p, true);
	expect(out, "{\"message\":\"new\",\"count\":null}");
	json_decref(out);
	json_decref(p);
	s = kube_convert_json_pointer(v1, "/note");
	assert_string_equal(s, "/message");
	free(s);
	s = kube_convert_json_pointer(v1, "/regarding/name");
	assert_string_equal(s, "/involvedObject/name");
	free(s);
	s = kube_convert_json_pointer(v1, "/metadata/labels/x");
	assert_string_equal(s, "/metadata/labels/x");
	free(s);
	s = kube_convert_json_pointer(v1, "");
	assert_string_equal(s, "");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_round_trip),
		cmocka_unit_test(test_event_patches),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
