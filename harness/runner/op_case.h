// The contract between k3bench's driver and each op: an op declares its shape keys and tunable
// parameters, and builds a prepared case (inputs generated from the seed, kernel state packed)
// whose run_once() is the timed call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/runner/args.h"
#include "k3k/dispatch.h"
#include "k3k/traffic.h"
#include "k3k/worker_pool.h"

namespace k3runner {

// Work of one timed call, so GB/s and GOPS can be derived from any repetition's time.
struct Traffic {
  std::int64_t weight_bytes = 0;      // bytes of weights (or streamed tables) read
  std::int64_t activation_bytes = 0;  // bytes of inputs read and outputs written
  std::int64_t ops = 0;               // arithmetic operations (a multiply-add counts as 2)
  // The kernels' own accounting by source (k3k/traffic.h), for the ops that run kernels (the
  // probes of memory and compute have none). weight_bytes is then its weights, metadata and KV
  // read (the streamed tables), activation_bytes the rest.
  std::optional<k3k::Traffic> by_source;
  static Traffic of(const k3k::Traffic& bytes, std::int64_t ops) {
    return {bytes.weights + bytes.metadata + bytes.kv_read,
            bytes.kv_write + bytes.state + bytes.activations, ops, bytes};
  }
};

struct Accuracy {
  std::string reference;         // what the output was compared with
  std::int64_t checked = 0;      // outputs compared
  std::int64_t total = 0;        // outputs produced
  double max_abs_err = 0.0;
  double max_rel_err = 0.0;
  double worst_bound = 0.0;      // bound at the element with the largest err/bound ratio
  double worst_ratio = 0.0;      // max over elements of err / bound (pass iff <= 1)
  bool pass = true;
  nlohmann::json extra = nlohmann::json::object();  // op-specific figures (e.g. quantisation error)
  // FNV-1a 64 of the output arrays right after the check (output_checksum.h), or null.
  nlohmann::json output_checksum = nullptr;
};

// A raw little-endian array for --dump.
struct DumpArray {
  std::string name;
  std::string dtype;  // f32, f64, i8, u8, i32, f16
  std::vector<std::int64_t> shape;
  std::string layout;  // human-readable description of the element order
  const void* data = nullptr;
  std::int64_t bytes = 0;
};

class OpCase {
 public:
  virtual ~OpCase() = default;
  virtual void run_once() = 0;
  virtual Traffic traffic() const = 0;
  // Runs the kernel on the case's inputs and compares with the float64 reference.
  virtual Accuracy check(bool full) = 0;
  // Parameters actually used (defaults resolved, e.g. "auto" replaced by the chosen value).
  virtual nlohmann::json params_used() const = 0;
  // The kernel layer the case runs (set by the driver before check/run), or "none" for probes.
  virtual std::string path() const { return k3k::to_string(path_); }
  void set_path(k3k::KernelPath path) { path_ = path; }
  virtual std::vector<DumpArray> dump_arrays() const = 0;
  // The dump arrays that are the case's result (hashed into the output checksum); none: no checksum.
  virtual std::vector<std::string> output_names() const { return {"output"}; }
  // Calls after which the timed call repeats itself exactly (e.g. the number of weight copies a
  // decode case rotates through): the warm-up covers at least one such cycle, so every copy has
  // been touched and the measured calls see the steady state.
  virtual int rotation() const { return 1; }

 protected:
  k3k::KernelPath path_ = k3k::KernelPath::kGeneric;
};

struct CaseInputs {
  KeyValues shape;
  KeyValues params;
  std::uint64_t seed;
  k3k::KernelPath path;  // also used for setup work done by kernels (e.g. filling a KV cache)
};

struct OpInfo {
  std::string name;
  std::string description;
  std::vector<KeySpec> shape_keys;
  std::vector<KeySpec> params;
  // Bytes the case will allocate (checked against available memory before building it).
  std::function<std::int64_t(const KeyValues& shape, const KeyValues& params)> footprint;
  std::function<std::unique_ptr<OpCase>(const CaseInputs&)> make;
};

const std::vector<OpInfo>& all_ops();
const OpInfo* find_op(const std::string& name);

// Common parameter: the worker count (default: one per hardware thread).
// `op`'s worker count: from the table rules when a table may tune `op`.
KeySpec workers_param(std::string_view op = {});
// Shared worker pools, one per size, kept alive for the process.
// Created with the placement policy of placement.h (pinned to the A100 CPUs on a K3).
k3k::WorkerPool& pool_of_size(int workers);
// How a pool's workers were placed: the policy and, per worker, CPU, opt-in, pin and any problem.
nlohmann::json pool_placement_json(const k3k::WorkerPool& pool);

}  // namespace k3runner
