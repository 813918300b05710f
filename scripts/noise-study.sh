#!/usr/bin/env bash
# Where does the process-to-process spread come from? Measures the between-process CV of
# representative cells under each factor that can plausibly cause it, one factor at a time against
# a baseline configuration, all cells and factors interleaved in ONE k3tune sweep (so the machine's
# drift hits every configuration alike). Prints factor -> CV per cell, and the ratio to the baseline.
#
# Usage: scripts/noise-study.sh [processes] [target]    (default 20 processes, target local)
# Environment: K3TUNE (the k3tune binary; default build/k3tune-host or the test tree's),
#              RUNNER (a k3bench to measure on a local target instead of the target's own),
#              STUDY_DB (database; default a temporary file), BASE (baseline settings, k=v TOML
#              pairs), STUDY_CELLS (override the cell list, one "op|shape|params" per line).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
processes=${1:-20}
target=${2:-local}
k3tune=${K3TUNE:-}
if [ -z "$k3tune" ]; then
  for c in "$root/build/k3tune-host/harness/app/cli/k3tune" "$root/build/test/harness/app/cli/k3tune"; do
    [ -x "$c" ] && k3tune=$c && break
  done
fi
[ -x "${k3tune:-}" ] || { echo "noise-study.sh: build k3tune first (or set K3TUNE)" >&2; exit 2; }
command -v jq >/dev/null || { echo "noise-study.sh: needs jq (scripts/setup.sh installs it)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
db=${STUDY_DB:-$work/study.db}

# The baseline: today's defaults (huge pages, threads as the runner places them by default -- the
# A100 CPUs on a K3, unpinned elsewhere -- spinning pool, a warm-up of at least one full weight
# rotation, read() cache loads, rotation among weight copies). Each other row changes one factor.
base=${BASE:-'huge_pages = "on", cpus = "auto", pool_wait = "spin", warmup = 2, weight_load = "read"'}
# factor name | TOML pairs added to the baseline ("" = the baseline itself)
factors=$(cat <<'EOT'
defaults|
no huge pages (THP)|huge_pages = "off"
threads pinned in order|cpus = "0-1"
pool parks at once|pool_wait = "park"
warm-up 50 calls|warmup = 50
weight cache mmap|weight_load = "mmap"
no weight rotation|copies = 1
4x longer repetitions|min_time_s = 0.2
EOT
)
cells=${STUDY_CELLS:-$(cat <<'EOT'
linear_decode|n = 2048, k = 2048|workers = 1
linear_decode|n = 2048, k = 2048|workers = 2
linear_decode|n = 6144, k = 2048|workers = 1
linear_decode|n = 6144, k = 2048|workers = 2
linear_prefill|m = 128, n = 2048, k = 2048|workers = 2
EOT
)}
targets=()
if [ -n "${RUNNER:-}" ]; then
  printf '[targets.local]\nkind = "local"\nrunner = "%s"\ntimeout_s = 300\n' "$RUNNER" >"$work/targets.toml"
  targets=(--targets "$work/targets.toml")
  target=local
fi
# "a = 1, b = 2" pairs merged left to right (a later key replaces an earlier one).
merge_pairs() {
  local -A value=()
  local -a order=()
  local pair key
  IFS=',' read -ra pairs <<<"$*"
  for pair in "${pairs[@]}"; do
    [ -z "${pair// /}" ] && continue
    key=$(echo "${pair%%=*}" | tr -d ' ')
    [ -z "${value[$key]+x}" ] && order+=("$key")
    value[$key]=$(echo "${pair#*=}" | sed 's/^ *//; s/ *$//')
  done
  local out="" k
  for k in "${order[@]}"; do out+="${out:+, }$k = ${value[$k]}"; done
  echo "$out"
}
config="$work/study.toml"
{
  echo "[measure]"
  echo "processes = $processes"
  echo "target_ci = 0"
  while IFS='|' read -r op shape params; do
    while IFS='|' read -r name extra; do
      [ "$op" = linear_prefill ] && [ "$name" = "no weight rotation" ] && continue
      echo "[[case]]"
      echo "op = \"$op\""
      echo "shapes = [{ $shape }]"
      echo "params = { $(merge_pairs "$params, $base${extra:+, $extra}") }"
    done <<<"$factors"
  done <<<"$cells"
} >"$config"
echo "noise study: $(grep -c '^\[\[case\]\]' "$config") configurations x $processes processes, interleaved, on $target" >&2
"$k3tune" --db "$db" "${targets[@]}" --json -q bench --target "$target" --config "$config" >"$work/out.json"

# One row per factor and cell: the CV between the counted process means (standard deviation /
# mean), the robust CV (1.4826 MAD / median: the typical spread, insensitive to a rare slow
# process), and the processes left out as disturbed.
jq -r '
  def cellname: "\(.op | sub("linear_"; "")) \(.shape.n)x\(.shape.k)\(if .shape.m then " m\(.shape.m)" else "" end) w\(.params.workers)";
  def factor:
    if .measure.huge_pages == "off" then "no huge pages (THP)"
    elif .measure.cpus != "auto" then "threads pinned in order"
    elif .measure.pool_wait == "park" then "pool parks at once"
    elif .measure.warmup == 50 then "warm-up 50 calls"
    elif .measure.weight_load == "mmap" then "weight cache mmap"
    elif (.params.copies // 0) == 1 then "no weight rotation"
    elif .measure.min_time_s == 0.2 then "4x longer repetitions"
    else "defaults" end;
  def median: sort | if length % 2 == 1 then .[length / 2 | floor] else (.[length / 2 - 1] + .[length / 2]) / 2 end;
  def robust_cv: median as $m | (map(. - $m | fabs) | median) * 1.4826 / $m;
  def pct: (. * 1000 | round) / 10;
  [.cells[] | select(.status == "ok") | {cell: cellname, factor: factor, cv: .cv_between_processes,
     rcv: (.process_means_ns | robust_cv), dist: .disturbed_processes}]
  | (map(.cell) | unique) as $cells
  | ("factor" + ([$cells[] | "\t" + .] | add)),
    (group_by(.factor)[] | .[0].factor as $f
      | $f + ([$cells[] as $c | (map(select(.cell == $c)) | .[0]) as $x
               | if $x then "\t\($x.cv | pct)% \($x.rcv | pct)% \($x.dist)" else "\t-" end] | add))
' "$work/out.json" | column -t -s $'\t'
echo "(per cell: CV of the counted process means, robust CV (1.4826 MAD / median), disturbed processes left out. Defaults: $base)"
jq -r '"wall \(.overhead.total_wall_s | round) s, kernel \((.overhead.kernel_fraction * 100) | round)%, warm-up \((.overhead.warmup_fraction * 100) | round)%, overhead \((.overhead.overhead_fraction * 100) | round)%"' "$work/out.json"

# Is the spread the machine's own drift? Every counted process's log deviation from its
# configuration's median, in execution order: correlation with the processes 1, 10, 40 and 100
# places later (across configurations), and for each cell the spread of a difference between two
# factor configurations taken within the same round (paired) vs across rounds (unpaired).
command -v sqlite3 >/dev/null && command -v gawk >/dev/null || { echo "(drift analysis skipped: needs sqlite3 and gawk)"; exit 0; }
sqlite3 -separator ' ' "$db" "
  SELECT p.order_index, p.cell_key, c.op || ' ' || json_extract(c.shape_json, '$.n') || 'x' ||
         json_extract(c.shape_json, '$.k') || ' w' || json_extract(c.params_json, '$.workers'),
         p.process_index, avg(s.ns)
  FROM processes p JOIN samples s USING (run_uuid, cell_key, process_index) JOIN cells c USING (cell_key)
  WHERE p.status = 'ok' AND p.disturbed = 0
  GROUP BY p.run_uuid, p.cell_key, p.process_index ORDER BY p.order_index" >"$work/order.txt"
gawk '
  { key[NR] = $2; cell[NR] = $3 " " $4 " " $5; round[NR] = $6; x[NR] = log($7); n = NR; vals[$2] = vals[$2] " " x[NR] }
  END {
    # median per configuration
    for (k in vals) { m = split(vals[k], srt, " "); asort(srt); med[k] = (m % 2) ? srt[(m + 1) / 2] : (srt[m / 2] + srt[m / 2 + 1]) / 2 }
    for (i = 1; i <= n; i++) { d[i] = x[i] - med[key[i]]; mu += d[i] / n }
    for (i = 1; i <= n; i++) c0 += (d[i] - mu) ^ 2 / n
    printf "drift: sd of log deviations %.1f%%; correlation with the process", 100 * sqrt(c0)
    split("1 10 40 100", lags, " ")
    for (j = 1; j <= 4; j++) { L = lags[j]; c = 0; for (i = 1; i + L <= n; i++) c += (d[i] - mu) * (d[i + L] - mu); printf " %d later %.2f%s", L, c / (n - L) / c0, j < 4 ? ";" : "\n" }
    # paired (same round) vs unpaired spread of differences between configurations of one cell
    for (i = 1; i <= n; i++) { v[key[i], round[i]] = x[i]; cellof[key[i]] = cell[i]; rounds[key[i]] = rounds[key[i]] " " round[i] }
    for (ka in cellof) for (kb in cellof) if (ka < kb && cellof[ka] == cellof[kb]) {
      m = split(rounds[ka], ra, " "); s = 0; s2 = 0; q = 0
      for (r = 1; r <= m; r++) if ((kb, ra[r]) in v) { dd = v[ka, ra[r]] - v[kb, ra[r]]; s += dd; s2 += dd * dd; q++ }
      if (q > 2) { paired[cellof[ka]] += sqrt((s2 - s * s / q) / (q - 1)); pairs[cellof[ka]]++ }
    }
    for (k in vals) { m = split(vals[k], xs, " "); s = 0; s2 = 0; for (r = 1; r <= m; r++) { s += xs[r]; s2 += xs[r] ^ 2 }; var[cellof[k]] += (s2 - s * s / m) / (m - 1); nv[cellof[k]]++ }
    for (c in pairs) printf "  %-30s paired difference %.1f%%, unpaired %.1f%%\n", c, 100 * paired[c] / pairs[c], 100 * sqrt(2 * var[c] / nv[c])
  }' "$work/order.txt"
