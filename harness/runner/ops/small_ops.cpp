#include "ops/op_lists.h"
namespace k3bench {
void add_small_ops(std::vector<OpInfo>&) {}
}  // namespace k3bench
