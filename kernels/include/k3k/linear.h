// W4B64-asymmetric Linear: y[m][n] = clamp( sa[m] * sum_b ( s[n][b] * D[m][n][b] + beta[n][b] *
// S[m][b] )
//                                          + bias[n] + residual[m][n] )
// with the exact integer parts D = sum_{k in b} qa[m][k] * (q[n][k] - 8) and S = sum_{k in b}
// qa[m][k]. Each output's blocks are reduced in ascending b by one task, so results are bitwise
// identical for every worker count and tile setting.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/quantize.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace k3k {

enum class OutputLayout {
  kRowMajor,  // [M][N]
  kC4,        // MNN's C4: [ceil(N/4)][M][4]; lanes past N are written as 0
};

// Number of floats an output (or residual) of M x N occupies in a layout.
std::int64_t output_elements(OutputLayout layout, std::int64_t m, std::int64_t n);
// Index of element (row, col) of an M x N output in a layout.
inline std::int64_t output_index(OutputLayout layout, std::int64_t m, std::int64_t n,
                                 std::int64_t row, std::int64_t col) {
  return layout == OutputLayout::kRowMajor ? row * n + col : ((col / 4) * m + row) * 4 + col % 4;
}

// The direct epilogue, applied in registers before the single store of each output.
struct LinearEpilogue {
  const float* bias = nullptr;      // [N] or null
  const float* residual = nullptr;  // same layout and size as the output, or null
  float clamp_min = -std::numeric_limits<float>::infinity();
  float clamp_max = std::numeric_limits<float>::infinity();
  OutputLayout layout = OutputLayout::kRowMajor;
};

struct LinearTiling {
  int tile_n = 64;  // output columns per task (tasks never split K), rounded up to whole weight
                    // tiles (the weights' rows per tile: a tile is computed by one task)
  int max_workers = 0;  // workers of the caller's pool that take tasks (0: all); the results do
                        // not depend on it
  // The microkernel variant by its contract name (linear_variants() lists them), or empty / "auto"
  // for the layer's default for the weights' layout on this CPU. A name the layer does not have,
  // or whose kernel does not read the weights' layout, throws std::invalid_argument.
  std::string_view ukernel = {};
  // Software prefetch distance in bytes ahead of the weight stream, 0 = off (decode; used only
  // where the build has Zicbop, k3k::prefetch_built(); results never change).
  int prefetch_bytes = 0;
};

// How the decode accumulates a 64-block. kInt32 (the default, every layer): exact int32 dot
// products, the Linear reference bound. kFp16BlockScale (ime2 path only, only when asked for): the
// IME2 `.hp` block-scale instructions accumulate s * sum x*(q-8) in fp16 per block, then fp32
// across blocks, with its own looser bound (kernels/ime2/README.md §3.1):
//   |y - Y| <= Linear bound + |sa| * sum_b gamma16_6 * |s_b| * sum_{k in b} (lo_k + 16 |hi_k|) *
//   |q_k - 8|
// with gamma16_6 = 6u / (1 - 6u), u = 2^-10, lo/hi the activation nibbles
// (reference::linear_hp_extra_bound). Needs kIme2 weights and every block scale 0 or in
// [2^-14, 0.5] (fp16-normal, no overflow); otherwise std::domain_error is thrown after the call
// (outputs unspecified).
enum class Accumulation { kInt32, kFp16BlockScale };

class TcmWorkspace;
struct TcmDecodeParams;
struct TcmGateDecision;
struct TcmPipelineStats;

// Options of the decode Linear beyond tiling (defaults: int32 accumulation, weights from DRAM).
struct LinearDecodeOptions {
  Accumulation accumulation = Accumulation::kInt32;
  // The TCM pipeline (k3k/tcm_linear.h): worker pairs stream weight slabs through their TCM blocks
  // when a workspace is given and the gate allows it; otherwise the DRAM driver runs.
  TcmWorkspace* tcm_workspace = nullptr;
  const TcmDecodeParams* tcm_params = nullptr;  // null: TcmDecodeParams{}
  // The gate decided earlier by decide_tcm_decode for this path, weight shape, pool, workspace and
  // params (it reads every block's state and words its reason: once per shape, not in every timed
  // call); null: decided in this call. A block taken since then only sends its worker to DRAM.
  const TcmGateDecision* tcm_gate = nullptr;
  TcmPipelineStats* tcm_stats = nullptr;  // receives the pipeline's statistics (zero after DRAM)
};

// Weight packing at load time: kRowTile32 weights repacked into the layout `path`'s Linear kernels
// read best on this CPU (generic: unchanged; rvv: kSignedRows with `rows` rows per tile, 0 = the
// default for the running VLEN; ime2: kIme2, rows 0 or 32). The layout is recorded in the result.
W4B64Packed pack_w4b64_for(KernelPath path, W4B64Packed rowtile32, int rows = 0);
// The kRowTile32 form of weights in any layout a layer compiled into this binary packs (the
// inverse of pack_w4b64_for; a copy for kRowTile32), for references and dumps. Throws
// std::invalid_argument when no compiled layer packs w's layout.
W4B64Packed rowtile32_of(const W4B64Packed& w);
// The rows per tile pack_w4b64_for(path, w, 0) chooses here for an n x k weight. With
// tcm_block_bytes > 0 (the decode TCM pipeline will stage tiles in blocks of that size) the tiles
// are kept small enough for two to fit in a block; pack_w4b64_for(path, w, 0) assumes no TCM.
int default_weight_rows(KernelPath path, std::int64_t n, std::int64_t k,
                        std::int64_t tcm_block_bytes = 0);

// The Linear microkernel variants of a layer (contract names), for the tuner: `prefill` and
// `decode` list every name LinearTiling::ukernel accepts on `path` (empty when the layer is not
// compiled in); default_* name what "auto" takes for weights packed like `w`.
struct LinearVariantNames {
  std::vector<std::string> prefill, decode;
};
LinearVariantNames linear_variants(KernelPath path);
std::string default_linear_decode(KernelPath path, const W4B64Packed& w);
std::string default_linear_prefill(KernelPath path, const W4B64Packed& w);

// True when software prefetch (Zicbop prefetch.r) is compiled into the streaming kernels.
bool prefetch_built();

// The dispatched Linear ops (KernelPath: k3k/dispatch.h). Weights in kRowTile32 on every path;
// the rvv path also reads kSignedRows and the ime2 path kIme2 (pack_w4b64_for); a layout a path
// does not read throws std::invalid_argument.
// Prefill ("M4"): activations in the kRowsM4 layout, any M.
void linear_prefill_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, float* out, WorkerPool& pool,
                          const LinearTiling& tiling = {});
// Decode ("M1"): activations in the kRowK256 layout (M = 1). The one decode entry point: DRAM or
// TCM, int32 or (ime2) fp16 block-scale accumulation, by `options`.
void linear_decode_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                         const LinearEpilogue& ep, float* out, WorkerPool& pool,
                         const LinearTiling& tiling = {}, const LinearDecodeOptions& options = {});

}  // namespace k3k
