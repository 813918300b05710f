// decide_tcm_attention_prefill (k3k/tcm_attention.h): every gate of the TCM attention driver, with
// the reason it gives.
#include <algorithm>

#include "k3k/tcm_attention.h"

namespace k3k {

namespace {
std::string kib(std::int64_t bytes) {
  return std::to_string(bytes / 1024) + " KiB";
}
}  // namespace

TcmAttentionGate decide_tcm_attention_prefill(const KvCache& cache, std::int64_t tokens,
                                              const AttentionTiling& tiling,
                                              const TcmWorkspace* workspace,
                                              const TcmAttentionParams& params) {
  TcmAttentionGate d;
  auto off = [&](std::string why) {
    d.use_tcm = false;
    d.reason = std::move(why);
    return d;
  };
  if (params.use == TcmUse::kOff) return off("tcm=off");
  if (params.table_disables) return off("the tuning table disables TCM attention for this shape");
  if (workspace == nullptr) return off("no TCM backend");
  if (tokens < 1) return off("no query rows");
  const std::int64_t context = cache.length() - cache.first_visible();
  if (params.use == TcmUse::kAuto) {
    if (workspace->tcm().backend() != tcm::Backend::kReal && !params.auto_allows_emulated) {
      return off(
          "TCM is emulated (ordinary memory): auto takes TCM attention only on real TCM (tcm=on "
          "measures it)");
    }
    if (context < params.ctx_min) {
      return off("context " + std::to_string(context) + " < ctx_min " +
                 std::to_string(params.ctx_min));
    }
  }
  const int rows = static_cast<int>(std::min<std::int64_t>(tiling.q_tile, tokens));
  const int hd = cache.head_dim(), kv_block = tiling.kv_block;
  const std::int64_t block_bytes =
      static_cast<std::int64_t>(workspace->tcm().geometry().block_bytes);
  const std::int64_t one = tcm_attention_bytes(hd, rows, kv_block, 1);
  if (one > block_bytes) {
    return off("the working set of q_tile " + std::to_string(rows) + ", kv_block " +
               std::to_string(kv_block) + " (" + kib(one) + ") exceeds a TCM block (" +
               kib(block_bytes) + ")");
  }
  if (params.kv_blocks > 0) {
    const std::int64_t need = tcm_attention_bytes(hd, rows, kv_block, params.kv_blocks);
    if (need > block_bytes) {
      return off("kv_blocks " + std::to_string(params.kv_blocks) + " needs " + kib(need) +
                 " > a TCM block (" + kib(block_bytes) + ")");
    }
    d.kv_blocks = params.kv_blocks;
  } else {
    // As many blocks as fit, no more than the context holds (the working set grows linearly).
    const std::int64_t per_block = tcm_attention_bytes(hd, rows, kv_block, 2) - one;
    const std::int64_t fit = 1 + (block_bytes - one) / std::max<std::int64_t>(1, per_block);
    const std::int64_t needed = (context + kv_block - 1) / kv_block;
    d.kv_blocks = static_cast<int>(std::clamp<std::int64_t>(std::min(fit, needed), 1, 1 << 16));
    while (d.kv_blocks > 1 && tcm_attention_bytes(hd, rows, kv_block, d.kv_blocks) > block_bytes) {
      --d.kv_blocks;  // the per-region rounding can cost a few bytes more than linear
    }
  }
  const int usable = workspace->usable_blocks();
  if (usable < 1) return off("no usable TCM block (all held or unmapped)");
  d.use_tcm = true;
  d.reason = std::string(params.use == TcmUse::kOn ? "tcm=on" : "gates passed") + ": context " +
             std::to_string(context) + ", " + std::to_string(usable) + " blocks, stage " +
             std::to_string(d.kv_blocks) + " x " + std::to_string(kv_block) + " positions (" +
             kib(tcm_attention_bytes(hd, rows, kv_block, d.kv_blocks)) + ")";
  return d;
}

}  // namespace k3k
