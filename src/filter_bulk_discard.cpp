// Filter.discard_many: the batch delete for every key layout (see filter_bulk.hpp).
#include "filter_bulk.hpp"

namespace cuckoo_py {

py::array_t<bool> discard_many(PyFilter& self, const py::handle& keys) {
    std::vector<KeyBatch> batches = make_batches(self.hasher, keys);
    py::array_t<bool> out = new_array<bool>(total_size(batches));
    bool* dst = out.mutable_data();
    SignalCheck stop;
    {
        WriteLock lock(self);
        py::gil_scoped_release nogil;  // safe: see read_many; the write lock keeps every other thread out
        const cuckoo::KeyHasher hasher = self.hasher;
        for (const KeyBatch& b : batches) {
            const uint64_t n = with_hasher(hasher, b, [&](auto hash_at) { return self.core.erase_batch(b.size, hash_at, dst, stop); });
            if (n < b.size) break;
            dst += b.size;
        }
    }
    stop.raise_if_interrupted();
    return out;
}

}  // namespace cuckoo_py
