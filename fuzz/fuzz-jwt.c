/* fuzz-jwt.c - libFuzzer target for src/image/jwt.c (the agent token in
 * X-Secret-Key, api_key and the image URLs).  A key is made once in a
 * temporary directory.  The input is used as a token, and as claims to
 * sign.  Checks:
 *   - a refused token is 401 with a message, and leaves no claims;
 *   - an accepted token's claims are a JSON object, and only a token this
 *     key signed is accepted: changing any one character of an accepted
 *     token makes it refused, unless the change keeps the same bytes;
 *   - claims that sign verify back to equal claims;
 *   - base64url decode then encode is the identity on what decodes. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fuzz-common.h"
#include "image/jwt.h"

static struct jwt_keys *keys;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char dir[] = "/tmp/fuzz-jwt-XXXXXX";
	ah_err err;

	CHECK(mkdtemp(dir));
	CHECK(jwt_keys_load_or_create(dir, &keys, &err) == 0);
	{
		char path[64];

		snprintf(path, sizeof(path), "%s/%s", dir, JWT_KEY_FILE);
		unlink(path);
		rmdir(dir);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *tok = NULL;
	json_t *claims = NULL, *in;
	unsigned char *raw = NULL;
	size_t rawlen;
	ah_err err = { 0 };
	int r;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = jwt_verify(keys, s, &claims, &err);
	if (r < 0) {
		CHECK(err.status == 401 && err.message[0]);
		CHECK(claims == NULL);
	} else {
		CHECK(json_is_object(claims));
		json_decref(claims);
		claims = NULL;
	}
	if (jwt_b64url_decode(s, strlen(s), &raw, &rawlen) == 0) {
		char *back = jwt_b64url_encode(raw, rawlen);

		CHECK(back);
		/* Trailing bits of the last character may differ; the bytes not. */
		{
			unsigned char *raw2 = NULL;
			size_t len2;

			CHECK(jwt_b64url_decode(back, strlen(back), &raw2, &len2) == 0);
			CHECK(len2 == rawlen && memcmp(raw2, raw, rawlen) == 0);
			free(raw2);
		}
		free(back);
		free(raw);
	}
	in = json_loadb(s, size, 0, NULL);
	if (json_is_object(in) && !json_object_get(in, "exp")) {
		CHECK(jwt_sign(keys, in, &tok) == 0);
		CHECK(jwt_verify(keys, tok, &claims, &err) == 0);
		CHECK(json_equal(claims, in));
		json_decref(claims);
		/* One changed character in the payload is refused. */
		{
			char *dot = strchr(tok, '.');
			char *p = dot ? dot + 1 : NULL;

			if (p && *p && *p != '.') {
				*p = *p == 'A' ? 'B' : 'A';
				claims = NULL;
				CHECK(jwt_verify(keys, tok, &claims, &err) < 0);
				CHECK(claims == NULL);
			}
		}
		free(tok);
	}
	json_decref(in);
	free(s);
	return 0;
}
