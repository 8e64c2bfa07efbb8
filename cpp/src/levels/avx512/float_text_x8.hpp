// The AVX-512 level's eight-lane Schubfach (float_text.hpp's, in 64-bit lanes): the digits of any
// float32 or double, eight at a time, with the branch-free layout of eight texts in fixed notation
// below 1 and float_text.hpp's layout value by value otherwise. Float64 rows take it, and the
// float32 groups the sixteen-lane writers do not. Included by float_text.cpp.
#pragma once

#include "levels/avx512/float_text_lanes.hpp"

namespace tensorb64 {
namespace {

// Eight values' decimal digits (as text blocks) and exponents, from the lanes' Schubfach results.
struct digits_x8 {
    alignas(64) std::uint64_t lead[8];   // the first digit
    alignas(64) std::uint64_t tail[8];   // digits 2..9 as bytes 0..9 (digit_bytes8)
    alignas(64) std::uint64_t tail2[8];  // digits 10..17 (repr only)
    alignas(64) std::int64_t e10[8];
};

// The paper's choice (float_text.hpp's choose_digits), in lanes of `Bits` bits: where the scalar
// code computes in uint32_t, every sum and shift it casts is cut to 32 bits here too.
template <int Bits>
inline __m512i choose_digits(__m512i s, __m512i vb, __m512i vbl, __m512i vbr,
                             __m512i out) noexcept {
    const __m512i cut = Bits == 32 ? set64(0xffffffffu) : set64(~std::uint64_t{0});
    const auto u = [&](__m512i v) { return _mm512_and_si512(v, cut); };
    const __m512i one = set64(1), ten = set64(10);
    const __m512i t = u(_mm512_add_epi64(s, one));
    __m512i s_tenth;  // s / 10
    if (Bits == 32) {
        s_tenth = _mm512_srli_epi64(_mm512_mul_epu32(s, set64(0xcccccccdu)), 35);
    } else {
        s_tenth = _mm512_srli_epi64(mul_high(s, set64(0xcccccccccccccccdull)), 3);
    }
    const __m512i tp10 = u(_mm512_add_epi64(_mm512_mullo_epi64(s_tenth, ten), ten));
    const __m512i vbl_out = u(_mm512_add_epi64(vbl, out));
    const __mmask8 up_in =
        _mm512_cmple_epu64_mask(vbl_out, u(_mm512_slli_epi64(_mm512_sub_epi64(tp10, ten), 2)));
    const __mmask8 wp_in =
        _mm512_cmple_epu64_mask(u(_mm512_add_epi64(u(_mm512_slli_epi64(tp10, 2)), out)), vbr);
    const __mmask8 u_in = _mm512_cmple_epu64_mask(vbl_out, u(_mm512_slli_epi64(s, 2)));
    const __mmask8 w_in =
        _mm512_cmple_epu64_mask(u(_mm512_add_epi64(u(_mm512_slli_epi64(t, 2)), out)), vbr);
    const __m512i middle = u(_mm512_slli_epi64(_mm512_add_epi64(s, t), 1));
    const __mmask8 nearer_s =
        _mm512_cmplt_epu64_mask(vb, middle) |
        (_mm512_cmpeq_epu64_mask(vb, middle) & _mm512_testn_epi64_mask(s, one));
    const __mmask8 one_in = u_in ^ w_in;
    const __mmask8 pick_s = (one_in & u_in) | (~one_in & nearer_s);
    const __m512i one_of_st = _mm512_mask_sub_epi64(t, pick_s, t, one);
    const __m512i ten_multiple = _mm512_mask_sub_epi64(tp10, up_in, tp10, ten);
    const __mmask8 use_ten_multiple = _mm512_cmpge_epu64_mask(s, ten) & (up_in ^ wp_in);
    return _mm512_mask_mov_epi64(one_of_st, use_ten_multiple, ten_multiple);
}

// Schubfach's steps before its multiplications (float_text.hpp's to_decimal32/to_decimal64), for
// eight magnitudes of a binary format with `FractionBits` stored significand bits and exponent
// q = biased exponent - `QBias` (value = c 2^q): integers below 2^(FractionBits+1) and their own
// digits, c's parity (out), the interval bounds cb, cbl, cbr (4 c and its neighbours' midpoints;
// `regular` where they are symmetric), k, the shift h (`HOffset`: 33 for the float32 path's 64-bit
// g, 2 for double's 128-bit g) and the row of kSchubfachG to gather (doubled: two words a row).
struct schubfach_setup {
    __m512i integer, out, cb, cbl, cbr, k, h, index;
    __mmask8 is_integer, regular;
};

template <int FractionBits, int QBias, int HOffset>
inline schubfach_setup schubfach_setup_x8(__m512i mag) noexcept {
    constexpr long long q_min = 1 - QBias;  // a subnormal's exponent
    const __m512i one = set64(1);
    const __m512i hidden = set64(std::uint64_t{1} << FractionBits);
    const __m512i biased = _mm512_srli_epi64(mag, FractionBits);
    const __m512i fraction = _mm512_and_si512(mag, set64((std::uint64_t{1} << FractionBits) - 1));
    const __mmask8 normal = _mm512_test_epi64_mask(biased, biased);
    const __m512i c = _mm512_mask_or_epi64(fraction, normal, fraction, hidden);
    const __m512i q = _mm512_mask_sub_epi64(_mm512_set1_epi64(q_min), normal, biased, set64(QBias));
    const __m512i minus_q = _mm512_sub_epi64(_mm512_setzero_si512(), q);
    schubfach_setup r;
    r.integer = _mm512_srlv_epi64(c, minus_q);
    r.is_integer = normal & _mm512_cmplt_epi64_mask(q, _mm512_setzero_si512()) &
                   _mm512_cmpgt_epi64_mask(q, _mm512_set1_epi64(-(FractionBits + 1))) &
                   _mm512_cmpeq_epi64_mask(_mm512_sllv_epi64(r.integer, minus_q), c);
    r.out = _mm512_and_si512(c, one);
    r.cb = _mm512_slli_epi64(c, 2);
    r.cbr = _mm512_add_epi64(r.cb, set64(2));
    r.regular =
        _mm512_cmpneq_epi64_mask(c, hidden) | _mm512_cmpeq_epi64_mask(q, _mm512_set1_epi64(q_min));
    r.cbl = _mm512_mask_sub_epi64(_mm512_sub_epi64(r.cb, one), r.regular, r.cb, set64(2));
    r.k = _mm512_mask_mov_epi64(mul_shift(q, 661971961083LL, 274743187321LL, 41), r.regular,
                                mul_shift(q, 661971961083LL, 0, 41));
    r.h = _mm512_add_epi64(
        _mm512_add_epi64(
            q, mul_shift(_mm512_sub_epi64(_mm512_setzero_si512(), r.k), 913124641741LL, 0, 38)),
        set64(HOffset));
    r.index = _mm512_slli_epi64(_mm512_sub_epi64(r.k, _mm512_set1_epi64(kSchubfachKMin)), 1);
    return r;
}

// to_decimal32 of eight nonzero finite float32 magnitudes (zero-extended to 64 bits; zero lanes
// give unspecified digits).
inline void to_decimal32_x8(__m512i mag, __m512i* digits, __m512i* exponent) noexcept {
    const __m512i one = set64(1);
    const schubfach_setup x = schubfach_setup_x8<23, 150, 33>(mag);
    const __m512i &integer = x.integer, &out = x.out, &cb = x.cb, &cbl = x.cbl, &cbr = x.cbr,
                  &k = x.k, &h = x.h, &index = x.index;
    const __mmask8 is_integer = x.is_integer;
    const __m512i g = _mm512_add_epi64(_mm512_i64gather_epi64(index, &kSchubfachG[0][0], 8), one);
    // h is 33..36 for every float32 (and cx < 2^27), so cx << h has its low 32 bits zero: the
    // high half of g (cx << h) is g_hi c + (g_lo c >> 32) with c = cx << (h - 32) < 2^31, two
    // vpmuludq instead of mul_high's four.
    const __m512i h32 = _mm512_sub_epi64(h, set64(32));
    const __m512i g_hi = _mm512_srli_epi64(g, 32);
    const auto round_to_odd = [&](__m512i cx) {
        const __m512i cp_hi = _mm512_sllv_epi64(cx, h32);
        const __m512i x1 = _mm512_add_epi64(_mm512_mul_epu32(g_hi, cp_hi),
                                            _mm512_srli_epi64(_mm512_mul_epu32(g, cp_hi), 32));
        const __m512i low32 = set64(0xffffffffu);
        return _mm512_or_si512(
            _mm512_srli_epi64(x1, 31),
            _mm512_srli_epi64(_mm512_add_epi64(_mm512_and_si512(x1, low32), low32), 32));
    };
    const __m512i vb = round_to_odd(cb), vbl = round_to_odd(cbl), vbr = round_to_odd(cbr);
    __m512i d = choose_digits<32>(_mm512_srli_epi64(vb, 2), vb, vbl, vbr, out);
    __m512i e = _mm512_mask_mov_epi64(k, is_integer, _mm512_setzero_si512());
    d = _mm512_mask_mov_epi64(d, is_integer, integer);
    // write_shortest_f32's one exception (see there).
    const __mmask8 exception = _mm512_cmpeq_epi64_mask(mag, set64(0x15ae43fdu));
    d = _mm512_mask_mov_epi64(d, exception, set64(70385307u));
    e = _mm512_mask_mov_epi64(e, exception, _mm512_set1_epi64(-33));
    *digits = d;
    *exponent = e;
}

// to_decimal64 of eight nonzero finite double magnitudes (zero lanes give unspecified digits);
// Widened: every lane is a float32 widened (widen_magnitudes), which allows cheaper products.
template <bool Widened>
inline void to_decimal64_x8(__m512i mag, __m512i* digits, __m512i* exponent) noexcept {
    const schubfach_setup x = schubfach_setup_x8<52, 1075, 2>(mag);
    const __m512i &integer = x.integer, &out = x.out, &cb = x.cb, &cbl = x.cbl, &cbr = x.cbr,
                  &k = x.k, &h = x.h, &index = x.index;
    const __mmask8 is_integer = x.is_integer, regular = x.regular;
    const __m512i g1 = _mm512_i64gather_epi64(index, &kSchubfachG[0][0], 8);
    const __m512i g0 = _mm512_i64gather_epi64(index, &kSchubfachG[0][1], 8);
    const __m512i mask63 = set64((std::uint64_t{1} << 63) - 1);
    const auto round_to_odd = [&](__m512i cx) {  // float_text.hpp's round_to_odd_64
        const __m512i cp = _mm512_sllv_epi64(cx, h);
        const __m512i x1 = mul_high(g0, cp);
        const __m512i y0 = mul_low(g1, cp);
        const __m512i y1 = mul_high(g1, cp);
        const __m512i z = _mm512_add_epi64(_mm512_srli_epi64(y0, 1), x1);
        const __m512i vbp = _mm512_add_epi64(y1, _mm512_srli_epi64(z, 63));
        return _mm512_or_si512(
            vbp, _mm512_srli_epi64(_mm512_add_epi64(_mm512_and_si512(z, mask63), mask63), 63));
    };
    __m512i vb, vbl, vbr;
    if (!Widened) {
        vb = round_to_odd(cb);
        vbl = round_to_odd(cbl);
        vbr = round_to_odd(cbr);
    } else {
        // A float32 widened: c is its 24-bit significand << 29, so cb << h has its low 32 bits
        // zero and g (cb << h) costs two vpmuludq a half; cbl << h and cbr << h are cb << h less or
        // plus 1 << j (j = h or h + 1), so their products are g (cb << h) -/+ g << j, in 128-bit
        // arithmetic. The same exact products as mul_high / mul_low give, for fewer instructions.
        const __m512i cp_high = _mm512_srli_epi64(_mm512_sllv_epi64(cb, h), 32);  // < 2^28
        struct u128 {
            __m512i high, low;
        };
        const auto times_cb = [&](__m512i g) {  // g (cb << h)
            const __m512i low_part = _mm512_mul_epu32(g, cp_high);
            const __m512i high_part = _mm512_mul_epu32(_mm512_srli_epi64(g, 32), cp_high);
            return u128{_mm512_add_epi64(high_part, _mm512_srli_epi64(low_part, 32)),
                        _mm512_slli_epi64(low_part, 32)};
        };
        const auto shifted = [](__m512i g, __m512i j) {  // g << j, 1 <= j < 64
            return u128{_mm512_srlv_epi64(g, _mm512_sub_epi64(set64(64), j)),
                        _mm512_sllv_epi64(g, j)};
        };
        const auto plus = [](u128 a, u128 b) {
            const __m512i low = _mm512_add_epi64(a.low, b.low);
            const __m512i high = _mm512_add_epi64(a.high, b.high);
            return u128{
                _mm512_mask_add_epi64(high, _mm512_cmplt_epu64_mask(low, a.low), high, set64(1)),
                low};
        };
        const auto minus = [](u128 a, u128 b) {
            const __m512i high = _mm512_sub_epi64(a.high, b.high);
            return u128{
                _mm512_mask_sub_epi64(high, _mm512_cmplt_epu64_mask(a.low, b.low), high, set64(1)),
                _mm512_sub_epi64(a.low, b.low)};
        };
        const auto round_to_odd_of = [&](u128 p0, u128 p1) {  // p0 = g0 cp, p1 = g1 cp
            const __m512i z = _mm512_add_epi64(_mm512_srli_epi64(p1.low, 1), p0.high);
            const __m512i vbp = _mm512_add_epi64(p1.high, _mm512_srli_epi64(z, 63));
            return _mm512_or_si512(
                vbp, _mm512_srli_epi64(_mm512_add_epi64(_mm512_and_si512(z, mask63), mask63), 63));
        };
        const u128 p0 = times_cb(g0), p1 = times_cb(g1);
        const __m512i j_right = _mm512_add_epi64(h, set64(1));                  // cbr = cb + 2
        const __m512i j_left = _mm512_mask_add_epi64(h, regular, h, set64(1));  // cb - 2 or - 1
        vb = round_to_odd_of(p0, p1);
        vbr = round_to_odd_of(plus(p0, shifted(g0, j_right)), plus(p1, shifted(g1, j_right)));
        vbl = round_to_odd_of(minus(p0, shifted(g0, j_left)), minus(p1, shifted(g1, j_left)));
    }
    const __m512i d = choose_digits<64>(_mm512_srli_epi64(vb, 2), vb, vbl, vbr, out);
    *digits = _mm512_mask_mov_epi64(d, is_integer, integer);
    *exponent = _mm512_mask_mov_epi64(k, is_integer, _mm512_setzero_si512());
}

// digit_bytes8 for each lane's v < 10^8.
inline __m512i digit_bytes8_x8(__m512i v) noexcept {
    const __m512i high4 = _mm512_srli_epi64(_mm512_mul_epu32(v, set64(109951163u)), 40);  // v/10^4
    const __m512i low4 = _mm512_sub_epi64(v, _mm512_mul_epu32(high4, set64(10000u)));
    const __m512i x = _mm512_or_si512(high4, _mm512_slli_epi64(low4, 32));
    const __m512i x_hundreds =
        _mm512_srli_epi32(_mm512_mullo_epi32(x, _mm512_set1_epi32(10486)), 20);
    const __m512i y = _mm512_or_si512(
        x_hundreds,
        _mm512_slli_epi32(
            _mm512_sub_epi32(
                x, _mm512_mullo_epi32(x_hundreds, hidden_constant(_mm512_set1_epi32(100)))),
            16));
    const __m512i y_tens = _mm512_srli_epi16(_mm512_mullo_epi16(y, _mm512_set1_epi16(103)), 10);
    return _mm512_or_si512(
        y_tens,
        _mm512_slli_epi16(
            _mm512_sub_epi16(y, _mm512_mullo_epi16(y_tens, hidden_constant(_mm512_set1_epi16(10)))),
            8));
}

// floor(log2 v) of each lane 0 < v < 2^64: the exponent of v converted to a double rounding toward
// zero (the embedded rounding ignores the caller's rounding mode; an integer source is not touched
// by DAZ, and the result is never subnormal).
inline __m512i floor_log2_x8(__m512i v) noexcept {
    const __m512i as_double =
        _mm512_castpd_si512(_mm512_cvt_roundepu64_pd(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC));
    return _mm512_sub_epi64(_mm512_srli_epi64(as_double, 52), set64(1023));
}

inline __m512i pow10_x8(__m512i e) noexcept;

// decimal_length of lanes 0 < v < 10^17, as float_text.hpp computes it: from the bit length.
inline __m512i decimal_length_x8(__m512i v) noexcept {
    const __m512i bits = _mm512_add_epi64(floor_log2_x8(v), set64(1));
    const __m512i approx = _mm512_srli_epi64(_mm512_mul_epu32(bits, set64(1233)), 12);
    return _mm512_mask_add_epi64(approx, _mm512_cmpge_epu64_mask(v, pow10_x8(approx)), approx,
                                 set64(1));
}

// 10^e for lanes 0 <= e <= 17.
inline __m512i pow10_x8(__m512i e) noexcept {
    const __m512i low = _mm512_loadu_si512(kPow10);
    const __m512i high = _mm512_loadu_si512(kPow10 + 8);
    const __m512i p = _mm512_permutex2var_epi64(low, e, high);  // e mod 16
    const __m512i top = _mm512_mask_mov_epi64(
        set64(kPow10[16]), _mm512_cmpeq_epi64_mask(e, set64(17)), set64(kPow10[17]));
    return _mm512_mask_mov_epi64(p, _mm512_cmpge_epu64_mask(e, set64(16)), top);
}

// Shortest float32 digits of eight values into `d`'s lanes (first digit, digits 2..9, e10).
struct shortest_x8 {
    __m512i lead;  // the first digit
    __m512i tail;  // digits 2..9 as bytes 0..9 (digit_bytes8)
    __m512i e10;
};

inline shortest_x8 shortest_digits_x8(__m512i mag) noexcept {
    __m512i digits, k;
    to_decimal32_x8(mag, &digits, &k);
    // As in repr_digits_x8: a normal float32's digits have 7 to 9 digits (s is in [2^23,
    // 10 * 2^24)), so where all eight lie in [10^6, 10^9) the length is two compares
    // (shortest 6.7 -> 5.8 ns/value); integers, subnormals and zeros take the general way.
    __m512i digits9, e10;
    if ((_mm512_cmpge_epu64_mask(digits, set64(kPow10[6])) &
         _mm512_cmplt_epu64_mask(digits, set64(kPow10[9]))) == 0xff) {
        const __mmask8 ge7 = _mm512_cmpge_epu64_mask(digits, set64(kPow10[7]));
        const __mmask8 ge8 = _mm512_cmpge_epu64_mask(digits, set64(kPow10[8]));
        const __m512i scale =
            _mm512_mask_mov_epi64(_mm512_mask_mov_epi64(set64(100), ge7, set64(10)), ge8, set64(1));
        digits9 = _mm512_mul_epu32(digits, scale);
        const __m512i e6 = _mm512_add_epi64(k, set64(6));
        const __m512i e7 = _mm512_mask_add_epi64(e6, ge7, e6, set64(1));
        e10 = _mm512_mask_add_epi64(e7, ge8, e7, set64(1));
    } else {
        const __m512i length = decimal_length_x8(digits);
        digits9 = _mm512_mul_epu32(digits, pow10_x8(_mm512_sub_epi64(set64(9), length)));
        e10 = _mm512_add_epi64(k, _mm512_sub_epi64(length, set64(1)));
    }
    const __m512i lead = _mm512_srli_epi64(_mm512_mul_epu32(digits9, set64(1441151881u)), 57);
    const __m512i rest = _mm512_sub_epi64(digits9, _mm512_mul_epu32(lead, set64(100000000u)));
    return {lead, digit_bytes8_x8(rest), e10};
}

// significant_in8 of each lane: the highest nonzero byte's position + 1 (0 for none).
inline __m512i significant_in8_x8(__m512i v) noexcept {
    return _mm512_maskz_add_epi64(_mm512_test_epi64_mask(v, v),
                                  _mm512_srli_epi64(floor_log2_x8(v), 3), set64(1));
}

// Eight values that are all in fixed notation below 1 (-4 <= e10 <= -1, nonzero), written with
// no branch: each value's text "-0.000ddd," (sign and zeros as it needs) built in a 16-byte slot
// by a vpshufb from its digits and the punctuation, the slots stored one after another, each at
// the end of the one before (the longest text is 16 bytes: "-0.000123456789,").
inline char* write_fixed_fractions_x8(const shortest_x8& d, __m512i sign, char* out) noexcept {
    const __m512i n = _mm512_add_epi64(significant_in8_x8(d.tail), set64(1));
    const __m512i zeros = _mm512_sub_epi64(_mm512_set1_epi64(-1), d.e10);  // after "0."
    const __m512i digits_at = _mm512_add_epi64(_mm512_add_epi64(sign, zeros), set64(2));
    const __m512i comma_at = _mm512_add_epi64(digits_at, n);
    // Each slot's source bytes: digits 1..8, digit 9, "-0.000", ','. Before the digits a slot
    // holds "-0." and the zeros, i.e. "-0.000"'s bytes from 1 - sign: at byte p, source byte
    // p + 10 - sign; from the digits on, p - digits_at, which is the smaller of the two there
    // (and wraps around to above 249 before); from comma_at on, the ','.
    const __m512i first8 =
        _mm512_or_si512(_mm512_or_si512(d.lead, _mm512_slli_epi64(d.tail, 8)), set64(kAsciiZeros));
    const __m512i rest =
        _mm512_or_si512(_mm512_srli_epi64(d.tail, 56), set64(0x2c3030302e302d30ull));
    const __m512i params = _mm512_or_si512(
        _mm512_or_si512(digits_at, _mm512_slli_epi64(_mm512_sub_epi64(set64(10), sign), 8)),
        _mm512_slli_epi64(comma_at, 16));
    const __m512i position =
        _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    const auto slots = [&](__m512i pick) {  // four values' slots, value i in 128-bit lane i
        const __m512i source = _mm512_permutex2var_epi64(first8, pick, rest);
        const __m512i p = _mm512_permutexvar_epi64(pick, params);  // pick mod 8: value i
        const __m512i at = _mm512_shuffle_epi8(p, _mm512_setzero_si512());
        const __m512i prefix = _mm512_shuffle_epi8(p, _mm512_set1_epi8(1));
        const __m512i end = _mm512_shuffle_epi8(p, _mm512_set1_epi8(2));
        const __m512i index =
            _mm512_min_epu8(_mm512_sub_epi8(position, at), _mm512_add_epi8(position, prefix));
        return _mm512_shuffle_epi8(
            source, _mm512_mask_mov_epi8(index, _mm512_cmpge_epu8_mask(position, end),
                                         _mm512_set1_epi8(15)));
    };
    // The permutes' indices: value i's first8 (i) and rest (8 + i) in qword pair i.
    const __m512i low = slots(_mm512_setr_epi64(0, 8, 1, 9, 2, 10, 3, 11));
    const __m512i high = slots(_mm512_setr_epi64(4, 12, 5, 13, 6, 14, 7, 15));
    // The eight lengths (at most 24) as the bytes of one integer: no trip through memory.
    std::uint64_t lengths = static_cast<std::uint64_t>(
        _mm_cvtsi128_si64(_mm512_cvtepi64_epi8(_mm512_add_epi64(comma_at, set64(1)))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(low));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(low, 1));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(low, 2));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(low, 3));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(high));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(high, 1));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(high, 2));
    out += lengths & 0xff;
    lengths >>= 8;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_extracti32x4_epi32(high, 3));
    return out + lengths;
}

// repr digits of eight double magnitudes into `d`'s lanes (first digit, digits 2..9 and 10..17,
// e10), as write_repr computes them.
struct repr_x8 {
    __m512i lead;   // the first digit
    __m512i upper;  // digits 2..9 as bytes 0..9 (digit_bytes8)
    __m512i lower;  // digits 10..17
    __m512i e10;
};

template <bool Widened>
inline repr_x8 repr_digits_x8(__m512i mag) noexcept {
    __m512i digits, k;
    to_decimal64_x8<Widened>(mag, &digits, &k);
    // Schubfach's digits of a normal double that is not a small integer have 16 or 17 digits (s is
    // in [2^52, 10 * 2^53), the choice within 10 of it), so where all eight lie in [10^15, 10^17)
    // the length is one compare: no bit length, no table (repr 8.6 -> 7.6 ns/value). Integers,
    // subnormals and zeros take the general way.
    __m512i digits17, e10;
    if ((_mm512_cmpge_epu64_mask(digits, set64(kPow10[15])) &
         _mm512_cmplt_epu64_mask(digits, set64(kPow10[17]))) == 0xff) {
        const __mmask8 is17 = _mm512_cmpge_epu64_mask(digits, set64(kPow10[16]));
        digits17 = _mm512_mask_mov_epi64(mul_low(digits, hidden_constant(set64(10))), is17, digits);
        e10 = _mm512_mask_add_epi64(_mm512_add_epi64(k, set64(15)), is17, k, set64(16));
    } else {
        const __m512i length = decimal_length_x8(digits);
        digits17 = mul_low(digits, pow10_x8(_mm512_sub_epi64(set64(17), length)));
        e10 = _mm512_add_epi64(k, _mm512_sub_epi64(length, set64(1)));
    }
    // digits17 / 10^8 (exact for digits17 < 1.4e21: 2^90 / 10^8 rounded up, then >> 90).
    const __m512i high9 = _mm512_srli_epi64(mul_high(digits17, set64(12379400392853802749ull)), 26);
    const __m512i lower = _mm512_sub_epi64(digits17, _mm512_mul_epu32(high9, set64(100000000u)));
    const __m512i lead = _mm512_srli_epi64(_mm512_mul_epu32(high9, set64(1441151881u)), 57);
    const __m512i upper = _mm512_sub_epi64(high9, _mm512_mul_epu32(lead, set64(100000000u)));
    return {lead, digit_bytes8_x8(upper), digit_bytes8_x8(lower), e10};
}

// Eight repr texts that are all in fixed notation below 1 (up to 17 digits,
// "-0.00012345678901234567,", 24 bytes), with no branch: each value's sign and "0." (the '-'
// stored, then "0.000000" at out + sign) and its digits with the ',' after the n-th already in
// place (a 32-byte slot, two values to a vector, picked by one permute) stored at out + sign + 2 +
// zeros, over the prefix's surplus '0's; each text at the end of the one before, over the last
// slot's bytes past its ','. The digits need no per-byte shuffle (a vpermb layout, the prefix
// and the digits placed by byte indices: repr 7.5 -> 7.2 ns/value). The last slot ends at most
// 7 * 24 + 6 + 32 bytes from the group's start, within its 8 * (kReprMaxBytes + 1).
inline char* write_repr_fixed_fractions_x8(const repr_x8& d, __m512i sign, char* out) noexcept {
    const __m512i n = _mm512_mask_add_epi64(_mm512_add_epi64(significant_in8_x8(d.upper), set64(1)),
                                            _mm512_test_epi64_mask(d.lower, d.lower),
                                            significant_in8_x8(d.lower), set64(9));
    const __m512i zeros = _mm512_sub_epi64(_mm512_set1_epi64(-1), d.e10);
    const __m512i digits_at = _mm512_add_epi64(_mm512_add_epi64(sign, zeros), set64(2));
    const __m512i comma_at = _mm512_add_epi64(digits_at, n);
    const __m512i tail0 = _mm512_or_si512(d.upper, set64(kAsciiZeros));
    const __m512i tail1 = _mm512_or_si512(d.lower, set64(kAsciiZeros));
    // The ',' over the '0' at digit index n (digits past the n-th are zeros; from17 has a '0' at
    // index 17): ',' ^ '0' shifted to bit 8n of the three words (a variable shift of 64 or more,
    // or of a negative count, gives zero).
    const __m512i comma_bit = _mm512_slli_epi64(n, 3);
    const __m512i comma = set64(',' ^ '0');
    const __m512i first8 = _mm512_xor_si512(
        _mm512_or_si512(_mm512_or_si512(d.lead, set64('0')), _mm512_slli_epi64(tail0, 8)),
        _mm512_sllv_epi64(comma, comma_bit));
    const __m512i from9 =
        _mm512_xor_si512(_mm512_or_si512(_mm512_srli_epi64(tail0, 56), _mm512_slli_epi64(tail1, 8)),
                         _mm512_sllv_epi64(comma, _mm512_sub_epi64(comma_bit, set64(64))));
    const __m512i from17 =
        _mm512_xor_si512(_mm512_or_si512(_mm512_srli_epi64(tail1, 56), set64(kAsciiZeros << 8)),
                         _mm512_sllv_epi64(comma, _mm512_sub_epi64(comma_bit, set64(128))));
    std::uint64_t lengths = static_cast<std::uint64_t>(
        _mm_cvtsi128_si64(_mm512_cvtepi64_epi8(_mm512_add_epi64(comma_at, set64(1)))));
    std::uint64_t signs = static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_cvtepi64_epi8(sign)));
    std::uint64_t at =
        static_cast<std::uint64_t>(_mm_cvtsi128_si64(_mm512_cvtepi64_epi8(digits_at)));
    const auto store_text = [&](__m256i text) {  // the next value's
        *out = '-';
        std::memcpy(out + (signs & 0xff), "0.000000", 8);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (at & 0xff)), text);
        out += lengths & 0xff;
        lengths >>= 8;
        signs >>= 8;
        at >>= 8;
    };
    for (int v = 0; v < 8; v += 2) {  // values v and v + 1
        const __m512i pick = _mm512_setr_epi64(v, 8 + v, v, v, v + 1, 9 + v, v + 1, v + 1);
        const __m512i text = _mm512_mask_permutexvar_epi64(
            _mm512_permutex2var_epi64(first8, pick, from9), 0x44, pick, from17);
        store_text(_mm512_castsi512_si256(text));
        store_text(_mm512_extracti64x4_epi64(text, 1));
    }
    return out;
}

template <bool Orjson>
inline char* finish_repr(const digits_x8& d, std::size_t j, bool negative, bool zero,
                         char* out) noexcept;

// The scalar layout of a group of eight (or fewer, at the end) with any value in another notation
// or zero, Python's or with Orjson orjson's (write_orjson_f64). Kept out of line: inlined, its size
// keeps write_repr_x8 out of the block loop, whose constants are then rebuilt for every group.
template <bool Orjson>
TENSORB64_NOINLINE char* write_repr_group(const repr_x8& x, std::size_t m,
                                          const std::uint64_t* negative, const std::uint64_t* zero,
                                          char* out) noexcept {
    digits_x8 d;
    _mm512_store_si512(d.lead, x.lead);
    _mm512_store_si512(d.tail, x.upper);
    _mm512_store_si512(d.tail2, x.lower);
    _mm512_store_si512(d.e10, x.e10);
    for (std::size_t j = 0; j < m; ++j) {
        out = finish_repr<Orjson>(d, j, negative[j] != 0, zero[j] != 0, out);
        *out++ = ',';
    }
    return out;
}

// One value's repr text from its lane of `d` (write_repr's last steps, or write_orjson_f64's), its
// sign and whether it is zero from the caller.
template <bool Orjson>
inline char* finish_repr(const digits_x8& d, std::size_t j, bool negative, bool zero,
                         char* out) noexcept {
    *out = '-';
    out += negative;
    if (zero) {
        std::memcpy(out, "0.0", 3);
        return out + 3;
    }
    const std::uint64_t upper_digits = d.tail[j], lower_digits = d.tail2[j];
    int n = 9 + significant_in8(lower_digits);
    if (n == 9) n = 1 + significant_in8(upper_digits);
    digit_words<2> w;
    w.lead = static_cast<char>('0' + d.lead[j]);
    w.tail[0] = upper_digits | kAsciiZeros;
    w.tail[1] = lower_digits | kAsciiZeros;
    w.first8 = static_cast<unsigned char>(w.lead) | (w.tail[0] << 8);
    w.from9[0] = (w.tail[0] >> 56) | (w.tail[1] << 8);
    w.from9[1] = (w.tail[1] >> 56) | (kAsciiZeros << 8);
    return Orjson ? layout<2, -5, 15, 1>(out, w, n, static_cast<int>(d.e10[j]))
                  : layout<2>(out, w, n, static_cast<int>(d.e10[j]));
}

// The doubles equal to eight float32 magnitudes (f32_bits_to_f64_bits). A subnormal's significand
// goes through vcvtuqq2pd, an exact integer conversion that neither the rounding mode nor FTZ/DAZ
// affects (its input is an integer, its result a normal double), then is scaled by 2^-149 in the
// exponent field.
inline __m512i widen_magnitudes(__m512i mag32) noexcept {
    const __m512i normal =
        _mm512_add_epi64(_mm512_slli_epi64(mag32, 29), set64(std::uint64_t{896} << 52));
    const __mmask8 subnormal =
        _mm512_cmplt_epu64_mask(mag32, set64(0x00800000u)) & _mm512_test_epi64_mask(mag32, mag32);
    const __m512i scaled = _mm512_sub_epi64(_mm512_castpd_si512(_mm512_cvtepu64_pd(mag32)),
                                            set64(std::uint64_t{149} << 52));
    const __m512i zero_or_normal = _mm512_mask_mov_epi64(
        normal, _mm512_testn_epi64_mask(mag32, mag32), _mm512_setzero_si512());
    return _mm512_mask_mov_epi64(zero_or_normal, subnormal, scaled);
}

// A group of eight (m of them real) double magnitudes and their signs (0 or 1 in each lane), in
// Python's layout or with Orjson orjson's (the same text in fixed notation below 1e-4).
template <bool Widened, bool Orjson = false>
TENSORB64_ALWAYS_INLINE char* write_repr_x8(__m512i mag, __m512i sign, std::size_t m,
                                            char* out) noexcept {
    const repr_x8 x = repr_digits_x8<Widened>(mag);
    const __mmask8 fixed_fraction = _mm512_cmpge_epi64_mask(x.e10, _mm512_set1_epi64(-4)) &
                                    _mm512_cmple_epi64_mask(x.e10, _mm512_set1_epi64(-1)) &
                                    _mm512_test_epi64_mask(mag, mag);
    if (fixed_fraction == 0xff) return write_repr_fixed_fractions_x8(x, sign, out);
    alignas(64) std::uint64_t negative[8], zero[8];
    _mm512_store_si512(negative, sign);
    _mm512_store_si512(zero, _mm512_maskz_set1_epi64(_mm512_testn_epi64_mask(mag, mag), 1));
    return write_repr_group<Orjson>(x, m, negative, zero, out);
}

// write_repr_x8 of float32 magnitudes widened, out of line (the sixteen-lane loop's other groups).
TENSORB64_NOINLINE char* write_repr_group8(__m512i mag, __m512i sign, std::size_t m,
                                           char* out) noexcept {
    return write_repr_x8<true>(mag, sign, m, out);
}

template <bool Orjson>
inline char* write_repr_f64_block(const std::uint64_t* bits, std::size_t n, char* out) noexcept {
    const __m512i magnitude = set64(~(std::uint64_t{1} << 63));
    for (std::size_t i = 0; i < n; i += 8) {
        const std::size_t m = n - i < 8 ? n - i : 8;
        const __m512i raw =
            _mm512_maskz_loadu_epi64(static_cast<__mmask8>((1u << m) - 1), bits + i);
        out = write_repr_x8<false, Orjson>(_mm512_and_si512(raw, magnitude),
                                           _mm512_srli_epi64(raw, 63), m, out);
    }
    return out;
}

// Shortest float32 text of a group of eight (m of them real) in Python's layout, or with Orjson
// in orjson's (write_orjson_f32), any values: the eight-lane digits, then the fixed-notation
// fast path for 1e-4 <= |x| < 1 (the same text in both layouts) or each value's layout alone.
// Out of line: the sixteen-lane loop stays small.
template <bool Orjson>
TENSORB64_NOINLINE char* write_shortest_group8(const std::uint32_t* bits, std::size_t m,
                                               char* out) noexcept {
    const __m256i raw = _mm256_maskz_loadu_epi32(static_cast<__mmask8>((1u << m) - 1), bits);
    const __m512i wide = _mm512_cvtepu32_epi64(raw);
    const __m512i mag = _mm512_and_si512(wide, c64<(0x7fffffffu)>());
    const shortest_x8 x = shortest_digits_x8(mag);
    const __mmask8 fixed_fraction = _mm512_cmpge_epi64_mask(x.e10, _mm512_set1_epi64(-4)) &
                                    _mm512_cmple_epi64_mask(x.e10, _mm512_set1_epi64(-1)) &
                                    _mm512_test_epi64_mask(mag, mag);
    if (fixed_fraction == 0xff)
        return write_fixed_fractions_x8(x, _mm512_srli_epi64(wide, 31), out);
    // The digits carry write_shortest_f32's one exception (to_decimal32_x8), which orjson's
    // text has not: a group holding it is written by the scalar writer.
    if (Orjson && _mm512_cmpeq_epi64_mask(mag, c64<(0x15ae43fdu)>()) != 0) {
        std::size_t none = 0;
        return write_values_orjson_f32(bits, m, out, &none);
    }
    digits_x8 d;
    _mm512_store_si512(d.lead, x.lead);
    _mm512_store_si512(d.tail, x.tail);
    _mm512_store_si512(d.e10, x.e10);
    for (std::size_t j = 0; j < m; ++j) {
        const std::uint32_t b = bits[j];
        *out = '-';
        out += b >> 31;
        if ((b & 0x7fffffffu) == 0) {
            std::memcpy(out, "0.0", 3);
            out += 3;
        } else {
            const std::uint64_t rest_digits = d.tail[j];
            digit_words<1> w;
            w.lead = static_cast<char>('0' + d.lead[j]);
            w.tail[0] = rest_digits | kAsciiZeros;
            w.first8 = static_cast<unsigned char>(w.lead) | (w.tail[0] << 8);
            w.from9[0] = (w.tail[0] >> 56) | (kAsciiZeros << 8);
            const int e10 = static_cast<int>(d.e10[j]);
            const int length = 1 + significant_in8(rest_digits);
            out =
                Orjson ? layout<1, -6, 12, 1>(out, w, length, e10) : layout<1>(out, w, length, e10);
        }
        *out++ = ',';
    }
    return out;
}

}  // namespace
}  // namespace tensorb64
