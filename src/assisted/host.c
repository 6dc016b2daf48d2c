/* host.c - the host state machine: RegisterHost, RefreshHost (main and
 * pool rules), HostProgressChanged and the other explicit transitions.
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
#include "base/util.h"

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

bool host_status_unbound(const char *st)
{
	static const char *const u[] = { "discovering-unbound", "insufficient-unbound", "known-unbound",
					 "disconnected-unbound", "disabled-unbound", "unbinding",
					 "unbinding-pending-user-action", NULL };

	return st && in(st, u);
}

bool host_status_inst6(const char *st)
{
	static const char *const i6[] = { "preparing-for-installation", "preparing-successful", "installing",
					  "installing-in-progress", "installing-pending-user-action",
					  "preparing-failed", NULL };

	return st && in(st, i6);
}

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

static int64_t iget(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : json_is_real(v) ? util_double_to_i64(json_real_value(v)) : 0;
}

/* A field stored either as a JSON value or as its JSON text (upstream keeps
 * text columns); returns a new reference or NULL. */
static json_t *jfield(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	if (json_is_string(v))
		return *json_string_value(v) ? json_loads(json_string_value(v), JSON_DECODE_ANY, NULL) : NULL;
	return v ? json_incref(v) : NULL;
}

bool host_cluster_is_sno(const json_t *cluster)
{
	json_t *ha = json_object_get(cluster, "high_availability_mode");

	if (json_is_string(ha))
		return !strcmp(json_string_value(ha), "None");
	return iget(cluster, "control_plane_count") == 1;
}

const char *const *host_stages_of(const json_t *host, const json_t *cluster, bool kube_api, size_t *n)
{
	const char *role = json_is_true(json_object_get(host, "bootstrap")) ? "bootstrap" : host_effective_role(host);

	return host_install_stages(role, host_cluster_is_sno(cluster), day2(host) && !kube_api, n);
}

/* The installer args ask to keep partitions of the installation disk. */
static bool saves_partitions(const json_t *host)
{
	json_t *a = jfield(host, "installer_args"), *x;
	bool r = false;
	size_t i;

	json_array_foreach(a, i, x)
		if (json_is_string(x) && (!strcmp(json_string_value(x), "--save-partindex") ||
					  !strcmp(json_string_value(x), "--save-partlabel")))
			r = true;
	json_decref(a);
	return r;
}

static const char *boot_device(const json_t *host)
{
	return *sget(host, "installation_disk_id") ? sget(host, "installation_disk_id")
						     : sget(host, "installation_disk_path");
}

/* installation-disk-speed-check-successful (conditions.go). */
static bool disk_speed_ok(const json_t *host)
{
	json_t *di, *ds;
	bool r;

	if (saves_partitions(host))
		return true;
	di = jfield(host, "disks_info");
	ds = json_object_get(json_object_get(di, boot_device(host)), "disk_speed");
	r = json_is_true(json_object_get(ds, "tested")) && iget(ds, "exit_code") == 0;
	json_decref(di);
	return r;
}

/* successful-container-image-availability: some image status and none failed. */
static bool images_ok(const json_t *host)
{
	json_t *st = jfield(host, "images_status"), *im;
	size_t n = 0, i;
	const char *k;
	bool fail = false;

	if (json_is_object(st)) {
		json_object_foreach(st, k, im) {
			n++;
			fail = fail || !strcmp(sget(im, "result"), "failure");
		}
	} else if (json_is_array(st)) {
		json_array_foreach(st, i, im) {
			n++;
			fail = fail || !strcmp(sget(im, "result"), "failure");
		}
	}
	json_decref(st);
	return n > 0 && !fail;
}

/* Upstream checks the agent's connection during installation only before
 * the reboot: the stages of the bootstrap list that precede Rebooting. */
static bool pre_reboot_stage(const char *st)
{
	size_t n;
	const char *const *l = host_install_stages("bootstrap", false, false, &n);
	int r = host_stage_index(l, n, HOST_STAGE_REBOOTING);

	return *st && host_stage_index(l, (size_t)r, st) >= 0;
}

static void disk_text(const json_t *host, char *buf, size_t size)
{
	json_t *inv = inventory_of_host(host), *d;
	const char *want = boot_device(host);
	size_t i;

	buf[0] = '\0';
	json_array_foreach(json_object_get(inv, "disks"), i, d) {
		char id[512], dev[300];

		disk_identifier(d, id, sizeof(id));
		snprintf(dev, sizeof(dev), "/dev/%s", sget(d, "name"));
		if (*want && (!strcmp(want, id) || !strcmp(want, sget(d, "by_id")) || !strcmp(want, sget(d, "by_path")) ||
			      !strcmp(want, dev) || !strcmp(want, sget(d, "path")))) {
			snprintf(buf, size, "(%s, %s)", sget(d, "name"), id);
			break;
		}
	}
	json_decref(inv);
}

/* Replace the first key in sb (a NUL-terminated strbuf) by val. */
static void subst(strbuf *sb, const char *key, const char *val)
{
	const char *at = sb->buf ? strstr(sb->buf, key) : NULL;
	strbuf out = STRBUF_INIT;

	if (!at)
		return;
	strbuf_add(&out, sb->buf, (size_t)(at - sb->buf));
	strbuf_adds(&out, val);
	strbuf_adds(&out, at + strlen(key));
	strbuf_release(sb);
	*sb = out;
}

static bool log_timed_out(const json_t *host, int64_t now, const struct host_timeouts *t)
{
	const char *li = sget(host, "logs_info");
	int64_t started = iget(host, "logs_started_at"), collected = iget(host, "logs_collected_at");

	if (!*li && started == 0)
		return now - iget(host, "status_updated_at") > t->log_pending_s;
	if (!strcmp(li, "requested") && collected == 0)
		return now - started > t->log_collection_s;
	if (!strcmp(li, "requested"))
		return now - collected > t->log_collection_s;
	if (!strcmp(li, "collecting"))
		return now - collected > t->log_pending_s;
	return false;
}

/* Rule #24's "the cluster still has enough installed hosts without it":
 * the masters and workers installed, other than host, cover what the
 * cluster expects (control_plane_count masters, and 2 workers when the
 * cluster has at least 2). */
static bool enough_without(const json_t *host, const json_t *cluster, const json_t *hosts)
{
	int64_t want_m = iget(cluster, "control_plane_count");
	int m = 0, w = 0, all_w = 0;
	json_t *h;
	size_t i;

	if (want_m <= 0)
		want_m = host_cluster_is_sno(cluster) ? 1 : 3;
	json_array_foreach(hosts, i, h) {
		const char *r = host_effective_role(h);
		bool mine = !strcmp(sget(h, "id"), sget(host, "id"));

		if (!strcmp(r, "worker"))
			all_w++;
		if (mine || strcmp(sget(h, "status"), "installed") != 0)
			continue;
		if (!strcmp(r, "master") || !strcmp(r, "arbiter") || json_is_true(json_object_get(h, "bootstrap")))
			m++;
		else if (!strcmp(r, "worker"))
			w++;
	}
	return m >= want_m && (all_w < 2 || w >= 2);
}

void host_refresh_result_release(struct host_refresh_result *r)
{
	json_decref(r->validations_info);
	json_decref(r->validations);
	json_decref(r->updates);
	r->validations_info = r->validations = r->updates = NULL;
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
	static const char *const unsupported[] = { "disabled", "disabled-unbound", NULL };
	static const char *const inst2[] = { "installing", "installing-in-progress", NULL };
	static const char *const inst5[] = { "installing", "installing-in-progress", "installed",
					     "resetting-pending-user-action", "installing-pending-user-action", NULL };
	static const char *const wrong_boot[] = { HOST_STAGE_WAITING_FOR_CONTROL_PLANE, HOST_STAGE_WAITING_FOR_CONTROLLER,
						  HOST_STAGE_WAITING_FOR_BOOTKUBE, HOST_STAGE_REBOOTING, NULL };
	struct validation_ctx vc = { ctx->now, ctx->disconnect_timeout_s, ctx->cluster, ctx->cluster_hosts,
				     ctx->service_agent_image };
	struct host_timeouts t;
	const json_t *cl = ctx->cluster, *progress = json_object_get(host, "progress");
	const char *st = sget(host, "status"), *to = NULL, *tmpl = NULL, *rule = "";
	const char *cur = sget(progress, "current_stage"), *cst = sget(cl, "status");
	json_t *res, *old_vi, *upd;
	bool connected, media, C, hasInv, vInv, minHW, input, suff = true, vs, cPrep, roleOk;
	bool cInst, cErr, cPUA, soft, dsOK, imOK, speedOK, imgOK, dsQ, imQ, okOr, responsive, d2, stageTO, wb;
	const char *role = sget(host, "role");
	int64_t age, disc_to, stage_to;
	char fail_cond[256] = "";

	if (!*st)
		return -EINVAL;
	if (in(st, unsupported))
		return -EOPNOTSUPP;
	if (ctx->timeouts)
		t = *ctx->timeouts;
	else if (host_timeouts_configured())
		t = *host_timeouts_configured();
	else
		host_timeouts_init(&t);
	{
		struct host_timeouts def;

		host_timeouts_init(&def);
		/* zero fields mean "default" */
		if (t.prepare_s <= 0)
			t.prepare_s = def.prepare_s;
		if (t.installing_s <= 0)
			t.installing_s = def.installing_s;
		if (t.pending_user_action_s <= 0)
			t.pending_user_action_s = def.pending_user_action_s;
		if (t.log_collection_s <= 0)
			t.log_collection_s = def.log_collection_s;
		if (t.log_pending_s <= 0)
			t.log_pending_s = def.log_pending_s;
		if (t.reclaim_s <= 0)
			t.reclaim_s = def.reclaim_s;
	}
	res = host_validations(host, &vc);
	upd = json_object();
	if (!res || !upd) {
		json_decref(res);
		json_decref(upd);
		return -ENOMEM;
	}
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
	cPrep = !strcmp(cst, "preparing-for-installation");
	cInst = !strcmp(cst, "installing");
	cErr = !strcmp(cst, "error");
	cPUA = !strcmp(cst, "installing-pending-user-action");
	roleOk = !strcmp(role, "master") || !strcmp(role, "arbiter") || !strcmp(role, "worker");
	soft = t.soft && json_is_true(json_object_get(cl, "org_soft_timeouts_enabled"));
	d2 = day2(host);
	age = iget(host, "status_updated_at") > 0 ? ctx->now - iget(host, "status_updated_at") : 0;
	dsOK = disk_speed_ok(host);
	imOK = images_ok(host);
	speedOK = OK("sufficient-installation-disk-speed");
	imgOK = OK("container-images-available");
	dsQ = !dsOK && speedOK;
	imQ = !imOK && imgOK;
	okOr = speedOK && imgOK;
	disc_to = ctx->disconnect_timeout_s > 0 ? ctx->disconnect_timeout_s : 180;
	/* The installing-phase responsiveness: only checked before the reboot
	 * (HostNotResponsiveWhileInstallation upstream). */
	responsive = !pre_reboot_stage(cur) || iget(host, "checked_in_at") == 0 ||
		     ctx->now - iget(host, "checked_in_at") <= disc_to;
	stage_to = host_stage_timeout_s(&t, cur, host_cluster_is_sno(cl));
	stageTO = *cur && iget(progress, "stage_updated_at") > 0 &&
		  ctx->now - iget(progress, "stage_updated_at") > stage_to;
	wb = in(cur, wrong_boot) && cPUA;

	if ((!strcmp(st, "reclaiming") || !strcmp(st, "reclaiming-rebooting")) && age > t.reclaim_s) /* #1 */
		to = "unbinding-pending-user-action", tmpl = HOST_INFO_UNBINDING, rule = "#1";
	else if (!strcmp(st, "known") && roleOk && C && cPrep) /* #2 */
		to = "preparing-for-installation", tmpl = HOST_INFO_PREPARING, rule = "#2";
	else if (!strcmp(st, "preparing-for-installation") && C && dsOK && imOK && cPrep) /* #3 */
		to = "preparing-successful", tmpl = HOST_INFO_PREPARING_SUCCESSFUL, rule = "#3";
	else if (!strcmp(st, "preparing-successful") && C && cPrep) /* #4 */
		to = st, rule = "#4";
	else if (!strcmp(st, "preparing-successful") && C && cInst) /* #5 */
		to = "installing", tmpl = HOST_INFO_INSTALLING, rule = "#5";
	else if (!strcmp(st, "preparing-for-installation") && C && okOr && !cPrep) /* #6 */
		to = "known", tmpl = HOST_INFO_KNOWN, rule = "#6";
	else if ((!strcmp(st, "preparing-for-installation") || !strcmp(st, "preparing-failed") ||
		  !strcmp(st, "known")) && C && !speedOK) /* #7 */
		to = "insufficient", tmpl = "Host cannot be installed due to following failing validation(s): $FAILING_VALIDATIONS",
		rule = "#7";
	else if (!strcmp(st, "preparing-for-installation") && C && age > t.prepare_s && (dsQ || imQ) && okOr) { /* #8 */
		to = "preparing-failed", tmpl = HOST_INFO_PREPARATION_TIMEOUT, rule = "#8";
		snprintf(fail_cond, sizeof(fail_cond), "%s%s%s", dsQ ? HOST_INFO_PREPARATION_TIMEOUT_DISK_SPEED : "",
			 dsQ && imQ ? " " : "", imQ ? HOST_INFO_PREPARATION_TIMEOUT_IMAGES : "");
	} else if (!strcmp(st, "preparing-for-installation") && C && !imgOK) /* #9 */
		to = "preparing-failed", tmpl = HOST_INFO_PREPARATION_FAILURE, rule = "#9";
	else if (!strcmp(st, "preparing-for-installation") && C && (dsQ || imQ) && okOr && cPrep) /* #10 */
		to = st, rule = "#10";
	else if (!strcmp(st, "preparing-failed") && C && !cPrep) /* #11 */
		to = "known", tmpl = HOST_INFO_KNOWN, rule = "#11";
	else if (!strcmp(st, "preparing-successful") && C && !cPrep && !cInst) /* #12 */
		to = "known", tmpl = HOST_INFO_KNOWN, rule = "#12";
	else if ((in(st, PRE) || !strcmp(st, "preparing-failed")) && !C) /* #13 */
		to = "disconnected", tmpl = connected ? HOST_INFO_MEDIA_DISCONNECTED : HOST_INFO_DISCONNECTED, rule = "#13";
	else if (in(st, inst5) && cErr && !d2) /* #14 */
		to = "error", tmpl = HOST_INFO_ABORTING_DUE_CLUSTER_ERRORS, rule = "#14";
	else if (!strcmp(st, "installing") && age > t.installing_s) /* #15 */
		to = "error", tmpl = HOST_INFO_INSTALLATION_TIMED_OUT, rule = "#15";
	else if ((!strcmp(st, "preparing-for-installation") || !strcmp(st, "preparing-successful")) && !C) /* #16 */
		to = "disconnected", tmpl = connected ? HOST_INFO_MEDIA_DISCONNECTED : HOST_INFO_DISCONNECTED, rule = "#16";
	else if (in(st, inst2) && !responsive && !soft) /* #17 */
		to = "error", tmpl = HOST_INFO_CONNECTION_TIMED_OUT_INSTALLING, rule = "#17";
	else if (in(st, inst2) && !responsive && soft && !json_is_true(json_object_get(host, "connection_timed_out"))) {
		to = st, rule = "#18"; /* #18 */
		json_object_set_new(upd, "connection_timed_out", json_true());
	} else if (in(st, inst2) && responsive && soft && json_is_true(json_object_get(host, "connection_timed_out"))) {
		to = st, rule = "#19"; /* #19 */
		json_object_set_new(upd, "connection_timed_out", json_false());
	} else if (!strcmp(st, "installing-in-progress") && wb) { /* #20 */
		to = st, rule = "#20";
		/* The stage clock is held while the cluster waits for the user,
		 * touched at most once a minute. */
		if (ctx->now - iget(progress, "stage_updated_at") >= 60) {
			json_t *p = json_is_object(progress) ? json_deep_copy(progress) : json_object();

			json_object_set_new(p, "stage_updated_at", json_integer(ctx->now));
			json_object_set_new(upd, "progress", p);
		}
	} else if (!strcmp(st, "installing-in-progress") && !soft && strcmp(cur, HOST_STAGE_REBOOTING) != 0 && stageTO) {
		to = "error", rule = "#21"; /* #21 */
		tmpl = !strcmp(cur, HOST_STAGE_WRITING_IMAGE_TO_DISK) || !strcmp(cur, HOST_STAGE_COPYING_REGISTRY_DATA)
			       ? HOST_INFO_STAGE_NOT_PROGRESSING
			       : HOST_INFO_STAGE_TIMED_OUT;
	} else if (!strcmp(st, "installing-in-progress") && soft && !json_is_true(json_object_get(progress, "stage_timed_out")) &&
		   strcmp(cur, HOST_STAGE_REBOOTING) != 0 && stageTO) { /* #22 */
		json_t *p = json_deep_copy(progress);

		to = st, rule = "#22";
		json_object_set_new(p, "stage_timed_out", json_true());
		json_object_set_new(upd, "progress", p);
	} else if (!strcmp(st, "installing-in-progress") && stageTO && !strcmp(cur, HOST_STAGE_REBOOTING)) /* #23 */
		to = "installing-pending-user-action", tmpl = HOST_INFO_REBOOT_TIMEOUT, rule = "#23";
	else if (!strcmp(st, "installing-pending-user-action") && age > t.pending_user_action_s &&
		 enough_without(host, cl, ctx->cluster_hosts) && strcmp(cst, "installed") != 0 &&
		 strcmp(cst, "adding-hosts") != 0) /* #24 */
		to = "error", rule = "#24";
	else if (in(st, inst5) && !cErr) /* #25 */
		to = st, rule = "#25";
	else if ((!strcmp(st, "disconnected") || !strcmp(st, "discovering")) && C && !vInv) /* #26 */
		to = "discovering", tmpl = HOST_INFO_DISCOVERING, rule = "#26";
	else if (in(st, PRE) && C && vInv && !minHW) /* #27 */
		to = "insufficient", tmpl = "Host does not meet the minimum hardware requirements: $FAILING_VALIDATIONS",
		rule = "#27";
	else if (in(st, PRE) && C && vInv && vs && minHW && !input) /* #28 */
		to = "pending-for-input", tmpl = "Waiting for user input: $FAILING_VALIDATIONS", rule = "#28";
	else if (in(st, PRE) && C && hasInv && (minHW || !vInv) && (!vs || (input && !suff))) /* #29 */
		to = "insufficient", tmpl = "Host cannot be installed due to following failing validation(s): $FAILING_VALIDATIONS",
		rule = "#29";
	else if (in(st, PRE) && strcmp(st, "known") != 0 && C && vInv && minHW && input && suff && vs) /* #30 */
		to = "known", tmpl = HOST_INFO_KNOWN, rule = "#30";
	else if (!strcmp(st, "known") && C && vInv && minHW && input && suff && vs && !(cPrep && roleOk)) /* #31 */
		to = "known", tmpl = HOST_INFO_KNOWN, rule = "#31";
	else if ((!strcmp(st, "error") || !strcmp(st, "cancelled")) && strcmp(sget(host, "logs_info"), "timeout") != 0 &&
		 strcmp(sget(host, "logs_info"), "completed") != 0 && log_timed_out(host, ctx->now, &t)) { /* #32 */
		to = st, rule = "#32";
		json_object_set_new(upd, "logs_info", json_string("timeout"));
	} else if (!strcmp(st, "error") || !strcmp(st, "cancelled") || !strcmp(st, "resetting")) /* #33 */
		to = st, rule = "#33";
	else if (!strcmp(st, "added-to-existing-cluster") && d2) /* #34 */
		to = st, rule = "#34";
	else if (!strcmp(st, "reclaiming") || !strcmp(st, "reclaiming-rebooting")) /* #35: age within the timeout */
		to = st, rule = "#35";
	else if ((in(st, UNB4) || !strcmp(st, "unbinding")) && !connected) /* P1 */
		to = "disconnected-unbound", tmpl = HOST_INFO_DISCONNECTED, rule = "P1";
	else if ((!strcmp(st, "disconnected-unbound") || !strcmp(st, "discovering-unbound")) && C && !vInv) /* P2 */
		to = "discovering-unbound", tmpl = HOST_INFO_DISCOVERING, rule = "P2";
	else if (in(st, UNB4) && C && vInv &&
		 !(OK("has-min-valid-disks") && OK("has-min-cpu-cores") && OK("has-min-memory") && OK("hostname-valid")))
		to = "insufficient-unbound", tmpl = "Host does not meet the minimum hardware requirements: $FAILING_VALIDATIONS",
		rule = "P3"; /* P3 */
	else if (!strcmp(st, "binding") || !strcmp(st, "unbinding")) /* P4 */
		to = st, rule = "P4";
	else if (in(st, UNB4) && C && vInv) /* P5: the four checks passed */
		to = "known-unbound", tmpl = HOST_INFO_READY_TO_BE_BOUND, rule = "P5";
#undef OK

	memset(ret, 0, sizeof(*ret));
	ret->validations = res;
	ret->validations_info = validations_info_from(res);
	ret->updates = upd;
	ret->rule_matched = to != NULL;
	snprintf(ret->rule, sizeof(ret->rule), "%s", rule);
	snprintf(ret->status, sizeof(ret->status), "%s", to ? to : st);
	if (tmpl) {
		strbuf sb = STRBUF_INIT;
		char maxt[32], disk[600];

		expand(ret->status_info, sizeof(ret->status_info), tmpl, res);
		strbuf_adds(&sb, ret->status_info);
		if (strstr(tmpl, "$STAGE"))
			subst(&sb, "$STAGE", cur);
		if (strstr(tmpl, "$MAX_TIME")) {
			/* The text quotes the configured stage timeout (not the SNO reboot one). */
			host_format_duration(host_stage_timeout_s(&t, cur, false), maxt, sizeof(maxt));
			subst(&sb, "$MAX_TIME", maxt);
		}
		if (strstr(tmpl, "$INSTALLATION_DISK")) {
			disk_text(host, disk, sizeof(disk));
			subst(&sb, "$INSTALLATION_DISK", disk);
		}
		if (strstr(tmpl, "$FAILING_CONDITIONS"))
			subst(&sb, "$FAILING_CONDITIONS", fail_cond);
		snprintf(ret->status_info, sizeof(ret->status_info), "%s", sb.buf ? sb.buf : "");
		strbuf_release(&sb);
	} else {
		snprintf(ret->status_info, sizeof(ret->status_info), "%s", sget(host, "status_info"));
	}
	/* PFI → PS drops stale image results when images were unavailable and
	 * resets the log fields (PostPreparingForInstallationHost). */
	if (!strcmp(rule, "#3")) {
		if (!validation_ok(res, "container-images-available", cl))
			json_object_set_new(upd, "images_status", json_object());
		json_object_set_new(upd, "logs_info", json_string(""));
		json_object_set_new(upd, "logs_started_at", json_integer(0));
		json_object_set_new(upd, "logs_collected_at", json_integer(0));
	}
	ret->status_changed = strcmp(ret->status, st) != 0;
	old_vi = json_object_get(host, "validations_info");
	if (json_is_string(old_vi)) {
		json_t *p = json_loads(json_string_value(old_vi), 0, NULL);

		ret->validations_changed = !json_equal(p, ret->validations_info);
		json_decref(p);
	} else {
		ret->validations_changed = !json_equal(old_vi, ret->validations_info);
	}
	{
		const char *k;
		json_t *v;
		bool upd_changed = false;

		json_object_foreach(upd, k, v)
			if (!json_equal(json_object_get(host, k), v))
				upd_changed = true;
		ret->changed = ret->status_changed || ret->validations_changed || upd_changed ||
			       strcmp(ret->status_info, sget(host, "status_info")) != 0;
	}
	return 0;
}

static void wipe_cluster_fields(json_t *host);

void host_refresh_apply(json_t *host, const struct host_refresh_result *r, int64_t now)
{
	const char *k;
	json_t *v;

	if (r->validations_info)
		json_object_set(host, "validations_info", r->validations_info);
	if (!r->rule_matched)
		return;
	if (r->status_changed) {
		json_object_set_new(host, "status_updated_at", json_integer(now));
		if (!strcmp(r->rule, "#1"))
			wipe_cluster_fields(host);
	}
	json_object_set_new(host, "status", json_string(r->status));
	json_object_set_new(host, "status_info", json_string(r->status_info));
	json_object_foreach(r->updates, k, v)
		json_object_set(host, k, v);
}

/* ---- installation phase: explicit transitions ---- */

static void set_status(json_t *host, const char *to, const char *info, int64_t now)
{
	if (strcmp(sget(host, "status"), to) != 0 && now > 0)
		json_object_set_new(host, "status_updated_at", json_integer(now));
	json_object_set_new(host, "status", json_string(to));
	if (info) {
		char b[HOST_STATUS_INFO_MAX + 1];

		snprintf(b, sizeof(b), "%s", info);
		json_object_set_new(host, "status_info", json_string(b));
	}
}

static int conflict(ah_err *err, const json_t *host, const char *what)
{
	return ah_err_set(err, EBUSY, 409, "Conflict", "Host %s: %s is not allowed in status %s", sget(host, "id"),
			  what, sget(host, "status"));
}

static json_t *stages_array(const json_t *host, const json_t *cluster)
{
	size_t n;
	const char *const *l = host_stages_of(host, cluster, true, &n);
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(l[i]));
	return a;
}

/* What unbinding (and the reclaim timeout) wipes: every cluster-derived
 * field (restFieldsOnUnbind upstream). */
static void wipe_cluster_fields(json_t *host)
{
	static const char *const del[] = { "cluster_id", "progress", "progress_stages", "logs_info", "logs_started_at",
					   "logs_collected_at", "inventory", "images_status", "connectivity",
					   "domain_resolutions", "free_addresses", "installation_disk_id",
					   "installation_disk_path", "machine_config_pool_name", "api_vip_connectivity",
					   "connection_timed_out", NULL };

	for (const char *const *k = del; *k; k++)
		json_object_del(host, *k);
	json_object_set_new(host, "bootstrap", json_false());
	json_object_set_new(host, "role", json_string("auto-assign"));
	json_object_set_new(host, "suggested_role", json_string("auto-assign"));
	json_object_set_new(host, "kind", json_string("Host"));
}

int host_install(json_t *host, const json_t *cluster, int64_t now, ah_err *err)
{
	const char *st = sget(host, "status");
	json_t *ap = json_object_get(host, "approved");
	char role[32];

	if (day2(host) ? !strcmp(st, "installing")
		       : (!strcmp(st, "preparing-for-installation") || !strcmp(st, "preparing-successful") ||
			  !strcmp(st, "installing") || !strcmp(st, "installing-in-progress")))
		return 0;
	if (strcmp(st, "known") != 0)
		return ah_err_set(err, EBUSY, 409, "Conflict", "Host %s is in %s state, expected known", sget(host, "id"),
				  st);
	if (ap && !json_is_true(ap))
		return ah_err_set(err, EPERM, 409, "Conflict", "Host %s is not approved", sget(host, "id"));
	snprintf(role, sizeof(role), "%s", host_effective_role(host));
	if (strcmp(role, "master") != 0 && strcmp(role, "arbiter") != 0 && strcmp(role, "worker") != 0)
		return ah_err_set(err, EBUSY, 409, "Conflict",
				  "Can't install host %s due to invalid host role: %s, should be one of [master arbiter worker]",
				  sget(host, "id"), role);
	if (!day2(host) && strcmp(sget(cluster, "status"), "preparing-for-installation") != 0)
		return ah_err_set(err, EBUSY, 409, "Conflict",
				  "Host %s cannot be installed while its cluster is in status %s, expected preparing-for-installation",
				  sget(host, "id"), *sget(cluster, "status") ? sget(cluster, "status") : "(none)");
	json_object_set_new(host, "role", json_string(role));
	if (!strcmp(role, "worker"))
		json_object_set_new(host, "bootstrap", json_false());
	json_object_set_new(host, "progress_stages", stages_array(host, cluster));
	if (day2(host))
		set_status(host, "installing", HOST_INFO_INSTALLING, now);
	else
		set_status(host, "preparing-for-installation", HOST_INFO_PREPARING, now);
	return 0;
}

int host_start_installing(json_t *host, const json_t *cluster, int64_t now, ah_err *err)
{
	const char *st = sget(host, "status");

	if (!strcmp(st, "installing") || !strcmp(st, "installing-in-progress"))
		return 0;
	if (strcmp(st, "preparing-successful") != 0)
		return ah_err_set(err, EBUSY, 409, "Conflict", "Host %s is in %s state, expected preparing-successful",
				  sget(host, "id"), st);
	json_object_set_new(host, "progress_stages", stages_array(host, cluster));
	json_object_set_new(host, "progress",
			    json_pack("{s:s, s:s, s:i, s:I, s:I, s:b}", "current_stage", "", "progress_info", "",
				      "installation_percentage", 0, "stage_started_at", (json_int_t)0, "stage_updated_at",
				      (json_int_t)0, "stage_timed_out", 0));
	set_status(host, "installing", HOST_INFO_INSTALLING, now);
	return 0;
}

int host_progress_changed(json_t *host, const json_t *progress, const json_t *cluster, int64_t now,
			  bool *ret_stage_changed, ah_err *err)
{
	static const char *const valid[] = { "installing", "installing-in-progress", "installing-pending-user-action",
					     NULL };
	const json_t *prev = json_object_get(host, "progress"), *jstage, *jinfo;
	const char *stage, *info, *prev_stage = sget(prev, "current_stage"), *st = sget(host, "status");
	const char *to;
	bool day2_done = false;
	char si[HOST_STATUS_INFO_MAX + 1];
	json_t *p;
	int pct = -1;

	if (ret_stage_changed)
		*ret_stage_changed = false;
	if (!json_is_object(progress))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "host-progress: body must be a JSON object");
	jstage = json_object_get(progress, "current_stage");
	jinfo = json_object_get(progress, "progress_info");
	if (!json_is_string(jstage))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "current_stage in body is required");
	if (jinfo && !json_is_string(jinfo) && !json_is_null(jinfo))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "progress_info in body must be of type string");
	stage = json_string_value(jstage);
	info = json_is_string(jinfo) ? json_string_value(jinfo) : "";
	if (host_stage_id(stage) < 0) {
		strbuf sb = STRBUF_INIT;

		for (int i = 0; i < HOST_STAGE_COUNT; i++)
			strbuf_addf(&sb, "%s%s", i ? " " : "", host_stage_name(i));
		ah_err_set(err, EINVAL, 400, "BadRequest", "current_stage in body should be one of [%s]",
			   sb.buf ? sb.buf : "");
		strbuf_release(&sb);
		return -EINVAL;
	}
	if (!*sget(host, "cluster_id"))
		return ah_err_set(err, EINVAL, 400, "BadRequest", "Host %s is not bound to any cluster", sget(host, "id"));
	if (!strcmp(prev_stage, stage)) {
		if (!strcmp(sget(prev, "progress_info"), info))
			return 0;
		p = json_deep_copy(prev);
		json_object_set_new(p, "progress_info", json_string(info));
		json_object_set_new(p, "stage_updated_at", json_integer(now));
		json_object_set_new(host, "progress", p);
		return 0;
	}
	if (!in(st, valid))
		return ah_err_set(err, EBUSY, 409, "Conflict", "Can't set progress <%s> to host in status <%s>", stage, st);
	if (strcmp(stage, HOST_STAGE_FAILED) != 0) {
		size_t n;
		const char *const *l = host_stages_of(host, cluster, true, &n);
		int idx = host_stage_index(l, n, stage);

		if (*prev_stage) {
			if (idx < 0)
				return ah_err_set(err, EBUSY, 409, "Conflict",
						  "Stages %s isn't available for host role %s bootstrap %s", stage,
						  sget(host, "role"),
						  json_is_true(json_object_get(host, "bootstrap")) ? "true" : "false");
			if (idx < host_stage_index(l, n, prev_stage))
				return ah_err_set(err, EBUSY, 409, "Conflict",
						  "Can't assign lower stage \"%s\" after host has been in stage \"%s\"", stage,
						  prev_stage);
		}
		pct = n ? (int)((double)(idx + 1) / (double)n * 100.0) : 0;
	}
	if (ret_stage_changed)
		*ret_stage_changed = true;
	if (!strcmp(stage, HOST_STAGE_FAILED)) {
		/* The last progress is kept; only the status moves. */
		if (*info)
			snprintf(si, sizeof(si), "%s - %s", stage, info);
		else
			snprintf(si, sizeof(si), "%s", stage);
		set_status(host, "error", si, now);
		return 0;
	}
	if (!strcmp(stage, HOST_STAGE_DONE) && day2(host))
		to = "added-to-existing-cluster", day2_done = true;
	else if (!strcmp(stage, HOST_STAGE_DONE) && strcmp(st, "installing-pending-user-action") != 0)
		to = "installed";
	else
		to = "installing-in-progress";
	p = json_pack("{s:s, s:s, s:i, s:I, s:I, s:b}", "current_stage", stage, "progress_info", info,
		      "installation_percentage", pct, "stage_started_at", (json_int_t)now, "stage_updated_at",
		      (json_int_t)now, "stage_timed_out", 0);
	json_object_set_new(host, "progress", p);
	if (!json_object_get(host, "progress_stages"))
		json_object_set_new(host, "progress_stages", stages_array(host, cluster));
	set_status(host, to, day2_done ? HOST_INFO_REBOOTING_DAY2 : stage, now);
	return 0;
}

int host_installation_failed(json_t *host, const char *reason, int64_t now, ah_err *err)
{
	const char *st = sget(host, "status");

	if (strcmp(st, "installing") != 0 && strcmp(st, "installing-in-progress") != 0)
		return conflict(err, host, "HostInstallationFailed");
	set_status(host, "error", reason && *reason ? reason : "installation command failed", now);
	return 0;
}

int host_cancel_installation(json_t *host, const char *reason, int64_t now, ah_err *err)
{
	static const char *const to_cancelled[] = { "installing-pending-user-action", "installing",
						    "installing-in-progress", "installed", "error", NULL };
	static const char *const to_known[] = { "preparing-for-installation", "preparing-successful", "known", NULL };
	const char *st = sget(host, "status");
	const char *why = reason && *reason ? reason : "Installation cancelled by user";

	if (in(st, to_cancelled))
		set_status(host, "cancelled", why, now);
	else if (in(st, to_known))
		set_status(host, "known", why, now);
	else
		return conflict(err, host, "CancelInstallation");
	return 0;
}

int host_reset_pending_user_action(json_t *host, int64_t now, ah_err *err)
{
	static const char *const from[] = { "resetting", "discovering", "known", "installing-pending-user-action",
					    "installing", "preparing-for-installation", "preparing-successful",
					    "preparing-failed", "pending-for-input", "resetting-pending-user-action",
					    "installing-in-progress", "installed", "error", "cancelled",
					    "added-to-existing-cluster", NULL };

	if (!in(sget(host, "status"), from))
		return conflict(err, host, "ResettingPendingUserAction");
	set_status(host, "resetting-pending-user-action", HOST_INFO_RESETTING_PENDING_USER_ACTION, now);
	return 0;
}

int host_bind(json_t *host, const char *cluster_id, int64_t now, ah_err *err)
{
	if (!cluster_id || !*cluster_id)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "Host %s: cluster_id is required to bind",
				  sget(host, "id"));
	if (strcmp(sget(host, "status"), "known-unbound") != 0)
		return conflict(err, host, "BindHost");
	json_object_set_new(host, "cluster_id", json_string(cluster_id));
	json_object_del(host, "progress");
	json_object_del(host, "inventory");
	json_object_del(host, "images_status");
	json_object_set_new(host, "bootstrap", json_false());
	set_status(host, "binding", HOST_INFO_BINDING, now);
	return 0;
}

int host_unbind(json_t *host, int64_t now, ah_err *err)
{
	static const char *const to_upua[] = { "preparing-for-installation", "preparing-successful", "preparing-failed",
					       "installing", "installing-in-progress", "installing-pending-user-action",
					       "installed", "added-to-existing-cluster", "error", "cancelled", NULL };
	static const char *const unbound[] = { "discovering-unbound", "insufficient-unbound", "known-unbound",
					       "disconnected-unbound", "unbinding", "unbinding-pending-user-action",
					       NULL };
	const char *st = sget(host, "status"), *to;

	if (in(st, unbound))
		return 0;
	if (in(st, PRE))
		to = "unbinding";
	else if (in(st, to_upua))
		to = "unbinding-pending-user-action";
	else
		return conflict(err, host, "UnbindHost");
	wipe_cluster_fields(host);
	set_status(host, to, HOST_INFO_UNBINDING, now);
	return 0;
}

int host_media_disconnect(json_t *host, int64_t now)
{
	static const char *const to_error[] = { "preparing-for-installation", "preparing-failed", "preparing-successful",
						"installing", "installing-in-progress", "error", NULL };
	static const char *const pre_binding[] = { "discovering", "known", "disconnected", "insufficient",
						   "pending-for-input", "binding", NULL };
	static const char *const unb[] = { "discovering-unbound", "insufficient-unbound", "known-unbound",
					   "disconnected-unbound", "unbinding", NULL };
	const char *st = sget(host, "status");
	bool already = !strcmp(sget(host, "media_status"), "disconnected");
	char why[2 * HOST_STATUS_INFO_MAX + 8];
	int changed = 0;

	json_object_set_new(host, "media_status", json_string("disconnected"));
	if (in(st, pre_binding) || in(st, unb)) {
		changed = strcmp(st, in(st, unb) ? "disconnected-unbound" : "disconnected") != 0;
		set_status(host, in(st, unb) ? "disconnected-unbound" : "disconnected", HOST_INFO_MEDIA_DISCONNECTED, now);
	} else if (in(st, to_error) && !already) {
		/* The installer reports its own failure text: the diagnosis is
		 * added to it rather than replacing it. */
		snprintf(why, sizeof(why), "%s", HOST_INFO_MEDIA_DISCONNECTED);
		if (!strcmp(st, "error")) {
			const char *old = sget(host, "status_info");
			char pre[HOST_STATUS_INFO_MAX + 1];

			snprintf(pre, sizeof(pre), "%s - %s", HOST_STAGE_FAILED, HOST_INFO_MEDIA_DISCONNECTED);
			if (!*old)
				snprintf(why, sizeof(why), "%s", pre);
			else if (strstr(old, pre))
				snprintf(why, sizeof(why), "%s", old);
			else
				snprintf(why, sizeof(why), "%s. %s", pre, old);
		}
		changed = strcmp(st, "error") != 0;
		set_status(host, "error", why, now);
	}
	return changed;
}
