// Which earlier build a nightly compares with: "previous" means the latest night whose build is an
// ancestor of tonight's revision (on the same branch: a later commit of another branch is not;
// a night on a branch compares with the nights up to its merge base, which are ancestors), read
// from git in the source tree. Revisions as the builds table stores them ("5c9d49a3b4e9",
// "5c9d49a3b4e9-dirty": the dirty mark is dropped, the commit is what git knows).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "harness/host/targets/process.h"

namespace k3nightly {

// `git -C repo args...` with a 60 s timeout: how the nightly and `k3tune bisect` ask git.
k3targets::ProcessResult run_git(const std::string& repo, const std::vector<std::string>& args);

enum class Ancestry { kAncestor, kNotAncestor, kUnknown };

// `git rev-parse HEAD` in `repo` ("" when it is not a git checkout or git fails).
std::string head_revision(const std::string& repo);

// Whether `revision` is an ancestor of (or equal to) `head` in `repo`: kUnknown when either is
// empty or "unknown", or git does not know the revision (`git merge-base --is-ancestor` exit 128).
Ancestry revision_ancestry(const std::string& repo, const std::string& revision,
                           const std::string& head);

// Of earlier nights' revisions (newest first), the one to compare with: the newest ancestor; when
// none is a known ancestor, the newest whose ancestry git cannot tell (a database from before
// revisions were recorded, a revision git does not have), said in the note; never one that is
// known not to be an ancestor (a later commit, another branch). nullopt: no night qualifies.
struct AncestorChoice {
  std::optional<std::size_t> index;
  std::string note;  // how it was chosen, and what was passed over
};
AncestorChoice newest_ancestor(const std::vector<std::string>& revisions,
                               const std::function<Ancestry(const std::string&)>& classify);

}  // namespace k3nightly
