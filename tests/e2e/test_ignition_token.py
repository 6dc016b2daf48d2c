"""The Agent's ignitionEndpointTokenReference end to end (kubeapi.md §1.2,
§4.4): the token is read from the named Secret's `ignition-token` key and
applied to the host with the rest of the spec.

A missing Secret, or one without the key, gives SpecSynced False with
upstream's BackendError message naming the Secret, and applies nothing of
the spec; creating or fixing the Secret brings SpecSynced back to True with
no other change, because a Secret change reconciles the Agents that name
it (the simulated host is stopped first, so no poll can do it instead).
The token never shows in the Agent, the hub's log, the Kubernetes Events
or the upstream events API."""
import base64
import json
import urllib.parse

import pytest

from conftest import wait_for
from test_discovery import NS, setup_infraenv, simulated_host

TOKEN_NS = "ignition-tokens"  # the Secret may live in another namespace
TOKEN = "pointer-ignition-t0ken-5f3a9c"
BACKEND = "The Spec could not be synced due to backend error: "


def conds(agent):
    return {c["type"]: c for c in agent.get("status", {}).get("conditions", [])}


@pytest.fixture
def stopped_host(hub_factory, tmp_path):
    """A known-unbound Agent whose simulated host has been stopped again."""
    hub = hub_factory()
    ie = setup_infraenv(hub)
    with simulated_host(hub, ie, tmp_path / "sim.log", 21) as agent:
        pass
    return hub, agent["metadata"]["name"]


def get_agent(hub, name):
    return hub.kubectl_json("-n", NS, "get", "agent", name)


def wait_spec_synced(hub, name, status, message, what):
    def check():
        a = get_agent(hub, name)
        c = conds(a).get("SpecSynced")
        return a if c and c["status"] == status and c["message"] == message else None
    return wait_for(check, timeout=60, interval=0.2, what=what)


def put_secret(hub, data):
    obj = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "user-data", "namespace": TOKEN_NS},
           "data": {k: base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode()
                    for k, v in data.items()}}
    hub.kubectl("apply", "-f", "-", input=json.dumps(obj))


def test_token_secret_missing_then_created(stopped_host):
    hub, name = stopped_host
    hub.kubectl("-n", NS, "patch", "agent", name, "--type", "merge", "-p", json.dumps(
        {"spec": {"hostname": "token-host",
                  "ignitionEndpointTokenReference": {"namespace": TOKEN_NS, "name": "user-data"}}}))

    # No Secret: BackendError naming it, and nothing of the spec applied
    # (the hostname rides in the same host update).
    a = wait_spec_synced(hub, name, "False",
                         BACKEND + "Failed to get user-data secret: failed to get secret "
                         f'{TOKEN_NS}/user-data from API: secrets "user-data" not found',
                         "SpecSynced False for the missing Secret")
    assert conds(a)["SpecSynced"]["reason"] == "BackendError", conds(a)
    hv = [v for v in a["status"]["validationsInfo"]["hardware"] if v["id"] == "hostname-valid"]
    assert hv and "token-host" not in hv[0]["message"], hv

    # A Secret without the key.
    hub.create_namespace(TOKEN_NS)
    put_secret(hub, {"token": TOKEN})
    wait_spec_synced(hub, name, "False", BACKEND + "secret user-data did not contain key value",
                     "SpecSynced False for the Secret without ignition-token")

    # A value the host model cannot hold as text.
    put_secret(hub, {"ignition-token": b"\xff\xfe"})
    wait_spec_synced(hub, name, "False",
                     BACKEND + f"Failed to get user-data secret: failed to get secret {TOKEN_NS}/user-data "
                     "from cache: key ignition-token does not hold UTF-8 text",
                     "SpecSynced False for a binary token")

    # Fixed: the Secret change alone reconciles the Agent.
    put_secret(hub, {"ignition-token": TOKEN})
    a = wait_spec_synced(hub, name, "True", "The Spec has been successfully applied",
                         "SpecSynced True once the Secret has the token")
    assert conds(a)["SpecSynced"]["reason"] == "SyncOK"
    wait_for(lambda: any(v["id"] == "hostname-valid" and v["message"] == "Hostname token-host is allowed"
                         for v in get_agent(hub, name)["status"]["validationsInfo"]["hardware"]),
             timeout=30, what="the hostname applied with the token")

    # Removing the key again is seen again.
    put_secret(hub, {"other": "x"})
    wait_spec_synced(hub, name, "False", BACKEND + "secret user-data did not contain key value",
                     "SpecSynced False after the key was removed")
    put_secret(hub, {"ignition-token": TOKEN})
    a = wait_spec_synced(hub, name, "True", "The Spec has been successfully applied", "SpecSynced True again")

    # The token is a secret: not in the Agent, the log, or any event.
    assert TOKEN not in json.dumps(a)
    assert TOKEN not in hub.log_text()
    events = hub.kubectl("get", "events", "-A", "-o", "json").stdout
    assert '"items"' in events and TOKEN not in events
    # An unbound Agent has no eventsURL yet: its InfraEnv's covers its host.
    ie = hub.kubectl_json("-n", NS, "get", "infraenvs")["items"][0]
    url = urllib.parse.urlsplit(ie["status"]["debugInfo"]["eventsURL"])
    r = hub.request("GET", f"{url.path}?{url.query}", token=False)
    assert r.status == 200, r
    evs = r.json()
    assert any(e.get("host_id") == name for e in evs), evs
    assert TOKEN not in r.body.decode()


def test_token_reference_removed(stopped_host):
    hub, name = stopped_host
    hub.create_namespace(TOKEN_NS)
    put_secret(hub, {"ignition-token": TOKEN})
    ref = {"namespace": TOKEN_NS, "name": "user-data"}
    hub.kubectl("-n", NS, "patch", "agent", name, "--type", "merge", "-p",
                json.dumps({"spec": {"ignitionEndpointTokenReference": ref}}))
    wait_spec_synced(hub, name, "True", "The Spec has been successfully applied", "SpecSynced True")
    # The reference goes away: the Secret no longer matters to the Agent.
    hub.kubectl("-n", NS, "patch", "agent", name, "--type", "json", "-p",
                '[{"op":"remove","path":"/spec/ignitionEndpointTokenReference"}]')
    hub.kubectl("-n", TOKEN_NS, "delete", "secret", "user-data")
    a = get_agent(hub, name)
    assert "ignitionEndpointTokenReference" not in a["spec"]
    a = wait_spec_synced(hub, name, "True", "The Spec has been successfully applied", "SpecSynced stays True")
    assert TOKEN not in json.dumps(a) and TOKEN not in hub.log_text()


def test_token_reaches_day2_host_in_api_vip_check(hub_factory, tmp_path):
    """A day-2 host (a pool host bound to an imported, installed cluster) is
    given the token in its api-vip-connectivity-check step, as upstream."""
    from test_import import imported
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "60s"])
    ie = setup_infraenv(hub)
    imported(hub, "imp", with_imageset=False)
    hub.create_namespace(TOKEN_NS)
    put_secret(hub, {"ignition-token": TOKEN})
    with simulated_host(hub, ie, tmp_path / "sim.log", 23,
                        args=["--subnet", "192.168.126.0/24", "--max-poll-seconds", "1"]) as agent:
        name = agent["metadata"]["name"]
        hub.kubectl("-n", NS, "patch", "agents.agent-install.openshift.io", name, "--type", "merge", "-p",
                    json.dumps({"spec": {"ignitionEndpointTokenReference": {"namespace": TOKEN_NS,
                                                                           "name": "user-data"},
                                         "clusterDeploymentName": {"name": "imp", "namespace": NS}}}))

        def day2_known():
            a = get_agent(hub, name)
            st = a.get("status", {})
            return a if st.get("kind") == "AddToExistingClusterHost" and \
                st.get("debugInfo", {}).get("state") in ("known", "insufficient") else None
        wait_for(day2_known, timeout=120, what="a day-2 host bound to the imported cluster")
        # Ask for the next steps as the host's agent does.
        url = ie["status"]["isoDownloadURL"]
        token = url.split("/byapikey/")[1].split("/")[0]
        path = (f"/api/assisted-install/v2/infra-envs/{ie['metadata']['uid']}/hosts/{name}/instructions")

        def vip_step():
            r = hub.request("GET", path, headers={"X-Secret-Key": token})
            assert r.status == 200, r
            for s in r.json().get("instructions", []):
                if s["step_type"] == "api-vip-connectivity-check":
                    return json.loads(s["args"][0])
            return None
        args = wait_for(vip_step, timeout=60, what="an api-vip-connectivity-check step")
        assert args["ignition_endpoint_token"] == TOKEN, args
        assert {"key": "Authorization", "value": f"Bearer {TOKEN}"} in args["request_headers"], args
        assert args["url"] == "http://api.imp.hive.example.com:22624/config/worker", args
        # ... and nowhere a user can read it.
        assert TOKEN not in json.dumps(get_agent(hub, name))
        assert TOKEN not in hub.log_text()
