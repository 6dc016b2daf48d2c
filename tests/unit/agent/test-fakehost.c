/* test-fakehost.c - simulated hosts: deterministic identities, inventory shape, step
 * replies shaped as the service decodes them, install stages, agent config from Ignition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/fakehost.h"
#include "image/ignition.h"

#define STR(obj, key) json_string_value(json_object_get((obj), (key)))
#define INT(obj, key) json_integer_value(json_object_get((obj), (key)))

static struct fakehost_fleet fleet(uint64_t seed, unsigned hosts, const char *subnet)
{
	struct fakehost_fleet f;
	ah_err err = { 0 };

	assert_int_equal(fakehost_fleet_init(&f, seed, hosts, 8, 32, 120, subnet, &err), 0);
	return f;
}

static void test_fleet_init(void **state)
{
	struct fakehost_fleet f;
	ah_err err = { 0 };

	assert_int_equal(fakehost_fleet_init(&f, 1, 245, 8, 32, 120, "192.168.111.0/24", &err), 0);
	assert_int_equal(fakehost_fleet_init(&f, 1, 246, 8, 32, 120, "192.168.111.0/24", &err), -EINVAL);
	assert_non_null(strstr(err.message, "do not fit"));
	assert_int_equal(fakehost_fleet_init(&f, 1, 10000, 8, 32, 120, "10.128.0.0/16", &err), 0);
	assert_int_equal(fakehost_fleet_init(&f, 1, 1, 8, 32, 120, "192.168.111.0", &err), -EINVAL);
	assert_int_equal(fakehost_fleet_init(&f, 1, 1, 8, 32, 120, "300.1.1.0/24", &err), -EINVAL);
	assert_int_equal(fakehost_fleet_init(&f, 1, 1, 0, 32, 120, "10.0.0.0/24", &err), -EINVAL);
}

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_identities(void **state)
{
	struct fakehost_fleet f = fleet(1, 10000, "10.128.0.0/16"), g = fleet(2, 10000, "10.128.0.0/16");
	char (*ids)[37] = calloc(10000, 37);
	char a[37], b[37], mac[18], ip[16], host[32];

	assert_non_null(ids);
	for (unsigned i = 0; i < 10000; i++) {
		fakehost_host_id(&f, i, ids[i]);
		assert_int_equal(strlen(ids[i]), 36);
		assert_int_equal(ids[i][14], '4');                  /* version 4 */
		assert_non_null(strchr("89ab", ids[i][19]));         /* RFC 4122 variant */
	}
	qsort(ids, 10000, 37, cmp);
	for (unsigned i = 1; i < 10000; i++)
		assert_string_not_equal(ids[i - 1], ids[i]);
	free(ids);

	fakehost_host_id(&f, 7, a);
	fakehost_host_id(&f, 7, b);
	assert_string_equal(a, b);
	fakehost_host_id(&g, 7, b);
	assert_string_not_equal(a, b);

	fakehost_mac(&f, 0, mac);
	assert_string_equal(mac, "02:01:00:00:00:00");
	fakehost_mac(&f, 300, mac);
	assert_string_equal(mac, "02:01:00:00:01:2c");
	fakehost_mac(&g, 300, mac);
	assert_string_equal(mac, "02:02:00:00:01:2c");
	fakehost_ipv4(&f, 0, ip);
	assert_string_equal(ip, "10.128.0.10");
	fakehost_ipv4(&f, 300, ip);
	assert_string_equal(ip, "10.128.1.54");
	f = fleet(1, 3, "192.168.111.0/24");
	fakehost_ipv4(&f, 2, ip);
	assert_string_equal(ip, "192.168.111.12");
	fakehost_hostname(&f, 2, host);
	assert_string_equal(host, "sim-1-2");
}

/* The inventory has every field of the upstream schema the service reads, with the types
 * it decodes them as. */
static void test_inventory_shape(void **state)
{
	struct fakehost_fleet f = fleet(1, 3, "192.168.111.0/24");
	json_t *inv = fakehost_inventory(&f, 1), *cpu, *mem, *disk, *nic, *el;
	char id[37];

	assert_non_null(inv);
	cpu = json_object_get(inv, "cpu");
	assert_int_equal(INT(cpu, "count"), 8);
	assert_true(json_is_number(json_object_get(cpu, "frequency")));
	assert_true(json_is_array(json_object_get(cpu, "flags")));
	assert_string_equal(STR(cpu, "architecture"), "x86_64");
	mem = json_object_get(inv, "memory");
	assert_int_equal(INT(mem, "physical_bytes"), 32LL << 30);
	assert_true(INT(mem, "usable_bytes") > 0 && INT(mem, "usable_bytes") < INT(mem, "physical_bytes"));
	assert_non_null(STR(mem, "physical_bytes_method"));

	assert_int_equal(json_array_size(json_object_get(inv, "disks")), 2);
	disk = json_array_get(json_object_get(inv, "disks"), 0);
	assert_int_equal(INT(disk, "size_bytes"), 120LL << 30);
	assert_string_equal(STR(disk, "drive_type"), "SSD");
	assert_string_equal(STR(disk, "path"), "/dev/vda");
	assert_non_null(STR(disk, "id"));
	assert_true(json_is_boolean(json_object_get(disk, "bootable")));
	el = json_object_get(disk, "installation_eligibility");
	assert_true(json_is_true(json_object_get(el, "eligible")));
	assert_true(json_is_array(json_object_get(el, "not_eligible_reasons")));
	disk = json_array_get(json_object_get(inv, "disks"), 1);
	assert_string_equal(STR(disk, "drive_type"), "ODD");
	assert_true(json_is_true(json_object_get(disk, "is_installation_media")));
	assert_true(json_is_false(json_object_get(json_object_get(disk, "installation_eligibility"), "eligible")));

	nic = json_array_get(json_object_get(inv, "interfaces"), 0);
	assert_string_equal(STR(nic, "mac_address"), "02:01:00:00:00:01");
	assert_string_equal(json_string_value(json_array_get(json_object_get(nic, "ipv4_addresses"), 0)),
			    "192.168.111.11/24");
	assert_true(json_is_array(json_object_get(nic, "ipv6_addresses")));
	assert_true(json_is_integer(json_object_get(nic, "mtu")));
	assert_true(json_is_true(json_object_get(nic, "has_carrier")));
	assert_string_equal(STR(nic, "type"), "physical");

	assert_string_equal(STR(json_object_get(inv, "boot"), "current_boot_mode"), "uefi");
	assert_true(json_is_true(json_object_get(json_object_get(inv, "system_vendor"), "virtual")));
	assert_string_equal(STR(inv, "hostname"), "sim-1-1");
	assert_string_equal(STR(inv, "tpm_version"), "none");
	assert_true(json_is_array(json_object_get(inv, "gpus")));
	el = json_array_get(json_object_get(inv, "routes"), 0);
	assert_string_equal(STR(el, "destination"), "0.0.0.0");
	assert_string_equal(STR(el, "gateway"), "192.168.111.1");
	assert_int_equal(INT(el, "family"), 2);
	fakehost_host_id(&f, 1, id);
	assert_non_null(strstr(STR(json_object_get(inv, "system_vendor"), "serial_number"), "SIM"));
	json_decref(inv);
}

/* Reply of host i to step `type` with args given as JSON text; the decoded output. */
static json_t *reply(const struct fakehost_fleet *f, unsigned i, const char *type, const char *args_json)
{
	json_t *args = args_json ? json_loads(args_json, 0, NULL) : NULL, *out;
	char *text = NULL;
	int code = -1;

	assert_int_equal(fakehost_step_reply(f, i, type, args, &code, &text), 0);
	assert_int_equal(code, 0);
	out = text[0] ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
	if (text[0])
		assert_non_null(out);
	free(text);
	json_decref(args);
	return out;
}

static void test_step_replies(void **state)
{
	struct fakehost_fleet f = fleet(1, 3, "192.168.111.0/24");
	json_t *o, *r, *e;

	o = reply(&f, 0, "inventory", "[\"abc\"]");
	assert_int_equal(INT(json_object_get(o, "cpu"), "count"), 8);
	json_decref(o);

	o = reply(&f, 0, "connectivity-check",
		  "[\"[{\\\"host_id\\\":\\\"h1\\\",\\\"nics\\\":[{\\\"name\\\":\\\"ens3\\\",\\\"mac\\\":\\\"02:01:00:00:00:01\\\","
		  "\\\"ip_addresses\\\":[\\\"192.168.111.11/24\\\",\\\"fe80::1/64\\\"]}]}]\"]");
	r = json_array_get(json_object_get(o, "remote_hosts"), 0);
	assert_string_equal(STR(r, "host_id"), "h1");
	e = json_array_get(json_object_get(r, "l2_connectivity"), 0);
	assert_string_equal(STR(e, "outgoing_ip_address"), "192.168.111.10");
	assert_string_equal(STR(e, "remote_ip_address"), "192.168.111.11");
	assert_string_equal(STR(e, "remote_mac"), "02:01:00:00:00:01");
	assert_true(json_is_true(json_object_get(e, "successful")));
	assert_int_equal(json_array_size(json_object_get(r, "l2_connectivity")), 1); /* IPv4 only */
	e = json_array_get(json_object_get(r, "l3_connectivity"), 0);
	assert_true(json_is_true(json_object_get(e, "successful")));
	assert_true(json_is_number(json_object_get(e, "average_rtt_ms")));
	e = json_array_get(json_object_get(r, "mtu_report"), 0);
	assert_true(json_is_true(json_object_get(e, "mtu_successful")));
	json_decref(o);

	o = reply(&f, 0, "ntp-synchronizer", "[\"{\\\"ntp_source\\\":\\\"a.ntp,b.ntp\\\"}\"]");
	assert_int_equal(json_array_size(json_object_get(o, "ntp_sources")), 3);
	assert_string_equal(STR(json_array_get(json_object_get(o, "ntp_sources"), 0), "source_state"), "synced");
	assert_string_equal(STR(json_array_get(json_object_get(o, "ntp_sources"), 2), "source_name"), "b.ntp");
	json_decref(o);

	o = reply(&f, 0, "domain-resolution",
		  "[\"{\\\"domains\\\":[{\\\"domain_name\\\":\\\"api.c1.example.com\\\"},"
		  "{\\\"domain_name\\\":\\\"validateNoWildcardDNS.c1.example.com.\\\"}]}\"]");
	r = json_object_get(o, "resolutions");
	assert_int_equal(json_array_size(r), 2);
	assert_string_equal(STR(json_array_get(r, 0), "domain_name"), "api.c1.example.com");
	assert_int_equal(json_array_size(json_object_get(json_array_get(r, 0), "ipv4_addresses")), 1);
	assert_int_equal(json_array_size(json_object_get(json_array_get(r, 1), "ipv4_addresses")), 0);
	assert_true(json_is_array(json_object_get(json_array_get(r, 1), "cnames")));
	json_decref(o);

	o = reply(&f, 0, "installation-disk-speed-check", "[\"{\\\"path\\\":\\\"/dev/disk/by-path/x\\\"}\", \"480.00\"]");
	assert_string_equal(STR(o, "path"), "/dev/disk/by-path/x");
	assert_true(INT(o, "io_sync_duration") > 0 && INT(o, "io_sync_duration") < 10);
	json_decref(o);

	o = reply(&f, 0, "container-image-availability",
		  "[\"{\\\"images\\\":[\\\"quay.io/a:1\\\",\\\"quay.io/b:2\\\"],\\\"timeout\\\":960}\"]");
	assert_int_equal(json_array_size(json_object_get(o, "images")), 2);
	assert_string_equal(STR(json_array_get(json_object_get(o, "images"), 1), "name"), "quay.io/b:2");
	assert_string_equal(STR(json_array_get(json_object_get(o, "images"), 1), "result"), "success");
	json_decref(o);

	o = reply(&f, 0, "free-network-addresses", "[\"[\\\"192.168.111.0/24\\\"]\"]");
	r = json_array_get(o, 0);
	assert_string_equal(STR(r, "network"), "192.168.111.0/24");
	/* 254 usable minus the gateway and the 3 hosts. */
	assert_int_equal(json_array_size(json_object_get(r, "free_addresses")), 250);
	json_decref(o);

	/* ARP semantics: free → succeeded; the gateway or a fleet host → failed;
	 * off the subnet → unverified. */
	{
		static const struct {
			const char *vip, *want;
		} rows[] = {
			{ "192.168.111.5", "succeeded" },   { "192.168.111.254", "succeeded" },
			{ "192.168.111.1", "failed" },      { "192.168.111.10", "failed" },
			{ "192.168.111.12", "failed" },     { "192.168.111.13", "succeeded" },
			{ "10.0.0.5", "unverified" },       { "192.168.112.5", "unverified" },
			{ "not-an-ip", "unverified" },
		};

		for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
			char args[256];

			snprintf(args, sizeof(args),
				 "[\"[{\\\"vip\\\":\\\"%s\\\",\\\"vip_type\\\":\\\"ingress\\\"}]\"]", rows[k].vip);
			o = reply(&f, 0, "verify-vips", args);
			if (strcmp(STR(json_array_get(o, 0), "verification"), rows[k].want) != 0)
				fail_msg("%s: %s, want %s", rows[k].vip, STR(json_array_get(o, 0), "verification"),
					 rows[k].want);
			assert_string_equal(STR(json_array_get(o, 0), "vip_type"), "ingress");
			assert_string_equal(STR(json_array_get(o, 0), "vip"), rows[k].vip);
			json_decref(o);
		}
	}

	o = reply(&f, 0, "dhcp-lease-allocate", "[\"{\\\"interface\\\":\\\"ens3\\\"}\"]");
	assert_string_equal(STR(o, "api_vip_address"), "192.168.111.253");
	assert_non_null(STR(o, "ingress_vip_lease"));
	json_decref(o);

	o = reply(&f, 0, "tang-connectivity-check", "[\"{}\"]");
	assert_true(json_is_true(json_object_get(o, "is_success")));
	json_decref(o);

	assert_null(reply(&f, 0, "install", "[\"{\\\"role\\\":\\\"master\\\"}\"]"));
	assert_null(reply(&f, 0, "no-such-step", NULL));
	assert_null(reply(&f, 0, "stop-installation", "[]"));
}

static void test_install_stages(void **state)
{
	static const struct { const char *args; size_t n; const char *fourth; } rows[] = {
		{ "[\"{\\\"role\\\":\\\"bootstrap\\\",\\\"control_plane_count\\\":3}\"]", 11, "Copying registry data to disk" },
		{ "[\"{\\\"role\\\":\\\"bootstrap\\\",\\\"control_plane_count\\\":1}\"]", 8, "Writing image to disk" },
		{ "[\"{\\\"role\\\":\\\"master\\\",\\\"control_plane_count\\\":3}\"]", 8, "Copying registry data to disk" },
		{ "[\"{\\\"role\\\":\\\"arbiter\\\",\\\"control_plane_count\\\":2}\"]", 8, "Copying registry data to disk" },
		{ "[\"{\\\"role\\\":\\\"worker\\\",\\\"control_plane_count\\\":3}\"]", 9, "Waiting for control plane" },
		{ "[]", 9, "Waiting for control plane" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *args = json_loads(rows[i].args, 0, NULL);
		size_t n = 0;
		const char *const *st = fakehost_install_stages(args, &n);
		assert_int_equal(n, rows[i].n);
		assert_string_equal(st[0], "Starting installation");
		assert_string_equal(st[3], rows[i].fourth);
		assert_string_equal(st[n - 1], "Done");
		json_decref(args);
	}
}

static void test_config_from_built_ignition(void **state)
{
	struct discovery_params p = {
		.service_base_url = "https://hub.example.com:8443",
		.infra_env_id = "5d3ab0b4-4a66-4a5c-9b1e-2b3c4d5e6f70",
		.agent_token = "tok%en.with.percent",
		.pull_secret = "{\"auths\":{}}",
		.hub_ca_pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
		.agent_image = "quay.io/example/agent:v1",
	};
	struct fakehost_config c;
	ah_err err = { 0 };
	char *ign = NULL;

	assert_int_equal(ignition_build_discovery(&p, &ign, NULL, &err), 0);
	assert_int_equal(fakehost_config_from_ignition(ign, &c, &err), 0);
	assert_string_equal(c.service_url, "https://hub.example.com:8443");
	assert_string_equal(c.infra_env_id, "5d3ab0b4-4a66-4a5c-9b1e-2b3c4d5e6f70");
	assert_string_equal(c.token, "tok%en.with.percent");
	assert_string_equal(c.agent_version, "quay.io/example/agent:v1");
	assert_non_null(c.ca_pem);
	assert_string_equal(c.ca_pem, p.hub_ca_pem);
	assert_false(c.insecure);
	fakehost_config_release(&c);
	free(ign);

	p.hub_ca_pem = NULL;
	p.agent_token = NULL;
	p.skip_cert_verification = true;
	assert_int_equal(ignition_build_discovery(&p, &ign, NULL, &err), 0);
	assert_int_equal(fakehost_config_from_ignition(ign, &c, &err), 0);
	assert_null(c.ca_pem);
	assert_string_equal(c.token, "");
	assert_true(c.insecure);
	fakehost_config_release(&c);
	free(ign);
}

static void test_config_handwritten(void **state)
{
	static const char ign[] =
		"{\"ignition\":{\"version\":\"3.1.0\"},\"systemd\":{\"units\":[{\"name\":\"agent.service\","
		"\"enabled\":true,\"contents\":\"[Service]\\nEnvironment=PULL_SECRET_TOKEN=abc\\n"
		"ExecStart=/usr/local/bin/agent --url http://10.0.0.1:8090 --infra-env-id ie1 "
		"--agent-version img --insecure=false --cacert /etc/assisted-service/service-ca-cert.crt\\n\"}]},"
		"\"storage\":{\"files\":[{\"path\":\"/etc/assisted-service/service-ca-cert.crt\","
		"\"contents\":{\"source\":\"data:,PEM%20DATA%0A\"}}]}}";
	struct fakehost_config c;
	ah_err err = { 0 };

	assert_int_equal(fakehost_config_from_ignition(ign, &c, &err), 0);
	assert_string_equal(c.service_url, "http://10.0.0.1:8090");
	assert_string_equal(c.infra_env_id, "ie1");
	assert_string_equal(c.token, "abc");
	assert_string_equal(c.ca_pem, "PEM DATA\n");
	fakehost_config_release(&c);

	assert_int_equal(fakehost_config_from_ignition("{\"systemd\":{\"units\":[]}}", &c, &err), -EINVAL);
	assert_non_null(strstr(err.message, "agent.service"));
	assert_int_equal(fakehost_config_from_ignition("not json", &c, &err), -EINVAL);
	assert_int_equal(fakehost_config_from_ignition(
				 "{\"systemd\":{\"units\":[{\"name\":\"agent.service\",\"contents\":\"ExecStart=/agent --url x\\n\"}]}}",
				 &c, &err), -EINVAL);
}

/* The ironic agent's configuration (converged flow): only with ironic-agent.service
 * enabled and /etc/ironic-python-agent.conf present; the first URL of a list. */
static void test_config_ironic_agent(void **state)
{
#define AGENT_UNIT "{\"name\":\"agent.service\",\"enabled\":false,\"contents\":\"ExecStart=/a --url http://h:1 " \
		   "--infra-env-id ie\\n\"}"
#define CONF(c) "{\"path\":\"/etc/ironic-python-agent.conf\",\"contents\":{\"source\":\"data:," c "\"}}"
	static const char with[] =
		"{\"systemd\":{\"units\":[" AGENT_UNIT ",{\"name\":\"ironic-agent.service\",\"enabled\":true}]},"
		"\"storage\":{\"files\":[" CONF("%0A%5BDEFAULT%5D%0Aapi_url%20%3D%20https%3A%2F%2Fhub%3A6385,https%3A%2F%2Fb%0A"
						"inspection_callback_url%20%3D%20https%3A%2F%2Fhub%3A5050%2Fv1%2Fcontinue%0A"
						"insecure%20%3D%20True%0A") "]}}";
	static const char unit_off[] =
		"{\"systemd\":{\"units\":[" AGENT_UNIT ",{\"name\":\"ironic-agent.service\",\"enabled\":false}]},"
		"\"storage\":{\"files\":[" CONF("api_url%20%3D%20http%3A%2F%2Fx%0A") "]}}";
	static const char bad_url[] =
		"{\"systemd\":{\"units\":[" AGENT_UNIT ",{\"name\":\"ironic-agent.service\"}]},"
		"\"storage\":{\"files\":[" CONF("api_url%20%3D%20ftp%3A%2F%2Fx%0A") "]}}";
	struct fakehost_config c;
	ah_err err = { 0 };

	assert_int_equal(fakehost_config_from_ignition(with, &c, &err), 0);
	assert_string_equal(c.ipa_api_url, "https://hub:6385");
	assert_string_equal(c.ipa_inspection_url, "https://hub:5050/v1/continue");
	assert_true(c.ipa_insecure);
	assert_string_equal(c.service_url, "http://h:1");
	fakehost_config_release(&c);
	assert_int_equal(fakehost_config_from_ignition(unit_off, &c, &err), 0);
	assert_null(c.ipa_api_url);
	fakehost_config_release(&c);
	assert_int_equal(fakehost_config_from_ignition(bad_url, &c, &err), -EINVAL);
	assert_non_null(strstr(err.message, "api_url"));
#undef AGENT_UNIT
#undef CONF
}

/* The ironic agent's inventory is the same machine as the assisted one. */
static void test_ipa_inventory(void **state)
{
	struct fakehost_fleet f = fleet(3, 4, "192.168.111.0/24");
	json_t *inv = fakehost_ipa_inventory(&f, 2), *a = fakehost_inventory(&f, 2);
	char mac[18];

	assert_non_null(inv);
	fakehost_mac(&f, 2, mac);
	assert_string_equal(STR(json_array_get(json_object_get(inv, "interfaces"), 0), "mac_address"), mac);
	assert_string_equal(STR(json_object_get(inv, "boot"), "pxe_interface"), mac);
	assert_string_equal(STR(json_array_get(json_object_get(inv, "interfaces"), 0), "ipv4_address"),
			    "192.168.111.12");
	assert_int_equal(json_array_size(json_object_get(inv, "disks")), 1); /* not the CD */
	assert_int_equal(INT(json_array_get(json_object_get(inv, "disks"), 0), "size"), 120ll << 30);
	assert_int_equal(INT(json_object_get(inv, "cpu"), "count"), 8);
	assert_int_equal(INT(json_object_get(inv, "memory"), "physical_mb"), 32 * 1024);
	assert_string_equal(STR(inv, "hostname"), STR(a, "hostname"));
	json_decref(inv);
	json_decref(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fleet_init),
		cmocka_unit_test(test_identities),
		cmocka_unit_test(test_inventory_shape),
		cmocka_unit_test(test_step_replies),
		cmocka_unit_test(test_install_stages),
		cmocka_unit_test(test_config_from_built_ignition),
		cmocka_unit_test(test_config_handwritten),
		cmocka_unit_test(test_config_ironic_agent),
		cmocka_unit_test(test_ipa_inventory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
