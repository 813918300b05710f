#include "harness/runner/environment.h"

#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "harness/common/sys/text_file.h"
#include "harness/runner/placement.h"
#include "k3k/dispatch.h"

namespace k3runner {
namespace {

using k3sys::read_first_line;

// First value of a "key : value" line in /proc/cpuinfo.
std::string cpuinfo_field(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string k = line.substr(0, colon);
    while (!k.empty() && (k.back() == ' ' || k.back() == '\t')) k.pop_back();
    if (k == key) {
      std::string v = line.substr(colon + 1);
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      return v;
    }
  }
  return "";
}

nlohmann::json vlenb() {
  const auto& cpu = k3k::cpu_features();
  return cpu.vector ? nlohmann::json(cpu.vlenb) : nlohmann::json(nullptr);  // null: no RVV
}

}  // namespace

nlohmann::json environment_static() {
  utsname u{};
  uname(&u);
  std::string model = cpuinfo_field("model name");
  if (model.empty()) model = cpuinfo_field("uarch");
  if (model.empty()) model = cpuinfo_field("isa");
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  nlohmann::json marchid = cpuinfo_field("marchid").empty()
                               ? nlohmann::json(nullptr)
                               : nlohmann::json(cpuinfo_field("marchid"));
  return {
      {"cpu_model", model},
      {"cpus_allowed", allowed_cpu_list()},
      {"cpus_online", sysconf(_SC_NPROCESSORS_ONLN)},
      {"vlenb", vlenb()},
      {"marchid", marchid},
      {"hostname", host},
      {"kernel", fmt::format("{} {} {}", u.sysname, u.release, u.machine)},
      {"runner",
       {{"name", "k3bench"}, {"version", K3_VERSION}, {"source_revision", K3_SOURCE_REVISION}}},
      {"build",
       {{"compiler", K3_COMPILER},
        {"build_type", K3_BUILD_TYPE},
        {"flags", K3_BUILD_FLAGS},
        {"target_arch", K3_TARGET_ARCH}}},
  };
}

nlohmann::json environment_readings() {
  nlohmann::json freq = nlohmann::json::object();
  for (int cpu : allowed_cpu_list()) {
    const std::string v =
        read_first_line(fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_cur_freq", cpu));
    if (!v.empty()) freq[std::to_string(cpu)] = std::stoll(v);
  }
  nlohmann::json thermal = nlohmann::json::object();
  for (int z = 0; z < 32; ++z) {
    const std::string v = read_first_line(fmt::format("/sys/class/thermal/thermal_zone{}/temp", z));
    if (v.empty()) continue;
    thermal[std::to_string(z)] = std::stoll(v) / 1000.0;
  }
  return {{"cpufreq_khz", freq}, {"thermal_c", thermal}};
}

long long available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  long long kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return -1;
}

}  // namespace k3runner
