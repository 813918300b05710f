// k3tune count end to end: the riscv64 runners of build/rvv and build/ime2-emu under qemu-user with
// the counting plugin, at small shapes. Checks the IME2 counts against what the shapes imply (2
// vmadotu per 8-row weight slice and block in decode, 4 per 8x8 tile and block in prefill), the
// fall-back below VLEN 1024, per-unit figures against the shapes, determinism, the stored rows
// (run, cells with the metric, processes, aggregates) and that bad input stores nothing.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "count_cli_fixture.h"
#include "harness/host/bench/child_output.h"
#include "harness/host/bench/instruction_count.h"
#include "harness/host/store/database.h"
#include "harness/host/targets/process.h"

namespace {

namespace fs = std::filesystem;

struct CountCli : CountCliFixture {
  CountCli() : CountCliFixture("k3count-", 600) {}
  std::vector<std::string> count_args(std::vector<std::string> cases,
                                      const std::string& vlens) const {
    std::vector<std::string> a = {"--json",   "count",
                                  "--runner", std::string("rvv=") + K3_COUNT_RVV_RUNNER,
                                  "--runner", std::string("ime2=") + K3_COUNT_IME2_RUNNER,
                                  "--vlens",  vlens,
                                  "--plugin", K3_COUNT_PLUGIN};
    for (auto& c : cases) a.insert(a.end(), {"--case", c});
    return a;
  }
};

// Two different binaries (the RVV and the IME2 emulation build) run the same RVV kernels where
// the IME2 gate refuses, but their own code around the kernel call differs a little.
constexpr double kBetweenBinaries = 1000;

std::int64_t scalar(k3store::Connection& c, const std::string& sql) {
  auto s = c.prepare(sql);
  return s.step() ? s.integer(0) : -1;
}

TEST_F(CountCli, CountsStoresAndMatchesTheShapes) {
  const auto r =
      k3tune(count_args({"linear_decode n=64,k=128", "linear_prefill m=8,n=32,k=64"}, "256,1024"));
  ASSERT_TRUE(r.ok()) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 8u);  // 2 runners x 2 cases x 2 VLENs
  EXPECT_EQ(k3bench::child_output_problems(K3TUNE_ROOT, k3bench::ChildOutput::kCount, rows),
            std::vector<std::string>{});
  std::map<std::string, double> total;
  for (const auto& row : rows) {
    const std::string op = row["op"], path = row["path"], ran = row["ran"];
    const int vlen = row["vlen"];
    const double units = op == "linear_decode" ? 64.0 * 128 : 8.0 * 32 * 64;
    EXPECT_EQ(row["units_per_call"].get<double>(), units);
    EXPECT_GT(row["other_per_call"].get<double>(), 0);
    EXPECT_DOUBLE_EQ(row["per_unit"].get<double>(),
                     row["instructions_per_call"].get<double>() / units);
    // The kernels allocate nothing per call: a call that did would count differently with the
    // heap's layout (where the runner's path lies, what start-up allocated).
    EXPECT_EQ(row["allocations_per_call"], 0) << row.dump();
    if (path == "ime2" && vlen == 1024) {
      EXPECT_EQ(ran, "ime2(emu)");
      // decode: 2 row tiles x 4 slices x 2 blocks x 2; prefill: 1 group x 1 tile x 4 slices x 1
      // block x 4.
      EXPECT_EQ(row["ime2_per_call"].get<double>(), op == "linear_decode" ? 32 : 16) << op;
      // The software model does 8 x 8 x 32 multiply-adds per instruction, each at least one
      // instruction: had the count not skipped it, other would exceed 2048 per IME2 instruction.
      EXPECT_LT(row["other_per_call"].get<double>(), 2048 * row["ime2_per_call"].get<double>())
          << op;
    } else {
      EXPECT_EQ(ran, "rvv") << path << " at VLEN " << vlen;  // the IME2 gate needs vlenb 128
      EXPECT_EQ(row["ime2_per_call"].get<double>(), 0);
    }
    total[path + " " + op + " " + std::to_string(vlen)] = row["instructions_per_call"];
  }
  // Both binaries run the same RVV kernels where IME2 is refused.
  EXPECT_NEAR(total["rvv linear_decode 256"], total["ime2 linear_decode 256"], kBetweenBinaries);

  auto c = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
  EXPECT_EQ(
      scalar(*c,
             "SELECT count(*) FROM runs WHERE command = 'k3tune count' AND status = 'finished'"),
      2);
  EXPECT_EQ(scalar(*c,
                   "SELECT count(*) FROM cells WHERE json_extract(measure_json, '$.metric') = "
                   "'instructions per call'"),
            8);
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM processes WHERE status = 'ok'"), 8);
  EXPECT_EQ(scalar(*c, "SELECT count(*) FROM samples"), 8);
  auto s = c->prepare(
      "SELECT c.op, c.target, json_extract(c.params_json, '$.path'), a.mean_ns FROM aggregates a "
      "JOIN cells c USING (cell_key) WHERE a.status = 'ok'");
  int stored = 0;
  while (s.step()) {
    const std::string key =
        s.text(2) + " " + s.text(0) + " " + s.text(1).substr(9);  // target qemu-vlen<V>
    EXPECT_EQ(s.real(3), total.at(key)) << key;
    ++stored;
  }
  EXPECT_EQ(stored, 8);
  c.reset();
  const auto check = k3tune({"db", "check"});
  EXPECT_TRUE(check.ok()) << check.out << check.err;

  // Repeatable: the same case counts exactly the same again (a new run), IME2 split included.
  const auto again = k3tune(count_args({"linear_decode n=64,k=128"}, "1024"));
  ASSERT_TRUE(again.ok()) << again.err;
  for (const auto& row : nlohmann::json::parse(again.out)) {
    EXPECT_EQ(row["instructions_per_call"].get<double>(),
              total.at(row["path"].get<std::string>() + " linear_decode 1024"))
        << row.dump();
    EXPECT_EQ(row["jitter"].get<double>(), 0) << row.dump();
  }
}

// Counts are judged by the exact rule: the same build counted in two runs is identical -- the
// second from a copy of the runner at a longer path, with a larger environment, as a later
// nightly differs from an earlier one -- to the instruction, with a measured jitter of 0 (stored
// as the figure's interval); planted extra work per call (the runner's K3BENCH_EXTRA_WORK_SPINS:
// a fixed number of loop steps, so a fixed number of instructions) is more instructions, a
// regression with its delta, and compare exits 4. The case allocates per call (attention), where
// the heap's layout used to move the count from one run to the next.
TEST_F(CountCli, TwoCountRunsAreComparedByTheExactRuleWithTheMeasuredJitter) {
  const fs::path elsewhere = dir / "a-longer-directory-name-than-the-build-tree-has" / "k3bench";
  fs::create_directories(elsewhere.parent_path());
  fs::copy_file(K3_COUNT_RVV_RUNNER, elsewhere);
  auto count_rvv = [&](const std::vector<std::string>& env,
                       const std::string& runner = K3_COUNT_RVV_RUNNER) {
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.insert(argv.end(),
                {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "--json", "count", "--runner",
                 "rvv=" + runner, "--vlens", "256", "--plugin", K3_COUNT_PLUGIN, "--case",
                 "attn_prefill seq=8,q_heads=4,kv_heads=2,head_dim=64"});
    const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(600));
    EXPECT_TRUE(r.ok()) << r.err;
    return nlohmann::json::parse(r.out).at(0);
  };
  auto latest_run = [&] {
    auto c = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    auto s = c->prepare("SELECT run_uuid FROM runs ORDER BY rowid DESC LIMIT 1");
    return s.step() ? s.text(0) : std::string();
  };
  const auto first = count_rvv({});
  const std::string run_a = latest_run();
  const auto second = count_rvv({"K3TEST_PADDING=" + std::string(300, 'x')}, elsewhere.string());
  const std::string run_b = latest_run();
  // The jitter is measured (a second process with a larger environment, from a longer path) and is
  // the stored figure's interval: nothing moves the marked calls' count, as the kernels allocate
  // nothing per call.
  for (const auto& row : {first, second}) {
    EXPECT_EQ(row["jitter"].get<double>(), 0) << row.dump();
    EXPECT_EQ(row["allocations_per_call"], 0) << row.dump();
  }
  EXPECT_EQ(first["instructions_per_call"].get<double>(),
            second["instructions_per_call"].get<double>());
  {
    auto c = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    auto s = c->prepare(
        "SELECT a.mean_ns, a.ci_low_ns, a.ci_high_ns FROM aggregates a WHERE a.run_uuid = ?1");
    s.bind(1, run_a);
    ASSERT_TRUE(s.step());
    EXPECT_DOUBLE_EQ(s.real(0), first["instructions_per_call"].get<double>());
    EXPECT_DOUBLE_EQ(s.real(2) - s.real(0), first["jitter"].get<double>());
    EXPECT_DOUBLE_EQ(s.real(0) - s.real(1), first["jitter"].get<double>());
  }
  const auto same = k3tune({"compare", run_a, run_b});
  EXPECT_EQ(same.exit_code, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("### Identical"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("1 identical"), std::string::npos) << same.out;
  // Planted work: 50,000 busy-loop steps after every call, a few hundred thousand instructions. Not
  // a calibrated time (K3BENCH_EXTRA_WORK_NS): its calibration under qemu on a loaded machine
  // varied the count by more than the work.
  const auto planted = count_rvv({"K3BENCH_EXTRA_WORK_SPINS=50000"});
  const std::string run_c = latest_run();
  const double delta =
      planted["instructions_per_call"].get<double>() - first["instructions_per_call"].get<double>();
  EXPECT_GE(delta, 50000) << "at least one instruction per busy-loop step";
  const auto more = k3tune({"--json", "compare", run_a, run_c});
  EXPECT_EQ(more.exit_code, 4) << more.out << more.err;
  const auto v = nlohmann::json::parse(more.out);
  const auto& cell = v.at("cells").at(0);
  EXPECT_EQ(cell["timing"]["outcome"], "regression") << cell.dump();
  EXPECT_DOUBLE_EQ(cell["timing"]["exact"]["delta_instructions"].get<double>(), delta);
  EXPECT_EQ(v.at("method"), "exact-counts");
}

// Ops without a workers parameter (quant_pack_decode) are counted too, per element.
TEST_F(CountCli, CountsOpsWithoutWorkersPerElement) {
  const auto r = k3tune({"--json", "count", "--runner", std::string("rvv=") + K3_COUNT_RVV_RUNNER,
                         "--vlens", "256", "--plugin", K3_COUNT_PLUGIN, "--case",
                         "quant_pack_decode k=2048", "--case", "quant_pack_prefill m=8,k=256"});
  ASSERT_TRUE(r.ok()) << r.err;
  const auto rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& row : rows) {
    const double units = row["op"] == "quant_pack_decode" ? 2048 : 8 * 256;
    EXPECT_EQ(row["units_per_call"].get<double>(), units) << row.dump();
    EXPECT_GT(row["other_per_call"].get<double>(), units / 64) << row.dump();  // >= 1 per block
    EXPECT_EQ(row["allocations_per_call"], 0) << row.dump();
    EXPECT_DOUBLE_EQ(row["per_unit"].get<double>(),
                     row["instructions_per_call"].get<double>() / units);
  }
  // Its report shows instruction counts (whole numbers, "insns"), not microseconds or rates.
  const auto report = k3tune({"report", "-o", (dir / "report").string()});
  ASSERT_TRUE(report.ok()) << report.out << report.err;
  const std::string md = report.out;
  EXPECT_NE(md.find("mean insns"), std::string::npos) << md;
  EXPECT_EQ(md.find("mean us"), std::string::npos) << md;
  for (const auto& row : rows) {
    const std::string count = fmt::format(" {:.0f} ", row["instructions_per_call"].get<double>());
    EXPECT_NE(md.find(count), std::string::npos) << count << " not in\n" << md;
  }
  const auto json = nlohmann::json::parse(std::ifstream(dir / "report" / "report.json"));
  EXPECT_EQ(json["run"]["per_call_unit"], "instructions") << json["run"].dump();
  for (const auto& cell : json["run"]["cells"]) EXPECT_FALSE(cell.contains("gbps")) << cell.dump();
}

// The within-process design of the statistics self-check (k3bench --extra-work-sides abba): the
// repetitions alternate A B B A, and B's calls alone run the extra work -- exactly its steps' worth
// of instructions more than A's calls, counted per call from the runner's marks (one timed call
// per repetition).
TEST_F(CountCli, AlternatingExtraWorkIsSideBsAloneToTheInstruction) {
  const std::string out = (dir / "plugin.txt").string();
  const auto r = k3targets::run_process(
      counted_rvv_process(
          {"K3BENCH_COUNT_MARKS=1", "K3BENCH_SCHEDULING=off",
           "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4096"},
          out,
          {"--op", "linear_decode", "--shape", "n=64,k=128", "--params", "workers=1,copies=1",
           "--reps", "4", "--warmup", "0", "--iterations", "1", "--check", "none",
           "--extra-work-spins", "1000", "--extra-work-sides", "abba", "--json"}),
      k3targets::ProcessOptions::with_timeout(600));
  ASSERT_TRUE(r.ok()) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  std::map<int, double> insns;  // region -> instructions
  std::ifstream f(out);
  for (std::string line; std::getline(f, line);) {
    int region = 0;
    double n = 0;
    if (std::sscanf(line.c_str(), "region=%d insns=%lf", &region, &n) == 2) insns[region] = n;
  }
  std::vector<double> a, b;
  int timed = 0;
  for (const auto& call : j["count_marks"]["calls"]) {
    if (!call["timed"].get<bool>()) continue;
    const char side = j["repetitions"][timed++]["side"].get<std::string>()[0];
    (side == 'B' ? b : a).push_back(insns.at(call["region"].get<int>()));
  }
  ASSERT_EQ(timed, 4);
  ASSERT_EQ(a.size(), 2u);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(a[0], a[1]);
  EXPECT_EQ(b[0], b[1]);
  EXPECT_GE(b[0] - a[0], 1000) << "at least one instruction per step";
  EXPECT_LE(b[0] - a[0], 10 * 1000) << "a few per step, nothing else";
}

// The processes whose parent is `pid` (from /proc), and whether a process still runs (a zombie
// that nobody reaped has ended).
std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(f)), {});
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == pid) out.push_back(std::stoi(name));
  }
  return out;
}
bool running(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), {});
  const auto close = stat.rfind(')');
  return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] != 'Z';
}

// A count ended by SIGTERM or by Ctrl-C (SIGINT, which the terminal sends to k3tune's group
// only: the qemu processes run in groups of their own) ends its qemu processes too, and ends by
// the signal itself.
TEST_F(CountCli, ATerminatedCountEndsItsQemuProcesses) {
  // k3tune inherits what this process does with SIGINT: a test started in the background by a
  // shell ignores it, and an ignored signal stays ignored by design.
  struct sigaction default_action {
  }, before{};
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGINT, &default_action, &before);
  for (const int sig : {SIGTERM, SIGINT}) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    const pid_t k3 = k3targets::spawn_in_group(
        {K3TUNE_PATH, "--root", K3TUNE_ROOT, "--db", db(), "count", "--runner",
         std::string("rvv=") + K3_COUNT_RVV_RUNNER, "--vlens", "256,1024", "--plugin",
         K3_COUNT_PLUGIN, "--jobs", "2", "--case", "linear_decode n=2048,k=2048", "--case",
         "linear_prefill m=16,n=512,k=512"},
        -1, devnull, devnull);
    ::close(devnull);
    ASSERT_GT(k3, 0);
    std::vector<pid_t> qemu;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (qemu.empty() && std::chrono::steady_clock::now() < deadline) {
      for (pid_t c : children_of(k3)) {
        std::ifstream comm("/proc/" + std::to_string(c) + "/comm");
        std::string name;
        std::getline(comm, name);
        if (name.rfind("qemu-riscv64", 0) == 0) qemu.push_back(c);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(qemu.empty()) << "no qemu process started within 120 s";
    const std::vector<pid_t> started = children_of(k3);
    ASSERT_EQ(::kill(k3, sig), 0);  // the process, not its group
    int status = 0;
    ASSERT_EQ(::waitpid(k3, &status, 0), k3);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (pid_t c : started)
      EXPECT_FALSE(running(c)) << "child " << c << " left after signal " << sig;
  }
  sigaction(SIGINT, &before, nullptr);
}

// An independent check of the kernels' byte accounting: qemu-user reports every access of the
// counted instructions to the plugin (mem=on), RVV loads one per element. A decode call loads its
// packed weights and their pairs (traffic.by_source.streamed) at least once and at most once more
// than the activation codes it re-reads per row strip: the weights are read exactly once.
TEST_F(CountCli, QemuSeesTheDecodeWeightsLoadedExactlyOnce) {
  k3bench::CountTools tools;
  tools.plugin = std::string(K3_COUNT_PLUGIN) + ",mem=on";
  const k3bench::CountedProcess p = k3bench::count_process(
      tools, k3bench::qemu_cpu(1024), K3_COUNT_RVV_RUNNER,
      {"--op", "linear_decode", "--shape", "n=512,k=1024", "--params", "workers=1", "--path", "rvv",
       "--reps", "1", "--warmup", "0", "--iterations", "3", "--check", "none", "--json"},
      {{"K3BENCH_COUNT_MARKS", "1"}, {"K3BENCH_SCHEDULING", "off"}, {"K3BENCH_CACHE_DIR", "off"}});
  ASSERT_TRUE(p.ok) << p.reason << p.process.err;
  const auto& traffic = p.json.at("traffic").at("by_source");
  const double streamed = traffic.at("streamed").get<double>();
  const double activations = traffic.at("activations").get<double>();
  EXPECT_EQ(streamed, 512.0 * 1024 / 2 + 512.0 * 1024 / 64 * 4);  // codes + fp16 pairs
  int calls = 0;
  for (const auto& call : p.json.at("count_marks").at("calls")) {
    if (!call.value("timed", false)) continue;
    const auto& r = p.regions.at(call.at("region").get<int>());
    ASSERT_GE(r.vector_load_bytes, 0) << "the plugin reported no memory (mem=on)";
    EXPECT_GE(r.vector_load_bytes, streamed);
    EXPECT_LT(r.vector_load_bytes, streamed + 16 * activations) << "weights read twice?";
    EXPECT_LE(r.vector_load_bytes, r.load_bytes);
    EXPECT_GT(r.vector_store_bytes, 0);  // the 512 outputs
    ++calls;
  }
  EXPECT_EQ(calls, 3);
}

TEST_F(CountCli, BadInputStoresNothing) {
  const auto r =
      k3tune({"count", "--runner", "rvv=/nonexistent/k3bench", "--plugin", K3_COUNT_PLUGIN});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--runner"), std::string::npos) << r.err;
  const auto bad_case =
      k3tune({"count", "--case", "linear_decode", "--runner",
              std::string("rvv=") + K3_COUNT_RVV_RUNNER, "--plugin", K3_COUNT_PLUGIN});
  EXPECT_EQ(bad_case.exit_code, 2);
  EXPECT_NE(bad_case.err.find("--case"), std::string::npos) << bad_case.err;
  const auto unknown_op =
      k3tune({"count", "--case", "no_such_op k=64", "--vlens", "256", "--runner",
              std::string("rvv=") + K3_COUNT_RVV_RUNNER, "--plugin", K3_COUNT_PLUGIN});
  EXPECT_EQ(unknown_op.exit_code, 2);
  EXPECT_NE(unknown_op.err.find("no_such_op"), std::string::npos) << unknown_op.err;
  const auto host = k3tune({"count", "--variant", "host", "--plugin", K3_COUNT_PLUGIN});
  EXPECT_EQ(host.exit_code, 2);
  EXPECT_EQ(host.err,
            "k3tune: --variant: preset 'host' is not a riscv64 tree that counts "
            "(CMakePresets.json gives it no count_path)\n");
  const auto unknown = k3tune({"count", "--variant", "nope", "--plugin", K3_COUNT_PLUGIN});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("k3tune: --variant: "), std::string::npos) << unknown.err;
  EXPECT_NE(unknown.err.find("nope"), std::string::npos) << unknown.err;
  if (fs::exists(db())) {
    auto c = k3store::open_database(db(), k3store::OpenMode::kReadOnly);
    EXPECT_EQ(scalar(*c, "SELECT count(*) FROM runs"), 0);
  }
}

}  // namespace
