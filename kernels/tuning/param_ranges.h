// What the kernels accept for each tunable parameter of each op a table may name: the ranges the
// runner publishes (k3bench --list-ops) for the same ops. A table value outside them is refused.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace k3k::tuning {

struct ParamRange {
  std::string_view name;
  std::int64_t min = 0, max = 0;    // integers
  std::int64_t multiple_of = 1;     // integers: 0 excepted (e.g. slab_rows 0 = automatic)
  std::vector<std::string_view> words;  // non-empty: a word parameter with these values
  // A microkernel variant's contract name ("auto" or [a-z0-9_.-]{1,64}); the loader checks it
  // against the variants of the entry's layer when that layer is compiled in.
  bool variant_name = false;
};

struct OpTuning {
  std::string_view op;
  std::vector<ParamRange> params;
  std::vector<std::string_view> class_keys;  // exactly the keys an entry's class has (besides path)
};

// Null for an op no table may tune.
const OpTuning* find_op_tuning(std::string_view op);

}  // namespace k3k::tuning
