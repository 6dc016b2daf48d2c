"""The HTTPS server itself: the listener, TLS versions, request bounds,
connection caps and timeouts (issue "Security" items 4, 6, 7 and the fleet
server of "Architecture for what comes next")."""

import json
import socket
import ssl
import time
import warnings

import pytest

from conftest import HubStartError, status_shape


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
