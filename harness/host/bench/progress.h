// The one-line progress display on stderr: shown only when stderr is a terminal (and not --quiet),
// so nightly logs stay clean; the ETA is the mean process time so far times what is left.
#pragma once

#include <chrono>
#include <string>

namespace k3bench {

class Progress {
 public:
  Progress(int total, bool enabled);
  ~Progress() { finish(); }
  void update(int done, const std::string& what);
  // Adaptive sweeps learn how much is left as they go: the ETA follows the current estimate.
  void set_total(int total) { total_ = total; }
  // Prints a message on its own line without breaking the progress line.
  void note(const std::string& message);
  void finish();

 private:
  int total_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
};

bool stderr_is_terminal();
std::string format_duration(double seconds);

}  // namespace k3bench
