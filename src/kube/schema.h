/* schema.h - structural OpenAPI v3 schemas as CustomResourceDefinitions carry
 * them: pruning of unknown fields, defaulting and validation, the way the
 * Kubernetes API server does them for custom resources.  Pure functions;
 * schemas are read-only and may be shared between threads.
 *
 * Causes: problems are appended to a caller-supplied JSON array, one object
 * {reason, message, field} each, in the API server's words, so that the HTTP
 * layer can build a 422 Status whose message lists
 * "<field>: <message>" entries.  Examples (field / message):
 *   spec.approved / Invalid value: "string": spec.approved in body must be of type boolean
 *   spec.pullSecretRef / Required value
 *   spec.ipxeScriptType / Unsupported value: "x": supported values: "", "DiscoveryImageAlways", "BootOrderControl"
 *   spec.interfaces[0].macAddress / Invalid value: "zz": spec.interfaces[0].macAddress in body should match '^([0-9A-Fa-f]{2}[:]){5}([0-9A-Fa-f]{2})$'
 *   spec.networkDiscoveryDelaySeconds / Invalid value: -1: spec.networkDiscoveryDelaySeconds in body should be greater than or equal to 0
 *   spec.apiVIPs / Too many: 3: must have at most 2 items
 * reasons: FieldValueInvalid, FieldValueRequired, FieldValueNotSupported,
 * FieldValueTypeInvalid, FieldValueTooMany, FieldValueTooLong,
 * FieldValueDuplicate (x-kubernetes-list-type set/map).
 * Other wordings, as kube-openapi writes them:
 *   Invalid value: "ab": spec.x in body should be at least 3 chars long
 *   Too long: may not be longer than 63
 *   Invalid value: 1: spec.x in body should have at least 2 items
 *   Invalid value: "": spec.x in body shouldn't contain duplicates
 *   Invalid value: "x": spec.t in body must be of type date-time: "x"
 *   Duplicate value: map[string]interface {}{"name":"eth0"}
 * Type errors deliberately omit kube-openapi's trailing repetition of the
 * value's type (it writes `...must be of type boolean: "string"`).  The
 * errors of allOf/anyOf/oneOf/not have the field "<nil>", as in the API
 * server, e.g. `Invalid value: "": "spec.x" must validate at least one
 * schema (anyOf)`.
 *
 * A NULL schema (built-in kinds) makes every function here a no-op. */
#ifndef AH_KUBE_SCHEMA_H
#define AH_KUBE_SCHEMA_H

#include <jansson.h>
#include <stddef.h>

/* Remove, in place, every field the schema does not declare (unless
 * x-kubernetes-preserve-unknown-fields or additionalProperties allows it) and
 * null values of fields that are not nullable and have no default (a null
 * with a default is replaced by schema_default, as the API server does).  At
 * the root, apiVersion, kind and metadata are always kept (metadata is not
 * pruned here); inside an x-kubernetes-embedded-resource object, apiVersion
 * and kind strings and a metadata object are kept.  The dotted paths of
 * pruned unknown fields (e.g. "spec.foo", "spec.list[0].bar") are appended to
 * `pruned` as strings when it is non-NULL (for warnings and for
 * fieldValidation=Strict). */
void schema_prune(const json_t *schema, json_t *obj, json_t *pruned);

/* Apply `default` values, in place, to absent properties and to nulls of
 * non-nullable ones (also inside array items and additionalProperties
 * values, and inside defaults just applied).  Defaults are deep-copied.
 * Call after schema_prune. */
void schema_default(const json_t *schema, json_t *obj);

/* Validate obj against schema: type (string, integer, number, boolean,
 * object, array; x-kubernetes-int-or-string; nullable), required, enum,
 * pattern (the RE2 subset CRDs use, e.g. non-capturing groups), minimum,
 * maximum, exclusiveMinimum/Maximum, minLength, maxLength, minItems,
 * maxItems, minProperties, maxProperties, uniqueItems, format (date-time,
 * int32, int64, byte), additionalProperties, x-kubernetes-list-type set/map
 * uniqueness, allOf/anyOf/oneOf/not.  Further string formats checked: date,
 * uuid, ipv4, ipv6, cidr; other formats, and int32/int64 ranges, are not
 * checked (nor are they by the API server).  At the root, metadata is skipped
 * (the kube layer checks it).  Appends causes (causes may be NULL to count
 * only); returns the number of causes (0 = valid). */
int schema_validate(const json_t *schema, const json_t *obj, json_t *causes);

/* Find the subschema for a dotted path ("spec", "spec.clusterRef",
 * "spec.interfaces[]") or NULL.  Borrowed reference. */
const json_t *schema_lookup(const json_t *schema, const char *path);

/* Patterns.  A CRD pattern is a Go RE2 expression; it is translated to a
 * POSIX extended expression (regcomp), which covers what CRDs use: groups
 * including (?:...) and named ones, classes and ranges, \d \w \s (and their
 * negations outside brackets), \t \n \r \f \v \xHH, escaped punctuation,
 * anchors, \A \z, counted repetition, non-greedy quantifiers (same match
 * set), and leading (?i) (?s) flags.  Unicode classes, \b, mid-pattern flags
 * and multi-byte runes inside brackets are not translatable.
 *
 * schema_re2_to_posix: 0 and a malloc'd expression plus regcomp flags in
 * *ret / *ret_cflags, or -EINVAL (untranslatable), -ENOMEM.
 *
 * schema_pattern_match: 1 if s (len bytes, may hold NULs) matches anywhere,
 * 0 if not, -ENOMEM.  An untranslatable pattern matches everything (a CRD's
 * pattern was checked as valid RE2 when the CRD was accepted; failing open
 * beats rejecting valid objects).  Compiled patterns are cached process-wide
 * behind a mutex; thread-safe.
 *
 * schema_pattern_cache_clear: free the cache (at exit, or in tests); must not
 * run concurrently with matching. */
int schema_re2_to_posix(const char *re2, char **ret, int *ret_cflags);
int schema_pattern_match(const char *pattern, const char *s, size_t len);
void schema_pattern_cache_clear(void);

#endif
