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

#include "cuckoo/locate.hpp"

namespace cuckoo {

// Node n of the search is a full bucket reached by moving item `slot` of bucket nodes[parent]
// to its alternate.
struct EvictNode {
    uint64_t bucket;
    int32_t parent;
    uint32_t slot;  // slot of the parent bucket whose item moves into `bucket`
};

struct EvictResult {
    bool found = false;
    uint64_t bucket = 0;  // i1 or i2: the bucket where a slot was freed
    unsigned slot = 0;
    uint64_t moves = 0;             // items moved by the applied chain
    uint64_t buckets_searched = 0;  // buckets examined
};

// Searches level by level: all buckets of the next level are prefetched before any is examined,
// so a level costs about one memory latency, not one per bucket. A bucket is not re-entered on
// its own path, so a chain never touches a bucket twice. At most max_kicks buckets are examined.
// `nodes` is scratch space (kept by the caller to avoid an allocation per insert).
template <class Table>
EvictResult evict_search(Table& table, const Locator& loc, uint64_t i1, uint64_t i2, unsigned max_kicks,
                         std::vector<EvictNode>& nodes) {
    EvictResult r;
    nodes.clear();
    nodes.push_back({i1, -1, 0});
    nodes.push_back({i2, -1, 0});
    auto on_path = [&](int32_t node, uint64_t bucket) {
        for (; node >= 0; node = nodes[static_cast<size_t>(node)].parent)
            if (nodes[static_cast<size_t>(node)].bucket == bucket) return true;
        return false;
    };
    const unsigned b = table.slots_per_bucket();
    uint64_t budget = max_kicks;
    size_t level_begin = 0;
    while (budget > 0 && level_begin < nodes.size()) {
        const size_t level_end = nodes.size();
        // Expand the level: every slot of every bucket gives one candidate bucket.
        for (size_t n = level_begin; n < level_end && nodes.size() - level_end < budget; ++n) {
            const uint64_t bucket = nodes[n].bucket;
            for (unsigned s = 0; s < b && nodes.size() - level_end < budget; ++s) {
                const uint64_t child = loc.alt_index(bucket, table.tag(bucket, s));
                if (on_path(static_cast<int32_t>(n), child)) continue;
                table.prefetch(child);
                nodes.push_back({child, static_cast<int32_t>(n), s});
            }
        }
        if (nodes.size() == level_end) break;
        budget -= nodes.size() - level_end;
        // Examine it: the first candidate with an empty slot ends the search.
        for (size_t c = level_end; c < nodes.size(); ++c) {
            ++r.buckets_searched;
            const int empty = table.empty_slot(nodes[c].bucket);
            if (empty < 0) continue;
            // Apply the chain from its end: each item is copied before its old slot is reused.
            int32_t node = nodes[c].parent;
            unsigned slot = nodes[c].slot;
            uint64_t dest = nodes[c].bucket;
            unsigned dest_slot = static_cast<unsigned>(empty);
            while (true) {
                const uint64_t src = nodes[static_cast<size_t>(node)].bucket;
                table.move(src, slot, dest, dest_slot);
                ++r.moves;
                dest = src;
                dest_slot = slot;
                if (nodes[static_cast<size_t>(node)].parent < 0) break;
                slot = nodes[static_cast<size_t>(node)].slot;
                node = nodes[static_cast<size_t>(node)].parent;
            }
            r.found = true;
            r.bucket = dest;
            r.slot = dest_slot;
            return r;
        }
        level_begin = level_end;
    }
    return r;
}

}  // namespace cuckoo
