// The kernel level: which copies of the vector kernels run (portable, AVX2 or AVX-512). The one
// home of that decision: every dispatch in the core asks kernels::use_avx2() / use_avx512().
//
//   detected:  the best level this CPU and its OS allow (CPUID and XGETBV, read once).
//   requested: the environment variable CUCKOO_CPU (portable | avx2 | avx512), read once, at the
//              first question. An unknown value or a level the CPU lacks is not obeyed: the
//              detected level runs and cpu_level_request() says why (the Python package turns
//              that into an ImportError or a RuntimeWarning at import; see python/cuckoo).
//   active:    requested if obeyed, else detected; set_cpu_level changes it between calls (the
//              tests run the kernels at every level in one process).
//
// Switching between calls is safe because no filter, store or cached object remembers the level:
// each batch asks again (at most once per block of keys), and every level computes exactly the
// same results (cpp/tests and tests/ check each level against the scalar code). A switch while
// another thread is inside a batch is also harmless for that reason: some of its blocks may run
// at the old level, with the same answers.
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(CUCKOO_NO_RUNTIME_DISPATCH)
#define CUCKOO_X86_DISPATCH 1
#include <cpuid.h>
#else
#define CUCKOO_X86_DISPATCH 0
#endif

namespace cuckoo {

// Ordered: a CPU that runs a level runs every level below it.
enum class CpuLevel : int { portable = 0, avx2 = 1, avx512 = 2 };
constexpr int kCpuLevelCount = 3;

inline const char* cpu_level_name(CpuLevel level) noexcept {
    switch (level) {
        case CpuLevel::avx2: return "avx2";
        case CpuLevel::avx512: return "avx512";
        default: return "portable";
    }
}

// The level named `name` (as CUCKOO_CPU spells it), or false.
inline bool parse_cpu_level(const char* name, CpuLevel& level) noexcept {
    for (int k = 0; k < kCpuLevelCount; ++k) {
        if (std::strcmp(name, cpu_level_name(static_cast<CpuLevel>(k))) == 0) {
            level = static_cast<CpuLevel>(k);
            return true;
        }
    }
    return false;
}

namespace kernels {

#if CUCKOO_X86_DISPATCH
// What this CPU and its OS allow, read once with CPUID and XGETBV (bit positions from Intel's and
// AMD's manuals). Not __builtin_cpu_supports: in binaries linked by zig's Clang (.ci/cross.sh)
// it answered 0 for every feature, so the vector kernels compiled by Clang never ran there.
struct VectorSupport {
    bool avx2 = false;
    bool avx512 = false;  // F, DQ and VL, with the OS saving the opmask and ZMM registers
};
inline VectorSupport detect_vector_support() noexcept {
    VectorSupport s;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return s;
    const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
    if (!osxsave || !avx) return s;
    unsigned xcr0_low, xcr0_high;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    (void)xcr0_high;
    if ((xcr0_low & 0x6u) != 0x6u) return s;  // the OS saves the XMM and YMM registers
    if (__get_cpuid_max(0, nullptr) < 7) return s;
    __cpuid_count(7, 0, a, b, c, d);
    s.avx2 = (b & (1u << 5)) != 0;
    const bool zmm_saved = (xcr0_low & 0xE0u) == 0xE0u;  // opmask, ZMM_Hi256, Hi16_ZMM
    s.avx512 = s.avx2 && zmm_saved && (b & (1u << 16)) && (b & (1u << 17)) && (b & (1u << 31));
    return s;
}
#endif

}  // namespace kernels

// Whether the CPU is an Intel one (CPUID's vendor string), read once: a few tunings measured on
// one vendor's cores only are chosen by it (evict.hpp). False on other architectures.
inline bool cpu_is_intel() noexcept {
#if CUCKOO_X86_DISPATCH
    static const bool intel = [] {
        unsigned a, b, c, d;
        if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
        return b == 0x756E6547u && d == 0x49656E69u && c == 0x6C65746Eu;  // "Genu" "ineI" "ntel"
    }();
    return intel;
#else
    return false;
#endif
}

// The best level this CPU and OS allow (decided once).
inline CpuLevel detected_cpu_level() noexcept {
#if CUCKOO_X86_DISPATCH
    static const CpuLevel level = [] {
        const kernels::VectorSupport s = kernels::detect_vector_support();
        return s.avx512 ? CpuLevel::avx512 : s.avx2 ? CpuLevel::avx2 : CpuLevel::portable;
    }();
    return level;
#else
    return CpuLevel::portable;
#endif
}

inline bool cpu_supports(CpuLevel level) noexcept {
    return static_cast<int>(level) <= static_cast<int>(detected_cpu_level());
}

// What CUCKOO_CPU asked for and whether it was obeyed.
struct CpuLevelRequest {
    enum Status { unset, obeyed, unknown_name, unsupported };
    Status status = unset;
    const char* value = nullptr;  // the variable's value (unset: null)
    CpuLevel level = CpuLevel::portable;  // the level named (obeyed or unsupported)
};

// What CUCKOO_CPU = `value` (null: unset) asks of a CPU whose best level is `detected`.
inline CpuLevelRequest read_cpu_level_request(const char* value, CpuLevel detected) noexcept {
    CpuLevelRequest r;
    if (!value) return r;
    r.value = value;
    if (!parse_cpu_level(value, r.level)) {
        r.status = CpuLevelRequest::unknown_name;
    } else {
        r.status = static_cast<int>(r.level) <= static_cast<int>(detected) ? CpuLevelRequest::obeyed
                                                                           : CpuLevelRequest::unsupported;
    }
    return r;
}

// The environment's request, read once (getenv: before any thread of ours could change it).
inline const CpuLevelRequest& cpu_level_request() noexcept {
    static const CpuLevelRequest request = read_cpu_level_request(std::getenv("CUCKOO_CPU"), detected_cpu_level());
    return request;
}

namespace detail {
inline std::atomic<int>& active_cpu_level() noexcept {
    static std::atomic<int> level{static_cast<int>(cpu_level_request().status == CpuLevelRequest::obeyed
                                                       ? cpu_level_request().level
                                                       : detected_cpu_level())};
    return level;
}
}  // namespace detail

// The level the kernels run at now.
inline CpuLevel cpu_level() noexcept {
    return static_cast<CpuLevel>(detail::active_cpu_level().load(std::memory_order_relaxed));
}

// Runs the kernels at `level` from the next call on; false (and no change) if the CPU lacks it.
inline bool set_cpu_level(CpuLevel level) noexcept {
    if (!cpu_supports(level)) return false;
    detail::active_cpu_level().store(static_cast<int>(level), std::memory_order_relaxed);
    return true;
}

namespace kernels {

// Whether the AVX2 copies run now.
inline bool use_avx2() noexcept {
#if CUCKOO_X86_DISPATCH
    return cpu_level() >= CpuLevel::avx2;
#else
    return false;
#endif
}

// Whether the AVX-512 copies (F, VL and DQ; see avx2.hpp) run now.
inline bool use_avx512() noexcept {
#if CUCKOO_X86_DISPATCH
    return cpu_level() >= CpuLevel::avx512;
#else
    return false;
#endif
}

}  // namespace kernels
}  // namespace cuckoo
