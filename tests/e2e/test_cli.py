"""The command lines: versions, --help everywhere, unknown commands and flags
named with a suggestion, --listen checks and the every-interface warning, and
the simulator's checks (stage names, TLS hint, fresh host ids unless --seed)."""
import re
import signal
import subprocess
import time

import pytest

from conftest import AGENTHUB, BUILD, free_port, wait_for
from test_discovery import NS, setup_infraenv

AGENT = BUILD / "agenthub-agent"


def run(*args, timeout=30):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def git_revision():
    r = subprocess.run(["git", "-C", str(BUILD.parent if (BUILD.parent / ".git").exists() else "."),
                        "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return r.stdout.strip()


@pytest.mark.parametrize("argv", [["--version"], ["version"]])
def test_agenthub_version(argv):
    r = run(AGENTHUB, *argv)
    assert r.returncode == 0, r.stderr
    m = re.fullmatch(r"agenthub (\d+\.\d+\.\d+) \(revision ([0-9a-f]{7,}(-dirty)?|unknown)\)\n", r.stdout)
    assert m, r.stdout
    rev = git_revision()
    if rev and m.group(2) != "unknown":
        assert m.group(2).startswith(rev[:7]), (m.group(2), rev)


def test_agent_version_matches_hub():
    a = run(AGENT, "--version")
    h = run(AGENTHUB, "--version")
    assert a.returncode == 0 and a.stdout.startswith("agenthub-agent ")
    assert a.stdout.split(" ", 1)[1] == h.stdout.split(" ", 1)[1]


@pytest.mark.parametrize("argv,first", [
    ([AGENTHUB, "--help"], "usage: agenthub COMMAND"),
    ([AGENTHUB, "help"], "usage: agenthub COMMAND"),
    ([AGENTHUB, "serve", "--help"], "usage: agenthub serve"),
    ([AGENTHUB, "version", "--help"], "usage: agenthub version"),
    ([AGENT, "--help"], "usage: agenthub-agent"),
    ([AGENT, "inventory", "--help"], "usage: agenthub-agent"),
    ([AGENT, "host-id", "--help"], "usage: agenthub-agent"),
    ([AGENT, "simulate", "--help"], "usage: agenthub-agent"),
])
def test_help_everywhere(argv, first):
    r = run(*argv)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(first), r.stdout
    assert r.stderr == ""


def test_serve_help_names_new_flags():
    out = run(AGENTHUB, "serve", "--help").stdout
    for flag in ("--metrics-listen", "--log-format", "--listen", "--data-dir"):
        assert flag in out


@pytest.mark.parametrize("argv,msg", [
    ([AGENTHUB, "serv"], "agenthub: unknown command serv; did you mean serve?"),
    ([AGENTHUB, "frobnicate"], "agenthub: unknown command frobnicate (commands: serve, migrate, version, help)"),
    ([AGENTHUB, "--verison"], "agenthub: unknown flag --verison; did you mean --version?"),
    ([AGENTHUB, "serve", "--lsten", "127.0.0.1:1"], "agenthub serve: unknown flag --lsten; did you mean --listen?"),
    ([AGENTHUB, "serve", "--data-dri=x"], "agenthub serve: unknown flag --data-dri; did you mean --data-dir?"),
    ([AGENTHUB, "serve", "--zzzzzzzzzz"], "agenthub serve: unknown flag --zzzzzzzzzz (see --help)"),
    ([AGENTHUB, "serve", "--listen"], "agenthub serve: flag --listen needs a value"),
    ([AGENTHUB, "serve", "-q"], "agenthub serve: unknown flag -q"),
    ([AGENTHUB, "serve", "--log-format", "xml"], "agenthub: --log-format: expected text or json, got xml"),
    ([AGENT, "simulat"], "agenthub-agent: unknown command simulat; did you mean simulate?"),
    ([AGENT, "--verson"], "agenthub-agent: unknown flag --verson; did you mean --version?"),
    ([AGENT, "simulate", "--hots", "3"], "agenthub-agent simulate: unknown flag --hots; did you mean --hosts?"),
    ([AGENT, "simulate", "--hosts"], "agenthub-agent simulate: flag --hosts needs a value"),
    ([AGENT, "inventory", "--rot", "/"], "agenthub-agent inventory: unknown flag --rot; did you mean --root?"),
])
def test_unknown_commands_and_flags_are_named(argv, msg):
    r = run(*argv)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.splitlines()[0] == msg, r.stderr


@pytest.mark.parametrize("listen,msg", [
    ("127.0.0.1:99999", "agenthub: --listen 127.0.0.1:99999: invalid port 99999 (expected a number from 0 to 65535)"),
    ("127.0.0.1:http", "agenthub: --listen 127.0.0.1:http: invalid port http (expected a number from 0 to 65535)"),
    ("127.0.0.1:", "agenthub: --listen 127.0.0.1:: invalid port  (expected a number from 0 to 65535)"),
    ("localhost", "agenthub: --listen localhost: expected HOST:PORT (e.g. 127.0.0.1:6443, [::1]:6443 or :6443)"),
])
def test_listen_invalid(listen, msg, tmp_path):
    r = run(AGENTHUB, "serve", "--data-dir", tmp_path / "d", "--listen", listen)
    assert r.returncode == 2
    assert r.stderr.strip() == msg
    assert not (tmp_path / "d").exists(), "nothing is created for a bad command line"


def test_metrics_listen_invalid(tmp_path):
    r = run(AGENTHUB, "serve", "--data-dir", tmp_path / "d", "--metrics-listen", "127.0.0.1:70000")
    assert r.returncode == 2
    assert "--metrics-listen 127.0.0.1:70000: invalid port 70000" in r.stderr


@pytest.mark.parametrize("form", [":{port}", "0.0.0.0:{port}"])
def test_listen_every_interface_logs_real_address_and_warns(form, tmp_path):
    port = free_port()
    listen = form.format(port=port)
    log = tmp_path / "hub.log"
    with open(log, "w") as f:
        p = subprocess.Popen([str(AGENTHUB), "serve", "--data-dir", str(tmp_path / "d"), "--listen", listen],
                             stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "serving the Kubernetes API" in log.read_text(), timeout=30,
                 what="the hub to start")
        text = log.read_text()
        assert f"listening on 0.0.0.0:{port}" in text, text
        assert re.search(rf"warn .*--listen {re.escape(listen)} listens on every interface", text), text
        assert f"(use 127.0.0.1:{port} for this machine only)" in text
        # The kubeconfig points at a loopback address the certificate covers.
        assert f'server: "https://127.0.0.1:{port}"' in (tmp_path / "d" / "kubeconfig").read_text()
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0


def test_listen_port_zero_logs_the_chosen_port(tmp_path):
    log = tmp_path / "hub.log"
    with open(log, "w") as f:
        p = subprocess.Popen([str(AGENTHUB), "serve", "--data-dir", str(tmp_path / "d"),
                              "--listen", "127.0.0.1:0"], stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: "serving the Kubernetes API" in log.read_text(), timeout=30,
                 what="the hub to start")
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read_text())
        port = int(m.group(1))
        assert port > 0
        assert "every interface" not in log.read_text()
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0


def test_simulate_fail_at_stage_lists_upstream_stages():
    r = run(AGENT, "simulate", "--iso", "https://127.0.0.1:1/x", "--fail-at-stage", "Writing image")
    assert r.returncode == 2
    line = r.stderr.strip()
    assert line.startswith('agenthub-agent simulate: --fail-at-stage: unknown stage "Writing image"; '
                           'the upstream stages are: "Starting installation", "Waiting for control plane",')
    assert '"Writing image to disk"' in line and '"Rebooting"' in line and '"Done"' in line


def test_simulate_tls_failure_explains_cacert(hub):
    url = f"{hub.base_url}/images/none"
    r = run(AGENT, "simulate", "--iso", url, "--hosts", "1")
    assert r.returncode == 1
    assert "use --cacert DIR/ca.crt" in r.stderr, r.stderr
    assert "certificate" in r.stderr


def _run_sim(hub, ie, tmp_path, n, seed=None, settle=None):
    """Run a one-host simulator until an Agent that was not there before shows
    (or, with settle, for that many seconds); return the Agent names after it.
    The simulator is stopped before returning."""
    before = {a["metadata"]["name"] for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
    args = [str(AGENT), "simulate", "--iso", ie["status"]["isoDownloadURL"], "--hosts", "1",
            "--cacert", str(hub.ca_path), "--max-poll-seconds", "1"]
    if seed is not None:
        args += ["--seed", str(seed)]
    with open(tmp_path / f"sim-{n}.log", "w") as log:
        p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        def names():
            return {a["metadata"]["name"] for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
        if settle:
            # Registered again (same id): the Agent's check-in moves, no new Agent.
            time.sleep(settle)
            return names()
        wait_for(lambda: names() - before, timeout=60, what="a new Agent")
        return names()
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(30)


def test_simulate_fresh_host_ids_unless_seeded(hub, tmp_path):
    ie = setup_infraenv(hub)
    a = _run_sim(hub, ie, tmp_path, 0)
    b = _run_sim(hub, ie, tmp_path, 1)
    assert len(a) == 1 and len(b) == 2, (a, b)
    c = _run_sim(hub, ie, tmp_path, 2, seed=42)
    assert len(c) == 3
    d = _run_sim(hub, ie, tmp_path, 3, seed=42, settle=4)
    assert d == c, "the same --seed gives the same host id"
    assert "all 1 hosts registered" in (tmp_path / "sim-3.log").read_text()
