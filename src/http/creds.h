/* creds.h - the daemon's TLS and admin credentials in its data directory.
 *
 * On first start the daemon makes a private CA, a serving certificate signed
 * by it and an admin bearer token; later starts reuse them, so a kubeconfig
 * written once keeps working.  Only the serving certificate is renewed on its
 * own (near expiry, or when the names it must answer for change): the CA is
 * what clients trust, so it is never replaced behind their back.
 *
 * Files in DIR (the data directory):
 *   ca.crt       CA certificate, PEM (mode 0644)
 *   ca.key       CA private key, PKCS#8 PEM (mode 0600)
 *   serving.crt  serving certificate, PEM (mode 0644)
 *   serving.key  serving private key, PKCS#8 PEM (mode 0600)
 *   admin.token  admin bearer token and a newline (mode 0600)
 *   sa.key       ServiceAccount token signing key, 32 random bytes as hex
 *                (mode 0600): tokens are HS256 JWTs only this hub verifies
 *
 * Private keys and the token are secrets: never log them, nor anything
 * derived from them.  All functions are thread-safe on distinct arguments;
 * a loaded `struct creds` is read-only and may be shared by threads. */
#ifndef AH_HTTP_CREDS_H
#define AH_HTTP_CREDS_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"

/* Every string is malloc'd, NUL-terminated and owned by the struct; free them
 * all with creds_release(). */
struct creds {
	char *ca_pem;      /* CA certificate, PEM */
	char *cert_pem;    /* serving certificate (signed by the CA), PEM */
	char *key_pem;     /* serving private key, PEM (never log it) */
	char *admin_token; /* bearer token for the admin user (never log it) */
	/* SHA-256 of admin_token, set by creds_load() (a struct filled in by
	 * hand leaves it unset and creds_token_ok() hashes admin_token). */
	unsigned char token_digest[32];
	bool token_digest_set;
	/* ServiceAccount token signing key (never log it). */
	unsigned char sa_key[32];
	bool sa_key_set;
};

/* Load the credentials from DIR, creating whatever is missing:
 *  - the CA (ECDSA P-256, 10 years, CN "agenthub-ca") when ca.crt is absent;
 *    ca.crt without ca.key is an error, since a new CA would break every
 *    client that trusts the old one;
 *  - the serving certificate (ECDSA P-256, 1 year, serverAuth) when it is
 *    absent or unreadable, does not match its key, was not signed by the CA,
 *    expires within 30 days, or its SANs miss any of localhost, 127.0.0.1,
 *    ::1 and the entries of `hosts`;
 *  - the admin token (32 random bytes as hex) when admin.token is absent.
 * `hosts` is a NULL-terminated list of IP addresses and DNS names (NULL for
 * none); an entry that is neither gives -EINVAL.  DIR is created (mode 0700)
 * if it does not exist; its parent must.
 * Returns 0 and fills *ret (release it with creds_release()), or a negative
 * errno with err set and *ret untouched. */
int creds_load_or_create(const char *dir, const char *const *hosts, struct creds *ret, ah_err *err);

/* Free and wipe the strings of c and set them to NULL; c itself is the
 * caller's.  Safe on a zeroed or already released struct. */
void creds_release(struct creds *c);

/* Write a kubeconfig to `path` (atomically, mode 0600) that kubectl uses as is:
 * cluster "agenthub" at `server_url` (e.g. "https://127.0.0.1:6443") trusting
 * c->ca_pem, user "admin" with c->admin_token, and context "agenthub"
 * (namespace "default") as current-context.  The URL must be https:// and
 * printable ASCII without quotes or backslashes (else -EINVAL).
 * Returns 0 or a negative errno with err set. */
int creds_write_kubeconfig(const char *path, const char *server_url, const struct creds *c, ah_err *err);

/* Whether `presented` (the text after "Bearer ", may be NULL) is the admin
 * token.  The time taken does not depend on where the strings differ nor on
 * their lengths, so it leaks nothing about the token. */
bool creds_token_ok(const struct creds *c, const char *presented);

/* SHA-256 of a string (the algorithm fetched once); false on failure. */
bool creds_sha256(const char *s, unsigned char out[32]);

/* ServiceAccount tokens: compact JWS, HS256 over c->sa_key.
 * creds_jwt_sign() returns a malloc'd "header.payload.signature" for the
 * claims (a JSON object), or NULL.  creds_jwt_verify() checks the form, the
 * algorithm and the signature in constant time (nothing else: the caller
 * checks the claims) and returns 0 with the claims in *ret (a new
 * reference), or -EINVAL.  Tokens longer than CREDS_JWT_MAX are refused. */
#define CREDS_JWT_MAX 8192
char *creds_jwt_sign(const struct creds *c, const json_t *claims);
int creds_jwt_verify(const struct creds *c, const char *token, json_t **ret);

#endif
