/* query.h - checks of a request's query parameters, shared by the
 * Kubernetes API and the agent API: a value that holds a NUL byte (%00)
 * is refused whole, since every reader of it sees only the text before
 * the NUL; booleans read as Go's strconv.ParseBool reads them.
 * Thread-safe (reads only the request). */
#ifndef AH_HTTP_QUERY_H
#define AH_HTTP_QUERY_H

#include <stdbool.h>

#include "http/server.h"

/* The name of the first query parameter whose name or value holds a NUL
 * byte, or NULL when none does.  The name points into the request (a
 * name cut at its NUL). */
const char *http_query_nul(struct http_req *req);

/* Go's strconv.ParseBool: 1 t T TRUE true True / 0 f F FALSE false False.
 * 0 with *ret set, or -EINVAL. */
int http_parse_bool(const char *s, bool *ret);

#endif
