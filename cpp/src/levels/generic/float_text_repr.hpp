// repr's digits of float32 values widened to doubles (json.dumps's text), a group at a time: the
// setup in the level's 32-bit lanes, the digits in its 64-bit lanes (u64x, kLanes64 values each,
// in value order), written once over the vector vocabulary (levels/vocabulary.hpp). Included
// inside each SIMD level's namespace by its float_text.cpp, after float_text_shortest.hpp.
//
// A float32's double c 2^q (c = c32 2^29, q = q32 - 29) has out = 0 (c is even) and, below 1 and
// from about 1e-10 (k from -26 to -16), Schubfach's products g (cb << h) exactly: 4 v 10^-k =
// c32 5^-k 2^(q32 - k + 2), a product of 24 and 61 bits shifted right by u = k - q32 - 2 (5 to 29
// there), and the bounds 4 (v -/+ ulp / 2) 10^-k that plus or minus 5^-k 2^-(30 + u) (2^-(31 + u)
// below a power of two). Round to odd of those is what round_to_odd_64 computes from the 126-bit
// g: the same vb, vbl, vbr (checked for every such float32 by float_text_exhaustive's repr), from
// two 32 x 32-bit products and a table of powers of five instead of the 128-bit products; and
// s / 10 is c32 5^(-k-1) >> (u + 3), exactly.

constexpr int kReprKMin = -26;
// 5^(-k) for k = kReprKMin .. -15 (the lanes' k and, for s / 10, one more); lookup24's size.
struct repr_pow5_table {
    alignas(64) std::uint64_t values[24];
};
constexpr repr_pow5_table make_repr_pow5_table() {
    repr_pow5_table t{};
    for (int i = 0; i < 12; ++i) {
        std::uint64_t p = 1;
        for (int j = 0; j < -(kReprKMin + i); ++j) p *= 5;
        t.values[i] = p;
    }
    return t;
}
constexpr repr_pow5_table kReprPow5 = make_repr_pow5_table();
static_assert(kReprPow5.values[0] == 1490116119384765625ull &&
                  kReprPow5.values[11] == 30517578125ull,
              "5^26 .. 5^15");

// Schubfach's k of the doubles of a group's float32 magnitudes (zeros replaced by a stand-in, a
// subnormal float32 giving one far below kReprKMin), with the parts of them repr_digits uses.
struct repr_setup {
    u32x c, q32, k;
};
inline repr_setup repr_setup_of(u32x magnitude) noexcept {
    const mask32 zero = eq32(magnitude, splat32(0));
    const u32x mag = select32(zero, splat32(0x3e000000u), magnitude);
    const u32x fraction = mag & splat32(0x7fffff);
    const mask32 irregular = eq32(fraction, splat32(0));
    repr_setup r;
    r.c = fraction | splat32(1u << 23);
    r.q32 = shift_right32<23>(mag) - splat32(150);
    // floor_log10_pow2 (or its three-quarters form) of the double's exponent q32 - 29
    const u32x scaled = mul_lo32(r.q32 - splat32(29), splat32(kLog10Pow2));
    r.k = shift_right_signed32<kLog10Shift>(scaled - where32(irregular, splat32(kLog10FourThirds)));
    return r;
}

// Whether every lane is zero or below 1 with k from kReprKMin on (from about 1e-10).
inline bool repr_fast(u32x magnitude) noexcept {
    const u32x index = repr_setup_of(magnitude).k - splat32(static_cast<std::uint32_t>(kReprKMin));
    return all32(greater32(splat32(11), index) & greater32(splat32(kFloatOne), magnitude));
}

// The digits of kLanes64 repr texts, in value order: the first digit, digits 2..9 and 10..17
// (each below 10^8) and the decimal exponent (a signed 64-bit lane). Zero lanes: digits 0, e10 -1.
struct repr_half {
    u64x lead, upper, lower, e10;
};

// A half's digits from its lanes of the setup (zero-extended; k sign-extended).
inline repr_half repr_digits_half(u64x c, u64x q32, u64x k, lane_mask zero) noexcept {
    const u64x one = splat64(1);
    const u64x index = k - splat64(static_cast<std::uint64_t>(kReprKMin));
    const u64x u = k - q32 - splat64(2);
    const lane_mask irregular = eq(c, splat64(1u << 23));
    const u64x power = lookup24(kReprPow5.values, index);
    // c 5^-k = high 2^32 + low (high < 2^53, low < 2^56)
    const u64x high = mul_low32(c, shift_right<32>(power));
    const u64x low = mul_low32(c, power);
    const u64x base = shift_left_var(high, splat64(32) - u);
    const u64x below = shift_left_var(one, u) - one;
    const u64x vb0 = base + shift_right_var(low, u);
    const u64x vb = select(eq(low & below, splat64(0)), vb0, vb0 | one);
    // The bounds' fractions are never zero (5^-k is odd): their last bit is always set.
    const u64x right = shift_right<30>(power);
    const u64x left = select(irregular, shift_right<31>(power), right);
    const u64x vbr = (base + shift_right_var(low + right, u)) | one;
    // base + floor((low - left - 1) / 2^u), where low - left - 1 may be negative: with 2^32 added
    // (more than left), it shifts to 2^(32 - u) more, which (high - 1) << (32 - u) takes off base.
    const u64x vbl = (shift_left_var(high - one, splat64(32) - u) +
                      shift_right_var(low + splat64(0xffffffffu) - left, u)) |
                     one;
    // choose_digits with out = 0 (s >= 10: it has 16 or 17 digits). s / 10 = floor(c 5^-k /
    // 2^(u + 3) / 5) = c 5^(-k-1) >> (u + 3), u + 3 <= 32.
    const u64x power_tenth = lookup24(kReprPow5.values, index + one);
    const u64x s10 = shift_left_var(mul_low32(c, shift_right<32>(power_tenth)), splat64(29) - u) +
                     shift_right_var(mul_low32(c, power_tenth), u + splat64(3));
    const u64x s = shift_right<2>(vb);
    const u64x s4 = vb & splat64(~std::uint64_t{3});
    const u64x sp10 = shift_left<3>(s10) + shift_left<1>(s10);
    const u64x sp10_4 = shift_left<2>(sp10);
    const lane_mask up_out = greater(vbl, sp10_4);  // not up_in
    const lane_mask wp_out = greater(sp10_4 + splat64(40), vbr);
    const lane_mask u_out = greater(vbl, s4);
    const lane_mask w_out = greater(s4 + splat64(4), vbr);
    const u64x middle = s4 + splat64(2);
    const lane_mask nearer_s = greater(middle, vb) | and_not(eq(vb, middle), eq(s & one, one));
    const lane_mask one_in = u_out ^ w_out;
    const lane_mask pick_s = and_not(one_in, u_out) | and_not(nearer_s, one_in);
    const u64x one_of_st = select(pick_s, s, s + one);
    const u64x ten_multiple = select(up_out, sp10 + splat64(10), sp10);
    const u64x digits = select(up_out ^ wp_out, ten_multiple, one_of_st);
    // 16 or 17 digits, as 17, then 1 + 8 + 8.
    const lane_mask is17 = greater(digits, splat64(9999999999999999ull));
    const u64x digits17 = select(
        zero, splat64(0), select(is17, digits, shift_left<3>(digits) + shift_left<1>(digits)));
    repr_half r;
    r.e10 = select(zero, splat64(~std::uint64_t{0}), k + select(is17, splat64(16), splat64(15)));
    // digits17 / 10^8 (exact for digits17 < 1.4e21: 2^90 / 10^8 rounded up, then >> 90).
    const u64x high9 = shift_right<26>(mul_high(digits17, splat64(12379400392853802749ull)));
    r.lower = digits17 - mul_low32(high9, splat64(100000000u));
    r.lead = shift_right<57>(mul_low32(high9, splat64(1441151881u)));
    r.upper = high9 - mul_low32(r.lead, splat64(100000000u));
    return r;
}

using repr_lanes = decimal_lanes<4>;

// Two words of four digit bytes of each lane x < 10^8.
inline void digit_quads(u32x x, u32x* quads) noexcept {
    const u32x high4 = shift_right32<13>(mul_high32(x, splat32(3518437209u)));  // x / 10^4
    quads[0] = digit_bytes4(high4);
    quads[1] = digit_bytes4(x - mul_lo32(high4, splat32(10000)));
}

// The digits of a group for which repr_fast holds: each half's (values 0..kLanes64 - 1 and the
// rest) in 64-bit lanes, then back in the group's 32-bit lanes.
TENSORB64_ALWAYS_INLINE repr_lanes repr_digits(u32x magnitude) noexcept {
    const repr_setup x = repr_setup_of(magnitude);
    const u32x zero32 = splat32(0);
    u64x c[2], q32[2], k[2], mag[2];
    zip32(x.c, zero32, &c[0], &c[1]);
    zip32(x.q32, shift_right_signed32<31>(x.q32), &q32[0], &q32[1]);
    zip32(x.k, shift_right_signed32<31>(x.k), &k[0], &k[1]);
    zip32(magnitude, zero32, &mag[0], &mag[1]);
    repr_half halves[2];
    for (int h = 0; h < 2; ++h)
        halves[h] = repr_digits_half(c[h], q32[h], k[h], eq(mag[h], splat64(0)));
    repr_lanes r;
    r.lead = unzip_low32(halves[0].lead, halves[1].lead);
    r.e10 = unzip_low32(halves[0].e10, halves[1].e10);
    digit_quads(unzip_low32(halves[0].upper, halves[1].upper), r.quads);      // digits 2..9
    digit_quads(unzip_low32(halves[0].lower, halves[1].lower), r.quads + 2);  // 10..17
    r.n = significant_digits<4>(r.quads);
    return r;
}
