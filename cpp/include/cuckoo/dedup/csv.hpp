// CSV and delimited-field records for the dedup pipeline: where records end (csv_scan,
// csv_record_ends) and the key of one record (field_key, csv_fields). Self-contained: no
// dependency on the pipeline, no Python.
//
// The model is Python's csv.reader(..., strict=True) with doublequote on (which reads what RFC
// 4180 writes). Where the two differ, or the RFC says nothing, the choices are:
//   - A quote inside an unquoted field (a"b, 5'10") is an ordinary byte, as Python reads it (RFC
//     4180 forbids it; real files have it). Only a quote at the start of a field opens quoting.
//   - After a closing quote comes the delimiter, a doubled quote or the end of the record;
//     anything else is invalid, as in Python's strict mode ("a"b).
//   - A record ends at a '\n' outside quotes; the '\r's just before it belong to the line end
//     (CRLF, and "\r\r\n" as Python reads it: one line end). field_key and csv_fields strip them
//     themselves: callers pass the record without its '\n' and may leave the '\r's. Any other
//     '\r' (or '\n') outside quotes is invalid (Python: "new-line character seen in unquoted
//     field"). Inside quotes '\r' and '\n' are content.
//   - A quoted field not closed by the end of the record (the last record of the input) is
//     invalid, as in Python strict mode ("unexpected end of data").
//   - An empty record (an empty line, or "\r") has no fields: every key is missing (Python yields
//     [] for it). A record with one empty field is written "" (quoted).
//   - Fields have no size limit (Python's field_size_limit is 128 KiB by default).
//   - Bytes are never decoded: any byte other than the delimiter, the quote, '\r' and '\n' is
//     content, NUL included.
//   - quote == 0 switches quoting off: every '\n' ends a record (the delimited-field framing).
//
// Keys: one column is the field's unquoted bytes exactly; several columns are each field's
// length as a LEB128 varint followed by its bytes, so ("a,b","c") and ("a","b,c") differ.
// field_range (cuckoo dedup -t SEP -k N,M) follows FieldFraming in python/cuckoo/_dedup/records.py:
// split at every delimiter, no quoting, the key runs from the start of field `first` to the end of
// field `last` (delimiters between included), or to the end of the line when the line has fewer
// fields than last+1; missing when it has fewer than first+1. An empty line has one empty field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuckoo/cpu.hpp"
#include "cuckoo/dedup/key_status.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace cuckoo {
namespace dedup {

// The length of a UTF-8 byte order mark at p (3) or 0: a BOM at the start of a file is not part
// of the first column's name.
inline size_t bom_length(const unsigned char* p, size_t n) noexcept {
    return n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF ? 3 : 0;
}

namespace csv_detail {

// The reader's state before a byte (Python's reader has the same four, under other names).
enum State : uint8_t {
    field_start = 0,      // at the start of a field: a quote opens quoting
    unquoted = 1,         // inside an unquoted field: a quote is content
    quoted = 2,           // inside a quoted field
    quote_in_quoted = 3,  // just after a quote that closed (or half-doubled) a quoted field
};

// One byte of the state machine; true when c ends a record. After a closing quote, a byte other
// than delimiter, quote or '\n' is invalid; for finding record ends it continues as an unquoted
// field (what Python's non-strict reader does), so that the record still ends at its '\n' and
// field_key reports it.
inline bool step(uint8_t& s, unsigned char c, unsigned char delim, unsigned char quote) noexcept {
    switch (s) {
        case field_start:
            if (c == quote) s = quoted;
            else if (c == '\n') return true;
            else if (c != delim) s = unquoted;
            return false;
        case unquoted:
            if (c == '\n') {
                s = field_start;
                return true;
            }
            if (c == delim) s = field_start;
            return false;
        case quoted:
            if (c == quote) s = quote_in_quoted;
            return false;
        default:  // quote_in_quoted
            if (c == quote) s = quoted;
            else if (c == delim) s = field_start;
            else if (c == '\n') {
                s = field_start;
                return true;
            } else s = unquoted;
            return false;
    }
}

// Prefix XOR: bit i of the result is the XOR of bits 0..i of x (the quote parity up to a byte).
inline uint64_t prefix_xor(uint64_t x) noexcept {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

// Scans p[from, n) from state s, calling sink.end(e) with one past each record-ending '\n', or
// sink.mask(base, m) for a 64-byte window at p[base - 1, base + 63) whose record ends are the
// set bits of m (bit k: end base + k). `vector` picks the SSE2 path where there is one.
//
// The vector path computes the quote state of 64 bytes at once by quote parity (prefix XOR).
// Parity matches the state machine as long as every quote that parity reads as opening is one
// the machine reads as opening: at the start of a field (after a delimiter or '\n', or at the
// record's start) or right after a closing quote (a doubled quote). A window with any other
// opening quote (a quote inside an unquoted field, or after "a"b) is rescanned by step(); the
// windows before it agree with the machine, so the state entering it is exact.
template <class Sink>
inline void scan(const unsigned char* p, size_t from, size_t n, unsigned char delim, unsigned char quote, uint8_t& s,
                 bool vector, Sink& sink) noexcept {
    size_t i = from;
#if defined(__SSE2__)
    if (vector) {
        const __m128i vq = _mm_set1_epi8(static_cast<char>(quote));
        const __m128i vn = _mm_set1_epi8('\n');
        const __m128i vd = _mm_set1_epi8(static_cast<char>(delim));
        auto bits = [&](size_t at, __m128i v) {
            return static_cast<uint64_t>(static_cast<unsigned>(
                _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at)), v))));
        };
        auto mask64 = [&](size_t at, __m128i v) {
            return bits(at, v) | bits(at + 16, v) << 16 | bits(at + 32, v) << 32 | bits(at + 48, v) << 48;
        };
        for (; i + 64 <= n; i += 64) {
            const uint64_t q = mask64(i, vq);
            const uint64_t nl = mask64(i, vn);
            const uint64_t in0 = s == quoted ? 1 : 0;
            const uint64_t after = prefix_xor(q) ^ (in0 ? ~uint64_t(0) : 0);  // inside quotes after byte k
            const uint64_t before = after << 1 | in0;                         // ... before byte k
            const uint64_t opens = q & ~before;
            if (opens) {
                const uint64_t d = mask64(i, vd);
                const uint64_t start_ok = (s == field_start || s == quote_in_quoted) ? 1 : 0;
                const uint64_t allowed = (d | nl | q) << 1 | start_ok;
                if (opens & ~allowed) {  // parity and the machine part here: byte by byte
                    for (size_t k = i; k < i + 64; ++k)
                        if (step(s, p[k], delim, quote)) sink.end(k + 1);
                    continue;
                }
            }
            sink.mask(i + 1, nl & ~before);
            if (after >> 63) {
                s = quoted;
            } else {
                const unsigned char c = p[i + 63];
                s = c == delim || c == '\n' ? field_start : c == quote ? quote_in_quoted : unquoted;
            }
        }
    }
#else
    (void)vector;
#endif
    for (; i < n; ++i)
        if (step(s, p[i], delim, quote)) sink.end(i + 1);
}

// Every '\n' ends a record (quoting off).
template <class Sink>
inline void scan_newlines(const unsigned char* p, size_t from, size_t n, Sink& sink) noexcept {
    for (size_t i = from; i < n;) {
        const void* hit = std::memchr(p + i, '\n', n - i);
        if (!hit) break;
        i = static_cast<size_t>(static_cast<const unsigned char*>(hit) - p) + 1;
        sink.end(i);
    }
}

// The vector paths run unless the kernel level is forced to portable (CUCKOO_CPU=portable, or
// the tests' per-level runs), so that the portable path is exercised on x86 too.
inline bool use_vector() noexcept { return cpu_level() != CpuLevel::portable; }

struct EndsSink {
    uint64_t* ends;
    size_t count = 0;
    void end(size_t e) noexcept { ends[count++] = e; }
    // As newline_ends (dedup.hpp): the first four ends of a window are written unconditionally
    // (entries past the last are overwritten later), so records of 16-70 bytes cost no branch.
    void mask(size_t base, uint64_t m) noexcept {
        constexpr uint64_t top = uint64_t(1) << 63;
        uint64_t* w = ends + count;
        for (unsigned k = 0; k < 4; ++k) {
            w[k] = base + static_cast<uint64_t>(__builtin_ctzll(m | top));
            count += m != 0;
            m &= m - 1;
        }
        while (m) {
            ends[count++] = base + static_cast<uint64_t>(__builtin_ctzll(m));
            m &= m - 1;
        }
    }
};

struct LastSink {
    size_t last = 0;
    void end(size_t e) noexcept { last = e; }
    void mask(size_t base, uint64_t m) noexcept {
        if (m) last = base + 63 - static_cast<size_t>(__builtin_clzll(m));
    }
};

}  // namespace csv_detail

// Where records end. A record ends at a '\n' outside quotes (CSV) or at every '\n' (quote == 0:
// quoting off). Incremental: the pipeline reads a block, looks for the last record end, and if
// there is none (a record longer than the block) reads more and looks again from where it
// stopped.
struct CsvCut {
    size_t searched = 0;     // p[0, searched) was scanned
    bool in_quotes = false;  // the quote state at `searched`
    size_t last_end = 0;     // one past the last record-ending '\n' in p[0, searched) (0: none yet)
    // The full reader state at `searched` (csv_detail::State): in_quotes alone cannot tell a
    // quote that closed a field (a quote next reopens it: "") from one inside an unquoted field.
    uint8_t state = csv_detail::field_start;
    size_t end_count = 0;  // csv_scan_ends: the record ends written to its `ends` so far
};

namespace csv_detail {
// Scans p[cut.searched, n) into sink and moves cut on (csv_scan, csv_scan_ends).
template <class Sink>
inline void scan_cut(const unsigned char* p, size_t n, unsigned char quote, CsvCut& cut, unsigned char delimiter,
                     Sink& sink) noexcept {
    if (quote == 0)
        scan_newlines(p, cut.searched, n, sink);
    else
        scan(p, cut.searched, n, delimiter, quote, cut.state, use_vector(), sink);
    cut.searched = n;
    cut.in_quotes = cut.state == quoted;
}
}  // namespace csv_detail

// p[0] is the start of a record; scans p[cut.searched, n) and updates cut. The delimiter matters
// only to tell where a field starts (a quote opens quoting only there); ',' by default.
inline void csv_scan(const unsigned char* p, size_t n, unsigned char quote, CsvCut& cut,
                     unsigned char delimiter = ',') noexcept {
    if (cut.searched >= n) return;
    csv_detail::LastSink sink;
    csv_detail::scan_cut(p, n, quote, cut, delimiter, sink);
    if (sink.last) cut.last_end = sink.last;
}

// csv_scan that also writes one past each record end it finds to ends[cut.end_count, ...) (room
// for n + 8 entries in all, as newline_ends needs), so that the pipeline's read, which must find
// where a block's records end anyway, lists them too: split_records then takes the list instead
// of scanning the block a second time (that second scan was 7.8% of a 2-thread keyed CSV run's
// samples, all on the producer, the serial side).
inline void csv_scan_ends(const unsigned char* p, size_t n, unsigned char quote, CsvCut& cut, uint64_t* ends,
                          unsigned char delimiter = ',') noexcept {
    if (cut.searched >= n) return;
    csv_detail::EndsSink sink{ends, cut.end_count};
    csv_detail::scan_cut(p, n, quote, cut, delimiter, sink);
    cut.end_count = sink.count;
    if (sink.count) cut.last_end = static_cast<size_t>(ends[sink.count - 1]);
}

// Writes one past each record-ending '\n' of p[0, n) to ends (room for n + 8 entries, as
// newline_ends needs), returns how many. p[0] starts a record.
inline size_t csv_record_ends(const unsigned char* p, size_t n, unsigned char quote, uint64_t* ends,
                              unsigned char delimiter = ',') noexcept {
    CsvCut cut;
    csv_scan_ends(p, n, quote, cut, ends, delimiter);
    return cut.end_count;
}

// The same with the path chosen by the caller (the tests compare the two); quote must be
// non-zero here.
inline size_t csv_record_ends_path(const unsigned char* p, size_t n, unsigned char quote, uint64_t* ends,
                                   unsigned char delimiter, bool vector) noexcept {
    csv_detail::EndsSink sink{ends};
    uint8_t s = csv_detail::field_start;
    csv_detail::scan(p, 0, n, delimiter, quote, s, vector, sink);
    return sink.count;
}

struct FieldKeySpec {
    enum Mode : uint8_t { csv_columns, field_range } mode = csv_columns;
    unsigned char delimiter = ',';
    unsigned char quote = '"';      // csv_columns only
    std::vector<uint32_t> columns;  // csv_columns: 0-based, in key order (one or more)
    uint32_t first = 0, last = 0;   // field_range: 0-based fields first..last, separators included
};

namespace csv_detail {

// The first index in [i, n) holding a or b, or n.
inline size_t find2(const unsigned char* p, size_t i, size_t n, unsigned char a, unsigned char b) noexcept {
#if defined(__SSE2__)
    const __m128i va = _mm_set1_epi8(static_cast<char>(a)), vb = _mm_set1_epi8(static_cast<char>(b));
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(x, vb))));
        if (m) return i + static_cast<size_t>(__builtin_ctz(m));
    }
#endif
    for (; i < n; ++i)
        if (p[i] == a || p[i] == b) return i;
    return n;
}

// The first index in [i, n) holding a, b or c, or n.
inline size_t find3(const unsigned char* p, size_t i, size_t n, unsigned char a, unsigned char b,
                    unsigned char c) noexcept {
#if defined(__SSE2__)
    const __m128i va = _mm_set1_epi8(static_cast<char>(a)), vb = _mm_set1_epi8(static_cast<char>(b)),
                  vc = _mm_set1_epi8(static_cast<char>(c));
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        const __m128i e = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, va), _mm_cmpeq_epi8(x, vb)), _mm_cmpeq_epi8(x, vc));
        const unsigned m = static_cast<unsigned>(_mm_movemask_epi8(e));
        if (m) return i + static_cast<size_t>(__builtin_ctz(m));
    }
#endif
    for (; i < n; ++i)
        if (p[i] == a || p[i] == b || p[i] == c) return i;
    return n;
}

// One field of a record: its content p[begin, end), and whether it holds doubled quotes (then
// the key is that content with each pair made one quote).
struct Field {
    size_t begin, end;
    bool doubled;
};

inline std::string bare_cr_error() { return "not valid CSV: a '\\r' or '\\n' outside a quoted field (not the line end)"; }
inline std::string quote_error(unsigned char quote, unsigned char delim) {
    std::string e = "not valid CSV: '";
    e += static_cast<char>(quote);
    e += "' inside a quoted field must be doubled or followed by '";
    e += static_cast<char>(delim);
    e += "'";
    return e;
}
inline std::string not_closed_error() { return "not valid CSV: a quoted field is not closed"; }

// Parses the whole record p[0, n) (its line end already cut off), calling on_field(index, field)
// for each field; returns false with `error` set if it is not valid CSV. An empty record has no
// fields. Every field is parsed even after the caller has what it needs: a record is valid or
// not as a whole, as Python's reader sees it.
template <class OnField>
inline bool parse(const unsigned char* p, size_t n, unsigned char delim, unsigned char quote, OnField&& on_field,
                  std::string& error) {
    if (n == 0) return true;
    size_t i = 0;
    for (uint32_t index = 0;; ++index) {
        if (i < n && p[i] == quote) {
            const size_t begin = i + 1;
            bool doubled = false;
            size_t j = begin;
            for (;;) {
                const void* hit = std::memchr(p + j, quote, n - j);
                if (!hit) {
                    error = not_closed_error();
                    return false;
                }
                j = static_cast<size_t>(static_cast<const unsigned char*>(hit) - p);
                if (j + 1 < n && p[j + 1] == quote) {  // a doubled quote: content
                    doubled = true;
                    j += 2;
                    continue;
                }
                break;
            }
            on_field(index, Field{begin, j, doubled});
            i = j + 1;  // past the closing quote
            if (i == n) return true;
            if (p[i] != delim) {
                error = p[i] == '\r' || p[i] == '\n' ? bare_cr_error() : quote_error(quote, delim);
                return false;
            }
            ++i;
        } else {
            const size_t end = find3(p, i, n, delim, '\r', '\n');
            if (end < n && p[end] != delim) {
                error = bare_cr_error();
                return false;
            }
            on_field(index, Field{i, end, false});
            if (end == n) return true;
            i = end + 1;
        }
    }
}

// The content of a field with doubled quotes made single, appended to out.
inline void unescape(const unsigned char* p, const Field& f, unsigned char quote, std::string& out) {
    if (!f.doubled) {
        out.append(reinterpret_cast<const char*>(p + f.begin), f.end - f.begin);
        return;
    }
    for (size_t i = f.begin; i < f.end; ++i) {
        out.push_back(static_cast<char>(p[i]));
        if (p[i] == quote) ++i;  // the second of the pair
    }
}

inline size_t unescaped_length(const unsigned char* p, const Field& f, unsigned char quote) noexcept {
    if (!f.doubled) return f.end - f.begin;
    size_t len = 0;
    for (size_t i = f.begin; i < f.end; ++i, ++len)
        if (p[i] == quote) ++i;
    return len;
}

inline void put_varint(uint64_t v, std::string& out) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7F) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

// A CSV record's line end: every '\r' before the '\n' (Python's csv reads "\r\r\n" as one line
// end). Delimited fields (field_range) strip one '\r' only, as FieldFraming does.
inline size_t strip_crs(const unsigned char* p, size_t n) noexcept {
    while (n && p[n - 1] == '\r') --n;
    return n;
}

}  // namespace csv_detail

// The key of one record p[0, n), given without its '\n' (the line end's '\r' is stripped here,
// if present). Returns
//   found:   key_data/key_len point at the key: into p when it is one field that needs no
//            unescaping (no copy), else into `scratch`: the key is appended there (what scratch
//            held stays, so a caller may gather a block's keys in one buffer and keep offsets:
//            the key starts at scratch's size before the call); key_data is valid until scratch
//            changes;
//   missing: the record has fewer fields than the key needs (an empty line has none in CSV);
//   invalid: not valid CSV; `error` names the problem.
inline KeyStatus field_key(const unsigned char* p, size_t n, const FieldKeySpec& spec, std::string& scratch,
                           const unsigned char*& key_data, size_t& key_len, std::string& error) {
    using namespace csv_detail;
    if (spec.mode == FieldKeySpec::field_range) {
        if (n && p[n - 1] == '\r') --n;
        // Field `first` starts after the first-th delimiter; field `last` ends at the
        // (last+1)-th, or at the end of the line.
        size_t begin = 0, i = 0;
        for (uint32_t k = 0; k < spec.first; ++k) {
            const void* hit = std::memchr(p + i, spec.delimiter, n - i);
            if (!hit) return KeyStatus::missing;
            i = static_cast<size_t>(static_cast<const unsigned char*>(hit) - p) + 1;
        }
        begin = i;
        size_t end = n;
        for (uint32_t k = spec.first; k <= spec.last; ++k) {
            const void* hit = std::memchr(p + i, spec.delimiter, n - i);
            if (!hit) break;
            const size_t at = static_cast<size_t>(static_cast<const unsigned char*>(hit) - p);
            if (k == spec.last) end = at;
            i = at + 1;
        }
        key_data = p + begin;
        key_len = end - begin;
        return KeyStatus::found;
    }
    n = strip_crs(p, n);
    const unsigned char delim = spec.delimiter, quote = spec.quote;
    if (spec.columns.size() == 1) {
        // The common case: one column, no copy unless it has doubled quotes.
        const uint32_t want = spec.columns[0];
        // Most records hold no quote, '\r' or '\n': then they are valid and their fields are
        // the pieces between delimiters, found with memchr without parsing field by field.
        if (n && find3(p, 0, n, quote, '\r', '\n') == n) {
            size_t b = 0;
            for (uint32_t k = 0; k < want; ++k) {
                const void* hit = std::memchr(p + b, delim, n - b);
                if (!hit) return KeyStatus::missing;
                b = static_cast<size_t>(static_cast<const unsigned char*>(hit) - p) + 1;
            }
            const void* hit = std::memchr(p + b, delim, n - b);
            key_data = p + b;
            key_len = (hit ? static_cast<size_t>(static_cast<const unsigned char*>(hit) - p) : n) - b;
            return KeyStatus::found;
        }
        Field key{0, 0, false};
        uint32_t fields = 0;
        if (!parse(p, n, delim, quote, [&](uint32_t index, const Field& f) {
                if (index == want) key = f;
                fields = index + 1;
            }, error))
            return KeyStatus::invalid;
        if (fields <= want) return KeyStatus::missing;
        if (!key.doubled) {
            key_data = p + key.begin;
            key_len = key.end - key.begin;
        } else {
            const size_t at = scratch.size();
            unescape(p, key, quote, scratch);
            key_data = reinterpret_cast<const unsigned char*>(scratch.data()) + at;
            key_len = scratch.size() - at;
        }
        return KeyStatus::found;
    }
    uint32_t max_col = 0;
    for (uint32_t c : spec.columns) max_col = c > max_col ? c : max_col;
    // Fields 0..max_col; a small buffer reused across calls of this thread.
    thread_local std::vector<Field> fields;
    fields.clear();
    if (!parse(p, n, delim, quote, [&](uint32_t index, const Field& f) {
            if (index <= max_col) fields.push_back(f);
        }, error))
        return KeyStatus::invalid;
    if (fields.size() <= max_col) return KeyStatus::missing;
    const size_t at = scratch.size();
    for (uint32_t c : spec.columns) {
        put_varint(unescaped_length(p, fields[c], quote), scratch);
        unescape(p, fields[c], quote, scratch);
    }
    key_data = reinterpret_cast<const unsigned char*>(scratch.data()) + at;
    key_len = scratch.size() - at;
    return KeyStatus::found;
}

// The fields of one record p[0, n) (without its '\n'; the line end's '\r's are stripped), unquoted:
// the header's column names. An empty record has no fields (status found, fields empty).
inline KeyStatus csv_fields(const unsigned char* p, size_t n, unsigned char delimiter, unsigned char quote,
                            std::vector<std::string>& fields, std::string& error) {
    using namespace csv_detail;
    n = strip_crs(p, n);
    fields.clear();
    if (!parse(p, n, delimiter, quote, [&](uint32_t, const Field& f) {
            fields.emplace_back();
            unescape(p, f, quote, fields.back());
        }, error))
        return KeyStatus::invalid;
    return KeyStatus::found;
}

}  // namespace dedup
}  // namespace cuckoo
