#include "harness/host/bench/progress.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>

namespace k3bench {

bool stderr_is_terminal() {
  return isatty(STDERR_FILENO) == 1;
}

std::string format_duration(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{}m{:02d}s", int(s) / 60, int(s) % 60);
  return fmt::format("{}h{:02d}m", int(s) / 3600, (int(s) % 3600) / 60);
}

Progress::Progress(int total, bool enabled)
    : total_(total),
      enabled_(enabled && stderr_is_terminal()),
      start_(std::chrono::steady_clock::now()) {}

void Progress::update(int done, const std::string& what) {
  if (!enabled_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta = done > 0 ? format_duration(elapsed / done * (total_ - done)) : "?";
  std::string line =
      fmt::format("[{:>{}}/{}] {:3.0f}% ETA {}  {}", done, std::to_string(total_).size(), total_,
                  total_ ? 100.0 * done / total_ : 100.0, eta, what);
  if (line.size() > 110) line.resize(110);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::note(const std::string& message) {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  std::fprintf(stderr, "%s\n", message.c_str());
  drawn_ = false;
}

void Progress::finish() {
  if (drawn_) std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  drawn_ = false;
}

}  // namespace k3bench
