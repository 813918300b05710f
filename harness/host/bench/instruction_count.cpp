#include "harness/host/bench/instruction_count.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/host/bench/catalog.h"
#include "harness/host/bench/provenance.h"
#include "harness/host/bench/sweep.h"
#include "harness/host/bench/user_error.h"
#include "harness/host/store/results.h"
#include "harness/host/targets/process.h"

namespace k3bench {

namespace {

constexpr int kFewCalls = 1, kMoreCalls = kMarkedTimedCalls;
// Identical 1-call processes whose range is a case's jitter. Five, not three: with twice the
// larger jitter as the tolerance, simulated normal per-process variation calls an unchanged case
// changed 0.58% of the time with three, 0.02% with five (a nightly counts 16 cases).
constexpr int kJitterProcesses = 5;
constexpr const char* kMetric = "instructions per call";
// The environment variable that makes the second marked process's environment larger.
constexpr std::size_t kPaddingBytes = 200;
constexpr const char* kMarkedMethod =
    "instruction count: the timed calls after the first of one qemu-user process (3 timed calls "
    "after a warm-up call), each marked by the runner and counted apart from start-up, set-up and "
    "output; malloc's mmap threshold fixed; interval: +- the difference from a second process "
    "with a larger environment, started from a longer path (0: the figure is exact)";

// [begin, end) of the emulation's model code in `runner`, or "" when the binary has none.
std::string model_range(const CountTools& tools, const std::string& runner) {
  const auto r =
      k3targets::run_process({tools.nm, runner}, k3targets::ProcessOptions::with_timeout(120));
  if (!r.ok()) throw UserError(fmt::format("{} {}: {}", tools.nm, runner, r.failure_reason(120)));
  std::string begin, end;
  std::istringstream in(r.out);
  for (std::string line;
       std::getline(in, line);) {  // "<addr> <type> <name>"; undefined ones lack <addr>
    std::istringstream fields(line);
    std::string addr, type, name;
    if (!(fields >> addr >> type >> name)) continue;
    if (name == "__start_k3_ime2_model") begin = addr;
    if (name == "__stop_k3_ime2_model") end = addr;
  }
  return begin.empty() || end.empty() ? "" : "0x" + begin + "-0x" + end;
}

// model_range once per runner path (a process counts many cells with one binary).
const std::string& cached_model_range(const CountTools& tools, const std::string& runner) {
  static std::mutex mu;
  static std::map<std::string, std::string> ranges;
  std::lock_guard lock(mu);
  auto it = ranges.find(runner);
  if (it == ranges.end()) it = ranges.emplace(runner, model_range(tools, runner)).first;
  return it->second;
}

double number(const std::string& text, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("(^| )" + key + "=([0-9]+)"))) return -1;
  return std::stod(m[2]);
}

// --params for a count: one worker and one weight copy, for the ops that declare them (read from
// the runner's catalog, once per runner).
std::string count_params(const CountTools& tools, const CountCase& c) {
  static std::mutex mu;  // cases are counted in parallel
  static std::map<std::string, Catalog> catalogs;
  std::lock_guard lock(mu);
  auto it = catalogs.find(c.runner);
  if (it == catalogs.end()) {
    const std::vector<std::string> list = {"--list-ops", "--json"};
    const auto r = c.target != nullptr
                       ? c.target->run(list, k3targets::ProcessOptions::with_timeout(120))
                       : k3targets::run_process(
                             {tools.qemu, "-cpu", qemu_cpu(c.vlen), c.runner, list[0], list[1]},
                             k3targets::ProcessOptions::with_timeout(120));
    if (!r.ok()) {
      throw UserError(fmt::format("count: {} --list-ops: {}", c.runner, r.failure_reason(120)));
    }
    try {
      it = catalogs.emplace(c.runner, Catalog(nlohmann::json::parse(r.out))).first;
    } catch (const nlohmann::json::exception& e) {
      throw UserError(
          fmt::format("count: {} --list-ops: unreadable JSON ({})", c.runner, e.what()));
    }
  }
  const OpSpec& op = it->second.op(c.op, "count --case");
  std::string params;
  if (op.param("workers") != nullptr) params = "workers=1";
  if (op.param("copies") != nullptr) params += std::string(params.empty() ? "" : ",") + "copies=1";
  return params;
}

// A symbolic link to a runner in a new directory whose name is longer than any checkout's path
// part, removed with this object.
class RunnerLink {
 public:
  explicit RunnerLink(const std::string& runner) {
    std::string dir = (std::filesystem::temp_directory_path() /
                       "k3tune-count-the-same-runner-from-a-longer-path-XXXXXX")
                          .string();
    if (::mkdtemp(dir.data()) == nullptr)
      throw UserError(fmt::format("count: cannot create a directory in {}",
                                  std::filesystem::temp_directory_path().string()));
    dir_ = dir;
    std::filesystem::create_symlink(std::filesystem::absolute(runner), dir_ / "k3bench");
  }
  ~RunnerLink() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  RunnerLink(const RunnerLink&) = delete;
  RunnerLink& operator=(const RunnerLink&) = delete;
  std::string path() const { return (dir_ / "k3bench").string(); }

 private:
  std::filesystem::path dir_;
};

// `exec_as`: the path the runner is started from, when not c.runner (a link to it).
CountedProcess run_once(const CountTools& tools, const CountCase& c, int calls,
                        const std::map<std::string, std::string>& extra_env = {},
                        const std::string& exec_as = "") {
  std::vector<std::string> args = {"--op", c.op, "--shape", c.shape};
  if (const std::string params = count_params(tools, c); !params.empty())
    args.insert(args.end(), {"--params", params});
  args.insert(args.end(), {"--path", c.path == "ime2" ? "auto" : c.path, "--reps", "1", "--warmup",
                           "0", "--iterations", std::to_string(calls), "--check", "none",
                           "--pool-wait", "park", "--json"});
  std::map<std::string, std::string> env = extra_env;
  env["K3_IME2_ASSUME_MARCHID"] = "0x8000000041000002";
  CountedProcess p = c.target != nullptr
                         ? count_process(tools, *c.target, args, env)
                         : count_process(tools, qemu_cpu(c.vlen), c.runner, args, env, exec_as);
  const std::string what = fmt::format("{} --op {} --shape {} --path {} at VLEN {}", c.runner, c.op,
                                       c.shape, c.path, c.vlen);
  if (!p.ok) throw UserError(fmt::format("count: {}: {}", what, p.reason));
  if (!p.json.is_object()) throw UserError(fmt::format("count: {}: unreadable k3bench JSON", what));
  return p;
}

// A marked process's figure per call (its runner marked every call: K3BENCH_COUNT_MARKS): the
// mean of the timed calls after the first, i.e. calls 3 and 4 of a 3-call process after its
// warm-up call -- exactly the calls (count(3) - count(1)) / 2 measures, without the untimed part.
// nullopt when the runner marked nothing (a runner older than op count marks).
struct PerCall {
  double ime2 = 0, other = 0, vector = 0;
  std::optional<double> allocations;  // the most of one call, where the runner counts them
  double total() const { return ime2 + other; }
};
std::optional<PerCall> marked_per_call(const CountedProcess& p, const std::string& what) {
  if (!p.json.is_object() || !p.json.contains("count_marks") || !p.json["count_marks"].is_object())
    return std::nullopt;
  std::vector<nlohmann::json> timed;
  for (const auto& call : p.json["count_marks"].value("calls", nlohmann::json::array()))
    if (call.value("timed", false)) timed.push_back(call);
  if (static_cast<int>(timed.size()) != kMoreCalls)
    throw UserError(fmt::format("count: {}: the runner marked {} timed calls, {} expected", what,
                                timed.size(), kMoreCalls));
  PerCall sum;
  for (std::size_t i = 1; i < timed.size(); ++i) {
    const int region = timed[i].value("region", -1);
    const auto it = p.regions.find(region);
    if (it == p.regions.end())
      throw UserError(
          fmt::format("count: {}: the counting plugin reported no region {} (rebuild it: bash "
                      "scripts/build-qemu-plugin.sh)",
                      what, region));
    sum.ime2 += timed[i].value("ime2_instructions", 0.0);
    sum.other += it->second.insns - timed[i].value("ime2_calls", 0.0);
    sum.vector += it->second.vector;
    if (timed[i].contains("allocations"))
      sum.allocations = std::max(sum.allocations.value_or(0), timed[i].value("allocations", 0.0));
  }
  const double calls = static_cast<double>(timed.size() - 1);
  return PerCall{sum.ime2 / calls, sum.other / calls, sum.vector / calls, sum.allocations};
}

}  // namespace

std::optional<double> marked_instructions_per_call(const CountedProcess& p,
                                                   const std::string& what) {
  const auto per_call = marked_per_call(p, what);
  return per_call ? std::optional<double>(per_call->total()) : std::nullopt;
}

std::string unit_of_work(const std::string& op) {
  if (op == "linear_decode") return "weight";
  if (op == "linear_prefill") return "multiply-add";
  if (op == "quant_pack_decode" || op == "quant_pack_prefill") return "element";
  if (op == "model_prefill" || op == "model_decode") return "token";
  return "";
}

double units_per_call(const std::string& op, const std::string& shape) {
  if (unit_of_work(op).empty()) return 0;
  double units = 1;
  std::smatch m;
  if (op == "model_decode") return 1;  // one step
  if (op == "model_prefill")
    return std::regex_search(shape, m, std::regex("(^|,)tokens=([0-9]+)")) ? std::stod(m[2]) : 0;
  for (const char* key : {"m", "n", "k"}) {
    if (std::regex_search(shape, m, std::regex(std::string("(^|,)") + key + "=([0-9]+)")))
      units *= std::stod(m[2]);
  }
  return units;
}

std::string qemu_cpu(int vlen) {
  return fmt::format("rv64,v=true,vlen={},elen=64,vext_spec=v1.0", vlen);
}

CountedProcess count_process(const CountTools& tools, const std::string& cpu,
                             const std::string& runner, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env,
                             const std::string& exec_as) {
  return count_process(tools, std::vector<std::string>{tools.qemu, "-cpu", cpu}, runner, args, env,
                       exec_as);
}

namespace {

// The plugin's figures from its output (`insns=N vector_insns=M ...`, the last such line: on a
// target the plugin writes to stderr after the runner's own lines) and the runner's JSON.
void read_counts(const std::string& plugin_text, const std::string& plugin, CountedProcess& p) {
  // The totals line starts with "insns="; region lines ("region=<id> insns=...") follow it when
  // the runner marked regions.
  std::string line;
  std::vector<std::string> region_lines;
  std::istringstream in(plugin_text);
  for (std::string l; std::getline(in, l);) {
    if (l.starts_with("insns=")) {
      line = l;
      region_lines.clear();  // a region list belongs to the totals line before it
    } else if (l.starts_with("region=")) {
      region_lines.push_back(l);
    }
  }
  const double insns = number(line, "insns");
  p.vector = number(line, "vector_insns");
  if (insns < 0 || p.vector < 0) {
    p.reason = fmt::format("the counting plugin {} wrote no count", plugin);
    return;
  }
  for (const auto& l : region_lines) {
    const double id = number(l, "region");
    if (id < 0) continue;
    p.regions[static_cast<int>(id)] = {
        std::max(0.0, number(l, "insns")), std::max(0.0, number(l, "vector_insns")),
        number(l, "load_bytes"),           number(l, "store_bytes"),
        number(l, "vector_load_bytes"),    number(l, "vector_store_bytes")};
  }
  p.json = nlohmann::json::parse(p.process.out, nullptr, false);
  double calls = 0;
  if (p.json.is_object()) {
    if (const auto& i = p.json.value("ime2_instructions", nlohmann::json()); i.is_object()) {
      p.ime2 = i.value("total", 0.0);
      calls = i.value("call_instructions", 0.0);
    }
  } else {
    p.json = nullptr;
  }
  p.other = insns - calls;
  p.ok = true;
}

// Counts of one case are differences between processes, so every process must do the same
// set-up. The runner's weight cache is used (generating and quantising the synthetic weights
// costs about 1,300 instructions per weight, 20 s of qemu at 2048 x 6144, every process, without
// it), and a process that filled it (a cold cache generates, packs and writes; a warm one reads)
// is run again: its count is not used. A cache that cannot be written fills nothing, so every
// process generates, which is the same set-up too.
CountedProcess counted_with_a_warm_weight_cache(const std::function<CountedProcess()>& run) {
  CountedProcess p = run();
  const bool filled = p.ok && p.json.is_object() && p.json.contains("timing") &&
                      p.json["timing"].value("cache_build_s", 0.0) > 0;
  return filled ? run() : p;
}

// What every counted runner process gets in its environment:
// - no scheduling readings around each repetition (/proc text of varying length);
// - every call of an op case marked as its own region (harness/runner/call_marks.h), so that a
//   count of the calls leaves out the untimed part, where processes differ; runners without the
//   feature ignore it;
// - allocations of 4 KiB and more mapped (a fixed mmap threshold): malloc's cost otherwise
//   depends on where earlier, data-dependent allocations left the heap (the runner's path, the
//   /proc text it read), and glibc moves its threshold as blocks are freed, so calls that
//   allocate counted differently from one run to the next (a few hundred instructions per
//   attention call).
const std::map<std::string, std::string>& counting_env() {
  static const std::map<std::string, std::string> env = {
      {"K3BENCH_SCHEDULING", "off"},
      {"K3BENCH_COUNT_MARKS", "1"},
      {"GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=4096"}};
  return env;
}

// The plugin argument: the model's code left out of the count when the runner has it.
std::string plugin_arg(const CountTools& tools, const std::string& runner) {
  std::string plugin = tools.plugin;
  if (const std::string& skip = cached_model_range(tools, runner); !skip.empty())
    plugin += ",skip=" + skip;
  return plugin;
}

}  // namespace

CountedProcess count_process(const CountTools& tools, const std::vector<std::string>& emulator,
                             const std::string& runner, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env,
                             const std::string& exec_as) {
  static std::atomic<int> serial{0};
  const std::string out =
      fmt::format("{}/k3tune-count-{}-{}.txt", std::filesystem::temp_directory_path().string(),
                  getpid(), serial++);
  const std::string plugin = plugin_arg(tools, runner) + ",outfile=" + out;
  std::vector<std::string> argv = {"env"};
  for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
  for (const auto& [k, v] : counting_env()) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), emulator.begin(), emulator.end());
  argv.insert(argv.end(), {"-plugin", plugin, exec_as.empty() ? runner : exec_as});
  argv.insert(argv.end(), args.begin(), args.end());
  return counted_with_a_warm_weight_cache([&] {
    CountedProcess p;
    p.process =
        k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(tools.timeout_s));
    std::ifstream f(out);
    const std::string text((std::istreambuf_iterator<char>(f)), {});
    std::filesystem::remove(out);
    if (!p.process.ok()) {
      p.reason = p.process.failure_reason(tools.timeout_s);
      return p;
    }
    read_counts(text, tools.plugin, p);
    return p;
  });
}

CountedProcess count_process(const CountTools& tools, const k3targets::Target& target,
                             const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env) {
  CountedProcess p;
  if (!target.emulated()) {
    p.reason =
        fmt::format("{} runs natively: instructions are counted under qemu-user", target.name());
    return p;
  }
  // The plugin writes to stderr (no file to fetch from a board); the runner binary of the target
  // on this machine is the deployed one (same build hash), so its model range holds there too.
  std::vector<std::string> emulator = target.emulator_prefix();
  emulator.insert(emulator.end(), {"-plugin", plugin_arg(tools, target.runner_path())});
  std::map<std::string, std::string> all = env;
  for (const auto& [k, v] : counting_env()) all[k] = v;
  return counted_with_a_warm_weight_cache([&] {
    CountedProcess q;
    q.process = target.run_emulated(emulator, all, args,
                                    k3targets::ProcessOptions::with_timeout(tools.timeout_s));
    if (const std::string why = target.lost(); !why.empty()) throw k3targets::TargetLost(why);
    if (!q.process.ok()) {
      q.reason = q.process.failure_reason(tools.timeout_s);
      return q;
    }
    read_counts(q.process.err, tools.plugin, q);
    return q;
  });
}

CountResult count_instructions(const CountTools& tools, const CountCase& c) {
  const std::string what = fmt::format("{} --op {} --shape {} --path {} at VLEN {}", c.runner, c.op,
                                       c.shape, c.path, c.vlen);
  const CountedProcess more = run_once(tools, c, kMoreCalls);
  if (const auto first = marked_per_call(more, what)) {
    // The same process again with a larger environment and, here, started from a longer path: the
    // stack and what start-up allocates move as they do between runs and between checkouts (a
    // later night's build); an exact figure does not move with them.
    const std::optional<RunnerLink> moved =
        c.target == nullptr ? std::optional<RunnerLink>(std::in_place, c.runner) : std::nullopt;
    const CountedProcess again =
        run_once(tools, c, kMoreCalls, {{"K3BENCH_COUNT_PADDING", std::string(kPaddingBytes, 'x')}},
                 moved ? moved->path() : "");
    const auto second = marked_per_call(again, what);
    if (!second)
      throw UserError(fmt::format("count: {}: the second process marked no calls", what));
    CountResult r;
    r.c = c;
    r.jitter = std::abs(first->total() - second->total());
    if (first->allocations || second->allocations)
      r.allocations = std::max(first->allocations.value_or(0), second->allocations.value_or(0));
    r.path_taken = more.json.at("dispatch").value("path", "");
    r.emulated = more.json.at("dispatch").value("emulated", false);
    r.ime2 = first->ime2;
    r.other = first->other;
    r.vector = first->vector;
    r.instructions = r.ime2 + r.other;
    r.units = units_per_call(c.op, c.shape);
    r.runner_json = more.json;
    r.wall_ns = more.process.wall_ns + again.process.wall_ns;
    r.calls = kMoreCalls - kFewCalls;
    r.method = kMarkedMethod;
    return r;
  }
  // A runner that does not mark its calls: the difference of processes, and their jitter.
  const CountedProcess few = run_once(tools, c, kFewCalls);
  // The 1-call process kJitterProcesses times in all: their range is this case's jitter.
  double low = few.total(), high = few.total();
  std::int64_t wall_ns = few.process.wall_ns + more.process.wall_ns;
  for (int i = 1; i < kJitterProcesses; ++i) {
    const CountedProcess again = run_once(tools, c, kFewCalls);
    low = std::min(low, again.total());
    high = std::max(high, again.total());
    wall_ns += again.process.wall_ns;
  }
  const double calls = kMoreCalls - kFewCalls;
  CountResult r;
  r.c = c;
  r.jitter = high - low;
  r.path_taken = more.json.at("dispatch").value("path", "");
  r.emulated = more.json.at("dispatch").value("emulated", false);
  r.ime2 = (more.ime2 - few.ime2) / calls;
  r.other = (more.other - few.other) / calls;
  r.vector = (more.vector - few.vector) / calls;
  r.instructions = r.ime2 + r.other;
  r.units = units_per_call(c.op, c.shape);
  r.runner_json = more.json;
  r.wall_ns = wall_ns;
  return r;
}

std::exception_ptr for_each_in_parallel(std::size_t n, int jobs,
                                        const std::function<void(std::size_t)>& fn) {
  std::mutex mu;
  std::size_t next = 0;
  std::exception_ptr failure;
  auto worker = [&] {
    for (;;) {
      std::size_t i;
      {
        std::lock_guard lock(mu);
        if (next == n || failure) return;
        i = next++;
      }
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, std::min<int>(jobs, static_cast<int>(n))); ++t)
    threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return failure;
}

std::vector<CountResult> count_cases(
    const CountTools& tools, const std::vector<CountCase>& cases, int jobs,
    const std::function<void(std::size_t, const CountResult&)>& done) {
  std::vector<std::optional<CountResult>> results(cases.size());
  std::mutex mu;
  std::size_t reported = 0;
  const std::exception_ptr failure = for_each_in_parallel(cases.size(), jobs, [&](std::size_t i) {
    CountResult r = count_instructions(tools, cases[i]);
    std::lock_guard lock(mu);
    results[i] = std::move(r);
    while (reported < results.size() && results[reported]) {
      if (done) done(reported, *results[reported]);
      ++reported;
    }
  });
  if (failure) std::rethrow_exception(failure);
  std::vector<CountResult> out;
  for (auto& r : results) out.push_back(std::move(*r));
  return out;
}

std::string store_counts(k3store::Connection& db, const std::string& command,
                         const std::vector<CountResult>& results) {
  if (results.empty()) throw UserError("count: nothing to store");
  const std::string runner = results.front().c.runner;
  const std::string build_hash = sha256_file(runner);
  if (!k3store::find_build(db, build_hash)) {
    k3store::BuildRecord b;
    b.build_hash = build_hash;
    b.variant = results.front().emulated ? "ime2-emu" : results.front().c.path;
    b.binary_path = runner;
    b.recorded_by = "k3tune count";
    k3store::upsert_build(db, b);
  }
  const std::string run_uuid = new_uuid();
  const nlohmann::json settings = {{"metric", kMetric},
                                   {"counter", "qemu-user TCG plugin scripts/qemu-insn-count"},
                                   {"calls", {kFewCalls, kMoreCalls}}};
  // The run's cells first: order_json lists them (reports and trends find a run's cells there).
  std::vector<k3store::CellRecord> cells;
  nlohmann::json order = nlohmann::json::array();
  for (const auto& r : results) {
    const nlohmann::json shape = [&] {
      nlohmann::json j = nlohmann::json::object();
      std::istringstream in(r.c.shape);
      for (std::string kv; std::getline(in, kv, ',');) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        const std::string v = kv.substr(eq + 1);
        const bool number = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        j[kv.substr(0, eq)] = number ? nlohmann::json(std::stoll(v)) : nlohmann::json(v);
      }
      return j;
    }();
    const nlohmann::json params = {{"path", r.c.path}, {"workers", 1}};
    const nlohmann::json measure = {{"metric", kMetric},
                                    {"repetitions", 1},
                                    {"vlen", r.c.vlen},
                                    {"unit_of_work", unit_of_work(r.c.op)}};
    const std::string target = fmt::format("qemu-vlen{}", r.c.vlen);
    const std::string cell_key = sha256_text(nlohmann::json{
        {"target", target},
        {"op", r.c.op},
        {"shape", shape},
        {"params", params},
        {"build", build_hash},
        {"measure", measure}}.dump());
    cells.push_back(
        {cell_key, target, r.c.op, shape.dump(), params.dump(), build_hash, measure.dump()});
    order.push_back(cell_key);
  }
  k3store::insert_run(
      db, {run_uuid, command, "qemu", build_hash, "", order.dump(), 1, 1, 0, settings.dump()});
  double wall_s = 0;
  int order_index = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const CountResult& r = results[i];
    const std::string& cell_key = cells[i].cell_key;
    k3store::insert_cell(db, cells[i]);
    k3store::SampleRecord s;
    s.iterations = r.calls > 0 ? r.calls : r.method.empty() ? kMoreCalls - kFewCalls : 1;
    s.counters = {{"instructions", r.instructions},
                  {"ime2_instructions", r.ime2},
                  {"other_instructions", r.other},
                  {"vector_instructions", r.vector},
                  {"units", r.units},
                  {"jitter_instructions", r.jitter}};
    if (r.allocations) s.counters["allocations_per_call"] = *r.allocations;
    if (r.per_unit()) s.counters["per_unit"] = *r.per_unit();
    k3store::ProcessRecord p;
    p.run_uuid = run_uuid;
    p.cell_key = cell_key;
    p.order_index = order_index++;
    p.ok = true;
    p.exit_code = 0;
    p.path = r.emulated ? r.path_taken + "(emu)" : r.path_taken;
    p.runner_json = r.runner_json.dump();
    p.wall_ns = r.wall_ns;
    p.samples = {s};
    k3store::insert_process(db, p);
    k3store::AggregateRecord a;
    a.run_uuid = run_uuid;
    a.cell_key = cell_key;
    a.ok = true;
    a.method = !r.method.empty()
                   ? r.method
                   : "instruction count: (count of 3 calls - count of 1) / 2, qemu-user; interval: "
                     "+- the case's measured jitter (the range of five identical 1-call processes)";
    a.processes = 1;
    a.samples = 1;
    a.source_runs_json = nlohmann::json::array({run_uuid}).dump();
    a.mean_ns = a.min_ns = a.median_ns = r.instructions;
    // The figure's honest bounds: +- the jitter of one process (the exact count verdict's rule).
    a.ci_low_ns = r.instructions - r.jitter;
    a.ci_high_ns = r.instructions + r.jitter;
    a.ci_rel_half_width = r.instructions != 0 ? r.jitter / std::abs(r.instructions) : 0.0;
    k3store::insert_aggregate(db, a);
    wall_s += r.wall_ns * 1e-9;
  }
  k3store::finish_run(db, run_uuid, wall_s, 0, 0);
  return run_uuid;
}

}  // namespace k3bench
