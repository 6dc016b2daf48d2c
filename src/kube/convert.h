/* convert.h - kinds served from another kind's storage, converted field by
 * field on the way in and out.  Pure; thread-safe.
 *
 * Two cases, both marked in the registry by kube_kind.stored_as:
 *
 * - One resource in two API groups: events.k8s.io/v1 Events are stored as
 *   core v1 Events (as kube-apiserver keeps one resource for both), with
 *   upstream's field renames.
 *
 * - A CustomResourceDefinition with several served versions: objects are
 *   kept in the storage version and every other served version is converted
 *   from and to it (kube-apiserver calls the CRD's conversion webhook; here
 *   the conversions are built in, in convert-capi.c: the Cluster API
 *   OpenShift Assisted kinds, OpenshiftAssistedConfig(Template)
 *   v1alpha1 <-> v1alpha2 and OpenshiftAssistedControlPlane v1alpha2 <->
 *   v1alpha3, with upstream's field mapping).  As Cluster API's conversions
 *   do, a converted object carries its source (without metadata) as JSON in
 *   the annotation cluster.x-k8s.io/conversion-data, so that fields the
 *   target version cannot hold come back when the object is converted back.
 *   A CRD version without a built-in conversion differs from the storage
 *   version only in apiVersion (kube-apiserver's "None" strategy). */
#ifndef AH_KUBE_CONVERT_H
#define AH_KUBE_CONVERT_H

#include <jansson.h>
#include <stdbool.h>

#include "kube/registry.h"

/* The annotation holding what a conversion could not carry. */
#define KUBE_CONVERSION_DATA_ANNOTATION "cluster.x-k8s.io/conversion-data"

/* True for a kind served from another version of its own CRD (whole
 * objects only: patches are applied to the converted object, see
 * kube_patch()). */
bool kube_convert_is_version(const struct kube_kind *view);

/* A new object: obj (in the stored kind's form) as the served kind `view`
 * shows it, or, with to_stored, obj (in view's form) as the stored kind
 * keeps it.  For events.k8s.io Events this also works on merge patches
 * (only the keys present are renamed; apiVersion is rewritten when
 * present).  An object whose apiVersion is not the source form's comes back
 * as a copy, unconverted (the caller's type checks then reject it).
 * Objects of other kinds, and kinds without stored_as, come back as a new
 * reference to obj.  NULL only on allocation failure. */
json_t *kube_convert(const struct kube_kind *view, const json_t *obj, bool to_stored);

/* As kube_convert(), for a partial object (a server-side apply
 * configuration): the fields are mapped, the conversion-data annotation is
 * neither read nor written. */
json_t *kube_convert_partial(const struct kube_kind *view, const json_t *obj, bool to_stored);

/* A JSON Patch (RFC 6902) path in view's form rewritten for the stored
 * form ("/note" -> "/message"); a new string the caller frees.  Only for
 * events.k8s.io Events (other paths come back unchanged). */
char *kube_convert_json_pointer(const struct kube_kind *view, const char *path);

/* Go duration text ("1h2m3.5s", "300ms", "0") to whole seconds (truncated
 * toward zero, clamped to int32): 0 on success, -1 when s is not a Go
 * duration.  And back: seconds as Go's time.Duration.String() writes them
 * ("10s", "1m30s", "1h0m0s") into buf. */
int kube_parse_go_duration(const char *s, long long *seconds);
void kube_format_go_duration(long long seconds, char *buf, size_t size);

#endif
