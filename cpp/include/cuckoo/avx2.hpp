// Small AVX2 helpers shared by the vector kernels (lookup_avx2.hpp, hash_block.hpp): 64-bit lane
// arithmetic that AVX2 lacks as single instructions. Only compiled on x86-64 with GCC or Clang
// (CUCKOO_X86_DISPATCH); callers pick these kernels at run time when the CPU has AVX2.
#pragma once

#include "cuckoo/locate.hpp"

#if CUCKOO_X86_DISPATCH
#include <immintrin.h>

// Functions compiled for AVX2 and inlined into their AVX2 callers.
#define CUCKOO_AVX2 __attribute__((target("avx2"), always_inline)) inline
// The same for AVX-512 F/VL/DQ, used on 256-bit vectors for its native 64-bit multiply and
// rotate (vpmullq, vprolq), which AVX2 emulates with 3-7 operations each. Only the arithmetic-
// bound steps (hashing integer keys, locating a block) have such copies; AVX2 kernels call them
// through a non-inlined function, chosen once per batch (kernels::use_avx512).
#define CUCKOO_AVX512 __attribute__((target("avx2,avx512f,avx512vl,avx512dq"), always_inline)) inline
#define CUCKOO_AVX512_FUNCTION __attribute__((target("avx2,avx512f,avx512vl,avx512dq"))) inline

namespace cuckoo {
namespace kernels {

CUCKOO_AVX2 __m256i splat(uint64_t v) { return _mm256_set1_epi64x(static_cast<long long>(v)); }

// A 64-bit constant as the two 32-bit halves that vpmuludq multiplies.
struct Mul64 {
    __m256i lo, hi;
};
CUCKOO_AVX2 Mul64 mul64_constant(uint64_t b) { return Mul64{splat(b & 0xFFFFFFFFull), splat(b >> 32)}; }

// Low 64 bits of a * b in each lane when a < 2^32 (then a's high half contributes nothing):
// two 32x32->64 multiplies instead of three.
CUCKOO_AVX2 __m256i mul_small_by(__m256i a, __m256i b_lo, __m256i b_hi) {
    return _mm256_add_epi64(_mm256_mul_epu32(a, b_lo), _mm256_slli_epi64(_mm256_mul_epu32(a, b_hi), 32));
}
// Low 64 bits of a * b in each lane, any a: a_lo * b_lo + ((a_hi * b_lo + a_lo * b_hi) << 32).
// The high halves come with a dword shuffle and the two cross products are summed before one
// shift: vector shifts have half the execution ports of adds and shuffles (Zen 3, Intel alike),
// and the hash kernels are bound by them.
CUCKOO_AVX2 __m256i mul_by(__m256i a, __m256i b_lo, __m256i b_hi) {
    const __m256i a_hi = _mm256_shuffle_epi32(a, 0xF5);  // dwords 1,1,3,3: a_hi in each lane's low half
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(a_hi, b_lo), _mm256_mul_epu32(a, b_hi));
    return _mm256_add_epi64(_mm256_mul_epu32(a, b_lo), _mm256_slli_epi64(cross, 32));
}
CUCKOO_AVX2 __m256i mul_by(__m256i a, const Mul64& b) { return mul_by(a, b.lo, b.hi); }
CUCKOO_AVX2 __m256i mul_small_by(__m256i a, const Mul64& b) { return mul_small_by(a, b.lo, b.hi); }

// Rotation left by a constant in each 64-bit lane.
template <int R>
CUCKOO_AVX2 __m256i rotl_lanes(__m256i x) {
    static_assert(R > 0 && R < 64, "rotation by 1..63");
    return _mm256_or_si256(_mm256_slli_epi64(x, R), _mm256_srli_epi64(x, 64 - R));
}

}  // namespace kernels
}  // namespace cuckoo
#endif
