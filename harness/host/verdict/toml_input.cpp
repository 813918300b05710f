#include "harness/host/verdict/toml_input.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/host/verdict/verdict_error.h"

namespace k3verdict {

toml::table parse_toml_file(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw VerdictError(fmt::format("{}: no such file", path));
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw VerdictError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
}

void toml_fail(const std::string& path, const toml::node& node, const std::string& key,
               const std::string& what) {
  throw VerdictError(fmt::format("{}:{}: {}: {}", path, node.source().begin.line, key, what));
}

double toml_number(const std::string& path, const toml::node& node, const std::string& key) {
  if (!node.is_number()) toml_fail(path, node, key, "expected a number");
  return *node.value<double>();
}

std::string toml_string(const std::string& path, const toml::node& node, const std::string& key) {
  if (!node.is_string()) toml_fail(path, node, key, "expected a string");
  return *node.value<std::string>();
}

bool toml_bool(const std::string& path, const toml::node& node, const std::string& key) {
  if (!node.is_boolean()) toml_fail(path, node, key, "expected true or false");
  return *node.value<bool>();
}

}  // namespace k3verdict
