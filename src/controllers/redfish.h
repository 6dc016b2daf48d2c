/* redfish.h - the hub's Redfish client for BMCs (what Ironic's sushy does for
 * virtual media): power, boot override, virtual media insert/eject.
 *
 * It lives in the controllers layer beside osimages.c (the other outbound
 * libcurl client): src/http is the inbound server, and only the BMH
 * controller (bmh.c) calls a BMC.  Every call is bounded: a connect and a
 * total timeout, a few tries with doubling back-off on transport errors and
 * 5xx answers (never on 4xx: 401 is an answer), and at most
 * rf_max_in_flight() requests in flight in the whole process (a caller past
 * the limit waits for a slot).  Calls block for at most the timeouts and
 * back-offs, so callers run them off the reconcile threads (bmh.c has its own
 * pool).  The credentials go to libcurl only; no message here names them.
 *
 * Threads: every function may be called from any thread. */
#ifndef AH_CONTROLLERS_REDFISH_H
#define AH_CONTROLLERS_REDFISH_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "assisted/bmh.h"
#include "base/error.h"

#define RF_MAX_IN_FLIGHT_DEFAULT 16
#define RF_CONNECT_TIMEOUT_MS 3000
#define RF_TIMEOUT_MS 5000
#define RF_TRIES 3
#define RF_BACKOFF_MS 250
#define RF_BODY_MAX (1 << 20)

/* One BMC endpoint with its credentials (owned by the caller). */
struct rf_conn {
	struct bmh_bmc bmc;
	const char *user, *password;
	bool insecure;          /* spec.bmc.disableCertificateVerification */
};

/* Set the process-wide limit of requests in flight (1..4096); call before
 * the first request. */
void rf_set_max_in_flight(int n);
int rf_max_in_flight(void);

/* Counters since start: requests sent (each try counts), the most in flight
 * at once. */
struct rf_stats {
	uint64_t calls;
	int max_in_flight_seen;
};
void rf_stats(struct rf_stats *ret);

/* What the BMC's system says: power and where its virtual CD is. */
struct rf_system {
	char path[512];      /* the system's @odata.id */
	bool powered_on;
	char cd[512];        /* the CD VirtualMedia's @odata.id, "" if none */
	char mac[32];        /* the first EthernetInterface MAC when linked, else "" */
};

/* GET the system (the first of the collection when the address names none)
 * and find its virtual CD (System VirtualMedia, else its Manager's).
 * 0, or negative with err: -EACCES bad credentials (401/403), -ENOENT no
 * such system, -ETIMEDOUT, -EHOSTUNREACH (no answer), -EPROTO (an answer
 * that is not Redfish). */
int rf_get_system(const struct rf_conn *c, struct rf_system *ret, ah_err *err);
/* POST ComputerSystem.Reset {"ResetType": type}. */
int rf_reset(const struct rf_conn *c, const struct rf_system *s, const char *type, ah_err *err);
/* PATCH Boot {target, enabled, mode (NULL = leave)} with If-Match. */
int rf_set_boot(const struct rf_conn *c, const struct rf_system *s, const char *target, const char *enabled,
		const char *mode, ah_err *err);
int rf_eject(const struct rf_conn *c, const struct rf_system *s, ah_err *err);
int rf_insert(const struct rf_conn *c, const struct rf_system *s, const char *image_url, ah_err *err);

#endif
