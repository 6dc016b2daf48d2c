/* test-cluster.c - the cluster model from the CRs, cluster validations (one
 * row per validation), RefreshStatus (one row per rule), the explicit
 * transitions, roles and bootstrap, the auto-install gate and the
 * AgentClusterInstall conditions (one row per table row).  Backend spec
 * §2, §4, §5; kubeapi spec §2.1, §4.3. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

/* Table rows leave their trailing fields zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "assisted/cluster.h"

#define NOW 1700000000

/* JSON written with single quotes for readability. */
static json_t *J(const char *text)
{
	char *s = strdup(text);
	json_error_t je;
	json_t *v;

	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	v = json_loads(s, 0, &je);
	if (!v)
		fail_msg("bad test JSON (%s): %s", je.text, s);
	free(s);
	return v;
}

static void patch(json_t *o, const char *text)
{
	json_t *p;

	if (!text)
		return;
	p = J(text);
	json_object_update(o, p);
	json_decref(p);
}

static const char *sget(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static json_t *inventory(int n, int cores, long long mem)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{'hostname':'host-%d','cpu':{'count':%d},'memory':{'physical_bytes':%lld,'usable_bytes':%lld},"
		 "'disks':[{'name':'sda','by_id':'/dev/disk/by-id/wwn-%d','size_bytes':200000000000,"
		 "'installation_eligibility':{'eligible':true}}],"
		 "'interfaces':[{'name':'eth0','mac_address':'52:54:00:00:00:%02d','ipv4_addresses':['192.168.1.%d/24'],"
		 "'ipv6_addresses':[]}],"
		 "'routes':[{'destination':'0.0.0.0','gateway':'192.168.1.1','family':2}],"
		 "'boot':{'current_boot_mode':'uefi'}}",
		 n, cores, mem, mem, n, n, 10 + n);
	return J(buf);
}

/* A host "status:role[:stage]" with a strong inventory. */
static json_t *mkhost(int n, const char *spec)
{
	char st[64] = "", role[32] = "auto-assign", stage[64] = "";
	const char *a = strchr(spec, ':'), *b;
	json_t *h;

	snprintf(st, sizeof(st), "%.*s", (int)(a ? a - spec : (long)strlen(spec)), spec);
	if (a) {
		b = strchr(a + 1, ':');
		snprintf(role, sizeof(role), "%.*s", (int)(b ? b - a - 1 : (long)strlen(a + 1)), a + 1);
		if (b)
			snprintf(stage, sizeof(stage), "%s", b + 1);
	}
	h = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:b, s:o}", "id", "h", "status", st, "cluster_id", "c1", "role",
		      "auto-assign", "suggested_role", role, "timestamp", (json_int_t)NOW, "approved", 1, "inventory",
		      inventory(n, 8, 34359738368LL));
	json_object_set_new(h, "id", json_sprintf("host-%d", n));
	json_object_set_new(h, "installation_disk_path", json_string("/dev/sda"));
	if (*stage)
		json_object_set_new(h, "progress", json_pack("{s:s}", "current_stage", stage));
	return h;
}

/* Hosts from "status:role[:stage],status:role..." */
static json_t *mkhosts(const char *specs)
{
	json_t *a = json_array();
	char buf[512], *save = NULL, *tok;
	int n = 0;

	if (!specs)
		return a;
	snprintf(buf, sizeof(buf), "%s", specs);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(a, mkhost(n++, tok));
	return a;
}

static const char READY_CLUSTER[] =
	"{'id':'c1','name':'c','base_dns_domain':'example.com','openshift_version':'4.14.0','kind':'Cluster',"
	"'status':'insufficient','status_info':'','status_updated_at':1700000000,'control_plane_count':3,"
	"'high_availability_mode':'Full','user_managed_networking':false,'vip_dhcp_allocation':false,"
	"'platform':{'type':'baremetal'},'api_vips':[{'ip':'192.168.1.100','verification':'succeeded'}],"
	"'ingress_vips':[{'ip':'192.168.1.101','verification':'succeeded'}],"
	"'machine_networks':[{'cidr':'192.168.1.0/24'}],'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':23}],"
	"'service_networks':[{'cidr':'172.30.0.0/16'}],'network_type':'OVNKubernetes','pull_secret_set':true,"
	"'hyperthreading':'all'}";

static const char SNO_CLUSTER[] =
	"{'id':'c1','name':'sno','base_dns_domain':'example.com','openshift_version':'4.14.0','kind':'Cluster',"
	"'status':'insufficient','control_plane_count':1,'high_availability_mode':'None',"
	"'user_managed_networking':true,'platform':{'type':'none'},'api_vips':[],'ingress_vips':[],"
	"'machine_networks':[{'cidr':'192.168.1.0/24'}],'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':23}],"
	"'service_networks':[{'cidr':'172.30.0.0/16'}],'network_type':'OVNKubernetes','pull_secret_set':true}";

static json_t *mkcluster(const char *base, const char *p)
{
	json_t *c = J(base);

	patch(c, p);
	return c;
}

static struct cluster_refresh_ctx ctx0(void)
{
	struct cluster_refresh_ctx c = { .now = NOW };

	return c;
}

/* ---- the model from the CRs ---- */

static const char CD[] = "{'metadata':{'name':'mycd','namespace':'ns'},'spec':{'clusterName':'c','baseDomain':'example.com',"
			 "'pullSecretRef':{'name':'ps'},'clusterInstallRef':{'group':'extensions.hive.openshift.io',"
			 "'kind':'AgentClusterInstall','name':'aci','version':'v1beta1'}}}";
static const char IMGSET[] = "{'metadata':{'name':'img'},'spec':{'releaseImage':'quay.io/openshift-release-dev/ocp-release:4.14.3-x86_64'}}";
static const char ACI_SNO[] =
	"{'metadata':{'name':'aci','namespace':'ns'},'spec':{'clusterDeploymentRef':{'name':'mycd'},'imageSetRef':{'name':'img'},"
	"'networking':{'clusterNetwork':[{'cidr':'10.128.0.0/14','hostPrefix':23}],'serviceNetwork':['172.30.0.0/16'],"
	"'machineNetwork':[{'cidr':'192.168.1.0/24'}]},'provisionRequirements':{'controlPlaneAgents':1},"
	"'sshPublicKey':'  ssh-rsa AAAA test \\n'}}";
static const char ACI_HA[] =
	"{'metadata':{'name':'aci','namespace':'ns'},'spec':{'clusterDeploymentRef':{'name':'mycd'},'imageSetRef':{'name':'img'},"
	"'apiVIP':'192.168.1.100','ingressVIP':'192.168.1.101','platformType':'BareMetal',"
	"'networking':{'clusterNetwork':[{'cidr':'10.128.0.0/14','hostPrefix':23}],'serviceNetwork':['172.30.0.0/16']},"
	"'provisionRequirements':{'controlPlaneAgents':3,'workerAgents':2},"
	"'controlPlane':{'name':'master','hyperthreading':'Enabled'},'compute':[{'name':'worker','hyperthreading':'Disabled'}]}}";

static void test_model_sno(void **state)
{
	json_t *cd = J(CD), *aci = J(ACI_SNO), *img = J(IMGSET), *m;
	ah_err err = { 0 };

	(void)state;
	m = cluster_model_from_crs(cd, aci, img, &err);
	assert_non_null(m);
	assert_string_equal(sget(m, "name"), "c");
	assert_string_equal(sget(m, "base_dns_domain"), "example.com");
	assert_string_equal(sget(m, "openshift_version"), "4.14.3");
	assert_string_equal(sget(m, "cpu_architecture"), "x86_64");
	assert_string_equal(sget(m, "high_availability_mode"), "None");
	assert_true(json_is_true(json_object_get(m, "user_managed_networking")));
	assert_string_equal(sget(json_object_get(m, "platform"), "type"), "none");
	assert_string_equal(sget(m, "network_type"), "OVNKubernetes");
	assert_string_equal(sget(m, "ssh_public_key"), "ssh-rsa AAAA test");
	assert_string_equal(sget(m, "hyperthreading"), "all");
	assert_string_equal(sget(m, "kind"), "Cluster");
	assert_int_equal(json_array_size(json_object_get(m, "api_vips")), 0);
	assert_string_equal(sget(json_array_get(json_object_get(m, "machine_networks"), 0), "cidr"), "192.168.1.0/24");
	assert_null(json_object_get(m, "status"));
	assert_true(cluster_is_sno(m));
	json_decref(m);
	json_decref(cd);
	json_decref(aci);
	json_decref(img);
}

static void test_model_ha(void **state)
{
	json_t *cd = J(CD), *aci = J(ACI_HA), *img = J(IMGSET), *m, *prev;
	ah_err err = { 0 };

	(void)state;
	m = cluster_model_from_crs(cd, aci, img, &err);
	assert_non_null(m);
	assert_string_equal(sget(m, "high_availability_mode"), "Full");
	assert_false(json_is_true(json_object_get(m, "user_managed_networking")));
	assert_string_equal(sget(json_object_get(m, "platform"), "type"), "baremetal");
	assert_string_equal(sget(json_array_get(json_object_get(m, "api_vips"), 0), "ip"), "192.168.1.100");
	assert_string_equal(sget(json_array_get(json_object_get(m, "ingress_vips"), 0), "ip"), "192.168.1.101");
	assert_string_equal(sget(m, "hyperthreading"), "masters");
	assert_int_equal(json_integer_value(json_object_get(m, "control_plane_count")), 3);
	assert_string_equal(sget(json_array_get(json_object_get(m, "service_networks"), 0), "cidr"), "172.30.0.0/16");
	json_decref(m);
	json_object_set_new(json_object_get(aci, "metadata"), "annotations",
			    J("{'agent-install.openshift.io/ignored-cluster-validations':' ntp-server-configured , network-prefix-valid,ntp-server-configured',"
			      "'agent-install.openshift.io/ignored-host-validations':''}"));
	m = cluster_model_from_crs(cd, aci, img, &err);
	assert_non_null(m);
	assert_string_equal(sget(m, "ignored_cluster_validations"), "[\"ntp-server-configured\",\"network-prefix-valid\"]");
	assert_string_equal(sget(m, "ignored_host_validations"), "[]");
	/* State survives a rebuild; VIP verifications stay with their address. */
	prev = J("{'id':'c1','status':'ready','status_info':'x','pull_secret_set':true,"
		 "'api_vips':[{'ip':'192.168.1.100','verification':'succeeded'}],'ingress_vips':[{'ip':'192.168.1.9','verification':'failed'}],"
		 "'machine_networks':[{'cidr':'192.168.1.0/24'}]}");
	cluster_model_carry_state(m, prev);
	assert_string_equal(sget(m, "id"), "c1");
	assert_string_equal(sget(m, "status"), "ready");
	assert_string_equal(sget(json_array_get(json_object_get(m, "api_vips"), 0), "verification"), "succeeded");
	assert_null(json_object_get(json_array_get(json_object_get(m, "ingress_vips"), 0), "verification"));
	assert_string_equal(sget(json_array_get(json_object_get(m, "machine_networks"), 0), "cidr"), "192.168.1.0/24");
	json_decref(prev);
	json_decref(m);
	json_decref(cd);
	json_decref(aci);
	json_decref(img);
}

static void test_model_errors(void **state)
{
	static const struct {
		const char *name, *cd_patch, *aci_spec_patch, *aci_meta_patch;
		bool no_imageset;
		const char *reason, *msg;
	} rows[] = {
		{ "no pull secret", "{'spec':{'clusterName':'c','baseDomain':'example.com'}}", NULL, NULL, false, "InputError",
		  "PullSecret is required for ClusterDeployment mycd/ns" },
		{ "empty pull secret name", "{'spec':{'clusterName':'c','pullSecretRef':{}}}", NULL, NULL, false, "InputError",
		  "Missing reference to pull secret" },
		{ "no imageSetRef", NULL, "{'imageSetRef':null}", NULL, false, "InputError",
		  "ClusterImageSet must be specified in AgentClusterInstall.Spec.ImageSetRef for cluster that is not installed" },
		{ "missing ClusterImageSet", NULL, NULL, NULL, true, "BackendError",
		  "ClusterImageSet img not found. Please ensure the ClusterImageSet exists" },
		{ "VIP mismatch", NULL, "{'apiVIPs':['192.168.1.5'],'apiVIP':'192.168.1.100'}", NULL, false, "InputError",
		  "apiVIP must be the same as the first element of apiVIPs" },
		{ "baremetal with UMN", NULL, "{'networking':{'userManagedNetworking':true}}", NULL, false, "InputError",
		  "Can't set baremetal platform with user-managed-networking enabled" },
		{ "none without UMN", NULL, "{'platformType':'None','networking':{'userManagedNetworking':false}}", NULL, false,
		  "InputError", "Can't set none platform with user-managed-networking disabled" },
		{ "SNO without UMN", NULL,
		  "{'platformType':'','provisionRequirements':{'controlPlaneAgents':1,'workerAgents':0},'networking':{'userManagedNetworking':false}}",
		  NULL, false, "InputError", "UserManagedNetworking must be set to true with SNO" },
		{ "SNO on vsphere", NULL, "{'platformType':'VSphere','provisionRequirements':{'controlPlaneAgents':1,'workerAgents':0}}", NULL,
		  false, "InputError", "Single node cluster is not supported alongside vsphere platform" },
		{ "external without spec", NULL, "{'platformType':'External'}", NULL, false, "InputError",
		  "For external platform, the external platform spec must be set" },
		{ "bad CIDR", NULL, "{'networking':{'clusterNetwork':[{'cidr':'10.128.0.0/99','hostPrefix':23}]}}", NULL, false,
		  "InputError", "spec.networking.clusterNetwork: invalid CIDR address: 10.128.0.0/99" },
		{ "empty ignored validation", NULL, NULL,
		  "{'annotations':{'agent-install.openshift.io/ignored-cluster-validations':'ntp-server-configured,,x'}}", false,
		  "InputError", "empty ignored validation ID found in 'ntp-server-configured,,x'" },
		{ "trailing comma in ignored validations", NULL, NULL,
		  "{'annotations':{'agent-install.openshift.io/ignored-host-validations':'ntp-synced,'}}", false,
		  "InputError", "empty ignored validation ID found in 'ntp-synced,'" },
		{ "UMN with API VIPs", NULL, "{'platformType':'None','networking':{'userManagedNetworking':true}}", NULL, false,
		  "InputError", "API VIPs cannot be set with User Managed Networking" },
		{ "UMN with ingress VIPs", NULL, "{'platformType':'None','apiVIP':null,'networking':{'userManagedNetworking':true}}",
		  NULL, false, "InputError", "Ingress VIPs cannot be set with User Managed Networking" },
		{ "SDN on SNO", NULL,
		  "{'platformType':'None','provisionRequirements':{'controlPlaneAgents':1,'workerAgents':0},"
		  "'networking':{'userManagedNetworking':true,'networkType':'OpenShiftSDN'}}",
		  NULL, false, "InputError", "OpenShiftSDN network type is not allowed in single node mode" },
		{ "bad override", NULL, NULL,
		  "{'annotations':{'agent-install.openshift.io/install-config-overrides':'{\\'fipz\\':true}'}}", false,
		  "InputError",
		  "Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation: json: unknown field \"fipz\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *cd = J(CD), *aci = J(ACI_HA), *img = rows[i].no_imageset ? NULL : J(IMGSET), *m;
		ah_err err = { 0 };

		if (rows[i].cd_patch) {
			json_t *p = J(rows[i].cd_patch);

			json_object_update(json_object_get(cd, "spec"), json_object_get(p, "spec"));
			if (!json_object_get(json_object_get(p, "spec"), "pullSecretRef"))
				json_object_del(json_object_get(cd, "spec"), "pullSecretRef");
			json_decref(p);
		}
		if (rows[i].aci_spec_patch) {
			json_t *p = J(rows[i].aci_spec_patch);
			const char *k;
			json_t *v;

			json_object_foreach(p, k, v) {
				if (json_is_object(v) && json_is_object(json_object_get(json_object_get(aci, "spec"), k)))
					json_object_update(json_object_get(json_object_get(aci, "spec"), k), v);
				else if (json_is_null(v))
					json_object_del(json_object_get(aci, "spec"), k);
				else
					json_object_set(json_object_get(aci, "spec"), k, v);
			}
			json_decref(p);
		}
		if (rows[i].aci_meta_patch) {
			json_t *p = J(rows[i].aci_meta_patch);

			json_object_update(json_object_get(aci, "metadata"), p);
			json_decref(p);
		}
		m = cluster_model_from_crs(cd, aci, img, &err);
		if (m)
			fail_msg("row %s: expected an error", rows[i].name);
		if (strcmp(err.reason, rows[i].reason) || strcmp(err.message, rows[i].msg))
			fail_msg("row %s: got %s / %s", rows[i].name, err.reason, err.message);
		json_decref(cd);
		json_decref(aci);
		json_decref(img);
	}
}

static void test_release_from_image(void **state)
{
	static const struct {
		const char *image, *version, *arch;
		int r;
	} rows[] = {
		{ "quay.io/openshift-release-dev/ocp-release:4.14.0-x86_64", "4.14.0", "x86_64", 0 },
		{ "quay.io/openshift-release-dev/ocp-release:4.15.0-rc.1-multi", "4.15.0-rc.1", "multi", 0 },
		{ "quay.io/openshift-release-dev/ocp-release:4.13.2-aarch64", "4.13.2", "aarch64", 0 },
		{ "registry.local:5000/ocp/release:4.16.1", "4.16.1", "x86_64", 0 },
		{ "quay.io/openshift-release-dev/ocp-release@sha256:abcd", NULL, NULL, -EINVAL },
		{ "quay.io/openshift-release-dev/ocp-release:latest", NULL, NULL, -EINVAL },
		{ "", NULL, NULL, -EINVAL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char v[64], a[32];
		int r = cluster_release_from_image(rows[i].image, v, sizeof(v), a, sizeof(a));

		assert_int_equal(r, rows[i].r);
		if (r == 0) {
			assert_string_equal(v, rows[i].version);
			assert_string_equal(a, rows[i].arch);
		}
	}
}

/* ---- validations: one row per validation ---- */

static void test_validations(void **state)
{
	static const struct {
		const char *name, *base, *cluster_patch, *hosts, *id, *status, *msg;
		bool custom_manifests;
		const char *disabled;
	} rows[] = {
		{ "machine cidr defined", READY_CLUSTER, NULL, NULL, "machine-cidr-defined", "success",
		  "The Machine Network CIDR is defined." },
		{ "machine cidr UMN", READY_CLUSTER, "{'user_managed_networking':true,'machine_networks':[]}", NULL,
		  "machine-cidr-defined", "success", "No Machine Network CIDR needed: User Managed Networking" },
		{ "machine cidr no inventories", READY_CLUSTER, "{'machine_networks':[]}", "", "machine-cidr-defined",
		  "pending", "Hosts have not been discovered yet" },
		{ "machine cidr missing", READY_CLUSTER, "{'machine_networks':[]}", NULL, "machine-cidr-defined", "failure",
		  "The Machine Network CIDR is undefined; the Machine Network CIDR can be defined by setting either the API or Ingress virtual IPs." },
		{ "machine cidr missing SNO", SNO_CLUSTER, "{'machine_networks':[]}", "known:master", "machine-cidr-defined",
		  "failure", "The Machine Network CIDR is undefined; Setting Machine Network CIDR is required for single node cluster" },
		{ "cluster cidr", READY_CLUSTER, "{'cluster_networks':[]}", NULL, "cluster-cidr-defined", "failure",
		  "The Cluster Network CIDR is undefined." },
		{ "service cidr", READY_CLUSTER, "{'service_networks':[]}", NULL, "service-cidr-defined", "failure",
		  "The Service Network CIDR is undefined." },
		{ "calculated cidr equal", READY_CLUSTER, NULL, NULL, "machine-cidr-equals-to-calculated-cidr", "success",
		  "The Cluster Machine CIDR is equivalent to the calculated CIDR." },
		{ "calculated cidr differs", READY_CLUSTER, "{'machine_networks':[{'cidr':'192.168.0.0/16'}]}", NULL,
		  "machine-cidr-equals-to-calculated-cidr", "failure",
		  "1 error occurred:\n\t* The Cluster Machine CIDR 192.168.0.0/16 is different than the calculated CIDR 192.168.1.0/24.\n\n" },
		{ "api vips defined", READY_CLUSTER, NULL, NULL, "api-vips-defined", "success", "API virtual IPs are defined." },
		{ "api vips missing", READY_CLUSTER, "{'api_vips':[]}", NULL, "api-vips-defined", "failure",
		  "API virtual IPs are undefined and must be provided." },
		{ "api vips UMN", SNO_CLUSTER, NULL, "known:master", "api-vips-defined", "success",
		  "API virtual IPs are not required: User Managed Networking" },
		{ "api vips SNO", SNO_CLUSTER, "{'user_managed_networking':false}", "known:master", "api-vips-defined", "success",
		  "API virtual IPs are not required: SNO" },
		{ "ingress vips missing", READY_CLUSTER, "{'ingress_vips':[]}", NULL, "ingress-vips-defined", "failure",
		  "Ingress virtual IPs are undefined and must be provided." },
		{ "api vips valid", READY_CLUSTER, NULL, NULL, "api-vips-valid", "success",
		  "api vips 192.168.1.100 belongs to the Machine CIDR and is not in use." },
		{ "api vip outside", READY_CLUSTER, "{'api_vips':[{'ip':'10.9.9.9'}]}", NULL, "api-vips-valid", "failure",
		  "api vips <10.9.9.9> does not belong to machine-network-cidr <192.168.1.0/24>" },
		{ "api vip unverified", READY_CLUSTER, "{'api_vips':[{'ip':'192.168.1.100'}]}", NULL, "api-vips-valid",
		  "failure", "api vips <192.168.1.100> are not verified yet." },
		{ "api vip broadcast", READY_CLUSTER, "{'api_vips':[{'ip':'192.168.1.255'}]}", NULL, "api-vips-valid",
		  "failure", "api vips <192.168.1.255> is the broadcast address of machine-network-cidr <192.168.1.0/24>" },
		{ "ingress vip in use", READY_CLUSTER, "{'ingress_vips':[{'ip':'192.168.1.101','verification':'failed'}]}", NULL,
		  "ingress-vips-valid", "failure", "ingress vips <192.168.1.101> is already in use in cidr 192.168.1.0/24" },
		{ "no overlap", READY_CLUSTER, NULL, NULL, "no-cidrs-overlapping", "success", "No CIDRS are overlapping." },
		{ "overlap", READY_CLUSTER, "{'service_networks':[{'cidr':'192.168.0.0/16'}]}", NULL, "no-cidrs-overlapping",
		  "failure",
		  "CIDRS Overlapping: CIDRS 192.168.1.0/24 and 192.168.0.0/16 overlap (machine network and service network)." },
		{ "prefix valid", READY_CLUSTER, NULL, NULL, "network-prefix-valid", "success",
		  "The Cluster Network prefix is valid." },
		{ "prefix too long", READY_CLUSTER, "{'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':30}]}", NULL,
		  "network-prefix-valid", "failure",
		  "Host prefix, now 30, must be less than or equal to 25 to allow at least 128 addresses" },
		{ "families differ", READY_CLUSTER, "{'service_networks':[{'cidr':'fd02::/112'}]}", NULL,
		  "networks-same-address-families", "failure",
		  "Address families of networks (ServiceNetworks, ClusterNetworks) are not the same." },
		{ "families same", READY_CLUSTER, NULL, NULL, "networks-same-address-families", "success",
		  "Same address families for all networks." },
		{ "network type", READY_CLUSTER, "{'network_type':'OpenShiftSDN','high_availability_mode':'None'}", NULL,
		  "network-type-valid", "failure",
		  "High-availability mode 'None' (SNO) is not supported by OpenShiftSDN; use another network type instead" },
		{ "third-party CNI needs manifests", READY_CLUSTER, "{'network_type':'Calico'}", NULL,
		  "custom-manifests-requirements-satisfied", "failure", NULL },
		{ "third-party CNI with manifests", READY_CLUSTER, "{'network_type':'Calico'}", NULL,
		  "custom-manifests-requirements-satisfied", "success", NULL, true },
		{ "ntp ok", READY_CLUSTER, NULL, NULL, "ntp-server-configured", "success", "No ntp problems found" },
		{ "dns domain", READY_CLUSTER, "{'base_dns_domain':''}", NULL, "dns-domain-defined", "failure",
		  "The base domain is undefined and must be provided." },
		{ "hosts ready", READY_CLUSTER, NULL, "known:master,known:master,insufficient:master",
		  "all-hosts-are-ready-to-install", "failure", "The cluster has hosts that are not ready to install." },
		{ "masters count", READY_CLUSTER, NULL, "known:master,known:master", "sufficient-masters-count", "failure",
		  "The cluster must have exactly 3 dedicated control plane nodes. Add or remove hosts, or change their roles configurations to meet the requirement." },
		{ "masters count auto-assign", READY_CLUSTER, NULL, "known:master,known:master,known:auto-assign",
		  "sufficient-masters-count", "success", "The cluster has the exact amount of dedicated control plane nodes." },
		{ "SNO with a worker", SNO_CLUSTER, NULL, "known:master,known:worker", "sufficient-masters-count", "failure",
		  "Single-node clusters must have a single control plane node and no workers." },
		{ "pull secret", READY_CLUSTER, "{'pull_secret_set':false}", NULL, "pull-secret-set", "failure",
		  "The pull secret is not set." },
		{ "platform", READY_CLUSTER, NULL, NULL, "platform-requirements-satisfied", "success",
		  "Platform requirements satisfied" },
		{ "operator not selected", READY_CLUSTER, NULL, NULL, "lso-requirements-satisfied", "success",
		  "lso is disabled" },
		{ "disabled", READY_CLUSTER, "{'pull_secret_set':false}", NULL, "pull-secret-set", "disabled",
		  "Validation disabled", false, "ntp-server-configured, pull-secret-set" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = mkcluster(rows[i].base, rows[i].cluster_patch);
		json_t *h = mkhosts(rows[i].hosts ? rows[i].hosts : "known:master,known:master,known:master");
		struct cluster_refresh_ctx ctx = ctx0();
		json_t *res, *r;

		ctx.custom_manifests = rows[i].custom_manifests;
		ctx.disabled_validations = rows[i].disabled;
		res = cluster_validations(c, h, &ctx);
		r = json_object_get(res, rows[i].id);
		if (!r)
			fail_msg("row %s: no %s", rows[i].name, rows[i].id);
		if (strcmp(sget(r, "status"), rows[i].status) ||
		    (rows[i].msg && strcmp(sget(r, "message"), rows[i].msg)))
			fail_msg("row %s: %s → %s / %s", rows[i].name, rows[i].id, sget(r, "status"), sget(r, "message"));
		json_decref(res);
		json_decref(c);
		json_decref(h);
	}
}

static void test_validation_free_addresses(void **state)
{
	json_t *c = mkcluster(READY_CLUSTER, "{'api_vips':[{'ip':'192.168.1.100'}],'ingress_vips':[{'ip':'192.168.1.101'}]}");
	json_t *h = mkhosts("known:master,known:master,known:master"), *res;
	struct cluster_refresh_ctx ctx = ctx0();
	json_t *out = J("[{'vip':'192.168.1.101','vip_type':'ingress','verification':'succeeded'},{'vip':'9.9.9.9','vip_type':'api','verification':'failed'}]");

	(void)state;
	json_object_set_new(json_array_get(h, 0), "free_addresses",
			    json_string("[{\"network\":\"192.168.1.0/24\",\"free_addresses\":[\"192.168.1.100\"]}]"));
	res = cluster_validations(c, h, &ctx);
	assert_string_equal(sget(json_object_get(res, "api-vips-valid"), "status"), "success");
	assert_string_equal(sget(json_object_get(res, "ingress-vips-valid"), "status"), "failure");
	json_decref(res);
	assert_int_equal(cluster_apply_vip_verifications(c, out), 1);
	assert_int_equal(cluster_apply_vip_verifications(c, out), 0);
	assert_int_equal(cluster_apply_vip_verifications(c, json_object_get(c, "name")), -EINVAL);
	res = cluster_validations(c, h, &ctx);
	assert_string_equal(sget(json_object_get(res, "ingress-vips-valid"), "status"), "success");
	json_decref(res);
	json_decref(out);
	json_decref(c);
	json_decref(h);
}

/* ---- RefreshStatus: one row per rule ---- */

struct refresh_row {
	const char *name, *base, *cluster_patch, *hosts;
	bool soft, kubeconfig;
	const char *status, *info;
	const char *event; /* an event name that must be emitted, or NULL */
};

static const struct refresh_row refresh_rows[] = {
	{ "#1 input missing", READY_CLUSTER, "{'pull_secret_set':false}", NULL, false, false, "pending-for-input",
	  "User input required" },
	{ "#1 ready loses VIPs", READY_CLUSTER, "{'status':'ready','api_vips':[]}", NULL, false, false,
	  "pending-for-input", "User input required" },
	{ "#2 not enough hosts", READY_CLUSTER, NULL, "known:master,known:master", false, false, "insufficient",
	  "Cluster is not ready for install" },
	{ "#3 dhcp without machine network", READY_CLUSTER,
	  "{'vip_dhcp_allocation':true,'network_type':'OpenShiftSDN','machine_networks':[],'api_vips':[],'ingress_vips':[]}",
	  NULL, false, false, "pending-for-input", "User input required" },
	{ "#4 dhcp waiting for VIPs", READY_CLUSTER, "{'vip_dhcp_allocation':true,'network_type':'OpenShiftSDN','api_vips':[]}",
	  NULL, false, false, "insufficient", "Cluster is not ready for install" },
	{ "#5 ready", READY_CLUSTER, NULL, NULL, false, false, "ready", "Cluster ready to be installed" },
	{ "#5 ready SNO (auto machine network)", SNO_CLUSTER, "{'machine_networks':[]}", "known:master", false, false,
	  "ready", "Cluster ready to be installed" },
	{ "#5 ignored validation", READY_CLUSTER,
	  "{'cluster_networks':[{'cidr':'10.128.0.0/14','host_prefix':30}],'ignored_cluster_validations':'[\\'network-prefix-valid\\']'}",
	  NULL, false, false, "ready", "Cluster ready to be installed" },
	{ "#6 preparing timeout", READY_CLUSTER,
	  "{'status':'preparing-for-installation','status_updated_at':1699999000,'last_installation_preparation':{'status':'not_started'}}",
	  "preparing-for-installation:master,preparing-for-installation:master,preparing-for-installation:master", false,
	  false, "ready", "Preparing cluster for installation timeout" },
	{ "#7 prepared", READY_CLUSTER,
	  "{'status':'preparing-for-installation','last_installation_preparation':{'status':'success'}}",
	  "preparing-successful:master,preparing-successful:master,preparing-successful:master", false, false,
	  "installing", "Installation in progress" },
	{ "#8 host left preparation", READY_CLUSTER,
	  "{'status':'preparing-for-installation','last_installation_preparation':{'status':'not_started'}}",
	  "preparing-for-installation:master,insufficient:master,preparing-successful:master", false, false,
	  "insufficient", "At least one host has stopped preparing for installation" },
	{ "#9 host failed preparing", READY_CLUSTER,
	  "{'status':'preparing-for-installation','last_installation_preparation':{'status':'not_started'}}",
	  "preparing-failed:master,preparing-successful:master,preparing-successful:master", false, false, "ready",
	  "Cluster failed to prepare for installation" },
	{ "#9 cluster preparation failed", READY_CLUSTER,
	  "{'status':'preparing-for-installation','last_installation_preparation':{'status':'failed','reason':'x'}}",
	  "preparing-successful:master,preparing-successful:master,preparing-successful:master", false, false, "ready",
	  "Cluster failed to prepare for installation" },
	{ "#26 still preparing", READY_CLUSTER,
	  "{'status':'preparing-for-installation','status_info':'Preparing cluster for installation','last_installation_preparation':{'status':'not_started'}}",
	  "preparing-for-installation:master,preparing-for-installation:master,preparing-for-installation:master", false,
	  false, "preparing-for-installation", "Preparing cluster for installation" },
	{ "#10 pending user action, hosts in error", READY_CLUSTER,
	  "{'status':'installing-pending-user-action','install_started_at':1700000000}",
	  "error:master,error:master,installing-pending-user-action:master", false, false, "error",
	  "cluster has hosts in error", "cluster_installation_failed" },
	{ "#11 pending user action timed out", READY_CLUSTER,
	  "{'status':'installing-pending-user-action','install_started_at':1699900000}",
	  "installing-in-progress:master,installing-in-progress:master,installing-pending-user-action:master", false, false,
	  "error", "cluster installation timed out while pending user action (a manual booting from installation disk)" },
	{ "#12 soft installation timeout", READY_CLUSTER, "{'status':'installing','install_started_at':1699900000}",
	  "installing-in-progress:master,installing-in-progress:master,installing-in-progress:master", true, false, "error",
	  "cluster installation timeout (1440 minutes) has expired" },
	{ "#13 finalizing timeout", READY_CLUSTER,
	  "{'status':'finalizing','status_updated_at':1699980000,'install_started_at':1699980000}",
	  "installed:master,installed:master,installed:master", false, false, "error",
	  "Cluster installation timeout while finalizing" },
	{ "#14 finalizing stage timeout", READY_CLUSTER,
	  "{'status':'finalizing','status_updated_at':1699999000,'install_started_at':1699999000,'progress':{'finalizing_stage':'Adding router ca','finalizing_stage_started_at':1699995000}}",
	  "installed:master,installed:master,installed:master", false, false, "error",
	  "Cluster finalizing stage 'Adding router ca' has been timed out after timeout duration of 70 minutes" },
	{ "#15 non-failing stage slow", READY_CLUSTER,
	  "{'status':'finalizing','status_updated_at':1699999000,'install_started_at':1699999000,'progress':{'finalizing_stage':'Applying olm manifests','finalizing_stage_started_at':1699999000}}",
	  "installed:master,installed:master,installed:master", false, false, "finalizing",
	  "Cluster finalizing stage 'Applying olm manifests' is taking longer than the expected duration (10 minutes). To troubleshoot use kubeconfig or connect to any node using ssh",
	  "finalizing_stage_timed_out" },
	{ "#16 still pending user action", READY_CLUSTER,
	  "{'status':'installing-pending-user-action','status_info':'Cluster has hosts pending user action','install_started_at':1700000000}",
	  "installing-in-progress:master,installing-in-progress:master,installing-pending-user-action:master", false, false,
	  "installing-pending-user-action", "Cluster has hosts pending user action" },
	{ "#17 back to installing", READY_CLUSTER, "{'status':'installing-pending-user-action','install_started_at':1700000000}",
	  "installing-in-progress:master,installing-in-progress:master,installing-in-progress:master", false, false,
	  "installing", "Installation in progress" },
	{ "#18 pending user action to finalizing", READY_CLUSTER,
	  "{'status':'installing-pending-user-action','install_started_at':1700000000}",
	  "installed:master,installed:master,installed:master", false, false, "finalizing",
	  "Finalizing cluster installation" },
	{ "#19 installing to pending user action", READY_CLUSTER, "{'status':'installing','install_started_at':1700000000}",
	  "installing-in-progress:master,installing-in-progress:master,installing-pending-user-action:master", false, false,
	  "installing-pending-user-action", "Cluster has hosts pending user action" },
	{ "#20 to finalizing", READY_CLUSTER, "{'status':'installing','install_started_at':1700000000}",
	  "installed:master,installed:master,installed:master,installing-in-progress:worker", false, false, "finalizing",
	  "Finalizing cluster installation" },
	{ "#21 stay installing", READY_CLUSTER,
	  "{'status':'installing','status_info':'Installation in progress','install_started_at':1700000000}",
	  "installing-in-progress:master:Installing,installed:master,installing:master", false, false, "installing",
	  "Installation in progress" },
	{ "#23 installed", READY_CLUSTER, "{'status':'finalizing','install_started_at':1700000000}",
	  "installed:master,installed:master,installed:master", false, true, "installed", "Cluster is installed",
	  "cluster_installation_completed" },
	{ "#23 installed, a worker missing", READY_CLUSTER, "{'status':'finalizing','install_started_at':1700000000}",
	  "installed:master,installed:master,installed:master,installed:worker,error:worker", false, true, "installed",
	  "Cluster is installed but some workers did not join" },
	{ "#26 finalizing without kubeconfig", READY_CLUSTER,
	  "{'status':'finalizing','status_info':'Finalizing cluster installation','install_started_at':1700000000}",
	  "installed:master,installed:master,installed:master", false, false, "finalizing",
	  "Finalizing cluster installation" },
	{ "#24 installing, hosts failed", READY_CLUSTER, "{'status':'installing','install_started_at':1700000000}",
	  "error:master,installing-in-progress:master,installing-in-progress:master", false, false, "error",
	  "cluster has hosts in error", "cluster_installation_failed" },
	{ "#25 error, logs timed out", READY_CLUSTER,
	  "{'status':'error','status_info':'cluster has hosts in error','status_updated_at':1699999000}",
	  "error:master,error:master,error:master", false, false, "error", "cluster has hosts in error" },
	{ "#26 installed", READY_CLUSTER, "{'status':'installed','status_info':'Cluster is installed'}",
	  "installed:master,installed:master,installed:master", false, false, "installed", "Cluster is installed" },
	{ "#26 cancelled", READY_CLUSTER,
	  "{'status':'cancelled','status_info':'Canceled cluster installation','logs_info':'timeout'}", NULL, false, false,
	  "cancelled", "Canceled cluster installation" },
	{ "#26 adding-hosts", READY_CLUSTER,
	  "{'status':'adding-hosts','kind':'AddHostsCluster','status_info':'cluster is adding hosts to existing OCP cluster'}",
	  NULL, false, false, "adding-hosts", "cluster is adding hosts to existing OCP cluster" },
};

static bool has_event(const json_t *events, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(events, i, e)
		if (!strcmp(sget(e, "name"), name))
			return true;
	return false;
}

static void test_refresh_rules(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refresh_rows) / sizeof(refresh_rows[0]); i++) {
		const struct refresh_row *row = &refresh_rows[i];
		json_t *c = mkcluster(row->base, row->cluster_patch);
		json_t *h = mkhosts(row->hosts ? row->hosts : "known:master,known:master,known:master");
		struct cluster_refresh_ctx ctx = ctx0();
		struct cluster_refresh_result r;

		ctx.soft_timeouts = row->soft;
		ctx.kubeconfig_uploaded = row->kubeconfig;
		assert_int_equal(cluster_refresh(c, h, &ctx, &r), 0);
		if (!r.rule_matched || strcmp(r.status, row->status) || strcmp(r.status_info, row->info))
			fail_msg("row %s: matched=%d %s / %s", row->name, r.rule_matched, r.status, r.status_info);
		assert_string_equal(sget(r.cluster, "status"), row->status);
		assert_int_equal(r.status_changed, strcmp(sget(c, "status"), row->status) != 0);
		if (row->event && !has_event(r.events, row->event))
			fail_msg("row %s: no %s event", row->name, row->event);
		cluster_refresh_result_release(&r);
		json_decref(c);
		json_decref(h);
	}
}

static void test_refresh_effects(void **state)
{
	struct cluster_refresh_ctx ctx = ctx0();
	struct cluster_refresh_result r, r2;
	json_t *c, *h, *p, *vi;

	(void)state;
	/* #7 on SNO: the VIPs become the host IP, progress starts at 10%. */
	c = mkcluster(SNO_CLUSTER, "{'status':'preparing-for-installation','status_updated_at':1700000000,"
			       "'last_installation_preparation':{'status':'success'}}");
	h = mkhosts("preparing-successful:master");
	json_object_set_new(json_array_get(h, 0), "bootstrap", json_true());
	assert_int_equal(cluster_refresh(c, h, &ctx, &r), 0);
	assert_string_equal(r.status, "installing");
	assert_string_equal(sget(json_array_get(json_object_get(r.cluster, "api_vips"), 0), "ip"), "192.168.1.10");
	assert_string_equal(sget(json_array_get(json_object_get(r.cluster, "ingress_vips"), 0), "ip"), "192.168.1.10");
	p = json_object_get(r.cluster, "progress");
	assert_int_equal(json_integer_value(json_object_get(p, "preparing_for_installation_stage_percentage")), 100);
	assert_int_equal(json_integer_value(json_object_get(p, "total_percentage")), 10);
	assert_int_equal(json_integer_value(json_object_get(r.cluster, "status_updated_at")), NOW);
	cluster_refresh_result_release(&r);
	json_decref(c);
	json_decref(h);

	/* validations_info stored as JSON text; a second refresh is a no-op;
	 * a flip from success to failure emits cluster_validation_failed. */
	c = mkcluster(READY_CLUSTER, NULL);
	h = mkhosts("known:master,known:master,known:master");
	assert_int_equal(cluster_refresh(c, h, &ctx, &r), 0);
	assert_true(r.validations_changed);
	assert_true(r.changed);
	vi = json_loads(sget(r.cluster, "validations_info"), 0, NULL);
	assert_non_null(vi);
	assert_string_equal(sget(json_array_get(json_object_get(vi, "configuration"), 0), "id"), "platform-requirements-satisfied");
	assert_string_equal(sget(json_array_get(json_object_get(vi, "configuration"), 1), "id"), "pull-secret-set");
	assert_non_null(json_object_get(vi, "hosts-data"));
	assert_non_null(json_object_get(vi, "network"));
	json_decref(vi);
	assert_int_equal(cluster_refresh(r.cluster, h, &ctx, &r2), 0);
	assert_false(r2.changed);
	assert_false(r2.status_changed);
	json_object_set_new(r2.cluster, "pull_secret_set", json_false());
	cluster_refresh_result_release(&r);
	assert_int_equal(cluster_refresh(r2.cluster, h, &ctx, &r), 0);
	assert_true(has_event(r.events, "cluster_validation_failed"));
	assert_string_equal(r.status, "pending-for-input");
	cluster_refresh_result_release(&r);
	cluster_refresh_result_release(&r2);
	json_decref(c);
	json_decref(h);

	/* bad input */
	assert_int_equal(cluster_refresh(json_object_get(NULL, "x"), NULL, &ctx, &r), -EINVAL);
}

/* ---- explicit transitions ---- */

static void test_transitions(void **state)
{
	static const struct {
		const char *name, *from;
		int op;
		const char *arg;
		int ret;
		const char *to, *info;
	} rows[] = {
		{ "prepare", "ready", 0, NULL, 0, "preparing-for-installation", "Preparing cluster for installation" },
		{ "prepare refused", "insufficient", 0, NULL, -EBUSY, "insufficient", NULL },
		{ "cancel installing", "installing", 1, NULL, 0, "cancelled", "Canceled cluster installation" },
		{ "cancel error", "error", 1, NULL, 0, "cancelled", "Canceled cluster installation" },
		{ "cancel finalizing", "finalizing", 1, NULL, 0, "cancelled", "Canceled cluster installation" },
		{ "cancel IPUA", "installing-pending-user-action", 1, NULL, 0, "cancelled", "Canceled cluster installation" },
		{ "cancel preparing", "preparing-for-installation", 1, NULL, 0, "ready", "Canceled cluster installation" },
		{ "cancel refused", "ready", 1, NULL, -EBUSY, "ready", NULL },
		{ "reset error", "error", 2, NULL, 0, "insufficient", "cluster was reset by user" },
		{ "reset cancelled", "cancelled", 2, NULL, 0, "insufficient", "cluster was reset by user" },
		{ "reset refused", "installed", 2, NULL, -EBUSY, "installed", NULL },
		{ "install failed", "installing", 3, "Host master-0 failed", 0, "error", "Host master-0 failed" },
		{ "install failed refused", "ready", 3, "x", -EBUSY, "ready", NULL },
		/* Upstream's day-2 transform keeps the installed cluster's status_info. */
		{ "allow add hosts", "installed", 4, NULL, 0, "adding-hosts", "Cluster is installed" },
		{ "allow add hosts refused", "finalizing", 4, NULL, -EBUSY, "finalizing", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = mkcluster(READY_CLUSTER, NULL), *before;
		ah_err err = { 0 };
		int r = 0;

		json_object_set_new(c, "status", json_string(rows[i].from));
		json_object_set_new(c, "status_updated_at", json_integer(NOW - 100));
		if (rows[i].op == 4)
			json_object_set_new(c, "status_info", json_string(CLUSTER_INFO_INSTALLED));
		before = json_deep_copy(c);
		switch (rows[i].op) {
		case 0:
			r = cluster_prepare_for_installation(c, NOW, &err);
			break;
		case 1:
			r = cluster_cancel(c, NOW, &err);
			break;
		case 2:
			r = cluster_reset(c, NOW, &err);
			break;
		case 3:
			r = cluster_install_failed(c, rows[i].arg, NOW, &err);
			break;
		case 4:
			r = cluster_allow_add_hosts(c, NOW, &err);
			break;
		}
		if (r != rows[i].ret)
			fail_msg("row %s: %d (%s)", rows[i].name, r, err.message);
		assert_string_equal(sget(c, "status"), rows[i].to);
		if (r < 0) {
			assert_int_equal(err.status, 409);
			assert_true(json_equal(c, before));
		} else {
			assert_string_equal(sget(c, "status_info"), rows[i].info);
			assert_int_equal(json_integer_value(json_object_get(c, "status_updated_at")), NOW);
		}
		json_decref(before);
		json_decref(c);
	}
}

static void test_transition_fields(void **state)
{
	json_t *c = mkcluster(READY_CLUSTER, "{'status':'ready'}"), *p;
	ah_err err = { 0 };

	(void)state;
	assert_int_equal(cluster_preparation_done(c, true, NULL, &err), -EBUSY);
	assert_int_equal(cluster_prepare_for_installation(c, NOW, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(c, "install_started_at")), NOW);
	assert_string_equal(sget(json_object_get(c, "last_installation_preparation"), "status"), "not_started");
	assert_int_equal(cluster_preparation_done(c, false, "manifests failed", &err), 0);
	assert_string_equal(sget(json_object_get(c, "last_installation_preparation"), "status"), "failed");
	assert_string_equal(sget(json_object_get(c, "last_installation_preparation"), "reason"), "manifests failed");
	assert_int_equal(cluster_preparation_done(c, true, NULL, &err), 0);
	assert_string_equal(sget(json_object_get(c, "last_installation_preparation"), "status"), "success");

	/* finalizing stages */
	assert_int_equal(cluster_set_finalizing_stage(c, "Done", NOW, &err), -EINVAL);
	assert_int_equal(err.status, 400);
	json_object_set_new(c, "status", json_string("finalizing"));
	assert_int_equal(cluster_set_finalizing_stage(c, "Waiting for cluster operator", NOW, &err), -EINVAL);
	assert_int_equal(cluster_set_finalizing_stage(c, "Waiting for cluster operators", NOW, &err), 0);
	p = json_object_get(c, "progress");
	assert_string_equal(sget(p, "finalizing_stage"), "Waiting for cluster operators");
	assert_int_equal(json_integer_value(json_object_get(p, "finalizing_stage_started_at")), NOW);
	json_object_set_new(p, "finalizing_stage_timed_out", json_true());
	assert_int_equal(cluster_set_finalizing_stage(c, "Waiting for cluster operators", NOW + 5, &err), 0);
	assert_int_equal(json_integer_value(json_object_get(p, "finalizing_stage_started_at")), NOW);
	assert_int_equal(cluster_set_finalizing_stage(c, "Done", NOW + 9, &err), 0);
	assert_false(json_is_true(json_object_get(p, "finalizing_stage_timed_out")));
	assert_int_equal(cluster_finalizing_stage_timeout("Waiting for cluster operators", false), 600 * 60);
	assert_int_equal(cluster_finalizing_stage_timeout("Waiting for cluster operators", true), 70 * 60);
	assert_int_equal(cluster_finalizing_stage_timeout("Applying olm manifests", false), 10 * 60);
	assert_int_equal(cluster_finalizing_stage_timeout("nope", false), 70 * 60);

	/* reset clears SNO VIPs and progress */
	json_decref(c);
	c = mkcluster(SNO_CLUSTER, "{'status':'error','api_vips':[{'ip':'192.168.1.10'}],'progress':{'total_percentage':55}}");
	assert_int_equal(cluster_reset(c, NOW, &err), 0);
	assert_int_equal(json_array_size(json_object_get(c, "api_vips")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "progress"), "total_percentage")), 0);
	assert_string_equal(sget(json_object_get(c, "last_installation_preparation"), "status"), "not_started");
	json_decref(c);
}

static void test_progress(void **state)
{
	json_t *c = mkcluster(READY_CLUSTER, "{'status':'installing'}");
	json_t *h = mkhosts("installing-in-progress:master:Starting installation,installing-in-progress:master:Done,"
			    "installing-in-progress:master:Rebooting");
	json_t *p;

	(void)state;
	json_object_set_new(json_array_get(h, 0), "bootstrap", json_true());
	cluster_update_progress(c, h);
	p = json_object_get(c, "progress");
	/* bootstrap 1/11, masters 8/8 and 5/8: 14/27 = 51% */
	assert_int_equal(json_integer_value(json_object_get(p, "installing_stage_percentage")), 51);
	assert_int_equal(json_integer_value(json_object_get(p, "preparing_for_installation_stage_percentage")), 100);
	assert_int_equal(json_integer_value(json_object_get(p, "total_percentage")), 45);
	json_object_set_new(c, "status", json_string("installed"));
	cluster_update_progress(c, h);
	assert_int_equal(json_integer_value(json_object_get(p, "total_percentage")), 100);
	json_decref(c);
	json_decref(h);
}

/* ---- roles and bootstrap ---- */

static void test_roles(void **state)
{
	static const struct {
		const char *name, *base, *hosts;
		const char *presets; /* per host role, "" = auto-assign */
		const char *want;    /* suggested roles in host order */
	} rows[] = {
		{ "3 masters 2 workers", READY_CLUSTER, "known,known,known,known,known", ",,,,", "master,master,master,worker,worker" },
		{ "preset roles count", READY_CLUSTER, "known,known,known,known", "worker,master,,", "worker,master,master,master" },
		{ "SNO", SNO_CLUSTER, "known", "", "master" },
		{ "weak host is no master", READY_CLUSTER, "known,known,known,known", "weak,,,", "worker,master,master,master" },
		{ "two-node with arbiter", READY_CLUSTER, "known,known,known", ",,", "master,master,arbiter" },
		{ "day-2 host", READY_CLUSTER, "known", "day2", "worker" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = mkcluster(rows[i].base, strstr(rows[i].name, "two-node") ? "{'control_plane_count':2}" : NULL);
		json_t *h = json_array();
		char presets[128], want[128], *s1 = NULL, *tok;
		size_t n = 0;
		const char *p = rows[i].presets;

		for (const char *q = rows[i].hosts; *q; q++)
			if (*q == ',')
				n++;
		n++;
		for (size_t k = 0; k < n; k++) {
			json_t *x = mkhost((int)k, "known:auto-assign");
			size_t l = strcspn(p, ",");

			snprintf(presets, sizeof(presets), "%.*s", (int)l, p);
			json_object_set_new(x, "suggested_role", json_string("auto-assign"));
			if (!strcmp(presets, "weak"))
				json_object_set_new(x, "inventory", inventory((int)k, 2, 8LL << 30));
			else if (!strcmp(presets, "day2"))
				json_object_set_new(x, "kind", json_string("AddToExistingClusterHost"));
			else if (*presets)
				json_object_set_new(x, "role", json_string(presets));
			json_array_append_new(h, x);
			p += l;
			if (*p == ',')
				p++;
		}
		cluster_suggest_roles(c, h);
		snprintf(want, sizeof(want), "%s", rows[i].want);
		tok = strtok_r(want, ",", &s1);
		for (size_t k = 0; k < n; k++, tok = strtok_r(NULL, ",", &s1))
			if (!tok || strcmp(sget(json_array_get(h, k), "suggested_role"), tok))
				fail_msg("row %s host %zu: %s", rows[i].name, k, sget(json_array_get(h, k), "suggested_role"));
		json_decref(c);
		json_decref(h);
	}
}

static void test_assign_roles(void **state)
{
	json_t *c = mkcluster(READY_CLUSTER, NULL);
	json_t *h = mkhosts("known:master,known:master,known:master,known:worker");
	ah_err err = { 0 };

	(void)state;
	json_object_set_new(json_array_get(h, 3), "bootstrap", json_true());
	assert_int_equal(cluster_assign_roles(c, h, &err), 0);
	assert_string_equal(sget(json_array_get(h, 0), "role"), "master");
	assert_string_equal(sget(json_array_get(h, 3), "role"), "worker");
	assert_false(json_is_true(json_object_get(json_array_get(h, 3), "bootstrap")));
	/* the last master in known / preparing-for-installation */
	assert_true(json_is_true(json_object_get(json_array_get(h, 2), "bootstrap")));
	assert_false(json_is_true(json_object_get(json_array_get(h, 0), "bootstrap")));
	/* an existing bootstrap stays */
	json_object_set_new(json_array_get(h, 2), "bootstrap", json_false());
	json_object_set_new(json_array_get(h, 0), "bootstrap", json_true());
	assert_int_equal(cluster_assign_roles(c, h, &err), 0);
	assert_false(json_is_true(json_object_get(json_array_get(h, 2), "bootstrap")));
	json_decref(h);
	/* no master → error */
	h = mkhosts("known:worker");
	assert_int_equal(cluster_assign_roles(c, h, &err), -EINVAL);
	json_decref(h);
	json_decref(c);
	/* SNO */
	c = mkcluster(SNO_CLUSTER, NULL);
	h = mkhosts("known:master");
	assert_int_equal(cluster_assign_roles(c, h, &err), 0);
	assert_string_equal(sget(json_array_get(h, 0), "role"), "master");
	assert_true(json_is_true(json_object_get(json_array_get(h, 0), "bootstrap")));
	json_decref(h);
	json_decref(c);
}

/* ---- the auto-install gate ---- */

static void test_gate(void **state)
{
	static const struct {
		const char *name, *status, *hosts;
		int cp, workers;
		const char *unapproved, *unsynced; /* host indexes */
		enum cluster_gate want;
	} rows[] = {
		{ "ok", "ready", "known:master,known:master,known:master,known:worker,known:worker", 3, 2, "", "", CLUSTER_GATE_OK },
		{ "not ready", "insufficient", "known:master,known:master,known:master", 3, 0, "", "", CLUSTER_GATE_NOT_READY },
		{ "extra host blocks", "ready", "known:master,known:master,known:master,known:worker", 3, 0, "", "",
		  CLUSTER_GATE_INSUFFICIENT_AGENTS },
		{ "missing worker", "ready", "known:master,known:master,known:master,known:worker", 3, 2, "", "",
		  CLUSTER_GATE_INSUFFICIENT_AGENTS },
		{ "unsynced agent", "ready", "known:master,known:master,known:master", 3, 0, "", "1",
		  CLUSTER_GATE_UNSYNCED_AGENTS },
		{ "unapproved", "ready", "known:master,known:master,known:master", 3, 0, "2", "",
		  CLUSTER_GATE_UNAPPROVED_AGENTS },
		{ "SNO ok", "ready", "known:master", 1, 0, "", "", CLUSTER_GATE_OK },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = mkcluster(READY_CLUSTER, NULL), *h = mkhosts(rows[i].hosts);
		struct aci_requirements req = { rows[i].cp, rows[i].workers, 0 };

		json_object_set_new(c, "status", json_string(rows[i].status));
		for (const char *p = rows[i].unapproved; *p; p++)
			json_object_set_new(json_array_get(h, (size_t)(*p - '0')), "approved", json_false());
		for (const char *p = rows[i].unsynced; *p; p++)
			json_object_set_new(json_array_get(h, (size_t)(*p - '0')), "spec_synced", json_false());
		if (cluster_install_gate(c, h, &req) != rows[i].want)
			fail_msg("row %s: %d", rows[i].name, cluster_install_gate(c, h, &req));
		json_decref(c);
		json_decref(h);
	}
}

/* ---- ACI conditions: one row per table row ---- */

static const json_t *cond(const json_t *conds, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (!strcmp(sget(c, "type"), type))
			return c;
	return NULL;
}

static void test_aci_conditions(void **state)
{
	static const char VI_FAIL[] =
		"{'configuration':[{'id':'pull-secret-set','status':'failure','message':'The pull secret is not set.'}],"
		"'network':[{'id':'a','status':'success','message':'ok'},{'id':'b','status':'disabled','message':'Validation disabled'}]}";
	static const struct {
		const char *name, *cluster, *hosts;
		bool hold;
		const char *cvo;
		const char *type, *status, *reason, *msg;
	} rows[] = {
		{ "ready", "{'status':'ready'}", "known:master,known:master,known:master", false, NULL, "RequirementsMet", "True",
		  "ClusterIsReady", "The cluster is ready to begin the installation" },
		{ "insufficient agents", "{'status':'ready'}", "known:master,known:master,known:master,known:worker", false, NULL,
		  "RequirementsMet", "False", "InsufficientAgents",
		  "The cluster currently requires exactly 3 master agents, 0 arbiter agents and 0 worker agents, but currently registered 3 master agents, 0 arbiter agents and 1 worker agents" },
		{ "unsynced agents", "{'status':'ready'}", "known:master,known:master,known:master", false, NULL,
		  "RequirementsMet", "False", "UnsyncedAgents", "The cluster currently has 1 agents with spec error" },
		{ "unapproved agents", "{'status':'ready'}", "known:master,known:master,known:master", false, NULL,
		  "RequirementsMet", "False", "UnapprovedAgents", "The installation is pending on the approval of 2 agents" },
		{ "not ready", "{'status':'insufficient'}", NULL, false, NULL, "RequirementsMet", "False", "ClusterNotReady",
		  "The cluster is not ready to begin the installation" },
		{ "already installing", "{'status':'finalizing'}", NULL, false, NULL, "RequirementsMet", "True",
		  "ClusterAlreadyInstalling", "The cluster requirements are met" },
		{ "stopped", "{'status':'error'}", NULL, false, NULL, "RequirementsMet", "True", "ClusterInstallationStopped",
		  "The cluster installation stopped" },
		{ "requirements unknown", "{'status':'cancelled'}", NULL, false, NULL, "RequirementsMet", "Unknown",
		  "UnknownStatus", "The installation status is currently not recognized: cancelled" },
		{ "validations failing", "{'status':'insufficient'}", NULL, false, NULL, "Validated", "False",
		  "ValidationsFailing", "The cluster's validations are failing: The pull secret is not set.,Validation disabled" },
		{ "validations pending", "{'status':'pending-for-input'}", NULL, false, NULL, "Validated", "False",
		  "ValidationsUserPending",
		  "The cluster's validations are pending for user: The pull secret is not set.,Validation disabled" },
		{ "validations unknown", "{'status':'ready','validations_info':''}", NULL, false, NULL, "Validated", "Unknown",
		  "ValidationsUnknown", "The cluster's validations have not yet been calculated" },
		{ "validations passing", "{'status':'ready'}", NULL, false, NULL, "Validated", "True", "ValidationsPassing",
		  "The cluster's validations are passing" },
		{ "completed", "{'status':'installed','status_info':'Cluster is installed'}", NULL, false, NULL, "Completed",
		  "True", "InstallationCompleted", "The installation has completed: Cluster is installed" },
		{ "completed day2", "{'status':'adding-hosts','status_info':'x'}", NULL, false, NULL, "Completed", "True",
		  "InstallationCompleted", "The installation has completed: x" },
		{ "failed", "{'status':'error','status_info':'cluster has hosts in error'}", NULL, false, NULL, "Completed",
		  "False", "InstallationFailed", "The installation has failed: cluster has hosts in error" },
		{ "not started", "{'status':'ready'}", NULL, false, NULL, "Completed", "False", "InstallationNotStarted",
		  "The installation has not yet started" },
		{ "on hold", "{'status':'ready'}", NULL, true, NULL, "Completed", "False", "InstallationOnHold",
		  "The installation is on hold. To unhold set holdInstallation to false" },
		{ "in progress", "{'status':'installing','status_info':'Installation in progress'}", NULL, false, NULL,
		  "Completed", "False", "InstallationInProgress", "The installation is in progress: Installation in progress" },
		{ "in progress cvo", "{'status':'finalizing','status_info':'Finalizing cluster installation'}", NULL, false,
		  "progressing", "Completed", "False", "InstallationInProgress",
		  "The installation is in progress: Finalizing cluster installation. Cluster version status: progressing, message: Working towards 4.14" },
		{ "completed unknown", "{'status':'cancelled'}", NULL, false, NULL, "Completed", "Unknown", "UnknownStatus",
		  "The installation status is currently not recognized: cancelled" },
		{ "failed true", "{'status':'error','status_info':'boom'}", NULL, false, NULL, "Failed", "True",
		  "InstallationFailed", "The installation failed: boom" },
		{ "failed false", "{'status':'installing'}", NULL, false, NULL, "Failed", "False", "InstallationNotFailed",
		  "The installation has not failed" },
		{ "stopped error", "{'status':'error'}", NULL, false, NULL, "Stopped", "True", "InstallationFailed",
		  "The installation has stopped due to error" },
		{ "stopped cancelled", "{'status':'cancelled'}", NULL, false, NULL, "Stopped", "True", "InstallationCancelled",
		  "The installation has stopped because it was cancelled" },
		{ "stopped completed", "{'status':'installed'}", NULL, false, NULL, "Stopped", "True", "InstallationCompleted",
		  "The installation has stopped because it completed successfully" },
		{ "not stopped", "{'status':'installing'}", NULL, false, NULL, "Stopped", "False", "InstallationNotStopped",
		  "The installation is waiting to start or in progress" },
		{ "prep never", "{'status':'ready'}", NULL, false, NULL, "LastInstallationPreparationFailed", "False",
		  "Cluster preparation has never been performed for this cluster", "" },
		{ "prep success", "{'status':'installing','last_installation_preparation':{'status':'success'}}", NULL, false,
		  NULL, "LastInstallationPreparationFailed", "False", "There is no failing prior preparation attempt", "" },
		{ "prep failed", "{'status':'ready','last_installation_preparation':{'status':'failed','reason':'manifests: bad'}}",
		  NULL, false, NULL, "LastInstallationPreparationFailed", "True", "The last installation preparation failed",
		  "manifests: bad" },
		{ "prep not_started keeps", "{'status':'preparing-for-installation','last_installation_preparation':{'status':'not_started'}}",
		  NULL, false, NULL, "LastInstallationPreparationFailed", "True", "The last installation preparation failed",
		  "old" },
		{ "spec synced", "{'status':'ready'}", NULL, false, NULL, "SpecSynced", "True", "SyncOK", "SyncOK" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *c = J("{'status':'ready','status_info':''}"), *h = mkhosts(rows[i].hosts), *out, *old;
		struct aci_conditions_in in = { .req = { 3, 0, 0 }, .hosts = h, .hold = rows[i].hold, .spec_synced = true,
						.cvo_status = rows[i].cvo, .cvo_message = "Working towards 4.14" };
		const json_t *x;

		json_object_set_new(c, "validations_info", J(VI_FAIL));
		patch(c, rows[i].cluster);
		if (!strcmp(rows[i].name, "unsynced agents"))
			json_object_set_new(json_array_get(h, 1), "spec_synced", json_false());
		if (!strcmp(rows[i].name, "unapproved agents")) {
			json_object_set_new(json_array_get(h, 0), "approved", json_false());
			json_object_set_new(json_array_get(h, 1), "approved", json_false());
		}
		old = J("[{'type':'LastInstallationPreparationFailed','status':'True','reason':'The last installation preparation failed','message':'old','lastProbeTime':'t0','lastTransitionTime':'t0'}]");
		in.old_conditions = old;
		out = aci_conditions(c, &in);
		x = cond(out, rows[i].type);
		if (!x)
			fail_msg("row %s: no %s", rows[i].name, rows[i].type);
		if (strcmp(sget(x, "status"), rows[i].status) || strcmp(sget(x, "reason"), rows[i].reason) ||
		    strcmp(sget(x, "message"), rows[i].msg))
			fail_msg("row %s: %s %s %s", rows[i].name, sget(x, "status"), sget(x, "reason"), sget(x, "message"));
		assert_int_equal(json_array_size(out), 7);
		json_decref(out);
		json_decref(old);
		json_decref(c);
		json_decref(h);
	}
}

static void test_aci_conditions_special(void **state)
{
	struct aci_conditions_in in = { .spec_synced = false, .spec_error_is_input = true,
					.spec_error = "Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation: json: unknown field \"x\"" };
	json_t *out, *old, *c, *y;
	const json_t *x;
	size_t i;

	(void)state;
	/* no backend cluster */
	out = aci_conditions(NULL, &in);
	assert_int_equal(json_array_size(out), 6);
	x = cond(out, "SpecSynced");
	assert_string_equal(sget(x, "reason"), "InputError");
	assert_string_equal(sget(x, "message"),
			    "The Spec could not be synced due to an input error: Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation: json: unknown field \"x\"");
	x = cond(out, "Completed");
	assert_string_equal(sget(x, "status"), "Unknown");
	assert_string_equal(sget(x, "reason"), "NotAvailable");
	assert_string_equal(sget(x, "message"), "Information not available");
	json_decref(out);
	in.spec_error_is_input = false;
	in.spec_error = "db down";
	out = aci_conditions(NULL, &in);
	assert_string_equal(sget(cond(out, "SpecSynced"), "message"), "The Spec could not be synced due to backend error: db down");
	assert_string_equal(sget(cond(out, "SpecSynced"), "reason"), "BackendError");
	json_decref(out);
	/* missing ClusterDeployment */
	out = aci_conditions_cd_missing("cd1", "ns1");
	assert_int_equal(json_array_size(out), 6);
	assert_string_equal(sget(cond(out, "SpecSynced"), "message"),
			    "The Spec could not be synced due to an input error: ClusterDeployment with name 'cd1' in namespace 'ns1' not found. Ensure that the CRD is already applied.");
	assert_string_equal(sget(cond(out, "Stopped"), "reason"), "NotAvailable");
	/* Hive times: any change resets both, no change keeps both */
	old = json_deep_copy(out);
	json_array_foreach(old, i, y) {
		json_object_set_new(y, "lastTransitionTime", json_string("T0"));
		json_object_set_new(y, "lastProbeTime", json_string("T1"));
	}
	json_object_set_new((json_t *)cond(old, "Stopped"), "message", json_string("other"));
	json_array_remove(old, 3);
	aci_conditions_merge_times(out, old, "NOW");
	assert_string_equal(sget(cond(out, "SpecSynced"), "lastTransitionTime"), "T0");
	assert_string_equal(sget(cond(out, "SpecSynced"), "lastProbeTime"), "T1");
	assert_string_equal(sget(cond(out, "Stopped"), "lastTransitionTime"), "NOW");
	assert_string_equal(sget(cond(out, "Stopped"), "lastProbeTime"), "NOW");
	assert_string_equal(sget(cond(out, "Completed"), "lastTransitionTime"), "NOW");
	json_decref(out);
	json_decref(old);
	/* the status mirror */
	c = mkcluster(READY_CLUSTER, "{'status':'installing','status_info':'Installation in progress','progress':{'total_percentage':37},'validations_info':'{\\'network\\':[]}'}");
	out = aci_status_from_cluster(c);
	assert_string_equal(sget(json_object_get(out, "debugInfo"), "state"), "installing");
	assert_string_equal(sget(json_object_get(out, "debugInfo"), "stateInfo"), "Installation in progress");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(out, "progress"), "totalPercentage")), 37);
	assert_string_equal(sget(out, "platformType"), "BareMetal");
	assert_string_equal(sget(out, "apiVIP"), "192.168.1.100");
	assert_string_equal(json_string_value(json_array_get(json_object_get(out, "ingressVIPs"), 0)), "192.168.1.101");
	assert_string_equal(sget(json_array_get(json_object_get(out, "machineNetwork"), 0), "cidr"), "192.168.1.0/24");
	assert_true(json_is_object(json_object_get(out, "validationsInfo")));
	json_decref(out);
	json_decref(c);
}

/* Registration of an installed cluster (kubeapi.md §4.3 step 3, surprise 10). */
static void test_import_day2(void **state)
{
	static const struct {
		const char *name, *cd, *aci;
		bool installed;
		const char *ocp_id;
	} rows[] = {
		{ "day-1", "{'spec':{'clusterName':'c','baseDomain':'ex.com'}}", "{'spec':{}}", false, "" },
		{ "CD installed", "{'spec':{'installed':true,'clusterMetadata':{'clusterID':'cd-id'}}}", "{'spec':{}}", true,
		  "cd-id" },
		{ "CD installed, ACI metadata wins",
		  "{'spec':{'installed':true,'clusterMetadata':{'clusterID':'cd-id'}}}",
		  "{'spec':{'clusterMetadata':{'clusterID':'aci-id'}}}", true, "aci-id" },
		{ "ACI completed", "{'spec':{}}",
		  "{'spec':{},'status':{'conditions':[{'type':'Completed','status':'True','reason':'InstallationCompleted'}]}}",
		  true, "" },
		{ "ACI completed with another reason", "{'spec':{}}",
		  "{'spec':{},'status':{'conditions':[{'type':'Completed','status':'True','reason':'InstallationFailed'}]}}",
		  false, "" },
		{ "ACI not completed", "{'spec':{'installed':false}}",
		  "{'spec':{},'status':{'conditions':[{'type':'Completed','status':'False','reason':'InstallationCompleted'}]}}",
		  false, "" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *cd = J(rows[i].cd), *aci = J(rows[i].aci);
		json_t *m = J("{'name':'imp','base_dns_domain':'hive.example.com','kind':'Cluster'}");

		if (cluster_crs_installed(cd, aci) != rows[i].installed)
			fail_msg("%s: installed %d", rows[i].name, !rows[i].installed);
		cluster_import_day2(m, cd, aci, 1700000000);
		assert_string_equal(sget(m, "kind"), "AddHostsCluster");
		assert_string_equal(sget(m, "status"), "adding-hosts");
		assert_string_equal(sget(m, "status_info"), CLUSTER_INFO_ADDING_HOSTS);
		assert_string_equal(sget(m, "api_vip_dnsname"), "api.imp.hive.example.com");
		assert_string_equal(sget(m, "openshift_cluster_id"), rows[i].ocp_id);
		assert_int_equal(json_integer_value(json_object_get(m, "status_updated_at")), 1700000000);
		json_decref(m);
		json_decref(cd);
		json_decref(aci);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_day2),
		cmocka_unit_test(test_model_sno),
		cmocka_unit_test(test_model_ha),
		cmocka_unit_test(test_model_errors),
		cmocka_unit_test(test_release_from_image),
		cmocka_unit_test(test_validations),
		cmocka_unit_test(test_validation_free_addresses),
		cmocka_unit_test(test_refresh_rules),
		cmocka_unit_test(test_refresh_effects),
		cmocka_unit_test(test_transitions),
		cmocka_unit_test(test_transition_fields),
		cmocka_unit_test(test_progress),
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_assign_roles),
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_aci_conditions),
		cmocka_unit_test(test_aci_conditions_special),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
