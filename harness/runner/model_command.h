// k3bench --model NAME: a whole model's prefill and decode speed, llm_bench-style (warm-up runs
// excluded, weight generation excluded): pp N (one prefill of N tokens per repetition) and tg M
// (M greedy decode steps after a short prompt), tokens per second of every repetition, the per-op
// breakdown of each test, peak RSS, the weight bytes one decode step streams, and logits
// checksums (identical output across builds means identical checksums). --depth D starts every
// test with D tokens in the caches (llama-bench -d), --pg P,G adds a prefill-then-generate test on
// one cache (MNN llm_bench -pg, llama-bench pp+tg), reported apart from pp and tg.
#pragma once

#include <cstdint>
#include <string>

namespace k3runner {

struct ModelCommandOptions {
  std::string model;       // NAME in models_dir, or a .toml path
  std::string models_dir;  // default: the source tree's configs/models
  int pp = 512, tg = 128;  // 0 skips a test
  int tg_prompt = 1;       // prompt before the decode test (llm_bench's tg128 uses -p 1)
  int depth =
      0;  // tokens already in the KV cache (prefilled untimed) before every test (llama-bench -d)
  int pg_pp = 0, pg_tg = 0;  // --pg P,G: prefill P then decode G on one cache, timed together
  int reps = 5, warmup = 1;
  std::string params;  // model_pp's parameters: workers, kv_dtype, gdn_chunk, weight_seed
  std::string path = "auto";
  std::string table;       // tuning table (--table); K3_TUNING_TABLE does the same
  std::uint64_t seed = 1;  // prompt tokens
  std::string trace;  // --trace FILE: a Chrome trace-event file of the run (trace_recorder.h)
  std::string context_fill = "prefill";  // or "synthetic": seeded caches and states, no forward
  bool count_marks = false;
  std::string tcm = "auto";          // decode Linears' TCM pipeline: auto | on | off
  std::string tcm_backend = "auto";  // auto | real | emulated | off (tcm_context.h)  // mark kernel calls for the instruction counter (count_marks.h)
  bool check_forward = false;
  bool json = false;
};

int run_model_command(const ModelCommandOptions& options);

}  // namespace k3runner
