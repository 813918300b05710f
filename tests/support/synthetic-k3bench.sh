#!/usr/bin/env bash
# A runner whose times are planted, for end-to-end tests of timed verdicts (a confirmed or refuted
# slowdown, a board's runner slower than last night's) whose outcome must not depend on what else
# the machine runs: the real k3bench does everything -- facts, op list, the case and its accuracy
# check, the repetitions -- and then each repetition's time is replaced by NS nanoseconds per call
# times (1 + a uniform draw in +-0.5%), with no disturbance flags and no scheduling readings. Two
# such runners differ exactly by the ratio of their NS: the truth of every comparison is known,
# as with the synthetic runner of the in-process statistics tests (synthetic_runner.h).
# A whole-model case (params.breakdown, the per-op split of a call) gets planted op times too: its
# NS split evenly over the op kinds and the forward's glue, plus PLANT_NS in the op named by
# K3BENCH_SYNTHETIC_PLANT=<op>:<PLANT_NS>, the wall time their sum.
# Usage: synthetic-k3bench.sh REAL_K3BENCH NS [k3bench arguments...]
# (tests write a two-line wrapper that execs this with a fixed REAL_K3BENCH and NS).
set -uo pipefail
real=$1
ns=$2
shift 2
out=$("$real" "$@")
code=$?
if [[ $out == \{* ]] && jq -e 'has("repetitions")' >/dev/null 2>&1 <<<"$out"; then
  noise=()
  for _ in $(seq 64); do noise+=("$(( RANDOM % 1001 - 500 ))"); done
  plant=${K3BENCH_SYNTHETIC_PLANT:-:0}
  jq --argjson ns "$ns" --argjson noise "[$(IFS=,; echo "${noise[*]}")]" \
     --arg plant_op "${plant%%:*}" --argjson plant_ns "${plant##*:}" '
    (if .params.breakdown.ops? then
       (.params.breakdown.ops | length) as $n | ($ns / ($n + 1)) as $each
       | .params.breakdown.ops |= map(.seconds_per_call =
           ($each + (if .op == $plant_op then $plant_ns else 0 end)) / 1e9)
       | .params.breakdown.wall_s_per_call =
           ([.params.breakdown.ops[].seconds_per_call] | add) + $each / 1e9
       | .params.breakdown.wall_s_per_call as $wall
       | .params.breakdown.ops |= map(.share = .seconds_per_call / $wall)
     else . end)
    | (if .params.breakdown.wall_s_per_call? then .params.breakdown.wall_s_per_call * 1e9
       else $ns end) as $call_ns
    | .repetitions |= [to_entries[] | .value + {
        ns: ($call_ns * (1 + $noise[.key % 64] / 100000)),
        cpu_ns: ($call_ns * (1 + $noise[.key % 64] / 100000)),
        flags: []} | del(.run_delay_ns, .steal_ns)]' <<<"$out"
else
  printf '%s\n' "$out"
fi
exit "$code"
