/* metrics.h - a small process-wide registry of counters, gauges and
 * histograms with labels, rendered in the Prometheus text exposition format
 * (version 0.0.4).
 *
 * A metric family is a static struct defined where it is counted:
 *
 *     static const char *const labels[] = { "route", "method", NULL };
 *     static const double buckets[] = { 0.001, 0.01, 0.1, 1 };
 *     static struct metric latency = METRIC_HISTOGRAM("x_seconds", "Help.", labels, buckets);
 *     ...
 *     metric_observe(&latency, METRIC_VALUES("/apis", "GET"), 0.003);
 *
 * A family joins the registry the first time it is used, so, as with the
 * Go client, a family nobody counted yet is not in the output.  Every call
 * is thread-safe (one mutex per family, held for a lookup and an add).
 * Bounded: a family holds at most METRIC_MAX_SERIES label sets; values for
 * more are dropped and counted in agenthub_metrics_series_dropped_total.
 * Label values are copied; the name, help, label names and buckets of a
 * family must outlive the process (string literals, static arrays). */
#ifndef AH_BASE_METRICS_H
#define AH_BASE_METRICS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/strbuf.h"

#define METRIC_MAX_SERIES 4096

enum metric_type { METRIC_T_COUNTER, METRIC_T_GAUGE, METRIC_T_HISTOGRAM };

struct metric_series;

struct metric {
	const char *name;
	const char *help;
	enum metric_type type;
	const char *const *labels; /* NULL-terminated label names, or NULL for none */
	const double *buckets;     /* histograms: upper bounds, increasing, no +Inf */
	size_t nbuckets;
	/* private */
	pthread_mutex_t lock;
	bool registered;
	size_t nlabels, nseries;
	struct metric_series *series;
	struct metric *next;
};

#define METRIC_COUNTER(name_, help_, labels_) \
	{ .name = (name_), .help = (help_), .type = METRIC_T_COUNTER, .labels = (labels_), \
	  .lock = PTHREAD_MUTEX_INITIALIZER }
#define METRIC_GAUGE(name_, help_, labels_) \
	{ .name = (name_), .help = (help_), .type = METRIC_T_GAUGE, .labels = (labels_), \
	  .lock = PTHREAD_MUTEX_INITIALIZER }
#define METRIC_HISTOGRAM(name_, help_, labels_, buckets_) \
	{ .name = (name_), .help = (help_), .type = METRIC_T_HISTOGRAM, .labels = (labels_), \
	  .buckets = (buckets_), .nbuckets = sizeof(buckets_) / sizeof((buckets_)[0]), \
	  .lock = PTHREAD_MUTEX_INITIALIZER }

/* The label values of one call, in the order of the family's label names;
 * NULL stands for a family without labels.  A NULL value counts as "". */
#define METRIC_VALUES(...) ((const char *const[]){ __VA_ARGS__ })

/* Counters and gauges: add v (a counter ignores a negative v). */
void metric_add(struct metric *m, const char *const *values, double v);
static inline void metric_inc(struct metric *m, const char *const *values)
{
	metric_add(m, values, 1);
}
/* Gauges: set the value. */
void metric_set(struct metric *m, const char *const *values, double v);
/* Histograms: one observation. */
void metric_observe(struct metric *m, const char *const *values, double v);
/* Drop every label set of m (a gauge recomputed at scrape time starts from
 * nothing, so a status nobody holds any more disappears). */
void metric_clear(struct metric *m);

/* The current value of a counter or gauge series, or the observation count
 * of a histogram series; 0 when absent.  For tests and scrape-time checks. */
double metric_value(struct metric *m, const char *const *values);

/* Append every registered family, in registration order, to out. Returns 0
 * or a negative errno from the strbuf (-E2BIG past its bound). */
int metrics_render(strbuf *out);

/* The content type of metrics_render()'s output. */
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Free every series and forget every family (at exit, and between tests). */
void metrics_reset(void);

#endif
