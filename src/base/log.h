/* log.h - leveled logging to stderr, one line per call, safe from any thread.
 * Only edges (handlers, controller loops, main) should log.  Never pass a
 * secret (pull secret, token, key) to these functions. */
#ifndef AH_BASE_LOG_H
#define AH_BASE_LOG_H

enum log_level { LOG_LVL_DEBUG = 0, LOG_LVL_INFO, LOG_LVL_WARN, LOG_LVL_ERROR };

void log_set_level(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)

#endif
