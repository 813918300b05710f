#include "harness/runner/models_dir.h"

namespace k3runner {

// K3_MODELS_DIR is given to this file alone (harness/runner/CMakeLists.txt): the checkout's path
// differs in every clone, and the files that do not carry it hit the compiler cache.
const char* default_models_dir() { return K3_MODELS_DIR; }

}  // namespace k3runner
