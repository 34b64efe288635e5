// The frequency counts of a sample of lines, from which `cuckoo dedup` estimates the distinct
// lines of its input before the first one is applied (cuckoo.cli.estimate sizes the filter or the
// exact key set from them). The sample is a few windows of the input: each window's lines are
// split as the pipeline splits them (a line ends at '\n'; its key drops one '\r' before it), a
// window's partial first and last lines are left out unless the window starts or ends the input.
//
// Counting was Python's (bytes.split and collections.Counter): 55-65 ms of every dedup run's
// serial start, for ~50,000 sampled lines, where this takes ~2 ms. Keys are compared by 48 bits
// of a hash and their length (below): two distinct keys that share both would only move an
// estimate by one key, and the mean length by one key's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"

namespace cuckoo {

// keys: lines sampled; distinct: different keys among them; once / twice: keys seen exactly once
// / twice (f1 and f2 of the estimators); seen[k - 1]: keys seen exactly k times, k = 1..kRareMax
// (the rare keys of the abundance-based estimators: their spread tells a sample of keys that
// repeat alike from one with a heavy head); distinct_bytes / once_bytes: the bytes of the distinct
// keys / of those seen once, each key counted once (the exact path plans its memory from the
// distinct keys' mean length, which in real text is far from a line's: repeated lines are short).
struct SampleCounts {
    static constexpr unsigned kRareMax = 10;
    uint64_t keys = 0;
    uint64_t distinct = 0;
    uint64_t once = 0;
    uint64_t twice = 0;
    uint64_t seen[kRareMax] = {};
    uint64_t distinct_bytes = 0;
    uint64_t once_bytes = 0;
};

// Collects the hashes of the keys of the complete lines of windows and counts them.
class LineSample {
public:
    // Adds one window: `whole_start`: it starts the input (its first line is complete);
    // `whole_end`: it ends the input (a last line without '\n' is complete).
    void add_window(const unsigned char* data, size_t len, bool whole_start, bool whole_end) {
        const unsigned char* const end = data + len;
        const unsigned char* line = data;
        bool first = true;
        while (true) {
            const void* nl = std::memchr(line, '\n', static_cast<size_t>(end - line));
            if (!nl) break;
            const unsigned char* stop = static_cast<const unsigned char*>(nl);
            if (!first || whole_start) add_key(line, stop);
            first = false;
            line = stop + 1;
        }
        // The rest after the last '\n' (or the whole window without one): a line only when the
        // window ends the input, holds bytes and is not the tail of a partial first line.
        if (whole_end && line != end && (!first || whole_start)) add_key(line, end);
    }

    SampleCounts counts() {
        std::sort(keys_.begin(), keys_.end());
        SampleCounts c;
        c.keys = keys_.size();
        for (size_t i = 0; i < keys_.size();) {
            size_t j = i + 1;
            while (j < keys_.size() && keys_[j] == keys_[i]) ++j;
            ++c.distinct;
            c.once += j - i == 1;
            c.twice += j - i == 2;
            if (j - i <= SampleCounts::kRareMax) ++c.seen[j - i - 1];
            const uint64_t len = keys_[i] & kLenMask;
            c.distinct_bytes += len;
            if (j - i == 1) c.once_bytes += len;
            i = j;
        }
        return c;
    }

private:
    // A sampled key is one word: the high 48 bits of its hash above its length (at most kLenMask:
    // longer keys count as that long). Equal keys make equal words; two distinct keys of a sample
    // of 10^5 share one with probability ~2 * 10^-5. (A word of 16 bytes, hash and length apart,
    // cost 6.5 MB of peak RSS in `cuckoo dedup --exact --memory 64M` of the hex benchmark: the
    // larger vector, freed, raises glibc's mmap threshold, and the run's block buffers then come
    // from heap arenas that keep their pages.)
    static constexpr uint64_t kLenMask = 0xFFFF;
    void add_key(const unsigned char* from, const unsigned char* to) {
        if (to != from && to[-1] == '\r') --to;
        const size_t len = static_cast<size_t>(to - from);
        fault::room_for_one(keys_);  // (the allocation sweep of tests/test_dedup_faults.py fails it too)
        keys_.push_back((xxh3_64(from, len, 0) & ~kLenMask) | std::min<uint64_t>(len, kLenMask));
    }

    std::vector<uint64_t> keys_;
};

}  // namespace cuckoo
