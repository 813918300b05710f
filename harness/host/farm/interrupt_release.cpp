#include "harness/host/farm/interrupt_release.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "harness/host/farm/holder.h"
#include "harness/host/store/database.h"

namespace k3farm {
namespace {

int g_pipe[2] = {-1, -1};

// Async-signal-safe: the signal number goes through a pipe to the thread that does the work.
void on_signal(int sig) {
  const char c = static_cast<char>(sig);
  [[maybe_unused]] const auto n = write(g_pipe[1], &c, 1);
}

void drop_own_leases(const std::string& db_path) {
  try {
    auto db = k3store::open_for_writing(db_path);
    const std::string host = this_host();
    const auto pid = static_cast<std::int64_t>(getpid());
    for (const auto& row : lease_rows(*db))
      if (row.holder_host == host && row.holder_pid == pid) delete_lease(*db, row);
  } catch (...) {  // nothing more can be done on the way out: `farm release --stale` remains
  }
}

}  // namespace

void release_leases_on_interrupt(const std::string& db_path) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (pipe2(g_pipe, O_CLOEXEC) != 0) return;
    std::thread([db_path] {
      char c = 0;
      while (read(g_pipe[0], &c, 1) != 1) {
      }
      drop_own_leases(db_path);
      _exit(128 + c);
    }).detach();
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  });
}

}  // namespace k3farm
