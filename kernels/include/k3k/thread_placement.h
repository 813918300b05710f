// Placing the calling thread on one CPU, with the K3 opt-in that A100 CPUs require.
#pragma once

#include <memory>

#include "k3k/worker_pool.h"

namespace k3k {

// The kernel file through which a thread asks to be allowed onto the A100 ("AI") cores.
inline constexpr const char* kAiThreadOptInPath = "/proc/set_ai_thread";

// Optionally writes "0" to opt_in_path (the calling thread's opt-in), then pins the calling thread
// to `cpu` (when cpu >= 0). Never throws: failures are described in the result.
WorkerPlacement place_current_thread(int cpu, bool opt_in,
                                     const char* opt_in_path = kAiThreadOptInPath);

// The calling thread's current CPU affinity, to be handed back to restore_thread_affinity.
std::shared_ptr<void> save_thread_affinity();
void restore_thread_affinity(const std::shared_ptr<void>& saved);

}  // namespace k3k
