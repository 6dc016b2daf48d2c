/* evlimit.h - upstream's per-entity event rate limits (backend.md §8,
 * EVENT_RATE_LIMITS): an event whose name has a limit is dropped when an
 * event of the same name about the same entity (the same cluster_id,
 * host_id and infra_env_id) was recorded less than the limit ago.  Only
 * recorded events count: a dropped one does not extend the window, so a
 * flapping host yields one event per window.
 *
 * The defaults are upstream's: upgrade_agent_started, upgrade_agent_finished
 * and upgrade_agent_failed at one hour.  EVENT_RATE_LIMITS text
 * ({"event_name": "Go duration", ...}) overrides or adds names.
 *
 * Memory is bounded: at most max_entries (name, entity) pairs are
 * remembered; past that the oldest admission is forgotten first (which at
 * worst lets one extra event of that entity through).  Pairs of names
 * without a limit are never stored.  Thread-safe. */
#ifndef AH_CONTROLLERS_EVLIMIT_H
#define AH_CONTROLLERS_EVLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define EV_LIMITER_ENTRIES_DEFAULT 65536

struct ev_limiter;

/* A limiter with upstream's default limits.  max_entries 0 = the default.
 * *ret owned by the caller, freed with ev_limiter_free().  0 or -ENOMEM. */
int ev_limiter_new(size_t max_entries, struct ev_limiter **ret);
void ev_limiter_free(struct ev_limiter *l);

/* Merge EVENT_RATE_LIMITS text over the limits (NULL or "" = no change).
 * 0, or -EINVAL with err naming the problem ("EVENT_RATE_LIMITS: invalid
 * duration for event 'x': ..."); on error nothing is changed.  Call before
 * the limiter is shared between threads. */
int ev_limiter_configure(struct ev_limiter *l, const char *json_text, ah_err *err);

/* The limit of an event name in milliseconds, 0 = none. */
int64_t ev_limiter_limit_ms(const struct ev_limiter *l, const char *name);

/* The configured limits as one line ("upgrade_agent_failed=1h0m0s ...")
 * for the start-up log; "" when none.  Writes at most size bytes. */
void ev_limiter_describe(const struct ev_limiter *l, char *buf, size_t size);

/* Whether an event may be recorded at now_ms (any monotonic or wall clock,
 * the same for every call); when it may and its name has a limit, its time
 * is remembered.  NULL ids are "none".  A NULL limiter allows everything. */
bool ev_limiter_allow(struct ev_limiter *l, const char *name, const char *cluster_id, const char *host_id,
		      const char *infra_env_id, int64_t now_ms);

/* Pairs remembered now (tests). */
size_t ev_limiter_size(struct ev_limiter *l);

#endif
