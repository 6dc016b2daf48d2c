/* fuzz-jsonpath.c - libFuzzer target for src/kube/jsonpath.c.  Not built by
 * default.  Build and run with clang from the source root:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
 *     -Isrc fuzz/fuzz-jsonpath.c src/kube/jsonpath.c src/base/error.c \
 *     -ljansson -o /tmp/fuzz-jsonpath
 *   /tmp/fuzz-jsonpath -max_total_time=60
 *
 * Input: an expression, a newline, then a JSON document (a built-in one is
 * used when the rest does not parse).  Beyond not crashing, it checks:
 *   - a failed compile leaves *ret alone and says why (status 400 or 500);
 *   - every value selected is one of the document's own nodes (the result
 *     borrows from the document; it never invents or copies values);
 *   - evaluation is repeatable (same nodes, same order) and leaves the
 *     document unchanged;
 *   - wrapping the expression in {} changes neither whether it compiles nor
 *     what it selects. */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/jsonpath.h"

#define MAX_NODES 4096

static const char fallback_doc[] =
	"{\"metadata\":{\"name\":\"n\",\"labels\":{\"a.b/c\":\"x\",\"tier\":\"db\"}},"
	"\"spec\":{\"list\":[1,2.5,\"s\",true,null,{\"k\":[]}],\"o\":{\"p\":{\"q\":1}}},"
	"\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"n\":1},"
	"{\"type\":\"Other\",\"n\":2.5}]}}";

struct nodes {
	const json_t *v[MAX_NODES];
	size_t n;
	int overflow;
};

static void collect(struct nodes *ns, const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	if (ns->n == MAX_NODES) {
		ns->overflow = 1;
		return;
	}
	ns->v[ns->n++] = v;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
			collect(ns, x);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			collect(ns, x);
	}
}

static int is_node(const struct nodes *ns, const json_t *v)
{
	size_t i;

	for (i = 0; i < ns->n; i++)
		if (ns->v[i] == v)
			return 1;
	return 0;
}

static int same_nodes(const json_t *a, const json_t *b)
{
	size_t i;

	if (json_array_size(a) != json_array_size(b))
		return 0;
	for (i = 0; i < json_array_size(a); i++)
		if (json_array_get(a, i) != json_array_get(b, i))
			return 0;
	return 1;
}

static json_t *eval_checked(const char *expr, const json_t *doc, const struct nodes *ns, int *ok)
{
	jsonpath *jp = (jsonpath *)&jp; /* a sentinel: must survive a failure */
	json_t *res, *again;
	ah_err err;
	size_t i;
	int r;

	ah_err_clear(&err);
	r = jsonpath_compile(expr, &jp, &err);
	if (r < 0) {
		if (jp != (jsonpath *)&jp || !err.message[0] || (err.status != 400 && err.status != 500))
			abort();
		*ok = 0;
		return NULL;
	}
	*ok = 1;
	res = jsonpath_eval(jp, doc);
	if (!res || !json_is_array(res))
		abort();
	if (!ns->overflow)
		for (i = 0; i < json_array_size(res); i++)
			if (!is_node(ns, json_array_get(res, i)))
				abort();
	again = jsonpath_eval(jp, doc);
	if (!again || !same_nodes(res, again))
		abort();
	json_decref(again);
	jsonpath_free(jp);
	return res;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t elen = nl ? (size_t)(nl - data) : size;
	char *expr, *wrapped;
	json_t *doc = NULL, *before, *res, *wres;
	json_error_t jerr;
	struct nodes *ns;
	int ok, wok;

	if (elen > 8192)
		return 0;
	expr = malloc(elen + 1);
	wrapped = malloc(elen + 3);
	ns = calloc(1, sizeof(*ns));
	if (!expr || !wrapped || !ns)
		abort();
	memcpy(expr, data, elen);
	expr[elen] = '\0';
	if (nl)
		doc = json_loadb((const char *)nl + 1, size - elen - 1, JSON_DECODE_ANY, &jerr);
	if (!doc)
		doc = json_loads(fallback_doc, 0, &jerr);
	before = json_deep_copy(doc);
	collect(ns, doc);

	res = eval_checked(expr, doc, ns, &ok);
	/* The {} wrapping is only meaningful for an expression that is not
	 * already wrapped (leading blanks included). */
	if (elen < 4000 && expr[strspn(expr, " \t")] != '{' && strlen(expr) == elen) {
		snprintf(wrapped, elen + 3, "{%s}", expr);
		wres = eval_checked(wrapped, doc, ns, &wok);
		if (ok != wok || (ok && !same_nodes(res, wres)))
			abort();
		json_decref(wres);
	}
	if (!json_equal(doc, before))
		abort();
	json_decref(res);
	json_decref(before);
	json_decref(doc);
	free(ns);
	free(wrapped);
	free(expr);
	return 0;
}
