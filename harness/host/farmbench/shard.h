// Shards of a sweep for CI matrix fan-out: `--shard i/n` (1 <= i <= n) keeps the cells whose
// position in the canonical cell list is i-1 modulo n. The canonical list is the grid expansion's
// order (ops, shapes and grids in the order given, the cartesian product in key order), which
// depends only on the request, so the n shards of one request partition its cells exactly, every
// cell in one shard, on any machine. Each shard writes its own database; `k3tune db merge`
// combines them (natural keys: merging twice adds nothing).
#pragma once

#include <string>
#include <vector>

#include "harness/host/bench/grid.h"

namespace k3farmbench {

struct Shard {
  int index = 1;  // 1-based
  int count = 1;
  // Explicit positions instead of i/n (`--cells`, what a Slurm job is handed when cells of an
  // earlier job are measured again): kept when not empty.
  std::vector<std::size_t> positions;
  std::string text() const;  // "i/n", or "cells 0,3,5"
};

// "i/n" with 1 <= i <= n <= 10000. Throws UserError naming --shard.
Shard parse_shard(const std::string& text);

// "0,3,5" (positions in the canonical cell list). Throws UserError naming --cells.
std::vector<std::size_t> parse_cell_positions(const std::string& text);

// Positions (into `cells`) of the cells of `shard`, in order.
std::vector<std::size_t> shard_positions(std::size_t cells, const Shard& shard);

}  // namespace k3farmbench
