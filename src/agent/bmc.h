/* bmc.h - a simulated Redfish BMC in front of the simulator's virtual machines.
 *
 * `agenthub-agent simulate --bmc HOST:PORT` puts one Redfish service in front of its N
 * machines so a hub can boot them through virtual media, as Ironic/BMO do with real
 * hardware.  This module holds the machines' BMC-side state (power, boot override,
 * virtual media) and answers Redfish requests on it; the HTTP transport is the caller's
 * (src/cmd/agenthub-agent.c runs src/http's server and hands each request to
 * bmc_handle()), and the simulator (simulate.c) reads what each machine should be running
 * with bmc_take_changed() / bmc_machine_power().
 *
 * The Redfish surface (all JSON; every resource answers GET and HEAD):
 *   /redfish                         {"v1": "/redfish/v1/"}               no auth
 *   /redfish/v1/                     ServiceRoot (Systems, Managers)      no auth
 *   /redfish/v1/Systems              ComputerSystemCollection
 *   /redfish/v1/Systems/{id}         ComputerSystem; PATCH {"Boot": {BootSourceOverrideTarget
 *                                    None|Pxe|Cd|Hdd, BootSourceOverrideEnabled
 *                                    Disabled|Once|Continuous, BootSourceOverrideMode UEFI|Legacy}}
 *   /redfish/v1/Systems/{id}/Actions/ComputerSystem.Reset   POST {"ResetType": On|ForceOff|
 *                                    GracefulShutdown|ForceRestart|GracefulRestart}
 *   /redfish/v1/Systems/{id}/EthernetInterfaces[/nic0]     the boot NIC (MACAddress)
 *   /redfish/v1/Systems/{id}/VirtualMedia[/Cd]             the same device as the Manager's
 *   /redfish/v1/Managers             ManagerCollection (one Manager per system, same id)
 *   /redfish/v1/Managers/{id}        Manager (ManagerType BMC, Links.ManagerForServers)
 *   /redfish/v1/Managers/{id}/VirtualMedia                 VirtualMediaCollection: [Cd]
 *   /redfish/v1/Managers/{id}/VirtualMedia/Cd              VirtualMedia (MediaTypes CD, DVD);
 *                                    PATCH {"Image": url|null, "Inserted", "WriteProtected"}
 *   .../VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia   POST {"Image": "http(s)://...",
 *                                    "Inserted", "WriteProtected", "TransferProtocolType",
 *                                    "TransferMethod", "UserName"+"Password"}
 *   .../VirtualMedia/Cd/Actions/VirtualMedia.EjectMedia    POST {} (or no body)
 * Answers: GET 200 with an ETag header (W/"...") and "@odata.etag"; PATCH and actions 204;
 * If-Match (weak or strong, or *) that does not match 412; bad or missing Basic
 * credentials 401 with WWW-Authenticate; unknown resource 404; wrong method 405 with
 * Allow; malformed JSON, unknown properties, bad values and missing parameters 400;
 * a body over the server's bound 413.  Errors carry the Redfish error body
 * {"error": {"code": "Base.1.8.<MessageId>", "message", "@Message.ExtendedInfo": [...]}}.
 * No SessionService: sushy's SessionOrBasicAuth falls back to Basic auth.
 *
 * The ironic agent's API (converged flow), the callback_url a machine running the ironic
 * agent heartbeats with: http(s)://HOST:PORT/ipa/{id} (no Basic auth; the agent_token
 * query argument must match the token the lookup gave, when it gave one):
 *   GET  /ipa/{id}/v1/commands         {"commands": [command...]}
 *   GET  /ipa/{id}/v1/commands/{cid}   one command: {"id", "command_name", "command_params",
 *                                      "command_status" RUNNING|SUCCEEDED|FAILED,
 *                                      "command_error", "command_result"}
 *   POST /ipa/{id}/v1/commands         {"name": "<ext>.<cmd>", "params": {...}}:
 *        deploy.get_deploy_steps       SUCCEEDED, CoreOSInstallHardwareManager's steps
 *        deploy.execute_deploy_step    params.step.step "write_image" (Ironic's direct deploy, args
 *                                      image_info {urls...} and configdrive {meta_data, user_data,
 *                                      network_data}): SUCCEEDED at once, the disk now holds the
 *                                      image (its URL recorded, never fetched) and the config drive;
 *                                      a boot from disk then runs the config drive's user_data
 *                                      (simulate.h); "start_assisted_install": RUNNING, the
 *                                      machine starts its assisted agent; SUCCEEDED when that
 *                                      agent exits (the install reached Rebooting), FAILED if
 *                                      the install failed; another step: FAILED; 409 while one runs
 *        clean.execute_clean_step      params.step.step erase_devices_metadata / erase_devices:
 *                                      SUCCEEDED, the disk wiped (nothing to boot from it); another: FAILED
 *        standby.power_off             the machine powers itself off
 *        standby.sync, standby.get_partition_uuids, log.collect_system_logs   SUCCEEDED
 *   503 when the machine is not running the ironic agent, 400 for an unknown command.
 *
 * Machine behaviour: a reset that powers a machine on (On when off, ForceRestart,
 * GracefulRestart) boots it: the boot override when enabled (a Once override is then
 * cleared: Enabled Disabled, Target None), else the default order, disk (once an install
 * wrote it) then CD (when media is inserted).  Booting Cd with no media, Hdd with no
 * install, or Pxe (there is no PXE server) falls through to the default order; when that
 * finds nothing too the machine sits powered on with nothing to boot.
 *
 * Thread-safe: one mutex guards the machines; bmc_handle() runs on the HTTP server's
 * threads while the simulator reads power states on its own. */
#ifndef AH_AGENT_BMC_H
#define AH_AGENT_BMC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "base/error.h"

struct bmc;

/* One machine as its BMC presents it (strings are copied by bmc_new()). */
struct bmc_machine_def {
	const char *id;   /* the Redfish system id (the host's UUID) */
	const char *name; /* the machine's hostname, also the BareMetalHost's name */
	const char *mac;  /* the boot NIC */
	unsigned cpus, memory_gib;
};

struct bmc_opts {
	const char *user;     /* HTTP Basic credentials the BMC accepts (never logged) */
	const char *password;
};

/* 0 and *ret, or -ENOMEM / -EINVAL (empty user or password; message in err). */
int bmc_new(const struct bmc_machine_def *defs, unsigned n, const struct bmc_opts *o, struct bmc **ret,
	    ah_err *err);
void bmc_free(struct bmc *b);

/* Called (from the thread that handled the request, with the BMC lock held: fn must be
 * quick and must not call back into the BMC) after a
 * request changed some machine's power; the simulator wakes its loop with it. */
void bmc_set_wake(struct bmc *b, void (*fn)(void *), void *arg);

struct bmc_request {
	const char *method;
	const char *path;          /* no query string */
	const char *authorization; /* the Authorization header, NULL when absent */
	const char *if_match;      /* the If-Match header, NULL when absent */
	const char *agent_token;   /* the agent_token query argument (ironic agent API), or NULL */
	const char *body;
	size_t len;
	bool too_big;              /* the body was over the transport's bound */
};

struct bmc_reply {
	unsigned status;
	char *body;          /* JSON text (malloc'd) or NULL for no body */
	char etag[24];       /* W/"<16 hex>" for a resource, "" otherwise */
	const char *allow;   /* static: the Allow header of a 405, NULL otherwise */
	bool authenticate;   /* a 401: send WWW-Authenticate: Basic realm="agenthub-bmc" */
};

/* Answer one request; fills *ret (release it with bmc_reply_release()).  Never fails: an
 * allocation failure is a 500 without a body. */
void bmc_handle(struct bmc *b, const struct bmc_request *req, struct bmc_reply *ret);
void bmc_reply_release(struct bmc_reply *r);

/* What a machine is running, as its last power-on decided. */
enum bmc_boot {
	BMC_BOOT_NONE, /* powered on with nothing to boot (or powered off) */
	BMC_BOOT_CD,   /* the virtual media image (image is its URL) */
	BMC_BOOT_HDD,  /* the installed disk */
};
struct bmc_power {
	bool on;
	unsigned gen;        /* bumped by every boot and every power-off */
	enum bmc_boot boot;
	char *image;         /* BMC_BOOT_CD: the image URL (malloc'd), else NULL */
	bool start_assisted; /* this boot's ironic agent was told to run start_assisted_install */
	char *disk_user_data; /* BMC_BOOT_HDD of a disk written by write_image: its config drive's
			       * user_data (malloc'd), else NULL */
	char *disk_meta_data; /* ... and its meta_data as JSON text (malloc'd), else NULL */
};
/* Machine i's state (caller frees ret->image, disk_user_data, disk_meta_data).  0, -EINVAL (no such machine), -ENOMEM. */
int bmc_machine_power(struct bmc *b, unsigned i, struct bmc_power *ret);
/* Up to max indexes of machines whose power changed since the last call (each once),
 * in the order they changed; returns how many. */
size_t bmc_take_changed(struct bmc *b, unsigned *ret_idx, size_t max);
/* The simulator tells the BMC that machine i's disk holds an install (it boots from
 * it from now on when nothing overrides). */
void bmc_set_disk_installed(struct bmc *b, unsigned i, bool installed);
unsigned bmc_count(const struct bmc *b);

/* The ironic agent (converged flow).  Machine i's boot `gen` runs the ironic agent, which
 * got agent_token (may be NULL) from its lookup: its API answers from now until the next
 * power event.  bmc_ipa_step_done() ends its start_assisted_install step (the assisted
 * agent exited: ok, or failed with error). */
void bmc_ipa_begin(struct bmc *b, unsigned i, unsigned gen, const char *agent_token);
void bmc_ipa_step_done(struct bmc *b, unsigned i, unsigned gen, bool ok, const char *error);

/* The manifests a hub needs for these machines: per machine a BMC credentials Secret
 * (<name>-bmc-secret: username, password) and a BareMetalHost <name> with bootMACAddress,
 * bmc.address (redfish-virtualmedia+http://ADDRESS/redfish/v1/Systems/<id>, or
 * redfish-virtualmedia://... with disableCertificateVerification when tls),
 * bmc.credentialsName, online: true, bootMode: UEFI, automatedCleaningMode: disabled, the
 * annotation inspect.metal3.io: disabled and, when infraenv is not NULL, the label
 * infraenvs.agent-install.openshift.io: infraenv.  address is "HOST:PORT".  0 or -EIO. */
int bmc_write_manifests(const struct bmc *b, FILE *f, const char *address, bool tls, const char *ns,
			const char *infraenv);

#endif
