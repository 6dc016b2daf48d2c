/* cluster.c - the ClusterDeployment and AgentClusterInstall controllers
 * (kubeapi.md §4.3, §2.1, §2.2, §3): a cluster described by a
 * ClusterDeployment (CD), its AgentClusterInstall (ACI) and a
 * ClusterImageSet is installed on the Agents bound to the CD.
 *
 * The cluster model of assisted/cluster.h is rebuilt from the three objects
 * on every pass; its state (status, timestamps, progress, preparation) is
 * kept in a private store record beside the ACI and mirrored into the ACI
 * status, which is what users watch.  Nothing lives only in memory except a
 * watch-fed map of which Agents are bound to which CD, rebuilt from the
 * store at start, so the hub can restart at any point.
 *
 * One pass: finalizers and owner, input checks (SpecSynced), the cluster
 * refresh (state machine and validations), suggested roles, the automatic
 * start, the moves of the hosts that follow the cluster, the credentials
 * Secrets on completion, the ACI status, and what Hive would mirror onto the
 * CD.  Writes happen only where something differs. */
#include "hub-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/cluster.h"
#include "assisted/host.h"
#include "assisted/installconfig.h"
#include "assisted/pullsecret.h"
#include "base/gojson.h"
#include "base/hubmetrics.h"
#include "base/log.h"
#include "base/util.h"

#define FINALIZER_CD "clusterdeployments.agent-install.openshift.io/ai-deprovision"
#define FINALIZER_ACI "agentclusterinstall.agent-install.openshift.io/ai-deprovision"
#define ACI_GROUP "extensions.hive.openshift.io"
#define ANN_RECONCILE_PAUSE "hive.openshift.io/reconcile-pause"
#define LABEL_CD_NAME "hive.openshift.io/cluster-deployment-name"
#define LABEL_SECRET_TYPE "hive.openshift.io/secret-type"
#define LABEL_CD_NAMESPACE "agent-install.openshift.io/clusterdeployment-namespace"
#define REQUEUE_ACTIVE_MS 10000 /* upstream cluster monitor interval */
#define REQUEUE_DELETE_MS 1000

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *jstr_or(const json_t *o, const char *k, const char *dflt)
{
	const char *s = jstr(o, k);

	return s ? s : dflt;
}

static const char *meta_str(const json_t *obj, const char *k)
{
	return jstr(json_object_get(obj, "metadata"), k);
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void now_rfc3339(char *buf, size_t size)
{
	util_now_rfc3339(buf, size);
}

/* --- the Agent map and the queue ------------------------------------------ */

void hub_cluster_init(struct hub *h)
{
	h->k_cd = kube_registry_by_kind(h->reg, "hive.openshift.io/v1", "ClusterDeployment");
	h->k_aci = kube_registry_by_kind(h->reg, "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall");
	h->k_imageset = kube_registry_by_kind(h->reg, "hive.openshift.io/v1", "ClusterImageSet");
}

static void requeue_after(struct hub *h, const char *ns, const char *name, int64_t ms)
{
	rt_enqueue_after(h->c_cd, ns, name, ms);
}

void hub_agent_cd_key(const json_t *agent, char *buf, size_t size)
{
	const json_t *ref = json_object_get(json_object_get(agent, "spec"), "clusterDeploymentName");
	const char *name = jstr(ref, "name"), *ns = jstr(ref, "namespace");

	buf[0] = '\0';
	if (!name || !*name)
		return;
	if (!ns || !*ns)
		ns = meta_str(agent, "namespace");
	snprintf(buf, size, "%s/%s", ns ? ns : "", name);
}

/* --- small object helpers ------------------------------------------------- */

static bool has_finalizer(const json_t *obj, const char *fin)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(obj, "metadata"), "finalizers"), i, f)
		if (streq(json_string_value(f), fin))
			return true;
	return false;
}

/* Add or remove a finalizer, as a compare-and-swap on the object's version. */
static int set_finalizer(struct hub *h, const struct kube_kind *k, const json_t *obj, const char *fin,
			 bool present)
{
	const json_t *meta = json_object_get(obj, "metadata");
	json_t *out = json_array(), *f, *patch, *ret = NULL;
	ah_err err;
	size_t i;
	int r;

	if (has_finalizer(obj, fin) == present) {
		json_decref(out);
		return 0;
	}
	json_array_foreach(json_object_get(meta, "finalizers"), i, f)
		if (!streq(json_string_value(f), fin))
			json_array_append(out, f);
	if (present)
		json_array_append_new(out, json_string(fin));
	patch = json_pack("{s:{s:o,s:O}}", "metadata", "finalizers", out, "resourceVersion",
			  json_object_get(meta, "resourceVersion"));
	r = kube_patch(h->api, k, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json",
		       patch, NULL, &ret, &err);
	if (r < 0 && r != -ENOENT && r != -ESTALE)
		log_warn("%s %s/%s: finalizer: %s", k->kind, jstr(meta, "namespace"), jstr(meta, "name"),
			 err.message);
	json_decref(patch);
	json_decref(ret);
	return r;
}

static int patch_obj(struct hub *h, const struct kube_kind *k, const char *ns, const char *name, json_t *patch,
		     bool status)
{
	struct kube_opts o = { .status = status };
	json_t *ret = NULL;
	ah_err err;
	int r = kube_patch(h->api, k, ns, name, "application/merge-patch+json", patch, &o, &ret, &err);

	if (r < 0 && r != -ENOENT)
		log_warn("%s %s/%s: %s update: %s", k->kind, ns, name, status ? "status" : "object", err.message);
	json_decref(ret);
	return r;
}

/* The CD as a non-controller owner of the ACI (so deleting the CD takes it). */
static void ensure_owner(struct hub *h, const json_t *cd, const json_t *aci)
{
	const char *uid = meta_str(cd, "uid");
	json_t *refs = json_object_get(json_object_get(aci, "metadata"), "ownerReferences"), *r, *out, *patch;
	size_t i;

	json_array_foreach(refs, i, r)
		if (streq(jstr(r, "uid"), uid))
			return;
	out = json_is_array(refs) ? json_deep_copy(refs) : json_array();
	json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", "hive.openshift.io/v1", "kind",
					     "ClusterDeployment", "name", meta_str(cd, "name"), "uid", uid));
	patch = json_pack("{s:{s:o}}", "metadata", "ownerReferences", out);
	patch_obj(h, h->k_aci, meta_str(aci, "namespace"), meta_str(aci, "name"), patch, false);
	json_decref(patch);
}

static char *secret_value(struct hub *h, const char *ns, const char *name, const char *key)
{
	json_t *sec = NULL;
	const char *b64;
	unsigned char *raw = NULL;
	size_t len;
	ah_err err;

	if (kube_get(h->api, h->k_secret, ns, name, &sec, &err) < 0)
		return NULL;
	b64 = jstr(json_object_get(sec, "data"), key);
	if (!b64 || util_base64_decode(b64, strlen(b64), &raw, &len) < 0)
		raw = NULL;
	json_decref(sec);
	return (char *)raw;
}

/* --- the spoke's credentials ---------------------------------------------- */

static int set_serial(X509 *x)
{
	unsigned char b[16];
	BIGNUM *bn;
	int ok;

	if (util_random_bytes(b, sizeof(b)) < 0)
		return -EIO;
	b[0] &= 0x7f;
	bn = BN_bin2bn(b, sizeof(b), NULL);
	ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -ENOMEM;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, const char *org, X509 *issuer, EVP_PKEY *issuer_key,
		       long days)
{
	X509 *x = X509_new();
	X509_NAME *name;
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	bool ca = issuer == NULL;
	const char *exts[][2] = {
		{ "basicConstraints", ca ? "critical,CA:TRUE" : "critical,CA:FALSE" },
		{ "keyUsage", ca ? "critical,keyCertSign,cRLSign,digitalSignature" : "critical,digitalSignature,keyEncipherment" },
		{ ca ? NULL : "extendedKeyUsage", "clientAuth" },
	};
	size_t i;

	if (!x)
		return NULL;
	name = X509_NAME_new();
	if (!name || !X509_set_version(x, 2) || set_serial(x) < 0 ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), days * 24 * 3600) ||
	    (org && !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)org, -1, -1, 0)) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_subject_name(x, name) ||
	    !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : name) ||
	    !X509_set_pubkey(x, key))
		goto fail;
	X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		if (!exts[i][0])
			continue;
		ext = X509V3_EXT_conf(NULL, &ctx, exts[i][0], exts[i][1]);
		if (!ext || !X509_add_ext(x, ext, -1)) {
			X509_EXTENSION_free(ext);
			goto fail;
		}
		X509_EXTENSION_free(ext);
	}
	if (!X509_sign(x, issuer_key ? issuer_key : key, EVP_sha256()))
		goto fail;
	X509_NAME_free(name);
	return x;
fail:
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}

static char *bio_text(BIO *b)
{
	char *data, *s;
	long n = BIO_get_mem_data(b, &data);

	if (n <= 0)
		return NULL;
	s = malloc((size_t)n + 1);
	if (s) {
		memcpy(s, data, (size_t)n);
		s[n] = '\0';
	}
	return s;
}

static char *pem_b64_cert(X509 *x)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = NULL, *out = NULL;

	if (b && PEM_write_bio_X509(b, x))
		pem = bio_text(b);
	BIO_free(b);
	if (pem)
		out = util_base64_encode(pem, strlen(pem));
	free(pem);
	return out;
}

static char *pem_b64_key(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *pem = NULL, *out = NULL;

	if (b && PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL))
		pem = bio_text(b);
	BIO_free(b);
	if (pem) {
		out = util_base64_encode(pem, strlen(pem));
		OPENSSL_cleanse(pem, strlen(pem));
	}
	free(pem);
	return out;
}

/* A real admin kubeconfig for the spoke: a CA of its own and an admin client
 * certificate (O=system:masters) signed by it, for
 * https://api.<name>.<baseDomain>:6443.  malloc'd text or NULL. */
static char *spoke_kubeconfig(const char *cluster_name, const char *base_domain)
{
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *key = EVP_EC_gen("P-256");
	X509 *ca = NULL, *crt = NULL;
	char *ca_b64 = NULL, *crt_b64 = NULL, *key_b64 = NULL, *out = NULL;

	if (!ca_key || !key)
		goto done;
	ca = make_cert(ca_key, "admin-kubeconfig-signer", "openshift", NULL, NULL, 3650);
	crt = ca ? make_cert(key, "system:admin", "system:masters", ca, ca_key, 3650) : NULL;
	if (!crt)
		goto done;
	ca_b64 = pem_b64_cert(ca);
	crt_b64 = pem_b64_cert(crt);
	key_b64 = pem_b64_key(key);
	if (!ca_b64 || !crt_b64 || !key_b64)
		goto done;
	if (asprintf(&out,
		     "apiVersion: v1\n"
		     "clusters:\n"
		     "- cluster:\n"
		     "    certificate-authority-data: %s\n"
		     "    server: https://api.%s.%s:6443\n"
		     "  name: %s\n"
		     "contexts:\n"
		     "- context:\n"
		     "    cluster: %s\n"
		     "    user: admin\n"
		     "  name: admin\n"
		     "current-context: admin\n"
		     "kind: Config\n"
		     "preferences: {}\n"
		     "users:\n"
		     "- name: admin\n"
		     "  user:\n"
		     "    client-certificate-data: %s\n"
		     "    client-key-data: %s\n",
		     ca_b64, cluster_name, base_domain, cluster_name, cluster_name, crt_b64, key_b64) < 0)
		out = NULL;
done:
	if (key_b64)
		OPENSSL_cleanse(key_b64, strlen(key_b64));
	free(ca_b64);
	free(crt_b64);
	free(key_b64);
	X509_free(ca);
	X509_free(crt);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return out;
}

/* The kubeadmin password: 23 characters in four dash-separated groups, as
 * the installer makes it. */
static int kubeadmin_password(char buf[24])
{
	static const char alphabet[] = "23456789abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ";
	unsigned char rnd[23];
	int i;

	if (util_random_bytes(rnd, sizeof(rnd)) < 0)
		return -EIO;
	for (i = 0; i < 23; i++)
		buf[i] = (i == 5 || i == 11 || i == 17) ? '-' : alphabet[rnd[i] % (sizeof(alphabet) - 1)];
	buf[23] = '\0';
	OPENSSL_cleanse(rnd, sizeof(rnd));
	return 0;
}

/* Create (or, with overwrite, replace the data of) a credentials Secret owned
 * by the CD.  data: key -> plain text. */
static int put_secret(struct hub *h, const json_t *cd, const char *name, const char *type, json_t *data,
		      bool overwrite)
{
	const char *ns = meta_str(cd, "namespace");
	json_t *enc = json_object(), *sec, *ret = NULL, *v;
	const char *k;
	ah_err err;
	int r;

	json_object_foreach(data, k, v) {
		char *b = util_base64_encode(json_string_value(v), strlen(json_string_value(v)));

		if (!b) {
			json_decref(enc);
			return -ENOMEM;
		}
		json_object_set_new(enc, k, json_string(b));
		OPENSSL_cleanse(b, strlen(b));
		free(b);
	}
	sec = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s},s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:s,s:o}",
			"apiVersion", "v1", "kind", "Secret",
			"metadata", "name", name, "namespace", ns,
			"labels", LABEL_CD_NAME, meta_str(cd, "name"), LABEL_SECRET_TYPE, type,
			"ownerReferences", "apiVersion", "hive.openshift.io/v1", "kind", "ClusterDeployment",
			"name", meta_str(cd, "name"), "uid", meta_str(cd, "uid"), "controller", 0,
			"blockOwnerDeletion", 1,
			"type", "Opaque", "data", enc);
	r = kube_create(h->api, h->k_secret, ns, sec, NULL, &ret, &err);
	if (r == -EEXIST && overwrite) {
		json_t *patch = json_pack("{s:O}", "data", json_object_get(sec, "data"));

		json_decref(ret);
		ret = NULL;
		r = kube_patch(h->api, h->k_secret, ns, name, "application/merge-patch+json", patch, NULL, &ret,
			       &err);
		json_decref(patch);
	} else if (r == -EEXIST) {
		r = 0;
	}
	if (r < 0)
		log_warn("secret %s/%s: %s", ns, name, err.message);
	json_decref(ret);
	json_decref(sec);
	return r;
}

static bool secret_exists(struct hub *h, const char *ns, const char *name)
{
	json_t *sec = NULL;
	ah_err err;
	bool ok = kube_get(h->api, h->k_secret, ns, name, &sec, &err) == 0;

	json_decref(sec);
	return ok;
}

static void kubeconfig_secret_name(const json_t *cd, char *buf, size_t size)
{
	const char *n = jstr(json_object_get(json_object_get(json_object_get(cd, "spec"), "clusterMetadata"),
					     "adminKubeconfigSecretRef"), "name");

	if (n && *n)
		snprintf(buf, size, "%s", n);
	else
		snprintf(buf, size, "%s-admin-kubeconfig", meta_str(cd, "name"));
}

static int write_kubeconfig_secret(struct hub *h, const json_t *cd, const char *name, bool overwrite)
{
	const json_t *spec = json_object_get(cd, "spec");
	char *kc = spoke_kubeconfig(jstr_or(spec, "clusterName", meta_str(cd, "name")), jstr_or(spec, "baseDomain", ""));
	json_t *data;
	int r;

	if (!kc)
		return -ENOMEM;
	data = json_pack("{s:s}", "kubeconfig", kc);
	OPENSSL_cleanse(kc, strlen(kc));
	free(kc);
	r = put_secret(h, cd, name, "kubeconfig", data, overwrite);
	json_decref(data);
	return r;
}

/* --- the private state record ---------------------------------------------- */

static json_t *state_get(struct hub *h, const char *uid, int64_t *ret_rev)
{
	store_obj *so = NULL;
	json_t *st = NULL;

	*ret_rev = 0;
	if (store_get(h->store, CLUSTERSTATE_RESOURCE, "", uid, &so) == 0) {
		st = json_loadb(so->json, so->len, 0, NULL);
		*ret_rev = so->rev;
		store_obj_free(so);
	}
	return st;
}

static int state_put(struct hub *h, const char *uid, const json_t *st, int64_t rev)
{
	struct text_render tr = { json_dumps(st, JSON_COMPACT | JSON_SORT_KEYS) };
	int r;

	if (!tr.text)
		return -ENOMEM;
	r = hub_record_put(h->store, CLUSTERSTATE_RESOURCE, "", uid, rev, tr.text);
	free(tr.text);
	return r;
}

static void state_delete(struct hub *h, const char *uid)
{
	struct text_render tr = { .text = "{}" };

	store_delete(h->store, CLUSTERSTATE_RESOURCE, "", uid, 0, hub_render_text, &tr, NULL);
}

/* --- the cluster and its hosts --------------------------------------------- */

/* The Agents bound to the CD (a new array of Agent objects). */
static int cmp_key_pairs(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	int c = strcmp(json_string_value(json_array_get(x, 0)) ? json_string_value(json_array_get(x, 0)) : "",
		       json_string_value(json_array_get(y, 0)) ? json_string_value(json_array_get(y, 0)) : "");

	return c ? c : strcmp(json_string_value(json_array_get(x, 1)) ? json_string_value(json_array_get(x, 1)) : "",
			      json_string_value(json_array_get(y, 1)) ? json_string_value(json_array_get(y, 1)) : "");
}

static json_t *bound_agents(struct hub *h, const char *cd_ns, const char *cd_name)
{
	json_t *keys, *agents = json_array(), *v;
	char key[600];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", cd_ns, cd_name);
	/* The runtime's index says which Agents name the CD; each is read
	 * again (the index may lag the store by one watch pass). */
	keys = rt_cache_list_by(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_CD, key);
	/* In name order: role suggestion and the other per-host choices see
	 * the hosts in the same order on every pass. */
	if (json_array_size(keys) > 1) {
		size_t n = json_array_size(keys), j;
		json_t **arr = calloc(n, sizeof(*arr));

		if (arr) {
			for (j = 0; j < n; j++)
				arr[j] = json_incref(json_array_get(keys, j));
			qsort(arr, n, sizeof(*arr), cmp_key_pairs);
			json_array_clear(keys);
			for (j = 0; j < n; j++)
				json_array_append_new(keys, arr[j]);
			free(arr);
		}
	}
	json_array_foreach(keys, i, v) {
		const char *ns = json_string_value(json_array_get(v, 0)), *name = json_string_value(json_array_get(v, 1));
		char cdk[600];
		json_t *agent = NULL;
		ah_err err;

		if (!ns || !name || kube_get(h->api, h->k_agent, ns, name, &agent, &err) < 0)
			continue;
		hub_agent_cd_key(agent, cdk, sizeof(cdk));
		if (strcmp(cdk, key) == 0)
			json_array_append_new(agents, agent);
		else
			json_decref(agent);
	}
	json_decref(keys);
	return agents;
}

static json_t *host_models(struct hub *h, const json_t *agents)
{
	json_t *hosts = json_array(), *a;
	size_t i;

	json_array_foreach(agents, i, a) {
		json_t *host = hub_host_model(h, a);

		if (host)
			json_array_append_new(hosts, host);
	}
	return hosts;
}

/* Everything pass needs, read once. */
struct cluster_ctx;
static void keep_bound_hosts(struct hub *h, struct cluster_ctx *c, const char *ns, const char *cdname);

struct cluster_ctx {
	json_t *cd, *aci, *imageset;
	json_t *cluster;       /* the model with its state, NULL before registration */
	json_t *prev_state;    /* the record as read */
	int64_t state_rev;
	json_t *agents, *hosts; /* parallel arrays */
	char *pull_secret;
	bool spec_ok, spec_input_error;
	char spec_error[AH_ERR_MSG_MAX];
};

/* The cluster's hosts are those bound to it: an Agent that points at the
 * ClusterDeployment but whose host is not bound yet (or still bound
 * elsewhere) is left out, and queued so that its binding is tried now that
 * the cluster is there (kubeapi.md §4.4 step 6). */
static void keep_bound_hosts(struct hub *h, struct cluster_ctx *c, const char *ns, const char *cdname)
{
	char key[600];
	size_t i = 0;

	snprintf(key, sizeof(key), "%s/%s", ns, cdname);
	while (i < json_array_size(c->hosts) && i < json_array_size(c->agents)) {
		const json_t *host = json_array_get(c->hosts, i), *a = json_array_get(c->agents, i);

		if (streq(jstr(host, "bound_cd"), key)) {
			i++;
			continue;
		}
		if (c->cluster && jstr(json_object_get(json_object_get(a, "status"), "debugInfo"), "state"))
			rt_enqueue(h->c_agent, meta_str(a, "namespace"), meta_str(a, "name"));
		json_array_remove(c->hosts, i);
		json_array_remove(c->agents, i);
	}
}

static void cluster_ctx_release(struct cluster_ctx *c)
{
	json_decref(c->cd);
	json_decref(c->aci);
	json_decref(c->imageset);
	json_decref(c->cluster);
	json_decref(c->prev_state);
	json_decref(c->agents);
	json_decref(c->hosts);
	if (c->pull_secret) {
		OPENSSL_cleanse(c->pull_secret, strlen(c->pull_secret));
		free(c->pull_secret);
	}
	memset(c, 0, sizeof(*c));
}

static void spec_fail(struct cluster_ctx *c, bool input, const char *msg)
{
	if (!c->spec_ok)
		return; /* the first error is the one reported */
	c->spec_ok = false;
	c->spec_input_error = input;
	{
		size_t n = strlen(msg);

		if (n >= sizeof(c->spec_error))
			n = sizeof(c->spec_error) - 1; /* messages are bounded by ah_err anyway */
		memcpy(c->spec_error, msg, n);
		c->spec_error[n] = '\0';
	}
}

/* §4.3 step 6: the manifests ConfigMaps must exist and their keys (the
 * manifest file names) be unique across them; the list beats the
 * deprecated single reference.  Errors are BackendErrors, as upstream
 * does not unwrap them. */
static void check_manifests(struct hub *h, struct cluster_ctx *c)
{
	const json_t *spec = json_object_get(c->aci, "spec"), *refs = json_object_get(spec, "manifestsConfigMapRefs");
	const struct kube_kind *k_cm = kube_registry_by_kind(h->reg, "v1", "ConfigMap");
	const char *ns = meta_str(c->aci, "namespace");
	json_t *names = json_array(), *seen = json_object(), *r;
	char msg[AH_ERR_MSG_MAX];
	size_t i;

	if (json_array_size(refs)) {
		json_array_foreach(refs, i, r)
			if (jstr(r, "name"))
				json_array_append_new(names, json_string(jstr(r, "name")));
	} else if (jstr(json_object_get(spec, "manifestsConfigMapRef"), "name")) {
		json_array_append_new(names, json_string(jstr(json_object_get(spec, "manifestsConfigMapRef"), "name")));
	}
	json_array_foreach(names, i, r) {
		json_t *cm = NULL, *v;
		const char *key;
		ah_err err;

		if (!k_cm || kube_get(h->api, k_cm, ns, json_string_value(r), &cm, &err) < 0) {
			snprintf(msg, sizeof(msg), "Failed to get referenced ConfigMap %s/%s: configmaps \"%s\" not found", ns,
				 json_string_value(r), json_string_value(r));
			spec_fail(c, false, msg);
			break;
		}
		json_object_foreach(json_object_get(cm, "data"), key, v) {
			if (json_object_get(seen, key)) {
				snprintf(msg, sizeof(msg), "Conflict in manifest names ('%s' is not unique)", key);
				spec_fail(c, false, msg);
			}
			json_object_set_new(seen, key, json_true());
		}
		/* Each key becomes a manifest file: upstream's manifest API
		 * checks its name and content (a 400, so an InputError). */
		json_object_foreach(json_object_get(cm, "data"), key, v) {
			const char *dot = strrchr(key, '.'), *id = jstr(c->cluster, "id");
			const char *text = json_string_value(v);

			if (!id)
				id = meta_str(c->aci, "uid");
			if (!dot || (strcmp(dot, ".yaml") != 0 && strcmp(dot, ".yml") != 0 && strcmp(dot, ".json") != 0 &&
				     strncmp(dot, ".patch", 6) != 0))
				snprintf(msg, sizeof(msg),
					 "Manifest filename of file %s for cluster ID %s is invalid. Only json, yaml and yml or patch extensions are supported",
					 key, id);
			else if (!text || !*text)
				snprintf(msg, sizeof(msg), "Manifest content of file %s for cluster ID %s is empty", key, id);
			else if (strcmp(dot, ".json") == 0 && gojson_check(text, strlen(text), msg, sizeof(msg)) < 0)
				snprintf(msg, sizeof(msg), "Manifest content of file %s for cluster ID %s has an illegal JSON format",
					 key, id);
			else
				continue;
			spec_fail(c, true, msg);
			break;
		}
		json_decref(cm);
	}
	json_decref(names);
	json_decref(seen);
}

/* The state a model rebuilt from the CRs starts from: the record, or, if it
 * is lost, what the ACI status still shows. */
static json_t *prev_state_of(struct cluster_ctx *c)
{
	const json_t *dbg = json_object_get(json_object_get(c->aci, "status"), "debugInfo");
	json_t *st;

	if (c->prev_state)
		return json_incref(c->prev_state);
	if (!jstr(dbg, "state") || !*jstr(dbg, "state"))
		return NULL;
	st = json_pack("{s:s,s:s,s:s,s:I}", "id", meta_str(c->aci, "uid"), "status", jstr(dbg, "state"),
		       "status_info", jstr_or(dbg, "stateInfo", ""), "status_updated_at", (json_int_t)time(NULL));
	return st;
}

/* Read the CD's world and build the cluster model.  Fills the spec error
 * (SpecSynced) for input problems; c->cluster stays NULL only when no
 * model can be built and none was registered before. */
/* §4.3 step 2: the ACI's mirrorRegistryRef names a ConfigMap that must
 * exist and hold registries.conf (ca-bundle.crt is optional). */
static void check_mirror_registry(struct hub *h, struct cluster_ctx *c)
{
	const json_t *ref = json_object_get(json_object_get(c->aci, "spec"), "mirrorRegistryRef");
	const struct kube_kind *k_cm = kube_registry_by_kind(h->reg, "v1", "ConfigMap");
	const char *name = jstr(ref, "name"), *ns = jstr(ref, "namespace");
	char msg[AH_ERR_MSG_MAX + 256];
	json_t *cm = NULL;
	ah_err err;

	if (!name || !*name)
		return;
	if (!ns || !*ns)
		ns = meta_str(c->aci, "namespace");
	if (!k_cm || kube_get(h->api, k_cm, ns, name, &cm, &err) < 0) {
		snprintf(msg, sizeof(msg), "Failed to get referenced ConfigMap: ConfigMap \"%s\" not found", name);
		spec_fail(c, true, msg);
	} else if (!json_is_string(json_object_get(json_object_get(cm, "data"), "registries.conf"))) {
		snprintf(msg, sizeof(msg), "ConfigMap %s/%s does not contain registries.conf key", ns, name);
		spec_fail(c, true, msg);
	}
	json_decref(cm);
}

static int load_cluster(struct hub *h, struct cluster_ctx *c)
{
	const json_t *cdspec = json_object_get(c->cd, "spec"), *acispec = json_object_get(c->aci, "spec");
	const char *ns = meta_str(c->cd, "namespace"), *cdname = meta_str(c->cd, "name");
	const char *isname = jstr(json_object_get(acispec, "imageSetRef"), "name");
	const char *psname = jstr(json_object_get(cdspec, "pullSecretRef"), "name");
	const char *overrides = jstr(json_object_get(json_object_get(c->aci, "metadata"), "annotations"),
				     INSTALLCONFIG_OVERRIDES_ANNOTATION);
	bool installed = json_is_true(json_object_get(cdspec, "installed")), step5 = false;
	json_t *prev;
	ah_err err;
	char msg[AH_ERR_MSG_MAX + 256];

	c->spec_ok = true;
	ah_err_clear(&err);
	if (isname && *isname && h->k_imageset)
		kube_get(h->api, h->k_imageset, "", isname, &c->imageset, &err);
	c->prev_state = state_get(h, meta_str(c->aci, "uid"), &c->state_rev);
	/* §4.3 step 2: the pull secret and image set are needed unless installed. */
	if (!installed && (!psname || !*psname)) {
		snprintf(msg, sizeof(msg), "PullSecret is required for ClusterDeployment %s/%s", cdname, ns);
		spec_fail(c, true, msg);
	} else if (psname && *psname) {
		char why[256];

		c->pull_secret = secret_value(h, ns, psname, ".dockerconfigjson");
		if (!c->pull_secret && !installed) {
			snprintf(msg, sizeof(msg), "failed to get pull secret %s/%s: secrets \"%s\" not found", ns,
				 psname, psname);
			spec_fail(c, false, msg);
		} else if (c->pull_secret && !installed && pullsecret_check(c->pull_secret, why, sizeof(why)) < 0) {
			/* Upstream's text names the secret's content too; ours
			 * never carries a secret into a status. */
			snprintf(msg, sizeof(msg), "invalid pull secret data in secret %s: %s", psname, why);
			spec_fail(c, false, msg);
		}
	}
	c->cluster = cluster_model_from_crs(c->cd, c->aci, c->imageset, &err);
	if (!c->cluster && overrides && strstr(err.message, INSTALLCONFIG_OVERRIDES_ANNOTATION)) {
		/* A bad override is a step-5 error: the cluster is registered
		 * (from the rest of the spec) and the install is held. */
		json_t *bare = json_deep_copy(c->aci);

		spec_fail(c, true, err.message);
		json_object_del(json_object_get(json_object_get(bare, "metadata"), "annotations"),
				INSTALLCONFIG_OVERRIDES_ANNOTATION);
		c->cluster = cluster_model_from_crs(c->cd, bare, c->imageset, &err);
		json_decref(bare);
		step5 = true;
	}
	prev = prev_state_of(c);
	if (!c->cluster && prev && strstr(err.message, " cannot be set with User Managed Networking")) {
		/* A registered cluster is updated: upstream's update names
		 * the two the other way round. */
		char what[64];

		snprintf(what, sizeof(what), "%.*s", (int)(strstr(err.message, " cannot be set with ") - err.message),
			 err.message);
		snprintf(err.message, sizeof(err.message), "User Managed Networking cannot be set with %s", what);
	}
	if (!c->cluster)
		spec_fail(c, streq(err.reason, "InputError"), err.message);
	check_mirror_registry(h, c);
	if (!c->spec_ok && !step5 && !prev) {
		/* The input checks come before the registration (§4.3 steps 2
		 * and 3): no backend cluster yet. */
		json_decref(c->cluster);
		c->cluster = NULL;
	} else if (!c->cluster && prev) {
		/* The spec is broken now, but the cluster exists: keep
		 * monitoring it from its last good shape. */
		c->cluster = json_deep_copy(prev);
	} else if (c->cluster) {
		if (!prev) {
			am_cluster_registered();
			if (c->aci)
				hub_cluster_event(h, c->aci, HUB_EV_INFO, "cluster_registration_succeeded",
						  "Successfully registered cluster");
		}
		cluster_model_carry_state(c->cluster, prev);
	}
	json_decref(prev);
	/* Step 5, after the registration: the install-config overrides. */
	if (c->cluster && c->spec_ok && !installed && overrides && installconfig_check_overrides(overrides, &err) < 0)
		spec_fail(c, true, err.message);
	/* Step 6: the manifests ConfigMaps (day-1). */
	if (c->cluster && c->spec_ok && !installed)
		check_manifests(h, c);
	if (c->cluster) {
		json_object_set_new(c->cluster, "id", json_string(meta_str(c->aci, "uid")));
		json_object_set_new(c->cluster, "pull_secret_set", json_boolean(c->pull_secret != NULL));
		if (!jstr(c->cluster, "status")) {
			/* Registration (§4.3 step 3): day-1 starts insufficient;
			 * an installed cluster (the CD says so, or the ACI
			 * completed and its record is gone) is imported as day-2
			 * and starts adding hosts. */
			if (cluster_crs_installed(c->cd, c->aci)) {
				cluster_import_day2(c->cluster, c->cd, c->aci, time(NULL));
			} else {
				json_object_set_new(c->cluster, "status", json_string("insufficient"));
				json_object_set_new(c->cluster, "status_info", json_string(CLUSTER_INFO_INSUFFICIENT));
				json_object_set_new(c->cluster, "status_updated_at", json_integer(time(NULL)));
			}
		}
	}
	c->agents = bound_agents(h, ns, cdname);
	c->hosts = host_models(h, c->agents);
	keep_bound_hosts(h, c, ns, cdname);
	return 0;
}

int hub_cluster_context(struct hub *h, const char *cdns, const char *cdname, json_t **ret_cluster,
			json_t **ret_hosts)
{
	struct cluster_ctx c = { 0 };
	const json_t *iref;
	ah_err err;

	if (!cdname || !*cdname || !cdns || !*cdns)
		return -ENOENT;
	if (kube_get(h->api, h->k_cd, cdns, cdname, &c.cd, &err) < 0)
		return -ENOENT;
	iref = json_object_get(json_object_get(c.cd, "spec"), "clusterInstallRef");
	if (!jstr(iref, "name") || kube_get(h->api, h->k_aci, cdns, jstr(iref, "name"), &c.aci, &err) < 0) {
		cluster_ctx_release(&c);
		return -ENOENT;
	}
	load_cluster(h, &c);
	if (!c.cluster) {
		cluster_ctx_release(&c);
		return -ENOENT;
	}
	*ret_cluster = json_incref(c.cluster);
	if (ret_hosts)
		*ret_hosts = json_incref(c.hosts);
	cluster_ctx_release(&c);
	return 0;
}

/* --- conditions and status ------------------------------------------------- */

static bool on_hold(const json_t *cd, const json_t *aci)
{
	const char *pause = jstr(json_object_get(json_object_get(cd, "metadata"), "annotations"),
				 ANN_RECONCILE_PAUSE);

	return json_is_true(json_object_get(json_object_get(aci, "spec"), "holdInstallation")) ||
	       streq(pause, "true");
}

static const json_t *find_cond(const json_t *conds, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (streq(jstr(c, "type"), type))
			return c;
	return NULL;
}

static void write_aci_status(struct hub *h, struct cluster_ctx *c)
{
	const json_t *old = json_object_get(c->aci, "status");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object(), *conds, *dbg;
	struct aci_conditions_in in = { 0 };
	char now[32];
	const char *k;
	json_t *v;

	aci_requirements_from(c->aci, &in.req);
	in.hosts = c->hosts;
	in.hold = on_hold(c->cd, c->aci);
	in.spec_synced = c->spec_ok;
	in.spec_error_is_input = c->spec_input_error;
	in.spec_error = c->spec_error;
	in.old_conditions = json_object_get(old, "conditions");
	conds = aci_conditions(c->cluster, &in);
	now_rfc3339(now, sizeof(now));
	aci_conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	if (c->cluster) {
		json_t *mirror = aci_status_from_cluster(c->cluster);
		char *url = NULL;
		ah_err err;

		json_object_foreach(mirror, k, v) {
			if (strcmp(k, "debugInfo") == 0)
				continue;
			json_object_set(st, k, v);
		}
		dbg = json_object_get(st, "debugInfo");
		if (!json_is_object(dbg)) {
			dbg = json_object();
			json_object_set_new(st, "debugInfo", dbg);
		}
		json_object_foreach(json_object_get(mirror, "debugInfo"), k, v)
			json_object_set(dbg, k, v);
		if (!jstr(dbg, "state"))
			json_object_set_new(dbg, "state", json_string(jstr_or(c->cluster, "status", "")));
		if (!jstr(dbg, "stateInfo"))
			json_object_set_new(dbg, "stateInfo", json_string(jstr_or(c->cluster, "status_info", "")));
		/* eventsURL is set once (§4.3 step 10). */
		if (!jstr(dbg, "eventsURL") &&
		    hub_cluster_events_url(h, meta_str(c->aci, "uid"), &url, &err) == 0)
			json_object_set_new(dbg, "eventsURL", json_string(url));
		free(url);
		if (!json_object_get(dbg, "logsURL"))
			json_object_set_new(dbg, "logsURL", json_string(""));
		json_decref(mirror);
	} else {
		/* No backend cluster: the debug info is cleared (§2.1). */
		json_object_set_new(st, "debugInfo", json_pack("{s:s}", "logsURL", ""));
	}
	if (!json_equal(st, old)) {
		json_t *patch = json_pack("{s:O}", "status", st);

		patch_obj(h, h->k_aci, meta_str(c->aci, "namespace"), meta_str(c->aci, "name"), patch, true);
		json_decref(patch);
		json_object_set_new(c->aci, "status", json_incref(st));
	}
	json_decref(st);
}

/* What Hive writes on the CD from the ACI (§2.2). */
static void mirror_to_cd(struct hub *h, struct cluster_ctx *c)
{
	static const char *const copied[][2] = {
		{ "Failed", "ClusterInstallFailed" },
		{ "Completed", "ClusterInstallCompleted" },
		{ "Stopped", "ClusterInstallStopped" },
		{ "RequirementsMet", "ClusterInstallRequirementsMet" },
	};
	const json_t *aconds = json_object_get(json_object_get(c->aci, "status"), "conditions");
	const json_t *old = json_object_get(c->cd, "status"), *failed, *stopped, *completed, *req;
	const json_t *acimeta = json_object_get(json_object_get(c->aci, "spec"), "clusterMetadata");
	json_t *st = json_is_object(old) ? json_deep_copy(old) : json_object(), *conds = json_array(), *oc;
	char now[32];
	size_t i;

	now_rfc3339(now, sizeof(now));
	for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++) {
		const json_t *a = find_cond(aconds, copied[i][0]);

		if (a)
			json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", copied[i][1], "status",
							       jstr_or(a, "status", "Unknown"), "reason",
							       jstr_or(a, "reason", ""), "message",
							       jstr_or(a, "message", "")));
	}
	failed = find_cond(aconds, "Failed");
	stopped = find_cond(aconds, "Stopped");
	completed = find_cond(aconds, "Completed");
	req = find_cond(aconds, "RequirementsMet");
	if (failed)
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", "ProvisionFailed", "status",
						       jstr_or(failed, "status", "Unknown"), "reason",
						       jstr_or(failed, "reason", ""), "message", jstr_or(failed, "message", "")));
	if (stopped) {
		bool limit = streq(jstr(stopped, "status"), "True") && !streq(jstr(completed, "status"), "True");

		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", "ProvisionStopped", "status",
						       jstr_or(stopped, "status", "Unknown"), "reason",
						       limit ? "InstallAttemptsLimitReached" : jstr_or(stopped, "reason", ""),
						       "message",
						       limit ? "Install attempts limit reached" : jstr_or(stopped, "message", "")));
		if (limit)
			json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", "Provisioned", "status",
							       "False", "reason", "ProvisionStopped", "message",
							       "Install attempts limit reached"));
	}
	if (streq(jstr(completed, "status"), "True"))
		json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s}", "type", "Provisioned", "status", "True",
						       "reason", "Provisioned", "message", "Cluster is provisioned"));
	/* Keep conditions others wrote. */
	json_array_foreach(json_object_get(old, "conditions"), i, oc)
		if (!find_cond(conds, jstr(oc, "type")))
			json_array_append(conds, oc);
	aci_conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	if (streq(jstr(req, "status"), "True") && !jstr(st, "installStartedTimestamp"))
		json_object_set_new(st, "installStartedTimestamp", json_string(now));
	if (streq(jstr(completed, "status"), "True") && !jstr(st, "installedTimestamp"))
		json_object_set_new(st, "installedTimestamp", json_string(now));
	if (!json_equal(st, old)) {
		json_t *patch = json_pack("{s:O}", "status", st);

		patch_obj(h, h->k_cd, meta_str(c->cd, "namespace"), meta_str(c->cd, "name"), patch, true);
		json_decref(patch);
	}
	json_decref(st);
	/* spec.installed and clusterMetadata once complete and fully known. */
	if (streq(jstr(completed, "status"), "True") && jstr(acimeta, "infraID") && jstr(acimeta, "clusterID") &&
	    jstr(json_object_get(acimeta, "adminKubeconfigSecretRef"), "name") &&
	    jstr(json_object_get(acimeta, "adminPasswordSecretRef"), "name")) {
		const json_t *cdspec = json_object_get(c->cd, "spec");

		if (!json_is_true(json_object_get(cdspec, "installed")) ||
		    !json_equal(json_object_get(cdspec, "clusterMetadata"), acimeta)) {
			json_t *patch = json_pack("{s:{s:b,s:O}}", "spec", "installed", 1, "clusterMetadata", acimeta);

			patch_obj(h, h->k_cd, meta_str(c->cd, "namespace"), meta_str(c->cd, "name"), patch, false);
			json_decref(patch);
		}
	}
}

/* --- hosts following the cluster -------------------------------------------- */

static void sync_hosts(struct hub *h, struct cluster_ctx *c, json_t *before)
{
	json_t *host;
	size_t i;

	json_array_foreach(c->hosts, i, host) {
		if (before && json_equal(json_array_get(before, i), host))
			continue;
		hub_host_sync(h, json_array_get(c->agents, i), host);
	}
}

/* The monitor's host pass: each host refreshed against the cluster (a
 * cluster error moves its hosts to error, #14, and the timeouts fire). */
static void refresh_hosts(struct cluster_ctx *c, int64_t now, int disconnect_timeout_s)
{
	json_t *host;
	size_t i;

	json_array_foreach(c->hosts, i, host) {
		struct host_refresh_ctx ctx = { .now = now, .disconnect_timeout_s = disconnect_timeout_s,
						.cluster = c->cluster, .cluster_hosts = c->hosts };
		struct host_refresh_result res = { 0 };

		if (host_refresh(host, &ctx, &res) == 0 && res.rule_matched && res.changed) {
			if (res.validations_changed)
				am_validations_changed(true, json_object_get(host, "validations_info"),
						       res.validations_info);
			host_refresh_apply(host, &res, now);
		}
		host_refresh_result_release(&res);
	}
}

static bool host_in(const json_t *host, const char *const *states)
{
	const char *s = jstr(host, "status");

	for (; *states; states++)
		if (streq(s, *states))
			return true;
	return false;
}

/* §4.3 step 9, day-1: the automatic start once the requirements are met. */
static void maybe_start(struct hub *h, struct cluster_ctx *c, int64_t now)
{
	struct aci_requirements req;
	json_t *host;
	ah_err err;
	char *ic;
	size_t i;

	if (!c->spec_ok || on_hold(c->cd, c->aci) || !streq(jstr(c->cluster, "status"), "ready"))
		return;
	aci_requirements_from(c->aci, &req);
	if (cluster_install_gate(c->cluster, c->hosts, &req) != CLUSTER_GATE_OK)
		return;
	if (cluster_assign_roles(c->cluster, c->hosts, &err) < 0 ||
	    cluster_prepare_for_installation(c->cluster, now, &err) < 0) {
		log_warn("cluster %s/%s: cannot start the installation: %s", meta_str(c->cd, "namespace"),
			 meta_str(c->cd, "name"), err.message);
		return;
	}
	json_array_foreach(c->hosts, i, host)
		if (host_install(host, c->cluster, now, &err) < 0)
			log_warn("cluster %s/%s: host %s: %s", meta_str(c->cd, "namespace"), meta_str(c->cd, "name"),
				 jstr_or(host, "id", "?"), err.message);
	/* The preparation upstream runs asynchronously (manifests, ignition,
	 * install-config); here the install-config is built at once and its
	 * outcome recorded. */
	ic = installconfig_build(c->cluster, c->hosts, c->pull_secret ? c->pull_secret : "",
				 jstr(json_object_get(json_object_get(c->aci, "metadata"), "annotations"),
				      INSTALLCONFIG_OVERRIDES_ANNOTATION), &err);
	if (cluster_preparation_done(c->cluster, ic != NULL, ic ? NULL : err.message, &err) == 0 && ic)
		hub_cluster_event(h, c->aci, HUB_EV_INFO, "cluster_prepare_installation_started",
				  "Cluster starting to prepare for installation");
	if (ic) {
		OPENSSL_cleanse(ic, strlen(ic));
		free(ic);
	}
}

/* The hosts follow their cluster: while it prepares, a known host (one
 * whose move was lost to a concurrent write, or that came back) is given
 * its role and prepared too (#2); once it installs, prepared hosts start
 * (#5).  The roles assigned at the start live in the Agents' status.role
 * and status.bootstrap, so assigning again keeps them. */
static void start_hosts(struct cluster_ctx *c, int64_t now)
{
	static const char *const prepared[] = { "preparing-successful", NULL };
	static const char *const known[] = { "known", NULL };
	bool preparing = streq(jstr(c->cluster, "status"), "preparing-for-installation");
	bool assigned = false;
	json_t *host;
	ah_err err;
	size_t i;

	json_array_foreach(c->hosts, i, host) {
		if (preparing && host_in(host, known)) {
			if (!assigned && cluster_assign_roles(c->cluster, c->hosts, &err) < 0)
				return;
			assigned = true;
			host_install(host, c->cluster, now, &err);
		} else if (streq(jstr(c->cluster, "status"), "installing") && host_in(host, prepared)) {
			host_start_installing(host, c->cluster, now, &err);
		}
	}
}

/* Day-2 (§4.3 step 9): every known, approved host of an installed cluster
 * is installed. */
static void install_day2(struct cluster_ctx *c, int64_t now)
{
	json_t *host;
	ah_err err;
	size_t i;

	static const char *const pre[] = { "discovering", "known", "insufficient", "pending-for-input",
					   "disconnected", NULL };

	if (!streq(jstr(c->cluster, "status"), "adding-hosts"))
		return;
	json_array_foreach(c->hosts, i, host) {
		/* Every host a day-2 cluster gets is a day-2 worker (§4.2), also
		 * one whose registration raced with the cluster's move. */
		if (host_in(host, pre) && !streq(jstr(host, "kind"), "AddToExistingClusterHost")) {
			json_object_set_new(host, "kind", json_string("AddToExistingClusterHost"));
			json_object_set_new(host, "suggested_role", json_string("worker"));
		}
		if (!streq(jstr(host, "status"), "known") || !json_is_true(json_object_get(host, "approved")))
			continue;
		if (!streq(jstr(host, "kind"), "AddToExistingClusterHost"))
			continue;
		host_install(host, c->cluster, now, &err);
	}
}

/* --- connectivity majority groups (backend §2.1, the pre-install monitor) --- */

/* Whether addr (no prefix) lies in cidr "a.b.c.d/n" or an IPv6 one. */
static bool addr_in_cidr(const char *addr, const char *cidr)
{
	unsigned char a[16], n[16];
	char net[64], ip[64];
	const char *slash = cidr ? strchr(cidr, '/') : NULL;
	int af, bits, i;

	if (!addr || !slash || (size_t)(slash - cidr) >= sizeof(net))
		return false;
	memcpy(net, cidr, (size_t)(slash - cidr));
	net[slash - cidr] = '\0';
	snprintf(ip, sizeof(ip), "%s", addr);
	if (strchr(ip, '/'))
		*strchr(ip, '/') = '\0';
	af = strchr(net, ':') ? AF_INET6 : AF_INET;
	bits = atoi(slash + 1);
	if (inet_pton(af, net, n) != 1 || inet_pton(af, ip, a) != 1 || bits < 0 || bits > (af == AF_INET ? 32 : 128))
		return false;
	for (i = 0; i < bits; i++)
		if (((a[i / 8] >> (7 - i % 8)) & 1) != ((n[i / 8] >> (7 - i % 8)) & 1))
			return false;
	return true;
}

/* Whether host a reported a working path to host b: over L2 from an address
 * in cidr, or (cidr NULL) over L3 to an address of family v6 or v4. */
static bool reaches(const json_t *conn, const char *b, const char *cidr, bool v6)
{
	json_t *rh, *e;
	size_t i, j;

	json_array_foreach(json_object_get(conn, "remote_hosts"), i, rh) {
		if (!streq(jstr(rh, "host_id"), b))
			continue;
		if (cidr) {
			json_array_foreach(json_object_get(rh, "l2_connectivity"), j, e)
				if (json_is_true(json_object_get(e, "successful")) &&
				    addr_in_cidr(jstr(e, "outgoing_ip_address"), cidr))
					return true;
		} else {
			json_array_foreach(json_object_get(rh, "l3_connectivity"), j, e)
				if (json_is_true(json_object_get(e, "successful")) && jstr(e, "remote_ip_address") &&
				    (strchr(jstr(e, "remote_ip_address"), ':') != NULL) == v6)
					return true;
		}
	}
	return false;
}

/* The largest group of hosts that all reach each other (greedy: drop the
 * least connected until the rest is a full mesh); fewer than 3 → empty. */
static json_t *mesh_group(json_t *const *conns, const char *const *ids, size_t n, const char *cidr, bool v6)
{
	bool *in = calloc(n ? n : 1, sizeof(*in));
	json_t *out = json_array();
	size_t i, j, left = 0;

	if (!in)
		return out;
	for (i = 0; i < n; i++)
		left += (in[i] = conns[i] != NULL);
	for (;;) {
		size_t worst = n, worst_links = (size_t)-1;
		bool mesh = true;

		for (i = 0; i < n; i++) {
			size_t links = 0;

			if (!in[i])
				continue;
			for (j = 0; j < n; j++)
				if (j != i && in[j] && reaches(conns[i], ids[j], cidr, v6) && reaches(conns[j], ids[i], cidr, v6))
					links++;
			if (links + 1 < left)
				mesh = false;
			if (links <= worst_links) {
				worst_links = links;
				worst = i;
			}
		}
		if (mesh || worst == n)
			break;
		in[worst] = false;
		left--;
	}
	if (left >= 3)
		for (i = 0; i < n; i++)
			if (in[i])
				json_array_append_new(out, json_string(ids[i]));
	free(in);
	return out;
}

/* connectivity_majority_groups: per machine network CIDR (L2) and per
 * family "IPv4"/"IPv6" (L3), the ids of the largest full-mesh group. */
static void update_majority_groups(json_t *cluster, const json_t *hosts)
{
	size_t n = json_array_size(hosts), i;
	json_t **conns = calloc(n ? n : 1, sizeof(*conns)), *groups = json_object(), *mn;
	const char **ids = calloc(n ? n : 1, sizeof(*ids));
	char *text;

	if (!conns || !ids || !groups)
		goto done;
	for (i = 0; i < n; i++) {
		const json_t *host = json_array_get(hosts, i), *c = json_object_get(host, "connectivity");

		ids[i] = jstr_or(host, "id", "");
		conns[i] = json_is_string(c) ? json_loads(json_string_value(c), 0, NULL) :
			   json_is_object(c) ? json_incref((json_t *)c) : NULL;
	}
	json_array_foreach(json_object_get(cluster, "machine_networks"), i, mn)
		if (jstr(mn, "cidr"))
			json_object_set_new(groups, jstr(mn, "cidr"), mesh_group(conns, ids, n, jstr(mn, "cidr"), false));
	json_object_set_new(groups, "IPv4", mesh_group(conns, ids, n, NULL, false));
	json_object_set_new(groups, "IPv6", mesh_group(conns, ids, n, NULL, true));
	text = json_dumps(groups, JSON_COMPACT | JSON_SORT_KEYS);
	if (text)
		json_object_set_new(cluster, "connectivity_majority_groups", json_string(text));
	free(text);
	for (i = 0; i < n; i++)
		json_decref(conns[i]);
done:
	json_decref(groups);
	free(conns);
	free(ids);
}

/* Suggested roles, once every host has an inventory (backend §0). */
static void suggest_roles(struct cluster_ctx *c)
{
	json_t *host;
	size_t i;

	json_array_foreach(c->hosts, i, host)
		if (!json_object_get(host, "inventory"))
			return;
	cluster_suggest_roles(c->cluster, c->hosts);
}

/* §4.3 steps 7 and 8: the credentials and clusterMetadata. */
static void credentials(struct hub *h, struct cluster_ctx *c)
{
	const char *status = jstr(c->cluster, "status"), *ns = meta_str(c->cd, "namespace");
	const json_t *meta = json_object_get(json_object_get(c->aci, "spec"), "clusterMetadata");
	char kcname[300], pwname[300], uuid[40], pw[24];
	json_t *patch, *m, *data;

	kubeconfig_secret_name(c->cd, kcname, sizeof(kcname));
	if ((streq(status, "installing") || streq(status, "finalizing")) && !json_is_object(meta)) {
		if (!secret_exists(h, ns, kcname) && write_kubeconfig_secret(h, c->cd, kcname, false) < 0)
			return;
		util_uuid4(uuid, sizeof(uuid));
		m = json_pack("{s:s,s:s,s:{s:s}}", "clusterID", uuid, "infraID", meta_str(c->aci, "uid"),
			      "adminKubeconfigSecretRef", "name", kcname);
		patch = json_pack("{s:{s:o}}", "spec", "clusterMetadata", m);
		if (patch_obj(h, h->k_aci, ns, meta_str(c->aci, "name"), patch, false) == 0)
			json_object_set(json_object_get(c->aci, "spec"), "clusterMetadata", m);
		json_decref(patch);
		return;
	}
	if (!streq(status, "installed") || streq(jstr(c->cluster, "kind"), "AddHostsCluster"))
		return;
	if (json_is_object(meta) && jstr(json_object_get(meta, "adminPasswordSecretRef"), "name"))
		return;
	snprintf(pwname, sizeof(pwname), "%s-admin-password", meta_str(c->cd, "name"));
	if (kubeadmin_password(pw) < 0)
		return;
	data = json_pack("{s:s,s:s}", "username", "kubeadmin", "password", pw);
	OPENSSL_cleanse(pw, sizeof(pw));
	if (put_secret(h, c->cd, pwname, "kubeadmincreds", data, false) < 0 ||
	    write_kubeconfig_secret(h, c->cd, kcname, !secret_exists(h, ns, kcname)) < 0) {
		json_decref(data);
		return;
	}
	json_decref(data);
	if (!jstr(meta, "clusterID"))
		util_uuid4(uuid, sizeof(uuid));
	m = json_pack("{s:s,s:s,s:{s:s},s:{s:s}}", "clusterID", jstr(meta, "clusterID") ? jstr(meta, "clusterID") : uuid,
		      "infraID", meta_str(c->aci, "uid"), "adminKubeconfigSecretRef", "name", kcname,
		      "adminPasswordSecretRef", "name", pwname);
	patch = json_pack("{s:{s:o}}", "spec", "clusterMetadata", m);
	if (patch_obj(h, h->k_aci, ns, meta_str(c->aci, "name"), patch, false) == 0)
		json_object_set(json_object_get(c->aci, "spec"), "clusterMetadata", m);
	json_decref(patch);
}

static void emit_events(struct hub *h, struct cluster_ctx *c, const json_t *events)
{
	struct hub_event_ref ref;
	json_t *e;
	size_t i;

	hub_event_ref_object(c->aci, &ref);
	ref.cluster_id = meta_str(c->aci, "uid");
	json_array_foreach(events, i, e)
		hub_event(h, &ref, jstr_or(e, "severity", HUB_EV_INFO), jstr(e, "name"), "%s", jstr_or(e, "message", ""));
}

static void cluster_status_event(struct hub *h, struct cluster_ctx *c, const char *src)
{
	struct hub_event_ref ref;

	if (streq(src, jstr(c->cluster, "status")))
		return;
	hub_event_ref_object(c->aci, &ref);
	ref.cluster_id = meta_str(c->aci, "uid");
	hub_event_cluster_status(h, &ref, src, jstr(c->cluster, "status"), jstr(c->cluster, "status_info"));
	am_cluster_status(src, jstr(c->cluster, "status"),
			  json_integer_value(json_object_get(c->cluster, "install_started_at")), time(NULL));
}

/* --- deletion ------------------------------------------------------------------ */

/* The ACI finalizer (§3, §5): cancel a running install, return or delete the
 * Agents, drop the cluster. */
static void aci_cleanup(struct hub *h, struct cluster_ctx *c)
{
	bool preserve = c->cd && json_is_true(json_object_get(json_object_get(c->cd, "spec"), "preserveOnDelete"));
	const char *cdname = jstr(json_object_get(json_object_get(c->aci, "spec"), "clusterDeploymentRef"), "name");
	const char *ns = meta_str(c->aci, "namespace");
	json_t *agents = bound_agents(h, ns, cdname ? cdname : ""), *a;
	const char *cst = jstr(json_object_get(json_object_get(c->aci, "status"), "debugInfo"), "state");
	static const char *const running[] = { "preparing-for-installation", "installing",
					       "installing-pending-user-action", "finalizing", "error", NULL };
	size_t i;

	am_cluster_deleted(c->aci, agents);
	/* A running installation is cancelled first: the cluster and each of
	 * its installing hosts say so (events), then the hosts leave. */
	for (const char *const *r = running; cst && *r; r++) {
		struct hub_event_ref ref;

		if (!streq(cst, *r))
			continue;
		hub_event_ref_object(c->aci, &ref);
		ref.cluster_id = meta_str(c->aci, "uid");
		hub_event_cluster_status(h, &ref, cst, "cancelled", CLUSTER_INFO_CANCELLED);
		hub_cluster_event(h, c->aci, HUB_EV_INFO, "cluster_installation_canceled", "Canceled cluster installation");
		am_cluster_status(cst, "cancelled", json_integer_value(json_object_get(
			c->cluster ? c->cluster : c->prev_state, "install_started_at")), time(NULL));
		json_array_foreach(agents, i, a) {
			json_t *host = hub_host_model(h, a);
			ah_err err;

			if (host && host_cancel_installation(host, "Installation cancelled by user", time(NULL), &err) == 0 &&
			    hub_host_sync(h, a, host) == 0)
				hub_host_cancel_event(h, a, host);
			json_decref(host);
		}
		json_decref(agents);
		agents = bound_agents(h, ns, cdname ? cdname : "");
		{
			json_t *patch = json_pack("{s:{s:{s:s,s:s}}}", "status", "debugInfo", "state", "cancelled",
						  "stateInfo", CLUSTER_INFO_CANCELLED);

			patch_obj(h, h->k_aci, ns, meta_str(c->aci, "name"), patch, true);
			json_decref(patch);
		}
		break;
	}

	json_array_foreach(agents, i, a) {
		const char *ie_name = jstr(json_object_get(json_object_get(a, "metadata"), "labels"), LABEL_INFRAENV);
		json_t *ie = NULL;
		const json_t *cref;
		bool del = false;
		ah_err err;

		if (ie_name && kube_get(h->api, h->k_infraenv, meta_str(a, "namespace"), ie_name, &ie, &err) == 0) {
			cref = json_object_get(json_object_get(ie, "spec"), "clusterRef");
			if (jstr(cref, "name"))
				del = streq(jstr(cref, "name"), cdname) &&
				      streq(jstr_or(cref, "namespace", meta_str(ie, "namespace")), ns);
			else
				del = preserve;
		}
		json_decref(ie);
		if (del) {
			json_t *ret = NULL;

			kube_delete(h->api, h->k_agent, meta_str(a, "namespace"), meta_str(a, "name"), NULL, &ret, &err);
			json_decref(ret);
		} else {
			json_t *patch = json_pack("{s:{s:n}}", "spec", "clusterDeploymentName");

			patch_obj(h, h->k_agent, meta_str(a, "namespace"), meta_str(a, "name"), patch, false);
			json_decref(patch);
		}
	}
	json_decref(agents);
	state_delete(h, meta_str(c->aci, "uid"));
	set_finalizer(h, h->k_aci, c->aci, FINALIZER_ACI, false);
}

/* --- the passes --------------------------------------------------------------- */

int hub_reconcile_aci(struct hub *h, const char *ns, const char *name)
{
	json_t *aci = NULL, *cd = NULL, *conds, *st;
	const json_t *old;
	const char *cdname;
	ah_err err;
	char now[32];

	if (!h->k_aci || kube_get(h->api, h->k_aci, ns, name, &aci, &err) < 0)
		return 0;
	cdname = jstr(json_object_get(json_object_get(aci, "spec"), "clusterDeploymentRef"), "name");
	if (!cdname || kube_get(h->api, h->k_cd, ns, cdname, &cd, &err) == 0) {
		/* The CD pass owns everything else. */
		json_decref(cd);
		json_decref(aci);
		return 0;
	}
	if (meta_str(aci, "deletionTimestamp")) {
		struct cluster_ctx c = { .aci = aci };

		aci_cleanup(h, &c);
		return 0;
	}
	old = json_object_get(aci, "status");
	st = json_is_object(old) ? json_deep_copy(old) : json_object();
	conds = aci_conditions_cd_missing(cdname, ns);
	now_rfc3339(now, sizeof(now));
	aci_conditions_merge_times(conds, json_object_get(old, "conditions"), now);
	json_object_set_new(st, "conditions", conds);
	json_object_set_new(st, "debugInfo", json_pack("{s:s}", "logsURL", ""));
	if (!json_equal(st, old)) {
		json_t *patch = json_pack("{s:O}", "status", st);

		patch_obj(h, h->k_aci, ns, name, patch, true);
		json_decref(patch);
	}
	json_decref(st);
	json_decref(aci);
	return 0;
}

static bool active_state(const char *s)
{
	static const char *const quiet[] = { "installed", "error", "cancelled", "adding-hosts", NULL };
	const char *const *q;

	for (q = quiet; *q; q++)
		if (streq(s, *q))
			return false;
	return true;
}

int hub_reconcile_cd(struct hub *h, const char *ns, const char *name)
{
	static const char *const pre_install[] = { "pending-for-input", "insufficient", "ready", NULL };
	struct cluster_ctx c = { 0 };
	struct cluster_refresh_ctx rctx = { 0 };
	struct cluster_refresh_result res = { 0 };
	const json_t *iref;
	json_t *hosts_before = NULL;
	char src[48] = "";
	int64_t now = time(NULL);
	ah_err err;

	if (!h->k_cd || !h->k_aci || kube_get(h->api, h->k_cd, ns, name, &c.cd, &err) < 0)
		return 0;
	iref = json_object_get(json_object_get(c.cd, "spec"), "clusterInstallRef");
	if (!streq(jstr(iref, "group"), ACI_GROUP) || !streq(jstr(iref, "kind"), "AgentClusterInstall") ||
	    !jstr(iref, "name")) {
		cluster_ctx_release(&c);
		return 0;
	}
	if (kube_get(h->api, h->k_aci, ns, jstr(iref, "name"), &c.aci, &err) < 0)
		c.aci = NULL;
	/* §4.3 step 1 and §3: deletion goes CD → ACI → Agents. */
	if (meta_str(c.cd, "deletionTimestamp")) {
		if (c.aci) {
			if (!meta_str(c.aci, "deletionTimestamp")) {
				json_t *ret = NULL;

				kube_delete(h->api, h->k_aci, ns, meta_str(c.aci, "name"), NULL, &ret, &err);
				json_decref(ret);
			} else {
				aci_cleanup(h, &c);
			}
			requeue_after(h, ns, name, REQUEUE_DELETE_MS);
		} else {
			set_finalizer(h, h->k_cd, c.cd, FINALIZER_CD, false);
		}
		cluster_ctx_release(&c);
		return 0;
	}
	if (!c.aci) {
		cluster_ctx_release(&c);
		return 0;
	}
	if (meta_str(c.aci, "deletionTimestamp")) {
		aci_cleanup(h, &c);
		cluster_ctx_release(&c);
		return 0;
	}
	if (!has_finalizer(c.aci, FINALIZER_ACI) || !has_finalizer(c.cd, FINALIZER_CD)) {
		/* The finalizer writes come back as events and a new pass. */
		set_finalizer(h, h->k_aci, c.aci, FINALIZER_ACI, true);
		set_finalizer(h, h->k_cd, c.cd, FINALIZER_CD, true);
		cluster_ctx_release(&c);
		return 0;
	}
	ensure_owner(h, c.cd, c.aci);

	load_cluster(h, &c);
	if (c.cluster) {
		snprintf(src, sizeof(src), "%s", jstr_or(c.cluster, "status", ""));
		hosts_before = json_deep_copy(c.hosts);
		suggest_roles(&c);
		if (!cluster_is_sno(c.cluster) && host_in(c.cluster, pre_install))
			update_majority_groups(c.cluster, c.hosts);
		rctx.now = now;
		rctx.kubeconfig_uploaded = json_is_object(json_object_get(json_object_get(c.aci, "spec"), "clusterMetadata"));
		rctx.custom_manifests = hub_manifests_present(h, c.aci);
		if (cluster_refresh(c.cluster, c.hosts, &rctx, &res) == 0) {
			if (res.validations_changed)
				am_validations_changed(false, json_object_get(c.cluster, "validations_info"),
						       res.validations_info);
			if (res.changed) {
				json_decref(c.cluster);
				c.cluster = json_incref(res.cluster);
			}
			emit_events(h, &c, res.events);
		}
		cluster_refresh_result_release(&res);
		maybe_start(h, &c, now);
		start_hosts(&c, now);
		install_day2(&c, now);
		refresh_hosts(&c, now, h->cfg.host_disconnect_timeout_s);
		cluster_update_progress(c.cluster, c.hosts);
		cluster_status_event(h, &c, src);
		sync_hosts(h, &c, hosts_before);
		credentials(h, &c);
		/* Installed and marked: the next pass makes it day-2 (§4.3 step 8). */
		if (streq(jstr(c.cluster, "status"), "installed") &&
		    jstr(json_object_get(json_object_get(json_object_get(c.aci, "spec"), "clusterMetadata"),
					 "adminPasswordSecretRef"), "name") &&
		    !streq(jstr(c.cluster, "kind"), "AddHostsCluster")) {
			if (cluster_allow_add_hosts(c.cluster, now, &err) == 0)
				rt_enqueue(h->c_cd, ns, name);
		}
		if (!json_equal(c.cluster, c.prev_state)) {
			int r = state_put(h, meta_str(c.aci, "uid"), c.cluster, c.state_rev);

			if (r < 0) {
				/* Someone else moved it (the agent API): the runtime
				 * does it again after a back-off. */
				json_decref(hosts_before);
				cluster_ctx_release(&c);
				return r;
			}
		}
	}
	write_aci_status(h, &c);
	mirror_to_cd(h, &c);
	if (!c.cluster || active_state(jstr(c.cluster, "status")))
		requeue_after(h, ns, name, REQUEUE_ACTIVE_MS);
	json_decref(hosts_before);
	cluster_ctx_release(&c);
	return 0;
}

/* --- registration ----------------------------------------------------------- */

static struct rt_result reconcile_cd(void *ctx, const struct rt_key *key)
{
	return rt_from_errno(hub_reconcile_cd(ctx, key->ns, key->name));
}

static struct rt_result reconcile_aci(void *ctx, const struct rt_key *key)
{
	return rt_from_errno(hub_reconcile_aci(ctx, key->ns, key->name));
}

static void agent_cd_index(const json_t *agent, json_t *out)
{
	char key[600];

	hub_agent_cd_key(agent, key, sizeof(key));
	if (key[0])
		json_array_append_new(out, json_string(key));
}

static void aci_imageset_index(const json_t *aci, json_t *out)
{
	const char *is = jstr(json_object_get(json_object_get(aci, "spec"), "imageSetRef"), "name");

	if (is)
		json_array_append_new(out, json_string(is));
}

/* "ns/name" keys of a JSON array of strings → the CD controller. */
static void enqueue_cd_keys(struct rt_controller *c, const json_t *keys)
{
	const json_t *v;
	size_t i;

	json_array_foreach(keys, i, v) {
		const char *k = json_string_value(v), *slash = k ? strchr(k, '/') : NULL;
		char ns[RT_NS_MAX + 1];

		if (!slash || (size_t)(slash - k) >= sizeof(ns))
			continue;
		memcpy(ns, k, (size_t)(slash - k));
		ns[slash - k] = '\0';
		rt_enqueue(c, ns, slash + 1);
	}
}

/* The cluster follows its hosts: a host's new state may move it (or start
 * the install); the CD it named before and the one it names now both care. */
static void agent_to_cds(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	json_t *now = json_array();

	enqueue_cd_keys(c, rt_event_old_index(ev, HUB_IDX_AGENT_CD));
	if (ev->obj && ev->so->type != STORE_DELETED)
		agent_cd_index(ev->obj, now);
	enqueue_cd_keys(c, now);
	json_decref(now);
}

static void aci_to_cd(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	const char *cd = jstr(json_object_get(json_object_get(ev->obj, "spec"), "clusterDeploymentRef"), "name");

	if (cd)
		rt_enqueue(c, ev->so->ns, cd);
}

static void aci_self(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	if (ev->so->type != STORE_DELETED)
		rt_enqueue(c, ev->so->ns, ev->so->name);
}

static int collect_visit(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

static void enqueue_pairs(struct rt_controller *c, json_t *pairs)
{
	json_t *p;
	size_t i;

	json_array_foreach(pairs, i, p)
		rt_enqueue(c, json_string_value(json_array_get(p, 0)), json_string_value(json_array_get(p, 1)));
	json_decref(pairs);
}

/* A ClusterImageSet changed: the CDs of the ACIs that name it. */
static void imageset_to_cds(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *acis = rt_cache_list_by(h->rt, h->k_aci->store_key, HUB_IDX_ACI_IMAGESET, ev->so->name), *p;
	size_t i;

	json_array_foreach(acis, i, p) {
		const char *ns = json_string_value(json_array_get(p, 0));
		json_t *aci = rt_cache_get(h->rt, h->k_aci->store_key, ns, json_string_value(json_array_get(p, 1)));
		const char *cd = jstr(json_object_get(json_object_get(aci, "spec"), "clusterDeploymentRef"), "name");

		if (cd)
			rt_enqueue(c, ns, cd);
		json_decref(aci);
	}
	json_decref(acis);
}

/* The Secrets a CD's reconcile reads or writes: "ns/name" of its pull
 * secret, its admin kubeconfig and its admin password Secret. */
#define IDX_CD_SECRET "secrets"
static void cd_secret_index(const json_t *cd, json_t *out)
{
	const char *ns = meta_str(cd, "namespace"), *ps = jstr(json_object_get(json_object_get(cd, "spec"), "pullSecretRef"), "name");
	char name[300], key[600];

	if (!ns || !meta_str(cd, "name"))
		return;
	if (ps && *ps) {
		snprintf(key, sizeof(key), "%s/%s", ns, ps);
		json_array_append_new(out, json_string(key));
	}
	kubeconfig_secret_name(cd, name, sizeof(name));
	snprintf(key, sizeof(key), "%s/%s", ns, name);
	json_array_append_new(out, json_string(key));
	snprintf(key, sizeof(key), "%s/%s-admin-password", ns, meta_str(cd, "name"));
	json_array_append_new(out, json_string(key));
}

/* A Secret (pull secret, admin kubeconfig) changed: the CDs that name it
 * (the cache's index). */
static void secret_to_cds(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *pairs = json_array();
	char key[600];

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	rt_cache_keys_by(h->rt, h->k_cd->store_key, IDX_CD_SECRET, key, collect_visit, pairs);
	enqueue_pairs(c, pairs);
}

int hub_cluster_register(struct hub *h)
{
	int r;

	if (!h->k_cd || !h->k_aci || !h->k_agent)
		return 0;
	{
		struct rt_controller_def d = {
			.name = "ClusterDeployment",
			.reconcile = reconcile_cd,
			.ctx = h,
			.watches = {
				{ .resource = h->k_cd->store_key, .map = RT_MAP_SELF },
				{ .resource = h->k_aci->store_key, .map = RT_MAP_FN, .fn = aci_to_cd },
				{ .resource = h->k_agent->store_key, .map = RT_MAP_FN, .fn = agent_to_cds },
				{ .resource = "secrets", .map = RT_MAP_FN, .fn = secret_to_cds },
				{ .resource = h->k_imageset ? h->k_imageset->store_key : NULL,
				  .map = RT_MAP_FN, .fn = imageset_to_cds },
			},
		};

		r = rt_register(h->rt, &d, &h->c_cd);
	}
	if (r == 0) {
		struct rt_controller_def d = {
			.name = "AgentClusterInstall",
			.reconcile = reconcile_aci,
			.ctx = h,
			.watches = { { .resource = h->k_aci->store_key, .map = RT_MAP_FN, .fn = aci_self } },
		};

		r = rt_register(h->rt, &d, &h->c_aci);
	}
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_agent->store_key, HUB_IDX_AGENT_CD, agent_cd_index);
	if (r == 0)
		r = rt_cache_resource(h->rt, h->k_cd->store_key, false);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_cd->store_key, IDX_CD_SECRET, cd_secret_index);
	if (r == 0)
		r = rt_cache_resource(h->rt, h->k_aci->store_key, true);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_aci->store_key, HUB_IDX_ACI_IMAGESET, aci_imageset_index);
	return r;
}
