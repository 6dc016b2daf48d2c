/* fuzz-yaml.c - libFuzzer target for src/base/yamljson.c (YAML request
 * bodies, NMState configs, overrides).  The input is the YAML text.
 * Besides crashes, leaks and the -malloc_limit_mb bound (a document that
 * expands past the parser's bounds must be refused before it is built),
 * it checks:
 *   - every failure is 400 with a message;
 *   - a success is an array of documents whose strings hold no NUL and
 *     whose objects have no more than the bounded number of nodes;
 *   - a document that parses, printed as JSON (which is YAML), parses back
 *     to the same value (the decoder is stable on its own output). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "base/yamljson.h"
#include "fuzz-common.h"

static size_t walk(const json_t *v)
{
	const char *k;
	json_t *c;
	size_t n = 1, i;

	if (json_is_string(v))
		CHECK(strlen(json_string_value(v)) == json_string_length(v));
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, c) {
			CHECK(k != NULL);
			n += walk(c);
		}
	if (json_is_array(v))
		json_array_foreach(v, i, c)
			n += walk(c);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *docs = NULL, *again = NULL;
	ah_err err = { 0 };
	int r = yaml_parse_all((const char *)data, size, &docs, &err);

	if (r < 0) {
		CHECK(r == -EINVAL || r == -E2BIG || r == -ENOMEM);
		CHECK(r == -ENOMEM || (err.status == 400 && err.message[0]));
		CHECK(docs == NULL);
		return 0;
	}
	CHECK(json_is_array(docs));
	CHECK(walk(docs) <= 500001);
	if (json_array_size(docs) == 1) {
		char *text = json_dumps(json_array_get(docs, 0), JSON_ENCODE_ANY | JSON_COMPACT);

		/* Reals print in a form that may re-read as an integer (1.0 → 1):
		 * compare only documents without reals. */
		if (text && !strpbrk(text, ".eE")) {
			ah_err e2 = { 0 };

			CHECK(yaml_parse_all(text, strlen(text), &again, &e2) == 0);
			CHECK(json_array_size(again) <= 1);
			if (json_array_size(again) == 1)
				CHECK(json_equal(json_array_get(again, 0), json_array_get(docs, 0)));
			json_decref(again);
		}
		free(text);
	}
	json_decref(docs);
	return 0;
}
