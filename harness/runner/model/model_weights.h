// A model's weights as the forward pass reads them: every projection in W4B64 packed for the path's
// layer (k3k::pack_w4b64_for: kRowTile32 on generic, kSignedRows on rvv, kIme2 on ime2; a tied
// embedding too, the lookup reads it), norms and the small per-head vectors in fp32. Synthetic and
// seeded: each 32-row tile of a matrix is generated, HQQ-quantised and packed straight into the
// matrix's buffer (never the whole float matrix: Qwen3-1.7B's fp32 embedding alone is 1.24 GB),
// tiles in parallel, each from its own seed, so the bits do not depend on the worker count.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "k3k/aligned_buffer.h"
#include "k3k/dispatch.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"
#include "harness/common/model/model_config.h"

namespace k3runner::model {

struct AttentionWeights {
  k3k::W4B64Packed q, k, v, o;  // q: [q_heads * head_dim (* 2 with the output gate)][hidden]
  k3k::AlignedBuffer<float> q_norm, k_norm;  // [head_dim] (qk_norm only)
};

struct DeltaNetWeights {
  k3k::W4B64Packed qkv, z, a, b, out;  // in_proj_qkv/z/a/b: [.][hidden]; out_proj: [hidden][v]
  k3k::AlignedBuffer<float> conv;      // [conv_kernel][conv_dim], tap-major
  k3k::AlignedBuffer<float> a_log, dt_bias;  // [v_heads]
  k3k::AlignedBuffer<float> norm;            // [v_dim], the gated RMSNorm's weight
};

struct LayerWeights {
  bool linear = false;                              // Gated DeltaNet (true) or full attention
  k3k::AlignedBuffer<float> input_norm, post_norm;  // [hidden]
  AttentionWeights attn;
  DeltaNetWeights gdn;
  k3k::W4B64Packed gate, up, down;
};

struct ModelWeights {
  k3k::W4B64Packed embedding;  // [vocab][hidden]: token lookup and the tied lm_head
  k3k::W4B64Packed lm_head;    // untied models only (n == 0 when tied)
  k3k::AlignedBuffer<float> final_norm;
  std::vector<LayerWeights> layers;

  const k3k::W4B64Packed& output_head() const { return lm_head.n > 0 ? lm_head : embedding; }
  // Bytes of every weight; and what one decode step streams: all projections, the lm_head and
  // the norms (the embedding row it looks up is noise).
  std::int64_t bytes() const;
  std::int64_t decode_bytes_per_token() const;
  // Every buffer (each matrix's codes and pairs, each vector), in one fixed order; with
  // describe(), what the weights cache keys a file by (shapes, layouts, rows per tile).
  void for_each_buffer(const std::function<void(void* data, std::size_t bytes)>& fn);
  // Every buffer, in for_each_buffer's order, replaced by a read-only view of at(bytes) that keeps
  // `owner` alive (a mapped weight file; the arrays' sizes are kept, empty ones stay empty).
  void view_buffers(const std::function<const void*(std::size_t bytes)>& at,
                    const std::shared_ptr<const void>& owner);
  std::string describe() const;
};

struct WeightOptions {
  std::uint64_t seed = 1;
  int hqq_iterations = 0;  // 0: HQQ's initial min/max scale and zero (the weights' values do not
                           // change any timing; refining zeros costs ~10x the generation time)
  // Every matrix all zero (codes 8, pairs 0) instead of generated: the shapes, layouts and bytes
  // of the real thing in no time, for what does not depend on the values (traffic accounting).
  bool zero = false;
  // Every matrix allocated at the size its packing for the path gives it (k3k::packed_form_for)
  // and never written: no page is touched. The form a loader maps a weight file onto
  // (ModelWeights::view_buffers); its values are undefined until then.
  bool unfilled = false;
};

// Generates the weights, packed for `path` (an untied embedding stays kRowTile32).
ModelWeights make_synthetic_weights(const k3model::ModelConfig& config,
                                    const WeightOptions& options, k3k::KernelPath path,
                                    k3k::WorkerPool& pool);

// One matrix, as make_synthetic_weights makes it (exposed for tests).
k3k::W4B64Packed synthetic_matrix(std::int64_t n, std::int64_t k, std::uint64_t seed, double stddev,
                                  int hqq_iterations, k3k::WorkerPool& pool);

}  // namespace k3runner::model
