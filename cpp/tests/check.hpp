// A minimal test harness for the C++ tests of the core (no third-party framework).
//
//   TEST_CASE(name) { CHECK(cond); CHECK_EQ(a, b); REQUIRE(cond); CHECK_THROWS(expr, Type); }
//   int main(int argc, char** argv) { return cktest::run_all(argc, argv); }
//
// CHECK* record a failure and go on; REQUIRE* abort the current test case. A test binary exits
// non-zero if any check failed. `test_x NAME...` runs only the cases whose name contains one of
// the NAMEs; `test_x --list` lists the cases.
//
// Every case runs once per kernel level this CPU has (portable, AVX2, AVX-512: cuckoo/cpu.hpp),
// so that the bulk kernels of each level are checked against the scalar code on any machine;
// CUCKOO_CPU=LEVEL runs one level only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cuckoo/cpu.hpp"

namespace cktest {

struct Case {
    const char* name;
    void (*fn)();
};

inline std::vector<Case>& cases() {
    static std::vector<Case> v;
    return v;
}

struct State {
    std::string current;
    uint64_t checks = 0;
    uint64_t failures = 0;       // in the current case
    uint64_t total_failures = 0;
};

inline State& state() {
    static State s;
    return s;
}

struct Registrar {
    Registrar(const char* name, void (*fn)()) { cases().push_back({name, fn}); }
};

struct RequireFailed {};  // thrown by REQUIRE to leave the current case

// Failures printed per case (later ones are only counted); CKTEST_MAX_PRINT overrides.
inline uint64_t max_printed_failures() {
    static const uint64_t n = [] {
        const char* env = std::getenv("CKTEST_MAX_PRINT");
        return env ? std::strtoull(env, nullptr, 10) : uint64_t(20);
    }();
    return n;
}

template <class T>
std::string show(const T& v) {
    std::ostringstream os;
    if constexpr (std::is_same_v<T, bool>) {
        os << (v ? "true" : "false");
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
        os << static_cast<long long>(v);
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
        const auto u = static_cast<unsigned long long>(v);
        os << u << " (0x" << std::hex << u << ")";
    } else if constexpr (std::is_floating_point_v<T>) {
        os.precision(17);
        os << v;
    } else {
        os << v;
    }
    return os.str();
}

inline void fail(const char* file, int line, const std::string& what) {
    State& s = state();
    ++s.failures;
    ++s.total_failures;
    if (s.failures <= max_printed_failures())
        std::fprintf(stderr, "%s:%d: FAILED in %s: %s\n", file, line, s.current.c_str(), what.c_str());
    else if (s.failures == max_printed_failures() + 1)
        std::fprintf(stderr, "  (further failures in %s are counted, not printed)\n", s.current.c_str());
}

// Extra context printed with the next failures (e.g. the parameters of a loop iteration).
inline std::string& context() {
    static std::string c;
    return c;
}

inline std::string with_context(std::string what) {
    if (!context().empty()) what += "  [" + context() + "]";
    return what;
}

inline int run_all(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "--list") == 0) {
        for (const Case& c : cases()) std::printf("%s\n", c.name);
        return 0;
    }
    // The levels to run: the one CUCKOO_CPU names if this CPU has it, else every level it has.
    std::vector<cuckoo::CpuLevel> levels;
    if (cuckoo::cpu_level_request().status == cuckoo::CpuLevelRequest::obeyed) {
        levels.push_back(cuckoo::cpu_level_request().level);
    } else {
        if (cuckoo::cpu_level_request().status != cuckoo::CpuLevelRequest::unset)
            std::printf("CUCKOO_CPU=%s not obeyed (unknown, or this CPU lacks it): every level instead\n",
                        cuckoo::cpu_level_request().value);
        for (int k = 0; k < cuckoo::kCpuLevelCount; ++k)
            if (cuckoo::cpu_supports(static_cast<cuckoo::CpuLevel>(k))) levels.push_back(static_cast<cuckoo::CpuLevel>(k));
    }
    State& s = state();
    int run = 0, failed_cases = 0;
    for (const Case& c : cases()) {
        bool selected = argc <= 1;
        for (int a = 1; a < argc && !selected; ++a) selected = std::strstr(c.name, argv[a]) != nullptr;
        if (!selected) continue;
        for (const cuckoo::CpuLevel level : levels) {
            cuckoo::set_cpu_level(level);
            ++run;
            s.current = std::string(c.name) + " @" + cuckoo::cpu_level_name(level);
            s.failures = 0;
            context().clear();
            const uint64_t checks_before = s.checks;
            try {
                c.fn();
            } catch (const RequireFailed&) {
                // already reported
            } catch (const std::exception& e) {
                fail(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
            } catch (...) {
                fail(__FILE__, __LINE__, "unexpected non-standard exception");
            }
            if (s.failures) ++failed_cases;
            std::printf("[%s] %s (%llu checks)\n", s.failures ? "FAIL" : " ok ", s.current.c_str(),
                        static_cast<unsigned long long>(s.checks - checks_before));
            std::fflush(stdout);
        }
    }
    if (run == 0) {
        std::fprintf(stderr, "no test case matched\n");
        return 2;
    }
    std::printf("%d test cases, %d failed, %llu checks, %llu failed checks\n", run, failed_cases,
                static_cast<unsigned long long>(s.checks), static_cast<unsigned long long>(s.total_failures));
    return failed_cases ? 1 : 0;
}

// A small deterministic generator (SplitMix64): the same numbers on every platform and standard
// library, unlike std:: distributions.
struct Rng {
    uint64_t state;
    explicit Rng(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    uint64_t below(uint64_t n) { return n ? next() % n : 0; }  // bias irrelevant for tests
    bool coin(unsigned percent) { return below(100) < percent; }
};

}  // namespace cktest

#define CK_CAT2(a, b) a##b
#define CK_CAT(a, b) CK_CAT2(a, b)

#define TEST_CASE(name)                                                            \
    static void name();                                                            \
    static const ::cktest::Registrar CK_CAT(ck_registrar_, name)(#name, &name);    \
    static void name()

#define CK_CHECK_IMPL(cond, text, on_fail)                                                   \
    do {                                                                                     \
        ++::cktest::state().checks;                                                          \
        if (!(cond)) {                                                                       \
            ::cktest::fail(__FILE__, __LINE__, ::cktest::with_context(text));                \
            on_fail;                                                                         \
        }                                                                                    \
    } while (0)

#define CK_CHECK_EQ_IMPL(a, b, on_fail)                                                             \
    do {                                                                                            \
        ++::cktest::state().checks;                                                                 \
        const auto& ck_a_ = (a);                                                                    \
        const auto& ck_b_ = (b);                                                                    \
        if (!(ck_a_ == ck_b_)) {                                                                    \
            ::cktest::fail(__FILE__, __LINE__,                                                      \
                           ::cktest::with_context(std::string(#a " == " #b "  (") +                 \
                                                  ::cktest::show(ck_a_) + " vs " +                  \
                                                  ::cktest::show(ck_b_) + ")"));                    \
            on_fail;                                                                                \
        }                                                                                           \
    } while (0)

#define CHECK(cond) CK_CHECK_IMPL(cond, std::string(#cond), (void)0)
#define CHECK_MSG(cond, msg) CK_CHECK_IMPL(cond, std::string(#cond) + "  " + (msg), (void)0)
#define REQUIRE(cond) CK_CHECK_IMPL(cond, std::string(#cond), throw ::cktest::RequireFailed())
#define CHECK_EQ(a, b) CK_CHECK_EQ_IMPL(a, b, (void)0)
#define REQUIRE_EQ(a, b) CK_CHECK_EQ_IMPL(a, b, throw ::cktest::RequireFailed())

#define CHECK_THROWS(expr, Exc)                                                                     \
    do {                                                                                            \
        ++::cktest::state().checks;                                                                 \
        bool ck_thrown_ = false;                                                                    \
        try {                                                                                       \
            (void)(expr);                                                                           \
        } catch (const Exc&) {                                                                      \
            ck_thrown_ = true;                                                                      \
        } catch (...) {                                                                             \
        }                                                                                           \
        if (!ck_thrown_)                                                                            \
            ::cktest::fail(__FILE__, __LINE__, ::cktest::with_context(#expr " did not throw " #Exc)); \
    } while (0)

#define CHECK_NOTHROW(expr)                                                                         \
    do {                                                                                            \
        ++::cktest::state().checks;                                                                 \
        try {                                                                                       \
            (void)(expr);                                                                           \
        } catch (const std::exception& ck_e_) {                                                     \
            ::cktest::fail(__FILE__, __LINE__,                                                      \
                           ::cktest::with_context(std::string(#expr " threw: ") + ck_e_.what()));   \
        }                                                                                           \
    } while (0)
