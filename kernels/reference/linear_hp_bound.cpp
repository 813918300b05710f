// The `.hp` decode's extra error term (k3k/reference/linear.h).
#include <cmath>
#include <cstdlib>

#include "k3k/reference/linear.h"

namespace k3k::reference {

std::vector<double> linear_hp_extra_bound(const W4B64Storage& w, const std::int8_t* codes,
                                          const float* sa, std::int64_t rows) {
  const double u = 0x1p-10, gamma = 6 * u / (1 - 6 * u);
  const std::int64_t n_cols = w.n, k = w.k;
  std::vector<double> extra(static_cast<std::size_t>(rows * n_cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int8_t* x = codes + r * k;
    for (std::int64_t n = 0; n < n_cols; ++n) {
      double sum = 0.0;
      for (std::int64_t b = 0; b < k / kW4BlockK; ++b) {
        double block = 0.0;
        for (std::int64_t j = b * kW4BlockK; j < (b + 1) * kW4BlockK; ++j) {
          const int hi = x[j] >> 4, lo = x[j] & 15;
          block += (lo + 16.0 * std::abs(hi)) * std::abs(static_cast<int>(w.code(n, j)) - 8);
        }
        sum += gamma * std::fabs(w4b64_pair_value(w.scale(n, b))) * block;
      }
      extra[static_cast<std::size_t>(r * n_cols + n)] = std::fabs(sa[r]) * sum;
    }
  }
  return extra;
}

}  // namespace k3k::reference
