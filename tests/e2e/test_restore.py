"""Restore by Agent (issue 19): hub backup and restore as ACM does it.

Upstream's "restore Host by Agent flow": an Agent replayed from a backup,
with no host behind it, brings its host back from what the Agent carries
(the infraenvs label, spec.role and spec.clusterDeploymentName, and the
agent.agent-install.openshift.io/state and /role annotations the agent
controller keeps on every Agent): the host's status is the saved state, its
role and suggested role the saved role, and it is bound to the Agent's
cluster or unbound without one.  Checked through the agent API (GET host)
and the Agent's status."""
import json
import uuid

from conftest import wait_for
from test_install import NS, cluster_deployment, infraenv, setup_common
from test_upstream_gaps_protocol import umn_aci_without_machine_network
from upstream_agent import UpstreamAgent

ANN_STATE = "agent.agent-install.openshift.io/state"
ANN_ROLE = "agent.agent-install.openshift.io/role"


def restored_agent(hub, ie_name, name, state, role="master", cd=None):
    spec = {"approved": True, "role": role}
    if cd:
        spec["clusterDeploymentName"] = {"name": cd, "namespace": NS}
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
                   "metadata": {"name": name, "namespace": NS,
                                "labels": {"infraenvs.agent-install.openshift.io": ie_name},
                                "annotations": {ANN_STATE: state, ANN_ROLE: role}},
                   "spec": spec})


def sno_aci(name, cd):
    aci = umn_aci_without_machine_network(name, cd, cp=1)
    aci["spec"]["networking"]["machineNetwork"] = [{"cidr": "192.168.126.0/24"}]
    return aci


def agent_synced(hub, name, state):
    def f():
        a = hub.kubectl_json("-n", NS, "get", "agent", name)
        return a if a.get("status", {}).get("debugInfo", {}).get("state") == state else None
    try:
        return wait_for(f, timeout=30, what=f"the Agent's status {state}")
    except BaseException:
        raise AssertionError(hub.kubectl_json("-n", NS, "get", "agent", name).get("status"))


def host_view(hub, ie, host_id):
    h = UpstreamAgent(hub, ie, 0, host_id=host_id)
    status, body = h.call("GET", h.base)
    return body if status == 200 else None


def test_every_agent_keeps_the_restore_annotations(hub):
    setup_common(hub)
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "pool", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/pool", "--timeout=30s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "pool")
    host = UpstreamAgent(hub, ie, 0)
    host.register()
    host.step()

    def annotated():
        a = hub.kubectl_json("-n", NS, "get", "agent", host.id)["metadata"].get("annotations", {})
        return a if a.get(ANN_STATE) == host.get_host()["status"] and ANN_ROLE in a else None
    a = wait_for(annotated, timeout=30, what="the state and role annotations")
    assert a[ANN_ROLE] == "auto-assign", a


def test_restore_bound_host(hub):
    setup_common(hub)
    hub.apply_obj(cluster_deployment("rb", "rb-aci"))
    hub.apply_obj(sno_aci("rb-aci", "rb"))
    ie = infraenv(hub, "rb-ie", "rb")
    hid = str(uuid.uuid4())
    restored_agent(hub, "rb-ie", hid, "installed", cd="rb")

    def restored():
        h = host_view(hub, ie, hid)
        return h if h and h.get("status") == "installed" and h.get("cluster_id") else None
    h = wait_for(restored, timeout=30, what="the bound host restored")
    assert h["role"] == "master", h
    assert h["infra_env_id"] == ie["metadata"]["uid"], h
    a = agent_synced(hub, hid, "installed")
    assert a["status"]["role"] == "master", a["status"]
    assert a["spec"]["clusterDeploymentName"]["name"] == "rb", a["spec"]


def test_restore_unbound_host(hub):
    setup_common(hub)
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "ru-ie", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/ru-ie", "--timeout=30s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "ru-ie")
    hid = str(uuid.uuid4())
    restored_agent(hub, "ru-ie", hid, "known-unbound")

    def restored():
        h = host_view(hub, ie, hid)
        return h if h and h.get("status") == "known-unbound" else None
    h = wait_for(restored, timeout=30, what="the unbound host restored")
    assert "cluster_id" not in h, h
    assert h["role"] == "master", h
    a = agent_synced(hub, hid, "known-unbound")
    assert a["status"]["role"] == "master", a["status"]
    assert json.dumps(a["metadata"]["ownerReferences"]).count(ie["metadata"]["uid"]) == 1, a["metadata"]


def test_restored_unbound_host_binds_to_installed_cluster(hub):
    from test_import import imported
    setup_common(hub)
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "late", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/late", "--timeout=30s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "late")
    hid = str(uuid.uuid4())
    restored_agent(hub, "late", hid, "known-unbound")
    wait_for(lambda: (host_view(hub, ie, hid) or {}).get("status") == "known-unbound", timeout=30,
             what="the unbound host restored")
    imported(hub, "inst")
    hub.kubectl("-n", NS, "patch", "agent", hid, "--type", "merge", "-p",
                json.dumps({"spec": {"clusterDeploymentName": {"name": "inst", "namespace": NS}}}))
    h = wait_for(lambda: (host_view(hub, ie, hid) or {}).get("cluster_id") and host_view(hub, ie, hid),
                 timeout=30, what="the restored host bound")
    assert h["cluster_id"], h


def test_installed_cluster_with_restored_host_accepts_day2_hosts(hub):
    from test_import import imported
    setup_common(hub)
    imported(hub, "inst")
    ie = infraenv(hub, "inst-ie", "inst")
    hid = str(uuid.uuid4())
    restored_agent(hub, "inst-ie", hid, "installed", cd="inst")
    wait_for(lambda: (host_view(hub, ie, hid) or {}).get("status") == "installed", timeout=30,
             what="the installed host restored")
    aci = hub.kubectl_json("-n", NS, "get", "aci", "inst")
    assert aci["status"]["debugInfo"]["state"] == "adding-hosts", aci["status"]["debugInfo"]

    day2 = UpstreamAgent(hub, ie, 1)
    day2.register()
    hub.kubectl("-n", NS, "patch", "agent", day2.id, "--type", "merge", "-p", '{"spec":{"approved":true}}')

    def installing():
        day2.step()
        a = hub.kubectl_json("-n", NS, "get", "agent", day2.id)
        c = {x["type"]: x for x in a.get("status", {}).get("conditions", [])}
        return c if c.get("Installed", {}).get("reason") == "InstallationInProgress" else None
    c = wait_for(installing, timeout=120, interval=0.3, what="the day-2 host installing")
    assert c["RequirementsMet"]["reason"] == "AgentAlreadyInstalling", c
    assert c["SpecSynced"]["reason"] == "SyncOK", c
    assert c["Validated"]["reason"] == "ValidationsPassing", c
    assert a_kind(hub, day2.id) == "AddToExistingClusterHost"


def a_kind(hub, name):
    return hub.kubectl_json("-n", NS, "get", "agent", name)["status"]["kind"]
