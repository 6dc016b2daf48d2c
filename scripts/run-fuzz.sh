#!/usr/bin/env bash
# Build the libFuzzer targets (fuzz/, meson option `fuzz`) with clang in a
# build directory of their own, and run each for SECONDS (default 60) from
# its seed corpus (fuzz/corpus/<target>/).  A crash, a leak, an invariant
# that breaks (abort), a run over -rss_limit_mb or a single allocation over
# -malloc_limit_mb is a finding: the input is kept as
# BUILD/artifacts/<target>-crash-... and the target counts as failed.
# Ends with the line "N passed, N failed" (one per target).
#
#   scripts/run-fuzz.sh [SECONDS] [TARGET...]
#   FUZZ_BUILD=build-fuzz  FUZZ_RSS_MB=2048  FUZZ_MALLOC_MB=512
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
secs=${1:-60}
shift || true
build=${FUZZ_BUILD:-build-fuzz}
rss=${FUZZ_RSS_MB:-2048}
mal=${FUZZ_MALLOC_MB:-512}

if [ ! -f "$build/build.ninja" ]; then
	setup_log=$(mktemp)
	CC=clang meson setup "$build" -Dfuzz=true -Dwerror=false -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false > "$setup_log" 2>&1 ||
		{ cat "$setup_log"; rm -f "$setup_log"; echo "fuzz build setup failed"; echo "0 passed, 1 failed"; exit 1; }
	rm -f "$setup_log"
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	mapfile -t targets < <(sed -n "s/^ *\['\(fuzz-[a-z0-9-]*\)',.*/\1/p" fuzz/meson.build)
fi
# Only the fuzz executables (and what they link), not the whole project.
ninja -C "$build" "${targets[@]/#/fuzz/}" > "$build/fuzz-build.log" 2>&1 ||
	{ tail -40 "$build/fuzz-build.log"; echo "fuzz build failed"; echo "0 passed, ${#targets[@]} failed"; exit 1; }

mkdir -p "$build/artifacts" "$build/corpus"
# The ISO reader's seed: the head of the project's own test ISO (it holds
# every directory), made here rather than kept in the repository.
if [[ " ${targets[*]} " == *" fuzz-iso "* ]] && [ ! -s "$build/seed/fuzz-iso/head.iso" ] &&
	command -v xorriso > /dev/null; then
	mkdir -p "$build/seed/fuzz-iso"
	bash scripts/make-test-iso.sh "$build/seed/testiso" > /dev/null 2>&1 &&
		head -c 81920 "$build/seed/testiso/discovery-test.iso" > "$build/seed/fuzz-iso/head.iso"
fi
pass=0 fail=0
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in "${targets[@]}"; do
	work="$build/corpus/$t"
	mkdir -p "$work"
	seeds=()
	[ -d "fuzz/corpus/$t" ] && seeds=("fuzz/corpus/$t")
	[ -d "$build/seed/$t" ] && seeds+=("$build/seed/$t")
	log="$build/$t.log"
	"$build/fuzz/$t" -max_total_time="$secs" -rss_limit_mb="$rss" -malloc_limit_mb="$mal" -timeout=20 \
		-max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
		"$work" "${seeds[@]}" > "$log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1))
		echo "fuzz $t: ok (${runs:-?} runs in ${secs}s)"
	else
		fail=$((fail + 1))
		echo "fuzz $t: FINDING (exit $rc), log $log:"
		grep -E "ERROR|SUMMARY|invariant broken|runtime error|Test unit written|out-of-memory|malloc\(" "$log" | head -20
	fi
done
echo "fuzz: $pass passed, $fail failed"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
