"""The Cluster API kinds (CAPI core, CAPM3, CAPOA) on a real hub: their CRDs,
the upstream example manifests stored without pruning, multi-version
conversion, the OpenshiftAssistedConfig immutability rule, the /scale
subresource, CRDs served as objects (get/list/watch) and metadata-only replies
(PartialObjectMetadata).

The upstream examples are ../shared/conformance/capoa/*.yaml (CAPOA's
examples rendered with placeholder values); a hub must accept them verbatim.
"""
import copy
import json
import pathlib

import pytest
import yaml

from conftest import SHARED

CAPOA_DIR = SHARED / "conformance" / "capoa"


def capoa_docs():
    out = []
    if not CAPOA_DIR.is_dir():
        return out
    for path in sorted(CAPOA_DIR.glob("*.yaml")):
        with open(path) as f:
            for i, doc in enumerate(yaml.safe_load_all(f)):
                if doc:
                    out.append((f"{path.name}#{i}-{doc['kind']}", doc))
    return out


CAPOA_DOCS = capoa_docs()

KINDS = [
    # (resource, group, served versions, storage version, kind, short names, scale)
    ("clusters", "cluster.x-k8s.io", ["v1beta2"], "v1beta2", "Cluster", ["cl"], False),
    ("machines", "cluster.x-k8s.io", ["v1beta2"], "v1beta2", "Machine", ["ma"], False),
    ("machinesets", "cluster.x-k8s.io", ["v1beta2"], "v1beta2", "MachineSet", ["ms"], True),
    ("machinedeployments", "cluster.x-k8s.io", ["v1beta2"], "v1beta2", "MachineDeployment", ["md"], True),
    ("metal3clusters", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1", "Metal3Cluster", ['m3c', 'm3cluster', 'm3clusters', 'metal3c', 'metal3cluster'], False),
    ("metal3machines", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1", "Metal3Machine", ['m3m', 'm3machine', 'm3machines', 'metal3m', 'metal3machine'], False),
    ("metal3machinetemplates", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1",
     "Metal3MachineTemplate", ['m3mt', 'm3machinetemplate', 'm3machinetemplates', 'metal3mt', 'metal3machinetemplate'], False),
    ("metal3datatemplates", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1", "Metal3DataTemplate",
     ['m3dt', 'm3datatemplate', 'm3datatemplates', 'metal3dt', 'metal3datatemplate'], False),
    ("metal3datas", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1", "Metal3Data", ['m3d', 'm3data', 'm3datas', 'metal3d', 'metal3data'], False),
    ("metal3dataclaims", "infrastructure.cluster.x-k8s.io", ["v1beta1"], "v1beta1", "Metal3DataClaim", ['m3dc', 'm3dataclaim', 'm3dataclaims', 'metal3dc', 'metal3dataclaim'], False),
    ("openshiftassistedconfigs", "bootstrap.cluster.x-k8s.io", ["v1alpha1", "v1alpha2"], "v1alpha2",
     "OpenshiftAssistedConfig", ["oac", "oacs"], False),
    ("openshiftassistedconfigtemplates", "bootstrap.cluster.x-k8s.io", ["v1alpha1", "v1alpha2"], "v1alpha2",
     "OpenshiftAssistedConfigTemplate", None, False),
    ("openshiftassistedcontrolplanes", "controlplane.cluster.x-k8s.io", ["v1alpha2", "v1alpha3"], "v1alpha3",
     "OpenshiftAssistedControlPlane", ["oacp", "oacps"], True),
]

CONTRACT_LABELS = {
    "bootstrap.cluster.x-k8s.io": {"cluster.x-k8s.io/v1beta1": "v1alpha1", "cluster.x-k8s.io/v1beta2": "v1alpha2"},
    "controlplane.cluster.x-k8s.io": {"cluster.x-k8s.io/v1beta1": "v1alpha2",
                                      "cluster.x-k8s.io/v1beta2": "v1alpha3"},
    "infrastructure.cluster.x-k8s.io": {"cluster.x-k8s.io/v1beta1": "v1beta1", "cluster.x-k8s.io/v1beta2": "v1beta1"},
    "cluster.x-k8s.io": {"cluster.x-k8s.io/provider": "cluster-api"},
}


def missing(want, got, where=""):
    """Paths of `want` that `got` lacks or holds with another value (got may
    hold more: defaults, server-set metadata)."""
    out = []
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return [f"{where or '.'}: {got!r} is not an object"]
        for k, v in want.items():
            if k not in got:
                out.append(f"{where}.{k}: pruned or missing")
            else:
                out += missing(v, got[k], f"{where}.{k}")
    elif isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{where}: {got!r} != {want!r}"]
        for i, (a, b) in enumerate(zip(want, got)):
            out += missing(a, b, f"{where}[{i}]")
    elif want != got:
        out.append(f"{where}: {got!r} != {want!r}")
    return out


@pytest.fixture(scope="module")
def capi_hub(module_hub):
    module_hub.create_namespace("test-capi")
    return module_hub


# ---- the CRDs -----------------------------------------------------------------

@pytest.mark.parametrize("resource,group,versions,storage,kind,short,scale", KINDS)
def test_crd_served(capi_hub, resource, group, versions, storage, kind, short, scale):
    crd = capi_hub.get_json(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{resource}.{group}")
    assert crd["spec"]["names"]["kind"] == kind
    assert crd["spec"]["names"].get("shortNames") == short
    for k, v in CONTRACT_LABELS[group].items():
        assert crd["metadata"]["labels"].get(k) == v, crd["metadata"]["labels"]
    got = {v["name"]: v for v in crd["spec"]["versions"]}
    assert sorted(got) == sorted(versions)
    assert [n for n, v in got.items() if v["storage"]] == [storage]
    for v in got.values():
        assert v["served"] is True
        assert ("scale" in v.get("subresources", {})) == scale
        if scale:
            assert v["subresources"]["scale"] == {"specReplicasPath": ".spec.replicas",
                                                  "statusReplicasPath": ".status.replicas",
                                                  "labelSelectorPath": ".status.selector"}
    for version in versions:
        r = capi_hub.get_json(f"/apis/{group}/{version}")
        names = {x["name"]: x for x in r["resources"]}
        assert resource in names
        assert (f"{resource}/status" in names) == ("status" in got[version].get("subresources", {}))
        assert (f"{resource}/scale" in names) == scale
    g = capi_hub.get_json(f"/apis/{group}")
    assert [v["version"] for v in g["versions"]] == sorted(versions, reverse=True)
    assert g["preferredVersion"]["version"] == storage


def test_kubectl_get_columns(capi_hub, ns):
    h = capi_hub
    h.apply_obj({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                 "metadata": {"name": "m0", "namespace": ns},
                 "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "d"},
                          "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                "kind": "Metal3Machine", "name": "m0"}}})
    out = h.kubectl("get", "machines", "-n", ns).stdout
    assert out.split("\n")[0].split() == ["NAME", "CLUSTER", "NODE", "NAME", "FAILURE", "DOMAIN", "READY",
                                          "AVAILABLE", "UP-TO-DATE", "PHASE", "AGE", "VERSION"], out
    # The cluster-api category, as upstream's CRDs declare it.
    out = h.kubectl("get", "cluster-api", "-n", ns, "-o", "name").stdout
    assert "machine.cluster.x-k8s.io/m0" in out, out
    r = capi_hub.kubectl("get", "crd", "clusters.cluster.x-k8s.io", "-o", "json")
    cols = [c["name"] for c in json.loads(r.stdout)["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert "Phase" in cols and "Available" in cols


# ---- the upstream examples ------------------------------------------------------

@pytest.mark.parametrize("name,doc", CAPOA_DOCS or [pytest.param(None, None, marks=pytest.mark.skip(
    reason="capoa conformance manifests absent"))])
def test_capoa_example_stored_without_pruning(capi_hub, name, doc):
    text = json.dumps(doc)
    capi_hub.kubectl("apply", "--dry-run=server", "-f", "-", input=text)
    capi_hub.kubectl("apply", "-f", "-", input=text)
    ns = doc["metadata"].get("namespace", "test-capi")
    got = capi_hub.kubectl_json("get", doc["kind"] + "." + doc["apiVersion"].split("/")[0]
                                if "/" in doc["apiVersion"] else doc["kind"], "-n", ns,
                                doc["metadata"]["name"])
    want = {k: v for k, v in doc.items() if k not in ("metadata", "apiVersion")}
    if doc["kind"] == "Secret":
        want.pop("data", None)  # compared below: kubectl shows data as given
    problems = missing(want, got)
    assert not problems, f"{name}:\n" + "\n".join(problems)
    assert got["apiVersion"] == doc["apiVersion"]


# ---- multi-version conversion -------------------------------------------------

OAC = "/apis/bootstrap.cluster.x-k8s.io/{v}/namespaces/{ns}/openshiftassistedconfigs"
OACP = "/apis/controlplane.cluster.x-k8s.io/{v}/namespaces/{ns}/openshiftassistedcontrolplanes"
CONVERSION_DATA = "cluster.x-k8s.io/conversion-data"


def ok(r, code=200):
    assert r.status == code, r
    return r.json()


def test_oac_v1alpha1_status_reads_as_v1alpha2(capi_hub, ns):
    h = capi_hub
    ok(h.request("POST", OAC.format(v="v1alpha1", ns=ns), {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha1", "kind": "OpenshiftAssistedConfig",
        "metadata": {"name": "c1"},
        "spec": {"cpuArchitecture": "x86_64", "nodeRegistration": {"name": "$METADATA_NAME"}}}), 201)
    cur = ok(h.get(OAC.format(v="v1alpha1", ns=ns) + "/c1"))
    cur["status"] = {"ready": True, "dataSecretName": "c1-data",
                     "infraEnvRef": {"kind": "InfraEnv", "name": "c1", "namespace": ns},
                     "failureReason": "none",
                     "conditions": [{"type": "Ready", "status": "True",
                                     "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
    ok(h.request("PUT", OAC.format(v="v1alpha1", ns=ns) + "/c1/status", cur))
    v2 = ok(h.get(OAC.format(v="v1alpha2", ns=ns) + "/c1"))
    assert v2["apiVersion"] == "bootstrap.cluster.x-k8s.io/v1alpha2"
    assert v2["status"]["initialization"] == {"dataSecretCreated": True}
    assert v2["status"]["dataSecretName"] == "c1-data"
    assert v2["status"]["v1beta1Conditions"][0]["type"] == "Ready"
    assert "ready" not in v2["status"] and "infraEnvRef" not in v2["status"]
    # Back through v1alpha1.  (A status write keeps the object's metadata,
    # so v1alpha1-only status fields are not kept: kube-apiserver's status
    # strategy does the same with Cluster API's conversion annotation.)
    v1 = ok(h.get(OAC.format(v="v1alpha1", ns=ns) + "/c1"))
    assert v1["apiVersion"] == "bootstrap.cluster.x-k8s.io/v1alpha1"
    assert v1["status"]["ready"] is True
    assert v1["status"]["conditions"][0]["type"] == "Ready"
    assert "initialization" not in v1["status"]
    data = json.loads(v1["metadata"]["annotations"][CONVERSION_DATA])
    assert data["apiVersion"] == "bootstrap.cluster.x-k8s.io/v1alpha2"
    # Written as v1alpha2 (dataSecretCreated), read as v1alpha1 (ready).
    v2["status"] = {"initialization": {"dataSecretCreated": False}, "dataSecretName": "other"}
    ok(h.request("PUT", OAC.format(v="v1alpha2", ns=ns) + "/c1/status", v2))
    v1 = ok(h.get(OAC.format(v="v1alpha1", ns=ns) + "/c1"))
    assert "ready" not in v1["status"] and v1["status"]["dataSecretName"] == "other"


def test_oac_v1alpha2_only_fields_survive_a_v1alpha1_round_trip(capi_hub, ns):
    h = capi_hub
    ok(h.request("POST", OAC.format(v="v1alpha2", ns=ns), {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedConfig",
        "metadata": {"name": "c2"},
        "spec": {"preBootstrapCommands": ["echo pre"], "postBootstrapKubeconfigPath": "/var/k",
                 "nodeRegistration": {"name": "n", "providerID": "metal3://x"}}}), 201)
    v1 = ok(h.get(OAC.format(v="v1alpha1", ns=ns) + "/c2"))
    assert "preBootstrapCommands" not in v1["spec"] and "providerID" not in v1["spec"]["nodeRegistration"]
    assert v1["spec"]["nodeRegistration"] == {"name": "n"}
    v1["metadata"].setdefault("labels", {})["touched"] = "yes"
    ok(h.request("PUT", OAC.format(v="v1alpha1", ns=ns) + "/c2", v1))
    v2 = ok(h.get(OAC.format(v="v1alpha2", ns=ns) + "/c2"))
    assert v2["metadata"]["labels"]["touched"] == "yes"
    assert v2["spec"]["preBootstrapCommands"] == ["echo pre"]
    assert v2["spec"]["postBootstrapKubeconfigPath"] == "/var/k"
    assert v2["spec"]["nodeRegistration"]["providerID"] == "metal3://x"
    # kubectl reads either version.
    out = h.kubectl_json("get", "openshiftassistedconfigs.v1alpha1.bootstrap.cluster.x-k8s.io", "-n", ns, "c2")
    assert out["apiVersion"] == "bootstrap.cluster.x-k8s.io/v1alpha1"


def oacp_v1alpha2(name):
    return {"apiVersion": "controlplane.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedControlPlane",
            "metadata": {"name": name},
            "spec": {"distributionVersion": "4.19.0", "replicas": 3,
                     "config": {"baseDomain": "example.com"},
                     "machineTemplate": {
                         "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                               "kind": "Metal3MachineTemplate", "name": "cp",
                                               "namespace": "somewhere"},
                         "nodeDrainTimeout": "1m30s", "nodeDeletionTimeout": "10s"}}}


def test_oacp_v1alpha2_to_v1alpha3_and_back(capi_hub, ns):
    h = capi_hub
    ok(h.request("POST", OACP.format(v="v1alpha2", ns=ns), oacp_v1alpha2("cp1")), 201)
    v3 = ok(h.get(OACP.format(v="v1alpha3", ns=ns) + "/cp1"))
    mt = v3["spec"]["machineTemplate"]
    assert mt["infrastructureRef"] == {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                       "kind": "Metal3MachineTemplate", "name": "cp"}
    assert mt["deletion"] == {"nodeDrainTimeoutSeconds": 90, "nodeDeletionTimeoutSeconds": 10}
    assert "nodeDrainTimeout" not in mt
    v2 = ok(h.get(OACP.format(v="v1alpha2", ns=ns) + "/cp1"))
    mt2 = v2["spec"]["machineTemplate"]
    assert mt2["infrastructureRef"] == {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                        "kind": "Metal3MachineTemplate", "name": "cp", "namespace": "somewhere"}
    assert mt2["nodeDrainTimeout"] == "1m30s" and mt2["nodeDeletionTimeout"] == "10s"
    assert "deletion" not in mt2
    # Status written in v1alpha3, read in v1alpha2, once the hub's CAPOA
    # control plane is done with the object (it adds its finalizer, then
    # waits for an owner Cluster without writing).
    v3 = settled(h, OACP.format(v="v1alpha3", ns=ns) + "/cp1", lambda o: o["metadata"].get("finalizers"))
    v3["status"] = {"conditions": [{"type": "Available", "status": "True", "reason": "Available", "message": "",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                   {"type": "MachinesReady", "status": "False", "reason": "MachinesNotReady",
                                    "message": "1 of 3", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                    "initialization": {"controlPlaneInitialized": True}, "replicas": 3, "readyReplicas": 2,
                    "availableReplicas": 2, "upToDateReplicas": 3, "version": "v1.32.5",
                    "distributionVersion": "4.19.0", "selector": "cluster.x-k8s.io/cluster-name=x",
                    "observedGeneration": 1}
    ok(h.request("PUT", OACP.format(v="v1alpha3", ns=ns) + "/cp1/status", v3))
    st = ok(h.get(OACP.format(v="v1alpha2", ns=ns) + "/cp1"))["status"]
    assert st["ready"] is True and st["initialized"] is True
    assert st["updatedReplicas"] == 3 and st["unavailableReplicas"] == 1 and st["readyReplicas"] == 2
    assert st["version"] == "v1.32.5" and st["selector"] == "cluster.x-k8s.io/cluster-name=x"
    conds = {c["type"]: c for c in st["conditions"]}
    assert conds["MachinesReady"]["severity"] == "Info" and "severity" not in conds["Available"]
    assert "availableReplicas" not in st and "initialization" not in st


def test_oacp_patch_list_watch_through_v1alpha2(capi_hub, ns):
    h = capi_hub
    ok(h.request("POST", OACP.format(v="v1alpha2", ns=ns), oacp_v1alpha2("cp2")), 201)
    r = ok(h.request("PATCH", OACP.format(v="v1alpha2", ns=ns) + "/cp2",
                     {"spec": {"machineTemplate": {"nodeDrainTimeout": "2m"}}},
                     content_type="application/merge-patch+json"))
    assert r["apiVersion"] == "controlplane.cluster.x-k8s.io/v1alpha2"
    assert r["spec"]["machineTemplate"]["nodeDrainTimeout"] == "2m0s"
    v3 = ok(h.get(OACP.format(v="v1alpha3", ns=ns) + "/cp2"))
    assert v3["spec"]["machineTemplate"]["deletion"]["nodeDrainTimeoutSeconds"] == 120
    r = ok(h.request("PATCH", OACP.format(v="v1alpha2", ns=ns) + "/cp2",
                     [{"op": "replace", "path": "/spec/machineTemplate/nodeDrainTimeout", "value": "5s"}],
                     content_type="application/json-patch+json"))
    assert r["spec"]["machineTemplate"]["nodeDrainTimeout"] == "5s"
    # A bad duration is refused in the version it was written in.
    r = h.request("PATCH", OACP.format(v="v1alpha2", ns=ns) + "/cp2",
                  {"spec": {"machineTemplate": {"nodeDrainTimeout": "soon"}}},
                  content_type="application/merge-patch+json")
    assert r.status == 422, r
    assert "spec.machineTemplate.nodeDrainTimeout" in r.json()["message"]
    lst = ok(h.get(OACP.format(v="v1alpha2", ns=ns)))
    assert lst["apiVersion"] == "controlplane.cluster.x-k8s.io/v1alpha2"
    assert [i["apiVersion"] for i in lst["items"]] == ["controlplane.cluster.x-k8s.io/v1alpha2"]
    assert "nodeDrainTimeout" in lst["items"][0]["spec"]["machineTemplate"]
    w = h.watch(OACP.format(v="v1alpha2", ns=ns) + "?watch=1&resourceVersion=0")
    try:
        ev = w.next_event()
        assert ev["type"] == "ADDED"
        assert ev["object"]["apiVersion"] == "controlplane.cluster.x-k8s.io/v1alpha2"
        assert ev["object"]["spec"]["machineTemplate"]["nodeDrainTimeout"] == "5s"
        ok(h.request("PATCH", OACP.format(v="v1alpha3", ns=ns) + "/cp2",
                     {"spec": {"machineTemplate": {"deletion": {"nodeDrainTimeoutSeconds": 3600}}}},
                     content_type="application/merge-patch+json"))
        ev = w.next_event()
        assert ev["type"] == "MODIFIED"
        assert ev["object"]["spec"]["machineTemplate"]["nodeDrainTimeout"] == "1h0m0s"
    finally:
        w.close()
    out = h.kubectl("get", "openshiftassistedcontrolplanes.v1alpha2.controlplane.cluster.x-k8s.io",
                    "-n", ns).stdout
    assert "API SERVER AVAILABLE" in out and "cp2" in out


# ---- admission: an OpenshiftAssistedConfig's spec never changes ------------------

def test_oac_spec_is_immutable(capi_hub, ns):
    h = capi_hub
    h.apply_obj({"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedConfig",
                 "metadata": {"name": "imm", "namespace": ns},
                 "spec": {"sshAuthorizedKey": "ssh-ed25519 AAAA k"}})
    r = h.kubectl("patch", "oac", "imm", "-n", ns, "--type=merge", "-p", '{"spec":{"sshAuthorizedKey":"other"}}',
                  check=False)
    assert r.returncode != 0
    assert "spec is immutable" in r.stderr, r.stderr
    r = h.request("PATCH", OAC.format(v="v1alpha2", ns=ns) + "/imm", {"spec": {"cpuArchitecture": "aarch64"}},
                  content_type="application/merge-patch+json")
    assert r.status == 400, r
    st = r.json()
    assert st["reason"] == "BadRequest"
    assert st["message"] == ('admission webhook "v1alpha2.validation.openshiftassistedconfig.bootstrap.cluster.x-k8s.io"'
                             ' denied the request: spec is immutable')
    # Through v1alpha1 too; the object is unchanged.
    r = h.request("PATCH", OAC.format(v="v1alpha1", ns=ns) + "/imm", {"spec": {"osImageVersion": "4.19"}},
                  content_type="application/merge-patch+json")
    assert r.status == 400 and "spec is immutable" in r.json()["message"], r
    got = ok(h.get(OAC.format(v="v1alpha2", ns=ns) + "/imm"))
    assert got["spec"]["sshAuthorizedKey"] == "ssh-ed25519 AAAA k" and "osImageVersion" not in got["spec"]
    # Metadata and status change freely.
    h.kubectl("label", "oac", "imm", "-n", ns, "capi=yes")
    got = ok(h.get(OAC.format(v="v1alpha2", ns=ns) + "/imm"))
    got["status"] = {"dataSecretName": "imm", "initialization": {"dataSecretCreated": True}}
    ok(h.request("PUT", OAC.format(v="v1alpha2", ns=ns) + "/imm/status", got))
    # An apply with the same spec is no change.
    h.apply_obj({"apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedConfig",
                 "metadata": {"name": "imm", "namespace": ns},
                 "spec": {"sshAuthorizedKey": "ssh-ed25519 AAAA k"}})


# ---- the scale subresource -------------------------------------------------------

KUBECTLS = sorted(pathlib.Path("/usr/lib/google-cloud-sdk/bin").glob("kubectl.1.*"))

MD = "/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/machinedeployments"


def machinedeployment(name, replicas):
    return {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": name},
            "spec": {"clusterName": "c", "replicas": replicas,
                     "selector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": "c"}},
                     "template": {"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "c"}},
                                  "spec": {"clusterName": "c",
                                           "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io",
                                                                       "kind": "OpenshiftAssistedConfigTemplate",
                                                                       "name": "w"}},
                                           "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                                 "kind": "Metal3MachineTemplate", "name": "w"}}}}}


def settled(h, path, pred, timeout=30.0, quiet=2.0):
    """The object at path once pred holds and its resourceVersion stayed
    the same for `quiet` seconds (the hub's controllers are done with it)."""
    import time
    end = time.time() + timeout
    last, since = None, time.time()
    while time.time() < end:
        o = ok(h.get(path))
        rv = o["metadata"]["resourceVersion"]
        if rv != last:
            last, since = rv, time.time()
        elif pred(o) and time.time() - since >= quiet:
            return o
        time.sleep(0.2)
    raise AssertionError(f"{path} did not settle: {o}")


def test_scale_subresource_http(capi_hub, ns):
    h = capi_hub
    created = ok(h.request("POST", MD.format(ns=ns), machinedeployment("md1", 2)), 201)
    # The hub's MachineDeployment controller writes the status (replicas,
    # selector); the scale is read once it has settled.
    md = settled(h, MD.format(ns=ns) + "/md1", lambda o: o.get("status", {}).get("selector"))
    gen = md["metadata"]["generation"]
    sc = ok(h.get(MD.format(ns=ns) + "/md1/scale"))
    assert sc["kind"] == "Scale" and sc["apiVersion"] == "autoscaling/v1"
    assert sc["metadata"]["name"] == "md1" and sc["metadata"]["uid"] == created["metadata"]["uid"]
    assert sc["spec"] == {"replicas": 2}
    assert sc["status"] == {"replicas": md["status"].get("replicas", 0), "selector": md["status"]["selector"]}
    assert "cluster.x-k8s.io/cluster-name=c" in sc["status"]["selector"]
    # PUT
    sc["spec"]["replicas"] = 4
    got = ok(h.request("PUT", MD.format(ns=ns) + "/md1/scale", sc))
    assert got["spec"]["replicas"] == 4
    assert ok(h.get(MD.format(ns=ns) + "/md1"))["spec"]["replicas"] == 4
    # A stale resourceVersion is a conflict.
    r = h.request("PUT", MD.format(ns=ns) + "/md1/scale", sc)
    assert r.status == 409, r
    # merge patch and JSON patch
    got = ok(h.request("PATCH", MD.format(ns=ns) + "/md1/scale", {"spec": {"replicas": 1}},
                       content_type="application/merge-patch+json"))
    assert got["spec"]["replicas"] == 1
    got = ok(h.request("PATCH", MD.format(ns=ns) + "/md1/scale",
                       [{"op": "replace", "path": "/spec/replicas", "value": 5}],
                       content_type="application/json-patch+json"))
    assert got["spec"]["replicas"] == 5
    # Scaling changes the spec: the generation moves.
    assert ok(h.get(MD.format(ns=ns) + "/md1"))["metadata"]["generation"] == gen + 3
    # Bad replicas
    r = h.request("PATCH", MD.format(ns=ns) + "/md1/scale", {"spec": {"replicas": -1}},
                  content_type="application/merge-patch+json")
    assert r.status == 422 and "spec.replicas" in r.json()["message"], r
    r = h.request("PATCH", MD.format(ns=ns) + "/md1/scale", {"spec": {"replicas": "three"}},
                  content_type="application/merge-patch+json")
    assert r.status == 400, r
    # dry run stores nothing
    ok(h.request("PATCH", MD.format(ns=ns) + "/md1/scale?dryRun=All", {"spec": {"replicas": 9}},
                 content_type="application/merge-patch+json"))
    assert ok(h.get(MD.format(ns=ns) + "/md1"))["spec"]["replicas"] == 5
    # Kinds without the subresource, and absent objects.
    assert h.get(f"/apis/cluster.x-k8s.io/v1beta2/namespaces/{ns}/machines/x/scale").status == 404
    assert h.get(MD.format(ns=ns) + "/nope/scale").status == 404
    disc = ok(h.get("/apis/cluster.x-k8s.io/v1beta2"))
    entry = [x for x in disc["resources"] if x["name"] == "machinedeployments/scale"][0]
    assert entry["group"] == "autoscaling" and entry["kind"] == "Scale" and entry["version"] == "v1"


@pytest.mark.parametrize("kubectl_bin", KUBECTLS or [pytest.param(None, marks=pytest.mark.skip(
    reason="no versioned kubectl binaries"))], ids=lambda p: p.name if p else "none")
def test_kubectl_scale(capi_hub, ns, kubectl_bin):
    h = capi_hub
    ok(h.request("POST", MD.format(ns=ns), machinedeployment("md", 2)), 201)
    ok(h.request("POST", OACP.format(v="v1alpha3", ns=ns), {
        "apiVersion": "controlplane.cluster.x-k8s.io/v1alpha3", "kind": "OpenshiftAssistedControlPlane",
        "metadata": {"name": "cp"},
        "spec": {"distributionVersion": "4.19.0", "replicas": 1, "config": {"baseDomain": "example.com"},
                 "machineTemplate": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                           "kind": "Metal3MachineTemplate", "name": "cp"}}}}), 201)

    def kc(*args):
        import subprocess
        r = subprocess.run([str(kubectl_bin), "--kubeconfig", str(h.kubeconfig),
                            "--cache-dir", str(h.cache_dir / kubectl_bin.name), *args],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout

    out = kc("scale", "machinedeployment/md", "--replicas=3", "-n", ns)
    assert "scaled" in out
    assert ok(h.get(MD.format(ns=ns) + "/md"))["spec"]["replicas"] == 3
    kc("scale", "oacp/cp", "--replicas=3", "-n", ns)
    assert ok(h.get(OACP.format(v="v1alpha3", ns=ns) + "/cp"))["spec"]["replicas"] == 3
    kc("scale", "md", "md", "--current-replicas=3", "--replicas=1", "-n", ns)
    assert ok(h.get(MD.format(ns=ns) + "/md"))["spec"]["replicas"] == 1


# ---- CRDs as objects: get, list, watch; metadata-only replies ------------------------

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
POM = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
POML = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# What client-go's metadata client sends: protobuf first, JSON after, plain JSON last.
CLIENT_GO_POML = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
                  "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")


def raw(h, path, accept="application/json", timeout=15):
    """GET through http.client: (status, headers, body bytes)."""
    conn = h.connection(timeout=timeout)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {h.token}", "Accept": accept})
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def raw_watch(h, path, accept, timeout=10):
    conn = h.connection(timeout=timeout)
    conn.request("GET", path, headers={"Authorization": f"Bearer {h.token}", "Accept": accept})
    resp = conn.getresponse()
    assert resp.status == 200, resp.read()

    def events(n):
        out = []
        while len(out) < n:
            line = resp.readline()
            if not line:
                break
            if line.strip():
                out.append(json.loads(line))
        return out
    return conn, resp, events


def test_crds_are_objects(capi_hub):
    h = capi_hub
    st, _, body = raw(h, CRDS + "/openshiftassistedconfigs.bootstrap.cluster.x-k8s.io")
    crd = json.loads(body)
    assert st == 200 and crd["kind"] == "CustomResourceDefinition"
    meta = crd["metadata"]
    assert meta["resourceVersion"] == "1" and meta["uid"] and meta["creationTimestamp"] and meta["generation"] == 1
    assert crd["status"]["storedVersions"] == ["v1alpha2"]
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"
    again = json.loads(raw(h, CRDS + "/openshiftassistedconfigs.bootstrap.cluster.x-k8s.io")[2])
    assert again["metadata"]["uid"] == meta["uid"]
    # list with a label selector: the Cluster API contract label
    st, _, body = raw(h, CRDS + "?labelSelector=cluster.x-k8s.io%2Fv1beta2")
    names = sorted(i["metadata"]["name"] for i in json.loads(body)["items"])
    assert names == sorted(["openshiftassistedconfigs.bootstrap.cluster.x-k8s.io",
                            "openshiftassistedconfigtemplates.bootstrap.cluster.x-k8s.io",
                            "openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io",
                            "metal3clusters.infrastructure.cluster.x-k8s.io",
                            "metal3machines.infrastructure.cluster.x-k8s.io",
                            "metal3machinetemplates.infrastructure.cluster.x-k8s.io",
                            "metal3datatemplates.infrastructure.cluster.x-k8s.io",
                            "metal3datas.infrastructure.cluster.x-k8s.io",
                            "metal3dataclaims.infrastructure.cluster.x-k8s.io"])
    st, _, body = raw(h, CRDS + "?fieldSelector=metadata.name%3Dclusters.cluster.x-k8s.io")
    assert [i["metadata"]["name"] for i in json.loads(body)["items"]] == ["clusters.cluster.x-k8s.io"]
    disc = h.get_json("/apis/apiextensions.k8s.io/v1")
    assert "watch" in [r for r in disc["resources"] if r["name"] == "customresourcedefinitions"][0]["verbs"]
    out = h.kubectl("get", "crd", "machines.cluster.x-k8s.io").stdout
    assert "machines.cluster.x-k8s.io" in out and "CREATED AT" in out


def test_crd_watch(capi_hub):
    h = capi_hub
    total = len(json.loads(raw(h, CRDS)[2])["items"])
    conn, resp, events = raw_watch(h, CRDS + "?watch=1&resourceVersion=0&timeoutSeconds=3", "application/json")
    try:
        evs = events(total + 1)
        assert len(evs) == total  # then the stream ends at its timeout
        assert {e["type"] for e in evs} == {"ADDED"}
        assert all(e["object"]["kind"] == "CustomResourceDefinition" for e in evs)
    finally:
        conn.close()
    conn, resp, events = raw_watch(
        h, CRDS + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        "&labelSelector=cluster.x-k8s.io%2Fprovider%3Dcluster-api&timeoutSeconds=3", POM)
    try:
        evs = events(5)
        assert [e["type"] for e in evs] == ["ADDED"] * 4 + ["BOOKMARK"]
        assert all(e["object"]["kind"] == "PartialObjectMetadata" for e in evs)
        assert evs[0]["object"]["apiVersion"] == "meta.k8s.io/v1"
        assert evs[0]["object"]["metadata"]["labels"]["cluster.x-k8s.io/provider"] == "cluster-api"
        assert "spec" not in evs[0]["object"]
        assert evs[4]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    finally:
        conn.close()
    # From a resourceVersion: nothing happens until the timeout.
    conn, resp, events = raw_watch(h, CRDS + "?watch=1&resourceVersion=1&timeoutSeconds=2", "application/json")
    try:
        assert events(1) == []
    finally:
        conn.close()
    st, _, body = raw(h, CRDS + "?watch=1&resourceVersionMatch=NotOlderThan")
    assert st == 422, body


def test_metadata_only(capi_hub, ns):
    h = capi_hub
    # A CRD, as Cluster API reads the contract label.
    st, hdrs, body = raw(h, CRDS + "/openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io", POM)
    pom = json.loads(body)
    assert st == 200 and hdrs["Content-Type"].startswith("application/json")
    assert pom["kind"] == "PartialObjectMetadata" and pom["apiVersion"] == "meta.k8s.io/v1"
    assert pom["metadata"]["labels"]["cluster.x-k8s.io/v1beta2"] == "v1alpha3"
    assert set(pom) == {"kind", "apiVersion", "metadata"}
    st, _, body = raw(h, CRDS, CLIENT_GO_POML)
    lst = json.loads(body)
    assert lst["kind"] == "PartialObjectMetadataList" and lst["apiVersion"] == "meta.k8s.io/v1"
    assert lst["metadata"]["resourceVersion"] == "1"
    assert all(set(i) == {"kind", "apiVersion", "metadata"} for i in lst["items"])
    # Other kinds: a Secret (a built-in kind with a protobuf form) and a custom resource.
    h.kubectl("create", "secret", "generic", "s1", "-n", ns, "--from-literal=k=v")
    h.kubectl("label", "secret", "s1", "-n", ns, "x=y")
    st, hdrs, body = raw(h, f"/api/v1/namespaces/{ns}/secrets/s1",
                         "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,"
                         "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
    pom = json.loads(body)
    assert st == 200 and pom["kind"] == "PartialObjectMetadata" and "data" not in pom
    assert pom["metadata"]["labels"] == {"x": "y"}
    ok(h.request("POST", OAC.format(v="v1alpha2", ns=ns), {
        "apiVersion": "bootstrap.cluster.x-k8s.io/v1alpha2", "kind": "OpenshiftAssistedConfig",
        "metadata": {"name": "m1", "labels": {"l": "1"}}, "spec": {}}), 201)
    st, _, body = raw(h, OAC.format(v="v1alpha2", ns=ns) + "?labelSelector=l%3D1", CLIENT_GO_POML)
    lst = json.loads(body)
    assert lst["kind"] == "PartialObjectMetadataList"
    assert [i["metadata"]["name"] for i in lst["items"]] == ["m1"]
    assert lst["items"][0]["kind"] == "PartialObjectMetadata" and "spec" not in lst["items"][0]
    st, _, body = raw(h, OAC.format(v="v1alpha1", ns=ns) + "/m1",
                      "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1")
    pom = json.loads(body)
    assert pom["apiVersion"] == "meta.k8s.io/v1beta1" and pom["metadata"]["name"] == "m1"
    conn, resp, events = raw_watch(h, OAC.format(v="v1alpha2", ns=ns) + "?watch=1&timeoutSeconds=5", POM)
    try:
        ev = events(1)[0]
        assert ev["type"] == "ADDED" and ev["object"]["kind"] == "PartialObjectMetadata"
        h.kubectl("label", "oac", "m1", "-n", ns, "more=yes")
        ev = events(1)[0]
        assert ev["type"] == "MODIFIED" and ev["object"]["metadata"]["labels"]["more"] == "yes"
        assert "spec" not in ev["object"]
    finally:
        conn.close()
    # A write answered metadata-only, as the metadata client's Patch asks.
    r = h.request("PATCH", OAC.format(v="v1alpha2", ns=ns) + "/m1", {"metadata": {"labels": {"p": "q"}}},
                  content_type="application/merge-patch+json", headers={"Accept": POM})
    got = ok(r)
    assert got["kind"] == "PartialObjectMetadata" and got["metadata"]["labels"]["p"] == "q"


def test_server_side_apply_through_v1alpha2(capi_hub, ns):
    h = capi_hub
    obj = oacp_v1alpha2("ssa")
    obj["metadata"]["namespace"] = ns
    h.apply_obj(obj, "--server-side")
    v3 = ok(h.get(OACP.format(v="v1alpha3", ns=ns) + "/ssa"))
    assert v3["spec"]["machineTemplate"]["deletion"]["nodeDrainTimeoutSeconds"] == 90
    assert v3["spec"]["machineTemplate"]["infrastructureRef"]["apiGroup"] == "infrastructure.cluster.x-k8s.io"
    obj["spec"]["replicas"] = 1
    h.apply_obj(obj, "--server-side")
    v2 = ok(h.get(OACP.format(v="v1alpha2", ns=ns) + "/ssa"))
    assert v2["spec"]["replicas"] == 1 and v2["spec"]["machineTemplate"]["nodeDrainTimeout"] == "1m30s"
