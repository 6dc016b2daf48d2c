/* log.c - see log.h.  A single fprintf per line keeps lines whole across threads. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/strbuf.h"

static enum log_level min_level = LOG_LVL_INFO;
static enum log_format format = LOG_FMT_TEXT;
static const char *const names[] = { "debug", "info", "warn", "error" };

void log_set_level(enum log_level lvl)
{
	min_level = lvl;
}

void log_set_format(enum log_format fmt)
{
	format = fmt;
}

int log_enabled(enum log_level lvl)
{
	return lvl >= min_level;
}

static void timestamp(char *buf, size_t size)
{
	struct timespec now;
	struct tm tm;
	char ts[32];

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%.20s.%03dZ", ts, (int)(now.tv_nsec / 1000000 % 1000));
}

/* The JSON line: {"time":…,"level":…,"msg":…<extra>}; extra is already
 * JSON (",\"k\":v…") or "". */
static void emit_json(enum log_level lvl, const char *ts, const char *msg, const char *extra)
{
	strbuf sb = STRBUF_INIT;

	strbuf_init(&sb, 16384);
	strbuf_addf(&sb, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":\"", ts, names[lvl]);
	strbuf_add_json_escaped(&sb, msg);
	strbuf_addf(&sb, "\"%s}\n", extra);
	if (sb.buf)
		fputs(sb.buf, stderr);
	strbuf_release(&sb);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char line[4096], ts[40];
	va_list ap;

	if (lvl < min_level)
		return;
	timestamp(ts, sizeof(ts));
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (format == LOG_FMT_JSON)
		emit_json(lvl, ts, line, "");
	else
		fprintf(stderr, "%s %-5s %s\n", ts, names[lvl], line);
}

void log_request(const char *method, const char *path, unsigned status, double ms, const char *client)
{
	char ts[40];

	if (LOG_LVL_DEBUG < min_level)
		return;
	timestamp(ts, sizeof(ts));
	if (format == LOG_FMT_JSON) {
		strbuf extra = STRBUF_INIT;

		strbuf_init(&extra, 8192);
		strbuf_adds(&extra, ",\"method\":\"");
		strbuf_add_json_escaped(&extra, method);
		strbuf_adds(&extra, "\",\"path\":\"");
		strbuf_add_json_escaped(&extra, path);
		strbuf_addf(&extra, "\",\"status\":%u,\"duration_ms\":%.3f,\"client\":\"", status, ms);
		strbuf_add_json_escaped(&extra, client ? client : "");
		strbuf_adds(&extra, "\"");
		emit_json(LOG_LVL_DEBUG, ts, "request", extra.buf ? extra.buf : "");
		strbuf_release(&extra);
		return;
	}
	fprintf(stderr, "%s %-5s request %s %s %u %.3fms %s\n", ts, names[LOG_LVL_DEBUG], method, path, status, ms,
		client ? client : "-");
}

static int secret_param(const char *name, size_t n)
{
	static const char *const keys[] = { "api_key", "token", "access_token", "image_token", "authorization",
					    NULL };

	for (const char *const *k = keys; *k; k++)
		if (strlen(*k) == n && strncasecmp(name, *k, n) == 0)
			return 1;
	return 0;
}

void log_redact_path(const char *path, const char *query, char *buf, size_t size)
{
	strbuf sb = STRBUF_INIT;
	const char *p = path;
	int redact_next = 0;

	strbuf_init(&sb, size > 1 ? size - 1 : 1);
	while (*p) {
		size_t l;

		if (*p == '/') {
			strbuf_addch(&sb, '/');
			p++;
			continue;
		}
		l = strcspn(p, "/");
		if (redact_next)
			strbuf_adds(&sb, "REDACTED");
		else
			strbuf_add(&sb, p, l);
		redact_next = (l == 7 && strncmp(p, "bytoken", 7) == 0) || (l == 8 && strncmp(p, "byapikey", 8) == 0);
		p += l;
	}
	for (const char *q = query; q && *q;) {
		size_t l = strcspn(q, "&"), kl = strcspn(q, "=&");

		strbuf_addch(&sb, q == query ? '?' : '&');
		if (kl < l && secret_param(q, kl)) {
			strbuf_add(&sb, q, kl);
			strbuf_adds(&sb, "=REDACTED");
		} else {
			strbuf_add(&sb, q, l);
		}
		q += l;
		if (*q == '&')
			q++;
	}
	snprintf(buf, size, "%s", sb.buf ? sb.buf : "");
	strbuf_release(&sb);
}
