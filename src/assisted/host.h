/* host.h - the host state machine for the states reachable before
 * installation, bound and unbound (backend spec §1.1 RegisterHost, §1.4
 * RefreshHost rules #2, #7, #13, #26-#31, #33 and the pool rules P1-P5).
 *
 * Hosts are jansson objects in the upstream snake_case host model (see
 * validations.h).  All functions are pure and thread-safe. */
#ifndef AH_ASSISTED_HOST_H
#define AH_ASSISTED_HOST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Upstream status_info texts used by these transitions. */
#define HOST_INFO_DISCOVERING "Waiting for host to send hardware details"
#define HOST_INFO_DISCONNECTED "Host has stopped communicating with the installation service"
#define HOST_INFO_KNOWN "Host is ready to be installed"
#define HOST_INFO_READY_TO_BE_BOUND "Host is ready to be bound to a cluster"
#define HOST_INFO_BINDING "Host is waiting to be bound to the cluster"
#define HOST_INFO_UNBINDING "Host is waiting to be unbound from the cluster"
#define HOST_INFO_PREPARING "Host is preparing for installation"
#define HOST_INFO_MEDIA_DISCONNECTED \
	"Unable to read from the discovery media. It was either disconnected or poor network conditions prevented it from being read. Try using the minimal ISO option and be sure to keep the media connected until the installation is completed"

/* RegisterHost (§1.1, first match): the state a (re-)registering host moves
 * to.  host_or_null NULL = new row: "discovering" when bound, else
 * "discovering-unbound".  Returns NULL when registration is refused; then
 * host_register_refusal() gives the HTTP status.  Borrowed static string. */
const char *host_register_state(const json_t *host_or_null, bool bound);

/* HTTP status of a refused registration: 409 for installed, 403 for
 * installing-pending-user-action at the reboot stage, else 400; 0 when
 * host_register_state() accepts. */
int host_register_refusal(const json_t *host);

/* Apply RegisterHost to host in place: new status, status_info
 * HOST_INFO_DISCOVERING for (un)bound discovering, clears what rule #3 / P2
 * clear (progress, inventory, bootstrap, images_status, ntp_sources,
 * logs_info, installation disk) or what #2 clears; registered_at := now
 * (and checked_in_at, role = suggested_role = "auto-assign" for a new row
 * when is_new).  0, or -EINVAL/-EPERM/-EBUSY with err set to 400/403/409. */
int host_register(json_t *host, bool is_new, bool bound, int64_t now, ah_err *err);

struct host_refresh_ctx {
	int64_t now;                     /* unix seconds */
	int disconnect_timeout_s;        /* 0 → 180 (HOST_MAX_DISCONNECTION_TIME) */
	const json_t *cluster;           /* NULL for unbound hosts */
	const json_t *cluster_hosts;     /* all hosts of the cluster (for hostname-unique, latency) */
	const char *service_agent_image; /* NULL → compatible-agent check disabled */
};

#define HOST_STATUS_INFO_MAX 2040

struct host_refresh_result {
	char status[48];
	char status_info[HOST_STATUS_INFO_MAX + 1]; /* truncated to 2040 bytes as upstream */
	json_t *validations_info;  /* owned; release with host_refresh_result_release() */
	json_t *validations;       /* owned; id → {category,status,message}, incl. suppressed */
	bool rule_matched;         /* false: no RefreshHost rule matched (upstream 409); status kept */
	bool status_changed;       /* status differs from host's */
	bool validations_changed;  /* validations_info differs from host's */
	bool changed;              /* anything differs (status, status_info, validations_info) */
};

/* Compute validations, then the next status/status_info by RefreshHost in
 * spec order (first match).  ret is fully written on success.  Returns 0,
 * or -EOPNOTSUPP for statuses outside the pre-installation scope
 * (installing and later, reclaiming...), -EINVAL for a host without status. */
int host_refresh(const json_t *host, const struct host_refresh_ctx *ctx, struct host_refresh_result *ret);

void host_refresh_result_release(struct host_refresh_result *r);

#endif
