#include "harness/host/bench/model_count.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "harness/host/bench/user_error.h"

namespace k3bench {

Bytes Bytes::scaled(double f) const {
  return {{weights * f, metadata * f, kv_read * f, kv_write * f, state * f, activations * f}};
}

Bytes Bytes::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return {};
  return {{j.value("weights", 0.0), j.value("metadata", 0.0), j.value("kv_read", 0.0),
           j.value("kv_write", 0.0), j.value("state", 0.0), j.value("activations", 0.0)}};
}

nlohmann::json Bytes::json() const {
  return {{"weights", weights},     {"metadata", metadata}, {"kv_read", kv_read},
          {"kv_write", kv_write},   {"state", state},       {"activations", activations},
          {"streamed", streamed()}, {"total", total()}};
}

namespace {

PhaseCount read_phase(const CountedProcess& p, const nlohmann::json& marks, int test,
                      const nlohmann::json& result, double tokens) {
  PhaseCount phase;
  phase.test = marks.at("tests").at(test).at("name").get<std::string>();
  phase.tokens = tokens;
  const int per_test = marks.at("regions_per_test").get<int>();
  const auto& names = marks.at("ops");
  const auto& ime2 = marks.at("ime2");
  std::map<std::string, double> calls;
  std::map<std::string, Bytes> bytes;
  for (const auto& o : result.at("breakdown").at("ops")) {
    calls[o.at("op").get<std::string>()] = o.value("kernel_calls_per_call", 0.0);
    bytes[o.at("op").get<std::string>()] =
        Bytes::from_json(o.value("bytes_per_call", nlohmann::json()));
  }
  for (int slot = 0; slot < per_test; ++slot) {
    const int region = 1 + test * per_test + slot;
    const auto it = p.regions.find(region);
    if (it == p.regions.end()) continue;
    OpInstructions o;
    o.op = names.at(slot).get<std::string>();
    // The runner's timer around each kernel call: an engine does not run it (count_marks.h).
    if (o.op == "timer") continue;
    o.vector = it->second.vector;
    o.other = it->second.insns;
    if (const auto i = ime2.find(std::to_string(region)); i != ime2.end()) {
      o.ime2 = i->value("instructions", 0.0);
      o.other -= i->value("calls", 0.0);
    }
    o.calls = calls.contains(o.op) ? calls[o.op] : 0;
    if (bytes.contains(o.op)) o.bytes = bytes[o.op];
    if (o.total() == 0) continue;
    phase.ime2 += o.ime2;
    phase.other += o.other;
    phase.vector += o.vector;
    phase.bytes += o.bytes;
    phase.ops.push_back(o);
  }
  return phase;
}

}  // namespace

ModelCountResult read_model_count(const ModelCountCase& c, const CountedProcess& p) {
  const std::string what = fmt::format("{} --model {} at VLEN {}", c.runner, c.model_id, c.vlen);
  if (!p.json.is_object() || !p.json.contains("count_marks") || !p.json.contains("results"))
    throw UserError(
        fmt::format("count --model: {}: no count_marks in the runner's JSON (a runner "
                    "older than --count-marks?)",
                    what));
  if (p.regions.empty())
    throw UserError(
        fmt::format("count --model: {}: the counting plugin reported no regions "
                    "(rebuild it: bash scripts/build-qemu-plugin.sh)",
                    what));
  ModelCountResult r;
  r.c = c;
  r.runner_json = p.json;
  r.path_taken = p.json.at("dispatch").value("path", "");
  r.emulated = p.json.at("dispatch").value("emulated", false);
  r.decode_weight_bytes = p.json.at("weights").value("decode_bytes_per_token", 0.0);
  r.kv_dtype = p.json.at("params").value("kv_dtype", "f16");
  const auto& marks = p.json.at("count_marks");
  const auto& results = p.json.at("results");
  if (marks.at("tests").size() != 2 || results.size() != 2)
    throw UserError(fmt::format("count --model: {}: expected a prefill and a decode test", what));
  r.prefill = read_phase(p, marks, 0, results.at(0), c.prefill_tokens);
  r.decode = read_phase(p, marks, 1, results.at(1), 1);
  r.wall_ns = p.process.wall_ns;
  return r;
}

void check_model_count_size(const k3model::ModelConfig& model, int prefill_tokens, int depth) {
  if (model.max_context <= 0) return;
  auto beyond = [&](const std::string& option, std::int64_t tokens) {
    if (tokens > model.max_context)
      throw UserError(
          fmt::format("{}: {} tokens of context, beyond {}'s context of {} tokens "
                      "(max_context in {})",
                      option, tokens, model.name, model.max_context, model.file));
  };
  beyond(fmt::format("--prefill {}", prefill_tokens), prefill_tokens);
  beyond(fmt::format("--depth {}", depth), std::int64_t{depth} + 1);  // the step's own token too
}

ModelCountResult count_model(const CountTools& tools, const ModelCountCase& c) {
  // Again here, for callers that did not check: no qemu process for a run the model cannot have.
  try {
    check_model_count_size(k3model::load_model_config(c.model_file), c.prefill_tokens, c.depth);
  } catch (const k3model::ModelConfigError& e) {
    throw UserError(fmt::format("--model: {}", e.what()));
  }
  const std::vector<std::string> args = {"--model",
                                         c.model_file,
                                         "--pp",
                                         std::to_string(c.prefill_tokens),
                                         "--tg",
                                         "1",
                                         "--tg-prompt",
                                         std::to_string(c.depth),
                                         "--context-fill",
                                         "synthetic",
                                         "--count-marks",
                                         "--reps",
                                         "1",
                                         "--warmup",
                                         "0",
                                         "--params",
                                         "workers=1",
                                         "--path",
                                         c.path == "ime2" ? "auto" : c.path,
                                         "--pool-wait",
                                         "park",
                                         "--json"};
  const std::map<std::string, std::string> env = {{"K3_IME2_ASSUME_MARCHID", "0x8000000041000002"}};
  const CountedProcess p = count_process(tools, qemu_cpu(c.vlen), c.runner, args, env);
  if (!p.ok)
    throw UserError(fmt::format("count --model: {} --model {} at VLEN {}: {}", c.runner, c.model_id,
                                c.vlen, p.reason));
  return read_model_count(c, p);
}

std::vector<CountResult> model_count_results(const ModelCountResult& r) {
  std::vector<CountResult> out;
  auto add = [&](const PhaseCount& phase, const std::string& op, const std::string& shape) {
    CountResult c;
    c.c = {r.c.runner, r.c.path, op, shape, r.c.vlen, nullptr};
    c.path_taken = r.path_taken;
    c.emulated = r.emulated;
    c.ime2 = phase.ime2;
    c.other = phase.other;
    c.vector = phase.vector;
    c.instructions = phase.total();
    c.units = units_per_call(op, shape);
    c.jitter = 0;  // the regions leave out the set-up, where the processes' variation lies
    c.runner_json = r.runner_json;
    c.wall_ns = r.wall_ns;
    // Stored with the process (its runner_json): the per-op split of this phase.
    nlohmann::json ops = nlohmann::json::object();
    const double per_token = 1.0 / std::max(1.0, phase.tokens);
    for (const auto& o : phase.ops)
      ops[o.op] = {{"ime2", o.ime2},
                   {"other", o.other},
                   {"vector", o.vector},
                   {"calls", o.calls},
                   {"bytes_per_token", o.bytes.scaled(per_token).json()}};
    c.runner_json["instruction_breakdown"] = {
        {"test", phase.test}, {"tokens", phase.tokens}, {"ops", ops}};
    c.runner_json["bytes_per_token"] = phase.bytes.scaled(per_token).json();
    c.method =
        "whole-model instruction count: one qemu-user process, the forward's kernel calls and its "
        "glue marked by the runner (k3bench --count-marks) and summed; set-up, context fill and "
        "the runner's per-call timer outside; interval: none (identical processes count the same "
        "forward exactly)";
    out.push_back(std::move(c));
  };
  add(r.prefill, "model_prefill",
      fmt::format("model={},tokens={}", r.c.model_id, r.c.prefill_tokens));
  add(r.decode, "model_decode", fmt::format("model={},depth={}", r.c.model_id, r.c.depth));
  return out;
}

}  // namespace k3bench
