// The environment block of every result: machine, CPU set, vector length, clocks and
// temperatures, runner version and build options.
#pragma once

#include <nlohmann/json.hpp>

namespace k3runner {
// Static facts (CPU model, CPUs, vlenb, marchid, kernel, build).
nlohmann::json environment_static();
// Readings that drift during a run (cpufreq of the allowed CPUs, thermal zones), taken before and
// after the measurement so a throttled run can be recognised.
nlohmann::json environment_readings();
// Available memory in bytes (MemAvailable), or -1 when unknown.
long long available_memory_bytes();
}  // namespace k3runner
