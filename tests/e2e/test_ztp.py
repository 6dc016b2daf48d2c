"""Zero-touch provisioning: BareMetalHosts booted by the hub through their BMC
(the simulator's Redfish service), paired with their Agents by the Bare Metal
Agent Controller.  Nobody boots anything by hand: `kubectl apply` of the
simulator's manifests, then the hub powers the machines off, inserts the
InfraEnv's ISO, boots Cd and powers them on; the Agents that register are
paired by MAC, labelled, approved, and their hardware lands on the BMH."""
import base64
import json

import pytest
import yaml

from conftest import wait_for
from test_bmcsim import Bmc
from test_discovery import NS, setup_infraenv

BMH_LABEL = "agent-install.openshift.io/bmh"


def bmhs(hub):
    return {b["metadata"]["name"]: b for b in hub.kubectl_json("-n", NS, "get", "baremetalhosts")["items"]}


def state(b):
    return b.get("status", {}).get("provisioning", {}).get("state", "")


@pytest.fixture
def ztp_hub(hub_factory):
    # The live-ISO flow (BMAC sets the BMH's image to the InfraEnv's ISO); the
    # converged flow, the default, has its own tests below.
    return hub_factory(extra_args=["--converged-flow=false", "--host-disconnect-timeout", "6s"])


def test_three_bmhs_provision_and_pair(ztp_hub, tmp_path, sims):
    hub = ztp_hub
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=3, args=["--bmh-namespace", NS, "--bmh-infraenv", name,
                                     "--cacert", str(hub.ca_path), "--max-poll-seconds", "2"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))

    def all_provisioned():
        cur = bmhs(hub)
        return cur if len(cur) == 3 and all(state(x) == "provisioned" for x in cur.values()) else None
    cur = wait_for(all_provisioned, timeout=90, what="3 BMHs provisioned")
    url = hub.kubectl_json("-n", NS, "get", "infraenv", name)["status"]["isoDownloadURL"]
    for x in cur.values():
        assert x["spec"]["image"] == {"url": url, "format": "live-iso"}
        assert x["status"]["poweredOn"] is True
        assert x["status"]["operationalStatus"] == "OK"
        assert x["status"]["errorMessage"] == ""
        assert x["status"]["provisioning"]["image"]["url"] == url
        assert "bmac.agent-install.openshift.io/deprovision" in x["metadata"]["finalizers"]
        assert "baremetalhost.metal3.io" in x["metadata"]["finalizers"]

    def paired():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        ok = [a for a in items if a["metadata"].get("labels", {}).get(BMH_LABEL) and a["spec"].get("approved")]
        return ok if len(ok) == 3 else None
    agents = wait_for(paired, timeout=120, what="3 Agents paired and approved")
    assert sorted(a["metadata"]["labels"][BMH_LABEL] for a in agents) == sorted(cur)

    # The hardware details BMAC writes are taken into status.hardware (and the
    # annotation consumed, as BMO does).
    def hardware():
        cur = bmhs(hub)
        ok = all(x.get("status", {}).get("hardware", {}).get("hostname") and
                 "inspect.metal3.io/hardwaredetails" not in x["metadata"].get("annotations", {})
                 for x in cur.values())
        return cur if ok else None
    cur = wait_for(hardware, timeout=60, what="status.hardware on the 3 BMHs")
    for a in agents:
        x = cur[a["metadata"]["labels"][BMH_LABEL]]
        hw = x["status"]["hardware"]
        inv = a["status"]["inventory"]
        assert hw["hostname"] == inv["hostname"]
        assert x["spec"]["bootMACAddress"].lower() in [n["mac"].lower() for n in hw["nics"]]
        assert hw["cpu"]["count"] == inv["cpu"]["count"]
        assert hw["firmware"] == {"bios": {}}
        assert hw["ramMebibytes"] == inv["memory"]["physicalBytes"] // (1 << 20)
    # The machines were booted by the hub alone: three boots from the ISO.
    assert b.status("off") == 0
    # The live-ISO flow has no PreprovisioningImages (as upstream without ALLOW_CONVERGED_FLOW).
    assert hub.kubectl_json("-n", NS, "get", "preprovisioningimages")["items"] == []


def test_bmh_annotations_reach_the_agent(ztp_hub, tmp_path, sims):
    hub = ztp_hub
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--bmh-infraenv", name,
                                     "--cacert", str(hub.ca_path), "--max-poll-seconds", "2"])
    sims.append(b)
    # The annotations are on the BMH from the start (as GitOps would write them):
    # the hardware details are written once, from the first Agent seen.
    docs = list(yaml.safe_load_all(b.manifests.read_text()))
    for d in docs:
        if d and d["kind"] == "BareMetalHost":
            d["metadata"].setdefault("annotations", {}).update({
                "bmac.agent-install.openshift.io/hostname": "ztp-host-0",
                "bmac.agent-install.openshift.io/role": "master",
                "bmac.agent-install.openshift.io/installer-args": '["--append-karg","nameserver=8.8.8.8"]',
                "bmac.agent-install.openshift.io.agent-label.example.com/rack": "r1"})
    hub.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    bname = next(iter(bmhs(hub)))

    def agent():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        return items[0] if items and items[0]["spec"].get("hostname") == "ztp-host-0" else None
    a = wait_for(agent, timeout=120, what="the Agent with the BMH's annotations")
    assert a["spec"]["role"] == "master"
    assert a["spec"]["approved"] is True
    assert json.loads(a["spec"]["installerArgs"]) == ["--append-karg", "nameserver=8.8.8.8"]
    assert a["metadata"]["labels"]["example.com/rack"] == "r1"
    assert a["metadata"]["labels"][BMH_LABEL] == bname
    # The hostname from the annotation is the one the hardware details name.
    wait_for(lambda: bmhs(hub)[bname].get("status", {}).get("hardware", {}).get("hostname") == "ztp-host-0",
             timeout=60, what="status.hardware.hostname from the Agent's spec hostname")
    # A bad annotation reaches the Agent as written and is refused there, on its
    # SpecSynced condition, as if set on the Agent by hand.
    hub.kubectl("-n", NS, "annotate", "--overwrite", "bmh", bname,
                "bmac.agent-install.openshift.io/installer-args=not json")

    def refused():
        a = hub.kubectl_json("-n", NS, "get", "agents")["items"][0]
        c = {c["type"]: c for c in a["status"].get("conditions", [])}.get("SpecSynced", {})
        return c if c.get("status") == "False" else None
    c = wait_for(refused, timeout=30, what="SpecSynced False for bad installer args")
    assert c["reason"] == "InputError" and "Fail to unmarshal installer args" in c["message"]
    hub.kubectl("-n", NS, "annotate", "bmh", bname, "bmac.agent-install.openshift.io/installer-args-")
    # reboot.metal3.io on a provisioned host: rebooted through the BMC, the key removed.
    boots = b.status("boots")
    hub.kubectl("-n", NS, "annotate", "bmh", bname, "reboot.metal3.io=")
    wait_for(lambda: "reboot.metal3.io" not in bmhs(hub)[bname]["metadata"].get("annotations", {}),
             timeout=30, what="the reboot annotation consumed")
    assert b.status("boots") == boots + 1
    # online: false powers it off, true on again.
    hub.kubectl("-n", NS, "patch", "bmh", bname, "--type=merge", "-p", '{"spec": {"online": false}}')
    wait_for(lambda: bmhs(hub)[bname]["status"]["poweredOn"] is False, timeout=30, what="poweredOn false")
    assert b.status("off") == 1
    hub.kubectl("-n", NS, "patch", "bmh", bname, "--type=merge", "-p", '{"spec": {"online": true}}')
    wait_for(lambda: bmhs(hub)[bname]["status"]["poweredOn"] is True, timeout=30, what="poweredOn true")
    assert b.status("off") == 0 and state(bmhs(hub)[bname]) == "provisioned"
    # Deleting the provisioned BMH: deprovisioned (powered off, media ejected), then
    # its finalizers go.
    hub.kubectl("-n", NS, "delete", "bmh", bname, "--timeout=60s", timeout=70)
    assert bmhs(hub) == {}
    assert b.status("off") == 1


def test_wrong_password_is_a_registration_error(ztp_hub, tmp_path, sims):
    hub = ztp_hub
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--bmh-infraenv", name,
                                     "--cacert", str(hub.ca_path), "--max-poll-seconds", "2"])
    sims.append(b)
    text = b.manifests.read_text()
    assert base64.b64encode(b"s3cret").decode() in text or "s3cret" in text
    wrong = text.replace(base64.b64encode(b"s3cret").decode(),
                         base64.b64encode(b"wrong-pw-1").decode()).replace("s3cret", "wrong-pw-1")
    hub.kubectl("apply", "-f", "-", input=wrong)
    bname = next(iter(bmhs(hub)))

    def errored():
        x = bmhs(hub)[bname]
        return x if x.get("status", {}).get("errorType") == "registration error" else None
    x = wait_for(errored, timeout=60, what="registration error")
    assert state(x) == "registering"
    assert x["status"]["operationalStatus"] == "error"
    assert "rejected the credentials" in x["status"]["errorMessage"]
    assert "HTTP 401" in x["status"]["errorMessage"]
    # Never provisioned: no image inserted, the machine stays off, no Agent.
    assert b.status("off") == 1
    assert hub.kubectl_json("-n", NS, "get", "agents")["items"] == []
    dumped = json.dumps(hub.kubectl_json("-n", NS, "get", "baremetalhosts,events"))
    assert "wrong-pw-1" not in dumped and "s3cret" not in dumped
    assert "wrong-pw-1" not in hub.log_text() and "s3cret" not in hub.log_text()

    # The right password (the Secret is watched): registered, provisioned, an Agent.
    hub.kubectl("apply", "-f", str(b.manifests))
    wait_for(lambda: state(bmhs(hub)[bname]) == "provisioned", timeout=60, what="provisioned after the fix")
    x = bmhs(hub)[bname]
    assert x["status"]["operationalStatus"] == "OK" and "errorType" not in x["status"]
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "agents")["items"], timeout=120, what="an Agent")
    assert "s3cret" not in hub.log_text()


def test_unsupported_driver_and_upstream_bmh(ztp_hub, tmp_path):
    hub = ztp_hub
    hub.create_namespace(NS)
    # An IPMI BMC: the hub speaks Redfish virtual media only.
    hub.apply_obj({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "ipmi-creds", "namespace": NS},
                   "stringData": {"username": "admin", "password": "pw-ipmi-9"}})
    hub.apply_obj({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                   "metadata": {"name": "ipmi-host", "namespace": NS},
                   "spec": {"online": True, "bootMACAddress": "52:54:00:00:00:01",
                            "bmc": {"address": "ipmi://192.0.2.1:623", "credentialsName": "ipmi-creds"}}})

    def errored(n):
        x = bmhs(hub).get(n, {})
        return x if x.get("status", {}).get("errorType") == "registration error" else None
    x = wait_for(lambda: errored("ipmi-host"), timeout=30, what="registration error for ipmi")
    assert "unsupported BMC driver \"ipmi\"" in x["status"]["errorMessage"]
    assert x["status"]["operationalStatus"] == "error"

    # The upstream BMH manifest, placeholders filled, applied verbatim; its BMC
    # (192.168.222.1:8000) does not answer here: a registration error saying so.
    tpl = (hub_repo_shared() / "conformance" / "capoa" / "bmh.yaml.tpl").read_text()
    doc = tpl.replace("REPLACE_NAME", "upstream-bmh").replace("REPLACE_MAC", "52:54:00:aa:bb:cc") \
             .replace("REPLACE_ID", "11111111-2222-3333-4444-555555555555")
    hub.kubectl("-n", NS, "apply", "-f", "-", input=doc)
    x = bmhs(hub)["upstream-bmh"]
    assert x["spec"]["bmc"]["address"].endswith("/Systems/11111111-2222-3333-4444-555555555555")
    x = wait_for(lambda: errored("upstream-bmh"), timeout=60, what="registration error for the unreachable BMC")
    assert "192.168.222.1:8000" in x["status"]["errorMessage"]
    # Deleting them: the finalizer goes once the host is let go.
    hub.kubectl("-n", NS, "delete", "bmh", "ipmi-host", "upstream-bmh", "--timeout=60s")
    assert bmhs(hub) == {}


def hub_repo_shared():
    from conftest import SHARED
    return SHARED


def test_late_binding_install_then_back_to_the_pool(hub_factory, tmp_path, sims):
    """A BMH-booted host, paired and approved by BMAC, installs a late-bound SNO; the BMH
    is detached and paused once it installed.  Deleting the ClusterDeployment leaves the
    Agent waiting for a reboot into discovery: the hub does it through Redfish (image
    taken away, deprovisioned, provisioned again) and the Agent is known-unbound again,
    with nobody touching the BMC."""
    from test_install import SUBNET, setup_common
    from test_latebinding import late_binding_infraenv, sno, wait_bound_reason

    hub = hub_factory(extra_args=["--converged-flow=false", "--host-disconnect-timeout", "30s"])
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--bmh-infraenv", ie["metadata"]["name"],
                                     "--cacert", str(hub.ca_path), "--subnet", SUBNET, "--stage-seconds", "1",
                                     "--max-poll-seconds", "1"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))
    bname = next(iter(bmhs(hub)))

    def pool():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        ok = [a for a in items if a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"
              and a["spec"].get("approved") and a["metadata"].get("labels", {}).get(BMH_LABEL) == bname]
        return ok[0] if ok else None
    name = wait_for(pool, timeout=120, what="the pool's Agent, paired and approved")["metadata"]["name"]
    sno(hub)
    # Bound the ZTP way: the BMH's cluster-reference annotation (BMAC sets the Agent's
    # clusterDeploymentName).
    hub.kubectl("-n", NS, "annotate", "bmh", bname, f"bmac.agent-install.openshift.io/cluster-reference={NS}/single-node")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    cdn = hub.kubectl_json("-n", NS, "get", "agent", name)["spec"]["clusterDeploymentName"]
    assert cdn == {"name": "single-node", "namespace": NS}
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    assert b.status("installed") == 1

    def detached():
        x = bmhs(hub)[bname]
        ann = x["metadata"].get("annotations", {})
        return x if (ann.get("baremetalhost.metal3.io/detached") == "assisted-service-controller"
                     and x["status"].get("operationalStatus") == "detached"
                     and "baremetalhost.metal3.io/paused" in ann) else None
    x = wait_for(detached, timeout=60, what="the BMH detached and paused")
    assert json.loads(x["metadata"]["annotations"]["baremetalhost.metal3.io/status"])["provisioning"]["state"] \
        == "provisioned"
    boots = b.status("boots")

    # The cluster goes (and the reference with it, else BMAC binds the Agent again).
    hub.kubectl("-n", NS, "annotate", "bmh", bname, "bmac.agent-install.openshift.io/cluster-reference-")
    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    # UnbindingPendingUserAction lasts only until the hub reboots the host (a
    # few seconds): what shows it is the BMH taken through deprovisioning and the
    # machine's new boot.
    wait_bound_reason(hub, name, "Unbound", timeout=150)
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "agent", name)["status"]["debugInfo"]["state"]
             == "known-unbound", timeout=120, what="known-unbound again")
    assert b.status("boots") > boots  # the hub rebooted it through the BMC
    x = bmhs(hub)[bname]
    assert state(x) == "provisioned"
    assert "baremetalhost.metal3.io/detached" not in x["metadata"].get("annotations", {})
    assert x["status"]["operationalStatus"] == "OK"


def test_bmc_stops_answering_mid_provisioning(ztp_hub, tmp_path, sims):
    """A BMC that stops answering (the simulator stopped with SIGSTOP: connections are
    accepted, nothing answers) while the host is to be provisioned: the BMH shows a
    provisioning error naming the timeout; when the BMC answers again the hub carries
    on and the host is provisioned.  Other BMHs and controllers are not held up."""
    import signal
    hub = ztp_hub
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--cacert", str(hub.ca_path),
                                     "--max-poll-seconds", "2"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))
    bname = next(iter(bmhs(hub)))
    # Without the InfraEnv label it registers and waits, available.
    wait_for(lambda: state(bmhs(hub)[bname]) == "available", timeout=30, what="available")
    b.proc.send_signal(signal.SIGSTOP)
    try:
        hub.kubectl("-n", NS, "label", "bmh", bname, f"infraenvs.agent-install.openshift.io={name}")

        def errored():
            x = bmhs(hub)[bname]
            return x if x.get("status", {}).get("errorType") == "provisioning error" else None
        x = wait_for(errored, timeout=60, what="provisioning error while the BMC is silent")
        assert state(x) == "provisioning" and x["status"]["operationalStatus"] == "error"
        assert "did not answer" in x["status"]["errorMessage"]
        # The rest of the hub goes on meanwhile: an InfraEnv change is reconciled.
        hub.kubectl("-n", NS, "annotate", "infraenv", name, "example.com/touched=1")
        assert hub.kubectl_json("-n", NS, "get", "infraenv", name)["status"]["isoDownloadURL"]
    finally:
        b.proc.send_signal(signal.SIGCONT)
    wait_for(lambda: state(bmhs(hub)[bname]) == "provisioned", timeout=60, what="provisioned once it answers")
    x = bmhs(hub)[bname]
    assert x["status"]["operationalStatus"] == "OK" and x["status"]["errorMessage"] == ""
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "agents")["items"], timeout=120, what="the Agent")


def test_many_bmhs_with_few_bmc_calls_in_flight(hub_factory, tmp_path, sims):
    """Ten BMHs applied at once with --bmc-max-in-flight 2: all are provisioned, and
    never more than two Redfish requests were in flight (the hub's metrics say so)."""
    from test_metrics import parse, scrape, value
    hub = hub_factory(extra_args=["--converged-flow=false", "--bmc-max-in-flight", "2"])
    ie = setup_infraenv(hub)
    b = Bmc(tmp_path, hosts=10, args=["--bmh-namespace", NS, "--bmh-infraenv", ie["metadata"]["name"],
                                      "--cacert", str(hub.ca_path), "--max-poll-seconds", "5"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))

    def done():
        cur = bmhs(hub)
        return len(cur) == 10 and all(state(x) == "provisioned" for x in cur.values())
    wait_for(done, timeout=120, what="10 BMHs provisioned")
    s = parse(scrape(hub))
    assert 1 <= value(s, "agenthub_bmc_requests_in_flight_max") <= 2
    # At least: register (system + media lookups) and provision (the live-ISO sequence) per host.
    assert value(s, "agenthub_bmc_requests_total", result="ok") >= 10 * 8
    assert value(s, "agenthub_bmc_requests_total", result="unreachable") == 0


def ppi_obj(name, bmh, infraenv=None, formats=("iso",), arch="x86_64"):
    meta = {"name": name, "namespace": NS,
            "ownerReferences": [{"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "controller": True,
                                 "name": bmh["metadata"]["name"], "uid": bmh["metadata"]["uid"]}]}
    if infraenv:
        meta["labels"] = {"infraenvs.agent-install.openshift.io": infraenv}
    return {"apiVersion": "metal3.io/v1alpha1", "kind": "PreprovisioningImage", "metadata": meta,
            "spec": {"acceptFormats": list(formats), "architecture": arch}}


def conds(ppi):
    return {c["type"]: c for c in ppi.get("status", {}).get("conditions", [])}


def test_preprovisioning_images_mirror_the_infraenv(hub_factory, tmp_path):
    """The PreprovisioningImage controller (converged flow, the default): labelled PPIs
    get the InfraEnv's ISO (or initrd + kernel + rootfs) and Ready/Error mirroring its
    ImageCreated condition; the failure rows say why; unlabelled PPIs are not ours."""
    hub = hub_factory(extra_args=["--host-disconnect-timeout", "6s"])
    ie = setup_infraenv(hub)
    iename = ie["metadata"]["name"]
    hub.apply_obj({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                   "metadata": {"name": "ppi-host", "namespace": NS},
                   "spec": {"online": False, "bootMACAddress": "52:54:00:00:00:09", "automatedCleaningMode": "disabled",
                            "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "none"}}})
    bmh = hub.kubectl_json("-n", NS, "get", "bmh", "ppi-host")
    hub.apply_obj(ppi_obj("iso", bmh, iename))
    hub.apply_obj(ppi_obj("initrd", bmh, iename, formats=("initrd",)))
    hub.apply_obj(ppi_obj("arm", bmh, iename, arch="aarch64"))
    hub.apply_obj(ppi_obj("none", bmh, iename, formats=()))
    hub.apply_obj(ppi_obj("noie", bmh, "no-such-infraenv"))
    hub.apply_obj(ppi_obj("unlabelled", bmh))

    def get(n):
        return hub.kubectl_json("-n", NS, "get", "preprovisioningimage", n)

    def ready(n, reason):
        p = get(n)
        return p if conds(p).get("Ready", {}).get("reason") == reason else None
    p = wait_for(lambda: ready("iso", "InfraEnvAvailable"), timeout=30, what="the iso PPI Ready")
    ie = hub.kubectl_json("-n", NS, "get", "infraenv", iename)
    assert p["status"]["imageUrl"] == ie["status"]["isoDownloadURL"]
    assert p["status"]["format"] == "iso" and p["status"]["architecture"] == "x86_64"
    c = conds(p)
    assert c["Ready"]["status"] == "True" and c["Ready"]["message"] == "InfraEnv is available: Image has been created"
    assert c["Error"]["status"] == "False" and c["Ready"]["observedGeneration"] == p["metadata"]["generation"]
    assert "preprovisioningimage.agent-install.openshift.io/ai-deprovision" in p["metadata"]["finalizers"]
    assert p["metadata"]["labels"]["velero.io/exclude-from-backup"] == "true"

    p = wait_for(lambda: ready("initrd", "InfraEnvAvailable"), timeout=30, what="the initrd PPI Ready")
    ba = ie["status"]["bootArtifacts"]
    assert p["status"]["format"] == "initrd"
    assert p["status"]["imageUrl"] == ba["initrd"] and p["status"]["kernelUrl"] == ba["kernel"]
    assert p["status"]["extraKernelParams"] == f"coreos.live.rootfs_url={ba['rootfs']} rd.bootif=0"

    p = wait_for(lambda: ready("arm", "InfraEnvArchMismatch"), timeout=30, what="arch mismatch")
    assert conds(p)["Error"]["status"] == "True" and "imageUrl" not in p["status"]
    assert conds(p)["Ready"]["message"] == \
        "PreprovisioningImage CPU architecture (arm64) does not match InfraEnv CPU architecture (x86_64)"
    p = wait_for(lambda: ready("none", "UnsupportedImageFormat"), timeout=30, what="unsupported format")
    assert conds(p)["Ready"]["message"] == "Unsupported image format"
    p = wait_for(lambda: ready("noie", "InfraEnvNotAvailable"), timeout=30, what="no InfraEnv")
    assert conds(p)["Ready"]["message"] == f"InfraEnv no-such-infraenv/{NS} is not found or is being deleted"
    assert conds(p)["Error"]["status"] == "False"
    p = get("unlabelled")
    assert "status" not in p or not p["status"].get("conditions")
    assert "finalizers" not in p["metadata"]
    # Deleting: the BMH does no cleaning, so the finalizer goes at once.
    hub.kubectl("-n", NS, "delete", "preprovisioningimage", "iso", "--timeout=30s")


def test_converged_flow_off_leaves_ppis_alone(hub_factory):
    hub = hub_factory(extra_args=["--converged-flow=false"])
    ie = setup_infraenv(hub)
    hub.apply_obj({"apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost",
                   "metadata": {"name": "ppi-host", "namespace": NS},
                   "spec": {"online": False, "bootMACAddress": "52:54:00:00:00:09",
                            "bmc": {"address": "ipmi://192.0.2.1", "credentialsName": "none"}}})
    bmh = hub.kubectl_json("-n", NS, "get", "bmh", "ppi-host")
    hub.apply_obj(ppi_obj("iso", bmh, ie["metadata"]["name"]))
    # The BMH controller has acted on the BMH meanwhile: the PPI had its chance.
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "bmh", "ppi-host").get("status", {}).get("errorType"),
             timeout=30, what="the BMH reconciled")
    import time
    time.sleep(2)
    p = hub.kubectl_json("-n", NS, "get", "preprovisioningimage", "iso")
    assert "status" not in p or not p["status"].get("conditions")
    assert "finalizers" not in p["metadata"]


def test_converged_flow_custom_deploy_installs(hub_factory, tmp_path, sims):
    """The converged flow's BMH side: a BMH with customDeploy start_assisted_install
    boots its PreprovisioningImage (the InfraEnv's ISO, whose Ignition runs the ironic
    agent pointed at the hub's Ironic API), the agent looks its node up and heartbeats
    to the hub, the hub runs the deploy step, the machine's assisted agent starts and its
    Agent registers; bound to a SNO it installs while the BMH is provisioning, and once
    the step ends the hub boots the disk: the BMH is provisioned."""
    import urllib.parse
    from test_install import SUBNET, setup_common
    from test_latebinding import approve, bind, late_binding_infraenv, sno

    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    conf = f"[DEFAULT]\napi_url = {hub.base_url}\ninsecure = True\n"
    override = json.dumps({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/ironic-python-agent.conf", "mode": 420, "overwrite": False,
                               "contents": {"source": "data:," + urllib.parse.quote(conf)}}]},
        "systemd": {"units": [{"name": "ironic-agent.service", "enabled": True,
                               "contents": "[Unit]\nDescription=Ironic Agent\n[Service]\nExecStart=/bin/true\n"
                                           "[Install]\nWantedBy=multi-user.target\n"},
                              {"name": "agent.service", "enabled": False}]}})
    iename = ie["metadata"]["name"]
    hub.kubectl("-n", NS, "patch", "infraenv", iename, "--type=merge", "-p",
                json.dumps({"spec": {"ignitionConfigOverride": override}}))
    wait_for(lambda: "ironic-agent" in json.dumps(hub.kubectl_json("-n", NS, "get", "infraenv", iename)["spec"]),
             timeout=10, what="the override")
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", f"infraenv/{iename}", "--timeout=30s")
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--cacert", str(hub.ca_path), "--subnet", SUBNET,
                                     "--stage-seconds", "1", "--max-poll-seconds", "1"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))
    bname = next(iter(bmhs(hub)))
    wait_for(lambda: state(bmhs(hub)[bname]) == "available", timeout=60, what="the BMH available")
    hub.apply_obj(ppi_obj(bname, bmhs(hub)[bname], iename))
    wait_for(lambda: conds(hub.kubectl_json("-n", NS, "get", "preprovisioningimage", bname))
             .get("Ready", {}).get("status") == "True", timeout=30, what="the PPI Ready")
    hub.kubectl("-n", NS, "patch", "bmh", bname, "--type=merge", "-p",
                json.dumps({"spec": {"customDeploy": {"method": "start_assisted_install"}, "online": True}}))

    def registered():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        return items[0] if items else None
    a = wait_for(registered, timeout=120, what="the Agent started by the deploy step")
    x = bmhs(hub)[bname]
    assert state(x) == "provisioning"
    assert x["status"]["provisioning"]["customDeploy"] == {"method": "start_assisted_install"}
    assert b.status("ipa") == 0  # the ironic agent handed over to the assisted agent
    name = a["metadata"]["name"]
    approve(hub, name)
    sno(hub)
    bind(hub, name, "single-node")
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    x = wait_for(lambda: bmhs(hub)[bname] if state(bmhs(hub)[bname]) == "provisioned" else None,
                 timeout=90, what="the BMH provisioned once the deploy step ended")
    assert x["status"]["poweredOn"] is True and x["status"]["operationalStatus"] == "OK"
    assert "agent_token" not in hub.log_text()


def test_converged_flow_from_the_infraenv_label(hub_factory, tmp_path, sims):
    """The converged flow end to end with nothing put in by hand: the hub runs in
    the converged flow (its default); a BMH labelled with its InfraEnv gets its PreprovisioningImage
    from the hub (as BMO creates it), the PPI controller marks the InfraEnv
    enable-ironic-agent so its discovery Ignition carries the ironic agent (no
    ignitionConfigOverride), BMAC sets customDeploy start_assisted_install (no live-ISO
    image), the deploy step starts the assisted agent, the host installs and the BMH
    ends provisioned, then detached."""
    from test_install import SUBNET, setup_common
    from test_latebinding import bind, late_binding_infraenv, sno

    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    iename = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=1, args=["--bmh-namespace", NS, "--bmh-infraenv", iename, "--cacert", str(hub.ca_path),
                                     "--subnet", SUBNET, "--stage-seconds", "1", "--max-poll-seconds", "1"])
    sims.append(b)
    hub.kubectl("apply", "-f", str(b.manifests))
    bname = next(iter(bmhs(hub)))
    wait_for(lambda: state(bmhs(hub)[bname]) == "available", timeout=60, what="the BMH available")
    ppi = wait_for(lambda: (hub.kubectl_json("-n", NS, "get", "preprovisioningimages")["items"] or [None])[0],
                   timeout=30, what="the hub (as BMO) creating the PreprovisioningImage")
    assert ppi["metadata"]["name"] == bname
    assert ppi["metadata"]["labels"]["infraenvs.agent-install.openshift.io"] == iename
    assert ppi["metadata"]["ownerReferences"][0]["kind"] == "BareMetalHost"
    assert ppi["metadata"]["ownerReferences"][0]["controller"] is True
    assert ppi["spec"]["acceptFormats"] == ["iso"]
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "infraenv", iename)["metadata"].get("annotations", {})
             .get("infraenv.agent-install.openshift.io/enable-ironic-agent") == "true",
             timeout=30, what="the InfraEnv marked enable-ironic-agent")
    wait_for(lambda: conds(hub.kubectl_json("-n", NS, "get", "preprovisioningimage", bname))
             .get("Ready", {}).get("reason") == "InfraEnvAvailable", timeout=60, what="the PPI Ready")
    x = wait_for(lambda: bmhs(hub)[bname] if bmhs(hub)[bname]["spec"].get("customDeploy") else None,
                 timeout=30, what="BMAC's customDeploy")
    assert x["spec"]["customDeploy"] == {"method": "start_assisted_install"}
    assert not x["spec"].get("image")
    assert "inspect.metal3.io/hardwaredetails" not in x["metadata"].get("annotations", {})
    # the upstream manifest's own override only: the ironic agent is the hub's doing
    assert "ironic" not in hub.kubectl_json("-n", NS, "get", "infraenv", iename)["spec"].get("ignitionConfigOverride", "")

    def registered():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        return items[0] if items else None
    a = wait_for(registered, timeout=120, what="the Agent started by the deploy step")
    assert state(bmhs(hub)[bname]) == "provisioning"
    assert b.status("ipa") == 0  # the ironic agent handed over to the assisted agent
    name = a["metadata"]["name"]
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "agent", name)["spec"].get("approved") is True,
             timeout=30, what="BMAC approving the Agent")
    assert hub.kubectl_json("-n", NS, "get", "agent", name)["metadata"]["labels"]["agent-install.openshift.io/bmh"] \
        == bname
    sno(hub)
    bind(hub, name, "single-node")
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    x = wait_for(lambda: bmhs(hub)[bname] if state(bmhs(hub)[bname]) == "provisioned" else None,
                 timeout=90, what="the BMH provisioned once the deploy step ended")
    assert x["status"]["poweredOn"] is True
    wait_for(lambda: "baremetalhost.metal3.io/detached" in bmhs(hub)[bname]["metadata"].get("annotations", {}),
             timeout=30, what="BMAC detaching the provisioned BMH")
    assert "agent_token" not in hub.log_text()


def test_converged_flow_bad_ironic_agent_image_override(hub_factory):
    """An ironic-agent-image-override that is no image reference fails the InfraEnv's
    image with a message naming the annotation (never a unit line of the user's
    making); a good one gives the image back."""
    hub = hub_factory()
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    ann = "infraenv.agent-install.openshift.io/"
    hub.kubectl("-n", NS, "annotate", "infraenv", name, ann + "enable-ironic-agent=true",
                ann + "ironic-agent-image-override=quay.io/x/ironic agent\nExecStart=/bin/sh")

    def cond():
        ie = hub.kubectl_json("-n", NS, "get", "infraenv", name)
        c = [c for c in ie.get("status", {}).get("conditions", []) if c["type"] == "ImageCreated"]
        return c[0] if c and c[0]["reason"] == "ImageCreationError" else None
    c = wait_for(cond, timeout=20, what="ImageCreated failing on the override")
    assert c["status"] == "False"
    assert ann + "ironic-agent-image-override" in c["message"], c
    hub.kubectl("-n", NS, "annotate", "--overwrite", "infraenv", name,
                ann + "ironic-agent-image-override=quay.io/example/ironic-agent@sha256:" + "a" * 64)
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "infraenv", name)["status"]["conditions"] and
             [c for c in hub.kubectl_json("-n", NS, "get", "infraenv", name)["status"]["conditions"]
              if c["type"] == "ImageCreated" and c["status"] == "True"],
             timeout=20, what="ImageCreated again with a good override")
