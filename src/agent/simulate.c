/* simulate.c - the fleet simulator's event loop (see simulate.h).
 *
 * Each virtual host is a small state machine that issues one HTTP request at a time:
 *   REGISTER -> GET instructions -> POST one reply per step -> sleep -> GET ...
 * plus, once it received `install`, an independent timeline of PUT progress reports.
 * Timers live in one binary heap; hosts whose timer fired wait in a FIFO until one of the
 * max_inflight request slots frees up.  libcurl's multi interface carries the requests and
 * keeps connections alive between them.
 *
 * A host has at most one loop timer and one stage timer pending at any time (plus, with
 * --reboot-after, one watch or reboot timer): every path that finishes a request schedules
 * (or readies) the next action exactly once, so a host never runs two loops at once.  A
 * reboot starts the host afresh; the timers it set before carry the old boot number and
 * are dropped when they fire. */
#include "agent/simulate.h"

#include <curl/curl.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/util.h"
#include "image/iso.h"

#define RESP_MAX (4u << 20)
#define REGISTER_INTERVAL_MS 60000 /* upstream agent --interval */
#define DEFAULT_NEXT_SECONDS 60    /* upstream default for unlisted states, and after a GET error */
#define EXIT_FLOOR_MS 5000         /* re-register pause after post_step_action "exit" */
#define MAX_RETRIES 3              /* upstream HTTP client: 3 retries, jitter 2-10 s */
#define RETRY_MIN_MS 2000
#define RETRY_MAX_MS 10000
#define DEDUP_SLOTS 8
#define DEDUP_TTL_MS 3600000       /* upstream keeps the last reply per step type for 1 h */
#define WATCH_MIN_MS 8000          /* installed hosts are looked at every 10 s, jittered */
#define WATCH_MAX_MS 12000
#define BOOT_MASK 0xffffffu        /* struct timer keeps the low 24 bits of the host's boot */

const char *const simulate_state_names[SIM_NSTATES] = {
	[SIM_UNREGISTERED] = "unregistered", [SIM_DISCOVERY] = "discovery",
	[SIM_DISCONNECTED] = "disconnected", [SIM_BINDING] = "binding",
	[SIM_PREPARING] = "preparing",       [SIM_INSTALLING] = "installing",
	[SIM_INSTALLED] = "installed",       [SIM_FAILED] = "failed",
	[SIM_ERROR] = "error",               [SIM_REFUSED] = "refused",
	[SIM_STOPPED_UPUA] = "stopped-upua", [SIM_OFF] = "off",
	[SIM_BOOTING] = "booting",           [SIM_NOBOOT] = "no-boot",
	[SIM_DISK] = "disk",                 [SIM_IPA] = "ipa",
};

enum phase { PH_REGISTER, PH_GET, PH_REPLY, PH_CHECK, PH_GONE };
enum req { REQ_NONE, REQ_REGISTER, REQ_GET, REQ_REPLY, REQ_PROGRESS, REQ_CHECK, REQ_WATCH,
	   REQ_INSPECT, REQ_LOOKUP, REQ_HEARTBEAT, REQ_N };
static const char *const REQ_NAMES[REQ_N] = { "", "register", "instructions", "replies", "progress",
					      "checks", "watches", "inspections", "lookups", "heartbeats" };

#define PEND_LOOP 1u
#define PEND_STAGE 2u
#define PEND_WATCH 4u  /* look at an installed host's state (--reboot-after) */
#define PEND_REBOOT 8u /* reboot a stopped host into the discovery image */
#define PEND_BOOT 16u  /* --bmc: read the virtual media image (start its download) */
#define PEND_IPA 32u   /* --bmc: the ironic agent's next request */
enum ipa_phase { IPA_NONE, IPA_INSPECT, IPA_LOOKUP, IPA_HEARTBEAT };
#define IPA_DEFAULT_HEARTBEAT 300 /* Ironic's [agent]heartbeat_timeout default */
#define BOOT_TRIES 3
#define BOOT_RETRY_MS 5000

struct dedup {
	uint64_t type_hash, out_hash;
	int64_t at_ms;
};

struct host {
	unsigned idx;
	char id[37];
	enum phase phase;
	enum simulate_state state;
	unsigned pending;    /* PEND_* bits whose timer fired */
	bool queued, busy;
	bool registered;     /* registered at least once */
	bool first_round;    /* answered its first instructions */
	unsigned char attempt[2]; /* transient retries of the current loop / stage request */
	json_t *steps;       /* instructions being answered (owned) */
	size_t step_pos;
	int next_secs;
	bool exit_after;
	bool rebooted;       /* past the Rebooting stage: the agent is gone */
	unsigned boot;       /* boots so far; timers set in an earlier boot are void */
	const char *const *stages;
	size_t nstages, stage_pos;
	enum req req;
	const char *req_step_type;
	uint64_t req_out_hash;
	CURL *easy;
	CURLSH *share;       /* this host's own connection (unless shared_connections) */
	struct curl_slist *hdrs;
	char *body;
	strbuf resp;
	struct dedup dedup[DEDUP_SLOTS];
	/* --bmc */
	struct source *bsrc; /* what this boot's image configured (owned), else NULL */
	unsigned bmc_gen;    /* the BMC generation this host last applied */
	char *boot_url;      /* the image being booted */
	unsigned boot_tries;
	CURL *dl;            /* its download */
	FILE *dlf;
	/* the ironic agent of this boot (converged flow) */
	bool ipa, assisted;  /* running it; its deploy step started the assisted agent */
	unsigned char ipa_phase, ipa_tries;
	unsigned hb_secs;
	char *ipa_uuid, *ipa_token;
};

struct timer {
	int64_t due;
	unsigned host;
	unsigned kind : 8;
	unsigned boot : 24; /* the host's boot & BOOT_MASK when set */
};

/* One discovery image: what the hosts booted from it talk to. */
struct source {
	struct fakehost_config cfg;
	char *base; /* ".../api/assisted-install/v2/infra-envs/<id>/hosts" */
	struct curl_blob ca_blob;
};

struct sim {
	const struct simulate_opts *o;
	struct fakehost_fleet fleet;
	struct source *src;
	unsigned nsrc;
	CURLM *multi;
	struct host *hosts;
	struct timer *heap;
	size_t nheap, capheap;
	unsigned *fifo;
	size_t fhead, flen;
	unsigned inflight;
	unsigned count[SIM_NSTATES];
	unsigned registered, first_rounds;
	unsigned long requests[REQ_N], errors, retries, reboots;
	uint64_t rng;
	int64_t t0;
	CURL **pool; /* idle easy handles (at most max_inflight), reused across hosts */
	unsigned npool;
	unsigned ndownloads;
	unsigned long boots, downloads, download_errors;
};

static volatile sig_atomic_t stop_requested, status_requested;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		status_requested = 1;
	else
		stop_requested = sig;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Compact JSON text of j (malloc'd), consuming the reference; NULL on OOM or NULL j. */
static char *dump_steal(json_t *j)
{
	char *t = j ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	return t;
}

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k)) ?: "";
}

/* ---- pure pieces ---- */

static bool has_step(const json_t *steps, const char *type)
{
	const json_t *st;
	size_t i;

	json_array_foreach(steps, i, st)
		if (!strcmp(jstr(st, "step_type"), type))
			return true;
	return false;
}

enum simulate_state simulate_state_after_instructions(enum simulate_state cur, const json_t *reply)
{
	const json_t *steps = json_object_get(reply, "instructions");
	const json_t *secs = json_object_get(reply, "next_instruction_seconds");

	if (cur == SIM_INSTALLED || cur == SIM_FAILED)
		return cur;
	if (!strcmp(jstr(reply, "post_step_action"), "exit"))
		return SIM_BINDING;
	if (has_step(steps, "install"))
		return SIM_INSTALLING;
	if (has_step(steps, "stop-installation") || has_step(steps, "logs-gather"))
		return SIM_ERROR;
	if (has_step(steps, "installation-disk-speed-check") || has_step(steps, "container-image-availability"))
		return SIM_PREPARING;
	if (has_step(steps, "inventory")) {
		/* Disconnected hosts get inventory alone, every 120 s. */
		if (json_array_size(steps) == 1 && json_number_value(secs) == 120)
			return SIM_DISCONNECTED;
		return SIM_DISCOVERY;
	}
	return cur;
}

int simulate_next_seconds(const json_t *reply, unsigned max_poll_seconds)
{
	const json_t *v = json_object_get(reply, "next_instruction_seconds");
	double d = json_number_value(v);
	int secs = DEFAULT_NEXT_SECONDS;

	if (json_is_number(v) && d >= 0 && d <= 3600 && d == (double)(int)d)
		secs = (int)d;
	if (max_poll_seconds && (unsigned)secs > max_poll_seconds)
		secs = (int)max_poll_seconds;
	return secs;
}

enum simulate_check simulate_check_action(bool installed, bool reboot, long http_code, const json_t *host)
{
	const char *st = jstr(host, "status");

	if (http_code == 404)
		return installed ? SIM_CHECK_FORGET : SIM_CHECK_REGISTER;
	if (http_code < 200 || http_code >= 300 || !*st)
		return SIM_CHECK_AGAIN;
	if (!strcmp(st, "unbinding-pending-user-action"))
		return reboot ? SIM_CHECK_REBOOT : SIM_CHECK_STOP;
	/* binding, unbinding, reclaiming-rebooting: the agent restarts and registers. */
	return installed ? SIM_CHECK_AGAIN : SIM_CHECK_REGISTER;
}

int simulate_watch_delay_ms(bool rebooted, int reboot_after_seconds, unsigned max_poll_seconds, uint64_t *rng)
{
	int ms;

	if (!rebooted || reboot_after_seconds < 0)
		return -1;
	ms = WATCH_MIN_MS + (int)(xorshift(rng) % (WATCH_MAX_MS - WATCH_MIN_MS + 1));
	if (max_poll_seconds && (int64_t)ms > (int64_t)max_poll_seconds * 1000)
		ms = (int)max_poll_seconds * 1000;
	return ms;
}

bool simulate_transient(bool transport_error, long http_code)
{
	return transport_error || http_code == 503 || http_code == 504;
}

int simulate_retry_delay_ms(unsigned attempt, uint64_t *rng)
{
	if (attempt == 0 || attempt > MAX_RETRIES)
		return -1;
	return RETRY_MIN_MS + (int)(xorshift(rng) % (RETRY_MAX_MS - RETRY_MIN_MS + 1));
}

/* ---- timers and the ready queue ---- */

static int heap_push(struct sim *s, int64_t due, unsigned host, unsigned kind)
{
	size_t i;

	if (s->nheap == s->capheap) {
		size_t cap = s->capheap ? s->capheap * 2 : 1024;
		struct timer *n = realloc(s->heap, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->heap = n;
		s->capheap = cap;
	}
	i = s->nheap++;
	while (i > 0 && s->heap[(i - 1) / 2].due > due) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = (struct timer){ .due = due, .host = host, .kind = kind, .boot = s->hosts[host].boot & BOOT_MASK };
	return 0;
}

static struct timer heap_pop(struct sim *s)
{
	struct timer top = s->heap[0], last = s->heap[--s->nheap];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= s->nheap)
			break;
		if (c + 1 < s->nheap && s->heap[c + 1].due < s->heap[c].due)
			c++;
		if (s->heap[c].due >= last.due)
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->nheap)
		s->heap[i] = last;
	return top;
}

static void make_ready(struct sim *s, struct host *h, unsigned kind)
{
	h->pending |= kind;
	if (!h->queued && !h->busy) {
		s->fifo[(s->fhead + s->flen++) % s->o->hosts] = h->idx;
		h->queued = true;
	}
}

static void schedule(struct sim *s, struct host *h, int64_t delay_ms, unsigned kind)
{
	/* Out of memory for a timer: fall back to running at once rather than losing the host. */
	if (delay_ms <= 0 || heap_push(s, util_mono_ms() + delay_ms, h->idx, kind) < 0)
		make_ready(s, h, kind);
}

static void set_state(struct sim *s, struct host *h, enum simulate_state st)
{
	s->count[h->state]--;
	h->state = st;
	s->count[st]++;
}

static int64_t cap_ms(const struct sim *s, int64_t ms)
{
	int64_t cap = (int64_t)s->o->max_poll_seconds * 1000;

	return cap && ms > cap ? cap : ms;
}

static double since(const struct sim *s, int64_t t)
{
	return (double)(util_mono_ms() - t) / 1000.0;
}

static struct source *src_of(struct sim *s, const struct host *h)
{
	return h->bsrc ? h->bsrc : &s->src[h->idx % s->nsrc];
}

/* ---- requests ---- */

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct host *h = arg;

	return strbuf_add(&h->resp, data, size * n) < 0 ? 0 : size * n;
}

static int start_request(struct sim *s, struct host *h, enum req kind, const char *method,
			 const char *url, char *body)
{
	bool ipa = kind == REQ_INSPECT || kind == REQ_LOOKUP || kind == REQ_HEARTBEAT;
	struct source *src = src_of(s, h);
	char hdr[256];

	/* Handles (and their buffers) belong to request slots, not to hosts, so an idle
	 * host costs only its struct. */
	if (s->npool) {
		h->easy = s->pool[--s->npool];
		curl_easy_reset(h->easy);
	} else {
		h->easy = curl_easy_init();
		if (!h->easy) {
			free(body);
			return -ENOMEM;
		}
	}
	if (!s->o->shared_connections) {
		/* The host's own connection cache: its keep-alive connection
		 * stays its own between polls. */
		if (!h->share) {
			h->share = curl_share_init();
			if (!h->share || curl_share_setopt(h->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK) {
				curl_share_cleanup(h->share);
				h->share = NULL;
			}
		}
		if (h->share)
			curl_easy_setopt(h->easy, CURLOPT_SHARE, h->share);
	}
	strbuf_reset(&h->resp);
	h->body = body;
	h->req = kind;
	if (ipa) {
		/* The pull secret token is the assisted service's, never Ironic's. */
		h->hdrs = curl_slist_append(NULL, "X-OpenStack-Ironic-API-Version: 1.62");
	} else {
		snprintf(hdr, sizeof(hdr), "X-Secret-Key: %s", src->cfg.token);
		h->hdrs = curl_slist_append(NULL, hdr);
		snprintf(hdr, sizeof(hdr), "discovery_agent_version: %s", src->cfg.agent_version);
		h->hdrs = curl_slist_append(h->hdrs, hdr);
	}
	if (body)
		h->hdrs = curl_slist_append(h->hdrs, "Content-Type: application/json");
	h->hdrs = curl_slist_append(h->hdrs, "Accept: application/json");
	curl_easy_setopt(h->easy, CURLOPT_URL, url);
	curl_easy_setopt(h->easy, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h->easy, CURLOPT_HTTPHEADER, h->hdrs);
	if (body) {
		curl_easy_setopt(h->easy, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(h->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	curl_easy_setopt(h->easy, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h->easy, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(h->easy, CURLOPT_PRIVATE, h);
	curl_easy_setopt(h->easy, CURLOPT_TIMEOUT, 60L);
	curl_easy_setopt(h->easy, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(h->easy, CURLOPT_NOSIGNAL, 1L);
	if (s->o->insecure || (ipa ? src->cfg.ipa_insecure : src->cfg.insecure)) {
		curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h->easy, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (s->o->cacert) {
		curl_easy_setopt(h->easy, CURLOPT_CAINFO, s->o->cacert);
	} else if (src->cfg.ca_pem) {
		curl_easy_setopt(h->easy, CURLOPT_CAINFO_BLOB, &src->ca_blob);
	}
	if (curl_multi_add_handle(s->multi, h->easy) != CURLM_OK) {
		curl_slist_free_all(h->hdrs);
		h->hdrs = NULL;
		free(h->body);
		h->body = NULL;
		curl_easy_cleanup(h->easy);
		h->easy = NULL;
		return -EIO;
	}
	h->busy = true;
	s->inflight++;
	s->requests[kind]++;
	return 0;
}

static char *host_url(struct sim *s, struct host *h, const char *suffix)
{
	char *u = NULL;

	if (asprintf(&u, "%s/%s%s", src_of(s, h)->base, h->id, suffix) < 0)
		return NULL;
	return u;
}

static struct dedup *dedup_slot(struct host *h, uint64_t type_hash)
{
	struct dedup *oldest = &h->dedup[0];

	for (int i = 0; i < DEDUP_SLOTS; i++) {
		if (h->dedup[i].type_hash == type_hash)
			return &h->dedup[i];
		if (h->dedup[i].at_ms < oldest->at_ms)
			oldest = &h->dedup[i];
	}
	oldest->type_hash = type_hash;
	oldest->out_hash = 0;
	oldest->at_ms = 0;
	return oldest;
}

static void dedup_flush(struct host *h)
{
	for (size_t k = 0; k < DEDUP_SLOTS; k++)
		h->dedup[k].at_ms = 0, h->dedup[k].out_hash = 0;
}

/* All steps answered: sleep next_instruction_seconds (or re-register after "exit"). */
static void after_steps(struct sim *s, struct host *h)
{
	json_decref(h->steps);
	h->steps = NULL;
	h->step_pos = 0;
	if (!h->first_round) {
		h->first_round = true;
		if (++s->first_rounds == s->o->hosts)
			fprintf(stderr, "simulate: all %u hosts answered their first instructions %.3f s after start\n",
				s->o->hosts, since(s, s->t0));
	}
	if (h->exit_after) {
		/* Binding and unbinding restart the agent, unbinding-pending-user-action
		 * stops the host: the hub's host state tells which (on_check). */
		h->phase = PH_CHECK;
		make_ready(s, h, PEND_LOOP);
	} else {
		h->phase = PH_GET;
		schedule(s, h, (int64_t)h->next_secs * 1000, PEND_LOOP);
	}
}

/* Start the request for the host's next loop action.  Returns 1 when a request was
 * started, 0 when there was nothing to send (a deduplicated reply, or the end of the
 * step list, which schedules the next poll), -errno on failure. */
static int loop_action(struct sim *s, struct host *h)
{
	char *url = NULL, *body = NULL;
	int r;

	switch (h->phase) {
	case PH_REGISTER:
		body = dump_steal(json_pack("{s:s, s:s}", "host_id", h->id, "discovery_agent_version",
					    src_of(s, h)->cfg.agent_version));
		if (!body || asprintf(&url, "%s", src_of(s, h)->base) < 0)
			goto oom;
		r = start_request(s, h, REQ_REGISTER, "POST", url, body);
		free(url);
		return r < 0 ? r : 1;
	case PH_GET: {
		char q[64];
		snprintf(q, sizeof(q), "/instructions?timestamp=%lld", (long long)time(NULL));
		url = host_url(s, h, q);
		if (!url)
			goto oom;
		r = start_request(s, h, REQ_GET, "GET", url, NULL);
		free(url);
		return r < 0 ? r : 1;
	}
	case PH_REPLY: {
		json_t *st = json_array_get(h->steps, h->step_pos);
		const char *type = jstr(st, "step_type"), *sid = jstr(st, "step_id");
		struct dedup *d;
		char *out = NULL;
		int code = 0;

		if (!st) {
			after_steps(s, h);
			return 0;
		}
		if (!strcmp(type, "install") && !h->stages) {
			h->stages = fakehost_install_stages(json_object_get(st, "args"), &h->nstages);
			h->stage_pos = 0;
			set_state(s, h, SIM_INSTALLING);
			schedule(s, h, 0, PEND_STAGE);
		} else if (!strcmp(type, "stop-installation")) {
			h->stages = NULL;
		}
		if (fakehost_step_reply(&s->fleet, h->idx, type, json_object_get(st, "args"), &code, &out) < 0)
			goto oom;
		/* As upstream: a reply identical to the last one accepted for this step type
		 * within the hour is not sent again. */
		d = dedup_slot(h, fnv1a(type));
		h->req_out_hash = fnv1a(out) | 1;
		h->req_step_type = type;
		if (d->out_hash == h->req_out_hash && util_mono_ms() - d->at_ms < DEDUP_TTL_MS) {
			free(out);
			h->step_pos++;
			return 0;
		}
		body = dump_steal(json_pack("{s:s, s:s, s:i, s:s, s:s}", "step_type", type, "step_id", sid,
					    "exit_code", code, "output", out, "error", ""));
		free(out);
		url = host_url(s, h, "/instructions");
		if (!body || !url)
			goto oom;
		r = start_request(s, h, REQ_REPLY, "POST", url, body);
		free(url);
		return r < 0 ? r : 1;
	}
	case PH_CHECK:
		url = host_url(s, h, "");
		if (!url)
			goto oom;
		r = start_request(s, h, REQ_CHECK, "GET", url, NULL);
		free(url);
		return r < 0 ? r : 1;
	case PH_GONE:
		return 0;
	}
	return 0;
oom:
	free(url);
	free(body);
	return -ENOMEM;
}

static int stage_action(struct sim *s, struct host *h)
{
	const char *stage, *info = "";
	char *url, *body, msg[160];
	int r;

	if (!h->stages || h->stage_pos >= h->nstages)
		return 0;
	stage = h->stages[h->stage_pos];
	if (s->o->fail_at_stage && !strcmp(stage, s->o->fail_at_stage)) {
		snprintf(msg, sizeof(msg), "simulated failure at stage %s", stage);
		stage = "Failed";
		info = msg;
	}
	body = dump_steal(json_pack("{s:s, s:s}", "current_stage", stage, "progress_info", info));
	url = host_url(s, h, "/progress");
	if (!body || !url) {
		free(body);
		free(url);
		return -ENOMEM;
	}
	r = start_request(s, h, REQ_PROGRESS, "PUT", url, body);
	free(url);
	return r < 0 ? r : 1;
}

/* Look at the hub's state of an installed host, as the person who reboots it would. */
static int watch_action(struct sim *s, struct host *h)
{
	char *url = host_url(s, h, "");
	int r;

	if (!url)
		return -ENOMEM;
	r = start_request(s, h, REQ_WATCH, "GET", url, NULL);
	free(url);
	return r < 0 ? r : 1;
}

/* The host stops where it is (unbinding-pending-user-action): no more polls, no more
 * progress reports. */
static void stop_host(struct sim *s, struct host *h)
{
	h->stages = NULL;
	h->phase = PH_GONE;
	set_state(s, h, SIM_STOPPED_UPUA);
}

/* Someone rebooted the stopped host into the discovery image: a fresh boot with the same
 * id and hardware that registers at once.  What the previous boot did is forgotten and
 * its timers are void (struct timer's boot no longer matches). */
static void reboot_host(struct sim *s, struct host *h)
{
	h->boot++;
	h->pending = PEND_LOOP;
	h->phase = PH_REGISTER;
	h->rebooted = false;
	h->exit_after = false;
	h->stages = NULL;
	h->nstages = h->stage_pos = 0;
	json_decref(h->steps);
	h->steps = NULL;
	h->step_pos = 0;
	h->attempt[0] = h->attempt[1] = 0;
	h->next_secs = DEFAULT_NEXT_SECONDS;
	dedup_flush(h);
	set_state(s, h, SIM_UNREGISTERED);
	s->reboots++;
}

static void start_download(struct sim *s, struct host *h);
static int ipa_action(struct sim *s, struct host *h);

/* Start whatever the host has pending; a reboot goes first, then a progress report. */
static void run_host(struct sim *s, struct host *h)
{
	while (!h->busy && h->pending) {
		unsigned kind;
		int r;
		if (h->pending & PEND_REBOOT) {
			h->pending &= ~PEND_REBOOT;
			if (h->state == SIM_STOPPED_UPUA)
				reboot_host(s, h);
			continue;
		}
		if (h->pending & PEND_BOOT) {
			h->pending &= ~PEND_BOOT;
			start_download(s, h);
			continue;
		}
		if (h->pending & PEND_IPA) {
			kind = PEND_IPA;
			h->pending &= ~PEND_IPA;
			r = ipa_action(s, h);
			if (r < 0) {
				s->errors++;
				schedule(s, h, RETRY_MAX_MS, kind);
				return;
			}
			continue;
		}
		if (h->pending & PEND_STAGE) {
			kind = PEND_STAGE;
			h->pending &= ~PEND_STAGE;
			r = stage_action(s, h);
		} else if (h->pending & PEND_WATCH) {
			kind = PEND_WATCH;
			h->pending &= ~PEND_WATCH;
			r = h->rebooted ? watch_action(s, h) : 0;
		} else {
			kind = PEND_LOOP;
			h->pending &= ~PEND_LOOP;
			if (h->rebooted)
				continue;
			r = loop_action(s, h);
			if (r == 0 && h->phase == PH_REPLY)
				h->pending |= PEND_LOOP; /* skipped a duplicate: next step now */
		}
		if (r < 0) {
			/* Out of memory or no request slot: try the same action again later. */
			s->errors++;
			schedule(s, h, RETRY_MAX_MS, kind);
			return;
		}
	}
}

/* The request failed transiently: schedule the same action again after a jittered
 * pause, as upstream's HTTP client does.  False once the retries are spent. */
static bool retry(struct sim *s, struct host *h, unsigned kind)
{
	unsigned char *attempt = &h->attempt[kind == PEND_STAGE];
	int ms = simulate_retry_delay_ms(++*attempt, &s->rng);

	if (ms < 0) {
		*attempt = 0;
		return false;
	}
	s->retries++;
	schedule(s, h, ms, kind);
	return true;
}

static void on_register(struct sim *s, struct host *h, bool ok, bool transient, long code)
{
	if (ok) {
		if (h->state == SIM_UNREGISTERED)
			set_state(s, h, SIM_DISCOVERY);
		/* A new next-step runner starts with each registration: its reply cache is
		 * empty, and the hub forgets what the last boot reported. */
		dedup_flush(h);
		if (!h->registered && (h->registered = true) && ++s->registered == s->o->hosts)
			fprintf(stderr, "simulate: all %u hosts registered %.3f s after start (%.0f registrations/s)\n",
				s->o->hosts, since(s, s->t0),
				s->o->hosts / (since(s, s->t0) > 0.001 ? since(s, s->t0) : 0.001));
		h->phase = PH_GET;
		make_ready(s, h, PEND_LOOP);
	} else if (transient && retry(s, h, PEND_LOOP)) {
		return;
	} else if (code == 401 || code == 403 || code == 404 || code == 409) {
		/* Upstream waits forever on these: the host stops. */
		set_state(s, h, SIM_REFUSED);
		h->phase = PH_GONE;
	} else {
		schedule(s, h, REGISTER_INTERVAL_MS, PEND_LOOP);
	}
}

static void on_instructions(struct sim *s, struct host *h, bool ok, bool transient, long code)
{
	json_t *j = ok ? json_loadb(h->resp.buf, h->resp.len, 0, NULL) : NULL;
	json_t *steps = json_object_get(j, "instructions");

	if (!j) {
		dedup_flush(h); /* upstream flushes its reply cache on a GET error */
		if (transient && retry(s, h, PEND_LOOP))
			return;
		if (code == 404) {
			/* The host was deleted: the step runner exits and the agent registers
			 * again, as after "exit". */
			h->phase = PH_REGISTER;
			schedule(s, h, cap_ms(s, EXIT_FLOOR_MS), PEND_LOOP);
		} else {
			schedule(s, h, cap_ms(s, DEFAULT_NEXT_SECONDS * 1000), PEND_LOOP);
		}
		return;
	}
	set_state(s, h, simulate_state_after_instructions(h->state, j));
	h->next_secs = simulate_next_seconds(j, s->o->max_poll_seconds);
	h->exit_after = !strcmp(jstr(j, "post_step_action"), "exit");
	h->steps = json_is_array(steps) ? json_incref(steps) : json_array();
	h->step_pos = 0;
	h->phase = PH_REPLY;
	json_decref(j);
	make_ready(s, h, PEND_LOOP);
}

/* Stop the host, and with --reboot-after have it rebooted that much later. */
static void stop_or_reboot(struct sim *s, struct host *h, enum simulate_check a)
{
	stop_host(s, h);
	if (a == SIM_CHECK_REBOOT)
		schedule(s, h, (int64_t)s->o->reboot_after_seconds * 1000, PEND_REBOOT);
}

/* The host's state after "exit". */
static void on_check(struct sim *s, struct host *h, bool ok, bool transient, long code)
{
	json_t *j = ok ? json_loadb(h->resp.buf, h->resp.len, 0, NULL) : NULL;
	enum simulate_check a = simulate_check_action(false, s->o->reboot_after_seconds >= 0, code, j);
	int64_t ms = (int64_t)h->next_secs * 1000;

	json_decref(j);
	switch (a) {
	case SIM_CHECK_REGISTER:
	case SIM_CHECK_FORGET:
		h->phase = PH_REGISTER;
		schedule(s, h, cap_ms(s, ms > EXIT_FLOOR_MS ? ms : EXIT_FLOOR_MS), PEND_LOOP);
		break;
	case SIM_CHECK_STOP:
	case SIM_CHECK_REBOOT:
		stop_or_reboot(s, h, a);
		break;
	case SIM_CHECK_AGAIN:
		if (!(transient && retry(s, h, PEND_LOOP)))
			schedule(s, h, cap_ms(s, DEFAULT_NEXT_SECONDS * 1000), PEND_LOOP);
		break;
	}
}

/* An installed host's state, looked at every 10 s with --reboot-after. */
static void on_watch(struct sim *s, struct host *h, bool ok, long code)
{
	json_t *j = ok ? json_loadb(h->resp.buf, h->resp.len, 0, NULL) : NULL;
	enum simulate_check a = simulate_check_action(true, s->o->reboot_after_seconds >= 0, code, j);
	int ms;

	json_decref(j);
	if (a == SIM_CHECK_STOP || a == SIM_CHECK_REBOOT) {
		stop_or_reboot(s, h, a);
	} else if (a != SIM_CHECK_FORGET) {
		ms = simulate_watch_delay_ms(h->rebooted, s->o->reboot_after_seconds, s->o->max_poll_seconds, &s->rng);
		if (ms >= 0)
			schedule(s, h, ms, PEND_WATCH);
	}
}

static void on_reply(struct sim *s, struct host *h, bool ok, bool transient)
{
	if (ok) {
		struct dedup *d = dedup_slot(h, fnv1a(h->req_step_type));
		d->out_hash = h->req_out_hash;
		d->at_ms = util_mono_ms();
	} else if (transient && retry(s, h, PEND_LOOP)) {
		return; /* the same step again */
	}
	h->attempt[0] = 0;
	h->step_pos++;
	make_ready(s, h, PEND_LOOP);
}

static void on_progress(struct sim *s, struct host *h, bool ok, bool transient, long code)
{
	const char *stage = h->stages && h->stage_pos < h->nstages ? h->stages[h->stage_pos] : "";
	bool failed = s->o->fail_at_stage && !strcmp(stage, s->o->fail_at_stage);

	if (!ok && (transient || code >= 500)) {
		/* The same stage again: soon while retries last, then every stage period. */
		if (!retry(s, h, PEND_STAGE))
			schedule(s, h, (int64_t)(s->o->stage_seconds > 10 ? s->o->stage_seconds : 10) * 1000, PEND_STAGE);
		return;
	}
	h->attempt[1] = 0;
	if (!ok || failed) {
		/* The hub refused the stage (e.g. day-2 hosts stop at Rebooting), or we
		 * just reported the simulated failure: this host's timeline ends. */
		if (failed && ok)
			set_state(s, h, SIM_FAILED);
		if (failed && ok && h->assisted)
			bmc_ipa_step_done(s->o->bmc, h->idx, h->bmc_gen, false, "the installation failed");
		h->stages = NULL;
		return;
	}
	if (!strcmp(stage, "Rebooting")) {
		int ms = simulate_watch_delay_ms(true, s->o->reboot_after_seconds, s->o->max_poll_seconds, &s->rng);

		h->rebooted = true; /* the discovery agent does not survive the reboot */
		if (s->o->bmc)
			bmc_set_disk_installed(s->o->bmc, h->idx, true);
		if (h->assisted) {
			/* The assisted agent exited: the deploy step is done, and the hub boots
			 * the disk, where the rest of the timeline runs (bmc_apply). */
			bmc_ipa_step_done(s->o->bmc, h->idx, h->bmc_gen, true, NULL);
			h->stage_pos++;
			return;
		}
		if (ms >= 0)
			schedule(s, h, ms, PEND_WATCH);
	}
	if (++h->stage_pos < h->nstages) {
		schedule(s, h, (int64_t)s->o->stage_seconds * 1000, PEND_STAGE);
	} else {
		set_state(s, h, SIM_INSTALLED);
		h->phase = PH_GONE;
	}
}

static void on_ipa(struct sim *s, struct host *h, bool ok, long code);

static void on_done(struct sim *s, struct host *h, CURLcode cc)
{
	long code = 0;
	bool ok, transient;

	curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(s->multi, h->easy);
	if (s->npool < s->o->max_inflight)
		s->pool[s->npool++] = h->easy;
	else
		curl_easy_cleanup(h->easy);
	h->easy = NULL;
	curl_slist_free_all(h->hdrs);
	h->hdrs = NULL;
	free(h->body);
	h->body = NULL;
	h->busy = false;
	s->inflight--;
	ok = cc == CURLE_OK && code >= 200 && code < 300;
	transient = simulate_transient(cc != CURLE_OK, code);
	if (!ok)
		s->errors++;
	else
		h->attempt[h->req == REQ_PROGRESS] = 0;

	switch (h->req) {
	case REQ_REGISTER:
		on_register(s, h, ok, transient, code);
		break;
	case REQ_GET:
		on_instructions(s, h, ok, transient, code);
		break;
	case REQ_REPLY:
		on_reply(s, h, ok, transient);
		break;
	case REQ_PROGRESS:
		on_progress(s, h, ok, transient, code);
		break;
	case REQ_CHECK:
		on_check(s, h, ok, transient, code);
		break;
	case REQ_WATCH:
		on_watch(s, h, ok, code);
		break;
	case REQ_INSPECT:
	case REQ_LOOKUP:
	case REQ_HEARTBEAT:
		on_ipa(s, h, ok, code);
		break;
	case REQ_NONE:
	case REQ_N:
		break;
	}
	h->req = REQ_NONE;
	strbuf_release(&h->resp);
	strbuf_init(&h->resp, RESP_MAX);
	if (h->pending)
		make_ready(s, h, 0);
}

static void print_status(struct sim *s)
{
	char line[1024];
	size_t n = 0;
	unsigned long total = 0;

#define ADD(...) \
	do { \
		if (n < sizeof(line)) \
			n += (size_t)snprintf(line + n, sizeof(line) - n, __VA_ARGS__); \
	} while (0)
	ADD("simulate: t=%.0fs hosts=%u registered=%u", since(s, s->t0), s->o->hosts, s->registered);
	for (int i = 0; i < (s->o->bmc ? SIM_NSTATES : SIM_OFF); i++)
		ADD(" %s=%u", simulate_state_names[i], s->count[i]);
	for (int i = REQ_REGISTER; i < REQ_N; i++)
		total += s->requests[i];
	ADD(" requests=%lu", total);
	for (int i = REQ_REGISTER; i < (s->o->bmc ? REQ_N : REQ_INSPECT); i++)
		ADD(" %s=%lu", REQ_NAMES[i], s->requests[i]);
	ADD(" reboots=%lu", s->reboots);
	if (s->o->bmc)
		ADD(" boots=%lu downloads=%lu download_errors=%lu", s->boots, s->downloads, s->download_errors);
	ADD(" retries=%lu errors=%lu inflight=%u ready=%zu timers=%zu", s->retries, s->errors, s->inflight, s->flen,
	    s->nheap);
#undef ADD
	fprintf(stderr, "%s\n", line);
}

/* ---- configuration ---- */

static size_t to_file(char *data, size_t size, size_t n, void *arg)
{
	return fwrite(data, size, n, arg) * size;
}

/* What to do about a TLS failure: the hub's certificate is signed by its own
 * CA, which the system does not trust. */
static const char *tls_hint(CURLcode cc, const struct simulate_opts *o)
{
	if (cc == CURLE_PEER_FAILED_VERIFICATION && !o->cacert)
		return " (the hub's certificate is signed by its own CA: use --cacert DIR/ca.crt, "
		       "DIR being the hub's --data-dir)";
	if (cc == CURLE_PEER_FAILED_VERIFICATION)
		return " (the --cacert file is not the CA that signed the hub's certificate: use --cacert "
		       "DIR/ca.crt, DIR being the hub's --data-dir)";
	if (cc == CURLE_SSL_CACERT_BADFILE)
		return " (cannot read the --cacert file: use --cacert DIR/ca.crt, DIR being the hub's --data-dir)";
	return "";
}

int simulate_load_config(const struct simulate_opts *o, const char *source, struct fakehost_config *ret,
			 ah_err *err)
{
	char *ign = NULL;
	size_t len = 0;
	int r;

	if (o->from_ignition) {
		r = util_read_file(source, &ign, &len);
		if (r < 0)
			return ah_err_set(err, -r, 0, "", "%s: %s", source, strerror(-r));
	} else {
		char cerr[CURL_ERROR_SIZE] = "";
		const char *tmpdir = getenv("TMPDIR");
		char tpath[4096];
		int fd;
		FILE *f;
		CURL *c;
		CURLcode cc;

		snprintf(tpath, sizeof(tpath), "%s/agenthub-sim-iso-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
		fd = mkstemp(tpath);
		if (fd < 0)
			return ah_err_set(err, errno, 0, "", "%s: %s", tpath, strerror(errno));
		unlink(tpath); /* the fd keeps it alive; nothing to clean up on exit */
		f = fdopen(fd, "w+");
		c = curl_easy_init();
		if (!f || !c) {
			if (f)
				fclose(f);
			else
				close(fd);
			curl_easy_cleanup(c);
			return ah_err_set(err, ENOMEM, 0, "", "out of memory");
		}
		curl_easy_setopt(c, CURLOPT_URL, source);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, to_file);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
		curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
		curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
		curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
		if (o->insecure) {
			curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
			curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
		} else if (o->cacert) {
			curl_easy_setopt(c, CURLOPT_CAINFO, o->cacert);
		}
		cc = curl_easy_perform(c);
		curl_easy_cleanup(c);
		if (cc != CURLE_OK || fflush(f) != 0) {
			fclose(f);
			return ah_err_set(err, EIO, 0, "", "download %s: %s%s", source,
					  cerr[0] ? cerr : curl_easy_strerror(cc), tls_hint(cc, o));
		}
		r = iso_extract_ignition(fileno(f), &ign, &len, err);
		fclose(f);
		if (r < 0) {
			ah_err_prefix(err, "%s", source);
			return r;
		}
	}
	r = fakehost_config_from_ignition(ign, ret, err);
	free(ign);
	return r;
}

void simulate_opts_default(struct simulate_opts *o)
{
	*o = (struct simulate_opts){ .hosts = 1, .cpus = 8, .memory_gib = 32, .disk_gib = 120,
				     .subnet = "192.168.111.0/24", .stage_seconds = 5, .seed = 1,
				     .max_inflight = 256, .ramp_ms = 5000, .status_seconds = 10,
				     .reboot_after_seconds = -1 };
}

/* ---- the loop ---- */

static void source_free(struct source *src);

static void sim_release(struct sim *s)
{
	if (s->hosts) {
		for (unsigned i = 0; i < s->o->hosts; i++) {
			struct host *h = &s->hosts[i];
			if (h->easy) {
				if (h->busy)
					curl_multi_remove_handle(s->multi, h->easy);
				curl_easy_cleanup(h->easy);
			}
			curl_slist_free_all(h->hdrs);
			free(h->body);
			strbuf_release(&h->resp);
			json_decref(h->steps);
			if (h->dl) {
				curl_multi_remove_handle(s->multi, h->dl);
				curl_easy_cleanup(h->dl);
			}
			if (h->dlf)
				fclose(h->dlf);
			source_free(h->bsrc);
			free(h->boot_url);
			free(h->ipa_uuid);
			free(h->ipa_token);
		}
	}
	for (unsigned i = 0; i < s->npool; i++)
		curl_easy_cleanup(s->pool[i]);
	/* After every easy handle is gone: a share in use cannot be freed. */
	for (unsigned i = 0; s->hosts && i < s->o->hosts; i++)
		if (s->hosts[i].share)
			curl_share_cleanup(s->hosts[i].share);
	free(s->pool);
	if (s->multi)
		curl_multi_cleanup(s->multi);
	free(s->hosts);
	free(s->heap);
	free(s->fifo);
	for (unsigned i = 0; s->src && i < s->nsrc; i++) {
		free(s->src[i].base);
		fakehost_config_release(&s->src[i].cfg);
	}
	free(s->src);
}

/* The agent API base and CA of src, whose cfg is loaded. */
static int source_setup(struct sim *s, struct source *src, ah_err *err)
{
	const char *url;
	size_t ul;

	url = s->o->service_url ? s->o->service_url : src->cfg.service_url;
	if (!url || !src->cfg.infra_env_id)
		return 0; /* a deploy ramdisk: only the ironic agent runs */
	ul = strlen(url);
	while (ul > 0 && url[ul - 1] == '/')
		ul--;
	if (asprintf(&src->base, "%.*s/api/assisted-install/v2/infra-envs/%s/hosts", (int)ul, url,
		     src->cfg.infra_env_id) < 0) {
		src->base = NULL;
		return ah_err_set(err, ENOMEM, 0, "", "out of memory");
	}
	if (src->cfg.ca_pem) {
		src->ca_blob.data = src->cfg.ca_pem;
		src->ca_blob.len = strlen(src->cfg.ca_pem);
		src->ca_blob.flags = CURL_BLOB_NOCOPY;
	}
	return 0;
}

static int load_source(struct sim *s, struct source *src, const char *source, ah_err *err)
{
	int r = simulate_load_config(s->o, source, &src->cfg, err);

	return r < 0 ? r : source_setup(s, src, err);
}

/* ---- machines behind the BMC ---- */

static void source_free(struct source *src)
{
	if (!src)
		return;
	free(src->base);
	fakehost_config_release(&src->cfg);
	free(src);
}

static void drop_download(struct sim *s, struct host *h)
{
	if (!h->dl)
		return;
	curl_multi_remove_handle(s->multi, h->dl);
	curl_easy_cleanup(h->dl);
	h->dl = NULL;
	if (h->dlf)
		fclose(h->dlf);
	h->dlf = NULL;
	s->ndownloads--;
}

/* The power went off (or the machine is reset): whatever it was doing stops at once,
 * its request and download are aborted and its timers void.  The rest of an install
 * timeline past Rebooting is kept: the installed system resumes it if it boots again. */
static void power_cut(struct sim *s, struct host *h)
{
	if (h->busy) {
		curl_multi_remove_handle(s->multi, h->easy);
		if (s->npool < s->o->max_inflight)
			s->pool[s->npool++] = h->easy;
		else
			curl_easy_cleanup(h->easy);
		h->easy = NULL;
		curl_slist_free_all(h->hdrs);
		h->hdrs = NULL;
		free(h->body);
		h->body = NULL;
		h->busy = false;
		s->inflight--;
		h->req = REQ_NONE;
		strbuf_release(&h->resp);
		strbuf_init(&h->resp, RESP_MAX);
	}
	drop_download(s, h);
	h->boot++;
	h->pending = 0;
	h->phase = PH_GONE;
	h->exit_after = false;
	json_decref(h->steps);
	h->steps = NULL;
	h->step_pos = 0;
	h->attempt[0] = h->attempt[1] = 0;
	h->next_secs = DEFAULT_NEXT_SECONDS;
	dedup_flush(h);
	if (!(h->rebooted && h->stages && h->stage_pos < h->nstages)) {
		h->stages = NULL;
		h->nstages = h->stage_pos = 0;
		source_free(h->bsrc);
		h->bsrc = NULL;
	}
	/* else the installed system reports the rest of the timeline to the hub the
	 * image it was installed from named: its source stays. */
	free(h->boot_url);
	h->boot_url = NULL;
	h->boot_tries = 0;
	h->ipa = h->assisted = false;
	h->ipa_phase = IPA_NONE;
	h->ipa_tries = 0;
	free(h->ipa_uuid);
	h->ipa_uuid = NULL;
	if (h->ipa_token)
		explicit_bzero(h->ipa_token, strlen(h->ipa_token));
	free(h->ipa_token);
	h->ipa_token = NULL;
}

/* The ironic agent's next request (converged flow). */
static int ipa_action(struct sim *s, struct host *h)
{
	struct source *src = src_of(s, h);
	const char *api = src->cfg.ipa_api_url;
	size_t al = strlen(api);
	char mac[18], *url = NULL, *body = NULL;
	enum req kind;
	int r;

	while (al > 0 && api[al - 1] == '/')
		al--;
	fakehost_mac(&s->fleet, h->idx, mac);
	switch (h->ipa_phase) {
	case IPA_INSPECT: {
		json_t *inv = fakehost_ipa_inventory(&s->fleet, h->idx);
		if (!inv)
			return -ENOMEM;
		body = dump_steal(json_pack("{s:O, s:s, s:O, s:{s:[s], s:[]}}", "inventory", inv, "boot_interface",
					    mac, "root_disk", json_array_get(json_object_get(inv, "disks"), 0),
					    "configuration", "collectors", "default", "managers"));
		json_decref(inv);
		url = strdup(src->cfg.ipa_inspection_url);
		kind = REQ_INSPECT;
		break;
	}
	case IPA_LOOKUP:
		if (asprintf(&url, "%.*s/v1/lookup?addresses=%s", (int)al, api, mac) < 0)
			url = NULL;
		kind = REQ_LOOKUP;
		break;
	case IPA_HEARTBEAT: {
		char cb[512];
		snprintf(cb, sizeof(cb), "%s/%s", s->o->ipa_callback ? s->o->ipa_callback : "", h->id);
		body = dump_steal(json_pack("{s:s, s:s, s:s}", "callback_url", cb, "agent_token",
					    h->ipa_token ? h->ipa_token : "", "agent_version", "agenthub-simulated"));
		if (asprintf(&url, "%.*s/v1/heartbeat/%s", (int)al, api, h->ipa_uuid) < 0)
			url = NULL;
		kind = REQ_HEARTBEAT;
		break;
	}
	default:
		return 0;
	}
	if (!url || (h->ipa_phase != IPA_LOOKUP && !body)) {
		free(url);
		free(body);
		return -ENOMEM;
	}
	r = start_request(s, h, kind, body ? "POST" : "GET", url, body);
	free(url);
	return r < 0 ? r : 1;
}

static void on_ipa(struct sim *s, struct host *h, bool ok, long code)
{
	json_t *j = NULL;
	int64_t ms;

	switch (h->ipa_phase) {
	case IPA_INSPECT:
		/* As the agent does: a failed inspection is logged and the agent goes on. */
		if (!ok && ++h->ipa_tries < 3) {
			schedule(s, h, 10000, PEND_IPA);
			return;
		}
		if (!ok)
			fprintf(stderr, "simulate: machine %s: inspection data refused (HTTP %ld)\n", h->id, code);
		h->ipa_tries = 0;
		h->ipa_phase = IPA_LOOKUP;
		make_ready(s, h, PEND_IPA);
		return;
	case IPA_LOOKUP: {
		const char *uuid, *token;
		json_int_t hb;

		j = ok ? json_loadb(h->resp.buf, h->resp.len, 0, NULL) : NULL;
		uuid = json_string_value(json_object_get(json_object_get(j, "node"), "uuid"));
		if (!uuid || !*uuid || strlen(uuid) > 64 || strpbrk(uuid, "/?#% ")) {
			/* Not found yet (or not a node): look again, backing off to 30 s. */
			ms = 5000LL << (h->ipa_tries < 3 ? h->ipa_tries++ : 3);
			schedule(s, h, cap_ms(s, ms > 30000 ? 30000 : ms), PEND_IPA);
			json_decref(j);
			return;
		}
		token = json_string_value(json_object_get(json_object_get(j, "config"), "agent_token"));
		hb = json_integer_value(json_object_get(json_object_get(j, "config"), "heartbeat_timeout"));
		h->ipa_uuid = strdup(uuid);
		h->ipa_token = token ? strdup(token) : NULL;
		h->hb_secs = hb > 0 && hb <= 3600 ? (unsigned)hb : IPA_DEFAULT_HEARTBEAT;
		json_decref(j);
		if (!h->ipa_uuid) {
			s->errors++;
			schedule(s, h, RETRY_MAX_MS, PEND_IPA);
			return;
		}
		bmc_ipa_begin(s->o->bmc, h->idx, h->bmc_gen, h->ipa_token);
		h->ipa_tries = 0;
		h->ipa_phase = IPA_HEARTBEAT;
		make_ready(s, h, PEND_IPA);
		return;
	}
	case IPA_HEARTBEAT:
		/* Every 0.3-0.6 heartbeat_timeout, as the agent; sooner after a conflict or
		 * an error. */
		if (ok)
			ms = (int64_t)h->hb_secs * (300 + (int64_t)(xorshift(&s->rng) % 301));
		else
			ms = 5000;
		ms = cap_ms(s, ms);
		schedule(s, h, ms < 1000 ? 1000 : ms, PEND_IPA);
		return;
	default:
		return;
	}
}

/* A disk written by the ironic agent's write_image boots: cloud-init style, the
 * config drive's user_data runs.  An Ignition that starts the assisted agent (a
 * discovery Ignition, as CAPOA's bootstrap data is) makes the machine a discovery
 * host of that InfraEnv; anything else boots an OS that runs no agent.  The meta_data
 * the node's configdrive-metadata.service would export (METADATA_NAME,
 * METADATA_LOCAL_HOSTNAME, METADATA_UUID, ...) is logged. */
static void boot_config_drive(struct sim *s, struct host *h, const char *user_data, const char *meta_data)
{
	struct source *src = calloc(1, sizeof(*src));
	json_t *md = meta_data ? json_loads(meta_data, 0, NULL) : NULL;
	ah_err err = { 0 };
	int r;

	fprintf(stderr, "simulate: machine %s boots its disk; config drive meta_data: METADATA_NAME=%s "
		"METADATA_LOCAL_HOSTNAME=%s METADATA_UUID=%s\n", h->id, jstr(md, "name") ? jstr(md, "name") : "",
		jstr(md, "local-hostname") ? jstr(md, "local-hostname") : "", jstr(md, "uuid") ? jstr(md, "uuid") : "");
	json_decref(md);
	r = src ? fakehost_config_from_ignition(user_data, &src->cfg, &err) : -ENOMEM;
	if (r >= 0 && !src->cfg.infra_env_id)
		r = ah_err_set(&err, EINVAL, 0, "", "it starts no assisted agent");
	if (r >= 0)
		r = source_setup(s, src, &err);
	if (r < 0) {
		fprintf(stderr, "simulate: machine %s: the config drive's user_data runs no discovery agent (%s)\n",
			h->id, err.message);
		if (src && r != -ENOMEM)
			source_free(src);
		else
			free(src);
		return;
	}
	source_free(h->bsrc);
	h->bsrc = src;
	h->rebooted = false;
	h->stages = NULL;
	h->nstages = h->stage_pos = 0;
	h->phase = PH_REGISTER;
	set_state(s, h, SIM_UNREGISTERED);
	make_ready(s, h, PEND_LOOP);
}

/* Machine h's BMC changed its power: apply what it now runs. */
static void bmc_apply(struct sim *s, struct host *h)
{
	struct bmc_power p;

	if (bmc_machine_power(s->o->bmc, h->idx, &p) < 0) {
		s->errors++;
		return;
	}
	if (p.gen == h->bmc_gen) {
		/* The same boot: the ironic agent's deploy step may have started. */
		if (p.start_assisted && h->ipa && !h->assisted) {
			h->assisted = true;
			h->phase = PH_REGISTER;
			set_state(s, h, SIM_UNREGISTERED);
			make_ready(s, h, PEND_LOOP);
		}
		free(p.image);
		free(p.disk_user_data);
		free(p.disk_meta_data);
		return;
	}
	h->bmc_gen = p.gen;
	power_cut(s, h);
	if (!p.on) {
		set_state(s, h, SIM_OFF);
		free(p.image);
		free(p.disk_user_data);
		free(p.disk_meta_data);
		return;
	}
	s->boots++;
	switch (p.boot) {
	case BMC_BOOT_CD:
		h->boot_url = p.image;
		p.image = NULL;
		h->rebooted = false;
		h->stages = NULL;
		h->nstages = h->stage_pos = 0;
		set_state(s, h, SIM_BOOTING);
		make_ready(s, h, PEND_BOOT);
		break;
	case BMC_BOOT_HDD:
		h->rebooted = true; /* no agent on the installed system */
		set_state(s, h, SIM_DISK);
		if (h->stages && h->stage_pos < h->nstages) {
			set_state(s, h, SIM_INSTALLING);
			schedule(s, h, (int64_t)s->o->stage_seconds * 1000, PEND_STAGE);
		} else if (p.disk_user_data) {
			boot_config_drive(s, h, p.disk_user_data, p.disk_meta_data);
		}
		break;
	case BMC_BOOT_NONE:
		set_state(s, h, SIM_NOBOOT);
		break;
	}
	free(p.image);
	free(p.disk_user_data);
	free(p.disk_meta_data);
}

static void start_download(struct sim *s, struct host *h)
{
	const char *tmpdir = getenv("TMPDIR");
	char tpath[4096];
	int fd;

	if (!h->boot_url || h->dl)
		return;
	if (s->ndownloads >= SIMULATE_MAX_DOWNLOADS) {
		schedule(s, h, 500, PEND_BOOT);
		return;
	}
	snprintf(tpath, sizeof(tpath), "%s/agenthub-sim-iso-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	fd = mkstemp(tpath);
	if (fd >= 0) {
		unlink(tpath); /* the fd keeps it alive */
		h->dlf = fdopen(fd, "w+");
		if (!h->dlf)
			close(fd);
	}
	h->dl = h->dlf ? curl_easy_init() : NULL;
	if (!h->dl) {
		if (h->dlf)
			fclose(h->dlf);
		h->dlf = NULL;
		s->errors++;
		schedule(s, h, BOOT_RETRY_MS, PEND_BOOT);
		return;
	}
	curl_easy_setopt(h->dl, CURLOPT_URL, h->boot_url);
	curl_easy_setopt(h->dl, CURLOPT_WRITEFUNCTION, to_file);
	curl_easy_setopt(h->dl, CURLOPT_WRITEDATA, h->dlf);
	curl_easy_setopt(h->dl, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(h->dl, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h->dl, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h->dl, CURLOPT_PRIVATE, h);
	curl_easy_setopt(h->dl, CURLOPT_CONNECTTIMEOUT, 15L);
	curl_easy_setopt(h->dl, CURLOPT_TIMEOUT, 600L);
	curl_easy_setopt(h->dl, CURLOPT_NOSIGNAL, 1L);
	if (s->o->insecure) {
		curl_easy_setopt(h->dl, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h->dl, CURLOPT_SSL_VERIFYHOST, 0L);
	} else if (s->o->cacert) {
		curl_easy_setopt(h->dl, CURLOPT_CAINFO, s->o->cacert);
	}
	if (curl_multi_add_handle(s->multi, h->dl) != CURLM_OK) {
		curl_easy_cleanup(h->dl);
		h->dl = NULL;
		fclose(h->dlf);
		h->dlf = NULL;
		s->errors++;
		schedule(s, h, BOOT_RETRY_MS, PEND_BOOT);
		return;
	}
	s->ndownloads++;
	s->downloads++;
	h->boot_tries++;
}

/* The image arrived (or not): boot the discovery host it configures, try again, or give
 * up and sit with nothing to boot, as firmware does when the media cannot be read. */
static void on_download(struct sim *s, struct host *h, CURLcode cc)
{
	long code = 0;
	ah_err err = { 0 };
	char *ign = NULL;
	size_t len = 0;
	struct source *src = NULL;
	int r = -EIO;

	curl_easy_getinfo(h->dl, CURLINFO_RESPONSE_CODE, &code);
	curl_multi_remove_handle(s->multi, h->dl);
	curl_easy_cleanup(h->dl);
	h->dl = NULL;
	s->ndownloads--;
	if (cc != CURLE_OK || fflush(h->dlf) != 0) {
		ah_err_set(&err, EIO, 0, "", "download: %s (HTTP %ld)", curl_easy_strerror(cc), code);
	} else {
		r = iso_extract_ignition(fileno(h->dlf), &ign, &len, &err);
		if (r >= 0 && !(src = calloc(1, sizeof(*src))))
			r = ah_err_set(&err, ENOMEM, 0, "", "out of memory");
		if (r >= 0)
			r = fakehost_config_from_ignition(ign, &src->cfg, &err);
		if (r >= 0)
			r = source_setup(s, src, &err);
	}
	fclose(h->dlf);
	h->dlf = NULL;
	free(ign);
	if (r < 0) {
		source_free(src);
		s->download_errors++;
		fprintf(stderr, "simulate: machine %s cannot boot %s: %s%s\n", h->id, h->boot_url, err.message,
			h->boot_tries < BOOT_TRIES ? " (trying again)" : "; nothing to boot");
		if (h->boot_tries < BOOT_TRIES) {
			schedule(s, h, BOOT_RETRY_MS, PEND_BOOT);
		} else {
			free(h->boot_url);
			h->boot_url = NULL;
			set_state(s, h, SIM_NOBOOT);
		}
		return;
	}
	source_free(h->bsrc); /* a timeline kept past a reboot is over */
	h->bsrc = src;
	if (src->cfg.ipa_api_url) {
		/* The ironic agent runs; the assisted agent waits for its deploy step. */
		h->ipa = true;
		h->ipa_phase = src->cfg.ipa_inspection_url ? IPA_INSPECT : IPA_LOOKUP;
		set_state(s, h, SIM_IPA);
		make_ready(s, h, PEND_IPA);
		return;
	}
	h->phase = PH_REGISTER;
	set_state(s, h, SIM_UNREGISTERED);
	make_ready(s, h, PEND_LOOP);
}

static void wake_loop(void *multi)
{
	curl_multi_wakeup(multi);
}

int simulate_run(const struct simulate_opts *o, ah_err *err)
{
	struct sim s = { .o = o, .rng = o->seed * 0x9e3779b97f4a7c15ull + 1 };
	struct sigaction sa = { .sa_handler = on_signal };
	int64_t next_status, deadline, start;
	int r;

	if (o->hosts == 0 || o->max_inflight == 0)
		return ah_err_set(err, EINVAL, 0, "", "--hosts and the request limit must be positive");
	if (o->nsources == 0 && !o->bmc)
		return ah_err_set(err, EINVAL, 0, "", "no discovery ISO (--iso) or Ignition (--ignition) given");
	if (o->bmc && (o->nsources || bmc_count(o->bmc) != o->hosts || o->reboot_after_seconds >= 0))
		return ah_err_set(err, EINVAL, 0, "", "with a BMC the machines boot what it gives them: no --iso, "
				  "--ignition or --reboot-after, and one BMC system per host");
	{
		/* Every host's connection is a file descriptor. */
		struct rlimit rl;
		rlim_t need = (rlim_t)(o->shared_connections ? o->max_inflight : o->hosts) + 64;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need)
			return ah_err_set(err, EMFILE, 0, "",
					  "%u hosts need about %llu open files, the limit is %llu (raise ulimit -n, "
					  "or use --shared-connections)",
					  o->hosts, (unsigned long long)need, (unsigned long long)rl.rlim_cur);
	}
	r = fakehost_fleet_init(&s.fleet, o->seed, o->hosts, o->cpus, o->memory_gib, o->disk_gib, o->subnet, err);
	if (r < 0)
		return r;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return ah_err_set(err, EIO, 0, "", "libcurl initialisation failed");
	s.src = calloc(o->nsources, sizeof(*s.src));
	if (!s.src) {
		r = ah_err_set(err, ENOMEM, 0, "", "out of memory");
		goto out;
	}
	for (; s.nsrc < o->nsources; s.nsrc++) {
		r = load_source(&s, &s.src[s.nsrc], o->sources[s.nsrc], err);
		if (r < 0) {
			s.nsrc++; /* release what this one holds too */
			goto out;
		}
	}
	s.hosts = calloc(o->hosts, sizeof(*s.hosts));
	s.fifo = calloc(o->hosts, sizeof(*s.fifo));
	s.pool = calloc(o->max_inflight, sizeof(*s.pool));
	s.multi = curl_multi_init();
	if (!s.hosts || !s.fifo || !s.pool || !s.multi) {
		r = ah_err_set(err, ENOMEM, 0, "", "out of memory");
		goto out;
	}
	curl_multi_setopt(s.multi, CURLMOPT_MAXCONNECTS, (long)o->max_inflight);
	s.count[o->bmc ? SIM_OFF : SIM_UNREGISTERED] = o->hosts;
	start = util_mono_ms();
	for (unsigned i = 0; i < o->hosts; i++) {
		struct host *h = &s.hosts[i];
		h->idx = i;
		fakehost_host_id(&s.fleet, i, h->id);
		strbuf_init(&h->resp, RESP_MAX);
		h->next_secs = DEFAULT_NEXT_SECONDS;
		if (o->bmc) {
			h->state = SIM_OFF;
			h->phase = PH_GONE;
			continue; /* off until the BMC powers it on */
		}
		/* Spread the boots over ramp_ms, as a rack powering on would. */
		if (heap_push(&s, start + (int64_t)((uint64_t)i * o->ramp_ms / o->hosts), i, PEND_LOOP) < 0) {
			r = ah_err_set(err, ENOMEM, 0, "", "out of memory");
			goto out;
		}
	}
	if (o->bmc) {
		fprintf(stderr, "simulate: %u machines, powered off, waiting for their BMC\n", o->hosts);
		bmc_set_wake(o->bmc, wake_loop, s.multi);
	} else if (o->nsources == 1)
		fprintf(stderr, "simulate: %u hosts against %s (infra-env %s)\n", o->hosts, s.src[0].base,
			s.src[0].cfg.infra_env_id);
	else
		fprintf(stderr, "simulate: %u hosts from %u discovery images (host i boots image i %% %u)\n",
			o->hosts, o->nsources, o->nsources);

	stop_requested = status_requested = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	s.t0 = util_mono_ms();
	next_status = s.t0 + (int64_t)(o->status_seconds ? o->status_seconds : 10) * 1000;
	deadline = o->duration_seconds ? s.t0 + (int64_t)o->duration_seconds * 1000 : 0;
	while (!stop_requested) {
		int64_t now = util_mono_ms();
		int running, msgs, wait;
		long ctimeout = -1;
		CURLMsg *m;

		if (deadline && now >= deadline)
			break;
		if (o->bmc) {
			unsigned idx[256];
			size_t k;

			while ((k = bmc_take_changed(o->bmc, idx, 256)) > 0)
				for (size_t i = 0; i < k; i++)
					bmc_apply(&s, &s.hosts[idx[i]]);
		}
		while (s.nheap && s.heap[0].due <= now) {
			struct timer t = heap_pop(&s);
			if (t.boot == (s.hosts[t.host].boot & BOOT_MASK))
				make_ready(&s, &s.hosts[t.host], t.kind);
		}
		while (s.flen && s.inflight < o->max_inflight) {
			struct host *h = &s.hosts[s.fifo[s.fhead]];
			s.fhead = (s.fhead + 1) % o->hosts;
			s.flen--;
			h->queued = false;
			run_host(&s, h);
		}
		curl_multi_perform(s.multi, &running);
		while ((m = curl_multi_info_read(s.multi, &msgs))) {
			struct host *h = NULL;
			if (m->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&h);
			if (h->dl == m->easy_handle)
				on_download(&s, h, m->data.result);
			else
				on_done(&s, h, m->data.result);
		}
		if (status_requested) {
			status_requested = 0;
			print_status(&s);
		}
		if (now >= next_status) {
			print_status(&s);
			next_status = now + (int64_t)(o->status_seconds ? o->status_seconds : 10) * 1000;
		}
		wait = 1000;
		if (s.nheap && s.heap[0].due - now < wait)
			wait = (int)(s.heap[0].due - now);
		if (s.flen && s.inflight < o->max_inflight)
			wait = 0;
		curl_multi_timeout(s.multi, &ctimeout);
		if (ctimeout >= 0 && ctimeout < wait)
			wait = (int)ctimeout;
		if (wait < 0)
			wait = 0;
		curl_multi_poll(s.multi, NULL, 0, wait, NULL);
	}
	print_status(&s);
	r = 0;
out:
	if (o->bmc)
		bmc_set_wake(o->bmc, NULL, NULL);
	sim_release(&s);
	curl_global_cleanup();
	return r;
}
