#include "ops/op_lists.h"
namespace k3bench {
void add_kv_cache_ops(std::vector<OpInfo>&) {}
}  // namespace k3bench
