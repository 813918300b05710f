// Power recovery of dead boards (harness/host/farm/power_recovery.h):
//   - the inventory's PDU keys, and bad ones as one line "file:line: key: what";
//   - the board events in the store: typed, and only state events decide a board's state;
//   - a real pdudaemon on loopback (Debian's, HTTP listener, localcmdline driver) whose outlets
//     stop and start loopback sshd boards: a board killed mid-sweep is power-cycled back into the
//     same run and measures again, nothing measured lost; a board that never comes back is given
//     up after its attempts of the day; every step is a board event `farm list` shows.
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "farm_test_support.h"
#include "harness/host/farm/inventory.h"
#include "harness/host/farm/pdu_client.h"
#include "harness/host/store/database.h"
#include "harness/host/store/farm_state.h"
#include "pdu_daemon_fixture.h"

namespace {

namespace fs = std::filesystem;
using k3farm_test::read_file;
using k3farm_test::TempDir;
using k3farm_test::write_file;
using k3store::BoardEvent;

std::string inventory_error(const TempDir& tmp, const std::string& text) {
  write_file(tmp / "farm.toml", text);
  try {
    k3farm::load_farm(tmp / "farm.toml");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(FarmPowerInventory, PduOutletsMergeWithDefaultsAndBadKeysAreOneLine) {
  TempDir tmp;
  write_file(tmp / "farm.toml", R"(
[farm]
known_hosts = "kh"
[defaults]
identity = "id"
work_dir = "/w"
pdu = { daemon = "http://127.0.0.1:16421/", name = "lab" }
power_attempts_per_day = 2
[boards.a]
host = "h"
pdu = { outlet = 3, delay_s = 1.5 }
recover_tcm_locks = true
[boards.b]
host = "h"
pdu = { outlet = 0, daemon = "http://pdu2:80", ssh_wait_s = 30 }
power_attempts_per_day = 5
)");
  const auto farm = k3farm::load_farm(tmp / "farm.toml");
  const auto& a = *farm.find("a");
  ASSERT_TRUE(a.pdu.has_value());
  EXPECT_EQ(a.pdu->daemon, "http://127.0.0.1:16421");  // the trailing '/' dropped
  EXPECT_EQ(a.pdu->name, "lab");
  EXPECT_EQ(a.pdu->outlet, 3);
  EXPECT_EQ(a.pdu->delay_s, 1.5);
  EXPECT_EQ(a.pdu->ssh_wait_s, 120);
  EXPECT_EQ(a.power_attempts_per_day, 2);
  EXPECT_TRUE(a.recover_tcm_locks);
  const auto& b = *farm.find("b");
  EXPECT_EQ(b.pdu->daemon, "http://pdu2:80");
  EXPECT_EQ(b.pdu->name, "lab");
  EXPECT_EQ(b.pdu->outlet, 0);
  EXPECT_EQ(b.pdu->ssh_wait_s, 30);
  EXPECT_EQ(b.power_attempts_per_day, 5);
  EXPECT_FALSE(b.recover_tcm_locks);
  EXPECT_EQ(k3farm::pdu_reboot_url(*b.pdu),
            "http://pdu2:80/power/control/reboot?hostname=lab&port=0&delay=5");

  const std::string head =
      "[farm]\nknown_hosts = \"kh\"\n[defaults]\nidentity = \"id\"\nwork_dir = \"/w\"\n"
      "[boards.x]\nhost = \"h\"\n";
  const std::string f = tmp / "farm.toml";
  const std::string good = "daemon = \"http://p:1\", name = \"lab\"";
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { daemon = \"ftp://p\", name = \"l\", outlet = 1 }"),
            f + ":8: boards.x.pdu.daemon: expected pdudaemon's listener as http://host:port");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { " + good + ", outlet = \"3\" }"),
            f + ":8: boards.x.pdu.outlet: expected an integer in [0, 9999]");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { " + good + ", outlet = 1, volts = 5 }"),
            f + ":8: boards.x.pdu.volts: unknown key (known: daemon, name, outlet, delay_s, "
                "ssh_wait_s)");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { " + good + ", outlet = 1, delay_s = -1 }"),
            f + ":8: boards.x.pdu.delay_s: expected seconds in [0, 600]");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { name = \"a b\", outlet = 1 }"),
            f + ":8: boards.x.pdu.name: expected the PDU's name in pdudaemon's configuration "
                "(letters, digits, '_.:-')");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { daemon = \"http://p:1\", outlet = 1 }"),
            f + ":6: boards.x.pdu.name: missing (the PDU's name in pdudaemon)");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = { " + good + " }"),
            f + ":6: boards.x.pdu.outlet: missing (the board's port on the PDU)");
  EXPECT_EQ(inventory_error(tmp, head + "pdu = 3"), f + ":8: boards.x.pdu: expected a table");
  EXPECT_EQ(inventory_error(tmp, head + "power_attempts_per_day = -1"),
            f + ":8: boards.x.power_attempts_per_day: expected an integer in [0, 24]");
  EXPECT_EQ(inventory_error(tmp, head + "recover_tcm_locks = \"yes\""),
            f + ":8: boards.x.recover_tcm_locks: expected true or false");
}

TEST(FarmPowerStore, EventsAreTypedAndOnlyStateEventsDecideTheState) {
  TempDir tmp;
  auto db = k3store::open_database(tmp / "r.db", k3store::OpenMode::kCreateOrUpdate);
  const auto add = [&](const std::string& board, const std::string& at, BoardEvent e) {
    k3store::insert_board_event(*db, {"lab", board, "2026-12-06T10:00:00." + at + "Z", e,
                                      "unreachable", k3store::to_string(e), "run", "h:1"});
  };
  add("b1", "000001", BoardEvent::kQuarantined);
  add("b1", "000002", BoardEvent::kPowerRequested);
  add("b1", "000003", BoardEvent::kPowerDone);
  add("b1", "000004", BoardEvent::kCameBack);
  add("b1", "000005", BoardEvent::kHealthy);
  add("b1", "000006", BoardEvent::kRecovered);
  add("b2", "000001", BoardEvent::kQuarantined);
  add("b2", "000002", BoardEvent::kPowerRequested);
  add("b2", "000003", BoardEvent::kNotBack);
  add("b2", "000004", BoardEvent::kGivenUp);
  add("b2", "000005", BoardEvent::kPowerRequested);  // a step after the state: not the state
  const auto states = k3store::board_states(*db, "lab");
  EXPECT_EQ(states.at("b1").event, BoardEvent::kRecovered);
  EXPECT_FALSE(states.at("b1").quarantined());
  EXPECT_EQ(states.at("b2").event, BoardEvent::kGivenUp);
  EXPECT_TRUE(states.at("b2").quarantined());
  const auto events = k3store::board_events(*db, "lab", "2026-12-06T10:00:00.000002Z");
  ASSERT_EQ(events.size(), 9u);  // b1: 5 from ...02 on, b2: 4
  EXPECT_EQ(events.front().board, "b1");
  EXPECT_EQ(events.front().event, BoardEvent::kPowerRequested);
  EXPECT_EQ(events.back().event, BoardEvent::kPowerRequested);
  EXPECT_EQ(k3store::power_requests_since(*db, "lab", "b2", "2026-12-06T00:00:00.000000Z"), 2);
  EXPECT_EQ(k3store::power_requests_since(*db, "lab", "b2", "2026-12-06T10:00:00.000003Z"), 1);
  for (auto e : {BoardEvent::kNotBack, BoardEvent::kUnhealthy, BoardEvent::kGivenUp})
    EXPECT_EQ(k3store::board_event_from_string(k3store::to_string(e)), e);
  EXPECT_THROW(k3store::board_event_from_string("exploded"), k3store::StoreError);
  EXPECT_THROW(db->exec("INSERT INTO farm_board_events VALUES ('lab', 'b1', 'x', 'exploded', "
                        "NULL, 'r', NULL, 'h:1')"),
               k3store::StoreError);
}

std::int64_t count_in(const std::string& db, const std::string& sql) {
  return k3store::open_database(db, k3store::OpenMode::kReadOnly)->scalar_int(sql);
}

std::vector<std::string> events_of(const std::string& db, const std::string& board) {
  std::vector<std::string> out;
  auto c = k3store::open_database(db, k3store::OpenMode::kReadOnly);
  for (const auto& e : k3store::board_events(*c, "loopback"))
    if (e.board == board) out.push_back(k3store::to_string(e.event));
  return out;
}

// Two loopback sshd boards running the host k3bench (no emulator, no riscv64 tree needed).
class FarmSshPower : public ::testing::Test {
 protected:
  void SetUp() override {
    lab_ = std::make_unique<k3farm_test::LoopbackFarm>(2);
    farm_file_ = lab_->write_farm(K3BENCH_PATH);
  }
  std::string db() const { return lab_->dir() / "results.db"; }
  struct Cmd {
    int code = -1;
    std::string out, err;
  };
  Cmd run_k3tune(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db()};
    argv.insert(argv.end(), args.begin(), args.end());
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(300));
    return {r.signal ? 128 + r.signal : r.exit_code, r.out, r.err};
  }
  std::unique_ptr<k3farm_test::LoopbackFarm> lab_;
  std::string farm_file_;
};

TEST_F(FarmSshPower, KilledBoardIsPowerCycledBackIntoTheRunAndADeadOneIsGivenUp) {
  ASSERT_TRUE(fs::exists("/usr/sbin/pdudaemon")) << "pdudaemon missing (scripts/setup.sh)";
  const auto& dir = lab_->dir();
  k3farm_test::PduDaemon pdu(dir);
  // Both boards run the host k3bench over their loopback sshd (no emulator: quick cells).
  std::string farm = read_file(farm_file_);
  farm = k3farm_test::with_outlet(farm, "b1", pdu, 30, "exec_prefix = []\n");
  farm = k3farm_test::with_outlet(farm, "b2", pdu, 1, "exec_prefix = []\n");
  write_file(farm_file_, farm);
  // b2 is dead before the run and stays so: its outlet's "on" starts nothing.
  write_file(dir / "dead-b2", "");
  lab_->sshd(2).kill_all();
  fs::remove(dir / "sshd-b2/sshd.pid");  // the outlet's "off" must not kill a reused pid

  Cmd result{};
  std::thread sweep([&] {
    result = run_k3tune(k3farm_test::tiny_farm_sweep_args(
        farm_file_, {"--shape", "n=96,k=256", "--shape", "n=128,k=256", "--shape", "n=64,k=128",
                     "--shape", "n=32,k=128", "--shape", "n=64,k=256", "--min-time", "0.3"}));
  });
  // b1 dies (its sshd and everything it started) once it has measured a cell.
  const auto measured_on_b1 = [&] {
    return count_in(db(),
                    "SELECT count(*) FROM farm_sweep_cells WHERE board = 'b1' AND outcome = "
                    "'measured'");
  };
  std::int64_t before_kill = 0;
  for (int i = 0; i < 1200 && before_kill == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      before_kill = measured_on_b1();
    } catch (const std::exception&) {  // the database is not there yet
    }
  }
  lab_->sshd(1).kill_all();
  fs::remove(dir / "sshd-b1/sshd.pid");
  sweep.join();
  ASSERT_GT(before_kill, 0) << result.err;
  std::printf("b1 killed after %lld measured cells\n%s", static_cast<long long>(before_kill),
              result.err.c_str());

  const auto j = nlohmann::json::parse(result.out);
  // Nothing measured is lost: every cell measured, b1 measured again after its power cycle.
  EXPECT_EQ(j["total_cells"], 5) << result.out;
  EXPECT_EQ(j["measured_cells"], 5) << result.out;
  EXPECT_LT(before_kill, 5);
  EXPECT_EQ(measured_on_b1(), 5);  // the cells measured before the kill stay measured
  EXPECT_EQ(count_in(db(), "SELECT count(*) FROM farm_sweep_cells WHERE outcome = 'measured'"), 5);
  EXPECT_FALSE(j["quarantined"].contains("b1")) << j["quarantined"].dump();
  ASSERT_TRUE(j["quarantined"].contains("b2")) << j["quarantined"].dump();
  EXPECT_NE(j["quarantined"]["b2"]["reason"].get<std::string>().find(
                "given up after 2 power cycles today"),
            std::string::npos)
      << j["quarantined"].dump();

  EXPECT_EQ(events_of(db(), "b1"),
            (std::vector<std::string>{"quarantined", "power_requested", "power_done", "came_back",
                                      "healthy", "recovered"}));
  EXPECT_EQ(events_of(db(), "b2"),
            (std::vector<std::string>{"quarantined", "power_requested", "power_done", "not_back",
                                      "power_requested", "power_done", "not_back", "given_up"}));
  // pdudaemon switched each outlet off and on again (b2 twice).
  const std::string log = read_file(dir / "power.log");
  // (b2's cycles run beside b1's: the lines of the two outlets may interleave.)
  const auto off1 = log.find("off 1\n"), on1 = log.find("on 1\n");
  EXPECT_TRUE(off1 != std::string::npos && on1 != std::string::npos && off1 < on1) << log;
  EXPECT_EQ(count_in(db(),
                     "SELECT count(*) FROM farm_board_events WHERE board = 'b2' AND event = "
                     "'power_requested'"),
            2);

  // `farm list` shows the steps; the given-up board stays out of the next run without another
  // power cycle today.
  const auto list = run_k3tune({"farm", "list", "--farm", farm_file_});
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("came_back"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("QUARANTINED"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("given up after 2 power cycles today"), std::string::npos) << list.out;
  std::printf("%s", list.out.c_str());
  const auto again = run_k3tune(k3farm_test::tiny_farm_sweep_args(
      farm_file_, {"--shape", "n=96,k=256", "--min-time", "0.05"}));
  const auto j2 = nlohmann::json::parse(again.out);
  EXPECT_EQ(j2["measured_cells"], 1) << again.out << again.err;
  EXPECT_EQ(count_in(db(),
                     "SELECT count(*) FROM farm_board_events WHERE board = 'b2' AND event = "
                     "'power_requested'"),
            2);
}

}  // namespace
