#!/usr/bin/env bash
# bench/discovery.sh: the discovery flow at scale, on this machine.
#
# Starts its own agenthub (temporary data directory, --host-disconnect-timeout
# large enough that no host disconnects during the run) and measures:
#   (a) registrations: BENCH_HOSTS_FIRST (1,000) then BENCH_HOSTS (10,000)
#       simulated hosts booted from an InfraEnv's ISO (agenthub-agent
#       simulate); the time until all N Agents exist and until all N are
#       known-unbound, seen through a Kubernetes watch on the Agents;
#   (b) the hub's steady-state CPU (% of one core, /proc/PID/stat) over
#       BENCH_CPU_WINDOW seconds with BENCH_HOSTS hosts polling at the
#       upstream 60 s interval;
#   (c) the hub's peak RSS (VmHWM) and RSS per host;
#   (d) ISO streaming: the hub's discovery ISO download against nginx serving
#       a static file of the same size over TLS with the same certificate,
#       same client (curl) and concurrency.
# Prints each figure next to its target and stops everything it started
# (trap on EXIT).  See bench/README.md.
#
# Knobs (environment):
#   BENCH_HOSTS=10000        hosts of the big run (also the steady-state fleet)
#   BENCH_HOSTS_FIRST=1000   hosts of the first run (0 skips it)
#   BENCH_CPU_WINDOW=60      seconds of the CPU window
#   BENCH_SETTLE=5           seconds between "every host polled twice" and the window
#   BENCH_INFLIGHT=256       simulator: requests in flight at once
#   BENCH_RAMP=0             simulator: seconds over which the hosts boot
#   BENCH_REG_TIMEOUT=900    seconds a registration run may take
#   BENCH_ISO_MB=256         size of the base ISO for the streaming test
#   BENCH_ISO_CONC=4         parallel downloads
#   BENCH_ISO_REPEAT=2       downloads per client (one curl, kept-alive)
#   BENCH_ISO_ROUNDS=2       alternating hub/nginx rounds; the best of each counts
#   BENCH_STEPS="hosts iso"  which parts to run
#   BENCH_OUT=$BUILD/bench-discovery.txt
#   BENCH_KEEP=1             keep the temporary directory and logs
#   BUILD=build              Meson build directory (built with ninja unless
#   AGENTHUB=... AGENTHUB_AGENT=...  binaries are given explicitly)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
HOSTS=${BENCH_HOSTS:-10000}
HOSTS_FIRST=${BENCH_HOSTS_FIRST:-1000}
CPU_WINDOW=${BENCH_CPU_WINDOW:-60}
SETTLE=${BENCH_SETTLE:-5}
INFLIGHT=${BENCH_INFLIGHT:-256}
RAMP=${BENCH_RAMP:-0}
REG_TIMEOUT=${BENCH_REG_TIMEOUT:-900}
ISO_MB=${BENCH_ISO_MB:-256}
ISO_CONC=${BENCH_ISO_CONC:-4}
ISO_REPEAT=${BENCH_ISO_REPEAT:-2}
ISO_ROUNDS=${BENCH_ISO_ROUNDS:-2}
STEPS=${BENCH_STEPS:-"hosts iso"}
OUT=${BENCH_OUT:-$BUILD/bench-discovery.txt}
PULL_SECRET='{"auths":{"cloud.openshift.com":{"auth":"c2VjcmV0OnRva2Vu","email":"bench@example.com"}}}'

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
wants() { [[ " $STEPS " == *" $1 "* ]]; }
num() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer, not '$2'"; }

num BENCH_HOSTS "$HOSTS"
num BENCH_HOSTS_FIRST "$HOSTS_FIRST"
num BENCH_CPU_WINDOW "$CPU_WINDOW"
num BENCH_SETTLE "$SETTLE"
num BENCH_INFLIGHT "$INFLIGHT"
num BENCH_RAMP "$RAMP"
num BENCH_REG_TIMEOUT "$REG_TIMEOUT"
num BENCH_ISO_MB "$ISO_MB"
num BENCH_ISO_CONC "$ISO_CONC"
num BENCH_ISO_REPEAT "$ISO_REPEAT"
num BENCH_ISO_ROUNDS "$ISO_ROUNDS"
((HOSTS > 0)) || die "BENCH_HOSTS must be positive"
((HOSTS <= 60000 && HOSTS_FIRST <= 60000)) || die "at most 60000 hosts per run (one /16 each)"
((CPU_WINDOW > 0 && ISO_MB > 0 && ISO_CONC > 0 && ISO_REPEAT > 0 && ISO_ROUNDS > 0)) ||
	die "BENCH_CPU_WINDOW and the BENCH_ISO_* knobs must be positive"
((CPU_WINDOW >= 60)) || say "BENCH_CPU_WINDOW=$CPU_WINDOW is shorter than the 60 s poll interval: the CPU figure covers only part of a cycle"
for s in $STEPS; do
	[[ $s == hosts || $s == iso ]] || die "unknown step '$s' in BENCH_STEPS (hosts, iso)"
done

# ---- dependencies: Debian packages, installed only when missing ----

apt_install() {
	local sudo=
	[[ $(id -u) == 0 ]] || sudo=sudo
	say "installing $*"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2 ||
		{ $sudo apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2; }
}

missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
command -v kubectl >/dev/null || missing+=(kubernetes-client)
command -v timeout >/dev/null || missing+=(coreutils)
if wants iso; then
	[[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || missing+=(nginx)
	command -v xorriso >/dev/null || missing+=(xorriso)
fi
if [[ -z ${AGENTHUB:-} || -z ${AGENTHUB_AGENT:-} ]]; then
	command -v meson >/dev/null || missing+=(meson)
	command -v ninja >/dev/null || missing+=(ninja-build)
fi
if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# ---- build ----

if [[ -z ${AGENTHUB:-} || -z ${AGENTHUB_AGENT:-} ]]; then
	[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
	ninja -C "$BUILD" agenthub agenthub-agent testiso >&2
fi
AGENTHUB=${AGENTHUB:-$BUILD/agenthub}
AGENTHUB_AGENT=${AGENTHUB_AGENT:-$BUILD/agenthub-agent}
[[ -x $AGENTHUB ]] || die "$AGENTHUB was not built"
[[ -x $AGENTHUB_AGENT ]] || die "$AGENTHUB_AGENT was not built"
BASE_ISO=${BENCH_BASE_ISO:-$(dirname "$AGENTHUB")/testiso/discovery-test.iso}
[[ -s $BASE_ISO ]] || die "no base ISO at $BASE_ISO (built by the Meson target testiso)"

# ---- processes and clean-up ----

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agenthub-discovery-bench.XXXXXX")
AH_PID=
NGINX_PID=
SIM_PIDS=()
WATCH_PID=

stop_pid() {
	local pid=$1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	local p
	stop_pid "$WATCH_PID"
	for p in "${SIM_PIDS[@]}"; do stop_pid "$p"; done
	stop_pid "$NGINX_PID"
	stop_pid "$AH_PID"
	if [[ ${BENCH_KEEP:-0} == 1 || $rc != 0 ]]; then
		say "data and logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_ports() { # N: distinct free loopback ports (held open together so they differ)
	python3 -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}

# wait_for NAME PID LOG SECONDS COMMAND...: polls COMMAND until it succeeds.
wait_for() {
	local name=$1 pid=$2 log=$3 secs=$4
	shift 4
	for _ in $(seq $((secs * 5))); do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$log" >&2
			die "$name exited during start-up (log: $log)"
		fi
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.2
	done
	tail -n 30 "$log" >&2
	die "$name did not become ready within ${secs}s (log: $log)"
}

now() { date +%s.%N; }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
fdiv() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", (b > 0 ? a / b : 0) }'; }
kb_of() { awk -v k="$2" '$1 == k ":" { print $2 }' "/proc/$1/status"; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; } # utime + stime (no field has spaces: comm is "agenthub")

result() { echo "$*" | tee -a "$OUT"; }

# sim_counter NAME: a counter from the simulator's last status line.
sim_counter() {
	local v
	v=$(grep 'simulate: t=' "$sim_log" | tail -n 1 | grep -o " $1=[0-9]*" | cut -d= -f2) || true
	echo "${v:-0}"
}
# sim_status_now NAME: asks the simulator for a status line (SIGUSR1), then reads NAME from it.
sim_status_now() {
	local n
	n=$(grep -c 'simulate: t=' "$sim_log" || true)
	kill -USR1 "$sim_pid"
	for _ in $(seq 50); do
		(($(grep -c 'simulate: t=' "$sim_log" || true) > n)) && break
		sleep 0.1
	done
	sim_counter "$1"
}

read -r AH_PORT NGINX_PORT < <(free_ports 2)

# ---- the ISOs ----

# The discovery InfraEnvs boot the small test ISO (newest version, the
# default); the streaming InfraEnv asks for a big copy of it by version.
HUB_DIR=$WORK/hub
mkdir -p "$HUB_DIR"
if wants iso; then
	say "building a ${ISO_MB} MiB base ISO (the test ISO with a large rootfs.img)"
	truncate -s "${ISO_MB}M" "$WORK/rootfs.img"
	xorriso -indev "$BASE_ISO" -outdev "$WORK/big.iso" \
		-map "$WORK/rootfs.img" /images/pxeboot/rootfs.img >"$WORK/xorriso.log" 2>&1 ||
		{ tail -n 20 "$WORK/xorriso.log" >&2; die "xorriso failed"; }
	rm -f "$WORK/rootfs.img"
fi
python3 - "$WORK/os-images.json" "$(realpath "$BASE_ISO")" "$WORK/big.iso" <<'EOF'
import json, sys
out, small, big = sys.argv[1:4]
imgs = [{"openshift_version": "4.19", "cpu_architecture": "x86_64", "url": small,
         "version": "419.96.202510010000-0"}]
imgs.append({"openshift_version": "4.18", "cpu_architecture": "x86_64", "url": big,
             "version": "418.94.202510010000-0"})
json.dump(imgs, open(out, "w"))
EOF

# ---- the hub ----

say "starting agenthub on 127.0.0.1:$AH_PORT (data $HUB_DIR)"
"$AGENTHUB" serve --data-dir "$HUB_DIR" --listen "127.0.0.1:$AH_PORT" \
	--host-disconnect-timeout 6h --os-images "$WORK/os-images.json" >"$WORK/agenthub.log" 2>&1 &
AH_PID=$!
AH_URL=https://127.0.0.1:$AH_PORT
wait_for agenthub "$AH_PID" "$WORK/agenthub.log" 60 test -s "$HUB_DIR/kubeconfig"
wait_for agenthub "$AH_PID" "$WORK/agenthub.log" 60 \
	curl -sf --cacert "$HUB_DIR/ca.crt" "$AH_URL/readyz"
K() { kubectl --kubeconfig "$HUB_DIR/kubeconfig" --cache-dir "$WORK/kubectl-cache" --request-timeout=120s "$@"; }

# infraenv NS NAME [OS_VERSION]: creates the namespace, pull secret and
# InfraEnv, waits for its image and prints the ISO URL.
infraenv() {
	local ns=$1 name=$2 ver=${3:-} verline=
	[[ -n $ver ]] && verline="  osImageVersion: \"$ver\""
	K create namespace "$ns" >/dev/null
	K -n "$ns" create secret generic pull-secret --type=kubernetes.io/dockerconfigjson \
		--from-literal=.dockerconfigjson="$PULL_SECRET" >/dev/null
	K apply -f - >/dev/null <<EOF
apiVersion: agent-install.openshift.io/v1beta1
kind: InfraEnv
metadata:
  name: $name
  namespace: $ns
spec:
  pullSecretRef:
    name: pull-secret
$verline
EOF
	K -n "$ns" wait --for=condition=ImageCreated "infraenv/$name" --timeout=120s >/dev/null ||
		die "InfraEnv $ns/$name has no image: $(K -n "$ns" get infraenv "$name" -o jsonpath='{.status.conditions}')"
	K -n "$ns" get infraenv "$name" -o jsonpath='{.status.isoDownloadURL}'
}

mkdir -p "$(dirname "$OUT")"
{
	echo "# agenthub discovery bench $(date -u +%Y-%m-%dT%H:%M:%SZ) rev=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "# host: $(nproc) cpus, $(uname -sr), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# BENCH_HOSTS=$HOSTS BENCH_HOSTS_FIRST=$HOSTS_FIRST BENCH_CPU_WINDOW=$CPU_WINDOW BENCH_INFLIGHT=$INFLIGHT BENCH_RAMP=$RAMP BENCH_ISO_MB=$ISO_MB BENCH_ISO_CONC=$ISO_CONC BENCH_STEPS=\"$STEPS\""
} | tee "$OUT"

BASE_RSS=$(kb_of "$AH_PID" VmRSS)
TOTAL_HOSTS=0
REG_SECONDS_BIG=
KNOWN_SECONDS_BIG=
CPU_PCT=
CPU_NOMINAL=
CPU_JUDGED=
ms_per_get=
FAILED=0

# ---- (a) registrations ----

# register_run N SEED SUBNET_INDEX: one InfraEnv, one simulator of N hosts;
# leaves the simulator running (its PID last in SIM_PIDS).
register_run() {
	local n=$1 seed=$2 idx=$3 ns="bench-run$3-$1-hosts" url t0 exist_at state_at line
	say "registration run: $n hosts (namespace $ns)"
	url=$(infraenv "$ns" discovery)
	python3 "$ROOT/bench/agentwatch.py" --server "$AH_URL" --token-file "$HUB_DIR/admin.token" \
		--cacert "$HUB_DIR/ca.crt" --namespace "$ns" --expect "$n" --state known-unbound \
		--timeout "$REG_TIMEOUT" >"$WORK/watch-$idx-$n.out" 2>"$WORK/watch-$idx-$n.log" &
	WATCH_PID=$!
	for _ in $(seq 300); do
		grep -q '^ready' "$WORK/watch-$idx-$n.out" 2>/dev/null && break
		kill -0 "$WATCH_PID" 2>/dev/null || { cat "$WORK/watch-$idx-$n.log" >&2; die "the Agent watch failed"; }
		sleep 0.1
	done
	grep -q '^ready' "$WORK/watch-$idx-$n.out" || die "the Agent watch did not start"
	# The simulator downloads the ISO first (as a booting host does); the
	# clock starts when it begins to boot hosts (its first line).
	"$AGENTHUB_AGENT" simulate --iso "$url" --cacert "$HUB_DIR/ca.crt" --hosts "$n" --seed "$seed" \
		--subnet "10.$((100 + idx)).0.0/16" --max-inflight "$INFLIGHT" --ramp-seconds "$RAMP" \
		--status-seconds 10 >"$WORK/sim-$idx-$n.log" 2>&1 &
	SIM_PIDS+=($!)
	t0=
	for _ in $(seq 6000); do
		if grep -q ' hosts against ' "$WORK/sim-$idx-$n.log" 2>/dev/null; then t0=$(now); break; fi
		kill -0 "${SIM_PIDS[-1]}" 2>/dev/null || { cat "$WORK/sim-$idx-$n.log" >&2; die "the simulator failed to start"; }
		sleep 0.05
	done
	[[ -n $t0 ]] || die "the simulator did not start within 300 s"
	if ! wait "$WATCH_PID"; then
		WATCH_PID=
		tail -n 3 "$WORK/watch-$idx-$n.log" >&2
		tail -n 3 "$WORK/sim-$idx-$n.log" >&2
		result "hosts=$n FAILED: not all Agents known-unbound within ${REG_TIMEOUT}s"
		FAILED=1
		return 0
	fi
	WATCH_PID=
	exist_at=$(sed -n 's/^exist_at=//p' "$WORK/watch-$idx-$n.out")
	state_at=$(sed -n 's/^state_at=//p' "$WORK/watch-$idx-$n.out")
	REG_S=$(fsub "$exist_at" "$t0")
	KNOWN_S=$(fsub "$state_at" "$t0")
	TOTAL_HOSTS=$((TOTAL_HOSTS + n))
	line=$(grep -m1 'hosts registered' "$WORK/sim-$idx-$n.log" | sed 's/^simulate: //' || true)
	result "hosts=$n agents_exist_s=$REG_S registrations_per_s=$(fdiv "$n" "$REG_S") known_unbound_s=$KNOWN_S known_per_s=$(fdiv "$n" "$KNOWN_S") hub_rss_kb=$(kb_of "$AH_PID" VmRSS) (simulator: ${line:-?})"
}

if wants hosts; then
	if ((HOSTS_FIRST > 0)); then
		register_run "$HOSTS_FIRST" 1001 0
		# Only the big fleet polls during the steady-state window.
		stop_pid "${SIM_PIDS[-1]}"
	fi
	register_run "$HOSTS" 1002 1
	REG_SECONDS_BIG=${REG_S:-}
	KNOWN_SECONDS_BIG=${KNOWN_S:-}

	# ---- (b) steady-state CPU ----
	# Steady state = every host back in its 60 s cycle: its first round
	# (register, GET, replies) is over and it has polled again at least
	# once (the simulator's instructions counter reaches 2N).  Until then
	# the hub may still be working off the registration burst.
	if ((FAILED == 0)); then
		sim_pid=${SIM_PIDS[-1]}
		sim_log=$WORK/sim-1-$HOSTS.log
		say "steady state: waiting for all $HOSTS hosts to poll a second time"
		sim_gets=0
		for _ in $(seq "$REG_TIMEOUT"); do
			kill -USR1 "$sim_pid"
			sleep 1
			sim_gets=$(sim_counter instructions)
			((sim_gets >= 2 * HOSTS)) && break
		done
		((sim_gets >= 2 * HOSTS)) || { result "steady_state FAILED: the hosts did not poll twice within ${REG_TIMEOUT}s"; FAILED=1; }
	fi
	if ((FAILED == 0)); then
		say "steady state: settling ${SETTLE}s, then measuring hub CPU over ${CPU_WINDOW}s ($HOSTS hosts polling at the hub's interval)"
		sleep "$SETTLE"
		g0=$(sim_status_now instructions)
		c0=$(cpu_ticks "$AH_PID")
		t0=$(now)
		sleep "$CPU_WINDOW"
		c1=$(cpu_ticks "$AH_PID")
		t1=$(now)
		g1=$(sim_status_now instructions)
		hz=$(getconf CLK_TCK)
		secs=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.2f", a - b }')
		CPU_PCT=$(awk -v c="$((c1 - c0))" -v hz="$hz" -v t="$secs" 'BEGIN { printf "%.1f", 100 * c / hz / t }')
		gets=$((g1 - g0))
		ms_per_get=$(awk -v c="$((c1 - c0))" -v hz="$hz" -v g="$gets" 'BEGIN { printf "%.2f", (g > 0 ? 1000 * c / hz / g : 0) }')
		# If the hub served fewer polls than the hosts' nominal rate (N per
		# 60 s: it could not keep up, e.g. on a loaded machine), the CPU it
		# would need at that rate is its cost per poll times N/60.
		CPU_NOMINAL=$(awk -v ms="$ms_per_get" -v n="$HOSTS" 'BEGIN { printf "%.1f", ms * n / 60 / 10 }')
		CPU_JUDGED=$(awk -v a="$CPU_PCT" -v b="$CPU_NOMINAL" 'BEGIN { print (a > b ? a : b) }')
		result "steady_state hosts=$HOSTS window_s=$secs hub_cpu_pct_of_one_core=$CPU_PCT polls_in_window=$gets polls_per_s=$(fdiv "$gets" "$secs") nominal_polls_per_s=$(fdiv "$HOSTS" 60) hub_cpu_ms_per_poll=$ms_per_get hub_cpu_pct_at_nominal_rate=$CPU_NOMINAL load_avg=\"$(cut -d' ' -f1-3 /proc/loadavg)\""
		result "  simulator at the end of the window: $(grep 'simulate: t=' "$sim_log" | tail -n 1 | sed 's/^simulate: //')"
	fi
	stop_pid "${SIM_PIDS[-1]}"

	# ---- (c) memory ----
	HWM=$(kb_of "$AH_PID" VmHWM)
	PER_HOST=$(awk -v h="$HWM" -v b="$BASE_RSS" -v n="$TOTAL_HOSTS" 'BEGIN { printf "%.1f", (n > 0 ? (h - b) / n : 0) }')
	result "memory hub_rss_baseline_kb=$BASE_RSS hub_vmhwm_kb=$HWM agents=$TOTAL_HOSTS rss_per_host_kb=$PER_HOST ((VmHWM - baseline) / all Agents registered)"
fi

# ---- (d) ISO streaming: hub vs nginx ----

ISO_RATIO=
if wants iso; then
	url=$(infraenv bench-iso streaming 4.18)
	size=$(stat -c %s "$WORK/big.iso")
	got=$(curl -sS --cacert "$HUB_DIR/ca.crt" -o /dev/null -w '%{http_code} %{size_download}' "$url")
	[[ $got == "200 $size" ]] || die "hub ISO download gave '$got', expected '200 $size'"

	NG=$WORK/nginx
	mkdir -p "$NG/www" "$NG/tmp"
	cp "$WORK/big.iso" "$NG/www/same-size.iso"
	# nginx drops its workers to 'nobody' when started as root: let them read.
	chmod 755 "$WORK" "$NG" "$NG/www"
	chmod 644 "$NG/www/same-size.iso"
	# Same certificate and key as the hub, so both do the same TLS.
	cat >"$NG/nginx.conf" <<EOF
worker_processes auto;
pid $NG/nginx.pid;
error_log $NG/error.log;
daemon off;
events { worker_connections 1024; }
http {
    access_log off;
    default_type application/octet-stream;
    sendfile on;
    client_body_temp_path $NG/tmp/body;
    proxy_temp_path $NG/tmp/proxy;
    fastcgi_temp_path $NG/tmp/fastcgi;
    uwsgi_temp_path $NG/tmp/uwsgi;
    scgi_temp_path $NG/tmp/scgi;
    server {
        listen 127.0.0.1:$NGINX_PORT ssl;
        ssl_certificate $HUB_DIR/serving.crt;
        ssl_certificate_key $HUB_DIR/serving.key;
        root $NG/www;
    }
}
EOF
	say "starting nginx $("$NGINX" -v 2>&1 | sed 's/.*nginx\///') on 127.0.0.1:$NGINX_PORT"
	"$NGINX" -p "$NG" -c "$NG/nginx.conf" -e "$NG/error.log" >"$NG/stdout.log" 2>&1 &
	NGINX_PID=$!
	NG_URL=https://127.0.0.1:$NGINX_PORT/same-size.iso
	wait_for nginx "$NGINX_PID" "$NG/error.log" 30 curl -sf --cacert "$HUB_DIR/ca.crt" -r 0-0 -o /dev/null "$NG_URL"

	# stream NAME URL: ISO_CONC curl processes, each downloading the file
	# ISO_REPEAT times over one kept-alive connection; prints MB/s.
	stream() {
		local name=$1 u=$2 i j args=() t0 t1 bytes pids=()
		for ((j = 0; j < ISO_REPEAT; j++)); do args+=(-o /dev/null "$u"); done
		t0=$(now)
		for ((i = 0; i < ISO_CONC; i++)); do
			curl -sS --fail --cacert "$HUB_DIR/ca.crt" -w '%{size_download}\n' "${args[@]}" \
				>"$WORK/stream-$name-$i.out" &
			pids+=($!)
		done
		for p in "${pids[@]}"; do wait "$p" || die "$name: a download failed"; done
		t1=$(now)
		bytes=$(cat "$WORK"/stream-"$name"-*.out | awk '{ s += $1 } END { printf "%.0f", s }')
		[[ $bytes == $((size * ISO_CONC * ISO_REPEAT)) ]] || die "$name: got $bytes bytes, expected $((size * ISO_CONC * ISO_REPEAT))"
		awk -v b="$bytes" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", b / 1048576 / (t1 - t0) }'
	}
	best_hub=0
	best_ng=0
	for ((r = 1; r <= ISO_ROUNDS; r++)); do
		h=$(stream hub "$url")
		n=$(stream nginx "$NG_URL")
		result "iso round=$r size_mb=$((size / 1048576)) conc=$ISO_CONC downloads=$((ISO_CONC * ISO_REPEAT)) hub_mb_s=$h nginx_mb_s=$n"
		((h > best_hub)) && best_hub=$h
		((n > best_ng)) && best_ng=$n
	done
	ISO_RATIO=$(awk -v a="$best_hub" -v b="$best_ng" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
	result "iso best hub_mb_s=$best_hub nginx_mb_s=$best_ng ratio=$ISO_RATIO (client: curl, same TLS certificate)"
	stop_pid "$NGINX_PID"
fi

# ---- targets ----

verdict() { # VALUE OP LIMIT
	[[ -z $1 ]] && { echo "not measured"; return; }
	awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN {
		ok = (op == "<") ? (v < l) : (v >= l); print ok ? "MET" : "NOT MET" }'
}
{
	echo
	echo "target                                   measured           verdict"
	if [[ -n $REG_SECONDS_BIG ]]; then
		if ((HOSTS == 10000)); then
			printf '%-40s %-18s %s\n' "10,000 hosts registered in < 60 s" "${REG_SECONDS_BIG} s" "$(verdict "$REG_SECONDS_BIG" '<' 60)"
		else
			est=$(awk -v s="$REG_SECONDS_BIG" -v n="$HOSTS" 'BEGIN { printf "%.0f", s * 10000 / n }')
			printf '%-40s %-18s %s\n' "10,000 hosts registered in < 60 s" "$HOSTS in ${REG_SECONDS_BIG} s" "scaled run (~${est} s for 10,000 at this rate; run with BENCH_HOSTS=10000)"
		fi
		printf '%-40s %-18s %s\n' "  (all known-unbound)" "${KNOWN_SECONDS_BIG} s" ""
	fi
	if [[ -n $CPU_PCT && $ms_per_get == 0.00 ]]; then
		printf '%-40s %-18s %s\n' "hub CPU < 10% of a core (10,000 hosts)" "${CPU_PCT} %" "not judged: no polls in the ${CPU_WINDOW} s window (use >= 60 s)"
	elif [[ -n $CPU_PCT ]] && ((HOSTS == 10000)); then
		printf '%-40s %-18s %s\n' "hub CPU < 10% of a core (10,000 hosts)" "${CPU_JUDGED} %" "$(verdict "$CPU_JUDGED" '<' 10) (measured ${CPU_PCT} %, at the nominal 167 polls/s ${CPU_NOMINAL} %)"
	elif [[ -n $CPU_PCT ]]; then
		est=$(awk -v ms="$ms_per_get" 'BEGIN { printf "%.1f", ms * 10000 / 60 / 10 }')
		printf '%-40s %-18s %s\n' "hub CPU < 10% of a core (10,000 hosts)" "${CPU_JUDGED} % at $HOSTS" "scaled run (~${est} % for 10,000 at ${ms_per_get} ms per poll)"
	fi
	if [[ -n ${PER_HOST:-} ]]; then
		note=
		((HOSTS < 10000)) && note=" (at $TOTAL_HOSTS Agents: the fixed per-connection memory weighs more in small runs)"
		printf '%-40s %-18s %s\n' "RSS < 100 KB per host" "${PER_HOST} KB" "$(verdict "$PER_HOST" '<' 100)$note"
	fi
	[[ -n $ISO_RATIO ]] && printf '%-40s %-18s %s\n' "ISO streaming >= 0.9x nginx" "${ISO_RATIO}x" "$(verdict "$ISO_RATIO" '>=' 0.9)"
	echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cpus)"
} | tee -a "$OUT"
echo "results: $OUT" >&2
if ((FAILED)); then
	printf '\n!!! A RUN FAILED; see the lines marked FAILED above !!!\n\n' >&2
	exit 1
fi
