#include "harness/runner/model_sizes.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "harness/runner/errors.h"

namespace k3runner {

ModelRunSize model_run_size(const ModelCommandOptions& o) {
  // The depth is prefilled in batches no longer than the tests' own (the activation buffers are
  // sized by the longest batch), at least 512 tokens at a time.
  const std::int64_t depth = o.depth;
  const std::int64_t tg_prompt = o.depth > 0 ? o.depth : o.tg_prompt;
  ModelRunSize s;
  s.batch = std::max<std::int64_t>(
      {o.pp, o.pg_pp, std::min<std::int64_t>(depth, 512), o.depth > 0 ? 1 : o.tg_prompt});
  struct Need {
    std::int64_t tokens;
    std::string option;
  };
  // As the forward sizes its caches: the longest of the three tests' contexts, each named by the
  // options that set it (the depth first: it is in every test's context).
  const std::string depth_text = fmt::format("--depth {}", depth);
  auto with_depth = [&](const std::string& option) {
    return depth > 0 ? depth_text + " and " + option : option;
  };
  std::vector<Need> needs;
  needs.push_back({depth + o.pp, o.pp > 0 ? with_depth(fmt::format("--pp {}", o.pp)) : depth_text});
  const std::string prompt = depth > 0 ? depth_text : fmt::format("--tg-prompt {}", o.tg_prompt);
  needs.push_back(
      {tg_prompt + o.tg, o.tg > 0 ? fmt::format("{} and --tg {}", prompt, o.tg) : prompt});
  if (o.pg_pp > 0 || o.pg_tg > 0)
    needs.push_back(
        {depth + o.pg_pp + o.pg_tg, with_depth(fmt::format("--pg {},{}", o.pg_pp, o.pg_tg))});
  const Need& most = *std::max_element(
      needs.begin(), needs.end(), [](const Need& a, const Need& b) { return a.tokens < b.tokens; });
  s.capacity = most.tokens;
  s.option = most.option;
  return s;
}

std::int64_t forward_bytes(const k3model::ModelConfig& c, std::int64_t kv_element_bytes,
                           const ModelRunSize& size) {
  const std::int64_t kv =
      std::int64_t(c.full_layers()) * 2 * c.kv_dim() * size.capacity * kv_element_bytes;
  const std::int64_t states = std::int64_t(c.linear_layers()) *
                              (std::int64_t(c.lin_v_heads) * c.lin_k_dim * c.lin_v_dim +
                               (c.conv_kernel - 1) * c.conv_dim()) *
                              4 * 2;  // and their snapshot
  std::int64_t row = 3 * std::int64_t(c.hidden) + 2 * std::int64_t(c.intermediate);
  if (c.full_layers() > 0) row += c.q_proj_n() + 2 * c.kv_dim() + 3 * c.attn_dim();
  if (c.linear_layers() > 0) row += 2 * c.conv_dim() + 2 * c.lin_value_dim() + 4 * c.lin_v_heads;
  return kv + states + size.batch * row * 4 + std::int64_t(c.vocab) * 4;
}

void check_model_run_size(const k3model::ModelConfig& c, const ModelRunSize& size,
                          std::int64_t kv_element_bytes, std::int64_t weight_bytes,
                          long long available_bytes) {
  const std::string file = c.file.empty() ? c.id : c.file;
  if (c.max_context > 0 && size.capacity > c.max_context)
    throw UsageError(fmt::format(
        "{}: {} tokens in the KV cache, beyond {}'s context of {} tokens (max_context in {})",
        size.option, size.capacity, c.name, c.max_context, file));
  const std::int64_t need = forward_bytes(c, kv_element_bytes, size);
  if (available_bytes > 0 && need + weight_bytes > available_bytes * 8 / 10)
    throw UsageError(fmt::format(
        "{}: {} tokens in the KV cache and batches of {} need about {:.1f} GiB besides the "
        "weights' {:.1f} GiB; {:.1f} GiB is available",
        size.option, size.capacity, size.batch, need / 1073741824.0, weight_bytes / 1073741824.0,
        available_bytes / 1073741824.0));
}

}  // namespace k3runner
