/* registry.c - kinds from CRD manifests plus the built-in core kinds.
 * See registry.h.  Everything here runs once at start-up. */
#include "registry.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/yamljson.h"

/* Lists that merge by key under a strategic merge patch for built-in kinds.
 * The metadata lists are handled by patch_strategic() for every kind. */
static const struct smp_list_meta no_lists[] = { { NULL, NULL } };

struct builtin_def {
	const char *group, *version; /* NULL group: the core group "" */
	const char *kind, *plural, *singular, *short_name;
	bool namespaced, has_status;
	const char *columns; /* JSON array of printer columns */
	const char *schema;  /* JSON openAPIV3Schema */
	const char *store_key;  /* another kind's storage, served converted (NULL: own) */
	const char *category;   /* NULL: none */
	bool review;            /* create-only review kind (see registry.h) */
};

#define RBAC_GROUP "rbac.authorization.k8s.io"
/* Objects whose fields the API server checks itself (kube/rbac.c) rather than a schema. */
#define OPEN_SCHEMA(desc) "{\"type\":\"object\",\"description\":\"" desc "\"," \
	"\"x-kubernetes-preserve-unknown-fields\":true,\"properties\":{\"apiVersion\":{\"type\":\"string\"}," \
	"\"kind\":{\"type\":\"string\"},\"metadata\":{\"type\":\"object\"}}}"
#define CREATED_AT_COL "[{\"name\":\"Created At\",\"type\":\"string\",\"jsonPath\":\".metadata.creationTimestamp\"}]"
#define REVIEW(k, p, g, v, desc) { .group = g, .version = v, .kind = k, .plural = p, .singular = "", \
	.columns = "[]", .schema = OPEN_SCHEMA(desc), .review = true }

#define AGE_COL "{\"name\":\"Age\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\"}"
#define META_PROPS "\"apiVersion\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\"},\"metadata\":{\"type\":\"object\"},"
#define OBJREF "{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true,\"properties\":{" \
	"\"kind\":{\"type\":\"string\"},\"namespace\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"}," \
	"\"uid\":{\"type\":\"string\"},\"apiVersion\":{\"type\":\"string\"},\"resourceVersion\":{\"type\":\"string\"}," \
	"\"fieldPath\":{\"type\":\"string\"}}}"
#define QUANTITIES "{\"type\":\"object\",\"additionalProperties\":{\"x-kubernetes-int-or-string\":true}}"

/* The columns and cells of kube-apiserver's printers (pkg/printers/internalversion):
 * computed cells are named by "x-agenthub-compute" (see table.c). */
#define EVENT_COLUMNS \
	"[{\"name\":\"Last Seen\",\"type\":\"string\",\"jsonPath\":\".lastTimestamp\",\"x-agenthub-compute\":\"event-last-seen\"," \
	"\"description\":\"The time at which the most recent occurrence of this event was recorded.\"}," \
	"{\"name\":\"Type\",\"type\":\"string\",\"jsonPath\":\".type\",\"description\":\"Type of this event (Normal, Warning), new types could be added in the future\"}," \
	"{\"name\":\"Reason\",\"type\":\"string\",\"jsonPath\":\".reason\",\"description\":\"This should be a short, machine understandable string that gives the reason for the transition into the object's current status.\"}," \
	"{\"name\":\"Object\",\"type\":\"string\",\"jsonPath\":\".involvedObject\",\"x-agenthub-compute\":\"event-object\",\"description\":\"The object that this event is about.\"}," \
	"{\"name\":\"Subobject\",\"type\":\"string\",\"priority\":1,\"jsonPath\":\".involvedObject.fieldPath\",\"description\":\"The object that this event is about.\"}," \
	"{\"name\":\"Source\",\"type\":\"string\",\"priority\":1,\"jsonPath\":\".source\",\"x-agenthub-compute\":\"event-source\",\"description\":\"The component reporting this event. Should be a short machine understandable string.\"}," \
	"{\"name\":\"Message\",\"type\":\"string\",\"jsonPath\":\".message\",\"x-agenthub-compute\":\"event-message\",\"description\":\"A human-readable description of the status of this operation.\"}," \
	"{\"name\":\"First Seen\",\"type\":\"string\",\"priority\":1,\"jsonPath\":\".firstTimestamp\",\"x-agenthub-compute\":\"event-first-seen\",\"description\":\"The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)\"}," \
	"{\"name\":\"Count\",\"type\":\"string\",\"priority\":1,\"jsonPath\":\".count\",\"x-agenthub-compute\":\"event-count\",\"description\":\"The number of times this event has occurred.\"}," \
	"{\"name\":\"Name\",\"type\":\"string\",\"priority\":1,\"jsonPath\":\".metadata.name\",\"x-agenthub-compute\":\"name\",\"format\":\"name\",\"description\":\"Name must be unique within a namespace.\"}]"

static const struct builtin_def builtins[] = {
	{ .kind = "Namespace", .plural = "namespaces", .singular = "namespace", .short_name = "ns",
	  .namespaced = false, .has_status = true,
	  .columns = "[{\"name\":\"Status\",\"type\":\"string\",\"jsonPath\":\".status.phase\",\"description\":\"The status of the namespace\"}," AGE_COL "]",
	  .schema = "{\"type\":\"object\",\"description\":\"Namespace provides a scope for Names. Use of multiple namespaces is optional.\","
	  "\"properties\":{" META_PROPS
	  "\"spec\":{\"type\":\"object\",\"properties\":{\"finalizers\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
	  "\"status\":{\"type\":\"object\",\"properties\":{\"phase\":{\"type\":\"string\"},"
	  "\"conditions\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}}}}" },
	{ .kind = "Secret", .plural = "secrets", .singular = "secret", .namespaced = true,
	  .columns = "[{\"name\":\"Type\",\"type\":\"string\",\"jsonPath\":\".type\",\"description\":\"The type of data stored in the secret\"},"
	  "{\"name\":\"Data\",\"type\":\"string\",\"jsonPath\":\".data\",\"x-agenthub-compute\":\"count\",\"description\":\"Number of items in the secret\"}," AGE_COL "]",
	  .schema = "{\"type\":\"object\",\"description\":\"Secret holds secret data of a certain type. The total bytes of the values in the Data field must be less than MaxSecretSize bytes.\","
	  "\"properties\":{" META_PROPS
	  "\"data\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"format\":\"byte\"}},"
	  "\"stringData\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	  "\"immutable\":{\"type\":\"boolean\"},\"type\":{\"type\":\"string\"}}}" },
	{ .kind = "ConfigMap", .plural = "configmaps", .singular = "configmap", .short_name = "cm", .namespaced = true,
	  .columns = "[{\"name\":\"Data\",\"type\":\"string\",\"jsonPath\":\".data\",\"x-agenthub-compute\":\"count\",\"description\":\"Number of items in the config map\"}," AGE_COL "]",
	  .schema = "{\"type\":\"object\",\"description\":\"ConfigMap holds configuration data for pods to consume.\","
	  "\"properties\":{" META_PROPS
	  "\"data\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
	  "\"binaryData\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\",\"format\":\"byte\"}},"
	  "\"immutable\":{\"type\":\"boolean\"}}}" },
	{ .kind = "Event", .plural = "events", .singular = "event", .short_name = "ev", .namespaced = true,
	  .columns = EVENT_COLUMNS,
	  .schema = "{\"type\":\"object\",\"description\":\"Event is a report of an event somewhere in the cluster.\","
	  "\"x-kubernetes-preserve-unknown-fields\":true,"
	  "\"properties\":{" META_PROPS
	  "\"involvedObject\":" OBJREF ",\"related\":" OBJREF ","
	  "\"reason\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
	  "\"count\":{\"type\":\"integer\"},\"firstTimestamp\":{\"type\":\"string\",\"format\":\"date-time\"},"
	  "\"lastTimestamp\":{\"type\":\"string\",\"format\":\"date-time\"},\"eventTime\":{\"type\":\"string\",\"format\":\"date-time\"},"
	  "\"action\":{\"type\":\"string\"},\"reportingComponent\":{\"type\":\"string\"},\"reportingInstance\":{\"type\":\"string\"},"
	  "\"source\":{\"type\":\"object\",\"properties\":{\"component\":{\"type\":\"string\"},\"host\":{\"type\":\"string\"}}},"
	  "\"series\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"},\"lastObservedTime\":{\"type\":\"string\",\"format\":\"date-time\"}}}}}" },
	{ .kind = "ResourceQuota", .plural = "resourcequotas", .singular = "resourcequota", .short_name = "quota",
	  .namespaced = true, .has_status = true,
	  .columns = "[" AGE_COL ",{\"name\":\"Request\",\"type\":\"string\",\"jsonPath\":\".status.hard\",\"x-agenthub-compute\":\"quota-request\","
	  "\"description\":\"Request represents a minimum amount of cpu/memory that a container may consume.\"},"
	  "{\"name\":\"Limit\",\"type\":\"string\",\"jsonPath\":\".status.hard\",\"x-agenthub-compute\":\"quota-limit\","
	  "\"description\":\"Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.\"}]",
	  .schema = "{\"type\":\"object\",\"description\":\"ResourceQuota sets aggregate quota restrictions enforced per namespace\","
	  "\"properties\":{" META_PROPS
	  "\"spec\":{\"type\":\"object\",\"properties\":{\"hard\":" QUANTITIES ",\"scopes\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	  "\"scopeSelector\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}},"
	  "\"status\":{\"type\":\"object\",\"properties\":{\"hard\":" QUANTITIES ",\"used\":" QUANTITIES "}}}}" },
	{ .kind = "LimitRange", .plural = "limitranges", .singular = "limitrange", .short_name = "limits", .namespaced = true,
	  .columns = "[{\"name\":\"Created At\",\"type\":\"date\",\"jsonPath\":\".metadata.creationTimestamp\",\"x-agenthub-compute\":\"created-at\","
	  "\"description\":\"CreationTimestamp is a timestamp representing the server time when this object was created.\"}]",
	  .schema = "{\"type\":\"object\",\"description\":\"LimitRange sets resource usage limits for each kind of resource in a Namespace.\","
	  "\"properties\":{" META_PROPS
	  "\"spec\":{\"type\":\"object\",\"properties\":{\"limits\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
	  "\"type\":{\"type\":\"string\"},\"max\":" QUANTITIES ",\"min\":" QUANTITIES ",\"default\":" QUANTITIES ","
	  "\"defaultRequest\":" QUANTITIES ",\"maxLimitRequestRatio\":" QUANTITIES "}}}}}}}" },
	{ .kind = "Service", .plural = "services", .singular = "service", .short_name = "svc", .namespaced = true,
	  .has_status = true, .category = "all",
	  .columns = "[{\"name\":\"Type\",\"type\":\"string\",\"jsonPath\":\".spec.type\",\"description\":\"type determines how the Service is exposed.\"},"
	  "{\"name\":\"Cluster-IP\",\"type\":\"string\",\"jsonPath\":\".spec.clusterIP\",\"description\":\"clusterIP is the IP address of the service.\"},"
	  "{\"name\":\"External-IP\",\"type\":\"string\",\"jsonPath\":\".spec.externalIPs\",\"description\":\"externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.\"},"
	  "{\"name\":\"Port(s)\",\"type\":\"string\",\"jsonPath\":\".spec.ports[*].port\",\"description\":\"The list of ports that are exposed by this service.\"}," AGE_COL "]",
	  .schema = "{\"type\":\"object\",\"description\":\"Service is a named abstraction of software service (for example, mysql) consisting of local port that the proxy listens on, and the selector that determines which pods will answer requests sent through the proxy.\","
	  "\"properties\":{" META_PROPS
	  "\"spec\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},"
	  "\"status\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}" },
	{ .group = "coordination.k8s.io", .version = "v1", .kind = "Lease", .plural = "leases", .singular = "lease",
	  .namespaced = true,
	  .columns = "[{\"name\":\"Holder\",\"type\":\"string\",\"jsonPath\":\".spec.holderIdentity\",\"description\":\"holderIdentity contains the identity of the holder of a current lease.\"}," AGE_COL "]",
	  .schema = "{\"type\":\"object\",\"description\":\"Lease defines a lease concept.\","
	  "\"properties\":{" META_PROPS
	  "\"spec\":{\"type\":\"object\",\"properties\":{\"holderIdentity\":{\"type\":\"string\"},"
	  "\"leaseDurationSeconds\":{\"type\":\"integer\",\"format\":\"int32\"},"
	  "\"acquireTime\":{\"type\":\"string\",\"format\":\"date-time\"},\"renewTime\":{\"type\":\"string\",\"format\":\"date-time\"},"
	  "\"leaseTransitions\":{\"type\":\"integer\",\"format\":\"int32\"},\"strategy\":{\"type\":\"string\"},"
	  "\"preferredHolder\":{\"type\":\"string\"}}}}}" },
	/* One resource in two groups: events.k8s.io Events are the core Events,
	 * with their fields renamed (kube_event_convert). */
	{ .group = "events.k8s.io", .version = "v1", .kind = "Event", .plural = "events", .singular = "event",
	  .short_name = "ev", .namespaced = true, .store_key = "events",
	  .columns = EVENT_COLUMNS,
	  .schema = "{\"type\":\"object\",\"description\":\"Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system.\","
	  "\"x-kubernetes-preserve-unknown-fields\":true,"
	  "\"properties\":{" META_PROPS
	  "\"eventTime\":{\"type\":\"string\",\"format\":\"date-time\"},"
	  "\"series\":{\"type\":\"object\",\"properties\":{\"count\":{\"type\":\"integer\"},\"lastObservedTime\":{\"type\":\"string\",\"format\":\"date-time\"}}},"
	  "\"reportingController\":{\"type\":\"string\"},\"reportingInstance\":{\"type\":\"string\"},"
	  "\"action\":{\"type\":\"string\"},\"reason\":{\"type\":\"string\"},\"regarding\":" OBJREF ",\"related\":" OBJREF ","
	  "\"note\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
	  "\"deprecatedSource\":{\"type\":\"object\",\"properties\":{\"component\":{\"type\":\"string\"},\"host\":{\"type\":\"string\"}}},"
	  "\"deprecatedFirstTimestamp\":{\"type\":\"string\",\"format\":\"date-time\"},"
	  "\"deprecatedLastTimestamp\":{\"type\":\"string\",\"format\":\"date-time\"},\"deprecatedCount\":{\"type\":\"integer\"}}}" },
	/* Kubernetes RBAC and authentication (kube/rbac.h): stored as they come,
	 * checked by kube/rbac.c's admission. */
	{ .kind = "ServiceAccount", .plural = "serviceaccounts", .singular = "serviceaccount", .short_name = "sa",
	  .namespaced = true, .columns = "[" AGE_COL "]",
	  .schema = OPEN_SCHEMA("ServiceAccount binds together a name, understood by users, and perhaps by peripheral systems, for an identity.") },
	{ .group = RBAC_GROUP, .version = "v1", .kind = "Role", .plural = "roles", .singular = "role", .namespaced = true,
	  .columns = CREATED_AT_COL,
	  .schema = OPEN_SCHEMA("Role is a namespaced, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding.") },
	{ .group = RBAC_GROUP, .version = "v1", .kind = "ClusterRole", .plural = "clusterroles", .singular = "clusterrole",
	  .columns = CREATED_AT_COL,
	  .schema = OPEN_SCHEMA("ClusterRole is a cluster level, logical grouping of PolicyRules that can be referenced as a unit by a RoleBinding or ClusterRoleBinding.") },
	{ .group = RBAC_GROUP, .version = "v1", .kind = "RoleBinding", .plural = "rolebindings", .singular = "rolebinding",
	  .namespaced = true, .columns = "[{\"name\":\"Role\",\"type\":\"string\",\"jsonPath\":\".roleRef.name\"}," AGE_COL "]",
	  .schema = OPEN_SCHEMA("RoleBinding references a role, but does not contain it.") },
	{ .group = RBAC_GROUP, .version = "v1", .kind = "ClusterRoleBinding", .plural = "clusterrolebindings",
	  .singular = "clusterrolebinding",
	  .columns = "[{\"name\":\"Role\",\"type\":\"string\",\"jsonPath\":\".roleRef.name\"}," AGE_COL "]",
	  .schema = OPEN_SCHEMA("ClusterRoleBinding references a ClusterRole, but not contain it.") },
	REVIEW("SelfSubjectAccessReview", "selfsubjectaccessreviews", "authorization.k8s.io", "v1",
	       "SelfSubjectAccessReview checks whether or the current user can perform an action."),
	REVIEW("SelfSubjectRulesReview", "selfsubjectrulesreviews", "authorization.k8s.io", "v1",
	       "SelfSubjectRulesReview enumerates the set of actions the current user can perform within a namespace."),
	REVIEW("SelfSubjectReview", "selfsubjectreviews", "authentication.k8s.io", "v1",
	       "SelfSubjectReview contains the user information that the kube-apiserver has about the user making this request."),
	REVIEW("SelfSubjectReview", "selfsubjectreviews", "authentication.k8s.io", "v1beta1",
	       "SelfSubjectReview contains the user information that the kube-apiserver has about the user making this request."),
	REVIEW("SelfSubjectReview", "selfsubjectreviews", "authentication.k8s.io", "v1alpha1",
	       "SelfSubjectReview contains the user information that the kube-apiserver has about the user making this request."),
};

static void kind_free(struct kube_kind *k)
{
	if (!k)
		return;
	free(k->group);
	free(k->version);
	free(k->kind);
	free(k->list_kind);
	free(k->plural);
	free(k->singular);
	free(k->api_version);
	free(k->store_key);
	free(k->scale_spec_replicas);
	free(k->scale_status_replicas);
	free(k->scale_label_selector);
	json_decref(k->short_names);
	json_decref(k->categories);
	json_decref(k->crd);
	json_decref(k->printer_columns);
	if (k->builtin)
		json_decref(k->schema);
	table_columns_free(k->columns);
	free(k);
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

static int reg_append(struct kube_registry *reg, struct kube_kind *k)
{
	struct kube_kind **p = realloc(reg->kinds, (reg->n + 1) * sizeof(*p));

	if (!p)
		return -ENOMEM;
	reg->kinds = p;
	reg->kinds[reg->n++] = k;
	return 0;
}

static int finish_kind(struct kube_kind *k, ah_err *err)
{
	char buf[512];

	if (k->group[0])
		snprintf(buf, sizeof(buf), "%s/%s", k->group, k->version);
	else
		snprintf(buf, sizeof(buf), "%s", k->version);
	k->api_version = strdup(buf);
	if (k->group[0])
		snprintf(buf, sizeof(buf), "%s.%s", k->plural, k->group);
	else
		snprintf(buf, sizeof(buf), "%s", k->plural);
	k->store_key = strdup(buf);
	if (!k->api_version || !k->store_key)
		return -ENOMEM;
	return table_columns_compile(k->printer_columns, &k->columns, err);
}

static int add_builtin(struct kube_registry *reg, const struct builtin_def *d, ah_err *err)
{
	struct kube_kind *k = calloc(1, sizeof(*k));
	json_error_t jerr;
	char list_kind[128];
	int r;

	if (!k)
		return -ENOMEM;
	snprintf(list_kind, sizeof(list_kind), "%sList", d->kind);
	k->group = xstrdup(d->group ? d->group : "");
	k->version = xstrdup(d->version ? d->version : "v1");
	k->kind = xstrdup(d->kind);
	k->list_kind = xstrdup(list_kind);
	k->plural = xstrdup(d->plural);
	k->singular = xstrdup(d->singular);
	k->short_names = json_array();
	if (d->short_name)
		json_array_append_new(k->short_names, json_string(d->short_name));
	k->categories = json_array();
	if (d->category)
		json_array_append_new(k->categories, json_string(d->category));
	k->namespaced = d->namespaced;
	k->has_status = d->has_status;
	k->builtin = true;
	k->review = d->review;
	k->smp_lists = no_lists;
	k->schema = json_loads(d->schema, 0, &jerr);
	k->printer_columns = json_loads(d->columns, 0, &jerr);
	if (!k->schema || !k->printer_columns) {
		kind_free(k);
		return ah_err_set(err, EINVAL, 500, "InternalError", "built-in kind %s: %s", d->kind,
				  jerr.text);
	}
	r = finish_kind(k, err);
	if (r == 0 && d->store_key) {
		/* Served from another kind's storage: that kind comes first. */
		k->stored_as = kube_registry_by_store_key(reg, d->store_key);
		free(k->store_key);
		k->store_key = strdup(d->store_key);
		if (!k->stored_as || !k->store_key)
			r = ah_err_set(err, EINVAL, 500, "InternalError", "built-in kind %s: no storage %s",
				       d->kind, d->store_key);
	}
	if (r == 0)
		r = reg_append(reg, k);
	if (r < 0)
		kind_free(k);
	return r;
}

static const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

static int add_crd(struct kube_registry *reg, json_t *crd, const char *origin, ah_err *err)
{
	json_t *spec = json_object_get(crd, "spec"), *names, *versions, *v;
	size_t i;
	int r;

	if (strcmp(jstr(crd, "kind"), "CustomResourceDefinition") != 0)
		return 0;
	names = json_object_get(spec, "names");
	versions = json_object_get(spec, "versions");
	if (!json_is_object(names) || !json_is_array(versions) || !*jstr(spec, "group"))
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: CRD without group, names or versions",
				  origin);
	size_t first = reg->n, storage = (size_t)-1;

	json_array_foreach(versions, i, v) {
		struct kube_kind *k;
		json_t *sub = json_object_get(v, "subresources");

		if (!json_is_true(json_object_get(v, "served")))
			continue;
		k = calloc(1, sizeof(*k));
		if (!k)
			return -ENOMEM;
		k->group = xstrdup(jstr(spec, "group"));
		k->version = xstrdup(jstr(v, "name"));
		k->kind = xstrdup(jstr(names, "kind"));
		k->list_kind = xstrdup(*jstr(names, "listKind") ? jstr(names, "listKind") : "");
		if (!*k->list_kind) {
			free(k->list_kind);
			k->list_kind = malloc(strlen(k->kind) + 5);
			if (k->list_kind)
				sprintf(k->list_kind, "%sList", k->kind);
		}
		k->plural = xstrdup(jstr(names, "plural"));
		k->singular = xstrdup(*jstr(names, "singular") ? jstr(names, "singular") : "");
		k->short_names = json_incref(json_object_get(names, "shortNames"));
		if (!k->short_names)
			k->short_names = json_array();
		k->categories = json_incref(json_object_get(names, "categories"));
		if (!k->categories)
			k->categories = json_array();
		k->namespaced = strcmp(jstr(spec, "scope"), "Cluster") != 0;
		k->has_status = json_object_get(sub, "status") != NULL;
		if (json_is_object(json_object_get(sub, "scale"))) {
			json_t *sc = json_object_get(sub, "scale");

			if (!*jstr(sc, "specReplicasPath") || !*jstr(sc, "statusReplicasPath")) {
				kind_free(k);
				return ah_err_set(err, EINVAL, 500, "InternalError",
						  "%s: version %s: the scale subresource needs specReplicasPath and statusReplicasPath",
						  origin, jstr(v, "name"));
			}
			k->scale_spec_replicas = strdup(jstr(sc, "specReplicasPath"));
			k->scale_status_replicas = strdup(jstr(sc, "statusReplicasPath"));
			if (*jstr(sc, "labelSelectorPath"))
				k->scale_label_selector = strdup(jstr(sc, "labelSelectorPath"));
		}
		k->smp_lists = no_lists;
		k->crd = json_incref(crd);
		k->schema = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
		k->printer_columns = json_incref(json_object_get(v, "additionalPrinterColumns"));
		if (!k->singular[0]) {
			char *s = strdup(k->kind);

			for (char *p = s; p && *p; p++)
				*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
			free(k->singular);
			k->singular = s;
		}
		if (!k->schema) {
			kind_free(k);
			return ah_err_set(err, EINVAL, 500, "InternalError", "%s: version %s has no schema",
					  origin, jstr(v, "name"));
		}
		r = finish_kind(k, err);
		if (r == 0)
			r = reg_append(reg, k);
		if (r < 0) {
			kind_free(k);
			return r;
		}
		if (json_is_true(json_object_get(v, "storage")))
			storage = reg->n - 1;
	}
	/* Several served versions: objects are kept in the storage version, and
	 * the others are served converted from it (kube/convert.h). */
	for (i = first; i < reg->n && storage != (size_t)-1; i++) {
		if (i == storage)
			continue;
		reg->kinds[i]->stored_as = reg->kinds[storage];
	}
	if (reg->n - first > 1 && storage == (size_t)-1)
		return ah_err_set(err, EINVAL, 500, "InternalError", "%s: no storage version among the served ones",
				  origin);
	return 0;
}

int kube_registry_add_crd_text(struct kube_registry *reg, const char *text, size_t len,
			       const char *origin, ah_err *err)
{
	json_t *docs = NULL, *doc;
	size_t i;
	int r;

	r = yaml_parse_all(text, len, &docs, err);
	if (r < 0) {
		ah_err_prefix(err, "%s", origin);
		return r;
	}
	json_array_foreach(docs, i, doc) {
		r = add_crd(reg, doc, origin, err);
		if (r < 0)
			break;
	}
	json_decref(docs);
	return r;
}

int kube_registry_new(struct kube_registry **ret, ah_err *err)
{
	struct kube_registry *reg = calloc(1, sizeof(*reg));
	size_t i;
	int r = 0;

	if (!reg)
		return -ENOMEM;
	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]) && r == 0; i++)
		r = add_builtin(reg, &builtins[i], err);
	for (i = 0; i < ah_embedded_crds_count && r == 0; i++)
		r = kube_registry_add_crd_text(reg, ah_embedded_crds[i].data, ah_embedded_crds[i].len,
					       ah_embedded_crds[i].name, err);
	if (r < 0) {
		kube_registry_free(reg);
		return r;
	}
	*ret = reg;
	return 0;
}

void kube_registry_free(struct kube_registry *reg)
{
	size_t i;

	if (!reg)
		return;
	for (i = 0; i < reg->n; i++)
		kind_free(reg->kinds[i]);
	free(reg->kinds);
	free(reg);
}

const struct kube_kind *kube_registry_by_resource(const struct kube_registry *reg,
						  const char *group, const char *version,
						  const char *plural)
{
	size_t i;

	for (i = 0; i < reg->n; i++) {
		const struct kube_kind *k = reg->kinds[i];

		if (strcmp(k->group, group) == 0 && strcmp(k->version, version) == 0 &&
		    strcmp(k->plural, plural) == 0)
			return k;
	}
	return NULL;
}

const struct kube_kind *kube_registry_by_kind(const struct kube_registry *reg,
					      const char *api_version, const char *kind)
{
	size_t i;

	for (i = 0; i < reg->n; i++) {
		const struct kube_kind *k = reg->kinds[i];

		if (strcmp(k->api_version, api_version) == 0 && strcmp(k->kind, kind) == 0)
			return k;
	}
	return NULL;
}

const struct kube_kind *kube_registry_by_store_key(const struct kube_registry *reg,
						   const char *store_key)
{
	size_t i;

	/* The stored kind itself, never a kind served converted from it. */
	for (i = 0; i < reg->n; i++)
		if (!reg->kinds[i]->stored_as && strcmp(reg->kinds[i]->store_key, store_key) == 0)
			return reg->kinds[i];
	return NULL;
}
