/* metrics.c - see metrics.h.
 *
 * Families sit on one registry list (appended under a global mutex the first
 * time each is used); each family keeps its label sets in a list guarded by
 * its own mutex.  Families are few and their label sets tens to hundreds, so
 * a linear search with a hash compared first is enough. */
#include "metrics.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct metric_series {
	struct metric_series *next;
	uint64_t hash;
	char **values;    /* nlabels copies */
	double value;     /* counter/gauge value; histogram sum */
	uint64_t count;   /* histogram observations */
	uint64_t *counts; /* histogram: per bucket (not cumulative) */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metric *registry_head, **registry_tail = &registry_head;

static const char *const dropped_labels[] = { "metric", NULL };
static struct metric dropped = METRIC_COUNTER(
	"agenthub_metrics_series_dropped_total",
	"Values not recorded because their metric already held the most label sets it may hold.",
	dropped_labels);

static void ensure_registered(struct metric *m)
{
	pthread_mutex_lock(&registry_lock);
	if (!m->registered) {
		m->nlabels = 0;
		while (m->labels && m->labels[m->nlabels])
			m->nlabels++;
		m->next = NULL;
		*registry_tail = m;
		registry_tail = &m->next;
		__atomic_store_n(&m->registered, true, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&registry_lock);
}

static uint64_t hash_values(const struct metric *m, const char *const *values)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < m->nlabels; i++) {
		for (const char *p = values && values[i] ? values[i] : ""; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ull;
		h = (h ^ 0xff) * 1099511628211ull;
	}
	return h;
}

static void series_free(struct metric_series *s, size_t nlabels)
{
	if (!s)
		return;
	for (size_t i = 0; i < nlabels && s->values; i++)
		free(s->values[i]);
	free(s->values);
	free(s->counts);
	free(s);
}

/* The series of values in m, created when absent; NULL when out of memory
 * or past the bound.  Called with m->lock held. */
static struct metric_series *series_get(struct metric *m, const char *const *values, bool *ret_full)
{
	uint64_t h = hash_values(m, values);
	struct metric_series *s;

	*ret_full = false;
	for (s = m->series; s; s = s->next) {
		size_t i;

		if (s->hash != h)
			continue;
		for (i = 0; i < m->nlabels; i++)
			if (strcmp(s->values[i], values && values[i] ? values[i] : "") != 0)
				break;
		if (i == m->nlabels)
			return s;
	}
	if (m->nseries >= METRIC_MAX_SERIES) {
		*ret_full = true;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->hash = h;
	s->values = calloc(m->nlabels ? m->nlabels : 1, sizeof(char *));
	if (!s->values)
		goto fail;
	for (size_t i = 0; i < m->nlabels; i++)
		if (!(s->values[i] = strdup(values && values[i] ? values[i] : "")))
			goto fail;
	if (m->type == METRIC_T_HISTOGRAM && m->nbuckets &&
	    !(s->counts = calloc(m->nbuckets, sizeof(uint64_t))))
		goto fail;
	/* Appended, so the output lists label sets in the order first seen. */
	{
		struct metric_series **tail = &m->series;

		while (*tail)
			tail = &(*tail)->next;
		*tail = s;
	}
	m->nseries++;
	return s;
fail:
	series_free(s, m->nlabels);
	return NULL;
}

enum op { OP_ADD, OP_SET, OP_OBSERVE };

static void update(struct metric *m, const char *const *values, double v, enum op op)
{
	struct metric_series *s;
	bool full;

	if (!__atomic_load_n(&m->registered, __ATOMIC_ACQUIRE))
		ensure_registered(m);
	pthread_mutex_lock(&m->lock);
	s = series_get(m, values, &full);
	if (s) {
		switch (op) {
		case OP_ADD:
			if (m->type != METRIC_T_COUNTER || v >= 0)
				s->value += v;
			break;
		case OP_SET:
			s->value = v;
			break;
		case OP_OBSERVE:
			s->value += v;
			s->count++;
			for (size_t i = 0; i < m->nbuckets; i++) {
				if (v <= m->buckets[i]) {
					s->counts[i]++;
					break;
				}
			}
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	if (full && m != &dropped)
		metric_inc(&dropped, METRIC_VALUES(m->name));
}

void metric_add(struct metric *m, const char *const *values, double v)
{
	if (m->type != METRIC_T_HISTOGRAM)
		update(m, values, v, OP_ADD);
}

void metric_set(struct metric *m, const char *const *values, double v)
{
	if (m->type == METRIC_T_GAUGE)
		update(m, values, v, OP_SET);
}

void metric_observe(struct metric *m, const char *const *values, double v)
{
	if (m->type == METRIC_T_HISTOGRAM && !isnan(v))
		update(m, values, v, OP_OBSERVE);
}

static void clear_series(struct metric *m)
{
	struct metric_series *s;

	pthread_mutex_lock(&m->lock);
	s = m->series;
	m->series = NULL;
	m->nseries = 0;
	pthread_mutex_unlock(&m->lock);
	while (s) {
		struct metric_series *next = s->next;

		series_free(s, m->nlabels);
		s = next;
	}
}

void metric_clear(struct metric *m)
{
	if (!__atomic_load_n(&m->registered, __ATOMIC_ACQUIRE))
		ensure_registered(m);
	clear_series(m);
}

double metric_value(struct metric *m, const char *const *values)
{
	struct metric_series *s;
	double v = 0;

	if (!__atomic_load_n(&m->registered, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&m->lock);
	for (s = m->series; s; s = s->next) {
		size_t i;

		for (i = 0; i < m->nlabels; i++)
			if (strcmp(s->values[i], values && values[i] ? values[i] : "") != 0)
				break;
		if (i == m->nlabels) {
			v = m->type == METRIC_T_HISTOGRAM ? (double)s->count : s->value;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return v;
}

/* A float as Go's strconv.FormatFloat(v, 'g', -1, 64) would write it for
 * the values we hold: the shortest text that reads back the same. */
static void fmt_float(char *buf, size_t size, double v)
{
	if (isinf(v)) {
		snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (isnan(v)) {
		snprintf(buf, size, "NaN");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, size, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static int add_escaped(strbuf *out, const char *s, bool quote)
{
	int r = 0;

	for (; *s && r == 0; s++) {
		if (*s == '\\')
			r = strbuf_adds(out, "\\\\");
		else if (*s == '\n')
			r = strbuf_adds(out, "\\n");
		else if (*s == '"' && quote)
			r = strbuf_adds(out, "\\\"");
		else
			r = strbuf_addch(out, *s);
	}
	return r;
}

/* name{l1="v1",...[,le="x"]} value\n */
static int add_sample(strbuf *out, const struct metric *m, const char *suffix,
		      const struct metric_series *s, const char *le, double v)
{
	char num[64];
	int r = strbuf_addf(out, "%s%s", m->name, suffix);

	if (r == 0 && (m->nlabels || le)) {
		r = strbuf_addch(out, '{');
		for (size_t i = 0; r == 0 && i < m->nlabels; i++) {
			r = strbuf_addf(out, "%s%s=\"", i ? "," : "", m->labels[i]);
			if (r == 0)
				r = add_escaped(out, s->values[i], true);
			if (r == 0)
				r = strbuf_addch(out, '"');
		}
		if (r == 0 && le)
			r = strbuf_addf(out, "%sle=\"%s\"", m->nlabels ? "," : "", le);
		if (r == 0)
			r = strbuf_addch(out, '}');
	}
	fmt_float(num, sizeof(num), v);
	if (r == 0)
		r = strbuf_addf(out, " %s\n", num);
	return r;
}

static int render_family(strbuf *out, struct metric *m)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };
	int r;

	pthread_mutex_lock(&m->lock);
	if (!m->series) {
		pthread_mutex_unlock(&m->lock);
		return 0;
	}
	r = strbuf_addf(out, "# HELP %s ", m->name);
	if (r == 0)
		r = add_escaped(out, m->help, false);
	if (r == 0)
		r = strbuf_addf(out, "\n# TYPE %s %s\n", m->name, types[m->type]);
	for (struct metric_series *s = m->series; s && r == 0; s = s->next) {
		if (m->type != METRIC_T_HISTOGRAM) {
			r = add_sample(out, m, "", s, NULL, s->value);
			continue;
		}
		{
			uint64_t cum = 0;
			char le[64];

			for (size_t i = 0; i < m->nbuckets && r == 0; i++) {
				cum += s->counts[i];
				fmt_float(le, sizeof(le), m->buckets[i]);
				r = add_sample(out, m, "_bucket", s, le, (double)cum);
			}
			if (r == 0)
				r = add_sample(out, m, "_bucket", s, "+Inf", (double)s->count);
			if (r == 0)
				r = add_sample(out, m, "_sum", s, NULL, s->value);
			if (r == 0)
				r = add_sample(out, m, "_count", s, NULL, (double)s->count);
		}
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}

int metrics_render(strbuf *out)
{
	struct metric *m;
	int r = 0;

	pthread_mutex_lock(&registry_lock);
	m = registry_head;
	pthread_mutex_unlock(&registry_lock);
	/* Families are only ever appended (reset aside), so the walk needs no
	 * registry lock past reading each next pointer. */
	while (m && r == 0) {
		struct metric *next;

		r = render_family(out, m);
		pthread_mutex_lock(&registry_lock);
		next = m->next;
		pthread_mutex_unlock(&registry_lock);
		m = next;
	}
	return r;
}

void metrics_reset(void)
{
	struct metric *m;

	pthread_mutex_lock(&registry_lock);
	m = registry_head;
	registry_head = NULL;
	registry_tail = &registry_head;
	pthread_mutex_unlock(&registry_lock);
	while (m) {
		struct metric *next = m->next;

		clear_series(m);
		__atomic_store_n(&m->registered, false, __ATOMIC_RELEASE);
		m->next = NULL;
		m = next;
	}
}
