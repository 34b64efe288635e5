// cuckoo::Store: an exact key-value store on a partial-key cuckoo index over an append-only log
// (the design the filter descends from; docs/store.md).
//
//   index: buckets of 4 slots, each a 16-bit tag and a 32-bit log offset (in units of 8 bytes).
//          A key's hash gives its first bucket and its tag exactly as a filter's key gives its
//          bucket and fingerprint (cuckoo/locate.hpp); the second bucket is alt(i1, tag).
//   get:   every slot of the two buckets whose tag matches points to a record; the record's key
//          is read from the log and compared, so the answer is exact. A tag match on an absent
//          key costs one log read, with probability about 8 / 2^tag_bits per lookup.
//   put:   looks the key up first (a second copy of a key would break eviction and growth),
//          appends the record, and points the slot at it (a new key is placed with the
//          filter's breadth-first eviction search, cuckoo/evict.hpp).
//   del:   appends a tombstone and frees the slot.
//   grow:  above 94% load the index is rebuilt 1.5 times larger, re-placing every entry from
//          its key, read from the log in offset order. 1.5 and not 2: right after a doubling
//          the index would hold 6 bytes / 0.47 = 12.8 bytes per key; after 1.5x, 9.5.
//   stash: an entry that finds no room (only possible far below 94% load with adversarial keys
//          or very short test tags) goes to a hash map keyed by the full 64-bit hash, so no
//          insert ever fails and growth never chases keys that no table size separates.
//
// Bulk operations work on chunks of keys with their hashes: probe the index for all of them,
// sort the tag matches by log offset, then read and compare the records in one forward pass over
// the log (releasing the pages behind it), and finally apply the changes in key order. The
// answers equal the scalar operations applied one by one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuckoo/evict.hpp"
#include "cuckoo/errors.hpp"  // ReadOnlyError, FormatError, StoreForkedError
#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/locate.hpp"
#include "cuckoo/memory.hpp"
#include "cuckoo/store_log.hpp"
#include "cuckoo/store_snapshot.hpp"  // StoreBucket and the .idx file

namespace cuckoo {

// Whether two byte strings of `len` bytes are equal (memcmp, which must not see a null pointer,
// not even for 0 bytes: an empty key may have no storage).
inline bool same_bytes(const unsigned char* a, const unsigned char* b, uint64_t len) noexcept {
    return len == 0 || std::memcmp(a, b, static_cast<size_t>(len)) == 0;
}

// LSD radix sort of unsigned values (uint32_t or uint64_t) by their low `key_bytes` bytes (a
// payload may ride above them).
template <class T>
void radix_sort(std::vector<T>& v, unsigned key_bytes = sizeof(T)) {
    std::vector<T> tmp(v.size());
    for (unsigned pass = 0; pass < key_bytes; ++pass) {
        const unsigned shift = 8 * pass;
        size_t count[257] = {0};
        for (T x : v) ++count[((x >> shift) & 0xFF) + 1];
        for (int i = 0; i < 256; ++i) count[i + 1] += count[i];
        for (T x : v) tmp[count[(x >> shift) & 0xFF]++] = x;
        v.swap(tmp);
    }
}

struct StoreStats {
    uint64_t live = 0;           // keys
    uint64_t log_bytes = 0;      // size of the log
    uint64_t live_bytes = 0;     // bytes of the records of live keys
    uint64_t index_bytes = 0;    // memory of the index (table and stash)
    uint64_t bucket_count = 0;
    uint64_t stash = 0;          // entries in the stash
    uint64_t lookups = 0;        // keys looked up (every get, put, delete, bulk key)
    uint64_t log_reads = 0;      // records read to verify a tag match
    uint64_t grows = 0;
    uint64_t grows_from_memory = 0;  // of them, without reading the log (Store::keep_index_bits)
    uint64_t recovered_bytes = 0;   // torn or corrupt tail cut off (writer) or ignored (reader) at open
    uint64_t recovered_at = 0;      // offset of the first bad record, if any
    uint64_t replayed_records = 0;  // records read from the log at open (0 with a full snapshot)
    uint64_t recovered_regions = 0;  // damaged or torn stretches of the log dropped at open
    bool snapshot_used = false;
    std::string snapshot_note;  // why a snapshot was not used
};

class Store {
public:
    struct Options {
        uint64_t seed = 0;
        HashAlgorithm algorithm = HashAlgorithm::xxh3;
        unsigned tag_bits = 16;  // fewer only to test verification (1..16)
        bool readonly = false;
        // Accept damage before the log's synced end (normally a FormatError): the snapshot is
        // ignored, the whole log is read, every bad record is skipped and a writer rewrites the
        // log with the intact records (docs/store.md).
        bool repair = false;
        unsigned max_kicks = 500;
        uint64_t log_id = 0;  // identity of a new log (random, from the caller)
    };
    static constexpr uint64_t kNone = ~uint64_t(0);
    static constexpr double kMaxLoad = 0.94;

    // Opens or creates the store at `path`.
    static std::unique_ptr<Store> open(const std::string& path, const Options& o) {
        std::unique_ptr<Store> s(new Store(o));
        s->log_.open_path(path, !o.readonly, s->fresh_header(o));
        s->after_open(s->log_.path());  // the real path: the snapshot sits beside the file itself
        return s;
    }
    // A store on an empty, read-write file descriptor (an anonymous temporary file).
    static std::unique_ptr<Store> on_fd(int fd, const Options& o) {
        std::unique_ptr<Store> s(new Store(o));
        s->log_.open_fd(fd, s->fresh_header(o));
        s->after_open("");
        return s;
    }

    // ---- properties ----
    uint64_t size() const noexcept { return count_ + stash_.size(); }
    const LogHeader& header() const noexcept { return log_.header(); }
    KeyHasher hasher() const noexcept { return KeyHasher{log_.header().seed, log_.header().algorithm}; }
    bool writable() const noexcept { return log_.writable(); }
    bool is_open() const noexcept { return log_.is_open(); }
    const std::string& path() const noexcept { return log_.path(); }
    uint64_t version() const noexcept { return version_; }  // changes with every write
    StoreStats stats() const {
        StoreStats s = stats_;
        s.lookups = lookups_.load(std::memory_order_relaxed);
        s.log_reads = log_reads_.load(std::memory_order_relaxed);
        s.live = size();
        s.log_bytes = log_.end();
        s.live_bytes = live_bytes_;
        s.bucket_count = buckets_.size();
        s.stash = stash_.size();
        s.index_bytes = index_bytes();
        return s;
    }
    uint64_t index_bytes() const noexcept {
        // An unordered_multimap node: two words of payload, a next pointer, a cached hash, and a
        // bucket pointer; an estimate, the table dominates.
        return buckets_.size() * sizeof(StoreBucket) + low_.size() * sizeof(uint32_t) + stash_.size() * 48;
    }

    // ---- scalar operations ----
    bool get(const void* key, uint64_t len, uint64_t h, std::string* value) {
        const Location at = find(h, static_cast<const unsigned char*>(key), len);
        if (at.offset == kNone) return false;
        if (value) value->assign(reinterpret_cast<const char*>(at.record.value), at.record.value_len);
        return true;
    }
    void put(const void* key, uint64_t len, uint64_t h, const void* value, uint64_t value_len) {
        atomically([&] {
            const auto* k = static_cast<const unsigned char*>(key);
            const Location at = find(h, k, len);
            if (at.offset == kNone) make_room(1);  // before the append: a failure leaves no record behind
            const uint64_t old_size = at.offset == kNone ? 0 : at.record.size;
            note_append(at.offset);
            const uint64_t off = log_.append(k, len, value, value_len, false);
            live_bytes_ += store_format::record_size(len, value_len) - old_size;
            if (at.offset == kNone) insert_entry(h, off);
            else set_offset(at, off);
            ++version_;
        });
    }
    bool erase(const void* key, uint64_t len, uint64_t h) {
        bool found = false;
        atomically([&] {
            const auto* k = static_cast<const unsigned char*>(key);
            const Location at = find(h, k, len);
            if (at.offset == kNone) return;
            note_append(at.offset);
            log_.append(k, len, nullptr, 0, true);
            live_bytes_ -= at.record.size;
            remove_entry(at);
            ++version_;
            found = true;
        });
        return found;
    }

    // ---- all or nothing ----
    // Runs f, a sequence of writes (one call of the API: a scalar write, or every chunk of a bulk
    // one), so that when it throws (an I/O error, the log's size limit, an interrupt, no memory)
    // the store is as before it: its records leave the log (buffer and file) and the index entries
    // they changed are put back. What the program sees after the error is then what a reopen
    // finds. Costs 8 bytes of journal per record appended, kept until f returns. A call whose
    // records began to reach the file (its appends passed the 1 MiB buffer) writes the rest
    // before returning, so that outside a batch the file always ends where a call ended.
    // Calls nest (apply_chunk runs atomically, inside the binding's call over all chunks): an
    // inner failure undoes its own part, the outer catch the rest.
    template <class F>
    void atomically(F&& f) {
        require_writable();
        const Mark m = mark();
        ++depth_;
        try {
            f();
            if (depth_ == 1 && !in_batch_ && log_.file_end() > m.log_end) log_.flush();
        } catch (...) {
            --depth_;
            undo_to(m);
            throw;
        }
        --depth_;
        settle();
    }

    // A batch: the writes from begin_batch() on are held in memory (none reaches the file, so a
    // crash leaves none of them) until commit_batch() writes them all, or rollback_batch() (or
    // close()) undoes them all, in memory and in the log. One batch at a time per store; sync(),
    // snapshot() and compact() wait for its end.
    void begin_batch() {
        require_writable();
        if (in_batch_) throw std::logic_error("a batch is already open on this store (batches do not nest)");
        batch_mark_ = mark();
        in_batch_ = true;
        log_.hold(true);
    }
    // Hands the batch's records to the OS (as flush: durable at the next sync()). When that write
    // fails the batch is rolled back, and the error thrown.
    void commit_batch() {
        require_batch();
        log_.hold(false);
        try {
            log_.flush();
        } catch (...) {
            rollback_batch();
            throw;
        }
        in_batch_ = false;
        settle();
    }
    void rollback_batch() {
        require_batch();
        in_batch_ = false;
        log_.hold(false);
        undo_to(batch_mark_);
        settle();
    }
    bool in_batch() const noexcept { return in_batch_; }

    // ---- bulk operations on a chunk of keys (spans and their hashes) ----
    // Where each key's live record is (kNone: absent), for contains and get.
    void locate_chunk(uint64_t n, const KeySpan* keys, const uint64_t* hashes, uint64_t* offsets) {
        std::fill(offsets, offsets + n, kNone);
        verify_candidates(n, keys, hashes, offsets);
    }
    // Reads record values at `offsets` (kNone skipped) in log order: value k is
    // arena[value_at[k], value_at[k] + value_len[k]).
    void read_values(uint64_t n, const uint64_t* offsets, std::vector<unsigned char>& arena, uint64_t* value_at,
                     uint64_t* value_len) {
        std::vector<uint64_t> order;
        order.reserve(n);
        for (uint64_t j = 0; j < n; ++j)
            if (offsets[j] != kNone) order.push_back(((offsets[j] / 8) << 32) | j);
        // j < 2^32 within a chunk; sort by the unit offset above it.
        radix_sort_u64_by_high(order);
        ForwardReader reader(log_);
        for (uint64_t e : order) {
            const uint64_t j = e & 0xFFFFFFFFull;
            const RecordView r = reader.read(offsets[j]);
            value_at[j] = arena.size();
            value_len[j] = r.value_len;
            arena.insert(arena.end(), r.value, r.value + r.value_len);
        }
    }

    enum class Op { AddUnique, Put, Discard };
    // Applies op to the keys in order; out[j]: AddUnique, whether key j was new; Discard, whether
    // it was present; Put, whether it was new. `values` (Put only, may be null: empty values).
    // All or nothing: throws (I/O errors, the log's size limit, lack of memory) with the store as
    // before; `done` says how many keys were applied (all, unless it threw). Inside an
    // atomically() call, the chunks of one call are all or nothing together.
    void apply_chunk(Op op, uint64_t n, const KeySpan* keys, const uint64_t* hashes, const KeySpan* values,
                     bool* out, uint64_t& done) {
        done = 0;
        atomically([&] { apply_chunk_body(op, n, keys, hashes, values, out, done); });
    }

private:
    void apply_chunk_body(Op op, uint64_t n, const KeySpan* keys, const uint64_t* hashes, const KeySpan* values,
                          bool* out, uint64_t& done) {
        // Scratch kept between chunks (writers hold the store alone): fresh vectors would cost
        // page faults and zeroing at every chunk.
        std::vector<uint64_t>& current = scratch_current_;  // before the chunk: each key's live record
        std::vector<uint64_t>& current_size = scratch_current_size_;  // and its size in the log
        current.assign(n, kNone);
        current_size.assign(n, 0);
        verify_candidates(n, keys, hashes, current.data(), current_size.data());
        // First occurrence of each key in the chunk: its later copies share its state. Found with
        // an open-addressing table of chunk positions keyed by hash (keys compared in memory).
        std::vector<uint32_t>& first = scratch_first_;
        first.resize(n);
        {
            uint64_t cap = 16;
            while (cap < 2 * n) cap <<= 1;
            std::vector<uint32_t>& slots = scratch_slots_;
            slots.assign(cap, UINT32_MAX);
            for (uint64_t j = 0; j < n; ++j) {
                // AddUnique: a key already in the store is never new, whatever its copies do.
                if (op == Op::AddUnique && current[j] != kNone) {
                    first[j] = static_cast<uint32_t>(j);
                    continue;
                }
                uint64_t s = mix64(hashes[j]) & (cap - 1);
                while (true) {
                    const uint32_t e = slots[s];
                    if (e == UINT32_MAX) {
                        slots[s] = static_cast<uint32_t>(j);
                        first[j] = static_cast<uint32_t>(j);
                        break;
                    }
                    if (hashes[e] == hashes[j] && keys[e].len == keys[j].len &&
                        same_bytes(keys[e].data, keys[j].data, keys[j].len)) {
                        first[j] = e;
                        break;
                    }
                    s = (s + 1) & (cap - 1);
                }
            }
        }
        // Room for the chunk's new keys and the log's mapping for its records, before anything
        // changes: an allocation that fails (index growth, the mapping) then raises with the store
        // as it was.
        {
            uint64_t new_keys = 0, bytes = 0;
            for (uint64_t j = 0; j < n; ++j) {
                if (op == Op::Discard) {
                    if (current[j] != kNone) bytes += store_format::record_size(keys[j].len, 0);
                    continue;
                }
                if (op == Op::Put) bytes += store_format::record_size(keys[j].len, values ? values[j].len : 0);
                if (first[j] == j && current[j] == kNone) {
                    ++new_keys;
                    if (op == Op::AddUnique) bytes += store_format::record_size(keys[j].len, 0);
                }
            }
            make_room(new_keys);
            log_.reserve_mapping(log_.end() + bytes);
            log_.reserve_buffer(bytes);
        }
        constexpr uint64_t kAhead = 16;  // keys whose buckets are prefetched before they are placed
        for (uint64_t j = 0; j < n; ++j) {
            if (j + kAhead < n) {
                const KeyHash a = loc_.locate(hashes[j + kAhead]);
                __builtin_prefetch(&buckets_[a.i1], 1, 3);
                __builtin_prefetch(&buckets_[a.i2], 1, 3);
            }
            const uint64_t h = hashes[j];
            uint64_t& cur = current[first[j]];
            uint64_t& cur_size = current_size[first[j]];
            const KeySpan k = keys[j];
            switch (op) {
                case Op::AddUnique:
                    out[j] = cur == kNone;
                    if (cur == kNone) {
                        note_append(kNone);
                        cur = log_.append(k.data, k.len, nullptr, 0, false);
                        cur_size = store_format::record_size(k.len, 0);
                        live_bytes_ += cur_size;
                        insert_entry(h, cur);
                    }
                    break;
                case Op::Put: {
                    const KeySpan v = values ? values[j] : KeySpan{nullptr, 0};
                    out[j] = cur == kNone;
                    const uint64_t old_size = cur == kNone ? 0 : cur_size;
                    note_append(cur);
                    const uint64_t off = log_.append(k.data, k.len, v.data, v.len, false);
                    cur_size = store_format::record_size(k.len, v.len);
                    live_bytes_ += cur_size - old_size;
                    if (cur == kNone) insert_entry(h, off);
                    else set_offset(find_offset(h, cur), off);
                    cur = off;
                    break;
                }
                case Op::Discard:
                    out[j] = cur != kNone;
                    if (cur != kNone) {
                        note_append(cur);
                        log_.append(k.data, k.len, nullptr, 0, true);
                        live_bytes_ -= cur_size;
                        remove_entry(find_offset(h, cur));
                        cur = kNone;
                    }
                    break;
            }
            done = j + 1;
        }
        ++version_;
    }

public:
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
    // Writes what is buffered (no sync, no snapshot: close() does those), after undoing an open
    // batch.
    ~Store() {
        try {
            if (forked()) {  // a copy inherited through fork(): its buffer and batch are the parent's
                log_.abandon();
                return;
            }
            if (in_batch_) rollback_batch();
            if (log_.is_open() && log_.writable()) log_.flush();
        } catch (...) {
        }
    }

    // ---- whole-store operations ----
    // Makes room for `n` keys in all, so that adding up to that many grows the index at most
    // once, now (a bulk load that knows its size skips the growths on the way). The index is
    // sized for n at its growth load: what growing would have reached.
    void reserve(uint64_t n) {
        require_writable();
        const double buckets = std::ceil(static_cast<double>(n) / (4.0 * kMaxLoad));
        if (buckets > static_cast<double>(kMaxBucketCountStore))
            throw std::length_error("a store holds at most 2^34 keys");
        const uint64_t want = (static_cast<uint64_t>(buckets) + kBlockBuckets - 1) / kBlockBuckets * kBlockBuckets;
        if (want <= buckets_.size()) return;
        if (size() == 0) resize_index(want);  // both keep the index as it was if they fail
        else rebuild(want);
        ++version_;
    }

    // Keeps each entry's index bits in memory from now on (4 bytes a slot, ~4.3 a key at the
    // growth load, on top of the index's ~6.4), so that a growth re-places the entries without
    // reading their keys back from the log: for a store whose index may grow often and whose log
    // is large next to it (dedup's anonymous store). Entries already placed get their bits at the
    // next growth, which reads the log once.
    void keep_index_bits() {
        if (keep_low_) return;
        std::vector<uint32_t> fresh = new_low(buckets_.size());
        low_.swap(fresh);
        keep_low_ = true;
        low_valid_ = count_ == 0;
    }

    // Byte offsets of every live record, ascending (= order of last write).
    std::vector<uint64_t> live_offsets() const {
        std::vector<uint64_t> units;
        units.reserve(size());
        for (const StoreBucket& b : buckets_)
            for (unsigned s = 0; s < 4; ++s)
                if (b.tag[s]) units.push_back(b.unit[s]);
        for (const auto& e : stash_) units.push_back(e.second / 8);
        radix_sort(units, 4);
        for (uint64_t& u : units) u *= 8;
        return units;
    }
    RecordView read_record(uint64_t offset) { return log_.read(offset); }
    void release_log_pages() noexcept { log_.release_all(); }

    void sync() {
        require_writable();
        require_no_batch("sync()");
        log_.sync();
    }

    // Rewrites the log with only the live records (in their order), atomically: the new log is
    // written beside the old one, made durable, then renamed over it.
    void compact(uint64_t new_log_id) {
        require_writable();
        require_no_batch("compact()");
        if (log_.anonymous()) throw std::logic_error("compact() needs a store with a path");
        log_.flush();
        // (unit offset << 32 | position) sorted by offset: position is the slot (bucket*4+slot)
        // or, above the table's slots, the stash entry.
        std::vector<std::pair<uint64_t, uint64_t>> entries;  // (offset, where)
        entries.reserve(size());
        for (uint64_t i = 0; i < buckets_.size(); ++i)
            for (unsigned s = 0; s < 4; ++s)
                if (buckets_[i].tag[s]) entries.push_back({uint64_t(buckets_[i].unit[s]) * 8, i * 4 + s});
        std::vector<std::unordered_multimap<uint64_t, uint64_t>::iterator> stash_at;
        for (auto it = stash_.begin(); it != stash_.end(); ++it) {
            entries.push_back({it->second, buckets_.size() * 4 + stash_at.size()});
            stash_at.push_back(it);
        }
        std::sort(entries.begin(), entries.end());
        const std::string tmp = log_.path() + ".compact";
        LogHeader h = log_.header();
        h.log_id = new_log_id;
        std::vector<uint64_t> new_offsets(entries.size());
        LogFile out;  // locked from its creation: it becomes the log (replace_with)
        try {
            ::unlink(tmp.c_str());
            out.open_path(tmp, true, h);
            {
                ForwardReader reader(log_);
                for (size_t e = 0; e < entries.size(); ++e) {
                    const RecordView r = reader.read(entries[e].first);
                    new_offsets[e] = out.append(r.key, r.key_len, r.value, r.value_len, false);
                }
            }
            out.sync();
            log_.replace_with(out);  // nothing fails after its rename
        } catch (...) {
            out.abandon();
            ::unlink(tmp.c_str());  // the old log is untouched: nothing else to undo
            throw;
        }
        for (size_t e = 0; e < entries.size(); ++e) {
            const uint64_t where = entries[e].second;
            if (where < buckets_.size() * 4) buckets_[where / 4].unit[where % 4] = static_cast<uint32_t>(new_offsets[e] / 8);
            else stash_at[where - buckets_.size() * 4]->second = new_offsets[e];
        }
        ++version_;
        write_snapshot();
    }

    // Undoes an open batch, flushes, syncs and writes the index snapshot (writers), then
    // closes. The files and the lock are released even when a write fails; the first error is
    // thrown after. Records not yet written then are lost as in a crash (docs/store.md).
    // A copy inherited through fork() closes without writing (see require_owner).
    void close() {
        if (!log_.is_open()) return;
        if (forked()) {
            log_.abandon();
            snapshot_path_.clear();
            return;
        }
        std::exception_ptr error;
        try {
            if (in_batch_) rollback_batch();
            if (log_.writable() && !log_.anonymous()) {
                if (log_.damaged_at() == LogFile::kNoDamage) {
                    write_snapshot();  // syncs the log first
                } else {
                    // A read met damage that the snapshot hides (it covers the damaged bytes):
                    // without it the next open reads the whole log and refuses it until repaired,
                    // instead of opening as if it were sound.
                    log_.sync();
                    ::unlink(snapshot_path_.c_str());
                    log_.sync_directory();
                }
            }
        } catch (...) {
            error = std::current_exception();
        }
        try {
            log_.close();
        } catch (...) {
            if (!error) error = std::current_exception();
        }
        snapshot_path_.clear();
        if (error) std::rethrow_exception(error);
    }

    // Writes the index snapshot (path + ".idx", cuckoo/store_snapshot.hpp) of the synced log.
    void write_snapshot() {
        require_writable();
        require_no_batch("snapshot()");
        if (snapshot_path_.empty()) return;
        log_.sync();
        SnapshotHeader h;
        h.tag_bits = log_.header().tag_bits;
        h.log_id = log_.header().log_id;
        h.log_end = log_.end();
        h.bucket_count = buckets_.size();
        h.entries = count_;
        h.stash = stash_.size();
        h.live_bytes = live_bytes_;
        h.tail_check = tail_check(log_.end());
        store_snapshot::write_file(snapshot_path_, store_snapshot::encode(h, buckets_, stash_));
        log_.sync_directory();
    }

private:
    static constexpr uint64_t kReleaseWindow = uint64_t(4) << 20;

    explicit Store(const Options& o)
        : max_kicks_(o.max_kicks), repair_(o.repair), repair_log_id_(o.log_id), fork_generation_(fork_generation()) {
        nodes_.resize(size_t(max_kicks_) + 2);  // the eviction search's scratch: no allocation in place()
    }

    LogHeader fresh_header(const Options& o) const {
        if (o.tag_bits < 1 || o.tag_bits > 16) throw std::invalid_argument("tag_bits must be between 1 and 16");
        LogHeader h;
        h.algorithm = o.algorithm;
        h.seed = o.seed;
        h.tag_bits = o.tag_bits;
        h.log_id = o.log_id;
        return h;
    }

    struct Location {
        uint64_t offset = kNone;
        uint64_t bucket = 0;
        int slot = -1;  // -1: in the stash (bucket unused)
        uint64_t hash = 0;
        RecordView record;  // the record at offset, as find() read it (valid until the next append)
    };

    // Reads records in ascending offset order, releasing the mapping's pages behind it.
    class ForwardReader {
    public:
        explicit ForwardReader(LogFile& log) : log_(log) {}
        ~ForwardReader() { log_.release(window_, log_.file_end()); }
        RecordView read(uint64_t offset) {
            if (offset >= window_ + kReleaseWindow) {
                const uint64_t next = offset / kReleaseWindow * kReleaseWindow;
                log_.release(window_, next);
                window_ = next;
            }
            return log_.read(offset);
        }

    private:
        LogFile& log_;
        uint64_t window_ = 0;
    };

    static void radix_sort_u64_by_high(std::vector<uint64_t>& v) {
        // Sort by the high 32 bits: swap halves, sort 4 bytes, swap back.
        for (uint64_t& x : v) x = (x >> 32) | (x << 32);
        radix_sort(v, 4);
        for (uint64_t& x : v) x = (x >> 32) | (x << 32);
    }

    void require_writable() const {
        require_owner();
        if (!log_.writable()) throw ReadOnlyError("the store is open read-only (readonly=True)");
        if (log_.broken())
            throw std::system_error(EIO, std::generic_category(),
                                    "the store's log could not be cut back after a failed write: close the store");
        if (log_.damaged_at() != LogFile::kNoDamage)
            throw FormatError("the store's log is corrupt at offset " + std::to_string(log_.damaged_at()) +
                              ": the store refuses writes; close it and open it with repair=True to rebuild it "
                              "from its intact records");
    }
    void require_batch() const {
        if (!in_batch_) throw std::logic_error("no batch is open on this store");
    }
    void require_no_batch(const char* what) const {
        if (in_batch_)
            throw std::logic_error(std::string(what) + " inside a batch: commit or roll the batch back first");
    }

    // Where a call or a batch began: what undo_to() restores.
    struct Mark {
        uint64_t log_end = 0;
        size_t journal = 0;
        uint64_t live_bytes = 0;
    };
    // Per record appended since the mark: its unit offset and the unit of the key's live record
    // before it (0: none; unit 0 is the header, never a record).
    struct JournalEntry {
        uint32_t unit;
        uint32_t prev;
    };
    Mark mark() const noexcept { return Mark{log_.end(), journal_.size(), live_bytes_}; }
    // Journals the record about to be appended (before the append: a failure inside it, once
    // the record is buffered, is undone like the rest).
    void note_append(uint64_t prev_offset) {
        journal_.push_back(JournalEntry{static_cast<uint32_t>(log_.end() / 8),
                                        prev_offset == kNone ? 0u : static_cast<uint32_t>(prev_offset / 8)});
    }
    void settle() noexcept {
        if (in_batch_ || depth_ > 0) return;  // the batch or the outer call may still be undone
        journal_.clear();
        if (journal_.capacity() > (size_t(1) << 16)) std::vector<JournalEntry>().swap(journal_);
    }
    // Undoes the records appended since m, newest first: a record's key gets back the live
    // record it had before (or none), a tombstone's key its deleted record. Growth is not undone
    // (a larger index holds the same keys); eviction moves need no undoing.
    void undo_to(const Mark& m) {
        const KeyHasher hs = hasher();
        for (size_t i = journal_.size(); i-- > m.journal;) {
            const uint64_t off = uint64_t(journal_[i].unit) * 8;
            const uint64_t prev = journal_[i].prev ? uint64_t(journal_[i].prev) * 8 : kNone;
            if (off >= log_.end()) continue;  // the append itself failed before buffering it
            const RecordView r = log_.read(off);
            const uint64_t h = hs.hash_key(r.key, r.key_len);
            if (r.tombstone) {
                if (prev != kNone && !entry_at(h, prev).found) place(h, prev);
            } else {
                const EntryAt at = entry_at(h, off);
                if (!at.found) continue;  // placing the entry failed: nothing to take back
                if (prev == kNone) remove_entry(at.loc);
                else set_offset(at.loc, prev);
            }
        }
        journal_.resize(m.journal);
        live_bytes_ = m.live_bytes;
        ++version_;
        log_.rollback(m.log_end);
    }

    // Whether this object is used in a child of the process that opened it (fork()).
    bool forked() const noexcept { return fork_generation() != fork_generation_; }
    // Writes through a store inherited across fork() are refused: the child's copy of the append
    // buffer and of the log's end would overwrite the parent's records (and the parent's the
    // child's). Reads stay allowed (they see the log as it was at the fork, and later appends).
    void require_owner() const {
        if (forked())
            throw StoreForkedError("this store was opened by the parent process before fork(): a child must not "
                                   "write through it (the two processes would overwrite each other's records). "
                                   "Open the store in the child instead (after the parent closed it); the child may "
                                   "close its inherited copy, which writes nothing");
    }

    Locator locator() const noexcept { return loc_; }
    // An empty index of `bucket_count` buckets; the old one stays if the allocation fails.
    void resize_index(uint64_t bucket_count) {
        std::vector<StoreBucket> fresh = new_table(bucket_count);
        std::vector<uint32_t> fresh_low = keep_low_ ? new_low(bucket_count) : std::vector<uint32_t>();
        buckets_.swap(fresh);
        low_.swap(fresh_low);
        low_valid_ = keep_low_;  // (empty)
        loc_ = Locator{bucket_count, bucket_count >> kBlockShift, log_.header().tag_bits};
        count_ = 0;
    }
    static std::vector<uint32_t> new_low(uint64_t bucket_count) {
        fault::before_allocation();
        return std::vector<uint32_t>(bucket_count * 4, 0);
    }
    static std::vector<StoreBucket> new_table(uint64_t bucket_count) {
        fault::before_allocation();
        return std::vector<StoreBucket>(bucket_count, StoreBucket{});
    }

    // Makes sure that `new_keys` more keys can be placed without any allocation: grows the
    // index now if they would pass the growth load, and keeps a stash node and stash buckets
    // ready (the rare entry that finds no room). Called before a write appends its records, so
    // that a failure here changes nothing.
    void make_room(uint64_t new_keys) {
        if (new_keys == 0) return;
        const double limit = kMaxLoad * 4.0 * static_cast<double>(buckets_.size());
        if (static_cast<double>(count_ + new_keys) > limit) {
            const double need = std::ceil(static_cast<double>(count_ + new_keys) / (4.0 * kMaxLoad));
            const uint64_t grown = buckets_.size() * 3 / 2;
            const uint64_t target = std::max<uint64_t>(grown, static_cast<uint64_t>(std::min(need, 1e19)));
            rebuild((target + kBlockBuckets - 1) / kBlockBuckets * kBlockBuckets);
        }
        if (spare_nodes_.size() < new_keys && spare_nodes_.size() < kSpareNodes) {
            fault::before_allocation();
            while (spare_nodes_.size() < std::min<uint64_t>(new_keys, kSpareNodes)) spare_nodes_.emplace(0, 0);
        }
        stash_.reserve(stash_.size() + std::min<uint64_t>(new_keys, kSpareNodes));
    }

    bool key_is(uint64_t offset, const unsigned char* key, uint64_t len, RecordView& r) {
        log_reads_.fetch_add(1, std::memory_order_relaxed);
        r = log_.read(offset);
        return !r.tombstone && r.key_len == len && same_bytes(r.key, key, len);
    }

    // Bit s set where slot s holds `tag`: a SWAR compare of the four 16-bit tags as one word
    // (measured ~10-20% faster over a whole dedup than four separate compares). Lanes equal to
    // `tag` give a zero lane in x; the exact zero-lane test ((x & 0x7FFF) + 0x7FFF) | x has the
    // high bit clear only for zero. Slot s is lane s on little-endian hosts and lane 3 - s on
    // big-endian ones (the word is the four tags as they lie in memory).
    static unsigned tag_matches(const StoreBucket& b, uint32_t tag) noexcept {
        uint64_t w;
        std::memcpy(&w, b.tag, 8);
        const uint64_t x = w ^ (tag * 0x0001000100010001ull);
        const uint64_t nz = (((x & 0x7FFF7FFF7FFF7FFFull) + 0x7FFF7FFF7FFF7FFFull) | x) & 0x8000800080008000ull;
        const uint64_t z = ~nz & 0x8000800080008000ull;
#if CUCKOO_BIG_ENDIAN
        return static_cast<unsigned>(((z >> 63) & 1) | ((z >> 46) & 2) | ((z >> 29) & 4) | ((z >> 12) & 8));
#else
        return static_cast<unsigned>(((z >> 15) & 1) | ((z >> 30) & 2) | ((z >> 45) & 4) | ((z >> 60) & 8));
#endif
    }

    Location find(uint64_t h, const unsigned char* key, uint64_t len) {
        lookups_.fetch_add(1, std::memory_order_relaxed);
        const KeyHash k = loc_.locate(h);
        for (const uint64_t i : {k.i1, k.i2}) {
            unsigned m = tag_matches(buckets_[i], k.fp);
            while (m) {
                const int s = __builtin_ctz(m);
                m &= m - 1;
                const uint64_t off = uint64_t(buckets_[i].unit[s]) * 8;
                RecordView r;
                if (key_is(off, key, len, r)) return Location{off, i, s, h, r};
            }
        }
        if (!stash_.empty()) {
            auto range = stash_.equal_range(h);
            for (auto it = range.first; it != range.second; ++it) {
                RecordView r;
                if (key_is(it->second, key, len, r)) return Location{it->second, 0, -1, h, r};
            }
        }
        return Location{};
    }

    // The entry of the key with hash h pointing at `offset`, if there is one.
    struct EntryAt {
        Location loc;
        bool found;
    };
    EntryAt entry_at(uint64_t h, uint64_t offset) const {
        const Location at = find_offset(h, offset);
        if (at.slot >= 0) return {at, true};
        auto range = stash_.equal_range(h);
        for (auto it = range.first; it != range.second; ++it)
            if (it->second == offset) return {at, true};
        return {at, false};
    }

    // The entry of the key with hash h whose record is at `offset` (known to be live).
    Location find_offset(uint64_t h, uint64_t offset) const {
        const KeyHash k = loc_.locate(h);
        const uint32_t unit = static_cast<uint32_t>(offset / 8);
        for (const uint64_t i : {k.i1, k.i2})
            for (int s = 0; s < 4; ++s)
                if (buckets_[i].tag[s] == k.fp && buckets_[i].unit[s] == unit) return Location{offset, i, s, h, RecordView{}};
        return Location{offset, 0, -1, h, RecordView{}};
    }

    void set_offset(const Location& at, uint64_t offset) {
        if (at.slot >= 0) {
            buckets_[at.bucket].unit[at.slot] = static_cast<uint32_t>(offset / 8);
            return;
        }
        auto range = stash_.equal_range(at.hash);
        for (auto it = range.first; it != range.second; ++it)
            if (it->second == at.offset) {
                it->second = offset;
                return;
            }
    }

    void remove_entry(const Location& at) {
        if (at.slot >= 0) {
            buckets_[at.bucket].tag[at.slot] = 0;
            --count_;
            return;
        }
        auto range = stash_.equal_range(at.hash);
        for (auto it = range.first; it != range.second; ++it)
            if (it->second == at.offset) {
                stash_.erase(it);
                return;
            }
    }

    // The eviction search's view of the index (cuckoo/evict.hpp).
    struct EvictTable {
        std::vector<StoreBucket>& b;
        std::vector<uint32_t>& low;  // moves with its entry (see low_)
        unsigned slots_per_bucket() const noexcept { return 4; }
        uint32_t tag(uint64_t bucket, unsigned slot) const noexcept { return b[bucket].tag[slot]; }
        int empty_slot(uint64_t bucket) const noexcept {
            for (int s = 0; s < 4; ++s)
                if (b[bucket].tag[s] == 0) return s;
            return -1;
        }
        void move(uint64_t from, unsigned from_slot, uint64_t to, unsigned to_slot) noexcept {
            b[to].tag[to_slot] = b[from].tag[from_slot];
            b[to].unit[to_slot] = b[from].unit[from_slot];
            if (!low.empty()) low[to * 4 + to_slot] = low[from * 4 + from_slot];
        }
        void prefetch(uint64_t bucket) const noexcept { __builtin_prefetch(&b[bucket], 1, 3); }
    };

    // Places a new entry (the key is known to be absent). Grows the index first when full (not
    // after make_room, which grew it already).
    void insert_entry(uint64_t h, uint64_t offset) {
        if (static_cast<double>(count_ + 1) > kMaxLoad * 4.0 * static_cast<double>(buckets_.size())) {
            grow();  // (only while opening: a write's make_room() grew the index before its append)
        } else if (stash_.size() > 64 + size() / 32 && count_ * 2 > buckets_.size() * 4) {
            // Optional (place() works without it) and possibly after a write's append: a growth
            // that fails for memory leaves the index as it was, and the entry goes in anyway.
            try {
                grow();
            } catch (const std::bad_alloc&) {
            }
        }
        place(h, offset);
    }

    void place(uint64_t h, uint64_t offset) { place_located(loc_.locate(h), static_cast<uint32_t>(h), offset, &h); }

    // Places the entry of a key located at k (its hash's low 32 bits `low`; its full hash *h, or
    // null when only `low` and the tag are known: a growth from low_). Without a slot it goes to
    // the stash, keyed by its full hash (read back from the log when not given).
    void place_located(const KeyHash& k, uint32_t low, uint64_t offset, const uint64_t* h) {
        const uint32_t unit = static_cast<uint32_t>(offset / 8);
        EvictTable t{buckets_, low_};
        unsigned free1 = 0, free2 = 0;
        for (int s = 0; s < 4; ++s) {
            free1 += buckets_[k.i1].tag[s] == 0;
            free2 += buckets_[k.i2].tag[s] == 0;
        }
        uint64_t bucket;
        int slot;
        if (free1 | free2) {  // the emptier bucket, as in the filter
            bucket = free1 >= free2 ? k.i1 : k.i2;
            slot = t.empty_slot(bucket);
        } else {
            const EvictResult r = evict_search(t, loc_, k.i1, k.i2, max_kicks_, nodes_);
            if (!r.found) {
                if (h) {
                    stash_insert(*h, offset);
                } else {
                    const RecordView rec = log_.read(offset);
                    stash_insert(hasher().hash_key(rec.key, rec.key_len), offset);
                }
                return;
            }
            bucket = r.bucket;
            slot = static_cast<int>(r.slot);
        }
        buckets_[bucket].tag[slot] = static_cast<uint16_t>(k.fp);
        buckets_[bucket].unit[slot] = unit;
        if (!low_.empty()) low_[bucket * 4 + static_cast<uint64_t>(slot)] = low;
        ++count_;
    }

    // Rebuilds the index 1.5 times larger (a multiple of 8 buckets), re-placing each entry from
    // its key, read from the log in offset order. The live offsets are listed in order through a
    // bitmap of the log's 8-byte units (log size / 64 bytes) or, when that is larger, a sorted
    // array of 32-bit units (4 bytes a key, plus as much to sort): the peak memory of a growth is
    // the old and the new table plus the smaller of the two.
    void grow() { rebuild((buckets_.size() * 3 / 2 + kBlockBuckets - 1) / kBlockBuckets * kBlockBuckets); }

    // All or nothing: the new index is built beside the old one, which comes back if anything
    // fails (an allocation, a record that no longer reads). So the peak memory of a growth is
    // the old and the new table plus the smaller of the two lists below.
    void rebuild(uint64_t target) {
        if (target > kMaxBucketCountStore) target = kMaxBucketCountStore;
        if (target <= buckets_.size()) return;  // at the largest index: entries beyond it go to the stash
        if (keep_low_ && low_valid_) return rebuild_from_memory(target);
        const uint64_t units_in_log = log_.end() / 8;
        const bool use_bitmap = units_in_log / 64 + 1 <= count_ * 2;
        std::vector<uint64_t> live;
        std::vector<uint32_t> units;
        fault::before_allocation();
        if (use_bitmap) {
            live.assign(units_in_log / 64 + 1, 0);
            for (const StoreBucket& b : buckets_)
                for (unsigned s = 0; s < 4; ++s)
                    if (b.tag[s]) live[b.unit[s] / 64] |= uint64_t(1) << (b.unit[s] % 64);
        } else {
            units.reserve(count_);
            for (const StoreBucket& b : buckets_)
                for (unsigned s = 0; s < 4; ++s)
                    if (b.tag[s]) units.push_back(b.unit[s]);
            radix_sort(units);
        }
        rebuild_with(target, [&](const std::vector<StoreBucket>&, const std::vector<uint32_t>&,
                                 const std::unordered_multimap<uint64_t, uint64_t>& stash) {
            rehash_all(use_bitmap, live, units, stash);
        });
    }

    // The growth when low_ holds every entry's index bits: each entry is re-placed from its tag
    // and those bits (in bucket order, a block of entries' new buckets prefetched at a time),
    // without reading its key back from the log; stash entries from their full hash.
    void rebuild_from_memory(uint64_t target) {
        rebuild_with(target, [&](const std::vector<StoreBucket>& old_buckets, const std::vector<uint32_t>& old_low,
                                 const std::unordered_multimap<uint64_t, uint64_t>& stash) {
            KeyHash k[kBatchBlock];
            uint32_t low[kBatchBlock], unit[kBatchBlock];
            unsigned n = 0;
            auto flush = [&] {
                for (unsigned j = 0; j < n; ++j) place_located(k[j], low[j], uint64_t(unit[j]) * 8, nullptr);
                n = 0;
            };
            for (uint64_t i = 0; i < old_buckets.size(); ++i) {
                for (unsigned s = 0; s < 4; ++s) {
                    const uint32_t tag = old_buckets[i].tag[s];
                    if (!tag) continue;
                    low[n] = old_low[i * 4 + s];
                    unit[n] = old_buckets[i].unit[s];
                    k[n].fp = tag;
                    k[n].i1 = loc_.index_of(low[n]);
                    k[n].i2 = loc_.alt_index(k[n].i1, tag);
                    __builtin_prefetch(&buckets_[k[n].i1], 1, 3);
                    __builtin_prefetch(&buckets_[k[n].i2], 1, 3);
                    if (++n == kBatchBlock) flush();
                }
            }
            flush();
            for (const auto& e : stash) place(e.first, e.second);
            ++stats_.grows_from_memory;
        });
    }

    // All or nothing: an index of `target` buckets is made beside the old one, and
    // fill(old buckets, old index bits, old stash) places every entry into it; the old index comes
    // back if anything fails (an allocation, a record that no longer reads). So the peak memory of
    // a growth is the old and the new table plus what fill needs.
    template <class Fill>
    void rebuild_with(uint64_t target, Fill&& fill) {
        std::vector<StoreBucket> old_buckets = new_table(target);
        std::vector<uint32_t> old_low = keep_low_ ? new_low(target) : std::vector<uint32_t>();
        old_buckets.swap(buckets_);
        old_low.swap(low_);
        std::unordered_multimap<uint64_t, uint64_t> stash;
        stash.swap(stash_);
        const Locator old_loc = loc_;
        const uint64_t old_count = count_;
        const bool old_valid = low_valid_;
        loc_ = Locator{target, target >> kBlockShift, log_.header().tag_bits};
        count_ = 0;
        low_valid_ = keep_low_;  // every entry is placed with its bits
        try {
            fill(old_buckets, old_low, stash);
        } catch (...) {
            buckets_.swap(old_buckets);
            low_.swap(old_low);
            stash_.swap(stash);
            loc_ = old_loc;
            count_ = old_count;
            low_valid_ = old_valid;
            throw;
        }
        ++stats_.grows;
    }

    void rehash_all(bool use_bitmap, const std::vector<uint64_t>& live, const std::vector<uint32_t>& units,
                    const std::unordered_multimap<uint64_t, uint64_t>& stash) {
        if (use_bitmap) {
            size_t word = 0;
            uint64_t bits = live[0];
            rehash_from_log([&](uint32_t* out, unsigned max) {
                unsigned n = 0;
                while (n < max) {
                    while (bits == 0) {
                        if (word + 1 >= live.size()) return n;  // (stays at the end on later calls)
                        bits = live[++word];
                    }
                    out[n++] = static_cast<uint32_t>(word * 64 + static_cast<unsigned>(__builtin_ctzll(bits)));
                    bits &= bits - 1;
                }
                return n;
            });
        } else {
            size_t at = 0;
            rehash_from_log([&](uint32_t* out, unsigned max) {
                const unsigned n = static_cast<unsigned>(std::min<size_t>(max, units.size() - at));
                if (n) std::memcpy(out, units.data() + at, n * sizeof(uint32_t));
                at += n;
                return n;
            });
        }
        for (const auto& e : stash) place(e.first, e.second);
    }

    // Adds a stash entry, with a node kept ready by make_room() when there is one (so that a
    // write that appended its record cannot fail here).
    void stash_insert(uint64_t h, uint64_t offset) {
        if (spare_nodes_.empty()) {
            fault::before_allocation();
            stash_.emplace(h, offset);
            return;
        }
        auto node = spare_nodes_.extract(spare_nodes_.begin());
        node.key() = h;
        node.mapped() = offset;
        stash_.insert(std::move(node));
    }

    // Places the records whose units next_units(out, max) lists in ascending order into the
    // (empty) index, hashing their keys; blocks of keys are hashed and their buckets prefetched
    // before placing.
    template <class NextUnits>
    void rehash_from_log(NextUnits&& next_units) {
        const KeyHasher hs = hasher();
        ForwardReader reader(log_);
        uint64_t hashes[kBatchBlock];
        uint32_t units[kBatchBlock];
        while (true) {
            const unsigned len = next_units(units, kBatchBlock);
            if (len == 0) break;
            for (unsigned j = 0; j < len; ++j) {
                const RecordView r = reader.read(uint64_t(units[j]) * 8);
                hashes[j] = hs.hash_key(r.key, r.key_len);
                const KeyHash k = loc_.locate(hashes[j]);
                __builtin_prefetch(&buckets_[k.i1], 1, 3);
                __builtin_prefetch(&buckets_[k.i2], 1, 3);
            }
            for (unsigned j = 0; j < len; ++j) place(hashes[j], uint64_t(units[j]) * 8);
        }
    }

    // For each key j, offsets[j] = its live record (left as is when none) and sizes[j] its size: probe every key's
    // buckets (in blocks, prefetched), sort the tag matches by log offset, then verify them in
    // one forward pass over the log.
    void verify_candidates(uint64_t n, const KeySpan* keys, const uint64_t* hashes, uint64_t* offsets,
                           uint64_t* sizes = nullptr) {
        std::vector<uint64_t> cand;  // (unit offset << 32) | j
        cand.reserve(n / 2 + 16);
        KeyHash located[kBatchBlock];
        lookups_.fetch_add(n, std::memory_order_relaxed);
        for (uint64_t start = 0; start < n; start += kBatchBlock) {
            const unsigned len = static_cast<unsigned>(std::min<uint64_t>(kBatchBlock, n - start));
            for (unsigned x = 0; x < len; ++x) {
                located[x] = loc_.locate(hashes[start + x]);
                __builtin_prefetch(&buckets_[located[x].i1], 0, 3);
                __builtin_prefetch(&buckets_[located[x].i2], 0, 3);
            }
            for (unsigned x = 0; x < len; ++x) {
                const uint64_t j = start + x;
                for (const uint64_t i : {located[x].i1, located[x].i2}) {
                    unsigned m = tag_matches(buckets_[i], located[x].fp);
                    while (m) {
                        const int s = __builtin_ctz(m);
                        m &= m - 1;
                        cand.push_back((uint64_t(buckets_[i].unit[s]) << 32) | j);
                    }
                }
                if (!stash_.empty()) {
                    auto range = stash_.equal_range(hashes[j]);
                    for (auto it = range.first; it != range.second; ++it) cand.push_back(((it->second / 8) << 32) | j);
                }
            }
        }
        radix_sort_u64_by_high(cand);
        ForwardReader reader(log_);
        log_reads_.fetch_add(cand.size(), std::memory_order_relaxed);
        for (const uint64_t c : cand) {
            const uint64_t j = c & 0xFFFFFFFFull, off = (c >> 32) * 8;
            const RecordView r = reader.read(off);
            if (!r.tombstone && r.key_len == keys[j].len && same_bytes(r.key, keys[j].data, keys[j].len)) {
                offsets[j] = off;
                if (sizes) sizes[j] = r.size;
            }
        }
    }

    // Builds the index at open: from the snapshot when it matches the log, then from the log
    // records after it; cuts (writer) or ignores (reader) a torn or corrupt tail.
    void after_open(const std::string& path) {
        if (!path.empty()) snapshot_path_ = path + ".idx";
        if (log_.writable() && !path.empty()) ::unlink((path + ".compact").c_str());  // a compaction that died
        uint64_t start = store_format::kHeaderSize;
        // repair: the snapshot is ignored, as it may point at damaged records (it is only checked
        // against the log's last bytes): the whole log is read.
        if (repair_ && !snapshot_path_.empty()) stats_.snapshot_note = "ignored: repair=True reads the whole log";
        if (!snapshot_path_.empty() && !repair_ && load_snapshot(start)) {
            stats_.snapshot_used = true;
        } else {
            resize_index(64);
            live_bytes_ = 0;
            start = store_format::kHeaderSize;
        }
        replay(start);
    }

    // The snapshot is a cache: whatever is wrong with it (not a regular file, a header that does
    // not match the log or the file's size, too large for memory) and the index is rebuilt from
    // the log instead, with the reason in stats().snapshot_note.
    bool load_snapshot(uint64_t& log_end) {
        try {
            return read_snapshot(log_end);
        } catch (const std::bad_alloc&) {
            resize_index(64);  // small: if even this fails, the open fails
            stash_.clear();
            stats_.snapshot_note = "snapshot too large for the memory available";
            return false;
        }
    }

    // Loads the index from the snapshot if it matches the log (its identity, its end and the
    // bytes before it) and every entry points inside the log it covers; else leaves why in
    // stats_.snapshot_note. `log_end`: where replaying the log resumes.
    bool read_snapshot(uint64_t& log_end) {
        std::vector<unsigned char> data;
        if (!store_snapshot::read_file(snapshot_path_, data, stats_.snapshot_note,
                                       [&](const unsigned char* hd, off_t size) { return snapshot_sizes_fit(hd, size); }))
            return false;
        auto reject = [&](const char* why) {
            stats_.snapshot_note = why;
            return false;
        };
        SnapshotHeader h;
        if (!store_snapshot::decode_header(data, h)) return reject("snapshot header corrupt");
        if (h.tag_bits != log_.header().tag_bits || h.log_id != log_.header().log_id)
            return reject("snapshot of another log");
        const uint64_t end = h.log_end;
        if (end < store_format::kHeaderSize || end > log_.file_end() || end % 8 != 0 || tail_check(end) != h.tail_check)
            return reject("snapshot does not match the log");
        if (h.bucket_count == 0 || h.bucket_count % kBlockBuckets != 0 || h.bucket_count > kMaxBucketCountStore ||
            !store_snapshot::sizes_match(data, h))
            return reject("snapshot sizes inconsistent");
        if (!store_snapshot::body_intact(data)) return reject("snapshot checksum mismatch");
        resize_index(h.bucket_count);
        const unsigned char* p = data.data() + store_snapshot::kHeaderSize;
        uint64_t counted = 0;
        const uint64_t max_tag = (uint64_t(1) << log_.header().tag_bits) - 1;
        for (StoreBucket& b : buckets_) {
            b = store_snapshot::get_bucket(p);
            for (unsigned s = 0; s < 4; ++s) {
                if (b.tag[s]) {
                    ++counted;
                    // Offsets inside the covered log: a wrong one would only give a wrong record,
                    // but refusing it here keeps every read inside what was validated.
                    if (b.tag[s] > max_tag || uint64_t(b.unit[s]) * 8 < store_format::kHeaderSize ||
                        uint64_t(b.unit[s]) * 8 >= end) {
                        resize_index(64);
                        return reject("snapshot entry outside the log");
                    }
                }
            }
            p += store_snapshot::kBucketBytes;
        }
        if (counted != h.entries) {
            resize_index(64);
            return reject("snapshot entry count mismatch");
        }
        count_ = counted;
        for (uint64_t e = 0; e < h.stash; ++e, p += store_snapshot::kStashEntryBytes) {
            const uint64_t off = load_le64(p + 8);
            if (off < store_format::kHeaderSize || off >= end || off % 8 != 0) {
                resize_index(64);
                stash_.clear();
                return reject("snapshot entry outside the log");
            }
            stash_insert(load_le64(p), off);
        }
        live_bytes_ = h.live_bytes;
        log_end = end;
        low_valid_ = false;  // a snapshot holds tags and offsets only: the next growth reads the log
        return true;
    }

    // Whether the snapshot header `hd` declares a body of the file's size, no more entries than
    // the log it covers has records, and a table that fits in the memory available.
    bool snapshot_sizes_fit(const unsigned char* hd, off_t file_size) {
        auto reject = [&](const char* why) {
            stats_.snapshot_note = why;
            return false;
        };
        SnapshotHeader h;
        if (!store_snapshot::decode_header(hd, h)) return reject("snapshot header corrupt");
        if (h.log_end < store_format::kHeaderSize) return reject("snapshot sizes inconsistent");
        const uint64_t records = (h.log_end - store_format::kHeaderSize) / store_format::record_size(0, 0);  // at most
        if (h.log_end > log_.file_end() || h.bucket_count > kMaxBucketCountStore || h.entries > records ||
            h.stash > records - h.entries ||
            static_cast<uint64_t>(file_size) != store_snapshot::kHeaderSize + h.bucket_count * store_snapshot::kBucketBytes +
                                                    h.stash * store_snapshot::kStashEntryBytes)
            return reject("snapshot sizes inconsistent");
        if (!memory_available_for(2 * static_cast<uint64_t>(file_size)))  // the file's bytes and the table
            return reject("snapshot too large for the memory available");
        return true;
    }

    // Fingerprint of the log's last bytes before `end` (after its header): a snapshot matches
    // the log only if these are unchanged.
    uint64_t tail_check(uint64_t end) {
        const uint64_t from = std::max<uint64_t>(store_format::kHeaderSize, end >= 64 ? end - 64 : 0);
        std::vector<unsigned char> buf(static_cast<size_t>(end - from));
        log_.read_bytes(from, buf.size(), buf.data());
        return xxh3_64(buf.data(), buf.size(), 0);
    }

    // Where the next intact record after the bad one at `pos` starts (records sit at multiples
    // of 8), or `limit` if none does. A record's checksum is seeded with its own offset, so bytes
    // of other records (or of a record's value) do not pass for one by accident.
    uint64_t next_intact(uint64_t pos, uint64_t limit) {
        RecordView r;
        for (uint64_t p = pos + store_format::kAlign; p < limit; p += store_format::kAlign)
            if (log_.valid_record(p, limit, r)) return p;
        return limit;
    }

    // Applies the log's records from `start` to its end to the index; stops at the first record
    // that is torn or corrupt. With repair, a bad record is skipped instead (the scan resumes at
    // the next intact one), and a writer then rewrites the log without the damaged bytes.
    void replay(uint64_t start) {
        const uint64_t limit = log_.file_end();
        const KeyHasher hs = hasher();
        uint64_t pos = start;
        uint64_t window = 0;
        uint64_t skipped = 0;  // damaged bytes skipped before intact records (repair)
        RecordView r;
        while (pos < limit) {
            if (!log_.valid_record(pos, limit, r)) {
                if (!repair_) break;
                const uint64_t next = next_intact(pos, limit);
                if (next == limit) break;  // nothing intact after it: a tail, cut below
                if (stats_.recovered_regions++ == 0) stats_.recovered_at = pos;
                skipped += next - pos;
                pos = next;
                continue;
            }
            const uint64_t h = hs.hash_key(r.key, r.key_len);
            // The record's key is needed after find() reads other records: keep a copy.
            key_copy_.assign(r.key, r.key + r.key_len);
            const uint64_t size = r.size;
            const bool tomb = r.tombstone;
            const Location at = find(h, key_copy_.data(), key_copy_.size());
            if (tomb) {
                if (at.offset != kNone) {
                    live_bytes_ -= at.record.size;
                    remove_entry(at);
                }
            } else {
                if (at.offset != kNone) {
                    live_bytes_ -= at.record.size;
                    set_offset(at, pos);
                } else {
                    insert_entry(h, pos);
                }
                live_bytes_ += size;
            }
            ++stats_.replayed_records;
            pos += size;
            if (pos >= window + kReleaseWindow) {  // the scan keeps the process's memory bounded
                log_.release(window, pos / kReleaseWindow * kReleaseWindow);
                window = pos / kReleaseWindow * kReleaseWindow;
            }
        }
        lookups_ = 0;  // count what users ask, not what opening did
        log_reads_ = 0;
        // Synced records are never a crash's loss: a log that is corrupt, or simply ends (cut at
        // a record boundary), before its synced end was damaged, and opening says so instead of
        // answering without them (and rewriting the synced end smaller) unless told to repair.
        const uint64_t synced = log_.header().synced_end;
        if (pos < synced && !repair_) {
            if (pos < limit)
                throw FormatError("the store's log is corrupt at offset " + std::to_string(pos) +
                                  ", before the end of its synced data (" + std::to_string(synced) +
                                  " bytes); open it with repair=True to skip the damaged bytes, keeping every intact record");
            throw FormatError("the store's log ends at " + std::to_string(limit) + " bytes, before the end of its synced "
                              "data (" + std::to_string(synced) + " bytes): synced records are missing (the file was "
                              "cut); open it with repair=True to accept the loss");
        }
        if (pos < limit || pos < synced) {
            if (stats_.recovered_regions++ == 0) stats_.recovered_at = pos;
            stats_.recovered_bytes = std::max(limit, synced) - pos;
            if (log_.writable()) log_.truncate(pos);
            else log_.set_readable_end(pos);
        }
        stats_.recovered_bytes += skipped;
        log_.release_all();
        // Damage skipped inside the log: rewrite it with the live records only (an atomic
        // compaction, which also writes a snapshot), so that it opens cleanly from now on. A
        // reader leaves the file as it is and just reads around the damage.
        if (skipped && log_.writable() && !log_.anonymous())
            compact(repair_log_id_ != log_.header().log_id ? repair_log_id_ : ~repair_log_id_);
    }

    static constexpr uint64_t kMaxBucketCountStore = uint64_t(1) << 32;

    LogFile log_;
    std::vector<StoreBucket> buckets_;
    // With keep_index_bits(): the low 32 bits of each entry's key hash (its bucket index comes from
    // them; its tag from the high bits), slot by slot beside buckets_ (low_[bucket * 4 + slot]),
    // moved with the entry. With them a growth re-places every entry from memory instead of
    // reading each key back from the log and hashing it again. Valid when every entry's bits are
    // known: not for entries placed before keep_index_bits() or loaded from a snapshot (tags and
    // offsets only), until a growth from the log (rebuild) fills them in.
    std::vector<uint32_t> low_;
    bool keep_low_ = false;  // keep_index_bits()
    bool low_valid_ = false;
    Locator loc_{};
    uint64_t count_ = 0;
    std::unordered_multimap<uint64_t, uint64_t> stash_;  // full hash -> byte offset
    uint64_t live_bytes_ = 0;
    uint64_t version_ = 0;
    unsigned max_kicks_;
    bool repair_ = false;
    uint64_t repair_log_id_ = 0;  // identity of the log a repair rewrites
    bool in_batch_ = false;
    unsigned depth_ = 0;  // atomically() calls running
    Mark batch_mark_;
    std::vector<JournalEntry> journal_;
    StoreStats stats_;
    // Readers of one store run at once (under a shared lock): their counters are atomic.
    std::atomic<uint64_t> lookups_{0}, log_reads_{0};
    std::string snapshot_path_;
    std::vector<EvictNode> nodes_;
    static constexpr uint64_t kSpareNodes = 4;
    std::unordered_multimap<uint64_t, uint64_t> spare_nodes_;  // stash nodes kept ready (make_room)
    uint64_t fork_generation_;  // of the process that opened the store (forked())
    std::vector<unsigned char> key_copy_;
    std::vector<uint64_t> scratch_current_, scratch_current_size_;
    std::vector<uint32_t> scratch_first_, scratch_slots_;
};

}  // namespace cuckoo
