// The packed bucket table: `bucket_count` buckets of `bucket_size` slots of `fingerprint_bits`
// bits each, stored back to back with no padding (a 12-bit filter costs 12 bits a slot).
//
// Bit layout (also the on-disk layout, see docs/format.md): slot k of bucket i holds bits
// [(i*b + k)*f, (i*b + k + 1)*f) of the table, the table read as one little-endian bit string.
// A slot holding 0 is empty; fingerprints are never 0.
//
// Buckets are compared in one go with SWAR ("SIMD within a register"): a bucket is read as one
// (or, for wide buckets, 2 or 4) 64-bit words of L lanes, and an exact zero-lane test finds
// matching or empty slots without a per-slot loop.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>
#if defined(_WIN32)
#include <malloc.h>  // _aligned_malloc
#endif

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "cuckoo/fault.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/semisort.hpp"

namespace cuckoo {

inline void prefetch_read(const void* p) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 0, 3);
#else
    (void)p;
#endif
}

inline int popcount64(uint64_t x) noexcept {
#if defined(__POPCNT__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_popcountll(x);
#else
    // Without the POPCNT instruction (baseline x86-64) the builtin becomes a library call; the
    // classic bit-parallel count is a dozen inline operations.
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return static_cast<int>((x * 0x0101010101010101ull) >> 56);
#endif
}

inline int ctz64(uint64_t x) noexcept {  // x != 0
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) { x >>= 1; ++n; }
    return n;
#endif
}

// Bytes readable past the last slot: word loads read up to 9 bytes from a slot's first byte.
constexpr size_t kTablePadding = 16;
constexpr size_t kTableAlignment = 64;  // one cache line

// Owned, zero-initialised, 64-byte-aligned bytes; or a read-only view of memory owned elsewhere
// (a memory-mapped file). Copying always copies the bytes into a new OWNED buffer, also when the
// source is a view: no shared raw pointer, and the copy of a read-only (mapped) table is writable.
class ByteBuffer {
public:
    ByteBuffer() = default;
    explicit ByteBuffer(size_t size) { allocate(size); }
    static ByteBuffer view(const unsigned char* data, size_t size) {
        ByteBuffer b;
        b.data_ = const_cast<unsigned char*>(data);
        b.size_ = size;
        b.owned_ = false;
        return b;
    }
    ByteBuffer(const ByteBuffer& other) {
        allocate(other.size_);
        if (other.size_) std::memcpy(data_, other.data_, other.size_);
    }
    ByteBuffer(ByteBuffer&& other) noexcept
        : data_(std::exchange(other.data_, nullptr)),
          size_(std::exchange(other.size_, 0)),
          mapped_(std::exchange(other.mapped_, 0)),
          owned_(std::exchange(other.owned_, true)) {}
    ByteBuffer& operator=(ByteBuffer other) noexcept {
        swap(other);
        return *this;
    }
    ~ByteBuffer() { release(); }

    void swap(ByteBuffer& other) noexcept {
        std::swap(data_, other.data_);
        std::swap(size_, other.size_);
        std::swap(mapped_, other.mapped_);
        std::swap(owned_, other.owned_);
    }
    unsigned char* data() noexcept { return data_; }
    const unsigned char* data() const noexcept { return data_; }
    size_t size() const noexcept { return size_; }
    bool owned() const noexcept { return owned_; }
    // Gives the memory of the bytes from `from` on back to the OS (where they are mapped pages:
    // buffers of 2 MiB and more on Linux); they read as zero afterwards. The caller no longer
    // needs them (the key set's arena after a compaction).
    void release_tail(size_t from) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        const size_t page = 4096, start = (from + page - 1) / page * page;
        if (mapped_ && start < mapped_) madvise(data_ + start, mapped_ - start, MADV_DONTNEED);
#else
        (void)from;
#endif
    }

    // Backs every page of the buffer with memory now, keeping its bytes (the kernel zeroes a
    // fresh page at its first write: on the KVM guests measured, 12.7 MiB took 12-30 ms). The
    // dedup pipeline calls it on the calling thread while its producers read the first blocks,
    // instead of taking those faults in its first inserts while they wait. Advisory: nothing
    // happens to a buffer it does not own.
    void prefault() noexcept {
        if (!owned_ || !data_) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        constexpr int kPopulateWrite = 23;  // MADV_POPULATE_WRITE (Linux 5.14): no write of ours
        if (mapped_ && madvise(data_, mapped_, kPopulateWrite) == 0) return;
#endif
        volatile unsigned char* p = data_;
        for (size_t i = 0; i < size_; i += 4096) p[i] = p[i];
    }

private:
    void allocate(size_t size) {
        size_ = size;
        owned_ = true;
        if (size == 0) return;
        fault::before_allocation();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
        if (size >= kHugePage) {
            allocate_huge(size);
            return;
        }
#endif
        const size_t rounded = (size + kTableAlignment - 1) / kTableAlignment * kTableAlignment;
        data_ = static_cast<unsigned char*>(alloc_aligned(kTableAlignment, rounded));
        if (!data_) throw std::bad_alloc();
        std::memset(data_, 0, size);
    }
    // std::aligned_alloc is not in the Windows C runtimes (MSVC's, MinGW's): _aligned_malloc is,
    // and its blocks need _aligned_free.
    static void* alloc_aligned(size_t alignment, size_t size) {
#if defined(_WIN32)
        return _aligned_malloc(size, alignment);
#else
        return std::aligned_alloc(alignment, size);
#endif
    }
    static void free_aligned(void* p) noexcept {
#if defined(_WIN32)
        _aligned_free(p);
#else
        std::free(p);
#endif
    }
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    // Tables of 2 MiB and more: random bucket reads are TLB-bound (a 4 KiB page per bucket), and
    // transparent huge pages remove most of that cost (measured: up to 2x for dependent misses).
    // madvise needs a page-aligned range and the kernel backs only whole, 2 MiB-aligned huge
    // pages, so the table is mapped at a 2 MiB boundary (the slack around it is unmapped again).
    // Fresh anonymous pages are zero, and only pages that are touched take memory.
    static constexpr size_t kHugePage = size_t(2) << 20;
    void allocate_huge(size_t size) {
        const size_t page = 4096;
        const size_t length = (size + page - 1) / page * page;
        const size_t span = length + kHugePage;
        void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw == MAP_FAILED) throw std::bad_alloc();
        const uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
        const uintptr_t start = (begin + kHugePage - 1) / kHugePage * kHugePage;
        if (start > begin) munmap(raw, start - begin);
        const uintptr_t end = begin + span, used_end = start + length;
        if (end > used_end) munmap(reinterpret_cast<void*>(used_end), end - used_end);
        data_ = reinterpret_cast<unsigned char*>(start);
        mapped_ = length;
        // Advisory: where the OS refuses, the table simply uses small pages.
        madvise(data_, length / kHugePage * kHugePage, MADV_HUGEPAGE);
    }
#endif
    void release() noexcept {
        if (owned_ && data_) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
            if (mapped_) munmap(data_, mapped_);
            else
#endif
                free_aligned(data_);
        }
        data_ = nullptr;
        mapped_ = 0;
    }

    unsigned char* data_ = nullptr;
    size_t size_ = 0;
    size_t mapped_ = 0;  // bytes mapped with mmap (then released with munmap), else 0
    bool owned_ = true;
};

// How a bucket is read: one 8-byte load from a byte boundary (b*f <= 64 and a multiple of 8:
// f = 8, 12, 16 with b = 4), one 8-byte load and a shift (b*f + 7 <= 64 bits), one word
// straddling 9 bytes, or several words (b*f > 64). Bulk lookups dispatch on it once per call,
// not once per bucket. SemiSorted: a semi-sorted bucket (cuckoo/semisort.hpp), one load and a
// decode into the plain one-word layout.
enum class BucketShape { Aligned, OneLoad, OneWord, MultiWord, SemiSorted };

// The read side of a table as a small value: bulk loops copy it into locals so that the compiler
// keeps the layout constants in registers (stores into a bool/uint8 output array may alias any
// object's bytes, which would otherwise force a reload of every member after each store).
struct TableProbe {
    const unsigned char* data;
    uint64_t bucket_bits;
    uint64_t word_mask;
    uint64_t lane_ones;
    uint64_t lane_low;
    uint64_t lane_high;
    unsigned word_bits;
    unsigned words_per_bucket;
    unsigned bucket_last_byte;
    unsigned lanes_per_word;
    unsigned lane_bits;  // f
    uint32_t lane_div;  // floor(2^16 / f) + 1: the lane of mask bit x is (x * lane_div) >> 16
    bool may_straddle;  // whether a bucket can span two cache lines
    semisort::Decoder semi;  // semi.lanes null: plain buckets

    uint64_t load_bits(uint64_t bit) const noexcept {
        // The word's bits from an unaligned position: one 8-byte load plus the following byte,
        // combined without branching (the shift by 64 - s is split so that s = 0 is defined).
        const unsigned char* p = data + (bit >> 3);
        const unsigned s = bit & 7;
        const uint64_t lo = load_le64(p);
        const uint64_t hi = p[8];
        return ((lo >> s) | ((hi << 1) << (63 - s))) & word_mask;
    }
    // Top bit of lane l set iff lane l of x (L lanes of f bits) is zero. Exact for every lane:
    // (x & low) + low cannot carry out of a lane, unlike the classic haszero trick.
    uint64_t zero_lanes(uint64_t x) const noexcept { return ~(((x & lane_low) + lane_low) | x | lane_low) & lane_high; }
    // How many lanes of a word hold 1, for x with at most bit 0 of each lane set (a zero_lanes
    // result shifted down by f - 1): the multiply sums every lane into the top one, where the
    // sum (at most L < 2^f) cannot carry. A popcount without the POPCNT instruction.
    unsigned lane_count(uint64_t x) const noexcept {
        return static_cast<unsigned>(((x * lane_ones) >> (word_bits - lane_bits)) & ((uint64_t(1) << lane_bits) - 1));
    }
    uint64_t match_mask(uint64_t bucket, unsigned word, uint32_t fp) const noexcept {
        if (semi.lanes) return zero_lanes(semi_word(bucket * bucket_bits) ^ (fp * lane_ones));  // one word
        return zero_lanes(load_bits(bucket * bucket_bits + word * word_bits) ^ (fp * lane_ones));
    }
    // A semi-sorted bucket at table bit `bit`, decoded into the plain layout (4 lanes of f bits).
    uint64_t semi_word(uint64_t bit) const noexcept { return semi.decode(load_le64(data + (bit >> 3)) >> (bit & 7)); }
    BucketShape shape() const noexcept {
        if (semi.lanes) return BucketShape::SemiSorted;
        if (words_per_bucket > 1) return BucketShape::MultiWord;
        // A bucket starts at bit i*b*f: byte-aligned when b*f is a multiple of 8, else at a
        // shift of up to 7 bits, which one 8-byte load covers while b*f + 7 <= 64.
        if (bucket_bits % 8 == 0) return BucketShape::Aligned;
        return word_bits + 7 <= 64 ? BucketShape::OneLoad : BucketShape::OneWord;
    }
    uint64_t bit_of(uint64_t bucket) const noexcept { return bucket * bucket_bits; }
    // The fingerprint in a slot (0: empty), as PackedTable::get.
    uint32_t slot(uint64_t bucket, unsigned s) const noexcept {
        const uint64_t mask = (uint64_t(1) << lane_bits) - 1;  // lane_bits <= 32
        if (semi.lanes) return static_cast<uint32_t>((semi_word(bit_of(bucket)) >> (s * lane_bits)) & mask);
        const uint64_t bit = bit_of(bucket) + s * lane_bits;
        return static_cast<uint32_t>((load_le64(data + (bit >> 3)) >> (bit & 7)) & mask);
    }
    uint64_t pattern_of(uint32_t fp) const noexcept { return fp * lane_ones; }

    // The bucket at table bit `bit` in the low bits of a word whose bits above the bucket are
    // left as they are (the next bucket's). The lane tests ignore them: no lane carries into the
    // next one, and their results are masked with lane_high. Single-word shapes only.
    template <BucketShape Shape>
    uint64_t bucket_word(uint64_t bit) const noexcept {
        static_assert(Shape != BucketShape::MultiWord, "a multi-word bucket is not one word");
        if constexpr (Shape == BucketShape::Aligned) return load_le64(data + (bit >> 3));
        else if constexpr (Shape == BucketShape::OneLoad) return load_le64(data + (bit >> 3)) >> (bit & 7);
        else if constexpr (Shape == BucketShape::SemiSorted) return semi_word(bit);
        else return load_bits(bit);
    }
    // Whether either of two buckets (given by their first bits) holds a lane equal to `pattern`
    // (a fingerprint repeated in every lane). For one-word buckets the two zero-lane tests share
    // their last steps: zero_lanes(x) | zero_lanes(y) == ~(t(x) & t(y)) & lane_high.
    template <BucketShape Shape>
    bool either_contains(uint64_t bit1, uint64_t bit2, uint64_t pattern) const noexcept {
        if constexpr (Shape == BucketShape::MultiWord) {
            uint64_t any = 0;
            for (unsigned w = 0; w < words_per_bucket; ++w) {
                any |= zero_lanes(load_bits(bit1 + w * word_bits) ^ pattern);
                any |= zero_lanes(load_bits(bit2 + w * word_bits) ^ pattern);
            }
            return any != 0;
        } else {
            const uint64_t x = bucket_word<Shape>(bit1) ^ pattern;
            const uint64_t y = bucket_word<Shape>(bit2) ^ pattern;
            const uint64_t tx = ((x & lane_low) + lane_low) | x;
            const uint64_t ty = ((y & lane_low) + lane_low) | y;
            return (~(tx & ty) & lane_high) != 0;
        }
    }
    // How many lanes of the two buckets equal `pattern` (a key's count). The two match masks have
    // their bits at different positions once one is shifted by a bit (f >= 4), so one popcount
    // counts both.
    template <BucketShape Shape>
    unsigned pair_count(uint64_t bit1, uint64_t bit2, uint64_t pattern) const noexcept {
        if constexpr (Shape == BucketShape::MultiWord) {
            unsigned n = 0;
            for (unsigned w = 0; w < words_per_bucket; ++w) {
                n += popcount64(zero_lanes(load_bits(bit1 + w * word_bits) ^ pattern) |
                                (zero_lanes(load_bits(bit2 + w * word_bits) ^ pattern) >> 1));
            }
            return n;
        } else {
            const uint64_t mx = zero_lanes(bucket_word<Shape>(bit1) ^ pattern);
            const uint64_t my = zero_lanes(bucket_word<Shape>(bit2) ^ pattern);
            return static_cast<unsigned>(popcount64(mx | (my >> 1)));
        }
    }
    // Whether the bucket at table bit `bit` holds a lane equal to `pattern`.
    template <BucketShape Shape>
    bool contains_at(uint64_t bit, uint64_t pattern) const noexcept {
        if constexpr (Shape == BucketShape::MultiWord) {
            uint64_t any = 0;
            for (unsigned w = 0; w < words_per_bucket; ++w) any |= zero_lanes(load_bits(bit + w * word_bits) ^ pattern);
            return any != 0;
        } else {
            return zero_lanes(bucket_word<Shape>(bit) ^ pattern) != 0;
        }
    }
    template <BucketShape Shape>
    bool contains_as(uint64_t bucket, uint32_t fp) const noexcept {
        return contains_at<Shape>(bit_of(bucket), pattern_of(fp));
    }
    // fn(std::integral_constant<BucketShape, shape()>{}): code specialised for this table's
    // bucket shape, chosen once (per batch, not per bucket).
    template <class Fn>
    auto with_shape(Fn&& fn) const {
        if (semi.lanes) return fn(std::integral_constant<BucketShape, BucketShape::SemiSorted>{});
        return with_plain_shape(fn);
    }
    // with_shape for plain tables (semi-sorted ones are the caller's business).
    template <class Fn>
    auto with_plain_shape(Fn&& fn) const {
        switch (shape()) {
            case BucketShape::Aligned: return fn(std::integral_constant<BucketShape, BucketShape::Aligned>{});
            case BucketShape::OneLoad: return fn(std::integral_constant<BucketShape, BucketShape::OneLoad>{});
            case BucketShape::OneWord: return fn(std::integral_constant<BucketShape, BucketShape::OneWord>{});
            default: return fn(std::integral_constant<BucketShape, BucketShape::MultiWord>{});
        }
    }
    bool contains(uint64_t bucket, uint32_t fp) const noexcept {
        return with_shape([&](auto shape) { return contains_as<decltype(shape)::value>(bucket, fp); });
    }
    unsigned count(uint64_t bucket, uint32_t fp) const noexcept {
        unsigned n = 0;
        for (unsigned w = 0; w < words_per_bucket; ++w) n += popcount64(match_mask(bucket, w, fp));
        return n;
    }
    // Slots of `bucket` equal to fp (fp = 0: empty slots), and the first of them in `first`
    // (-1 if none). No division: mask bit x = l*f + f-1 < 64 belongs to lane x * lane_div >> 16.
    unsigned find_all(uint64_t bucket, uint32_t fp, int& first) const noexcept {
        first = -1;
        unsigned n = 0;
        for (unsigned w = 0; w < words_per_bucket; ++w) {
            const uint64_t m = match_mask(bucket, w, fp);
            if (m && first < 0) first = static_cast<int>(w * lanes_per_word + ((ctz64(m) * lane_div) >> 16));
            n += popcount64(m);
        }
        return n;
    }
    void prefetch(uint64_t bucket) const noexcept { prefetch_bit(bit_of(bucket)); }
    void prefetch_bit(uint64_t bit) const noexcept {
        const unsigned char* first = data + (bit >> 3);
        prefetch_read(first);
        // Buckets of 32, 64, 128 or 256 bits never span two lines of the 64-byte-aligned table;
        // others sometimes do, and then their last byte's line is wanted too.
        if (may_straddle) prefetch_read(first + bucket_last_byte);
    }
};

namespace detail {
// What a PackedTable holds, copied and moved member by member; PackedTable adds its probe (a
// derived value) and refreshes it whenever these change.
struct PackedTableState {
    uint64_t bucket_count_ = 0;
    unsigned bucket_size_ = 0;
    unsigned fp_bits_ = 0;
    bool semi_sorted_ = false;
    semisort::Decoder decoder_;
    unsigned lanes_per_word_ = 1;
    unsigned word_bits_ = 0;    // L * f
    uint64_t bucket_bits_ = 0;  // b * f
    unsigned bucket_last_byte_ = 0;
    bool may_straddle_ = false;
    uint32_t lane_div_ = 0;
    unsigned words_per_bucket_ = 1;
    uint64_t fp_mask_ = 0;
    uint64_t word_mask_ = 0;
    uint64_t lane_ones_ = 0;
    uint64_t lane_high_ = 0;
    uint64_t lane_low_ = 0;
    ByteBuffer bytes_;
};
}  // namespace detail

class PackedTable : private detail::PackedTableState {
public:
    PackedTable() = default;
    PackedTable(const PackedTable& other) : PackedTableState(other) { refresh_probe(); }
    PackedTable(PackedTable&& other) noexcept : PackedTableState(std::move(other)) {
        refresh_probe();
        other.refresh_probe();
    }
    PackedTable& operator=(const PackedTable& other) {
        PackedTableState::operator=(other);
        refresh_probe();
        return *this;
    }
    PackedTable& operator=(PackedTable&& other) noexcept {
        PackedTableState::operator=(std::move(other));
        refresh_probe();
        other.refresh_probe();
        return *this;
    }
    // semi_sorted: semi-sorted buckets (cuckoo/semisort.hpp; semisort::supports(b, f) must hold).
    PackedTable(uint64_t bucket_count, unsigned bucket_size, unsigned fingerprint_bits, bool semi_sorted = false) {
        bucket_count_ = bucket_count;
        bucket_size_ = bucket_size;
        fp_bits_ = fingerprint_bits;
        semi_sorted_ = semi_sorted;
        init_layout();
        bytes_ = ByteBuffer(data_bytes() + kTablePadding);
        refresh_probe();
    }
    // A table over existing bytes (at least data_bytes() + kTablePadding of them), read-only.
    static PackedTable view(uint64_t bucket_count, unsigned bucket_size, unsigned fingerprint_bits,
                            bool semi_sorted, const unsigned char* data, size_t size) {
        PackedTable t;
        t.bucket_count_ = bucket_count;
        t.bucket_size_ = bucket_size;
        t.fp_bits_ = fingerprint_bits;
        t.semi_sorted_ = semi_sorted;
        t.init_layout();
        if (size < t.data_bytes() + kTablePadding) throw std::invalid_argument("table view too short");
        t.bytes_ = ByteBuffer::view(data, size);
        t.refresh_probe();
        return t;
    }

    static uint64_t bucket_bits_for(unsigned bucket_size, unsigned fp_bits, bool semi_sorted) {
        return semi_sorted ? semisort::bucket_bits(fp_bits) : uint64_t(bucket_size) * fp_bits;
    }
    static uint64_t data_bytes_for(uint64_t bucket_count, unsigned bucket_size, unsigned fp_bits,
                                   bool semi_sorted = false) {
        return (bucket_count * bucket_bits_for(bucket_size, fp_bits, semi_sorted) + 7) / 8;
    }

    uint64_t bucket_count() const noexcept { return bucket_count_; }
    unsigned bucket_size() const noexcept { return bucket_size_; }
    unsigned fingerprint_bits() const noexcept { return fp_bits_; }
    bool semi_sorted() const noexcept { return semi_sorted_; }
    uint64_t slot_count() const noexcept { return bucket_count_ * bucket_size_; }
    // Bytes that hold slots (what the file format stores); the allocation adds kTablePadding.
    uint64_t data_bytes() const noexcept { return data_bytes_for(bucket_count_, bucket_size_, fp_bits_, semi_sorted_); }
    uint64_t allocated_bytes() const noexcept { return bytes_.size(); }
    const unsigned char* data() const noexcept { return bytes_.data(); }
    unsigned char* mutable_data() noexcept { return bytes_.data(); }
    bool writable() const noexcept { return bytes_.owned(); }
    void prefault() noexcept { bytes_.prefault(); }

    void clear() noexcept {
        if (bytes_.owned() && bytes_.data()) std::memset(bytes_.data(), 0, bytes_.size());
    }

    // ---- single slots ----
    uint32_t get(uint64_t bucket, unsigned slot) const noexcept {
        if (semi_sorted_)
            return static_cast<uint32_t>((probe().semi_word(bucket * bucket_bits_) >> (slot * fp_bits_)) & fp_mask_);
        const uint64_t bit = bucket * bucket_bits_ + slot * fp_bits_;
        return static_cast<uint32_t>((load_le64(bytes_.data() + (bit >> 3)) >> (bit & 7)) & fp_mask_);
    }
    // Semi-sorted tables re-sort the bucket: its other slots may then have other numbers.
    void set(uint64_t bucket, unsigned slot, uint32_t fp) noexcept {
        if (semi_sorted_) return set_semi_sorted(bucket, slot, fp);
        const uint64_t bit = bucket * bucket_bits_ + slot * fp_bits_;
        unsigned char* p = bytes_.data() + (bit >> 3);
        const unsigned shift = bit & 7;
        uint64_t w = load_le64(p);
        w = (w & ~(fp_mask_ << shift)) | (static_cast<uint64_t>(fp) << shift);
        store_le64(p, w);
    }

    // ---- whole buckets (SWAR) ----
    // The table's read side, kept up to date (not rebuilt per call: its copy of the semi-sorted
    // decoder made it ~200 bytes, a sixth of a scalar add's instructions in the binding). Bulk
    // loops copy it into a local (see TableProbe); one-key calls read it where it is. A reference
    // is valid until the table is assigned, moved or destroyed.
    const TableProbe& probe() const noexcept { return probe_; }
    uint64_t match_mask(uint64_t bucket, unsigned word, uint32_t fp) const noexcept {
        return probe().match_mask(bucket, word, fp);
    }
    bool contains(uint64_t bucket, uint32_t fp) const noexcept { return probe().contains(bucket, fp); }
    unsigned count(uint64_t bucket, uint32_t fp) const noexcept { return probe().count(bucket, fp); }
    // Index of the first slot equal to fp, or -1. find_slot(bucket, 0) finds an empty slot.
    int find_slot(uint64_t bucket, uint32_t fp) const noexcept {
        int first;
        probe().find_all(bucket, fp, first);
        return first;
    }
    unsigned occupied(uint64_t bucket) const noexcept { return bucket_size_ - count(bucket, 0); }
    // Semi-sorted tables: stores a bucket given as its sorted plain word (semisort::Decoder).
    void set_semi_word(uint64_t bucket, uint64_t plain) noexcept {
        const uint64_t bit = bucket * bucket_bits_;
        unsigned char* p = bytes_.data() + (bit >> 3);
        const unsigned shift = bit & 7;
        const uint64_t bucket_mask = ((uint64_t(1) << bucket_bits_) - 1) << shift;  // bucket_bits_ <= 60
        store_le64(p, (load_le64(p) & ~bucket_mask) | (decoder_.encode(plain) << shift));
    }

    void prefetch(uint64_t bucket) const noexcept { probe().prefetch(bucket); }

private:
    void refresh_probe() noexcept {
        probe_ = TableProbe{bytes_.data(), bucket_bits_, word_mask_, lane_ones_, lane_low_, lane_high_,
                            word_bits_, words_per_bucket_, bucket_last_byte_, lanes_per_word_, fp_bits_, lane_div_,
                            may_straddle_, decoder_};
    }
    void set_semi_sorted(uint64_t bucket, unsigned slot, uint32_t fp) noexcept {
        const uint64_t bit = bucket * bucket_bits_;
        const uint64_t w = load_le64(bytes_.data() + (bit >> 3));
        set_semi_word(bucket, decoder_.replace(decoder_.decode(w >> (bit & 7)), slot, fp));
    }
    void init_layout() {
        fp_mask_ = (fp_bits_ >= 64) ? ~0ull : ((1ull << fp_bits_) - 1);
        lanes_per_word_ = bucket_size_;
        while (lanes_per_word_ * fp_bits_ > 64) lanes_per_word_ /= 2;
        words_per_bucket_ = bucket_size_ / lanes_per_word_;
        word_bits_ = lanes_per_word_ * fp_bits_;
        bucket_bits_ = bucket_bits_for(bucket_size_, fp_bits_, semi_sorted_);
        decoder_ = semi_sorted_ ? semisort::Decoder::for_bits(fp_bits_) : semisort::Decoder{};
        bucket_last_byte_ = (bucket_bits_ - 1) / 8;
        may_straddle_ = 512 % bucket_bits_ != 0;  // here, not in probe(): a division per scalar call
        lane_div_ = (1u << 16) / fp_bits_ + 1;
        word_mask_ = word_bits_ >= 64 ? ~0ull : ((1ull << word_bits_) - 1);
        lane_ones_ = 0;
        for (unsigned l = 0; l < lanes_per_word_; ++l) lane_ones_ |= 1ull << (l * fp_bits_);
        lane_high_ = lane_ones_ << (fp_bits_ - 1);
        lane_low_ = lane_ones_ * ((1ull << (fp_bits_ - 1)) - 1);
    }
    TableProbe probe_{};  // probe(): refreshed by every constructor and assignment
};

}  // namespace cuckoo
