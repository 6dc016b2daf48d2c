/* listtoken.c - continue tokens (see listtoken.h). */
#include "kube/listtoken.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* A token longer than this is not one of ours (ours stay well under). */
#define CONTINUE_MAX 2048

char *kube_continue_encode(int64_t rev, const char *ns, const char *name)
{
	json_t *t = json_pack("{s:I,s:s,s:s}", "rv", (json_int_t)rev, "ns", ns ? ns : "", "name", name ? name : "");
	char *s = t ? json_dumps(t, JSON_COMPACT) : NULL, *b;

	json_decref(t);
	if (!s)
		return NULL;
	b = util_base64_encode(s, strlen(s));
	free(s);
	return b;
}

static int invalid(ah_err *err, const char *why)
{
	return ah_err_set(err, EINVAL, 400, "BadRequest", "continue key is not valid: %s", why);
}

int kube_continue_decode(const char *tok, size_t len, int64_t *ret_rev, char *ns, size_t nsz, char *name,
			 size_t namesz, ah_err *err)
{
	unsigned char *raw = NULL;
	const json_t *jns, *jname, *jrv;
	size_t rawlen;
	json_t *t;
	int r = 0;

	if (len > CONTINUE_MAX)
		return invalid(err, "too long");
	if (memchr(tok, '\0', len) || util_base64_decode(tok, len, &raw, &rawlen) < 0)
		return invalid(err, "illegal base64 data");
	t = json_loadb((char *)raw, rawlen, JSON_REJECT_DUPLICATES, NULL);
	free(raw);
	if (!json_is_object(t)) {
		json_decref(t);
		return invalid(err, "illegal base64 data");
	}
	jns = json_object_get(t, "ns");
	jname = json_object_get(t, "name");
	jrv = json_object_get(t, "rv");
	if (!json_is_string(jns) || !json_is_string(jname) || (jrv && !json_is_integer(jrv)) ||
	    (jrv && json_integer_value(jrv) < 0))
		r = invalid(err, "malformed continue key");
	else if (json_string_length(jns) >= nsz || json_string_length(jname) >= namesz ||
		 strlen(json_string_value(jns)) != json_string_length(jns) ||
		 strlen(json_string_value(jname)) != json_string_length(jname))
		r = invalid(err, "the name it holds is not a valid object name");
	if (r == 0) {
		memcpy(ns, json_string_value(jns), json_string_length(jns) + 1);
		memcpy(name, json_string_value(jname), json_string_length(jname) + 1);
		*ret_rev = jrv ? (int64_t)json_integer_value(jrv) : 0;
	}
	json_decref(t);
	return r;
}
