// Text forms of values that every report writer prints the same way.
#pragma once

#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace k3reports {

// Nanoseconds as microseconds with three decimals; "-" when there is no value.
inline std::string us(std::optional<double> ns) {
  return ns ? fmt::format("{:.3f}", *ns / 1e3) : "-";
}

// A parameter or shape value as a cell label shows it: strings bare, anything else as JSON.
inline std::string value_text(const nlohmann::json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace k3reports
