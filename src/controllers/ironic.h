/* ironic.h - the hub's part of Ironic for BareMetalHosts deployed from a disk
 * image (and the converged flow): the API the ironic agent (ironic-python-
 * agent) calls, and the client the hub calls the agent's command API with.
 *
 * The agent API (src/api/ironicapi.c serves it on the agent API port):
 *   GET  /v1/lookup?addresses=MAC[,MAC...]   the node whose BMH boots from one of
 *        those MACs and waits for its agent: {"node": {"uuid", ...}, "config":
 *        {"heartbeat_timeout", "agent_token", "agent_token_required": true}}.
 *        The token is handed out on the first lookup of a boot only ("******"
 *        after, as Ironic); 404 when no such node waits for an agent.
 *   POST /v1/heartbeat/{uuid}  {"callback_url", "agent_token", "agent_version"}: 202;
 *        401 on a missing or wrong token, 404 for an unknown node.
 * A node (the BMH's uid) exists from the moment the hub boots the host on the
 * deploy ramdisk until the deploy ends (or the BMH leaves provisioning); at
 * most IRONIC_NODES_MAX at once.  Tokens are 256-bit random, never logged.
 *
 * Threads: every function may be called from any thread. */
#ifndef AH_CONTROLLERS_IRONIC_H
#define AH_CONTROLLERS_IRONIC_H

#include <jansson.h>
#include <stdbool.h>

#include "base/error.h"

struct hub;

#define IRONIC_NODES_MAX 100000
#define IRONIC_HEARTBEAT_TIMEOUT 30   /* seconds, told to the agent at lookup */
#define IRONIC_CALLBACK_MAX 512
#define IRONIC_BODY_MAX (1 << 20)

/* The lookup: 0 and *ret (the reply body), -ENOENT (no node), -EINVAL (no
 * usable address). */
int hub_ironic_lookup(struct hub *h, const char *addresses, json_t **ret);

/* A heartbeat: 0 (accepted; the BMH is queued), -ENOENT, -EACCES (token),
 * -EINVAL (bad callback_url). */
int hub_ironic_heartbeat(struct hub *h, const char *uuid, const char *token, const char *callback_url);

/* Run one agent command: POST <callback>/v1/commands/?wait=true&agent_token=T
 * {"name", "params"}; a command still RUNNING is polled (GET
 * .../v1/commands/{id}) every second up to poll_s seconds.  0 with
 * *ret_status "SUCCEEDED" / "FAILED" / "RUNNING" (still running after poll_s)
 * and msg (the command_error's message) ; negative with err (transport, HTTP
 * status). */
int ironic_agent_command(const char *callback, const char *token, const char *name, const json_t *params,
			 unsigned poll_s, char *ret_status, size_t status_size, char *msg, size_t msg_size,
			 ah_err *err);

/* The status of the agent's newest command named command_name (GET
 * <callback>/v1/commands/): 0 with *ret_status (and msg for FAILED), -ENOENT
 * when it has none, negative with err. */
int ironic_agent_last_status(const char *callback, const char *token, const char *command_name, char *ret_status,
			     size_t status_size, char *msg, size_t msg_size, ah_err *err);

#endif
