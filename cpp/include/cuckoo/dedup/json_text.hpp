// Pieces of JSON text for the JSONL framing's keys (dedup/json_key.hpp): finding the next special
// byte of a string (8, 16 or 32 bytes at a time), escapes and UTF-8, the canonical form of a
// string and of a number (its exact decimal value: no floats). Split from json_key.hpp, which
// reads a line and finds its key with these.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "cuckoo/cpu.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if CUCKOO_X86_DISPATCH
#include <immintrin.h>
#endif

namespace cuckoo {
namespace dedup {

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

}  // namespace dedup
}  // namespace cuckoo
