// The AVX-512 float-text block writers (the avx512 implementation's, dispatch/implementation.hpp),
// byte-identical to the scalar writer: float_text_tests ("every level equals scalar"), core_tests
// ("float rows, every level"), float_text_exhaustive --level avx512 (all 2^32, three formats).
//
// float32 rows (shortest, repr, orjson) go sixteen values at a time, two groups of sixteen
// together: a group of zeros and values below 1 (every group of an embedding row) takes a
// sixteen-lane path, Schubfach (R. Giulietti, "The Schubfach way to render doubles", 2020) in
// 32-bit lanes with only its products in 64-bit ones (repr: exact products by powers of five, see
// there), the digits as bytes, and each text picked out of a fixed template by a byte mask and
// packed by vpcompressb (AVX512_VBMI2); any other group goes through the eight-lane path below,
// float_text.hpp's Schubfach in 64-bit lanes (its layout branch-free for fixed notation below 1,
// float_text.hpp's value by value otherwise), which float64 rows take too.
// A block with a NaN or an infinity goes to the scalar writer, which names the first one.
//
// The 64x64 -> 128-bit products are built from vpmuludq's 32x32 -> 64 (AVX-512F); IFMA's 52-bit
// multiplies would need a feature bit (AVX512_IFMA52) the avx512 level does not require. The
// integer-to-float conversions used to find bit lengths round toward zero by their encoding, so
// neither the caller's rounding mode nor FTZ/DAZ changes a digit (core_tests checks under both).
//
// Compiled where the build gives levels/avx512/ its flags (x86-64: cpp/CMakeLists.txt); to nothing
// elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include "float_text/float_text.hpp"
#include "levels/avx512/avx512.hpp"

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

#if defined(__GNUC__) || defined(__clang__)
#define TENSORB64_ALWAYS_INLINE inline __attribute__((always_inline))
#define TENSORB64_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define TENSORB64_ALWAYS_INLINE __forceinline
#define TENSORB64_NOINLINE __declspec(noinline)
#else
#define TENSORB64_ALWAYS_INLINE inline
#define TENSORB64_NOINLINE
#endif

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

inline char* finish_repr(const digits_x8& d, std::size_t j, bool negative, bool zero,
                         char* out) noexcept;

// The scalar layout of a group of eight (or fewer, at the end) with any value in another notation
// or zero. Kept out of line: inlined, its size keeps write_repr_x8 out of the block loop, whose
// constants are then rebuilt for every group.
TENSORB64_NOINLINE char* write_repr_group(const repr_x8& x, std::size_t m,
                                          const std::uint64_t* negative, const std::uint64_t* zero,
                                          char* out) noexcept {
    digits_x8 d;
    _mm512_store_si512(d.lead, x.lead);
    _mm512_store_si512(d.tail, x.upper);
    _mm512_store_si512(d.tail2, x.lower);
    _mm512_store_si512(d.e10, x.e10);
    for (std::size_t j = 0; j < m; ++j) {
        out = finish_repr(d, j, negative[j] != 0, zero[j] != 0, out);
        *out++ = ',';
    }
    return out;
}

// One value's repr text from its lane of `d` (write_repr's last steps), its sign and whether it is
// zero from the caller.
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
    return layout<2>(out, w, n, static_cast<int>(d.e10[j]));
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

// A group of eight (m of them real) double magnitudes and their signs (0 or 1 in each lane).
template <bool Widened>
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
    return write_repr_group(x, m, negative, zero, out);
}

// write_repr_x8 of float32 magnitudes widened, out of line (the sixteen-lane loop's other groups).
TENSORB64_NOINLINE char* write_repr_group8(__m512i mag, __m512i sign, std::size_t m,
                                           char* out) noexcept {
    return write_repr_x8<true>(mag, sign, m, out);
}

inline char* write_repr_f64_block(const std::uint64_t* bits, std::size_t n, char* out) noexcept {
    const __m512i magnitude = set64(~(std::uint64_t{1} << 63));
    for (std::size_t i = 0; i < n; i += 8) {
        const std::size_t m = n - i < 8 ? n - i : 8;
        const __m512i raw =
            _mm512_maskz_loadu_epi64(static_cast<__mmask8>((1u << m) - 1), bits + i);
        out = write_repr_x8<false>(_mm512_and_si512(raw, magnitude), _mm512_srli_epi64(raw, 63), m,
                                   out);
    }
    return out;
}

// Whether any of `n` float64 values is a NaN or an infinity.
inline bool any_non_finite_f64(const std::uint64_t* bits, std::size_t n) noexcept {
    const __m512i exponent = set64(0x7ff0000000000000ull);
    __mmask8 found = 0;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i v = _mm512_and_si512(_mm512_loadu_si512(bits + i), exponent);
        found |= _mm512_cmpeq_epi64_mask(v, exponent);
    }
    if (i < n) {
        const __mmask8 tail = static_cast<__mmask8>((1u << (n - i)) - 1);
        const __m512i v = _mm512_and_si512(_mm512_maskz_loadu_epi64(tail, bits + i), exponent);
        found |= _mm512_mask_cmpeq_epi64_mask(tail, v, exponent);
    }
    return found != 0;
}

// Whether any of `n` float32 values is a NaN or an infinity.
inline bool any_non_finite_f32(const std::uint32_t* bits, std::size_t n) noexcept {
    const __m512i exponent = _mm512_set1_epi32(0x7f800000);
    __mmask16 found = 0;
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i v = _mm512_and_si512(_mm512_loadu_si512(bits + i), exponent);
        found |= _mm512_cmpeq_epi32_mask(v, exponent);
    }
    if (i < n) {
        const __mmask16 tail = static_cast<__mmask16>((1u << (n - i)) - 1);
        const __m512i v = _mm512_and_si512(_mm512_maskz_loadu_epi32(tail, bits + i), exponent);
        found |= _mm512_mask_cmpeq_epi32_mask(tail, v, exponent);
    }
    return found != 0;
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

// The templates every text below 1 is a subsequence of, a slot of 16 bytes (shortest: 8 digits
// after the first) or 32 (repr: 16), as byte indices into the two tables of a vpermt2b: the
// first the digits after the first of 64 / TailDigits values, the second kTemplateBytes with the
// first digits (bytes 0..15) and two exponent digits a value (32..63) put in.
//   fixed:      - 0 . 0 0 0 d1 d2 ... ,          ("-0.000ddd,", zeros and digits as needed)
//   scientific: - d1 . d2 ... e - x1 x2 ,         ("-d.ddde-xx,", the '.' only with n > 1)
namespace text_template {
constexpr int kLead = 64, kMinus = 80, kZero = 81, kPoint = 82, kComma = 83, kE = 84,
              kExponent = 96;
// The byte index of slot byte p for value v (0..15), fixed or scientific, W = TailDigits.
constexpr unsigned char fixed_byte(int w, int v, int p) {
    const int tail = w * (v % (64 / w));
    return static_cast<unsigned char>(p == 0      ? kMinus
                                      : p == 1    ? kZero
                                      : p == 2    ? kPoint
                                      : p < 6     ? kZero
                                      : p == 6    ? kLead + v
                                      : p < 7 + w ? tail + p - 7
                                                  : kComma);
}
constexpr unsigned char scientific_byte(int w, int v, int p) {
    const int tail = w * (v % (64 / w));
    return static_cast<unsigned char>(p == 0       ? kMinus
                                      : p == 1     ? kLead + v
                                      : p == 2     ? kPoint
                                      : p < 3 + w  ? tail + p - 3
                                      : p == 3 + w ? kE
                                      : p == 4 + w ? kMinus
                                      : p == 5 + w ? kExponent + 2 * v
                                      : p == 6 + w ? kExponent + 2 * v + 1
                                                   : kComma);
}
template <int TailDigits>
struct tables {
    static constexpr int kSlot = TailDigits == 8 ? 16 : 32;
    static constexpr int kVectors = 16 * kSlot / 64;  // output vectors for sixteen values
    alignas(64) unsigned char fixed[kVectors][64];
    alignas(64) unsigned char scientific[kVectors][64];
};
template <int TailDigits>
constexpr tables<TailDigits> make_tables() {
    tables<TailDigits> t{};
    constexpr int slot = tables<TailDigits>::kSlot;
    for (int v = 0; v < 16; ++v) {
        for (int p = 0; p < slot; ++p) {
            t.fixed[v * slot / 64][v * slot % 64 + p] = fixed_byte(TailDigits, v, p);
            t.scientific[v * slot / 64][v * slot % 64 + p] = scientific_byte(TailDigits, v, p);
        }
    }
    return t;
}
template <int TailDigits>
constexpr tables<TailDigits> kTables = make_tables<TailDigits>();
}  // namespace text_template
// The second table's fixed part: the punctuation at 16..20.
alignas(64) constexpr unsigned char kTemplateBytes[64] = {0, 0, 0, 0, 0, 0,   0,   0,   0,   0,  0,
                                                          0, 0, 0, 0, 0, '-', '0', '.', ',', 'e'};

// Sixteen texts of values below 1 (m of them real: the rest get no bytes), each followed by a
// ',', from their digits: `tails` the digits after the first as bytes 0..9 in string order,
// TailDigits a value (8 or 16), 64 / TailDigits values a vector; `lead` the first digit, `n` the
// significant digits, e10 the decimal exponent, `sign` 0 or 1 (32-bit lanes). Python's layout, or
// with Orjson orjson's. Writes at most 4 (16-byte slots) or 8 (32-byte) 64-byte stores, each at
// the end of the texts before it, or with m < 16 nothing past the texts.
template <int TailDigits, bool Orjson>
TENSORB64_ALWAYS_INLINE char* write_texts_x16(const __m512i* tails, __m512i lead, __m512i e10,
                                              __m512i n, __m512i sign, std::size_t m,
                                              char* out) noexcept {
    using table = text_template::tables<TailDigits>;
    constexpr int comma_bit = 7 + TailDigits;  // in both templates
    // Python: fixed notation from 1e-4 (e10 >= -4), exponents of two digits at least; orjson
    // fixed from 1e-6 (the caller keeps 1e-6 <= x < 1e-4 away: those texts need more than 16
    // bytes), exponents of as many digits as they have.
    const __mmask16 scientific = _mm512_cmplt_epi32_mask(e10, c32<(Orjson ? -6 : -4)>());
    const __m512i one = c32<(1)>();
    const __m512i exponent = _mm512_sub_epi32(_mm512_setzero_si512(), e10);  // -e10
    // Each value's byte mask over its slot (bit p: slot byte p is in the text). Fixed: '-', "0.",
    // the zeros after the point, the digits (from bit 6), ','.
    const __m512i zeros = _mm512_sub_epi32(exponent, one);
    const __m512i fixed_mask = _mm512_add_epi32(
        _mm512_add_epi32(_mm512_sllv_epi32(c32<(8)>(), zeros), _mm512_sllv_epi32(c32<(64)>(), n)),
        _mm512_add_epi32(sign, c32<((1u << comma_bit) + 6 - 72)>()));
    __m512i masks = fixed_mask;
    const __m128i leads = _mm512_cvtepi32_epi8(_mm512_add_epi32(lead, c32<('0')>()));
    __m512i table2 = _mm512_inserti32x4(_mm512_load_si512(kTemplateBytes), leads, 0);
    const unsigned scientific_bits = scientific;
    if (scientific_bits != 0) {  // rare in embeddings (|x| < 1e-4)
        // Scientific: '-', d1, the '.' and digits 2..n (bits 2..n+1, none for n = 1), "e-xx,".
        const __m512i dot_digits = _mm512_sub_epi32(_mm512_sllv_epi32(c32<(4)>(), n), c32<(4)>());
        const __m512i short_exponent =
            Orjson ? _mm512_maskz_mov_epi32(_mm512_cmplt_epi32_mask(exponent, c32<(10)>()),
                                            c32<(1u << (5 + TailDigits))>())
                   : _mm512_setzero_si512();
        __m512i scientific_mask =
            _mm512_sub_epi32(_mm512_add_epi32(_mm512_add_epi32(dot_digits, sign),
                                              c32<((0x1fu << (3 + TailDigits)) | 2)>()),
                             short_exponent);
        scientific_mask = _mm512_mask_sub_epi32(scientific_mask, _mm512_cmpeq_epi32_mask(n, one),
                                                scientific_mask, c32<(4)>());
        masks = _mm512_mask_mov_epi32(masks, scientific, scientific_mask);
        // The exponent's digits (x1 x2 = -e10 / 10, -e10 % 10) as two ASCII bytes.
        const __m512i tens = _mm512_srli_epi32(_mm512_mullo_epi32(exponent, c32<(205)>()), 11);
        const __m512i exponent_digits =
            _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(exponent, 8), c32<(0x3030)>()),
                             _mm512_mullo_epi32(tens, c32<(2559)>()));
        table2 = _mm512_inserti64x4(table2, _mm512_cvtepi32_epi16(exponent_digits), 1);
    }
    masks = _mm512_maskz_mov_epi32(static_cast<__mmask16>((1u << m) - 1), masks);
    alignas(64) std::uint64_t byte_masks[table::kVectors];
    if (table::kSlot == 16) {
        _mm256_store_si256(reinterpret_cast<__m256i*>(byte_masks), _mm512_cvtepi32_epi16(masks));
    } else {
        _mm512_store_si512(byte_masks, masks);
    }
    constexpr int per_vector = 64 / table::kSlot;  // values a vector
    __m512i digits[TailDigits / 4];
    for (int i = 0; i < TailDigits / 4; ++i)
        digits[i] = _mm512_or_si512(tails[i], c32<(0x30303030u)>());
    for (int j = 0; j < table::kVectors; ++j) {
        __m512i index = _mm512_load_si512(text_template::kTables<TailDigits>.fixed[j]);
        if (scientific_bits != 0) {
            // The scientific template for the slots (kSlot / 4 dwords each) whose value needs it.
            const unsigned value_bits =
                (scientific_bits >> (per_vector * j)) & ((1u << per_vector) - 1);
            const __mmask16 slots =
                static_cast<__mmask16>(table::kSlot == 16 ? _pdep_u32(value_bits, 0x1111u) * 0xfu
                                                          : _pdep_u32(value_bits, 0x0101u) * 0xffu);
            index = _mm512_mask_mov_epi32(
                index, slots, _mm512_load_si512(text_template::kTables<TailDigits>.scientific[j]));
        }
        const __m512i text = _mm512_maskz_compress_epi8(
            byte_masks[j],
            _mm512_permutex2var_epi8(digits[j * per_vector * TailDigits / 64], index, table2));
        const std::size_t length = static_cast<std::size_t>(_mm_popcnt_u64(byte_masks[j]));
        if (m == 16) {
            _mm512_storeu_si512(out, text);
        } else {
            _mm512_mask_storeu_epi8(
                out, _bzhi_u64(~std::uint64_t{0}, static_cast<unsigned>(length)), text);
        }
        out += length;
    }
    return out;
}

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

// The sixteen-lane writers, one struct each: `fast` whether a group of sixteen magnitudes takes
// the sixteen-lane path, `digits` their digits there, `write` the texts from them (m of the
// values real), `other` a group that does not take it (written eight values at a time).
//
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

// A group of sixteen (m of them real) by Writer, out of line: the pairs' loop stays small.
template <class Writer>
TENSORB64_NOINLINE char* write_group16(const std::uint32_t* bits, std::size_t m,
                                       char* out) noexcept {
    const __m512i raw = _mm512_maskz_loadu_epi32(static_cast<__mmask16>((1u << m) - 1), bits);
    const __m512i mag = _mm512_and_si512(raw, c32<(0x7fffffffu)>());
    return Writer::fast(mag) ? Writer::write(Writer::digits(mag), raw, bits, m, out)
                             : Writer::other(bits, m, out);
}

// `n` finite float32 values by Writer, sixteen at a time, and two groups of sixteen together
// where both take the sixteen-lane path: their digits are two independent chains, which the core
// overlaps when they are interleaved (measured: shortest 3.4 -> 2.9 ns/value, repr 5.0 -> 4.85).
template <class Writer>
inline char* write_block(const std::uint32_t* bits, std::size_t n, char* out) noexcept {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        const __m512i raw0 = _mm512_loadu_si512(bits + i);
        const __m512i raw1 = _mm512_loadu_si512(bits + i + 16);
        const __m512i mag0 = _mm512_and_si512(raw0, c32<(0x7fffffffu)>());
        const __m512i mag1 = _mm512_and_si512(raw1, c32<(0x7fffffffu)>());
        if (Writer::fast(mag0) && Writer::fast(mag1)) {
            const auto d0 = Writer::digits(mag0);
            const auto d1 = Writer::digits(mag1);
            out = Writer::write(d0, raw0, bits + i, 16, out);
            out = Writer::write(d1, raw1, bits + i + 16, 16, out);
            continue;
        }
        out = write_group16<Writer>(bits + i, 16, out);
        out = write_group16<Writer>(bits + i + 16, 16, out);
    }
    if (i < n) out = write_group16<Writer>(bits + i, n - i < 16 ? n - i : 16, out);
    if (i + 16 < n) out = write_group16<Writer>(bits + i + 16, n - i - 16, out);
    return out;
}

char* write_values_f32_avx512(const std::uint32_t* bits, std::size_t n, bool shortest, char* out,
                              std::size_t* bad) noexcept {
    // A row with a NaN or an infinity is refused: the scalar writer finds the first one.
    if (any_non_finite_f32(bits, n)) return write_values_f32(bits, n, shortest, out, bad);
    return shortest ? write_block<shortest_writer<false>>(bits, n, out)
                    : write_block<repr_writer>(bits, n, out);
}

char* write_values_orjson_f32_avx512(const std::uint32_t* bits, std::size_t n, char* out,
                                     std::size_t* bad) noexcept {
    if (any_non_finite_f32(bits, n)) return write_values_orjson_f32(bits, n, out, bad);
    return write_block<shortest_writer<true>>(bits, n, out);
}

char* write_values_f64_avx512(const std::uint64_t* bits, std::size_t n, char* out,
                              std::size_t* bad) noexcept {
    if (any_non_finite_f64(bits, n)) return write_values_f64(bits, n, out, bad);
    return write_repr_f64_block(bits, n, out);
}

}  // namespace

extern const float_text_writers float_text_writers_avx512{
    write_values_f32_avx512, write_values_f64_avx512, write_values_orjson_f32_avx512};

}  // namespace tensorb64

#endif
