// STUB (lead's local placeholder until the csv branch lands; not committed)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "cuckoo/dedup/key_status.hpp"
namespace cuckoo { namespace dedup {
struct CsvCut { size_t searched = 0; bool in_quotes = false; size_t last_end = 0; };
inline void csv_scan(const unsigned char* p, size_t n, unsigned char quote, CsvCut& cut) noexcept {
    for (size_t i = cut.searched; i < n; ++i) {
        if (p[i] == quote) cut.in_quotes = !cut.in_quotes;
        else if (p[i] == '\n' && !cut.in_quotes) cut.last_end = i + 1;
    }
    cut.searched = n;
}
inline size_t csv_record_ends(const unsigned char* p, size_t n, unsigned char quote, uint64_t* ends) noexcept {
    size_t c = 0; bool q = false;
    for (size_t i = 0; i < n; ++i) { if (p[i] == quote) q = !q; else if (p[i] == '\n' && !q) ends[c++] = i + 1; }
    return c;
}
struct FieldKeySpec {
    enum Mode : uint8_t { csv_columns, field_range } mode = csv_columns;
    unsigned char delimiter = ',';
    unsigned char quote = '"';
    std::vector<uint32_t> columns;
    uint32_t first = 0, last = 0;
};
inline size_t bom_length(const unsigned char* p, size_t n) { return n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF ? 3 : 0; }
inline KeyStatus csv_fields(const unsigned char* p, size_t n, unsigned char delimiter, unsigned char quote,
                            std::vector<std::string>& fields, std::string& error) {
    fields.clear(); if (n && p[n-1] == '\r') --n; if (n == 0) return KeyStatus::missing;
    std::string cur; size_t i = 0;
    while (true) {
        cur.clear();
        if (i < n && p[i] == quote) {
            ++i;
            while (true) {
                if (i >= n) { error = "not valid CSV: a quoted field is not closed"; return KeyStatus::invalid; }
                if (p[i] == quote) { if (i + 1 < n && p[i+1] == quote) { cur += char(quote); i += 2; continue; } ++i; break; }
                cur += char(p[i++]);
            }
            if (i < n && p[i] != delimiter) { error = "not valid CSV: '\"' after a quoted field"; return KeyStatus::invalid; }
        } else {
            while (i < n && p[i] != delimiter) cur += char(p[i++]);
        }
        fields.push_back(cur);
        if (i >= n) break;
        ++i;
    }
    return KeyStatus::found;
}
inline KeyStatus field_key(const unsigned char* p, size_t n, const FieldKeySpec& spec, std::string& scratch,
                           const unsigned char*& key_data, size_t& key_len, std::string& error) {
    if (n && p[n-1] == '\r') --n;
    if (spec.mode == FieldKeySpec::field_range) {
        size_t field = 0, start = 0, i = 0;
        for (; i < n && field < spec.first; ++i) if (p[i] == spec.delimiter) { ++field; start = i + 1; }
        if (field < spec.first) return KeyStatus::missing;
        size_t end = start;
        for (end = start; end < n; ++end) if (p[end] == spec.delimiter && field++ == spec.last) break;
        key_data = p + start; key_len = end - start; return KeyStatus::found;
    }
    std::vector<std::string> f;
    KeyStatus s = csv_fields(p, n, spec.delimiter, spec.quote, f, error);
    if (s == KeyStatus::invalid) return s;
    const size_t at = scratch.size();
    for (uint32_t c : spec.columns) { if (c >= f.size()) return KeyStatus::missing; }
    if (spec.columns.size() == 1) scratch += f[spec.columns[0]];
    else for (uint32_t c : spec.columns) { size_t l = f[c].size(); do { unsigned char b = l & 0x7F; l >>= 7; scratch += char(l ? b | 0x80 : b); } while (l); scratch += f[c]; }
    key_data = reinterpret_cast<const unsigned char*>(scratch.data()) + at; key_len = scratch.size() - at;
    return KeyStatus::found;
}
}}
