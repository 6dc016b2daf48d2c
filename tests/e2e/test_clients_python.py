"""The official Python client (Debian python3-kubernetes) against the hub:
CustomObjectsApi CRUD on Agents and InfraEnvs, list + watch from a
resourceVersion with timeout_seconds, 410 Gone on a compacted event log and
the re-list that recovers from it, the dynamic client, CoreV1Api secrets,
configmaps, namespaces and events, CoordinationV1Api leases and EventsV1Api
events (stored as core Events).
"""

import base64
import datetime
import json
import time
import uuid

import pytest


kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, dynamic, watch  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

AI = ("agent-install.openshift.io", "v1beta1")


def api_client(hub):
    return config.new_client_from_config(config_file=str(hub.kubeconfig))


def agent(name, ns, **spec):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name, "namespace": ns, "labels": {"pool": "a"}},
            "spec": {"approved": False, "role": "", **spec}}


@pytest.fixture(scope="module")
def pyhub(module_hub_factory):
    # A short event log, so a watch from an old resourceVersion gets 410.
    return module_hub_factory(extra_args=["--event-log-keep", "20"], name="pyhub")


@pytest.fixture(scope="module")
def apic(pyhub):
    c = api_client(pyhub)
    yield c
    c.close()


def make_ns(apic, name):
    core = client.CoreV1Api(apic)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def test_custom_objects_crud(pyhub, apic):
    ns = make_ns(apic, "py-crud")
    co = client.CustomObjectsApi(apic)
    name = str(uuid.uuid4())
    created = co.create_namespaced_custom_object(*AI, ns, "agents", agent(name, ns))
    assert created["metadata"]["name"] == name and created["metadata"]["uid"]
    got = co.get_namespaced_custom_object(*AI, ns, "agents", name)
    assert got["spec"]["approved"] is False
    patched = co.patch_namespaced_custom_object(*AI, ns, "agents", name,
                                                {"spec": {"approved": True}})
    assert patched["spec"]["approved"] is True
    patched["metadata"]["labels"]["pool"] = "b"
    replaced = co.replace_namespaced_custom_object(*AI, ns, "agents", name, patched)
    assert replaced["metadata"]["labels"]["pool"] == "b"
    lst = co.list_namespaced_custom_object(*AI, ns, "agents", label_selector="pool=b")
    assert [i["metadata"]["name"] for i in lst["items"]] == [name]
    # json-patch through the status subresource
    st = co.patch_namespaced_custom_object_status(
        *AI, ns, "agents", name,
        {"status": {"conditions": [{"type": "Py", "status": "True", "reason": "Test",
                                    "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    assert any(c["type"] == "Py" for c in st["status"]["conditions"])
    # InfraEnv, with the pull secret it names.
    core = client.CoreV1Api(apic)
    core.create_namespaced_secret(ns, client.V1Secret(
        metadata=client.V1ObjectMeta(name="pull-secret"),
        string_data={".dockerconfigjson": '{"auths":{"x":{"auth":"eDp5"}}}'},
        type="kubernetes.io/dockerconfigjson"))
    ie = co.create_namespaced_custom_object(*AI, ns, "infraenvs", {
        "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
        "metadata": {"name": "ie"}, "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    assert ie["spec"]["pullSecretRef"]["name"] == "pull-secret"
    co.delete_namespaced_custom_object(*AI, ns, "infraenvs", "ie")
    co.delete_namespaced_custom_object(*AI, ns, "agents", name)
    with pytest.raises(ApiException) as e:
        co.get_namespaced_custom_object(*AI, ns, "agents", name + "-nope")
    assert e.value.status == 404


def test_list_then_watch_from_resource_version(pyhub, apic):
    ns = make_ns(apic, "py-watch")
    co = client.CustomObjectsApi(apic)
    co.create_namespaced_custom_object(*AI, ns, "agents", agent("a0", ns))
    lst = co.list_namespaced_custom_object(*AI, ns, "agents")
    rv = lst["metadata"]["resourceVersion"]
    co.create_namespaced_custom_object(*AI, ns, "agents", agent("a1", ns))
    co.patch_namespaced_custom_object(*AI, ns, "agents", "a1", {"spec": {"approved": True}})
    co.delete_namespaced_custom_object(*AI, ns, "agents", "a0")
    seen = []
    w = watch.Watch()
    for ev in w.stream(co.list_namespaced_custom_object, *AI, ns, "agents",
                       resource_version=rv, timeout_seconds=5):
        seen.append((ev["type"], ev["object"]["metadata"]["name"]))
        if len(seen) >= 3:
            w.stop()
    assert seen[:3] == [("ADDED", "a1"), ("MODIFIED", "a1"), ("DELETED", "a0")], seen


def test_watch_410_gone_then_relist(pyhub, apic):
    ns = make_ns(apic, "py-gone")
    core = client.CoreV1Api(apic)
    core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="c0"), data={"k": "v"}))
    old_rv = core.list_namespaced_config_map(ns).metadata.resource_version
    # More writes than the event log keeps (--event-log-keep 20).
    for i in range(1, 41):
        core.create_namespaced_config_map(ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name=f"c{i}"), data={"k": "v"}))
    with pytest.raises(ApiException) as e:
        for _ in watch.Watch().stream(core.list_namespaced_config_map, ns,
                                      resource_version=old_rv, timeout_seconds=5):
            pass
    assert e.value.status == 410, e.value
    # Recovery as the client's documentation says: list, then watch from there.
    lst = core.list_namespaced_config_map(ns)
    assert len(lst.items) == 41
    rv = lst.metadata.resource_version
    core.delete_namespaced_config_map("c7", ns)
    w = watch.Watch()
    evs = []
    for ev in w.stream(core.list_namespaced_config_map, ns, resource_version=rv,
                       timeout_seconds=5):
        evs.append((ev["type"], ev["object"].metadata.name))
        w.stop()
    assert evs == [("DELETED", "c7")]


def test_dynamic_client(pyhub, apic):
    ns = make_ns(apic, "py-dyn")
    dyn = dynamic.DynamicClient(apic)
    agents = dyn.resources.get(api_version="agent-install.openshift.io/v1beta1", kind="Agent")
    agents.create(body=agent("d1", ns), namespace=ns)
    got = agents.get(name="d1", namespace=ns)
    assert got.metadata.name == "d1" and got.spec.approved is False
    agents.patch(name="d1", namespace=ns, body={"spec": {"approved": True}},
                 content_type="application/merge-patch+json")
    assert agents.get(name="d1", namespace=ns).spec.approved is True
    assert [i.metadata.name for i in agents.get(namespace=ns).items] == ["d1"]
    cms = dyn.resources.get(api_version="v1", kind="ConfigMap")
    cms.create(body={"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "dc"}, "data": {"a": "b"}}, namespace=ns)
    assert cms.get(name="dc", namespace=ns).data.a == "b"
    leases = dyn.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    assert leases.namespaced
    agents.delete(name="d1", namespace=ns)


def test_core_v1_secrets_configmaps_namespaces_events(pyhub, apic):
    core = client.CoreV1Api(apic)
    ns = make_ns(apic, "py-core")
    nso = core.read_namespace(ns)
    assert nso.metadata.labels["kubernetes.io/metadata.name"] == ns
    assert nso.status.phase == "Active"
    assert ns in [n.metadata.name for n in core.list_namespace().items]
    s = core.create_namespaced_secret(ns, client.V1Secret(
        metadata=client.V1ObjectMeta(name="s1"), string_data={"password": "hunter2"}))
    assert s.type == "Opaque"
    assert base64.b64decode(core.read_namespaced_secret("s1", ns).data["password"]) == b"hunter2"
    core.patch_namespaced_secret("s1", ns, {"metadata": {"labels": {"x": "y"}}})
    assert [i.metadata.name for i in core.list_namespaced_secret(ns, label_selector="x=y").items] \
        == ["s1"]
    core.create_namespaced_config_map(ns, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="cm1"), data={"a": "1"}))
    cm = core.read_namespaced_config_map("cm1", ns)
    cm.data["b"] = "2"
    core.replace_namespaced_config_map("cm1", ns, cm)
    assert core.read_namespaced_config_map("cm1", ns).data == {"a": "1", "b": "2"}
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    core.create_namespaced_event(ns, client.CoreV1Event(
        metadata=client.V1ObjectMeta(name="cm1.1"),
        involved_object=client.V1ObjectReference(kind="ConfigMap", name="cm1", namespace=ns,
                                                 api_version="v1"),
        reason="Checked", message="by python", type="Normal", count=1,
        first_timestamp=now, last_timestamp=now,
        source=client.V1EventSource(component="pytest")))
    evs = core.list_namespaced_event(
        ns, field_selector="involvedObject.kind=ConfigMap,involvedObject.name=cm1").items
    assert [(e.reason, e.message) for e in evs] == [("Checked", "by python")]
    core.delete_namespaced_config_map("cm1", ns)
    core.delete_namespaced_secret("s1", ns)
    assert core.list_namespaced_secret(ns).items == []


def test_coordination_v1_leases(pyhub, apic):
    ns = make_ns(apic, "py-lease")
    co = client.CoordinationV1Api(apic)
    now = datetime.datetime.now(datetime.timezone.utc)
    co.create_namespaced_lease(ns, client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="me", lease_duration_seconds=15,
                                acquire_time=now, renew_time=now, lease_transitions=0)))
    lease = co.read_namespaced_lease("leader", ns)
    assert lease.spec.holder_identity == "me" and lease.spec.lease_duration_seconds == 15
    # Leader election renews with an update carrying the resourceVersion it read.
    lease.spec.renew_time = now + datetime.timedelta(seconds=5)
    lease.spec.holder_identity = "you"
    lease.spec.lease_transitions = 1
    co.replace_namespaced_lease("leader", ns, lease)
    with pytest.raises(ApiException) as e:  # a stale resourceVersion conflicts
        co.replace_namespaced_lease("leader", ns, lease)
    assert e.value.status == 409
    got = co.read_namespaced_lease("leader", ns)
    assert got.spec.holder_identity == "you" and got.spec.lease_transitions == 1
    assert [lz.metadata.name for lz in co.list_namespaced_lease(ns).items] == ["leader"]
    co.delete_namespaced_lease("leader", ns)
    assert co.list_namespaced_lease(ns).items == []


def test_events_v1_events_share_core_storage(pyhub, apic):
    ns = make_ns(apic, "py-events")
    ev1 = client.EventsV1Api(apic)
    core = client.CoreV1Api(apic)
    now = datetime.datetime.now(datetime.timezone.utc)
    ev1.create_namespaced_event(ns, client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="agent.1"), event_time=now,
        reporting_controller="example.com/ctl", reporting_instance="ctl-1", action="Reconcile",
        reason="Synced", note="synced fine", type="Normal",
        regarding=client.V1ObjectReference(kind="Agent", name="a", namespace=ns,
                                           api_version="agent-install.openshift.io/v1beta1")))
    got = ev1.read_namespaced_event("agent.1", ns)
    assert got.note == "synced fine" and got.regarding.name == "a"
    assert got.reporting_controller == "example.com/ctl"
    # The same object as a core Event, with the core field names.
    cev = core.read_namespaced_event("agent.1", ns)
    assert cev.message == "synced fine" and cev.involved_object.kind == "Agent"
    assert cev.reporting_component == "example.com/ctl"
    ev1.patch_namespaced_event("agent.1", ns, {"note": "patched"})
    assert core.read_namespaced_event("agent.1", ns).message == "patched"
    assert [e.note for e in ev1.list_namespaced_event(ns).items] == ["patched"]
    ev1.delete_namespaced_event("agent.1", ns)
    assert core.list_namespaced_event(ns).items == []


def test_watch_bookmarks_and_timeout(pyhub, apic):
    """allow_watch_bookmarks: the client gets a BOOKMARK (a raw object with
    only its resourceVersion) before the server's timeout, as kube-apiserver
    sends one shortly before a watch's deadline, and the stream ends at
    timeout_seconds.  (This client has no sendInitialEvents parameter; the
    raw-HTTP tests cover that.)"""
    ns = make_ns(apic, "py-bookmark")
    core = client.CoreV1Api(apic)
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b0")))
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b1")))
    w = watch.Watch()
    seen = []
    start = time.time()
    for ev in w.stream(core.list_namespaced_config_map, ns, allow_watch_bookmarks=True,
                       resource_version=rv, timeout_seconds=4):
        if ev["type"] == "BOOKMARK":
            seen.append(("BOOKMARK", ev["raw_object"]["metadata"]["resourceVersion"]))
        else:
            seen.append((ev["type"], ev["object"].metadata.name))
    elapsed = time.time() - start
    assert seen[0] == ("ADDED", "b1"), seen
    assert seen[1][0] == "BOOKMARK" and int(seen[1][1]) > int(rv), seen
    assert len(seen) == 2, seen
    assert 3 <= elapsed < 15, elapsed  # the server ended the stream at its timeout


def test_dynamic_client_server_side_apply(pyhub, apic):
    ns = make_ns(apic, "py-ssa")
    dyn = dynamic.DynamicClient(apic)
    agents = dyn.resources.get(api_version="agent-install.openshift.io/v1beta1", kind="Agent")
    # This client's REST layer sends an apply-patch+yaml body only as text
    # (JSON is YAML).
    body = json.dumps(agent("s1", ns))
    got = agents.server_side_apply(body=body, name="s1", namespace=ns, field_manager="py-applier")
    assert got.metadata.name == "s1"
    mf = [(e.manager, e.operation) for e in got.metadata.managedFields]
    assert ("py-applier", "Apply") in mf, mf
    # Another manager changes a field the applier owns: conflict, then force.
    agents.patch(name="s1", namespace=ns, body={"spec": {"approved": True}},
                 content_type="application/merge-patch+json", field_manager="other")
    with pytest.raises(ApiException) as e:
        agents.server_side_apply(body=body, name="s1", namespace=ns, field_manager="py-applier")
    body409 = e.value.body.decode() if isinstance(e.value.body, bytes) else e.value.body
    assert e.value.status == 409 and 'conflict with \\"other\\"' in body409, body409
    got = agents.server_side_apply(body=body, name="s1", namespace=ns, field_manager="py-applier",
                                   force_conflicts=True)
    assert got.spec.approved is False
