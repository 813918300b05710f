// Runs the real k3bench binary as a child process and captures its stdout, stderr and exit code.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace k3test {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline ProcessResult run_k3bench(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  // ctest runs tests as parallel processes in one directory: the pid keeps the files apart.
  const std::string err_file =
      "k3bench_test_stderr_" + std::to_string(getpid()) + "_" + std::to_string(++counter) + ".txt";
  const std::string cmd = env + " " + std::string(K3BENCH_PATH) + " " + args + " 2>" + err_file;
  ProcessResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_file);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::remove(err_file.c_str());
  return r;
}

}  // namespace k3test
