/* gojson.h - JSON syntax checking with the error texts of Go's
 * encoding/json, for messages that must read exactly as kube-apiserver's
 * (which checks a dockerconfigjson Secret with json.Unmarshal).  Pure and
 * thread-safe. */
#ifndef AH_BASE_GOJSON_H
#define AH_BASE_GOJSON_H

#include <stddef.h>

/* 0 if buf[0..len) is one JSON value (surrounded by whitespace at most),
 * else -EINVAL with Go's syntax error in msg ("unexpected end of JSON
 * input", "invalid character 'w' looking for beginning of value", ...).
 * Nesting deeper than Go's 10000 levels is refused as Go refuses it. */
int gojson_check(const char *buf, size_t len, char *msg, size_t size);

#endif
