// The loop of Filter.add_many, add_unique_many and update for every key layout (see
// filter_bulk.hpp).
#include "filter_bulk.hpp"

namespace cuckoo_py {

uint64_t insert_keys(cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys,
                     cuckoo::Filter::InsertMode mode, bool* was_new, bool& full, SignalCheck& stop) {
    return with_hasher(hasher, keys,
                       [&](auto hash_at) { return f.insert_batch(keys.size, hash_at, mode, was_new, full, stop); });
}

}  // namespace cuckoo_py
