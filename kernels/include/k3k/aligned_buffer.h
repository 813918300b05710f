// Owning, zero-initialised, 64-byte aligned array: the storage type of every kernel operand.
// 64 bytes covers a cache line and every vector register width the kernels use on the host;
// riscv64 builds align to the same value so dumps and layouts are identical across targets.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

namespace k3k {

inline constexpr std::size_t kBufferAlignment = 64;

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) : count_(count) {
    if (count == 0) return;
    std::size_t bytes = (count * sizeof(T) + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    void* p = std::aligned_alloc(kBufferAlignment, bytes);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0, bytes);
    data_.reset(static_cast<T*>(p));
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return count_; }
  std::size_t size_bytes() const { return count_ * sizeof(T); }
  bool empty() const { return count_ == 0; }
  T& operator[](std::size_t i) { return data_.get()[i]; }
  const T& operator[](std::size_t i) const { return data_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + count_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + count_; }
  std::span<T> span() { return {data(), count_}; }
  std::span<const T> span() const { return {data(), count_}; }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t count_ = 0;
};

}  // namespace k3k
