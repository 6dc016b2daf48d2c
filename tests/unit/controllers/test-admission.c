/* Tests for src/controllers/admission.c: the admission webhooks of
 * kubeapi.md §5.1, one row per rule (allowed and refused), and the
 * AgentClusterInstall userManagedNetworking default. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controllers/hub-internal.h"

#define IE "\"apiVersion\":\"agent-install.openshift.io/v1beta1\",\"kind\":\"InfraEnv\",\"metadata\":{\"name\":\"ie\",\"namespace\":\"ns\"}"
#define AG "\"apiVersion\":\"agent-install.openshift.io/v1beta1\",\"kind\":\"Agent\",\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"}"
#define CL "\"kind\":\"AgentClassification\",\"metadata\":{\"name\":\"c\",\"namespace\":\"ns\"}"
#define ACI "\"kind\":\"AgentClusterInstall\",\"metadata\":{\"name\":\"aci\",\"namespace\":\"ns\"}"
#define NET "\"networking\":{\"clusterNetwork\":[{\"cidr\":\"10.128.0.0/14\",\"hostPrefix\":23}]"
#define SNO "\"provisionRequirements\":{\"controlPlaneAgents\":1}"
#define MULTI "\"provisionRequirements\":{\"controlPlaneAgents\":3}"
#define ISR "\"imageSetRef\":{\"name\":\"openshift-v4.9.0\"}"
#define COMPLETED(reason) "\"status\":{\"conditions\":[{\"type\":\"Completed\",\"status\":\"False\",\"reason\":\"" reason "\"}]}"

#define OAC "\"apiVersion\":\"bootstrap.cluster.x-k8s.io/v1alpha2\",\"kind\":\"OpenshiftAssistedConfig\",\"metadata\":{\"name\":\"c\"}"
#define WH_PREFIX(name) "admission webhook \"" name ".admission.agentinstall.openshift.io\" denied the request: "

struct row {
	const char *what;
	const char *kind;
	enum kube_op op;
	const char *old;  /* NULL on create */
	const char *obj;
	int cd_installed; /* -1: the lookup fails */
	const char *want; /* NULL: allowed; else the exact message */
};

static const struct row rows[] = {
	/* InfraEnv CREATE */
	{ "infraenv create clusterRef only", "InfraEnv", KUBE_CREATE, NULL,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}", 0, NULL },
	{ "infraenv create osImageVersion only", "InfraEnv", KUBE_CREATE, NULL,
	  "{" IE ",\"spec\":{\"osImageVersion\":\"4.19\"}}", 0, NULL },
	{ "infraenv create both", "InfraEnv", KUBE_CREATE, NULL,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"},\"osImageVersion\":\"4.19\"}}", 0,
	  WH_PREFIX("infraenvvalidators") "Either Spec.ClusterRef or Spec.OSImageVersion should be specified (not both)." },
	/* InfraEnv UPDATE */
	{ "infraenv clusterRef added", "InfraEnv", KUBE_UPDATE, "{" IE ",\"spec\":{}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}", 0,
	  WH_PREFIX("infraenvvalidators") "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation." },
	{ "infraenv clusterRef removed", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}", "{" IE ",\"spec\":{}}", 0,
	  WH_PREFIX("infraenvvalidators") "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation." },
	{ "infraenv clusterRef renamed", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd2\",\"namespace\":\"ns\"}}}", 0,
	  WH_PREFIX("infraenvvalidators") "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation." },
	{ "infraenv other field changes", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"},\"sshAuthorizedKey\":\"ssh-rsa A\"}}", 0, NULL },
	{ "infraenv arch empty to x86_64", "InfraEnv", KUBE_UPDATE, "{" IE ",\"spec\":{}}",
	  "{" IE ",\"spec\":{\"cpuArchitecture\":\"x86_64\"}}", 0, NULL },
	{ "infraenv arch changed", "InfraEnv", KUBE_UPDATE, "{" IE ",\"spec\":{}}",
	  "{" IE ",\"spec\":{\"cpuArchitecture\":\"arm64\"}}", 0,
	  WH_PREFIX("infraenvvalidators") "Attempted to change Spec.CpuArchitecture which is immutable after InfraEnv creation." },
	{ "infraenv osImageVersion added, CD not installed", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"},\"osImageVersion\":\"4.19\"}}", 0,
	  WH_PREFIX("infraenvvalidators") "spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef when the cluster is not installed yet." },
	{ "infraenv osImageVersion added, CD lookup fails", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"},\"osImageVersion\":\"4.19\"}}", -1,
	  WH_PREFIX("infraenvvalidators") "spec.OSImageVersion is not valid. It can't be added alongside with a clusterRef when the cluster is not installed yet." },
	{ "infraenv osImageVersion added, CD installed", "InfraEnv", KUBE_UPDATE,
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"}}}",
	  "{" IE ",\"spec\":{\"clusterRef\":{\"name\":\"cd\",\"namespace\":\"ns\"},\"osImageVersion\":\"4.19\"}}", 1, NULL },
	{ "infraenv osImageVersion added, late binding", "InfraEnv", KUBE_UPDATE, "{" IE ",\"spec\":{}}",
	  "{" IE ",\"spec\":{\"osImageVersion\":\"4.19\"}}", 0, NULL },
	/* Agent */
	{ "agent create both disks", "Agent", KUBE_CREATE, NULL,
	  "{" AG ",\"spec\":{\"installation_disk_id\":\"/dev/sda\",\"installation_disk_path\":\"/dev/disk/by-id/x\"}}", 0,
	  WH_PREFIX("agentvalidators") "Either InstallationDiskID or InstallationDiskPath can be set, not both." },
	{ "agent update both disks", "Agent", KUBE_UPDATE, "{" AG ",\"spec\":{\"installation_disk_id\":\"/dev/sda\"}}",
	  "{" AG ",\"spec\":{\"installation_disk_id\":\"/dev/sda\",\"installation_disk_path\":\"/dev/disk/by-id/x\"}}", 0,
	  WH_PREFIX("agentvalidators") "Either InstallationDiskID or InstallationDiskPath can be set, not both." },
	{ "agent update one disk", "Agent", KUBE_UPDATE, "{" AG ",\"spec\":{}}",
	  "{" AG ",\"spec\":{\"installation_disk_path\":\"/dev/disk/by-id/x\"}}", 0, NULL },
	{ "agent ref changed while known", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{},\"status\":{\"debugInfo\":{\"state\":\"known\"}}}",
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"known\"}}}", 0, NULL },
	{ "agent ref changed while installing", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"installing\"}}}",
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd2\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"installing\"}}}", 0,
	  WH_PREFIX("agentvalidators") "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation." },
	{ "agent ref removed while preparing-failed", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"preparing-failed\"}}}",
	  "{" AG ",\"spec\":{},\"status\":{\"debugInfo\":{\"state\":\"preparing-failed\"}}}", 0,
	  WH_PREFIX("agentvalidators") "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation." },
	{ "agent day-2 ref removed while installing", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"kind\":\"AddToExistingClusterHost\",\"debugInfo\":{\"state\":\"installing-in-progress\"}}}",
	  "{" AG ",\"spec\":{},\"status\":{\"kind\":\"AddToExistingClusterHost\",\"debugInfo\":{\"state\":\"installing-in-progress\"}}}", 0, NULL },
	{ "agent day-2 ref changed while installing", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"kind\":\"AddToExistingClusterHost\",\"debugInfo\":{\"state\":\"installing\"}}}",
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"x\",\"namespace\":\"ns\"}},\"status\":{\"kind\":\"AddToExistingClusterHost\",\"debugInfo\":{\"state\":\"installing\"}}}", 0,
	  WH_PREFIX("agentvalidators") "Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation." },
	{ "agent approval while installing", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"installing\"}}}",
	  "{" AG ",\"spec\":{\"approved\":true,\"clusterDeploymentName\":{\"name\":\"cd\",\"namespace\":\"ns\"}},\"status\":{\"debugInfo\":{\"state\":\"installing\"}}}", 0, NULL },
	{ "agent status-only write with both disks", "Agent", KUBE_UPDATE,
	  "{" AG ",\"spec\":{\"installation_disk_id\":\"a\",\"installation_disk_path\":\"b\"}}",
	  "{" AG ",\"spec\":{\"installation_disk_id\":\"a\",\"installation_disk_path\":\"b\"},\"status\":{\"kind\":\"Host\"}}", 0, NULL },
	/* AgentClassification */
	{ "classification valid", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"xlarge\",\"query\":\".cpu.count == 4 and .memory.physicalBytes >= 17179869184\"}}", 0, NULL },
	{ "classification QUERYERROR value", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"QUERYERROR-x\",\"query\":\".cpu.count == 4\"}}", 0,
	  WH_PREFIX("agentclassificationvalidators") "label must not start with QUERYERROR as this is reserved" },
	{ "classification bad label value", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"not valid!\",\"query\":\".cpu.count == 4\"}}", 0,
	  "*invalid label agentclassification.agent-install.openshift.io/size=not valid!:" },
	{ "classification bad label key", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"bad key\",\"labelValue\":\"x\",\"query\":\".cpu.count == 4\"}}", 0,
	  "*invalid label agentclassification.agent-install.openshift.io/bad key=x:" },
	{ "classification unbalanced query", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\"(.cpu.count == 4\"}}", 0,
	  "*failed to parse query: unexpected EOF" },
	{ "classification dangling operator", "AgentClassification", KUBE_CREATE, NULL,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\".cpu.count ==\"}}", 0,
	  "*failed to parse query: unexpected EOF after \"==\"" },
	{ "classification label modified", "AgentClassification", KUBE_UPDATE,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\".cpu.count == 4\"}}",
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"y\",\"query\":\".cpu.count == 4\"}}", 0,
	  WH_PREFIX("agentclassificationvalidators") "Label modified: the specified label may not be modified after creation" },
	{ "classification key modified", "AgentClassification", KUBE_UPDATE,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\".cpu.count == 4\"}}",
	  "{" CL ",\"spec\":{\"labelKey\":\"size2\",\"labelValue\":\"x\",\"query\":\".cpu.count == 4\"}}", 0,
	  WH_PREFIX("agentclassificationvalidators") "Label modified: the specified label may not be modified after creation" },
	{ "classification query modified", "AgentClassification", KUBE_UPDATE,
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\".cpu.count == 4\"}}",
	  "{" CL ",\"spec\":{\"labelKey\":\"size\",\"labelValue\":\"x\",\"query\":\".cpu.count == 8\"}}", 0, NULL },
	/* AgentClusterInstall CREATE */
	{ "aci upstream multi-node baremetal", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"BareMetal\"," NET "}," MULTI "," ISR "}}", 0, NULL },
	{ "aci SNO umn false", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," SNO "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "UserManagedNetworking must be set to true with SNO" },
	{ "aci SNO umn unset (defaulted)", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{" NET "}," SNO "}}", 0, NULL },
	{ "aci baremetal umn true", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"BareMetal\"," NET ",\"userManagedNetworking\":true}," MULTI "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set baremetal platform with user-managed-networking enabled" },
	{ "aci nutanix umn true", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"Nutanix\"," NET ",\"userManagedNetworking\":true}," MULTI "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set nutanix platform with user-managed-networking enabled" },
	{ "aci none umn false", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"None\"," NET ",\"userManagedNetworking\":false}," MULTI "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set none platform with user-managed-networking disabled" },
	{ "aci external umn false", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"External\"," NET ",\"userManagedNetworking\":false}," MULTI "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set external platform with user-managed-networking disabled" },
	{ "aci SNO baremetal umn true", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"BareMetal\"," NET ",\"userManagedNetworking\":true}," SNO "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set baremetal platform with user-managed-networking enabled" },
	{ "aci SNO baremetal umn unset", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"BareMetal\"," NET "}," SNO "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "UserManagedNetworking must be set to true with SNO" },
	{ "aci vsphere umn true", "AgentClusterInstall", KUBE_CREATE, NULL,
	  "{" ACI ",\"spec\":{\"platformType\":\"VSphere\"," NET ",\"userManagedNetworking\":true}," MULTI "}}", 0, NULL },
	/* AgentClusterInstall UPDATE */
	{ "aci imageSetRef changed", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI "," ISR "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI ",\"imageSetRef\":{\"name\":\"other\"}}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Attempted to change AgentClusterInstall.ImageSetRef which is immutable" },
	{ "aci imageSetRef added", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI "," ISR "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Attempted to change AgentClusterInstall.ImageSetRef which is immutable" },
	{ "aci sshPublicKey before install", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI "," ISR "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," MULTI "," ISR ",\"sshPublicKey\":\"ssh-rsa B\"}}", 0, NULL },
	{ "aci SNO umn false on update", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," SNO "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "UserManagedNetworking must be set to true with SNO" },
	{ "aci platform falls back to the stored one", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{\"platformType\":\"BareMetal\"," NET ",\"userManagedNetworking\":false}," MULTI "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," MULTI "}}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Can't set baremetal platform with user-managed-networking enabled" },
	{ "aci spec change while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR ",\"sshPublicKey\":\"ssh-rsa B\"}," COMPLETED("InstallationInProgress") "}", 0,
	  WH_PREFIX("agentclusterinstallvalidators") "Attempted to change AgentClusterInstall.Spec which is immutable after install started, except for ClusterMetadata,IgnitionEndpoint fields. Unsupported change: \n- sshPublicKey: null\n+ sshPublicKey: \"ssh-rsa B\"" },
	{ "aci clusterMetadata while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR ",\"clusterMetadata\":{\"clusterID\":\"x\",\"infraID\":\"y\"}}," COMPLETED("InstallationInProgress") "}", 0, NULL },
	{ "aci ignitionEndpoint while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR ",\"ignitionEndpoint\":{\"url\":\"https://x\"}}," COMPLETED("InstallationInProgress") "}", 0, NULL },
	{ "aci empty list equals unset while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR ",\"apiVIPs\":[],\"sshPublicKey\":\"\"}," COMPLETED("InstallationInProgress") "}", 0, NULL },
	{ "aci provisionRequirements while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," MULTI "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true},\"provisionRequirements\":{\"controlPlaneAgents\":3,\"workerAgents\":2}," ISR "}," COMPLETED("InstallationInProgress") "}", 0,
	  "*Unsupported change: \n- provisionRequirements: {\"controlPlaneAgents\":3}\n+ provisionRequirements: {\"controlPlaneAgents\":3,\"workerAgents\":2}" },
	{ "aci provisionRequirements once installed", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," MULTI "," ISR "}," COMPLETED("InstallationCompleted") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true},\"provisionRequirements\":{\"controlPlaneAgents\":3,\"workerAgents\":2}," ISR "}," COMPLETED("InstallationCompleted") "}", 0, NULL },
	{ "aci provisionRequirements once failed", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," MULTI "," ISR "}," COMPLETED("InstallationFailed") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true},\"provisionRequirements\":{\"controlPlaneAgents\":3,\"workerAgents\":1}," ISR "}," COMPLETED("InstallationFailed") "}", 0, NULL },
	{ "aci spec change before start (not yet installing)", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR "}," COMPLETED("InstallationNotStarted") "}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":true}," SNO "," ISR ",\"sshPublicKey\":\"k\"}," COMPLETED("InstallationNotStarted") "}", 0, NULL },
	{ "aci status-only write while installing", "AgentClusterInstall", KUBE_UPDATE,
	  "{" ACI ",\"spec\":{" NET "}," SNO "," ISR "}," COMPLETED("InstallationInProgress") "}",
	  "{" ACI ",\"spec\":{" NET "}," SNO "," ISR "}," COMPLETED("InstallationCompleted") "}", 0, NULL },
	/* Other kinds and operations pass. */
	{ "delete passes", "AgentClusterInstall", KUBE_DELETE,
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," SNO "}}",
	  "{" ACI ",\"spec\":{" NET ",\"userManagedNetworking\":false}," SNO "}}", 0, NULL },
	{ "other kind passes", "ConfigMap", KUBE_CREATE, NULL, "{\"kind\":\"ConfigMap\",\"data\":{}}", 0, NULL },
	/* OpenshiftAssistedConfig: the spec never changes. */
	{ "oac create", "OpenshiftAssistedConfig", KUBE_CREATE, NULL, "{" OAC ",\"spec\":{\"sshAuthorizedKey\":\"k\"}}", 0,
	  NULL },
	{ "oac metadata update", "OpenshiftAssistedConfig", KUBE_UPDATE, "{" OAC ",\"spec\":{\"sshAuthorizedKey\":\"k\"}}",
	  "{\"kind\":\"OpenshiftAssistedConfig\",\"metadata\":{\"name\":\"c\",\"labels\":{\"a\":\"b\"}},"
	  "\"spec\":{\"sshAuthorizedKey\":\"k\"}}", 0, NULL },
	{ "oac status update", "OpenshiftAssistedConfig", KUBE_UPDATE, "{" OAC ",\"spec\":{}}",
	  "{" OAC ",\"spec\":{},\"status\":{\"dataSecretName\":\"s\"}}", 0, NULL },
	{ "oac spec update", "OpenshiftAssistedConfig", KUBE_UPDATE, "{" OAC ",\"spec\":{\"sshAuthorizedKey\":\"k\"}}",
	  "{" OAC ",\"spec\":{\"sshAuthorizedKey\":\"other\"}}", 0,
	  "admission webhook \"v1alpha2.validation.openshiftassistedconfig.bootstrap.cluster.x-k8s.io\" denied the request: "
	  "spec is immutable" },
	{ "oac spec field added", "OpenshiftAssistedConfig", KUBE_UPDATE, "{" OAC ",\"spec\":{}}",
	  "{" OAC ",\"spec\":{\"preBootstrapCommands\":[\"x\"]}}", 0, "*spec is immutable" },
};

static int fake_cd(void *ud, const char *ns, const char *name, bool *ret)
{
	int v = *(const int *)ud;

	assert_string_equal(ns, "ns");
	assert_string_equal(name, "cd");
	if (v < 0)
		return -ENOENT;
	*ret = v == 1;
	return 0;
}

static void test_rules(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		json_t *old = r->old ? json_loads(r->old, 0, NULL) : NULL;
		json_t *obj = json_loads(r->obj, 0, NULL);
		int cd = r->cd_installed;
		ah_err err;
		int rc;

		ah_err_clear(&err);
		if (r->old && !old)
			fail_msg("row %s: bad old JSON", r->what);
		if (!obj)
			fail_msg("row %s: bad new JSON", r->what);
		rc = hub_admit_rules(r->kind, r->op, old, obj, fake_cd, &cd, &err);
		if (!r->want) {
			if (rc != 0)
				fail_msg("row %s: refused: %s", r->what, err.message);
		} else {
			if (rc != -EINVAL)
				fail_msg("row %s: allowed, want %s", r->what, r->want);
			assert_int_equal(err.status, 400);
			assert_string_equal(err.reason, "BadRequest");
			if (r->want[0] == '*') {
				if (!strstr(err.message, r->want + 1))
					fail_msg("row %s: message %s lacks %s", r->what, err.message, r->want + 1);
			} else if (strcmp(err.message, r->want) != 0) {
				fail_msg("row %s:\n got  %s\n want %s", r->what, err.message, r->want);
			}
		}
		json_decref(old);
		json_decref(obj);
	}
}

/* The mutating webhook: spec.networking.userManagedNetworking when unset. */
struct umn_row {
	const char *platform; /* NULL: absent */
	int cp, workers;
	const char *completed; /* the old object's Completed reason, or NULL */
	bool deleting;
	int want;             /* 1 true, 0 false, -1 left unset */
};

static const struct umn_row umn_rows[] = {
	{ NULL, 1, 0, NULL, false, 1 },
	{ "None", 1, 0, NULL, false, 1 },
	{ "None", 3, 2, NULL, false, 1 },
	{ NULL, 3, 0, NULL, false, 0 },
	{ NULL, 3, 2, NULL, false, 0 },
	{ "External", 3, 0, NULL, false, 1 },
	{ "External", 1, 0, NULL, false, 1 },
	{ "BareMetal", 3, 0, NULL, false, 0 },
	{ "VSphere", 3, 0, NULL, false, -1 },
	{ "Nutanix", 3, 0, NULL, false, -1 },
	{ NULL, 1, 0, "InstallationInProgress", false, -1 },
	{ NULL, 1, 0, "InstallationCompleted", false, -1 },
	{ NULL, 1, 0, "InstallationNotStarted", false, 1 },
	{ NULL, 1, 0, NULL, true, -1 },
};

static void test_umn_default(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(umn_rows) / sizeof(umn_rows[0]); i++) {
		const struct umn_row *u = &umn_rows[i];
		json_t *obj = json_pack("{s:s,s:{s:s,s:s},s:{s:{s:[]},s:{s:i,s:i}}}", "kind", "AgentClusterInstall",
					"metadata", "name", "aci", "namespace", "ns", "spec", "networking",
					"clusterNetwork", "provisionRequirements", "controlPlaneAgents", u->cp,
					"workerAgents", u->workers);
		json_t *old = NULL, *v;
		ah_err err;
		int rc;

		if (u->platform)
			json_object_set_new(json_object_get(obj, "spec"), "platformType", json_string(u->platform));
		if (u->deleting)
			json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp",
					    json_string("2026-01-01T00:00:00Z"));
		if (u->completed) {
			old = json_deep_copy(obj);
			json_object_set_new(old, "status", json_pack("{s:[{s:s,s:s,s:s}]}", "conditions", "type",
								     "Completed", "status", "False", "reason",
								     u->completed));
			json_object_set_new(json_object_get(obj, "metadata"), "labels", json_pack("{s:s}", "a", "b"));
			json_object_set(obj, "status", json_object_get(old, "status"));
		}
		rc = hub_admit_rules("AgentClusterInstall", old ? KUBE_UPDATE : KUBE_CREATE, old, obj, NULL, NULL, &err);
		/* Vsphere with UMN left unset passes validation too. */
		if (rc != 0)
			fail_msg("umn row %zu: refused: %s", i, err.message);
		v = json_object_get(json_object_get(json_object_get(obj, "spec"), "networking"), "userManagedNetworking");
		if (u->want < 0 && v)
			fail_msg("umn row %zu: defaulted to %s, want unset", i, json_is_true(v) ? "true" : "false");
		if (u->want >= 0 && (!json_is_boolean(v) || json_is_true(v) != (u->want == 1)))
			fail_msg("umn row %zu: want %d", i, u->want);
		json_decref(obj);
		json_decref(old);
	}
}

struct jq_row {
	const char *q;
	bool ok;
};

static const struct jq_row jq_rows[] = {
	{ ".cpu.count == 4 and .memory.physicalBytes >= 17179869184 and .memory.physicalBytes < 34359738368", true },
	{ ".", true },
	{ "[.disks[] | select(.sizeBytes > 1000)] | length > 0", true },
	{ ".interfaces | any(.name == \"eth0\")", true },
	{ "(.cpu.count // 0) >= 4", true },
	{ "-1 < .cpu.count", true },
	{ ".systemVendor.virtual == true # comment", true },
	{ "{a: 1} | .a == 1", true },
	{ ".hostname == \"node-\\(.cpu.count)\"", true },
	{ ".hostname == \"a\\(\"b\" + \")\")c\"", true },
	{ ".hostname == \"a\\(.x\"", false },
	{ ".name == \"esc\\\"aped\"", true },
	{ "", false },
	{ "   ", false },
	{ "(.cpu.count", false },
	{ ".cpu.count)", false },
	{ "[.disks[]", false },
	{ ".cpu.count ==", false },
	{ "== 4", false },
	{ ".a == == 4", false },
	{ ".name == \"unterminated", false },
	{ "(.a and)", false },
	{ ".a ` .b", false },
};

static void test_jq_syntax(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(jq_rows) / sizeof(jq_rows[0]); i++) {
		char why[256] = "";
		int rc = hub_jq_syntax_check(jq_rows[i].q, why, sizeof(why));

		if ((rc == 0) != jq_rows[i].ok)
			fail_msg("query \"%s\": got %d (%s)", jq_rows[i].q, rc, why);
		if (rc < 0)
			assert_true(why[0] != '\0');
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_umn_default),
		cmocka_unit_test(test_jq_syntax),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
