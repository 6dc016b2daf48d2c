/* evlimit.c - per-entity event rate limits (see evlimit.h).
 *
 * Upstream asks its events table whether an event of the same name and
 * entity is younger than the limit; the hub keeps the time of the last
 * admitted one per (name, entity) in a hash table instead, with the
 * entries also on a list in admission order so that the oldest can be
 * dropped when the table is full. */
#include "controllers/evlimit.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/progress.h"

#define EVL_NAME_MAX 128
#define EVL_LIMITS_MAX 256

struct evl_limit {
	char name[EVL_NAME_MAX];
	int64_t ms;
};

struct evl_entry {
	char *key;                        /* name \x1f cluster \x1f host \x1f infra-env */
	int64_t at_ms;                    /* when the last admitted event was recorded */
	int64_t limit_ms;
	struct evl_entry *hnext;          /* bucket chain */
	struct evl_entry *prev, *next;    /* admission order, oldest first */
};

struct ev_limiter {
	pthread_mutex_t lock;
	struct evl_limit limits[EVL_LIMITS_MAX];
	size_t n_limits;
	struct evl_entry **buckets;
	size_t nbuckets, count, max_entries;
	struct evl_entry *head, *tail;
};

static const struct evl_limit defaults[] = {
	{ "upgrade_agent_failed", 3600 * 1000 },
	{ "upgrade_agent_finished", 3600 * 1000 },
	{ "upgrade_agent_started", 3600 * 1000 },
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

int ev_limiter_new(size_t max_entries, struct ev_limiter **ret)
{
	struct ev_limiter *l = calloc(1, sizeof(*l));
	size_t i;

	if (!l)
		return -ENOMEM;
	l->max_entries = max_entries ? max_entries : EV_LIMITER_ENTRIES_DEFAULT;
	/* About one entry a bucket when full; a power of two. */
	for (l->nbuckets = 64; l->nbuckets < l->max_entries && l->nbuckets < (1u << 20); l->nbuckets <<= 1)
		;
	l->buckets = calloc(l->nbuckets, sizeof(*l->buckets));
	if (!l->buckets) {
		free(l);
		return -ENOMEM;
	}
	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		l->limits[l->n_limits++] = defaults[i];
	pthread_mutex_init(&l->lock, NULL);
	*ret = l;
	return 0;
}

static void entry_unlink(struct ev_limiter *l, struct evl_entry *e)
{
	struct evl_entry **pp = &l->buckets[hash_str(e->key) & (l->nbuckets - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	if (e->prev)
		e->prev->next = e->next;
	else
		l->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		l->tail = e->prev;
	l->count--;
}

static void entry_free(struct evl_entry *e)
{
	free(e->key);
	free(e);
}

void ev_limiter_free(struct ev_limiter *l)
{
	struct evl_entry *e, *n;

	if (!l)
		return;
	for (e = l->head; e; e = n) {
		n = e->next;
		entry_free(e);
	}
	free(l->buckets);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static struct evl_limit *limit_find(const struct ev_limiter *l, const char *name)
{
	size_t i;

	for (i = 0; name && i < l->n_limits; i++)
		if (strcmp(l->limits[i].name, name) == 0)
			return (struct evl_limit *)&l->limits[i];
	return NULL;
}

int ev_limiter_configure(struct ev_limiter *l, const char *json_text, ah_err *err)
{
	struct evl_limit next[EVL_LIMITS_MAX];
	size_t n = l->n_limits, i;
	json_error_t jerr;
	const char *name;
	json_t *obj, *v;

	if (!json_text || !*json_text)
		return 0;
	obj = json_loads(json_text, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(obj)) {
		json_decref(obj);
		return ah_err_set(err, EINVAL, 400, "BadRequest",
				  "EVENT_RATE_LIMITS: failed to parse EVENT_RATE_LIMITS json: %s",
				  obj ? "expected an object of event name to duration" : jerr.text);
	}
	memcpy(next, l->limits, n * sizeof(next[0]));
	json_object_foreach(obj, name, v) {
		int64_t s;

		if (!json_is_string(v) || host_parse_duration(json_string_value(v), &s) < 0) {
			ah_err_set(err, EINVAL, 400, "BadRequest",
				   "EVENT_RATE_LIMITS: invalid duration for event '%.100s': %.100s (expected a Go "
				   "duration such as \"30m\" or \"1h30m\")",
				   name, json_is_string(v) ? json_string_value(v) : "not a string");
			json_decref(obj);
			return -EINVAL;
		}
		if (!*name || strlen(name) >= EVL_NAME_MAX) {
			ah_err_set(err, EINVAL, 400, "BadRequest",
				   "EVENT_RATE_LIMITS: event name '%.100s' must have 1 to %d characters", name,
				   EVL_NAME_MAX - 1);
			json_decref(obj);
			return -EINVAL;
		}
		for (i = 0; i < n && strcmp(next[i].name, name) != 0; i++)
			;
		if (i == n) {
			if (n == EVL_LIMITS_MAX) {
				json_decref(obj);
				return ah_err_set(err, EINVAL, 400, "BadRequest",
						  "EVENT_RATE_LIMITS: at most %d event names", EVL_LIMITS_MAX);
			}
			snprintf(next[n].name, sizeof(next[n].name), "%s", name);
			n++;
		}
		next[i].ms = s * 1000;
	}
	json_decref(obj);
	memcpy(l->limits, next, n * sizeof(next[0]));
	l->n_limits = n;
	return 0;
}

int64_t ev_limiter_limit_ms(const struct ev_limiter *l, const char *name)
{
	const struct evl_limit *lim = l ? limit_find(l, name) : NULL;

	return lim ? lim->ms : 0;
}

void ev_limiter_describe(const struct ev_limiter *l, char *buf, size_t size)
{
	size_t i, off = 0;

	if (!size)
		return;
	buf[0] = '\0';
	for (i = 0; l && i < l->n_limits && off + 1 < size; i++) {
		char d[32];
		int w;

		if (l->limits[i].ms <= 0)
			continue;
		host_format_duration(l->limits[i].ms / 1000, d, sizeof(d));
		w = snprintf(buf + off, size - off, "%s%s=%s", off ? " " : "", l->limits[i].name, d);
		if (w < 0)
			break;
		off += (size_t)w < size - off ? (size_t)w : size - off - 1;
	}
}

bool ev_limiter_allow(struct ev_limiter *l, const char *name, const char *cluster_id, const char *host_id,
		      const char *infra_env_id, int64_t now_ms)
{
	struct evl_entry *e, **slot;
	int64_t limit;
	size_t klen;
	char *key;
	bool ok = true;

	if (!l || !name || (limit = ev_limiter_limit_ms(l, name)) <= 0)
		return true;
	klen = strlen(name) + 4 + (cluster_id ? strlen(cluster_id) : 0) + (host_id ? strlen(host_id) : 0) +
	       (infra_env_id ? strlen(infra_env_id) : 0);
	key = malloc(klen);
	/* Out of memory: let the event through rather than lose it. */
	if (!key)
		return true;
	snprintf(key, klen, "%s\x1f%s\x1f%s\x1f%s", name, cluster_id ? cluster_id : "", host_id ? host_id : "",
		 infra_env_id ? infra_env_id : "");
	pthread_mutex_lock(&l->lock);
	slot = &l->buckets[hash_str(key) & (l->nbuckets - 1)];
	for (e = *slot; e && strcmp(e->key, key) != 0; e = e->hnext)
		;
	if (e && now_ms - e->at_ms < limit) {
		ok = false;
	} else if (e) {
		/* Admitted again: it moves to the young end. */
		entry_unlink(l, e);
		e->at_ms = now_ms;
		e->limit_ms = limit;
	} else {
		e = calloc(1, sizeof(*e));
		if (e) {
			e->key = key;
			key = NULL;
			e->at_ms = now_ms;
			e->limit_ms = limit;
		}
	}
	if (ok && e) {
		/* Full: forget the oldest admission first. */
		while (l->count >= l->max_entries && l->head) {
			struct evl_entry *old = l->head;

			entry_unlink(l, old);
			entry_free(old);
		}
		slot = &l->buckets[hash_str(e->key) & (l->nbuckets - 1)];
		e->hnext = *slot;
		*slot = e;
		e->prev = l->tail;
		e->next = NULL;
		if (l->tail)
			l->tail->next = e;
		else
			l->head = e;
		l->tail = e;
		l->count++;
	}
	/* Expired entries at the old end are of no more use. */
	while (l->head && l->head != e && now_ms - l->head->at_ms >= l->head->limit_ms) {
		struct evl_entry *old = l->head;

		entry_unlink(l, old);
		entry_free(old);
	}
	pthread_mutex_unlock(&l->lock);
	free(key);
	return ok;
}

size_t ev_limiter_size(struct ev_limiter *l)
{
	size_t n;

	pthread_mutex_lock(&l->lock);
	n = l->count;
	pthread_mutex_unlock(&l->lock);
	return n;
}
