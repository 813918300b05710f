// The "auto" Linear entry points, for engines: the layer and the weight layout are decided when the
// weights are packed (consulting the tuning table, k3k/tuning.h), and the tile width, the workers
// taken from the caller's pool, the accumulation and the TCM pipeline's settings when a call is
// made, from what was decided for the shape at pack time (no lookup in the call). An engine that
// packs with pack_linear_auto and loads a table (or sets K3_TUNING_TABLE) gets the tuned behaviour
// with no other change; without a table, the built-in defaults and the best usable layer.
// examples/engine/ shows the whole flow.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "k3k/linear.h"
#include "k3k/tcm_linear.h"
#include "k3k/tuning.h"
#include "k3k/w4b64.h"

namespace k3k {

// What a call uses for one shape, and where each value came from ("table <entry id>" or "default").
struct LinearAutoChoice {
  LinearTiling tiling;
  Accumulation accumulation = Accumulation::kInt32;
  TcmDecodeParams tcm;  // decode only
  int weight_rows = 0;  // rows per weight tile of the rvv layout (0: the default for this VLEN); pack time
  std::string entry;    // the table entry used, or "" for the defaults
  std::map<std::string, std::string> source;  // parameter -> "table <id>" | "default"
};

// Resolves op ("linear_decode" or "linear_prefill") at this path and shape against `table` (null:
// the defaults). Used at pack time; also what k3bench reports.
LinearAutoChoice choose_linear(const TuningTable* table, std::string_view op, KernelPath path,
                               const std::map<std::string, std::int64_t>& shape);

struct AutoLinearWeights {
  KernelPath path = KernelPath::kGeneric;
  W4B64Packed packed;      // in the layout `path` reads
  // "table entry <id>", "table gates/decode_path: ..." or the dispatcher's reason.
  std::string path_reason;
  const TuningTable* table = nullptr;  // the table the choices below came from (null: none)
  LinearAutoChoice decode;
  std::array<LinearAutoChoice, 21> prefill;  // by M bucket: 1, 2, 4, ..., 2^20 (larger M: the last)
  std::optional<TcmGateDecision> tcm_gate;   // set by prepare_tcm
};

// Packs `storage` for the layer the active table names for this exact shape (a linear_decode
// entry) when that layer is usable here; else the layer its gates/decode_path rule picks for this
// N x K, when usable; else the best usable layer (path_reason says which and why). An engine that
// will run decode through the TCM pipeline passes its TCM block size, so that the default rows
// per tile leave two tiles fitting in a block (a table's weight_rows wins either way).
AutoLinearWeights pack_linear_auto(const W4B64Storage& storage, std::int64_t tcm_block_bytes = 0);
// Decides the TCM pipeline's gate for these weights once (it reads every block's state); a decode
// call with `workspace` then uses the decision. Without it, decode calls run from DRAM.
void prepare_tcm(AutoLinearWeights& w, const TcmWorkspace& workspace, int pool_size);

void linear_decode_auto(const AutoLinearWeights& w, const PackedActivations& a, const LinearEpilogue& ep,
                        float* out, WorkerPool& pool, TcmWorkspace* workspace = nullptr);
void linear_prefill_auto(const AutoLinearWeights& w, const PackedActivations& a, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool);

}  // namespace k3k
