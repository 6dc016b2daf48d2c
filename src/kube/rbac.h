/* rbac.h - Kubernetes RBAC authorization (rbac.authorization.k8s.io/v1):
 * whether a user may do a request, from the Roles, ClusterRoles,
 * RoleBindings and ClusterRoleBindings in the store, as kube-apiserver's RBAC
 * authorizer decides it.
 *
 * Two parts:
 *  - pure functions over PolicyRule JSON (rule matching, "covers" for
 *    escalation checks, subject matching, the Forbidden message), table-tested
 *    in tests/unit/kube/test-rbac.c;
 *  - `struct rbac`, which resolves a user's rules from the store and caches
 *    them per (user, groups, namespace) until an RBAC object changes (the
 *    store's resource stamps tell), so a request costs a hash look-up.
 *
 * Members of the group "system:masters" may do everything without a look-up
 * (kube-apiserver's privileged group).  Aggregated ClusterRoles
 * (aggregationRule.clusterRoleSelectors) are resolved when rules are
 * gathered, and written into the role at bootstrap.
 *
 * Threads: struct rbac may be used from every thread once rbac_new() returned;
 * the pure functions share nothing. */
#ifndef AH_KUBE_RBAC_H
#define AH_KUBE_RBAC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "kube/api.h"

#define RBAC_GROUP "rbac.authorization.k8s.io"
#define RBAC_MAX_GROUPS 32
#define RBAC_MASTERS "system:masters"

/* Who asks.  Strings are borrowed for the duration of a call. */
struct rbac_user {
	const char *name;
	const char *groups[RBAC_MAX_GROUPS];
	size_t ngroups;
};

/* What is asked, as kube-apiserver's authorizer.Attributes. */
struct rbac_attrs {
	const char *verb;        /* get list watch create update patch delete deletecollection
				    impersonate bind escalate ...; for non-resource requests the
				    lower-case HTTP method */
	bool resource_request;
	const char *group;       /* API group, "" for core */
	const char *resource;    /* plural */
	const char *subresource; /* "" or e.g. "status", "token" */
	const char *name;        /* "" when none (list, create) */
	const char *ns;          /* "" for cluster scope */
	const char *path;        /* non-resource requests: the URL path */
};

/* --- pure ----------------------------------------------------------------- */

/* Whether one PolicyRule ({verbs, apiGroups, resources, resourceNames,
 * nonResourceURLs}) allows a. */
bool rbac_rule_allows(const json_t *rule, const struct rbac_attrs *a);
/* Whether any rule of the array allows a. */
bool rbac_rules_allow(const json_t *rules, const struct rbac_attrs *a);
/* Whether a binding's subject ({kind User|Group|ServiceAccount, name,
 * namespace}) names u; binding_ns is the binding's namespace ("" for a
 * ClusterRoleBinding), the default of a ServiceAccount subject. */
bool rbac_subject_matches(const json_t *subject, const char *binding_ns, const struct rbac_user *u);
/* Append to `missing` (an array) one atomic rule for every part of `rules`
 * that `owner` (an array of rules) does not cover, as kube-apiserver's
 * escalation check does; returns how many were appended. */
size_t rbac_uncovered(const json_t *owner, const json_t *rules, json_t *missing);
/* "User \"u\" cannot get resource \"agents\" in API group \"...\" in the
 * namespace \"ns\"" (or "at the cluster scope", or "cannot get path \"/x\""). */
void rbac_forbidden_reason(const struct rbac_attrs *a, const char *user, char *buf, size_t size);
/* An atomic rule in kube-apiserver's compact form,
 * {APIGroups:["g"], Resources:["r"], Verbs:["v"]}, appended to buf. */
void rbac_rule_string(const json_t *rule, char *buf, size_t size);
bool rbac_user_in_group(const struct rbac_user *u, const char *group);

/* --- with the store ------------------------------------------------------- */

struct rbac;

/* Register the RBAC admission rules on api (before serving) and return the
 * authorizer.  The caller frees it with rbac_free() before api. */
int rbac_new(struct kube_api *api, struct rbac **ret, ah_err *err);
void rbac_free(struct rbac *rb);

/* Create the default ClusterRoles (cluster-admin, admin, edit, view, the
 * system:aggregate-to-* roles, system:discovery, system:public-info-viewer,
 * system:basic-user) and their ClusterRoleBindings when missing, as
 * kube-apiserver's bootstrap policy does; existing objects are kept. */
int rbac_bootstrap(struct rbac *rb, ah_err *err);

/* The rules u holds in namespace ns ("" = cluster-wide rules only), as a new
 * reference to an array the caller must not change; NULL when out of memory. */
json_t *rbac_rules_for(struct rbac *rb, const struct rbac_user *u, const char *ns);
/* The decision for a; system:masters short-circuits. */
bool rbac_allowed(struct rbac *rb, const struct rbac_user *u, const struct rbac_attrs *a);
/* The effective rules of a Role (ns non-empty) or ClusterRole (ns "") by
 * name, as a new reference (an empty array when it does not exist). */
json_t *rbac_role_rules(struct rbac *rb, const char *kind, const char *ns, const char *name);

#endif
