"""Host timeouts set by the operator (backend.md §1.5): `agenthub serve` reads
the upstream environment variables (HOST_STAGE_<STAGE>_TIMEOUT,
PREPARE_FOR_INSTALLATION_HOST_TIMEOUT, HOST_MAX_DISCONNECTION_TIME, ...) and
the repeatable flag `--host-timeout NAME=DURATION`, which wins over the
environment.  A host that stays in an installation stage longer than its
timeout goes to error with the upstream text, and the cluster fails.  A bad
value stops the start with a message naming the knob and the reason."""
import json
import os
import sqlite3
import subprocess
import time

import pytest

import pgserver

from conftest import AGENTHUB, CONFORMANCE_DIR, wait_for
from test_install import NS, Sim, agents, conds_of, infraenv, setup_common

STAGE_TIMEOUT = "HOST_STAGE_STARTING_INSTALLATION_TIMEOUT"


def test_stage_timeout_fails_the_host_and_the_cluster(hub_factory, tmp_path, sims, monkeypatch):
    # The environment asks for an hour; the flag wins with 8 seconds.
    monkeypatch.setenv(STAGE_TIMEOUT, "1h")
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s",
                                  "--host-timeout", f"{STAGE_TIMEOUT}=8s"])
    assert f"host timeout {STAGE_TIMEOUT}=1h (environment)" in hub.log_text()
    assert f"host timeout {STAGE_TIMEOUT}=8s (--host-timeout)" in hub.log_text()
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    # Each stage lasts an hour on the host: "Starting installation" outlives
    # its 8 s timeout long before the simulator would move on.
    sim = Sim(hub, ie, tmp_path, hosts=1, extra=["--stage-seconds", "3600"])
    sims.append(sim)
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)

    (a,) = agents(hub)
    info = a["status"]["debugInfo"]
    assert info["state"] == "error", info
    assert info["stateInfo"] == ("Host failed to install because its installation stage Starting installation "
                                 "took longer than expected 8s"), info
    assert a["status"]["progress"]["currentStage"] == "Starting installation"
    assert conds_of(a)["Installed"]["reason"] == "InstallationFailed", conds_of(a)

    aci = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")
    c = conds_of(aci)
    assert c["Failed"]["status"] == "True" and c["Failed"]["reason"] == "InstallationFailed", c
    assert c["Failed"]["message"].startswith("The installation failed: "), c
    assert aci["status"]["debugInfo"]["state"] == "error"


def host_state_record(hub, host_id):
    """The hub's private state record of a host, read from its store (the
    SQLite file, or its PostgreSQL database)."""
    if hub.store_url:
        out = pgserver.server().psql(
            "SELECT convert_from(json, 'UTF8') FROM ah_objects WHERE "
            f"resource = 'agenthub.internal.hoststates' AND ns = '{NS}' AND name = '{host_id}'",
            db=hub.store_url.split("/")[-1].split("?")[0])
        return json.loads(out) if out.strip() else None
    db = sqlite3.connect(f"file:{hub.data_dir / 'agenthub.db'}?mode=ro", uri=True, timeout=10)
    try:
        row = db.execute("SELECT json FROM objects WHERE resource = ? AND ns = ? AND name = ?",
                         ("agenthub.internal.hoststates", NS, host_id)).fetchone()
    finally:
        db.close()
    return json.loads(row[0]) if row else None


def test_stage_timeout_survives_a_restart(hub_factory, tmp_path, sims):
    # The host's state (its check-in and status-change times) is kept in the
    # store: a hub killed with SIGKILL and started again fails the stuck
    # host at the stage's original deadline, not a whole timeout after the
    # restart.
    timeout_s = 30
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "60s",
                                  "--host-timeout", f"{STAGE_TIMEOUT}={timeout_s}s"])
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    sim = Sim(hub, ie, tmp_path, hosts=1, extra=["--stage-seconds", "3600"])
    sims.append(sim)

    def in_stage():
        items = agents(hub)
        if items and items[0].get("status", {}).get("progress", {}).get("currentStage") == \
                "Starting installation":
            return items[0]
        return None
    a = wait_for(in_stage, timeout=180, interval=0.5, what="the host in the Starting installation stage")
    t_stage = time.time()
    host_id = a["metadata"]["name"]

    def recorded():
        rec = host_state_record(hub, host_id)
        return rec if rec and rec.get("status") == "installing-in-progress" else None
    before = wait_for(recorded, timeout=20, interval=0.5, what="the host's state record")
    assert before["uid"] == a["metadata"]["uid"]
    assert before["checkedInAt"] > 0 and before["statusUpdatedAt"] > 0

    # Well into the stage, the hub dies and comes back.
    time.sleep(timeout_s / 2)
    hub.kill9()
    hub.start()
    t_restart = time.time()
    after = host_state_record(hub, host_id)
    assert after["statusUpdatedAt"] == before["statusUpdatedAt"], (before, after)

    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/test-agent-cluster-install",
                "--timeout=120s", timeout=140)
    t_failed = time.time()
    (a,) = agents(hub)
    info = a["status"]["debugInfo"]
    assert info["state"] == "error", info
    assert info["stateInfo"] == ("Host failed to install because its installation stage Starting installation "
                                 f"took longer than expected {timeout_s}s"), info
    # The original deadline is t_stage + 30 s at the latest (plus a few
    # seconds of polling); a clock restarted by the restart would fire at
    # t_restart + 30 s or later.
    assert t_failed - t_stage < timeout_s + 8, (t_stage, t_restart, t_failed)
    assert t_failed < t_restart + timeout_s - 5, (t_stage, t_restart, t_failed)


def test_environment_timeout_applies(hub_factory, monkeypatch):
    monkeypatch.setenv("PREPARE_FOR_INSTALLATION_HOST_TIMEOUT", "2m")
    monkeypatch.setenv("HOST_MAX_DISCONNECTION_TIME", "45s")
    hub = hub_factory()
    log = hub.log_text()
    assert "host timeout PREPARE_FOR_INSTALLATION_HOST_TIMEOUT=2m (environment)" in log, log
    assert "host timeout HOST_MAX_DISCONNECTION_TIME=45s (environment)" in log, log


@pytest.mark.parametrize("env,args,message", [
    ({}, ["--host-timeout", f"{STAGE_TIMEOUT}=soon"],
     f'agenthub: --host-timeout {STAGE_TIMEOUT}: "soon" is not a duration (e.g. 30m, 1h30m or seconds)'),
    ({}, ["--host-timeout", "HOST_STAGE_FLYING_TIMEOUT=5m"],
     "agenthub: --host-timeout: unknown timeout HOST_STAGE_FLYING_TIMEOUT"),
    ({}, ["--host-timeout", "PREPARE_FOR_INSTALLATION_HOST_TIMEOUT"],
     "agenthub: --host-timeout: expected NAME=DURATION, got PREPARE_FOR_INSTALLATION_HOST_TIMEOUT"),
    ({}, ["--host-timeout", "HOST_LOG_PENDING_TIMEOUT=0s"],
     'agenthub: --host-timeout HOST_LOG_PENDING_TIMEOUT: "0s" is shorter than one second'),
    ({}, ["--host-timeout", "ENABLE_SOFT_TIMEOUTS=maybe"],
     'agenthub: --host-timeout ENABLE_SOFT_TIMEOUTS: "maybe" is not a boolean (true or false)'),
    ({"HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT": "-3m"}, [],
     'agenthub: environment variable HOST_INSTALLING_PENDING_USER_ACTION_TIMEOUT: "-3m" is not a duration'),
    ({"HOST_MAX_DISCONNECTION_TIME": "3 minutes"}, [],
     'agenthub: environment variable HOST_MAX_DISCONNECTION_TIME: "3 minutes" is not a duration'),
])
def test_bad_value_stops_the_start(tmp_path, env, args, message):
    if not AGENTHUB.is_file():
        pytest.fail(f"{AGENTHUB} not built")
    full_env = dict(os.environ, **env)
    r = subprocess.run([str(AGENTHUB), "serve", "--data-dir", str(tmp_path / "data"),
                        "--listen", "127.0.0.1:0", *args],
                       capture_output=True, text=True, env=full_env, timeout=30)
    assert r.returncode != 0, r
    assert message in r.stderr, r.stderr
    # Refused before anything was created.
    assert not (tmp_path / "data").exists()
