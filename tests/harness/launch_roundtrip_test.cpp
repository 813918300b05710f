// The launcher's requests (harness/host/launch) parsed back by k3tune's own command line: every
// request's arguments go through the real CLI11 parser of apps/cli (add_k3tune_cli, with the
// subcommands' callbacks taken off so nothing runs), and each field comes back as the value of
// the option the subcommand reads it from. A flag renamed or removed in the CLI, or a value put
// where another option takes it, fails here. Every step of every nightly profile is parsed too:
// the nightly starts no child the CLI would refuse.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cli/app_context.h"
#include "apps/nightly/nightly_profile.h"
#include "harness/host/launch/launcher.h"
#include "harness/host/launch/task_share.h"

namespace {

namespace fs = std::filesystem;
namespace launch = k3launch;
using Strings = std::vector<std::string>;

// Thrown once the whole command line is parsed and checked, before any subcommand runs. (Taking
// the subcommands' callbacks off would not do: each callback owns the values its options write.)
struct ParsedOnly {};

// One parse of k3tune's command line: the subcommands given, and every option's values.
class Parsed {
 public:
  explicit Parsed(const Strings& args) {
    k3cli::add_k3tune_cli(app_, ctx_);
    app_.parse_complete_callback([] { throw ParsedOnly{}; });
    Strings reversed(args.rbegin(), args.rend());  // CLI11 takes its vector back to front
    try {
      app_.parse(reversed);
    } catch (const ParsedOnly&) {
      return;
    }
    ADD_FAILURE() << "the command line was not parsed to its end";
  }
  // The chain of subcommands parsed ("bench", "table verify", ...).
  std::string subcommand() const {
    std::string chain;
    for (const CLI::App* a = &app_;;) {
      const auto subs = a->get_subcommands();
      if (subs.empty()) return chain;
      a = subs.front();
      chain += (chain.empty() ? "" : " ") + a->get_name();
    }
  }
  // The values given to `name` (e.g. "--op") on the deepest subcommand that has it, or globally.
  Strings values(const std::string& name) const {
    Strings found;
    for (const CLI::App* a = &app_;;) {
      if (const CLI::Option* o = find(a, name); o && o->count() > 0) found = o->results();
      const auto subs = a->get_subcommands();
      if (subs.empty()) return found;
      a = subs.front();
    }
  }
  std::string value(const std::string& name) const {
    const Strings v = values(name);
    return v.empty() ? "" : v.back();
  }
  bool given(const std::string& name) const { return !values(name).empty(); }
  const k3cli::AppContext& globals() const { return ctx_; }

 private:
  static const CLI::Option* find(const CLI::App* a, const std::string& name) {
    try {
      return a->get_option(name);
    } catch (const CLI::OptionNotFound&) {
      return nullptr;
    }
  }
  CLI::App app_{"k3tune"};
  k3cli::AppContext ctx_;
};

// Files the CLI checks exist (tables, runners), in a folder of the test's own.
class LaunchRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("k3-launch-" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "tables");
    for (const char* f : {"tables/local.json", "tables/farm.json", "tables/qemu-vlen1024.json",
                          "runner-b", "farm.toml"})
      std::ofstream(dir_ / f) << "{}\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(LaunchRoundTrip, TheLaunchersGlobalsAreK3tunesGlobalOptions) {
  const launch::Launcher l{.self_exe = "/bin/k3tune",
                           .root = "/src",
                           .db_path = file("k.db"),
                           .targets_file = file("targets.toml"),
                           .quiet = true};
  const Strings argv = l.argv(launch::Compare{"r1", "r2"});
  ASSERT_EQ(argv.front(), "/bin/k3tune");
  const Parsed p(Strings(argv.begin() + 1, argv.end()));
  EXPECT_EQ(p.globals().root, "/src");
  EXPECT_EQ(p.globals().db, file("k.db"));
  EXPECT_EQ(p.globals().targets_file, file("targets.toml"));
  EXPECT_TRUE(p.globals().quiet);
  EXPECT_FALSE(p.globals().json);
  EXPECT_EQ(p.subcommand(), "compare");
  EXPECT_EQ(p.value("run_a"), "r1");
  EXPECT_EQ(p.value("run_b"), "r2");
  // A Slurm task's globals: no --db among them (the batch script adds the task's own through
  // shell_globals), --json for the controller.
  const launch::Launcher worker{.self_exe = "k3tune", .root = "/src", .json = true};
  Strings g = worker.globals();
  g.insert(g.end(), {"compare", "r1", "r2"});
  const Parsed w(Strings(g.begin() + 1, g.end()));
  EXPECT_TRUE(w.globals().json);
  EXPECT_TRUE(w.globals().db.empty());
}

TEST_F(LaunchRoundTrip, ABenchOnAFarmComesBackFieldByField) {
  const launch::Bench rq{
      .place =
          launch::OnFarm{.farm = file("farm.toml"), .boards = {"b1", "b2"}, .reservation = "night"},
      .cells = {.model = "qwen3-0.6b",
                .ops = {"linear_decode", "linear_prefill"},
                .shapes = {"n=1024,k=1024", "n=3072,k=1024"},
                .path = "rvv"},
      .plan = {.processes = 6, .target_ci = 0.0, .repetitions = 3, .min_time_s = 0.02},
      .resume = true,
      .baseline_runner = file("runner-b")};
  EXPECT_EQ(launch::output_of(rq), k3bench::ChildOutput::kBench);
  const Parsed p(launch::arguments(rq));
  EXPECT_TRUE(p.globals().json);  // the bench form is JSON: --json goes with it
  EXPECT_EQ(p.subcommand(), "bench");
  EXPECT_EQ(p.value("--farm"), file("farm.toml"));
  EXPECT_EQ(p.values("--board"), (Strings{"b1", "b2"}));
  EXPECT_EQ(p.value("--reservation"), "night");
  EXPECT_EQ(p.value("--model"), "qwen3-0.6b");
  EXPECT_EQ(p.values("--op"), (Strings{"linear_decode", "linear_prefill"}));
  EXPECT_EQ(p.values("--shape"), (Strings{"n=1024,k=1024", "n=3072,k=1024"}));
  EXPECT_EQ(p.value("--path"), "rvv");
  EXPECT_EQ(p.value("--processes"), "6");
  EXPECT_EQ(p.value("--target-ci"), "0");
  EXPECT_EQ(p.value("--reps"), "3");
  EXPECT_EQ(p.value("--min-time"), "0.02");
  EXPECT_TRUE(p.given("--resume"));
  EXPECT_EQ(p.value("--baseline-runner"), file("runner-b"));
  EXPECT_FALSE(p.given("--target"));
}

TEST_F(LaunchRoundTrip, UnsetFieldsLeaveTheSubcommandsDefaults) {
  const Parsed p(launch::arguments(
      launch::Bench{.place = launch::OnTarget{"local"}, .cells = {.ops = {"linear_decode"}}}));
  EXPECT_EQ(p.value("--target"), "local");
  for (const char* absent :
       {"--farm", "--board", "--reservation", "--model", "--shape", "--path", "--processes",
        "--target-ci", "--reps", "--min-time", "--resume", "--baseline-runner"})
    EXPECT_FALSE(p.given(absent)) << absent;
}

TEST_F(LaunchRoundTrip, TuningVerifyingAndCountingComeBackFieldByField) {
  const launch::Tune tune{.place = launch::OnFarm{.farm = file("farm.toml")},
                          .cells = {.ops = {"linear_decode"}, .shapes = {"n=256,k=256"}},
                          .objective = "auto",
                          .strategy = "coordinate",
                          .budget = "8",
                          .plan = {.processes = 2, .repetitions = 3, .min_time_s = 0.02},
                          .out = file("tables/farm.json")};
  EXPECT_EQ(launch::output_of(tune), k3bench::ChildOutput::kTuneFarm);
  const Parsed t(launch::arguments(tune));
  EXPECT_EQ(t.subcommand(), "tune");
  EXPECT_EQ(t.value("--farm"), file("farm.toml"));
  EXPECT_EQ(t.value("--objective"), "auto");
  EXPECT_EQ(t.value("--strategy"), "coordinate");
  EXPECT_EQ(t.value("--budget"), "8");
  EXPECT_EQ(t.value("--processes"), "2");
  EXPECT_EQ(t.value("--out"), file("tables/farm.json"));
  // A tune on one target prints text: no --json.
  const launch::Tune local{.place = launch::OnTarget{"local"}, .cells = tune.cells};
  EXPECT_EQ(launch::output_of(local), k3bench::ChildOutput::kNone);
  EXPECT_FALSE(Parsed(launch::arguments(local)).globals().json);

  const Parsed v(launch::arguments(
      launch::TableVerify{.place = launch::OnTarget{"local"},
                          .tables = {file("tables/local.json"), file("tables/farm.json")},
                          .plan = {.processes = 3}}));
  EXPECT_EQ(v.subcommand(), "table verify");
  EXPECT_EQ(v.values("--table"), (Strings{file("tables/local.json"), file("tables/farm.json")}));
  EXPECT_EQ(v.value("--target"), "local");
  EXPECT_EQ(v.value("--processes"), "3");

  const Parsed c(launch::arguments(launch::Count{
      .vlens = "256,1024", .variants = {"rvv", "ime2-emu"}, .cases = {"linear_decode n=8,k=64"}}));
  EXPECT_TRUE(c.globals().json);
  EXPECT_EQ(c.subcommand(), "count");
  EXPECT_EQ(c.values("--vlens"), (Strings{"256", "1024"}));  // the option splits at commas
  EXPECT_EQ(c.values("--variant"), (Strings{"rvv", "ime2-emu"}));
  EXPECT_EQ(c.values("--case"), (Strings{"linear_decode n=8,k=64"}));
}

TEST_F(LaunchRoundTrip, TheFarmAndSmallSubcommandsComeBack) {
  const Parsed probe(
      launch::arguments(launch::FarmProbe{.farm = file("farm.toml"), .boards = {"b1"}}));
  EXPECT_EQ(probe.subcommand(), "farm probe");
  EXPECT_EQ(probe.value("--farm"), file("farm.toml"));
  EXPECT_EQ(probe.values("--board"), (Strings{"b1"}));
  const Parsed release(launch::arguments(launch::FarmReleaseStale{file("farm.toml")}));
  EXPECT_EQ(release.subcommand(), "farm release");
  EXPECT_TRUE(release.given("--stale"));
  EXPECT_EQ(release.value("--farm"), file("farm.toml"));
  const Parsed build(launch::arguments(launch::Build{"rvv"}));
  EXPECT_EQ(build.subcommand(), "build");
  EXPECT_EQ(build.value("--variant"), "rvv");
  const Parsed validate(launch::arguments(launch::TableValidate{file("tables/local.json")}));
  EXPECT_EQ(validate.subcommand(), "table validate");
  const Parsed report(launch::arguments(launch::Report{"run-1", file("out")}));
  EXPECT_EQ(report.subcommand(), "report");
  EXPECT_EQ(report.value("run"), "run-1");
  EXPECT_EQ(report.value("--out"), file("out"));
  const Parsed bisect(
      launch::arguments(launch::Bisect{.from_nightly = file("night"), .target = "local"}));
  EXPECT_TRUE(bisect.globals().json);
  EXPECT_EQ(bisect.subcommand(), "bisect");
  EXPECT_EQ(bisect.value("--from-nightly"), file("night"));
  EXPECT_EQ(bisect.value("--target"), "local");
  const Parsed publish(launch::arguments(launch::Publish{file("site")}));
  EXPECT_EQ(publish.subcommand(), "publish");
  EXPECT_EQ(publish.value("dir"), file("site"));
}

// Every step the nightly can start, on the built-in farm and on a farm file, parses.
TEST_F(LaunchRoundTrip, EveryNightlyStepIsACommandK3tuneAccepts) {
  k3nightly::NightlyState s;
  s.dir = dir_.string();
  s.farm = file("farm.toml");
  s.reservation = "night";
  s.baseline_runner = file("runner-b");
  // What the steps before a step leave in the state (each step reads only these).
  s.details["tune-farm"] = nlohmann::json::parse(
      R"({"groups": [{"table": ")" + file("tables/farm.json") + R"(", "objective": "time"}]})");
  s.details["verdict-bench"] = nlohmann::json::parse(R"({"run_uuid": "run-1"})");
  for (const char* board : {"b1", "b2"})
    s.details[std::string("board-verdict-") + board] =
        nlohmann::json::parse(R"({"run_uuid": "run-b"})");
  s.details["count"] = nlohmann::json::parse(R"({"counts": [{"path": "rvv", "run_uuid": "c-2"}]})");
  s.previous_counts = nlohmann::json::parse(R"({"counts": [{"path": "rvv", "run_uuid": "c-1"}]})");
  const k3nightly::NightlyFarm farm_file{
      .builtin = false, .variants = {"rvv-dynamic"}, .boards = {"b1", "b2"}};
  int parsed = 0;
  for (const char* profile : {"quick", "full", "smoke"})
    for (const auto& farm : {k3nightly::NightlyFarm{}, farm_file})
      for (const auto& step : k3nightly::nightly_steps(profile, true, farm)) {
        SCOPED_TRACE(std::string(profile) + " " + step.name);
        const launch::Request rq = step.request(s);
        const Strings args = step.args(s);
        EXPECT_EQ(args, launch::arguments(rq));
        const Parsed p(args);
        EXPECT_FALSE(p.subcommand().empty());
        EXPECT_EQ(p.globals().json, launch::output_of(rq) != k3bench::ChildOutput::kNone);
        ++parsed;
      }
  EXPECT_GT(parsed, 40);
}

// A Slurm task's share and tail, after its command's own arguments, are options bench and tune
// read.
TEST_F(LaunchRoundTrip, ASlurmTasksShareIsWhatBenchAndTuneRead) {
  const auto words = [](const std::string& share) {
    Strings out;
    std::istringstream in(share);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  const auto with = [](Strings a, const Strings& more) {
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Strings bench = {"bench", "--farm", file("farm.toml"), "--op", "linear_decode"};
  const Parsed shard(with(with(bench, words(launch::shard_share(2, 4))), launch::task_tail(true)));
  EXPECT_EQ(shard.value("--shard"), "2/4");
  EXPECT_TRUE(shard.given("--resume"));
  const auto s = launch::shard_of(launch::shard_share(2, 4));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->index, 2);
  EXPECT_EQ(s->count, 4);
  EXPECT_FALSE(launch::shard_of(launch::positions_share(launch::ShareUnit::kCells, {0, 3})));
  const Parsed cells(
      with(bench, words(launch::positions_share(launch::ShareUnit::kCells, {0, 3}))));
  EXPECT_EQ(cells.value("--cells"), "0,3");
  EXPECT_FALSE(cells.given("--resume"));
  const Parsed sessions(with({"tune", "--farm", file("farm.toml"), "--op", "linear_decode"},
                             words(launch::positions_share(launch::ShareUnit::kSessions, {1}))));
  EXPECT_EQ(sessions.subcommand(), "tune");
  EXPECT_EQ(sessions.value("--sessions"), "1");
  EXPECT_TRUE(launch::task_tail(false).empty());
}

}  // namespace
