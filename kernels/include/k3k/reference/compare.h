// Kernel output vs float64 reference within per-element error bounds: the pass/fail rule every
// accuracy test uses. An element passes when |got - ref| <= bound (inclusive) and got is finite
// (a NaN or Inf output always fails, even against an infinite bound).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace k3k::reference {

struct CompareResult {
  double max_abs_err = 0.0;       // max_i |got_i - ref_i|
  double max_rel_err = 0.0;       // max_i |got_i - ref_i| / max(|ref_i|, kRelFloor)
  double worst_ratio = 0.0;       // max_i |got_i - ref_i| / bound_i (inf when bound_i = 0 < err)
  std::int64_t worst_index = -1;  // index of worst_ratio (the element nearest failing)
  double worst_got = 0.0;         // got, ref and bound at worst_index
  double worst_ref = 0.0;
  double worst_bound = 0.0;
  std::int64_t failures = 0;  // elements outside their bound
  std::int64_t first_failure = -1;
  std::int64_t count = 0;
  bool pass = true;

  // Floor of the relative-error denominator (the smallest normal float).
  static constexpr double kRelFloor = 0x1.0p-126;
};

// Throws std::invalid_argument when the three spans differ in size or a bound is negative/NaN.
CompareResult compare_to_reference(std::span<const float> got, std::span<const double> ref,
                                   std::span<const double> bound);

// One line for test messages: pass/fail, counts, max errors, worst element (got, ref, bound).
std::string describe(const CompareResult& result, std::span<const float> got,
                     std::span<const double> ref, std::span<const double> bound);

}  // namespace k3k::reference
