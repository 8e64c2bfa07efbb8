// The float-text block writers (dispatch/implementation.hpp's float_text_writers), written once
// over the vector vocabulary (levels/vocabulary.hpp) and instantiated in each SIMD level's
// float_text.cpp, inside its namespace, after float_text_texts.hpp. Byte-identical to the scalar
// writers (float_text.hpp's write_values_*), within the same output bounds.
//
// float32 rows go a group at a time (the level's 32-bit lanes: 16 on avx512, 8 on avx2 and neon):
// a group of zeros and values below 1 (every group of an embedding row) takes the lanes' digits
// (float_text_shortest.hpp, float_text_repr.hpp) and their texts; any other group goes to the
// level's other path. float64 rows whose values are float32 values widened
// (the Python floats of a float32 tensor: vLLM's Cohere rows, SGLang's float route) take repr's
// lanes too, each group narrowed to float32 first; other float64 groups the level's other path.
// A block with a NaN or an infinity goes to the scalar writer, which names the first one.
//
// What a level does its own way it gives as a policy (the generic_policy below by default): the
// texts of a group from its digits, and the groups the lanes do not take.

constexpr std::size_t kGroup = 2 * kLanes64;  // values a group: u32x's lanes

// The scalar writer of one value, and the fixed notation's least exponent, for each text: shortest
// float32 (Python's layout or orjson's), repr of float32 widened, and a double in json.dumps's
// layout or orjson's.
template <bool Orjson>
struct shortest_text {
    static constexpr bool kOrjson = Orjson, kShortest = true;
    static constexpr int kFixedMin = Orjson ? -6 : -4;
    static char* scalar(std::uint32_t bits, char* out) noexcept {
        return Orjson ? write_orjson_f32(bits, out) : write_shortest_f32(bits, out);
    }
};
struct repr_f32_text {
    static constexpr bool kOrjson = false, kShortest = false;
    static constexpr int kFixedMin = -4;
    static char* scalar(std::uint32_t bits, char* out) noexcept {
        return write_repr(f32_bits_to_f64_bits(bits), out);
    }
};
template <bool Orjson>
struct double_text {
    static constexpr bool kOrjson = Orjson, kShortest = false;
    static constexpr int kFixedMin = Orjson ? -5 : -4;
    static char* scalar(std::uint64_t bits, char* out) noexcept {
        return Orjson ? write_orjson_f64(bits, out) : write_repr(bits, out);
    }
};

// Value j of `bits` by Text's scalar writer, and its ','.
template <class Text, class Bits>
struct scalar_value {
    const Bits* bits;
    char* operator()(std::size_t j, char* out) const noexcept {
        out = Text::scalar(bits[j], out);
        *out++ = ',';
        return out;
    }
};

// Each of `m` values of `bits` by Text's scalar writer, a ',' after each (all finite).
template <class Text, class Bits>
inline char* write_scalar_values(const Bits* bits, std::size_t m, char* out) noexcept {
    for (std::size_t j = 0; j < m; ++j) out = scalar_value<Text, Bits>{bits}(j, out);
    return out;
}

// The generic texts and other groups: the texts by their words (float_text_texts.hpp), the other
// groups value by value by the scalar writer.
struct generic_policy {
    static constexpr bool kInterleave = true;  // two groups at once (write_f32_groups)
    // A group's texts from its digits; `other(j, out)` writes value j's text and its ',' by the
    // scalar writer (a value in another notation).
    template <class Text, int Quads, class Other>
    TENSORB64_ALWAYS_INLINE static char* texts(const decimal_lanes<Quads>& d, u32x raw,
                                               std::size_t m, char* out, Other other) noexcept {
        fixed_texts<Quads / 2 + 1> t;
        fixed_texts_of<Text::kFixedMin>(d, raw, &t);
        return write_fixed_texts(t, m, out, other);
    }
    template <class Text>
    static char* other_f32(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        return write_scalar_values<Text>(bits, m, out);
    }
    template <class Text>
    static char* other_f64(const std::uint64_t* bits, std::size_t m, char* out) noexcept {
        return write_scalar_values<Text>(bits, m, out);
    }
};

// A writer of float32 groups: `fast` whether a group's magnitudes take the lanes, `digits` their
// digits there, `write` the texts from them (m of the values real), `other` a group that does not.
template <class Policy, class Text>
struct shortest_groups {
    using digits_type = shortest_lanes;
    static constexpr bool kInterleave = Policy::kInterleave;
    TENSORB64_ALWAYS_INLINE static bool fast(u32x magnitude) noexcept {
        return shortest_fast(magnitude);
    }
    TENSORB64_ALWAYS_INLINE static digits_type digits(u32x magnitude) noexcept {
        return shortest_digits(magnitude);
    }
    TENSORB64_ALWAYS_INLINE static char* write(const digits_type& d, u32x raw,
                                               const std::uint32_t* bits, std::size_t m,
                                               char* out) noexcept {
        return Policy::template texts<Text>(d, raw, m, out,
                                            scalar_value<Text, std::uint32_t>{bits});
    }
    static char* other(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        return Policy::template other_f32<Text>(bits, m, out);
    }
};
template <class Policy>
struct repr_groups {
    using digits_type = repr_lanes;
    static constexpr bool kInterleave = Policy::kInterleave;
    TENSORB64_ALWAYS_INLINE static bool fast(u32x magnitude) noexcept {
        return repr_fast(magnitude);
    }
    TENSORB64_ALWAYS_INLINE static digits_type digits(u32x magnitude) noexcept {
        return repr_digits(magnitude);
    }
    TENSORB64_ALWAYS_INLINE static char* write(const digits_type& d, u32x raw,
                                               const std::uint32_t* bits, std::size_t m,
                                               char* out) noexcept {
        return Policy::template texts<repr_f32_text>(
            d, raw, m, out, scalar_value<repr_f32_text, std::uint32_t>{bits});
    }
    static char* other(const std::uint32_t* bits, std::size_t m, char* out) noexcept {
        return Policy::template other_f32<repr_f32_text>(bits, m, out);
    }
};

// A group of m <= kGroup values by Groups, out of line: the pairs' loop stays small. A last group
// shorter than kGroup is read from a copy padded with zeros.
template <class Groups>
TENSORB64_NOINLINE char* write_f32_group(const std::uint32_t* bits, std::size_t m,
                                         char* out) noexcept {
    alignas(64) std::uint32_t padded[kGroup] = {};
    if (m < kGroup) {
        std::memcpy(padded, bits, m * sizeof *bits);
        bits = padded;
    }
    const u32x raw = load32(bits);
    const u32x magnitude = raw & splat32(0x7fffffffu);
    return Groups::fast(magnitude) ? Groups::write(Groups::digits(magnitude), raw, bits, m, out)
                                   : Groups::other(bits, m, out);
}

// `n` finite float32 values by Groups. Where the level's policy interleaves (the x86 levels), two
// groups go together where both take the lanes: their digits are two independent chains, which
// the core overlaps (float_text_bench, the fastest of 3 runs: avx512 shortest 3.4 -> 3.1 ns a
// value, avx2 5.1 -> 4.6); on NEON, whose u32x is two registers, two chains spill (shortest 60.4
// and repr 140.2 AArch64 instructions a value against 59.7 and 132.2), so one at a time.
template <class Groups>
inline char* write_f32_groups(const std::uint32_t* bits, std::size_t n, char* out) noexcept {
    std::size_t i = 0;
    if (Groups::kInterleave) {
        for (; i + 2 * kGroup <= n; i += 2 * kGroup) {
            const u32x raw0 = load32(bits + i), raw1 = load32(bits + i + kGroup);
            const u32x magnitude0 = raw0 & splat32(0x7fffffffu);
            const u32x magnitude1 = raw1 & splat32(0x7fffffffu);
            if (Groups::fast(magnitude0) && Groups::fast(magnitude1)) {
                const auto d0 = Groups::digits(magnitude0);
                const auto d1 = Groups::digits(magnitude1);
                out = Groups::write(d0, raw0, bits + i, kGroup, out);
                out = Groups::write(d1, raw1, bits + i + kGroup, kGroup, out);
                continue;
            }
            out = write_f32_group<Groups>(bits + i, kGroup, out);
            out = write_f32_group<Groups>(bits + i + kGroup, kGroup, out);
        }
    } else {
        for (; i + kGroup <= n; i += kGroup) {
            const u32x raw = load32(bits + i);
            const u32x magnitude = raw & splat32(0x7fffffffu);
            out = Groups::fast(magnitude)
                      ? Groups::write(Groups::digits(magnitude), raw, bits + i, kGroup, out)
                      : Groups::other(bits + i, kGroup, out);
        }
    }
    for (; i < n; i += kGroup)
        out = write_f32_group<Groups>(bits + i, std::min(kGroup, n - i), out);
    return out;
}

// A group of m <= kGroup doubles: where every one is a float32 value widened (zero, or a normal
// float32 below 1: the double's low 29 fraction bits zero) and repr's lanes take those float32
// values, their texts from those lanes (a double's shortest text is its float32's repr); else
// Policy's other path.
template <class Policy, class Text>
TENSORB64_NOINLINE char* write_f64_group(const std::uint64_t* bits, std::size_t m,
                                         char* out) noexcept {
    alignas(64) std::uint64_t padded[kGroup] = {};
    const std::uint64_t* at = bits;
    if (m < kGroup) {
        std::memcpy(padded, bits, m * sizeof *bits);
        at = padded;
    }
    const u64x magnitude_bits = splat64(~(std::uint64_t{1} << 63));
    const u64x narrow_bits = splat64((std::uint64_t{1} << 29) - 1);
    const u64x least = splat64(std::uint64_t{897} << 52);  // 2^-126, float32's least normal
    const u64x below_one = splat64(std::uint64_t{1023 - 897} << 52);
    u64x halves32[2];  // the float32 bits, in each 64-bit lane's low half
    unsigned widened = 0;
    for (int h = 0; h < 2; ++h) {
        const u64x x = load64(at + h * kLanes64);
        const u64x magnitude = x & magnitude_bits;
        const lane_mask zero = eq(magnitude, splat64(0));
        const lane_mask in_range =
            greater(below_one, magnitude - least) & eq(magnitude & narrow_bits, splat64(0));
        widened |= mask_bits(zero | in_range) << (h * kLanes64);
        // the float32's bits: its sign, its exponent (less 1023 - 127), its 23 fraction bits
        const u64x f32 = select(zero, splat64(0),
                                shift_right<29>(magnitude) - splat64(std::uint64_t{896} << 23));
        halves32[h] = f32 | (shift_right<32>(x) & splat64(0x80000000u));
    }
    if (widened == (1u << kGroup) - 1) {
        const u32x raw = unzip_low32(halves32[0], halves32[1]);
        const u32x magnitude = raw & splat32(0x7fffffffu);
        if (repr_fast(magnitude))
            return Policy::template texts<Text>(repr_digits(magnitude), raw, m, out,
                                                scalar_value<Text, std::uint64_t>{at});
    }
    return Policy::template other_f64<Text>(at, m, out);
}

template <class Policy, class Text>
inline char* write_f64_groups(const std::uint64_t* bits, std::size_t n, char* out) noexcept {
    for (std::size_t i = 0; i < n; i += kGroup)
        out = write_f64_group<Policy, Text>(bits + i, std::min(kGroup, n - i), out);
    return out;
}

// Whether any of `n` float32 / float64 values is a NaN or an infinity.
inline bool any_non_finite(const std::uint32_t* bits, std::size_t n) noexcept {
    const u32x exponent = splat32(0x7f800000u);
    mask32 found = eq32(exponent, splat32(0));
    std::size_t i = 0;
    for (; i + kGroup <= n; i += kGroup)
        found = found | eq32(load32(bits + i) & exponent, exponent);
    bool any = any32(found);
    for (; i < n; ++i) any |= (bits[i] & 0x7f800000u) == 0x7f800000u;
    return any;
}
inline bool any_non_finite(const std::uint64_t* bits, std::size_t n) noexcept {
    const u64x exponent = splat64(0x7ff0000000000000ull);
    unsigned found = 0;
    std::size_t i = 0;
    for (; i + kLanes64 <= n; i += kLanes64)
        found |= mask_bits(eq(load64(bits + i) & exponent, exponent));
    for (; i < n; ++i) found |= (bits[i] & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
    return found != 0;
}

// The level's writers (dispatch/implementation.hpp), by Policy.
template <class Policy>
struct block_writers {
    static char* f32(const std::uint32_t* bits, std::size_t n, bool shortest, char* out,
                     std::size_t* bad) noexcept {
        // A row with a NaN or an infinity is refused: the scalar writer finds the first one.
        if (any_non_finite(bits, n)) return write_values_f32(bits, n, shortest, out, bad);
        return shortest
                   ? write_f32_groups<shortest_groups<Policy, shortest_text<false>>>(bits, n, out)
                   : write_f32_groups<repr_groups<Policy>>(bits, n, out);
    }
    static char* orjson_f32(const std::uint32_t* bits, std::size_t n, char* out,
                            std::size_t* bad) noexcept {
        if (any_non_finite(bits, n)) return write_values_orjson_f32(bits, n, out, bad);
        return write_f32_groups<shortest_groups<Policy, shortest_text<true>>>(bits, n, out);
    }
    static char* f64(const std::uint64_t* bits, std::size_t n, char* out,
                     std::size_t* bad) noexcept {
        if (any_non_finite(bits, n)) return write_values_f64(bits, n, out, bad);
        return write_f64_groups<Policy, double_text<false>>(bits, n, out);
    }
    static char* orjson_f64(const std::uint64_t* bits, std::size_t n, char* out,
                            std::size_t* bad) noexcept {
        if (any_non_finite(bits, n)) return write_values_orjson_f64(bits, n, out, bad);
        return write_f64_groups<Policy, double_text<true>>(bits, n, out);
    }
};
