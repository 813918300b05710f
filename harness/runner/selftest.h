// `k3bench --selftest ime2`: the IME2 instructions vs their software models (k3k::ime2::selftest),
// printed as a table or JSON. Exit codes: 0 all cases match, 3 IME2 not built or its gate refuses
// this CPU, 4 a mismatch (the model, hence the emulation contract, is wrong for that case).
#pragma once

#include <string>

namespace k3runner {

int run_selftest(const std::string& target, bool json);

}  // namespace k3runner
