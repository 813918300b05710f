// A board farm scheduled by a real Slurm (label slurm), bench. Each test starts its own cluster of
// two boards (slurm_farm_fixture.h). `k3tune bench --farm` submits job arrays there; each job runs
// k3tune on the board Slurm allocated. Cases:
//   - bad input (no Slurm client, unknown partition, GRES, reservation, a board that is not a
//     node of the partition): exit 2, one line naming the farm file's key, nothing submitted;
//   - two concurrent benches on the same two boards: Slurm queues them, every cell is measured;
//   - a board's sshd killed mid-job: k3tune drains the node with its reason, the cells left finish
//     on the other board; the drain keeps the board out of the next run too, `farm list` shows
//     Slurm's view and k3tune's, and `farm release --board` resumes the node;
//   - a board that dies wholly (its slurmd, the job's processes and its sshd killed): Slurm sets
//     the node DOWN and requeues the job, which runs again on the other board;
//   - a reservation keeps a second bench's jobs off the reserved board;
//   - slurmctld stops answering mid-run (SIGSTOP, the jobs paused meanwhile): the run stops after
//     slurm_timeout_s with the jobs it left named and what they committed merged; once Slurm
//     answers again, --resume waits for them, merges them and every cell is measured;
// Each case prints what sinfo showed and its timings. The campaign, table verification and nightly
// as jobs are in farm_slurm_campaign_test.cpp.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "slurm_farm_fixture.h"

namespace {

using namespace k3slurm_test;

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
}  // namespace
