// Bytes by source, the one shape of the kernels' traffic accounting (k3k/traffic.h counts it in
// whole bytes per call) and of the host's reading of it (k3tune's model counts: bytes per call and
// per token, as doubles). The standard library alone, so host code shares it without the kernels.
#pragma once

#include <cstdint>

namespace k3k {

template <class T>
struct TrafficBySource {
  T weights = 0;      // packed weight codes (and embedding table rows) read
  T metadata = 0;     // the packed weights' fp16 (beta, scale) pairs read
  T kv_read = 0;      // KV cache read
  T kv_write = 0;     // KV cache written
  T state = 0;        // recurrent and convolution state read and written
  T activations = 0;  // activations and other operands read and written

  // What a decode step streams from memory: everything but the activations, which live in cache.
  T streamed() const { return weights + metadata + kv_read + kv_write + state; }
  T total() const { return streamed() + activations; }
  TrafficBySource& operator+=(const TrafficBySource& o) {
    weights += o.weights;
    metadata += o.metadata;
    kv_read += o.kv_read;
    kv_write += o.kv_write;
    state += o.state;
    activations += o.activations;
    return *this;
  }
  friend bool operator==(const TrafficBySource&, const TrafficBySource&) = default;
};

}  // namespace k3k
