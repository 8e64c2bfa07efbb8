// The AVX-512 level's sixteen-lane shortest writer: the shortest digits of sixteen float32 values
// below 1, to_decimal32's steps in 32-bit lanes (only its products in 64-bit ones), in Python's
// layout or orjson's. Included by float_text.cpp.
#pragma once

#include "levels/avx512/float_text_lanes.hpp"
#include "levels/avx512/float_text_templates.hpp"
#include "levels/avx512/float_text_x8.hpp"

namespace tensorb64 {
namespace {

// to_decimal32's g = kSchubfachG[k][0] + 1 as 32-bit halves, for k from kG32KMin: the 48 rows
// two permutes reach, enough for every value below 1 (k from -45 to -8).
constexpr int kG32KMin = -45;
struct g32_table {
    alignas(64) std::uint32_t high[48];
    alignas(64) std::uint32_t low[48];
};
constexpr g32_table make_g32_table() {
    g32_table t{};
    for (int i = 0; i < 48; ++i) {
        const std::uint64_t g = kSchubfachG[kG32KMin + i - kSchubfachKMin][0] + 1;
        t.high[i] = static_cast<std::uint32_t>(g >> 32);
        t.low[i] = static_cast<std::uint32_t>(g);
    }
    return t;
}
constexpr g32_table kG32 = make_g32_table();

// round_to_odd_32(g, x << h) for sixteen lanes, g given as halves (and their odd lanes' copies
// shifted down), h32 = h - 32: x << h has its low 32 bits zero (h >= 33, x << (h - 32) < 2^31), so
// the product's high 64 bits are g_high cp + (g_low cp >> 32) with cp = x << (h - 32).
struct g_halves {
    __m512i high, low, high_odd, low_odd;
};
inline __m512i round_to_odd_x16(const g_halves& g, __m512i x, __m512i h32) noexcept {
    const __m512i cp = _mm512_sllv_epi32(x, h32);
    const __m512i cp_odd = _mm512_srli_epi64(cp, 32);
    const __m512i even = _mm512_add_epi64(_mm512_mul_epu32(g.high, cp),
                                          _mm512_srli_epi64(_mm512_mul_epu32(g.low, cp), 32));
    const __m512i odd =
        _mm512_add_epi64(_mm512_mul_epu32(g.high_odd, cp_odd),
                         _mm512_srli_epi64(_mm512_mul_epu32(g.low_odd, cp_odd), 32));
    // x1 >> 31, its last bit set where x1's low 32 bits are not all zero.
    const __m512i high =
        _mm512_mask_blend_epi32(0xaaaa, _mm512_srli_epi64(even, 31), _mm512_slli_epi64(odd, 1));
    const __m512i low = _mm512_mask_blend_epi32(0xaaaa, even, _mm512_slli_epi64(odd, 32));
    return _mm512_mask_or_epi32(high, _mm512_test_epi32_mask(low, low), high, c32<(1)>());
}

// Sixteen values' shortest digits as what the layout needs: the first digit, digits 2..9 as
// bytes 0..9 in string order (the first in the lowest byte), the decimal exponent and the count
// of significant digits. Zero lanes: digits 0, e10 -1, n 1 ("0.0").
struct shortest_x16 {
    __m512i lead, e10, n;
    __m512i tails[2];  // digits 2..9 of values 0..7 and 8..15, eight bytes a value
};

// floor(log2 x) + 127 of each lane x (0 for zero): the exponent of x converted to float rounding
// toward zero.
inline __m512i float_exponent_x16(__m512i x) noexcept {
    return _mm512_srli_epi32(
        _mm512_castps_si512(_mm512_cvt_roundepu32_ps(x, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)),
        23);
}

// to_decimal32 (and write_float_text's digit steps) of sixteen magnitudes below 1, zeros or normal.
TENSORB64_ALWAYS_INLINE shortest_x16 shortest_digits_x16(__m512i magnitude) noexcept {
    const __m512i one = c32<(1)>();
    const __mmask16 zero = _mm512_testn_epi32_mask(magnitude, magnitude);
    const __m512i mag = _mm512_mask_mov_epi32(magnitude, zero, c32<(0x3e000000u)>());  // a stand-in
    const __m512i biased = _mm512_srli_epi32(mag, 23);
    const __m512i fraction = _mm512_and_si512(mag, c32<(0x7fffff)>());
    const __m512i c = _mm512_or_si512(fraction, c32<(1u << 23)>());
    const __m512i q = _mm512_sub_epi32(biased, c32<(150)>());
    // At a power of two (c == hidden, q > -149) the interval below is half as wide.
    const __mmask16 irregular =
        _mm512_mask_testn_epi32_mask(_mm512_cmpgt_epi32_mask(biased, one), fraction, fraction);
    const __m512i scaled = _mm512_mullo_epi32(q, c32<(kLog10Pow2)>());
    const __m512i k = _mm512_srai_epi32(
        _mm512_mask_sub_epi32(scaled, irregular, scaled, c32<(kLog10FourThirds)>()), kLog10Shift);
    // h - 32 = q + floor_log2_pow10(-k) + 1
    const __m512i h32 = _mm512_add_epi32(
        _mm512_srai_epi32(
            _mm512_add_epi32(_mm512_mullo_epi32(k, c32<(-kLog2Pow10)>()), c32<(1 << kLog2Shift)>()),
            kLog2Shift),
        q);
    const __m512i index = _mm512_sub_epi32(k, c32<(kG32KMin)>());
    const __mmask16 upper = _mm512_cmpge_epi32_mask(index, c32<(32)>());
    const auto lookup = [&](const std::uint32_t* t) {
        const __m512i v =
            _mm512_permutex2var_epi32(_mm512_load_si512(t), index, _mm512_load_si512(t + 16));
        return _mm512_mask_permutexvar_epi32(v, upper, index, _mm512_load_si512(t + 32));
    };
    g_halves g;
    g.high = lookup(kG32.high);
    g.low = lookup(kG32.low);
    g.high_odd = _mm512_srli_epi64(g.high, 32);
    g.low_odd = _mm512_srli_epi64(g.low, 32);
    const __m512i cb = _mm512_slli_epi32(c, 2);
    const __m512i cbl =
        _mm512_mask_add_epi32(_mm512_sub_epi32(cb, c32<(2)>()), irregular, cb, c32<(-1)>());
    const __m512i vb = round_to_odd_x16(g, cb, h32);
    const __m512i vbl = round_to_odd_x16(g, cbl, h32);
    const __m512i vbr = round_to_odd_x16(g, _mm512_add_epi32(cb, c32<(2)>()), h32);
    // choose_digits in uint32_t (the same sums and shifts, cut to 32 bits alike).
    const __mmask16 odd = _mm512_test_epi32_mask(c, one);  // the interval excludes its bounds
    const __m512i s = _mm512_srli_epi32(vb, 2);
    const __m512i s4 = _mm512_andnot_si512(c32<(3)>(), vb);  // s << 2
    const __m512i sp10 = _mm512_mullo_epi32(mul_high_x16<3>(s, c32<(0xcccccccdu)>()), c32<(10)>());
    const __m512i sp10_4 = _mm512_slli_epi32(sp10, 2);
    const __m512i vbl_out = _mm512_mask_add_epi32(vbl, odd, vbl, one);
    const __mmask16 up_in = _mm512_cmple_epu32_mask(vbl_out, sp10_4);
    const __m512i wp = _mm512_add_epi32(sp10_4, c32<(40)>());
    const __mmask16 wp_in = _mm512_cmple_epu32_mask(_mm512_mask_add_epi32(wp, odd, wp, one), vbr);
    const __mmask16 u_in = _mm512_cmple_epu32_mask(vbl_out, s4);
    const __m512i w = _mm512_add_epi32(s4, c32<(4)>());
    const __mmask16 w_in = _mm512_cmple_epu32_mask(_mm512_mask_add_epi32(w, odd, w, one), vbr);
    const __m512i middle = _mm512_add_epi32(s4, c32<(2)>());
    const __mmask16 nearer_s =
        _mm512_cmplt_epu32_mask(vb, middle) |
        _mm512_mask_cmpeq_epi32_mask(_mm512_testn_epi32_mask(s, one), vb, middle);
    const __mmask16 one_in = u_in ^ w_in;
    const __mmask16 pick_s = (one_in & u_in) | (~one_in & nearer_s);
    const __m512i one_of_st = _mm512_mask_add_epi32(s, static_cast<__mmask16>(~pick_s), s, one);
    const __m512i ten_multiple =
        _mm512_mask_add_epi32(sp10, static_cast<__mmask16>(~up_in), sp10, c32<(10)>());
    const __mmask16 use_ten_multiple = _mm512_cmpge_epu32_mask(s, c32<(10)>()) & (up_in ^ wp_in);
    const __m512i digits = _mm512_mask_mov_epi32(one_of_st, use_ten_multiple, ten_multiple);
    // A normal float32's digits have 7 to 9 digits (s is in [2^23, 10 * 2^24), the choice
    // within 10 of it): the length is two compares; then the digits scaled to nine.
    const __mmask16 ge7 = _mm512_cmpge_epu32_mask(digits, c32<(10000000)>());
    const __mmask16 ge8 = _mm512_cmpge_epu32_mask(digits, c32<(100000000)>());
    const __m512i scale =
        _mm512_mask_mov_epi32(_mm512_mask_mov_epi32(c32<(100)>(), ge7, c32<(10)>()), ge8, one);
    const __m512i digits9 = _mm512_maskz_mullo_epi32(static_cast<__mmask16>(~zero), digits, scale);
    shortest_x16 r;
    const __m512i e7 = _mm512_mask_add_epi32(_mm512_add_epi32(k, c32<(6)>()), ge7, k, c32<(7)>());
    r.e10 = _mm512_mask_mov_epi32(_mm512_mask_add_epi32(e7, ge8, e7, one), zero, c32<(-1)>());
    // digits9 = lead 10^8 + high4 10^4 + low4
    const __m512i high5 = mul_high_x16<13>(digits9, c32<(3518437209u)>());  // digits9 / 10^4
    const __m512i low4 = _mm512_sub_epi32(digits9, _mm512_mullo_epi32(high5, c32<(10000)>()));
    r.lead = _mm512_srli_epi32(_mm512_mullo_epi32(_mm512_srli_epi32(high5, 4), c32<(6711)>()), 22);
    const __m512i high4 = _mm512_sub_epi32(high5, _mm512_mullo_epi32(r.lead, c32<(10000)>()));
    const __m512i digits2to5 = digit_bytes4_x16(high4);
    const __m512i digits6to9 = digit_bytes4_x16(low4);
    r.tails[0] = _mm512_permutex2var_epi32(
        digits2to5, _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23),
        digits6to9);
    r.tails[1] = _mm512_permutex2var_epi32(
        digits2to5, _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31),
        digits6to9);
    // n = 1 + (digits 6..9 nonzero ? 4 + their significant bytes : those of digits 2..5): from
    // the float exponents, a byte per 8 of them.
    const __m512i e_high = float_exponent_x16(digits2to5);
    const __m512i e_low = float_exponent_x16(digits6to9);
    const __m512i e = _mm512_mask_add_epi32(e_high, _mm512_test_epi32_mask(digits6to9, digits6to9),
                                            e_low, c32<(32)>());
    r.n = _mm512_max_epi32(_mm512_srai_epi32(_mm512_sub_epi32(e, c32<(111)>()), 3), one);
    return r;
}

// Shortest float32 text in Python's layout, or with Orjson in orjson's (write_orjson_f32): zeros
// and normal values below 1 (and not write_shortest_f32's exception, whose digits the sixteen
// lanes do not carry).
template <bool Orjson>
struct shortest_writer {
    TENSORB64_ALWAYS_INLINE static bool fast(__m512i mag) noexcept {
        // a subnormal: mag - 1 below 0x7fffff
        __mmask16 other =
            _mm512_cmpge_epu32_mask(mag, c32<(0x3f800000u)>()) |
            _mm512_cmplt_epu32_mask(_mm512_sub_epi32(mag, c32<(1)>()), c32<(0x7fffffu)>());
        if (!Orjson) other |= _mm512_cmpeq_epi32_mask(mag, c32<(0x15ae43fdu)>());
        return other == 0;
    }
    TENSORB64_ALWAYS_INLINE static shortest_x16 digits(__m512i mag) noexcept {
        return shortest_digits_x16(mag);
    }
    TENSORB64_ALWAYS_INLINE static char* write(const shortest_x16& d, __m512i raw,
                                               const std::uint32_t* bits, std::size_t m,
                                               char* out) noexcept {
        // orjson's fixed texts from 1e-6 to 1e-4 take up to 18 bytes, past a 16-byte slot.
        if (Orjson && (_mm512_cmplt_epi32_mask(d.e10, c32<(-4)>()) &
                       _mm512_cmpge_epi32_mask(d.e10, c32<(-6)>())) != 0)
            return other(bits, m, out);
        return write_texts_x16<8, Orjson>(d.tails, d.lead, d.e10, d.n, _mm512_srli_epi32(raw, 31),
                                          m, out);
    }
    static char* other(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        out = write_shortest_group8<Orjson>(bits, m < 8 ? m : 8, out);
        return m > 8 ? write_shortest_group8<Orjson>(bits + 8, m - 8, out) : out;
    }
};

}  // namespace
}  // namespace tensorb64
