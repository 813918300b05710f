// Where k3bench's workers run (RunSettings::cpus, overridden by K3BENCH_CPUS). On a K3 the kernels
// belong on the A100 cores (CPUs with marchid 0x8000000041000002, gated by /proc/set_ai_thread),
// and "auto" pins there; elsewhere "auto" leaves the threads unpinned: pinning did not lower the
// process-to-process spread measurably on the shared VM (docs/measurement.md), and two runners
// started at once would both pin to the same first CPUs. "none" leaves the threads unpinned; a
// list such as "0-1" or "8,10,12" pins to exactly those CPUs.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "k3k/worker_pool.h"

namespace k3runner {

// "8-11,14" -> {8, 9, 10, 11, 14}; throws UsageError naming `what` on malformed text.
std::vector<int> parse_cpu_list(std::string_view text, std::string_view what);
// The CPUs this process was started on (sched_getaffinity at the first call, which main() makes
// before placing its thread), ascending.
std::vector<int> allowed_cpu_list();
// CPUs whose marchid in /proc/cpuinfo text is the A100's.
std::vector<int> a100_cpus(std::string_view cpuinfo);
// The pool options for `workers` workers under the policy above, and a one-line description.
k3k::WorkerPoolOptions pool_options(int workers, std::string* policy);

// Places the calling (main) thread like worker 0 of every pool: on a K3, opted in and pinned to the
// first A100 CPU. Call it before anything reads vlenb or runs vector code, because the IME2 and RVV
// gates describe the CPU of the thread that first asks (cached per process).
void place_main_thread();

}  // namespace k3runner
