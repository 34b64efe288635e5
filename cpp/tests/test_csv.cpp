// CSV and delimited-field records (cuckoo/dedup/csv.hpp): record ends of the vector path against
// the portable one on random CSV (whole, and fed to csv_scan in random pieces), quotes at 64-byte
// boundaries, and the key rules by example. `test_csv bench` prints speeds (no threshold).
#include "cuckoo/dedup/csv.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"

using cuckoo::dedup::CsvCut;
using cuckoo::dedup::FieldKeySpec;
using cuckoo::dedup::KeyStatus;

namespace {

const unsigned char* u(const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); }

std::vector<uint64_t> ends_of(const std::string& s, bool vector, unsigned char delim = ',', unsigned char quote = '"') {
    std::vector<uint64_t> ends(s.size() + 8);
    ends.resize(cuckoo::dedup::csv_record_ends_path(u(s), s.size(), quote, ends.data(), delim, vector));
    return ends;
}

// Random CSV: plain fields, quoted fields holding delimiters, newlines, CR and doubled quotes,
// quotes inside unquoted fields, a few invalid "a"b fields, CRLF and empty lines.
std::string random_csv(std::mt19937_64& rng, size_t records) {
    std::string out;
    auto pick = [&](unsigned n) { return static_cast<unsigned>(rng() % n); };
    for (size_t r = 0; r < records; ++r) {
        const unsigned fields = pick(5);
        for (unsigned f = 0; f < fields; ++f) {
            if (f) out += ',';
            switch (pick(8)) {
                case 0: out += "\"" + std::string(pick(3), '"') + "\""; break;
                case 1: out += "\"a,b\nc\"\"d\r\""; break;
                case 2: out += "x\"y"; break;
                case 3: out += "\"q\"z"; break;  // invalid, but records still end somewhere
                default: out += std::string(pick(20), static_cast<char>('a' + pick(26)));
            }
        }
        out += pick(4) == 0 ? "\r\n" : "\n";
    }
    return out;
}

// A record's key under spec, or "<missing>" / "<invalid>".
std::string key_of(const std::string& rec, const FieldKeySpec& spec) {
    std::string scratch, error;
    const unsigned char* data = nullptr;
    size_t len = 0;
    const KeyStatus st = cuckoo::dedup::field_key(u(rec), rec.size(), spec, scratch, data, len, error);
    if (st == KeyStatus::missing) return "<missing>";
    if (st == KeyStatus::invalid) {
        CHECK(!error.empty());
        return "<invalid>";
    }
    return std::string(reinterpret_cast<const char*>(data), len);
}

FieldKeySpec columns(std::vector<uint32_t> cols) {
    FieldKeySpec s;
    s.columns = std::move(cols);
    return s;
}

FieldKeySpec range(uint32_t first, uint32_t last, unsigned char delim = '\t') {
    FieldKeySpec s;
    s.mode = FieldKeySpec::field_range;
    s.delimiter = delim;
    s.first = first;
    s.last = last;
    return s;
}

}  // namespace

TEST_CASE(record_ends_by_example) {
    CHECK(ends_of("a,b\nc\n", false) == (std::vector<uint64_t>{4, 6}));
    CHECK(ends_of("\"a\nb\",c\nd", false) == (std::vector<uint64_t>{8}));
    CHECK(ends_of("x\"y\nz\n", false) == (std::vector<uint64_t>{4, 6}));  // a quote inside a field is content
    CHECK(ends_of("\"a\"\"\n\"\n", false) == (std::vector<uint64_t>{7}));  // doubled quote, then newline inside
    CHECK(ends_of("\n\n", false) == (std::vector<uint64_t>{1, 2}));
    CHECK(ends_of("a;\"b\nc\"\n", false, ';') == (std::vector<uint64_t>{8}));
    // Quoting off: every newline ends a record.
    std::vector<uint64_t> ends(16);
    const std::string s = "\"a\nb\n";
    CHECK_EQ(cuckoo::dedup::csv_record_ends(u(s), s.size(), 0, ends.data()), size_t(2));
}

TEST_CASE(record_ends_vector_equals_portable_random) {
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
        const std::string s = random_csv(rng, 1 + rng() % 60);
        const auto portable = ends_of(s, false);
        CHECK(ends_of(s, true) == portable);
        // Any suffix starting at a record end: the scan starts at a record there too.
        if (!portable.empty()) {
            const size_t at = portable[rng() % portable.size()];
            const std::string tail = s.substr(at);
            CHECK(ends_of(tail, true) == ends_of(tail, false));
        }
    }
}

TEST_CASE(quotes_at_64_byte_boundaries) {
    // A quoted field whose quotes (opening, closing, doubled) fall on each offset around 64 and
    // 128, with newlines inside and after it.
    for (size_t pad = 0; pad < 140; ++pad) {
        for (const char* field : {"\"a\nb\"", "\"\"\"\"", "\"x\"\"\n\"", "y\"\n"}) {
            const std::string s = std::string(pad, 'p') + "," + field + "\nz\n" + std::string(70, 'q') + "\n";
            CHECK(ends_of(s, true) == ends_of(s, false));
        }
    }
}

TEST_CASE(csv_scan_incremental_equals_one_call) {
    std::mt19937_64 rng(11);
    for (int round = 0; round < 200; ++round) {
        const std::string s = random_csv(rng, 1 + rng() % 40);
        for (bool vector : {false, true}) {
            const auto ends = ends_of(s, vector);
            const size_t last = ends.empty() ? 0 : ends.back();
            CsvCut cut;
            size_t n = 0;
            while (n < s.size()) {
                n = std::min(s.size(), n + 1 + static_cast<size_t>(rng() % 150));
                cuckoo::dedup::csv_scan(u(s), n, '"', cut);
                CHECK_EQ(cut.searched, n);
            }
            CHECK_EQ(cut.last_end, last);
            CsvCut whole;
            cuckoo::dedup::csv_scan(u(s), s.size(), '"', whole);
            CHECK_EQ(whole.last_end, last);
            CHECK_EQ(whole.in_quotes, cut.in_quotes);
            CHECK_EQ(int(whole.state), int(cut.state));
        }
    }
}

TEST_CASE(csv_scan_every_split_point) {
    std::mt19937_64 rng(3);
    const std::string s = random_csv(rng, 30);
    CsvCut whole;
    cuckoo::dedup::csv_scan(u(s), s.size(), '"', whole);
    for (size_t split = 0; split <= s.size(); ++split) {
        CsvCut cut;
        cuckoo::dedup::csv_scan(u(s), split, '"', cut);
        cuckoo::dedup::csv_scan(u(s), s.size(), '"', cut);
        CHECK_EQ(cut.last_end, whole.last_end);
        CHECK_EQ(cut.in_quotes, whole.in_quotes);
    }
    // Quote state after an unclosed quote.
    CsvCut open;
    const std::string q = "a\n\"b\nc";
    cuckoo::dedup::csv_scan(u(q), q.size(), '"', open);
    CHECK(open.in_quotes);
    CHECK_EQ(open.last_end, size_t(2));
}

TEST_CASE(one_column_keys) {
    CHECK_EQ(key_of("a,b,c", columns({1})), std::string("b"));
    CHECK_EQ(key_of("a,\"b,x\",c", columns({1})), std::string("b,x"));
    CHECK_EQ(key_of("a,\"b\"\"x\",c", columns({1})), std::string("b\"x"));
    CHECK_EQ(key_of("a,\"l1\r\nl2\",c\r", columns({1})), std::string("l1\r\nl2"));
    CHECK_EQ(key_of("a,b\r", columns({1})), std::string("b"));  // the CRLF's '\r' is stripped
    CHECK_EQ(key_of("a,x\"y", columns({1})), std::string("x\"y"));
    CHECK_EQ(key_of("a,", columns({1})), std::string(""));
    CHECK_EQ(key_of("a,\"\"", columns({1})), std::string(""));
    CHECK_EQ(key_of(std::string("a,\0\xff", 4), columns({1})), std::string("\0\xff", 2));
    CHECK_EQ(key_of("a,b", columns({2})), std::string("<missing>"));
    CHECK_EQ(key_of("", columns({0})), std::string("<missing>"));    // an empty line has no fields
    CHECK_EQ(key_of("\r", columns({0})), std::string("<missing>"));
    CHECK_EQ(key_of("\"\"", columns({0})), std::string(""));
    // A long field: no size limit.
    const std::string big(1 << 20, 'k');
    CHECK_EQ(key_of("\"" + big + "\",b", columns({0})), big);
    // The key of an unescaped field points into the record (no copy).
    const std::string rec = "id,\"name\",x";
    std::string scratch, error;
    const unsigned char* data = nullptr;
    size_t len = 0;
    REQUIRE(cuckoo::dedup::field_key(u(rec), rec.size(), columns({1}), scratch, data, len, error) == KeyStatus::found);
    CHECK(data == u(rec) + 4);
    CHECK_EQ(len, size_t(4));
    // A key that needs unescaping is appended to scratch after what it held.
    scratch = "kept";
    const std::string rec2 = "\"a\"\"b\",c";
    REQUIRE(cuckoo::dedup::field_key(u(rec2), rec2.size(), columns({0}), scratch, data, len, error) == KeyStatus::found);
    CHECK_EQ(scratch, std::string("kepta\"b"));
    CHECK(data == reinterpret_cast<const unsigned char*>(scratch.data()) + 4);
    CHECK_EQ(std::string(reinterpret_cast<const char*>(data), len), std::string("a\"b"));
    REQUIRE(cuckoo::dedup::field_key(u(rec2), rec2.size(), columns({1, 0}), scratch, data, len, error) == KeyStatus::found);
    CHECK_EQ(std::string(reinterpret_cast<const char*>(data), len), std::string("\x01" "c\x03" "a\"b"));
    CHECK_EQ(scratch.substr(0, 7), std::string("kepta\"b"));
}

TEST_CASE(invalid_records) {
    std::string scratch, error;
    const unsigned char* data = nullptr;
    size_t len = 0;
    auto status = [&](const std::string& rec) {
        error.clear();
        return cuckoo::dedup::field_key(u(rec), rec.size(), columns({0}), scratch, data, len, error);
    };
    CHECK(status("\"a\"b,c") == KeyStatus::invalid);
    CHECK_EQ(error, std::string("not valid CSV: '\"' inside a quoted field must be doubled or followed by ','"));
    CHECK(status("a,\"b") == KeyStatus::invalid);  // invalid anywhere in the record, not only the key
    CHECK_EQ(error, std::string("not valid CSV: a quoted field is not closed"));
    CHECK(status("a\rb") == KeyStatus::invalid);
    CHECK(status("a,b\r\r") == KeyStatus::found);  // "\r\r\n" is one line end, as Python reads it
    CHECK(status("a\r\rb") == KeyStatus::invalid);
    CHECK(status("\"a\"\rb") == KeyStatus::invalid);
    CHECK(status("a\nb") == KeyStatus::invalid);
}

TEST_CASE(several_columns_are_unambiguous) {
    const std::string k1 = key_of("\"a,b\",c", columns({0, 1}));
    const std::string k2 = key_of("a,\"b,c\"", columns({0, 1}));
    CHECK(k1 != k2);
    CHECK_EQ(k1, std::string("\x03" "a,b\x01" "c"));
    CHECK_EQ(key_of("x,\"y\"\"\",z", columns({2, 1})), std::string("\x01z\x02y\""));
    CHECK_EQ(key_of("x,y", columns({0, 2})), std::string("<missing>"));
    // A length over 127 takes two varint bytes.
    const std::string f(200, 'f');
    CHECK_EQ(key_of(f + ",a", columns({0, 1})), std::string("\xc8\x01", 2) + f + "\x01" "a");
}

TEST_CASE(field_range_keys) {
    CHECK_EQ(key_of("a\tb\tc\td", range(1, 2)), std::string("b\tc"));
    CHECK_EQ(key_of("a\tb\tc\td", range(0, 0)), std::string("a"));
    CHECK_EQ(key_of("a\tb", range(1, 3)), std::string("b"));       // fewer than last+1: to the end
    CHECK_EQ(key_of("a\tb\r", range(1, 1)), std::string("b"));     // '\r' stripped
    CHECK_EQ(key_of("a\t\"b\tc\"", range(1, 1)), std::string("\"b"));  // no quoting
    CHECK_EQ(key_of("a", range(1, 1)), std::string("<missing>"));
    CHECK_EQ(key_of("", range(0, 0)), std::string(""));  // an empty line has one empty field
    CHECK_EQ(key_of("", range(1, 1)), std::string("<missing>"));
    CHECK_EQ(key_of("a\t", range(1, 1)), std::string(""));
}

TEST_CASE(header_fields_and_bom) {
    std::vector<std::string> fields;
    std::string error;
    const std::string h = "id,\"full name\",\"a\"\"b\",\r";
    REQUIRE(cuckoo::dedup::csv_fields(u(h), h.size(), ',', '"', fields, error) == KeyStatus::found);
    CHECK(fields == (std::vector<std::string>{"id", "full name", "a\"b", ""}));
    const std::string e;
    CHECK(cuckoo::dedup::csv_fields(u(e), 0, ',', '"', fields, error) == KeyStatus::found);
    CHECK(fields.empty());
    const std::string bad = "\"x";
    CHECK(cuckoo::dedup::csv_fields(u(bad), bad.size(), ',', '"', fields, error) == KeyStatus::invalid);
    const std::string bom = "\xEF\xBB\xBFid,x\n";
    CHECK_EQ(cuckoo::dedup::bom_length(u(bom), bom.size()), size_t(3));
    CHECK_EQ(cuckoo::dedup::bom_length(u(bom), 2), size_t(0));
    CHECK_EQ(cuckoo::dedup::bom_length(u(h), h.size()), size_t(0));
}

namespace {

// ~60-70-byte records: an id, a name sometimes quoted with a comma, a URL, a note sometimes
// quoted with an embedded newline or doubled quote.
std::string bench_data(size_t bytes) {
    std::mt19937_64 rng(1);
    std::string out;
    for (uint64_t id = 0; out.size() < bytes; ++id) {
        out += std::to_string(100000 + id) + ',';
        out += rng() % 4 == 0 ? "\"Smith, John\"," : "Jane Doe,";
        out += "https://example.com/p/" + std::to_string(rng() % 100000) + ',';
        switch (rng() % 6) {
            case 0: out += "\"line one\nline two\""; break;
            case 1: out += "\"said \"\"hi\"\"\""; break;
            default: out += "plain note";
        }
        out += '\n';
    }
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Prints speeds (no threshold). On 1 MiB in a plain run; CUCKOO_CSV_BENCH=1 test_csv bench
// measures on 64 MiB.
TEST_CASE(bench) {
    const std::string s = bench_data(std::getenv("CUCKOO_CSV_BENCH") ? size_t(64) << 20 : size_t(1) << 20);
    std::vector<uint64_t> ends(s.size() + 8);
    for (bool vector : {true, false}) {
        double best = 1e9;
        size_t count = 0;
        for (int rep = 0; rep < 5; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            count = cuckoo::dedup::csv_record_ends_path(u(s), s.size(), '"', ends.data(), ',', vector);
            best = std::min(best, seconds_since(t0));
        }
        std::printf("csv_record_ends %-8s %8.2f GB/s (%zu records, %.1f bytes each)\n", vector ? "sse2" : "portable",
                    s.size() / best / 1e9, count, double(s.size()) / double(count));
    }
    const size_t count = cuckoo::dedup::csv_record_ends(u(s), s.size(), '"', ends.data());
    for (uint32_t col : {0u, 3u}) {
        const FieldKeySpec spec = columns({col});
        std::string scratch, error;
        double best = 1e9;
        uint64_t sum = 0;
        for (int rep = 0; rep < 5; ++rep) {
            const auto t0 = std::chrono::steady_clock::now();
            size_t start = 0;
            for (size_t r = 0; r < count; ++r) {
                const unsigned char* data = nullptr;
                size_t len = 0;
                cuckoo::dedup::field_key(u(s) + start, ends[r] - 1 - start, spec, scratch, data, len, error);
                sum += len;
                start = ends[r];
            }
            best = std::min(best, seconds_since(t0));
        }
        std::printf("field_key column %u   %8.2f GB/s of records (checksum %llu)\n", col, s.size() / best / 1e9,
                    static_cast<unsigned long long>(sum));
    }
    CHECK(count > 0);
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
