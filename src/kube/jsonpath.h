/* jsonpath.h - the Kubernetes JSONPath subset used by CRD printer columns and
 * `kubectl wait --for=jsonpath`: `.a.b`, `.a[0]`, `.a[*].b`, `.a['key.with.dots']`,
 * `.a[?(@.type=="Ready")].status`, with or without surrounding `{}`.
 * Pure; a compiled path is immutable and thread-safe. */
#ifndef AH_KUBE_JSONPATH_H
#define AH_KUBE_JSONPATH_H

#include <jansson.h>

#include "base/error.h"

typedef struct jsonpath jsonpath;

/* Grammar: an optional `$` (or `@`), then steps: `.name` (a backslash
 * escapes the next character: `.metadata.labels.app\.kubernetes\.io/name`),
 * `.*` (every value of an object or array), `[n]` (negative counts from the
 * end), `[a:b]`, `[a:b:step]`, `[*]`, `['key']` / `["key"]` (one literal key,
 * dots included), `[?(@.path)]` (elements where the path selects
 * something) and `[?(@.path OP operand)]` with OP one of == != < > <= >=
 * and operand a quoted string, an integer, a number, true/false or an
 * @-path.  The whole may be wrapped in one `{}`.  Not supported (refused):
 * recursive descent `..`, unions `[a,b]`, text between several `{}`
 * actions, range/end.  Expressions are limited to 4096 characters.
 * 0 and *ret (free with jsonpath_free), or -EINVAL with err set (status
 * 400, message naming the offset), -ENOMEM. */
int jsonpath_compile(const char *expr, jsonpath **ret, ah_err *err);
/* All values the path selects in doc, in document order, as a new JSON
 * array the caller owns; its elements are the doc's own values (incref'd,
 * not copies).  A field of a non-object or a missing key selects nothing;
 * an index out of range, a slice or filter over a non-array, or a filter
 * comparing incompatible types (string with number, int with float, ...)
 * makes the whole result empty, as client-go reports an error.  NULL only
 * on allocation failure. */
json_t *jsonpath_eval(const jsonpath *jp, const json_t *doc);
void jsonpath_free(jsonpath *jp);

#endif
