#!/usr/bin/env bash
# bench/fleetconn.sh: can one hub hold a fleet's connections?
#
# Starts a fresh agenthub on a temporary data directory.  Phase 1: IDLE idle
# keep-alive TLS connections (bench/idleconns.py: one GET /readyz each, then
# silence) give the hub's memory per idle connection.  Phase 2: creates one
# late-binding InfraEnv whose OS image is the test ISO padded to
# FLEETCONN_ISO_MIB (so a slow download stays in flight), then at once:
#   - N simulated hosts (`agenthub-agent simulate`), each polling on its own
#     keep-alive connection (the upstream agent's behaviour);
#   - M slow ISO downloads (bench/slowdl.py: ~RATE bytes/s each);
#   - a loop of `kubectl get agents -n NS --chunk-size=500`, timed per
#     command (wall clock, kubectl start-up included) and per request (the
#     server's answer time as kubectl -v=6 reports it), each followed by
#     three small requests timed with curl (GET /api/v1/namespaces: the
#     server's responsiveness apart from the cost of listing big Agents).
# While they run it samples the hub's threads, RSS, open fds, established
# connections and downloads in flight, then prints them with the kubectl
# p50/p99 and stops everything (a trap on EXIT).  Everything is on 127.0.0.1.
#
# Usage: bash bench/fleetconn.sh [N [M]]
# Knobs (environment):
#   FLEETCONN_N=10000        simulated hosts (first argument wins)
#   FLEETCONN_M=500          slow downloads (second argument wins)
#   FLEETCONN_RATE=4096      bytes per second each download reads
#   FLEETCONN_RAMP=60        seconds over which the hosts boot
#   FLEETCONN_HOLD=60        seconds the full load is held and measured
#   FLEETCONN_KUBECTL=40     timed kubectl commands (spread over the hold)
#   FLEETCONN_ISO_MIB=64     size of the padded ISO
#   FLEETCONN_IDLE=2000      phase 1 connections (Python's TLS is the slow side)
#   FLEETCONN_THREADS=       hub --http-threads (default: the hub's)
#   FLEETCONN_KEEP=1         keep the temporary directory and logs
#   BUILD=build              the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
N=${1:-${FLEETCONN_N:-10000}}
M=${2:-${FLEETCONN_M:-500}}
RATE=${FLEETCONN_RATE:-4096}
RAMP=${FLEETCONN_RAMP:-60}
HOLD=${FLEETCONN_HOLD:-60}
KRUNS=${FLEETCONN_KUBECTL:-40}
IDLE_N=${FLEETCONN_IDLE:-2000}
ISO_MIB=${FLEETCONN_ISO_MIB:-64}
NS=spoke-cluster
CRS=$ROOT/../shared/conformance/upstream-crs

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'fleetconn: %s\n' "$*" >&2; exit 1; }

[[ $N =~ ^[0-9]+$ && $N -ge 1 ]] || die "N must be a positive number, got '$N'"
[[ $M =~ ^[0-9]+$ ]] || die "M must be a number, got '$M'"
command -v kubectl >/dev/null || die "kubectl not found"
command -v python3 >/dev/null || die "python3 not found"
[[ -f $CRS/infraEnvLateBinding.yaml ]] || die "$CRS/infraEnvLateBinding.yaml not found"

[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
ninja -C "$BUILD" agenthub agenthub-agent >&2
HUB_BIN=$BUILD/agenthub
SIM_BIN=$BUILD/agenthub-agent
[[ -f $BUILD/testiso/discovery-test.iso ]] || ninja -C "$BUILD" >&2

# Every connection is a file descriptor, on both sides.
ulimit -n "$(ulimit -Hn)"
NOFILE=$(ulimit -n)
((N + M + 256 <= NOFILE)) || die "N + M = $((N + M)) connections need more than the open file limit $NOFILE (ulimit -Hn)"

TMP=$(mktemp -d /tmp/agenthub-fleetconn.XXXXXX)
HUB_PID= SIM_PID= DL_PID= IDLE_PID=
cleanup() {
	local rc=$?
	set +e
	for p in $IDLE_PID $DL_PID $SIM_PID $HUB_PID; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	if [[ $rc -eq 0 && -z ${FLEETCONN_KEEP:-} ]]; then
		rm -rf "$TMP"
	else
		say "logs kept in $TMP"
	fi
}
trap cleanup EXIT

# The padded ISO: the test ISO's volume, then zeros.
cp "$BUILD/testiso/discovery-test.iso" "$TMP/big.iso"
truncate -s "$((ISO_MIB * 1024 * 1024))" "$TMP/big.iso"
printf '[{"openshift_version":"4.20","cpu_architecture":"x86_64","url":"%s","version":"420.94.202601010000-0"}]\n' \
	"$TMP/big.iso" >"$TMP/os-images.json"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HUB_ARGS=(serve --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" --os-images "$TMP/os-images.json"
	--max-connections "$((N + M + 1000))" --max-downloads "$((M + 100))")
[[ -n ${FLEETCONN_THREADS:-} ]] && HUB_ARGS+=(--http-threads "$FLEETCONN_THREADS")
"$HUB_BIN" "${HUB_ARGS[@]}" >"$TMP/hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 1 300); do
	[[ -f $TMP/data/kubeconfig && -f $TMP/data/ca.crt ]] &&
		curl -fsS --cacert "$TMP/data/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$HUB_PID" 2>/dev/null || die "the hub exited: $(tail -5 "$TMP/hub.log")"
	sleep 0.1
done
K=(kubectl --kubeconfig "$TMP/data/kubeconfig" --cache-dir "$TMP/kcache")

hub_stat() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$HUB_PID/status"; }
hub_fds() { ls "/proc/$HUB_PID/fd" | wc -l; }
hub_conns() { ss -Htn state established "( sport = :$PORT )" | wc -l; }
hub_downloads() { ls -l "/proc/$HUB_PID/fd" 2>/dev/null | grep -c "$TMP/big.iso" || true; }
snapshot() {
	printf '%s threads=%s rss=%sKiB fds=%s connections=%s downloads=%s\n' "$1" "$(hub_stat Threads)" \
		"$(hub_stat VmRSS)" "$(hub_fds)" "$(hub_conns)" "$(hub_downloads)"
}

say "InfraEnv and its ISO"
"${K[@]}" create namespace "$NS" >/dev/null
"${K[@]}" apply -f "$CRS/pullsecret.yaml" -f "$CRS/infraEnvLateBinding.yaml" >/dev/null
IE=$("${K[@]}" get -f "$CRS/infraEnvLateBinding.yaml" -o jsonpath='{.metadata.name}')
"${K[@]}" -n "$NS" wait --for=condition=ImageCreated "infraenv/$IE" --timeout=120s >/dev/null
ISO=$("${K[@]}" -n "$NS" get infraenv "$IE" -o jsonpath='{.status.isoDownloadURL}')
BASE=$(snapshot idle)
RSS0=$(hub_stat VmRSS)
BASE_RSS=$RSS0
say "$BASE"

say "phase 1: $IDLE_N idle keep-alive TLS connections"
python3 bench/idleconns.py 127.0.0.1 "$PORT" "$TMP/data/ca.crt" "$IDLE_N" 15 >"$TMP/idle.log" 2>&1 &
IDLE_PID=$!
end=$((SECONDS + 600))
until grep -q 'open=' "$TMP/idle.log"; do
	((SECONDS < end)) || die "idle connections not up after 600 s"
	kill -0 "$IDLE_PID" 2>/dev/null || die "idleconns.py failed: $(tail -3 "$TMP/idle.log")"
	sleep 1
done
IDLE_SNAP=$(snapshot idle-held)
IDLE_RSS=$(hub_stat VmRSS)
IDLE_OPEN=$(sed -n 's/.*open=\([0-9]*\).*/\1/p' "$TMP/idle.log" | head -1)
say "$IDLE_SNAP ($(head -1 "$TMP/idle.log"))"
wait "$IDLE_PID" || true
IDLE_PID=
RSS0=$(hub_stat VmRSS)

# A safety stop only: the trap ends both when the measurement is done.
TOTAL=$((RAMP + HOLD + 3600))
say "phase 2: $N hosts (ramp ${RAMP}s), $M downloads at ${RATE} B/s, hold ${HOLD}s"
"$SIM_BIN" simulate --iso "$ISO" --cacert "$TMP/data/ca.crt" --hosts "$N" --subnet 10.0.0.0/8 \
	--ramp-seconds "$RAMP" --duration "$TOTAL" --status-seconds 10 >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
if ((M > 0)); then
	python3 bench/slowdl.py "$ISO" "$TMP/data/ca.crt" "$M" "$RATE" "$TOTAL" >"$TMP/slowdl.log" 2>&1 &
	DL_PID=$!
fi

ramp_peak=0
# Ramp: sample until the connections are up (or the ramp time is over).
end=$((SECONDS + RAMP + 20))
while ((SECONDS < end)); do
	kill -0 "$HUB_PID" 2>/dev/null || die "the hub exited: $(tail -5 "$TMP/hub.log")"
	s=$(snapshot ramp)
	say "$s"
	c=$(hub_conns)
	((c > ramp_peak)) && ramp_peak=$c
	((c >= N + M * 95 / 100)) && break
	sleep 5
done

say "holding: $KRUNS timed kubectl get agents --chunk-size=500"
: >"$TMP/kubectl-wall.txt"
: >"$TMP/kubectl-req.txt"
: >"$TMP/probe.txt"
TOKEN=$(cat "$TMP/data/admin.token")
peak_threads=0 peak_rss=0 peak_fds=0 peak_conns=$ramp_peak peak_dl=0
gap=$(python3 -c "print(max(0.0, $HOLD / $KRUNS - 0.2))")
for i in $(seq 1 "$KRUNS"); do
	t0=$(date +%s%N)
	"${K[@]}" get agents -n "$NS" --chunk-size=500 -v=6 >"$TMP/kubectl.out" 2>"$TMP/kubectl.err" ||
		die "kubectl failed: $(tail -3 "$TMP/kubectl.err")"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >>"$TMP/kubectl-wall.txt"
	grep -o 'GET https://[^ ]*/agents?[^ ]* 200 OK in [0-9]* milliseconds' "$TMP/kubectl.err" |
		awk '{print $(NF-1)}' >>"$TMP/kubectl-req.txt" || true
	((i == 1)) && FIRST_REQS=$(wc -l <"$TMP/kubectl-req.txt")
	for _ in 1 2 3; do
		# Server time: from the TLS handshake done to the first byte.
		curl -sS -o /dev/null --cacert "$TMP/data/ca.crt" -H "Authorization: Bearer $TOKEN" \
			-w '%{time_appconnect} %{time_starttransfer}\n' "https://127.0.0.1:$PORT/api/v1/namespaces" |
			awk '{printf "%d\n", ($2 - $1) * 1000}' >>"$TMP/probe.txt"
	done
	th=$(hub_stat Threads) rss=$(hub_stat VmRSS) fd=$(hub_fds) cn=$(hub_conns) dl=$(hub_downloads)
	((th > peak_threads)) && peak_threads=$th
	((rss > peak_rss)) && peak_rss=$rss
	((fd > peak_fds)) && peak_fds=$fd
	((cn > peak_conns)) && peak_conns=$cn
	((dl > peak_dl)) && peak_dl=$dl
	sleep "$gap"
done
AGENTS=$(($(wc -l <"$TMP/kubectl.out") - 1))
LAST=$(snapshot held)
say "$LAST"
grep -E 'simulate: ' "$TMP/sim.log" | tail -1 >&2 || true

python3 - "$N" "$M" "$TMP/kubectl-wall.txt" "$TMP/kubectl-req.txt" "$peak_threads" "$peak_rss" \
	"$peak_fds" "$peak_conns" "$peak_dl" "$RSS0" "$AGENTS" "$TMP/probe.txt" "$IDLE_OPEN" "$BASE_RSS" "$IDLE_RSS" \
	"${FIRST_REQS:-0}" <<'PY'
import sys
n, m, wall_f, req_f, th, rss, fds, conns, dl, rss0, agents, probe_f, idle_open, base_rss, idle_rss, first = sys.argv[1:]
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")
wall = [int(x) for x in open(wall_f).read().split()]
req = [int(x) for x in open(req_f).read().split()]
per_conn = (int(rss) - int(rss0)) / max(1, int(conns))
probe = [int(x) for x in open(probe_f).read().split()]
print(f"fleetconn: phase 1: {idle_open} idle keep-alive TLS connections: hub RSS {int(base_rss) / 1024:.0f} -> "
      f"{int(idle_rss) / 1024:.0f} MiB = {(int(idle_rss) - int(base_rss)) / max(1, int(idle_open or 0)):.1f} KiB per connection")
print(f"fleetconn: hosts={n} downloads={m} held_connections={conns} downloads_in_flight={dl} "
      f"agents_listed={agents}")
print(f"fleetconn: hub peak threads={th} peak rss={int(rss) / 1024:.0f}MiB "
      f"({per_conn:.1f}KiB per connection over the idle hub, Agents included) peak open_fds={fds}")
print(f"fleetconn: kubectl get agents --chunk-size=500: command p50={pct(wall, 50)}ms "
      f"p99={pct(wall, 99)}ms (n={len(wall)}, kubectl start-up included); "
      f"request p50={pct(req, 50)}ms p99={pct(req, 99)}ms (n={len(req)}, server time as kubectl -v=6 reports)")
warm = req[int(first):]
if warm and int(first):
    print(f"fleetconn: the same requests after the first command (its list parsed the Agents the ramp had just "
          f"written; later ones find their Table rows prepared): p50={pct(warm, 50)}ms p99={pct(warm, 99)}ms "
          f"(n={len(warm)}); the first command's: max={max(req[:int(first)])}ms (n={int(first)})")
print(f"fleetconn: small request (GET /api/v1/namespaces, curl, handshake excluded): "
      f"p50={pct(probe, 50)}ms p99={pct(probe, 99)}ms (n={len(probe)})")
ok = int(conns) >= int(n) and int(th) < 64 and int(rss) < 1024 * 1024 and pct(req, 99) < 100
print("fleetconn: targets (connections held >= N, threads < 64, RSS < 1 GiB, request p99 < 100 ms): "
      + ("met" if ok else "NOT met"))
PY
