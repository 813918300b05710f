// A JSON document against a JSON Schema (valijson), with the failures a person can act on:
// valijson reports each failure again at every enclosing level ("Failed to validate against schema
// associated with property name 'k'"); only the innermost message says what is wrong, so those
// are kept, each once, as "<where>: <what>". The tuning-table and export checks share it.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3bench {

struct SchemaCheck {
  bool valid = true;
  std::vector<std::string> problems;  // innermost failures, in valijson's order, each once
};
SchemaCheck check_against_schema(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace k3bench
