// Where k3bench finds the model configurations when neither --models-dir nor K3BENCH_MODELS_DIR
// names them: configs/models of the checkout it was built from.
#pragma once

namespace k3runner {

const char* default_models_dir();

}  // namespace k3runner
