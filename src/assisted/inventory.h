/* inventory.h - the agent's hardware inventory: parsing, bounds, and the two
 * views the kube API shows of it (Agent status.inventory and the
 * inventory.agent-install.openshift.io/... labels).
 *
 * Inventories use the upstream snake_case model (backend spec §7.6).  Every
 * function here is pure and thread-safe; returned values are new references
 * the caller owns (json_decref), never NULL except on allocation failure or
 * where stated. */
#ifndef AH_ASSISTED_INVENTORY_H
#define AH_ASSISTED_INVENTORY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Upper bounds for an inventory accepted from an agent: the serialized size
 * and the lengths of its arrays.  Larger ones are rejected as absurd. */
#define INVENTORY_MAX_BYTES (4u << 20)
#define INVENTORY_MAX_ITEMS 4096

/* Check that inv is a JSON object of sane size whose known members have the
 * expected JSON types (objects, arrays, numbers).  0, or -EINVAL with err set
 * to 400 "BadRequest". */
int inventory_validate(const json_t *inv, ah_err *err);

/* The host's inventory as an object: host["inventory"] may be an object or
 * the agent's JSON text.  Returns a new reference, or NULL when the host has
 * no inventory or the text does not parse to an object. */
json_t *inventory_of_host(const json_t *host);

/* Agent status.inventory (camelCase, kubeapi §1.2) from an upstream inventory.
 * Required list fields (interfaces[].ipV4Addresses, ipV6Addresses, flags,
 * disks[].id, installationEligibility.notEligibleReasons) are [] when
 * empty.  NULL inventory gives an empty object. */
json_t *inventory_to_agent_status(const json_t *inventory);

/* The inventory.agent-install.openshift.io/... labels (kubeapi §3) as an object
 * key → string value.  Values are sanitised (characters outside
 * [-A-Za-z0-9_.] dropped); a label whose value is still not a valid label
 * value is left out. */
json_t *inventory_labels(const json_t *inventory);

/* Sanitise a label value as above into buf (size >= strlen(in)+1); returns
 * false when the result is not a valid label value (then skip the label). */
bool inventory_label_value(const char *in, char *buf, size_t size);

#endif
