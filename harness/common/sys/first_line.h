// The first line of a small text file such as /proc/<pid>/stat or a sysfs attribute; empty when
// the file cannot be read (a process that has exited, a node this kernel does not have).
#pragma once

#include <fstream>
#include <string>

namespace k3sys {

inline std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (f) std::getline(f, line);
  return line;
}

}  // namespace k3sys
