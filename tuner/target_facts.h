// What a target is, as the search spaces and the tables need it: the facts the space
// expressions may use (cpus, vlen, ime2, tcm_blocks, tcm_block_bytes, tcm_emulated, emulated) and
// the board fingerprint a table records and the kernel library checks before it applies one.
// Read from the target's own runner (`k3bench --facts --json`), never assumed.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "tuner/expression.h"
#include "harness/host/targets/target.h"

namespace k3tuner {

struct TargetFacts {
  Variables facts;
  nlohmann::json fingerprint;  // the table's board.fingerprint (schema: marchid, vlen, cpu_model, cpus, tcm)
  bool emulated_target = false;  // qemu-user: wall time says nothing about a board
  bool ime2_emulated = false;    // the IME2 layer runs as software models (ime2-emu build)
  std::string best_path;         // the layer dispatch takes here for path=auto (ime2, rvv, generic)
  std::string describe;
};

// UserError when the runner cannot be run.
TargetFacts probe_target(const k3targets::Target& target);

// Facts of one op shape (n, k, m, head_dim, ...: every integer shape key) added to `facts`.
Variables with_shape(const Variables& facts, const nlohmann::json& shape);

}  // namespace k3tuner
