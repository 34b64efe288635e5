// The bulk calls of cuckoo._core.Filter (contains_many, count_many, add_many and friends,
// discard_many). Each instantiates the core's batch loops for every key layout (with_hasher in
// keys.hpp) and bucket shape, which is most of the extension's compile time; so each lives in a
// translation unit of its own (filter_bulk_<operation>.cpp) and the build compiles them in
// parallel. register_filter (filter_binding.cpp) binds them. A new family of instantiations
// (another table layout, say) belongs in new files of its own too, not in an existing one.
#pragma once

#include <pybind11/numpy.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "cuckoo/filter.hpp"
#include "filter_binding.hpp"
#include "keys.hpp"

namespace cuckoo_py {

// Bulk loops re-take the GIL to check for Ctrl-C every this many blocks of keys (~16k keys,
// well under a millisecond of work), so an interrupt is honoured quickly.
constexpr uint64_t kBlocksPerSignalCheck = 512;

// threading.main_thread().ident, set once by register_filter: only the main thread runs
// Python's signal handlers.
inline unsigned long main_thread_ident = 0;

// Polled between blocks of a bulk loop, without the GIL. On the main thread it re-takes the GIL
// now and then to run Python's signal handlers; if one raised (KeyboardInterrupt), the loop stops
// after the block it finished and the exception stays set for the caller to raise.
class SignalCheck {
public:
    SignalCheck() : on_main_thread_(PyThread_get_thread_ident() == main_thread_ident) {}
    bool operator()() {
        if (!on_main_thread_ || ++blocks_ % kBlocksPerSignalCheck != 0) return false;
        py::gil_scoped_acquire gil;
        interrupted_ = PyErr_CheckSignals() != 0;
        return interrupted_;
    }
    void raise_if_interrupted() const {
        if (interrupted_) throw py::error_already_set();
    }

private:
    bool on_main_thread_;
    bool interrupted_ = false;
    uint64_t blocks_ = 0;
};

inline uint64_t total_size(const std::vector<KeyBatch>& batches) {
    uint64_t n = 0;
    for (const auto& b : batches) n += b.size;
    return n;
}

template <class T>
py::array_t<T> new_array(uint64_t n) {
    return py::array_t<T>(static_cast<py::ssize_t>(n));
}

// Runs a read-only batch operation over every part of `keys`, writing results of type T.
template <class T, class Op>
py::array_t<T> read_many(const PyFilter& self, const py::handle& keys, Op&& op) {
    std::vector<KeyBatch> batches = make_batches(self.hasher, keys);
    py::array_t<T> out = new_array<T>(total_size(batches));
    T* dst = out.mutable_data();
    SignalCheck stop;
    {
        ReadLock lock(self);
        // Safe without the GIL: the loop reads only the core's table (guarded by the lock) and
        // buffers that `batches` holds exported, and writes only into `out`.
        py::gil_scoped_release nogil;
        const cuckoo::KeyHasher hasher = self.hasher;
        for (const KeyBatch& b : batches) {
            const uint64_t done = with_hasher(hasher, b, [&](auto hash_at) { return op(b.size, hash_at, dst, stop); });
            if (done < b.size) break;
            dst += b.size;
        }
    }
    stop.raise_if_interrupted();
    return out;
}

// Why the last insert into `f` failed, as the start of a FilterFullError message, and its
// `reason` attribute (filter_binding.cpp).
std::pair<std::string, const char*> failure_text(const cuckoo::StagedFilter& f);
// Raises the FilterFullError of a batch that stopped after `done` of `total` keys; `why`:
// failure_text, taken while the batch still held the write lock (filter_binding.cpp).
[[noreturn]] void raise_full_in_batch(const std::pair<std::string, const char*>& why, uint64_t done, uint64_t total);

// filter_bulk_contains.cpp: a bool array, whether each key is (maybe) present.
py::array_t<bool> contains_many(const PyFilter& self, const py::handle& keys);

// filter_bulk_count.cpp: count(key) for each key, saturating at 255.
py::array_t<uint8_t> count_many(const PyFilter& self, const py::handle& keys);

// filter_bulk_insert.cpp: inserts every batch in order and returns the number of keys handled;
// raises FilterFullError at the first key that finds no room. `was_new` (may be null): see
// cuckoo::Filter::insert_batch.
uint64_t insert_batches(PyFilter& self, const std::vector<KeyBatch>& batches, cuckoo::Filter::InsertMode mode,
                        bool* was_new);

// filter_bulk_discard.cpp: discards each key in order; True where a copy was removed.
py::array_t<bool> discard_many(PyFilter& self, const py::handle& keys);

}  // namespace cuckoo_py
