#include "reports/boards.h"

#include <algorithm>
#include <filesystem>

#include "harness/host/verdict/toml_input.h"

namespace k3reports {
namespace {

const char* const kOrigins[] = {"published", "measured by peers", "derived"};

Ceiling read_ceiling(const std::string& path, const toml::table& t, const std::string& where) {
  Ceiling c;
  for (const auto& [k, v] : t) {
    const std::string key = where + "." + std::string(k.str());
    if (k == "name") {
      c.name = k3verdict::toml_string(path, v, key);
    } else if (k == "kind") {
      c.kind = k3verdict::toml_string(path, v, key);
      if (c.kind != "bandwidth" && c.kind != "compute")
        k3verdict::toml_fail(path, v, key, "expected \"bandwidth\" (GB/s) or \"compute\" (GOPS)");
    } else if (k == "value") {
      c.value = k3verdict::toml_number(path, v, key);
      if (!(c.value > 0)) k3verdict::toml_fail(path, v, key, "expected a positive number");
    } else if (k == "origin") {
      c.origin = k3verdict::toml_string(path, v, key);
      if (std::find(std::begin(kOrigins), std::end(kOrigins), c.origin) == std::end(kOrigins))
        k3verdict::toml_fail(path, v, key, "expected \"published\", \"measured by peers\" or \"derived\"");
    } else if (k == "source") {
      c.source = k3verdict::toml_string(path, v, key);
    } else {
      k3verdict::toml_fail(path, v, key, "unknown key (known: name, kind, value, origin, source)");
    }
  }
  for (const char* required : {"name", "kind", "value", "origin", "source"}) {
    if (!t.contains(required)) k3verdict::toml_fail(path, t, where + "." + required, "missing");
  }
  return c;
}

Board read_board(const std::string& path) {
  const toml::table doc = k3verdict::parse_toml_file(path);
  Board b;
  b.file = path;
  for (const auto& [k, v] : doc) {
    const std::string key(k.str());
    if (k == "board" || k == "match") {
      if (!v.is_table()) k3verdict::toml_fail(path, v, key, "expected a table");
      for (const auto& [bk, bv] : *v.as_table()) {
        const std::string sub = key + "." + std::string(bk.str());
        if (k == "board" && bk == "name")
          b.name = k3verdict::toml_string(path, bv, sub);
        else if (k == "board" && bk == "notes")
          b.notes = k3verdict::toml_string(path, bv, sub);
        else if (k == "match" && bk == "marchid")
          b.match_marchid = k3verdict::toml_string(path, bv, sub);
        else if (k == "match" && bk == "arch")
          b.match_arch = k3verdict::toml_string(path, bv, sub);
        else if (k == "match" && bk == "cpu_model")
          b.match_cpu_model = k3verdict::toml_string(path, bv, sub);
        else
          k3verdict::toml_fail(path, bv, sub,
                    k == "board" ? "unknown key (known: name, notes)"
                                 : "unknown key (known: marchid, arch, cpu_model)");
      }
    } else if (k == "ceiling") {
      if (!v.is_array_of_tables()) k3verdict::toml_fail(path, v, key, "expected [[ceiling]] tables");
      int i = 0;
      for (const auto& t : *v.as_array())
        b.ceilings.push_back(
            read_ceiling(path, *t.as_table(), "ceiling[" + std::to_string(i++) + "]"));
    } else if (k == "throughput_model") {
      // The facts of `k3tune count --model`'s modelled tokens/s, read and checked there
      // (harness/host/bench/throughput_model.h).
      if (!v.is_table()) k3verdict::toml_fail(path, v, key, "expected a table");
    } else {
      k3verdict::toml_fail(path, v, key, "unknown table (known: board, match, ceiling, throughput_model)");
    }
  }
  if (b.name.empty()) k3verdict::toml_fail(path, doc, "board.name", "missing");
  return b;
}

}  // namespace

bool Board::matches(const k3verdict::RunData& run) const {
  if (match_marchid.empty() && match_arch.empty() && match_cpu_model.empty()) return false;
  if (!match_marchid.empty() && run.marchid != match_marchid) return false;
  if (!match_arch.empty() && run.arch != match_arch) return false;
  if (!match_cpu_model.empty() && run.cpu_model.find(match_cpu_model) == std::string::npos)
    return false;
  return true;
}

std::vector<Board> load_boards(const std::string& dir) {
  std::vector<std::string> files;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension() == ".toml")
        files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<Board> boards;
  for (const auto& f : files) boards.push_back(read_board(f));
  return boards;
}

const Board* board_for(const std::vector<Board>& boards, const k3verdict::RunData& run) {
  for (const auto& b : boards)
    if (b.matches(run)) return &b;
  return nullptr;
}

}  // namespace k3reports
