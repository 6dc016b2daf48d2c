"""Logs: with -v one line per request (method, path with secrets redacted,
status, duration, client address); --log-format json writes one JSON object
per line; clients hanging up leave no lines."""
import json
import re
import socket
import ssl
import subprocess
import time
import urllib.request

from conftest import wait_for
from test_discovery import setup_infraenv

REQ_TEXT = re.compile(r"^\S+Z debug request (\S+) (\S+) (\d{3}) (\d+\.\d{3})ms (127\.0\.0\.1:\d+)$")


def request_lines(hub):
    return [m for m in (REQ_TEXT.match(l) for l in hub.log_text().splitlines()) if m]


def test_verbose_logs_one_line_per_request(hub_factory):
    hub = hub_factory(extra_args=["-v"])
    hub.kubectl("create", "namespace", "logs")
    r = hub.get("/api/v1/namespaces/logs?api_key=SECRET1&token=SECRET2&pretty=true")
    assert r.status == 200
    r = hub.get("/api/v1/namespaces/nope")
    assert r.status == 404

    def found():
        return [m for m in request_lines(hub) if m.group(2).startswith("/api/v1/namespaces/")]
    lines = wait_for(lambda: len(found()) >= 2 and found(), what="request lines")
    get_ok = [m for m in lines if m.group(2).startswith("/api/v1/namespaces/logs?")]
    assert len(get_ok) == 1
    m = get_ok[0]
    assert m.group(1) == "GET" and m.group(3) == "200"
    assert "api_key=REDACTED" in m.group(2) and "token=REDACTED" in m.group(2) and "pretty=true" in m.group(2)
    assert any(x.group(2) == "/api/v1/namespaces/nope" and x.group(3) == "404" for x in lines)
    post = [x for x in request_lines(hub) if x.group(1) == "POST" and x.group(2).split("?")[0] == "/api/v1/namespaces"]
    assert post and post[0].group(3) == "201"
    text = hub.log_text()
    assert "SECRET1" not in text and "SECRET2" not in text
    assert hub.token not in text


def test_image_tokens_stay_out_of_the_log(hub_factory):
    hub = hub_factory(extra_args=["-v"])
    ie = setup_infraenv(hub)
    url = ie["status"]["isoDownloadURL"]
    req = urllib.request.Request(url, headers={"Range": "bytes=0-1023"})
    with urllib.request.urlopen(req, context=hub.ssl_context(), timeout=30) as r:
        assert r.status == 206
        r.read()
    secrets = re.findall(r"(?:api_key=|bytoken/|byapikey/)([^/&?]+)", url)
    assert secrets, url
    wait_for(lambda: any(m.group(3) == "206" for m in request_lines(hub)), what="the ISO request line")
    text = hub.log_text()
    for s in secrets:
        assert s not in text


def test_quiet_without_verbose(hub):
    hub.kubectl("get", "namespaces")
    assert not request_lines(hub)
    assert "GET /api" not in hub.log_text()


def test_json_log_format(hub_factory):
    hub = hub_factory(extra_args=["--log-format", "json", "-v"])
    hub.kubectl("get", "namespaces")
    hub.get("/api/v1/namespaces?api_key=SECRET3")
    hub.stop()
    lines = [l for l in hub.log_text().splitlines() if l.strip()]
    assert len(lines) > 5
    objs = [json.loads(l) for l in lines]  # every line is one JSON object
    for o in objs:
        assert set(o) >= {"time", "level", "msg"}, o
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", o["time"]), o
        assert o["level"] in ("debug", "info", "warn", "error")
    reqs = [o for o in objs if o["msg"] == "request"]
    assert reqs
    for o in reqs:
        assert set(o) >= {"method", "path", "status", "duration_ms", "client"}
        assert isinstance(o["status"], int) and isinstance(o["duration_ms"], float)
        assert o["client"].startswith("127.0.0.1:")
    assert any(o["path"] == "/api/v1/namespaces?api_key=REDACTED" for o in reqs)
    assert any(o["msg"] == "stopped cleanly" for o in objs)
    assert "SECRET3" not in hub.log_text()


def test_client_disconnects_leave_no_lines(hub_factory):
    hub = hub_factory(extra_args=["-v"])
    # A TCP connection closed at once, one closed mid-handshake, a TLS
    # connection closed before a request, a watch the client walks away from.
    with socket.create_connection(("127.0.0.1", hub.port)):
        pass
    with socket.create_connection(("127.0.0.1", hub.port)) as s:
        s.sendall(b"\x16\x03\x01\x00\x10garbage")
    ctx = hub.ssl_context()
    with socket.create_connection(("127.0.0.1", hub.port)) as raw:
        with ctx.wrap_socket(raw, server_hostname="127.0.0.1"):
            pass
    subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{hub.port}"], input=b"",
                   capture_output=True, timeout=30)
    w = hub.kubectl_bg("get", "namespaces", "-w")
    time.sleep(1)
    w.kill()
    w.wait(10)
    conn = hub.connection()
    conn.request("GET", "/api/v1/namespaces?watch=true", headers=hub.auth_headers())
    resp = conn.getresponse()
    resp.read(10)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    time.sleep(1)
    hub.stop()
    noise = [l for l in hub.log_text().splitlines()
             if " request " not in l and not re.search(
                 r"listening on|serving the Kubernetes API|kubectl: export|signal 15|stopped cleanly|"
                 r"host timeout|event rate limits|data directory \S+ was mode 0755: now 0700|"
                 r"leader election: \S+ (now holds Lease|holds the database session lock)", l)]
    assert noise == [], noise
