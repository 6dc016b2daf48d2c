/* admission.c - the upstream admission webhooks (kubeapi.md §5.1) as
 * admission rules of the object API: InfraEnv, Agent, AgentClassification
 * and AgentClusterInstall validation, and the AgentClusterInstall default of
 * spec.networking.userManagedNetworking; CAPOA's OpenshiftAssistedConfig
 * validation (bmac-capi.md C.1: the spec never changes).
 *
 * The rules (hub_admit_rules) are pure over the old and new objects; the
 * one fact they need from the store (whether a ClusterDeployment is
 * installed) comes through a callback.  Every refusal is HTTP 400
 * BadRequest with the message the API server shows for a denying webhook.
 *
 * Webhooks see writes of the main resource only, never of the status
 * subresource: a write that changes nothing but status (the controllers'
 * status updates) passes untouched. */
#include "hub-internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/host.h"
#include "base/log.h"
#include "kube/selector.h"

#define CLASSIFICATION_LABEL_PREFIX "agentclassification.agent-install.openshift.io/"

#define WH_ACI "agentclusterinstallvalidators.admission.agentinstall.openshift.io"
#define WH_INFRAENV "infraenvvalidators.admission.agentinstall.openshift.io"
#define WH_AGENT "agentvalidators.admission.agentinstall.openshift.io"
#define WH_CLASSIFICATION "agentclassificationvalidators.admission.agentinstall.openshift.io"
#define WH_OAC "v1alpha2.validation.openshiftassistedconfig.bootstrap.cluster.x-k8s.io"

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const char *sval(const json_t *o, const char *k)
{
	const char *s = jstr(o, k);

	return s ? s : "";
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static int deny(ah_err *err, const char *webhook, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int deny(ah_err *err, const char *webhook, const char *fmt, ...)
{
	char msg[AH_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ah_err_set(err, EINVAL, 400, "BadRequest", "admission webhook \"%s\" denied the request: %s", webhook,
			  msg);
}

/* A copy with empty values dropped (null, "", [], {}), recursively: the
 * webhooks compare Go structs, where those all read as unset. */
static json_t *prune_empty(const json_t *v)
{
	if (json_is_object(v)) {
		json_t *out = json_object(), *x;
		const char *k;

		json_object_foreach((json_t *)v, k, x) {
			json_t *p = prune_empty(x);

			if (p)
				json_object_set_new(out, k, p);
		}
		if (json_object_size(out) == 0) {
			json_decref(out);
			return NULL;
		}
		return out;
	}
	if (json_is_array(v)) {
		json_t *x;
		size_t i;

		if (json_array_size(v) == 0)
			return NULL;
		/* Array elements keep their positions: prune inside, keep empties. */
		{
			json_t *out = json_array();

			json_array_foreach(v, i, x) {
				json_t *p = prune_empty(x);

				json_array_append_new(out, p ? p : json_object());
			}
			return out;
		}
	}
	if (!v || json_is_null(v) || (json_is_string(v) && !*json_string_value(v)))
		return NULL;
	return json_incref((json_t *)v);
}

static bool same_pruned(const json_t *a, const json_t *b)
{
	json_t *pa = prune_empty(a), *pb = prune_empty(b);
	bool eq = (!pa && !pb) || (pa && pb && json_equal(pa, pb));

	json_decref(pa);
	json_decref(pb);
	return eq;
}

/* Whether the write changes anything but status (the status subresource
 * keeps everything else as stored). */
static bool status_only(const json_t *old, const json_t *obj)
{
	const char *key;
	json_t *v;
	size_t n = 0;

	if (!old || !json_is_object(old) || !json_is_object(obj))
		return false;
	/* Equal but for "status", without copying either object. */
	json_object_foreach((json_t *)old, key, v) {
		if (strcmp(key, "status") == 0)
			continue;
		if (!json_equal(v, json_object_get(obj, key)))
			return false;
		n++;
	}
	return n + (json_object_get(obj, "status") ? 1 : 0) == json_object_size(obj);
}

static const char *condition_reason(const json_t *obj, const char *type)
{
	const json_t *conds = json_object_get(json_object_get(obj, "status"), "conditions"), *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (streq(jstr(c, "type"), type))
			return jstr(c, "reason");
	return NULL;
}

/* --- InfraEnv ------------------------------------------------------------------ */

static bool ref_set(const json_t *ref)
{
	return json_is_object(ref);
}

static bool refs_equal(const json_t *a, const json_t *b)
{
	if (!ref_set(a) || !ref_set(b))
		return ref_set(a) == ref_set(b);
	return strcmp(sval(a, "name"), sval(b, "name")) == 0 &&
	       strcmp(sval(a, "namespace"), sval(b, "namespace")) == 0;
}

static const char *arch_or_default(const char *a)
{
	return a && *a ? a : "x86_64";
}

static int admit_infraenv(enum kube_op op, const json_t *old, const json_t *obj, hub_cd_installed_fn cd_installed,
			  void *ud, ah_err *err)
{
	const json_t *spec = json_object_get(obj, "spec"), *ospec = json_object_get(old, "spec");
	const json_t *ref = json_object_get(spec, "clusterRef");

	if (op == KUBE_CREATE) {
		if (ref_set(ref) && *sval(spec, "osImageVersion"))
			return deny(err, WH_INFRAENV,
				    "Either Spec.ClusterRef or Spec.OSImageVersion should be specified (not both).");
		return 0;
	}
	if (!refs_equal(json_object_get(ospec, "clusterRef"), ref))
		return deny(err, WH_INFRAENV,
			    "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation.");
	if (strcmp(arch_or_default(jstr(ospec, "cpuArchitecture")), arch_or_default(jstr(spec, "cpuArchitecture"))) != 0)
		return deny(err, WH_INFRAENV,
			    "Attempted to change Spec.CpuArchitecture which is immutable after InfraEnv creation.");
	if (!*sval(ospec, "osImageVersion") && *sval(spec, "osImageVersion") && ref_set(ref)) {
		const char *ns = jstr(ref, "namespace");
		bool installed = false;

		if (!ns || !*ns)
			ns = jstr(json_object_get(obj, "metadata"), "namespace");
		if (!cd_installed || cd_installed(ud, ns ? ns : "", sval(ref, "name"), &installed) < 0 || !installed)
			return deny(err, WH_INFRAENV,
				    "spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef when the cluster is not installed yet.");
	}
	return 0;
}

/* --- Agent ---------------------------------------------------------------------- */

static int admit_agent(enum kube_op op, const json_t *old, const json_t *obj, ah_err *err)
{
	const json_t *spec = json_object_get(obj, "spec"), *ostatus = json_object_get(old, "status");
	const json_t *nref = json_object_get(spec, "clusterDeploymentName");

	if (*sval(spec, "installation_disk_id") && *sval(spec, "installation_disk_path"))
		return deny(err, WH_AGENT, "Either InstallationDiskID or InstallationDiskPath can be set, not both.");
	if (op != KUBE_UPDATE)
		return 0;
	if (!refs_equal(json_object_get(json_object_get(old, "spec"), "clusterDeploymentName"), nref) &&
	    host_status_inst6(jstr(json_object_get(ostatus, "debugInfo"), "state")) &&
	    !(streq(jstr(ostatus, "kind"), "AddToExistingClusterHost") && !ref_set(nref)))
		return deny(err, WH_AGENT,
			    "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation.");
	return 0;
}

/* --- AgentClassification -------------------------------------------------------- */

static bool is_binary_op(const char *tok)
{
	static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=", "and", "or", "+", "*", "/", "%",
					   "|", ",", "//", "=", "|=", "+=", "-=", "*=", "/=", "%=", "//=", ":", NULL };
	size_t i;

	for (i = 0; ops[i]; i++)
		if (strcmp(tok, ops[i]) == 0)
			return true;
	return false;
}

static const char *skip_interpolation(const char *p, int depth);

/* p at an opening quote: the character after the closing one, or NULL. */
static const char *skip_string(const char *p, int depth)
{
	for (p++; *p; p++) {
		if (p[0] == '\\' && p[1] == '(') {
			p = skip_interpolation(p + 2, depth + 1);
			if (!p)
				return NULL;
			continue;
		}
		if (p[0] == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* p just after "\(": the ')' that closes the interpolation, or NULL. */
static const char *skip_interpolation(const char *p, int depth)
{
	int parens = 0;

	if (depth > 16)
		return NULL;
	while (*p) {
		if (*p == '"') {
			p = skip_string(p, depth);
			if (!p)
				return NULL;
			continue;
		}
		if (*p == '(')
			parens++;
		else if (*p == ')' && parens-- == 0)
			return p;
		p++;
	}
	return NULL;
}

int hub_jq_syntax_check(const char *q, char *why, size_t why_size)
{
	char stack[64], last[8] = "";
	size_t depth = 0;
	const char *p = q;
	bool any = false;

	if (!q)
		q = p = "";
	while (*p) {
		char tok[8] = "";

		if (isspace((unsigned char)*p)) {
			p++;
			continue;
		}
		if (*p == '#') {
			while (*p && *p != '\n')
				p++;
			continue;
		}
		any = true;
		if (*p == '"') {
			p = skip_string(p, 0);
			if (!p) {
				snprintf(why, why_size, "unterminated string literal");
				return -EINVAL;
			}
			snprintf(last, sizeof(last), "v");
			continue;
		}
		if (*p == '(' || *p == '[' || *p == '{') {
			if (depth == sizeof(stack)) {
				snprintf(why, why_size, "nested too deeply");
				return -EINVAL;
			}
			stack[depth++] = *p == '(' ? ')' : *p == '[' ? ']' : '}';
			p++;
			snprintf(last, sizeof(last), "(");
			continue;
		}
		if (*p == ')' || *p == ']' || *p == '}') {
			if (!depth || stack[depth - 1] != *p) {
				snprintf(why, why_size, "unexpected token \"%c\"", *p);
				return -EINVAL;
			}
			if (is_binary_op(last)) {
				snprintf(why, why_size, "unexpected token \"%c\" after \"%s\"", *p, last);
				return -EINVAL;
			}
			depth--;
			p++;
			snprintf(last, sizeof(last), "v");
			continue;
		}
		if (isalpha((unsigned char)*p) || *p == '_' || *p == '$' || *p == '@') {
			size_t n = 0;

			while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '$' || p[n] == '@' ||
			       (p[n] == ':' && p[n + 1] == ':'))
				n += p[n] == ':' ? 2 : 1;
			snprintf(tok, sizeof(tok), "%.*s", (int)(n < 7 ? n : 7), p);
			p += n;
		} else if (strchr("=!<>/|+-*%", *p)) {
			size_t n = 1;

			if (p[1] == '=' || (p[0] == '/' && p[1] == '/'))
				n = 2;
			if (p[0] == '/' && p[1] == '/' && p[2] == '=')
				n = 3;
			snprintf(tok, sizeof(tok), "%.*s", (int)n, p);
			p += n;
		} else if (strchr(".,:;?", *p) || isdigit((unsigned char)*p)) {
			if (isdigit((unsigned char)*p)) {
				while (isalnum((unsigned char)*p) || *p == '.')
					p++;
				snprintf(tok, sizeof(tok), "v");
			} else {
				snprintf(tok, sizeof(tok), "%c", *p);
				p++;
			}
		} else {
			snprintf(why, why_size, "unexpected token \"%c\"", *p);
			return -EINVAL;
		}
		if (is_binary_op(tok) && strcmp(tok, "-") != 0 && (!last[0] || is_binary_op(last) || strcmp(last, "(") == 0) &&
		    strcmp(tok, ":") != 0) {
			snprintf(why, why_size, "unexpected token \"%s\"", tok);
			return -EINVAL;
		}
		snprintf(last, sizeof(last), "%s", tok);
	}
	if (!any) {
		snprintf(why, why_size, "empty query");
		return -EINVAL;
	}
	if (depth) {
		snprintf(why, why_size, "unexpected EOF: missing \"%c\"", stack[depth - 1]);
		return -EINVAL;
	}
	if (is_binary_op(last) || strcmp(last, "-") == 0) {
		snprintf(why, why_size, "unexpected EOF after \"%s\"", last);
		return -EINVAL;
	}
	return 0;
}

static int admit_classification(enum kube_op op, const json_t *old, const json_t *obj, ah_err *err)
{
	const json_t *spec = json_object_get(obj, "spec"), *ospec = json_object_get(old, "spec");
	char why[256], key[512];
	json_t *labels, *causes;
	int r;

	if (op == KUBE_UPDATE && (strcmp(sval(ospec, "labelKey"), sval(spec, "labelKey")) != 0 ||
				  strcmp(sval(ospec, "labelValue"), sval(spec, "labelValue")) != 0))
		return deny(err, WH_CLASSIFICATION, "Label modified: the specified label may not be modified after creation");
	if (op == KUBE_CREATE) {
		snprintf(key, sizeof(key), CLASSIFICATION_LABEL_PREFIX "%s", sval(spec, "labelKey"));
		labels = json_pack("{s:s}", key, sval(spec, "labelValue"));
		causes = json_array();
		if (labels && causes && labels_validate(labels, causes) > 0) {
			const json_t *c = json_array_get(causes, 0);
			char msg[1024];

			snprintf(msg, sizeof(msg), "%s", sval(c, "message"));
			json_decref(labels);
			json_decref(causes);
			return deny(err, WH_CLASSIFICATION, "invalid label %s=%s: %s", key, sval(spec, "labelValue"), msg);
		}
		json_decref(labels);
		json_decref(causes);
		if (strncmp(sval(spec, "labelValue"), "QUERYERROR", 10) == 0)
			return deny(err, WH_CLASSIFICATION, "label must not start with QUERYERROR as this is reserved");
	}
	r = hub_jq_syntax_check(sval(spec, "query"), why, sizeof(why));
	if (r < 0)
		return deny(err, WH_CLASSIFICATION, "failed to parse query: %s", why);
	return 0;
}

/* --- AgentClusterInstall ---------------------------------------------------------- */

static bool aci_started(const json_t *obj)
{
	const char *r = condition_reason(obj, "Completed");

	return streq(r, "InstallationFailed") || streq(r, "InstallationCompleted") || streq(r, "InstallationInProgress");
}

static bool aci_sno(const json_t *spec)
{
	const json_t *pr = json_object_get(spec, "provisionRequirements");

	return json_integer_value(json_object_get(pr, "controlPlaneAgents")) == 1 &&
	       json_integer_value(json_object_get(pr, "workerAgents")) == 0;
}

/* The mutating webhook: a default for userManagedNetworking. */
static void aci_default_umn(const json_t *old, json_t *obj)
{
	json_t *spec = json_object_get(obj, "spec"), *net;
	const char *platform;
	int umn = -1;

	if (!json_is_object(spec) || aci_started(old ? old : obj) ||
	    jstr(json_object_get(obj, "metadata"), "deletionTimestamp"))
		return;
	net = json_object_get(spec, "networking");
	if (json_is_boolean(json_object_get(net, "userManagedNetworking")))
		return;
	platform = sval(spec, "platformType");
	if (!*platform || strcmp(platform, "None") == 0)
		umn = aci_sno(spec) || strcmp(platform, "None") == 0;
	else if (strcmp(platform, "External") == 0)
		umn = 1;
	else if (strcmp(platform, "BareMetal") == 0)
		umn = 0;
	if (umn < 0)
		return;
	if (!json_is_object(net)) {
		net = json_object();
		json_object_set_new(spec, "networking", net);
	}
	json_object_set_new(net, "userManagedNetworking", json_boolean(umn));
}

/* The backend's platform / user-managed-networking pairing. */
static int aci_platform_check(const char *platform, int umn, bool sno, ah_err *err)
{
	char lower[32];
	size_t i;

	for (i = 0; platform[i] && i + 1 < sizeof(lower); i++)
		lower[i] = (char)tolower((unsigned char)platform[i]);
	lower[i] = '\0';
	if ((strcmp(lower, "baremetal") == 0 || strcmp(lower, "nutanix") == 0) && umn == 1)
		return deny(err, WH_ACI, "Can't set %s platform with user-managed-networking enabled", lower);
	if ((strcmp(lower, "none") == 0 || strcmp(lower, "external") == 0) && umn == 0)
		return deny(err, WH_ACI, "Can't set %s platform with user-managed-networking disabled", lower);
	if (strcmp(lower, "baremetal") == 0 && sno)
		return deny(err, WH_ACI, "Can't set %s platform on single node OpenShift", lower);
	return 0;
}

static int tri_bool(const json_t *v)
{
	return json_is_boolean(v) ? json_is_true(v) : -1;
}

/* "- key: old\n+ key: new" per changed top-level spec field. */
static void spec_diff(const json_t *a, const json_t *b, const char *const *skip, char *buf, size_t size)
{
	json_t *pa = prune_empty(a), *pb = prune_empty(b), *keys = json_object(), *v;
	size_t n = 0, i;
	const char *k;

	buf[0] = '\0';
	json_object_foreach(pa, k, v)
		json_object_set_new(keys, k, json_true());
	json_object_foreach(pb, k, v)
		json_object_set_new(keys, k, json_true());
	json_object_foreach(keys, k, v) {
		json_t *x = json_object_get(pa, k), *y = json_object_get(pb, k);
		char *sx, *sy;
		bool skipped = false;

		for (i = 0; skip[i]; i++)
			if (strcmp(skip[i], k) == 0)
				skipped = true;
		if (skipped || (x && y && json_equal(x, y)))
			continue;
		sx = x ? json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		sy = y ? json_dumps(y, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
		if (n < size)
			n += (size_t)snprintf(buf + n, size - n, "%s- %s: %s\n+ %s: %s", n ? "\n" : "", k,
					       sx ? sx : "null", k, sy ? sy : "null");
		free(sx);
		free(sy);
	}
	json_decref(keys);
	json_decref(pa);
	json_decref(pb);
}

static int admit_aci(enum kube_op op, const json_t *old, json_t *obj, ah_err *err)
{
	const json_t *spec, *ospec = json_object_get(old, "spec"), *net, *onet;
	const char *platform;
	int umn, r;

	aci_default_umn(op == KUBE_UPDATE ? old : NULL, obj);
	spec = json_object_get(obj, "spec");
	net = json_object_get(spec, "networking");
	if (op == KUBE_UPDATE) {
		if (!same_pruned(json_object_get(ospec, "imageSetRef"), json_object_get(spec, "imageSetRef")))
			return deny(err, WH_ACI, "Attempted to change AgentClusterInstall.ImageSetRef which is immutable");
		if (aci_started(old)) {
			const char *reason = condition_reason(old, "Completed");
			bool done = streq(reason, "InstallationCompleted") || streq(reason, "InstallationFailed");
			const char *const skip_running[] = { "clusterMetadata", "ignitionEndpoint", NULL };
			const char *const skip_done[] = { "clusterMetadata", "ignitionEndpoint", "provisionRequirements", NULL };
			char diff[1536];

			spec_diff(ospec, spec, done ? skip_done : skip_running, diff, sizeof(diff));
			if (diff[0])
				return deny(err, WH_ACI,
					    "Attempted to change AgentClusterInstall.Spec which is immutable after install started, except for ClusterMetadata,IgnitionEndpoint fields. Unsupported change: \n%s",
					    diff);
		}
	}
	/* On update a field left out falls back to its stored value. */
	onet = json_object_get(ospec, "networking");
	umn = tri_bool(json_object_get(net, "userManagedNetworking"));
	if (umn < 0 && op == KUBE_UPDATE)
		umn = tri_bool(json_object_get(onet, "userManagedNetworking"));
	platform = sval(spec, "platformType");
	if (!*platform && op == KUBE_UPDATE)
		platform = sval(ospec, "platformType");
	if (aci_sno(spec) && umn == 0)
		return deny(err, WH_ACI, "UserManagedNetworking must be set to true with SNO");
	r = aci_platform_check(platform, umn, aci_sno(spec), err);
	return r;
}

/* --- OpenshiftAssistedConfig ------------------------------------------------------ */

/* Upstream's validating webhook refuses any update whose spec differs (it
 * answers BadRequest "spec is immutable").  Both served versions are
 * checked: the object arrives here converted to the storage version, as
 * kube-apiserver converts it for the webhook. */
static int admit_oac(enum kube_op op, const json_t *old, const json_t *obj, ah_err *err)
{
	if (op != KUBE_UPDATE || json_equal(json_object_get(old, "spec"), json_object_get(obj, "spec")))
		return 0;
	return deny(err, WH_OAC, "spec is immutable");
}

/* --- entry points ---------------------------------------------------------------- */

int hub_admit_rules(const char *kind, enum kube_op op, const json_t *old, json_t *obj,
		    hub_cd_installed_fn cd_installed, void *ud, ah_err *err)
{
	if (op != KUBE_CREATE && op != KUBE_UPDATE)
		return 0;
	if (op == KUBE_UPDATE && (!old || status_only(old, obj)))
		return 0;
	if (streq(kind, "InfraEnv"))
		return admit_infraenv(op, old, obj, cd_installed, ud, err);
	if (streq(kind, "Agent"))
		return admit_agent(op, old, obj, err);
	if (streq(kind, "AgentClassification"))
		return admit_classification(op, old, obj, err);
	if (streq(kind, "AgentClusterInstall"))
		return admit_aci(op, old, obj, err);
	if (streq(kind, "OpenshiftAssistedConfig"))
		return admit_oac(op, old, obj, err);
	return 0;
}

/* The CD is installed: spec.installed (Hive's flag). */
static int cd_installed_lookup(void *ud, const char *ns, const char *name, bool *ret)
{
	struct hub *h = ud;
	const struct kube_kind *k = kube_registry_by_kind(h->reg, "hive.openshift.io/v1", "ClusterDeployment");
	json_t *cd = NULL;
	ah_err err;
	int r;

	if (!k)
		return -ENOENT;
	r = kube_get(h->api, k, ns, name, &cd, &err);
	if (r < 0)
		return r;
	*ret = json_is_true(json_object_get(json_object_get(cd, "spec"), "installed"));
	json_decref(cd);
	return 0;
}

static int admit_hook(void *userdata, const struct kube_kind *kind, enum kube_op op, const json_t *old,
		      json_t *obj, ah_err *err)
{
	return hub_admit_rules(kind->kind, op, old, obj, cd_installed_lookup, userdata, err);
}

int hub_admission_register(struct hub *h, ah_err *err)
{
	static const char *const kinds[][2] = {
		{ "agent-install.openshift.io/v1beta1", "InfraEnv" },
		{ "agent-install.openshift.io/v1beta1", "Agent" },
		{ "agent-install.openshift.io/v1beta1", "AgentClassification" },
		{ "extensions.hive.openshift.io/v1beta1", "AgentClusterInstall" },
		{ "bootstrap.cluster.x-k8s.io/v1alpha2", "OpenshiftAssistedConfig" },
	};
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const struct kube_kind *k = kube_registry_by_kind(h->reg, kinds[i][0], kinds[i][1]);
		int r;

		if (!k)
			return ah_err_set(err, ENOENT, 500, "InternalError", "kind %s %s is not registered",
					  kinds[i][0], kinds[i][1]);
		r = kube_api_add_admission(h->api, k->store_key, admit_hook, h);
		if (r < 0)
			return ah_err_set(err, -r, 500, "InternalError", "registering the %s admission rules failed",
					  kinds[i][1]);
	}
	return 0;
}
