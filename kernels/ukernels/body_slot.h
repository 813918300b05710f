// Where a microkernel's per-call body lives: a slot the binding thread keeps for that body type,
// reused by every call, instead of the heap. A call that allocates has an instruction count (and a
// time) that depends on the heap's layout, which depends on everything the process did before it;
// the bodies are the one object every Linear call made. A second body of the same type bound while
// the first is alive on the same thread (never in the drivers) falls back to the heap, so a slot is
// never shared.
#pragma once

#include <memory>
#include <new>
#include <utility>

namespace k3k::ukernel {

// Ends a body in its slot (and frees the slot), or deletes a heap body (slot == nullptr).
struct BodyDeleter {
  bool* slot_busy = nullptr;
  template <typename Body>
  void operator()(Body* body) const {
    if (slot_busy == nullptr) {
      delete body;
      return;
    }
    body->~Body();  // virtual: the derived body's destructor
    *slot_busy = false;
  }
};

template <typename Base>
using BodyPtr = std::unique_ptr<Base, BodyDeleter>;

// `Body` (derived from `Base`) constructed from `args` in this thread's slot for Body.
template <typename Body, typename Base, typename... Args>
BodyPtr<Base> make_body(Args&&... args) {
  struct Slot {
    alignas(Body) unsigned char bytes[sizeof(Body)];
    bool busy = false;
  };
  thread_local Slot slot;
  if (slot.busy) return BodyPtr<Base>(new Body(std::forward<Args>(args)...), BodyDeleter{});
  Body* body = new (slot.bytes) Body(std::forward<Args>(args)...);  // a throw leaves the slot free
  slot.busy = true;
  return BodyPtr<Base>(body, BodyDeleter{&slot.busy});
}

}  // namespace k3k::ukernel
