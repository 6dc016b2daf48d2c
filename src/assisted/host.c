/* host.c - RegisterHost and RefreshHost for the pre-installation states.
 * The rule tables follow internal/host/statemachine.go and
 * pool_host_statemachine.go: rules are tried in insertion order and the
 * first one whose source state and condition match wins. */
#include "assisted/host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/inventory.h"
#include "assisted/validations.h"
#include "base/strbuf.h"

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool in(const char *s, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(s, *set))
			return true;
	return false;
}

static const char *const PRE[] = { "discovering", "known", "disconnected", "insufficient", "pending-for-input",
				   NULL };
static const char *const UNB4[] = { "discovering-unbound", "insufficient-unbound", "known-unbound",
				    "disconnected-unbound", NULL };

static const char *stage(const json_t *host)
{
	return sget(json_object_get(host, "progress"), "current_stage");
}

static bool day2(const json_t *host)
{
	return !strcmp(sget(host, "kind"), "AddToExistingClusterHost");
}

const char *host_register_state(const json_t *host, bool bound)
{
	static const char *const to_disc[] = { "discovering", "known", "disconnected", "insufficient",
					       "pending-for-input", "resetting-pending-user-action", "binding", NULL };
	static const char *const to_disc_u[] = { "discovering-unbound", "disconnected-unbound",
						 "insufficient-unbound", "known-unbound", "unbinding",
						 "unbinding-pending-user-action", "reclaiming-rebooting", NULL };
	const char *st;

	if (!host)
		return bound ? "discovering" : "discovering-unbound";
	st = sget(host, "status");
	if (!strcmp(st, "preparing-for-installation") || !strcmp(st, "preparing-successful"))
		return "known";
	if (in(st, to_disc))
		return "discovering";
	if (!strcmp(st, "resetting"))
		return !strcmp(stage(host), "Rebooting") ? "resetting" : "discovering";
	if (!strcmp(st, "installing-in-progress") || !strcmp(st, "installing-pending-user-action") ||
	    !strcmp(st, "added-to-existing-cluster")) {
		if (!strcmp(stage(host), "Rebooting") || (day2(host) && !strcmp(stage(host), "Done")))
			return !strcmp(st, "installing-pending-user-action") ? NULL : "installing-pending-user-action";
	}
	if (!strcmp(st, "installing") || !strcmp(st, "installing-in-progress"))
		return "error";
	if (!strcmp(st, "error"))
		return "error";
	if (in(st, to_disc_u))
		return "discovering-unbound";
	return NULL;
}

int host_register_refusal(const json_t *host)
{
	const char *st;

	if (host_register_state(host, true))
		return 0;
	st = sget(host, "status");
	if (!strcmp(st, "installed"))
		return 409;
	if (!strcmp(st, "installing-pending-user-action") &&
	    (!strcmp(stage(host), "Rebooting") || (day2(host) && !strcmp(stage(host), "Done"))))
		return 403;
	return 400;
}

int host_register(json_t *host, bool is_new, bool bound, int64_t now, ah_err *err)
{
	const char *to = host_register_state(is_new ? NULL : host, bound);
	char from[48];
	int code;

	if (!to) {
		code = host_register_refusal(host);
		return ah_err_set(err, code == 409 ? EBUSY : code == 403 ? EPERM : EINVAL, code,
				  code == 409 ? "Conflict" : code == 403 ? "Forbidden" : "BadRequest",
				  "Host %s cannot register in status %s", sget(host, "id"), sget(host, "status"));
	}
	snprintf(from, sizeof(from), "%s", sget(host, "status"));
	json_object_set_new(host, "registered_at", json_integer(now));
	if (is_new) {
		json_object_set_new(host, "checked_in_at", json_integer(now));
		json_object_set_new(host, "role", json_string("auto-assign"));
		json_object_set_new(host, "suggested_role", json_string("auto-assign"));
	}
	if (!strcmp(to, from) && (!strcmp(to, "error") || !strcmp(to, "resetting")))
		return 0; /* no-op re-registration */
	if (!strcmp(to, "known")) {
		/* #2 keeps inventory and bootstrap. */
		json_object_del(host, "progress");
		json_object_del(host, "images_status");
		json_object_del(host, "ntp_sources");
		json_object_del(host, "logs_info");
	} else if (!strcmp(to, "discovering") || !strcmp(to, "discovering-unbound")) {
		static const char *const clear[] = { "progress", "inventory", "images_status", "ntp_sources",
						     "logs_info", "logs_started_at", "logs_collected_at",
						     "installation_disk_id", "installation_disk_path", NULL };

		for (const char *const *k = clear; *k; k++)
			json_object_del(host, *k);
		json_object_set_new(host, "bootstrap", json_false());
	}
	json_object_set_new(host, "status", json_string(to));
	if (!strcmp(to, "discovering") || !strcmp(to, "discovering-unbound"))
		json_object_set_new(host, "status_info", json_string(HOST_INFO_DISCOVERING));
	return 0;
}

/* Expand $FAILING_VALIDATIONS with the failure messages, sorted, " ; ". */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void expand(char *out, size_t size, const char *tmpl, const json_t *results)
{
	const char *mark = strstr(tmpl, "$FAILING_VALIDATIONS");
	const char *msgs[128];
	size_t n = 0;
	const char *id;
	json_t *r;
	strbuf sb = STRBUF_INIT;

	if (!mark) {
		snprintf(out, size, "%s", tmpl);
		return;
	}
	json_object_foreach((json_t *)results, id, r)
		if (!strcmp(sget(r, "status"), "failure") && n < 128)
			msgs[n++] = sget(r, "message");
	qsort(msgs, n, sizeof(msgs[0]), str_cmp);
	strbuf_add(&sb, tmpl, (size_t)(mark - tmpl));
	for (size_t i = 0; i < n; i++)
		strbuf_addf(&sb, "%s%s", i ? " ; " : "", msgs[i]);
	strbuf_adds(&sb, mark + strlen("$FAILING_VALIDATIONS"));
	snprintf(out, size, "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
}

static bool fully_truncated(const json_t *host)
{
	json_t *inv = inventory_of_host(host);
	bool r = inv && !strcmp(sget(json_object_get(inv, "truncation"), "type"), "full");

	json_decref(inv);
	return r;
}

void host_refresh_result_release(struct host_refresh_result *r)
{
	json_decref(r->validations_info);
	json_decref(r->validations);
	r->validations_info = r->validations = NULL;
}

int host_refresh(const json_t *host, const struct host_refresh_ctx *ctx, struct host_refresh_result *ret)
{
	static const char *const suff_ids[] = {
		"has-memory-for-role", "has-cpu-cores-for-role", "belongs-to-machine-cidr", "hostname-unique",
		"hostname-valid", "ignition-downloadable", "belongs-to-majority-group",
		"sufficient-network-latency-requirement-for-role", "sufficient-packet-loss-requirement-for-role",
		"has-default-route", "api-domain-name-resolved-correctly", "api-int-domain-name-resolved-correctly",
		"apps-domain-name-resolved-correctly", "dns-wildcard-not-configured",
		"valid-platform-network-settings", "sufficient-installation-disk-speed", "non-overlapping-subnets",
		"compatible-agent", "time-synced-between-host-and-service", "no-skip-installation-disk",
		"no-skip-missing-disk", NULL };
	static const char *const scope[] = { "discovering", "known", "disconnected", "insufficient",
					     "pending-for-input", "binding", "unbinding", "discovering-unbound",
					     "known-unbound", "insufficient-unbound", "disconnected-unbound", "error",
					     "cancelled", "resetting", NULL };
	struct validation_ctx vc = { ctx->now, ctx->disconnect_timeout_s, ctx->cluster, ctx->cluster_hosts,
				     ctx->service_agent_image };
	const json_t *cl = ctx->cluster;
	const char *st = sget(host, "status"), *to = NULL, *tmpl = NULL;
	json_t *res, *old_vi;
	bool connected, media, C, hasInv, vInv, minHW, input, suff = true, vs, cPrep, roleOk;
	const char *role = sget(host, "role");

	if (!*st)
		return -EINVAL;
	if (!in(st, scope))
		return -EOPNOTSUPP;
	res = host_validations(host, &vc);
	if (!res)
		return -ENOMEM;
#define OK(id) validation_ok(res, id, cl)
	connected = OK("connected");
	media = OK("media-connected");
	C = connected && media;
	hasInv = OK("has-inventory");
	vInv = hasInv && !fully_truncated(host);
	minHW = OK("has-min-valid-disks") && OK("has-min-cpu-cores") && OK("has-min-memory") &&
		OK("compatible-with-cluster-platform") && OK("disk-encryption-requirements-satisfied");
	input = OK("machine-cidr-defined");
	for (const char *const *s = suff_ids; *s; s++)
		suff = suff && OK(*s);
	vs = OK("vsphere-disk-uuid-enabled");
	cPrep = !strcmp(sget(cl, "status"), "preparing-for-installation");
	roleOk = !strcmp(role, "master") || !strcmp(role, "arbiter") || !strcmp(role, "worker");

	if (!strcmp(st, "known") && roleOk && C && cPrep) /* #2 */
		to = "preparing-for-installation", tmpl = HOST_INFO_PREPARING;
	else if (!strcmp(st, "known") && C && !OK("sufficient-installation-disk-speed")) /* #7 */
		to = "insufficient", tmpl = "Host cannot be installed due to following failing validation(s): $FAILING_VALIDATIONS";
	else if (in(st, PRE) && !C) /* #13 */
		to = "disconnected", tmpl = connected ? HOST_INFO_MEDIA_DISCONNECTED : HOST_INFO_DISCONNECTED;
	else if ((!strcmp(st, "disconnected") || !strcmp(st, "discovering")) && C && !vInv) /* #26 */
		to = "discovering", tmpl = HOST_INFO_DISCOVERING;
	else if (in(st, PRE) && C && vInv && !minHW) /* #27 */
		to = "insufficient", tmpl = "Host does not meet the minimum hardware requirements: $FAILING_VALIDATIONS";
	else if (in(st, PRE) && C && vInv && vs && minHW && !input) /* #28 */
		to = "pending-for-input", tmpl = "Waiting for user input: $FAILING_VALIDATIONS";
	else if (in(st, PRE) && C && hasInv && (minHW || !vInv) && (!vs || (input && !suff))) /* #29 */
		to = "insufficient", tmpl = "Host cannot be installed due to following failing validation(s): $FAILING_VALIDATIONS";
	else if (in(st, PRE) && strcmp(st, "known") != 0 && C && vInv && minHW && input && suff && vs) /* #30 */
		to = "known", tmpl = HOST_INFO_KNOWN;
	else if (!strcmp(st, "known") && C && vInv && minHW && input && suff && vs && !(cPrep && roleOk)) /* #31 */
		to = "known", tmpl = HOST_INFO_KNOWN;
	else if (!strcmp(st, "error") || !strcmp(st, "cancelled") || !strcmp(st, "resetting")) /* #33 */
		to = st;
	else if ((in(st, UNB4) || !strcmp(st, "unbinding")) && !connected) /* P1 */
		to = "disconnected-unbound", tmpl = HOST_INFO_DISCONNECTED;
	else if ((!strcmp(st, "disconnected-unbound") || !strcmp(st, "discovering-unbound")) && C && !vInv) /* P2 */
		to = "discovering-unbound", tmpl = HOST_INFO_DISCOVERING;
	else if (in(st, UNB4) && C && vInv &&
		 !(OK("has-min-valid-disks") && OK("has-min-cpu-cores") && OK("has-min-memory") && OK("hostname-valid")))
		to = "insufficient-unbound", tmpl = "Host does not meet the minimum hardware requirements: $FAILING_VALIDATIONS"; /* P3 */
	else if (!strcmp(st, "binding") || !strcmp(st, "unbinding")) /* P4 */
		to = st;
	else if (in(st, UNB4) && C && vInv) /* P5: the four checks passed */
		to = "known-unbound", tmpl = HOST_INFO_READY_TO_BE_BOUND;
#undef OK

	memset(ret, 0, sizeof(*ret));
	ret->validations = res;
	ret->validations_info = validations_info_from(res);
	ret->rule_matched = to != NULL;
	snprintf(ret->status, sizeof(ret->status), "%s", to ? to : st);
	if (tmpl)
		expand(ret->status_info, sizeof(ret->status_info), tmpl, res);
	else
		snprintf(ret->status_info, sizeof(ret->status_info), "%s", sget(host, "status_info"));
	ret->status_changed = strcmp(ret->status, st) != 0;
	old_vi = json_object_get(host, "validations_info");
	if (json_is_string(old_vi)) {
		json_t *p = json_loads(json_string_value(old_vi), 0, NULL);

		ret->validations_changed = !json_equal(p, ret->validations_info);
		json_decref(p);
	} else {
		ret->validations_changed = !json_equal(old_vi, ret->validations_info);
	}
	ret->changed = ret->status_changed || ret->validations_changed ||
		       strcmp(ret->status_info, sget(host, "status_info")) != 0;
	return 0;
}
