// What a k3bench runner says about itself and its machine (`k3bench --facts --json`), parsed once
// for every host-side reader: build records, the tuner's target facts, `k3tune probe` and the
// farm's health probe. The runner writes the document (harness/runner/facts.cpp); this is its only
// parser.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/targets/target.h"

namespace k3targets {

struct RunnerFacts {
  // Machine.
  std::string cpu_model;
  std::vector<int> cpus_allowed;
  int cpus_online = 0;
  std::optional<int> vlen_bits;  // none: no RVV
  std::optional<std::string> marchid;
  std::string hostname;
  std::string kernel;
  // Runner build.
  std::string runner_version;
  std::string source_revision;
  std::string compiler;
  std::string build_type;
  std::string build_flags;
  std::string target_arch;
  // Kernel dispatch: the path taken by default and the IME2 gate.
  std::string path;
  std::string path_reason;
  bool path_emulated = false;  // the default path's instructions run as software models
  bool ime2_open = false;
  bool ime2_emulated = false;
  std::string ime2_reason;
  // TCM.
  std::string tcm_backend = "off";  // real | emulated | off
  std::string tcm_reason;
  int tcm_blocks = 0;
  long long tcm_block_bytes = 0;
  std::vector<int> tcm_stale_blocks;
  nlohmann::json document;  // the whole document, for records that keep it as it came

  int cpus() const { return cpus_allowed.empty() ? 1 : static_cast<int>(cpus_allowed.size()); }
  bool source_dirty() const { return source_revision.ends_with("-dirty"); }
};

struct FactsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The runner's arguments that print the document.
const std::vector<std::string>& runner_facts_args();

// Parses the document; throws FactsError naming the field that is missing or of the wrong type.
RunnerFacts parse_runner_facts(const std::string& text);

// Runs the runner on `target` and parses what it prints; throws FactsError with the target's name
// and the one-line reason when the runner fails or prints no valid document.
RunnerFacts read_runner_facts(const Target& target);

}  // namespace k3targets
