/* fakehost.h - what a simulated discovery host says: identity, inventory and step replies.
 *
 * The fleet simulator (simulate.h) drives thousands of virtual hosts through the real
 * agent protocol; everything a virtual host *says* is computed here, purely, from the
 * fleet parameters and the host's index, so two runs with the same seed produce the same
 * host ids, MACs, addresses and replies (backend.md §7.5, §7.6).  It also reads the agent
 * configuration a host would take from its discovery Ignition (image.md §3.4).
 *
 * No I/O, no global state: every function is thread-safe. */
#ifndef AH_AGENT_FAKEHOST_H
#define AH_AGENT_FAKEHOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

/* Host i's IPv4 address is the subnet's network address + FAKEHOST_FIRST_HOST + i. */
#define FAKEHOST_FIRST_HOST 10

struct fakehost_fleet {
	uint64_t seed;
	unsigned hosts;
	unsigned cpus;
	unsigned memory_gib;
	unsigned disk_gib;
	uint32_t net;    /* IPv4 network address, host byte order */
	unsigned prefix; /* prefix length, 8..30 */
};

/* Fill f; subnet is "a.b.c.d/n".  -EINVAL (with a message) for a malformed subnet, zero
 * sizes, or when the hosts do not fit (the last host's address must stay below the
 * broadcast address). */
int fakehost_fleet_init(struct fakehost_fleet *f, uint64_t seed, unsigned hosts, unsigned cpus,
			unsigned memory_gib, unsigned disk_gib, const char *subnet, ah_err *err);

/* Identity of host i (0-based).  Distinct for distinct (seed, i). */
void fakehost_host_id(const struct fakehost_fleet *f, unsigned i, char buf[37]);     /* UUID v4 form */
void fakehost_mac(const struct fakehost_fleet *f, unsigned i, char buf[18]);         /* 02:ss:ii:ii:ii:ii */
void fakehost_ipv4(const struct fakehost_fleet *f, unsigned i, char buf[16]);        /* dotted, no prefix */
void fakehost_hostname(const struct fakehost_fleet *f, unsigned i, char buf[32]);    /* "sim-<seed>-<i>" */

/* Host i's inventory in the upstream schema (§7.6): one SSD of disk_gib GiB (eligible),
 * the live ISO as a CD-ROM (installation media, not eligible), one NIC in the subnet with
 * a default route via the subnet's first address.  New reference, NULL on OOM. */
json_t *fakehost_inventory(const struct fakehost_fleet *f, unsigned i);

/* The reply host i gives to a step: *ret_exit_code and a malloc'd *ret_output (JSON text,
 * or "" for steps whose reply carries nothing; caller frees).  `args` is the step's args
 * array as received (may be NULL).  Successful, plausible results for every step type;
 * unknown types get exit code 0 and "".  verify-vips answers as an ARP probe would:
 * "failed" for the gateway's and the fleet's own addresses, "succeeded" for the other
 * addresses of the subnet, "unverified" outside it.  0 or -ENOMEM. */
int fakehost_step_reply(const struct fakehost_fleet *f, unsigned i, const char *step_type,
			const json_t *args, int *ret_exit_code, char **ret_output);

/* The upstream install progress stages (§6) for an `install` step's args: role
 * "bootstrap" with control_plane_count 1 is SNO.  Returns a static list and its length. */
const char *const *fakehost_install_stages(const json_t *install_args, size_t *ret_n);

/* What the agent reads from the discovery Ignition: agent.service's ExecStart flags and
 * PULL_SECRET_TOKEN environment, and the hub CA file named by --cacert. */
struct fakehost_config {
	char *service_url;   /* --url */
	char *infra_env_id;  /* --infra-env-id */
	char *agent_version; /* --agent-version (the agent image) */
	char *token;         /* PULL_SECRET_TOKEN, "" when absent (secret) */
	char *ca_pem;        /* contents of the --cacert file, NULL when absent */
	bool insecure;       /* --insecure=true */
	/* The ironic agent's configuration (converged flow): set when the Ignition has an
	 * enabled ironic-agent.service and /etc/ironic-python-agent.conf, from its
	 * api_url, inspection_callback_url (the first URL of each comma-separated list)
	 * and insecure; NULL/false otherwise. */
	char *ipa_api_url;
	char *ipa_inspection_url;
	bool ipa_insecure;
};

/* Parse ign_json.  An Ignition without agent.service that runs the ironic agent (a
 * deploy ramdisk) gives service_url and infra_env_id NULL and the ipa_* fields set.
 * 0, -EINVAL (no agent.service nor ironic agent, no --url/--infra-env-id, bad JSON or
 * data URL; message in err) or -ENOMEM.  On success the caller releases *ret. */
int fakehost_config_from_ignition(const char *ign_json, struct fakehost_config *ret, ah_err *err);
void fakehost_config_release(struct fakehost_config *c);

/* Host i's hardware as ironic-python-agent reports it (its inventory: interfaces with
 * mac_address and ipv4_address, cpu, disks with size and rotational, memory with total
 * and physical_mb, system_vendor, boot, bmc_address, hostname), the same machine as
 * fakehost_inventory().  New reference, NULL on OOM. */
json_t *fakehost_ipa_inventory(const struct fakehost_fleet *f, unsigned i);

#endif
