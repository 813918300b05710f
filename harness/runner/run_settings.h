// The measurement environment of one k3bench process, set once from its command line before any
// case is built: where the threads run, how idle workers wait, how large buffers are backed, and
// how the cached weights are loaded. These are the factors that move a kernel's time from one
// process to the next; every result reports them (environment.measurement) so runs can be told
// apart, and k3tune can measure them against each other interleaved.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace k3runner {

struct RunSettings {
  // auto: the A100 CPUs on a K3 (after the /proc/set_ai_thread opt-in), else unpinned; none:
  // unpinned; or a list such as "0-1" / "8,10" (worker w on the w-th CPU of the list).
  // K3BENCH_CPUS in the environment overrides it (for wrappers that cannot change arguments).
  std::string cpus = "auto";
  std::string pool_wait = "spin";  // spin (then park after a while) | park (at once)
  bool huge_pages = true;          // 2 MiB aligned, THP-advised large buffers (k3k::AlignedBuffer)
  // mmap: decode rotations are mapped read-only from the weight cache (page-cache pages shared by
  // the processes of a sweep); read: each process makes its own copies in memory.
  std::string weight_load = "mmap";
};

RunSettings& run_settings();
// The settings plus what the system made of them (the kernel's THP mode).
nlohmann::json run_settings_json();

}  // namespace k3runner
