// The weight packings a layer's Linear kernels read, enumerated through the public packing API so
// a Linear test covers them on any layer: kRowTile32 (every layer) and the layer's own load-time
// layout (k3k::pack_w4b64_for: generic none, rvv kSignedRows, ime2 kIme2), at every rows per tile
// the layer packs.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "k3k/dispatch.h"
#include "k3k/linear.h"
#include "k3k/w4b64.h"

namespace k3test {

struct Packing {
  std::string name;  // "rowtile32", or the layout and its rows per tile ("srows_r64")
  k3k::W4B64Packed w;
};

inline std::string packing_name(const k3k::W4B64Packed& w) {
  if (w.layout == k3k::W4B64Layout::kRowTile32) return "rowtile32";
  return std::string(k3k::to_string(w.layout)) + "_r" + std::to_string(w.row_tile);
}

// kRowTile32 and, when it differs, the layer's default load-time packing of these weights.
inline std::vector<Packing> packings_of(k3k::KernelPath path, const k3k::W4B64Packed& rowtile32) {
  std::vector<Packing> v;
  v.push_back({"rowtile32", rowtile32.deep_copy()});
  k3k::W4B64Packed own = k3k::pack_w4b64_for(path, rowtile32.deep_copy());
  if (own.layout != k3k::W4B64Layout::kRowTile32) {
    std::string name = packing_name(own);
    v.push_back({std::move(name), std::move(own)});
  }
  return v;
}

// The rows per tile the layer packs among the multiples of 16 a layer could take and the defaults
// of this VLEN for two weight shapes (pack_w4b64_for refuses the others: generic and ime2 read
// 32-row tiles only).
inline std::vector<int> packable_rows(k3k::KernelPath path, const k3k::W4B64Packed& rowtile32) {
  std::vector<int> candidates = {16, 32, 48, 64, 128, 256};
  candidates.push_back(k3k::default_weight_rows(path, 520, 512));
  candidates.push_back(k3k::default_weight_rows(path, 4096, 2048));
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<int> rows;
  for (int r : candidates) {
    try {
      k3k::pack_w4b64_for(path, rowtile32.deep_copy(), r);
      rows.push_back(r);
    } catch (const std::invalid_argument&) {
    }
  }
  return rows;
}

}  // namespace k3test
