#include "harness/host/bench/published.h"

#include <toml++/toml.h>

#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3bench {
namespace {

[[noreturn]] void fail(const std::string& file, const toml::node& node, const std::string& key,
                       const std::string& what) {
  throw UserError(fmt::format("{}:{}: {}: {}", file, node.source().begin.line, key, what));
}

}  // namespace

std::string PublishedFigure::text() const {
  return low == high ? fmt::format("{:.2f}", low) : fmt::format("{:.2f}-{:.2f}", low, high);
}

std::string PublishedFigure::citation() const {
  return earlier_revision.empty() ? source
                                  : source + " [earlier revision: " + earlier_revision + "]";
}

std::vector<PublishedFigure> load_published(const std::string& path) {
  if (!std::filesystem::exists(path)) return {};
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw UserError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  std::vector<PublishedFigure> out;
  const toml::node* list = doc.get("figure");
  if (list == nullptr) return out;
  if (!list->is_array_of_tables()) fail(path, *list, "figure", "expected [[figure]] tables");
  static const std::set<std::string> kKeys = {"model",   "test",         "engine",
                                              "weights", "source",       "note",
                                              "range",   "tokens_per_s", "earlier_revision"};
  for (const auto& node : *list->as_array()) {
    const toml::table& t = *node.as_table();
    PublishedFigure f;
    for (const auto& [k, v] : t) {
      const std::string key = "figure." + std::string(k.str());
      if (!kKeys.contains(std::string(k.str()))) fail(path, v, key, "unknown key");
      if (k == "tokens_per_s") {
        const auto x = v.value<double>();
        if (!x || *x <= 0) fail(path, v, key, "expected a positive number");
        f.low = f.high = *x;
      } else if (k == "range") {
        const toml::array* a = v.as_array();
        if (a == nullptr || a->size() != 2 || !a->get(0)->value<double>() ||
            !a->get(1)->value<double>())
          fail(path, v, key, "expected [low, high]");
        f.low = *a->get(0)->value<double>();
        f.high = *a->get(1)->value<double>();
        if (!(f.low > 0 && f.low <= f.high)) fail(path, v, key, "expected 0 < low <= high");
      } else {
        const auto s = v.value_exact<std::string>();
        if (!s || s->empty()) fail(path, v, key, "expected a non-empty string");
        (k == "model"              ? f.model
         : k == "test"             ? f.test
         : k == "engine"           ? f.engine
         : k == "weights"          ? f.weights
         : k == "source"           ? f.source
         : k == "earlier_revision" ? f.earlier_revision
                                   : f.note) = *s;
      }
    }
    const std::pair<const char*, const std::string*> required[] = {
        {"model", &f.model}, {"test", &f.test}, {"engine", &f.engine}, {"source", &f.source}};
    for (const auto& [name, value] : required)
      if (value->empty()) fail(path, node, std::string("figure.") + name, "missing");
    if (f.low <= 0) fail(path, node, "figure.tokens_per_s", "missing (or range)");
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace k3bench
