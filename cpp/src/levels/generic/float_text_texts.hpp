// The texts of a group of values below 1 in fixed notation ("-0.000ddd,"), from the digits the
// lanes computed (float_text_shortest.hpp, float_text_repr.hpp), written once over the vector
// vocabulary (levels/vocabulary.hpp). Included inside each SIMD level's namespace by its
// float_text.cpp, after float_text_repr.hpp.
//
// The lanes make each value's text as words: an 8-byte prefix ("0.000000", or "-0.00000" for a
// negative value), the digits in ASCII from the first on with the ',' already over the '0' after
// the last significant one, and where the digits start (the sign, "0." and the zeros after the
// point) and where the text ends. Each value's text is then three or four unaligned 8-byte stores
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

constexpr std::uint32_t kAscii4 = 0x30303030u;      // "0000"
constexpr std::uint32_t kZeroPoint4 = 0x30302e30u;  // "0.00"
constexpr std::uint32_t kMinusZero4 = 0x302e302du;  // "-0.0"
constexpr std::uint32_t kCommaOverZero = ',' ^ '0';

// The words of a group's texts in fixed notation for e10 >= FixedMin (-4: Python's layout; orjson's
// -6 for float32 values, -5 for doubles); `raw` the values' bits (their signs). The digits, four to
// a 32-bit word (d1..d4, d5..d8, ..., then the last with '0's), the ',' put over the '0' after the
// last significant one, then two words to each 8-byte word.
template <int FixedMin, int Quads>
inline void fixed_texts_of(const decimal_lanes<Quads>& d, u32x raw,
                           fixed_texts<Quads / 2 + 1>* t) noexcept {
    const u32x ascii = splat32(kAscii4);
    u32x words[Quads + 1];
    words[0] = d.lead | shift_left32<8>(d.quads[0]) | ascii;
    for (int i = 1; i < Quads; ++i)
        words[i] = shift_right32<24>(d.quads[i - 1]) | shift_left32<8>(d.quads[i]) | ascii;
    words[Quads] = shift_right32<24>(d.quads[Quads - 1]) | ascii;
    // The ',' over the '0' at digit index n (digits past the n-th are '0's).
    const u32x word = shift_right32<2>(d.n);
    const u32x comma = shift_left32_var(splat32(kCommaOverZero), shift_left32<3>(d.n & splat32(3)));
    for (int i = 0; i <= Quads; ++i)
        words[i] = words[i] ^ where32(eq32(word, splat32(static_cast<std::uint32_t>(i))), comma);
    for (int i = 0; i < Quads / 2; ++i) store_zip32(t->words[i], words[2 * i], words[2 * i + 1]);
    store_zip32(t->words[Quads / 2], words[Quads], ascii);
    const u32x sign = shift_right32<31>(raw);
    const u32x at = sign + splat32(1) - d.e10;  // sign + "0." + the zeros after the point
    store_zip32(t->prefix,
                select32(eq32(sign, splat32(0)), splat32(kZeroPoint4), splat32(kMinusZero4)),
                ascii);
    store_zip32(t->at_end, at, at + d.n + splat32(1));
    t->other = mask_bits32(greater_signed32(splat32(static_cast<std::uint32_t>(FixedMin)), d.e10));
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
