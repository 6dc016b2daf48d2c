"""BareMetalHosts provisioned from a disk image (spec.image format qcow2/raw/...,
spec.userData, spec.metaData) the way Ironic's direct deploy does it: the hub
boots the machine on its deploy ramdisk (the ironic agent, from the hub's image
service), the agent looks its node up and heartbeats to the hub's Ironic API,
the hub runs the write_image deploy step with the image and a config drive, then
boots the disk.  The simulated machine's disk then runs the config drive's
user_data: a discovery ignition, so an Agent registers in that InfraEnv (what
CAPM3 + CAPOA rely on).  The image URL is never downloaded."""
import base64
import json
import urllib.error
import urllib.request

import pytest

from conftest import wait_for
from test_bmcsim import Bmc
from test_discovery import NS, fetch, setup_infraenv

IMAGE = {"url": "https://rhcos.example.com/rhcos-4.14-x86_64-openstack.x86_64.qcow2",
         "checksum": "6c1d8c9a0a9d1e5b7e7f4b1d1b2b8f0e1c6c4e0c3a1b2d3e4f5a6b7c8d9e0f1a2",
         "checksumType": "sha256", "format": "qcow2"}
IE_LABEL = "infraenvs.agent-install.openshift.io"


def bmhs(hub):
    return {b["metadata"]["name"]: b for b in hub.kubectl_json("-n", NS, "get", "baremetalhosts")["items"]}


def state(b):
    return b.get("status", {}).get("provisioning", {}).get("state", "")


def secret(hub, name, data):
    hub.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": NS},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}}))


def patch(hub, name, spec):
    hub.kubectl("-n", NS, "patch", "bmh", name, "--type=merge", "-p", json.dumps({"spec": spec}))


def ironic(hub, method, path, body=None):
    req = urllib.request.Request(hub.base_url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, context=hub.ssl_context(), timeout=15) as r:
            text = r.read()
            return r.status, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"null")


@pytest.fixture
def setup(hub_factory, tmp_path, sims):
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "6s"])
    ie = setup_infraenv(hub)
    # No --bmh-infraenv: these BMHs are not BMAC's (as CAPM3's are not).
    b = Bmc(tmp_path, hosts=2, args=["--bmh-namespace", NS, "--cacert", str(hub.ca_path),
                                     "--max-poll-seconds", "2"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))
    wait_for(lambda: len(bmhs(hub)) == 2 and all(state(x) == "available" for x in bmhs(hub).values()),
             timeout=60, what="2 BMHs available")
    # The converged flow (the default) makes PreprovisioningImages only for BMHs
    # labelled with an InfraEnv: these deploy a disk image with the hub's own ramdisk.
    assert hub.kubectl_json("-n", NS, "get", "preprovisioningimages")["items"] == []
    return hub, ie, b


def test_image_deploy_runs_the_config_drive_ignition(setup):
    hub, ie, b = setup
    status, _, ign = fetch(hub, ie["status"]["bootArtifacts"]["discoveryIgnitionURL"])
    assert status == 200
    # CAPOA's bootstrap Secret: the ignition under "value", with "format"; extra
    # files appended as CAPOA does.
    doc = json.loads(ign)
    doc["storage"].setdefault("files", []).append(
        {"path": "/usr/local/bin/capoa-marker", "mode": 493, "overwrite": True,
         "contents": {"source": "data:,capoa"}})
    secret(hub, "worker-0-bootstrap", {"value": json.dumps(doc), "format": "ignition"})
    secret(hub, "worker-0-metadata", {"metaData": "providerID: metal3://test/worker-0\nlocal-hostname: worker-0\n"})
    name = sorted(bmhs(hub))[0]
    uid = bmhs(hub)[name]["metadata"]["uid"]
    patch(hub, name, {"image": IMAGE, "online": True, "userData": {"name": "worker-0-bootstrap", "namespace": NS},
                      "metaData": {"name": "worker-0-metadata", "namespace": NS},
                      "rootDeviceHints": {"deviceName": "/dev/sda"}})
    x = wait_for(lambda: bmhs(hub)[name] if state(bmhs(hub)[name]) == "provisioned" else None,
                 timeout=120, what="the BMH provisioned from its disk image")
    st = x["status"]
    assert st["provisioning"]["image"] == IMAGE
    assert st["provisioning"]["ID"] == uid
    assert st["provisioning"]["bootMode"] == "UEFI"
    assert st["provisioning"]["rootDeviceHints"] == {"deviceName": "/dev/sda"}
    assert st["poweredOn"] is True and st["operationalStatus"] == "OK" and st["errorMessage"] == ""
    # The machine booted its disk and ran the discovery ignition from the config
    # drive: an Agent registers in that InfraEnv.
    ie_name = ie["metadata"]["name"]

    def agent():
        items = [a for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]
                 if a["metadata"].get("labels", {}).get(IE_LABEL) == ie_name]
        return items[0] if items else None
    wait_for(agent, timeout=120, what="an Agent in the InfraEnv of the config drive's ignition")
    log = "\n".join(b.reader.snapshot())
    assert f"METADATA_NAME={name}" in log and "METADATA_LOCAL_HOSTNAME=worker-0" in log
    assert f"METADATA_UUID={uid}" in log
    # Nobody fetched the image URL (it does not resolve here); the token was never logged.
    assert "rhcos.example.com" not in log
    assert "agent_token" not in hub.log_text()
    # The ironic agent's node is gone once deployed: lookups find nothing.
    mac = x["spec"]["bootMACAddress"]
    status, body = ironic(hub, "GET", f"/v1/lookup?addresses={mac}")
    assert status == 404 and "faultstring" in json.loads(body["error_message"])

    # Releasing it as CAPM3 does (image, data and online cleared) deprovisions, with
    # metadata cleaning (BMO's default): the ironic agent erases the disk's metadata,
    # then the host is powered off, back to available.
    patch(hub, name, {"image": None, "userData": None, "metaData": None, "online": False,
                      "automatedCleaningMode": "metadata"})
    x = wait_for(lambda: bmhs(hub)[name] if state(bmhs(hub)[name]) == "available" else None,
                 timeout=120, what="the BMH cleaned and deprovisioned to available")
    assert x["status"]["poweredOn"] is False
    assert "image" not in x["status"]["provisioning"]
    assert b.status("off") == 1
    # The disk was wiped: powered on again, the machine has nothing to boot (it no
    # longer runs the config drive's discovery agent).
    patch(hub, name, {"online": True})
    wait_for(lambda: bmhs(hub)[name]["status"]["poweredOn"] is True, timeout=30, what="powered on")
    wait_for(lambda: b.status("no-boot") == 2, timeout=30, what="both machines with nothing to boot")


def test_image_deploy_bad_inputs(setup):
    hub, ie, b = setup
    name = sorted(bmhs(hub))[1]
    # checksumType outside the schema's enum: refused, naming the field.
    bad = dict(IMAGE, checksumType="crc32")
    r = hub.kubectl("-n", NS, "patch", "bmh", name, "--type=merge", "-p",
                    json.dumps({"spec": {"image": bad}}), check=False)
    assert r.returncode != 0 and "checksumType" in r.stderr
    # A missing userData Secret: a provisioning error naming it; nothing booted.
    patch(hub, name, {"image": IMAGE, "online": True, "userData": {"name": "no-such-secret", "namespace": NS}})

    def err():
        x = bmhs(hub)[name]
        return x if x.get("status", {}).get("errorType") == "provisioning error" else None
    x = wait_for(err, timeout=60, what="a provisioning error for the missing userData Secret")
    assert state(x) == "provisioning"
    assert "no-such-secret" in x["status"]["errorMessage"] and "spec.userData" in x["status"]["errorMessage"]
    assert x["status"]["operationalStatus"] == "error"
    # The Secret without a userData/value key: said so.
    secret(hub, "no-such-secret", {"other": "x"})
    wait_for(lambda: '"userData" (or "value")' in bmhs(hub)[name]["status"]["errorMessage"], timeout=60,
             what="the missing key named")
    # No checksum: refused as BMO's webhook does (live-iso only may omit it).
    patch(hub, name, {"image": {"url": IMAGE["url"], "format": "raw", "checksum": None, "checksumType": None}})
    wait_for(lambda: "spec.image.checksum is required" in bmhs(hub)[name]["status"]["errorMessage"],
             timeout=60, what="the missing checksum named")
    # The Ironic API refuses what it must: unknown node, bad token, no addresses.
    status, _ = ironic(hub, "GET", "/v1/lookup")
    assert status == 400
    status, _ = ironic(hub, "POST", "/v1/heartbeat/00000000-0000-0000-0000-000000000000",
                       {"callback_url": "http://x/", "agent_token": "t"})
    assert status == 404
    status, _ = ironic(hub, "POST", "/v1/heartbeat/x", "not an object")
    assert status == 400
