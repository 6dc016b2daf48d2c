/* events.c - the upstream events (backend.md §8) as Kubernetes Events (the
 * endpoint that serves them is api/events.c).
 *
 * One event is one v1 Event in the namespace of the object it is about, so
 * `kubectl get events` shows it; the upstream fields (name, ids, severity,
 * category, props, event_time) ride along in one annotation, which the
 * events endpoint serves.  The Event's name is the involved object's name
 * plus a hash of what makes the event distinct, so a repeat finds its Event
 * and bumps its count, as the kubelet's event recorder does.  Events are
 * owned by the object they are about and go with it, and there is a cap on
 * distinct Events per object: the store never grows without bound.
 *
 * Recording never fails its caller: a state write is what matters, and an
 * event that cannot be stored is logged and dropped. */
#include "hub-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"

#define EVENTTOKEN_RESOURCE "agenthub.internal.eventtokens"
#define EVENT_MESSAGE_MAX 4096
#define EVENT_UPDATE_RETRIES 4
/* Distinct Events one object may collect in this process's lifetime;
 * repeats of an existing one are always counted. */
#define EVENTS_PER_OBJECT_MAX 1000
/* Objects the cap remembers before it starts over (a safety net, not a ledger). */
#define EVENTS_CAP_OBJECTS_MAX 100000

static const char *jstr(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* --- pure helpers ----------------------------------------------------------- */

/* Upstream's GetEventSeverityFromHostStatus: warning for disconnected,
 * insufficient and installing-pending-user-action (not their -unbound
 * forms), error for error, info otherwise. */
const char *hub_event_host_status_severity(const char *state)
{
	static const char *const warn[] = { "disconnected", "insufficient", "installing-pending-user-action", NULL };
	size_t i;

	if (!state)
		return HUB_EV_INFO;
	if (strcmp(state, "error") == 0)
		return HUB_EV_ERROR;
	for (i = 0; warn[i]; i++)
		if (strcmp(state, warn[i]) == 0)
			return HUB_EV_WARNING;
	return HUB_EV_INFO;
}

/* "host_status_updated" -> "HostStatusUpdated": a Kubernetes-style reason. */
static void reason_of(const char *name, char *buf, size_t size)
{
	size_t n = 0;
	bool up = true;

	if (!name || !*name)
		name = "agenthub_event";
	for (; *name && n + 1 < size; name++) {
		if (*name == '_' || *name == '-' || *name == '.') {
			up = true;
			continue;
		}
		buf[n++] = up && *name >= 'a' && *name <= 'z' ? (char)(*name - 'a' + 'A') : *name;
		up = false;
	}
	buf[n] = '\0';
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	if (!s)
		s = "";
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	/* A separator, so ("ab","c") and ("a","bc") differ. */
	h ^= 0xff;
	h *= 1099511628211ULL;
	return h;
}

/* "2024-04-30T20:47:57.256Z", the precision upstream's event_time has. */
static void now_ms(char *buf, size_t size)
{
	struct timeval tv;
	struct tm tm;
	size_t n;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n && n < size)
		snprintf(buf + n, size - n, ".%03uZ", (unsigned)(tv.tv_usec / 1000) % 1000u);
}

static bool severity_valid(const char *s)
{
	return streq(s, HUB_EV_INFO) || streq(s, HUB_EV_WARNING) || streq(s, HUB_EV_ERROR) ||
	       streq(s, HUB_EV_CRITICAL);
}

/* --- the per-object cap ------------------------------------------------------- */

static pthread_mutex_t cap_lock = PTHREAD_MUTEX_INITIALIZER;
static json_t *cap_counts; /* involved key -> distinct Events created */

static bool cap_take(const char *key)
{
	json_int_t n;

	pthread_mutex_lock(&cap_lock);
	if (cap_counts && json_object_size(cap_counts) >= EVENTS_CAP_OBJECTS_MAX) {
		json_decref(cap_counts);
		cap_counts = NULL;
	}
	if (!cap_counts)
		cap_counts = json_object();
	n = json_integer_value(json_object_get(cap_counts, key));
	if (n <= EVENTS_PER_OBJECT_MAX)
		json_object_set_new(cap_counts, key, json_integer(n + 1));
	pthread_mutex_unlock(&cap_lock);
	if (n == EVENTS_PER_OBJECT_MAX)
		log_warn("events: %s has %d distinct events; dropping new ones", key, EVENTS_PER_OBJECT_MAX);
	return n < EVENTS_PER_OBJECT_MAX;
}

/* --- the recorder's set-up ------------------------------------------------------ */

int hub_events_init(struct hub *h, ah_err *err)
{
	char limits[1024];
	int r = ev_limiter_new(0, &h->ev_limiter);

	if (r < 0)
		return ah_err_set(err, -r, 500, "InternalError", "events: %s", strerror(-r));
	r = ev_limiter_configure(h->ev_limiter, h->cfg.event_rate_limits, err);
	if (r < 0)
		return r;
	/* At debug level, as upstream's logCurrentLimits. */
	ev_limiter_describe(h->ev_limiter, limits, sizeof(limits));
	log_debug("event rate limits: %s", *limits ? limits : "none");
	return 0;
}

void hub_events_release(struct hub *h)
{
	ev_limiter_free(h->ev_limiter);
	h->ev_limiter = NULL;
}

/* --- recording ---------------------------------------------------------------- */

void hub_event_ref_object(const json_t *obj, struct hub_event_ref *ret)
{
	const json_t *meta = json_object_get(obj, "metadata");

	memset(ret, 0, sizeof(*ret));
	ret->ns = jstr(meta, "namespace");
	ret->name = jstr(meta, "name");
	ret->uid = jstr(meta, "uid");
	ret->kind = jstr(obj, "kind");
	ret->api_version = jstr(obj, "apiVersion");
	if (streq(ret->kind, "InfraEnv"))
		ret->infra_env_id = ret->uid;
}

void hub_event_ref_agent(const json_t *agent, const char *cluster_id, struct hub_event_ref *ret)
{
	const json_t *owners = json_object_get(json_object_get(agent, "metadata"), "ownerReferences"), *o;
	size_t i;

	hub_event_ref_object(agent, ret);
	if (!ret->kind)
		ret->kind = "Agent";
	ret->host_id = ret->name;
	ret->cluster_id = cluster_id && *cluster_id ? cluster_id : NULL;
	json_array_foreach(owners, i, o)
		if (streq(jstr(o, "kind"), "InfraEnv"))
			ret->infra_env_id = jstr(o, "uid");
}

/* The upstream view of an event, as the annotation keeps it. */
static json_t *upstream_event(const struct hub_event_ref *ref, const char *severity, const char *name,
			      const char *category, const json_t *props, const char *msg, const char *when)
{
	json_t *ev = json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", name ? name : "", "severity", severity,
			       "category", category, "message", msg, "event_time", when);

	if (!ev)
		return NULL;
	if (ref->cluster_id && *ref->cluster_id)
		json_object_set_new(ev, "cluster_id", json_string(ref->cluster_id));
	if (ref->host_id && *ref->host_id)
		json_object_set_new(ev, "host_id", json_string(ref->host_id));
	if (ref->infra_env_id && *ref->infra_env_id)
		json_object_set_new(ev, "infra_env_id", json_string(ref->infra_env_id));
	if (json_is_object(props)) {
		char *p = json_dumps(props, JSON_COMPACT | JSON_SORT_KEYS);

		if (p)
			json_object_set_new(ev, "props", json_string(p));
		free(p);
	}
	return ev;
}

static json_t *new_event_object(struct hub *h, const struct hub_event_ref *ref, const char *objname,
				const char *severity, const char *name, const char *msg, const json_t *up,
				const char *now)
{
	char reason[128], *ann = json_dumps(up, JSON_COMPACT);
	const char *api_version = ref->api_version;
	json_t *ev, *involved;

	if (!ann)
		return NULL;
	if (!api_version) {
		const struct kube_kind *k = NULL;
		const char *groups[] = { "agent-install.openshift.io/v1beta1", "extensions.hive.openshift.io/v1beta1",
					 "hive.openshift.io/v1", "metal3.io/v1alpha1", "v1", NULL };
		size_t i;

		for (i = 0; groups[i] && !k; i++)
			k = kube_registry_by_kind(h->reg, groups[i], ref->kind);
		api_version = k ? k->api_version : "v1";
	}
	reason_of(name, reason, sizeof(reason));
	involved = json_pack("{s:s,s:s,s:s,s:s}", "apiVersion", api_version, "kind", ref->kind, "name", ref->name,
			     "namespace", ref->ns);
	if (ref->uid)
		json_object_set_new(involved, "uid", json_string(ref->uid));
	ev = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:o,s:s,s:s,s:s,s:{s:s},s:s,s:s,s:s,s:i}",
		       "apiVersion", "v1", "kind", "Event",
		       "metadata", "name", objname, "namespace", ref->ns, "annotations", HUB_EVENT_ANNOTATION, ann,
		       "involvedObject", involved,
		       "reason", reason, "message", msg,
		       "type", streq(severity, HUB_EV_INFO) ? "Normal" : "Warning",
		       "source", "component", "agenthub",
		       "reportingComponent", "agenthub",
		       "firstTimestamp", now, "lastTimestamp", now, "count", 1);
	free(ann);
	/* Owned by the object it is about, so it goes when the object goes. */
	if (ev && ref->uid)
		json_object_set_new(json_object_get(ev, "metadata"), "ownerReferences",
				    json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", api_version, "kind", ref->kind,
					      "name", ref->name, "uid", ref->uid));
	return ev;
}

/* A repeat: count + 1, the new times; compare-and-swap on resourceVersion. */
static int bump_event(struct hub *h, const struct kube_kind *k, const char *ns, const char *objname,
		      const char *now, const char *when, ah_err *err)
{
	int attempt, r = -ESTALE;

	for (attempt = 0; attempt < EVENT_UPDATE_RETRIES && r == -ESTALE; attempt++) {
		json_t *cur = NULL, *ret = NULL, *ann, *up;
		const char *text;

		r = kube_get(h->api, k, ns, objname, &cur, err);
		if (r < 0)
			return r;
		ann = json_object_get(json_object_get(cur, "metadata"), "annotations");
		text = jstr(ann, HUB_EVENT_ANNOTATION);
		up = text ? json_loads(text, 0, NULL) : NULL;
		if (json_is_object(up)) {
			char *s;

			json_object_set_new(up, "event_time", json_string(when));
			s = json_dumps(up, JSON_COMPACT);
			if (s)
				json_object_set_new(ann, HUB_EVENT_ANNOTATION, json_string(s));
			free(s);
		}
		json_decref(up);
		json_object_set_new(cur, "count", json_integer(json_integer_value(json_object_get(cur, "count")) + 1));
		json_object_set_new(cur, "lastTimestamp", json_string(now));
		r = kube_update(h->api, k, ns, objname, cur, NULL, &ret, err);
		json_decref(cur);
		json_decref(ret);
	}
	return r;
}

static void record(struct hub *h, const struct hub_event_ref *ref, const char *severity, const char *name,
		   const char *category, const json_t *props, const char *msg)
{
	const struct kube_kind *k = kube_registry_by_kind(h->reg, "v1", "Event");
	char objname[256], when[40], now[32], capkey[600];
	json_t *up, *ev, *ret = NULL;
	uint64_t hash = 1469598103934665603ULL;
	ah_err err;
	int r;

	if (!k || !ref || !ref->ns || !*ref->ns || !ref->kind || !ref->name || !*ref->name) {
		log_warn("events: dropping an event without its object: %s", msg);
		return;
	}
	if (!severity_valid(severity))
		severity = HUB_EV_INFO;
	if (!category || !*category)
		category = "user";
	/* EVENT_RATE_LIMITS, per entity as upstream.  Logged at debug only: a
	 * flapping host would otherwise flood the log instead of the events. */
	if (!ev_limiter_allow(h->ev_limiter, name, ref->cluster_id, ref->host_id, ref->infra_env_id, util_mono_ms())) {
		log_debug("events: event will be discarded: name=%s limit=%llds host_id=%s cluster_id=%s "
			  "infra_env_id=%s", name, (long long)(ev_limiter_limit_ms(h->ev_limiter, name) / 1000),
			  ref->host_id ? ref->host_id : "", ref->cluster_id ? ref->cluster_id : "",
			  ref->infra_env_id ? ref->infra_env_id : "");
		return;
	}
	/* What makes two events the same one. */
	hash = fnv1a(hash, ref->kind);
	hash = fnv1a(hash, ref->name);
	hash = fnv1a(hash, ref->uid);
	hash = fnv1a(hash, name);
	hash = fnv1a(hash, severity);
	hash = fnv1a(hash, category);
	hash = fnv1a(hash, ref->cluster_id);
	hash = fnv1a(hash, ref->host_id);
	hash = fnv1a(hash, ref->infra_env_id);
	hash = fnv1a(hash, msg);
	snprintf(objname, sizeof(objname), "%.200s.%016llx", ref->name, (unsigned long long)hash);
	now_ms(when, sizeof(when));
	util_now_rfc3339(now, sizeof(now));
	up = upstream_event(ref, severity, name, category, props, msg, when);
	ev = up ? new_event_object(h, ref, objname, severity, name, msg, up, now) : NULL;
	json_decref(up);
	if (!ev) {
		log_warn("events: out of memory recording an event for %s/%s", ref->ns, ref->name);
		return;
	}
	ah_err_clear(&err);
	r = kube_get(h->api, k, ref->ns, objname, &ret, &err);
	json_decref(ret);
	if (r == -ENOENT) {
		snprintf(capkey, sizeof(capkey), "%s/%s/%s/%s", ref->ns, ref->kind, ref->name, ref->uid ? ref->uid : "");
		if (!cap_take(capkey)) {
			json_decref(ev);
			return;
		}
		ret = NULL;
		r = kube_create(h->api, k, ref->ns, ev, NULL, &ret, &err);
		json_decref(ret);
		/* Created by a concurrent recorder of the same event: count it. */
		if (r == -EEXIST)
			r = bump_event(h, k, ref->ns, objname, now, when, &err);
	} else if (r == 0) {
		r = bump_event(h, k, ref->ns, objname, now, when, &err);
	}
	json_decref(ev);
	/* A namespace going away refuses new Events: expected, not a problem. */
	if (r < 0 && (err.status == 403 || err.status == 404))
		log_debug("events: %s/%s %s: not recorded: %s", ref->ns, ref->name, name ? name : "", err.message);
	else if (r < 0)
		log_warn("events: %s/%s %s: not recorded: %s", ref->ns, ref->name, name ? name : "", err.message);
}

static void vrecord(struct hub *h, const struct hub_event_ref *ref, const char *severity, const char *name,
		    const char *category, const json_t *props, const char *fmt, va_list ap)
{
	char *msg = malloc(EVENT_MESSAGE_MAX + 1);

	if (!msg) {
		log_warn("events: out of memory");
		return;
	}
	vsnprintf(msg, EVENT_MESSAGE_MAX + 1, fmt, ap);
	record(h, ref, severity, name, category, props, msg);
	free(msg);
}

void hub_event(struct hub *h, const struct hub_event_ref *ref, const char *severity, const char *name,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(h, ref, severity, name, NULL, NULL, fmt, ap);
	va_end(ap);
}

void hub_event_props(struct hub *h, const struct hub_event_ref *ref, const char *severity, const char *name,
		     const char *category, const json_t *props, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vrecord(h, ref, severity, name, category, props, fmt, ap);
	va_end(ap);
}

void hub_event_host_status(struct hub *h, const struct hub_event_ref *ref, const char *hostname,
			   const char *src, const char *dst, const char *info)
{
	/* A new host has no previous status: its registration is the event. */
	if (!src || !*src || !dst || !*dst || streq(src, dst))
		return;
	/* Upstream's "... to {new_status} {info}" with info "(<status_info>)",
	 * or "" (and the space kept) when there is none. */
	hub_event(h, ref, hub_event_host_status_severity(dst), "host_status_updated",
		  "Host %s: updated status from %s to %s %s%s%s",
		  hostname && *hostname ? hostname : (ref && ref->host_id ? ref->host_id : ""), src, dst,
		  info && *info ? "(" : "", info ? info : "", info && *info ? ")" : "");
}

/* Upstream's GetHostnameForMsg: the requested hostname, else the
 * inventory's, else the host id. */
void hub_event_host_name(const json_t *host, char *buf, size_t size)
{
	const json_t *inv = json_object_get(host, "inventory");
	const char *name = jstr(host, "requested_hostname");
	json_t *parsed = NULL;

	if ((!name || !*name) && json_is_string(inv)) {
		parsed = json_loads(json_string_value(inv), 0, NULL);
		name = jstr(parsed, "hostname");
	} else if (!name || !*name) {
		name = jstr(inv, "hostname");
	}
	snprintf(buf, size, "%s", name && *name ? name : (jstr(host, "id") ? jstr(host, "id") : ""));
	json_decref(parsed);
}

/* validationsInfo (an object, or its JSON text) as {id: status}. */
static json_t *validation_statuses(const json_t *vi)
{
	json_t *parsed = json_is_string(vi) ? json_loads(json_string_value(vi), 0, NULL) : json_incref((json_t *)vi);
	json_t *out = json_object(), *list, *v;
	const char *cat;
	size_t i;

	json_object_foreach(parsed, cat, list)
		json_array_foreach(list, i, v)
			if (jstr(v, "id") && jstr(v, "status"))
				json_object_set_new(out, jstr(v, "id"), json_string(jstr(v, "status")));
	json_decref(parsed);
	return out;
}

void hub_host_events(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *old_status = json_object_get(agent, "status");
	const char *old = jstr(json_object_get(old_status, "debugInfo"), "state");
	const char *now = jstr(host, "status"), *cid = jstr(host, "cluster_id");
	struct hub_event_ref ref;
	char name[256];

	if (!now)
		return;
	hub_event_ref_agent(agent, cid && *cid && strcmp(cid, "bound") != 0 ? cid : NULL, &ref);
	hub_event_host_name(host, name, sizeof(name));
	/* A host's first state is its registration (upstream's new row). */
	if (!old || !*old) {
		hub_event(h, &ref, HUB_EV_INFO, "host_registration_succeeded", "Host %s: Successfully registered", name);
		return;
	}
	/* Validations whose status changed, before the status (upstream
	 * reports them before it runs the state machine); only those that had
	 * a status before. */
	if (json_object_get(host, "validations_info")) {
		json_t *was = validation_statuses(json_object_get(old_status, "validationsInfo"));
		json_t *is = validation_statuses(json_object_get(host, "validations_info"));
		const char *id;
		json_t *v;

		json_object_foreach(is, id, v) {
			const char *prev = json_string_value(json_object_get(was, id)), *cur = json_string_value(v);

			if (!prev || streq(prev, cur))
				continue;
			if (streq(cur, "failure"))
				hub_event(h, &ref, HUB_EV_WARNING, "host_validation_failed", "Host %s: validation '%s' %s",
					  name, id, streq(prev, "success") ? "that used to succeed is now failing" : "failed");
			else if (streq(cur, "success") && streq(prev, "failure"))
				hub_event(h, &ref, HUB_EV_INFO, "host_validation_fixed",
					  "Host %s: validation '%s' is now fixed", name, id);
		}
		json_decref(was);
		json_decref(is);
	}
	hub_event_host_status(h, &ref, name, old, now, jstr(host, "status_info"));
	/* Late binding (upstream's BindHost / UnbindHost): after the status
	 * change the move made. */
	if (streq(now, "binding") && !streq(old, "binding") && ref.cluster_id)
		hub_event(h, &ref, HUB_EV_INFO, "host_bind_succeeded", "Host %s: Successfully bound to cluster %s", name,
			  ref.cluster_id);
	else if ((streq(now, "unbinding") || streq(now, "unbinding-pending-user-action")) &&
		 !streq(old, "unbinding") && !streq(old, "unbinding-pending-user-action"))
		hub_event(h, &ref, HUB_EV_INFO, "host_unbind_succeeded", "Host %s: Successfully unbound from cluster", name);
}

static void host_ref(const json_t *agent, const json_t *host, struct hub_event_ref *ref)
{
	const char *cid = jstr(host, "cluster_id");

	hub_event_ref_agent(agent, cid && *cid && strcmp(cid, "bound") != 0 ? cid : NULL, ref);
}

void hub_host_progress_event(struct hub *h, const json_t *agent, const json_t *host)
{
	const json_t *p = json_object_get(host, "progress");
	const char *info = jstr(p, "progress_info");
	struct hub_event_ref ref;
	char name[256];

	host_ref(agent, host, &ref);
	hub_event_host_name(host, name, sizeof(name));
	hub_event(h, &ref, HUB_EV_INFO, "host_install_progress_updated", "Host: %s, reached installation stage %s%s%s",
		  name, jstr(p, "current_stage") ? jstr(p, "current_stage") : "", info && *info ? ": " : "",
		  info ? info : "");
}

void hub_host_media_event(struct hub *h, const json_t *agent, const json_t *host)
{
	struct hub_event_ref ref;

	host_ref(agent, host, &ref);
	hub_event(h, &ref, HUB_EV_ERROR, "host_media_disconnected", "%s",
		  "Unable to read from the discovery media. It was either disconnected or poor network conditions "
		  "prevented it from being read. Try using the minimal ISO option and be sure to keep the media "
		  "connected until the installation is completed");
}

void hub_host_cancel_event(struct hub *h, const json_t *agent, const json_t *host)
{
	struct hub_event_ref ref;
	char name[256];

	host_ref(agent, host, &ref);
	hub_event_host_name(host, name, sizeof(name));
	hub_event(h, &ref, HUB_EV_INFO, "host_installation_cancelled", "Installation cancelled for host %s", name);
}

void hub_cluster_event(struct hub *h, const json_t *aci, const char *severity, const char *name, const char *msg)
{
	struct hub_event_ref ref;

	hub_event_ref_object(aci, &ref);
	ref.cluster_id = ref.uid;
	hub_event(h, &ref, severity, name, "%s", msg);
}

void hub_event_cluster_status(struct hub *h, const struct hub_event_ref *ref, const char *src,
			      const char *dst, const char *info)
{
	json_t *props;

	if (!src || !*src || !dst || !*dst || streq(src, dst))
		return;
	props = json_pack("{s:s,s:s}", "status", dst, "status_info", info ? info : "");
	hub_event_props(h, ref, HUB_EV_INFO, "cluster_status_updated", NULL, props,
			"Updated status of the cluster to %s", dst);
	json_decref(props);
}

/* --- URLs ----------------------------------------------------------------------- */

/* The cluster's URL token: minted once and kept, as ECDSA signatures differ
 * every time and the eventsURL must not. */
static int cluster_token(struct hub *h, const char *cluster_id, char **ret, ah_err *err)
{
	store_obj *so = NULL;
	json_t *claims, *st;
	char *tok = NULL, *text;
	int r, attempt;

	for (attempt = 0; attempt < 2; attempt++) {
		if (store_get(h->store, EVENTTOKEN_RESOURCE, "", cluster_id, &so) == 0) {
			st = json_loadb(so->json, so->len, 0, NULL);
			store_obj_free(so);
			if (jstr(st, "token")) {
				*ret = strdup(jstr(st, "token"));
				json_decref(st);
				return *ret ? 0 : -ENOMEM;
			}
			json_decref(st);
		}
		claims = json_pack("{s:s}", "cluster_id", cluster_id);
		r = claims ? jwt_sign(h->keys, claims, &tok) : -ENOMEM;
		json_decref(claims);
		if (r < 0)
			return ah_err_set(err, r, 500, "InternalError", "signing the cluster token failed");
		st = json_pack("{s:s}", "token", tok);
		text = st ? json_dumps(st, JSON_COMPACT) : NULL;
		json_decref(st);
		if (!text) {
			free(tok);
			return -ENOMEM;
		}
		{
			struct text_render tr = { text };

			r = store_create(h->store, EVENTTOKEN_RESOURCE, "", cluster_id, hub_render_text, &tr, NULL);
		}
		free(text);
		if (r == 0) {
			*ret = tok;
			return 0;
		}
		free(tok);
		tok = NULL;
		if (r != -EEXIST)
			return ah_err_set(err, r, 500, "InternalError", "storing the cluster token failed");
		/* Another thread minted it first: read theirs. */
	}
	return ah_err_set(err, EAGAIN, 500, "InternalError", "the cluster token could not be read");
}

static int make_url(char **ret, const char *base, const char *token, const char *key, const char *id)
{
	size_t n = strlen(base) + strlen(API_PREFIX) + strlen(token) + strlen(key) + strlen(id) + 32;
	char *s = malloc(n);

	if (!s)
		return -ENOMEM;
	/* Query keys in sorted order, as upstream's url.Values encodes them. */
	snprintf(s, n, "%s" API_PREFIX "/events?api_key=%s&%s=%s", base, token, key, id);
	*ret = s;
	return 0;
}

int hub_cluster_events_url(struct hub *h, const char *cluster_id, char **ret, ah_err *err)
{
	char *tok = NULL;
	int r;

	if (!cluster_id || !*cluster_id || strlen(cluster_id) > 128)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "cluster_id: a cluster id is required");
	r = cluster_token(h, cluster_id, &tok, err);
	if (r < 0)
		return r;
	r = make_url(ret, h->service_url, tok, "cluster_id", cluster_id);
	free(tok);
	return r;
}

int hub_host_events_url(struct hub *h, const json_t *infraenv, const char *host_id, char **ret, ah_err *err)
{
	char *tok = NULL;
	int r;

	if (!host_id || !*host_id)
		return ah_err_set(err, EINVAL, 400, "BadRequest", "host_id: a host id is required");
	r = hub_infraenv_token(h, infraenv, &tok, err);
	if (r < 0)
		return r;
	r = make_url(ret, h->service_url, tok, "host_id", host_id);
	free(tok);
	return r;
}
