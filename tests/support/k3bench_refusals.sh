#!/usr/bin/env bash
# Every refusal class of k3bench -- bad option (exit 2), unsupported shape (3), accuracy failure
# (4), internal error (5) -- gives the same one line on stderr and the same exit code on every
# build: the host runner, and the riscv64 runners (static RVV, IME2 emulation, the dynamically
# linked board build) under qemu-user, where a throw that crossed a frame the unwinder cannot read
# used to abort the process (SIGABRT, exit 134, no message). Cases that reach a kernel's own
# argument check, a throw on a pool thread during a timed call, and a --model size beyond the
# model's context are among them.
#
# Usage: k3bench_refusals.sh K3BENCH [EMULATOR...]   (e.g. qemu-riscv64 -cpu rv64,v=true,vlen=1024)
# Prints one row per case (class, exit code, the line) and exits 1 if any case differs.
set -uo pipefail
runner=$1
shift
emulator=("$@")
failures=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# check CLASS EXIT LINE_REGEX ENV... -- ARGS...
check() {
  local class=$1 want=$2 regex=$3
  shift 3
  local env=()
  while [ "$1" != "--" ]; do env+=("$1"); shift; done
  shift
  env "${env[@]}" "${emulator[@]}" "$runner" "$@" >/dev/null 2>"$err"
  local got=$?
  local lines line
  lines=$(wc -l <"$err")
  line=$(head -n 1 "$err")
  printf '%-12s %3s  %s\n' "$class" "$got" "$line"
  if [ "$got" != "$want" ] || [ "$lines" != 1 ] || ! [[ $line =~ $regex ]]; then
    printf '  FAIL: k3bench %s: expected exit %s and one line matching /%s/, got exit %s and %s line(s)\n' \
      "$*" "$want" "$regex" "$got" "$lines"
    failures=$((failures + 1))
  fi
}

march=K3_IME2_ASSUME_MARCHID=0x8000000041000002  # the A100's marchid (qemu shows the host's)
tiny="--op linear_decode --shape n=96,k=256 --params workers=2,copies=1 --reps 1 --warmup 0 --iterations 1"

check usage 2 "^k3bench: --shape: missing required key 'k' \(input features, multiple of 64\)$" \
  "$march" -- --op linear_decode --shape n=96
check usage 2 "^k3bench: --params: workers=0 is outside the allowed range \[1, [0-9]+\]$" \
  "$march" -- --op linear_decode --shape n=96,k=256 --params workers=0
check usage 2 "^k3bench: --pg 1000000000,1: 1000000001 tokens in the KV cache, beyond Qwen3-0\.6B's context of 40960 tokens \(max_context in .*configs/models/qwen3-0\.6b\.toml\)$" \
  "$march" -- --model qwen3-0.6b --pg 1000000000,1
check usage 2 "^k3bench: --depth 100000000 and --pp 512: 100000512 tokens in the KV cache, beyond Qwen3-0\.6B's context of 40960 tokens \(max_context in .*configs/models/qwen3-0\.6b\.toml\)$" \
  "$march" -- --model qwen3-0.6b --depth 100000000
# A second build that is not there: the dynamically linked runners cannot load it, a static one
# loads none (either way one line, the file named).
check usage 2 "^k3bench: --build-b: /nonexistent/libk3bench_plugin\.so: (not loadable as a kernel plugin: .*No such file or directory|this k3bench is statically linked and cannot load a second build; .*)$" \
  "$march" -- --op linear_decode --shape n=96,k=256 --build-b /nonexistent/libk3bench_plugin.so
check unsupported 3 "^k3bench: unsupported: shape: k=19 is not a multiple of 64 \(W4B64 blocks\)$" \
  "$march" -- --op linear_decode --shape n=96,k=19
check unsupported 3 "^k3bench: unsupported: shape: q_heads=3 is not a multiple of kv_heads=2 \(grouped-query attention: each KV head serves q_heads / kv_heads query heads\)$" \
  "$march" -- --op attn_decode --shape ctx=16,q_heads=3,kv_heads=2,head_dim=64
check unsupported 3 "^k3bench: unsupported: --params: accumulate=fp16 (needs the IME2 layer \(not in this build\)|is the IME2 \.hp kernel: it needs --path ime2)$" \
  "$march" -- --op linear_decode --shape n=96,k=256 --params accumulate=fp16 --path generic
# shellcheck disable=SC2086  # $tiny is a list of arguments
check accuracy 4 "^k3bench: accuracy failure: linear_decode error/bound ratio [0-9.e+]+ \(max abs err [0-9.e+-]+\)$" \
  "$march" K3BENCH_FAULT=perturb-output -- $tiny
# shellcheck disable=SC2086
check internal 5 "^k3bench: internal error: K3BENCH_FAULT=throw-in-worker: worker 1 threw during a timed call$" \
  "$march" K3BENCH_FAULT=throw-in-worker -- $tiny
check internal 5 "^k3bench: internal error: --dump: cannot create directory '/proc/k3bench-refusals/x': " \
  "$march" -- --op rmsnorm --shape rows=1,dim=64 --reps 1 --warmup 0 --iterations 1 --dump /proc/k3bench-refusals/x

if [ "$failures" -gt 0 ]; then
  echo "k3bench_refusals: $failures case(s) differ"
  exit 1
fi
echo "k3bench_refusals: every refusal class as documented"
