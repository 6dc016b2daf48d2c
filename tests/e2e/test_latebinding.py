"""Late binding, returning agents to the InfraEnv, and teardown, end to end
with the real kubectl and simulated hosts (kubeapi.md §4.4, §5; backend.md
§1; the upstream "return agents to InfraEnv" test plan).

A late-binding InfraEnv (no clusterRef) boots a pool of hosts that stay
known-unbound; patching an Agent's clusterDeploymentName binds it (Bound:
Binding, then Bound) and the cluster installs; deleting the cluster returns
the Agents to the pool (no reference, Bound False UnbindingPendingUserAction),
a reboot into the discovery image brings them back to known-unbound, and
they install again into a new cluster.  Deleting a cluster whose InfraEnv
points at it deletes its Agents instead."""
import json

import pytest

from conftest import CONFORMANCE_DIR, wait_for
from test_install import NS, Sim, agents, cluster_deployment, conds_of, infraenv, multi_node_aci, setup_common

UNBOUND_MSG = "The agent is not bound to any cluster deployment"
UPUA_MSG = "The agent is currently unbinding; Pending host reboot from infraenv image"


@pytest.fixture
def lbhub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def late_binding_infraenv(hub, name="myinfraenv", ns=NS):
    """The upstream late-binding InfraEnv manifest, verbatim but for its name."""
    text = (CONFORMANCE_DIR / "infraEnvLateBinding.yaml").read_text()
    if name != "myinfraenv":
        text = text.replace("name: myinfraenv", f"name: {name}")
    hub.kubectl("apply", "-f", "-", input=text)
    hub.kubectl("-n", ns, "wait", "--for=condition=ImageCreated", f"infraenv/{name}", "--timeout=30s")
    return hub.kubectl_json("-n", ns, "get", "infraenv", name)


def agent(hub, name, ns=NS):
    return hub.kubectl_json("-n", ns, "get", "agent", name)


def state(a):
    return a.get("status", {}).get("debugInfo", {}).get("state")


def wait_pool(hub, n, ns=NS, timeout=90):
    """n Agents known-unbound, with an inventory and no ClusterDeployment."""
    def ready():
        items = [a for a in agents(hub, ns) if state(a) == "known-unbound"]
        return items if len(items) >= n else None
    return wait_for(ready, timeout=timeout, what=f"{n} known-unbound Agents")


def bind(hub, name, cd, ns=NS, cd_ns=NS):
    hub.kubectl("-n", ns, "patch", "agents.agent-install.openshift.io", name, "-p",
                json.dumps({"spec": {"clusterDeploymentName": {"name": cd, "namespace": cd_ns}}}), "--type", "merge")


def unbind(hub, name, ns=NS, check=True):
    return hub.kubectl("-n", ns, "patch", "agents.agent-install.openshift.io", name, "-p",
                       '{"spec":{"clusterDeploymentName":null}}', "--type", "merge", check=check)


def approve(hub, name, ns=NS):
    hub.kubectl("-n", ns, "patch", "agents.agent-install.openshift.io", name, "-p",
                '{"spec":{"approved":true}}', "--type", "merge")


def sno(hub, cd="single-node", aci="test-agent-cluster-install"):
    """The upstream SNO ClusterDeployment + AgentClusterInstall."""
    cdt = (CONFORMANCE_DIR / "clusterDeployment.yaml").read_text()
    acit = (CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml").read_text()
    if cd != "single-node":
        cdt = cdt.replace("name: single-node", f"name: {cd}")
        acit = acit.replace("name: single-node", f"name: {cd}")
    if aci != "test-agent-cluster-install":
        cdt = cdt.replace("name: test-agent-cluster-install", f"name: {aci}")
        acit = acit.replace("name: test-agent-cluster-install", f"name: {aci}")
    hub.kubectl("apply", "-f", "-", input=cdt)
    hub.kubectl("apply", "-f", "-", input=acit)


def wait_spec_failed(hub, name, why):
    """The Agent's SpecSynced condition once it is False."""
    def failed():
        s = conds_of(agent(hub, name)).get("SpecSynced", {})
        return s if s.get("status") == "False" else None
    return wait_for(failed, timeout=30, what=f"SpecSynced False for {why}")


def bound_cond(a):
    return conds_of(a).get("Bound", {})


def wait_bound_reason(hub, name, reason, timeout=60):
    def ok():
        a = agent(hub, name)
        return a if bound_cond(a).get("reason") == reason else None
    return wait_for(ok, timeout=timeout, what=f"Agent {name} Bound reason {reason}")


# ---------------------------------------------------------------------------


def test_late_binding_install_delete_returns_agent(lbhub, tmp_path, sims):
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    assert "clusterRef" not in ie["spec"]
    sims.append(Sim(hub, ie, tmp_path, hosts=1, extra=["--reboot-after", "2"]))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    assert "clusterDeploymentName" not in a["spec"] or a["spec"]["clusterDeploymentName"] is None
    b = bound_cond(a)
    assert (b["status"], b["reason"], b["message"]) == ("False", "Unbound", UNBOUND_MSG)

    # Binding to a ClusterDeployment that does not exist yet is reported,
    # and retried when it appears.
    bind(hub, name, "single-node")

    s = wait_spec_failed(hub, name, "the missing ClusterDeployment")
    assert s["reason"] == "BackendError", s
    assert s["message"] == ("The Spec could not be synced due to backend error: failed to get clusterDeployment "
                            "with name single-node in namespace spoke-cluster: "
                            "clusterdeployments.hive.openshift.io \"single-node\" not found"), s
    assert state(agent(hub, name)) == "known-unbound"

    sno(hub)
    # Binding, then the host re-registers into the cluster: Bound.
    wait_bound_reason(hub, name, "Bound", timeout=90)
    a = agent(hub, name)
    assert bound_cond(a)["status"] == "True"
    assert bound_cond(a)["message"] == "The agent is bound to a cluster deployment"
    assert conds_of(a)["SpecSynced"]["status"] == "True"
    approve(hub, name)
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    assert state(agent(hub, name)) == "installed"

    # Deleting the cluster keeps the late-bound Agent, unbound, waiting for a reboot.
    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    assert hub.kubectl("-n", NS, "get", "aci", "--no-headers", "-o", "name").stdout.strip() == ""
    a = wait_bound_reason(hub, name, "UnbindingPendingUserAction")
    assert a["spec"].get("clusterDeploymentName") is None
    b = bound_cond(a)
    assert (b["status"], b["message"]) == ("False", UPUA_MSG)
    assert state(a) == "unbinding-pending-user-action"
    assert "role" not in a["status"] or a["status"]["role"] in ("auto-assign", "")
    assert "progress" not in a["status"]

    # Rebooted into the discovery image (the simulator plays the BMC): back
    # in the pool, and a new cluster installs on it.
    a = wait_bound_reason(hub, name, "Unbound", timeout=120)
    assert bound_cond(a)["message"] == UNBOUND_MSG
    wait_for(lambda: state(agent(hub, name)) == "known-unbound", timeout=90, what="known-unbound again")
    install_late_bound_sno(hub, name, cd="next-sno", aci="next-aci")


def test_cluster_not_late_binding_delete_deletes_agents(lbhub, tmp_path, sims):
    """Test plan 1: the InfraEnv points at the cluster: deleting the cluster
    deletes its Agents (and the hosts cannot register into it again)."""
    hub = lbhub
    setup_common(hub)
    sno(hub)
    ie = infraenv(hub, "bound-ie", "single-node")
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=3))

    def bound_known():
        items = [a for a in agents(hub) if state(a) == "known"]
        return items or None
    (a,) = wait_for(bound_known, timeout=90, what="a bound known Agent")
    assert a["spec"]["clusterDeploymentName"] == {"name": "single-node", "namespace": NS}
    assert bound_cond(a)["reason"] == "Bound"
    # A host of an InfraEnv bound to a cluster cannot be unbound.
    unbind(hub, a["metadata"]["name"])

    s = wait_spec_failed(hub, a["metadata"]["name"], "the refused unbind")
    assert s["reason"] == "InputError", s
    assert s["message"] == ("The Spec could not be synced due to an input error: Cannot unbind Host "
                            f"{a['metadata']['name']}. InfraEnv {ie['metadata']['uid']} is bound to Cluster "
                            "single-node"), s
    assert state(agent(hub, a["metadata"]["name"])) == "known"
    # Putting the reference back clears the error.
    bind(hub, a["metadata"]["name"], "single-node")
    wait_for(lambda: conds_of(agent(hub, a["metadata"]["name"]))["SpecSynced"]["status"] == "True",
             timeout=30, what="SpecSynced True again")

    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    wait_for(lambda: not agents(hub), timeout=30, what="the Agents deleted")
    assert hub.kubectl("-n", NS, "get", "aci", "-o", "name").stdout.strip() == ""
    # The host polls, finds itself gone, registers again: refused, no new Agent.
    r = hub.request("POST", f"/api/assisted-install/v2/infra-envs/{ie['metadata']['uid']}/hosts",
                    body=json.dumps({"host_id": a["metadata"]["name"], "discovery_agent_version": "x"}),
                    headers={"X-Secret-Key": hub_token(hub, ie)})
    assert r.status == 404, r
    assert not agents(hub)


def hub_token(hub, ie):
    """The InfraEnv's agent token, from its ISO URL (…/byapikey/<JWT>/…)."""
    url = ie["status"]["isoDownloadURL"]
    return url.split("/byapikey/")[1].split("/")[0] if "/byapikey/" in url else ""


def test_unbind_before_install_and_move(lbhub, tmp_path, sims):
    """Unbinding a host that did not start installing returns it to the pool;
    moving an Agent to another ClusterDeployment unbinds and rebinds it."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    for cd, aci in (("cd-a", "aci-a"), ("cd-b", "aci-b")):
        hub.apply_obj(cluster_deployment(cd, aci))
        hub.apply_obj(multi_node_aci(aci, cd, cp=3, workers=0))
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=5))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]

    bind(hub, name, "cd-a")
    a = wait_bound_reason(hub, name, "Bound", timeout=90)
    wait_for(lambda: state(agent(hub, name)) in ("known", "insufficient"), timeout=60, what="bound and discovered")

    def reasons_seen(name, reasons, timeout=90):
        seen = []

        def done():
            r = bound_cond(agent(hub, name)).get("reason")
            if r and (not seen or seen[-1] != r):
                seen.append(r)
            return seen[-1] == reasons[-1] and seen
        return wait_for(done, timeout=timeout, interval=0.02, what=f"Bound reasons {reasons}")

    # Unbind: unbinding, then back to the pool.
    unbind(hub, name)
    seen = reasons_seen(name, ["Unbinding", "Unbound"])
    assert seen[-1] == "Unbound", seen
    wait_for(lambda: state(agent(hub, name)) == "known-unbound", timeout=90, what="known-unbound again")
    a = agent(hub, name)
    assert bound_cond(a)["message"] == UNBOUND_MSG
    assert a["spec"].get("clusterDeploymentName") is None
    assert a["status"]["role"] == "auto-assign"

    # Bind to A, then move to B: unbinds from A and binds to B.
    bind(hub, name, "cd-a")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    bind(hub, name, "cd-b")
    wait_for(lambda: bound_cond(agent(hub, name)).get("reason") != "Bound", timeout=30, what="leaves cd-a")
    wait_bound_reason(hub, name, "Bound", timeout=120)
    wait_for(lambda: state(agent(hub, name)) in ("known", "insufficient"), timeout=60, what="bound to cd-b")
    a = agent(hub, name)
    assert a["spec"]["clusterDeploymentName"]["name"] == "cd-b"
    assert a["metadata"]["labels"].get("agent-install.openshift.io/clusterdeployment-namespace") == NS


def test_refused_changes_and_delete_during_install(lbhub, tmp_path, sims):
    """Changing the reference of an installing Agent, or an InfraEnv's
    clusterRef, is refused with the upstream messages; deleting the cluster
    during the installation cancels it and returns the late-bound Agent."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    sno(hub)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=7, extra=["--stage-seconds", "600"]))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    bind(hub, name, "single-node")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    approve(hub, name)
    wait_for(lambda: state(agent(hub, name)) == "installing-in-progress", timeout=120, what="installing")

    r = hub.kubectl("-n", NS, "patch", "agents.agent-install.openshift.io", name, "-p",
                    '{"spec":{"clusterDeploymentName":{"name":"other","namespace":"spoke-cluster"}}}',
                    "--type", "merge", check=False)
    assert r.returncode != 0
    assert ("Attempted to change Spec.ClusterDeploymentName which is immutable during Agent installation."
            in r.stderr), r.stderr
    r = unbind(hub, name, check=False)
    assert r.returncode != 0 and "immutable during Agent installation" in r.stderr, r.stderr
    assert agent(hub, name)["spec"]["clusterDeploymentName"]["name"] == "single-node"

    # An InfraEnv's clusterRef can be neither added nor removed.
    r = hub.kubectl("-n", NS, "patch", "infraenv", "myinfraenv", "-p",
                    '{"spec":{"clusterRef":{"name":"single-node","namespace":"spoke-cluster"}}}',
                    "--type", "merge", check=False)
    assert r.returncode != 0
    assert "Attempted to change Spec.ClusterRef which is immutable after InfraEnv creation." in r.stderr, r.stderr

    # Deleting the cluster now cancels the installation; the Agent stays.
    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    a = wait_bound_reason(hub, name, "UnbindingPendingUserAction")
    assert a["spec"].get("clusterDeploymentName") is None
    assert state(a) == "unbinding-pending-user-action"
    ev = hub.kubectl_json("-n", NS, "get", "events")["items"]
    msgs = [e.get("message", "") for e in ev]
    assert any("cancelled" in m.lower() or "canceled" in m.lower() for m in msgs), msgs[-20:]


def test_delete_aci_only_keeps_cd_and_returns_agent(lbhub, tmp_path, sims):
    hub = lbhub
    setup_common(hub)
    # The cluster's pull secret differs from the InfraEnv's.
    hub.kubectl("-n", NS, "create", "secret", "generic", "cluster-pull-secret",
                "--type=kubernetes.io/dockerconfigjson",
                '--from-literal=.dockerconfigjson={"auths":{"quay.io":{"auth":"b3RoZXI6c2VjcmV0"}}}')
    ie = late_binding_infraenv(hub)
    cd = cluster_deployment("cd-x", "aci-x")
    cd["spec"]["pullSecretRef"]["name"] = "cluster-pull-secret"
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("aci-x", "cd-x", cp=3, workers=0))
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=9))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    bind(hub, name, "cd-x")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    wait_for(lambda: state(agent(hub, name)) in ("known", "insufficient"), timeout=60, what="bound and discovered")

    hub.kubectl("-n", NS, "delete", "aci", "aci-x", "--timeout=60s", timeout=70)
    assert hub.kubectl_json("-n", NS, "get", "cd", "cd-x")["metadata"]["name"] == "cd-x"
    a = wait_bound_reason(hub, name, "Unbound", timeout=90)
    assert a["spec"].get("clusterDeploymentName") is None
    wait_for(lambda: state(agent(hub, name)) == "known-unbound", timeout=90, what="back in the pool")


def test_bind_refused_for_other_architecture(lbhub, tmp_path, sims):
    hub = lbhub
    setup_common(hub)
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": "arm-image"},
                   "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.16.0-aarch64"}})
    ie = late_binding_infraenv(hub)
    hub.apply_obj(cluster_deployment("arm-cd", "arm-aci"))
    aci = multi_node_aci("arm-aci", "arm-cd", cp=3, workers=0)
    aci["spec"]["imageSetRef"]["name"] = "arm-image"
    hub.apply_obj(aci)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=11))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    bind(hub, name, "arm-cd")

    s = wait_spec_failed(hub, name, "the architecture")
    assert s["reason"] == "InputError", s
    assert s["message"] == ("The Spec could not be synced due to an input error: InfraEnv's CPU architecture "
                            "(x86_64) doesn't match the cluster (arm64)"), s
    a = agent(hub, name)
    assert state(a) == "known-unbound" and bound_cond(a)["reason"] == "Unbound"


def test_infraenv_delete_waits_for_bound_hosts(lbhub, tmp_path, sims):
    """Deleting an InfraEnv deletes its unbound and installed hosts; a bound
    host keeps it (with its deletionTimestamp) until it is unbound."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    hub.apply_obj(cluster_deployment("cd-y", "aci-y"))
    hub.apply_obj(multi_node_aci("aci-y", "cd-y", cp=3, workers=0))
    sims.append(Sim(hub, ie, tmp_path, hosts=2, seed=13))
    pool = wait_pool(hub, 2)
    bound_name, free_name = pool[0]["metadata"]["name"], pool[1]["metadata"]["name"]
    bind(hub, bound_name, "cd-y")
    wait_bound_reason(hub, bound_name, "Bound", timeout=90)

    hub.kubectl("-n", NS, "delete", "infraenv", "myinfraenv", "--wait=false")
    wait_for(lambda: free_name not in {x["metadata"]["name"] for x in agents(hub)}, timeout=30,
             what="the unbound Agent deleted")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "myinfraenv")
    assert ie["metadata"].get("deletionTimestamp")
    assert [x["metadata"]["name"] for x in agents(hub)] == [bound_name]

    unbind(hub, bound_name)
    wait_for(lambda: not agents(hub), timeout=60, what="the unbound host deleted")
    wait_for(lambda: hub.kubectl("-n", NS, "get", "infraenv", "myinfraenv", check=False).returncode != 0,
             timeout=30, what="the InfraEnv gone")


class Spoke:
    """A stand-in for the installed cluster's API: HTTPS on loopback with a
    certificate of its own, recording the requests it gets."""

    def __init__(self, tmp_path):
        import http.server
        import ssl
        import subprocess
        import threading
        self.requests = []
        crt, key = tmp_path / "spoke.crt", tmp_path / "spoke.key"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", str(key), "-out", str(crt)], check=True, capture_output=True)
        self.ca = crt.read_text()
        spoke = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_DELETE(self):
                spoke.requests.append(("DELETE", self.path, self.headers.get("Authorization")))
                body = b'{"kind":"Status","status":"Success"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(crt), str(key))
        self.srv.socket = ctx.wrap_socket(self.srv.socket, server_side=True)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def kubeconfig(self, token="spoke-token"):
        import base64
        ca = base64.b64encode(self.ca.encode()).decode()
        return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: spoke\n  cluster:\n"
                f"    server: https://127.0.0.1:{self.port}\n    certificate-authority-data: {ca}\n"
                f"users:\n- name: admin\n  user:\n    token: {token}\n"
                f"contexts:\n- name: admin\n  context:\n    cluster: spoke\n    user: admin\n"
                f"current-context: admin\n")

    def close(self):
        self.srv.shutdown()


def install_late_bound_sno(hub, name, cd="single-node", aci="test-agent-cluster-install"):
    sno(hub, cd, aci)
    bind(hub, name, cd)
    wait_bound_reason(hub, name, "Bound", timeout=90)
    approve(hub, name)
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{aci}", "--timeout=180s", timeout=200)
    assert state(agent(hub, name)) == "installed"


def test_unbind_installed_agent_reboot_cleanup_and_reinstall(lbhub, tmp_path, sims):
    """Test plan 3: an installed Agent unbound on its own waits for a reboot
    (UnbindingPendingUserAction); rebooted into the discovery image it comes
    back Unbound and known-unbound, its Node is deleted from the cluster it
    left, and it installs again into a new cluster."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=15, extra=["--reboot-after", "2"]))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    node = a["status"]["inventory"]["hostname"]
    install_late_bound_sno(hub, name)

    spoke = Spoke(tmp_path)
    try:
        # The cluster's admin kubeconfig now points at the stand-in API.
        hub.kubectl("-n", NS, "delete", "secret", "single-node-admin-kubeconfig")
        hub.kubectl("-n", NS, "create", "secret", "generic", "single-node-admin-kubeconfig",
                    f"--from-literal=kubeconfig={spoke.kubeconfig()}")
        unbind(hub, name)
        a = wait_bound_reason(hub, name, "UnbindingPendingUserAction")
        assert a["spec"].get("clusterDeploymentName") is None
        assert state(a) == "unbinding-pending-user-action"
        # The simulated reboot: back in the pool, Bound False Unbound.
        a = wait_bound_reason(hub, name, "Unbound", timeout=120)
        wait_for(lambda: state(agent(hub, name)) == "known-unbound", timeout=90, what="known-unbound")
        wait_for(lambda: spoke.requests, timeout=30, what="the spoke cleanup")
        assert spoke.requests[0][:2] == ("DELETE", f"/api/v1/nodes/{node}"), spoke.requests
        assert spoke.requests[0][2] == "Bearer spoke-token"
        assert "Cleanup" not in conds_of(agent(hub, name))
        assert "spoke-token" not in hub.log_text()
    finally:
        spoke.close()

    # Ready for a new cluster, which installs on it.
    install_late_bound_sno(hub, name, cd="second-sno", aci="second-aci")


def test_spoke_cleanup_failure_and_skip_annotation(lbhub, tmp_path, sims):
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=17, extra=["--reboot-after", "2"]))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    install_late_bound_sno(hub, name)
    # A spoke API nobody answers.
    spoke = Spoke(tmp_path)
    kc = spoke.kubeconfig()
    spoke.close()
    spoke.srv.server_close()
    hub.kubectl("-n", NS, "delete", "secret", "single-node-admin-kubeconfig")
    hub.kubectl("-n", NS, "create", "secret", "generic", "single-node-admin-kubeconfig",
                f"--from-literal=kubeconfig={kc}")
    unbind(hub, name)

    def failed():
        c = conds_of(agent(hub, name)).get("Cleanup")
        return c if c and c["status"] == "False" else None
    c = wait_for(failed, timeout=120, what="Cleanup False")
    assert c["reason"] == "CleanupFailed", c
    assert f"failed to delete node {a['status']['inventory']['hostname']} on the spoke cluster" in c["message"], c
    assert state(agent(hub, name)) in ("discovering-unbound", "known-unbound", "insufficient-unbound")
    # The documented way out: skip the spoke cleanup.
    hub.kubectl("-n", NS, "annotate", "agents.agent-install.openshift.io", name,
                "agent.agent-install.openshift.io/skip-spoke-cleanup=true")
    wait_for(lambda: "Cleanup" not in conds_of(agent(hub, name)), timeout=30, what="Cleanup cleared")


def test_manual_finalizer_removal(lbhub, tmp_path, sims):
    """The documented way out of a held deletion works: clearing the
    finalizers of an InfraEnv kept by a bound host deletes it, and its
    Agents follow through their owner reference."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    hub.apply_obj(cluster_deployment("cd-z", "aci-z"))
    hub.apply_obj(multi_node_aci("aci-z", "cd-z", cp=3, workers=0))
    sims.append(Sim(hub, ie, tmp_path, hosts=1, seed=19))
    (a,) = wait_pool(hub, 1)
    name = a["metadata"]["name"]
    bind(hub, name, "cd-z")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    hub.kubectl("-n", NS, "delete", "infraenv", "myinfraenv", "--wait=false")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "myinfraenv")
    assert ie["metadata"]["deletionTimestamp"] and ie["metadata"]["finalizers"]
    hub.kubectl("-n", NS, "patch", "infraenv", "myinfraenv", "-p", '{"metadata":{"finalizers":null}}',
                "--type=merge")
    wait_for(lambda: hub.kubectl("-n", NS, "get", "infraenv", "myinfraenv", check=False).returncode != 0,
             timeout=30, what="the InfraEnv gone")
    wait_for(lambda: not agents(hub), timeout=60, what="its Agents garbage-collected")


def test_bind_refused_while_cluster_installs_and_preserve_on_delete(lbhub, tmp_path, sims):
    """A cluster that is installing takes no new hosts (the upstream
    registration message); with preserveOnDelete the late-bound Agents are
    deleted with the cluster instead of returned (kubeapi.md §5, surprise 22)."""
    hub = lbhub
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    sno(hub)
    hub.kubectl("-n", NS, "patch", "clusterdeployment", "single-node", "--type", "merge",
                "-p", '{"spec":{"preserveOnDelete":true}}')
    sims.append(Sim(hub, ie, tmp_path, hosts=2, seed=21, extra=["--stage-seconds", "600"]))
    first, second = [a["metadata"]["name"] for a in wait_pool(hub, 2)]
    bind(hub, first, "single-node")
    wait_bound_reason(hub, first, "Bound", timeout=90)
    approve(hub, first)
    wait_for(lambda: state(agent(hub, first)) == "installing-in-progress", timeout=120, what="installing")
    aci_uid = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")["metadata"]["uid"]

    bind(hub, second, "single-node")

    s = wait_spec_failed(hub, second, "the installing cluster")
    assert s["reason"] == "InputError", s
    assert s["message"] == ("The Spec could not be synced due to an input error: Cluster "
                            f"{aci_uid} is in installing state, host can register only in one of "
                            "[insufficient ready pending-for-input adding-hosts]"), s
    assert state(agent(hub, second)) == "known-unbound"

    uids = {a["metadata"]["uid"] for a in agents(hub)}
    assert len(uids) == 2
    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    # Both name the ClusterDeployment (the ACI's Agents are found by their
    # reference, as upstream), so both go (the hosts, still running, may
    # register again into the pool: new Agents, new uids).
    wait_for(lambda: not uids & {a["metadata"]["uid"] for a in agents(hub)}, timeout=60,
             what="the late-binding Agents deleted (preserveOnDelete)")
