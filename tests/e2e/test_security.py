"""Security: tenant isolation on the agent API, hostile request bodies and
query parameters, safe storage, token rotation.  Each test reproduces one
defect of the issue "Security: tenant isolation, hostile input, safe
storage" (it failed before the fix) and shows the behaviour a Kubernetes
API server and the upstream assisted-service have."""
import json
import time

import pytest

from conftest import HubStartError, status_shape, wait_for
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


# ---- 2. request bodies decoded by their Content-Type --------------------------


def cm(name, ns, data=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": data or {"k": "v"}}


def test_body_decoded_by_content_type(module_hub, ns):
    hub = module_hub
    path = f"/api/v1/namespaces/{ns}/configmaps"
    # JSON, with or without a charset parameter, and no Content-Type at all
    # (kube-apiserver reads that as JSON, its first type).
    assert hub.request("POST", path, cm("a", ns)).status == 201
    r = hub.request("POST", path, cm("b", ns), content_type="application/json; charset=utf-8")
    assert r.status == 201, r
    conn = hub.connection()
    conn.request("POST", path, body=json.dumps(cm("c", ns)),
                  headers={"Authorization": f"Bearer {hub.token}", "Accept": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 201, resp.read()
    conn.close()
    # YAML only as application/yaml.
    yaml_body = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  namespace: {ns}\ndata:\n  k: v\n"
    r = hub.request("POST", path, yaml_body, content_type="application/yaml")
    assert r.status == 201, r
    r = hub.request("POST", path, yaml_body.replace("name: d", "name: e"), content_type="application/json")
    assert r.status == 400, r
    status_shape(r.json(), 400, "BadRequest")
    assert "not valid JSON" in r.json()["message"]
    # Anything else: 415 as kube-apiserver says it.
    for ct in ("text/plain", "application/x-www-form-urlencoded", "application/jsonx"):
        r = hub.request("POST", path, json.dumps(cm("f", ns)), content_type=ct)
        assert r.status == 415, (ct, r)
        status_shape(r.json(), 415, "UnsupportedMediaType")
        assert r.json()["message"].startswith("the body of the request was in an unknown format"), r.json()
    assert hub.request("GET", f"{path}/f").status == 404
    # kubectl (JSON) keeps working: create, apply, patch, replace, delete.
    hub.kubectl("-n", ns, "create", "configmap", "g", "--from-literal=x=1")
    hub.kubectl("-n", ns, "patch", "configmap", "g", "-p", '{"data":{"x":"2"}}', "--type=merge")
    hub.kubectl("-n", ns, "delete", "configmap", "g")


def test_nul_bytes_duplicate_keys_and_big_numbers_are_400(module_hub, ns):
    hub = module_hub
    path = f"/api/v1/namespaces/{ns}/configmaps"
    cases = [
        ("application/json", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n\\u0000x"}}', "NUL"),
        ("application/json", b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"n\x00x"}}', "JSON"),
        ("application/yaml", 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "n\\0x"\n', "NUL"),
        ("application/yaml", 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\ndata:\n  k: "a\\0b"\n',
         "NUL"),
        ("application/json", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d1","name":"d2"}}',
         "duplicate"),
        ("application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d1\n  name: d2\n",
         "already set in map"),
        ("application/json", '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"i",'
         '"generation":99999999999999999999999}}', "too big"),
        ("application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: i\n"
         "  generation: 99999999999999999999999\n", "out of the 64-bit range"),
    ]
    for ct, body, why in cases:
        r = hub.request("POST", path, body, content_type=ct)
        assert r.status == 400, (body, r)
        status_shape(r.json(), 400, "BadRequest")
        assert why in r.json()["message"], (body, r.json())
    # Nothing got in: the namespace lists no ConfigMap and deletes at once.
    assert hub.get_json(path)["items"] == []
    hub.kubectl("delete", "namespace", ns, "--timeout=30s")


# ---- 3. YAML bounded before the document is built -----------------------------


def hub_rss_kb(hub):
    for line in open(f"/proc/{hub.proc.pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def test_yaml_bombs_are_refused_quickly_and_small(module_hub, ns):
    hub = module_hub
    path = f"/api/v1/namespaces/{ns}/configmaps"
    # Nested mapping keys whose printed form doubled per level.
    nested = "{" * 40 + "}" * 40
    # Aliases of a long string: bounded by the bytes they copy.
    big = "x" * 4096
    aliases = "a: &a \"" + big + "\"\nb: [" + ",".join(["*a"] * 250000) + "]\n"
    assert len(aliases) < 3 * 1024 * 1024
    # The classic laughs: each level ten aliases of the one before.
    laughs = "a0: &a0 [x,x,x,x,x,x,x,x,x,x]\n" + "".join(
        f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 12))
    for body in (nested, aliases, laughs):
        t0 = time.monotonic()
        r = hub.request("POST", path, body, content_type="application/yaml", timeout=60)
        took = time.monotonic() - t0
        assert r.status == 400, r
        status_shape(r.json(), 400, "BadRequest")
        assert took < 10, took
    assert hub_rss_kb(hub) < 400 * 1024, hub_rss_kb(hub)


# ---- 8. query parameters and system namespaces on the kube API ----------------


def test_query_parameters_validated_as_kube_apiserver_does(module_hub, ns):
    hub = module_hub
    path = f"/api/v1/namespaces/{ns}/configmaps"
    assert hub.request("POST", path, cm("q", ns)).status == 201
    for query, param in (("limit=abc", "limit"), ("resourceVersion=abc", "resourceVersion"),
                         ("timeoutSeconds=soon", "timeoutSeconds"), ("watch=yes", "watch"),
                         ("watch=1&resourceVersion=-1", "resourceVersion"),
                         ("allowWatchBookmarks=maybe", "allowWatchBookmarks"),
                         ("resourceVersionMatch=Newest", "resourceVersionMatch"),
                         ("labelSelector=a%00b", "labelSelector")):
        r = hub.get(f"{path}?{query}")
        assert r.status == 400, (query, r)
        status_shape(r.json(), 400, "BadRequest")
        assert r.json()["message"].startswith(param), (query, r.json())
    r = hub.get(f"{path}/q?resourceVersion=abc")
    assert r.status == 400 and "resourceVersion" in r.json()["message"], r
    # Valid forms still work, booleans as Go's ParseBool reads them.
    assert hub.get(f"{path}?limit=1&resourceVersion=0").status == 200
    for true in ("1", "t", "T", "TRUE", "true", "True"):
        w = hub.watch(f"{path}?watch={true}&timeoutSeconds=5")
        assert w.status == 200
        ev = w.next_event(timeout=10)
        w.close()
        assert ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "q", ev
    r = hub.get(f"{path}?watch=False")
    assert r.status == 200 and r.json()["kind"] == "ConfigMapList", r

    # propagationPolicy: one of the three, or nothing is deleted.
    r = hub.request("DELETE", f"{path}/q?propagationPolicy=bogus")
    assert r.status == 422, r
    status_shape(r.json(), 422, "Invalid")
    assert "propagationPolicy" in r.json()["message"]
    r = hub.request("DELETE", f"{path}/q", {"kind": "DeleteOptions", "apiVersion": "v1",
                                             "propagationPolicy": "Sideways"})
    assert r.status == 422, r
    r = hub.request("DELETE", f"{path}/q?gracePeriodSeconds=later")
    assert r.status == 400 and "gracePeriodSeconds" in r.json()["message"], r
    assert hub.get(f"{path}/q").status == 200
    r = hub.request("DELETE", f"{path}/q?propagationPolicy=Foreground")
    assert r.status == 200, r


def test_system_namespaces_cannot_be_deleted(module_hub):
    hub = module_hub
    for name in ("default", "kube-system", "kube-public"):
        r = hub.request("DELETE", f"/api/v1/namespaces/{name}")
        assert r.status == 403, (name, r)
        status_shape(r.json(), 403, "Forbidden")
        assert r.json()["message"] == f'namespaces "{name}" is forbidden: this namespace may not be deleted'
    res = hub.kubectl("delete", "namespace", "default", check=False)
    assert res.returncode != 0 and "this namespace may not be deleted" in res.stderr, res.stderr
    assert hub.get_json("/api/v1/namespaces/default")["metadata"]["name"] == "default"


# ---- 5. the data directory is private ------------------------------------------


def modes(data_dir):
    return {p.name: p.stat().st_mode & 0o7777 for p in data_dir.rglob("*") if p.is_file()}


@pytest.mark.sqlite_only
def test_data_dir_and_files_are_private(hub_factory):
    hub = hub_factory(start=False)
    d = hub.data_dir
    d.chmod(0o755)
    (d / "notes.txt").write_text("left here by hand\n")
    (d / "notes.txt").chmod(0o644)
    hub.start()
    log = hub.log_text()
    assert d.stat().st_mode & 0o777 == 0o700
    assert f"data directory {d} was mode 0755: now 0700" in log, log
    assert f"{d}/notes.txt was mode 0644: now 0600" in log, log
    hub.kubectl("create", "namespace", "private")
    hub.kubectl("-n", "private", "create", "secret", "generic", "s", "--from-literal=password=hunter2")
    m = modes(d)
    assert "agenthub.db" in m and "kubeconfig" in m, m
    assert all(v == 0o600 for v in m.values()), {k: oct(v) for k, v in m.items()}
    hub.stop()
    # Loosened while stopped: tightened again at the next start, with a line.
    (d / "agenthub.db").chmod(0o644)
    d.chmod(0o711)
    hub.start()
    assert d.stat().st_mode & 0o777 == 0o700
    assert f"{d}/agenthub.db was mode 0644: now 0600" in hub.log_text()
    assert all(v == 0o600 for v in modes(d).values()), modes(d)
    assert "hunter2" not in hub.log_text()


# ---- 9. a corrupt store is refused at start ------------------------------------


@pytest.mark.sqlite_only
def test_corrupt_store_is_refused_at_start(hub_factory):
    hub = hub_factory()
    hub.kubectl("create", "namespace", "fill")
    for i in range(150):
        r = hub.request("POST", "/api/v1/namespaces/fill/configmaps",
                        cm(f"c{i:03d}", "fill", {"k": "v" * 2000}))
        assert r.status == 201, r
    hub.stop()
    db = hub.data_dir / "agenthub.db"
    size = db.stat().st_size
    assert size > 64 * 4096, size
    # One damaged page in the middle of the file (a torn copy, a bad disk).
    with open(db, "r+b") as f:
        f.seek((size // 4096 // 2) * 4096 + 512)
        f.write(bytes((i * 37 + 11) & 0xff for i in range(2048)))
    try:
        hub.start(timeout=20)
    except HubStartError as e:
        log = e.log
    else:
        raise AssertionError("a corrupt store was served")
    assert f"the store {db} is corrupt" in log and "quick_check" in log, log[-2000:]
    assert "restore the file from a backup" in log, log[-2000:]


# ---- 10. agent token rotation; a deleted InfraEnv's token is refused ------------


def token_uses(hub, ie, tok):
    """The status of each place an InfraEnv token opens: agent API
    registration, the ISO, the discovery ignition, the iPXE script and
    the events URL."""
    ie_id = ie["metadata"]["uid"]
    base = hub.base_url
    out = {}
    out["register"] = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts",
                                {"host_id": "22222222-3333-4444-8555-666666666666",
                                 "discovery_agent_version": "v"}, key=tok)[0]
    iso = ie["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/", 1)[1]
    out["iso"] = fetch(hub, f"{base}/byapikey/{tok}/{iso}", headers={"Range": "bytes=0-15"})[0]
    files = f"{base}/api/assisted-install/v2/infra-envs/{ie_id}/downloads/files?api_key={tok}"
    out["ignition"] = fetch(hub, files + "&file_name=discovery.ign")[0]
    out["ipxe"] = fetch(hub, files + "&file_name=ipxe-script")[0]
    out["events"] = fetch(hub, f"{base}/api/assisted-install/v2/events?api_key={tok}&infra_env_id={ie_id}")[0]
    return out


def test_agent_token_rotation_and_deleted_infraenv(hub):
    ie = setup_infraenv(hub)
    name, old = ie["metadata"]["name"], token_of(ie)
    assert all(s in (200, 201, 206) for s in token_uses(hub, ie, old).values()), token_uses(hub, ie, old)

    hub.kubectl("-n", NS, "annotate", "infraenv", name, "agenthub.io/rotate-agent-token=1")

    def rotated():
        cur = hub.kubectl_json("-n", NS, "get", "infraenv", name)
        return cur if token_of(cur) != old and cur["status"].get("isoDownloadURL") else None
    cur = wait_for(rotated, timeout=30, what="a new token in the InfraEnv's URLs")
    new = token_of(cur)
    assert new in cur["status"]["debugInfo"]["eventsURL"]
    assert new in cur["status"]["bootArtifacts"]["ipxeScript"]
    uses = token_uses(hub, cur, old)
    assert all(s == 401 for s in uses.values()), uses
    uses = token_uses(hub, cur, new)
    assert all(s in (200, 201, 206) for s in uses.values()), uses
    # The discovery ignition now carries the new token, not the old one.
    status, _, ign = fetch(hub, f"{hub.base_url}/api/assisted-install/v2/infra-envs/"
                                f"{cur['metadata']['uid']}/downloads/files?api_key={new}&file_name=discovery.ign")
    assert status == 200 and new.encode() in ign and old.encode() not in ign
    assert new not in hub.log_text() and old not in hub.log_text()
    # The same annotation value again does not rotate.
    hub.kubectl("-n", NS, "annotate", "--overwrite", "infraenv", name, "agenthub.io/rotate-agent-token=1")
    time.sleep(1)
    assert token_of(hub.kubectl_json("-n", NS, "get", "infraenv", name)) == new

    # Deleted: its (current) token opens nothing any more.
    hub.kubectl("-n", NS, "delete", "infraenv", name, "--timeout=60s")
    uses = token_uses(hub, cur, new)
    assert all(400 <= s < 500 for s in uses.values()), uses
    assert uses["events"] == 401 and uses["register"] in (401, 404), uses
