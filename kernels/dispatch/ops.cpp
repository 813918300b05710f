// The dispatched ops: each hands its driver the chosen layer's microkernels (the only switch over
// layers is dispatch/layers.cpp).
#include <stdexcept>
#include <string>

#include "dispatch/layers.h"
#include "drivers/drivers.h"
#include "k3k/attention.h"
#include "k3k/embedding.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/packed_form.h"
#include "k3k/quantize.h"
#include "k3k/small_ops.h"
#include "k3k/tcm_attention.h"
#include "k3k/tcm_linear.h"

namespace k3k {

using dispatch::usable_kernels;

void quantize_pack_prefill(KernelPath path, const float* a, PackedActivations& out,
                           WorkerPool& pool) {
  driver::quantize_pack_prefill(usable_kernels(path, "quantize_pack_prefill").quantize, a, out,
                                pool);
}

void quantize_pack_decode(KernelPath path, const float* a, PackedActivations& out) {
  driver::quantize_pack_decode(usable_kernels(path, "quantize_pack_decode").quantize, a, out);
}

namespace {

// The variant of a Linear microkernel a call runs: the one named in the tiling, or the layer's
// default for the weights; a name the layer lacks, or no kernel for the layout, throws.
template <typename Kernel>
const Kernel& linear_variant(const ukernel::LinearVariants<Kernel>& v, KernelPath path,
                             std::string_view name, const W4B64Packed& w, const char* op) {
  if (const Kernel* k = ukernel::find_variant(v, name, w)) return *k;
  std::string known;
  for (const Kernel& k : v.all) known += std::string(known.empty() ? "" : ", ") + k.name;
  if (!name.empty() && name != "auto") {
    throw std::invalid_argument(std::string(op) + ": the " + to_string(path) +
                                " layer has no microkernel '" + std::string(name) +
                                "' (it has: " + known + ")");
  }
  throw std::invalid_argument(std::string(op) + ": no " + to_string(path) +
                              " microkernel reads weights in layout " + to_string(w.layout) +
                              " with " + std::to_string(w.row_tile) + " rows per tile (" + known +
                              ")");
}

}  // namespace

W4B64Packed pack_w4b64_for(KernelPath path, W4B64Packed rowtile32, int rows) {
  const ukernel::WeightPacking& packing = usable_kernels(path, "pack_w4b64_for").weight_packing;
  if (rows == 0) rows = packing.default_rows(rowtile32.n, rowtile32.k, 0);
  return packing.pack(std::move(rowtile32), rows);
}

PackedForm packed_form_for(KernelPath path, std::int64_t n, std::int64_t k) {
  const ukernel::WeightPacking& packing = usable_kernels(path, "packed_form_for").weight_packing;
  return {packing.layout, packing.default_rows(n, k, 0)};
}

W4B64Packed rowtile32_of(const W4B64Packed& w) {
  for (const KernelPath path : {KernelPath::kGeneric, KernelPath::kRvv, KernelPath::kIme2}) {
    const dispatch::Layer* layer = dispatch::find_layer(path);
    if (layer == nullptr) continue;
    const ukernel::WeightPacking& packing = layer->kernels().weight_packing;
    if (packing.layout == w.layout) return packing.unpack(w);
  }
  throw std::invalid_argument(std::string("rowtile32_of: no layer compiled into this binary packs "
                                          "the ") +
                              to_string(w.layout) + " layout");
}

int default_weight_rows(KernelPath path, std::int64_t n, std::int64_t k,
                        std::int64_t tcm_block_bytes) {
  return usable_kernels(path, "default_weight_rows").weight_packing.default_rows(n, k, tcm_block_bytes);
}

LinearVariantNames linear_variants(KernelPath path) {
  LinearVariantNames names;
  const dispatch::Layer* compiled = dispatch::find_layer(path);
  if (compiled == nullptr) return names;
  const ukernel::LayerKernels& layer = compiled->kernels();
  for (const auto& k : layer.linear_prefill.all) names.prefill.emplace_back(k.name);
  for (const auto& k : layer.linear_decode.all) names.decode.emplace_back(k.name);
  return names;
}

std::string default_linear_decode(KernelPath path, const W4B64Packed& w) {
  const ukernel::LayerKernels& layer = usable_kernels(path, "default_linear_decode");
  return linear_variant(layer.linear_decode, path, {}, w, "default_linear_decode").name;
}

std::string default_linear_prefill(KernelPath path, const W4B64Packed& w) {
  const ukernel::LayerKernels& layer = usable_kernels(path, "default_linear_prefill");
  return linear_variant(layer.linear_prefill, path, {}, w, "default_linear_prefill").name;
}

void linear_prefill_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                          const LinearEpilogue& ep, float* out, WorkerPool& pool,
                          const LinearTiling& tiling) {
  constexpr const char* op = "linear_prefill_w4b64";
  const ukernel::LayerKernels& layer = usable_kernels(path, op);
  driver::linear_prefill(linear_variant(layer.linear_prefill, path, tiling.ukernel, w, op), a, w,
                         ep, out, pool, tiling);
}

void linear_decode_w4b64(KernelPath path, const PackedActivations& a, const W4B64Packed& w,
                         const LinearEpilogue& ep, float* out, WorkerPool& pool,
                         const LinearTiling& tiling, const LinearDecodeOptions& options) {
  constexpr const char* op = "linear_decode_w4b64";
  const ukernel::LayerKernels& layer = usable_kernels(path, op);
  const bool fp16 = options.accumulation == Accumulation::kFp16BlockScale;
  if (fp16 && layer.linear_decode_fp16_block_scale.bind == nullptr) {
    throw std::invalid_argument(
        std::string("linear_decode_w4b64: fp16 block-scale accumulation has no ") +
        to_string(path) + " microkernel (ime2 only)");
  }
  const ukernel::LinearDecode& uk =
      fp16 ? layer.linear_decode_fp16_block_scale
           : linear_variant(layer.linear_decode, path, tiling.ukernel, w, op);
  if (options.tcm_workspace != nullptr) {
    static const TcmDecodeParams kDefaults;
    const TcmDecodeParams& params = options.tcm_params != nullptr ? *options.tcm_params : kDefaults;
    TcmGateDecision decided;
    const TcmGateDecision* gate = options.tcm_gate;
    if (gate == nullptr) {
      decided = decide_tcm_decode(path, w, options.tcm_workspace, params, pool.size());
      gate = &decided;
    }
    if (gate->use_tcm) {
      const TcmPipelineStats stats = driver::linear_decode_tcm(
          uk, *gate, a, w, ep, out, pool, *options.tcm_workspace, params, tiling);
      if (options.tcm_stats != nullptr) *options.tcm_stats = stats;
      return;
    }
  }
  driver::linear_decode(uk, a, w, ep, out, pool, tiling);
  if (options.tcm_stats != nullptr) *options.tcm_stats = {};
}

void embedding_lookup_w4b64(KernelPath path, const W4B64Packed& table, const std::int32_t* tokens,
                            std::int64_t count, float* out, WorkerPool& pool) {
  driver::embedding_lookup(usable_kernels(path, "embedding_lookup_w4b64").embedding, table, tokens,
                           count, out, pool);
}

void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q,
                       std::int64_t tokens, int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling, float scale) {
  driver::attention_prefill(usable_kernels(path, "attention_prefill").attention_prefill, cache, q,
                            tokens, n_q_heads, out, pool, tiling, scale);
}

void attention_prefill(KernelPath path, const KvCache& cache, std::span<const float> q,
                       std::int64_t tokens, int n_q_heads, std::span<float> out, WorkerPool& pool,
                       const AttentionTiling& tiling, float scale,
                       const AttentionPrefillOptions& options) {
  const ukernel::AttentionPrefill& uk =
      usable_kernels(path, "attention_prefill").attention_prefill;
  if (options.tcm_stats != nullptr) *options.tcm_stats = {};
  if (options.tcm_workspace != nullptr) {
    static const TcmAttentionParams kDefaults;
    const TcmAttentionParams& params =
        options.tcm_params != nullptr ? *options.tcm_params : kDefaults;
    TcmAttentionGate decided;
    const TcmAttentionGate* gate = options.tcm_gate;
    if (gate == nullptr) {
      validate(tiling, "attention_prefill");
      decided = decide_tcm_attention_prefill(cache, tokens, tiling, options.tcm_workspace, params);
      gate = &decided;
    }
    if (gate->use_tcm) {
      const TcmAttentionStats stats =
          driver::attention_prefill_tcm(uk, *gate, cache, q, tokens, n_q_heads, out, pool, tiling,
                                        scale, *options.tcm_workspace, params);
      if (options.tcm_stats != nullptr) *options.tcm_stats = stats;
      return;
    }
  }
  driver::attention_prefill(uk, cache, q, tokens, n_q_heads, out, pool, tiling, scale);
}

void attention_decode(KernelPath path, const KvCache& cache, std::span<const float> q,
                      int n_q_heads, std::span<float> out, WorkerPool& pool,
                      const DecodeTiling& tiling, float scale) {
  driver::attention_decode(usable_kernels(path, "attention_decode").attention_decode, cache, q,
                           n_q_heads, out, pool, tiling, scale);
}

void kv_append(KernelPath path, KvCache& cache, std::span<const float> k, std::span<const float> v,
               std::int64_t tokens, WorkerPool& pool) {
  driver::kv_append(usable_kernels(path, "kv_append").kv_append, cache, k, v, tokens, pool);
}

void kv_append_one(KernelPath path, KvCache& cache, std::span<const float> k,
                   std::span<const float> v, WorkerPool& pool) {
  driver::kv_append_one(usable_kernels(path, "kv_append_one").kv_append, cache, k, v, pool);
}

void rmsnorm(KernelPath path, std::span<const float> x, std::span<const float> weight,
             std::span<float> out, std::int64_t rows, int dim, float eps, WorkerPool& pool) {
  driver::rmsnorm(usable_kernels(path, "rmsnorm").rmsnorm, x, weight, out, rows, dim, eps, pool);
}

void swiglu(KernelPath path, std::span<const float> gate, std::span<const float> up,
            std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  driver::swiglu(usable_kernels(path, "swiglu").swiglu, gate, up, out, rows, dim, pool);
}

std::int64_t argmax(KernelPath path, std::span<const float> x) {
  return driver::argmax(usable_kernels(path, "argmax").argmax, x);
}

void residual_add(KernelPath path, std::span<const float> a, std::span<const float> b,
                  std::span<float> out, std::int64_t rows, std::int64_t dim, WorkerPool& pool) {
  driver::residual_add(usable_kernels(path, "residual_add").residual_add, a, b, out, rows, dim,
                       pool);
}

}  // namespace k3k
