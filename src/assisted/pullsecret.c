/* pullsecret.c - upstream's pull secret parsing rules (pullsecret.h): the
 * same acceptance and the same reasons, checked on a parsed copy. */
#include "assisted/pullsecret.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* One registry's entry: "auth", if there and not empty, is base64 of
 * user:password. */
static int check_auth(const char *registry, const json_t *entry, char *why, size_t size)
{
	const json_t *auth = json_object_get(entry, "auth");
	unsigned char *raw = NULL;
	size_t len = 0;
	const char *s;
	int r = 0;

	if (!auth)
		return 0;
	if (!json_is_string(auth)) {
		char *v = json_dumps(auth, JSON_ENCODE_ANY | JSON_COMPACT);

		snprintf(why, size, "invalid pull secret: 'auth' field of \"%s\" is %s but should be a string",
			 registry, v ? v : "?");
		free(v);
		return -EINVAL;
	}
	s = json_string_value(auth);
	if (!*s)
		return 0;
	if (util_base64_decode(s, strlen(s), &raw, &len) < 0) {
		snprintf(why, size, "invalid pull secret: 'auth' field of \"%s\" is not base64-encoded", registry);
		return -EINVAL;
	}
	if (!memchr(raw, ':', len)) {
		snprintf(why, size, "invalid pull secret: 'auth' for %s is not in 'user:password' format", registry);
		r = -EINVAL;
	}
	memset(raw, 0, len);
	free(raw);
	return r;
}

int pullsecret_check(const char *text, char *why, size_t size)
{
	const json_t *auths, *entry;
	const char *registry;
	json_t *doc;
	int r = 0;

	/* Go's json.Unmarshal into {auths: map[string]map[string]any}: a
	 * value of another shape anywhere on that path does not decode. */
	doc = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	auths = json_object_get(doc, "auths");
	if (!doc || !(json_is_object(doc) || json_is_null(doc)) ||
	    (auths && !json_is_object(auths) && !json_is_null(auths))) {
		snprintf(why, size, "pull secret must be a well-formed JSON");
		json_decref(doc);
		return -EINVAL;
	}
	json_object_foreach((json_t *)auths, registry, entry) {
		if (!json_is_object(entry) && !json_is_null(entry)) {
			snprintf(why, size, "pull secret must be a well-formed JSON");
			json_decref(doc);
			return -EINVAL;
		}
	}
	if (!json_object_size(auths)) {
		snprintf(why, size, "pull secret must contain 'auths' JSON-object field");
		json_decref(doc);
		return -EINVAL;
	}
	json_object_foreach((json_t *)auths, registry, entry)
		if (r == 0)
			r = check_auth(registry, entry, why, size);
	json_decref(doc);
	return r;
}
