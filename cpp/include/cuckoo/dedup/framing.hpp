// Record framings of the dedup pipeline: how a block of input becomes records and their keys.
//
// - lines (the default): a record ends at '\n'; its key is the record without the '\n' and one
//   '\r' before it (dedup/block.hpp handles lines itself, without this file's per-record calls).
//   With record_end 0 (`-z`, as `sort -z` and `uniq -z`), a record ends at a NUL byte instead
//   and its key is the record without the NUL ('\r' is then data like any other byte);
// - fields (`-t SEP -k N[,M]`): records are lines; the key is fields N through M, split at every
//   SEP byte, separators between them included (dedup/csv.hpp, FieldKeySpec::field_range);
// - csv (`--csv -k COLUMN[,COLUMN...]`): RFC 4180 records, which end at a '\n' outside quotes;
//   the key is the unquoted content of the columns (dedup/csv.hpp). The header is read by the
//   caller before the pipeline starts (each input's first record: Input::prefix holds what
//   follows it), so the pipeline sees data records only;
// - jsonl (`--jsonl -k a.b`): records are lines; the key is the canonical JSON text of the value
//   at a member path (dedup/json_key.hpp).
//
// A record that cannot be keyed (not valid CSV or JSON, or without its key field) ends the run
// after the records before it: frame_records stops there and says why (FrameStop). Adding a
// framing means a kind here and its case in frame_records and record_end_before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuckoo/dedup/csv.hpp"
#include "cuckoo/dedup/json_key.hpp"
#include "cuckoo/dedup/key_status.hpp"

namespace cuckoo {
namespace dedup {

enum class FramingKind : uint8_t { lines, fields, csv, jsonl };

struct Framing {
    FramingKind kind = FramingKind::lines;
    FieldKeySpec fields;  // fields (mode field_range) and csv (mode csv_columns)
    JsonPath json;        // jsonl
    // The byte that ends a record of whole lines: '\n', or 0 (`-z`). The keyed framings' records
    // end at '\n' (a framing given another is refused by the binding).
    unsigned char record_end = '\n';
    bool keyed() const noexcept { return kind != FramingKind::lines; }
    // Records may hold '\n' (inside quotes): their ends are not every newline.
    bool quoted() const noexcept { return kind == FramingKind::csv; }
};

// Where a record's key lies in its block's key buffer (KeyScratch::keys). Every key of a keyed
// block is copied there, also one that lies whole in its record (a CSV field without quotes):
// the hashing reads keys 32 bytes at a time and must know where the readable bytes end, which it
// can only for one buffer; and the copy (a few dozen bytes a record) is cheap next to framing.
// Offsets, not pointers: the buffer may move while the block's keys are collected.
struct KeyRef {
    uint64_t off = 0;
    uint64_t len = 0;
};

// Why frame_records stopped before the end of the block.
struct FrameStop {
    bool stopped = false;
    KeyStatus why = KeyStatus::found;  // missing or invalid
    size_t record = 0;                 // the record it stopped at (index in the block)
    std::string message;
};

// One past the last record end in p[0, n) (p[0] starts a record), or 0 when there is none yet;
// `cut` carries the scan from one call to the next over a growing buffer (a record longer than a
// block: the pipeline reads more and asks again).
// `ends` (quoted framings only, else unused): where to list every record end found, as
// csv_scan_ends does.
inline size_t record_end_before(const Framing& f, const unsigned char* p, size_t n, CsvCut& cut,
                                uint64_t* ends = nullptr) noexcept {
    if (f.quoted()) {
        if (ends)
            csv_scan_ends(p, n, f.fields.quote, cut, ends, f.fields.delimiter);
        else
            csv_scan(p, n, f.fields.quote, cut, f.fields.delimiter);
        return cut.last_end;
    }
    for (size_t i = n; i > cut.searched; --i) {
        if (p[i - 1] == f.record_end) {
            cut.last_end = i;
            break;
        }
    }
    cut.searched = n;
    return cut.last_end;
}

// Per-block state of the key extraction (kept with the block, reused from block to block).
struct KeyScratch {
    std::string keys;   // the keys of the block's records, one after the other (KeyRef)
    std::string error;  // the message of a record that cannot be keyed
    JsonKeyReader json;  // (its stack and tree, kept from record to record)
};

// Frames the records whose ends are ends[0, count) (one past each record's '\n') in p, the
// first of them starting at p[begin]: fills refs[j] with record j's key; stops at the first
// record without a key (stop.record, stop.why, stop.message) and returns how many records before
// it have their keys (count when none stopped).
inline size_t frame_records(const Framing& f, const unsigned char* p, size_t begin, const uint64_t* ends,
                            size_t count, KeyRef* refs, KeyScratch& scratch, FrameStop& stop) {
    scratch.keys.clear();
    size_t start = begin;
    for (size_t j = 0; j < count; ++j) {
        const size_t end = static_cast<size_t>(ends[j]) - 1;  // the record's '\n'
        size_t len = end - start;
        KeyStatus status;
        const size_t at = scratch.keys.size();
        if (f.kind == FramingKind::jsonl) {
            if (len && p[start + len - 1] == '\r') --len;
            status = scratch.json.read(p + start, len, f.json, scratch.keys, scratch.error);
        } else {
            const unsigned char* key = nullptr;
            size_t key_len = 0;
            status = field_key(p + start, len, f.fields, scratch.keys, key, key_len, scratch.error);
            // field_key points into the record (nothing copied) or at what it appended to keys.
            if (status == KeyStatus::found && scratch.keys.size() == at)
                scratch.keys.append(reinterpret_cast<const char*>(key), key_len);
        }
        refs[j] = KeyRef{at, scratch.keys.size() - at};
        if (status != KeyStatus::found) {
            stop.stopped = true;
            stop.why = status;
            stop.record = j;
            stop.message = status == KeyStatus::missing ? std::string() : scratch.error;
            return j;
        }
        start = static_cast<size_t>(ends[j]);
    }
    return count;
}

}  // namespace dedup
}  // namespace cuckoo
