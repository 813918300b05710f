// Small text files read whole or by their first line: /proc and sysfs attributes, a child
// process's output file, a job's result. Empty when the file cannot be read (a process that has
// exited, a node this kernel does not have, a child that printed nothing): the callers say what
// an empty answer means for them.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace k3sys {

inline std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  if (f) s << f.rdbuf();
  return s.str();
}

}  // namespace k3sys
