// The texts of a group of values below 1 in fixed notation ("-0.000ddd,"), from the digits the
// lanes computed (float_text_shortest.hpp, float_text_repr.hpp), written once over the vector
// vocabulary (levels/vocabulary.hpp). Included inside each SIMD level's namespace by its
// float_text.cpp, after float_text_repr.hpp.
//
// The lanes make each value's text as words: an 8-byte prefix ("0.000000", or "-0.00000" for a
// negative value), the digits in ASCII from the first on with the ',' already over the '0' after
// the last significant one, and where the digits start (the sign, "0." and the zeros after the
// point) and where the text ends. Each value's text is then four or five unaligned 8-byte stores
// and an add, with no branch: the prefix at the text's start, the digit words from the digits'
// offset, each text stored at the end of the one before, over the bytes the last one wrote past
// its ','. A value in another notation (below 1e-4 in Python's layout, 1e-6 or 1e-5 in orjson's)
// is written by the scalar writer instead (rare in embeddings: a branch per such group).

// A group's texts in fixed notation, Words 8-byte words of digits a value (2: up to 9 digits, 3:
// up to 17), each array in value order.
template <int Words>
struct fixed_texts {
    static constexpr int kValues = 2 * kLanes64;
    alignas(64) std::uint64_t prefix[kValues];
    alignas(64) std::uint64_t words[Words][kValues];
    alignas(64) std::uint64_t at_end[kValues];  // the digits' offset | the text's length << 32
    unsigned other;                             // bit j: value j is in another notation
};

constexpr std::uint32_t kAscii4 = 0x30303030u;  // "0000"
constexpr std::uint64_t kAscii8 = 0x3030303030303030ull;
constexpr std::uint32_t kZeroPoint4 = 0x30302e30u;                       // "0.00"
constexpr std::uint32_t kMinusZero4 = 0x302e302du;                       // "-0.0"
constexpr std::uint64_t kZeroPoint8 = 0x303030303030302eull << 8 | '0';  // "0.000000"
constexpr std::uint64_t kMinusZero8 = 0x3030303030302e30ull << 8 | '-';  // "-0.00000"
constexpr std::uint32_t kCommaOverZero = ',' ^ '0';

// The words of a shortest group's texts in fixed notation for e10 >= FixedMin (-4: Python's
// layout, -6: orjson's); `raw` the values' bits (their signs).
template <int FixedMin>
inline void shortest_fixed_texts(const shortest_lanes& d, u32x raw, fixed_texts<2>* t) noexcept {
    const u32x ascii = splat32(kAscii4);
    // digits 1..4, 5..8, 9 (and '0's)
    u32x first = d.lead | shift_left32<8>(d.digits2to5) | ascii;
    u32x second = shift_right32<24>(d.digits2to5) | shift_left32<8>(d.digits6to9) | ascii;
    u32x third = shift_right32<24>(d.digits6to9) | ascii;
    // The ',' over the '0' at digit index n (digits past the n-th are '0's).
    const u32x word = shift_right32<2>(d.n);
    const u32x comma = shift_left32_var(splat32(kCommaOverZero), shift_left32<3>(d.n & splat32(3)));
    first = first ^ where32(eq32(word, splat32(0)), comma);
    second = second ^ where32(eq32(word, splat32(1)), comma);
    third = third ^ where32(eq32(word, splat32(2)), comma);
    const u32x sign = shift_right32<31>(raw);
    const u32x at = sign + splat32(1) - d.e10;  // sign + "0." + the zeros after the point
    const u32x end = at + d.n + splat32(1);
    store_zip32(t->words[0], first, second);
    store_zip32(t->words[1], third, ascii);
    store_zip32(t->prefix,
                select32(eq32(sign, splat32(0)), splat32(kZeroPoint4), splat32(kMinusZero4)),
                ascii);
    store_zip32(t->at_end, at, end);
    t->other = mask_bits32(greater_signed32(splat32(static_cast<std::uint32_t>(FixedMin)), d.e10));
}

// digit_bytes8 (float_text.hpp) of each 64-bit lane v < 10^8: its two 4-digit halves.
inline u64x digit_bytes8(u64x v) noexcept {
    const u64x high4 = shift_right<40>(mul_low32(v, splat64(109951163u)));  // v / 10^4
    const u64x low4 = v - mul_low32(high4, splat64(10000u));
    return as_u64(digit_bytes4(as_u32(high4 | shift_left<32>(low4))));
}

// The words of a repr group's texts in fixed notation for e10 >= FixedMin (-4: json.dumps's
// layout, -5: orjson's for doubles).
template <int FixedMin>
inline void repr_fixed_texts(const repr_half* halves, u32x raw, fixed_texts<3>* t) noexcept {
    const u64x ascii = splat64(kAscii8), zero = splat64(0), one = splat64(1);
    u64x signs[2];
    zip32(shift_right32<31>(raw), splat32(0), &signs[0], &signs[1]);
    unsigned other = 0;
    for (int h = 0; h < 2; ++h) {
        const repr_half& d = halves[h];
        const u64x upper = digit_bytes8(d.upper), lower = digit_bytes8(d.lower);
        // 1 + the last nonzero digit's place among digits 2..17
        const u64x n =
            one + select(eq(lower, zero), byte_length64(upper), splat64(8) + byte_length64(lower));
        const u64x tail0 = upper | ascii, tail1 = lower | ascii;
        u64x words[3] = {d.lead | splat64('0') | shift_left<8>(tail0),
                         shift_right<56>(tail0) | shift_left<8>(tail1),
                         shift_right<56>(tail1) | shift_left<8>(ascii)};
        const u64x word = shift_right<3>(n);
        const u64x comma = shift_left_var(splat64(kCommaOverZero), shift_left<3>(n & splat64(7)));
        const u64x zeros = splat64(~std::uint64_t{0}) - d.e10;  // -1 - e10
        const u64x at = signs[h] + splat64(2) + zeros;
        const u64x end = at + n + one;
        for (int w = 0; w < 3; ++w) {
            words[w] =
                words[w] ^ select(eq(word, splat64(static_cast<std::uint64_t>(w))), comma, zero);
            store64(t->words[w] + h * kLanes64, words[w]);
        }
        store64(t->prefix + h * kLanes64,
                select(eq(signs[h], zero), splat64(kZeroPoint8), splat64(kMinusZero8)));
        store64(t->at_end + h * kLanes64, at | shift_left<32>(end));
        other |= mask_bits(greater(zeros, splat64(static_cast<std::uint64_t>(-1 - FixedMin))))
                 << (h * kLanes64);
    }
    t->other = other;
}

inline void store_word(char* at, std::uint64_t word) noexcept { std::memcpy(at, &word, 8); }

// The m first texts of a group (each followed by its ','), the values in another notation by
// `other(j, out)` (which writes value j's text and its ',' and returns the end).
template <int Words, class Other>
inline char* write_fixed_texts(const fixed_texts<Words>& t, std::size_t m, char* out,
                               Other other) noexcept {
    const auto fixed = [&t](std::size_t j, char* at) {
        store_word(at, t.prefix[j]);
        const std::uint64_t at_end = t.at_end[j];
        char* digits = at + (at_end & 0xffffffffu);
        for (int w = 0; w < Words; ++w) store_word(digits + 8 * w, t.words[w][j]);
        return at + (at_end >> 32);
    };
    if (t.other == 0) {
        for (std::size_t j = 0; j < m; ++j) out = fixed(j, out);
        return out;
    }
    for (std::size_t j = 0; j < m; ++j) out = (t.other >> j & 1) ? other(j, out) : fixed(j, out);
    return out;
}
