// `tune --seed-table OTHER.json`: a tuning carried over from another board's table. The facts a
// table's board fingerprint holds (CPUs, VLEN, TCM geometry and backend, marchid) are compared with
// this target's; a knob whose space definition does not mention any fact that differs (its range,
// default, `when`, `emulated`, and every constraint that involves it, through derived quantities
// too) starts at the seed entry's choice and is held there, while the knobs that do are searched.
// The held point is then measured against the defaults like any other choice (the entry's
// evidence), so a seed is verified with a small budget rather than trusted.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "k3k/tuning.h"
#include "tuner/space.h"

namespace k3tuner {

// The space variables of each fingerprint fact that differs between two fingerprints (the
// `board.fingerprint` of a table and of this target): cpus -> cpus; vlen -> vlen; marchid -> ime2;
// tcm backend, blocks or block bytes -> tcm_blocks, tcm_block_bytes, tcm_emulated. Keys: the
// fingerprint facts that differ.
std::map<std::string, std::set<std::string>> differing_facts(const nlohmann::json& seed_fingerprint,
                                                             const nlohmann::json& fingerprint);

// The names a knob's definition depends on: its own expressions and every constraint rule that
// involves it, directly or through a derived quantity (derived names expanded to what they use).
std::set<std::string> knob_dependencies(const SearchSpace& space, const std::string& knob);

struct SeedPlan {
  std::string entry_id;  // the seed entry used ("" when the seed has none for it)
  std::map<std::string, nlohmann::json> held;  // knob -> the seed's value
  std::vector<std::string> searched;  // knobs searched: they depend on a differing fact, or the
                                      // seed entry does not set them
  nlohmann::json to_json() const;
};

// The plan for one job: the seed's entry for op at shape (its own class, else the nearest, as the
// loader finds it, on the layer `path` or else any layer the seed has for the op), and which knobs
// keep its values. A held value must be one of the knob's values for these facts.
SeedPlan plan_seed(const k3k::TuningTable& seed, const SearchSpace& space, const std::string& op,
                   const std::string& path, const std::map<std::string, std::int64_t>& shape,
                   const std::map<std::string, std::set<std::string>>& differing,
                   const Variables& facts);

}  // namespace k3tuner
