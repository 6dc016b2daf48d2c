/* jwt.c - ES256 JWTs (sign, verify) over OpenSSL, the key file that holds
 * the P-256 key, and base64url.  JOSE wants the ECDSA signature as the raw
 * 32-byte r and s concatenated; OpenSSL speaks DER, so both directions
 * convert.  See jwt.h for the API. */
#include "image/jwt.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

#define ES256_COORD 32
#define ES256_SIG_LEN (2 * ES256_COORD)
#define JWT_HEADER "{\"alg\":\"ES256\",\"typ\":\"JWT\"}"

/* Tokens whose signature has been checked: every poll of every host carries
 * the same few tokens, and an ECDSA verification costs far more than the
 * rest of a request.  Only the signature result is remembered (keyed by
 * the whole token, so a changed byte is a new entry); expiry is checked on
 * every use.  Bounded: emptied when full. */
#define SIG_CACHE_MAX 4096

struct sig_cache {
	pthread_mutex_t lock;
	json_t *ok; /* token -> true */
};

struct jwt_keys {
	EVP_PKEY *pkey;
	struct sig_cache *cache;
};

/* ---- base64url ---- */

static const char b64url_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *jwt_b64url_encode(const void *data, size_t len)
{
	const unsigned char *in = data;
	char *out = malloc(len / 3 * 4 + 5), *p = out;
	size_t i = 0;

	if (!out)
		return NULL;
	for (; i + 3 <= len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		*p++ = b64url_alphabet[v >> 18 & 63];
		*p++ = b64url_alphabet[v >> 12 & 63];
		*p++ = b64url_alphabet[v >> 6 & 63];
		*p++ = b64url_alphabet[v & 63];
	}
	if (len - i == 1) {
		uint32_t v = (uint32_t)in[i] << 16;
		*p++ = b64url_alphabet[v >> 18 & 63];
		*p++ = b64url_alphabet[v >> 12 & 63];
	} else if (len - i == 2) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		*p++ = b64url_alphabet[v >> 18 & 63];
		*p++ = b64url_alphabet[v >> 12 & 63];
		*p++ = b64url_alphabet[v >> 6 & 63];
	}
	*p = '\0';
	return out;
}

static int b64url_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '-')
		return 62;
	if (c == '_')
		return 63;
	return -1;
}

int jwt_b64url_decode(const char *s, size_t slen, unsigned char **ret, size_t *ret_len)
{
	unsigned char *out;
	size_t n = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (slen % 4 == 1)
		return -EINVAL;
	out = malloc(slen / 4 * 3 + 3);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < slen; i++) {
		int v = b64url_value((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return -EINVAL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	/* Leftover bits must be zero, so each byte string has one encoding. */
	if (acc != 0) {
		free(out);
		return -EINVAL;
	}
	out[n] = '\0';
	*ret = out;
	*ret_len = n;
	return 0;
}

/* ---- keys ---- */

static bool is_p256(EVP_PKEY *pkey)
{
	char group[64];
	size_t glen = 0;

	if (EVP_PKEY_get_base_id(pkey) != EVP_PKEY_EC)
		return false;
	if (!EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group,
					    sizeof(group), &glen))
		return false;
	return strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0;
}

static int load_pem(const char *path, const char *pem, size_t len, EVP_PKEY **ret, ah_err *err)
{
	BIO *bio = BIO_new_mem_buf(pem, (int)len);
	EVP_PKEY *pkey;

	if (!bio)
		return -ENOMEM;
	pkey = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	BIO_free(bio);
	if (!pkey || !is_p256(pkey)) {
		EVP_PKEY_free(pkey);
		return ah_err_set(err, -EINVAL, 500, "InternalError",
				  "%s does not hold a P-256 private key", path);
	}
	*ret = pkey;
	return 0;
}

/* Write a new key to path unless one appears meanwhile: the PEM goes to a
 * private temporary file that is then hard-linked into place, so two
 * processes racing here end up sharing whichever key landed first. */
static int create_key(const char *dir, const char *path, ah_err *err)
{
	EVP_PKEY *pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	BIO *bio = NULL;
	char *tmp = NULL, *pem;
	long pem_len;
	int fd = -1, r = 0;

	if (!pkey)
		return ah_err_set(err, -EIO, 500, "InternalError", "generating a P-256 key failed");
	bio = BIO_new(BIO_s_mem());
	if (!bio || !PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL)) {
		r = ah_err_set(err, -EIO, 500, "InternalError", "encoding the JWT key failed");
		goto out;
	}
	pem_len = BIO_get_mem_data(bio, &pem);
	if (asprintf(&tmp, "%s/.%s.XXXXXX", dir, JWT_KEY_FILE) < 0) {
		tmp = NULL;
		r = -ENOMEM;
		goto out;
	}
	fd = mkstemp(tmp); /* mkstemp creates the file with mode 0600 */
	if (fd < 0) {
		r = ah_err_set(err, -errno, 500, "InternalError", "creating %s: %s", tmp,
			       strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if (fchmod(fd, 0600) < 0 || write(fd, pem, (size_t)pem_len) != (ssize_t)pem_len ||
	    fsync(fd) < 0) {
		r = ah_err_set(err, -EIO, 500, "InternalError", "writing %s: %s", tmp,
			       strerror(errno));
		goto out;
	}
	if (link(tmp, path) < 0 && errno != EEXIST)
		r = ah_err_set(err, -errno, 500, "InternalError", "creating %s: %s", path,
			       strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	BIO_free(bio);
	EVP_PKEY_free(pkey);
	return r;
}

int jwt_keys_load_or_create(const char *dir, struct jwt_keys **ret, ah_err *err)
{
	char *path = NULL, *pem = NULL;
	size_t pem_len = 0;
	struct jwt_keys *keys;
	EVP_PKEY *pkey = NULL;
	int r;

	if (asprintf(&path, "%s/%s", dir, JWT_KEY_FILE) < 0)
		return -ENOMEM;
	r = util_read_file(path, &pem, &pem_len);
	if (r == -ENOENT) {
		r = create_key(dir, path, err);
		if (r == 0)
			r = util_read_file(path, &pem, &pem_len);
	}
	if (r < 0) {
		if (err && !err->message[0])
			ah_err_set(err, r, 500, "InternalError", "reading %s: %s", path,
				   strerror(-r));
		free(path);
		return r;
	}
	r = load_pem(path, pem, pem_len, &pkey, err);
	OPENSSL_cleanse(pem, pem_len);
	free(pem);
	free(path);
	if (r < 0)
		return r;
	keys = malloc(sizeof(*keys));
	if (!keys) {
		EVP_PKEY_free(pkey);
		return -ENOMEM;
	}
	keys->pkey = pkey;
	keys->cache = calloc(1, sizeof(*keys->cache));
	if (!keys->cache || !(keys->cache->ok = json_object())) {
		free(keys->cache);
		EVP_PKEY_free(pkey);
		free(keys);
		return -ENOMEM;
	}
	pthread_mutex_init(&keys->cache->lock, NULL);
	*ret = keys;
	return 0;
}

void jwt_keys_free(struct jwt_keys *keys)
{
	if (!keys)
		return;
	if (keys->cache) {
		json_decref(keys->cache->ok);
		pthread_mutex_destroy(&keys->cache->lock);
		free(keys->cache);
	}
	EVP_PKEY_free(keys->pkey);
	free(keys);
}

static bool sig_cached(const struct jwt_keys *keys, const char *token)
{
	bool hit;

	if (!keys->cache)
		return false;
	pthread_mutex_lock(&keys->cache->lock);
	hit = json_object_get(keys->cache->ok, token) != NULL;
	pthread_mutex_unlock(&keys->cache->lock);
	return hit;
}

static void sig_remember(const struct jwt_keys *keys, const char *token)
{
	if (!keys->cache)
		return;
	pthread_mutex_lock(&keys->cache->lock);
	if (json_object_size(keys->cache->ok) >= SIG_CACHE_MAX)
		json_object_clear(keys->cache->ok);
	json_object_set_new(keys->cache->ok, token, json_true());
	pthread_mutex_unlock(&keys->cache->lock);
}

/* ---- sign / verify ---- */

int jwt_sign(const struct jwt_keys *keys, const json_t *claims, char **ret)
{
	char *payload = NULL, *h64 = NULL, *p64 = NULL, *s64 = NULL, *input = NULL, *token;
	unsigned char *der = NULL, raw[ES256_SIG_LEN];
	const unsigned char *dp;
	size_t der_len = 0;
	EVP_MD_CTX *md = NULL;
	ECDSA_SIG *sig = NULL;
	const BIGNUM *r_bn, *s_bn;
	int r = -ENOMEM;

	if (!json_is_object(claims))
		return -EINVAL;
	payload = json_dumps(claims, JSON_COMPACT);
	if (!payload)
		return -ENOMEM;
	h64 = jwt_b64url_encode(JWT_HEADER, strlen(JWT_HEADER));
	p64 = jwt_b64url_encode(payload, strlen(payload));
	if (!h64 || !p64 || asprintf(&input, "%s.%s", h64, p64) < 0) {
		input = NULL;
		goto out;
	}
	md = EVP_MD_CTX_new();
	if (!md)
		goto out;
	r = -EIO;
	if (EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, keys->pkey) != 1 ||
	    EVP_DigestSign(md, NULL, &der_len, (unsigned char *)input, strlen(input)) != 1)
		goto out;
	der = malloc(der_len);
	if (!der) {
		r = -ENOMEM;
		goto out;
	}
	if (EVP_DigestSign(md, der, &der_len, (unsigned char *)input, strlen(input)) != 1)
		goto out;
	dp = der;
	sig = d2i_ECDSA_SIG(NULL, &dp, (long)der_len);
	if (!sig)
		goto out;
	ECDSA_SIG_get0(sig, &r_bn, &s_bn);
	if (BN_bn2binpad(r_bn, raw, ES256_COORD) != ES256_COORD ||
	    BN_bn2binpad(s_bn, raw + ES256_COORD, ES256_COORD) != ES256_COORD)
		goto out;
	r = -ENOMEM;
	s64 = jwt_b64url_encode(raw, sizeof(raw));
	if (!s64)
		goto out;
	if (asprintf(&token, "%s.%s", input, s64) < 0)
		goto out;
	*ret = token;
	r = 0;
out:
	ECDSA_SIG_free(sig);
	EVP_MD_CTX_free(md);
	free(der);
	free(s64);
	free(input);
	free(p64);
	free(h64);
	free(payload);
	return r;
}

static int bad(ah_err *err, int e, const char *msg)
{
	return ah_err_set(err, e, 401, "Unauthorized", "%s", msg);
}

/* Decode one base64url part to a JSON object. */
static int part_json(const char *s, size_t len, json_t **ret)
{
	unsigned char *raw;
	size_t raw_len;
	json_t *j;

	if (jwt_b64url_decode(s, len, &raw, &raw_len) < 0)
		return -EINVAL;
	j = json_loadb((const char *)raw, raw_len, JSON_REJECT_DUPLICATES, NULL);
	free(raw);
	if (!json_is_object(j)) {
		json_decref(j);
		return -EINVAL;
	}
	*ret = j;
	return 0;
}

static int sig_ok(const struct jwt_keys *keys, const char *input, size_t input_len,
		  const unsigned char *raw)
{
	ECDSA_SIG *sig = ECDSA_SIG_new();
	BIGNUM *rb = BN_bin2bn(raw, ES256_COORD, NULL);
	BIGNUM *sb = BN_bin2bn(raw + ES256_COORD, ES256_COORD, NULL);
	unsigned char *der = NULL;
	EVP_MD_CTX *md = NULL;
	int der_len, ok = 0;

	if (!sig || !rb || !sb || !ECDSA_SIG_set0(sig, rb, sb)) {
		BN_free(rb);
		BN_free(sb);
		ECDSA_SIG_free(sig);
		return 0;
	}
	der_len = i2d_ECDSA_SIG(sig, &der);
	md = EVP_MD_CTX_new();
	if (der_len > 0 && md &&
	    EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, keys->pkey) == 1)
		ok = EVP_DigestVerify(md, der, (size_t)der_len, (const unsigned char *)input,
				      input_len) == 1;
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	ECDSA_SIG_free(sig);
	return ok;
}

int jwt_verify(const struct jwt_keys *keys, const char *token, json_t **ret_claims, ah_err *err)
{
	const char *d1, *d2;
	size_t tlen;
	json_t *hdr = NULL, *claims = NULL, *exp;
	unsigned char *raw = NULL;
	size_t raw_len = 0;
	int r;

	if (!token)
		return bad(err, -EINVAL, "missing token");
	tlen = strnlen(token, JWT_TOKEN_MAX + 1);
	if (tlen > JWT_TOKEN_MAX)
		return bad(err, -EINVAL, "token is too long");
	d1 = memchr(token, '.', tlen);
	d2 = d1 ? memchr(d1 + 1, '.', tlen - (size_t)(d1 + 1 - token)) : NULL;
	if (!d1 || !d2 || memchr(d2 + 1, '.', tlen - (size_t)(d2 + 1 - token)))
		return bad(err, -EINVAL, "token is malformed: want three dot-separated parts");
	if (part_json(token, (size_t)(d1 - token), &hdr) < 0)
		return bad(err, -EINVAL, "token is malformed: bad header");
	const char *alg = json_string_value(json_object_get(hdr, "alg"));
	if (!alg || strcmp(alg, "ES256") != 0) {
		r = ah_err_set(err, -EACCES, 401, "Unauthorized", "unexpected signing method: %s",
			       alg ? alg : "(none)");
		json_decref(hdr);
		return r;
	}
	json_decref(hdr);
	if (part_json(d1 + 1, (size_t)(d2 - d1 - 1), &claims) < 0)
		return bad(err, -EINVAL, "token is malformed: bad claims");
	r = jwt_b64url_decode(d2 + 1, tlen - (size_t)(d2 + 1 - token), &raw, &raw_len);
	if (r < 0 || raw_len != ES256_SIG_LEN) {
		r = bad(err, -EINVAL, "token is malformed: bad signature encoding");
		goto fail;
	}
	if (!sig_cached(keys, token)) {
		if (!sig_ok(keys, token, (size_t)(d2 - token), raw)) {
			r = bad(err, -EACCES, "token signature is invalid");
			goto fail;
		}
		sig_remember(keys, token);
	}
	exp = json_object_get(claims, "exp");
	if (exp) {
		if (!json_is_number(exp)) {
			r = bad(err, -EINVAL, "token is malformed: exp is not a number");
			goto fail;
		}
		if ((double)time(NULL) > json_number_value(exp)) {
			r = bad(err, -EKEYEXPIRED, "token is expired");
			goto fail;
		}
	}
	free(raw);
	*ret_claims = claims;
	return 0;
fail:
	free(raw);
	json_decref(claims);
	return r;
}
