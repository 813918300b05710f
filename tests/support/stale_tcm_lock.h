// A killed run's stale TCM lock, made through the vendor-library test double: a child process
// opens the double (`library`, its state in `state`), takes TCM block `block` and exits without
// releasing it. The child's pid (the lock's owner) when it took the block, else -1.
#pragma once

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <string>

namespace k3test {

inline pid_t leave_stale_tcm_lock(const char* library, const std::string& state, int block) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::setenv("FAKE_SPINE_TCM_STATE", state.c_str(), 1);
    void* h = ::dlopen(library, RTLD_NOW);
    auto try_wait = h ? reinterpret_cast<void* (*)(int, std::size_t)>(
                            ::dlsym(h, "spine_tcm_runtime_mem_try_wait"))
                      : nullptr;
    ::_exit(try_wait != nullptr && try_wait(block, 0) != nullptr ? 0 : 1);
  }
  int status = 0;
  const bool took =
      ::waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return took ? child : -1;
}

}  // namespace k3test
