"""Durability: a write the API acknowledged survives kill -9, and a clean
shutdown (SIGTERM) exits 0 and loses nothing; resourceVersions keep
increasing across restarts."""

import http.client
import json
import ssl
import subprocess
import threading
import time
import uuid

import pytest

from conftest import AGENTHUB, free_port, wait_for

NS = "dur"
WRITERS = 4


def cm_body(name):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS}, "data": {"name": name}}


def agent_body(name):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": NS, "labels": {"e2e": "dur"}},
            "spec": {"approved": False, "role": "", "hostname": name}}


KINDS = {
    "configmaps": (f"/api/v1/namespaces/{NS}/configmaps", cm_body,
                   lambda o: o["data"]["name"]),
    "agents": (f"/apis/agent-install.openshift.io/v1beta1/namespaces/{NS}/agents", agent_body,
               lambda o: o["spec"]["hostname"]),
}


def list_all(hub, path):
    """{name: object} of a full (paginated) list."""
    out, cont = {}, None
    while True:
        q = "?limit=500" + (f"&continue={cont}" if cont else "")
        body = hub.get_json(path + q)
        for o in body["items"]:
            out[o["metadata"]["name"]] = o
        cont = body["metadata"].get("continue")
        if not cont:
            return out, body["metadata"]["resourceVersion"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_sigkill_loses_no_acknowledged_write(hub, kind):
    path, make, payload = KINDS[kind]
    hub.create_namespace(NS)
    acked = []           # (name, resourceVersion) of every create answered 201
    unexpected = []      # any other answer before the kill
    lock = threading.Lock()
    stop = threading.Event()

    def writer(i):
        try:
            conn = hub.connection(timeout=10)
        except OSError:
            return
        headers = hub.auth_headers()
        n = 0
        while not stop.is_set():
            name = f"w{i}-{n}" if kind == "configmaps" else str(uuid.uuid4())
            n += 1
            try:
                conn.request("POST", path, json.dumps(make(name)), headers)
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException, ssl.SSLError):
                return   # the daemon is gone
            if resp.status == 201:
                obj = json.loads(body)
                with lock:
                    acked.append((name, obj["metadata"]["resourceVersion"]))
            else:
                with lock:
                    unexpected.append((resp.status, body[:300]))
                return

    threads = [threading.Thread(target=writer, args=(i,), daemon=True) for i in range(WRITERS)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    wait_for(lambda: len(acked) >= 20 or unexpected, 15, what="the first acknowledged writes")
    time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    hub.kill9()
    stop.set()
    for t in threads:
        t.join(15)
        assert not t.is_alive(), "a writer is stuck after the kill"
    assert not unexpected, f"unexpected answers before the kill: {unexpected[:5]}"
    with lock:
        acked_now = list(acked)
    assert len(acked_now) >= 20
    print(f"{kind}: {len(acked_now)} creates acknowledged before kill -9")

    hub.start()
    objs, _ = list_all(hub, path)
    missing = [n for n, _ in acked_now if n not in objs]
    assert not missing, (f"{len(missing)} of {len(acked_now)} acknowledged {kind} lost "
                         f"after kill -9, e.g. {missing[:5]}")
    for name, rv in acked_now:
        o = objs[name]
        assert payload(o) == name
        # nothing rewrote the object: same revision as acknowledged (Agents
        # may since have been written by a controller: never lower)
        if kind == "configmaps":
            assert o["metadata"]["resourceVersion"] == rv, (name, rv, o["metadata"])
        else:
            assert int(o["metadata"]["resourceVersion"]) >= int(rv)
    # kubectl agrees, and the hub takes writes again with higher revisions
    r = hub.kubectl("get", kind, "-n", NS, "-o", "name")
    assert len(r.stdout.split()) == len(objs)
    newest = max(int(rv) for _, rv in acked_now)
    r = hub.request("POST", path, make("after-restart" if kind == "configmaps"
                                       else str(uuid.uuid4())))
    assert r.status == 201, r
    assert int(r.json()["metadata"]["resourceVersion"]) > newest


def test_sigterm_clean_exit_and_restart_keeps_everything(hub):
    hub.create_namespace(NS)
    items = [{"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"c{i}", "namespace": NS, "labels": {"i": str(i)}},
              "data": {"i": str(i)}} for i in range(10)]
    items += [agent_body(f"00000000-0000-0000-0000-00000000000{i}") for i in range(3)]
    hub.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                      "items": items}))
    hub.kubectl("patch", "configmap", "c0", "-n", NS, "--type", "merge",
                "-p", '{"data":{"i":"patched"}}')
    hub.kubectl("delete", "configmap", "c9", "-n", NS)
    cms, list_rv = list_all(hub, f"/api/v1/namespaces/{NS}/configmaps")
    before = {n: (o["metadata"]["resourceVersion"], o["metadata"]["uid"], o["data"])
              for n, o in cms.items()}
    assert set(before) == {f"c{i}" for i in range(9)}

    # An open watch must not keep the daemon from draining.
    w = hub.watch(f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={list_rv}")
    try:
        assert w.status == 200
        t0 = time.monotonic()
        rc = hub.stop()      # asserts exit 0 and a clean log
        assert rc == 0
        assert time.monotonic() - t0 < 15, "SIGTERM drain took too long"
    finally:
        w.close()

    hub.start()
    cms, list_rv2 = list_all(hub, f"/api/v1/namespaces/{NS}/configmaps")
    after = {n: (o["metadata"]["resourceVersion"], o["metadata"]["uid"], o["data"])
             for n, o in cms.items()}
    assert after == before
    assert after["c0"][2] == {"i": "patched"}
    assert int(list_rv2) >= int(list_rv)
    agents = hub.kubectl_json("get", "agents", "-n", NS)["items"]
    assert sorted(a["metadata"]["name"] for a in agents) == \
        [f"00000000-0000-0000-0000-00000000000{i}" for i in range(3)]
    # revisions keep increasing after the restart
    hub.kubectl("create", "configmap", "fresh", "-n", NS, "--from-literal=k=v")
    fresh = hub.get_json(f"/api/v1/namespaces/{NS}/configmaps/fresh")
    assert int(fresh["metadata"]["resourceVersion"]) > max(int(v[0]) for v in after.values())
    assert int(fresh["metadata"]["resourceVersion"]) > int(list_rv2)
    # a watch resumed from the pre-restart revision sees only the new write
    w = hub.watch(f"/api/v1/namespaces/{NS}/configmaps?watch=1&resourceVersion={list_rv2}")
    try:
        evs = w.events_until(lambda e: len(e) >= 1, 10)
        assert (evs[0]["type"], evs[0]["object"]["metadata"]["name"]) == ("ADDED", "fresh")
    finally:
        w.close()
    # and a second clean restart changes nothing either
    hub.restart()
    cms, _ = list_all(hub, f"/api/v1/namespaces/{NS}/configmaps")
    assert set(cms) == set(before) | {"fresh"}


def test_second_daemon_on_the_same_data_dir_is_refused(hub, tmp_path):
    """Two daemons on one store would hand out the same revisions; the second
    one stops at start with a clear error, and the first goes on serving
    with its kubeconfig untouched."""
    hub.create_namespace(NS)
    kubeconfig_before = hub.kubeconfig.read_text()
    second = subprocess.run(
        [str(AGENTHUB), "serve", "--data-dir", str(hub.data_dir),
         "--listen", f"127.0.0.1:{free_port()}",
         # On PostgreSQL (AGENTHUB_STORE=postgres) the same database too:
         # the data directory itself is what is refused.
         *(["--store", hub.store_url] if hub.store_url else [])],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert "another agenthub process is using it" in second.stdout + second.stderr
    assert hub.alive()
    assert hub.kubeconfig.read_text() == kubeconfig_before
    hub.kubectl("create", "configmap", "still-served", "-n", NS, "--from-literal=k=v")
    assert hub.get_json(f"/api/v1/namespaces/{NS}/configmaps/still-served")["data"] == {"k": "v"}
    # Once the first one is gone (even by kill -9), the directory is free again.
    hub.kill9()
    hub.start()
    assert hub.get_json(f"/api/v1/namespaces/{NS}/configmaps/still-served")["data"] == {"k": "v"}


def test_object_cache_flag(hub_factory, tmp_path):
    """--object-cache-bytes 0 serves every read from the database; a bad value
    stops the start naming the flag."""
    bad = subprocess.run(
        [str(AGENTHUB), "serve", "--data-dir", str(tmp_path / "bad"),
         "--listen", f"127.0.0.1:{free_port()}", "--object-cache-bytes", "lots"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "--object-cache-bytes: expected a number of bytes (0: no cache), got lots" in bad.stderr
    hub = hub_factory(extra_args=["--object-cache-bytes", "0"], name="nocache")
    hub.create_namespace(NS)
    hub.kubectl("create", "configmap", "c", "-n", NS, "--from-literal=k=v1")
    hub.kubectl("patch", "configmap", "c", "-n", NS, "--type", "merge", "-p", '{"data":{"k":"v2"}}')
    got = hub.get_json(f"/api/v1/namespaces/{NS}/configmaps/c")
    assert got["data"] == {"k": "v2"}
    # A stale resourceVersion is still refused without the cache.
    stale = dict(got, data={"k": "v3"})
    stale["metadata"] = dict(got["metadata"], resourceVersion=str(int(got["metadata"]["resourceVersion"]) - 1))
    r = hub.request("PUT", f"/api/v1/namespaces/{NS}/configmaps/c", stale)
    assert r.status == 409, r.body
    assert r.json()["reason"] == "Conflict"
    hub.restart()
    assert hub.get_json(f"/api/v1/namespaces/{NS}/configmaps/c")["data"] == {"k": "v2"}
