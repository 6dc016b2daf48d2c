"""Importing an already-installed cluster (kubeapi.md §4.3 step 3, surprise
10): a ClusterDeployment with spec.installed=true and its AgentClusterInstall
register a day-2 cluster (AddHostsCluster, adding-hosts) with no day-1
install; hosts booted from its InfraEnv join it as day-2 workers and end
added-to-existing-cluster."""

from conftest import wait_for
from test_install import NS, SUBNET, Sim, agents, aci_state, conds_of, infraenv, setup_common

CLUSTER_ID = "3a3e4c1c-6a7f-4f0c-9b7e-2f9d0c8e1a55"


def imported(hub, name, with_imageset=True, completed_only=False):
    hub.kubectl("-n", NS, "create", "secret", "generic", f"{name}-admin-kubeconfig",
                "--from-literal=kubeconfig=apiVersion: v1\nkind: Config\n")
    cd = {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
          "metadata": {"name": name, "namespace": NS},
          "spec": {"baseDomain": "hive.example.com", "clusterName": name,
                   "installed": True,
                   "clusterMetadata": {"clusterID": CLUSTER_ID, "infraID": "imported-infra",
                                       "adminKubeconfigSecretRef": {"name": f"{name}-admin-kubeconfig"}},
                   "clusterInstallRef": {"group": "extensions.hive.openshift.io",
                                         "kind": "AgentClusterInstall", "name": name, "version": "v1beta1"},
                   "platform": {"agentBareMetal": {"agentSelector": {}}},
                   "pullSecretRef": {"name": "pull-secret"}}}
    aci = {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
           "metadata": {"name": name, "namespace": NS},
           "spec": {"clusterDeploymentRef": {"name": name},
                    "platformType": "None",
                    "networking": {"userManagedNetworking": True,
                                   "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                   "machineNetwork": [{"cidr": SUBNET}],
                                   "serviceNetwork": ["172.30.0.0/16"]},
                    "provisionRequirements": {"controlPlaneAgents": 3}}}
    if with_imageset:
        aci["spec"]["imageSetRef"] = {"name": "openshift-v4.9.0"}
    hub.apply_obj(cd)
    hub.apply_obj(aci)


def test_installed_cluster_deployment_is_imported_as_day2(hub_factory, tmp_path, sims):
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    # No imageSetRef: an installed cluster does not need one (§4.3 step 2).
    imported(hub, "imp", with_imageset=False)

    wait_for(lambda: aci_state(hub, "imp") == "adding-hosts", timeout=30, what="imported cluster adding-hosts")
    aci = hub.kubectl_json("-n", NS, "get", "aci", "imp")
    c = conds_of(aci)
    assert c["SpecSynced"]["status"] == "True", c
    assert aci["status"]["debugInfo"]["stateInfo"] == "cluster is adding hosts to existing OCP cluster"
    assert c["Completed"]["status"] == "True" and c["Completed"]["reason"] == "InstallationCompleted", c
    assert c["Completed"]["message"] == ("The installation has completed: "
                                         "cluster is adding hosts to existing OCP cluster"), c
    assert c["Stopped"]["reason"] == "InstallationCompleted", c
    assert c["Failed"]["status"] == "False", c
    # Imported, not installed here: no day-1 credentials are minted.
    r = hub.kubectl("-n", NS, "get", "secret", "imp-admin-password", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr, r.stderr
    cd = hub.kubectl_json("-n", NS, "get", "cd", "imp")
    assert cd["spec"]["installed"] is True
    assert cd["spec"]["clusterMetadata"]["clusterID"] == CLUSTER_ID

    # A host from the cluster's InfraEnv joins as a day-2 worker.
    ie = infraenv(hub, "imp-ie", "imp", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=9))

    def added():
        items = agents(hub)
        if len(items) != 1:
            return None
        a = items[0]
        return a if a.get("status", {}).get("debugInfo", {}).get("state") == "added-to-existing-cluster" else None
    a = wait_for(added, timeout=120, what="added-to-existing-cluster")
    assert a["status"]["kind"] == "AddToExistingClusterHost", a["status"]
    assert a["status"]["role"] == "worker"
    assert a["spec"]["clusterDeploymentName"] == {"name": "imp", "namespace": NS}
    ac = conds_of(a)
    assert ac["Installed"]["status"] == "True", ac
    assert aci_state(hub, "imp") == "adding-hosts"

    # A restarted hub finds the same day-2 cluster.
    hub.restart()
    wait_for(lambda: hub.readyz(), timeout=20, what="hub ready")
    assert aci_state(hub, "imp") == "adding-hosts"
