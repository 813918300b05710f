#include "harness/runner/case_json.h"

#include <stdexcept>

#include <fmt/format.h>

#include "harness/runner/model/model_report.h"

namespace k3runner {
namespace {

template <class T>
T field(const nlohmann::json& j, const char* object, const char* name) {
  if (!j.is_object() || !j.contains(name))
    throw std::runtime_error(fmt::format("{}: missing field '{}'", object, name));
  try {
    return j.at(name).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(fmt::format("{}: field '{}' has the wrong type", object, name));
  }
}

}  // namespace

nlohmann::json traffic_json(const Traffic& t) {
  nlohmann::json j = {
      {"weight_bytes", t.weight_bytes}, {"activation_bytes", t.activation_bytes}, {"ops", t.ops}};
  if (t.by_source) j["by_source"] = model::traffic_json(*t.by_source);
  return j;
}

Traffic traffic_from_json(const nlohmann::json& j) {
  Traffic t;
  t.weight_bytes = field<std::int64_t>(j, "traffic", "weight_bytes");
  t.activation_bytes = field<std::int64_t>(j, "traffic", "activation_bytes");
  t.ops = field<std::int64_t>(j, "traffic", "ops");
  if (j.contains("by_source")) {
    // Whole bytes per call, written as doubles by model::traffic_json.
    const nlohmann::json& s = j["by_source"];
    const auto bytes = [&](const char* name) {
      return static_cast<std::int64_t>(field<double>(s, "traffic.by_source", name));
    };
    t.by_source = k3k::Traffic{bytes("weights"),  bytes("metadata"), bytes("kv_read"),
                               bytes("kv_write"), bytes("state"),    bytes("activations")};
  }
  return t;
}

nlohmann::json accuracy_json(const std::optional<Accuracy>& accuracy) {
  if (!accuracy) return nullptr;
  const Accuracy& a = *accuracy;
  return {{"reference", a.reference},
          {"pass", a.pass},
          {"checked", a.checked},
          {"total", a.total},
          {"max_abs_err", a.max_abs_err},
          {"max_rel_err", a.max_rel_err},
          {"worst_error_to_bound", a.worst_ratio},
          {"bound_at_worst", a.worst_bound},
          {"extra", a.extra},
          {"output_checksum", a.output_checksum}};
}

Accuracy accuracy_from_json(const nlohmann::json& j) {
  Accuracy a;
  a.reference = field<std::string>(j, "accuracy", "reference");
  a.pass = field<bool>(j, "accuracy", "pass");
  a.checked = field<std::int64_t>(j, "accuracy", "checked");
  a.total = field<std::int64_t>(j, "accuracy", "total");
  a.max_abs_err = field<double>(j, "accuracy", "max_abs_err");
  a.max_rel_err = field<double>(j, "accuracy", "max_rel_err");
  a.worst_ratio = field<double>(j, "accuracy", "worst_error_to_bound");
  a.worst_bound = field<double>(j, "accuracy", "bound_at_worst");
  a.extra = j.value("extra", nlohmann::json::object());
  a.output_checksum = j.value("output_checksum", nlohmann::json(nullptr));
  return a;
}

}  // namespace k3runner
