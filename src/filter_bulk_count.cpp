// Filter.count_many's loop for every key layout (see filter_bulk.hpp).
#include "filter_bulk.hpp"

#include <algorithm>
#include <vector>

namespace cuckoo_py {

uint64_t count_keys(const cuckoo::StagedFilter& f, const cuckoo::KeyHasher& hasher, const KeyLayout& keys,
                    uint8_t* out, SignalCheck& stop) {
    return with_hasher(hasher, keys, [&](auto hash_at) -> uint64_t {
        const uint64_t n = keys.size;
        // One stage holds at most 2 * bucket_size <= 16 copies of a fingerprint: uint8 is
        // exact. A grown filter sums its stages, which can pass 255: count in 32 bits and
        // saturate (a uint8 sum wrapped, and 256 copies read as 0, "absent").
        if (f.stages().size() == 1) return f.count_batch(n, hash_at, out, stop);
        constexpr uint64_t kChunk = 4096;
        std::vector<uint32_t> wide(static_cast<size_t>(std::min(n, kChunk)));
        for (uint64_t start = 0; start < n; start += kChunk) {
            const uint64_t len = std::min(kChunk, n - start);
            auto shifted = cuckoo::offset_keys(hash_at, start);
            const uint64_t done = f.count_batch(len, shifted, wide.data(), stop);
            for (uint64_t j = 0; j < done; ++j) out[start + j] = static_cast<uint8_t>(std::min<uint32_t>(wide[j], 255));
            if (done < len) return start + done;
        }
        return n;
    });
}

}  // namespace cuckoo_py
