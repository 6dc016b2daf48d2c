"""Bad input gets a Kubernetes Status (the shape kubectl and client-go parse),
with the field path and the reason; the daemon stays up after every one."""

import http.client
import json
import ssl
import uuid

import pytest

from conftest import status_shape

NS = "errs"
API_AI = "/apis/agent-install.openshift.io/v1beta1"
API_EXT = "/apis/extensions.hive.openshift.io/v1beta1"
AGENTS = f"{API_AI}/namespaces/{NS}/agents"
CMS = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module")
def hub(module_hub):
    module_hub.create_namespace(NS)
    return module_hub


@pytest.fixture(autouse=True)
def stays_up(hub):
    yield
    assert hub.alive(), f"agenthub died:\n{hub.log_text()[-4000:]}"
    assert hub.readyz(), "agenthub not ready after the bad request"


def agent(name=None, **spec):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "Agent",
            "metadata": {"name": name or str(uuid.uuid4()), "namespace": NS},
            "spec": spec}


def causes(body):
    return body.get("details", {}).get("causes", [])


def invalid(body, name, kind, group):
    """A 422 Invalid Status for one object."""
    status_shape(body, 422, "Invalid")
    d = body["details"]
    assert d["name"] == name and d["kind"] == kind and d["group"] == group, d
    assert body["message"].startswith(f'{kind}.{group} "{name}" is invalid: '), body["message"]


def test_wrong_type_kubectl(hub):
    a = agent(approved="string", role="")
    r = hub.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(a), check=False)
    assert r.returncode != 0
    assert ('spec.approved: Invalid value: "string": spec.approved in body must be of type '
            'boolean') in r.stderr, r.stderr
    assert hub.get(f"{AGENTS}/{a['metadata']['name']}").status == 404


def test_wrong_type_raw(hub):
    a = agent(approved="string", role="")
    name = a["metadata"]["name"]
    r = hub.request("POST", AGENTS, a)
    assert r.status == 422, r
    body = r.json()
    invalid(body, name, "Agent", "agent-install.openshift.io")
    assert ('spec.approved: Invalid value: "string": spec.approved in body must be of type '
            'boolean') in body["message"], body["message"]
    c = [c for c in causes(body) if c.get("field") == "spec.approved"]
    assert c and c[0]["reason"] == "FieldValueTypeInvalid", causes(body)
    # the same through an update and a patch of an existing object
    good = agent(approved=False, role="")
    assert hub.request("POST", AGENTS, good).status == 201
    r = hub.request("PATCH", f"{AGENTS}/{good['metadata']['name']}",
                    {"spec": {"approved": "string"}},
                    content_type="application/merge-patch+json")
    assert r.status == 422, r
    assert any(c.get("field") == "spec.approved" for c in causes(r.json())), r.json()
    r = hub.get(f"{AGENTS}/{good['metadata']['name']}")
    assert r.json()["spec"]["approved"] is False


def test_missing_required_field(hub):
    a = agent(role="")          # no approved
    name = a["metadata"]["name"]
    r = hub.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(a), check=False)
    assert r.returncode != 0
    assert "spec.approved: Required value" in r.stderr, r.stderr
    r = hub.request("POST", AGENTS, a)
    assert r.status == 422, r
    body = r.json()
    invalid(body, name, "Agent", "agent-install.openshift.io")
    c = [c for c in causes(body) if c.get("field") == "spec.approved"]
    assert c and c[0]["reason"] == "FieldValueRequired", causes(body)
    # InfraEnv without pullSecretRef
    ie = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
          "metadata": {"name": "no-pull-secret", "namespace": NS}, "spec": {}}
    r = hub.request("POST", f"{API_AI}/namespaces/{NS}/infraenvs", ie)
    assert r.status == 422, r
    assert any(c.get("field") == "spec.pullSecretRef" and c["reason"] == "FieldValueRequired"
               for c in causes(r.json())), r.json()
    assert "spec.pullSecretRef: Required value" in r.json()["message"]


def test_enum_violation(hub):
    ie = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
          "metadata": {"name": "bad-enum", "namespace": NS},
          "spec": {"pullSecretRef": {"name": "ps"}, "ipxeScriptType": "Sometimes"}}
    r = hub.kubectl("apply", "--validate=false", "-f", "-", input=json.dumps(ie), check=False)
    assert r.returncode != 0
    assert 'spec.ipxeScriptType: Unsupported value: "Sometimes": supported values: ' in r.stderr, \
        r.stderr
    assert '"DiscoveryImageAlways"' in r.stderr and '"BootOrderControl"' in r.stderr, r.stderr
    r = hub.request("POST", f"{API_AI}/namespaces/{NS}/infraenvs", ie)
    assert r.status == 422, r
    body = r.json()
    invalid(body, "bad-enum", "InfraEnv", "agent-install.openshift.io")
    c = [c for c in causes(body) if c.get("field") == "spec.ipxeScriptType"]
    assert c and c[0]["reason"] == "FieldValueNotSupported", causes(body)
    # an enum inside a nested object of another kind
    aci = {"apiVersion": "extensions.hive.openshift.io/v1beta1", "kind": "AgentClusterInstall",
           "metadata": {"name": "bad-net", "namespace": NS},
           "spec": {"clusterDeploymentRef": {"name": "c"}, "imageSetRef": {"name": "i"},
                    "networking": {"networkType": "Carrier-Pigeon"},
                    "provisionRequirements": {"controlPlaneAgents": 3}}}
    r = hub.request("POST", f"{API_EXT}/namespaces/{NS}/agentclusterinstalls", aci)
    assert r.status == 422, r
    assert 'spec.networking.networkType: Unsupported value: "Carrier-Pigeon"' in \
        r.json()["message"], r.json()
    assert any(c.get("field") == "spec.networking.networkType" for c in causes(r.json()))


def test_several_errors_reported_together(hub):
    a = agent(approved="string")   # wrong type and missing role
    r = hub.request("POST", AGENTS, a)
    assert r.status == 422, r
    fields = {c.get("field") for c in causes(r.json())}
    assert {"spec.approved", "spec.role"} <= fields, causes(r.json())


def test_no_token_is_401(hub):
    for token in (False, "not-the-token", hub.token + "x"):
        r = hub.request("GET", "/api/v1/namespaces", token=token)
        assert r.status == 401, (token, r)
        status_shape(r.json(), 401, "Unauthorized")
        r = hub.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "sneaky"}}, token=token)
        assert r.status == 401, r
    assert hub.get(f"{CMS}/sneaky").status == 404
    # /readyz needs none
    assert hub.request("GET", "/readyz", token=False).status == 200


def test_kubectl_with_bad_token(hub, tmp_path):
    kc = hub.kubeconfig.read_text().replace(hub.token, "bogus-token")
    assert kc != hub.kubeconfig.read_text(), "kubeconfig does not hold the admin token"
    bad = tmp_path / "kubeconfig"
    bad.write_text(kc)
    r = hub.kubectl("--kubeconfig", bad, "get", "agents", "-n", NS, check=False)
    assert r.returncode != 0
    assert "Unauthorized" in r.stderr, r.stderr


def post_large(hub, path, size, timeout=30):
    """POST a body of `size` bytes; tolerate the server answering (and closing)
    before it has read it all.  Returns (status, body bytes)."""
    conn = http.client.HTTPSConnection("127.0.0.1", hub.port, timeout=timeout,
                                       context=hub.ssl_context())
    filler = size - 200
    body = (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big","namespace":"'
            + NS.encode() + b'"},"data":{"k":"' + b"x" * filler + b'"}}')
    try:
        conn.putrequest("POST", path)
        for k, v in hub.auth_headers().items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        try:
            view = memoryview(body)
            for off in range(0, len(body), 65536):
                conn.send(view[off:off + 65536])
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            pass  # the server may refuse the rest once it has answered
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_body_over_bound_is_413(hub):
    status, body = post_large(hub, CMS, 4 * 1024 * 1024)
    assert status == 413, body[:500]
    if body.strip():
        st = json.loads(body)
        status_shape(st, 413, "RequestEntityTooLarge")
    assert hub.get(f"{CMS}/big").status == 404
    # just under kube's 3 MiB request bound is not refused as too large (a
    # ConfigMap that big is refused as invalid: data is bounded at 1 MiB)
    status, body = post_large(hub, CMS, 2 * 1024 * 1024)
    assert status != 413, body[:500]
    assert status in (201, 422), body[:500]


def test_malformed_json_is_400(hub):
    for path in (CMS, AGENTS):
        r = hub.request("POST", path, '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {')
        assert r.status == 400, (path, r)
        status_shape(r.json(), 400, "BadRequest")
    r = hub.request("PATCH", f"{CMS}/whatever", "{not json",
                    content_type="application/merge-patch+json")
    assert r.status in (400, 404), r   # 404 is fine too: there is nothing to patch
    status_shape(r.json(), r.status, "BadRequest" if r.status == 400 else "NotFound")
    r = hub.request("POST", CMS, b"\xff\xfe\x00garbage")
    assert r.status == 400, r
    status_shape(r.json(), 400, "BadRequest")
    # a JSON patch that is not a list of operations
    hub.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "jp-target"}})
    r = hub.request("PATCH", f"{CMS}/jp-target", {"op": "add"},
                    content_type="application/json-patch+json")
    assert 400 <= r.status < 500 and r.status != 404, r
    assert r.json()["kind"] == "Status"


def test_unknown_resource_is_404(hub):
    for path in (f"{API_AI}/namespaces/{NS}/widgets",
                 f"{API_AI}/widgets",
                 "/apis/nope.example.com/v1/namespaces/x/things",
                 "/api/v1/namespaces/x/gadgets"):
        r = hub.get(path)
        assert r.status == 404, (path, r)
        status_shape(r.json(), 404, "NotFound")
    r = hub.kubectl("get", "widgets", check=False)
    assert r.returncode != 0
    assert 'the server doesn\'t have a resource type "widgets"' in r.stderr, r.stderr


def test_missing_object_is_404_with_details(hub):
    r = hub.get(f"{AGENTS}/does-not-exist")
    assert r.status == 404, r
    body = r.json()
    status_shape(body, 404, "NotFound")
    assert body["message"] == 'agents.agent-install.openshift.io "does-not-exist" not found'
    assert body["details"]["name"] == "does-not-exist"
    assert body["details"]["kind"] == "agents"
    assert body["details"]["group"] == "agent-install.openshift.io"
    r = hub.get(f"{CMS}/nope")
    assert r.json()["message"] == 'configmaps "nope" not found'


def test_create_in_missing_namespace_and_duplicate(hub):
    r = hub.request("POST", "/api/v1/namespaces/no-such-ns/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    assert r.status == 404, r
    status_shape(r.json(), 404, "NotFound")
    assert 'namespaces "no-such-ns" not found' in r.json()["message"]
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}}
    assert hub.request("POST", CMS, obj).status == 201
    r = hub.request("POST", CMS, obj)
    assert r.status == 409, r
    status_shape(r.json(), 409, "AlreadyExists")
    assert r.json()["message"] == 'configmaps "dup" already exists'
    r = hub.kubectl("create", "-n", NS, "-f", "-", input=json.dumps(obj), check=False)
    assert r.returncode != 0
    assert 'Error from server (AlreadyExists): error when creating "STDIN": configmaps "dup" ' \
           'already exists' in r.stderr, r.stderr


def test_name_mismatch_and_bad_name(hub):
    # body name differs from the URL name on update
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "mm"}}
    assert hub.request("POST", CMS, obj).status == 201
    cur = hub.get_json(f"{CMS}/mm")
    cur["metadata"]["name"] = "other"
    r = hub.request("PUT", f"{CMS}/mm", cur)
    assert r.status in (400, 422), r
    assert r.json()["kind"] == "Status"
    # an invalid DNS-1123 name
    r = hub.request("POST", CMS, {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "Bad_Name"}})
    assert r.status == 422, r
    status_shape(r.json(), 422, "Invalid")
    assert any(c.get("field") == "metadata.name" for c in causes(r.json())), r.json()
