// The contract every farm scheduler keeps (apps/scheduler/scheduler.h; docs/farm-and-nightly.md,
// "Adding a scheduler"), checked once per implementation on a real two-board loopback farm (sshd
// boards running the dynamically linked riscv64 k3bench under qemu-user):
//   Builtin -- k3tune's own leases (label farm);
//   Slurm   -- a private munge + slurmctld + two slurmd on loopback (label slurm).
// A new scheduler adds one lab below and gets every case. Cases: the boards a process may use and
// a reservation that is not asked for; the cells of a sweep measured once each with a dead board's
// cells measured on the other, the dead board held out and brought back by `farm release`; a
// campaign's session tuned and its table written; an outcome's JSON core is the same whichever
// scheduler ran the work.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "apps/scheduler/scheduler.h"
#include "farm_test_support.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/store/database.h"

namespace {

using namespace k3farm_test;

// A lab: how the farm file names its scheduler, and what must run beside the boards.
struct BuiltinLab {
  static std::string farm_keys() { return ""; }
  void start(const TempDir&) {}
  void stop() {}
};

struct SlurmLab {
  static std::string farm_keys() {
    return "scheduler = \"slurm\"\npartition = \"boards\"\ngres = \"k3:1\"\n";
  }
  void start(const TempDir& dir) {
    dir_ = dir / "slurm";
    const auto r = k3targets::run_process(
        {"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh", "start", dir_},
        k3targets::ProcessOptions::with_timeout(120));
    ASSERT_TRUE(r.ok()) << r.err << r.out;
    setenv("SLURM_CONF", (dir_ + "/slurm.conf").c_str(), 1);
  }
  void stop() {
    if (dir_.empty()) return;
    k3targets::run_process(
        {"bash", std::string(K3TUNE_ROOT) + "/tests/support/slurm-cluster.sh", "stop", dir_},
        k3targets::ProcessOptions::with_timeout(60));
    unsetenv("SLURM_CONF");
  }
  std::string dir_;
};

template <class Lab>
class SchedulerConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(K3_FARM_RISCV_RUNNER)) << K3_FARM_RISCV_RUNNER << " missing";
    farm_ = std::make_unique<LoopbackFarm>(2);
    lab_.start(farm_->dir());
    if (HasFatalFailure()) return;
    write_farm();
  }
  void TearDown() override { lab_.stop(); }

  void write_farm() { farm_file_ = farm_->write_farm(K3_FARM_RISCV_RUNNER, "", Lab::farm_keys()); }
  std::string db() const { return farm_->dir() / "results.db"; }

  struct Cmd {
    int code;
    std::string out, err;
  };
  Cmd k3tune(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "-q"};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(900));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::unique_ptr<k3scheduler::Scheduler> scheduler() const {
    return k3scheduler::open_farm(farm_file_, {.root = K3TUNE_ROOT, .db_path = db()}).scheduler;
  }
  // Whether `board` is out of service: quarantined in k3tune's state or held out by the scheduler.
  bool board_out(const std::string& board) const {
    const auto list = k3tune({"--json", "farm", "list", "--farm", farm_file_});
    EXPECT_EQ(list.code, 0) << list.err;
    const auto s = scheduler();
    const nlohmann::json listed = nlohmann::json::parse(list.out);
    for (const auto& b : listed["boards"]) {
      if (b["board"] != board) continue;
      const bool quarantined = b["state"].is_object() && b["state"]["quarantined"] == true;
      const bool held = b.contains(s->name()) && s->holds_out(b[s->name()]);
      return quarantined || held;
    }
    ADD_FAILURE() << board << " not listed: " << list.out;
    return false;
  }

  Lab lab_;
  std::unique_ptr<LoopbackFarm> farm_;
  std::string farm_file_;
};

using Labs = ::testing::Types<BuiltinLab, SlurmLab>;
class LabNames {
 public:
  template <class T>
  static std::string GetName(int) {
    return std::is_same_v<T, BuiltinLab> ? "Builtin" : "Slurm";
  }
};
TYPED_TEST_SUITE(SchedulerConformance, Labs, LabNames);

TYPED_TEST(SchedulerConformance, BoardsOfThisProcessAndNoReservationAsked) {
  const auto s = this->scheduler();
  // Outside any job of the scheduler a command may use every board it chose.
  EXPECT_EQ(s->boards_for_this_process({"b2", "b1"}), (std::vector<std::string>{"b2", "b1"}));
  EXPECT_NO_THROW(s->accept_reservation(""));
  // A fresh farm: the scheduler holds no board out.
  for (const auto& [board, view] : s->board_views({"b1", "b2"}))
    EXPECT_FALSE(s->holds_out(view)) << board << ": " << view.dump();
  EXPECT_FALSE(this->board_out("b1"));
}

TYPED_TEST(SchedulerConformance, EveryCellOnceADeadBoardsCellsElsewhereAndTheBoardBroughtBack) {
  this->farm_->sshd(2).kill_all();  // b2 is dead before the run starts
  const auto r = this->k3tune(tiny_farm_sweep_args(
      this->farm_file_, {"--shape", "n=64,k=256", "--shape", "n=96,k=256", "--shape", "n=128,k=256",
                         "--shape", "n=160,k=256", "-R", "2"}));
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // The outcome's common core, whichever scheduler ran the work, in the published form.
  for (const char* key : {"total_cells", "measured_cells", "failed_cells", "unmeasured_cells",
                          "samples_before", "samples_after", "wall_s"})
    EXPECT_TRUE(j.contains(key)) << key << " missing: " << r.out;
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kBench, j),
            std::vector<std::string>{});
  EXPECT_EQ(j["total_cells"], 4);
  EXPECT_EQ(j["measured_cells"], 4) << r.out;
  EXPECT_EQ(j["failed_cells"], 0);
  EXPECT_EQ(j["unmeasured_cells"], 0);
  // Every committed sample is in the run's database, and each cell was measured on b1.
  const auto samples = k3store::open_database(this->db(), k3store::OpenMode::kReadOnly)
                           ->scalar_int("SELECT count(*) FROM samples");
  EXPECT_EQ(j["samples_after"].get<std::int64_t>(), samples);
  EXPECT_GT(samples, j["samples_before"].get<std::int64_t>());
  for (const auto& c : j["cells"]) EXPECT_EQ(c["board"], "b1") << c.dump();
  // A dead board that k3tune found dead (the outcome quarantined it) is out of service until
  // `farm release` brings it back. (A scheduler may not find it: a Slurm job whose board is dead
  // before it can list the runner's ops fails without taking the board out; its cells go to the
  // next round on the other board.)
  EXPECT_FALSE(this->board_out("b1"));
  if (!j["quarantined"].contains("b2")) return;
  EXPECT_TRUE(this->board_out("b2"));
  this->farm_->sshd(2).start();
  this->farm_->write_known_hosts();
  this->write_farm();
  const auto released =
      this->k3tune({"farm", "release", "--farm", this->farm_file_, "--board", "b2"});
  ASSERT_EQ(released.code, 0) << released.err << released.out;
  EXPECT_FALSE(this->board_out("b2"));
}

TYPED_TEST(SchedulerConformance, ACampaignsSessionIsTunedAndItsTableWritten) {
  const std::string table = this->farm_->dir() / "table.json";
  const auto r = this->k3tune({"--json", "tune", "--farm", this->farm_file_, "--objective",
                               "instructions", "--op", "linear_decode", "--shape", "n=128,k=256",
                               "--strategy", "exhaustive", "--out", table});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kTuneFarm, j),
            std::vector<std::string>{});
  EXPECT_EQ(j["total_sessions"], 1) << r.out;
  ASSERT_EQ(j["groups"].size(), 1u) << r.out;
  EXPECT_EQ(j["groups"][0]["table"], table);
  EXPECT_TRUE(fs::exists(table));
}

}  // namespace
