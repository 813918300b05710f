// Each ops/*.cpp file contributes its ops to the registry through one of these.
#pragma once

#include <vector>

#include "harness/runner/op_case.h"

namespace k3runner {
void add_quantize_ops(std::vector<OpInfo>& ops);
void add_linear_ops(std::vector<OpInfo>& ops);
void add_attention_ops(std::vector<OpInfo>& ops);
void add_kv_cache_ops(std::vector<OpInfo>& ops);
void add_small_ops(std::vector<OpInfo>& ops);
void add_membw_ops(std::vector<OpInfo>& ops);
void add_tcm_ops(std::vector<OpInfo>& ops);
void add_peak_ops(std::vector<OpInfo>& ops);
void add_gdn_ops(std::vector<OpInfo>& ops);
void add_model_ops(std::vector<OpInfo>& ops);

// Common parameter of the ops that use TCM: which backend (auto, real, emulated, off).
KeySpec tcm_backend_param();
}  // namespace k3runner
