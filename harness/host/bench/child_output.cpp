#include "harness/host/bench/child_output.h"

#include <fstream>

#include <fmt/format.h>

#include "harness/host/bench/json_schema.h"
#include "harness/host/bench/user_error.h"

namespace k3bench {

namespace {

const char* file_stem(ChildOutput kind) {
  switch (kind) {
    case ChildOutput::kBench:
      return "k3tune-bench";
    case ChildOutput::kTuneFarm:
      return "k3tune-tune-farm";
    case ChildOutput::kCount:
      return "k3tune-count";
    case ChildOutput::kBisect:
      return "k3tune-bisect";
    case ChildOutput::kNone:
      break;
  }
  throw std::logic_error("child output without a schema");
}

}  // namespace

const char* schema_id(ChildOutput kind) {
  switch (kind) {
    case ChildOutput::kBench:
      return "k3tune.bench/1";
    case ChildOutput::kTuneFarm:
      return "k3tune.tune-farm/1";
    case ChildOutput::kCount:
      return "k3tune.count/1";
    case ChildOutput::kBisect:
      return "k3tune.bisect/1";
    case ChildOutput::kNone:
      break;
  }
  return "";
}

std::string schema_path(const std::string& root, ChildOutput kind) {
  return fmt::format("{}/configs/schema/{}.schema.json", root, file_stem(kind));
}

std::vector<std::string> child_output_problems(const std::string& root, ChildOutput kind,
                                               const nlohmann::json& doc) {
  if (kind == ChildOutput::kNone) return {};
  const std::string path = schema_path(root, kind);
  std::ifstream f(path);
  if (!f) throw UserError(fmt::format("{}: cannot read the schema of {}", path, schema_id(kind)));
  nlohmann::json schema;
  try {
    schema = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not JSON: {}", path, e.what()));
  }
  return check_against_schema(schema, doc).problems;
}

}  // namespace k3bench
