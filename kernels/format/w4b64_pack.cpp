#include <cmath>
#include <stdexcept>
#include <string>

#include "k3k/w4b64.h"

namespace k3k {

namespace {

// A storage-form scale or beta as the packed layouts hold it: fp16, nearest even, finite.
fp16_t packed_pair(float x, const char* what, std::int64_t row, std::int64_t block) {
  const fp16_t h = fp32_to_fp16(x);
  if ((h & 0x7C00u) == 0x7C00u) {
    throw std::invalid_argument("pack_w4b64_generic: " + std::string(what) + " of row " +
                                std::to_string(row) + ", block " + std::to_string(block) + " (" +
                                std::to_string(x) + ") has no finite fp16 value");
  }
  return h;
}

}  // namespace

W4B64Packed pack_w4b64_generic(const W4B64Storage& storage) {
  W4B64Packed p;
  p.n = storage.n;
  p.k = storage.k;
  const std::int64_t nb = storage.blocks_per_row();
  const std::int64_t tiles = p.row_tiles();
  p.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(tiles * nb * 32 * kW4RowTile));
  p.pairs = AlignedBuffer<fp16_t>(static_cast<std::size_t>(2 * tiles * nb * kW4RowTile));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint8_t* dst = p.codes.data() + (t * nb + b) * 32 * kW4RowTile;
      fp16_t* pair = p.pairs.data() + 2 * (t * nb + b) * kW4RowTile;
      for (int r = 0; r < kW4RowTile; ++r) {
        const std::int64_t row = t * kW4RowTile + r;
        const std::int64_t k0 = b * kW4BlockK;
        for (int j = 0; j < 32; ++j) {
          // Padding rows hold code 8 in both nibbles: (q - 8) = 0.
          const std::uint8_t lo = row < p.n ? storage.code(row, k0 + j) : 8;
          const std::uint8_t hi = row < p.n ? storage.code(row, k0 + 32 + j) : 8;
          dst[j * kW4RowTile + r] = static_cast<std::uint8_t>(lo | (hi << 4));
        }
        pair[2 * r] = row < p.n ? packed_pair(storage.beta(row, b), "beta", row, b) : 0;
        pair[2 * r + 1] = row < p.n ? packed_pair(storage.scale(row, b), "scale", row, b) : 0;
      }
    }
  }
  return p;
}

const char* to_string(W4B64Layout layout) {
  switch (layout) {
    case W4B64Layout::kRowTile32:
      return "rowtile32";
    case W4B64Layout::kIme2:
      return "ime2";
    case W4B64Layout::kSignedRows:
      return "srows";
  }
  return "?";
}

W4B64Packed pack_w4b64_signed_rows(const W4B64Packed& w, int rows) {
  const char* who = "pack_w4b64_signed_rows";
  if (w.layout != W4B64Layout::kRowTile32) {
    throw std::invalid_argument(std::string(who) +
                                ": weights must be in the kRowTile32 layout, got " +
                                to_string(w.layout));
  }
  if (rows < kMinSignedRows || rows > kMaxRowTile || rows % kMinSignedRows != 0) {
    throw std::invalid_argument(std::string(who) +
                                ": rows must be a multiple of 16 in [16, 256], got " +
                                std::to_string(rows));
  }
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  p.layout = W4B64Layout::kSignedRows;
  p.row_tile = rows;
  const std::int64_t nb = w.blocks_per_row(), tiles = p.row_tiles();
  p.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(tiles * p.tile_code_bytes()));
  p.pairs = AlignedBuffer<fp16_t>(static_cast<std::size_t>(2 * tiles * p.tile_pairs()));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t unit = t * nb + b;
      for (int r = 0; r < rows; ++r) {
        const std::int64_t row = t * rows + r;
        const bool real = row < w.n;
        // Source: tile row / 32, lane row % 32 of the kRowTile32 arrays.
        const std::int64_t src_unit = (row / kW4RowTile) * nb + b;
        const std::int64_t lane = row % kW4RowTile;
        for (int j = 0; j < 32; ++j) {
          // Padding rows: code 8 in both halves, i.e. the signed nibbles 0.
          const std::uint8_t byte =
              real ? w.codes[static_cast<std::size_t>((src_unit * 32 + j) * kW4RowTile + lane)]
                   : 0x88;
          p.codes[static_cast<std::size_t>((unit * 32 + j) * rows + r)] =
              static_cast<std::uint8_t>(byte ^ 0x88);
        }
        const auto src = static_cast<std::size_t>(src_unit * kW4RowTile + lane);
        const auto dst = static_cast<std::size_t>(2 * (unit * rows + r));
        p.pairs[dst] = real ? w.pairs[2 * src] : fp16_t{0};
        p.pairs[dst + 1] = real ? w.pairs[2 * src + 1] : fp16_t{0};
      }
    }
  }
  return p;
}

W4B64Packed unpack_w4b64_signed_rows(const W4B64Packed& w) {
  if (w.layout != W4B64Layout::kSignedRows) {
    throw std::invalid_argument(std::string("unpack_w4b64_signed_rows: weights must be in the "
                                            "kSignedRows layout, got ") +
                                to_string(w.layout));
  }
  W4B64Packed p;
  p.n = w.n;
  p.k = w.k;
  const std::int64_t nb = w.blocks_per_row(), tiles = p.row_tiles(), rows = w.row_tile;
  p.codes = AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(tiles * p.tile_code_bytes()));
  p.pairs = AlignedBuffer<fp16_t>(static_cast<std::size_t>(2 * tiles * p.tile_pairs()));
  for (std::int64_t t = 0; t < tiles; ++t) {
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int64_t unit = t * nb + b;
      for (int r = 0; r < kW4RowTile; ++r) {
        const std::int64_t row = t * kW4RowTile + r;
        const bool real = row < w.n;
        // Source: tile row / R, lane row % R of the kSignedRows arrays.
        const std::int64_t src_unit = (row / rows) * nb + b, lane = row % rows;
        for (int j = 0; j < 32; ++j) {
          const std::uint8_t byte =
              real ? w.codes[static_cast<std::size_t>((src_unit * 32 + j) * rows + lane)] : 0;
          p.codes[static_cast<std::size_t>((unit * 32 + j) * kW4RowTile + r)] =
              static_cast<std::uint8_t>(byte ^ 0x88);
        }
        const auto src = static_cast<std::size_t>(2 * (src_unit * rows + lane));
        const auto dst = static_cast<std::size_t>(2 * (unit * kW4RowTile + r));
        p.pairs[dst] = real ? w.pairs[src] : fp16_t{0};
        p.pairs[dst + 1] = real ? w.pairs[src + 1] : fp16_t{0};
      }
    }
  }
  return p;
}

void dequantize_w4b64_row(const W4B64Storage& storage, std::int64_t row, double* out) {
  const std::int64_t nb = storage.blocks_per_row();
  for (std::int64_t b = 0; b < nb; ++b) {
    const double s = w4b64_pair_value(storage.scale(row, b));
    const double beta = w4b64_pair_value(storage.beta(row, b));
    for (int j = 0; j < kW4BlockK; ++j) {
      const std::int64_t col = b * kW4BlockK + j;
      out[col] = s * (static_cast<double>(storage.code(row, col)) - 8.0) + beta;
    }
  }
}

}  // namespace k3k
