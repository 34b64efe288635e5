// The breadth-first eviction search shared by the filter (fingerprints) and the store (tag and
// log offset): when both buckets of a new item are full, find the shortest chain of moves that
// ends at an empty slot, then apply it from its end, so that at no moment is a stored item
// missing and a failed search changes nothing.
//
// A table is anything with
//   unsigned slots_per_bucket() const
//   uint32_t tag(uint64_t bucket, unsigned slot) const   // what alt_index needs (fp or tag)
//   int empty_slot(uint64_t bucket) const                // -1 when full
//   void move(uint64_t from_bucket, unsigned from_slot, uint64_t to_bucket, unsigned to_slot)
//   void prefetch(uint64_t bucket) const
// Items move only between their own two buckets: alt_index(bucket, tag) is the other one.
#pragma once

#include <cstdint>
#include <vector>

#include "cuckoo/cpu.hpp"  // cpu_is_intel
#include "cuckoo/locate.hpp"

namespace cuckoo {

// Node n of the search is a full bucket reached by moving item `slot` of bucket nodes[parent]
// to its alternate.
struct EvictNode {
    uint64_t bucket;
    int32_t parent;
    uint32_t slot;  // slot of the parent bucket whose item moves into `bucket`
};

// Most slots a bucket of a searched table has (filter buckets: 2, 4 or 8; store buckets: 4).
constexpr unsigned kMaxEvictSlots = 8;
// Candidates of a level generated (their buckets prefetched) ahead of the one examined, for
// tables in the caches; tables in main memory generate whole levels, whose reads then overlap.
// Measured filling 10^6 keys to 95% of the slots (2 MiB table, C++, two runs each; ns a key):
// whole levels 19.7, 8 ahead 18.1-18.2, 4 ahead 17.6-17.7; at 6*10^7 keys (122 MiB) the last 5%
// took 347 ns a key with whole levels and 410-497 with 4-16 ahead.
constexpr size_t kEvictLookaheadCached = 4;
constexpr size_t kEvictWholeLevel = ~size_t(0);
// On an Intel Xeon Skylake-SP (family 6 model 85, 2 vCPUs, 33 MiB L3; 2026-11-26, C++, AVX2
// level, b = 4, f = 16, filling from 85% to 95% load, medians of 5-7 alternating rounds, thread
// CPU time, load ~3.5) whole levels lost to a lookahead of 6-10 also in main memory: 6*10^7 keys
// 265 against 234-236 ns a key, 10^7 keys (20 MiB) 237 against 209-210; 4 ahead 0.94x, 16 0.89x;
// the whole fill from empty 0.95x (70.8 -> 66.6 ns), and 0.93x at the AVX-512 level. Profiles
// there show the search stalled in its prefetch instructions: requesting a whole level (up to 32
// buckets) fills the core's line fill buffers with lines the search mostly never examines (it
// ends at the first bucket with room). So Intel CPUs take 8 ahead in tables beyond the caches
// (cpu_is_intel), others the whole levels measured best on Zen 4.
constexpr size_t kEvictLookaheadIntel = 8;
inline size_t evict_lookahead_beyond_caches() noexcept {
    return cpu_is_intel() ? kEvictLookaheadIntel : kEvictWholeLevel;
}

struct EvictResult {
    bool found = false;
    uint64_t bucket = 0;  // i1 or i2: the bucket where a slot was freed
    unsigned slot = 0;
    uint64_t moves = 0;             // items moved by the applied chain
    uint64_t buckets_searched = 0;  // buckets examined
};

// Searches level by level: the buckets of the next level are prefetched before they are examined
// (all of them, or `lookahead` ahead: see kEvictLookaheadCached), so a level costs about one
// memory latency, not one per bucket. A bucket is not re-entered on
// its own path, so a chain never touches a bucket twice. At most max_kicks buckets are examined.
// `nodes` is scratch space (kept by the caller to avoid an allocation per insert).
template <class Table>
EvictResult evict_search(Table& table, const Locator& loc, uint64_t i1, uint64_t i2, unsigned max_kicks,
                         std::vector<EvictNode>& nodes, size_t lookahead = kEvictWholeLevel) {
    EvictResult r;
    // The nodes live in a buffer of max_kicks + 2 entries, written field by field. (push_back of
    // a brace-initialised node compiled to three small stores and one 16-byte load of them: a
    // failed store-to-load forward, which was a third of the search's time.)
    if (nodes.size() < size_t(max_kicks) + 2) nodes.resize(size_t(max_kicks) + 2);
    EvictNode* const node = nodes.data();
    node[0] = EvictNode{i1, -1, 0};
    node[1] = EvictNode{i2, -1, 0};
    size_t count = 2;
    auto on_path = [&](int32_t n, uint64_t bucket) {
        for (; n >= 0; n = node[static_cast<size_t>(n)].parent)
            if (node[static_cast<size_t>(n)].bucket == bucket) return true;
        return false;
    };
    const unsigned b = table.slots_per_bucket();
    uint64_t budget = max_kicks;
    size_t level_begin = 0;
    while (budget > 0 && level_begin < count) {
        const size_t level_end = count;
        // The level's candidates are every slot of every bucket of the level before, in order,
        // up to the budget. They are generated a few buckets ahead of the one examined, not all
        // at once: the search usually ends early in a level (at 95% load a bucket has room with
        // probability ~0.2), and computing the alternates of the rest was most of its time. The
        // candidates, their order, and so the result are those of expanding the whole level first.
        size_t next_parent = level_begin;
        for (size_t c = level_end;; ++c) {
            while (next_parent < level_end && count - level_end < budget && count - c < lookahead) {
                const uint64_t bucket = node[next_parent].bucket;
                // All tags first: the node writes below could alias the table's bytes for the
                // compiler, which would then reload the bucket for every slot.
                uint32_t tags[kMaxEvictSlots];
                for (unsigned s = 0; s < b; ++s) tags[s] = table.tag(bucket, s);
                for (unsigned s = 0; s < b && count - level_end < budget; ++s) {
                    const uint64_t child = loc.alt_index(bucket, tags[s]);
                    if (on_path(static_cast<int32_t>(next_parent), child)) continue;
                    table.prefetch(child);
                    node[count].bucket = child;
                    node[count].parent = static_cast<int32_t>(next_parent);
                    node[count].slot = s;
                    ++count;
                }
                ++next_parent;
            }
            if (c == count) break;  // the level had no candidate with room
            ++r.buckets_searched;
            const int empty = table.empty_slot(node[c].bucket);
            if (empty < 0) continue;
            // Apply the chain from its end: each item is copied before its old slot is reused.
            int32_t at = node[c].parent;
            unsigned slot = node[c].slot;
            uint64_t dest = node[c].bucket;
            unsigned dest_slot = static_cast<unsigned>(empty);
            while (true) {
                const uint64_t src = node[static_cast<size_t>(at)].bucket;
                table.move(src, slot, dest, dest_slot);
                ++r.moves;
                dest = src;
                dest_slot = slot;
                if (node[static_cast<size_t>(at)].parent < 0) break;
                slot = node[static_cast<size_t>(at)].slot;
                at = node[static_cast<size_t>(at)].parent;
            }
            r.found = true;
            r.bucket = dest;
            r.slot = dest_slot;
            return r;
        }
        if (count == level_end) break;
        budget -= count - level_end;
        level_begin = level_end;
    }
    return r;
}

}  // namespace cuckoo
