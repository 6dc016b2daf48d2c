/* fuzz-body.c - libFuzzer target for a Kubernetes request body: decoding
 * (JSON as the API decodes application/json, or YAML as application/yaml,
 * src/base/yamljson.c) then the schema steps every create and update runs
 * (src/kube/schema.c: prune, default, validate) against the schema of one
 * of the registry's kinds (all CRDs of config/crd/).  The first input byte
 * picks the kind and the decoder; the rest is the body.  Checks:
 *   - decoding refusals carry a message; a decoded body holds no NUL;
 *   - prune and default are idempotent (a second pass changes nothing);
 *   - validation is deterministic and every cause is an object with
 *     string reason, message and field;
 *   - the body as decoded is not changed by validation. */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "base/yamljson.h"
#include "fuzz-common.h"
#include "kube/registry.h"
#include "kube/schema.h"

static struct kube_registry *reg;
static const struct kube_kind *kinds[64];
static size_t nkinds;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	ah_err err;
	size_t i;

	CHECK(kube_registry_new(&reg, &err) == 0);
	for (i = 0; i < reg->n && nkinds < 64; i++)
		if (reg->kinds[i]->schema)
			kinds[nkinds++] = reg->kinds[i];
	CHECK(nkinds > 0);
	return 0;
}

static void check_causes(const json_t *causes)
{
	const json_t *c;
	size_t i;

	json_array_foreach(causes, i, c) {
		CHECK(json_is_object(c));
		CHECK(json_is_string(json_object_get(c, "reason")));
		CHECK(json_is_string(json_object_get(c, "message")));
		CHECK(json_is_string(json_object_get(c, "field")));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct kube_kind *k;
	json_t *doc = NULL, *copy, *causes, *causes2, *pruned;
	ah_err err = { 0 };
	bool yaml;

	if (size < 1)
		return 0;
	k = kinds[data[0] % nkinds];
	yaml = data[0] & 0x80;
	data++, size--;
	if (yaml) {
		json_t *docs = NULL;

		if (yaml_parse_all((const char *)data, size, &docs, &err) < 0) {
			CHECK(err.message[0]);
			return 0;
		}
		if (json_array_size(docs) == 1)
			doc = json_incref(json_array_get(docs, 0));
		json_decref(docs);
	} else {
		json_error_t jerr;

		doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
		if (!doc)
			CHECK(jerr.text[0]);
	}
	if (!json_is_object(doc)) {
		json_decref(doc);
		return 0;
	}
	pruned = json_array();
	schema_prune(k->schema, doc, pruned);
	schema_default(k->schema, doc);
	copy = json_deep_copy(doc);
	CHECK(copy);
	schema_prune(k->schema, copy, NULL);
	schema_default(k->schema, copy);
	CHECK(json_equal(copy, doc));
	causes = json_array();
	causes2 = json_array();
	(void)schema_validate(k->schema, doc, causes);
	CHECK(json_equal(copy, doc));
	(void)schema_validate(k->schema, doc, causes2);
	CHECK(json_equal(causes, causes2));
	check_causes(causes);
	json_decref(causes);
	json_decref(causes2);
	json_decref(copy);
	json_decref(pruned);
	json_decref(doc);
	return 0;
}
