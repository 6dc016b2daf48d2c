/* Tests for src/image/jwt.c: ES256 sign/verify round trips, tampered and
 * foreign tokens, exp handling, the key file, base64url rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "image/jwt.h"

struct fixture {
	char dir[64];
	struct jwt_keys *keys;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	ah_err err = { 0 };

	if (!f)
		return -1;
	strcpy(f->dir, "/tmp/test-jwt-XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	if (jwt_keys_load_or_create(f->dir, &f->keys, &err) != 0)
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[128];

	jwt_keys_free(f->keys);
	snprintf(path, sizeof(path), "%s/%s", f->dir, JWT_KEY_FILE);
	unlink(path);
	rmdir(f->dir);
	free(f);
	return 0;
}

static char *sign_json(const struct jwt_keys *keys, const char *claims_text)
{
	json_t *claims = json_loads(claims_text, 0, NULL);
	char *tok = NULL;

	assert_non_null(claims);
	assert_int_equal(jwt_sign(keys, claims, &tok), 0);
	json_decref(claims);
	return tok;
}

/* Build a token from raw header and claims JSON plus an arbitrary signature. */
static char *forge(const char *hdr, const char *claims, const void *sig, size_t sig_len)
{
	char *h = jwt_b64url_encode(hdr, strlen(hdr));
	char *c = jwt_b64url_encode(claims, strlen(claims));
	char *s = jwt_b64url_encode(sig, sig_len);
	char *out = NULL;

	assert_true(asprintf(&out, "%s.%s.%s", h, c, s) > 0);
	free(h);
	free(c);
	free(s);
	return out;
}

static void test_round_trip(void **state)
{
	struct fixture *f = *state;
	static const char *rows[] = {
		"{\"infra_env_id\":\"7a3b2c1d-0000-4000-8000-000000000001\"}",
		"{\"cluster_id\":\"c1\"}",
		"{}",
		"{\"sub\":\"x\",\"n\":1,\"nested\":{\"a\":[1,2,3]},\"u\":\"\\u00e9\"}",
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *tok = sign_json(f->keys, rows[i]);
		json_t *want = json_loads(rows[i], 0, NULL), *got = NULL;
		ah_err err = { 0 };
		const char *dot = strrchr(tok, '.');

		assert_non_null(dot);
		assert_int_equal(strlen(dot + 1), 86); /* 64 raw bytes, no padding */
		assert_null(strchr(tok, '='));
		assert_int_equal(jwt_verify(f->keys, tok, &got, &err), 0);
		assert_true(json_equal(want, got));
		json_decref(want);
		json_decref(got);
		free(tok);
	}
}

static void test_header_shape(void **state)
{
	struct fixture *f = *state;
	char *tok = sign_json(f->keys, "{\"infra_env_id\":\"a\"}");
	unsigned char *raw;
	size_t raw_len;

	assert_int_equal(jwt_b64url_decode(tok, (size_t)(strchr(tok, '.') - tok), &raw, &raw_len),
			 0);
	assert_string_equal((char *)raw, "{\"alg\":\"ES256\",\"typ\":\"JWT\"}");
	free(raw);

	/* Independently of jwt_verify: the key file's key checks the signature
	 * once r||s is turned into DER, so the token really is JOSE ES256. */
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", f->dir, JWT_KEY_FILE);
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	EVP_PKEY *pkey = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
	fclose(fp);
	assert_non_null(pkey);
	const char *d2 = strrchr(tok, '.');
	assert_int_equal(jwt_b64url_decode(d2 + 1, strlen(d2 + 1), &raw, &raw_len), 0);
	assert_int_equal(raw_len, 64);
	ECDSA_SIG *sig = ECDSA_SIG_new();
	ECDSA_SIG_set0(sig, BN_bin2bn(raw, 32, NULL), BN_bin2bn(raw + 32, 32, NULL));
	unsigned char *der = NULL;
	int der_len = i2d_ECDSA_SIG(sig, &der);
	assert_true(der_len > 0);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	assert_int_equal(EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pkey), 1);
	assert_int_equal(EVP_DigestVerify(md, der, (size_t)der_len, (unsigned char *)tok,
					  (size_t)(d2 - tok)),
			 1);
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	ECDSA_SIG_free(sig);
	EVP_PKEY_free(pkey);
	free(raw);
	free(tok);
}

static void test_tamper_rows(void **state)
{
	struct fixture *f = *state;
	char *tok = sign_json(f->keys, "{\"infra_env_id\":\"abc\"}");
	size_t len = strlen(tok);
	char *d1 = strchr(tok, '.'), *d2 = strrchr(tok, '.');
	struct {
		const char *name;
		size_t pos; /* byte to change */
		int want;
	} rows[] = {
		{ "header byte", 2, -EINVAL },
		{ "payload byte", (size_t)(d1 - tok) + 3, -EACCES },
		{ "signature first byte", (size_t)(d2 - tok) + 1, -EACCES },
		{ "signature middle byte", (size_t)(d2 - tok) + 40, -EACCES },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *t = strdup(tok);
		json_t *claims = NULL;
		ah_err err = { 0 };
		int r;

		t[rows[i].pos] = t[rows[i].pos] == 'A' ? 'B' : 'A';
		r = jwt_verify(f->keys, t, &claims, &err);
		if (r == 0)
			fail_msg("row %s verified", rows[i].name);
		/* a changed header or payload byte may also make it undecodable */
		assert_true(r == rows[i].want || r == -EINVAL);
		assert_int_equal(err.status, 401);
		assert_null(claims);
		free(t);
	}

	/* Structural rows. */
	const char *bad[] = { "", "abc", "a.b", "a.b.c.d", "..", "!!.!!.!!", NULL };
	for (size_t i = 0; bad[i]; i++) {
		json_t *claims = NULL;
		ah_err err = { 0 };
		assert_int_equal(jwt_verify(f->keys, bad[i], &claims, &err), -EINVAL);
		assert_true(err.message[0] != '\0');
	}
	assert_int_equal(jwt_verify(f->keys, NULL, &(json_t *){ NULL }, NULL), -EINVAL);

	/* Signature cut short, or with padding appended. */
	char *t = strndup(tok, len - 4);
	json_t *claims = NULL;
	assert_int_equal(jwt_verify(f->keys, t, &claims, NULL), -EINVAL);
	free(t);
	assert_true(asprintf(&t, "%s==", tok) > 0);
	assert_int_equal(jwt_verify(f->keys, t, &claims, NULL), -EINVAL);
	free(t);
	free(tok);
}

static void test_wrong_alg(void **state)
{
	struct fixture *f = *state;
	const char *claims = "{\"infra_env_id\":\"abc\"}";
	unsigned char zeros[64] = { 0 };
	unsigned char mac[32];
	unsigned int mac_len = sizeof(mac);
	json_t *got = NULL;
	ah_err err = { 0 };
	char *t;

	/* alg none, empty signature */
	t = forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", claims, "", 0);
	assert_int_equal(jwt_verify(f->keys, t, &got, &err), -EACCES);
	assert_non_null(strstr(err.message, "none"));
	free(t);

	/* no alg at all */
	t = forge("{\"typ\":\"JWT\"}", claims, zeros, sizeof(zeros));
	assert_int_equal(jwt_verify(f->keys, t, &got, &err), -EACCES);
	free(t);

	/* HS256 keyed with something public: must never be accepted */
	char *h = jwt_b64url_encode("{\"alg\":\"HS256\",\"typ\":\"JWT\"}", 27);
	char *c = jwt_b64url_encode(claims, strlen(claims));
	char *input = NULL;
	assert_true(asprintf(&input, "%s.%s", h, c) > 0);
	HMAC(EVP_sha256(), "key", 3, (unsigned char *)input, strlen(input), mac, &mac_len);
	char *s = jwt_b64url_encode(mac, mac_len);
	assert_true(asprintf(&t, "%s.%s", input, s) > 0);
	assert_int_equal(jwt_verify(f->keys, t, &got, &err), -EACCES);
	assert_non_null(strstr(err.message, "HS256"));
	free(t);
	free(s);
	free(input);
	free(h);
	free(c);

	/* ES256 header, all-zero signature */
	t = forge("{\"alg\":\"ES256\",\"typ\":\"JWT\"}", claims, zeros, sizeof(zeros));
	assert_int_equal(jwt_verify(f->keys, t, &got, &err), -EACCES);
	free(t);
	assert_null(got);
}

static void test_exp_rows(void **state)
{
	struct fixture *f = *state;
	long now = (long)time(NULL);
	struct {
		long exp_delta; /* relative to now */
		const char *literal; /* instead of a number */
		int want;
	} rows[] = {
		{ 3600, NULL, 0 },
		{ -3600, NULL, -EKEYEXPIRED },
		{ -1000000, NULL, -EKEYEXPIRED },
		{ 0, "\"tomorrow\"", -EINVAL },
		{ 0, "null", -EINVAL },
		{ 0, "1e300", 0 },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char text[128];
		json_t *got = NULL;
		ah_err err = { 0 };
		if (rows[i].literal)
			snprintf(text, sizeof(text), "{\"sub\":\"a\",\"exp\":%s}", rows[i].literal);
		else
			snprintf(text, sizeof(text), "{\"sub\":\"a\",\"exp\":%ld}",
				 now + rows[i].exp_delta);
		char *tok = sign_json(f->keys, text);
		int r = jwt_verify(f->keys, tok, &got, &err);
		if (r != rows[i].want)
			fail_msg("row %zu (%s): got %d want %d", i, text, r, rows[i].want);
		if (r == 0)
			json_decref(got);
		else
			assert_int_equal(err.status, 401);
		free(tok);
	}
}

static void test_keys_persist(void **state)
{
	struct fixture *f = *state;
	struct jwt_keys *again = NULL, *other = NULL;
	char path[128], odir[64] = "/tmp/test-jwt-other-XXXXXX";
	struct stat st;
	json_t *got = NULL;
	ah_err err = { 0 };

	snprintf(path, sizeof(path), "%s/%s", f->dir, JWT_KEY_FILE);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	char *tok = sign_json(f->keys, "{\"cluster_id\":\"c\"}");
	assert_int_equal(jwt_keys_load_or_create(f->dir, &again, &err), 0);
	assert_int_equal(jwt_verify(again, tok, &got, &err), 0);
	json_decref(got);

	/* A different key directory means a different key. */
	assert_non_null(mkdtemp(odir));
	assert_int_equal(jwt_keys_load_or_create(odir, &other, &err), 0);
	assert_int_equal(jwt_verify(other, tok, &got, &err), -EACCES);
	jwt_keys_free(other);
	snprintf(path, sizeof(path), "%s/%s", odir, JWT_KEY_FILE);
	unlink(path);

	/* A key file that is not a P-256 key is refused. */
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "garbage\n", 8), 8);
	close(fd);
	assert_int_equal(jwt_keys_load_or_create(odir, &other, &err), -EINVAL);
	assert_non_null(strstr(err.message, "P-256"));
	unlink(path);
	rmdir(odir);

	/* A directory that cannot be written fails cleanly. */
	assert_true(jwt_keys_load_or_create("/nonexistent/dir", &other, &err) < 0);

	jwt_keys_free(again);
	free(tok);
}

static void test_b64url_rows(void **state)
{
	static const struct {
		const char *raw;
		const char *enc;
	} rows[] = {
		{ "", "" },
		{ "f", "Zg" },
		{ "fo", "Zm8" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg" },
		{ "\xfb\xff", "-_8" },
		{ "\xfb\xef\xbe", "----" },
		{ "\xff\xff\xff", "____" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *e = jwt_b64url_encode(rows[i].raw, strlen(rows[i].raw));
		unsigned char *d;
		size_t dl;
		assert_string_equal(e, rows[i].enc);
		assert_int_equal(jwt_b64url_decode(e, strlen(e), &d, &dl), 0);
		assert_int_equal(dl, strlen(rows[i].raw));
		assert_memory_equal(d, rows[i].raw, dl);
		free(d);
		free(e);
	}
	static const char *bad[] = { "Z", "Zg==", "Zh", "Zm+v", "Zm/v", "Zm 9", NULL };
	for (size_t i = 0; bad[i]; i++) {
		unsigned char *d;
		size_t dl;
		assert_int_equal(jwt_b64url_decode(bad[i], strlen(bad[i]), &d, &dl), -EINVAL);
	}
}

/* The verified-signature cache: a token verified once verifies again (from
 * the cache), a token differing in one signature byte still fails, and an
 * expiry is judged on every use, cached signature or not. */
static void test_signature_cache(void **state)
{
	struct fixture *f = *state;
	char *tok = sign_json(f->keys, "{\"infra_env_id\":\"x\"}");
	char *exp_tok = sign_json(f->keys, "{\"sub\":\"y\",\"exp\":1}");
	json_t *claims = NULL;
	ah_err err = { 0 };
	size_t n = strlen(tok);
	char *bad = strdup(tok);

	assert_non_null(bad);
	for (int round = 0; round < 3; round++) {
		assert_int_equal(jwt_verify(f->keys, tok, &claims, &err), 0);
		assert_string_equal(json_string_value(json_object_get(claims, "infra_env_id")), "x");
		json_decref(claims);
		claims = NULL;
		/* one changed character of the signature */
		bad[n - 3] = bad[n - 3] == 'A' ? 'B' : 'A';
		assert_true(jwt_verify(f->keys, bad, &claims, &err) < 0);
		assert_null(claims);
		memcpy(bad, tok, n);
		assert_int_equal(jwt_verify(f->keys, exp_tok, &claims, &err), -EKEYEXPIRED);
		assert_null(claims);
	}
	free(bad);
	free(tok);
	free(exp_tok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_header_shape, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tamper_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wrong_alg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_exp_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keys_persist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signature_cache, setup, teardown),
		cmocka_unit_test(test_b64url_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
