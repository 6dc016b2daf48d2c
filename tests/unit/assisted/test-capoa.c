/* Tests for src/assisted/capoa.c: versions, release images, the
 * Kubernetes table and the capabilities override (bmac-capi.md §C.7, §C.8). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/capoa.h"

static void test_parse(void **state)
{
	struct capoa_version v;

	assert_int_equal(capoa_parse_version("4.19.3", &v), 0);
	assert_int_equal(v.major, 4);
	assert_int_equal(v.minor, 19);
	assert_int_equal(v.patch, 3);
	assert_string_equal(v.pre, "");
	assert_int_equal(capoa_parse_version("v4.16", &v), 0);
	assert_int_equal(v.minor, 16);
	assert_int_equal(v.patch, 0);
	assert_int_equal(capoa_parse_version("4.18.0-okd-scos.9", &v), 0);
	assert_string_equal(v.pre, "okd-scos.9");
	assert_true(capoa_is_okd(&v));
	assert_int_equal(capoa_parse_version("4.17.0-rc.1+abc", &v), 0);
	assert_string_equal(v.pre, "rc.1");
	assert_string_equal(v.build, "abc");
	assert_false(capoa_is_okd(&v));
	assert_int_equal(capoa_parse_version("", &v), -EINVAL);
	assert_int_equal(capoa_parse_version("four", &v), -EINVAL);
	assert_int_equal(capoa_parse_version("4.x", &v), -EINVAL);
	assert_int_equal(capoa_parse_version("4.19.0-", &v), -EINVAL);
	assert_int_equal(capoa_parse_version(NULL, &v), -EINVAL);
}

static void test_supported(void **state)
{
	assert_true(capoa_version_supported("4.14.0"));
	assert_true(capoa_version_supported("4.19.0"));
	assert_true(capoa_version_supported("5.0.0"));
	assert_false(capoa_version_supported("4.13.9"));
	assert_false(capoa_version_supported("4.14.0-rc.1"));
	assert_false(capoa_version_supported("3.11"));
	/* Not parseable: not refused at this step. */
	assert_true(capoa_version_supported("latest"));
}

static void test_release_image(void **state)
{
	char *s;

	s = capoa_release_image("4.19.0", "x86_64", NULL);
	assert_string_equal(s, "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64");
	free(s);
	s = capoa_release_image("4.19.0", NULL, "");
	assert_string_equal(s, "quay.io/openshift-release-dev/ocp-release:4.19.0-multi");
	free(s);
	s = capoa_release_image("4.18.0-okd-scos.9", "x86_64", NULL);
	assert_string_equal(s, "quay.io/okd/scos-release:4.18.0-okd-scos.9");
	free(s);
	s = capoa_release_image("4.19.0", "arm64", "registry.example.com/ocp/release");
	assert_string_equal(s, "registry.example.com/ocp/release:4.19.0-arm64");
	free(s);
}

static void test_kube(void **state)
{
	assert_string_equal(capoa_kube_version(4, 14), "1.27");
	assert_string_equal(capoa_kube_version(4, 19), "1.32");
	assert_string_equal(capoa_kube_version(4, 20), "1.33");
	assert_null(capoa_kube_version(4, 13));
	assert_null(capoa_kube_version(4, 99));
	assert_null(capoa_kube_version(5, 19));
}

static void test_override(void **state)
{
	char why[256], *s;
	json_t *caps;

	/* Nothing: no capabilities, not BareMetal, no user override. */
	assert_int_equal(capoa_install_config_override(NULL, false, NULL, &s, why, sizeof(why)), 0);
	assert_null(s);
	/* The user's annotation alone passes through. */
	assert_int_equal(capoa_install_config_override(NULL, false, "{\"fips\":true}", &s, why, sizeof(why)), 0);
	assert_string_equal(s, "{\"fips\":true}");
	free(s);
	/* BareMetal: baseline None and the seeds. */
	assert_int_equal(capoa_install_config_override(NULL, true, NULL, &s, why, sizeof(why)), 0);
	assert_string_equal(s, "{\"capabilities\":{\"additionalEnabledCapabilities\":[\"baremetal\",\"Console\","
			    "\"Insights\",\"OperatorLifecycleManager\",\"Ingress\",\"marketplace\",\"NodeTuning\","
			    "\"DeploymentConfig\"],\"baselineCapabilitySet\":\"None\"}}");
	free(s);
	/* User entries appended and de-duplicated; MachineAPI dropped on
	 * BareMetal; generated keys win over the user's. */
	caps = json_pack("{s:s,s:[s,s,s]}", "baselineCapability", "v4.16", "additionalEnabledCapabilities", "Console",
			 "MachineAPI", "CSISnapshot");
	assert_int_equal(capoa_install_config_override(caps, true, "{\"capabilities\":{\"x\":1},\"fips\":true}", &s, why,
						       sizeof(why)), 0);
	assert_string_equal(s, "{\"capabilities\":{\"additionalEnabledCapabilities\":[\"baremetal\",\"Console\","
			    "\"Insights\",\"OperatorLifecycleManager\",\"Ingress\",\"marketplace\",\"NodeTuning\","
			    "\"DeploymentConfig\",\"CSISnapshot\"],\"baselineCapabilitySet\":\"v4.16\"},\"fips\":true}");
	free(s);
	/* Not BareMetal: vCurrent default, MachineAPI kept. */
	assert_int_equal(capoa_install_config_override(caps, false, NULL, &s, why, sizeof(why)), 0);
	assert_string_equal(s, "{\"capabilities\":{\"additionalEnabledCapabilities\":[\"Console\",\"MachineAPI\","
			    "\"CSISnapshot\"],\"baselineCapabilitySet\":\"v4.16\"}}");
	free(s);
	json_decref(caps);
	caps = json_pack("{s:[s]}", "additionalEnabledCapabilities", "Console");
	assert_int_equal(capoa_install_config_override(caps, false, NULL, &s, why, sizeof(why)), 0);
	assert_string_equal(s, "{\"capabilities\":{\"additionalEnabledCapabilities\":[\"Console\"],"
			    "\"baselineCapabilitySet\":\"vCurrent\"}}");
	free(s);
	json_decref(caps);
	/* Bad input, named. */
	caps = json_pack("{s:s}", "baselineCapability", "v5.1");
	assert_int_equal(capoa_install_config_override(caps, false, NULL, &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "spec.config.capabilities.baselineCapability"));
	json_decref(caps);
	assert_int_equal(capoa_install_config_override(NULL, true, "[1]", &s, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "install-config-override"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_supported),
		cmocka_unit_test(test_release_image),
		cmocka_unit_test(test_kube),
		cmocka_unit_test(test_override),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
