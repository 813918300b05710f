// A model's dimensions (configs/models/NAME.toml): the single source of every shape k3tune
// benchmarks for that model and of the whole-model runs. Read by k3tune (bench --model, model) and
// by k3bench
// (--model, and the model_pp / model_tg ops, which receive the same values as shape keys).
//
// File format (every key required unless marked; unknown keys are errors):
//   [model]  name, source (where the numbers come from), hidden, intermediate, layers, q_heads,
//            kv_heads, head_dim, rotary_dim, rope_theta, vocab, tied_embeddings, qk_norm,
//            attn_output_gate (q_proj also produces a per-head sigmoid gate: N doubled), rms_eps;
//            optional: max_context (max_position_embeddings: the longest context the model
//            takes; runs and counts beyond it are refused)
//   [linear_attention]  (optional; Qwen3.5's Gated DeltaNet layers) full_attention_interval
//            (layer i is full attention iff (i + 1) % interval == 0, the others linear), k_heads,
//            v_heads, k_dim, v_dim, conv_kernel
//   [bench]  (optional) prefill_tokens (M of the prefill op cells, default 128), context (the
//            decode attention context, default 1024): benchmark choices, not model facts.
// A malformed file is one line "file:line: key: what" (ModelConfigError).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

namespace k3model {

struct ModelConfigError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ModelConfig {
  std::string id;      // file stem, e.g. "qwen3-1.7b"
  std::string name;    // "Qwen3-1.7B"
  std::string source;  // provenance of the numbers
  std::string file;    // where it was read from ("" when built from shape values)

  int hidden = 0, intermediate = 0, layers = 0;
  int q_heads = 0, kv_heads = 0, head_dim = 0, rotary_dim = 0;
  double rope_theta = 0;
  int vocab = 0;
  bool tied_embeddings = true, qk_norm = false, attn_output_gate = false;
  double rms_eps = 1e-6;
  std::int64_t max_context = 0;  // tokens; 0: the file does not say (not part of the shape keys)

  // Gated DeltaNet layers; full_attention_interval 1 (and zero dims) when there are none.
  int full_attention_interval = 1;
  int lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, conv_kernel = 0;

  int bench_prefill_tokens = 128, bench_context = 1024;

  bool has_linear_attention() const { return full_attention_interval > 1; }
  bool is_linear(int layer) const {
    return has_linear_attention() && (layer + 1) % full_attention_interval != 0;
  }
  int linear_layers() const;
  int full_layers() const { return layers - linear_layers(); }
  // Output features of q_proj (doubled by the output gate), and of the other projections.
  std::int64_t q_proj_n() const {
    return std::int64_t(q_heads) * head_dim * (attn_output_gate ? 2 : 1);
  }
  std::int64_t attn_dim() const { return std::int64_t(q_heads) * head_dim; }
  std::int64_t kv_dim() const { return std::int64_t(kv_heads) * head_dim; }
  std::int64_t lin_key_dim() const { return std::int64_t(lin_k_heads) * lin_k_dim; }
  std::int64_t lin_value_dim() const { return std::int64_t(lin_v_heads) * lin_v_dim; }
  std::int64_t conv_dim() const { return 2 * lin_key_dim() + lin_value_dim(); }
  // Weight counts (matrices only; norms and the few per-head vectors are negligible).
  std::int64_t body_params() const;
  std::int64_t embedding_params() const { return std::int64_t(vocab) * hidden; }

  // Throws ModelConfigError("<where>: <key>: <what>") for an inconsistent model (a projection's K
  // not a multiple of 64, kv_heads not dividing q_heads, ...).
  // `where(key)` names the file and line of a key.
  void validate(const std::function<std::string(const std::string& key)>& where) const;

  // The dimensions as shape keys (what the model_pp / model_tg ops declare), and back.
  std::map<std::string, std::string> shape_values() const;
  // `get(key)` returns the value text of a key (a number; booleans as 0/1).
  static ModelConfig from_shape_values(const std::function<std::string(const std::string&)>& get);
};

// Parses and validates a model file.
ModelConfig load_model_config(const std::string& path);

// NAME (a file in models_dir: NAME.toml) or a path ending in .toml. ModelConfigError listing the
// known names when neither exists.
std::string resolve_model_path(const std::string& name_or_path, const std::string& models_dir);

}  // namespace k3model
