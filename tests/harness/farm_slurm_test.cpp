// A board farm scheduled by a real Slurm (label slurm): each test starts its own cluster with
// tests/support/slurm-cluster.sh (Debian's munge, slurmctld and two slurmd, nodes b1 and b2, all on
// loopback as this user) and pairs each node with a loopback sshd board of the farm tests, whose
// runner is the dynamically linked riscv64 k3bench under qemu-user. `k3tune bench --farm` submits
// job arrays there; each job runs k3tune on the board Slurm allocated. Cases:
//   - bad input (no Slurm client, unknown partition, GRES, reservation, a board that is not a
//     node of the partition): exit 2, one line naming the farm file's key, nothing submitted;
//   - two concurrent benches on the same two boards: Slurm queues them, every cell is measured;
//   - a board's sshd killed mid-job: k3tune drains the node with its reason, the cells left finish
//     on the other board; the drain keeps the board out of the next run too, `farm list` shows
//     Slurm's view and k3tune's, and `farm release --board` resumes the node;
//   - a board that dies wholly (its slurmd, the job's processes and its sshd killed): Slurm sets
//   the
//     node DOWN and requeues the job, which runs again on the other board;
//   - a reservation keeps a second bench's jobs off the reserved board;
//   - slurmctld stops answering mid-run (SIGSTOP, the jobs paused meanwhile): the run stops after
//     slurm_timeout_s with the jobs it left named and what they committed merged; once Slurm
//     answers again, --resume waits for them, merges them and every cell is measured;
//   - a tuning campaign as jobs (a job per board, then the table pass, which measures nothing),
//     the same campaign again counting nothing, and its table verified as one job on its board;
//   - a board lost mid-session: drained, its session resumed on the other board, nothing counted
//     twice;
//   - the nightly inside a reservation of both boards: its bench, tune and board-verdict steps are
//     jobs in the reservation, its deploy step the jobs' own.
// Each case prints what sinfo showed and its timings.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class SlurmFarm : public LoopbackFarmTest {
 protected:
  void SetUp() override {
    LoopbackFarmTest::SetUp();
    if (HasFatalFailure()) return;
    slurm_dir_ = lab_->dir() / "slurm";
    const auto started = Clock::now();
    const auto r = k3targets::run_process(
        {"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh", "start", slurm_dir_},
        k3targets::ProcessOptions::with_timeout(120));
    ASSERT_TRUE(r.ok()) << r.err << r.out;
    std::printf("Slurm cluster (munged, slurmctld, slurmd b1 b2) up in %.1f s\n",
                seconds_since(started));
    setenv("SLURM_CONF", (slurm_dir_ + "/slurm.conf").c_str(), 1);
    farm_file_ = slurm_farm();
  }
  void TearDown() override {
    if (!slurm_dir_.empty())
      k3targets::run_process({"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh",
                              "stop", slurm_dir_},
                             k3targets::ProcessOptions::with_timeout(60));
    unsetenv("SLURM_CONF");
  }

  // The loopback farm with scheduler = "slurm" and `farm_extra` [farm] keys, `extra` TOML after.
  std::string slurm_farm(const std::string& farm_extra = "", const std::string& extra = "") const {
    return lab_->write_farm(
        K3_FARM_RISCV_RUNNER, extra,
        "scheduler = \"slurm\"\npartition = \"boards\"\ngres = \"k3:1\"\n" + farm_extra);
  }

  std::string slurm(const std::vector<std::string>& argv) const {
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(30));
    return r.out + r.err;
  }
  std::string sinfo() const { return slurm({"sinfo", "-h", "-N", "-o", "%N %T %E"}); }
  std::string squeue() const { return slurm({"squeue", "-h", "-o", "%i %T %N"}); }
  // Jobs Slurm ever took (MinJobAge keeps finished ones listed by scontrol for 10 min).
  std::string jobs_known() const {
    const std::string all = slurm({"scontrol", "-o", "show", "jobs"});
    return all.find("No jobs") != std::string::npos ? "" : all;
  }

  Cmd bench(const std::vector<std::string>& extra, const std::string& db_path = "") const {
    auto args = tiny_farm_sweep_args(farm_file_, extra);
    args.insert(args.begin(), "-q");
    return run_k3tune(args, db_path);
  }
  std::future<Cmd> bench_async(const std::vector<std::string>& extra,
                               const std::string& db_path = "") const {
    return std::async(std::launch::async, [this, extra, db_path] { return bench(extra, db_path); });
  }

  static std::int64_t count(const std::string& db_path, const std::string& sql) {
    if (!fs::exists(db_path)) return 0;
    return k3store::open_database(db_path, k3store::OpenMode::kReadOnly)->scalar_int(sql);
  }
  // Sum of `sql` over the job databases written so far under <db>.slurm/.
  std::int64_t count_in_jobs(const std::string& sql) const {
    std::int64_t n = 0;
    if (!fs::exists(db() + ".slurm")) return 0;
    for (const auto& e : fs::recursive_directory_iterator(db() + ".slurm"))
      if (e.path().extension() == ".db") try {
          n += count(e.path().string(), sql);
        } catch (const std::exception&) {  // being created
        }
    return n;
  }
  static std::int64_t measured_on(const nlohmann::json& j, const std::string& board) {
    std::int64_t n = 0;
    for (const auto& c : j["cells"]) n += c["status"] == "measured" && c["board"] == board;
    return n;
  }

  std::string slurm_dir_;
};

const std::vector<std::string> kFourShapes = {"--shape", "n=64,k=256",  "--shape", "n=96,k=256",
                                              "--shape", "n=128,k=256", "--shape", "n=160,k=256"};

TEST_F(SlurmFarm, BadInputIsRefusedBeforeAnythingIsSubmitted) {
  struct Case {
    std::string name, farm_extra, extra, flag, key, slurm_says;
  };
  const std::vector<Case> cases = {
      {"unknown partition", "", "", "", "farm.partition", "not found"},
      {"unknown GRES", "", "", "", "farm.gres", "gres"},
      {"unknown constraint", "constraint = \"a100\"\n", "", "", "farm.constraint", "feature"},
      {"unknown reservation (farm file)", "reservation = \"nightly\"\n", "", "", "farm.reservation",
       "not found"},
      {"unknown reservation (flag)", "", "", "--reservation=nightly", "--reservation", "not found"},
      {"board not a node of the partition", "",
       "\n[boards.b3]\nport = 22\nwork_dir = \"/tmp/k3farm-b3\"\n", "", "boards.b3",
       "not a node of Slurm partition 'boards'"},
  };
  for (const auto& c : cases) {
    std::string farm_extra = c.farm_extra;
    std::string file;
    if (c.key == "farm.partition")
      file = lab_->write_farm(K3_FARM_RISCV_RUNNER, "",
                              "scheduler = \"slurm\"\npartition = \"nope\"\n");
    else if (c.key == "farm.gres")
      file = lab_->write_farm(K3_FARM_RISCV_RUNNER, "",
                              "scheduler = \"slurm\"\npartition = \"boards\"\ngres = \"gpu:1\"\n");
    else
      file = slurm_farm(farm_extra, c.extra);
    farm_file_ = file;
    std::vector<std::string> extra{"--shape", "n=64,k=256"};
    if (!c.flag.empty()) extra.push_back(c.flag);
    const auto r = bench(extra);
    std::printf("%s: exit %d: %s", c.name.c_str(), r.code, r.err.c_str());
    EXPECT_EQ(r.code, 2) << c.name << ": " << r.err << r.out;
    EXPECT_NE(r.err.find(c.key), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.slurm_says), std::string::npos) << c.name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // The inventory's own checks of the scheduler keys.
  for (const auto& [farm_extra, says] : std::vector<std::pair<std::string, std::string>>{
           {"scheduler = \"pbs\"\n", "farm.scheduler: must be builtin or slurm"},
           {"scheduler = \"slurm\"\n", "farm.partition: required with scheduler = \"slurm\""},
           {"scheduler = \"slurm\"\npartition = \"-x\"\n",
            "farm.partition: expected a Slurm name"}}) {
    farm_file_ = lab_->write_farm(K3_FARM_RISCV_RUNNER, "", farm_extra);
    const auto r = bench({"--shape", "n=64,k=256"});
    std::printf("farm file %s: exit %d: %s", says.c_str(), r.code, r.err.c_str());
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
  // No Slurm client on PATH.
  farm_file_ = slurm_farm();
  const std::string path = std::getenv("PATH");
  setenv("PATH", (lab_->dir() / "no-such-bin").c_str(), 1);
  const auto r = bench({"--shape", "n=64,k=256"});
  setenv("PATH", path.c_str(), 1);
  std::printf("no Slurm client on PATH: exit %d: %s", r.code, r.err.c_str());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("farm.scheduler"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not found on PATH"), std::string::npos) << r.err;
  // An op the runner lacks: found by the jobs (the grid is expanded on the board a job holds),
  // said once as bad input, nothing measured.
  farm_file_ = slurm_farm();
  const auto bad_op = run_k3tune(
      {"-q", "bench", "--farm", farm_file_, "--op", "no_such_op", "--shape", "n=64,k=256"},
      lab_->dir() / "bad-op.db");
  std::printf("unknown op: exit %d: %s", bad_op.code, bad_op.err.c_str());
  EXPECT_EQ(bad_op.code, 2) << bad_op.err << bad_op.out;
  EXPECT_NE(bad_op.err.find("no_such_op"), std::string::npos) << bad_op.err;
  EXPECT_NE(bad_op.err.find("in Slurm job"), std::string::npos) << bad_op.err;
  EXPECT_EQ(count(lab_->dir() / "bad-op.db", "SELECT count(*) FROM samples"), 0);
  // A reservation is Slurm's: refused for a built-in farm, by bench and by the nightly.
  const std::string builtin = lab_->write_farm(K3_FARM_RISCV_RUNNER);
  const auto on_builtin = run_k3tune({"-q", "bench", "--farm", builtin, "--op", "linear_decode",
                                      "--shape", "n=64,k=256", "--reservation", "nightly"});
  const auto nightly = run_k3tune({"nightly", "--profile", "smoke", "--farm", builtin, "--dir",
                                   lab_->dir() / "night", "--reservation", "nightly"});
  std::printf("--reservation on a built-in farm: bench exit %d: %snightly exit %d: %s",
              on_builtin.code, on_builtin.err.c_str(), nightly.code, nightly.err.c_str());
  for (const auto& c : {on_builtin, nightly}) {
    EXPECT_EQ(c.code, 2) << c.err;
    EXPECT_NE(c.err.find("--reservation: farm"), std::string::npos) << c.err;
  }
  EXPECT_FALSE(fs::exists(lab_->dir() / "night"));
  // Nothing else was submitted, stored or created.
  const std::string jobs = jobs_known();
  std::set<std::string> arrays;  // the bad op's array only (one line per task)
  for (std::size_t at = 0; (at = jobs.find("ArrayJobId=", at)) != std::string::npos; ++at)
    arrays.insert(jobs.substr(at, jobs.find(' ', at) - at));
  EXPECT_EQ(arrays.size(), 1u) << jobs;
  EXPECT_FALSE(fs::exists(db()));
  EXPECT_FALSE(fs::exists(db() + ".slurm"));
}

TEST_F(SlurmFarm, TwoConcurrentBenchesOnTheSameBoardsMeasureEveryCell) {
  const auto started = Clock::now();
  const std::string db_a = lab_->dir() / "a.db", db_b = lab_->dir() / "b.db";
  auto a = bench_async(kFourShapes, db_a);
  auto b = bench_async(kFourShapes, db_b);
  std::string seen;
  while (a.wait_for(std::chrono::milliseconds(500)) != std::future_status::ready)
    if (seen.empty() && squeue().find("RUNNING") != std::string::npos)
      seen = "squeue:\n" + squeue() + "sinfo:\n" + sinfo();
  const auto ra = a.get(), rb = b.get();
  std::printf("two benches on b1+b2 (4 cells each): %.1f s in all\n%s", seconds_since(started),
              seen.c_str());
  ASSERT_EQ(ra.code, 0) << ra.err << ra.out;
  ASSERT_EQ(rb.code, 0) << rb.err << rb.out;
  for (const auto& [name, r, path] : {std::tuple{"A", ra, db_a}, std::tuple{"B", rb, db_b}}) {
    const auto j = nlohmann::json::parse(r.out);
    std::printf("bench %s: %.1f s, jobs %s, cells on b1 %lld, on b2 %lld, samples %lld\n", name,
                j["wall_s"].get<double>(), j["jobs"].dump().c_str(),
                static_cast<long long>(measured_on(j, "b1")),
                static_cast<long long>(measured_on(j, "b2")),
                static_cast<long long>(count(path, "SELECT count(*) FROM samples")));
    EXPECT_EQ(j["measured_cells"], 4) << r.out;
    EXPECT_EQ(j["unmeasured_cells"], 0) << r.out;
    // Every cell's aggregate was merged into this bench's database.
    EXPECT_EQ(count(path, "SELECT count(*) FROM aggregates WHERE status = 'ok'"), 4);
  }
  EXPECT_NE(seen, "");
  EXPECT_EQ(squeue(), "");
}

TEST_F(SlurmFarm, SshdKilledMidJobDrainsTheNodeItsCellsFinishOnTheOtherAndTheDrainStays) {
  std::vector<std::string> extra = kFourShapes;
  extra.insert(extra.end(), {"-R", "3", "--min-time", "0.4"});
  const auto started = Clock::now();
  auto running = bench_async(extra);
  // b1's job has committed a process: kill the board.
  for (int i = 0; i < 3000 && count_in_jobs("SELECT count(*) FROM processes p JOIN cells c "
                                            "USING(cell_key) WHERE c.target = 'b1' AND "
                                            "p.status = 'ok'") < 1;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string before_kill = sinfo();
  lab_->sshd(1).kill_all();
  const auto killed = Clock::now();
  double drained_after = -1;
  std::string drained_view;
  while (running.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready)
    if (drained_after < 0 && sinfo().find("b1 drain") != std::string::npos) {
      drained_after = seconds_since(killed);
      drained_view = sinfo();
    }
  const auto r = running.get();
  const double finished_after = seconds_since(killed);
  std::printf(
      "sinfo before the kill:\n%ssinfo once drained (%.1f s after the kill):\n%s"
      "bench: exit %d, %.1f s in all, %.1f s after the kill\n",
      before_kill.c_str(), drained_after, drained_view.c_str(), r.code, seconds_since(started),
      finished_after);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::printf("jobs: %s\ndrained: %s\n", j["jobs"].dump().c_str(), j["drained"].dump().c_str());
  EXPECT_EQ(j["measured_cells"], 4) << r.out;
  EXPECT_GE(measured_on(j, "b2"), 1);
  EXPECT_NE(j["drained"].value("b1", "").find("k3tune: unreachable"), std::string::npos) << r.out;
  EXPECT_GE(drained_after, 0);
  const std::string after = sinfo();
  EXPECT_NE(after.find("b1 drained k3tune: unreachable"), std::string::npos) << after;
  EXPECT_NE(after.find("b2 idle"), std::string::npos) << after;
  // A second round went to b2 only.
  int rounds = 0;
  for (const auto& t : j["jobs"]) rounds = std::max(rounds, t["round"].get<int>());
  EXPECT_EQ(rounds, 2) << j["jobs"].dump();
  for (const auto& t : j["jobs"])
    if (t["round"] == 2) {
      EXPECT_EQ(t["board"], "b2") << t.dump();
    }
  // k3tune's own state (merged from the job's database) and Slurm's, side by side.
  const auto list = run_k3tune({"farm", "list", "--farm", farm_file_});
  std::printf("k3tune farm list:\n%s", list.out.c_str());
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("slurm drained"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("QUARANTINED"), std::string::npos) << list.out;

  // The next run: b1's sshd is back, but the drain keeps Slurm from giving it out.
  lab_->sshd(1).start();
  lab_->write_known_hosts();
  farm_file_ = slurm_farm();
  const auto next_started = Clock::now();
  const auto next = bench({"--shape", "n=192,k=256"});
  ASSERT_EQ(next.code, 0) << next.err << next.out;
  const auto jn = nlohmann::json::parse(next.out);
  std::printf("next run: %.1f s, jobs %s\nsinfo:\n%s", seconds_since(next_started),
              jn["jobs"].dump().c_str(), sinfo().c_str());
  EXPECT_EQ(jn["measured_cells"], 1);
  EXPECT_EQ(measured_on(jn, "b2"), 1);
  EXPECT_NE(sinfo().find("b1 drained k3tune: unreachable"), std::string::npos);

  // `farm release --board b1` lifts k3tune's quarantine and resumes the node in Slurm.
  const auto released = run_k3tune({"farm", "release", "--farm", farm_file_, "--board", "b1"});
  ASSERT_EQ(released.code, 0) << released.err;
  std::printf("after farm release --board b1:\n%s", sinfo().c_str());
  EXPECT_NE(sinfo().find("b1 idle"), std::string::npos) << sinfo();
}

TEST_F(SlurmFarm, AReservationKeepsASecondBenchOffTheReservedBoard) {
  ASSERT_NE(slurm({"scontrol", "create", "reservation", "ReservationName=nightly", "Nodes=b1",
                   "StartTime=now", "Duration=60", "Users=" + user_name()})
                .find("Reservation created"),
            std::string::npos);
  const std::string db_night = lab_->dir() / "night.db", db_ci = lab_->dir() / "ci.db";
  const std::vector<std::string> two = {"--shape", "n=64,k=256", "--shape", "n=96,k=256"};
  std::vector<std::string> in_reservation = two;
  in_reservation.push_back("--reservation=nightly");
  const auto started = Clock::now();
  auto night = bench_async(in_reservation, db_night);
  auto ci = bench_async(two, db_ci);
  const auto rn = night.get(), rc = ci.get();
  std::printf("reservation nightly on b1: both benches done in %.1f s\nsinfo:\n%s",
              seconds_since(started), sinfo().c_str());
  ASSERT_EQ(rn.code, 0) << rn.err << rn.out;
  ASSERT_EQ(rc.code, 0) << rc.err << rc.out;
  const auto jn = nlohmann::json::parse(rn.out), jc = nlohmann::json::parse(rc.out);
  std::printf("in the reservation: jobs %s\noutside: jobs %s\n", jn["jobs"].dump().c_str(),
              jc["jobs"].dump().c_str());
  EXPECT_EQ(measured_on(jn, "b1"), 2);
  EXPECT_EQ(measured_on(jc, "b2"), 2);
  EXPECT_EQ(measured_on(jc, "b1"), 0);
}

TEST_F(SlurmFarm, ASilentSlurmStopsTheRunAndResumePicksUpTheJobsItLeft) {
  farm_file_ = slurm_farm("slurm_timeout_s = 3\n");
  const std::vector<std::string> extra = {"--shape", "n=64,k=256", "--shape",    "n=96,k=256",
                                          "-R",      "3",          "--min-time", "0.4"};
  const auto started = Clock::now();
  auto running = bench_async(extra);
  // A job has committed a process.
  for (int i = 0;
       i < 3000 && count_in_jobs("SELECT count(*) FROM processes WHERE status = 'ok'") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string queue = squeue();
  const pid_t ctld = std::stoi(read_file(slurm_dir_ + "/run/slurmctld.pid"));
  kill(ctld, SIGSTOP);
  // The jobs' k3tune processes pause too, so that they are surely still running when the
  // controller gives up (the jobs themselves do not need slurmctld).
  const auto workers = processes_mentioning(db() + ".slurm/");
  for (pid_t p : workers) kill(p, SIGSTOP);
  const auto stopped = Clock::now();
  const auto r = running.get();
  const double gave_up_after = seconds_since(stopped);
  const auto committed = count(db(), "SELECT count(*) FROM samples");
  kill(ctld, SIGCONT);
  for (pid_t p : workers) kill(p, SIGCONT);
  std::printf(
      "squeue when slurmctld was stopped:\n%sbench: exit %d %.1f s after the stop: %s"
      "samples in the run database then: %lld\n",
      queue.c_str(), r.code, gave_up_after, r.err.c_str(), static_cast<long long>(committed));
  ASSERT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("Slurm did not answer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("jobs left: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  EXPECT_GT(committed, 0);  // what the jobs committed before the silence was merged
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LT(j["measured_cells"].get<int>(), 2) << r.out;

  const auto resumed_at = Clock::now();
  auto resumed_args = extra;
  resumed_args.push_back("--resume");
  const auto again = bench(resumed_args);
  ASSERT_EQ(again.code, 0) << again.err << again.out;
  const auto ja = nlohmann::json::parse(again.out);
  std::printf("--resume: %.1f s (%.1f s in all), jobs %s, samples %lld -> %lld\n",
              seconds_since(resumed_at), seconds_since(started), ja["jobs"].dump().c_str(),
              static_cast<long long>(ja["samples_before"].get<std::int64_t>()),
              static_cast<long long>(ja["samples_after"].get<std::int64_t>()));
  EXPECT_EQ(ja["measured_cells"], 2) << again.out;
  EXPECT_GT(ja["samples_after"].get<std::int64_t>(), committed);
  EXPECT_EQ(count(db(), "SELECT count(*) FROM aggregates WHERE status = 'ok'"), 2);
  // The jobs of the first run were picked up, not submitted again.
  EXPECT_EQ(ja["jobs"][0]["job"], j["jobs"][0]["job"]) << again.out;
}

TEST_F(SlurmFarm, ABoardThatDiesWhollyIsSetDownBySlurmAndItsJobRequeuedOnTheOther) {
  std::vector<std::string> extra = kFourShapes;
  extra.insert(extra.end(), {"-R", "3", "--min-time", "0.4"});
  const auto started = Clock::now();
  auto running = bench_async(extra);
  // The task on b1: its array id ("3_0") and its job id (slurmstepd's "[4.batch]").
  std::string task, job;
  for (int i = 0; i < 3000 && task.empty(); ++i) {
    std::istringstream q(slurm({"squeue", "-h", "-t", "RUNNING", "-o", "%i %A %N"}));
    for (std::string t, j, n; q >> t >> j >> n;)
      if (n == "b1") task = t, job = j;
    if (task.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(task.empty());
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the task is measuring
  // The board host dies: b1's slurmd, the job's step daemon and processes, the board's sshd.
  kill(std::stoi(read_file(slurm_dir_ + "/run/slurmd-b1.pid")), SIGKILL);
  for (pid_t p : processes_mentioning("[" + job + ".batch]")) kill(p, SIGKILL);
  for (pid_t p : processes_mentioning("job-" + task + ".db")) kill(p, SIGKILL);
  lab_->sshd(1).kill_all();
  const auto killed = Clock::now();
  double down_after = -1, again_after = -1;
  std::string down_view;
  while (running.wait_for(std::chrono::milliseconds(250)) != std::future_status::ready) {
    if (down_after < 0 && sinfo().find("b1 down") != std::string::npos) {
      down_after = seconds_since(killed);
      down_view = sinfo();
    }
    if (again_after < 0 && squeue().find(task + " RUNNING b2") != std::string::npos)
      again_after = seconds_since(killed);
  }
  const auto r = running.get();
  std::printf(
      "task %s (job %d) on b1 killed with its board; sinfo %.1f s later:\n%s"
      "task running again on b2 %.1f s after the kill; bench: exit %d, %.1f s in all\n",
      task.c_str(), std::stoi(job), down_after, down_view.c_str(), again_after, r.code,
      seconds_since(started));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::printf("jobs: %s\n", j["jobs"].dump().c_str());
  EXPECT_EQ(j["measured_cells"], 4) << r.out;
  EXPECT_EQ(measured_on(j, "b2"), 4) << r.out;  // b1's share too, after the requeue
  EXPECT_GE(down_after, 0);
  EXPECT_GE(again_after, 0);
  for (const auto& t : j["jobs"]) EXPECT_EQ(t["round"], 1) << t.dump();  // Slurm moved it
  EXPECT_NE(slurm({"scontrol", "show", "job", job}).find("Restarts=1"), std::string::npos);
}

// The tuning campaign as Slurm jobs: a job per board, each tuning its share of the sessions on the
// board Slurm allocated, then one more job, the table pass, writes the table from the merged
// database and measures nothing. The same command again is answered from the database: every
// job resumes finished sessions and counts nothing (they start from a snapshot of it).
TEST_F(SlurmFarm, ATuningCampaignRunsAsJobsAndItsLastJobWritesTheTable) {
  const std::string t1 = lab_->dir() / "t1.json", t2 = lab_->dir() / "t2.json";
  auto tune = [&](const std::string& out) {
    return run_k3tune({"-q", "--json", "tune", "--farm", farm_file_, "--objective", "instructions",
                       "--op", "linear_decode", "--shape", "n=256,k=256", "--shape", "n=128,k=256",
                       "--strategy", "exhaustive", "--out", out});
  };
  const auto started = Clock::now();
  const auto first = tune(t1);
  std::printf("tune campaign (2 sessions) on Slurm: %.1f s\n", seconds_since(started));
  ASSERT_EQ(first.code, 0) << first.err << first.out;
  const auto j = nlohmann::json::parse(first.out);
  std::printf("jobs %s\nsessions %s\n", j["jobs"].dump().c_str(), j["sessions"].dump().c_str());
  EXPECT_EQ(j["total_sessions"], 2);
  EXPECT_EQ(j["tuned_sessions"], 2);
  std::set<std::string> boards;
  for (const auto& s : j["sessions"]) boards.insert(s["board"].get<std::string>());
  EXPECT_EQ(boards, (std::set<std::string>{"b1", "b2"})) << j["sessions"].dump();
  // The first round: four shares per board (the array balances itself), the two holding a
  // session ran, the empty ones were cancelled unstarted once a job reported the count; then the
  // table pass.
  ASSERT_EQ(j["jobs"].size(), 2 * 4 + 1u) << j["jobs"].dump();
  int tuning = 0, cancelled = 0;
  for (std::size_t i = 0; i + 1 < j["jobs"].size(); ++i) {
    tuning += j["jobs"][i]["tuned"].get<int>();
    cancelled += j["jobs"][i]["state"] == "empty";
  }
  EXPECT_EQ(tuning, 2) << j["jobs"].dump();
  EXPECT_GE(cancelled, 4) << j["jobs"].dump();  // at most the first two empty ones started
  EXPECT_EQ(j["jobs"].back()["sessions"], "table pass");
  EXPECT_EQ(j["table_pass_measured"], 0) << j["table_pass"].dump();
  const std::int64_t counted = count(db(), "SELECT count(*) FROM tuning_measurements");
  EXPECT_EQ(counted, 6 + 4);  // the valid configurations of the two shapes, counted once
  const auto table = nlohmann::json::parse(read_file(t1));
  EXPECT_EQ(table["entries"].size(), 2u);
  EXPECT_EQ(table["board"]["fingerprint"]["vlen"], 1024) << table["board"].dump();
  EXPECT_EQ(j["groups"][0]["boards"], nlohmann::json::array({"b1", "b2"}));
  EXPECT_EQ(squeue(), "");

  const auto again = tune(t2);
  ASSERT_EQ(again.code, 0) << again.err << again.out;
  const auto j2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(j2["tuned_sessions"], 2);
  EXPECT_EQ(count(db(), "SELECT count(*) FROM tuning_measurements"), counted);
  EXPECT_EQ(nlohmann::json::parse(read_file(t2))["entries"], table["entries"]);
  std::printf("the same campaign again: %.1f s in all, nothing counted again\n",
              j2["wall_s"].get<double>());

  // The table verified as one Slurm job on the board that made it (timing under qemu: --force);
  // what it measured is merged into this database.
  const std::int64_t processes = count(db(), "SELECT count(*) FROM processes");
  const auto verify =
      run_k3tune({"-q", "--json", "table", "verify", "--table", t1, "--farm", farm_file_, "--force",
                  "--processes", "2", "-R", "1", "--min-time", "0.01"});
  ASSERT_TRUE(verify.code == 0 || verify.code == 1) << verify.err << verify.out;
  const auto v = nlohmann::json::parse(verify.out);
  const std::string made_by = table["board"]["name"];
  EXPECT_NE(v["target"].get<std::string>().find(made_by), std::string::npos) << v["target"];
  EXPECT_EQ(v["entries"].size(), 2u) << verify.out;
  EXPECT_GT(count(db(), "SELECT count(*) FROM processes"), processes);
  EXPECT_NE(jobs_known().find("JobName=k3tune-verify"), std::string::npos);
  std::printf("table verify as a Slurm job on %s: %s\n", made_by.c_str(),
              v["verdict"].dump().c_str());

  // Slurm-only options are refused where they mean nothing, before anything runs.
  const std::string builtin = lab_->write_farm(K3_FARM_RISCV_RUNNER);
  const auto resv = run_k3tune({"-q", "tune", "--farm", builtin, "--op", "linear_decode", "--shape",
                                "n=256,k=256", "--reservation", "nightly"});
  const auto share = run_k3tune({"-q", "tune", "--farm", farm_file_, "--op", "linear_decode",
                                 "--shape", "n=256,k=256", "--shard", "1/2"});
  for (const auto& r : {resv, share}) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_NE(resv.err.find("--reservation: farm"), std::string::npos) << resv.err;
  EXPECT_NE(share.err.find("--shard/--sessions"), std::string::npos) << share.err;
}

// A board lost mid-session: its job drains the node with k3tune's reason, the next round gives
// the session to the other board, which resumes it from the points the lost job committed
// (merged into the snapshot it starts from): every configuration counted once, and the table
// pass runs on the board left.
TEST_F(SlurmFarm, ABoardLostMidSessionIsDrainedAndItsSessionResumesOnTheOther) {
  const std::string t1 = lab_->dir() / "t1.json";
  const auto started = Clock::now();
  auto running = std::async(std::launch::async, [&] {
    return run_k3tune({"-q", "--json", "tune", "--farm", farm_file_, "--objective", "instructions",
                       "--op", "linear_decode", "--shape", "n=256,k=256", "--shape", "n=128,k=256",
                       "--strategy", "exhaustive", "--out", t1});
  });
  // b1's job has stored two points of its session: kill the board.
  bool killed = false;
  for (int i = 0; i < 3000 && !killed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (count_in_jobs("SELECT count(*) FROM tuning_measurements m JOIN tuning_sessions s "
                      "USING (session_id) WHERE s.target = 'b1'") >= 2) {
      lab_->sshd(1).kill_all();
      killed = true;
    }
  }
  const auto killed_at = Clock::now();
  double drained_after = -1;
  while (running.wait_for(std::chrono::milliseconds(200)) != std::future_status::ready)
    if (drained_after < 0 && sinfo().find("b1 drain") != std::string::npos)
      drained_after = seconds_since(killed_at);
  const auto r = running.get();
  std::printf(
      "tune campaign, b1 killed after two points: %.1f s in all, drained %.1f s after "
      "the kill\nsinfo: %s",
      seconds_since(started), drained_after, sinfo().c_str());
  ASSERT_TRUE(killed) << r.out << r.err;
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  std::printf("jobs %s\n", j["jobs"].dump().c_str());
  EXPECT_GE(drained_after, 0);
  EXPECT_NE(j["drained"].value("b1", "").find("k3tune: "), std::string::npos) << j["drained"];
  EXPECT_EQ(j["tuned_sessions"], 2);
  for (const auto& job : j["jobs"])
    if (job["round"] > 1) {
      EXPECT_EQ(job["board"], "b2") << job.dump();
    }
  EXPECT_EQ(j["table_pass_measured"], 0);
  EXPECT_EQ(count(db(), "SELECT count(*) FROM tuning_measurements"), 6 + 4);
  EXPECT_EQ(nlohmann::json::parse(read_file(t1))["entries"].size(), 2u);
}

// A Slurm controller that goes silent mid-campaign: the campaign stops (a fault) with what its
// jobs committed merged and the jobs it left named; `tune --resume` waits for those jobs, merges
// them and finishes: every configuration counted once, the first run's jobs picked up.
TEST_F(SlurmFarm, ASilentSlurmStopsTheCampaignAndResumePicksUpItsJobs) {
  farm_file_ = slurm_farm("slurm_timeout_s = 3\n");
  const std::string t1 = lab_->dir() / "t1.json";
  const std::vector<std::string> args = {"-q",
                                         "--json",
                                         "tune",
                                         "--farm",
                                         farm_file_,
                                         "--objective",
                                         "instructions",
                                         "--op",
                                         "linear_decode",
                                         "--shape",
                                         "n=256,k=256",
                                         "--shape",
                                         "n=128,k=256",
                                         "--strategy",
                                         "exhaustive",
                                         "--out",
                                         t1};
  auto running = std::async(std::launch::async, [&] { return run_k3tune(args); });
  for (int i = 0; i < 3000 && count_in_jobs("SELECT count(*) FROM tuning_measurements") < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const pid_t ctld = std::stoi(read_file(slurm_dir_ + "/run/slurmctld.pid"));
  kill(ctld, SIGSTOP);
  const auto workers = processes_mentioning(db() + ".slurm/");
  for (pid_t p : workers) kill(p, SIGSTOP);
  const auto r = running.get();
  const auto committed = count(db(), "SELECT count(*) FROM tuning_measurements");
  kill(ctld, SIGCONT);
  for (pid_t p : workers) kill(p, SIGCONT);
  std::printf("tune: exit %d: %scounted configurations merged then: %lld\n", r.code, r.err.c_str(),
              static_cast<long long>(committed));
  ASSERT_EQ(r.code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find("Slurm did not answer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("jobs left: "), std::string::npos) << r.err;
  EXPECT_GT(committed, 0);
  EXPECT_FALSE(fs::exists(t1));
  const auto j = nlohmann::json::parse(r.out);

  auto resumed_args = args;
  resumed_args.push_back("--resume");
  const auto again = run_k3tune(resumed_args);
  ASSERT_EQ(again.code, 0) << again.err << again.out;
  const auto ja = nlohmann::json::parse(again.out);
  std::printf("--resume: jobs %s\n", ja["jobs"].dump().c_str());
  EXPECT_EQ(ja["jobs"][0]["job"], j["jobs"][0]["job"]) << again.out;  // picked up, not resubmitted
  EXPECT_EQ(ja["tuned_sessions"], 2);
  EXPECT_EQ(count(db(), "SELECT count(*) FROM tuning_measurements"), 6 + 4);
  EXPECT_TRUE(fs::exists(t1));
}

// The nightly on a Slurm farm, inside a reservation of both boards: its farm steps (bench, the
// tuning campaign, the per-board verdict) are Slurm jobs in the reservation, its deploy step is
// the jobs' own, and the table is the campaign's table pass's.
TEST_F(SlurmFarm, TheNightlysFarmStepsAreSlurmJobsInItsReservation) {
  ASSERT_NE(slurm({"scontrol", "create", "reservation", "ReservationName=nightly", "Nodes=b1,b2",
                   "StartTime=now", "Duration=60", "Users=" + user_name()})
                .find("Reservation created"),
            std::string::npos);
  const std::string targets = lab_->dir() / "targets.toml";
  write_file(targets, std::string("[targets.local]\nkind = \"local\"\nvariant = \"host\"\n") +
                          "runner = \"" + K3BENCH_PATH + "\"\ntimeout_s = 300\n");
  const std::string dir = lab_->dir() / "nightly/slurm1";
  const auto started = Clock::now();
  const auto r =
      k3targets::run_process({K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "--targets",
                              targets, "nightly", "--profile", "smoke", "--farm", farm_file_,
                              "--no-build", "--dir", dir, "--reservation", "nightly"},
                             k3targets::ProcessOptions::with_timeout(900));
  std::printf("nightly on the Slurm farm in reservation nightly: %.1f s\n", seconds_since(started));
  std::string logs;
  if (r.exit_code != 0 && fs::exists(dir + "/logs"))
    for (const auto& e : fs::directory_iterator(dir + "/logs"))
      logs += e.path().filename().string() + ":\n" + read_file(e.path().string()) + "\n";
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << logs;
  std::printf("%s", r.out.c_str());
  EXPECT_NE(r.out.find("deploy-probe: skipped: Slurm farm"), std::string::npos) << r.out;
  // Every farm step's jobs ran in the reservation: bench, tune (sessions and table pass) and the
  // board verdict; nothing else was submitted.
  const std::string jobs = jobs_known();
  std::map<std::string, int> by_name;
  for (const char* name : {"k3tune-bench", "k3tune-tune"}) {
    for (auto at = jobs.find(std::string("JobName=") + name); at != std::string::npos;
         at = jobs.find(std::string("JobName=") + name, at + 1))
      ++by_name[name];
  }
  std::printf("jobs: %d bench, %d tune\n", by_name["k3tune-bench"], by_name["k3tune-tune"]);
  EXPECT_GE(by_name["k3tune-bench"], 2);  // the bench step's array, the board verdict's
  EXPECT_GE(by_name["k3tune-tune"], 2);   // the sessions, the table pass
  std::size_t lines = 0, in_reservation = 0;
  for (std::size_t at = 0; (at = jobs.find("JobId=", at)) != std::string::npos; ++at) {
    ++lines;
    const std::size_t end = jobs.find('\n', at);
    in_reservation += jobs.substr(at, end - at).find("Reservation=nightly") != std::string::npos;
  }
  EXPECT_EQ(in_reservation, lines) << jobs;
  const auto table = nlohmann::json::parse(read_file(dir + "/tables/farm.json"));
  EXPECT_EQ(table["source"]["objective"], "instructions");
  EXPECT_EQ(count(db(), "SELECT count(*) FROM nightly_steps WHERE status <> 'done'"), 0);
  EXPECT_EQ(count(db(),
                  "SELECT count(*) FROM nightly_steps WHERE step LIKE 'board-verdict-%' AND "
                  "status = 'done'"),
            1);
  EXPECT_EQ(squeue(), "");

  // A later night's board verdict is an A/B on one board (tonight's runner and the previous
  // night's): the whole bench runs as one job there, in the reservation, and its report is the
  // command's output (the run the judge step reports).
  // The previous night's runner: the same code, another binary (a byte appended to the ELF).
  const std::string previous = lab_->dir() / "previous-k3bench";
  fs::copy_file(K3_FARM_RISCV_RUNNER, previous);
  std::ofstream(previous, std::ios::app) << '\n';
  fs::permissions(previous, fs::perms::owner_exec, fs::perm_options::add);
  const auto ab = run_k3tune({"-q",
                              "--json",
                              "bench",
                              "--farm",
                              farm_file_,
                              "--board",
                              "b2",
                              "--baseline-runner",
                              previous,
                              "--op",
                              "linear_decode",
                              "--shape",
                              "n=256,k=256",
                              "-P",
                              "2",
                              "--target-ci",
                              "0",
                              "-R",
                              "1",
                              "--min-time",
                              "0.01",
                              "--reservation",
                              "nightly"});
  ASSERT_EQ(ab.code, 0) << ab.err << ab.out;
  const auto j = nlohmann::json::parse(ab.out);
  EXPECT_EQ(j["builds"].size(), 2u) << ab.out;
  EXPECT_EQ(count(db(), "SELECT count(*) FROM runs WHERE run_uuid = '" +
                            j["run_uuid"].get<std::string>() + "'"),
            1);
  const std::string after = jobs_known();
  EXPECT_NE(after.find("JobName=k3tune-bench"), std::string::npos);
  EXPECT_NE(after.rfind("NodeList=b2"), std::string::npos) << after;
}

}  // namespace
