/* convert.h - one resource served in two API groups: events.k8s.io/v1
 * Events are stored as core v1 Events (as kube-apiserver keeps one resource
 * for both), and converted field by field on the way in and out.  Pure;
 * thread-safe. */
#ifndef AH_KUBE_CONVERT_H
#define AH_KUBE_CONVERT_H

#include <jansson.h>
#include <stdbool.h>

#include "kube/registry.h"

/* A new object: obj (a core v1 Event) as the served kind `view` shows it,
 * or, with to_stored, obj (in view's form) as the stored kind keeps it.
 * Works on whole objects and on merge patches alike (only the keys present
 * are renamed; apiVersion is rewritten when present).  Objects of other
 * kinds, and kinds without stored_as, come back as a new reference to
 * obj.  NULL only on allocation failure. */
json_t *kube_convert(const struct kube_kind *view, const json_t *obj, bool to_stored);

/* A JSON Patch (RFC 6902) path in view's form rewritten for the stored
 * form ("/note" -> "/message"); a new string the caller frees. */
char *kube_convert_json_pointer(const struct kube_kind *view, const char *path);

#endif
