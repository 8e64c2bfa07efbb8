// The AVX2 JSON number-row parsers (the avx2 implementation's, dispatch/implementation.hpp), to
// float32 and to float64: numbers four at a time, in two layouts (AVX2 has no byte permute across
// 128-bit lanes and no masked byte load, which the avx512 level's are built on). The row's
// separators (',' and the first ']') are gathered ahead, 64 bytes at a time, as the avx512
// level's parse_row does; the commas in the row's first 64 bytes pick the layout, as there.
//
//  * Short numbers (at most 15 bytes: orjson's and vLLM's rows; short_digits_of): the 16 bytes
//    ending at each separator, two numbers to a vector, one vpshufb a half (its control from a
//    table by the point's place and the first digit's) dropping the point and the bytes before
//    the digits. At most 14 digits, so w / 10^f is exact for both row types (Clinger's fast path).
//  * Any number (json.dumps's 17-digit rows; digits_of): two 32-byte loads ending at its
//    separator, one a byte earlier, blended so that the bytes up to the point come from the
//    earlier one (which drops the point), and the bytes before the digits masked off. Float32
//    rows take w / 10^f, kept above w = 2^53 only where the rounded w cannot move the float32 (the
//    avx512 level's rule); float64 rows Eisel-Lemire in integer lanes (the avx512 level's
//    convert_group_double, which says why a decided lane is right).
//
// In both, multiply-adds (vpmaddubsw, vpmaddwd, vpmuludq) make the digits an integer w in four
// 64-bit lanes, whose double is divided by 10^f, then vcvtpd2ps for float32 rows (double, then
// float32, as the reference). The shape -?(0|[1-9][0-9]*)\.[0-9]+ is checked in 64-bit (short)
// or 32-bit (any) masks of the texts' bytes. Any other number (exponents, integers, NaN,
// whitespace, errors, longer texts), and a row's first numbers, whose loads would begin before the
// row, go through the scalar parser: the number alone when it ends at its separator, otherwise
// the rest of the row, so that values, ends and errors equal the scalar level's
// (number_parser_tests: every level against the scalar one).
//
// The double arithmetic runs under ieee_fp_environment (round to nearest even, no FTZ/DAZ),
// whatever the caller's settings.
//
// Compiled with the AVX2 flags (cpp/CMakeLists.txt); to nothing elsewhere.
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX2
#include <immintrin.h>

#include <cstdint>

#include "common/fp_environment.hpp"
#include "json/number_parser.hpp"
#include "levels/avx2/avx2.hpp"
#include "levels/number_row_lanes.hpp"

namespace tensorb64 {
namespace {

using detail::number_row;

inline std::uint64_t byte_mask(__m256i bytes, char c) noexcept {
    return static_cast<std::uint32_t>(
        _mm256_movemask_epi8(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi8(c))));
}

// The ',' and ']' masks of a block of the row (separator_chunks'): two 32-byte loads, and the
// bytes one at a time in the last block, short of 64 (AVX2 has no masked byte load).
inline void block_masks(const char* block, std::size_t left, std::uint64_t* commas,
                        std::uint64_t* closes) noexcept {
    if (left >= 64) {
        const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
        const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32));
        *commas = byte_mask(low, ',') | byte_mask(high, ',') << 32;
        *closes = byte_mask(low, ']') | byte_mask(high, ']') << 32;
        return;
    }
    *commas = 0;
    *closes = 0;
    for (std::size_t j = 0; j < left; ++j) {
        *commas |= std::uint64_t{block[j] == ','} << j;
        *closes |= std::uint64_t{block[j] == ']'} << j;
    }
}

// Four separators written per block whatever its count (separator_chunks' `unrolled`).
using row_separators = separator_chunks<4, block_masks>;

// Four numbers' texts: number i is [start[i], stop[i]), ending at its separator stop[i]. A number
// starts one byte past a ',' or, after ", " (Python's json.dumps layout), two.
struct number_group {
    const char* start[5];
    const char* stop[4];
};

// A group's texts as integers: number i is w[i] / 10^f[i] (with its sign in bit i of `negative`)
// where bit i of `fast` is set, w[i] exact below 2^64.
struct group_digits {
    __m256i w;
    unsigned f[4];
    unsigned fast;
    unsigned negative;
};

// ---- any number, one to a vector (digits_of) ----

// At most 25 bytes of text (a sign, a point and 23 digits, or 24 without a sign), so that the
// first 8 bytes of a 32-byte window hold no digit once the point is dropped.
constexpr std::size_t kMaxFastLength = 25;

// A number's window is the 32 bytes before its separator and the byte before them: 33 bytes,
// which a row's first numbers do not have (they are read from these zeros, and not kept).
alignas(32) constexpr char kZeros[64] = {};
constexpr std::ptrdiff_t kWindow = 33;

// The 32 bytes from kLeadingOnes + 32 - k: bytes j < k all ones, the rest zero (k in [0, 32]): a
// byte mask from a count without a broadcast and a compare.
struct leading_ones_table {
    alignas(64) std::uint8_t bytes[64];
};
constexpr leading_ones_table make_leading_ones() {
    leading_ones_table t{};
    for (int j = 0; j < 32; ++j) t.bytes[j] = 0xff;
    return t;
}
constexpr leading_ones_table kLeadingOnes = make_leading_ones();

inline __m256i bytes_below(unsigned k) noexcept {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLeadingOnes.bytes + 32 - k));
}

// Number i of a group (row: the row's first byte; all_inside: the group's first window is in the
// row, hence all are, as the stops ascend): its four 8-digit groups as integers in 64-bit lanes
// (the last 8 digits in the top lane); bit i of *fast and *negative, and *fraction (the digits
// after the point).
inline __m256i digit_groups(const char* row, bool all_inside, const number_group& g, int i,
                            unsigned* fast, unsigned* negative, unsigned* fraction) noexcept {
    const char* start = g.start[i];
    const char* stop = g.stop[i];
    const std::size_t length = static_cast<std::size_t>(stop - start);
    const bool inside = all_inside || stop - row >= kWindow;
    const char* window = inside ? stop - 32 : kZeros + 32;
    const __m256i text = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(window));
    const __m256i earlier = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(window - 1));
    // The shape, in bit j for byte j (as the avx512 level's shape_of, on one text).
    const std::uint32_t t = length <= kMaxFastLength
                                ? static_cast<std::uint32_t>(~std::uint64_t{0} << (32 - length))
                                : 0;
    const __m256i values = _mm256_sub_epi8(text, _mm256_set1_epi8('0'));
    const std::uint32_t digits = static_cast<std::uint32_t>(_mm256_movemask_epi8(
        _mm256_cmpeq_epi8(_mm256_min_epu8(values, _mm256_set1_epi8(9)), values)));
    const std::uint32_t points = static_cast<std::uint32_t>(byte_mask(text, '.'));
    const std::uint32_t zeros = static_cast<std::uint32_t>(byte_mask(text, '0'));
    // A text's first byte: in it, or its separator (a text ends before `end`).
    const bool minus = *start == '-';
    const std::uint32_t first = t & ~(t << 1);
    const std::uint32_t sign = minus ? first : 0;
    const std::uint32_t integer_start = (first & ~sign) | (sign << 1);
    const std::uint32_t point = t & ~digits & ~sign;  // in a text of the shape, its one non-digit
    // Nonzero where the text is not of the shape: a second non-digit; one that is not a '.'; no
    // digit before it; a leading zero before a digit; the point last (bit 31) or more than 22
    // digits after it (below bit 9).
    const std::uint32_t misfit = (point & (point - 1)) | (point & ~points) |
                                 ((point >> 1) & ~digits) |
                                 (zeros & integer_start & (digits >> 1)) | (point & 0x800001ffu);
    const unsigned point_at = lowest_bit(point | 0x80000000u);
    const bool fast_text = inside && misfit == 0 && point != 0;
    *fast |= unsigned{fast_text} << i;
    *negative |= unsigned{minus} << i;
    *fraction = fast_text ? 31 - point_at : 0;  // (an index into the powers of ten: at most 22)
    // Drop the point: the bytes up to it take the earlier window's (their left neighbours'); then
    // keep the bytes past the text's first one and its sign (the digits, in a text of the shape).
    const __m256i moved = _mm256_blendv_epi8(
        values, _mm256_sub_epi8(earlier, _mm256_set1_epi8('0')), bytes_below(point_at + 1));
    // (The text's first byte moves to 33 - length; a text of the shape has at least 3 bytes, and
    // the rest keep no byte, which also keeps the count at most 32.)
    const unsigned first_digit =
        t == 0 || length < 3 ? 32 : 33 - static_cast<unsigned>(length) + unsigned{minus};
    const __m256i digit_values = _mm256_andnot_si256(bytes_below(first_digit), moved);
    // Pairs, quads, eights: each lane's higher digits first in memory.
    const __m256i pairs = _mm256_maddubs_epi16(digit_values, _mm256_set1_epi16(0x010a));
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00010064));
    return _mm256_add_epi64(_mm256_mul_epu32(quads, _mm256_set1_epi64x(10000)),
                            _mm256_srli_epi64(quads, 32));
}

// Unsigned a > b in 64-bit lanes (AVX2's compare is signed).
inline __m256i greater_u64(__m256i a, __m256i b) noexcept {
    const __m256i bias = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), _mm256_xor_si256(b, bias));
}

inline group_digits digits_of(const char* row, const number_group& g) noexcept {
    group_digits d;
    d.fast = 0;
    d.negative = 0;
    const bool all_inside = g.stop[0] - row >= kWindow;
    const __m256i e0 = digit_groups(row, all_inside, g, 0, &d.fast, &d.negative, &d.f[0]);
    const __m256i e1 = digit_groups(row, all_inside, g, 1, &d.fast, &d.negative, &d.f[1]);
    const __m256i e2 = digit_groups(row, all_inside, g, 2, &d.fast, &d.negative, &d.f[2]);
    const __m256i e3 = digit_groups(row, all_inside, g, 3, &d.fast, &d.negative, &d.f[3]);
    // Transpose: the i-th 8-digit groups of the four numbers into one vector each (the first
    // groups are zero: a fast text has at most 24 digits).
    const __m256i low01 = _mm256_unpacklo_epi64(e0, e1);   // [0, 0, g2, g2] of numbers 0, 1
    const __m256i high01 = _mm256_unpackhi_epi64(e0, e1);  // [g1, g1, g3, g3]
    const __m256i low23 = _mm256_unpacklo_epi64(e2, e3);
    const __m256i high23 = _mm256_unpackhi_epi64(e2, e3);
    const __m256i first = _mm256_permute2x128_si256(high01, high23, 0x20);
    const __m256i second = _mm256_permute2x128_si256(low01, low23, 0x31);
    const __m256i last = _mm256_permute2x128_si256(high01, high23, 0x31);
    // w = (first * 10^8 + second) * 10^8 + last, within 64 bits when first <= 1843.
    d.fast &= ~static_cast<unsigned>(_mm256_movemask_pd(
        _mm256_castsi256_pd(_mm256_cmpgt_epi64(first, _mm256_set1_epi64x(1843)))));
    const __m256i e8 = _mm256_set1_epi64x(100000000);
    const __m256i upper = _mm256_add_epi64(_mm256_mul_epu32(first, e8), second);  // below 2^38
    d.w = _mm256_add_epi64(
        _mm256_add_epi64(_mm256_mul_epu32(upper, e8),
                         _mm256_slli_epi64(_mm256_mul_epu32(_mm256_srli_epi64(upper, 32), e8), 32)),
        last);
    return d;
}

// ---- short numbers (at most 15 bytes: orjson's and vLLM's rows), two to a vector ----
//
// Each number's text is the 16 bytes ending at its separator, two numbers to a vector (one in
// each 128-bit half); one vpshufb a half drops the point (the bytes up to it move one place right)
// and zeroes the bytes before the digits, with a control from a table by the point's place and the
// first digit's. The shape checks run on four numbers at once in 64-bit masks (16 bits a number:
// with at most 15 bytes, bit 0 of a segment is never text, so no shift by one carries one
// number's bits into the next's). At most 14 digits: w < 10^14 < 2^53, so the conversions are
// exact and the quotient w / 10^f the correctly rounded double.

constexpr std::size_t kMaxShortLength = 15;
constexpr std::ptrdiff_t kShortWindow = 16;

// vpshufb controls [point][first]: byte j takes byte j - 1 up to the point (at `point`) and byte j
// after it, and is zeroed before `first` (the first digit's place once the point is dropped; past
// 15, as a slow lane's may be, all zero).
struct short_controls {
    alignas(16) std::int8_t control[16][19][16];
};
constexpr short_controls make_short_controls() {
    short_controls t{};
    for (int point = 0; point < 16; ++point) {
        for (int first = 0; first < 19; ++first) {
            for (int j = 0; j < 16; ++j) {
                t.control[point][first][j] = static_cast<std::int8_t>(j < first    ? -128
                                                                      : j <= point ? j - 1
                                                                                   : j);
            }
        }
    }
    return t;
}
constexpr short_controls kShortControls = make_short_controls();

// The four numbers' bits from bit 15 of each segment (segments: numbers 0, 2, 1, 3).
inline unsigned numbers_of(std::uint64_t segment_highs) noexcept {
    return static_cast<unsigned>((segment_highs >> 15 & 1) | (segment_highs >> 46 & 2) |
                                 (segment_highs >> 29 & 4) | (segment_highs >> 60 & 8));
}

inline std::uint64_t pair_mask(__m256i a, __m256i b, char c) noexcept {
    return byte_mask(a, c) | byte_mask(b, c) << 32;
}

inline __m256i two_halves(const void* high, const void* low) noexcept {
    return _mm256_loadu2_m128i(static_cast<const __m128i*>(high), static_cast<const __m128i*>(low));
}

// Per 16-byte half: its 16 digit values read as one decimal integer w, in both qwords.
inline __m256i half_values(__m256i digit_values) noexcept {
    const __m256i pairs = _mm256_maddubs_epi16(digit_values, _mm256_set1_epi16(0x010a));
    const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi32(0x00010064));
    const __m256i eights = _mm256_add_epi64(_mm256_mul_epu32(quads, _mm256_set1_epi64x(10000)),
                                            _mm256_srli_epi64(quads, 32));
    const __m256i weighted =
        _mm256_mul_epu32(eights, _mm256_setr_epi64x(100000000, 1, 100000000, 1));
    return _mm256_add_epi64(weighted, _mm256_shuffle_epi32(weighted, 0x4e));
}

inline group_digits short_digits_of(const char* row, const number_group& g) noexcept {
    // Halves: numbers 0 and 2 in one vector, 1 and 3 in the other, so that the mask segments are
    // numbers 0, 2, 1, 3 and the values' unpack is in order.
    constexpr int kSegmentOf[4] = {0, 2, 1, 3};
    const char* window[4];
    unsigned length[4];
    std::uint64_t t = 0;
    // (The stops ascend: where the first number's window is in the row, all are.)
    const bool all_inside = g.stop[0] - row >= kShortWindow;
    unsigned inside = all_inside ? 0xfu : 0;
    for (int i = 0; i < 4; ++i) {
        const std::size_t n = static_cast<std::size_t>(g.stop[i] - g.start[i]);
        length[i] = n <= kMaxShortLength ? static_cast<unsigned>(n) : 0;
        if (all_inside) {
            window[i] = g.stop[i] - kShortWindow;
        } else {
            const bool in_row = g.stop[i] - row >= kShortWindow;
            inside |= unsigned{in_row} << i;
            window[i] = in_row ? g.stop[i] - kShortWindow : kZeros + kShortWindow;
        }
        t |= ((std::uint64_t{0xffff} << (16 - length[i])) & 0xffff) << (16 * kSegmentOf[i]);
    }
    const __m256i a = two_halves(window[2], window[0]);
    const __m256i b = two_halves(window[3], window[1]);
    const __m256i a_values = _mm256_sub_epi8(a, _mm256_set1_epi8('0'));
    const __m256i b_values = _mm256_sub_epi8(b, _mm256_set1_epi8('0'));
    const __m256i nine = _mm256_set1_epi8(9);
    const std::uint64_t digits =
        static_cast<std::uint32_t>(
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(a_values, nine), a_values))) |
        std::uint64_t{static_cast<std::uint32_t>(
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(b_values, nine), b_values)))}
            << 32;
    const std::uint64_t points = pair_mask(a, b, '.');
    const std::uint64_t zeros = pair_mask(a, b, '0');
    const std::uint64_t minus = pair_mask(a, b, '-');
    // The shape (as the avx512 level's lane_shape_of): a text's first byte, its sign, the first
    // byte of its integer part, its non-digits besides the sign (one, a '.', in a text of the
    // shape), the bits up to each segment's first point.
    const std::uint64_t first = t & ~(t << 1);
    const std::uint64_t sign = first & minus;
    const std::uint64_t integer_start = (first & ~sign) | (sign << 1);
    const std::uint64_t point = t & ~digits & ~sign;
    const std::uint64_t point_or_top = point | kSegmentHigh;
    const std::uint64_t through_point = point_or_top ^ (point_or_top - kSegmentLow);
    // Nonzero in a segment whose text is not of the shape: a second non-digit; one that is not a
    // '.'; no digit before it; a leading zero before a digit; the point last.
    const std::uint64_t misfit = (point & ~through_point) | (point & ~points) |
                                 ((point >> 1) & ~digits) |
                                 (zeros & integer_start & (digits >> 1)) | (point & kSegmentHigh);
    group_digits d;
    d.fast = numbers_of(nonzero_segments(point) & ~nonzero_segments(misfit)) & inside;
    d.negative = numbers_of(nonzero_segments(sign));
    const std::int8_t* control[4];
    for (int i = 0; i < 4; ++i) {
        // The point's place (15 where there is none: a slow lane, whose values are not kept).
        const unsigned at = lowest_bit((point >> (16 * kSegmentOf[i])) | 0x8000u);
        d.f[i] = 15 - at;
        // The first digit's place once the point is dropped: one past the text's first byte
        // (16 - length), two with a sign.
        control[i] = kShortControls.control[at][17 - length[i] + (d.negative >> i & 1)];
    }
    const __m256i a_digits = _mm256_shuffle_epi8(a_values, two_halves(control[2], control[0]));
    const __m256i b_digits = _mm256_shuffle_epi8(b_values, two_halves(control[3], control[1]));
    d.w = _mm256_unpacklo_epi64(half_values(a_digits), half_values(b_digits));
    return d;
}

// w correctly rounded to a double (AVX2 has no 64-bit integer conversion): its high and low 32
// bits as exact doubles (2^84 + high * 2^32 and 2^52 + low, from their bits), whose sum, less
// 2^84 + 2^52 first, is rounded once.
inline __m256d to_double(__m256i w) noexcept {
    const __m256i high = _mm256_or_si256(_mm256_srli_epi64(w, 32),
                                         _mm256_set1_epi64x(0x4530000000000000ll));  // 2^84
    const __m256i low = _mm256_blend_epi32(w, _mm256_set1_epi64x(0x4330000000000000ll), 0xaa);
    const __m256d high_part = _mm256_sub_pd(_mm256_castsi256_pd(high),
                                            _mm256_set1_pd(19342813118337666422669312.));  // + 2^52
    return _mm256_add_pd(high_part, _mm256_castsi256_pd(low));
}

// The sign bits of four lanes from a 4-bit mask.
struct sign_table {
    alignas(16) std::uint32_t float32[16][4];
};
constexpr sign_table make_signs() {
    sign_table t{};
    for (int m = 0; m < 16; ++m) {
        for (int i = 0; i < 4; ++i) t.float32[m][i] = (m >> i & 1) ? 0x80000000u : 0;
    }
    return t;
}
constexpr sign_table kSigns = make_signs();

// What converting a group gave: the values, and which of them took the fast path.
struct group_floats {
    __m128 values;
    unsigned fast;  // bit i: number i's value is in lane i
};

inline __m256d pow10_of(const group_digits& d) noexcept {
    return _mm256_setr_pd(kPow10Double[d.f[0]], kPow10Double[d.f[1]], kPow10Double[d.f[2]],
                          kPow10Double[d.f[3]]);
}

inline __m128 with_signs(__m128 magnitude, unsigned negative) noexcept {
    return _mm_or_ps(magnitude, _mm_castsi128_ps(_mm_load_si128(
                                    reinterpret_cast<const __m128i*>(kSigns.float32[negative]))));
}

inline __m256d with_signs(__m256d magnitude, unsigned negative) noexcept {
    const __m256i sign = _mm256_slli_epi64(
        _mm256_cvtepu32_epi64(
            _mm_load_si128(reinterpret_cast<const __m128i*>(kSigns.float32[negative]))),
        32);
    return _mm256_or_pd(magnitude, _mm256_castsi256_pd(sign));
}

inline group_floats convert(const group_digits& d, float*) noexcept {
    const __m256d quotient = _mm256_div_pd(to_double(d.w), pow10_of(d));
    // w above 2^53 was rounded on conversion: keep the lanes whose quotient is more than 8 units
    // of the last place from a float32 midpoint (low 29 bits 2^28), as the avx512 level does.
    const __m256i from_midpoint = _mm256_sub_epi64(
        _mm256_and_si256(_mm256_castpd_si256(quotient), _mm256_set1_epi64x(0x1fffffff)),
        _mm256_set1_epi64x((1 << 28) - 8));
    const __m256i near_midpoint =
        _mm256_andnot_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), from_midpoint),
                            _mm256_cmpgt_epi64(_mm256_set1_epi64x(17), from_midpoint));
    const __m256i rounded =
        _mm256_and_si256(near_midpoint, greater_u64(d.w, _mm256_set1_epi64x(1ll << 53)));
    const unsigned fast =
        d.fast & ~static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(rounded)));
    return group_floats{with_signs(_mm256_cvtpd_ps(quotient), d.negative), fast};
}

// ---- the float64 rows: Eisel-Lemire in four lanes (the avx512 level's convert_group_double) ----

// a * b = high * 2^64 + low, lane by lane, from four 32 x 32 -> 64-bit products.
inline void multiply_64x64(__m256i a, __m256i b, __m256i* high, __m256i* low) noexcept {
    const __m256i low32 = _mm256_set1_epi64x(0xffffffffll);
    const __m256i a_high = _mm256_srli_epi64(a, 32);
    const __m256i b_high = _mm256_srli_epi64(b, 32);
    const __m256i p00 = _mm256_mul_epu32(a, b);
    const __m256i p01 = _mm256_mul_epu32(a, b_high);
    const __m256i p10 = _mm256_mul_epu32(a_high, b);
    const __m256i p11 = _mm256_mul_epu32(a_high, b_high);
    // The middle 64 bits' sum: three terms below 2^32 each, no overflow.
    const __m256i middle =
        _mm256_add_epi64(_mm256_add_epi64(_mm256_srli_epi64(p00, 32), _mm256_and_si256(p01, low32)),
                         _mm256_and_si256(p10, low32));
    *high = _mm256_add_epi64(
        _mm256_add_epi64(p11, _mm256_srli_epi64(p01, 32)),
        _mm256_add_epi64(_mm256_srli_epi64(p10, 32), _mm256_srli_epi64(middle, 32)));
    *low = _mm256_or_si256(_mm256_slli_epi64(middle, 32), _mm256_and_si256(p00, low32));
}

struct group_doubles {
    __m256d values;
    unsigned fast;  // bit i: number i's value is in lane i
};

inline group_doubles convert(const group_digits& d, double*) noexcept {
    const __m256i one = _mm256_set1_epi64x(1);
    const __m256i zero = _mm256_setzero_si256();
    const __m256i w = d.w;
    const __m256i is_zero = _mm256_cmpeq_epi64(w, zero);
    // floor(log2 w) from the exponent of an exact double: high * 2^32 where w has high bits, else
    // low (AVX2 converts no 64-bit integer, and a rounded conversion could reach the next power of
    // two). A zero lane's count is past 63: its shift gives 0, and it is set apart.
    const __m256i high = _mm256_srli_epi64(w, 32);
    const __m256d high_part = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(high, _mm256_set1_epi64x(0x4530000000000000ll))),
        _mm256_set1_pd(19342813113834066795298816.));  // 2^84
    const __m256d low_part = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_blend_epi32(w, _mm256_set1_epi64x(0x4330000000000000ll), 0xaa)),
        _mm256_set1_pd(4503599627370496.));  // 2^52
    const __m256d exact =
        _mm256_blendv_pd(high_part, low_part, _mm256_castsi256_pd(_mm256_cmpeq_epi64(high, zero)));
    const __m256i biased = _mm256_srli_epi64(_mm256_castpd_si256(exact), 52);
    const __m256i leading_zeros = _mm256_sub_epi64(_mm256_set1_epi64x(1086), biased);
    const __m256i normalized = _mm256_sllv_epi64(w, leading_zeros);
    const __m256i pow10 = _mm256_setr_epi64x(static_cast<long long>(kPow10High.high[d.f[0]]),
                                             static_cast<long long>(kPow10High.high[d.f[1]]),
                                             static_cast<long long>(kPow10High.high[d.f[2]]),
                                             static_cast<long long>(kPow10High.high[d.f[3]]));
    __m256i xh, xl;
    multiply_64x64(normalized, pow10, &xh, &xl);
    // e = 64 - lz + floor(q log2 10), q = -f: floor(-f * 217706 / 2^16) = -ceil(f * 217706 / 2^16);
    // one less where the product's top bit is clear, which then moves up a place.
    const __m256i f = _mm256_setr_epi64x(d.f[0], d.f[1], d.f[2], d.f[3]);
    const __m256i ceil_log2 =
        _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epu32(f, _mm256_set1_epi64x(217706)),
                                           _mm256_set1_epi64x(65535)),
                          16);
    __m256i e =
        _mm256_sub_epi64(_mm256_sub_epi64(_mm256_set1_epi64x(64), leading_zeros), ceil_log2);
    const __m256i low_top = _mm256_cmpgt_epi64(xh, _mm256_set1_epi64x(-1));  // top bit clear
    xh = _mm256_blendv_epi8(
        xh, _mm256_or_si256(_mm256_slli_epi64(xh, 1), _mm256_srli_epi64(xl, 63)), low_top);
    e = _mm256_add_epi64(e, low_top);  // (all ones: -1)
    // round_to_double for a normal result: the round bit is bit 10, which the up to 2 units
    // missing from the high word must not reach.
    const __m256i undecided = _mm256_cmpgt_epi64(_mm256_and_si256(xh, _mm256_set1_epi64x(0x3ff)),
                                                 _mm256_set1_epi64x(0x3fd));
    const __m256i m = _mm256_add_epi64(_mm256_srli_epi64(xh, 11),
                                       _mm256_and_si256(_mm256_srli_epi64(xh, 10), one));
    // m == 2^53 (rounded up) carries into the exponent field.
    const __m256i magnitude =
        _mm256_add_epi64(_mm256_slli_epi64(_mm256_add_epi64(e, _mm256_set1_epi64x(1023)), 52),
                         _mm256_sub_epi64(m, _mm256_set1_epi64x(1ll << 52)));
    const __m256i kept = _mm256_andnot_si256(is_zero, magnitude);
    const unsigned fast =
        d.fast & ~static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(undecided)));
    return group_doubles{with_signs(_mm256_castsi256_pd(kept), d.negative), fast};
}

// The short path's values, w < 2^52 and f <= 14: w and 10^f are exact doubles, so the quotient is
// the correctly rounded double (Clinger's fast path), the float64 rows' value and the float32
// rows' double, for both row types.
inline __m256d exact_quotients(const group_digits& d) noexcept {
    const __m256d w = _mm256_sub_pd(
        _mm256_castsi256_pd(_mm256_or_si256(d.w, _mm256_set1_epi64x(0x4330000000000000ll))),
        _mm256_set1_pd(4503599627370496.));  // 2^52
    return _mm256_div_pd(w, pow10_of(d));
}
inline group_floats convert_exact(const group_digits& d, float*) noexcept {
    return group_floats{with_signs(_mm256_cvtpd_ps(exact_quotients(d)), d.negative), d.fast};
}
inline group_doubles convert_exact(const group_digits& d, double*) noexcept {
    return group_doubles{with_signs(exact_quotients(d), d.negative), d.fast};
}

// Where the two row types differ: the store (the scalar parser's part: number_row_lanes.hpp).
inline void store_lanes(__m128 values, float* out, std::size_t room) noexcept {
    if (room >= 4) {
        _mm_storeu_ps(out, values);
    } else {
        alignas(16) float lanes[4];
        _mm_store_ps(lanes, values);
        for (std::size_t i = 0; i < room; ++i) out[i] = lanes[i];
    }
}
inline void store_lanes(__m256d values, double* out, std::size_t room) noexcept {
    if (room >= 4) {
        _mm256_storeu_pd(out, values);
    } else {
        alignas(32) double lanes[4];
        _mm256_store_pd(lanes, values);
        for (std::size_t i = 0; i < room; ++i) out[i] = lanes[i];
    }
}

// A group's four values written at out[count..] (those below `capacity`), then each lane not in
// `fast` read by the scalar parser (read_slow_lanes).
template <class T, class vector>
inline bool store_group(vector values, unsigned fast, const number_group& g, const char* end,
                        T* out, std::size_t capacity, std::size_t count, number_row* row) noexcept {
    store_lanes(values, out + count, capacity > count ? capacity - count : 0);
    auto text = [&g](unsigned i, const char** start, const char** stop) {
        *start = g.start[i];
        *stop = g.stop[i];
    };
    return read_slow_lanes(~fast & 0xfu, text, end, out, capacity, count, row);
}

// The row from its first byte p (just past its '['), its numbers' digits taken as short ones
// (short_digits_of) or as any (digits_of).
template <bool short_numbers, class T>
number_row parse_row(const char* p, const char* end, T* out, std::size_t capacity) noexcept {
    const ieee_fp_environment ieee;
    const char* const row = p;
    std::size_t count = 0;
    row_separators separators(p, end);
    std::size_t found = 0;  // separators in the buffer, from the current number's on
    for (;;) {
        found = separators.fill(found);
        const char** stops = separators.stops();
        const std::size_t groups = found / 4;
        for (std::size_t k = 0; k < groups; ++k) {
            number_group g;
            g.start[0] = p;
            for (int i = 0; i < 4; ++i) {
                const char* at = stops[4 * k + i];
                g.stop[i] = at;
                // (Only the row's last separator is a ']', past which start[4] is not used.)
                g.start[i + 1] = at + 1 + (end - at > 1 && at[1] == ' ');
            }
            const auto v = short_numbers ? convert_exact(short_digits_of(row, g), out)
                                         : convert(digits_of(row, g), out);
            number_row result;
            if (!store_group(v.values, v.fast, g, end, out, capacity, count, &result)) {
                return result;
            }
            count += 4;
            if (*g.stop[3] == ']') return finished(g.stop[3] + 1, count);
            p = g.start[4];
        }
        // The numbers short of a group: the next chunk's first, or the scalar parser's where the
        // row's separators are all in (its last numbers, or an error).
        const std::size_t kept = found - 4 * groups;
        if (separators.closed() || found < row_separators::chunk) {
            return scalar_from(p, end, out, capacity, count);
        }
        for (std::size_t i = 0; i < kept; ++i) stops[i] = stops[4 * groups + i];
        found = kept;
    }
}

// The row's layout, from the commas in its first 64 bytes (or all of it, if shorter): numbers of
// at most 15 bytes (orjson's and vLLM's float32 rows) where there are more than 4, as the avx512
// level decides.
inline bool short_numbers(const char* p, const char* end) noexcept {
    if (end - p < 64) {
        unsigned commas = 0;
        for (const char* c = p; c < end; ++c) commas += *c == ',';
        return commas > 4;
    }
    const __m256i low = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i high = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    return bit_count(byte_mask(low, ',') | byte_mask(high, ',') << 32) > 4;
}

template <class T>
number_row parse_any_row(const char* p, const char* end, T* out, std::size_t capacity) noexcept {
    return short_numbers(p, end) ? parse_row<true>(p, end, out, capacity)
                                 : parse_row<false>(p, end, out, capacity);
}

}  // namespace

detail::number_row parse_number_row_avx2(const char* p, const char* end, float* out,
                                         std::size_t capacity) noexcept {
    return parse_any_row(p, end, out, capacity);
}

detail::number_row parse_number_row_double_avx2(const char* p, const char* end, double* out,
                                                std::size_t capacity) noexcept {
    return parse_any_row(p, end, out, capacity);
}

}  // namespace tensorb64

#endif
