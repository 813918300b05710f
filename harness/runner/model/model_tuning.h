// A tuning table applied to a model's Linears: for each distinct (op, N, K) of the model, the
// tiling the table's entry (or nearest class) gives it, decided once before any timing, as an
// engine decides at load. Used by k3bench --model and by the model_pp / model_tg / model_pg ops,
// so a table reaches the whole model the same way from either.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "harness/common/model/model_config.h"
#include "harness/runner/model/model_params.h"
#include "k3k/dispatch.h"
#include "k3k/tuning.h"

namespace k3runner::model {

// Fills `params.linear` for every Linear of `config` an entry of `table` covers on `path`; the
// prefill Linears are looked up at M = `prefill_tokens`. Returns {"<op>/n<N>/k<K>": entry id}.
nlohmann::json apply_table_to_linears(const k3k::TuningTable& table,
                                      const k3model::ModelConfig& config, k3k::KernelPath path,
                                      std::int64_t prefill_tokens, ModelParams& params);

}  // namespace k3runner::model
