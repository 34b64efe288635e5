// The frequency counts of a sample of lines, from which `cuckoo dedup` estimates the distinct
// lines of its input before the first one is applied (cuckoo.cli.estimate sizes the filter or the
// exact key set from them). The sample is a few windows of the input: each window's lines are
// split as the pipeline splits them (a line ends at '\n'; its key drops one '\r' before it), a
// window's partial first and last lines are left out unless the window starts or ends the input.
//
// Counting was Python's (bytes.split and collections.Counter): 55-65 ms of every dedup run's
// serial start, for ~50,000 sampled lines, where this takes ~2 ms. Keys are compared by a 64-bit
// hash: two distinct keys of a sample of 10^5 share one with probability ~3 * 10^-10, and a
// shared one would only move an estimate by one key.
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
// repeat alike from one with a heavy head).
struct SampleCounts {
    static constexpr unsigned kRareMax = 10;
    uint64_t keys = 0;
    uint64_t distinct = 0;
    uint64_t once = 0;
    uint64_t twice = 0;
    uint64_t seen[kRareMax] = {};
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
        std::sort(hashes_.begin(), hashes_.end());
        SampleCounts c;
        c.keys = hashes_.size();
        for (size_t i = 0; i < hashes_.size();) {
            size_t j = i + 1;
            while (j < hashes_.size() && hashes_[j] == hashes_[i]) ++j;
            ++c.distinct;
            c.once += j - i == 1;
            c.twice += j - i == 2;
            if (j - i <= SampleCounts::kRareMax) ++c.seen[j - i - 1];
            i = j;
        }
        return c;
    }

private:
    void add_key(const unsigned char* from, const unsigned char* to) {
        if (to != from && to[-1] == '\r') --to;
        fault::room_for_one(hashes_);  // (the allocation sweep of tests/test_dedup_faults.py fails it too)
        hashes_.push_back(xxh3_64(from, static_cast<size_t>(to - from), 0));
    }

    std::vector<uint64_t> hashes_;
};

}  // namespace cuckoo
