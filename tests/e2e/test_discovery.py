"""Discovery end to end: an InfraEnv yields a discovery ISO whose ignition is
valid and carries the InfraEnv's settings; simulated hosts booted from it
register over the agent protocol and become Agents that track the host state
machine; silence makes them disconnected; a wrong token is refused."""
import contextlib
import zlib
import json
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import BUILD, CONFORMANCE_DIR, wait_for

AGENT = BUILD / "agenthub-agent"
NS = "spoke-cluster"
PULL_SECRET = '{"auths":{"cloud.openshift.com":{"auth":"c2VjcmV0OnRva2Vu","email":"a@example.com"}}}'


def need(binary):
    if not shutil.which(binary):
        pytest.skip(f"{binary} not installed")


def setup_infraenv(hub, manifest="infraEnvLateBinding.yaml"):
    if not (CONFORMANCE_DIR / manifest).is_file():
        pytest.skip("conformance manifests not available")
    hub.create_namespace(NS)
    hub.kubectl("-n", NS, "create", "secret", "generic", "pull-secret",
                "--type=kubernetes.io/dockerconfigjson",
                f"--from-literal=.dockerconfigjson={PULL_SECRET}")
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / manifest))
    name = hub.kubectl_json("get", "-f", str(CONFORMANCE_DIR / manifest))["metadata"]["name"]
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", f"infraenv/{name}",
                "--timeout=30s")
    return hub.kubectl_json("-n", NS, "get", "infraenv", name)


@contextlib.contextmanager
def simulated_host(hub, ie, log_path, seed, ready=None, what="a known-unbound Agent", args=()):
    """One simulated host booted from the InfraEnv ie's ISO (args: more
    simulator options): yields its Agent once it is known-unbound (and
    ready(agent) holds, when given), and stops the simulator when the block
    ends."""
    if not AGENT.is_file():
        pytest.fail(f"{AGENT} not built")
    with open(log_path, "w") as log:
        sim = subprocess.Popen([str(AGENT), "simulate", "--iso", ie["status"]["isoDownloadURL"],
                                "--hosts", "1", "--cacert", str(hub.ca_path), "--seed", str(seed),
                                *args],
                               stdout=log, stderr=subprocess.STDOUT)
        try:
            def known():
                items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
                ok = [a for a in items
                      if a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"
                      and (ready is None or ready(a))]
                return ok[0] if ok else None
            yield wait_for(known, timeout=90, what=what)
        finally:
            sim.send_signal(signal.SIGTERM)
            sim.wait(timeout=30)


def fetch(hub, url, headers=None):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, context=hub.ssl_context(), timeout=30) as r:
            return r.status, dict(r.getheaders()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()


def ignition_from_iso(iso_bytes, tmp_path):
    """Extract /images/ignition.img with xorriso and unpack config.ign from
    the gzip'd newc cpio, the way a booted CoreOS host does."""
    need("xorriso")
    iso = tmp_path / "d.iso"
    iso.write_bytes(iso_bytes)
    out = tmp_path / "ignition.img"
    subprocess.run(["xorriso", "-indev", str(iso), "-osirrox", "on", "-extract",
                    "/images/ignition.img", str(out)], check=True, capture_output=True, timeout=60)
    area = out.read_bytes()
    assert len(area) == 262144
    raw = zlib.decompressobj(31).decompress(area)  # stops at the gzip end; zeros follow
    pos = 0
    while pos < len(raw):
        hdr = raw[pos:pos + 110]
        assert hdr[:6] == b"070701", "not a newc cpio"
        namesize = int(hdr[94:102], 16)
        filesize = int(hdr[54:62], 16)
        name = raw[pos + 110:pos + 110 + namesize - 1].decode()
        data_at = (pos + 110 + namesize + 3) & ~3
        data = raw[data_at:data_at + filesize]
        if name == "config.ign":
            return data
        if name == "TRAILER!!!":
            break
        pos = (data_at + filesize + 3) & ~3
    raise AssertionError("config.ign not in the embed area")


def test_image_created_iso_range_and_ignition(hub, tmp_path):
    ie = setup_infraenv(hub)
    st = ie["status"]
    cond = [c for c in st["conditions"] if c["type"] == "ImageCreated"][0]
    assert cond["status"] == "True" and cond["reason"] == "InfraEnvAvailable", cond
    for k in ("kernel", "initrd", "rootfs", "ipxeScript"):
        assert st["bootArtifacts"][k].startswith("https://"), st["bootArtifacts"]
    assert st["createdTime"]
    assert st["agentLabelSelector"] == {
        "matchLabels": {"infraenvs.agent-install.openshift.io": ie["metadata"]["name"]}}
    url = st["isoDownloadURL"]

    status, headers, first = fetch(hub, url, {"Range": "bytes=0-2047"})
    assert status == 206, (status, first[:200])
    assert headers["Content-Range"].startswith("bytes 0-2047/")
    size = int(headers["Content-Range"].split("/")[1])
    assert len(first) == 2048
    status, headers, iso = fetch(hub, url)
    assert status == 200 and len(iso) == size
    assert iso[:2048] == first
    status, headers, tail = fetch(hub, url, {"Range": f"bytes={size - 100}-"})
    assert status == 206 and tail == iso[-100:]
    status, _, _ = fetch(hub, url, {"Range": f"bytes={size + 10}-"})
    assert status == 416

    ign = ignition_from_iso(iso, tmp_path)
    doc = json.loads(ign)
    assert doc["ignition"]["version"] == "3.1.0"
    assert doc["ignition"]["proxy"]["httpProxy"] == "http://11.11.11.33"
    assert any(f["path"] == "/etc/someconfig" for f in doc["storage"]["files"])
    need("ignition-validate")
    p = tmp_path / "config.ign"
    p.write_bytes(ign)
    r = subprocess.run(["ignition-validate", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr

    # A label edit is not an image input: same URL, same createdTime.
    hub.kubectl("-n", NS, "label", "infraenv", ie["metadata"]["name"], "team=edge")
    time.sleep(1.5)
    again = hub.kubectl_json("-n", NS, "get", "infraenv", ie["metadata"]["name"])
    assert again["status"]["isoDownloadURL"] == url
    assert again["status"]["createdTime"] == st["createdTime"]


def test_bad_or_missing_image_token_is_refused(hub):
    ie = setup_infraenv(hub)
    url = ie["status"]["isoDownloadURL"]
    parts = url.split("/")
    i = parts.index("byapikey")
    parts[i + 1] = parts[i + 1][:-4] + "AAAA"
    status, _, _ = fetch(hub, "/".join(parts))
    assert status == 401


def test_missing_pull_secret_is_reported(hub):
    hub.create_namespace("other")
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "nops", "namespace": "other"},
                   "spec": {"pullSecretRef": {"name": "absent"}}})

    def cond():
        ie = hub.kubectl_json("-n", "other", "get", "infraenv", "nops")
        return [c for c in ie.get("status", {}).get("conditions", []) if c["type"] == "ImageCreated"]
    c = wait_for(cond, timeout=15, what="ImageCreated condition")[0]
    assert c["status"] == "False" and c["reason"] == "ImageCreationError", c
    assert "absent" in c["message"], c


def agent_api(hub, method, path, body=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key is not None:
        headers["X-Secret-Key"] = key
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(hub.base_url + "/api/assisted-install/v2" + path, data=data,
                                 method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, context=hub.ssl_context(), timeout=15) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_agent_api_tokens(hub):
    ie = setup_infraenv(hub)
    ie_id = ie["metadata"]["uid"]
    host = {"host_id": "11111111-2222-4333-8444-555555555555", "discovery_agent_version": "test"}
    assert agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts", host)[0] == 401
    assert agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts", host, key="garbage")[0] == 401
    token = ie["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/")[0]
    status, body = agent_api(hub, "POST", f"/infra-envs/{ie_id}/hosts", host, key=token)
    assert status == 201, body
    reg = json.loads(body)
    assert reg["id"] == host["host_id"] and reg["status"] == "discovering-unbound"
    status, body = agent_api(hub, "GET", f"/infra-envs/{ie_id}/hosts/{host['host_id']}/instructions",
                             key=token)
    assert status == 200, body
    steps = json.loads(body)
    assert steps["next_instruction_seconds"] > 0
    assert any(s["step_type"] == "inventory" for s in steps["instructions"]), steps
    # Another InfraEnv's token may not touch this one's hosts.
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "second", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/second", "--timeout=30s")
    other = hub.kubectl_json("-n", NS, "get", "infraenv", "second")
    tok2 = other["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/")[0]
    status, _ = agent_api(hub, "GET", f"/infra-envs/{ie_id}/hosts/{host['host_id']}/instructions", key=tok2)
    assert status == 403
    agent = hub.kubectl_json("-n", NS, "get", "agent", host["host_id"])
    assert agent["metadata"]["labels"]["infraenvs.agent-install.openshift.io"] == ie["metadata"]["name"]
    assert agent["metadata"]["ownerReferences"][0]["uid"] == ie_id


@pytest.fixture
def fast_hub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "6s"])


def test_simulated_hosts_register_and_disconnect(fast_hub, tmp_path):
    hub = fast_hub
    if not AGENT.is_file():
        pytest.fail(f"{AGENT} not built")
    ie = setup_infraenv(hub)
    url = ie["status"]["isoDownloadURL"]
    log = open(tmp_path / "sim.log", "w")
    sim = subprocess.Popen([str(AGENT), "simulate", "--iso", url, "--hosts", "3",
                            "--cacert", str(hub.ca_path), "--seed", "7"],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        def agents():
            items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
            ok = [a for a in items
                  if a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"
                  and a["status"].get("inventory", {}).get("cpu")]
            return ok if len(ok) == 3 else None
        items = wait_for(agents, timeout=60, what="3 known-unbound Agents")
        for a in items:
            conds = {c["type"]: c for c in a["status"]["conditions"]}
            assert conds["Connected"]["status"] == "True", conds
            assert conds["Bound"]["reason"] == "Unbound", conds
            assert conds["Validated"]["status"] == "True", conds
            assert conds["RequirementsMet"]["reason"] == "AgentIsNotApproved", conds
            assert a["status"]["validationsInfo"]["hardware"], a["status"]
        name = items[0]["metadata"]["name"]
        out = hub.kubectl("-n", NS, "patch", "agents.agent-install.openshift.io", name,
                          "-p", '{"spec":{"approved":true}}', "--type", "merge").stdout
        assert "patched" in out

        def approved():
            a = hub.kubectl_json("-n", NS, "get", "agent", name)
            c = {c["type"]: c for c in a["status"]["conditions"]}
            return c["RequirementsMet"]["reason"] == "AgentIsReady"
        wait_for(approved, timeout=90, what="RequirementsMet AgentIsReady")
    finally:
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        log.close()

    def disconnected():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        return all(a["status"]["debugInfo"]["state"] == "disconnected-unbound" for a in items)
    wait_for(disconnected, timeout=30, what="disconnected-unbound")
    a = hub.kubectl_json("-n", NS, "get", "agents")["items"][0]
    conds = {c["type"]: c for c in a["status"]["conditions"]}
    assert conds["Connected"]["status"] == "False"
    assert conds["Connected"]["reason"] == "AgentIsDisconnected"
