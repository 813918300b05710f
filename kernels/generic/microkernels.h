// The generic (portable C++) layer: its microkernels, bound into one table for dispatch. Names
// follow the contracts in kernels/ukernels/.
#pragma once

#include <cstdint>
#include <memory>

#include "cpu/layer_probe.h"
#include "ukernels/layer.h"

namespace k3k::generic {

void quantize_row(const float* src, std::int64_t k, std::int8_t* codes, std::int64_t block_stride,
                  std::int32_t* block_sums, float* sa);
void linear_decode_row_tile(const std::uint8_t* codes, const float* scale, const float* beta,
                            const std::int8_t* x, const std::int32_t* sums, std::int64_t nb,
                            float acc[kW4RowTile]);
std::unique_ptr<ukernel::PrefillTileBody> bind_linear_prefill_m4(const PackedActivations& a,
                                                                 const W4B64Packed& w, WorkerPool&);
void embedding_row(const W4B64Packed& table, std::int64_t row, float* dst);

void attention_rotate_scale_q(const float* src, float* dst, int head_dim, int half,
                              const float* cos, const float* sin, float scale);
void attention_online_block(const float* q, const float* const* kp, const float* const* vp, int n,
                            int head_dim, float* s, float* blk, float& m, float& l, float* acc);
void attention_divide_row(const float* acc, float l, float* out, int head_dim);
void attention_decode_chunk(const ukernel::DecodeChunk& c);
void attention_merge_chunks(const float* acc, const float* m, const float* l, std::int64_t n_chunks,
                            int head_dim, float* out);

void kv_append_row_f32(const float* k, const float* v, float* k_dst, float* v_dst, int head_dim,
                       int half, const float* cos, const float* sin);
void kv_append_row_f16(const float* k, const float* v, fp16_t* k_dst, fp16_t* v_dst, int head_dim,
                       int half, const float* cos, const float* sin, float* scratch);

void rmsnorm_row(const float* x, const float* w, float* y, int dim, float eps);
void swiglu_range(const float* gate, const float* up, float* out, std::int64_t n);
void residual_add_range(const float* a, const float* b, float* out, std::int64_t n);

const ukernel::LayerKernels& kernels();

}  // namespace k3k::generic
