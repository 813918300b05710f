#include "k3k/table_rules.h"

#include <algorithm>
#include <cmath>

namespace k3k::rules {
namespace {

constexpr std::int64_t kMaxBucket = std::int64_t{1} << 40;

// Field by field rather than designated initializers: GCC 12 warns
// (-Wmissing-field-initializers) about every member such an initializer leaves to its default.
ParamRule ints(std::string_view name, std::int64_t min, std::int64_t max) {
  ParamRule r;
  r.name = name;
  r.min = min;
  r.max = max;
  return r;
}
// 0 = the kernel chooses; otherwise in [min, max] and a multiple of `multiple_of`.
ParamRule automatic(std::string_view name, std::int64_t min, std::int64_t max,
                    std::int64_t multiple_of, std::string_view multiple_of_param = {}) {
  ParamRule r = ints(name, min, max);
  r.multiple_of = multiple_of;
  r.zero_is_automatic = true;
  r.multiple_of_param = multiple_of_param;
  return r;
}
ParamRule words(std::string_view name, std::vector<std::string_view> values) {
  ParamRule r;
  r.name = name;
  r.words = std::move(values);
  return r;
}
ParamRule microkernel(std::string_view name) {
  ParamRule r;
  r.name = name;
  r.microkernel = true;
  return r;
}

std::string text(std::int64_t x) {
  return std::to_string(x);
}

}  // namespace

const ParamRule* OpRules::param(std::string_view name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

const std::vector<OpRules>& tunable_ops() {
  // The worker counts' ceiling is the pool's; tile widths and blocks are bounded by what a
  // kernel's task bookkeeping holds. slab_rows and weight_rows: see kRowTileQuantum.
  static const std::vector<OpRules> ops = {
      {"linear_decode",
       {ints("workers", 1, 256), ints("tile_n", 1, 4096), words("tcm", {"off", "on", "auto"}),
        automatic("slab_rows", 1, 65536, kRowTileQuantum, "weight_rows"),
        ints("tcm_workers", 1, 256), ints("pairing", 0, 1), words("accumulate", {"int32", "fp16"}),
        ints("k_min", 1, std::int64_t{1} << 30), ints("b_min_kib", 0, std::int64_t{1} << 30),
        automatic("weight_rows", 16, 256, kRowTileQuantum), ints("prefetch", 0, 1 << 20),
        microkernel("ukernel")},
       {"k", "n"}},
      {"linear_prefill",
       {ints("workers", 1, 256), ints("tile_n", 1, 4096),
        automatic("weight_rows", 16, 256, kRowTileQuantum), microkernel("ukernel")},
       {"m_bucket", "k", "n"}},
      {"attn_prefill",
       {ints("workers", 1, 256), ints("q_tile", 1, 4096), ints("kv_block", 1, 65536),
        ints("prefetch", 0, 1 << 20), words("tcm", {"off", "on", "auto"}),
        ints("tcm_kv_blocks", 0, 65536), ints("ctx_min", 1, 1 << 24)},
       {"head_dim", "q_heads", "kv_heads", "ctx_bucket"}},
      {"attn_decode",
       {ints("workers", 1, 256), ints("chunk", 1, 1048576), ints("prefetch", 0, 1 << 20)},
       {"head_dim", "q_heads", "kv_heads", "ctx_bucket"}},
  };
  return ops;
}

const OpRules* find_op(std::string_view op) {
  for (const auto& o : tunable_ops())
    if (o.op == op) return &o;
  return nullptr;
}

std::string int_problem(const ParamRule& rule, std::int64_t x) {
  if (rule.zero_is_automatic && x == 0) return {};
  if (x < rule.min || x > rule.max)
    return "is outside [" + text(rule.min) + ", " + text(rule.max) + "]" +
           (rule.zero_is_automatic ? " (0: automatic)" : "");
  if (rule.multiple_of > 1 && x % rule.multiple_of != 0)
    return "is not a multiple of " + text(rule.multiple_of);
  return {};
}

std::string word_problem(const ParamRule& rule, std::string_view value) {
  for (const auto& w : rule.words)
    if (value == w) return {};
  std::string known;
  for (const auto& w : rule.words) known += (known.empty() ? "" : ", ") + std::string(w);
  return "is not one of " + known;
}

std::string microkernel_name_problem(std::string_view op, std::string_view layer,
                                     std::string_view name) {
  if (name == "auto") return {};
  const bool chars =
      !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
      });
  if (!chars) return "is not a microkernel name ([a-z0-9_.-], at most 64)";
  const std::string prefix = std::string(op) + "-";
  const std::string suffix = "-" + std::string(layer);
  if (!name.starts_with(prefix) || !name.ends_with(suffix) ||
      name.size() <= prefix.size() + suffix.size())
    return "is not a " + std::string(layer) + " " + std::string(op) +
           " microkernel (those are named " + prefix + "...-" + std::string(layer) + ")";
  return {};
}

TogetherProblem together_problem(const OpRules& op, std::string_view layer,
                                 const std::map<std::string, Value>& params) {
  auto integer = [&](std::string_view name) -> std::int64_t {
    const auto it = params.find(std::string(name));
    if (it == params.end() || !std::holds_alternative<std::int64_t>(it->second)) return 0;
    return std::get<std::int64_t>(it->second);
  };
  for (const auto& rule : op.params) {
    if (rule.multiple_of_param.empty()) continue;
    const std::int64_t x = integer(rule.name), of = integer(rule.multiple_of_param);
    if (x != 0 && of != 0 && x % of != 0) {
      return {std::string(rule.name), text(x) + " is not a multiple of " +
                                          std::string(rule.multiple_of_param) + " (" + text(of) +
                                          ")"};
    }
  }
  if (const auto it = params.find("accumulate");
      it != params.end() && std::holds_alternative<std::string>(it->second) &&
      std::get<std::string>(it->second) == "fp16" && layer != "ime2") {
    return {"accumulate", "fp16 needs the ime2 path"};
  }
  return {};
}

std::int64_t power_of_two_at_least(std::int64_t x) {
  std::int64_t p = 1;
  while (p < x && p < kMaxBucket) p *= 2;
  return p;
}

std::map<std::string, std::int64_t> shape_class(std::string_view op,
                                                const std::map<std::string, std::int64_t>& shape) {
  std::map<std::string, std::int64_t> c;
  if (op.starts_with("attn_")) {
    for (const char* k : {"head_dim", "q_heads", "kv_heads"})
      if (const auto it = shape.find(k); it != shape.end()) c[k] = it->second;
    const auto ctx = shape.find("ctx");
    const auto seq = shape.find("seq");
    c["ctx_bucket"] = power_of_two_at_least(ctx != shape.end()   ? ctx->second
                                            : seq != shape.end() ? seq->second
                                                                 : 1);
    return c;
  }
  for (const auto& [k, v] : shape)
    c[k == "m" ? "m_bucket" : k] = k == "m" ? power_of_two_at_least(v) : v;
  return c;
}

std::string class_value_problem(std::string_view key, std::int64_t x) {
  if (x < 1 || x > kMaxBucket) return "is out of range";
  if (key == "k" && x % 64 != 0) return "is not a multiple of 64";
  if (key.ends_with("_bucket") && (x & (x - 1)) != 0) return "is not a power of two";
  return {};
}

std::string entry_id(std::string_view op, std::string_view layer,
                     const std::map<std::string, std::int64_t>& cls) {
  std::string id = std::string(op) + "/" + std::string(layer);
  for (const auto& [k, v] : cls) id += "/" + k + text(v);
  return id;
}

std::optional<std::size_t> nearest_class(
    const std::map<std::string, std::int64_t>& wanted,
    const std::vector<const std::map<std::string, std::int64_t>*>& classes) {
  std::optional<std::size_t> best;
  double best_distance = 0;
  std::int64_t best_size = 0;
  for (std::size_t i = 0; i < classes.size(); ++i) {
    const auto& cls = *classes[i];
    if (cls.size() != wanted.size()) continue;
    double distance = 0;
    std::int64_t size = 0;
    bool same_keys = true;
    for (const auto& [k, v] : wanted) {
      const auto it = cls.find(k);
      if (it == cls.end()) {
        same_keys = false;
        break;
      }
      distance +=
          std::abs(std::log2(double(it->second)) - std::log2(double(std::max<std::int64_t>(v, 1))));
      size += it->second;
    }
    if (!same_keys) continue;
    if (!best || distance < best_distance || (distance == best_distance && size < best_size)) {
      best = i;
      best_distance = distance;
      best_size = size;
    }
  }
  return best;
}

bool decode_path_takes_ime2(std::string_view use, std::int64_t k_min, std::int64_t w_min,
                            std::int64_t n, std::int64_t k) {
  if (use == "always") return true;
  if (use != "threshold") return false;
  return k >= k_min && n * k >= w_min;
}

}  // namespace k3k::rules
