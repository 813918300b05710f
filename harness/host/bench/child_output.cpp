#include "harness/host/bench/child_output.h"

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "harness/host/bench/json_schema.h"
#include "harness/host/bench/user_error.h"

namespace k3bench {

namespace {

// Each form's name and version, and its schema file's stem (configs/schema/<stem>.schema.json).
struct Form {
  ChildOutput kind;
  const char* id;
  const char* stem;
};
constexpr Form kForms[] = {
    {ChildOutput::kBench, "k3tune.bench/1", "k3tune-bench"},
    {ChildOutput::kTuneFarm, "k3tune.tune-farm/1", "k3tune-tune-farm"},
    {ChildOutput::kCount, "k3tune.count/1", "k3tune-count"},
    {ChildOutput::kBisect, "k3tune.bisect/1", "k3tune-bisect"},
};

const Form* form_of(ChildOutput kind) {
  for (const Form& f : kForms)
    if (f.kind == kind) return &f;
  return nullptr;  // kNone: text, no schema
}

}  // namespace

const char* schema_id(ChildOutput kind) {
  const Form* f = form_of(kind);
  return f != nullptr ? f->id : "";
}

std::string schema_path(const std::string& root, ChildOutput kind) {
  const Form* f = form_of(kind);
  if (f == nullptr) throw std::logic_error("schema_path: text output has no schema");
  return fmt::format("{}/configs/schema/{}.schema.json", root, f->stem);
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
