// What `k3tune tune` (tune_command.h) measures with, all checked before anything is measured: the
// command's objective and strategy, its jobs (op x shape), each job's search space, the seed table,
// and where the measurements go (database, session store, measurement cache, objective).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/bench/catalog.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/store/tuning_sessions.h"
#include "harness/host/targets/target.h"
#include "tuner/measurement_cache.h"
#include "tuner/objective.h"
#include "tuner/space.h"
#include "tuner/target_facts.h"
#include "tuner/tune_command.h"

namespace k3k {
class TuningTable;
}

namespace k3tuner {

// The command with its objective resolved ("auto": counts under qemu-user, time elsewhere),
// checked before the target is even probed.
TuneCommand resolved_command(const k3targets::Target& target, const TuneCommand& command);

// A time objective where the probe found emulation (the target, or its IME2 layer) says nothing
// about a board: refused unless forced.
void refuse_emulated_timing(const TuneCommand& c, const k3targets::Target& target,
                            const TargetFacts& facts);

// The qemu plugin an instruction objective counts with; counting is refused where it cannot be
// done (a native runner, the plugin not built).
std::string counting_plugin(const TuneCommand& c, const k3targets::Target& target, bool time);

struct TuneJob {
  std::string op, role;
  nlohmann::json shape;
};

// The command's jobs: its model's shapes (configs/models), or each --op with each --shape.
std::vector<TuneJob> jobs_of(const TuneCommand& c, const k3bench::Catalog& catalog);

// --seed-table: another board's table, read and checked (the loader's form) before anything runs.
struct TuneSeed {
  nlohmann::json table;
  std::shared_ptr<const k3k::TuningTable> loaded;  // parsed once, for every job's plan
  std::string sha256;
  std::map<std::string, std::set<std::string>> differing;
};

// nullopt when no seed table is given (`path` empty).
std::optional<TuneSeed> read_seed(const std::string& path, const nlohmann::json& fingerprint);

// Each job's search space (an empty one where its op has none), checked against the runner's
// catalog and, for a time objective, against the places where timing it means something; refused
// when no job has one.
std::vector<SearchSpace> load_spaces(const TuneCommand& c, const k3bench::Catalog& catalog,
                                     const Variables& facts, const std::vector<TuneJob>& jobs,
                                     const k3targets::Target& target, bool time);

// Where the tuning's measurements go and come from: nothing for --explain; the stored ones alone
// for --replay (read-only); otherwise the database opened for writing, its session store and
// measurement cache, and the objective (a timed run, or exact counts under qemu-user).
struct Measuring {
  std::unique_ptr<k3store::Connection> db;
  std::unique_ptr<k3store::TuningSessionStore> store;
  std::unique_ptr<MeasurementCache> cache;
  std::unique_ptr<Objective> objective;
  std::string run_uuid;                     // the timed run ("" : counted or not measured)
  InstructionObjective* counter = nullptr;  // the counting objective, when it is one
};

Measuring open_measuring(const TuneCommand& c, const k3targets::Target& target,
                         const std::string& build_hash, bool time, const std::string& plugin);

}  // namespace k3tuner
