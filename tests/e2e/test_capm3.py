"""In place of CAPM3: Metal3Cluster status, a Metal3Machine choosing a free
BareMetalHost (every filter CAPM3 applies), the fields it writes on the host,
waiting when none is free, the metaData Secret its Metal3DataTemplate renders,
and the release that deprovisions the host and frees it for the next
Metal3Machine.  The hosts are the simulator's machines behind their simulated
BMCs (`agenthub-agent simulate --bmc`), registered by the hub's BMH controller;
the Cluster and Machine that CAPI core would write are written by hand."""
import base64
import json

import pytest
import yaml

from conftest import wait_for
from test_bmcsim import Bmc

NS = "capm3"
CLUSTER = "c1"
IMAGE = {"url": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2",
         "checksum": "https://rhcos.example.com/rhcos-4.19-x86_64-metal.x86_64.qcow2.sha256",
         "checksumType": "sha256", "format": "qcow2"}
INFRA = "infrastructure.cluster.x-k8s.io/v1beta1"


def get(hub, kind, name):
    return hub.kubectl_json("-n", NS, "get", kind, name)


def exists(hub, kind, name):
    return hub.kubectl("-n", NS, "get", kind, name, "--ignore-not-found", "-o", "name").stdout.strip() != ""


def bmhs(hub):
    return {b["metadata"]["name"]: b for b in hub.kubectl_json("-n", NS, "get", "baremetalhosts")["items"]}


def state(b):
    return b.get("status", {}).get("provisioning", {}).get("state", "")


def cond(obj, t, v2=True):
    st = obj.get("status", {})
    lst = st.get("v1beta2", {}).get("conditions", []) if v2 else st.get("conditions", [])
    return next((c for c in lst if c["type"] == t), None)


def apply(hub, obj):
    hub.kubectl("apply", "-f", "-", input=json.dumps(obj))


def patch_status(hub, kind, name, status):
    hub.kubectl("-n", NS, "patch", kind, name, "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": status}))


def make_cluster(hub, endpoint=True):
    apply(hub, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                "metadata": {"name": CLUSTER, "namespace": NS},
                "spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                               "kind": "Metal3Cluster", "name": CLUSTER}}})
    cl = get(hub, "clusters.cluster.x-k8s.io", CLUSTER)
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Cluster",
                "metadata": {"name": CLUSTER, "namespace": NS,
                             "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                                                  "name": CLUSTER, "uid": cl["metadata"]["uid"]}]},
                "spec": dict({"noCloudProvider": True},
                             **({"controlPlaneEndpoint": {"host": "c1.lab.home", "port": 6443}} if endpoint else {}))})
    return cl


def make_machine(hub, name, dsn="bootstrap-data", selector=None, template="m3dt"):
    """A Machine (as CAPI core would write it) and its Metal3Machine."""
    apply(hub, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": dsn, "namespace": NS},
                "stringData": {"value": "{}", "format": "ignition"}})
    apply(hub, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                "metadata": {"name": name, "namespace": NS, "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER}},
                "spec": {"clusterName": CLUSTER, "bootstrap": {"dataSecretName": dsn},
                         "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                               "kind": "Metal3Machine", "name": name}}})
    m = get(hub, "machines.cluster.x-k8s.io", name)
    spec = {"image": IMAGE, "automatedCleaningMode": "disabled"}
    if template:
        spec["dataTemplate"] = {"name": template}
    if selector:
        spec["hostSelector"] = selector
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Machine",
                "metadata": {"name": name, "namespace": NS,
                             "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER},
                             "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                                                  "name": name, "uid": m["metadata"]["uid"],
                                                  "controller": True}]},
                "spec": spec})


@pytest.fixture
def capm3_hub(hub_factory):
    hub = hub_factory()
    if "metal3machines" not in hub.kubectl("api-resources", "-o", "name").stdout:
        pytest.fail("the Metal3Machine kind is not served")
    hub.create_namespace(NS)
    return hub


def start_hosts(hub, tmp_path, sims, n):
    b = Bmc(tmp_path, hosts=n, args=["--bmh-namespace", NS, "--cacert", str(hub.ca_path)])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))

    def available():
        cur = bmhs(hub)
        return cur if len(cur) == n and all(state(x) == "available" for x in cur.values()) else None
    return b, wait_for(available, timeout=90, what=f"{n} BMHs available")


def test_metal3cluster_ready(capm3_hub):
    hub = capm3_hub
    # Without its Cluster's ownerRef it waits (no finalizer, no status).
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Cluster", "metadata": {"name": "orphan", "namespace": NS},
                "spec": {"controlPlaneEndpoint": {"host": "x", "port": 6443}}})
    make_cluster(hub)
    m3c = wait_for(lambda: (lambda c: c if c.get("status", {}).get("ready") else None)(
        get(hub, "metal3clusters", CLUSTER)), timeout=20, what="Metal3Cluster ready")
    assert m3c["status"]["initialization"] == {"provisioned": True}
    assert "metal3cluster.infrastructure.cluster.x-k8s.io" in m3c["metadata"]["finalizers"]
    assert cond(m3c, "BaremetalInfrastructureReady")["status"] == "True"
    assert cond(m3c, "BaremetalInfrastructureReady", v2=False)["status"] == "True"
    assert cond(m3c, "Ready", v2=False)["status"] == "True"
    orphan = get(hub, "metal3clusters", "orphan")
    assert "status" not in orphan or not orphan["status"].get("ready")
    assert not orphan["metadata"].get("finalizers")
    # An endpoint without a port: not provisioned, CAPM3's reason.
    hub.kubectl("-n", NS, "patch", "metal3cluster", CLUSTER, "--type=merge",
                "-p", '{"spec": {"controlPlaneEndpoint": {"host": "c1.lab.home", "port": 0}}}')
    m3c = wait_for(lambda: (lambda c: c if c["status"].get("ready") is False else None)(
        get(hub, "metal3clusters", CLUSTER)), timeout=20, what="Metal3Cluster not ready")
    assert m3c["status"]["initialization"] == {"provisioned": False}
    c = cond(m3c, "BaremetalInfrastructureReady", v2=False)
    assert (c["status"], c["reason"], c["severity"]) == ("False", "ControlPlaneEndpointFailed", "Error")
    assert cond(m3c, "BaremetalInfrastructureReady")["reason"] == "ControlPlaneEndpointFailed"
    # Deleted: the finalizer goes (no Metal3Machine of its cluster is left).
    hub.kubectl("-n", NS, "delete", "metal3cluster", CLUSTER, "--wait=false")
    wait_for(lambda: not exists(hub, "metal3clusters", CLUSTER), timeout=20, what="Metal3Cluster gone")


def test_metal3machine_waits(capm3_hub):
    """Before a host is looked for: the owner Machine, the Cluster's
    infrastructure, the bootstrap data, each with CAPM3's reason."""
    hub = capm3_hub
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Machine", "metadata": {"name": "lone", "namespace": NS},
                "spec": {"image": IMAGE}})
    m = wait_for(lambda: (lambda o: o if cond(o, "AssociateBareMetalHost") else None)(
        get(hub, "metal3machines", "lone")), timeout=20, what="owner-ref condition")
    assert cond(m, "AssociateBareMetalHost")["reason"] == "WaitingForMetal3MachineOwnerRef"
    assert cond(m, "AssociateBMH", v2=False)["reason"] == "WaitingForM3MachineOwnerRef"
    assert "metal3machine.infrastructure.cluster.x-k8s.io" in m["metadata"]["finalizers"]
    assert m["status"]["ready"] is False
    # A Metal3Cluster without its endpoint is not provisioned, so neither
    # is the Cluster's infrastructure (the hub's CAPI core copies it).
    make_cluster(hub, endpoint=False)
    make_machine(hub, "m0", template=None)

    def reason():
        c = cond(get(hub, "metal3machines", "m0"), "AssociateBareMetalHost")
        return c and c["reason"]
    wait_for(lambda: reason() == "WaitingForClusterInfrastructureReady", timeout=20,
             what="waiting for the cluster infrastructure")
    hub.kubectl("-n", NS, "patch", "metal3clusters.infrastructure.cluster.x-k8s.io", CLUSTER, "--type=merge",
                "-p", '{"spec": {"controlPlaneEndpoint": {"host": "c1.lab.home", "port": 6443}}}')
    wait_for(lambda: get(hub, "clusters.cluster.x-k8s.io", CLUSTER).get("status", {}).get(
        "initialization", {}).get("infrastructureProvisioned") is True, timeout=20,
        what="the Cluster's infrastructure provisioned")
    hub.kubectl("-n", NS, "patch", "machines.cluster.x-k8s.io", "m0", "--type=json",
                "-p", '[{"op": "remove", "path": "/spec/bootstrap/dataSecretName"}]')
    wait_for(lambda: reason() == "WaitingForBootstrapData", timeout=20, what="waiting for the bootstrap data")
    c = cond(get(hub, "metal3machines", "m0"), "AssociateBMH", v2=False)
    assert c["reason"] == "WaitingForBootstrapReady"
    # With its data and no host at all: no available host, an event.
    hub.kubectl("-n", NS, "patch", "machines.cluster.x-k8s.io", "m0", "--type=merge",
                "-p", '{"spec": {"bootstrap": {"dataSecretName": "bootstrap-data"}}}')
    wait_for(lambda: reason() == "AssociateBareMetalHostFailed", timeout=20, what="no available host")
    c = cond(get(hub, "metal3machines", "m0"), "AssociateBareMetalHost")
    assert "no available host found" in c["message"]
    ev = wait_for(lambda: [e for e in hub.kubectl_json("-n", NS, "get", "events")["items"]
                           if e["involvedObject"]["name"] == "m0" and e["reason"] == "NoAvailableHost"],
                  timeout=10, what="the NoAvailableHost event")
    assert ev[0]["type"] == "Warning" and ev[0]["involvedObject"]["kind"] == "Metal3Machine"
    # Deleted before it had a host: the finalizer goes at once.
    hub.kubectl("-n", NS, "delete", "metal3machine", "m0", "--wait=false")
    wait_for(lambda: not exists(hub, "metal3machines", "m0"), timeout=20, what="m0 gone")


def test_choose_provision_release(capm3_hub, tmp_path, sims):
    hub = capm3_hub
    b, cur = start_hosts(hub, tmp_path, sims, 6)
    names = sorted(cur)
    # Every host but one is ruled out, each by another of CAPM3's filters.
    good, unhealthy, unhealthy_old, paused, consumed, unlabelled = names
    for n in names:
        if n != unlabelled:
            hub.kubectl("-n", NS, "label", "bmh", n, "pool=capi")
    hub.kubectl("-n", NS, "annotate", "bmh", unhealthy, "capm3.metal3.io/unhealthy=")
    hub.kubectl("-n", NS, "annotate", "bmh", unhealthy_old, "capi.metal3.io/unhealthy=")
    hub.kubectl("-n", NS, "annotate", "bmh", paused, "baremetalhost.metal3.io/paused=")
    hub.kubectl("-n", NS, "patch", "bmh", consumed, "--type=merge", "-p", json.dumps(
        {"spec": {"consumerRef": {"apiVersion": INFRA, "kind": "Metal3Machine", "name": "other",
                                  "namespace": NS}}}))
    # Its hardware details (as inspection would give them) become the
    # Metal3Machine's addresses.
    hw = {"hostname": "node-a", "nics": [{"name": "eth0", "mac": "52:54:00:00:00:01", "ip": "192.168.7.10"}],
          "cpu": {"count": 4}, "ramMebibytes": 8192}
    hub.kubectl("-n", NS, "annotate", "bmh", good, "inspect.metal3.io/hardwaredetails=" + json.dumps(hw))
    wait_for(lambda: bmhs(hub)[good].get("status", {}).get("hardware", {}).get("hostname") == "node-a",
             timeout=30, what="status.hardware")
    # The good one is not there yet: a matchExpressions rule keeps it out.
    hub.kubectl("-n", NS, "label", "bmh", good, "rack=r9")
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3DataTemplate", "metadata": {"name": "m3dt", "namespace": NS},
                "spec": {"clusterName": CLUSTER,
                         "metaData": {"strings": [{"key": "role", "value": "cp"}],
                                      "objectNames": [{"key": "machine", "object": "machine"}],
                                      "indexes": [{"key": "idx", "prefix": "n-", "offset": 10, "step": 1}]}}})
    make_cluster(hub)
    patch_status(hub, "clusters.cluster.x-k8s.io", CLUSTER, {"initialization": {"infrastructureProvisioned": True}})
    selector = {"matchLabels": {"pool": "capi"},
                "matchExpressions": [{"key": "rack", "operator": "NotIn", "values": ["r9"]}]}
    make_machine(hub, "m1", selector=selector)

    def m1_reason():
        c = cond(get(hub, "metal3machines", "m1"), "AssociateBareMetalHost")
        return c and c["reason"]
    wait_for(lambda: m1_reason() == "AssociateBareMetalHostFailed", timeout=30, what="m1 waiting for a host")
    assert all("consumerRef" not in x["spec"] or x["metadata"]["name"] == consumed for x in bmhs(hub).values())
    # The good host joins the pool: m1 takes it.
    hub.kubectl("-n", NS, "label", "bmh", good, "rack=r1", "--overwrite")
    m1 = wait_for(lambda: (lambda o: o if o["metadata"].get("annotations", {}).get("metal3.io/BareMetalHost")
                           else None)(get(hub, "metal3machines", "m1")), timeout=40, what="m1 associated")
    assert m1["metadata"]["annotations"]["metal3.io/BareMetalHost"] == f"{NS}/{good}"
    assert cond(m1, "AssociateBareMetalHost")["reason"] == "AssociateBareMetalHostSuccess"
    host = bmhs(hub)[good]
    spec = host["spec"]
    assert spec["image"] == IMAGE
    assert spec["userData"] == {"name": "bootstrap-data", "namespace": NS}
    assert spec["metaData"] == {"name": "m1-metadata", "namespace": NS}
    assert spec["automatedCleaningMode"] == "disabled"
    assert spec["online"] is True
    assert spec["consumerRef"] == {"apiVersion": INFRA, "kind": "Metal3Machine", "name": "m1", "namespace": NS}
    assert host["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == CLUSTER
    assert m1["status"]["userData"] == {"name": "bootstrap-data", "namespace": NS}
    assert m1["status"]["metaData"] == {"name": "m1-metadata", "namespace": NS}
    # The metaData Secret, its Metal3Data and claim.
    sec = get(hub, "secret", "m1-metadata")
    md = yaml.safe_load(base64.b64decode(sec["data"]["metaData"]))
    assert md["uuid"] == host["metadata"]["uid"]
    assert md["metal3-name"] == good and md["metal3-namespace"] == NS
    assert md["local-hostname"] == good and md["name"] == good
    assert md["providerid"] == f"{NS}/{good}/m1"
    assert md["role"] == "cp" and md["machine"] == "m1" and md["idx"] == "n-10"
    claim = get(hub, "metal3dataclaims", "m1")
    assert claim["status"]["renderedData"]["name"] == "m3dt-0"
    data = get(hub, "metal3datas", "m3dt-0")
    assert data["status"]["ready"] is True and data["spec"]["metaData"]["name"] == "m1-metadata"
    assert get(hub, "metal3datatemplates", "m3dt")["status"]["indexes"] == {"m1": 0}
    assert sec["metadata"]["ownerReferences"][0]["kind"] == "Metal3Data"
    # The host provisions; m1 is ready, no providerID before its node exists.
    m1 = wait_for(lambda: (lambda o: o if o["status"].get("ready") else None)(get(hub, "metal3machines", "m1")),
                  timeout=90, what="m1 ready")
    assert m1["status"]["initialization"] == {"provisioned": True}
    assert state(bmhs(hub)[good]) == "provisioned"
    assert "providerID" not in m1["spec"]
    assert m1["status"]["addresses"] == [{"type": "InternalIP", "address": "192.168.7.10"},
                                         {"type": "Hostname", "address": "node-a"},
                                         {"type": "InternalDNS", "address": "node-a"}]
    # Its node exists once the Agent of the Machine's InfraEnv is installed.
    agent = "9a3c1a4e-0000-4000-8000-000000000001"
    apply(hub, {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
                "metadata": {"name": agent, "namespace": NS,
                             "labels": {"infraenvs.agent-install.openshift.io": "m1"}},
                "spec": {"approved": True, "role": "master", "hostname": "node-a"}})
    patch_status(hub, "agents", agent, {"conditions": [
        {"type": "Installed", "status": "True", "reason": "InstallationCompleted", "message": "done",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}], "debugInfo": {"state": "installed"}})
    m1 = wait_for(lambda: (lambda o: o if o["spec"].get("providerID") else None)(get(hub, "metal3machines", "m1")),
                  timeout=30, what="m1 providerID")
    assert m1["spec"]["providerID"] == f"metal3://{NS}/{good}/m1"

    # A second Metal3Machine waits: no host is free.
    make_machine(hub, "m2", dsn="bootstrap-data-2", selector=selector)
    wait_for(lambda: (lambda c: c and c["reason"] == "AssociateBareMetalHostFailed")(
        cond(get(hub, "metal3machines", "m2"), "AssociateBareMetalHost")), timeout=30, what="m2 waiting")

    # m1 goes: the host deprovisions, powered off, and is free again; m2 takes it.
    hub.kubectl("-n", NS, "delete", "metal3machine", "m1", "--wait=false")
    seen = {"released": False}

    def m2_on_good():
        ann = get(hub, "metal3machines", "m2")["metadata"].get("annotations", {})
        x = bmhs(hub)[good]
        if not x["spec"].get("consumerRef"):
            seen["released"] = True
            assert not x["spec"].get("image") and not x["spec"].get("userData")
            assert x["spec"]["online"] is False
        return ann.get("metal3.io/BareMetalHost") == f"{NS}/{good}"
    wait_for(m2_on_good, timeout=120, what="m2 on the released host")
    assert not exists(hub, "metal3machines", "m1")
    wait_for(lambda: not exists(hub, "metal3dataclaims", "m1"), timeout=20, what="m1's claim gone")
    x = bmhs(hub)[good]
    assert x["spec"]["consumerRef"]["name"] == "m2"
    assert x["spec"]["userData"] == {"name": "bootstrap-data-2", "namespace": NS}
    assert get(hub, "metal3datatemplates", "m3dt")["status"]["indexes"] == {"m2": 0}
    md = yaml.safe_load(base64.b64decode(get(hub, "secret", "m2-metadata")["data"]["metaData"]))
    assert md["providerid"] == f"{NS}/{good}/m2"
    # None of the ruled-out hosts was touched.
    for n in (unhealthy, unhealthy_old, paused, unlabelled):
        assert "consumerRef" not in bmhs(hub)[n]["spec"]


def test_bad_host_selector(capm3_hub):
    hub = capm3_hub
    make_cluster(hub)
    patch_status(hub, "clusters.cluster.x-k8s.io", CLUSTER, {"initialization": {"infrastructureProvisioned": True}})
    make_machine(hub, "bad", template=None,
                 selector={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
    c = wait_for(lambda: (lambda c: c if c and c["reason"] == "AssociateBareMetalHostFailed" else None)(
        cond(get(hub, "metal3machines", "bad"), "AssociateBareMetalHost")), timeout=20, what="bad selector")
    assert "spec.hostSelector.matchExpressions[0].operator" in c["message"]


def test_template_cleaning_mode(capm3_hub):
    """A Metal3Machine cloned from a Metal3MachineTemplate takes the
    template's automatedCleaningMode, also when the template changes."""
    hub = capm3_hub
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3MachineTemplate", "metadata": {"name": "t1", "namespace": NS},
                "spec": {"nodeReuse": False,
                         "template": {"spec": {"image": IMAGE, "automatedCleaningMode": "metadata"}}}})
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Machine",
                "metadata": {"name": "clone", "namespace": NS, "annotations": {
                    "cluster.x-k8s.io/cloned-from-name": "t1",
                    "cluster.x-k8s.io/cloned-from-groupkind": "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"}},
                "spec": {"image": IMAGE, "automatedCleaningMode": "disabled"}})
    apply(hub, {"apiVersion": INFRA, "kind": "Metal3Machine", "metadata": {"name": "other", "namespace": NS},
                "spec": {"image": IMAGE, "automatedCleaningMode": "disabled"}})
    wait_for(lambda: get(hub, "metal3machines", "clone")["spec"]["automatedCleaningMode"] == "metadata",
             timeout=20, what="the template's cleaning mode")
    hub.kubectl("-n", NS, "patch", "metal3machinetemplate", "t1", "--type=merge",
                "-p", '{"spec": {"template": {"spec": {"automatedCleaningMode": "disabled"}}}}')
    wait_for(lambda: get(hub, "metal3machines", "clone")["spec"]["automatedCleaningMode"] == "disabled",
             timeout=20, what="the template's new cleaning mode")
    # Not cloned from it: left alone.
    hub.kubectl("-n", NS, "patch", "metal3machinetemplate", "t1", "--type=merge",
                "-p", '{"spec": {"template": {"spec": {"automatedCleaningMode": "metadata"}}}}')
    wait_for(lambda: get(hub, "metal3machines", "clone")["spec"]["automatedCleaningMode"] == "metadata",
             timeout=20, what="the template's cleaning mode again")
    assert get(hub, "metal3machines", "other")["spec"]["automatedCleaningMode"] == "disabled"
