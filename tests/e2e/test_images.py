"""Image side of discovery, end to end: the signed downloads/files endpoint
(iPXE script, discovery ignition), a discovery payload too big for the ISO's
embed area, and OS images fetched over http from a local server."""
import base64
import hashlib
import http.server
import json
import os
import re
import subprocess
import threading
import urllib.parse

import pytest

from conftest import BUILD, wait_for
from test_discovery import NS, fetch, ignition_from_iso, need, setup_infraenv

TEST_ISO = BUILD / "testiso" / "discovery-test.iso"
TOO_BIG = re.compile(r"^Failed to create image: The ignition archive size \((\d+) KiB\) is over the "
                     r"maximum allowable size \(256 KiB\)$")


def image_created(ie):
    c = [c for c in ie.get("status", {}).get("conditions", []) if c["type"] == "ImageCreated"]
    return c[0] if c else None


def wait_condition(hub, ns, name, pred, what, timeout=30):
    def check():
        ie = hub.kubectl_json("-n", ns, "get", "infraenv", name)
        c = image_created(ie)
        return ie if c and pred(c) else None
    return wait_for(check, timeout=timeout, what=what)


def with_query(url, **params):
    u = urllib.parse.urlsplit(url)
    q = urllib.parse.parse_qsl(u.query)
    q = [(k, v) for k, v in q if k not in params] + [(k, v) for k, v in params.items() if v is not None]
    return urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q, safe="${}/:")))


def without_query(url, key):
    u = urllib.parse.urlsplit(url)
    q = [(k, v) for k, v in urllib.parse.parse_qsl(u.query) if k != key]
    return urllib.parse.urlunsplit(u._replace(query=urllib.parse.urlencode(q)))


def validate_ignition(data, tmp_path):
    need("ignition-validate")
    p = tmp_path / "check.ign"
    p.write_bytes(data)
    r = subprocess.run(["ignition-validate", str(p)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ---- downloads/files --------------------------------------------------------


def test_ipxe_script_boots_the_discovery_artifacts(hub):
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    hub.kubectl("-n", NS, "patch", "infraenv", name, "--type", "merge", "-p",
                json.dumps({"spec": {"kernelArguments": [{"operation": "append", "value": "rd.debug"},
                                                         {"operation": "append", "value": "foo=\"a b\""}]}}))
    ba = ie["status"]["bootArtifacts"]
    assert "file_name=ipxe-script" in ba["ipxeScript"] and "api_key=" in ba["ipxeScript"]

    def script():
        status, headers, body = fetch(hub, ba["ipxeScript"])
        assert status == 200, (status, body[:300])
        return body.decode() if "rd.debug" in body.decode() else None
    text = wait_for(script, timeout=30, what="iPXE script with the new kernel arguments")
    lines = text.split("\n")
    assert lines[0] == "#!ipxe"
    assert lines[1] == f"initrd --name initrd {ba['initrd']}"
    kernel = lines[2].split(" ")
    assert kernel[0] == "kernel" and kernel[1] == ba["kernel"], lines[2]
    assert kernel[2] == "initrd=initrd"
    assert kernel[3] == f"coreos.live.rootfs_url={ba['rootfs']}"
    for karg in ("random.trust_cpu=on", "rd.luks.options=discard", "ignition.firstboot",
                 "ignition.platform.id=metal", "console=tty1", "console=ttyS1,115200n8"):
        assert karg in kernel, lines[2]
    assert lines[2].endswith(' rd.debug foo="a b"'), lines[2]
    assert lines[3:] == ["boot", ""]

    # The URLs it names really serve the kernel and the initrd.
    status, _, kbody = fetch(hub, ba["kernel"])
    assert status == 200 and len(kbody) > 0
    status, headers, initrd = fetch(hub, ba["initrd"])
    assert status == 200 and initrd[:2] == b"\x1f\x8b", initrd[:10]

    # HEAD: same headers, no body.
    status, headers, body = fetch_method(hub, ba["ipxeScript"], "HEAD")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) == len(text.encode())
    assert headers["Content-Disposition"] == 'attachment; filename="ipxe-script"'
    assert headers.get("Last-Modified", "").endswith(" GMT")


def fetch_method(hub, url, method):
    import urllib.request
    req = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(req, context=hub.ssl_context(), timeout=30) as r:
            return r.status, dict(r.getheaders()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers.items()), e.read()


def test_boot_order_control_redirects_with_the_mac(hub):
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    hub.kubectl("-n", NS, "patch", "infraenv", name, "--type", "merge", "-p",
                '{"spec":{"ipxeScriptType":"BootOrderControl"}}')

    def url():
        cur = hub.kubectl_json("-n", NS, "get", "infraenv", name)
        u = cur["status"]["bootArtifacts"]["ipxeScript"]
        return u if "ipxe_script_type=boot-order-control" in u else None
    ipxe_url = wait_for(url, timeout=30, what="boot-order-control ipxeScript URL")
    status, _, body = fetch(hub, ipxe_url)
    assert status == 200, body
    lines = body.decode().split("\n")
    assert lines[0] == "#!ipxe" and lines[2:] == [""], lines
    assert lines[1].startswith("chain https://127.0.0.1:") and lines[1].endswith("&mac=${net0/mac}"), lines
    chain = lines[1][len("chain "):]
    u = urllib.parse.urlsplit(chain)
    assert u.path == f"/api/assisted-install/v2/infra-envs/{ie['metadata']['uid']}/downloads/files"
    keys = [k for k, _ in urllib.parse.parse_qsl(u.query)]
    assert keys == ["api_key", "file_name", "mac"], keys
    # iPXE fills in the MAC; an unknown host boots discovery.
    status, _, body = fetch(hub, chain.replace("${net0/mac}", "52:54:00:aa:bb:cc"))
    assert status == 200, body
    assert body.decode().startswith("#!ipxe\ninitrd --name initrd "), body
    status, _, body = fetch(hub, chain.replace("${net0/mac}", "not-a-mac"))
    assert status == 400 and "mac" in json.loads(body)["reason"]


def test_discovery_ignition_download_matches_the_iso(hub, tmp_path):
    ie = setup_infraenv(hub)
    url = ie["status"]["bootArtifacts"]["discoveryIgnitionURL"]
    assert "file_name=discovery.ign" in url
    status, headers, ign = fetch(hub, url)
    assert status == 200, ign[:300]
    assert headers["Content-Disposition"] == 'attachment; filename="discovery.ign"'
    doc = json.loads(ign)
    assert doc["ignition"]["version"] == "3.1.0"
    validate_ignition(ign, tmp_path)
    status, _, iso = fetch(hub, ie["status"]["isoDownloadURL"])
    assert status == 200
    assert ignition_from_iso(iso, tmp_path) == ign
    status, headers, body = fetch_method(hub, url, "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == len(ign)


def test_downloads_auth_and_parameters(hub):
    ie = setup_infraenv(hub)
    ie_id = ie["metadata"]["uid"]
    url = ie["status"]["bootArtifacts"]["discoveryIgnitionURL"]

    def err(u, code, method="GET"):
        status, headers, body = fetch_method(hub, u, method)
        assert status == code, (u, status, body[:300])
        assert headers["Content-Type"].startswith("application/json")
        return json.loads(body)

    assert err(without_query(url, "api_key"), 401) == {"code": 401, "message": "Unauthorized"}
    token = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["api_key"][0]
    assert err(with_query(url, api_key=token[:-4] + "AAAA"), 401)["code"] == 401
    assert err(with_query(url, api_key="garbage"), 401)["code"] == 401

    # Another InfraEnv's (valid) token: not this one's files.
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "second", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    hub.kubectl("-n", NS, "wait", "--for=condition=ImageCreated", "infraenv/second", "--timeout=30s")
    other = hub.kubectl_json("-n", NS, "get", "infraenv", "second")["status"]["bootArtifacts"]["discoveryIgnitionURL"]
    tok2 = urllib.parse.parse_qs(urllib.parse.urlsplit(other).query)["api_key"][0]
    body = err(with_query(url, api_key=tok2), 404)
    assert body["kind"] == "Error" and body["code"] == "404" and body["reason"] == "Object Not Found", body
    # An infra-env id that does not exist.
    missing = url.replace(ie_id, "00000000-0000-4000-8000-000000000000")
    assert err(missing, 404)["reason"] == "Object Not Found"

    body = err(with_query(url, file_name="kubeconfig"), 400)
    assert body["id"] == 400 and "file_name" in body["reason"] and "kubeconfig" in body["reason"], body
    assert "file_name" in err(without_query(url, "file_name"), 400)["reason"]
    assert "ipxe_script_type" in err(with_query(url, ipxe_script_type="boot-order-control"), 400)["reason"]
    ipxe = ie["status"]["bootArtifacts"]["ipxeScript"]
    assert "ipxe_script_type" in err(with_query(ipxe, ipxe_script_type="sometimes"), 400)["reason"]
    assert err(url, 405, method="DELETE")["code"] == "405"


# ---- payload too big for the embed area ---------------------------------------


def big_override(nbytes=300 * 1024):
    data = base64.b64encode(os.urandom(nbytes)).decode()
    return json.dumps({"ignition": {"version": "3.1.0"},
                       "storage": {"files": [{"path": "/etc/big.bin", "mode": 420,
                                              "contents": {"source": "data:;base64," + data}}]}})


def test_payload_too_big_for_the_embed_area(hub, tmp_path):
    ie = setup_infraenv(hub)
    name = ie["metadata"]["name"]
    iso_url = ie["status"]["isoDownloadURL"]
    # A patch, not apply: apply would copy the 400 KB into an annotation.
    patch = tmp_path / "patch.json"
    patch.write_text(json.dumps({"spec": {"ignitionConfigOverride": big_override()}}))
    hub.kubectl("-n", NS, "patch", "infraenv", name, "--type", "merge", "--patch-file", str(patch))
    bad = wait_condition(hub, NS, name, lambda c: c["status"] == "False", "ImageCreated False")
    c = image_created(bad)
    assert c["reason"] == "ImageCreationError", c
    m = TOO_BIG.match(c["message"])
    assert m and int(m.group(1)) > 256, c["message"]
    assert "isoDownloadURL" not in bad["status"] and "createdTime" not in bad["status"], bad["status"]

    # The image service refuses a corrupt ISO, with a clear error.
    status, headers, body = fetch(hub, iso_url)
    assert status == 400, (status, body[:200])
    assert headers["Content-Type"].startswith("application/json")
    reason = json.loads(body)["reason"]
    assert reason.startswith("The ignition archive size (") and "(256 KiB)" in reason, reason

    # Back under the limit: the image is created again.
    hub.kubectl("-n", NS, "patch", "infraenv", name, "--type", "json", "-p",
                '[{"op":"remove","path":"/spec/ignitionConfigOverride"}]')
    good = wait_condition(hub, NS, name, lambda c: c["status"] == "True", "ImageCreated True again")
    assert good["status"]["isoDownloadURL"] and good["status"]["createdTime"]
    status, _, _ = fetch(hub, good["status"]["isoDownloadURL"], {"Range": "bytes=0-1023"})
    assert status == 206


def test_too_big_at_creation(hub):
    hub.create_namespace("big")
    hub.kubectl("-n", "big", "create", "secret", "generic", "ps",
                "--type=kubernetes.io/dockerconfigjson",
                '--from-literal=.dockerconfigjson={"auths":{"x":{"auth":"eDp5"}}}')
    obj = {"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
           "metadata": {"name": "huge", "namespace": "big"},
           "spec": {"pullSecretRef": {"name": "ps"}, "ignitionConfigOverride": big_override(400 * 1024)}}
    hub.kubectl("create", "-f", "-", input=json.dumps(obj))
    ie = wait_condition(hub, "big", "huge", lambda c: True, "ImageCreated condition")
    c = image_created(ie)
    assert c["status"] == "False" and TOO_BIG.match(c["message"]), c
    assert not ie["status"].get("isoDownloadURL")


# ---- OS images over http ------------------------------------------------------


class IsoServer:
    """A local http server for the test ISO.  mode: 'refuse' (503), 'junk'
    (200 with a file that is no ISO) or 'serve'."""

    def __init__(self, iso_path):
        self.iso = iso_path.read_bytes()
        self.mode = "serve"
        self.requests = 0
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                srv.requests += 1
                if srv.mode == "refuse":
                    self.send_error(503, "not yet")
                    return
                body = b"this is not an ISO\n" * 1000 if srv.mode == "junk" else srv.iso
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path="/rhcos-live.iso?token=s3cret"):
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def iso_server():
    if not TEST_ISO.is_file():
        pytest.skip(f"{TEST_ISO} not built (xorriso missing?)")
    s = IsoServer(TEST_ISO)
    yield s
    s.close()


def os_images_file(tmp_path, url):
    p = tmp_path / "os-images.json"
    p.write_text(json.dumps([{"openshift_version": "4.20", "cpu_architecture": "x86_64",
                              "url": url, "version": "420.94.202601010000-0"}]))
    return p


def test_os_image_over_http(hub_factory, iso_server, tmp_path):
    url = iso_server.url()
    hub = hub_factory(extra_args=["--os-images", str(os_images_file(tmp_path, url))])
    ie = setup_infraenv(hub)
    c = image_created(ie)
    assert c["status"] == "True" and c["reason"] == "InfraEnvAvailable", c
    iso_url = ie["status"]["isoDownloadURL"]
    assert "/4.20/x86_64/" in iso_url
    cached = hub.data_dir / "os-images" / (hashlib.sha256(url.encode()).hexdigest() + ".iso")
    assert cached.read_bytes() == TEST_ISO.read_bytes()
    assert not list((hub.data_dir / "os-images").glob("*.part"))
    status, _, iso = fetch(hub, iso_url)
    assert status == 200 and len(iso) == len(iso_server.iso)
    doc = json.loads(ignition_from_iso(iso, tmp_path))
    assert doc["ignition"]["proxy"]["httpProxy"] == "http://11.11.11.33"
    status, _, kernel = fetch(hub, ie["status"]["bootArtifacts"]["kernel"])
    assert status == 200 and kernel

    # Downloaded once: a restart uses the cache, with the server gone.
    fetched = iso_server.requests
    iso_server.close()
    hub.restart()
    ie2 = hub.kubectl_json("-n", NS, "get", "infraenv", ie["metadata"]["name"])
    assert image_created(ie2)["status"] == "True"
    status, _, again = fetch(hub, ie2["status"]["isoDownloadURL"], {"Range": "bytes=0-2047"})
    assert status == 206 and again == iso[:2048]
    assert iso_server.requests == fetched


def test_os_image_download_waits_and_retries(hub_factory, iso_server, tmp_path):
    iso_server.mode = "refuse"
    url = iso_server.url()
    hub = hub_factory(extra_args=["--os-images", str(os_images_file(tmp_path, url))])
    hub.create_namespace(NS)
    hub.kubectl("-n", NS, "create", "secret", "generic", "pull-secret",
                "--type=kubernetes.io/dockerconfigjson",
                '--from-literal=.dockerconfigjson={"auths":{"x":{"auth":"eDp5"}}}')
    hub.apply_obj({"apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
                   "metadata": {"name": "waiting", "namespace": NS},
                   "spec": {"pullSecretRef": {"name": "pull-secret"}}})
    ie = wait_condition(hub, NS, "waiting", lambda c: "attempt" in c["message"],
                        "a failed download in the condition")
    c = image_created(ie)
    assert c["status"] == "False" and c["reason"] == "ImageCreationError", c
    assert "is being downloaded from http://127.0.0.1:" in c["message"], c
    assert "503" in c["message"], c
    assert "s3cret" not in c["message"], "the URL's query (a credential) leaked into the status"
    assert not ie["status"].get("isoDownloadURL")

    # Something that is not a CoreOS ISO is refused, never used.
    iso_server.mode = "junk"
    ie = wait_condition(hub, NS, "waiting", lambda c: "embed area" in c["message"],
                        "the junk download refused", timeout=60)
    assert image_created(ie)["status"] == "False"
    assert not list((hub.data_dir / "os-images").glob("*.iso"))

    iso_server.mode = "serve"
    ie = wait_condition(hub, NS, "waiting", lambda c: c["status"] == "True", "ImageCreated True",
                        timeout=90)
    status, _, iso = fetch(hub, ie["status"]["isoDownloadURL"])
    assert status == 200 and len(iso) == len(iso_server.iso)
    assert json.loads(ignition_from_iso(iso, tmp_path))["ignition"]["version"] == "3.1.0"
    assert "s3cret" not in hub.log_text()


def test_os_images_bad_url_scheme_is_refused(hub_factory, tmp_path):
    from conftest import HubStartError
    hub = hub_factory(extra_args=["--os-images", str(os_images_file(tmp_path, "ftp://example.com/a.iso"))],
                      start=False)
    with pytest.raises(HubStartError) as e:
        hub.start(timeout=15)
    assert 'entry 0: "url" must be a local path or a file, http or https URL' in e.value.log, e.value.log
