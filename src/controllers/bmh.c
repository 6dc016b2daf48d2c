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
 * on; the host is provisioned as soon as it is powered on.  A disk image
 * (format raw/qcow2/vdi/vmdk/empty) or a customDeploy is deployed through
 * the ironic agent, as Ironic's direct and custom agent deploys: deploy()
 * below, the hub's Ironic API in ironic.h (its nodes are kept here).
 *
 * BMC calls never run on a reconcile thread: the reconcile asks for an
 * operation (a job) and returns; a small pool of threads (as many as
 * Redfish requests may be in flight) runs it and queues the BMH again, and
 * the next reconcile takes the result.  A BMC that fails leaves the host in
 * its state with operationalStatus error, errorType and errorMessage, and
 * the operation is tried again after a back-off; when it answers again the
 * host carries on. */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assisted/bmh.h"
#include "base/log.h"
#include "base/util.h"
#include "base/yamljson.h"
#include "controllers/hub-internal.h"
#include "controllers/ironic.h"
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
	case BMH_ACT_AGENT_COMMAND: return "agent command";
	case BMH_ACT_BOOT_DISK: return "boot from disk";
	case BMH_ACT_NONE: break;
	}
	return "?";
}

struct bmc_job {
	char ns[RT_NS_MAX + 1], name[RT_NAME_MAX + 1];
	enum bmh_action op;
	char *arg;            /* provision: the image URL; reboot: "hard" or "soft"; agent
			       * command: {"callback", "token", "name", "params"} (secret) */
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

/* A node of the hub's Ironic (ironic.h): a BMH whose deploy (or cleaning)
 * boots the ironic agent, from the boot until the agent's work is done. */
enum node_phase {
	NODE_BOOT,     /* the host is being booted on the deploy ramdisk */
	NODE_WAIT,     /* booted: waiting for the agent's first heartbeat */
	NODE_RUNNING,  /* the agent runs a long deploy step (start_assisted_install) */
	NODE_DONE,     /* the agent's step is done: boot the disk (or power off) */
};

struct inode {
	char ns[RT_NS_MAX + 1], name[RT_NAME_MAX + 1];
	char uuid[64], mac[18];
	char purpose[16];     /* "deploy" or "clean": a node made for one is not the other's */
	char token[65];       /* secret */
	bool token_given;
	char callback[IRONIC_CALLBACK_MAX + 1];
	enum node_phase phase;
	int64_t since_ms;     /* when the phase began */
	struct inode *next;
};

struct bmh_ctl {
	struct hub *h;
	struct inode *nodes;  /* under lock */
	size_t nnodes;
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
	if (j->arg) {
		memset(j->arg, 0, strlen(j->arg));
		free(j->arg);
	}
	free(j->boot_mode);
	if (j->password) {
		memset(j->password, 0, strlen(j->password));
		free(j->password);
	}
	free(j->user);
	free(j);
}

/* The BMC work of one job; sets done, err, msg, powered_on. */
/* The agent command of a job: arg is {"callback", "token", "name", "params"}. */
static int agent_job(struct bmc_job *j, ah_err *err)
{
	json_t *a = json_loads(j->arg ? j->arg : "", 0, NULL);
	const char *name = jstr(a, "name"), *status_of = jstr(a, "status_of");
	bool running_ok = json_is_true(json_object_get(a, "running_ok"));
	char status[16], msg[AH_ERR_MSG_MAX - 64];
	int r;

	if (!a || (!name && !status_of))
		r = ah_err_set(err, EINVAL, 0, "", "bad agent command");
	else if (status_of)
		r = ironic_agent_last_status(jstr(a, "callback"), jstr(a, "token"), status_of, status, sizeof(status),
					     msg, sizeof(msg), err);
	else
		r = ironic_agent_command(jstr(a, "callback"), jstr(a, "token"), name, json_object_get(a, "params"),
					 running_ok ? 0 : 60, status, sizeof(status), msg, sizeof(msg), err);
	if (!name)
		name = status_of ? status_of : "";
	if (r == -ENOENT && status_of)
		r = ah_err_set(err, ENOENT, 0, "", "the ironic agent has no %s command (it rebooted?)", status_of);
	if (r == 0 && running_ok && strcmp(status, "RUNNING") == 0)
		snprintf(j->msg, sizeof(j->msg), "RUNNING");
	else if (r == 0 && strcmp(status, "SUCCEEDED") != 0)
		r = ah_err_set(err, EIO, 0, "", "the ironic agent's %s %s%s%s", name,
			       strcmp(status, "FAILED") == 0 ? "failed" : "did not finish in time", *msg ? ": " : "",
			       msg);
	json_decref(a);
	return r;
}

static void job_run(struct bmc_job *j)
{
	struct rf_system s;
	ah_err err = { 0 };
	int r;

	if (j->op == BMH_ACT_AGENT_COMMAND) {
		j->msg[0] = 0;
		r = agent_job(j, &err);
		j->err = r;
		if (r < 0)
			snprintf(j->msg, sizeof(j->msg), "%s", err.message);
		if (r < 0)
			log_info("baremetalhost %s/%s: %s", j->ns, j->name, j->msg);
		return;
	}
	r = rf_get_system(&j->conn, &s, &err);

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
		case BMH_ACT_BOOT_DISK:
			/* As Ironic ends a direct deploy: off, media out, disk first, on. */
			if (s.powered_on)
				r = rf_reset(&j->conn, &s, "ForceOff", &err);
			if (r == 0 && *s.cd)
				r = rf_eject(&j->conn, &s, &err);
			if (r == 0)
				r = rf_set_boot(&j->conn, &s, "Hdd", "Continuous", j->boot_mode, &err);
			if (r == 0)
				r = rf_reset(&j->conn, &s, "On", &err);
			if (r == 0)
				j->powered_on = true;
			break;
		case BMH_ACT_AGENT_COMMAND:
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

/* --- the hub's Ironic: nodes, lookup, heartbeat (ironic.h) ---------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct inode *node_find(struct bmh_ctl *ctl, const char *ns, const char *name)
{
	struct inode *n;

	for (n = ctl->nodes; n; n = n->next)
		if (strcmp(n->ns, ns) == 0 && strcmp(n->name, name) == 0)
			return n;
	return NULL;
}

static void node_drop(struct bmh_ctl *ctl, const char *ns, const char *name)
{
	struct inode **pp, *n;

	pthread_mutex_lock(&ctl->lock);
	for (pp = &ctl->nodes; (n = *pp); pp = &n->next)
		if (strcmp(n->ns, ns) == 0 && strcmp(n->name, name) == 0) {
			*pp = n->next;
			ctl->nnodes--;
			explicit_bzero(n->token, sizeof(n->token));
			free(n);
			break;
		}
	pthread_mutex_unlock(&ctl->lock);
}

/* A snapshot of a node (the token included: the caller wipes it). */
struct node_view {
	enum node_phase phase;
	int64_t since_ms;
	char token[65];
	char callback[IRONIC_CALLBACK_MAX + 1];
};

/* The BMH's node for purpose, made (in NODE_BOOT, with a new token) when it
 * has none or one for another purpose.  0, -ENOBUFS (too many), -ENOMEM. */
static int node_get(struct bmh_ctl *ctl, const char *ns, const char *name, const char *uuid, const char *mac,
		    const char *purpose, struct node_view *ret)
{
	struct inode *n;
	int r = 0;

	pthread_mutex_lock(&ctl->lock);
	n = node_find(ctl, ns, name);
	if (n && strcmp(n->purpose, purpose) != 0) {
		pthread_mutex_unlock(&ctl->lock);
		node_drop(ctl, ns, name);
		pthread_mutex_lock(&ctl->lock);
		n = NULL;
	}
	if (!n) {
		if (ctl->nnodes >= IRONIC_NODES_MAX) {
			r = -ENOBUFS;
		} else if (!(n = calloc(1, sizeof(*n))) || util_random_hex(n->token, 32) < 0) {
			free(n);
			n = NULL;
			r = -ENOMEM;
		} else {
			snprintf(n->ns, sizeof(n->ns), "%s", ns);
			snprintf(n->name, sizeof(n->name), "%s", name);
			snprintf(n->uuid, sizeof(n->uuid), "%s", uuid);
			snprintf(n->mac, sizeof(n->mac), "%s", mac ? mac : "");
			snprintf(n->purpose, sizeof(n->purpose), "%s", purpose);
			n->phase = NODE_BOOT;
			n->since_ms = now_ms();
			n->next = ctl->nodes;
			ctl->nodes = n;
			ctl->nnodes++;
		}
	}
	if (n) {
		ret->phase = n->phase;
		ret->since_ms = n->since_ms;
		memcpy(ret->token, n->token, sizeof(ret->token));
		memcpy(ret->callback, n->callback, sizeof(ret->callback));
	}
	pthread_mutex_unlock(&ctl->lock);
	return r;
}

static void node_set_phase(struct bmh_ctl *ctl, const char *ns, const char *name, enum node_phase phase)
{
	struct inode *n;

	pthread_mutex_lock(&ctl->lock);
	n = node_find(ctl, ns, name);
	if (n && n->phase != phase) {
		n->phase = phase;
		n->since_ms = now_ms();
		if (phase == NODE_BOOT) {
			/* A new boot: a new agent, which looks up (and gets a token) again. */
			n->callback[0] = 0;
			n->token_given = false;
			util_random_hex(n->token, 32);
		}
	}
	pthread_mutex_unlock(&ctl->lock);
}

static bool mac_eq(const char *a, size_t alen, const char *b)
{
	return alen == strlen(b) && strncasecmp(a, b, alen) == 0;
}

int hub_ironic_lookup(struct hub *h, const char *addresses, json_t **ret)
{
	struct bmh_ctl *ctl = h->bmh_ctl;
	const char *p = addresses;
	struct inode *n = NULL;
	char uuid[64], token[65];
	bool given = false;
	unsigned k;

	*ret = NULL;
	if (!ctl || !p || !*p)
		return -EINVAL;
	pthread_mutex_lock(&ctl->lock);
	/* At most 32 addresses are looked at (a host has a few NICs). */
	for (k = 0; *p && k < 32 && !n; k++) {
		size_t l = strcspn(p, ",");

		if (l > 0 && l <= 17)
			for (n = ctl->nodes; n; n = n->next)
				if (*n->mac && mac_eq(p, l, n->mac))
					break;
		p += l;
		if (*p == ',')
			p++;
	}
	if (n) {
		snprintf(uuid, sizeof(uuid), "%s", n->uuid);
		memcpy(token, n->token, sizeof(token));
		given = n->token_given;
		n->token_given = true;
	}
	pthread_mutex_unlock(&ctl->lock);
	if (!n)
		return -ENOENT;
	/* The token goes to the first lookup of a boot only, as Ironic. */
	*ret = json_pack("{s:{s:s, s:{}, s:{}, s:{}}, s:{s:i, s:s, s:b, s:b}}", "node", "uuid", uuid, "properties",
			 "instance_info", "driver_internal_info", "config", "heartbeat_timeout",
			 IRONIC_HEARTBEAT_TIMEOUT, "agent_token", given ? "******" : token, "agent_token_required", 1,
			 "agent_md5_checksum_enable", 0);
	explicit_bzero(token, sizeof(token));
	return *ret ? 0 : -ENOMEM;
}

static bool callback_ok(const char *cb)
{
	size_t l = cb ? strlen(cb) : 0;

	if (l == 0 || l > IRONIC_CALLBACK_MAX || (strncmp(cb, "http://", 7) && strncmp(cb, "https://", 8)))
		return false;
	for (; *cb; cb++)
		if ((unsigned char)*cb <= ' ' || *cb == '?' || *cb == '#' || (unsigned char)*cb >= 0x7f)
			return false;
	return true;
}

int hub_ironic_heartbeat(struct hub *h, const char *uuid, const char *token, const char *callback_url)
{
	struct bmh_ctl *ctl = h->bmh_ctl;
	struct inode *n;
	char ns[RT_NS_MAX + 1], name[RT_NAME_MAX + 1];
	bool wake = false;
	int r = 0;

	if (!ctl || !uuid)
		return -ENOENT;
	pthread_mutex_lock(&ctl->lock);
	for (n = ctl->nodes; n; n = n->next)
		if (strcmp(n->uuid, uuid) == 0)
			break;
	if (!n) {
		r = -ENOENT;
	} else if (!n->token_given || !token || strlen(token) != strlen(n->token) ||
		   CRYPTO_memcmp(token, n->token, strlen(n->token)) != 0) {
		r = -EACCES;
	} else if (!callback_ok(callback_url)) {
		r = -EINVAL;
	} else if (strcmp(n->callback, callback_url) != 0) {
		snprintf(n->callback, sizeof(n->callback), "%s", callback_url);
		snprintf(ns, sizeof(ns), "%s", n->ns);
		snprintf(name, sizeof(name), "%s", n->name);
		wake = true;
	}
	pthread_mutex_unlock(&ctl->lock);
	if (wake) {
		log_info("baremetalhost %s/%s: the ironic agent heartbeats from %s", ns, name, callback_url);
		rt_enqueue(h->c_bmh, ns, name);
	}
	return r;
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

/* --- deploying a disk image through the ironic agent -------------------------- */

#define DEPLOY_WAIT_MS (15 * 60 * 1000)  /* the agent must heartbeat within this of the boot */
#define DEPLOY_CHECK_MS 10000

/* spec.image names a disk image (not a live ISO): Ironic's direct deploy. */
static bool image_deploy(const json_t *spec)
{
	const json_t *img = json_object_get(spec, "image");
	const char *url = jstr(img, "url"), *fmt = jstr(img, "format");

	return url && *url && !same_str(fmt, "live-iso");
}

/* The text under the first key of keys present in Secret ns/name (decoded).
 * 0 with *ret malloc'd (NUL-terminated); -ENOENT (no Secret or no key) or
 * -EINVAL with msg. */
static int secret_text(struct hub *h, const char *ns, const char *field, const json_t *ref, const char *const *keys,
		       char **ret, char *msg, size_t size)
{
	const char *sname = jstr(ref, "name"), *sns = jstr(ref, "namespace"), *v = NULL;
	json_t *sec = NULL;
	ah_err err = { 0 };
	unsigned char *buf = NULL;
	size_t len = 0;

	*ret = NULL;
	if (!sname || !*sname) {
		snprintf(msg, size, "%s.name is not set", field);
		return -EINVAL;
	}
	if (sns && *sns && strcmp(sns, ns) != 0) {
		snprintf(msg, size, "%s: the Secret must be in the BareMetalHost's namespace %s, not %s", field, ns, sns);
		return -EINVAL;
	}
	if (kube_get(h->api, h->k_secret, ns, sname, &sec, &err) < 0) {
		if ((size_t)snprintf(msg, size, "failed to read %s: Secret %s/%s: %s", field, ns, sname, err.message) >=
		    size)
			msg[size - 1] = 0;
		return -ENOENT;
	}
	for (; *keys && !v; keys++)
		v = jstr(json_object_get(sec, "data"), *keys);
	if (!v || util_base64_decode(v, strlen(v), &buf, &len) < 0) {
		snprintf(msg, size, "%s: Secret %s/%s has no %s key", field, ns, sname,
			 strcmp(field, "spec.userData") == 0 ? "\"userData\" (or \"value\")" : keys[-1] ? keys[-1] : "");
		json_decref(sec);
		return -ENOENT;
	}
	json_decref(sec);
	*ret = realloc(buf, len + 1);
	if (!*ret) {
		free(buf);
		return -ENOMEM;
	}
	(*ret)[len] = 0;
	return 0;
}

/* A YAML or JSON object text (metaData, networkData). */
static json_t *parse_object(const char *text, const char *field, char *msg, size_t size)
{
	json_t *all = NULL, *o;
	ah_err err = { 0 };

	if (yaml_parse_all(text, strlen(text), &all, &err) < 0) {
		if ((size_t)snprintf(msg, size, "%s: %s", field, err.message) >= size)
			msg[size - 1] = 0;
		return NULL;
	}
	o = json_array_get(all, 0);
	if (!o && json_array_size(all) == 0) {
		json_decref(all);
		return json_object();
	}
	if (!json_is_object(o)) {
		snprintf(msg, size, "%s: not a YAML or JSON object", field);
		json_decref(all);
		return NULL;
	}
	json_incref(o);
	json_decref(all);
	return o;
}

/* The params of the write_image deploy step (image_info and the config drive
 * as Ironic hands them to the agent), or NULL with msg (the BMH's
 * provisioning error). */
static json_t *deploy_params(struct pass *p, char *msg, size_t size)
{
	static const char *const user_keys[] = { "userData", "value", NULL };
	static const char *const meta_keys[] = { "metaData", NULL };
	static const char *const net_keys[] = { "networkData", NULL };
	const json_t *spec = json_object_get(p->bmh, "spec"), *img = json_object_get(spec, "image");
	const char *uid = jstr(json_object_get(p->bmh, "metadata"), "uid");
	const char *url = jstr(img, "url"), *sum = jstr(img, "checksum"), *type = jstr(img, "checksumType");
	const char *fmt = jstr(img, "format");
	char *text = NULL;
	json_t *meta = NULL, *net = NULL, *info, *cd, *params = NULL;
	int r;

	if (!type)
		type = "";
	if (strcmp(type, "") && strcmp(type, "md5") && strcmp(type, "sha256") && strcmp(type, "sha512") &&
	    strcmp(type, "auto")) {
		snprintf(msg, size, "spec.image.checksumType: unknown checksum type %s (want md5, sha256, sha512 or auto)",
			 type);
		return NULL;
	}
	if (!sum || !*sum) {
		snprintf(msg, size, "spec.image.checksum is required for an image of format %s", fmt && *fmt ? fmt : "\"\"");
		return NULL;
	}
	if (fmt && *fmt && strcmp(fmt, "raw") && strcmp(fmt, "qcow2") && strcmp(fmt, "vdi") && strcmp(fmt, "vmdk")) {
		snprintf(msg, size, "spec.image.format: unknown image format %s (want raw, qcow2, vdi, vmdk or live-iso)",
			 fmt);
		return NULL;
	}
	/* The config drive's meta_data: what BMO gives Ironic, the metaData
	 * Secret's keys over it. */
	meta = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "uuid", uid ? uid : "", "metal3-namespace", p->ns,
			 "metal3-name", p->name, "local-hostname", p->name, "local_hostname", p->name, "name", p->name);
	if (json_object_get(spec, "metaData")) {
		json_t *extra;

		if (secret_text(p->h, p->ns, "spec.metaData", json_object_get(spec, "metaData"), meta_keys, &text, msg,
				size) < 0)
			goto out;
		extra = parse_object(text, "spec.metaData", msg, size);
		free(text);
		text = NULL;
		if (!extra)
			goto out;
		json_object_update(meta, extra);
		json_decref(extra);
	}
	if (json_object_get(spec, "networkData")) {
		if (secret_text(p->h, p->ns, "spec.networkData", json_object_get(spec, "networkData"), net_keys, &text,
				msg, size) < 0)
			goto out;
		net = parse_object(text, "spec.networkData", msg, size);
		free(text);
		text = NULL;
		if (!net)
			goto out;
	}
	if (json_object_get(spec, "userData")) {
		r = secret_text(p->h, p->ns, "spec.userData", json_object_get(spec, "userData"), user_keys, &text, msg,
				size);
		if (r < 0)
			goto out;
	}
	cd = json_pack("{s:O, s:s}", "meta_data", meta, "user_data", text ? text : "");
	if (cd && net)
		json_object_set(cd, "network_data", net);
	info = json_pack("{s:s, s:[s], s:s, s:s, s:b, s:s, s:s}", "id", url, "urls", url, "container_format", "bare",
			 "image_type", "whole-disk", "stream_raw_images", 1, "node_uuid", uid ? uid : "", "checksum", sum);
	if (info && fmt && *fmt)
		json_object_set_new(info, "disk_format", json_string(fmt));
	if (info && (strcmp(type, "sha256") == 0 || strcmp(type, "sha512") == 0)) {
		json_object_set_new(info, "os_hash_algo", json_string(type));
		json_object_set_new(info, "os_hash_value", json_string(sum));
	}
	if (cd && info)
		params = json_pack("{s:{s:s, s:s, s:i, s:{s:O, s:O}}, s:{s:s, s:{s:s}, s:{}}, s:[], s:s}", "step",
				   "interface", "deploy", "step", "write_image", "priority", 80, "args", "image_info", info,
				   "configdrive", cd, "node", "uuid", uid ? uid : "", "instance_info", "image_source", url,
				   "properties", "ports", "deploy_version", "1");
	if (params && json_object_get(spec, "rootDeviceHints"))
		json_object_set(json_object_get(json_object_get(params, "node"), "properties"), "root_device",
				json_object_get(spec, "rootDeviceHints"));
	json_decref(cd);
	json_decref(info);
	if (!params)
		snprintf(msg, size, "out of memory");
out:
	if (text) {
		memset(text, 0, strlen(text));
		free(text);
	}
	json_decref(meta);
	json_decref(net);
	return params;
}

/* Whether the BMH's cleaning (deprovisioning) is done. */
static bool clean_done(struct bmh_ctl *ctl, const char *ns, const char *name)
{
	struct inode *n;
	bool done;

	pthread_mutex_lock(&ctl->lock);
	n = node_find(ctl, ns, name);
	done = n && strcmp(n->purpose, "clean") == 0 && n->phase == NODE_DONE;
	pthread_mutex_unlock(&ctl->lock);
	return done;
}

static const char *custom_method(const json_t *spec)
{
	const char *m = jstr(json_object_get(spec, "customDeploy"), "method");

	return m && *m ? m : NULL;
}

/* The image a custom deploy boots: the BMH's PreprovisioningImage (same
 * name) once Ready, as BMO.  0 with url, or -EAGAIN (not yet; msg says why). */
static int ppi_image(struct pass *p, char *url, size_t size, char *msg, size_t msize)
{
	json_t *ppi = NULL, *c;
	ah_err err = { 0 };
	bool ready = false;
	const char *u;
	size_t i;

	if (!p->h->k_ppi || kube_get(p->h->api, p->h->k_ppi, p->ns, p->name, &ppi, &err) < 0) {
		snprintf(msg, msize, "waiting for the PreprovisioningImage %s/%s", p->ns, p->name);
		return -EAGAIN;
	}
	json_array_foreach(json_object_get(json_object_get(ppi, "status"), "conditions"), i, c)
		if (same_str(jstr(c, "type"), "Ready") && same_str(jstr(c, "status"), "True"))
			ready = true;
	u = jstr(json_object_get(ppi, "status"), "imageUrl");
	if (!ready || !u || !*u || strlen(u) >= size) {
		snprintf(msg, msize, "waiting for the PreprovisioningImage %s/%s to be ready", p->ns, p->name);
		json_decref(ppi);
		return -EAGAIN;
	}
	snprintf(url, size, "%s", u);
	json_decref(ppi);
	return 0;
}

/* One pass of a deploy through the ironic agent (BMH in provisioning).  A
 * disk image (Ironic's direct deploy): boot the deploy ramdisk (the hub's
 * ironic agent ISO) from virtual media, wait for its agent's heartbeat, run
 * the write_image deploy step, boot the disk.  A customDeploy (the converged
 * flow's start_assisted_install): boot the PreprovisioningImage, run the
 * method as a deploy step, follow it while it runs (the assisted agent
 * installs the host), then boot the disk.  Provisioned then. */
enum deploy_mode { DEP_IMAGE, DEP_CUSTOM, DEP_CLEAN };

static void deploy(struct pass *p, enum deploy_mode mode)
{
	bool custom = mode == DEP_CUSTOM;
	struct bmh_ctl *ctl = p->h->bmh_ctl;
	const json_t *spec = json_object_get(p->bmh, "spec");
	const char *uid = jstr(json_object_get(p->bmh, "metadata"), "uid");
	char msg[AH_ERR_MSG_MAX], url[4096];
	struct node_view v = { 0 };
	struct bmc_job res;
	json_t *params;

	if (mode == DEP_CLEAN)
		/* automatedCleaningMode metadata: Ironic's erase_devices_metadata. */
		params = json_pack("{s:{s:s, s:s, s:i, s:{}}, s:{s:s}, s:[], s:s}", "step", "interface", "deploy", "step",
				   "erase_devices_metadata", "priority", 99, "args", "node", "uuid", uid ? uid : "",
				   "ports", "clean_version", "1");
	else if (custom)
		params = json_pack("{s:{s:s, s:s, s:i, s:{}}, s:{s:s}, s:[], s:s}", "step", "interface", "deploy", "step",
				   custom_method(spec), "priority", 80, "args", "node", "uuid", uid ? uid : "", "ports",
				   "deploy_version", "1");
	else
		params = deploy_params(p, msg, sizeof(msg));
	if (!params) {
		set_error(p->status, "provisioning error", mode != DEP_IMAGE ? "out of memory" : msg);
		p->requeue_ms = BMH_RETRY_MS;
		return;
	}
	if (node_get(ctl, p->ns, p->name, uid ? uid : p->name, jstr(spec, "bootMACAddress"),
		     mode == DEP_CLEAN ? "clean" : custom ? "custom" : "deploy",
		     &v) < 0) {
		set_error(p->status, "provisioning error", "too many hosts deploying at once");
		p->requeue_ms = BMH_RETRY_MS;
		json_decref(params);
		return;
	}
	switch (v.phase) {
	case NODE_BOOT:
		if (custom) {
			if (ppi_image(p, url, sizeof(url), msg, sizeof(msg)) < 0) {
				p->requeue_ms = DEPLOY_CHECK_MS;
				break;
			}
		} else {
			snprintf(url, sizeof(url), "%s/images/ironic-agent.iso?arch=x86_64", p->h->service_url);
		}
		if (!bmc_do(p, BMH_ACT_PROVISION, url, &res, "provisioning error"))
			break;
		if (res.err < 0) {
			set_error(p->status, "provisioning error", res.msg);
			p->requeue_ms = BMH_RETRY_MS;
			break;
		}
		set_ok(p->status);
		json_object_set_new(p->status, "poweredOn", json_true());
		node_set_phase(ctl, p->ns, p->name, NODE_WAIT);
		/* The agent may have heartbeated already (it boots fast). */
		p->requeue_ms = *v.callback ? 1 : DEPLOY_CHECK_MS;
		break;
	case NODE_WAIT:
	case NODE_RUNNING: {
		json_t *a;
		char *arg;

		if (!*v.callback) {
			if (now_ms() - v.since_ms > DEPLOY_WAIT_MS) {
				set_error(p->status, "provisioning error",
					  "timed out waiting for the ironic agent to heartbeat");
				node_set_phase(ctl, p->ns, p->name, NODE_BOOT);
				p->requeue_ms = BMH_RETRY_MS;
			} else {
				p->requeue_ms = DEPLOY_CHECK_MS;
			}
			break;
		}
		if (v.phase == NODE_WAIT)
			a = json_pack("{s:s, s:s, s:s, s:O, s:b}", "callback", v.callback, "token", v.token, "name",
				      mode == DEP_CLEAN ? "clean.execute_clean_step" : "deploy.execute_deploy_step", "params",
				      params, "running_ok", custom);
		else
			a = json_pack("{s:s, s:s, s:s, s:b}", "callback", v.callback, "token", v.token, "status_of",
				      "execute_deploy_step", "running_ok", 1);
		arg = a ? json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
		json_decref(a);
		if (!arg) {
			p->requeue_ms = BMH_RETRY_MS;
			break;
		}
		if (bmc_do(p, BMH_ACT_AGENT_COMMAND, arg, &res, "provisioning error")) {
			if (res.err < 0) {
				set_error(p->status, "provisioning error", res.msg);
				p->requeue_ms = BMH_RETRY_MS;
			} else if (strcmp(res.msg, "RUNNING") == 0) {
				set_ok(p->status);
				node_set_phase(ctl, p->ns, p->name, NODE_RUNNING);
				p->requeue_ms = DEPLOY_CHECK_MS;
			} else {
				node_set_phase(ctl, p->ns, p->name, NODE_DONE);
				p->requeue_ms = 1;
			}
		}
		memset(arg, 0, strlen(arg));
		free(arg);
		break;
	}
	case NODE_DONE:
		if (mode == DEP_CLEAN)
			break; /* cleaned: the deprovisioning itself runs (reconcile_bmh) */
		if (!bmc_do(p, BMH_ACT_BOOT_DISK, NULL, &res, "provisioning error"))
			break;
		if (res.err < 0) {
			set_error(p->status, "provisioning error", res.msg);
			p->requeue_ms = BMH_RETRY_MS;
			break;
		}
		set_ok(p->status);
		json_object_set_new(p->status, "poweredOn", json_true());
		node_drop(ctl, p->ns, p->name);
		set_state(p->status, BMH_ST_PROVISIONED);
		break;
	}
	explicit_bzero(v.token, sizeof(v.token));
	json_decref(params);
}

/* In the converged flow, as BMO with an image provider: a BMH labelled with
 * an InfraEnv has a PreprovisioningImage of its name, controlled by it, with
 * its labels (kept in sync: the InfraEnv label selects the PPI controller)
 * and the architecture BMO would ask for.  Virtual media boots an ISO.
 * Other BMHs (CAPM3's, with spec.image) get none: their deploy boots the
 * hub's own ironic agent ISO, and no controller here serves an unlabelled
 * PPI; one made by hand is left as it is. */
static int ensure_ppi(struct hub *h, const json_t *bmh)
{
	const json_t *meta = json_object_get(bmh, "metadata");
	const json_t *labels = json_object_get(meta, "labels");
	const char *ns = jstr(meta, "namespace"), *name = jstr(meta, "name");
	const char *arch = jstr(json_object_get(bmh, "spec"), "architecture");
	json_t *ppi = NULL, *body, *ret = NULL;
	ah_err err = { 0 };
	int r;

	if (!jstr(labels, LABEL_INFRAENV))
		return 0;
	if (!arch || !*arch)
		arch = jstr(json_object_get(json_object_get(json_object_get(bmh, "status"), "hardware"), "cpu"), "arch");
	if (!arch || !*arch)
		arch = "x86_64";
	r = kube_get(h->api, h->k_ppi, ns, name, &ppi, &err);
	if (r == 0) {
		const json_t *pl = json_object_get(json_object_get(ppi, "metadata"), "labels");

		r = 0;
		if (json_is_object(labels) && !json_equal(pl, labels)) {
			json_t *lp = json_is_object(labels) ? json_deep_copy(labels) : json_object();
			const char *k;
			json_t *v;

			json_object_foreach((json_t *)pl, k, v)
				if (!json_object_get(lp, k))
					json_object_set_new(lp, k, json_null());
			body = json_pack("{s:{s:o}}", "metadata", "labels", lp);
			r = kube_patch(h->api, h->k_ppi, ns, name, "application/merge-patch+json", body, NULL, &ret, &err);
			json_decref(body);
			json_decref(ret);
		}
		json_decref(ppi);
		return r == -ENOENT ? 0 : r;
	}
	if (r != -ENOENT)
		return r;
	body = json_pack("{s:s,s:s,s:{s:s,s:s,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]},s:{s:[s],s:s}}",
			 "apiVersion", "metal3.io/v1alpha1", "kind", "PreprovisioningImage",
			 "metadata", "name", name, "namespace", ns, "ownerReferences",
			 "apiVersion", "metal3.io/v1alpha1", "kind", "BareMetalHost", "name", name,
			 "uid", jstr(meta, "uid") ?: "", "controller", 1, "blockOwnerDeletion", 1,
			 "spec", "acceptFormats", "iso", "architecture", arch);
	if (!body)
		return -ENOMEM;
	if (json_is_object(labels))
		json_object_set(json_object_get(body, "metadata"), "labels", (json_t *)labels);
	r = kube_create(h->api, h->k_ppi, ns, body, NULL, &ret, &err);
	json_decref(body);
	json_decref(ret);
	return r == -EEXIST ? 0 : r;
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
		if (r == -ENOENT) {
			job_forget(h->bmh_ctl, ns, name);
			node_drop(h->bmh_ctl, ns, name);
		}
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
	if (!deleting && h->cfg.converged_flow && h->k_ppi && (r = ensure_ppi(h, bmh)) < 0)
		log_warn("BareMetalHost %s/%s: PreprovisioningImage: %s", ns, name, strerror(-r));
	status = json_is_object(json_object_get(bmh, "status")) ? json_deep_copy(json_object_get(bmh, "status"))
								 : json_object();
	p.bmh = bmh;
	p.status = status;
	state = jstr(json_object_get(status, "provisioning"), "state");
	if (!state)
		state = BMH_ST_NONE;
	if (!state_is(state, BMH_ST_PROVISIONING) && !state_is(state, BMH_ST_DEPROVISIONING))
		node_drop(h->bmh_ctl, ns, name); /* no agent of ours runs on it any more */
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
			.image = (want && *want) || custom_method(spec),
			.image_changed = !same_str(want, have) ||
					 !same_str(custom_method(spec),
						   jstr(json_object_get(json_object_get(status, "provisioning"), "customDeploy"),
							"method")),
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
				if (json_object_get(spec, "image") && !json_is_null(json_object_get(spec, "image")))
					json_object_set(json_object_get(status, "provisioning"), "image",
							json_object_get(spec, "image"));
				else
					json_object_del(json_object_get(status, "provisioning"), "image");
				if (custom_method(spec))
					json_object_set(json_object_get(status, "provisioning"), "customDeploy",
							json_object_get(spec, "customDeploy"));
				else
					json_object_del(json_object_get(status, "provisioning"), "customDeploy");
				json_object_set_new(json_object_get(status, "provisioning"), "bootMode",
						    json_string(jstr(spec, "bootMode") ? jstr(spec, "bootMode") : "UEFI"));
				if (json_object_get(spec, "rootDeviceHints"))
					json_object_set(json_object_get(status, "provisioning"), "rootDeviceHints",
							json_object_get(spec, "rootDeviceHints"));
				if (same_str(jstr(json_object_get(status, "provisioning"), "ID"), ""))
					json_object_set_new(json_object_get(status, "provisioning"), "ID",
							    json_string(jstr(meta, "uid") ? jstr(meta, "uid") : ""));
			}
			if (strcmp(step.next, BMH_ST_DEPROVISIONING) == 0)
				set_ok(status);
			set_state(status, step.next);
		} else if (step.action == BMH_ACT_PROVISION && (image_deploy(spec) || custom_method(spec))) {
			deploy(&p, image_deploy(spec) ? DEP_IMAGE : DEP_CUSTOM);
		} else if (step.action == BMH_ACT_DEPROVISION && !same_str(jstr(spec, "automatedCleaningMode"), "disabled") &&
			   !clean_done(h->bmh_ctl, ns, name)) {
			deploy(&p, DEP_CLEAN);
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
					if (step.action == BMH_ACT_DEPROVISION) {
						json_object_del(json_object_get(status, "provisioning"), "image");
						json_object_del(json_object_get(status, "provisioning"), "customDeploy");
					}
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
	while (ctl->nodes) {
		struct inode *n = ctl->nodes;

		ctl->nodes = n->next;
		explicit_bzero(n->token, sizeof(n->token));
		free(n);
	}
	free(ctl->threads);
	pthread_mutex_destroy(&ctl->lock);
	pthread_cond_destroy(&ctl->cond);
	free(ctl);
	h->bmh_ctl = NULL;
}
