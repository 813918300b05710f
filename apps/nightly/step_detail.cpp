#include "apps/nightly/step_detail.h"

#include "harness/common/sys/text_file.h"

namespace k3nightly {

using k3sys::read_text;

nlohmann::json step_detail(const std::string& root, k3bench::ChildOutput kind,
                           const std::string& out_path, std::vector<std::string>& problems) {
  const std::string text = read_text(out_path);
  if (text.find_first_not_of(" \t\n") == std::string::npos) return nlohmann::json::object();
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    problems.push_back("not JSON");
    return nlohmann::json::object();
  }
  problems = k3bench::child_output_problems(root, kind, j);
  if (!problems.empty()) return nlohmann::json::object();
  nlohmann::json d = nlohmann::json::object();
  for (const char* k :
       {"run_uuid", "build_hash", "builds", "sweep_uuid", "runs", "quarantined", "unused_boards",
        "measured_cells", "skipped_cells", "failed_cells", "unmeasured_cells", "samples_before",
        "samples_after", "comparisons", "build_pairing"})
    if (j.is_object() && j.contains(k)) d[k] = j[k];
  // `tune --farm --json`: per fingerprint group its boards, table and objective (no jobs).
  if (j.is_object() && j.contains("groups") && j["groups"].is_array()) {
    d["groups"] = nlohmann::json::array();
    for (const auto& g : j["groups"])
      d["groups"].push_back({{"boards", g.value("boards", nlohmann::json::array())},
                             {"table", g.value("table", "")},
                             {"objective", g.value("objective", "")},
                             {"lost", g.value("lost", nlohmann::json::object())},
                             {"unfinished", g.value("unfinished", nlohmann::json::array())}});
  }
  // `count --json`: one row per counted case, each naming the run of its runner.
  if (j.is_array()) {
    d["counts"] = nlohmann::json::array();
    for (const auto& row : j)
      if (row.is_object() && row.contains("run_uuid"))
        d["counts"].push_back({{"path", row.value("path", "")},
                               {"op", row.value("op", "")},
                               {"shape", row.value("shape", "")},
                               {"vlen", row.value("vlen", 0)},
                               {"instructions_per_call", row.value("instructions_per_call", 0.0)},
                               {"jitter", row.value("jitter", 0.0)},
                               {"run_uuid", row["run_uuid"]}});
  }
  return d;
}

}  // namespace k3nightly
