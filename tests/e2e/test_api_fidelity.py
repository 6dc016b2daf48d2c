"""Kubernetes API fidelity as kube-apiserver 1.31 has it, for kubectl 1.27 to
1.33: patch media types per kind, strict/warn/ignore field validation,
watches with selectors (objects entering and leaving the selection),
bookmarks and sendInitialEvents, foreground and orphan deletion, and
server-side apply with managedFields.

One hub serves the whole module; every test works in its own namespace."""

import json
import time
import subprocess

import pytest

from conftest import KUBECTL_TIMEOUT, wait_for
from conftest import status_shape as _status_shape


def status_shape(body, code, reason):
    """Assert a Kubernetes Status object; return it."""
    _status_shape(body, code, reason)
    return body

API_AI = "/apis/agent-install.openshift.io/v1beta1"
KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
MERGE = "application/merge-patch+json"
SMP = "application/strategic-merge-patch+json"
JSONP = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"


def agent(name, ns, approved=False, labels=None):
    md = {"name": name, "namespace": ns}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": md, "spec": {"approved": approved, "role": ""}}


def cm(name, ns, labels=None, data=None, **meta):
    md = {"name": name, "namespace": ns, **meta}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {"k": "v"}}


def agent_path(ns, name=None):
    p = f"{API_AI}/namespaces/{ns}/agents"
    return p + f"/{name}" if name else p


def cm_path(ns, name=None):
    p = f"/api/v1/namespaces/{ns}/configmaps"
    return p + f"/{name}" if name else p


def kubectl_v(hub, version, *args, input=None, check=True):
    """Run one kubectl release (1.27 ... 1.33) against the hub."""
    cmd = [f"{KUBECTL_DIR}/kubectl.{version}", "--kubeconfig", str(hub.kubeconfig),
           "--cache-dir", str(hub.cache_dir) + f"-{version}", *map(str, args)]
    r = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=KUBECTL_TIMEOUT)
    if check and r.returncode != 0:
        raise AssertionError(f"kubectl {version} failed ({r.returncode}): {' '.join(args)}\n"
                             f"stdout: {r.stdout}\nstderr: {r.stderr}")
    return r


def raw(hub, method, path, body=None, content_type="application/json"):
    """One request on its own connection: (status, [(header, value)], body
    JSON), every header kept (Warning may repeat)."""
    conn = hub.connection()
    try:
        data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        conn.request(method, path, body=data, headers=hub.auth_headers(content_type))
        resp = conn.getresponse()
        text = resp.read()
        return resp.status, resp.getheaders(), json.loads(text) if text else None
    finally:
        conn.close()


def warnings_of(headers):
    return [v for k, v in headers if k.lower() == "warning"]


# ---- 4. patch media types ---------------------------------------------------

def test_strategic_merge_patch_on_custom_resource_is_415(module_hub, ns):
    hub = module_hub
    hub.apply_obj(agent("a1", ns))
    r = hub.request("PATCH", agent_path(ns, "a1"), {"spec": {"approved": True}}, content_type=SMP)
    assert r.status == 415, r
    st = status_shape(r.json(), 415, "UnsupportedMediaType")
    assert st["message"] == ("the body of the request was in an unknown format - accepted media "
                             "types include: application/json-patch+json, "
                             "application/merge-patch+json, application/apply-patch+yaml"), st
    assert hub.get_json(agent_path(ns, "a1"))["spec"]["approved"] is False
    # a media type with parameters is still the media type
    r = hub.request("PATCH", agent_path(ns, "a1"), {"spec": {"approved": True}},
                    content_type="application/merge-patch+json; charset=utf-8")
    assert r.status == 200, r
    r = hub.request("PATCH", agent_path(ns, "a1"), {"spec": {"approved": True}},
                    content_type="text/plain")
    assert r.status == 415, r


def test_strategic_merge_patch_on_builtin_kinds_still_works(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("c1", ns, data={"a": "1"}))
    r = hub.request("PATCH", cm_path(ns, "c1"), {"data": {"b": "2"}}, content_type=SMP)
    assert r.status == 200, r
    assert r.json()["data"] == {"a": "1", "b": "2"}
    r = hub.request("PATCH", cm_path(ns, "c1"), {"data": {"b": "2"}},
                    content_type="application/yaml")
    assert r.status == 415, r
    assert status_shape(r.json(), 415, "UnsupportedMediaType")["message"].endswith(
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml")


@pytest.mark.parametrize("version", ["1.27", "1.30", "1.33"])
def test_kubectl_label_annotate_patch_apply_on_crs(module_hub, ns, version):
    """kubectl sends merge patches for custom resources: label, annotate,
    patch (default type strategic is refused client-side... by the server),
    and client-side apply keep working in every kubectl release."""
    hub = module_hub
    name = f"ag-{version.replace('.', '')}"
    kubectl_v(hub, version, "apply", "-f", "-", input=json.dumps(agent(name, ns)))
    kubectl_v(hub, version, "-n", ns, "label", "agent", name, "size=xl")
    kubectl_v(hub, version, "-n", ns, "annotate", "agent", name, "note=hi")
    a = agent(name, ns, approved=True, labels={"size": "xl"})
    kubectl_v(hub, version, "apply", "-f", "-", input=json.dumps(a))
    got = hub.get_json(agent_path(ns, name))
    assert got["metadata"]["labels"] == {"size": "xl"}
    assert got["metadata"]["annotations"]["note"] == "hi"
    assert got["spec"]["approved"] is True
    kubectl_v(hub, version, "-n", ns, "patch", "agent", name, "--type", "merge",
              "-p", '{"spec":{"approved":false}}')
    assert hub.get_json(agent_path(ns, name))["spec"]["approved"] is False
    # kubectl patch's default type is strategic: the server refuses it on a CR
    r = kubectl_v(hub, version, "-n", ns, "patch", "agent", name, "-p",
                  '{"spec":{"approved":true}}', check=False)
    assert r.returncode != 0
    assert "415" in r.stderr or "unknown format" in r.stderr or "UnsupportedMediaType" in r.stderr, r.stderr


# ---- 5. field validation ------------------------------------------------------

def test_field_validation_strict_warn_ignore(module_hub, ns):
    hub = module_hub
    body = agent("fv1", ns)
    body["spec"]["x"] = 1
    body["spec"]["y"] = 2
    r = hub.request("POST", agent_path(ns) + "?fieldValidation=Strict", body)
    assert r.status == 400, r
    st = status_shape(r.json(), 400, "BadRequest")
    assert st["message"] == 'strict decoding error: unknown field "spec.x", unknown field "spec.y"', st
    assert hub.get(agent_path(ns, "fv1")).status == 404
    # Strict on an update and on a patch
    hub.apply_obj(agent("fv2", ns))
    r = hub.request("PATCH", agent_path(ns, "fv2") + "?fieldValidation=Strict",
                    {"spec": {"bogus": True}}, content_type=MERGE)
    assert r.status == 400, r
    assert status_shape(r.json(), 400, "BadRequest")["message"] == \
        'strict decoding error: unknown field "spec.bogus"'
    # Warn (the default): stored without the field, a Warning header
    status, headers, obj = raw(hub, "POST", agent_path(ns) + "?fieldValidation=Warn", body)
    assert status == 201, obj
    assert warnings_of(headers) == ['299 - "unknown field \\"spec.x\\""',
                                    '299 - "unknown field \\"spec.y\\""'], headers
    assert "x" not in obj["spec"]
    # Ignore: dropped silently
    body["metadata"]["name"] = "fv3"
    status, headers, obj = raw(hub, "POST", agent_path(ns) + "?fieldValidation=Ignore", body)
    assert status == 201, obj
    assert warnings_of(headers) == []
    assert "x" not in hub.get_json(agent_path(ns, "fv3"))["spec"]


def test_kubectl_validate_strict_and_warn(module_hub, ns):
    hub = module_hub
    body = agent("fv4", ns)
    body["spec"]["x"] = 1
    r = hub.kubectl("create", "--validate=strict", "-f", "-", input=json.dumps(body), check=False)
    assert r.returncode != 0
    assert 'strict decoding error: unknown field "spec.x"' in r.stderr, r.stderr
    r = hub.kubectl("create", "--validate=warn", "-f", "-", input=json.dumps(body))
    assert 'Warning: unknown field "spec.x"' in r.stderr, r.stderr


# ---- 1. watch: selectors, bookmarks, initial events -------------------------------

def evs_brief(evs):
    return [(e["type"], e["object"]["metadata"].get("name")) for e in evs]


def test_watch_label_selector_enter_and_leave(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("in", ns, labels={"tier": "a"}))
    hub.apply_obj(cm("out", ns, labels={"tier": "b"}))
    rv = hub.get_json(cm_path(ns))["metadata"]["resourceVersion"]
    w = hub.watch(cm_path(ns) + f"?watch=1&labelSelector=tier%3Da&resourceVersion={rv}")
    try:
        assert w.status == 200
        hub.kubectl("label", "configmap", "in", "-n", ns, "tier=b", "--overwrite")   # leaves
        hub.kubectl("label", "configmap", "out", "-n", ns, "x=1")                    # never in
        hub.kubectl("label", "configmap", "out", "-n", ns, "tier=a", "--overwrite")  # enters
        hub.kubectl("annotate", "configmap", "out", "-n", ns, "n=1")                 # stays in
        hub.kubectl("label", "configmap", "in", "-n", ns, "tier=a", "--overwrite")   # enters again
        hub.kubectl("delete", "configmap", "in", "-n", ns)                           # deleted while in
        hub.kubectl("label", "configmap", "out", "-n", ns, "tier-")                  # leaves
        hub.kubectl("delete", "configmap", "out", "-n", ns)                          # deleted while out
        hub.apply_obj(cm("last", ns, labels={"tier": "a"}))
        evs = w.events_until(lambda e: any(x["object"]["metadata"]["name"] == "last" for x in e), 15)
        assert evs_brief(evs) == [("DELETED", "in"), ("ADDED", "out"), ("MODIFIED", "out"),
                                  ("ADDED", "in"), ("DELETED", "in"), ("DELETED", "out"),
                                  ("ADDED", "last")], evs_brief(evs)
        # DELETED on leaving carries the object's new state
        assert evs[0]["object"]["metadata"]["labels"] == {"tier": "b"}
        assert "tier" not in evs[5]["object"]["metadata"].get("labels", {})
        assert evs[2]["object"]["metadata"]["annotations"]["n"] == "1"
        rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
        assert rvs == sorted(rvs) and rvs[0] > int(rv)
    finally:
        w.close()


def test_watch_selector_initial_events_then_changes(module_hub, ns):
    hub = module_hub
    hub.apply_obj(agent("sel-a", ns, labels={"pool": "x"}))
    hub.apply_obj(agent("sel-b", ns, labels={"pool": "y"}))
    w = hub.watch(agent_path(ns) + "?watch=true&labelSelector=pool%20in%20(x)")
    try:
        evs = w.events_until(lambda e: len(e) >= 1, 10)
        assert evs_brief(evs) == [("ADDED", "sel-a")]
        r = hub.request("PATCH", agent_path(ns, "sel-b"), {"metadata": {"labels": {"pool": "x"}}},
                        content_type=MERGE)
        assert r.status == 200, r
        r = hub.request("PATCH", agent_path(ns, "sel-a"), {"metadata": {"labels": {"pool": "z"}}},
                        content_type=MERGE)
        assert r.status == 200, r
        evs = w.events_until(lambda e: len(e) >= 2, 10)
        assert evs_brief(evs) == [("ADDED", "sel-b"), ("DELETED", "sel-a")]
        assert evs[1]["object"]["metadata"]["labels"] == {"pool": "z"}
    finally:
        w.close()


def test_watch_field_selector_deleted_and_added(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("f1", ns))
    w = hub.watch(cm_path(ns) + "?watch=1&fieldSelector=metadata.name%3Df1")
    try:
        assert evs_brief(w.events_until(lambda e: len(e) >= 1, 10)) == [("ADDED", "f1")]
        hub.apply_obj(cm("f2", ns))
        hub.kubectl("delete", "configmap", "f1", "-n", ns)
        hub.apply_obj(cm("f1", ns))
        assert evs_brief(w.events_until(lambda e: len(e) >= 2, 10)) == [("DELETED", "f1"), ("ADDED", "f1")]
    finally:
        w.close()


def test_watch_bookmarks(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("b1", ns))
    rv = hub.get_json(cm_path(ns))["metadata"]["resourceVersion"]
    # kube-apiserver sends a bookmark 2 s before the watch's deadline (and every minute)
    w = hub.watch(cm_path(ns) + f"?watch=1&allowWatchBookmarks=true&timeoutSeconds=4&resourceVersion={rv}")
    try:
        ev = w.next_event(timeout=10)
        assert ev is not None and ev["type"] == "BOOKMARK", ev
        assert ev["object"] == {"kind": "ConfigMap", "apiVersion": "v1",
                                "metadata": {"resourceVersion": ev["object"]["metadata"]["resourceVersion"]}}
        assert int(ev["object"]["metadata"]["resourceVersion"]) >= int(rv)
        assert w.next_event(timeout=10) is None  # the deadline ends the stream
    finally:
        w.close()
    # without allowWatchBookmarks: none
    w = hub.watch(cm_path(ns) + f"?watch=1&timeoutSeconds=3&resourceVersion={rv}")
    try:
        assert w.next_event(timeout=10) is None
    finally:
        w.close()


def test_watch_send_initial_events(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("i1", ns, labels={"s": "1"}))
    hub.apply_obj(cm("i2", ns, labels={"s": "1"}))
    hub.apply_obj(cm("i3", ns))
    rv = hub.get_json(cm_path(ns))["metadata"]["resourceVersion"]
    w = hub.watch(cm_path(ns) + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
                  "&allowWatchBookmarks=true&labelSelector=s%3D1&resourceVersion=" + rv)
    try:
        evs = w.events_until(lambda e: len(e) >= 3, 10, skip_bookmarks=False)
        assert evs_brief(evs[:2]) == [("ADDED", "i1"), ("ADDED", "i2")]
        assert evs[2]["type"] == "BOOKMARK", evs[2]
        md = evs[2]["object"]["metadata"]
        assert md["annotations"] == {"k8s.io/initial-events-end": "true"}
        assert int(md["resourceVersion"]) >= int(rv)
        hub.apply_obj(cm("i4", ns, labels={"s": "1"}))
        assert evs_brief(w.events_until(lambda e: len(e) >= 1, 10)) == [("ADDED", "i4")]
    finally:
        w.close()
    # sendInitialEvents=false: only what happens from now on
    w = hub.watch(cm_path(ns) + "?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan"
                  "&allowWatchBookmarks=true&labelSelector=s%3D1")
    try:
        hub.kubectl("label", "configmap", "i1", "-n", ns, "s-")
        assert evs_brief(w.events_until(lambda e: len(e) >= 1, 10)) == [("DELETED", "i1")]
    finally:
        w.close()


@pytest.mark.parametrize("query,message", [
    ("sendInitialEvents=true&allowWatchBookmarks=true",
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
    ("resourceVersionMatch=NotOlderThan",
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
])
def test_watch_list_options_validation(module_hub, ns, query, message):
    r = module_hub.get(cm_path(ns) + "?watch=1&" + query)
    assert r.status == 422, r
    st = status_shape(r.json(), 422, "Invalid")
    assert st["message"] == message
    assert st["details"]["kind"] == "ListOptions" and st["details"]["group"] == "meta.k8s.io"
    assert st["details"]["causes"][0]["field"] == "resourceVersionMatch"


# ---- 3. foreground and orphan deletion --------------------------------------------

def owner_ref(obj, block=None):
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": obj["metadata"]["name"],
           "uid": obj["metadata"]["uid"]}
    if block is not None:
        ref["blockOwnerDeletion"] = block
    return ref


def delete_raw(hub, path, policy):
    return raw(hub, "DELETE", path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                     "propagationPolicy": policy})


def test_foreground_deletion_waits_for_blocking_dependents(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("owner", ns))
    owner = hub.get_json(cm_path(ns, "owner"))
    hub.apply_obj(cm("blocker", ns, ownerReferences=[owner_ref(owner, True)],
                     finalizers=["example.com/hold"]))
    hub.apply_obj(cm("loose", ns, ownerReferences=[owner_ref(owner)]))
    hub.apply_obj(cm("bystander", ns))
    status, _, obj = delete_raw(hub, cm_path(ns, "owner"), "Foreground")
    assert status == 200, obj
    assert obj["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert obj["metadata"]["deletionTimestamp"]
    # the dependents are deleted first; the owner waits for the blocking one
    wait_for(lambda: hub.get(cm_path(ns, "loose")).status == 404, 10, what="loose dependent deleted")
    wait_for(lambda: hub.get_json(cm_path(ns, "blocker"))["metadata"].get("deletionTimestamp"), 10,
             what="blocking dependent marked for deletion")
    time.sleep(1.5)
    got = hub.get_json(cm_path(ns, "owner"))
    assert got["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert got["metadata"]["uid"] == owner["metadata"]["uid"]
    # a second foreground delete changes nothing
    status, _, again = delete_raw(hub, cm_path(ns, "owner"), "Foreground")
    assert status == 200 and again["metadata"]["finalizers"] == ["foregroundDeletion"], again
    # the blocker goes: then the owner goes
    r = hub.request("PATCH", cm_path(ns, "blocker"), {"metadata": {"finalizers": None}},
                    content_type=MERGE)
    assert r.status == 200, r
    wait_for(lambda: hub.get(cm_path(ns, "owner")).status == 404, 10, what="owner deleted")
    assert hub.get(cm_path(ns, "bystander")).status == 200


def test_foreground_deletion_with_kubectl(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("fo", ns))
    owner = hub.get_json(cm_path(ns, "fo"))
    hub.apply_obj(cm("fo-child", ns, ownerReferences=[owner_ref(owner, True)]))
    child = hub.get_json(cm_path(ns, "fo-child"))
    # a dependent with dependents of its own is deleted in the foreground too
    hub.apply_obj(cm("fo-grandchild", ns, ownerReferences=[owner_ref(child, True)],
                     finalizers=["example.com/hold"]))
    p = hub.kubectl_bg("delete", "configmap", "fo", "-n", ns, "--cascade=foreground")
    wait_for(lambda: hub.get_json(cm_path(ns, "fo-child"))["metadata"].get("finalizers")
             == ["foregroundDeletion"], 10, what="child held by foregroundDeletion")
    assert hub.get_json(cm_path(ns, "fo"))["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert p.poll() is None  # kubectl waits for the owner to go
    r = hub.request("PATCH", cm_path(ns, "fo-grandchild"), {"metadata": {"finalizers": None}},
                    content_type=MERGE)
    assert r.status == 200, r
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert out.strip() == 'configmap "fo" deleted'
    for n in ("fo", "fo-child", "fo-grandchild"):
        assert hub.get(cm_path(ns, n)).status == 404, n


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_orphan_deletion(module_hub, ns, version):
    hub = module_hub
    hub.apply_obj(cm("orph", ns))
    owner = hub.get_json(cm_path(ns, "orph"))
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "someone", "uid": "0000-other"}
    hub.apply_obj(cm("kid1", ns, ownerReferences=[owner_ref(owner, True)]))
    hub.apply_obj(cm("kid2", ns, ownerReferences=[owner_ref(owner), other]))
    r = kubectl_v(hub, version, "delete", "configmap", "orph", "-n", ns, "--cascade=orphan")
    assert r.stdout.strip() == 'configmap "orph" deleted'
    assert hub.get(cm_path(ns, "orph")).status == 404
    assert "ownerReferences" not in hub.get_json(cm_path(ns, "kid1"))["metadata"]
    assert hub.get_json(cm_path(ns, "kid2"))["metadata"]["ownerReferences"] == [other]
    # The collector's writes are recorded: the removed reference is no one's.
    for kid in ("kid1", "kid2"):
        fields = json.dumps([e["fieldsV1"] for e in
                             hub.get_json(cm_path(ns, kid))["metadata"].get("managedFields", [])])
        assert owner["metadata"]["uid"] not in fields, (kid, fields)
    assert "0000-other" in json.dumps(hub.get_json(cm_path(ns, "kid2"))["metadata"]["managedFields"])
    time.sleep(1)  # and the collector does not delete them later
    assert hub.get(cm_path(ns, "kid1")).status == 200


def test_orphan_deletion_with_other_finalizers(module_hub, ns):
    hub = module_hub
    hub.apply_obj(cm("held", ns, finalizers=["example.com/keep"]))
    owner = hub.get_json(cm_path(ns, "held"))
    hub.apply_obj(cm("kid", ns, ownerReferences=[owner_ref(owner, True)]))
    status, _, obj = delete_raw(hub, cm_path(ns, "held"), "Orphan")
    assert status == 200, obj
    assert obj["metadata"]["finalizers"] == ["example.com/keep", "orphan"]
    wait_for(lambda: hub.get_json(cm_path(ns, "held"))["metadata"]["finalizers"] == ["example.com/keep"],
             10, what="the orphan finalizer removed")
    assert "ownerReferences" not in hub.get_json(cm_path(ns, "kid"))["metadata"]
    r = hub.request("PATCH", cm_path(ns, "held"), {"metadata": {"finalizers": None}}, content_type=MERGE)
    assert r.status == 200, r
    wait_for(lambda: hub.get(cm_path(ns, "held")).status == 404, 10, what="owner deleted")
    assert hub.get(cm_path(ns, "kid")).status == 200


# ---- 2. server-side apply and managedFields -------------------------------------------

def managed(obj):
    return {(e["manager"], e["operation"], e.get("subresource", "")): e for e in
            obj["metadata"].get("managedFields", [])}


def test_managed_fields_recorded_for_every_write(module_hub, ns):
    hub = module_hub
    name = "mf1"
    hub.apply_obj(agent(name, ns))
    got = hub.get_json(agent_path(ns, name))
    mf = managed(got)
    e = mf[("kubectl-client-side-apply", "Update", "")]
    assert e["apiVersion"] == "agent-install.openshift.io/v1beta1"
    assert e["fieldsType"] == "FieldsV1" and e["time"].endswith("Z")
    assert e["fieldsV1"]["f:spec"] == {".": {}, "f:approved": {}, "f:role": {}}, e
    assert "f:kubectl.kubernetes.io/last-applied-configuration" in e["fieldsV1"]["f:metadata"]["f:annotations"]
    hub.kubectl("-n", ns, "label", "agent", name, "size=xl")
    hub.kubectl("-n", ns, "patch", "agent", name, "--type", "merge", "-p", '{"spec":{"approved":true}}')
    got = hub.get_json(agent_path(ns, name))
    mf = managed(got)
    assert mf[("kubectl-label", "Update", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:size": {}}}}
    assert mf[("kubectl-patch", "Update", "")]["fieldsV1"] == {"f:spec": {"f:approved": {}}}
    # the patcher took spec.approved from the applier
    assert "f:approved" not in mf[("kubectl-client-side-apply", "Update", "")]["fieldsV1"]["f:spec"]
    # a no-op write changes nothing (same resourceVersion, same managedFields)
    r = hub.request("PATCH", agent_path(ns, name), {"spec": {"approved": True}}, content_type=MERGE)
    assert r.status == 200 and r.json()["metadata"] == got["metadata"], r
    # the status subresource is tracked separately; the hub's controllers are "agenthub"
    r = hub.request("PATCH", agent_path(ns, name) + "/status?fieldManager=my-controller",
                    {"status": {"debugInfo": {"state": "x"}}}, content_type=MERGE)
    assert r.status == 200, r
    mf = managed(r.json())
    st = mf[("my-controller", "Update", "status")]
    assert st["fieldsV1"]["f:status"]["f:debugInfo"]["f:state"] == {}, st
    # the manager is the User-Agent's program name without fieldManager
    r = hub.request("PATCH", agent_path(ns, name), {"metadata": {"annotations": {"a": "b"}}},
                    content_type=MERGE, headers={"User-Agent": "my-tool/1.2 (linux)"})
    assert r.status == 200, r
    assert ("my-tool", "Update", "") in managed(r.json())


def test_managed_fields_sent_by_clients(module_hub, ns):
    """managedFields a client writes, as kube-apiserver takes them: [{}]
    strips them, a list replaces them (the write's own changes recorded on
    top), an empty or absent list keeps them, bad entries are 422."""
    hub = module_hub
    name = "mf-sent"
    other = {"manager": "other-tool", "operation": "Update", "apiVersion": "agent-install.openshift.io/v1beta1",
             "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:role": {}}}}
    a = agent(name, ns)
    a["metadata"]["managedFields"] = [other]
    r = hub.request("POST", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{ns}/agents?fieldManager=creator", a)
    assert r.status == 201, r
    mf = managed(r.json())
    # Every field of a new object is the creator's: other-tool's only field went to it.
    assert set(mf) == {("creator", "Update", "")}, mf
    keep = dict(other, fieldsV1={"f:metadata": {"f:annotations": {"f:z": {}}}})
    b = agent(name + "-b", ns)
    b["metadata"]["managedFields"] = [keep]
    r = hub.request("POST", f"/apis/agent-install.openshift.io/v1beta1/namespaces/{ns}/agents?fieldManager=creator", b)
    assert r.status == 201, r
    mf = managed(r.json())
    assert set(mf) == {("creator", "Update", ""), ("other-tool", "Update", "")}, mf
    assert mf[("other-tool", "Update", "")]["fieldsV1"] == keep["fieldsV1"]
    # A PUT that sends managedFields replaces them; the PUT's changes go on top.
    got = hub.get_json(agent_path(ns, name))
    got["metadata"]["managedFields"] = [other]
    got["metadata"]["labels"] = {"x": "y"}
    r = hub.request("PUT", agent_path(ns, name) + "?fieldManager=putter", got)
    assert r.status == 200, r
    mf = managed(r.json())
    assert set(mf) == {("other-tool", "Update", ""), ("putter", "Update", "")}, mf
    assert mf[("other-tool", "Update", "")]["fieldsV1"] == {"f:spec": {"f:role": {}}}
    assert mf[("putter", "Update", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {".": {}, "f:x": {}}}}
    # An empty list keeps them (clients that do not know the field).
    r = hub.request("PATCH", agent_path(ns, name), {"metadata": {"managedFields": []}}, content_type=MERGE)
    assert r.status == 200 and set(managed(r.json())) == set(mf), r
    # [{}] strips them all.
    r = hub.request("PATCH", agent_path(ns, name), {"metadata": {"managedFields": [{}]}}, content_type=MERGE)
    assert r.status == 200, r
    assert "managedFields" not in r.json()["metadata"], r.json()["metadata"]
    assert "managedFields" not in hub.get_json(agent_path(ns, name))["metadata"]
    # Entries kube-apiserver refuses: 422 naming the field.
    got = hub.get_json(agent_path(ns, name))
    got["metadata"]["managedFields"] = [dict(other, operation="Delete", fieldsType="FieldsV2")]
    r = hub.request("PUT", agent_path(ns, name), got)
    st = r.json()
    assert r.status == 422 and st["reason"] == "Invalid", st
    causes = {c["field"]: c["message"] for c in st["details"]["causes"]}
    assert causes == {
        "metadata.managedFields[0].operation": 'Unsupported value: "Delete": supported values: "Apply", "Update"',
        "metadata.managedFields[0].fieldsType": 'Unsupported value: "FieldsV2": supported values: "FieldsV1"'}, causes


@pytest.mark.parametrize("version", ["1.27", "1.30", "1.33"])
def test_kubectl_server_side_apply(module_hub, ns, version):
    hub = module_hub
    name = f"ssa-{version.replace('.', '')}"
    a = agent(name, ns, labels={"app": "x"})
    r = kubectl_v(hub, version, "apply", "--server-side", "-f", "-", input=json.dumps(a))
    assert r.stdout.strip() == f"agent.agent-install.openshift.io/{name} serverside-applied", r.stdout
    got = hub.get_json(agent_path(ns, name))
    e = managed(got)[("kubectl", "Apply", "")]
    assert e["fieldsV1"] == {"f:metadata": {"f:labels": {"f:app": {}}},
                             "f:spec": {"f:approved": {}, "f:role": {}}}, e
    # unchanged: applies cleanly again; diff shows nothing
    kubectl_v(hub, version, "apply", "--server-side", "-f", "-", input=json.dumps(a))
    r = kubectl_v(hub, version, "diff", "--server-side", "-f", "-", input=json.dumps(a))
    assert r.stdout == ""
    # another manager changes a field the applier owns: conflict
    kubectl_v(hub, version, "-n", ns, "patch", "agent", name, "--type", "merge",
              "-p", '{"spec":{"approved":true}}')
    r = kubectl_v(hub, version, "apply", "--server-side", "-f", "-", input=json.dumps(a), check=False)
    assert r.returncode != 0
    assert ('Apply failed with 1 conflict: conflict with "kubectl-patch" using '
            'agent-install.openshift.io/v1beta1: .spec.approved') in r.stderr, r.stderr
    # diff --server-side shows the change the apply would make
    r = kubectl_v(hub, version, "diff", "--server-side", "--force-conflicts", "-f", "-",
                  input=json.dumps(a), check=False)
    assert r.returncode == 1 and "approved: true" in r.stdout, (r.stdout, r.stderr)
    # force takes the field back
    kubectl_v(hub, version, "apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(a))
    got = hub.get_json(agent_path(ns, name))
    assert got["spec"]["approved"] is False
    mf = managed(got)
    assert ("kubectl-patch", "Update", "") not in mf
    # a field removed from the applier's config is removed from the object
    del a["metadata"]["labels"]
    kubectl_v(hub, version, "apply", "--server-side", "-f", "-", input=json.dumps(a))
    assert "app" not in hub.get_json(agent_path(ns, name))["metadata"].get("labels", {})


def test_apply_raw_http_create_force_and_validation(module_hub, ns):
    """What controller-runtime's client.Apply, Flux and Argo CD send: a JSON
    body as application/apply-patch+yaml, fieldManager, force=true."""
    hub = module_hub
    body = agent("raw-apply", ns)
    path = agent_path(ns, "raw-apply")
    status, _, obj = raw(hub, "PATCH", path + "?fieldManager=flux&force=true", body, APPLY)
    assert status == 201, obj
    assert [e["manager"] for e in obj["metadata"]["managedFields"]] == ["flux"]
    assert obj["metadata"]["managedFields"][0]["operation"] == "Apply"
    status, _, obj = raw(hub, "PATCH", path + "?fieldManager=flux&force=true", body, APPLY)
    assert status == 200, obj
    # YAML bodies too
    status, _, obj = raw(hub, "PATCH", path + "?fieldManager=argocd",
                         "apiVersion: agent-install.openshift.io/v1beta1\nkind: Agent\n"
                         f"metadata:\n  name: raw-apply\n  namespace: {ns}\nspec:\n  approved: true\n".encode(),
                         APPLY)
    assert status == 409, obj
    st = status_shape(obj, 409, "Conflict")
    assert st["message"] == 'Apply failed with 1 conflict: conflict with "flux": .spec.approved', st
    assert st["details"]["causes"] == [{"reason": "FieldManagerConflict",
                                        "message": 'conflict with "flux"', "field": ".spec.approved"}]
    # fieldManager is required; force only for apply
    status, _, obj = raw(hub, "PATCH", path, body, APPLY)
    assert status == 422, obj
    assert status_shape(obj, 422, "Invalid")["message"] == \
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply requests'
    status, _, obj = raw(hub, "PATCH", path + "?force=true", {"spec": {"approved": True}}, MERGE)
    assert status == 422, obj
    assert "force: Forbidden: may not be specified for non-apply patch" in obj["message"]
    # dry run stores nothing
    body["spec"]["approved"] = True
    status, _, obj = raw(hub, "PATCH", path + "?fieldManager=flux&dryRun=All", body, APPLY)
    assert status == 200 and obj["spec"]["approved"] is True, obj
    assert hub.get_json(path)["spec"]["approved"] is False


def test_server_side_apply_over_client_side_apply(module_hub, ns):
    """kubectl apply --server-side on an object made by client-side apply (kubectl
    then tries to migrate the managedFields with a JSON patch): works, both versions."""
    hub = module_hub
    for version in ("1.27", "1.33"):
        name = f"csa-{version.replace('.', '')}"
        a = agent(name, ns)
        kubectl_v(hub, version, "apply", "-f", "-", input=json.dumps(a))
        a["spec"]["approved"] = True
        r = kubectl_v(hub, version, "apply", "--server-side", "-f", "-", input=json.dumps(a), check=False)
        # kube-apiserver reports the client-side applier's ownership of a changed field
        assert r.returncode != 0 and ".spec.approved" in r.stderr, r.stderr
        r = kubectl_v(hub, version, "apply", "--server-side", "--force-conflicts", "-f", "-", input=json.dumps(a))
        assert "serverside-applied" in r.stdout
        got = hub.get_json(agent_path(ns, name))
        assert got["spec"]["approved"] is True
        assert ("kubectl", "Apply", "") in managed(got)
