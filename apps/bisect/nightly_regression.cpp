#include "apps/bisect/nightly_regression.h"

#include <filesystem>

#include <fmt/format.h>

#include "harness/common/params/param_spec.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/database.h"
#include "harness/host/store/nightlies.h"
#include "harness/host/store/results.h"
#include "reports/report.h"

namespace k3bisect {
namespace {

// "k=v,k=v" from a JSON object, values as the command line spells them.
std::string key_values(const nlohmann::json& j) {
  std::string out;
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    out += (out.empty() ? "" : ",") + k + "=" + k3params::value_text(v);
  return out;
}

}  // namespace

NightlyRegression nightly_regression(const std::string& dir, const std::string& db_path,
                                     const std::string& rules_file) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw k3bench::UserError(fmt::format("--from-nightly {}: no such folder", dir));
  NightlyRegression out;
  out.nightly_id = fs::path(fs::absolute(dir)).lexically_normal().filename().string();
  if (out.nightly_id.empty()) out.nightly_id = fs::absolute(dir).parent_path().filename().string();
  std::string verdict_run;
  {
    auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
    // The verdict run is stored with the nightly when it finishes; while it runs (its own bisect
    // step), the verdict step's detail has it.
    const auto run = k3store::nightly_verdict_run(*db, out.nightly_id);
    if (!run)
      throw k3bench::UserError(
          fmt::format("--from-nightly {}: nightly {} is not in {}", dir, out.nightly_id, db_path));
    verdict_run = *run;
  }
  if (verdict_run.empty())
    throw k3bench::UserError(fmt::format("--from-nightly {}: the nightly has no verdict run", dir));
  const auto judged = k3reports::judge_within_run(db_path, verdict_run, rules_file);
  const auto& v = judged->verdict;
  auto db = k3store::open_database(db_path, k3store::OpenMode::kReadOnly);
  auto revision = [&](const std::string& hash, const char* side) {
    const auto b = k3store::find_build(*db, hash);
    if (!b || b->source_revision.empty() || b->source_revision == "unknown")
      throw k3bench::UserError(
          fmt::format("--from-nightly {}: the {} build {} has no recorded source revision", dir,
                      side, hash.substr(0, 12)));
    return b->source_revision.substr(0, b->source_revision.find("-dirty"));
  };
  out.good_revision = revision(v.baseline_build, "previous nightly's");
  out.bad_revision = revision(v.candidate_build, "nightly's");
  for (const auto& c : v.cells) {
    if (!c.timing_regression() || c.b == nullptr) continue;
    out.cases.push_back({c.op, key_values(c.b->shape), key_values(c.b->params)});
  }
  if (out.cases.empty())
    throw k3bench::UserError(
        fmt::format("--from-nightly {}: its verdict (run {}) has no timing regression to bisect",
                    dir, verdict_run));
  return out;
}

}  // namespace k3bisect
