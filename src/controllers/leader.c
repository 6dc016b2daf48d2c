/* leader.c - leader election through a Lease in the store (see leader.h). */
#include "controllers/leader.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "kube/registry.h"
#include "store/store.h"

/* The session lock (store_session_lock_*): the guard thread checks it
 * every LOCK_CHECK_S with a LOCK_TIMEOUT_MS deadline; a leader whose last
 * proof of holding it is older than LOCK_STALE_S has lost.  A replica that
 * took the lock over from a live-looking holder waits LOCK_FENCE_S before it
 * writes the Lease: by then a leader whose session ended has noticed (at
 * most LOCK_STALE_S after its last proof) and stopped. */
#define LOCK_CHECK_S 1.0
#define LOCK_TIMEOUT_MS 1000
#define LOCK_STALE_S 3.0
#define LOCK_FENCE_S 5.0

struct leader {
	struct kube_api *api;
	const struct kube_kind *k;
	struct leader_config cfg;
	char *ns, *name, *identity;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	bool stop;
	_Atomic bool leading;
	/* What this process last saw of the record, and when (monotonic). */
	char seen[512];
	double seen_at;
	double renewed_at;      /* monotonic time of our last successful renew */
	bool kick;              /* wake the elector before its period ends */

	/* The session lock, when the store has them (PostgreSQL); NULL:
	 * the Lease alone decides.  lk_mu serialises its connection. */
	store_session_lock *lk;
	pthread_mutex_t lk_mu;
	pthread_t guard;
	bool guard_started;
	_Atomic bool lock_held;
	_Atomic double lock_at;         /* monotonic time it was taken */
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* MicroTime as the API writes it: 2006-01-02T15:04:05.000000Z. */
static void micro_now(char *buf, size_t n)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, n, "%.19s.%06dZ", s, (int)(ts.tv_nsec / 1000) % 1000000);
}

static const char *spec_str(const json_t *lease, const char *k)
{
	return json_string_value(json_object_get(json_object_get(lease, "spec"), k));
}

static json_t *lease_body(struct leader *l, const json_t *old, bool release)
{
	char now[64];
	const char *holder = old ? spec_str(old, "holderIdentity") : NULL;
	const char *acquire = old ? spec_str(old, "acquireTime") : NULL;
	json_int_t transitions = old ? json_integer_value(json_object_get(json_object_get(old, "spec"),
									 "leaseTransitions")) : 0;
	bool ours = holder && strcmp(holder, l->identity) == 0;
	json_t *b;

	micro_now(now, sizeof(now));
	if (!ours && !release) {
		if (holder && *holder)
			transitions++;
		acquire = now;
	}
	b = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:i,s:s,s:s,s:I}}",
		      "apiVersion", "coordination.k8s.io/v1", "kind", "Lease",
		      "metadata", "name", l->name, "namespace", l->ns,
		      "spec", "holderIdentity", release ? "" : l->identity,
		      "leaseDurationSeconds", release ? 1 : l->cfg.lease_s,
		      "acquireTime", acquire ? acquire : now, "renewTime", now,
		      "leaseTransitions", transitions);
	if (b && old) {
		const char *rv = json_string_value(json_object_get(json_object_get(old, "metadata"),
								   "resourceVersion"));

		json_object_set_new(json_object_get(b, "metadata"), "resourceVersion",
				    json_string(rv ? rv : ""));
	}
	return b;
}

/* One round: 1 when we hold the Lease after it, 0 when another does, < 0
 * when the store could not be read or written.  With a session lock, only
 * its holder writes the Lease; it takes the Lease from another holder at
 * once when that holder released it, else LOCK_FENCE_S after it took the
 * lock (the old holder's session ended: it is dead or has stopped).  One
 * that does not hold the lock only watches; when the Lease has not been
 * renewed for a whole lease duration the lock's holder is connected but not
 * alive (stopped, hung): its session is ended so the lock frees. */
static int try_acquire_or_renew(struct leader *l)
{
	json_t *old = NULL, *b, *ret = NULL;
	ah_err err = { 0 };
	char seen[512];
	const char *holder;
	int r;

	r = kube_get(l->api, l->k, l->ns, l->name, &old, &err);
	if (r == -ENOENT) {
		if (l->lk && !atomic_load(&l->lock_held))
			return 0;
		b = lease_body(l, NULL, false);
		r = b ? kube_create(l->api, l->k, l->ns, b, NULL, &ret, &err) : -ENOMEM;
		json_decref(b);
		json_decref(ret);
		return r == 0 ? 1 : r == -EEXIST ? 0 : r;
	}
	if (r < 0)
		return r;
	holder = spec_str(old, "holderIdentity");
	snprintf(seen, sizeof(seen), "%s|%s", holder ? holder : "",
		 spec_str(old, "renewTime") ? spec_str(old, "renewTime") : "");
	if (strcmp(seen, l->seen) != 0) {
		snprintf(l->seen, sizeof(l->seen), "%s", seen);
		l->seen_at = mono();
	}
	if (l->lk && !atomic_load(&l->lock_held)) {
		json_int_t dur = json_integer_value(json_object_get(json_object_get(old, "spec"),
								    "leaseDurationSeconds"));

		if (dur <= 0)
			dur = l->cfg.lease_s;
		if (holder && *holder && strcmp(holder, l->identity) != 0 &&
		    mono() - l->seen_at >= (double)dur + l->cfg.retry_s) {
			log_warn("leader election: Lease %s/%s not renewed by %s for %d s; ending its database session",
				 l->ns, l->name, holder, (int)dur);
			pthread_mutex_lock(&l->lk_mu);
			store_session_lock_break(l->lk, LOCK_TIMEOUT_MS);
			pthread_mutex_unlock(&l->lk_mu);
			l->seen_at = mono();
		}
		json_decref(old);
		return 0;
	}
	if (holder && *holder && strcmp(holder, l->identity) != 0) {
		json_int_t dur = json_integer_value(json_object_get(json_object_get(old, "spec"),
								    "leaseDurationSeconds"));

		if (dur <= 0)
			dur = l->cfg.lease_s;
		if (l->lk ? mono() - atomic_load(&l->lock_at) < LOCK_FENCE_S
			  : mono() - l->seen_at < (double)dur) {
			json_decref(old);
			return 0;       /* held, and alive as far as we can tell */
		}
	}
	b = lease_body(l, old, false);
	json_decref(old);
	r = b ? kube_update(l->api, l->k, l->ns, l->name, b, NULL, &ret, &err) : -ENOMEM;
	json_decref(b);
	json_decref(ret);
	if (r == 0)
		return 1;
	/* Someone else wrote it first (409): not ours this round. */
	return err.status == 409 ? 0 : r;
}

static void *elector_main(void *arg)
{
	struct leader *l = arg;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		double period = l->cfg.retry_s;
		struct timespec until;
		int r;

		pthread_mutex_unlock(&l->mu);
		r = try_acquire_or_renew(l);
		/* Holding the lock, waiting out the fence: look again when it ends. */
		if (r == 0 && l->lk && atomic_load(&l->lock_held)) {
			double left = atomic_load(&l->lock_at) + LOCK_FENCE_S - mono() + 0.05;

			if (left < period)
				period = left > 0.05 ? left : 0.05;
		}
		if (r == 1 && l->lk && !atomic_load(&l->lock_held)) {
			/* The lock went while the Lease was written: the guard
			 * ends this leadership, or never lets it start. */
			r = 0;
		}
		if (r == 1) {
			l->renewed_at = mono();
			if (!atomic_exchange(&l->leading, true)) {
				log_info("leader election: %s now holds Lease %s/%s; starting the controllers",
					 l->identity, l->ns, l->name);
				l->cfg.started(l->cfg.ctx);
			}
		} else if (atomic_load(&l->leading) &&
			   (r == 0 || mono() - l->renewed_at >= l->cfg.renew_s)) {
			log_error("leader election lost: %s could not renew Lease %s/%s within %d s",
				  l->identity, l->ns, l->name, l->cfg.renew_s);
			atomic_store(&l->leading, false);
			l->cfg.lost(l->cfg.ctx);
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)period;
		until.tv_nsec += (long)((period - (double)(time_t)period) * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&l->mu);
		while (!l->stop && !l->kick && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
			;
		l->kick = false;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

static void lock_lost(struct leader *l, const char *why)
{
	if (atomic_exchange(&l->leading, false)) {
		log_error("leader election lost: %s %s", l->identity, why);
		l->cfg.lost(l->cfg.ctx);
	}
}

/* The session lock's own thread, so that a Lease write stuck behind a slow
 * store never delays the proof that this replica may still lead. */
static void *guard_main(void *arg)
{
	struct leader *l = arg;
	double last_ok = 0;

	pthread_mutex_lock(&l->mu);
	while (!l->stop) {
		struct timespec until;
		double now;
		int r;

		pthread_mutex_unlock(&l->mu);
		if (atomic_load(&l->leading) && mono() - last_ok > LOCK_STALE_S)
			lock_lost(l, "could not prove it holds its database session lock in time");
		pthread_mutex_lock(&l->lk_mu);
		r = store_session_lock_try(l->lk, LOCK_TIMEOUT_MS);
		pthread_mutex_unlock(&l->lk_mu);
		now = mono();
		if (r == 1) {
			if (!atomic_load(&l->lock_held)) {
				atomic_store(&l->lock_at, now);
				atomic_store(&l->lock_held, true);
				log_info("leader election: %s holds the database session lock", l->identity);
				pthread_mutex_lock(&l->mu);
				l->kick = true;
				pthread_cond_broadcast(&l->cond);
				pthread_mutex_unlock(&l->mu);
			}
			last_ok = now;
		} else {
			atomic_store(&l->lock_held, false);
			if (r < 0 && !atomic_load(&l->leading))
				log_debug("leader election: the database session lock: %s", strerror(-r));
			if (r < 0)
				lock_lost(l, "lost its database session (and with it the session lock)");
			else
				lock_lost(l, "no longer holds the database session lock");
		}
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += (time_t)LOCK_CHECK_S;
		pthread_mutex_lock(&l->mu);
		while (!l->stop && pthread_cond_timedwait(&l->cond, &l->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&l->mu);
	return NULL;
}

int leader_start(struct kube_api *api, const struct leader_config *cfg, struct leader **ret)
{
	struct leader *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;

	if (!l)
		return -ENOMEM;
	l->api = api;
	l->cfg = *cfg;
	if (l->cfg.lease_s <= 0)
		l->cfg.lease_s = 15;
	if (l->cfg.renew_s <= 0)
		l->cfg.renew_s = 10;
	if (l->cfg.retry_s <= 0)
		l->cfg.retry_s = 2;
	l->k = kube_registry_by_kind(kube_api_registry(api), "coordination.k8s.io/v1", "Lease");
	l->ns = strdup(cfg->ns);
	l->name = strdup(cfg->name);
	l->identity = strdup(cfg->identity);
	l->seen_at = mono();
	if (l->k && l->name) {
		int r = store_session_lock_new(kube_api_store(api), l->name, &l->lk);

		if (r < 0 && r != -ENOTSUP) {
			free(l->ns);
			free(l->name);
			free(l->identity);
			free(l);
			return r;
		}
	}
	if (!l->k || !l->ns || !l->name || !l->identity) {
		int r = l->k ? -ENOMEM : -ENOENT;

		store_session_lock_free(l->lk);
		free(l->ns);
		free(l->name);
		free(l->identity);
		free(l);
		return r;
	}
	pthread_mutex_init(&l->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&l->lk_mu, NULL);
	if (l->lk) {
		if (pthread_create(&l->guard, NULL, guard_main, l) != 0) {
			pthread_mutex_destroy(&l->mu);
			pthread_mutex_destroy(&l->lk_mu);
			pthread_cond_destroy(&l->cond);
			store_session_lock_free(l->lk);
			free(l->ns);
			free(l->name);
			free(l->identity);
			free(l);
			return -ENOMEM;
		}
		l->guard_started = true;
	}
	if (pthread_create(&l->thread, NULL, elector_main, l) != 0) {
		pthread_mutex_lock(&l->mu);
		l->stop = true;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->mu);
		if (l->guard_started)
			pthread_join(l->guard, NULL);
		store_session_lock_free(l->lk);
		pthread_mutex_destroy(&l->lk_mu);
		pthread_mutex_destroy(&l->mu);
		pthread_cond_destroy(&l->cond);
		free(l->ns);
		free(l->name);
		free(l->identity);
		free(l);
		return -ENOMEM;
	}
	*ret = l;
	return 0;
}

bool leader_is_leader(struct leader *l)
{
	return l && atomic_load(&l->leading);
}

void leader_stop(struct leader *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->mu);
	l->stop = true;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mu);
	pthread_join(l->thread, NULL);
	if (l->guard_started)
		pthread_join(l->guard, NULL);
	if (atomic_load(&l->leading)) {
		json_t *old = NULL, *b, *ret = NULL;
		ah_err err;
		const char *holder;

		/* Give it up so that another replica need not wait it out. */
		if (kube_get(l->api, l->k, l->ns, l->name, &old, &err) == 0 &&
		    (holder = spec_str(old, "holderIdentity")) && strcmp(holder, l->identity) == 0 &&
		    (b = lease_body(l, old, true))) {
			kube_update(l->api, l->k, l->ns, l->name, b, NULL, &ret, &err);
			json_decref(b);
			json_decref(ret);
		}
		json_decref(old);
	}
	/* After the Lease is given up: the lock's release lets the next
	 * replica take the Lease at once. */
	store_session_lock_free(l->lk);
	pthread_mutex_destroy(&l->lk_mu);
	pthread_mutex_destroy(&l->mu);
	pthread_cond_destroy(&l->cond);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l);
}
