// What a tuning minimises, measured one process (or count) at a time:
//   * time: ns per call from a real runner process on the target (the measurement protocol's
//     runner processes; every process is stored in the results database like a bench process);
//   * instructions: dynamic instructions per call under qemu-user, counted by the project's TCG
//     plugin (scripts/qemu-insn-count) as (count of 3 calls - count of 1 call) / 2. Deterministic,
//     so one count per configuration is exact -- but a proxy, not a speed, and labelled so.
//   * synthetic: a known function of the configuration with seeded noise, for the tests.
// The first measurement of a configuration checks its output against the float64 reference; a
// configuration that breaks its bound (or that the runner refuses) is rejected with the reason
// and never chosen.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "harness/host/bench/grid.h"
#include "harness/host/bench/instruction_count.h"
#include "harness/host/bench/runner_process.h"
#include "harness/host/store/sqlite.h"
#include "harness/host/targets/target.h"
#include "tuner/measurement_cache.h"

namespace k3tuner {

struct Measurement {
  bool rejected = false;  // accuracy failure, unsupported configuration, runner failure
  std::string reason;
  double value = 0;  // ns per call, or instructions per call
  // A process alternating two parameter sets (MeasureSettings::params_b): value is side A's and
  // value_b side B's geometric mean over the process's repetitions of that side (time only).
  double value_b = 0;
  bool disturbed = false;    // the process saw a disturbance: measure again, do not count it
  std::string cell_key;      // where its process and samples are stored (time objective)
  bool cached = false;       // served by the measurement cache, not measured now
  bool unavailable = false;  // replay: the store does not hold it (rejected with that reason)
};

class Objective {
 public:
  virtual ~Objective() = default;
  virtual std::string name() const = 0;  // "time", "instructions", "synthetic"
  virtual std::string unit() const = 0;  // "ns per call", ...
  virtual bool deterministic() const = 0;
  virtual bool proxy() const { return false; }  // not a speed (instruction counts)
  // Measurement `index` (0-based) of `cell`, in tuning round `round`.
  virtual Measurement measure(const k3bench::CellSpec& cell, int index, int round) = 0;
};

// Time per call of the runner built as `build_hash` on a target, with the database the times are
// stored in (measured, or replayed).
class TimedObjective : public Objective {
 public:
  std::string name() const override { return "time"; }
  std::string unit() const override { return "ns per call"; }
  bool deterministic() const override { return false; }

 protected:
  TimedObjective(const k3targets::Target& target, std::string build_hash, k3store::Connection& db)
      : target_(target), build_hash_(std::move(build_hash)), db_(db) {}
  const k3targets::Target& target_;
  std::string build_hash_;
  k3store::Connection& db_;
};

// Runner processes on a target, stored under run `run_uuid` (whose row the caller made).
class TimeObjective final : public TimedObjective {
 public:
  TimeObjective(const k3targets::Target& target, std::string build_hash, k3store::Connection& db,
                std::string run_uuid, double timeout_s);
  Measurement measure(const k3bench::CellSpec& cell, int index, int round) override;

 private:
  std::string run_uuid_;
  double timeout_s_;
  std::map<std::string, std::int64_t> iterations_;  // calibrated calls per repetition, per cell
  int order_ = 0;
};

// Instructions per call under qemu-user with the counting plugin.
class InstructionObjective final : public Objective {
 public:
  // target: emulated (a qemu target, or a farm board whose exec prefix is qemu-user); the count
  // runs where it runs (k3bench::count_process).
  InstructionObjective(const k3targets::Target& target, std::string plugin,
                       std::map<std::string, std::string> env = {});
  std::string name() const override { return "instructions"; }
  std::string unit() const override { return "instructions per call (qemu)"; }
  bool deterministic() const override { return true; }
  bool proxy() const override { return true; }
  Measurement measure(const k3bench::CellSpec& cell, int index, int round) override;
  // Counts are looked up in (and stored to) `cache` under the runner's build hash; with cache_only
  // (tune --replay) nothing is counted, and a count the cache lacks is "unavailable".
  void use_cache(MeasurementCache* cache, std::string build_hash, bool cache_only = false);
  std::string session;  // recorded with the counts it stores

  // How a count is taken: two calls minus one when that difference is kLargeCall instructions or
  // more, else nine calls minus one, divided by eight, in processes with the environment of
  // k3bench::count_process (calls marked, malloc's mmap threshold fixed: counts taken before it
  // differ by some instructions per call); part of the cache's key.
  static constexpr const char* kMethod = "insns-2-or-9-minus-1-per-call,marked,mmap-threshold-4096";
  static constexpr double kLargeCall = 1e6;
  static std::vector<std::string> count_args(const k3bench::CellSpec& cell, int calls);

 private:
  k3bench::CountTools tools_;
  const k3targets::Target& target_;
  std::map<std::string, std::string> env_;
  MeasurementCache* cache_ = nullptr;
  std::string build_hash_;
  bool cache_only_ = false;
};

// tune --replay with a time objective: the measurements tuning sessions stored for the same cell
// (target, op, shape, params, build, settings), served in the order they were taken; a strategy
// that asks for more than were stored gets "unavailable". Nothing is run.
class ReplayTimeObjective final : public TimedObjective {
 public:
  ReplayTimeObjective(const k3targets::Target& target, std::string build_hash,
                      k3store::Connection& db);
  Measurement measure(const k3bench::CellSpec& cell, int index, int round) override;

 private:
  std::map<std::string, std::vector<std::pair<double, bool>>>
      stored_;  // (value, disturbed) per cell key
};

// A known objective: true value f(config) with log-normal noise seeded by (seed, config, index),
// so a measurement is the same whenever it is taken (interrupting and resuming a tuning sees the
// same numbers). `reject` marks configurations whose "accuracy check" fails.
class SyntheticObjective final : public Objective {
 public:
  SyntheticObjective(std::function<double(const nlohmann::json& params)> truth, double noise,
                     std::uint64_t seed,
                     std::function<bool(const nlohmann::json& params)> reject = {});
  std::string name() const override { return "synthetic"; }
  std::string unit() const override { return "units"; }
  bool deterministic() const override { return noise_ == 0; }
  Measurement measure(const k3bench::CellSpec& cell, int index, int round) override;
  int measurements() const { return measurements_; }

 private:
  std::function<double(const nlohmann::json&)> truth_;
  double noise_;
  std::uint64_t seed_;
  std::function<bool(const nlohmann::json&)> reject_;
  int measurements_ = 0;
};

}  // namespace k3tuner
