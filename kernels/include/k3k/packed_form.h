// What pack_w4b64_for(path, w, 0) makes of an n x k weight, known without packing it: the layout
// and rows per tile, hence every array's size. A loader that maps packed weights from a file
// (k3bench's weight cache) builds its views from this instead of packing a template first.
#pragma once

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

}  // namespace k3k
