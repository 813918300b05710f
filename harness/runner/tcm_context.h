// k3bench's process-wide TCM state: the backend (opened once per requested mode) and one workspace
// per worker pool (each worker maps its block once, from its own thread).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "k3k/tcm.h"
#include "k3k/tcm_linear.h"
#include "k3k/worker_pool.h"

namespace k3runner {

struct TcmContext {
  k3k::tcm::Tcm* tcm = nullptr;  // null: backend off (or real requested and unusable)
  std::string reason;            // why this backend
};

// mode: auto | real | emulated | off. Opened once per mode and kept for the process.
const TcmContext& tcm_context(const std::string& mode);
// The backends this process opened so far (for every result's environment): one entry per
// requested mode with the backend that ran and why; empty when the op did not use TCM.
nlohmann::json tcm_contexts_json();
// The workspace of `pool` on the context's backend; null when the backend is off.
k3k::TcmWorkspace* tcm_workspace(const TcmContext& context, k3k::WorkerPool& pool);

}  // namespace k3runner
