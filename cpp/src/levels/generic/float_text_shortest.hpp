// The shortest digits of float32 values below 1, a group at a time in the level's 32-bit lanes
// (u32x: 16 on avx512, 8 on avx2 and neon), written once over the vector vocabulary
// (levels/vocabulary.hpp). Included inside each SIMD level's namespace by its float_text.cpp,
// after the level's vocabulary.hpp and float_text/float_text.hpp; no includes of its own.
//
// Schubfach's steps (float_text.hpp's to_decimal32: R. Giulietti, "The Schubfach way to render
// doubles", 2020) exactly as it computes them in uint32_t and int, only its three 64 x 32-bit
// products in 64-bit lanes, then write_float_text's digit steps: the first digit, digits 2..9 as
// bytes, the decimal exponent and the count of significant digits. What every group of an
// embedding row is: zeros and normal magnitudes below 1 (others take the level's other path).

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

// to_decimal32's g = kSchubfachG[k][0] + 1 as 32-bit halves, for k = kShortestKMin .. -8.
struct shortest_g_table {
    alignas(64) std::uint32_t high[16];
    alignas(64) std::uint32_t low[16];
};
constexpr shortest_g_table make_shortest_g_table() {
    shortest_g_table t{};
    for (int i = 0; i < 16; ++i) {
        const std::uint64_t g = kSchubfachG[kShortestKMin + i - kSchubfachKMin][0] + 1;
        t.high[i] = static_cast<std::uint32_t>(g >> 32);
        t.low[i] = static_cast<std::uint32_t>(g);
    }
    return t;
}
constexpr shortest_g_table kShortestG = make_shortest_g_table();

// Lanes set in a mask32 with every lane set.
constexpr unsigned kAllLanes32 = (1u << (2 * kLanes64)) - 1;

// Whether every lane of `magnitude` is zero or in the lanes' range.
inline bool shortest_fast(u32x magnitude) noexcept {
    const mask32 in_range =
        greater32(splat32(kFloatOne - kShortestLeast), magnitude - splat32(kShortestLeast));
    return mask_bits32(in_range | eq32(magnitude, splat32(0))) == kAllLanes32;
}

// A group's shortest digits: the first digit, digits 2..5 and 6..9 as bytes 0..9 in string order
// (the first in the lowest byte), the decimal exponent (value = d1.d2...d9 10^e10) and the count of
// significant digits. Zero lanes: digits 0, e10 -1, n 1 ("0.0").
struct shortest_lanes {
    u32x lead, digits2to5, digits6to9, e10, n;
};

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

// to_decimal32 and write_float_text's digit steps for a group for which shortest_fast holds.
inline shortest_lanes shortest_digits(u32x magnitude) noexcept {
    const u32x zero32 = splat32(0), one = splat32(1);
    const mask32 zero = eq32(magnitude, zero32);
    const u32x mag = select32(zero, splat32(0x3e000000u), magnitude);  // a stand-in
    const u32x fraction = mag & splat32(0x7fffff);
    const u32x c = fraction | splat32(1u << 23);
    const u32x q = shift_right32<23>(mag) - splat32(150);
    // At a power of two the interval below is half as wide (every lane here is normal).
    const mask32 irregular = eq32(fraction, zero32);
    const u32x scaled = mul_lo32(q, splat32(kLog10Pow2));
    const u32x k =
        shift_right_signed32<kLog10Shift>(scaled - where32(irregular, splat32(kLog10FourThirds)));
    // h - 32 = q + floor_log2_pow10(-k) + 1
    const u32x h32 = shift_right_signed32<kLog2Shift>(mul_lo32(k, splat32(-kLog2Pow10)) +
                                                      splat32(1 << kLog2Shift)) +
                     q;
    const u32x index = k - splat32(static_cast<std::uint32_t>(kShortestKMin));
    const u32x g_high = lookup16_32(kShortestG.high, index);
    const u32x g_low = lookup16_32(kShortestG.low, index);
    const u32x cb = shift_left32<2>(c);
    const u32x vb = shortest_round_to_odd(g_high, g_low, cb, h32);
    const u32x vbl =
        shortest_round_to_odd(g_high, g_low, cb - select32(irregular, one, splat32(2)), h32);
    const u32x vbr = shortest_round_to_odd(g_high, g_low, cb + splat32(2), h32);
    // choose_digits in uint32_t: the same sums. Every value here is below 2^31, so the unsigned
    // comparisons are signed ones, each made as its negation (x <= y: not x > y).
    const u32x out = c & one;  // the interval excludes its bounds where c is odd
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
    const u32x digits = select32(use_ten_multiple, ten_multiple, one_of_st);
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
    r.digits2to5 = digit_bytes4(high5 - mul_lo32(r.lead, splat32(10000)));
    r.digits6to9 = digit_bytes4(low4);
    // 1 + the last nonzero digit's place among digits 2..9.
    r.n = one + select32(eq32(r.digits6to9, zero32), byte_length32(r.digits2to5),
                         splat32(4) + byte_length32(r.digits6to9));
    return r;
}
