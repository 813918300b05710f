// `k3tune bisect`: from "it got slower between these two revisions" to the commit that did it.
//
// Every probed commit's runner (CommitRunners: a worktree per commit, the variant's preset,
// ccache, kept by build hash) is measured against the good revision's runner:
//  - time: the paired A/B of `bench --baseline-runner` (both commits inside each runner process
//    where the good commit's kernel plugin was built and loads, else both runners in the same
//    rounds, A B A B: build_pairing.h) judged by the one within-run verdict
//    (k3reports::judge_within_run). The bad
//    revision is measured first; the cases it shows slower are the regression chased, and its
//    effect E per case is the size a commit must reach. A probe is bad when a chased case is a
//    regression of at least E/2 (nearer the regression than no change), good otherwise; a probe
//    whose minimum detectable effect exceeds E cannot tell E from nothing and is measured again
//    with twice the rounds before it decides (up to `attempts` runs);
//  - instructions: exact counts under qemu-user (k3bench::count_instructions) against the good
//    runner's, judged by the exact rule (k3verdict::exact_count_verdict: a change beyond twice the
//    jitter); no statistics, one measurement per probe.
// A commit that does not build, or whose runner fails, is skipped (`git bisect skip`), and the
// search (BisectSearch) goes on around it. Every probe is stored (bisections, bisection_probes) as
// soon as it is decided.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "apps/bisect/bisect_search.h"
#include "harness/host/bench/instruction_count.h"
#include "harness/host/targets/target.h"
#include "harness/host/verdict/verdict.h"

namespace k3bisect {

// --case "<op> <shape> [params]": e.g. "linear_decode n=256,k=256 threads=1".
struct BisectCase {
  std::string op, shape, params;
  std::string label() const;
};
// UserError naming the flag for text that is not "<op> <shape> [params]".
BisectCase parse_case(const std::string& text);

struct BisectRange {
  std::string good, bad;             // full hashes
  std::vector<std::string> commits;  // after good up to bad, oldest first
};
// Resolves and checks the revisions without building anything: UserError (one line) for a
// revision git does not know, equal revisions, or a good revision that is not an ancestor of bad.
BisectRange resolve_range(const std::string& repo, const std::string& good, const std::string& bad);

struct BisectRequest {
  std::string root;  // the source tree bisected (a git checkout): configs, presets
  std::vector<BisectCase> cases;
  bool instructions = false;  // bisect on exact instruction counts instead of time
  std::string variant;        // runner preset built per commit ("" : the place's; rvv for counts)
  // time
  int processes = 6;  // rounds of the first run of a probe (doubled on each re-measurement)
  int attempts = 3;   // runs of a probe at most
  bool remeasure_disturbed =
      true;  // false: a disturbed process counts as it is (bench --no-remeasure)
  std::vector<std::pair<std::string, std::string>> settings;  // measurement settings (key, value)
  // instructions
  k3bench::CountTools tools;
  std::string count_path = "rvv";
  int vlen = 1024;
  // where things go
  std::string db_path, cache_dir, runners_dir, rules_file;
  std::string nightly_id;  // the nightly whose regression is chased ("" : none)
  int jobs = 2;            // compile jobs
  bool progress = true;
  std::string command_line;
};

struct CaseEffect {
  std::string label;
  k3verdict::Outcome outcome = k3verdict::Outcome::kNotCompared;
  double effect = 0;  // relative change against good (> 0: slower / more instructions)
  double ci_low = 0, ci_high = 0;
  double mde = 0;           // time only
  double instructions = 0;  // instructions only: per call, and the exact delta
  double delta = 0, tolerance = 0;
  int rounds = 0, attempts = 0;  // time only
  std::string verdict, run_uuid;
};

struct Probe {
  int seq = 0;
  std::size_t index = 0;  // into the range's commits
  std::string commit, title;
  ProbeOutcome outcome = ProbeOutcome::kSkip;
  std::string reason;  // skip: why
  std::string hash;
  double build_s = 0, measure_s = 0;
  std::vector<CaseEffect> cases;
};

struct BisectResult {
  std::string id;
  BisectRange range;
  bool instructions = false;  // the metric: exact instruction counts (else time)
  std::string status;         // found | range | not-reproduced | failed
  std::string why;            // not-reproduced / failed: one line
  std::vector<std::string>
      candidates;                  // found: the first bad commit; range: the commits skips hide
  std::vector<CaseEffect> chased;  // the bad revision's effects of the cases chased
  std::vector<Probe> probes;       // in probe order (the bad revision first)
  std::string good_runner;
  double wall_s = 0;
  int skipped() const;
};

// Builds the good revision's runner, checks the cases against its catalog (UserError when a case
// is unknown there: nothing measured or stored), then bisects. `place`: where time is measured
// (null for instructions, which are counted here under qemu-user). `on_probe` is called after
// each probe (for progress). A commit whose runner is the good (bad) revision's binary is good
// (bad) without measuring.
BisectResult run_bisection(const k3targets::Target* place, const BisectRequest& request,
                           const BisectRange& range,
                           const std::function<void(const Probe&)>& on_probe = {});

// The result as a small table (one row per probe: commit, outcome, effect and CI per case) and
// the verdict line.
std::string bisect_table(const BisectResult& r);

}  // namespace k3bisect
