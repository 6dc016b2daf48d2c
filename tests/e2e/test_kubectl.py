"""The real kubectl against the hub: the commands the upstream docs give,
verbatim, and the API-machinery semantics kubectl and controllers rely on
(status subresource, generation, optimistic concurrency, finalizers, garbage
collection, watch, selectors, pagination, dry run).

One hub serves the whole module; every test works in its own namespace."""

import json
import re
import subprocess
import time
import uuid

import pytest
import yaml

from conftest import HubStartError, LineReader, status_shape, wait_for

AGENTS = "agents.agent-install.openshift.io"
ACIS = "agentclusterinstalls.extensions.hive.openshift.io"
API_AI = "/apis/agent-install.openshift.io/v1beta1"
API_EXT = "/apis/extensions.hive.openshift.io/v1beta1"


def agent(name, ns, approved=False, **spec):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"approved": approved, "role": "", **spec}}


def aci(name, ns, cd="test-cluster"):
    return {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterDeploymentRef": {"name": cd},
                     "imageSetRef": {"name": "openshift-v4.9.0"},
                     "networking": {"clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
                                    "serviceNetwork": ["172.30.0.0/16"]},
                     "provisionRequirements": {"controlPlaneAgents": 3}}}


def infraenv(name, ns):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"pullSecretRef": {"name": "pull-secret"}}}


def cm(name, ns, labels=None, data=None, **meta):
    md = {"name": name, "namespace": ns, **meta}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {"k": "v"}}


def new_agent(hub, ns, **kw):
    name = str(uuid.uuid4())
    r = hub.apply_obj(agent(name, ns, **kw))
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} created"
    return name


def agent_path(ns, name=None, sub=None):
    p = f"{API_AI}/namespaces/{ns}/agents"
    if name:
        p += f"/{name}"
    if sub:
        p += f"/{sub}"
    return p


def cm_path(ns, name=None):
    p = f"/api/v1/namespaces/{ns}/configmaps"
    return p + f"/{name}" if name else p


def raw_agent(hub, ns, name):
    return hub.get_json(agent_path(ns, name))


# ---- commands from the upstream docs, verbatim -----------------------------


def test_patch_approve_merge_and_jsonpath(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns)
    r = hub.kubectl("-n", ns, "patch", AGENTS, name, "-p", '{"spec":{"approved":true}}',
                    "--type", "merge")
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} patched"
    r = hub.kubectl("get", AGENTS, name, "-n", ns, "-o=jsonpath={.spec.approved}")
    assert r.stdout == "true"
    assert raw_agent(hub, ns, name)["metadata"]["generation"] == 2
    # A patch that changes nothing writes nothing: kubectl sees the object it
    # read come back identical (same resourceVersion) and says "no change".
    # (On a ConfigMap: no controller writes to it between kubectl's GET and PATCH.)
    hub.apply_obj(cm("nochange", ns, data={"k": "v"}))
    r = hub.kubectl("-n", ns, "patch", "configmap", "nochange", "-p", '{"data":{"k":"v"}}',
                    "--type", "merge")
    assert r.stdout.strip() == "configmap/nochange patched (no change)"
    r = hub.kubectl("-n", ns, "patch", "configmap", "nochange", "-p", '{"data":{"k":"w"}}',
                    "--type", "merge")
    assert r.stdout.strip() == "configmap/nochange patched"


def test_annotate_and_label_aci(module_hub, ns):
    hub = module_hub
    hub.apply_obj(aci("test-agent-cluster-install", ns))
    r = hub.kubectl("annotate", ACIS, "test-agent-cluster-install", "-n", ns,
                    'agent-install.openshift.io/install-config-overrides={"fips":true}')
    assert r.stdout.strip() == \
        "agentclusterinstall.extensions.hive.openshift.io/test-agent-cluster-install annotated"
    r = hub.kubectl("label", ACIS, "test-agent-cluster-install", "-n", ns, "e2e-team=blue")
    assert r.stdout.strip() == \
        "agentclusterinstall.extensions.hive.openshift.io/test-agent-cluster-install labeled"
    obj = hub.kubectl_json("get", ACIS, "test-agent-cluster-install", "-n", ns)
    assert obj["metadata"]["annotations"]["agent-install.openshift.io/install-config-overrides"] \
        == '{"fips":true}'
    assert obj["metadata"]["labels"]["e2e-team"] == "blue"
    # Metadata edits do not bump the generation.
    assert obj["metadata"]["generation"] == 1
    r = hub.kubectl("get", "aci", "-n", ns, "-l", "e2e-team=blue", "-o", "name")
    assert r.stdout.split() == \
        ["agentclusterinstall.extensions.hive.openshift.io/test-agent-cluster-install"]
    # Overwriting needs --overwrite, as upstream.
    r = hub.kubectl("label", ACIS, "test-agent-cluster-install", "-n", ns, "e2e-team=red",
                    check=False)
    assert r.returncode != 0 and "already has a value (blue)" in r.stderr, r.stderr
    hub.kubectl("label", ACIS, "test-agent-cluster-install", "-n", ns, "e2e-team-")
    obj = hub.kubectl_json("get", ACIS, "test-agent-cluster-install", "-n", ns)
    assert "e2e-team" not in (obj["metadata"].get("labels") or {})


def test_release_object_stuck_in_deletion(module_hub, ns):
    """The docs' remedy for an object stuck in deletion: drop its finalizers."""
    hub = module_hub
    name = str(uuid.uuid4())
    a = agent(name, ns)
    a["metadata"]["finalizers"] = ["e2e.example.com/hold"]
    hub.apply_obj(a)
    r = hub.kubectl("delete", AGENTS, name, "-n", ns, "--wait=false")
    assert r.stdout.strip() == f'agent.agent-install.openshift.io "{name}" deleted'
    obj = raw_agent(hub, ns, name)
    assert obj["metadata"].get("deletionTimestamp"), obj["metadata"]
    assert "e2e.example.com/hold" in obj["metadata"]["finalizers"]
    r = hub.kubectl("patch", AGENTS, name, "-n", ns, "-p", '{"metadata":{"finalizers":null}}',
                    "--type=merge")
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} patched"
    wait_for(lambda: hub.get(agent_path(ns, name)).status == 404, 10,
             what="the Agent to go once its finalizers are gone")


def test_get_watch_sees_added_then_modified(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns, clusterDeploymentName={"name": "wcluster", "namespace": ns})
    proc = hub.kubectl_bg("get", AGENTS, name, "-n", ns, "-w", "--output-watch-events",
                          "--request-timeout=30s")
    reader = LineReader(proc)
    try:
        reader.wait_line(lambda l: l.split()[:2] == ["ADDED", name], 15, "an ADDED line")
        hub.kubectl("-n", ns, "patch", AGENTS, name, "-p", '{"spec":{"approved":true}}',
                    "--type", "merge")
        line = reader.wait_line(lambda l: l.split()[:2] == ["MODIFIED", name]
                                and "true" in l.split()[2:], 15,
                                "a MODIFIED line showing APPROVED true")
        assert "wcluster" in line.split()
        header = reader.snapshot()[0].split()
        assert header[:2] == ["EVENT", "NAME"] and "APPROVED" in header, header
    finally:
        reader.stop()


def test_wait_for_condition_written_through_status(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns)
    proc = hub.kubectl_bg("wait", "--for=condition=Foo", f"agent/{name}", "-n", ns,
                          "--timeout=10s")
    try:
        cond = {"type": "Foo", "status": "True", "reason": "E2E", "message": "set by the test",
                "lastTransitionTime": "2025-01-01T00:00:00Z"}
        r = hub.request("PATCH", agent_path(ns, name, "status"),
                        {"status": {"conditions": [cond]}},
                        content_type="application/merge-patch+json")
        assert r.status == 200, r
        assert cond in r.json()["status"]["conditions"]
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"kubectl wait did not return: {out} {err}")
    assert proc.returncode == 0, err
    assert out.strip() == f"agent.agent-install.openshift.io/{name} condition met"
    # A condition that never comes times out with exit 1.
    r = hub.kubectl("wait", "--for=condition=Bar", f"agent/{name}", "-n", ns, "--timeout=1s",
                    check=False)
    assert r.returncode == 1, r
    assert "timed out waiting for the condition" in r.stderr, r.stderr


def test_explain_infraenv_spec(module_hub):
    r = module_hub.kubectl("explain", "infraenv.spec")
    assert "pullSecretRef" in r.stdout, r.stdout
    assert "KIND:" in r.stdout and "InfraEnv" in r.stdout, r.stdout
    r = module_hub.kubectl("explain", "infraenv.spec.pullSecretRef")
    assert "name" in r.stdout


def test_delete(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns)
    r = hub.kubectl("delete", AGENTS, name, "-n", ns, "--timeout=30s")
    assert r.stdout.strip() == f'agent.agent-install.openshift.io "{name}" deleted'
    r = hub.kubectl("get", AGENTS, name, "-n", ns, check=False)
    assert r.returncode == 1
    assert f'agents.agent-install.openshift.io "{name}" not found' in r.stderr, r.stderr
    r = hub.kubectl("delete", AGENTS, name, "-n", ns, check=False)
    assert r.returncode == 1 and "NotFound" in r.stderr, r.stderr
    r = hub.kubectl("delete", AGENTS, name, "-n", ns, "--ignore-not-found")
    assert r.stdout.strip() == ""


def test_get_agents_all_namespaces_printer_columns(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns, approved=True,
                     clusterDeploymentName={"name": "colcluster", "namespace": ns},
                     hostname="req-host")
    r = hub.kubectl("get", "agents", "-A")
    lines = r.stdout.splitlines()
    header = lines[0].split()
    assert header[:6] == ["NAMESPACE", "NAME", "CLUSTER", "APPROVED", "ROLE", "STAGE"], header
    assert "HOSTNAME" not in header  # priority-1 columns only with -o wide
    row = next(l.split() for l in lines[1:] if name in l.split())
    assert row[:4] == [ns, name, "colcluster", "true"], row
    r = hub.kubectl("get", "agents", "-n", ns, "-o", "wide")
    header = r.stdout.splitlines()[0]
    assert "HOSTNAME" in header and "REQUESTED HOSTNAME" in header, header
    assert "req-host" in r.stdout


def test_short_names(module_hub, ns):
    hub = module_hub
    hub.apply_obj(aci("shortname-aci", ns))
    r = hub.kubectl("get", "aci", "-n", ns)
    header = r.stdout.splitlines()[0].split()
    assert header[:3] == ["NAME", "CLUSTER", "STATE"], header
    assert any(l.split()[:2] == ["shortname-aci", "test-cluster"]
               for l in r.stdout.splitlines()[1:]), r.stdout
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": f"imgset-{ns}"},
                   "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.9.0-x86_64"}})
    r = hub.kubectl("get", "imgset", f"imgset-{ns}", "-o", "name")
    assert r.stdout.strip() == f"clusterimageset.hive.openshift.io/imgset-{ns}"
    r = hub.kubectl("get", "cd", "-n", ns)   # resolves; none exist yet
    assert r.returncode == 0


def test_api_resources_lists_our_kinds(module_hub):
    r = module_hub.kubectl("api-resources")
    rows = {}
    for line in r.stdout.splitlines()[1:]:
        f = line.split()
        rows[f[0]] = f
    want = {
        "agents": ("agent-install.openshift.io/v1beta1", "true", "Agent"),
        "infraenvs": ("agent-install.openshift.io/v1beta1", "true", "InfraEnv"),
        "nmstateconfigs": ("agent-install.openshift.io/v1beta1", "true", "NMStateConfig"),
        "agentclassifications": ("agent-install.openshift.io/v1beta1", "true", "AgentClassification"),
        "agentclusterinstalls": ("extensions.hive.openshift.io/v1beta1", "true", "AgentClusterInstall"),
        "clusterdeployments": ("hive.openshift.io/v1", "true", "ClusterDeployment"),
        "clusterimagesets": ("hive.openshift.io/v1", "false", "ClusterImageSet"),
        "namespaces": ("v1", "false", "Namespace"),
        "secrets": ("v1", "true", "Secret"),
        "configmaps": ("v1", "true", "ConfigMap"),
        "customresourcedefinitions": ("apiextensions.k8s.io/v1", "false",
                                      "CustomResourceDefinition"),
    }
    for plural, (gv, namespaced, kind) in want.items():
        assert plural in rows, f"{plural} missing from api-resources:\n{r.stdout}"
        assert tuple(rows[plural][-3:]) == (gv, namespaced, kind), rows[plural]
    assert rows["agentclusterinstalls"][1] == "aci"
    assert rows["clusterdeployments"][1] == "cd"
    assert rows["clusterimagesets"][1] == "imgset"
    r = module_hub.kubectl("api-resources", "--api-group=agent-install.openshift.io", "-o", "name")
    assert set(r.stdout.split()) >= {"agents.agent-install.openshift.io",
                                     "infraenvs.agent-install.openshift.io",
                                     "nmstateconfigs.agent-install.openshift.io",
                                     "agentclassifications.agent-install.openshift.io"}


def test_apply_dry_run_server_stores_nothing(module_hub, ns):
    hub = module_hub
    name = str(uuid.uuid4())
    r = hub.apply_obj(agent(name, ns), "--dry-run=server")
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} created (server dry run)"
    assert hub.get(agent_path(ns, name)).status == 404
    # Server-side dry run still validates.
    bad = agent(name, ns)
    bad["spec"]["approved"] = "string"
    r = hub.apply_obj(bad, "--dry-run=server", "--validate=false", check=False)
    assert r.returncode != 0 and "spec.approved" in r.stderr, r.stderr
    assert hub.get(agent_path(ns, name)).status == 404
    # and a dry-run update leaves the stored object alone
    hub.apply_obj(agent(name, ns))
    r = hub.apply_obj(agent(name, ns, approved=True), "--dry-run=server")
    assert r.stdout.strip() == \
        f"agent.agent-install.openshift.io/{name} configured (server dry run)"
    assert raw_agent(hub, ns, name)["spec"]["approved"] is False


def test_create_with_generate_name(module_hub, ns):
    hub = module_hub
    obj = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"generateName": "gen-", "namespace": ns}, "data": {"a": "b"}}
    names = set()
    for _ in range(3):
        r = hub.kubectl("create", "-f", "-", input=json.dumps(obj))
        m = re.fullmatch(r"configmap/(gen-[a-z0-9]{5}) created", r.stdout.strip())
        assert m, r.stdout
        names.add(m.group(1))
    assert len(names) == 3
    got = hub.kubectl_json("get", "configmaps", "-n", ns)
    assert {i["metadata"]["name"] for i in got["items"]} >= names
    # and for a custom resource
    a = agent("x", ns)
    del a["metadata"]["name"]
    a["metadata"]["generateName"] = "agent-"
    r = hub.kubectl("create", "-f", "-", input=json.dumps(a))
    assert re.fullmatch(r"agent\.agent-install\.openshift\.io/agent-[a-z0-9]{5} created",
                        r.stdout.strip()), r.stdout


@pytest.fixture
def five_cms(module_hub, ns):
    labels = {"l1": {"a": "x"}, "l2": {"a": "y"}, "l3": {"a": "z"}, "l4": {"a": "b"},
              "l5": {"other": "1"}}
    items = [cm(n, ns, labels=l) for n, l in labels.items()]
    module_hub.apply_obj({"apiVersion": "v1", "kind": "List", "items": items})
    return ns


def names_of(hub, *args):
    r = hub.kubectl("get", "configmaps", "-o", "jsonpath={.items[*].metadata.name}", *args)
    return sorted(r.stdout.split())


def test_label_selectors(module_hub, five_cms):
    hub, ns = module_hub, five_cms
    assert names_of(hub, "-n", ns, "-l", "a in (x,y)") == ["l1", "l2"]
    assert names_of(hub, "-n", ns, "-l", "!a") == ["l5"]
    assert names_of(hub, "-n", ns, "-l", "a!=b") == ["l1", "l2", "l3", "l5"]
    assert names_of(hub, "-n", ns, "-l", "a") == ["l1", "l2", "l3", "l4"]
    assert names_of(hub, "-n", ns, "-l", "a notin (x,y),a") == ["l3", "l4"]
    assert names_of(hub, "-n", ns, "-l", "a=x") == ["l1"]
    # raw: labelSelector query parameter, URL-encoded
    items = hub.get_json(cm_path(ns) + "?labelSelector=a%20in%20(x%2Cz)")["items"]
    assert sorted(i["metadata"]["name"] for i in items) == ["l1", "l3"]
    # a malformed selector is a 400 with a Status
    r = hub.get(cm_path(ns) + "?labelSelector=a%20in%20(x")
    assert r.status == 400, r
    status_shape(r.json(), 400, "BadRequest")


def test_field_selectors(module_hub, five_cms):
    hub, ns = module_hub, five_cms
    assert names_of(hub, "-n", ns, "--field-selector", "metadata.name=l3") == ["l3"]
    assert names_of(hub, "-n", ns, "--field-selector", "metadata.name!=l3") == \
        ["l1", "l2", "l4", "l5"]
    assert names_of(hub, "-A", "--field-selector", f"metadata.namespace={ns}") == \
        ["l1", "l2", "l3", "l4", "l5"]
    # field selectors work on custom resources too (metadata.name/namespace)
    name = new_agent(hub, ns)
    new_agent(hub, ns)
    r = hub.kubectl("get", "agents", "-n", ns, "--field-selector", f"metadata.name={name}",
                    "-o", "name")
    assert r.stdout.split() == [f"agent.agent-install.openshift.io/{name}"]


def test_event_field_selectors_and_describe(module_hub, ns):
    """kubectl describe finds an object's Events by involvedObject fields;
    other kinds keep refusing those field labels."""
    hub = module_hub
    name = new_agent(hub, ns)
    uid = hub.kubectl_json("get", "agent", name, "-n", ns)["metadata"]["uid"]
    for i, (reason, about) in enumerate([("HostStatusUpdated", name), ("Other", "someone-else")]):
        hub.apply_obj({"apiVersion": "v1", "kind": "Event",
                       "metadata": {"name": f"ev-{i}", "namespace": ns},
                       "involvedObject": {"apiVersion": "agent-install.openshift.io/v1beta1",
                                          "kind": "Agent", "name": about, "namespace": ns,
                                          "uid": uid if about == name else "x"},
                       "reason": reason, "message": f"about {about}", "type": "Normal"})
    r = hub.kubectl("get", "events", "-n", ns, "-o", "name", "--field-selector",
                    f"involvedObject.kind=Agent,involvedObject.name={name}")
    assert r.stdout.split() == ["event/ev-0"]
    r = hub.kubectl("get", "events", "-n", ns, "-o", "name", "--field-selector", "reason!=Other")
    assert r.stdout.split() == ["event/ev-0"]
    r = hub.kubectl("describe", "agent", name, "-n", ns)
    assert "HostStatusUpdated" in r.stdout and f"about {name}" in r.stdout
    assert "someone-else" not in r.stdout
    r = hub.kubectl("get", "agents", "-n", ns, "--field-selector", "involvedObject.kind=Agent",
                    check=False)
    assert r.returncode != 0 and "field label not supported: involvedObject.kind" in r.stderr


def test_chunked_list(module_hub, five_cms):
    hub, ns = module_hub, five_cms
    r = hub.kubectl("get", "configmaps", "-n", ns, "--chunk-size=2", "-o", "name", "-v=6")
    assert sorted(r.stdout.split()) == [f"configmap/l{i}" for i in range(1, 6)]
    requests = [l for l in r.stderr.splitlines() if "/configmaps?" in l and "GET" in l]
    assert len([l for l in requests if "limit=2" in l]) == 3, r.stderr
    assert any("continue=" in l for l in requests), r.stderr
    # raw: limit + continue, in key order, without duplicates
    seen, cont, pages = [], None, 0
    while True:
        q = "?limit=2" + (f"&continue={cont}" if cont else "")
        body = hub.get_json(cm_path(ns) + q)
        pages += 1
        assert len(body["items"]) <= 2
        seen += [i["metadata"]["name"] for i in body["items"]]
        cont = body["metadata"].get("continue")
        if not cont:
            break
        assert pages < 10
    assert seen == ["l1", "l2", "l3", "l4", "l5"]
    assert pages == 3


def test_json_patch(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns, hostname="before")
    r = hub.kubectl("patch", AGENTS, name, "-n", ns, "--type", "json", "-p",
                    '[{"op":"replace","path":"/spec/hostname","value":"after"},'
                    '{"op":"add","path":"/spec/machineConfigPool","value":"mcp"}]')
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} patched"
    obj = raw_agent(hub, ns, name)
    assert obj["spec"]["hostname"] == "after" and obj["spec"]["machineConfigPool"] == "mcp"
    # test op failing → the whole patch is refused, nothing changes
    r = hub.kubectl("patch", AGENTS, name, "-n", ns, "--type", "json", "-p",
                    '[{"op":"replace","path":"/spec/hostname","value":"x"},'
                    '{"op":"test","path":"/spec/hostname","value":"nope"}]', check=False)
    assert r.returncode != 0
    assert raw_agent(hub, ns, name)["spec"]["hostname"] == "after"
    # JSON patch on a core kind
    hub.apply_obj(cm("jp", ns, data={"k": "v1"}))
    hub.kubectl("patch", "configmap", "jp", "-n", ns, "--type", "json", "-p",
                '[{"op":"replace","path":"/data/k","value":"v2"},'
                '{"op":"add","path":"/data/n","value":"new"}]')
    assert hub.get_json(cm_path(ns, "jp"))["data"] == {"k": "v2", "n": "new"}


def put_with_retry(hub, path, mutate, attempts=5):
    """GET, mutate, PUT; retry on 409 like every well-behaved client (a
    controller may write the object between our GET and PUT)."""
    for _ in range(attempts):
        obj = hub.get_json(path)
        mutate(obj)
        r = hub.request("PUT", path, obj)
        if r.status != 409:
            return r
    return r


def test_status_subresource_semantics(module_hub, ns):
    hub = module_hub
    name = new_agent(hub, ns)
    path = agent_path(ns, name)
    assert raw_agent(hub, ns, name)["metadata"]["generation"] == 1

    # status in a main-resource update is ignored (the spec change is kept)
    def mutate(o):
        o.setdefault("status", {})["installation_disk_id"] = "/dev/e2e-main"
        o["spec"]["hostname"] = "h1"
    r = put_with_retry(hub, path, mutate)
    assert r.status == 200, r
    assert (r.json().get("status") or {}).get("installation_disk_id") is None, r.json()
    got = raw_agent(hub, ns, name)
    assert got["spec"]["hostname"] == "h1"
    assert (got.get("status") or {}).get("installation_disk_id") is None
    assert got["metadata"]["generation"] == 2

    # spec in a status update is ignored; status is written; generation stays
    r = hub.request("PATCH", agent_path(ns, name, "status"),
                    {"spec": {"hostname": "h2"}, "status": {"installation_disk_id": "/dev/e2e"}},
                    content_type="application/merge-patch+json")
    assert r.status == 200, r
    got = raw_agent(hub, ns, name)
    assert got["spec"]["hostname"] == "h1"
    assert got["status"]["installation_disk_id"] == "/dev/e2e"
    assert got["metadata"]["generation"] == 2

    # the same through PUT on /status
    def mutate_status(o):
        o["spec"]["hostname"] = "h-status-put"
        o["status"]["installation_disk_id"] = "/dev/e2e-put"
    r = put_with_retry(hub, agent_path(ns, name, "status"), mutate_status)
    assert r.status == 200, r
    got = raw_agent(hub, ns, name)
    assert got["spec"]["hostname"] == "h1"
    assert got["status"]["installation_disk_id"] == "/dev/e2e-put"
    assert got["metadata"]["generation"] == 2

    # a main-resource patch of status alone changes nothing
    hub.kubectl("patch", AGENTS, name, "-n", ns, "--type", "merge",
                "-p", '{"status":{"installation_disk_id":"/dev/ignored"}}')
    assert raw_agent(hub, ns, name)["status"]["installation_disk_id"] == "/dev/e2e-put"

    # kubectl --subresource=status writes status
    r = hub.kubectl("patch", AGENTS, name, "-n", ns, "--subresource=status", "--type", "merge",
                    "-p", '{"status":{"role":"master"}}')
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} patched"
    got = raw_agent(hub, ns, name)
    assert got["status"]["role"] == "master" and got["metadata"]["generation"] == 2
    # the ROLE printer column reads status.role
    r = hub.kubectl("get", AGENTS, name, "-n", ns, "--no-headers")
    assert "master" in r.stdout.split(), r.stdout

    # metadata-only changes leave generation alone; spec changes bump it
    hub.kubectl("label", AGENTS, name, "-n", ns, "x=y")
    hub.kubectl("annotate", AGENTS, name, "-n", ns, "x=y")
    assert raw_agent(hub, ns, name)["metadata"]["generation"] == 2
    hub.kubectl("patch", AGENTS, name, "-n", ns, "--type", "merge",
                "-p", '{"spec":{"hostname":"h3"}}')
    assert raw_agent(hub, ns, name)["metadata"]["generation"] == 3


def test_optimistic_concurrency_conflict(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("occ", ns, data={"k": "v0"}))
    stale = hub.get_json(cm_path(ns, "occ"))
    fresh = json.loads(json.dumps(stale))
    fresh["data"]["k"] = "v1"
    r = hub.request("PUT", cm_path(ns, "occ"), fresh)
    assert r.status == 200, r
    newer = r.json()
    assert int(newer["metadata"]["resourceVersion"]) > int(stale["metadata"]["resourceVersion"])
    stale["data"]["k"] = "v2"
    r = hub.request("PUT", cm_path(ns, "occ"), stale)
    assert r.status == 409, r
    body = r.json()
    status_shape(body, 409, "Conflict")
    assert body["details"]["name"] == "occ"
    assert "the object has been modified" in body["message"]
    assert hub.get_json(cm_path(ns, "occ"))["data"]["k"] == "v1"
    # the same for a custom resource
    name = new_agent(hub, ns)
    a = raw_agent(hub, ns, name)
    hub.kubectl("label", AGENTS, name, "-n", ns, "bump=1")
    a["spec"]["hostname"] = "late"
    r = hub.request("PUT", agent_path(ns, name), a)
    assert r.status == 409, r
    status_shape(r.json(), 409, "Conflict")
    # a merge patch carrying a stale resourceVersion is a precondition too
    r = hub.request("PATCH", agent_path(ns, name),
                    {"metadata": {"resourceVersion": a["metadata"]["resourceVersion"]},
                     "spec": {"hostname": "late"}},
                    content_type="application/merge-patch+json")
    assert r.status == 409, r


def test_finalizer_delete_waits_until_released(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("fin", ns, finalizers=["e2e.example.com/hold"]))
    proc = hub.kubectl_bg("delete", "configmap", "fin", "-n", ns, "--timeout=30s")
    try:
        obj = wait_for(lambda: (lambda o: o if o["metadata"].get("deletionTimestamp") else None)(
            hub.get_json(cm_path(ns, "fin"))), 10, what="deletionTimestamp")
        assert obj["metadata"]["finalizers"] == ["e2e.example.com/hold"]
        time.sleep(0.5)
        assert proc.poll() is None, "kubectl delete returned while a finalizer holds the object"
        # still readable and listed while terminating
        assert "fin" in names_of(hub, "-n", ns)
        r = hub.kubectl("patch", "configmap", "fin", "-n", ns, "-p",
                        '{"metadata":{"finalizers":null}}', "--type=merge")
        assert r.stdout.strip() == "configmap/fin patched"
        out, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"kubectl delete did not return after the finalizer went: {out} {err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert out.strip() == 'configmap "fin" deleted'
    r = hub.get(cm_path(ns, "fin"))
    assert r.status == 404, r


def test_owner_references_background_cascade(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("owner", ns))
    owner = hub.get_json(cm_path(ns, "owner"))
    oref = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
             "uid": owner["metadata"]["uid"]}]
    hub.apply_obj(cm("dependent", ns, ownerReferences=oref))
    nm = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "NMStateConfig",
          "metadata": {"name": "dep-nmstate", "namespace": ns, "ownerReferences": oref},
          "spec": {"config": {}, "interfaces": [{"name": "eth0",
                                                 "macAddress": "02:00:00:80:12:14"}]}}
    hub.apply_obj(nm)
    hub.apply_obj(cm("bystander", ns))
    r = hub.kubectl("delete", "configmap", "owner", "-n", ns)
    assert r.stdout.strip() == 'configmap "owner" deleted'
    wait_for(lambda: hub.get(cm_path(ns, "dependent")).status == 404, 10,
             what="the dependent ConfigMap to be garbage-collected")
    wait_for(lambda: hub.get(f"{API_AI}/namespaces/{ns}/nmstateconfigs/dep-nmstate").status
             == 404, 10, what="the dependent NMStateConfig to be garbage-collected")
    assert hub.get(cm_path(ns, "bystander")).status == 200


def test_watch_resume_from_resource_version(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("w1", ns))
    rv1 = hub.get_json(cm_path(ns, "w1"))["metadata"]["resourceVersion"]
    hub.apply_obj(cm("w2", ns))
    hub.kubectl("label", "configmap", "w2", "-n", ns, "m=1")
    hub.kubectl("delete", "configmap", "w1", "-n", ns)
    w = hub.watch(cm_path(ns) + f"?watch=1&resourceVersion={rv1}")
    try:
        assert w.status == 200, w.body()
        evs = w.events_until(lambda e: len(e) >= 3, 10)
        got = [(e["type"], e["object"]["metadata"]["name"]) for e in evs[:3]]
        assert got == [("ADDED", "w2"), ("MODIFIED", "w2"), ("DELETED", "w1")], got
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs[:3]]
        assert rvs == sorted(rvs) and rvs[0] > int(rv1), rvs
        assert evs[1]["object"]["metadata"]["labels"] == {"m": "1"}
        # and new events keep coming on the same stream
        hub.apply_obj(cm("w3", ns))
        evs = w.events_until(lambda e: len(e) >= 1, 10)
        assert (evs[0]["type"], evs[0]["object"]["metadata"]["name"]) == ("ADDED", "w3")
    finally:
        w.close()
    # resourceVersion=0 / absent: synthetic ADDED for what exists now, then live events
    w = hub.watch(cm_path(ns) + "?watch=1")
    try:
        evs = w.events_until(lambda e: len(e) >= 2, 10)
        assert sorted((e["type"], e["object"]["metadata"]["name"]) for e in evs) == \
            [("ADDED", "w2"), ("ADDED", "w3")]
    finally:
        w.close()


def test_watch_too_old_resource_version_is_gone(module_hub_factory):
    try:
        hub = module_hub_factory(extra_args=["--event-log-keep", "5"], name="compacted")
    except HubStartError as e:
        if "event-log-keep" in e.log or "unrecognized" in e.log or "unknown" in e.log.lower():
            pytest.xfail("needs --event-log-keep flag")
        raise
    ns = hub.create_namespace("old")
    hub.apply_obj(cm("c0", ns))
    rv0 = hub.get_json(cm_path(ns, "c0"))["metadata"]["resourceVersion"]
    hub.apply_obj({"apiVersion": "v1", "kind": "List",
                   "items": [cm(f"c{i}", ns) for i in range(1, 21)]})
    w = hub.watch(cm_path(ns) + f"?watch=1&resourceVersion={rv0}")
    try:
        if w.status == 410:
            st = json.loads(w.body())
            status_shape(st, 410, st.get("reason"))
            assert st["reason"] in ("Expired", "Gone"), st
            body = None
        else:
            assert w.status == 200, w.body()
            body = w.next_event(timeout=10)
    finally:
        w.close()
    if body is not None:
        # what kube-apiserver does: 200, then one ERROR event carrying a 410 Status
        assert body["type"] == "ERROR", body
        st = body["object"]
        assert st["kind"] == "Status" and st["code"] == 410, st
        assert st["reason"] in ("Expired", "Gone"), st
        assert "too old resource version" in st["message"], st
    # a recent resourceVersion still works
    rv = hub.get_json(cm_path(ns))["metadata"]["resourceVersion"]
    w = hub.watch(cm_path(ns) + f"?watch=1&resourceVersion={rv}")
    try:
        assert w.status == 200
        hub.apply_obj(cm("late", ns))
        evs = w.events_until(lambda e: len(e) >= 1, 10)
        assert (evs[0]["type"], evs[0]["object"]["metadata"]["name"]) == ("ADDED", "late")
    finally:
        w.close()


def test_crd_readable(module_hub):
    r = module_hub.kubectl("get", "crd", "infraenvs.agent-install.openshift.io", "-o", "yaml")
    crd = yaml.safe_load(r.stdout)
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "infraenvs.agent-install.openshift.io"
    assert crd["spec"]["group"] == "agent-install.openshift.io"
    assert crd["spec"]["names"]["kind"] == "InfraEnv"
    assert crd["spec"]["scope"] == "Namespaced"
    v = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
    spec_schema = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert "pullSecretRef" in spec_schema["properties"]
    assert "pullSecretRef" in spec_schema.get("required", [])
    r = module_hub.kubectl("get", "crd", "-o", "name")
    names = set(r.stdout.split())
    for n in ("agents.agent-install.openshift.io", "agentclusterinstalls.extensions.hive.openshift.io",
              "clusterdeployments.hive.openshift.io", "clusterimagesets.hive.openshift.io"):
        assert f"customresourcedefinition.apiextensions.k8s.io/{n}" in names, names
