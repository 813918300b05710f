// The kernels' traffic accounting (k3k/traffic.h): byte counts from the calls' arguments.
#include "k3k/traffic.h"

namespace k3k {

namespace {

constexpr std::int64_t kFloat = sizeof(float);

std::int64_t pack_bytes(const PackedActivations& a) {
  return static_cast<std::int64_t>(a.codes.size_bytes() + a.scale.size_bytes() +
                                   a.block_sum.size_bytes());
}

std::int64_t kv_elem(const KvCache& cache) {
  return cache.dtype() == KvDtype::f16 ? static_cast<std::int64_t>(sizeof(fp16_t)) : kFloat;
}

}  // namespace

Traffic linear_traffic(const PackedActivations& a, const W4B64Packed& w, const LinearEpilogue& ep) {
  Traffic t;
  t.weights = w.code_bytes();
  t.metadata = w.pair_bytes();
  const std::int64_t out = output_elements(ep.layout, a.m, w.n) * kFloat;
  t.activations = pack_bytes(a) + out + (ep.bias != nullptr ? w.n * kFloat : 0) +
                  (ep.residual != nullptr ? out : 0);
  return t;
}

Traffic quantize_pack_traffic(const PackedActivations& pack) {
  Traffic t;
  t.activations = pack.m * pack.k * kFloat + pack_bytes(pack);
  return t;
}

Traffic embedding_traffic(const W4B64Packed& table, std::int64_t tokens) {
  Traffic t;
  t.weights = tokens * table.k / 2;
  t.metadata = tokens * table.blocks_per_row() * 2 * static_cast<std::int64_t>(sizeof(fp16_t));
  t.activations = tokens * (static_cast<std::int64_t>(sizeof(std::int32_t)) + table.k * kFloat);
  return t;
}

Traffic kv_append_traffic(const KvCache& cache, std::int64_t tokens) {
  const std::int64_t values = 2 * tokens * cache.n_kv_heads() * cache.head_dim();  // K and V
  Traffic t;
  t.kv_write = values * kv_elem(cache);
  t.activations = values * kFloat;
  return t;
}

Traffic attention_traffic(const KvCache& cache, std::int64_t queries, int n_q_heads) {
  Traffic t;
  t.kv_read = 2 * cache.visible() * cache.n_kv_heads() * cache.head_dim() * kv_elem(cache);
  t.activations = 2 * queries * n_q_heads * cache.head_dim() * kFloat;  // queries in, outputs out
  return t;
}

Traffic gdn_traffic(const GdnDims& dims, std::int64_t tokens, int chunk) {
  const std::int64_t state = dims.state_floats() * kFloat;
  const std::int64_t chunks = tokens == 1 ? 1 : (tokens + chunk - 1) / chunk;
  Traffic t;
  t.state = (tokens == 1 ? 2 : 3) * state * chunks;
  // q, k (key heads), v and the output (value heads), g and beta per value head.
  t.activations = tokens * kFloat *
                  (2 * std::int64_t(dims.k_heads) * dims.k_dim +
                   2 * std::int64_t(dims.v_heads) * dims.v_dim + 2 * std::int64_t(dims.v_heads));
  return t;
}

Traffic conv_traffic(std::int64_t rows, std::int64_t channels, int taps) {
  Traffic t;
  t.state = 2 * std::int64_t(taps - 1) * channels * kFloat;
  t.activations = (2 * rows * channels + std::int64_t(taps) * channels) * kFloat;
  return t;
}

Traffic rowwise_traffic(std::int64_t elements, int inputs, std::int64_t weights) {
  Traffic t;
  t.activations = (elements * (inputs + 1) + weights) * kFloat;
  return t;
}

Traffic argmax_traffic(std::int64_t n) {
  Traffic t;
  t.activations = n * kFloat;
  return t;
}

}  // namespace k3k
