// The AVX-512 float-text writers' lane arithmetic (levels/avx512/float_text.cpp and the kernels it
// includes): 64-bit products from vpmuludq, constants as embedded broadcasts, the 32-bit exponent
// formulas and the 4-digit split that the sixteen-lane writers share. Included with the level's
// flags only (by float_text.cpp, inside its TENSORB64_COMPILES_AVX512).
#pragma once

#include <immintrin.h>

#include "float_text/float_text.hpp"
#include "levels/vocabulary.hpp"

namespace tensorb64 {
namespace {

using namespace float_text_detail;

inline __m512i set64(std::uint64_t v) noexcept {
    return _mm512_set1_epi64(static_cast<long long>(v));
}

// A constant multiplier the compiler cannot see: GCC turns vpmulld/vpmullw/vpmullq by a small
// constant (10, 100) into shifts and adds, and on Zen 4 the shifts compete with the shuffles for
// the same two pipes while the multiplier sits idle (measured: repr 9.0 -> 8.7 ns/value).
inline __m512i hidden_constant(__m512i c) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+v"(c));
#endif
    return c;
}

// The high 64 bits of each lane's 64x64-bit product (integer_math.hpp's portable mul_high, with
// vpmuludq for each 32x32 -> 64 part).
inline __m512i mul_high(__m512i a, __m512i b) noexcept {
    const __m512i low32 = set64(0xffffffffu);
    const __m512i a_hi = _mm512_srli_epi64(a, 32), b_hi = _mm512_srli_epi64(b, 32);
    const __m512i lo_lo = _mm512_mul_epu32(a, b);
    const __m512i hi_lo = _mm512_mul_epu32(a_hi, b);
    const __m512i lo_hi = _mm512_mul_epu32(a, b_hi);
    const __m512i hi_hi = _mm512_mul_epu32(a_hi, b_hi);
    const __m512i cross = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_srli_epi64(lo_lo, 32), _mm512_and_si512(hi_lo, low32)), lo_hi);
    return _mm512_add_epi64(_mm512_add_epi64(hi_hi, _mm512_srli_epi64(hi_lo, 32)),
                            _mm512_srli_epi64(cross, 32));
}

// The low 64 bits of each lane's product (vpmullq).
inline __m512i mul_low(__m512i a, __m512i b) noexcept { return _mm512_mullo_epi64(a, b); }

// floor_log10_pow2 and friends (float_text.hpp) on signed lanes.
inline __m512i mul_shift(__m512i e, long long factor, long long minus, unsigned shift) noexcept {
    const __m512i p = _mm512_mullo_epi64(e, _mm512_set1_epi64(factor));
    return _mm512_srai_epi64(_mm512_sub_epi64(p, _mm512_set1_epi64(minus)), shift);
}

// ---- sixteen float32 values at a time, in 32-bit lanes ----
//
// The shortest digits of sixteen values below 1: to_decimal32's steps in 32-bit lanes, exactly as
// it computes them in uint32_t and int, only its three 64x32-bit products in 64-bit lanes (even
// and odd values apart). Sixteen lanes halve the instructions of the eight-lane path on
// everything but the products.

// A constant read from memory where it is used (an embedded-broadcast operand, no vector uop):
// GCC otherwise builds each with a mov and a vpbroadcastd in the loop, or keeps it in a register
// that it then spills (measured: shortest 2.9 -> 2.8 ns/value).
template <long long V>
struct constant32 {
    static const std::uint32_t value;
};
template <long long V>
const std::uint32_t constant32<V>::value = static_cast<std::uint32_t>(V);
template <std::uint64_t V>
struct constant64 {
    static const std::uint64_t value;
};
template <std::uint64_t V>
const std::uint64_t constant64<V>::value = V;
template <long long V>
inline __m512i c32() noexcept {
    const std::uint32_t* p = &constant32<V>::value;
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+r"(p));  // the value unknown to the compiler: loaded, not folded
#endif
    return _mm512_set1_epi32(static_cast<int>(*p));
}
template <std::uint64_t V>
inline __m512i c64() noexcept {
    const std::uint64_t* p = &constant64<V>::value;
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+r"(p));
#endif
    return _mm512_set1_epi64(static_cast<long long>(*p));
}

// (x m) >> (32 + Shift) in each 32-bit lane (the high half of the 32x32-bit product, shifted).
template <unsigned Shift>
inline __m512i mul_high_x16(__m512i x, __m512i m) noexcept {
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(x, m), 32 + Shift);
    const __m512i odd = _mm512_srli_epi64(_mm512_mul_epu32(_mm512_srli_epi64(x, 32), m), Shift);
    return _mm512_mask_blend_epi32(0xaaaa, even, odd);
}

// floor_log10_pow2, floor_log10_three_quarters_pow2 and floor_log2_pow10 (float_text.hpp) with
// products that fit 32 bits, equal to them over the exponents of float32 and of its doubles
// (checked below): (e kLog10Pow2 - [kLog10FourThirds]) >> kLog10Shift, (e kLog2Pow10) >>
// kLog2Shift.
constexpr int kLog10Pow2 = 631305, kLog10FourThirds = 261663, kLog10Shift = 21;
constexpr int kLog2Pow10 = 1741647, kLog2Shift = 19;
constexpr bool exponent_formulas_agree() {
    for (int q = -179; q <= 104; ++q) {
        if (((q * kLog10Pow2) >> kLog10Shift) != floor_log10_pow2(q) ||
            ((q * kLog10Pow2 - kLog10FourThirds) >> kLog10Shift) !=
                floor_log10_three_quarters_pow2(q))
            return false;
    }
    for (int e = -46; e <= 46; ++e) {
        if (((e * kLog2Pow10) >> kLog2Shift) != floor_log2_pow10(e)) return false;
    }
    return true;
}
static_assert(exponent_formulas_agree(), "the 32-bit exponent formulas");

// Digits of x < 10^4 (each 32-bit lane) as four bytes 0..9, the first in the lowest byte.
inline __m512i digit_bytes4_x16(__m512i x) noexcept {
    const __m512i hundreds = _mm512_srli_epi32(_mm512_mullo_epi32(x, c32<(5243)>()), 19);
    // hundreds | (x - 100 hundreds) << 16
    const __m512i pairs =
        _mm512_sub_epi32(_mm512_slli_epi32(x, 16), _mm512_mullo_epi32(hundreds, c32<(6553599)>()));
    const __m512i tens =
        _mm512_srli_epi16(_mm512_mullo_epi16(pairs, hidden_constant(_mm512_set1_epi16(103))), 10);
    // tens | (pair - 10 tens) << 8
    return _mm512_sub_epi16(_mm512_slli_epi16(pairs, 8),
                            _mm512_mullo_epi16(tens, hidden_constant(_mm512_set1_epi16(2559))));
}

}  // namespace
}  // namespace tensorb64
