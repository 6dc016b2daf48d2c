/* fuzz-selector.c - libFuzzer target for src/kube/selector.c (label and
 * field selectors, label/annotation checks).  Not built by default; build
 * and run it from the repository root with:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     fuzz/fuzz-selector.c src/kube/selector.c src/base/error.c src/base/strbuf.c \
 *     -ljansson -o fuzz-selector
 *   ./fuzz-selector -max_len=1024 [corpus-dir]
 *
 * The input is the selector text.  Besides crashes and leaks it checks
 * invariants, and aborts when one breaks:
 *   - a label or field selector that parses prints a canonical form that
 *     parses again to the same canonical form, and matches the same objects;
 *   - a field selector accepted with a list of allowed fields is accepted
 *     without one, and means the same;
 *   - every rejection is a 400 with a message;
 *   - a string that labels_validate accepts as a key parses as the selector
 *     "key" (exists) and as "key=value" when it is also a valid value. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/selector.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                    \
			abort();                                                     \
		}                                                                    \
	} while (0)

static const char *const meta_fields[] = { "metadata.name", "metadata.namespace", NULL };

static void check_rejection(int r, const ah_err *err)
{
	CHECK(r == -EINVAL || r == -ENOMEM);
	CHECK(r == -ENOMEM || err->status == 400);
	CHECK(err->message[0] != '\0');
}

/* Some label sets the selectors are matched against. */
static json_t *label_sets(const char *s)
{
	json_t *sets = json_array();

	json_array_append_new(sets, json_object());
	json_array_append_new(sets, json_pack("{s:s, s:s, s:s}", "x", "a", "app", "web", "n", "5"));
	json_array_append_new(sets, json_pack("{s:s}", "x", ""));
	/* Labels named after the words of the input, so matching is exercised. */
	{
		json_t *o = json_object();
		char *copy = strdup(s), *tok, *save = NULL;

		for (tok = strtok_r(copy, " \t\r\n,=!()<>", &save); tok;
		     tok = strtok_r(NULL, " \t\r\n,=!()<>", &save)) {
			json_t *v = json_string(tok);

			if (v)
				json_object_set_new(o, tok, v);
		}
		free(copy);
		json_array_append_new(sets, o);
	}
	return sets;
}

static void fuzz_label(const char *s)
{
	label_selector *a = NULL, *b = NULL;
	char *c1, *c2;
	ah_err err = { 0 };
	json_t *sets, *l;
	size_t i;
	int r = label_selector_parse(s, &a, &err);

	if (r < 0) {
		check_rejection(r, &err);
		return;
	}
	c1 = label_selector_string(a);
	CHECK(c1);
	CHECK(label_selector_parse(c1, &b, &err) == 0);
	c2 = label_selector_string(b);
	CHECK(c2 && strcmp(c1, c2) == 0);
	CHECK(label_selector_is_empty(a) == (c1[0] == '\0'));
	sets = label_sets(s);
	json_array_foreach(sets, i, l)
		CHECK(label_selector_matches(a, l) == label_selector_matches(b, l));
	json_decref(sets);
	free(c1);
	free(c2);
	label_selector_free(a);
	label_selector_free(b);
}

static void fuzz_field(const char *s)
{
	field_selector *a = NULL, *b = NULL, *c = NULL;
	char *c1, *c2, *c3;
	json_t *obj;
	ah_err err = { 0 };
	int r = field_selector_parse(s, NULL, &a, &err);

	if (r < 0) {
		check_rejection(r, &err);
		CHECK(field_selector_parse(s, meta_fields, &c, &err) < 0);
		return;
	}
	c1 = field_selector_string(a);
	CHECK(c1);
	CHECK(field_selector_parse(c1, NULL, &b, &err) == 0);
	c2 = field_selector_string(b);
	CHECK(c2 && strcmp(c1, c2) == 0);
	obj = json_pack("{s:{s:s, s:s}}", "metadata", "name", s, "namespace", "n");
	if (obj)
		CHECK(field_selector_matches(a, obj) == field_selector_matches(b, obj));
	if (field_selector_parse(s, meta_fields, &c, &err) == 0) {
		c3 = field_selector_string(c);
		CHECK(c3 && strcmp(c1, c3) == 0);
		free(c3);
		field_selector_free(c);
	} else {
		CHECK(err.status == 400 && strncmp(err.message, "field label not supported: ", 27) == 0);
	}
	json_decref(obj);
	free(c1);
	free(c2);
	field_selector_free(a);
	field_selector_free(b);
}

static void fuzz_validation(const char *s, size_t len)
{
	json_t *labels = json_object(), *causes = json_array(), *v = json_stringn(s, len);
	label_selector *sel = NULL;
	ah_err err = { 0 };

	/* Keys must be valid UTF-8 without NULs to go in a JSON object. */
	if (!v || strlen(s) != len || json_object_set(labels, s, v) < 0)
		goto out;
	CHECK(annotations_validate(labels, causes) >= 0);
	json_array_clear(causes);
	if (labels_validate(labels, causes) == 0) {
		char *c, *kv = malloc(2 * len + 2);

		CHECK(label_selector_parse(s, &sel, &err) == 0);
		c = label_selector_string(sel);
		CHECK(c && strcmp(c, s) == 0);
		free(c);
		label_selector_free(sel);
		sel = NULL;
		/* A valid key is not always a valid value ("a/b"). */
		json_array_clear(causes);
		json_object_clear(labels);
		json_object_set(labels, "k", v);
		if (kv && labels_validate(labels, causes) == 0) {
			snprintf(kv, 2 * len + 2, "%s=%s", s, s);
			CHECK(label_selector_parse(kv, &sel, &err) == 0);
			label_selector_free(sel);
		}
		free(kv);
	}
out:
	json_decref(v);
	json_decref(labels);
	json_decref(causes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	fuzz_label(s);
	fuzz_field(s);
	fuzz_validation(s, size);
	free(s);
	return 0;
}
