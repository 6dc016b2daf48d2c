"""A discovery agent that speaks to the hub exactly as upstream's agent does.

Every request and step reply below has the JSON shape of upstream's models
(openshift/assisted-service models/ and swagger.yaml: host_create_params,
step_reply, inventory, connectivity_report, ntp_synchronization_response,
domain_resolution_response, disk_speed_check_response,
container_image_availability_response, verify_vips_response,
api_vip_connectivity_response, host_progress), written out here field by
field rather than produced by agenthub-agent, so that a difference between
what our simulator sends and what the real agent sends shows up as a failure.
The step replies carry their output as a JSON text in "output", as the real
agent's next-step-runner posts them."""
import json
import time
import urllib.error
import urllib.request
import uuid

API = "/api/assisted-install/v2"
GiB = 1 << 30


def infraenv_token(ie):
    return ie["status"]["isoDownloadURL"].split("/byapikey/")[1].split("/")[0]


class UpstreamAgent:
    """One host: register, answer instructions, report install stages."""

    def __init__(self, hub, ie, index, subnet_prefix="192.168.126", host_id=None, hostname=None):
        self.hub = hub
        self.ie_id = ie["metadata"]["uid"]
        self.token = infraenv_token(ie)
        self.id = host_id or str(uuid.uuid4())
        self.index = index
        self.prefix = subnet_prefix
        self.ip = f"{subnet_prefix}.{10 + index}"
        self.mac = f"52:54:00:00:01:{10 + index:02x}"
        self.hostname = hostname or f"upstream-host-{index}"
        self.peers = []          # other UpstreamAgents, for connectivity
        self.stepped = set()

    # --- transport -----------------------------------------------------------------
    def call(self, method, path, body=None, expect=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.hub.base_url + API + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "X-Secret-Key": self.token})
        try:
            with urllib.request.urlopen(req, context=self.hub.ssl_context(), timeout=15) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        if expect is not None:
            assert status in expect, (method, path, status, raw[:500])
        return status, (json.loads(raw) if raw else None)

    @property
    def base(self):
        return f"/infra-envs/{self.ie_id}/hosts/{self.id}"

    # --- the agent's requests ----------------------------------------------------------
    def register(self):
        # models.HostCreateParams
        return self.call("POST", f"/infra-envs/{self.ie_id}/hosts",
                         {"host_id": self.id, "discovery_agent_version": "registry.redhat.io/rhai-tech-preview/"
                                                                        "assisted-installer-agent-rhel8:v1.0.0-279"},
                         expect=(201,))[1]

    def get_host(self):
        return self.call("GET", self.base, expect=(200,))[1]

    def step(self):
        """One round: GET instructions, post a reply for each. Returns the
        step types answered."""
        # v2GetNextSteps: the agent sends its clock as ?timestamp= (unix seconds).
        _, steps = self.call("GET", self.base + f"/instructions?timestamp={int(time.time())}", expect=(200,))
        done = []
        for ins in steps.get("instructions") or []:
            t = ins["step_type"]
            code, out = self.reply_for(t, ins.get("args") or [])
            # models.StepReply
            reply = {"step_type": t, "step_id": ins["step_id"], "exit_code": code, "output": out}
            if code != 0:
                reply["error"] = "failed"
            self.call("POST", self.base + "/instructions", reply, expect=(204,))
            done.append(t)
            self.stepped.add(t)
        return done

    def progress(self, stage, info=""):
        # models.HostProgress
        body = {"current_stage": stage}
        if info:
            body["progress_info"] = info
        return self.call("PUT", self.base + "/progress", body)

    # --- step outputs (upstream models) -----------------------------------------------
    def reply_for(self, t, args):
        # The step's request object is the JSON argument among its args.
        arg = None
        for a in args:
            try:
                v = json.loads(a)
            except (ValueError, TypeError):
                continue
            if isinstance(v, (dict, list)):
                arg = v
        f = {
            "inventory": lambda: self.inventory(),
            "connectivity-check": lambda: self.connectivity(arg),
            "ntp-synchronizer": lambda: {"ntp_sources": [
                {"source_name": f"{self.prefix}.1", "source_state": "synced"}]},
            "domain-resolution": lambda: self.domains(arg),
            "installation-disk-speed-check": lambda: {"io_sync_duration": 3,
                                                      "path": (arg or {}).get("path", "/dev/sda")},
            "container-image-availability": lambda: {"images": [
                {"name": n, "result": "success", "download_rate": 48.5, "size_bytes": 412000000, "time": 8.5}
                for n in (arg or {}).get("images", [])]},
            "verify-vips": lambda: [{"vip": v.get("vip"), "vip_type": v.get("vip_type"),
                                     "verification": "succeeded"} for v in (arg or [])],
            "api-vip-connectivity-check": lambda: {"is_success": True, "url": (arg or {}).get("url", ""),
                                                   "ignition": "{\"ignition\":{\"version\":\"3.2.0\"}}"},
            "tang-connectivity-check": lambda: {"is_success": True, "tang_server_response": []},
            "free-network-addresses": lambda: [],
        }.get(t)
        if f is None:
            # install, logs-gather, stop-installation, upgrade-agent...: the command's own text.
            return 0, ""
        return 0, json.dumps(f())

    def inventory(self):
        # models.Inventory with models.CPU, Disk, Interface, Memory, Boot, SystemVendor, Route
        return {
            "bmc_address": "0.0.0.0",
            "bmc_v6address": "::/0",
            "boot": {"current_boot_mode": "bios", "command_line": "BOOT_IMAGE=/images/pxeboot/vmlinuz"},
            "cpu": {"architecture": "x86_64", "count": 8, "flags": ["fpu", "vme", "vmx", "sse4_2", "avx2"],
                    "frequency": 2095.078, "model_name": "Intel Xeon Processor (Cascadelake)"},
            "disks": [{
                "id": "/dev/disk/by-id/wwn-0x6141877064533b0020adf3bb03167694",
                "by_id": "/dev/disk/by-id/wwn-0x6141877064533b0020adf3bb03167694",
                "by_path": "/dev/disk/by-path/pci-0000:00:06.0",
                "drive_type": "SSD", "has_uuid": True, "hctl": "0:2:0:0",
                "installation_eligibility": {"eligible": True, "not_eligible_reasons": None},
                "io_perf": {},
                "model": "PERC_H330_Mini", "name": "sda", "path": "/dev/sda", "serial": "0x6141877064533b0020adf3bb03167694",
                "size_bytes": 128849018880, "smart": "{}", "vendor": "DELL", "wwn": "0x6141877064533b0020adf3bb03167694",
                "bootable": True, "removable": False, "is_installation_media": False,
            }],
            "gpus": [],
            "hostname": self.hostname,
            "interfaces": [{
                "name": "ens3", "type": "physical", "biosdevname": "em1",
                "flags": ["up", "broadcast", "multicast"], "has_carrier": True,
                "ipv4_addresses": [f"{self.ip}/24"], "ipv6_addresses": [],
                "mac_address": self.mac, "mtu": 1500, "product": "0x0001", "vendor": "0x1af4",
                "speed_mbps": 1000,
            }],
            "memory": {"physical_bytes": 32 * GiB, "usable_bytes": 31 * GiB, "physical_bytes_method": "dmidecode"},
            "routes": [{"destination": "0.0.0.0", "family": 2, "gateway": f"{self.prefix}.1",
                        "interface": "ens3", "metric": 100}],
            "system_vendor": {"manufacturer": "Red Hat", "product_name": "KVM", "serial_number": f"SN-{self.index}",
                              "virtual": True},
            "tpm_version": "none",
        }

    def connectivity(self, arg):
        # models.ConnectivityReport / ConnectivityRemoteHost / L2Connectivity / L3Connectivity / MtuReport
        remote = []
        by_id = {p.id: p for p in self.peers}
        for rh in arg or []:
            peer = by_id.get(rh.get("host_id"))
            l2, l3, mtu = [], [], []
            for nic in rh.get("nics") or []:
                for a in nic.get("ip_addresses") or []:
                    rip = a.split("/")[0]
                    ok = peer is not None
                    l2.append({"outgoing_ip_address": self.ip, "outgoing_nic": "ens3", "remote_ip_address": rip,
                               "remote_mac": nic.get("mac", ""), "successful": ok})
                    l3.append({"average_rtt_ms": 0.31, "outgoing_nic": "ens3", "packet_loss_percentage": 0,
                               "remote_ip_address": rip, "successful": ok})
                    mtu.append({"mtu_successful": ok, "outgoing_nic": "ens3", "remote_ip_address": rip})
            remote.append({"host_id": rh.get("host_id"), "l2_connectivity": l2, "l3_connectivity": l3,
                           "mtu_report": mtu})
        return {"remote_hosts": remote}

    def domains(self, arg):
        # models.DomainResolutionResponse
        out = []
        for d in (arg or {}).get("domains") or []:
            name = d.get("domain_name", "")
            v4 = [] if name.startswith("validateNoWildcardDNS") else \
                [f"{self.prefix}.5" if name.startswith("api") else f"{self.prefix}.6"]
            out.append({"domain_name": name, "ipv4_addresses": v4, "ipv6_addresses": [], "cnames": []})
        return {"resolutions": out}


def fleet(hub, ie, n, prefix="192.168.126"):
    hosts = [UpstreamAgent(hub, ie, i, prefix) for i in range(n)]
    for h in hosts:
        h.peers = [p for p in hosts if p is not h]
    return hosts


def drive(hosts, until, timeout=120, what="condition", interval=0.3, diag=None):
    """Poll every host's instructions until until() is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for h in hosts:
            h.step()
        got = until()
        if got:
            return got
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}" + (f": {diag()}" if diag else ""))


# Install stages as upstream's installer (up to Rebooting) and its in-cluster
# controller (Configuring and on) report them (models/host_stage.go).
STAGES = {
    "bootstrap": ["Starting installation", "Installing", "Writing image to disk", "Waiting for control plane",
                  "Waiting for bootkube", "Waiting for controller", "Rebooting", "Configuring", "Joined", "Done"],
    "master": ["Starting installation", "Installing", "Writing image to disk", "Rebooting", "Configuring",
               "Joined", "Done"],
    "worker": ["Starting installation", "Installing", "Writing image to disk", "Waiting for control plane",
               "Rebooting", "Waiting for ignition", "Configuring", "Joined", "Done"],
}
