// The "auto" Linear entry points (k3k/linear_auto.h): table lookups happen at pack time, once per
// shape; a call reads what was decided.
#include <stdexcept>

#include <fmt/format.h>

#include "k3k/dispatch.h"
#include "k3k/linear_auto.h"

namespace k3k {
namespace {

constexpr std::size_t kPrefillBuckets = 21;

std::int64_t as_int(const TuningValue& v) { return std::get<std::int64_t>(v); }
const std::string& as_word(const TuningValue& v) { return std::get<std::string>(v); }

// The decode_path gate's layer for these weights, when that layer is usable here; otherwise the
// best usable layer stays and the reason says what the gate wanted and why it could not have it.
//
// The weights are packed once, for one layer (the ime2 layout, or the rvv row tiles), and prefill
// runs on that same packing. When decode and prefill would prefer different layers, decode wins:
// every generated token reads every weight once through linear_decode, so for generation decode
// is most of a weight's traffic and time, while a prompt's prefill is one call per M rows. An
// engine that is mostly prefill names the layer for the shape with a table entry (which wins
// over the gate). The prefill_path gate is not read by the loader.
void follow_decode_path_gate(const DecodePathGate& gate, const W4B64Storage& storage,
                             AutoLinearWeights& w) {
  const std::int64_t n = storage.n, k = storage.k;
  const bool ime2 = gate.takes_ime2(n, k);
  const KernelPath wanted = ime2 ? KernelPath::kIme2 : KernelPath::kRvv;
  std::string why = "use " + gate.use;
  if (gate.use == "threshold") {
    why = k < gate.k_min       ? fmt::format("K {} < k_min {}", k, gate.k_min)
          : n * k < gate.w_min ? fmt::format("N*K {} < w_min {}", n * k, gate.w_min)
                               : fmt::format("K {} >= k_min {}, N*K {} >= w_min {}", k, gate.k_min,
                                             n * k, gate.w_min);
  }
  try {
    w.path = decide_path(wanted).path;
    w.path_reason = fmt::format("table gates/decode_path: {} ({})", to_string(wanted), why);
  } catch (const std::invalid_argument& e) {
    w.path_reason = fmt::format("table gates/decode_path chose {} ({}), refused: {}; {}",
                                to_string(wanted), why, e.what(), w.path_reason);
  }
}

}  // namespace

LinearAutoChoice choose_linear(const TuningTable* table, std::string_view op, KernelPath path,
                               const std::map<std::string, std::int64_t>& shape) {
  LinearAutoChoice c;
  const bool decode = op == "linear_decode";
  for (const char* name : {"tile_n", "workers", "weight_rows", "ukernel"}) c.source[name] = "default";
  if (decode)
    for (const char* name : {"accumulate", "tcm", "slab_rows", "tcm_workers", "pairing", "prefetch"}) c.source[name] = "default";
  if (table == nullptr) return c;
  if (decode) {
    if (const auto& gate = table->tcm_decode_gate()) {
      if (gate->use == "never") c.tcm.use = TcmUse::kOff;
      if (gate->use == "always") c.tcm.use = TcmUse::kOn;
      if (gate->k_min) c.tcm.k_min = *gate->k_min;
      if (gate->b_min_bytes) c.tcm.b_min = *gate->b_min_bytes;
      c.source["tcm_gate"] = "table gates";
    }
  }
  const TuningEntry* e = table->find(op, path, shape);
  if (e == nullptr) return c;
  c.entry = e->id;
  const std::string from = "table " + e->id;
  for (const auto& [name, value] : e->params) {
    if (name == "tile_n") c.tiling.tile_n = static_cast<int>(as_int(value));
    else if (name == "workers") c.tiling.max_workers = static_cast<int>(as_int(value));
    else if (name == "weight_rows") c.weight_rows = static_cast<int>(as_int(value));
    else if (name == "ukernel") c.tiling.ukernel = as_word(value);  // the table outlives the choice
    else if (!decode) continue;
    else if (name == "accumulate") c.accumulation = as_word(value) == "fp16" ? Accumulation::kFp16BlockScale : Accumulation::kInt32;
    else if (name == "tcm") {
      const std::string& w = as_word(value);
      c.tcm.use = w == "on" ? TcmUse::kOn : w == "off" ? TcmUse::kOff : TcmUse::kAuto;
      c.tcm.table_disables = w == "off";
    } else if (name == "slab_rows") c.tcm.slab_rows = static_cast<int>(as_int(value));
    else if (name == "tcm_workers") c.tcm.compute_workers = static_cast<int>(as_int(value));
    else if (name == "pairing") c.tcm.pairing = as_int(value) != 0;
    else if (name == "prefetch") c.tiling.prefetch_bytes = static_cast<int>(as_int(value));
    else if (name == "k_min") c.tcm.k_min = as_int(value);
    else if (name == "b_min_kib") c.tcm.b_min = as_int(value) * 1024;
    else continue;
    c.source[name] = from;
  }
  // fp16 accumulation needs the IME2 weights; a table cannot ask for it elsewhere (the loader
  // refuses such an entry), so this only guards a layer that changed since.
  if (path != KernelPath::kIme2) c.accumulation = Accumulation::kInt32;
  return c;
}

AutoLinearWeights pack_linear_auto(const W4B64Storage& storage, std::int64_t tcm_block_bytes) {
  AutoLinearWeights w;
  TuningTableUse use;
  w.table = use.table();
  const std::map<std::string, std::int64_t> decode_shape = {{"k", storage.k}, {"n", storage.n}};
  PathDecision best = decide_path();
  w.path = best.path;
  w.path_reason = best.reason;
  if (w.table != nullptr) {
    const TuningEntry* named = nullptr;
    for (KernelPath p : {KernelPath::kIme2, KernelPath::kRvv, KernelPath::kGeneric}) {
      named = w.table->find("linear_decode", p, decode_shape);
      if (named != nullptr && named->shape_class.at("k") == storage.k && named->shape_class.at("n") == storage.n) break;
      named = nullptr;
    }
    bool decided = false;
    if (named != nullptr) {
      try {
        w.path = decide_path(named->path).path;
        w.path_reason = "table entry " + named->id;
        decided = true;
      } catch (const std::invalid_argument&) {
        // The table's layer is not usable in this binary: the gate, else the best usable one.
      }
    }
    if (!decided && w.table->decode_path_gate())
      follow_decode_path_gate(*w.table->decode_path_gate(), storage, w);
  }
  w.decode = choose_linear(w.table, "linear_decode", w.path, decode_shape);
  // The layout the layer reads best here, with the table's rows per tile when it names them.
  int rows = 0;
  if (w.path == KernelPath::kRvv) {
    rows = w.decode.weight_rows != 0 ? w.decode.weight_rows
                                     : default_weight_rows(w.path, storage.n, storage.k, tcm_block_bytes);
  }
  w.packed = pack_w4b64_for(w.path, pack_w4b64_generic(storage), rows);
  for (std::size_t b = 0; b < kPrefillBuckets; ++b)
    w.prefill[b] = choose_linear(w.table, "linear_prefill", w.path,
                                 {{"m", std::int64_t{1} << b}, {"k", storage.k}, {"n", storage.n}});
  return w;
}

void prepare_tcm(AutoLinearWeights& w, const TcmWorkspace& workspace, int pool_size) {
  w.tcm_gate = decide_tcm_decode(w.path, w.packed, &workspace, w.decode.tcm, pool_size);
}

void linear_decode_auto(const AutoLinearWeights& w, const PackedActivations& a, const LinearEpilogue& ep,
                        float* out, WorkerPool& pool, TcmWorkspace* workspace) {
  TuningTableUse use;  // a table load meanwhile is refused
  LinearDecodeOptions options;
  options.accumulation = w.decode.accumulation;
  if (workspace != nullptr && w.tcm_gate) {
    options.tcm_workspace = workspace;
    options.tcm_params = &w.decode.tcm;
    options.tcm_gate = &*w.tcm_gate;
  }
  linear_decode_w4b64(w.path, a, w.packed, ep, out, pool, w.decode.tiling, options);
}

void linear_prefill_auto(const AutoLinearWeights& w, const PackedActivations& a, const LinearEpilogue& ep,
                         float* out, WorkerPool& pool) {
  TuningTableUse use;
  std::size_t bucket = 0;
  while (bucket + 1 < kPrefillBuckets && (std::int64_t{1} << bucket) < a.m) ++bucket;
  linear_prefill_w4b64(w.path, a, w.packed, ep, out, pool, w.prefill[bucket].tiling);
}

}  // namespace k3k
