// `k3tune tune` as a library call: the jobs (op x shape, from a model's shape list or the command
// line), each tuned in its own resumable session over its op's search space, and the table written
// from the winners. Refusals happen before anything is measured: a time objective on an emulated
// target (qemu) or on emulated features (TCM blocks that are ordinary memory) needs --force, and
// the result is then labelled as such.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/measure_settings.h"
#include "harness/host/targets/target.h"
#include "tuner/gates.h"
#include "tuner/seed_table.h"
#include "tuner/shape_rules.h"
#include "tuner/strategy.h"
#include "tuner/target_facts.h"
#include "tuner/tuning.h"

namespace k3tuner {

struct TuneCommand {
  std::string root;  // source tree: configs/spaces, configs/models, configs/schema
  std::string db_path;
  std::string model;                  // tune the shapes of configs/models/<model>.toml ...
  std::vector<std::string> ops;       // ... restricted to these ops; or with shapes: these ops
  std::vector<std::string> shapes;    // explicit shapes k=v,...
  std::string params;                 // parameters held fixed, k=v,...
  std::string spaces_dir;             // search spaces, <op>.toml (default <root>/configs/spaces)
  k3bench::MeasureSettings settings;  // how each time-objective process measures (reps, min time)
  std::string strategy = "racing";
  std::string objective = "time";  // time | instructions
  StrategyOptions options;
  int budget = 0;               // measurements per job (0: unlimited)
  std::set<std::string> flags;  // "allow-hp"
  bool force = false;           // time an emulated target / emulated features anyway
  bool explain = false;         // sizes only, nothing measured
  // Run the strategy on stored measurements only: nothing run, nothing written.
  bool replay = false;
  // Start from another board's table: knobs its differing facts do not touch are held at its
  // values.
  std::string seed_table;
  // Leave-one-shape-out over the tuned shapes: each shape's loss under the rule fitted on the
  // others, the nearest other class and the defaults (TuneOutcome::heldout); no table is written.
  bool heldout = false;
  // Name this many shapes whose measurement would most reduce the predicted loss
  // (TuneOutcome::suggestions; shape_rules.h, suggest_shapes); no table is written.
  int suggest = 0;
  std::string out;          // table path (default results/tables/...)
  bool write_table = true;  // false: tune the sessions only (a campaign's sessions on a board)
  std::string plugin;       // instructions: the qemu counting plugin
  std::string command_line;
  std::function<void(const std::string& line)> note;
  std::function<void(int used, const std::string& what)> progress;
  std::optional<int> stop_after;  // test hook (K3TUNE_TEST_TUNE_STOP_AFTER)
};

struct TuneJobOutcome {
  std::string op, role, session, space_file, note;  // note: why the job was skipped
  nlohmann::json shape;
  TuneResult result;
  bool resumed = false;
  std::vector<std::string> excluded_emulated;  // configurations left out as emulated
  SeedPlan seed;                               // --seed-table: the knobs held at the seed's values
};

struct HeldOutGroup {
  std::string op, path;
  std::vector<HeldOutShape> shapes;
  nlohmann::json to_json() const;  // per shape and the mean and worst of each column
};

struct SuggestGroup {
  std::string op, path;
  std::vector<Suggestion> shapes;
  nlohmann::json to_json() const;
};

struct TuneOutcome {
  TargetFacts facts;
  std::vector<TuneJobOutcome> jobs;
  std::vector<HeldOutGroup> heldout;      // --heldout
  std::vector<SuggestGroup> suggestions;  // --suggest
  nlohmann::json table;                   // null when nothing was tuned (or --explain)
  std::string table_path;
  std::vector<std::string>
      table_problems;  // table validate's lines: schema and loader (must be empty)
};

TuneOutcome run_tune(const k3targets::Target& target, const TuneCommand& command);

}  // namespace k3tuner
