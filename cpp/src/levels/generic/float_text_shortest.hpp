// The shortest digits of float32 values below 1, a group at a time in the level's 32-bit lanes
// (u32x: 16 on avx512, 8 on avx2 and neon), written once over the vector vocabulary
// (levels/vocabulary.hpp). Included inside each SIMD level's namespace by its float_text.cpp,
// after the level's vocabulary.hpp and float_text/float_text.hpp; no includes of its own.
//
// The decimal is found as Zmij (V. Zverovich, 2025, after Y. Guo's yy_double) finds it: one
// product of the significand by a 64-bit power of ten gives the value scaled to 7-9 digits, its
// integer part and fraction, and the half-ulp comes from the power itself; the shortest is then
// the multiple of ten below or above it if either lies within half an ulp, else the nearest
// integer. Where that cannot be decided in the lanes' fixed point (a bound or a tie within the
// arithmetic's error, a power of two), the group's digits are Schubfach's (float_text.hpp's
// to_decimal32: R. Giulietti, "The Schubfach way to render doubles", 2020), exactly as it computes
// them in uint32_t and int, only its three 64 x 32-bit products in 64-bit lanes. Both give the one
// shortest decimal nearest the value (float_text_exhaustive checks every float32). Then
// write_float_text's digit steps: the first digit, digits 2..9 as bytes, the decimal exponent and
// the count of significant digits. What every group of an embedding row is: zeros and normal
// magnitudes below 1 (others take the level's other path).

// floor_log10_pow2, floor_log10_three_quarters_pow2 and floor_log2_pow10 (float_text.hpp) with
// products that fit 32 bits, equal to them over the exponents of float32 and of its doubles
// (checked below): (e kLog10Pow2 - [kLog10FourThirds]) >> kLog10Shift, (e kLog2Pow10) >>
// kLog2Shift.
constexpr int kLog10Pow2 = 631305, kLog10FourThirds = 261663, kLog10Shift = 21;
constexpr int kLog2Pow10 = 1741647, kLog2Shift = 19;
constexpr bool exponent_formulas_agree() {
    for (int q = -179; q <= 104; ++q) {
        if (((q * kLog10Pow2) >> kLog10Shift) != float_text_detail::floor_log10_pow2(q) ||
            ((q * kLog10Pow2 - kLog10FourThirds) >> kLog10Shift) !=
                float_text_detail::floor_log10_three_quarters_pow2(q))
            return false;
    }
    for (int e = -46; e <= 46; ++e) {
        if (((e * kLog2Pow10) >> kLog2Shift) != float_text_detail::floor_log2_pow10(e))
            return false;
    }
    return true;
}
static_assert(exponent_formulas_agree(), "the 32-bit exponent formulas");

// The magnitudes the lanes take: zeros and those from 2^-52 (k from kShortestKMin) to below 1,
// k = -23 .. -8, the sixteen rows of kShortestG. (write_shortest_f32's one exception, 0x15ae43fd,
// lies below: its digits are not these.)
constexpr std::uint32_t kShortestLeast = 0x25800000u;  // 2^-52
constexpr std::uint32_t kFloatOne = 0x3f800000u;
constexpr int kShortestKMin = -23;

// For k = kShortestKMin .. -8, as 32-bit halves: to_decimal32's g = kSchubfachG[k][0] + 1 (10^-k's
// leading bits rounded up), and the power Zmij's product takes, 10^-k's 64 leading bits rounded
// down (the 126-bit kSchubfachG row less one, its top 64 bits).
struct shortest_power_table {
    alignas(64) std::uint32_t g_high[16];
    alignas(64) std::uint32_t g_low[16];
    alignas(64) std::uint32_t power_high[16];
    alignas(64) std::uint32_t power_low[16];
};
constexpr shortest_power_table make_shortest_power_table() {
    shortest_power_table t{};
    for (int i = 0; i < 16; ++i) {
        const std::uint64_t* row = kSchubfachG[kShortestKMin + i - kSchubfachKMin];
        const std::uint64_t g = row[0] + 1;
        t.g_high[i] = static_cast<std::uint32_t>(g >> 32);
        t.g_low[i] = static_cast<std::uint32_t>(g);
        // row = floor(10^-k 2^-r) + 1 = row[0] 2^63 + row[1]: less one, then >> 62
        const std::uint64_t power =
            row[1] != 0 ? 2 * row[0] + ((row[1] - 1) >> 62) : 2 * row[0] - 1;
        t.power_high[i] = static_cast<std::uint32_t>(power >> 32);
        t.power_low[i] = static_cast<std::uint32_t>(power);
    }
    return t;
}
constexpr shortest_power_table kShortestPowers = make_shortest_power_table();
static_assert(kShortestPowers.power_high[15] == 0xbebc2000u && kShortestPowers.power_low[15] == 0,
              "10^8's leading bits");

// Whether every lane of `magnitude` is zero or in the lanes' range.
inline bool shortest_fast(u32x magnitude) noexcept {
    const mask32 in_range =
        greater32(splat32(kFloatOne - kShortestLeast), magnitude - splat32(kShortestLeast));
    return all32(in_range | eq32(magnitude, splat32(0)));
}

// A group's decimal digits as the texts take them: the first digit, the next 4 Quads digits as
// Quads words of four bytes 0..9 in string order (the first in the lowest byte), the decimal
// exponent (the value is d1.d2d3... 10^e10) and the count of significant digits. Zero lanes:
// digits 0, e10 -1, n 1 ("0.0"). Shortest float32 digits have two quads, repr's four.
template <int Quads>
struct decimal_lanes {
    u32x lead, e10, n;
    u32x quads[Quads];
};
using shortest_lanes = decimal_lanes<2>;

// round_to_odd_32(g, x << h) of each lane, g given as halves, h32 = h - 32: x << h has its low 32
// bits zero (h >= 33, x << (h - 32) < 2^31), so the product's high 64 bits are g_high cp +
// (g_low cp >> 32) with cp = x << (h - 32).
inline u32x shortest_round_to_odd(u32x g_high, u32x g_low, u32x x, u32x h32) noexcept {
    const u32x cp = shift_left32_var(x, h32);
    u64x high0, high1, low0, low1;
    mul_wide32(g_high, cp, &high0, &high1);
    mul_wide32(g_low, cp, &low0, &low1);
    const u64x x1_0 = high0 + shift_right<32>(low0), x1_1 = high1 + shift_right<32>(low1);
    // x1 >> 31, its last bit set where x1's low 32 bits are not all zero.
    const u32x result = narrow32(shift_right<31>(x1_0), shift_right<31>(x1_1));
    return result | select32(eq32(narrow32(x1_0, x1_1), splat32(0)), splat32(0), splat32(1));
}

// 1 + the last nonzero digit's place among those after the first (the quads' bytes).
template <int Quads>
inline u32x significant_digits(const u32x* quads) noexcept {
    u32x n = byte_length32(quads[0]);
    for (int i = 1; i < Quads; ++i)
        n = select32(eq32(quads[i], splat32(0)), n,
                     splat32(static_cast<std::uint32_t>(4 * i)) + byte_length32(quads[i]));
    return n + splat32(1);
}

// Digits of x < 10^4 (each lane) as four bytes 0..9, the first in the lowest byte: hundreds and
// the rest in 16-bit halves, then tens and units in bytes. (The 32-bit shift and multiply keep to
// their halves here: every half's value is below 2^8 before the shift, below 2^16 after.)
inline u32x digit_bytes4(u32x x) noexcept {
    const u32x hundreds = shift_right32<19>(mul_lo32(x, splat32(5243)));
    // hundreds | (x - 100 hundreds) << 16
    const u32x pairs = shift_left32<16>(x) - mul_lo32(hundreds, splat32(6553599));
    const u32x tens = shift_right16<10>(mul_lo16(pairs, splat32(0x00670067)));  // pair / 10
    // tens | (pair - 10 tens) << 8
    return shift_left32<8>(pairs) - mul_lo16(tens, splat32(0x09ff09ff));
}

// A group's lanes as Schubfach and Zmij take them: the significand c (value c 2^q), q, k, h - 32
// (Zmij's shift) and k's row of the tables; `irregular` where c is a power of two (the interval
// below is half as wide). Zeros are replaced by a stand-in (their digits are set afterwards).
struct shortest_setup {
    u32x c, q, k, h32, index;
    mask32 irregular;
};
TENSORB64_ALWAYS_INLINE shortest_setup shortest_setup_of(u32x magnitude) noexcept {
    shortest_setup x;
    const u32x mag = select32(eq32(magnitude, splat32(0)), splat32(0x3dcccccdu), magnitude);
    const u32x fraction = mag & splat32(0x7fffff);
    x.c = fraction | splat32(1u << 23);
    x.q = shift_right32<23>(mag) - splat32(150);
    x.irregular = eq32(fraction, splat32(0));  // every lane here is normal
    const u32x scaled = mul_lo32(x.q, splat32(kLog10Pow2));
    x.k =
        shift_right_signed32<kLog10Shift>(scaled - where32(x.irregular, splat32(kLog10FourThirds)));
    // h - 32 = q + floor_log2_pow10(-k) + 1: 1 to 4 here
    x.h32 = shift_right_signed32<kLog2Shift>(mul_lo32(x.k, splat32(-kLog2Pow10)) +
                                             splat32(1 << kLog2Shift)) +
            x.q;
    x.index = x.k - splat32(static_cast<std::uint32_t>(kShortestKMin));
    return x;
}

// The shortest decimal (digits, exponent k) of each lane by one product, Zmij's way: with x the
// value scaled by 10^-k (7 to 9 digits before the point), the product of c << (h - 32) (below
// 2^28) by 10^-k's 64 leading bits gives floor(x) and x's fraction (both at most one unit of 2^-64
// low), and the half-ulp, 2^(q-1) 10^-k, is those bits shifted. The multiple of ten below x is the
// decimal where x is at most half an ulp above it, the one above where it is at most half an ulp
// below; else the integer nearest x. In units of 2^-27, x less that multiple of ten (below 10 2^27)
// is at most 1 unit low and the half-ulp at most 1.26: a comparison is decided only where it
// clears that error, and a lane where one does not, or x's fraction is within it of one half, or
// c is a power of two, is set in the mask returned (Schubfach's then).
TENSORB64_ALWAYS_INLINE mask32 shortest_decimal_one_product(const shortest_setup& x,
                                                            u32x* decimal) noexcept {
    const u32x power_high = lookup16_32(kShortestPowers.power_high, x.index);
    const u32x power_low = lookup16_32(kShortestPowers.power_low, x.index);
    const u32x scaled_c = shift_left32_var(x.c, x.h32);
    u64x high0, high1, low0, low1;
    mul_wide32(power_high, scaled_c, &high0, &high1);
    mul_wide32(power_low, scaled_c, &low0, &low1);
    // the product's top 64 bits: floor(x), then x's fraction's top 32 bits
    const u64x top0 = high0 + shift_right<32>(low0), top1 = high1 + shift_right<32>(low1);
    const u32x integral = narrow32(shift_right<32>(top0), shift_right<32>(top1));
    const u32x fraction = narrow32(top0, top1);
    const u32x below = mul_lo32(shift_right32<3>(mul_high32(integral, splat32(0xcccccccdu))),
                                splat32(10));  // the multiple of ten below
    const u32x above_below = shift_left32<27>(integral - below) | shift_right32<5>(fraction);
    const u32x half = shift_right32_var(power_high, splat32(6) - x.h32);
    // Signed, in units of 2^-27: the half-ulp less x's distance from `below`, and from below + 10.
    const u32x below_margin = half - above_below;
    const u32x above_margin = above_below + half - splat32(10u << 27);
    const mask32 below_in = greater_signed32(below_margin, splat32(1));
    const mask32 above_in = greater_signed32(above_margin, splat32(0));
    const mask32 rounds_up = greater32(fraction, splat32(0x80000000u));
    *decimal = select32(above_in, below + splat32(10),
                        select32(below_in, below, integral + where32(rounds_up, splat32(1))));
    return greater32(splat32(3), below_margin + splat32(1)) |
           greater32(splat32(3), above_margin + splat32(2)) |
           greater32(splat32(2), fraction - splat32(0x7fffffffu)) | x.irregular;
}

// The same decimals by Schubfach (to_decimal32's steps): the group's lanes the one product leaves
// undecided.
TENSORB64_NOINLINE u32x shortest_decimal_schubfach(u32x magnitude) noexcept {
    const shortest_setup x = shortest_setup_of(magnitude);
    const u32x zero32 = splat32(0), one = splat32(1);
    const u32x g_high = lookup16_32(kShortestPowers.g_high, x.index);
    const u32x g_low = lookup16_32(kShortestPowers.g_low, x.index);
    const u32x cb = shift_left32<2>(x.c);
    const u32x vb = shortest_round_to_odd(g_high, g_low, cb, x.h32);
    const u32x vbl =
        shortest_round_to_odd(g_high, g_low, cb - select32(x.irregular, one, splat32(2)), x.h32);
    const u32x vbr = shortest_round_to_odd(g_high, g_low, cb + splat32(2), x.h32);
    // choose_digits in uint32_t: the same sums. Every value here is below 2^31, so the unsigned
    // comparisons are signed ones, each made as its negation (x <= y: not x > y).
    const u32x out = x.c & one;  // the interval excludes its bounds where c is odd
    const u32x s = shift_right32<2>(vb);
    const u32x s4 = and_not(vb, splat32(3));  // s << 2
    const u32x sp10 = mul_lo32(shift_right32<3>(mul_high32(s, splat32(0xcccccccdu))), splat32(10));
    const u32x sp10_4 = shift_left32<2>(sp10);
    const u32x vbl_out = vbl + out;
    const mask32 up_out = greater_signed32(vbl_out, sp10_4);
    const mask32 wp_out = greater_signed32(sp10_4 + splat32(40) + out, vbr);
    const mask32 u_out = greater_signed32(vbl_out, s4);
    const mask32 w_out = greater_signed32(s4 + splat32(4) + out, vbr);
    const u32x middle = s4 + splat32(2);
    const mask32 nearer_s =
        greater_signed32(middle, vb) | and_not(eq32(vb, middle), eq32(s & one, one));
    const mask32 one_in = u_out ^ w_out;  // u_in ^ w_in
    const mask32 pick_s = and_not(one_in, u_out) | and_not(nearer_s, one_in);
    const u32x one_of_st = s + select32(pick_s, zero32, one);
    const u32x ten_multiple = sp10 + where32(up_out, splat32(10));
    const mask32 use_ten_multiple = greater_signed32(s, splat32(9)) & (up_out ^ wp_out);
    return select32(use_ten_multiple, ten_multiple, one_of_st);
}

// to_decimal32 and write_float_text's digit steps for a group for which shortest_fast holds.
TENSORB64_ALWAYS_INLINE shortest_lanes shortest_digits(u32x magnitude) noexcept {
    const u32x zero32 = splat32(0), one = splat32(1);
    const mask32 zero = eq32(magnitude, zero32);
    const shortest_setup x = shortest_setup_of(magnitude);
    const u32x& k = x.k;
    u32x digits;
    if (any32(shortest_decimal_one_product(x, &digits)))
        digits = shortest_decimal_schubfach(magnitude);
    // A normal float32's digits have 7 to 9 digits (s is in [2^23, 10 * 2^24), the choice
    // within 10 of it): the length is two compares; then the digits scaled to nine.
    const mask32 ge7 = greater_signed32(digits, splat32(9999999));
    const mask32 ge8 = greater_signed32(digits, splat32(99999999));
    const u32x scale = select32(ge8, one, select32(ge7, splat32(10), splat32(100)));
    const u32x digits9 = select32(zero, zero32, mul_lo32(digits, scale));
    shortest_lanes r;
    r.e10 = select32(zero, splat32(static_cast<std::uint32_t>(-1)),
                     k + splat32(6) + where32(ge7, one) + where32(ge8, one));
    // digits9 = lead 10^8 + high4 10^4 + low4
    const u32x high5 = shift_right32<13>(mul_high32(digits9, splat32(3518437209u)));  // / 10^4
    const u32x low4 = digits9 - mul_lo32(high5, splat32(10000));
    r.lead = shift_right32<22>(mul_lo32(shift_right32<4>(high5), splat32(6711)));  // / 10^4
    r.quads[0] = digit_bytes4(high5 - mul_lo32(r.lead, splat32(10000)));           // digits 2..5
    r.quads[1] = digit_bytes4(low4);                                               // digits 6..9
    r.n = significant_digits<2>(r.quads);
    return r;
}
