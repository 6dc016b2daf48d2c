"""Cluster installation end to end: a ClusterDeployment, its
AgentClusterInstall and a ClusterImageSet are installed on simulated hosts
booted from the InfraEnv's discovery ISO, driven with the real kubectl.

Covers the single-node path from the upstream manifests (to Completed True,
`kubectl wait` included), a 3 control-plane + 2 worker cluster followed by a
day-2 worker, a malformed install-config override (SpecSynced InputError,
no start), a host failing at "Writing image to disk" (Failed True), and the
input errors of the ClusterDeployments controller."""
import base64
import json
import signal
import subprocess

import pytest

from conftest import BUILD, CONFORMANCE_DIR, wait_for

AGENT = BUILD / "agenthub-agent"
NS = "spoke-cluster"
PULL_SECRET = '{"auths":{"cloud.openshift.com":{"auth":"c2VjcmV0OnRva2Vu","email":"a@example.com"}}}'
RELEASE = "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64"
SUBNET = "192.168.126.0/24"


@pytest.fixture
def ihub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def conds_of(obj):
    return {c["type"]: c for c in obj.get("status", {}).get("conditions", [])}


def setup_common(hub, ns=NS, imageset="openshift-v4.9.0"):
    if not (CONFORMANCE_DIR / "clusterDeployment.yaml").is_file():
        pytest.skip("conformance manifests not available")
    hub.create_namespace(ns)
    hub.kubectl("-n", ns, "create", "secret", "generic", "pull-secret",
                "--type=kubernetes.io/dockerconfigjson",
                f"--from-literal=.dockerconfigjson={PULL_SECRET}")
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": imageset}, "spec": {"releaseImage": RELEASE}})


def infraenv(hub, name, cd, ns=NS, auto_approve=False):
    obj = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
           "metadata": {"name": name, "namespace": ns},
           "spec": {"clusterRef": {"name": cd, "namespace": ns},
                    "pullSecretRef": {"name": "pull-secret"}}}
    if auto_approve:
        obj["spec"]["agentApproval"] = {"autoApprove": True}
    hub.apply_obj(obj)
    hub.kubectl("-n", ns, "wait", "--for=condition=ImageCreated", f"infraenv/{name}", "--timeout=30s")
    return hub.kubectl_json("-n", ns, "get", "infraenv", name)


def cluster_deployment(name, aci, ns=NS, cluster_name=None):
    return {"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"baseDomain": "hive.example.com", "clusterName": cluster_name or name,
                     "clusterInstallRef": {"group": "extensions.hive.openshift.io",
                                           "kind": "AgentClusterInstall", "name": aci,
                                           "version": "v1beta1"},
                     "platform": {"agentBareMetal": {"agentSelector": {}}},
                     "pullSecretRef": {"name": "pull-secret"}}}


def multi_node_aci(name, cd, ns=NS, cp=3, workers=2, annotations=None):
    return {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
            "spec": {"clusterDeploymentRef": {"name": cd},
                     "imageSetRef": {"name": "openshift-v4.9.0"},
                     "platformType": "None",
                     "networking": {"userManagedNetworking": True,
                                    "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                    "machineNetwork": [{"cidr": SUBNET}],
                                    "serviceNetwork": ["172.30.0.0/16"]},
                     "provisionRequirements": {"controlPlaneAgents": cp, "workerAgents": workers}}}


class Sim:
    """agenthub-agent simulate against an InfraEnv's ISO, stopped at teardown."""

    def __init__(self, hub, ie, tmp_path, hosts, seed=1, extra=()):
        if not AGENT.is_file():
            pytest.fail(f"{AGENT} not built")
        self.log_path = tmp_path / f"sim-{seed}-{hosts}.log"
        self.log = open(self.log_path, "w")
        args = [str(AGENT), "simulate", "--iso", ie["status"]["isoDownloadURL"], "--hosts", str(hosts),
                "--cacert", str(hub.ca_path), "--seed", str(seed), "--subnet", SUBNET,
                "--stage-seconds", "1", *extra]
        if "--max-poll-seconds" in subprocess.run([str(AGENT), "simulate", "--help"], capture_output=True,
                                                  text=True).stdout + \
                subprocess.run([str(AGENT), "--help"], capture_output=True, text=True).stdout:
            args += ["--max-poll-seconds", "1"]
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


def agents(hub, ns=NS):
    return hub.kubectl_json("-n", ns, "get", "agents")["items"]


def approve_all(hub, n, ns=NS):
    def ready():
        items = [a for a in agents(hub, ns) if a.get("status", {}).get("inventory", {}).get("cpu")]
        return items if len(items) >= n else None
    items = wait_for(ready, timeout=60, what=f"{n} Agents with an inventory")
    for a in items:
        if not a["spec"].get("approved"):
            hub.kubectl("-n", ns, "patch", "agents.agent-install.openshift.io", a["metadata"]["name"],
                        "-p", '{"spec":{"approved":true}}', "--type", "merge")
    return items


def aci_state(hub, name, ns=NS):
    return hub.kubectl_json("-n", ns, "get", "aci", name).get("status", {}).get("debugInfo", {}).get("state")


def secret_data(hub, ns, name):
    s = hub.kubectl_json("-n", ns, "get", "secret", name)
    return s, {k: base64.b64decode(v).decode() for k, v in s.get("data", {}).items()}


# ---------------------------------------------------------------------------


def test_sno_from_upstream_manifests_installs(ihub, tmp_path, sims):
    hub = ihub
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    aci_name = "test-agent-cluster-install"

    def synced():
        c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", aci_name))
        return c.get("SpecSynced", {}).get("status") == "True" and c
    c = wait_for(synced, timeout=20, what="ACI SpecSynced")
    assert c["SpecSynced"]["reason"] == "SyncOK" and c["SpecSynced"]["message"] == "SyncOK"
    assert c["Completed"]["reason"] == "InstallationNotStarted", c
    aci = hub.kubectl_json("-n", NS, "get", "aci", aci_name)
    assert "agentclusterinstall.agent-install.openshift.io/ai-deprovision" in aci["metadata"]["finalizers"]
    assert any(r["kind"] == "ClusterDeployment" and r["name"] == "single-node"
               for r in aci["metadata"]["ownerReferences"])
    assert aci["status"]["debugInfo"]["state"] in ("insufficient", "pending-for-input")
    assert "cluster_id=" + aci["metadata"]["uid"] in aci["status"]["debugInfo"]["eventsURL"]
    cd = hub.kubectl_json("-n", NS, "get", "cd", "single-node")
    assert "clusterdeployments.agent-install.openshift.io/ai-deprovision" in cd["metadata"]["finalizers"]

    ie = infraenv(hub, "myinfraenv", "single-node")
    sims.append(Sim(hub, ie, tmp_path, hosts=1))
    (agent,) = approve_all(hub, 1)
    assert agent["spec"]["clusterDeploymentName"] == {"name": "single-node", "namespace": NS}

    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{aci_name}", "--timeout=180s", timeout=200)

    aci = hub.kubectl_json("-n", NS, "get", "aci", aci_name)
    c = conds_of(aci)
    assert c["Completed"]["reason"] == "InstallationCompleted", c
    assert c["Failed"]["status"] == "False" and c["Stopped"]["status"] == "True", c
    assert c["Stopped"]["reason"] == "InstallationCompleted", c
    assert aci["status"]["debugInfo"]["state"] in ("installed", "adding-hosts")
    assert aci["status"]["progress"]["totalPercentage"] == 100
    meta = aci["spec"]["clusterMetadata"]
    assert meta["infraID"] == aci["metadata"]["uid"] and meta["clusterID"]
    assert meta["adminKubeconfigSecretRef"]["name"] == "single-node-admin-kubeconfig"
    assert meta["adminPasswordSecretRef"]["name"] == "single-node-admin-password"

    a = hub.kubectl_json("-n", NS, "get", "agent", agent["metadata"]["name"])
    ac = conds_of(a)
    assert a["status"]["debugInfo"]["state"] == "installed"
    assert ac["Installed"]["status"] == "True" and ac["Installed"]["reason"] == "InstallationCompleted", ac
    assert a["status"]["role"] == "master" and a["status"]["bootstrap"] is True
    assert a["status"]["progress"]["currentStage"] == "Done"

    sec, data = secret_data(hub, NS, "single-node-admin-kubeconfig")
    assert sec["metadata"]["labels"] == {"hive.openshift.io/cluster-deployment-name": "single-node",
                                         "hive.openshift.io/secret-type": "kubeconfig"}
    assert sec["metadata"]["ownerReferences"][0]["kind"] == "ClusterDeployment"
    kc = data["kubeconfig"]
    assert "server: https://api.test-cluster.hive.example.com:6443" in kc
    for field in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
        assert field + ":" in kc
    ca_pem = base64.b64decode(kc.split("certificate-authority-data: ")[1].split()[0]).decode()
    crt_pem = base64.b64decode(kc.split("client-certificate-data: ")[1].split()[0]).decode()
    (tmp_path / "ca.pem").write_text(ca_pem)
    (tmp_path / "crt.pem").write_text(crt_pem)
    v = subprocess.run(["openssl", "verify", "-CAfile", str(tmp_path / "ca.pem"), str(tmp_path / "crt.pem")],
                       capture_output=True, text=True)
    assert v.returncode == 0, v.stdout + v.stderr
    subj = subprocess.run(["openssl", "x509", "-noout", "-subject", "-in", str(tmp_path / "crt.pem")],
                          capture_output=True, text=True).stdout
    assert "system:masters" in subj and "system:admin" in subj, subj
    sec, data = secret_data(hub, NS, "single-node-admin-password")
    assert data["username"] == "kubeadmin" and len(data["password"]) == 23
    assert sec["metadata"]["labels"]["hive.openshift.io/secret-type"] == "kubeadmincreds"

    cd = hub.kubectl_json("-n", NS, "get", "cd", "single-node")
    assert cd["spec"]["installed"] is True
    assert cd["spec"]["clusterMetadata"] == meta
    cdc = conds_of(cd)
    assert cdc["ClusterInstallCompleted"]["status"] == "True", cdc
    assert cdc["Provisioned"]["reason"] == "Provisioned", cdc
    assert cd["status"]["installedTimestamp"]

    # The events of the install are Kubernetes Events too.
    ev = hub.kubectl_json("-n", NS, "get", "events")["items"]
    assert any("installed" in e.get("message", "") for e in ev), [e.get("message") for e in ev][-20:]

    # Restart-safe: a restarted hub keeps the state and rewrites nothing.
    before = hub.kubectl_json("-n", NS, "get", "aci", aci_name)
    hub.restart()
    wait_for(lambda: hub.readyz(), timeout=20, what="hub ready")
    after = hub.kubectl_json("-n", NS, "get", "aci", aci_name)
    assert after["status"]["debugInfo"]["state"] == before["status"]["debugInfo"]["state"]
    assert conds_of(after)["Completed"]["status"] == "True"


def test_failure_at_writing_image_to_disk(ihub, tmp_path, sims):
    hub = ihub
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, extra=["--fail-at-stage", "Writing image to disk"]))
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    aci = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")
    c = conds_of(aci)
    assert c["Failed"]["reason"] == "InstallationFailed", c
    assert c["Failed"]["message"].startswith("The installation failed: "), c
    assert c["Completed"]["reason"] == "InstallationFailed", c
    assert c["Stopped"]["message"] == "The installation has stopped due to error", c
    assert aci["status"]["debugInfo"]["state"] == "error"
    (a,) = agents(hub)
    assert a["status"]["debugInfo"]["state"] == "error"
    assert "Writing image to disk" in a["status"]["debugInfo"]["stateInfo"], a["status"]["debugInfo"]
    assert conds_of(a)["Installed"]["reason"] == "InstallationFailed"
    cd = conds_of(hub.kubectl_json("-n", NS, "get", "cd", "single-node"))
    assert cd["ProvisionFailed"]["status"] == "True", cd


def test_three_masters_two_workers_then_day2_worker(ihub, tmp_path, sims):
    hub = ihub
    setup_common(hub)
    hub.apply_obj(cluster_deployment("multi", "multi-aci"))
    hub.apply_obj(multi_node_aci("multi-aci", "multi"))
    ie = infraenv(hub, "multi-ie", "multi", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=5, seed=3))
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/multi-aci", "--timeout=120s", timeout=140)
    items = agents(hub)
    assert len(items) == 5
    roles = sorted(a["status"]["role"] for a in items)
    assert roles == ["master", "master", "master", "worker", "worker"], roles
    assert sum(1 for a in items if a["status"].get("bootstrap")) == 1
    assert all(a["status"]["debugInfo"]["state"] == "installed" for a in items)
    boot = [a for a in items if a["status"].get("bootstrap")][0]
    assert boot["status"]["role"] == "master"
    wait_for(lambda: aci_state(hub, "multi-aci") == "adding-hosts", timeout=30, what="adding-hosts")
    c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", "multi-aci"))
    assert c["Completed"]["status"] == "True" and c["Stopped"]["status"] == "True", c

    # Day 2: one more host from the same ISO joins the installed cluster.
    sims[0].stop()
    sims.append(Sim(hub, ie, tmp_path, hosts=6, seed=3))
    first = {a["metadata"]["name"] for a in items}

    def day2_agent():
        new = [a for a in agents(hub) if a["metadata"]["name"] not in first]
        return new[0] if new else None
    new = wait_for(day2_agent, timeout=60, what="the day-2 Agent")

    def added():
        a = hub.kubectl_json("-n", NS, "get", "agent", new["metadata"]["name"])
        return a if a.get("status", {}).get("debugInfo", {}).get("state") == "added-to-existing-cluster" else None
    a = wait_for(added, timeout=120, what="added-to-existing-cluster")
    assert a["status"]["kind"] == "AddToExistingClusterHost"
    assert a["status"]["role"] == "worker"
    assert conds_of(a)["Installed"]["status"] == "True"


def test_malformed_override_blocks_install(ihub, tmp_path, sims):
    hub = ihub
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    aci = json.loads(hub.kubectl("create", "--dry-run=client", "-o", "json", "-f",
                                 str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml")).stdout)
    aci["metadata"]["annotations"] = {
        "agent-install.openshift.io/install-config-overrides": '{"fips": tru'}
    hub.apply_obj(aci)
    name = aci["metadata"]["name"]

    def input_error():
        c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", name))
        return c.get("SpecSynced", {}).get("reason") == "InputError" and c
    c = wait_for(input_error, timeout=20, what="SpecSynced InputError")
    assert c["SpecSynced"]["status"] == "False"
    assert c["SpecSynced"]["message"].startswith(
        "The Spec could not be synced due to an input error: "
        "Failed to parse 'agent-install.openshift.io/install-config-overrides' annotation"), c

    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=1))

    def ready():
        return aci_state(hub, name) == "ready"
    wait_for(ready, timeout=90, what="cluster ready")
    # Ready, approved, requirements met: still nothing starts while the spec is broken.
    for _ in range(3):
        hub.kubectl("-n", NS, "wait", "--for=jsonpath={.status.debugInfo.state}=ready", f"aci/{name}",
                    "--timeout=5s")
    c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", name))
    assert c["Completed"]["reason"] == "InstallationNotStarted", c

    # Fixing the annotation lets it start.
    hub.kubectl("-n", NS, "annotate", "--overwrite", "aci", name,
                'agent-install.openshift.io/install-config-overrides={"fips": true}')
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{name}", "--timeout=180s", timeout=200)


def test_input_errors_are_reported(ihub):
    hub = ihub
    setup_common(hub)
    hub.apply_obj(cluster_deployment("noimg", "noimg-aci"))
    aci = multi_node_aci("noimg-aci", "noimg")
    del aci["spec"]["imageSetRef"]
    hub.apply_obj(aci)
    hub.apply_obj(cluster_deployment("badimg", "badimg-aci"))
    aci = multi_node_aci("badimg-aci", "badimg")
    aci["spec"]["imageSetRef"] = {"name": "absent"}
    hub.apply_obj(aci)
    cd = cluster_deployment("nops", "nops-aci")
    del cd["spec"]["pullSecretRef"]
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("nops-aci", "nops"))
    hub.apply_obj(multi_node_aci("orphan-aci", "absent-cd"))
    hub.kubectl("-n", NS, "create", "configmap", "m1", "--from-literal=a.yaml=kind: A")
    hub.kubectl("-n", NS, "create", "configmap", "m2", "--from-literal=a.yaml=kind: B")
    hub.apply_obj(cluster_deployment("dupman", "dupman-aci"))
    aci = multi_node_aci("dupman-aci", "dupman")
    aci["spec"]["manifestsConfigMapRefs"] = [{"name": "m1"}, {"name": "m2"}]
    hub.apply_obj(aci)
    hub.apply_obj(cluster_deployment("noman", "noman-aci"))
    aci = multi_node_aci("noman-aci", "noman")
    aci["spec"]["manifestsConfigMapRef"] = {"name": "absent-cm"}
    hub.apply_obj(aci)
    # Mirror registry ConfigMaps: missing, and without registries.conf.
    hub.kubectl("-n", NS, "create", "configmap", "mirror-bad", "--from-literal=ca-bundle.crt=x")
    for cdn, cm in (("nomirror", "absent-mirror"), ("badmirror", "mirror-bad")):
        hub.apply_obj(cluster_deployment(cdn, f"{cdn}-aci"))
        aci = multi_node_aci(f"{cdn}-aci", cdn)
        aci["spec"]["mirrorRegistryRef"] = {"name": cm, "namespace": NS}
        hub.apply_obj(aci)

    def spec(name):
        c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", name))
        s = c.get("SpecSynced")
        return s if s and s["status"] == "False" else None
    s = wait_for(lambda: spec("noimg-aci"), timeout=20, what="noimg SpecSynced")
    assert s["reason"] == "InputError"
    assert s["message"] == ("The Spec could not be synced due to an input error: ClusterImageSet must be "
                            "specified in AgentClusterInstall.Spec.ImageSetRef for cluster that is not installed")
    s = wait_for(lambda: spec("badimg-aci"), timeout=20, what="badimg SpecSynced")
    assert "ClusterImageSet absent not found. Please ensure the ClusterImageSet exists" in s["message"], s
    s = wait_for(lambda: spec("nops-aci"), timeout=20, what="nops SpecSynced")
    assert s["reason"] == "InputError"
    assert s["message"].endswith("PullSecret is required for ClusterDeployment nops/" + NS), s
    s = wait_for(lambda: spec("orphan-aci"), timeout=20, what="orphan SpecSynced")
    assert s["message"] == ("The Spec could not be synced due to an input error: ClusterDeployment with name "
                            f"'absent-cd' in namespace '{NS}' not found. Ensure that the CRD is already applied.")
    s = wait_for(lambda: spec("dupman-aci"), timeout=20, what="dupman SpecSynced")
    assert s["reason"] == "BackendError", s
    assert s["message"] == ("The Spec could not be synced due to backend error: "
                            "Conflict in manifest names ('a.yaml' is not unique)"), s
    s = wait_for(lambda: spec("noman-aci"), timeout=20, what="noman SpecSynced")
    assert "Failed to get referenced ConfigMap" in s["message"] and "absent-cm" in s["message"], s
    s = wait_for(lambda: spec("nomirror-aci"), timeout=20, what="nomirror SpecSynced")
    assert s["reason"] == "InputError", s
    assert s["message"] == ("The Spec could not be synced due to an input error: Failed to get referenced "
                            "ConfigMap: ConfigMap \"absent-mirror\" not found"), s
    s = wait_for(lambda: spec("badmirror-aci"), timeout=20, what="badmirror SpecSynced")
    assert s["message"] == ("The Spec could not be synced due to an input error: ConfigMap "
                            f"{NS}/mirror-bad does not contain registries.conf key"), s
    c = conds_of(hub.kubectl_json("-n", NS, "get", "aci", "orphan-aci"))
    assert c["Completed"]["reason"] == "NotAvailable" and c["Completed"]["status"] == "Unknown", c

    # Deleting the CD takes the ACI with it, through both finalizers.
    hub.kubectl("-n", NS, "delete", "cd", "noimg", "--timeout=30s")
    r = hub.kubectl("-n", NS, "get", "aci", "noimg-aci", check=False)
    assert r.returncode != 0 and "NotFound" in r.stderr


def test_retry_after_failure(ihub, tmp_path, sims):
    """The upstream retry (kube-api-install-retry.md): after a failed
    install, delete the AgentClusterInstall and create it again; the hosts,
    booted again, register into the new cluster, which installs."""
    hub = ihub
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    failing = Sim(hub, ie, tmp_path, hosts=1, seed=31, extra=["--fail-at-stage", "Writing image to disk"])
    sims.append(failing)
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    old_uid = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")["metadata"]["uid"]
    failing.stop()

    hub.kubectl("-n", NS, "delete", "aci", "test-agent-cluster-install", "--timeout=60s", timeout=70)
    wait_for(lambda: not agents(hub), timeout=30, what="the failed cluster's Agents deleted")
    assert hub.kubectl_json("-n", NS, "get", "cd", "single-node")["metadata"]["name"] == "single-node"
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    # The same host (same seed: same id and hardware), rebooted and fixed.
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=31))
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    aci = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")
    assert aci["metadata"]["uid"] != old_uid
    assert conds_of(aci)["Completed"]["reason"] == "InstallationCompleted"
    assert conds_of(aci)["Failed"]["status"] == "False"
    (a,) = agents(hub)
    assert a["status"]["debugInfo"]["state"] == "installed"
