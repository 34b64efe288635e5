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
#include "cuckoo/dedup/json_text.hpp"
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
