// libFuzzer target: arbitrary bytes as a tuning table (k3k::TuningTable::parse), validated for two
// boards, then what an accepted table promises the kernels. Any broken promise aborts, so libFuzzer
// saves the input; ASan and UBSan (tests/fuzz/CMakeLists.txt) catch memory errors and undefined
// behaviour on the way.
//
// Promises checked on every input:
//  - parse never throws; it returns a table, or null with a non-empty one-line problem;
//  - a table is accepted for at most one of two different boards (a table names its board);
// and on an accepted table:
//  - every entry's op may be tuned, its class has the op's keys in range, every parameter is one
//    the op declares and within the declared range (k3k/table_rules.h), hp is set
//    exactly for fp16 accumulation, which only the ime2 path has; the TCM and decode_path gates
//    are in range, and the decode_path gate answers for any N x K without overflow;
//  - find() on the shape an entry's class stands for returns that entry;
//  - find() on perturbed shapes (doubled, halved, off by one, zero, negative, huge, a key dropped
//  or
//    added) and on other paths returns null or an entry of the same op and path;
//  - tuning_shape_class keeps the op's keys and turns m / ctx into power-of-two buckets.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <variant>

#include "k3k/table_rules.h"
#include "k3k/tuning.h"

namespace {

using Shape = std::map<std::string, std::int64_t>;

constexpr std::int64_t kMaxBucket = std::int64_t{1}
                                    << 40;        // tuning_shape_class stops doubling here
constexpr std::size_t kMaxEntriesPerturbed = 64;  // find() is linear: keeps exec/s up

[[noreturn]] void violated(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "tuning_table_fuzz: invariant violated: %.*s: %.*s\n", int(what.size()),
               what.data(), int(detail.size()), detail.data());
  std::abort();
}

void expect(bool ok, std::string_view what, std::string_view detail = "") {
  if (!ok) violated(what, detail);
}

// The board the seed corpus names (an x86 development machine with emulated TCM) and a K3 A100 one.
k3k::BoardFingerprint seed_board() {
  k3k::BoardFingerprint b;
  b.cpus = 2;
  b.tcm_backend = "emulated";
  b.tcm_blocks = 8;
  b.tcm_block_bytes = 393216;
  return b;
}

k3k::BoardFingerprint k3_a100_board() {
  k3k::BoardFingerprint b;
  b.marchid = "0x8000000041000002";
  b.vlen_bits = 1024;
  b.cpus = 8;
  b.tcm_backend = "real";
  b.tcm_blocks = 8;
  b.tcm_block_bytes = 393216;
  return b;
}

bool is_power_of_two(std::int64_t x) {
  return x > 0 && (x & (x - 1)) == 0;
}

void check_bucket(std::int64_t bucket, std::int64_t value, std::string_view key) {
  expect(is_power_of_two(bucket) && bucket <= kMaxBucket, "bucket is a power of two <= 2^40", key);
  if (value > 1 && value <= kMaxBucket)
    expect(bucket >= value && bucket / 2 < value, "bucket is the next power of two", key);
  if (value <= 1) expect(bucket == 1, "bucket of a value <= 1 is 1", key);
  if (value > kMaxBucket) expect(bucket == kMaxBucket, "bucket of a huge value is 2^40", key);
}

void check_shape_class(std::string_view op, const Shape& shape) {
  const Shape cls = k3k::tuning_shape_class(op, shape);
  if (op.starts_with("attn_")) {
    for (const auto& [k, v] : cls)
      expect(k == "head_dim" || k == "q_heads" || k == "kv_heads" || k == "ctx_bucket",
             "attention class keys", k);
    const auto ctx = shape.find("ctx");
    const auto seq = shape.find("seq");
    const std::int64_t context = ctx != shape.end()   ? ctx->second
                                 : seq != shape.end() ? seq->second
                                                      : 1;
    expect(cls.contains("ctx_bucket"), "attention class has ctx_bucket");
    check_bucket(cls.at("ctx_bucket"), context, "ctx_bucket");
    return;
  }
  if (shape.contains("m_bucket")) return;  // a class key, not a shape key: never passed by callers
  expect(cls.size() == shape.size(), "class keeps the shape's keys", op);
  for (const auto& [k, v] : shape) {
    if (k == "m") {
      expect(cls.contains("m_bucket"), "class has m_bucket");
      check_bucket(cls.at("m_bucket"), v, "m_bucket");
    } else {
      expect(cls.contains(k) && cls.at(k) == v, "class keeps integer keys", k);
    }
  }
}

// The shape whose class is `cls`: buckets back to the size they stand for.
Shape shape_of(const k3k::TuningEntry& e) {
  Shape shape;
  for (const auto& [k, v] : e.shape_class) {
    if (k == "m_bucket")
      shape["m"] = v;
    else if (k == "ctx_bucket")
      shape["ctx"] = v;
    else
      shape[k] = v;
  }
  return shape;
}

void check_entry(const k3k::TuningEntry& e) {
  const k3k::rules::OpRules* op = k3k::rules::find_op(e.op);
  expect(op != nullptr, "entry op may be tuned", e.op);
  // A rule's leaf has no class: its parameters are held to an entry's rules.
  if (!e.from_rule)
    for (const auto& k : op->class_keys)
      expect(e.shape_class.contains(std::string(k)), "class has the op's keys", k);
  for (const auto& [k, v] : e.shape_class) {
    expect(v >= 1 && v <= kMaxBucket, "class value in [1, 2^40]", k);
    if (k == "k") expect(v % 64 == 0, "class k is a multiple of 64", e.id);
  }
  for (const auto& [name, value] : e.params) {
    const k3k::rules::ParamRule* range = op->param(name);
    expect(range != nullptr, "parameter declared for the op", name);
    if (range->microkernel) {
      expect(std::get_if<std::string>(&value) != nullptr, "microkernel parameter holds a name",
             name);
    } else if (!range->words.empty()) {
      const auto* word = std::get_if<std::string>(&value);
      expect(word != nullptr, "word parameter holds a word", name);
      bool known = false;
      for (const auto& w : range->words) known = known || *word == w;
      expect(known, "word parameter is one of its words", name);
    } else {
      const auto* x = std::get_if<std::int64_t>(&value);
      expect(x != nullptr, "integer parameter holds an integer", name);
      expect((range->zero_is_automatic && *x == 0) || (*x >= range->min && *x <= range->max),
             "integer parameter within its range", name);
      expect(*x == 0 || *x % range->multiple_of == 0, "integer parameter a multiple", name);
    }
  }
  const auto acc = e.params.find("accumulate");
  const bool fp16 = acc != e.params.end() && std::get<std::string>(acc->second) == "fp16";
  expect(fp16 == e.hp, "hp exactly when accumulate is fp16", e.id);
  expect(!fp16 || e.path == k3k::KernelPath::kIme2, "fp16 accumulation only on ime2", e.id);
}

void check_gate(const k3k::TcmDecodeGate& g) {
  expect(g.use == "never" || g.use == "always" || g.use == "threshold", "gate use is a known word",
         g.use);
  if (g.k_min) expect(*g.k_min >= 1 && *g.k_min <= (std::int64_t{1} << 30), "gate k_min in range");
  if (g.b_min_bytes)
    expect(*g.b_min_bytes >= 0 && *g.b_min_bytes <= (std::int64_t{1} << 40),
           "gate b_min_bytes in range");
}

void check_gate(const k3k::DecodePathGate& g) {
  expect(g.use == "never" || g.use == "always" || g.use == "threshold",
         "decode_path use is a known word", g.use);
  expect(g.k_min >= 1 && g.k_min <= k3k::rules::kGateKMinMax, "decode_path k_min in range");
  expect(g.w_min >= 0 && g.w_min <= k3k::rules::kGateWeightsMinMax, "decode_path w_min in range");
  // Shapes a weight can have (N, K up to 2^24: N*K fits in 64 bits); the answer is the rule's.
  for (const std::int64_t n : {std::int64_t{1}, std::int64_t{32}, std::int64_t{1} << 24})
    for (const std::int64_t k : {std::int64_t{64}, std::int64_t{2048}, std::int64_t{1} << 24}) {
      const bool want =
          g.use == "always" || (g.use == "threshold" && k >= g.k_min && n * k >= g.w_min);
      expect(g.takes_ime2(n, k) == want, "decode_path follows its rule", g.use);
    }
}

void check_lookup(const k3k::TuningTable& table, std::string_view op, k3k::KernelPath path,
                  const Shape& shape) {
  check_shape_class(op, shape);
  const k3k::TuningEntry* found = table.find(op, path, shape);
  if (found == nullptr) return;
  expect(found->op == op && found->path == path, "find returns an entry of the same op and path",
         found->id);
  const auto& all = table.entries();
  if (found->from_rule) {
    // A leaf of the op and path's rule, and only for a class without an entry of its own.
    const k3k::TuningEntry* leaf = table.apply_rule(op, path, shape);
    expect(leaf == found, "a rule's leaf is what the op and path's rule gives", found->id);
    return;
  }
  expect(found >= all.data() && found < all.data() + all.size(),
         "find returns one of the table's entries");
}

// Every split names a class key of its op and sends to later nodes (so every walk ends); every
// leaf is a valid configuration of the op on the rule's path.
void check_rule(const k3k::TuningRule& rule) {
  const k3k::rules::OpRules* op = k3k::rules::find_op(rule.op);
  expect(op != nullptr, "rule op may be tuned", rule.op);
  expect(!rule.nodes.empty() && rule.nodes.size() <= k3k::rules::kRuleNodesMax,
         "a rule has 1..4096 nodes", rule.op);
  for (std::size_t i = 0; i < rule.nodes.size(); ++i) {
    const auto& n = rule.nodes[i];
    if (n.key.empty()) {
      expect(n.leaf < rule.leaves.size(), "a leaf node names a leaf", rule.op);
      continue;
    }
    bool known = false;
    for (const auto& k : op->class_keys) known = known || k == n.key;
    expect(known, "a split's key is a class key", n.key);
    expect(n.then_node > i && n.then_node < rule.nodes.size() && n.else_node > i &&
               n.else_node < rule.nodes.size(),
           "a split's children are later nodes", rule.op);
    expect(n.below >= 1 && n.below <= k3k::rules::kRuleThresholdMax, "a split's threshold in range",
           n.key);
  }
  for (const auto& leaf : rule.leaves) {
    expect(leaf.from_rule && leaf.op == rule.op && leaf.path == rule.path,
           "a leaf belongs to its rule", leaf.id);
    check_entry(leaf);
  }
}

void check_perturbed(const k3k::TuningTable& table, const k3k::TuningEntry& e) {
  const Shape own = shape_of(e);
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  for (const auto& [k, v] : own) {
    for (const std::int64_t changed : {v * 2, v / 2, v + 1, v - 1, std::int64_t{0},
                                       std::int64_t{-5}, kMaxBucket + 1, kMax, kMin}) {
      Shape s = own;
      s[k] = changed;
      check_lookup(table, e.op, e.path, s);
    }
    Shape dropped = own;
    dropped.erase(k);
    check_lookup(table, e.op, e.path, dropped);
  }
  Shape added = own;
  added["seq"] = 3;
  check_lookup(table, e.op, e.path, added);
  for (const auto other :
       {k3k::KernelPath::kGeneric, k3k::KernelPath::kRvv, k3k::KernelPath::kIme2})
    check_lookup(table, e.op, other, own);
}

void check_table(const k3k::TuningTable& table) {
  if (table.tcm_decode_gate()) check_gate(*table.tcm_decode_gate());
  if (table.decode_path_gate()) check_gate(*table.decode_path_gate());
  const auto& entries = table.entries();
  for (const auto& r : table.rules()) check_rule(r);
  for (const auto& e : entries) {
    check_entry(e);
    const k3k::TuningEntry* found = table.find(e.op, e.path, shape_of(e));
    expect(found == &e, "find on an entry's own class returns that entry", e.id);
  }
  for (std::size_t i = 0; i < entries.size() && i < kMaxEntriesPerturbed; ++i)
    check_perturbed(table, entries[i]);
}

// K3_FUZZ_VERBOSE=1 (when replaying inputs: tuning_table_fuzz FILE...) prints each board's verdict.
bool verbose() {
  static const bool on = std::getenv("K3_FUZZ_VERBOSE") != nullptr;
  return on;
}

std::unique_ptr<k3k::TuningTable> parse_checked(std::string_view text,
                                                const k3k::BoardFingerprint& board) {
  std::string problem = "left over from an earlier call";
  auto table = k3k::TuningTable::parse(text, board, problem);
  if (verbose()) {
    const std::string verdict =
        table ? "accepted, " + std::to_string(table->entries().size()) + " entries"
              : "refused: " + problem;
    std::fprintf(stderr, "board %s: %s\n", board.marchid.value_or("none").c_str(), verdict.c_str());
  }
  if (table) {
    expect(problem.empty(), "no problem with an accepted table", problem);
    check_table(*table);
  } else {
    expect(!problem.empty(), "a refused table has a problem");
    expect(problem.find_first_of("\r\n") == std::string::npos, "the problem is one line", problem);
  }
  return table;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto for_seed_board = parse_checked(text, seed_board());
    const auto for_k3 = parse_checked(text, k3_a100_board());
    expect(!(for_seed_board && for_k3), "a table is accepted for one board only");
  } catch (...) {
    violated("no exception escapes", "an exception left parse, find or tuning_shape_class");
  }
  return 0;
}
