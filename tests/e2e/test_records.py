"""The hub's private records (agenthub.internal.*: a host's applied spec and
state, an InfraEnv's image state, a cluster's state and events token) live
and die with their owners: a record whose owner is deleted is removed, one
left behind while the hub was down is removed after the next start, and a
restart keeps the records of live owners."""
import json
import sqlite3
import time

import pytest

from conftest import CONFORMANCE_DIR, wait_for
from test_install import NS, Sim, agents, infraenv, setup_common

HOSTSTATES = "agenthub.internal.hoststates"
HOSTSPECS = "agenthub.internal.hostspecs"
IMAGESTATES = "agenthub.internal.imagestates"
CLUSTERSTATES = "agenthub.internal.clusterstates"
EVENTTOKENS = "agenthub.internal.eventtokens"


def db_of(hub, ro=True):
    mode = "?mode=ro" if ro else ""
    return sqlite3.connect(f"file:{hub.data_dir / 'agenthub.db'}{mode}", uri=True, timeout=10)


def record(hub, resource, ns, name):
    db = db_of(hub)
    try:
        row = db.execute("SELECT json FROM objects WHERE resource = ? AND ns = ? AND name = ?",
                         (resource, ns, name)).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


def gone(hub, resource, ns, name, what):
    wait_for(lambda: record(hub, resource, ns, name) is None, timeout=20, interval=0.3,
             what=f"{what} removed")


@pytest.mark.sqlite_only  # reads the SQLite file and writes orphans into it while the hub is down
def test_records_follow_their_owners(hub_factory, tmp_path, sims):
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "60s"])
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node")
    ie_uid = ie["metadata"]["uid"]
    aci_uid = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")["metadata"]["uid"]
    sim = Sim(hub, ie, tmp_path, hosts=1)
    sims.append(sim)
    a = wait_for(lambda: (agents(hub) or [None])[0], timeout=60, interval=0.5, what="the Agent")
    host = a["metadata"]["name"]

    def live_records():
        recs = {r: record(hub, r, NS, host) for r in (HOSTSTATES, HOSTSPECS)}
        recs[IMAGESTATES] = record(hub, IMAGESTATES, "", ie_uid)
        recs[CLUSTERSTATES] = record(hub, CLUSTERSTATES, "", aci_uid)
        return recs if all(recs.values()) else None
    before = wait_for(live_records, timeout=60, interval=0.5, what="the records of the host, image and cluster")
    assert before[HOSTSTATES]["uid"] == a["metadata"]["uid"]
    assert before[HOSTSPECS]["uid"] == a["metadata"]["uid"]
    assert before[IMAGESTATES]["token"]

    # Records whose owners vanished while the hub was down (written behind
    # its back, at the store's current revision).
    hub.stop()
    orphans = [(HOSTSTATES, NS, "no-such-agent",
                {"uid": "gone", "checkedInAt": 1, "status": "known", "statusUpdatedAt": 1}),
               (HOSTSPECS, NS, "no-such-agent", {"uid": "gone"}),
               (IMAGESTATES, "", "11111111-2222-3333-4444-555555555555", {"token": "t"}),
               (CLUSTERSTATES, "", "11111111-2222-3333-4444-666666666666", {"id": "x"}),
               (EVENTTOKENS, "", "11111111-2222-3333-4444-777777777777", {"token": "t"})]
    db = db_of(hub, ro=False)
    try:
        (rev,) = db.execute("SELECT value FROM meta WHERE key = 'rev'").fetchone()
        for res, ns, name, body in orphans:
            db.execute("INSERT INTO objects (resource, ns, name, rev, json) VALUES (?, ?, ?, ?, ?)",
                       (res, ns, name, rev, json.dumps(body)))
        db.commit()
    finally:
        db.close()
    hub.start()
    for res, ns, name, _ in orphans:
        gone(hub, res, ns, name, f"the orphan {res} {name}")
    # The restart kept what belongs to live owners.
    after = live_records()
    assert after is not None
    assert after[HOSTSTATES]["uid"] == before[HOSTSTATES]["uid"]
    assert after[IMAGESTATES]["token"] == before[IMAGESTATES]["token"]

    # Deleting an owner deletes its records.
    sim.stop()
    hub.kubectl("-n", NS, "delete", "agent", host, "--timeout=60s", timeout=90)
    gone(hub, HOSTSTATES, NS, host, "the host's state record")
    gone(hub, HOSTSPECS, NS, host, "the host's spec record")
    hub.kubectl("-n", NS, "delete", "infraenv", "myinfraenv", "--timeout=60s", timeout=90)
    gone(hub, IMAGESTATES, "", ie_uid, "the InfraEnv's image state")
    tokens_before = record(hub, EVENTTOKENS, "", aci_uid)
    hub.kubectl("-n", NS, "delete", "aci", "test-agent-cluster-install", "--timeout=60s", timeout=90)
    gone(hub, CLUSTERSTATES, "", aci_uid, "the cluster's state record")
    if tokens_before is not None:
        gone(hub, EVENTTOKENS, "", aci_uid, "the cluster's events token")
    time.sleep(0.5)
    assert record(hub, HOSTSTATES, NS, host) is None
