#!/usr/bin/env bash
# Dynamic instruction counts per call of every op, RVV path vs generic path, on the same riscv64
# k3bench under qemu-user (a deterministic proxy for speed until a board is available).
# Counting: a TCG plugin (scripts/qemu-insn-count/insn_count.c) built against qemu-plugin.h from
# Debian's qemu source package. Per call = (count with 3 timed calls - count with 1) / 2, which
# cancels setup, the accuracy check and process start. One worker, so counts are exact.
# Usage: scripts/count-instructions.sh [vlen]   (default 1024)
# K3_COUNT_K3BENCH=<riscv64 k3bench> counts that binary instead of building build/rvv (e.g. to put
# two revisions side by side); K3_COUNT_SKIP_GENERIC=1 counts only the RVV path (generic shows 0);
# K3_COUNT_OPS=<regex> counts only the ops whose name matches; K3_COUNT_PARAMS=<k=v,...> adds
# --params to the RVV runs (e.g. ukernel=..., weight_rows=...).
# The last column is the RVV count per unit of work: per weight (linear_decode: N*K) or per
# multiply-add (linear_prefill: M*N*K); empty for the other ops.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vlen=${1:-1024}
bash "$root/scripts/setup.sh"
bash "$root/scripts/build-riscv-deps.sh"

plugin=$(bash "$root/scripts/build-qemu-plugin.sh")

if [ -n "${K3_COUNT_K3BENCH:-}" ]; then
  k3bench=$K3_COUNT_K3BENCH
else
  build="$root/build/rvv"  # the tree of the test-rvv preset (CMakePresets.json)
  cmake -S "$root" --preset test-rvv >/dev/null
  cmake --build "$build" -j"$(nproc)" --target k3bench >/dev/null
  k3bench="$build/harness/runner/k3bench"
fi

count() {  # path iterations op shape -> "insns vector_insns"
  local out params=workers=1; out=$(mktemp)
  [ "$3" = quant_pack_decode ] && params=""  # single-row op: no worker parameter
  [ "$1" = rvv ] && [ -n "${K3_COUNT_PARAMS:-}" ] && params="$params,$K3_COUNT_PARAMS"
  # Both processes of a pair must do the same set-up (no weight cache) and no idle work (parked
  # pool threads: a spinning one counts for as long as the main thread takes, i.e. the load).
  K3BENCH_CACHE_DIR=off qemu-riscv64 -cpu "rv64,v=true,vlen=$vlen,elen=64,vext_spec=v1.0" \
    -plugin "$plugin,outfile=$out" "$k3bench" --op "$3" --shape "$4" --params "$params" \
    --path "$1" --reps 1 --warmup 0 --iterations "$2" --check none --pool-wait park --json >/dev/null
  sed -E 's/insns=([0-9]+) vector_insns=([0-9]+)/\1 \2/' "$out"
  rm -f "$out"
}

printf '%-20s %-44s %14s %14s %8s %8s %9s\n' op "shape (Qwen3-1.7B)" "generic/call" "rvv/call" "ratio" "rvv %vec" "rvv/unit"
while read -r op shape; do
  [ -z "$op" ] && continue
  [ -n "${K3_COUNT_OPS:-}" ] && ! [[ $op =~ ${K3_COUNT_OPS} ]] && continue
  g1=0 g3=0
  if [ "${K3_COUNT_SKIP_GENERIC:-0}" != 1 ]; then
    read -r g1 _ <<<"$(count generic 1 "$op" "$shape")"
    read -r g3 _ <<<"$(count generic 3 "$op" "$shape")"
  fi
  read -r r1 v1 <<<"$(count rvv 1 "$op" "$shape")"
  read -r r3 v3 <<<"$(count rvv 3 "$op" "$shape")"
  g=$(( (g3 - g1) / 2 )); r=$(( (r3 - r1) / 2 )); v=$(( (v3 - v1) / 2 ))
  awk -v op="$op" -v s="$shape" -v g="$g" -v r="$r" -v v="$v" '
    BEGIN {
      units = 0
      if (op ~ /^linear_(decode|prefill)$/) {
        units = 1; n = split(s, kv, ",")
        for (i = 1; i <= n; ++i) { split(kv[i], p, "="); if (p[1] ~ /^[mnk]$/) units *= p[2] }
      }
      printf "%-20s %-44s %14d %14d %7.1fx %7.1f%% %9s\n", op, s, g, r, (r > 0 ? g / r : 0),
             (r > 0 ? 100 * v / r : 0), (units > 0 ? sprintf("%.4f", r / units) : "")
    }'
done <<'EOF_OPS'
quant_pack_decode  k=2048
quant_pack_prefill m=16,k=2048
linear_decode      n=2048,k=2048
linear_prefill     m=16,n=2048,k=2048
embedding          tokens=16,vocab=1024,dim=2048
attn_prefill       seq=64,q_heads=16,kv_heads=8,head_dim=128
attn_decode        ctx=1024,q_heads=16,kv_heads=8,head_dim=128
kv_append          tokens=64,past=0,kv_heads=8,head_dim=128
kv_append          tokens=1,past=1023,kv_heads=8,head_dim=128
rmsnorm            rows=1,dim=2048
swiglu             rows=1,dim=6144
residual_add       rows=1,dim=2048
EOF_OPS
