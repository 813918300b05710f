// The error models the float64 references bound a layer's float kernels with. The generic layer
// reduces in 16 fixed lanes (reference::generic_*); the rvv layer in strips whose length depends on
// VLEN (reference::rvv_*, at this CPU's vlenb). The ime2 layer runs the rvv layer's kernels for
// every op but Linear (kernels/ime2/layer_ime2.cpp); Linear's and the integer ops' bounds do not
// depend on the layer. A new layer adds its case to reduction_of.
#pragma once

#include <cstdint>
#include <vector>

#include "k3k/attention.h"
#include "k3k/cpu.h"
#include "k3k/dispatch.h"
#include "k3k/reference/attention.h"
#include "k3k/reference/deltanet.h"

namespace k3test {

enum class Reduction { kLanes16, kVectorStrips };

inline Reduction reduction_of(k3k::KernelPath path) {
  switch (path) {
    case k3k::KernelPath::kGeneric:
      return Reduction::kLanes16;
    case k3k::KernelPath::kRvv:
    case k3k::KernelPath::kIme2:
      return Reduction::kVectorStrips;
  }
  return Reduction::kLanes16;
}

inline int vlenb() {
  return k3k::cpu_features().vlenb;
}

inline k3k::reference::AttentionErrorModel prefill_error_model(k3k::KernelPath path, int head_dim,
                                                               const k3k::AttentionTiling& tiling) {
  return reduction_of(path) == Reduction::kLanes16
             ? k3k::reference::generic_prefill_error_model(head_dim, tiling)
             : k3k::reference::rvv_prefill_error_model(head_dim, tiling);
}

inline k3k::reference::AttentionErrorModel decode_error_model(k3k::KernelPath path, int head_dim,
                                                              const k3k::DecodeTiling& tiling) {
  return reduction_of(path) == Reduction::kLanes16
             ? k3k::reference::generic_decode_error_model(head_dim, tiling)
             : k3k::reference::rvv_decode_error_model(head_dim, tiling);
}

// The Gated DeltaNet recurrence's model.
inline k3k::reference::GdnErrorModel gdn_model(k3k::KernelPath path, int k_dim, int chunk) {
  return reduction_of(path) == Reduction::kLanes16
             ? k3k::reference::generic_gdn_error_model(k_dim, chunk)
             : k3k::reference::rvv_gdn_error_model(k_dim, chunk, vlenb());
}

// The sum depth of a layer's sum of squares (RMSNorm, l2norm, gated RMSNorm); 0 is the generic
// layer's 16 lanes, which the references assume by default.
inline std::int64_t sum_depth(k3k::KernelPath path, int dim) {
  return reduction_of(path) == Reduction::kLanes16 ? 0
                                                   : k3k::reference::rvv_dot_depth(dim, vlenb());
}

// Element-wise a + b (two layers' bounds: how far apart two outputs within them may be).
inline std::vector<double> sum_of(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> s(a.size());
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = a[i] + b[i];
  return s;
}

}  // namespace k3test
