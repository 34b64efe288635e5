// cuckoo::KeySet: an exact set of byte strings held in memory, on the store's partial-key cuckoo
// index (the exact path of `cuckoo dedup`, cpp/include/cuckoo/dedup.hpp).
//
//   keys:  appended once each to an arena of chunks, as a LEB128 length and the bytes.
//   index: buckets of 4 slots, each a 64-bit word: a 24-bit tag (the key's fingerprint, never 0,
//          so a word of 0 is an empty slot) above the 40-bit arena reference of its key. A key's
//          hash gives its two buckets and tag exactly as it gives a filter's (cuckoo/locate.hpp);
//          a new key is placed with the filter's breadth-first eviction search (cuckoo/evict.hpp).
//   test:  every slot of the two buckets whose tag matches points to a key in the arena, which is
//          compared byte for byte: the answer is exact. 24-bit tags make a tag match on an absent
//          key rare (about 8 / 2^24 per lookup), so nearly every arena read is a real duplicate.
//
// Against cuckoo::Store (an index over a log file), this keeps the keys in memory and nothing on
// disk: no record headers, no journal, no log reads through a mapping. What bounds its memory is
// the caller's: dedup splits the hash space into ranges and runs one range at a time when the set
// would pass its memory budget (retain()), which this class makes cheap by compacting in place.
//
// Memory: 32 bytes a bucket (8.5 bytes a key at the 94% load where the index grows) plus the
// arena (the keys and a length byte each, for keys shorter than 128 bytes).
//
// The hash is the caller's (KeyHasher: the pipeline hashes keys a block at a time); keys with one
// 64-bit hash beyond what two buckets hold go to a stash keyed by that hash, so no insert fails
// and growth never chases copies of one hash. A random seed (the dedup binding draws one from the
// OS) keeps adversarial keys from filling the stash.
//
// Values: a set made with value_bytes > 0 keeps that many bytes of the caller's after each key's
// bytes in the arena (zeroed when the key is added; find_value / add_value point at them). The
// windowed dedup (cuckoo/window.hpp) keeps a key's last position or times there, so that it needs
// no second hash table beside this one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuckoo/evict.hpp"
#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/locate.hpp"
#include "cuckoo/table.hpp"  // ByteBuffer

namespace cuckoo {

// a[0, n) == b[0, n) for sizeof(Word) <= n <= 2 * sizeof(Word): the first and the last Word of
// each (overlapping when n is less than two Words).
template <class Word>
inline bool edge_words_equal(const unsigned char* a, const unsigned char* b, size_t n) noexcept {
    Word a0, a1, b0, b1;
    std::memcpy(&a0, a, sizeof(Word));
    std::memcpy(&b0, b, sizeof(Word));
    std::memcpy(&a1, a + n - sizeof(Word), sizeof(Word));
    std::memcpy(&b1, b + n - sizeof(Word), sizeof(Word));
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
// a[0, n) == b[0, n). Keys up to 16 bytes (ids, short codes: most keyed records) compare by
// two overlapping loads of each, inline: the call to memcmp a tag match was 5% of a keyed
// CSV dedup by an integer id (perf, one thread, Zen 4). Reads nothing outside [0, n).
inline bool equal_bytes(const unsigned char* a, const unsigned char* b, size_t n) noexcept {
    if (n >= 8 && n <= 16) return edge_words_equal<uint64_t>(a, b, n);
    if (n >= 4) return n < 8 ? edge_words_equal<uint32_t>(a, b, n) : std::memcmp(a, b, n) == 0;
    for (size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
    return true;
}

class KeySet {
public:
    static constexpr unsigned kSlots = 4;
    static constexpr unsigned kTagBits = 24;
    static constexpr unsigned kRefBits = 40;
    static constexpr uint64_t kRefMask = (uint64_t(1) << kRefBits) - 1;
    static constexpr double kMaxLoad = 0.94;
    // An arena reference: chunk number above the offset inside the chunk. Chunks hold at most
    // 2^kChunkShift bytes, except that a key longer than that gets a chunk of its own (its record
    // then starts at offset 0, which is all a reference addresses).
    static constexpr unsigned kChunkShift = 26;  // 64 MiB
    static constexpr uint64_t kMaxChunks = uint64_t(1) << (kRefBits - kChunkShift);
    static constexpr uint64_t kMaxBuckets = uint64_t(1) << 32;  // reduce32's range

    explicit KeySet(const KeyHasher& hasher, uint64_t expected_keys = 0, unsigned value_bytes = 0)
        : hasher_(hasher), value_bytes_(value_bytes) {
        resize_index(buckets_for(std::max<uint64_t>(expected_keys, 64)));
    }
    KeySet(const KeySet&) = delete;
    KeySet& operator=(const KeySet&) = delete;

    const KeyHasher& hasher() const noexcept { return hasher_; }
    uint64_t size() const noexcept { return count_ + stash_.size(); }
    uint64_t bucket_count() const noexcept { return bucket_count_; }
    uint64_t stash_size() const noexcept { return stash_.size(); }
    // Memory in use: the index, the arena's records and the stash. (The arena's last chunk is
    // allocated ahead of its records, but chunks of 2 MiB and more are mapped, and their pages
    // take memory only once written.)
    uint64_t memory_bytes() const noexcept { return table_.size() + arena_used_ + stash_.size() * 48; }
    // Memory allocated: the index, every arena chunk whole (the spare ones too) and the stash.
    // Chunks of 2 MiB and more are mapped and take memory only where written, so this is an
    // upper bound there.
    uint64_t reserved_bytes() const noexcept {
        uint64_t n = table_.size() + stash_.size() * 48;
        for (const Chunk& c : chunks_) n += c.buf.size();
        for (const Chunk& c : spare_) n += c.buf.size();
        return n;
    }
    // The size of the arena's first chunk (later ones double, up to 64 MiB): 1 MiB unless set
    // before the first key. Many small sets (the generations of a small window) set it smaller:
    // a chunk under 2 MiB is zeroed whole when allocated, and takes its memory at once.
    void set_first_chunk_bytes(uint64_t n) noexcept { first_chunk_ = std::max<uint64_t>(n, 64); }
    // Bytes of the keys' records (what the arena holds; memory_bytes() may be more).
    uint64_t arena_bytes() const noexcept { return arena_used_; }
    uint64_t grows() const noexcept { return grows_; }

    // Adds the keys picked[0..m) (key_of(j): key j, a KeySpan; hashes[j]: its hash) in that order;
    // is_new[picked[t]] says whether key picked[t] was absent (then it was added). A key repeated
    // within the call is new only at its first position, as if the calls were made one key at a
    // time.
    //
    // Software-pipelined over a ring of located keys: the buckets of the key kAhead positions on
    // are prefetched, so that the bucket reads of many keys overlap, and the arena records that
    // the tags of the key kRecordAhead positions on match (its buckets are in the cache by then),
    // so that a repeat's comparison does not wait for its record. Each key's decision probes its
    // buckets (then in the cache), so it sees the keys placed by the positions before it.
    // Measured on a Xeon (Skylake-SP, KVM guest, 2026-11-26), 10^7 hex lines of 4.3*10^6 keys into
    // a set sized for them, ns a key: 126 without the records' prefetch; 142 with it 16 keys
    // ahead; 171 with the tags apart from the references (the tags cache-sized, a reference read
    // only on a match: one dependent read more). On a Zen 4 (EPYC, KVM guest, 2026-11-27),
    // `cuckoo dedup --exact --threads 2`, 4-6 alternating runs, without -> with the records'
    // prefetch 4 keys ahead: hex lines 0.78-0.96 -> 0.63-0.71 s, URL lines 1.05-1.22 -> 0.77-1.25 s,
    // real text (83% repeats, mostly of lines in the cache already) 1.35-1.55 -> 1.26-1.62 s;
    // 8 keys ahead: the same on hex and URL, 1.40-1.81 s on text.
    //
    // Throws std::bad_alloc (with the keys before the failing one added) when memory runs out.
    template <class KeyOf>
    void insert_unique(uint32_t m, const uint32_t* picked, KeyOf&& key_of, const uint64_t* hashes, bool* is_new) {
        pipelined(m, picked, hashes, [&](uint32_t j, const KeyHash& k) { is_new[j] = add_located(key_of(j), hashes[j], k); });
    }

    // The same pipeline for a set with values: calls f(picked[t], value bytes of its key, is_new)
    // in order, the key added first (its value zeroed) when absent. (dedup --count's counting pass.)
    template <class KeyOf, class F>
    void add_values(uint32_t m, const uint32_t* picked, KeyOf&& key_of, const uint64_t* hashes, F&& f) {
        pipelined(m, picked, hashes, [&](uint32_t j, const KeyHash& k) {
            const KeySpan key = key_of(j);
            uint64_t ref = find_ref(key, hashes[j], k);
            const bool is_new = ref == kNoRef;
            if (is_new) ref = add_absent(key, hashes[j], k);
            f(j, value_of(ref), is_new);
        });
    }
    // Calls f(picked[t], value bytes of its key, or nullptr when it is absent), in order.
    template <class KeyOf, class F>
    void find_values(uint32_t m, const uint32_t* picked, KeyOf&& key_of, const uint64_t* hashes, F&& f) {
        pipelined(m, picked, hashes, [&](uint32_t j, const KeyHash& k) {
            const uint64_t ref = find_ref(key_of(j), hashes[j], k);
            f(j, ref == kNoRef ? nullptr : value_of(ref));
        });
    }

private:
    // Calls step(picked[t], its located hash) for t = 0..m in order, software-pipelined (see
    // insert_unique). A step may add keys (a growth relocates the keys ahead).
    template <class Step>
    void pipelined(uint32_t m, const uint32_t* picked, const uint64_t* hashes, Step&& step) {
        constexpr uint32_t kAhead = 32;  // (a power of two)
        constexpr uint32_t kRecordAhead = 4;
        KeyHash ring[kAhead];
        uint64_t geometry = bucket_count_;  // the index the ring was located in (a growth moves it)
        auto fill = [&](uint32_t t) {
            ring[t % kAhead] = loc_.locate(hashes[picked[t]]);
            __builtin_prefetch(bucket(ring[t % kAhead].i1), 0, 3);
            __builtin_prefetch(bucket(ring[t % kAhead].i2), 0, 3);
        };
        for (uint32_t t = 0; t < std::min(m, kAhead); ++t) fill(t);
        for (uint32_t t = 0; t < m; ++t) {
            if (geometry != bucket_count_) {  // the index grew: locate the keys in the ring again
                geometry = bucket_count_;
                for (uint32_t u = t; u < std::min(m, t + kAhead); ++u) ring[u % kAhead] = loc_.locate(hashes[picked[u]]);
            }
            if (t + kRecordAhead < m) {  // the records its buckets point to, kRecordAhead keys on
                const KeyHash& k = ring[(t + kRecordAhead) % kAhead];
                const uint64_t tag = uint64_t(k.fp) << kRefBits;
                for (const uint64_t i : {k.i1, k.i2}) {
                    const uint64_t* b = bucket(i);
                    for (unsigned s = 0; s < kSlots; ++s)
                        if ((b[s] & ~kRefMask) == tag) __builtin_prefetch(record(b[s] & kRefMask), 0, 3);
                }
            }
            step(picked[t], ring[t % kAhead]);
            if (t + kAhead < m) fill(t + kAhead);
        }
    }

public:
    // Whether the key is in the set.
    bool contains(KeySpan key, uint64_t h) const noexcept { return find(key, h, loc_.locate(h)); }

    // Adds one key (its hash h); returns whether it was absent.
    bool add(KeySpan key, uint64_t h) { return add_located(key, h, loc_.locate(h)); }

    // Prefetches the two buckets of a key's hash (a caller probing many sets a key, a few keys ahead).
    void prefetch(uint64_t h) const noexcept {
        const KeyHash k = loc_.locate(h);
        __builtin_prefetch(bucket(k.i1), 0, 3);
        __builtin_prefetch(bucket(k.i2), 0, 3);
    }

    unsigned value_bytes() const noexcept { return value_bytes_; }
    // The value bytes of a key (value_bytes() of them), or nullptr when the key is absent. Valid
    // until the set changes (an add may move nothing, but retain() and clear() do).
    unsigned char* find_value(KeySpan key, uint64_t h) noexcept {
        const uint64_t ref = find_ref(key, h, loc_.locate(h));
        return ref == kNoRef ? nullptr : value_of(ref);
    }
    // The value bytes of the key, added first (its value zeroed) when absent; is_new says which.
    // Throws std::bad_alloc as add() does, the set unchanged.
    unsigned char* add_value(KeySpan key, uint64_t h, bool& is_new) {
        const KeyHash k = loc_.locate(h);
        uint64_t ref = find_ref(key, h, k);
        is_new = ref == kNoRef;
        if (is_new) ref = add_absent(key, h, k);
        return value_of(ref);
    }

private:
    bool add_located(KeySpan key, uint64_t h, const KeyHash& k) {
        if (find(key, h, k)) return false;
        add_absent(key, h, k);
        return true;
    }
    // Adds a key known to be absent; returns its arena reference.
    uint64_t add_absent(KeySpan key, uint64_t h, const KeyHash& k) {
        const bool full = static_cast<double>(count_ + 1) > kMaxLoad * kSlots * static_cast<double>(bucket_count_);
        if (full) grow(bucket_count_ * 2);  // (a failure here or in append leaves the set as it was)
        const uint64_t ref = append(key);
        try {
            place(full ? loc_.locate(h) : k, h, ref);  // (it fails only before changing the index)
        } catch (...) {
            // The record goes too: the arena holds exactly the set's keys (a growth re-places
            // every record it holds).
            const uint64_t need = length_size(key.len) + key.len + value_bytes_;
            chunks_.back().used -= need;
            arena_used_ -= need;
            throw;
        }
        return ref;
    }

public:
    // Keeps only the keys whose hash passes keep(hash): compacts the arena in place (the chunks
    // emptied at its end are freed), then re-places the kept keys in a new index sized for twice
    // their number (the old one is freed: a set that halves gives its memory back). So a caller at
    // its memory budget can halve the set with no more memory than the old index beside the new.
    // Returns how many keys it kept. On std::bad_alloc (the new index) the set is left empty and
    // without an index: it can only be destroyed (the dedup run that called it ends there).
    template <class Keep>
    uint64_t retain(Keep&& keep) {
        return retain(std::forward<Keep>(keep), [](KeySpan, uint64_t) {});
    }
    // The same, handing each key that leaves to dropped(key, hash) first (to give it to another set).
    template <class Keep, class Dropped>
    uint64_t retain(Keep&& keep, Dropped&& dropped) {
        size_t wc = 0;  // write cursor: chunk, offset
        uint64_t wo = 0, kept = 0, kept_bytes = 0;
        for (size_t rc = 0; rc < chunks_.size(); ++rc) {
            Chunk& c = chunks_[rc];
            uint64_t ro = 0;
            while (ro < c.used) {
                const unsigned char* rec = c.buf.data() + ro;
                uint64_t len;
                const unsigned head = read_length(rec, len);
                const uint64_t rec_size = head + len + value_bytes_;
                const uint64_t h = hasher_.hash_key(rec + head, len);
                if (!keep(h)) {
                    dropped(KeySpan{rec + head, len}, h);
                } else {
                    // The write cursor never passes the read cursor (records only leave), so the
                    // move reads before it writes: memmove for the overlap within one chunk. (It
                    // fits in chunk rc at ro >= 0 at the latest, where it already is.)
                    while (wo + rec_size > chunks_[wc].buf.size()) {
                        chunks_[wc].used = wo;
                        ++wc;
                        wo = 0;
                    }
                    unsigned char* dst = chunks_[wc].buf.data() + wo;
                    if (dst != rec) std::memmove(dst, rec, rec_size);
                    wo += rec_size;
                    kept_bytes += rec_size;
                    ++kept;
                }
                ro += rec_size;
            }
            if (rc > wc) c.used = 0;
        }
        if (!chunks_.empty()) {
            chunks_[wc].used = wo;
            chunks_[wc].buf.release_tail(wo);  // its pages past the records the set kept
            chunks_.resize(wc + 1);  // frees the chunks past the write cursor
            if (wo == 0 && wc == 0) chunks_.clear();
        }
        arena_used_ = kept_bytes;
        count_ = 0;
        stash_.clear();
        {
            ByteBuffer none;
            table_.swap(none);  // the old index goes first: the new one takes its place
        }
        try {
            resize_index(buckets_for(std::max<uint64_t>(2 * kept, 64)));
        } catch (...) {  // no index: an empty set, to be destroyed
            chunks_.clear();
            arena_used_ = 0;
            bucket_count_ = 0;
            throw;
        }
        rehome_arena({});
        return size();
    }

    // Calls f(key) for every key of the set, in the arena's order (the order they were added in,
    // but for a set that retain() compacted). The key's bytes stay valid until the set changes.
    template <class F>
    void for_each_key(F&& f) const {
        for (const Chunk& c : chunks_)
            for (uint64_t o = 0; o < c.used;) {
                const unsigned char* rec = c.buf.data() + o;
                uint64_t len;
                const unsigned head = read_length(rec, len);
                f(KeySpan{rec + head, len});
                o += head + len + value_bytes_;
            }
    }

    // Reads the keys' values in the arena's order (for_each_key's), one key at a time: a caller
    // that knows which of its records added the keys, and in what order, finds their values
    // without a lookup (dedup --count's deciding pass, cuckoo/dedup/counted.hpp). Valid while the
    // set does not change.
    class ValueCursor {
    public:
        explicit ValueCursor(const KeySet& s) noexcept : set_(&s) {}
        // The next key's value bytes, nullptr past the last key.
        const unsigned char* next() noexcept {
            while (chunk_ < set_->chunks_.size() && at_ >= set_->chunks_[chunk_].used) {
                ++chunk_;
                at_ = 0;
            }
            if (chunk_ == set_->chunks_.size()) return nullptr;
            const unsigned char* rec = set_->chunks_[chunk_].buf.data() + at_;
            uint64_t len;
            const unsigned head = read_length(rec, len);
            at_ += head + len + set_->value_bytes_;
            return rec + head + len;
        }

    private:
        const KeySet* set_;
        size_t chunk_ = 0;
        uint64_t at_ = 0;
    };
    ValueCursor values_in_order() const noexcept { return ValueCursor(*this); }

    // The memory the keys need (their records, and the index at the load where it grows): what
    // memory_bytes() is right after a growth, without the slack of an index sized ahead.
    uint64_t needed_bytes() const noexcept {
        return arena_used_ + static_cast<uint64_t>(static_cast<double>(size()) * kIndexBytesPerKey);
    }
    // needed_bytes() of a set of `keys` keys of `mean_key_bytes` bytes on average (shorter than
    // 128 bytes: one length byte each).
    static double expected_bytes(double keys, double mean_key_bytes) noexcept {
        return keys * (mean_key_bytes + 1.0 + kIndexBytesPerKey);
    }

    // Empties the set. The arena's chunks are kept for the keys that come next (the next pass of
    // a dedup in passes refills them to about the same size, and their pages are then written
    // already: 3% of a --memory 96M profile was the kernel zeroing pages faulted in again). They
    // hold no more memory than the set held before; the set's destruction frees them.
    void clear() noexcept {
        if (table_.size()) std::memset(table_.data(), 0, table_.size());
        count_ = 0;
        stash_.clear();
        if (spare_.empty()) {
            for (Chunk& c : chunks_) c.used = 0;
            spare_.swap(chunks_);
            std::reverse(spare_.begin(), spare_.end());  // the first chunk (the smallest) is used first
        }
        chunks_.clear();  // (those of a set cleared before and not all used since: freed)
        arena_used_ = 0;
    }
    // Empties the set and sizes its index for `expected_keys` (when the one it has is smaller, or
    // more than a quarter larger): a dedup pass that knows how many keys its range holds (from
    // the density of the ranges done) then neither grows the index nor holds one sized for more
    // keys, so that its memory is what the keys need. The old index is freed before the new one
    // is allocated; on std::bad_alloc the set is left empty and without an index: it can only be
    // destroyed (the dedup run that called it ends there).
    void clear(uint64_t expected_keys) {
        const uint64_t want = buckets_for(std::max<uint64_t>(expected_keys, 64));
        if (want <= bucket_count_ && bucket_count_ <= want + want / 4) {
            clear();
            return;
        }
        clear();
        {
            ByteBuffer none;
            table_.swap(none);
        }
        try {
            resize_index(want);
        } catch (...) {
            chunks_.clear();
            spare_.clear();
            bucket_count_ = 0;
            throw;
        }
    }

private:
    static constexpr uint64_t kBucketBytes = kSlots * 8;
    static constexpr double kIndexBytesPerKey = kBucketBytes / (kSlots * kMaxLoad);
    struct Chunk {
        ByteBuffer buf;
        uint64_t used = 0;
    };

    static uint64_t buckets_for(uint64_t keys) {
        const double b = std::ceil(static_cast<double>(keys) / (kSlots * kMaxLoad));
        uint64_t n = (static_cast<uint64_t>(b) + kBlockBuckets - 1) / kBlockBuckets * kBlockBuckets;
        return std::min<uint64_t>(std::max<uint64_t>(n, kBlockBuckets), kMaxBuckets);
    }
    static unsigned read_length(const unsigned char* p, uint64_t& len) noexcept {
        len = 0;
        unsigned i = 0, shift = 0;
        while (true) {
            const unsigned char b = p[i++];
            len |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return i;
            shift += 7;
        }
    }
    static unsigned length_size(uint64_t len) noexcept {
        unsigned n = 1;
        while (len >= 0x80) {
            len >>= 7;
            ++n;
        }
        return n;
    }

    uint64_t* bucket(uint64_t i) noexcept { return reinterpret_cast<uint64_t*>(table_.data() + i * kBucketBytes); }
    const uint64_t* bucket(uint64_t i) const noexcept {
        return reinterpret_cast<const uint64_t*>(table_.data() + i * kBucketBytes);
    }
    const unsigned char* record(uint64_t ref) const noexcept {
        return chunks_[ref >> kChunkShift].buf.data() + (ref & ((uint64_t(1) << kChunkShift) - 1));
    }
    bool same_key(uint64_t ref, KeySpan key) const noexcept {
        const unsigned char* rec = record(ref);
        uint64_t len;
        const unsigned head = read_length(rec, len);
        return len == key.len && equal_bytes(rec + head, key.data, static_cast<size_t>(len));
    }

    bool find(KeySpan key, uint64_t h, const KeyHash& k) const noexcept { return find_ref(key, h, k) != kNoRef; }
    static constexpr uint64_t kNoRef = ~uint64_t(0);
    // The arena reference of the key, or kNoRef.
    uint64_t find_ref(KeySpan key, uint64_t h, const KeyHash& k) const noexcept {
        const uint64_t tag = uint64_t(k.fp) << kRefBits;
        for (const uint64_t i : {k.i1, k.i2}) {
            const uint64_t* b = bucket(i);
            for (unsigned s = 0; s < kSlots; ++s)
                if ((b[s] & ~kRefMask) == tag && same_key(b[s] & kRefMask, key)) return b[s] & kRefMask;
        }
        if (!stash_.empty()) {
            auto range = stash_.equal_range(h);
            for (auto it = range.first; it != range.second; ++it)
                if (same_key(it->second, key)) return it->second;
        }
        return kNoRef;
    }
    unsigned char* value_of(uint64_t ref) noexcept {
        unsigned char* rec = chunks_[ref >> kChunkShift].buf.data() + (ref & ((uint64_t(1) << kChunkShift) - 1));
        uint64_t len;
        const unsigned head = read_length(rec, len);
        return rec + head + len;
    }
    // Appends the key's record to the arena; returns its reference.
    uint64_t append(KeySpan key) {
        const uint64_t head = length_size(key.len);
        const uint64_t need = head + key.len + value_bytes_;
        if (chunks_.empty() || chunks_.back().used + need > chunks_.back().buf.size()) {
            if (chunks_.size() >= kMaxChunks) throw std::length_error("the exact key set holds at most 1 TiB of keys");
            // Chunks double from 1 MiB to 64 MiB: small runs stay small, large ones allocate rarely.
            const uint64_t grown = chunks_.empty() ? first_chunk_
                                                   : std::min<uint64_t>(chunks_.back().buf.size() * 2,
                                                                        uint64_t(1) << kChunkShift);
            if (chunks_.size() == chunks_.capacity()) {
                fault::before_allocation();
                chunks_.reserve(std::max<size_t>(8, chunks_.size() * 2));
            }
            if (!spare_.empty() && spare_.back().buf.size() >= need) {  // a chunk kept by clear()
                chunks_.push_back(std::move(spare_.back()));
                spare_.pop_back();
            } else {
                Chunk c;
                c.buf = ByteBuffer(static_cast<size_t>(std::max(grown, need)));  // (before_allocation inside)
                chunks_.push_back(std::move(c));
            }
        }
        Chunk& c = chunks_.back();
        unsigned char* p = c.buf.data() + c.used;
        uint64_t len = key.len;
        while (len >= 0x80) {
            *p++ = static_cast<unsigned char>(len | 0x80);
            len >>= 7;
        }
        *p++ = static_cast<unsigned char>(len);
        if (key.len) std::memcpy(p, key.data, key.len);
        if (value_bytes_) std::memset(p + key.len, 0, value_bytes_);
        const uint64_t ref = (uint64_t(chunks_.size() - 1) << kChunkShift) | c.used;
        c.used += need;
        arena_used_ += need;
        return ref;
    }

    // The eviction search's view of the index (cuckoo/evict.hpp).
    struct EvictTable {
        KeySet& s;
        unsigned slots_per_bucket() const noexcept { return kSlots; }
        uint32_t tag(uint64_t b, unsigned slot) const noexcept {
            return static_cast<uint32_t>(s.bucket(b)[slot] >> kRefBits);
        }
        int empty_slot(uint64_t b) const noexcept {
            const uint64_t* w = s.bucket(b);
            for (int i = 0; i < static_cast<int>(kSlots); ++i)
                if (w[i] == 0) return i;
            return -1;
        }
        void move(uint64_t from, unsigned from_slot, uint64_t to, unsigned to_slot) noexcept {
            s.bucket(to)[to_slot] = s.bucket(from)[from_slot];
        }
        void prefetch(uint64_t b) const noexcept { __builtin_prefetch(s.bucket(b), 1, 3); }
    };

    // Places a key known to be absent (located at k) with its arena reference.
    void place(const KeyHash& k, uint64_t h, uint64_t ref) {
        const uint64_t word = (uint64_t(k.fp) << kRefBits) | ref;
        EvictTable t{*this};
        const int f1 = t.empty_slot(k.i1), f2 = t.empty_slot(k.i2);
        if (f1 >= 0 || f2 >= 0) {
            // The emptier bucket, as in the filter and the store.
            unsigned free1 = 0, free2 = 0;
            for (unsigned s = 0; s < kSlots; ++s) {
                free1 += bucket(k.i1)[s] == 0;
                free2 += bucket(k.i2)[s] == 0;
            }
            const uint64_t b = free1 >= free2 ? k.i1 : k.i2;
            bucket(b)[t.empty_slot(b)] = word;
            ++count_;
            return;
        }
        // How far the search runs ahead, as the filter chooses it (cuckoo/evict.hpp; its tables are
        // beyond the caches from 8 MiB on, filter.hpp).
        const size_t lookahead =
            table_.size() > (uint64_t(8) << 20) ? evict_lookahead_beyond_caches() : kEvictLookaheadCached;
        const EvictResult r = evict_search(t, loc_, k.i1, k.i2, kMaxKicks, nodes_, lookahead);
        if (!r.found) {
            fault::before_allocation();
            stash_.emplace(h, ref);
            return;
        }
        bucket(r.bucket)[r.slot] = word;
        ++count_;
    }

    void resize_index(uint64_t buckets) {
        ByteBuffer t(static_cast<size_t>(buckets * kBucketBytes));  // zeroed (before_allocation inside)
        table_.swap(t);
        bucket_count_ = buckets;
        loc_ = Locator{buckets, buckets >> kBlockShift, kTagBits};
    }

    // A new index of `target` buckets with every key re-placed (read back from the arena, which
    // stays as it is). Built beside the old one: when it fails for memory the set is unchanged.
    void grow(uint64_t target) {
        target = std::min(target, kMaxBuckets);
        if (target <= bucket_count_) return;  // at the largest index: more keys go to the stash
        ByteBuffer fresh(static_cast<size_t>(target * kBucketBytes));
        ByteBuffer old_table;
        old_table.swap(table_);
        table_.swap(fresh);
        const uint64_t old_buckets = bucket_count_;
        const Locator old_loc = loc_;
        const uint64_t old_count = count_;
        std::unordered_multimap<uint64_t, uint64_t> old_stash;
        old_stash.swap(stash_);
        bucket_count_ = target;
        loc_ = Locator{target, target >> kBlockShift, kTagBits};
        count_ = 0;
        try {
            // The arena holds exactly the set's keys; the stash's go back under the hash they came
            // with (the caller's), the others under their own.
            std::vector<uint64_t> stashed;
            if (!old_stash.empty()) {
                fault::before_allocation();
                stashed.reserve(old_stash.size());
                for (const auto& e : old_stash) stashed.push_back(e.second);
                std::sort(stashed.begin(), stashed.end());
            }
            rehome_arena(stashed);
            for (const auto& e : old_stash) place(loc_.locate(e.first), e.first, e.second);
        } catch (...) {
            table_.swap(old_table);
            bucket_count_ = old_buckets;
            loc_ = old_loc;
            count_ = old_count;
            stash_.swap(old_stash);
            throw;
        }
        ++grows_;
    }
    // Places every key of the arena in the (empty) index, in arena order: the records are read
    // in sequence, and the buckets of a key are prefetched kAhead keys before it is placed. (A
    // growth went through the old index's slots, each a random read of the arena, and placed
    // each key as soon as it was hashed, waiting for its two buckets: 13% of the CPU of a
    // one-pass exact dedup of real text whose estimate was low, and the compaction of a split
    // during a pass ran the same placements on the calling thread while the other lane waited.)
    // `skip`: references (sorted) not to place.
    void rehome_arena(const std::vector<uint64_t>& skip) {
        constexpr unsigned kAhead = 16;
        struct Pending {
            KeyHash k;
            uint64_t h, ref;
        } ring[kAhead];
        uint64_t n = 0;
        for (size_t c = 0; c < chunks_.size(); ++c)
            for (uint64_t o = 0; o < chunks_[c].used;) {
                const unsigned char* rec = chunks_[c].buf.data() + o;
                uint64_t len;
                const unsigned head = read_length(rec, len);
                const uint64_t ref = (uint64_t(c) << kChunkShift) | o;
                o += head + len + value_bytes_;
                if (!skip.empty() && std::binary_search(skip.begin(), skip.end(), ref)) continue;
                const uint64_t h = hasher_.hash_key(rec + head, len);
                Pending& p = ring[n % kAhead];
                if (n >= kAhead) place(p.k, p.h, p.ref);
                p = Pending{loc_.locate(h), h, ref};
                __builtin_prefetch(bucket(p.k.i1), 1, 3);
                __builtin_prefetch(bucket(p.k.i2), 1, 3);
                ++n;
            }
        for (uint64_t t = n > kAhead ? n - kAhead : 0; t < n; ++t) {
            const Pending& p = ring[t % kAhead];
            place(p.k, p.h, p.ref);
        }
    }

    static constexpr unsigned kMaxKicks = 500;
    KeyHasher hasher_;
    unsigned value_bytes_ = 0;  // the caller's bytes after each key's (see the top)
    ByteBuffer table_;
    uint64_t bucket_count_ = 0;
    Locator loc_{};
    uint64_t count_ = 0;  // keys in the index (the stash apart)
    std::unordered_multimap<uint64_t, uint64_t> stash_;  // full hash -> arena reference
    std::vector<Chunk> chunks_;
    std::vector<Chunk> spare_;  // emptied chunks kept by clear(), the next to use at the back
    uint64_t arena_used_ = 0;
    uint64_t first_chunk_ = uint64_t(1) << 20;  // see set_first_chunk_bytes()
    uint64_t grows_ = 0;
    std::vector<EvictNode> nodes_;
};

}  // namespace cuckoo
