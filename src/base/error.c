/* error.c - filling the ah_err struct; see error.h. */
#include "error.h"

#include <stdio.h>
#include <string.h>

int ah_err_setv(ah_err *err, int errno_value, int status, const char *reason,
		const char *fmt, va_list ap)
{
	if (err) {
		err->status = status;
		snprintf(err->reason, sizeof(err->reason), "%s", reason ? reason : "");
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
	}
	return errno_value > 0 ? -errno_value : errno_value;
}

int ah_err_set(ah_err *err, int errno_value, int status, const char *reason,
	       const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = ah_err_setv(err, errno_value, status, reason, fmt, ap);
	va_end(ap);
	return r;
}

void ah_err_prefix(ah_err *err, const char *fmt, ...)
{
	char pre[512], old[AH_ERR_MSG_MAX];
	va_list ap;

	if (!err)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, err->message, sizeof(old));
	snprintf(err->message, sizeof(err->message), "%.500s: %.1500s", pre, old);
}

void ah_err_clear(ah_err *err)
{
	if (err)
		memset(err, 0, sizeof(*err));
}
