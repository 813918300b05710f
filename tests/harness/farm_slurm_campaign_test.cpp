// A board farm scheduled by a real Slurm (label slurm), the work beyond bench. Each test starts its
// own cluster of two boards (slurm_farm_fixture.h). Cases:
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

#include "slurm_farm_fixture.h"

namespace {

using namespace k3slurm_test;

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
