/* hub-internal.h - shared between the hub's files (controllers, agent API,
 * image service); not for other layers.  What one module offers the others
 * is in its own header (osimages.h, nmstate.h, records.h, spoke.h,
 * agent.h, runtime.h); this one holds struct hub and what is left. */
#ifndef AH_CONTROLLERS_HUB_INTERNAL_H
#define AH_CONTROLLERS_HUB_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "controllers/hub.h"
#include "controllers/evlimit.h"
#include "controllers/nmstate.h"
#include "controllers/osimages.h"
#include "controllers/records.h"
#include "controllers/spoke.h"
#include "controllers/runtime.h"
#include "image/jwt.h"

#define LABEL_INFRAENV "infraenvs.agent-install.openshift.io"
#define FINALIZER_INFRAENV "infraenv.agent-install.openshift.io/ai-deprovision"
#define ANN_INVENTORY "agent.agent-install.openshift.io/inventory"
#define API_PREFIX "/api/assisted-install/v2"
/* A new value of this InfraEnv annotation rotates its agent token. */
#define ANN_ROTATE_TOKEN "agenthub.io/rotate-agent-token"

/* What a host reported that is not kept in its Agent.  The part later
 * decisions need (check-in time, status-change time, step facts) is also
 * kept in the store, in a private HOSTSTATE_RESOURCE record per host
 * (agent.c), written only when it moved: a restart, or another hub
 * process on the same store, carries on from it. */
struct host_lease {
	char id[64];
	char uid[64];            /* the Agent's uid (its state record names it) */
	char ns[256];
	char infra_env_id[64];
	int64_t checked_in_at;   /* unix seconds of the last instructions call */
	bool swept;              /* refreshed once since it went quiet */
	json_t *facts;           /* transient step results (ntp, resolutions, ...) */
	char last_status[48];    /* the status status_updated_at belongs to */
	int64_t status_updated_at; /* when this process saw the status change (the
				    * state machine's timeouts count from it; a restart
				    * starts them afresh) */
	json_t *applied;         /* the Agent spec fields last applied (agent.c);
				  * NULL until read from its HOSTSPEC_RESOURCE record */
	/* The quick poll (agent.c): an unbound host whose Agent (fast_rev)
	 * and reported facts (facts_gen) have not changed since a full pass
	 * less than HOST_FULL_PASS_S ago only needs its next steps. */
	int64_t fast_rev;        /* Agent revision a full pass wrote nothing at; 0 = none */
	int64_t fast_at;         /* when that pass ran (unix s) */
	uint64_t facts_gen;      /* bumped by every fact a step reply saves */
	uint64_t fast_gen;       /* facts_gen at that pass */
	char fast_status[48];    /* the host's status after that pass */
	/* The state record (HOSTSTATE_RESOURCE): what it holds, so only a
	 * change is written. */
	bool state_loaded;       /* read from the store once */
	bool state_writing;      /* a write is under way (one at a time) */
	int64_t saved_checked_in_at, saved_status_updated_at;
	/* Replicas (cfg.leader_elect): the facts reach the record when they
	 * change (facts_gen past saved_facts_gen), and every use re-reads it
	 * (state_rev: the revision last taken over), so the leader validates
	 * with the facts a host reported to another replica. */
	uint64_t saved_facts_gen;
	int64_t state_rev;
	struct host_lease *hnext;        /* hash bucket chain */
	struct host_lease *prev, *next;  /* h->lease_active (oldest check-in first) or,
					  * once swept, h->lease_quiet */
};

struct lease_list {
	struct host_lease *head, *tail;
};

/* The private records (HOSTSPEC_RESOURCE, HOSTSTATE_RESOURCE, ...) are
 * declared kinds with a schema: controllers/records.h. */

struct hub {
	struct kube_api *api;
	store *store;
	const struct kube_registry *reg;
	const struct kube_kind *k_infraenv, *k_agent, *k_secret;
	struct hub_config cfg;
	int64_t started_at;        /* unix s of hub_new(): a host's check-in counts from
				    * no earlier (it could not call while we were down) */
	char *service_url, *hub_ca_pem, *default_iso;
	struct jwt_keys *keys;
	struct hub_os_images *osi;  /* the OS images and their downloads (osimages.h) */

	pthread_mutex_t lock;      /* guards the leases: table, lists and their fields */
	struct host_lease **lease_buckets; /* hash table keyed by (namespace, host id) */
	size_t lease_nbuckets, lease_count;
	struct lease_list lease_active, lease_quiet;

	/* The controller runtime and the controllers registered with it
	 * (each file registers its own: hub_*_register()). */
	struct rt *rt;
	struct leader *leader;     /* cfg.leader_elect: the elector (leader.c) */
	struct rt_controller *c_infraenv, *c_agent, *c_cd, *c_aci;
	struct rt_controller *c_osimage;  /* OS image news -> InfraEnvs (osimages.c) */
	struct hub_records *records;   /* the record garbage collectors (records.c) */
	struct hub_spoke *spoke;       /* the SpokeCleanup controller's outcomes (spoke.c) */
	const struct kube_kind *k_cd, *k_aci, *k_imageset;
	/* BareMetalHosts (bmh.c, bmac.c); k_bmh NULL when the kind is absent. */
	struct rt_controller *c_bmh, *c_bmac, *c_ppi;
	const struct kube_kind *k_bmh, *k_ppi;
	struct bmh_ctl *bmh_ctl;   /* bmh.c: the BMC job pool */

	struct ev_limiter *ev_limiter; /* EVENT_RATE_LIMITS (events.c, evlimit.h) */
};

/* Controllers, each registered with h->rt by its own file (before the
 * runtime starts): InfraEnv (infraenv.c), Agent (agent.c),
 * ClusterDeployment and AgentClusterInstall (cluster.c); the NMStateConfig
 * module (nmstate.c) adds a watch that maps NMStateConfigs to the InfraEnvs
 * that select them.  0 or a negative errno. */
int hub_infraenv_register(struct hub *h);
int hub_agent_register(struct hub *h);
int hub_cluster_register(struct hub *h);
/* The BareMetalHost controller (bmh.c) and the Bare Metal Agent Controller
 * (bmac.c); hub_bmh_stop() ends the BMC job threads (after rt_stop()). */
int hub_bmh_register(struct hub *h);
int hub_bmac_register(struct hub *h);
/* The InfraEnv annotation that puts the ironic agent into its discovery
 * Ignition (in the converged flow; set by the PPI controller). */
#define IRONIC_AGENT_ANN "infraenv.agent-install.openshift.io/enable-ironic-agent"
#define IRONIC_AGENT_IMAGE_OVERRIDE_ANN "infraenv.agent-install.openshift.io/ironic-agent-image-override"

/* The PreprovisioningImage controller (ppi.c), with the converged flow on. */
int hub_ppi_register(struct hub *h);
void hub_bmh_stop(struct hub *h);
/* AgentClassification and the Agent classification labels (classification.c). */
int hub_classification_register(struct hub *h);
/* An AgentClassification query against an inventory (status.inventory): 1 when
 * it gives exactly true, 0 for one other value, -1 for a query error (does
 * not parse, fails, gives no or several values, or could run without end).
 * Thread-safe (libjq runs under one lock). */
int hub_classification_match(const char *query, const json_t *inventory);
/* The manifests ConfigMaps of ACIs (manifests.c): a ConfigMap event queues the
 * ClusterDeployments that name it (registered after hub_cluster_register);
 * hub_manifests_present() tells whether aci's referenced ConfigMaps all exist
 * and hold at least one manifest (the cluster's custom manifests). */
int hub_manifests_register(struct hub *h);
bool hub_manifests_present(struct hub *h, const json_t *aci);
/* In place of CAPM3 (capm3.c, capm3-data.c): the Metal3Cluster and
 * Metal3Machine controllers; nothing when those kinds are not served. */
int hub_capm3_register(struct hub *h);
/* The CAPI OpenShift Assisted bootstrap provider (capoa-bootstrap.c): the
 * OpenshiftAssistedConfig and CAPOAAgent controllers; nothing when the
 * CAPI kinds are not declared. */
int hub_capoa_bootstrap_register(struct hub *h);
/* Its ignition fetch threads end (hub_free, after rt_stop). */
void hub_capoa_bootstrap_stop(struct hub *h);
/* The CAPOA control-plane provider (capoa-controlplane.c): the
 * OpenshiftAssistedControlPlane, its ClusterDeployment and
 * AgentClusterInstall controllers; nothing when the kinds are absent. */
int hub_capoa_controlplane_register(struct hub *h);
/* Index names the controllers declare on the shared cache. */
#define HUB_IDX_AGENT_CD "clusterDeployment"   /* Agent -> "ns/name" of the CD it names */
#define HUB_IDX_AGENT_TOKEN "ignitionTokenSecret" /* Agent -> "ns/name" of its token Secret */
#define HUB_IDX_AGENT_INFRAENV "infraEnv"       /* Agent -> "ns/name" of the InfraEnv it was discovered by */
#define HUB_IDX_AGENT_MAC "macAddress"          /* Agent -> "ns/mac" (lower case) of each inventory interface */
#define HUB_IDX_ACI_IMAGESET "imageSet"        /* AgentClusterInstall -> its ClusterImageSet */
int hub_reconcile_infraenv(struct hub *h, const char *ns, const char *name);
int hub_reconcile_agent(struct hub *h, const char *ns, const char *name);
/* Would hub_reconcile_agent() act on this Agent at all (a host that has
 * registered and is not being deleted)? */
bool hub_agent_reconcilable(const json_t *agent);
/* The Agent is gone: drop what this process kept about its host. */
void hub_forget_host(struct hub *h, const char *ns, const char *name);
/* The ignition endpoint token applied to the host of agent (the spec sync
 * keeps it out of the host model, which replies echo): 0 with *ret
 * malloc'd, or NULL when none is applied or the host has no lease; -ENOMEM.
 * For the api-vip-connectivity-check step (host_api_vip_check_request()). */
int hub_host_ignition_token(struct hub *h, const json_t *agent, char **ret);

/* Cluster installation (cluster.c; kubeapi.md §4.3): the ClusterDeployment
 * and AgentClusterInstall controllers.  The cluster's state lives in the
 * ACI status (and a private record of its timestamps); the runtime's
 * Agent index HUB_IDX_AGENT_CD tells which Agents name which CD. */
void hub_cluster_init(struct hub *h);
int hub_reconcile_cd(struct hub *h, const char *ns, const char *name);
int hub_reconcile_aci(struct hub *h, const char *ns, const char *name);
/* The cluster model (assisted/cluster.h) of the ClusterDeployment cdns/cdname
 * and the host models of the hosts bound to it (ret_hosts may be NULL).
 * -ENOENT when the ClusterDeployment or its ACI does not exist or the
 * cluster is not registered.  New refs. */
int hub_cluster_context(struct hub *h, const char *cdns, const char *cdname, json_t **ret_cluster,
			json_t **ret_hosts);
/* The "ns/name" of the ClusterDeployment an Agent's spec points at (its own
 * namespace when the reference names none), or "" (cluster.c). */
void hub_agent_cd_key(const json_t *agent, char *buf, size_t size);
/* The host model of an Agent with what this boot of the host reported
 * (agent.c); adds "approved" and "spec_synced" for the cluster side.  New
 * reference, NULL on allocation failure. */
json_t *hub_host_model(struct hub *h, const json_t *agent);
/* Write what the Agent shows of host (status, role, bootstrap, progress,
 * kind, conditions) if it differs; an event for a state change. */
int hub_host_sync(struct hub *h, const json_t *agent, const json_t *host);

/* Store writes of a fixed text (the hub's private records). */
struct text_render {
	char *text;
};
char *hub_render_text(int64_t rev, size_t *ret_len, void *userdata);

/* Lookups and tokens (hub.c). */
int hub_find_infraenv(struct hub *h, const char *infra_env_id, json_t **ret);
/* One spelling per architecture: "" and amd64 are x86_64, aarch64 is arm64
 * (a static string or arch itself). */
const char *hub_norm_arch(const char *arch);
/* The build inputs of an InfraEnv's discovery ignition, its text and digest. */
int hub_build_ignition(struct hub *h, const json_t *infraenv, char **ret_ign, size_t *ret_len,
		       char ret_digest[65], ah_err *err);
/* The InfraEnv's stable agent/URL token (minted once, kept in the store). */
int hub_infraenv_token(struct hub *h, const json_t *infraenv, char **ret, ah_err *err);
/* Whether token is the InfraEnv's current agent token (a rotated one is
 * not).  Compares in constant time. */
bool hub_infraenv_token_current(struct hub *h, const json_t *infraenv, const char *token);

/* Events (events.c; backend.md §8).  An event is stored as a v1 Event in
 * ref->ns about the involved object (so `kubectl get events` shows it), with
 * the upstream fields kept beside it for GET /v2/events.  Recording is
 * best-effort: a failure is logged, never returned, so it can never fail or
 * block the caller's state write.  A repeat of the same event (same object,
 * name, severity and message) bumps the count and lastTimestamp of one Event
 * instead of adding another.  Events are owned by their object (garbage
 * collected with it) and capped at 1000 distinct ones per object.  Each call
 * is one or two store writes on the caller's thread.  Thread-safe. */
/* Set up / free the event recorder of h (its rate limiter, from
 * cfg.event_rate_limits; a bad value fails with err naming it).  Before
 * any event; hub_new and hub_free call them. */
int hub_events_init(struct hub *h, ah_err *err);
void hub_events_release(struct hub *h);
/* The annotation of an Event that holds its upstream fields (JSON). */
#define HUB_EVENT_ANNOTATION "agenthub.io/event"
#define HUB_EV_INFO "info"
#define HUB_EV_WARNING "warning"
#define HUB_EV_ERROR "error"
#define HUB_EV_CRITICAL "critical"

struct hub_event_ref {
	const char *ns;           /* the involved object's namespace (required) */
	const char *kind;         /* "Agent", "AgentClusterInstall", "InfraEnv", ... (required) */
	const char *name;         /* the involved object's name (required) */
	const char *uid;          /* its metadata.uid; NULL = unknown */
	const char *api_version;  /* NULL: looked up in the registry from kind */
	const char *cluster_id;   /* upstream ids the event is about; NULL = none */
	const char *host_id;
	const char *infra_env_id;
};

/* severity: HUB_EV_*; name: the upstream event name ("host_status_updated",
 * ...; NULL = none).  The message is truncated at 4096 bytes. */
void hub_event(struct hub *h, const struct hub_event_ref *ref, const char *severity,
	       const char *name, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The same with category ("user" when NULL, or "metrics") and props (a JSON
 * object, borrowed; NULL = none). */
void hub_event_props(struct hub *h, const struct hub_event_ref *ref, const char *severity,
		     const char *name, const char *category, const json_t *props, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));
/* Fill *ret from an object (kind, name, namespace, uid; for an InfraEnv
 * also infra_env_id = its uid; the other ids stay NULL) or from an Agent
 * (also host_id = its name, infra_env_id = the uid of its InfraEnv owner;
 * cluster_id as given, may be NULL).  *ret borrows from obj.
 * Events carry no secrets: callers format messages from names and states. */
void hub_event_ref_object(const json_t *obj, struct hub_event_ref *ret);
void hub_event_ref_agent(const json_t *agent, const char *cluster_id, struct hub_event_ref *ret);
/* One line per state change (backend.md §8):
 * host_status_updated "Host <hostname>: updated status from <src> to <dst> (<info>)"
 * (upstream's template: "... to <dst> " when info is empty) with the
 * severity of hub_event_host_status_severity(dst), and
 * cluster_status_updated "Updated status of the cluster to <dst>" (info;
 * the stateInfo goes into props; cluster_installation_failed, critical, is a
 * separate hub_event).  No event when src == dst, or when src is NULL or ""
 * (a new object: its registration is the event). */
void hub_event_host_status(struct hub *h, const struct hub_event_ref *ref, const char *hostname,
			   const char *src, const char *dst, const char *info);
void hub_event_cluster_status(struct hub *h, const struct hub_event_ref *ref, const char *src,
			      const char *dst, const char *info);
/* The events a write of a host's Agent implies, called once the write
 * succeeded: agent is the Agent before it, host the model written
 * (agent.c).  host_registration_succeeded for a host's first state,
 * host_validation_failed / host_validation_fixed for each validation whose
 * status moved (upstream's texts: "failed", "that used to succeed is now
 * failing", "is now fixed"), then host_status_updated. */
void hub_host_events(struct hub *h, const json_t *agent, const json_t *host);
/* Single host events at their upstream moments (agent: the host's Agent,
 * host: its model): host_install_progress_updated "Host: <name>, reached
 * installation stage <stage>[: <info>]" (a progress report that moved the
 * stage or its info), host_media_disconnected (error; the media went away,
 * before the status change it causes), host_installation_cancelled
 * "Installation cancelled for host <name>". */
void hub_host_progress_event(struct hub *h, const json_t *agent, const json_t *host);
void hub_host_media_event(struct hub *h, const json_t *agent, const json_t *host);
void hub_host_cancel_event(struct hub *h, const json_t *agent, const json_t *host);
/* A cluster event with a fixed message about the AgentClusterInstall aci
 * (cluster_id = its uid, the hub's cluster id). */
void hub_cluster_event(struct hub *h, const json_t *aci, const char *severity, const char *name, const char *msg);
/* The name upstream's host messages use (GetHostnameForMsg): the requested
 * hostname, the inventory's, else the host id. */
void hub_event_host_name(const json_t *host, char *buf, size_t size);
const char *hub_event_host_status_severity(const char *state);
/* The eventsURL of a cluster (kubeapi.md §4.3 step 10: cluster_id claim)
 * and of a host (§4.4 step 9: the InfraEnv's infra_env_id token).  The
 * cluster token is minted once and kept, so the URL is stable.  *ret is
 * malloc'd. */
int hub_cluster_events_url(struct hub *h, const char *cluster_id, char **ret, ah_err *err);
int hub_host_events_url(struct hub *h, const json_t *infraenv, const char *host_id, char **ret,
			ah_err *err);

/* Admission rules (admission.c; kubeapi.md §5.1): registered once by hub_new. */
int hub_admission_register(struct hub *h, ah_err *err);
/* Whether the ClusterDeployment ns/name is installed: 0 and *ret, or a
 * negative errno when it cannot be read. */
typedef int (*hub_cd_installed_fn)(void *ud, const char *ns, const char *name, bool *ret);
/* The rules themselves, pure but for cd_installed: kind is the Kind name;
 * obj may be changed (the AgentClusterInstall default).  0, or -EINVAL with
 * err = 400 BadRequest and the upstream message.  A status-only update passes. */
int hub_admit_rules(const char *kind, enum kube_op op, const json_t *old, json_t *obj,
		    hub_cd_installed_fn cd_installed, void *ud, ah_err *err);
/* A syntax check of a gojq query (brackets, strings, operators): 0, or
 * -EINVAL with the reason in why. */
int hub_jq_syntax_check(const char *query, char *why, size_t why_size);

/* The disconnection sweep (agent.c). */
void hub_check_disconnected(struct hub *h);
/* Free every lease (hub_free). */
void hub_leases_release(struct hub *h);

/* The InfraEnv's bootArtifacts object (kernel, rootfs, initrd, ipxeScript,
 * discoveryIgnitionURL) for os and the InfraEnv token (infraenv.c).  New
 * reference, NULL on ENOMEM. */
json_t *hub_boot_artifacts(struct hub *h, const json_t *infraenv, const struct os_image *os,
			   const char *token);

#endif
