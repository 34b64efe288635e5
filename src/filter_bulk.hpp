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
