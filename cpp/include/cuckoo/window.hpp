// cuckoo::Window: dedup within a sliding window (issue 49), for streams that never end. A record
// is a duplicate when its key occurred recently: among the previous N records (a count window), or
// within D seconds of event time (a time window). Memory is bounded by the keys of about one
// window: the state is a short run of generations, each the keys of a slice of the stream, and a
// generation is dropped whole once every record in it is out of the window. Dropping whole
// generations is what keeps a window cheap: no per-key expiry, no queue of the window's records.
//
// Count window N (records, N >= 1). Record i (0-based) is a duplicate iff its key is among
// records i-N .. i-1, duplicates included (the model: a deque of the last N keys). Generations
// hold G = ceil(N / k) consecutive records each (k = `generations`). Exact mode keeps, per key and
// generation, the position of its last occurrence in that generation: the newest generation that
// holds the key has its last occurrence, so looking newest-first, the first hit decides. That is
// what makes the answer exact at the window's edge although generations expire whole. A
// generation expires when its newest record is older than i-N.
//
// Time window D (seconds, D > 0), each record with a time t. M is the largest time seen so far;
// the watermark is M - L (L = `lateness`, by default D, as Spark's dropDuplicatesWithinWatermark
// sets its watermark delay and its window from one duration).
//   - t < M - L: the record is late. It is kept (never dropped), counted, and not recorded: the
//     state that could tell may be gone, and a wrong drop is the one error this does not make.
//   - otherwise it is a duplicate iff an earlier record (duplicates included, late ones not) has
//     the same key and a time t' with |t - t'| < D; then it is recorded (M = max(M, t)).
// Records at or above the watermark are decided exactly: such a record can only match t' > M-L-D,
// so a generation whose newest time is <= M - L - D is never needed again and expires. The state
// spans L + D of event time (2D by default: a late record at the watermark still sees its own
// window back). Generations slice event time into widths W = min((D + L) / k, D), generation
// floor(t / W); exact mode keeps per key and generation the least and greatest time of the key
// there. Because a generation's times lie within W <= D < 2D of each other, "some time of the key
// in (t - D, t + D)" holds iff least < t + D and greatest > t - D: two numbers a key suffice.
//
// Exact mode keeps the keys in KeySets (cuckoo/key_set.hpp, the exact dedup's set; a key's
// position or times ride in the arena beside its bytes). Approximate mode keeps a cuckoo Filter a
// generation (time windows: a chain of them, a new one twice as large when one fills). It never
// misses a duplicate within the window; it may call a record a duplicate when the key occurred up
// to one generation beyond the window (count: up to N + G records back; time: up to D + W), or,
// by a fingerprint collision, with probability at most fpr_bound(): the sum of the live filters'
// rates (each filter is sized for fpr / (the number of generations a window spans)).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cuckoo/filter.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/key_set.hpp"

namespace cuckoo {

enum class WindowVerdict : uint8_t { kept = 0, duplicate = 1, late = 2 };

struct WindowConfig {
    uint64_t records = 0;   // N > 0: a count window; 0: a time window of `seconds`
    double seconds = 0.0;   // D > 0 (time windows)
    double lateness = -1;   // L >= 0 (time windows); negative: D
    bool exact = true;
    double fpr = 0.001;     // approximate: the bound for the whole window, split over generations
    unsigned generations = 4;  // k: a window is cut in k generations (slack: 1/k of a window)
    uint64_t seed = 0;      // the key hash's seed
};

class Window {
public:
    explicit Window(const WindowConfig& c) : cfg_(c), hasher_{c.seed} {
        if (c.generations < 1 || c.generations > 1024) throw std::invalid_argument("generations must be in [1, 1024]");
        if (!c.exact && !(c.fpr > 0.0 && c.fpr < 1.0)) throw std::invalid_argument("fpr must be in (0, 1)");
        if (c.records > 0) {
            count_ = true;
            gen_records_ = (c.records + c.generations - 1) / c.generations;
            // A position inside a generation is kept in 32 bits.
            if (gen_records_ > 0xFFFFFFFFull) throw std::invalid_argument("records / generations must be below 2**32");
            while (position_bytes_ < 4 && (gen_records_ - 1) >> (8 * position_bytes_)) ++position_bytes_;
            spans_ = c.generations + 1;
        } else {
            if (!(c.seconds > 0.0 && std::isfinite(c.seconds))) throw std::invalid_argument("seconds must be positive and finite");
            cfg_.lateness = c.lateness < 0 ? c.seconds : c.lateness;
            if (!std::isfinite(cfg_.lateness)) throw std::invalid_argument("lateness must be finite");
            width_ = std::min((c.seconds + cfg_.lateness) / c.generations, c.seconds);
            // The generations that one window's state can span: (D + L) / W of them, one more
            // for the slice the oldest time falls in.
            spans_ = static_cast<unsigned>(std::ceil((c.seconds + cfg_.lateness) / width_)) + 1;
        }
        filter_fpr_ = cfg_.fpr / spans_;
        if (!c.exact) fingerprint_bits_for(filter_fpr_, 4);  // throws for an fpr no filter reaches
    }
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    const WindowConfig& config() const noexcept { return cfg_; }
    const KeyHasher& hasher() const noexcept { return hasher_; }
    bool is_count() const noexcept { return count_; }
    // Time windows: whether t can be given (finite, and its slice number fits in 62 bits).
    bool time_ok(double t) const noexcept {
        return count_ || (std::isfinite(t) && std::fabs(t / width_) < 4.0e18);
    }
    // Throws std::invalid_argument naming a bad time (nothing changes).
    void check_time(double t) const {
        if (!time_ok(t)) throw std::invalid_argument("a time must be a finite number of seconds (of a size the window can slice)");
    }

    // Decides one record (key, its hash h by hasher(): the sets and filters locate keys by it;
    // its time t: ignored by count windows) and records it.
    // Throws std::invalid_argument for a bad time and std::bad_alloc when memory runs out, the
    // window as before the call either way (but for generations that had expired already).
    WindowVerdict see(KeySpan key, uint64_t h, double t) {
        return count_ ? see_count(key, h) : see_time(key, h, t);
    }

    // see() for n records in order: key_of(j) -> KeySpan, hashes[j], times[j] (nullptr for count
    // windows). should_stop() is polled every few thousand records; returns how many were done
    // (the rest untouched). The same answers as n calls of see(): it is that loop, with the
    // buckets of the key kAhead records on prefetched in every generation, so that its lookups
    // overlap this one's (a new key probes every generation: g random reads).
    static constexpr uint64_t kAhead = 8;
    template <class KeyOf, class Stop>
    uint64_t see_many(uint64_t n, KeyOf&& key_of, const uint64_t* hashes, const double* times, WindowVerdict* out,
                      Stop&& should_stop) {
        if (count_ && cfg_.exact) return see_many_counted(n, key_of, hashes, out, should_stop);
        if (!count_)
            for (uint64_t j = 0; j < n; ++j) check_time(times[j]);  // all before the first change
        for (uint64_t j = 0; j < std::min<uint64_t>(n, kAhead); ++j) prefetch(hashes[j]);
        for (uint64_t j = 0; j < n; ++j) {
            if ((j & 4095) == 0 && j && should_stop()) return j;
            if (j + kAhead < n) prefetch(hashes[j + kAhead]);
            out[j] = see(key_of(j), hashes[j], count_ ? 0.0 : times[j]);
        }
        return n;
    }
    // see_many of an exact count window, in two phases a chunk of records at a time. A record's
    // verdict needs the last occurrence of its key, which is in the newest generation that has it.
    // 1. The generations complete when the chunk starts (they take no record during it) are
    //    probed for every key of the chunk, one generation at a time, newest first, through the
    //    key set's prefetch pipeline (KeySet::find_values): the key's last position there, if any.
    // 2. Record by record in order: the generations that take records during the chunk (the newest
    //    at its start, and those it starts) are probed as see_count probes them; a key found
    //    there has its last occurrence there, else phase 1's position stands (still valid when its
    //    generation expired since: then it is older than the window anyway). Then it is recorded.
    // The answers are see_count's. The one-record loop spent 72% of its time waiting on the bucket
    // loads of find_ref (perf): a new key probes every generation, g misses, too many to prefetch
    // 8 records ahead. Measured (AMD EPYC, 2 vCPUs, load ~3), `cuckoo dedup --window 1000000` over
    // 10^7 hex lines (4.3*10^6 distinct), 2 alternating runs: 10.2-10.9 s -> 4.2 s, the same output.
    template <class KeyOf, class Stop>
    uint64_t see_many_counted(uint64_t n, KeyOf&& key_of, const uint64_t* hashes, WindowVerdict* out,
                              Stop&& should_stop) {
        constexpr uint64_t kChunk = 4096;
        if (batch_last_.size() < kChunk) {  // (before any change: bad_alloc leaves the window as it was)
            batch_last_.resize(kChunk);
            batch_picked_.resize(kChunk);
        }
        uint64_t* const last = batch_last_.data();  // 1 + the key's last position in a complete generation (0: none)
        uint32_t* const picked = batch_picked_.data();  // the chunk's records not found yet (indexes into it)
        for (uint64_t at = 0; at < n; at += kChunk) {
            if (at && should_stop()) return at;
            const uint64_t m = std::min(kChunk, n - at);
            // The generations that are complete now: all but a newest one with room left.
            const bool newest_open = !gens_.empty() && gens_.back().size < gen_records_;
            const size_t complete = gens_.size() - (newest_open ? 1 : 0);
            const uint64_t boundary = complete ? gens_[complete - 1].first + gens_[complete - 1].size : 0;
            std::fill(last, last + m, uint64_t(0));
            uint32_t left = static_cast<uint32_t>(m);
            for (uint32_t k = 0; k < left; ++k) picked[k] = k;
            for (size_t gi = complete; gi-- > 0 && left;) {
                Generation& g = gens_[gi];
                if (g.first + g.size + cfg_.records <= records_) break;  // (older ones only hold expired records)
                g.set->find_values(left, picked, [&](uint32_t k) { return key_of(at + k); }, hashes + at,
                                   [&](uint32_t k, unsigned char* v) {
                                       if (!v) return;
                                       last[k] = g.first + get_position(v) + 1;
                                   });
                uint32_t still = 0;  // (those not found go on to the next older generation)
                for (uint32_t t = 0; t < left; ++t) {
                    picked[still] = picked[t];
                    still += last[picked[t]] == 0;
                }
                left = still;
            }
            for (uint64_t k = 0; k < m; ++k) out[at + k] = see_after(key_of(at + k), hashes[at + k], last[k], boundary);
        }
        return n;
    }

    // Prefetches the buckets of a hash in every live generation (a hint: generations that come
    // or go before its key's turn only waste the prefetch).
    void prefetch(uint64_t h) const noexcept {
        for (const Generation& g : gens_) {
            if (g.set) {
                g.set->prefetch(h);
            } else {
                for (const Filter& f : g.filters) {
                    const KeyHash k = f.locate(h);
                    f.table().prefetch(k.i1);
                    f.table().prefetch(k.i2);
                }
            }
        }
    }

    // ---- statistics ----
    uint64_t records() const noexcept { return records_; }        // records seen (late ones too)
    uint64_t duplicates() const noexcept { return duplicates_; }
    uint64_t late() const noexcept { return late_; }
    uint64_t generation_count() const noexcept { return gens_.size(); }
    // Entries held: a key in two generations counts twice.
    uint64_t entries() const noexcept {
        uint64_t n = 0;
        for (const Generation& g : gens_) n += g.entries();
        return n;
    }
    // Memory allocated (KeySet::reserved_bytes: arena chunks whole).
    uint64_t memory_bytes() const noexcept {
        uint64_t n = sizeof(*this) + gens_.capacity() * sizeof(Generation) + batch_last_.capacity() * 8 +
                     batch_picked_.capacity() * 4;
        for (const Generation& g : gens_) n += g.memory_bytes();
        return n;
    }
    // Approximate mode: the bound on the probability that a record whose key is not within one
    // generation beyond the window is called a duplicate (the union over the live filters).
    double fpr_bound() const noexcept {
        if (cfg_.exact) return 0.0;
        double p = 0.0;
        for (const Generation& g : gens_) p += filter_fpr_ * static_cast<double>(g.filters.size());
        return std::min(p, 1.0);
    }
    // Time windows: the largest time seen (NaN before the first record).
    double max_time() const noexcept { return have_time_ ? max_time_ : std::nan(""); }
    double watermark() const noexcept { return have_time_ ? max_time_ - cfg_.lateness : std::nan(""); }
    double lateness() const noexcept { return cfg_.lateness; }
    double generation_width() const noexcept { return width_; }
    uint64_t generation_records() const noexcept { return gen_records_; }

private:
    struct Generation {
        int64_t id = 0;         // time: slice number floor(t / W)
        uint64_t first = 0;     // count: the position of its first record
        uint64_t size = 0;      // count: its records
        double lo = 0, hi = 0;  // time: least and greatest time recorded in it
        std::unique_ptr<KeySet> set;  // exact
        std::vector<Filter> filters;  // approximate (inserts go to the last)
        uint64_t entries() const noexcept {
            if (set) return set->size();
            uint64_t n = 0;
            for (const Filter& f : filters) n += f.size();
            return n;
        }
        uint64_t memory_bytes() const noexcept {
            if (set) return set->reserved_bytes();
            uint64_t n = 0;
            for (const Filter& f : filters) n += f.table_bytes();
            return n;
        }
    };

    // A new generation's store: a key set sized for what the newest generation holds (a stream's
    // rate changes slowly), its index for as many keys and its arena's first chunk for as many
    // bytes and a tenth more, so that a generation is mostly one chunk; or a filter of `capacity`.
    // (Reusing an expired generation's set kept its chunks, sized when the set grew from small:
    // 42 bytes a key held against 31 this way, measured on 16-byte keys in a 10^6 window.) An
    // expired generation's memory is given back: a stream that slows down holds less.
    void fill_generation(Generation& g, uint64_t capacity) {
        if (cfg_.exact) {
            const KeySet* last = gens_.empty() ? nullptr : gens_.back().set.get();
            // An eighth more than the last one held: an index sized for exactly that doubles
            // when the next generation holds one key more, as about every second one does. A
            // count window's generation never holds more keys than its records.
            uint64_t expect = last ? last->size() + last->size() / 8 : 0;
            if (count_) expect = std::min(expect, gen_records_);
            g.set = std::make_unique<KeySet>(hasher_, expect, count_ ? position_bytes_ : 16u);
            // 4 KiB at least: a window's generations may be tiny, and many windows may live.
            const uint64_t bytes = last ? last->arena_bytes() + last->arena_bytes() / 10 : 0;
            g.set->set_first_chunk_bytes(std::min<uint64_t>(std::max<uint64_t>(bytes, 4096), uint64_t(1) << 26));
        } else {
            g.filters.push_back(Filter::for_capacity(std::max<uint64_t>(capacity, 64), filter_fpr_, 0, 4, 500, hasher_.seed));
        }
    }
    void expire_front() { gens_.erase(gens_.begin()); }
    // Approximate: adds h to the generation's newest filter; false when it has no room.
    static bool filter_add(Generation& g, uint64_t h) {
        for (const Filter& f : g.filters)
            if (f.contains_hash(h)) return true;  // once a generation is enough
        Filter& f = g.filters.back();
        if (f.size() >= f.capacity()) return false;
        bool was_new;
        return f.insert_unique_hash(h, was_new);
    }

    // A key's last position in its count generation (0 .. G-1), in the position_bytes_ after its
    // key's bytes, least significant first (the same bytes on every platform).
    void put_position(unsigned char* v, uint64_t at) const noexcept {
        for (unsigned b = 0; b < position_bytes_; ++b) v[b] = static_cast<unsigned char>(at >> (8 * b));
    }
    uint64_t get_position(const unsigned char* v) const noexcept {
        uint64_t at = 0;
        for (unsigned b = 0; b < position_bytes_; ++b) at |= uint64_t(v[b]) << (8 * b);
        return at;
    }

    // see_count for a record whose key's last position in the generations that end at or before
    // `boundary` is known: last_before (1 + it; 0: none there). Only the newer generations are
    // probed.
    WindowVerdict see_after(KeySpan key, uint64_t h, uint64_t last_before, uint64_t boundary) {
        const uint64_t i = records_;
        const uint64_t n = cfg_.records;
        while (!gens_.empty() && gens_.front().first + gens_.front().size + n <= i) expire_front();
        bool dup = last_before && last_before - 1 + n >= i;
        for (auto g = gens_.rbegin(); g != gens_.rend() && g->first >= boundary; ++g) {
            const unsigned char* v = g->set->find_value(key, h);
            if (!v) continue;
            dup = g->first + get_position(v) + n >= i;  // (newer than any before the boundary)
            break;
        }
        return record_count(key, h, i, dup);
    }

    WindowVerdict see_count(KeySpan key, uint64_t h) {
        const uint64_t i = records_;
        const uint64_t n = cfg_.records;
        while (!gens_.empty() && gens_.front().first + gens_.front().size + n <= i) expire_front();
        bool dup = false;
        for (auto g = gens_.rbegin(); g != gens_.rend(); ++g) {
            if (g->set) {
                const unsigned char* v = g->set->find_value(key, h);
                if (!v) continue;
                dup = g->first + get_position(v) + n >= i;  // its last occurrence is among i-N .. i-1
                break;
            }
            bool hit = false;
            for (const Filter& f : g->filters) hit = hit || f.contains_hash(h);
            if (hit) {
                dup = true;
                break;
            }
        }
        return record_count(key, h, i, dup);
    }
    // Records record i (its verdict `dup`) in the newest generation, a new one when that is full.
    WindowVerdict record_count(KeySpan key, uint64_t h, uint64_t i, bool dup) {
        if (gens_.empty() || gens_.back().size == gen_records_) new_count_generation(i);
        Generation& g = gens_.back();
        if (g.set) {
            bool is_new;
            put_position(g.set->add_value(key, h, is_new), i - g.first);
        } else if (!filter_add(g, h)) {
            // The filter found no room (rare at its design load): the generation ends early.
            new_count_generation(i);
            bool was_new;
            if (!gens_.back().filters.back().insert_unique_hash(h, was_new))
                throw FilterFullError("a window generation's filter has no room for a key");
        }
        ++gens_.back().size;
        ++records_;
        duplicates_ += dup;
        return dup ? WindowVerdict::duplicate : WindowVerdict::kept;
    }
    void new_count_generation(uint64_t i) {
        Generation g;
        g.first = i;
        fill_generation(g, gen_records_);
        gens_.push_back(std::move(g));
    }

    WindowVerdict see_time(KeySpan key, uint64_t h, double t) {
        check_time(t);
        const double d = cfg_.seconds;
        if (have_time_ && t < max_time_ - cfg_.lateness) {
            ++records_;
            ++late_;
            return WindowVerdict::late;
        }
        bool dup = false;
        for (auto g = gens_.rbegin(); g != gens_.rend() && !dup; ++g) {
            if (!(g->lo < t + d && g->hi > t - d)) continue;  // no time of it within D of t
            if (g->set) {
                const unsigned char* v = g->set->find_value(key, h);
                if (!v) continue;
                double lo, hi;
                std::memcpy(&lo, v, 8);
                std::memcpy(&hi, v + 8, 8);
                dup = lo < t + d && hi > t - d;  // exact: lo and hi lie within W <= D of each other
            } else {
                for (const Filter& f : g->filters) dup = dup || f.contains_hash(h);
            }
        }
        // Record it in its slice's generation (made when missing, in order of slices).
        const int64_t id = static_cast<int64_t>(std::floor(t / width_));
        auto at = std::lower_bound(gens_.begin(), gens_.end(), id, [](const Generation& g, int64_t v) { return g.id < v; });
        if (at == gens_.end() || at->id != id) {
            Generation g;
            g.id = id;
            g.lo = g.hi = t;
            // A filter sized for the keys the newest generation holds (the stream's rate), or 1024.
            fill_generation(g, gens_.empty() ? 1024 : gens_.back().entries() + gens_.back().entries() / 4);
            at = gens_.insert(at, std::move(g));
        }
        Generation& g = *at;
        if (g.set) {
            bool is_new;
            unsigned char* v = g.set->add_value(key, h, is_new);
            double lo = t, hi = t;
            if (!is_new) {
                std::memcpy(&lo, v, 8);
                std::memcpy(&hi, v + 8, 8);
                lo = std::min(lo, t);
                hi = std::max(hi, t);
            }
            std::memcpy(v, &lo, 8);
            std::memcpy(v + 8, &hi, 8);
        } else if (!filter_add(g, h)) {
            // Full: a filter twice as large joins the chain (the generation's rate adds up).
            Filter bigger = Filter::for_capacity(g.filters.back().capacity() * 2, filter_fpr_, 0, 4, 500, hasher_.seed);
            bool was_new;
            if (!bigger.insert_unique_hash(h, was_new)) throw FilterFullError("a window generation's filter has no room for a key");
            g.filters.push_back(std::move(bigger));
        }
        g.lo = std::min(g.lo, t);
        g.hi = std::max(g.hi, t);
        max_time_ = have_time_ ? std::max(max_time_, t) : t;
        have_time_ = true;
        // Expire what no record at or above the watermark can match: every time <= M - L - D.
        const double floor_time = max_time_ - cfg_.lateness - d;
        while (!gens_.empty() && gens_.front().hi <= floor_time) expire_front();
        ++records_;
        duplicates_ += dup;
        return dup ? WindowVerdict::duplicate : WindowVerdict::kept;
    }

    WindowConfig cfg_;
    KeyHasher hasher_;
    bool count_ = false;
    uint64_t gen_records_ = 0;  // count: G
    // count, exact: the bytes of a position in a generation (1-4: as few as G needs; a window of
    // 10^6 in 4 or 8 generations keeps 3 bytes a key, not 4, on keys of ~20 bytes)
    unsigned position_bytes_ = 1;
    double width_ = 0;          // time: W
    unsigned spans_ = 1;        // generations one window's state spans
    double filter_fpr_ = 0;
    std::vector<Generation> gens_;  // oldest first (count: by position; time: by slice)
    std::vector<uint64_t> batch_last_;   // see_many_counted's chunk state (kept from call to call)
    std::vector<uint32_t> batch_picked_;
    uint64_t records_ = 0, duplicates_ = 0, late_ = 0;
    double max_time_ = 0;
    bool have_time_ = false;
};

}  // namespace cuckoo
