// How big the model-shape cases of the slow tests are. Under qemu a model-sized Linear with its
// float64 reference takes tens of seconds per layer, so the runs CI makes there (ctest label qemu)
// set K3_TEST_SIZE=reduced: the same K (accumulation length, blocks, bounds) on fewer output
// columns. The full sizes run natively, and under qemu in the kernels_qemu_*_full_size entries
// (label qemu-extra, scripts/test.sh with K3_TEST_EXTRA_VLENS=1).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace k3test {

inline bool reduced_test_size() {
  const char* v = std::getenv("K3_TEST_SIZE");
  return v != nullptr && std::string_view(v) == "reduced";
}

// N of a model-shape case: `full`, or `reduced` when the run asks for reduced sizes.
inline std::int64_t model_n(std::int64_t full, std::int64_t reduced) {
  return reduced_test_size() ? reduced : full;
}

}  // namespace k3test
