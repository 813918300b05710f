#include "apps/nightly/nightly_profile.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/user_error.h"
#include "reports/runner_store.h"

namespace k3nightly {
namespace {

using Args = std::vector<std::string>;

Args cat(Args a, const Args& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct Profile {
  std::vector<std::string> variants;     // build steps
  Args bench_cells;                      // cells of the farm bench
  Args bench_plan;                       // its process plan and repetitions
  std::vector<std::string> farm_boards;  // empty: every board of the farm
  bool ime2_emu = false;
  Args tune_shape;
  std::string tune_budget;
  bool tune_qemu = false;
  Args verdict_cells;
  Args verdict_plan;
  Args count_cases{};  // `k3tune count --case ...`
  std::string count_vlens{};
  std::vector<std::string> count_paths{};     // rvv, ime2 (its emulation build)
  std::vector<std::string> count_variants{};  // the build presets whose runners are counted
  // Bisect a timing regression the verdict confirms (off in quick: a night's bisection builds
  // and measures about log2(commits since the previous night) runners).
  bool bisect = false;
};

// Instruction counts at Qwen3-0.6B shapes (hidden 1024, intermediate 3072, 16/8 heads of 128).
const Args kQuickCounts = {"--case", "linear_decode n=1024,k=1024",
                           "--case", "linear_prefill m=16,n=1024,k=1024",
                           "--case", "attn_decode ctx=1024,q_heads=16,kv_heads=8,head_dim=128",
                           "--case", "attn_prefill seq=64,q_heads=16,kv_heads=8,head_dim=128"};

// `variants`: the build presets counted, each with its count_path (CMakePresets.json).
Profile with_counts(Profile p, Args cases, std::string vlens,
                    std::vector<std::pair<std::string, std::string>> variants) {
  p.count_cases = std::move(cases);
  p.count_vlens = std::move(vlens);
  for (auto& [variant, path] : variants) {
    p.count_variants.push_back(variant);
    p.count_paths.push_back(path);
  }
  return p;
}

Profile profile(const std::string& name) {
  // Qwen3-0.6B: hidden 1024, intermediate 3072, 16 query / 8 KV heads of 128.
  const Args two_decode = {"--op",          "linear_decode", "--shape",
                           "n=1024,k=1024", "--shape",       "n=3072,k=1024"};
  const Args quick_plan = {"-P", "2", "--target-ci", "0", "-R", "3", "--min-time", "0.02"};
  if (name == "quick")
    return with_counts({{"host", "rvv", "ime2-emu"},
                        two_decode,
                        quick_plan,
                        {"host", "qemu-vlen256", "qemu-vlen1024"},
                        true,
                        {"--op", "linear_decode", "--shape", "n=1024,k=1024"},
                        "8",
                        true,
                        two_decode,
                        {"-P", "6", "--target-ci", "0", "-R", "3", "--min-time", "0.02"}},
                       kQuickCounts, "256,1024", {{"rvv", "rvv"}, {"ime2-emu", "ime2"}});
  if (name == "full") {
    Profile full = with_counts(
        {{"host", "rvv", "ime2-emu"},
         {"--model", "qwen3-0.6b"},
         {},
         {},
         true,
         {"--model", "qwen3-0.6b", "--op", "linear_decode"},
         "40",
         true,
         {"--model", "qwen3-0.6b", "--op", "linear_decode"},
         {}},
        cat(kQuickCounts, {"--case", "linear_decode n=3072,k=1024", "--case",
                           "linear_decode n=1024,k=3072", "--case", "linear_decode n=2048,k=1024",
                           "--case", "linear_prefill m=128,n=3072,k=1024"}),
        "256,1024", {{"rvv", "rvv"}, {"ime2-emu", "ime2"}});
    full.bisect = true;
    return full;
  }
  if (name == "smoke")
    return with_counts(
        {{"host"},
         {"--op", "linear_decode", "--shape", "n=1024,k=1024", "--shape", "n=2048,k=1024"},
         quick_plan,
         {"host"},
         false,
         // Tuning and the verdicts at a small shape: on a farm of qemu boards the campaign
         // counts under emulation and the board verdict times there (CI time).
         {"--op", "linear_decode", "--shape", "n=256,k=256"},
         "4",
         false,
         {"--op", "linear_decode", "--shape", "n=256,k=256"},
         // Four interleaved pairs: with two, the paired test has one degree of freedom, and a
         // planted 20x slowdown whose two round ratios differed by 2x read as p = 0.08.
         {"-P", "4", "--target-ci", "0", "-R", "3", "--min-time", "0.02"}},
        {"--case", "linear_decode n=128,k=64"}, "256", {{"test-rvv", "rvv"}});
  throw k3bench::UserError(
      fmt::format("--profile: unknown profile '{}' (quick, full, smoke)", name));
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
      steps.push_back({"build-" + v, [v](const NightlyState&) {
                         return Args{"build", "--variant", v};
                       }});
  // Deploy + probe every board; a board that fails is quarantined and the bench goes on without it.
  // On a farm whose scheduler touches boards only in its jobs (Slurm), each job deploys and probes
  // the board it was given, and takes it out when it is faulty.
  NightlyStep deploy{"deploy-probe",
                     [p](const NightlyState& s) {
                       Args a{"farm", "probe", "--farm", s.farm};
                       for (const auto& b : p.farm_boards) a = cat(a, {"--board", b});
                       return a;
                     },
                     {0, 1}};
  if (farm.boards_only_in_jobs)
    deploy.skip = [scheduler = farm.scheduler](const NightlyState&) -> std::string {
      return fmt::format("{} farm: each job deploys and probes the board it is given", scheduler);
    };
  steps.push_back(deploy);
  // One bench step per named board (each measures every cell), else one over the whole farm.
  std::vector<std::string> bench_boards = p.farm_boards;
  if (bench_boards.empty()) bench_boards.push_back("");
  for (const auto& board : bench_boards)
    steps.push_back({board.empty() ? "bench" : "bench-" + board,
                     [p, board](const NightlyState& s) {
                       Args a{"--json", "bench", "--farm", s.farm, "--resume"};
                       if (!board.empty()) a = cat(a, {"--board", board});
                       if (!s.reservation.empty()) a = cat(a, {"--reservation", s.reservation});
                       return cat(cat(a, p.bench_cells), p.bench_plan);
                     },
                     {0, 3},
                     k3bench::ChildOutput::kBench,
                     false,
                     true});
  if (p.ime2_emu)
    steps.push_back({"bench-ime2-emu",
                     [](const NightlyState&) {
                       return Args{"--json",
                                   "bench",
                                   "--target",
                                   "qemu-vlen1024-ime2-emu",
                                   "--resume",
                                   "--op",
                                   "linear_prefill",
                                   "--shape",
                                   "m=16,n=1024,k=1024",
                                   "--path",
                                   "ime2",
                                   "-P",
                                   "2",
                                   "--target-ci",
                                   "0",
                                   "-R",
                                   "2",
                                   "--min-time",
                                   "0.02"};
                     },
                     {0, 3},
                     k3bench::ChildOutput::kBench,
                     false,
                     false,
                     // qemu-user has no /proc/cpuinfo marchid: the IME2 gate is told the K3's.
                     {{"K3_IME2_ASSUME_MARCHID", "0x8000000041000002"}}});
  if (!farm.builtin) {
    // On a farm file the tables are made on the boards: one campaign (a table per board
    // fingerprint; exact counts where a board is emulated, time where it is not), each timed
    // table verified on the board that made it.
    steps.push_back(
        {"tune-farm",
         [p](const NightlyState& s) {
           Args a = cat(
               cat(Args{"--json", "tune", "--farm", s.farm, "--objective", "auto"}, p.tune_shape),
               {"--strategy", "coordinate", "--budget", p.tune_budget, "--processes", "2", "-R",
                "3", "--min-time", "0.02", "--out", s.dir + "/tables/farm.json"});
           if (!s.reservation.empty()) a = cat(a, {"--reservation", s.reservation});
           return a;
         },
         {0, 3},
         k3bench::ChildOutput::kTuneFarm,
         false,
         true});
    NightlyStep verify{
        "verify-farm",
        [](const NightlyState& s) {
          Args a{"table", "verify", "--farm", s.farm,       "--processes",
                 "3",     "-R",     "3",      "--min-time", "0.02"};
          for (const auto& t : timed_tables(s.details.value("tune-farm", nlohmann::json())))
            a = cat(a, {"--table", t});
          if (!s.reservation.empty()) a = cat(a, {"--reservation", s.reservation});
          return a;
        },
        {0, 1},
        k3bench::ChildOutput::kNone,
        false,
        true};
    verify.skip = [](const NightlyState& s) -> std::string {
      return timed_tables(s.details.value("tune-farm", nlohmann::json())).empty()
                 ? "no timed table to verify (tables counted under qemu are exact)"
                 : "";
    };
    steps.push_back(verify);
  } else {
    steps.push_back({"tune-local", [p](const NightlyState& s) {
                       return cat(cat(Args{"tune", "--target", "local"}, p.tune_shape),
                                  {"--strategy", "coordinate", "--budget", p.tune_budget,
                                   "--processes", "2", "-R", "3", "--min-time", "0.02", "--out",
                                   s.dir + "/tables/local.json"});
                     }});
    if (p.tune_qemu)
      steps.push_back({"tune-qemu-vlen1024",
                       [p](const NightlyState& s) {
                         return cat(
                             cat(Args{"tune", "--target", "qemu-vlen1024"}, p.tune_shape),
                             {"--objective", "instructions", "--strategy", "coordinate", "--budget",
                              p.tune_budget, "--out", s.dir + "/tables/qemu-vlen1024.json"});
                       },
                       {0}});
    // Exit 1 (an entry measured slower than the defaults, or not measurable) is the step's result,
    // not a failure: the nightly notes it and goes on (re-running would only measure again).
    steps.push_back({"verify-local",
                     [](const NightlyState& s) {
                       return Args{
                           "table",    "verify", "--table",     s.dir + "/tables/local.json",
                           "--target", "local",  "--processes", "3",
                           "-R",       "3",      "--min-time",  "0.02"};
                     },
                     {0, 1}});
    if (p.tune_qemu)
      steps.push_back({"validate-qemu-vlen1024", [](const NightlyState& s) {
                         return Args{"table", "validate", s.dir + "/tables/qemu-vlen1024.json"};
                       }});
  }
  // On a farm file, a verdict per board fingerprint: on the first board of each fingerprint group
  // of tonight's campaign, tonight's runner against the previous nightly's (kept by build hash),
  // interleaved in the same rounds on that board; then its report (the paired verdict).
  if (!farm.builtin) {
    for (const auto& board : farm.boards) {
      NightlyStep bench{
          "board-verdict-" + board,
          [p, board](const NightlyState& s) {
            Args a = cat(
                cat(Args{"--json", "bench", "--farm", s.farm, "--board", board}, p.verdict_cells),
                p.verdict_plan);
            const BoardBaseline base = board_baseline(s, board);
            if (!base.runner.empty()) a = cat(a, {"--baseline-runner", base.runner});
            if (!s.reservation.empty()) a = cat(a, {"--reservation", s.reservation});
            return a;
          },
          {0, 3},
          k3bench::ChildOutput::kBench,
          false,
          true};
      bench.skip = [board](const NightlyState& s) -> std::string {
        const auto groups =
            s.details.value("tune-farm", nlohmann::json()).value("groups", nlohmann::json::array());
        for (const auto& g : groups) {
          const auto& boards = g.value("boards", nlohmann::json::array());
          std::vector<std::string> healthy;
          for (const auto& b : boards)
            if (!g.value("lost", nlohmann::json::object()).contains(b.get<std::string>()))
              healthy.push_back(b);
          if (std::find(healthy.begin(), healthy.end(), board) == healthy.end()) continue;
          return healthy.front() == board
                     ? ""
                     : "judged on " + healthy.front() + " (the same fingerprint)";
        }
        return "not in tonight's campaign (not taken, or lost)";
      };
      steps.push_back(bench);
      NightlyStep judge{"board-judge-" + board,
                        [board](const NightlyState& s) {
                          return Args{
                              "report",
                              s.details["board-verdict-" + board].value("run_uuid", std::string()),
                              "-o", s.dir + "/boards/" + board};
                        },
                        {0, 3, 4},
                        k3bench::ChildOutput::kNone,
                        true};
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
  // Today's host runner, interleaved with the previous nightly's kept runner when there is one.
  // Never --resume: the baseline's cells were measured by the previous nightly and would be
  // skipped, and a paired verdict needs both builds in the same rounds of one run (a cut-short
  // verdict bench is measured again from the start; it is the smallest step).
  steps.push_back({"verdict-bench",
                   [p](const NightlyState& s) {
                     Args a =
                         cat(cat(Args{"--json", "bench", "--target", "local"}, p.verdict_cells),
                             p.verdict_plan);
                     if (!s.baseline_runner.empty())
                       a = cat(a, {"--baseline-runner", s.baseline_runner});
                     return a;
                   },
                   {0, 3},
                   k3bench::ChildOutput::kBench});
  // Exact instruction counts of tonight's riscv64 runners, each path judged against the previous
  // nightly's counts of the same cases (`compare`: the exact rule, exit 4 on more instructions).
  if (!p.count_cases.empty()) {
    steps.push_back({"count",
                     [p](const NightlyState&) {
                       Args a{"--json", "count", "--vlens", p.count_vlens};
                       for (const auto& v : p.count_variants) a = cat(a, {"--variant", v});
                       return cat(a, p.count_cases);
                     },
                     {0},
                     k3bench::ChildOutput::kCount});
    for (const auto& path : p.count_paths) {
      NightlyStep judge{"count-verdict-" + path,
                        [path](const NightlyState& s) {
                          return Args{"compare", count_run(s.previous_counts, path),
                                      count_run(s.details["count"], path)};
                        },
                        {0, 4},
                        k3bench::ChildOutput::kNone,
                        true};
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
  steps.push_back({"report",
                   [](const NightlyState& s) {
                     return Args{"report",
                                 s.details["verdict-bench"].value("run_uuid", std::string()), "-o",
                                 s.dir};
                   },
                   {0, 3, 4},
                   k3bench::ChildOutput::kNone,
                   true});
  // The commit that made tonight slower: the verdict's regressed cells bisected between the
  // previous night's revision and tonight's, on the verdict's target. It explains the verdict and
  // never changes it: whatever it ends with (a commit, a range, not reproduced: exit 1, or a
  // revision it cannot use: exit 2) is in its log and detail, and the night goes on.
  if (p.bisect) {
    NightlyStep bisect{"bisect",
                       [](const NightlyState& s) {
                         return Args{"--json", "bisect",   "--from-nightly",
                                     s.dir,    "--target", "local"};
                       },
                       {0, 1, 2},
                       k3bench::ChildOutput::kBisect};
    bisect.skip = [](const NightlyState& s) -> std::string {
      const auto it = s.exit_codes.find("report");
      if (it == s.exit_codes.end() || it->second != 4)
        return "no regression confirmed tonight: nothing to bisect";
      return "";
    };
    steps.push_back(bisect);
  }
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
