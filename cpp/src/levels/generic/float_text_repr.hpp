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
// 5^(-k) for k = kReprKMin .. -15 (the lanes' k and, for s / 10, one more), as 32-bit halves.
struct repr_pow5_table {
    alignas(64) std::uint32_t high[16];
    alignas(64) std::uint32_t low[16];
};
constexpr repr_pow5_table make_repr_pow5_table() {
    repr_pow5_table t{};
    for (int i = 0; i < 12; ++i) {
        std::uint64_t p = 1;
        for (int j = 0; j < -(kReprKMin + i); ++j) p *= 5;
        t.high[i] = static_cast<std::uint32_t>(p >> 32);
        t.low[i] = static_cast<std::uint32_t>(p);
    }
    return t;
}
constexpr repr_pow5_table kReprPow5 = make_repr_pow5_table();
static_assert(kReprPow5.high[0] == 1490116119384765625ull >> 32 &&
                  kReprPow5.low[11] == static_cast<std::uint32_t>(30517578125ull),
              "5^26 .. 5^15");

// Schubfach's k of the doubles of a group's float32 magnitudes (zeros replaced by a stand-in, a
// subnormal float32 giving one far below kReprKMin), with the parts of them repr_digits uses.
struct repr_setup {
    u32x c, q32, k;
    mask32 zero, irregular;
};
TENSORB64_ALWAYS_INLINE repr_setup repr_setup_of(u32x magnitude) noexcept {
    repr_setup r;
    r.zero = eq32(magnitude, splat32(0));
    const u32x mag = select32(r.zero, splat32(0x3e000000u), magnitude);
    const u32x fraction = mag & splat32(0x7fffff);
    r.irregular = eq32(fraction, splat32(0));
    r.c = fraction | splat32(1u << 23);
    r.q32 = shift_right32<23>(mag) - splat32(150);
    // floor_log10_pow2 (or its three-quarters form) of the double's exponent q32 - 29
    const u32x scaled = mul_lo32(r.q32 - splat32(29), splat32(kLog10Pow2));
    r.k =
        shift_right_signed32<kLog10Shift>(scaled - where32(r.irregular, splat32(kLog10FourThirds)));
    return r;
}

// Whether every lane is zero or below 1 with k from kReprKMin on (from about 1e-10).
TENSORB64_ALWAYS_INLINE bool repr_fast(u32x magnitude) noexcept {
    const u32x index = repr_setup_of(magnitude).k - splat32(static_cast<std::uint32_t>(kReprKMin));
    return all32(greater32(splat32(11), index) & greater32(splat32(kFloatOne), magnitude));
}

// A half's decimal in 64-bit lanes (widen32's half of the group, in its order): 16 or 17 digits,
// scaled to 17, and is17 (1 where it had 17). From the half's products c 5^-k = high 2^32 + low
// and c 5^(-k-1) = tenth_high 2^32 + tenth_low, the shift u = k - q32 - 2 and the bounds' offsets
// right and left (5^-k >> 30, or >> 31 below a power of two).
struct repr_half {
    u64x digits17, is17;
};
TENSORB64_ALWAYS_INLINE repr_half repr_decimal_half(u64x high, u64x low, u64x tenth_high,
                                                    u64x tenth_low, u64x u, u64x right,
                                                    u64x left) noexcept {
    const u64x one = splat64(1);
    const u64x base = shift_left_var(high, splat64(32) - u);
    const u64x below = shift_left_var(one, u) - one;
    const u64x vb0 = base + shift_right_var(low, u);
    const u64x vb = select(eq(low & below, splat64(0)), vb0, vb0 | one);
    // The bounds' fractions are never zero (5^-k is odd): their last bit is always set.
    const u64x vbr = (base + shift_right_var(low + right, u)) | one;
    // base + floor((low - left - 1) / 2^u), where low - left - 1 may be negative: with 2^32 added
    // (more than left), it shifts to 2^(32 - u) more, which (high - 1) << (32 - u) takes off base.
    const u64x vbl = (shift_left_var(high - one, splat64(32) - u) +
                      shift_right_var(low + splat64(0xffffffffu) - left, u)) |
                     one;
    // choose_digits with out = 0 (s >= 10: it has 16 or 17 digits). s / 10 = floor(c 5^-k /
    // 2^(u + 3) / 5) = c 5^(-k-1) >> (u + 3), u + 3 <= 32.
    const u64x s10 =
        shift_left_var(tenth_high, splat64(29) - u) + shift_right_var(tenth_low, u + splat64(3));
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
    const lane_mask is17 = greater(digits, splat64(9999999999999999ull));
    return {select(is17, digits, shift_left<3>(digits) + shift_left<1>(digits)),
            select(is17, one, splat64(0))};
}

using repr_lanes = decimal_lanes<4>;

// Two words of four digit bytes of each lane x < 10^8.
inline void digit_quads(u32x x, u32x* quads) noexcept {
    const u32x high4 = shift_right32<13>(mul_high32(x, splat32(3518437209u)));  // x / 10^4
    quads[0] = digit_bytes4(high4);
    quads[1] = digit_bytes4(x - mul_lo32(high4, splat32(10000)));
}

// The digits of a group for which repr_fast holds: the products from the 32-bit lanes, the
// decimal in 64-bit lanes, a half at a time, then its digits back in the 32-bit lanes.
TENSORB64_ALWAYS_INLINE repr_lanes repr_digits(u32x magnitude) noexcept {
    const repr_setup x = repr_setup_of(magnitude);
    const u32x index = x.k - splat32(static_cast<std::uint32_t>(kReprKMin));
    const u32x power_high = lookup16_32(kReprPow5.high, index);
    const u32x power_low = lookup16_32(kReprPow5.low, index);
    const u32x tenth_index = index + splat32(1);
    const u32x tenth_high = lookup16_32(kReprPow5.high, tenth_index);
    const u32x tenth_low = lookup16_32(kReprPow5.low, tenth_index);
    // 5^-k >> 30 and >> 31 (below 2^31)
    const u32x right = shift_left32<2>(power_high) | shift_right32<30>(power_low);
    const u32x left =
        select32(x.irregular, shift_left32<1>(power_high) | shift_right32<31>(power_low), right);
    u64x high[2], low[2], th[2], tl[2], u[2], r[2], l[2];
    mul_wide32(x.c, power_high, &high[0], &high[1]);
    mul_wide32(x.c, power_low, &low[0], &low[1]);
    mul_wide32(x.c, tenth_high, &th[0], &th[1]);
    mul_wide32(x.c, tenth_low, &tl[0], &tl[1]);
    widen32(x.k - x.q32 - splat32(2), &u[0], &u[1]);
    widen32(right, &r[0], &r[1]);
    widen32(left, &l[0], &l[1]);
    repr_half halves[2];
    for (int h = 0; h < 2; ++h)
        halves[h] = repr_decimal_half(high[h], low[h], th[h], tl[h], u[h], r[h], l[h]);
    // digits17 = lead 10^16 + upper 10^8 + lower: digits17 / 10^8 (exact below 1.4e21: 2^90 / 10^8
    // rounded up, then >> 90), below 10^9, then the rest in 32-bit lanes.
    const u64x reciprocal = splat64(12379400392853802749ull);
    const u32x high9 = narrow32(shift_right<26>(mul_high(halves[0].digits17, reciprocal)),
                                shift_right<26>(mul_high(halves[1].digits17, reciprocal)));
    const u32x lower = narrow32(halves[0].digits17, halves[1].digits17) -
                       mul_lo32(high9, splat32(100000000u));  // below 2^32: its low bits
    const u32x lead = shift_right32<25>(mul_high32(high9, splat32(1441151881u)));  // / 10^8
    const u32x zero32 = splat32(0);
    repr_lanes d;
    d.lead = select32(x.zero, zero32, lead);
    d.e10 = select32(x.zero, splat32(static_cast<std::uint32_t>(-1)),
                     x.k + splat32(15) + narrow32(halves[0].is17, halves[1].is17));
    digit_quads(select32(x.zero, zero32, high9 - mul_lo32(lead, splat32(100000000u))),
                d.quads);                                       // digits 2..9
    digit_quads(select32(x.zero, zero32, lower), d.quads + 2);  // 10..17
    d.n = significant_digits<4>(d.quads);
    return d;
}
