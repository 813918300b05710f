#include "harness/common/model/model_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace k3model {
namespace {

[[noreturn]] void fail(const std::string& file, const toml::node& node, const std::string& key,
                       const std::string& what) {
  throw ModelConfigError(fmt::format("{}:{}: {}: {}", file, node.source().begin.line, key, what));
}

// Reads the keys of one table, each exactly once, and reports unknown or missing ones.
class TableReader {
 public:
  TableReader(std::string file, std::string table, const toml::table& t, const toml::node& node)
      : file_(std::move(file)), table_(std::move(table)), t_(t), node_(node) {}

  int integer(const std::string& key, std::int64_t min, std::int64_t max) {
    const toml::node& v = at(key);
    const auto x = v.value_exact<std::int64_t>();
    if (!x || *x < min || *x > max)
      fail(file_, v, name(key), fmt::format("expected an integer in [{}, {}]", min, max));
    return static_cast<int>(*x);
  }
  double number(const std::string& key, double min_exclusive) {
    const toml::node& v = at(key);
    const auto x = v.value<double>();
    if (!x || !std::isfinite(*x) || *x <= min_exclusive)
      fail(file_, v, name(key), fmt::format("expected a finite number > {}", min_exclusive));
    return *x;
  }
  bool boolean(const std::string& key) {
    const toml::node& v = at(key);
    const auto x = v.value_exact<bool>();
    if (!x) fail(file_, v, name(key), "expected true or false");
    return *x;
  }
  std::string text(const std::string& key) {
    const toml::node& v = at(key);
    const auto x = v.value_exact<std::string>();
    if (!x || x->empty()) fail(file_, v, name(key), "expected a non-empty string");
    return *x;
  }
  bool has(const std::string& key) const { return t_.get(key) != nullptr; }
  // Unknown keys are errors (a misspelt key would otherwise be silently ignored).
  void finish() const {
    for (const auto& [k, v] : t_) {
      if (!seen_.contains(std::string(k.str())))
        fail(file_, v, name(std::string(k.str())), "unknown key");
    }
  }
  // "file:line" of every key read, for checks that involve several keys.
  void record_lines(std::map<std::string, std::string>& lines) const {
    for (const auto& [k, v] : t_)
      lines[name(std::string(k.str()))] = fmt::format("{}:{}", file_, v.source().begin.line);
  }

 private:
  std::string name(const std::string& key) const { return table_ + "." + key; }
  const toml::node& at(const std::string& key) {
    seen_.insert(key);
    const toml::node* v = t_.get(key);
    if (v == nullptr) fail(file_, node_, name(key), "missing");
    return *v;
  }
  std::string file_, table_;
  const toml::table& t_;
  const toml::node& node_;
  std::set<std::string> seen_;
};

const toml::table* table_of(const std::string& file, const toml::table& doc, const char* name,
                            bool required) {
  const toml::node* n = doc.get(name);
  if (n == nullptr) {
    if (required)
      throw ModelConfigError(fmt::format("{}:1: {}: missing table [{}]", file, name, name));
    return nullptr;
  }
  if (!n->is_table()) fail(file, *n, name, "expected a table");
  return n->as_table();
}

using WhereFn = std::function<std::string(const std::string& key)>;

void check(bool ok, const WhereFn& where, const char* key, const std::string& what) {
  if (!ok) throw ModelConfigError(fmt::format("{}: {}: {}", where(key), key, what));
}

}  // namespace

int ModelConfig::linear_layers() const {
  int n = 0;
  for (int i = 0; i < layers; ++i) n += is_linear(i);
  return n;
}

std::int64_t ModelConfig::body_params() const {
  const std::int64_t h = hidden;
  const std::int64_t mlp = 3 * h * intermediate;
  const std::int64_t full = q_proj_n() * h + 2 * kv_dim() * h + h * attn_dim();
  const std::int64_t lin =
      (conv_dim() + lin_value_dim() + 2 * lin_v_heads) * h + h * lin_value_dim();
  return std::int64_t(layers) * mlp + std::int64_t(full_layers()) * full +
         std::int64_t(linear_layers()) * lin;
}

void ModelConfig::validate(const WhereFn& where) const {
  auto mult64 = [](std::int64_t x) { return x > 0 && x % 64 == 0; };
  check(mult64(hidden), where, "model.hidden",
        "must be a positive multiple of 64 (the K of W4B64 blocks)");
  check(mult64(intermediate), where, "model.intermediate", "must be a positive multiple of 64");
  check(q_heads % kv_heads == 0, where, "model.kv_heads", "must divide q_heads");
  check(head_dim % 2 == 0, where, "model.head_dim", "must be even (RoPE pairs)");
  check(mult64(attn_dim()), where, "model.q_heads",
        "q_heads * head_dim must be a multiple of 64 (the K of o_proj)");
  check(rotary_dim % 2 == 0 && rotary_dim <= head_dim, where, "model.rotary_dim",
        "must be even and at most head_dim");
  if (has_linear_attention()) {
    check(lin_v_heads % lin_k_heads == 0, where, "linear_attention.v_heads",
          "must be a multiple of k_heads");
    check(mult64(lin_value_dim()), where, "linear_attention.v_dim",
          "v_heads * v_dim must be a multiple of 64 (the K of out_proj)");
  }
}

std::map<std::string, std::string> ModelConfig::shape_values() const {
  auto num = [](double x) { return fmt::format("{}", x); };
  return {{"hidden", std::to_string(hidden)},
          {"intermediate", std::to_string(intermediate)},
          {"layers", std::to_string(layers)},
          {"q_heads", std::to_string(q_heads)},
          {"kv_heads", std::to_string(kv_heads)},
          {"head_dim", std::to_string(head_dim)},
          {"rotary_dim", std::to_string(rotary_dim)},
          {"rope_theta", num(rope_theta)},
          {"vocab", std::to_string(vocab)},
          {"tied", tied_embeddings ? "1" : "0"},
          {"qk_norm", qk_norm ? "1" : "0"},
          {"attn_gate", attn_output_gate ? "1" : "0"},
          {"rms_eps", num(rms_eps)},
          {"full_attn_interval", std::to_string(full_attention_interval)},
          {"lin_k_heads", std::to_string(lin_k_heads)},
          {"lin_v_heads", std::to_string(lin_v_heads)},
          {"lin_k_dim", std::to_string(lin_k_dim)},
          {"lin_v_dim", std::to_string(lin_v_dim)},
          {"conv_kernel", std::to_string(conv_kernel)}};
}

ModelConfig ModelConfig::from_shape_values(
    const std::function<std::string(const std::string&)>& get) {
  ModelConfig c;
  auto i = [&](const char* k) { return std::stoi(get(k)); };
  c.hidden = i("hidden");
  c.intermediate = i("intermediate");
  c.layers = i("layers");
  c.q_heads = i("q_heads");
  c.kv_heads = i("kv_heads");
  c.head_dim = i("head_dim");
  c.rotary_dim = i("rotary_dim");
  c.rope_theta = std::stod(get("rope_theta"));
  c.vocab = i("vocab");
  c.tied_embeddings = i("tied") != 0;
  c.qk_norm = i("qk_norm") != 0;
  c.attn_output_gate = i("attn_gate") != 0;
  c.rms_eps = std::stod(get("rms_eps"));
  c.full_attention_interval = i("full_attn_interval");
  c.lin_k_heads = i("lin_k_heads");
  c.lin_v_heads = i("lin_v_heads");
  c.lin_k_dim = i("lin_k_dim");
  c.lin_v_dim = i("lin_v_dim");
  c.conv_kernel = i("conv_kernel");
  c.name = "shape";
  c.id = "shape";
  if (c.has_linear_attention() && (c.lin_k_heads < 1 || c.lin_v_heads < 1 || c.lin_k_dim < 1 ||
                                   c.lin_v_dim < 1 || c.conv_kernel < 1))
    throw ModelConfigError(
        "--shape: full_attn_interval > 1 needs every lin_* key and conv_kernel > 0");
  c.validate([](const std::string&) { return std::string("--shape"); });
  return c;
}

ModelConfig load_model_config(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ModelConfigError(fmt::format("{}: no such file", path));
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw ModelConfigError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  for (const auto& [k, v] : doc) {
    if (k != "model" && k != "linear_attention" && k != "bench")
      fail(path, v, std::string(k.str()), "unknown table (known: model, linear_attention, bench)");
  }
  ModelConfig c;
  std::map<std::string, std::string> lines;
  c.file = path;
  c.id = std::filesystem::path(path).stem().string();
  {
    const toml::table* t = table_of(path, doc, "model", true);
    TableReader r(path, "model", *t, *doc.get("model"));
    c.name = r.text("name");
    c.source = r.text("source");
    c.hidden = r.integer("hidden", 64, 1 << 16);
    c.intermediate = r.integer("intermediate", 64, 1 << 18);
    c.layers = r.integer("layers", 1, 1024);
    c.q_heads = r.integer("q_heads", 1, 1024);
    c.kv_heads = r.integer("kv_heads", 1, 1024);
    c.head_dim = r.integer("head_dim", 2, 1024);
    c.rotary_dim = r.integer("rotary_dim", 0, 1024);
    c.rope_theta = r.number("rope_theta", 0.0);
    c.vocab = r.integer("vocab", 1, 1 << 22);
    c.tied_embeddings = r.boolean("tied_embeddings");
    c.qk_norm = r.boolean("qk_norm");
    c.attn_output_gate = r.boolean("attn_output_gate");
    c.rms_eps = r.number("rms_eps", 0.0);
    if (r.has("max_context")) c.max_context = r.integer("max_context", 1, 1 << 30);
    r.finish();
    r.record_lines(lines);
  }
  if (const toml::table* t = table_of(path, doc, "linear_attention", false)) {
    TableReader r(path, "linear_attention", *t, *doc.get("linear_attention"));
    c.full_attention_interval = r.integer("full_attention_interval", 2, 1024);
    c.lin_k_heads = r.integer("k_heads", 1, 1024);
    c.lin_v_heads = r.integer("v_heads", 1, 1024);
    c.lin_k_dim = r.integer("k_dim", 1, 4096);
    c.lin_v_dim = r.integer("v_dim", 1, 4096);
    c.conv_kernel = r.integer("conv_kernel", 1, 16);
    r.finish();
    r.record_lines(lines);
  }
  if (const toml::table* t = table_of(path, doc, "bench", false)) {
    TableReader r(path, "bench", *t, *doc.get("bench"));
    if (r.has("prefill_tokens")) c.bench_prefill_tokens = r.integer("prefill_tokens", 1, 1 << 20);
    if (r.has("context")) c.bench_context = r.integer("context", 1, 1 << 24);
    r.finish();
  }
  c.validate([&](const std::string& key) {
    const auto it = lines.find(key);
    return it != lines.end() ? it->second : path + ":1";
  });
  return c;
}

std::string resolve_model_path(const std::string& name_or_path, const std::string& models_dir) {
  if (name_or_path.ends_with(".toml")) {
    if (!std::filesystem::exists(name_or_path))
      throw ModelConfigError(fmt::format("--model: {}: no such file", name_or_path));
    return name_or_path;
  }
  const std::string file = models_dir + "/" + name_or_path + ".toml";
  if (std::filesystem::exists(file)) return file;
  std::vector<std::string> known;
  if (std::filesystem::is_directory(models_dir)) {
    for (const auto& e : std::filesystem::directory_iterator(models_dir))
      if (e.path().extension() == ".toml") known.push_back(e.path().stem().string());
  }
  std::sort(known.begin(), known.end());
  throw ModelConfigError(fmt::format("--model: unknown model '{}' (known in {}: {})", name_or_path,
                                     models_dir, fmt::join(known, ", ")));
}

}  // namespace k3model
