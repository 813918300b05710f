// Deterministic instruction counts per call of the kernel ops under qemu-user: a proxy for speed
// until a board is available, tracked in the results database like any measurement.
//
// Method: the riscv64 k3bench runs an op with the counting TCG plugin (scripts/qemu-insn-count),
// one worker, one weight copy, no accuracy check, one warm-up call and 3 timed calls, with every
// call marked as its own region (K3BENCH_COUNT_MARKS, harness/runner/call_marks.h): the figure
// per call is the mean of the timed calls after the first (calls 3 and 4), counted apart from
// start-up, set-up and output, where processes differ by hundreds of instructions (timer and
// /proc readings, number formatting). malloc's mmap threshold is fixed in every counted process
// (counting_env in the .cpp: a call that allocates otherwise counts differently as the heap's
// layout moves with the runner's path). The process runs a second time with a larger
// environment; the two figures' difference is the case's jitter (0 when exact, which is what
// every case measured so far gives). A runner that does not mark its calls (older builds) is
// counted as before: per call = (count(3) - count(1)) / 2, from two processes whose untimed parts
// cancel up to a few hundred instructions, with the 1-call process run five times in all and
// their range as the jitter.
// In IME2 emulation builds the plugin skips the software model (address range of the section
// k3_ime2_model, read with nm), k3bench reports the emulated IME2 instructions and the calls that
// reach the model (per marked call, or for the whole process); per call:
//   ime2  = emulated IME2 instructions (exactly what a real build issues)
//   other = counted instructions - calls of the model (what a real build runs besides IME2)
// For other builds ime2 = 0 and other = the count.
//
// Two counts of a case are "identical" unless they differ by more than twice the larger jitter
// (k3verdict::exact_count_verdict says why twice).
//
// Storage (no schema change): per binary one run (command "k3tune count"), per (op, shape, path,
// VLEN) one cell whose measure_json says {"metric": "instructions per call", ...} and whose target
// is "qemu-vlen<V>", one process with one sample whose counters hold the figures (instructions,
// ime2_instructions, other_instructions, vector_instructions, per_unit, units), and an ok aggregate
// whose mean_ns/min_ns/median_ns hold the instructions per call (ime2 + other) and ci_* that
// figure +- the jitter. Units: weights N*K for linear_decode, multiply-adds M*N*K for
// linear_prefill, elements M*K (decode: K) for quant_pack_*, none otherwise. The runner runs
// with one worker and one weight copy for the ops that declare those parameters.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host/targets/process.h"
#include "harness/host/targets/target.h"
#include "harness/host/store/sqlite.h"

namespace k3bench {

struct CountTools {
  std::string qemu = "qemu-riscv64";
  std::string plugin;  // libinsn_count.so (scripts/build-qemu-plugin.sh)
  std::string nm = "nm";
  double timeout_s = 3600;
};

struct CountCase {
  std::string runner;  // riscv64 k3bench
  std::string path;    // --path: rvv, generic; ime2 runs --path auto, so that where the IME2
                     // gate refuses (VLEN below 1024) dispatch falls back to RVV as an engine would
  std::string op, shape;  // k3bench --op / --shape
  int vlen = 1024;
  // Where to count: null runs `runner` here under qemu-user at `vlen`; a target (an emulated farm
  // board) runs its own runner under its own emulator, where it runs (`runner`, `vlen`: its).
  const k3targets::Target* target = nullptr;
};

struct CountResult {
  CountCase c;
  std::string path_taken;  // k3bench's dispatch path (ime2 falls back to rvv below VLEN 1024)
  bool emulated = false;
  double instructions = 0;  // per call: ime2 + other
  double ime2 = 0, other = 0, vector = 0;
  double units = 0;  // work per call (unit_of_work); 0: an op without one
  double jitter = 0;  // instructions: the two marked processes' difference (unmarked runners: the
                      // range of five identical 1-call processes)
  // Heap allocations of one timed call, the most over both processes, where the runner counts them
  // (k3bench's count marks). Not 0: the figure depends on the heap's layout, which moves with
  // everything the process did before, down to the length of its own path.
  std::optional<double> allocations;
  std::optional<double> per_unit() const {
    return units > 0 ? std::optional(instructions / units) : std::nullopt;
  }
  nlohmann::json runner_json;  // the 3-call process's k3bench JSON
  std::int64_t wall_ns = 0;
  std::string method;  // how the figure was taken (empty: the op counts' difference of processes)
  int calls = 0;       // calls the figure is the mean of (0: as the method implies)
};

// qemu-user's -cpu for an RVV 1.0 CPU of this VLEN.
std::string qemu_cpu(int vlen);

// One process counted: `runner args...` under qemu-user (`cpu`) with the counting plugin, the IME2
// model's code left out (its address range read from the runner with nm, once per runner), no
// weight cache, `env` added. Every instruction counter (`k3tune count`, the tuner's instruction
// objective) goes through here, so all count the same thing.
struct CountedProcess {
  bool ok = false;
  std::string reason;   // why not ok: the process's failure, or no count from the plugin
  double ime2 = 0;      // emulated IME2 instructions (the runner's JSON; 0 in other builds)
  double other = 0;     // counted instructions minus the calls into the IME2 model
  double vector = 0;    // vector instructions counted
  nlohmann::json json;  // the runner's stdout as JSON (null when it is not JSON)
  // Regions the runner marked (k3bench --count-marks; the plugin's marker system call): id ->
  // counted instructions (the IME2 model's code left out, its calls still in) and vector ones.
  struct Region {
    double insns = 0, vector = 0;
    // Bytes the region's instructions loaded and stored as qemu reported each access (the plugin's
    // mem=on; -1 without it), all and by vector instructions.
    double load_bytes = -1, store_bytes = -1, vector_load_bytes = -1, vector_store_bytes = -1;
  };
  std::map<int, Region> regions;
  k3targets::ProcessResult process;
  double total() const { return ime2 + other; }
};
// Timed calls of a process whose runner marks its calls (k3bench --count-marks, which every
// counted process is asked for): its figure is the mean of the timed calls after the first.
inline constexpr int kMarkedTimedCalls = 3;
// That figure, IME2 and other instructions together, from one process of kMarkedTimedCalls timed
// calls; nullopt when the runner marked nothing (a runner older than the marks). Throws UserError
// (naming `what`) when the process marked another number of timed calls or the plugin reported no
// region of one.
std::optional<double> marked_instructions_per_call(const CountedProcess& p,
                                                   const std::string& what);
// `exec_as`: another path to start `runner` from (a link to it), when not empty.
CountedProcess count_process(const CountTools& tools, const std::string& cpu,
                             const std::string& runner, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {},
                             const std::string& exec_as = "");
// The same under an explicit emulator command (qemu-user and its options): the plugin is added
// after it.
CountedProcess count_process(const CountTools& tools, const std::vector<std::string>& emulator,
                             const std::string& runner, const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {},
                             const std::string& exec_as = "");
// The same on an emulated target (a qemu target, or a farm board whose exec prefix is qemu-user):
// the target's runner under its own emulator command with the plugin added, run where the target
// runs (a board counts on the board, every run judged by the farm). tools.qemu is not used; the
// plugin's path must exist where the target runs (the loopback farm shares this machine's).
CountedProcess count_process(const CountTools& tools, const k3targets::Target& target,
                             const std::vector<std::string>& args,
                             const std::map<std::string, std::string>& env = {});

// What one unit of work of an op is ("weight", "multiply-add", "element"; "" for ops without
// one) and how many a call does, from its shape text ("m=16,n=2048,k=2048").
std::string unit_of_work(const std::string& op);
double units_per_call(const std::string& op, const std::string& shape);

// Counts one case (two qemu processes of 3 timed calls; a runner without call marks: six, 1 call,
// 3 calls, 1 call four more times for the jitter). Throws UserError with the failing step's reason.
CountResult count_instructions(const CountTools& tools, const CountCase& c);

// Counts `cases` with up to `jobs` qemu processes at a time (each process is one thread of qemu:
// two cases on two cores take the time of one; counts do not depend on the machine's load).
// `done(i, result)` is called in case order as results become available. The first failure is
// rethrown once the cases in flight have finished.
std::vector<CountResult> count_cases(const CountTools& tools, const std::vector<CountCase>& cases, int jobs,
                                     const std::function<void(std::size_t, const CountResult&)>& done = {});

// Runs fn(0) .. fn(n - 1) on up to `jobs` threads (one qemu process each, for the counters); after
// a failure no new item starts, the ones in flight finish, and the first failure is returned
// (null: none), so that the caller can keep what finished before rethrowing.
std::exception_ptr for_each_in_parallel(std::size_t n, int jobs,
                                        const std::function<void(std::size_t)>& fn);

// Stores results of ONE runner binary as a run (see the top of this file); returns its run_uuid.
std::string store_counts(k3store::Connection& db, const std::string& command,
                         const std::vector<CountResult>& results);

}  // namespace k3bench
