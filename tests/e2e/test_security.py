"""Security: tenant isolation on the agent API, hostile request bodies and
query parameters, safe storage, token rotation.  Each test reproduces one
defect of the issue "Security: tenant isolation, hostile input, safe
storage" (it failed before the fix) and shows the behaviour a Kubernetes
API server and the upstream assisted-service have."""
import json
import time

from conftest import wait_for
from test_discovery import NS, agent_api, fetch, setup_infraenv, simulated_host

INFRAENV_LABEL = "infraenvs.agent-install.openshift.io"


def token_of(ie):
    return ie["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/")[0]


def second_infraenv(hub, name="second"):
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", f"infraenv/{name}", "--timeout=30s")
    return hub.kubectl_json("-n", NS, "get", "infraenv", name)


def assert_upstream_error(status, body, code):
    assert status == code, (status, body)
    err = json.loads(body)
    assert err.get("kind") == "Error" and err.get("code") == str(code) and err.get("id") == code, err
    assert isinstance(err.get("reason"), str) and err["reason"], err
    return err


# ---- 1. cross-InfraEnv host takeover ----------------------------------------


def test_token_of_one_infraenv_cannot_take_over_hosts_of_another(hub, tmp_path):
    ie_a = setup_infraenv(hub)
    a_id, tok_a = ie_a["metadata"]["uid"], token_of(ie_a)
    with simulated_host(hub, ie_a, tmp_path / "sim.log", seed=7) as agent:
        host_id = agent["metadata"]["name"]
        before = agent["status"]["debugInfo"]["state"]
        assert before == "known-unbound"
        ie_b = second_infraenv(hub)
        b_id, tok_b = ie_b["metadata"]["uid"], token_of(ie_b)
        base_b = f"/infra-envs/{b_id}/hosts/{host_id}"

        # Registration through B of A's host: refused (4xx), no details of
        # the victim in the answer, and the host neither moved nor reset.
        status, body = agent_api(hub, "POST", f"/infra-envs/{b_id}/hosts",
                                 {"host_id": host_id, "discovery_agent_version": "x"}, key=tok_b)
        err = assert_upstream_error(status, body, 409)
        assert "status" not in err and "inventory" not in err and "another infra-env" in err["reason"], err

        # Every other per-host endpoint of B: the host does not exist there.
        for method, path, payload in (
                ("GET", base_b, None),
                ("GET", base_b + "/instructions", None),
                ("POST", base_b + "/instructions",
                 {"step_type": "inventory", "step_id": "inventory-1", "exit_code": 0, "output": "{}"}),
                ("PUT", base_b + "/progress", {"current_stage": "Failed", "progress_info": "pwned"})):
            status, body = agent_api(hub, method, path, payload, key=tok_b)
            assert_upstream_error(status, body, 404)
            assert host_id in json.loads(body)["reason"]

        # B's token on A's path stays forbidden.
        status, _ = agent_api(hub, "GET", f"/infra-envs/{a_id}/hosts/{host_id}/instructions", key=tok_b)
        assert status == 403

        # B's events URL does not open A's host's events.
        events_b = ie_b["status"]["debugInfo"]["eventsURL"]
        url = events_b.split("?")[0] + f"?api_key={tok_b}&host_id={host_id}"
        status, _, _ = fetch(hub, url)
        assert status == 401

        # A's own token still sees its host, unchanged and still A's.
        time.sleep(2)
        status, body = agent_api(hub, "GET", f"/infra-envs/{a_id}/hosts/{host_id}", key=tok_a)
        assert status == 200, body
        assert json.loads(body)["status"] == "known-unbound", body
        after = hub.kubectl_json("-n", NS, "get", "agent", host_id)
        assert after["status"]["debugInfo"]["state"] == "known-unbound", after["status"]
        assert after["metadata"]["labels"][INFRAENV_LABEL] == ie_a["metadata"]["name"]
        assert [r["uid"] for r in after["metadata"]["ownerReferences"] if r["kind"] == "InfraEnv"] == [a_id]
        # The relabelled Agent does not change hands either: ownership is
        # the InfraEnv owner reference, not a label a user may edit.
        hub.kubectl("-n", NS, "label", "--overwrite", "agent", host_id, f"{INFRAENV_LABEL}=second")
        status, _ = agent_api(hub, "GET", base_b, key=tok_b)
        assert status == 404
        status, body = agent_api(hub, "POST", f"/infra-envs/{b_id}/hosts",
                                 {"host_id": host_id, "discovery_agent_version": "x"}, key=tok_b)
        assert_upstream_error(status, body, 409)


# ---- 8. loose validation on the agent API ------------------------------------


def test_agent_api_validates_ids_step_types_file_names_and_versions(hub):
    ie = setup_infraenv(hub)
    ie_id, tok = ie["metadata"]["uid"], token_of(ie)
    for bad in ("not-a-uuid", "11111111-2222-4333-8444-55555555555g", "x" * 40):
        status, body = agent_api(hub, "GET", f"/infra-envs/{ie_id}/hosts/{bad}/instructions", key=tok)
        err = assert_upstream_error(status, body, 400)
        assert "host_id" in err["reason"] and "uuid" in err["reason"], err
        status, body = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts",
                                 {"host_id": bad, "discovery_agent_version": "v"}, key=tok)
        err = assert_upstream_error(status, body, 400)
        assert "host_id" in err["reason"], err

    host_id = "11111111-2222-4333-8444-555555555555"
    version = 'v1","agent_version":"evil\\'
    status, body = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts",
                             {"host_id": host_id, "discovery_agent_version": version}, key=tok)
    assert status == 201, body
    args = json.loads(json.loads(body)["next_step_runner_command"]["args"][0])
    assert args == {"infra_env_id": ie_id, "host_id": host_id, "agent_version": version}, args

    status, body = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts/{host_id}/instructions",
                             {"step_type": "format-disks", "step_id": "x-1", "exit_code": 0, "output": ""},
                             key=tok)
    err = assert_upstream_error(status, body, 400)
    assert "step_type" in err["reason"] and "format-disks" in err["reason"], err
    status, body = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts/{host_id}/instructions",
                             {"step_type": "ntp-synchronizer", "step_id": "ntp-1", "exit_code": 0,
                              "output": '{"ntp_sources":[]}'}, key=tok)
    assert status == 204, body

    ign = ie["status"]["bootArtifacts"]["ipxeScript"].split("?")[0]
    status, _, body = fetch(hub, f"{ign}?api_key={tok}&file_name=discovery.ign%00x")
    err = assert_upstream_error(status, body, 400)
    assert "file_name" in err["reason"], err
    status, _, body = fetch(hub, f"{ign}?api_key={tok}&file_name=discovery.ign")
    assert status == 200, body
