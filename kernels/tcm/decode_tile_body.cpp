// Picks the decode tile body of a kernel layer (generic/linear_decode_tile.h).
#include <stdexcept>
#include <string>

#include "generic/linear_decode_tile.h"

namespace k3k {

namespace {

// The generic and RVV bodies read the activation codes and block sums directly.
class RowTileFnBody final : public DecodeTileBody {
 public:
  RowTileFnBody(DecodeRowTileFn fn, const PackedActivations& a, const W4B64Packed& w)
      : fn_(fn), x_(a.codes.data()), sums_(a.block_sum.data()), nb_(w.blocks_per_row()) {}
  void run(const std::uint8_t* codes, const float* scale, const float* beta,
           float acc[kW4RowTile]) const override {
    fn_(codes, scale, beta, x_, sums_, nb_, acc);
  }

 private:
  DecodeRowTileFn fn_;
  const std::int8_t* x_;
  const std::int32_t* sums_;
  std::int64_t nb_;
};

}  // namespace

std::unique_ptr<DecodeTileBody> make_decode_tile_body(KernelPath path, const PackedActivations& a,
                                                      const W4B64Packed& w) {
  switch (path) {
    case KernelPath::kGeneric:
      return std::make_unique<RowTileFnBody>(generic::decode_row_tile, a, w);
    case KernelPath::kRvv:
#if defined(K3_HAVE_RVV)
      return std::make_unique<RowTileFnBody>(rvv::decode_row_tile, a, w);
#else
      break;
#endif
    case KernelPath::kIme2:
#if defined(K3_HAVE_IME2)
      return ime2::make_decode_tile_body(a, w);
#else
      break;
#endif
  }
  throw std::invalid_argument(std::string("decode tile body: layer ") + to_string(path) +
                              " is not in this binary");
}

}  // namespace k3k
