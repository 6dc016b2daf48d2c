/* fuzz-proto.c - libFuzzer target for src/kube/proto.c (Kubernetes protobuf
 * request bodies), built by Meson with -Dfuzz=true (scripts/run-fuzz.sh).
 *
 * The input is the body; inputs that do not start with the "k8s\0" magic get
 * it prepended half of the time, so the fuzzer reaches the envelope at once.
 * Besides crashes and leaks it checks invariants, and aborts when one breaks:
 *   - a decoded body is a JSON object whose "kind" is a non-empty string and
 *     which serialises to JSON that parses back to an equal value;
 *   - every rejection is a 400 BadRequest or a 415 UnsupportedMediaType with
 *     a message, and leaves *ret untouched;
 *   - a decoded object of a kind with a protobuf form re-encodes (or is
 *     refused with -ENOTSUP) and decodes back to an equal JSON value. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/proto.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant broken at %s:%d: %s\n", __FILE__, \
				__LINE__, #cond);                                    \
			abort();                                                     \
		}                                                                    \
	} while (0)

static void check(const uint8_t *data, size_t size)
{
	json_t *sentinel = json_null(), *ret = sentinel;
	ah_err err = { 0 };
	int r = kube_proto_decode(data, size, &ret, &err);

	if (r < 0) {
		CHECK(ret == sentinel);
		CHECK((err.status == 400 && strcmp(err.reason, "BadRequest") == 0) ||
		      (err.status == 415 && strcmp(err.reason, "UnsupportedMediaType") == 0));
		CHECK(err.message[0] != '\0');
		return;
	}
	CHECK(r == 0);
	CHECK(json_is_object(ret));
	{
		const char *kind = json_string_value(json_object_get(ret, "kind"));
		char *text = json_dumps(ret, JSON_COMPACT);
		json_t *back;

		CHECK(kind && *kind);
		CHECK(text);
		back = json_loads(text, 0, NULL);
		CHECK(back && json_equal(back, ret));
		json_decref(back);
		free(text);
	}
	/* A decoded object of a kind with a protobuf form encodes (or is
	 * refused with -ENOTSUP, when the reply would go out as JSON), and
	 * what it encodes to decodes back to the same JSON. */
	if (kube_proto_kind(json_string_value(json_object_get(ret, "apiVersion")),
			    json_string_value(json_object_get(ret, "kind")))) {
		unsigned char *pb = NULL;
		size_t len = 0;
		int e = kube_proto_encode(ret, &pb, &len);

		CHECK(e == 0 || e == -ENOTSUP || e == -ENOMEM);
		if (e == 0) {
			json_t *again = NULL;
			ah_err err2 = { 0 };

			CHECK(kube_proto_decode(pb, len, &again, &err2) == 0);
			CHECK(json_equal(again, ret));
			json_decref(again);
		}
		free(pb);
	}
	json_decref(ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check(data, size);
	if (size > 0 && (size < 4 || memcmp(data, "k8s", 4) != 0) && (data[0] & 1)) {
		uint8_t *buf = malloc(size + 4);

		if (!buf)
			return 0;
		memcpy(buf, "k8s", 4);
		memcpy(buf + 4, data, size);
		check(buf, size + 4);
		free(buf);
	}
	return 0;
}
