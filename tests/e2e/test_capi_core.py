"""Cluster API core done by the hub (issue 18, CAPI-PLAN.md "capi-core"): the
Cluster, Machine, MachineSet and MachineDeployment controllers, driven through
kubectl against a real hub.  The other providers' objects (Metal3Cluster,
Metal3Machine(Template), OpenshiftAssistedConfig(Template),
OpenshiftAssistedControlPlane, the Agent of a Machine) are made by hand here,
their status written through the status subresource, exactly as the other
controllers would write it."""
import json
import re
import time

import pytest

from conftest import wait_for

CLUSTER = "clusters.cluster.x-k8s.io"
MACHINE = "machines.cluster.x-k8s.io"
MS = "machinesets.cluster.x-k8s.io"
MD = "machinedeployments.cluster.x-k8s.io"
M3C = "metal3clusters.infrastructure.cluster.x-k8s.io"
M3M = "metal3machines.infrastructure.cluster.x-k8s.io"
M3MT = "metal3machinetemplates.infrastructure.cluster.x-k8s.io"
OAC = "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io"
OACT = "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io"
OACP = "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io"

INFRA_GROUP = "infrastructure.cluster.x-k8s.io"
BOOT_GROUP = "bootstrap.cluster.x-k8s.io"
CP_GROUP = "controlplane.cluster.x-k8s.io"
CN = "cluster.x-k8s.io/cluster-name"
TIMEOUT = 60


def get(hub, ns, res, name, check=True):
    r = hub.kubectl("-n", ns, "get", res, name, "-o", "json", check=check)
    return json.loads(r.stdout) if r.returncode == 0 else None


def items(hub, ns, res, selector=None):
    args = ["-n", ns, "get", res, "-o", "json"]
    if selector:
        args += ["-l", selector]
    return json.loads(hub.kubectl(*args).stdout)["items"]


def patch(hub, ns, res, name, body, status=False):
    args = ["-n", ns, "patch", res, name, "--type=merge", "-p", json.dumps(body)]
    if status:
        args.append("--subresource=status")
    hub.kubectl(*args)


def cond(obj, typ, path=("status", "conditions")):
    cur = obj
    for p in path:
        cur = (cur or {}).get(p)
    for c in cur or []:
        if c.get("type") == typ:
            return c
    return None


def v1b1(obj, typ):
    return cond(obj, typ, ("status", "deprecated", "v1beta1", "conditions"))


def wait_obj(hub, ns, res, name, pred, what, timeout=TIMEOUT):
    def ok():
        o = get(hub, ns, res, name, check=False)
        return o if o is not None and pred(o) else None
    return wait_for(ok, timeout=timeout, what=f"{res} {ns}/{name}: {what}")


def wait_gone(hub, ns, res, name, timeout=TIMEOUT):
    wait_for(lambda: get(hub, ns, res, name, check=False) is None, timeout=timeout,
             what=f"{res} {ns}/{name} gone")


def owner(obj, kind):
    for r in obj["metadata"].get("ownerReferences", []):
        if r["kind"] == kind:
            return r
    return None


def assert_quiet(hub, ns, objs, seconds=2.0):
    """Level-triggered and idempotent: once settled, no pass writes anything."""
    before = {o: get(hub, ns, *o)["metadata"]["resourceVersion"] for o in objs}
    time.sleep(seconds)
    after = {o: get(hub, ns, *o)["metadata"]["resourceVersion"] for o in objs}
    assert before == after


def ref(group, kind, name):
    return {"apiGroup": group, "kind": kind, "name": name}


def obj(api, kind, ns, name, spec=None, **meta):
    o = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": ns, **meta}}
    if spec is not None:
        o["spec"] = spec
    return o


def cluster_obj(ns, name, infra="m3c", cp="cp"):
    spec = {"clusterNetwork": {"pods": {"cidrBlocks": ["10.128.0.0/14"]},
                               "services": {"cidrBlocks": ["172.30.0.0/16"]}}}
    if infra:
        spec["infrastructureRef"] = ref(INFRA_GROUP, "Metal3Cluster", infra)
    if cp:
        spec["controlPlaneRef"] = ref(CP_GROUP, "OpenshiftAssistedControlPlane", cp)
    return obj("cluster.x-k8s.io/v1beta2", "Cluster", ns, name, spec)


def oacp_obj(ns, name, **meta):
    return obj(f"{CP_GROUP}/v1alpha3", "OpenshiftAssistedControlPlane", ns, name, {
        "distributionVersion": "4.19.0", "replicas": 1,
        "machineTemplate": {"infrastructureRef": ref(INFRA_GROUP, "Metal3MachineTemplate", f"{name}-m3")}}, **meta)


def make_agent(hub, ns, name, machine, hostname, installed=True):
    """The Agent of a Machine (InfraEnv <machine>), marked installed as the
    agent controller reports it."""
    hub.apply_obj(obj("agent-install.openshift.io/v1beta1", "Agent", ns, name,
                      {"hostname": hostname, "approved": True, "role": "worker"},
                      labels={"infraenvs.agent-install.openshift.io": machine}))
    if installed:
        patch(hub, ns, "agents.agent-install.openshift.io", name, {"status": {"conditions": [
            {"type": "Installed", "status": "True", "reason": "InstallationCompleted",
             "message": "The installation has completed: Done",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, status=True)


def finish_machine(hub, ns, machine, provider_id=None):
    """What CAPOA bootstrap and CAPM3 (and the installed host) report for a Machine."""
    patch(hub, ns, OAC, machine, {"status": {"initialization": {"dataSecretCreated": True},
                                             "dataSecretName": machine}}, status=True)
    patch(hub, ns, M3M, machine, {"spec": {"providerID": provider_id or f"metal3://{ns}/bmh-{machine}/{machine}"}})
    patch(hub, ns, M3M, machine, {"status": {"ready": True}}, status=True)
    make_agent(hub, ns, f"agent-{machine}", machine, f"host-{machine}")


# --- Cluster -------------------------------------------------------------------------

def test_cluster_owner_labels_endpoint_and_status(module_hub, ns):
    hub = module_hub
    # The hub's own CAPM3 provisions a Metal3Cluster as soon as its endpoint
    # is valid: it starts without one, so the Cluster is seen Provisioning.
    # The control plane stands in for CAPOA's (paused, so the hub's CAPOA
    # control plane leaves its status to this test).
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Cluster", ns, "m3c", {"noCloudProvider": True}))
    hub.apply_obj(oacp_obj(ns, "cp", annotations={"cluster.x-k8s.io/paused": ""}))
    hub.apply_obj(cluster_obj(ns, "c1"))

    cl = wait_obj(hub, ns, CLUSTER, "c1", lambda o: "cluster.cluster.x-k8s.io" in o["metadata"].get("finalizers", []),
                  "finalizer")
    for res, name in ((M3C, "m3c"), (OACP, "cp")):
        o = wait_obj(hub, ns, res, name, lambda o: owner(o, "Cluster") and o["metadata"].get("labels", {}).get(CN),
                     "owner Cluster and cluster-name label")
        r = owner(o, "Cluster")
        assert r["name"] == "c1" and r["uid"] == cl["metadata"]["uid"]
        assert r["apiVersion"] == "cluster.x-k8s.io/v1beta2" and r["controller"] is False
        assert o["metadata"]["labels"][CN] == "c1"

    # Infrastructure not yet provisioned.
    cl = wait_obj(hub, ns, CLUSTER, "c1", lambda o: o.get("status", {}).get("phase"), "phase")
    assert not cl["spec"].get("controlPlaneEndpoint", {}).get("host"), cl["spec"]
    assert cl["status"]["phase"] == "Provisioning"
    assert cond(cl, "InfrastructureReady")["status"] == "False"
    assert cond(cl, "ControlPlaneInitialized") == {**cond(cl, "ControlPlaneInitialized"), "status": "False",
                                                   "reason": "NotInitialized"}
    assert cond(cl, "Available")["status"] == "False"
    assert cond(cl, "Available")["reason"] == "NotAvailable"
    assert v1b1(cl, "InfrastructureReady")["status"] == "False"
    assert not cl["status"].get("initialization", {}).get("infrastructureProvisioned")

    # An endpoint on the infra cluster: CAPM3 makes it ready (v1beta1
    # status.ready), the endpoint is copied and the Cluster is provisioned.
    patch(hub, ns, M3C, "m3c", {"spec": {"controlPlaneEndpoint": {"host": "192.168.111.5", "port": 6443}}})
    cl = wait_obj(hub, ns, CLUSTER, "c1", lambda o: o["status"].get("phase") == "Provisioned", "Provisioned")
    assert get(hub, ns, M3C, "m3c")["status"]["ready"] is True
    assert cl["spec"]["controlPlaneEndpoint"] == {"host": "192.168.111.5", "port": 6443}
    assert cl["status"]["initialization"]["infrastructureProvisioned"] is True
    assert cond(cl, "InfrastructureReady")["status"] == "True"
    assert cond(cl, "InfrastructureReady")["reason"] == "Ready"
    assert v1b1(cl, "InfrastructureReady")["status"] == "True"

    # The control plane initialized and Available.
    patch(hub, ns, OACP, "cp", {"status": {"initialization": {"controlPlaneInitialized": True}, "conditions": [
        {"type": "Available", "status": "True", "reason": "Available", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}, status=True)
    cl = wait_obj(hub, ns, CLUSTER, "c1", lambda o: (cond(o, "Available") or {}).get("status") == "True", "Available")
    assert cl["status"]["initialization"]["controlPlaneInitialized"] is True
    assert cond(cl, "ControlPlaneInitialized")["reason"] == "Initialized"
    assert cond(cl, "ControlPlaneAvailable")["status"] == "True"
    assert cond(cl, "ControlPlaneAvailable")["reason"] == "Available"
    assert v1b1(cl, "ControlPlaneInitialized")["status"] == "True"
    assert v1b1(cl, "Ready")["status"] == "True"
    assert cl["status"]["observedGeneration"] == cl["metadata"]["generation"]
    assert_quiet(hub, ns, [(CLUSTER, "c1"), (M3C, "m3c"), (OACP, "cp")])

    # A user's own endpoint is never overwritten.
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Cluster", ns, "m3c2",
                      {"controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443}}))
    c2 = cluster_obj(ns, "c2", infra="m3c2", cp=None)
    c2["spec"]["controlPlaneEndpoint"] = {"host": "api.example.com", "port": 443}
    hub.apply_obj(c2)
    wait_obj(hub, ns, M3C, "m3c2", lambda o: owner(o, "Cluster"), "owner")
    c2 = wait_obj(hub, ns, CLUSTER, "c2", lambda o: o.get("status", {}).get("phase"), "phase")
    assert c2["spec"]["controlPlaneEndpoint"] == {"host": "api.example.com", "port": 443}


def test_cluster_provisioned_from_initialization_provisioned(module_hub, ns):
    """The v1beta2 contract field (CAPM3's Metal3Cluster status.initialization.provisioned)."""
    hub = module_hub
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Cluster", ns, "m3c",
                      {"controlPlaneEndpoint": {"host": "192.168.111.6", "port": 6443}}))
    hub.apply_obj(cluster_obj(ns, "c", cp=None))
    wait_obj(hub, ns, M3C, "m3c", lambda o: owner(o, "Cluster"), "owner")
    patch(hub, ns, M3C, "m3c", {"status": {"initialization": {"provisioned": True}}}, status=True)
    cl = wait_obj(hub, ns, CLUSTER, "c", lambda o: o.get("status", {}).get("phase") == "Provisioned", "Provisioned")
    assert cl["status"]["initialization"]["infrastructureProvisioned"] is True


# --- Machine -------------------------------------------------------------------------

def machine_obj(ns, name, cluster="c", labels=None):
    return obj("cluster.x-k8s.io/v1beta2", "Machine", ns, name, {
        "clusterName": cluster,
        "bootstrap": {"configRef": ref(BOOT_GROUP, "OpenshiftAssistedConfig", name)},
        "infrastructureRef": ref(INFRA_GROUP, "Metal3Machine", name)}, labels=labels or {})


def test_machine_bootstrap_provider_id_node_and_conditions(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cluster_obj(ns, "c", infra=None, cp=None))
    hub.apply_obj(obj(f"{BOOT_GROUP}/v1alpha2", "OpenshiftAssistedConfig", ns, "m1", {"cpuArchitecture": "x86_64"}))
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Machine", ns, "m1", {"image": {"url": "http://x/i.qcow2"}}))
    hub.apply_obj(machine_obj(ns, "m1"))

    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: "machine.cluster.x-k8s.io" in o["metadata"].get("finalizers", [])
                 and o["metadata"].get("labels", {}).get(CN) == "c", "finalizer and label")
    for res in (OAC, M3M):
        o = wait_obj(hub, ns, res, "m1", lambda o: owner(o, "Machine") and o["metadata"].get("labels", {}).get(CN),
                     "owner Machine")
        r = owner(o, "Machine")
        assert r["controller"] is True and r["uid"] == m["metadata"]["uid"] and r["name"] == "m1"
        assert o["metadata"]["labels"][CN] == "c"
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: o.get("status", {}).get("phase"), "phase")
    assert m["status"]["phase"] == "Pending"
    assert cond(m, "BootstrapConfigReady")["status"] == "False"
    assert cond(m, "Ready")["status"] == "False" and cond(m, "Available")["status"] == "False"
    assert v1b1(m, "BootstrapReady")["status"] == "False"

    # Bootstrap data created: its secret name into the Machine's spec.
    patch(hub, ns, OAC, "m1", {"status": {"initialization": {"dataSecretCreated": True},
                                          "dataSecretName": "m1-bootstrap"}}, status=True)
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: o["status"].get("phase") == "Provisioning", "Provisioning")
    assert m["spec"]["bootstrap"]["dataSecretName"] == "m1-bootstrap"
    assert m["status"]["initialization"]["bootstrapDataSecretCreated"] is True
    assert cond(m, "BootstrapConfigReady")["status"] == "True"
    assert v1b1(m, "BootstrapReady")["status"] == "True"

    # CAPOA writes its own UpToDate condition: kept by every later pass.
    conds = m["status"]["conditions"] + [{"type": "UpToDate", "status": "True", "reason": "UpToDate",
                                          "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
    patch(hub, ns, MACHINE, "m1", {"status": {"conditions": conds}}, status=True)

    # The infra machine's providerID and provisioned status.
    pid = f"metal3://{ns}/bmh-0/m1"
    patch(hub, ns, M3M, "m1", {"spec": {"providerID": pid}})
    patch(hub, ns, M3M, "m1", {"status": {"initialization": {"provisioned": True}}}, status=True)
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: o["status"].get("phase") == "Provisioned", "Provisioned")
    assert m["spec"]["providerID"] == pid
    assert m["status"]["initialization"]["infrastructureProvisioned"] is True
    assert cond(m, "InfrastructureReady")["status"] == "True"
    assert cond(m, "Ready")["status"] == "False"
    assert "nodeRef" not in m["status"]

    # The Agent of the Machine installed: the Node exists.
    make_agent(hub, ns, "agent-m1", "m1", "master-0.example.com", installed=False)
    m = get(hub, ns, MACHINE, "m1")
    assert cond(m, "Ready")["status"] == "False"
    make_agent(hub, ns, "agent-m1", "m1", "master-0.example.com")
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: o["status"].get("phase") == "Running", "Running")
    assert m["status"]["nodeRef"] == {"name": "master-0.example.com"}
    for t, reason in (("Ready", "Ready"), ("Available", "Available"), ("NodeHealthy", "NodeHealthy")):
        assert cond(m, t)["status"] == "True" and cond(m, t)["reason"] == reason, t
    assert v1b1(m, "Ready")["status"] == "True"
    assert cond(m, "UpToDate") is not None and cond(m, "UpToDate")["reason"] == "UpToDate"
    assert m["status"]["lastUpdated"]
    assert_quiet(hub, ns, [(MACHINE, "m1"), (OAC, "m1"), (M3M, "m1")])

    # Deleting the Machine deletes the infra machine and the bootstrap config first.
    hold = {"metadata": {"finalizers": ["test.agenthub.io/hold"]}}
    patch(hub, ns, M3M, "m1", hold)
    hub.kubectl("-n", ns, "delete", MACHINE, "m1", "--wait=false")
    wait_obj(hub, ns, M3M, "m1", lambda o: o["metadata"].get("deletionTimestamp"), "being deleted")
    wait_gone(hub, ns, OAC, "m1")
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: o["status"].get("phase") == "Deleting", "Deleting")
    assert "machine.cluster.x-k8s.io" in m["metadata"]["finalizers"]
    assert cond(m, "Deleting")["status"] == "True"
    assert cond(m, "Deleting")["reason"] == "WaitingForInfrastructureDeletion"
    patch(hub, ns, M3M, "m1", {"metadata": {"finalizers": None}})
    wait_gone(hub, ns, MACHINE, "m1")


def test_machine_infra_v1beta1_ready_and_no_config_ref(module_hub, ns):
    """An infra machine that reports only the v1beta1 status.ready, and a
    Machine with its bootstrap data secret named directly (no configRef)."""
    hub = module_hub
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Machine", ns, "m2", {}))
    m = machine_obj(ns, "m2")
    m["spec"]["bootstrap"] = {"dataSecretName": "m2-data"}
    hub.apply_obj(m)
    wait_obj(hub, ns, M3M, "m2", lambda o: owner(o, "Machine"), "owner")
    patch(hub, ns, M3M, "m2", {"status": {"ready": True}}, status=True)
    m = wait_obj(hub, ns, MACHINE, "m2", lambda o: o.get("status", {}).get("initialization", {})
                 .get("infrastructureProvisioned"), "infrastructureProvisioned")
    assert m["status"]["initialization"]["bootstrapDataSecretCreated"] is True
    assert cond(m, "BootstrapConfigReady")["reason"] == "DataSecretProvided"
    assert cond(m, "InfrastructureReady")["status"] == "True"


# --- MachineDeployment / MachineSet ------------------------------------------------

def templates(hub, ns, boot=True, infra=True):
    if boot:
        boot_template(hub, ns)
    if infra:
        infra_template(hub, ns)


def boot_template(hub, ns):
    hub.apply_obj(obj(f"{BOOT_GROUP}/v1alpha2", "OpenshiftAssistedConfigTemplate", ns, "workers-oac", {
        "template": {"metadata": {"labels": {"tmpl-label": "boot"}, "annotations": {"tmpl-ann": "boot"}},
                     "spec": {"cpuArchitecture": "x86_64",
                              "nodeRegistration": {"name": "$METADATA_NAME",
                                                   "kubeletExtraLabels": ["metal3.io/uuid=$METADATA_UUID"]}}}}))


def infra_template(hub, ns):
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3MachineTemplate", ns, "workers-m3", {
        "template": {"metadata": {"labels": {"tmpl-label": "infra"}},
                     "spec": {"image": {"url": "https://rhcos.example.com/rhcos.qcow2", "checksum": "abc",
                                        "checksumType": "sha256", "format": "qcow2"},
                              "hostSelector": {"matchLabels": {"role": "worker"}}}}}))


def md_obj(ns, name, cluster, replicas):
    return obj("cluster.x-k8s.io/v1beta2", "MachineDeployment", ns, name, {
        "clusterName": cluster, "replicas": replicas,
        "selector": {"matchLabels": {CN: cluster, "cluster.x-k8s.io/deployment-name": name}},
        "template": {"metadata": {"labels": {"pool": "workers"}},
                     "spec": {"clusterName": cluster,
                              "bootstrap": {"configRef": ref(BOOT_GROUP, "OpenshiftAssistedConfigTemplate", "workers-oac")},
                              "infrastructureRef": ref(INFRA_GROUP, "Metal3MachineTemplate", "workers-m3")}}},
        labels={CN: cluster})


def md_machines(hub, ns, md, n):
    def ok():
        ms = [m for m in items(hub, ns, MACHINE, f"cluster.x-k8s.io/deployment-name={md}")
              if not m["metadata"].get("deletionTimestamp")]
        return ms if len(ms) == n else None
    return wait_for(ok, timeout=TIMEOUT, what=f"{n} Machines of {md}")


def test_machinedeployment_scale_2_3_1(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cluster_obj(ns, "c", infra=None, cp=None))
    templates(hub, ns)
    hub.apply_obj(md_obj(ns, "workers", "c", 2))

    sets = wait_for(lambda: items(hub, ns, MS, "cluster.x-k8s.io/deployment-name=workers") or None,
                    timeout=TIMEOUT, what="a MachineSet")
    assert len(sets) == 1
    ms = sets[0]
    msname = ms["metadata"]["name"]
    assert re.fullmatch(r"workers-[bcdfghjklmnpqrstvwxz2456789]{5}", msname), msname
    assert ms["metadata"]["labels"]["machine-template-hash"]
    assert ms["metadata"]["labels"][CN] == "c"
    r = owner(ms, "MachineDeployment")
    assert r and r["controller"] is True and r["name"] == "workers"
    assert ms["spec"]["replicas"] == 2 and ms["spec"]["clusterName"] == "c"

    machines = md_machines(hub, ns, "workers", 2)
    for m in machines:
        name = m["metadata"]["name"]
        assert re.fullmatch(re.escape(msname) + r"-[bcdfghjklmnpqrstvwxz2456789]{5}", name), name
        lab = m["metadata"]["labels"]
        assert lab["cluster.x-k8s.io/set-name"] == msname
        assert lab["cluster.x-k8s.io/deployment-name"] == "workers"
        assert lab[CN] == "c" and lab["pool"] == "workers"
        assert owner(m, "MachineSet")["controller"] is True
        assert m["spec"]["clusterName"] == "c"
        assert m["spec"]["bootstrap"]["configRef"] == ref(BOOT_GROUP, "OpenshiftAssistedConfig", name)
        assert m["spec"]["infrastructureRef"] == ref(INFRA_GROUP, "Metal3Machine", name)
        oac = wait_obj(hub, ns, OAC, name, lambda o: owner(o, "Machine"), "owner Machine")
        assert oac["spec"]["nodeRegistration"]["name"] == "$METADATA_NAME"
        assert oac["spec"]["cpuArchitecture"] == "x86_64"
        ann = oac["metadata"]["annotations"]
        assert ann["cluster.x-k8s.io/cloned-from-name"] == "workers-oac"
        assert ann["cluster.x-k8s.io/cloned-from-groupkind"] == "OpenshiftAssistedConfigTemplate." + BOOT_GROUP
        assert ann["tmpl-ann"] == "boot" and oac["metadata"]["labels"]["tmpl-label"] == "boot"
        assert oac["metadata"]["labels"]["cluster.x-k8s.io/set-name"] == msname
        m3m = wait_obj(hub, ns, M3M, name, lambda o: owner(o, "Machine"), "owner Machine")
        assert m3m["spec"]["image"]["format"] == "qcow2"
        assert m3m["spec"]["hostSelector"] == {"matchLabels": {"role": "worker"}}
        assert m3m["metadata"]["annotations"]["cluster.x-k8s.io/cloned-from-groupkind"] == \
            "Metal3MachineTemplate." + INFRA_GROUP
        assert owner(m3m, "Machine")["controller"] is True

    md = wait_obj(hub, ns, MD, "workers", lambda o: o.get("status", {}).get("replicas") == 2, "replicas 2")
    assert md["status"]["phase"] == "Running"
    assert md["status"]["selector"] == f"{CN}=c,cluster.x-k8s.io/deployment-name=workers"
    assert md["status"]["readyReplicas"] == 0
    assert "cluster.x-k8s.io/machinedeployment" in md["metadata"]["finalizers"]
    assert owner(md, "Cluster")["controller"] is False

    # The Machines become Ready: counted as ready and available.
    for m in machines:
        finish_machine(hub, ns, m["metadata"]["name"])
    md = wait_obj(hub, ns, MD, "workers", lambda o: o["status"].get("availableReplicas") == 2, "2 available")
    assert md["status"]["readyReplicas"] == 2 and md["status"]["upToDateReplicas"] == 2
    assert cond(md, "Available")["status"] == "True"
    ms = get(hub, ns, MS, msname)
    assert ms["status"]["readyReplicas"] == 2 and ms["status"]["availableReplicas"] == 2
    assert_quiet(hub, ns, [(MD, "workers"), (MS, msname)] + [(MACHINE, m["metadata"]["name"]) for m in machines])

    # 2 -> 3: one more Machine with its clones, in the same MachineSet.
    # (spec.replicas is what the scale subresource writes.)
    patch(hub, ns, MD, "workers", {"spec": {"replicas": 3}})
    machines3 = md_machines(hub, ns, "workers", 3)
    assert {m["metadata"]["labels"]["cluster.x-k8s.io/set-name"] for m in machines3} == {msname}
    new = [m for m in machines3 if m["metadata"]["name"] not in {x["metadata"]["name"] for x in machines}]
    assert len(new) == 1
    newname = new[0]["metadata"]["name"]
    wait_obj(hub, ns, OAC, newname, lambda o: owner(o, "Machine"), "clone of the new Machine")
    wait_obj(hub, ns, M3M, newname, lambda o: owner(o, "Machine"), "clone of the new Machine")
    md = wait_obj(hub, ns, MD, "workers", lambda o: o["status"].get("replicas") == 3, "replicas 3")
    assert md["status"]["readyReplicas"] == 2

    # 3 -> 1: the Machine marked for deletion goes first (though Ready), then
    # the one that is not Ready; the oldest Ready one stays.
    marked = machines[1]["metadata"]["name"]
    keep = machines[0]["metadata"]["name"]
    hub.kubectl("-n", ns, "annotate", MACHINE, marked, "cluster.x-k8s.io/delete-machine=yes")
    patch(hub, ns, MD, "workers", {"spec": {"replicas": 1}})
    left = md_machines(hub, ns, "workers", 1)
    assert left[0]["metadata"]["name"] == keep
    for gone in (marked, newname):
        wait_gone(hub, ns, MACHINE, gone)
        wait_gone(hub, ns, OAC, gone)
        wait_gone(hub, ns, M3M, gone)
    md = wait_obj(hub, ns, MD, "workers", lambda o: o["status"].get("replicas") == 1, "replicas 1")
    assert md["status"]["phase"] == "Running"
    assert md["status"]["readyReplicas"] == 1


def test_machinedeployment_defaults_replicas_and_rolls_template(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cluster_obj(ns, "c", infra=None, cp=None))
    templates(hub, ns)
    md = md_obj(ns, "pool", "c", 1)
    del md["spec"]["replicas"]
    hub.apply_obj(md)
    wait_obj(hub, ns, MD, "pool", lambda o: o["spec"].get("replicas") == 1, "replicas defaulted to 1")
    first = md_machines(hub, ns, "pool", 1)[0]
    old_set = first["metadata"]["labels"]["cluster.x-k8s.io/set-name"]
    # A new template: a new MachineSet; the old one goes to zero and away.
    patch(hub, ns, MD, "pool", {"spec": {"template": {"metadata": {"labels": {"pool": "v2"}}}}})
    wait_gone(hub, ns, MS, old_set)
    m = md_machines(hub, ns, "pool", 1)[0]
    assert m["metadata"]["labels"]["pool"] == "v2"
    assert m["metadata"]["labels"]["cluster.x-k8s.io/set-name"] != old_set
    wait_gone(hub, ns, MACHINE, first["metadata"]["name"])


# --- Cluster deletion order ------------------------------------------------------------

HOLD = "test.agenthub.io/hold"


def deleting(hub, ns, res, name):
    o = get(hub, ns, res, name, check=False)
    return o is not None and bool(o["metadata"].get("deletionTimestamp"))


def test_cluster_deletion_order(module_hub, ns):
    hub = module_hub
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Cluster", ns, "m3c",
                      {"controlPlaneEndpoint": {"host": "192.168.111.7", "port": 6443}},
                      finalizers=[HOLD]))
    hub.apply_obj(oacp_obj(ns, "cp", finalizers=[HOLD]))
    hub.apply_obj(cluster_obj(ns, "c"))
    templates(hub, ns)
    hub.apply_obj(md_obj(ns, "workers", "c", 1))
    worker = md_machines(hub, ns, "workers", 1)[0]["metadata"]["name"]
    wait_obj(hub, ns, M3M, worker, lambda o: owner(o, "Machine"), "owner")
    # Hold the worker's infra machine so the order can be watched.
    patch(hub, ns, M3M, worker, {"metadata": {"finalizers": [HOLD]}})
    wait_obj(hub, ns, M3C, "m3c", lambda o: owner(o, "Cluster"), "owner")
    wait_obj(hub, ns, OACP, "cp", lambda o: owner(o, "Cluster"), "owner")

    hub.kubectl("-n", ns, "delete", CLUSTER, "c", "--wait=false")
    wait_for(lambda: deleting(hub, ns, MACHINE, worker), timeout=TIMEOUT, what="worker Machine deleting")
    wait_for(lambda: deleting(hub, ns, MD, "workers"), timeout=TIMEOUT, what="MachineDeployment deleting")
    cl = wait_obj(hub, ns, CLUSTER, "c", lambda o: o["status"].get("phase") == "Deleting", "Deleting")
    assert "cluster.cluster.x-k8s.io" in cl["metadata"]["finalizers"]
    assert cond(cl, "Deleting")["status"] == "True"
    assert cond(cl, "Deleting")["reason"] == "WaitingForWorkersDeletion"
    # While a worker is left, the control plane and the infra cluster stay.
    assert not deleting(hub, ns, OACP, "cp") and not deleting(hub, ns, M3C, "m3c")

    patch(hub, ns, M3M, worker, {"metadata": {"finalizers": None}})
    wait_gone(hub, ns, MACHINE, worker)
    wait_gone(hub, ns, MD, "workers")
    assert not items(hub, ns, MS)
    # Then the control plane; the infra cluster waits for it.
    wait_for(lambda: deleting(hub, ns, OACP, "cp"), timeout=TIMEOUT, what="control plane deleting")
    assert not deleting(hub, ns, M3C, "m3c")
    wait_obj(hub, ns, CLUSTER, "c", lambda o: cond(o, "Deleting")["reason"] == "WaitingForControlPlaneDeletion",
             "WaitingForControlPlaneDeletion")
    patch(hub, ns, OACP, "cp", {"metadata": {"finalizers": None}})
    wait_gone(hub, ns, OACP, "cp")
    # Then the infra cluster; the Cluster waits for it.
    wait_for(lambda: deleting(hub, ns, M3C, "m3c"), timeout=TIMEOUT, what="infra cluster deleting")
    wait_obj(hub, ns, CLUSTER, "c", lambda o: cond(o, "Deleting")["reason"] == "WaitingForInfrastructureDeletion",
             "WaitingForInfrastructureDeletion")
    patch(hub, ns, M3C, "m3c", {"metadata": {"finalizers": None}})
    wait_gone(hub, ns, CLUSTER, "c")


def test_machinedeployment_missing_template_is_reported_then_recovers(module_hub, ns):
    """An infrastructure template that does not exist: no Machine, ScalingUp
    says why, the bootstrap config cloned before it is deleted again; once
    the template is there, the Machine comes (retried with back-off)."""
    hub = module_hub
    hub.apply_obj(cluster_obj(ns, "c", infra=None, cp=None))
    templates(hub, ns, infra=False)
    hub.apply_obj(md_obj(ns, "workers", "c", 1))

    def blocked():
        sets = items(hub, ns, MS, "cluster.x-k8s.io/deployment-name=workers")
        c = cond(sets[0], "ScalingUp") if sets else None
        return c if c and "blocked" in c.get("message", "") else None
    c = wait_for(blocked, timeout=TIMEOUT, what="ScalingUp blocked on the MachineSet")
    assert c["status"] == "True" and c["reason"] == "ScalingUp"
    assert "Scaling up from 0 to 1 replicas is blocked because:" in c["message"]
    assert '"workers-m3" not found' in c["message"], c["message"]
    md = wait_obj(hub, ns, MD, "workers", lambda o: "blocked" in (cond(o, "ScalingUp") or {}).get("message", ""),
                  "ScalingUp blocked on the MachineDeployment")
    assert md["status"]["phase"] == "ScalingUp"
    assert not items(hub, ns, MACHINE)
    # Nothing half-made is left.
    wait_for(lambda: not [o for o in items(hub, ns, OAC) if not o["metadata"].get("deletionTimestamp")],
             timeout=TIMEOUT, what="no bootstrap config left")

    templates(hub, ns, boot=False)
    md_machines(hub, ns, "workers", 1)


def test_paused_cluster_and_annotation(module_hub, ns):
    """Cluster spec.paused (or the cluster.x-k8s.io/paused annotation) stops every
    reconcile of its objects, with the Paused condition saying why."""
    hub = module_hub
    c = cluster_obj(ns, "c", infra=None, cp=None)
    c["spec"]["paused"] = True
    hub.apply_obj(c)
    templates(hub, ns)
    hub.apply_obj(md_obj(ns, "workers", "c", 1))
    hub.apply_obj(obj(f"{BOOT_GROUP}/v1alpha2", "OpenshiftAssistedConfig", ns, "m1", {}))
    hub.apply_obj(obj(f"{INFRA_GROUP}/v1beta1", "Metal3Machine", ns, "m1", {}))
    hub.apply_obj(machine_obj(ns, "m1"))

    for res, name in ((CLUSTER, "c"), (MD, "workers"), (MACHINE, "m1")):
        o = wait_obj(hub, ns, res, name, lambda o: cond(o, "Paused"), "Paused condition")
        p = cond(o, "Paused")
        assert p["status"] == "True" and p["reason"] == "Paused"
        assert p["message"] == "Cluster spec.paused is set to true"
        assert not o["metadata"].get("finalizers")
    assert not items(hub, ns, MS)
    assert not owner(get(hub, ns, OAC, "m1"), "Machine")

    # Unpaused: everything goes on; the Machine's own annotation still holds it.
    hub.kubectl("-n", ns, "annotate", MACHINE, "m1", "cluster.x-k8s.io/paused=")
    patch(hub, ns, CLUSTER, "c", {"spec": {"paused": False}})
    md_machines(hub, ns, "workers", 1)
    wait_obj(hub, ns, CLUSTER, "c", lambda o: cond(o, "Paused")["status"] == "False", "not paused")
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: cond(o, "Paused")["message"] ==
                 "Machine has the cluster.x-k8s.io/paused annotation", "paused by its annotation")
    assert not m["metadata"].get("finalizers")
    hub.kubectl("-n", ns, "annotate", MACHINE, "m1", "cluster.x-k8s.io/paused-")
    m = wait_obj(hub, ns, MACHINE, "m1", lambda o: cond(o, "Paused")["status"] == "False"
                 and o["metadata"].get("finalizers"), "unpaused")
    assert cond(m, "Paused")["reason"] == "NotPaused"
    wait_obj(hub, ns, OAC, "m1", lambda o: owner(o, "Machine"), "owner Machine")
