// The binary format of a filter (specified in docs/format.md): writing a filter as bytes, and
// reading bytes back into a filter, either copying the table or as a read-only view of the bytes
// (zero-copy, for memory-mapped files). No Python, no I/O: callers bring the bytes or a sink.
//
// Every multi-byte field is little-endian, written and read byte by byte (put_le / get_le) or
// through load_le64, never in native order and never through a pointer cast. Reading is
// bounds-checked: nothing is read past the `size` given, every length is checked against it
// before it is used, and every size computation is done on validated, bounded values (so it
// cannot overflow). Anything wrong raises cuckoo::FormatError saying what is wrong.
//
// Layout of version 1 (offsets in bytes; N = stage count; see docs/format.md for the details):
//
//   0     fixed header (64 bytes): magic "CUCKOOF\0", version, header length, file length,
//         flags, hash algorithm, seed, capacity, max_kicks, N, reserved
//   64    N stage records (64 bytes each): bucket size, fingerprint bits, bucket count, item
//         count, capacity, table offset, table length, table checksum, reserved
//   64+64N  header checksum: XXH64(bytes [0, 64+64N), seed 0)
//   Version 2 is version 1 with the first 4 bytes of a stage record's reserved field used as the
//   stage's bucket layout (0 plain, 1 semi-sorted: cuckoo/semisort.hpp). It is written only for
//   filters with a semi-sorted stage, so that version-1 readers refuse them by their version;
//   every other filter is still written as version 1.
//   Version 3 is version 2 with the last 4 bytes of a stage record's reserved field used as the
//   stage's nesting level (0, or k >= 1: a growth stage nested on stage 0, cuckoo/locate.hpp). It
//   is written only for filters with a nested stage (growable filters that grew), so that earlier
//   readers, which would locate keys in such a stage wrongly, refuse them by their version.
//   Flag bit 1 (any version; growable filters whose expansion is not the default 2 only): the
//   fixed header's reserved field holds the expansion (cuckoo/staged.hpp) as a u32 at offset 56,
//   its last 4 bytes zero. Readers that do not know the bit refuse the file by its flags.
//   then for each stage, at the next 64-byte-aligned offset: its packed table, followed by at
//   least kTablePadding zero bytes up to the next 64-byte-aligned offset (the next table or the
//   end of the file). Every gap byte is zero.
//
// Coverage: the header checksum covers the whole header, each stage's table checksum covers its
// table, gap bytes must be zero and the length must be exact, so any change to any byte is
// detected (the table checksums only when the table is verified: always when copying, on request
// for views, so that mapping a large file does not read it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuckoo/errors.hpp"  // FormatError
#include "cuckoo/filter.hpp"
#include "cuckoo/staged.hpp"
#include "cuckoo/hash.hpp"
#include "cuckoo/table.hpp"

namespace cuckoo {

namespace format {

constexpr unsigned char kMagic[8] = {'C', 'U', 'C', 'K', 'O', 'O', 'F', '\0'};
constexpr uint32_t kVersion = 3;          // the newest version this build writes and reads
constexpr uint32_t kPlainVersion = 1;     // what it writes for filters without semi-sorted stages
constexpr uint32_t kSemiSortedVersion = 2;  // ... with a semi-sorted stage and no nested one
constexpr uint32_t kFlagGrowable = 1u;    // bit 0: a growable filter (stages added as it fills)
constexpr uint32_t kFlagExpansion = 2u;   // bit 1: the reserved field holds the expansion
constexpr uint32_t kKnownFlags = kFlagGrowable | kFlagExpansion;
constexpr uint64_t kHeaderChecksumSeed = 0;
constexpr uint64_t kTableChecksumSeed = 0;
constexpr uint64_t kSectionAlignment = 64;  // tables start at multiples of 64 bytes
constexpr uint64_t kFixedHeaderBytes = 64;
constexpr uint64_t kStageRecordBytes = 64;
constexpr uint64_t kChecksumBytes = 8;
constexpr uint32_t kMaxStages = static_cast<uint32_t>(cuckoo::kMaxStages);  // see staged.hpp
// max_kicks values a file may hold: the constructor's bound of release 0.2.0. Values above the
// present bound (kMaxKicksLimit) are read as that bound: a file, maybe from elsewhere, must not
// make each failing insert search for a tenth of a second; what the filter holds is unchanged.
constexpr uint64_t kMaxMaxKicks = 1000000;

// Field offsets of the version-1 fixed header and stage records.
namespace v1 {
constexpr size_t kMagicAt = 0, kVersionAt = 8, kHeaderLengthAt = 12, kFileLengthAt = 16, kFlagsAt = 24,
                 kHashAt = 28, kSeedAt = 32, kCapacityAt = 40, kMaxKicksAt = 48, kStageCountAt = 52,
                 kReservedAt = 56, kExpansionAt = 56, kReservedHighAt = 60;
constexpr size_t kBucketSizeAt = 0, kFingerprintBitsAt = 4, kBucketCountAt = 8, kItemCountAt = 16,
                 kStageCapacityAt = 24, kTableOffsetAt = 32, kTableLengthAt = 40, kTableChecksumAt = 48,
                 kStageReservedAt = 56;
// Version 2: the stage record's reserved field is a u32 layout and 4 reserved bytes.
// Version 3: a u32 layout and a u32 nesting level.
constexpr size_t kStageLayoutAt = 56, kStageReserved2At = 60, kStageLevelAt = 60;
constexpr uint32_t kLayoutPlain = 0, kLayoutSemiSorted = 1;
}  // namespace v1

struct StageInfo {
    uint32_t bucket_size = 0;
    uint32_t fingerprint_bits = 0;
    uint64_t bucket_count = 0;
    uint64_t item_count = 0;
    uint64_t capacity = 0;
    uint64_t table_offset = 0;
    uint64_t table_length = 0;
    uint64_t table_checksum = 0;
    bool semi_sorted = false;
    uint32_t level = 0;     // version 3: the nesting level
    uint32_t fp_shift = 0;  // derived: fingerprint bits beyond stage 0's (level >= 1)
};

// A parsed, validated header: every field checked and the layout matches `size`.
struct Header {
    uint32_t version = 0;
    uint32_t header_length = 0;
    uint64_t file_length = 0;
    uint32_t flags = 0;
    uint32_t expansion = kDefaultExpansion;  // flag bit 1: the growth factor of a growable filter
    uint32_t hash_algorithm = 0;
    uint64_t seed = 0;
    uint64_t capacity = 0;
    uint32_t max_kicks = 0;
    std::vector<StageInfo> stages;
};

// ---- little-endian fields ------------------------------------------------------------------

inline void put_le(unsigned char* p, uint64_t v, unsigned bytes) noexcept {
    for (unsigned i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint64_t get_le(const unsigned char* p, unsigned bytes) noexcept {
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
}
inline uint32_t get_le32(const unsigned char* p) noexcept { return static_cast<uint32_t>(get_le(p, 4)); }
inline uint64_t get_le64(const unsigned char* p) noexcept { return get_le(p, 8); }

// ---- layout arithmetic (on validated values only) --------------------------------------------

inline uint64_t align_up(uint64_t n) noexcept { return (n + kSectionAlignment - 1) / kSectionAlignment * kSectionAlignment; }
inline uint64_t header_length_for(uint64_t stages) noexcept {
    return kFixedHeaderBytes + kStageRecordBytes * stages + kChecksumBytes;
}
// Where the table after a section ending at `end` starts: the next 64-byte boundary at or after it.
inline uint64_t next_table_offset(uint64_t end) noexcept { return align_up(end); }
// Where the section after a table ends: at least kTablePadding bytes later, on a 64-byte boundary.
inline uint64_t end_after_table(uint64_t offset, uint64_t length) noexcept {
    return align_up(offset + length + kTablePadding);
}

inline std::string hex_prefix(const unsigned char* p, size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        if (i) s += ' ';
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

[[noreturn]] inline void fail(const std::string& what) { throw FormatError(what); }

// ---- writing -------------------------------------------------------------------------------

// The stages of a filter as written: one for a fixed filter, one per growth stage otherwise.
inline std::vector<StageInfo> stages_of(const StagedFilter& f) {
    std::vector<StageInfo> out;
    uint64_t at = header_length_for(f.stage_count());
    for (const Filter& st : f.stages()) {
        StageInfo s;
        s.bucket_size = st.bucket_size();
        s.fingerprint_bits = st.fingerprint_bits();
        s.semi_sorted = st.semi_sorted();
        s.level = st.nest_level();
        s.fp_shift = st.fp_shift();
        s.bucket_count = st.bucket_count();
        s.item_count = st.size();
        s.capacity = st.capacity();
        s.table_length = st.table_bytes();
        s.table_offset = next_table_offset(at);
        at = end_after_table(s.table_offset, s.table_length);
        out.push_back(s);
    }
    return out;
}

// Total bytes of the serialized filter.
inline uint64_t serialized_size(const StagedFilter& f) {
    const std::vector<StageInfo> stages = stages_of(f);
    const StageInfo& last = stages.back();
    return end_after_table(last.table_offset, last.table_length);
}

// The header (with checksums filled in). Reads the whole table once for its checksum.
inline std::vector<unsigned char> header_bytes(const StagedFilter& f) {
    std::vector<StageInfo> stages = stages_of(f);
    const uint64_t n = stages.size();
    const bool any_semi_sorted =
        std::any_of(stages.begin(), stages.end(), [](const StageInfo& s) { return s.semi_sorted; });
    const bool any_nested = std::any_of(stages.begin(), stages.end(), [](const StageInfo& s) { return s.level != 0; });
    const uint32_t version = any_nested ? kVersion : any_semi_sorted ? kSemiSortedVersion : kPlainVersion;
    const uint64_t hlen = header_length_for(n);
    std::vector<unsigned char> h(static_cast<size_t>(hlen), 0);
    unsigned char* p = h.data();
    std::memcpy(p + v1::kMagicAt, kMagic, sizeof kMagic);
    put_le(p + v1::kVersionAt, version, 4);
    put_le(p + v1::kHeaderLengthAt, hlen, 4);
    put_le(p + v1::kFileLengthAt, serialized_size(f), 8);
    const bool expansion = f.growable() && f.expansion() != kDefaultExpansion;
    put_le(p + v1::kFlagsAt, (f.growable() ? kFlagGrowable : 0) | (expansion ? kFlagExpansion : 0), 4);
    if (expansion) put_le(p + v1::kExpansionAt, f.expansion(), 4);
    put_le(p + v1::kHashAt, static_cast<uint32_t>(f.first().hash_algorithm()), 4);
    put_le(p + v1::kSeedAt, f.first().seed(), 8);
    put_le(p + v1::kCapacityAt, f.first().capacity(), 8);
    put_le(p + v1::kMaxKicksAt, f.first().max_kicks(), 4);
    put_le(p + v1::kStageCountAt, n, 4);
    for (uint64_t i = 0; i < n; ++i) {
        StageInfo& s = stages[i];
        s.table_checksum = xxh64(f.stage(i).table().data(), static_cast<size_t>(s.table_length), kTableChecksumSeed);
        unsigned char* r = p + kFixedHeaderBytes + kStageRecordBytes * i;
        put_le(r + v1::kBucketSizeAt, s.bucket_size, 4);
        put_le(r + v1::kFingerprintBitsAt, s.fingerprint_bits, 4);
        put_le(r + v1::kBucketCountAt, s.bucket_count, 8);
        put_le(r + v1::kItemCountAt, s.item_count, 8);
        put_le(r + v1::kStageCapacityAt, s.capacity, 8);
        put_le(r + v1::kTableOffsetAt, s.table_offset, 8);
        put_le(r + v1::kTableLengthAt, s.table_length, 8);
        put_le(r + v1::kTableChecksumAt, s.table_checksum, 8);
        if (version >= 2) put_le(r + v1::kStageLayoutAt, s.semi_sorted ? v1::kLayoutSemiSorted : v1::kLayoutPlain, 4);
        if (version >= 3) put_le(r + v1::kStageLevelAt, s.level, 4);
    }
    const uint64_t sum = xxh64(p, static_cast<size_t>(hlen - kChecksumBytes), kHeaderChecksumSeed);
    put_le(p + hlen - kChecksumBytes, sum, 8);
    return h;
}

// Writes the serialized filter as a sequence of pieces: sink(const unsigned char*, size_t) is
// called in order, the pieces adding up to serialized_size(f) bytes. The table is handed to the
// sink straight from the filter's memory (no copy). The filter must not change meanwhile.
template <class Sink>
void write(const StagedFilter& f, Sink&& sink) {
    static const unsigned char zeros[kSectionAlignment + kTablePadding] = {};
    const std::vector<unsigned char> h = header_bytes(f);
    const std::vector<StageInfo> stages = stages_of(f);
    uint64_t at = h.size();
    sink(h.data(), h.size());
    for (size_t i = 0; i < stages.size(); ++i) {
        const StageInfo& s = stages[i];
        sink(zeros, static_cast<size_t>(s.table_offset - at));  // < 64 bytes: the gap is tiny
        sink(f.stage(i).table().data(), static_cast<size_t>(s.table_length));
        at = end_after_table(s.table_offset, s.table_length);
        sink(zeros, static_cast<size_t>(at - s.table_offset - s.table_length));
    }
}

// Writes the serialized filter into out[0, size); size must be serialized_size(f).
inline void write_into(const StagedFilter& f, unsigned char* out, size_t size) {
    if (size != serialized_size(f)) throw std::invalid_argument("write_into: buffer size is not serialized_size()");
    size_t at = 0;
    write(f, [&](const unsigned char* p, size_t n) {
        if (n) std::memcpy(out + at, p, n);
        at += n;
    });
}

inline std::vector<unsigned char> to_bytes(const StagedFilter& f) {
    std::vector<unsigned char> out(static_cast<size_t>(serialized_size(f)));
    write_into(f, out.data(), out.size());
    return out;
}

// ---- reading -------------------------------------------------------------------------------

namespace detail {

inline void check_zero(const unsigned char* data, uint64_t from, uint64_t to, const char* where) {
    for (uint64_t i = from; i < to; ++i)
        if (data[i] != 0)
            fail(std::string("corrupt data: byte ") + std::to_string(i) + " (" + where +
                 ") must be zero, it is " + std::to_string(data[i]));
}

inline void check_stage(const StageInfo& s, uint32_t i) {
    const std::string st = "stage " + std::to_string(i) + ": ";
    if (!valid_bucket_size(s.bucket_size))
        fail(st + "bucket size " + std::to_string(s.bucket_size) + " is invalid (must be 2, 4 or 8)");
    if (s.fingerprint_bits < kMinFingerprintBits || s.fingerprint_bits > kMaxFingerprintBits)
        fail(st + "fingerprint width " + std::to_string(s.fingerprint_bits) + " bits is invalid (must be 4..32)");
    if (s.bucket_count == 0 || s.bucket_count % kBlockBuckets != 0 || s.bucket_count > kMaxBucketCount)
        fail(st + "bucket count " + std::to_string(s.bucket_count) +
             " is invalid (must be a positive multiple of 8, at most 2^32)");
    if (s.semi_sorted && !semisort::supports(s.bucket_size, s.fingerprint_bits))
        fail(st + "semi-sorted buckets need 4 slots of 4..16 bits, not " + std::to_string(s.bucket_size) + " of " +
             std::to_string(s.fingerprint_bits));
    // Bounded: bucket_count <= 2^32, b <= 8, f <= 32, so slots <= 2^35 and bits <= 2^40.
    const uint64_t slots = s.bucket_count * s.bucket_size;
    const uint64_t expect =
        PackedTable::data_bytes_for(s.bucket_count, s.bucket_size, s.fingerprint_bits, s.semi_sorted);
    if (s.table_length != expect)
        fail(st + "table length " + std::to_string(s.table_length) + " does not match its parameters (" +
             std::to_string(s.bucket_count) + " buckets of " +
             std::to_string(PackedTable::bucket_bits_for(s.bucket_size, s.fingerprint_bits, s.semi_sorted)) +
             " bits" + (s.semi_sorted ? " (semi-sorted)" : "") + " = " + std::to_string(expect) + " bytes)");
    if (s.item_count > slots)
        fail(st + "item count " + std::to_string(s.item_count) + " exceeds its " + std::to_string(slots) + " slots");
    if (s.capacity == 0 || s.capacity > slots)
        fail(st + "capacity " + std::to_string(s.capacity) + " is invalid (must be 1.." + std::to_string(slots) + ")");
}

// A nested stage (level >= 1, version 3): the geometry its level gives on stage 0 (`base`,
// checked before), which the level's hashing needs; sets its fp_shift.
inline void check_nesting(StageInfo& s, const StageInfo& base, uint32_t i) {
    const std::string st = "stage " + std::to_string(i) + ": ";
    if (i == 0) fail(st + "nesting level " + std::to_string(s.level) + ": the first stage has level 0");
    if (s.level > 31 || (base.bucket_count << s.level) != s.bucket_count)
        fail(st + "nesting level " + std::to_string(s.level) + " needs " +
             (s.level > 31 ? std::string("a level of at most 31") : std::to_string(base.bucket_count << s.level) + " buckets") +
             ", it has " + std::to_string(s.bucket_count));
    const uint32_t e = std::min<uint32_t>(s.level, kMaxFingerprintBits - base.fingerprint_bits);
    if (s.bucket_size != base.bucket_size || s.fingerprint_bits != base.fingerprint_bits + e)
        fail(st + "nesting level " + std::to_string(s.level) + " needs " + std::to_string(base.bucket_size) +
             "-slot buckets of " + std::to_string(base.fingerprint_bits + e) + "-bit fingerprints, it has " +
             std::to_string(s.bucket_size) + " of " + std::to_string(s.fingerprint_bits));
    s.fp_shift = e;
}

// The header length field of version 1 (data holds the fixed header), checked to be one a header
// can have: at most 4,168 bytes.
inline uint64_t header_length_v1(const unsigned char* data) {
    const uint64_t hlen = get_le32(data + v1::kHeaderLengthAt);
    const uint64_t min_hlen = header_length_for(1), max_hlen = header_length_for(kMaxStages);
    if (hlen < min_hlen || hlen > max_hlen || (hlen - kFixedHeaderBytes - kChecksumBytes) % kStageRecordBytes != 0)
        fail("corrupt header: header length " + std::to_string(hlen) + " is not 72 + 64 x (1.." +
             std::to_string(kMaxStages) + " stages)");
    return hlen;
}

// Version 1. `data` has `size` bytes and starts with the magic and a version field of 1. With
// whole = false, `data` may hold just the header: the layout is checked against the file length
// the header declares, not against `size`, and nothing after the header is read.
// Versions 2 and 3 (`version`) differ only in the stage records' layout and level fields.
inline Header parse_v1(const unsigned char* data, size_t size, bool whole, uint32_t version = 1) {
    Header h;
    h.version = version;
    if (size < kFixedHeaderBytes)
        fail("truncated: " + std::to_string(size) + " bytes, shorter than the " + std::to_string(kFixedHeaderBytes) +
             "-byte fixed header");
    const uint64_t hlen = header_length_v1(data);
    if (size < hlen)
        fail("truncated: the header is " + std::to_string(hlen) + " bytes, only " + std::to_string(size) +
             " are present");
    // Copy the header first: every field below is read from this private copy, so a buffer that
    // changes meanwhile cannot make the checked and the used values differ.
    const std::vector<unsigned char> copy(data, data + hlen);
    const unsigned char* p = copy.data();
    const uint64_t stored = get_le64(p + hlen - kChecksumBytes);
    if (xxh64(p, static_cast<size_t>(hlen - kChecksumBytes), kHeaderChecksumSeed) != stored)
        fail("checksum mismatch in the header: the data is corrupt");

    h.header_length = static_cast<uint32_t>(hlen);
    h.file_length = get_le64(p + v1::kFileLengthAt);
    h.flags = get_le32(p + v1::kFlagsAt);
    h.hash_algorithm = get_le32(p + v1::kHashAt);
    h.seed = get_le64(p + v1::kSeedAt);
    h.capacity = get_le64(p + v1::kCapacityAt);
    h.max_kicks = get_le32(p + v1::kMaxKicksAt);
    const uint32_t n = get_le32(p + v1::kStageCountAt);
    if (h.flags & ~kKnownFlags)
        fail("unsupported flags " + std::to_string(h.flags) + " (this build knows bit 0 = growable, bit 1 = expansion)");
    if (h.flags & kFlagExpansion) {
        h.expansion = get_le32(p + v1::kExpansionAt);
        if (get_le32(p + v1::kReservedHighAt) != 0) fail("corrupt header: reserved field is not zero");
        if (!(h.flags & kFlagGrowable) || h.expansion < kMinExpansion || h.expansion > kMaxExpansion ||
            h.expansion == kDefaultExpansion)
            fail("corrupt header: expansion " + std::to_string(h.expansion) +
                 " (a growable filter's 1, 3 or 4; 2 is written without the flag)");
    } else if (get_le64(p + v1::kReservedAt) != 0) {
        fail("corrupt header: reserved field is not zero");
    }
    if (!valid_hash_algorithm(h.hash_algorithm))
        fail("unsupported hash algorithm " + std::to_string(h.hash_algorithm) + " (this build knows 1 = XXH64, 2 = XXH3)");
    if (header_length_for(n) != hlen)
        fail("corrupt header: " + std::to_string(n) + " stages need a header of " +
             std::to_string(header_length_for(n)) + " bytes, the header says " + std::to_string(hlen));
    if (h.max_kicks > kMaxMaxKicks)
        fail("invalid max_kicks " + std::to_string(h.max_kicks) + " (at most " + std::to_string(kMaxMaxKicks) + ")");
    h.max_kicks = std::min<uint32_t>(h.max_kicks, kMaxKicksLimit);
    if (h.capacity == 0) fail("invalid capacity 0");

    uint64_t end = hlen;  // end of the previous section
    for (uint32_t i = 0; i < n; ++i) {
        const unsigned char* r = p + kFixedHeaderBytes + kStageRecordBytes * i;
        StageInfo s;
        s.bucket_size = get_le32(r + v1::kBucketSizeAt);
        s.fingerprint_bits = get_le32(r + v1::kFingerprintBitsAt);
        s.bucket_count = get_le64(r + v1::kBucketCountAt);
        s.item_count = get_le64(r + v1::kItemCountAt);
        s.capacity = get_le64(r + v1::kStageCapacityAt);
        s.table_offset = get_le64(r + v1::kTableOffsetAt);
        s.table_length = get_le64(r + v1::kTableLengthAt);
        s.table_checksum = get_le64(r + v1::kTableChecksumAt);
        if (version == 1 ? get_le64(r + v1::kStageReservedAt) != 0
                         : version == 2 && get_le32(r + v1::kStageReserved2At) != 0)
            fail("corrupt header: reserved field of stage " + std::to_string(i) + " is not zero");
        if (version >= 3) s.level = get_le32(r + v1::kStageLevelAt);
        if (version >= 2) {
            const uint32_t layout = get_le32(r + v1::kStageLayoutAt);
            if (layout != v1::kLayoutPlain && layout != v1::kLayoutSemiSorted)
                fail("corrupt header: stage " + std::to_string(i) + " has bucket layout " + std::to_string(layout) +
                     " (this build knows 0 = plain, 1 = semi-sorted)");
            s.semi_sorted = layout == v1::kLayoutSemiSorted;
        }
        check_stage(s, i);
        if (s.level != 0) check_nesting(s, h.stages.empty() ? s : h.stages[0], i);
        // Lengths are now bounded (<= 2^37 bytes a table, <= 64 tables): no sum below overflows.
        const uint64_t offset = next_table_offset(end);
        if (s.table_offset != offset)
            fail("corrupt header: stage " + std::to_string(i) + " table offset " + std::to_string(s.table_offset) +
                 " is not " + std::to_string(offset) + " (the first 64-byte boundary after the previous section)");
        end = end_after_table(s.table_offset, s.table_length);
        h.stages.push_back(s);
    }
    if (h.file_length != end)
        fail("corrupt header: the file length field says " + std::to_string(h.file_length) +
             " bytes, the layout needs " + std::to_string(end));
    for (uint32_t i = 0; i < n && whole; ++i) {
        const StageInfo& s = h.stages[i];
        if (size < s.table_offset + s.table_length)
            fail("truncated: the header says stage " + std::to_string(i) + " has " + std::to_string(s.table_length) +
                 " bytes of table at offset " + std::to_string(s.table_offset) + ", " +
                 std::to_string(size > s.table_offset ? size - s.table_offset : 0) + " present");
    }
    if (whole && size < h.file_length)
        fail("truncated: the header says " + std::to_string(h.file_length) + " bytes, " + std::to_string(size) +
             " present (the padding after the last table is missing)");
    if (whole && size > h.file_length)
        fail("trailing data: the header says " + std::to_string(h.file_length) + " bytes, " + std::to_string(size) +
             " present");

    // Gaps: between the header and the first table, and after each table. All small.
    uint64_t at = hlen;
    for (const StageInfo& s : h.stages) {
        if (!whole) break;
        check_zero(data, at, s.table_offset, "padding before a table");
        at = end_after_table(s.table_offset, s.table_length);
        check_zero(data, s.table_offset + s.table_length, at, "padding after a table");
    }
    // Parameters that only make sense together.
    const bool growable = (h.flags & kFlagGrowable) != 0;
    if (!growable && n != 1)
        fail("corrupt header: a filter that is not growable has 1 stage, the header says " + std::to_string(n));
    if (h.capacity != h.stages[0].capacity)
        fail("corrupt header: capacity " + std::to_string(h.capacity) + " differs from the stage's " +
             std::to_string(h.stages[0].capacity));
    return h;
}

// The magic, on as many of its bytes as `size` holds (at least one).
inline void check_magic(const unsigned char* data, size_t size) {
    const size_t n = size < sizeof kMagic ? size : sizeof kMagic;
    if (std::memcmp(data, kMagic, n) != 0)
        fail("bad magic: not a serialized cuckoo filter (it starts with " + hex_prefix(data, n) +
             ", expected 43 55 43 4b 4f 4f 46 00 = \"CUCKOOF\\0\")");
}

}  // namespace detail

// Parses and validates the header of serialized data of `size` bytes: magic, version, header
// checksum, every parameter, the layout against `size` (exact length) and the zero padding. Reads
// only the header and the gap bytes, never a table. Version dispatch happens here. With
// whole = false, `data` need only hold the header (see parse_v1).
inline Header parse_header(const unsigned char* data, size_t size, bool whole = true) {
    if (size == 0) fail("truncated: no data (0 bytes)");
    detail::check_magic(data, size);
    if (size < v1::kVersionAt + 4)
        fail("truncated: " + std::to_string(size) + " bytes, too short to hold a format version");
    const uint32_t version = get_le32(data + v1::kVersionAt);
    switch (version) {
        case 1:
        case 2:
        case 3: return detail::parse_v1(data, size, whole, version);
        // A new version adds a case here and keeps every earlier one.
        default:
            fail("unsupported format version " + std::to_string(version) + " (this build reads " +
                 (kVersion == 1 ? std::string("1") : "1.." + std::to_string(kVersion)) + ")");
    }
}

// For reading from a stream (a pipe, a device: no size known beforehand) in bounded steps: the
// number of bytes the serialized filter starting with data[0, size) has in all, as far as these
// bytes tell. The caller reads until it holds that many and asks again, until the answer no longer
// grows: 64 (the fixed header), then the header length, then the file length. Each answer comes
// from checked fields only (the magic first, then the header length's range, the file length only
// once the whole header passed its checksum and every check of parse_header), so junk is refused
// after at most 64 bytes and no length is trusted before it is checked.
inline uint64_t bytes_needed(const unsigned char* data, size_t size) {
    if (size < kFixedHeaderBytes) {
        if (size > 0) detail::check_magic(data, size);
        return kFixedHeaderBytes;
    }
    detail::check_magic(data, size);
    const uint32_t version = get_le32(data + v1::kVersionAt);
    if (version >= 1 && version <= kVersion) {
        const uint64_t hlen = detail::header_length_v1(data);
        if (size < hlen) return hlen;
    }
    return parse_header(data, size, false).file_length;
}

// Non-zero slots of a packed table, in one sequential sweep: each step reads the L = 64 / f
// whole slots that follow (an unaligned 8-byte load plus one byte, like the table's own loads) and
// flags their zero lanes with the SWAR zero-lane test. The flags are summed lane-wise in a word
// (no popcount instruction needed) and folded every 2^min(f, 8) - 1 steps, before a lane could
// overflow. Several times faster than asking every bucket (Filter::count_occupied), which matters
// when verifying a table of a gigabyte.
// Semi-sorted tables are decoded bucket by bucket, and a bucket whose nibble code is not one that
// is ever written (3876..4095) makes the table corrupt.
inline uint64_t count_nonzero_slots_semi_sorted(const PackedTable& t) {
    const TableProbe probe = t.probe();
    uint64_t nonzero = 0;
    for (uint64_t i = 0; i < t.bucket_count(); ++i) {
        const uint64_t bit = probe.bit_of(i);
        const uint32_t code = static_cast<uint32_t>(load_le64(t.data() + (bit >> 3)) >> (bit & 7)) & (semisort::kCodeSpace - 1);
        if (!semisort::valid_code(code))
            fail("corrupt data: semi-sorted bucket " + std::to_string(i) + " holds the invalid code " + std::to_string(code));
        nonzero += semisort::kSlots - popcount64(probe.zero_lanes(probe.semi_word(bit)));
    }
    return nonzero;
}

inline uint64_t count_nonzero_slots(const PackedTable& t) {
    if (t.semi_sorted()) return count_nonzero_slots_semi_sorted(t);
    const unsigned f = t.fingerprint_bits();
    const unsigned lanes = 64 / f;
    uint64_t ones = 0;
    for (unsigned l = 0; l < lanes; ++l) ones |= uint64_t(1) << (l * f);
    const uint64_t high = ones << (f - 1);
    const uint64_t low = ones * ((uint64_t(1) << (f - 1)) - 1);
    const uint64_t mask = lanes * f >= 64 ? ~uint64_t(0) : (uint64_t(1) << (lanes * f)) - 1;
    const uint64_t lane_mask = (uint64_t(1) << f) - 1;
    const uint64_t fold_every = (uint64_t(1) << (f < 8 ? f : 8)) - 1;
    const unsigned char* data = t.data();
    const uint64_t slots = t.slot_count();
    const uint64_t steps = slots / lanes;
    uint64_t zero = 0;
    uint64_t bit = 0;
    for (uint64_t step = 0; step < steps;) {
        const uint64_t stop = steps - step < fold_every ? steps : step + fold_every;
        uint64_t acc = 0;
        for (; step < stop; ++step, bit += lanes * f) {
            const unsigned char* p = data + (bit >> 3);
            const unsigned sh = bit & 7;
            // Reads at most 9 bytes from the first slot's byte: within the table's padding.
            const uint64_t x = ((load_le64(p) >> sh) | ((uint64_t(p[8]) << 1) << (63 - sh))) & mask;
            acc += (~(((x & low) + low) | x | low) & high) >> (f - 1);
        }
        for (unsigned l = 0; l < lanes; ++l) zero += (acc >> (l * f)) & lane_mask;
    }
    const uint64_t full = steps * lanes;
    uint64_t nonzero = full - zero;
    for (uint64_t k = full; k < slots; ++k)
        nonzero += t.get(k / t.bucket_size(), static_cast<unsigned>(k % t.bucket_size())) != 0;
    return nonzero;
}

// Whether a table holds the number of items its header says.
inline void check_item_count(const PackedTable& t, uint64_t item_count) {
    const uint64_t occupied = count_nonzero_slots(t);
    if (occupied != item_count)
        fail("inconsistent data: the header says " + std::to_string(item_count) + " items, the table holds " +
             std::to_string(occupied));
}

// Whether stage `s` of a verified header matches its table: checksum and item count.
inline void verify_table(const Filter& f, const StageInfo& s, uint32_t i) {
    if (xxh64(f.table().data(), static_cast<size_t>(s.table_length), kTableChecksumSeed) != s.table_checksum)
        fail("checksum mismatch in the table of stage " + std::to_string(i) + ": the data is corrupt");
    check_item_count(f.table(), s.item_count);
}

// Whether every stage of a filter holds the items it counts. For a view opened without
// verification (its counts come from a header that was never checked against the tables) before
// it is copied or written out: a mismatch is reported, not carried into a new table or a file
// with fresh checksums.
inline void check_item_counts(const StagedFilter& f) {
    for (const Filter& st : f.stages()) check_item_count(st.table(), st.size());
}

namespace detail {
inline Filter build(const Header& h, PackedTable table, const StageInfo& s) {
    try {
        return Filter::from_parts(std::move(table), h.max_kicks, h.seed, static_cast<HashAlgorithm>(h.hash_algorithm),
                                  s.capacity, s.item_count, s.level, s.fp_shift);
    } catch (const std::invalid_argument& e) {  // unreachable after parse_header: kept as a guard
        fail(std::string("invalid parameters: ") + e.what());
    }
}
}  // namespace detail

// A filter with its own copy of every table. Each table is verified (checksum and item count)
// always; the check runs on the copy, so the source may change meanwhile without harm.
inline StagedFilter from_bytes(const unsigned char* data, size_t size) {
    const Header h = parse_header(data, size);
    std::vector<Filter> stages;
    for (uint32_t i = 0; i < h.stages.size(); ++i) {
        const StageInfo& s = h.stages[i];
        PackedTable table(s.bucket_count, s.bucket_size, s.fingerprint_bits, s.semi_sorted);
        std::memcpy(table.mutable_data(), data + s.table_offset, static_cast<size_t>(s.table_length));
        stages.push_back(detail::build(h, std::move(table), s));
        verify_table(stages.back(), s, i);
    }
    return StagedFilter(std::move(stages), (h.flags & kFlagGrowable) != 0, h.expansion);
}

// A read-only filter whose tables are views of data[table_offset, ...): nothing is copied, and
// `data` must outlive the filter (and every filter sharing its tables). With verify = false only
// the header and the padding are read (O(1) pages of a mapped file); with verify = true the table
// checksums and item counts are checked too (reads every table).
inline StagedFilter view_bytes(const unsigned char* data, size_t size, bool verify) {
    const Header h = parse_header(data, size);
    std::vector<Filter> stages;
    for (uint32_t i = 0; i < h.stages.size(); ++i) {
        const StageInfo& s = h.stages[i];
        // parse_header guarantees table_offset + table_length + kTablePadding <= size.
        PackedTable table = PackedTable::view(s.bucket_count, s.bucket_size, s.fingerprint_bits, s.semi_sorted,
                                              data + s.table_offset,
                                              static_cast<size_t>(s.table_length + kTablePadding));
        stages.push_back(detail::build(h, std::move(table), s));
        if (verify) verify_table(stages.back(), s, i);
    }
    return StagedFilter(std::move(stages), (h.flags & kFlagGrowable) != 0, h.expansion);
}

// ---- reading a stream ----------------------------------------------------------------------
//
// For sources read front to back in bounded steps (a file object, a pipe, an object store):
// read(dst, n) copies up to n bytes of the source into dst and returns how many, 0 only at its
// end. The header is read and checked first (exactly as bytes_needed asks: 64 bytes, then the
// header length, nothing trusted before it is checked); then each table is read straight into
// the new filter's memory and every gap byte checked zero. Nothing is read past the file length
// the header declares, so a stream may go on after the filter. The tables are verified
// (checksum, item count) by from_stream_tables, which needs no source (a caller may run it
// without locks the reads need).
template <class Read>
class StreamReader {
public:
    explicit StreamReader(Read& read) : read_(read) {}

    // Fills dst[0, n); returns how many bytes the source had (< n only at its end).
    uint64_t some(unsigned char* dst, uint64_t n) {
        uint64_t done = 0;
        while (done < n) {
            const uint64_t got = read_(dst + done, n - done);
            if (got == 0) break;
            if (got > n - done) fail("the source returned more bytes than were asked for");
            done += got;
        }
        at_ += done;
        return done;
    }
    void exactly(unsigned char* dst, uint64_t n, uint64_t file_length) {
        const uint64_t start = at_;
        if (some(dst, n) != n)
            fail("truncated: the data ends after " + std::to_string(at_) + " bytes, the header says " +
                 std::to_string(file_length) + " (reading bytes " + std::to_string(start) + ".." +
                 std::to_string(start + n) + ")");
    }
    uint64_t position() const { return at_; }

private:
    Read& read_;
    uint64_t at_ = 0;
};

// The header of a stream, checked (parse_header on the header alone); `bytes` receives its bytes.
template <class Read>
Header read_stream_header(StreamReader<Read>& in, std::vector<unsigned char>& bytes) {
    bytes.assign(kFixedHeaderBytes, 0);
    const uint64_t got = in.some(bytes.data(), kFixedHeaderBytes);
    if (got == 0) fail("truncated: no data (0 bytes)");
    uint64_t need = bytes_needed(bytes.data(), static_cast<size_t>(got));  // the magic, at least
    if (got < kFixedHeaderBytes)
        fail("truncated: " + std::to_string(got) + " bytes, shorter than the " + std::to_string(kFixedHeaderBytes) +
             "-byte fixed header");
    if (need > kFixedHeaderBytes) {  // the header length, checked by bytes_needed (<= 4,168 bytes)
        bytes.resize(static_cast<size_t>(need));
        const uint64_t more = in.some(bytes.data() + kFixedHeaderBytes, need - kFixedHeaderBytes);
        if (more < need - kFixedHeaderBytes)
            fail("truncated: the header is " + std::to_string(need) + " bytes, only " +
                 std::to_string(kFixedHeaderBytes + more) + " are present");
    }
    return parse_header(bytes.data(), bytes.size(), false);
}

// The tables of a stream whose header `h` was just read, each straight into its own memory;
// the gaps are checked zero. Not yet verified: see from_stream_tables.
template <class Read>
std::vector<PackedTable> read_stream_tables(StreamReader<Read>& in, const Header& h) {
    std::vector<PackedTable> tables;
    unsigned char gap[kSectionAlignment + kTablePadding];
    auto read_gap = [&](uint64_t n, const char* where) {  // < 64 + kTablePadding bytes: tiny
        const uint64_t from = in.position();
        in.exactly(gap, n, h.file_length);
        for (uint64_t i = 0; i < n; ++i)
            if (gap[i] != 0)
                fail(std::string("corrupt data: byte ") + std::to_string(from + i) + " (" + where +
                     ") must be zero, it is " + std::to_string(gap[i]));
    };
    for (const StageInfo& s : h.stages) {
        read_gap(s.table_offset - in.position(), "padding before a table");
        PackedTable table(s.bucket_count, s.bucket_size, s.fingerprint_bits, s.semi_sorted);
        in.exactly(table.mutable_data(), s.table_length, h.file_length);
        read_gap(end_after_table(s.table_offset, s.table_length) - in.position(), "padding after a table");
        tables.push_back(std::move(table));
    }
    return tables;
}

// The filter of a stream's header and tables, every table verified (checksum, item count).
inline StagedFilter from_stream_tables(const Header& h, std::vector<PackedTable> tables) {
    std::vector<Filter> stages;
    for (uint32_t i = 0; i < h.stages.size(); ++i) {
        stages.push_back(detail::build(h, std::move(tables[i]), h.stages[i]));
        verify_table(stages.back(), h.stages[i], i);
    }
    return StagedFilter(std::move(stages), (h.flags & kFlagGrowable) != 0, h.expansion);
}

}  // namespace format
}  // namespace cuckoo
