// The AVX-512 level's sixteen-lane repr writer: repr of sixteen float32 values widened to doubles,
// from about 1e-10 to below 1, with Schubfach's products exact as c 5^-k. Included by
// float_text.cpp.
#pragma once

#include "levels/avx512/float_text_lanes.hpp"
#include "levels/avx512/float_text_templates.hpp"
#include "levels/avx512/float_text_x8.hpp"

namespace tensorb64 {
namespace {

// ---- repr of sixteen float32 values below 1 ----
//
// A float32's double c 2^q (c = c32 2^29, q = q32 - 29) has out = 0 (c is even) and, below 1 and
// from about 1e-10 (k from -26 to -16), Schubfach's products g (cb << h) exactly: 4 v 10^-k =
// c32 5^-k 2^(q32 - k + 2), a product of 24 and 61 bits shifted right by u = k - q32 - 2 (5 to 29
// there), and the bounds 4 (v -/+ ulp / 2) 10^-k that plus or minus 5^-k 2^-(30 + u) (2^-(31 + u)
// below a power of two). Round to odd of those is what round_to_odd_64 computes from the 126-bit
// g: the same vb, vbl, vbr (checked for every such float32 when this was written, and by
// float_text_exhaustive's repr), from two vpmuludq and a table of powers of five instead of the
// g table's gathers and the 128-bit products; and s / 10 is c32 5^(-k-1) >> (u + 3), exactly.
constexpr int kReprKMin = -26;
struct pow5_table {
    alignas(64) std::uint64_t values[16];
};
constexpr pow5_table make_pow5_table() {
    pow5_table t{};
    for (int i = 0; i < 12; ++i) {  // 5^(-k) for k = kReprKMin + i, one more for k = -15
        std::uint64_t p = 1;
        for (int j = 0; j < -(kReprKMin + i); ++j) p *= 5;
        t.values[i] = p;
    }
    return t;
}
constexpr pow5_table kPow5 = make_pow5_table();
static_assert(kPow5.values[0] == 1490116119384765625ull && kPow5.values[11] == 30517578125ull,
              "5^26 .. 5^15");

// The digits of sixteen repr texts: the first, digits 2..17 (16 bytes a value, four values a
// vector), the significant digits and the decimal exponent, in 32-bit lanes.
struct repr_x16 {
    __m512i lead, e10, n;
    __m512i tails[4];
};

// Eight values' digits, 64-bit lanes: c the significand, u the shift, index the row of kPow5,
// irregular where c = 2^23 (a power of two: the interval below is half as wide).
struct repr_x8_digits {
    __m512i lead, e10, upper, lower;  // upper: digits 2..9, lower: 10..17 (< 10^8)
};
TENSORB64_ALWAYS_INLINE repr_x8_digits repr_digits_x8_exact(__m512i c, __m512i u, __m512i k,
                                                            __m512i index,
                                                            __mmask8 irregular) noexcept {
    const __m512i one = c64<(1)>();
    const __m512i table_low = _mm512_load_si512(kPow5.values);
    const __m512i table_high = _mm512_load_si512(kPow5.values + 8);
    const __m512i power = _mm512_permutex2var_epi64(table_low, index, table_high);
    // c 5^-k = high 2^32 + low (high < 2^53, low < 2^56)
    const __m512i high = _mm512_mul_epu32(c, _mm512_srli_epi64(power, 32));
    const __m512i low = _mm512_mul_epu32(c, power);
    const __m512i base = _mm512_sllv_epi64(high, _mm512_sub_epi64(c64<(32)>(), u));
    const __m512i below = _mm512_sub_epi64(_mm512_sllv_epi64(one, u), one);
    const __m512i vb0 = _mm512_add_epi64(base, _mm512_srlv_epi64(low, u));
    const __m512i vb = _mm512_mask_or_epi64(vb0, _mm512_test_epi64_mask(low, below), vb0, one);
    // The bounds' fractions are never zero (5^-k is odd): their last bit is always set.
    const __m512i right = _mm512_srli_epi64(power, 30);
    const __m512i left = _mm512_mask_srli_epi64(right, irregular, power, 31);
    const __m512i vbr = _mm512_or_si512(
        _mm512_add_epi64(base, _mm512_srlv_epi64(_mm512_add_epi64(low, right), u)), one);
    const __m512i vbl = _mm512_or_si512(
        _mm512_add_epi64(base,
                         _mm512_srav_epi64(_mm512_sub_epi64(_mm512_sub_epi64(low, left), one), u)),
        one);
    // choose_digits with out = 0 (s >= 10: it has 16 or 17 digits). s / 10 = floor(c 5^-k /
    // 2^(u + 3) / 5) = c 5^(-k-1) >> (u + 3), u + 3 <= 32.
    const __m512i power_tenth =
        _mm512_permutex2var_epi64(table_low, _mm512_add_epi64(index, one), table_high);
    const __m512i s10 = _mm512_add_epi64(
        _mm512_sllv_epi64(_mm512_mul_epu32(c, _mm512_srli_epi64(power_tenth, 32)),
                          _mm512_sub_epi64(c64<(29)>(), u)),
        _mm512_srlv_epi64(_mm512_mul_epu32(c, power_tenth), _mm512_add_epi64(u, c64<(3)>())));
    const __m512i s = _mm512_srli_epi64(vb, 2);
    const __m512i s4 = _mm512_andnot_si512(c64<(3)>(), vb);
    const __m512i sp10 = mul_low(s10, hidden_constant(c64<(10)>()));
    const __m512i sp10_4 = _mm512_slli_epi64(sp10, 2);
    const __mmask8 up_in = _mm512_cmple_epu64_mask(vbl, sp10_4);
    const __mmask8 wp_in = _mm512_cmple_epu64_mask(_mm512_add_epi64(sp10_4, c64<(40)>()), vbr);
    const __mmask8 u_in = _mm512_cmple_epu64_mask(vbl, s4);
    const __mmask8 w_in = _mm512_cmple_epu64_mask(_mm512_add_epi64(s4, c64<(4)>()), vbr);
    const __m512i middle = _mm512_add_epi64(s4, c64<(2)>());
    const __mmask8 nearer_s =
        _mm512_cmplt_epu64_mask(vb, middle) |
        _mm512_mask_cmpeq_epu64_mask(_mm512_testn_epi64_mask(s, one), vb, middle);
    const __mmask8 one_in = u_in ^ w_in;
    const __mmask8 pick_s = (one_in & u_in) | (~one_in & nearer_s);
    const __m512i one_of_st = _mm512_mask_add_epi64(s, static_cast<__mmask8>(~pick_s), s, one);
    const __m512i ten_multiple =
        _mm512_mask_add_epi64(sp10, static_cast<__mmask8>(~up_in), sp10, c64<(10)>());
    const __m512i digits =
        _mm512_mask_mov_epi64(one_of_st, static_cast<__mmask8>(up_in ^ wp_in), ten_multiple);
    // 16 or 17 digits, as 17 (repr_digits_x8's fast case), then 1 + 8 + 8.
    const __mmask8 is17 = _mm512_cmpge_epu64_mask(digits, c64<(kPow10[16])>());
    const __m512i digits17 =
        _mm512_mask_mov_epi64(mul_low(digits, hidden_constant(c64<(10)>())), is17, digits);
    repr_x8_digits r;
    r.e10 = _mm512_mask_add_epi64(_mm512_add_epi64(k, c64<(15)>()), is17, k, c64<(16)>());
    const __m512i high9 =
        _mm512_srli_epi64(mul_high(digits17, c64<(12379400392853802749ull)>()), 26);
    r.lower = _mm512_sub_epi64(digits17, _mm512_mul_epu32(high9, c64<(100000000u)>()));
    r.lead = _mm512_srli_epi64(_mm512_mul_epu32(high9, c64<(1441151881u)>()), 57);
    r.upper = _mm512_sub_epi64(high9, _mm512_mul_epu32(r.lead, c64<(100000000u)>()));
    return r;
}

// Schubfach's k of the doubles of sixteen float32 magnitudes (zeros replaced by a stand-in, a
// subnormal float32 giving one far below kReprKMin), with the parts of them repr_digits_x16 uses.
struct repr_setup {
    __m512i c, q32, k;
    __mmask16 zero, irregular;
};
TENSORB64_ALWAYS_INLINE repr_setup repr_setup_x16(__m512i magnitude) noexcept {
    repr_setup r;
    r.zero = _mm512_testn_epi32_mask(magnitude, magnitude);
    const __m512i mag = _mm512_mask_mov_epi32(magnitude, r.zero, c32<(0x3e000000u)>());
    const __m512i fraction = _mm512_and_si512(mag, c32<(0x7fffff)>());
    r.irregular = _mm512_testn_epi32_mask(fraction, fraction);
    r.c = _mm512_or_si512(fraction, c32<(1u << 23)>());
    r.q32 = _mm512_sub_epi32(_mm512_srli_epi32(mag, 23), c32<(150)>());
    // floor_log10_pow2_32 (or its three-quarters form) of the double's exponent q32 - 29
    const __m512i scaled =
        _mm512_mullo_epi32(_mm512_sub_epi32(r.q32, c32<(29)>()), c32<(kLog10Pow2)>());
    r.k = _mm512_srai_epi32(
        _mm512_mask_sub_epi32(scaled, r.irregular, scaled, c32<(kLog10FourThirds)>()), kLog10Shift);
    return r;
}

// Whether all sixteen magnitudes are zeros or below 1 with k from kReprKMin on (from about 1e-10).
TENSORB64_ALWAYS_INLINE bool repr_fast_x16(__m512i magnitude) noexcept {
    const repr_setup x = repr_setup_x16(magnitude);
    const __m512i index = _mm512_sub_epi32(x.k, c32<(kReprKMin)>());
    return (_mm512_cmpgt_epu32_mask(index, c32<(-16 - kReprKMin)>()) |
            _mm512_cmpge_epu32_mask(magnitude, c32<(0x3f800000u)>())) == 0;
}

// repr's digits of sixteen magnitudes for which repr_fast_x16 holds.
TENSORB64_ALWAYS_INLINE repr_x16 repr_digits_x16(__m512i magnitude) noexcept {
    repr_x16 result;
    repr_x16* const r = &result;
    const repr_setup x = repr_setup_x16(magnitude);
    const __m512i &c = x.c, &q32 = x.q32, &k = x.k;
    const __mmask16 zero = x.zero, irregular = x.irregular;
    const __m512i index = _mm512_sub_epi32(k, c32<(kReprKMin)>());
    const __m512i u = _mm512_sub_epi32(_mm512_sub_epi32(k, q32), c32<(2)>());
    const auto half = [](__m512i v, int h) {
        return _mm512_cvtepu32_epi64(h == 0 ? _mm512_castsi512_si256(v)
                                            : _mm512_extracti64x4_epi64(v, 1));
    };
    const auto signed_half = [](__m512i v, int h) {
        return _mm512_cvtepi32_epi64(h == 0 ? _mm512_castsi512_si256(v)
                                            : _mm512_extracti64x4_epi64(v, 1));
    };
    repr_x8_digits d[2];
    for (int h = 0; h < 2; ++h) {
        d[h] = repr_digits_x8_exact(half(c, h), half(u, h), signed_half(k, h), half(index, h),
                                    static_cast<__mmask8>(irregular >> (8 * h)));
    }
    // Back to 32-bit lanes: value v in lane v; zeros: "0.0" (digits 0, e10 -1).
    const __m512i evens =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    r->lead = _mm512_maskz_mov_epi32(static_cast<__mmask16>(~zero),
                                     _mm512_permutex2var_epi32(d[0].lead, evens, d[1].lead));
    r->e10 = _mm512_mask_mov_epi32(_mm512_permutex2var_epi32(d[0].e10, evens, d[1].e10), zero,
                                   c32<(-1)>());
    // Digits 2..17 as four 4-digit numbers a value, then bytes: value 4j + i's at bytes
    // 16 i .. 16 i + 15 of tails[j].
    const __m512i pairs =
        _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
    for (int h = 0; h < 2; ++h) {
        const __m512i upper =
            _mm512_maskz_mov_epi64(static_cast<__mmask8>(~zero >> (8 * h)), d[h].upper);
        const __m512i lower =
            _mm512_maskz_mov_epi64(static_cast<__mmask8>(~zero >> (8 * h)), d[h].lower);
        const __m512i x = _mm512_permutex2var_epi32(upper, pairs, lower);  // u0 l0 u1 l1 ...
        const __m512i high4 = mul_high_x16<13>(x, c32<(3518437209u)>());   // x / 10^4
        const __m512i low4 = _mm512_sub_epi32(x, _mm512_mullo_epi32(high4, c32<(10000)>()));
        r->tails[2 * h] = digit_bytes4_x16(_mm512_permutex2var_epi32(
            high4, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
            low4));
        r->tails[2 * h + 1] = digit_bytes4_x16(_mm512_permutex2var_epi32(
            high4, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31),
            low4));
    }
    // n = 1 + the last nonzero digit's place among digits 2..17: from each 8-byte half's float
    // exponent (floor(log2) + 1023, 0 for zero), (e - 1015) / 8 bytes in digits 2..9 and 8 more
    // in 10..17 (negative where all zero), the larger of the two.
    const __m512i offsets = _mm512_setr_epi64(-1015, -951, -1015, -951, -1015, -951, -1015, -951);
    __m512i places[4];
    for (int j = 0; j < 4; ++j) {
        const __m512i e =
            _mm512_srli_epi64(_mm512_castpd_si512(_mm512_cvt_roundepu64_pd(
                                  r->tails[j], _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
                              52);
        const __m512i place = _mm512_srai_epi64(_mm512_add_epi64(e, offsets), 3);
        places[j] = _mm512_max_epi64(place, _mm512_shuffle_epi32(place, _MM_PERM_BADC));
    }
    const __m512i fours =
        _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28);
    const __m512i first8 = _mm512_permutex2var_epi32(places[0], fours, places[1]);
    const __m512i last8 = _mm512_permutex2var_epi32(places[2], fours, places[3]);
    const __m512i place = _mm512_inserti64x4(first8, _mm512_castsi512_si256(last8), 1);
    r->n = _mm512_add_epi32(_mm512_max_epi32(place, _mm512_setzero_si512()), c32<(1)>());
    return result;
}

// repr of float32 values (widened to doubles): zeros and values from about 1e-10 to below 1.
struct repr_writer {
    TENSORB64_ALWAYS_INLINE static bool fast(__m512i mag) noexcept { return repr_fast_x16(mag); }
    TENSORB64_ALWAYS_INLINE static repr_x16 digits(__m512i mag) noexcept {
        return repr_digits_x16(mag);
    }
    TENSORB64_ALWAYS_INLINE static char* write(const repr_x16& d, __m512i raw, const std::uint32_t*,
                                               std::size_t m, char* out) noexcept {
        return write_texts_x16<16, false>(d.tails, d.lead, d.e10, d.n, _mm512_srli_epi32(raw, 31),
                                          m, out);
    }
    static char* other(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        for (std::size_t h = 0; h < m; h += 8) {
            const std::size_t mh = m - h < 8 ? m - h : 8;
            const __m512i wide = _mm512_cvtepu32_epi64(
                _mm256_maskz_loadu_epi32(static_cast<__mmask8>((1u << mh) - 1), bits + h));
            const __m512i mag32 = _mm512_and_si512(wide, c64<(0x7fffffffu)>());
            out = write_repr_group8(widen_magnitudes(mag32), _mm512_srli_epi64(wide, 31), mh, out);
        }
        return out;
    }
};

}  // namespace
}  // namespace tensorb64
