"""Agents end to end: the Agent spec is validated and applied to its host
(kubeapi.md §4.4 step 8), with SpecSynced telling the outcome (§2), using
the real kubectl against one simulated host booted from an InfraEnv's ISO.

A bad value gives SpecSynced False with reason InputError and the upstream
message, and leaves what was applied before; fixing it gives True SyncOK.
The applied values outlive a restart of the hub."""
import json

import pytest

from conftest import wait_for
from test_discovery import NS, setup_infraenv, simulated_host

INPUT_ERROR = "The Spec could not be synced due to an input error: "
VDA = "/dev/disk/by-path/pci-0000:00:05.0"  # the simulator's eligible disk
SR0 = "/dev/disk/by-path/pci-0000:00:01.1-ata-1"  # its installation media


def conds(agent):
    return {c["type"]: c for c in agent.get("status", {}).get("conditions", [])}


def hostname_validation(agent):
    for v in agent["status"].get("validationsInfo", {}).get("hardware", []):
        if v["id"] == "hostname-valid":
            return v["message"]
    return None


class Host:
    """The one simulated host's Agent, driven with kubectl."""

    def __init__(self, hub, name, infra_env_id):
        self.hub, self.name, self.infra_env_id = hub, name, infra_env_id

    def get(self):
        return self.hub.kubectl_json("-n", NS, "get", "agent", self.name)

    def patch_spec(self, **spec):
        out = self.hub.kubectl("-n", NS, "patch", "agent", self.name, "--type", "merge",
                               "-p", json.dumps({"spec": spec})).stdout
        assert "patched" in out, out

    def wait_synced(self, status, message=None, what=""):
        """Wait until SpecSynced has the status (and message); return the Agent."""
        def check():
            a = self.get()
            c = conds(a).get("SpecSynced")
            if c and c["status"] == status and (message is None or c["message"] == message):
                return a
            return None
        return wait_for(check, timeout=60, interval=0.2,
                        what=f"SpecSynced {status} {message or ''} {what}")

    def wait_input_error(self, detail):
        a = self.wait_synced("False", INPUT_ERROR + detail)
        c = conds(a)["SpecSynced"]
        assert c["reason"] == "InputError", c
        return a

    def wait_ok(self):
        a = self.wait_synced("True")
        c = conds(a)["SpecSynced"]
        assert (c["reason"], c["message"]) == ("SyncOK", "The Spec has been successfully applied"), c
        return a


@pytest.fixture
def sim_host(hub_factory, tmp_path):
    hub = hub_factory()
    ie = setup_infraenv(hub)
    with simulated_host(hub, ie, tmp_path / "sim.log", 11,
                        ready=lambda a: a["status"].get("inventory", {}).get("disks")
                        and hostname_validation(a),
                        what="a known-unbound Agent with inventory") as agent:
        yield Host(hub, agent["metadata"]["name"], ie["metadata"]["uid"])


def test_role(sim_host):
    h = sim_host
    a = h.get()
    assert conds(a)["SpecSynced"]["status"] == "True"
    h.patch_spec(role="bogus")
    h.wait_input_error(f"Requested role (bogus) is invalid for host {h.name} "
                       f"from infraEnv {h.infra_env_id}")
    h.patch_spec(role="master")
    a = h.wait_ok()

    def shows_master():
        return h.get()["status"].get("role") == "master"
    wait_for(shows_master, timeout=30, what="status.role master")
    h.patch_spec(role="")
    h.wait_ok()
    # An empty role leaves the applied one (upstream sends only non-empty roles).
    assert h.get()["status"]["role"] == "master"


def test_hostname(sim_host):
    h = sim_host
    h.patch_spec(hostname="node-a.example.com")
    h.wait_ok()

    def applied():
        return hostname_validation(h.get()) == "Hostname node-a.example.com is allowed"
    wait_for(applied, timeout=30, what="hostname-valid on the requested hostname")
    wide = h.hub.kubectl("-n", NS, "get", "agent", h.name, "-o", "wide").stdout
    assert "node-a.example.com" in wide, wide

    h.patch_spec(hostname="Bad_Name")
    a = h.wait_input_error("Hostname does not pass required regex validation: "
                           "^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$. Hostname: Bad_Name")
    # Not applied: the host keeps the hostname applied before.
    assert hostname_validation(a) == "Hostname node-a.example.com is allowed"

    h.patch_spec(hostname="localhost")
    h.wait_input_error("The host name localhost is forbidden")
    h.patch_spec(hostname="node-b")
    h.wait_ok()
    wait_for(lambda: hostname_validation(h.get()) == "Hostname node-b is allowed",
             timeout=30, what="hostname node-b applied")


def test_installation_disk(sim_host):
    h = sim_host
    assert h.get()["status"]["installation_disk_id"] == VDA
    for bad in (SR0, "/dev/sr0", "/dev/nvme0n1"):
        h.patch_spec(installation_disk_id=bad)
        a = h.wait_input_error("Requested installation disk is not part of the host's valid disks")
        assert a["status"]["installation_disk_id"] == VDA, a["status"]
    # The disk's name names it too; the status shows its id.
    h.patch_spec(installation_disk_id="/dev/vda")
    a = h.wait_ok()
    assert a["status"]["installation_disk_id"] == VDA
    h.patch_spec(installation_disk_id=VDA)
    a = h.wait_ok()
    assert a["status"]["installation_disk_id"] == VDA


def test_installer_args_and_ignition(sim_host):
    h = sim_host
    h.patch_spec(installerArgs="--append-karg")
    a = h.wait_synced("False")
    c = conds(a)["SpecSynced"]
    assert c["reason"] == "InputError", c
    assert c["message"].startswith(
        INPUT_ERROR + f"Fail to unmarshal installer args for host {h.name} "
        f"in infraEnv {h.infra_env_id}: "), c
    h.patch_spec(installerArgs='{"a":"b"}')
    h.wait_input_error(f"Fail to unmarshal installer args for host {h.name} in infraEnv "
                       f"{h.infra_env_id}: json: cannot unmarshal object into Go value of type []string")
    h.patch_spec(installerArgs='["--not-a-flag"]')
    a = h.wait_synced("False")
    assert "found unexpected flag --not-a-flag for installer" in conds(a)["SpecSynced"]["message"]
    h.patch_spec(installerArgs='["--append-karg", "ip=dhcp"]')
    h.wait_ok()

    h.patch_spec(ignitionConfigOverrides='{"ignition":{"version":"9.9.9"}}')
    a = h.wait_synced("False")
    c = conds(a)["SpecSynced"]
    assert c["reason"] == "InputError", c
    assert c["message"].startswith(INPUT_ERROR + "error parsing ignition: "), c
    h.patch_spec(ignitionConfigOverrides='{"ignition":{"version":"3.2.0"},"storage":{"files":'
                 '[{"path":"/etc/x","contents":{"source":"data:,x"}}]}}')
    h.wait_ok()


def test_approve(sim_host):
    h = sim_host
    assert conds(h.get())["RequirementsMet"]["reason"] == "AgentIsNotApproved"
    out = h.hub.kubectl("-n", NS, "patch", "agent", h.name, "--type", "merge",
                        "-p", '{"spec":{"approved":true}}').stdout
    assert "patched" in out

    def ready():
        c = conds(h.get())["RequirementsMet"]
        return c if (c["status"], c["reason"]) == ("True", "AgentIsReady") else None
    c = wait_for(ready, timeout=60, what="RequirementsMet True AgentIsReady")
    assert c["message"] == "The agent is ready to begin the installation"
    # Approval syncs even while another field is bad.
    h.patch_spec(role="bogus", approved=False)
    a = h.wait_synced("False")
    assert conds(a)["RequirementsMet"]["reason"] == "AgentIsNotApproved", conds(a)


def test_applied_spec_survives_restart(sim_host):
    h = sim_host
    h.patch_spec(hostname="kept-name", role="worker")
    h.wait_ok()
    wait_for(lambda: hostname_validation(h.get()) == "Hostname kept-name is allowed",
             timeout=30, what="hostname applied")
    h.patch_spec(hostname="Not_Valid")
    h.wait_input_error("Hostname does not pass required regex validation: "
                       "^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$. Hostname: Not_Valid")
    h.hub.stop()
    h.hub.start()
    # After the restart the bad value is still refused, and the host still
    # has what was applied before it.
    h.wait_input_error("Hostname does not pass required regex validation: "
                       "^[a-z0-9][a-z0-9-]{0,62}(?:[.][a-z0-9-]{1,63})*$. Hostname: Not_Valid")
    h.patch_spec(hostname="")
    a = h.wait_ok()
    assert a["status"]["role"] == "worker", a["status"]
    # Re-validating (the host polls again within its interval) keeps kept-name.
    assert hostname_validation(a) == "Hostname kept-name is allowed", a["status"]
