// Filter.contains_many: the batch lookup for every key layout (see filter_bulk.hpp).
#include "filter_bulk.hpp"

namespace cuckoo_py {

py::array_t<bool> contains_many(const PyFilter& self, const py::handle& keys) {
    return read_many<bool>(self, keys, [&](uint64_t n, auto& hash_at, bool* out, SignalCheck& stop) {
        return self.core.contains_batch(n, hash_at, out, stop);
    });
}

}  // namespace cuckoo_py
