// Micro-benchmark of the header-only core: ns per key of the bulk and scalar loops, next to a
// random-gather baseline over an array of the table's size measured in the same run (first and
// again last, to show drift on a shared machine), and the load reached at the first failed insert.
//
//   bench_core [N ...] [--big] [--config F,B ...] [--repeat R] [--seed S]
//   bench_core --levels [--semi] [N ...] [--big] [--config F,B ...] [--repeat R]
//
//   N            key counts (default 1000000); --big adds 60000000
//   --config     fingerprint bits and bucket size (default: 16,4 and 12,4)
//   --repeat     runs per measurement, the fastest is reported (default 3; 1 for N >= 10^7)
//   CUCKOO_CPU   (environment) the kernel level: portable, avx2 or avx512 (default: the best)
//   --levels     instead: the bulk loops at every kernel level this CPU has, taking turns within
//                each of R rounds (default 7) in one process, with the ratios to the AVX2 level
//                (or the best level below it) as the median of the per-round ratios: the level
//                ratios of a shared machine, whose speed drifts within seconds, measured side by side
//                (and timed by the thread's CPU time where POSIX has it, not wall time)
//   --semi       with --levels: a semi-sorted filter beside the plain one (b = 4, f <= 16), with
//                its ratio to the plain one at the same level (median of the per-round ratios)
//
// Keys are the integers 0..N-1 (present) and 2^63 + i (absent), hashed with the filter's seeded
// XXH64 exactly as the Python binding hashes int keys. Timings are wall-clock
// (std::chrono::steady_clock) of the loop alone; allocation and zeroing are outside the timed
// region. Exits non-zero if a present key is not found or the filter cannot hold N keys (the
// CTest smoke run relies on that).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "cuckoo/filter.hpp"
#include "cuckoo/hash_block.hpp"

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint64_t kAbsentBase = uint64_t(1) << 63;

struct Config {
    unsigned f;
    unsigned b;
};

double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The CPU time of this thread in seconds where POSIX has it (else wall time): --levels compares
// levels on a shared machine, where wall time also counts the moments another process ran.
double thread_seconds() {
#if defined(CLOCK_THREAD_CPUTIME_ID)
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
#else
    return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
#endif
}

// Defeats dead-code elimination of results.
volatile uint64_t g_sink = 0;

template <class Fn>
double best_of(unsigned repeat, Fn&& fn) {
    double best = 1e300;
    for (unsigned r = 0; r < repeat; ++r) best = std::min(best, fn());
    return best;
}

struct Row {
    std::string what;
    double ns;
    std::string note;
};

void print_rows(const std::vector<Row>& rows, double baseline_ns) {
    for (const Row& r : rows) {
        std::printf("  %-44s %8.1f ns/key  %5.2fx gather  %s\n", r.what.c_str(), r.ns, r.ns / baseline_ns,
                    r.note.c_str());
    }
}

bool run(uint64_t n, Config c, unsigned repeat, uint64_t seed) {
    bool ok = true;
    cuckoo::Filter proto = cuckoo::Filter::for_capacity(n, 0.5, c.f, c.b, 500, seed);
    const uint64_t table_bytes = proto.table_bytes();
    std::printf("n=%llu f=%u b=%u: %llu buckets, table %.1f MiB, %.2f bits/key at n, repeat %u\n",
                static_cast<unsigned long long>(n), c.f, c.b, static_cast<unsigned long long>(proto.bucket_count()),
                static_cast<double>(table_bytes) / (1 << 20), 8.0 * static_cast<double>(table_bytes) / static_cast<double>(n),
                repeat);
    std::vector<Row> rows;
    const auto present = [&](uint64_t i) { return proto.hash_int(i); };
    const auto absent = [&](uint64_t i) { return proto.hash_int(kAbsentBase + i); };
    const auto never = [] { return false; };

    // Baseline: the same hashing, then 1 or 2 independent random 8-byte reads from an array of
    // the table's size (ByteBuffer: same alignment and huge-page advice as the table).
    const uint64_t words = std::max<uint64_t>(1, table_bytes / 8);
    cuckoo::ByteBuffer array(words * 8);
    {
        unsigned char* w = array.data();
        for (uint64_t i = 0; i < words; ++i) cuckoo::store_le64(w + 8 * i, cuckoo::mix64(i));
    }
    const unsigned char* base = array.data();
    const auto gather_one = [&] {
        return best_of(repeat, [&] {
            uint64_t sum = 0;
            const auto t0 = Clock::now();
            for (uint64_t i = 0; i < n; ++i) {
                const uint64_t h = proto.hash_int(i);
                sum += cuckoo::load_le64(base + 8 * cuckoo::reduce32(static_cast<uint32_t>(h), words));
            }
            const double s = seconds_since(t0);
            g_sink = g_sink + sum;
            return s;
        }) * 1e9 / static_cast<double>(n);
    };
    const double gather1 = gather_one();
    const double gather2 = best_of(repeat, [&] {
        uint64_t sum = 0;
        const auto t0 = Clock::now();
        for (uint64_t i = 0; i < n; ++i) {
            const uint64_t h = proto.hash_int(i);
            sum += cuckoo::load_le64(base + 8 * cuckoo::reduce32(static_cast<uint32_t>(h), words));
            sum += cuckoo::load_le64(base + 8 * cuckoo::reduce32(static_cast<uint32_t>(h >> 32), words));
        }
        const double s = seconds_since(t0);
        g_sink = g_sink + sum;
        return s;
    }) * 1e9 / static_cast<double>(n);
    rows.push_back({"baseline: hash + 1 random read", gather1, ""});
    rows.push_back({"baseline: hash + 2 random reads", gather2, ""});

    // insert_batch of n keys into an empty filter (to the design load).
    cuckoo::Filter filled = proto;
    const double insert_ns = best_of(repeat, [&] {
        cuckoo::Filter fl = proto;  // allocation + zeroing outside the timed loop
        bool full = false;
        const auto t0 = Clock::now();
        const uint64_t done = fl.insert_batch(n, present, cuckoo::Filter::InsertMode::Always, nullptr, full, never);
        const double s = seconds_since(t0);
        if (done != n) {
            std::printf("  ERROR: insert_batch stopped at %llu of %llu keys\n", static_cast<unsigned long long>(done),
                        static_cast<unsigned long long>(n));
            ok = false;
        }
        filled = std::move(fl);
        return s;
    }) * 1e9 / static_cast<double>(n);
    char note[160];
    std::snprintf(note, sizeof note, "(to load %.4f)", filled.load_factor());
    rows.push_back({"insert_batch, n keys into an empty filter", insert_ns, note});

    std::vector<uint8_t> out(n);
    uint64_t hits = 0;
    const double contains_present = best_of(repeat, [&] {
        const auto t0 = Clock::now();
        filled.contains_batch(n, present, out.data(), never);
        const double s = seconds_since(t0);
        hits = 0;
        for (uint8_t x : out) hits += x;
        return s;
    }) * 1e9 / static_cast<double>(n);
    if (hits != n) {
        std::printf("  ERROR: %llu false negatives\n", static_cast<unsigned long long>(n - hits));
        ok = false;
    }
    rows.push_back({"contains_batch, present keys", contains_present, ""});
    const double contains_absent = best_of(repeat, [&] {
        const auto t0 = Clock::now();
        filled.contains_batch(n, absent, out.data(), never);
        const double s = seconds_since(t0);
        hits = 0;
        for (uint8_t x : out) hits += x;
        return s;
    }) * 1e9 / static_cast<double>(n);
    std::snprintf(note, sizeof note, "(measured fpr %.2e, expected %.2e)", static_cast<double>(hits) / static_cast<double>(n),
                  filled.expected_fpr());
    rows.push_back({"contains_batch, absent keys", contains_absent, note});

    const double scalar_present = best_of(repeat, [&] {
        uint64_t found = 0;
        const auto t0 = Clock::now();
        for (uint64_t i = 0; i < n; ++i) found += filled.contains_hash(filled.hash_int(i));
        const double s = seconds_since(t0);
        if (found != n) ok = false;
        g_sink = g_sink + found;
        return s;
    }) * 1e9 / static_cast<double>(n);
    rows.push_back({"scalar contains_hash, present keys", scalar_present, ""});
    const double scalar_absent = best_of(repeat, [&] {
        uint64_t found = 0;
        const auto t0 = Clock::now();
        for (uint64_t i = 0; i < n; ++i) found += filled.contains_hash(filled.hash_int(kAbsentBase + i));
        const double s = seconds_since(t0);
        g_sink = g_sink + found;
        return s;
    }) * 1e9 / static_cast<double>(n);
    rows.push_back({"scalar contains_hash, absent keys", scalar_absent, ""});

    // Fill the same table shape to the first failed insert.
    {
        cuckoo::Filter fl = proto;
        filled = cuckoo::Filter(8, 2, 4, 0, 0);  // release the filled table
        const uint64_t slots = fl.slot_count();
        bool full = false;
        const auto t0 = Clock::now();
        const uint64_t done = fl.insert_batch(slots + 1, present, cuckoo::Filter::InsertMode::Always, nullptr, full, never);
        const double s = seconds_since(t0);
        std::snprintf(note, sizeof note, "(first failure at load %.4f; %llu kicked inserts, %.2f moves each)",
                      static_cast<double>(done) / static_cast<double>(slots),
                      static_cast<unsigned long long>(fl.stats().kicked_inserts),
                      fl.stats().kicked_inserts ? static_cast<double>(fl.stats().moves) / static_cast<double>(fl.stats().kicked_inserts) : 0.0);
        rows.push_back({"insert_batch to the first failure", s * 1e9 / static_cast<double>(done), note});
        if (!full) ok = false;
    }
    // The machine may be shared: the same baseline once more, to show how much it drifted.
    rows.push_back({"baseline again (drift check)", gather_one(), ""});
    print_rows(rows, gather1);
    std::fflush(stdout);
    return ok;
}

// Integer keys hashed a block at a time, as the binding's integer-array source does.
struct BlockIntKeys {
    static constexpr bool kVectorHashBlock = true;
    const cuckoo::Filter* filter;
    const uint64_t* keys;
    uint64_t operator()(uint64_t k) const { return filter->hash_int(keys[k]); }
    void hash_block(uint64_t start, unsigned len, uint64_t* out) const {
        cuckoo::hash_ints_block(filter->hasher(), keys + start, len, out);
    }
};

// --levels: each bulk loop at every level this CPU has, the levels taking turns in every round.
// Lookups are of n keys, half present; inserts fill an empty filter with n keys (to the design
// load). Keys are hashed as the binding hashes integer arrays (XXH3, a block at a time). Prints per
// level the median ns per key and the median over rounds of the ratio to the reference level (AVX2
// if the CPU has it) measured in the same round. With `semi` (--semi, b = 4 and f <= 16 only), a
// semi-sorted filter for n keys takes its turn right after the plain one in every round and level,
// and its rows give the median of the per-round ratios semi-sorted / plain at the same level.
bool run_levels(uint64_t n, Config c, unsigned rounds, uint64_t seed, bool semi) {
    std::vector<cuckoo::CpuLevel> levels;
    for (int k = 0; k < cuckoo::kCpuLevelCount; ++k)
        if (cuckoo::cpu_supports(static_cast<cuckoo::CpuLevel>(k))) levels.push_back(static_cast<cuckoo::CpuLevel>(k));
    const cuckoo::CpuLevel before = cuckoo::cpu_level();
    const size_t ref = std::min<size_t>(1, levels.size() - 1);  // avx2, else portable
    std::vector<cuckoo::Filter> protos;
    protos.push_back(cuckoo::Filter::for_capacity(n, 0.5, c.f, c.b, 500, seed));
    if (semi) protos.push_back(cuckoo::Filter::for_capacity(n, 0.5, c.f, c.b, 500, seed, cuckoo::HashAlgorithm::xxh3, true));
    char semi_note[64] = "";
    if (semi)
        std::snprintf(semi_note, sizeof semi_note, " (semi-sorted %.1f MiB)",
                      static_cast<double>(protos[1].table_bytes()) / (1 << 20));
    std::printf("n=%llu f=%u b=%u: table %.1f MiB%s, %u rounds, levels taking turns in each\n",
                static_cast<unsigned long long>(n), c.f, c.b, static_cast<double>(protos[0].table_bytes()) / (1 << 20),
                semi_note, rounds);
    // Keys as the binding hands integer arrays to the core: hashed a block at a time by the vector
    // hash of the level (hash_ints_block), and declared so (see cuckoo::vector_hash_block).
    std::vector<uint64_t> present_keys(n), mixed_keys(n);
    for (uint64_t i = 0; i < n; ++i) {
        present_keys[i] = i;
        mixed_keys[i] = i & 1 ? kAbsentBase + i : i / 2;  // half present, half absent, interleaved
    }
    const auto never = [] { return false; };
    bool ok = true, full = false;
    std::vector<cuckoo::Filter> filled;
    for (const cuckoo::Filter& proto : protos) {
        filled.push_back(proto);
        BlockIntKeys present{&proto, present_keys.data()};
        ok &= filled.back().insert_batch(n, present, cuckoo::Filter::InsertMode::Always, nullptr, full, never) == n;
    }
    std::vector<uint8_t> out(n);
    const char* names[] = {"insert_batch, n keys into an empty filter", "contains_batch, 50% present",
                           "count_batch, 50% present"};
    constexpr unsigned kOps = 3;
    // ns[table][op][level][round]
    std::vector<std::vector<std::vector<std::vector<double>>>> ns(
        protos.size(), std::vector<std::vector<std::vector<double>>>(kOps, std::vector<std::vector<double>>(levels.size())));
    for (unsigned r = 0; r < rounds; ++r) {
        for (size_t l = 0; l < levels.size(); ++l) {
            cuckoo::set_cpu_level(levels[l]);
            for (size_t t = 0; t < protos.size(); ++t) {
                const cuckoo::Filter& proto = protos[t];
                BlockIntKeys present{&proto, present_keys.data()}, mixed{&proto, mixed_keys.data()};
                {
                    cuckoo::Filter fl = proto;  // allocation + zeroing outside the timed loop
                    const double t0 = thread_seconds();
                    const uint64_t done = fl.insert_batch(n, present, cuckoo::Filter::InsertMode::Always, nullptr, full, never);
                    ns[t][0][l].push_back((thread_seconds() - t0) * 1e9 / static_cast<double>(n));
                    ok &= done == n && fl == filled[t];  // every level stores the same entries
                }
                {
                    const double t0 = thread_seconds();
                    filled[t].contains_batch(n, mixed, out.data(), never);
                    ns[t][1][l].push_back((thread_seconds() - t0) * 1e9 / static_cast<double>(n));
                    for (uint64_t i = 0; i < n; i += 2) ok &= out[i] == 1;
                }
                {
                    const double t0 = thread_seconds();
                    filled[t].count_batch(n, mixed, out.data(), never);
                    ns[t][2][l].push_back((thread_seconds() - t0) * 1e9 / static_cast<double>(n));
                    for (uint64_t i = 0; i < n; i += 2) ok &= out[i] >= 1;
                }
            }
        }
    }
    cuckoo::set_cpu_level(before);
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    for (unsigned op = 0; op < kOps; ++op) {
        std::printf("  %s\n", names[op]);
        for (size_t l = 0; l < levels.size(); ++l) {
            std::vector<double> ratio;
            for (unsigned r = 0; r < rounds; ++r) ratio.push_back(ns[0][op][l][r] / ns[0][op][ref][r]);
            std::printf("    %-9s %8.1f ns/key (median; min %.1f)  %5.2fx %s (median of per-round ratios)\n",
                        cuckoo::cpu_level_name(levels[l]), median(ns[0][op][l]),
                        *std::min_element(ns[0][op][l].begin(), ns[0][op][l].end()), median(ratio),
                        cuckoo::cpu_level_name(levels[ref]));
        }
        if (!semi) continue;
        for (size_t l = 0; l < levels.size(); ++l) {
            std::vector<double> ratio;
            for (unsigned r = 0; r < rounds; ++r) ratio.push_back(ns[1][op][l][r] / ns[0][op][l][r]);
            std::printf("    %-9s %8.1f ns/key semi-sorted (median; min %.1f)  %5.2fx plain at %s (median of per-round ratios)\n",
                        cuckoo::cpu_level_name(levels[l]), median(ns[1][op][l]),
                        *std::min_element(ns[1][op][l].begin(), ns[1][op][l].end()), median(ratio),
                        cuckoo::cpu_level_name(levels[l]));
        }
    }
    if (!ok) std::printf("  ERROR: a level stored other entries or missed a present key\n");
    std::fflush(stdout);
    return ok;
}

[[noreturn]] void usage() {
    std::fprintf(stderr, "usage: bench_core [--levels [--semi]] [N ...] [--big] [--config F,B ...] [--repeat R] [--seed S]\n");
    std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<uint64_t> sizes;
    std::vector<Config> configs;
    int repeat = -1;
    uint64_t seed = 0;
    bool levels = false, semi = false;
    for (int a = 1; a < argc; ++a) {
        const std::string arg = argv[a];
        if (arg == "--levels") {
            levels = true;
        } else if (arg == "--semi") {
            semi = true;
        } else if (arg == "--big") {
            sizes.push_back(60000000);
        } else if (arg == "--config" && a + 1 < argc) {
            unsigned f = 0, b = 0;
            if (std::sscanf(argv[++a], "%u,%u", &f, &b) != 2) usage();
            configs.push_back({f, b});
        } else if (arg == "--repeat" && a + 1 < argc) {
            repeat = std::atoi(argv[++a]);
            if (repeat < 1) usage();
        } else if (arg == "--seed" && a + 1 < argc) {
            seed = std::strtoull(argv[++a], nullptr, 10);
        } else if (!arg.empty() && arg[0] != '-') {
            const uint64_t n = std::strtoull(arg.c_str(), nullptr, 10);
            if (n == 0) usage();
            sizes.push_back(n);
        } else {
            usage();
        }
    }
    if (sizes.empty()) sizes.push_back(1000000);
    if (configs.empty()) configs = {{16, 4}, {12, 4}};
    std::sort(sizes.begin(), sizes.end());
    bool ok = true;
    std::printf("cuckoo core micro-benchmark: ns per key (fastest of the runs); 'x gather' = relative to the\n"
                "hash + 1 random read baseline measured just before, over an array of the table's size\n");
    // The kernel level (CUCKOO_CPU=portable|avx2|avx512 chooses one the CPU has: cuckoo/cpu.hpp).
    std::printf("kernel level %s (best on this CPU: %s)%s\n", cuckoo::cpu_level_name(cuckoo::cpu_level()),
                cuckoo::cpu_level_name(cuckoo::detected_cpu_level()),
                cuckoo::cpu_level_request().status == cuckoo::CpuLevelRequest::unknown_name ||
                        cuckoo::cpu_level_request().status == cuckoo::CpuLevelRequest::unsupported
                    ? "; CUCKOO_CPU not obeyed (unknown, or beyond this CPU)"
                    : "");
    for (uint64_t n : sizes) {
        for (const Config& c : configs) {
            const unsigned r = repeat > 0 ? static_cast<unsigned>(repeat) : levels ? 7u : (n >= 10000000 ? 1u : 3u);
            try {
                ok &= levels ? run_levels(n, c, r, seed, semi) : run(n, c, r, seed);
            } catch (const std::exception& e) {
                std::printf("  ERROR: %s\n", e.what());
                ok = false;
            }
        }
    }
    return ok ? 0 : 1;
}
