/* simulate.h - a fleet of virtual discovery hosts in one process, over the real protocol.
 *
 * simulate_run() boots N virtual hosts the way real ones boot: it downloads the InfraEnv's
 * discovery ISO, takes the discovery Ignition out of its embed area, reads agent.service's
 * configuration (service URL, infra-env id, token, hub CA) and then runs every host's
 * agent loop against the hub as the upstream agent does (backend.md §7.3): register, GET
 * instructions, reply to each step with what fakehost.h synthesises, sleep
 * next_instruction_seconds; an `install` step starts the host's install progress reports
 * (PUT .../progress every stage_seconds through the upstream stage list for its role).
 * Several ISOs may be given: host i boots from source i % nsources.
 *
 * Hosts told to "exit" ask the hub for their state (GET .../hosts/{id}): after binding
 * and unbinding the agent registers again at once, but a host left in
 * unbinding-pending-user-action stops and waits for a person.  With reboot_after_seconds
 * that person (or a BMC) comes: the host reboots into the discovery image that many
 * seconds later and registers again with the same id and hardware, its previous boot
 * forgotten.  Installed hosts (past the Rebooting stage, their agent gone) are then also
 * watched every 10 s and rebooted the same way once the hub shows them
 * unbinding-pending-user-action; without reboot_after_seconds they cost no requests.
 *
 * Errors back off as upstream: a transport error, 503 or 504 is retried 3 times after
 * 2-10 s (jittered); then a registration is retried after the 60 s register interval
 * (401/403/404/409 stop the host for good: "refused"), a failed GET instructions flushes
 * the reply cache and waits the default 60 s, a failed reply is dropped.
 *
 * One thread, one event loop: libcurl's multi interface plus a timer heap; at most
 * max_inflight requests are in flight at once.  Each host keeps its own keep-alive
 * connection between polls, as the upstream agent does (so N hosts hold N connections
 * and file descriptors: the open file limit is raised to its hard limit and checked at
 * start); with shared_connections the hosts share at most max_inflight connections
 * instead and an idle host costs only its struct (a few hundred bytes).  A status line with the hosts per
 * state and the requests by kind goes to stderr every status_seconds and on SIGUSR1.
 * Runs until SIGINT/SIGTERM (or duration_seconds), then returns 0.
 *
 * With a BMC (opts.bmc, `simulate --bmc`) the machines start powered off and follow their
 * BMC: a boot from the virtual CD downloads the inserted image from its URL (at most
 * SIMULATE_MAX_DOWNLOADS at once, 3 tries 5 s apart), takes the Ignition out of it and runs
 * the machine as a discovery host exactly as above (the same host id and hardware on every
 * boot); a boot from disk after an install runs the installed system (the rest of the
 * install timeline if it was cut, then nothing); a power-off or reset aborts whatever the
 * machine was doing (its requests and downloads) and forgets the boot.  An install's own
 * reboot (the Rebooting stage) is not a BMC boot: the installer leaves the machine running
 * its disk, which the BMC is told holds an install.  Hosts stopped in
 * unbinding-pending-user-action wait for the BMC (the hub) to reboot them.
 *
 * Converged flow: when the booted image's Ignition runs the ironic agent
 * (fakehost_config.ipa_api_url), the machine runs it instead of the assisted agent, as
 * ironic-python-agent does: it POSTs its inventory to inspection_callback_url (when set;
 * 3 tries), looks its node up (GET <api_url>/v1/lookup?addresses=<boot MAC>: node.uuid,
 * config.agent_token, config.heartbeat_timeout, default 300) and heartbeats (POST
 * <api_url>/v1/heartbeat/<node uuid> {callback_url, agent_token, agent_version} every
 * 0.3-0.6 heartbeat_timeout, capped by max_poll_seconds) until the power goes.  Its
 * commands API is served by the BMC (bmc.h, /ipa/<id>); the deploy step
 * start_assisted_install starts the assisted agent, and the step ends (SUCCEEDED) when
 * the install reaches Rebooting: the machine then waits, its install timeline paused,
 * for the hub to power it off and boot its disk, where the rest of the timeline runs.
 * An Ignition that runs only the ironic agent (a deploy ramdisk) boots the same way; its
 * write_image deploy step (bmc.h) puts an image and a config drive on the disk, and a
 * boot from that disk runs the config drive's user_data: a discovery Ignition makes the
 * machine a discovery host of its InfraEnv (anything else runs no agent).
 *
 * Not thread-safe: one simulation per process (it installs signal handlers). */
#ifndef AH_AGENT_SIMULATE_H
#define AH_AGENT_SIMULATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/bmc.h"
#include "agent/fakehost.h"
#include "base/error.h"

struct simulate_opts {
	const char *const *sources; /* discovery ISO URLs, or Ignition JSON files when from_ignition */
	unsigned nsources;
	bool from_ignition;
	const char *service_url;    /* overrides the Ignition's --url (NULL = keep) */
	unsigned hosts;
	unsigned cpus;              /* default 8 */
	unsigned memory_gib;        /* default 32 */
	unsigned disk_gib;          /* default 120 */
	const char *subnet;         /* default "192.168.111.0/24" */
	unsigned stage_seconds;     /* default 5 */
	const char *fail_at_stage;  /* NULL = never fail */
	uint64_t seed;
	const char *cacert;         /* PEM file; overrides the Ignition's hub CA */
	bool insecure;              /* skip TLS verification */
	unsigned max_inflight;      /* default 256 */
	unsigned duration_seconds;  /* 0 = until signalled */
	unsigned max_poll_seconds;  /* cap on every sleep between polls (0 = none, upstream) */
	unsigned ramp_ms;           /* boots spread evenly over this many ms (default 5000) */
	unsigned status_seconds;    /* status line period (default 10) */
	int reboot_after_seconds;   /* reboot hosts stopped in UPUA after this (-1 = never, default) */
	bool shared_connections;    /* hosts share a pool of connections (default: each host keeps
				     * its own keep-alive connection, as a real agent does) */
	struct bmc *bmc;            /* with a BMC (bmc.h): no sources; machine i is off until its
				     * BMC powers it on, then runs what it boots (see below) */
	const char *ipa_callback;   /* with a BMC: "http(s)://HOST:PORT/ipa", the ironic agents'
				     * API (bmc.h); a machine's callback_url is this + "/<id>" */
};

#define SIMULATE_MAX_DOWNLOADS 8

/* Fill o with the defaults above (hosts 1, seed 1, no sources). */
void simulate_opts_default(struct simulate_opts *o);

/* Download the ISO at url (or read the Ignition file at path when o->from_ignition) and
 * parse the agent configuration.  0, or -errno with a message in err.  The caller
 * releases *ret. */
int simulate_load_config(const struct simulate_opts *o, const char *source, struct fakehost_config *ret,
			 ah_err *err);

/* Run the fleet; 0 on a clean stop, -errno (message in err) when it cannot start. */
int simulate_run(const struct simulate_opts *o, ah_err *err);

/* ---- pure pieces, exposed for the tests ---- */

/* What the simulator knows of a host's state: its own progress through the protocol and
 * what the instructions reveal of the hub's state (backend.md §7.4).  The exact hub state
 * (known-unbound, insufficient, ...) is on the Agent: status.debugInfo.state. */
enum simulate_state {
	SIM_UNREGISTERED, /* not registered yet (or retrying) */
	SIM_DISCOVERY,    /* registered; gets discovery steps (inventory, ntp, ...) */
	SIM_DISCONNECTED, /* hub answers as for a disconnected host (inventory, 120 s) */
	SIM_BINDING,      /* hub answers "exit" (binding, unbinding) */
	SIM_PREPARING,    /* preparing-for-installation steps */
	SIM_INSTALLING,   /* got `install`: reporting progress stages */
	SIM_INSTALLED,    /* reported Done */
	SIM_FAILED,       /* reported Failed (--fail-at-stage) */
	SIM_ERROR,        /* hub sends stop-installation / logs-gather (error, cancelled) */
	SIM_REFUSED,      /* registration refused (401/403/404/409): waits forever */
	SIM_STOPPED_UPUA, /* told to exit in unbinding-pending-user-action: waits for a reboot */
	SIM_OFF,          /* --bmc: powered off */
	SIM_BOOTING,      /* --bmc: reading the virtual media image (downloading the ISO) */
	SIM_NOBOOT,       /* --bmc: powered on with nothing to boot */
	SIM_DISK,         /* --bmc: running the installed system from its disk (no agent) */
	SIM_IPA,          /* --bmc: running the ironic agent, its assisted agent not started */
	SIM_NSTATES
};
extern const char *const simulate_state_names[SIM_NSTATES];

/* The state a GET instructions reply shows, from `cur`: installed and failed are kept;
 * replies that reveal nothing (no steps) keep `cur`. */
enum simulate_state simulate_state_after_instructions(enum simulate_state cur, const json_t *reply);

/* next_instruction_seconds of a reply (an integer or a whole real), or 60 (the upstream
 * default) when missing or outside 0..3600; then capped to max_poll_seconds when that
 * is not 0. */
int simulate_next_seconds(const json_t *reply, unsigned max_poll_seconds);

/* What the simulator does with the answer to GET .../hosts/{id} (http_code 0 for a
 * transport error; host the parsed body, may be NULL).  `installed`: the host is past
 * its Rebooting stage and watched (else it was just told to "exit"); `reboot`: the
 * simulator plays a person who reboots hosts (--reboot-after). */
enum simulate_check {
	SIM_CHECK_REGISTER, /* register again now: binding, unbinding, or the host is gone */
	SIM_CHECK_STOP,     /* stop for good: unbinding-pending-user-action, nobody reboots */
	SIM_CHECK_REBOOT,   /* unbinding-pending-user-action: reboot into discovery later */
	SIM_CHECK_AGAIN,    /* ask again later: the request failed, or nothing to do yet */
	SIM_CHECK_FORGET,   /* an installed host left the hub: stop watching it */
};
enum simulate_check simulate_check_action(bool installed, bool reboot, long http_code, const json_t *host);

/* Milliseconds until the next state check of a host, or -1 when it gets none: only hosts
 * past the Rebooting stage are watched, and only when reboot_after_seconds >= 0.  About
 * 10 s, jittered by the 64-bit state *rng (8000-12000 ms), capped to max_poll_seconds
 * when that is not 0. */
int simulate_watch_delay_ms(bool rebooted, int reboot_after_seconds, unsigned max_poll_seconds, uint64_t *rng);

/* Upstream's HTTP client retries transport errors and 503/504. */
bool simulate_transient(bool transport_error, long http_code);

/* Delay before retry number `attempt` (1-based) of a transient failure: 2000-10000 ms,
 * picked by the 64-bit state *rng; -1 once the 3 retries are spent. */
int simulate_retry_delay_ms(unsigned attempt, uint64_t *rng);

#endif
