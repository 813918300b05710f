#include "harness/runner/model/count_marks.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <stdexcept>

#if defined(K3_HAVE_IME2)
#include "k3k/ime2.h"
#endif

namespace k3runner::model {

void count_mark(int region) {
  // ENOSYS is the expected answer: the call exists to be seen by the counter.
  (void)::syscall(kCountMarkSyscall, static_cast<long>(region));
}

Ime2Totals ime2_emulation_totals() {
  Ime2Totals t;
#if defined(K3_HAVE_IME2)
  if (!k3k::ime2::emulated()) return t;
  for (const auto& c : k3k::ime2::emulated_instruction_counts()) t.instructions += c.count;
  t.calls = k3k::ime2::emulation_call_instructions();
#endif
  return t;
}

void CountMarks::begin_test(const std::string& name) {
  if (static_cast<int>(tests_.size()) == kMaxTests)
    throw std::runtime_error("--count-marks: more than 64 tests in one run");
  tests_.push_back(name);
}

void CountMarks::switch_to(int region) {
  count_mark(0);  // the IME2 counters are read outside every counted region
  const Ime2Totals t = ime2_emulation_totals();
  Ime2& r = ime2_[current_];
  r.instructions += t.instructions - last_.instructions;
  r.calls += t.calls - last_.calls;
  last_ = {t.instructions, t.calls};
  current_ = region;
  count_mark(region);
}

void CountMarks::enter_forward() {
  if (tests_.empty()) throw std::logic_error("CountMarks: a forward outside a test");
  in_forward_ = true;
  switch_to(region(static_cast<int>(tests_.size()) - 1, kGlue));
}

void CountMarks::leave_forward() {
  in_forward_ = false;
  switch_to(0);
}

void CountMarks::enter_op(Op op) {
  if (in_forward_) switch_to(region(static_cast<int>(tests_.size()) - 1, static_cast<int>(op)));
}

void CountMarks::leave_op() {  // the timer's work after the call follows, then timer(false)
  if (in_forward_) switch_to(region(static_cast<int>(tests_.size()) - 1, kTimer));
}

void CountMarks::timer(bool begin) {
  if (in_forward_) switch_to(region(static_cast<int>(tests_.size()) - 1, begin ? kTimer : kGlue));
}

void count_mark_timer(CountMarks& marks, bool begin) {
  marks.timer(begin);
}

void count_mark_op(CountMarks& marks, Op op, bool enter) {
  if (enter)
    marks.enter_op(op);
  else
    marks.leave_op();
}

nlohmann::json CountMarks::json() const {
  nlohmann::json tests = nlohmann::json::array();
  for (std::size_t i = 0; i < tests_.size(); ++i)
    tests.push_back({{"name", tests_[i]}, {"index", i}});
  nlohmann::json ops = nlohmann::json::array();
  for (int i = 0; i < kGlue; ++i) ops.push_back(op_name(static_cast<Op>(i)));
  ops.push_back("glue");
  ops.push_back("timer");
  nlohmann::json ime2 = nlohmann::json::object();
  for (const auto& [region, c] : ime2_)
    if (region != 0 && (c.instructions > 0 || c.calls > 0))
      ime2[std::to_string(region)] = {{"instructions", c.instructions}, {"calls", c.calls}};
  return {{"syscall", kCountMarkSyscall},
          {"regions_per_test", kRegionsPerTest},
          {"tests", tests},
          {"ops", ops},
          {"ime2", ime2}};
}

}  // namespace k3runner::model
