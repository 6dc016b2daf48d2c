/* hub.h - the provisioning hub above the Kubernetes API: the controllers
 * (InfraEnv, Agent, ClusterDeployment, AgentClusterInstall) on the
 * controller runtime; the services that serve hosts (agent REST API, image
 * service, events URL) are in src/api/ (api/api.h).
 *
 * All state lives in the objects of the store (InfraEnv and Agent status);
 * the only state kept in memory is what hosts report every poll and what
 * can be recomputed (their last check-in, the step results of this boot),
 * so a heartbeat from thousands of hosts never rewrites an object.
 * Thread-safe: handlers run on connection threads, controllers on their own. */
#ifndef AH_CONTROLLERS_HUB_H
#define AH_CONTROLLERS_HUB_H

#include <stdbool.h>

#include "base/error.h"
#include "http/server.h"
#include "kube/api.h"

struct hub_config {
	const char *data_dir;          /* JWT signing key lives here */
	const char *service_url;       /* how hosts reach us, e.g. https://192.168.111.1:6443 */
	const char *hub_ca_pem;        /* the CA hosts must trust for service_url */
	const char *os_images_file;    /* JSON list as upstream's OS_IMAGES; NULL = built-in test ISO */
	const char *default_iso;       /* base ISO used when os_images_file is NULL */
	int host_disconnect_timeout_s; /* default 180 */
	int image_cooldown_s;          /* minimum seconds between regenerations, default 10 */
	const char *event_rate_limits; /* upstream's EVENT_RATE_LIMITS JSON text; NULL = its defaults */
	/* Several replicas on one store (PostgreSQL): only the holder of the
	 * Lease kube-system/agenthub-controllers runs the controllers
	 * (leader.h); the others serve the APIs.  identity names this one. */
	bool leader_elect;
	const char *leader_identity;
	bool converged_flow;           /* upstream ALLOW_CONVERGED_FLOW (agenthub serve
					* default true; --converged-flow=false turns it
					* off): the PPI controller runs and puts the
					* ironic agent into the discovery Ignition, the
					* BMH side creates the PreprovisioningImage of
					* each BMH labelled with an InfraEnv, BMAC sets
					* customDeploy start_assisted_install.  False:
					* the live-ISO flow (BMAC sets spec.image), no
					* PPI controller. */
};

struct hub;

int hub_new(struct kube_api *api, const struct hub_config *cfg, struct hub **ret, ah_err *err);
/* Stops the controller threads. */
void hub_free(struct hub *h);

/* Parse "3m", "8s", "1h30m", "90" (seconds). 0 or -EINVAL. */
int hub_parse_duration(const char *s, int *ret_seconds);

#endif
