/* log.c - see log.h.  A single fprintf per line keeps lines whole across threads. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static enum log_level min_level = LOG_LVL_INFO;

void log_set_level(enum log_level lvl)
{
	min_level = lvl;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	char line[4096], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;

	if (lvl < min_level)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s.%03ldZ %-5s %s\n", ts, now.tv_nsec / 1000000, names[lvl], line);
}
