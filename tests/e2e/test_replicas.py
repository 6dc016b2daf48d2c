"""Several agenthub replicas on one PostgreSQL database (a real server from
Debian's postgresql, tests/e2e/pgserver.py): a write through one replica is
seen by a watch on another within 100 ms, every replica's watch sees every
change in order, and one leader, elected through the Lease
kube-system/agenthub-controllers, runs the controllers; when it is killed
with SIGKILL another replica takes the Lease over and reconciles; a host
that reaches only a follower registers and the leader sees it; `agenthub
migrate` moves a SQLite hub's objects over."""

import shutil
import subprocess
import threading
import time

import pytest

import pgserver
from conftest import AGENTHUB, wait_for

NS = "replicas"
LEASE = ("kube-system", "agenthub-controllers")
# Everything a replica shares with the others: the CA, the serving key and
# certificate, the ServiceAccount and image-URL signing keys, the admin token.
SHARED_FILES = ("ca.crt", "ca.key", "serving.crt", "serving.key", "sa.key", "admin.token",
                "jwt-ec.key")


@pytest.fixture
def db_url():
    if pgserver.bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed "
                    "(/usr/lib/postgresql/*/bin/initdb; Debian package postgresql)")
    return pgserver.server().createdb()


def replicas(hub_factory, url, n):
    """n hubs on one database; the first makes the credentials, the others
    start from a copy of them (as an operator would install them)."""
    first = hub_factory(extra_args=["--store", url], name="replica0")
    out = [first]
    for i in range(1, n):
        h = hub_factory(extra_args=["--store", url], start=False, name=f"replica{i}")
        for f in SHARED_FILES:
            if (first.data_dir / f).is_file():
                shutil.copy2(first.data_dir / f, h.data_dir / f)
        out.append(h.start())
    return out


def cm(name, value="v"):
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": NS}, "data": {"k": value}}


def lease_holder(hub):
    r = hub.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE[0]}/leases/{LEASE[1]}")
    if r.status != 200:
        return None
    return r.json()["spec"].get("holderIdentity") or None


def test_write_on_one_replica_is_seen_by_a_watch_on_another(hub_factory, db_url):
    a, b = replicas(hub_factory, db_url, 2)
    a.create_namespace(NS)
    path = f"/api/v1/namespaces/{NS}/configmaps"
    rv = b.get_json(path)["metadata"]["resourceVersion"]
    wb = b.watch(f"{path}?watch=1&resourceVersion={rv}&allowWatchBookmarks=false", timeout=30)
    wa = a.watch(f"{path}?watch=1&resourceVersion={rv}&allowWatchBookmarks=false", timeout=30)
    assert wb.status == 200 and wa.status == 200

    # Latency: each write through a, acknowledged at t_ack, reaches b's
    # watch at t_seen; the worst of ten must be under 100 ms.
    seen = {}

    def reader():
        while len(seen) < 10:
            ev = wb.next_event(timeout=20)
            if ev is None:
                return
            if ev["type"] == "ADDED":
                seen[ev["object"]["metadata"]["name"]] = time.monotonic()

    t = threading.Thread(target=reader)
    t.start()
    acks = {}
    for i in range(10):
        r = a.request("POST", path, cm(f"lat{i}"))
        acks[f"lat{i}"] = time.monotonic()
        assert r.status == 201, r
        time.sleep(0.2)
    t.join(30)
    assert sorted(seen) == sorted(acks), (seen, acks)
    worst = max(seen[n] - acks[n] for n in acks)
    print(f"worst cross-replica watch latency after the ack: {worst * 1000:.1f} ms")
    assert worst < 0.100, worst

    # Writes through both replicas at once: both watches see all of them,
    # each once, in resourceVersion order.
    def writer(hub, tag):
        for i in range(25):
            r = hub.request("POST", path, cm(f"{tag}{i}"))
            assert r.status == 201, r

    ts = [threading.Thread(target=writer, args=(h, tag)) for h, tag in ((a, "a"), (b, "b"))]
    for x in ts:
        x.start()
    for x in ts:
        x.join(60)
    # (b's watch already gave the ten lat* events to the reader above.)
    for w, want in ((wa, 60), (wb, 50)):
        evs = w.events_until(lambda got: len([e for e in got if e["type"] == "ADDED"]) >= want,
                             timeout=30)
        names = [e["object"]["metadata"]["name"] for e in evs if e["type"] == "ADDED"]
        assert len(names) == len(set(names)) == want, names
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        assert rvs == sorted(rvs), rvs
    wa.close()
    wb.close()
    # A list through either replica is the same.
    la = sorted(o["metadata"]["name"] for o in a.get_json(path)["items"])
    lb = sorted(o["metadata"]["name"] for o in b.get_json(path)["items"])
    assert la == lb and len(la) == 60


def infraenv(name):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"pullSecretRef": {"name": "pull-secret"}}}


def image_created(hub, name):
    r = hub.request("GET", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{NS}/infraenvs/{name}")
    if r.status != 200:
        return False
    conds = r.json().get("status", {}).get("conditions", [])
    return any(c["type"] == "ImageCreated" and c["status"] == "True" for c in conds)


def test_one_leader_runs_the_controllers_and_another_takes_over(hub_factory, db_url):
    a, b = replicas(hub_factory, db_url, 2)
    holder = wait_for(lambda: lease_holder(a), timeout=10, what="a Lease holder")
    assert holder.endswith(open(a.data_dir / "replica.id").read().strip()), holder
    assert "now holds Lease kube-system/agenthub-controllers" in a.log_text()
    assert "now holds Lease" not in b.log_text()
    assert lease_holder(b) == holder

    # An InfraEnv created through the follower is reconciled by the leader.
    b.create_namespace(NS)
    b.kubectl("-n", NS, "create", "secret", "generic", "pull-secret",
              "--type=kubernetes.io/dockerconfigjson",
              '--from-literal=.dockerconfigjson={"auths":{"q.io":{"auth":"eDp5"}}}')
    assert b.request("POST", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{NS}/infraenvs",
                     infraenv("ie1")).status == 201
    wait_for(lambda: image_created(b, "ie1"), timeout=30, what="ImageCreated on ie1")

    # Kill the leader: its database session ends with it, which frees the
    # session lock; the follower takes the lock, then the Lease, well within
    # the 15 s lease duration, and reconciles what was written meanwhile.
    a.kill9()
    t0 = time.monotonic()
    assert b.request("POST", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{NS}/infraenvs",
                     infraenv("ie2")).status == 201
    wait_for(lambda: lease_holder(b) not in (None, holder), timeout=25, interval=0.2,
             what="the Lease taken over")
    took = time.monotonic() - t0
    wait_for(lambda: image_created(b, "ie2"), timeout=30, interval=0.2, what="ImageCreated on ie2")
    reconciled = time.monotonic() - t0
    print(f"takeover {took:.1f} s, first reconcile {reconciled:.1f} s after kill -9 of the leader")
    assert took < 15, took
    assert reconciled < 15, reconciled
    assert "now holds Lease kube-system/agenthub-controllers" in b.log_text()
    lease = b.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE[0]}/leases/{LEASE[1]}").json()
    assert lease["spec"]["leaseTransitions"] >= 1, lease

    # The killed replica comes back as a follower on its own data dir; a
    # clean stop of the leader hands the Lease over at once.
    a.start()
    time.sleep(3)
    assert "now holds Lease" not in a.log_text()
    b.stop()
    t0 = time.monotonic()
    wait_for(lambda: "now holds Lease" in a.log_text(), timeout=10, what="a takes over")
    print(f"handover {time.monotonic() - t0:.1f} s after SIGTERM of the leader")


def test_migrate_sqlite_to_postgres(hub_factory, db_url):
    """agenthub migrate copies a stopped SQLite hub's objects into an empty
    PostgreSQL database, resourceVersions kept; a running hub's store and a
    database that already holds objects are refused, naming why."""
    old = hub_factory(start=False, name="sqlitehub")
    db = old.data_dir / "agenthub.db"
    old.extra_args += ["--store", f"sqlite:{db}"]
    old.store_url = None
    old.start()
    old.create_namespace(NS)
    for i in range(20):
        assert old.request("POST", f"/api/v1/namespaces/{NS}/configmaps", cm(f"m{i}", str(i))).status == 201
    before = {o["metadata"]["name"]: o for o in
              old.get_json(f"/api/v1/namespaces/{NS}/configmaps")["items"]}
    url = db_url.replace("postgres://postgres@", "postgres://postgres:s3cret@")
    busy = subprocess.run([str(AGENTHUB), "migrate", "--from", f"sqlite:{db}", "--to", url],
                          capture_output=True, text=True, timeout=60)
    assert busy.returncode == 1, busy
    assert "an agenthub process is using it (stop the hub first)" in busy.stderr, busy.stderr
    old.stop()
    done = subprocess.run([str(AGENTHUB), "migrate", "--from", f"sqlite:{db}", "--to", url],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done
    assert done.stdout.startswith("migrated "), done.stdout
    assert "s3cret" not in done.stdout + done.stderr and "postgres:xxxxx@" in done.stdout, done.stdout
    again = subprocess.run([str(AGENTHUB), "migrate", "--from", f"sqlite:{db}", "--to", url],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already holds agenthub objects" in again.stderr, again

    new = hub_factory(extra_args=["--store", url], name="pghub")
    after = {o["metadata"]["name"]: o for o in
             new.get_json(f"/api/v1/namespaces/{NS}/configmaps")["items"]}
    assert after.keys() == before.keys()
    for name, o in before.items():
        assert after[name]["metadata"]["resourceVersion"] == o["metadata"]["resourceVersion"]
        assert after[name]["metadata"]["uid"] == o["metadata"]["uid"]
        assert after[name]["data"] == o["data"]
    # Writes go on from the migrated revision, with optimistic concurrency.
    o = after["m0"]
    o["data"] = {"k": "changed"}
    r = new.request("PUT", f"/api/v1/namespaces/{NS}/configmaps/m0", o)
    assert r.status == 200, r
    assert int(r.json()["metadata"]["resourceVersion"]) > int(o["metadata"]["resourceVersion"])
    r = new.request("PUT", f"/api/v1/namespaces/{NS}/configmaps/m0", o)
    assert r.status == 409, r
    assert "s3cret" not in new.log_text()


def test_host_through_a_follower_is_seen_by_the_leader(hub_factory, db_url, tmp_path):
    """A simulated host that reaches only the follower (every replica's
    --service-url names it) registers, reports its inventory and becomes a
    known-unbound Agent, which the leader's controllers reconcile."""
    from test_discovery import setup_infraenv, simulated_host
    from conftest import free_port
    a = hub_factory(start=False, name="leader")
    b = hub_factory(start=False, name="follower")
    b.port = free_port()
    svc = ["--service-url", f"https://127.0.0.1:{b.port}"]
    a.extra_args += ["--store", db_url, *svc]
    b.extra_args += ["--store", db_url, *svc]
    a.store_url = b.store_url = None
    a.start()
    wait_for(lambda: "now holds Lease" in a.log_text(), timeout=10, what="a leads")
    for f in SHARED_FILES:
        if (a.data_dir / f).is_file():
            shutil.copy2(a.data_dir / f, b.data_dir / f)
    b.start()
    ie = setup_infraenv(b)
    assert ie["status"]["isoDownloadURL"].startswith(f"https://127.0.0.1:{b.port}/"), ie["status"]
    with simulated_host(b, ie, tmp_path / "sim.log", seed=7) as agent:
        name = agent["metadata"]["name"]
        # The same Agent through the leader, and its inventory.
        ag = a.kubectl_json("-n", agent["metadata"]["namespace"], "get", "agent", name)
        assert ag["status"]["debugInfo"]["state"] == "known-unbound", ag["status"]
        assert ag["status"]["inventory"]["hostname"], ag["status"]["inventory"]
    assert "now holds Lease" not in b.log_text()
