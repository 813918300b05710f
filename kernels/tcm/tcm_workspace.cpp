#include "k3k/tcm_linear.h"

namespace k3k {

TcmWorkspace::TcmWorkspace(tcm::Tcm& tcm, WorkerPool& pool)
    : tcm_(&tcm),
      pool_(&pool),
      block_(static_cast<std::size_t>(pool.size()), -1),
      memory_(static_cast<std::size_t>(pool.size()), nullptr) {
  const int blocks = tcm.geometry().blocks;
  // On real TCM a pinned worker takes its CPU's block (block = CPU - 8 on a K3). Emulated blocks
  // belong to no CPU, and an unpinned worker has no fixed CPU: those take their worker index.
  const bool by_cpu = tcm.backend() == tcm::Backend::kReal;
  for (int w = 0; w < pool.size(); ++w) {
    const WorkerPlacement& p = pool.placement(w);
    int id = p.pinned && by_cpu ? tcm::block_for_cpu(p.cpu) : w;
    if (id < 0 || id >= blocks) id = -1;
    for (int v = 0; v < w && id >= 0; ++v)
      if (block_[static_cast<std::size_t>(v)] == id)
        id = -1;  // two workers on one CPU share nothing
    block_[static_cast<std::size_t>(w)] = id;
  }
  // Map from each worker's own thread, as the vendor runtime expects.
  pool.run_each(pool.size(), [&](int w) {
    const int id = block_[static_cast<std::size_t>(w)];
    if (id >= 0) memory_[static_cast<std::size_t>(w)] = tcm.map(id);
  });
  for (std::size_t w = 0; w < block_.size(); ++w)
    if (memory_[w] == nullptr) block_[w] = -1;
}

TcmWorkspace::~TcmWorkspace() {
  pool_->run_each(pool_->size(), [&](int w) {
    if (block_[static_cast<std::size_t>(w)] >= 0) tcm_->unmap(block_[static_cast<std::size_t>(w)]);
  });
}

int TcmWorkspace::usable_blocks() const {
  int usable = 0;
  for (int id : block_) {
    if (id < 0) continue;
    // Between calls this process holds no block, so an acquired one belongs to another process
    // (or is a stale lock): not available to us now.
    if (!tcm_->status(id).acquired) ++usable;
  }
  return usable;
}

std::string TcmWorkspace::describe() const {
  std::string text = tcm_->describe() + "; blocks by worker:";
  for (int id : block_) {
    text += ' ';
    text += std::to_string(id);
  }
  return text;
}

}  // namespace k3k
