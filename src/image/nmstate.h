/* nmstate.h - static networking: nmstate documents to NetworkManager
 * keyfiles, and the static-network part of the discovery Ignition
 * (spec/image.md section 4, kubeapi.md 1.4 and 4.1).
 *
 * An NMStateConfig gives one host's network as an nmstate document
 * (spec.config) plus the MAC address of each logical interface it names
 * (spec.interfaces).  Each host becomes, as upstream's keyfile flow has it,
 * a directory host<N> holding one <name>.nmconnection keyfile per interface
 * and mac_interface.ini (lines "<MAC>=<logical name>").  At boot the
 * pre-network script picks the host whose MAC addresses match the NICs, and
 * installs its keyfiles under the real NIC names before NetworkManager starts.
 *
 * Delivery differs from upstream in one way, for size: the 262,144-byte
 * embed area holds about 3,960 hosts when every file is its own Ignition
 * entry.  Here all hosts travel as one "bundle" text file, gzip-compressed
 * with Ignition's own `compression: gzip`, at
 * /etc/assisted/static-network.bundle; the script extracts only the matching
 * host's directory into /etc/assisted/network/host<N>/.  Bundle format
 * (version 1), line by line:
 *
 *   "#agenthub-static-network-bundle v1"   first line
 *   "@"                                    starts the next host (N = 0, 1, ...)
 *   ">" <file name>                        starts a file of the current host
 *   anything else                          a line of the current file
 *
 * Generated file lines never start with '@', '>' or '#'.
 *
 * Conversion covers: interface types ethernet, bond (mode, options, ports),
 * vlan (id, base-iface), linux-bridge (STP options, ports); state up, down
 * (autoconnect=false) and absent (no keyfile); mac-address
 * (cloned-mac-address), identifier: mac-address, mtu; ipv4/ipv6 enabled,
 * dhcp, autoconf, addresses, auto-dns/auto-routes/auto-gateway,
 * auto-route-table-id, auto-route-metric; dns-resolver servers and search;
 * routes with metric and table-id.  Anything else is an error naming the
 * field: nothing is silently dropped.  Output is deterministic; connection
 * UUIDs are nmstate's stable ones, UUIDv5(NAMESPACE_URL, "<type>://<name>").
 *
 * Everything here is pure (no I/O) and thread-safe. */
#ifndef AH_IMAGE_NMSTATE_H
#define AH_IMAGE_NMSTATE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

#define NMSTATE_NETWORK_DIR "/etc/assisted/network"
#define NMSTATE_BUNDLE_PATH "/etc/assisted/static-network.bundle"
#define NMSTATE_BUNDLE_MAGIC "#agenthub-static-network-bundle v1"
#define NMSTATE_PRE_SCRIPT_PATH "/usr/local/bin/pre-network-manager-config.sh"
#define NMSTATE_COMMON_SCRIPT_PATH "/usr/local/bin/common_network_script.sh"
#define NMSTATE_UNIT_NAME "pre-network-manager-config.service"

/* One host's input (an NMStateConfig).  Pointers are borrowed. */
struct nmstate_host {
	const char *label;         /* names the source in errors, e.g. "ns/name" */
	const json_t *config;      /* the nmstate document: a JSON object */
	const json_t *interfaces;  /* [{"name": ..., "macAddress": ...}] */
};

/* Parse nmstate YAML (or JSON) text into *ret, a JSON object the caller
 * owns.  -EINVAL with err (status 400) for invalid YAML, several documents,
 * or a document that is not a mapping. */
int nmstate_parse_yaml(const char *text, size_t len, json_t **ret, ah_err *err);

/* Convert one nmstate document.  *ret (caller owns) is a JSON array of
 * {"name": "<id>.nmconnection", "contents": "<keyfile>"} in interface order
 * (ports that the document only names come after the interfaces it defines).
 * -EINVAL with err (status 400, message naming the field) for anything
 * invalid or unsupported; -ENOMEM. */
int nmstate_to_keyfiles(const json_t *config, json_t **ret, ah_err *err);

/* Check spec.interfaces against the document and render mac_interface.ini:
 * lines "<MAC as given>=<name>", sorted, '\n'-terminated.  Errors: no
 * interface, a missing name or MAC, a malformed MAC, a MAC or name listed
 * twice, a name the document neither defines nor uses as a port or VLAN
 * base, an ethernet interface (or bond port, or VLAN base the document does
 * not define) with no MAC that is neither `identifier: mac-address` nor a
 * physical name (^en[PsvxXbucaipod]).  *ret is malloc'd; caller frees. */
int nmstate_mac_interface_ini(const json_t *config, const json_t *interfaces, char **ret,
			      ah_err *err);

/* The bundle text of hosts[0..n) (format above), validated as a set: every
 * host as above, and no MAC in two hosts.  Error messages start with
 * "NMStateConfig <label>: ".  *ret is malloc'd and NUL-terminated. */
int nmstate_bundle_build(const struct nmstate_host *hosts, size_t n, char **ret, size_t *ret_len,
			 ah_err *err);

/* The Ignition parts for hosts[0..n) (n > 0): *ret_files gets the bundle
 * (mode 0600, gzip-compressed data URL), the common and pre-network scripts
 * (mode 0755); *ret_units gets pre-network-manager-config.service.  Both are
 * new JSON arrays the caller owns.  Same errors as nmstate_bundle_build(). */
int nmstate_ignition_parts(const struct nmstate_host *hosts, size_t n, json_t **ret_files,
			   json_t **ret_units, ah_err *err);

/* The stable connection UUID nmstate uses, UUIDv5(NAMESPACE_URL,
 * "<type>://<name>"), lower-case into buf (>= 37 bytes). */
void nmstate_stable_uuid(const char *type, const char *name, char *buf, size_t size);

/* The host scripts (bash), exposed for tests. */
extern const char nmstate_common_script[];
extern const char nmstate_pre_network_script[];
extern const char nmstate_pre_network_unit[];

/* The upstream debug download of static network config (file_name=
 * static-network-config, image.md 4.4) made from a bundle: a POSIX ustar
 * archive holding each bundle file as /etc/assisted/network/host<N>/<name>
 * (a regular file, mode 0600, uid and gid 0, mtime 0) in bundle order,
 * ended by two zero blocks.  The bundle is read as the host script reads
 * it, so the archive holds exactly what a host would unpack; the same
 * bundle always gives the same bytes.  -EINVAL with err (status 400) for
 * text that is not a bundle: another first line, a file before any host, a
 * line outside any file, a last line without its newline, a file name that
 * is empty, ".", "..", longer than 100 bytes or holds '/' or NUL.  *ret is
 * malloc'd (not NUL-terminated); the caller frees it. */
int nmstate_bundle_tar(const char *bundle, size_t len, char **ret, size_t *ret_len, ah_err *err);

#endif
