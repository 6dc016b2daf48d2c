"""Events end to end (backend.md §8, §9): what happens to a host is an event,
served as upstream JSON at the signed eventsURL and shown by `kubectl get
events` as Kubernetes Events; a token opens only the events of what it
names."""
import json
import os
import signal
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

from conftest import CONFORMANCE_DIR, KUBECTL, wait_for
from test_discovery import AGENT, NS, agent_api, fetch, setup_infraenv, simulated_host

HOST_ID = "0479107b-3436-45d3-83a8-cb9a1dc4fb9e"


def with_query(url, **changes):
    """url with query parameters replaced (None drops one)."""
    parts = urllib.parse.urlsplit(url)
    q = dict(urllib.parse.parse_qsl(parts.query))
    for k, v in changes.items():
        if v is None:
            q.pop(k, None)
        else:
            q[k] = v
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(q)))


def ie_token(ie):
    return ie["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/")[0]


def register(hub, ie, host_id=HOST_ID):
    status, body = agent_api(hub, "POST", f"/infra-envs/{ie['metadata']['uid']}/hosts",
                             {"host_id": host_id, "discovery_agent_version": "test"}, key=ie_token(ie))
    assert status == 201, body


def events_at(hub, url):
    status, headers, body = fetch(hub, url)
    assert status == 200, (status, body)
    assert headers["Content-Type"] == "application/json"
    return headers, json.loads(body)


def run_simulator(hub, ie, tmp_path, hosts=1):
    if not AGENT.is_file():
        pytest.fail(f"{AGENT} not built")
    log = open(tmp_path / "sim.log", "w")
    sim = subprocess.Popen([str(AGENT), "simulate", "--iso", ie["status"]["isoDownloadURL"],
                            "--hosts", str(hosts), "--cacert", str(hub.ca_path), "--seed", "11",
                            "--max-poll-seconds", "1", "--ramp-seconds", "0"],
                           stdout=log, stderr=subprocess.STDOUT)
    return sim, log


def stop_simulator(sim, log):
    sim.send_signal(signal.SIGTERM)
    sim.wait(timeout=30)
    log.close()


def test_infraenv_events_url_serves_host_events(hub, tmp_path):
    ie = setup_infraenv(hub)
    ie_id = ie["metadata"]["uid"]
    url = ie["status"]["debugInfo"]["eventsURL"]
    assert url.startswith(hub.base_url + "/api/assisted-install/v2/events?api_key=")
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["infra_env_id"] == [ie_id]
    _, before = events_at(hub, url)
    assert isinstance(before, list)
    # The image generation is an InfraEnv event (upstream image_info_updated).
    image = [e for e in before if e["name"] == "image_info_updated"]
    assert image and image[0]["infra_env_id"] == ie_id and "host_id" not in image[0], before
    assert image[0]["message"].startswith('Updated image information (Image type is "minimal-iso", SSH public key')

    # A simulated host registers and moves through discovery: its state
    # changes are events.
    sim, log = run_simulator(hub, ie, tmp_path)
    try:
        def host_events():
            agents = hub.kubectl_json("-n", NS, "get", "agents")["items"]
            if not agents:
                return None
            host_id = agents[0]["metadata"]["name"]
            _, evs = events_at(hub, url)
            mine = [e for e in evs if e.get("host_id") == host_id]
            return (host_id, evs, mine) if mine else None
        host_id, evs, mine = wait_for(host_events, timeout=60, what="a host event at the InfraEnv's eventsURL")
    finally:
        stop_simulator(sim, log)
    for e in mine:
        assert e["infra_env_id"] == ie_id, e
        assert e["severity"] in ("info", "warning", "error", "critical"), e
        assert e["name"] and e["message"] and e["event_time"].endswith("Z"), e
        assert "category" not in e
    times = [e["event_time"] for e in evs]
    assert times == sorted(times)

    # The host's own URL form (kubeapi.md §4.4): the InfraEnv's key + host_id.
    host_url = with_query(url, infra_env_id=None, host_id=host_id)
    headers, only = events_at(hub, host_url)
    assert only and all(e["host_id"] == host_id for e in only), only
    counts = sum(int(headers[f"Severity-Count-{s}"]) for s in ("Info", "Warning", "Error", "Critical"))
    assert counts == len(only) == int(headers["Event-Count"])
    # Newest first on request; limit and offset page through.
    _, desc = events_at(hub, with_query(host_url, order="descending"))
    assert [e["event_time"] for e in desc] == sorted((e["event_time"] for e in desc), reverse=True)
    _, first = events_at(hub, with_query(host_url, limit="1"))
    assert first == only[:1]
    _, rest = events_at(hub, with_query(host_url, offset="1", limit="-1"))
    assert rest == only[1:]
    _, crit = events_at(hub, with_query(host_url, severities="critical"))
    assert crit == [e for e in only if e["severity"] == "critical"]

    # The same events are Kubernetes Events on the Agent.
    def kube_events():
        items = hub.kubectl_json("-n", NS, "get", "events")["items"]
        return [e for e in items if e["involvedObject"]["name"] == host_id] or None
    kev = kube_events()
    assert kev
    for e in kev:
        assert e["involvedObject"]["kind"] == "Agent", e
        assert e["source"]["component"] == "agenthub", e
        assert e["type"] in ("Normal", "Warning"), e
        assert e["count"] >= 1 and e["firstTimestamp"] and e["lastTimestamp"], e
    assert {e["message"] for e in kev} == {e["message"] for e in only}
    table = hub.kubectl("-n", NS, "get", "events").stdout
    assert host_id in table and only[0]["message"][:40] in table, table


def test_events_url_needs_a_valid_token_for_its_scope(hub):
    ie = setup_infraenv(hub)
    url = ie["status"]["debugInfo"]["eventsURL"]
    token = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["api_key"][0]
    assert fetch(hub, url)[0] == 200
    # Missing, garbled and forged tokens.
    assert fetch(hub, with_query(url, api_key=None))[0] == 401
    assert fetch(hub, with_query(url, api_key="garbage"))[0] == 401
    assert fetch(hub, with_query(url, api_key=token[:-4] + "AAAA"))[0] == 401
    # The token in a header instead of the query works too.
    bare = with_query(url, api_key=None)
    assert fetch(hub, bare, {"X-Secret-Key": token})[0] == 200
    assert fetch(hub, bare, {"Authorization": f"Bearer {token}"})[0] == 200
    # A valid token of another InfraEnv opens nothing here.
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "second", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/second", "--timeout=30s")
    other = hub.kubectl_json("-n", NS, "get", "infraenv", "second")
    other_token = ie_token(other)
    assert fetch(hub, with_query(url, api_key=other_token))[0] == 401
    # Nor the hosts of another InfraEnv, nor everything at once.
    register(hub, ie)
    assert fetch(hub, with_query(url, api_key=other_token, infra_env_id=None, host_id=HOST_ID))[0] == 401
    assert fetch(hub, with_query(url, api_key=token, infra_env_id=None, host_id=HOST_ID))[0] == 200
    assert fetch(hub, with_query(url, infra_env_id=None))[0] == 401
    assert fetch(hub, with_query(url, infra_env_id=None, cluster_id=ie["metadata"]["uid"]))[0] == 401
    # Bad parameters are named.
    status, _, body = fetch(hub, with_query(url, order="sideways"))
    assert status == 400 and b"order" in body
    status, _, body = fetch(hub, with_query(url, limit="many"))
    assert status == 400 and b"limit" in body
    status, _, body = fetch(hub, with_query(url, severities="loud"))
    assert status == 400 and b"severities" in body


def test_cluster_events_url_is_scoped_to_its_cluster(hub):
    from test_install import cluster_deployment, multi_node_aci, setup_common
    setup_common(hub)
    for name in ("one", "two"):
        hub.apply_obj(cluster_deployment(name, f"{name}-aci"))
        hub.apply_obj(multi_node_aci(f"{name}-aci", name))

    def url_of(name):
        aci = hub.kubectl_json("-n", NS, "get", "aci", f"{name}-aci")
        return aci.get("status", {}).get("debugInfo", {}).get("eventsURL")
    one = wait_for(lambda: url_of("one"), timeout=30, what="the ACI's eventsURL")
    two = wait_for(lambda: url_of("two"), timeout=30, what="the ACI's eventsURL")
    one_id = hub.kubectl_json("-n", NS, "get", "aci", "one-aci")["metadata"]["uid"]
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(one).query)
    assert q["cluster_id"] == [one_id]
    # Stable: set once, the same on every pass.
    assert url_of("one") == one
    _, evs = events_at(hub, one)
    assert all(e.get("cluster_id") == one_id for e in evs), evs
    # One cluster's token does not open another's events.
    two_token = urllib.parse.parse_qs(urllib.parse.urlsplit(two).query)["api_key"][0]
    assert fetch(hub, with_query(one, api_key=two_token))[0] == 401
    assert fetch(hub, with_query(one, api_key=q["api_key"][0][:-4] + "AAAA"))[0] == 401
    # Nor an InfraEnv's token a cluster's.
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "late", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/late", "--timeout=30s")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", "late")
    assert fetch(hub, with_query(one, api_key=ie_token(ie)))[0] == 401


# ---- each upstream event kind (backend.md §8, upstream docs/events.yaml) -----
#
# Every event is checked twice: at the events URL (upstream's JSON: name,
# severity, message, ids) and as a Kubernetes Event on the object it is about
# (the same message; type Normal for info, Warning otherwise; the reason is
# the upstream name in CamelCase).

MEDIA_TEXT = ("Unable to read from the discovery media. It was either disconnected or poor network "
              "conditions prevented it from being read. Try using the minimal ISO option and be sure "
              "to keep the media connected until the installation is completed")
OTHER_HOST_ID = "3a1f6a8e-2f4c-4d5e-9b7a-1c2d3e4f5a6b"


def reason_of(name):
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def kube_events_about(hub, obj_name, ns=NS):
    items = hub.kubectl_json("-n", ns, "get", "events")["items"]
    return [e for e in items if e["involvedObject"]["name"] == obj_name]


def expect_event(hub, url, name, severity, message=None, prefix=None, about=None, host_id=None, timeout=90):
    """Wait for an upstream event `name` at url whose message is `message` (or
    starts with `prefix`), check its severity and ids, and find the same
    message as a Kubernetes Event about the object named `about`.  Returns the
    upstream event."""
    def match(e):
        if e.get("name") != name or (host_id and e.get("host_id") != host_id):
            return False
        return e["message"] == message if message is not None else e["message"].startswith(prefix)

    def found():
        _, evs = events_at(hub, url)
        return next((e for e in evs if match(e)), None)
    try:
        ev = wait_for(found, timeout=timeout, what=f"event {name} {message or prefix!r}")
    except BaseException:
        _, evs = events_at(hub, url)
        print("events at the URL:\n" + "\n".join(f"  {e['name']} {e['severity']} {e['message']}" for e in evs))
        raise
    assert ev["severity"] == severity, ev
    assert ev["event_time"].endswith("Z"), ev
    if host_id:
        assert ev["host_id"] == host_id, ev
    if about:
        kev = [e for e in kube_events_about(hub, about) if e["message"] == ev["message"]]
        assert len(kev) == 1, (ev, kube_events_about(hub, about))
        assert kev[0]["reason"] == reason_of(name), kev[0]
        assert kev[0]["type"] == ("Normal" if severity == "info" else "Warning"), kev[0]
        assert kev[0]["source"]["component"] == "agenthub", kev[0]
    return ev


def step_reply(hub, ie, host_id, exit_code, step_type="inventory", output=""):
    status, body = agent_api(hub, "POST", f"/infra-envs/{ie['metadata']['uid']}/hosts/{host_id}/instructions",
                             {"step_type": step_type, "step_id": f"{step_type}-1", "exit_code": exit_code,
                              "output": output}, key=ie_token(ie))
    assert status == 204, body


def host_url(ie, host_id):
    return with_query(ie["status"]["debugInfo"]["eventsURL"], infra_env_id=None, host_id=host_id)


def test_host_registration_and_media_disconnection_events(hub):
    ie = setup_infraenv(hub)
    url = host_url(ie, HOST_ID)
    register(hub, ie)
    ev = expect_event(hub, url, "host_registration_succeeded", "info",
                      f"Host {HOST_ID}: Successfully registered", about=HOST_ID, host_id=HOST_ID)
    assert ev["infra_env_id"] == ie["metadata"]["uid"] and "cluster_id" not in ev, ev
    # A new host's first state is its registration, not a status change.
    _, evs = events_at(hub, url)
    assert not [e for e in evs if e["name"] == "host_status_updated"], evs

    # The agent says the media went away (exit code 256): the media event
    # (error), then the status change it causes (an unbound state: info).
    step_reply(hub, ie, HOST_ID, 256)
    expect_event(hub, url, "host_media_disconnected", "error", MEDIA_TEXT, about=HOST_ID, host_id=HOST_ID)
    expect_event(hub, url, "host_status_updated", "info",
                 f"Host {HOST_ID}: updated status from discovering-unbound to disconnected-unbound ({MEDIA_TEXT})",
                 about=HOST_ID, host_id=HOST_ID)
    # Once per disconnection: a second report while the media is still away adds nothing.
    step_reply(hub, ie, HOST_ID, 256)
    time.sleep(1)
    _, evs = events_at(hub, url)
    assert len([e for e in evs if e["name"] == "host_media_disconnected"]) == 1, evs
    (kev,) = [e for e in kube_events_about(hub, HOST_ID) if e["reason"] == "HostMediaDisconnected"]
    assert kev["count"] == 1, kev


def test_disconnection_and_reconnection_events(hub_factory):
    from test_install import cluster_deployment, infraenv, multi_node_aci, setup_common
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "3s"])
    setup_common(hub)
    hub.apply_obj(cluster_deployment("dc", "dc-aci"))
    hub.apply_obj(multi_node_aci("dc-aci", "dc"))
    ie = infraenv(hub, "dcenv", "dc")
    url = host_url(ie, HOST_ID)
    register(hub, ie)
    expect_event(hub, url, "host_registration_succeeded", "info", f"Host {HOST_ID}: Successfully registered",
                 about=HOST_ID)
    # Silent past the timeout: disconnected, a warning for a host of a cluster.
    expect_event(hub, url, "host_status_updated", "warning",
                 f"Host {HOST_ID}: updated status from discovering to disconnected "
                 "(Host has stopped communicating with the installation service)", about=HOST_ID, timeout=60)
    # It comes back: registered again, discovering (info).
    register(hub, ie)
    expect_event(hub, url, "host_status_updated", "info",
                 f"Host {HOST_ID}: updated status from disconnected to discovering "
                 "(Waiting for host to send hardware details)", about=HOST_ID)


def test_validation_failed_and_fixed_events(hub, tmp_path):
    ie = setup_infraenv(hub)
    with simulated_host(hub, ie, tmp_path / "sim.log", 21) as agent:
        host_id = agent["metadata"]["name"]
        inv = agent["metadata"]["annotations"]["agent.agent-install.openshift.io/inventory"]
    hn, url = json.loads(inv)["hostname"], host_url(ie, host_id)
    # Discovery fixed what a new host lacks (upstream reports these too).
    expect_event(hub, url, "host_validation_fixed", "info",
                 f"Host {hn}: validation 'has-inventory' is now fixed", about=host_id, host_id=host_id)
    # The host reports 1 GiB of memory: has-min-memory, which used to
    # succeed, now fails, and the host becomes insufficient.
    small = json.loads(inv)
    small["memory"]["physical_bytes"] = small["memory"]["usable_bytes"] = 1 << 30
    step_reply(hub, ie, host_id, 0, "inventory", json.dumps(small))
    expect_event(hub, url, "host_validation_failed", "warning",
                 f"Host {hn}: validation 'has-min-memory' that used to succeed is now failing",
                 about=host_id, host_id=host_id)
    expect_event(hub, url, "host_status_updated", "info",
                 prefix=f"Host {hn}: updated status from known-unbound to insufficient-unbound (",
                 about=host_id, host_id=host_id)
    # Its memory back: fixed, and known again.
    step_reply(hub, ie, host_id, 0, "inventory", inv)
    expect_event(hub, url, "host_validation_fixed", "info",
                 f"Host {hn}: validation 'has-min-memory' is now fixed", about=host_id, host_id=host_id)
    expect_event(hub, url, "host_status_updated", "info",
                 f"Host {hn}: updated status from insufficient-unbound to known-unbound "
                 "(Host is ready to be bound to a cluster)", about=host_id, host_id=host_id)


def test_install_progress_and_cluster_events(hub_factory, tmp_path, sims):
    from test_install import Sim, agents, infraenv, setup_common
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=1))
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=240s", timeout=260)
    aci = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")
    curl, aci_name = aci["status"]["debugInfo"]["eventsURL"], aci["metadata"]["name"]
    (a,) = agents(hub)
    host_id, hn = a["metadata"]["name"], a["status"]["inventory"]["hostname"]
    # The cluster's events.
    expect_event(hub, curl, "cluster_prepare_installation_started", "info",
                 "Cluster starting to prepare for installation", about=aci_name)
    for st in ("preparing-for-installation", "installing", "finalizing", "installed"):
        ev = expect_event(hub, curl, "cluster_status_updated", "info", f"Updated status of the cluster to {st}",
                          about=aci_name)
        assert ev["cluster_id"] == aci["metadata"]["uid"] and "host_id" not in ev, ev
    expect_event(hub, curl, "cluster_installation_completed", "info", "Successfully completed installing cluster",
                 about=aci_name)
    # The host's install progress, at the cluster's URL and the host's.
    for url in (curl, host_url(ie, host_id)):
        ev = expect_event(hub, url, "host_install_progress_updated", "info",
                          f"Host: {hn}, reached installation stage Starting installation", about=host_id)
        assert ev["cluster_id"] == aci["metadata"]["uid"] and ev["host_id"] == host_id, ev
    expect_event(hub, curl, "host_install_progress_updated", "info",
                 f"Host: {hn}, reached installation stage Done", about=host_id)
    expect_event(hub, curl, "host_status_updated", "info",
                 prefix=f"Host {hn}: updated status from installing-in-progress to installed (", about=host_id)
    # In time order, as upstream lists them.
    _, evs = events_at(hub, curl)
    names = [e["name"] for e in evs]
    assert names.index("cluster_prepare_installation_started") < names.index("cluster_installation_completed")


def test_stage_timeout_failure_and_cancel_events(hub_factory, tmp_path, sims):
    from test_install import Sim, agents, infraenv, setup_common
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s",
                                  "--host-timeout", "HOST_STAGE_STARTING_INSTALLATION_TIMEOUT=8s"])
    setup_common(hub)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "clusterDeployment.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "agentClusterInstall-SNO.yaml"))
    ie = infraenv(hub, "myinfraenv", "single-node", auto_approve=True)
    sims.append(Sim(hub, ie, tmp_path, hosts=1, extra=["--stage-seconds", "3600"]))
    hub.kubectl("-n", NS, "wait", "--for=condition=Failed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    aci = hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")
    curl = aci["status"]["debugInfo"]["eventsURL"]
    (a,) = agents(hub)
    host_id, hn = a["metadata"]["name"], a["status"]["inventory"]["hostname"]
    # The stage outlived its timeout: the host goes to error (severity error)...
    expect_event(hub, curl, "host_status_updated", "error",
                 f"Host {hn}: updated status from installing-in-progress to error (Host failed to install "
                 "because its installation stage Starting installation took longer than expected 8s)",
                 about=host_id)
    # ... and the cluster fails (critical).
    ev = expect_event(hub, curl, "cluster_installation_failed", "critical",
                      prefix="Failed installing cluster. Reason: ", about="test-agent-cluster-install")
    assert ev["cluster_id"] == aci["metadata"]["uid"], ev
    expect_event(hub, curl, "cluster_status_updated", "info", "Updated status of the cluster to error",
                 about="test-agent-cluster-install")

    # Deleting the AgentClusterInstall cancels the installation: the cluster
    # and its host say so.  Their Events go with their objects (owned), so
    # they are read from a watch.
    watch = subprocess.Popen([KUBECTL, "--kubeconfig", str(hub.kubeconfig), "-n", NS, "get", "events",
                              "--watch-only", "-o", "json"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(2)
        hub.kubectl("-n", NS, "delete", "aci", "test-agent-cluster-install", "--wait=false")
        seen = {}
        deadline = time.time() + 60
        dec, buf = json.JSONDecoder(), ""
        import select
        while time.time() < deadline and not {"ClusterInstallationCanceled", "HostInstallationCancelled"} <= set(seen):
            r, _, _ = select.select([watch.stdout], [], [], 1)
            if not r:
                continue
            line = watch.stdout.readline()
            if not line:
                break
            buf += line
            try:
                obj, end = dec.raw_decode(buf.lstrip())
            except ValueError:
                continue
            buf = buf.lstrip()[end:]
            seen[obj.get("reason")] = obj
    finally:
        watch.terminate()
        watch.wait(10)
    assert seen["ClusterInstallationCanceled"]["message"] == "Canceled cluster installation", seen.keys()
    assert seen["ClusterInstallationCanceled"]["type"] == "Normal"
    assert seen["HostInstallationCancelled"]["message"] == f"Installation cancelled for host {hn}", seen.keys()
    assert seen["HostInstallationCancelled"]["involvedObject"]["name"] == host_id


def test_cluster_registration_bind_and_unbind_events(hub_factory, tmp_path, sims):
    from test_install import Sim, setup_common
    from test_latebinding import bind, late_binding_infraenv, sno, unbind, wait_pool
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    sims.append(Sim(hub, ie, tmp_path, hosts=1))
    (a,) = wait_pool(hub, 1)
    host_id, hn = a["metadata"]["name"], a["status"]["inventory"]["hostname"]
    sno(hub)
    aci = wait_for(lambda: (lambda o: o if o.get("status", {}).get("debugInfo", {}).get("eventsURL") else None)(
        hub.kubectl_json("-n", NS, "get", "aci", "test-agent-cluster-install")), timeout=30, what="the ACI's eventsURL")
    cid, curl = aci["metadata"]["uid"], aci["status"]["debugInfo"]["eventsURL"]
    # The cluster is registered once.
    ev = expect_event(hub, curl, "cluster_registration_succeeded", "info", "Successfully registered cluster",
                      about="test-agent-cluster-install")
    assert ev["cluster_id"] == cid and "host_id" not in ev, ev
    # The host is bound: its status changes, then the bind itself.  The
    # bind clears the inventory (the host reports it again to its cluster),
    # so upstream's messages name the host by its id.
    url = host_url(ie, host_id)
    bind(hub, host_id, "single-node")
    expect_event(hub, url, "host_status_updated", "info",
                 f"Host {host_id}: updated status from known-unbound to binding "
                 "(Host is waiting to be bound to the cluster)", about=host_id)
    ev = expect_event(hub, url, "host_bind_succeeded", "info",
                      f"Host {host_id}: Successfully bound to cluster {cid}", about=host_id)
    assert ev["cluster_id"] == cid, ev
    # And unbound again.
    wait_for(lambda: a_state(hub, host_id) not in ("binding", "known-unbound"), timeout=60, what="the host bound")
    unbind(hub, host_id)
    expect_event(hub, url, "host_unbind_succeeded", "info", f"Host {host_id}: Successfully unbound from cluster",
                 about=host_id)
    assert hn != host_id


def a_state(hub, name):
    return hub.kubectl_json("-n", NS, "get", "agent", name).get("status", {}).get("debugInfo", {}).get("state")


# ---- EVENT_RATE_LIMITS ------------------------------------------------------------


def flap(hub, ie, host_id, times):
    """Register the host and lose its media, `times` times: two status
    changes a round."""
    for _ in range(times):
        register(hub, ie, host_id)
        step_reply(hub, ie, host_id, 256)


def status_events(hub, ie, host_id):
    _, evs = events_at(hub, host_url(ie, host_id))
    kev = [e for e in kube_events_about(hub, host_id) if e["reason"] == "HostStatusUpdated"]
    return [e for e in evs if e["name"] == "host_status_updated"], sum(e["count"] for e in kev)


def test_rate_limit_keeps_a_flapping_host_to_one_event_per_window(hub_factory):
    # -v: the limits are logged at debug level, as upstream does.
    hub = hub_factory(extra_args=["-v", "--event-rate-limits", '{"host_status_updated":"1h"}'])
    assert "event rate limits: upgrade_agent_failed=1h0m0s upgrade_agent_finished=1h0m0s " \
           "upgrade_agent_started=1h0m0s host_status_updated=1h0m0s" in hub.log_text()
    ie = setup_infraenv(hub)
    flap(hub, ie, HOST_ID, 5)
    flap(hub, ie, OTHER_HOST_ID, 2)
    time.sleep(1)
    # Ten status changes, one event: the first.
    url_events, kube_count = status_events(hub, ie, HOST_ID)
    assert [e["message"] for e in url_events] == [
        f"Host {HOST_ID}: updated status from discovering-unbound to disconnected-unbound ({MEDIA_TEXT})"]
    assert kube_count == 1
    # Per entity: the other host has its own window.
    url_events, kube_count = status_events(hub, ie, OTHER_HOST_ID)
    assert len(url_events) == 1 and kube_count == 1, url_events
    # Names without a limit are not limited: every media loss counts.
    (kev,) = [e for e in kube_events_about(hub, HOST_ID) if e["reason"] == "HostMediaDisconnected"]
    assert kev["count"] == 5, kev

    # Upstream's defaults limit only the upgrade_agent_* events: the same
    # flapping on a hub without the setting is all recorded.
    plain = hub_factory(extra_args=["-v"], name="plain")
    assert "event rate limits: upgrade_agent_failed=1h0m0s upgrade_agent_finished=1h0m0s " \
           "upgrade_agent_started=1h0m0s\n" in plain.log_text() + "\n"
    ie = setup_infraenv(plain)
    flap(plain, ie, HOST_ID, 3)
    time.sleep(1)
    _, kube_count = status_events(plain, ie, HOST_ID)
    assert kube_count == 5  # 3 losses + 2 returns


@pytest.mark.parametrize("where", ["flag", "env"])
def test_bad_rate_limits_stop_the_start(tmp_path, where):
    from conftest import AGENTHUB
    env = dict(os.environ)
    args = [str(AGENTHUB), "serve", "--data-dir", str(tmp_path / "data"), "--listen", "127.0.0.1:0"]
    if where == "flag":
        args += ["--event-rate-limits", '{"host_status_updated":"soon"}']
    else:
        env["EVENT_RATE_LIMITS"] = '{"host_status_updated":"soon"}'
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=30)
    assert p.returncode != 0
    what = "--event-rate-limits" if where == "flag" else "environment variable EVENT_RATE_LIMITS"
    assert f"agenthub: {what}: invalid duration for event 'host_status_updated': soon" in p.stderr, p.stderr
