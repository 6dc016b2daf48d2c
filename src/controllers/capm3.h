/* capm3.h - shared between the two files that do CAPM3's work
 * (cluster-api-provider-metal3) in place of its controllers: capm3.c
 * (Metal3Cluster, Metal3Machine: choosing, provisioning and releasing
 * BareMetalHosts) and capm3-data.c (Metal3DataTemplate / Metal3DataClaim /
 * Metal3Data: the metaData Secret of a Metal3Machine).  Not for other
 * modules: they talk to these controllers through the objects only. */
#ifndef AH_CONTROLLERS_CAPM3_H
#define AH_CONTROLLERS_CAPM3_H

#include <jansson.h>

#include "controllers/hub-internal.h"

#define CAPM3_GROUP "infrastructure.cluster.x-k8s.io"
#define CAPM3_API_VERSION CAPM3_GROUP "/v1beta1"
#define CAPI_GROUP "cluster.x-k8s.io"
#define CAPI_API_VERSION CAPI_GROUP "/v1beta2"
#define CAPI_LABEL_CLUSTER "cluster.x-k8s.io/cluster-name"

/* The kind of CAPM3 (infrastructure group, v1beta1) or CAPI core (v1beta2)
 * named kind, or NULL when it is not served. */
const struct kube_kind *capm3_kind(struct hub *h, const char *kind);
const struct kube_kind *capm3_capi_kind(struct hub *h, const char *kind);

/* The metaData Secret of m3m (whose dataTemplate is set) for host bmh:
 * the Metal3DataClaim <m3m>, an index in the Metal3DataTemplate's
 * status.indexes, the Metal3Data <template>-<index> and the Secret
 * <m3m>-metadata (key metaData) rendered from the BareMetalHost, the
 * Machine and the template's spec.metaData.  A Secret rendered for another
 * host is rendered again.  0 with *ret_secret the Secret's name and
 * *ret_data the Metal3Data's (both malloc'd); 1 when it must wait (the
 * template is missing: msg says why); a negative errno with msg set for
 * bad input (a template item it cannot render). */
int capm3_data_render(struct hub *h, const json_t *m3m, const json_t *machine, const json_t *bmh,
		      const char *cluster, char **ret_secret, char **ret_data, char *msg, size_t msg_size);
/* m3m is going: its claim, Metal3Data and index go (the Secret with the
 * Metal3Data, its owner).  0 or a negative errno. */
int capm3_data_release(struct hub *h, const json_t *m3m);

#endif
