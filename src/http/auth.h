/* auth.h - who a Kubernetes API request comes from, and the endpoints that
 * are about identity: authentication (the admin token, ServiceAccount
 * tokens), impersonation (Impersonate-User / Impersonate-Group), the
 * TokenRequest subresource (serviceaccounts/NAME/token), the
 * SelfSubjectAccessReview / SelfSubjectRulesReview / SelfSubjectReview
 * kinds, and the RBAC escalation checks on writes of the RBAC kinds.
 * Authorization decisions themselves are kube/rbac.h's.
 *
 * Identities:
 *   admin token         user "system:admin", groups system:masters, system:authenticated
 *   ServiceAccount JWT  user "system:serviceaccount:NS:NAME", groups
 *                       system:serviceaccounts, system:serviceaccounts:NS, system:authenticated
 *
 * Threads: every function may be called from any connection thread. */
#ifndef AH_HTTP_AUTH_H
#define AH_HTTP_AUTH_H

#include <stdbool.h>

#include "http/creds.h"
#include "http/server.h"
#include "kube/api.h"
#include "kube/rbac.h"

#define AUTH_ADMIN_USER "system:admin"
/* The audience of the tokens this hub issues and accepts. */
#define AUTH_AUDIENCE "https://kubernetes.default.svc.cluster.local"
/* TokenRequest bounds: kube-apiserver's minimum, and the maximum this hub
 * grants (longer requests are shortened, as kube-apiserver does with
 * --service-account-max-token-expiration). */
#define AUTH_TOKEN_MIN_SECONDS 600
#define AUTH_TOKEN_MAX_SECONDS (48 * 3600)
#define AUTH_TOKEN_DEFAULT_SECONDS 3600

/* A bounded identity; plain data. */
struct auth_identity {
	char user[320];
	char uid[64];
	char groups[RBAC_MAX_GROUPS][256];
	size_t ngroups;
	bool masters; /* in system:masters: every check short-circuits */
};

/* Verified ServiceAccount tokens, so that a request with a token seen
 * before costs a digest and a look-up: an entry holds until the token
 * expires or any ServiceAccount changes (the store's stamp).  Bounded. */
struct auth_cache;
struct auth_cache *auth_cache_new(void);
void auth_cache_free(struct auth_cache *ac);

/* The rbac_user view of id (pointers into id). */
void auth_rbac_user(const struct auth_identity *id, struct rbac_user *ret);

/* Authenticate the request's bearer token.  0 with *ret filled, or -EACCES
 * (reply 401).  A ServiceAccount token must be signed by this hub, within
 * its validity, for AUTH_AUDIENCE, and its ServiceAccount must still exist
 * with the uid the token names. */
int auth_authenticate(struct kube_api *api, const struct creds *c, struct auth_cache *ac,
		      struct http_req *req, struct auth_identity *ret);

/* Apply Impersonate-* headers, if any, after checking the caller may
 * impersonate each (verb impersonate on users / groups / serviceaccounts).
 * Returns MHD_YES with *replied false when the request goes on as *id
 * (changed when impersonating); otherwise a 403/400 reply was queued,
 * *replied is true and the return value is the reply's. */
enum http_result auth_impersonate(struct rbac *rb, struct http_req *req, struct auth_identity *id,
				 bool *replied);

/* Reply 403 Forbidden for a denied request, in kube-apiserver's words. */
enum http_result auth_reply_forbidden(struct http_req *req, const struct auth_identity *id,
				     const struct rbac_attrs *a, const char *qualified_resource);

/* POST .../serviceaccounts/NAME/token. */
enum http_result auth_token_request(struct kube_api *api, const struct creds *c,
				   struct http_req *req, const char *ns, const char *name);
/* POST of a review kind (k->review). */
enum http_result auth_review(struct rbac *rb, struct http_req *req, const struct kube_kind *k,
			    const struct auth_identity *id);

/* After a write to a namespace (name, or NULL to read it from the request
 * body): give it the ServiceAccount "default" if it has none, as
 * kube-controller-manager does. */
void auth_namespace_default_sa(struct kube_api *api, struct http_req *req, const char *name);

/* A protobuf body (Content-Type application/vnd.kubernetes.protobuf, see
 * kube/proto.h) is replaced by its JSON text, so the JSON paths read it;
 * other bodies are left as they are.  A body that does not decode: a
 * negative errno with err set (400, or 415 for a kind with no protobuf
 * form). */
int auth_body_from_protobuf(struct http_req *req, ah_err *err);

/* Escalation prevention for create/update/patch of Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings by a caller outside system:masters:
 * the object written may grant only what the caller holds, unless the
 * caller may `escalate` (roles) or `bind` (the referenced role).  Returns
 * 0 when the write may go on, or a negative errno with err set (403). */
int auth_check_escalation(struct kube_api *api, struct rbac *rb, const struct auth_identity *id,
			  struct http_req *req, const struct kube_kind *k, const char *ns,
			  const char *name, ah_err *err);

#endif
