// git in a scratch repository of a test (bisect, revision ancestry).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/host/targets/process.h"

namespace k3test {

// git -C `repo` as user t <t@t> with `args`: its output without trailing newlines. A failed call
// fails the test.
inline std::string git_in(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = k3targets::run_process(argv, k3targets::ProcessOptions::with_timeout(60));
  EXPECT_TRUE(r.ok()) << r.err;
  std::string out = r.out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace k3test
