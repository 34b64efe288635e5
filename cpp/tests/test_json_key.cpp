// The JSONL framing's key extraction (cuckoo/dedup/json_key.hpp): the key rule's examples, every
// class of invalid text with its offset, depth and length without limits, and the scalar, SSE2
// and AVX2 string scans agreeing on random lines. The `bench_json_key` case prints a throughput
// (no threshold: a unit test never asserts a time).
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "cuckoo/dedup/json_key.hpp"

using cuckoo::dedup::json_key;
using cuckoo::dedup::JsonKeyReader;
using cuckoo::dedup::JsonPath;
using cuckoo::dedup::JsonScan;
using cuckoo::dedup::KeyStatus;

namespace {

struct Result {
    KeyStatus status;
    std::string key, error;
};

JsonPath make_path(std::initializer_list<const char*> members) {
    JsonPath p;
    for (const char* m : members) p.members.emplace_back(m);
    return p;
}

Result run(const std::string& line, const JsonPath& path, JsonScan scan = JsonScan::automatic) {
    Result r;
    JsonKeyReader reader(scan);
    r.status = reader.read(reinterpret_cast<const unsigned char*>(line.data()), line.size(), path, r.key, r.error);
    return r;
}

// The key of the whole line (empty path); "<missing>" or "<invalid>: message" otherwise.
std::string key_of(const std::string& line, const JsonPath& path = JsonPath{}) {
    const Result r = run(line, path);
    if (r.status == KeyStatus::missing) return "<missing>";
    if (r.status == KeyStatus::invalid) return "<invalid>: " + r.error;
    return r.key;
}

// The error of an invalid line ("" if the line is not rejected).
std::string error_of(const std::string& line) {
    const Result r = run(line, JsonPath{});
    return r.status == KeyStatus::invalid ? r.error : std::string();
}

const char* scan_name(JsonScan scan) {
    return scan == JsonScan::avx2 ? "avx2" : scan == JsonScan::sse2 ? "sse2" : "scalar";
}

// Seconds of this thread's CPU time where the platform has the clock (the machines running the
// tests are shared: CPU time is steadier than wall time there), else of wall time.
double now_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
#else
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
#endif
}

}  // namespace

TEST_CASE(numbers_canonical) {
    struct {
        const char* in;
        std::string key;
    } cases[] = {
        {"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"-0e5", "0"}, {"0e99999999999999999999999", "0"},
        {"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"0.1e1", "1"}, {"1E+0", "1"},
        {"100", "100"}, {"1e2", "100"}, {"-12.50", "-12.5"},
        {"9007199254740993", "9007199254740993"}, {"9007199254740992", "9007199254740992"},
        {"1e400", "1e400"}, {"2e400", "2e400"}, {"0.5", "0.5"}, {"5e-1", "0.5"}, {"123.25", "123.25"},
        {"0.0000001", "0.0000001"}, {"1e-7", "0.0000001"}, {"1e-8", "1e-8"}, {"1.5e-30", "1.5e-30"},
        {"1e64", "10000000000000000000000000000000000000000000000000000000000000000"}, {"1e65", "1e65"},
        {"1.5e65", "15" + std::string(64, '0')}, {"15e65", "1.5e66"}, {"1.5e66", "1.5e66"},
        {"1234567890123456789012.5", "1.2345678901234567890125e21"}, {"123456789012345678901.5", "123456789012345678901.5"},
        {"12345678901234567890.5", "12345678901234567890.5"}, {"-0.00001234", "-0.00001234"},
        {"1e99999999999999999999", "1e99999999999999999999"}, {"1e-99999999999999999999", "1e-99999999999999999999"},
        {"12.5e99999999999999999999", "1.25e100000000000000000000"},
        {"0.0125e-99999999999999999999", "1.25e-100000000000000000001"},
        {"10e999999999999999999", "1e1000000000000000000"}, {"1e000000000000000000000000001", "10"},
        {"-1e-000000000000000000000000000007", "-0.0000001"},
    };
    for (const auto& c : cases) {
        cktest::context() = c.in;
        CHECK_EQ(key_of(c.in), c.key);
    }
    // A 5,000-digit integer is written out; 2^53 + 1 and 2^53 stay apart.
    std::string big(5000, '7');
    CHECK_EQ(key_of(big), big);
    CHECK_EQ(key_of(big + ".000e0"), big);
    CHECK(key_of("9007199254740993") != key_of("9007199254740992"));
    CHECK(key_of("1e400") != key_of("2e400"));
}

TEST_CASE(number_of_100000_digits) {
    std::string digits(100000, '0');
    digits[0] = '3';
    digits[99999] = '1';
    CHECK_EQ(key_of(digits), digits);
    CHECK_EQ(key_of("-" + digits + ".0"), "-" + digits);
    std::string round = "1" + std::string(99999, '0');  // > 64 trailing zeros: scientific
    CHECK_EQ(key_of(round), std::string("1e99999"));
    // an exponent of 100,000 digits, exact
    std::string e = "1e" + std::string(100000, '9');
    CHECK_EQ(key_of(e), e);
    CHECK_EQ(key_of("10" + e.substr(1)), "1e1" + std::string(100000, '0'));
}

TEST_CASE(strings_canonical) {
    CHECK_EQ(key_of("\"\\u00e9\""), std::string("\"\xc3\xa9\""));
    CHECK_EQ(key_of("\"\xc3\xa9\""), std::string("\"\xc3\xa9\""));
    CHECK_EQ(key_of(R"("a\/b\"\\\n\r\t\b\f")"), std::string(R"("a/b\"\\\n\r\t\b\f")"));
    CHECK_EQ(key_of(R"("\u0001\u001F\u0020\u007f")"), std::string("\"\\u0001\\u001f \x7f\""));
    CHECK_EQ(key_of(R"("\u2028")"), std::string("\"\xe2\x80\xa8\""));
    // a surrogate pair escape is its code point; a lone one its 3-byte form
    CHECK_EQ(key_of(R"("\ud83d\ude00")"), std::string("\"\xf0\x9f\x98\x80\""));
    CHECK_EQ(key_of("\"\xf0\x9f\x98\x80\""), std::string("\"\xf0\x9f\x98\x80\""));
    CHECK_EQ(key_of(R"("\ud83d")"), std::string("\"\xed\xa0\xbd\""));
    CHECK_EQ(key_of(R"("\ude00\ud83d")"), std::string("\"\xed\xb8\x80\xed\xa0\xbd\""));
    CHECK_EQ(key_of(R"("\ud83dx")"), std::string("\"\xed\xa0\xbdx\""));
    CHECK_EQ(key_of(R"("\ud83d\u0041")"), std::string("\"\xed\xa0\xbd" "A\""));
    CHECK_EQ(key_of(R"("\ud83d\ud83d\ude00")"), std::string("\"\xed\xa0\xbd\xf0\x9f\x98\x80\""));
    CHECK_EQ(key_of(" true "), std::string("true"));
    CHECK_EQ(key_of("false"), std::string("false"));
    CHECK_EQ(key_of("null"), std::string("null"));
}

TEST_CASE(containers_canonical) {
    CHECK_EQ(key_of(R"( { "b" : 2 , "a" : [ 1.0 , { } , [ ] , "x" ] } )"), std::string(R"({"a":[1,{},[],"x"],"b":2})"));
    // duplicate names: the last occurrence wins (its value, once)
    CHECK_EQ(key_of(R"({"a":1,"b":2,"a":3})"), std::string(R"({"a":3,"b":2})"));
    CHECK_EQ(key_of(R"({"a":1,"a":2,"a":{"z":1,"y":2,"z":0}})"), std::string(R"({"a":{"y":2,"z":0}})"));
    // names sort by decoded bytes: "\"" (0x22) before "#" (0x23) though its escape starts with '\\'
    CHECK_EQ(key_of(R"({"#":1,"\"":2,"\u0001":3,"\u00e9":4,"\u0065":5})"),
             std::string("{\"\\u0001\":3,\"\\\"\":2,\"#\":1,\"e\":5,\"\xc3\xa9\":4}"));
    // "\u00e9" and "é" are one name; the pair escape is U+1F600, which sorts after U+FFFF
    CHECK_EQ(key_of("{\"\xc3\xa9\":1,\"\\u00e9\":2}"), std::string("{\"\xc3\xa9\":2}"));
    CHECK_EQ(key_of("{\"\\ud83d\\ude00\":1,\"\xef\xbf\xbf\":2,\"\\ud83d\":3}"),
             std::string("{\"\xed\xa0\xbd\":3,\"\xef\xbf\xbf\":2,\"\xf0\x9f\x98\x80\":1}"));
    CHECK_EQ(key_of(R"({"ab":1,"a":2,"":3})"), std::string(R"({"":3,"a":2,"ab":1})"));
}

TEST_CASE(paths) {
    const std::string line = R"({"id":7,"user":{"name":"x","id":"u1"},"tags":[{"id":1}],"id":8})";
    CHECK_EQ(key_of(line, make_path({"id"})), std::string("8"));  // the last "id"
    CHECK_EQ(key_of(line, make_path({"user", "id"})), std::string("\"u1\""));
    CHECK_EQ(key_of(line, make_path({"user"})), std::string(R"({"id":"u1","name":"x"})"));
    CHECK_EQ(key_of(line, make_path({"tags", "id"})), std::string("<missing>"));  // an array level
    CHECK_EQ(key_of(line, make_path({"nope"})), std::string("<missing>"));
    CHECK_EQ(key_of(line, make_path({"id", "x"})), std::string("<missing>"));
    CHECK_EQ(key_of("[1,2]", make_path({"a"})), std::string("<missing>"));
    CHECK_EQ(key_of("\"a\"", make_path({"a"})), std::string("<missing>"));
    CHECK_EQ(key_of("", make_path({"a"})), std::string("<missing>"));
    CHECK_EQ(key_of(" \t\r\n ", make_path({"a"})), std::string("<missing>"));
    CHECK_EQ(key_of("", JsonPath{}), std::string("<missing>"));
    // the last occurrence decides, also for what lies below it
    CHECK_EQ(key_of(R"({"a":{"b":1},"a":{"c":2}})", make_path({"a", "b"})), std::string("<missing>"));
    CHECK_EQ(key_of(R"({"a":{"c":2},"a":{"b":1}})", make_path({"a", "b"})), std::string("1"));
    CHECK_EQ(key_of(R"({"a":{"b":1},"a":5})", make_path({"a", "b"})), std::string("<missing>"));
    CHECK_EQ(key_of(R"({"a":{"b":{"b":3}},"b":4})", make_path({"a", "b", "b"})), std::string("3"));
    CHECK_EQ(key_of(R"({"x":{"a":{"b":9}},"a":{"c":1}})", make_path({"a", "b"})), std::string("<missing>"));
    // names compare decoded
    CHECK_EQ(key_of(R"({"\u0061\n":1})", make_path({"a\n"})), std::string("1"));
    CHECK_EQ(key_of("{\"\\u00e9\":1}", make_path({"\xc3\xa9"})), std::string("1"));
    // the whole line is validated even once the key is found
    CHECK_EQ(key_of(R"({"id":1,"x":[1,2,}])", make_path({"id"})), std::string("<invalid>: not valid JSON: expected a value at byte 17"));
    CHECK_EQ(key_of(R"({"id":1} x)", make_path({"id"})), std::string("<invalid>: not valid JSON: unexpected data after the value at byte 9"));
    // key is appended to, and untouched unless found
    std::string key = "prefix:", error;
    const std::string l = R"({"a":"v"})";
    CHECK(json_key(reinterpret_cast<const unsigned char*>(l.data()), l.size(), make_path({"a"}), key, error) == KeyStatus::found);
    CHECK_EQ(key, std::string("prefix:\"v\""));
    CHECK(json_key(reinterpret_cast<const unsigned char*>(l.data()), l.size(), make_path({"b"}), key, error) == KeyStatus::missing);
    CHECK_EQ(key, std::string("prefix:\"v\""));
}

TEST_CASE(invalid_texts_with_offsets) {
    struct {
        std::string in;
        const char* error;
    } cases[] = {
        {R"({"a":1 "b":2})", "expected ',' or '}' at byte 7"},
        {"[1 2]", "expected ',' or ']' at byte 3"},
        {"{1:2}", "expected '\"' (a member name) at byte 1"},
        {R"({"a",1})", "expected ':' at byte 4"},
        {R"({"a":1,})", "expected '\"' (a member name) at byte 7"},
        {"[1,]", "expected a value at byte 3"},
        {"[", "expected a value at byte 1"},
        {"{", "expected '\"' (a member name) at byte 1"},
        {R"({"a":1)", "expected ',' or '}' at byte 6"},
        {"]", "expected a value at byte 0"},
        {"1 2", "unexpected data after the value at byte 2"},
        {"\"abc", "unterminated string at byte 4"},
        {"\"ab\\", "unterminated string at byte 4"},
        {R"("\x")", "invalid escape at byte 1"},
        {R"("\u12g4")", "invalid \\u escape at byte 1"},
        {R"("\u12")", "invalid \\u escape at byte 1"},
        {std::string("\"a\tb\""), "control character in a string at byte 2"},
        {std::string("\"a\x00" "b\"", 5), "control character in a string at byte 2"},
        {"\"\xff\"", "invalid UTF-8 at byte 1"},
        {"\"\xc0\xaf\"", "invalid UTF-8 at byte 1"},          // overlong
        {"\"\xe0\x80\xaf\"", "invalid UTF-8 at byte 1"},      // overlong
        {"\"\xed\xa0\x80\"", "invalid UTF-8 at byte 1"},      // an encoded surrogate
        {"\"\xf4\x90\x80\x80\"", "invalid UTF-8 at byte 1"},  // above U+10FFFF
        {"\"\xc3\"", "invalid UTF-8 at byte 1"},              // truncated
        {"\"\xe2\x82\"", "invalid UTF-8 at byte 1"},
        {"\"\x80\"", "invalid UTF-8 at byte 1"},
        {"\xef\xbb\xbf{}", "expected a value at byte 0"},     // a byte order mark
        {"01", "invalid number: leading zero at byte 1"},
        {"-01", "invalid number: leading zero at byte 2"},
        {"+1", "expected a value at byte 0"},
        {".5", "expected a value at byte 0"},
        {"1.", "invalid number: expected a digit after '.' at byte 2"},
        {"1.e5", "invalid number: expected a digit after '.' at byte 2"},
        {"1e", "invalid number: expected an exponent digit at byte 2"},
        {"1e+", "invalid number: expected an exponent digit at byte 3"},
        {"-", "invalid number: expected a digit at byte 1"},
        {"-a", "invalid number: expected a digit at byte 1"},
        {"NaN", "expected a value at byte 0"},
        {"Infinity", "expected a value at byte 0"},
        {"-Infinity", "invalid number: expected a digit at byte 1"},
        {"tru", "expected a value at byte 0"},
        {"nul", "expected a value at byte 0"},
        {"True", "expected a value at byte 0"},
        {"{\"a\":1}\x0b", "unexpected data after the value at byte 7"},  // not JSON whitespace
        {"\xc2\xa0" "1", "expected a value at byte 0"},                   // nor is U+00A0
        {"[1]]", "unexpected data after the value at byte 3"},
        {"{\"a\":1}}", "unexpected data after the value at byte 7"},
    };
    for (const auto& c : cases) {
        cktest::context() = c.in;
        CHECK_EQ(error_of(c.in), std::string("not valid JSON: ") + c.error);
        // the same verdict with a path, and at every scan
        for (JsonScan scan : {JsonScan::scalar, JsonScan::sse2, JsonScan::avx2}) {
            const Result r = run(c.in, make_path({"a"}), scan);
            CHECK(r.status == KeyStatus::invalid);
            CHECK_EQ(r.error, std::string("not valid JSON: ") + c.error);
        }
    }
}

TEST_CASE(depth_of_a_million) {
    const size_t depth = 1000000;
    std::string arrays = std::string(depth, '[') + std::string(depth, ']');
    CHECK_EQ(key_of(arrays), arrays);
    std::string objects;
    for (size_t k = 0; k < depth; ++k) objects += "{\"a\":";
    objects += "1";
    objects += std::string(depth, '}');
    CHECK_EQ(key_of(objects), objects);
    // the path three levels down: the key is the rest, 999,997 levels of it
    const std::string rest = objects.substr(3 * 5, objects.size() - 3 * 5 - 3);
    CHECK_EQ(key_of(objects, make_path({"a", "a", "a"})), rest);
    // a path a million members long: linear, no depth^2 bookkeeping
    JsonPath deep;
    deep.members.assign(depth, "a");
    CHECK_EQ(key_of(objects, deep), std::string("1"));
    deep.members.push_back("a");
    CHECK_EQ(key_of(objects, deep), std::string("<missing>"));
    // unsorted members at every level: sorted in linear time
    std::string mixed;
    for (size_t k = 0; k < depth; ++k) mixed += "{\"b\":1,\"a\":";
    mixed += "0";
    std::string want;
    for (size_t k = 0; k < depth; ++k) want += "{\"a\":";
    want += "0";
    for (size_t k = 0; k < depth; ++k) {
        mixed += "}";
        want += ",\"b\":1}";
    }
    CHECK_EQ(key_of(mixed), want);
    CHECK_EQ(key_of(mixed, make_path({"b"})), std::string("1"));
    // unbalanced: invalid, at the end
    CHECK_EQ(error_of(arrays.substr(0, arrays.size() - 1)), "not valid JSON: expected ',' or ']' at byte " + std::to_string(2 * depth - 1));
}

namespace {

// Random JSON lines: nested values, strings with escapes and UTF-8 (long runs too, so the vector
// loops and their tails both run), numbers in every spelling; some mutated into invalid ones.
struct LineMaker {
    cktest::Rng rng;
    explicit LineMaker(uint64_t seed) : rng(seed) {}

    void string(std::string& out) {
        out.push_back('"');
        const size_t len = rng.coin(20) ? rng.below(80) : rng.below(10);
        static const char* pieces[] = {"\\\"", "\\\\", "\\/", "\\n", "\\t", "\\u00e9", "\\ud83d\\ude00", "\\ud800",
                                       "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", " ", "'"};
        for (size_t k = 0; k < len; ++k) {
            if (rng.coin(15)) out += pieces[rng.below(sizeof(pieces) / sizeof(pieces[0]))];
            else out.push_back(static_cast<char>('a' + rng.below(26)));
        }
        out.push_back('"');
    }
    void number(std::string& out) {
        if (rng.coin(30)) out.push_back('-');
        if (rng.coin(20)) out.push_back('0');
        else out += std::to_string(1 + rng.below(1000000));
        if (rng.coin(30)) {
            out.push_back('.');
            out += std::to_string(rng.below(10000));
        }
        if (rng.coin(20)) {
            out.push_back(rng.coin(50) ? 'e' : 'E');
            if (rng.coin(50)) out.push_back(rng.coin(50) ? '-' : '+');
            out += std::to_string(rng.below(400));
        }
    }
    void ws(std::string& out) {
        if (rng.coin(10)) out += " \t\n\r"[rng.below(4)];
    }
    void value(std::string& out, int depth) {
        const uint64_t r = rng.below(depth > 4 ? 6 : 8);
        ws(out);
        if (r == 0) string(out);
        else if (r == 1 || r == 2) number(out);
        else if (r == 3) out += "true";
        else if (r == 4) out += "null";
        else if (r == 5) string(out);
        else if (r == 6) {
            out.push_back('[');
            const uint64_t n = rng.below(4);
            for (uint64_t k = 0; k < n; ++k) {
                if (k) out.push_back(',');
                value(out, depth + 1);
            }
            out.push_back(']');
        } else {
            object(out, depth + 1);
        }
        ws(out);
    }
    void object(std::string& out, int depth) {
        out.push_back('{');
        const uint64_t n = rng.below(6);
        for (uint64_t k = 0; k < n; ++k) {
            if (k) out.push_back(',');
            ws(out);
            if (rng.coin(60)) {
                out.push_back('"');
                out.push_back(static_cast<char>('a' + rng.below(3)));
                out.push_back('"');
            } else {
                string(out);
            }
            ws(out);
            out.push_back(':');
            value(out, depth);
        }
        out.push_back('}');
    }
    std::string line() {
        std::string out;
        object(out, 0);
        if (rng.coin(30)) {  // a mutation: mostly invalid
            const size_t at = rng.below(out.size());
            static const char bytes[] = {'"', '\\', ',', ':', '{', '}', '[', ']', '\x01', '\x80', '\xff', '0', 'e', '.', ' '};
            const char b = bytes[rng.below(sizeof(bytes))];
            if (rng.coin(50)) out[at] = b;
            else if (rng.coin(50)) out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), b);
            else out.erase(at, 1);
        }
        return out;
    }
};

}  // namespace

TEST_CASE(scans_agree_on_random_lines) {
    LineMaker maker(42);
    const JsonPath paths[] = {JsonPath{}, make_path({"a"}), make_path({"b", "a"}), make_path({"a", "b", "c"})};
    uint64_t found = 0, missing = 0, invalid = 0;
    for (int k = 0; k < 20000; ++k) {
        const std::string line = maker.line();
        for (const JsonPath& path : paths) {
            const Result s = run(line, path, JsonScan::scalar);
            for (JsonScan scan : {JsonScan::sse2, JsonScan::avx2}) {
                const Result v = run(line, path, scan);
                if (v.status != s.status || v.key != s.key || v.error != s.error) {
                    cktest::context() = line;
                    CHECK(v.status == s.status);
                    CHECK_EQ(v.key, s.key);
                    CHECK_EQ(v.error, s.error);
                }
            }
            found += s.status == KeyStatus::found;
            missing += s.status == KeyStatus::missing;
            invalid += s.status == KeyStatus::invalid;
        }
    }
    // each outcome was exercised
    CHECK(found > 1000);
    CHECK(missing > 1000);
    CHECK(invalid > 1000);
}

TEST_CASE(reader_reuse_matches_fresh_calls) {
    // One reader over many lines gives what a fresh json_key gives each line (no state leaks).
    LineMaker maker(7);
    JsonKeyReader reader;
    const JsonPath path = make_path({"a"});
    for (int k = 0; k < 5000; ++k) {
        const std::string line = maker.line();
        std::string key1, err1, key2, err2;
        const auto* p = reinterpret_cast<const unsigned char*>(line.data());
        const KeyStatus s1 = reader.read(p, line.size(), path, key1, err1);
        const KeyStatus s2 = json_key(p, line.size(), path, key2, err2);
        CHECK(s1 == s2);
        CHECK_EQ(key1, key2);
        CHECK_EQ(err1, err2);
    }
}

TEST_CASE(readers_on_two_threads) {
    // The pipeline runs one reader per producer thread: two at once give what one gives alone.
    std::vector<std::string> lines;
    LineMaker maker(99);
    for (int k = 0; k < 4000; ++k) lines.push_back(maker.line());
    const JsonPath path = make_path({"a"});
    auto keys_of = [&](std::vector<std::string>& out) {
        JsonKeyReader reader;
        for (const std::string& line : lines) {
            std::string key, error;
            const KeyStatus s = reader.read(reinterpret_cast<const unsigned char*>(line.data()), line.size(), path, key, error);
            out.push_back(std::to_string(static_cast<int>(s)) + ":" + key + error);
        }
    };
    std::vector<std::string> alone, first, second;
    keys_of(alone);
    std::thread t1([&] { keys_of(first); }), t2([&] { keys_of(second); });
    t1.join();
    t2.join();
    CHECK(first == alone);
    CHECK(second == alone);
}

TEST_CASE(bench_json_key) {
    // Each explicit scan, timed once (the level only decides which of them `automatic` picks, so
    // the runs at the other levels would time the same code again).
    static bool timed = false;
    if (timed) return;
    timed = true;
    // Typical event lines: ~150-byte objects of 8 members (strings, ints, a nested object); and
    // log lines, the same with a ~250-byte message string, where the vector scans matter most.
    for (const bool log : {false, true}) {
        cktest::Rng rng(1);
        std::string data;
        std::vector<size_t> ends;
        while (data.size() < (6u << 20)) {
            data += "{\"id\":" + std::to_string(rng.below(1000000000)) + ",\"ts\":" + std::to_string(1700000000000 + rng.below(1000000)) +
                    ",\"event\":\"" + (rng.coin(50) ? "click" : "page_view") + "\",\"user\":{\"name\":\"user" +
                    std::to_string(rng.below(100000)) + "\",\"country\":\"DE\"},\"url\":\"/products/item-" + std::to_string(rng.below(10000)) +
                    "\",\"ok\":true,\"score\":" + std::to_string(rng.below(1000)) + ".5";
            if (log) {
                data += ",\"message\":\"request handled by worker " + std::to_string(rng.below(64)) + " after ";
                data += std::to_string(rng.below(5000)) + " ms: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) ";
                data += "Chrome/120.0 Safari/537.36, upstream=10.0.0." + std::to_string(rng.below(255)) + ":8080, cache=miss, bytes=";
                data += std::to_string(rng.below(1000000)) + "\"";
            }
            data += "}";
            ends.push_back(data.size());
        }
        const auto* p = reinterpret_cast<const unsigned char*>(data.data());
        const JsonPath top = make_path({"id"}), nested = make_path({"user", "name"});
        for (JsonScan scan : {JsonScan::scalar, JsonScan::sse2, JsonScan::avx2}) {
            for (const JsonPath* path : {&top, &nested}) {
                JsonKeyReader reader(scan);
                std::string key, error;
                uint64_t found = 0;
                double best = 1e30;
                for (int round = 0; round < 5; ++round) {
                    const double t0 = now_seconds();
                    size_t start = 0;
                    for (size_t e : ends) {
                        key.clear();
                        found += reader.read(p + start, e - start, *path, key, error) == KeyStatus::found;
                        start = e;
                    }
                    best = std::min(best, now_seconds() - t0);
                }
                CHECK_EQ(found, 5 * ends.size());
                std::printf("  json_key %s lines, scan %s%s, key %s: %.0f MB/s (%.0f bytes a line, best of 5 over %.1f MB, "
                            "thread CPU time)\n",
                            log ? "log" : "event", scan_name(JsonKeyReader::resolve(scan)),
                            JsonKeyReader::resolve(scan) == JsonKeyReader::resolve(JsonScan::automatic) ? " (automatic here)" : "",
                            path == &top ? "id" : "user.name", static_cast<double>(data.size()) / best / 1e6,
                            static_cast<double>(data.size()) / static_cast<double>(ends.size()), static_cast<double>(data.size()) / 1e6);
            }
        }
    }
}

int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
