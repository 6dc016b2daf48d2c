/* spoke.h - the installed cluster's API through its admin kubeconfig
 * (spoke.c), for the spoke cleanup of a host that left it. */
#ifndef AH_CONTROLLERS_SPOKE_H
#define AH_CONTROLLERS_SPOKE_H

#include <stddef.h>

#include "base/error.h"

/* Delete Node node on the cluster a kubeconfig (YAML, len bytes) points at
 * (spoke.c): 0 when deleted or absent, negative with err set otherwise. */
int hub_spoke_delete_node(const char *kubeconfig, size_t len, const char *node, ah_err *err);

#endif
