/* bmh.h - pure BareMetalHost facts the hub's BMH and BMAC controllers share:
 * the BMC address grammar (which drivers we speak), the reboot and detached
 * annotation rules of the Bare Metal Operator, and the byte-exact
 * inspect.metal3.io/hardwaredetails JSON BMAC writes from an Agent's
 * inventory.  No I/O; every function may be called from any thread. */
#ifndef AH_ASSISTED_BMH_H
#define AH_ASSISTED_BMH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* BareMetalHost provisioning states (status.provisioning.state). */
#define BMH_ST_NONE ""
#define BMH_ST_REGISTERING "registering"
#define BMH_ST_INSPECTING "inspecting"
#define BMH_ST_PREPARING "preparing"
#define BMH_ST_AVAILABLE "available"
#define BMH_ST_READY "ready"
#define BMH_ST_PROVISIONING "provisioning"
#define BMH_ST_PROVISIONED "provisioned"
#define BMH_ST_EXT_PROVISIONED "externally provisioned"
#define BMH_ST_DEPROVISIONING "deprovisioning"
#define BMH_ST_POWERING_OFF_DELETE "powering off before delete"
#define BMH_ST_DELETING "deleting"

#define BMH_ANN_REBOOT "reboot.metal3.io"
#define BMH_ANN_DETACHED "baremetalhost.metal3.io/detached"
#define BMH_ANN_PAUSED "baremetalhost.metal3.io/paused"
#define BMH_ANN_INSPECT "inspect.metal3.io"
#define BMH_ANN_HWDETAILS "inspect.metal3.io/hardwaredetails"
#define BMH_FINALIZER "baremetalhost.metal3.io"

/* A parsed spec.bmc.address.  Only Redfish virtual media is spoken:
 * redfish-virtualmedia[+http|+https]://, idrac-virtualmedia[+http|+https]://.
 * base is "http://host:port" or "https://host:port"; system is the system's
 * path ("/redfish/v1/Systems/<id>"), or "" when the address names only the
 * service (the first system is then used). */
struct bmh_bmc {
	char base[300];
	char system[512];
	bool https;
};

/* 0, or -EINVAL with err naming spec.bmc.address and why (an unsupported
 * driver says so: the BMH shows it as its registration error). */
int bmh_parse_bmc_address(const char *address, struct bmh_bmc *ret, ah_err *err);

/* The reboot annotations (reboot.metal3.io and reboot.metal3.io/<suffix>) of
 * annotations: whether one asks for a reboot now.  Outside provisioned /
 * externally provisioned only a value whose JSON has "force": true counts
 * (BMO's rule).  *ret_hard: any counted request says mode "hard". */
bool bmh_reboot_requested(const json_t *annotations, const char *state, bool *ret_hard);

/* Whether the BMH is detached: the annotation is present and the state is
 * provisioned, externally provisioned, ready or available, or the value is
 * JSON with "force": true. */
bool bmh_detached(const json_t *annotations, const char *state);

/* The hardwaredetails annotation BMAC writes, byte for byte what Go's
 * json.Marshal of BMO's HardwareDetails gives for this Agent inventory
 * (status.inventory) and hostname (the Agent's spec hostname, else the
 * inventory's).  *ret malloc'd, owned by the caller.  0 or -ENOMEM. */
int bmh_hardware_details(const json_t *inventory, const char *hostname, char **ret);

/* The state machine of a BareMetalHost that is neither detached nor paused
 * (BMO's host_state_machine.go, for the live-ISO flow without inspection). */
enum bmh_action {
	BMH_ACT_NONE = 0,
	BMH_ACT_REGISTER,     /* find the system on the BMC (credentials checked) */
	BMH_ACT_PROVISION,    /* power off, eject, insert the image, boot Cd continuous, power on */
	BMH_ACT_DEPROVISION,  /* power off, eject */
	BMH_ACT_POWER_ON,
	BMH_ACT_POWER_OFF,
	BMH_ACT_REBOOT,
	/* Steps of a deploy through the ironic agent (bmh.c runs them; bmh_step
	 * never asks for them): */
	BMH_ACT_AGENT_COMMAND, /* a command to the ironic agent (write_image, a clean step) */
	BMH_ACT_BOOT_DISK,     /* power off, eject, boot Hdd continuous, power on */
};

struct bmh_facts {
	const char *state;    /* status.provisioning.state ("" when none) */
	bool deleting;        /* deletionTimestamp set */
	bool online;          /* spec.online */
	bool powered_on;      /* status.poweredOn */
	bool image;           /* spec.image.url set */
	bool image_changed;   /* spec.image.url differs from status.provisioning.image.url */
	bool reboot;          /* a reboot annotation that counts (bmh_reboot_requested()) */
};

/* What to do now: move to ret->next at once (NULL: stay), or run
 * ret->action on the BMC and, when it succeeds, move to ret->then (NULL:
 * stay).  Never both a move and an action. */
struct bmh_step {
	const char *next;
	enum bmh_action action;
	const char *then;
};
void bmh_step(const struct bmh_facts *f, struct bmh_step *ret);

/* A Go-style float64 JSON number ("2400", "2400.5", "1e+21") into buf. */
void bmh_go_float(double v, char *buf, size_t size);

#endif
