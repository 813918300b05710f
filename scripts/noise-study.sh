#!/usr/bin/env bash
# Where does the process-to-process spread come from? Measures the between-process CV of
# representative cells under each factor that can plausibly cause it, one factor at a time against
# a baseline configuration, all cells and factors interleaved in ONE k3tune sweep (so the machine's
# drift hits every configuration alike). Prints factor -> CV per cell; then, per cell and factor,
# the variance split into its per-process and per-repetition components, what the scheduler (run
# delay) and the hypervisor (steal) took and how much of the spread they explain, and the evidence
# a paired A/B round of that configuration buys per wall-second. Decode is bound by memory
# bandwidth and prefill by compute, so a spread that only decode shows points at other tenants'
# memory traffic.
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
  for c in "$root/build/k3tune-host/apps/cli/k3tune" "$root/build/test/apps/cli/k3tune"; do
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
# rotation, the weight rotation mapped from the weight cache, rotation among weight copies). Each other row changes one factor.
base=${BASE:-'huge_pages = "on", cpus = "auto", pool_wait = "spin", warmup = 2, weight_load = "mmap"'}
# factor name | TOML pairs added to the baseline ("" = the baseline itself)
# Repetition length and process length are factors too: bench's defaults are 5 repetitions of
# 0.05 s (0.2 s until the first study of this kind showed that the spread is per process);
# the selfcheck's own are 0.02 s. STUDY_FACTORS overrides the list (same format).
factors=${STUDY_FACTORS:-$(cat <<'EOT'
defaults|
no huge pages (THP)|huge_pages = "off"
threads pinned in order|cpus = "0-1"
pool parks at once|pool_wait = "park"
warm-up 50 calls|warmup = 50
weight copies per process|weight_load = "read"
no weight rotation|copies = 1
4x repetition length|min_time_s = 0.2
0.4x repetition length|min_time_s = 0.02
3x repetitions per process|repetitions = 15
EOT
)}
cells=${STUDY_CELLS:-$(cat <<'EOT'
linear_decode|n = 2048, k = 2048|workers = 1
linear_decode|n = 2048, k = 2048|workers = 2
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

# A cell's and a factor's names, from a result cell (shared by the jq programs below).
naming='
  def cellname: "\(.op | sub("linear_"; "")) \(.shape.n)x\(.shape.k)\(if .shape.m then " m\(.shape.m)" else "" end) w\(.params.workers)";
  def factor:
    if .measure.huge_pages == "off" then "no huge pages (THP)"
    elif .measure.cpus != "auto" then "threads pinned in order"
    elif .measure.pool_wait == "park" then "pool parks at once"
    elif .measure.warmup == 50 then "warm-up 50 calls"
    elif .measure.weight_load == "read" then "weight copies per process"
    elif (.params.copies // 0) == 1 then "no weight rotation"
    elif .measure.min_time_s == 0.2 then "4x repetition length"
    elif .measure.min_time_s == 0.02 then "0.4x repetition length"
    elif .measure.repetitions == 15 then "3x repetitions per process"
    else "defaults" end;
'
# One row per factor and cell: the CV between the counted process means (standard deviation /
# mean), the robust CV (1.4826 MAD / median: the typical spread, insensitive to a rare slow
# process), and the processes left out as disturbed.
jq -r "$naming"'
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
command -v sqlite3 >/dev/null && command -v gawk >/dev/null || { echo "(component and drift analysis skipped: needs sqlite3 and gawk)"; exit 0; }

# Variance components, scheduling and evidence per wall-second. Per configuration, on log times:
#   s_rep^2  = the mean within-process variance of the repetitions;
#   s_proc^2 = the variance of the process means less s_rep^2 / r (one-way random effects,
#              method of moments; floored at 0);
#   delay, steal: what the scheduler and the hypervisor took, as a share of the measured time
#              (steal is machine-wide: divided by the CPUs), and R^2, the share of the variance
#              of the process means that a linear fit on the two shares explains;
#   evidence/s: 1 / (variance of one paired round's log ratio x its wall time), where the round
#              is two processes (A and B) of this configuration: Var = 2 (s_proc^2 + s_rep^2 / r),
#              wall = 2 x the mean process wall time (set-up, warm-up and check included). Shown
#              relative to the defaults of the same cell: above 1 buys more evidence per second.
#   r*:       the repetitions per process that maximise evidence/s at this repetition length,
#              given its components and its fixed per-process cost c = wall - r t:
#              minimise (s_proc^2 + s_rep^2 / r)(c + r t)  =>  r* = sqrt(c s_rep^2 / (t s_proc^2)).
#   within:   the same evidence for pairing inside one process: its repetitions taken in pairs
#              as A B, B A, A B, ... (the order alternates so a drift within the process cancels),
#              the process's estimate is the mean of log B - log A over its pairs, and one process
#              (its whole wall time) is one "round". Both sides here are the same configuration,
#              so this is the A/A null: Var = the variance of those estimates across processes.
#              Relative to the defaults' per-process rounds of the same cell; "bias" is the mean
#              estimate over its standard error (about N(0, 1) when the alternation is fair).
#              It holds where A and B can share a process: two parameter sets or an injected
#              slowdown of one runner, not two builds.
jq -r "$naming"'.cells[] | select(.status == "ok") | [.cell_key, cellname, factor, .measure.min_time_s] | @tsv' "$work/out.json" >"$work/names.tsv"
sqlite3 -separator $'\t' "$db" "
  SELECT p.cell_key, p.process_index, s.ns, p.kernel_ns, p.wall_ns,
         coalesce((SELECT sum(value) FROM json_each(json_extract(p.runner_json, '$.scheduling.run_delay_ns'))), -1),
         coalesce((SELECT sum(value) FROM json_each(json_extract(p.runner_json, '$.scheduling.steal_ns'))), -1)
  FROM processes p JOIN samples s USING (run_uuid, cell_key, process_index)
  WHERE p.status = 'ok' AND p.disturbed = 0
  ORDER BY p.cell_key, p.process_index, s.rep_index" >"$work/reps.tsv"
gawk -F'\t' -v cpus="$(nproc)" '
  FNR == NR { cellname[$1] = $2; factor[$1] = $3; reptime[$1] = $4; next }
  !($1 in cellname) { next }
  {
    k = $1; p = $2; x = log($3)
    if (!((k, p) in seen)) { seen[k, p] = 1; np[k]++; procs[k, np[k]] = p
      kern[k, p] = $4; wall[k, p] = $5; delay[k, p] = $6; steal[k, p] = $7 }
    nr[k, p]++; sx[k, p] += x; sxx[k, p] += x * x
    # within-process pairs: repetitions 1 2 | 3 4 | ... as A B | B A | A B ...
    if (nr[k, p] % 2 == 1) held[k, p] = x
    else { pr = nr[k, p] / 2; d = x - held[k, p]; if (pr % 2 == 0) d = -d; wd[k, p] += d; wn[k, p]++ }
  }
  function fitr2(k,   i, p, n, y, a, b, my, ma, mb, saa, sbb, sab, say, sby, syy, det, ba, bb, ssr) {
    # least squares of the process mean log time on the delay and steal shares (centred)
    n = np[k]; if (n < 4) return -1
    for (i = 1; i <= n; i++) { p = procs[k, i]; y[i] = sx[k, p] / nr[k, p]
      a[i] = delay[k, p] < 0 ? 0 : delay[k, p] / kern[k, p]; b[i] = steal[k, p] < 0 ? 0 : steal[k, p] / (kern[k, p] * cpus)
      my += y[i] / n; ma += a[i] / n; mb += b[i] / n }
    for (i = 1; i <= n; i++) { saa += (a[i] - ma) ^ 2; sbb += (b[i] - mb) ^ 2; sab += (a[i] - ma) * (b[i] - mb)
      say += (a[i] - ma) * (y[i] - my); sby += (b[i] - mb) * (y[i] - my); syy += (y[i] - my) ^ 2 }
    if (syy <= 0) return -1
    det = saa * sbb - sab * sab
    if (det > 1e-30) { ba = (say * sbb - sby * sab) / det; bb = (sby * saa - say * sab) / det; ssr = ba * say + bb * sby }
    else if (saa > 0) ssr = say * say / saa
    else if (sbb > 0) ssr = sby * sby / sbb
    else ssr = 0
    return ssr / syy
  }
  END {
    for (k in np) {
      n = np[k]; if (n < 3) continue
      w = 0; m = 0; mm = 0; r = 0; wl = 0; dl = 0; st = 0; kt = 0; stk = 0; dk = 0
      for (i = 1; i <= n; i++) { p = procs[k, i]; q = nr[k, p]; r += q / n
        w += (sxx[k, p] - sx[k, p] ^ 2 / q) / (q - 1) / n
        mu = sx[k, p] / q; m += mu / n; mm += mu * mu / n
        wl += wall[k, p] / n / 1e9; kt += kern[k, p]
        if (delay[k, p] >= 0) { dl += delay[k, p]; dk += kern[k, p] }
        if (steal[k, p] >= 0) { st += steal[k, p]; stk += kern[k, p] * cpus } }
      vb = (mm - m * m) * n / (n - 1)
      sp2 = vb - w / r; if (sp2 < 0) sp2 = 0
      round_var = 2 * (sp2 + w / r); round_wall = 2 * wl
      ev[k] = 1 / (round_var * round_wall)
      we = 0; wee = 0; wm = 0
      for (i = 1; i <= n; i++) { p = procs[k, i]; if (wn[k, p] < 1) continue
        e = wd[k, p] / wn[k, p]; we += e; wee += e * e; wm++ }
      if (wm > 2) { wv = (wee - we * we / wm) / (wm - 1)
        wev[k] = wv > 0 ? 1 / (wv * wl) : -1; wbias[k] = wv > 0 ? (we / wm) / sqrt(wv / wm) : 0 }
      else wev[k] = -1
      t = reptime[k]; c = wl - r * t; if (c < 0) c = 0
      rstar = sp2 > 0 ? sqrt(c * w / (t * sp2)) : -1
      line[k] = sprintf("%s\t%s\t%d\t%.1f%%\t%.1f%%\t%.0f%%\t%.2f%%\t%.2f%%\t%s\t%.1f s\t%s", cellname[k], factor[k], n,
        100 * sqrt(w), 100 * sqrt(sp2), vb > 0 ? 100 * sp2 / vb : 0, dk > 0 ? 100 * dl / dk : -1, stk > 0 ? 100 * st / stk : -1,
        (R = fitr2(k)) < 0 ? "-" : sprintf("%.2f", R), wl, rstar < 0 ? "inf" : sprintf("%.0f", rstar))
      if (factor[k] == "defaults") base[cellname[k]] = ev[k]
    }
    print "cell\tfactor\tprocs\tsd rep\tsd proc\tproc share\tdelay\tsteal\tR2\twall/proc\tr*\tevidence/s vs defaults\twithin (bias)"
    for (k in line) printf "%s\t%s\t%s\n", line[k], (cellname[k] in base) ? sprintf("%.2fx", ev[k] / base[cellname[k]]) : "-",
      (cellname[k] in base && wev[k] > 0) ? sprintf("%.2fx (%+.1f)", wev[k] / base[cellname[k]], wbias[k]) : "-" | "sort"
    close("sort")
  }' "$work/names.tsv" "$work/reps.tsv" | column -t -s $'\t'
echo "(sd rep / sd proc: the per-repetition and per-process components of the log-time spread; proc share: of the process means' variance; delay / steal: share of the measured time the scheduler / the hypervisor took; R2: the process-mean variance those two shares explain; r*: the repetitions per process that would buy the most evidence per second at this repetition length; within: pairing repetitions A B / B A inside one process instead, relative to the defaults, and its bias in standard errors)"

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
    for (k in vals) { m = split(vals[k], xs, " "); s = 0; s2 = 0; for (r = 1; r <= m; r++) { s += xs[r]; s2 += xs[r] ^ 2 }; if (m > 1) { var[cellof[k]] += (s2 - s * s / m) / (m - 1); nv[cellof[k]]++ } }
    for (c in pairs) if (nv[c] > 0) printf "  %-30s paired difference %.1f%%, unpaired %.1f%%\n", c, 100 * paired[c] / pairs[c], 100 * sqrt(2 * var[c] / nv[c])
  }' "$work/order.txt"
