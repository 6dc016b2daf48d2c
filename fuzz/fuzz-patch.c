/* fuzz-patch.c - libFuzzer target for src/kube/patch.c (the three patch
 * formats).  Not built by default; build and run it from the repository
 * root with:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     fuzz/fuzz-patch.c src/kube/patch.c src/base/error.c src/base/strbuf.c \
 *     -ljansson -o fuzz-patch
 *   ./fuzz-patch -max_len=4096 -timeout=10 [corpus-dir]
 *
 * The input is JSON text, an array [doc, patch].  Besides crashes and leaks
 * it checks invariants, and aborts when one breaks:
 *   - no entry point modifies its inputs;
 *   - a merge patch is idempotent: merge(merge(d, p), p) == merge(d, p);
 *   - the merge patch computed from d to t (as a client computes it) turns d
 *     into t (t with its object nulls dropped, which a merge patch cannot
 *     express);
 *   - a JSON patch that applies gives a document that a "test" of "" against
 *     it confirms, and applying it again gives the same document; one that
 *     does not apply fails with 400, 413 or 422;
 *   - a strategic merge patch with no lists and no "$" keys equals the merge
 *     patch, and its result never holds directive keys. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/patch.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                    \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* Lists the strategic merge patch merges, so that fuzzed documents using
 * these names reach the list code. */
static const struct smp_list_meta lists[] = {
	{ "l", "k" },
	{ "l[].l", "k" },
	{ "p", NULL },
	{ "l[].p", NULL },
	{ NULL, NULL },
};

static json_t *mut(const json_t *j)
{
	return (json_t *)j;
}

/* Whether v (anywhere inside) has an array or a key starting with '$'. */
static int has_list_or_dollar(const json_t *v)
{
	const char *key;
	json_t *c;

	if (json_is_array(v))
		return 1;
	if (!json_is_object(v))
		return 0;
	json_object_foreach(mut(v), key, c)
		if (key[0] == '$' || has_list_or_dollar(c))
			return 1;
	return 0;
}

/* Keys that are strategic merge patch directives; other "$" keys are data. */
static int is_directive(const char *key)
{
	return strcmp(key, "$patch") == 0 || strcmp(key, "$retainKeys") == 0 ||
	       strncmp(key, "$setElementOrder", 16) == 0 ||
	       strncmp(key, "$deleteFromPrimitiveList", 24) == 0;
}

static int has_directive(const json_t *v)
{
	const char *key;
	json_t *c;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(mut(v), i, c)
			if (has_directive(c))
				return 1;
		return 0;
	}
	if (!json_is_object(v))
		return 0;
	json_object_foreach(mut(v), key, c)
		if (is_directive(key) || has_directive(c))
			return 1;
	return 0;
}

/* t without nulls in objects. */
static json_t *drop_nulls(const json_t *t)
{
	const char *key;
	json_t *c, *out;

	if (!json_is_object(t))
		return json_deep_copy(t);
	out = json_object();
	json_object_foreach(mut(t), key, c)
		if (!json_is_null(c))
			json_object_set_new(out, key, drop_nulls(c));
	return out;
}

/* The merge patch a client sends to turn d into t (t without nulls). */
static json_t *diff(const json_t *d, const json_t *t)
{
	const char *key;
	json_t *c, *out;

	if (!json_is_object(d) || !json_is_object(t))
		return json_deep_copy(t);
	out = json_object();
	json_object_foreach(mut(d), key, c)
		if (!json_object_get(t, key))
			json_object_set_new(out, key, json_null());
	json_object_foreach(mut(t), key, c) {
		const json_t *dv = json_object_get(d, key);

		if (dv && json_equal(dv, c))
			continue;
		json_object_set_new(out, key, dv ? diff(dv, c) : json_deep_copy(c));
	}
	return out;
}

static void check_failure(int r, const ah_err *err)
{
	CHECK(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
	CHECK(err->status == 400 || err->status == 413 || err->status == 422 ||
	      (r == -ENOMEM && err->status == 500));
	CHECK(err->message[0] != '\0');
}

static void fuzz_merge(const json_t *d, const json_t *p)
{
	json_t *r1 = NULL, *r2 = NULL, *t, *dp, *r3 = NULL;
	ah_err err = { 0 };

	if (patch_merge(d, p, &r1, &err) != 0)
		return;
	CHECK(patch_merge(r1, p, &r2, &err) == 0);
	CHECK(json_equal(r1, r2));

	t = drop_nulls(p);
	dp = diff(d, t);
	CHECK(patch_merge(d, dp, &r3, &err) == 0);
	CHECK(json_equal(r3, t));
	json_decref(t);
	json_decref(dp);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
}

static void fuzz_json_patch(const json_t *d, const json_t *ops)
{
	json_t *r1 = NULL, *r2 = NULL, *r3 = NULL, *test;
	ah_err err = { 0 };
	int r = patch_json(d, ops, &r1, &err);

	if (r < 0) {
		check_failure(r, &err);
		return;
	}
	CHECK(patch_json(d, ops, &r2, &err) == 0);
	CHECK(json_equal(r1, r2));
	test = json_pack("[{s:s, s:s, s:O}]", "op", "test", "path", "", "value", r1);
	CHECK(test && patch_json(r1, test, &r3, &err) == 0);
	CHECK(json_equal(r1, r3));
	json_decref(test);
	json_decref(r1);
	json_decref(r2);
	json_decref(r3);
}

static void fuzz_strategic(const json_t *d, const json_t *p)
{
	json_t *r1 = NULL, *m = NULL;
	ah_err err = { 0 };
	int r = patch_strategic(d, p, lists, &r1, &err);

	if (r < 0) {
		check_failure(r, &err);
		return;
	}
	if (!has_directive(d))
		CHECK(!has_directive(r1));
	if (json_is_object(d) && !has_list_or_dollar(p)) {
		CHECK(patch_merge(d, p, &m, &err) == 0);
		CHECK(json_equal(r1, m));
	}
	json_decref(r1);
	json_decref(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	json_t *d, *p, *d0, *p0;

	if (!json_is_array(in) || json_array_size(in) < 2) {
		json_decref(in);
		return 0;
	}
	d = json_array_get(in, 0);
	p = json_array_get(in, 1);
	d0 = json_deep_copy(d);
	p0 = json_deep_copy(p);

	fuzz_merge(d, p);
	fuzz_json_patch(d, p);
	fuzz_strategic(d, p);

	CHECK(json_equal(d, d0) && json_equal(p, p0));
	json_decref(d0);
	json_decref(p0);
	json_decref(in);
	return 0;
}
