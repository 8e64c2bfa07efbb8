// The AVX-512 float-text writers' own lane arithmetic (the eight-lane Schubfach and the templates,
// levels/avx512/float_text_x8.hpp and float_text_templates.hpp): 64-bit products from vpmuludq,
// constants as embedded broadcasts. Included with the level's flags only (by float_text.cpp,
// inside its TENSORB64_COMPILES_AVX512).
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

}  // namespace
}  // namespace tensorb64
