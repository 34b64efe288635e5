// Filter.add_many, add_unique_many and update: the batch insert for every key layout (see
// filter_bulk.hpp).
#include "filter_bulk.hpp"

namespace cuckoo_py {

uint64_t insert_batches(PyFilter& self, const std::vector<KeyBatch>& batches, cuckoo::Filter::InsertMode mode,
                        bool* was_new) {
    const uint64_t total = total_size(batches);
    SignalCheck stop;
    uint64_t done = 0;
    bool full = false;
    std::pair<std::string, const char*> why;
    {
        WriteLock lock(self);
        // Safe without the GIL: see read_many; the write lock keeps every other thread out.
        py::gil_scoped_release nogil;
        const cuckoo::KeyHasher hasher = self.hasher;
        for (const KeyBatch& b : batches) {
            const uint64_t n = with_hasher(hasher, b, [&](auto hash_at) {
                return self.core.insert_batch(b.size, hash_at, mode, was_new ? was_new + done : nullptr, full, stop);
            });
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
