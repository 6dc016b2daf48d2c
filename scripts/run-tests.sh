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
echo "end-to-end tests${AGENTHUB_STORE:+ (store: $AGENTHUB_STORE)} (about 10 minutes on an idle 2-core machine; log: $logdir/$e2elog.log)"
AGENTHUB_BUILD=$(cd "$build" && pwd) /usr/bin/python3 -u -m pytest -v -p no:cacheprovider \
	--junitxml="$logdir/$e2elog.xml" tests/e2e 2>&1 | tee "$logdir/$e2elog.log" | awk '
	function flush() {
		if (file != "")
			printf "  %-32s %3d passed, %d failed, %d skipped  %s\n", file, pass, fail, skip, pct
		fflush()
	}
	/^tests\/e2e\/[^ ]*::.* (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)/ {
		split($1, a, "::")
		sub(/^tests\/e2e\//, "", a[1])
		if (a[1] != file) { flush(); file = a[1]; pass = fail = skip = 0 }
		if (match($0, /\[ *[0-9]+%\]$/)) pct = substr($0, RSTART)
		if ($0 ~ / PASSED/ || $0 ~ / XFAIL/) pass++
		else if ($0 ~ / SKIPPED/) skip++
		else { fail++; print "    FAILED " $1; fflush() }
	}
	END { flush() }'
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
