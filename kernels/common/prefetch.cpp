#include "k3k/linear.h"

namespace k3k {

bool prefetch_built() {
#if defined(K3_HAVE_ZICBOP)
  return true;
#else
  return false;
#endif
}

}  // namespace k3k
