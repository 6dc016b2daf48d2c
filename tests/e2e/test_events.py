"""Events end to end (backend.md §8, §9): what happens to a host is an event,
served as upstream JSON at the signed eventsURL and shown by `kubectl get
events` as Kubernetes Events; a token opens only the events of what it
names."""
import json
import signal
import subprocess
import urllib.parse
import urllib.request

import pytest

from conftest import wait_for
from test_discovery import AGENT, NS, agent_api, fetch, setup_infraenv

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
