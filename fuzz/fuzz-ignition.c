/* fuzz-ignition.c - libFuzzer target for the ignition config overrides
 * (InfraEnv spec.ignitionConfigOverride and the Agent's
 * ignitionConfigOverrides): ignition_validate_override, ignition_merge and
 * the discovery Ignition built with the override (src/image/ignition.c).
 * The input is the override text.  Checks:
 *   - a refusal is 400 with a message;
 *   - with an override the validator accepts, the build either says why
 *     it refuses or gives a JSON object with an ignition.version;
 *   - merging an object into a copy of itself twice gives the same as once
 *     for objects (merge is idempotent on objects without lists). */
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "fuzz-common.h"
#include "image/ignition.h"

static int has_array(const json_t *v)
{
	const char *k;
	json_t *c;

	if (json_is_array(v))
		return 1;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, k, c)
			if (has_array(c))
				return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *ign = NULL;
	ah_err err = { 0 };
	json_t *o;
	size_t len = 0;
	int r;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	r = ignition_validate_override(s, &err);
	if (r < 0)
		CHECK(err.status == 400 && err.message[0]);
	if (r == 0 && strlen(s) == size) {
		struct discovery_params p = { 0 };

		p.service_base_url = "https://hub.example.com:6443";
		p.infra_env_id = "11111111-2222-4333-8444-555555555555";
		p.pull_secret = "{\"auths\":{\"cloud.openshift.com\":{\"auth\":\"dTpw\",\"email\":\"a@b.c\"}}}";
		p.agent_token = "tok-FUZZ-TOKEN";
		p.ignition_config_override = s;
		r = ignition_build_discovery(&p, &ign, &len, &err);
		if (r < 0) {
			CHECK(err.message[0]);
		} else {
			json_t *doc = json_loadb(ign, len, 0, NULL);

			CHECK(json_is_object(doc));
			CHECK(json_is_string(json_object_get(json_object_get(doc, "ignition"), "version")));
			json_decref(doc);
			free(ign);
		}
	}
	o = json_loads(s, 0, NULL);
	if (json_is_object(o) && !has_array(o)) {
		json_t *a = json_deep_copy(o), *b = json_deep_copy(o);

		CHECK(a && b);
		CHECK(ignition_merge(a, o) == 0);
		CHECK(ignition_merge(b, o) == 0 && ignition_merge(b, o) == 0);
		CHECK(json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	json_decref(o);
	free(s);
	return 0;
}
