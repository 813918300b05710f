// What the scheduler and the hypervisor took from a repetition, read around it (outside the timer):
//   * run delay: the time this process's threads spent runnable but waiting for a CPU (field 2 of
//     /proc/self/task/*/schedstat, summed over the threads: the calling thread and the pool's
//     workers). Another task on the same CPU shows here.
//   * steal: the time the hypervisor ran something else while this VM's CPUs wanted to run (the
//     `steal` column of /proc/stat's "cpu" line, all CPUs, in clock ticks). Another tenant of the
//     host shows here and nowhere else: the guest's own accounting cannot see it.
// Both are cumulative counters; a repetition's share is the difference of two snapshots. Either is
// -1 where the kernel does not provide it (no schedstats, no /proc/stat), never a guessed 0.
#pragma once

namespace k3runner {

struct SchedulingSnapshot {
  double run_delay_ns = -1;  // summed over the process's threads
  double steal_ns = -1;      // summed over all CPUs of the machine
};

SchedulingSnapshot scheduling_snapshot();

// after - before, field by field; -1 where either side is unknown.
SchedulingSnapshot scheduling_delta(const SchedulingSnapshot& before,
                                    const SchedulingSnapshot& after);

}  // namespace k3runner
