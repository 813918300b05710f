#include "ops/op_lists.h"
namespace k3bench {
void add_attention_ops(std::vector<OpInfo>&) {}
}  // namespace k3bench
