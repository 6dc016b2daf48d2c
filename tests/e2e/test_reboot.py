"""Returning hosts: late binding, unbinding and the reboot into the discovery
image, with `agenthub-agent simulate --reboot-after`.

A host of a late-binding InfraEnv is bound to a single-node cluster by
setting the Agent's spec.clusterDeploymentName and installed.  Clearing the
reference leaves the host in unbinding-pending-user-action (Bound False,
UnbindingPendingUserAction): someone must reboot it into the discovery image.
With --reboot-after the simulator plays that person: the host registers again
with the same id and hardware (backend.md §1.1 rule P2: discovering-unbound),
returns to known-unbound (Bound False, Unbound), and can be bound to another
cluster and installed again.  Without --reboot-after a polling host told to
exit in that state stops (the simulator's stopped-upua) and stays where it is.
"""
import re
import subprocess

import pytest

from conftest import wait_for
from test_install import AGENT, NS, SUBNET, Sim, conds_of, setup_common

UPUA = "unbinding-pending-user-action"
INSTALL_TIMEOUT = 180


@pytest.fixture
def rhub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def pool_infraenv(hub, name="pool"):
    """A late-binding InfraEnv: no clusterRef, its hosts wait in the pool."""
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", f"infraenv/{name}", "--timeout=30s")
    return hub.kubectl_json("-n", NS, "get", "infraenv", name)


def sno_cluster(hub, cd, aci):
    """A single-node ClusterDeployment and its AgentClusterInstall, named cd and aci."""
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
                   "metadata": {"name": cd, "namespace": NS},
                   "spec": {"baseDomain": "hive.example.com", "clusterName": cd,
                            "clusterInstallRef": {"group": "extensions.hive.openshift.io",
                                                  "kind": "AgentClusterInstall", "name": aci,
                                                  "version": "v1beta1"},
                            "platform": {"agentBareMetal": {"agentSelector": {}}},
                            "pullSecretRef": {"name": "pull-secret"}}})
    hub.apply_obj({"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
                   "metadata": {"name": aci, "namespace": NS},
                   "spec": {"clusterDeploymentRef": {"name": cd},
                            "imageSetRef": {"name": "openshift-v4.9.0"},
                            "networking": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                           "machineNetwork": [{"cidr": SUBNET}],
                                           "serviceNetwork": ["172.30.0.0/16"]},
                            "provisionRequirements": {"controlPlaneAgents": 1}}})


def agent(hub, name):
    return hub.kubectl_json("-n", NS, "get", "agent", name)


def state(a):
    return a.get("status", {}).get("debugInfo", {}).get("state")


def wait_state(hub, name, want, timeout=60):
    def reached():
        a = agent(hub, name)
        return a if state(a) == want else None
    return wait_for(reached, timeout=timeout, interval=0.2, what=f"Agent {name} {want}")


def the_pool_agent(hub):
    """The one Agent, once its host is known-unbound with an inventory."""
    def ready():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        return items[0] if len(items) == 1 and state(items[0]) == "known-unbound" else None
    return wait_for(ready, timeout=90, interval=0.2, what="one known-unbound Agent")


def patch_agent(hub, name, spec):
    hub.kubectl("-n", NS, "patch", "agents.agent-install.openshift.io", name, "-p",
                '{"spec":%s}' % spec, "--type", "merge")


def bind_and_install(hub, name, cd, aci):
    patch_agent(hub, name, '{"approved":true,"clusterDeploymentName":{"name":"%s","namespace":"%s"}}' % (cd, NS))
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{aci}",
                f"--timeout={INSTALL_TIMEOUT}s", timeout=INSTALL_TIMEOUT + 20)
    a = agent(hub, name)
    assert state(a) == "installed", a["status"].get("debugInfo")
    assert conds_of(a)["Bound"]["reason"] == "Bound", conds_of(a)
    assert conds_of(a)["Installed"]["reason"] == "InstallationCompleted", conds_of(a)
    assert a["status"]["progress"]["currentStage"] == "Done"
    return a


def unbind(hub, name):
    patch_agent(hub, name, '{"clusterDeploymentName":null}')


def status_lines(sim):
    sim.log.flush()
    return [ln for ln in sim.log_path.read_text().splitlines() if ln.startswith("simulate: t=")]


def status_of(line):
    return {k: int(v) for k, v in re.findall(r" ([a-z-]+)=(\d+)", line)}


def wait_status(sim, pred, what, timeout=60):
    """The first status line of the simulator (--status-seconds 1) printed from now on
    that satisfies pred."""
    pos = [len(status_lines(sim))]

    def match():
        lines = status_lines(sim)
        for ln in lines[pos[0]:]:
            pos[0] += 1
            st = status_of(ln)
            if pred(st):
                return st
        return None
    return wait_for(match, timeout=timeout, interval=0.2, what=f"simulator status: {what}")


def status_trail(hub, name):
    """(count, message) of the host's "updated status from A to B" Events (a repeat of
    an Event is one Event with a higher count, as the kubelet's recorder does)."""
    ev = hub.kubectl_json("-n", NS, "get", "events")["items"]
    return [(e.get("count", 1), e["message"]) for e in ev
            if e.get("involvedObject", {}).get("name") == name and "updated status from" in e.get("message", "")]


def transitions(trail, src, dst):
    return sum(n for n, m in trail if f"updated status from {src} to {dst} " in m)


def fingerprint(a):
    """What stays the same across a reboot: the hardware the host reports."""
    inv = a["status"]["inventory"]
    return (inv["cpu"]["count"], inv["memory"]["physicalBytes"], inv["hostname"],
            sorted(i["macAddress"] for i in inv["interfaces"]))


# ---------------------------------------------------------------------------


def test_installed_host_unbound_reboots_into_discovery_and_installs_again(rhub, tmp_path, sims):
    hub = rhub
    setup_common(hub)
    sno_cluster(hub, "sno-one", "sno-one-aci")
    sno_cluster(hub, "sno-two", "sno-two-aci")
    ie = pool_infraenv(hub)
    sim = Sim(hub, ie, tmp_path, hosts=1, extra=["--reboot-after", "2", "--status-seconds", "1"])
    sims.append(sim)

    a = the_pool_agent(hub)
    name = a["metadata"]["name"]
    hw = fingerprint(a)
    assert conds_of(a)["Bound"]["reason"] == "Unbound", conds_of(a)

    watches = 0
    for round_, (cd, aci) in enumerate((("sno-one", "sno-one-aci"), ("sno-two", "sno-two-aci")), start=1):
        a = bind_and_install(hub, name, cd, aci)
        # The installed host's agent is gone: watched, not polling.
        st = wait_status(sim, lambda st: st.get("installed") == 1 and st.get("watches", 0) > watches,
                         f"round {round_}: installed and watched")
        watches = st["watches"]

        unbind(hub, name)
        # The simulated person reboots it into the discovery image; same id, same hardware.
        a = wait_state(hub, name, "known-unbound", timeout=90)
        c = conds_of(a)
        assert c["Bound"]["status"] == "False" and c["Bound"]["reason"] == "Unbound", c
        assert fingerprint(a) == hw
        assert not a["status"].get("progress", {}).get("currentStage"), a["status"].get("progress")
        assert len(hub.kubectl_json("-n", NS, "get", "agents")["items"]) == 1
        st = wait_status(sim, lambda st: st.get("reboots") == round_ and st.get("discovery") == 1,
                         f"round {round_}: rebooted and in discovery")
        assert st["stopped-upua"] == 0 and st["refused"] == 0, st

        trail = status_trail(hub, name)
        assert transitions(trail, "installed", UPUA) == round_, trail
        assert transitions(trail, UPUA, "discovering-unbound") == round_, trail
        assert transitions(trail, "known-unbound", "binding") == round_, trail

    # Both clusters installed on the same host, one after the other.
    for aci in ("sno-one-aci", "sno-two-aci"):
        assert conds_of(hub.kubectl_json("-n", NS, "get", "aci", aci))["Completed"]["reason"] == \
            "InstallationCompleted"


def test_host_stopped_in_upua_waits_without_reboot_after(rhub, tmp_path, sims):
    hub = rhub
    setup_common(hub)
    sno_cluster(hub, "sno-one", "sno-one-aci")
    ie = pool_infraenv(hub)
    # Fails before the reboot: the discovery agent keeps polling (error state).
    sim = Sim(hub, ie, tmp_path, hosts=1, extra=["--fail-at-stage", "Writing image to disk",
                                                 "--status-seconds", "1"])
    sims.append(sim)
    name = the_pool_agent(hub)["metadata"]["name"]
    patch_agent(hub, name, '{"approved":true,"clusterDeploymentName":{"name":"sno-one","namespace":"%s"}}' % NS)
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/sno-one-aci",
                f"--timeout={INSTALL_TIMEOUT}s", timeout=INSTALL_TIMEOUT + 20)
    wait_state(hub, name, "error")

    unbind(hub, name)
    a = wait_state(hub, name, UPUA)
    c = conds_of(a)
    assert c["Bound"]["reason"] == "UnbindingPendingUserAction", c
    assert c["Bound"]["message"] == "The agent is currently unbinding; Pending host reboot from infraenv image", c

    # Told to exit in that state, the host stops: it neither polls nor registers again.
    st = wait_status(sim, lambda st: st.get("stopped-upua") == 1, "stopped-upua")
    assert st["reboots"] == 0 and st["failed"] == 0 and st["watches"] == 0, st
    later = wait_status(sim, lambda s2: s2["t"] >= st["t"] + 3, "three seconds later")
    assert later["stopped-upua"] == 1, later
    assert later["register"] == st["register"] and later["instructions"] == st["instructions"], (st, later)
    assert later["checks"] == st["checks"], (st, later)
    assert state(agent(hub, name)) == UPUA


def test_failed_host_unbound_is_rebooted_with_reboot_after(rhub, tmp_path, sims):
    hub = rhub
    setup_common(hub)
    sno_cluster(hub, "sno-one", "sno-one-aci")
    ie = pool_infraenv(hub)
    sim = Sim(hub, ie, tmp_path, hosts=1, extra=["--fail-at-stage", "Writing image to disk",
                                                 "--reboot-after", "1", "--status-seconds", "1"])
    sims.append(sim)
    a = the_pool_agent(hub)
    name, hw = a["metadata"]["name"], fingerprint(a)
    patch_agent(hub, name, '{"approved":true,"clusterDeploymentName":{"name":"sno-one","namespace":"%s"}}' % NS)
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/sno-one-aci",
                f"--timeout={INSTALL_TIMEOUT}s", timeout=INSTALL_TIMEOUT + 20)
    wait_state(hub, name, "error")
    # A polling host is not watched: only installed hosts are.
    assert status_of(status_lines(sim)[-1]).get("watches") == 0

    unbind(hub, name)
    a = wait_state(hub, name, "known-unbound", timeout=90)
    assert conds_of(a)["Bound"]["reason"] == "Unbound"
    assert fingerprint(a) == hw
    st = wait_status(sim, lambda st: st.get("reboots") == 1 and st.get("discovery") == 1, "rebooted")
    assert st["failed"] == 0 and st["stopped-upua"] == 0, st
    trail = status_trail(hub, name)
    assert transitions(trail, "error", UPUA) == 1, trail
    assert transitions(trail, UPUA, "discovering-unbound") == 1, trail


def test_reboot_after_flag_is_validated():
    if not AGENT.is_file():
        pytest.fail(f"{AGENT} not built")
    for bad in ("-1", "soon", "1.5", "", "99999999999"):
        r = subprocess.run([str(AGENT), "simulate", "--ignition", "/nonexistent", "--reboot-after", bad],
                           capture_output=True, text=True)
        assert r.returncode == 2, (bad, r)
        assert "--reboot-after" in r.stderr and "invalid value" in r.stderr, (bad, r.stderr)
    r = subprocess.run([str(AGENT), "simulate", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--reboot-after SECONDS" in r.stdout
