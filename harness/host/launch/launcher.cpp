#include "harness/host/launch/launcher.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/host/bench/user_error.h"
#include "harness/host/farm/shell_quote.h"

namespace k3launch {

Args Launcher::globals() const {
  Args a{self_exe, "--root", root};
  if (!db_path.empty()) a.insert(a.end(), {"--db", db_path});
  if (json) a.push_back("--json");
  if (quiet) a.push_back("-q");
  if (!targets_file.empty()) a.insert(a.end(), {"--targets", targets_file});
  return a;
}

Args Launcher::argv(const Request& request) const {
  Args a = globals();
  const Args rest = arguments(request);
  a.insert(a.end(), rest.begin(), rest.end());
  return a;
}

std::string Launcher::shell_globals(const std::string& db_expression) const {
  return k3farm::shell_join(globals()) + " --db " + db_expression;
}

std::string command_text(const Request& request) {
  return fmt::format("k3tune {}", fmt::join(arguments(request), " "));
}

int run_child(const Args& argv, const ChildFiles& files,
              const std::map<std::string, std::string>& env) {
  const int out = ::open(files.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int log = ::open(files.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out < 0 || log < 0) {
    if (out >= 0) close(out);
    if (log >= 0) close(log);
    throw k3bench::UserError(fmt::format("{}: cannot write the step's log", files.log_path));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out);
  close(log);
  if (pid < 0) return 127;
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace k3launch
