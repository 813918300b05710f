#include "harness/host/slurm/slurm_bench.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/farm/shell_quote.h"
#include "harness/host/slurm/slurm_validate.h"
#include "harness/host/slurm/slurm_worker.h"
#include "harness/host/store/database.h"
#include "harness/host/store/maintenance.h"
#include "harness/host/targets/process.h"

namespace k3slurm {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::trunc);
  f << text;
  if (!f) throw std::runtime_error("cannot write " + p.string());
}

// The directory of this run's jobs: <db>.slurm/<hash of the command>/<run>. With --resume, the
// latest run of the same command (named in <db>.slurm/<hash>/latest) is continued.
fs::path job_directory(const SlurmBenchRequest& rq) {
  std::string identity = rq.farm.farm;
  for (const auto& a : rq.bench_args) identity += "\n" + a;
  const fs::path base = fs::absolute(rq.farm.bench.db_path).string() + ".slurm/" +
                        k3bench::sha256_text(identity).substr(0, 12);
  fs::create_directories(base);
  if (rq.farm.bench.resume && fs::exists(base / "latest")) {
    const fs::path last = base / read_text(base / "latest");
    if (fs::is_directory(last)) return last;
  }
  const std::string run = k3bench::new_uuid().substr(0, 8);
  fs::create_directories(base / run);
  write_text(base / "latest", run);
  return base / run;
}

// jobs.json in the job directory: every task submitted, so that --resume finds them.
void save_journal(const fs::path& dir, const std::vector<SlurmTask>& tasks) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& t : tasks) j.push_back({{"id", t.id}, {"cells", t.cells}, {"round", t.round}});
  write_text(dir / "jobs.json.tmp", j.dump(2));
  fs::rename(dir / "jobs.json.tmp", dir / "jobs.json");
}

std::vector<SlurmTask> load_journal(const fs::path& dir) {
  std::vector<SlurmTask> out;
  if (!fs::exists(dir / "jobs.json")) return out;
  for (const auto& j : nlohmann::json::parse(read_text(dir / "jobs.json"))) {
    SlurmTask t;
    t.id = j.at("id");
    t.cells = j.at("cells");
    t.round = j.at("round");
    out.push_back(t);
  }
  return out;
}

std::string array_of(const std::string& task_id) {
  return task_id.substr(0, task_id.find('_'));
}

// The batch script of one array: task i runs this k3tune with the cells of `cells[i]`.
std::string batch_script(const SlurmBenchRequest& rq, const fs::path& dir,
                         const std::vector<std::string>& cells) {
  std::ostringstream s;
  s << "#!/bin/sh\n"
    << "# k3tune bench --farm (scheduler slurm): array task i measures its cells on the board "
       "Slurm\n"
    << "# allocated (SLURM_JOB_NODELIST), into its own database; a requeued task resumes it.\n"
    << "export K3TUNE_SLURM_WORKER=1\n"
    << "case \"$SLURM_ARRAY_TASK_ID\" in\n";
  for (std::size_t i = 0; i < cells.size(); ++i) s << i << ") set -- " << cells[i] << " ;;\n";
  s << "*) echo \"k3tune: array task $SLURM_ARRAY_TASK_ID has no cells\" >&2; exit 2 ;;\nesac\n";
  std::vector<std::string> argv{rq.k3tune, "--root", rq.root};
  if (!rq.targets_file.empty()) argv.insert(argv.end(), {"--targets", rq.targets_file});
  s << "exec " << k3farm::shell_join(argv) << " --db "
    << k3farm::shell_quote((dir / "job-").string())
    << "\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.db\" --json -q bench "
    << k3farm::shell_join(rq.bench_args) << " \"$@\" --resume\n";
  return s.str();
}

class Controller {
 public:
  Controller(const SlurmBenchRequest& rq, const SlurmClient& slurm, double silence_s,
             SlurmBenchOutcome& out)
      : rq_(rq), slurm_(slurm), silence_s_(silence_s), out_(out), dir_(out.job_dir) {}

  // Submits one array with a task per entry of `cells`; returns its tasks.
  void submit(const std::vector<std::string>& cells, int round) {
    const std::string script_name =
        fmt::format("round-{}-{}.sh", round, k3bench::new_uuid().substr(0, 8));
    write_text(dir_ / script_name, batch_script(rq_, dir_, cells));
    std::vector<std::string> options = out_.job_options;
    options.insert(options.end(), {fmt::format("--array=0-{}", cells.size() - 1), "--requeue",
                                   "--nodes=1", "--ntasks=1", "--job-name=k3tune-bench",
                                   "--output=" + (dir_ / "job-%A_%a.json").string(),
                                   "--error=" + (dir_ / "job-%A_%a.err").string()});
    const std::string array = slurm_.submit(options, (dir_ / script_name).string());
    for (std::size_t i = 0; i < cells.size(); ++i) {
      SlurmTask t;
      t.id = fmt::format("{}_{}", array, i);
      t.cells = cells[i];
      t.round = round;
      out_.tasks.push_back(t);
    }
    save_journal(dir_, out_.tasks);
  }

  // Waits until no task of `tasks` is queued. False when Slurm stopped answering (out_.fault).
  bool wait() {
    std::set<std::string> arrays;
    for (const auto& t : out_.tasks) arrays.insert(array_of(t.id));
    auto last_answer = Clock::now();
    for (;;) {
      try {
        const auto queued = slurm_.queued({arrays.begin(), arrays.end()});
        last_answer = Clock::now();
        if (queued.empty()) return true;
      } catch (const SlurmUnreachable& e) {
        const double silent = std::chrono::duration<double>(Clock::now() - last_answer).count();
        if (silent >= silence_s_) {
          out_.fault = fmt::format("Slurm did not answer for {:.0f} s ({})", silent, e.what());
          return false;
        }
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(rq_.poll_s));
    }
  }

  // Reads what every task left (its outcome JSON, or its last stderr line).
  void collect(bool finished) {
    out_.runs.clear();
    for (auto& t : out_.tasks) {
      const fs::path json = dir_ / ("job-" + t.id + ".json");
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(read_text(json));
      } catch (const std::exception&) {
        t.state = finished ? "failed" : "left";
        t.error = fs::exists(dir_ / ("job-" + t.id + ".err"))
                      ? k3targets::last_line(read_text(dir_ / ("job-" + t.id + ".err")))
                      : "";
        if (t.error.empty()) t.error = "the job left no outcome";
        continue;
      }
      t.state = "finished";
      t.measured = 0;
      if (!j["boards"].empty()) t.board = j["boards"][0];
      out_.total_cells = j.value("total_cells", out_.total_cells);
      for (const auto& [board, q] : j["quarantined"].items()) {
        out_.drained[board] = drain_reason(q["fault"], q["reason"]);
        out_.quarantined[board] = {q["fault"], q["reason"]};
      }
      for (const auto& r : j["runs"]) out_.runs.emplace_back(r["board"], r["run_uuid"]);
      for (const auto& c : j["cells"]) {
        const std::size_t index = c["index"];
        SlurmCell cell;
        cell.index = index;
        cell.label = c.value("label", "");
        cell.status = c["status"];
        if (cell.status == "skipped") cell.status = "measured";  // by this task before a requeue
        cell.board = c.value("board", "");
        cell.reason = c.value("reason", "");
        cell.task = t.id;
        cell.mean_ns = c.value("mean_ns", 0.0);
        if (cell.status == "measured") ++t.measured;
        auto& slot = out_.cells[index];
        if (slot.status != "measured") slot = cell;  // a later round measures what was left
      }
    }
  }

  // Merges every task's database into the run's (natural keys: merging twice adds nothing).
  void merge() {
    std::vector<std::string> dbs;
    for (const auto& t : out_.tasks)
      if (fs::exists(dir_ / ("job-" + t.id + ".db")) &&
          fs::file_size(dir_ / ("job-" + t.id + ".db")) > 0)
        dbs.push_back((dir_ / ("job-" + t.id + ".db")).string());
    if (!dbs.empty()) k3store::merge_databases(rq_.farm.bench.db_path, dbs);
  }

  // Cells not yet measured or failed, by canonical index.
  std::vector<std::size_t> remaining() const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < out_.total_cells; ++i) {
      const auto it = out_.cells.find(i);
      if (it == out_.cells.end() ||
          (it->second.status != "measured" && it->second.status != "failed"))
        out.push_back(i);
    }
    return out;
  }

 private:
  const SlurmBenchRequest& rq_;
  const SlurmClient& slurm_;
  double silence_s_;
  SlurmBenchOutcome& out_;
  fs::path dir_;
};

// The chosen boards a job of this run can get now: in the reservation (when there is one), and
// neither drained nor down. One array task each, so the first round keeps them all busy.
std::vector<std::string> open_boards(const SlurmBenchRequest& rq, const k3farm::FarmConfig& cfg,
                                     const std::vector<std::string>& boards,
                                     const SlurmClient& slurm) {
  const std::string resv = rq.reservation.empty() ? cfg.scheduler.reservation : rq.reservation;
  const auto reserved = resv.empty() ? boards : slurm.reservation_nodes(resv);
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

std::int64_t sample_count(const std::string& db_path) {
  return k3store::open_database(db_path, k3store::OpenMode::kCreateOrUpdate)
      ->scalar_int("SELECT count(*) FROM samples");
}

}  // namespace

int SlurmBenchOutcome::count(const std::string& status) const {
  int n = 0;
  for (const auto& [i, c] : cells) n += c.status == status;
  if (status == "unmeasured") n += static_cast<int>(total_cells) - static_cast<int>(cells.size());
  return n;
}

SlurmBenchOutcome run_slurm_bench(const SlurmBenchRequest& rq, const SlurmClient& slurm) {
  const auto start = Clock::now();
  k3farm::FarmConfig cfg;
  try {
    cfg = k3farm::Farm::load(rq.farm.farm, rq.root);
  } catch (const std::runtime_error& e) {
    throw k3bench::UserError(e.what());
  }
  std::vector<std::string> boards;
  try {
    boards = k3farm::select_boards(cfg, rq.farm.boards, rq.farm.tags);
  } catch (const std::invalid_argument& e) {
    throw k3bench::UserError(e.what());
  }
  SlurmBenchOutcome out;
  out.farm_name = cfg.name;
  out.farm_source = cfg.source;
  out.job_options = validate_slurm_farm(cfg, boards, rq.reservation, slurm);

  // Validated: from here on the database and the job directory are written.
  fs::create_directories(fs::absolute(rq.farm.bench.db_path).parent_path());
  out.samples_before = sample_count(rq.farm.bench.db_path);
  out.job_dir = job_directory(rq).string();
  Controller ctl(rq, slurm, cfg.scheduler.timeout_s, out);
  if (rq.farm.bench.resume) {
    out.tasks = load_journal(out.job_dir);
    if (!out.tasks.empty()) {
      const bool answered = ctl.wait();  // for the jobs an earlier run left
      ctl.collect(answered);
    }
  }
  int round = out.tasks.empty() ? 0 : out.tasks.back().round;
  while (out.fault.empty()) {
    std::vector<std::string> cells;
    if (round == 0) {
      const std::size_t n = std::max<std::size_t>(1, open_boards(rq, cfg, boards, slurm).size());
      for (std::size_t i = 1; i <= n; ++i) cells.push_back(fmt::format("--shard {}/{}", i, n));
    } else {
      if (out.total_cells == 0 && out.cells.empty()) {
        // Every job refused the command with k3tune's one line (e.g. an op the runner lacks: the
        // grid is expanded on the board a job holds): bad input, said once.
        std::set<std::string> refusals;
        for (const auto& t : out.tasks)
          refusals.insert(t.error.rfind("k3tune: ", 0) == 0 ? t.error.substr(8) : "");
        if (refusals.size() == 1 && !refusals.begin()->empty())
          throw k3bench::UserError(
              fmt::format("{} (in Slurm job {})", *refusals.begin(), out.tasks.front().id));
        std::vector<std::string> why;
        for (const auto& t : out.tasks) why.push_back(t.id + ": " + t.error);
        out.fault = fmt::format("no job left an outcome ({})", fmt::join(why, "; "));
        break;
      }
      const auto left = ctl.remaining();
      if (left.empty() || round >= rq.farm.max_attempts) break;
      // One task per board that can still take work (Slurm keeps drained boards out anyway).
      std::size_t open = 0;
      for (const auto& b : boards) open += out.drained.count(b) == 0;
      const std::size_t n = std::max<std::size_t>(1, std::min(left.size(), open));
      std::vector<std::vector<std::size_t>> split(n);
      for (std::size_t i = 0; i < left.size(); ++i) split[i % n].push_back(left[i]);
      for (const auto& s : split) cells.push_back(fmt::format("--cells {}", fmt::join(s, ",")));
    }
    ++round;
    try {
      ctl.submit(cells, round);
    } catch (const SlurmUnreachable& e) {
      out.fault = fmt::format("Slurm did not take the jobs ({})", e.what());
      break;
    }
    const bool answered = ctl.wait();
    ctl.collect(answered);
    ctl.merge();
  }
  ctl.merge();
  if (!out.fault.empty()) {
    std::vector<std::string> left;
    for (const auto& t : out.tasks)
      if (t.state == "left") left.push_back(t.id);
    out.fault +=
        left.empty()
            ? std::string("; no job left running (--resume measures what is left)")
            : fmt::format("; jobs left: {} (--resume waits for them and measures the rest)",
                          fmt::join(left, ", "));
  }
  out.samples_after = sample_count(rq.farm.bench.db_path);
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace k3slurm
