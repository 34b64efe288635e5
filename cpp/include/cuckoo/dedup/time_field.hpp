// The event time of a record (`cuckoo dedup --window DURATION --time-key FIELD`): the text of its
// time field as seconds since the Unix epoch. Two forms:
//   - a number: epoch seconds, with a fraction and an exponent if any ("1732900000", "1.7329e9");
//     a JSON string holding one too;
//   - ISO 8601 / RFC 3339: "YYYY-MM-DD", optionally followed by 'T' (or 't', or a space) and
//     "HH:MM", ":SS", a fraction ".fff..." (any number of digits), and a zone: 'Z' (or 'z'),
//     "+HH:MM", "+HHMM" or "+HH" (or '-'); without a zone the time is UTC. A JSON string holding
//     one ("\"2026-11-29T10:00:00Z\"", as the JSONL key's canonical text writes it) too.
// Anything else, or a value that is not finite, is no time (parse_time returns false).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cuckoo {
namespace dedup {

namespace time_detail {

// Days from 1970-01-01 to the proleptic Gregorian date y-m-d (m 1-12, d 1-31): the count of days
// in the whole 400-year eras before y's era, then in y's era up to the date, with the year taken
// to start on March 1 so that the leap day is its last day.
inline int64_t days_from_civil(int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = static_cast<unsigned>(y - era * 400);                 // [0, 399]
    const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;      // [0, 365]
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;                // [0, 146096]
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

inline bool leap(int64_t y) noexcept { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Reads exactly `width` digits at p[i..] into v; moves i past them.
inline bool digits(const char* p, size_t n, size_t& i, unsigned width, unsigned& v) noexcept {
    if (i + width > n) return false;
    v = 0;
    for (unsigned k = 0; k < width; ++k) {
        const char c = p[i + k];
        if (c < '0' || c > '9') return false;
        v = v * 10 + static_cast<unsigned>(c - '0');
    }
    i += width;
    return true;
}

inline bool iso8601(const char* p, size_t n, double& seconds) noexcept {
    size_t i = 0;
    unsigned y, mo, d, h = 0, mi = 0, s = 0;
    if (!digits(p, n, i, 4, y) || i >= n || p[i++] != '-' || !digits(p, n, i, 2, mo) || i >= n || p[i++] != '-' ||
        !digits(p, n, i, 2, d))
        return false;
    static const unsigned kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] + (mo == 2 && leap(y))) return false;
    double fraction = 0;
    int64_t offset = 0;  // the zone's offset from UTC, seconds
    if (i < n) {
        if (p[i] != 'T' && p[i] != 't' && p[i] != ' ') return false;
        ++i;
        if (!digits(p, n, i, 2, h) || i >= n || p[i++] != ':' || !digits(p, n, i, 2, mi)) return false;
        if (i < n && p[i] == ':') {
            ++i;
            if (!digits(p, n, i, 2, s)) return false;
            if (i < n && (p[i] == '.' || p[i] == ',')) {
                ++i;
                double scale = 0.1;
                const size_t from = i;
                for (; i < n && p[i] >= '0' && p[i] <= '9'; ++i, scale /= 10) fraction += (p[i] - '0') * scale;
                if (i == from) return false;
            }
        }
        if (h > 23 || mi > 59 || s > 60) return false;  // (60: a leap second, read as the next second's start)
        if (i < n) {
            if (p[i] == 'Z' || p[i] == 'z') {
                ++i;
            } else if (p[i] == '+' || p[i] == '-') {
                const int64_t sign = p[i++] == '-' ? -1 : 1;
                unsigned oh, om = 0;
                if (!digits(p, n, i, 2, oh)) return false;
                if (i < n && p[i] == ':') ++i;
                if (i < n && !digits(p, n, i, 2, om)) return false;
                if (oh > 23 || om > 59) return false;
                offset = sign * (int64_t(oh) * 3600 + int64_t(om) * 60);
            } else {
                return false;
            }
        }
        if (i != n) return false;
    }
    const int64_t whole = days_from_civil(y, mo, d) * 86400 + int64_t(h) * 3600 + int64_t(mi) * 60 + s - offset;
    seconds = static_cast<double>(whole) + fraction;
    return true;
}

}  // namespace time_detail

// The time a field's text gives, in seconds since the epoch (see the top); false when it is none.
inline bool parse_time(const char* p, size_t n, double& seconds) {
    while (n && (*p == ' ' || *p == '\t')) ++p, --n;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r')) --n;
    if (n >= 2 && p[0] == '"' && p[n - 1] == '"') ++p, n -= 2;  // a JSON string's text
    if (n == 0 || n > 64) return false;
    const char c = p[0];
    if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.') {
        if (n >= 10 && c >= '0' && c <= '9' && p[4] == '-') return time_detail::iso8601(p, n, seconds);
        char buf[65];
        std::memcpy(buf, p, n);
        buf[n] = '\0';
        char* end = nullptr;
        const double v = std::strtod(buf, &end);
        if (end != buf + n || !std::isfinite(v)) return false;
        // (strtod also reads "inf", "nan" and hex floats: only a decimal number gets here, as
        // the first character says, but "0x1p3" starts with a digit.)
        for (size_t k = 0; k < n; ++k)
            if (buf[k] == 'x' || buf[k] == 'X') return false;
        seconds = v;
        return true;
    }
    return false;
}

}  // namespace dedup
}  // namespace cuckoo
