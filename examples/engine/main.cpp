// What an inference engine does to get tuned kernels: pack its weights with the "auto" entry
// point and let the library load the board's tuning table (K3_TUNING_TABLE, or --table here through
// k3k::load_tuning_table). Nothing else changes: the calls are the same with or without a table.
//
//   k3_example_engine [--table FILE] [--k K] [--n N] [--m M]
//
// Prints the layer and parameters each Linear uses (and where they came from) and a checksum of
// the outputs, which a table never changes: tuned parameters change speed, not results.
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "k3k/linear_auto.h"
#include "k3k/quantize.h"
#include "k3k/tuning.h"
#include "k3k/w4b64.h"
#include "k3k/worker_pool.h"

namespace {

// FNV-1a, 64 bits, over the outputs' bytes (the offset basis and prime of the FNV specification).
std::uint64_t fnv1a(const std::vector<float>& v) {
  std::uint64_t h = 14695981039346656037ull;
  const auto* p = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

void print_choice(const char* what, const k3k::LinearAutoChoice& c) {
  std::printf("%s: tile_n %d (%s), workers %s (%s)\n", what, c.tiling.tile_n, c.source.at("tile_n").c_str(),
              c.tiling.max_workers == 0 ? "all" : std::to_string(c.tiling.max_workers).c_str(),
              c.source.at("workers").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t k = 2048, n = 2048, m = 16;
  std::string table, dump;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--table") table = argv[i + 1];
    else if (flag == "--k") k = std::atoll(argv[i + 1]);
    else if (flag == "--n") n = std::atoll(argv[i + 1]);
    else if (flag == "--m") m = std::atoll(argv[i + 1]);
    else if (flag == "--dump") dump = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--table FILE] [--k K] [--n N] [--m M] [--dump FILE]\n", argv[0]);
      return 2;
    }
  }
  if (k <= 0 || k % 64 != 0 || n <= 0 || m <= 0) {
    std::fprintf(stderr, "k3_example_engine: --k must be a positive multiple of 64, --n and --m positive\n");
    return 2;
  }
  // 1. The table, once, before any kernel runs (a refused table leaves the defaults).
  if (!table.empty()) k3k::load_tuning_table(table);
  const k3k::TableLoad load = k3k::last_table_load();
  std::printf("table: %s\n", load.source.empty() ? "none" : load.loaded ? load.source.c_str() : "refused, defaults");

  // 2. Weights: quantised once, packed for the layer the table (or the dispatcher) picks.
  const auto w = k3k::make_synthetic_weights(n, k, {.seed = 1});
  const k3k::AutoLinearWeights packed = k3k::pack_linear_auto(k3k::quantize_w4b64_hqq(w.span(), n, k));
  std::printf("layer: %s (%s)\n", k3k::to_string(packed.path), packed.path_reason.c_str());
  print_choice("decode", packed.decode);
  std::size_t bucket = 0;
  while (bucket + 1 < packed.prefill.size() && (std::int64_t{1} << bucket) < m) ++bucket;
  print_choice("prefill", packed.prefill[bucket]);

  // 3. The engine's own pool and activations; the calls are the same with or without a table.
  k3k::WorkerPool pool(0);  // every CPU this process may use
  std::vector<float> x(static_cast<std::size_t>(m * k));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u % 2001) / 1000.0 - 1.0);
  k3k::PackedActivations decode_in = k3k::make_packed_activations(1, k, k3k::ActivationLayout::kRowK256);
  k3k::quantize_pack_decode(packed.path, x.data(), decode_in);
  k3k::PackedActivations prefill_in = k3k::make_packed_activations(m, k, k3k::ActivationLayout::kRowsM4);
  k3k::quantize_pack_prefill(packed.path, x.data(), prefill_in, pool);
  std::vector<float> y_decode(static_cast<std::size_t>(n)), y_prefill(static_cast<std::size_t>(m * n));
  k3k::linear_decode_auto(packed, decode_in, {}, y_decode.data(), pool);
  k3k::linear_prefill_auto(packed, prefill_in, {}, y_prefill.data(), pool);
  std::printf("checksum: decode %016" PRIx64 ", prefill %016" PRIx64 "\n", fnv1a(y_decode), fnv1a(y_prefill));
  // --dump: the decode then the prefill outputs as raw floats, so a checker can hash them itself.
  if (!dump.empty()) {
    std::FILE* f = std::fopen(dump.c_str(), "wb");
    const bool ok = f != nullptr && std::fwrite(y_decode.data(), sizeof(float), y_decode.size(), f) == y_decode.size() &&
                    std::fwrite(y_prefill.data(), sizeof(float), y_prefill.size(), f) == y_prefill.size();
    if (f != nullptr) std::fclose(f);
    if (!ok) {
      std::fprintf(stderr, "k3_example_engine: --dump %s: cannot write\n", dump.c_str());
      return 1;
    }
  }
  return 0;
}
