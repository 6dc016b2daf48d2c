/* jwt.h - ES256 JSON Web Tokens for URL authorization, as assisted-service's
 * local authenticator issues them (spec/backend.md section 9): claims such as
 * {"infra_env_id": id}, no expiry, carried in the `api_key` query parameter.
 *
 * Keys are one P-256 private key kept in DIR/jwt-ec.key (PEM, mode 0600),
 * created on first use.  A loaded jwt_keys is immutable, so sign and verify
 * may be called from several threads at once on the same keys.  Functions
 * return 0 or a negative errno. */
#ifndef AH_IMAGE_JWT_H
#define AH_IMAGE_JWT_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

#define JWT_KEY_FILE "jwt-ec.key"
/* Longest token jwt_verify looks at. */
#define JWT_TOKEN_MAX 8192

struct jwt_keys;

/* Load DIR/jwt-ec.key, or create it (new P-256 key, written atomically with
 * mode 0600) when absent.  *ret is freed with jwt_keys_free.  -EINVAL if the
 * file holds something other than a P-256 private key. */
int jwt_keys_load_or_create(const char *dir, struct jwt_keys **ret, ah_err *err);
void jwt_keys_free(struct jwt_keys *keys);

/* Sign claims (a JSON object, serialized compactly in its key order) with the
 * header {"alg":"ES256","typ":"JWT"}.  *ret is a malloc'd NUL-terminated
 * token "header.payload.signature" (base64url, no padding; the signature is
 * the 64-byte JOSE r||s form) the caller frees.  -EINVAL, -ENOMEM, -EIO. */
int jwt_sign(const struct jwt_keys *keys, const json_t *claims, char **ret);

/* Check token: three base64url parts, header alg "ES256", a valid signature
 * by keys, a JSON object payload, and, only when an "exp" claim is present,
 * that it is a number later than now.  On success *ret_claims is a new
 * reference the caller json_decref()s.  Errors (all HTTP 401, with a
 * message): -EINVAL malformed, -EACCES wrong alg or bad signature,
 * -EKEYEXPIRED expired. */
int jwt_verify(const struct jwt_keys *keys, const char *token, json_t **ret_claims, ah_err *err);

/* base64url (RFC 4648 section 5) without padding.  encode returns a malloc'd
 * string or NULL on allocation failure; decode accepts no padding and no
 * other characters, returns 0 and a malloc'd buffer (NUL-terminated for
 * convenience) or -EINVAL / -ENOMEM. */
char *jwt_b64url_encode(const void *data, size_t len);
int jwt_b64url_decode(const char *s, size_t slen, unsigned char **ret, size_t *ret_len);

#endif
