/* authpb.h - Kubernetes protobuf request bodies of the authentication and
 * RBAC kinds, as JSON.
 *
 * kubectl 1.32 and later send built-in kinds as protobuf
 * (application/vnd.kubernetes.protobuf: "k8s\0" and a runtime.Unknown
 * holding the object): `kubectl create serviceaccount|token|rolebinding`,
 * `kubectl auth can-i|whoami`.  This decodes the fields the API server reads
 * of ServiceAccount, Role, ClusterRole, RoleBinding, ClusterRoleBinding,
 * TokenRequest, SelfSubjectAccessReview, SelfSubjectRulesReview and
 * SelfSubjectReview (field numbers from the upstream .proto files); unknown
 * fields are skipped.  Pure; bounded nesting. */
#ifndef AH_HTTP_AUTHPB_H
#define AH_HTTP_AUTHPB_H

#include <jansson.h>
#include <stddef.h>

/* Decode a whole body.  Returns 0 with the object (apiVersion and kind set)
 * in *ret, -ENOTSUP for a kind not listed above, -EINVAL for a malformed
 * body. */
int authpb_decode(const void *buf, size_t len, json_t **ret);

#endif
