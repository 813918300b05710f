// Strict validation of a tuning table against this build and a board. Every check names the field
// in JSON-pointer form; the first problem refuses the whole table (a half-applied table would mix
// tuned and default choices that were never measured together).
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "k3k/linear.h"
#include "k3k/table_rules.h"
#include "k3k/tuning.h"

namespace k3k {
namespace {

using nlohmann::json;

// Tables are a few hundred entries; anything near this is not a table.
constexpr std::size_t kMaxTableBytes = std::size_t{8} << 20;
constexpr std::size_t kMaxEntries = 100000;

struct Refused {
  std::string what;
};

[[noreturn]] void refuse(std::string what) {
  throw Refused{std::move(what)};
}

// Text from the table as it appears in a problem: at most 40 characters, control and non-ASCII
// bytes as \xNN, so a hostile table cannot add lines (or terminal escapes) to a log.
std::string printable(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < 40; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\')
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  if (s.size() > 40) out += "...";
  return out;
}

const json& member(const json& o, const char* key, const std::string& where) {
  if (!o.is_object()) refuse(fmt::format("{}: not an object", where.empty() ? "/" : where));
  const auto it = o.find(key);
  if (it == o.end()) refuse(fmt::format("{}/{}: missing", where, key));
  return *it;
}

std::int64_t integer(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() >
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      refuse(fmt::format("{}: {} is out of range", where, printable(v.dump())));
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  refuse(fmt::format("{}: expected an integer, found {}", where, v.type_name()));
}

std::string text(const json& v, const std::string& where) {
  if (!v.is_string()) refuse(fmt::format("{}: expected a string, found {}", where, v.type_name()));
  return v.get<std::string>();
}

std::optional<std::string> optional_text(const json& v, const std::string& where) {
  if (v.is_null()) return std::nullopt;
  return text(v, where);
}

std::string shown(const std::optional<std::string>& s) {
  return s ? printable(*s) : "none";
}
std::string shown(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "none";
}

void check_board(const json& fp, const BoardFingerprint* running) {
  const std::string w = "/board/fingerprint";
  const auto marchid = optional_text(member(fp, "marchid", w), w + "/marchid");
  const json& vlen = member(fp, "vlen", w);
  std::optional<int> table_vlen;
  if (!vlen.is_null()) {
    const std::int64_t v = integer(vlen, w + "/vlen");
    if (v < 0 || v > 65536) refuse(fmt::format("{}/vlen: {} is out of range", w, v));
    table_vlen = static_cast<int>(v);
  }
  const std::int64_t cpus = integer(member(fp, "cpus", w), w + "/cpus");
  const json& tcm = member(fp, "tcm", w);
  const std::string backend = text(member(tcm, "backend", w + "/tcm"), w + "/tcm/backend");
  const std::int64_t blocks = integer(member(tcm, "blocks", w + "/tcm"), w + "/tcm/blocks");
  const std::int64_t bytes =
      integer(member(tcm, "block_bytes", w + "/tcm"), w + "/tcm/block_bytes");
  if (running == nullptr) return;  // form only
  const BoardFingerprint& board = *running;
  if (marchid != board.marchid)
    refuse(fmt::format("{}/marchid: made for {}, this machine has {}", w, shown(marchid),
                       shown(board.marchid)));
  if (table_vlen.has_value() != board.vlen_bits.has_value() ||
      (table_vlen && *table_vlen != *board.vlen_bits))
    refuse(fmt::format("{}/vlen: made for VLEN {}, this machine has {}", w, shown(table_vlen),
                       shown(board.vlen_bits)));
  if (cpus != board.cpus)
    refuse(fmt::format("{}/cpus: made for {} CPUs, this process may use {}", w, cpus, board.cpus));
  if (backend != board.tcm_backend || blocks != board.tcm_blocks || bytes != board.tcm_block_bytes)
    refuse(fmt::format("{}/tcm: made for {} TCM ({} x {} B), this machine has {} ({} x {} B)", w,
                       printable(backend), blocks, bytes, printable(board.tcm_backend),
                       board.tcm_blocks, board.tcm_block_bytes));
}

TuningValue checked_param(std::string_view op, KernelPath path, const rules::ParamRule& rule,
                          const json& v, const std::string& where) {
  if (rule.microkernel) {
    const std::string s = text(v, where);
    if (auto why = rules::microkernel_name_problem(op, to_string(path), s); !why.empty())
      refuse(fmt::format("{}: '{}' {}", where, printable(s), why));
    return s;
  }
  if (!rule.words.empty()) {
    const std::string s = text(v, where);
    if (auto why = rules::word_problem(rule, s); !why.empty())
      refuse(fmt::format("{}: '{}' {}", where, printable(s), why));
    return s;
  }
  const std::int64_t x = integer(v, where);
  if (auto why = rules::int_problem(rule, x); !why.empty())
    refuse(fmt::format("{}: {} {}", where, x, why));
  return x;
}

// A ukernel the entry's layer does not have (when that layer is compiled in; a table may carry
// entries for layers this build lacks, which are never looked up).
void check_variant_name(const TuningEntry& e, const std::string& w) {
  const auto it = e.params.find("ukernel");
  if (it == e.params.end()) return;
  const std::string& name = std::get<std::string>(it->second);
  if (name == "auto") return;
  const LinearVariantNames variants = linear_variants(e.path);
  const std::vector<std::string>& known =
      e.op == "linear_decode" ? variants.decode : variants.prefill;
  if (known.empty() || std::find(known.begin(), known.end(), name) != known.end()) return;
  refuse(fmt::format("{}/params/ukernel: '{}' is not a {} {} microkernel", w, printable(name),
                     to_string(e.path), e.op));
}

std::string class_key(std::string_view op, KernelPath path,
                      const std::map<std::string, std::int64_t>& cls) {
  return rules::entry_id(op, to_string(path), cls);
}

// An entry's (or a rule leaf's) parameters: each known to the op, of its type and in range, the
// rules that tie them together, the layer's microkernel names, and `hp` exactly where
// accumulate is fp16. `holder` is the object that may carry "hp".
void parse_params(const rules::OpRules& op, const json& params, const json& holder,
                  const std::string& w, TuningEntry& out) {
  if (!params.is_object()) refuse(fmt::format("{}/params: not an object", w));
  for (const auto& [k, v] : params.items()) {
    const std::string where = fmt::format("{}/params/{}", w, printable(k));
    const rules::ParamRule* rule = op.param(k);
    if (rule == nullptr) refuse(fmt::format("{}: not a parameter of {}", where, out.op));
    // The path is known before the parameters: a microkernel name is checked for that layer.
    out.params[k] = checked_param(out.op, out.path, *rule, v, where);
  }
  if (const auto p = rules::together_problem(op, to_string(out.path), out.params))
    refuse(fmt::format("{}/params/{}: {}", w, p.param, p.why));
  check_variant_name(out, w);
  if (const auto it = holder.find("hp"); it != holder.end()) {
    if (!it->is_boolean()) refuse(fmt::format("{}/hp: expected a boolean", w));
    out.hp = it->get<bool>();
  }
  const auto acc = out.params.find("accumulate");
  const bool fp16 = acc != out.params.end() && std::get<std::string>(acc->second) == "fp16";
  if (fp16 != out.hp) refuse(fmt::format("{}/hp: must be true exactly when accumulate is fp16", w));
}

TuningEntry parse_entry(const json& e, const std::string& w) {
  TuningEntry out;
  out.id = text(member(e, "id", w), w + "/id");
  out.op = text(member(e, "op", w), w + "/op");
  const rules::OpRules* op = rules::find_op(out.op);
  if (op == nullptr)
    refuse(fmt::format("{}/op: '{}' is not an op a table may tune", w, printable(out.op)));
  const json& cls = member(e, "class", w);
  if (!cls.is_object()) refuse(fmt::format("{}/class: not an object", w));
  for (const auto& [k, v] : cls.items()) {
    const std::string where = fmt::format("{}/class/{}", w, printable(k));
    if (k == "path") {
      const auto path = parse_kernel_path(v.is_string() ? v.get<std::string>() : std::string());
      if (!path)
        refuse(fmt::format("{}: '{}' is not generic, rvv or ime2", where, printable(v.dump())));
      out.path = *path;
      continue;
    }
    bool known = false;
    for (const auto& key : op->class_keys) known = known || key == k;
    if (!known) refuse(fmt::format("{}: not a shape-class key of {}", where, out.op));
    const std::int64_t x = integer(v, where);
    if (auto why = rules::class_value_problem(k, x); !why.empty())
      refuse(fmt::format("{}: {} {}", where, x, why));
    out.shape_class[k] = x;
  }
  if (!cls.contains("path")) refuse(fmt::format("{}/class/path: missing", w));
  for (const auto& k : op->class_keys)
    if (!out.shape_class.contains(std::string(k)))
      refuse(fmt::format("{}/class/{}: missing", w, k));
  parse_params(*op, member(e, "params", w), e, w, out);
  return out;
}

// A gate's common form: an object of known keys only (as the schema says), `use` one of never,
// always or threshold, and the fit's figures (loss, wrong_shapes, shapes) non-negative numbers.
std::string gate_use(const json& g, const std::string& w,
                     std::initializer_list<std::string_view> keys) {
  if (!g.is_object()) refuse(fmt::format("{}: not an object", w));
  for (const auto& [k, v] : g.items()) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end() && k != "use" && k != "loss" &&
        k != "wrong_shapes" && k != "shapes")
      refuse(fmt::format("{}/{}: not a field of this gate", w, printable(k)));
  }
  if (const auto it = g.find("loss"); it != g.end() && (!it->is_number() || it->get<double>() < 0))
    refuse(fmt::format("{}/loss: expected a number >= 0", w));
  for (const char* count : {"wrong_shapes", "shapes"})
    if (const auto it = g.find(count); it != g.end() && integer(*it, w + "/" + count) < 0)
      refuse(fmt::format("{}/{}: out of range", w, count));
  const std::string use = text(member(g, "use", w), w + "/use");
  if (use != "never" && use != "always" && use != "threshold")
    refuse(fmt::format("{}/use: '{}' is not never, always or threshold", w, printable(use)));
  return use;
}

std::optional<std::int64_t> gate_bound(const json& g, const char* key, std::int64_t min,
                                       std::int64_t max, const std::string& w) {
  const auto it = g.find(key);
  if (it == g.end()) return std::nullopt;
  const std::int64_t x = integer(*it, w + "/" + key);
  if (x < min || x > max) refuse(fmt::format("{}/{}: out of range", w, key));
  return x;
}

TcmDecodeGate parse_tcm_gate(const json& g) {
  const std::string w = "/gates/tcm_decode";
  TcmDecodeGate gate;
  gate.use = gate_use(g, w, {"k_min", "b_min_bytes"});
  gate.k_min = gate_bound(g, "k_min", 1, rules::kGateKMinMax, w);
  gate.b_min_bytes = gate_bound(g, "b_min_bytes", 0, rules::kGateBytesMinMax, w);
  return gate;
}

// A threshold names both bounds: a rule the fit never wrote (one bound left to a default) would
// be a guess at what was measured.
DecodePathGate parse_decode_path_gate(const json& g) {
  const std::string w = "/gates/decode_path";
  DecodePathGate gate;
  gate.use = gate_use(g, w, {"k_min", "w_min"});
  const auto k_min = gate_bound(g, "k_min", 1, rules::kGateKMinMax, w);
  const auto w_min = gate_bound(g, "w_min", 0, rules::kGateWeightsMinMax, w);
  if (gate.use == "threshold") {
    if (!k_min) refuse(fmt::format("{}/k_min: missing (use is threshold)", w));
    if (!w_min) refuse(fmt::format("{}/w_min: missing (use is threshold)", w));
  }
  gate.k_min = k_min.value_or(1);
  gate.w_min = w_min.value_or(0);
  return gate;
}

// A rule node: a split ({key, below, then, else}) or a leaf ({params[, hp]}), nothing else.
// Children come after their parent, which bounds every walk by the node count.
TuningRule::Node parse_rule_node(const rules::OpRules& op, const json& n, std::size_t i,
                                 std::size_t count, const std::string& w, TuningRule& rule) {
  if (!n.is_object()) refuse(fmt::format("{}: not an object", w));
  TuningRule::Node node;
  if (n.contains("params")) {
    for (const auto& [k, v] : n.items())
      if (k != "params" && k != "hp")
        refuse(fmt::format("{}/{}: not a field of a rule leaf", w, printable(k)));
    TuningEntry leaf;
    leaf.op = rule.op;
    leaf.path = rule.path;
    leaf.from_rule = true;
    leaf.id = fmt::format("{}/{}/rule/{}", rule.op, to_string(rule.path), i);
    parse_params(op, n["params"], n, w, leaf);
    node.leaf = rule.leaves.size();
    rule.leaves.push_back(std::move(leaf));
    return node;
  }
  for (const auto& [k, v] : n.items())
    if (k != "key" && k != "below" && k != "then" && k != "else")
      refuse(fmt::format("{}/{}: not a field of a rule split", w, printable(k)));
  node.key = text(member(n, "key", w), w + "/key");
  bool known = false;
  for (const auto& key : op.class_keys) known = known || key == node.key;
  if (!known)
    refuse(fmt::format("{}/key: '{}' is not a shape-class key of {}", w, printable(node.key),
                       rule.op));
  node.below = integer(member(n, "below", w), w + "/below");
  if (node.below < 1 || node.below > rules::kRuleThresholdMax)
    refuse(fmt::format("{}/below: {} is outside [1, {}]", w, node.below, rules::kRuleThresholdMax));
  for (const char* side : {"then", "else"}) {
    const std::int64_t c = integer(member(n, side, w), fmt::format("{}/{}", w, side));
    if (c <= static_cast<std::int64_t>(i) || c >= static_cast<std::int64_t>(count))
      refuse(
          fmt::format("{}/{}: {} is not a later node (after {}, before {})", w, side, c, i, count));
    (side[0] == 't' ? node.then_node : node.else_node) = static_cast<std::size_t>(c);
  }
  return node;
}

TuningRule parse_rule(const json& r, const std::string& w) {
  if (!r.is_object()) refuse(fmt::format("{}: not an object", w));
  for (const auto& [k, v] : r.items())
    if (k != "op" && k != "path" && k != "nodes" && k != "fit")
      refuse(fmt::format("{}/{}: not a field of a rule", w, printable(k)));
  TuningRule rule;
  rule.op = text(member(r, "op", w), w + "/op");
  const rules::OpRules* op = rules::find_op(rule.op);
  if (op == nullptr)
    refuse(fmt::format("{}/op: '{}' is not an op a table may tune", w, printable(rule.op)));
  const json& path = member(r, "path", w);
  const auto p = parse_kernel_path(path.is_string() ? path.get<std::string>() : std::string());
  if (!p)
    refuse(fmt::format("{}/path: '{}' is not generic, rvv or ime2", w, printable(path.dump())));
  rule.path = *p;
  if (const auto it = r.find("fit"); it != r.end() && !it->is_object())
    refuse(fmt::format("{}/fit: not an object", w));
  const json& nodes = member(r, "nodes", w);
  if (!nodes.is_array() || nodes.empty()) refuse(fmt::format("{}/nodes: not a non-empty array", w));
  if (nodes.size() > rules::kRuleNodesMax)
    refuse(fmt::format("{}/nodes: {} nodes, more than {}", w, nodes.size(), rules::kRuleNodesMax));
  for (std::size_t i = 0; i < nodes.size(); ++i)
    rule.nodes.push_back(
        parse_rule_node(*op, nodes[i], i, nodes.size(), fmt::format("{}/nodes/{}", w, i), rule));
  return rule;
}

}  // namespace

std::unique_ptr<TuningTable> TuningTable::parse(std::string_view text_in,
                                                const BoardFingerprint* board,
                                                std::string& problem) {
  problem.clear();
  if (text_in.size() > kMaxTableBytes) {
    problem = fmt::format("{} bytes: larger than any table ({} MiB at most)", text_in.size(),
                          kMaxTableBytes >> 20);
    return nullptr;
  }
  try {
    // No exceptions from the parser (a malformed document is "discarded"); comments refused.
    const json t = json::parse(text_in.begin(), text_in.end(), nullptr, false, false);
    if (t.is_discarded()) refuse("not valid JSON");
    if (!t.is_object()) refuse(fmt::format("/: expected an object, found {}", t.type_name()));
    const std::string schema = text(member(t, "schema", ""), "/schema");
    if (schema != rules::kTuningTableSchema && schema != rules::kTuningTableSchemaWithoutRules)
      refuse(fmt::format("/schema: '{}' is not {} (or {})", printable(schema),
                         rules::kTuningTableSchema, rules::kTuningTableSchemaWithoutRules));
    const std::int64_t abi = integer(member(t, "kernel_abi", ""), "/kernel_abi");
    if (abi != rules::kKernelAbiVersion)
      refuse(fmt::format("/kernel_abi: table for kernel ABI {}, this library is ABI {}", abi,
                         rules::kKernelAbiVersion));
    check_board(member(member(t, "board", ""), "fingerprint", "/board"), board);

    auto table = std::unique_ptr<TuningTable>(new TuningTable());
    if (const auto g = t.find("gates"); g != t.end()) {
      if (!g->is_object()) refuse("/gates: not an object");
      if (const auto d = g->find("tcm_decode"); d != g->end())
        table->tcm_gate_ = parse_tcm_gate(*d);
      if (const auto d = g->find("decode_path"); d != g->end())
        table->decode_path_gate_ = parse_decode_path_gate(*d);
    }
    const json& entries = member(t, "entries", "");
    if (!entries.is_array()) refuse("/entries: not an array");
    if (entries.size() > kMaxEntries)
      refuse(fmt::format("/entries: {} entries, more than {}", entries.size(), kMaxEntries));
    for (std::size_t i = 0; i < entries.size(); ++i) {
      TuningEntry e = parse_entry(entries[i], fmt::format("/entries/{}", i));
      const std::string key = class_key(e.op, e.path, e.shape_class);
      if (e.id != key)
        refuse(fmt::format("/entries/{}/id: '{}' does not match its op and class ('{}')", i,
                           printable(e.id), key));
      if (!table->by_class_.emplace(key, table->entries_.size()).second)
        refuse(fmt::format("/entries/{}: a second entry for {}", i, key));
      table->entries_.push_back(std::move(e));
    }
    if (const auto r = t.find("rules"); r != t.end()) {
      if (schema != rules::kTuningTableSchema)
        refuse(
            fmt::format("/rules: a {} table has no rules", rules::kTuningTableSchemaWithoutRules));
      if (!r->is_array()) refuse("/rules: not an array");
      std::set<std::string> seen;
      for (std::size_t i = 0; i < r->size(); ++i) {
        TuningRule rule = parse_rule((*r)[i], fmt::format("/rules/{}", i));
        if (!seen.insert(rule.op + "/" + std::string(to_string(rule.path))).second)
          refuse(fmt::format("/rules/{}: a second rule for {} on {}", i, rule.op,
                             to_string(rule.path)));
        table->rules_.push_back(std::move(rule));
      }
    }
    return table;
  } catch (const Refused& r) {
    problem = r.what;
  } catch (const std::exception& e) {  // a safety net: nothing above should throw anything else
    problem = fmt::format("malformed: {}", e.what());
  }
  return nullptr;
}

const TuningEntry* TuningTable::find(std::string_view op, KernelPath path,
                                     const std::map<std::string, std::int64_t>& shape) const {
  const auto cls = rules::shape_class(op, shape);
  if (const auto it = by_class_.find(class_key(op, path, cls)); it != by_class_.end())
    return &entries_[it->second];
  if (const TuningEntry* leaf = apply_rule(op, path, shape)) return leaf;
  std::vector<const TuningEntry*> same;
  std::vector<const std::map<std::string, std::int64_t>*> classes;
  for (const auto& e : entries_) {
    if (e.op != op || e.path != path) continue;
    same.push_back(&e);
    classes.push_back(&e.shape_class);
  }
  const auto nearest = rules::nearest_class(cls, classes);
  return nearest ? same[*nearest] : nullptr;
}

}  // namespace k3k

namespace k3k {

const TuningEntry* TuningTable::apply_rule(std::string_view op, KernelPath path,
                                           const std::map<std::string, std::int64_t>& shape,
                                           std::vector<RuleStep>* steps) const {
  const auto rule = std::find_if(rules_.begin(), rules_.end(),
                                 [&](const TuningRule& r) { return r.op == op && r.path == path; });
  if (rule == rules_.end()) return nullptr;
  const auto cls = rules::shape_class(op, shape);
  std::size_t at = 0;
  while (rule->nodes[at].key.size() > 0) {
    const TuningRule::Node& n = rule->nodes[at];
    const auto it = cls.find(n.key);
    if (it == cls.end()) return nullptr;  // a class without the key: the rule says nothing
    const bool below = it->second < n.below;
    if (steps != nullptr) steps->push_back({n.key, it->second, n.below, below});
    at = below ? n.then_node : n.else_node;
  }
  return &rule->leaves[rule->nodes[at].leaf];
}

}  // namespace k3k
