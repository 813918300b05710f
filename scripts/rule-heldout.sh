#!/usr/bin/env bash
# How much does a table's rule lose on shapes nobody measured? Leave-one-shape-out under qemu with
# exact instruction counts (one worker): every shape of the op in the five model configs plus
# off-grid shapes (N, K in no model; prefill M and attention seq between buckets) is tuned
# exhaustively over a small space (scripts/rule-heldout-spaces: the knobs that change a count),
# then each shape in turn is left out, the rule is fitted on the others (tuner/shape_rules.h) and
# its choice is charged at the left-out shape against that shape's own best, next to the nearest
# class of the others (the loader's missing-shape rule) and the kernel defaults
# (`k3tune tune --heldout`). Prints per op and VLEN one line per shape and the mean and worst.
#
# Counts are stored once (the measurement cache, keyed by runner build, shape, parameters and
# VLEN), so a second run with the same database counts nothing.
#
# Usage: scripts/rule-heldout.sh [full|reduced|host]
#   full (default): >= 30 shapes per op and VLEN under qemu; a count takes 1-20 s once the
#     runner's weight cache holds the shape's weights (filling it is up to 20 s per shape), so
#     decode is minutes and prefill about half an hour per VLEN on one core.
#   reduced: 8 decode shapes, the figures docs/tuning-and-tables.md quotes.
#   host: the same shapes timed on this machine (time objective, one worker, the host runner):
#     what the rule loses where the truth is a noisy time, next to the noise itself.
# Environment: K3TUNE (default the host or test tree's k3tune), RUNNER (riscv64 k3bench; default
#   build/rvv's), HOST_RUNNER (host mode; default the test tree's k3bench), DB (default
#   results/rule-heldout.db), OPS (default by size), VLENS ("256 1024"), PROCESSES (host mode:
#   processes per configuration, default 5), MAX_WEIGHTS (model shapes with more weights N*K are
#   left out; default 16777216).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
size=${1:-full}
k3tune=${K3TUNE:-}
if [ -z "$k3tune" ]; then
  for c in "$root/build/k3tune-host/apps/cli/k3tune" "$root/build/test/apps/cli/k3tune"; do
    [ -x "$c" ] && k3tune=$c && break
  done
fi
[ -x "${k3tune:-}" ] || { echo "rule-heldout.sh: build k3tune first (or set K3TUNE)" >&2; exit 2; }
runner=${RUNNER:-$root/build/rvv/harness/runner/k3bench}
host_runner=${HOST_RUNNER:-$root/build/test/harness/runner/k3bench}
if [ "$size" = host ]; then
  [ -x "$host_runner" ] || { echo "rule-heldout.sh: no host runner at $host_runner (set HOST_RUNNER)" >&2; exit 2; }
else
  [ -x "$runner" ] || { echo "rule-heldout.sh: no riscv64 runner at $runner (set RUNNER)" >&2; exit 2; }
fi
command -v jq >/dev/null || { echo "rule-heldout.sh: needs jq (scripts/setup.sh installs it)" >&2; exit 2; }
db=${DB:-$root/results/rule-heldout.db}
vlens=${VLENS:-256 1024}
max_weights=${MAX_WEIGHTS:-16777216}
mkdir -p "$(dirname "$db")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for v in $vlens; do
  printf '[targets.qemu-vlen%s]\nkind = "qemu"\nqemu = "qemu-riscv64"\nvlen = %s\nrunner = "%s"\ntimeout_s = 1800\n' \
    "$v" "$v" "$runner" >>"$work/targets.toml"
done
printf '[targets.host]\nkind = "local"\nrunner = "%s"\ntimeout_s = 600\n' "$host_runner" >>"$work/targets.toml"
# Where each evaluation runs and what it minimises: qemu targets count instructions; the host
# times (its noise is part of what the loss shows there).
if [ "$size" = host ]; then
  targets=(host)
  objective=(--objective time --processes "${PROCESSES:-5}")
else
  targets=()
  for v in $vlens; do targets+=("qemu-vlen$v"); done
  objective=(--objective instructions)
fi
models=(qwen3-0.6b qwen3-1.7b qwen3-4b qwen3.5-0.8b qwen3.5-2b)

# Off-grid shapes: N and K in no model's list, M and seq between the buckets.
offgrid() {
  case $1 in
    linear_decode)
      for k in 640 1536 2816 4608; do for n in 768 1280 2304 5120; do echo "k=$k,n=$n"; done; done ;;
    linear_prefill)
      for m in 48 96 200; do for kn in "k=1536,n=768" "k=1024,n=1280" "k=2816,n=2304" "k=640,n=5120"; do
        echo "m=$m,$kn"; done; done ;;
    attn_prefill)
      for seq in 24 48 96 200 12 40 72; do for h in "head_dim=64,q_heads=4,kv_heads=2" \
        "head_dim=128,q_heads=6,kv_heads=2" "head_dim=96,q_heads=8,kv_heads=4" "head_dim=128,q_heads=4,kv_heads=4"; do
        echo "seq=$seq,$h"; done; done ;;
  esac
}

shapes_of() {  # op target -> one shape per line
  local op=$1 target=$2
  if [ "$size" = reduced ]; then
    case $op in
      linear_decode)
        printf '%s\n' k=1024,n=1024 k=1024,n=2048 k=2048,n=1024 k=640,n=768 k=1536,n=768 k=640,n=2304 \
          k=1536,n=1280 k=2816,n=768 ;;
      *) offgrid "$op" | head -8 ;;
    esac
    return
  fi
  for m in "${models[@]}"; do
    "$k3tune" --db "$work/explain.db" --targets "$work/targets.toml" --json tune --target "$target" \
      --spaces "$root/scripts/rule-heldout-spaces" --model "$m" --op "$op" --params workers=1 \
      "${objective[@]}" --explain 2>/dev/null |
      jq -r --argjson max "$max_weights" \
        '.jobs[].shape | select(((.n // 1) * (.k // 1)) <= $max) | to_entries | map("\(.key)=\(.value)") | join(",")'
  done
  offgrid "$op"
}

case $size in
  full) ops=${OPS:-linear_decode linear_prefill attn_prefill} ;;
  # On the host's generic layer a one-worker Linear has no knob that changes it (rows per tile are
  # 32 there, the tile width only splits work between workers): attention only.
  host) ops=${OPS:-attn_prefill} ;;
  reduced) ops=${OPS:-linear_decode} ;;
  *) echo "rule-heldout.sh: size is full, reduced or host, not '$size'" >&2; exit 2 ;;
esac

summary=()
for op in $ops; do
  for target in "${targets[@]}"; do
    mapfile -t shapes < <(shapes_of "$op" "$target" | sort -u)
    args=()
    for s in "${shapes[@]}"; do args+=(--shape "$s"); done
    start=$(date +%s)
    "$k3tune" --db "$db" --targets "$work/targets.toml" --json tune --target "$target" \
      --spaces "$root/scripts/rule-heldout-spaces" --op "$op" "${args[@]}" --params workers=1 \
      "${objective[@]}" --strategy exhaustive --heldout >"$work/out.json"
    secs=$(($(date +%s) - start))
    counted=$(jq '[.jobs[] | .measurements_new - .cache_hits] | add' "$work/out.json")
    cached=$(jq '[.jobs[].cache_hits] | add' "$work/out.json")
    echo "## $op, $target: ${#shapes[@]} shapes, $counted counted, $cached from the cache, ${secs} s"
    if [ "$size" = host ]; then
      # A time's loss is only as good as the means it compares: the median half-width of the
      # chosen configurations' 95% intervals, relative to their means.
      jq -r '[.jobs[].result.evidence | select(.ci95_ns != null and .mean_ns > 0)
        | (.ci95_ns[1] - .ci95_ns[0]) / 2 / .mean_ns] | sort
        | "noise: median 95% interval half-width of the chosen means \(if length > 0 then .[length / 2 | floor] * 10000 | round / 100 else "?" end)%"' \
        "$work/out.json"
    fi
    echo
    echo "| shape | rule % | nearest % | defaults % |"
    echo "|---|---|---|---|"
    jq -r '.heldout[] | (.shapes[] | "| \(.shape) | \(.rule * 100 | . * 100 | round / 100) | \(.nearest * 100 | . * 100 | round / 100) | \(.defaults * 100 | . * 100 | round / 100) |"),
      ("| **mean** | \(.mean.rule * 10000 | round / 100) | \(.mean.nearest * 10000 | round / 100) | \(.mean.defaults * 10000 | round / 100) |"),
      ("| **worst** | \(.worst.rule * 10000 | round / 100) | \(.worst.nearest * 10000 | round / 100) | \(.worst.defaults * 10000 | round / 100) |")' \
      "$work/out.json"
    echo
    summary+=("$(jq -r --arg op "$op" --arg v "$target" '.heldout[] | "| \($op) | \($v) | \(.shapes | length) | \(.mean.rule * 10000 | round / 100) / \(.worst.rule * 10000 | round / 100) | \(.mean.nearest * 10000 | round / 100) / \(.worst.nearest * 10000 | round / 100) | \(.mean.defaults * 10000 | round / 100) / \(.worst.defaults * 10000 | round / 100) |"' "$work/out.json")")
  done
done
echo "## Summary: held-out loss over each shape's best, % (mean / worst)"
echo
echo "| op | target | shapes | rule | nearest class | defaults |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${summary[@]}"
