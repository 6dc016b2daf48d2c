"""InfraEnv and discovery images as upstream's own kube-API scenarios
(subsystem/kubeapi/kubeapi_test.go in openshift/assisted-service) expect
them: the ignition override moves both the ISO and the initrd URLs, an
invalid override is reported with upstream's ignition message (on the
InfraEnv and on an Agent), the image type picks the ISO file (s390x always
the full ISO), an InfraEnv's architecture is checked against its cluster's,
and OS images accept both spellings of an architecture."""
import json

import pytest

from conftest import BUILD, wait_for
from test_agents import sim_host  # noqa: F401 (fixture)
from test_install import cluster_deployment, multi_node_aci, setup_common, NS

TEST_ISO = BUILD / "testiso" / "discovery-test.iso"
# upstream's fakeIgnitionConfigOverride and badIgnitionConfigOverride
FAKE_OVERRIDE = ('{"ignition": {"version": "3.1.0"}, "storage": {"files": [{"path": "/tmp/example", '
                 '"contents": {"source": "data:text/plain;base64,aGVscGltdHJhcHBlZGluYXN3YWdnZXJzcGVj"}}]}}')
BAD_OVERRIDE = "bad ignition config"


def infraenv_obj(name, cluster=None, **spec):
    obj = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
           "metadata": {"name": name, "namespace": NS},
           "spec": {"pullSecretRef": {"name": "pull-secret"}, **spec}}
    if cluster:
        obj["spec"]["clusterRef"] = {"name": cluster, "namespace": NS}
    return obj


def image_created(hub, name):
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", name)
    for c in ie.get("status", {}).get("conditions", []):
        if c["type"] == "ImageCreated":
            return ie, c
    return ie, None


def wait_image(hub, name, status="True", what=None):
    def check():
        ie, c = image_created(hub, name)
        return (ie, c) if c and c["status"] == status else None
    return wait_for(check, timeout=30, what=what or f"ImageCreated {status} on {name}")


def os_images(tmp_path, entries):
    p = tmp_path / "os-images.json"
    p.write_text(json.dumps([{"openshift_version": v, "cpu_architecture": a, "url": str(TEST_ISO),
                              "version": f"{v.replace('.', '')}.94.202601010000-0"} for v, a in entries]))
    return p


@pytest.fixture
def ahub(hub_factory, tmp_path):
    if not TEST_ISO.is_file():
        pytest.skip(f"{TEST_ISO} not built (xorriso missing?)")
    # Both spellings of each architecture, as upstream's OS image lists carry them.
    f = os_images(tmp_path, [("4.16", "amd64"), ("4.16", "aarch64"), ("4.16", "s390x")])
    hub = hub_factory(extra_args=["--os-images", str(f)])
    setup_common(hub)
    return hub


def test_ignition_override_changes_iso_and_initrd_urls(ahub):
    hub = ahub
    hub.apply_obj(infraenv_obj("ign"))
    ie, _ = wait_image(hub, "ign")
    iso, initrd, created = (ie["status"]["isoDownloadURL"], ie["status"]["bootArtifacts"]["initrd"],
                            ie["status"]["createdTime"])
    # An annotation is not an input of the image: nothing moves.
    hub.kubectl("-n", NS, "annotate", "infraenv", "ign", "some=thing")
    hub.kubectl("-n", NS, "patch", "infraenv", "ign", "--type", "merge", "-p",
                json.dumps({"spec": {"ignitionConfigOverride": FAKE_OVERRIDE}}))

    def moved():
        s = hub.kubectl_json("-n", NS, "get", "infraenv", "ign")["status"]
        return s if s["isoDownloadURL"] != iso and s["bootArtifacts"]["initrd"] != initrd else None
    s = wait_for(moved, timeout=30, what="ISO and initrd URLs changed")
    assert s["createdTime"] != created, (created, s["createdTime"])
    # Both new URLs serve.
    from test_discovery import fetch
    status, _, body = fetch(hub, s["bootArtifacts"]["initrd"])
    assert status == 200 and body[:2] == b"\x1f\x8b", (status, body[:100])


def test_invalid_ignition_override_message(ahub):
    hub = ahub
    hub.apply_obj(infraenv_obj("badign", ignitionConfigOverride=BAD_OVERRIDE))
    ie, c = wait_image(hub, "badign", "False")
    assert c["reason"] == "ImageCreationError", c
    assert c["message"] == "Failed to create image: error parsing ignition: config is not valid", c
    assert "isoDownloadURL" not in ie["status"]


def test_image_type_full_iso_and_change(ahub):
    hub = ahub
    hub.apply_obj(infraenv_obj("types"))
    ie, _ = wait_image(hub, "types")
    minimal = ie["status"]["isoDownloadURL"]
    assert "/minimal.iso" in minimal, minimal
    hub.kubectl("-n", NS, "patch", "infraenv", "types", "--type", "merge", "-p",
                '{"spec":{"imageType":"full-iso"}}')

    def full():
        u = hub.kubectl_json("-n", NS, "get", "infraenv", "types")["status"]["isoDownloadURL"]
        return u if u != minimal else None
    url = wait_for(full, timeout=30, what="full-iso URL")
    assert "/4.16/" in url and url.split("?")[0].endswith("/full.iso"), url
    from test_discovery import fetch
    status, _, body = fetch(hub, url, {"Range": "bytes=32768-32775"})
    assert status == 206 and body[1:6] == b"CD001", (status, body)
    hub.kubectl("-n", NS, "patch", "infraenv", "types", "--type", "merge", "-p",
                '{"spec":{"imageType":"minimal-iso"}}')
    wait_for(lambda: "/minimal.iso" in
             hub.kubectl_json("-n", NS, "get", "infraenv", "types")["status"]["isoDownloadURL"],
             timeout=30, what="back to minimal-iso")

    # s390x: always the full ISO, with or without an image type.
    hub.apply_obj(infraenv_obj("z", cpuArchitecture="s390x"))
    ie, _ = wait_image(hub, "z")
    assert ie["status"]["isoDownloadURL"].split("?")[0].endswith("/s390x/full.iso"), ie["status"]
    hub.apply_obj(infraenv_obj("z2", cpuArchitecture="s390x", imageType="minimal-iso"))
    ie, _ = wait_image(hub, "z2")
    assert ie["status"]["isoDownloadURL"].split("?")[0].endswith("/s390x/full.iso"), ie["status"]


def test_os_images_accept_both_arch_spellings(ahub):
    hub = ahub
    for name, arch in (("arm", "arm64"), ("aarch", "aarch64"), ("x86", "x86_64"), ("amd", "amd64")):
        hub.apply_obj(infraenv_obj(name, cpuArchitecture=arch))
    for name in ("arm", "aarch", "x86", "amd"):
        ie, c = wait_image(hub, name)
        assert c["reason"] == "InfraEnvAvailable", c
        assert "/4.16/" in ie["status"]["isoDownloadURL"], ie["status"]
    from test_discovery import fetch
    ie, _ = image_created(hub, "arm")
    status, _, body = fetch(hub, ie["status"]["isoDownloadURL"], {"Range": "bytes=0-15"})
    assert status == 206, status


def test_cpu_architecture_mismatch_with_cluster(ahub):
    hub = ahub
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": "img416"},
                   "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64"}})
    hub.apply_obj(cluster_deployment("archcd", "archaci"))
    aci = multi_node_aci("archaci", "archcd")
    aci["spec"]["imageSetRef"] = {"name": "img416"}
    hub.apply_obj(aci)
    hub.apply_obj(infraenv_obj("armie", cluster="archcd", cpuArchitecture="arm64"))
    ie, c = wait_image(hub, "armie", "False")
    assert c["reason"] == "ImageCreationError", c
    assert c["message"] == "Failed to create image: Specified CPU architecture (arm64) doesn't match the cluster (x86_64)", c
    # The cluster's architecture, in either spelling, is fine (cpuArchitecture
    # is immutable: new InfraEnvs).
    hub.apply_obj(infraenv_obj("x86ie", cluster="archcd", cpuArchitecture="x86_64"))
    hub.apply_obj(infraenv_obj("amdie", cluster="archcd", cpuArchitecture="amd64"))
    wait_image(hub, "x86ie")
    wait_image(hub, "amdie")


def test_no_release_for_architecture_of_a_multi_cluster(ahub):
    hub = ahub
    hub.apply_obj({"apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                   "metadata": {"name": "multi416"},
                   "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.16.0-multi"}})
    hub.apply_obj(cluster_deployment("multicd", "multiaci"))
    aci = multi_node_aci("multiaci", "multicd")
    aci["spec"]["imageSetRef"] = {"name": "multi416"}
    hub.apply_obj(aci)
    hub.apply_obj(infraenv_obj("marm", cluster="multicd", cpuArchitecture="arm64"))
    hub.apply_obj(infraenv_obj("mx86", cluster="multicd", cpuArchitecture="x86_64"))
    hub.apply_obj(infraenv_obj("mfake", cluster="multicd", cpuArchitecture="fake"))
    wait_image(hub, "marm")
    wait_image(hub, "mx86")
    _, c = wait_image(hub, "mfake", "False")
    assert "does not have a matching OpenShift release image" in c["message"], c
    assert c["message"].startswith("Failed to create image: The requested RHCOS version (4.16, arch: fake)"), c


def test_agent_invalid_ignition_override_message(sim_host):
    # upstream: "deploy clusterDeployment with agent and invalid ignition config"
    from test_agents import conds
    h = sim_host
    h.patch_spec(ignitionConfigOverrides=BAD_OVERRIDE)
    a = h.wait_input_error("error parsing ignition: config is not valid")
    assert conds(a)["SpecSynced"]["reason"] == "InputError"
    h.patch_spec(ignitionConfigOverrides=FAKE_OVERRIDE)
    h.wait_ok()
