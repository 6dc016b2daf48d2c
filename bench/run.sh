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
#   BENCH_TARGETS="agenthub etcd"   also agenthub-pg (one replica on a
#                          PostgreSQL server this script starts from Debian's
#                          postgresql, fsync on) and agenthub-pg3 (three
#                          replicas on it, each loadgen run split in three
#                          parallel loadgens, one per replica: ops/s summed,
#                          latency percentiles the worst of the three)
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
wants_pg() { wants agenthub-pg || wants agenthub-pg3; }
wants_hub() { wants agenthub || wants_pg; }

for t in $TARGETS; do
	[[ $t == agenthub || $t == agenthub-pg || $t == agenthub-pg3 || $t == etcd ]] ||
		die "unknown target '$t' in BENCH_TARGETS (agenthub, agenthub-pg, agenthub-pg3, etcd)"
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
if wants_pg && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then missing+=(postgresql); fi
if wants_hub; then
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
if wants_hub; then
	[[ -f $BUILD/build.ninja ]] || meson setup "$BUILD" >&2
	ninja -C "$BUILD" >&2
	[[ -x $BUILD/agenthub ]] || die "$BUILD/agenthub was not built"
fi
# loadgen stays out of the Meson build so benchmarking never touches it.
cc -O2 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror bench/loadgen.c \
	-lcurl -lssl -lcrypto -lpthread -lm -o "$LOADGEN"

# ---- servers ----

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agenthub-bench.XXXXXX")
HUB_PIDS=()
PG_PID=
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
	local rc=$? p
	for p in "${HUB_PIDS[@]}"; do stop_pid "$p"; done
	stop_pid "$ETCD_PID"
	stop_pid "$PG_PID"
	if [[ ${BENCH_KEEP:-0} == 1 || $rc != 0 ]]; then
		say "data and logs kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_ports N: N distinct free loopback ports (held open together so they
# differ); a port can still be taken before the server binds it, which then
# shows up as a failed start.
free_ports() {
	python3 -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))
' "$1"
}
read -r ETCD_PORT ETCD_PEER_PORT PG_PORT < <(free_ports 3)

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

# PostgreSQL for agenthub-pg and agenthub-pg3: a fresh cluster on $WORK/pg,
# on loopback, fsync on (as durable as the SQLite hub and etcd); as the
# postgres user when run as root (the server refuses root).
declare -A URL CA TOKEN
if wants_pg; then
	PGBIN=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
	asdb=()
	if [[ $(id -u) == 0 ]]; then
		asdb=(runuser -u postgres --)
		mkdir -p "$WORK/pg" && chown postgres: "$WORK/pg" && chmod 755 "$WORK"
	fi
	"${asdb[@]}" "$PGBIN/initdb" -D "$WORK/pg/data" -A trust -U postgres -E UTF8 >"$WORK/initdb.log" 2>&1 ||
		die "initdb failed (log: $WORK/initdb.log)"
	say "starting PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT (data $WORK/pg)"
	"${asdb[@]}" "$PGBIN/postgres" -D "$WORK/pg/data" -p "$PG_PORT" -c listen_addresses=127.0.0.1 \
		-c unix_socket_directories="$WORK/pg" -c max_connections=500 >"$WORK/postgres.log" 2>&1 &
	PG_PID=$!
	wait_for postgres "$PG_PID" "$WORK/postgres.log" 60 "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"
	for db in pg pg3; do
		"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -c "CREATE DATABASE bench_$db" postgres
	done
fi

# start_hub NAME DIR [ARGS...]: an agenthub on a free port; fills URL, CA and
# TOKEN for NAME.
start_hub() {
	local name=$1 dir=$2 port
	shift 2
	port=$(free_ports 1)
	mkdir -p "$dir"
	say "starting $name on 127.0.0.1:$port (data $dir)"
	"$BUILD/agenthub" serve --data-dir "$dir" --listen "127.0.0.1:$port" "$@" \
		>"$WORK/$name.log" 2>&1 &
	HUB_PIDS+=($!)
	wait_for "$name" "$!" "$WORK/$name.log" 30 test -s "$dir/kubeconfig"
	CA[$name]=$dir/ca.crt
	TOKEN[$name]=$dir/admin.token
	[[ -s ${CA[$name]} && -s ${TOKEN[$name]} ]] || die "no CA or token found in $dir"
	URL[$name]=https://127.0.0.1:$port
	wait_for "$name" "$!" "$WORK/$name.log" 30 \
		curl -sf --cacert "${CA[$name]}" -H "Authorization: Bearer $(cat "${TOKEN[$name]}")" "${URL[$name]}/version"
}

if wants agenthub; then
	start_hub agenthub "$WORK/agenthub"
fi
if wants agenthub-pg; then
	start_hub agenthub-pg "$WORK/agenthub-pg" --store "postgres://postgres@127.0.0.1:$PG_PORT/bench_pg"
fi
if wants agenthub-pg3; then
	pg3=postgres://postgres@127.0.0.1:$PG_PORT/bench_pg3
	start_hub agenthub-pg3-0 "$WORK/pg3-0" --store "$pg3"
	for i in 1 2; do
		# Replicas share the first one's credentials (README: several replicas).
		mkdir -p "$WORK/pg3-$i"
		for f in ca.crt ca.key sa.key admin.token jwt-ec.key; do
			[[ -f $WORK/pg3-0/$f ]] && cp -p "$WORK/pg3-0/$f" "$WORK/pg3-$i/$f"
		done
		start_hub "agenthub-pg3-$i" "$WORK/pg3-$i" --store "$pg3"
	done
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

# loadgen TARGET OP CONC ARGS...: runs loadgen against TARGET (a hub's name
# or etcd), bounded in time; its line names TARGET.
loadgen() {
	local t=$1 op=$2 c=$3
	shift 3
	local args=(--op "$op" --conc "$c" --max-seconds "$STEP_TIMEOUT" --engine "$ENGINE")
	if [[ $t == etcd ]]; then
		args+=(--target etcd --url "$ETCD_URL")
	else
		args+=(--target agenthub --url "${URL[$t]}" --cacert "${CA[$t]}" --token-file "${TOKEN[$t]}")
	fi
	timeout $((STEP_TIMEOUT + 60)) "$LOADGEN" "${args[@]}" "$@" | sed "s/^target=agenthub /target=$t /"
}

# loadgen3 OP CONC --namespace NS --n N --base B [--keys K]: one run split
# over the three agenthub-pg3 replicas (CONC/3 clients and N/3 objects each,
# in parallel); one combined line: ops/s summed, p50/p99 the worst.
loadgen3() {
	local op=$1 c=$2 ns=$4 n=$6 base=$8 keys=${10:-} i pids=() rc=0
	local c3=$(((c + 2) / 3)) n3=$((n / 3))
	for i in 0 1 2; do
		local extra=()
		[[ -n $keys ]] && extra=(--keys "$n3")
		loadgen "agenthub-pg3-$i" "$op" "$c3" --namespace "$ns" --n "$n3" \
			--base $((base + i * n3)) "${extra[@]}" >"$WORK/lg3-$i.out" &
		pids+=($!)
	done
	for i in 0 1 2; do wait "${pids[$i]}" || rc=1; done
	awk -v conc="$c" '
	function field(line, name,   i, k, kv) {
		k = split(line, kv, " ")
		for (i = 1; i <= k; i++)
			if (index(kv[i], name "=") == 1)
				return substr(kv[i], length(name) + 2)
		return ""
	}
	/^target=/ { m++; op = field($0, "op"); n += field($0, "n"); ops += field($0, "ops/s")
		if (field($0, "p50_ms") + 0 > p50) p50 = field($0, "p50_ms") + 0
		if (field($0, "p99_ms") + 0 > p99) p99 = field($0, "p99_ms") + 0
		err += field($0, "errors"); if ($0 ~ / FAILED/) bad = 1 }
	END { if (m != 3) exit 1
		printf "target=agenthub-pg3 op=%s conc=%s n=%d ops/s=%.0f p50_ms=%.2f p99_ms=%.2f errors=%d replicas=3%s\n",
			op, conc, n, ops, p50, p99, err, bad ? " FAILED" : "" }' "$WORK"/lg3-[012].out || return 1
	return $rc
}

# lg TARGET OP CONC ARGS...: one measured loadgen run; its line goes to $OUT.
lg() {
	local t=$1 op=$2 c=$3 line run=loadgen
	[[ $t == agenthub-pg3 ]] && { run=loadgen3; shift; }
	if line=$($run "$@"); then
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
	lt=$t
	[[ $t == agenthub-pg3 ]] && lt=agenthub-pg3-0   # the list step: one replica
	line=$(loadgen "$lt" create 16 --namespace "$LIST_NS" --n "$LIST_N") || FAILED=1
	echo "setup: ${line:-loadgen could not run}" >&2
	if line=$(loadgen "$lt" list 1 --namespace "$LIST_NS" --n "$LIST_REPEAT" --expect-items "$LIST_N"); then
		echo "${line/target=$lt /target=$t }" | tee -a "$OUT"
	else
		FAILED=1
		echo "${line:-target=$t op=list conc=1 n=0 FAILED (loadgen could not run, see stderr)}" | tee -a "$OUT"
	fi
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
	t = field($0, "target"); k = field($0, "op") " " field($0, "conc"); present[t] = 1
	if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
	ops[t, k] = field($0, "ops/s"); p50[t, k] = field($0, "p50_ms"); p99[t, k] = field($0, "p99_ms")
	if ($0 ~ / FAILED/) bad[t, k] = 1
}
END {
	na = split("agenthub agenthub-pg agenthub-pg3", targets, " ")
	for (ti = 1; ti <= na; ti++) {
	a = targets[ti]
	if (!(a in present)) continue
	printf "\n%s vs etcd\n", a
	printf "%-7s %5s | %12s %12s %6s | %9s %9s %6s | %9s %9s %6s\n", "op", "conc",
		"agenthub/s", "etcd/s", "ratio", "ah p50ms", "etcd p50", "ratio", "ah p99ms", "etcd p99", "ratio"
	for (i = 1; i <= nk; i++) {
		k = order[i]; split(k, kc, " ")
		e = "etcd"
		note = ""
		if (bad[a, k] || bad[e, k]) note = "  FAILED RUN, DO NOT USE"
		else if (kc[1] == "patch" && ((e, k) in ops)) note = "  (etcd: range+put, 2 calls)"
		printf "%-7s %5s | %12s %12s %6s | %9s %9s %6s | %9s %9s %6s%s\n", kc[1], kc[2],
			ops[a, k], ops[e, k], ratio(ops[a, k], ops[e, k]),
			p50[a, k], p50[e, k], ratio(p50[a, k], p50[e, k]),
			p99[a, k], p99[e, k], ratio(p99[a, k], p99[e, k]), note
	}
	}
	print "ratio = agenthub / etcd: above 1 for ops/s means agenthub is faster; below 1 for latency means agenthub is faster."
}' "$OUT" | tee -a "$OUT"
echo "results: $OUT"

if ((FAILED)); then
	printf '\n!!! SOME RUNS FAILED (errors or unfinished); see the lines marked FAILED above !!!\n\n' >&2
	exit 1
fi
