// Key sources of the C++ tests: integers hashed through a filter's own seeded hash, one at a time
// (IntKeys), or a block at a time by the vector hash and declared so (VectorIntKeys): the AVX2
// kernels then read buckets with scalar loads instead of gathers (cuckoo::vector_hash_block).
#pragma once

#include <cstdint>
#include <vector>

#include "cuckoo/filter.hpp"
#include "cuckoo/hash_block.hpp"

namespace cktest {

struct IntKeys {
    const cuckoo::Filter* filter;
    const std::vector<uint64_t>* keys;
    uint64_t operator()(uint64_t k) const { return filter->hash_int((*keys)[k]); }
};

struct VectorIntKeys {
    static constexpr bool kVectorHashBlock = true;
    const cuckoo::Filter* filter;
    const std::vector<uint64_t>* keys;
    uint64_t operator()(uint64_t k) const { return filter->hash_int((*keys)[k]); }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        cuckoo::hash_ints_block(filter->hasher(), keys->data() + start, len, out);
    }
};

}  // namespace cktest
