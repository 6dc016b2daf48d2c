#!/usr/bin/env bash
# bench/run.sh: compare agenthub's Kubernetes API with etcd 3.4 on this machine.
#
# Builds agenthub and bench/loadgen, starts a fresh agenthub and a fresh
# single-member etcd on loopback (each on its own temporary data directory),
# runs create/get/patch at several concurrencies plus a list of 10,000
# Agents against each, prints one line per run and a table of
# agenthub/etcd ratios, and stops both servers on exit.  See bench/README.md.
#
# Knobs (environment):
#   BENCH_N=20000          operations per create/get/patch run
#   BENCH_CONC="1 16 64"   concurrencies
#   BENCH_LIST_N=10000     objects in the list step
#   BENCH_LIST_REPEAT=10   timed lists
#   BENCH_TARGETS="agenthub etcd"
#   BENCH_STEP_TIMEOUT=900 seconds any single loadgen run may take
#   BENCH_ENGINE=raw       loadgen engine, passed as --engine to every loadgen
#                          run: raw, threads or multi (see bench/README.md)
#   BENCH_OUT=build/bench-results.txt
#   BENCH_KEEP=1           keep the temporary data directories and logs
#   BUILD=build            the Meson build directory
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

BUILD=${BUILD:-build}
N=${BENCH_N:-20000}
CONCS=${BENCH_CONC:-"1 16 64"}
LIST_N=${BENCH_LIST_N:-10000}
LIST_REPEAT=${BENCH_LIST_REPEAT:-10}
TARGETS=${BENCH_TARGETS:-"agenthub etcd"}
STEP_TIMEOUT=${BENCH_STEP_TIMEOUT:-900}
ENGINE=${BENCH_ENGINE:-raw}
OUT=${BENCH_OUT:-$BUILD/bench-results.txt}
LOADGEN=$BUILD/loadgen
NS=bench
LIST_NS=benchlist

say() { printf '== %s\n' "$*" >&2; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
wants() { [[ " $TARGETS " == *" $1 "* ]]; }

for t in $TARGETS; do
	[[ $t == agenthub || $t == etcd ]] || die "unknown target '$t' in BENCH_TARGETS"
done
[[ $ENGINE == threads || $ENGINE == multi || $ENGINE == raw ]] ||
	die "unknown BENCH_ENGINE '$ENGINE' (want threads, multi or raw)"

# ---- dependencies: only Debian packages, installed only when missing ----

apt_install() {
	local sudo=
	[[ $(id -u) == 0 ]] || sudo=sudo
	say "installing $*"
	$sudo apt-get install -y "$@" >&2 ||
		{ $sudo apt-get update >&2 && $sudo apt-get install -y "$@" >&2; }
}

missing=()
command -v cc >/dev/null || missing+=(gcc)
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
command -v timeout >/dev/null || missing+=(coreutils)
if command -v cc >/dev/null && ! echo '#include <curl/curl.h>' | cc -E - >/dev/null 2>&1; then
	missing+=(libcurl4-openssl-dev)
fi
if command -v cc >/dev/null && ! echo '#include <openssl/ssl.h>' | cc -E - >/dev/null 2>&1; then
	missing+=(libssl-dev)
fi
if wants etcd && ! command -v etcd >/dev/null; then missing+=(etcd-server); fi
if wants agenthub; then
	command -v meson >/dev/null || missing+=(meson)
	command -v ninja >/dev/null || missing+=(ninja-build)
fi
if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
if [[ " ${missing[*]-} " == *" libcurl4-openssl-dev "* ]] && ! echo '#include <curl/curl.h>' | cc -E - >/dev/null 2>&1; then
	die "libcurl headers still missing after installing libcurl4-openssl-dev"
fi
if [[ " ${missing[*]-} " == *" libssl-dev "* ]] && ! echo '#include <openssl/ssl.h>' | cc -E - >/dev/null 2>&1; then
	die "OpenSSL headers still missing after installing libssl-dev"
fi

# ---- build ----

mkdir -p "$BUILD"
if wants agenthub; then
	[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
	ninja -C "$BUILD" >&2
	[[ -x $BUILD/agenthub ]] || die "$BUILD/agenthub was not built"
fi
# loadgen stays out of the Meson build so benchmarking never touches it.
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror bench/loadgen.c \
	-lcurl -lssl -lcrypto -lpthread -lm -o "$LOADGEN"

# ---- servers ----

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agenthub-bench.XXXXXX")
AH_PID=
ETCD_PID=
FAILED=0

stop_pid() {
	local pid=$1
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$?
	stop_pid "$AH_PID"
	stop_pid "$ETCD_PID"
	if [[ ${BENCH_KEEP:-0} == 1 || $rc != 0 ]]; then
		say "data and logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Asks the kernel for distinct free loopback ports (held open together so
# they differ); a port can still be taken before the server binds it, which
# then shows up as a failed start.
read -r AH_PORT ETCD_PORT ETCD_PEER_PORT < <(python3 -c '
import socket
s = [socket.socket() for _ in range(3)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))
')

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

if wants agenthub; then
	AH_DIR=$WORK/agenthub
	mkdir -p "$AH_DIR"
	say "starting agenthub on 127.0.0.1:$AH_PORT (data $AH_DIR)"
	"$BUILD/agenthub" serve --data-dir "$AH_DIR" --listen "127.0.0.1:$AH_PORT" \
		>"$WORK/agenthub.log" 2>&1 &
	AH_PID=$!
	wait_for agenthub "$AH_PID" "$WORK/agenthub.log" 30 test -s "$AH_DIR/kubeconfig"
	# The daemon writes ca.crt and admin.token next to the kubeconfig; the
	# kubeconfig is the fallback so a layout change does not break the bench.
	AH_CA=$AH_DIR/ca.crt
	if [[ ! -s $AH_CA ]]; then
		AH_CA=$WORK/ca.crt
		grep -m1 'certificate-authority-data:' "$AH_DIR/kubeconfig" | awk '{print $2}' | base64 -d >"$AH_CA"
	fi
	AH_TOKEN=$AH_DIR/admin.token
	if [[ ! -s $AH_TOKEN ]]; then
		AH_TOKEN=$WORK/token
		(umask 077 && grep -m1 '^ *token:' "$AH_DIR/kubeconfig" | awk '{print $2}' | tr -d '"' >"$AH_TOKEN")
	fi
	[[ -s $AH_CA && -s $AH_TOKEN ]] || die "no CA or token found in $AH_DIR"
	AH_URL=https://127.0.0.1:$AH_PORT
	wait_for agenthub "$AH_PID" "$WORK/agenthub.log" 30 \
		curl -sf --cacert "$AH_CA" -H "Authorization: Bearer $(cat "$AH_TOKEN")" "$AH_URL/version"
fi

if wants etcd; then
	ETCD_URL=http://127.0.0.1:$ETCD_PORT
	say "starting etcd $(etcd --version | awk '/etcd Version/ {print $3}') on $ETCD_URL (data $WORK/etcd)"
	# Defaults otherwise: one member, fsync on every commit, so it is as
	# durable as agenthub's synchronous SQLite commits.
	etcd --name bench --data-dir "$WORK/etcd" \
		--listen-client-urls "$ETCD_URL" --advertise-client-urls "$ETCD_URL" \
		--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
		--initial-cluster "bench=http://127.0.0.1:$ETCD_PEER_PORT" \
		>"$WORK/etcd.log" 2>&1 &
	ETCD_PID=$!
	wait_for etcd "$ETCD_PID" "$WORK/etcd.log" 30 curl -sf "$ETCD_URL/health"
fi

# ---- load ----

mkdir -p "$(dirname "$OUT")"
{
	echo "# agenthub bench $(date -u +%Y-%m-%dT%H:%M:%SZ) rev=$(git rev-parse --short HEAD 2>/dev/null || echo none)"
	echo "# host: $(nproc) cpus, $(uname -sr), etcd $(etcd --version 2>/dev/null | awk '/etcd Version/ {print $3}')"
	echo "# BENCH_N=$N BENCH_CONC=\"$CONCS\" BENCH_LIST_N=$LIST_N BENCH_LIST_REPEAT=$LIST_REPEAT BENCH_ENGINE=$ENGINE"
} | tee "$OUT"

# loadgen TARGET OP CONC ARGS...: runs loadgen against TARGET, bounded in time.
loadgen() {
	local t=$1 op=$2 c=$3
	shift 3
	local args=(--target "$t" --op "$op" --conc "$c" --max-seconds "$STEP_TIMEOUT" --engine "$ENGINE")
	if [[ $t == agenthub ]]; then
		args+=(--url "$AH_URL" --cacert "$AH_CA" --token-file "$AH_TOKEN")
	else
		args+=(--url "$ETCD_URL")
	fi
	timeout $((STEP_TIMEOUT + 60)) "$LOADGEN" "${args[@]}" "$@"
}

# lg TARGET OP CONC ARGS...: one measured loadgen run; its line goes to $OUT.
lg() {
	local t=$1 op=$2 c=$3 line
	if line=$(loadgen "$@"); then
		echo "$line" | tee -a "$OUT"
	else
		FAILED=1
		# loadgen prints its line (marked FAILED) even when operations
		# failed; no line at all means it could not start the run.
		echo "${line:-target=$t op=$op conc=$c n=0 FAILED (loadgen could not run, see stderr)}" | tee -a "$OUT"
	fi
}

for t in $TARGETS; do
	base=0
	for c in $CONCS; do
		say "$t conc=$c: create/get/patch of $N Agents a-$base..a-$((base + N - 1))"
		lg "$t" create "$c" --namespace "$NS" --n "$N" --base "$base"
		lg "$t" get "$c" --namespace "$NS" --n "$N" --base "$base" --keys "$N"
		lg "$t" patch "$c" --namespace "$NS" --n "$N" --base "$base" --keys "$N"
		base=$((base + N))
	done
	say "$t: creating $LIST_N Agents in namespace $LIST_NS for the list step (not in the table)"
	# The objects for the list live in their own namespace so each list
	# returns exactly LIST_N items, whatever ran before.
	line=$(loadgen "$t" create 16 --namespace "$LIST_NS" --n "$LIST_N") || FAILED=1
	echo "setup: ${line:-loadgen could not run}" >&2
	lg "$t" list 1 --namespace "$LIST_NS" --n "$LIST_REPEAT" --expect-items "$LIST_N"
done

# ---- comparison ----

echo
awk '
function field(line, name,   i, n, kv) {
	n = split(line, kv, " ")
	for (i = 1; i <= n; i++)
		if (index(kv[i], name "=") == 1)
			return substr(kv[i], length(name) + 2)
	return ""
}
function ratio(a, b) { return (b + 0 > 0 && a != "") ? sprintf("%.2f", a / b) : "-" }
/^target=/ {
	t = field($0, "target"); k = field($0, "op") " " field($0, "conc")
	if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
	ops[t, k] = field($0, "ops/s"); p50[t, k] = field($0, "p50_ms"); p99[t, k] = field($0, "p99_ms")
	if ($0 ~ / FAILED/) bad[t, k] = 1
}
END {
	printf "%-7s %5s | %12s %12s %6s | %9s %9s %6s | %9s %9s %6s\n", "op", "conc",
		"agenthub/s", "etcd/s", "ratio", "ah p50ms", "etcd p50", "ratio", "ah p99ms", "etcd p99", "ratio"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, kc, " ")
		a = "agenthub"; e = "etcd"
		note = ""
		if (bad[a, k] || bad[e, k]) note = "  FAILED RUN, DO NOT USE"
		else if (kc[1] == "patch" && ((e, k) in ops)) note = "  (etcd: range+put, 2 calls)"
		printf "%-7s %5s | %12s %12s %6s | %9s %9s %6s | %9s %9s %6s%s\n", kc[1], kc[2],
			ops[a, k], ops[e, k], ratio(ops[a, k], ops[e, k]),
			p50[a, k], p50[e, k], ratio(p50[a, k], p50[e, k]),
			p99[a, k], p99[e, k], ratio(p99[a, k], p99[e, k]), note
	}
	print "ratio = agenthub / etcd: above 1 for ops/s means agenthub is faster; below 1 for latency means agenthub is faster."
}' "$OUT" | tee -a "$OUT"
echo "results: $OUT"

if ((FAILED)); then
	printf '\n!!! SOME RUNS FAILED (errors or unfinished); see the lines marked FAILED above !!!\n\n' >&2
	exit 1
fi
