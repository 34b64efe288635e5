// Filter.contains_many's loop for every key layout (see filter_bulk.hpp).
#include "filter_bulk.hpp"

namespace cuckoo_py {

uint64_t contains_keys(const cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys, bool* out,
                       SignalCheck& stop) {
    return with_hasher(hasher, keys, [&](auto hash_at) { return f.contains_batch(keys.size, hash_at, out, stop); });
}

}  // namespace cuckoo_py
