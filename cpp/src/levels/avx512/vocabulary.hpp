// The vector vocabulary (levels/vocabulary.hpp: the contract and each operation's cost) on
// AVX-512 (F, BW, VL, DQ, VBMI, VBMI2): text64 is one zmm register, u64x eight 64-bit lanes in
// another, lane_mask a k register. For the files of levels/avx512/ only (compiled with its
// flags); empty elsewhere.
#pragma once

#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "levels/vocabulary.hpp"

namespace tensorb64 {
namespace avx512 {

constexpr int kLanes64 = 8;

struct text64 {
    __m512i v;
};
struct u64x {
    __m512i v;
};
struct f64x {
    __m512d v;
};
struct f32x {
    __m256 v;
};
struct lane_mask {
    __mmask8 v;
};
struct u32x {
    __m512i v;
};
struct mask32 {
    __mmask16 v;
};

// ---- text64 ----

inline text64 load(const void* p) noexcept { return {_mm512_loadu_si512(p)}; }
inline void store(void* p, text64 t) noexcept { _mm512_storeu_si512(p, t.v); }
inline text64 load_pieces(const void* p0, const void* p1, const void* p2, const void* p3) noexcept {
    const __m256i low =
        _mm256_loadu2_m128i(static_cast<const __m128i*>(p1), static_cast<const __m128i*>(p0));
    const __m256i high =
        _mm256_loadu2_m128i(static_cast<const __m128i*>(p3), static_cast<const __m128i*>(p2));
    return {_mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1)};
}
inline text64 load_halves(const void* p0, const void* p1) noexcept {
    return {_mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(p0))),
        _mm256_loadu_si256(static_cast<const __m256i*>(p1)), 1)};
}
inline text64 splat8(std::uint8_t c) noexcept { return {_mm512_set1_epi8(static_cast<char>(c))}; }
inline text64 add8(text64 a, text64 b) noexcept { return {_mm512_add_epi8(a.v, b.v)}; }
inline text64 sub8(text64 a, text64 b) noexcept { return {_mm512_sub_epi8(a.v, b.v)}; }
inline text64 operator&(text64 a, text64 b) noexcept { return {_mm512_and_si512(a.v, b.v)}; }
inline text64 operator|(text64 a, text64 b) noexcept { return {_mm512_or_si512(a.v, b.v)}; }
inline text64 operator^(text64 a, text64 b) noexcept { return {_mm512_xor_si512(a.v, b.v)}; }
inline text64 and_not(text64 a, text64 b) noexcept { return {_mm512_andnot_si512(b.v, a.v)}; }

inline std::uint64_t high_bits(text64 t) noexcept {
    return _cvtmask64_u64(_mm512_movepi8_mask(t.v));
}
inline text64 splat_words(std::uint64_t v) noexcept {
    return {_mm512_set1_epi64(static_cast<long long>(v))};
}
inline text64 less8(text64 a, text64 b) noexcept {
    return {_mm512_movm_epi8(_mm512_cmplt_epu8_mask(a.v, b.v))};
}
inline text64 greater8(text64 a, text64 b) noexcept {
    return {_mm512_movm_epi8(_mm512_cmpgt_epu8_mask(a.v, b.v))};
}
inline bool any_high_bit(text64 t) noexcept {
    const __mmask64 high = _mm512_movepi8_mask(t.v);
    return !_kortestz_mask64_u8(high, high);
}
inline std::uint64_t eq_bits(text64 t, std::uint8_t c) noexcept {
    return _cvtmask64_u64(_mm512_cmpeq_epi8_mask(t.v, _mm512_set1_epi8(static_cast<char>(c))));
}
inline std::uint64_t le_bits(text64 t, std::uint8_t c) noexcept {
    return _cvtmask64_u64(_mm512_cmple_epu8_mask(t.v, _mm512_set1_epi8(static_cast<char>(c))));
}

inline text64 shuffle16(text64 table, text64 index) noexcept {
    return {_mm512_shuffle_epi8(table.v, index.v)};
}
inline text64 permute64(text64 table, text64 index) noexcept {
    return {_mm512_permutexvar_epi8(index.v, table.v)};
}
// One vpermi2b over the table's two zmm (the index's bit 6 picks one).
inline text64 lookup128(const byte_table128& table, text64 index) noexcept {
    return {_mm512_permutex2var_epi8(_mm512_load_si512(table.bytes), index.v,
                                     _mm512_load_si512(table.bytes + 64))};
}
inline text64 blend(text64 mask, text64 a, text64 b) noexcept {
    return {_mm512_mask_blend_epi8(_mm512_movepi8_mask(mask.v), b.v, a.v)};
}
inline text64 bytes_of_bits(std::uint64_t bits) noexcept {
    return {_mm512_movm_epi8(_cvtu64_mask64(bits))};
}
// bzhi (BMI2) makes each half's mask from its count.
inline __mmask64 below_mask(unsigned k0, unsigned k1) noexcept {
    return _cvtu64_mask64(_bzhi_u64(0xffffffffu, k0) | _bzhi_u64(0xffffffffu, k1) << 32);
}
inline text64 blend_below(text64 a, text64 b, unsigned k0, unsigned k1) noexcept {
    return {_mm512_mask_blend_epi8(below_mask(k0, k1), b.v, a.v)};
}
inline text64 zero_below(text64 t, unsigned k0, unsigned k1) noexcept {
    return {_mm512_maskz_mov_epi8(_knot_mask64(below_mask(k0, k1)), t.v)};
}
inline text64 leading_ones_halves(unsigned k0, unsigned k1) noexcept {
    const std::uint64_t low = k0 == 0 ? 0 : ~std::uint64_t{0} >> (64 - k0);
    const std::uint64_t high = k1 == 0 ? 0 : ~std::uint64_t{0} >> (64 - k1);
    return bytes_of_bits(low | high << 32);
}

// Pairs, quads, eights: vpmaddubsw, vpmaddwd, vpmuludq and a shift.
inline text64 digit_words(text64 t) noexcept {
    const __m512i pairs = _mm512_maddubs_epi16(t.v, _mm512_set1_epi16(0x010a));
    const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00010064));
    return {_mm512_add_epi64(_mm512_mul_epu32(quads, _mm512_set1_epi64(10000)),
                             _mm512_srli_epi64(quads, 32))};
}

inline u64x even_words(text64 t) noexcept {
    return {_mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6), t.v)};
}
inline u64x odd_words(text64 t) noexcept {
    return {_mm512_permutexvar_epi64(_mm512_setr_epi64(1, 3, 5, 7, 1, 3, 5, 7), t.v)};
}
// Halves 0..7 are the low and high halves of t[0..3]: column i takes word i and i + 4 of each.
inline void half_columns(const text64* t, u64x columns[4]) noexcept {
    for (int i = 0; i < 4; ++i) {
        const __m512i pick = _mm512_setr_epi64(i, i + 4, i + 8, i + 12, i, i + 4, i + 8, i + 12);
        const __m512i low = _mm512_permutex2var_epi64(t[0].v, pick, t[1].v);
        const __m512i high = _mm512_permutex2var_epi64(t[2].v, pick, t[3].v);
        columns[i].v = _mm512_inserti64x4(low, _mm512_castsi512_si256(high), 1);
    }
}

// vpcompressb (VBMI2) into a register, then one store of all 64 bytes.
inline std::size_t compress_store(char* out, text64 t, std::uint64_t keep) noexcept {
    _mm512_storeu_si512(out, _mm512_maskz_compress_epi8(_cvtu64_mask64(keep), t.v));
    return static_cast<std::size_t>(_mm_popcnt_u64(keep));
}

// ---- u64x, f64x, f32x, lane_mask ----

inline u64x splat64(std::uint64_t v) noexcept {
    return {_mm512_set1_epi64(static_cast<long long>(v))};
}
inline u64x load64(const std::uint64_t* p) noexcept { return {_mm512_loadu_si512(p)}; }
inline void store64(std::uint64_t* p, u64x x) noexcept { _mm512_storeu_si512(p, x.v); }
inline u64x operator+(u64x a, u64x b) noexcept { return {_mm512_add_epi64(a.v, b.v)}; }
inline u64x operator-(u64x a, u64x b) noexcept { return {_mm512_sub_epi64(a.v, b.v)}; }
inline u64x operator&(u64x a, u64x b) noexcept { return {_mm512_and_si512(a.v, b.v)}; }
inline u64x operator|(u64x a, u64x b) noexcept { return {_mm512_or_si512(a.v, b.v)}; }
inline u64x operator^(u64x a, u64x b) noexcept { return {_mm512_xor_si512(a.v, b.v)}; }
template <int n>
inline u64x shift_left(u64x a) noexcept {
    return {_mm512_slli_epi64(a.v, n)};
}
template <int n>
inline u64x shift_right(u64x a) noexcept {
    return {_mm512_srli_epi64(a.v, n)};
}
inline u64x shift_left_var(u64x a, u64x counts) noexcept {
    return {_mm512_sllv_epi64(a.v, counts.v)};
}
inline u64x shift_right_var(u64x a, u64x counts) noexcept {
    return {_mm512_srlv_epi64(a.v, counts.v)};
}
inline u64x mul_low32(u64x a, u64x b) noexcept { return {_mm512_mul_epu32(a.v, b.v)}; }
inline u64x mul_low(u64x a, u64x b) noexcept { return {_mm512_mullo_epi64(a.v, b.v)}; }
// From four 32 x 32 -> 64-bit products (IFMA's 52-bit multiplies would need AVX512_IFMA, which
// the level does not require).
inline void mul_wide(u64x a, u64x b, u64x* high, u64x* low) noexcept {
    const __m512i low32 = _mm512_set1_epi64(0xffffffffll);
    const __m512i a_high = _mm512_srli_epi64(a.v, 32);
    const __m512i b_high = _mm512_srli_epi64(b.v, 32);
    const __m512i p00 = _mm512_mul_epu32(a.v, b.v);
    const __m512i p01 = _mm512_mul_epu32(a.v, b_high);
    const __m512i p10 = _mm512_mul_epu32(a_high, b.v);
    const __m512i p11 = _mm512_mul_epu32(a_high, b_high);
    // The middle 64 bits' sum: three terms below 2^32 each, no overflow.
    const __m512i middle =
        _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, low32)),
                         _mm512_and_si512(p10, low32));
    high->v = _mm512_add_epi64(
        _mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32)),
        _mm512_add_epi64(_mm512_srli_epi64(p10, 32), _mm512_srli_epi64(middle, 32)));
    low->v = _mm512_or_si512(_mm512_slli_epi64(middle, 32), _mm512_and_si512(p00, low32));
}
inline u64x mul_high(u64x a, u64x b) noexcept {
    const __m512i low32 = _mm512_set1_epi64(0xffffffffll);
    const __m512i a_high = _mm512_srli_epi64(a.v, 32);
    const __m512i b_high = _mm512_srli_epi64(b.v, 32);
    const __m512i p00 = _mm512_mul_epu32(a.v, b.v);
    const __m512i p01 = _mm512_mul_epu32(a.v, b_high);
    const __m512i p10 = _mm512_mul_epu32(a_high, b.v);
    const __m512i p11 = _mm512_mul_epu32(a_high, b_high);
    const __m512i middle = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_srli_epi64(p00, 32), _mm512_and_si512(p01, low32)), p10);
    return {_mm512_add_epi64(_mm512_add_epi64(p11, _mm512_srli_epi64(p01, 32)),
                             _mm512_srli_epi64(middle, 32))};
}

inline lane_mask eq(u64x a, u64x b) noexcept { return {_mm512_cmpeq_epu64_mask(a.v, b.v)}; }
inline lane_mask greater(u64x a, u64x b) noexcept { return {_mm512_cmpgt_epu64_mask(a.v, b.v)}; }
inline lane_mask operator&(lane_mask a, lane_mask b) noexcept {
    return {static_cast<__mmask8>(a.v & b.v)};
}
inline lane_mask operator|(lane_mask a, lane_mask b) noexcept {
    return {static_cast<__mmask8>(a.v | b.v)};
}
inline lane_mask operator^(lane_mask a, lane_mask b) noexcept {
    return {static_cast<__mmask8>(a.v ^ b.v)};
}
inline lane_mask and_not(lane_mask a, lane_mask b) noexcept {
    return {static_cast<__mmask8>(a.v & ~b.v)};
}
inline u64x select(lane_mask m, u64x a, u64x b) noexcept {
    return {_mm512_mask_blend_epi64(m.v, b.v, a.v)};
}
inline f64x select(lane_mask m, f64x a, f64x b) noexcept {
    return {_mm512_mask_blend_pd(m.v, b.v, a.v)};
}
inline unsigned mask_bits(lane_mask m) noexcept { return m.v; }
inline lane_mask mask_of_bits(unsigned bits) noexcept { return {static_cast<__mmask8>(bits)}; }

inline u64x widen_bytes(std::uint64_t bytes) noexcept {
    return {_mm512_cvtepu8_epi64(_mm_cvtsi64_si128(static_cast<long long>(bytes)))};
}

// Two permutes and a blend (no gather: an index < 24 reaches three zmm of the table).
inline u64x lookup24(const std::uint64_t* table, u64x index) noexcept {
    const __m512i low16 =
        _mm512_permutex2var_epi64(_mm512_load_si512(table), index.v, _mm512_load_si512(table + 8));
    const __m512i high8 = _mm512_permutexvar_epi64(index.v, _mm512_load_si512(table + 16));
    return {_mm512_mask_blend_epi64(_mm512_cmpge_epu64_mask(index.v, _mm512_set1_epi64(16)), low16,
                                    high8)};
}
inline f64x lookup24(const double* table, u64x index) noexcept {
    const __m512d low16 =
        _mm512_permutex2var_pd(_mm512_load_pd(table), index.v, _mm512_load_pd(table + 8));
    const __m512d high8 = _mm512_permutexvar_pd(index.v, _mm512_load_pd(table + 16));
    return {_mm512_mask_blend_pd(_mm512_cmpge_epu64_mask(index.v, _mm512_set1_epi64(16)), low16,
                                 high8)};
}

inline f64x to_f64(u64x x) noexcept { return {_mm512_cvtepu64_pd(x.v)}; }

// 63 - floor(log2 x) from the exponent of x's double rounded toward zero by the instruction's own
// encoding (rounding to nearest could carry into the next power of two; the caller's rounding
// mode plays no part). A zero lane converts to 0.0: 1086, cut to 64.
inline u64x leading_zeros(u64x x) noexcept {
    const __m512i biased = _mm512_srli_epi64(
        _mm512_castpd_si512(_mm512_cvt_roundepu64_pd(x.v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
        52);
    return {
        _mm512_min_epu64(_mm512_sub_epi64(_mm512_set1_epi64(1086), biased), _mm512_set1_epi64(64))};
}

inline f64x with_signs(f64x x, unsigned bits) noexcept {
    const __m512i v = _mm512_castpd_si512(x.v);
    return {_mm512_castsi512_pd(
        _mm512_mask_or_epi64(v, static_cast<__mmask8>(bits), v,
                             _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull))))};
}
inline u64x as_bits(f64x x) noexcept { return {_mm512_castpd_si512(x.v)}; }
inline f64x as_f64(u64x x) noexcept { return {_mm512_castsi512_pd(x.v)}; }
inline f64x operator/(f64x a, f64x b) noexcept { return {_mm512_div_pd(a.v, b.v)}; }
inline f32x narrow(f64x x) noexcept { return {_mm512_cvtpd_ps(x.v)}; }
inline void store32(float* p, f32x x, std::size_t n) noexcept {
    if (n >= 8) {
        _mm256_storeu_ps(p, x.v);
    } else if (n > 0) {
        _mm256_mask_storeu_ps(p, static_cast<__mmask8>((1u << n) - 1), x.v);
    }
}
inline void store64(double* p, f64x x, std::size_t n) noexcept {
    if (n >= 8) {
        _mm512_storeu_pd(p, x.v);
    } else if (n > 0) {
        _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1), x.v);
    }
}

// Lane k's bit to qwords 2k and 2k + 1 (pdep), then to every byte of them.
inline text64 pieces_of(lane_mask m) noexcept {
    return {_mm512_movm_epi64(static_cast<__mmask8>(_pdep_u32(m.v, 0x55) * 3))};
}

// ---- u32x ----

inline u32x splat32(std::uint32_t v) noexcept { return {_mm512_set1_epi32(static_cast<int>(v))}; }
inline u32x load32(const std::uint32_t* p) noexcept { return {_mm512_loadu_si512(p)}; }
inline void store32x(std::uint32_t* p, u32x x) noexcept { _mm512_storeu_si512(p, x.v); }
inline u32x operator+(u32x a, u32x b) noexcept { return {_mm512_add_epi32(a.v, b.v)}; }
inline u32x operator-(u32x a, u32x b) noexcept { return {_mm512_sub_epi32(a.v, b.v)}; }
inline u32x operator&(u32x a, u32x b) noexcept { return {_mm512_and_si512(a.v, b.v)}; }
inline u32x operator|(u32x a, u32x b) noexcept { return {_mm512_or_si512(a.v, b.v)}; }
template <int n>
inline u32x shift_left32(u32x a) noexcept {
    return {_mm512_slli_epi32(a.v, n)};
}
template <int n>
inline u32x shift_right32(u32x a) noexcept {
    return {_mm512_srli_epi32(a.v, n)};
}
inline u32x mul_lo32(u32x a, u32x b) noexcept { return {_mm512_mullo_epi32(a.v, b.v)}; }
inline u32x operator^(u32x a, u32x b) noexcept { return {_mm512_xor_si512(a.v, b.v)}; }
inline u32x and_not(u32x a, u32x b) noexcept { return {_mm512_andnot_si512(b.v, a.v)}; }
template <int n>
inline u32x shift_right_signed32(u32x a) noexcept {
    return {_mm512_srai_epi32(a.v, n)};
}
inline u32x shift_left32_var(u32x a, u32x counts) noexcept {
    return {_mm512_sllv_epi32(a.v, counts.v)};
}
inline u32x shift_right32_var(u32x a, u32x counts) noexcept {
    return {_mm512_srlv_epi32(a.v, counts.v)};
}
// Even lanes' products shifted down, odd lanes' products in place.
inline u32x mul_high32(u32x a, u32x b) noexcept {
    const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(a.v, b.v), 32);
    const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a.v, 32), _mm512_srli_epi64(b.v, 32));
    return {_mm512_mask_blend_epi32(0xaaaa, even, odd)};
}
inline u32x mul_lo16(u32x a, u32x b) noexcept { return {_mm512_mullo_epi16(a.v, b.v)}; }
template <int n>
inline u32x shift_right16(u32x a) noexcept {
    return {_mm512_srli_epi16(a.v, n)};
}
// From the exponent of the lane converted to float rounding toward zero (the level requires no
// AVX512CD, whose vplzcntd this would be).
inline u32x byte_length32(u32x a) noexcept {
    const __m512i exponent = _mm512_srli_epi32(
        _mm512_castps_si512(_mm512_cvt_roundepu32_ps(a.v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
        23);
    return {
        _mm512_max_epi32(_mm512_srai_epi32(_mm512_sub_epi32(exponent, _mm512_set1_epi32(119)), 3),
                         _mm512_setzero_si512())};
}
// From the exponent of the lane converted to double rounding toward zero.
inline u64x byte_length64(u64x a) noexcept {
    const __m512i exponent = _mm512_srli_epi64(
        _mm512_castpd_si512(_mm512_cvt_roundepu64_pd(a.v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
        52);
    return {
        _mm512_max_epi64(_mm512_srai_epi64(_mm512_sub_epi64(exponent, _mm512_set1_epi64(1015)), 3),
                         _mm512_setzero_si512())};
}
inline u32x lookup16_32(const std::uint32_t* table, u32x index) noexcept {
    return {_mm512_permutexvar_epi32(index.v, _mm512_load_si512(table))};
}
// first: the even lanes (0, 2, ..., 14), second: the odd ones.
inline void widen32(u32x a, u64x* first, u64x* second) noexcept {
    first->v = _mm512_and_si512(a.v, _mm512_set1_epi64(0xffffffffll));
    second->v = _mm512_srli_epi64(a.v, 32);
}
inline u32x narrow32(u64x first, u64x second) noexcept {
    return {_mm512_mask_blend_epi32(0xaaaa, first.v, _mm512_slli_epi64(second.v, 32))};
}
inline void mul_wide32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    first->v = _mm512_mul_epu32(a.v, b.v);
    second->v = _mm512_mul_epu32(_mm512_srli_epi64(a.v, 32), _mm512_srli_epi64(b.v, 32));
}
inline void zip32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    first->v = _mm512_permutex2var_epi32(
        a.v, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23), b.v);
    second->v = _mm512_permutex2var_epi32(
        a.v, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31), b.v);
}
inline u32x unzip_low32(u64x first, u64x second) noexcept {
    return {_mm512_permutex2var_epi32(
        first.v, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30),
        second.v)};
}
inline u32x as_u32(u64x a) noexcept { return {a.v}; }
inline u64x as_u64(u32x a) noexcept { return {a.v}; }

inline mask32 eq32(u32x a, u32x b) noexcept { return {_mm512_cmpeq_epu32_mask(a.v, b.v)}; }
inline mask32 greater32(u32x a, u32x b) noexcept { return {_mm512_cmpgt_epu32_mask(a.v, b.v)}; }
inline mask32 greater_signed32(u32x a, u32x b) noexcept {
    return {_mm512_cmpgt_epi32_mask(a.v, b.v)};
}
inline mask32 operator&(mask32 a, mask32 b) noexcept { return {static_cast<__mmask16>(a.v & b.v)}; }
inline mask32 operator|(mask32 a, mask32 b) noexcept { return {static_cast<__mmask16>(a.v | b.v)}; }
inline mask32 operator^(mask32 a, mask32 b) noexcept { return {static_cast<__mmask16>(a.v ^ b.v)}; }
inline mask32 and_not(mask32 a, mask32 b) noexcept { return {static_cast<__mmask16>(a.v & ~b.v)}; }
inline u32x select32(mask32 m, u32x a, u32x b) noexcept {
    return {_mm512_mask_mov_epi32(b.v, m.v, a.v)};
}
inline u32x where32(mask32 m, u32x a) noexcept { return {_mm512_maskz_mov_epi32(m.v, a.v)}; }
inline unsigned mask_bits32(mask32 m) noexcept { return m.v; }
inline bool any32(mask32 m) noexcept { return m.v != 0; }
inline bool all32(mask32 m) noexcept { return m.v == 0xffff; }
// zip32's two halves stored one after the other.
inline void store_zip32(std::uint64_t* p, u32x a, u32x b) noexcept {
    u64x first, second;
    zip32(a, b, &first, &second);
    store64(p, first);
    store64(p + kLanes64, second);
}

}  // namespace avx512
}  // namespace tensorb64

#endif
