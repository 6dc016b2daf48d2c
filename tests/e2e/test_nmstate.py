"""Static networking end to end: NMStateConfigs selected by an InfraEnv end up
in the discovery ignition inside the ISO (keyfiles, MAC map, the pre-network
script and its unit), the script installs the right keyfiles on a host whose
MACs match, invalid configs are reported on the InfraEnv, 10,000 configs fit
the embed area, too many give an error with the count that fits, deleting
a config removes it from the next image, and the signed static-network-config
download (status.debugInfo.staticNetworkDownloadURL) is the tar of the same
keyfiles and MAC maps."""
import base64
import io
import json
import os
import random
import re
import shutil
import stat
import subprocess
import tarfile
import zlib

import pytest

from conftest import CONFORMANCE_DIR, wait_for
from test_discovery import PULL_SECRET, fetch, ignition_from_iso

NS = "spoke-cluster"
LABEL = {"some-user-defined-label-name": "some-user-defined-label-value"}
BUNDLE_PATH = "/etc/assisted/static-network.bundle"
API = "/apis/agent-install.openshift.io/v1beta1"


def need_manifests():
    for m in ("nmstate.yaml", "infraEnvLateBinding.yaml"):
        if not (CONFORMANCE_DIR / m).is_file():
            pytest.skip("conformance manifests not available")


def pull_secret(hub, ns):
    hub.kubectl("-n", ns, "create", "secret", "generic", "pull-secret",
                "--type=kubernetes.io/dockerconfigjson",
                f"--from-literal=.dockerconfigjson={PULL_SECRET}")


def image_cond(hub, ns, name):
    ie = hub.kubectl_json("-n", ns, "get", "infraenv", name)
    conds = [c for c in ie.get("status", {}).get("conditions", []) if c["type"] == "ImageCreated"]
    return ie, (conds[0] if conds else None)


def wait_image(hub, ns, name, status="True", timeout=60, not_url=None):
    def ok():
        ie, c = image_cond(hub, ns, name)
        if not c or c["status"] != status:
            return None
        if status == "True" and (not ie["status"].get("isoDownloadURL") or
                                 ie["status"]["isoDownloadURL"] == not_url):
            return None
        return ie, c
    return wait_for(ok, timeout=timeout, what=f"ImageCreated={status} on {ns}/{name}")


def iso_ignition(hub, ie, tmp_path):
    status, _, iso = fetch(hub, ie["status"]["isoDownloadURL"])
    assert status == 200, iso[:300]
    return json.loads(ignition_from_iso(iso, tmp_path))


def file_entry(doc, path):
    found = [f for f in doc["storage"]["files"] if f["path"] == path]
    return found[0] if found else None


def decode_source(entry):
    src = entry["contents"]["source"]
    head, data = src.split(",", 1)
    assert head.endswith(";base64"), head
    raw = base64.b64decode(data)
    if entry["contents"].get("compression") == "gzip":
        raw = zlib.decompress(raw, 31)
    return raw.decode()


def parse_bundle(text):
    """The bundle's hosts, each {file name: contents}, in host order."""
    lines = text.split("\n")
    assert lines[0] == "#agenthub-static-network-bundle v1"
    hosts, cur = [], None
    for line in lines[1:-1]:
        if line == "@":
            hosts.append({})
        elif line.startswith(">"):
            cur = line[1:]
            hosts[-1][cur] = ""
        else:
            hosts[-1][cur] += line + "\n"
    return hosts


def validate(doc, tmp_path):
    if not shutil.which("ignition-validate"):
        return
    p = tmp_path / "config.ign"
    p.write_text(json.dumps(doc))
    r = subprocess.run(["ignition-validate", str(p)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def setup_upstream(hub):
    need_manifests()
    hub.create_namespace(NS)
    pull_secret(hub, NS)
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "nmstate.yaml"))
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "infraEnvLateBinding.yaml"))
    ie, _ = wait_image(hub, NS, "myinfraenv")
    return ie


def test_upstream_sample_in_iso_and_script_installs_it(hub, tmp_path):
    ie = setup_upstream(hub)
    doc = iso_ignition(hub, ie, tmp_path)
    validate(doc, tmp_path)
    units = {u["name"]: u for u in doc["systemd"]["units"]}
    assert units["pre-network-manager-config.service"]["enabled"] is True
    assert "Before=NetworkManager.service" in units["pre-network-manager-config.service"]["contents"]
    bundle = file_entry(doc, BUNDLE_PATH)
    assert bundle["mode"] == 0o600 and bundle["contents"]["compression"] == "gzip"
    scripts = {p: file_entry(doc, p) for p in ("/usr/local/bin/pre-network-manager-config.sh",
                                               "/usr/local/bin/common_network_script.sh")}
    assert all(s and s["mode"] == 0o755 for s in scripts.values())
    # The override of the upstream InfraEnv still applies.
    assert file_entry(doc, "/etc/someconfig")

    hosts = parse_bundle(decode_source(bundle))
    assert len(hosts) == 1
    h = hosts[0]
    assert h["mac_interface.ini"] == "02:00:00:80:12:14=eth0\n02:00:00:80:12:15=eth1\n"
    eth0, eth1 = h["eth0.nmconnection"], h["eth1.nmconnection"]
    assert "interface-name=eth0\n" in eth0 and "type=ethernet\n" in eth0
    assert "address1=192.168.126.30/24\n" in eth0 and "method=manual\n" in eth0
    assert "dns=192.168.126.1;\n" in eth0
    assert "route1=0.0.0.0/0,192.168.126.1\nroute1_options=table=254\n" in eth0
    assert "address1=192.168.140.30/24\n" in eth1
    assert "route1=0.0.0.0/0,192.168.140.1,100\nroute1_options=table=254\n" in eth1

    # Boot-time behaviour on a copy of a file system: a host whose NICs
    # carry the sample's MACs (under other names) gets its keyfiles, renamed.
    root, bindir, sysnet = tmp_path / "root", tmp_path / "bin", tmp_path / "sys"
    (root / "etc/assisted").mkdir(parents=True)
    (root / "etc/assisted/static-network.bundle").write_text(decode_source(bundle))
    bindir.mkdir()
    for p, e in scripts.items():
        (bindir / os.path.basename(p)).write_text(decode_source(e))
    for nic, mac in (("lo", "00:00:00:00:00:00"), ("ens3", "02:00:00:80:12:14"),
                     ("ens4", "02:00:00:80:12:15"), ("ens5", "52:54:00:00:00:01")):
        (sysnet / nic).mkdir(parents=True)
        (sysnet / nic / "address").write_text(mac + "\n")
    env = dict(os.environ, PATH_PREFIX=str(root), SYS_CLASS_NET=str(sysnet),
               SCRIPT_DIR=str(bindir), NIC_SETTLE_SECONDS="0")
    r = subprocess.run(["bash", str(bindir / "pre-network-manager-config.sh")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    target = root / "etc/NetworkManager/system-connections"
    assert sorted(os.listdir(target)) == ["ens3.nmconnection", "ens4.nmconnection"]
    ens3 = (target / "ens3.nmconnection").read_text()
    assert "interface-name=ens3\n" in ens3 and "id=ens3\n" in ens3
    assert "address1=192.168.126.30/24\n" in ens3
    assert stat.S_IMODE((target / "ens3.nmconnection").stat().st_mode) == 0o600
    assert (root / "etc/assisted/network/host0/mac_interface.ini").is_file()

    # A host with other MACs keeps its configuration untouched.
    for nic in ("ens3", "ens4"):
        (sysnet / nic / "address").write_text("52:54:00:00:00:09\n")
    (target / "keep.nmconnection").write_text("[connection]\n")
    shutil.rmtree(root / "etc/assisted/network")
    r = subprocess.run(["bash", str(bindir / "pre-network-manager-config.sh")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no static network configuration matches" in r.stdout
    assert (target / "keep.nmconnection").is_file()


def nmstate_obj(name, ns, config, interfaces, labels=LABEL):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "NMStateConfig",
            "metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"config": config, "interfaces": interfaces}}


def infraenv_obj(name, ns, labels=LABEL):
    return {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"pullSecretRef": {"name": "pull-secret"},
                     "nmStateConfigLabelSelector": {"matchLabels": labels}}}


def eth(name, mac, ip, plen=24):
    return {"name": name, "type": "ethernet", "state": "up", "mac-address": mac,
            "ipv4": {"enabled": True, "dhcp": False,
                     "address": [{"ip": ip, "prefix-length": plen}]}}


def test_invalid_configs_are_reported_then_fixed(hub):
    ns = hub.create_namespace("bad-net")
    pull_secret(hub, ns)
    good = nmstate_obj("good", ns, {"interfaces": [eth("eth0", "02:00:00:00:01:01", "10.0.0.2")]},
                       [{"name": "eth0", "macAddress": "02:00:00:00:01:01"}])
    hub.apply_obj(good)
    hub.apply_obj(infraenv_obj("ie", ns))
    ie, _ = wait_image(hub, ns, "ie")
    url = ie["status"]["isoDownloadURL"]

    cases = [
        # (config, interfaces, expected message parts)
        ({"interfaces": [eth("eth0", "02:00:00:00:02:01", "10.0.0.300")]},
         [{"name": "eth0", "macAddress": "02:00:00:00:02:01"}],
         ["NMStateConfig bad-net/bad", "\"10.0.0.300\" is not a valid IPv4 address"]),
        ({"interfaces": [eth("eth0", "02:00:00:00:02:01", "10.0.0.3", plen=33)]},
         [{"name": "eth0", "macAddress": "02:00:00:00:02:01"}],
         ["NMStateConfig bad-net/bad", "prefix-length: 33 is out of range"]),
        ({"interfaces": [{"name": "team0", "type": "team"}]},
         [{"name": "team0", "macAddress": "02:00:00:00:02:01"}],
         ["NMStateConfig bad-net/bad", "unsupported interface type \"team\""]),
        ({"interfaces": [eth("eth0", "02:00:00:00:02:01", "10.0.0.3"),
                         eth("eth1", "02:00:00:00:02:02", "10.0.1.3")]},
         [{"name": "eth0", "macAddress": "02:00:00:00:02:01"}],
         ["NMStateConfig bad-net/bad",
          "mac-interface mapping for interface eth1 is missing and not a physical interface"]),
        ({"interfaces": [eth("eth0", "02:00:00:00:01:01", "10.0.0.3")]},
         [{"name": "eth0", "macAddress": "02:00:00:00:01:01"}],
         ["MAC 02:00:00:00:01:01 is also listed by NMStateConfig", "bad-net/good",
          "bad-net/bad"]),
    ]
    for config, ifaces, want in cases:
        hub.apply_obj(nmstate_obj("bad", ns, config, ifaces))

        def reported():
            _, c = image_cond(hub, ns, "ie")
            return c if c and c["status"] == "False" and all(w in c["message"] for w in want) \
                else None
        c = wait_for(reported, timeout=30, what=f"ImageCreated False with {want}")
        assert c["reason"] == "ImageCreationError"
        assert c["message"].startswith("Failed to create image: "), c
        ie = hub.kubectl_json("-n", ns, "get", "infraenv", "ie")
        assert "isoDownloadURL" not in ie["status"]

    # An interface without a MAC address is refused by the schema itself.
    r = hub.apply_obj(nmstate_obj("nomac", ns, {"interfaces": [eth("eth0", "02:00:00:00:03:01",
                                                                   "10.0.0.4")]},
                                  [{"name": "eth0"}]), check=False)
    assert r.returncode != 0 and "macAddress" in r.stderr, r.stderr

    hub.kubectl("-n", ns, "delete", "nmstateconfig", "bad")
    ie, _ = wait_image(hub, ns, "ie", timeout=60)
    assert ie["status"]["isoDownloadURL"] == url  # back to the same image as before


def test_delete_removes_static_network_from_next_image(hub, tmp_path):
    ie = setup_upstream(hub)
    first = ie["status"]["isoDownloadURL"]
    assert file_entry(iso_ignition(hub, ie, tmp_path), BUNDLE_PATH)
    hub.kubectl("-n", NS, "delete", "nmstateconfig", "mynmstateconfig")
    ie, _ = wait_image(hub, NS, "myinfraenv", not_url=first, timeout=60)
    doc = iso_ignition(hub, ie, tmp_path)
    assert file_entry(doc, BUNDLE_PATH) is None
    assert not [f for f in doc["storage"]["files"] if f["path"].startswith("/etc/assisted/")]
    assert "pre-network-manager-config.service" not in [u["name"] for u in doc["systemd"]["units"]]
    validate(doc, tmp_path)

    # Creating it again brings it back (an ADDED event requeues the InfraEnv).
    second = ie["status"]["isoDownloadURL"]
    hub.kubectl("apply", "-f", str(CONFORMANCE_DIR / "nmstate.yaml"))
    ie, _ = wait_image(hub, NS, "myinfraenv", not_url=second, timeout=60)
    assert file_entry(iso_ignition(hub, ie, tmp_path), BUNDLE_PATH)


def post_all(hub, ns, objs):
    """Create objects over one keep-alive connection (fast: no kubectl per object)."""
    conn = hub.connection(timeout=60)
    try:
        for o in objs:
            conn.request("POST", f"{API}/namespaces/{ns}/nmstateconfigs", body=json.dumps(o),
                         headers=hub.auth_headers())
            r = conn.getresponse()
            body = r.read()
            assert r.status == 201, (r.status, body[:300])
    finally:
        conn.close()


def sample_shape(i):
    m0 = "02:00:%02X:%02X:%02X:%02X" % tuple((2 * i) >> s & 255 for s in (24, 16, 8, 0))
    m1 = "02:00:%02X:%02X:%02X:%02X" % tuple((2 * i + 1) >> s & 255 for s in (24, 16, 8, 0))
    ip0 = "10.126.%d.%d" % (i // 250, i % 250 + 1)
    ip1 = "10.140.%d.%d" % (i // 250, i % 250 + 1)
    config = {
        "interfaces": [eth("eth0", m0, ip0, 16), eth("eth1", m1, ip1, 16)],
        "dns-resolver": {"config": {"server": ["10.126.0.1"]}},
        "routes": {"config": [
            {"destination": "0.0.0.0/0", "next-hop-address": "10.126.0.1",
             "next-hop-interface": "eth0", "table-id": 254},
            {"destination": "0.0.0.0/0", "next-hop-address": "10.140.0.1",
             "next-hop-interface": "eth1", "table-id": 254, "metric": 100}]},
    }
    return config, [{"name": "eth0", "macAddress": m0}, {"name": "eth1", "macAddress": m1}]


def test_ten_thousand_configs_fit(hub, tmp_path):
    n = 10000
    ns = hub.create_namespace("scale")
    pull_secret(hub, ns)
    post_all(hub, ns, (nmstate_obj("host-%05d" % i, ns, *sample_shape(i)) for i in range(n)))
    hub.apply_obj(infraenv_obj("ie", ns))
    ie, _ = wait_image(hub, ns, "ie", timeout=120)
    doc = iso_ignition(hub, ie, tmp_path)
    hosts = parse_bundle(decode_source(file_entry(doc, BUNDLE_PATH)))
    assert len(hosts) == n
    # Host N is the N-th config in name order.
    assert "address1=10.126.0.1/16\n" in hosts[0]["eth0.nmconnection"]
    assert "address1=10.140.39.250/16\n" in hosts[n - 1]["eth1.nmconnection"]
    validate(doc, tmp_path)


def test_too_many_configs_give_the_count_that_fits(hub):
    """Configs made to compress badly (random MACs and addresses) overflow the
    262,144-byte area: the InfraEnv says how many would fit, and no ISO URL."""
    rnd = random.Random(6)
    ns = hub.create_namespace("overflow")
    pull_secret(hub, ns)
    n = 300

    def big(i):
        ifaces, macmap = [], []
        for j in range(40):
            mac = "02:%02X:%02X:%02X:%02X:%02X" % tuple(rnd.randrange(256) for _ in range(5))
            ip = "10.%d.%d.%d" % tuple(rnd.randrange(1, 255) for _ in range(3))
            ifaces.append(eth("eth%d" % j, mac, ip))
            macmap.append({"name": "eth%d" % j, "macAddress": mac})
        return nmstate_obj("big-%03d" % i, ns, {"interfaces": ifaces}, macmap)
    post_all(hub, ns, (big(i) for i in range(n)))
    hub.apply_obj(infraenv_obj("ie", ns))
    _, c = wait_image(hub, ns, "ie", status="False", timeout=180)
    m = re.search(r"The ignition archive size \((\d+) KiB\) is over the maximum allowable size "
                  r"\(256 KiB\): (\d+) NMStateConfigs are selected and at most (\d+) fit",
                  c["message"])
    assert m, c
    assert int(m.group(1)) > 256 and int(m.group(2)) == n and 0 < int(m.group(3)) < n
    ie = hub.kubectl_json("-n", ns, "get", "infraenv", "ie")
    assert "isoDownloadURL" not in ie["status"]

    # Deleting configs down to the reported count makes the image again.
    fit = int(m.group(3))
    for i in range(fit, n):
        hub.request("DELETE", f"{API}/namespaces/{ns}/nmstateconfigs/big-%03d" % i)
    wait_image(hub, ns, "ie", timeout=180)


def test_selector_expressions_and_relabel(hub, tmp_path):
    """A config created after its InfraEnv is picked up (also through
    matchExpressions), and relabelling it out of the selector drops it."""
    ns = hub.create_namespace("relabel")
    pull_secret(hub, ns)
    ie = infraenv_obj("ie", ns)
    ie["spec"]["nmStateConfigLabelSelector"] = {
        "matchExpressions": [{"key": "net", "operator": "In", "values": ["a"]}]}
    hub.apply_obj(ie)
    ie, _ = wait_image(hub, ns, "ie")
    plain = ie["status"]["isoDownloadURL"]
    assert file_entry(iso_ignition(hub, ie, tmp_path), BUNDLE_PATH) is None

    hub.apply_obj(nmstate_obj("one", ns, {"interfaces": [eth("eth0", "02:00:00:00:04:01",
                                                             "10.0.4.1")]},
                              [{"name": "eth0", "macAddress": "02:00:00:00:04:01"}],
                              labels={"net": "a"}))
    ie, _ = wait_image(hub, ns, "ie", not_url=plain, timeout=60)
    hosts = parse_bundle(decode_source(file_entry(iso_ignition(hub, ie, tmp_path), BUNDLE_PATH)))
    assert hosts[0]["mac_interface.ini"] == "02:00:00:00:04:01=eth0\n"

    with_net = ie["status"]["isoDownloadURL"]
    hub.kubectl("-n", ns, "label", "--overwrite", "nmstateconfig", "one", "net=b")
    ie, _ = wait_image(hub, ns, "ie", not_url=with_net, timeout=60)
    assert file_entry(iso_ignition(hub, ie, tmp_path), BUNDLE_PATH) is None


def static_url(hub, ns, name):
    ie = hub.kubectl_json("-n", ns, "get", "infraenv", name)
    return ie.get("status", {}).get("debugInfo", {}).get("staticNetworkDownloadURL")


def tar_files(body):
    """The archive's regular files as {path: text}, checking each header."""
    out = {}
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:") as tf:
        for m in tf.getmembers():
            assert m.isfile(), m.name
            assert m.mode == 0o600 and m.uid == 0 and m.gid == 0 and m.mtime == 0, m.name
            out[m.name] = tf.extractfile(m).read().decode()
    return out


def test_static_network_download(hub):
    ie = setup_upstream(hub)
    uid = ie["metadata"]["uid"]
    url = wait_for(lambda: static_url(hub, NS, "myinfraenv"), timeout=30,
                   what="status.debugInfo.staticNetworkDownloadURL")
    # Signed as the other download URLs: the same endpoint and token.
    ign_url = ie["status"]["bootArtifacts"]["discoveryIgnitionURL"]
    assert url == ign_url.replace("file_name=discovery.ign", "file_name=static-network-config")
    assert f"/api/assisted-install/v2/infra-envs/{uid}/downloads/files?api_key=" in url

    status, headers, body = fetch(hub, url)
    assert status == 200, body[:300]
    assert headers["Content-Disposition"] == \
        f'attachment; filename="{uid}-static-network-config.tar"'
    files = tar_files(body)
    d = "/etc/assisted/network/host0/"
    assert list(files) == [d + "mac_interface.ini", d + "eth0.nmconnection",
                           d + "eth1.nmconnection"]
    assert files[d + "mac_interface.ini"] == "02:00:00:80:12:14=eth0\n02:00:00:80:12:15=eth1\n"
    eth0, eth1 = files[d + "eth0.nmconnection"], files[d + "eth1.nmconnection"]
    assert "interface-name=eth0\n" in eth0 and "type=ethernet\n" in eth0
    assert "address1=192.168.126.30/24\n" in eth0 and "method=manual\n" in eth0
    assert "dns=192.168.126.1;\n" in eth0
    assert "route1=0.0.0.0/0,192.168.126.1\nroute1_options=table=254\n" in eth0
    assert "interface-name=eth1\n" in eth1
    assert "address1=192.168.140.30/24\n" in eth1
    assert "route1=0.0.0.0/0,192.168.140.1,100\nroute1_options=table=254\n" in eth1

    # The archive holds exactly what the discovery ignition carries.
    status, _, ign = fetch(hub, ign_url)
    assert status == 200
    hosts = parse_bundle(decode_source(file_entry(json.loads(ign), BUNDLE_PATH)))
    assert {d + k: v for k, v in hosts[0].items()} == files
    # Deterministic: the same configs give the same bytes.
    assert fetch(hub, url)[2] == body

    # Same authorization as the other files.
    bad = re.sub(r"api_key=([^&]+)", lambda m: "api_key=" + m.group(1)[:-4] + "AAAA", url)
    status, _, body = fetch(hub, bad)
    assert status == 401, body[:300]
    status, _, _ = fetch(hub, re.sub(r"api_key=[^&]+&", "", url))
    assert status == 401

    # Without static config the URL goes away and there is nothing to download.
    hub.kubectl("-n", NS, "delete", "nmstateconfig", "mynmstateconfig")
    wait_for(lambda: static_url(hub, NS, "myinfraenv") is None, timeout=60,
             what="staticNetworkDownloadURL removed")
    status, _, body = fetch(hub, url)
    assert status == 404 and b"no static network configuration" in body, body[:300]

    # An InfraEnv that selects nothing never shows it.
    ns = hub.create_namespace("no-static")
    pull_secret(hub, ns)
    hub.apply_obj(infraenv_obj("plain", ns))
    plain, _ = wait_image(hub, ns, "plain")
    assert "staticNetworkDownloadURL" not in plain["status"].get("debugInfo", {})
    assert plain["status"]["debugInfo"]["eventsURL"]
