/* yamljson.h - YAML documents to jansson values (libyaml's event parser).
 *
 * Plain scalars follow the YAML 1.2 core schema as Kubernetes (sigs.k8s.io/yaml)
 * reads them: null/~/empty, true/false, integers, floats; quoted scalars and
 * scalars tagged !!str are strings.  Aliases copy their anchor's value, with
 * a bound on the total copied so a small hostile document cannot explode. */
#ifndef AH_BASE_YAMLJSON_H
#define AH_BASE_YAMLJSON_H

#include <jansson.h>
#include <stddef.h>

#include "error.h"

/* Parse every document of buf into a new JSON array (one element per
 * non-empty document); the caller owns *ret.  0, or -EINVAL with err set. */
int yaml_parse_all(const char *buf, size_t len, json_t **ret, ah_err *err);

#endif
