// Whole-model instruction counts (`k3tune count --model M`): a prefill of N tokens from an empty
// context and one decode step at a context depth D, counted in ONE qemu-user process of the
// riscv64 k3bench (`--model --count-marks`) with the counting plugin, which splits the count at
// the runner's marker system calls (harness/runner/model/count_marks.h): every kernel call of the
// timed forwards is its own region, and the forward's own code between them is "glue", so the
// per-op breakdown sums exactly to the whole. The runner's timer around each kernel call has a
// region of its own, left out (an engine does not run it). Set-up (weight generation), the context
// fill and the checksums are outside every region, so one process suffices (no difference of
// processes). The depth is filled with seeded values (--context-fill synthetic), not by a prefill:
// instruction counts do not depend on the values in the cache, and prefilling 512 tokens takes
// minutes under qemu. IME2 emulation builds: per region, ime2 = the emulated IME2 instructions and
// other = the counted instructions minus the calls into the software model (instruction_count.h).
// Next to the instructions, each op's bytes by source come from the runner's JSON (the kernels' own
// accounting, k3k/traffic.h: breakdown.ops[].bytes_per_call of each test).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/common/model/model_config.h"
#include "harness/host/bench/instruction_count.h"
#include "k3k/traffic_by_source.h"

namespace k3bench {

// UserError (bad input, exit 2) naming --prefill or --depth when the prefill or the decode
// step's context is beyond the model's context (max_context of its file; not checked when the
// file does not give it). Checked before any process starts.
void check_model_count_size(const k3model::ModelConfig& model, int prefill_tokens, int depth);

struct ModelCountCase {
  std::string runner;      // riscv64 k3bench
  std::string path;        // rvv, generic, or ime2 (runs --path auto, as the op counts do)
  std::string model_file;  // configs/models/<id>.toml
  std::string model_id;
  int prefill_tokens = 128;
  int depth = 512;
  int vlen = 1024;
};

// Bytes read and written by source (the runner's names and units: bytes).
struct Bytes : k3k::TrafficBySource<double> {
  Bytes scaled(double factor) const;
  static Bytes from_json(const nlohmann::json& j);  // k3bench's traffic object
  nlohmann::json json() const;                      // the same names, plus streamed and total
};

struct OpInstructions {
  std::string op;  // the forward's op kind (k3bench's breakdown names) or "glue"
  double ime2 = 0, other = 0, vector = 0;
  double calls = 0;  // kernel calls of this kind in the test (0 for glue)
  Bytes bytes;       // moved by this op's kernel calls in the test (glue: none)
  double total() const { return ime2 + other; }
};

struct PhaseCount {
  std::string test;                 // k3bench's test name: "pp128", "tg1" (at the depth)
  double tokens = 0;                // tokens the phase processes (prefill: N; decode: 1)
  std::vector<OpInstructions> ops;  // in the forward's op order, glue last; zero ops left out
  double ime2 = 0, other = 0, vector = 0;
  Bytes bytes;  // the test's, summed over its ops
  double total() const { return ime2 + other; }
  double per_token() const { return tokens > 0 ? total() / tokens : 0; }
};

struct ModelCountResult {
  ModelCountCase c;
  std::string path_taken;
  bool emulated = false;
  PhaseCount prefill, decode;
  double decode_weight_bytes = 0;  // bytes of weights one decode step streams (the runner's)
  std::string kv_dtype;            // the KV cache's element type in the counted forward
  nlohmann::json runner_json;
  std::int64_t wall_ns = 0;
};

// Parses a counted process's regions into the two phases (exposed for tests). Throws UserError
// when the runner's JSON or the plugin's regions are missing.
ModelCountResult read_model_count(const ModelCountCase& c, const CountedProcess& p);

// Runs and reads the count. Throws UserError with the reason when the process fails.
ModelCountResult count_model(const CountTools& tools, const ModelCountCase& c);

// The two phases as storable results (ops model_prefill "model=<id>,tokens=<N>" and model_decode
// "model=<id>,depth=<D>", unit "token"; the per-op split in the process's runner_json under
// "instruction_breakdown", each op with its bytes per token, and the phase's bytes per token by
// source under "bytes_per_token").
std::vector<CountResult> model_count_results(const ModelCountResult& r);

}  // namespace k3bench
