"""End-to-end fixtures: run the real agenthub daemon on loopback and drive it
with the real kubectl and with raw HTTPS.

Every hub gets its own data directory and its own free port.  A hub is stopped
with SIGTERM at teardown, and the teardown fails unless the daemon exits 0 and
its log holds no sanitizer report, so every test also checks clean shutdown.

Environment:
  AGENTHUB_BUILD  build directory holding `agenthub` (default <repo>/build)
  KUBECTL         kubectl binary (default: the one on PATH)
  AGENTHUB_STORE  "sqlite" (default) or "postgres": then one PostgreSQL server
                  (pgserver.py, Debian's binaries) runs for the session and
                  every hub gets its own database on it (`--store postgres://`);
                  tests marked sqlite_only (they open the SQLite file) skip
"""

import base64
import http.client
import json
import os
import pathlib
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import pgserver

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("AGENTHUB_BUILD") or REPO / "build")
AGENTHUB = BUILD / "agenthub"
KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl")
STORE = os.environ.get("AGENTHUB_STORE") or "sqlite"
if STORE not in ("sqlite", "postgres"):
    raise RuntimeError(f"AGENTHUB_STORE={STORE!r}: want sqlite or postgres")
SHARED = REPO.parent / "shared"
CONFORMANCE_DIR = SHARED / "conformance" / "upstream-crs"

# Generous for sanitizer builds on a loaded 2-core machine; polling returns
# as soon as the daemon is ready, so a fast daemon costs nothing.
START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0
KUBECTL_TIMEOUT = 60.0

SANITIZER_MARKERS = (
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "SUMMARY: AddressSanitizer",
    "SUMMARY: UndefinedBehaviorSanitizer",
    "WARNING: ThreadSanitizer",
    "runtime error:",
)


def wait_for(pred, timeout=10.0, interval=0.05, what="condition"):
    """Poll pred() until it returns a truthy value; return that value.
    Fail the test with `what` when the deadline passes."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except AssertionError as e:  # a predicate may assert; keep polling
            last_exc = e
        if time.monotonic() >= deadline:
            msg = f"timed out after {timeout:.1f}s waiting for {what}"
            if last_exc is not None:
                msg += f" (last: {last_exc})"
            pytest.fail(msg)
        time.sleep(interval)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Response:
    """A raw HTTP response: status, headers (dict, lower-case keys), body bytes."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError as e:
            raise AssertionError(
                f"HTTP {self.status}: body is not JSON ({e}): {self.body[:500]!r}")

    def __repr__(self):
        return f"<HTTP {self.status} {self.body[:300]!r}>"


class HubStartError(Exception):
    def __init__(self, msg, log):
        super().__init__(msg)
        self.log = log


class Hub:
    """One agenthub daemon on one data directory.  May be stopped, killed and
    restarted on the same directory (and, by default, the same port)."""

    def __init__(self, data_dir, log_dir, extra_args=()):
        self.data_dir = pathlib.Path(data_dir)
        self.log_dir = pathlib.Path(log_dir)
        self.extra_args = list(extra_args)
        self.port = None
        self.proc = None
        self.starts = 0
        self.log_path = None
        self.token = None
        self.cache_dir = self.log_dir / "kubectl-cache"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # AGENTHUB_STORE=postgres: this hub's own database (made at first
        # start, kept across restarts), unless the test names a store.
        self.store_url = None
        if STORE == "postgres" and not any(a == "--store" or a.startswith("--store=")
                                           for a in self.extra_args):
            self.store_url = pgserver.server().createdb()

    # ---- lifecycle ------------------------------------------------------

    @property
    def kubeconfig(self):
        return self.data_dir / "kubeconfig"

    @property
    def ca_path(self):
        return self.data_dir / "ca.crt"

    @property
    def base_url(self):
        return f"https://127.0.0.1:{self.port}"

    def start(self, new_port=False, timeout=START_TIMEOUT):
        assert self.proc is None, "hub already running"
        if self.port is None or new_port:
            self.port = free_port()
        self.starts += 1
        self.log_path = self.log_dir / f"agenthub-{self.starts}.log"
        log = open(self.log_path, "wb")
        cmd = [str(AGENTHUB), "serve", "--data-dir", str(self.data_dir),
               "--listen", f"127.0.0.1:{self.port}", *self.extra_args]
        if self.store_url:
            cmd += ["--store", self.store_url]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                self.proc = None
                raise HubStartError(f"agenthub exited with {rc} during start-up "
                                    f"({' '.join(cmd)}):\n{self.log_text()[-4000:]}",
                                    self.log_text())
            if self._ready():
                break
            if time.monotonic() >= deadline:
                self.proc.kill()
                self.proc.wait(10)
                self.proc = None
                raise HubStartError(f"agenthub not ready after {timeout}s:\n"
                                    f"{self.log_text()[-4000:]}", self.log_text())
            time.sleep(0.05)
        self.token = (self.data_dir / "admin.token").read_text().strip()
        assert self.token, "admin.token is empty"
        return self

    def _ready(self):
        for f in ("kubeconfig", "ca.crt", "admin.token"):
            if not (self.data_dir / f).is_file():
                return False
        try:
            ctx = ssl.create_default_context(cafile=str(self.ca_path))
            with urllib.request.urlopen(self.base_url + "/readyz", context=ctx,
                                        timeout=2) as r:
                return r.status == 200
        except (OSError, urllib.error.URLError, ssl.SSLError, http.client.HTTPException):
            return False

    def log_text(self):
        try:
            return self.log_path.read_text(errors="replace")
        except (OSError, AttributeError):
            return ""

    def assert_clean_log(self):
        text = self.log_text()
        for m in SANITIZER_MARKERS:
            assert m not in text, f"sanitizer report in {self.log_path}:\n{text[-6000:]}"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=STOP_TIMEOUT, check=True):
        """SIGTERM, wait; assert exit code 0 and a clean log.  Returns rc."""
        assert self.proc is not None, "hub not running"
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
            pytest.fail(f"agenthub did not exit within {timeout}s of SIGTERM:\n"
                        f"{self.log_text()[-4000:]}")
        if check:
            assert rc == 0, f"agenthub exited with {rc} after SIGTERM:\n{self.log_text()[-4000:]}"
            self.assert_clean_log()
        return rc

    def kill9(self):
        assert self.proc is not None, "hub not running"
        proc, self.proc = self.proc, None
        proc.send_signal(signal.SIGKILL)
        rc = proc.wait(10)
        assert rc == -signal.SIGKILL, f"expected death by SIGKILL, got {rc}"
        # Whatever it logged before the kill must still be clean.
        self.assert_clean_log()

    def restart(self, **kw):
        if self.proc is not None:
            self.stop()
        return self.start(**kw)

    # ---- kubectl --------------------------------------------------------

    def kubectl(self, *args, input=None, check=True, timeout=KUBECTL_TIMEOUT):
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig),
               "--cache-dir", str(self.cache_dir), *map(str, args)]
        try:
            r = subprocess.run(cmd, input=input, capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"kubectl timed out after {timeout}s: {' '.join(cmd)}\n"
                        f"stdout: {e.stdout}\nstderr: {e.stderr}")
        if check and r.returncode != 0:
            raise AssertionError(
                f"kubectl failed ({r.returncode}): {' '.join(args)}\n"
                f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def kubectl_bg(self, *args):
        """Start kubectl in the background (stdout/stderr pipes, text)."""
        cmd = [KUBECTL, "--kubeconfig", str(self.kubeconfig),
               "--cache-dir", str(self.cache_dir), *map(str, args)]
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def kubectl_json(self, *args, **kw):
        r = self.kubectl(*args, "-o", "json", **kw)
        return json.loads(r.stdout)

    def create_namespace(self, name):
        self.kubectl("create", "namespace", name)
        return name

    def apply_obj(self, obj, *extra, check=True):
        """kubectl apply -f - of one object (or a List) given as a dict."""
        return self.kubectl("apply", *extra, "-f", "-", input=json.dumps(obj), check=check)

    # ---- raw HTTPS ------------------------------------------------------

    def ssl_context(self):
        return ssl.create_default_context(cafile=str(self.ca_path))

    def request(self, method, path, body=None, content_type="application/json",
                token=True, headers=None, timeout=15):
        """One HTTPS request through urllib.  body: dict/list (JSON-encoded),
        str or bytes.  token: True = the admin token, False = none, or a string.
        Returns a Response whatever the status."""
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
        elif isinstance(body, str):
            body = body.encode()
        req = urllib.request.Request(self.base_url + path, data=body, method=method)
        if body is not None:
            req.add_header("Content-Type", content_type)
        req.add_header("Accept", "application/json")
        if token is True:
            req.add_header("Authorization", f"Bearer {self.token}")
        elif token:
            req.add_header("Authorization", f"Bearer {token}")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as r:
                return Response(r.status, r.getheaders(), r.read())
        except urllib.error.HTTPError as e:
            return Response(e.code, e.headers.items(), e.read())

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def get_json(self, path, expect=200):
        r = self.get(path)
        assert r.status == expect, f"GET {path}: {r}"
        return r.json()

    def connection(self, timeout=15):
        """A persistent http.client connection (keep-alive) to the hub."""
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                           context=self.ssl_context())

    def auth_headers(self, content_type="application/json"):
        return {"Authorization": f"Bearer {self.token}", "Content-Type": content_type,
                "Accept": "application/json"}

    def readyz(self):
        r = self.request("GET", "/readyz", token=False, timeout=5)
        return r.status == 200 and r.body.strip() == b"ok"

    def watch(self, path, timeout=10):
        """Open a watch stream; returns a Watch (iterate .events())."""
        return Watch(self, path, timeout)


class Watch:
    """A raw watch: newline-delimited JSON events over one HTTPS response."""

    def __init__(self, hub, path, timeout):
        self.conn = hub.connection(timeout=timeout)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {hub.token}",
                                                "Accept": "application/json"})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status

    def body(self):
        return self.resp.read()

    def next_event(self, timeout=10):
        """The next event (dict); None at end of stream.  Raises socket.timeout."""
        self.conn.sock.settimeout(timeout)
        while True:
            line = self.resp.readline()
            if not line:
                return None
            line = line.strip()
            if line:
                return json.loads(line)

    def events_until(self, pred, timeout=10, skip_bookmarks=True):
        """Collect events until pred(events) is true; fail on deadline."""
        got = []
        deadline = time.monotonic() + timeout
        while not pred(got):
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"watch: condition not met in {timeout}s; events: "
                            f"{[(e.get('type'), e.get('object', {}).get('metadata', {}).get('name')) for e in got]}")
            try:
                ev = self.next_event(timeout=left)
            except (socket.timeout, TimeoutError):
                continue
            if ev is None:
                pytest.fail(f"watch stream ended early; events so far: {got}")
            if skip_bookmarks and ev.get("type") == "BOOKMARK":
                continue
            got.append(ev)
        return got

    def close(self):
        try:
            self.conn.close()
        except OSError:
            pass


def status_shape(body, code, reason):
    """Assert a Kubernetes Status object with the given code and reason."""
    assert body.get("kind") == "Status", body
    assert body.get("apiVersion") == "v1", body
    assert body.get("status") == "Failure", body
    assert body.get("code") == code, body
    assert body.get("reason") == reason, body
    assert isinstance(body.get("message"), str) and body["message"], body


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


# ---- fixtures -----------------------------------------------------------


def pytest_configure(config):
    config.addinivalue_line("markers", "sqlite_only: reads or changes the SQLite file "
                            "itself; skipped when AGENTHUB_STORE=postgres")


def pytest_collection_modifyitems(config, items):
    if STORE != "postgres":
        return
    skip = pytest.mark.skip(reason="opens the SQLite store file (AGENTHUB_STORE=postgres)")
    for item in items:
        if "sqlite_only" in item.keywords:
            item.add_marker(skip)


def _require_tools():
    if not KUBECTL:
        pytest.skip("kubectl not installed")
    if not AGENTHUB.is_file():
        pytest.fail(f"{AGENTHUB} not built (run `ninja -C {BUILD}` or set AGENTHUB_BUILD)")


class HubFactory:
    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.hubs = []

    def __call__(self, extra_args=(), start=True, name="hub"):
        _require_tools()
        base = self.tmp_path_factory.mktemp(name)
        hub = Hub(base / "data", base, extra_args)
        self.hubs.append(hub)
        if start:
            hub.start()
        return hub

    def teardown(self):
        errors = []
        for hub in self.hubs:
            if hub.proc is not None:
                try:
                    hub.stop()
                except BaseException as e:  # report every hub, not only the first
                    errors.append(f"{hub.data_dir}: {e}")
        if errors:
            pytest.fail("hub teardown:\n" + "\n".join(errors))


@pytest.fixture
def hub_factory(tmp_path_factory):
    f = HubFactory(tmp_path_factory)
    yield f
    f.teardown()


@pytest.fixture(scope="module")
def module_hub_factory(tmp_path_factory):
    f = HubFactory(tmp_path_factory)
    yield f
    f.teardown()


@pytest.fixture
def hub(hub_factory):
    """A fresh hub (fresh data dir) for one test."""
    return hub_factory()


@pytest.fixture(scope="module")
def module_hub(module_hub_factory):
    """One hub shared by the tests of a module (each test uses its own namespace)."""
    return module_hub_factory(name="modhub")


@pytest.fixture
def kubectl(hub):
    return hub.kubectl


_ns_counter = [0]


@pytest.fixture
def ns(module_hub, request):
    """A fresh namespace on the module hub, named after the test."""
    _ns_counter[0] += 1
    base = request.node.name.lower().replace("_", "-")
    base = "".join(c for c in base if c.isalnum() or c == "-")[:40].strip("-")
    return module_hub.create_namespace(f"{base}-{_ns_counter[0]}")


class LineReader:
    """Collect the stdout lines of a background process in a thread."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def wait_line(self, pred, timeout=15, what="line"):
        return wait_for(lambda: next((l for l in self.snapshot() if pred(l)), None),
                        timeout, what=f"{what}; output so far: {self.snapshot()}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.thread.join(5)


@pytest.fixture
def sims():
    """Simulators (objects with stop() and log_path) started by a test:
    stopped at teardown, and their logs must hold no sanitizer report."""
    started = []
    yield started
    for s in started:
        s.stop()
    for s in started:
        path = getattr(s, "log_path", None)
        text = path.read_text() if path and path.is_file() else ""
        assert not any(m in text for m in SANITIZER_MARKERS), text[-4000:]
