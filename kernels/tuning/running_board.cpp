// The fingerprint of the machine this process runs on, in the form tables record it.
#include <sched.h>

#include <fmt/format.h>

#include "k3k/cpu.h"
#include "k3k/tcm.h"
#include "k3k/tuning.h"

namespace k3k {

BoardFingerprint running_board() {
  BoardFingerprint b;
  if (const auto m = current_cpu_marchid(); m.value) b.marchid = fmt::format("{:#x}", *m.value);
  if (cpu_features().vector) b.vlen_bits = cpu_features().vlenb * 8;
  cpu_set_t set;
  CPU_ZERO(&set);
  b.cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(CPU_COUNT(&set), 1) : 1;
  // The backend k3bench and engines get by default (K3_TCM_LIBRARY respected); opening maps
  // nothing and takes no block.
  const auto opened = tcm::open(tcm::OpenOptions{});
  if (opened.tcm) {
    b.tcm_backend = tcm::to_string(opened.tcm->backend());
    b.tcm_blocks = opened.tcm->geometry().blocks;
    b.tcm_block_bytes = static_cast<std::int64_t>(opened.tcm->geometry().block_bytes);
  }
  return b;
}

}  // namespace k3k
