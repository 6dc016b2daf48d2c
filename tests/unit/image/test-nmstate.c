/* Tests for src/image/nmstate.c: nmstate to keyfile conversion (one row per
 * supported shape, with its exact keyfiles), validation errors (one row per
 * rule), the MAC map, the bundle, the Ignition parts (decoded back), and the
 * 10,000-host scale case within the 262,144-byte embed area.  Generated
 * Ignition is checked with ignition-validate when it is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "base/strbuf.h"
#include "base/util.h"
#include "image/ignition.h"
#include "image/iso.h"
#include "image/nmstate.h"

struct kf_row {
	const char *what;
	const char *yaml;
	const char *want; /* "== <file>\n<contents>" per keyfile */
};

static const struct kf_row kf_rows[] = {
	{
		"ethernet, static IPv4, DNS, routes with table and metric (upstream sample)",
		"interfaces:\n"
		"  - name: eth0\n"
		"    type: ethernet\n"
		"    state: up\n"
		"    mac-address: 02:00:00:80:12:14\n"
		"    ipv4:\n"
		"      enabled: true\n"
		"      address:\n"
		"        - ip: 192.168.126.30\n"
		"          prefix-length: 24\n"
		"      dhcp: false\n"
		"  - name: eth1\n"
		"    type: ethernet\n"
		"    state: up\n"
		"    mac-address: 02:00:00:80:12:15\n"
		"    ipv4:\n"
		"      enabled: true\n"
		"      address:\n"
		"        - ip: 192.168.140.30\n"
		"          prefix-length: 24\n"
		"      dhcp: false\n"
		"dns-resolver:\n"
		"  config:\n"
		"    server:\n"
		"      - 192.168.126.1\n"
		"routes:\n"
		"  config:\n"
		"    - destination: 0.0.0.0/0\n"
		"      next-hop-address: 192.168.126.1\n"
		"      next-hop-interface: eth0\n"
		"      table-id: 254\n"
		"    - destination: 0.0.0.0/0\n"
		"      next-hop-address: 192.168.140.1\n"
		"      next-hop-interface: eth1\n"
		"      table-id: 254\n"
		"      metric: 100\n",
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ethernet]\n"
		"cloned-mac-address=02:00:00:80:12:14\n"
		"\n"
		"[ipv4]\n"
		"address1=192.168.126.30/24\n"
		"dns=192.168.126.1;\n"
		"dns-priority=40\n"
		"method=manual\n"
		"route1=0.0.0.0/0,192.168.126.1\n"
		"route1_options=table=254\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n"
		"== eth1.nmconnection\n"
		"[connection]\n"
		"id=eth1\n"
		"uuid=0523c0a1-5f5e-5603-bcf2-68155d5d322e\n"
		"type=ethernet\n"
		"interface-name=eth1\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ethernet]\n"
		"cloned-mac-address=02:00:00:80:12:15\n"
		"\n"
		"[ipv4]\n"
		"address1=192.168.140.30/24\n"
		"method=manual\n"
		"route1=0.0.0.0/0,192.168.140.1,100\n"
		"route1_options=table=254\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n" },

	{
		"ethernet, DHCPv4, DHCPv6 + autoconf, MAC, MTU",
		"interfaces:\n"
		"- name: eth0\n"
		"  type: ethernet\n"
		"  state: up\n"
		"  mac-address: 52:54:00:AA:BB:01\n"
		"  mtu: 1450\n"
		"  ipv4:\n"
		"    enabled: true\n"
		"    dhcp: true\n"
		"  ipv6:\n"
		"    enabled: true\n"
		"    dhcp: true\n"
		"    autoconf: true\n",
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ethernet]\n"
		"cloned-mac-address=52:54:00:AA:BB:01\n"
		"mtu=1450\n"
		"\n"
		"[ipv4]\n"
		"method=auto\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=auto\n" },

	{
		"bond 802.3ad with options, defined and implicit ports, static IPv4, gateway",
		"interfaces:\n"
		"- name: bond0\n"
		"  type: bond\n"
		"  state: up\n"
		"  link-aggregation:\n"
		"    mode: 802.3ad\n"
		"    options:\n"
		"      miimon: \"100\"\n"
		"      lacp_rate: fast\n"
		"      xmit_hash_policy: layer3+4\n"
		"    port:\n"
		"    - eth0\n"
		"    - eth1\n"
		"  ipv4:\n"
		"    enabled: true\n"
		"    address:\n"
		"    - ip: 10.0.0.5\n"
		"      prefix-length: 24\n"
		"- name: eth0\n"
		"  type: ethernet\n"
		"  state: up\n"
		"  ipv4:\n"
		"    enabled: false\n"
		"  ipv6:\n"
		"    enabled: false\n"
		"routes:\n"
		"  config:\n"
		"  - destination: 0.0.0.0/0\n"
		"    next-hop-address: 10.0.0.1\n"
		"    next-hop-interface: bond0\n",
		"== bond0.nmconnection\n"
		"[connection]\n"
		"id=bond0\n"
		"uuid=925b4a95-2de0-5b2d-bcf5-8b684a7e9cb4\n"
		"type=bond\n"
		"interface-name=bond0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"autoconnect-slaves=1\n"
		"\n"
		"[bond]\n"
		"mode=802.3ad\n"
		"lacp_rate=fast\n"
		"miimon=100\n"
		"xmit_hash_policy=layer3+4\n"
		"\n"
		"[ipv4]\n"
		"address1=10.0.0.5/24\n"
		"method=manual\n"
		"route1=0.0.0.0/0,10.0.0.1\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n"
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"master=bond0\n"
		"slave-type=bond\n"
		"== eth1.nmconnection\n"
		"[connection]\n"
		"id=eth1\n"
		"uuid=0523c0a1-5f5e-5603-bcf2-68155d5d322e\n"
		"type=ethernet\n"
		"interface-name=eth1\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"master=bond0\n"
		"slave-type=bond\n" },

	{
		"VLAN, static IPv6, IPv6 DNS and search, route with metric and table",
		"interfaces:\n"
		"- name: eth0\n"
		"  type: ethernet\n"
		"  state: up\n"
		"- name: eth0.100\n"
		"  type: vlan\n"
		"  state: up\n"
		"  vlan:\n"
		"    base-iface: eth0\n"
		"    id: 100\n"
		"  ipv6:\n"
		"    enabled: true\n"
		"    address:\n"
		"    - ip: 2001:db8::10\n"
		"      prefix-length: 64\n"
		"dns-resolver:\n"
		"  config:\n"
		"    server:\n"
		"    - 2001:db8::53\n"
		"    search:\n"
		"    - example.com\n"
		"    - lab.example.com\n"
		"routes:\n"
		"  config:\n"
		"  - destination: ::/0\n"
		"    next-hop-address: 2001:db8::1\n"
		"    next-hop-interface: eth0.100\n"
		"    metric: 150\n"
		"    table-id: 100\n",
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ipv4]\n"
		"method=disabled\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n"
		"== eth0.100.nmconnection\n"
		"[connection]\n"
		"id=eth0.100\n"
		"uuid=fe885346-7e38-5cc2-9b35-2043508caa28\n"
		"type=vlan\n"
		"interface-name=eth0.100\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[vlan]\n"
		"id=100\n"
		"parent=eth0\n"
		"\n"
		"[ipv4]\n"
		"method=disabled\n"
		"\n"
		"[ipv6]\n"
		"address1=2001:db8::10/64\n"
		"addr-gen-mode=eui64\n"
		"dns=2001:db8::53;\n"
		"dns-priority=40\n"
		"dns-search=example.com;lab.example.com;\n"
		"method=manual\n"
		"route1=::/0,2001:db8::1,150\n"
		"route1_options=table=100\n" },

	{
		"linux-bridge without STP, port, DHCP with auto-* options, route without gateway",
		"interfaces:\n"
		"- name: br0\n"
		"  type: linux-bridge\n"
		"  state: up\n"
		"  bridge:\n"
		"    options:\n"
		"      stp:\n"
		"        enabled: false\n"
		"    port:\n"
		"    - name: eth0\n"
		"  ipv4:\n"
		"    enabled: true\n"
		"    dhcp: true\n"
		"    auto-dns: false\n"
		"    auto-gateway: false\n"
		"    auto-routes: false\n"
		"    auto-route-table-id: 200\n"
		"    auto-route-metric: 50\n"
		"routes:\n"
		"  config:\n"
		"  - destination: 10.0.0.0/8\n"
		"    next-hop-interface: br0\n",
		"== br0.nmconnection\n"
		"[connection]\n"
		"id=br0\n"
		"uuid=21dd2f8f-7814-535b-8225-a001da95c87e\n"
		"type=bridge\n"
		"interface-name=br0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"autoconnect-slaves=1\n"
		"\n"
		"[bridge]\n"
		"stp=false\n"
		"\n"
		"[ipv4]\n"
		"ignore-auto-dns=true\n"
		"ignore-auto-routes=true\n"
		"method=auto\n"
		"never-default=true\n"
		"route1=10.0.0.0/8\n"
		"route-metric=50\n"
		"route-table=200\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n"
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"master=br0\n"
		"slave-type=bridge\n" },

	{
		"state down and absent, IPv6 link-local",
		"interfaces:\n"
		"- name: eth0\n"
		"  type: ethernet\n"
		"  state: down\n"
		"- name: eth1\n"
		"  type: ethernet\n"
		"  state: absent\n"
		"- name: eth2\n"
		"  type: ethernet\n"
		"  ipv6:\n"
		"    enabled: true\n",
		"== eth0.nmconnection\n"
		"[connection]\n"
		"id=eth0\n"
		"uuid=dfd202f5-562f-5f07-8f2a-a7717756fb70\n"
		"type=ethernet\n"
		"interface-name=eth0\n"
		"autoconnect=false\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ipv4]\n"
		"method=disabled\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n"
		"== eth2.nmconnection\n"
		"[connection]\n"
		"id=eth2\n"
		"uuid=21373057-f376-5091-afb6-64de925c23ed\n"
		"type=ethernet\n"
		"interface-name=eth2\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ipv4]\n"
		"method=disabled\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=link-local\n" },

	{
		"identifier mac-address, two addresses",
		"interfaces:\n"
		"- name: nic0\n"
		"  type: ethernet\n"
		"  identifier: mac-address\n"
		"  mac-address: 52:54:00:aa:bb:02\n"
		"  ipv4:\n"
		"    enabled: true\n"
		"    address:\n"
		"    - ip: 192.0.2.4\n"
		"      prefix-length: 26\n"
		"    - ip: 192.0.2.70\n"
		"      prefix-length: 26\n",
		"== nic0.nmconnection\n"
		"[connection]\n"
		"id=nic0\n"
		"uuid=c0fd6ca2-7e08-51f0-889b-ece452ae1b35\n"
		"type=ethernet\n"
		"autoconnect=true\n"
		"autoconnect-priority=1\n"
		"\n"
		"[ethernet]\n"
		"mac-address=52:54:00:aa:bb:02\n"
		"\n"
		"[ipv4]\n"
		"address1=192.0.2.4/26\n"
		"address2=192.0.2.70/26\n"
		"method=manual\n"
		"\n"
		"[ipv6]\n"
		"addr-gen-mode=eui64\n"
		"method=disabled\n" },

};

static json_t *yaml(const char *text)
{
	json_t *doc = NULL;
	ah_err err;

	if (nmstate_parse_yaml(text, strlen(text), &doc, &err) < 0)
		fail_msg("YAML: %s", err.message);
	return doc;
}

static char *render(const json_t *files)
{
	strbuf sb = STRBUF_INIT;
	size_t i;
	json_t *f;

	json_array_foreach(files, i, f)
		strbuf_addf(&sb, "== %s\n%s", json_string_value(json_object_get(f, "name")),
			    json_string_value(json_object_get(f, "contents")));
	return strbuf_detach(&sb, NULL);
}

static void test_keyfile_rows(void **state)
{
	for (size_t i = 0; i < sizeof(kf_rows) / sizeof(kf_rows[0]); i++) {
		json_t *doc = yaml(kf_rows[i].yaml), *files = NULL, *again = NULL;
		char *got, *got2;
		ah_err err;

		if (nmstate_to_keyfiles(doc, &files, &err) < 0)
			fail_msg("row %zu (%s): %s", i, kf_rows[i].what, err.message);
		got = render(files);
		if (strcmp(got, kf_rows[i].want) != 0)
			fail_msg("row %zu (%s):\n--- got\n%s--- want\n%s", i, kf_rows[i].what, got,
				 kf_rows[i].want);
		/* Deterministic: the same input gives the same bytes. */
		assert_int_equal(nmstate_to_keyfiles(doc, &again, &err), 0);
		got2 = render(again);
		assert_string_equal(got, got2);
		free(got);
		free(got2);
		json_decref(files);
		json_decref(again);
		json_decref(doc);
	}
}

static void test_stable_uuid(void **state)
{
	/* Values from Python's uuid.uuid5(uuid.NAMESPACE_URL, ...). */
	static const char *const rows[][3] = {
		{ "ethernet", "eth0", "dfd202f5-562f-5f07-8f2a-a7717756fb70" },
		{ "ethernet", "eth1", "0523c0a1-5f5e-5603-bcf2-68155d5d322e" },
		{ "bond", "bond0", "925b4a95-2de0-5b2d-bcf5-8b684a7e9cb4" },
		{ "vlan", "eth0.100", "fe885346-7e38-5cc2-9b35-2043508caa28" },
		{ "linux-bridge", "br0", "21dd2f8f-7814-535b-8225-a001da95c87e" },
	};
	char buf[37];

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		nmstate_stable_uuid(rows[i][0], rows[i][1], buf, sizeof(buf));
		assert_string_equal(buf, rows[i][2]);
	}
}

/* ---------- validation: one row per rule ---------- */

#define ETH0 "interfaces:\n- name: eth0\n  type: ethernet\n"

static const struct {
	const char *yaml;
	const char *want; /* substring of the error message */
} err_rows[] = {
	{ "interfaces: [", "invalid nmstate YAML" },
	{ "- a\n- b\n", "expected one mapping" },
	{ "interfaces: []\n", "at least one interface" },
	{ "foo: 1\n" ETH0, "config: unsupported key \"foo\"" },
	{ "interfaces:\n- name: team0\n  type: team\n",
	  "interface team0: unsupported interface type \"team\"" },
	{ "interfaces:\n- name: eth0\n", "interface eth0: type is required" },
	{ "interfaces:\n- type: ethernet\n", "interfaces[0].name: required" },
	{ "interfaces:\n- name: averyveryverylongname\n  type: ethernet\n",
	  "is not a valid interface name" },
	{ ETH0 "- name: eth0\n  type: ethernet\n", "eth0 is defined twice" },
	{ ETH0 "  ethtool: {}\n", "interface eth0: unsupported key \"ethtool\"" },
	{ ETH0 "  state: sleepy\n", "state \"sleepy\" must be up, down or absent" },
	{ ETH0 "  mac-address: 02:00:00:zz:00:01\n", "is not a MAC address" },
	{ ETH0 "  mtu: 10\n", "interface eth0: mtu: 10 is out of range" },
	{ ETH0 "  ipv4:\n    enabled: true\n    address:\n    - ip: 192.168.1.300\n      prefix-length: 24\n",
	  "ipv4.address[0].ip: \"192.168.1.300\" is not a valid IPv4 address" },
	{ ETH0 "  ipv4:\n    enabled: true\n    address:\n    - ip: 192.168.1.3\n      prefix-length: 33\n",
	  "ipv4.address[0].prefix-length: 33 is out of range 0-32" },
	{ ETH0 "  ipv4:\n    enabled: true\n    address:\n    - ip: 192.168.1.3\n",
	  "ipv4.address[0].prefix-length: required" },
	{ ETH0 "  ipv6:\n    enabled: true\n    address:\n    - ip: 2001:db8::1\n      prefix-length: 129\n",
	  "ipv6.address[0].prefix-length: 129 is out of range 0-128" },
	{ ETH0 "  ipv6:\n    enabled: true\n    address:\n    - ip: 10.0.0.1\n      prefix-length: 64\n",
	  "is not a valid IPv6 address" },
	{ ETH0 "  ipv4:\n    enabled: true\n    address:\n    - ip: 10.0.0.1\n      prefix-length: x\n",
	  "\"x\" is not an integer" },
	{ ETH0 "  ipv4:\n    enabled: true\n    dhcp: yes-please\n", "ipv4.dhcp: must be true or false" },
	{ ETH0 "  ipv4:\n    enabled: true\n    auto-dns: false\n", "auto-dns: only applies with dhcp" },
	{ ETH0 "  ipv4:\n    enabled: false\n    dhcp: true\n", "ipv4.dhcp: needs ipv4.enabled: true" },
	{ "interfaces:\n- name: bond0\n  type: bond\n", "link-aggregation: required for a bond" },
	{ "interfaces:\n- name: bond0\n  type: bond\n  link-aggregation:\n    mode: fastest\n",
	  "unknown bond mode \"fastest\"" },
	{ "interfaces:\n- name: bond0\n  type: bond\n  link-aggregation:\n    mode: balance-rr\n    options:\n      speed: 9\n",
	  "unknown bond option \"speed\"" },
	{ "interfaces:\n- name: bond0\n  type: bond\n  link-aggregation:\n    mode: balance-rr\n    port: [bond0]\n",
	  "cannot be its own port" },
	{ "interfaces:\n- name: eth0\n  type: ethernet\n  ipv4: {enabled: true, dhcp: true}\n"
	  "- name: bond0\n  type: bond\n  link-aggregation:\n    mode: balance-rr\n    port: [eth0]\n",
	  "port eth0 must not have ipv4 enabled" },
	{ "interfaces:\n- name: v\n  type: vlan\n  vlan:\n    base-iface: eth0\n    id: 5000\n",
	  "vlan.id: 5000 is out of range 0-4094" },
	{ "interfaces:\n- name: v\n  type: vlan\n  vlan:\n    id: 5\n", "vlan.base-iface: required" },
	{ "interfaces:\n- name: br0\n  type: linux-bridge\n  bridge:\n    options:\n      stp:\n        colour: red\n",
	  "unsupported key \"colour\"" },
	{ ETH0 "routes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth9\n",
	  "routes.config[0].next-hop-interface: \"eth9\" is not an interface of this config" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\nroutes:\n  config:\n  - destination: 0.0.0.0/40\n    next-hop-interface: eth0\n",
	  "routes.config[0].destination: \"0.0.0.0/40\" is not an address/prefix" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\nroutes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-address: fe80::1\n    next-hop-interface: eth0\n",
	  "next-hop-address: not a valid IPv4 address" },
	{ ETH0 "routes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth0\n",
	  "interface eth0 has ipv4 disabled" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\nroutes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth0\n    metric: -1\n",
	  "routes.config[0].metric: -1 is out of range" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\nroutes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth0\n    table-id: x\n",
	  "routes.config[0].table-id: \"x\" is not an integer" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\nroutes:\n  config:\n  - destination: 0.0.0.0/0\n    next-hop-interface: eth0\n    state: maybe\n",
	  "routes.config[0].state: only absent is allowed" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\ndns-resolver:\n  config:\n    search: [\"a b\"]\n",
	  "search[0]: \"a b\" is not a domain" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\ndns-resolver:\n  config:\n    server: [8.8.8.300]\n",
	  "server[0]: \"8.8.8.300\" is not an IP address" },
	{ ETH0 "  ipv4: {enabled: true, dhcp: true}\ndns-resolver:\n  config:\n    server: [2001:db8::53]\n",
	  "no interface has IPv6 enabled to hold DNS server 2001:db8::53" },
	{ ETH0 "  state: absent\n", "nmstate generated an empty NetworkManager config file content" },
};

static void test_error_rows(void **state)
{
	for (size_t i = 0; i < sizeof(err_rows) / sizeof(err_rows[0]); i++) {
		const char *y = err_rows[i].yaml;
		json_t *doc = NULL, *files = NULL;
		ah_err err;
		int r;

		ah_err_clear(&err);
		r = nmstate_parse_yaml(y, strlen(y), &doc, &err);
		if (r == 0)
			r = nmstate_to_keyfiles(doc, &files, &err);
		if (r != -EINVAL)
			fail_msg("row %zu (%s): want -EINVAL, got %d", i, err_rows[i].want, r);
		if (!strstr(err.message, err_rows[i].want))
			fail_msg("row %zu: message \"%s\" lacks \"%s\"", i, err.message,
				 err_rows[i].want);
		assert_int_equal(err.status, 400);
		assert_null(files);
		json_decref(doc);
	}
}

/* ---------- the MAC map ---------- */

#define SAMPLE_IFACES "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}," \
		      "{\"name\":\"eth1\",\"macAddress\":\"02:00:00:80:12:15\"}]"

static void test_mac_map_rows(void **state)
{
	static const struct {
		const char *yaml, *ifaces, *want, *err;
	} rows[] = {
		{ NULL, SAMPLE_IFACES, "02:00:00:80:12:14=eth0\n02:00:00:80:12:15=eth1\n", NULL },
		/* Sorted by line whatever the input order. */
		{ NULL, "[{\"name\":\"eth1\",\"macAddress\":\"02:00:00:80:12:15\"},"
			"{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]",
		  "02:00:00:80:12:14=eth0\n02:00:00:80:12:15=eth1\n", NULL },
		{ NULL, "[]", NULL, "at least one interface must be provided" },
		{ NULL, "[{\"name\":\"eth0\"}]", NULL,
		  "spec.interfaces[0].macAddress: required (interface eth0 has no MAC address)" },
		{ NULL, "[{\"name\":\"eth0\",\"macAddress\":\"02-00-00-80-12-14\"}]", NULL,
		  "is not a MAC address" },
		{ NULL, "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"},"
			"{\"name\":\"eth1\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "MACs and interfaces must be unique: MAC 02:00:00:80:12:14 is listed twice" },
		{ NULL, "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"},"
			"{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:16\"}]", NULL,
		  "interface eth0 is listed twice" },
		{ NULL, "[{\"name\":\"eth7\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "interface eth7 is not in spec.config" },
		{ NULL, "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "mac-interface mapping for interface eth1 is missing and not a physical interface" },
		/* A physical name, or identifier: mac-address, needs no entry. */
		{ "interfaces:\n- name: ens3\n  type: ethernet\n- name: eth0\n  type: ethernet\n"
		  "- name: nic9\n  type: ethernet\n  identifier: mac-address\n  mac-address: 02:00:00:00:00:09\n",
		  "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]", "02:00:00:80:12:14=eth0\n",
		  NULL },
		/* So must the base of a VLAN the config does not define. */
		{ "interfaces:\n- name: eth2.7\n  type: vlan\n  vlan: {base-iface: eth2, id: 7}\n",
		  "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "interface eth0 is not in spec.config" },
		{ "interfaces:\n- name: eth0\n  type: ethernet\n"
		  "- name: eth2.7\n  type: vlan\n  vlan: {base-iface: eth2, id: 7}\n",
		  "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "mac-interface mapping for interface eth2 is missing" },
		{ "interfaces:\n- name: eth2.7\n  type: vlan\n  vlan: {base-iface: eth2, id: 7}\n",
		  "[{\"name\":\"eth2\",\"macAddress\":\"02:00:00:80:12:14\"}]",
		  "02:00:00:80:12:14=eth2\n", NULL },
		/* Bond ports the config only names must be mapped too. */
		{ "interfaces:\n- name: bond0\n  type: bond\n  link-aggregation:\n    mode: active-backup\n"
		  "    port: [eth0, eth1]\n",
		  "[{\"name\":\"eth0\",\"macAddress\":\"02:00:00:80:12:14\"}]", NULL,
		  "mac-interface mapping for interface eth1 is missing" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *doc = yaml(rows[i].yaml ? rows[i].yaml : kf_rows[0].yaml);
		json_t *ifaces = json_loads(rows[i].ifaces, 0, NULL);
		char *ini = NULL;
		ah_err err;
		int r;

		ah_err_clear(&err);
		r = nmstate_mac_interface_ini(doc, ifaces, &ini, &err);
		if (rows[i].want) {
			if (r < 0)
				fail_msg("row %zu: %s", i, err.message);
			assert_string_equal(ini, rows[i].want);
		} else {
			assert_int_equal(r, -EINVAL);
			if (!strstr(err.message, rows[i].err))
				fail_msg("row %zu: \"%s\" lacks \"%s\"", i, err.message, rows[i].err);
			assert_null(ini);
		}
		free(ini);
		json_decref(ifaces);
		json_decref(doc);
	}
}

/* ---------- bundle and Ignition parts ---------- */

/* A host of the upstream sample's shape; i picks its MACs and addresses. */
static void sample_host(size_t i, json_t **ret_cfg, json_t **ret_ifaces)
{
	char m0[18], m1[18], ip0[16], ip1[16], text[2048];

	snprintf(m0, sizeof(m0), "02:00:%02X:%02X:%02X:%02X", (unsigned)((2 * i) >> 24) & 255,
		 (unsigned)((2 * i) >> 16) & 255, (unsigned)((2 * i) >> 8) & 255,
		 (unsigned)(2 * i) & 255);
	snprintf(m1, sizeof(m1), "02:00:%02X:%02X:%02X:%02X", (unsigned)((2 * i + 1) >> 24) & 255,
		 (unsigned)((2 * i + 1) >> 16) & 255, (unsigned)((2 * i + 1) >> 8) & 255,
		 (unsigned)(2 * i + 1) & 255);
	snprintf(ip0, sizeof(ip0), "10.126.%zu.%zu", i / 250, i % 250 + 1);
	snprintf(ip1, sizeof(ip1), "10.140.%zu.%zu", i / 250, i % 250 + 1);
	snprintf(text, sizeof(text),
		 "interfaces:\n"
		 "- name: eth0\n  type: ethernet\n  state: up\n  mac-address: %s\n"
		 "  ipv4:\n    enabled: true\n    address:\n    - ip: %s\n      prefix-length: 16\n"
		 "    dhcp: false\n"
		 "- name: eth1\n  type: ethernet\n  state: up\n  mac-address: %s\n"
		 "  ipv4:\n    enabled: true\n    address:\n    - ip: %s\n      prefix-length: 16\n"
		 "    dhcp: false\n"
		 "dns-resolver:\n  config:\n    server:\n    - 10.126.0.1\n"
		 "routes:\n  config:\n"
		 "  - destination: 0.0.0.0/0\n    next-hop-address: 10.126.0.1\n"
		 "    next-hop-interface: eth0\n    table-id: 254\n"
		 "  - destination: 0.0.0.0/0\n    next-hop-address: 10.140.0.1\n"
		 "    next-hop-interface: eth1\n    table-id: 254\n    metric: 100\n",
		 m0, ip0, m1, ip1);
	*ret_cfg = yaml(text);
	*ret_ifaces = json_pack("[{s:s,s:s},{s:s,s:s}]", "name", "eth0", "macAddress", m0, "name",
				"eth1", "macAddress", m1);
}

static void test_bundle(void **state)
{
	json_t *cfg = yaml(kf_rows[0].yaml), *ifaces = json_loads(SAMPLE_IFACES, 0, NULL);
	json_t *cfg2, *ifaces2, *files = NULL;
	struct nmstate_host hosts[2] = { { "spoke-cluster/a", cfg, ifaces }, { "spoke-cluster/b", NULL, NULL } };
	char *bundle = NULL, *want, *kf;
	size_t len = 0;
	ah_err err;

	sample_host(7, &cfg2, &ifaces2);
	hosts[1].config = cfg2;
	hosts[1].interfaces = ifaces2;
	assert_int_equal(nmstate_bundle_build(hosts, 2, &bundle, &len, &err), 0);
	assert_int_equal(len, strlen(bundle));
	/* Header, then host 0: its MAC map, then its keyfiles. */
	assert_int_equal(nmstate_to_keyfiles(cfg, &files, &err), 0);
	kf = render(files);
	for (char *p = kf; (p = strstr(p, "== ")); )
		memmove(p, p + 2, strlen(p + 2) + 1), *p = '>';
	assert_true(asprintf(&want, NMSTATE_BUNDLE_MAGIC "\n@\n>mac_interface.ini\n"
			     "02:00:00:80:12:14=eth0\n02:00:00:80:12:15=eth1\n%s@\n"
			     ">mac_interface.ini\n02:00:00:00:00:0E=eth0\n02:00:00:00:00:0F=eth1\n",
			     kf) > 0);
	assert_memory_equal(bundle, want, strlen(want));
	assert_non_null(strstr(bundle + strlen(want), "address1=10.126.0.8/16\n"));
	/* Host lines never look like bundle markers. */
	for (char *l = bundle; (l = strchr(l, '\n')) && l[1]; l++)
		if (l[1] == '#')
			fail_msg("a '#' line in the bundle");
	free(want);
	free(kf);
	free(bundle);
	json_decref(files);

	/* The same MAC in two configs names both. */
	hosts[1].config = cfg;
	hosts[1].interfaces = ifaces;
	bundle = NULL;
	assert_int_equal(nmstate_bundle_build(hosts, 2, &bundle, &len, &err), -EINVAL);
	assert_string_equal(err.message, "NMStateConfig spoke-cluster/b: MAC 02:00:00:80:12:14 is "
					 "also listed by NMStateConfig spoke-cluster/a");
	assert_null(bundle);

	/* A bad host is named with its problem; nothing is built. */
	{
		json_t *bad = yaml(ETH0 "  mtu: 10\n");

		hosts[1].config = bad;
		hosts[1].interfaces = ifaces2;
		assert_int_equal(nmstate_bundle_build(hosts, 2, &bundle, &len, &err), -EINVAL);
		assert_string_equal(err.message, "NMStateConfig spoke-cluster/b: interface eth0: mtu: "
						 "10 is out of range 68-65535");
		json_decref(bad);
	}
	json_decref(cfg);
	json_decref(ifaces);
	json_decref(cfg2);
	json_decref(ifaces2);
}

static char *gunzip_data_url(const char *src, size_t *ret_len)
{
	const char *comma = strchr(src, ',');
	unsigned char *gz = NULL;
	size_t gzlen = 0, cap = 1 << 20;
	char *out = malloc(cap);
	z_stream zs;

	assert_non_null(comma);
	assert_int_equal(strncmp(src, "data:;base64,", 13), 0);
	assert_int_equal(util_base64_decode(comma + 1, strlen(comma + 1), &gz, &gzlen), 0);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(inflateInit2(&zs, 31), Z_OK);
	zs.next_in = gz;
	zs.avail_in = (uInt)gzlen;
	for (;;) {
		int zr;

		if (zs.total_out + 4096 > cap) {
			cap *= 2;
			out = realloc(out, cap);
		}
		zs.next_out = (unsigned char *)out + zs.total_out;
		zs.avail_out = (uInt)(cap - zs.total_out - 1);
		zr = inflate(&zs, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		assert_int_equal(zr, Z_OK);
	}
	out[zs.total_out] = '\0';
	*ret_len = zs.total_out;
	inflateEnd(&zs);
	free(gz);
	return out;
}

static void base_params(struct discovery_params *p)
{
	memset(p, 0, sizeof(*p));
	p->service_base_url = "https://192.168.111.1:6443";
	p->infra_env_id = "0b8e4d9a-5a64-4a3c-9c0e-2f1f0c6a1b11";
	p->pull_secret = "{\"auths\":{}}";
}

static void assert_ignition_valid(const char *text)
{
	char path[] = "/tmp/test-nmstate-XXXXXX";
	char cmd[256];
	int fd, st;

	if (access("/usr/bin/ignition-validate", X_OK) != 0) {
		print_message("ignition-validate not installed; skipped\n");
		return;
	}
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	snprintf(cmd, sizeof(cmd), "/usr/bin/ignition-validate %s >/dev/null 2>&1", path);
	st = system(cmd);
	unlink(path);
	assert_int_equal(st, 0);
}

static void test_ignition_parts(void **state)
{
	json_t *cfg = yaml(kf_rows[0].yaml), *ifaces = json_loads(SAMPLE_IFACES, 0, NULL);
	struct nmstate_host h = { "spoke-cluster/mynmstateconfig", cfg, ifaces };
	json_t *files = NULL, *units = NULL, *f2 = NULL, *u2 = NULL, *f;
	struct discovery_params p;
	char *bundle = NULL, *data, *ign = NULL;
	size_t blen = 0, dlen = 0, i;
	ah_err err;

	assert_int_equal(nmstate_ignition_parts(&h, 1, &files, &units, &err), 0);
	assert_int_equal(json_array_size(files), 3);
	assert_int_equal(json_array_size(units), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(units, 0), "name")),
			    "pre-network-manager-config.service");
	assert_true(json_is_true(json_object_get(json_array_get(units, 0), "enabled")));
	json_array_foreach(files, i, f) {
		const char *path = json_string_value(json_object_get(f, "path"));
		const json_t *c = json_object_get(f, "contents");

		assert_true(json_is_true(json_object_get(f, "overwrite")));
		if (strcmp(path, NMSTATE_BUNDLE_PATH) == 0) {
			assert_int_equal(json_integer_value(json_object_get(f, "mode")), 384);
			assert_string_equal(json_string_value(json_object_get(c, "compression")), "gzip");
			data = gunzip_data_url(json_string_value(json_object_get(c, "source")), &dlen);
			assert_int_equal(nmstate_bundle_build(&h, 1, &bundle, &blen, &err), 0);
			assert_int_equal(dlen, blen);
			assert_string_equal(data, bundle);
			assert_non_null(strstr(data, "address1=192.168.126.30/24\n"));
			free(data);
			free(bundle);
		} else {
			assert_true(strcmp(path, NMSTATE_PRE_SCRIPT_PATH) == 0 ||
				    strcmp(path, NMSTATE_COMMON_SCRIPT_PATH) == 0);
			assert_int_equal(json_integer_value(json_object_get(f, "mode")), 493);
			assert_null(json_object_get(c, "compression"));
		}
	}
	/* Deterministic. */
	assert_int_equal(nmstate_ignition_parts(&h, 1, &f2, &u2, &err), 0);
	assert_true(json_equal(files, f2) && json_equal(units, u2));

	/* In the discovery Ignition, valid for ignition-validate. */
	base_params(&p);
	p.static_network_files = files;
	p.static_network_units = units;
	assert_int_equal(ignition_build_discovery(&p, &ign, NULL, &err), 0);
	assert_non_null(strstr(ign, "\"path\":\"" NMSTATE_BUNDLE_PATH "\""));
	assert_non_null(strstr(ign, "\"name\":\"pre-network-manager-config.service\""));
	assert_ignition_valid(ign);
	free(ign);

	assert_int_equal(nmstate_ignition_parts(&h, 0, &f2, &u2, &err), -EINVAL);
	json_decref(files);
	json_decref(units);
	json_decref(f2);
	json_decref(u2);
	json_decref(cfg);
	json_decref(ifaces);
}

/* 10,000 hosts of the upstream sample's shape fit the standard embed area,
 * with room to spare (the whole discovery Ignition, as a gzip'd cpio). */
static void test_ten_thousand_hosts_fit(void **state)
{
	enum { N = 10000 };
	struct nmstate_host *hosts = calloc(N, sizeof(*hosts));
	json_t **keep = calloc(2 * N, sizeof(*keep));
	json_t *files = NULL, *units = NULL;
	struct discovery_params p;
	unsigned char *payload = NULL;
	size_t plen = 0, len = 0;
	char *ign = NULL;
	ah_err err;

	for (size_t i = 0; i < N; i++) {
		sample_host(i, &keep[2 * i], &keep[2 * i + 1]);
		hosts[i].label = "ns/x";
		hosts[i].config = keep[2 * i];
		hosts[i].interfaces = keep[2 * i + 1];
	}
	assert_int_equal(nmstate_ignition_parts(hosts, N, &files, &units, &err), 0);
	base_params(&p);
	p.static_network_files = files;
	p.static_network_units = units;
	assert_int_equal(ignition_build_discovery(&p, &ign, &len, &err), 0);
	assert_int_equal(ignition_payload_build(ign, len, &payload, &plen, &err), 0);
	print_message("10000 hosts: ignition %zu bytes, embed payload %zu of %d bytes\n", len, plen,
		      ISO_IGNITION_AREA_SIZE);
	assert_true(plen <= ISO_IGNITION_AREA_SIZE);
	assert_int_equal(ignition_payload_check_size(plen, &err), 0);
	assert_ignition_valid(ign);
	free(payload);
	free(ign);
	json_decref(files);
	json_decref(units);
	for (size_t i = 0; i < 2 * N; i++)
		json_decref(keep[i]);
	free(keep);
	free(hosts);
}

/* ---------- the host scripts, run by bash on a copy of a file system ---------- */

static void write_file(const char *dir, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	fclose(f);
}

static char *read_rel(const char *dir, const char *rel)
{
	char path[512], *text = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (util_read_file(path, &text, &len) < 0)
		fail_msg("%s missing", path);
	return text;
}

/* A bond of two NICs, a VLAN on a third whose real name is long: files are
 * renamed to the real NICs (the VLAN's NIC part shortened to stay within 15
 * characters) and values naming logical interfaces follow. */
static void test_pre_network_script(void **state)
{
	static const char cfg_yaml[] =
		"interfaces:\n"
		"- name: bond0\n  type: bond\n  link-aggregation:\n    mode: active-backup\n"
		"    options: {primary: eth1}\n    port: [eth0, eth1]\n"
		"  ipv4: {enabled: true, dhcp: true}\n"
		"- name: eth2.4001\n  type: vlan\n  vlan: {base-iface: eth2, id: 4001}\n"
		"  ipv4:\n    enabled: true\n    address:\n    - {ip: 192.0.2.9, prefix-length: 24}\n";
	static const char *const nics[][2] = { { "lo", "00:00:00:00:00:00" },
					       { "ens3", "02:00:00:00:0a:01" },
					       { "ens4", "02:00:00:00:0A:02" },
					       { "enp129s0f1np1", "02:00:00:00:0a:03" } };
	json_t *cfg = yaml(cfg_yaml), *other_cfg = yaml(kf_rows[0].yaml);
	json_t *ifaces = json_pack("[{s:s,s:s},{s:s,s:s},{s:s,s:s}]", "name", "eth0", "macAddress",
				   "02:00:00:00:0A:01", "name", "eth1", "macAddress",
				   "02:00:00:00:0A:02", "name", "eth2", "macAddress",
				   "02:00:00:00:0A:03");
	json_t *other_ifaces = json_loads(SAMPLE_IFACES, 0, NULL);
	struct nmstate_host hosts[2] = { { "ns/other", other_cfg, other_ifaces },
					 { "ns/this", cfg, ifaces } };
	char dir[] = "/tmp/test-nmstate-script-XXXXXX", cmd[1024], *bundle = NULL, *t;
	size_t len;
	ah_err err;

	if (access("/bin/bash", X_OK) != 0 || system("command -v awk >/dev/null 2>&1") != 0) {
		print_message("bash or awk missing; skipped\n");
		goto out;
	}
	assert_non_null(mkdtemp(dir));
	if (nmstate_bundle_build(hosts, 2, &bundle, &len, &err) < 0)
		fail_msg("%s", err.message);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/root/etc/assisted %s/bin %s/sys/lo %s/sys/ens3 "
		 "%s/sys/ens4 %s/sys/enp129s0f1np1", dir, dir, dir, dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	write_file(dir, "root/etc/assisted/static-network.bundle", bundle);
	write_file(dir, "bin/common_network_script.sh", nmstate_common_script);
	write_file(dir, "bin/pre-network-manager-config.sh", nmstate_pre_network_script);
	for (size_t i = 0; i < 4; i++) {
		char rel[64], mac[32];

		snprintf(rel, sizeof(rel), "sys/%s/address", nics[i][0]);
		snprintf(mac, sizeof(mac), "%s\n", nics[i][1]);
		write_file(dir, rel, mac);
	}
	snprintf(cmd, sizeof(cmd), "PATH_PREFIX=%s/root SYS_CLASS_NET=%s/sys SCRIPT_DIR=%s/bin "
		 "NIC_SETTLE_SECONDS=0 bash %s/bin/pre-network-manager-config.sh >%s/out 2>&1",
		 dir, dir, dir, dir, dir);
	if (system(cmd) != 0)
		fail_msg("script failed: %s", read_rel(dir, "out"));
	/* Only the matching host (the second) was unpacked. */
	snprintf(cmd, sizeof(cmd), "test ! -e %s/root/etc/assisted/network/host0 && "
		 "test -f %s/root/etc/assisted/network/host1/mac_interface.ini", dir, dir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "cd %s/root/etc/NetworkManager/system-connections && "
		 "test \"$(ls | tr '\\n' ' ')\" = 'bond0.nmconnection enp129s0f1.4001.nmconnection "
		 "ens3.nmconnection ens4.nmconnection ' && test \"$(stat -c %%a ens3.nmconnection)\" = 600",
		 dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "ls -l %s/root/etc/NetworkManager/system-connections", dir);
		(void)system(cmd);
		fail_msg("unexpected keyfiles: %s", read_rel(dir, "out"));
	}
	t = read_rel(dir, "root/etc/NetworkManager/system-connections/bond0.nmconnection");
	assert_non_null(strstr(t, "\nprimary=ens4\n"));
	assert_non_null(strstr(t, "\ninterface-name=bond0\n"));
	free(t);
	t = read_rel(dir, "root/etc/NetworkManager/system-connections/ens3.nmconnection");
	assert_non_null(strstr(t, "\nid=ens3\n"));
	assert_non_null(strstr(t, "\ninterface-name=ens3\n"));
	assert_non_null(strstr(t, "\nmaster=bond0\nslave-type=bond\n"));
	free(t);
	t = read_rel(dir, "root/etc/NetworkManager/system-connections/enp129s0f1.4001.nmconnection");
	assert_non_null(strstr(t, "\ninterface-name=enp129s0f1.4001\n"));
	assert_non_null(strstr(t, "\nparent=enp129s0f1np1\n"));
	assert_non_null(strstr(t, "\naddress1=192.0.2.9/24\n"));
	free(t);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
out:
	free(bundle);
	json_decref(cfg);
	json_decref(other_cfg);
	json_decref(ifaces);
	json_decref(other_ifaces);
}

/* --- nmstate_bundle_tar: the static-network-config download ------------- */

/* Read one ustar header at h: the path (prefix joined), the size; checks
 * the fixed fields and the checksum. */
static size_t tar_read_header(const unsigned char *h, char *path, size_t size)
{
	char num[16];
	unsigned sum = 0;
	size_t i;

	for (i = 0; i < 512; i++)
		sum += i >= 148 && i < 156 ? ' ' : h[i];
	memcpy(num, h + 148, 8);
	num[8] = '\0';
	assert_int_equal(strtoul(num, NULL, 8), sum);
	assert_memory_equal(h + 100, "0000600", 8);
	assert_memory_equal(h + 108, "0000000", 8);
	assert_memory_equal(h + 116, "0000000", 8);
	assert_memory_equal(h + 136, "00000000000", 12);
	assert_int_equal(h[156], '0');
	assert_memory_equal(h + 257, "ustar\0" "00", 8);
	if (h[345])
		snprintf(path, size, "%.155s/%.100s", (const char *)h + 345, (const char *)h);
	else
		snprintf(path, size, "%.100s", (const char *)h);
	memcpy(num, h + 124, 12);
	num[12] = '\0';
	return strtoul(num, NULL, 8);
}

/* The archive as "path\ncontents" per entry, joined by "|". */
static char *tar_listing(const char *tar, size_t len)
{
	strbuf sb = STRBUF_INIT;
	size_t pos = 0;
	char path[300];

	assert_int_equal(len % 512, 0);
	assert_true(len >= 1024);
	while (pos + 1024 < len) {
		size_t sz = tar_read_header((const unsigned char *)tar + pos, path, sizeof(path));

		pos += 512;
		assert_true(pos + sz <= len - 1024);
		strbuf_addf(&sb, "%s%s\n%.*s", sb.len ? "|" : "", path, (int)sz, tar + pos);
		for (size_t i = pos + sz; i < pos + (sz + 511) / 512 * 512; i++)
			assert_int_equal(tar[i], 0);
		pos += (sz + 511) / 512 * 512;
	}
	for (size_t i = len - 1024; i < len; i++)
		assert_int_equal(tar[i], 0);
	return strbuf_detach(&sb, NULL);
}

static void test_bundle_tar(void **state)
{
	static const struct {
		const char *what, *bundle, *want; /* want: the listing, or the error */
		int r;
	} rows[] = {
		{ "two hosts, files in bundle order",
		  NMSTATE_BUNDLE_MAGIC "\n@\n>mac_interface.ini\nA=eth0\n>eth0.nmconnection\n"
		  "[connection]\n\nid=eth0\n@\n>mac_interface.ini\nB=eth0\n",
		  "/etc/assisted/network/host0/mac_interface.ini\nA=eth0\n|"
		  "/etc/assisted/network/host0/eth0.nmconnection\n[connection]\n\nid=eth0\n|"
		  "/etc/assisted/network/host1/mac_interface.ini\nB=eth0\n", 0 },
		{ "no host: an empty archive", NMSTATE_BUNDLE_MAGIC "\n", "", 0 },
		{ "a host without files, an empty file",
		  NMSTATE_BUNDLE_MAGIC "\n@\n@\n>empty\n",
		  "/etc/assisted/network/host1/empty\n", 0 },
		{ "a name too long for the name field goes to the prefix",
		  NMSTATE_BUNDLE_MAGIC "\n@\n>" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nx\n",
		  "/etc/assisted/network/host0/" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nx\n", 0 },
		{ "not a bundle", "#other\n@\n",
		  "static network bundle: the first line is not \"" NMSTATE_BUNDLE_MAGIC "\"", -EINVAL },
		{ "empty text", "",
		  "static network bundle: the first line is not \"" NMSTATE_BUNDLE_MAGIC "\"", -EINVAL },
		{ "a file before any host", NMSTATE_BUNDLE_MAGIC "\n>x\n",
		  "static network bundle: a file at byte 35 comes before any host", -EINVAL },
		{ "a line in no file", NMSTATE_BUNDLE_MAGIC "\n@\nstray\n",
		  "static network bundle: the line at byte 37 is in no file", -EINVAL },
		{ "a line in no file after a host marker",
		  NMSTATE_BUNDLE_MAGIC "\n@\n>a\nx\n@\ny\n",
		  "static network bundle: the line at byte 44 is in no file", -EINVAL },
		{ "unterminated last line", NMSTATE_BUNDLE_MAGIC "\n@\n>a\nx",
		  "static network bundle: the line at byte 40 has no newline", -EINVAL },
		{ "a path in the name", NMSTATE_BUNDLE_MAGIC "\n@\n>../../etc/passwd\n",
		  "static network bundle: the file name at byte 37 is not a plain file name of 1 to "
		  "100 bytes", -EINVAL },
		{ "an empty name", NMSTATE_BUNDLE_MAGIC "\n@\n>\n",
		  "static network bundle: the file name at byte 37 is not a plain file name of 1 to "
		  "100 bytes", -EINVAL },
		{ "a dot-dot name", NMSTATE_BUNDLE_MAGIC "\n@\n>..\n",
		  "static network bundle: the file name at byte 37 is not a plain file name of 1 to "
		  "100 bytes", -EINVAL },
		{ "a name over 100 bytes", NMSTATE_BUNDLE_MAGIC "\n@\n>" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
		  "static network bundle: the file name at byte 37 is not a plain file name of 1 to "
		  "100 bytes", -EINVAL },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *tar = NULL, *tar2 = NULL, *listing;
		size_t len = 0, len2 = 0;
		ah_err err = { 0 };
		int r = nmstate_bundle_tar(rows[i].bundle, strlen(rows[i].bundle), &tar, &len, &err);

		if (r != rows[i].r)
			fail_msg("row \"%s\": %d (%s)", rows[i].what, r, err.message);
		if (r < 0) {
			assert_null(tar);
			assert_int_equal(err.status, 400);
			if (strcmp(err.message, rows[i].want) != 0)
				fail_msg("row \"%s\": %s", rows[i].what, err.message);
			continue;
		}
		listing = tar_listing(tar, len);
		if (strcmp(listing, rows[i].want) != 0)
			fail_msg("row \"%s\":\n%s", rows[i].what, listing);
		/* Deterministic: the same bundle, the same bytes. */
		assert_int_equal(nmstate_bundle_tar(rows[i].bundle, strlen(rows[i].bundle), &tar2, &len2,
						    &err), 0);
		assert_int_equal(len2, len);
		assert_memory_equal(tar2, tar, len);
		free(listing);
		free(tar);
		free(tar2);
	}
}

/* The upstream sample's bundle as an archive: every bundle file, whole. */
static void test_bundle_tar_of_sample(void **state)
{
	json_t *cfg = yaml(kf_rows[0].yaml), *ifaces = json_loads(SAMPLE_IFACES, 0, NULL), *files = NULL;
	struct nmstate_host host = { "spoke-cluster/mynmstateconfig", cfg, ifaces };
	char *bundle = NULL, *tar = NULL, *listing, *want = NULL, *ini = NULL;
	size_t blen = 0, len = 0, i;
	strbuf sb = STRBUF_INIT;
	ah_err err;
	json_t *f;

	(void)state;
	assert_int_equal(nmstate_bundle_build(&host, 1, &bundle, &blen, &err), 0);
	assert_int_equal(nmstate_bundle_tar(bundle, blen, &tar, &len, &err), 0);
	listing = tar_listing(tar, len);
	assert_int_equal(nmstate_mac_interface_ini(cfg, ifaces, &ini, &err), 0);
	assert_int_equal(nmstate_to_keyfiles(cfg, &files, &err), 0);
	strbuf_addf(&sb, "/etc/assisted/network/host0/mac_interface.ini\n%s", ini);
	json_array_foreach(files, i, f)
		strbuf_addf(&sb, "|/etc/assisted/network/host0/%s\n%s",
			    json_string_value(json_object_get(f, "name")),
			    json_string_value(json_object_get(f, "contents")));
	want = strbuf_detach(&sb, NULL);
	assert_string_equal(listing, want);
	assert_non_null(strstr(listing, "host0/eth0.nmconnection\n"));
	assert_non_null(strstr(listing, "address1=192.168.126.30/24\n"));
	free(want);
	free(ini);
	free(listing);
	free(tar);
	free(bundle);
	json_decref(files);
	json_decref(cfg);
	json_decref(ifaces);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keyfile_rows),
		cmocka_unit_test(test_stable_uuid),
		cmocka_unit_test(test_error_rows),
		cmocka_unit_test(test_mac_map_rows),
		cmocka_unit_test(test_bundle),
		cmocka_unit_test(test_ignition_parts),
		cmocka_unit_test(test_ten_thousand_hosts_fit),
		cmocka_unit_test(test_pre_network_script),
		cmocka_unit_test(test_bundle_tar),
		cmocka_unit_test(test_bundle_tar_of_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
