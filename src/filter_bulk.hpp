// The core's batch loops behind the bulk calls of cuckoo._core.Filter (contains_many, count_many,
// add_many and friends, discard_many), one batch of keys at a time. Each instantiates those loops
// for every key layout (with_hasher, batch_keys.hpp) and bucket shape, which is most of the
// extension's compile time; so each lives in a translation unit of its own
// (filter_bulk_<operation>.cpp) and the build compiles them in parallel. These units include no
// pybind11 (whose inline code alone costs each unit 4-5 CPU-s to compile): everything Python
// (key conversion, output arrays, the lock, the GIL, exceptions) stays in
// filter_bulk_binding.cpp, which calls these functions holding the lock, without the GIL. A new
// family of instantiations (another table layout, say) belongs in new files of its own too, not
// in an existing one.
//
// Each returns how many keys of `keys` it handled: all of them, or fewer when `stop` saw an
// interrupt (or, for insert_keys, when the filter was full).
#pragma once

#include <cstdint>

#include "batch_keys.hpp"
#include "cuckoo/staged.hpp"
#include "signal_check.hpp"

namespace cuckoo_py {

// filter_bulk_contains.cpp: out[k], whether key k is (maybe) present.
uint64_t contains_keys(const cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys, bool* out,
                       SignalCheck& stop);

// filter_bulk_count.cpp: out[k], count(key k), saturating at 255.
uint64_t count_keys(const cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys,
                    uint8_t* out, SignalCheck& stop);

// filter_bulk_insert.cpp: inserts the keys in order; sets `full` at the first key that finds no
// room. `was_new` (may be null): see cuckoo::Filter::insert_batch.
uint64_t insert_keys(cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys,
                     cuckoo::Filter::InsertMode mode, bool* was_new, bool& full, SignalCheck& stop);

// filter_bulk_discard.cpp: discards each key in order; out[k], whether a copy was removed.
uint64_t discard_keys(cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys, bool* out,
                      SignalCheck& stop);

}  // namespace cuckoo_py
