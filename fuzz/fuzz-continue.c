/* fuzz-continue.c - libFuzzer target for src/kube/listtoken.c (the list
 * `continue` token a client sends back).  The input is the token.  Checks:
 *   - a refusal is 400 with a message;
 *   - an accepted token gives names that fit their buffers and hold no
 *     NUL, and encoding them again decodes to the same place;
 *   - encode then decode of names taken from the input is the identity. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz-common.h"
#include "kube/listtoken.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char ns[256], name[256], ns2[256], name2[256];
	int64_t rev = -1, rev2 = -1;
	ah_err err = { 0 };
	char *tok;
	int r = kube_continue_decode((const char *)data, size, &rev, ns, sizeof(ns), name, sizeof(name), &err);

	if (r < 0) {
		CHECK(r == -EINVAL && err.status == 400 && err.message[0]);
	} else {
		CHECK(rev >= 0 && strlen(ns) < sizeof(ns) && strlen(name) < sizeof(name));
		tok = kube_continue_encode(rev, ns, name);
		CHECK(tok);
		CHECK(kube_continue_decode(tok, strlen(tok), &rev2, ns2, sizeof(ns2), name2, sizeof(name2), &err) == 0);
		CHECK(rev2 == rev && strcmp(ns, ns2) == 0 && strcmp(name, name2) == 0);
		free(tok);
	}
	/* The input's bytes as a namespace/name pair (split at the first '/'). */
	if (size < 200 && !memchr(data, '\0', size)) {
		char in[256];
		char *slash;

		memcpy(in, data, size);
		in[size] = '\0';
		slash = strchr(in, '/');
		if (slash)
			*slash = '\0';
		tok = kube_continue_encode((int64_t)size, in, slash ? slash + 1 : "");
		/* jansson refuses text that is not UTF-8: no token then. */
		if (tok) {
			CHECK(kube_continue_decode(tok, strlen(tok), &rev2, ns2, sizeof(ns2), name2, sizeof(name2),
						   &err) == 0);
			CHECK(rev2 == (int64_t)size && strcmp(ns2, in) == 0 && strcmp(name2, slash ? slash + 1 : "") == 0);
			free(tok);
		}
	}
	return 0;
}
