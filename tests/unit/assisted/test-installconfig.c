/* test-installconfig.c - install-config.yaml for SNO, 3+2 and dual-stack
 * clusters, the install-config-overrides annotation (good, unknown field,
 * type mismatch, malformed JSON, trust bundle PEM), and the YAML printer
 * (its output is read back with the project's YAML parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

/* Table rows leave their trailing fields zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "assisted/installconfig.h"
#include "base/yamljson.h"

static const char PULL_SECRET[] = "{\"auths\":{\"quay.io\":{\"auth\":\"c2VjcmV0OnNlY3JldA==\"}}}";

/* A self-signed certificate (openssl req -x509, EC P-256). */
static const char CERT[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBfjCCASWgAwIBAgIUYcUvKxrrm/CsgELHQDhOYesbDIkwCgYIKoZIzj0EAwIw\n"
	"FTETMBEGA1UEAwwKdGVzdC1jYS0wMTAeFw0yNjExMjEwMjQ3MTZaFw0zNjExMTgw\n"
	"MjQ3MTZaMBUxEzARBgNVBAMMCnRlc3QtY2EtMDEwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAAQCyvQO1cyfpvK0c9q8MYoBbL4CH1pS1qQVuCaYKalWARnvwhcqT6kG\n"
	"3yiS5zQqk6r3yc6bm/BmvRS5CUO6ZgF6o1MwUTAdBgNVHQ4EFgQUukqyp3t+MfwD\n"
	"/zXVgJ9tzZmZKIIwHwYDVR0jBBgwFoAUukqyp3t+MfwD/zXVgJ9tzZmZKIIwDwYD\n"
	"VR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBw2++rO6wobphzniRU2OKR\n"
	"roDuZqLEGyqXytN78Uaa5AIgDiHV4XAAyCxKmc4iVh5bv9CIW4k/qtUG2Xjm9YUa\n"
	"1Z4=\n"
	"-----END CERTIFICATE-----\n";

static json_t *J(const char *text)
{
	char *s = strdup(text);
	json_error_t je;
	json_t *v;

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = json_loads(s, 0, &je);
	if (!v)
		fail_msg("bad test JSON (%s): %s", je.text, s);
	free(s);
	return v;
}

static json_t *host(int n, const char *role, bool bootstrap, const char *v6)
{
	char buf[1024];
	json_t *h;

	snprintf(buf, sizeof(buf),
		 "{'id':'h%d','status':'known','role':'%s','bootstrap':%s,'installation_disk_path':'/dev/sda',"
		 "'inventory':{'hostname':'node-%d','boot':{'current_boot_mode':'uefi'},"
		 "'interfaces':[{'name':'eth0','mac_address':'52:54:00:00:00:%02d','ipv4_addresses':['192.168.1.%d/24'],"
		 "'ipv6_addresses':[%s]}]}}",
		 n, role, bootstrap ? "true" : "false", n, n, 10 + n, v6 ? v6 : "");
	h = J(buf);
	return h;
}

static const char HA[] =
	"{'id':'c1','name':'mycluster','base_dns_domain':'example.com','openshift_version':'4.14.0',"
	"'control_plane_count':3,'high_availability_mode':'Full','user_managed_networking':false,"
	"'platform':{'type':'baremetal'},'api_vips':[{'ip':'192.168.1.100'}],'ingress_vips':[{'ip':'192.168.1.101'}],"
	"'machine_networks':[{'cidr':'192.168.1.0/24'}],'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':23}],"
	"'service_networks':[{'cidr':'172.30.0.0/16'}],'network_type':'OVNKubernetes','hyperthreading':'masters',"
	"'ssh_public_key':'ssh-ed25519 AAAAC3Nz test@example','http_proxy':'http://proxy:3128','no_proxy':'.internal'}";

static const char SNO[] =
	"{'id':'c2','name':'sno','base_dns_domain':'example.com','openshift_version':'4.14.0',"
	"'control_plane_count':1,'high_availability_mode':'None','user_managed_networking':true,"
	"'platform':{'type':'none'},'api_vips':[],'ingress_vips':[],'machine_networks':[],"
	"'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':23}],'service_networks':[{'cidr':'172.30.0.0/16'}],"
	"'network_type':'OVNKubernetes','hyperthreading':'all','ssh_public_key':''}";

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* Build, print, parse back: the YAML must read back to the same tree. */
static json_t *roundtrip(const json_t *cluster, const json_t *hosts, const char *overrides)
{
	ah_err err = { 0 };
	json_t *tree = installconfig_tree(cluster, hosts, PULL_SECRET, overrides, &err), *docs;
	char *yaml = installconfig_build(cluster, hosts, PULL_SECRET, overrides, &err);

	if (!tree || !yaml)
		fail_msg("build failed: %s", err.message);
	assert_int_equal(yaml_parse_all(yaml, strlen(yaml), &docs, &err), 0);
	if (!json_equal(json_array_get(docs, 0), tree))
		fail_msg("YAML does not read back:\n%s", yaml);
	assert_non_null(strstr(yaml, "apiVersion: v1\n"));
	free(yaml);
	json_decref(docs);
	return tree;
}

static void test_sno(void **state)
{
	json_t *c = J(SNO), *hs = json_array(), *t;

	(void)state;
	json_array_append_new(hs, host(0, "master", true, NULL));
	t = roundtrip(c, hs, NULL);
	assert_string_equal(sget(t, "baseDomain"), "example.com");
	assert_string_equal(sget(json_object_get(t, "metadata"), "name"), "sno");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "controlPlane"), "replicas")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(t, "compute"), 0), "replicas")), 0);
	assert_true(json_is_object(json_object_get(json_object_get(t, "platform"), "none")));
	assert_string_equal(sget(json_object_get(t, "bootstrapInPlace"), "installationDisk"), "/dev/sda");
	/* UMN without machine network: the bootstrap host's network */
	assert_string_equal(sget(json_array_get(json_object_get(json_object_get(t, "networking"), "machineNetwork"), 0), "cidr"),
			    "192.168.1.0/24");
	assert_string_equal(sget(t, "pullSecret"), PULL_SECRET);
	assert_true(json_is_false(json_object_get(t, "fips")));
	json_decref(t);
	json_decref(c);
	json_decref(hs);
}

static void test_ha(void **state)
{
	json_t *c = J(HA), *hs = json_array(), *t, *bm, *px;

	(void)state;
	for (int i = 0; i < 3; i++)
		json_array_append_new(hs, host(i, "master", i == 2, NULL));
	json_array_append_new(hs, host(3, "worker", false, NULL));
	json_array_append_new(hs, host(4, "auto-assign", false, NULL));
	json_object_set_new(json_array_get(hs, 4), "suggested_role", json_string("worker"));
	t = roundtrip(c, hs, NULL);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "controlPlane"), "replicas")), 3);
	assert_string_equal(sget(json_object_get(t, "controlPlane"), "hyperthreading"), "Enabled");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(t, "compute"), 0), "replicas")), 2);
	assert_string_equal(sget(json_array_get(json_object_get(t, "compute"), 0), "hyperthreading"), "Disabled");
	bm = json_object_get(json_object_get(t, "platform"), "baremetal");
	assert_non_null(bm);
	assert_string_equal(sget(bm, "provisioningNetwork"), "Disabled");
	assert_string_equal(json_string_value(json_array_get(json_object_get(bm, "apiVIPs"), 0)), "192.168.1.100");
	assert_string_equal(json_string_value(json_array_get(json_object_get(bm, "ingressVIPs"), 0)), "192.168.1.101");
	assert_int_equal(json_array_size(json_object_get(bm, "hosts")), 5);
	assert_string_equal(sget(json_array_get(json_object_get(bm, "hosts"), 4), "role"), "worker");
	assert_string_equal(sget(json_array_get(json_object_get(bm, "hosts"), 0), "bootMACAddress"), "52:54:00:00:00:00");
	assert_string_equal(sget(json_array_get(json_object_get(bm, "hosts"), 0), "name"), "node-0");
	assert_null(json_object_get(t, "bootstrapInPlace"));
	px = json_object_get(t, "proxy");
	assert_string_equal(sget(px, "httpProxy"), "http://proxy:3128");
	assert_string_equal(sget(px, "noProxy"),
			    ".internal,.mycluster.example.com,10.128.0.0/14,172.30.0.0/16,192.168.1.0/24");
	assert_string_equal(sget(json_object_get(t, "networking"), "networkType"), "OVNKubernetes");
	json_decref(t);
	json_decref(c);
	json_decref(hs);
}

static void test_dual_stack(void **state)
{
	json_t *c = J(HA), *hs = json_array(), *t, *net;

	(void)state;
	json_object_set_new(c, "machine_networks", J("[{'cidr':'192.168.1.0/24'},{'cidr':'fd2e:6f44:5dd8::/64'}]"));
	json_object_set_new(c, "cluster_networks",
			    J("[{'cidr':'10.128.0.0/14','host_prefix':23},{'cidr':'fd01::/48','host_prefix':64}]"));
	json_object_set_new(c, "service_networks", J("[{'cidr':'172.30.0.0/16'},{'cidr':'fd02::/112'}]"));
	json_object_set_new(c, "api_vips", J("[{'ip':'192.168.1.100'},{'ip':'fd2e:6f44:5dd8::100'}]"));
	json_object_set_new(c, "ingress_vips", J("[{'ip':'192.168.1.101'},{'ip':'fd2e:6f44:5dd8::101'}]"));
	for (int i = 0; i < 3; i++)
		json_array_append_new(hs, host(i, "master", i == 0, "'fd2e:6f44:5dd8::10/64'"));
	t = roundtrip(c, hs, NULL);
	net = json_object_get(t, "networking");
	assert_int_equal(json_array_size(json_object_get(net, "clusterNetwork")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(net, "clusterNetwork"), 1),
							    "hostPrefix")),
			 64);
	assert_string_equal(json_string_value(json_array_get(json_object_get(net, "serviceNetwork"), 1)), "fd02::/112");
	assert_string_equal(sget(json_array_get(json_object_get(net, "machineNetwork"), 1), "cidr"), "fd2e:6f44:5dd8::/64");
	assert_string_equal(json_string_value(json_array_get(
				    json_object_get(json_object_get(json_object_get(t, "platform"), "baremetal"), "apiVIPs"), 1)),
			    "fd2e:6f44:5dd8::100");
	json_decref(t);
	json_decref(c);
	json_decref(hs);
}

static void test_overrides(void **state)
{
	json_t *c = J(HA), *hs = json_array(), *t;
	char *over;

	(void)state;
	for (int i = 0; i < 3; i++)
		json_array_append_new(hs, host(i, "master", i == 0, NULL));
	/* good: fips, a merged networking field, array elements decoded onto
	 * the existing ones, keys matched case-insensitively as encoding/json does */
	t = roundtrip(c, hs,
		      "{\"fips\": true, \"networking\": {\"networkType\": \"OpenShiftSDN\"},"
		      " \"compute\": [{\"replicas\": 4}], \"CPUPartitioningMode\": \"AllNodes\","
		      " \"capabilities\": {\"baselineCapabilitySet\": \"None\"}}");
	assert_true(json_is_true(json_object_get(t, "fips")));
	assert_string_equal(sget(json_object_get(t, "networking"), "networkType"), "OpenShiftSDN");
	assert_int_equal(json_array_size(json_object_get(json_object_get(t, "networking"), "clusterNetwork")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(t, "compute"), 0), "replicas")), 4);
	assert_string_equal(sget(json_array_get(json_object_get(t, "compute"), 0), "name"), "worker");
	assert_string_equal(sget(t, "cpuPartitioningMode"), "AllNodes");
	assert_string_equal(sget(json_object_get(t, "capabilities"), "baselineCapabilitySet"), "None");
	json_decref(t);
	/* null clears a pointer field */
	t = roundtrip(c, hs, "{\"proxy\": null}");
	assert_null(json_object_get(t, "proxy"));
	json_decref(t);
	/* a trust bundle from the overrides comes first, the cluster's after */
	json_object_set_new(c, "additional_trust_bundle", json_string(CERT));
	{
		json_t *o = json_pack("{s:s}", "additionalTrustBundle", CERT);

		over = json_dumps(o, 0);
		json_decref(o);
	}
	assert_int_equal(installconfig_check_overrides(over, NULL), 0);
	t = roundtrip(c, hs, over);
	{
		char want[4096];

		snprintf(want, sizeof(want), "%s\n%.*s", CERT, (int)strlen(CERT) - 1, CERT);
		assert_string_equal(sget(t, "additionalTrustBundle"), want);
	}
	json_decref(t);
	free(over);
	json_decref(c);
	json_decref(hs);
}

static void test_override_errors(void **state)
{
	static const struct {
		const char *name, *json, *why;
	} rows[] = {
		{ "unknown field", "{\"fips\": true, \"fipz\": true}", "json: unknown field \"fipz\"" },
		{ "unknown nested field", "{\"networking\": {\"networkTypo\": \"x\"}}", "json: unknown field \"networkTypo\"" },
		{ "type mismatch", "{\"fips\": \"yes\"}",
		  "json: cannot unmarshal string into Go struct field InstallerConfigBaremetal.fips of type bool" },
		{ "nested type mismatch", "{\"networking\": {\"clusterNetwork\": [{\"hostPrefix\": 23.5}]}}",
		  "json: cannot unmarshal number 23.5 into Go struct field InstallerConfigBaremetal.networking.clusterNetwork.hostPrefix of type int" },
		{ "not an object", "[1]",
		  "json: cannot unmarshal array into Go value of type installcfg.InstallerConfigBaremetal" },
		{ "malformed", "{\"fips\": tru", NULL },
		{ "empty", "   ", "EOF" },
		{ "bad PEM", "{\"additionalTrustBundle\": \"not a cert\"}", "invalid block" },
		{ "bad certificate", "{\"additionalTrustBundle\": \"-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----\\n\"}",
		  "parse failed: x509: malformed certificate" },
	};
	json_t *c = J(HA), *hs = json_array();

	(void)state;
	json_array_append_new(hs, host(0, "master", true, NULL));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ah_err err = { 0 }, err2 = { 0 };
		char want[512];
		char *y;

		assert_int_equal(installconfig_check_overrides(rows[i].json, &err), -EINVAL);
		assert_string_equal(err.reason, "InputError");
		assert_int_equal(err.status, 400);
		if (rows[i].why) {
			snprintf(want, sizeof(want), "Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation: %s",
				 rows[i].why);
			if (strcmp(err.message, want))
				fail_msg("row %s: %s", rows[i].name, err.message);
		} else {
			assert_non_null(strstr(err.message,
					       "Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation: "));
		}
		y = installconfig_build(c, hs, PULL_SECRET, rows[i].json, &err2);
		assert_null(y);
		assert_string_equal(err2.message, err.message);
		/* the pull secret never appears in an error */
		assert_null(strstr(err2.message, "c2VjcmV0"));
	}
	json_decref(c);
	json_decref(hs);
}

static void test_missing_inputs(void **state)
{
	json_t *c = J(HA), *hs = json_array();
	ah_err err = { 0 };

	(void)state;
	assert_null(installconfig_build(c, hs, NULL, NULL, &err));
	assert_non_null(strstr(err.message, "pull secret"));
	json_object_set_new(c, "base_dns_domain", json_string(""));
	assert_null(installconfig_build(c, hs, PULL_SECRET, NULL, &err));
	assert_non_null(strstr(err.message, "base_dns_domain"));
	json_decref(c);
	json_decref(hs);
}

static void test_yaml(void **state)
{
	static const char *const rows[] = {
		"{\"a\":\"plain\",\"b\":\"true\",\"c\":\"4.14\",\"d\":\"\",\"e\":\"it's\",\"f\":\"x: y\",\"g\":\"#c\"}",
		"{\"multi\":\"line1\\nline2\\n\",\"nofinal\":\"a\\nb\",\"two\":\"a\\n\\n\",\"tab\":\"a\\tb\",\"lead\":\" x\\ny\"}",
		"{\"list\":[{\"a\":1,\"b\":[1,2]},[3,[4]],\"s\",{}],\"empty\":[],\"obj\":{},\"n\":null,\"f\":1.5,\"t\":false}",
		"{\"ip6\":\"fd01::/48\",\"ip6b\":\"2001:db8::1\",\"time\":\"1:20\",\"neg\":\"-1\",\"dash\":\"- x\",\"star\":\"*a\"}",
		/* characters YAML cannot carry raw: DEL, C1 controls, NEL, LS, PS, other C0 */
		"{\"del\":\"a\\u007fb\",\"c1\":\"a\\u0096b\",\"nel\":\"a\\u0085b\",\"ls\":\"a\\u2028b\","
		"\"ps\":\"a\\u2029b\",\"bell\":\"a\\u0007b\",\"mix\":\"q\\\"\\\\\\u0080\\n\\u00e9\"}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *v = json_loads(rows[i], 0, NULL), *docs;
		char *y = installconfig_json_to_yaml(v);
		ah_err err = { 0 };

		assert_non_null(v);
		assert_non_null(y);
		assert_int_equal(yaml_parse_all(y, strlen(y), &docs, &err), 0);
		if (!json_equal(json_array_get(docs, 0), v))
			fail_msg("row %zu does not read back:\n%s", i, y);
		free(y);
		json_decref(docs);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sno),
		cmocka_unit_test(test_ha),
		cmocka_unit_test(test_dual_stack),
		cmocka_unit_test(test_overrides),
		cmocka_unit_test(test_override_errors),
		cmocka_unit_test(test_missing_inputs),
		cmocka_unit_test(test_yaml),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
