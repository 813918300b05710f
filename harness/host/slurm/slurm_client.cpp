#include "harness/host/slurm/slurm_client.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "harness/host/targets/process.h"

namespace k3slurm {
namespace {

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    if (!d.empty() && access((d + "/" + tool).c_str(), X_OK) == 0) return true;
  return false;
}

// What Slurm's clients print when slurmctld does not answer (src/common/slurm_errno.c).
bool controller_gone(const std::string& err) {
  for (const char* sign : {"Unable to contact slurm controller", "Socket timed out",
                           "Zero Bytes were transmitted", "Connection refused"})
    if (err.find(sign) != std::string::npos) return true;
  return false;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  return out;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string f; std::getline(in, f, sep);) out.push_back(f);
  return out;
}

// "Nodes=b[1-2]" out of scontrol's one-line record.
std::string field(const std::string& record, const std::string& name) {
  for (const auto& f : split(record, ' '))
    if (f.rfind(name + "=", 0) == 0) return f.substr(name.size() + 1);
  return "";
}

}  // namespace

std::string reason_text(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '"' || c == '\'' || c == '\n' || c == '\r') ? ' ' : c;
  return out.size() > 200 ? out.substr(0, 200) : out;
}

std::string SlurmClient::run(const std::string& tool, const std::vector<std::string>& args) const {
  if (!on_path(tool))
    throw SlurmMissing(
        fmt::format("{} not found on PATH (install Slurm's client: slurm-client)", tool));
  std::vector<std::string> argv{tool};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(timeout_s_));
  if (r.ok()) return r.out;
  const std::string why = k3targets::last_line(r.err.empty() ? r.out : r.err);
  if (r.timed_out || controller_gone(r.err))
    throw SlurmUnreachable(
        fmt::format("{}: {}", tool, r.timed_out ? r.failure_reason(timeout_s_) : why));
  throw SlurmRefused(why.empty() ? r.failure_reason(timeout_s_) : why);
}

std::vector<std::string> SlurmClient::expand_hostlist(const std::string& list) const {
  if (list.empty() || list == "(null)") return {};
  return lines(run("scontrol", {"show", "hostnames", list}));
}

std::vector<std::string> SlurmClient::partition_nodes(const std::string& partition) const {
  return expand_hostlist(field(run("scontrol", {"-o", "show", "partition", partition}), "Nodes"));
}

std::vector<std::string> SlurmClient::reservation_nodes(const std::string& reservation) const {
  return expand_hostlist(
      field(run("scontrol", {"-o", "show", "reservation", reservation}), "Nodes"));
}

void SlurmClient::test_submit(const std::vector<std::string>& options) const {
  std::vector<std::string> args{"--test-only"};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back("--wrap=true");
  run("sbatch", args);
}

std::string SlurmClient::submit(const std::vector<std::string>& options,
                                const std::string& script_path) const {
  std::vector<std::string> args{"--parsable"};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back(script_path);
  const auto out = lines(run("sbatch", args));
  if (out.empty()) throw SlurmRefused("sbatch printed no job id");
  return split(out.back(), ';').front();  // "<id>[;cluster]"
}

std::map<std::string, std::string> SlurmClient::queued(
    const std::vector<std::string>& job_ids) const {
  std::map<std::string, std::string> out;
  // One job at a time: squeue refuses a list whose every job Slurm has forgotten (MinJobAge after
  // it ended; e.g. when --resume comes back to a run much later) -- such a job is simply not
  // queued.
  for (const auto& id : job_ids) {
    std::string text;
    try {
      // -r: one line per array task ("<job>_<task>"); jobs that ended are no longer listed.
      text = run("squeue", {"-h", "-r", "-j", id, "-o", "%i|%T"});
    } catch (const SlurmRefused& e) {
      if (std::string(e.what()).find("Invalid job id") != std::string::npos) continue;
      throw;
    }
    for (const auto& l : lines(text)) {
      const auto f = split(l, '|');
      if (f.size() == 2) out[f[0]] = f[1];
    }
  }
  return out;
}

void SlurmClient::drain(const std::string& node, const std::string& reason) const {
  run("scontrol", {"update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason_text(reason)});
}

void SlurmClient::cancel(const std::vector<std::string>& ids) const {
  if (!ids.empty()) run("scancel", ids);
}

void SlurmClient::resume(const std::string& node) const {
  run("scontrol", {"update", "NodeName=" + node, "State=RESUME"});
}

std::map<std::string, NodeView> SlurmClient::nodes(const std::vector<std::string>& names) const {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
  std::vector<std::string> sel;
  if (!list.empty()) sel = {"-n", list};
  std::vector<std::string> args{"-h", "-N", "-o", "%N|%T|%E|%u|%H"};
  args.insert(args.end(), sel.begin(), sel.end());
  std::map<std::string, NodeView> out;
  for (const auto& l : lines(run("sinfo", args))) {
    const auto f = split(l, '|');
    if (f.size() < 5) continue;
    NodeView& v = out[f[0]];
    v.node = f[0];
    v.state = f[1];
    if (f[2] != "none") v.reason = f[2];
    if (f[3] != "Unknown") v.reason_user = f[3];
    if (f[4] != "Unknown") v.reason_at = f[4];
  }
  // Running jobs with their nodes (a job on several nodes is listed once per node it holds).
  for (const auto& l : lines(run("squeue", {"-h", "-t", "RUNNING", "-o", "%i|%u|%N"}))) {
    const auto f = split(l, '|');
    if (f.size() < 3) continue;
    for (const auto& n : expand_hostlist(f[2]))
      if (out.count(n)) out[n].jobs.push_back(f[0] + " " + f[1]);
  }
  return out;
}

}  // namespace k3slurm
