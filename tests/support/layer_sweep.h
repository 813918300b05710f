// Op tests written once and run on every kernel layer this binary can run, the way IREE sweeps one
// ukernel test over every tile and CPU feature. A swept suite is a value-parameterised fixture
// whose parameter holds the layer (and, where the test has them, its cases or variants);
// K3_SWEEP_LAYERS* instantiate it once per layer, with the layer's name as the instantiation
// prefix:
//   Generic/AttentionPrefill.WithinBoundAndDeterministic/d128_gqa1_f32_S1
//   Rvv/AttentionPrefill.WithinBoundAndDeterministic/d128_gqa1_f32_S1
// so a gtest filter picks layers (the qemu runs take Rvv* and Ime2*; the generic instances run on
// the host). A layer that is not compiled in, or that this CPU refuses (IME2 at a VLEN other than
// 1024), gets no instances: nothing is skipped, the test does not exist; the run's first lines say
// which layers were swept and why the others were not (layer_sweep.cpp).
//
// Adding a layer: one entry in K3_LAYERS_ below and its error models in support/layer_bounds.h;
// no op test changes.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "k3k/dispatch.h"

namespace k3test {

// Whether `path` is compiled into this binary and this CPU runs it (k3k::decide_path accepts it).
bool layer_runs_here(k3k::KernelPath path);
// Every such layer, generic first: the layers the swept tests are instantiated for.
std::vector<k3k::KernelPath> swept_layers();
// {path} when it runs here, else {} (an instantiation without tests).
std::vector<k3k::KernelPath> layer_if_it_runs(k3k::KernelPath path);

// A layer's own parameter list, params_of(path), or none when the layer does not run here.
template <typename ParamsOf>
auto params_if_it_runs(k3k::KernelPath path, ParamsOf params_of) -> decltype(params_of(path)) {
  if (!layer_runs_here(path)) return {};
  return params_of(path);
}

// A test on one layer.
class OnLayer : public ::testing::TestWithParam<k3k::KernelPath> {
 protected:
  k3k::KernelPath layer() const { return GetParam(); }
  bool is_generic() const { return layer() == k3k::KernelPath::kGeneric; }
};

// A test on one layer and one of the test's cases (a struct with a `name`).
template <typename Case>
class OnLayerWith : public ::testing::TestWithParam<std::tuple<k3k::KernelPath, Case>> {
 protected:
  k3k::KernelPath layer() const { return std::get<0>(this->GetParam()); }
  bool is_generic() const { return layer() == k3k::KernelPath::kGeneric; }
  const Case& test_case() const { return std::get<1>(this->GetParam()); }
};

struct LayerName {
  std::string operator()(const ::testing::TestParamInfo<k3k::KernelPath>& info) const {
    return k3k::to_string(info.param);
  }
};
struct CaseName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    return std::get<1>(info.param).name;
  }
};
// For a layer's own parameter type (a struct with a `name`).
struct ParamName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& info) const {
    return info.param.name;
  }
};

}  // namespace k3test

// The layers, once: X(InstantiationPrefix, KernelPath enumerator, ...) for each. Adding a layer to
// the sweep is one entry here.
#define K3_LAYERS_(X, ...)          \
  X(Generic, kGeneric, __VA_ARGS__) \
  X(Rvv, kRvv, __VA_ARGS__)         \
  X(Ime2, kIme2, __VA_ARGS__)

#define K3_LAYER_PATH_(Prefix, kPath, ...) ::k3k::KernelPath::kPath,
#define K3_SWEEP_ONE_LAYER_(Prefix, kPath, Suite)                                               \
  INSTANTIATE_TEST_SUITE_P(                                                                     \
      Prefix, Suite, ::testing::ValuesIn(::k3test::layer_if_it_runs(::k3k::KernelPath::kPath)), \
      ::k3test::LayerName{});
#define K3_SWEEP_ONE_LAYER_AND_CASES_(Prefix, kPath, Suite, cases)                   \
  INSTANTIATE_TEST_SUITE_P(                                                          \
      Prefix, Suite,                                                                 \
      ::testing::Combine(                                                            \
          ::testing::ValuesIn(::k3test::layer_if_it_runs(::k3k::KernelPath::kPath)), \
          ::testing::ValuesIn(cases)),                                               \
      ::k3test::CaseName{});
#define K3_SWEEP_ONE_LAYER_PARAMS_(Prefix, kPath, Suite, params_of)                          \
  INSTANTIATE_TEST_SUITE_P(                                                                  \
      Prefix, Suite,                                                                         \
      ::testing::ValuesIn(::k3test::params_if_it_runs(::k3k::KernelPath::kPath, params_of)), \
      ::k3test::ParamName{});

// Each used as `K3_SWEEP_...(...);` at namespace scope (the static_assert takes the semicolon).
// Suite : k3test::OnLayer, one test per layer.
#define K3_SWEEP_LAYERS(Suite) K3_LAYERS_(K3_SWEEP_ONE_LAYER_, Suite) static_assert(true, "")
// Suite : k3test::OnLayerWith<Case>, one test per (layer, case); `cases` names a container of Case.
#define K3_SWEEP_LAYERS_AND_CASES(Suite, cases) \
  K3_LAYERS_(K3_SWEEP_ONE_LAYER_AND_CASES_, Suite, cases) static_assert(true, "")
// Suite : ::testing::TestWithParam<P>, one test per element of params_of(layer), params_of naming
// a function KernelPath -> std::vector<P> (P with a `name`): variants that differ by layer.
#define K3_SWEEP_LAYER_PARAMS(Suite, params_of) \
  K3_LAYERS_(K3_SWEEP_ONE_LAYER_PARAMS_, Suite, params_of) static_assert(true, "")
