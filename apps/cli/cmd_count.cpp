// `k3tune count`: instructions per call (and per weight / multiply-add) of kernel ops under
// qemu-user, for each riscv64 runner and VLEN, stored as a run per runner (k3::bench
// instruction_count.h has the method and the storage). Thin: parse, count, store, print.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/count_model_output.h"
#include "apps/cli/measuring_place.h"
#include "harness/host/targets/runner_facts.h"
#include "harness/host/targets/build_presets.h"
#include "harness/host/store/database.h"
#include "harness/host/bench/instruction_count.h"

namespace k3cli {
namespace {

struct Args {
  PlaceArgs place;
  std::vector<std::string> runners;  // path=binary
  std::vector<std::string> cases = {"linear_decode n=2048,k=2048",
                                    "linear_prefill m=16,n=2048,k=2048"};
  std::vector<std::string> variants;  // build presets whose runners count (with their count_path)
  std::vector<int> vlens = {128, 256, 512, 1024};
  std::string plugin;
  int jobs = 0;  // qemu processes at a time (0: one per CPU)
  double timeout_s = 3600;  // per qemu process
  bool store = true;
  ModelCountOptions model;  // --model: a whole prefill and decode step instead of op cases
};

std::pair<std::string, std::string> split(const std::string& text, char sep,
                                          const std::string& option) {
  const auto at = text.find(sep);
  if (at == std::string::npos || at == 0 || at + 1 == text.size())
    throw k3bench::UserError(fmt::format("{}: expected '<a>{}<b>', got '{}'", option, sep, text));
  return {text.substr(0, at), text.substr(at + 1)};
}

std::string fixed(double v, int decimals) {
  return fmt::format("{:.{}f}", v, decimals);
}

k3bench::CountTools count_tools(const AppContext& ctx, const Args& a) {
  k3bench::CountTools tools;
  tools.timeout_s = a.timeout_s;
  tools.plugin =
      a.plugin.empty() ? ctx.root + "/build/third_party/qemu-plugin/libinsn_count.so" : a.plugin;
  if (!std::filesystem::exists(tools.plugin))
    throw k3bench::UserError(fmt::format(
        "--plugin: {} is missing (bash scripts/build-qemu-plugin.sh builds it)", tools.plugin));
  return tools;
}

// --farm: the board's own runner, under its own emulator, at its VLEN, counted on the board. Adds
// that runner to `runners` and sets `vlens` to the board's.
std::unique_ptr<MeasuringPlace> counting_board(
    const AppContext& ctx, const Args& a, const CLI::App& cmd,
    std::vector<std::pair<std::string, std::string>>& runners, std::vector<int>& vlens) {
  if (!runners.empty() || !a.variants.empty())
    throw k3bench::UserError("--farm: counts the board's own runner (no --runner or --variant)");
  if (cmd.get_option("--vlens")->count() > 0)
    throw k3bench::UserError("--vlens: a board counts at its own VLEN (its exec prefix)");
  auto place = std::make_unique<MeasuringPlace>(ctx, a.place);
  const auto& t = place->target();
  if (!t.emulated())
    throw k3bench::UserError(
        fmt::format("--farm: board {} runs natively: instructions are counted under "
                    "qemu-user (a board whose exec prefix is qemu-user)",
                    t.name()));
  const k3targets::RunnerFacts f = k3targets::read_runner_facts(t);
  if (!f.vlen_bits)
    throw k3bench::UserError(fmt::format("--farm: board {} reports no VLEN", t.name()));
  vlens = {*f.vlen_bits};
  runners.emplace_back(f.path, t.runner_path());
  return place;
}

// --variant: a preset's tree, counted with its count_path.
std::pair<std::string, std::string> preset_runner(const AppContext& ctx, const std::string& name) {
  k3targets::BuildPreset p;
  try {
    p = k3targets::find_build_preset(ctx.root, name);
  } catch (const k3targets::PresetError& e) {
    throw k3bench::UserError(fmt::format("--variant: {}", e.what()));
  }
  if (p.count_path.empty())
    throw k3bench::UserError(
        fmt::format("--variant: preset '{}' is not a riscv64 tree that counts "
                    "(CMakePresets.json gives it no count_path)",
                    name));
  const std::string bin = k3targets::runner_binary(p.binary_dir);
  if (!std::filesystem::exists(bin))
    throw k3bench::UserError(fmt::format("--variant: {} is not built ({} is missing)", name, bin));
  return {p.count_path, bin};
}

// The trees CMakePresets.json names for counting (vendor k3tune.count_path), when built: per
// path the first built one in file order, so the runner variants (`k3tune build --variant
// rvv|ime2-emu`) come before the test trees.
std::vector<std::pair<std::string, std::string>> built_counting_trees(const AppContext& ctx) {
  std::vector<std::pair<std::string, std::string>> runners;
  std::string looked;
  for (const auto& p : k3targets::load_build_presets(ctx.root)) {
    if (p.count_path.empty()) continue;
    const bool have = std::any_of(runners.begin(), runners.end(),
                                  [&](const auto& r) { return r.first == p.count_path; });
    const std::string bin = k3targets::runner_binary(p.binary_dir);
    looked += (looked.empty() ? "" : ", ") + bin;
    if (!have && std::filesystem::exists(bin)) runners.emplace_back(p.count_path, bin);
  }
  if (runners.empty())
    throw k3bench::UserError(
        fmt::format("--runner: no riscv64 k3bench in {} (build them first)", looked));
  return runners;
}

// --model: a whole prefill and decode step, counted here under qemu-user.
void count_whole_model(const AppContext& ctx, const Args& a, const CLI::App& cmd,
                       const std::vector<std::pair<std::string, std::string>>& runners,
                       const k3bench::CountTools& tools, bool on_board) {
  if (on_board) throw k3bench::UserError("--model: counted here under qemu-user (not with --farm)");
  if (cmd.get_option("--case")->count() > 0)
    throw k3bench::UserError("--model: counts the model's own forward (no --case)");
  ModelCountOptions m = a.model;
  m.store = a.store;
  m.jobs = a.jobs;
  std::vector<int> model_vlens = a.vlens;
  if (cmd.get_option("--vlens")->count() == 0) model_vlens = {256, 1024};
  run_model_count(ctx, m, runners, model_vlens, tools);
}

// One counted case: a row of the table, or an object of the JSON array `out`.
void report_case(const AppContext& ctx, const std::string& path, const std::string& bin,
                 const k3bench::CountCase& c, const k3bench::CountResult& r, nlohmann::json& out) {
  const double u = r.units > 0 ? r.units : 1;
  const std::string ran = r.emulated ? r.path_taken + "(emu)" : r.path_taken;
  // The kernels' accounting of the call's bytes by source (k3bench's traffic.by_source).
  const nlohmann::json bytes = r.runner_json.is_object()
                                   ? r.runner_json.value("traffic", nlohmann::json::object())
                                         .value("by_source", nlohmann::json(nullptr))
                                   : nlohmann::json(nullptr);
  if (r.allocations.value_or(0) > 0) {
    std::cerr << fmt::format(
        "note: {} {} ({}, VLEN {}): a call allocates {} times, so its count depends on the "
        "heap's layout (the jitter measures how much)\n",
        c.op, c.shape, path, c.vlen, *r.allocations);
  }
  if (ctx.json) {
    out.push_back({{"runner", bin},
                   {"path", path},
                   {"ran", ran},
                   {"op", c.op},
                   {"shape", c.shape},
                   {"vlen", c.vlen},
                   {"ime2_per_call", r.ime2},
                   {"other_per_call", r.other},
                   {"instructions_per_call", r.instructions},
                   {"units_per_call", r.units},
                   {"jitter", r.jitter},
                   {"allocations_per_call",
                    r.allocations ? nlohmann::json(*r.allocations) : nlohmann::json(nullptr)},
                   {"per_unit", r.per_unit() ? nlohmann::json(*r.per_unit()) : nullptr},
                   {"bytes_per_call", bytes}});
  } else {
    std::cout << fmt::format(
                     "{:<6} {:<15} {:<20} {:>5} {:<9} {:>12} {:>12} {:>12} {:>9} {:>9} {:>9} "
                     "{:>12}\n",
                     path, c.op, c.shape, c.vlen, ran, fixed(r.ime2, 1), fixed(r.other, 1),
                     fixed(r.instructions, 1), r.units > 0 ? fixed(r.ime2 / u, 5) : "",
                     r.units > 0 ? fixed(r.other / u, 5) : "",
                     r.units > 0 ? fixed(r.instructions / u, 5) : "",
                     bytes.is_object() ? fixed(bytes.value("total", 0.0), 0) : "")
              << std::flush;
  }
}

// The op cases of every runner at every VLEN, a stored run per runner. `place`: the board they
// are counted on, or null (here).
void count_op_cases(const AppContext& ctx, const Args& a,
                    const std::vector<std::pair<std::string, std::string>>& runners,
                    const std::vector<int>& vlens, const k3bench::CountTools& tools,
                    const MeasuringPlace* place) {
  std::vector<std::pair<std::string, std::string>> cases;  // checked before anything is written
  for (const auto& text : a.cases) cases.push_back(split(text, ' ', "--case"));
  std::unique_ptr<k3store::Connection> db;
  if (a.store) {
    db = k3store::open_for_writing(ctx.db_path());
  }
  nlohmann::json out = nlohmann::json::array();
  if (!ctx.json) {
    std::cout << fmt::format(
        "{:<6} {:<15} {:<20} {:>5} {:<9} {:>12} {:>12} {:>12} {:>9} {:>9} {:>9} {:>12}\n", "path",
        "op", "shape", "vlen", "ran", "ime2/call", "other/call", "total/call", "ime2/unit",
        "other/unit", "total/unit", "bytes/call");
  }
  for (const auto& [path, bin] : runners) {
    std::vector<k3bench::CountCase> todo;
    for (const auto& [op, shape] : cases)
      for (int vlen : vlens) todo.push_back({bin, path, op, shape, vlen, place ? &place->target() : nullptr});
    // Cases in parallel, one qemu process each, printed in order; a board counts one at a time.
    const int jobs = place ? 1 : a.jobs > 0 ? a.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const auto results =
        k3bench::count_cases(tools, todo, jobs, [&](std::size_t i, const k3bench::CountResult& r) {
          report_case(ctx, path, bin, todo[i], r, out);
        });
    if (db) {
      const std::string run_uuid = k3bench::store_counts(*db, "k3tune count", results);
      if (!ctx.json) std::cout << fmt::format("stored: run {} ({})\n", run_uuid, ctx.db_path());
      for (std::size_t i = out.size() - results.size(); ctx.json && i < out.size(); ++i) out[i]["run_uuid"] = run_uuid;
    }
  }
  if (ctx.json) std::cout << out.dump(2) << "\n";
}

void run(const AppContext& ctx, const Args& a, const CLI::App& cmd) {
  const k3bench::CountTools tools = count_tools(ctx, a);
  std::vector<std::pair<std::string, std::string>> runners;
  for (const auto& r : a.runners) runners.push_back(split(r, '=', "--runner"));
  std::unique_ptr<MeasuringPlace> place;
  std::vector<int> vlens = a.vlens;
  if (!a.place.farm.empty()) place = counting_board(ctx, a, cmd, runners, vlens);
  for (const auto& name : a.variants) runners.push_back(preset_runner(ctx, name));
  if (runners.empty() && !place) runners = built_counting_trees(ctx);
  for (const auto& [path, bin] : runners) {
    if (!std::filesystem::exists(bin))
      throw k3bench::UserError(fmt::format("--runner: {} does not exist", bin));
  }
  if (!a.model.model.empty())
    return count_whole_model(ctx, a, cmd, runners, tools, place != nullptr);
  count_op_cases(ctx, a, runners, vlens, tools, place.get());
}

}  // namespace

void add_count_command(CLI::App& app, AppContext& ctx) {
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("count",
                                 "instructions per call, per weight (decode) and per multiply-add "
                                 "(prefill) under qemu-user, per runner and "
                                 "VLEN; IME2 emulation builds split IME2 and other instructions; "
                                 "stored as a run (metric 'instructions per call')");
  cmd->add_option(
      "--runner", args->runners,
      "<path>=<riscv64 k3bench>, repeatable (default: per path the first built tree CMakePresets.json marks count_path: rvv=build/k3tune-rvv, else build/rvv; ime2=build/k3tune-ime2-emu, else build/ime2-emu)");
  cmd->add_option("--variant", args->variants,
                  "count the runner of this build preset (repeatable; rvv, ime2-emu, test-rvv, test-ime2-emu: "
                  "CMakePresets.json's count_path names the path)");
  cmd->add_option("--case", args->cases, "'<op> <shape>', repeatable")->capture_default_str();
  cmd->add_option("--vlens", args->vlens, "VLENs of the emulated CPU")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--plugin", args->plugin,
                  "counting plugin (default: build/third_party/qemu-plugin/libinsn_count.so)");
  cmd->add_option("-j,--jobs", args->jobs, "cases counted at a time, one qemu process each (default: one per CPU)")
      ->check(CLI::Range(0, 256));
  cmd->add_flag("!--no-store", args->store, "print only, store nothing");
  cmd->add_option("--timeout", args->timeout_s,
                  "seconds per qemu process (an IME2 emulation of Qwen3-0.6B's prefill of 128 "
                  "tokens takes about 10 minutes: the software model runs every multiply-add)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 7.0 * 24 * 3600));
  cmd->add_option("--model", args->model.model,
                  "count a whole model instead of op cases: a prefill of --prefill tokens and a "
                  "decode step at --depth (VLENs 256 and 1024 unless --vlens), the per-op "
                  "breakdown, and a modelled K3 tokens/s beside the published figures");
  cmd->add_option("--prefill", args->model.prefill_tokens, "--model: prompt tokens of the prefill")
      ->capture_default_str();
  cmd->add_option("--depth", args->model.depth, "--model: tokens in the context of the decode step")
      ->capture_default_str();
  add_place_options(cmd, args->place, false);
  cmd->callback([&ctx, args, cmd] { run(ctx, *args, *cmd); });
}

}  // namespace k3cli
