/* log.h - leveled logging to stderr, one line per call, safe from any thread.
 * Only edges (handlers, controller loops, main) should log.  Never pass a
 * secret (pull secret, token, key) to these functions.
 *
 * Two formats: text ("2026-01-02T03:04:05.678Z info  message") and JSON, one
 * object per line ({"time":"…","level":"info","msg":"…"}, plus the request
 * fields for log_request()).  Set the level and format once at start, before
 * other threads log. */
#ifndef AH_BASE_LOG_H
#define AH_BASE_LOG_H

#include <stddef.h>

enum log_level { LOG_LVL_DEBUG = 0, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };
enum log_format { LOG_FMT_TEXT = 0, LOG_FMT_JSON };

void log_set_level(enum log_level lvl);
void log_set_format(enum log_format fmt);
/* Whether lines of lvl are written (to skip building an expensive one). */
int log_enabled(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line for one HTTP request, at debug level: method, path (the caller
 * strips secrets: see log_redact_path()), status, duration in milliseconds,
 * client address. */
void log_request(const char *method, const char *path, unsigned status, double ms, const char *client);

/* Write path into buf (size bytes, truncated) with the secrets a URL may
 * carry replaced by "REDACTED": the path segment after "bytoken" or
 * "byapikey", and the values of the query parameters api_key, token,
 * access_token, image_token and authorization.  query is the query string
 * without '?' (NULL or "" for none). */
void log_redact_path(const char *path, const char *query, char *buf, size_t size);

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
