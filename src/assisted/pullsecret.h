/* pullsecret.h - the pull secret checks of upstream's ParsePullSecret
 * (backend.md, cluster spec): well-formed JSON with an "auths" object whose
 * "auth" values, when given, are base64 of "user:password".  Pure and
 * thread-safe; the secret itself never appears in a message. */
#ifndef AH_ASSISTED_PULLSECRET_H
#define AH_ASSISTED_PULLSECRET_H

#include <stddef.h>

/* 0 if text is a valid pull secret, else -EINVAL with upstream's reason in
 * why ("pull secret must be a well-formed JSON", ...). */
int pullsecret_check(const char *text, char *why, size_t size);

#endif
