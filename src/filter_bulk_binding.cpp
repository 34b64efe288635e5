// The bulk calls of cuckoo._core.Filter around the loops of filter_bulk_*.cpp: key conversion,
// the output array, the lock, the GIL and errors. The loops run one batch (one Arrow chunk, or
// the whole input) per call.
#include "filter_binding.hpp"
#include "filter_bulk.hpp"

#include <pybind11/numpy.h>

#include <string>
#include <utility>
#include <vector>

#include "keys.hpp"

namespace cuckoo_py {

namespace {

// Runs a loop (contains_keys, count_keys under a ReadLock; discard_keys under a WriteLock) over
// every batch of `keys`, writing one result of type T a key.
template <class T, class Lock, class Self, class Loop>
py::array_t<T> each_key(Self& self, const py::handle& keys, Loop loop) {
    std::vector<KeyBatch> batches = make_batches(self.hasher, keys);
    py::array_t<T> out = new_array<T>(total_size(batches));
    T* dst = out.mutable_data();
    SignalCheck stop;
    {
        Lock lock(self);
        // Safe without the GIL: the loop touches only the core's table (guarded by the lock: a
        // write lock keeps every other thread out) and buffers that `batches` holds exported,
        // and writes only into `out`.
        py::gil_scoped_release nogil;
        const cuckoo::KeyHasher hasher = self.hasher;
        for (const KeyBatch& b : batches) {
            if (loop(self.core, hasher, b, dst, stop) < b.size) break;
            dst += b.size;
        }
    }
    stop.raise_if_interrupted();
    return out;
}

}  // namespace

py::array_t<bool> contains_many(const PyFilter& self, const py::handle& keys) {
    return each_key<bool, ReadLock>(self, keys, &contains_keys);
}

py::array_t<uint8_t> count_many(const PyFilter& self, const py::handle& keys) {
    return each_key<uint8_t, ReadLock>(self, keys, &count_keys);
}

py::array_t<bool> discard_many(PyFilter& self, const py::handle& keys) {
    return each_key<bool, WriteLock>(self, keys, &discard_keys);
}

uint64_t insert_batches(PyFilter& self, const std::vector<KeyBatch>& batches, cuckoo::Filter::InsertMode mode,
                        bool* was_new) {
    const uint64_t total = total_size(batches);
    SignalCheck stop;
    uint64_t done = 0;
    bool full = false;
    std::pair<std::string, const char*> why;
    {
        WriteLock lock(self);
        // Safe without the GIL: see each_key.
        py::gil_scoped_release nogil;
        const cuckoo::KeyHasher hasher = self.hasher;
        for (const KeyBatch& b : batches) {
            const uint64_t n = insert_keys(self.core, hasher, b, mode, was_new ? was_new + done : nullptr, full, stop);
            done += n;
            if (n < b.size) break;
        }
        if (full) why = failure_text(self.core);
    }
    stop.raise_if_interrupted();
    if (full) raise_full_in_batch(why, done, total);
    return done;
}

}  // namespace cuckoo_py
