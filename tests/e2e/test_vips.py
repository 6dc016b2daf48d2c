"""VIP verification of a multi-node BareMetal cluster (backend.md §4, §7.5):
the hub sends verify-vips to the cluster's hosts, their verdicts (a VIP is
free when nobody answers ARP for it) go to the cluster, and the
api-vips-valid / ingress-vips-valid validations follow.  Driven with the
simulator, whose hosts answer as an ARP probe would: the gateway and the
fleet's own addresses are taken, the rest of the subnet is free."""
import pytest

from conftest import wait_for
from test_install import NS, SUBNET, Sim, agents, conds_of, infraenv, setup_common

API_VIP = "192.168.126.100"
INGRESS_VIP = "192.168.126.101"


@pytest.fixture
def vhub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def baremetal(hub, name, api_vips, ingress_vips):
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"baseDomain": "hive.example.com", "clusterName": name,
                            "clusterInstallRef": {"group": "extensions.hive.openshift.io",
                                                  "kind": "AgentClusterInstall", "name": name,
                                                  "version": "v1beta1"},
                            "platform": {"agentBareMetal": {"agentSelector": {}}},
                            "pullSecretRef": {"name": "pull-secret"}}})
    hub.apply_obj({"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"clusterDeploymentRef": {"name": name},
                            "imageSetRef": {"name": "openshift-v4.9.0"},
                            "platformType": "BareMetal",
                            "apiVIPs": api_vips, "ingressVIPs": ingress_vips,
                            "networking": {"userManagedNetworking": False,
                                           "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                           "machineNetwork": [{"cidr": SUBNET}],
                                           "serviceNetwork": ["172.30.0.0/16"]},
                            "provisionRequirements": {"controlPlaneAgents": 3}}})


def validation(hub, name, vid):
    info = hub.kubectl_json("-n", NS, "get", "aci", name).get("status", {}).get("validationsInfo", {})
    for v in info.get("network", []):
        if v["id"] == vid:
            return v
    return None


def test_vips_in_the_machine_network_are_verified_and_the_cluster_installs(vhub, tmp_path, sims):
    hub = vhub
    setup_common(hub)
    baremetal(hub, "bm", [API_VIP], [INGRESS_VIP])
    ie = infraenv(hub, "bm-ie", "bm", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=3, seed=5))

    def verified():
        a, i = validation(hub, "bm", "api-vips-valid"), validation(hub, "bm", "ingress-vips-valid")
        return a and i and a["status"] == "success" and i["status"] == "success" and (a, i)
    a, i = wait_for(verified, timeout=120, what="api-vips-valid and ingress-vips-valid success")
    assert a["message"] == f"api vips {API_VIP} belongs to the Machine CIDR and is not in use.", a
    assert i["message"] == f"ingress vips {INGRESS_VIP} belongs to the Machine CIDR and is not in use.", i

    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/bm", "--timeout=180s", timeout=200)
    aci = hub.kubectl_json("-n", NS, "get", "aci", "bm")
    c = conds_of(aci)
    assert c["Completed"]["reason"] == "InstallationCompleted", c
    assert aci["status"]["apiVIPs"] == [API_VIP] and aci["status"]["ingressVIPs"] == [INGRESS_VIP]
    assert aci["status"]["userManagedNetworking"] is False
    assert aci["status"]["platformType"] == "BareMetal"
    items = agents(hub)
    assert sorted(x["status"]["role"] for x in items) == ["master", "master", "master"]
    assert all(x["status"]["debugInfo"]["state"] == "installed" for x in items)


def test_vip_outside_the_machine_network_or_in_use_fails_validation(vhub, tmp_path, sims):
    hub = vhub
    setup_common(hub)
    # The API VIP is off the machine network; the ingress VIP is the first
    # simulated host's own address, so it answers ARP.
    baremetal(hub, "bad", ["10.0.0.5"], ["192.168.126.10"])
    ie = infraenv(hub, "bad-ie", "bad", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=3, seed=5))

    def failing():
        a, i = validation(hub, "bad", "api-vips-valid"), validation(hub, "bad", "ingress-vips-valid")
        # "not verified yet" (also a failure) until a host's verdict arrives.
        return (a and i and a["status"] == "failure" and i["status"] == "failure" and
                "already in use" in i["message"] and (a, i))
    a, i = wait_for(failing, timeout=120, what="api-vips-valid and ingress-vips-valid failure")
    assert a["message"] == f"api vips <10.0.0.5> does not belong to machine-network-cidr <{SUBNET}>", a
    assert i["message"] == f"ingress vips <192.168.126.10> is already in use in cidr {SUBNET}", i

    # All three hosts are ready, yet the cluster cannot be installed.
    wait_for(lambda: all(x.get("status", {}).get("debugInfo", {}).get("state") == "known"
                         for x in agents(hub)) and len(agents(hub)) == 3,
             timeout=120, what="3 known hosts")
    aci = hub.kubectl_json("-n", NS, "get", "aci", "bad")
    assert aci["status"]["debugInfo"]["state"] == "insufficient", aci["status"]["debugInfo"]
    c = conds_of(aci)
    assert c["Completed"]["reason"] == "InstallationNotStarted", c
    assert c["Validated"]["status"] == "False", c
