#!/usr/bin/env bash
# bench/nmstate.sh: time to turn an InfraEnv with 10,000 NMStateConfigs into
# its discovery ignition and ISO (target: under 1 s; upstream spends about
# 500 ms per nmstatectl call, i.e. per host).
#
# 1. In process (bench/nmstate-bench.c, built here against the Meson build's
#    static libraries): parse the stored objects, convert and bundle them,
#    render the ignition, build the embed payload, overlay and stream the
#    test ISO.  Best of BENCH_RUNS runs per phase.
# 2. Through the daemon (unless BENCH_DAEMON=0): a fresh agenthub on loopback
#    with N NMStateConfigs; the time from creating the InfraEnv to
#    ImageCreated=True, then the time to download the whole ISO.
#
# Knobs (environment):
#   BENCH_NMSTATE_N=10000  NMStateConfigs
#   BENCH_RUNS=3           in-process runs
#   BENCH_DAEMON=1         also measure through the daemon
#   BUILD=build            the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUILD=${BUILD:-build}
N=${BENCH_NMSTATE_N:-10000}
RUNS=${BENCH_RUNS:-3}
DAEMON=${BENCH_DAEMON:-1}

[ -d "$BUILD" ] || meson setup "$BUILD" >/dev/null
nice ninja -C "$BUILD" src/image/libah_image.a src/base/libah_base.a >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Isrc bench/nmstate-bench.c \
	"$BUILD/src/image/libah_image.a" "$BUILD/src/base/libah_base.a" \
	-ljansson -lyaml -lz -lcrypto -o "$BUILD/nmstate-bench"

ISO="$BUILD/testiso/discovery-test.iso"
if [ ! -f "$ISO" ]; then
	nice ninja -C "$BUILD" >/dev/null 2>&1 || true
fi
echo "== in process"
if [ -f "$ISO" ]; then
	"$BUILD/nmstate-bench" "$N" "$RUNS" "$ISO"
else
	echo "(no $ISO: the ISO phase is skipped)"
	"$BUILD/nmstate-bench" "$N" "$RUNS"
fi

[ "$DAEMON" = 1 ] || exit 0
if [ ! -x "$BUILD/agenthub" ]; then
	echo "== through the daemon: skipped ($BUILD/agenthub not built)"
	exit 0
fi
echo "== through the daemon"
TMP=$(mktemp -d)
PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BUILD/agenthub" serve --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" > "$TMP/agenthub.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP/data" "$PORT" "$N" <<'EOF'
import http.client, json, ssl, sys, time
data, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + 60
while True:
    try:
        token = open(f"{data}/admin.token").read().strip()
        ctx = ssl.create_default_context(cafile=f"{data}/ca.crt")
        c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=120)
        c.request("GET", "/readyz")
        if c.getresponse().read().strip() == b"ok":
            break
    except (OSError, http.client.HTTPException):
        pass
    if time.monotonic() > deadline:
        sys.exit("agenthub did not start")
    time.sleep(0.1)
H = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
G = "/apis/agent-install.openshift.io/v1beta1/namespaces/bench"

def call(method, path, body=None, ok=(200, 201)):
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=H)
    r = c.getresponse()
    out = r.read()
    if r.status not in ok:
        sys.exit(f"{method} {path}: {r.status} {out[:300]!r}")
    return json.loads(out) if out else None

call("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                    "metadata": {"name": "bench"}})
call("POST", "/api/v1/namespaces/bench/secrets",
     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull-secret"},
      "type": "kubernetes.io/dockerconfigjson",
      "stringData": {".dockerconfigjson": '{"auths":{}}'}})
t0 = time.monotonic()
for i in range(n):
    m0 = "02:00:%02X:%02X:%02X:%02X" % tuple((2 * i) >> s & 255 for s in (24, 16, 8, 0))
    m1 = "02:00:%02X:%02X:%02X:%02X" % tuple((2 * i + 1) >> s & 255 for s in (24, 16, 8, 0))
    ip = "%d.%d" % (i // 250 % 256, i % 250 + 1)
    eth = lambda name, mac, net: {
        "name": name, "type": "ethernet", "state": "up", "mac-address": mac,
        "ipv4": {"enabled": True, "dhcp": False,
                 "address": [{"ip": f"10.{net}.{ip}", "prefix-length": 16}]}}
    call("POST", G + "/nmstateconfigs", {
        "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "NMStateConfig",
        "metadata": {"name": "host-%05d" % i, "labels": {"bench": "yes"}},
        "spec": {"config": {
            "interfaces": [eth("eth0", m0, 126), eth("eth1", m1, 140)],
            "dns-resolver": {"config": {"server": ["10.126.0.1"]}},
            "routes": {"config": [
                {"destination": "0.0.0.0/0", "next-hop-address": "10.126.0.1",
                 "next-hop-interface": "eth0", "table-id": 254},
                {"destination": "0.0.0.0/0", "next-hop-address": "10.140.0.1",
                 "next-hop-interface": "eth1", "table-id": 254, "metric": 100}]}},
            "interfaces": [{"name": "eth0", "macAddress": m0},
                           {"name": "eth1", "macAddress": m1}]}})
print(f"  created {n} NMStateConfigs in {time.monotonic() - t0:.1f} s (setup, not timed below)")
t0 = time.monotonic()
call("POST", G + "/infraenvs", {
    "apiVersion": "agent-install.openshift.io/v1beta1", "kind": "InfraEnv",
    "metadata": {"name": "ie"},
    "spec": {"pullSecretRef": {"name": "pull-secret"},
             "nmStateConfigLabelSelector": {"matchLabels": {"bench": "yes"}}}})
while True:
    ie = call("GET", G + "/infraenvs/ie")
    conds = {c["type"]: c for c in ie.get("status", {}).get("conditions", [])}
    c_ = conds.get("ImageCreated")
    if c_ and c_["status"] == "True" and ie["status"].get("isoDownloadURL"):
        break
    if c_ and c_["status"] == "False":
        sys.exit("ImageCreated False: " + c_["message"])
    if time.monotonic() - t0 > 300:
        sys.exit("no image after 300 s")
    time.sleep(0.01)
t_image = time.monotonic() - t0
url = ie["status"]["isoDownloadURL"]
path = url.split(str(port), 1)[1]
t0 = time.monotonic()
c.request("GET", path, headers={"Authorization": H["Authorization"]})
r = c.getresponse()
size = 0
while True:
    chunk = r.read(1 << 20)
    if not chunk:
        break
    size += len(chunk)
if r.status != 200:
    sys.exit(f"ISO download: {r.status}")
t_iso = time.monotonic() - t0
print(f"  InfraEnv created -> ImageCreated=True: {t_image * 1000:.0f} ms "
      f"(includes the controller's pick-up latency)")
print(f"  ISO download ({size} bytes, ignition rebuilt per request): {t_iso * 1000:.0f} ms")
print(f"TOTAL through the daemon for {n} NMStateConfigs: {(t_image + t_iso) * 1000:.0f} ms")
EOF
