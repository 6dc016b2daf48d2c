/* bmh.c - the BareMetalHost controller: what the Bare Metal Operator and
 * Ironic do upstream for the live-ISO flow, driving each host's BMC over
 * Redfish (redfish.h).
 *
 * States (status.provisioning.state): "" -> registering -> preparing ->
 * available -> provisioning -> provisioned; an image change or removal
 * deprovisions (power off, eject) back to available; a delete goes through
 * deprovisioning / powering off before delete to deleting, then the
 * finalizer goes.  Inspection is not run (BMAC disables it; with it enabled
 * the host goes through preparing all the same, its hardware taken from the
 * hardwaredetails annotation).  Provisioning a live ISO is Ironic's ramdisk
 * deploy: power off, eject, insert the image URL, boot Cd continuous, power
 * on; the host is provisioned as soon as it is powered on.
 *
 * BMC calls never run on a reconcile thread: the reconcile asks for an
 * operation (a job) and returns; a small pool of threads (as many as
 * Redfish requests may be in flight) runs it and queues the BMH again, and
 * the next reconcile takes the result.  A BMC that fails leaves the host in
 * its state with operationalStatus error, errorType and errorMessage, and
 * the operation is tried again after a back-off; when it answers again the
 * host carries on. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/bmh.h"
#include "base/log.h"
#include "base/util.h"
#include "controllers/hub-internal.h"
#include "controllers/redfish.h"
#include "kube/api.h"
#include "kube/registry.h"

#define BMH_IDX_CREDS "bmcCredentials"  /* BMH -> "ns/secret" of spec.bmc.credentialsName */
#define BMH_JOBS_MAX 100000
#define BMH_RETRY_MS 5000               /* a failed BMC operation is tried again after this */

static const char *op_name(enum bmh_action op)
{
	switch (op) {
	case BMH_ACT_REGISTER: return "register";
	case BMH_ACT_PROVISION: return "provision";
	case BMH_ACT_DEPROVISION: return "deprovision";
	case BMH_ACT_POWER_ON: return "power on";
	case BMH_ACT_POWER_OFF: return "power off";
	case BMH_ACT_REBOOT: return "reboot";
	case BMH_ACT_NONE: break;
	}
	return "?";
}

struct bmc_job {
	char ns[RT_NS_MAX + 1], name[RT_NAME_MAX + 1];
	enum bmh_action op;
	char *arg;            /* provision: the image URL; reboot: "hard" or "soft" */
	char *boot_mode;      /* "UEFI" or "Legacy" */
	char *user, *password;
	struct rf_conn conn;
	bool done;
	int err;
	char msg[AH_ERR_MSG_MAX];
	bool powered_on;
	struct bmc_job *next;   /* all jobs */
	struct bmc_job *qnext;  /* waiting for a thread */
};

struct bmh_ctl {
	struct hub *h;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct bmc_job *jobs, *qhead, *qtail;
	size_t njobs;
	bool stop;
	int nthreads;      /* started so far: grown on demand up to maxthreads */
	int maxthreads;    /* --bmc-max-in-flight */
	int idle;          /* started threads waiting for a job */
	pthread_t *threads;
};

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void job_free(struct bmc_job *j)
{
	if (!j)
		return;
	free(j->arg);
	free(j->boot_mode);
	if (j->password) {
		memset(j->password, 0, strlen(j->password));
		free(j->password);
	}
	free(j->user);
	free(j);
}

/* The BMC work of one job; sets done, err, msg, powered_on. */
static void job_run(struct bmc_job *j)
{
	struct rf_system s;
	ah_err err = { 0 };
	int r = rf_get_system(&j->conn, &s, &err);

	if (r == 0) {
		j->powered_on = s.powered_on;
		switch (j->op) {
		case BMH_ACT_NONE:
		case BMH_ACT_REGISTER:
			break;
		case BMH_ACT_PROVISION:
			if (s.powered_on)
				r = rf_reset(&j->conn, &s, "ForceOff", &err);
			if (r == 0)
				r = rf_eject(&j->conn, &s, &err);
			if (r == 0)
				r = rf_insert(&j->conn, &s, j->arg, &err);
			if (r == 0)
				r = rf_set_boot(&j->conn, &s, "Cd", "Continuous", j->boot_mode, &err);
			if (r == 0)
				r = rf_reset(&j->conn, &s, "On", &err);
			if (r == 0)
				j->powered_on = true;
			break;
		case BMH_ACT_DEPROVISION:
			if (s.powered_on)
				r = rf_reset(&j->conn, &s, "ForceOff", &err);
			if (r == 0 && *s.cd)
				r = rf_eject(&j->conn, &s, &err);
			if (r == 0)
				j->powered_on = false;
			break;
		case BMH_ACT_POWER_ON:
			if (!s.powered_on)
				r = rf_reset(&j->conn, &s, "On", &err);
			if (r == 0)
				j->powered_on = true;
			break;
		case BMH_ACT_POWER_OFF:
			if (s.powered_on)
				r = rf_reset(&j->conn, &s, "ForceOff", &err);
			if (r == 0)
				j->powered_on = false;
			break;
		case BMH_ACT_REBOOT:
			/* BMO: power off, then on again. */
			if (s.powered_on)
				r = rf_reset(&j->conn, &s,
					     j->arg && strcmp(j->arg, "hard") == 0 ? "ForceOff" : "GracefulShutdown", &err);
			if (r == 0)
				r = rf_reset(&j->conn, &s, "On", &err);
			if (r == 0)
				j->powered_on = true;
			break;
		}
	}
	j->err = r;
	snprintf(j->msg, sizeof(j->msg), "%s", r < 0 ? err.message : "");
	if (r < 0)
		log_info("baremetalhost %s/%s: BMC %s failed: %s", j->ns, j->name, op_name(j->op), j->msg);
}

static void *worker(void *ud)
{
	struct bmh_ctl *ctl = ud;

	pthread_mutex_lock(&ctl->lock);
	for (;;) {
		struct bmc_job *j;

		ctl->idle++;
		while (!ctl->stop && !ctl->qhead)
			pthread_cond_wait(&ctl->cond, &ctl->lock);
		ctl->idle--;
		if (ctl->stop)
			break;
		j = ctl->qhead;
		ctl->qhead = j->qnext;
		if (!ctl->qhead)
			ctl->qtail = NULL;
		pthread_mutex_unlock(&ctl->lock);
		job_run(j);
		pthread_mutex_lock(&ctl->lock);
		j->done = true;
		if (!ctl->stop)
			rt_enqueue(ctl->h->c_bmh, j->ns, j->name);
	}
	pthread_mutex_unlock(&ctl->lock);
	return NULL;
}

enum job_state { JOB_PENDING, JOB_DONE };

struct job_req {
	enum bmh_action op;
	const char *arg, *boot_mode;
	const char *user, *password;
	const struct bmh_bmc *bmc;
	bool insecure;
};

static bool same_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Ask for an operation on the BMH's BMC.  JOB_DONE: *ret (err, msg,
 * powered_on) is its result and the job is gone; JOB_PENDING: it runs (the
 * BMH is queued again when it ends); negative: refused (-ENOBUFS, -ENOMEM). */
static int job_poll(struct bmh_ctl *ctl, const char *ns, const char *name, const struct job_req *q,
		    struct bmc_job *ret)
{
	struct bmc_job **pp, *j;
	int r = JOB_PENDING;

	pthread_mutex_lock(&ctl->lock);
	for (pp = &ctl->jobs; (j = *pp); pp = &j->next)
		if (strcmp(j->ns, ns) == 0 && strcmp(j->name, name) == 0)
			break;
	if (j && !j->done) {
		pthread_mutex_unlock(&ctl->lock);
		return JOB_PENDING;
	}
	if (j) {
		*pp = j->next;
		ctl->njobs--;
		if (j->op == q->op && same_str(j->arg, q->arg)) {
			ret->err = j->err;
			ret->powered_on = j->powered_on;
			memcpy(ret->msg, j->msg, sizeof(ret->msg));
			pthread_mutex_unlock(&ctl->lock);
			job_free(j);
			return JOB_DONE;
		}
		job_free(j); /* the result of an operation no longer wanted */
	}
	if (ctl->njobs >= BMH_JOBS_MAX) {
		pthread_mutex_unlock(&ctl->lock);
		return -ENOBUFS;
	}
	j = calloc(1, sizeof(*j));
	if (j) {
		snprintf(j->ns, sizeof(j->ns), "%s", ns);
		snprintf(j->name, sizeof(j->name), "%s", name);
		j->op = q->op;
		j->arg = q->arg ? strdup(q->arg) : NULL;
		j->boot_mode = q->boot_mode ? strdup(q->boot_mode) : NULL;
		j->user = strdup(q->user ? q->user : "");
		j->password = strdup(q->password ? q->password : "");
		j->conn.bmc = *q->bmc;
		j->conn.insecure = q->insecure;
		j->conn.user = j->user;
		j->conn.password = j->password;
	}
	if (!j || !j->user || !j->password || (q->arg && !j->arg) || (q->boot_mode && !j->boot_mode)) {
		job_free(j);
		r = -ENOMEM;
	} else {
		j->next = ctl->jobs;
		ctl->jobs = j;
		ctl->njobs++;
		if (ctl->qtail)
			ctl->qtail->qnext = j;
		else
			ctl->qhead = j;
		ctl->qtail = j;
		/* A hub with no BMHs keeps no BMC threads: one more starts
		 * when every started one is busy, up to the bound. */
		if (ctl->idle == 0 && ctl->nthreads < ctl->maxthreads &&
		    pthread_create(&ctl->threads[ctl->nthreads], NULL, worker, ctl) == 0)
			ctl->nthreads++;
		pthread_cond_signal(&ctl->cond);
	}
	pthread_mutex_unlock(&ctl->lock);
	return r;
}

static void job_forget(struct bmh_ctl *ctl, const char *ns, const char *name)
{
	struct bmc_job **pp, *j;

	pthread_mutex_lock(&ctl->lock);
	for (pp = &ctl->jobs; (j = *pp); pp = &j->next)
		if (j->done && strcmp(j->ns, ns) == 0 && strcmp(j->name, name) == 0) {
			*pp = j->next;
			ctl->njobs--;
			job_free(j);
			break;
		}
	pthread_mutex_unlock(&ctl->lock);
}

/* --- object writes ------------------------------------------------------------- */

static void null_removed(json_t *p, const json_t *old)
{
	const char *k;
	json_t *v, *pv;

	json_object_foreach((json_t *)old, k, v) {
		pv = json_object_get(p, k);
		if (!pv)
			json_object_set_new(p, k, json_null());
		else if (json_is_object(pv) && json_is_object(v))
			null_removed(pv, v);
	}
}

static int write_status(struct hub *h, const json_t *bmh, json_t *status)
{
	const json_t *meta = json_object_get(bmh, "metadata"), *old = json_object_get(bmh, "status");
	struct kube_opts o = { .status = true };
	json_t *patch, *ret = NULL;
	ah_err err = { 0 };
	char now[40];
	int r;

	if (json_equal(status, old))
		return 0;
	util_now_rfc3339(now, sizeof(now));
	json_object_set_new(status, "lastUpdated", json_string(now));
	patch = json_pack("{s:O}", "status", status);
	if (json_is_object(old))
		null_removed(json_object_get(patch, "status"), old);
	r = kube_patch(h->api, h->k_bmh, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json",
		       patch, &o, &ret, &err);
	if (r < 0 && r != -ENOENT)
		log_warn("baremetalhost %s/%s: writing status: %s", jstr(meta, "namespace"), jstr(meta, "name"),
			 err.message);
	json_decref(patch);
	json_decref(ret);
	return r == -ENOENT ? 0 : r;
}

static int patch_meta(struct hub *h, const json_t *bmh, json_t *meta_patch)
{
	const json_t *meta = json_object_get(bmh, "metadata");
	json_t *patch = json_pack("{s:o}", "metadata", meta_patch), *ret = NULL;
	ah_err err = { 0 };
	int r;

	json_object_set(meta_patch, "resourceVersion", json_object_get(meta, "resourceVersion"));
	r = kube_patch(h->api, h->k_bmh, jstr(meta, "namespace"), jstr(meta, "name"), "application/merge-patch+json",
		       patch, NULL, &ret, &err);
	json_decref(patch);
	json_decref(ret);
	return r == -ENOENT ? 0 : r;
}

static bool has_finalizer(const json_t *bmh)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(bmh, "metadata"), "finalizers"), i, f)
		if (same_str(json_string_value(f), BMH_FINALIZER))
			return true;
	return false;
}

static int set_finalizer(struct hub *h, const json_t *bmh, bool present)
{
	json_t *out = json_array(), *f;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(bmh, "metadata"), "finalizers"), i, f)
		if (!same_str(json_string_value(f), BMH_FINALIZER))
			json_array_append(out, f);
	if (present)
		json_array_append_new(out, json_string(BMH_FINALIZER));
	return patch_meta(h, bmh, json_pack("{s:o}", "finalizers", out));
}

/* --- the state machine ------------------------------------------------------------ */

static void set_state(json_t *status, const char *state)
{
	json_t *prov = json_object_get(status, "provisioning");

	if (!json_is_object(prov)) {
		prov = json_object();
		json_object_set_new(status, "provisioning", prov);
	}
	json_object_set_new(prov, "state", json_string(state));
	if (!json_object_get(prov, "ID"))
		json_object_set_new(prov, "ID", json_string(""));
}

static void set_ok(json_t *status)
{
	json_object_set_new(status, "operationalStatus", json_string("OK"));
	json_object_del(status, "errorType");
	json_object_set_new(status, "errorMessage", json_string(""));
	json_object_set_new(status, "errorCount", json_integer(0));
}

static void set_error(json_t *status, const char *type, const char *msg)
{
	json_int_t n = json_integer_value(json_object_get(status, "errorCount"));

	json_object_set_new(status, "operationalStatus", json_string("error"));
	json_object_set_new(status, "errorType", json_string(type));
	json_object_set_new(status, "errorMessage", json_string(msg));
	json_object_set_new(status, "errorCount", json_integer(n + 1));
}

static bool state_is(const char *state, const char *want)
{
	return strcmp(state, want) == 0;
}

/* BMO copies the hardwaredetails annotation into status.hardware (when it has
 * none, or inspection is disabled) and then deletes the annotation. */
static bool take_hardware(const json_t *bmh, json_t *status, bool *ret_drop)
{
	const json_t *ann = json_object_get(json_object_get(bmh, "metadata"), "annotations");
	const char *hw = jstr(ann, BMH_ANN_HWDETAILS);
	bool disabled = same_str(jstr(ann, BMH_ANN_INSPECT), "disabled") ||
			same_str(jstr(json_object_get(bmh, "spec"), "inspectionMode"), "disabled");
	json_t *j;

	*ret_drop = false;
	if (!hw)
		return false;
	*ret_drop = true;
	if (!disabled && json_object_get(status, "hardware"))
		return false;
	j = json_loads(hw, 0, NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return false;
	}
	json_object_set_new(status, "hardware", j);
	return true;
}

/* The credentials from spec.bmc.credentialsName (keys username, password,
 * base64 in data).  0 with *user and *pass malloc'd; negative with msg. */
static int read_credentials(struct hub *h, const char *ns, const json_t *bmc, char **user, char **pass, char *msg,
			    size_t size)
{
	const char *sname = jstr(bmc, "credentialsName");
	json_t *sec = NULL;
	ah_err err = { 0 };
	size_t ulen = 0, plen = 0;
	const char *u, *p;

	*user = *pass = NULL;
	if (!sname || !*sname) {
		snprintf(msg, size, "spec.bmc.credentialsName is not set");
		return -EINVAL;
	}
	if (kube_get(h->api, h->k_secret, ns, sname, &sec, &err) < 0) {
		if ((size_t)snprintf(msg, size, "failed to read BMC credentials: Secret %s/%s: %s", ns, sname,
				     err.message) >= size)
			msg[size - 1] = 0;
		return -ENOENT;
	}
	u = jstr(json_object_get(sec, "data"), "username");
	p = jstr(json_object_get(sec, "data"), "password");
	if (!u || !p || util_base64_decode(u, strlen(u), (unsigned char **)user, &ulen) < 0 ||
	    util_base64_decode(p, strlen(p), (unsigned char **)pass, &plen) < 0 || ulen == 0 || plen == 0) {
		free(*user);
		if (*pass)
			memset(*pass, 0, plen);
		free(*pass);
		*user = *pass = NULL;
		json_decref(sec);
		snprintf(msg, size, "Secret %s/%s: missing or empty \"username\" or \"password\"", ns, sname);
		return -EINVAL;
	}
	json_decref(sec);
	return 0;
}

struct pass {
	struct hub *h;
	const json_t *bmh;
	const char *ns, *name;
	json_t *status;
	struct bmh_bmc bmc;
	char *user, *pass;
	bool have_creds;
	int64_t requeue_ms;   /* > 0: run again after this */
};

/* Run op on the BMC: true when it finished (its result in *ret).  An error
 * in building the request sets the BMH's error (type etype) and is retried. */
static bool bmc_do(struct pass *p, enum bmh_action op, const char *arg, struct bmc_job *ret, const char *etype)
{
	const json_t *spec = json_object_get(p->bmh, "spec");
	struct job_req q = { .op = op, .arg = arg, .bmc = &p->bmc, .user = p->user, .password = p->pass,
			     .insecure = json_is_true(json_object_get(json_object_get(spec, "bmc"),
								      "disableCertificateVerification")) };
	const char *mode = jstr(spec, "bootMode");
	int r;

	q.boot_mode = mode && strcmp(mode, "legacy") == 0 ? "Legacy" : "UEFI";
	r = job_poll(p->h->bmh_ctl, p->ns, p->name, &q, ret);
	if (r == JOB_DONE)
		return true;
	if (r < 0) {
		set_error(p->status, etype, "too many BMC operations queued");
		p->requeue_ms = BMH_RETRY_MS;
	}
	return false;
}

static const char *spec_image_url(const json_t *bmh)
{
	return jstr(json_object_get(json_object_get(bmh, "spec"), "image"), "url");
}

static const char *status_image_url(const json_t *status)
{
	return jstr(json_object_get(json_object_get(status, "provisioning"), "image"), "url");
}

static int reconcile_bmh(struct hub *h, const char *ns, const char *name, int64_t *ret_requeue)
{
	json_t *bmh = NULL, *status, *ann_patch = json_object();
	const json_t *meta, *ann, *spec;
	struct pass p = { .h = h, .ns = ns, .name = name };
	ah_err err = { 0 };
	const char *state;
	char msg[AH_ERR_MSG_MAX];
	bool deleting, detached, drop_hw = false, drop_reboot = false;
	struct bmc_job res;
	int r;

	*ret_requeue = 0;
	r = kube_get(h->api, h->k_bmh, ns, name, &bmh, &err);
	if (r < 0) {
		json_decref(ann_patch);
		job_forget(h->bmh_ctl, ns, name);
		return r == -ENOENT ? 0 : r;
	}
	meta = json_object_get(bmh, "metadata");
	ann = json_object_get(meta, "annotations");
	spec = json_object_get(bmh, "spec");
	if (json_object_get(ann, BMH_ANN_PAUSED)) {
		json_decref(ann_patch);
		json_decref(bmh);
		return 0;
	}
	deleting = json_object_get(meta, "deletionTimestamp") != NULL;
	if (!deleting && !has_finalizer(bmh)) {
		r = set_finalizer(h, bmh, true);
		json_decref(ann_patch);
		json_decref(bmh);
		return r;
	}
	status = json_is_object(json_object_get(bmh, "status")) ? json_deep_copy(json_object_get(bmh, "status"))
								 : json_object();
	p.bmh = bmh;
	p.status = status;
	state = jstr(json_object_get(status, "provisioning"), "state");
	if (!state)
		state = BMH_ST_NONE;
	if (!json_object_get(status, "poweredOn"))
		json_object_set_new(status, "poweredOn", json_false());
	if (!json_object_get(status, "operationalStatus"))
		set_ok(status);
	if (take_hardware(bmh, status, &drop_hw) || drop_hw)
		json_object_set_new(ann_patch, BMH_ANN_HWDETAILS, json_null());

	detached = bmh_detached(ann, state);
	if (detached) {
		/* No BMC call for a detached host; deleting it is immediate
		 * unless its annotation asks to delay. */
		json_t *dv = json_loads(jstr(ann, BMH_ANN_DETACHED), 0, NULL);
		bool delay = same_str(jstr(dv, "deleteAction"), "delay");

		json_decref(dv);
		json_object_set_new(status, "operationalStatus", json_string("detached"));
		json_object_del(status, "errorType");
		json_object_set_new(status, "errorMessage", json_string(""));
		if (deleting && !delay)
			set_state(status, BMH_ST_DELETING);
		goto write;
	}
	if (same_str(jstr(status, "operationalStatus"), "detached"))
		set_ok(status);

	/* Registration facts: the driver and the credentials.  A bad address
	 * or Secret is a registration error in any state. */
	if (!state_is(state, BMH_ST_NONE) && !state_is(state, BMH_ST_DELETING)) {
		const json_t *bmc = json_object_get(spec, "bmc");

		if (bmh_parse_bmc_address(jstr(bmc, "address"), &p.bmc, &err) < 0) {
			if (deleting) {
				set_state(status, BMH_ST_DELETING);
				goto write;
			}
			set_error(status, "registration error", err.message);
			goto write;
		}
		if (read_credentials(h, ns, bmc, &p.user, &p.pass, msg, sizeof(msg)) < 0) {
			if (deleting) {
				set_state(status, BMH_ST_DELETING);
				goto write;
			}
			set_error(status, "registration error", msg);
			p.requeue_ms = BMH_RETRY_MS;
			goto write;
		}
		p.have_creds = true;
	}

	{
		const char *want = spec_image_url(bmh), *have = status_image_url(status);
		struct bmh_facts f = {
			.state = state,
			.deleting = deleting,
			.online = json_is_true(json_object_get(spec, "online")),
			.powered_on = json_is_true(json_object_get(status, "poweredOn")),
			.image = want && *want,
			.image_changed = !same_str(want, have),
		};
		struct bmh_step step;
		bool hard = false;
		const char *etype;
		char rmode[8];

		f.reboot = bmh_reboot_requested(ann, state, &hard);
		snprintf(rmode, sizeof(rmode), "%s", hard ? "hard" : "soft");
		bmh_step(&f, &step);
		if (step.next) {
			if (strcmp(step.next, BMH_ST_PROVISIONING) == 0) {
				/* What is provisioned: the image as it is now. */
				json_object_set(json_object_get(status, "provisioning"), "image",
						json_object_get(spec, "image"));
				json_object_set_new(json_object_get(status, "provisioning"), "bootMode",
						    json_string(jstr(spec, "bootMode") ? jstr(spec, "bootMode") : "UEFI"));
			}
			if (strcmp(step.next, BMH_ST_DEPROVISIONING) == 0)
				set_ok(status);
			set_state(status, step.next);
		} else if (step.action) {
			etype = step.action == BMH_ACT_REGISTER ? "registration error"
				: step.action == BMH_ACT_PROVISION || step.action == BMH_ACT_DEPROVISION
					? "provisioning error"
					: "power management error";
			if (bmc_do(&p, step.action,
				   step.action == BMH_ACT_PROVISION ? have : step.action == BMH_ACT_REBOOT ? rmode : NULL,
				   &res, etype)) {
				if (res.err < 0) {
					set_error(status, etype, res.msg);
					p.requeue_ms = BMH_RETRY_MS;
				} else {
					set_ok(status);
					json_object_set_new(status, "poweredOn", json_boolean(res.powered_on));
					if (step.action == BMH_ACT_REGISTER)
						json_object_set_new(
							status, "goodCredentials",
							json_pack("{s:{s:s,s:s}}", "credentials", "name",
								  jstr(json_object_get(spec, "bmc"), "credentialsName"),
								  "namespace", ns));
					if (step.action == BMH_ACT_DEPROVISION)
						json_object_del(json_object_get(status, "provisioning"), "image");
					/* BMO deletes the suffix-less key once done;
					 * suffixed ones stay until their owner removes them. */
					if (step.action == BMH_ACT_REBOOT && json_object_get(ann, BMH_ANN_REBOOT))
						drop_reboot = true;
					if (step.then)
						set_state(status, step.then);
				}
			}
		}
	}

write:
	r = 0;
	if (drop_reboot)
		json_object_set_new(ann_patch, BMH_ANN_REBOOT, json_null());
	if (json_object_size(ann_patch) > 0)
		r = patch_meta(h, bmh, json_pack("{s:O}", "annotations", ann_patch));
	if (r == 0)
		r = write_status(h, bmh, status);
	state = jstr(json_object_get(status, "provisioning"), "state");
	if (r == 0 && deleting && same_str(state, BMH_ST_DELETING) && has_finalizer(bmh)) {
		json_t *cur = NULL;

		/* The status write moved the resourceVersion: take it again. */
		if (kube_get(h->api, h->k_bmh, ns, name, &cur, &err) == 0) {
			r = set_finalizer(h, cur, false);
			json_decref(cur);
		}
		job_forget(h->bmh_ctl, ns, name);
	}
	*ret_requeue = p.requeue_ms;
	if (p.pass) {
		memset(p.pass, 0, strlen(p.pass));
		free(p.pass);
	}
	free(p.user);
	json_decref(status);
	json_decref(ann_patch);
	json_decref(bmh);
	return r;
}

/* --- registration ------------------------------------------------------------ */

static struct rt_result reconcile(void *ctx, const struct rt_key *key)
{
	int64_t after = 0;
	int r = reconcile_bmh(ctx, key->ns, key->name, &after);

	if (r < 0)
		return rt_error(r);
	return after > 0 ? rt_requeue_after(after) : rt_done();
}

static void creds_index(const json_t *bmh, json_t *out)
{
	const char *ns = jstr(json_object_get(bmh, "metadata"), "namespace");
	const char *s = jstr(json_object_get(json_object_get(bmh, "spec"), "bmc"), "credentialsName");
	char key[600];

	if (ns && s && *s) {
		snprintf(key, sizeof(key), "%s/%s", ns, s);
		json_array_append_new(out, json_string(key));
	}
}

static int collect(const char *ns, const char *name, void *ud)
{
	json_array_append_new(ud, json_pack("[ss]", ns, name));
	return 0;
}

/* A Secret changed: the BMHs whose credentials it holds look again. */
static void secret_to_bmhs(struct rt_controller *c, void *ctx, const struct rt_event *ev)
{
	struct hub *h = ctx;
	json_t *keys = json_array(), *k;
	char key[600];
	size_t i;

	snprintf(key, sizeof(key), "%s/%s", ev->so->ns, ev->so->name);
	rt_cache_keys_by(h->rt, h->k_bmh->store_key, BMH_IDX_CREDS, key, collect, keys);
	json_array_foreach(keys, i, k)
		rt_enqueue(c, json_string_value(json_array_get(k, 0)), json_string_value(json_array_get(k, 1)));
	json_decref(keys);
}

int hub_bmh_register(struct hub *h)
{
	struct bmh_ctl *ctl;
	int r;

	h->k_bmh = kube_registry_by_kind(h->reg, "metal3.io/v1alpha1", "BareMetalHost");
	if (!h->k_bmh)
		return 0; /* no BareMetalHost kind: nothing to provision */
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->h = h;
	pthread_mutex_init(&ctl->lock, NULL);
	pthread_cond_init(&ctl->cond, NULL);
	h->bmh_ctl = ctl;
	{
		struct rt_controller_def d = {
			.name = "BareMetalHost",
			.reconcile = reconcile,
			.ctx = h,
			.watches = {
				{ .resource = h->k_bmh->store_key, .map = RT_MAP_SELF },
				{ .resource = "secrets", .map = RT_MAP_FN, .fn = secret_to_bmhs },
			},
		};

		r = rt_register(h->rt, &d, &h->c_bmh);
	}
	if (r == 0)
		r = rt_cache_resource(h->rt, h->k_bmh->store_key, true);
	if (r == 0)
		r = rt_cache_index(h->rt, h->k_bmh->store_key, BMH_IDX_CREDS, creds_index);
	if (r < 0)
		return r;
	/* At most one thread per Redfish request that may be in flight: a
	 * slow BMC holds one of them, never a reconcile thread.  They start
	 * as jobs come (none on a hub without BMHs). */
	ctl->maxthreads = rf_max_in_flight();
	ctl->threads = calloc((size_t)ctl->maxthreads, sizeof(pthread_t));
	if (!ctl->threads)
		return -ENOMEM;
	return 0;
}

void hub_bmh_stop(struct hub *h)
{
	struct bmh_ctl *ctl = h->bmh_ctl;
	struct bmc_job *j;
	int i;

	if (!ctl)
		return;
	pthread_mutex_lock(&ctl->lock);
	ctl->stop = true;
	pthread_cond_broadcast(&ctl->cond);
	pthread_mutex_unlock(&ctl->lock);
	for (i = 0; i < ctl->nthreads; i++)
		pthread_join(ctl->threads[i], NULL);
	while ((j = ctl->jobs)) {
		ctl->jobs = j->next;
		job_free(j);
	}
	free(ctl->threads);
	pthread_mutex_destroy(&ctl->lock);
	pthread_cond_destroy(&ctl->cond);
	free(ctl);
	h->bmh_ctl = NULL;
}
