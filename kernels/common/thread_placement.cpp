#include "k3k/thread_placement.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace k3k {

namespace {
std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}
}  // namespace

WorkerPlacement place_current_thread(int cpu, bool opt_in, const char* opt_in_path) {
  WorkerPlacement result;
  result.cpu = cpu;
  if (opt_in) {
    // The opt-in is per thread: the kernel records the writer's tid, so every worker writes itself.
    const int fd = ::open(opt_in_path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      result.problem = errno_text((std::string("open ") + opt_in_path).c_str(), errno);
    } else {
      if (::write(fd, "0", 1) == 1) {
        result.opted_in = true;
      } else {
        result.problem = errno_text((std::string("write ") + opt_in_path).c_str(), errno);
      }
      ::close(fd);
    }
  }
  if (cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (cpu >= CPU_SETSIZE) {
      result.problem += (result.problem.empty() ? "" : "; ") + std::string("cpu ") +
                        std::to_string(cpu) + " is beyond CPU_SETSIZE";
      return result;
    }
    CPU_SET(cpu, &set);
    const int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    if (err == 0) {
      result.pinned = true;
    } else {
      result.problem += (result.problem.empty() ? "" : "; ") +
                        errno_text(("pin to cpu " + std::to_string(cpu)).c_str(), err);
    }
  }
  return result;
}

std::shared_ptr<void> save_thread_affinity() {
  auto set = std::make_shared<cpu_set_t>();
  if (pthread_getaffinity_np(pthread_self(), sizeof(cpu_set_t), set.get()) != 0) return nullptr;
  return set;
}

void restore_thread_affinity(const std::shared_ptr<void>& saved) {
  if (!saved) return;
  pthread_setaffinity_np(pthread_self(), sizeof(cpu_set_t),
                         static_cast<const cpu_set_t*>(saved.get()));
}

}  // namespace k3k
