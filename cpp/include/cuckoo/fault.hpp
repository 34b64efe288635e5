// A test hook for allocation failure: "fail the Nth allocation from now".
//
// Every allocation of a table (a filter stage's ByteBuffer), of the store's index (its table,
// the scratch of a rebuild, a stash entry) and of the store log's mapping calls
// fault::before_allocation() first. Unarmed (always, outside tests), that is one relaxed load of
// a zero and a branch predicted not taken. Armed with fault::arm(n), the n-th such call from then
// on throws std::bad_alloc instead of allocating (and disarms the hook), so that a test can make
// each allocation site a call reaches fail in turn and check that the object is exactly as before
// (the strong guarantee; tests/test_faults.py). The only way in from Python is the private
// cuckoo._core._fail_allocation().
//
// Process-wide and not meant for concurrent use: tests arm it around one call of one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <new>

#if defined(__GNUC__) || defined(__clang__)
#define CUCKOO_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define CUCKOO_UNLIKELY(x) (x)
#endif

namespace cuckoo {
namespace fault {

// Allocations left before the one that fails (0: unarmed), and allocations seen while armed.
inline std::atomic<uint64_t> g_fail_in{0};
inline std::atomic<uint64_t> g_seen{0};

// Arms the hook: the n-th hooked allocation from now throws std::bad_alloc (n = 0 disarms).
// Returns how many hooked allocations were seen since the previous call (while armed): a test
// that arms with a large n learns how many allocation sites a call reaches.
inline uint64_t arm(uint64_t n) noexcept {
    g_fail_in.store(n, std::memory_order_relaxed);
    return g_seen.exchange(0, std::memory_order_relaxed);
}

inline void armed_allocation() {
    g_seen.fetch_add(1, std::memory_order_relaxed);
    if (g_fail_in.fetch_sub(1, std::memory_order_relaxed) == 1) throw std::bad_alloc();
}

// Called before every allocation of a table, an index or a log mapping.
inline void before_allocation() {
    if (CUCKOO_UNLIKELY(g_fail_in.load(std::memory_order_relaxed) != 0)) armed_allocation();
}

// Room for one more element of a growing vector, the growth (doubling, from 1024) behind the hook.
template <class V>
void room_for_one(V& v) {
    if (v.size() < v.capacity()) return;
    before_allocation();
    v.reserve(v.capacity() < 512 ? 1024 : 2 * v.capacity());
}

}  // namespace fault
}  // namespace cuckoo
