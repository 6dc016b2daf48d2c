#!/usr/bin/env bash
# bench/fleet.sh: N single-node clusters installed concurrently by one hub and
# one simulator.
#
# Starts a fresh agenthub on a temporary data directory, creates N
# ClusterDeployment + AgentClusterInstall (SNO) + InfraEnv (clusterRef,
# autoApprove) triples sharing one pull secret and one ClusterImageSet with a
# single `kubectl apply`, waits for the N discovery ISOs, then starts ONE
# `agenthub-agent simulate` with one host per ISO and times the fleet from
# the simulator's start (hosts register bound, are approved by the InfraEnv)
# until every ACI reads Completed=True.  Prints clusters completed per minute,
# the hub's peak RSS (VmHWM) and its CPU time.
#
# Usage: bash bench/fleet.sh [N]
# Knobs (environment):
#   FLEET_N=20                 clusters (the first argument wins)
#   FLEET_STAGE_SECONDS=1      simulator --stage-seconds
#   FLEET_TIMEOUT=1200         seconds before giving up
#   FLEET_MAX_POLL=1           simulator --max-poll-seconds, when it has the option
#   FLEET_KEEP=1               keep the temporary directory and logs
#   BUILD=build                the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
N=${1:-${FLEET_N:-20}}
STAGE=${FLEET_STAGE_SECONDS:-1}
TIMEOUT=${FLEET_TIMEOUT:-1200}
MAX_POLL=${FLEET_MAX_POLL:-1}
NS=fleet

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'fleet: %s\n' "$*" >&2; exit 1; }

[[ $N =~ ^[0-9]+$ && $N -ge 1 ]] || die "N must be a positive number, got '$N'"
command -v kubectl >/dev/null || die "kubectl not found"
command -v python3 >/dev/null || die "python3 not found"

[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
ninja -C "$BUILD" agenthub agenthub-agent >&2
HUB_BIN=$BUILD/agenthub
SIM_BIN=$BUILD/agenthub-agent

TMP=$(mktemp -d /tmp/agenthub-fleet.XXXXXX)
HUB_PID=
SIM_PID=
cleanup() {
	local rc=$?
	[[ -n $SIM_PID ]] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
	[[ -n $HUB_PID ]] && kill "$HUB_PID" 2>/dev/null && wait "$HUB_PID" 2>/dev/null
	if [[ $rc -eq 0 && -z ${FLEET_KEEP:-} ]]; then
		rm -rf "$TMP"
	else
		say "logs kept in $TMP"
	fi
}
trap cleanup EXIT

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$HUB_BIN" serve --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" >"$TMP/hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 1 300); do
	[[ -f $TMP/data/kubeconfig && -f $TMP/data/ca.crt ]] &&
		curl -fsS --cacert "$TMP/data/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$HUB_PID" 2>/dev/null || die "the hub exited: $(tail -5 "$TMP/hub.log")"
	sleep 0.1
done
K=(kubectl --kubeconfig "$TMP/data/kubeconfig" --cache-dir "$TMP/kcache")

say "creating $N single-node clusters"
python3 bench/fleet_objects.py "$NS" "$N" >"$TMP/objects.json"
"${K[@]}" apply -f "$TMP/objects.json" >/dev/null

say "waiting for $N discovery ISOs"
deadline=$((SECONDS + TIMEOUT))
while :; do
	"${K[@]}" -n "$NS" get infraenvs -o jsonpath='{range .items[*]}{.status.isoDownloadURL}{"\n"}{end}' |
		grep -c '^https' >"$TMP/isos.count" || true
	(($(cat "$TMP/isos.count") >= N)) && break
	((SECONDS < deadline)) || die "only $(cat "$TMP/isos.count") of $N ISOs after ${TIMEOUT}s"
	sleep 1
done
mapfile -t URLS < <("${K[@]}" -n "$NS" get infraenvs -o jsonpath='{range .items[*]}{.status.isoDownloadURL}{"\n"}{end}')

SIM_ARGS=(simulate --hosts "$N" --cacert "$TMP/data/ca.crt" --stage-seconds "$STAGE" --subnet 192.168.0.0/16)
HELP=$("$SIM_BIN" --help 2>&1 || true)
[[ $HELP == *--max-poll-seconds* ]] && SIM_ARGS+=(--max-poll-seconds "$MAX_POLL")
if [[ $HELP == *--iso-list* ]]; then
	printf '%s\n' "${URLS[@]}" >"$TMP/isos.txt"
	SIM_ARGS+=(--iso-list "$TMP/isos.txt")
else
	for u in "${URLS[@]}"; do SIM_ARGS+=(--iso "$u"); done
fi

hub_cpu_ticks() { awk '{print $14 + $15}' "/proc/$HUB_PID/stat"; }
hub_hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$HUB_PID/status"; }
TICKS=$(getconf CLK_TCK)
cpu0=$(hub_cpu_ticks)

say "simulating $N hosts; timing until every ACI is Completed"
"$SIM_BIN" "${SIM_ARGS[@]}" >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
t0=$(date +%s.%N)
done_n=0
while :; do
	done_n=$("${K[@]}" -n "$NS" get agentclusterinstalls \
		-o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Completed")]}{.status}{"\n"}{end}{end}' |
		grep -c '^True' || true)
	failed_n=$("${K[@]}" -n "$NS" get agentclusterinstalls \
		-o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Failed")]}{.status}{"\n"}{end}{end}' |
		grep -c '^True' || true)
	say "completed $done_n/$N failed $failed_n after $(python3 -c "print(round($(date +%s.%N) - $t0))")s"
	((done_n + failed_n >= N)) && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	((SECONDS < deadline + TIMEOUT)) || break
	sleep 2
done
t1=$(date +%s.%N)
cpu1=$(hub_cpu_ticks)
hwm=$(hub_hwm_kib)

python3 - "$N" "$done_n" "$t0" "$t1" "$cpu0" "$cpu1" "$TICKS" "$hwm" <<'EOF'
import sys
n, done, t0, t1, c0, c1, tick, hwm = sys.argv[1:]
wall = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / int(tick)
print(f"fleet: clusters={n} completed={done} wall={wall:.1f}s "
      f"clusters_per_minute={int(done) / wall * 60:.1f} "
      f"hub_peak_rss={int(hwm) / 1024:.1f}MiB hub_cpu={cpu:.1f}s ({cpu / wall * 100:.0f}% of one core)")
EOF
((done_n == N)) || die "$((N - done_n)) clusters did not complete"
