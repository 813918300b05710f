// A case's work and accuracy as k3bench's result document writes them ("traffic", "accuracy"),
// and back: the kernel plugin (plugin/k3bench_plugin.h) carries them across its C interface as
// this text, so a second build's case reads exactly as one of this build's.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "harness/runner/op_case.h"

namespace k3runner {

nlohmann::json traffic_json(const Traffic& t);
// Throws std::runtime_error naming the missing or mistyped field.
Traffic traffic_from_json(const nlohmann::json& j);

nlohmann::json accuracy_json(const std::optional<Accuracy>& accuracy);
Accuracy accuracy_from_json(const nlohmann::json& j);

}  // namespace k3runner
