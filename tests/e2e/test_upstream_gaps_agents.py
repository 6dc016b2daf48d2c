"""Agents as upstream's kube-API scenarios expect them (issue 19, "Agents").

Hosts are driven with upstream's agent JSON (upstream_agent.py).  Covered:
status.debugInfo.eventsURL on every Agent (upstream "Check that Agent Event
URL is valid": /v2/events...host_id=<id>, answering a non-empty event
list); the InfraEnv label put back when a user removes it; spec.nodeLabels
validated as Kubernetes label keys and values ("deploy CD with ACI and agents
with node labels": SpecSynced True for good labels, False for a key with two
slashes, the good labels staying applied)."""
import json
import ssl
import urllib.request

from conftest import wait_for
from test_install import NS, cluster_deployment, conds_of, infraenv, setup_common
from test_upstream_gaps_protocol import umn_aci_without_machine_network
from upstream_agent import UpstreamAgent

LABEL_IE = "infraenvs.agent-install.openshift.io"


def registered_agent(hub, name="ag"):
    setup_common(hub)
    hub.apply_obj(cluster_deployment(name, f"{name}-aci"))
    hub.apply_obj(umn_aci_without_machine_network(f"{name}-aci", name))
    ie = infraenv(hub, f"{name}-ie", name)
    host = UpstreamAgent(hub, ie, 0)
    host.register()
    host.step()
    return ie, host


def agent(hub, host):
    return hub.kubectl_json("-n", NS, "get", "agent", host.id)


def test_every_agent_has_a_working_events_url(hub):
    _, host = registered_agent(hub)

    def url():
        return agent(hub, host).get("status", {}).get("debugInfo", {}).get("eventsURL")
    u = wait_for(url, timeout=30, what="the Agent's eventsURL")
    assert "/v2/events" in u and f"host_id={host.id}" in u, u
    ctx = ssl.create_default_context(cafile=str(hub.ca_path))
    with urllib.request.urlopen(u, context=ctx, timeout=15) as r:
        events = json.loads(r.read())
    assert isinstance(events, list) and events, events
    assert all(e.get("host_id") == host.id for e in events), events
    # Set once: the next passes leave it as it is.
    host.step()
    assert url() == u


def test_infraenv_label_is_put_back(hub):
    ie, host = registered_agent(hub)
    wait_for(lambda: agent(hub, host)["metadata"].get("labels", {}).get(LABEL_IE), timeout=30,
             what="the InfraEnv label")
    hub.kubectl("-n", NS, "label", "agent", host.id, f"{LABEL_IE}-")

    def back():
        a = agent(hub, host)
        return a["metadata"].get("labels", {}).get(LABEL_IE) == ie["metadata"]["name"] and a
    a = wait_for(back, timeout=30, what="the InfraEnv label put back")
    refs = [r for r in a["metadata"]["ownerReferences"] if r["kind"] == "InfraEnv"]
    assert [r["uid"] for r in refs] == [ie["metadata"]["uid"]], refs


def test_node_labels_are_validated(hub):
    _, host = registered_agent(hub)
    good = {"first-label": "first-value", "second-label": "second-value", "label-with/slash": "blah"}
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": good}}))

    def synced(status):
        def f():
            c = conds_of(agent(hub, host)).get("SpecSynced")
            return c if c and c["status"] == status else None
        return f
    wait_for(synced("True"), timeout=30, what="SpecSynced True with good labels")

    bad = dict(good, **{"label/with/two-slashes": ""})
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": bad}}))
    c = wait_for(synced("False"), timeout=30, what="SpecSynced False with a bad label")
    assert c["reason"] == "InputError", c
    assert c["message"].startswith("The Spec could not be synced due to an input error: node_labels: Invalid value: "
                                   "\"label/with/two-slashes\": a qualified name must consist of alphanumeric "
                                   "characters"), c
    assert agent(hub, host)["spec"]["nodeLabels"] == bad
    # Fixed again: synced.
    hub.kubectl("-n", NS, "patch", "agent", host.id, "--type", "merge", "-p",
                json.dumps({"spec": {"nodeLabels": {"label/with/two-slashes": None}}}))
    wait_for(synced("True"), timeout=30, what="SpecSynced True once the bad label is gone")
