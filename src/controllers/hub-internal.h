/* hub-internal.h - shared between the hub's files (controllers, agent API,
 * image service); not for other layers. */
#ifndef AH_CONTROLLERS_HUB_INTERNAL_H
#define AH_CONTROLLERS_HUB_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "controllers/hub.h"
#include "image/jwt.h"

#define LABEL_INFRAENV "infraenvs.agent-install.openshift.io"
#define FINALIZER_INFRAENV "infraenv.agent-install.openshift.io/ai-deprovision"
#define ANN_INVENTORY "agent.agent-install.openshift.io/inventory"
#define API_PREFIX "/api/assisted-install/v2"
#define IMAGESTATE_RESOURCE "agenthub.internal.imagestates"

struct os_image {
	char *openshift_version;
	char *cpu_architecture;
	char *url;      /* a local path (or file:// URL) to the base ISO */
	char *version;  /* RHCOS build */
};

/* What a host reported during this boot that is not kept in its Agent:
 * recomputed by the host every poll, so losing it on restart is harmless. */
struct host_lease {
	char id[64];
	char ns[256];
	char infra_env_id[64];
	int64_t checked_in_at;   /* unix seconds of the last instructions call */
	bool swept;              /* refreshed once since it went quiet */
	json_t *facts;           /* transient step results (ntp, resolutions, ...) */
	struct host_lease *next;
};

struct hub {
	struct kube_api *api;
	store *store;
	const struct kube_registry *reg;
	const struct kube_kind *k_infraenv, *k_agent, *k_secret;
	struct hub_config cfg;
	char *service_url, *hub_ca_pem, *default_iso;
	struct jwt_keys *keys;
	struct os_image *os_images;
	size_t n_os_images;

	pthread_mutex_t lock;      /* guards leases */
	struct host_lease *leases;

	pthread_t thread;
	bool started, stop;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;
	json_t *queue;             /* object: "kind/ns/name" -> true */
	int64_t last_rev;
};

/* Controllers (controllers.c). */
void hub_enqueue(struct hub *h, const char *kind, const char *ns, const char *name);
int hub_reconcile_infraenv(struct hub *h, const char *ns, const char *name);
int hub_reconcile_agent(struct hub *h, const char *ns, const char *name);
/* The Agent is gone: drop what this process kept about its host. */
void hub_forget_host(struct hub *h, const char *ns, const char *name);

/* Store writes of a fixed text (the hub's private records). */
struct text_render {
	char *text;
};
char *hub_render_text(int64_t rev, size_t *ret_len, void *userdata);

/* Lookups and tokens (hub.c). */
int hub_find_infraenv(struct hub *h, const char *infra_env_id, json_t **ret);
const struct os_image *hub_pick_os_image(struct hub *h, const char *version, const char *arch);
/* The build inputs of an InfraEnv's discovery ignition, its text and digest. */
int hub_build_ignition(struct hub *h, const json_t *infraenv, char **ret_ign, size_t *ret_len,
		       char ret_digest[65], ah_err *err);
/* The InfraEnv's stable agent/URL token (minted once, kept in the store). */
int hub_infraenv_token(struct hub *h, const json_t *infraenv, char **ret, ah_err *err);

/* Agent API (agentapi.c) and image service (imagesvc.c). */
enum MHD_Result hub_agentapi(struct hub *h, struct http_req *req, bool *handled);
enum MHD_Result hub_imagesvc(struct hub *h, struct http_req *req, bool *handled);
void hub_check_disconnected(struct hub *h);

#endif
