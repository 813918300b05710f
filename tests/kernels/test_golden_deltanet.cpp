// Golden outputs of the Gated DeltaNet ops and the attention output gate on every usable layer:
// the chunked prefill (two chunk sizes; output and final state), a run of decode steps, gates,
// L2 norm, causal convolution (prefill then decode, with its state), gated RMSNorm and the sigmoid
// gate; one hash per case, the same for 1, 2 and 3 workers (tests/support/golden.h).
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "k3k/deltanet.h"
#include "kernels/golden_cases.h"
#include "support/deltanet_cases.h"

namespace k3test::golden {
namespace {

using namespace k3k;

TEST(GoldenOutputs, GatedDeltaNet) {
  const GdnCase c = make_gdn_case({2, 4, 64, 96}, 37, 300);
  for (KernelPath path : usable_layers()) {
    for (int chunk : {8, 64}) {
      check_all_pools(
          path, "gdn_prefill-2x4x64x96-t37-chunk" + std::to_string(chunk), [&](WorkerPool& pool) {
            std::vector<float> out(static_cast<std::size_t>(c.out_floats())), state = c.state;
            gdn_prefill(path, c.dims, c.tokens, c.inputs(), state, out, pool, {chunk, 32});
            return hash_of(state, hash_of(out));
          });
    }
    check_all_pools(path, "gdn_decode-2x4x64x96-t8", [&](WorkerPool& pool) {
      std::vector<float> out(4 * 96), state = c.state;
      std::uint64_t h = 0xcbf29ce484222325ull;
      for (int t = 0; t < 8; ++t) {
        gdn_decode(path, c.dims, c.inputs(t), state, out, pool, {32});
        h = hash_of(out, h);
      }
      return hash_of(state, h);
    });
  }
}

TEST(GoldenOutputs, GatedDeltaNetRows) {
  const auto a = normal_floats(40 * 16, 310, 6.0), b = normal_floats(40 * 16, 311, 3.0);
  const auto a_log = normal_floats(16, 312, 0.8), dt = normal_floats(16, 313, 0.5);
  const auto x = normal_floats(12 * 600, 314), w = normal_floats(4 * 600, 315, 0.4);
  const auto state0 = normal_floats(3 * 600, 316);
  const auto z = normal_floats(12 * 600, 317, 2.0), nw = normal_floats(100, 318, 0.2);
  for (KernelPath path : usable_layers()) {
    check_all_pools(path, "gdn_gates-t40-h16", [&](WorkerPool& pool) {
      std::vector<float> g(40 * 16), beta(40 * 16);
      gdn_gates(path, a.data(), 16, b.data(), 16, a_log, dt, g, beta, 40, 16, pool);
      return hash_of(beta, hash_of(g));
    });
    check_all_pools(path, "l2norm-t12-h4-d100-strided", [&](WorkerPool& pool) {
      std::vector<float> y(12 * 400);
      l2norm(path, x.data(), 600, y.data(), 400, 12, 4, 100, 1e-6f, 0.1f, pool);
      return hash_of(y);
    });
    check_all_pools(path, "causal_conv1d-t12-c600-k4", [&](WorkerPool& pool) {
      std::vector<float> state = state0, y(12 * 600);
      causal_conv1d(path, std::span(x).first(10 * 600), w, state, std::span(y).first(10 * 600), 10,
                    600, 4, pool);
      for (int t = 10; t < 12; ++t)
        causal_conv1d(path, std::span(x).subspan(t * 600, 600), w, state,
                      std::span(y).subspan(t * 600, 600), 1, 600, 4, pool);
      return hash_of(state, hash_of(y));
    });
    check_all_pools(path, "gated_rmsnorm-r72-d100", [&](WorkerPool& pool) {
      std::vector<float> y(72 * 100);
      gated_rmsnorm(path, std::span(x).first(7200), std::span(z).first(7200), nw, y, 72, 100, 1e-6f,
                    pool);
      return hash_of(y);
    });
    check_all_pools(path, "sigmoid_gate-n7200", [&](WorkerPool& pool) {
      std::vector<float> out(7200);
      sigmoid_gate(path, std::span(x).first(7200), std::span(z).first(7200), out, pool);
      return hash_of(out);
    });
  }
}

}  // namespace
}  // namespace k3test::golden
