// tcm_bw: what TCM does for a worker, measured from inside the worker pool (pinned to its CPU on a
// K3). copy_in: DRAM -> the worker's TCM block (the pipeline's copy step); read: streaming reads of
// the block (the pipeline's compute side); dram_read: the same read loop over DRAM, as the
// baseline. On a board this settles whether A100-side TCM reads are faster than DRAM at all.
// Traffic counts each byte once (bytes copied, or bytes read) so GB/s compare directly.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "harness/runner/errors.h"
#include "harness/runner/ops/op_lists.h"
#include "harness/runner/ops/op_support.h"
#include "harness/runner/tcm_context.h"

namespace k3runner {
namespace {

class TcmBwCase final : public OpCase {
 public:
  explicit TcmBwCase(const CaseInputs& in)
      : mode_(in.params.text("mode")),
        backend_(in.params.text("tcm_backend")),
        workers_(static_cast<int>(in.params.integer("workers"))),
        bytes_(in.shape.integer("kib") * 1024),
        source_bytes_(in.shape.integer("source_mib") << 20),
        pool_(pool_of_size(workers_)),
        context_(tcm_context(backend_)) {
    workspace_ = tcm_workspace(context_, pool_);
    if (workspace_ == nullptr)
      throw UnsupportedShape("tcm_bw: no TCM backend (" + context_.reason + ")");
    const auto block = static_cast<std::int64_t>(context_.tcm->geometry().block_bytes);
    if (bytes_ > block) {
      throw UnsupportedShape("tcm_bw: kib " + std::to_string(bytes_ / 1024) +
                             " exceeds the TCM block (" + std::to_string(block / 1024) + " KiB)");
    }
    for (int w = 0; w < workers_; ++w) {
      if (workspace_->block_of(w) < 0) {
        throw UnsupportedShape("tcm_bw: worker " + std::to_string(w) + " has no TCM block (" +
                               workspace_->describe() + ")");
      }
    }
    // Each worker copies from its own slice of a source larger than the caches, a new part per
    // call.
    slice_ = std::max<std::int64_t>(bytes_, source_bytes_ / workers_) / bytes_ * bytes_;
    source_ = make_normal(slice_ * workers_ / 4, 1.0, in.seed);
    offsets_.assign(static_cast<std::size_t>(workers_), 0);
    sink_.assign(static_cast<std::size_t>(workers_), 0);
    // Hold each worker's block for the case's lifetime, taken from the worker's own thread.
    held_.assign(static_cast<std::size_t>(workers_), 0);
    pool_.run_each(workers_, [&](int w) {
      held_[static_cast<std::size_t>(w)] =
          context_.tcm->acquire(workspace_->block_of(w), std::chrono::milliseconds(100)) ? 1 : 0;
    });
    for (int w = 0; w < workers_; ++w) {
      if (!held_[static_cast<std::size_t>(w)]) {
        release_all();
        throw UnsupportedShape("tcm_bw: TCM block " + std::to_string(workspace_->block_of(w)) +
                               " not handed over within 100 ms (held by another process?)");
      }
    }
  }
  ~TcmBwCase() override { release_all(); }

  void run_once() override {
    pool_.run_each(workers_, [&](int w) {
      std::byte* block = workspace_->memory_of(w);
      const std::byte* src = reinterpret_cast<const std::byte*>(source_.data()) + w * slice_;
      std::int64_t& off = offsets_[static_cast<std::size_t>(w)];
      if (mode_ == "copy_in") {
        k3k::tcm::stream_copy(block, src + off, static_cast<std::size_t>(bytes_));
        off = (off + bytes_) % slice_;
      } else if (mode_ == "read") {
        sink_[static_cast<std::size_t>(w)] ^=
            k3k::tcm::stream_read_xor(block, static_cast<std::size_t>(bytes_));
      } else {
        sink_[static_cast<std::size_t>(w)] ^=
            k3k::tcm::stream_read_xor(src + off, static_cast<std::size_t>(bytes_));
        off = (off + bytes_) % slice_;
      }
    });
  }

  Traffic traffic() const override { return {0, bytes_ * workers_, 0, std::nullopt}; }

  // copy_in: the block holds exactly the bytes copied; read/dram_read: the XOR fold matches a
  // scalar fold of the same bytes. Exact comparisons (bound 0).
  Accuracy check(bool) override {
    std::fill(offsets_.begin(), offsets_.end(), 0);
    std::fill(sink_.begin(), sink_.end(), 0);
    run_once();
    Accuracy acc;
    acc.reference = mode_ == "copy_in" ? "source bytes" : "scalar XOR fold of the same bytes";
    acc.total = acc.checked = workers_;
    for (int w = 0; w < workers_; ++w) {
      const std::byte* block = workspace_->memory_of(w);
      const std::byte* src = reinterpret_cast<const std::byte*>(source_.data()) + w * slice_;
      bool ok;
      if (mode_ == "copy_in") {
        ok = std::memcmp(block, src, static_cast<std::size_t>(bytes_)) == 0;
      } else {
        const std::byte* data = mode_ == "read" ? block : src;
        std::uint64_t expect = 0;
        for (std::int64_t i = 0; i < bytes_; i += 8) {
          std::uint64_t word;
          std::memcpy(&word, data + i, 8);
          expect ^= word;
        }
        ok = expect == sink_[static_cast<std::size_t>(w)];
      }
      if (!ok) {
        acc.pass = false;
        acc.max_abs_err = 1;
        acc.worst_ratio = INFINITY;
      }
    }
    std::fill(offsets_.begin(), offsets_.end(), 0);
    return acc;
  }

  nlohmann::json params_used() const override {
    nlohmann::json blocks = nlohmann::json::array();
    for (int w = 0; w < workers_; ++w) blocks.push_back(workspace_->block_of(w));
    return {{"workers", workers_},
            {"mode", mode_},
            {"tcm",
             {{"backend", k3k::tcm::to_string(context_.tcm->backend())},
              {"requested", backend_},
              {"reason", context_.reason},
              {"describe", context_.tcm->describe()},
              {"block_of_worker", blocks}}},
            {"placement", pool_placement_json(pool_)}};
  }
  std::string path() const override { return "none"; }  // a probe, not a kernel
  std::vector<DumpArray> dump_arrays() const override { return {}; }

 private:
  void release_all() {
    if (held_.empty()) return;
    pool_.run_each(workers_, [&](int w) {
      if (held_[static_cast<std::size_t>(w)]) context_.tcm->release(workspace_->block_of(w));
      held_[static_cast<std::size_t>(w)] = 0;
    });
  }

  std::string mode_, backend_;
  int workers_;
  std::int64_t bytes_, source_bytes_, slice_ = 0;
  k3k::WorkerPool& pool_;
  const TcmContext& context_;
  k3k::TcmWorkspace* workspace_ = nullptr;
  k3k::AlignedBuffer<float> source_;
  std::vector<std::int64_t> offsets_;
  std::vector<std::uint64_t> sink_;
  std::vector<char> held_;
};

}  // namespace

KeySpec tcm_backend_param() {
  return enum_key(
      "tcm_backend",
      "TCM backend: auto (vendor library if usable, else emulated), real, emulated, off", "auto",
      {"auto", "real", "emulated", "off"});
}

void add_tcm_ops(std::vector<OpInfo>& ops) {
  ops.push_back(
      OpInfo{"tcm_bw",
             "TCM probe per pinned worker: copy_in (DRAM -> own TCM block), read (from the block), "
             "dram_read (same loop, DRAM)",
             {int_key("kib", "bytes per worker per call, in KiB (at most one TCM block)", "192", 1,
                      1 << 20),
              int_key("source_mib",
                      "DRAM source size in MiB, split over workers (make it exceed the caches)",
                      "64", 1, 1 << 14)},
             {workers_param(),
              enum_key("mode", "what to measure", "copy_in", {"copy_in", "read", "dram_read"}),
              tcm_backend_param()},
             [](const KeyValues& s, const KeyValues&) {
               return (s.integer("source_mib") << 20) + (s.integer("kib") << 10);
             },
             [](const CaseInputs& in) { return std::make_unique<TcmBwCase>(in); }});
}

}  // namespace k3runner
