"""Protobuf request bodies (application/vnd.kubernetes.protobuf) over raw
HTTPS, the way client-go and controller-runtime send built-in kinds: the
"k8s\\0" magic, then a runtime.Unknown holding the object's own message.
The bodies are encoded here by hand from the upstream field numbers, so this
also checks the numbers in src/kube/proto/*.proto.  Replies are JSON (the
client lists application/json as acceptable)."""

import json

from conftest import status_shape

PB = "application/vnd.kubernetes.protobuf"
ACCEPT = {"Accept": "application/vnd.kubernetes.protobuf, application/json"}


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, value):
    """One field: bytes/str/dict-encoded message as length-delimited,
    int as varint, bool as varint."""
    if isinstance(value, bool):
        return varint(num << 3) + varint(int(value))
    if isinstance(value, int):
        return varint(num << 3) + varint(value)
    if isinstance(value, str):
        value = value.encode()
    return varint((num << 3) | 2) + varint(len(value)) + value


def msg(*fields):
    return b"".join(field(n, v) for n, v in fields if v is not None)


def map_entries(num, d):
    return [(num, msg((1, k), (2, v))) for k, v in d.items()]


def meta(name=None, namespace=None, labels=None, generate_name=None):
    return msg((1, name), (2, generate_name), (3, namespace), *map_entries(11, labels or {}))


def envelope(api_version, kind, raw):
    return b"k8s\x00" + msg((1, msg((1, api_version), (2, kind))), (2, raw), (3, ""), (4, ""))


def post(hub, path, body, headers=ACCEPT):
    return hub.request("POST", path, body, content_type=PB, headers=headers)


def test_protobuf_creates_of_built_in_kinds(module_hub):
    hub = module_hub
    ns = "pb-create"
    r = post(hub, "/api/v1/namespaces",
             envelope("v1", "Namespace", msg((1, meta(ns, labels={"team": "a"})))))
    assert r.status == 201, r
    assert r.headers["content-type"].startswith("application/json")
    got = r.json()
    assert got["kind"] == "Namespace" and got["metadata"]["name"] == ns
    assert got["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": ns}

    # Secret: data is map<string, bytes> (field 2), type field 3.
    r = post(hub, f"/api/v1/namespaces/{ns}/secrets", envelope("v1", "Secret", msg(
        (1, meta("s1")), *map_entries(2, {"key": b"\x00\xffbin"}),
        *map_entries(4, {"plain": "text"}))))
    assert r.status == 201, r
    s = r.json()
    assert s["type"] == "Opaque"
    assert s["data"] == {"key": "AP9iaW4=", "plain": "dGV4dA=="}
    assert "stringData" not in s

    # ConfigMap with immutable (field 4) and binaryData (field 3).
    r = post(hub, f"/api/v1/namespaces/{ns}/configmaps", envelope("v1", "ConfigMap", msg(
        (1, meta("c1")), *map_entries(2, {"a": "1"}), *map_entries(3, {"b": b"\x01"}),
        (4, True))))
    assert r.status == 201, r
    c = r.json()
    assert c["data"] == {"a": "1"} and c["binaryData"] == {"b": "AQ=="} and c["immutable"] is True

    # Lease: MicroTime renewTime (field 4: seconds 1, nanos 2).
    r = post(hub, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
             envelope("coordination.k8s.io/v1", "Lease", msg(
                 (1, meta("leader")),
                 (2, msg((1, "pod-a"), (2, 15), (4, msg((1, 1767225600), (2, 250000000))),
                         (5, 2))))))
    assert r.status == 201, r
    spec = r.json()["spec"]
    assert spec == {"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
                    "renewTime": "2026-01-01T00:00:00.250000Z", "leaseTransitions": 2}, spec

    # events.k8s.io Event: note (10), regarding (8), reportingController (4).
    r = post(hub, f"/apis/events.k8s.io/v1/namespaces/{ns}/events",
             envelope("events.k8s.io/v1", "Event", msg(
                 (1, meta("c1.1")), (2, msg((1, 1767225600))), (4, "example.com/ctl"),
                 (5, "i-1"), (6, "Sync"), (7, "Synced"),
                 (8, msg((1, "ConfigMap"), (2, ns), (3, "c1"), (5, "v1"))),
                 (10, "hello"), (11, "Normal"))))
    assert r.status == 201, r
    ev = r.json()
    assert ev["apiVersion"] == "events.k8s.io/v1" and ev["note"] == "hello"
    assert ev["regarding"]["name"] == "c1"
    core = hub.get_json(f"/api/v1/namespaces/{ns}/events/c1.1")
    assert core["message"] == "hello" and core["involvedObject"]["kind"] == "ConfigMap"
    assert core["reportingComponent"] == "example.com/ctl"

    # PUT with a protobuf body; a Secret's type cannot change.
    rv = hub.get_json(f"/api/v1/namespaces/{ns}/secrets/s1")["metadata"]["resourceVersion"]
    m = msg((1, "s1"), (6, rv))
    r = hub.request("PUT", f"/api/v1/namespaces/{ns}/secrets/s1",
                    envelope("v1", "Secret", msg((1, m), *map_entries(2, {"k": b"v"}),
                                                 (3, "example.com/x"))),
                    content_type=PB, headers=ACCEPT)
    st = r.json()
    status_shape(st, 422, "Invalid")
    assert [c["field"] for c in st["details"]["causes"]] == ["type"], st
    r = hub.request("PUT", f"/api/v1/namespaces/{ns}/secrets/s1",
                    envelope("v1", "Secret", msg((1, m), *map_entries(2, {"k": b"v"}))),
                    content_type=PB, headers=ACCEPT)
    assert r.status == 200, r
    assert r.json()["data"] == {"k": "dg=="} and r.json()["type"] == "Opaque"

    # DELETE with protobuf DeleteOptions (client-go sends them so): a
    # precondition on a wrong uid is refused, dryRun deletes nothing.
    opts = envelope("v1", "DeleteOptions", msg((2, msg((1, "not-the-uid")))))
    r = hub.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/c1", opts,
                    content_type=PB, headers=ACCEPT)
    assert r.status == 409, r
    opts = envelope("v1", "DeleteOptions", msg((5, "All")))
    r = hub.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/c1", opts,
                    content_type=PB, headers=ACCEPT)
    assert r.status == 200, r
    assert hub.get(f"/api/v1/namespaces/{ns}/configmaps/c1").status == 200
    opts = envelope("v1", "DeleteOptions", msg((4, "Background")))
    r = hub.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/c1", opts,
                    content_type=PB, headers=ACCEPT)
    assert r.status == 200, r
    assert hub.get(f"/api/v1/namespaces/{ns}/configmaps/c1").status == 404


def test_protobuf_rejections(module_hub):
    hub = module_hub
    hub.create_namespace("pb-bad")
    # JSON sent under the protobuf content type.
    r = post(hub, "/api/v1/namespaces/pb-bad/configmaps",
             json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}))
    status_shape(r.json(), 400, "BadRequest")
    assert "protobuf" in r.json()["message"]
    # A truncated object.
    body = envelope("v1", "ConfigMap", msg((1, meta("x")), *map_entries(2, {"a": "1"})))
    r = post(hub, "/api/v1/namespaces/pb-bad/configmaps", body[:-3])
    status_shape(r.json(), 400, "BadRequest")
    # Custom resources have no protobuf form: 415, as kube-apiserver says.
    r = post(hub, "/apis/agent-install.openshift.io/v1beta1/namespaces/pb-bad/agents",
             envelope("agent-install.openshift.io/v1beta1", "Agent", msg((1, meta("a")))))
    status_shape(r.json(), 415, "UnsupportedMediaType")
    # The envelope's kind must be the URL's.
    r = post(hub, "/api/v1/namespaces/pb-bad/configmaps",
             envelope("v1", "Secret", msg((1, meta("x")))))
    assert r.status == 400, r
    assert hub.get("/api/v1/namespaces/pb-bad/configmaps/x").status == 404


def test_protobuf_first_accept_headers_get_json(module_hub):
    """client-go asks for protobuf first ("application/vnd.kubernetes.protobuf,
    application/json", or ", */*"); the hub answers JSON, which the client
    decodes by the reply's Content-Type, for gets, lists, tables and watches."""
    hub = module_hub
    ns = hub.create_namespace("pb-accept")
    for accept in ("application/vnd.kubernetes.protobuf, */*",
                   "application/vnd.kubernetes.protobuf,application/json"):
        for path in (f"/api/v1/namespaces/{ns}", f"/api/v1/namespaces/{ns}/configmaps",
                     f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"):
            r = hub.get(path, headers={"Accept": accept})
            assert r.status == 200, (accept, path, r)
            assert r.headers["content-type"].startswith("application/json"), r.headers
            assert r.json()["kind"] in ("Namespace", "ConfigMapList", "LeaseList")
    r = hub.get(f"/api/v1/namespaces/{ns}/configmaps", headers={
        "Accept": "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,"
                  "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    assert r.status == 200 and r.json()["kind"] == "Table", r
    assert [c["name"] for c in r.json()["columnDefinitions"]] == ["Name", "Data", "Age"]
    w = hub.watch(f"/api/v1/namespaces/{ns}/configmaps?watch=true&timeoutSeconds=5")
    try:
        assert w.status == 200
        hub.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                    envelope("v1", "ConfigMap", msg((1, meta("w1")))), content_type=PB,
                    headers=ACCEPT)
        ev = w.events_until(lambda e: len(e) >= 1, 10)[0]
        assert (ev["type"], ev["object"]["metadata"]["name"]) == ("ADDED", "w1")
    finally:
        w.close()
