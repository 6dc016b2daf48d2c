/* query.c - query parameter checks (see query.h). */
#include "http/query.h"

#include <errno.h>
#include <microhttpd.h>
#include <string.h>

struct nul_scan {
	const char *bad;
};

static enum MHD_Result nul_visit(void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size,
				 const char *value, size_t value_size)
{
	struct nul_scan *ns = cls;

	if ((key && strlen(key) != key_size) || (value && strlen(value) != value_size)) {
		ns->bad = key ? key : "";
		return MHD_NO;
	}
	return MHD_YES;
}

const char *http_query_nul(struct http_req *req)
{
	struct nul_scan ns = { NULL };

	if (req->conn)
		MHD_get_connection_values_n(req->conn, MHD_GET_ARGUMENT_KIND, nul_visit, &ns);
	return ns.bad;
}

int http_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True", NULL };
	static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False", NULL };
	int i;

	if (!s)
		return -EINVAL;
	for (i = 0; yes[i]; i++) {
		if (strcmp(s, yes[i]) == 0) {
			*ret = true;
			return 0;
		}
		if (strcmp(s, no[i]) == 0) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}
