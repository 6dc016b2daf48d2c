"""Cluster spec validation as upstream's own kube-API scenarios
(subsystem/kubeapi/kubeapi_test.go in openshift/assisted-service) expect it:
the AgentClusterInstall's SpecSynced condition says InputError or
BackendError with upstream's message for an invalid pull secret, OpenShiftSDN
where upstream refuses it, user-managed networking with VIPs (on create and
on update), a manifests ConfigMap key that is not a manifest file name, a
missing mirror-registry ConfigMap and an install-config override with an
unknown key; and a kubernetes.io/dockerconfigjson Secret that is not JSON
is refused at create, as kube-apiserver refuses it."""
import base64
import json
import re

import pytest

from conftest import wait_for
from test_install import NS, cluster_deployment, multi_node_aci, setup_common

INPUT = "The Spec could not be synced due to an input error: "
BACKEND = "The Spec could not be synced due to backend error: "
MANIFEST = """apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  labels:
    machineconfiguration.openshift.io/role: master
  name: 99-openshift-machineconfig-master-kargs
spec:
  kernelArguments:
    - 'loglevel=7'"""


@pytest.fixture
def chub(hub_factory):
    hub = hub_factory()
    setup_common(hub)
    return hub


def spec_synced(hub, name):
    aci = hub.kubectl_json("-n", NS, "get", "aci", name)
    for c in aci.get("status", {}).get("conditions", []):
        if c["type"] == "SpecSynced":
            return c
    return None


def wait_synced(hub, name, reason, timeout=40):
    def check():
        c = spec_synced(hub, name)
        return c if c and c["reason"] == reason else None
    return wait_for(check, timeout=timeout, interval=0.3, what=f"SpecSynced {reason} on {name}")


def cluster(hub, name, **spec):
    hub.apply_obj(cluster_deployment(name, name + "-aci"))
    aci = multi_node_aci(name + "-aci", name)
    aci["spec"].update(spec)
    hub.apply_obj(aci)
    return name + "-aci"


def sno(hub, name, network_type, imageset=None):
    hub.apply_obj(cluster_deployment(name, name + "-aci"))
    aci = multi_node_aci(name + "-aci", name, cp=1, workers=0)
    aci["spec"]["networking"]["networkType"] = network_type
    if imageset:
        aci["spec"]["imageSetRef"] = {"name": imageset}
    hub.apply_obj(aci)
    return name + "-aci"


def patch_aci(hub, name, body):
    hub.kubectl("-n", NS, "patch", "aci", name, "--type", "merge", "-p", json.dumps(body))


def test_invalid_pull_secret_is_a_backend_error(chub):
    hub = chub
    # upstream's "Pull Secret validation error": the Secret (Opaque) holds "wrong_secret".
    hub.kubectl("-n", NS, "create", "secret", "generic", "wrong-ps", "--from-literal=.dockerconfigjson=wrong_secret")
    cd = cluster_deployment("badps", "badps-aci")
    cd["spec"]["pullSecretRef"] = {"name": "wrong-ps"}
    hub.apply_obj(cd)
    hub.apply_obj(multi_node_aci("badps-aci", "badps"))
    c = wait_synced(hub, "badps-aci", "BackendError")
    assert c["status"] == "False"
    assert c["message"] == (BACKEND + "invalid pull secret data in secret wrong-ps: "
                            "pull secret must be a well-formed JSON"), c
    assert "wrong_secret" not in c["message"]  # never a secret in a status
    # Well-formed, no auths.
    hub.kubectl("-n", NS, "create", "secret", "generic", "noauths-ps", "--from-literal=.dockerconfigjson={}")
    hub.kubectl("-n", NS, "patch", "cd", "badps", "--type", "merge", "-p",
                '{"spec":{"pullSecretRef":{"name":"noauths-ps"}}}')
    wait_for(lambda: (spec_synced(hub, "badps-aci") or {}).get("message") ==
             BACKEND + "invalid pull secret data in secret noauths-ps: pull secret must contain 'auths' JSON-object field",
             timeout=40, what="no-auths message")
    # Fixed: synced.
    hub.kubectl("-n", NS, "patch", "cd", "badps", "--type", "merge", "-p",
                '{"spec":{"pullSecretRef":{"name":"pull-secret"}}}')
    wait_synced(hub, "badps-aci", "SyncOK")


def test_sdn_on_sno_and_on_new_versions(chub):
    hub = chub
    # upstream's "Verify NetworkType configuration with SNO"
    name = sno(hub, "sdnsno", "OpenShiftSDN")
    c = wait_synced(hub, name, "InputError")
    assert c["message"] == INPUT + "OpenShiftSDN network type is not allowed in single node mode", c
    patch_aci(hub, name, {"spec": {"networking": {"networkType": "OVNKubernetes"}}})
    wait_synced(hub, name, "SyncOK")
    patch_aci(hub, name, {"spec": {"networking": {"networkType": "OpenShiftSDN"}}})
    wait_synced(hub, name, "InputError")

    # OpenShiftSDN is gone from 4.15 on (the image set here is 4.16.0).
    name = cluster(hub, "sdn416", networking={**multi_node_aci("x", "y")["spec"]["networking"],
                                              "networkType": "OpenShiftSDN"})
    c = wait_synced(hub, name, "InputError")
    assert c["message"] == INPUT + "Openshift version 4.16.0 is not supported for OpenShiftSDN NetworkType", c
    # 4.14 still has it.
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": "img414"},
                   "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.14.0-x86_64"}})
    name = cluster(hub, "sdn414", imageSetRef={"name": "img414"},
                   networking={**multi_node_aci("x", "y")["spec"]["networking"], "networkType": "OpenShiftSDN"})
    wait_synced(hub, name, "SyncOK")


def bm_networking(umn):
    return {"userManagedNetworking": umn,
            "clusterNetwork": [{"cidr": "10.128.0.0/14", "hostPrefix": 23}],
            "machineNetwork": [{"cidr": "192.168.126.0/24"}],
            "serviceNetwork": ["172.30.0.0/16"]}


def test_user_managed_networking_with_vips(chub):
    hub = chub
    # upstream's "Fail Create ACI with UserManagedNetworking true and cluster VIPs"
    hub.apply_obj(cluster_deployment("umnc", "umnc-aci"))
    aci = multi_node_aci("umnc-aci", "umnc")
    aci["spec"].pop("platformType")
    aci["spec"].update({"apiVIPs": ["192.168.126.100"], "ingressVIPs": ["192.168.126.101"],
                        "networking": bm_networking(True)})
    hub.apply_obj(aci)
    c = wait_synced(hub, "umnc-aci", "InputError")
    assert c["message"] == INPUT + "API VIPs cannot be set with User Managed Networking", c

    # upstream's "Fail Update ACI with UserManagedNetworking true when VIPs were already set"
    hub.apply_obj(cluster_deployment("umnu", "umnu-aci"))
    aci = multi_node_aci("umnu-aci", "umnu")
    aci["spec"].pop("platformType")
    aci["spec"].update({"apiVIPs": ["192.168.126.100"], "ingressVIPs": ["192.168.126.101"],
                        "networking": bm_networking(False)})
    hub.apply_obj(aci)
    wait_synced(hub, "umnu-aci", "SyncOK")
    patch_aci(hub, "umnu-aci", {"spec": {"networking": {"userManagedNetworking": True}}})
    c = wait_synced(hub, "umnu-aci", "InputError")
    assert c["message"] == INPUT + "User Managed Networking cannot be set with API VIPs", c
    # Dropping the VIPs makes it right.
    patch_aci(hub, "umnu-aci", {"spec": {"apiVIPs": None, "ingressVIPs": None}})
    wait_synced(hub, "umnu-aci", "SyncOK")


BAD_NAME = re.compile(r"^" + re.escape(INPUT) + r"Manifest filename of file (\S+) for cluster ID [0-9a-f-]{36} "
                      r"is invalid\. Only json, yaml and yml or patch extensions are supported$")


def test_manifest_file_names(chub):
    hub = chub
    # upstream's "deploy agentClusterInstall with manifest reference with bad manifest and then fixing it"
    name = cluster(hub, "man1", manifestsConfigMapRef={"name": "cluster-install-config"})
    c = wait_synced(hub, name, "BackendError")
    hub.apply_obj({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cluster-install-config", "namespace": NS},
                   "data": {"test.yaml": MANIFEST, "test.dc": "test"}})
    c = wait_synced(hub, name, "InputError")
    m = BAD_NAME.match(c["message"])
    assert m and m.group(1) == "test.dc", c
    hub.apply_obj({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "cluster-install-config", "namespace": NS},
                   "data": {"test.yaml": MANIFEST, "test2.yaml": MANIFEST}})
    wait_synced(hub, name, "SyncOK")

    # upstream's "multiple manifest references (in invalid format and then fix it)"
    name = cluster(hub, "man2", manifestsConfigMapRefs=[{"name": "cic-1"}, {"name": "cic-2"}])
    wait_synced(hub, name, "BackendError")
    for cm, data in (("cic-1", {"test1.yaml": MANIFEST, "test.dc.1": "test"}),
                     ("cic-2", {"test2.yaml": MANIFEST, "test.dc.2": "test"})):
        hub.apply_obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm, "namespace": NS},
                       "data": data})
    c = wait_synced(hub, name, "InputError")
    m = BAD_NAME.match(c["message"])
    assert m and m.group(1) in ("test.dc.1", "test.dc.2"), c
    for cm, data in (("cic-1", {"test1.yaml": MANIFEST}), ("cic-2", {"test2.json": '{"kind": "X"}'})):
        hub.kubectl("-n", NS, "delete", "configmap", cm)
        hub.apply_obj({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm, "namespace": NS},
                       "data": data})
    wait_synced(hub, name, "SyncOK")


def test_missing_mirror_registry_config_map(chub):
    hub = chub
    name = cluster(hub, "mirror", mirrorRegistryRef={"name": "user-provided-config-map", "namespace": NS})
    c = wait_synced(hub, name, "InputError")
    assert c["message"] == (INPUT + "Failed to get referenced ConfigMap: "
                            "ConfigMap \"user-provided-config-map\" not found"), c


def test_install_config_override_unknown_key(chub):
    hub = chub
    name = cluster(hub, "ico")
    wait_synced(hub, name, "SyncOK")
    hub.kubectl("-n", NS, "annotate", "aci", name,
                'agent-install.openshift.io/install-config-overrides={"controlPlane": {"hyperthreading": "Enabled"}, "foo": 1}')
    c = wait_synced(hub, name, "InputError")
    assert c["message"] == (INPUT + "Failed to parse 'agent-install.openshift.io/install-config-overrides' "
                            "annotation: json: unknown field \"foo\""), c
    hub.kubectl("-n", NS, "annotate", "--overwrite", "aci", name,
                'agent-install.openshift.io/install-config-overrides={"controlPlane": {"hyperthreading": "Enabled"}}')
    wait_synced(hub, name, "SyncOK")


def test_dockerconfigjson_secret_must_be_json(chub):
    hub = chub
    r = hub.kubectl("-n", NS, "create", "secret", "generic", "notjson", "--type=kubernetes.io/dockerconfigjson",
                    "--from-literal=.dockerconfigjson=wrong_secret", check=False)
    assert r.returncode != 0
    # kubectl's own prefix for `create secret`, then kube-apiserver's message.
    assert r.stderr.strip() == (
        'error: failed to create secret Secret "notjson" is invalid: data[.dockerconfigjson]: '
        'Invalid value: "<secret contents redacted>": '
        "invalid character 'w' looking for beginning of value"), r.stderr
    # The 422 Status, as kube-apiserver answers it.
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "raw"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(b'{"auths": {').decode()}}
    resp = hub.request("POST", f"/api/v1/namespaces/{NS}/secrets", json.dumps(body).encode())
    assert resp.status == 422, resp
    st = resp.json()
    assert st["reason"] == "Invalid" and st["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "field": "data[.dockerconfigjson]",
         "message": 'Invalid value: "<secret contents redacted>": unexpected end of JSON input'}], st
    # No key at all is let through (kube-apiserver would say Required value):
    # upstream's own example agentClusterInstall-with-ignitionEndpoint.yaml
    # has such a Secret, and every upstream example must apply.
    body["data"] = {"tls.crt": base64.b64encode(b"x").decode()}
    resp = hub.request("POST", f"/api/v1/namespaces/{NS}/secrets", json.dumps(body).encode())
    assert resp.status == 201, resp
    # Updating a good one to garbage is refused the same way; nothing changed.
    r = hub.kubectl("-n", NS, "patch", "secret", "pull-secret", "--type", "merge", "-p",
                    json.dumps({"data": {".dockerconfigjson": base64.b64encode(b"nope").decode()}}), check=False)
    assert r.returncode != 0 and "invalid character 'o' in literal null (expecting 'u')" in r.stderr, r.stderr
    # JSON is enough (kube-apiserver checks nothing more).
    hub.kubectl("-n", NS, "create", "secret", "generic", "isjson", "--type=kubernetes.io/dockerconfigjson",
                "--from-literal=.dockerconfigjson={}")
