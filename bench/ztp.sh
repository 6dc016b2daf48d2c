#!/usr/bin/env bash
# bench/ztp.sh: zero-touch provisioning at scale: N BareMetalHosts booted by the
# hub through the simulator's Redfish BMC, paired by BMAC, bound to N
# single-node clusters through their cluster-reference annotation, installed.
#
# The live-ISO flow (the hub runs with --converged-flow=false: BMAC sets each
# BMH's image to the InfraEnv's ISO).  Starts a fresh agenthub and ONE
# `agenthub-agent simulate --bmc` with N machines (powered off), creates the N
# ClusterDeployment + AgentClusterInstall pairs and a pool InfraEnv, then
# applies the N BMC Secrets + BareMetalHosts with one `kubectl apply` and times
# from there until every ACI reads Completed=True.  Prints the wall time, the
# BMC requests (the hub's agenthub_bmc_requests_total and the most in flight),
# the hub's CPU time and peak RSS.
#
# Usage: bash bench/ztp.sh [N]
# Knobs (environment):
#   ZTP_N=10                   clusters/BMHs (the first argument wins)
#   ZTP_STAGE_SECONDS=1        simulator --stage-seconds
#   ZTP_MAX_POLL=1             simulator --max-poll-seconds
#   ZTP_BMC_IN_FLIGHT=16       hub --bmc-max-in-flight
#   ZTP_TIMEOUT=1200           seconds before giving up
#   ZTP_KEEP=1                 keep the temporary directory and logs
#   BUILD=build                the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
N=${1:-${ZTP_N:-10}}
STAGE=${ZTP_STAGE_SECONDS:-1}
MAX_POLL=${ZTP_MAX_POLL:-1}
INFLIGHT=${ZTP_BMC_IN_FLIGHT:-16}
TIMEOUT=${ZTP_TIMEOUT:-1200}
NS=ztp

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'ztp: %s\n' "$*" >&2; exit 1; }

[[ $N =~ ^[0-9]+$ && $N -ge 1 ]] || die "N must be a positive number, got '$N'"
command -v kubectl >/dev/null || die "kubectl not found"

[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
ninja -C "$BUILD" agenthub agenthub-agent >&2
HUB_BIN=$BUILD/agenthub
SIM_BIN=$BUILD/agenthub-agent

TMP=$(mktemp -d /tmp/agenthub-ztp.XXXXXX)
HUB_PID=
SIM_PID=
cleanup() {
	local rc=$?
	[[ -n $SIM_PID ]] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
	[[ -n $HUB_PID ]] && kill "$HUB_PID" 2>/dev/null && wait "$HUB_PID" 2>/dev/null
	if [[ $rc -eq 0 && -z ${ZTP_KEEP:-} ]]; then
		rm -rf "$TMP"
	else
		say "logs kept in $TMP"
	fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
"$HUB_BIN" serve --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" --bmc-max-in-flight "$INFLIGHT" \
	--converged-flow=false >"$TMP/hub.log" 2>&1 &
HUB_PID=$!
for _ in $(seq 1 300); do
	[[ -f $TMP/data/kubeconfig && -f $TMP/data/ca.crt ]] &&
		curl -fsS --cacert "$TMP/data/ca.crt" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
	kill -0 "$HUB_PID" 2>/dev/null || die "the hub exited: $(tail -5 "$TMP/hub.log")"
	sleep 0.1
done
K=(kubectl --kubeconfig "$TMP/data/kubeconfig" --cache-dir "$TMP/kcache")

say "starting the BMC with $N machines"
"$SIM_BIN" simulate --bmc "127.0.0.1:$(free_port)" --hosts "$N" --bmh-manifests "$TMP/bmh.yaml" \
	--bmh-namespace "$NS" --bmh-infraenv pool --cacert "$TMP/data/ca.crt" --stage-seconds "$STAGE" \
	--max-poll-seconds "$MAX_POLL" --subnet 192.168.0.0/16 >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 300); do
	grep -q "Redfish service on" "$TMP/sim.log" 2>/dev/null && [[ -s $TMP/bmh.yaml ]] && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	sleep 0.1
done

say "creating $N single-node clusters and the pool InfraEnv"
python3 bench/ztp_objects.py "$NS" "$N" "$TMP/bmh.yaml" >"$TMP/all.json"
python3 - "$TMP/all.json" "$TMP/clusters.json" "$TMP/bmhs.json" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
bmc = [o for o in items if o["kind"] in ("BareMetalHost",) or
       (o["kind"] == "Secret" and o["metadata"]["name"].endswith("-bmc-secret"))]
rest = [o for o in items if o not in bmc]
json.dump({"apiVersion": "v1", "kind": "List", "items": rest}, open(sys.argv[2], "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": bmc}, open(sys.argv[3], "w"))
PY
"${K[@]}" apply -f "$TMP/clusters.json" >/dev/null
"${K[@]}" -n "$NS" wait --for=condition=ImageCreated infraenv/pool --timeout=120s >/dev/null

hub_cpu_ticks() { awk '{print $14 + $15}' "/proc/$HUB_PID/stat"; }
hub_hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$HUB_PID/status"; }
TICKS=$(getconf CLK_TCK)
cpu0=$(hub_cpu_ticks)

say "applying $N BareMetalHosts; timing until every ACI is Completed"
t0=$(date +%s.%N)
"${K[@]}" apply -f "$TMP/bmhs.json" >/dev/null
deadline=$((SECONDS + TIMEOUT))
done_n=0
while :; do
	done_n=$("${K[@]}" -n "$NS" get agentclusterinstalls \
		-o jsonpath='{range .items[*]}{range .status.conditions[?(@.type=="Completed")]}{.status}{"\n"}{end}{end}' |
		grep -c '^True' || true)
	prov_n=$("${K[@]}" -n "$NS" get baremetalhosts -o jsonpath='{range .items[*]}{.status.provisioning.state}{"\n"}{end}' |
		grep -c '^provisioned$' || true)
	say "provisioned $prov_n/$N completed $done_n/$N after $(python3 -c "print(round($(date +%s.%N) - $t0))")s"
	((done_n >= N)) && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	((SECONDS < deadline)) || break
	sleep 2
done
t1=$(date +%s.%N)
cpu1=$(hub_cpu_ticks)
hwm=$(hub_hwm_kib)
TOKEN=$(cat "$TMP/data/admin.token")
curl -fsS --cacert "$TMP/data/ca.crt" -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT/metrics" \
	>"$TMP/metrics.txt" || true
calls=$(awk '/^agenthub_bmc_requests_total/ {s += $NF} END {print s + 0}' "$TMP/metrics.txt")
maxin=$(awk '/^agenthub_bmc_requests_in_flight_max/ {print $NF}' "$TMP/metrics.txt")

python3 - "$N" "$done_n" "$t0" "$t1" "$cpu0" "$cpu1" "$TICKS" "$hwm" "$calls" "${maxin:-0}" <<'PY'
import sys
n, done, t0, t1, c0, c1, tick, hwm, calls, maxin = sys.argv[1:]
wall = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / int(tick)
print(f"ztp: bmhs={n} installed={done} wall={wall:.1f}s bmc_requests={int(float(calls))} "
      f"bmc_max_in_flight={int(float(maxin))} hub_peak_rss={int(hwm) / 1024:.1f}MiB "
      f"hub_cpu={cpu:.1f}s ({cpu / wall * 100:.0f}% of one core)")
PY
((done_n == N)) || die "$((N - done_n)) clusters did not complete"
