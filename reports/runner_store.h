// Kept runner binaries, so that a build can be measured again after its build tree was rebuilt:
// the confirm step re-runs last night's runner next to tonight's. A runner is kept as
// <dir>/<sha256 of the binary> (default dir: runners/ next to the database, e.g.
// results/runners/<sha256>), copied from the path the builds table recorded while that file still
// has the recorded hash, made executable, and moved into place only when complete. `k3tune report`
// keeps the runners of every run it reports; nothing is ever deleted automatically (remove old
// files by hand: a missing runner only means its builds can no longer be confirmed against). A
// build tree's kernel plugin (libk3bench_plugin.so beside the runner) is kept with it as
// <dir>/<sha256>.plugin.so, so an A/B against a kept runner can still pair both builds inside one
// process (harness/host/bench/build_pairing.h).
#pragma once

#include <string>

namespace k3reports {

// <directory of the database>/runners
std::string default_runners_dir(const std::string& db_path);

struct RunnerLocation {
  std::string path;  // empty: not available
  std::string note;  // why not (or where it was found)
};

// A runner whose SHA-256 is `hash`: the kept copy, else `binary_path` if it still has that hash.
RunnerLocation find_runner(const std::string& dir, const std::string& hash,
                           const std::string& binary_path);

// Keeps the runner (copies `binary_path` when it still has `hash` and no copy exists yet).
RunnerLocation keep_runner(const std::string& dir, const std::string& hash,
                           const std::string& binary_path);

}  // namespace k3reports
