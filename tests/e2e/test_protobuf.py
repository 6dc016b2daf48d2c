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


# ---- Reading protobuf replies (upstream field numbers, written out here
# independently of src/kube/proto/*.proto) ----

def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def fields(b):
    """(number, wire type, value) of each field of a message."""
    i, out = 0, []
    while i < len(b):
        key, i = read_varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(b, i)
        elif wt == 2:
            ln, i = read_varint(b, i)
            v, i = bytes(b[i:i + ln]), i + ln
        else:
            raise AssertionError(f"unexpected wire type {wt}")
        out.append((num, wt, v))
    return out


def time_of(b, micro=False):
    import datetime
    f = {n: v for n, _, v in fields(b)}
    t = datetime.datetime.fromtimestamp(f.get(1, 0), datetime.timezone.utc)
    base = t.strftime("%Y-%m-%dT%H:%M:%S")
    return base + (f".{f.get(2, 0) // 1000:06d}Z" if micro else "Z")


S, I, B, BYTES = "s", "i", "b", "bytes"
TIME, MTIME = "time", "microtime"
OWNER = {1: ("kind", S), 3: ("name", S), 4: ("uid", S), 5: ("apiVersion", S),
         6: ("controller", B), 7: ("blockOwnerDeletion", B)}
MANAGED = {1: ("manager", S), 2: ("operation", S), 3: ("apiVersion", S), 4: ("time", TIME),
           6: ("fieldsType", S), 7: ("fieldsV1", "fieldsv1"), 8: ("subresource", S)}
META = {1: ("name", S), 2: ("generateName", S), 3: ("namespace", S), 5: ("uid", S),
        6: ("resourceVersion", S), 7: ("generation", I), 8: ("creationTimestamp", TIME),
        9: ("deletionTimestamp", TIME), 11: ("labels", ("map", S)),
        12: ("annotations", ("map", S)), 13: ("ownerReferences", ("list", OWNER)),
        14: ("finalizers", ("list", S)), 17: ("managedFields", ("list", MANAGED))}
REF = {1: ("kind", S), 2: ("namespace", S), 3: ("name", S), 4: ("uid", S), 5: ("apiVersion", S)}
KINDS = {
    "Namespace": {1: ("metadata", META), 2: ("spec", {1: ("finalizers", ("list", S))}),
                  3: ("status", {1: ("phase", S)})},
    "Secret": {1: ("metadata", META), 2: ("data", ("map", BYTES)), 3: ("type", S),
               5: ("immutable", B)},
    "ConfigMap": {1: ("metadata", META), 2: ("data", ("map", S)),
                  3: ("binaryData", ("map", BYTES)), 4: ("immutable", B)},
    "Lease": {1: ("metadata", META), 2: ("spec", {
        1: ("holderIdentity", S), 2: ("leaseDurationSeconds", I), 3: ("acquireTime", MTIME),
        4: ("renewTime", MTIME), 5: ("leaseTransitions", I)})},
    "Event": {1: ("metadata", META), 2: ("eventTime", MTIME), 4: ("reportingController", S),
              5: ("reportingInstance", S), 6: ("action", S), 7: ("reason", S),
              8: ("regarding", REF), 10: ("note", S), 11: ("type", S)},
}


def value_of(t, wt, v):
    import base64
    if t == S:
        return v.decode()
    if t == I:
        return v
    if t == B:
        return bool(v)
    if t == BYTES:
        return base64.b64encode(v).decode()
    if t == TIME:
        return time_of(v)
    if t == MTIME:
        return time_of(v, micro=True)
    if t == "fieldsv1":
        return json.loads(dict((n, x) for n, _, x in fields(v))[1])
    return decode_msg(v, t)


def decode_msg(b, schema):
    out = {}
    for num, wt, v in fields(b):
        assert num in schema, f"field {num} not expected in {schema}"
        name, t = schema[num]
        if isinstance(t, tuple) and t[0] == "map":
            e = {n: x for n, _, x in fields(v)}
            out.setdefault(name, {})[e[1].decode()] = value_of(t[1], 2, e.get(2, b""))
        elif isinstance(t, tuple) and t[0] == "list":
            out.setdefault(name, []).append(value_of(t[1], wt, v))
        else:
            out[name] = value_of(t, wt, v)
    return out


def pb_json(r):
    """A protobuf reply as the JSON object it encodes (checks the envelope)."""
    assert r.headers["content-type"] == PB, r.headers
    body = r.body
    assert body[:4] == b"k8s\x00", body[:8]
    env = {n: v for n, _, v in fields(body[4:])}
    tm = {n: v.decode() for n, _, v in fields(env[1])}
    av, kind = tm[1], tm[2]
    if kind.endswith("List"):
        items, meta = [], {}
        for n, _, v in fields(env.get(2, b"")):
            if n == 1:
                meta = decode_msg(v, {2: ("resourceVersion", S), 3: ("continue", S)})
            else:
                items.append(decode_msg(v, KINDS[kind[:-4]]))
        return {"apiVersion": av, "kind": kind, "metadata": meta, "items": items}
    return {"apiVersion": av, "kind": kind, **decode_msg(env.get(2, b""), KINDS[kind])}


def post(hub, path, body, headers=ACCEPT):
    return hub.request("POST", path, body, content_type=PB, headers=headers)


def test_protobuf_creates_of_built_in_kinds(module_hub):
    hub = module_hub
    ns = "pb-create"
    r = post(hub, "/api/v1/namespaces",
             envelope("v1", "Namespace", msg((1, meta(ns, labels={"team": "a"})))))
    assert r.status == 201, r
    # The client asked for protobuf first: the reply is protobuf.
    got = pb_json(r)
    assert got["kind"] == "Namespace" and got["metadata"]["name"] == ns
    assert got["metadata"]["labels"] == {"team": "a", "kubernetes.io/metadata.name": ns}

    # Secret: data is map<string, bytes> (field 2), type field 3.
    r = post(hub, f"/api/v1/namespaces/{ns}/secrets", envelope("v1", "Secret", msg(
        (1, meta("s1")), *map_entries(2, {"key": b"\x00\xffbin"}),
        *map_entries(4, {"plain": "text"}))))
    assert r.status == 201, r
    s = pb_json(r)
    assert s["type"] == "Opaque"
    assert s["data"] == {"key": "AP9iaW4=", "plain": "dGV4dA=="}
    assert "stringData" not in s

    # ConfigMap with immutable (field 4) and binaryData (field 3).
    r = post(hub, f"/api/v1/namespaces/{ns}/configmaps", envelope("v1", "ConfigMap", msg(
        (1, meta("c1")), *map_entries(2, {"a": "1"}), *map_entries(3, {"b": b"\x01"}),
        (4, True))))
    assert r.status == 201, r
    c = pb_json(r)
    assert c["data"] == {"a": "1"} and c["binaryData"] == {"b": "AQ=="} and c["immutable"] is True

    # Lease: MicroTime renewTime (field 4: seconds 1, nanos 2).
    r = post(hub, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
             envelope("coordination.k8s.io/v1", "Lease", msg(
                 (1, meta("leader")),
                 (2, msg((1, "pod-a"), (2, 15), (4, msg((1, 1767225600), (2, 250000000))),
                         (5, 2))))))
    assert r.status == 201, r
    spec = pb_json(r)["spec"]
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
    ev = pb_json(r)
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
    assert pb_json(r)["data"] == {"k": "dg=="} and pb_json(r)["type"] == "Opaque"

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


def test_protobuf_first_accept_headers_get_protobuf(module_hub):
    """client-go asks for protobuf first ("application/vnd.kubernetes.protobuf,
    application/json", or ", */*"); for built-in kinds the hub answers
    protobuf, as kube-apiserver does (gets and lists, with the list's
    metadata); custom resources, tables and a JSON-first Accept get JSON."""
    hub = module_hub
    ns = hub.create_namespace("pb-accept")
    hub.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "one", "labels": {"a": "b"}},
                            "data": {"k": "v"}}))
    for accept in ("application/vnd.kubernetes.protobuf, */*",
                   "application/vnd.kubernetes.protobuf,application/json",
                   "application/json;q=0.5, application/vnd.kubernetes.protobuf"):
        r = hub.get(f"/api/v1/namespaces/{ns}", headers={"Accept": accept})
        assert r.status == 200, (accept, r)
        o = pb_json(r)
        assert (o["apiVersion"], o["kind"], o["metadata"]["name"]) == ("v1", "Namespace", ns)
        assert o["metadata"]["labels"] == {"kubernetes.io/metadata.name": ns}
        assert o == {k: v for k, v in hub.get_json(f"/api/v1/namespaces/{ns}").items()}, o
        r = hub.get(f"/api/v1/namespaces/{ns}/configmaps", headers={"Accept": accept})
        lst = pb_json(r)
        want = hub.get_json(f"/api/v1/namespaces/{ns}/configmaps")
        assert lst["kind"] == "ConfigMapList"
        assert lst["metadata"]["resourceVersion"] == want["metadata"]["resourceVersion"]
        assert [{k: v for k, v in i.items()} for i in lst["items"]] == [
            {k: v for k, v in i.items() if k not in ("apiVersion", "kind")} for i in want["items"]]
        r = hub.get(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", headers={"Accept": accept})
        leases = pb_json(r)
        assert (leases["apiVersion"], leases["kind"], leases["items"]) == (
            "coordination.k8s.io/v1", "LeaseList", []), leases
        assert int(leases["metadata"]["resourceVersion"]) > 0
    # Pagination: the continue token travels in the list's metadata.
    hub.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}}))
    r = hub.get(f"/api/v1/namespaces/{ns}/configmaps?limit=1", headers=ACCEPT)
    page = pb_json(r)
    assert [i["metadata"]["name"] for i in page["items"]] == ["one"] and page["metadata"]["continue"]
    # JSON first, custom resources (no protobuf form) and q=0: JSON.
    for path, accept in ((f"/api/v1/namespaces/{ns}", "application/json, application/vnd.kubernetes.protobuf"),
                         (f"/api/v1/namespaces/{ns}", "application/vnd.kubernetes.protobuf;q=0, application/json"),
                         (f"/apis/agent-install.openshift.io/v1beta1/namespaces/{ns}/agents", ACCEPT["Accept"])):
        r = hub.get(path, headers={"Accept": accept})
        assert r.status == 200 and r.headers["content-type"].startswith("application/json"), (path, accept, r)
        assert r.json()["kind"] in ("Namespace", "AgentList")
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
        evs = w.events_until(lambda e: any(x["object"]["metadata"]["name"] == "w1" for x in e), 10)
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [
            ("ADDED", "one"), ("ADDED", "two"), ("ADDED", "w1")]
    finally:
        w.close()


def read_frames(resp, n, timeout=10):
    """n length-delimited WatchEvent frames of a protobuf watch stream, each
    as (type, object as JSON)."""
    out = []
    for _ in range(n):
        size = int.from_bytes(resp.read(4), "big")
        ev = {num: v for num, _, v in fields(resp.read(size))}
        raw = {num: v for num, _, v in fields(ev[2])}[1]

        class R:  # pb_json reads .headers and .body
            headers = {"content-type": PB}
            body = raw
        out.append((ev[1].decode(), pb_json(R)))
    return out


def test_protobuf_watch_stream(module_hub):
    """A watch whose client asks for protobuf first gets kube-apiserver's
    protobuf stream: application/vnd.kubernetes.protobuf;stream=watch, each
    event a 4-byte big-endian length and a WatchEvent whose object is the
    object's own enveloped protobuf body; bookmarks and the 410 ERROR too."""
    hub = module_hub
    ns = hub.create_namespace("pb-watch")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}
    hub.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json.dumps(cm))
    conn = hub.connection(timeout=10)
    conn.request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&allowWatchBookmarks=true"
                 "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=20",
                 headers={"Authorization": f"Bearer {hub.token}", **ACCEPT})
    resp = conn.getresponse()
    try:
        assert resp.status == 200
        assert resp.getheader("Content-Type") == PB + ";stream=watch"
        (t1, o1), (t2, o2) = read_frames(resp, 2)
        assert (t1, o1["kind"], o1["metadata"]["name"], o1["data"]) == ("ADDED", "ConfigMap", "a", {"x": "1"})
        assert t2 == "BOOKMARK" and o2["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
        hub.request("PATCH", f"/api/v1/namespaces/{ns}/configmaps/a", json.dumps({"data": {"x": "2"}}),
                    content_type="application/merge-patch+json")
        hub.request("DELETE", f"/api/v1/namespaces/{ns}/configmaps/a")
        (t3, o3), (t4, o4) = read_frames(resp, 2)
        assert (t3, o3["data"]) == ("MODIFIED", {"x": "2"})
        assert (t4, o4["metadata"]["name"]) == ("DELETED", "a")
    finally:
        conn.close()


def test_protobuf_watch_410_is_a_status_frame(module_hub_factory):
    """A watch from a revision older than the compacted one: one ERROR frame
    whose object is a protobuf Status (Failure, Expired, 410)."""
    hub = module_hub_factory(extra_args=["--event-log-keep", "20"], name="pb410")
    ns = hub.create_namespace("pb-gone")
    for i in range(40):
        hub.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}}))
    conn = hub.connection(timeout=10)
    conn.request("GET", f"/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=2",
                 headers={"Authorization": f"Bearer {hub.token}", **ACCEPT})
    resp = conn.getresponse()
    try:
        assert resp.getheader("Content-Type") == PB + ";stream=watch"
        size = int.from_bytes(resp.read(4), "big")
        ev = {num: v for num, _, v in fields(resp.read(size))}
        assert ev[1] == b"ERROR"
        raw = {num: v for num, _, v in fields(ev[2])}[1]
        assert raw[:4] == b"k8s\x00"
        env = {num: v for num, _, v in fields(raw[4:])}
        assert {num: v for num, _, v in fields(env[1])} == {1: b"v1", 2: b"Status"}
        st = {num: v for num, _, v in fields(env[2])}
        assert (st[2], st[4], st[6]) == (b"Failure", b"Expired", 410), st
        assert st[3].startswith(b"too old resource version: 2 ("), st
        assert resp.read() == b""  # the stream ends after it
    finally:
        conn.close()
