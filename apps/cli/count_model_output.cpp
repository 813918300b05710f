#include "apps/cli/count_model_output.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/common/model/model_config.h"
#include "harness/host/bench/model_count.h"
#include "harness/host/bench/published.h"
#include "harness/host/bench/throughput_model.h"
#include "harness/host/store/database.h"

namespace k3cli {
namespace {

std::string label(const k3bench::ModelCountResult& r) {
  return fmt::format("{}@{}", r.c.path, r.c.vlen);
}

// Bytes one token streams, from the kernels' own accounting in the counted forward (weights,
// pairs, KV read and written, states: everything but the activations, which live in cache).
double bytes_per_token(const k3bench::PhaseCount& p) {
  return p.bytes.streamed() / std::max(1.0, p.tokens);
}

// The format's floor for one decode step at `depth` from the model config alone: every weight the
// step reads at 4.5 bits (the projections, the lm_head, the embedding row it looks up), the KV
// cache read at depth + 1 and the new token's K and V written, in the counted cache type, and the
// recurrent and convolution states read and written.
double floor_bytes_per_token(const k3model::ModelConfig& m, int depth, const std::string& kv) {
  const double weights = double(m.body_params()) + double(m.embedding_params()) + m.hidden;
  const double kv_bytes = kv == "f32" ? 4 : 2;
  const double cache = double(m.full_layers()) * 2.0 * double(m.kv_dim()) * (depth + 2) * kv_bytes;
  const double states = double(m.linear_layers()) * 2.0 * 4.0 *
                        (double(m.lin_v_heads) * m.lin_k_dim * m.lin_v_dim +
                         double(m.conv_kernel - 1) * m.conv_dim());
  return weights * 9.0 / 16.0 + cache + states;
}

k3bench::TokenCost cost_of(const k3bench::PhaseCount& p, double bytes) {
  const double t = std::max(1.0, p.tokens);
  return {(p.other - p.vector) / t, p.vector / t, p.ime2 / t, bytes};
}

std::string share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.1f}%", 100.0 * part / whole) : "";
}

void print_phase(const std::vector<k3bench::ModelCountResult>& all, bool decode) {
  // Rows: every op kind any count has, in the forward's order (glue last); columns: the counts.
  std::vector<std::string> ops;
  for (const auto& r : all)
    for (const auto& o : (decode ? r.decode : r.prefill).ops)
      if (std::find(ops.begin(), ops.end(), o.op) == ops.end()) ops.push_back(o.op);
  std::stable_partition(ops.begin(), ops.end(), [](const std::string& s) { return s != "glue"; });
  const auto& first = decode ? all.front().decode : all.front().prefill;
  std::cout << fmt::format("\n{} ({}), instructions per token and share:\n",
                           decode
                               ? fmt::format("decode step at depth {}", all.front().c.depth)
                               : fmt::format("prefill of {} tokens", all.front().c.prefill_tokens),
                           first.test);
  std::cout << fmt::format("{:<12}", "op");
  for (const auto& r : all) std::cout << fmt::format(" {:>20}", label(r));
  std::cout << "\n";
  for (const auto& op : ops) {
    std::cout << fmt::format("{:<12}", op);
    for (const auto& r : all) {
      const auto& p = decode ? r.decode : r.prefill;
      const auto it =
          std::find_if(p.ops.begin(), p.ops.end(), [&](const auto& o) { return o.op == op; });
      const double n = it == p.ops.end() ? 0 : it->total() / std::max(1.0, p.tokens);
      std::cout << fmt::format(" {:>12.0f} {:>7}", n, share(n, p.per_token()));
    }
    std::cout << "\n";
  }
  using Figure = double (*)(const k3bench::PhaseCount&);
  const std::pair<const char*, Figure> totals[] = {
      {"total", [](const k3bench::PhaseCount& p) { return p.total(); }},
      {"  ime2", [](const k3bench::PhaseCount& p) { return p.ime2; }},
      {"  other", [](const k3bench::PhaseCount& p) { return p.other; }},
      {"  vector", [](const k3bench::PhaseCount& p) { return p.vector; }}};
  for (const auto& [row, figure] : totals) {
    std::cout << fmt::format("{:<12}", row);
    for (const auto& r : all) {
      const auto& p = decode ? r.decode : r.prefill;
      std::cout << fmt::format(" {:>12.0f} {:>7}", figure(p) / std::max(1.0, p.tokens), "");
    }
    std::cout << "\n";
  }
}

// Bytes per token of each op (the kernels' accounting) and of the phase by source; for a decode
// step also the floor from the model config and how far the streamed bytes are above it.
void print_bytes(const std::vector<k3bench::ModelCountResult>& all, bool decode,
                 const k3model::ModelConfig& model) {
  std::vector<std::string> ops;
  for (const auto& r : all)
    for (const auto& o : (decode ? r.decode : r.prefill).ops)
      if (o.bytes.total() > 0 && std::find(ops.begin(), ops.end(), o.op) == ops.end())
        ops.push_back(o.op);
  std::cout << fmt::format(
      "\n{}, bytes per token (read and written, by the kernels' accounting):\n",
      decode ? "decode step" : "prefill");
  std::cout << fmt::format("{:<12}", "op");
  for (const auto& r : all) std::cout << fmt::format(" {:>16}", label(r));
  std::cout << "\n";
  const auto row = [&](const std::string& name, auto&& figure) {
    std::cout << fmt::format("{:<12}", name);
    for (const auto& r : all) {
      const auto& p = decode ? r.decode : r.prefill;
      std::cout << fmt::format(" {:>16.0f}", figure(p) / std::max(1.0, p.tokens));
    }
    std::cout << "\n";
  };
  for (const auto& op : ops)
    row(op, [&](const k3bench::PhaseCount& p) {
      const auto it =
          std::find_if(p.ops.begin(), p.ops.end(), [&](const auto& o) { return o.op == op; });
      return it == p.ops.end() ? 0.0 : it->bytes.total();
    });
  row("weights", [](const k3bench::PhaseCount& p) { return p.bytes.weights; });
  row("metadata", [](const k3bench::PhaseCount& p) { return p.bytes.metadata; });
  row("kv_read", [](const k3bench::PhaseCount& p) { return p.bytes.kv_read; });
  row("kv_write", [](const k3bench::PhaseCount& p) { return p.bytes.kv_write; });
  row("state", [](const k3bench::PhaseCount& p) { return p.bytes.state; });
  row("activations", [](const k3bench::PhaseCount& p) { return p.bytes.activations; });
  row("streamed", [](const k3bench::PhaseCount& p) { return p.bytes.streamed(); });
  if (!decode) return;
  std::cout << fmt::format("{:<12}", "floor");
  for (const auto& r : all)
    std::cout << fmt::format(" {:>16.0f}", floor_bytes_per_token(model, r.c.depth, r.kv_dtype));
  std::cout << fmt::format("\n{:<12}", "over floor");
  for (const auto& r : all) {
    const double floor = floor_bytes_per_token(model, r.c.depth, r.kv_dtype);
    std::cout << fmt::format(" {:>15.3f}%", 100.0 * (bytes_per_token(r.decode) / floor - 1.0));
  }
  std::cout << "\n";
}

k3model::ModelConfig load_counted_model(const AppContext& ctx, const ModelCountOptions& o) {
  if (o.prefill_tokens < 1 || o.depth < 1)
    throw k3bench::UserError("--prefill/--depth: at least 1 token each");
  k3model::ModelConfig model;
  try {
    model = k3model::load_model_config(k3model::resolve_model_path(o.model, ctx.models_dir()));
  } catch (const k3model::ModelConfigError& e) {
    throw k3bench::UserError(fmt::format("--model: {}", e.what()));
  }
  k3bench::check_model_count_size(model, o.prefill_tokens, o.depth);
  return model;
}

// One qemu process per runner and VLEN, `jobs` at a time, each told as it finishes. Returns the
// finished counts in case order; `failure` is the first case's that failed, if one did.
std::vector<k3bench::ModelCountResult> count_model_cases(
    const AppContext& ctx, const ModelCountOptions& o, const k3model::ModelConfig& model,
    const std::vector<std::pair<std::string, std::string>>& runners, const std::vector<int>& vlens,
    const k3bench::CountTools& tools, std::exception_ptr& failure) {
  std::vector<k3bench::ModelCountCase> todo;
  for (const auto& [path, bin] : runners)
    for (int vlen : vlens)
      todo.push_back({bin, path, model.file, model.id, o.prefill_tokens, o.depth, vlen});
  if (!ctx.json)
    std::cout << fmt::format(
                     "counting {}: a prefill of {} tokens and a decode step at depth {}, "
                     "{} qemu-user process(es), one worker each\n",
                     model.id, o.prefill_tokens, o.depth, todo.size())
              << std::flush;
  std::vector<std::optional<k3bench::ModelCountResult>> results(todo.size());
  std::mutex mu;
  const int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  failure = k3bench::for_each_in_parallel(todo.size(), jobs, [&](std::size_t i) {
    auto r = k3bench::count_model(tools, todo[i]);
    std::lock_guard lock(mu);
    if (!ctx.json)
      std::cout << fmt::format(
                       "  {} {}: prefill {:.0f}, decode {:.0f} instructions per "
                       "token ({:.0f} s)\n",
                       r.c.path, r.c.vlen, r.prefill.per_token(), r.decode.per_token(),
                       r.wall_ns * 1e-9)
                << std::flush;
    results[i] = std::move(r);
  });
  std::vector<k3bench::ModelCountResult> done;
  for (auto& r : results)
    if (r) done.push_back(std::move(*r));
  return done;
}

// A run per runner, as the op counts are stored; their ids go to out["stored_runs"].
void store_model_counts(const AppContext& ctx, k3store::Connection& db,
                        const std::vector<k3bench::ModelCountResult>& done, nlohmann::json& out) {
  std::map<std::string, std::vector<const k3bench::ModelCountResult*>> by_runner;
  for (const auto& r : done) by_runner[r.c.runner].push_back(&r);
  for (const auto& [runner, list] : by_runner) {
    std::vector<k3bench::CountResult> rows;
    for (const auto* r : list)
      for (auto& c : k3bench::model_count_results(*r)) rows.push_back(std::move(c));
    const std::string run_uuid = k3bench::store_counts(db, "k3tune count --model", rows);
    if (!ctx.json) std::cout << fmt::format("stored: run {} ({})\n", run_uuid, ctx.db_path());
    out["stored_runs"].push_back(run_uuid);
  }
}

// Each count's phases, with their per-op breakdown per token.
nlohmann::json counts_json(const std::vector<k3bench::ModelCountResult>& done) {
  nlohmann::json counts = nlohmann::json::array();
  for (const auto& r : done) {
    for (const bool decode : {false, true}) {
      const auto& p = decode ? r.decode : r.prefill;
      nlohmann::json ops = nlohmann::json::array();
      for (const auto& op : p.ops)
        ops.push_back({{"op", op.op},
                       {"calls", op.calls},
                       {"bytes_per_token", op.bytes.scaled(1.0 / std::max(1.0, p.tokens)).json()},
                       {"ime2", op.ime2},
                       {"other", op.other},
                       {"vector", op.vector},
                       {"per_token", op.total() / std::max(1.0, p.tokens)}});
      counts.push_back({{"path", r.c.path},
                        {"bytes_per_token", p.bytes.scaled(1.0 / std::max(1.0, p.tokens)).json()},
                        {"ran", r.emulated ? r.path_taken + "(emu)" : r.path_taken},
                        {"vlen", r.c.vlen},
                        {"phase", decode ? "decode" : "prefill"},
                        {"test", p.test},
                        {"tokens", p.tokens},
                        {"ime2", p.ime2},
                        {"other", p.other},
                        {"vector", p.vector},
                        {"instructions", p.total()},
                        {"per_token", p.per_token()},
                        {"ops", ops}});
    }
  }
  return counts;
}

// The modelled K3 tokens/s of the counts at the K3's VLEN (1024), printed unless --json.
nlohmann::json modelled_k3(const AppContext& ctx, const ModelCountOptions& o,
                           const k3model::ModelConfig& model, const k3bench::ThroughputFacts& facts,
                           const std::string& board_file,
                           const std::vector<const k3bench::ModelCountResult*>& k3) {
  nlohmann::json modelled = nlohmann::json::array();
  if (!ctx.json && !k3.empty())
    std::cout << fmt::format(
        "\nModelled K3 tokens/s -- a MODEL from the counts above, not a measurement "
        "({} [throughput_model]):\n{:<14} {:<16} {:>13} {:>12} {:>14} {:>13}  {}\n",
        board_file, "counts", "test", "cycles/token", "compute t/s", "bandwidth t/s",
        "modelled t/s", "bound");
  for (const auto* r : k3) {
    for (const bool decode : {false, true}) {
      const auto& p = decode ? r->decode : r->prefill;
      const double bytes = bytes_per_token(p);
      const auto e = k3bench::estimate_throughput(facts, cost_of(p, bytes));
      const std::string test =
          decode ? fmt::format("tg@d{}", o.depth) : fmt::format("pp{}", o.prefill_tokens);
      modelled.push_back({{"path", r->c.path},
                          {"test", test},
                          {"bytes_per_token", bytes},
                          {"floor_bytes_per_token", decode ? nlohmann::json(floor_bytes_per_token(
                                                                 model, o.depth, r->kv_dtype))
                                                           : nlohmann::json(nullptr)},
                          {"cycles_per_token", e.cycles_per_token},
                          {"compute_tokens_per_s", e.compute_tokens_per_s},
                          {"bandwidth_tokens_per_s", e.bandwidth_tokens_per_s},
                          {"tokens_per_s", e.tokens_per_s},
                          {"bound", e.bound}});
      if (!ctx.json)
        std::cout << fmt::format("{:<14} {:<16} {:>13.0f} {:>12.1f} {:>14.1f} {:>13.1f}  {}\n",
                                 label(*r), test, e.cycles_per_token, e.compute_tokens_per_s,
                                 e.bandwidth_tokens_per_s, e.tokens_per_s, e.bound);
    }
  }
  return modelled;
}

// The model's assumptions and facts, printed under the modelled figures when there are any.
nlohmann::json facts_of_the_model(const AppContext& ctx, const k3bench::ThroughputFacts& facts,
                                  bool modelled) {
  nlohmann::json fj = nlohmann::json::array();
  for (const auto& f : facts.facts)
    fj.push_back({{"name", f.name}, {"value", f.value}, {"source", f.source}});
  if (!ctx.json && modelled) {
    std::cout << "Assumptions and facts of the model:\n";
    for (const auto& f : facts.facts)
      std::cout << fmt::format("  {} = {}: {}\n", f.name, f.value, f.source);
  }
  return fj;
}

// Published figures of other engines for this model: their own table, never mixed with ours.
nlohmann::json published_for_model(const AppContext& ctx,
                                   const std::vector<k3bench::PublishedFigure>& published,
                                   const std::string& model_id) {
  nlohmann::json pj = nlohmann::json::array();
  for (const auto& f : published) {
    if (f.model != model_id) continue;
    pj.push_back({{"test", f.test},
                  {"engine", f.engine},
                  {"weights", f.weights},
                  {"tokens_per_s", f.text()},
                  {"source", f.citation()}});
  }
  if (!ctx.json && !pj.empty()) {
    std::cout << fmt::format(
        "\nPublished K3 figures for {} (other engines, measured by their authors "
        "on their boards; not k3tune results):\n",
        model_id);
    for (const auto& f : pj)
      std::cout << fmt::format(
          "  {:<8} {:<30} {:<16} {:>12} t/s  ({})\n", f["test"].get<std::string>(),
          f["engine"].get<std::string>(), f["weights"].get<std::string>(),
          f["tokens_per_s"].get<std::string>(), f["source"].get<std::string>());
  }
  return pj;
}

}  // namespace

void run_model_count(const AppContext& ctx, const ModelCountOptions& o,
                     const std::vector<std::pair<std::string, std::string>>& runners,
                     const std::vector<int>& vlens, const k3bench::CountTools& tools) {
  const k3model::ModelConfig model = load_counted_model(ctx, o);
  // Facts and published figures are read before hours of counting, so a bad file stops at once.
  const std::string board_file = ctx.root + "/configs/boards/k3.toml";
  const k3bench::ThroughputFacts facts = k3bench::load_throughput_facts(board_file);
  const auto published = k3bench::load_published(ctx.root + "/configs/published/k3.toml");
  std::unique_ptr<k3store::Connection> db;
  if (o.store) {
    db = k3store::open_for_writing(ctx.db_path());
  }
  std::exception_ptr failure;
  const std::vector<k3bench::ModelCountResult> done =
      count_model_cases(ctx, o, model, runners, vlens, tools, failure);
  nlohmann::json out = {{"model", model.id},
                        {"prefill_tokens", o.prefill_tokens},
                        {"depth", o.depth},
                        {"counts", nlohmann::json::array()},
                        {"modelled", nlohmann::json::array()}};
  // What finished is stored even when a case failed: nothing measured is lost.
  if (db) store_model_counts(ctx, *db, done, out);
  if (failure) std::rethrow_exception(failure);

  out["counts"] = counts_json(done);
  if (!ctx.json && !done.empty()) {
    print_phase(done, false);
    print_phase(done, true);
    print_bytes(done, false, model);
    print_bytes(done, true, model);
  }
  // The model: counts at the K3's VLEN (1024) only.
  std::vector<const k3bench::ModelCountResult*> k3;
  for (const auto& r : done)
    if (r.c.vlen == 1024) k3.push_back(&r);
  out["modelled"] = modelled_k3(ctx, o, model, facts, board_file, k3);
  out["facts"] = facts_of_the_model(ctx, facts, !k3.empty());
  out["published"] = published_for_model(ctx, published, model.id);
  if (ctx.json) std::cout << out.dump(2) << "\n";
}

}  // namespace k3cli
