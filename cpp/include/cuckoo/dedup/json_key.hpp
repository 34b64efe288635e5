// The key of one JSONL record: validates a line as one JSON text (RFC 8259) and writes the
// canonical bytes of the value at a dotted member path. Called by the dedup pipeline once per
// record (`cuckoo dedup --jsonl -k a.b`); self-contained, no Python, no dependency on the pipeline.
//
// The key rule (two records are duplicates exactly when their keys are equal bytes):
//
//   The canonical key of a value is json.dumps(value, sort_keys=True, separators=(",", ":"),
//   ensure_ascii=False).encode("utf-8", "surrogatepass") of Python's json.loads of it, except for
//   numbers, which never pass through floats.
//   - Strings compare by decoded content ("\u00e9" and "é" are one key). The key writes them as
//     json.dumps(ensure_ascii=False) does: \" \\ \n \r \t \b \f, the other controls as \u00XX
//     (lowercase hex), everything else as raw UTF-8. A surrogate pair escape becomes its code
//     point; a lone surrogate escape becomes its 3-byte (surrogatepass) encoding. Raw bytes that
//     are not valid UTF-8 (an encoded surrogate, an overlong form, a stray byte) and a byte order
//     mark make the line invalid.
//   - Numbers are one key exactly when they are equal as decimal values (1, 1.0, 1e0, 10e-1 and
//     0.1e1 are one key, -0 is 0; 9007199254740993 and 9007199254740992 are two, so are 1e400 and
//     2e400). Canonical form: "0"; else an optional "-", then
//       * an integer value with at most 64 trailing zeros: its plain digits ("100", a 5,000-digit
//         integer written out);
//       * otherwise, with significant digits d1..dn (no leading or trailing zeros) and exponent e
//         (value = d1.d2..dn x 10^e): positional when -7 <= e < 21 and the value is not an
//         integer ("0.5", "123.25", "0.0000001"); else d1.d2..dn (d1 when n = 1), "e", and e in
//         decimal with "-" when negative ("1e400", "1.5e-30", "1e65").
//     Exponents of any length are exact: an exponent of up to 18 digits is computed in 64-bit
//     integers, a longer one by decimal string arithmetic (its value then dwarfs any shift a line
//     can make: lines are assumed shorter than 10^18 bytes). NaN and Infinity are not JSON.
//   - true, false, null as written; arrays [a,b]; objects with their members sorted by the bytes
//     of their decoded names (UTF-8 byte order = Python's code-point order), each name once: the
//     LAST occurrence of a repeated name wins (Python's dict), for the key and for the path.
//
// The path: member k of the path names a member of the object at level k (compared with the
// decoded names); a level that is not an object, or lacks the member, makes the record
// `missing`. The whole line is validated either way. Blank lines (whitespace only) are missing.
//
// Cost: one validating pass over the line with an explicit stack (1 byte a level: any depth, no
// recursion), skipping string content 8, 16 or 32 bytes at a time (JsonScan); then the key's
// value alone is read again to write its key. A scalar key is written directly; an array or object
// key is built as a small tree (about 32 bytes a value, with its child links) so that members can be sorted in linear
// time, without recursion.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cuckoo/cpu.hpp"
#include "cuckoo/dedup/key_status.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if CUCKOO_X86_DISPATCH
#include <immintrin.h>
#endif

namespace cuckoo {
namespace dedup {

// A dotted key path, split: each member name as raw UTF-8 bytes (compared with the decoded names).
struct JsonPath {
    std::vector<std::string> members;
};

// (KeyStatus: found, missing, invalid, in key_status.hpp: shared with the CSV framing.)

// How string content is skipped: 8 bytes at a time in plain C++ (scalar: SWAR, every platform),
// or 16 (SSE2) or 32 (AVX2) bytes at a time. `automatic` follows the kernel level (cuckoo/cpu.hpp):
// scalar at portable, so that CUCKOO_CPU=portable and the tests at that level run the code every
// platform runs; SSE2 at avx2 and above (AVX2 when SSE2 is not compiled in). SSE2 rather than
// AVX2 because it measured faster on JSON lines (test_json_key's bench_json_key, AMD EPYC with
// AVX-512, thread CPU time: 973 against 879 MB/s on 148-byte event lines, 2041 against 1908 on
// 353-byte log lines): their strings are short, and the AVX2 copy is a call, not inlined. All
// scans give the same results (test_json_key checks them against each other on random lines).
enum class JsonScan : uint8_t { automatic, scalar, sse2, avx2 };

namespace json_detail {

constexpr size_t npos = ~size_t(0);

inline bool is_digit(unsigned char c) noexcept { return c >= '0' && c <= '9'; }

// A byte that ends a run of plain string content: '"', '\\', a control (< 0x20) or non-ASCII.
inline bool string_special(unsigned char c) noexcept { return c == '"' || c == '\\' || c < 0x20 || c >= 0x80; }

// Portable: 8 bytes at a time with the SWAR "has a byte below / equal to" tests (exact as to
// whether the word holds one; the byte loop then finds which).
inline size_t find_special_scalar(const unsigned char* p, size_t i, size_t n) noexcept {
    constexpr uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        std::memcpy(&w, p + i, 8);
        const uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
        const uint64_t hit = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w;
        if (hit & highs) break;
    }
    while (i < n && !string_special(p[i])) ++i;
    return i;
}

#if defined(__SSE2__)
inline size_t find_special_sse2(const unsigned char* p, size_t i, size_t n) noexcept {
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    for (; i + 16 <= n; i += 16) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        // signed compare: bytes >= 0x80 are negative, so "< 0x20" also catches non-ASCII
        const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                                       _mm_cmplt_epi8(v, space));
        const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(m));
        if (mask) return i + static_cast<size_t>(__builtin_ctz(mask));
    }
    return find_special_scalar(p, i, n);  // the tail: 8 bytes at a time, then bytes
}
#endif

#if CUCKOO_X86_DISPATCH
__attribute__((target("avx2"))) inline size_t find_special_avx2(const unsigned char* p, size_t i, size_t n) noexcept {
    const __m256i quote = _mm256_set1_epi8('"'), slash = _mm256_set1_epi8('\\'), space = _mm256_set1_epi8(0x20);
    for (; i + 32 <= n; i += 32) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
        const __m256i m = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(v, quote), _mm256_cmpeq_epi8(v, slash)),
                                          _mm256_cmpgt_epi8(space, v));
        const unsigned mask = static_cast<unsigned>(_mm256_movemask_epi8(m));
        if (mask) return i + static_cast<size_t>(__builtin_ctz(mask));
    }
    // The tail (a line's last 31 bytes, where its last strings often lie): 16 bytes, then 8.
    if (i + 16 <= n) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
        const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm256_castsi256_si128(quote)),
                                                    _mm_cmpeq_epi8(v, _mm256_castsi256_si128(slash))),
                                       _mm_cmplt_epi8(v, _mm256_castsi256_si128(space)));
        const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(m));
        if (mask) return i + static_cast<size_t>(__builtin_ctz(mask));
        i += 16;
    }
    return find_special_scalar(p, i, n);
}
#endif

inline int hex_value(unsigned char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<unsigned char>(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// The 4 hex digits at p (already validated).
inline uint32_t hex4(const unsigned char* p) noexcept {
    return static_cast<uint32_t>(hex_value(p[0]) << 12 | hex_value(p[1]) << 8 | hex_value(p[2]) << 4 | hex_value(p[3]));
}

// UTF-8 of a code point; surrogates get their 3-byte form (Python's "surrogatepass").
inline void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | cp >> 6));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | cp >> 12));
        out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | cp >> 18));
        out.push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

// A decoded code point as json.dumps(ensure_ascii=False) writes it inside a string.
inline void put_canonical(std::string& out, uint32_t cp) {
    switch (cp) {
        case '"': out += "\\\""; return;
        case '\\': out += "\\\\"; return;
        case '\n': out += "\\n"; return;
        case '\r': out += "\\r"; return;
        case '\t': out += "\\t"; return;
        case '\b': out += "\\b"; return;
        case '\f': out += "\\f"; return;
        default: break;
    }
    if (cp < 0x20) {
        static const char digits[] = "0123456789abcdef";
        out += "\\u00";
        out.push_back(digits[cp >> 4]);
        out.push_back(digits[cp & 15]);
        return;
    }
    put_utf8(out, cp);
}

// The next decoded byte of a canonical string's content at s (advanced past it): undoes
// put_canonical's escapes, so that member names sort by their decoded bytes.
inline unsigned char next_decoded(const char*& s) noexcept {
    unsigned char c = static_cast<unsigned char>(*s++);
    if (c != '\\') return c;
    c = static_cast<unsigned char>(*s++);
    switch (c) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'u': {  // \u00XX: a control
            const int v = hex_value(static_cast<unsigned char>(s[2])) << 4 | hex_value(static_cast<unsigned char>(s[3]));
            s += 4;
            return static_cast<unsigned char>(v);
        }
        default: return c;  // '"' or '\\'
    }
}

// Decoded-byte order of two canonical strings (quotes included): <0, 0, >0.
inline int compare_canonical_names(const char* a, size_t alen, const char* b, size_t blen) noexcept {
    const char *ae = a + alen - 1, *be = b + blen - 1;  // at the closing quotes
    ++a;
    ++b;
    while (a < ae && b < be) {
        const unsigned char x = next_decoded(a), y = next_decoded(b);
        if (x != y) return x < y ? -1 : 1;
    }
    return (a < ae) - (b < be);
}

// Decimal digits of |E| + delta, given as digits (no leading zeros, value >= 10^18) and
// |delta| < 10^18 (so the result is positive).
inline std::string add_to_decimal(const std::string& digits, int64_t delta) {
    std::string r = digits;
    uint64_t mag = delta < 0 ? uint64_t(0) - static_cast<uint64_t>(delta) : static_cast<uint64_t>(delta);
    if (delta >= 0) {
        unsigned carry = 0;
        for (size_t k = r.size(); k-- > 0 && (mag || carry);) {
            unsigned d = static_cast<unsigned>(r[k] - '0') + static_cast<unsigned>(mag % 10) + carry;
            mag /= 10;
            carry = d >= 10;
            r[k] = static_cast<char>('0' + d % 10);
        }
        if (carry) r.insert(r.begin(), '1');
    } else {
        unsigned borrow = 0;
        for (size_t k = r.size(); k-- > 0 && (mag || borrow);) {
            int d = (r[k] - '0') - static_cast<int>(mag % 10) - static_cast<int>(borrow);
            mag /= 10;
            borrow = d < 0;
            r[k] = static_cast<char>('0' + (d + 10) % 10);
        }
        const size_t nz = r.find_first_not_of('0');
        r.erase(0, nz);
    }
    return r;
}

// The canonical form of the (valid) JSON number p[0, n) (see the key rule above), appended.
inline void canonical_number(const unsigned char* p, size_t n, std::string& out) {
    size_t i = 0;
    const bool negative = p[0] == '-';
    if (negative) ++i;
    const size_t int_begin = i;
    while (i < n && is_digit(p[i])) ++i;
    const size_t int_end = i;
    size_t frac_begin = i, frac_end = i;
    if (i < n && p[i] == '.') {
        frac_begin = ++i;
        while (i < n && is_digit(p[i])) ++i;
        frac_end = i;
    }
    // The digits of integer and fraction parts as one sequence: position k of it.
    const size_t int_len = int_end - int_begin, frac_len = frac_end - frac_begin, all = int_len + frac_len;
    auto digit = [&](size_t k) { return k < int_len ? p[int_begin + k] : p[frac_begin + k - int_len]; };
    size_t first = 0;
    while (first < all && digit(first) == '0') ++first;
    if (first == all) {  // zero, whatever its sign and exponent
        out.push_back('0');
        return;
    }
    size_t last = all - 1;
    while (digit(last) == '0') --last;
    const size_t sig = last - first + 1, trailing = all - 1 - last;
    // The exponent: small (fits 18 digits) or big (kept as decimal digits).
    bool exp_negative = false, exp_big = false;
    int64_t exp_small = 0;
    std::string exp_digits;
    if (i < n) {  // 'e' or 'E'
        ++i;
        if (p[i] == '-' || p[i] == '+') exp_negative = p[i++] == '-';
        while (i < n && p[i] == '0') ++i;
        if (n - i > 18) {
            exp_big = true;
            exp_digits.assign(reinterpret_cast<const char*>(p + i), n - i);
        } else {
            for (; i < n; ++i) exp_small = exp_small * 10 + (p[i] - '0');
            if (exp_negative) exp_small = -exp_small;
        }
    }
    // value = sig digits x 10^q; e = q + sig - 1 (the exponent of the first digit).
    const int64_t shift = static_cast<int64_t>(trailing) - static_cast<int64_t>(frac_len);  // q - E
    if (negative) out.push_back('-');
    auto scientific = [&](const std::string& exponent, bool exponent_negative) {
        out.push_back(static_cast<char>(digit(first)));
        if (sig > 1) {
            out.push_back('.');
            for (size_t k = first + 1; k <= last; ++k) out.push_back(static_cast<char>(digit(k)));
        }
        out.push_back('e');
        if (exponent_negative) out.push_back('-');
        out += exponent;
    };
    if (exp_big) {
        // |E| >= 10^18 dwarfs shift: a positive E makes an integer with > 64 trailing zeros, a
        // negative one a value far below 10^-7; both are written in scientific form.
        const int64_t adj = shift + static_cast<int64_t>(sig) - 1;  // e = E + adj
        scientific(add_to_decimal(exp_digits, exp_negative ? -adj : adj), exp_negative);
        return;
    }
    const int64_t q = exp_small + shift, e = q + static_cast<int64_t>(sig) - 1;
    if (q >= 0 && q <= 64) {
        for (size_t k = first; k <= last; ++k) out.push_back(static_cast<char>(digit(k)));
        out.append(static_cast<size_t>(q), '0');
    } else if (q < 0 && e >= -7 && e < 21) {
        if (e >= 0) {
            for (size_t k = first; k <= last; ++k) {
                out.push_back(static_cast<char>(digit(k)));
                if (static_cast<int64_t>(k - first) == e) out.push_back('.');
            }
        } else {
            out += "0.";
            out.append(static_cast<size_t>(-e - 1), '0');
            for (size_t k = first; k <= last; ++k) out.push_back(static_cast<char>(digit(k)));
        }
    } else {
        scientific(std::to_string(e < 0 ? -e : e), e < 0);
    }
}

}  // namespace json_detail

// Reads JSON lines and writes their keys, reusing its buffers from one call to the next. One
// reader per thread: it holds no shared state, and distinct readers never interfere.
class JsonKeyReader {
public:
    explicit JsonKeyReader(JsonScan scan = JsonScan::automatic) noexcept : scan_(scan) {}

    // See json_key below: the same contract.
    KeyStatus read(const unsigned char* p, size_t n, const JsonPath& path, std::string& key, std::string& error) {
        p_ = p;
        n_ = n;
        error_ = &error;
        active_ = resolve(scan_);
        size_t value = validate(path);
        if (value == kInvalid) return KeyStatus::invalid;
        if (value == json_detail::npos) return KeyStatus::missing;
        write_key(value, key);
        return KeyStatus::found;
    }

    // Which string scan `automatic` runs now (and what a given choice falls back to on this build).
    static JsonScan resolve(JsonScan scan) noexcept {
#if CUCKOO_X86_DISPATCH
        if (scan == JsonScan::automatic) {
#if defined(__SSE2__)
            scan = kernels::use_avx2() ? JsonScan::sse2 : JsonScan::scalar;
#else
            scan = kernels::use_avx2() ? JsonScan::avx2 : JsonScan::scalar;
#endif
        }
        if (scan == JsonScan::avx2 && !cpu_supports(CpuLevel::avx2)) scan = JsonScan::sse2;
#else
        if (scan == JsonScan::automatic || scan == JsonScan::avx2) scan = JsonScan::sse2;  // (scalar if not compiled)
#endif
#if !defined(__SSE2__)
        if (scan == JsonScan::sse2) scan = JsonScan::scalar;
#endif
        return scan;
    }

private:
    static constexpr size_t kInvalid = json_detail::npos - 1;

    const unsigned char* p_ = nullptr;
    size_t n_ = 0;
    std::string* error_ = nullptr;
    JsonScan scan_, active_ = JsonScan::scalar;
    std::vector<uint8_t> stack_;     // validation: 1 an object, 0 an array, per open level
    std::vector<size_t> candidate_;  // the value offset of the last match of path member k (k < matched)
    std::string name_;               // a decoded member name with escapes, to compare with the path

    // The tree of an array or object key.
    enum : uint8_t { kScalar, kArray, kObject };
    struct Node {  // 16 bytes: the tree of a deep key stays a small multiple of the line
        uint64_t a;             // scalar: its canonical text_[a, a + b); container: kids_[a, ...)
        uint64_t b : 62;        // scalar: the text's length; container: how many children (members)
        uint64_t kind : 2;
    };
    struct Frame {
        size_t node, base;  // base: where its children start in pending_
    };
    std::vector<Node> nodes_;
    std::vector<size_t> kids_, pending_, order_;
    std::vector<Frame> frames_;
    std::string text_;
    struct Emit {
        size_t node, next;
    };
    std::vector<Emit> emit_;

    size_t fail(size_t at, const char* what) {
        *error_ = "not valid JSON: ";
        *error_ += what;
        *error_ += " at byte ";
        *error_ += std::to_string(at);
        return kInvalid;
    }

    size_t skip_ws(size_t i) const noexcept {
        while (i < n_) {
            const unsigned char c = p_[i];
            if (c > ' ' || (c != ' ' && c != '\n' && c != '\r' && c != '\t')) break;
            ++i;
        }
        return i;
    }

    size_t find_special(size_t i) const noexcept {
        switch (active_) {
#if CUCKOO_X86_DISPATCH
            case JsonScan::avx2: return json_detail::find_special_avx2(p_, i, n_);
#endif
#if defined(__SSE2__)
            case JsonScan::sse2: return json_detail::find_special_sse2(p_, i, n_);
#endif
            default: return json_detail::find_special_scalar(p_, i, n_);
        }
    }

    // One UTF-8 sequence at i (its lead byte >= 0x80): the offset after it, or kInvalid.
    size_t skip_utf8(size_t i) {
        const unsigned char c = p_[i];
        size_t len;
        unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0) lo = 0xA0;        // no overlong forms
            else if (c == 0xED) hi = 0x9F;   // no surrogates
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0) lo = 0x90;
            else if (c == 0xF4) hi = 0x8F;   // nothing above U+10FFFF
        } else {
            return fail(i, "invalid UTF-8");
        }
        if (n_ - i < len) return fail(i, "invalid UTF-8");
        if (p_[i + 1] < lo || p_[i + 1] > hi) return fail(i, "invalid UTF-8");
        for (size_t k = 2; k < len; ++k)
            if ((p_[i + k] & 0xC0) != 0x80) return fail(i, "invalid UTF-8");
        return i + len;
    }

    // Validates the string whose content starts at i (after its '"'): the offset after its closing
    // quote, or kInvalid. `escaped`: whether it holds a backslash escape.
    size_t skip_string(size_t i, bool& escaped) {
        for (;;) {
            i = find_special(i);
            if (i >= n_) return fail(n_, "unterminated string");
            const unsigned char c = p_[i];
            if (c == '"') return i + 1;
            if (c == '\\') {
                escaped = true;
                if (i + 1 >= n_) return fail(n_, "unterminated string");
                switch (p_[i + 1]) {
                    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                        i += 2;
                        continue;
                    case 'u':
                        if (n_ - i < 6 || json_detail::hex_value(p_[i + 2]) < 0 || json_detail::hex_value(p_[i + 3]) < 0 ||
                            json_detail::hex_value(p_[i + 4]) < 0 || json_detail::hex_value(p_[i + 5]) < 0)
                            return fail(i, "invalid \\u escape");
                        i += 6;
                        continue;
                    default: return fail(i, "invalid escape");
                }
            }
            if (c < 0x20) return fail(i, "control character in a string");
            i = skip_utf8(i);
            if (i == kInvalid) return kInvalid;
        }
    }

    // Decodes the valid string whose content starts at i; writes its canonical form (no quotes) to
    // `canon` or its decoded bytes to `raw` (one of them). Returns the offset after its quote.
    size_t decode_string(size_t i, std::string* canon, std::string* raw) {
        std::string& out = canon ? *canon : *raw;
        for (;;) {
            size_t j = find_special(i);
            out.append(reinterpret_cast<const char*>(p_ + i), j - i);
            unsigned char c = p_[j];
            if (c == '"') return j + 1;
            if (c != '\\') {  // a UTF-8 sequence, already validated: copied as is
                while (j < n_ && p_[j] >= 0x80) out.push_back(static_cast<char>(p_[j++]));
                i = j;
                continue;
            }
            uint32_t cp;
            i = j + 2;
            switch (p_[j + 1]) {
                case 'b': cp = '\b'; break;
                case 'f': cp = '\f'; break;
                case 'n': cp = '\n'; break;
                case 'r': cp = '\r'; break;
                case 't': cp = '\t'; break;
                case 'u':
                    cp = json_detail::hex4(p_ + j + 2);
                    i = j + 6;
                    // A high surrogate followed by a low one's escape is one code point (Python's
                    // json does the same); any other surrogate stays alone.
                    if (cp >= 0xD800 && cp <= 0xDBFF && n_ - i >= 6 && p_[i] == '\\' && p_[i + 1] == 'u') {
                        const uint32_t low = json_detail::hex4(p_ + i + 2);
                        if (low >= 0xDC00 && low <= 0xDFFF) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                            i += 6;
                        }
                    }
                    break;
                default: cp = p_[j + 1]; break;  // '"', '\\', '/'
            }
            if (canon) json_detail::put_canonical(out, cp);
            else json_detail::put_utf8(out, cp);
        }
    }

    // Validates a number at i: the offset after it, or kInvalid.
    size_t skip_number(size_t i) {
        if (p_[i] == '-') ++i;
        if (i >= n_ || !json_detail::is_digit(p_[i])) return fail(i, "invalid number: expected a digit");
        if (p_[i] == '0') {
            ++i;
            if (i < n_ && json_detail::is_digit(p_[i])) return fail(i, "invalid number: leading zero");
        } else {
            while (i < n_ && json_detail::is_digit(p_[i])) ++i;
        }
        if (i < n_ && p_[i] == '.') {
            ++i;
            if (i >= n_ || !json_detail::is_digit(p_[i])) return fail(i, "invalid number: expected a digit after '.'");
            while (i < n_ && json_detail::is_digit(p_[i])) ++i;
        }
        if (i < n_ && (p_[i] == 'e' || p_[i] == 'E')) {
            ++i;
            if (i < n_ && (p_[i] == '+' || p_[i] == '-')) ++i;
            if (i >= n_ || !json_detail::is_digit(p_[i])) return fail(i, "invalid number: expected an exponent digit");
            while (i < n_ && json_detail::is_digit(p_[i])) ++i;
        }
        return i;
    }

    size_t skip_literal(size_t i, const char* word, size_t len) {
        if (n_ - i < len || std::memcmp(p_ + i, word, len) != 0) return fail(i, "expected a value");
        return i + len;
    }

    // Validates the whole line; returns the offset of the path's value, npos (missing) or kInvalid.
    size_t validate(const JsonPath& path) {
        const size_t want = path.members.size();
        size_t pos = skip_ws(0);
        if (pos == n_) return json_detail::npos;  // blank
        const size_t root = pos;
        candidate_.resize(want);
        // The matches hold a prefix of the path: a match at level k lies inside the value of the
        // one at level k - 1, and a later match at level k voids those below it. So a count, not
        // a clearing loop (which would cost depth^2 on a deep path).
        size_t matched = 0;
        stack_.clear();
        // The objects at levels 1..searched are the chain the path leads through; `match`: the
        // member just read is the one the path names at the innermost of them.
        size_t searched = 0;
        bool match = false;
        const char* close_error = nullptr;
    value:
        if (pos >= n_) return fail(pos, "expected a value");
        switch (p_[pos]) {
            case '"': {
                bool escaped = false;
                pos = skip_string(pos + 1, escaped);
                if (pos == kInvalid) return kInvalid;
                break;
            }
            case '{': {
                const size_t level = stack_.size() + 1;
                if (level <= want && (level == 1 || (match && searched == level - 1))) searched = level;
                match = false;
                stack_.push_back(1);
                pos = skip_ws(pos + 1);
                if (pos < n_ && p_[pos] == '}') {
                    ++pos;
                    goto close;
                }
                goto member;
            }
            case '[':
                match = false;
                stack_.push_back(0);
                pos = skip_ws(pos + 1);
                if (pos < n_ && p_[pos] == ']') {
                    ++pos;
                    goto close;
                }
                goto value;
            case 't': pos = skip_literal(pos, "true", 4); break;
            case 'f': pos = skip_literal(pos, "false", 5); break;
            case 'n': pos = skip_literal(pos, "null", 4); break;
            default:
                if (p_[pos] == '-' || json_detail::is_digit(p_[pos])) {
                    pos = skip_number(pos);
                    break;
                }
                return fail(pos, "expected a value");
        }
        if (pos == kInvalid) return kInvalid;
        match = false;
    after:
        pos = skip_ws(pos);
        if (stack_.empty()) {
            if (pos != n_) return fail(pos, "unexpected data after the value");
            if (want == 0) return root;
            return matched == want ? candidate_[want - 1] : json_detail::npos;
        }
        close_error = stack_.back() ? "expected ',' or '}'" : "expected ',' or ']'";
        if (pos >= n_) return fail(pos, close_error);
        if (p_[pos] == ',') {
            pos = skip_ws(pos + 1);
            if (stack_.back()) goto member;
            goto value;
        }
        if (p_[pos] != (stack_.back() ? '}' : ']')) return fail(pos, close_error);
        ++pos;
    close:
        if (searched == stack_.size()) --searched;
        stack_.pop_back();
        goto after;
    member:
        if (pos >= n_ || p_[pos] != '"') return fail(pos, "expected '\"' (a member name)");
        {
            const size_t start = pos + 1;
            bool escaped = false;
            pos = skip_string(start, escaped);
            if (pos == kInvalid) return kInvalid;
            if (searched == stack_.size() && searched != 0) {
                const std::string& want_name = path.members[searched - 1];
                const size_t len = pos - 1 - start;
                if (!escaped) {
                    match = len == want_name.size() && std::memcmp(p_ + start, want_name.data(), len) == 0;
                } else {
                    name_.clear();
                    decode_string(start, nullptr, &name_);
                    match = name_ == want_name;
                }
            }
            pos = skip_ws(pos);
            if (pos >= n_ || p_[pos] != ':') return fail(pos, "expected ':'");
            pos = skip_ws(pos + 1);
            if (match) {  // the last occurrence wins: forget what an earlier one led to
                candidate_[searched - 1] = pos;
                matched = searched;
            }
            goto value;
        }
    }

    // The canonical form of the scalar at i, appended to out; returns the offset after it.
    size_t write_scalar(size_t i, std::string& out) {
        const unsigned char c = p_[i];
        if (c == '"') {
            out.push_back('"');
            i = decode_string(i + 1, &out, nullptr);
            out.push_back('"');
            return i;
        }
        if (c == 't' || c == 'n') {
            out.append(reinterpret_cast<const char*>(p_ + i), 4);
            return i + 4;
        }
        if (c == 'f') {
            out.append("false");
            return i + 5;
        }
        size_t end = i + 1;
        while (end < n_ && (json_detail::is_digit(p_[end]) || p_[end] == '.' || p_[end] == 'e' || p_[end] == 'E' ||
                            p_[end] == '-' || p_[end] == '+'))
            ++end;
        json_detail::canonical_number(p_ + i, end - i, out);
        return end;
    }

    size_t add_node(uint8_t kind, uint64_t a, uint64_t b) {
        Node node;
        node.a = a;
        node.b = b;
        node.kind = kind;
        nodes_.push_back(node);
        return nodes_.size() - 1;
    }

    // The key of the (validated) value at pos, appended to key.
    void write_key(size_t pos, std::string& key) {
        if (p_[pos] != '{' && p_[pos] != '[') {
            write_scalar(pos, key);
            return;
        }
        nodes_.clear();
        kids_.clear();
        pending_.clear();
        frames_.clear();
        text_.clear();
        size_t root = 0;
        // Build: a pass over the value's text (valid: no checks), each scalar's canonical text
        // into text_, each container's children (objects: name and value pairs) into kids_.
    value:
        if (p_[pos] == '{' || p_[pos] == '[') {
            const bool object = p_[pos] == '{';
            frames_.push_back(Frame{add_node(object ? kObject : kArray, 0, 0), pending_.size()});
            pos = skip_ws(pos + 1);
            if (p_[pos] == '}' || p_[pos] == ']') {
                ++pos;
                goto close;
            }
            if (object) goto member;
            goto value;
        } else {
            const size_t at = text_.size();
            pos = write_scalar(pos, text_);
            pending_.push_back(add_node(kScalar, at, text_.size() - at));
        }
    after:
        pos = skip_ws(pos);
        if (p_[pos] == ',') {
            pos = skip_ws(pos + 1);
            if (nodes_[frames_.back().node].kind == kObject) goto member;
            goto value;
        }
        ++pos;  // '}' or ']'
    close: {
        const Frame f = frames_.back();
        frames_.pop_back();
        Node& node = nodes_[f.node];
        node.a = kids_.size();
        if (node.kind == kArray) {
            kids_.insert(kids_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(f.base), pending_.end());
            node.b = pending_.size() - f.base;
        } else {
            node.b = sort_members(f.base);
        }
        pending_.resize(f.base);
        if (frames_.empty()) {
            root = f.node;
            goto write;
        }
        pending_.push_back(f.node);
        goto after;
    }
    member: {
        const size_t at = text_.size();
        pos = write_scalar(pos, text_);  // the name, canonical, with its quotes
        pending_.push_back(add_node(kScalar, at, text_.size() - at));
        pos = skip_ws(pos);
        pos = skip_ws(pos + 1);  // ':'
        goto value;
    }
    write:
        emit_.clear();
        emit_.push_back(Emit{root, 0});
        key.push_back(nodes_[root].kind == kObject ? '{' : '[');
        while (!emit_.empty()) {
            Emit& top = emit_.back();
            const Node& node = nodes_[top.node];
            if (top.next == node.b) {
                key.push_back(node.kind == kObject ? '}' : ']');
                emit_.pop_back();
                continue;
            }
            if (top.next) key.push_back(',');
            size_t child;
            if (node.kind == kObject) {
                const Node& name = nodes_[kids_[node.a + 2 * top.next]];
                key.append(text_, name.a, name.b);
                key.push_back(':');
                child = kids_[node.a + 2 * top.next + 1];
            } else {
                child = kids_[node.a + top.next];
            }
            ++top.next;
            const Node& c = nodes_[child];
            if (c.kind == kScalar) {
                key.append(text_, c.a, c.b);
            } else {
                key.push_back(c.kind == kObject ? '{' : '[');
                emit_.push_back(Emit{child, 0});  // (top is not used after this)
            }
        }
    }

    // Moves the (name, value) pairs pending_[base, ...) to kids_, sorted by decoded name, each
    // name once (its last occurrence); returns how many members that leaves.
    size_t sort_members(size_t base) {
        const size_t count = (pending_.size() - base) / 2;
        auto name_of = [&](size_t m) -> const Node& { return nodes_[pending_[base + 2 * m]]; };
        auto compare = [&](size_t x, size_t y) {
            const Node &a = name_of(x), &b = name_of(y);
            return json_detail::compare_canonical_names(text_.data() + a.a, a.b, text_.data() + b.a, b.b);
        };
        bool ascending = true;  // the common case: already sorted, no repeats
        for (size_t m = 1; m < count && ascending; ++m) ascending = compare(m - 1, m) < 0;
        order_.resize(count);
        for (size_t m = 0; m < count; ++m) order_[m] = m;
        if (!ascending) std::stable_sort(order_.begin(), order_.end(), [&](size_t x, size_t y) { return compare(x, y) < 0; });
        size_t kept = 0;
        for (size_t k = 0; k < count; ++k) {
            // stable: of a run of equal names, the last is the last occurrence
            if (k + 1 < count && !ascending && compare(order_[k], order_[k + 1]) == 0) continue;
            kids_.push_back(pending_[base + 2 * order_[k]]);
            kids_.push_back(pending_[base + 2 * order_[k] + 1]);
            ++kept;
        }
        return kept;
    }
};

// Reads one JSON text p[0, n) (a line without its '\n'; a '\r' before the '\n' is the caller's to
// strip). Validates ALL of it (RFC 8259, whitespace around allowed). Returns
//   found:   the value at `path` exists; its canonical key bytes are APPENDED to `key`;
//   missing: valid JSON, but not an object at some level or no such member (a blank line, only
//            whitespace, is missing too);
//   invalid: not valid JSON; `error` gets a short message naming what and the byte offset
//            ("not valid JSON: expected ',' or '}' at byte 17").
// `key` is unchanged unless found. For many lines, a JsonKeyReader reuses its buffers.
inline KeyStatus json_key(const unsigned char* p, size_t n, const JsonPath& path, std::string& key, std::string& error) {
    JsonKeyReader reader;
    return reader.read(p, n, path, key, error);
}

}  // namespace dedup
}  // namespace cuckoo
