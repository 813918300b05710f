#!/usr/bin/env bash
# Which paired estimator should the A/B verdicts use? Measures, on the seeded synthetic runner
# (known truth), the false-positive rate and the detection rates of +3/+5/+10% for each estimator
# (mean log ratio with the paired t-test, Hodges-Lehmann shift with the Wilcoxon signed-rank test)
# under each noise model: the shared VM's (normal process levels on a slow drift), heavy tails
# (Student t with 3 and 2 degrees of freedom), contamination (5% of processes slowed by a one-sided
# burst), and a fast drift that pairing cancels only in part. The test is judged alone (minimum
# effect 0) at bench's default process budget; every rate with its Clopper-Pearson 95% interval.
# Both estimators see the same draws (same seed), so their difference is the estimators' alone.
#
# Usage: scripts/robust-study.sh [trials]    (default 20000 per row: the false-positive rate's
#        interval is then about +-0.3 points at 5%; 4000 runs in about a minute)
# Environment: K3TUNE (the k3tune binary; default the host or test tree's), SEED (default 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trials=${1:-20000}
seed=${SEED:-1}
k3tune=${K3TUNE:-}
if [ -z "$k3tune" ]; then
  for c in "$root/build/k3tune-host/apps/cli/k3tune" "$root/build/test/apps/cli/k3tune"; do
    [ -x "$c" ] && k3tune=$c && break
  done
fi
[ -x "${k3tune:-}" ] || { echo "robust-study.sh: build k3tune first (or set K3TUNE)" >&2; exit 2; }
command -v jq >/dev/null || { echo "robust-study.sh: needs jq (scripts/setup.sh installs it)" >&2; exit 2; }

# name|extra selfcheck options (the defaults are the VM model: 3.5% process spread, 5% drift
# correlated 0.98 between neighbours, 0.5% repetition noise)
models=(
  "normal (VM model)|"
  "Student t, 3 df|--noise-tail-df 3"
  "Student t, 2 df|--noise-tail-df 2"
  "contaminated (5% of processes, burst sd 0.3)|--noise-contamination 0.05 --noise-contamination-scale 0.3"
  "fast drift (sd 5%, rho 0.6)|--noise-drift-correlation 0.6"
)

pct() { jq -r "$1" | awk '{printf "%.1f", 100 * $1}'; }
echo "| noise | estimator | false positives (95% CI) | +3% | +5% | +10% | median MDE | s |"
echo "|---|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
  name=${m%%|*}
  name=${name%|}
  opts=${m##*|}
  for est in mean hodges-lehmann; do
    start=$(date +%s.%N)
    # shellcheck disable=SC2086 # opts is a list of options
    json=$("$k3tune" --json selfcheck stats --synthetic --trials "$trials" --seed "$seed" \
      --estimator "$est" --min-effect 0 --slowdown 0.03 --slowdown 0.05 --slowdown 0.10 $opts)
    secs=$(echo "$start" | awk -v end="$(date +%s.%N)" '{printf "%.1f", end - $1}')
    fp=$(echo "$json" | jq -r '.false_positive_rate |
      "\(.count)/\(.trials) = \(100 * .rate | . * 100 | round / 100)% (\(100 * .ci95_low | . * 100 | round / 100)-\(100 * .ci95_high | . * 100 | round / 100)%)"')
    d3=$(echo "$json" | pct '.detection_rate["3%"].rate')
    d5=$(echo "$json" | pct '.detection_rate["5%"].rate')
    d10=$(echo "$json" | pct '.detection_rate["10%"].rate')
    mde=$(echo "$json" | pct '.minimum_detectable_effect')
    echo "| $name | $est | $fp | $d3% | $d5% | $d10% | $mde% | $secs |"
  done
done
