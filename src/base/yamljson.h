/* yamljson.h - YAML documents to jansson values (libyaml's event parser).
 *
 * Plain scalars follow the YAML 1.2 core schema as Kubernetes (sigs.k8s.io/yaml)
 * reads them: null/~/empty, true/false, integers, floats; quoted scalars and
 * scalars tagged !!str are strings.  Aliases copy their anchor's value.
 *
 * Refused with 400 (err->reason "BadRequest") and the reason: a NUL
 * character in a scalar, a key given twice in one mapping, a mapping or
 * sequence as a key, an integer out of the 64-bit range or a float out of
 * the double range, nesting past 128 levels, and a document that would
 * expand past 500,000 nodes or 16 MiB of text (aliases' copies counted,
 * checked before each node is built). */
#ifndef AH_BASE_YAMLJSON_H
#define AH_BASE_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Parse every document of buf into a new JSON array (one element per
 * non-empty document); the caller owns *ret.  0, or -EINVAL with err set. */
int yaml_parse_all(const char *buf, size_t len, json_t **ret, ah_err *err);

#endif
