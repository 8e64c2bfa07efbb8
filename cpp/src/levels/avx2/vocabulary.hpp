// The vector vocabulary (levels/vocabulary.hpp: the contract and each operation's cost) on AVX2:
// text64 is two ymm registers, u64x four 64-bit lanes in one. For the files of levels/avx2/ only
// (compiled with its flags); empty elsewhere.
#pragma once

#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "levels/vocabulary.hpp"

namespace tensorb64 {
namespace avx2 {

constexpr int kLanes64 = 4;

struct text64 {
    __m256i half[2];
};
struct u64x {
    __m256i v;
};
struct f64x {
    __m256d v;
};
struct f32x {
    __m128 v;
};
struct lane_mask {
    __m256i v;  // each lane all ones or zero
};
struct u32x {
    __m256i v;
};
struct mask32 {
    __m256i v;  // each 32-bit lane all ones or zero
};

// ---- text64 ----

inline text64 load(const void* p) noexcept {
    const auto* q = static_cast<const __m256i*>(p);
    return {{_mm256_loadu_si256(q), _mm256_loadu_si256(q + 1)}};
}
inline void store(void* p, text64 t) noexcept {
    auto* q = static_cast<__m256i*>(p);
    _mm256_storeu_si256(q, t.half[0]);
    _mm256_storeu_si256(q + 1, t.half[1]);
}
inline text64 load_pieces(const void* p0, const void* p1, const void* p2, const void* p3) noexcept {
    return {
        {_mm256_loadu2_m128i(static_cast<const __m128i*>(p1), static_cast<const __m128i*>(p0)),
         _mm256_loadu2_m128i(static_cast<const __m128i*>(p3), static_cast<const __m128i*>(p2))}};
}
inline text64 load_halves(const void* p0, const void* p1) noexcept {
    return {{_mm256_loadu_si256(static_cast<const __m256i*>(p0)),
             _mm256_loadu_si256(static_cast<const __m256i*>(p1))}};
}
inline text64 splat8(std::uint8_t c) noexcept {
    const __m256i v = _mm256_set1_epi8(static_cast<char>(c));
    return {{v, v}};
}

#define TENSORB64_TEXT64_OP(name, intrinsic)                                         \
    inline text64 name(text64 a, text64 b) noexcept {                                \
        return {{intrinsic(a.half[0], b.half[0]), intrinsic(a.half[1], b.half[1])}}; \
    }
TENSORB64_TEXT64_OP(add8, _mm256_add_epi8)
TENSORB64_TEXT64_OP(sub8, _mm256_sub_epi8)
TENSORB64_TEXT64_OP(operator&, _mm256_and_si256)
TENSORB64_TEXT64_OP(operator|, _mm256_or_si256)
TENSORB64_TEXT64_OP(operator^, _mm256_xor_si256)
#undef TENSORB64_TEXT64_OP
inline text64 and_not(text64 a, text64 b) noexcept {
    return {{_mm256_andnot_si256(b.half[0], a.half[0]), _mm256_andnot_si256(b.half[1], a.half[1])}};
}

inline std::uint64_t high_bits(text64 t) noexcept {
    return static_cast<std::uint32_t>(_mm256_movemask_epi8(t.half[0])) |
           std::uint64_t{static_cast<std::uint32_t>(_mm256_movemask_epi8(t.half[1]))} << 32;
}
inline text64 splat_words(std::uint64_t v) noexcept {
    const __m256i w = _mm256_set1_epi64x(static_cast<long long>(v));
    return {{w, w}};
}
// Unsigned: a < b where max(a, b) != a.
inline text64 less8(text64 a, text64 b) noexcept {
    text64 r;
    for (int h = 0; h < 2; ++h) {
        r.half[h] =
            _mm256_andnot_si256(_mm256_cmpeq_epi8(_mm256_max_epu8(a.half[h], b.half[h]), a.half[h]),
                                _mm256_set1_epi8(-1));
    }
    return r;
}
inline text64 greater8(text64 a, text64 b) noexcept { return less8(b, a); }

inline bool any_high_bit(text64 t) noexcept {
    return _mm256_movemask_epi8(_mm256_or_si256(t.half[0], t.half[1])) != 0;
}
inline std::uint64_t eq_bits(text64 t, std::uint8_t c) noexcept {
    const __m256i v = _mm256_set1_epi8(static_cast<char>(c));
    return high_bits({{_mm256_cmpeq_epi8(t.half[0], v), _mm256_cmpeq_epi8(t.half[1], v)}});
}
inline std::uint64_t le_bits(text64 t, std::uint8_t c) noexcept {
    const __m256i v = _mm256_set1_epi8(static_cast<char>(c));
    return high_bits({{_mm256_cmpeq_epi8(_mm256_min_epu8(t.half[0], v), t.half[0]),
                       _mm256_cmpeq_epi8(_mm256_min_epu8(t.half[1], v), t.half[1])}});
}

inline text64 shuffle16(text64 table, text64 index) noexcept {
    return {{_mm256_shuffle_epi8(table.half[0], index.half[0]),
             _mm256_shuffle_epi8(table.half[1], index.half[1])}};
}

// No byte permute crosses AVX2's 128-bit lanes: each of the table's four pieces is broadcast to
// both lanes and looked up by vpshufb, and the index's bits 4 and 5 pick the piece.
inline text64 permute64(text64 table, text64 index) noexcept {
    const __m256i piece[4] = {_mm256_permute2x128_si256(table.half[0], table.half[0], 0x00),
                              _mm256_permute2x128_si256(table.half[0], table.half[0], 0x11),
                              _mm256_permute2x128_si256(table.half[1], table.half[1], 0x00),
                              _mm256_permute2x128_si256(table.half[1], table.half[1], 0x11)};
    text64 r;
    for (int h = 0; h < 2; ++h) {
        const __m256i i = index.half[h];
        // Bit 4 to each byte's top bit picks between pieces 0/1 and 2/3; bit 5 between the pairs.
        const __m256i bit4 = _mm256_slli_epi16(i, 3);
        const __m256i bit5 = _mm256_slli_epi16(i, 2);
        const __m256i low = _mm256_blendv_epi8(_mm256_shuffle_epi8(piece[0], i),
                                               _mm256_shuffle_epi8(piece[1], i), bit4);
        const __m256i high = _mm256_blendv_epi8(_mm256_shuffle_epi8(piece[2], i),
                                                _mm256_shuffle_epi8(piece[3], i), bit4);
        r.half[h] = _mm256_blendv_epi8(low, high, bit5);
    }
    return r;
}

// Two permute64 lookups (the table's two halves), the index's bit 6 picking between them.
inline text64 lookup128(const byte_table128& table, text64 index) noexcept {
    const text64 low = permute64(load(table.bytes), index);
    const text64 high = permute64(load(table.bytes + 64), index);
    text64 r;
    for (int h = 0; h < 2; ++h) {
        r.half[h] =
            _mm256_blendv_epi8(low.half[h], high.half[h], _mm256_slli_epi16(index.half[h], 1));
    }
    return r;
}

inline text64 blend(text64 mask, text64 a, text64 b) noexcept {
    return {{_mm256_blendv_epi8(b.half[0], a.half[0], mask.half[0]),
             _mm256_blendv_epi8(b.half[1], a.half[1], mask.half[1])}};
}

// Each half: its 32 bits broadcast, each byte given the mask byte holding its bit, then tested.
inline text64 bytes_of_bits(std::uint64_t bits) noexcept {
    const __m256i which = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    text64 r;
    for (int h = 0; h < 2; ++h) {
        const __m256i spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(static_cast<int>(static_cast<std::uint32_t>(bits >> (32 * h)))),
            which);
        r.half[h] = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    }
    return r;
}

inline text64 leading_ones_halves(unsigned k0, unsigned k1) noexcept {
    return load_halves(kLeadingOnes.bytes + 32 - k0, kLeadingOnes.bytes + 32 - k1);
}
inline text64 blend_below(text64 a, text64 b, unsigned k0, unsigned k1) noexcept {
    return blend(leading_ones_halves(k0, k1), a, b);
}
inline text64 zero_below(text64 t, unsigned k0, unsigned k1) noexcept {
    return and_not(t, leading_ones_halves(k0, k1));
}

// Pairs, quads, eights: vpmaddubsw, vpmaddwd, vpmuludq and a shift.
inline text64 digit_words(text64 t) noexcept {
    text64 r;
    for (int h = 0; h < 2; ++h) {
        const __m256i pairs = _mm256_maddubs_epi16(t.half[h], _mm256_set1_epi16(0x010a));
        const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00010064));
        r.half[h] = _mm256_add_epi64(_mm256_mul_epu32(quads, _mm256_set1_epi64x(10000)),
                                     _mm256_srli_epi64(quads, 32));
    }
    return r;
}

inline u64x even_words(text64 t) noexcept;
inline u64x odd_words(text64 t) noexcept;
inline void half_columns(const text64* t, u64x columns[4]) noexcept;

// Eight 8-byte pieces, each packed by vpshufb from kCompress's control for its byte of `keep`.
inline std::size_t compress_store(char* out, text64 t, std::uint64_t keep) noexcept {
    alignas(32) unsigned char bytes[64];
    store(bytes, t);
    std::size_t n = 0;
    for (int piece = 0; piece < 8; ++piece) {
        const unsigned m = static_cast<unsigned>(keep >> (8 * piece)) & 0xffu;
        const __m128i control =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompress.index[m]));
        const __m128i packed = _mm_shuffle_epi8(
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes + 8 * piece)), control);
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + n), packed);
        n += bit_count(m);
    }
    return n;
}

// ---- u64x, f64x, f32x, lane_mask ----

inline u64x splat64(std::uint64_t v) noexcept {
    return {_mm256_set1_epi64x(static_cast<long long>(v))};
}
inline u64x load64(const std::uint64_t* p) noexcept {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))};
}
inline void store64(std::uint64_t* p, u64x x) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x.v);
}
inline u64x operator+(u64x a, u64x b) noexcept { return {_mm256_add_epi64(a.v, b.v)}; }
inline u64x operator-(u64x a, u64x b) noexcept { return {_mm256_sub_epi64(a.v, b.v)}; }
inline u64x operator&(u64x a, u64x b) noexcept { return {_mm256_and_si256(a.v, b.v)}; }
inline u64x operator|(u64x a, u64x b) noexcept { return {_mm256_or_si256(a.v, b.v)}; }
inline u64x operator^(u64x a, u64x b) noexcept { return {_mm256_xor_si256(a.v, b.v)}; }
template <int n>
inline u64x shift_left(u64x a) noexcept {
    return {_mm256_slli_epi64(a.v, n)};
}
template <int n>
inline u64x shift_right(u64x a) noexcept {
    return {_mm256_srli_epi64(a.v, n)};
}
inline u64x shift_left_var(u64x a, u64x counts) noexcept {
    return {_mm256_sllv_epi64(a.v, counts.v)};
}
inline u64x shift_right_var(u64x a, u64x counts) noexcept {
    return {_mm256_srlv_epi64(a.v, counts.v)};
}
inline u64x mul_low32(u64x a, u64x b) noexcept { return {_mm256_mul_epu32(a.v, b.v)}; }
inline u64x mul_low(u64x a, u64x b) noexcept {
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a.v, 32), b.v),
                                           _mm256_mul_epu32(a.v, _mm256_srli_epi64(b.v, 32)));
    return {_mm256_add_epi64(_mm256_mul_epu32(a.v, b.v), _mm256_slli_epi64(cross, 32))};
}
// From four 32 x 32 -> 64-bit products.
inline void mul_wide(u64x a, u64x b, u64x* high, u64x* low) noexcept {
    const __m256i low32 = _mm256_set1_epi64x(0xffffffffll);
    const __m256i a_high = _mm256_srli_epi64(a.v, 32);
    const __m256i b_high = _mm256_srli_epi64(b.v, 32);
    const __m256i p00 = _mm256_mul_epu32(a.v, b.v);
    const __m256i p01 = _mm256_mul_epu32(a.v, b_high);
    const __m256i p10 = _mm256_mul_epu32(a_high, b.v);
    const __m256i p11 = _mm256_mul_epu32(a_high, b_high);
    // The middle 64 bits' sum: three terms below 2^32 each, no overflow.
    const __m256i middle =
        _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(p00, 32), _mm256_and_si256(p01, low32)),
                         _mm256_and_si256(p10, low32));
    high->v = _mm256_add_epi64(
        _mm256_add_epi64(p11, _mm256_srli_epi64(p01, 32)),
        _mm256_add_epi64(_mm256_srli_epi64(p10, 32), _mm256_srli_epi64(middle, 32)));
    low->v = _mm256_or_si256(_mm256_slli_epi64(middle, 32), _mm256_and_si256(p00, low32));
}
inline u64x mul_high(u64x a, u64x b) noexcept {
    const __m256i low32 = _mm256_set1_epi64x(0xffffffffll);
    const __m256i a_high = _mm256_srli_epi64(a.v, 32);
    const __m256i b_high = _mm256_srli_epi64(b.v, 32);
    const __m256i p00 = _mm256_mul_epu32(a.v, b.v);
    const __m256i p01 = _mm256_mul_epu32(a.v, b_high);
    const __m256i p10 = _mm256_mul_epu32(a_high, b.v);
    const __m256i p11 = _mm256_mul_epu32(a_high, b_high);
    const __m256i middle = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_srli_epi64(p00, 32), _mm256_and_si256(p01, low32)), p10);
    return {_mm256_add_epi64(_mm256_add_epi64(p11, _mm256_srli_epi64(p01, 32)),
                             _mm256_srli_epi64(middle, 32))};
}

inline lane_mask eq(u64x a, u64x b) noexcept { return {_mm256_cmpeq_epi64(a.v, b.v)}; }
// Unsigned: both sides biased by 2^63 for the signed compare.
inline lane_mask greater(u64x a, u64x b) noexcept {
    const __m256i bias = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return {_mm256_cmpgt_epi64(_mm256_xor_si256(a.v, bias), _mm256_xor_si256(b.v, bias))};
}
inline lane_mask operator&(lane_mask a, lane_mask b) noexcept {
    return {_mm256_and_si256(a.v, b.v)};
}
inline lane_mask operator|(lane_mask a, lane_mask b) noexcept {
    return {_mm256_or_si256(a.v, b.v)};
}
inline lane_mask operator^(lane_mask a, lane_mask b) noexcept {
    return {_mm256_xor_si256(a.v, b.v)};
}
inline lane_mask and_not(lane_mask a, lane_mask b) noexcept {
    return {_mm256_andnot_si256(b.v, a.v)};
}
inline u64x select(lane_mask m, u64x a, u64x b) noexcept {
    return {_mm256_blendv_epi8(b.v, a.v, m.v)};
}
inline f64x select(lane_mask m, f64x a, f64x b) noexcept {
    return {_mm256_blendv_pd(b.v, a.v, _mm256_castsi256_pd(m.v))};
}
inline unsigned mask_bits(lane_mask m) noexcept {
    return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(m.v)));
}
inline lane_mask mask_of_bits(unsigned bits) noexcept {
    const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
    return {_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(bits), bit), bit)};
}

inline u64x widen_bytes(std::uint64_t bytes) noexcept {
    return {_mm256_cvtepu8_epi64(_mm_cvtsi64_si128(static_cast<long long>(bytes)))};
}
inline u64x lookup24(const std::uint64_t* table, u64x index) noexcept {
    return {_mm256_i64gather_epi64(reinterpret_cast<const long long*>(table), index.v, 8)};
}
inline f64x lookup24(const double* table, u64x index) noexcept {
    return {_mm256_i64gather_pd(table, index.v, 8)};
}

// AVX2 converts no 64-bit integer: the high and low 32 bits as exact doubles (2^84 + high * 2^32
// and 2^52 + low, from their bits), whose sum, less 2^84 + 2^52 first, is rounded once.
inline f64x to_f64(u64x x) noexcept {
    const __m256i high = _mm256_or_si256(_mm256_srli_epi64(x.v, 32),
                                         _mm256_set1_epi64x(0x4530000000000000ll));  // 2^84
    const __m256i low = _mm256_blend_epi32(x.v, _mm256_set1_epi64x(0x4330000000000000ll), 0xaa);
    const __m256d high_part = _mm256_sub_pd(_mm256_castsi256_pd(high),
                                            _mm256_set1_pd(19342813118337666422669312.));  // + 2^52
    return {_mm256_add_pd(high_part, _mm256_castsi256_pd(low))};
}

// floor(log2 x) from the exponent of an exact double: high * 2^32 where x has high bits, else
// low (a rounded conversion could reach the next power of two). A zero lane gives 1086 - 0 > 64.
inline u64x leading_zeros(u64x x) noexcept {
    const __m256i high = _mm256_srli_epi64(x.v, 32);
    const __m256d high_part = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(high, _mm256_set1_epi64x(0x4530000000000000ll))),
        _mm256_set1_pd(19342813113834066795298816.));  // 2^84
    const __m256d low_part =
        _mm256_sub_pd(_mm256_castsi256_pd(
                          _mm256_blend_epi32(x.v, _mm256_set1_epi64x(0x4330000000000000ll), 0xaa)),
                      _mm256_set1_pd(4503599627370496.));  // 2^52
    const __m256d exact = _mm256_blendv_pd(
        high_part, low_part, _mm256_castsi256_pd(_mm256_cmpeq_epi64(high, _mm256_setzero_si256())));
    const __m256i biased = _mm256_srli_epi64(_mm256_castpd_si256(exact), 52);
    const __m256i zeros = _mm256_sub_epi64(_mm256_set1_epi64x(1086), biased);
    // A zero lane's exponent field is 0: 1086, cut to 64.
    return {_mm256_min_epu32(zeros, _mm256_set1_epi64x(64))};
}

// The sign bits of four lanes, from a table by the 4-bit mask.
struct lane_signs_table {
    alignas(32) std::uint64_t bits[16][4];
};
constexpr lane_signs_table make_lane_signs() {
    lane_signs_table t{};
    for (int m = 0; m < 16; ++m) {
        for (int i = 0; i < 4; ++i) t.bits[m][i] = (m >> i & 1) ? 0x8000000000000000ull : 0;
    }
    return t;
}
constexpr lane_signs_table kLaneSigns = make_lane_signs();
inline f64x with_signs(f64x x, unsigned bits) noexcept {
    return {_mm256_or_pd(
        x.v, _mm256_load_pd(reinterpret_cast<const double*>(kLaneSigns.bits[bits & 15])))};
}
inline u64x as_bits(f64x x) noexcept { return {_mm256_castpd_si256(x.v)}; }
inline f64x as_f64(u64x x) noexcept { return {_mm256_castsi256_pd(x.v)}; }
inline f64x operator/(f64x a, f64x b) noexcept { return {_mm256_div_pd(a.v, b.v)}; }
inline f32x narrow(f64x x) noexcept { return {_mm256_cvtpd_ps(x.v)}; }
inline void store32(float* p, f32x x, std::size_t n) noexcept {
    if (n >= 4) {
        _mm_storeu_ps(p, x.v);
    } else {
        alignas(16) float lanes[4];
        _mm_store_ps(lanes, x.v);
        for (std::size_t i = 0; i < n; ++i) p[i] = lanes[i];
    }
}
inline void store64(double* p, f64x x, std::size_t n) noexcept {
    if (n >= 4) {
        _mm256_storeu_pd(p, x.v);
    } else {
        alignas(32) double lanes[4];
        _mm256_store_pd(lanes, x.v);
        for (std::size_t i = 0; i < n; ++i) p[i] = lanes[i];
    }
}

// Words 0, 4, 2, 6 from the unpack (within 128-bit lanes), put in order by vpermq.
inline u64x even_words(text64 t) noexcept {
    return {_mm256_permute4x64_epi64(_mm256_unpacklo_epi64(t.half[0], t.half[1]), 0xd8)};
}
inline u64x odd_words(text64 t) noexcept {
    return {_mm256_permute4x64_epi64(_mm256_unpackhi_epi64(t.half[0], t.half[1]), 0xd8)};
}
// Halves 0..3 are t[0].half[0], t[0].half[1], t[1].half[0], t[1].half[1].
inline void half_columns(const text64* t, u64x columns[4]) noexcept {
    const __m256i low01 = _mm256_unpacklo_epi64(t[0].half[0], t[0].half[1]);   // w0 w0 | w2 w2
    const __m256i high01 = _mm256_unpackhi_epi64(t[0].half[0], t[0].half[1]);  // w1 w1 | w3 w3
    const __m256i low23 = _mm256_unpacklo_epi64(t[1].half[0], t[1].half[1]);
    const __m256i high23 = _mm256_unpackhi_epi64(t[1].half[0], t[1].half[1]);
    columns[0].v = _mm256_permute2x128_si256(low01, low23, 0x20);
    columns[1].v = _mm256_permute2x128_si256(high01, high23, 0x20);
    columns[2].v = _mm256_permute2x128_si256(low01, low23, 0x31);
    columns[3].v = _mm256_permute2x128_si256(high01, high23, 0x31);
}

// Lanes 0, 1 (the first ymm's 128-bit halves each take one lane, twice), then 2, 3.
inline text64 pieces_of(lane_mask m) noexcept {
    return {{_mm256_permute4x64_epi64(m.v, 0x50), _mm256_permute4x64_epi64(m.v, 0xfa)}};
}

// ---- u32x ----

inline u32x splat32(std::uint32_t v) noexcept { return {_mm256_set1_epi32(static_cast<int>(v))}; }
inline u32x load32(const std::uint32_t* p) noexcept {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))};
}
inline void store32x(std::uint32_t* p, u32x x) noexcept {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), x.v);
}
inline u32x operator+(u32x a, u32x b) noexcept { return {_mm256_add_epi32(a.v, b.v)}; }
inline u32x operator-(u32x a, u32x b) noexcept { return {_mm256_sub_epi32(a.v, b.v)}; }
inline u32x operator&(u32x a, u32x b) noexcept { return {_mm256_and_si256(a.v, b.v)}; }
inline u32x operator|(u32x a, u32x b) noexcept { return {_mm256_or_si256(a.v, b.v)}; }
template <int n>
inline u32x shift_left32(u32x a) noexcept {
    return {_mm256_slli_epi32(a.v, n)};
}
template <int n>
inline u32x shift_right32(u32x a) noexcept {
    return {_mm256_srli_epi32(a.v, n)};
}
inline u32x mul_lo32(u32x a, u32x b) noexcept { return {_mm256_mullo_epi32(a.v, b.v)}; }
inline u32x operator^(u32x a, u32x b) noexcept { return {_mm256_xor_si256(a.v, b.v)}; }
inline u32x and_not(u32x a, u32x b) noexcept { return {_mm256_andnot_si256(b.v, a.v)}; }
template <int n>
inline u32x shift_right_signed32(u32x a) noexcept {
    return {_mm256_srai_epi32(a.v, n)};
}
inline u32x shift_left32_var(u32x a, u32x counts) noexcept {
    return {_mm256_sllv_epi32(a.v, counts.v)};
}
inline u32x shift_right32_var(u32x a, u32x counts) noexcept {
    return {_mm256_srlv_epi32(a.v, counts.v)};
}
// Even lanes' products shifted down, odd lanes' products in place.
inline u32x mul_high32(u32x a, u32x b) noexcept {
    const __m256i even = _mm256_srli_epi64(_mm256_mul_epu32(a.v, b.v), 32);
    const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a.v, 32), _mm256_srli_epi64(b.v, 32));
    return {_mm256_blend_epi32(even, odd, 0xaa)};
}
inline u32x mul_lo16(u32x a, u32x b) noexcept { return {_mm256_mullo_epi16(a.v, b.v)}; }
template <int n>
inline u32x shift_right16(u32x a) noexcept {
    return {_mm256_srli_epi16(a.v, n)};
}
// From the exponent of the lane converted to float: under any rounding a lane below 2^31 keeps
// the power of 256 it lies in (rounding up reaches at most the next power of two).
inline u32x byte_length32(u32x a) noexcept {
    const __m256i exponent = _mm256_srli_epi32(_mm256_castps_si256(_mm256_cvtepi32_ps(a.v)), 23);
    return {
        _mm256_max_epi32(_mm256_srai_epi32(_mm256_sub_epi32(exponent, _mm256_set1_epi32(119)), 3),
                         _mm256_setzero_si256())};
}
// Two vpermd, one a half of the table, the index's bit 3 choosing.
inline u32x lookup16_32(const std::uint32_t* table, u32x index) noexcept {
    const __m256i* t = reinterpret_cast<const __m256i*>(table);
    const __m256i low = _mm256_permutevar8x32_epi32(_mm256_load_si256(t), index.v);
    const __m256i high = _mm256_permutevar8x32_epi32(_mm256_load_si256(t + 1), index.v);
    return {
        _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(low), _mm256_castsi256_ps(high),
                                             _mm256_castsi256_ps(_mm256_slli_epi32(index.v, 28))))};
}
// first: the even lanes (0, 2, 4, 6), second: the odd ones.
inline void widen32(u32x a, u64x* first, u64x* second) noexcept {
    first->v = _mm256_and_si256(a.v, _mm256_set1_epi64x(0xffffffffll));
    second->v = _mm256_srli_epi64(a.v, 32);
}
inline u32x narrow32(u64x first, u64x second) noexcept {
    return {_mm256_blend_epi32(first.v, _mm256_slli_epi64(second.v, 32), 0xaa)};
}
inline void mul_wide32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    first->v = _mm256_mul_epu32(a.v, b.v);
    second->v = _mm256_mul_epu32(_mm256_srli_epi64(a.v, 32), _mm256_srli_epi64(b.v, 32));
}
inline void zip32(u32x a, u32x b, u64x* first, u64x* second) noexcept {
    const __m256i low = _mm256_unpacklo_epi32(a.v, b.v);   // a0 b0 a1 b1 | a4 b4 a5 b5
    const __m256i high = _mm256_unpackhi_epi32(a.v, b.v);  // a2 b2 a3 b3 | a6 b6 a7 b7
    first->v = _mm256_permute2x128_si256(low, high, 0x20);
    second->v = _mm256_permute2x128_si256(low, high, 0x31);
}
// Each half's low dwords gathered into its lower 128 bits, then the two halves' joined.
inline u32x unzip_low32(u64x first, u64x second) noexcept {
    const __m256i low = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    return {_mm256_permute2x128_si256(_mm256_permutevar8x32_epi32(first.v, low),
                                      _mm256_permutevar8x32_epi32(second.v, low), 0x20)};
}
inline u32x as_u32(u64x a) noexcept { return {a.v}; }
inline u64x as_u64(u32x a) noexcept { return {a.v}; }
// The halves' lengths (byte_length32), the upper one's counted from byte 4 where it has any.
inline u64x byte_length64(u64x a) noexcept {
    const u64x lengths = as_u64(byte_length32(as_u32(a)));
    const u64x high = shift_right<32>(lengths);
    return select(eq(high, splat64(0)), lengths & splat64(0xffffffffu), high + splat64(4));
}

inline mask32 eq32(u32x a, u32x b) noexcept { return {_mm256_cmpeq_epi32(a.v, b.v)}; }
inline mask32 greater32(u32x a, u32x b) noexcept {
    const __m256i bias = _mm256_set1_epi32(static_cast<int>(0x80000000u));
    return {_mm256_cmpgt_epi32(_mm256_xor_si256(a.v, bias), _mm256_xor_si256(b.v, bias))};
}
inline mask32 greater_signed32(u32x a, u32x b) noexcept { return {_mm256_cmpgt_epi32(a.v, b.v)}; }
inline mask32 operator&(mask32 a, mask32 b) noexcept { return {_mm256_and_si256(a.v, b.v)}; }
inline mask32 operator|(mask32 a, mask32 b) noexcept { return {_mm256_or_si256(a.v, b.v)}; }
inline mask32 operator^(mask32 a, mask32 b) noexcept { return {_mm256_xor_si256(a.v, b.v)}; }
inline mask32 and_not(mask32 a, mask32 b) noexcept { return {_mm256_andnot_si256(b.v, a.v)}; }
inline u32x select32(mask32 m, u32x a, u32x b) noexcept {
    return {_mm256_blendv_epi8(b.v, a.v, m.v)};
}
inline u32x where32(mask32 m, u32x a) noexcept { return {_mm256_and_si256(m.v, a.v)}; }
inline unsigned mask_bits32(mask32 m) noexcept {
    return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(m.v)));
}
inline bool any32(mask32 m) noexcept { return !_mm256_testz_si256(m.v, m.v); }
inline bool all32(mask32 m) noexcept { return _mm256_movemask_epi8(m.v) == -1; }
// zip32's two halves stored one after the other.
inline void store_zip32(std::uint64_t* p, u32x a, u32x b) noexcept {
    u64x first, second;
    zip32(a, b, &first, &second);
    store64(p, first);
    store64(p + kLanes64, second);
}

}  // namespace avx2
}  // namespace tensorb64

#endif
