#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the Release tree (kernels, k3bench,
# tests), an ASan+UBSan tree of the kernel tests, a ThreadSanitizer tree of the TCM pipeline and
# worker pool (thousands of randomized pipeline runs), the riscv64 RVV tree whose tests run under
# qemu-user at VLEN 256 and 1024, and two riscv64 IME2 trees: ime2-emu (IME2 instructions emulated
# in software, so the IME2 kernels run under qemu) and ime2 (real instructions: checked in the
# binary with objdump; under qemu the SIGILL probe must send dispatch to RVV); then runs ctest,
# and fuzzes the tuning-table parser for 60 s beside the TSan run (scripts/fuzz-table.sh:
# libFuzzer, ASan + UBSan).
# The board-farm tests (label farm, in the Release tree) start one sshd per board on 127.0.0.1 and
# run the dynamically linked riscv64 runner (build/rvv-dynamic) under qemu-user, so every tree is
# built before any test runs. The Slurm farm tests (label slurm) start their own munged, slurmctld
# and two slurmd on loopback as the current user (tests/support/slurm-cluster.sh) and stop them. K3_TEST_EXTRA_VLENS=1 also runs the riscv64 tests at VLEN 128 and 512,
# and the model-shape Linear cases at full size under qemu (CI runs them reduced: K3_TEST_SIZE).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
bash "$root/scripts/build-riscv-deps.sh"
bash "$root/scripts/build-qemu-plugin.sh" >/dev/null  # the tuner's instruction-count objective
jobs=$(nproc)
# Every phase prints its wall time when the next one starts (and the total at the end), so CI logs
# show where the budget goes.
suite_start=$(date +%s)
phase_name=""
phase_start=$suite_start
phase() {
  local now
  now=$(date +%s)
  [ -n "$phase_name" ] && echo "== time: $phase_name: $((now - phase_start)) s"
  phase_name="$1"
  phase_start=$now
  [ -n "$1" ] && echo "== $1"
  return 0
}

# The trees are the test presets of CMakePresets.json (the one table of build variants, shared
# with `k3tune build` and `k3tune count`); preset_dir reads a preset's tree from it.
preset_dir() {
  jq -r --arg n "$1" '.configurePresets[] | select(.name == $n) | .binaryDir' "$root/CMakePresets.json" |
    sed "s|\${sourceDir}|$root|; s|\${presetName}|$1|"
}
build_preset() {  # preset [target]
  cmake -S "$root" --preset "$1" >/dev/null
  cmake --build "$(preset_dir "$1")" -j"$jobs" ${2:+--target "$2"}
}
in_tree() {  # preset command...: runs the command in the preset's tree
  local dir; dir=$(preset_dir "$1"); shift
  (cd "$dir" && "$@")
}

phase "build: release (build/test)"
build_preset test
phase "build: asan+ubsan (build/asan)"
build_preset test-asan
phase "build: tsan (build/tsan: TCM pipeline and worker pool only)"
build_preset test-tsan k3tcm_tests
phase "build: riscv64 rvv (build/rvv)"
build_preset test-rvv
phase "build: riscv64 rvv, dynamically linked (build/rvv-dynamic: the board runner, TCM test double)"
build_preset test-rvv-dynamic
phase "build: riscv64 ime2, emulated (build/ime2-emu)"
build_preset test-ime2-emu
phase "build: riscv64 ime2, real instructions (build/ime2)"
build_preset test-ime2

status=0
phase "tests: release"
# The full-size bisection (label bisect-full) is left out: CI runs its reduced history (label bisect).
# So are the Slurm scenarios of label slurm-full (their paths are covered by label slurm).
in_tree test ctest --output-on-failure -j"$jobs" -LE '^(bisect-full|slurm-full)$' || status=1
phase "tests: asan+ubsan (kernel unit tests)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  in_tree test-asan ctest --output-on-failure -j"$jobs" -L kernels || status=1
# The TSan run is one test and the fuzzer one process: side by side they take about as long as
# the longer of the two (the fuzzer's output follows the TSan run's). The fuzzer runs in its own
# process group, so an interrupted suite ends it and its children.
phase "tests: tsan (randomized TCM pipeline runs, worker pool) beside fuzz: tuning-table parser (60 s, ASan+UBSan)"
fuzz_log=$(mktemp)
setsid bash "$root/scripts/fuzz-table.sh" 60 >"$fuzz_log" 2>&1 &
fuzz_pid=$!
trap 'kill -- -"$fuzz_pid" 2>/dev/null || true; rm -f "$fuzz_log"' EXIT
in_tree test-tsan ctest --output-on-failure -L tsan || status=1
wait "$fuzz_pid" || status=1
cat "$fuzz_log"
phase "tests: riscv64 under qemu-user (RVV layer vs generic)"
labels=qemu
[ "${K3_TEST_EXTRA_VLENS:-0}" = 1 ] && labels='qemu|qemu-extra'
in_tree test-rvv ctest --output-on-failure -j"$jobs" -L "^($labels|binary)\$" || status=1
phase "tests: riscv64 dynamic runner under qemu-user (dlopen of the TCM library)"
in_tree test-rvv-dynamic ctest --output-on-failure -j"$jobs" -L '^qemu$' || status=1
phase "tests: riscv64 ime2 emulated under qemu-user (IME2 layer vs generic and the reference)"
in_tree test-ime2-emu ctest --output-on-failure -j"$jobs" -L "^($labels|binary)\$" || status=1
phase "tests: riscv64 ime2 real instructions (objdump; probe falls back to RVV under qemu)"
{ in_tree test-ime2 ctest --output-on-failure -j"$jobs" -L '^binary$' &&
  in_tree test-ime2 ctest --output-on-failure -R '^kernels_qemu_vlen1024$'; } || status=1
phase ""
echo "== time: total: $(( $(date +%s) - suite_start )) s"
exit $status
