/* listtoken.h - the `continue` token of a paginated list: where the next
 * page starts (after namespace/name) at which store revision.  The token is
 * opaque to clients (base64 of a small JSON object); a token that does not
 * decode, or names more than fits, is refused with 400 as kube-apiserver
 * refuses one ("continue key is not valid ...").  Pure; thread-safe. */
#ifndef AH_KUBE_LISTTOKEN_H
#define AH_KUBE_LISTTOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* A malloc'd token the caller frees, or NULL on allocation failure. */
char *kube_continue_encode(int64_t rev, const char *ns, const char *name);

/* Decode tok (len bytes): 0 with *ret_rev, ns and name (NUL-terminated,
 * each shorter than its buffer), or -EINVAL with err (400 BadRequest). */
int kube_continue_decode(const char *tok, size_t len, int64_t *ret_rev, char *ns, size_t nsz, char *name,
			 size_t namesz, ah_err *err);

#endif
