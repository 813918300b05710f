#include "k3k/seeded_random.h"
#include "k3k/w4b64.h"

namespace k3k {

AlignedBuffer<float> make_synthetic_weights(std::int64_t n, std::int64_t k,
                                            const SyntheticWeightSpec& spec) {
  AlignedBuffer<float> w(static_cast<std::size_t>(n * k));
  SeededRandom rng(spec.seed);
  for (auto& x : w) {
    const bool outlier = rng.uniform() < spec.outlier_fraction;
    const double sd = outlier ? spec.stddev * spec.outlier_scale : spec.stddev;
    x = static_cast<float>(rng.normal(0.0, sd));
  }
  return w;
}

}  // namespace k3k
