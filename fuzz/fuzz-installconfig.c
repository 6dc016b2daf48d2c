/* fuzz-installconfig.c - libFuzzer target for src/assisted/installconfig.c:
 * the agent-install.openshift.io/install-config-overrides annotation
 * (installconfig_check_overrides) decoded onto the install-config of a
 * fixed, valid three-master, two-worker baremetal cluster
 * (installconfig_build).  Not built by default; build and run it from the
 * repository root with:
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc \
 *     fuzz/fuzz-installconfig.c src/assisted/installconfig.c src/assisted/cluster.c \
 *     src/assisted/validations.c src/assisted/host.c src/assisted/inventory.c \
 *     src/assisted/progress.c src/base/error.c src/base/strbuf.c src/base/util.c \
 *     src/base/yamljson.c -ljansson -lyaml -lcrypto -o fuzz-installconfig
 *   ./fuzz-installconfig -max_len=4096 -max_total_time=60 [corpus-dir]
 *
 * Good seeds: '{"networking":{"networkType":"OpenShiftSDN"}}',
 * '{"fips":true}', '{"additionalTrustBundle":"-----BEGIN CERTIFICATE-----..."}',
 * '{"controlPlane":{"hyperthreading":"Disabled"}}', '{"pullSecret":null}'.
 * Besides crashes and leaks it checks invariants, and aborts when one
 * breaks:
 *   - every failure carries a message;
 *   - the pull secret never appears in an error message (unless the input
 *     itself holds the same text), not even a 12-character piece of it;
 *   - an override installconfig_check_overrides refuses is refused by
 *     installconfig_build with the same message (reason InputError, 400);
 *   - a built install-config is YAML that reads back to the very tree
 *     installconfig_tree() gives for the same input. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assisted/installconfig.h"
#include "base/yamljson.h"

#define CHECK(cond)                                                                  \
	do {                                                                         \
		if (!(cond)) {                                                       \
			fprintf(stderr, "invariant failed: %s (%s:%d)\n", #cond,     \
				__FILE__, __LINE__);                                 \
			abort();                                                     \
		}                                                                    \
	} while (0)

/* Distinctive, so any piece of it in a message is a leak. */
static const char PULL_SECRET[] =
	"{\"auths\":{\"quay.io\":{\"auth\":\"ZnV6ei1wdWxsLXNlY3JldDpRN3hLOXBXMnZMNG1aOHJU\","
	"\"email\":\"fuzz@example.com\"}}}";
static const char SECRET_AUTH[] = "ZnV6ei1wdWxsLXNlY3JldDpRN3hLOXBXMnZMNG1aOHJU";

static const char CLUSTER[] =
	"{\"id\":\"c1\",\"name\":\"fuzzcluster\",\"base_dns_domain\":\"example.com\","
	"\"openshift_version\":\"4.14.0\",\"control_plane_count\":3,\"high_availability_mode\":\"Full\","
	"\"user_managed_networking\":false,\"platform\":{\"type\":\"baremetal\"},"
	"\"api_vips\":[{\"ip\":\"192.168.1.100\"}],\"ingress_vips\":[{\"ip\":\"192.168.1.101\"}],"
	"\"machine_networks\":[{\"cidr\":\"192.168.1.0/24\"}],"
	"\"cluster_networks\":[{\"cidr\":\"10.128.0.0/14\",\"host_prefix\":23}],"
	"\"service_networks\":[{\"cidr\":\"172.30.0.0/16\"}],\"network_type\":\"OVNKubernetes\","
	"\"hyperthreading\":\"all\",\"ssh_public_key\":\"ssh-ed25519 AAAAC3Nz fuzz@example\","
	"\"http_proxy\":\"http://proxy:3128\",\"no_proxy\":\".internal\"}";

static json_t *cluster, *hosts;

static json_t *host(int n, const char *role, int bootstrap)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"id\":\"h%d\",\"status\":\"known\",\"role\":\"%s\",\"bootstrap\":%s,"
		 "\"installation_disk_path\":\"/dev/sda\",\"inventory\":{\"hostname\":\"node-%d\","
		 "\"boot\":{\"current_boot_mode\":\"uefi\"},\"interfaces\":[{\"name\":\"eth0\","
		 "\"mac_address\":\"52:54:00:00:00:%02d\",\"ipv4_addresses\":[\"192.168.1.%d/24\"],"
		 "\"ipv6_addresses\":[]}]}}",
		 n, role, bootstrap ? "true" : "false", n, n, 10 + n);
	return json_loads(buf, 0, NULL);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	cluster = json_loads(CLUSTER, 0, NULL);
	hosts = json_array();
	CHECK(cluster && hosts);
	for (int i = 0; i < 5; i++)
		CHECK(json_array_append_new(hosts, host(i, i < 3 ? "master" : "worker", i == 0)) == 0);
	return 0;
}

/* No 12-byte piece of the secret's auth token in msg, unless the input
 * brought that piece itself. */
static void check_no_secret(const char *msg, const char *input)
{
	char piece[13];
	size_t n = strlen(SECRET_AUTH);

	CHECK(!strstr(msg, PULL_SECRET) || strstr(input, PULL_SECRET));
	for (size_t i = 0; i + 12 <= n; i++) {
		memcpy(piece, SECRET_AUTH + i, 12);
		piece[12] = '\0';
		if (strstr(msg, piece))
			CHECK(strstr(input, piece));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *yaml;
	ah_err cerr = { 0 }, berr = { 0 };
	json_t *docs = NULL;
	int r;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	r = installconfig_check_overrides(text, &cerr);
	if (r < 0) {
		CHECK(r == -ENOMEM || cerr.message[0] != '\0');
		check_no_secret(cerr.message, text);
	}
	yaml = installconfig_build(cluster, hosts, PULL_SECRET, text, &berr);
	if (!yaml) {
		CHECK(berr.message[0] != '\0');
		check_no_secret(berr.message, text);
	}
	if (r == -EINVAL) {
		CHECK(!yaml);
		CHECK(strcmp(cerr.reason, "InputError") == 0 && cerr.status == 400);
		CHECK(strcmp(berr.message, cerr.message) == 0);
	}
	if (yaml) {
		ah_err yerr = { 0 }, terr = { 0 };
		json_t *tree = installconfig_tree(cluster, hosts, PULL_SECRET, text, &terr);

		CHECK(tree);
		CHECK(yaml_parse_all(yaml, strlen(yaml), &docs, &yerr) == 0);
		CHECK(json_array_size(docs) == 1 && json_equal(json_array_get(docs, 0), tree));
		json_decref(tree);
		json_decref(docs);
		free(yaml);
	}
	free(text);
	return 0;
}
