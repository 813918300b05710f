// What the publish tests share: the real k3tune CLI run on a database, a site's files, and the
// links between its pages.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace k3test::publish {

struct Cmd {
  int code = -1;
  std::string out, err;
};

// `k3tune --root <source> --db DB ARGS...`, JS from the build's vendored scripts.
Cmd k3tune(const std::string& db, const std::vector<std::string>& args);
// `k3tune --json publish DIR`: its JSON outcome (empty object when it failed; the test fails).
nlohmann::json publish_json(const std::string& db, const std::filesystem::path& dir);

std::string read(const std::filesystem::path& p);
// Every file under `dir`, relative, '/'-separated (the manifest included).
std::vector<std::string> files_of(const std::filesystem::path& dir);
// The href values of `page`'s <a> elements.
std::vector<std::string> links_of(const std::string& page);
// The page of the site whose relative path starts with `prefix` (exactly one, else "").
std::string page_starting(const std::filesystem::path& dir, const std::string& prefix);
// Number of non-overlapping occurrences of `what` in `text`.
std::size_t count_of(const std::string& text, const std::string& what);
// The text of the element `<section id="ID">` up to its </section>.
std::string section_of(const std::string& page, const std::string& id);

}  // namespace k3test::publish
