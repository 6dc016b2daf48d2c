/* fuzz-gojson.c - libFuzzer target for the Go-compatible JSON syntax
 * checker (src/base/gojson.c), which reads Secret data from users, and
 * the pull secret rules above it (src/assisted/pullsecret.c).  Checks:
 *   - whatever jansson accepts as one JSON value, gojson accepts too
 *     (Go is the more lenient: it takes invalid UTF-8 and huge numbers),
 *     NUL bytes aside (jansson ends the text there);
 *   - a refusal always says one of Go's syntax errors;
 *   - a pull secret that passes is valid JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/pullsecret.h"
#include "base/gojson.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char msg[256], why[256], *text;
	json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	int r = gojson_check((const char *)data, size, msg, sizeof(msg));

	/* jansson stops at a NUL byte as at the end; Go reads on. */
	if (v && !memchr(data, 0, size))
		CHECK(r == 0);
	if (r < 0)
		CHECK(r == -EINVAL && (!strncmp(msg, "invalid character ", 18) ||
				       !strcmp(msg, "unexpected end of JSON input") || !strcmp(msg, "exceeded max depth")));
	json_decref(v);
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (pullsecret_check(text, why, sizeof(why)) == 0)
		CHECK(gojson_check(text, strlen(text), msg, sizeof(msg)) == 0);
	else
		CHECK(why[0] != '\0');
	free(text);
	return 0;
}
