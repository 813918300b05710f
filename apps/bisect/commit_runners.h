// The runner of a commit, for `k3tune bisect`: the commit checked out in its own git worktree in a
// cache folder (<cache>/<variant>-<commit>), configured with the variant's preset of the commit's
// own CMakePresets.json (the same CMake options as `k3tune build --variant`), built through ccache
// (the project's launcher hashes paths relative to the tree, so a worktree at another path reuses
// the objects of every earlier build), recorded in the builds table with the commit as its source
// revision, and kept by build hash like the runners `--confirm` keeps (k3reports::keep_runner).
// The worktree is removed once its runner is kept; the build log stays
// (<cache>/<variant>-<commit>.log). A commit built before is not built again: its runner is found
// by (revision, variant) in the builds table; a commit that failed to build is remembered by its
// log's verdict line, so a second bisection skips it at once.
#pragma once

#include <string>
#include <vector>

namespace k3bisect {

// Git questions of a bisection, answered in `repo`.
// The full hash of a revision (a branch, tag, hash prefix, HEAD~3, ...); "" when git knows none.
std::string resolve_commit(const std::string& repo, const std::string& revision);
// The commits after `good` up to and including `bad` that descend from good (ancestry path),
// oldest first.
std::vector<std::string> commits_between(const std::string& repo, const std::string& good,
                                         const std::string& bad);
// "a1b2c3d4e5f6 subject line" of a commit.
std::string commit_title(const std::string& repo, const std::string& commit);

struct CommitRunner {
  std::string commit;
  std::string runner;   // the kept runner ("" : none, see failure)
  std::string hash;     // its SHA-256 (the build hash)
  std::string failure;  // one line: why there is no runner (does not build, ...)
  double build_s = 0;   // 0: found already built
};

struct CommitRunnerOptions {
  std::string repo;         // the git repository bisected
  std::string cache_dir;    // worktrees and build logs
  std::string variant;      // runner preset (CMakePresets.json)
  std::string db_path;      // builds are recorded here
  std::string runners_dir;  // kept runners
  int jobs = 2;
  bool progress = true;  // a line on stderr per build
};

class CommitRunners {
 public:
  explicit CommitRunners(CommitRunnerOptions options);
  // Never throws for a commit that does not build: the failure says why.
  CommitRunner runner_of(const std::string& commit);

 private:
  CommitRunner build(const std::string& commit);
  CommitRunnerOptions o_;
};

}  // namespace k3bisect
