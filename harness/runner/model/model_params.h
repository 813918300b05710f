// Every per-op parameter of a forward pass, from one place. Built-in defaults, then the
// command line's (k3bench model_pp/model_tg params), then per-shape entries keyed like the tuning
// table's entry ids ("linear_decode/n2048/k2048", configs/schema: op + shape class): when the
// runtime tuning tables arrive, their loader fills `linear` and nothing else changes. The forward
// resolves each matrix's parameters once, when it is built, never inside a timed call.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "k3k/attention.h"
#include "k3k/deltanet.h"
#include "k3k/kv_cache.h"
#include "k3k/linear.h"
#include "k3k/tcm_linear.h"

namespace k3runner::model {

struct ModelParams {
  k3k::KvDtype kv_dtype = k3k::KvDtype::f16;  // llama.cpp's default cache type
  k3k::LinearTiling linear_prefill{};
  k3k::LinearTiling linear_decode{};
  k3k::AttentionTiling attention_prefill{};
  k3k::DecodeTiling attention_decode{};
  k3k::GdnPrefillTiling gdn_prefill{};
  k3k::GdnDecodeTiling gdn_decode{};
  // The decode Linears' TCM pipeline: a workspace (null: every decode Linear streams from DRAM)
  // and its parameters; the gate decides per matrix, once, when the forward is built.
  k3k::TcmWorkspace* tcm_workspace = nullptr;
  k3k::TcmDecodeParams tcm_decode{};
  // Per-shape Linear tilings: "linear_prefill/n<N>/k<K>" or "linear_decode/n<N>/k<K>".
  std::map<std::string, k3k::LinearTiling> linear;

  k3k::LinearTiling linear_for(bool decode, std::int64_t n, std::int64_t k) const {
    const auto it = linear.find(std::string(decode ? "linear_decode" : "linear_prefill") + "/n" +
                                std::to_string(n) + "/k" + std::to_string(k));
    return it != linear.end() ? it->second : decode ? linear_decode : linear_prefill;
  }
};

}  // namespace k3runner::model
