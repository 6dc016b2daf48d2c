"""Failover of the leader under load: three replicas on one PostgreSQL
database behind HAProxy in TCP mode (the README's configuration, taken from
the README itself), simulated hosts installing five single-node clusters and
a 3+2 cluster through the balancer, kubectl and a writer through it too;
the leader is killed with SIGKILL mid-install.  Another replica leads within
15 s, every cluster completes, no acknowledged write is lost, and the
watches on the surviving replicas saw every change, in order."""
import copy
import json
import pathlib
import re
import shutil
import socket
import subprocess
import threading
import time

import pytest

import pgserver
from conftest import free_port, wait_for
from test_install import AGENT, SUBNET, cluster_deployment, conds_of, multi_node_aci, setup_common
from test_replicas import LEASE, SHARED_FILES

NS = "spoke-cluster"
README = pathlib.Path(__file__).resolve().parents[2] / "README.md"
SNO = 5


def haproxy_config(port, backends):
    """The README's haproxy.cfg with its addresses replaced by ours."""
    text = README.read_text()
    m = re.search(r"# /etc/haproxy/haproxy.cfg on hub.example.com\n(.*?)```", text, re.S)
    assert m, "README: the HAProxy example is gone"
    cfg = m.group(1)
    assert "bind :6443" in cfg and cfg.count("10.0.0.1") == 3, cfg
    cfg = cfg.replace("bind :6443", f"bind 127.0.0.1:{port}")
    for i, b in enumerate(backends, 1):
        cfg = cfg.replace(f"10.0.0.1{i}:6443", f"127.0.0.1:{b}")
    return cfg


@pytest.fixture
def db_url():
    if pgserver.bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed "
                    "(/usr/lib/postgresql/*/bin/initdb; Debian package postgresql)")
    return pgserver.server().createdb()


@pytest.fixture
def balancer(tmp_path):
    exe = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not pathlib.Path(exe).is_file():
        pytest.skip("haproxy not installed (Debian package haproxy; scripts/install-deps.sh)")
    procs = []

    def start(port, backends):
        cfg = tmp_path / "haproxy.cfg"
        cfg.write_text(haproxy_config(port, backends))
        chk = subprocess.run([exe, "-c", "-f", str(cfg)], capture_output=True, text=True)
        assert chk.returncode == 0, chk.stdout + chk.stderr
        log = open(tmp_path / "haproxy.log", "w")
        procs.append(subprocess.Popen([exe, "-db", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT))
        def listening():
            assert procs[-1].poll() is None, (tmp_path / "haproxy.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, timeout=10, what="haproxy listening")
    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


def identity_of(hub):
    return (hub.data_dir / "replica.id").read_text().strip()


def lease_holder(hub):
    try:
        r = hub.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE[0]}/leases/{LEASE[1]}",
                        timeout=3)
    except OSError:
        return None
    return (r.json()["spec"].get("holderIdentity") or None) if r.status == 200 else None


class Writer(threading.Thread):
    """ConfigMaps created one after another through the balancer; the names
    of those acknowledged (201) are kept.  A failed create (the replica it
    reached died) is retried under a new name: only acknowledgements count."""

    def __init__(self, lb):
        super().__init__(daemon=True)
        self.lb, self.acked, self.failed, self.stop = lb, [], 0, threading.Event()

    def run(self):
        i = 0
        while not self.stop.is_set():
            name = f"w{i:05d}"
            i += 1
            try:
                r = self.lb.request("POST", f"/api/v1/namespaces/{NS}/configmaps",
                                    {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": name}, "data": {"i": str(i)}}, timeout=5)
                if r.status == 201:
                    self.acked.append(name)
                else:
                    self.failed += 1
            except OSError:
                self.failed += 1
            time.sleep(0.02)


class Watcher(threading.Thread):
    """A watch on the writer's ConfigMaps on one replica, from a revision."""

    def __init__(self, hub, rv):
        super().__init__(daemon=True)
        self.events, self.error = [], None
        self.w = hub.watch(f"/api/v1/namespaces/{NS}/configmaps?watch=true&resourceVersion={rv}"
                           f"&allowWatchBookmarks=false&timeoutSeconds=900", timeout=900)
        assert self.w.status == 200

    def run(self):
        try:
            while True:
                ev = self.w.next_event(timeout=900)
                if ev is None:
                    return
                self.events.append(ev)
        except (OSError, ValueError) as e:
            self.error = e


def test_leader_killed_mid_install(hub_factory, db_url, balancer, tmp_path):
    lbport = free_port()
    svc = ["--service-url", f"https://127.0.0.1:{lbport}"]
    hubs = [hub_factory(start=False, name=f"replica{i}") for i in range(3)]
    for h in hubs:
        h.port = free_port()
        h.extra_args += ["--store", db_url, *svc]
        h.store_url = None
    hubs[0].start()
    for h in hubs[1:]:
        for f in SHARED_FILES:
            if (hubs[0].data_dir / f).is_file():
                shutil.copy2(hubs[0].data_dir / f, h.data_dir / f)
        h.start()
    balancer(lbport, [h.port for h in hubs])

    # The balancer as a hub for the test's clients: its port, and kubectl
    # with a kubeconfig whose server is the balancer (as the README says).
    lb = copy.copy(hubs[0])
    lb.port = lbport
    lb.cache_dir = tmp_path / "lb-kubectl-cache"
    kc = tmp_path / "lb-kubeconfig"
    kc.write_text(re.sub(r'server: "?https://127\.0\.0\.1:\d+"?', f'server: "https://127.0.0.1:{lbport}"',
                         hubs[0].kubeconfig.read_text()))
    assert str(lbport) in kc.read_text()
    lb.__class__ = type("Balanced", (hubs[0].__class__,), {"kubeconfig": property(lambda s: kc)})
    wait_for(lambda: lb.readyz(), timeout=20, what="ready through the balancer")

    holder = wait_for(lambda: lease_holder(lb), timeout=15, what="a leader")
    leader = next(h for h in hubs if holder.endswith(identity_of(h)))
    survivors = [h for h in hubs if h is not leader]

    # Five SNO clusters and a 3+2 cluster, every InfraEnv auto-approving.
    setup_common(lb)
    names = [f"sno{i}" for i in range(SNO)] + ["multi"]
    for n in names:
        lb.apply_obj(cluster_deployment(n, f"{n}-aci"))
        lb.apply_obj(multi_node_aci(f"{n}-aci", n, cp=1 if n != "multi" else 3,
                                    workers=0 if n != "multi" else 2))
        lb.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                      "metadata": {"name": f"{n}-ie", "namespace": NS},
                      "spec": {"clusterRef": {"name": n, "namespace": NS},
                               "pullSecretRef": {"name": "pull-secret"},
                               "agentApproval": {"autoApprove": True}}})
    lb.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv", "--all", "--timeout=60s")
    isos = {n: lb.kubectl_json("-n", NS, "get", "infraenv", f"{n}-ie")["status"]["isoDownloadURL"]
            for n in names}
    assert all(u.startswith(f"https://127.0.0.1:{lbport}/") for u in isos.values()), isos

    # Watches on the two followers (they survive), from the current revision.
    rv = lb.get_json(f"/api/v1/namespaces/{NS}/configmaps")["metadata"]["resourceVersion"]
    watchers = [Watcher(h, rv) for h in survivors]
    for w in watchers:
        w.start()
    writer = Writer(lb)
    writer.start()

    # One simulator for the five SNO hosts (host i boots ISO i), one for the
    # 3+2 cluster's five hosts, all through the balancer.
    sims = []
    for tag, seed, sources in (("sno", 17, [isos[f"sno{i}"] for i in range(SNO)]),
                               ("multi", 3, [isos["multi"]])):
        args = [str(AGENT), "simulate", "--hosts", "5", "--cacert", str(lb.ca_path),
                "--seed", str(seed), "--subnet", SUBNET, "--stage-seconds", "1",
                "--max-poll-seconds", "1", "--ramp-seconds", "1"]
        for u in sources:
            args += ["--iso", u]
        log = open(tmp_path / f"sim-{tag}.log", "w")
        sims.append((subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT), log))
    try:
        # Mid-install: once some host is writing its image.
        def installing():
            items = lb.kubectl_json("-n", NS, "get", "agents")["items"]
            return any(a.get("status", {}).get("debugInfo", {}).get("state")
                       in ("installing", "installing-in-progress") for a in items)
        wait_for(installing, timeout=90, interval=0.5, what="an Agent installing")
        acked_before = len(writer.acked)
        leader.kill9()
        t0 = time.monotonic()
        new = wait_for(lambda: next((h for h in survivors if lease_holder(h) not in (None, holder)), None),
                       timeout=20, interval=0.2, what="a new leader")
        took = time.monotonic() - t0
        print(f"new leader {took:.1f} s after kill -9 of the leader")
        assert took < 15, took
        new_holder = lease_holder(new)
        assert any(new_holder.endswith(identity_of(h)) for h in survivors), new_holder

        for n in names:
            r = lb.kubectl("-n", NS, "wait", "--for=condition=Completed", f"aci/{n}-aci", "--timeout=150s",
                           timeout=170, check=False)
            if r.returncode != 0:
                aci = lb.kubectl_json("-n", NS, "get", "aci", f"{n}-aci")
                ags = [(a["metadata"]["name"], a.get("status", {}).get("debugInfo", {}).get("state"),
                        [c.get("message") for c in a.get("status", {}).get("conditions", [])
                         if c.get("status") == "False"])
                       for a in lb.kubectl_json("-n", NS, "get", "agents")["items"]
                       if a["spec"].get("clusterDeploymentName", {}).get("name") == n]
                pytest.fail(f"{n} did not complete: {aci.get('status')}\nagents: {ags}\n{r.stderr}")
    finally:
        for sim, log in sims:
            sim.terminate()
            try:
                sim.wait(30)
            except subprocess.TimeoutExpired:
                sim.kill()
            log.close()
        writer.stop.set()
        writer.join(15)

    for n in names:
        aci = lb.kubectl_json("-n", NS, "get", "aci", f"{n}-aci")
        c = conds_of(aci)
        assert c["Completed"]["reason"] == "InstallationCompleted", (n, c)
        assert c["Failed"]["status"] == "False", (n, c)
    agents = lb.kubectl_json("-n", NS, "get", "agents")["items"]
    assert len(agents) == 10, [a["metadata"]["name"] for a in agents]
    assert all(a["status"]["debugInfo"]["state"] == "installed" for a in agents), \
        [(a["metadata"]["name"], a["status"]["debugInfo"]["state"]) for a in agents]
    roles = sorted(a["status"]["role"] for a in agents
                   if a["spec"]["clusterDeploymentName"]["name"] == "multi")
    assert roles == ["master"] * 3 + ["worker"] * 2, roles

    # No acknowledged write lost; writes went on across the failover.
    assert len(writer.acked) > acked_before > 0, (acked_before, len(writer.acked))
    final = {}
    for h in survivors:
        lst = h.get_json(f"/api/v1/namespaces/{NS}/configmaps")
        final[h.port] = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"])
                         for o in lst["items"] if o["metadata"]["name"].startswith("w")}
        missing = [n for n in writer.acked if n not in final[h.port]]
        assert not missing, f"acknowledged creates lost on replica {h.port}: {missing[:10]}"
    print(f"writer: {len(writer.acked)} creates acknowledged, {writer.failed} failed or refused")

    # Every change, in order, on each surviving replica's watch.
    time.sleep(1)
    for h, w in zip(survivors, watchers):
        assert w.error is None, w.error
        evs = [e for e in w.events if e["type"] != "BOOKMARK"]
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs), "watch events out of order"
        seen = {e["object"]["metadata"]["name"]: int(e["object"]["metadata"]["resourceVersion"])
                for e in evs if e["type"] == "ADDED" and e["object"]["metadata"]["name"].startswith("w")}
        assert seen == final[h.port], (
            f"replica {h.port}: watch missed {sorted(set(final[h.port]) - set(seen))[:10]}, "
            f"extra {sorted(set(seen) - set(final[h.port]))[:10]}")
        # The reading thread holds the response: end the stream under it.
        try:
            w.w.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        w.join(10)
    assert json.dumps(final[survivors[0].port], sort_keys=True) == json.dumps(final[survivors[1].port],
                                                                              sort_keys=True)
