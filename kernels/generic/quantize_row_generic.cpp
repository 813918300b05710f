// Generic quantise microkernel: absmax, then per 64-block quantise, store and sum, scalar.
#include <algorithm>
#include <cmath>

#include "generic/microkernels.h"

namespace k3k::generic {

namespace {

// Quantises one 64-element block: codes written to dst, returns their sum.
inline std::int32_t quantize_block(const float* src, detail::RowQuant rq, std::int8_t* dst) {
  std::int32_t sum = 0;
  for (int j = 0; j < 64; ++j) {
    // nearbyint rounds half to even under the default rounding mode, like RVV's vfcvt.x.f.
    const float q =
        std::clamp(std::nearbyint((src[j] * rq.prescale) * rq.inv_scale), -127.0f, 127.0f);
    dst[j] = static_cast<std::int8_t>(q);
    sum += static_cast<std::int32_t>(q);
  }
  return sum;
}

inline float row_absmax(const float* a, std::int64_t k) {
  float m = 0.0f;
  for (std::int64_t i = 0; i < k; ++i) m = std::max(m, std::fabs(a[i]));
  return m;
}

}  // namespace

const ukernel::QuantizeRowFn quantize_row = ukernel::quantize_row_with<row_absmax, quantize_block>;

}  // namespace k3k::generic
