"""The simulator's BMC (`agenthub-agent simulate --bmc`): a Redfish service driven
over real HTTP(S) through the power, boot and virtual-media sequences Ironic's
client (sushy) makes, with its error answers; the BareMetalHost manifests it
writes are accepted by the hub; and a machine given the InfraEnv's ISO through
virtual media, booted from Cd, downloads it from the image service and becomes
an Agent, stops when powered off and comes back when powered on."""
import base64
import json
import re
import signal
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import BUILD, LineReader, wait_for
from test_discovery import NS, setup_infraenv

AGENT = BUILD / "agenthub-agent"
AUTH = "Basic " + base64.b64encode(b"admin:s3cret").decode()


class Bmc:
    """A simulator with --bmc on a free port; .url is its Redfish root."""

    def __init__(self, tmp_path, hosts=2, args=(), user="admin", password="s3cret"):
        if not AGENT.is_file():
            pytest.fail(f"{AGENT} not built")
        self.manifests = tmp_path / "bmh.yaml"
        self.proc = subprocess.Popen(
            [str(AGENT), "simulate", "--bmc", "127.0.0.1:0", "--hosts", str(hosts),
             "--bmh-manifests", str(self.manifests), "--bmc-user", user, "--bmc-password", password,
             "--seed", "11", "--status-seconds", "3600", *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = LineReader(self.proc)
        line = self.reader.wait_line(lambda l: "Redfish service on" in l, timeout=20,
                                     what="the BMC's start line")
        self.url = re.search(r"(https?://[^ ]+/redfish/v1/)", line).group(1)
        self.ctx = None

    def stop(self):
        self.reader.stop()

    def status(self, key):
        """The simulator's count of machines in state `key` (its status line, on SIGUSR1)."""
        n = len(self.reader.snapshot())
        self.proc.send_signal(signal.SIGUSR1)
        line = wait_for(lambda: next((l for l in self.reader.snapshot()[n:] if l.startswith("simulate: t=")),
                                     None), timeout=15, what="a status line")
        return int(re.search(rf" {re.escape(key)}=(\d+)", line).group(1))

    def call(self, method, path, body=None, auth=AUTH, headers=None, raw=None):
        if path.startswith("http"):
            url = path
        elif path.startswith("/redfish"):  # an @odata.id
            url = self.url.split("/redfish/", 1)[0] + path
        else:
            url = self.url.rstrip("/") + path
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(url, data=data, method=method)
        if auth:
            req.add_header("Authorization", auth)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=15, context=self.ctx) as r:
                text = r.read()
                return r.status, dict(r.headers), json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            text = e.read()
            return e.code, dict(e.headers), json.loads(text) if text else None


def message_id(body):
    return body["error"]["@Message.ExtendedInfo"][0]["MessageId"]


@pytest.fixture
def bmc(tmp_path, sims):
    b = Bmc(tmp_path)
    sims.append(b)
    return b


def test_redfish_surface_and_errors(bmc):
    st, hdr, root = bmc.call("GET", "/", auth=None)
    assert st == 200 and root["Systems"]["@odata.id"] == "/redfish/v1/Systems"
    # Credentials: none or wrong -> 401 with WWW-Authenticate and a Redfish error.
    for auth in (None, "Basic " + base64.b64encode(b"admin:wrong").decode()):
        st, hdr, body = bmc.call("GET", "/Systems", auth=auth)
        assert st == 401 and hdr["WWW-Authenticate"].startswith("Basic")
        assert message_id(body) == "Base.1.8.NoValidSession"
        assert "s3cret" not in json.dumps(body)
    st, _, systems = bmc.call("GET", "/Systems")
    assert st == 200 and systems["Members@odata.count"] == 2
    sys_path = systems["Members"][0]["@odata.id"]
    st, _, body = bmc.call("GET", "/Systems/no-such-system")
    assert st == 404 and message_id(body) == "Base.1.8.ResourceMissingAtURI"
    st, hdr, system = bmc.call("GET", sys_path)
    assert st == 200 and system["PowerState"] == "Off"
    assert hdr["ETag"] == system["@odata.etag"]
    # Follow the links as Ironic does: System -> Manager -> VirtualMedia -> the CD.
    mgr = system["Links"]["ManagedBy"][0]["@odata.id"]
    st, _, manager = bmc.call("GET", mgr)
    st, _, vms = bmc.call("GET", manager["VirtualMedia"]["@odata.id"])
    cd_path = vms["Members"][0]["@odata.id"]
    st, _, cd = bmc.call("GET", cd_path)
    assert "CD" in cd["MediaTypes"] and cd["Inserted"] is False
    # Bad bodies: 400 with the reason, nothing changed.
    st, _, body = bmc.call("PATCH", sys_path, raw=b'{"Boot": {')
    assert st == 400 and message_id(body) == "Base.1.8.MalformedJSON"
    st, _, body = bmc.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Usb"}})
    assert st == 400 and message_id(body) == "Base.1.8.PropertyValueNotInList"
    assert "Usb" in body["error"]["@Message.ExtendedInfo"][0]["Message"]
    st, _, body = bmc.call("POST", system["Actions"]["#ComputerSystem.Reset"]["target"], {"ResetType": "Bogus"})
    assert st == 400
    st, _, body = bmc.call("POST", system["Actions"]["#ComputerSystem.Reset"]["target"], {})
    assert st == 400 and message_id(body) == "Base.1.8.ActionParameterMissing"
    st, _, body = bmc.call("DELETE", sys_path)
    assert st == 405
    st, _, body = bmc.call("POST", cd["Actions"]["#VirtualMedia.InsertMedia"]["target"], {"Image": "nfs://x"})
    assert st == 400 and message_id(body) == "Base.1.8.ActionParameterValueFormatError"
    # A body over the bound is refused, not read.
    st, _, body = bmc.call("PATCH", sys_path, raw=b"{" + b" " * (128 * 1024) + b"}")
    assert st == 413
    # A stale ETag -> 412; the current one -> 204 and the change round-trips.
    etag = hdr["ETag"]
    st, _, _ = bmc.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideMode": "Legacy"}},
                        headers={"If-Match": etag})
    assert st == 204
    st, _, body = bmc.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideMode": "UEFI"}},
                           headers={"If-Match": etag})
    assert st == 412 and message_id(body) == "Base.1.8.PreconditionFailed"
    st, _, system = bmc.call("GET", sys_path)
    assert system["Boot"]["BootSourceOverrideMode"] == "Legacy"
    st, _, system = bmc.call("GET", sys_path)
    assert bmc.status("off") == 2


def test_ironic_sequences_power_and_media(bmc):
    """prepare_ramdisk (Cd Once) and the live-ISO deploy (Cd Continuous) against a URL
    that serves nothing: the machine tries to read the image, then sits powered on with
    nothing to boot; power-off and on again follow."""
    st, _, systems = bmc.call("GET", "/Systems")
    sys_path = systems["Members"][1]["@odata.id"]
    st, hdr, system = bmc.call("GET", sys_path)
    reset = system["Actions"]["#ComputerSystem.Reset"]["target"]
    cd_path = system["VirtualMedia"]["@odata.id"] + "/Cd"
    st, _, cd = bmc.call("GET", cd_path)
    # 1. power off (already off: no change), 2. eject (empty: fine, retried with {}).
    assert bmc.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert bmc.call("POST", cd["Actions"]["#VirtualMedia.EjectMedia"]["target"], raw=b"")[0] == 204
    assert bmc.call("POST", cd["Actions"]["#VirtualMedia.EjectMedia"]["target"], {})[0] == 204
    # 3. insert: an address where nothing listens (the machine reads it at boot).
    image = "http://127.0.0.1:9/nothing/discovery.iso"
    assert bmc.call("POST", cd["Actions"]["#VirtualMedia.InsertMedia"]["target"],
                    {"Image": image, "Inserted": True})[0] == 204
    st, _, cd = bmc.call("GET", cd_path)
    assert cd["Image"] == image and cd["Inserted"] is True and cd["ImageName"] == "discovery.iso"
    # 4-5. boot mode and device Cd Once, with If-Match as sushy sends it.
    st, hdr, _ = bmc.call("GET", sys_path)
    assert bmc.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                                 "BootSourceOverrideEnabled": "Once",
                                                 "BootSourceOverrideMode": "UEFI"}},
                    headers={"If-Match": hdr["ETag"]})[0] == 204
    # 6. power on: the Once override is consumed by this boot.
    assert bmc.call("POST", reset, {"ResetType": "On"})[0] == 204
    st, _, system = bmc.call("GET", sys_path)
    assert system["PowerState"] == "On"
    assert system["Boot"]["BootSourceOverrideEnabled"] == "Disabled"
    assert system["Boot"]["BootSourceOverrideTarget"] == "None"
    bmc.reader.wait_line(lambda l: "cannot boot " + image in l, timeout=20, what="the failed image read")
    wait_for(lambda: bmc.status("no-boot") == 1, timeout=40, what="no-boot after 3 tries")
    # Power off -> off; live-ISO style Cd Continuous -> every restart boots the CD again.
    assert bmc.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert bmc.call("GET", sys_path)[2]["PowerState"] == "Off"
    assert bmc.status("off") == 2
    assert bmc.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                                 "BootSourceOverrideEnabled": "Continuous"}})[0] == 204
    assert bmc.call("POST", reset, {"ResetType": "ForceRestart"})[0] == 204
    assert bmc.call("GET", sys_path)[2]["Boot"]["BootSourceOverrideEnabled"] == "Continuous"
    assert bmc.status("booting") + bmc.status("no-boot") == 1
    # Eject, then restart: nothing to boot at all, at once.
    assert bmc.call("POST", cd["Actions"]["#VirtualMedia.EjectMedia"]["target"])[0] == 204
    assert bmc.call("POST", reset, {"ResetType": "GracefulRestart"})[0] == 204
    wait_for(lambda: bmc.status("no-boot") == 1 and bmc.status("booting") == 0, timeout=10,
             what="no-boot after eject")
    assert bmc.call("POST", reset, {"ResetType": "GracefulShutdown"})[0] == 204
    assert bmc.status("off") == 2


def test_tls_and_flag_errors(tmp_path, sims):
    b = Bmc(tmp_path, hosts=1, args=["--bmc-tls", "--bmc-tls-dir", str(tmp_path / "tls")])
    sims.append(b)
    assert b.url.startswith("https://")
    b.ctx = ssl.create_default_context(cafile=str(tmp_path / "tls" / "ca.crt"))
    st, _, systems = b.call("GET", "/Systems")
    assert st == 200 and systems["Members@odata.count"] == 1
    text = b.manifests.read_text()
    assert "address: redfish-virtualmedia://127.0.0.1:" in text
    assert "disableCertificateVerification: true" in text
    # Flags: what is missing or conflicting is named.
    for args, want in (
            (["--bmc", "127.0.0.1:0", "--hosts", "1"], "--bmh-manifests"),
            (["--bmc", "nowhere", "--hosts", "1", "--bmh-manifests", "x"], "HOST:PORT"),
            (["--bmc", "127.0.0.1:0", "--hosts", "1", "--bmh-manifests", "x", "--iso", "http://x"], "--iso"),
            (["--bmc", "127.0.0.1:0", "--hosts", "1", "--bmh-manifests", "x", "--bmh-namespace", "Bad_NS"],
             "--bmh-namespace"),
            (["--bmc", "127.0.0.1:0", "--hosts", "1", "--bmh-manifests", "x", "--bmc-password", ""],
             "--bmc-password"),
            (["--iso", "http://x", "--hosts", "1", "--bmh-manifests", "x"], "need --bmc"),
    ):
        p = subprocess.run([str(AGENT), "simulate", *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (args, p.stderr)
        assert want in p.stderr, (args, p.stderr)


@pytest.fixture
def fast_hub(hub_factory):
    # The live-ISO flow: BMAC boots the labelled BMHs on the InfraEnv's ISO.
    return hub_factory(extra_args=["--converged-flow=false", "--host-disconnect-timeout", "6s"])


def test_virtual_media_boot_makes_an_agent(fast_hub, tmp_path, sims):
    """The InfraEnv's ISO URL inserted as virtual media, boot Cd continuous, power on:
    the machine downloads the ISO from the image service and registers; its Agent
    carries the BareMetalHost's MAC.  Powered off it goes silent (disconnected); powered
    on again it registers again as the same host."""
    hub = fast_hub
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    b = Bmc(tmp_path, hosts=2, args=["--bmh-namespace", NS, "--bmh-infraenv", name,
                                     "--cacert", str(hub.ca_path), "--max-poll-seconds", "2"])
    sims.append(b)
    # The manifests are what a hub takes: kubectl apply (server-side dry run: the
    # hub's own BMH controller would otherwise boot the machines itself, which is
    # test_ztp's subject; here the test drives the BMC as Ironic does), then the
    # objects as written.
    applied = hub.kubectl_json("apply", "--dry-run=server", "-f", str(b.manifests), "-o", "json")["items"]
    bmhs = [o for o in applied if o["kind"] == "BareMetalHost"]
    secrets = {o["metadata"]["name"]: o for o in applied if o["kind"] == "Secret"}
    assert len(bmhs) == 2
    bmh = sorted(bmhs, key=lambda o: o["metadata"]["name"])[0]
    assert bmh["metadata"]["annotations"]["inspect.metal3.io"] == "disabled"
    assert bmh["metadata"]["labels"]["infraenvs.agent-install.openshift.io"] == name
    spec = bmh["spec"]
    assert spec["online"] is True and spec["bootMode"] == "UEFI"
    assert spec["automatedCleaningMode"] == "disabled"
    assert spec["bmc"]["address"].startswith("redfish-virtualmedia+http://127.0.0.1:")
    secret = secrets[spec["bmc"]["credentialsName"]]
    assert base64.b64decode(secret["data"]["password"]) == b"s3cret"
    # The live-ISO deploy as Ironic does it, on the machine that BMH names.
    sys_path = "/Systems/" + spec["bmc"]["address"].rsplit("/", 1)[1]
    st, hdr, system = b.call("GET", sys_path)
    assert st == 200
    reset = system["Actions"]["#ComputerSystem.Reset"]["target"]
    st, _, cd = b.call("GET", system["VirtualMedia"]["@odata.id"] + "/Cd")
    assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert b.call("POST", cd["Actions"]["#VirtualMedia.EjectMedia"]["target"], {})[0] == 204
    assert b.call("POST", cd["Actions"]["#VirtualMedia.InsertMedia"]["target"],
                  {"Image": ie["status"]["isoDownloadURL"]})[0] == 204
    st, hdr, _ = b.call("GET", sys_path)
    assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                               "BootSourceOverrideEnabled": "Continuous",
                                               "BootSourceOverrideMode": "UEFI"}},
                  headers={"If-Match": hdr["ETag"]})[0] == 204
    assert b.call("POST", reset, {"ResetType": "On"})[0] == 204

    def agent():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        ok = [a for a in items if a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"]
        return ok[0] if ok else None
    a = wait_for(agent, timeout=90, what="a known-unbound Agent from the BMC-booted machine")
    macs = [i["macAddress"] for i in a["status"]["inventory"]["interfaces"]]
    assert spec["bootMACAddress"] in macs
    assert a["status"]["inventory"]["hostname"] == bmh["metadata"]["name"]
    assert len(hub.kubectl_json("-n", NS, "get", "agents")["items"]) == 1  # the other is off
    assert b.status("booting") == 0 and b.status("off") == 1

    # Power off: the agent stops at once, and the hub sees it disconnect.
    assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert b.status("off") == 2

    def state():
        return hub.kubectl_json("-n", NS, "get", "agent", a["metadata"]["name"])["status"]["debugInfo"]["state"]
    wait_for(lambda: state() == "disconnected-unbound", timeout=40, what="disconnected-unbound")
    # Power on again (Cd continuous, media still inserted): the same host comes back.
    assert b.call("POST", reset, {"ResetType": "On"})[0] == 204
    wait_for(lambda: state() == "known-unbound", timeout=90, what="known-unbound again")
    assert len(hub.kubectl_json("-n", NS, "get", "agents")["items"]) == 1


def test_install_then_disk_boot_then_reboot_into_discovery(hub_factory, tmp_path, sims):
    """A BMC-booted machine installs a late-bound SNO; its own reboot leaves it running the
    installed system.  Powered off and on from Hdd it runs the installed system (no
    agent).  Deleting the cluster leaves the Agent waiting for a reboot into discovery,
    which the BMC does (as the hub will): Cd continuous + restart -> known-unbound again."""
    from test_install import SUBNET, setup_common
    from test_latebinding import approve, bind, late_binding_infraenv, sno, wait_bound_reason

    hub = hub_factory(extra_args=["--host-disconnect-timeout", "30s"])
    setup_common(hub)
    ie = late_binding_infraenv(hub)
    b = Bmc(tmp_path, hosts=1, args=["--cacert", str(hub.ca_path), "--subnet", SUBNET, "--stage-seconds", "1",
                                     "--max-poll-seconds", "1"])
    sims.append(b)
    st, _, systems = b.call("GET", "/Systems")
    sys_path = systems["Members"][0]["@odata.id"]
    st, _, system = b.call("GET", sys_path)
    reset = system["Actions"]["#ComputerSystem.Reset"]["target"]
    cd = system["VirtualMedia"]["@odata.id"] + "/Cd"
    assert b.call("POST", cd + "/Actions/VirtualMedia.InsertMedia", {"Image": ie["status"]["isoDownloadURL"]})[0] == 204
    assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                               "BootSourceOverrideEnabled": "Continuous"}})[0] == 204
    assert b.call("POST", reset, {"ResetType": "On"})[0] == 204

    def pool():
        items = hub.kubectl_json("-n", NS, "get", "agents")["items"]
        ok = [a for a in items if a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"]
        return ok[0] if ok else None
    name = wait_for(pool, timeout=90, what="the pool's Agent")["metadata"]["name"]
    assert name == system["Id"]  # the system id is the host id
    sno(hub)
    bind(hub, name, "single-node")
    wait_bound_reason(hub, name, "Bound", timeout=90)
    approve(hub, name)
    hub.kubectl("-n", NS, "wait", "--for=condition=Completed", "aci/test-agent-cluster-install",
                "--timeout=180s", timeout=200)
    assert b.status("installed") == 1

    # Power-cycle onto the disk: the installed system, no agent, no requests.
    assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Hdd",
                                               "BootSourceOverrideEnabled": "Continuous"}})[0] == 204
    assert b.call("POST", reset, {"ResetType": "On"})[0] == 204
    assert b.status("disk") == 1
    # With the override disabled the disk boots too, before the still-inserted CD.
    assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "None"}})[0] == 204
    assert b.call("POST", reset, {"ResetType": "ForceRestart"})[0] == 204
    assert b.status("disk") == 1

    # The cluster goes; the Agent waits for a reboot into discovery, which the BMC does.
    hub.kubectl("-n", NS, "delete", "clusterdeployment", "single-node", "--timeout=60s", timeout=70)
    wait_bound_reason(hub, name, "UnbindingPendingUserAction")
    assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
    assert b.call("POST", cd + "/Actions/VirtualMedia.EjectMedia", {})[0] == 204
    assert b.call("POST", cd + "/Actions/VirtualMedia.InsertMedia", {"Image": ie["status"]["isoDownloadURL"]})[0] == 204
    assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                               "BootSourceOverrideEnabled": "Continuous"}})[0] == 204
    assert b.call("POST", reset, {"ResetType": "On"})[0] == 204
    wait_bound_reason(hub, name, "Unbound", timeout=120)
    wait_for(lambda: hub.kubectl_json("-n", NS, "get", "agent", name)["status"]["debugInfo"]["state"]
             == "known-unbound", timeout=90, what="known-unbound again")


class IronicStandIn:
    """The part of Ironic's API the ironic agent calls (lookup, heartbeat, inspection
    data), on a free loopback port, recording what arrives.  It stands in for the hub's
    own Ironic side (another branch) so this test checks the machine's half alone; the
    conductor's calls to the agent are made by the test."""

    NODE = "8f0e3b43-55c5-4f3c-9a54-5a3f3b9f2c01"
    TOKEN = "agent-token-1"

    def __init__(self):
        import http.server
        import threading
        outer = self
        self.inspections, self.lookups, self.heartbeats = [], [], []

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, code, obj=None):
                body = json.dumps(obj).encode() if obj is not None else b""
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/v1/lookup?"):
                    outer.lookups.append((self.path, dict(self.headers)))
                    return self.reply(200, {"node": {"uuid": outer.NODE, "properties": {}},
                                            "config": {"heartbeat_timeout": 10, "agent_token": outer.TOKEN}})
                self.reply(404, {"error_message": "not found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/v1/continue":
                    outer.inspections.append(body)
                    return self.reply(200, {"uuid": outer.NODE})
                if self.path == f"/v1/heartbeat/{outer.NODE}":
                    outer.heartbeats.append(body)
                    return self.reply(202)
                self.reply(404, {"error_message": "not found"})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def ironic_override(api_url):
    """The ironic agent's Ignition as the hub's PPI controller adds it (upstream:
    /etc/ironic-python-agent.conf and ironic-agent.service; agent.service disabled)."""
    import urllib.parse
    conf = (f"\n[DEFAULT]\napi_url = {api_url}\ninspection_callback_url = {api_url}/v1/continue\n"
            "insecure = True\n\ncollect_lldp = True\n")
    return json.dumps({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/ironic-python-agent.conf", "mode": 420, "overwrite": False,
                               "contents": {"source": "data:," + urllib.parse.quote(conf)}}]},
        "systemd": {"units": [{"name": "ironic-agent.service", "enabled": True,
                               "contents": "[Unit]\nDescription=Ironic Agent\n[Service]\nExecStart=/bin/true\n"
                                           "[Install]\nWantedBy=multi-user.target\n"},
                              {"name": "agent.service", "enabled": False}]}})


def test_converged_machine_runs_ironic_agent_until_told(fast_hub, tmp_path, sims):
    """Booted from an image whose Ignition runs the ironic agent, the machine inspects,
    looks up and heartbeats to the Ironic API, and registers with the assisted service
    only once the deploy step start_assisted_install arrives on its callback URL."""
    hub = fast_hub
    ironic = IronicStandIn()
    try:
        setup_infraenv(hub)  # the namespace and the pull secret
        hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                       "metadata": {"name": "converged", "namespace": NS},
                       "spec": {"pullSecretRef": {"name": "pull-secret"},
                                "ignitionConfigOverride": ironic_override(ironic.url)}})
        hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/converged", "--timeout=30s")
        ie = hub.kubectl_json("-n", NS, "get", "infraenv", "converged")
        before = {a["metadata"]["name"] for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
        b = Bmc(tmp_path, hosts=1, args=["--cacert", str(hub.ca_path), "--max-poll-seconds", "1"])
        sims.append(b)
        st, _, systems = b.call("GET", "/Systems")
        sys_path = systems["Members"][0]["@odata.id"]
        st, _, system = b.call("GET", sys_path)
        reset = system["Actions"]["#ComputerSystem.Reset"]["target"]
        cd = system["VirtualMedia"]["@odata.id"] + "/Cd"
        # prepare_ramdisk: power off, eject, insert, Cd Once, power on.
        assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
        assert b.call("POST", cd + "/Actions/VirtualMedia.EjectMedia", {})[0] == 204
        assert b.call("POST", cd + "/Actions/VirtualMedia.InsertMedia", {"Image": ie["status"]["isoDownloadURL"]})[0] == 204
        assert b.call("PATCH", sys_path, {"Boot": {"BootSourceOverrideTarget": "Cd",
                                                   "BootSourceOverrideEnabled": "Once"}})[0] == 204
        assert b.call("POST", reset, {"ResetType": "On"})[0] == 204

        wait_for(lambda: len(ironic.heartbeats) >= 2, timeout=60, what="two heartbeats")
        inv = ironic.inspections[0]["inventory"]
        mac = inv["interfaces"][0]["mac_address"]
        assert ironic.inspections[0]["boot_interface"] == mac
        assert f"addresses={mac}" in ironic.lookups[0][0]
        hb = ironic.heartbeats[0]
        assert hb["agent_token"] == IronicStandIn.TOKEN
        callback = hb["callback_url"]
        assert callback == b.url.split("/redfish/")[0] + "/ipa/" + system["Id"]
        assert b.status("ipa") == 1
        after = {a["metadata"]["name"] for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]}
        assert after == before, "the assisted agent must wait for the deploy step"

        # The conductor: the agent's commands API, with the token the lookup gave.
        cmds = callback + "/v1/commands/?wait=false&agent_token=" + IronicStandIn.TOKEN
        st, _, body = b.call("POST", cmds, {"name": "deploy.execute_deploy_step", "params": {}}, auth=None)
        assert st == 200 and body["command_status"] == "FAILED"  # no step named
        st, _, body = b.call("GET", callback + "/v1/commands", auth=None)
        assert st == 401  # no token
        step = {"name": "deploy.execute_deploy_step",
                "params": {"step": {"interface": "deploy", "step": "start_assisted_install", "args": {},
                                    "priority": 80}, "node": {"uuid": IronicStandIn.NODE}, "ports": []}}
        st, _, body = b.call("POST", cmds, step, auth=None)
        assert st == 200 and body["command_status"] == "RUNNING", body

        def agent():
            items = [a for a in hub.kubectl_json("-n", NS, "get", "agents")["items"]
                     if a["metadata"]["name"] not in before
                     and a.get("status", {}).get("debugInfo", {}).get("state") == "known-unbound"]
            return items[0] if items else None
        a = wait_for(agent, timeout=90, what="the Agent once the deploy step started it")
        assert a["metadata"]["name"] == system["Id"]
        assert mac in [i["macAddress"] for i in a["status"]["inventory"]["interfaces"]]
        st, _, body = b.call("GET", callback + "/v1/commands?agent_token=" + IronicStandIn.TOKEN, auth=None)
        assert body["commands"][-1]["command_status"] == "RUNNING"
        n = len(ironic.heartbeats)
        wait_for(lambda: len(ironic.heartbeats) > n, timeout=30, what="heartbeats while the step runs")
        # Powered off: the agent API is gone with it.
        assert b.call("POST", reset, {"ResetType": "ForceOff"})[0] == 204
        st, _, _ = b.call("GET", callback + "/v1/commands?agent_token=" + IronicStandIn.TOKEN, auth=None)
        assert st == 503
    finally:
        ironic.stop()
