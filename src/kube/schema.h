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
 * FieldValueTypeInvalid, FieldValueTooMany, FieldValueTooLong. */
#ifndef AH_KUBE_SCHEMA_H
#define AH_KUBE_SCHEMA_H

#include <jansson.h>

/* Remove, in place, every field the schema does not declare (unless
 * x-kubernetes-preserve-unknown-fields or additionalProperties allows it) and
 * null values of fields that are not nullable.  At the root, apiVersion, kind
 * and metadata are always kept (metadata is not pruned here).  The dotted
 * paths of pruned unknown fields (e.g. "spec.foo", "spec.list[0].bar") are
 * appended to `pruned` as strings when it is non-NULL (for warnings and for
 * fieldValidation=Strict). */
void schema_prune(const json_t *schema, json_t *obj, json_t *pruned);

/* Apply `default` values, in place, to absent properties (also inside array
 * items and additionalProperties values).  Defaults are deep-copied. */
void schema_default(const json_t *schema, json_t *obj);

/* Validate obj against schema: type (string, integer, number, boolean,
 * object, array; x-kubernetes-int-or-string; nullable), required, enum,
 * pattern (the RE2 subset CRDs use, e.g. non-capturing groups), minimum,
 * maximum, exclusiveMinimum/Maximum, minLength, maxLength, minItems,
 * maxItems, minProperties, maxProperties, uniqueItems, format (date-time,
 * int32, int64, byte), additionalProperties, x-kubernetes-list-type set/map
 * uniqueness.  At the root, metadata is skipped (the kube layer checks it).
 * Appends causes; returns the number appended (0 = valid). */
int schema_validate(const json_t *schema, const json_t *obj, json_t *causes);

/* Find the subschema for a dotted path ("spec", "spec.clusterRef",
 * "spec.interfaces[]") or NULL.  Borrowed reference. */
const json_t *schema_lookup(const json_t *schema, const char *path);

#endif
