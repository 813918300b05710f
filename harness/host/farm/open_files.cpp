#include "harness/host/farm/open_files.h"

#include <sys/resource.h>

#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace k3farm {

OpenFileLimit raise_open_file_limit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return {};
  if (lim.rlim_cur < lim.rlim_max) {
    rlimit raised = lim;
    raised.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
  }
  const auto cap = [](rlim_t v) {
    return v == RLIM_INFINITY ? static_cast<std::size_t>(-1) : static_cast<std::size_t>(v);
  };
  return {cap(lim.rlim_cur), cap(lim.rlim_max)};
}

std::size_t open_descriptors() {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n > 0 ? n - 1 : 0;  // not the iterator's own descriptor of the directory
}

void require_descriptors_for(std::size_t boards) {
  const OpenFileLimit lim = raise_open_file_limit();
  const std::size_t open = open_descriptors();
  const std::size_t need = open + kDescriptorsReserve + kDescriptorsPerBoard * boards;
  if (need <= lim.soft) return;
  throw std::invalid_argument(fmt::format(
      "--farm: {} boards need about {} open files ({} per board, {} open, {} reserve) but the "
      "open-file limit RLIMIT_NOFILE is {} (hard limit {}, the most this process may raise it to): "
      "raise the hard limit (ulimit -Hn, limits.conf, LimitNOFILE=) or take fewer boards "
      "(--board, --tag)",
      boards, need, kDescriptorsPerBoard, open, kDescriptorsReserve, lim.soft, lim.hard));
}

}  // namespace k3farm
