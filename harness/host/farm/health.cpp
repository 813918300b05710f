#include "harness/host/farm/health.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

namespace k3farm {
namespace {

bool selected(const std::vector<int>& cpus, int cpu) {
  return cpus.empty() || std::find(cpus.begin(), cpus.end(), cpu) != cpus.end();
}

const CpuFreq* find_cpu(const HealthSample& s, int cpu) {
  for (const auto& f : s.cpufreq)
    if (f.cpu == cpu) return &f;
  return nullptr;
}

}  // namespace

nlohmann::json HealthSample::to_json() const {
  nlohmann::json freq = nlohmann::json::array();
  for (const auto& f : cpufreq)
    freq.push_back({{"cpu", f.cpu},
                    {"governor", f.governor},
                    {"cur_khz", f.cur_khz},
                    {"max_khz", f.max_khz},
                    {"hw_max_khz", f.hw_max_khz}});
  return {{"ok", ok},
          {"error", error},
          {"taken_at_s", taken_at_s},
          {"uptime_s", uptime_s},
          {"boot_id", boot_id},
          {"loadavg", {load1, load5, load15}},
          {"mem_available_kb", mem_available_kb},
          {"thermal_c", thermal_c},
          {"cpufreq", freq},
          {"marchid", marchid},
          {"vlenb", vlenb ? nlohmann::json(*vlenb) : nlohmann::json(nullptr)},
          {"runner_version", runner_version},
          {"tcm_backend", tcm_backend},
          {"tcm_reason", tcm_reason},
          {"tcm_stale_blocks", tcm_stale_blocks},
          {"warnings", warnings}};
}

void for_each_fact_line(
    const std::string& text,
    const std::function<void(const std::string& key, std::istream& rest)>& fact) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    fact(key, in);
  }
}

void parse_facts(const std::string& text, HealthSample& s) {
  for_each_fact_line(text, [&](const std::string& key, std::istream& in) {
    if (key == "uptime_s") {
      in >> s.uptime_s;
    } else if (key == "boot_id") {
      in >> s.boot_id;
    } else if (key == "loadavg") {
      in >> s.load1 >> s.load5 >> s.load15;
    } else if (key == "MemAvailable:") {
      in >> s.mem_available_kb;
    } else if (key == "thermal") {
      std::string zone, type;
      long long milli = 0;
      if (in >> zone >> type >> milli) s.thermal_c[zone + ":" + type] = milli / 1000.0;
    } else if (key == "cpufreq") {
      CpuFreq f;
      if (in >> f.cpu >> f.governor >> f.cur_khz >> f.max_khz >> f.hw_max_khz)
        s.cpufreq.push_back(f);
    } else if (key == "marchid") {
      std::string colon;
      in >> colon >> s.marchid;  // "marchid : 0x8000000041000002"
    }
  });
}

void apply_runner_facts(const k3targets::RunnerFacts& facts, HealthSample& s) {
  if (facts.vlen_bits) s.vlenb = *facts.vlen_bits / 8;
  if (s.marchid.empty() && facts.marchid) s.marchid = *facts.marchid;
  s.runner_version = fmt::format("{} {}", facts.runner_version, facts.source_revision);
  s.tcm_backend = facts.tcm_backend;
  s.tcm_reason = facts.tcm_reason;
  s.tcm_stale_blocks = facts.tcm_stale_blocks;
  if (!s.tcm_stale_blocks.empty())
    s.warnings.push_back(fmt::format("stale TCM locks on blocks {} (recover: k3tune tcm release)",
                                     nlohmann::json(s.tcm_stale_blocks).dump()));
}

std::vector<std::string> throttle_signs(const HealthSample& s, const std::vector<int>& cpus,
                                        double max_temp_c) {
  std::vector<std::string> out;
  for (const auto& [zone, c] : s.thermal_c)
    if (c >= max_temp_c)
      out.push_back(fmt::format("{} at {:.1f} C (limit {:.0f} C)", zone, c, max_temp_c));
  for (const auto& f : s.cpufreq) {
    if (!selected(cpus, f.cpu)) continue;
    if (f.governor == "performance" && f.max_khz > 0 && f.cur_khz < f.max_khz)
      out.push_back(
          fmt::format("cpu{} runs at {} kHz below its maximum {} kHz (governor performance)", f.cpu,
                      f.cur_khz, f.max_khz));
    if (f.hw_max_khz > 0 && f.max_khz > 0 && f.max_khz < f.hw_max_khz)
      out.push_back(fmt::format("cpu{} frequency ceiling {} kHz below the hardware maximum {} kHz",
                                f.cpu, f.max_khz, f.hw_max_khz));
  }
  return out;
}

HealthChange compare_samples(const HealthSample& before, const HealthSample& after,
                             const std::vector<int>& cpus, double max_temp_c) {
  HealthChange c;
  if (!before.boot_id.empty() && !after.boot_id.empty() && before.boot_id != after.boot_id) {
    c.rebooted = true;
    c.reasons.push_back(fmt::format("boot id changed ({} -> {})", before.boot_id, after.boot_id));
  }
  if (after.uptime_s < before.uptime_s) {
    c.rebooted = true;
    c.reasons.push_back(
        fmt::format("uptime went back from {} s to {} s", before.uptime_s, after.uptime_s));
  } else if (std::fabs(after.boot_time_s() - before.boot_time_s()) > 10) {
    c.rebooted = true;
    c.reasons.push_back(
        fmt::format("boot time moved by {:.0f} s", after.boot_time_s() - before.boot_time_s()));
  }
  for (const auto& sign : throttle_signs(after, cpus, max_temp_c)) {
    c.throttled = true;
    c.reasons.push_back(sign);
  }
  for (const auto& f : after.cpufreq) {
    if (!selected(cpus, f.cpu)) continue;
    const CpuFreq* b = find_cpu(before, f.cpu);
    if (b == nullptr) continue;
    if (b->governor != f.governor) {
      c.throttled = true;
      c.reasons.push_back(
          fmt::format("cpu{} governor changed {} -> {}", f.cpu, b->governor, f.governor));
    }
    if (f.max_khz < b->max_khz) {
      c.throttled = true;
      c.reasons.push_back(
          fmt::format("cpu{} frequency ceiling fell {} -> {} kHz", f.cpu, b->max_khz, f.max_khz));
    }
  }
  return c;
}

}  // namespace k3farm
