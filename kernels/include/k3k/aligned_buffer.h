// Owning, zero-initialised, 64-byte aligned array: the storage type of every kernel operand.
// 64 bytes covers a cache line and every vector register width the kernels use on the host;
// riscv64 builds align to the same value so dumps and layouts are identical across targets.
//
// Large buffers (weights streamed by decode, KV caches) are read sequentially over many MiB, so
// with 4 KiB pages every 4 KiB costs a TLB miss and the physical pages land wherever the
// allocator finds them. Buffers of at least kHugePageBytes are therefore 2 MiB aligned and
// advised for transparent huge pages (madvise(MADV_HUGEPAGE)) before they are first touched, the
// way llama.cpp's SpacemiT memory pool allocates weights. The process-wide policy
// (set_huge_page_buffers) exists so a benchmark can measure both settings; Linux honours the advice
// only when /sys/kernel/mm/transparent_hugepage/enabled is "always" or "madvise".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace k3k {

inline constexpr std::size_t kBufferAlignment = 64;
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

namespace detail {
inline std::atomic<bool>& huge_page_buffers() {
  static std::atomic<bool> enabled{true};
  return enabled;
}
}  // namespace detail

// Whether buffers allocated from now on that are >= kHugePageBytes get 2 MiB alignment and the
// huge-page advice (default: yes). A process setting, like the worker pool: set it before
// allocating, not while kernels run.
inline void set_huge_page_buffers(bool enabled) { detail::huge_page_buffers().store(enabled); }
inline bool huge_page_buffers() { return detail::huge_page_buffers().load(); }

template <typename T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) : AlignedBuffer(count, nullptr) {}
  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;
  AlignedBuffer(const AlignedBuffer&) = delete;  // a copy of the data is copy_of(span())
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  // A copy of `src`, written once (no zero-fill first): large copies cost one pass, not two.
  static AlignedBuffer copy_of(std::span<const T> src) { return AlignedBuffer(src.size(), src.data()); }
  // Not zero-filled (as std::make_unique_for_overwrite): for per-call scratch the caller writes in
  // full before reading, where the fill would cost as much as the writing.
  static AlignedBuffer for_overwrite(std::size_t count) { return AlignedBuffer(count, nullptr, false); }

  // A view of memory someone else owns (e.g. a read-only mapping of a weight file), kept alive by
  // `owner` for as long as any view of it exists. `data` must be kBufferAlignment aligned. Kernels
  // only read weights, so mapping them is how an engine (or a benchmark) avoids copying them.
  static AlignedBuffer view_of(T* data, std::size_t count, std::shared_ptr<const void> owner) {
    AlignedBuffer b;
    b.count_ = count;
    b.data_ = std::shared_ptr<T>(std::move(owner), data);  // aliasing: owns `owner`, points at data
    return b;
  }

 private:
  // Zero-filled when `init` is null (unless !zero_fill), else a copy of init[0, count).
  AlignedBuffer(std::size_t count, const T* init, bool zero_fill = true) : count_(count) {
    if (count == 0) return;
    const std::size_t raw = count * sizeof(T);
    const bool huge = raw >= kHugePageBytes && huge_page_buffers();
    const std::size_t align = huge ? kHugePageBytes : kBufferAlignment;
    const std::size_t bytes = (raw + align - 1) / align * align;
    void* p = std::aligned_alloc(align, bytes);
    if (p == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge) ::madvise(p, bytes, MADV_HUGEPAGE);  // advice only: failure leaves 4 KiB pages
#endif
    // Zero up to the 64-byte boundary (kernels may read whole vectors there), not the rest of a
    // 2 MiB rounding: untouched pages cost nothing.
    const std::size_t used = (raw + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
    if (init != nullptr) {
      std::memcpy(p, init, raw);
      std::memset(static_cast<char*>(p) + raw, 0, used - raw);
    } else if (zero_fill) {
      std::memset(p, 0, used);
    }
    data_.reset(static_cast<T*>(p), [](T* q) { std::free(q); });
  }

 public:
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
  // Shared only between a buffer and its views' owner; AlignedBuffer itself is move-only, so the
  // count is touched when a buffer is made or dies, never in a kernel.
  std::shared_ptr<T> data_;
  std::size_t count_ = 0;
};

// Per-call scratch a thread keeps between calls: declare `thread_local AlignedBuffer<T> b;` at the
// call site (one per purpose) and take `count` elements of it, the buffer grown when too small and
// never shrunk. An allocation per call costs a short call a visible share of its time, and malloc's
// path through a heap laid out by everything the process did before (down to the length of its
// own path) made a call's instruction count differ from one process to the next.
template <typename T>
std::span<T> reused_for_overwrite(AlignedBuffer<T>& buffer, std::size_t count) {
  if (buffer.size() < count) buffer = AlignedBuffer<T>::for_overwrite(count);
  return buffer.span().first(count);
}
// The same, zeroed: for scratch whose callers may read what they did not write.
template <typename T>
std::span<T> reused_zeroed(AlignedBuffer<T>& buffer, std::size_t count) {
  const std::span<T> s = reused_for_overwrite(buffer, count);
  if (count != 0) std::memset(s.data(), 0, count * sizeof(T));
  return s;
}

}  // namespace k3k
