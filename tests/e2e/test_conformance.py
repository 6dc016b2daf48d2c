"""Every upstream example manifest (../shared/conformance/upstream-crs) is
accepted verbatim by `kubectl apply -f`, reads back with the same content,
re-applies as "unchanged", and a modified copy changes exactly the field that
was modified.

Each file runs on its own fresh hub: several files share object names.

Read-back rules (Kubernetes semantics):
- custom resources: .spec equals the manifest's, except that the server may
  add fields the manifest leaves out when the CRD schema gives them a
  `default`, or when an upstream mutating webhook sets them (see
  SERVER_SET_SPEC_FIELDS); lists must match item for item.
- Secrets: .type equal; .data equals the manifest's .data plus its .stringData
  base64-encoded; .stringData is write-only and never read back.
- Namespaces: the name.
"""

import copy
import fnmatch
import json

import pytest
import yaml

from conftest import CONFORMANCE_DIR, b64

FILES = sorted(CONFORMANCE_DIR.glob("*.yaml")) if CONFORMANCE_DIR.is_dir() else []

pytestmark = pytest.mark.skipif(not FILES, reason=f"no conformance data at {CONFORMANCE_DIR}")

NAMESPACES = ("spoke-cluster", "demo", "agents")

# Spec fields an upstream admission webhook fills in when the manifest leaves
# them out (docs: kubeapi.md §5.1, "ACI mutating CREATE/UPDATE").
SERVER_SET_SPEC_FIELDS = {
    "AgentClusterInstall": {("networking", "userManagedNetworking")},
}

# Metadata that only a server sets; the upstream agent.yaml was exported from a
# live cluster and carries them.  kubectl strips resourceVersion when it
# creates, but keeps all of them in the last-applied annotation, and a second
# verbatim apply would send resourceVersion 418252 as a precondition (a real
# API server answers 409 Conflict).  So the re-apply checks of such files use
# a copy without them (what a user re-applying would do).
SERVER_OWNED_METADATA = ("resourceVersion", "uid", "creationTimestamp", "generation",
                         "managedFields", "selfLink")

# The edit made for the "modified copy" check: (kind, path, new value).
MODIFICATIONS = [
    ("agent.yaml", "Agent", ("spec", "hostname"), "e2e-renamed-host"),
    ("agentClassification.yaml", "AgentClassification", ("spec", "query"), ".cpu.count == 8"),
    ("agentClusterInstall*.yaml", "AgentClusterInstall", ("spec", "holdInstallation"), True),
    ("clusterDeployment.yaml", "ClusterDeployment", ("spec", "baseDomain"), "e2e.example.com"),
    ("clusterImageSet.yaml", "ClusterImageSet", ("spec", "releaseImage"),
     "quay.io/openshift-release-dev/ocp-release:5.0.1-x86_64"),
    ("infraEnv*.yaml", "InfraEnv", ("spec", "proxy", "httpProxy"), "http://11.11.11.34"),
    ("namespace.yaml", "Namespace", ("metadata", "labels", "e2e-modified"), "yes"),
    ("nmstate.yaml", "NMStateConfig", ("spec", "config", "dns-resolver", "config", "server"),
     ["192.168.126.2"]),
    ("pullsecret.yaml", "Secret", ("stringData", ".dockerconfigjson"),
     '{"auths":{"quay.io":{"auth":"ZTJlOmUyZQ==","email":"e2e@example.com"}}}'),
]


def load_docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def group_of(doc):
    av = doc["apiVersion"]
    return av.split("/")[0] if "/" in av else ""


def ref(doc):
    """The name kubectl prints for an object: kind.group/name (core: kind/name)."""
    g = group_of(doc)
    kind = doc["kind"].lower()
    return f"{kind}.{g}/{doc['metadata']['name']}" if g else f"{kind}/{doc['metadata']['name']}"


def get_args(doc):
    g = group_of(doc)
    kind = doc["kind"].lower()
    args = [f"{kind}.{g}" if g else kind, doc["metadata"]["name"]]
    if doc["metadata"].get("namespace"):
        args += ["-n", doc["metadata"]["namespace"]]
    return args


def output_verbs(stdout):
    """{ref: verb} from kubectl apply output lines like `secret/x created`."""
    verbs = {}
    for line in stdout.splitlines():
        parts = line.strip().split(" ", 1)
        if len(parts) == 2:
            verbs[parts[0]] = parts[1]
    return verbs


def strip_server_fields(doc):
    d = copy.deepcopy(doc)
    d.pop("status", None)
    for k in SERVER_OWNED_METADATA:
        d["metadata"].pop(k, None)
    return d


def has_server_fields(doc):
    return "status" in doc or any(k in doc["metadata"] for k in SERVER_OWNED_METADATA)


def crd_schemas(hub):
    """{(group, kind): openAPIV3Schema of the served version} from the hub."""
    crds = hub.kubectl_json("get", "customresourcedefinitions")
    out = {}
    for crd in crds["items"]:
        spec = crd["spec"]
        for v in spec["versions"]:
            if v.get("served", True) and v.get("storage", True):
                out[(spec["group"], spec["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    return out


def sub_schema(schema, key):
    if schema is None:
        return None
    props = schema.get("properties")
    if props and key in props:
        return props[key]
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict):
        return ap
    return None


def compare_spec(want, got, schema, path, server_set, errors):
    """Record in errors every way `got` (read back) differs from `want`
    (the manifest) other than schema defaults and server_set fields."""
    where = ".".join(("spec",) + path)
    if isinstance(want, dict):
        if not isinstance(got, dict):
            errors.append(f"{where}: want object {want!r}, got {got!r}")
            return
        for k, v in want.items():
            if k not in got:
                errors.append(f"{where}.{k}: missing in read-back (pruned?), want {v!r}")
                continue
            compare_spec(v, got[k], sub_schema(schema, k), path + (k,), server_set, errors)
        for k in got.keys() - want.keys():
            s = sub_schema(schema, k)
            if path + (k,) in server_set:
                continue
            if s is not None and "default" in s:
                continue
            errors.append(f"{where}.{k}: unexpected field in read-back: {got[k]!r}")
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            errors.append(f"{where}: want list {want!r}, got {got!r}")
            return
        items = schema.get("items") if schema else None
        for i, (w, g) in enumerate(zip(want, got)):
            compare_spec(w, g, items, path + (str(i),), server_set, errors)
    else:
        # YAML and JSON agree on these scalars; bool vs int must not mix.
        if type(want) is not type(got) and not (
                isinstance(want, (int, float)) and isinstance(got, (int, float))
                and not isinstance(want, bool) and not isinstance(got, bool)):
            errors.append(f"{where}: want {want!r} ({type(want).__name__}), "
                          f"got {got!r} ({type(got).__name__})")
        elif want != got:
            errors.append(f"{where}: want {want!r}, got {got!r}")


def expected_secret_data(doc):
    data = dict(doc.get("data") or {})
    for k, v in (doc.get("stringData") or {}).items():
        data[k] = b64(v)
    return data


def check_readback(doc, live, schemas):
    md = live["metadata"]
    assert md["name"] == doc["metadata"]["name"]
    assert live["kind"] == doc["kind"] and live["apiVersion"] == doc["apiVersion"], live
    if doc["metadata"].get("namespace"):
        assert md.get("namespace") == doc["metadata"]["namespace"]
    for k in ("uid", "resourceVersion", "creationTimestamp"):
        assert md.get(k), f"read-back metadata lacks {k}: {md}"
    kind = doc["kind"]
    if kind == "Namespace":
        return
    if kind == "Secret":
        assert live.get("type", "Opaque") == doc.get("type", "Opaque"), live
        assert (live.get("data") or {}) == expected_secret_data(doc), live.get("data")
        assert "stringData" not in live, "stringData is write-only; it must not be read back"
        return
    # A custom resource.
    schema = schemas.get((group_of(doc), kind))
    assert schema is not None, f"no CRD served for {group_of(doc)}/{kind}"
    errors = []
    compare_spec(doc.get("spec", {}), live.get("spec"), sub_schema(schema, "spec"), (),
                 SERVER_SET_SPEC_FIELDS.get(kind, set()), errors)
    assert not errors, f"{ref(doc)} read-back spec differs:\n" + "\n".join(errors)
    # labels and annotations of the manifest are kept as given
    for k, v in (doc["metadata"].get("labels") or {}).items():
        assert md.get("labels", {}).get(k) == v, f"label {k}"
    for k, v in (doc["metadata"].get("annotations") or {}).items():
        assert md.get("annotations", {}).get(k) == v, f"annotation {k}"
    if doc["metadata"].get("finalizers"):
        for f in doc["metadata"]["finalizers"]:
            assert f in md.get("finalizers", []), f"finalizer {f}"


def content(doc, live):
    """The part of a read-back object the manifest controls."""
    if doc["kind"] == "Namespace":
        return {"labels": live["metadata"].get("labels", {})}
    if doc["kind"] == "Secret":
        return {"type": live.get("type"), "data": live.get("data")}
    return {"spec": live.get("spec")}


def set_path(obj, path, value):
    for k in path[:-1]:
        obj = obj.setdefault(k, {})
    obj[path[-1]] = value


def modification_for(path, docs):
    for pattern, kind, fpath, value in MODIFICATIONS:
        if fnmatch.fnmatch(path.name, pattern):
            return kind, fpath, value
    # A file this table does not know: change a label of the first object.
    return docs[0]["kind"], ("metadata", "labels", "e2e-modified"), "yes"


def expected_content_change(doc, before, fpath, value):
    after = copy.deepcopy(before)
    if doc["kind"] == "Namespace":
        after["labels"][fpath[-1]] = value
    elif doc["kind"] == "Secret":
        after["data"] = dict(after["data"] or {})
        after["data"][fpath[-1]] = b64(value) if fpath[0] == "stringData" else value
    else:
        set_path(after, fpath, value)
    return after


def reapply_verb_ok(doc, verb):
    # kubectl sends stringData on every apply (the server never returns it),
    # so a Secret with stringData always reports "configured" (kubernetes#87736).
    if doc.get("stringData"):
        return verb in ("configured", "unchanged")
    return verb == "unchanged"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_upstream_manifest(hub, tmp_path, path):
    docs = load_docs(path)
    assert docs, f"{path} holds no object"
    hub.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "List",
         "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
                   for n in NAMESPACES]}))

    # 1. accepted verbatim
    r = hub.kubectl("apply", "-f", path)
    verbs = output_verbs(r.stdout)
    for d in docs:
        pre_existing = d["kind"] == "Namespace" and d["metadata"]["name"] in NAMESPACES
        want = "configured" if pre_existing else "created"
        assert verbs.get(ref(d)) == want, f"{ref(d)}: want {want!r}; output: {r.stdout!r}"

    # 2. read back
    schemas = crd_schemas(hub)
    live = {}
    for d in docs:
        live[ref(d)] = hub.kubectl_json("get", *get_args(d))
        check_readback(d, live[ref(d)], schemas)

    # 3. re-apply is a no-op
    reapply = docs
    if any(has_server_fields(d) for d in docs):
        reapply = [strip_server_fields(d) for d in docs]
        f = tmp_path / ("stripped-" + path.name)
        f.write_text(yaml.safe_dump_all(reapply, sort_keys=False))
        hub.kubectl("apply", "-f", f)   # drops the stale fields from last-applied
        reapply_file = f
    else:
        reapply_file = path
    r = hub.kubectl("apply", "-f", reapply_file)
    verbs = output_verbs(r.stdout)
    for d in reapply:
        assert reapply_verb_ok(d, verbs.get(ref(d))), \
            f"re-apply {ref(d)}: got {verbs.get(ref(d))!r}; output: {r.stdout!r}"
    for d in docs:
        again = hub.kubectl_json("get", *get_args(d))
        assert content(d, again) == content(d, live[ref(d)]), f"re-apply changed {ref(d)}"
        live[ref(d)] = again

    # 4. a modified copy changes exactly that field
    kind, fpath, value = modification_for(path, reapply)
    modified = copy.deepcopy(reapply)
    target = next(d for d in modified if d["kind"] == kind)
    set_path(target, fpath, value)
    f = tmp_path / ("modified-" + path.name)
    f.write_text(yaml.safe_dump_all(modified, sort_keys=False))
    r = hub.kubectl("apply", "-f", f)
    verbs = output_verbs(r.stdout)
    for d in modified:
        if d is target:
            assert verbs.get(ref(d)) == "configured", f"{ref(d)}: output {r.stdout!r}"
        else:
            assert reapply_verb_ok(d, verbs.get(ref(d))), f"{ref(d)}: output {r.stdout!r}"
    for d in modified:
        after = hub.kubectl_json("get", *get_args(d))
        before = content(d, live[ref(d)])
        want = expected_content_change(d, before, fpath, value) if d is target else before
        got = content(d, after)
        assert got == want, (f"{ref(d)} after applying the modified copy:\n"
                             f"want {json.dumps(want, sort_keys=True)[:3000]}\n"
                             f"got  {json.dumps(got, sort_keys=True)[:3000]}")
