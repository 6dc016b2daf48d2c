/* convert-internal.h - what convert.c and the built-in version conversions
 * (convert-capi.c) share: dotted-path helpers on JSON objects and the table
 * entry of one conversion. */
#ifndef AH_KUBE_CONVERT_INTERNAL_H
#define AH_KUBE_CONVERT_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>

/* Dotted paths ("status.initialization.dataSecretCreated") through nested
 * objects.  cv_get: borrowed, NULL when absent.  cv_set: steals v, makes the
 * objects on the way (replacing non-objects); ignored when v is NULL.
 * cv_take: removes and returns a new reference (NULL when absent). */
json_t *cv_get(const json_t *o, const char *path);
void cv_set(json_t *o, const char *path, json_t *v);
json_t *cv_take(json_t *o, const char *path);
void cv_del(json_t *o, const char *path);
/* Moves the value at from (if any) to to. */
void cv_move(json_t *o, const char *from, const char *to);
/* Removes the object at path when it has no members left. */
void cv_drop_empty(json_t *o, const char *path);

/* One built-in conversion between a CRD's storage ("hub") version and one
 * other served ("spoke") version.  to_hub / to_spoke change out in place:
 * out is a deep copy of the source object with apiVersion already set to
 * the target.  restored is the target-form object that an earlier
 * conversion left in the conversion-data annotation, or NULL; the
 * *_restore lists name the fields the source form cannot carry, which are
 * copied from it when out lacks them (a function may restore more itself). */
struct cv_version {
	const char *group, *kind, *hub, *spoke;
	void (*to_hub)(json_t *out, const json_t *restored);
	void (*to_spoke)(json_t *out, const json_t *restored);
	const char *const *hub_restore;
	const char *const *spoke_restore;
};

extern const struct cv_version cv_capi_versions[];
extern const unsigned cv_capi_versions_count;

#endif
