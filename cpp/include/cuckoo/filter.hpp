// The cuckoo filter of Fan, Andersen, Kaminsky and Mitzenmacher (CoNEXT 2014): partial-key cuckoo
// hashing of short fingerprints into buckets of b slots. How a key hash becomes its two buckets
// and its fingerprint (and why tables need not be a power of two) is in cuckoo/locate.hpp.
//
// Insertion: an empty slot in i1, else in i2, else a breadth-first search for the shortest chain
// of moves that ends at an empty slot, visiting at most max_kicks buckets. The chain is only
// applied once found, so a failed insert changes nothing: no fingerprint is ever lost and no stash
// is needed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuckoo/errors.hpp"  // FilterFullError, ReadOnlyError
#include "cuckoo/evict.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/insert_avx2.hpp"
#include "cuckoo/locate.hpp"
#include "cuckoo/lookup_avx2.hpp"
#include "cuckoo/table.hpp"

namespace cuckoo {

constexpr unsigned kMinFingerprintBits = 4;
constexpr unsigned kMaxFingerprintBits = 32;
constexpr uint64_t kMaxBucketCount = uint64_t(1) << 32;  // bucket index comes from 32 hash bits
// The most buckets an insert's eviction search may visit: bounds the time of a failing insert
// (a few milliseconds; the default of 500 takes microseconds).
constexpr unsigned kMaxKicksLimit = 65536;

inline bool valid_bucket_size(unsigned b) { return b == 2 || b == 4 || b == 8; }

// Load a filter of bucket size b is sized for: a little below the load at which inserts start
// failing (about 0.84, 0.955, 0.98), so that filling to `capacity` succeeds with margin.
// Semi-sorted filters exist to save space, and are sized closer to the failure point (their
// eviction is the plain b = 4 one, first failure at ~0.955-0.96 for large tables).
constexpr double kSemiSortedDesignLoad = 0.955;
inline double design_load(unsigned bucket_size, bool semi_sorted = false) {
    if (semi_sorted) return kSemiSortedDesignLoad;
    switch (bucket_size) {
        case 2: return 0.80;
        case 4: return 0.935;
        default: return 0.965;
    }
}

// Smallest f with 2*b / 2^f <= fpr, clamped below at kMinFingerprintBits. Throws when even
// 32-bit fingerprints cannot reach fpr.
inline unsigned fingerprint_bits_for(double fpr, unsigned bucket_size) {
    if (!(fpr > 0.0 && fpr < 1.0)) throw std::invalid_argument("fpr must be in (0, 1)");
    // Range-checked as a double before the conversion: for a tiny fpr, 2b/fpr overflows to
    // infinity, and converting that to unsigned is undefined (it gave 4 bits on x86-64).
    double need = std::ceil(std::log2(2.0 * bucket_size / fpr) - 1e-9);
    if (!(need <= kMaxFingerprintBits))
        throw std::invalid_argument("fpr is too small: it would need more than 32 fingerprint bits");
    if (need < kMinFingerprintBits) need = kMinFingerprintBits;
    return static_cast<unsigned>(need);
}

// Buckets for `capacity` items at the design load: an even multiple of kBlockBuckets.
inline uint64_t bucket_count_for(uint64_t capacity, unsigned bucket_size, bool semi_sorted = false) {
    const double buckets =
        std::ceil(static_cast<double>(capacity) / (bucket_size * design_load(bucket_size, semi_sorted)));
    if (buckets > static_cast<double>(kMaxBucketCount))
        throw std::length_error("capacity is too large: a filter holds at most 2^32 buckets");
    uint64_t m = static_cast<uint64_t>(buckets);
    if (m < kBlockBuckets) m = kBlockBuckets;
    return (m + kBlockBuckets - 1) / kBlockBuckets * kBlockBuckets;
}

// The shape of a filter sized for `capacity` keys: the one sizing rule. Filter() in the binding,
// cuckoo.theory and the CLI all take their numbers from filter_shape (Python: _core._filter_shape).
struct FilterShape {
    uint64_t bucket_count = 0;
    unsigned bucket_size = 0;
    unsigned fingerprint_bits = 0;
    bool semi_sorted = false;
    double design_load = 0;   // the load `capacity` keys fill it to (about)
    uint64_t table_bytes = 0;  // bytes of its packed table (PackedTable::data_bytes_for)
};

// The filter for `capacity` keys with bucket_size slots a bucket: fingerprint_bits wide (0: the
// fewest bits that keep the false-positive rate at most `fpr`, fingerprint_bits_for), with the
// buckets of bucket_count_for. Throws std::invalid_argument for a parameter outside its range
// (capacity 0, bucket size, fpr, fingerprint bits, semi-sorted limits) and std::length_error when
// it would need more than 2^32 buckets. Defined after Filter (it checks with Filter::check_params).
inline FilterShape filter_shape(uint64_t capacity, double fpr, unsigned bucket_size, unsigned fingerprint_bits = 0,
                                bool semi_sorted = false);

// 1 - (1 - 1/(2^f - 1))^(2 b load): the chance that one of the 2b slots an absent key is compared
// with holds its fingerprint, with fingerprints uniform over the 2^f - 1 non-zero values.
// fp_shift > 0 (a nested stage, locate.hpp): the values are the (2^(f - e) - 1) 2^e of its formula.
inline double expected_fpr(unsigned fingerprint_bits, unsigned bucket_size, double load, unsigned fp_shift = 0) {
    const int base = static_cast<int>(fingerprint_bits - fp_shift);
    const double p = 1.0 / std::ldexp(std::ldexp(1.0, base) - 1.0, static_cast<int>(fp_shift));
    return -std::expm1(2.0 * bucket_size * load * std::log1p(-p));
}

struct InsertStats {
    uint64_t inserts = 0;         // successful inserts
    uint64_t failed_inserts = 0;  // FilterFullError raised
    uint64_t kicked_inserts = 0;  // inserts that needed to move other fingerprints
    uint64_t moves = 0;           // fingerprints moved to their alternate bucket
    uint64_t buckets_searched = 0;  // buckets visited by eviction searches
    uint64_t deletes = 0;           // copies removed (discard, remove, discard_many)

    InsertStats& operator+=(const InsertStats& t) noexcept {
        inserts += t.inserts;
        failed_inserts += t.failed_inserts;
        kicked_inserts += t.kicked_inserts;
        moves += t.moves;
        buckets_searched += t.buckets_searched;
        deletes += t.deletes;
        return *this;
    }
};

class Filter {
public:
    // semi_sorted: semi-sorted buckets (cuckoo/semisort.hpp), for b = 4 and f <= 16 only.
    Filter(uint64_t bucket_count, unsigned bucket_size, unsigned fingerprint_bits, unsigned max_kicks,
           uint64_t seed, HashAlgorithm hash_algorithm = HashAlgorithm::xxh3, bool semi_sorted = false)
        : seed_(seed), hash_algorithm_(hash_algorithm), max_kicks_(max_kicks) {
        check_params(bucket_count, bucket_size, fingerprint_bits, semi_sorted);
        table_ = PackedTable(bucket_count, bucket_size, fingerprint_bits, semi_sorted);
        init_derived();
    }

    // An empty filter of the given shape (filter_shape), sized for `capacity` items.
    Filter(const FilterShape& shape, uint64_t capacity, unsigned max_kicks, uint64_t seed,
           HashAlgorithm hash_algorithm = HashAlgorithm::xxh3)
        : Filter(shape.bucket_count, shape.bucket_size, shape.fingerprint_bits, max_kicks, seed, hash_algorithm,
                 shape.semi_sorted) {
        capacity_ = capacity;
    }

    // A filter for `capacity` items at false-positive rate `fpr` (fingerprint_bits = 0: from fpr),
    // shaped by filter_shape.
    static Filter for_capacity(uint64_t capacity, double fpr, unsigned fingerprint_bits, unsigned bucket_size,
                               unsigned max_kicks, uint64_t seed,
                               HashAlgorithm hash_algorithm = HashAlgorithm::xxh3, bool semi_sorted = false) {
        return Filter(filter_shape(capacity, fpr, bucket_size, fingerprint_bits, semi_sorted), capacity, max_kicks, seed,
                      hash_algorithm);
    }

    static void check_params(uint64_t bucket_count, unsigned bucket_size, unsigned fingerprint_bits,
                             bool semi_sorted = false) {
        if (!valid_bucket_size(bucket_size)) throw std::invalid_argument("bucket_size must be 2, 4 or 8");
        if (fingerprint_bits < kMinFingerprintBits || fingerprint_bits > kMaxFingerprintBits)
            throw std::invalid_argument("fingerprint_bits must be between 4 and 32");
        if (semi_sorted && bucket_size != semisort::kSlots)
            throw std::invalid_argument("semi_sort needs bucket_size=4, not " + std::to_string(bucket_size));
        if (semi_sorted && !semisort::supports(bucket_size, fingerprint_bits))
            throw std::invalid_argument("semi_sort needs fingerprint_bits of at most 16, not " +
                                        std::to_string(fingerprint_bits));
        if (bucket_count == 0 || bucket_count % kBlockBuckets != 0 || bucket_count > kMaxBucketCount)
            throw std::invalid_argument("bucket_count must be a positive multiple of 8, at most 2^32");
    }

    // ---- parameters and statistics ----
    uint64_t bucket_count() const noexcept { return table_.bucket_count(); }
    unsigned bucket_size() const noexcept { return table_.bucket_size(); }
    unsigned fingerprint_bits() const noexcept { return table_.fingerprint_bits(); }
    bool semi_sorted() const noexcept { return table_.semi_sorted(); }
    uint64_t slot_count() const noexcept { return table_.slot_count(); }
    uint64_t seed() const noexcept { return seed_; }
    HashAlgorithm hash_algorithm() const noexcept { return hash_algorithm_; }
    unsigned max_kicks() const noexcept { return max_kicks_; }
    // Items the filter was sized for (the design load of its slots unless given at construction).
    uint64_t capacity() const noexcept {
        return capacity_ ? capacity_ : static_cast<uint64_t>(slot_count() * design_load(bucket_size(), semi_sorted()));
    }
    uint64_t size() const noexcept { return count_; }
    double load_factor() const noexcept { return static_cast<double>(count_) / static_cast<double>(slot_count()); }
    uint64_t table_bytes() const noexcept { return table_.data_bytes(); }
    double expected_fpr() const noexcept {
        return cuckoo::expected_fpr(fingerprint_bits(), bucket_size(), load_factor(), fp_shift_);
    }
    double fpr_bound() const noexcept { return cuckoo::expected_fpr(fingerprint_bits(), bucket_size(), 1.0, fp_shift_); }
    const InsertStats& stats() const noexcept { return stats_; }
    const PackedTable& table() const noexcept { return table_; }
    // Backs the table's pages with memory now (ByteBuffer::prefault).
    void prefault() noexcept { table_.prefault(); }

    // ---- hashing ----
    Locator locator() const noexcept { return Locator{bucket_count(), block_count_, fingerprint_bits(), level_, fp_shift_}; }
    // 0, or the level of a nested stage (cuckoo/locate.hpp): then the stage refines `base`
    // geometry, and a key's (bucket pair, fingerprint) here determines it in every stage of a
    // lower level built on the same base.
    unsigned nest_level() const noexcept { return level_; }
    unsigned fp_shift() const noexcept { return fp_shift_; }

    // The stage of level `level` >= 1 nested on `base` (a plain level-0 filter): m0 << level
    // buckets, min(f0 + level, 32) fingerprint bits, sized for `capacity` keys.
    static Filter nested_on(const Filter& base, unsigned level, uint64_t capacity, bool semi_sorted) {
        if (base.level_ != 0 || level == 0 || level > 31 || (base.bucket_count() << level) > kMaxBucketCount)
            throw std::length_error("capacity is too large: a filter holds at most 2^32 buckets");
        const unsigned f0 = base.fingerprint_bits();
        const unsigned e = std::min(level, kMaxFingerprintBits - f0);
        Filter f(base.bucket_count() << level, base.bucket_size(), f0 + e, base.max_kicks(), base.seed(),
                 base.hash_algorithm(), semi_sorted);
        f.capacity_ = capacity;
        f.level_ = level;
        f.fp_shift_ = e;
        return f;
    }
    // Entries of the table by bucket: how many copies of `fp` the pair of `bucket` holds, and one
    // copy removed or added there (false: none there / no room within max_kicks).
    unsigned count_entry(uint64_t bucket, uint32_t fp) const noexcept {
        return table_.count(bucket, fp) + table_.count(alt_index(bucket, fp), fp);
    }
    bool erase_entry(uint64_t bucket, uint32_t fp) {
        require_writable();
        return erase_located(KeyHash{bucket, alt_index(bucket, fp), fp});
    }
    bool insert_entry(uint64_t bucket, uint32_t fp) { return insert_located(KeyHash{bucket, alt_index(bucket, fp), fp}); }
    uint32_t fingerprint_of(uint64_t h) const noexcept { return locator().fingerprint_of(h); }
    uint64_t index_of(uint64_t h) const noexcept { return locator().index_of(h); }
    uint64_t alt_index(uint64_t index, uint32_t fp) const noexcept { return locator().alt_index(index, fp); }
    KeyHash locate(uint64_t h) const noexcept { return locator().locate(h); }
    KeyHasher hasher() const noexcept { return KeyHasher{seed_, hash_algorithm_}; }
    uint64_t hash_int(uint64_t value) const noexcept { return hasher().hash_int(value); }
    uint64_t hash_key(const void* data, size_t len) const noexcept { return hasher().hash_key(data, len); }

    // ---- scalar operations on a key's hash ----
    bool contains_hash(uint64_t h) const noexcept {
        const KeyHash k = locate(h);
        // Both buckets are read unconditionally: branch-free is faster than "i2 only if i1 misses".
        // One table probe and one shape dispatch for both (a scalar `in` is mostly such overhead).
        const TableProbe& probe = table_.probe();
        return probe.with_shape([&](auto shape) {
            return probe.either_contains<decltype(shape)::value>(probe.bit_of(k.i1), probe.bit_of(k.i2), probe.pattern_of(k.fp));
        });
    }
    uint64_t count_hash(uint64_t h) const noexcept {
        const KeyHash k = locate(h);
        return table_.count(k.i1, k.fp) + table_.count(k.i2, k.fp);
    }
    // Whether the key's fingerprint fills both of its buckets (2b copies): no insert of the key,
    // or of any key with the same buckets and fingerprint, can then succeed, whatever the load.
    bool pair_saturated_hash(uint64_t h) const noexcept { return count_hash(h) >= 2u * bucket_size(); }
    // Inserts; returns false (filter unchanged) if no room was found within max_kicks.
    bool insert_hash(uint64_t h) { return insert_located(locate(h)); }
    bool insert_unique_hash(uint64_t h, bool& was_new) {
        require_writable();  // also when the key is present: a write to a read-only filter always raises
        const KeyHash k = locate(h);
        if (table_.contains(k.i1, k.fp) || table_.contains(k.i2, k.fp)) {
            was_new = false;
            return true;
        }
        was_new = true;
        return insert_located(k);
    }
    bool erase_hash(uint64_t h) {
        require_writable();
        const KeyHash k = locate(h);
        return erase_located(k);
    }

    void clear() {
        require_writable();
        table_.clear();
        count_ = 0;
    }

    // ---- batches ----
    // Each batch takes n keys through `hash_at(k) -> uint64_t` and works in blocks (see
    // for_each_located), so many cache misses are in flight at once. Results equal the scalar
    // operations applied to the keys one by one in order. `should_stop()` is polled between
    // blocks (signal checks); a batch that stops returns how many keys it completed.
    // Semi-sorted tables take the keys through BlockKeys (see there: compile time).
    template <class HashAt, class Out, class Stop>
    uint64_t contains_batch(uint64_t n, HashAt&& hash_at, Out* out, Stop&& should_stop) const {
        const TableProbe probe = table_.probe();
        if (probe.shape() == BucketShape::SemiSorted) {
            BlockKeys keys(hash_at);
            return contains_loop<BucketShape::SemiSorted>(probe, n, keys, out, should_stop);
        }
        return probe.with_plain_shape([&](auto shape) {
            return contains_loop<decltype(shape)::value>(probe, n, hash_at, out, should_stop);
        });
    }
    template <class HashAt, class Out, class Stop>
    uint64_t count_batch(uint64_t n, HashAt&& hash_at, Out* out, Stop&& should_stop) const {
        const TableProbe probe = table_.probe();
        if (probe.shape() == BucketShape::SemiSorted) {
            BlockKeys keys(hash_at);
            return count_loop<BucketShape::SemiSorted>(probe, n, keys, out, should_stop);
        }
        return probe.with_plain_shape([&](auto shape) {
            return count_loop<decltype(shape)::value>(probe, n, hash_at, out, should_stop);
        });
    }
    // Inserts keys in order. Stops at the first key that finds no room (filter as it was before
    // that key) and returns the number of keys inserted before it. `was_new` (may be null): for
    // unique inserts, whether each key was absent before (a key repeated in the batch is new only
    // the first time).
    enum class InsertMode { Always, Unique };
    template <class HashAt, class Stop>
    uint64_t insert_batch(uint64_t n, HashAt&& hash_at, InsertMode mode, bool* was_new, bool& full,
                          Stop&& should_stop) {
        require_writable();
        full = false;
        const TableProbe probe = table_.probe();
        return probe.with_shape([&](auto shape) {
            constexpr BucketShape Shape = decltype(shape)::value;
#if CUCKOO_X86_DISPATCH
            if constexpr (Shape == BucketShape::Aligned || Shape == BucketShape::OneLoad) {
                if (kernels::use_avx2() && level_ == 0)  // the vector kernels know the level-0 formulas only
                    return insert_loop_avx2<Shape>(probe, n, hash_at, mode, was_new, full, should_stop);
            }
#endif
            return for_each_located(n, hash_at, should_stop, [&](uint64_t j, const LocatedBlock& b, unsigned x) {
                const KeyHash k = b.key(x);
                if (mode == InsertMode::Unique) {
                    const bool present = probe.either_contains<Shape>(b.bit1[x], b.bit2[x], probe.pattern_of(k.fp));
                    if (was_new) was_new[j] = !present;
                    if (present) return true;
                }
                // The common case without a call: a bucket with room, in the block's prefetched lines.
                if (place_if_room<Shape>(probe, k, b.bit1[x], b.bit2[x]) || insert_located(k)) return true;
                full = true;
                return false;
            });
        });
    }
    template <class HashAt, class Stop>
    uint64_t erase_batch(uint64_t n, HashAt&& hash_at, bool* out, Stop&& should_stop) {
        require_writable();
        return for_each_located(n, hash_at, should_stop, [&](uint64_t j, const LocatedBlock& b, unsigned x) {
            const bool erased = erase_located(b.key(x));
            if (out) out[j] = erased;
            return true;
        });
    }

    // ---- whole-filter operations ----
    bool same_layout(const Filter& o) const noexcept {
        return bucket_count() == o.bucket_count() && bucket_size() == o.bucket_size() &&
               fingerprint_bits() == o.fingerprint_bits() && semi_sorted() == o.semi_sorted() && seed_ == o.seed_ &&
               hash_algorithm_ == o.hash_algorithm_ && level_ == o.level_ && fp_shift_ == o.fp_shift_;
    }
    // Equal parameters and the same multiset of stored (bucket pair, fingerprint) entries: where
    // in its two buckets a fingerprint sits depends on insertion history, not on which keys were
    // added, so two filters that saw the same keys in any order (or merged) compare equal and
    // answer every lookup and count identically.
    bool operator==(const Filter& o) const {
        if (!same_layout(o) || count_ != o.count_) return false;
        return canonical_entries() == o.canonical_entries();
    }
    // Every stored fingerprint as (lower bucket of its pair) << 32 | fp, sorted.
    std::vector<uint64_t> canonical_entries() const {
        std::vector<uint64_t> out;
        out.reserve(count_);
        const Locator loc = locator();
        for (uint64_t i = 0; i < bucket_count(); ++i) {
            for (unsigned s = 0; s < bucket_size(); ++s) {
                const uint32_t fp = table_.get(i, s);
                if (fp) out.push_back((std::min(i, loc.alt_index(i, fp)) << 32) | fp);
            }
        }
        std::sort(out.begin(), out.end());
        return out;
    }
    bool operator!=(const Filter& o) const { return !(*this == o); }

    // Rebuilds the item count from the table (used after loading a table from outside).
    uint64_t count_occupied() const noexcept {
        uint64_t n = 0;
        for (uint64_t i = 0; i < bucket_count(); ++i) n += table_.occupied(i);
        return n;
    }

    // Re-inserts every fingerprint of `other` (same layout: see same_layout) at the bucket it was
    // stored in or that bucket's alternate: exactly what inserting other's keys would store.
    // Returns false, leaving this filter partly merged, if one finds no room: callers merge into
    // a copy.
    bool merge_from(const Filter& other) {
        require_writable();
        if (!same_layout(other)) throw std::invalid_argument("merge_from needs filters of the same layout");
        const Locator loc = locator();
        const TableProbe probe = table_.probe();
        // Buckets are read in order; the alternates are random, so they are gathered and
        // prefetched a block at a time, like the keys of a bulk insert.
        KeyHash block[kBatchBlock];
        unsigned pending = 0;
        auto flush = [&] {
            for (unsigned j = 0; j < pending; ++j)
                if (!insert_located(block[j])) return false;
            pending = 0;
            return true;
        };
        for (uint64_t i = 0; i < other.bucket_count(); ++i) {
            for (unsigned s = 0; s < other.bucket_size(); ++s) {
                const uint32_t fp = other.table_.get(i, s);
                if (fp == 0) continue;
                block[pending] = KeyHash{i, loc.alt_index(i, fp), fp};
                probe.prefetch(block[pending].i2);
                if (++pending == kBatchBlock && !flush()) return false;
            }
        }
        return flush();
    }

    // The set union on fingerprints (like collections.Counter's |): for every (bucket pair,
    // fingerprint) of `other` (same layout), this filter ends with the larger of the two counts.
    // Each entry of `other` is handled once, at its first slot in the lower bucket of its pair
    // that holds it; the missing copies go into the same bucket pair. Returns false, leaving this
    // filter partly merged, if one finds no room: callers merge into a copy.
    bool union_from(const Filter& other) {
        require_writable();
        if (!same_layout(other)) throw std::invalid_argument("union_from needs filters of the same layout");
        const Locator loc = locator();
        const TableProbe theirs = other.table_.probe();
        for (uint64_t i = 0; i < other.bucket_count(); ++i) {
            for (unsigned s = 0; s < other.bucket_size(); ++s) {
                const uint32_t fp = other.table_.get(i, s);
                if (fp == 0) continue;
                int first;
                const unsigned here = theirs.find_all(i, fp, first);
                if (static_cast<unsigned>(first) != s) continue;  // not the first copy in bucket i
                const uint64_t j = loc.alt_index(i, fp);
                const unsigned there = theirs.count(j, fp);
                if (j < i && there > 0) continue;  // handled at bucket j, the lower one
                const unsigned mine = table_.count(i, fp) + table_.count(j, fp);
                for (unsigned c = mine; c < here + there; ++c)
                    if (!insert_located(KeyHash{i, j, fp})) return false;
            }
        }
        return true;
    }

    // The multiset intersection on fingerprints (like collections.Counter's &): for every (bucket
    // pair, fingerprint) of this filter, only the smaller of the two filters' counts stays (other:
    // same layout). Every entry of the result is one of this filter's, so nothing needs room and
    // it cannot fail. A key's count in the result is min(count here, count in other): a key added
    // to both is kept, and a lookup answers exactly `key in this and key in other` (see
    // docs/distributed.md for the false-positive rate this gives).
    void intersect_from(const Filter& other) {
        require_writable();
        if (!same_layout(other)) throw std::invalid_argument("intersect_from needs filters of the same layout");
        // The copies to drop are found first and removed after the scan: removing a fingerprint
        // may reorder its bucket (semi-sorted buckets), which would derail a scan in progress.
        struct Excess {
            uint64_t bucket;
            uint32_t fp;
            unsigned copies;
        };
        std::vector<Excess> drop;
        const TableProbe theirs = other.table_.probe();
        for_each_entry([&](uint64_t i, uint64_t j, uint32_t fp, unsigned mine) {
            const unsigned there = theirs.count(i, fp) + theirs.count(j, fp);
            if (mine > there) drop.push_back(Excess{i, fp, mine - there});
        });
        for (const Excess& e : drop)
            for (unsigned c = 0; c < e.copies; ++c) erase_entry(e.bucket, e.fp);
    }

    // Calls visit(bucket, alt, fp, copies) once for each distinct (bucket pair, fingerprint)
    // stored, with `bucket` the lower bucket of the pair holding a copy, `alt` its alternate and
    // `copies` the pair's count. Reads each bucket once in order; the alternates are random.
    template <class Visit>
    void for_each_entry(Visit&& visit) const {
        const Locator loc = locator();
        const TableProbe probe = table_.probe();
        for (uint64_t i = 0; i < bucket_count(); ++i) {
            for (unsigned s = 0; s < bucket_size(); ++s) {
                const uint32_t fp = table_.get(i, s);
                if (fp == 0) continue;
                int first;
                const unsigned here = probe.find_all(i, fp, first);
                if (static_cast<unsigned>(first) != s) continue;  // not the first copy in bucket i
                const uint64_t j = loc.alt_index(i, fp);
                const unsigned there = probe.count(j, fp);
                if (j < i && there > 0) continue;  // visited at j, the lower bucket
                visit(i, j, fp, here + there);
            }
        }
    }

    // ---- rebuilding from serialized parts (cuckoo/format.hpp) ----
    // A filter around an existing table (owned, or a read-only view of a mapped file) and the
    // state the table does not hold. Parameters are checked like the constructor's; `count` must
    // not exceed the slots. Insert statistics start at zero. The caller (the format reader) is
    // responsible for `count` matching the table.
    // A nested stage (level >= 1) also needs its level and fp_shift; the format reader checks them
    // against its first stage.
    static Filter from_parts(PackedTable table, unsigned max_kicks, uint64_t seed, HashAlgorithm hash_algorithm,
                             uint64_t capacity, uint64_t count, unsigned level = 0, unsigned fp_shift = 0) {
        check_params(table.bucket_count(), table.bucket_size(), table.fingerprint_bits(), table.semi_sorted());
        if (count > table.slot_count()) throw std::invalid_argument("item count exceeds the slots of the table");
        // The smallest valid table, replaced at once: keeps the class free of a half-built state.
        Filter f(kBlockBuckets, table.bucket_size(), table.fingerprint_bits(), max_kicks, seed, hash_algorithm,
                 table.semi_sorted());
        f.table_ = std::move(table);
        f.capacity_ = capacity;
        f.count_ = count;
        f.level_ = level;
        f.fp_shift_ = fp_shift;
        f.init_derived();
        return f;
    }

    void require_writable() const {
        if (!table_.writable()) throw ReadOnlyError("the filter is read-only (memory-mapped): copy() it to modify it");
    }

    // contains_loop for tables larger than the caches, without vector code: bucket 2 is read only
    // for keys that bucket 1 does not hold, and three blocks are in flight (block k located and
    // its first buckets requested, block k - 1 probing those and requesting the second buckets
    // it needs, block k - 2 probing them), as lookup_two_pass_avx2 does. Same contract as
    // contains_batch (returns the keys done; polls should_stop between blocks). Public for the tests,
    // which run it on small tables too.
    template <BucketShape Shape, class HashAt, class Out, class Stop>
    uint64_t contains_two_pass(const TableProbe probe, uint64_t n, HashAt& hash_at, Out* out, Stop& should_stop) const {
        const Locator loc = locator();
        LocatedBlock ring[3];
        uint32_t found[3] = {0, 0, 0}, missing[3] = {0, 0, 0};
        unsigned lens[3] = {0, 0, 0};
        const uint64_t blocks = (n + kBatchBlock - 1) / kBatchBlock;
        for (uint64_t k = 0; k < blocks + 2; ++k) {
            if (k >= 2 && should_stop()) return (k - 2) * kBatchBlock;
            if (k < blocks) {  // locate block k, request its first buckets
                LocatedBlock& b = ring[k % 3];
                const uint64_t start = k * kBatchBlock;
                const unsigned len = lens[k % 3] = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
                hash_keys(hash_at, start, len, b.hash);
                locate_block(loc, probe.bucket_bits, len, b);
                for (unsigned x = 0; x < len; ++x) probe.prefetch_bit(b.bit1[x]);
            }
            if (k >= 2) {  // block k - 2: the second buckets it needed, then its results
                const unsigned r = (k - 2) % 3;
                const LocatedBlock& b = ring[r];
                uint32_t in2 = 0;
                for (uint32_t m = missing[r]; m; m &= m - 1) {
                    const unsigned x = static_cast<unsigned>(ctz64(m));
                    in2 |= uint32_t(probe.contains_at<Shape>(b.bit2[x], probe.pattern_of(b.fp[x]))) << x;
                }
                const uint32_t all = found[r] | in2;
                Out* o = out + (k - 2) * kBatchBlock;
                for (unsigned x = 0; x < lens[r]; ++x) o[x] = static_cast<Out>((all >> x) & 1);
            }
            if (k >= 1 && k <= blocks) {  // block k - 1: first buckets, then request the second ones needed
                const unsigned r = (k - 1) % 3;
                const LocatedBlock& b = ring[r];
                uint32_t in1 = 0;
                for (unsigned x = 0; x < lens[r]; ++x)
                    in1 |= uint32_t(probe.contains_at<Shape>(b.bit1[x], probe.pattern_of(b.fp[x]))) << x;
                found[r] = in1;
                missing[r] = ~in1 & (lens[r] == kBatchBlock ? ~0u : (1u << lens[r]) - 1);
                for (uint32_t m = missing[r]; m; m &= m - 1) probe.prefetch_bit(b.bit2[ctz64(m)]);
            }
        }
        return n;
    }

protected:
    template <BucketShape Shape, class HashAt, class Out, class Stop>
    uint64_t contains_loop(const TableProbe probe, uint64_t n, HashAt& hash_at, Out* out, Stop& should_stop) const {
#if CUCKOO_X86_DISPATCH
        // One-load buckets on an AVX2 CPU: the vector kernel (same results, fewer cycles).
        if constexpr (lookup_kernel_reads(Shape)) {
            if (kernels::use_avx2() && level_ == 0)
                return kernels::lookup_batch_avx2<Shape>(locator(), probe, table_bytes(), n, hash_at, out, should_stop);
        }
#endif
        // Otherwise (the portable level, what ARM runs; other bucket shapes; grown stages): tables
        // beyond the caches as the AVX2 kernel reads them (two passes, see lookup_avx2.hpp);
        // cache-resident ones with both buckets prefetched, which scalar probes gain from, unlike
        // the vector kernel (measured at the portable level, Zen 4, bench_core --levels, 10^6
        // keys: 13.4-18.9 ns a key without the prefetches against 10.0-13.1 with them).
        if (table_bytes() > kTwoPassMinBytes) return contains_two_pass<Shape>(probe, n, hash_at, out, should_stop);
        return for_each_located(n, hash_at, should_stop, [&](uint64_t j, const LocatedBlock& b, unsigned x) {
            out[j] = probe.either_contains<Shape>(b.bit1[x], b.bit2[x], probe.pattern_of(b.fp[x]));
            return true;
        });
    }


#if CUCKOO_X86_DISPATCH
    // insert_batch for one-load buckets on an AVX2 CPU (see cuckoo/insert_avx2.hpp): the decisions
    // of a block come from the vector planner; each key then checks that its buckets still hold
    // what the plan read and is placed with one OR, or else goes the scalar way (place_if_room,
    // then the eviction search), exactly like insert_hash.
    //
    // The plan reads the buckets with scalar loads, not gathers, whatever the key source (lookups
    // choose by source, see stored_words4): the placement step loads the same words again, and
    // the loads were faster for every source measured. AMD Zen 4 (EPYC, KVM guest, 2026-11-27),
    // `cuckoo dedup` of 10^7 hex lines (precomputed hashes), min of 6-10 alternating runs, loads
    // against gathers: 0.44 vs 0.52 s with 1 thread and 0.32 vs 0.39 s with 2 (12.7 MiB table);
    // 0.51 vs 0.57 and 0.38 vs 0.45 s at 28.6 MiB; 0.22 vs 0.26 and 0.16 vs 0.17 s at 6.9 MiB.
    // A C++ loop of unique inserts of precomputed hashes (2R draws of R keys, min of 7): 15.4 vs
    // 16.9 ns a key at R = 3*10^6, 8.8 vs 9.6 at 2.5*10^5. (Integer keys hashed by vector code:
    // 0.88-0.90x, stored_words4.) Not measured on an Intel CPU since.
    template <BucketShape Shape, class HashAt, class Stop>
    __attribute__((target("avx2"))) uint64_t insert_loop_avx2(const TableProbe probe, uint64_t n, HashAt& hash_at,
                                                             InsertMode mode, bool* was_new, bool& full,
                                                             Stop& should_stop) {
        const Locator loc = locator();
        const kernels::LookupConstants c = kernels::lookup_constants(loc, probe, /*bucket_loads=*/true);
        unsigned char* const data = table_.mutable_data();
        const bool unique = mode == InsertMode::Unique;
        bool* const new_flags = unique ? was_new : nullptr;  // written for unique inserts only, as above
        alignas(32) uint64_t hashes[2][kBatchBlock];
        kernels::LocatedLanes located[2];
        kernels::InsertPlan plan;
        // Block k + 1 is located and its buckets requested before block k is placed: placing is
        // a serial loop of stores, during which the reads of the next block are then in flight.
        const uint64_t blocks = (n + kBatchBlock - 1) / kBatchBlock;
        for (uint64_t block = 0; block <= blocks; ++block) {
            if (block < blocks) {
                const uint64_t next = block * kBatchBlock;
                const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - next));
                kernels::LocatedLanes& at = located[block & 1];
                hash_keys(hash_at, next, len, hashes[block & 1]);
                kernels::locate_lanes(c, hashes[block & 1], len, at);
                for (unsigned x = 0; x < len; ++x) {
                    probe.prefetch_bit(at.bit1[x]);
                    probe.prefetch_bit(at.bit2[x]);
                }
            }
            if (block == 0) continue;
            const uint64_t start = (block - 1) * kBatchBlock;
            if (should_stop()) return start;
            const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
            const kernels::LocatedLanes& at = located[(block - 1) & 1];
            const uint64_t* hash = hashes[(block - 1) & 1];
            if (unique)
                kernels::plan_inserts<Shape, true>(c, data, at, len, probe.lane_bits, probe.word_bits, plan);
            else
                kernels::plan_inserts<Shape, false>(c, data, at, len, probe.lane_bits, probe.word_bits, plan);
            uint64_t placed = 0;  // by the plan; added to the counters once a block
            // Keys the plan places and (unique) keys it found present take one path without a
            // branch between them: whether a key of a dedup repeats is a coin toss (57% of 10^7
            // hex lines), which a branch mispredicts about every other key. A present key ORs 0
            // into its slot's word (the same bytes: later keys still see their buckets as
            // planned). What is left (not as planned, or no room and not present) is rare.
            const uint32_t skip = unique ? plan.present : 0;
            for (unsigned x = 0; x < len; ++x) {
                const uint64_t bit1 = at.bit1[x], bit2 = at.bit2[x];
                const bool as_planned = load_le64(data + (bit1 >> 3)) == plan.word1[x] &&
                                        load_le64(data + (bit2 >> 3)) == plan.word2[x];
                const uint32_t place = ~skip >> x & 1;  // 0: present, nothing to place
                if (as_planned && !(plan.no_room >> x & 1 & place)) {
                    unsigned char* p = data + plan.offset[x];
                    store_le64(p, load_le64(p) | (plan.value[x] & (uint64_t(0) - place)));
                    placed += place;
                    if (new_flags) new_flags[start + x] = place != 0;
                    continue;
                }
                // Not as planned, or no room for a key the plan did not find present: the scalar
                // way.
                const KeyHash k = loc.locate(hash[x]);
                if (unique && !as_planned) {
                    const bool present = probe.either_contains<Shape>(bit1, bit2, probe.pattern_of(k.fp));
                    if (new_flags) new_flags[start + x] = !present;
                    if (present) continue;
                }
                if (unique && as_planned && new_flags) new_flags[start + x] = true;  // planned absent, no room
                if ((!as_planned && place_if_room<Shape>(probe, k, bit1, bit2)) || insert_located(k)) continue;
                count_ += placed;
                stats_.inserts += placed;
                full = true;
                return start + x;
            }
            count_ += placed;
            stats_.inserts += placed;
        }
        return n;
    }
#endif

    template <BucketShape Shape, class HashAt, class Out, class Stop>
    uint64_t count_loop(const TableProbe probe, uint64_t n, HashAt& hash_at, Out* out, Stop& should_stop) const {
#if CUCKOO_X86_DISPATCH
        if constexpr (lookup_kernel_reads(Shape)) {
            if (kernels::use_avx2() && level_ == 0)
                return kernels::count_batch_avx2<Shape>(locator(), probe, table_bytes(), n, hash_at, out, should_stop);
        }
#endif
        return for_each_located(n, hash_at, should_stop, [&](uint64_t j, const LocatedBlock& b, unsigned x) {
            out[j] = static_cast<Out>(probe.pair_count<Shape>(b.bit1[x], b.bit2[x], probe.pattern_of(b.fp[x])));
            return true;
        });
    }

    // The shape of every bulk loop: hash and locate a block of kBatchBlock keys (locate_block),
    // prefetch both buckets of each, then visit the block's keys in order. With 32 keys, 64 misses
    // are requested before the first is needed, enough to keep the memory system busy (measured
    // on this machine kind: blocks of 32-64 reach the cost of two independent random reads per
    // key; blocks of 8 do not). Locating a key does not depend on the table, and prefetches are
    // hints, so inserts and deletes visited in order see exactly the scalar semantics.
    // visit(j, block, x) gets key j as entry x of the block and returns false to stop at key j
    // (which then counts as not done). (Tried: locating and prefetching block k + 1 before
    // visiting block k, for a longer prefetch distance. Same instructions, 40% slower at 10^6
    // keys on this machine kind.)
    template <class HashAt, class Stop, class Visit>
    uint64_t for_each_located(uint64_t n, HashAt& hash_at, Stop& should_stop, Visit&& visit) const {
        const TableProbe probe = table_.probe();
        const Locator loc = locator();
        LocatedBlock block;
        for (uint64_t start = 0; start < n; start += kBatchBlock) {
            if (should_stop()) return start;
            const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
            hash_keys(hash_at, start, len, block.hash);
            locate_block(loc, probe.bucket_bits, len, block);
            for (unsigned x = 0; x < len; ++x) {
                probe.prefetch_bit(block.bit1[x]);
                probe.prefetch_bit(block.bit2[x]);
            }
            for (unsigned x = 0; x < len; ++x)
                if (!visit(start + x, block, x)) return start + x;
        }
        return n;
    }

    bool erase_located(const KeyHash& k) {
        int s = table_.find_slot(k.i1, k.fp);
        uint64_t bucket = k.i1;
        if (s < 0) {
            s = table_.find_slot(k.i2, k.fp);
            bucket = k.i2;
        }
        if (s < 0) return false;
        table_.set(bucket, static_cast<unsigned>(s), 0);
        --count_;
        ++stats_.deletes;
        return true;
    }

    bool insert_located(const KeyHash& k) {
        require_writable();
        const TableProbe& probe = table_.probe();  // one key: read where it is (no copy)
        const bool placed = probe.with_shape([&](auto shape) {
            constexpr BucketShape Shape = decltype(shape)::value;
            return place_if_room<Shape>(probe, k, probe.bit_of(k.i1), probe.bit_of(k.i2)) || evict_search<Shape>(probe, k);
        });
        if (placed) return true;
        ++stats_.failed_inserts;
        return false;
    }

    // Places k in a bucket with room, if either has some; false if both are full. Into the
    // emptier of the two buckets ("two choices"): keeping buckets balanced makes evictions a third
    // rarer and raises the load of the first failure (b = 4, f = 16: 96.3% instead of 95.9%).
    // Ties go to i1; the first empty slot of the bucket is used. The one placement rule of scalar
    // and batch inserts (bulk == scalar).
    //
    // One-load buckets (most tables) take a branch-light path, which is what a batch insert into a
    // filter with room mostly costs: two loads, the empty lanes of each, their counts by one
    // multiply each (no popcount instruction in the baseline ISA), the choice as a select, and
    // the fingerprint ORed into the empty lane (multiplying by the lane's lowest bit shifts it
    // there without a bit scan). The only branch is "both full", rare until the filter is nearly
    // full. (Measured at 10^6 keys, 50% load: 17 -> N ns a key.)
    template <BucketShape Shape>
    bool place_if_room(const TableProbe& probe, const KeyHash& k, uint64_t bit1, uint64_t bit2) {
        if constexpr (Shape == BucketShape::Aligned || Shape == BucketShape::OneLoad) {
            // Lanes of the bucket that are 0 (empty), flagged by their top bits; the next bucket's
            // bits above it in the word are outside lane_high (see bucket_word).
            const uint64_t empty1 = probe.zero_lanes(probe.bucket_word<Shape>(bit1));
            const uint64_t empty2 = probe.zero_lanes(probe.bucket_word<Shape>(bit2));
            if ((empty1 | empty2) == 0) return false;
            const unsigned top = probe.lane_bits - 1;
            const bool into_first = probe.lane_count(empty1 >> top) >= probe.lane_count(empty2 >> top);
            const uint64_t bit = into_first ? bit1 : bit2;
            const uint64_t empty = (into_first ? empty1 : empty2) >> top;  // bit 0 of each empty lane
            const uint64_t lane = empty & (0 - empty);                   // the first empty lane's bit 0
            unsigned char* p = table_.mutable_data() + (bit >> 3);
            store_le64(p, load_le64(p) | ((static_cast<uint64_t>(k.fp) * lane) << (bit & 7)));
            ++count_;
            ++stats_.inserts;
            return true;
        } else if constexpr (Shape == BucketShape::SemiSorted) {
            // The same rule on the decoded (plain, sorted) words, and the chosen one written back
            // from its decoded word with fp merged in (no second decode, no sort).
            const uint64_t w1 = probe.semi_word(bit1), w2 = probe.semi_word(bit2);
            const uint64_t empty1 = probe.zero_lanes(w1), empty2 = probe.zero_lanes(w2);
            if ((empty1 | empty2) == 0) return false;
            const unsigned top = probe.lane_bits - 1;
            const bool into_first = probe.lane_count(empty1 >> top) >= probe.lane_count(empty2 >> top);
            table_.set_semi_word(into_first ? k.i1 : k.i2, probe.semi.insert_sorted(into_first ? w1 : w2, k.fp));
            ++count_;
            ++stats_.inserts;
            return true;
        } else {
            int slot1, slot2;
            unsigned free1, free2;
            if constexpr (Shape == BucketShape::MultiWord) {
                free1 = probe.find_all(k.i1, 0, slot1);
                free2 = probe.find_all(k.i2, 0, slot2);
            } else {  // a straddling bucket: read as one word, written by table_.set
                const uint64_t empty1 = probe.zero_lanes(probe.bucket_word<Shape>(bit1));
                const uint64_t empty2 = probe.zero_lanes(probe.bucket_word<Shape>(bit2));
                if ((empty1 | empty2) == 0) return false;
                free1 = static_cast<unsigned>(popcount64(empty1));
                free2 = static_cast<unsigned>(popcount64(empty2));
                slot1 = empty1 ? static_cast<int>((ctz64(empty1) * probe.lane_div) >> 16) : -1;
                slot2 = empty2 ? static_cast<int>((ctz64(empty2) * probe.lane_div) >> 16) : -1;
            }
            if ((free1 | free2) == 0) return false;
            if (free1 >= free2) return place(k.i1, static_cast<unsigned>(slot1), k.fp);
            return place(k.i2, static_cast<unsigned>(slot2), k.fp);
        }
    }

    bool place(uint64_t bucket, unsigned slot, uint32_t fp) {
        table_.set(bucket, slot, fp);
        ++count_;
        ++stats_.inserts;
        return true;
    }

    // The breadth-first eviction search (cuckoo/evict.hpp) over this filter's table, with reads
    // specialised for its bucket shape: a one-word bucket gives all its tags and its empty slots
    // from one load.
    template <BucketShape Shape>
    struct EvictTable {
        PackedTable& t;
        const TableProbe& probe;
        unsigned slots_per_bucket() const noexcept { return t.bucket_size(); }
        uint32_t tag(uint64_t bucket, unsigned slot) const noexcept {
            if constexpr (Shape == BucketShape::MultiWord) {
                return probe.slot(bucket, slot);
            } else {
                const uint64_t mask = (uint64_t(1) << probe.lane_bits) - 1;
                return static_cast<uint32_t>((probe.bucket_word<Shape>(probe.bit_of(bucket)) >> (slot * probe.lane_bits)) & mask);
            }
        }
        int empty_slot(uint64_t bucket) const noexcept {
            if constexpr (Shape == BucketShape::MultiWord) {
                int first;
                probe.find_all(bucket, 0, first);
                return first;
            } else {
                const uint64_t empty = probe.zero_lanes(probe.bucket_word<Shape>(probe.bit_of(bucket)));
                return empty ? static_cast<int>((ctz64(empty) * probe.lane_div) >> 16) : -1;
            }
        }
        void move(uint64_t from, unsigned from_slot, uint64_t to, unsigned to_slot) noexcept {
            t.set(to, to_slot, tag(from, from_slot));
        }
        void prefetch(uint64_t bucket) const noexcept { probe.prefetch(bucket); }
    };

    template <BucketShape Shape>
    bool evict_search(const TableProbe& probe, const KeyHash& k) {
        EvictTable<Shape> table{table_, probe};
        const size_t lookahead = table_bytes() > kTwoPassMinBytes ? evict_lookahead_beyond_caches() : kEvictLookaheadCached;
        const EvictResult r = cuckoo::evict_search(table, locator(), k.i1, k.i2, max_kicks_, search_nodes_, lookahead);
        stats_.buckets_searched += r.buckets_searched;
        if (!r.found) return false;
        stats_.moves += r.moves;
        ++stats_.kicked_inserts;
        return place(r.bucket, r.slot, k.fp);
    }

    void init_derived() {
        block_count_ = bucket_count() >> kBlockShift;
        search_nodes_.reserve(max_kicks_ + 2u);
    }

    PackedTable table_;
    uint64_t seed_ = 0;
    HashAlgorithm hash_algorithm_ = HashAlgorithm::xxh3;
    unsigned max_kicks_ = 500;
    uint64_t capacity_ = 0;
    uint64_t count_ = 0;
    uint64_t block_count_ = 0;
    unsigned level_ = 0;     // see nest_level()
    unsigned fp_shift_ = 0;  // see Locator::fp_shift
    InsertStats stats_;
    std::vector<EvictNode> search_nodes_;
};

inline FilterShape filter_shape(uint64_t capacity, double fpr, unsigned bucket_size, unsigned fingerprint_bits,
                                bool semi_sorted) {
    if (capacity == 0) throw std::invalid_argument("capacity must be positive");
    if (!valid_bucket_size(bucket_size)) throw std::invalid_argument("bucket_size must be 2, 4 or 8");
    FilterShape s;
    s.bucket_size = bucket_size;
    s.fingerprint_bits = fingerprint_bits ? fingerprint_bits : fingerprint_bits_for(fpr, bucket_size);
    s.semi_sorted = semi_sorted;
    Filter::check_params(kBlockBuckets, bucket_size, s.fingerprint_bits, semi_sorted);
    s.design_load = design_load(bucket_size, semi_sorted);
    s.bucket_count = bucket_count_for(capacity, bucket_size, semi_sorted);
    s.table_bytes = PackedTable::data_bytes_for(s.bucket_count, bucket_size, s.fingerprint_bits, semi_sorted);
    return s;
}

}  // namespace cuckoo
