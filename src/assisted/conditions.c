/* conditions.c - Agent conditions from the backend host status, following
 * the agent controller's table (kubeapi spec §2.3). */
#include "assisted/conditions.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/validations.h"
#include "base/strbuf.h"

static bool in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (strcmp(s, *set) == 0)
			return true;
	return false;
}

static const char *const pre_unb[] = { "discovering", "known", "disconnected", "insufficient",
				       "pending-for-input", "discovering-unbound", "known-unbound",
				       "disconnected-unbound", "insufficient-unbound", NULL };
static const char *const inst5[] = { "preparing-for-installation", "preparing-successful", "installing",
				     "installing-in-progress", "installing-pending-user-action", NULL };

static json_t *cond(const char *type, const char *status, const char *reason, const char *fmt,
		    const char *arg)
{
	strbuf sb = STRBUF_INIT;
	json_t *c;

	strbuf_addf(&sb, fmt, arg ? arg : "");
	c = json_pack("{s:s, s:s, s:s, s:s, s:n, s:n}", "type", type, "status", status, "reason", reason,
		      "message", sb.buf ? sb.buf : "", "lastHeartbeatTime", "lastTransitionTime");
	strbuf_release(&sb);
	return c;
}

static const char msg_binding[] = "The agent is currently binding to a cluster deployment";
static const char msg_unbinding[] = "The agent is currently unbinding from a cluster deployment";

/* Binding/unbinding rows shared by RequirementsMet, Validated and Installed. */
static json_t *binding_cond(const char *type, const char *st)
{
	if (!strcmp(st, "binding"))
		return cond(type, "False", "Binding", msg_binding, NULL);
	if (!strcmp(st, "unbinding") || !strcmp(st, "unbinding-pending-user-action"))
		return cond(type, "False", "Unbinding", msg_unbinding, NULL);
	return NULL;
}

static json_t *requirements_met(const char *st, bool approved)
{
	json_t *c = binding_cond("RequirementsMet", st);

	if (c)
		return c;
	if (!strcmp(st, "known") || !strcmp(st, "known-unbound"))
		return approved ? cond("RequirementsMet", "True", "AgentIsReady",
				       "The agent is ready to begin the installation", NULL)
				: cond("RequirementsMet", "False", "AgentIsNotApproved", "The agent is not approved",
				       NULL);
	if (in(st, pre_unb))
		return cond("RequirementsMet", "False", "AgentNotReady",
			    "The agent is not ready to begin the installation", NULL);
	if (in(st, inst5))
		return cond("RequirementsMet", "True", "AgentAlreadyInstalling",
			    "Installation already started and is in progress", NULL);
	if (!strcmp(st, "installed") || !strcmp(st, "error") || !strcmp(st, "added-to-existing-cluster"))
		return cond("RequirementsMet", "True", "AgentInstallationStopped", "The agent installation stopped",
			    NULL);
	return cond("RequirementsMet", "Unknown", "UnknownStatus",
		    "The installation status is currently not recognized: %s", st);
}

/* Messages of entries that are neither success nor disabled, joined by ","
 * in category then id order (the stored lists are already sorted by id). */
static char *failing_list(const json_t *vi)
{
	strbuf sb = STRBUF_INIT;
	const char *cat;
	json_t *list, *v;
	size_t i;
	bool first = true;
	char *out;

	json_object_foreach((json_t *)vi, cat, list) {
		json_array_foreach(list, i, v) {
			const char *s = json_string_value(json_object_get(v, "status"));
			const char *m = json_string_value(json_object_get(v, "message"));

			if (!s || !strcmp(s, "success") || !strcmp(s, "disabled") ||
			    !strcmp(s, "success-suppress-output"))
				continue;
			if (!first)
				strbuf_addch(&sb, ',');
			strbuf_adds(&sb, m ? m : "");
			first = false;
		}
	}
	out = strbuf_detach(&sb, NULL);
	return out;
}

static json_t *validated(const char *st, const json_t *vi_in)
{
	json_t *c = binding_cond("Validated", st), *vi = NULL;
	char *list;

	if (c)
		return c;
	if (json_is_string(vi_in))
		vi = json_loads(json_string_value(vi_in), 0, NULL);
	else if (json_is_object(vi_in))
		vi = json_incref((json_t *)vi_in);
	if (!json_is_object(vi) || json_object_size(vi) == 0) {
		json_decref(vi);
		return cond("Validated", "Unknown", "ValidationsUnknown",
			    "The agent's validations have not yet been calculated", NULL);
	}
	if (!strcmp(st, "insufficient") || !strcmp(st, "insufficient-unbound")) {
		list = failing_list(vi);
		c = cond("Validated", "False", "ValidationsFailing", "The agent's validations are failing: %s", list);
	} else if (!strcmp(st, "pending-for-input")) {
		list = failing_list(vi);
		c = cond("Validated", "False", "ValidationsUserPending",
			 "The agent's validations are pending for user: %s", list);
	} else {
		list = NULL;
		c = cond("Validated", "True", "ValidationsPassing", "The agent's validations are passing", NULL);
	}
	free(list);
	json_decref(vi);
	return c;
}

static json_t *installed(const char *st, const char *info)
{
	json_t *c = binding_cond("Installed", st);

	if (c)
		return c;
	if (!strcmp(st, "installed") || !strcmp(st, "added-to-existing-cluster"))
		return cond("Installed", "True", "InstallationCompleted", "The installation has completed: %s", info);
	if (!strcmp(st, "error"))
		return cond("Installed", "False", "InstallationFailed", "The installation has failed: %s", info);
	if (in(st, pre_unb))
		return cond("Installed", "False", "InstallationNotStarted", "The installation has not yet started",
			    NULL);
	if (in(st, inst5))
		return cond("Installed", "False", "InstallationInProgress", "The installation is in progress: %s",
			    info);
	return cond("Installed", "Unknown", "UnknownStatus",
		    "The installation status is currently not recognized: %s", st);
}

static json_t *bound(const char *st)
{
	static const char *const unb[] = { "discovering-unbound", "known-unbound", "disconnected-unbound",
					   "insufficient-unbound", "disabled-unbound", NULL };

	if (!strcmp(st, "binding"))
		return cond("Bound", "False", "Binding", msg_binding, NULL);
	if (!strcmp(st, "unbinding"))
		return cond("Bound", "False", "Unbinding", msg_unbinding, NULL);
	if (!strcmp(st, "unbinding-pending-user-action"))
		return cond("Bound", "False", "UnbindingPendingUserAction",
			    "The agent is currently unbinding; Pending host reboot from infraenv image", NULL);
	if (in(st, unb))
		return cond("Bound", "False", "Unbound", "The agent is not bound to any cluster deployment", NULL);
	return cond("Bound", "True", "Bound", "The agent is bound to a cluster deployment", NULL);
}

json_t *agent_conditions(const char *status, const char *status_info, const json_t *validations_info,
			 bool approved, const ah_err *spec_err)
{
	static const char *const types[] = { "Connected", "RequirementsMet", "Validated", "Installed", "Bound" };
	json_t *a = json_array();

	if (!spec_err)
		json_array_append_new(a, cond("SpecSynced", "True", "SyncOK", "The Spec has been successfully applied",
					      NULL));
	else if (spec_err->status >= 400 && spec_err->status < 500)
		json_array_append_new(a, cond("SpecSynced", "False", "InputError",
					      "The Spec could not be synced due to an input error: %s", spec_err->message));
	else
		json_array_append_new(a, cond("SpecSynced", "False", "BackendError",
					      "The Spec could not be synced due to backend error: %s", spec_err->message));
	if (!status) {
		for (size_t i = 0; i < 5; i++)
			json_array_append_new(a, cond(types[i], "Unknown", "NotAvailable", "Information not available",
						      NULL));
		return a;
	}
	if (!strcmp(status, "disconnected") || !strcmp(status, "disconnected-unbound"))
		json_array_append_new(a, cond("Connected", "False", "AgentIsDisconnected",
					      "The agent has not contacted the installation service in some time, user action should be taken",
					      NULL));
	else
		json_array_append_new(a, cond("Connected", "True", "AgentIsConnected",
					      "The agent's connection to the installation service is unimpaired", NULL));
	json_array_append_new(a, requirements_met(status, approved));
	json_array_append_new(a, validated(status, validations_info));
	json_array_append_new(a, installed(status, status_info ? status_info : ""));
	json_array_append_new(a, bound(status));
	return a;
}

void conditions_merge_times(json_t *new_conds, const json_t *old_conds, const char *now)
{
	size_t i, j;
	json_t *c, *o;

	json_array_foreach(new_conds, i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *st = json_string_value(json_object_get(c, "status"));
		json_t *keep = NULL;

		json_array_foreach(old_conds, j, o) {
			const char *ot = json_string_value(json_object_get(o, "type"));
			const char *os = json_string_value(json_object_get(o, "status"));

			if (type && ot && !strcmp(type, ot) && st && os && !strcmp(st, os))
				keep = json_object_get(o, "lastTransitionTime");
		}
		if (json_is_string(keep))
			json_object_set(c, "lastTransitionTime", keep);
		else
			json_object_set_new(c, "lastTransitionTime", json_string(now));
		json_object_set_new(c, "lastHeartbeatTime", json_null());
	}
}

/* ---- the Agent spec sync ---- */

static const char *const spec_states[] = { "discovering", "known", "disconnected", "insufficient",
					   "pending-for-input", "discovering-unbound", "known-unbound",
					   "disconnected-unbound", "insufficient-unbound", "binding", NULL };

bool agent_spec_applicable(const char *status)
{
	return status && in(status, spec_states);
}

static const char *sval(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

#define HOSTNAME_PATTERN "^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$"

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* HOSTNAME_PATTERN by hand: a first label of 1-63 [a-z0-9-] starting with
 * [a-z0-9], then labels of 1-63 [a-z0-9-], each after one dot. */
static bool hostname_matches(const char *h)
{
	size_t lab = 0;

	if (!lower_alnum(h[0]))
		return false;
	for (const char *p = h; *p; p++) {
		if (*p == '.') {
			if (lab == 0)
				return false;
			lab = 0;
			continue;
		}
		if (!lower_alnum(*p) && *p != '-')
			return false;
		if (++lab > 63)
			return false;
	}
	return lab > 0;
}

int agent_validate_hostname(const char *hostname, ah_err *err)
{
	static const char *const forbidden[] = { "localhost", "localhost.localdomain", "localhost4",
						 "localhost4.localdomain4", "localhost6", "localhost6.localdomain6",
						 NULL };

	/* Upstream's length cap here is the DNS name's 253, not the 63 of
	 * the hostname-valid validation. */
	if (strlen(hostname) > 253)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "hostname is too long");
	if (!hostname_matches(hostname))
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "Hostname does not pass required regex validation: %s. Hostname: %s",
				  HOSTNAME_PATTERN, hostname);
	if (in(hostname, forbidden))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "The host name %s is forbidden", hostname);
	return 0;
}

/* The characters of upstream's installer-argument value pattern
 * ^[A-Za-z0-9@!#$%*()_+-=//.,";':{}\[\]]+$ where "+-=" is the range
 * '+'..'=' (which takes in ',', '-', '.', '/', the digits, ':', ';', '<'). */
static bool installer_value_char(unsigned char c)
{
	if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '+' && c <= '='))
		return true;
	return c && strchr("@!#$%*()_\"'{}[]", c) != NULL;
}

int agent_validate_installer_args(const json_t *args, ah_err *err)
{
	static const char *const allowed[] = { "--append-karg", "--delete-karg", "-n", "--copy-network",
					       "--network-dir", "--save-partlabel", "--save-partindex",
					       "--image-url", "--image-file", NULL };
	json_t *v;
	size_t i;

	json_array_foreach(args, i, v) {
		const char *a = json_string_value(v) ? json_string_value(v) : "";

		if (a[0] == '-') {
			if (!in(a, allowed))
				return ah_err_set(err, EINVAL, 400, "BadRequest",
						  "found unexpected flag %s for installer - allowed flags are [--append-karg --delete-karg -n --copy-network --network-dir --save-partlabel --save-partindex --image-url --image-file]",
						  a);
			continue;
		}
		bool ok = *a != '\0';

		for (const char *p = a; *p && ok; p++)
			ok = installer_value_char((unsigned char)*p);
		if (!ok)
			return ah_err_set(err, EINVAL, 400, "BadRequest", "found unexpected chars in value %s for installer",
					  a);
	}
	return 0;
}

/* Go's name for a JSON value's type in its unmarshal errors. */
static const char *go_json_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER:
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "null";
	}
}

/* spec.installerArgs → the compact array text in *ret (NULL for none).
 * Decoded as Go decodes into []string: null is an empty list, a null
 * element an empty string. */
static int installer_args_of(const char *text, const struct agent_spec_ctx *ctx, char **ret, ah_err *err)
{
	json_error_t jerr;
	json_t *v, *out, *e;
	size_t i;
	int r;

	*ret = NULL;
	if (!*text)
		return 0;
	v = json_loads(text, JSON_DECODE_ANY, &jerr);
	if (!v)
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "Fail to unmarshal installer args for host %s in infraEnv %s: %s", ctx->host_id,
				  ctx->infra_env_id, jerr.text);
	if (!json_is_array(v) && !json_is_null(v)) {
		r = ah_err_set(err, EINVAL, 400, "BadRequest",
			       "Fail to unmarshal installer args for host %s in infraEnv %s: json: cannot unmarshal %s into Go value of type []string",
			       ctx->host_id, ctx->infra_env_id, go_json_type(v));
		json_decref(v);
		return r;
	}
	out = json_array();
	json_array_foreach(v, i, e) {
		if (!json_is_string(e) && !json_is_null(e)) {
			r = ah_err_set(err, EINVAL, 400, "BadRequest",
				       "Fail to unmarshal installer args for host %s in infraEnv %s: json: cannot unmarshal %s into Go value of type string",
				       ctx->host_id, ctx->infra_env_id, go_json_type(e));
			json_decref(out);
			json_decref(v);
			return r;
		}
		json_array_append_new(out, json_string(json_is_string(e) ? json_string_value(e) : ""));
	}
	json_decref(v);
	r = agent_validate_installer_args(out, err);
	if (r == 0) {
		*ret = json_dumps(out, JSON_COMPACT);
		if (!*ret)
			r = -ENOMEM;
	}
	json_decref(out);
	return r;
}

static bool disk_is_eligible(const json_t *disk)
{
	const json_t *el = json_object_get(disk, "installation_eligibility");

	/* Legacy agents that sent no eligibility count as eligible. */
	return !json_is_object(el) || json_is_true(json_object_get(el, "eligible"));
}

/* Whether want names disk: its id or /dev/<name> (upstream's lookup); with
 * by_path too when asking whether want is the current disk. */
static bool disk_named(const json_t *disk, const char *want, bool with_by_path)
{
	char id[512], dev[300];

	disk_identifier(disk, id, sizeof(id));
	snprintf(dev, sizeof(dev), "/dev/%s", sval(disk, "name"));
	return !strcmp(want, id) || !strcmp(want, dev) ||
	       (with_by_path && *sval(disk, "by_path") && !strcmp(want, sval(disk, "by_path")));
}

static json_t *inventory_object(const json_t *host)
{
	const json_t *inv = json_object_get(host, "inventory");

	if (json_is_string(inv))
		return json_loads(json_string_value(inv), 0, NULL);
	return json_is_object(inv) ? json_incref((json_t *)inv) : NULL;
}

/* The disk spec.installation_disk_id asks for.  0 with *ret_disk NULL when
 * nothing is to change (no inventory yet, or want names the current disk). */
static int disk_of(const json_t *host, const char *want, json_t **ret_inv, const json_t **ret_disk, ah_err *err)
{
	const char *cur = sval(host, "installation_disk_id");
	json_t *inv = strcmp(cur, want) ? inventory_object(host) : NULL, *d;
	const json_t *pick = NULL;
	size_t i;

	*ret_inv = NULL;
	*ret_disk = NULL;
	if (!inv || !strcmp(cur, want)) {
		json_decref(inv);
		return 0;
	}
	json_array_foreach(json_object_get(inv, "disks"), i, d) {
		if (*cur && disk_named(d, cur, false) && disk_named(d, want, true)) {
			json_decref(inv);
			return 0;
		}
		if (!pick && disk_is_eligible(d) && disk_named(d, want, false))
			pick = d;
	}
	if (!pick) {
		json_decref(inv);
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "Requested installation disk is not part of the host's valid disks");
	}
	*ret_inv = inv;
	*ret_disk = pick;
	return 0;
}

static int ignition_check(const char *text, const struct agent_spec_ctx *ctx, ah_err *err)
{
	json_error_t jerr;
	json_t *v;

	if (ctx->validate_ignition)
		return ctx->validate_ignition(text, err);
	v = json_loads(text, 0, &jerr);
	json_decref(v);
	if (!v)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "error parsing ignition: config is not valid");
	return 0;
}

static bool set_if_differs(json_t *host, const char *key, const char *value)
{
	if (!value) {
		if (!json_object_get(host, key))
			return false;
		json_object_del(host, key);
		return true;
	}
	if (!strcmp(sval(host, key), value) && json_object_get(host, key))
		return false;
	json_object_set_new(host, key, json_string(value));
	return true;
}

/* The token spec.ignitionEndpointTokenReference names, in *ret (NULL when
 * there is no reference or no reader).  The messages are upstream's
 * (getIgnitionToken, getSecret), wrapped as pkg/errors wraps them. */
static int ignition_token_of(const json_t *spec, const struct agent_spec_ctx *ctx, char **ret, ah_err *err)
{
	const json_t *ref = json_object_get(spec, "ignitionEndpointTokenReference");
	const char *ns = sval(ref, "namespace"), *name = sval(ref, "name");
	ah_err rerr = { 0 };
	int r;

	*ret = NULL;
	if (!json_is_object(ref) || !ctx->get_ignition_token)
		return 0;
	r = ctx->get_ignition_token(ctx->opaque, ns, name, ret, &rerr);
	if (r == 0 && !*ret)
		r = -ENOMEM;
	if (r == 0)
		return 0;
	free(*ret);
	*ret = NULL;
	if (r == -ENOENT)
		return ah_err_set(err, ENOENT, 500, "InternalError",
				  "Failed to get user-data secret: failed to get secret %s/%s from API: secrets \"%s\" not found",
				  ns, name, name);
	if (r == -ENODATA)
		return ah_err_set(err, ENODATA, 500, "InternalError", "secret %s did not contain key value", name);
	return ah_err_set(err, -r, 500, "InternalError",
			  "Failed to get user-data secret: failed to get secret %s/%s from cache: %s", ns, name,
			  rerr.message[0] ? rerr.message : strerror(-r));
}

int agent_spec_apply(json_t *host, const json_t *spec, const struct agent_spec_ctx *ctx, bool *ret_changed,
		     ah_err *err)
{
	static const char *const roles[] = { "auto-assign", "master", "worker", "arbiter", NULL };
	const char *ign = sval(spec, "ignitionConfigOverrides"), *role = sval(spec, "role");
	const char *hostname = sval(spec, "hostname"), *disk_id = sval(spec, "installation_disk_id");
	const char *cur_role = *sval(host, "role") ? sval(host, "role") : "auto-assign";
	const json_t *disk = NULL;
	json_t *inv = NULL;
	char *args = NULL, *token = NULL, dev[300], id[512];
	bool changed = false, applicable = agent_spec_applicable(json_string_value(json_object_get(host, "status")));
	int r;

	if (ret_changed)
		*ret_changed = false;
	/* Upstream reads the token Secret in every state: its failure shows
	 * even where the host update would be dropped. */
	if (!applicable) {
		r = ignition_token_of(spec, ctx, &token, err);
		free(token);
		return r;
	}
	/* Check everything first, so that a bad value changes nothing. */
	if ((r = installer_args_of(sval(spec, "installerArgs"), ctx, &args, err)) < 0)
		return r;
	/* What was applied before passed already. */
	if (*ign && strcmp(ign, sval(host, "ignition_config_overrides")) && (r = ignition_check(ign, ctx, err)) < 0)
		goto out;
	if ((r = ignition_token_of(spec, ctx, &token, err)) < 0)
		goto out;
	if (*role && strcmp(role, cur_role) && !in(role, roles)) {
		r = ah_err_set(err, EINVAL, 400, "BadRequest", "Requested role (%s) is invalid for host %s from infraEnv %s",
			       role, ctx->host_id, ctx->infra_env_id);
		goto out;
	}
	if (*hostname && strcmp(hostname, sval(host, "requested_hostname")) &&
	    (r = agent_validate_hostname(hostname, err)) < 0)
		goto out;
	if (*disk_id && (r = disk_of(host, disk_id, &inv, &disk, err)) < 0)
		goto out;

	changed |= set_if_differs(host, "installer_args", args);
	changed |= set_if_differs(host, "ignition_config_overrides", *ign ? ign : NULL);
	/* A new role voids the suggestion made for the old one. */
	if (*role && set_if_differs(host, "role", role)) {
		json_object_del(host, "suggested_role");
		changed = true;
	}
	if (*hostname)
		changed |= set_if_differs(host, "requested_hostname", hostname);
	if (disk) {
		disk_identifier(disk, id, sizeof(id));
		snprintf(dev, sizeof(dev), "/dev/%s", sval(disk, "name"));
		changed |= set_if_differs(host, "installation_disk_id", id);
		changed |= set_if_differs(host, "installation_disk_path", dev);
	}
	/* No reference: an applied token is removed (without a reader the
	 * token is not ours to manage). */
	if (ctx->get_ignition_token)
		changed |= set_if_differs(host, "ignition_endpoint_token", token);
	if (ret_changed)
		*ret_changed = changed;
	r = 0;
out:
	json_decref(inv);
	free(args);
	free(token);
	return r;
}
