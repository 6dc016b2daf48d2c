/* nmstate.h - static networking (nmstate.c): the NMStateConfigs an
 * InfraEnv selects become the static-network part of its discovery
 * ignition; NMStateConfig events requeue the InfraEnvs they concern. */
#ifndef AH_CONTROLLERS_NMSTATE_H
#define AH_CONTROLLERS_NMSTATE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

struct hub;

/* Cache NMStateConfigs with their label index, index InfraEnvs by what
 * their selector requires, and add the NMStateConfig watch to the
 * InfraEnv controller (after hub_infraenv_register()). */
int hub_nmstate_register(struct hub *h);

/* Static networking (nmstate.c).  parts: the static-network Ignition parts
 * (image/nmstate.h) of the NMStateConfigs the InfraEnv selects; both NULL
 * when it selects none; errors name the NMStateConfig (400).  check_fit:
 * 0 when the embed-area payload of ign fits in 262,144 bytes, else -E2BIG
 * (400) saying how many of the selected configs would fit (params: the
 * inputs ign was built from).  event: an NMStateConfig was written; requeue
 * the InfraEnvs of its namespace it concerns. */
struct discovery_params;
int hub_static_net_parts(struct hub *h, const json_t *infraenv, json_t **ret_files,
			 json_t **ret_units, ah_err *err);
int hub_static_net_check_fit(struct hub *h, const json_t *infraenv,
			     const struct discovery_params *params, const char *ign, size_t len,
			     ah_err *err);
/* last_build: what the last hub_build_ignition() on the calling thread
 * learned, so its caller need not work it out again: 0 with *ret_hosts =
 * the NMStateConfigs it selected for the InfraEnv uid and, when check_fit
 * measured the very buffer ign/len that build returned, *ret_payload_len =
 * its embed-area payload length (else 0); -ENOENT (both 0) when the last
 * build on this thread was for another InfraEnv.  archive: the
 * static-network-config download (image/nmstate.h nmstate_bundle_tar()) of
 * the selected NMStateConfigs, *ret malloc'd; *ret NULL when none. */
int hub_static_net_last_build(const char *uid, const char *ign, size_t len, size_t *ret_hosts,
			      size_t *ret_payload_len);
int hub_static_net_archive(struct hub *h, const json_t *infraenv, char **ret, size_t *ret_len,
			   ah_err *err);

#endif
