#!/usr/bin/env bash
# bench/capi.sh: N single-node clusters through Cluster API, on one hub that runs the
# whole stack (CAPI core, CAPM3, the BareMetalHost controller with its Ironic part,
# the CAPOA providers, assisted-service).
#
# Starts a fresh agenthub and ONE `agenthub-agent simulate --bmc` with N machines
# (powered off), applies their N BMC Secrets + BareMetalHosts and waits until all are
# `available` (registered with their BMC), then applies, with one `kubectl apply`, N
# clusters shaped as upstream CAPOA's examples/sno-example.yaml (bench/capi_objects.py:
# pull secret, Cluster, Metal3Cluster, OpenshiftAssistedControlPlane,
# Metal3MachineTemplate, Metal3DataTemplate each) and times from there until every
# Cluster is Provisioned, every OpenshiftAssistedControlPlane Available and every
# Machine Ready (its host chosen by the Metal3Machine, provisioned with the qcow2 image
# and the bootstrap ignition through the BMC, registered, installed).  Prints the wall
# time, the BMC requests, the hub's CPU time and peak RSS.
#
# Usage: bash bench/capi.sh [N]
# Knobs (environment):
#   CAPI_N=10                  clusters/BMHs (the first argument wins)
#   CAPI_STAGE_SECONDS=1       simulator --stage-seconds
#   CAPI_MAX_POLL=1            simulator --max-poll-seconds
#   CAPI_BMC_IN_FLIGHT=16      hub --bmc-max-in-flight
#   CAPI_VERSION=4.19.0        the clusters' distributionVersion
#   CAPI_TIMEOUT=1200          seconds before giving up
#   CAPI_KEEP=1                keep the temporary directory and logs
#   BUILD=build                the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
N=${1:-${CAPI_N:-10}}
STAGE=${CAPI_STAGE_SECONDS:-1}
MAX_POLL=${CAPI_MAX_POLL:-1}
INFLIGHT=${CAPI_BMC_IN_FLIGHT:-16}
TIMEOUT=${CAPI_TIMEOUT:-1200}
export CAPI_VERSION=${CAPI_VERSION:-4.19.0}
NS=capi

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'capi: %s\n' "$*" >&2; exit 1; }

[[ $N =~ ^[0-9]+$ && $N -ge 1 ]] || die "N must be a positive number, got '$N'"
command -v kubectl >/dev/null || die "kubectl not found"

[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
ninja -C "$BUILD" agenthub agenthub-agent >&2
HUB_BIN=$BUILD/agenthub
SIM_BIN=$BUILD/agenthub-agent

TMP=$(mktemp -d /tmp/agenthub-capi.XXXXXX)
HUB_PID=
SIM_PID=
cleanup() {
	local rc=$?
	[[ -n $SIM_PID ]] && kill "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null
	[[ -n $HUB_PID ]] && kill "$HUB_PID" 2>/dev/null && wait "$HUB_PID" 2>/dev/null
	if [[ $rc -eq 0 && -z ${CAPI_KEEP:-} ]]; then
		rm -rf "$TMP"
	else
		say "logs kept in $TMP"
	fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
"$HUB_BIN" serve --data-dir "$TMP/data" --listen "127.0.0.1:$PORT" --bmc-max-in-flight "$INFLIGHT" \
	>"$TMP/hub.log" 2>&1 &
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
	--bmh-namespace "$NS" --cacert "$TMP/data/ca.crt" --stage-seconds "$STAGE" \
	--max-poll-seconds "$MAX_POLL" --subnet 192.168.0.0/16 >"$TMP/sim.log" 2>&1 &
SIM_PID=$!
for _ in $(seq 1 300); do
	grep -q "Redfish service on" "$TMP/sim.log" 2>/dev/null && [[ -s $TMP/bmh.yaml ]] && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	sleep 0.1
done

count() { # kind jsonpath regex: how many items print a line matching regex
	"${K[@]}" -n "$NS" get "$1" -o jsonpath="$2" | grep -c "$3" || true
}
COND='{range .items[*]}{range .status.conditions[?(@.type=="%s")]}{.status}{"\\n"}{end}{end}'
# shellcheck disable=SC2059
MACHINE_READY=$(printf "$COND" Ready)
# shellcheck disable=SC2059
CP_AVAILABLE=$(printf "$COND" Available)
PHASES='{range .items[*]}{.status.phase}{"\n"}{end}'
STATES='{range .items[*]}{.status.provisioning.state}{"\n"}{end}'

"${K[@]}" create namespace "$NS" >/dev/null
say "applying $N BareMetalHosts; waiting until all are available"
t_reg=$(date +%s.%N)
"${K[@]}" apply -f "$TMP/bmh.yaml" >/dev/null
deadline=$((SECONDS + TIMEOUT))
while :; do
	avail=$(count baremetalhosts "$STATES" '^available$')
	((avail >= N)) && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	((SECONDS < deadline)) || die "only $avail/$N BareMetalHosts available"
	sleep 1
done
reg=$(python3 -c "print(round($(date +%s.%N) - $t_reg, 1))")
say "$N BareMetalHosts available after ${reg}s"

python3 bench/capi_objects.py "$NS" "$N" >"$TMP/clusters.json"
hub_cpu_ticks() { awk '{print $14 + $15}' "/proc/$HUB_PID/stat"; }
hub_hwm_kib() { awk '/^VmHWM:/ {print $2}' "/proc/$HUB_PID/status"; }
TICKS=$(getconf CLK_TCK)
cpu0=$(hub_cpu_ticks)

say "applying $N clusters; timing until every Cluster is Provisioned and every Machine Ready"
t0=$(date +%s.%N)
"${K[@]}" apply -f "$TMP/clusters.json" >/dev/null
deadline=$((SECONDS + TIMEOUT))
ready=0 avail=0 prov=0
while :; do
	prov=$(count clusters.cluster.x-k8s.io "$PHASES" '^Provisioned$')
	hosts=$(count baremetalhosts "$STATES" '^provisioned$')
	avail=$(count openshiftassistedcontrolplanes.controlplane.cluster.x-k8s.io "$CP_AVAILABLE" '^True$')
	ready=$(count machines.cluster.x-k8s.io "$MACHINE_READY" '^True$')
	say "hosts provisioned $hosts/$N, clusters provisioned $prov/$N, control planes available $avail/$N," \
		"machines ready $ready/$N after $(python3 -c "print(round($(date +%s.%N) - $t0))")s"
	((ready >= N && avail >= N && prov >= N)) && break
	kill -0 "$SIM_PID" 2>/dev/null || die "the simulator exited: $(tail -5 "$TMP/sim.log")"
	kill -0 "$HUB_PID" 2>/dev/null || die "the hub exited: $(tail -5 "$TMP/hub.log")"
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

python3 - "$N" "$ready" "$prov" "$avail" "$t0" "$t1" "$cpu0" "$cpu1" "$TICKS" "$hwm" "$calls" "$reg" <<'PY'
import sys
n, ready, prov, avail, t0, t1, c0, c1, tick, hwm, calls, reg = sys.argv[1:]
wall = float(t1) - float(t0)
cpu = (int(c1) - int(c0)) / int(tick)
print(f"capi: clusters={n} provisioned={prov} control_planes_available={avail} machines_ready={ready} "
      f"wall={wall:.1f}s (bmhs_available_before={float(reg):.1f}s) bmc_requests={int(float(calls))} "
      f"hub_peak_rss={int(hwm) / 1024:.1f}MiB hub_cpu={cpu:.1f}s ({cpu / wall * 100:.0f}% of one core)")
PY
((ready >= N && avail >= N && prov >= N)) || die "not all $N clusters provisioned"
