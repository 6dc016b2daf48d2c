/* Tests for src/http/creds.c: first-start creation, reuse, serving
 * certificate renewal, chain and SANs, the kubeconfig, token comparison.
 * Each test works in a fresh directory under /tmp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/util.h"
#include "base/yamljson.h"
#include "http/creds.h"

static const char *const files[] = {
	"ca.crt", "ca.key", "serving.crt", "serving.key", "admin.token", "kubeconfig", NULL,
};

struct fixture {
	char base[64];
	char dir[128];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	strcpy(f->base, "/tmp/ah-test-creds-XXXXXX");
	if (!mkdtemp(f->base)) {
		free(f);
		return -1;
	}
	/* A subdirectory, so the tests also see creds create it. */
	snprintf(f->dir, sizeof(f->dir), "%s/data", f->base);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char p[256];
	size_t i;

	for (i = 0; files[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, files[i]);
		unlink(p);
	}
	rmdir(f->dir);
	rmdir(f->base);
	free(f);
	return 0;
}

static const char *path_in(const struct fixture *f, const char *name)
{
	static char p[256];

	snprintf(p, sizeof(p), "%s/%s", f->dir, name);
	return p;
}

static char *slurp(const struct fixture *f, const char *name)
{
	char *s = NULL;

	assert_int_equal(util_read_file(path_in(f, name), &s, NULL), 0);
	return s;
}

static int mode_of(const struct fixture *f, const char *name)
{
	struct stat st;

	assert_int_equal(stat(path_in(f, name), &st), 0);
	return (int)(st.st_mode & 07777);
}

static void load(const struct fixture *f, const char *const *hosts, struct creds *c)
{
	ah_err err = { 0 };
	int r = creds_load_or_create(f->dir, hosts, c, &err);

	if (r != 0)
		fail_msg("creds_load_or_create: %d %s", r, err.message);
}

static X509 *cert_of(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	assert_non_null(x);
	return x;
}

static EVP_PKEY *key_of(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);

	BIO_free(b);
	assert_non_null(k);
	return k;
}

static void assert_p256(EVP_PKEY *k)
{
	char group[64];

	assert_int_equal(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
	assert_int_equal(EVP_PKEY_get_group_name(k, group, sizeof(group), NULL), 1);
	assert_string_equal(group, "prime256v1");
}

/* Days from now until the certificate's notAfter. */
static int days_left(X509 *x)
{
	int days = 0, secs = 0;

	assert_int_equal(ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(x)), 1);
	return days;
}

static void test_first_call_creates(void **state)
{
	struct fixture *f = *state;
	struct creds c = { 0 };
	char *s;
	size_t i;

	load(f, NULL, &c);
	assert_int_equal(mode_of(f, "ca.key"), 0600);
	assert_int_equal(mode_of(f, "serving.key"), 0600);
	assert_int_equal(mode_of(f, "admin.token"), 0600);
	assert_int_equal(mode_of(f, "ca.crt") & 0022, 0);
	assert_int_equal(mode_of(f, "serving.crt") & 0022, 0);
	assert_int_equal(mode_of(f, "ca.crt") & 0400, 0400);

	s = slurp(f, "ca.crt");
	assert_string_equal(s, c.ca_pem);
	free(s);
	s = slurp(f, "serving.crt");
	assert_string_equal(s, c.cert_pem);
	free(s);
	s = slurp(f, "serving.key");
	assert_string_equal(s, c.key_pem);
	assert_non_null(strstr(s, "-----BEGIN PRIVATE KEY-----"));
	free(s);

	assert_int_equal(strlen(c.admin_token), 64);
	for (i = 0; i < 64; i++)
		assert_non_null(strchr("0123456789abcdef", c.admin_token[i]));
	s = slurp(f, "admin.token");
	assert_int_equal(strncmp(s, c.admin_token, 64), 0);
	assert_string_equal(s + 64, "\n");
	free(s);
	creds_release(&c);
	assert_null(c.ca_pem);
	assert_null(c.admin_token);
	creds_release(&c);
}

static void test_second_call_reuses(void **state)
{
	struct fixture *f = *state;
	struct creds a = { 0 }, b = { 0 };

	load(f, NULL, &a);
	load(f, NULL, &b);
	assert_string_equal(a.ca_pem, b.ca_pem);
	assert_string_equal(a.cert_pem, b.cert_pem);
	assert_string_equal(a.key_pem, b.key_pem);
	assert_string_equal(a.admin_token, b.admin_token);
	creds_release(&a);
	creds_release(&b);
}

static void test_new_host_regenerates_serving_only(void **state)
{
	struct fixture *f = *state;
	const char *const more[] = { "agenthub-1.example.com", "10.1.2.3", "fd00::5", NULL };
	const char *const fewer[] = { "10.1.2.3", "LOCALHOST", NULL };
	struct creds a = { 0 }, b = { 0 }, c = { 0 };
	X509 *x;

	load(f, NULL, &a);
	load(f, more, &b);
	assert_string_equal(a.ca_pem, b.ca_pem);
	assert_string_equal(a.admin_token, b.admin_token);
	assert_string_not_equal(a.cert_pem, b.cert_pem);
	assert_string_not_equal(a.key_pem, b.key_pem);
	x = cert_of(b.cert_pem);
	assert_int_equal(X509_check_host(x, "agenthub-1.example.com", 0, 0, NULL), 1);
	assert_int_equal(X509_check_ip_asc(x, "10.1.2.3", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "fd00::5", 0), 1);
	X509_free(x);

	/* Names already covered keep the certificate. */
	load(f, fewer, &c);
	assert_string_equal(b.cert_pem, c.cert_pem);
	assert_string_equal(b.key_pem, c.key_pem);
	creds_release(&a);
	creds_release(&b);
	creds_release(&c);
}

static void test_chain_and_sans(void **state)
{
	struct fixture *f = *state;
	const char *const hosts[] = { "node1.lab", "192.168.7.9", NULL };
	struct creds c = { 0 };
	X509 *ca, *x;
	EVP_PKEY *k;
	X509_STORE *store;
	X509_STORE_CTX *ctx;
	X509_NAME *subj;
	char cn[64];

	load(f, hosts, &c);
	ca = cert_of(c.ca_pem);
	x = cert_of(c.cert_pem);

	subj = X509_get_subject_name(ca);
	assert_true(X509_NAME_get_text_by_NID(subj, NID_commonName, cn, sizeof(cn)) > 0);
	assert_string_equal(cn, "agenthub-ca");
	assert_int_equal(X509_check_ca(ca), 1);
	assert_true(X509_get_key_usage(ca) & KU_KEY_CERT_SIGN);
	assert_p256(X509_get0_pubkey(ca));
	assert_in_range(days_left(ca), 3640, 3660);

	assert_int_equal(X509_check_ca(x), 0);
	assert_true(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
	assert_in_range(days_left(x), 360, 366);
	assert_p256(X509_get0_pubkey(x));
	k = key_of(c.key_pem);
	assert_int_equal(X509_check_private_key(x, k), 1);
	EVP_PKEY_free(k);
	assert_int_not_equal(ASN1_INTEGER_cmp(X509_get0_serialNumber(ca), X509_get0_serialNumber(x)), 0);

	assert_int_equal(X509_check_host(x, "localhost", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "node1.lab", 0, 0, NULL), 1);
	assert_int_equal(X509_check_host(x, "other.lab", 0, 0, NULL), 0);
	assert_int_equal(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "::1", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "192.168.7.9", 0), 1);
	assert_int_equal(X509_check_ip_asc(x, "192.168.7.10", 0), 0);

	store = X509_STORE_new();
	ctx = X509_STORE_CTX_new();
	assert_int_equal(X509_STORE_add_cert(store, ca), 1);
	assert_int_equal(X509_STORE_CTX_init(ctx, store, x, NULL), 1);
	assert_int_equal(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
	assert_int_equal(X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx), "node1.lab", 0), 1);
	if (X509_verify_cert(ctx) != 1)
		fail_msg("verify: %s", X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(store);
	X509_free(ca);
	X509_free(x);
	creds_release(&c);
}

static void test_openssl_cli_verifies(void **state)
{
	struct fixture *f = *state;
	struct creds c = { 0 };
	char cmd[512];

	if (system("command -v openssl >/dev/null 2>&1") != 0)
		skip();
	load(f, NULL, &c);
	snprintf(cmd, sizeof(cmd), "openssl verify -CAfile %s/ca.crt -purpose sslserver %s/serving.crt >/dev/null",
		 f->dir, f->dir);
	assert_int_equal(system(cmd), 0);
	creds_release(&c);
}

/* Re-sign the stored serving certificate so it expires in `days` days. */
static void age_serving_cert(const struct fixture *f, int days)
{
	char *ca_pem = slurp(f, "ca.crt"), *ca_key_pem = slurp(f, "ca.key");
	char *pem = slurp(f, "serving.crt");
	X509 *ca = cert_of(ca_pem), *x = cert_of(pem);
	EVP_PKEY *ca_key = key_of(ca_key_pem);
	BIO *b = BIO_new(BIO_s_mem());
	char *data;
	long n;

	assert_non_null(X509_time_adj_ex(X509_getm_notAfter(x), days, 0, NULL));
	assert_true(X509_sign(x, ca_key, EVP_sha256()) > 0);
	assert_int_equal(PEM_write_bio_X509(b, x), 1);
	n = BIO_get_mem_data(b, &data);
	assert_int_equal(util_write_file_atomic(path_in(f, "serving.crt"), data, (size_t)n, 0644), 0);
	BIO_free(b);
	X509_free(ca);
	X509_free(x);
	EVP_PKEY_free(ca_key);
	free(ca_pem);
	free(ca_key_pem);
	free(pem);
}

static void test_expiring_serving_is_renewed(void **state)
{
	struct fixture *f = *state;
	struct creds a = { 0 }, b = { 0 }, c = { 0 };
	X509 *x;

	load(f, NULL, &a);
	creds_release(&a);
	age_serving_cert(f, 40);
	load(f, NULL, &a);
	x = cert_of(a.cert_pem);
	assert_in_range(days_left(x), 39, 40);
	X509_free(x);

	age_serving_cert(f, 20);
	load(f, NULL, &b);
	load(f, NULL, &c);
	assert_string_equal(a.ca_pem, b.ca_pem);
	assert_string_not_equal(a.cert_pem, b.cert_pem);
	x = cert_of(b.cert_pem);
	assert_in_range(days_left(x), 360, 366);
	X509_free(x);
	assert_string_equal(b.cert_pem, c.cert_pem);
	creds_release(&a);
	creds_release(&b);
	creds_release(&c);
}

static void test_new_ca_replaces_serving(void **state)
{
	struct fixture *f = *state;
	struct creds a = { 0 }, b = { 0 };
	X509 *ca, *x;

	load(f, NULL, &a);
	assert_int_equal(unlink(path_in(f, "ca.crt")), 0);
	load(f, NULL, &b);
	assert_string_not_equal(a.ca_pem, b.ca_pem);
	assert_string_not_equal(a.cert_pem, b.cert_pem);
	assert_string_equal(a.admin_token, b.admin_token);
	ca = cert_of(b.ca_pem);
	x = cert_of(b.cert_pem);
	assert_int_equal(X509_verify(x, X509_get0_pubkey(ca)), 1);
	X509_free(ca);
	X509_free(x);
	creds_release(&a);
	creds_release(&b);
}

static void test_damaged_serving_is_replaced(void **state)
{
	struct fixture *f = *state;
	struct creds a = { 0 }, b = { 0 };

	load(f, NULL, &a);
	assert_int_equal(util_write_file_atomic(path_in(f, "serving.crt"), "junk\n", 5, 0644), 0);
	load(f, NULL, &b);
	assert_string_equal(a.ca_pem, b.ca_pem);
	assert_string_not_equal(a.cert_pem, b.cert_pem);
	creds_release(&a);
	creds_release(&b);
}

static void test_errors(void **state)
{
	struct fixture *f = *state;
	const char *const bad_hosts[][2] = {
		{ "bad host", NULL }, { "", NULL }, { "a..b", NULL }, { "x\"y", NULL },
		{ "-", NULL }, { "a.", NULL }, { "a-.b", NULL }, { "x.-b", NULL },
	};
	struct creds c = { 0 }, untouched = { 0 };
	ah_err err = { 0 };
	char *before, *after;
	size_t i;

	for (i = 0; i < sizeof(bad_hosts) / sizeof(bad_hosts[0]); i++) {
		if (creds_load_or_create(f->dir, bad_hosts[i], &c, &err) != -EINVAL)
			fail_msg("row %zu: host \"%s\" accepted", i, bad_hosts[i][0]);
		assert_memory_equal(&c, &untouched, sizeof(c));
	}

	load(f, NULL, &c);
	creds_release(&c);
	before = slurp(f, "ca.crt");
	assert_int_equal(unlink(path_in(f, "ca.key")), 0);
	assert_int_equal(creds_load_or_create(f->dir, NULL, &c, &err), -ENOENT);
	assert_non_null(strstr(err.message, "ca.key"));
	assert_memory_equal(&c, &untouched, sizeof(c));
	after = slurp(f, "ca.crt");
	assert_string_equal(before, after);
	free(before);
	free(after);

	assert_int_equal(util_write_file_atomic(path_in(f, "ca.key"), "junk\n", 5, 0600), 0);
	assert_int_equal(creds_load_or_create(f->dir, NULL, &c, &err), -EINVAL);
}

static void test_token_file(void **state)
{
	static const struct { const char *content, *want; } rows[] = {
		{ "0123456789abcdef0123\n", "0123456789abcdef0123" },
		{ "Tok-en._~+/xyzABC12==\r\n", "Tok-en._~+/xyzABC12==" },
		{ "0123456789abcdef", "0123456789abcdef" },
		{ "short\n", NULL },
		{ "\n", NULL },
		{ "0123456789abcdef 0123\n", NULL },
		{ "0123456789abcdef\"0123\n", NULL },
		{ "0123456789abcdef=0123\n", NULL },
	};
	struct fixture *f = *state;
	struct creds c = { 0 };
	ah_err err = { 0 };
	size_t i;

	load(f, NULL, &c);
	creds_release(&c);
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *t = rows[i].content;
		int r;

		/* A token copied in by hand, possibly with a loose mode. */
		assert_int_equal(util_write_file_atomic(path_in(f, "admin.token"), t, strlen(t), 0644), 0);
		r = creds_load_or_create(f->dir, NULL, &c, &err);
		if (!rows[i].want) {
			if (r != -EINVAL)
				fail_msg("row %zu: accepted, r=%d", i, r);
			continue;
		}
		if (r != 0)
			fail_msg("row %zu: %d %s", i, r, err.message);
		assert_string_equal(c.admin_token, rows[i].want);
		assert_int_equal(mode_of(f, "admin.token"), 0600);
		creds_release(&c);
	}
}

static void test_kubeconfig(void **state)
{
	struct fixture *f = *state;
	struct creds c = { 0 };
	ah_err err = { 0 };
	json_t *docs = NULL, *kc, *cluster, *user, *ctx;
	unsigned char *ca = NULL;
	size_t ca_len = 0;
	char *text;
	const char *b64;

	load(f, NULL, &c);
	assert_int_equal(creds_write_kubeconfig(path_in(f, "kubeconfig"), "https://127.0.0.1:6443", &c, &err), 0);
	assert_int_equal(mode_of(f, "kubeconfig"), 0600);
	text = slurp(f, "kubeconfig");
	if (yaml_parse_all(text, strlen(text), &docs, &err) != 0)
		fail_msg("kubeconfig: %s", err.message);
	free(text);
	assert_int_equal(json_array_size(docs), 1);
	kc = json_array_get(docs, 0);
	assert_string_equal(json_string_value(json_object_get(kc, "apiVersion")), "v1");
	assert_string_equal(json_string_value(json_object_get(kc, "kind")), "Config");
	assert_string_equal(json_string_value(json_object_get(kc, "current-context")), "agenthub");

	assert_int_equal(json_array_size(json_object_get(kc, "clusters")), 1);
	cluster = json_array_get(json_object_get(kc, "clusters"), 0);
	assert_string_equal(json_string_value(json_object_get(cluster, "name")), "agenthub");
	cluster = json_object_get(cluster, "cluster");
	assert_string_equal(json_string_value(json_object_get(cluster, "server")), "https://127.0.0.1:6443");
	b64 = json_string_value(json_object_get(cluster, "certificate-authority-data"));
	assert_non_null(b64);
	assert_int_equal(util_base64_decode(b64, strlen(b64), &ca, &ca_len), 0);
	assert_int_equal(ca_len, strlen(c.ca_pem));
	assert_memory_equal(ca, c.ca_pem, ca_len);
	free(ca);

	assert_int_equal(json_array_size(json_object_get(kc, "users")), 1);
	user = json_array_get(json_object_get(kc, "users"), 0);
	assert_string_equal(json_string_value(json_object_get(user, "name")), "admin");
	assert_string_equal(json_string_value(json_object_get(json_object_get(user, "user"), "token")),
			    c.admin_token);

	assert_int_equal(json_array_size(json_object_get(kc, "contexts")), 1);
	ctx = json_array_get(json_object_get(kc, "contexts"), 0);
	assert_string_equal(json_string_value(json_object_get(ctx, "name")), "agenthub");
	ctx = json_object_get(ctx, "context");
	assert_string_equal(json_string_value(json_object_get(ctx, "cluster")), "agenthub");
	assert_string_equal(json_string_value(json_object_get(ctx, "user")), "admin");
	assert_string_equal(json_string_value(json_object_get(ctx, "namespace")), "default");
	json_decref(docs);

	assert_int_equal(creds_write_kubeconfig(path_in(f, "kubeconfig"), "http://127.0.0.1:6443", &c, &err), -EINVAL);
	assert_int_equal(creds_write_kubeconfig(path_in(f, "kubeconfig"), "https://a\"b", &c, &err), -EINVAL);
	assert_int_equal(creds_write_kubeconfig(path_in(f, "kubeconfig"), "https://a b", &c, &err), -EINVAL);
	assert_int_equal(creds_write_kubeconfig("/nonexistent-dir/kubeconfig", "https://h:1", &c, &err), -ENOENT);
	creds_release(&c);
}

static void test_token_ok_rows(void **state)
{
	char tok[] = "0123456789abcdef0123456789abcdef";
	struct creds c = { .admin_token = tok };
	struct creds empty = { 0 };
	static const struct { const char *presented; bool ok; } rows[] = {
		{ "0123456789abcdef0123456789abcdef", true },
		{ "0123456789abcdef0123456789abcdeF", false },
		{ "1123456789abcdef0123456789abcdef", false },
		{ "0123456789abcdef0123456789abcde", false },
		{ "0123456789abcdef0123456789abcdef0", false },
		{ "Bearer 0123456789abcdef0123456789abcdef", false },
		{ "", false },
		{ NULL, false },
	};
	size_t i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		if (creds_token_ok(&c, rows[i].presented) != rows[i].ok)
			fail_msg("row %zu: %s", i, rows[i].presented ? rows[i].presented : "(null)");
	assert_false(creds_token_ok(&empty, ""));
	assert_false(creds_token_ok(&empty, "x"));
	assert_false(creds_token_ok(NULL, "x"));
}

/* ServiceAccount tokens: the key is made once and kept (0600), a signed
 * token verifies with its claims, and any change to it, another key, another
 * algorithm or a malformed token does not. */
static void test_sa_jwt(void **state)
{
	struct fixture *f = *state;
	struct creds c = { 0 }, again = { 0 }, other = { 0 };
	json_t *claims = json_pack("{s:s,s:I}", "sub", "system:serviceaccount:ns:sa", "exp", (json_int_t)4102444800);
	json_t *got = NULL;
	char *tok, *bad;
	size_t n;

	load(f, NULL, &c);
	assert_true(c.sa_key_set);
	assert_int_equal(mode_of(f, "sa.key"), 0600);
	tok = creds_jwt_sign(&c, claims);
	assert_non_null(tok);
	assert_int_equal(creds_jwt_verify(&c, tok, &got), 0);
	assert_true(json_equal(got, claims));
	json_decref(got);
	got = NULL;
	load(f, NULL, &again);
	assert_memory_equal(c.sa_key, again.sa_key, sizeof(c.sa_key));
	assert_int_equal(creds_jwt_verify(&again, tok, &got), 0);
	json_decref(got);
	got = NULL;
	/* Each part of the token matters. */
	n = strlen(tok);
	bad = strdup(tok);
	for (size_t i = 0; i < n; i += 7) {
		if (bad[i] == '.')
			continue;
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		assert_int_equal(creds_jwt_verify(&c, bad, &got), -EINVAL);
		bad[i] = tok[i];
	}
	free(bad);
	memcpy(&other, &c, sizeof(other));
	other.sa_key[0] ^= 1;
	assert_int_equal(creds_jwt_verify(&other, tok, &got), -EINVAL);
	assert_int_equal(creds_jwt_verify(&c, "a.b", &got), -EINVAL);
	assert_int_equal(creds_jwt_verify(&c, "a.b.c.d", &got), -EINVAL);
	assert_int_equal(creds_jwt_verify(&c, "", &got), -EINVAL);
	/* alg "none" with an empty signature. */
	assert_int_equal(creds_jwt_verify(&c, "eyJhbGciOiJub25lIn0.e30.", &got), -EINVAL);
	assert_null(got);
	free(tok);
	json_decref(claims);
	creds_release(&c);
	creds_release(&again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_first_call_creates, setup, teardown),
		cmocka_unit_test_setup_teardown(test_second_call_reuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_host_regenerates_serving_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain_and_sans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_openssl_cli_verifies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expiring_serving_is_renewed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_ca_replaces_serving, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged_serving_is_replaced, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_token_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kubeconfig, setup, teardown),
		cmocka_unit_test(test_token_ok_rows),
		cmocka_unit_test_setup_teardown(test_sa_jwt, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
