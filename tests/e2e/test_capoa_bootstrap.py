"""The CAPI OpenShift Assisted bootstrap provider end to end (bmac-capi.md
§C.4, §C.5, §C.6): the objects CAPI core and the control-plane provider
would create are made by hand (a Cluster, a control-plane Machine whose
configRef names an OpenshiftAssistedConfig owned by it, a ClusterDeployment
labelled with the cluster name and its AgentClusterInstall); the hub then
creates InfraEnv <machine>, the bootstrap data Secret (the InfraEnv's
discovery ignition plus configdrive-metadata and set-hostname) and the
OAC status, and sets role, approval, ignitionConfigOverrides and
installerArgs on the Agent of a simulated host booted from that InfraEnv."""
import base64
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import wait_for
from test_install import Sim, cluster_deployment, multi_node_aci, setup_common

NS = "capi-boot"
CLUSTER = "capi-c1"
OVERRIDE = {"ignition": {"version": "3.1.0"},
            "storage": {"files": [{"path": "/etc/capoa-extra", "mode": 420,
                                   "contents": {"source": "data:,extra"}}]}}


def v1b1(oac):
    return {c["type"]: c for c in oac.get("status", {}).get("v1beta1Conditions", [])}


def v1b2(oac):
    return {c["type"]: c for c in oac.get("status", {}).get("conditions", [])}


def validate(tmp_path, text, name):
    if not shutil.which("ignition-validate"):
        pytest.skip("ignition-validate not installed")
    p = tmp_path / name
    p.write_text(text)
    r = subprocess.run(["ignition-validate", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


def capi_objects(hub, machine="m-cp-0", oac="oac-cp-0", control_plane=True, spec=None, annotations=None):
    """The Machine and its OpenshiftAssistedConfig, as CAPI core and the
    control plane would create them."""
    labels = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    if control_plane:
        labels["cluster.x-k8s.io/control-plane"] = ""
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                   "metadata": {"name": machine, "namespace": NS, "labels": labels},
                   "spec": {"clusterName": CLUSTER,
                            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                  "kind": "Metal3Machine", "name": machine},
                            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                        "kind": "OpenshiftAssistedConfig",
                                                        "name": oac}}}})
    m = hub.kubectl_json("-n", NS, "get", "machine.cluster.x-k8s.io", machine)
    hub.apply_obj({"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedConfig",
                   "metadata": {"name": oac, "namespace": NS,
                                "labels": {"cluster.x-k8s.io/cluster-name": CLUSTER},
                                "annotations": annotations if annotations is not None else {
                                    "openshiftassistedconfig.cluster.x-k8s.io/ignition-override":
                                        json.dumps(OVERRIDE)},
                                "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2",
                                                     "kind": "Machine", "name": machine,
                                                     "uid": m["metadata"]["uid"],
                                                     "controller": True}]},
                   "spec": spec if spec is not None else {"cpuArchitecture": "x86_64",
                            "sshAuthorizedKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyForTests capi@test",
                            "kernelArguments": [{"operation": "append", "value": "nosmt"}],
                            "nodeRegistration": {"name": "$METADATA_NAME",
                                                 "kubeletExtraLabels": ["metal3.io/uuid=$METADATA_UUID"]}}})
    return m


def get_opt(hub, *args):
    r = hub.kubectl("-n", NS, "get", *args, "--ignore-not-found", "-o", "json", check=False)
    return json.loads(r.stdout) if r.stdout.strip() else None


def get_oac(hub, name="oac-cp-0"):
    return hub.kubectl_json("-n", NS, "get", "openshiftassistedconfig", name)


def wait_reason(hub, reason, name="oac-cp-0"):
    def check():
        c = v1b1(get_oac(hub, name)).get("DataSecretAvailable")
        return c if c and c["status"] == "False" and c.get("reason") == reason else None
    return wait_for(check, timeout=30, interval=0.2, what=f"DataSecretAvailable False {reason}")


def test_bootstrap_config_to_agent(hub_factory, tmp_path, sims):
    hub = hub_factory()
    setup_common(hub, ns=NS)
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": CLUSTER, "namespace": NS}, "spec": {}})
    capi_objects(hub)

    # The finalizer, and a wait for the cluster's infrastructure.
    c = wait_reason(hub, "WaitingForClusterInfrastructure")
    assert c["severity"] == "Info"
    oac = get_oac(hub)
    assert "openshiftassistedconfig.bootstrap.cluster.x-k8s.io/deprovision" in oac["metadata"]["finalizers"]
    assert v1b1(oac)["Ready"]["reason"] == "WaitingForClusterInfrastructure"
    assert "dataSecretName" not in oac["status"]

    # Infrastructure provisioned, but no ClusterDeployment labelled with the cluster yet.
    hub.kubectl("-n", NS, "patch", "cluster.cluster.x-k8s.io", CLUSTER, "--subresource=status",
                "--type", "merge", "-p",
                json.dumps({"status": {"initialization": {"infrastructureProvisioned": True}}}))
    c = wait_reason(hub, "WaitingForAssistedInstaller")
    assert "cluster.x-k8s.io/cluster-name=capi-c1" in c["message"], c

    cd = cluster_deployment("capi-cd", "capi-aci", ns=NS)
    cd["metadata"]["labels"] = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("capi-aci", "capi-cd", ns=NS, cp=1, workers=0))

    # InfraEnv <machine>.
    ie = wait_for(lambda: get_opt(hub, "infraenv", "m-cp-0"),
                  timeout=30, what="InfraEnv m-cp-0")
    assert ie["metadata"]["labels"] == {
        "bootstrap.cluster.x-k8s.io/openshiftAssistedConfig": "oac-cp-0",
        "cluster.x-k8s.io/cluster-name": CLUSTER}
    assert ie["spec"]["clusterRef"] == {"name": "capi-cd", "namespace": NS}
    assert ie["spec"]["imageType"] == "full-iso"
    assert ie["spec"]["cpuArchitecture"] == "x86_64"
    assert ie["spec"]["sshAuthorizedKey"].startswith("ssh-ed25519 ")
    assert ie["spec"]["pullSecretRef"] == {"name": "placeholder-pull-secret"}
    owners = {(o["kind"], o["name"]): o for o in ie["metadata"]["ownerReferences"]}
    assert set(owners) == {("OpenshiftAssistedConfig", "oac-cp-0"), ("Machine", "m-cp-0")}
    assert not any(o.get("controller") for o in owners.values())
    ps = hub.kubectl_json("-n", NS, "get", "secret", "placeholder-pull-secret")
    assert json.loads(base64.b64decode(ps["data"][".dockerconfigjson"])) == {
        "auths": {"fake-pull-secret": {"auth": "cGxhY2Vob2xkZXI6c2VjcmV0Cg=="}}}
    assert ps["metadata"]["ownerReferences"][0]["kind"] == "OpenshiftAssistedConfig"

    # The bootstrap data Secret and the status.
    def created():
        o = get_oac(hub)
        return o if o.get("status", {}).get("initialization", {}).get("dataSecretCreated") else None
    oac = wait_for(created, timeout=60, interval=0.2, what="dataSecretCreated")
    st = oac["status"]
    assert st["dataSecretName"] == "oac-cp-0"
    assert st["observedGeneration"] == oac["metadata"]["generation"]
    assert v1b1(oac)["DataSecretAvailable"]["status"] == "True"
    assert v1b1(oac)["Ready"]["status"] == "True"
    assert v1b2(oac)["DataSecretAvailable"]["status"] == "True"
    sec = hub.kubectl_json("-n", NS, "get", "secret", "oac-cp-0")
    assert sec["type"] == "cluster.x-k8s.io/secret"
    assert base64.b64decode(sec["data"]["format"]) == b"ignition"
    assert sec["metadata"]["ownerReferences"][0]["name"] == "oac-cp-0"
    assert "labels" not in sec["metadata"] or not sec["metadata"]["labels"]
    value = base64.b64decode(sec["data"]["value"]).decode()
    validate(tmp_path, value, "bootstrap.ign")
    data = json.loads(value)
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "m-cp-0")
    ctx = hub.ssl_context()
    with urllib.request.urlopen(ie["status"]["bootArtifacts"]["discoveryIgnitionURL"], context=ctx,
                                timeout=30) as r:
        disc = json.loads(r.read())
    units = [u["name"] for u in data["systemd"]["units"]]
    assert units == [u["name"] for u in disc["systemd"]["units"]] + ["configdrive-metadata.service",
                                                                     "set-hostname.service"]
    files = [f["path"] for f in data["storage"]["files"]]
    assert files == [f["path"] for f in disc["storage"]["files"]] + ["/usr/local/bin/configdrive_metadata",
                                                                     "/usr/local/bin/set_hostname"]
    # The same Secret stays (written once).
    rv = sec["metadata"]["resourceVersion"]

    # A simulated host booted from the InfraEnv: its Agent gets the CAPOA fields.
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/m-cp-0", "--timeout=60s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "m-cp-0")
    # Two hosts boot from it: one Agent per Machine is approved.
    sim = Sim(hub, ie, tmp_path, 2, seed=31)
    sims.append(sim)

    def capoa_agents():
        items = hub.kubectl_json("-n", NS, "get", "agents", "-l",
                                 "infraenvs.agent-install.openshift.io=m-cp-0")["items"]
        done = [a for a in items if a["spec"].get("ignitionConfigOverrides")]
        return done if len(done) == 2 else None
    both = wait_for(capoa_agents, timeout=90, interval=0.5, what="two Agents with CAPOA fields")
    assert sorted(a["spec"]["approved"] for a in both) == [False, True]
    assert all(a["spec"]["role"] == "master" for a in both)
    agent = next(a for a in both if a["spec"]["approved"])
    spec = agent["spec"]
    assert json.loads(spec["installerArgs"]) == ["--append-karg", "nosmt"]
    validate(tmp_path, spec["ignitionConfigOverrides"], "agent.ign")
    ov = json.loads(spec["ignitionConfigOverrides"])
    assert ov["ignition"]["version"] == "3.1.0"
    assert sorted(u["name"] for u in ov["systemd"]["units"]) == [
        "configdrive-metadata.service", "kubelet-customlabels.service", "set-hostname.service"]
    paths = {f["path"]: f for f in ov["storage"]["files"]}
    assert set(paths) == {"/usr/local/bin/configdrive_metadata", "/usr/local/bin/kubelet_custom_labels",
                          "/usr/local/bin/set_hostname", "/etc/capoa-extra"}
    assert paths["/usr/local/bin/set_hostname"]["mode"] == 493
    labels_script = base64.b64decode(paths["/usr/local/bin/kubelet_custom_labels"]["contents"]["source"]
                                     .split(",", 1)[1]).decode()
    assert "CUSTOM_KUBELET_LABELS=metal3.io/uuid=${METADATA_UUID}" in labels_script
    # The hub applies what was set to the host (SpecSynced tells).
    def synced():
        a = hub.kubectl_json("-n", NS, "get", "agent", agent["metadata"]["name"])
        c = {c["type"]: c for c in a.get("status", {}).get("conditions", [])}.get("SpecSynced")
        return c if c and c["status"] == "True" and c["reason"] == "SyncOK" else None
    wait_for(synced, timeout=60, interval=0.5, what="SpecSynced True on the approved Agent")
    # Nothing differs any more: no further spec write (the generation stays),
    # while the host keeps reporting (status writes re-queue the Agent).
    gen = {a["metadata"]["name"]: a["metadata"]["generation"]
           for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
    time.sleep(3)
    assert gen == {a["metadata"]["name"]: a["metadata"]["generation"]
                   for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
    sec2 = hub.kubectl_json("-n", NS, "get", "secret", "oac-cp-0")
    assert sec2["metadata"]["resourceVersion"] == rv
    sim.stop()

    # Deleting the OAC of a control-plane Machine that is not being deleted waits.
    hub.kubectl("-n", NS, "delete", "openshiftassistedconfig", "oac-cp-0", "--wait=false")
    oac = get_oac(hub)
    assert oac["metadata"].get("deletionTimestamp")
    assert hub.kubectl_json("-n", NS, "get", "infraenv", "m-cp-0")
    # The Machine goes: the InfraEnv and then the OAC go.
    hub.kubectl("-n", NS, "delete", "machine.cluster.x-k8s.io", "m-cp-0")
    wait_for(lambda: not get_opt(hub, "openshiftassistedconfig", "oac-cp-0"),
             timeout=60, interval=0.3, what="the OAC gone")
    # Its deletion was asked for; a host bound to the cluster keeps an
    # InfraEnv until its Agent goes (the InfraEnv controller's rule).
    ie = get_opt(hub, "infraenv", "m-cp-0")
    assert ie is None or ie["metadata"].get("deletionTimestamp")
    for a in both:
        hub.kubectl("-n", NS, "delete", "agent", a["metadata"]["name"], "--wait=false", check=False)
    wait_for(lambda: not get_opt(hub, "infraenv", "m-cp-0"),
             timeout=60, interval=0.3, what="the InfraEnv gone")


def test_worker_config_without_node_registration(hub_factory, tmp_path):
    """A worker's config: the InfraEnv takes the config's pull secret and
    discovery override; with no node name the bootstrap data is the
    discovery ignition as it is; deleting the config of a worker does not
    wait for its Machine."""
    hub = hub_factory()
    setup_common(hub, ns=NS)
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": CLUSTER, "namespace": NS}, "spec": {}})
    hub.kubectl("-n", NS, "patch", "cluster.cluster.x-k8s.io", CLUSTER, "--subresource=status",
                "--type", "merge", "-p",
                json.dumps({"status": {"initialization": {"infrastructureProvisioned": True}}}))
    cd = cluster_deployment("capi-cd", "capi-aci", ns=NS)
    cd["metadata"]["labels"] = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("capi-aci", "capi-cd", ns=NS, cp=3, workers=1))
    disc_override = json.dumps({"ignition": {"version": "3.1.0"},
                                "storage": {"files": [{"path": "/etc/discovery-extra",
                                                       "contents": {"source": "data:,d"}}]}})
    m = capi_objects(hub, machine="m-w-0", oac="oac-w-0", control_plane=False,
                     spec={"pullSecretRef": {"name": "pull-secret"}},
                     annotations={"openshiftassistedconfig.cluster.x-k8s.io/discovery-ignition-override":
                                  disc_override})
    assert m["metadata"]["name"] == "m-w-0"

    def created():
        o = get_oac(hub, "oac-w-0")
        return o if o.get("status", {}).get("initialization", {}).get("dataSecretCreated") else None
    oac = wait_for(created, timeout=60, interval=0.2, what="dataSecretCreated")
    assert oac["status"]["dataSecretName"] == "oac-w-0"
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "m-w-0")
    assert ie["spec"]["pullSecretRef"] == {"name": "pull-secret"}
    assert json.loads(ie["spec"]["ignitionConfigOverride"]) == json.loads(disc_override)
    assert get_opt(hub, "secret", "placeholder-pull-secret") is None
    sec = hub.kubectl_json("-n", NS, "get", "secret", "oac-w-0")
    value = base64.b64decode(sec["data"]["value"]).decode()
    validate(tmp_path, value, "worker.ign")
    with urllib.request.urlopen(ie["status"]["bootArtifacts"]["discoveryIgnitionURL"],
                                context=hub.ssl_context(), timeout=30) as r:
        disc = json.loads(r.read())
    assert json.loads(value) == disc
    assert any(f["path"] == "/etc/discovery-extra" for f in disc["storage"]["files"])

    hub.kubectl("-n", NS, "delete", "openshiftassistedconfig", "oac-w-0", "--wait=false")
    wait_for(lambda: not get_opt(hub, "openshiftassistedconfig", "oac-w-0"),
             timeout=60, interval=0.3, what="the worker OAC gone")
    wait_for(lambda: not get_opt(hub, "infraenv", "m-w-0"),
             timeout=60, interval=0.3, what="the worker InfraEnv gone")


def test_bad_node_name_is_reported(hub_factory):
    """A node name that is not a variable reference never reaches a script:
    DataSecretAvailable False CreatingSecretFailed names the field, and no
    bootstrap data Secret is made."""
    hub = hub_factory()
    setup_common(hub, ns=NS)
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": CLUSTER, "namespace": NS}, "spec": {}})
    hub.kubectl("-n", NS, "patch", "cluster.cluster.x-k8s.io", CLUSTER, "--subresource=status",
                "--type", "merge", "-p",
                json.dumps({"status": {"initialization": {"infrastructureProvisioned": True}}}))
    cd = cluster_deployment("capi-cd", "capi-aci", ns=NS)
    cd["metadata"]["labels"] = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("capi-aci", "capi-cd", ns=NS, cp=1, workers=0))
    capi_objects(hub, spec={"nodeRegistration": {"name": "$(reboot)"}}, annotations={})
    c = wait_reason(hub, "CreatingSecretFailed")
    assert c["severity"] == "Warning"
    assert "spec.nodeRegistration.name" in c["message"], c
    assert get_opt(hub, "secret", "oac-cp-0") is None
    assert not get_oac(hub)["status"].get("initialization", {}).get("dataSecretCreated")


class BlackHole:
    """A TCP server that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted = []  # monotonic times
        self.conns = []
        self.closed = False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            self.accepted.append(time.monotonic())

    def close(self):
        self.closed = True
        for c in self.conns + [self.sock]:
            try:
                c.close()
            except OSError:
                pass


def hub_with_fetch_held(hub_factory, bh):
    """A hub whose service URL (so the InfraEnvs' eventsURL) is the black
    hole, with a control-plane config whose ignition fetch has begun."""
    hub = hub_factory(extra_args=["--service-url", f"http://127.0.0.1:{bh.port}"])
    setup_common(hub, ns=NS)
    hub.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                   "metadata": {"name": CLUSTER, "namespace": NS}, "spec": {}})
    hub.kubectl("-n", NS, "patch", "cluster.cluster.x-k8s.io", CLUSTER, "--subresource=status",
                "--type", "merge", "-p",
                json.dumps({"status": {"initialization": {"infrastructureProvisioned": True}}}))
    cd = cluster_deployment("capi-cd", "capi-aci", ns=NS)
    cd["metadata"]["labels"] = {"cluster.x-k8s.io/cluster-name": CLUSTER}
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("capi-aci", "capi-cd", ns=NS, cp=1, workers=0))
    capi_objects(hub)
    # The fetch has begun: the black hole holds its connection.
    wait_for(lambda: bh.accepted, timeout=60, interval=0.1, what="the ignition request")
    return hub


def test_ignition_fetch_does_not_hold_the_worker(hub_factory):
    """The hub runs every controller on one reconcile thread: an
    ignition fetch from an eventsURL host that accepts and never answers
    runs beside it, so an unrelated InfraEnv gets its image at once; the
    fetch ends after its 20 s bound with DataSecretAvailable False
    WaitingForAssistedInstaller, and the api_key is nowhere in the status
    or the log."""
    bh = BlackHole()
    try:
        hub = hub_with_fetch_held(hub_factory, bh)
        began = bh.accepted[0]
        ie = hub.kubectl_json("-n", NS, "get", "infraenv", "m-cp-0")
        events_url = ie["status"]["debugInfo"]["eventsURL"]
        assert events_url.startswith(f"http://127.0.0.1:{bh.port}/"), events_url
        api_key = events_url.split("api_key=")[1].split("&")[0]
        assert api_key

        # Meanwhile another controller's work completes.
        t0 = time.monotonic()
        hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                       "metadata": {"name": "unrelated", "namespace": NS},
                       "spec": {"clusterRef": {"name": "capi-cd", "namespace": NS},
                                "pullSecretRef": {"name": "pull-secret"}}})

        def image_created():
            o = hub.kubectl_json("-n", NS, "get", "infraenv", "unrelated")
            return any(c["type"] == "ImageCreated" and c["status"] == "True"
                       for c in o.get("status", {}).get("conditions", []))
        wait_for(image_created, timeout=30, interval=0.1, what="ImageCreated on the unrelated InfraEnv")
        took = time.monotonic() - t0
        assert took < 8, f"the unrelated InfraEnv waited {took:.1f}s behind the ignition fetch"
        # ... while the fetch was still held (its bound is 20 s).
        assert time.monotonic() - began < 19, "the fetch ended before the check; nothing was proved"
        assert v1b1(get_oac(hub)).get("DataSecretAvailable", {}).get("reason") != "WaitingForAssistedInstaller"

        # The fetch gives up after its bound; the OAC says why.
        c = wait_reason(hub, "WaitingForAssistedInstaller")
        assert "failed retrieving ignition" in c["message"], c
        assert time.monotonic() - began >= 15, c
        assert api_key not in json.dumps(get_oac(hub))
        assert api_key not in hub.log_text()
    finally:
        bh.close()


def test_hub_stops_during_ignition_fetch(hub_factory):
    """SIGTERM while an ignition fetch is held: the fetch is aborted, its
    thread joined, and the hub exits cleanly well before the fetch's 20 s
    bound."""
    bh = BlackHole()
    try:
        hub = hub_with_fetch_held(hub_factory, bh)
        t0 = time.monotonic()
        assert hub.stop() == 0
        took = time.monotonic() - t0
        assert took < 8, f"the hub took {took:.1f}s to stop during an ignition fetch"
    finally:
        bh.close()
