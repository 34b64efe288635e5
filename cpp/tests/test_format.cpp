// Tests of cuckoo/format.hpp without Python: round trips, and a randomized robustness run that
// mutates, truncates and extends serialized filters held in exactly-sized heap buffers, so that a
// build with -DCUCKOO_SANITIZE=ON (AddressSanitizer) catches any read past the end. Every change
// must be rejected with cuckoo::FormatError by the verifying readers; nothing else may escape.
#include "cuckoo/format.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what, long detail = 0) {
    if (!ok) {
        std::printf("FAIL: %s (%ld)\n", what, detail);
        ++failures;
    }
}

// The bytes in a heap block of exactly their size (no slack for an overread to hide in).
struct Exact {
    explicit Exact(const std::vector<unsigned char>& v) : size(v.size()), data(new unsigned char[v.size() ? v.size() : 1]) {
        if (size) std::memcpy(data.get(), v.data(), size);
    }
    size_t size;
    std::unique_ptr<unsigned char[]> data;
};

// A filter of `n` keys; growable ones are given more keys than their capacity, so they have
// several stages.
cuckoo::StagedFilter make(uint64_t capacity, unsigned f, unsigned b, uint64_t n, uint64_t seed, bool growable = false) {
    cuckoo::StagedFilter flt(cuckoo::Filter::for_capacity(capacity, 0, f, b, 100, seed), growable);
    for (uint64_t i = 0; i < n; ++i) flt.insert_hash(cuckoo::hash_u64(i, seed));
    return flt;
}

// 0: rejected with FormatError; 1: accepted.
int read_copy(const std::vector<unsigned char>& v, const cuckoo::StagedFilter* expect) {
    Exact e(v);
    try {
        cuckoo::StagedFilter g = cuckoo::format::from_bytes(e.data.get(), e.size);
        if (expect) check(g == *expect, "accepted copy differs");
        return 1;
    } catch (const cuckoo::FormatError&) {
        return 0;
    }
}

int read_view(const std::vector<unsigned char>& v, bool verify) {
    Exact e(v);
    try {
        cuckoo::StagedFilter g = cuckoo::format::view_bytes(e.data.get(), e.size, verify);
        // Use it: every lookup must stay inside the buffer.
        uint64_t hits = 0;
        for (uint64_t i = 0; i < 200; ++i) hits += g.contains_hash(cuckoo::hash_u64(i, 1));
        for (const cuckoo::Filter& st : g.stages()) hits += cuckoo::format::count_nonzero_slots(st.table());
        cuckoo::StagedFilter c = g;  // an owned, writable copy
        c.insert_hash(12345);
        (void)hits;
        return 1;
    } catch (const cuckoo::FormatError&) {
        return 0;
    }
}

// Through the stream reader, at most `chunk` bytes a read (1: byte by byte). 0: rejected with
// FormatError; 1: accepted.
int read_stream(const std::vector<unsigned char>& v, const cuckoo::StagedFilter* expect, uint64_t chunk) {
    Exact e(v);
    size_t at = 0;
    auto read = [&](unsigned char* dst, uint64_t n) -> uint64_t {
        const uint64_t k = std::min<uint64_t>(std::min<uint64_t>(n, chunk), e.size - at);
        if (k) std::memcpy(dst, e.data.get() + at, static_cast<size_t>(k));
        at += static_cast<size_t>(k);
        return k;
    };
    try {
        cuckoo::format::StreamReader<decltype(read)> in(read);
        std::vector<unsigned char> header;
        const cuckoo::format::Header h = cuckoo::format::read_stream_header(in, header);
        cuckoo::StagedFilter g = cuckoo::format::from_stream_tables(h, cuckoo::format::read_stream_tables(in, h));
        check(in.position() == h.file_length && at == h.file_length, "the stream reader stops at the declared length");
        if (expect) check(g == *expect, "accepted stream differs");
        return 1;
    } catch (const cuckoo::FormatError&) {
        return 0;
    }
}

#ifdef CUCKOO_TEST_DATA
// The golden filter files of tests/data (written on a little-endian machine by make_golden.py,
// never regenerated) read the same here: in CI this runs under qemu-user on big-endian s390x and
// on aarch64, where the portable (non-AVX2) paths run. A few keys of each *_keys.json, with the
// (i1, i2, fingerprint) and answer recorded there: ints, a non-ASCII str, 100 bytes, an absent key.
struct GoldenKey {
    bool is_int;
    uint64_t value;    // an int key
    std::string text;  // a str key's UTF-8 or a bytes key
    uint64_t i1, i2;
    uint32_t fp;
    bool contains;
};

std::vector<unsigned char> read_file(const std::string& path) {
    std::vector<unsigned char> v;
    FILE* in = std::fopen(path.c_str(), "rb");
    check(in != nullptr, "golden file opens");
    if (!in) return v;
    int c;
    while ((c = std::fgetc(in)) != EOF) v.push_back(static_cast<unsigned char>(c));
    std::fclose(in);
    return v;
}

void check_golden(const char* file, uint64_t seed, const std::vector<GoldenKey>& keys) {
    const std::vector<unsigned char> bytes = read_file(std::string(CUCKOO_TEST_DATA) + "/" + file);
    if (bytes.empty()) return;
    try {
        const cuckoo::StagedFilter g = cuckoo::format::from_bytes(bytes.data(), bytes.size());
        check(g.size() == 68 && g.bucket_count() == 32 && g.first().fingerprint_bits() == 12, "golden parameters");
        check(g.first().seed() == seed, "golden seed");
        for (const GoldenKey& k : keys) {
            const uint64_t h = k.is_int ? g.first().hash_int(k.value) : g.first().hash_key(k.text.data(), k.text.size());
            const cuckoo::KeyHash at = g.first().locate(h);
            check(at.i1 == k.i1 && at.i2 == k.i2 && at.fp == k.fp, "golden key's buckets and fingerprint", static_cast<long>(k.i1));
            check(g.contains_hash(h) == k.contains, "golden key's answer", static_cast<long>(k.i1));
        }
        check(cuckoo::format::to_bytes(g) == bytes, "golden file written back byte for byte");
    } catch (const cuckoo::FormatError& e) {
        std::printf("FAIL: golden file %s: %s\n", file, e.what());
        ++failures;
    }
}

std::string hundred_bytes() {
    std::string s;
    for (int i = 0; i < 100; ++i) s += static_cast<char>(i);
    return s;
}

void check_golden_files() {
    const uint64_t seed = 0x9E3779B97F4A7C15ull;
    const std::string cafe = "na\xc3\xafve caf\xc3\xa9";  // "naïve café" in UTF-8
    check_golden("golden_v1.cuckoo", seed,
                 {{true, ~0ull, "", 19, 15, 2738, true},
                  {false, 0, cafe, 29, 11, 1057, true},
                  {false, 0, hundred_bytes(), 23, 27, 954, true},
                  {false, 0, "key-7", 8, 15, 3360, true},
                  {false, 0, "absent-3", 6, 18, 3187, false}});
    check_golden("golden_v1_xxh3.cuckoo", seed,
                 {{true, ~0ull, "", 4, 5, 2222, true},
                  {false, 0, cafe, 13, 20, 872, true},
                  {false, 0, hundred_bytes(), 0, 22, 413, true},
                  {false, 0, "key-7", 0, 30, 879, true},
                  {false, 0, "absent-3", 7, 22, 3222, false}});
}
#endif

}  // namespace

int main() {
    std::mt19937_64 rng(20240601);
    std::vector<cuckoo::StagedFilter> filters;
    for (unsigned f : {4u, 7u, 12u, 13u, 16u, 25u, 32u})
        for (unsigned b : {2u, 4u, 8u}) filters.push_back(make(40 + rng() % 200, f, b, rng() % 40, rng()));
    for (unsigned b : {2u, 4u, 8u}) {  // growable, with 3 to 5 stages
        filters.push_back(make(20, 10, b, 300, rng(), true));
        check(filters.back().stage_count() >= 3, "growable test filter has several stages");
    }

    // Round trips, and count_nonzero_slots against the per-bucket count.
    for (const cuckoo::StagedFilter& flt : filters) {
        const std::vector<unsigned char> bytes = cuckoo::format::to_bytes(flt);
        check(bytes.size() == cuckoo::format::serialized_size(flt), "size");
        check(bytes.size() % 64 == 0, "size is a multiple of 64");
        check(read_copy(bytes, &flt) == 1, "round trip (copy)");
        check(read_view(bytes, true) == 1 && read_view(bytes, false) == 1, "round trip (view)");
        check(read_stream(bytes, &flt, 1) == 1 && read_stream(bytes, &flt, 1 << 20) == 1, "round trip (stream)");
        for (const cuckoo::Filter& st : flt.stages())
            check(cuckoo::format::count_nonzero_slots(st.table()) == st.count_occupied(), "count");
        std::vector<unsigned char> sunk;
        cuckoo::format::write(flt, [&](const unsigned char* p, size_t n) { sunk.insert(sunk.end(), p, p + n); });
        check(sunk == bytes, "write() and to_bytes() agree");
    }

    long cases = 0, accepted_views = 0;
    for (int round = 0; round < 20000; ++round) {
        const cuckoo::StagedFilter& flt = filters[rng() % filters.size()];
        const std::vector<unsigned char> good = cuckoo::format::to_bytes(flt);
        std::vector<unsigned char> bad = good;
        switch (rng() % 4) {
            case 0:  // bit flips
                for (int k = 1 + rng() % 3; k > 0; --k) bad[rng() % bad.size()] ^= 1u << (rng() % 8);
                break;
            case 1:  // byte overwrite, mostly in the header
                for (int k = 1 + rng() % 3; k > 0; --k) bad[(rng() % 2 ? rng() % 192 : rng()) % bad.size()] = rng() & 255;
                break;
            case 2:  // truncation
                bad.resize(rng() % bad.size());
                break;
            default:  // extension
                bad.resize(bad.size() + 1 + rng() % 100, static_cast<unsigned char>(rng()));
                break;
        }
        ++cases;
        const bool same = bad == good;
        check(read_copy(bad, same ? &flt : nullptr) == (same ? 1 : 0), "copy reader accepts exactly the unchanged bytes", round);
        check(read_view(bad, true) == (same ? 1 : 0), "verifying view accepts exactly the unchanged bytes", round);
        accepted_views += read_view(bad, false);
        // A stream is read to the length its header declares and no further: bytes appended to
        // an unchanged filter are not its business.
        const bool starts_unchanged = bad.size() >= good.size() && std::equal(good.begin(), good.end(), bad.begin());
        check(read_stream(bad, starts_unchanged ? &flt : nullptr, 1 + rng() % 300) == (starts_unchanged ? 1 : 0),
              "stream reader accepts exactly the bytes that start with the unchanged ones", round);
    }
#ifdef CUCKOO_TEST_DATA
    check_golden_files();
#endif
    std::printf("%ld cases, %ld accepted by the non-verifying view (table changes), %d failures\n", cases,
                accepted_views, failures);
    return failures == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
