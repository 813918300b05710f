#include "apps/nightly/revision_ancestry.h"

#include <vector>

#include "harness/host/targets/process.h"

namespace k3nightly {
namespace {

std::string commit_of(std::string revision) {
  if (const auto dirty = revision.find("-dirty"); dirty != std::string::npos)
    revision.resize(dirty);
  return revision == "unknown" ? "" : revision;
}

}  // namespace

k3targets::ProcessResult run_git(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-C", repo};
  argv.insert(argv.end(), args.begin(), args.end());
  return k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(60));
}

std::string head_revision(const std::string& repo) {
  const auto r = run_git(repo, {"rev-parse", "HEAD"});
  if (!r.ok()) return "";
  std::string out = r.out;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

Ancestry revision_ancestry(const std::string& repo, const std::string& revision,
                           const std::string& head) {
  const std::string a = commit_of(revision), b = commit_of(head);
  if (a.empty() || b.empty()) return Ancestry::kUnknown;
  const auto r = run_git(repo, {"merge-base", "--is-ancestor", a, b});
  if (r.ok()) return Ancestry::kAncestor;
  return r.exit_code == 1 ? Ancestry::kNotAncestor : Ancestry::kUnknown;
}

AncestorChoice newest_ancestor(const std::vector<std::string>& revisions,
                               const std::function<Ancestry(const std::string&)>& classify) {
  AncestorChoice c;
  std::optional<std::size_t> unknown;
  int passed_over = 0;
  for (std::size_t i = 0; i < revisions.size(); ++i) {
    const Ancestry a = classify(revisions[i]);
    if (a == Ancestry::kAncestor) {
      c.index = i;
      c.note = "the newest earlier night whose build is an ancestor of tonight's revision";
      break;
    }
    if (a == Ancestry::kNotAncestor) ++passed_over;
    if (a == Ancestry::kUnknown && !unknown) unknown = i;
  }
  if (!c.index && unknown) {
    c.index = unknown;
    c.note =
        "no earlier night's build is a known ancestor of tonight's revision; the newest whose "
        "ancestry git cannot tell";
  }
  if (passed_over > 0)
    c.note += (c.note.empty() ? "" : "; ") + std::to_string(passed_over) +
              " newer night(s) passed over: not ancestors (a later commit or another branch)";
  return c;
}

}  // namespace k3nightly
