#include "harness/runner/placement.h"

#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/runner/errors.h"
#include "k3k/dispatch.h"
#include "k3k/thread_placement.h"
#include "harness/runner/run_settings.h"

namespace k3runner {

namespace {
constexpr std::uint64_t kA100Marchid = 0x8000000041000002ull;

int parse_int(std::string_view s, std::string_view what) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || v < 0) {
    throw UsageError(std::string(what) + ": '" + std::string(s) + "' is not a non-negative number");
  }
  return v;
}
}  // namespace

std::vector<int> allowed_cpu_list() {
  // Read once, on the first call (main() places its thread after that): the set the process was
  // started with, not the one CPU the main thread is pinned to later.
  static const std::vector<int> initial = [] {
    std::vector<int> cpus;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
    return cpus;
  }();
  return initial;
}

std::vector<int> parse_cpu_list(std::string_view text, std::string_view what) {
  std::vector<int> cpus;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text.remove_prefix(comma == std::string_view::npos ? text.size() : comma + 1);
    const auto dash = item.find('-');
    if (dash == std::string_view::npos) {
      cpus.push_back(parse_int(item, what));
      continue;
    }
    const int lo = parse_int(item.substr(0, dash), what),
              hi = parse_int(item.substr(dash + 1), what);
    if (hi < lo)
      throw UsageError(std::string(what) + ": range '" + std::string(item) + "' runs backwards");
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  if (cpus.empty()) throw UsageError(std::string(what) + ": empty list");
  return cpus;
}

std::vector<int> a100_cpus(std::string_view cpuinfo) {
  std::vector<int> cpus;
  for (int cpu = 0; cpu < 256; ++cpu) {
    if (k3k::parse_cpuinfo_marchid(cpuinfo, cpu) == kA100Marchid) cpus.push_back(cpu);
  }
  return cpus;
}

k3k::WorkerPoolOptions pool_options(int workers, std::string* policy) {
  k3k::WorkerPoolOptions options;
  options.workers = workers;
  options.spin_iterations = run_settings().pool_wait == "park" ? 0 : k3k::WorkerPoolOptions::kDefaultSpinIterations;
  const bool gate_exists = ::access(k3k::kAiThreadOptInPath, W_OK) == 0;
  std::string cpus = run_settings().cpus, source = "--cpus";
  if (const char* env = std::getenv("K3BENCH_CPUS"); env != nullptr && *env != '\0') {
    cpus = env;
    source = "K3BENCH_CPUS";
  }
  if (cpus == "none") {
    *policy = "unpinned (" + source + "=none)";
    return options;
  }
  if (cpus != "auto") {
    options.cpus = parse_cpu_list(cpus, source);
    options.ai_thread_opt_in = gate_exists;
    *policy = "pinned to " + source + "=" + cpus + (gate_exists ? " after the A100 opt-in" : "");
    return options;
  }
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<int> a100 = a100_cpus(text.str());
  if (gate_exists && !a100.empty()) {
    options.cpus = a100;
    options.ai_thread_opt_in = true;
    *policy = "pinned to the A100 CPUs after /proc/set_ai_thread opt-in";
    return options;
  }
  *policy = "unpinned (no A100 CPUs or no /proc/set_ai_thread)";
  return options;
}

void place_main_thread() {
  std::string policy;
  const k3k::WorkerPoolOptions options = pool_options(1, &policy);
  if (!options.cpus.empty()) k3k::place_current_thread(options.cpus.front(), options.ai_thread_opt_in);
}

}  // namespace k3runner
