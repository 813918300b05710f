// `k3tune table verify`: each table's entries re-measured against the defaults on the board that
// made it (or the target given), interleaved; on a farm whose scheduler runs work only in its jobs,
// each table is verified as one job on its board.
#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/cli/measuring_place.h"
#include "apps/scheduler/scheduler.h"
#include "harness/host/bench/user_error.h"
#include "tuner/table.h"
#include "tuner/verify_command.h"
#include "tuner/verify_output.h"

namespace k3cli {
namespace {

// A table verified as one job of the farm's scheduler: its output is the command's (JSON objects
// collected into `all`), its exit status counts when nothing failed before.
void relay_verify_job(const k3scheduler::JobResult& job, const std::string& file, bool json,
                      bool blank_line, bool name_the_table, nlohmann::json& all) {
  std::cerr << job.errors << std::flush;
  if (!job.fault.empty()) {
    std::cerr << "k3tune: " << file << ": " << job.fault << "\n";
    exit_code() = kProblems;
    return;
  }
  if (json) {
    const auto j = nlohmann::json::parse(job.output, nullptr, false);
    all.push_back(j.is_discarded() ? nlohmann::json{{"table", file}, {"output", job.output}} : j);
  } else {
    if (name_the_table) fmt::print("{}{}\n", blank_line ? "\n" : "", file);
    fmt::print("{}\n{}", job.job, job.output);
  }
  if (job.exit_code != 0 && exit_code() == 0) exit_code() = job.exit_code;
}

struct VerifyArgs {
  PlaceArgs place;
  k3tuner::VerifyCommand c;
  std::vector<std::string> tables;
  std::string reservation;
};

// How much each entry is measured, and in which design.
void add_verify_budget_options(CLI::App* verify, VerifyArgs& v) {
  verify
      ->add_option("--processes", v.c.processes,
                   "processes per entry (within: each holds both sides, and more follow until "
                   "--mde; rounds: per side)")
      ->capture_default_str();
  verify
      ->add_option("--design", v.c.design,
                   "within: the defaults and the table's parameters alternate repetitions A B, B "
                   "A, ... inside every process (the process-to-process spread cancels); rounds: "
                   "one process per side and round")
      ->check(CLI::IsMember({"within", "rounds"}))
      ->capture_default_str();
  verify
      ->add_option("--mde", v.c.mde,
                   "within: after --processes, add processes until the minimum detectable effect "
                   "is at most this fraction (default: each entry's verdict threshold, its op's "
                   "minimum effect in the rules raised to the noise floor; 0: exactly --processes)")
      ->check(CLI::Range(0.0, 0.99));
  verify
      ->add_option("--max-processes", v.c.max_processes,
                   "within: the most processes an entry gets while its MDE is above the target")
      ->check(CLI::Range(2, 10000))
      ->capture_default_str();
  verify->add_option("-R,--reps", v.c.settings.repetitions, "repetitions per side and process")
      ->capture_default_str();
  verify->add_option("--min-time", v.c.settings.min_time_s, "seconds per repetition at least")
      ->capture_default_str();
}

// Where a table is verified: on a farm, on the board that made it unless told otherwise.
PlaceArgs table_place(const PlaceArgs& given, const std::string& file) {
  PlaceArgs place = given;
  if (!place.farm.empty() && place.boards.empty() && place.tags.empty()) {
    const auto t = k3tuner::read_table(file);
    if (t.contains("board") && t["board"].contains("name"))
      place.boards = {t["board"]["name"].get<std::string>()};
  }
  return place;
}

// A scheduler that runs work only in its jobs verifies the table in one. Returns whether it did
// (its output relayed into `all` or printed); false: the table is verified here.
bool verify_in_farm_job(const AppContext& ctx, const VerifyArgs& v,
                        k3scheduler::FarmAndScheduler& farm, const PlaceArgs& place,
                        const std::string& file, nlohmann::json& all) {
  const bool chosen = !place.boards.empty() || !place.tags.empty();
  const auto job = farm.scheduler->run_as_one_job(
      {"table verify",
       {"--table", "--reservation"},
       {"--table", std::filesystem::absolute(file).string()},
       chosen ? k3scheduler::choose_boards(farm.farm, place.boards, place.tags)
              : std::vector<std::string>{},
       v.reservation});
  if (!job) return false;
  relay_verify_job(*job, file, ctx.json, v.tables.size() > 1 && &file != &v.tables.front(),
                   v.tables.size() > 1, all);
  return true;
}

// One table verified where `place` says, its result printed or added to `all`.
void verify_table_here(const AppContext& ctx, const VerifyArgs& v, const PlaceArgs& place,
                       const std::string& file, nlohmann::json& all) {
  k3tuner::VerifyCommand c = v.c;
  c.table = file;
  const MeasuringPlace where(ctx, place);
  c.command_line = "k3tune table verify --table " + file + " (" + where.describe() + ")";
  const auto out = k3tuner::run_verify(where.target(), c);
  if (out.slower > 0 || out.failed > 0) exit_code() = kProblems;
  if (ctx.json) {
    all.push_back(k3tuner::verify_json(out, file, c.design));
    return;
  }
  if (v.tables.size() > 1) fmt::print("{}{}\n", &file == &v.tables.front() ? "" : "\n", file);
  k3tuner::print_verify(out, c.design);
}

void run_table_verify(const AppContext& ctx, VerifyArgs& v) {
  v.c.root = ctx.root;
  v.c.db_path = ctx.db_path();
  if (v.place.farm.empty() && !v.reservation.empty())
    throw k3bench::UserError("--reservation: a Slurm farm's option; give --farm");
  std::optional<k3scheduler::FarmAndScheduler> farm;
  if (!v.place.farm.empty()) farm = k3scheduler::open_farm(v.place.farm, ctx.caller());
  nlohmann::json all = nlohmann::json::array();
  for (const auto& file : v.tables) {
    const PlaceArgs place = table_place(v.place, file);
    if (farm && verify_in_farm_job(ctx, v, *farm, place, file, all)) continue;
    verify_table_here(ctx, v, place, file, all);
  }
  // One table: its object (as before); several: {"tables": [...]}.
  if (ctx.json)
    std::cout << (all.size() == 1 ? all[0] : nlohmann::json{{"tables", all}}).dump(2) << "\n";
}

}  // namespace

void add_table_verify_command(CLI::App* table, AppContext& ctx) {
  auto v = std::make_shared<VerifyArgs>();
  auto* verify = table->add_subcommand("verify",
                                       "re-measure the table's choices against the defaults, "
                                       "interleaved: realised speed-up per entry");
  verify
      ->add_option(
          "--table", v->tables,
          "table JSON (repeatable: each verified in turn; with --farm and no --board/--tag, on the "
          "board that made it)")
      ->required();
  add_place_options(verify, v->place);
  add_verify_budget_options(verify, *v);
  verify->add_option(
      "--rules", v->c.rules_file,
      "regression rules: each entry's minimum effect (default: <root>/configs/regression.toml)");
  verify->add_flag("--force", v->c.force,
                   "measure a table made for another board, or on an emulated target");
  verify->add_option("--reservation", v->reservation,
                     "a farm scheduled by Slurm: run the verification's jobs in this reservation");
  verify->callback([&ctx, v] { run_table_verify(ctx, *v); });
}

}  // namespace k3cli
