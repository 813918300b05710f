// The order in which one process alternates two sides of a comparison, repetition by repetition:
// A B | B A | A B | ... Reversing every other pair cancels a drift that is linear over the
// process (each pair's sum of positions is the same on both sides over two pairs), so neither
// side profits from running later. Used by alternating extra work (extra_work.h) and by a second
// parameter set (k3bench --params-b).
#pragma once

namespace k3runner {

// 'A' or 'B' for repetition `rep` (0-based).
constexpr char abba_side(int rep) {
  const bool second_of_pair = rep % 2 == 1, reversed_pair = (rep / 2) % 2 == 1;
  return second_of_pair != reversed_pair ? 'B' : 'A';
}

static_assert(abba_side(0) == 'A' && abba_side(1) == 'B' && abba_side(2) == 'B' &&
              abba_side(3) == 'A' && abba_side(4) == 'A');

}  // namespace k3runner
