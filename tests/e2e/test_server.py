"""The HTTPS server itself: the listener, TLS versions, request bounds,
connection caps and timeouts (issue "Security" items 4, 6, 7 and the fleet
server of "Architecture for what comes next")."""

import json
import socket
import ssl
import time
import warnings

import pytest

from conftest import HubStartError, status_shape, wait_for


def tls_connect(hub, version=None, timeout=10):
    """A TLS socket to the hub, optionally pinned to one protocol version."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(cafile=str(hub.ca_path))
    if version is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            # Let this client offer the old versions at all (OpenSSL's
            # default security level refuses them on the client side).
            ctx.set_ciphers("DEFAULT:@SECLEVEL=0")
            ctx.minimum_version = version
            ctx.maximum_version = version
    raw = socket.create_connection(("127.0.0.1", hub.port), timeout=timeout)
    try:
        return ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    except BaseException:
        raw.close()
        raise


def read_response(sock, timeout=10):
    """Read one HTTP response head (and what body arrived with it)."""
    sock.settimeout(timeout)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0] else 0
    headers = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        headers[k.strip().lower()] = v.strip()
    return status, headers, rest


# ---- item 4: one hub per port ------------------------------------------


def test_second_hub_on_same_port_fails_at_start(hub_factory):
    first = hub_factory(name="first")
    second = hub_factory(name="second", start=False)
    second.port = first.port
    with pytest.raises(HubStartError) as e:
        second.start()
    assert "address already in use" in e.value.log.lower(), e.value.log[-2000:]
    # The first hub keeps serving every connection.
    for _ in range(20):
        assert first.readyz()


# ---- item 6: TLS 1.2 minimum -------------------------------------------


@pytest.mark.parametrize("version", ["TLSv1", "TLSv1_1"])
def test_old_tls_versions_refused(hub, version):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        v = getattr(ssl.TLSVersion, version)
    with pytest.raises((ssl.SSLError, ConnectionError)):
        s = tls_connect(hub, v)
        s.close()


@pytest.mark.parametrize("version", ["TLSv1_2", "TLSv1_3"])
def test_tls_12_and_13_accepted(hub, version):
    s = tls_connect(hub, getattr(ssl.TLSVersion, version))
    try:
        assert s.version() == version.replace("_", ".")
        s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n")
        status, _, _ = read_response(s)
        assert status == 200
    finally:
        s.close()


# ---- item 7: early 413 on a declared length ----------------------------


def test_declared_huge_body_gets_413_without_the_body(hub):
    s = tls_connect(hub)
    try:
        t0 = time.monotonic()
        s.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\n"
                  b"Host: x\r\nAuthorization: Bearer " + hub.token.encode() + b"\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: 10737418240\r\n\r\n")
        status, headers, body = read_response(s, timeout=10)
        elapsed = time.monotonic() - t0
        assert status == 413, (status, headers, body)
        assert elapsed < 5, elapsed
        n = int(headers.get("content-length", "0"))
        while len(body) < n:
            chunk = s.recv(65536)
            if not chunk:
                break
            body += chunk
        status_shape(json.loads(body), 413, "RequestEntityTooLarge")
    finally:
        s.close()


def test_declared_huge_body_on_agent_api_gets_413(hub):
    s = tls_connect(hub)
    try:
        s.sendall(b"POST /api/assisted-install/v2/infra-envs/x/hosts HTTP/1.1\r\n"
                  b"Host: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 10737418240\r\n\r\n")
        status, headers, body = read_response(s, timeout=10)
        assert status == 413, (status, headers, body)
    finally:
        s.close()


# ---- caps ---------------------------------------------------------------


def hub_pid_status(hub, key):
    for line in open(f"/proc/{hub.proc.pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(key)


def open_idle(hub, n):
    """n TLS connections that completed their handshake and sent nothing."""
    socks = []
    for _ in range(n):
        socks.append(tls_connect(hub))
    return socks


def get_on(sock, path, token=None):
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
    status, headers, body = read_response(sock)
    n = int(headers.get("content-length", "0"))
    while len(body) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, headers, body


def test_connections_past_the_cap_get_503_with_retry_after(hub_factory):
    hub = hub_factory(extra_args=["--max-connections", "20"])
    idle = open_idle(hub, 25)
    try:
        s = tls_connect(hub)
        status, headers, body = get_on(s, "/api/v1/namespaces", hub.token)
        s.close()
        assert status == 503, (status, body)
        assert headers.get("retry-after") == "5", headers
        status_shape(json.loads(body), 503, "ServiceUnavailable")
        # The agent API answers in its own error shape.
        s = tls_connect(hub)
        status, headers, body = get_on(s, "/api/assisted-install/v2/infra-envs/x")
        s.close()
        assert status == 503 and headers.get("retry-after") == "5"
        assert json.loads(body)["code"] == "503"
    finally:
        for s in idle:
            s.close()
    wait_for(hub.readyz, timeout=10, what="readyz once connections are closed")


def big_iso(tmp_path, extra_mib=48):
    """The test ISO followed by zeros: big enough that a download stays in
    flight while its client does not read."""
    from conftest import BUILD
    src = BUILD / "testiso" / "discovery-test.iso"
    if not src.is_file():
        pytest.skip(f"{src} not built")
    p = tmp_path / "big.iso"
    with open(p, "wb") as f:
        f.write(src.read_bytes())
        f.truncate(src.stat().st_size + extra_mib * 1024 * 1024)
    images = tmp_path / "os-images.json"
    images.write_text(json.dumps([{"openshift_version": "4.20", "cpu_architecture": "x86_64",
                                   "url": str(p), "version": "420.94.202601010000-0"}]))
    return images


def start_download(hub, url):
    """Send a GET for url and read only the response head."""
    import urllib.parse
    u = urllib.parse.urlsplit(url)
    s = tls_connect(hub)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(f"GET {u.path}?{u.query} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    status, headers, _ = read_response(s)
    return s, status, headers


def test_downloads_past_the_cap_get_503_with_retry_after(hub_factory, tmp_path):
    from test_discovery import setup_infraenv
    hub = hub_factory(extra_args=["--max-downloads", "2", "--os-images", str(big_iso(tmp_path))])
    ie = setup_infraenv(hub)
    url = ie["status"]["isoDownloadURL"]
    held = []
    try:
        for _ in range(2):
            s, status, _ = start_download(hub, url)
            held.append(s)
            assert status == 200
        s, status, headers = start_download(hub, url)
        s.close()
        assert status == 503, (status, headers)
        assert headers.get("retry-after") == "5"
        # kubectl is not affected by the downloads in flight.
        assert hub.kubectl("get", "namespaces").returncode == 0
    finally:
        for s in held:
            s.close()

    def third_ok():
        s, status, _ = start_download(hub, url)
        s.close()
        return status == 200
    wait_for(third_ok, timeout=15, what="a download once the others are closed")


def test_slow_download_outlives_the_idle_timeout(hub_factory, tmp_path):
    """A client reading an ISO slowly (at most 64 KiB/s) keeps its download
    while it reads, however long that takes past the idle timeout: the server
    keeps writing to it (a bounded send buffer, not megabytes that take
    minutes to drain), so the connection is never taken for a dead one."""
    from test_discovery import setup_infraenv
    hub = hub_factory(extra_args=["--idle-timeout", "6", "--request-timeout", "2",
                                  "--os-images", str(big_iso(tmp_path))])
    ie = setup_infraenv(hub)
    s, status, _ = start_download(hub, ie["status"]["isoDownloadURL"])
    got, t0 = 0, time.monotonic()
    try:
        assert status == 200
        while time.monotonic() - t0 < 20:
            s.settimeout(5)
            data = s.recv(16384)
            assert data, f"the download was cut after {time.monotonic() - t0:.1f}s and {got} bytes"
            got += len(data)
            time.sleep(0.25)
        assert got >= 400 * 1024, got
    finally:
        s.close()


# ---- timeouts -----------------------------------------------------------


def closed_within(sock, seconds):
    """True when the peer closes sock within seconds (reading and dropping)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except (socket.timeout, TimeoutError):
            return False
        except (ssl.SSLError, ConnectionError, OSError):
            return True
    return False


def test_slowloris_request_is_cut_at_the_request_timeout(hub_factory):
    hub = hub_factory(extra_args=["--request-timeout", "2", "--idle-timeout", "30"])
    s = tls_connect(hub)
    try:
        s.sendall(b"GET /readyz HTTP/1.1\r\n")
        t0 = time.monotonic()
        closed = False
        # One header byte every half second: never idle, never complete.
        while time.monotonic() - t0 < 10:
            try:
                s.sendall(b"X")
            except (ssl.SSLError, OSError):
                closed = True
                break
            if closed_within(s, 0.5):
                closed = True
                break
        elapsed = time.monotonic() - t0
        assert closed, "a request trickled for 10 s was not cut"
        assert elapsed < 6, elapsed
    finally:
        s.close()
    assert hub.readyz()


def test_idle_keepalive_lasts_the_idle_timeout_then_closes(hub_factory):
    hub = hub_factory(extra_args=["--idle-timeout", "4", "--request-timeout", "2"])
    s = tls_connect(hub)
    try:
        assert get_on(s, "/readyz")[0] == 200
        time.sleep(2.5)  # longer than the request timeout: idle is not a request
        assert get_on(s, "/readyz")[0] == 200
        t0 = time.monotonic()
        assert closed_within(s, 8), "an idle connection outlived the idle timeout"
        assert 3 <= time.monotonic() - t0 < 7
    finally:
        s.close()
    s = tls_connect(hub)
    try:
        s.sendall(b"GET /readyz HTTP/1.1\r\n")  # half a request, then silence
        t0 = time.monotonic()
        assert closed_within(s, 6)
        assert time.monotonic() - t0 < 4
    finally:
        s.close()


# ---- threads are not per connection ---------------------------------------


def test_watches_and_idle_connections_do_not_take_a_thread_each(hub):
    hub.create_namespace("w")
    base = hub_pid_status(hub, "Threads")
    idle = open_idle(hub, 200)
    watches = [hub.watch("/api/v1/namespaces/w/configmaps?watch=true") for _ in range(40)]
    try:
        time.sleep(1)
        threads = hub_pid_status(hub, "Threads")
        assert threads <= base + 2, (base, threads)
        assert threads < 64
        t0 = time.monotonic()
        hub.kubectl("-n", "w", "create", "configmap", "c1", "--from-literal=a=b")
        for w in watches:
            ev = w.events_until(lambda got: got and got[-1]["type"] == "ADDED", timeout=10)
            assert ev[-1]["object"]["metadata"]["name"] == "c1"
        assert time.monotonic() - t0 < 10
    finally:
        for s in idle:
            s.close()
        # Watches stay open: SIGTERM at teardown must still exit 0 quickly.


# ---- the simulator keeps one connection per host --------------------------


def peer_ports(hub):
    """Client ports of the connections established to the hub now."""
    import subprocess
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( sport = :{hub.port} )"],
                         capture_output=True, text=True, check=True).stdout
    return {l.split()[-1].rsplit(":", 1)[1] for l in out.splitlines() if l.strip()}


@pytest.mark.parametrize("shared", [False, True])
def test_simulated_hosts_keep_their_own_connection(hub, tmp_path, shared):
    import shutil
    import subprocess
    from test_discovery import AGENT, NS, setup_infraenv
    if not shutil.which("ss"):
        pytest.skip("ss (iproute2) not installed")
    ie = setup_infraenv(hub)
    args = [str(AGENT), "simulate", "--iso", ie["status"]["isoDownloadURL"], "--hosts", "6",
            "--cacert", str(hub.ca_path), "--max-poll-seconds", "1", "--ramp-seconds", "1",
            "--max-inflight", "2"]
    if shared:
        args.append("--shared-connections")
    with open(tmp_path / "sim.log", "w") as log:
        sim = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(hub.kubectl_json("-n", NS, "get", "agents")["items"]) == 6,
                 timeout=60, what="6 Agents")
        time.sleep(2)
        first = peer_ports(hub)
        time.sleep(4)  # several polls of every host
        second = peer_ports(hub)
        kept = first & second
        if shared:
            # At most --max-inflight connections, shared by the 6 hosts.
            assert len(kept) <= 2, (first, second)
        else:
            # One keep-alive connection per host, the same ones poll after poll.
            assert len(kept) >= 6, (first, second)
    finally:
        sim.terminate()
        sim.wait(30)
    assert "ERROR: AddressSanitizer" not in (tmp_path / "sim.log").read_text()
