#include "harness/host/slurm/slurm_jobs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/common/sys/text_file.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/shell_quote.h"
#include "harness/host/launch/launcher.h"
#include "harness/host/launch/task_share.h"
#include "harness/host/store/maintenance.h"
#include "harness/host/targets/process.h"

namespace k3slurm {

const char* to_string(TaskState state) {
  switch (state) {
    case TaskState::kFinished:
      return "finished";
    case TaskState::kFailed:
      return "failed";
    case TaskState::kLeft:
      return "left";
    case TaskState::kEmpty:
      return "empty";
    case TaskState::kQueued:
      break;
  }
  return "queued";
}
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string read_text(const fs::path& p) {
  return k3sys::read_text(p.string());
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

std::string array_of(const std::string& task_id) {
  return task_id.substr(0, task_id.find('_'));
}

}  // namespace

fs::path job_directory(const std::string& db_path, const std::vector<std::string>& identity,
                       bool resume) {
  std::string text;
  for (const auto& a : identity) text += a + "\n";
  const fs::path base =
      fs::absolute(db_path).string() + ".slurm/" + k3bench::sha256_text(text).substr(0, 12);
  fs::create_directories(base);
  if (resume && fs::exists(base / "latest")) {
    const fs::path last = base / read_text(base / "latest");
    if (fs::is_directory(last)) return last;
  }
  const std::string run = k3bench::new_uuid().substr(0, 8);
  fs::create_directories(base / run);
  write_text(base / "latest", run);
  return base / run;
}

std::vector<std::string> subcommand_arguments(const std::vector<std::string>& argv,
                                              const std::string& subcommand,
                                              const std::vector<std::string>& drop_flags,
                                              const std::vector<std::string>& drop_options) {
  std::size_t i = 1;
  for (; i < argv.size() && argv[i] != subcommand; ++i)
    if (argv[i] == "--root" || argv[i] == "--db" || argv[i] == "--targets") ++i;  // their values
  std::vector<std::string> out;
  for (++i; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (std::find(drop_flags.begin(), drop_flags.end(), a) != drop_flags.end()) continue;
    bool dropped = false;
    for (const auto& opt : drop_options) {
      if (a == opt)
        ++i, dropped = true;
      else if (a.rfind(opt + "=", 0) == 0)
        dropped = true;
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

SlurmJobs::SlurmJobs(SlurmJobsConfig config, const SlurmClient& slurm, fs::path dir)
    : config_(std::move(config)), slurm_(slurm), dir_(std::move(dir)) {}

// The batch script of one array: task i runs this k3tune with the worker arguments `shares[i]`.
std::string SlurmJobs::batch_script(const std::vector<std::string>& shares,
                                    const std::string& seed_db) const {
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# k3tune " << config_.subcommand
    << " on a Slurm farm: array task i does its share on the board Slurm allocated\n"
    << "# (SLURM_JOB_NODELIST), into its own database; a requeued task continues it.\n"
    << "export K3TUNE_SLURM_WORKER=1\n"
    << "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (std::size_t i = 0; i < shares.size(); ++i) s << i << ") set -- " << shares[i] << " ;;\n";
  s << "*) echo \"k3tune: array task $SLURM_ARRAY_TASK_ID has no share\" >&2; exit 2 ;;\nesac\n";
  // The task's own database (named by the array and task ids the shell expands), given to k3tune
  // as --db on its command line (where the silent-Slurm handling finds a task's processes by it).
  s << "db=" << k3farm::shell_quote((dir_ / "job-").string())
    << "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.db\"\n";
  if (!seed_db.empty())
    s << "[ -s \"$db\" ] || cp " << k3farm::shell_quote(seed_db) << " \"$db\" || exit 1\n";
  const k3launch::Launcher worker{.self_exe = config_.k3tune,
                                  .root = config_.root,
                                  .targets_file = config_.targets_file,
                                  .quiet = config_.quiet,
                                  .json = config_.json};
  const std::string rc = k3farm::shell_quote((dir_ / "job-").string()) +
                         "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.rc\"";
  const k3launch::Args tail = k3launch::task_tail(config_.resume);
  s << worker.shell_globals("\"$db\"") << " " << config_.subcommand << " "
    << k3farm::shell_join(config_.args) << " \"$@\""
    << (tail.empty() ? "" : " " + k3farm::shell_join(tail)) << "\n"
    << "status=$?\necho $status > " << rc << "\nexit $status\n";
  return s.str();
}

void SlurmJobs::save_journal() const {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& t : tasks_)
    j.push_back({{"id", t.id},
                 {"share", t.share},
                 {"round", t.round},
                 {"empty", t.state == TaskState::kEmpty}});
  write_text(dir_ / "jobs.json.tmp", j.dump(2));
  fs::rename(dir_ / "jobs.json.tmp", dir_ / "jobs.json");
}

void SlurmJobs::adopt_journal() {
  tasks_.clear();
  if (!fs::exists(dir_ / "jobs.json")) return;
  for (const auto& j : nlohmann::json::parse(read_text(dir_ / "jobs.json"))) {
    SlurmTask t;
    t.id = j.at("id");
    t.share = j.at("share");
    t.round = j.at("round");
    if (j.value("empty", false)) t.state = TaskState::kEmpty;
    tasks_.push_back(t);
  }
}

void SlurmJobs::submit(const std::vector<std::string>& shares, int round,
                       const std::string& seed_db) {
  const std::string script_name =
      fmt::format("round-{}-{}.sh", round, k3bench::new_uuid().substr(0, 8));
  write_text(dir_ / script_name, batch_script(shares, seed_db));
  std::vector<std::string> options = config_.job_options;
  options.insert(options.end(), {fmt::format("--array=0-{}", shares.size() - 1), "--requeue",
                                 "--nodes=1", "--ntasks=1", "--job-name=" + config_.job_name,
                                 "--output=" + (dir_ / "job-%A_%a.json").string(),
                                 "--error=" + (dir_ / "job-%A_%a.err").string()});
  const std::string array = slurm_.submit(options, (dir_ / script_name).string());
  for (std::size_t i = 0; i < shares.size(); ++i) {
    SlurmTask t;
    t.id = fmt::format("{}_{}", array, i);
    t.share = shares[i];
    t.round = round;
    tasks_.push_back(t);
  }
  save_journal();
}

bool SlurmJobs::wait() {
  std::set<std::string> arrays;
  for (const auto& t : tasks_) arrays.insert(array_of(t.id));
  auto last_answer = Clock::now();
  for (;;) {
    try {
      const auto queued = slurm_.queued({arrays.begin(), arrays.end()});
      last_answer = Clock::now();
      if (queued.empty()) return true;
      if (!config_.total_key.empty()) cancel_empty_shares(queued);
    } catch (const SlurmUnreachable& e) {
      const double silent = std::chrono::duration<double>(Clock::now() - last_answer).count();
      if (silent >= config_.silence_s) {
        fault_ = fmt::format("Slurm did not answer for {:.0f} s ({})", silent, e.what());
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(config_.poll_s));
  }
}

void SlurmJobs::cancel_empty_shares(const std::map<std::string, std::string>& queued) {
  // The size of the work is read once, from the first finished task that reports it.
  std::optional<std::size_t>& total = total_;
  for (const auto& t : tasks_) {
    if (total) break;
    if (queued.count(t.id) || t.state == TaskState::kEmpty) continue;  // still queued, or cancelled
    const fs::path out = dir_ / ("job-" + t.id + ".json");
    if (!fs::exists(out)) continue;
    const auto j = nlohmann::json::parse(read_text(out), nullptr, false);
    if (j.is_object() && j.contains(config_.total_key)) {
      total = j[config_.total_key].get<std::size_t>();
      break;
    }
  }
  if (!total) return;
  std::vector<std::string> empty;
  for (auto& t : tasks_) {
    const auto shard = k3launch::shard_of(t.share);
    if (t.state == TaskState::kEmpty || !shard) continue;
    const auto it = queued.find(t.id);
    if (static_cast<std::size_t>(shard->index) > *total && it != queued.end() &&
        it->second == "PENDING") {
      empty.push_back(t.id);
      t.state = TaskState::kEmpty;
    }
  }
  if (empty.empty()) return;
  try {
    slurm_.cancel(empty);
  } catch (const std::runtime_error&) {
    // One may have started meanwhile: it finds its share empty and ends on its own.
  }
  save_journal();
}

std::optional<nlohmann::json> SlurmJobs::outcome(SlurmTask& t, bool finished) const {
  const fs::path out = dir_ / ("job-" + t.id + ".json");
  auto j = nlohmann::json::parse(read_text(out), nullptr, false);
  if (!j.is_discarded()) {
    const auto problems = k3bench::child_output_problems(config_.root, config_.form, j);
    if (problems.empty()) {
      t.state = TaskState::kFinished;
      return j;
    }
    t.state = TaskState::kFailed;
    t.error = fmt::format("{}: does not follow {}: {}", out.string(),
                          k3bench::schema_id(config_.form), problems.front());
    return std::nullopt;
  }
  t.state = finished ? TaskState::kFailed : TaskState::kLeft;
  const fs::path err = dir_ / ("job-" + t.id + ".err");
  t.error = fs::exists(err) ? k3targets::last_line(read_text(err)) : "";
  if (t.error.empty()) t.error = "the job left no outcome";
  return std::nullopt;
}

std::string SlurmJobs::output(const SlurmTask& t) const {
  return read_text(dir_ / ("job-" + t.id + ".json"));
}

std::string SlurmJobs::errors(const SlurmTask& t) const {
  return read_text(dir_ / ("job-" + t.id + ".err"));
}

std::optional<int> SlurmJobs::exit_status(const SlurmTask& t) const {
  const fs::path rc = dir_ / ("job-" + t.id + ".rc");
  if (!fs::exists(rc)) return std::nullopt;
  try {
    return std::stoi(read_text(rc));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void SlurmJobs::merge() const {
  std::vector<std::string> dbs;
  for (const auto& t : tasks_) {
    const fs::path db = dir_ / ("job-" + t.id + ".db");
    if (fs::exists(db) && fs::file_size(db) > 0) dbs.push_back(db.string());
  }
  if (!dbs.empty()) k3store::merge_databases(config_.db_path, dbs);
}

std::vector<std::string> first_round_shares(std::size_t open_boards) {
  const std::size_t n = kTasksPerBoard * std::max<std::size_t>(1, open_boards);
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= n; ++i) out.push_back(k3launch::shard_share(i, n));
  return out;
}

std::vector<std::string> split_shares(k3launch::ShareUnit unit,
                                      const std::vector<std::size_t>& left, std::size_t tasks) {
  const std::size_t n = std::max<std::size_t>(1, std::min(left.size(), tasks));
  std::vector<std::vector<std::size_t>> split(n);
  for (std::size_t i = 0; i < left.size(); ++i) split[i % n].push_back(left[i]);
  std::vector<std::string> out;
  for (const auto& s : split) out.push_back(k3launch::positions_share(unit, s));
  return out;
}

std::string SlurmJobs::no_outcome_fault() const {
  std::set<std::string> refusals;
  std::vector<std::string> why;
  for (const auto& t : tasks_) {
    if (t.state == TaskState::kEmpty) continue;
    refusals.insert(t.error.rfind("k3tune: ", 0) == 0 ? t.error.substr(8) : "");
    why.push_back(t.id + ": " + t.error);
  }
  if (refusals.size() == 1 && !refusals.begin()->empty())
    throw k3bench::UserError(
        fmt::format("{} (in Slurm job {})", *refusals.begin(), tasks_.front().id));
  return fmt::format("no job left an outcome ({})", fmt::join(why, "; "));
}

std::string SlurmJobs::left_text() const {
  std::vector<std::string> left;
  for (const auto& t : tasks_)
    if (t.state == TaskState::kLeft) left.push_back(t.id);
  return left.empty() ? std::string("; no job left running (--resume does what is left)")
                      : fmt::format("; jobs left: {} (--resume waits for them and does the rest)",
                                    fmt::join(left, ", "));
}

std::vector<std::string> open_boards(const std::vector<std::string>& boards,
                                     const std::string& reservation, const SlurmClient& slurm) {
  const auto reserved = reservation.empty() ? boards : slurm.reservation_nodes(reservation);
  const auto nodes = slurm.nodes(boards);
  std::vector<std::string> out;
  for (const auto& b : boards) {
    const auto it = nodes.find(b);
    const std::string state = it == nodes.end() ? "" : it->second.state;
    if (std::find(reserved.begin(), reserved.end(), b) != reserved.end() &&
        state.rfind("drain", 0) != 0 && state.rfind("down", 0) != 0)
      out.push_back(b);
  }
  return out;
}

}  // namespace k3slurm
