// A test's scratch folder under the system's temporary directory: emptied and made when the test's
// fixture is made, removed with everything in it when the fixture goes. Its name holds this
// process's id, so test programs that ctest runs side by side never share one, and by default the
// running test's name too, so a folder that a test leaves behind is never the next test's.
#pragma once

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace k3test {

class ScratchDir {
 public:
  enum class Name { kPerTest, kPerProcess };

  // <temp>/<prefix><pid>_<test name> (kPerTest) or <temp>/<prefix><pid> (kPerProcess).
  explicit ScratchDir(const std::string& prefix, Name name = Name::kPerTest)
      : path_(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    if (name == Name::kPerTest)
      path_ += "_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;  // a destructor must not throw: a folder left in /tmp harms no test
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  operator const std::filesystem::path&() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace k3test
