#include "tuning/param_ranges.h"

#include <array>

namespace k3k::tuning {
namespace {

ParamRange ints(std::string_view name, std::int64_t min, std::int64_t max, std::int64_t multiple_of = 1) {
  return ParamRange{.name = name, .min = min, .max = max, .multiple_of = multiple_of, .words = {}};
}
ParamRange words(std::string_view name, std::vector<std::string_view> values) {
  return ParamRange{.name = name, .min = 0, .max = 0, .multiple_of = 1, .words = std::move(values)};
}
ParamRange variant(std::string_view name) {
  return ParamRange{.name = name, .min = 0, .max = 0, .multiple_of = 1, .words = {}, .variant_name = true};
}

const std::array<OpTuning, 4>& ops() {
  static const std::array<OpTuning, 4> table = {{
      {"linear_decode",
       {ints("workers", 1, 256), ints("tile_n", 1, 4096), words("tcm", {"off", "on", "auto"}),
        ints("slab_rows", 0, 65536, 32), ints("tcm_workers", 1, 256), ints("pairing", 0, 1),
        words("accumulate", {"int32", "fp16"}), ints("k_min", 1, std::int64_t{1} << 30),
        ints("b_min_kib", 0, std::int64_t{1} << 30), ints("weight_rows", 0, 256, 16), ints("prefetch", 0, 1 << 20),
        variant("ukernel")},
       {"k", "n"}},
      {"linear_prefill",
       {ints("workers", 1, 256), ints("tile_n", 1, 4096), ints("weight_rows", 0, 256, 16), variant("ukernel")},
       {"m_bucket", "k", "n"}},
      {"attn_prefill",
       {ints("workers", 1, 256), ints("q_tile", 1, 4096), ints("kv_block", 1, 65536), ints("prefetch", 0, 1 << 20),
        words("tcm", {"off", "on", "auto"}), ints("tcm_kv_blocks", 0, 65536), ints("ctx_min", 1, 1 << 24)},
       {"head_dim", "q_heads", "kv_heads", "ctx_bucket"}},
      {"attn_decode", {ints("workers", 1, 256), ints("chunk", 1, 1048576), ints("prefetch", 0, 1 << 20)}, {"head_dim", "q_heads", "kv_heads", "ctx_bucket"}},
  }};
  return table;
}

}  // namespace

const OpTuning* find_op_tuning(std::string_view op) {
  for (const auto& o : ops())
    if (o.op == op) return &o;
  return nullptr;
}

}  // namespace k3k::tuning
