#!/usr/bin/env bash
# Run every test against one build directory: the cmocka unit tests through
# Meson, then the end-to-end suite (pytest driving the real daemon with the
# real kubectl).  Ends with the line "N passed, N failed".
# `run-tests.sh BUILD e2e` runs only the end-to-end suite (make test-pg, with
# AGENTHUB_STORE=postgres).
set -uo pipefail
build=${1:-build}
only=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
logdir=$build/test-logs
mkdir -p "$logdir"
# e2e.log, or e2e-postgres.log for the PostgreSQL run.
e2elog=e2e${AGENTHUB_STORE:+-$AGENTHUB_STORE}

unit_pass=0 unit_fail=0
if [ "$only" != e2e ]; then
meson test -C "$build" --print-errorlogs > "$logdir/unit.log" 2>&1
unit_rc=$?
cat "$logdir/unit.log" | grep -E '^ *[0-9]+/[0-9]+ ' || true
unit_pass=$(grep -E '^Ok: ' "$logdir/unit.log" | awk '{print $2}')
unit_fail=$(grep -E '^(Fail|Timeout|Unexpected Pass): ' "$logdir/unit.log" | awk '{s+=$NF} END {print s+0}')
if [ -z "$unit_pass" ]; then
	echo "unit tests did not run:"; tail -30 "$logdir/unit.log"
	unit_pass=0; unit_fail=$((unit_fail + 1))
fi
[ "$unit_rc" -ne 0 ] && [ "$unit_fail" -eq 0 ] && unit_fail=1
if [ "$unit_fail" -ne 0 ]; then
	sed -n '/^==* .* ==*$/,$p' "$logdir/unit.log" | tail -80
fi
fi

# Progress as the tests run: one line per test file (its passes and
# failures, and how far the whole run is), each failing test as it fails;
# then the end of the log (the failures' details and the summary).  The whole
# output, one line per test, is in $logdir/$e2elog.log.
echo "end-to-end tests${AGENTHUB_STORE:+ (store: $AGENTHUB_STORE)} (about 12 minutes with two workers on an idle 2-core machine; log: $logdir/$e2elog.log)"
# Two pytest workers (pytest-xdist), each file whole on one worker (its
# module fixtures once): the tests wait on timers and on the daemon far
# more than they compute, so two run in about half the time on 2 cores.
# E2E_JOBS=1 runs them one at a time.
jobs=${E2E_JOBS:-2}
xdist=()
if [ "$jobs" -gt 1 ] && /usr/bin/python3 -c "import xdist" 2>/dev/null; then
	xdist=(-n "$jobs" --dist loadfile)
fi
AGENTHUB_BUILD=$(cd "$build" && pwd) /usr/bin/python3 -u -m pytest -v -p no:cacheprovider "${xdist[@]}" \
	--junitxml="$logdir/$e2elog.xml" tests/e2e 2>&1 | tee "$logdir/$e2elog.log" | awk '
	# Lines: "tests/e2e/F::T STATUS [ n%]" (one worker) or
	# "[gwN] [ n%] STATUS tests/e2e/F::T" (several).
	/(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)/ {
		id = ""; st = ""
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^tests\/e2e\/[^ ]*::/) id = $i
			if ($i ~ /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)$/) st = $i
		}
		if (id == "" || st == "") next
		split(id, a, "::")
		f = a[1]; sub(/^tests\/e2e\//, "", f)
		if (!(f in seen)) { seen[f] = 1; order[++nf] = f }
		if (st == "PASSED" || st == "XFAIL") pass[f]++
		else if (st == "SKIPPED") skip[f]++
		else { fail[f]++; print "    " st " " id; fflush() }
		done++
		if (match($0, /\[ *[0-9]+%\]/)) pct = substr($0, RSTART, RLENGTH)
		if (done % 50 == 0) { printf "  %d tests done %s\n", done, pct; fflush() }
	}
	END {
		for (i = 1; i <= nf; i++)
			printf "  %-34s %3d passed, %d failed, %d skipped\n", order[i], pass[order[i]],
			       fail[order[i]], skip[order[i]]
	}'
if grep -qE '^=+ (FAILURES|ERRORS) =+$' "$logdir/$e2elog.log"; then
	sed -n -E '/^=+ (FAILURES|ERRORS) =+$/,$p' "$logdir/$e2elog.log" | tail -80
else
	tail -1 "$logdir/$e2elog.log"
fi
e2e=$(/usr/bin/python3 - "$logdir/$e2elog.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    root = ET.parse(sys.argv[1]).getroot()
except Exception:
    print("0 1"); sys.exit()
suites = [root] if root.tag == 'testsuite' else list(root)
t = sum(int(s.get('tests', 0)) for s in suites)
f = sum(int(s.get('failures', 0)) + int(s.get('errors', 0)) for s in suites)
sk = sum(int(s.get('skipped', 0)) for s in suites)
print(t - f - sk, f if t else 1)
PY
)
e2e_pass=${e2e% *}
e2e_fail=${e2e#* }
echo "unit: $unit_pass passed, $unit_fail failed; e2e: $e2e_pass passed, $e2e_fail failed"
echo "$((unit_pass + e2e_pass)) passed, $((unit_fail + e2e_fail)) failed"
[ $((unit_fail + e2e_fail)) -eq 0 ]
