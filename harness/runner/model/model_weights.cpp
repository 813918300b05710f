#include "harness/runner/model/model_weights.h"

#include <cmath>
#include <cstring>

#include "k3k/linear.h"
#include "k3k/packed_form.h"

namespace k3runner::model {
namespace {

// splitmix64: a fast, well-mixed generator; one per tile, seeded from (matrix seed, tile).
struct TileRandom {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Near-normal (Irwin-Hall of 4, unit variance) plus rare 12x outliers, the heavy tail that makes
  // per-block asymmetric scales worthwhile. Exact normality does not matter here; speed does.
  float weight(double stddev) {
    const std::uint64_t r = next();
    double u = 0.0;
    for (int i = 0; i < 4; ++i) u += static_cast<double>((r >> (16 * i)) & 0xFFFF) * 0x1.0p-16;
    const double z = (u - 2.0) * 1.7320508075688772;
    const bool outlier = (next() & 1023) < 2;
    return static_cast<float>(z * stddev * (outlier ? 12.0 : 1.0));
  }
};

std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
  TileRandom r{a * 0x100000001B3ull ^ b};
  return r.next();
}

k3k::AlignedBuffer<float> vector_of(std::int64_t n, std::uint64_t seed, double mean, double sd) {
  k3k::AlignedBuffer<float> v(static_cast<std::size_t>(n));
  TileRandom r{seed};
  for (auto& x : v) x = static_cast<float>(mean) + r.weight(sd);
  return v;
}

// Matrix ids within a layer (seeds).
enum Role : std::uint64_t { kQ = 1, kK, kV, kO, kQkv, kZ, kA, kB, kOut, kGate, kUp, kDown, kNorms };

}  // namespace

k3k::W4B64Packed synthetic_matrix(std::int64_t n, std::int64_t k, std::uint64_t seed, double stddev,
                                  int hqq_iterations, k3k::WorkerPool& pool) {
  k3k::W4B64Packed p;
  p.n = n;
  p.k = k;
  const std::int64_t nb = k / k3k::kW4BlockK, tiles = p.row_tiles();
  const std::int64_t tile_codes = nb * 32 * k3k::kW4RowTile, tile_pairs = 2 * nb * k3k::kW4RowTile;
  p.codes = k3k::AlignedBuffer<std::uint8_t>(static_cast<std::size_t>(tiles * tile_codes));
  p.pairs = k3k::AlignedBuffer<k3k::fp16_t>(static_cast<std::size_t>(tiles * tile_pairs));
  pool.parallel_for(tiles, [&](std::int64_t t, int) {
    const std::int64_t rows = std::min<std::int64_t>(k3k::kW4RowTile, n - t * k3k::kW4RowTile);
    std::vector<float> w(static_cast<std::size_t>(rows * k));
    TileRandom rng{mix(seed, static_cast<std::uint64_t>(t))};
    for (auto& x : w) x = rng.weight(stddev);
    const k3k::W4B64Packed tile =
        k3k::pack_w4b64_generic(k3k::quantize_w4b64_hqq(w, rows, k, hqq_iterations));
    std::memcpy(p.codes.data() + t * tile_codes, tile.codes.data(), tile.codes.size_bytes());
    std::memcpy(p.pairs.data() + t * tile_pairs, tile.pairs.data(), tile.pairs.size_bytes());
  });
  return p;
}

namespace {

// codes 8 (q - 8 = 0) and pairs 0: a zero matrix in kRowTile32.
k3k::W4B64Packed zero_matrix(std::int64_t n, std::int64_t k) {
  k3k::W4B64Packed p;
  p.n = n;
  p.k = k;
  const auto tiles = static_cast<std::size_t>(p.row_tiles());
  p.codes = k3k::AlignedBuffer<std::uint8_t>::for_overwrite(
      tiles * static_cast<std::size_t>(p.tile_code_bytes()));
  std::memset(p.codes.data(), 0x88, p.codes.size_bytes());
  p.pairs = k3k::AlignedBuffer<k3k::fp16_t>(2 * tiles * static_cast<std::size_t>(p.tile_pairs()));
  return p;
}

}  // namespace

std::int64_t ModelWeights::bytes() const {
  std::int64_t b =
      embedding.bytes() + lm_head.bytes() + static_cast<std::int64_t>(final_norm.size_bytes());
  for (const auto& l : layers) {
    for (const auto* m : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.gdn.qkv, &l.gdn.z,
                          &l.gdn.a, &l.gdn.b, &l.gdn.out, &l.gate, &l.up, &l.down})
      b += m->bytes();
    for (const auto* v : {&l.input_norm, &l.post_norm, &l.attn.q_norm, &l.attn.k_norm, &l.gdn.conv,
                          &l.gdn.a_log, &l.gdn.dt_bias, &l.gdn.norm})
      b += static_cast<std::int64_t>(v->size_bytes());
  }
  return b;
}

namespace {

// The matrices and vectors of a layer, in the order for_each_buffer and describe walk them.
template <typename Layer, typename Matrix, typename Vector>
void walk_layer(Layer& l, Matrix&& matrix, Vector&& vector) {
  for (auto* m : {&l.attn.q, &l.attn.k, &l.attn.v, &l.attn.o, &l.gdn.qkv, &l.gdn.z, &l.gdn.a,
                  &l.gdn.b, &l.gdn.out, &l.gate, &l.up, &l.down})
    matrix(*m);
  for (auto* v : {&l.input_norm, &l.post_norm, &l.attn.q_norm, &l.attn.k_norm, &l.gdn.conv,
                  &l.gdn.a_log, &l.gdn.dt_bias, &l.gdn.norm})
    vector(*v);
}

}  // namespace

void ModelWeights::for_each_buffer(const std::function<void(void*, std::size_t)>& fn) {
  auto matrix = [&](k3k::W4B64Packed& m) {
    fn(m.codes.data(), m.codes.size_bytes());
    fn(m.pairs.data(), m.pairs.size_bytes());
  };
  auto vector = [&](k3k::AlignedBuffer<float>& v) { fn(v.data(), v.size_bytes()); };
  matrix(embedding);
  matrix(lm_head);
  vector(final_norm);
  for (auto& l : layers) walk_layer(l, matrix, vector);
}

void ModelWeights::view_buffers(const std::function<const void*(std::size_t)>& at,
                                const std::shared_ptr<const void>& owner) {
  // Views are read-only by contract: the forward reads weights and never writes them.
  auto view = [&]<typename T>(k3k::AlignedBuffer<T>& b) {
    const void* p = at(b.size_bytes());
    if (b.size() > 0)
      b = k3k::AlignedBuffer<T>::view_of(static_cast<T*>(const_cast<void*>(p)), b.size(), owner);
  };
  auto matrix = [&](k3k::W4B64Packed& m) {
    view(m.codes);
    view(m.pairs);
  };
  auto vector = [&](k3k::AlignedBuffer<float>& v) { view(v); };
  matrix(embedding);
  matrix(lm_head);
  vector(final_norm);
  for (auto& l : layers) walk_layer(l, matrix, vector);
}

std::string ModelWeights::describe() const {
  std::string s;
  auto matrix = [&](const k3k::W4B64Packed& m) {
    s += std::to_string(m.n) + "x" + std::to_string(m.k) + ":" + k3k::to_string(m.layout) + ":" +
         std::to_string(m.row_tile) + ";";
  };
  auto vector = [&](const k3k::AlignedBuffer<float>& v) { s += std::to_string(v.size()) + ";"; };
  matrix(embedding);
  matrix(lm_head);
  vector(final_norm);
  for (const auto& l : layers) walk_layer(l, matrix, vector);
  return s;
}

std::int64_t ModelWeights::decode_bytes_per_token() const {
  const std::int64_t lookup =
      lm_head.n > 0 ? embedding.bytes() : 0;  // untied: the table is only looked up
  return bytes() - lookup;
}

ModelWeights make_synthetic_weights(const k3model::ModelConfig& c, const WeightOptions& o,
                                    k3k::KernelPath path, k3k::WorkerPool& pool) {
  constexpr double kStd = 0.02;  // HF's initializer_range for Qwen3 / Qwen3.5
  auto generate = [&](std::int64_t n, std::int64_t k, std::uint64_t seed) {
    if (o.unfilled) return k3k::unfilled_packing(n, k, {});  // kRowTile32
    return o.zero ? zero_matrix(n, k) : synthetic_matrix(n, k, seed, kStd, o.hqq_iterations, pool);
  };
  // Packed as an engine packs them at load time (k3k::pack_w4b64_for, the layer's default rows).
  auto pack = [&](k3k::W4B64Packed w) {
    if (o.unfilled) return k3k::unfilled_packing(w.n, w.k, k3k::packed_form_for(path, w.n, w.k));
    return k3k::pack_w4b64_for(path, std::move(w));
  };
  auto matrix = [&](std::int64_t n, std::int64_t k, std::uint64_t seed) {
    return pack(generate(n, k, seed));
  };
  ModelWeights w;
  const std::int64_t h = c.hidden;
  // A tied embedding is the lm_head: packed for the path too (the lookup reads that layout); an
  // untied one is only looked up and stays kRowTile32.
  w.embedding = generate(c.vocab, h, mix(o.seed, 1u << 20));
  if (c.tied_embeddings)
    w.embedding = pack(std::move(w.embedding));
  else
    w.lm_head = matrix(c.vocab, h, mix(o.seed, 2u << 20));
  w.final_norm = vector_of(h, mix(o.seed, 3u << 20), 1.0, 0.1);
  w.layers.resize(static_cast<std::size_t>(c.layers));
  for (int i = 0; i < c.layers; ++i) {
    LayerWeights& l = w.layers[static_cast<std::size_t>(i)];
    auto seed = [&](Role r) { return mix(o.seed, (static_cast<std::uint64_t>(i) << 8) | r); };
    l.linear = c.is_linear(i);
    l.input_norm = vector_of(h, seed(kNorms), 1.0, 0.1);
    l.post_norm = vector_of(h, seed(kNorms) + 1, 1.0, 0.1);
    if (l.linear) {
      const std::int64_t vd = c.lin_value_dim();
      l.gdn.qkv = matrix(c.conv_dim(), h, seed(kQkv));
      l.gdn.z = matrix(vd, h, seed(kZ));
      l.gdn.a = matrix(c.lin_v_heads, h, seed(kA));
      l.gdn.b = matrix(c.lin_v_heads, h, seed(kB));
      l.gdn.out = matrix(h, vd, seed(kOut));
      // conv1d: kaiming-uniform over a fan-in of conv_kernel (std ~0.29 for 4 taps).
      l.gdn.conv = vector_of(std::int64_t(c.conv_kernel) * c.conv_dim(), seed(kNorms) + 2, 0.0,
                             1.0 / std::sqrt(3.0 * c.conv_kernel));
      l.gdn.norm = vector_of(c.lin_v_dim, seed(kNorms) + 3, 1.0, 0.1);
      // A = U(1, 16), A_log = log A; dt = exp(U(log 1e-3, log 0.1)), dt_bias = softplus^-1(dt):
      // HF's initialisation.
      l.gdn.a_log = k3k::AlignedBuffer<float>(static_cast<std::size_t>(c.lin_v_heads));
      l.gdn.dt_bias = k3k::AlignedBuffer<float>(l.gdn.a_log.size());
      TileRandom r{seed(kNorms) + 4};
      for (std::size_t hd = 0; hd < l.gdn.a_log.size(); ++hd) {
        l.gdn.a_log[hd] = static_cast<float>(std::log(1.0 + 15.0 * r.uniform()));
        const double dt = std::exp(std::log(1e-3) + (std::log(0.1) - std::log(1e-3)) * r.uniform());
        l.gdn.dt_bias[hd] = static_cast<float>(dt + std::log(-std::expm1(-dt)));
      }
    } else {
      l.attn.q = matrix(c.q_proj_n(), h, seed(kQ));
      l.attn.k = matrix(c.kv_dim(), h, seed(kK));
      l.attn.v = matrix(c.kv_dim(), h, seed(kV));
      l.attn.o = matrix(h, c.attn_dim(), seed(kO));
      if (c.qk_norm) {
        l.attn.q_norm = vector_of(c.head_dim, seed(kNorms) + 5, 1.0, 0.1);
        l.attn.k_norm = vector_of(c.head_dim, seed(kNorms) + 6, 1.0, 0.1);
      }
    }
    l.gate = matrix(c.intermediate, h, seed(kGate));
    l.up = matrix(c.intermediate, h, seed(kUp));
    l.down = matrix(h, c.intermediate, seed(kDown));
  }
  return w;
}

}  // namespace k3runner::model
