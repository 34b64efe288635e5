// A filter made of one or more Filter stages: the object the Python API wraps.
//
// A fixed filter has exactly one stage and every operation goes straight to it. A growable filter
// adds a stage when the newest one is full: with the default expansion 2, stage k has twice the
// capacity of stage k - 1 and one more fingerprint bit (up to 32). The expansion (1..4, as
// RedisBloom's EXPANSION; stored in files) is the growth factor of each new stage; see
// "Expansion" below. Growth stages are nested on the first (cuckoo/locate.hpp):
// stage k has exactly 2^k times its buckets, and a key's bucket pair and fingerprint in stage k
// determine them in every earlier stage, which makes deletes and the set union exact across
// stages. (Files of earlier releases have growth stages of their own geometry, level 0 but not
// the first's layout: they load and answer as before.) Inserts go to the oldest stage with room
// (fewer items than its capacity; the newest stage always counts as having room), so space that
// deletes free is used again; lookups, counts and deletions look at every stage. The false-positive rate of stage k
// is at most half that of stage k - 1, so the rates of all stages sum to less than twice the
// first stage's: the total stays below 2 * fpr however often the filter grows. Memory stays
// within about 2x of a fixed filter sized for the final count up front (the fingerprints of later
// stages are a few bits longer, and the newest stage may be partly empty).
//
// Growth is bounded, so that no input can make the filter take memory without storing keys: a
// stage is added only when an insert failed in the newest stage, that stage is at least half its
// design load (random keys fill it to ~95% first; kMinGrowthLoadFraction has the exceptions),
// the failing key's fingerprint does not already fill its bucket pair there (2b copies of one
// key never fit, however many stages there are), and the new stage's table fits in the
// available memory. Otherwise the insert fails, the filter is unchanged, and last_failure()
// says why.
//
// Expansion. Nesting needs a power of two: a new stage has 2^level times the first's buckets
// and min(f0 + level, 32) fingerprint bits, so the factor is rounded up to one (3 grows like 4,
// as RedisBloom rounds its expansion). The false-positive bound of every factor, with eps0 the
// first stage's bound (about 2b / 2^f0), counting the stages the filter could still add:
//   expansion 2: each stage 2x the last, one more bit: eps0 (1 + 1/2 + 1/4 + ...) < 2 eps0;
//   expansion 3, 4: each stage 4x the last, two more bits: eps0 (1 + 1/4 + ...) < 4/3 eps0;
//   expansion 1: each stage the first's size and fingerprints (level 0, the first's layout, so
//   deletes and unions stay exact): k stages have a bound of k eps0, so the bound grows with
//   the stages (at most kMaxStages of them): the price of memory that grows in small steps.
// fpr_bound() returns exactly these sums (capped at 1).
//
// Every key is hashed once; each stage derives its own bucket and fingerprint from that hash.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cuckoo/errors.hpp"  // MergeError, FilterFullError
#include "cuckoo/filter.hpp"
#include "cuckoo/memory.hpp"

namespace cuckoo {

// Most stages a filter may have (the file format's bound too). Growth doubles the capacity per
// stage, so growth alone never gets near it; merges that keep overflowing stages could.
constexpr size_t kMaxStages = 64;

// Why the last insert failed (see StagedFilter::last_failure).
enum class InsertFailure {
    none,
    no_room,     // no room within max_kicks, and the filter cannot grow (fixed)
    copies,      // the key's fingerprint already fills its bucket pair (2b copies)
    low_load,    // failed while the newest stage is far below its design load: no growth for that
    memory,      // the next stage's table does not fit in the available memory
    max_stages,  // the filter has kMaxStages stages
};

// A growable filter adds a stage only once its newest stage holds this fraction of its design
// load. Random keys reach more before an insert fails (measured, lowest of 4-5 seeds at 10^5
// keys: max_kicks >= 10: b = 2 0.58, b = 4 0.80, b = 8 > 0.86; max_kicks 0: b = 2 0.17, b = 4
// 0.42), so growth follows them as before; keys that collide on purpose fail far lower. Small
// stages (fewer slots than kGrowthLoadCheckSlots, a few KiB) may always grow: their loads at
// the first failure vary more, and a new stage doubles, so that allows a few small stages only.
constexpr double kMinGrowthLoadFraction = 0.5;
constexpr double kMinGrowthLoadFractionFewKicks = 0.1;  // max_kicks < 10
constexpr uint64_t kGrowthLoadCheckSlots = 4096;

// How two filters' fingerprints combine, like collections.Counter: `add` sums the counts of each
// (bucket pair, fingerprint) (a multiset union, `+`); `max` keeps the larger count (a set union,
// `|`: idempotent, and shards built with set semantics merge into the filter of their union).
enum class MergeMode { add, max };

// Growth factors a growable filter accepts (see "Expansion" above); 2 is the default.
constexpr unsigned kMinExpansion = 1, kMaxExpansion = 4, kDefaultExpansion = 2;

class StagedFilter {
public:
    StagedFilter(Filter first, bool growable, unsigned expansion = kDefaultExpansion)
        : growable_(growable), expansion_(checked_expansion(expansion)) {
        stages_.push_back(std::move(first));
    }
    StagedFilter(std::vector<Filter> stages, bool growable, unsigned expansion = kDefaultExpansion)
        : stages_(std::move(stages)), growable_(growable), expansion_(checked_expansion(expansion)) {
        if (stages_.empty()) throw std::invalid_argument("a filter needs at least one stage");
    }
    static unsigned checked_expansion(unsigned x) {
        if (x < kMinExpansion || x > kMaxExpansion)
            throw std::invalid_argument("expansion must be 1, 2, 3 or 4, not " + std::to_string(x));
        return x;
    }
    // The growth factor of each new stage as asked for (3 grows like 4: see "Expansion").
    unsigned expansion() const noexcept { return expansion_; }

    KeyHasher hasher() const noexcept { return first().hasher(); }

    // ---- structure ----
    bool growable() const noexcept { return growable_; }
    size_t stage_count() const noexcept { return stages_.size(); }
    const Filter& stage(size_t k) const { return stages_.at(k); }
    const std::vector<Filter>& stages() const noexcept { return stages_; }
    const Filter& first() const noexcept { return stages_.front(); }
    const Filter& newest() const noexcept { return stages_.back(); }
    bool writable() const noexcept { return first().table().writable(); }
    // Backs the newest stage's table (the one inserts go to) with memory now.
    void prefault() noexcept { stages_.back().prefault(); }
    void require_writable() const {
        for (const Filter& f : stages_) f.require_writable();
    }

    // ---- statistics over all stages ----
    uint64_t size() const noexcept { return sum([](const Filter& f) { return f.size(); }); }
    uint64_t slot_count() const noexcept { return sum([](const Filter& f) { return f.slot_count(); }); }
    uint64_t bucket_count() const noexcept { return sum([](const Filter& f) { return f.bucket_count(); }); }
    uint64_t table_bytes() const noexcept { return sum([](const Filter& f) { return f.table_bytes(); }); }
    uint64_t capacity() const noexcept { return sum([](const Filter& f) { return f.capacity(); }); }
    double load_factor() const noexcept { return static_cast<double>(size()) / static_cast<double>(slot_count()); }
    // The chance that an absent key is reported present by at least one stage.
    double expected_fpr() const noexcept {
        if (stages_.size() == 1) return first().expected_fpr();  // exactly the stage's value
        double miss = 1.0;
        for (const Filter& f : stages_) miss *= 1.0 - f.expected_fpr();
        return 1.0 - miss;
    }
    // Upper bound at full load of every stage, and, for a growable filter, of every stage it
    // could still add (see "Expansion": a geometric series for expansion 2..4, at most 2x / 4/3x
    // the first stage's bound; for expansion 1 the first's bound for each stage it may still add).
    double fpr_bound() const noexcept {
        if (!growable_) return first().fpr_bound();
        double total = 0.0;
        for (const Filter& f : stages_) total += f.fpr_bound();
        if (expansion_ == 1)
            return std::min(total + first().fpr_bound() * static_cast<double>(kMaxStages - stages_.size()), 1.0);
        const Filter& last = newest();
        const unsigned step = level_step();
        double next = last.fpr_bound();
        for (unsigned bits = last.fingerprint_bits(); bits < kMaxFingerprintBits; bits += step) {
            next /= static_cast<double>(1u << step);
            total += next;
        }
        return std::min(total, 1.0);
    }
    InsertStats stats() const noexcept {
        InsertStats s = retired_stats_;
        for (const Filter& f : stages_) s += f.stats();
        return s;
    }
    InsertFailure last_failure() const noexcept { return last_failure_; }
    // A cap on the bytes of all stages' tables that growth may not pass (0, the default: a new
    // stage must fit in the memory available when it is added). Not stored in files.
    void set_memory_limit(uint64_t bytes) noexcept { memory_limit_ = bytes; }
    uint64_t memory_limit() const noexcept { return memory_limit_; }

    // ---- scalar operations on a key's hash ----
    bool contains_hash(uint64_t h) const noexcept {
        for (const Filter& f : stages_)
            if (f.contains_hash(h)) return true;
        return false;
    }
    uint64_t count_hash(uint64_t h) const noexcept {
        uint64_t n = 0;
        for (const Filter& f : stages_) n += f.count_hash(h);
        return n;
    }
    // Inserts; false (filter unchanged, last_failure() says why) if no stage has room for it and
    // the filter cannot or may not grow.
    bool insert_hash(uint64_t h) {
        require_writable();
        return insert_from(h, 0);
    }
    bool insert_unique_hash(uint64_t h, bool& was_new) {
        require_writable();  // also when the key is present: a write to a read-only filter always raises
        if (contains_hash(h)) {
            was_new = false;
            return true;
        }
        was_new = true;
        return insert_from(h, 0);
    }
    // Removes one copy of the key's fingerprint. With several stages, a key's fingerprint can
    // also appear, as a false positive, in stages it was never stored in: a copy there is another
    // key's. When every matching stage is in the chain (the first stage's geometry or nested on
    // it), the copy is removed from the matching stage of the highest level, and that is always
    // safe: say the key K was stored at level j and the copy removed at level i >= j belongs to
    // K'. K' and K then have the same bucket pair and fingerprint at level i, hence (nesting) at
    // level j too, so K's own copy at level j matches K' exactly as the removed one did: every
    // key still added is found, and the stored copies are those of the remaining keys. (Copies
    // at one level are interchangeable, as in one table.) A stage outside the chain (files of
    // earlier releases) gives no such guarantee: when one of two or more matching stages is
    // outside it, nothing is removed and false is returned, so that nothing is lost.
    bool erase_hash(uint64_t h) {
        require_writable();
        if (stages_.size() == 1) return stages_.front().erase_hash(h);
        const size_t none = stages_.size();
        size_t finest = none, matches = 0;
        bool all_in_chain = true;
        for (size_t k = 0; k < stages_.size(); ++k) {
            if (!stages_[k].contains_hash(h)) continue;
            ++matches;
            all_in_chain = all_in_chain && in_chain(k);
            if (finest == none || stages_[k].nest_level() > stages_[finest].nest_level()) finest = k;
        }
        if (matches == 0 || (matches > 1 && !all_in_chain)) return false;
        return stages_[finest].erase_hash(h);
    }
    // Whether stage k has the first stage's geometry or is nested on it (see erase_hash).
    bool in_chain(size_t k) const noexcept {
        return stages_[k].nest_level() > 0 || stages_[k].same_layout(stages_.front());
    }
    bool all_in_chain() const noexcept {
        for (size_t k = 0; k < stages_.size(); ++k)
            if (!in_chain(k)) return false;
        return true;
    }
    void clear() {
        stages_.front().clear();
        for (size_t k = 1; k < stages_.size(); ++k) retired_stats_ += stages_[k].stats();
        stages_.erase(stages_.begin() + 1, stages_.end());
    }
    // Drops the stages after the first that hold nothing (deletes emptied them); returns how many.
    // The first stage stays: it defines the filter's parameters. Their insert statistics stay
    // counted in stats().
    size_t compact() {
        require_writable();
        size_t dropped = 0;
        for (size_t k = stages_.size(); k-- > 1;) {
            if (stages_[k].size() != 0) continue;
            retired_stats_ += stages_[k].stats();
            stages_.erase(stages_.begin() + static_cast<std::ptrdiff_t>(k));
            ++dropped;
        }
        return dropped;
    }

    // ---- batches (same contracts as Filter's) ----
    template <class HashAt, class Out, class Stop>
    uint64_t contains_batch(uint64_t n, HashAt&& hash_at, Out* out, Stop&& should_stop) const {
        if (stages_.size() == 1) return stages_.front().contains_batch(n, hash_at, out, should_stop);
        return multi_stage_read(
            n, hash_at, out, should_stop,
            [](const Filter& f, uint64_t len, auto& h, Out* o) { f.contains_batch(len, h, o, [] { return false; }); },
            [](Out& acc, Out v) { acc = acc | v; });
    }
    template <class HashAt, class Out, class Stop>
    uint64_t count_batch(uint64_t n, HashAt&& hash_at, Out* out, Stop&& should_stop) const {
        if (stages_.size() == 1) return stages_.front().count_batch(n, hash_at, out, should_stop);
        return multi_stage_read(
            n, hash_at, out, should_stop,
            [](const Filter& f, uint64_t len, auto& h, Out* o) { f.count_batch(len, h, o, [] { return false; }); },
            [](Out& acc, Out v) { acc = static_cast<Out>(acc + v); });
    }
    // The same stage choices as insert_hash key by key: runs of keys go through the target
    // stage's own batch insert (at most as many keys as it has room for, so the target cannot
    // change inside a run); a key that finds no room there goes on like a scalar insert.
    template <class HashAt, class Stop>
    uint64_t insert_batch(uint64_t n, HashAt&& hash_at, Filter::InsertMode mode, bool* was_new, bool& full,
                          Stop&& should_stop) {
        require_writable();  // also for an empty batch
        full = false;
        last_failure_ = InsertFailure::none;
        if (growable_) plan_growth(n);  // may throw (bad_alloc) before any key goes in
        struct DropSpares {
            std::vector<Filter>& spares;
            ~DropSpares() { spares.clear(); }
        } drop{spare_};
        uint64_t done = 0;
        while (done < n) {
            const size_t t = insert_target();
            const uint64_t run = t + 1 == stages_.size() ? n - done : std::min(n - done, room(t));
            auto shifted = offset_keys(hash_at, done);
            bool stage_full = false;
            uint64_t got;
            if (mode == Filter::InsertMode::Always || stages_.size() == 1)
                got = stages_[t].insert_batch(run, shifted, mode, was_new ? was_new + done : nullptr, stage_full,
                                              should_stop);
            else
                got = unique_insert_multi_stage(t, run, shifted, was_new ? was_new + done : nullptr, stage_full,
                                                should_stop);
            done += got;
            if (!stage_full) {
                if (got < run) return done;  // stopped (should_stop)
                continue;
            }
            // Key `done` found no room in stage t (and, for unique inserts, is in no stage).
            if (!insert_from(hash_at(done), t + 1, /*in_batch=*/true)) {
                full = true;
                return done;
            }
            ++done;
        }
        return done;
    }
    template <class HashAt, class Stop>
    uint64_t erase_batch(uint64_t n, HashAt&& hash_at, bool* out, Stop&& should_stop) {
        require_writable();
        if (stages_.size() == 1) return stages_.front().erase_batch(n, hash_at, out, should_stop);
        for (uint64_t k = 0; k < n; ++k) {
            if (k % kBatchBlock == 0 && should_stop()) return k;
            const bool erased = erase_hash(hash_at(k));
            if (out) out[k] = erased;
        }
        return n;
    }

    // ---- merging ----
    // Why `other` cannot be merged exactly ("" if it can): the first stages must share hash algorithm, seed,
    // bucket size, fingerprint width and bucket count. A fixed filter also needs the same stages.
    std::string merge_mismatch(const StagedFilter& other) const {
        const std::string why = layout_mismatch(other);
        if (!why.empty()) return why;
        if (!growable_) {
            if (other.stages_.size() > stages_.size()) return "the other filter has grown and this one is not growable";
            for (size_t k = 1; k < other.stages_.size(); ++k)
                if (!stages_[k].same_layout(other.stages_[k])) return "different growth stages";
        }
        return "";
    }
    // Why the first stages of the two filters differ ("" if they do not): hash algorithm, seed,
    // bucket size, fingerprint width, bucket layout or bucket count (merge_mismatch, intersect).
    std::string layout_mismatch(const StagedFilter& other) const {
        const Filter& a = first();
        const Filter& b = other.first();
        if (a.hash_algorithm() != b.hash_algorithm()) return "different hash algorithms";
        if (a.seed() != b.seed()) return "different seeds";
        if (a.bucket_size() != b.bucket_size()) return "different bucket sizes";
        if (a.fingerprint_bits() != b.fingerprint_bits()) return "different fingerprint widths";
        if (a.semi_sorted() != b.semi_sorted()) return "one has semi-sorted buckets and the other not";
        if (a.bucket_count() != b.bucket_count()) return "different capacities (bucket counts)";
        return "";
    }

    // The multiset intersection (like collections.Counter's &), in place: each entry (bucket pair,
    // fingerprint) of each stage of this filter keeps at most as many copies as `other` has
    // copies that could be the same key's. All or nothing: on an error this filter is unchanged.
    //
    // Across stages (either filter grown), for an entry E of level l here: a copy in `other` at a
    // level <= l that E projects onto (covering) matches every key E matches, so E's copy stays.
    // A copy F at a finer level that refines E (F's projection is E) matches only some of E's
    // keys: their intersection is F, so this filter gets F's entry at F's level in place of E's
    // copy (place_at_level; at most E's copies of each such F). A key with n copies here (n_s in
    // stage s) and m in `other` keeps at least min(n_s, m) for each s, so at least min(n, m): no
    // key in both is lost. A key that an entry here and one there both match keeps the finer of
    // the two, so a lookup answers exactly `in this and in other`.
    //
    // A fixed filter cannot add stages, so, as for `|`, it refuses a grown `other`. (Keeping E
    // instead kept 39% of its keys that `other` does not hold, where other's own false-positive
    // rate on them was 6%: 8-bit fingerprints, `other` of four stages.)
    void intersect(const StagedFilter& other) {
        const std::string why = layout_mismatch(other);
        if (!why.empty()) throw MergeError("cannot intersect filters: " + why);
        require_writable();
        if (stages_.size() == 1 && other.stages_.size() == 1) {
            Filter result(stages_.front());
            result.intersect_from(other.stages_.front());
            stages_.front() = std::move(result);
            return;
        }
        if (!growable_)
            throw MergeError(
                "cannot intersect filters: the other filter has grown and this one is not growable (the "
                "intersection keeps the finer of two matching entries, which needs their stage): use other & self");
        if (!all_in_chain() || !other.all_in_chain())
            throw MergeError(
                "cannot intersect filters: a growth stage (from a file of an earlier release) is not nested on the "
                "first stage, so a key's copies in the two filters cannot be matched");
        struct Refined {
            size_t stage;  // of `other`
            uint64_t bucket;
            uint32_t fp;
            uint64_t copies;
        };
        std::vector<Refined> refined;
        std::vector<Filter> result = stages_;
        for (size_t k = 0; k < stages_.size(); ++k) {
            const Filter& mine = stages_[k];
            mine.for_each_entry([&](uint64_t i, uint64_t, uint32_t fp, unsigned copies) {
                uint64_t keep = std::min<uint64_t>(copies, covering(other.stages_, mine, i, fp));
                for (size_t t = 0; t < other.stages_.size() && keep < copies; ++t) {
                    const Filter& st = other.stages_[t];
                    if (st.nest_level() <= mine.nest_level()) continue;
                    for_each_refining(st, mine, i, fp, [&](uint64_t b, uint32_t f, unsigned n) {
                        refined.push_back(Refined{t, b, f, std::min<uint64_t>(copies - keep, n)});
                    });
                }
                for (uint64_t c = keep; c < copies; ++c) result[k].erase_entry(i, fp);
            });
        }
        // Placed after every removal: the room the removals freed is there to use.
        for (const Refined& r : refined)
            for (uint64_t c = 0; c < r.copies; ++c) place_at_level(result, other.stages_[r.stage], r.bucket, r.fp);
        stages_ = std::move(result);
    }

    // Merges `other` stage by stage (mode add: counts add, a multiset union; mode max: the larger
    // count of each fingerprint in its bucket pair, a set union): each of other's fingerprints goes
    // into the same bucket pair of the stage of the same geometry, exactly where inserting its
    // key would have put it. If a stage overflows, a growable filter keeps a copy of other's stage
    // as a stage of its own (lookups consult every stage, so the answers stay exact); a fixed
    // filter raises FilterFullError. All or nothing: on an error this filter is unchanged.
    //
    // The set union of two growable filters whose stages are all in the chain (see erase_hash)
    // is computed across stages instead (union_chain), since the same key may sit in different
    // stages of the two filters.
    void merge(const StagedFilter& other, MergeMode mode = MergeMode::add) {
        const std::string why = merge_mismatch(other);
        if (!why.empty()) throw MergeError("cannot merge filters: " + why);
        require_writable();
        if (mode == MergeMode::max && growable_ && all_in_chain() && other.all_in_chain()) {
            stages_ = union_chain(other);
            return;
        }
        std::vector<Filter> result = stages_;
        for (size_t k = 0; k < other.stages_.size(); ++k) {
            const Filter& theirs = other.stages_[k];
            if (!merge_into_some_stage(result, k, theirs, mode)) {
                if (!growable_)
                    throw FilterFullError("filter is full: merging would overflow stage " + std::to_string(k) +
                                          "; the filter is unchanged");
                if (result.size() >= kMaxStages)
                    throw FilterFullError("filter is full: a merge would need more than " +
                                          std::to_string(kMaxStages) + " stages; the filter is unchanged");
                result.push_back(theirs);
            }
        }
        stages_ = std::move(result);
    }

    // Merges `theirs` into a stage of `stages` with its layout: stage `k` first, then (for
    // stages kept by earlier merges) the others, newest first. False if none has room.
    static bool merge_into_some_stage(std::vector<Filter>& stages, size_t k, const Filter& theirs, MergeMode mode) {
        std::vector<size_t> order;
        if (k < stages.size()) order.push_back(k);
        for (size_t i = stages.size(); i-- > 0;)
            if (i != k) order.push_back(i);
        for (size_t i : order) {
            if (!stages[i].same_layout(theirs)) continue;
            Filter trial(stages[i]);
            if (mode == MergeMode::add ? trial.merge_from(theirs) : trial.union_from(theirs)) {
                stages[i] = std::move(trial);
                return true;
            }
        }
        return false;
    }

    // The set union across stages, into a copy of this filter's stages (returned). For each
    // distinct entry E (bucket pair and fingerprint) of a stage of `other`, taken from the lowest
    // level up: every copy at E's level or below, in either filter, that projects onto E matches
    // every key E matches; the result gets as many of those as `other` has (the larger count, as
    // `|` of one-stage filters keeps per entry). A missing copy is, if one exists, an entry of a
    // higher level of the result that refines E, moved down to E's level (it then matches every
    // key it matched before, and E's keys too: a key in both filters is stored once even when
    // the two put it in different stages), else a new copy at E's level, in a stage of that
    // level with room or a new one. No key's count decreases, every key of `other` is found.
    std::vector<Filter> union_chain(const StagedFilter& other) const {
        std::vector<Filter> result = stages_;
        std::vector<size_t> order(other.stages_.size());
        for (size_t k = 0; k < order.size(); ++k) order[k] = k;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return other.stages_[a].nest_level() < other.stages_[b].nest_level();
        });
        for (size_t n = 0; n < order.size(); ++n) {
            const Filter& st = other.stages_[order[n]];
            for (uint64_t i = 0; i < st.bucket_count(); ++i) {
                for (unsigned s = 0; s < st.bucket_size(); ++s) {
                    const uint32_t fp = st.table().get(i, s);
                    if (fp == 0 || st.table().find_slot(i, fp) != static_cast<int>(s)) continue;  // first copy in i
                    const uint64_t j = st.alt_index(i, fp);
                    if (j < i && st.table().count(j, fp) > 0) continue;  // handled at j, the lower bucket
                    bool seen = false;  // in an earlier stage of `other` of the same level
                    for (size_t m = 0; m < n && !seen; ++m) {
                        const Filter& prev = other.stages_[order[m]];
                        seen = prev.nest_level() == st.nest_level() && prev.count_entry(i, fp) > 0;
                    }
                    if (seen) continue;
                    const uint64_t want = covering(other.stages_, st, i, fp);
                    for (uint64_t have = covering(result, st, i, fp); have < want; ++have)
                        add_covering(result, st, i, fp);
                }
            }
        }
        return result;
    }

    bool operator==(const StagedFilter& o) const {
        if (stages_.size() != o.stages_.size() || growable_ != o.growable_ || expansion_ != o.expansion_) return false;
        for (size_t k = 0; k < stages_.size(); ++k)
            if (stages_[k] != o.stages_[k]) return false;
        return true;
    }
    bool operator!=(const StagedFilter& o) const { return !(*this == o); }

    // The next stage's geometry: nested on the first stage, at the lowest level with at least
    // `expansion` times the buckets of the largest stage (merges may have kept smaller stages
    // after it; stages of earlier releases are not nested): 2^level times the first's capacity
    // and buckets, min(f0 + level, 32) fingerprint bits. Expansion 1: the first's geometry
    // (level 0).
    struct StageShape {
        uint64_t capacity;
        unsigned fingerprint_bits;
        uint64_t table_bytes;
        bool semi_sorted;
        unsigned level;
    };
    StageShape next_stage() const {
        uint64_t largest = 0;
        for (const Filter& st : stages_) largest = std::max(largest, st.bucket_count());
        return stage_after(largest);
    }
    // The stage that follows a largest stage of `largest_buckets` buckets.
    StageShape stage_after(uint64_t largest_buckets) const {
        const Filter& base = first();
        if (expansion_ == 1)
            return {base.capacity(), base.fingerprint_bits(), base.table_bytes(), base.semi_sorted(), 0};
        unsigned level = 1;
        // base >= 8 and largest <= 2^32 buckets: ends by level 31, before any shift overflows.
        while ((base.bucket_count() << level) < uint64_t(expansion_) * largest_buckets) ++level;
        if ((base.bucket_count() << level) > kMaxBucketCount)
            throw std::length_error("capacity is too large: a filter holds at most 2^32 buckets");
        const unsigned bits = std::min(base.fingerprint_bits() + level, kMaxFingerprintBits);
        const uint64_t capacity = base.capacity() << level;  // at most the slots of the new stage: < 2^35
        const unsigned b = base.bucket_size();
        // Stages of a semi-sorted filter stay semi-sorted while their fingerprints allow it
        // (f <= 16), and are plain after that.
        const bool semi = base.semi_sorted() && semisort::supports(b, bits);
        return {capacity, bits, PackedTable::data_bytes_for(base.bucket_count() << level, b, bits, semi), semi, level};
    }

    // Adds a stage if the filter may grow after `h` found no room in any stage (see the header
    // comment); else sets last_failure_ and returns false. Nothing changes on false.
    // In a batch (in_batch), a stage that plan_growth() did not foresee and that cannot be
    // allocated is a failure for lack of memory (the batch stops there, as when the memory check
    // refuses the stage); a scalar insert raises std::bad_alloc instead. Either way the filter
    // holds what it held before this key.
    bool grow_for(uint64_t h, bool in_batch = false) {
        const Filter& last = stages_.back();
        if (last.pair_saturated_hash(h)) return fail(InsertFailure::copies);
        if (!growable_) return fail(InsertFailure::no_room);
        const double fraction = last.max_kicks() >= 10 ? kMinGrowthLoadFraction : kMinGrowthLoadFractionFewKicks;
        if (last.slot_count() >= kGrowthLoadCheckSlots &&
            last.load_factor() < fraction * design_load(last.bucket_size(), last.semi_sorted()))
            return fail(InsertFailure::low_load);
        if (stages_.size() >= kMaxStages) return fail(InsertFailure::max_stages);
        if (!spare_.empty()) {  // allocated by plan_growth() for this batch, in this order
            stages_.push_back(std::move(spare_.front()));  // no allocation: plan_growth() reserved room
            spare_.erase(spare_.begin());
            return true;
        }
        const StageShape next = next_stage();
        if (!stage_fits(table_bytes(), next)) return fail(InsertFailure::memory);
        try {
            Filter stage = new_stage(next);
            stages_.push_back(std::move(stage));
        } catch (const std::bad_alloc&) {
            if (in_batch) return fail(InsertFailure::memory);
            throw;
        }
        return true;
    }

    // Before a batch of n inserts into a growable filter: allocates the stages it will need if
    // its keys are all new and fill the stages' capacities (the room left below capacity is what
    // decides; a stage may still fill earlier, and then grow_for allocates). Allocating them
    // first is what makes a batch all or nothing when memory runs out: a failure here raises
    // before any key goes in. Stages that the batch does not use are dropped at its end.
    void plan_growth(uint64_t n) {
        uint64_t room_left = 0;
        for (size_t k = 0; k < stages_.size(); ++k) room_left += room(k);
        if (n <= room_left) return;
        uint64_t need = n - room_left;
        std::vector<Filter> planned;
        uint64_t largest = 0, bytes = table_bytes();  // the largest stage's buckets
        for (const Filter& st : stages_) largest = std::max(largest, st.bucket_count());
        while (need > 0 && stages_.size() + planned.size() < kMaxStages) {
            const StageShape next = stage_after(largest);
            if (!stage_fits(bytes, next)) break;  // growth will fail there as it would have
            planned.push_back(new_stage(next));
            bytes += next.table_bytes;
            largest = planned.back().bucket_count();
            need = planned.back().capacity() >= need ? 0 : need - planned.back().capacity();
        }
        stages_.reserve(stages_.size() + planned.size());
        spare_ = std::move(planned);
    }

private:
    // The entry (bucket, fp) of `from` as seen by `to`, a stage of the chain of a level at most
    // from's: the bucket's top bits and the fingerprint's top bits (cuckoo/locate.hpp).
    static void project(const Filter& from, uint64_t& bucket, uint32_t& fp, const Filter& to) noexcept {
        bucket >>= from.nest_level() - to.nest_level();
        fp = 1 + ((fp - 1) >> (from.fp_shift() - to.fp_shift()));
    }
    // Copies in `stages` at the level of `from` or below that match every key that the entry
    // (bucket, fp) of `from` matches.
    static uint64_t covering(const std::vector<Filter>& stages, const Filter& from, uint64_t bucket, uint32_t fp) {
        uint64_t n = 0;
        for (const Filter& st : stages) {
            if (st.nest_level() > from.nest_level()) continue;
            uint64_t b = bucket;
            uint32_t f = fp;
            project(from, b, f, st);
            n += st.count_entry(b, f);
        }
        return n;
    }
    // One more copy covering the entry (bucket, fp) of `like` in `stages` (see union_chain).
    static void add_covering(std::vector<Filter>& stages, const Filter& like, uint64_t bucket, uint32_t fp) {
        for (Filter& st : stages) {
            if (st.nest_level() <= like.nest_level()) continue;
            uint64_t fine_bucket;
            uint32_t fine_fp;
            if (find_refining(st, like, bucket, fp, fine_bucket, fine_fp)) {
                st.erase_entry(fine_bucket, fine_fp);
                place_at_level(stages, like, bucket, fp);
                return;
            }
        }
        place_at_level(stages, like, bucket, fp);
    }
    // An entry of `fine` (a higher level than `like`) whose projection is like's (bucket, fp):
    // one in the buckets below either bucket of the pair, with a fingerprint whose top bits are fp.
    static bool find_refining(const Filter& fine, const Filter& like, uint64_t bucket, uint32_t fp,
                              uint64_t& found_bucket, uint32_t& found_fp) {
        const unsigned dl = fine.nest_level() - like.nest_level(), de = fine.fp_shift() - like.fp_shift();
        // fp << de is at most (2^f0 - 1) 2^e of `fine`, below 2^32.
        const uint32_t lo = ((fp - 1) << de) + 1, hi = fp << de;
        for (uint64_t p : {bucket, like.alt_index(bucket, fp)}) {
            for (uint64_t i = p << dl; i < (p + 1) << dl; ++i) {
                for (unsigned s = 0; s < fine.bucket_size(); ++s) {
                    const uint32_t f = fine.table().get(i, s);
                    if (f >= lo && f <= hi) {
                        found_bucket = i;
                        found_fp = f;
                        return true;
                    }
                }
            }
        }
        return false;
    }
    // Calls visit(bucket, fp, copies) once for each distinct entry of `fine` (a higher level than
    // `like`) that refines like's (bucket, fp): in the buckets below either bucket of the pair, with a
    // fingerprint whose top bits are fp (as find_refining); `bucket` the lower of its pair.
    template <class Visit>
    static void for_each_refining(const Filter& fine, const Filter& like, uint64_t bucket, uint32_t fp, Visit&& visit) {
        const unsigned dl = fine.nest_level() - like.nest_level(), de = fine.fp_shift() - like.fp_shift();
        const uint32_t lo = ((fp - 1) << de) + 1, hi = fp << de;  // below 2^32 (see find_refining)
        std::vector<std::pair<uint64_t, uint32_t>> found;
        for (uint64_t p : {bucket, like.alt_index(bucket, fp)}) {
            for (uint64_t i = p << dl; i < (p + 1) << dl; ++i) {
                for (unsigned s = 0; s < fine.bucket_size(); ++s) {
                    const uint32_t f = fine.table().get(i, s);
                    if (f >= lo && f <= hi) found.emplace_back(std::min(i, fine.alt_index(i, f)), f);
                }
            }
        }
        std::sort(found.begin(), found.end());
        found.erase(std::unique(found.begin(), found.end()), found.end());
        for (const auto& e : found) visit(e.first, e.second, fine.count_entry(e.first, e.second));
    }
    // Inserts the entry (bucket, fp) of `like` into a stage of like's level in `stages`, adding an
    // empty one of that level if none has room.
    static void place_at_level(std::vector<Filter>& stages, const Filter& like, uint64_t bucket, uint32_t fp) {
        for (Filter& st : stages)
            if (st.nest_level() == like.nest_level() && st.insert_entry(bucket, fp)) return;
        if (stages.size() >= kMaxStages)
            throw FilterFullError("filter is full: a merge would need more than " + std::to_string(kMaxStages) +
                                  " stages; the filter is unchanged");
        const Filter& base = stages.front();
        stages.push_back(Filter::from_parts(
            PackedTable(like.bucket_count(), like.bucket_size(), like.fingerprint_bits(), like.semi_sorted()),
            base.max_kicks(), base.seed(), base.hash_algorithm(), like.capacity(), 0, like.nest_level(), like.fp_shift()));
        if (!stages.back().insert_entry(bucket, fp))  // an empty table always has room
            throw FilterFullError("filter is full: a merge found no room in an empty stage; the filter is unchanged");
    }

    // Whether a new stage of shape `next` may be added to tables of `bytes` (the memory limit, or
    // the memory available now).
    bool stage_fits(uint64_t bytes, const StageShape& next) const {
        return memory_limit_ ? bytes + next.table_bytes <= memory_limit_ : memory_available_for(next.table_bytes);
    }
    Filter new_stage(const StageShape& next) const {
        if (next.level == 0) {  // expansion 1: an empty table of the first's layout
            const Filter& base = first();
            return Filter::from_parts(PackedTable(base.bucket_count(), base.bucket_size(), base.fingerprint_bits(),
                                                  base.semi_sorted()),
                                      base.max_kicks(), base.seed(), base.hash_algorithm(), base.capacity(), 0);
        }
        return Filter::nested_on(first(), next.level, next.capacity, next.semi_sorted);
    }
    // Levels (so fingerprint bits) a new stage adds for expansion 2..4.
    unsigned level_step() const noexcept { return expansion_ <= 2 ? 1 : 2; }
    bool fail(InsertFailure why) noexcept {
        last_failure_ = why;
        return false;
    }
    // Free room of stage k below its capacity (0 when at or beyond it).
    uint64_t room(size_t k) const noexcept {
        const Filter& st = stages_[k];
        return st.size() < st.capacity() ? st.capacity() - st.size() : 0;
    }
    // Stages an insert tries, oldest first: those with room, and the newest in any case.
    bool is_candidate(size_t k) const noexcept { return k + 1 == stages_.size() || room(k) > 0; }
    size_t insert_target() const noexcept {
        size_t k = 0;
        while (!is_candidate(k)) ++k;
        return k;
    }
    // Tries the candidate stages from stage `from` on, then growth (see grow_for).
    bool insert_from(uint64_t h, size_t from, bool in_batch = false) {
        last_failure_ = InsertFailure::none;
        for (size_t k = from; k < stages_.size(); ++k)
            if (is_candidate(k) && stages_[k].insert_hash(h)) return true;
        return grow_for(h, in_batch) && stages_.back().insert_hash(h);
    }

    template <class F>
    uint64_t sum(F&& f) const noexcept {
        uint64_t total = 0;
        for (const Filter& s : stages_) total += f(s);
        return total;
    }

    // Hashes a chunk of keys once, then lets every stage answer for it and folds the answers.
    template <class HashAt, class Out, class Stop, class StageOp, class Fold>
    uint64_t multi_stage_read(uint64_t n, HashAt& hash_at, Out* out, Stop& should_stop, StageOp&& stage_op,
                              Fold&& fold) const {
        constexpr uint64_t kChunk = 1024;
        std::vector<uint64_t> hashes(kChunk);
        std::unique_ptr<Out[]> partial(new Out[kChunk]);  // not vector: vector<bool> has no data()
        for (uint64_t start = 0; start < n; start += kChunk) {
            if (should_stop()) return start;
            const uint64_t len = std::min(kChunk, n - start);
            hash_keys(hash_at, start, static_cast<unsigned>(len), hashes.data());
            auto from_chunk = [&](uint64_t j) { return hashes[j]; };
            stage_op(stages_[0], len, from_chunk, out + start);
            for (size_t k = 1; k < stages_.size(); ++k) {
                stage_op(stages_[k], len, from_chunk, partial.get());
                for (uint64_t j = 0; j < len; ++j) fold(out[start + j], partial[j]);
            }
        }
        return n;
    }

    // Unique inserts into stage `target` of several, a chunk at a time: which keys the other
    // stages hold is found with one bulk lookup per stage (they do not change during the run);
    // the others go through the target stage's own batch insert, which handles keys repeated
    // inside the batch.
    template <class HashAt, class Stop>
    uint64_t unique_insert_multi_stage(size_t target, uint64_t n, HashAt& hash_at, bool* was_new, bool& full,
                                       Stop& should_stop) {
        constexpr uint64_t kChunk = 1024;
        std::vector<uint64_t> hashes(kChunk), pending(kChunk);
        std::unique_ptr<bool[]> in_older(new bool[kChunk]), partial(new bool[kChunk]), sub_new(new bool[kChunk]);
        auto never = [] { return false; };
        for (uint64_t start = 0; start < n; start += kChunk) {
            if (should_stop()) return start;
            const uint64_t len = std::min(kChunk, n - start);
            hash_keys(hash_at, start, static_cast<unsigned>(len), hashes.data());
            auto from_chunk = [&](uint64_t j) { return hashes[j]; };
            std::fill(in_older.get(), in_older.get() + len, false);
            for (size_t k = 0; k < stages_.size(); ++k) {
                if (k == target) continue;
                stages_[k].contains_batch(len, from_chunk, partial.get(), never);
                for (uint64_t j = 0; j < len; ++j) in_older[j] = in_older[j] | partial[j];
            }
            uint64_t m = 0;
            for (uint64_t j = 0; j < len; ++j) {
                if (in_older[j]) {
                    if (was_new) was_new[start + j] = false;
                } else {
                    pending[m++] = j;
                }
            }
            auto from_pending = [&](uint64_t i) { return hashes[pending[i]]; };
            const uint64_t inserted = stages_[target].insert_batch(m, from_pending, Filter::InsertMode::Unique,
                                                                   sub_new.get(), full, never);
            if (was_new)
                for (uint64_t i = 0; i < std::min(m, inserted + 1); ++i) was_new[start + pending[i]] = sub_new[i];
            if (full) return start + pending[inserted];
        }
        return n;
    }

    std::vector<Filter> stages_;
    bool growable_ = false;
    unsigned expansion_ = kDefaultExpansion;
    InsertFailure last_failure_ = InsertFailure::none;
    uint64_t memory_limit_ = 0;
    InsertStats retired_stats_;  // of stages dropped by clear() and compact()
    std::vector<Filter> spare_;  // stages allocated by plan_growth() for the batch under way
};

}  // namespace cuckoo
