/* conditions.c - Agent conditions from the backend host status, following
 * the agent controller's table (kubeapi spec §2.3). */
#include "assisted/conditions.h"

#include <stdlib.h>
#include <string.h>

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
			 bool approved, bool spec_synced, const char *spec_sync_error)
{
	static const char *const types[] = { "Connected", "RequirementsMet", "Validated", "Installed", "Bound" };
	json_t *a = json_array();

	if (spec_synced) {
		json_array_append_new(a, cond("SpecSynced", "True", "SyncOK", "The Spec has been successfully applied",
					      NULL));
	} else {
		const char *e = spec_sync_error ? spec_sync_error : "";

		if (!strncmp(e, "input:", 6)) {
			e += 6;
			while (*e == ' ')
				e++;
			json_array_append_new(a, cond("SpecSynced", "False", "InputError",
						      "The Spec could not be synced due to an input error: %s", e));
		} else {
			json_array_append_new(a, cond("SpecSynced", "False", "BackendError",
						      "The Spec could not be synced due to backend error: %s", e));
		}
	}
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
