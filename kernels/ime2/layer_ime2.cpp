// The IME2 layer's microkernel table: the IME2 W4B64 Linear microkernels over the RVV layer's
// table (attention and small ops run on RVV, as on the K3), and its CPU probe (probe.cpp).
#include "ime2/microkernels.h"
#include "k3k/ime2.h"
#include "rvv/microkernels.h"

namespace k3k::ime2 {

const ukernel::LayerKernels& kernels() {
  static const ukernel::LayerKernels k = [] {
    ukernel::LayerKernels t = rvv::kernels();
    t.linear_prefill = {"linear_prefill-w4b64-any-m8n32-ime2", ukernel::kMaxGroupRows, true,
                        bind_linear_prefill_m8};
    t.linear_decode = {"linear_decode-w4b64-any-m1n32-ime2", true, bind_linear_decode_m1};
    t.linear_decode_fp16_block_scale = {"linear_decode-w4b64-ime2-m1n32-hp-ime2", true,
                                        bind_linear_decode_m1_fp16_block_scale};
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
