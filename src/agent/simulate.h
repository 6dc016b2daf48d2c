/* simulate.h - a fleet of virtual discovery hosts in one process, over the real protocol.
 *
 * simulate_run() boots N virtual hosts the way real ones boot: it downloads the InfraEnv's
 * discovery ISO, takes the discovery Ignition out of its embed area, reads agent.service's
 * configuration (service URL, infra-env id, token, hub CA) and then runs every host's
 * agent loop against the hub: register, GET instructions, reply to each step with what
 * fakehost.h synthesises, sleep next_instruction_seconds; an `install` step starts the
 * host's install progress reports (PUT .../progress every stage_seconds through the
 * upstream stage list for its role).
 *
 * One thread, one event loop: libcurl's multi interface plus a timer heap; at most
 * max_inflight requests are in flight at once, so 10 000 hosts cost memory per host
 * (a few hundred bytes when idle) and nothing more.  A status line goes to stderr every
 * 10 s.  Runs until SIGINT/SIGTERM (or duration_seconds), then returns 0.
 *
 * Not thread-safe: one simulation per process (it installs signal handlers). */
#ifndef AH_AGENT_SIMULATE_H
#define AH_AGENT_SIMULATE_H

#include <stdbool.h>
#include <stdint.h>

#include "agent/fakehost.h"
#include "base/error.h"

struct simulate_opts {
	const char *iso_url;       /* the discovery ISO; or */
	const char *ignition_file; /* a discovery Ignition JSON file instead of the ISO */
	const char *service_url;   /* overrides the Ignition's --url (NULL = keep) */
	unsigned hosts;
	unsigned cpus;             /* default 8 */
	unsigned memory_gib;       /* default 32 */
	unsigned disk_gib;         /* default 120 */
	const char *subnet;        /* default "192.168.111.0/24" */
	unsigned stage_seconds;    /* default 5 */
	const char *fail_at_stage; /* NULL = never fail */
	uint64_t seed;
	const char *cacert;        /* PEM file; overrides the Ignition's hub CA */
	bool insecure;             /* skip TLS verification */
	unsigned max_inflight;     /* default 256 */
	unsigned duration_seconds; /* 0 = until signalled */
};

/* Fill o with the defaults above (hosts 1, seed 1). */
void simulate_opts_default(struct simulate_opts *o);

/* Download the ISO (or read the Ignition file) and parse the agent configuration.
 * 0, or -errno with a message in err.  The caller releases *ret. */
int simulate_load_config(const struct simulate_opts *o, struct fakehost_config *ret, ah_err *err);

/* Run the fleet; 0 on a clean stop, -errno (message in err) when it cannot start. */
int simulate_run(const struct simulate_opts *o, ah_err *err);

#endif
