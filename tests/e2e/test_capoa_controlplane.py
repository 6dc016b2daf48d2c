"""The CAPOA control-plane provider on a real hub (bmac-capi.md §C.7-§C.9):
OpenshiftAssistedControlPlane → ClusterDeployment, ClusterImageSet,
AgentClusterInstall, control-plane Machines with their OpenshiftAssistedConfig
and Metal3Machine, scaling through the /scale subresource, the kubeconfig
Secret and the conditions, bad versions, deletion.

Nothing of CAPI core runs here: the test does by hand what the Cluster
controller would (the ownerReference and cluster-name label on the OACP,
spec.controlPlaneEndpoint and status.initialization.infrastructureProvisioned
on the Cluster) and creates MachineDeployments itself.
"""
import base64
import json
import time

import pytest

from conftest import wait_for

CP = "controlplane.cluster.x-k8s.io"
FINALIZER = "openshiftassistedcontrolplane.controlplane.cluster.x-k8s.io/deprovision"
SSH = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample user@example.com"
WAIT = 30


def get(hub, ns, kind, name, check=True):
    args = ["get", kind, name] + (["-n", ns] if ns else [])
    r = hub.kubectl(*args, "-o", "json", check=check)
    return json.loads(r.stdout) if r.returncode == 0 else None


def cond(obj, t):
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == t:
            return c
    return None


def machines(hub, ns, oacp):
    items = hub.kubectl_json("get", "machines.cluster.x-k8s.io", "-n", ns, "-l",
                             f"cluster.x-k8s.io/control-plane-name={oacp}")["items"]
    return [m for m in items if not m["metadata"].get("deletionTimestamp")]


def make_cluster(hub, ns, name, oacp, provisioned=True):
    hub.apply_obj({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["172.18.0.0/20"]},
                                    "services": {"cidrBlocks": ["10.96.0.0/12"]}},
                 "controlPlaneRef": {"apiGroup": CP, "kind": "OpenshiftAssistedControlPlane", "name": oacp},
                 "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "Metal3Cluster",
                                       "name": name}}})
    if provisioned:
        provision(hub, ns, name)
    return get(hub, ns, "clusters.cluster.x-k8s.io", name)


def provision(hub, ns, name):
    """What CAPI core copies from the Metal3Cluster."""
    hub.kubectl("patch", "clusters.cluster.x-k8s.io", name, "-n", ns, "--type=merge", "-p",
                json.dumps({"spec": {"controlPlaneEndpoint": {"host": f"{name}.lab.home", "port": 6443}}}))
    r = hub.request("PATCH", f"/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/clusters/{name}/status",
                    {"status": {"initialization": {"infrastructureProvisioned": True}}},
                    content_type="application/merge-patch+json")
    assert r.status == 200, r.body


def make_template(hub, ns, name):
    hub.apply_obj({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1", "kind": "Metal3MachineTemplate",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"template": {"spec": {
            "automatedCleaningMode": "disabled",
            "image": {"url": "https://rhcos.example.com/rhcos.qcow2", "checksumType": "sha256",
                      "checksum": "https://rhcos.example.com/rhcos.qcow2.sha256", "format": "qcow2"}}}}})


def make_md(hub, ns, name, cluster, replicas):
    spec = {"clusterName": cluster,
            "selector": {"matchLabels": {"md": name}},
            "template": {"metadata": {"labels": {"md": name}},
                         "spec": {"clusterName": cluster,
                                  "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                              "kind": "OpenshiftAssistedConfigTemplate",
                                                              "name": name}},
                                  "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                        "kind": "Metal3MachineTemplate", "name": name}}}}
    if replicas is not None:
        spec["replicas"] = replicas
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
                   "metadata": {"name": name, "namespace": ns,
                                "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
                   "spec": spec})


def make_oacp(hub, ns, name, cluster, version="4.19.0", replicas=1, owner=None, config=None, annotations=None):
    meta = {"name": name, "namespace": ns, "labels": {"cluster.x-k8s.io/cluster-name": cluster}}
    if annotations:
        meta["annotations"] = annotations
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                                    "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}]
    cfg = {"baseDomain": "lab.home", "sshAuthorizedKey": SSH}
    cfg.update(config or {})
    hub.apply_obj({
        "apiVersion": f"{CP}/v1alpha3", "kind": "OpenshiftAssistedControlPlane", "metadata": meta,
        "spec": {"distributionVersion": version, "replicas": replicas, "config": cfg,
                 "openshiftAssistedConfigSpec": {"sshAuthorizedKey": SSH,
                                                 "nodeRegistration": {"name": "$METADATA_NAME"}},
                 "machineTemplate": {"metadata": {"labels": {"tier": "cp"}, "annotations": {"team": "a"}},
                                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                           "kind": "Metal3MachineTemplate",
                                                           "name": f"{name}-m3mt"}}}})


def set_owner(hub, ns, name, cluster):
    hub.kubectl("patch", "oacp", name, "-n", ns, "--type=merge", "-p", json.dumps({"metadata": {"ownerReferences": [
        {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": cluster["metadata"]["name"],
         "uid": cluster["metadata"]["uid"]}]}}))


def scale(hub, ns, name, n):
    """kubectl scale: the /scale subresource, whose labelSelectorPath is
    status.selector (set by this provider, left empty upstream)."""
    hub.kubectl("scale", "oacp", name, "-n", ns, f"--replicas={n}")
    sc = hub.get_json(f"/apis/{CP}/v1alpha3/namespaces/{ns}/openshiftassistedcontrolplanes/{name}/scale")
    assert sc["spec"]["replicas"] == n


def test_controlplane_objects_scale_and_delete(module_hub, ns):
    hub = module_hub
    make_template(hub, ns, "c1-cp-m3mt")
    make_md(hub, ns, "c1-workers", "c1", 2)
    make_md(hub, ns, "c1-noreplicas", "c1", None)
    cluster = make_cluster(hub, ns, "c1", "c1-cp", provisioned=False)

    # No ownerReference yet (the Cluster controller sets it): nothing is made.
    make_oacp(hub, ns, "c1-cp", "c1", config={"capabilities": {"additionalEnabledCapabilities": ["Console"]}})
    wait_for(lambda: FINALIZER in (get(hub, ns, "oacp", "c1-cp")["metadata"].get("finalizers") or []),
             timeout=WAIT, what="the finalizer")
    assert get(hub, ns, "clusterdeployments.hive.openshift.io", "c1-cp", check=False) is None
    # The owner but no endpoint / infrastructure: still nothing.
    set_owner(hub, ns, "c1-cp", cluster)
    assert get(hub, ns, "clusterdeployments.hive.openshift.io", "c1-cp", check=False) is None
    provision(hub, ns, "c1")

    # The placeholder pull secret, written into the spec.
    wait_for(lambda: (get(hub, ns, "oacp", "c1-cp")["spec"]["config"].get("pullSecretRef") or {}).get("name")
             == "placeholder-pull-secret", timeout=WAIT, what="pullSecretRef")
    ps = get(hub, ns, "secret", "placeholder-pull-secret")
    assert ps["type"] == "kubernetes.io/dockerconfigjson"
    assert json.loads(base64.b64decode(ps["data"][".dockerconfigjson"])) == \
        {"auths": {"fake-pull-secret": {"auth": "cGxhY2Vob2xkZXI6c2VjcmV0Cg=="}}}
    oacp = get(hub, ns, "oacp", "c1-cp")
    assert ps["metadata"]["ownerReferences"][0]["uid"] == oacp["metadata"]["uid"]

    # The ClusterDeployment.
    cd = wait_for(lambda: get(hub, ns, "clusterdeployments.hive.openshift.io", "c1-cp", check=False),
                  timeout=WAIT, what="the ClusterDeployment")
    assert cd["metadata"]["labels"] == {"tier": "cp", "cluster.x-k8s.io/cluster-name": "c1",
                                        "cluster.x-k8s.io/control-plane": "",
                                        "cluster.x-k8s.io/control-plane-name": "c1-cp"}
    owner = cd["metadata"]["ownerReferences"][0]
    # A plain owner reference (SetOwnerReference), not a controller one.
    assert (owner["kind"], owner["name"], owner.get("controller")) == ("OpenshiftAssistedControlPlane", "c1-cp", None)
    assert cd["spec"]["clusterName"] == "c1"
    assert cd["spec"]["baseDomain"] == "lab.home"
    assert cd["spec"]["clusterInstallRef"] == {"group": "extensions.hive.openshift.io", "version": "v1beta1",
                                               "kind": "AgentClusterInstall", "name": "c1-cp"}
    assert cd["spec"]["platform"] == {"agentBareMetal": {"agentSelector": {}}}
    assert cd["spec"]["pullSecretRef"] == {"name": "placeholder-pull-secret"}

    # One Machine with its OpenshiftAssistedConfig and Metal3Machine.
    ms = wait_for(lambda: machines(hub, ns, "c1-cp") or None, timeout=WAIT, what="a Machine")
    assert len(ms) == 1
    m = ms[0]
    name = m["metadata"]["name"]
    assert name.startswith("c1-cp-") and len(name) == len("c1-cp-") + 5
    cp_labels = {"tier": "cp", "cluster.x-k8s.io/cluster-name": "c1", "cluster.x-k8s.io/control-plane": "",
                 "cluster.x-k8s.io/control-plane-name": "c1-cp"}
    assert m["metadata"]["labels"] == cp_labels
    assert m["metadata"]["annotations"] == {"team": "a", "bmac.agent-install.openshift.io/role": "master"}
    mo = m["metadata"]["ownerReferences"][0]
    assert (mo["kind"], mo["name"], mo["controller"]) == ("OpenshiftAssistedControlPlane", "c1-cp", True)
    assert m["spec"]["clusterName"] == "c1"
    assert m["spec"]["bootstrap"]["configRef"] == {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                   "kind": "OpenshiftAssistedConfig", "name": name}
    assert m["spec"]["infrastructureRef"] == {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                              "kind": "Metal3Machine", "name": name}
    assert m["spec"]["deletion"] == {"nodeDeletionTimeoutSeconds": 10}
    oac = get(hub, ns, "openshiftassistedconfigs.bootstrap.cluster.x-k8s.io", name)
    assert all(oac["metadata"]["labels"][k] == v for k, v in cp_labels.items())
    assert oac["metadata"]["annotations"]["team"] == "a"
    assert oac["spec"]["sshAuthorizedKey"] == SSH
    assert oac["spec"]["nodeRegistration"] == {"name": "$METADATA_NAME"}
    assert oac["metadata"]["ownerReferences"][0]["name"] == "c1-cp"
    m3m = get(hub, ns, "metal3machines.infrastructure.cluster.x-k8s.io", name)
    assert m3m["metadata"]["labels"] == cp_labels
    assert m3m["metadata"]["annotations"] == {
        "team": "a", "cluster.x-k8s.io/cloned-from-name": "c1-cp-m3mt",
        "cluster.x-k8s.io/cloned-from-groupkind": "Metal3MachineTemplate.infrastructure.cluster.x-k8s.io"}
    assert m3m["spec"]["image"]["url"] == "https://rhcos.example.com/rhcos.qcow2"
    assert m3m["spec"]["automatedCleaningMode"] == "disabled"
    assert m3m["metadata"]["ownerReferences"][0].get("controller") is None

    # The ClusterImageSet: the arch of the cluster's OACs (x86_64 by default).
    cis = wait_for(lambda: (lambda c: c if c and c["spec"]["releaseImage"].endswith("-x86_64") else None)(
        get(hub, "", "clusterimagesets.hive.openshift.io", "c1-cp", check=False)), timeout=WAIT,
        what="the ClusterImageSet")
    assert cis["spec"]["releaseImage"] == "quay.io/openshift-release-dev/ocp-release:4.19.0-x86_64"

    # The AgentClusterInstall.
    aci = wait_for(lambda: (lambda a: a if a and a["spec"].get("provisionRequirements", {}).get("workerAgents") == 3
                            else None)(get(hub, ns, "agentclusterinstalls.extensions.hive.openshift.io", "c1-cp",
                                           check=False)), timeout=WAIT, what="the ACI with its 3 workers")
    assert aci["metadata"]["labels"] == dict(cp_labels, **{
        "agentclusterinstalls.agent-install.openshift.io/consumer": "OpenshiftAssistedControlPlane"})
    assert any(o["kind"] == "OpenshiftAssistedControlPlane" and o["name"] == "c1-cp"
               for o in aci["metadata"]["ownerReferences"])
    spec = aci["spec"]
    assert spec["clusterDeploymentRef"] == {"name": "c1-cp"}
    assert spec["imageSetRef"] == {"name": "c1-cp"}
    assert spec["platformType"] == "None"
    # c1-noreplicas was created without spec.replicas: the hub's CAPI core
    # defaults it to 1, as CAPI's defaulting webhook does, so 2 + 1.
    assert get(hub, ns, "machinedeployments.cluster.x-k8s.io", "c1-noreplicas")["spec"]["replicas"] == 1
    assert spec["provisionRequirements"] == {"controlPlaneAgents": 1, "workerAgents": 3}
    assert spec["sshPublicKey"] == SSH
    assert spec["networking"]["clusterNetwork"] == [{"cidr": "172.18.0.0/20", "hostPrefix": 23}]
    assert spec["networking"]["serviceNetwork"] == ["10.96.0.0/12"]
    assert json.loads(aci["metadata"]["annotations"]["agent-install.openshift.io/install-config-overrides"]) == \
        {"capabilities": {"baselineCapabilitySet": "vCurrent", "additionalEnabledCapabilities": ["Console"]}}

    # Status and conditions.
    def status_ok():
        o = get(hub, ns, "oacp", "c1-cp")
        s = o.get("status") or {}
        mr = cond(o, "MachinesReady")
        return o if s.get("replicas") == 1 and mr and cond(o, "Available") else None
    o = wait_for(status_ok, timeout=WAIT, what="the OACP status")
    s = o["status"]
    assert s["selector"] == "cluster.x-k8s.io/control-plane-name=c1-cp,cluster.x-k8s.io/control-plane"
    assert s["version"] == "1.32"
    assert (s["readyReplicas"], s["availableReplicas"], s["upToDateReplicas"]) == (0, 0, 1)
    assert cond(o, "KubernetesVersionAvailable")["status"] == "True"
    # Upstream sets MachinesCreated True only once as many Machines are
    # ready as wanted: none is ready here (no CAPI core).
    assert cond(o, "MachinesCreated") is None
    mr = cond(o, "MachinesReady")
    assert (mr["status"], mr["reason"], mr["message"]) == ("False", "MachinesNotReady", "0 of 1 machines are ready")
    kc = cond(o, "KubeconfigAvailable")
    assert (kc["status"], kc["reason"], kc["message"]) == ("False", "KubeconfigUnavailable",
                                                           "Kubeconfig not available")
    av = cond(o, "Available")
    assert (av["status"], av["reason"]) == ("False", "ControlPlaneInstalling")
    assert av["message"].startswith("Controlplane installing, status: ")
    assert cond(o, "Ready")["status"] == "False"
    up = cond(get(hub, ns, "machines.cluster.x-k8s.io", name), "UpToDate")
    assert (up["status"], up["reason"]) == ("True", "UpToDate")

    # CAPI core marks a Machine Ready and Available once its host is
    # installed (test_capi.py goes that way); here the Machine is paused, so
    # the hub's CAPI core leaves its conditions to this test, which marks it.
    r = hub.request("PATCH", f"/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/machines/{name}",
                    {"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}},
                    content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    wait_for(lambda: (cond(get(hub, ns, "machines.cluster.x-k8s.io", name), "Paused") or {}).get("status") == "True",
             timeout=WAIT, what="the Machine paused")
    now = "2026-01-01T00:00:00Z"
    r = hub.request("PATCH", f"/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/machines/{name}/status",
                    {"status": {"conditions": [
                        {"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": now}
                        for t in ("Ready", "Available", "UpToDate")]}},
                    content_type="application/merge-patch+json")
    assert r.status == 200, r.body
    o = wait_for(lambda: (lambda o: o if o["status"].get("readyReplicas") == 1 else None)(
        get(hub, ns, "oacp", "c1-cp")), timeout=WAIT, interval=0.3, what="readyReplicas 1")
    assert o["status"]["availableReplicas"] == 1
    assert cond(o, "MachinesReady")["status"] == "True"
    assert cond(o, "MachinesCreated")["status"] == "True"
    # Ready sums up: the kubeconfig is not there yet.
    rd = cond(o, "Ready")
    assert (rd["status"], rd["reason"], rd["message"]) == ("False", "KubeconfigUnavailable",
                                                           "Kubeconfig not available")
    # Settled: no write without a change (the OACP and its Machine stay put).
    time.sleep(1)
    rv = (get(hub, ns, "oacp", "c1-cp")["metadata"]["resourceVersion"],
          get(hub, ns, "machines.cluster.x-k8s.io", name)["metadata"]["resourceVersion"])
    time.sleep(2)
    assert (get(hub, ns, "oacp", "c1-cp")["metadata"]["resourceVersion"],
            get(hub, ns, "machines.cluster.x-k8s.io", name)["metadata"]["resourceVersion"]) == rv

    # Unpaused again: the hub's CAPI core takes the Machine back (its
    # deletion below goes through CAPI core's finalizer).
    r = hub.request("PATCH", f"/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/machines/{name}",
                    {"metadata": {"annotations": {"cluster.x-k8s.io/paused": None}}},
                    content_type="application/merge-patch+json")
    assert r.status == 200, r.body

    # Workers: the sum of the MachineDeployments' replicas.
    hub.kubectl("scale", "machinedeployments.cluster.x-k8s.io", "c1-workers", "-n", ns, "--replicas=3")
    wait_for(lambda: get(hub, ns, "agentclusterinstalls.extensions.hive.openshift.io", "c1-cp")["spec"]
             ["provisionRequirements"]["workerAgents"] == 4, timeout=WAIT, what="workerAgents 4")

    # Scale 1 -> 3 -> 1: the oldest goes.
    scale(hub, ns, "c1-cp", 3)
    ms = wait_for(lambda: (lambda l: l if len(l) == 3 else None)(machines(hub, ns, "c1-cp")), timeout=WAIT,
                  what="3 Machines")
    wait_for(lambda: get(hub, ns, "agentclusterinstalls.extensions.hive.openshift.io", "c1-cp")["spec"]
             ["provisionRequirements"]["controlPlaneAgents"] == 3, timeout=WAIT, what="controlPlaneAgents 3")
    names = sorted(ms, key=lambda m: (m["metadata"]["creationTimestamp"], m["metadata"]["name"]))
    assert names[0]["metadata"]["name"] == name
    scale(hub, ns, "c1-cp", 1)
    ms = wait_for(lambda: (lambda l: l if len(l) == 1 else None)(machines(hub, ns, "c1-cp")), timeout=WAIT,
                  what="1 Machine")
    assert ms[0]["metadata"]["name"] == names[2]["metadata"]["name"]
    wait_for(lambda: get(hub, ns, "oacp", "c1-cp")["status"].get("replicas") == 1, timeout=WAIT,
             what="status.replicas 1")
    sc = hub.get_json(f"/apis/{CP}/v1alpha3/namespaces/{ns}/openshiftassistedcontrolplanes/c1-cp/scale")
    assert sc["status"] == {"replicas": 1,
                            "selector": "cluster.x-k8s.io/control-plane-name=c1-cp,cluster.x-k8s.io/control-plane"}

    # The admin kubeconfig appears: <cluster>-kubeconfig, initialized.
    hub.apply_obj({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c1-admin", "namespace": ns},
                   "data": {"kubeconfig": base64.b64encode(b"apiVersion: v1\nkind: Config\n").decode()}})
    hub.kubectl("patch", "agentclusterinstalls.extensions.hive.openshift.io", "c1-cp", "-n", ns, "--type=merge",
                "-p", json.dumps({"spec": {"clusterMetadata": {
                    "clusterID": "11111111-1111-1111-1111-111111111111", "infraID": "c1-x",
                    "adminKubeconfigSecretRef": {"name": "c1-admin"},
                    "adminPasswordSecretRef": {"name": "c1-admin-password"}}}}))
    sec = wait_for(lambda: get(hub, ns, "secret", "c1-kubeconfig", check=False), timeout=WAIT,
                   what="c1-kubeconfig")
    assert sec["type"] == "cluster.x-k8s.io/secret"
    assert sec["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "c1"}
    so = sec["metadata"]["ownerReferences"][0]
    assert (so["kind"], so["name"], so["controller"]) == ("OpenshiftAssistedControlPlane", "c1-cp", True)
    assert base64.b64decode(sec["data"]["value"]) == b"apiVersion: v1\nkind: Config\n"
    assert get(hub, ns, "secret", "c1-admin")["metadata"]["labels"] == {"cluster.x-k8s.io/cluster-name": "c1"}
    o = wait_for(lambda: (lambda o: o if (cond(o, "KubeconfigAvailable") or {}).get("status") == "True" else None)(
        get(hub, ns, "oacp", "c1-cp")), timeout=WAIT, what="KubeconfigAvailable")
    assert o["status"]["initialization"]["controlPlaneInitialized"] is True

    # Installed (what the hub's CD controller sets at the end of an install):
    # the installed version is the spec's, so no upgrade is pending.
    hub.kubectl("patch", "clusterdeployments.hive.openshift.io", "c1-cp", "-n", ns, "--type=merge", "-p",
                '{"spec":{"installed":true}}')
    o = wait_for(lambda: (lambda o: o if cond(o, "UpgradeCompleted") else None)(get(hub, ns, "oacp", "c1-cp")),
                 timeout=WAIT, interval=0.3, what="UpgradeCompleted")
    assert o["status"]["distributionVersion"] == "4.19.0"
    assert cond(o, "UpgradeCompleted")["status"] == "True"

    # Deletion: the ClusterDeployment goes, then the finalizer.
    hub.kubectl("delete", "oacp", "c1-cp", "-n", ns, "--wait=false")
    wait_for(lambda: get(hub, ns, "oacp", "c1-cp", check=False) is None, timeout=WAIT, what="the OACP gone")
    wait_for(lambda: get(hub, ns, "clusterdeployments.hive.openshift.io", "c1-cp", check=False) is None,
             timeout=WAIT, what="the ClusterDeployment gone")


def test_release_override_and_arch(module_hub, ns):
    hub = module_hub
    make_template(hub, ns, "c2-cp-m3mt")
    cluster = make_cluster(hub, ns, "c2", "c2-cp")
    # Three control-plane nodes: BareMetal with VIPs is refused for a single
    # node (the ACI admission: UserManagedNetworking must be set with SNO).
    make_oacp(hub, ns, "c2-cp", "c2", owner=cluster, replicas=3,
              annotations={"cluster.x-k8s.io/release-image-repository-override": "registry.example.com/ocp/release"},
              config={"apiVIPs": ["192.168.111.5"], "ingressVIPs": ["192.168.111.4"], "clusterName": "c2-custom"})
    make_md(hub, ns, "c2-workers", "c2", 2)
    cis = wait_for(lambda: (lambda c: c if c and c["spec"]["releaseImage"].endswith("-x86_64") else None)(
        get(hub, "", "clusterimagesets.hive.openshift.io", "c2-cp", check=False)), timeout=WAIT,
        what="the ClusterImageSet")
    assert cis["spec"]["releaseImage"] == "registry.example.com/ocp/release:4.19.0-x86_64"
    aci = wait_for(lambda: get(hub, ns, "agentclusterinstalls.extensions.hive.openshift.io", "c2-cp",
                               check=False), timeout=WAIT, what="the ACI")
    assert aci["spec"]["platformType"] == "BareMetal"
    assert aci["spec"]["apiVIPs"] == ["192.168.111.5"]
    assert aci["spec"]["ingressVIPs"] == ["192.168.111.4"]
    # MachineDeployments of the Cluster (by its name, not config.clusterName).
    wait_for(lambda: get(hub, ns, "agentclusterinstalls.extensions.hive.openshift.io", "c2-cp")["spec"]
             ["provisionRequirements"] == {"controlPlaneAgents": 3, "workerAgents": 2}, timeout=WAIT,
             what="provisionRequirements")
    # config.clusterName: the CD's name for the cluster and, as upstream, its
    # and the ACI's cluster-name label (bmac-capi.md surprise 3).
    cd = get(hub, ns, "clusterdeployments.hive.openshift.io", "c2-cp")
    assert cd["spec"]["clusterName"] == "c2-custom"
    assert cd["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "c2-custom"
    assert aci["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "c2-custom"
    # Machines carry the Cluster's name.
    ms = wait_for(lambda: machines(hub, ns, "c2-cp") or None, timeout=WAIT, what="a Machine")
    assert ms[0]["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"] == "c2"
    assert ms[0]["spec"]["clusterName"] == "c2"
    ico = json.loads(aci["metadata"]["annotations"]["agent-install.openshift.io/install-config-overrides"])
    assert ico["capabilities"]["baselineCapabilitySet"] == "None"
    assert "baremetal" in ico["capabilities"]["additionalEnabledCapabilities"]


@pytest.mark.parametrize("version,ctype,reason,message", [
    ("4.13.0", "MachinesCreated", "MachineGenerationFailed",
     "version 4.13.0 is not supported, the minimum supported version is 4.14.0"),
    ("4.99.0", "KubernetesVersionAvailable", "KubernetesVersionUnavailable",
     "failed to get k8s version from release image: image not found: "
     "quay.io/openshift-release-dev/ocp-release:4.99.0-multi: no release of OpenShift 4.99 is known to this hub"),
])
def test_bad_distribution_version(module_hub, ns, version, ctype, reason, message):
    hub = module_hub
    make_template(hub, ns, "c3-cp-m3mt")
    cluster = make_cluster(hub, ns, "c3", "c3-cp")
    make_oacp(hub, ns, "c3-cp", "c3", version=version, owner=cluster)
    # The message names the release image: no OAC yet (no Machine is made
    # without a release), so the arch is multi.
    o = wait_for(lambda: (lambda o: o if (cond(o, ctype) or {}).get("message") == message else None)(
        get(hub, ns, "oacp", "c3-cp")), timeout=WAIT, interval=0.3, what=ctype)
    c = cond(o, ctype)
    assert (c["status"], c["reason"], c["message"]) == ("False", reason, message)
    if version == "4.99.0":
        u = cond(o, "UpgradeAvailable")
        assert (u["status"], u["reason"]) == ("False", "UpgradeImageUnavailable")
        assert u["message"] == "upgrade unavailable: " + message.split("release image: ", 1)[1]
        assert "version" not in o["status"]
        assert machines(hub, ns, "c3-cp") == []
    else:
        # Nothing else happens below the floor.
        assert get(hub, ns, "clusterdeployments.hive.openshift.io", "c3-cp", check=False) is None
        assert machines(hub, ns, "c3-cp") == []


def test_paused(module_hub, ns):
    hub = module_hub
    make_template(hub, ns, "c5-cp-m3mt")
    cluster = make_cluster(hub, ns, "c5", "c5-cp")
    make_oacp(hub, ns, "c5-cp", "c5", owner=cluster, annotations={"cluster.x-k8s.io/paused": ""})
    wait_for(lambda: FINALIZER in (get(hub, ns, "oacp", "c5-cp")["metadata"].get("finalizers") or []),
             timeout=WAIT, what="the finalizer")
    # Paused after the finalizer: the passes that follow make nothing.
    hub.kubectl("annotate", "oacp", "c5-cp", "-n", ns, "touch=1")
    hub.kubectl("get", "oacp", "c5-cp", "-n", ns)
    assert get(hub, ns, "clusterdeployments.hive.openshift.io", "c5-cp", check=False) is None
    assert machines(hub, ns, "c5-cp") == []
    hub.kubectl("annotate", "oacp", "c5-cp", "-n", ns, "cluster.x-k8s.io/paused-")
    wait_for(lambda: get(hub, ns, "clusterdeployments.hive.openshift.io", "c5-cp", check=False), timeout=WAIT,
             what="the ClusterDeployment once unpaused")


def test_missing_infrastructure_template(module_hub, ns):
    hub = module_hub
    cluster = make_cluster(hub, ns, "c4", "c4-cp")
    make_oacp(hub, ns, "c4-cp", "c4", owner=cluster)   # no Metal3MachineTemplate c4-cp-m3mt
    o = wait_for(lambda: (lambda o: o if cond(o, "MachinesCreated") else None)(get(hub, ns, "oacp", "c4-cp")),
                 timeout=WAIT, interval=0.3, what="MachinesCreated")
    c = cond(o, "MachinesCreated")
    assert (c["status"], c["reason"]) == ("False", "InfrastructureTemplateCloningFailed")
    assert "c4-cp-m3mt" in c["message"]
    assert machines(hub, ns, "c4-cp") == []
    # The template appears: the Machine follows (the retry's back-off).
    make_template(hub, ns, "c4-cp-m3mt")
    wait_for(lambda: len(machines(hub, ns, "c4-cp")) == 1, timeout=90, interval=0.5, what="the Machine")
