/* inventory.h - this machine's hardware inventory, in the upstream agent's schema.
 *
 * The inventory step of the discovery agent reports CPU, memory, disks, network
 * interfaces, routes, boot mode, system vendor, GPUs, hostname and TPM version as one JSON
 * object whose field names are the upstream snake_case ones (backend.md §7.6).  Everything
 * is read from /proc, /sys and /dev under a root directory prefix, so that tests can build
 * a fake tree in a temporary directory; pass "/" (or NULL) for the real machine.
 *
 * Every function returns a new jansson reference the caller owns (json_decref), or NULL on
 * allocation failure.  A file that is missing or unreadable (e.g. root-only DMI serials)
 * simply leaves its field at the upstream zero value.  No global state: thread-safe. */
#ifndef AH_AGENT_INVENTORY_H
#define AH_AGENT_INVENTORY_H

#include <ifaddrs.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* cpu{count,frequency,flags[],model_name,architecture} from proc/cpuinfo and
 * proc/sys/kernel/arch (uname(2) when root is "/" and that file is missing). */
json_t *inventory_cpu(const char *root);

/* memory{physical_bytes,usable_bytes,physical_bytes_method}: usable is MemTotal; physical
 * is the sum of online blocks in sys/devices/system/memory (method "ghw", as upstream's
 * ghw library computes it), else MemTotal (method "meminfo"). */
json_t *inventory_memory(const char *root);

/* disks[] from sys/block; loop, ram, zram, dm-* and hidden devices are not reported.
 * proc/mounts decides installation media and mounted partitions; dev/disk/by-id and
 * by-path give the stable names. */
json_t *inventory_disks(const char *root);

/* interfaces[] from sys/class/net (physical, bond and vlan interfaces, as upstream);
 * addresses come from `ifa` (a getifaddrs(3) list, may be NULL = no addresses). */
json_t *inventory_interfaces(const char *root, const struct ifaddrs *ifa);

/* routes[] from proc/net/route and proc/net/ipv6_route. */
json_t *inventory_routes(const char *root);

/* boot{current_boot_mode,command_line,secure_boot_state,device_type}. */
json_t *inventory_boot(const char *root);

/* system_vendor{manufacturer,product_name,serial_number,virtual}; `virtual` is true when
 * the DMI names a known hypervisor or the CPU flags include "hypervisor". */
json_t *inventory_system_vendor(const char *root);

/* gpus[] from sys/bus/pci/devices with a display class (0x03xxxx). */
json_t *inventory_gpus(const char *root);

/* "none", "1.2" or "2.0" from sys/class/tpm/tpm0. */
const char *inventory_tpm_version(const char *root);

/* The whole inventory.  Addresses come from getifaddrs(3) only when root is "/" (a fake
 * tree has no addresses).  Returns 0 and *ret_inv (caller owns), or -ENOMEM. */
int inventory_collect(const char *root, json_t **ret_inv, ah_err *err);

/* The upstream agent's host id (backend.md §7.3): md5(baseboard serial) as a UUID, else
 * the lower-case SMBIOS product UUID unless it is a known placeholder, else md5(smallest
 * MAC), else deaddead-dead-dead-dead-deaddeaddead.  buf must hold 37 bytes. */
void inventory_host_id(const char *root, char *buf, size_t size);

#endif
