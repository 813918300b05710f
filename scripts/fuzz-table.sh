#!/usr/bin/env bash
# Fuzzes the tuning-table parser and validator (tests/fuzz/tuning_table_fuzz.cpp, libFuzzer with
# ASan + UBSan) for SECONDS (default 60): bash scripts/fuzz-table.sh 3600 is the long run.
# Builds build/fuzz (clang-16) when needed, fuzzes a copy of the seed corpus in build/fuzz/corpus
# (the repository's corpus is never written; what a run finds stays there for the next run), and
# prints libFuzzer's figures: executions, exec/s, corpus size, coverage. A crash, a sanitizer report
# or a broken invariant exits non-zero and leaves the input in build/fuzz/artifacts/.
# K3_FUZZ_KEEP_GOING=1 keeps fuzzing after a crash (libFuzzer -fork=1 -ignore_crashes=1) to collect
# every distinct failure of a long run; it still exits non-zero if any was found.
# Builds and the run queue on /tmp/k3tune-cpu.lock (the CPU is shared).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz-table.sh: SECONDS must be a positive integer, got '$seconds'" >&2; exit 2; }
build=$root/build/fuzz
lock=(flock -o /tmp/k3tune-cpu.lock)

command -v clang++-16 >/dev/null || { echo "fuzz-table.sh: clang++-16 missing (run scripts/setup.sh)" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  "${lock[@]}" cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-16 >/dev/null
fi
"${lock[@]}" cmake --build "$build" --target tuning_table_fuzz -j"$(nproc)" | grep -v '^\[' || true
[ -x "$build/tuning_table_fuzz" ] || { echo "fuzz-table.sh: build of tuning_table_fuzz failed" >&2; exit 1; }

corpus=$build/corpus/tuning_table
artifacts=$build/artifacts
mkdir -p "$corpus" "$artifacts"
cp "$root"/tests/fuzz/corpus/tuning_table/* "$corpus"/
log=$build/fuzz-table.log
echo "fuzz-table.sh: fuzzing for $seconds s (corpus $corpus, log $log)"
keep_going=()
[ "${K3_FUZZ_KEEP_GOING:-0}" = 1 ] && keep_going=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
# Sanitizer stacks with function names and lines (any llvm-symbolizer reads clang-16's DWARF).
symbolizer=$(command -v llvm-symbolizer-16 || command -v llvm-symbolizer || true)
marker=$build/.fuzz-start
touch "$marker"
fuzz_env=(env ASAN_SYMBOLIZER_PATH="$symbolizer" ASAN_OPTIONS=detect_leaks=1
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
set +e
# max_len: room for the deeply nested seed; one input taking over 10 s is reported as a hang.
"${fuzz_env[@]}" "${lock[@]}" "$build/tuning_table_fuzz" "$corpus" -dict="$root/tests/fuzz/tuning_table.dict" \
  -max_total_time="$seconds" -max_len=16384 -timeout=10 -print_final_stats=1 -print_funcs=0 \
  -artifact_prefix="$artifacts/" "${keep_going[@]}" >"$log" 2>&1
rc=$?
if [ ${#keep_going[@]} -gt 0 ]; then
  # Fork mode exits 0 after ignored crashes and silently drops crashing seeds: the seeds are
  # replayed one by one, and any new artifact counts as a failure.
  "${fuzz_env[@]}" "$build/tuning_table_fuzz" "$root"/tests/fuzz/corpus/tuning_table/* \
    -artifact_prefix="$artifacts/" >>"$log" 2>&1 || rc=1
  [ -n "$(find "$artifacts" -type f -newer "$marker")" ] && rc=1
fi
set -e

# libFuzzer's last status line ("#N DONE cov: C ft: F corp: U/B ...") and its final stats.
grep -E '^#[0-9]+:? +(DONE|INITED|cov:)' "$log" | tail -2 || true
grep -E '^stat::' "$log" || true
echo "fuzz-table.sh: corpus now $(find "$corpus" -type f | wc -l) inputs in $corpus"
if [ $rc -ne 0 ]; then
  echo "fuzz-table.sh: the fuzzer failed (exit $rc); the report:" >&2
  grep -E -A40 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|invariant violated' "$log" \
    | head -60 >&2 || tail -40 "$log" >&2
  grep -E '^artifact_prefix|Test unit written to' "$log" >&2 || true
  find "$artifacts" -type f -newer "$marker" -printf 'fuzz-table.sh: failing input %p\n' >&2
  echo "fuzz-table.sh: reproduce with: $build/tuning_table_fuzz <that input>" >&2
  exit 1
fi
