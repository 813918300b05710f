// What pack_w4b64_for(path, w, 0) makes of an n x k weight, known without packing it: the layout
// and rows per tile, hence every array's size. A loader that maps packed weights from a file
// (k3bench's weight cache) builds its views from this instead of packing a template first.
#pragma once

#include <cstddef>
#include <cstdint>

#include "k3k/dispatch.h"
#include "k3k/w4b64.h"

namespace k3k {

struct PackedForm {
  W4B64Layout layout = W4B64Layout::kRowTile32;
  int row_tile = kW4RowTile;
};

// Throws std::invalid_argument, as pack_w4b64_for, when `path` is not usable here.
PackedForm packed_form_for(KernelPath path, std::int64_t n, std::int64_t k);

// An n x k packing in `form` with its arrays allocated at the sizes that form gives them and not
// written: no page is touched until a loader fills them or replaces them with views of a file.
inline W4B64Packed unfilled_packing(std::int64_t n, std::int64_t k, const PackedForm& form) {
  W4B64Packed p;
  p.n = n;
  p.k = k;
  p.layout = form.layout;
  p.row_tile = form.row_tile;
  const auto tiles = static_cast<std::size_t>(p.row_tiles());
  p.codes = AlignedBuffer<std::uint8_t>::for_overwrite(
      tiles * static_cast<std::size_t>(p.tile_code_bytes()));
  p.pairs =
      AlignedBuffer<fp16_t>::for_overwrite(2 * tiles * static_cast<std::size_t>(p.tile_pairs()));
  return p;
}

}  // namespace k3k
