// Filter.count_many: the batch count for every key layout (see filter_bulk.hpp).
#include "filter_bulk.hpp"

#include <algorithm>
#include <vector>

namespace cuckoo_py {

py::array_t<uint8_t> count_many(const PyFilter& self, const py::handle& keys) {
    return read_many<uint8_t>(self, keys, [&](uint64_t n, auto& hash_at, uint8_t* out, SignalCheck& stop) -> uint64_t {
        // One stage holds at most 2 * bucket_size <= 16 copies of a fingerprint: uint8 is
        // exact. A grown filter sums its stages, which can pass 255: count in 32 bits and
        // saturate (a uint8 sum wrapped, and 256 copies read as 0, "absent").
        if (self.core.stages().size() == 1) return self.core.count_batch(n, hash_at, out, stop);
        constexpr uint64_t kChunk = 4096;
        std::vector<uint32_t> wide(static_cast<size_t>(std::min(n, kChunk)));
        for (uint64_t start = 0; start < n; start += kChunk) {
            const uint64_t len = std::min(kChunk, n - start);
            auto shifted = cuckoo::offset_keys(hash_at, start);
            const uint64_t done = self.core.count_batch(len, shifted, wide.data(), stop);
            for (uint64_t j = 0; j < done; ++j) out[start + j] = static_cast<uint8_t>(std::min<uint32_t>(wide[j], 255));
            if (done < len) return start + done;
        }
        return n;
    });
}

}  // namespace cuckoo_py
