// The IME2 layer's microkernel table: the IME2 W4B64 Linear microkernels over the RVV layer's
// table (attention and small ops run on RVV, as on the K3), and its CPU probe (probe.cpp).
#include "ime2/microkernels.h"
#include "k3k/ime2.h"
#include "rvv/microkernels.h"

#include <stdexcept>
#include <string>

namespace k3k::ime2 {

namespace {

constexpr ukernel::LinearPrefill kPrefill{"linear_prefill-w4b64-any-m8n32-ime2",
                                          ukernel::kMaxGroupRows, ukernel::reads_rowtile32_or_ime2,
                                          bind_linear_prefill_m8, rvv::bind_store_linear_tile};
constexpr ukernel::LinearDecode kDecode{"linear_decode-w4b64-any-m1n32-ime2",
                                        ukernel::reads_rowtile32_or_ime2, bind_linear_decode_m1,
                                        rvv::bind_store_linear_tile};

bool reads_ime2(const W4B64Packed& w) {
  return w.layout == W4B64Layout::kIme2;
}

W4B64Packed pack_ime2(W4B64Packed w, int rows) {
  if (rows != kW4RowTile) {
    throw std::invalid_argument("ime2 layer: weights are read in 32-row tiles, got rows=" +
                                std::to_string(rows));
  }
  return pack_w4b64(w);
}

}  // namespace

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k = [] {
    ukernel::LayerKernels t = rvv::kernels();
    t.weight_packing = {"ime2", ukernel::rowtile32_rows, pack_ime2, W4B64Layout::kIme2,
                        unpack_w4b64};
    t.embedding = {"embedding-w4b64-any-ime2", embedding_reads, embedding_row};
    t.linear_prefill = {{&kPrefill, 1}, ukernel::pick_only<kPrefill>};
    t.linear_decode = {{&kDecode, 1}, ukernel::pick_only<kDecode>};
    t.linear_decode_fp16_block_scale = {"linear_decode-w4b64-ime2-m1n32-hp-ime2", reads_ime2,
                                        bind_linear_decode_m1_fp16_block_scale,
                                        rvv::bind_store_linear_tile};
    return t;
  }();
  return k;
}

const LayerProbe& probe() {
  static const LayerProbe p{[] { return gate().refused; },
                            [] {
                              return "IME2 gate: " + gate().passed +
                                     (emulated() ? "; IME2 instructions emulated in software" : "");
                            },
                            emulated()};
  return p;
}

}  // namespace k3k::ime2
