"""Metrics: /metrics on the API port for the admin token (401 without), on a
plain-HTTP --metrics-listen port for scrapers; the text passes promtool; a
discovery and a single-node install leave upstream assisted-service's series
with their labels and counts; a real Prometheus scrapes the hub and answers a
query for the host count."""
import json
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import CONFORMANCE_DIR, free_port, wait_for
from test_install import NS, Sim, approve_all, infraenv, setup_common

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

# Names upstream mandates that promtool's naming lint dislikes (counters
# without _total, "ms" units): the format is checked for them, not the names.
UPSTREAM_PREFIXES = ("service_assisted_installer_", "assisted_installer_", "http_", "workqueue_",
                     "controller_runtime_")


def parse(text):
    """{name: [(labels dict, value)]} of every sample; asserts each line parses."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"unparsable line: {line!r}"
        labels = dict(LABEL.findall(m.group(2) or ""))
        out.setdefault(m.group(1), []).append((labels, float(m.group(3))))
    return out


def value(samples, name, **labels):
    """The value of the one sample of name whose labels include labels (0 if none)."""
    got = [v for ls, v in samples.get(name, []) if all(ls.get(k) == v2 for k, v2 in labels.items())]
    assert len(got) <= 1, (name, labels, got)
    return got[0] if got else 0.0


def scrape(hub):
    r = hub.get("/metrics")
    assert r.status == 200, r
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return r.body.decode()


def test_metrics_need_the_admin_token(hub):
    for token in (False, "not-the-token"):
        r = hub.get("/metrics", token=token)
        assert r.status == 401
        body = r.json()
        assert body["kind"] == "Status" and body["reason"] == "Unauthorized" and body["code"] == 401
    text = scrape(hub)
    s = parse(text)
    # The scrape itself, and the 401s before it, are counted by route.
    assert value(s, "agenthub_http_requests_total", route="/metrics", method="GET", code="401") == 2
    assert "agenthub_http_open_connections" in s
    assert value(s, "assisted_installer_directory_usage_bytes", directory=str(hub.data_dir)) > 0


def test_promtool_accepts_the_output(hub):
    if not shutil.which("promtool"):
        pytest.skip("promtool not installed (Debian prometheus)")
    hub.kubectl("get", "agents", "-A")
    hub.kubectl("create", "namespace", "promtool")
    check_promtool(scrape(hub))


def check_promtool(text):
    """promtool parses the text; its naming lint finds nothing but upstream's
    mandated names; the hub's own families alone lint clean."""
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
    # 0: clean; 3: naming lint only.  Parse errors exit 1.
    assert r.returncode in (0, 3), r.stdout + r.stderr
    problems = [l for l in (r.stdout + r.stderr).splitlines() if l.strip()]
    for p in problems:
        assert p.startswith(UPSTREAM_PREFIXES), f"lint problem outside the upstream names: {p}"
    # The hub's own families alone pass the lint.
    own, keep = [], False
    for line in text.splitlines():
        name = line.split()[2] if line.startswith("# ") else re.split(r"[{ ]", line)[0]
        keep = name.startswith("agenthub_")
        if keep:
            own.append(line)
    assert len(own) > 20
    r = subprocess.run(["promtool", "check", "metrics"], input="\n".join(own) + "\n", capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_metrics_listen_plain_http(hub_factory):
    port = free_port()
    hub = hub_factory(extra_args=["--metrics-listen", f"127.0.0.1:{port}"])
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        text = r.read().decode()
    assert "# TYPE agenthub_store_commit_duration_seconds histogram" in text
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/apis", timeout=10)
        pytest.fail("only /metrics is served on the metrics port")
    except urllib.error.HTTPError as e:
        assert e.code == 404
        assert json.loads(e.read())["reason"] == "NotFound"
    assert f"serving /metrics over plain HTTP on 127.0.0.1:{port}" in hub.log_text()


@pytest.fixture
def ihub(hub_factory):
    return hub_factory(extra_args=["--host-disconnect-timeout", "30s"])


def test_sno_install_leaves_upstream_series(ihub, tmp_path, sims):
    hub = ihub
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node")
    w = hub.kubectl_bg("-n", NS, "get", "agents", "-w")
    try:
        sims.append(Sim(hub, ie, tmp_path, hosts=1))
        (agent,) = approve_all(hub, 1)
        s = parse(scrape(hub))
        assert value(s, "agenthub_watch_streams") >= 1
        hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                    "--timeout=180s", timeout=200)
    finally:
        w.terminate()
        w.wait(10)
    a = hub.kubectl_json("-n", NS, "get", "agent", agent["metadata"]["name"])
    inv = a["status"]["inventory"]
    text = scrape(hub)
    s = parse(text)
    if shutil.which("promtool"):
        check_promtool(text)

    # Clusters: one registered, one install started, one install finished.
    assert value(s, "service_assisted_installer_cluster_creations") == 1
    assert value(s, "service_assisted_installer_cluster_installation_started") == 1
    assert value(s, "service_assisted_installer_cluster_installation_seconds_count", result="installed") == 1
    assert value(s, "service_assisted_installer_cluster_installation_seconds_bucket",
                 result="installed", le="+Inf") == 1
    assert value(s, "service_assisted_installer_cluster_installation_seconds_bucket",
                 result="installed", le="1800") == 1

    # The host: a bootstrap master that reached Done.
    assert value(s, "service_assisted_installer_cluster_hosts", role="bootstrap", result="Done") == 1
    assert value(s, "service_assisted_installer_cluster_host_cores_count", role="bootstrap", result="Done") == 1
    assert value(s, "service_assisted_installer_cluster_host_cores_sum", role="bootstrap",
                 result="Done") == inv["cpu"]["count"]
    assert value(s, "service_assisted_installer_cluster_host_ram_gb_sum", role="bootstrap",
                 result="Done") == inv["memory"]["physicalBytes"] // 2**30
    disks = inv.get("disks", [])
    assert disks
    for dt in {d.get("driveType", "") for d in disks}:
        n = sum(1 for d in disks if d.get("driveType", "") == dt)
        assert value(s, "service_assisted_installer_cluster_host_disk_gb_count", diskType=dt,
                     role="bootstrap", result="Done") == n
    assert value(s, "service_assisted_installer_cluster_host_nic_gb_count", role="bootstrap",
                 result="Done") == len(inv["interfaces"])
    # One phase observation per stage left, each with result Done.
    phases = {ls["phase"] for ls, _ in s["service_assisted_installer_host_installation_phase_seconds_count"]}
    assert {"Starting installation", "Installing", "Writing image to disk", "Rebooting"} <= phases, phases
    for ls, v in s["service_assisted_installer_host_installation_phase_seconds_count"]:
        assert ls["result"] == "Done" and v == 1, (ls, v)
    # Buckets are upstream's.
    les = [ls["le"] for ls, _ in s["service_assisted_installer_host_installation_phase_seconds_bucket"]
           if ls["phase"] == "Installing"]
    assert les == ["1", "5", "10", "30", "60", "120", "300", "600", "900", "1200", "1800", "+Inf"]

    # The agent API's upstream HTTP metrics, by swagger path pattern.
    handler = "/v2/infra-envs/{infra_env_id}/hosts/{host_id}/instructions"
    assert value(s, "http_request_duration_seconds_count", service="assisted-installer", handler=handler,
                 method="GET", code="200") > 0
    assert value(s, "http_response_size_bytes_count", service="assisted-installer", handler=handler,
                 method="GET", code="200") > 0
    assert value(s, "http_request_duration_seconds_count", service="assisted-installer",
                 handler="/v2/infra-envs/{infra_env_id}/hosts/{host_id}/progress", method="PUT",
                 code="200") >= 5
    # No host or infra-env id leaks into a label.
    for name, samples in s.items():
        for ls, _ in samples:
            for v in ls.values():
                assert agent["metadata"]["name"] not in v, (name, ls)
                assert ie["metadata"]["uid"] not in v, (name, ls)
                assert "eyJ" not in v, (name, ls)  # no signed-URL token (a JWT)

    # The hub's own: hosts by status, the ISO download, controllers, store.
    assert value(s, "agenthub_hosts", status="installed") == 1
    assert value(s, "agenthub_image_downloads_total", kind="iso") >= 1
    assert value(s, "agenthub_image_download_bytes_total", kind="iso") > 100000
    assert value(s, "controller_runtime_reconcile_total", controller="agentclusterinstall", result="success") > 0
    assert value(s, "controller_runtime_reconcile_time_seconds_count", controller="agent") > 0
    assert value(s, "agenthub_store_commit_batch_size_count") > 10
    assert value(s, "agenthub_http_requests_total", method="GET", code="200",
                 route="/apis/agent-install.openshift.io/v1beta1/namespaces/{namespace}/agents/{name}") >= 1


def test_prometheus_scrapes_the_hub(hub_factory, tmp_path, sims):
    prom = shutil.which("prometheus")
    if not prom:
        pytest.skip("prometheus not installed (Debian prometheus)")
    mport, pport = free_port(), free_port()
    hub = hub_factory(extra_args=["--metrics-listen", f"127.0.0.1:{mport}"])
    from test_discovery import setup_infraenv
    ie = setup_infraenv(hub)
    sims.append(Sim(hub, ie, tmp_path, hosts=2, seed=21))
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                   "scrape_configs:\n  - job_name: agenthub\n    static_configs:\n"
                   f"      - targets: ['127.0.0.1:{mport}']\n")
    log = open(tmp_path / "prometheus.log", "w")
    p = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{pport}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def query():
            q = urllib.parse.urlencode({"query": "sum(agenthub_hosts)"})
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{pport}/api/v1/query?{q}", timeout=5) as r:
                    res = json.loads(r.read())["data"]["result"]
            except OSError:
                return None
            return res and float(res[0]["value"][1]) == 2 and res
        res = wait_for(query, timeout=90, interval=0.5, what="Prometheus to see 2 hosts")
        assert res[0]["value"][1] == "2"
        q = urllib.parse.urlencode({"query": 'up{job="agenthub"}'})
        with urllib.request.urlopen(f"http://127.0.0.1:{pport}/api/v1/query?{q}", timeout=5) as r:
            up = json.loads(r.read())["data"]["result"]
        assert up and up[0]["value"][1] == "1", up
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
        log.close()
