/* jsonpath.h - the Kubernetes JSONPath subset used by CRD printer columns and
 * `kubectl wait --for=jsonpath`: `.a.b`, `.a[0]`, `.a[*].b`, `.a['key.with.dots']`,
 * `.a[?(@.type=="Ready")].status`, with or without surrounding `{}`.
 * Pure; a compiled path is immutable and thread-safe. */
#ifndef AH_KUBE_JSONPATH_H
#define AH_KUBE_JSONPATH_H

#include <jansson.h>

#include "base/error.h"

typedef struct jsonpath jsonpath;

int jsonpath_compile(const char *expr, jsonpath **ret, ah_err *err);
/* All values the path selects in doc, as a new JSON array (borrowing none:
 * the caller owns the array; elements are incref'd). */
json_t *jsonpath_eval(const jsonpath *jp, const json_t *doc);
void jsonpath_free(jsonpath *jp);

#endif
