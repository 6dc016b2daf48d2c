/* creds.c - the CA, serving certificate and admin token in the data directory.
 *
 * Everything here runs once at start-up (and in tests), except
 * creds_token_ok(), which runs on every request.  Certificates are built
 * with OpenSSL; the serving key is handed to the HTTP layer as PKCS#8 PEM,
 * which GnuTLS (behind libmicrohttpd) reads.  See creds.h for the files. */
#include "http/creds.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/strbuf.h"
#include "base/util.h"

#define CA_DAYS 3650
#define SERVING_DAYS 365
#define RENEW_BEFORE_SECS (30L * 24 * 3600)
/* Certificates start an hour in the past so that a client whose clock is a
 * little behind ours does not see a certificate from the future. */
#define BACKDATE_SECS 3600
#define TOKEN_BYTES 32
/* A shorter token (one an operator wrote by hand) could be guessed. */
#define TOKEN_MIN_LEN 16
#define TOKEN_MAX_LEN 1024
/* Leaves room for the ".tmp.PID" suffix util_write_file_atomic() appends. */
#define CREDS_PATH_MAX 4000

#define SECRET_MODE 0600

static bool token_digest(const char *s, unsigned char out[32]);
#define PUBLIC_MODE 0644

/* Names every serving certificate carries, so local clients always work. */
static const char *const default_hosts[] = { "localhost", "127.0.0.1", "::1", NULL };

enum host_kind { HOST_BAD, HOST_DNS, HOST_IP };

static int ssl_error(ah_err *err, int errno_value, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char detail[256] = "";

	if (e)
		ERR_error_string_n(e, detail, sizeof(detail));
	ERR_clear_error();
	return ah_err_set(err, errno_value, 500, "InternalError", "%s%s%s", what,
			  detail[0] ? ": " : "", detail);
}

static int join_path(char *buf, const char *dir, const char *name, ah_err *err)
{
	int n = snprintf(buf, CREDS_PATH_MAX, "%s/%s", dir, name);

	if (n < 0 || n >= CREDS_PATH_MAX)
		return ah_err_set(err, ENAMETOOLONG, 500, "InternalError",
				  "credentials directory path too long");
	return 0;
}

static void free_secret(char *s)
{
	if (s) {
		OPENSSL_cleanse(s, strlen(s));
		free(s);
	}
}

/* Classify a host as an IP address (its bytes into ip, length into ip_len)
 * or a DNS name (RFC 1123: dot-separated labels of letters, digits and inner
 * hyphens, at most 63 characters each and 253 in all); anything else cannot
 * be a SAN we want. */
static enum host_kind host_classify(const char *h, unsigned char ip[16], size_t *ip_len)
{
	size_t label = 0, total = 0;
	const char *p;

	if (inet_pton(AF_INET, h, ip) == 1) {
		*ip_len = 4;
		return HOST_IP;
	}
	if (inet_pton(AF_INET6, h, ip) == 1) {
		*ip_len = 16;
		return HOST_IP;
	}
	for (p = h; *p; p++, total++) {
		char ch = *p;

		if (ch == '.') {
			if (label == 0 || p[-1] == '-')
				return HOST_BAD;
			label = 0;
			continue;
		}
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-'))
			return HOST_BAD;
		if (ch == '-' && label == 0)
			return HOST_BAD;
		if (++label > 63)
			return HOST_BAD;
	}
	if (total == 0 || total > 253 || label == 0 || p[-1] == '-')
		return HOST_BAD;
	return HOST_DNS;
}

static int check_hosts(const char *const *hosts, ah_err *err)
{
	unsigned char ip[16];
	size_t ip_len, i;

	for (i = 0; hosts && hosts[i]; i++)
		if (host_classify(hosts[i], ip, &ip_len) == HOST_BAD)
			return ah_err_set(err, EINVAL, 500, "InternalError",
					  "host \"%.253s\" is neither an IP address nor a DNS name",
					  hosts[i]);
	return 0;
}

/* RFC 6750 b64token: what may follow "Bearer " in an Authorization header.
 * It also holds no quote or backslash, so it can be written into YAML. */
static bool token_valid(const char *t)
{
	size_t n = strlen(t), i = 0;

	if (n < TOKEN_MIN_LEN || n > TOKEN_MAX_LEN)
		return false;
	for (; i < n; i++) {
		char ch = t[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || strchr("-._~+/", ch)))
			break;
	}
	while (i < n && t[i] == '=')
		i++;
	return i == n;
}

/* OpenSSL would otherwise prompt on the terminal for an encrypted key. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static X509 *cert_from_pem(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, no_passphrase, NULL) : NULL;

	BIO_free(b);
	ERR_clear_error();
	return x;
}

static EVP_PKEY *key_from_pem(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;

	BIO_free(b);
	ERR_clear_error();
	return k;
}

static char *bio_to_string(BIO *b)
{
	char *data, *s;
	long n = BIO_get_mem_data(b, &data);

	if (n <= 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, data, (size_t)n);
	s[n] = '\0';
	return s;
}

static char *cert_to_pem(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s = NULL;

	if (b && PEM_write_bio_X509(b, x) == 1)
		s = bio_to_string(b);
	BIO_free(b);
	return s;
}

/* PKCS#8, unencrypted; the secure-memory BIO wipes its copy when freed. */
static char *key_to_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_secmem());
	char *s = NULL;

	if (b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) == 1)
		s = bio_to_string(b);
	BIO_free(b);
	return s;
}

/* Read a secret file, first making sure only its owner can read it: an
 * operator's `cp` or a restore from backup may have loosened the mode. */
static int read_secret(const char *path, char **ret, ah_err *err)
{
	struct stat st;
	int r;

	if (stat(path, &st) < 0) {
		r = -errno;
		if (r == -ENOENT)
			return r;
		return ah_err_set(err, r, 500, "InternalError", "%s: %s", path, strerror(-r));
	}
	if ((st.st_mode & 077) && chmod(path, SECRET_MODE) < 0) {
		r = -errno;
		return ah_err_set(err, r, 500, "InternalError",
				  "%s is readable by others and cannot be restricted: %s", path,
				  strerror(-r));
	}
	r = util_read_file(path, ret, NULL);
	if (r < 0 && r != -ENOENT)
		return ah_err_set(err, r, 500, "InternalError", "%s: %s", path, strerror(-r));
	return r;
}

static int read_public(const char *path, char **ret, ah_err *err)
{
	int r = util_read_file(path, ret, NULL);

	if (r < 0 && r != -ENOENT)
		return ah_err_set(err, r, 500, "InternalError", "%s: %s", path, strerror(-r));
	return r;
}

static int write_file(const char *path, const char *s, int mode, ah_err *err)
{
	int r = util_write_file_atomic(path, s, strlen(s), mode);

	if (r < 0)
		return ah_err_set(err, r, 500, "InternalError", "writing %s: %s", path, strerror(-r));
	return 0;
}

static int set_random_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	if (util_random_bytes(b, sizeof(b)) < 0)
		return -EIO;
	/* RFC 5280 wants a positive serial of at most 20 octets; a fixed top
	 * bit keeps it positive and of constant length. */
	b[0] = (unsigned char)((b[0] & 0x7f) | 0x40);
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -ENOMEM;
}

static int add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(x, ext, -1) == 1;
	X509_EXTENSION_free(ext);
	return ok ? 0 : -ENOMEM;
}

static int push_san(GENERAL_NAMES *names, const char *h)
{
	unsigned char ip[16];
	size_t ip_len = 0;
	enum host_kind kind = host_classify(h, ip, &ip_len);
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_STRING *v = kind == HOST_IP ? ASN1_OCTET_STRING_new() : ASN1_IA5STRING_new();

	if (!gn || !v || kind == HOST_BAD)
		goto fail;
	if (kind == HOST_IP ? !ASN1_OCTET_STRING_set(v, ip, (int)ip_len) : !ASN1_STRING_set(v, h, -1))
		goto fail;
	GENERAL_NAME_set0_value(gn, kind == HOST_IP ? GEN_IPADD : GEN_DNS, v);
	if (!sk_GENERAL_NAME_push(names, gn)) {
		GENERAL_NAME_free(gn);
		return -ENOMEM;
	}
	return 0;
fail:
	ASN1_STRING_free(v);
	GENERAL_NAME_free(gn);
	return -ENOMEM;
}

static bool listed_before(const char *const *defaults, const char *const *hosts, size_t i)
{
	size_t j;

	for (j = 0; defaults[j]; j++)
		if (strcasecmp(defaults[j], hosts[i]) == 0)
			return true;
	for (j = 0; j < i; j++)
		if (strcasecmp(hosts[j], hosts[i]) == 0)
			return true;
	return false;
}

static int add_sans(X509 *x, const char *const *hosts)
{
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	size_t i;
	int r = names ? 0 : -ENOMEM;

	for (i = 0; r == 0 && default_hosts[i]; i++)
		r = push_san(names, default_hosts[i]);
	for (i = 0; r == 0 && hosts && hosts[i]; i++)
		if (!listed_before(default_hosts, hosts, i))
			r = push_san(names, hosts[i]);
	if (r == 0 && X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, X509V3_ADD_DEFAULT) != 1)
		r = -ENOMEM;
	GENERAL_NAMES_free(names);
	return r;
}

/* Build and sign a certificate for `key`: the CA (self-signed) when issuer
 * is NULL, else a serving certificate for hosts signed by issuer. */
static X509 *make_cert(EVP_PKEY *key, X509 *issuer, EVP_PKEY *issuer_key, const char *const *hosts)
{
	bool ca = issuer == NULL;
	X509 *x = X509_new();
	X509_NAME *name;

	if (!x || X509_set_version(x, X509_VERSION_3) != 1 || set_random_serial(x) < 0)
		goto fail;
	if (!X509_gmtime_adj(X509_getm_notBefore(x), -BACKDATE_SECS) ||
	    !X509_time_adj_ex(X509_getm_notAfter(x), ca ? CA_DAYS : SERVING_DAYS, 0, NULL))
		goto fail;
	if (X509_set_pubkey(x, key) != 1)
		goto fail;
	name = X509_get_subject_name(x);
	if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
				       (const unsigned char *)(ca ? "agenthub-ca" : "agenthub"),
				       -1, -1, 0) != 1)
		goto fail;
	if (X509_set_issuer_name(x, ca ? name : X509_get_subject_name(issuer)) != 1)
		goto fail;
	if (ca) {
		/* pathlen:0 - this CA signs our serving certificates, never another CA. */
		if (add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
		    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
		    add_ext(x, x, NID_subject_key_identifier, "hash") < 0)
			goto fail;
	} else {
		if (add_ext(x, issuer, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
		    add_ext(x, issuer, NID_key_usage, "critical,digitalSignature") < 0 ||
		    add_ext(x, issuer, NID_ext_key_usage, "serverAuth") < 0 ||
		    add_ext(x, issuer, NID_subject_key_identifier, "hash") < 0 ||
		    add_ext(x, issuer, NID_authority_key_identifier, "keyid:always") < 0 ||
		    add_sans(x, hosts) < 0)
			goto fail;
	}
	if (X509_sign(x, ca ? key : issuer_key, EVP_sha256()) <= 0)
		goto fail;
	return x;
fail:
	X509_free(x);
	return NULL;
}

static EVP_PKEY *new_key(void)
{
	return EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
}

static bool cert_covers(X509 *x, const char *const *list)
{
	unsigned char ip[16];
	size_t ip_len, i;

	for (i = 0; list && list[i]; i++) {
		const char *h = list[i];
		int ok;

		if (host_classify(h, ip, &ip_len) == HOST_IP)
			ok = X509_check_ip(x, ip, ip_len, 0);
		else
			ok = X509_check_host(x, h, strlen(h),
					     X509_CHECK_FLAG_NO_WILDCARDS |
					     X509_CHECK_FLAG_NEVER_CHECK_SUBJECT, NULL);
		if (ok != 1)
			return false;
	}
	return true;
}

/* Whether the stored serving certificate can go on being used. */
static bool serving_usable(X509 *cert, EVP_PKEY *key, X509 *ca, const char *const *hosts)
{
	time_t now = time(NULL), renew = now + RENEW_BEFORE_SECS;
	EVP_PKEY *ca_pub = X509_get0_pubkey(ca);
	bool ok;

	ok = X509_check_private_key(cert, key) == 1 &&
	     X509_check_issued(ca, cert) == X509_V_OK &&
	     ca_pub && X509_verify(cert, ca_pub) == 1 &&
	     X509_check_purpose(cert, X509_PURPOSE_SSL_SERVER, 0) == 1 &&
	     X509_cmp_time(X509_get0_notBefore(cert), &now) == -1 &&
	     X509_cmp_time(X509_get0_notAfter(cert), &renew) == 1 &&
	     cert_covers(cert, default_hosts) && cert_covers(cert, hosts);
	ERR_clear_error();
	return ok;
}

/* Load the CA, or make one if ca.crt is absent.  *ret_created tells the
 * caller that any serving certificate on disk was signed by another CA. */
static int ca_load_or_create(const char *dir, X509 **ret_cert, EVP_PKEY **ret_key,
			     bool *ret_created, ah_err *err)
{
	char crt_path[CREDS_PATH_MAX], key_path[CREDS_PATH_MAX];
	char *crt_pem = NULL, *key_pem = NULL;
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	int r;

	if ((r = join_path(crt_path, dir, "ca.crt", err)) < 0 ||
	    (r = join_path(key_path, dir, "ca.key", err)) < 0)
		return r;
	r = read_public(crt_path, &crt_pem, err);
	if (r == -ENOENT) {
		/* A ca.key without ca.crt is left from a start that stopped
		 * half-way (the key is written first), so it is replaced. */
		key = new_key();
		if (!key)
			return ssl_error(err, EIO, "generating the CA key");
		cert = make_cert(key, NULL, NULL, NULL);
		if (!cert) {
			r = ssl_error(err, EIO, "building the CA certificate");
			goto out;
		}
		key_pem = key_to_pem(key);
		crt_pem = cert_to_pem(cert);
		if (!key_pem || !crt_pem) {
			r = ssl_error(err, ENOMEM, "encoding the CA");
			goto out;
		}
		if ((r = write_file(key_path, key_pem, SECRET_MODE, err)) < 0 ||
		    (r = write_file(crt_path, crt_pem, PUBLIC_MODE, err)) < 0)
			goto out;
		*ret_created = true;
	} else if (r < 0) {
		return r;
	} else {
		r = read_secret(key_path, &key_pem, err);
		if (r == -ENOENT) {
			r = ah_err_set(err, ENOENT, 500, "InternalError",
				       "%s exists but %s does not; restore the key or remove both "
				       "(clients trusting the old CA then need a new kubeconfig)",
				       crt_path, key_path);
			goto out;
		}
		if (r < 0)
			goto out;
		cert = cert_from_pem(crt_pem);
		key = key_from_pem(key_pem);
		if (!cert || !key) {
			r = ah_err_set(err, EINVAL, 500, "InternalError", "%s: not a PEM %s",
				       cert ? key_path : crt_path,
				       cert ? "private key" : "certificate");
			goto out;
		}
		if (X509_check_ca(cert) < 1 || X509_check_private_key(cert, key) != 1) {
			ERR_clear_error();
			r = ah_err_set(err, EINVAL, 500, "InternalError",
				       "%s is not a CA certificate for the key in %s",
				       crt_path, key_path);
			goto out;
		}
		*ret_created = false;
	}
	*ret_cert = cert;
	*ret_key = key;
	cert = NULL;
	key = NULL;
	r = 0;
out:
	free(crt_pem);
	free_secret(key_pem);
	X509_free(cert);
	EVP_PKEY_free(key);
	return r;
}

/* Fill *ret_cert_pem and *ret_key_pem with a usable serving certificate,
 * the stored one if it still is, else a new one written to disk. */
static int serving_load_or_create(const char *dir, const char *const *hosts, X509 *ca,
				  EVP_PKEY *ca_key, bool ca_created, char **ret_cert_pem,
				  char **ret_key_pem, ah_err *err)
{
	char crt_path[CREDS_PATH_MAX], key_path[CREDS_PATH_MAX];
	char *crt_pem = NULL, *key_pem = NULL;
	X509 *cert = NULL;
	EVP_PKEY *key = NULL;
	int r;

	if ((r = join_path(crt_path, dir, "serving.crt", err)) < 0 ||
	    (r = join_path(key_path, dir, "serving.key", err)) < 0)
		return r;
	if (!ca_created) {
		r = read_public(crt_path, &crt_pem, err);
		if (r == 0)
			r = read_secret(key_path, &key_pem, err);
		if (r < 0 && r != -ENOENT)
			goto out;
		if (r == 0) {
			cert = cert_from_pem(crt_pem);
			key = key_from_pem(key_pem);
		}
		/* Files are re-encoded from what was parsed, so the HTTP layer
		 * gets exactly the form GnuTLS is known to read. */
		free(crt_pem);
		free_secret(key_pem);
		crt_pem = key_pem = NULL;
		if (cert && key && serving_usable(cert, key, ca, hosts)) {
			crt_pem = cert_to_pem(cert);
			key_pem = key_to_pem(key);
			if (!crt_pem || !key_pem) {
				r = ssl_error(err, ENOMEM, "encoding the serving certificate");
				goto out;
			}
			goto done;
		}
		X509_free(cert);
		EVP_PKEY_free(key);
		cert = NULL;
		key = NULL;
	}

	key = new_key();
	if (!key) {
		r = ssl_error(err, EIO, "generating the serving key");
		goto out;
	}
	cert = make_cert(key, ca, ca_key, hosts);
	if (!cert) {
		r = ssl_error(err, EIO, "building the serving certificate");
		goto out;
	}
	crt_pem = cert_to_pem(cert);
	key_pem = key_to_pem(key);
	if (!crt_pem || !key_pem) {
		r = ssl_error(err, ENOMEM, "encoding the serving certificate");
		goto out;
	}
	/* Key first: a start that stops in between leaves a certificate that
	 * does not match its key, which the next start replaces. */
	if ((r = write_file(key_path, key_pem, SECRET_MODE, err)) < 0 ||
	    (r = write_file(crt_path, crt_pem, PUBLIC_MODE, err)) < 0)
		goto out;
done:
	*ret_cert_pem = crt_pem;
	*ret_key_pem = key_pem;
	crt_pem = key_pem = NULL;
	r = 0;
out:
	free(crt_pem);
	free_secret(key_pem);
	X509_free(cert);
	EVP_PKEY_free(key);
	return r;
}

/* The secret file DIR/name as a new string (free_secret()), created first
 * with nbytes random bytes as hex and a newline when it does not exist. */
static int secret_load_or_create(const char *dir, const char *name, size_t nbytes, char path[CREDS_PATH_MAX],
				 char **ret, ah_err *err)
{
	char fresh[2 * 64 + 2];
	char *t = NULL;
	size_t n;
	int r;

	if (nbytes > 64)
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: secret too long", name);
	if ((r = join_path(path, dir, name, err)) < 0)
		return r;
	r = read_secret(path, &t, err);
	if (r == -ENOENT) {
		if (util_random_hex(fresh, nbytes) < 0)
			return ah_err_set(err, EIO, 500, "InternalError", "no random bytes for %s", name);
		n = strlen(fresh);
		fresh[n] = '\n';
		fresh[n + 1] = '\0';
		r = write_file(path, fresh, SECRET_MODE, err);
		fresh[n] = '\0';
		t = r == 0 ? strdup(fresh) : NULL;
		OPENSSL_cleanse(fresh, sizeof(fresh));
		if (r < 0)
			return r;
		if (!t)
			return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	} else if (r < 0) {
		return r;
	}
	*ret = t;
	return 0;
}

static int token_load_or_create(const char *dir, char **ret, ah_err *err)
{
	char path[CREDS_PATH_MAX];
	char *t = NULL;
	size_t n;
	int r;

	if ((r = secret_load_or_create(dir, "admin.token", TOKEN_BYTES, path, &t, err)) < 0)
		return r;
	/* The file may end in a newline or carry one from an editor. */
	n = strlen(t);
	while (n > 0 && strchr(" \t\r\n", t[n - 1]))
		t[--n] = '\0';
	if (!token_valid(t)) {
		free_secret(t);
		return ah_err_set(err, EINVAL, 500, "InternalError",
				  "%s: not a bearer token (%d to %d characters of A-Z a-z 0-9 -._~+/ "
				  "and trailing =)", path, TOKEN_MIN_LEN, TOKEN_MAX_LEN);
	}
	*ret = t;
	return 0;
}

static int unhex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static int sa_key_load_or_create(const char *dir, unsigned char key[32], ah_err *err)
{
	char path[CREDS_PATH_MAX];
	char *t = NULL;
	size_t i;
	int r;

	if ((r = secret_load_or_create(dir, "sa.key", 32, path, &t, err)) < 0)
		return r;
	for (i = 0; i < 32; i++) {
		int hi = unhex(t[2 * i]), lo = hi < 0 ? -1 : unhex(t[2 * i + 1]);

		if (hi < 0 || lo < 0)
			break;
		key[i] = (unsigned char)(hi << 4 | lo);
	}
	free_secret(t);
	if (i < 32) {
		OPENSSL_cleanse(key, 32);
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: not 64 hex digits", path);
	}
	return 0;
}

int creds_load_or_create(const char *dir, const char *const *hosts, struct creds *ret, ah_err *err)
{
	struct creds c = { 0 };
	X509 *ca = NULL;
	EVP_PKEY *ca_key = NULL;
	bool ca_created = false;
	int r;

	if ((r = check_hosts(hosts, err)) < 0)
		return r;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		r = -errno;
		return ah_err_set(err, r, 500, "InternalError", "creating %s: %s", dir, strerror(-r));
	}
	if ((r = ca_load_or_create(dir, &ca, &ca_key, &ca_created, err)) < 0)
		return r;
	r = serving_load_or_create(dir, hosts, ca, ca_key, ca_created, &c.cert_pem, &c.key_pem, err);
	if (r < 0)
		goto out;
	c.ca_pem = cert_to_pem(ca);
	if (!c.ca_pem) {
		r = ssl_error(err, ENOMEM, "encoding the CA certificate");
		goto out;
	}
	if ((r = token_load_or_create(dir, &c.admin_token, err)) < 0)
		goto out;
	c.token_digest_set = token_digest(c.admin_token, c.token_digest);
	if ((r = sa_key_load_or_create(dir, c.sa_key, err)) < 0)
		goto out;
	c.sa_key_set = true;
	*ret = c;
	memset(&c, 0, sizeof(c));
out:
	creds_release(&c);
	X509_free(ca);
	EVP_PKEY_free(ca_key);
	return r;
}

void creds_release(struct creds *c)
{
	if (!c)
		return;
	free(c->ca_pem);
	free(c->cert_pem);
	free_secret(c->key_pem);
	free_secret(c->admin_token);
	OPENSSL_cleanse(c, sizeof(*c));
}

static bool url_valid(const char *u)
{
	const char *p;

	if (strncmp(u, "https://", 8) != 0 || !u[8])
		return false;
	for (p = u; *p; p++)
		if (*p <= ' ' || *p > '~' || *p == '"' || *p == '\\')
			return false;
	return true;
}

int creds_write_kubeconfig(const char *path, const char *server_url, const struct creds *c, ah_err *err)
{
	strbuf sb = STRBUF_INIT;
	char *ca_b64 = NULL, *text = NULL;
	size_t len = 0;
	int r;

	if (!server_url || !url_valid(server_url))
		return ah_err_set(err, EINVAL, 500, "InternalError",
				  "server URL must be https:// and printable ASCII without quotes");
	if (!c || !c->ca_pem || !c->admin_token || !token_valid(c->admin_token))
		return ah_err_set(err, EINVAL, 500, "InternalError", "credentials not loaded");
	ca_b64 = util_base64_encode(c->ca_pem, strlen(c->ca_pem));
	if (!ca_b64)
		return ah_err_set(err, ENOMEM, 500, "InternalError", "out of memory");
	/* Values are double-quoted: a token of digits would otherwise read as
	 * a number.  The URL and token were checked to hold no quote or
	 * backslash, so no escaping is needed. */
	r = strbuf_addf(&sb,
			"apiVersion: v1\n"
			"kind: Config\n"
			"clusters:\n"
			"- name: agenthub\n"
			"  cluster:\n"
			"    server: \"%s\"\n"
			"    certificate-authority-data: \"%s\"\n"
			"users:\n"
			"- name: admin\n"
			"  user:\n"
			"    token: \"%s\"\n"
			"contexts:\n"
			"- name: agenthub\n"
			"  context:\n"
			"    cluster: agenthub\n"
			"    user: admin\n"
			"    namespace: default\n"
			"current-context: agenthub\n"
			"preferences: {}\n",
			server_url, ca_b64, c->admin_token);
	free(ca_b64);
	if (r < 0) {
		strbuf_release(&sb);
		return ah_err_set(err, r, 500, "InternalError", "out of memory");
	}
	text = strbuf_detach(&sb, &len);
	r = util_write_file_atomic(path, text, len, SECRET_MODE);
	OPENSSL_cleanse(text, len);
	free(text);
	if (r < 0)
		return ah_err_set(err, r, 500, "InternalError", "writing %s: %s", path, strerror(-r));
	return 0;
}

static EVP_MD *sha256_md;

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

/* SHA-256 with the algorithm fetched once: an implicit fetch on every
 * request showed up in profiles of the request path. */
static bool token_digest(const char *s, unsigned char out[32])
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned int len = 0;

	pthread_once(&once, sha256_fetch);
	if (!sha256_md || !EVP_Digest(s, strlen(s), out, &len, sha256_md, NULL) || len != 32) {
		ERR_clear_error();
		return false;
	}
	return true;
}

bool creds_sha256(const char *s, unsigned char out[32])
{
	return s && token_digest(s, out);
}

bool creds_token_ok(const struct creds *c, const char *presented)
{
	unsigned char want[32], got[32];
	bool ok;

	if (!c || !c->admin_token || !c->admin_token[0] || !presented)
		return false;
	/* Comparing digests rather than the strings makes the comparison
	 * independent of both lengths as well as of the contents. */
	if (c->token_digest_set)
		memcpy(want, c->token_digest, sizeof(want));
	else if (!token_digest(c->admin_token, want))
		return false;
	if (!token_digest(presented, got))
		return false;
	ok = CRYPTO_memcmp(want, got, sizeof(want)) == 0;
	OPENSSL_cleanse(want, sizeof(want));
	OPENSSL_cleanse(got, sizeof(got));
	return ok;
}

/* --- ServiceAccount tokens (HS256 JWS) ------------------------------------ */

static char *b64url(const void *data, size_t len)
{
	char *s = util_base64_encode(data, len), *p, *q;

	if (!s)
		return NULL;
	for (p = q = s; *p; p++) {
		if (*p == '=')
			continue;
		*q++ = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	}
	*q = '\0';
	return s;
}

static int unb64url(const char *s, size_t n, unsigned char **ret, size_t *ret_len)
{
	char *t = malloc(n + 4);
	size_t i;
	int r;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		char ch = s[i];

		if (ch == '+' || ch == '/' || ch == '=') {
			free(t);
			return -EINVAL;
		}
		t[i] = ch == '-' ? '+' : ch == '_' ? '/' : ch;
	}
	while (i % 4)
		t[i++] = '=';
	r = util_base64_decode(t, i, ret, ret_len);
	free(t);
	return r;
}

static bool hs256(const struct creds *c, const char *msg, size_t len, unsigned char out[32])
{
	unsigned int olen = 0;

	if (!c || !c->sa_key_set)
		return false;
	if (!HMAC(EVP_sha256(), c->sa_key, sizeof(c->sa_key), (const unsigned char *)msg, len, out, &olen) ||
	    olen != 32) {
		ERR_clear_error();
		return false;
	}
	return true;
}

char *creds_jwt_sign(const struct creds *c, const json_t *claims)
{
	static const char header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	char *payload = json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS);
	char *h = b64url(header, sizeof(header) - 1), *p = payload ? b64url(payload, strlen(payload)) : NULL;
	char *sig = NULL, *out = NULL;
	unsigned char mac[32];
	strbuf sb = STRBUF_INIT;

	free(payload);
	if (!h || !p)
		goto out;
	strbuf_addf(&sb, "%s.%s", h, p);
	if (!sb.buf || !hs256(c, sb.buf, sb.len, mac))
		goto out;
	sig = b64url(mac, sizeof(mac));
	if (!sig)
		goto out;
	strbuf_addf(&sb, ".%s", sig);
	out = strbuf_detach(&sb, NULL);
out:
	strbuf_release(&sb);
	free(h);
	free(p);
	free(sig);
	return out;
}

int creds_jwt_verify(const struct creds *c, const char *token, json_t **ret)
{
	const char *d1, *d2;
	unsigned char mac[32], *sig = NULL, *hdr = NULL, *payload = NULL;
	size_t sig_len = 0, hdr_len = 0, payload_len = 0, n;
	json_t *h = NULL, *claims = NULL;
	int r = -EINVAL;

	if (!token || (n = strlen(token)) > CREDS_JWT_MAX)
		return -EINVAL;
	d1 = strchr(token, '.');
	d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d1 || !d2 || strchr(d2 + 1, '.'))
		return -EINVAL;
	if (!hs256(c, token, (size_t)(d2 - token), mac))
		return -EINVAL;
	if (unb64url(d2 + 1, n - (size_t)(d2 + 1 - token), &sig, &sig_len) < 0 || sig_len != 32 ||
	    CRYPTO_memcmp(sig, mac, 32) != 0)
		goto out;
	if (unb64url(token, (size_t)(d1 - token), &hdr, &hdr_len) < 0 ||
	    unb64url(d1 + 1, (size_t)(d2 - d1 - 1), &payload, &payload_len) < 0)
		goto out;
	h = json_loadb((const char *)hdr, hdr_len, 0, NULL);
	if (!h || !json_string_value(json_object_get(h, "alg")) ||
	    strcmp(json_string_value(json_object_get(h, "alg")), "HS256") != 0)
		goto out;
	claims = json_loadb((const char *)payload, payload_len, 0, NULL);
	if (!json_is_object(claims))
		goto out;
	*ret = claims;
	claims = NULL;
	r = 0;
out:
	OPENSSL_cleanse(mac, sizeof(mac));
	free(sig);
	free(hdr);
	free(payload);
	json_decref(h);
	json_decref(claims);
	return r;
}
