#include "harness/host/bench/json_schema.h"

#include <set>

#include <fmt/format.h>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace k3bench {

SchemaCheck check_against_schema(const nlohmann::json& schema_doc, const nlohmann::json& doc) {
  valijson::Schema schema;
  valijson::SchemaParser parser;
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter adapter(doc);
  SchemaCheck check;
  if (validator.validate(schema, adapter, &results)) return check;
  check.valid = false;
  valijson::ValidationResults::Error e;
  std::set<std::string> seen;
  while (results.popError(e)) {
    if (e.description.rfind("Failed to validate", 0) == 0) continue;
    std::string where;
    for (const auto& part : e.context) where += part;
    std::string line = fmt::format("{}: {}", where, e.description);
    if (seen.insert(line).second) check.problems.push_back(std::move(line));
  }
  return check;
}

}  // namespace k3bench
