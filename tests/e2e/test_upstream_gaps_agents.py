"""Agents as upstream's kube-API scenarios expect them (issue 19, "Agents").

Hosts are driven with upstream's agent JSON (upstream_agent.py).  Covered:
status.debugInfo.eventsURL on every Agent (upstream "Check that Agent Event
URL is valid": /v2/events...host_id=<id>, answering a non-empty event
list); the InfraEnv label put back when a user removes it; spec.nodeLabels
validated as Kubernetes label keys and values ("deploy CD with ACI and agents
with node labels": SpecSynced True for good labels, False for a key with two
slashes, the good labels staying applied)."""
import json
import ssl
import urllib.request

from conftest import wait_for
from test_install import NS, cluster_deployment, conds_of, infraenv, setup_common
from test_upstream_gaps_protocol import umn_aci_without_machine_network, why_not
from upstream_agent import UpstreamAgent

LABEL_IE = "infraenvs.agent-install.openshift.io"


def registered_agent(hub, name="ag"):
    setup_common(hub)
    hub.apply_obj(cluster_deployment(name, f"{name}-aci"))
    hub.apply_obj(umn_aci_without_machine_network(f"{name}-aci", name))
    ie = infraenv(hub, f"{name}-ie", name)
    host = UpstreamAgent(hub, ie, 0)
    host.register()
    host.step()
    return ie, host


def agent(hub, host):
    return hub.kubectl_json("-n", NS, "get", "agent", host.id)


def test_every_agent_has_a_working_events_url(hub):
    _, host = registered_agent(hub)

    def url():
        return agent(hub, host).get("status", {}).get("debugInfo", {}).get("eventsURL")
    u = wait_for(url, timeout=30, what="the Agent's eventsURL")
    assert "/v2/events" in u and f"host_id={host.id}" in u, u
    ctx = ssl.create_default_context(cafile=str(hub.ca_path))
    with urllib.request.urlopen(u, context=ctx, timeout=15) as r:
        events = json.loads(r.read())
    assert isinstance(events, list) and events, events
    assert all(e.get("host_id") == host.id for e in events), events
    # Set once: the next passes leave it as it is.
    host.step()
    assert url() == u


def test_infraenv_label_is_put_back(hub):
    ie, host = registered_agent(hub)
    wait_for(lambda: agent(hub, host)["metadata"].get("labels", {}).get(LABEL_IE), timeout=30,
             what="the InfraEnv label")
    hub.kubectl("-n", NS, "label", "agent", host.id, f"{LABEL_IE}-")

    def back():
        a = agent(hub, host)
        return a["metadata"].get("labels", {}).get(LABEL_IE) == ie["metadata"]["name"] and a
    a = wait_for(back, timeout=30, what="the InfraEnv label put back")
    refs = [r for r in a["metadata"]["ownerReferences"] if r["kind"] == "InfraEnv"]
    assert [r["uid"] for r in refs] == [ie["metadata"]["uid"]], refs


def test_node_labels_are_validated(hub):
    _, host = registered_agent(hub)
    good = {"first-label": "first-value", "second-label": "second-value", "label-with/slash": "blah"}
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": good}}))

    def synced(status):
        def f():
            c = conds_of(agent(hub, host)).get("SpecSynced")
            return c if c and c["status"] == status else None
        return f
    wait_for(synced("True"), timeout=30, what="SpecSynced True with good labels")

    bad = dict(good, **{"label/with/two-slashes": ""})
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": bad}}))
    c = wait_for(synced("False"), timeout=30, what="SpecSynced False with a bad label")
    assert c["reason"] == "InputError", c
    assert c["message"].startswith("The Spec could not be synced due to an input error: node_labels: Invalid value: "
                                   "\"label/with/two-slashes\": a qualified name must consist of alphanumeric "
                                   "characters"), c
    assert agent(hub, host)["spec"]["nodeLabels"] == bad
    # Fixed again: synced.
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": {"label/with/two-slashes": None}}}))
    wait_for(synced("True"), timeout=30, what="SpecSynced True once the bad label is gone")


def classification(name, key, value, query):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "AgentClassification",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"labelKey": key, "labelValue": value, "query": query}}


def test_agent_classification(hub):
    """Upstream "Agent labels": a classification's query against the Agent's
    inventory sets agentclassification.agent-install.openshift.io/<key>; its
    status counts matches and query errors; its finalizer holds a deletion
    until no Agent carries its label."""
    _, host = registered_agent(hub)
    wait_for(lambda: agent(hub, host).get("status", {}).get("inventory", {}).get("cpu"), timeout=30,
             what="the Agent's inventory")
    gib = 1 << 30
    hub.apply_obj(classification("xxl", "size", "xxl",
                                 f".cpu.count == 8 and .memory.physicalBytes >= {31 * gib} and "
                                 f".memory.physicalBytes < {33 * gib}"))
    hub.apply_obj(classification("small", "small", "yes", ".cpu.count < 4"))
    hub.apply_obj(classification("broken", "broken", "yes", '.cpu.count + "a"'))

    def labelled():
        labels = agent(hub, host)["metadata"].get("labels", {})
        return labels if "agentclassification.agent-install.openshift.io/broken" in labels and \
            "agentclassification.agent-install.openshift.io/size" in labels else None
    labels = wait_for(labelled, timeout=30, what="the classification labels")
    assert labels["agentclassification.agent-install.openshift.io/size"] == "xxl", labels
    assert labels["agentclassification.agent-install.openshift.io/broken"] == "QUERYERROR-yes", labels
    assert "agentclassification.agent-install.openshift.io/small" not in labels, labels

    def status_of(name, pred):
        def f():
            c = hub.kubectl_json("-n", NS, "get", "agentclassification", name)
            return c if pred(c) else None
        return wait_for(f, timeout=30, what=f"the status of {name}")
    xxl = status_of("xxl", lambda c: c.get("status", {}).get("matchedCount") == 1)
    assert "agentclassification.agent-install.openshift.io" in xxl["metadata"]["finalizers"], xxl
    q = conds_of(xxl)["QueryErrors"]
    assert (q["status"], q["reason"], q["message"]) == \
        ("False", "NoQueryErrors", "No Agents failed to apply the classification"), q
    broken = status_of("broken", lambda c: c.get("status", {}).get("errorCount") == 1)
    q = conds_of(broken)["QueryErrors"]
    assert (q["status"], q["reason"], q["message"]) == \
        ("True", "HasQueryErrors", "1 Agents failed to apply the classification"), q
    small = status_of("small", lambda c: "QueryErrors" in conds_of(c))
    assert "matchedCount" not in small["status"] and "errorCount" not in small["status"], small

    # Deleting: the label goes, then the finalizer, then the object.
    hub.kubectl("-n", NS, "delete", "agentclassification", "xxl", "--wait=false")
    wait_for(lambda: "agentclassification.agent-install.openshift.io/size" not in
             agent(hub, host)["metadata"].get("labels", {}), timeout=30, what="the size label removed")
    wait_for(lambda: hub.kubectl("-n", NS, "get", "agentclassification", "xxl", check=False).returncode != 0,
             timeout=30, what="the classification gone")


SNO_STAGES = ["Starting installation", "Installing", "Waiting for bootkube", "Writing image to disk",
              "Rebooting", "Joined", "Done"]


def install_sno(hub, name, tweak=None):
    """A None-platform SNO installed by an UpstreamAgent; returns (ie, host)."""
    setup_common(hub)
    hub.apply_obj(cluster_deployment(name, f"{name}-aci"))
    aci = umn_aci_without_machine_network(f"{name}-aci", name, cp=1)
    aci["spec"]["networking"]["machineNetwork"] = [{"cidr": "192.168.126.0/24"}]
    if tweak:
        tweak(aci)
    hub.apply_obj(aci)
    ie = infraenv(hub, f"{name}-ie", name, auto_approve=True)
    host = UpstreamAgent(hub, ie, 0)
    host.register()

    def installing():
        host.step()
        return host.get_host()["status"] in ("installing", "installing-in-progress")
    wait_for(installing, timeout=120, interval=0.3, what="the SNO install to start")
    for stage in SNO_STAGES:
        status, body = host.progress(stage)
        assert status == 200, (stage, status, body)
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{name}-aci", "--timeout=120s", timeout=140)
    return ie, host


def test_sno_debug_info_after_install(hub):
    """Upstream "SNO deploy clusterDeployment full install and validate
    MetaData": once installed the ACI reads adding-hosts / "Cluster is
    installed" and the Agent installed / "Done"."""
    _, host = install_sno(hub, "sno")

    def aci_dbg():
        d = hub.kubectl_json("-n", NS, "get", "aci", "sno-aci")["status"]["debugInfo"]
        return d if (d.get("state"), d.get("stateInfo")) == ("adding-hosts", "Cluster is installed") else None
    try:
        wait_for(aci_dbg, timeout=60, what="ACI adding-hosts / Cluster is installed")
    except BaseException:
        raise AssertionError(hub.kubectl_json("-n", NS, "get", "aci", "sno-aci")["status"]["debugInfo"])
    d = agent(hub, host)["status"]["debugInfo"]
    assert (d["state"], d["stateInfo"]) == ("installed", "Done"), d


def test_manifests_configmap_delete_and_recreate(hub):
    """Upstream "ConfigMap delete and recreate triggers re-validation of
    custom manifests": a Cilium SNO held before install needs its manifests
    ConfigMap; Validated fails while it is missing and the cluster is ready
    while it is there."""
    setup_common(hub)
    hub.apply_obj(cluster_deployment("cni", "cni-aci"))
    aci = umn_aci_without_machine_network("cni-aci", "cni", cp=1)
    aci["spec"]["networking"]["machineNetwork"] = [{"cidr": "192.168.126.0/24"}]
    aci["spec"]["networking"]["networkType"] = "Cilium"
    aci["spec"]["manifestsConfigMapRefs"] = [{"name": "cni-manifests"}]
    aci["spec"]["holdInstallation"] = True
    hub.apply_obj(aci)
    ie = infraenv(hub, "cni-ie", "cni", auto_approve=True)
    host = UpstreamAgent(hub, ie, 0)
    host.register()

    def cond(ctype, reason):
        def f():
            host.step()
            c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", "cni-aci")).get(ctype)
            return c if c and c["reason"] == reason else None
        return f
    wait_for(lambda: host.step() or agent(hub, host).get("status", {}).get("inventory", {}).get("cpu"),
             timeout=30, interval=0.3, what="the inventory")
    wait_for(cond("Validated", "ValidationsFailing"), timeout=60, interval=0.3, what="Validated failing without it")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cni-manifests", "namespace": NS},
          "data": {"cilium-ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: cilium\n"}}
    hub.apply_obj(cm)
    try:
        wait_for(cond("RequirementsMet", "ClusterIsReady"), timeout=60, interval=0.3,
                 what="ready (held) with the ConfigMap")
    except BaseException:
        raise AssertionError(why_not(hub, "cni-aci"))
    hub.kubectl("-n", NS, "delete", "configmap", "cni-manifests")
    wait_for(cond("Validated", "ValidationsFailing"), timeout=60, interval=0.3, what="Validated failing once deleted")
    hub.apply_obj(cm)
    wait_for(cond("RequirementsMet", "ClusterIsReady"), timeout=60, interval=0.3, what="ready again once recreated")


def test_ignition_endpoint_for_day2_hosts(hub):
    """Upstream "deploy CD with ACI and agents with ignitionEndpoint": the
    ACI's ignitionEndpoint (URL and caCertificateReference) is where a day-2
    host fetches its ignition: the api-vip-connectivity-check it is given
    names <url>/<pool> and carries the CA."""
    ca = ("-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUTest0CertificateForIgnitionEndpoint0wCgYIKoZIzj0EAwIw\n"
          "-----END CERTIFICATE-----\n")

    def tweak(aci):
        hub.apply_obj({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ca-certificate", "namespace": NS},
                       "stringData": {"tls.crt": ca}})
        aci["spec"]["ignitionEndpoint"] = {"url": "https://example.com",
                                           "caCertificateReference": {"namespace": NS, "name": "ca-certificate"}}
    ie, first = install_sno(hub, "ign", tweak)
    day2 = UpstreamAgent(hub, ie, 1)
    day2.register()
    got = {}

    def vip_check():
        _, steps = day2.call("GET", day2.base + "/instructions", expect=(200,))
        for ins in steps.get("instructions") or []:
            if ins["step_type"] == "api-vip-connectivity-check":
                got.update(json.loads(ins["args"][-1]))
                return True
        day2.step()
        return False
    wait_for(vip_check, timeout=90, interval=0.3, what="the day-2 host's api-vip-connectivity-check")
    assert got["url"] == "https://example.com/worker", got
    assert got.get("ca_certificate") == ca, got


def test_move_agent_to_another_cluster_deployment(hub):
    """Upstream "Move agent to different CD Unbind/bind": changing a bound
    Agent's CD reference unbinds the host (unbinding), its next registration
    binds it to the new cluster (binding), and it ends known there."""
    setup_common(hub)
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "pool", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/pool", "--timeout=30s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "pool")
    host = UpstreamAgent(hub, ie, 0)
    host.register()
    host.step()

    def sno(name):
        hub.apply_obj(cluster_deployment(name, f"{name}-aci"))
        aci = umn_aci_without_machine_network(f"{name}-aci", name, cp=1)
        aci["spec"]["networking"]["machineNetwork"] = [{"cidr": "192.168.126.0/24"}]
        hub.apply_obj(aci)

        def cid():
            url = hub.kubectl_json("-n", NS, "get", "aci", f"{name}-aci").get("status", {}).get(
                "debugInfo", {}).get("eventsURL", "")
            return url.split("cluster_id=")[1] if "cluster_id=" in url else None
        return wait_for(cid, timeout=30, what=f"cluster {name}")
    src = sno("source")
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"clusterDeploymentName": {"name": "source", "namespace": NS}}}))

    def state(want):
        def f():
            host.step()
            return agent(hub, host).get("status", {}).get("debugInfo", {}).get("state") == want
        return f
    wait_for(state("binding"), timeout=30, interval=0.3, what="binding to the source")
    host.register()
    wait_for(lambda: host.step() is not None and host.get_host().get("cluster_id") == src, timeout=30,
             interval=0.3, what="bound to the source")
    dst = sno("target")
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"clusterDeploymentName": {"name": "target", "namespace": NS}}}))
    wait_for(state("unbinding"), timeout=60, interval=0.3, what="unbinding")
    host.register()
    seen = []

    # The host returns to the pool, binds to the target (binding waits for
    # its next registration, as a reboot into the discovery image gives),
    # and ends known there.
    def rebound():
        host.step()
        st = agent(hub, host).get("status", {}).get("debugInfo", {}).get("state")
        if st and (not seen or seen[-1] != st):
            seen.append(st)
        if st == "binding":
            host.register()
        return st == "known" and host.get_host().get("cluster_id") == dst
    try:
        wait_for(rebound, timeout=150, interval=0.3, what="known in the target")
    except BaseException:
        a = agent(hub, host)
        raise AssertionError(f"states seen {seen}; host {host.get_host()}; "
                             f"conditions {a.get('status', {}).get('conditions')}")
    assert "binding" in seen, seen
    assert host.get_host()["cluster_id"] == dst
    a = agent(hub, host)
    assert a["metadata"]["labels"][LABEL_IE] == "pool" and a["spec"]["clusterDeploymentName"]["name"] == "target"
