#include "apps/nightly/nightly_profile.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "reports/runner_store.h"

namespace k3nightly {
namespace {

namespace launch = k3launch;
using Strings = std::vector<std::string>;

struct Profile {
  Strings variants{};           // build steps
  launch::Cells bench_cells{};  // cells of the farm bench
  launch::Plan bench_plan{};    // its process plan and repetitions
  Strings farm_boards{};        // empty: every board of the farm
  bool ime2_emu = false;
  launch::Cells tune_cells{};
  std::string tune_budget{};
  bool tune_qemu = false;
  launch::Cells verdict_cells{};
  launch::Plan verdict_plan{};
  Strings count_cases{};  // `k3tune count --case ...`
  std::string count_vlens{};
  Strings count_paths{};     // rvv, ime2 (its emulation build)
  Strings count_variants{};  // the build presets whose runners are counted
  // Bisect a timing regression the verdict confirms (off in quick: a night's bisection builds
  // and measures about log2(commits since the previous night) runners).
  bool bisect = false;
};

// Instruction counts at Qwen3-0.6B shapes (hidden 1024, intermediate 3072, 16/8 heads of 128).
const Strings kQuickCounts = {"linear_decode n=1024,k=1024", "linear_prefill m=16,n=1024,k=1024",
                              "attn_decode ctx=1024,q_heads=16,kv_heads=8,head_dim=128",
                              "attn_prefill seq=64,q_heads=16,kv_heads=8,head_dim=128"};

// `variants`: the build presets counted, each with its count_path (CMakePresets.json).
Profile with_counts(Profile p, Strings cases, std::string vlens,
                    std::vector<std::pair<std::string, std::string>> variants) {
  p.count_cases = std::move(cases);
  p.count_vlens = std::move(vlens);
  for (auto& [variant, path] : variants) {
    p.count_variants.push_back(variant);
    p.count_paths.push_back(path);
  }
  return p;
}

// Fixed process counts (no adaptive growth) and short repetitions: a night's budget.
launch::Plan fixed_plan(int processes) {
  return {.processes = processes, .target_ci = 0, .repetitions = 3, .min_time_s = 0.02};
}

launch::Cells decode_at(Strings shapes) {
  return {.ops = {"linear_decode"}, .shapes = std::move(shapes)};
}

Profile profile(const std::string& name) {
  // Qwen3-0.6B: hidden 1024, intermediate 3072, 16 query / 8 KV heads of 128.
  const launch::Cells two_decode = decode_at({"n=1024,k=1024", "n=3072,k=1024"});
  const std::vector<std::pair<std::string, std::string>> riscv_counts = {{"rvv", "rvv"},
                                                                         {"ime2-emu", "ime2"}};
  if (name == "quick")
    return with_counts({.variants = {"host", "rvv", "ime2-emu"},
                        .bench_cells = two_decode,
                        .bench_plan = fixed_plan(2),
                        .farm_boards = {"host", "qemu-vlen256", "qemu-vlen1024"},
                        .ime2_emu = true,
                        .tune_cells = decode_at({"n=1024,k=1024"}),
                        .tune_budget = "8",
                        .tune_qemu = true,
                        .verdict_cells = two_decode,
                        .verdict_plan = fixed_plan(6)},
                       kQuickCounts, "256,1024", riscv_counts);
  if (name == "full") {
    const launch::Cells model_decode = {.model = "qwen3-0.6b", .ops = {"linear_decode"}};
    Strings counts = kQuickCounts;
    counts.insert(counts.end(),
                  {"linear_decode n=3072,k=1024", "linear_decode n=1024,k=3072",
                   "linear_decode n=2048,k=1024", "linear_prefill m=128,n=3072,k=1024"});
    Profile full = with_counts({.variants = {"host", "rvv", "ime2-emu"},
                                .bench_cells = {.model = "qwen3-0.6b"},
                                .ime2_emu = true,
                                .tune_cells = model_decode,
                                .tune_budget = "40",
                                .tune_qemu = true,
                                .verdict_cells = model_decode},
                               counts, "256,1024", riscv_counts);
    full.bisect = true;
    return full;
  }
  if (name == "smoke")
    return with_counts({.variants = {"host"},
                        .bench_cells = decode_at({"n=1024,k=1024", "n=2048,k=1024"}),
                        .bench_plan = fixed_plan(2),
                        .farm_boards = {"host"},
                        // Tuning and the verdicts at a small shape: on a farm of qemu boards the
                        // campaign counts under emulation and the board verdict times there (CI
                        // time).
                        .tune_cells = decode_at({"n=256,k=256"}),
                        .tune_budget = "4",
                        .verdict_cells = decode_at({"n=256,k=256"}),
                        // Four interleaved pairs: with two, the paired test has one degree of
                        // freedom, and a planted 20x slowdown whose two round ratios differed by
                        // 2x read as p = 0.08.
                        .verdict_plan = fixed_plan(4)},
                       {"linear_decode n=128,k=64"}, "256", {{"test-rvv", "rvv"}});
  throw k3bench::UserError(
      fmt::format("--profile: unknown profile '{}' (quick, full, smoke)", name));
}

// The tuning plan of the timed campaigns: two processes a configuration.
launch::Plan tuning_plan() {
  return {.processes = 2, .repetitions = 3, .min_time_s = 0.02};
}
launch::Plan verify_plan() {
  return {.processes = 3, .repetitions = 3, .min_time_s = 0.02};
}

launch::OnFarm on_farm(const NightlyState& s, Strings boards = {}) {
  return {.farm = s.farm, .boards = std::move(boards), .reservation = s.reservation};
}

// Deploy + probe every board; a board that fails is quarantined and the bench goes on without it.
// On a farm whose scheduler touches boards only in its jobs (Slurm), each job deploys and probes
// the board it was given, and takes it out when it is faulty.
NightlyStep deploy_step(const Profile& p, const NightlyFarm& farm) {
  NightlyStep deploy{.name = "deploy-probe",
                     .request = [boards = p.farm_boards](const NightlyState& s) -> launch::Request {
                       return launch::FarmProbe{.farm = s.farm, .boards = boards};
                     },
                     .ok_codes = {0, 1}};
  if (farm.boards_only_in_jobs)
    deploy.skip = [scheduler = farm.scheduler](const NightlyState&) -> std::string {
      return fmt::format("{} farm: each job deploys and probes the board it is given", scheduler);
    };
  return deploy;
}

// One bench step per named board (each measures every cell), else one over the whole farm; and
// the IME2 prefill kernel under emulation.
void add_bench_steps(const Profile& p, std::vector<NightlyStep>& steps) {
  Strings bench_boards = p.farm_boards;
  if (bench_boards.empty()) bench_boards.push_back("");
  for (const auto& board : bench_boards)
    steps.push_back({.name = board.empty() ? "bench" : "bench-" + board,
                     .request = [p, board](const NightlyState& s) -> launch::Request {
                       return launch::Bench{
                           .place = on_farm(s, board.empty() ? Strings{} : Strings{board}),
                           .cells = p.bench_cells,
                           .plan = p.bench_plan,
                           .resume = true};
                     },
                     .ok_codes = {0, 3},
                     .leases = true});
  if (p.ime2_emu)
    steps.push_back({.name = "bench-ime2-emu",
                     .request = [](const NightlyState&) -> launch::Request {
                       launch::Plan plan = fixed_plan(2);
                       plan.repetitions = 2;
                       return launch::Bench{.place = launch::OnTarget{"qemu-vlen1024-ime2-emu"},
                                            .cells = {.ops = {"linear_prefill"},
                                                      .shapes = {"m=16,n=1024,k=1024"},
                                                      .path = "ime2"},
                                            .plan = plan,
                                            .resume = true};
                     },
                     .ok_codes = {0, 3},
                     // qemu-user has no /proc/cpuinfo marchid: the IME2 gate is told the K3's.
                     .env = {{"K3_IME2_ASSUME_MARCHID", "0x8000000041000002"}}});
}

// On a farm file the tables are made on the boards: one campaign (a table per board fingerprint;
// exact counts where a board is emulated, time where it is not), each timed table verified on
// the board that made it.
void add_farm_tuning_steps(const Profile& p, std::vector<NightlyStep>& steps) {
  steps.push_back({.name = "tune-farm",
                   .request = [p](const NightlyState& s) -> launch::Request {
                     return launch::Tune{.place = on_farm(s),
                                         .cells = p.tune_cells,
                                         .objective = "auto",
                                         .strategy = "coordinate",
                                         .budget = p.tune_budget,
                                         .plan = tuning_plan(),
                                         .out = s.dir + "/tables/farm.json"};
                   },
                   .ok_codes = {0, 3},
                   .leases = true});
  NightlyStep verify{.name = "verify-farm",
                     .request = [](const NightlyState& s) -> launch::Request {
                       return launch::TableVerify{
                           .place = on_farm(s),
                           .tables = timed_tables(s.details.value("tune-farm", nlohmann::json())),
                           .plan = verify_plan()};
                     },
                     .ok_codes = {0, 1},
                     .leases = true};
  verify.skip = [](const NightlyState& s) -> std::string {
    return timed_tables(s.details.value("tune-farm", nlohmann::json())).empty()
               ? "no timed table to verify (tables counted under qemu are exact)"
               : "";
  };
  steps.push_back(verify);
}

// On the built-in farm: a table timed on this machine, one counted under qemu at VLEN 1024.
void add_local_tuning_steps(const Profile& p, std::vector<NightlyStep>& steps) {
  steps.push_back({.name = "tune-local", .request = [p](const NightlyState& s) -> launch::Request {
                     return launch::Tune{.place = launch::OnTarget{"local"},
                                         .cells = p.tune_cells,
                                         .strategy = "coordinate",
                                         .budget = p.tune_budget,
                                         .plan = tuning_plan(),
                                         .out = s.dir + "/tables/local.json"};
                   }});
  if (p.tune_qemu)
    steps.push_back(
        {.name = "tune-qemu-vlen1024", .request = [p](const NightlyState& s) -> launch::Request {
           return launch::Tune{.place = launch::OnTarget{"qemu-vlen1024"},
                               .cells = p.tune_cells,
                               .objective = "instructions",
                               .strategy = "coordinate",
                               .budget = p.tune_budget,
                               .out = s.dir + "/tables/qemu-vlen1024.json"};
         }});
  // Exit 1 (an entry measured slower than the defaults, or not measurable) is the step's result,
  // not a failure: the nightly notes it and goes on (re-running would only measure again).
  steps.push_back({.name = "verify-local",
                   .request = [](const NightlyState& s) -> launch::Request {
                     return launch::TableVerify{.place = launch::OnTarget{"local"},
                                                .tables = {s.dir + "/tables/local.json"},
                                                .plan = verify_plan()};
                   },
                   .ok_codes = {0, 1}});
  if (p.tune_qemu)
    steps.push_back(
        {.name = "validate-qemu-vlen1024", .request = [](const NightlyState& s) -> launch::Request {
           return launch::TableValidate{s.dir + "/tables/qemu-vlen1024.json"};
         }});
}

// Which board of tonight's campaign judges `board`'s fingerprint: the first healthy board of its
// group ("" : this one), or why the board is not judged.
std::string board_verdict_skip(const NightlyState& s, const std::string& board) {
  const auto groups =
      s.details.value("tune-farm", nlohmann::json()).value("groups", nlohmann::json::array());
  for (const auto& g : groups) {
    const auto& boards = g.value("boards", nlohmann::json::array());
    Strings healthy;
    for (const auto& b : boards)
      if (!g.value("lost", nlohmann::json::object()).contains(b.get<std::string>()))
        healthy.push_back(b);
    if (std::find(healthy.begin(), healthy.end(), board) == healthy.end()) continue;
    return healthy.front() == board ? ""
                                    : "judged on " + healthy.front() + " (the same fingerprint)";
  }
  return "not in tonight's campaign (not taken, or lost)";
}

// On a farm file, a verdict per board fingerprint: on the first board of each fingerprint group
// of tonight's campaign, tonight's runner against the previous nightly's (kept by build hash),
// interleaved in the same rounds on that board; then its report (the paired verdict).
void add_board_verdict_steps(const Profile& p, const NightlyFarm& farm,
                             std::vector<NightlyStep>& steps) {
  for (const auto& board : farm.boards) {
    NightlyStep bench{.name = "board-verdict-" + board,
                      .request = [p, board](const NightlyState& s) -> launch::Request {
                        return launch::Bench{.place = on_farm(s, {board}),
                                             .cells = p.verdict_cells,
                                             .plan = p.verdict_plan,
                                             .baseline_runner = board_baseline(s, board).runner};
                      },
                      .ok_codes = {0, 3},
                      .leases = true};
    bench.skip = [board](const NightlyState& s) { return board_verdict_skip(s, board); };
    steps.push_back(bench);
    NightlyStep judge{.name = "board-judge-" + board,
                      .request = [board](const NightlyState& s) -> launch::Request {
                        return launch::Report{
                            s.details["board-verdict-" + board].value("run_uuid", std::string()),
                            s.dir + "/boards/" + board};
                      },
                      .ok_codes = {0, 3, 4},
                      .verdict = true};
    judge.skip = [board](const NightlyState& s) -> std::string {
      const auto d = s.details.value("board-verdict-" + board, nlohmann::json());
      if (!d.is_object() || !d.contains("build_hash"))
        return "no verdict bench on this board tonight";
      if (d.value("builds", nlohmann::json::array()).size() < 2 || !d.contains("run_uuid"))
        return "measured without a baseline: " + board_baseline(s, board).why;
      return "";
    };
    steps.push_back(judge);
  }
}

// Exact instruction counts of tonight's riscv64 runners, each path judged against the previous
// nightly's counts of the same cases (`compare`: the exact rule, exit 4 on more instructions).
void add_count_steps(const Profile& p, std::vector<NightlyStep>& steps) {
  steps.push_back({.name = "count", .request = [p](const NightlyState&) -> launch::Request {
                     return launch::Count{.vlens = p.count_vlens,
                                          .variants = p.count_variants,
                                          .cases = p.count_cases};
                   }});
  for (const auto& path : p.count_paths) {
    NightlyStep judge{.name = "count-verdict-" + path,
                      .request = [path](const NightlyState& s) -> launch::Request {
                        return launch::Compare{count_run(s.previous_counts, path),
                                               count_run(s.details["count"], path)};
                      },
                      .ok_codes = {0, 4},
                      .verdict = true};
    judge.skip = [path](const NightlyState& s) -> std::string {
      if (count_run(s.details.value("count", nlohmann::json()), path).empty())
        return "no " + path + " runner was counted tonight";
      if (count_run(s.previous_counts, path).empty())
        return "no earlier nightly counted the " + path + " runner: nothing to compare";
      return "";
    };
    steps.push_back(judge);
  }
}

// The commit that made tonight slower: the verdict's regressed cells bisected between the
// previous night's revision and tonight's, on the verdict's target. It explains the verdict and
// never changes it: whatever it ends with (a commit, a range, not reproduced: exit 1, or a
// revision it cannot use: exit 2) is in its log and detail, and the night goes on.
NightlyStep bisect_step() {
  NightlyStep bisect{.name = "bisect",
                     .request = [](const NightlyState& s) -> launch::Request {
                       return launch::Bisect{.from_nightly = s.dir, .target = "local"};
                     },
                     .ok_codes = {0, 1, 2}};
  bisect.skip = [](const NightlyState& s) -> std::string {
    const auto it = s.exit_codes.find("report");
    if (it == s.exit_codes.end() || it->second != 4)
      return "no regression confirmed tonight: nothing to bisect";
    return "";
  };
  return bisect;
}

}  // namespace

std::vector<NightlyStep> nightly_steps(const std::string& name, bool build,
                                       const NightlyFarm& farm) {
  Profile p = profile(name);
  if (!farm.builtin) {
    p.farm_boards.clear();
    for (const auto& v : farm.variants)
      if (std::find(p.variants.begin(), p.variants.end(), v) == p.variants.end())
        p.variants.push_back(v);
  }
  std::vector<NightlyStep> steps;
  if (build)
    for (const auto& v : p.variants)
      steps.push_back(
          {.name = "build-" + v,
           .request = [v](const NightlyState&) -> launch::Request { return launch::Build{v}; }});
  steps.push_back(deploy_step(p, farm));
  add_bench_steps(p, steps);
  if (!farm.builtin) {
    add_farm_tuning_steps(p, steps);
    add_board_verdict_steps(p, farm, steps);
  } else {
    add_local_tuning_steps(p, steps);
  }
  // Today's host runner, interleaved with the previous nightly's kept runner when there is one.
  // Never --resume: the baseline's cells were measured by the previous nightly and would be
  // skipped, and a paired verdict needs both builds in the same rounds of one run (a cut-short
  // verdict bench is measured again from the start; it is the smallest step).
  steps.push_back({.name = "verdict-bench",
                   .request = [p](const NightlyState& s) -> launch::Request {
                     return launch::Bench{.place = launch::OnTarget{"local"},
                                          .cells = p.verdict_cells,
                                          .plan = p.verdict_plan,
                                          .baseline_runner = s.baseline_runner};
                   },
                   .ok_codes = {0, 3}});
  if (!p.count_cases.empty()) add_count_steps(p, steps);
  steps.push_back(
      {.name = "report",
       .request = [](const NightlyState& s) -> launch::Request {
         return launch::Report{s.details["verdict-bench"].value("run_uuid", std::string()), s.dir};
       },
       .ok_codes = {0, 3, 4},
       .verdict = true});
  if (p.bisect) steps.push_back(bisect_step());
  return steps;
}

std::vector<std::string> timed_tables(const nlohmann::json& tune_detail) {
  std::vector<std::string> out;
  if (!tune_detail.is_object() || !tune_detail.contains("groups")) return out;
  for (const auto& g : tune_detail["groups"]) {
    const std::string table = g.value("table", "");
    if (!table.empty() && g.value("objective", "") == "time") out.push_back(table);
  }
  return out;
}

BoardBaseline board_baseline(const NightlyState& s, const std::string& board) {
  BoardBaseline b;
  const auto it = s.previous_steps.find("board-verdict-" + board);
  if (it == s.previous_steps.end()) {
    b.why = "no earlier nightly measured this board";
    return b;
  }
  b.nightly = it->second.value("nightly", "");
  const std::string hash =
      it->second.value("detail", nlohmann::json::object()).value("build_hash", "");
  const auto mine = s.board_runner.find(board);
  if (mine != s.board_runner.end() && !hash.empty() && std::filesystem::exists(mine->second) &&
      k3bench::sha256_file(mine->second) == hash) {
    b.why = fmt::format("the same runner as nightly {}: the code did not change", b.nightly);
    return b;
  }
  const auto kept = k3reports::find_runner(s.runners_dir, hash, "");
  if (kept.path.empty()) {
    b.why = fmt::format("the runner of nightly {} ({}) was not kept: {}", b.nightly,
                        hash.substr(0, 12), kept.note);
    return b;
  }
  b.runner = kept.path;
  return b;
}

std::string count_run(const nlohmann::json& count_detail, const std::string& path) {
  if (!count_detail.is_object() || !count_detail.contains("counts")) return "";
  for (const auto& row : count_detail["counts"])
    if (row.value("path", "") == path && row.contains("run_uuid")) return row["run_uuid"];
  return "";
}

}  // namespace k3nightly
