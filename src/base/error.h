/* error.h - the one small error struct that carries a rich failure upwards.
 *
 * Library functions return 0 or a negative errno; when the caller needs more
 * (an HTTP status, a Kubernetes Status.reason, a message naming the field),
 * the function fills an ah_err.  Only the edge (HTTP handler, controller loop,
 * main) turns it into a response or a log line.  The struct is plain data: it
 * owns no memory and may be copied freely.  Thread-safe: no shared state. */
#ifndef AH_BASE_ERROR_H
#define AH_BASE_ERROR_H

#include <stdarg.h>

#define AH_ERR_MSG_MAX 2048

typedef struct ah_err {
	int status;                   /* HTTP status code, e.g. 422; 0 = unset */
	char reason[48];              /* Kubernetes Status.reason, e.g. "Invalid" */
	char message[AH_ERR_MSG_MAX]; /* human-readable, names the field path */
} ah_err;

/* Set all fields; NULL err is allowed (the call is then a no-op).
 * Returns -errno_value so callers can write `return ah_err_set(...)`. */
int ah_err_set(ah_err *err, int errno_value, int status, const char *reason,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int ah_err_setv(ah_err *err, int errno_value, int status, const char *reason,
		const char *fmt, va_list ap);

/* Prefix the existing message with "prefix: " (used to add context). */
void ah_err_prefix(ah_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void ah_err_clear(ah_err *err);

#endif
