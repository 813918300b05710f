#!/usr/bin/env bash
# A quick look at this machine: builds k3bench for this host (tuned to this CPU)
# and benchmarks the Linear and attention ops at Qwen3-1.7B shapes, next to the machine's own
# streaming bandwidth, as one readable table. Extra arguments go to every k3bench call
# (e.g. --reps 10).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/setup.sh"
build="$root/build/host"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DK3_HOST_MARCH=native \
  -DK3_BUILD_TESTS=OFF >/dev/null
cmake --build "$build" -j"$(nproc)" --target k3bench >/dev/null
k3bench="$build/harness/runner/k3bench"

workers=$(nproc)
header=1
bench() {  # op shape params
  if [ $header -eq 1 ]; then "$k3bench" --op "$1" --shape "$2" --params "$3" "${@:4}"; header=0
  else "$k3bench" --op "$1" --shape "$2" --params "$3" --no-header "${@:4}"; fi
}

# Qwen3-1.7B: hidden 2048, SwiGLU intermediate 6144, 16 query / 8 KV heads of 128, RoPE theta 1e6.
echo "k3bench on $(uname -m), $workers workers; Qwen3-1.7B shapes (N x K); GB/s = all bytes moved / median"
for w in 1 "$workers"; do
  bench membw "mib=256" "workers=$w,mode=read" "$@"
done
for w in 1 "$workers"; do
  for nk in 2048x2048 1024x2048 6144x2048 2048x6144; do
    bench linear_decode "n=${nk%x*},k=${nk#*x}" "workers=$w" "$@"
  done
done
for nk in 2048x2048 6144x2048 2048x6144; do
  bench linear_prefill "m=512,n=${nk%x*},k=${nk#*x}" "workers=$workers" --reps 3 "$@"
done
if "$k3bench" --list-ops | grep -q '^attn_prefill'; then
  bench attn_prefill "seq=512,q_heads=16,kv_heads=8,head_dim=128" "workers=$workers" --reps 3 "$@"
  for ctx in 512 4096; do
    bench attn_decode "ctx=$ctx,q_heads=16,kv_heads=8,head_dim=128" "workers=$workers" "$@"
  done
fi
