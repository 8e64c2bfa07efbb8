// The AVX-512 JSON number-row parser (the avx512 level's third entry, kernels.hpp): numbers eight
// at a time. The row's separators (',' and ']') come from 64-byte compares; each number's text,
// from past its ',' (and the one space of json.dumps's ", ") up to its separator, is loaded into
// one 32-byte half of a vector (masked: nothing at or past `end` is read) and checked in bulk
// against the common shape -?(0|[1-9][0-9]*)\.[0-9]+ with at most 24 digits and 22 after the point;
// vpermb drops the point and right-aligns the digits, multiply-adds (vpmaddubsw, vpmaddwd,
// vpmuludq) make them integers, and the value is w / 10^f in double lanes: exact division,
// correctly rounded (Clinger's fast path), when w <= 2^53; otherwise within 3 units of the last
// place of the correctly rounded double, which gives the same float32 unless the quotient lies
// within 8 double units of a float32 midpoint (about 1 in 2^25). Then vcvtpd2ps: double, then
// float32, as the reference. Any number outside that shape or margin (exponents, integers, NaN,
// whitespace, errors) goes through the scalar parser: the number alone when it ends at its
// separator, otherwise the rest of the row, so that values, ends and errors equal the scalar
// level's (number_parser_tests: every level against the scalar one).
//
// The double arithmetic runs under ieee_fp_environment (round to nearest even, no FTZ/DAZ),
// whatever the caller's settings.
//
// Compiled with the avx512 row's flags (cpp/CMakeLists.txt, the same as kernel_avx512.cpp); on
// other targets it compiles to a stub whose avx512_number_parser() returns nullptr.
#if defined(__AVX512F__) && (defined(__x86_64__) || defined(_M_X64))
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC bug 105593 (as kernel_avx512.cpp): its own _mm512_undefined_*() in the intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

#include <cstdint>

#include "compiled_features.hpp"
#include "fp_environment.hpp"
#include "kernels.hpp"
#include "number_parser.hpp"

namespace tensorb64 {
namespace {

using detail::number_row;

// The index of the lowest set bit of a nonzero value (bsf: no BMI1 needed, which the avx512 row
// does not require).
inline unsigned lowest_bit(std::uint64_t v) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long index;
    _BitScanForward64(&index, v);
    return static_cast<unsigned>(index);
#else
    return static_cast<unsigned>(__builtin_ctzll(v));
#endif
}

constexpr std::size_t kMaxFastDigits = 24;    // three 8-digit groups
constexpr std::size_t kMaxFastFraction = 22;  // 10^22 is the largest exact double power of ten

// kDigitIndex[f][j] = j - (j <= 31 - f): for a number of f fraction digits whose text ends at byte
// L of its 32-byte window, byte j of the right-aligned digits is text byte kDigitIndex[f][j] +
// L - 32 (the integer digits one further left, over the point).
struct digit_index_table {
    alignas(32) std::int8_t index[kMaxFastFraction + 1][32];
};
constexpr digit_index_table make_digit_index() {
    digit_index_table t{};
    for (int f = 0; f <= static_cast<int>(kMaxFastFraction); ++f) {
        for (int j = 0; j < 32; ++j) t.index[f][j] = static_cast<std::int8_t>(j - (j <= 31 - f));
    }
    return t;
}
constexpr digit_index_table kDigitIndex = make_digit_index();

alignas(64) constexpr double kPow10Double[24] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e22};

// The positions of the row's ',' and ']' bytes, in order, from 64-byte blocks (the last one a
// masked load that stops at `end`).
class separator_scanner {
public:
    separator_scanner(const char* p, const char* end) noexcept : block_(p), end_(end) { load(); }

    // The next separator, or nullptr if there is none before `end`.
    const char* next() noexcept {
        while (bits_ == 0) {
            if (end_ - block_ <= 64) return nullptr;
            block_ += 64;
            load();
        }
        const char* at = block_ + lowest_bit(bits_);
        bits_ &= bits_ - 1;
        return at;
    }

private:
    void load() noexcept {
        const std::size_t left = static_cast<std::size_t>(end_ - block_);
        const __mmask64 in_text = left >= 64 ? ~__mmask64{0} : (__mmask64{1} << left) - 1;
        const __m512i bytes = _mm512_maskz_loadu_epi8(in_text, block_);
        bits_ = _mm512_mask_cmpeq_epi8_mask(in_text, bytes, _mm512_set1_epi8(',')) |
                _mm512_mask_cmpeq_epi8_mask(in_text, bytes, _mm512_set1_epi8(']'));
    }

    const char* block_;
    const char* end_;
    std::uint64_t bits_ = 0;
};

// Eight numbers' texts: number i is [start[i], stop[i]), ending at its separator stop[i]. A
// number starts one byte past a ',' or, after ", " (Python's json.dumps layout), two.
struct number_group {
    const char* start[9];
    const char* stop[8];
};

// What converting a group gave: the float32 values, and which of them took the fast path.
struct group_values {
    __m256 values;
    unsigned fast;  // bit i: number i's value is in lane i
};

// One 32-byte half's shape checks (text length `length`, masks of its first 32 bytes): whether
// it is -?(0|[1-9][0-9]*)\.[0-9]+ with the fast path's limits, and its digit-index inputs.
struct half_shape {
    bool fast;
    unsigned fraction;  // digits after the point
    unsigned digits;    // all digits
    unsigned length;
};

inline half_shape shape_of(std::size_t length, std::uint32_t non_digits, std::uint32_t points,
                           std::uint32_t zeros, std::uint32_t minus) noexcept {
    half_shape s{false, 0, 0, 32};
    if (length > kMaxFastDigits + 2 || points == 0) return s;
    const unsigned n = static_cast<unsigned>(length);
    const unsigned sign = minus & 1;
    const unsigned point = lowest_bit(points);
    const std::uint32_t in_text = (std::uint32_t{1} << n) - 1;
    // Exactly one point and maybe the sign among the text's non-digits; at least one digit
    // before the point and one after; a leading zero only alone before the point.
    if ((non_digits & in_text) != ((points & (0u - points)) | sign)) return s;
    if (point <= sign || point + 1 >= n) return s;
    if (((zeros >> sign) & 1) != 0 && point != sign + 1) return s;
    const unsigned fraction = n - 1 - point;
    const unsigned digits = n - 1 - sign;
    if (fraction > kMaxFastFraction || digits > kMaxFastDigits) return s;
    return half_shape{true, fraction, digits, n};
}

inline __m512i two_halves(__m256i low, __m256i high) noexcept {
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
}

// Numbers 2k and 2k + 1 of a group: their 8-digit groups as integers, lanes [0, g1, g2, g3] for
// each (g3 the last 8 digits), and what the shape checks found.
inline __m512i digit_groups(const number_group& g, int k, unsigned* fast, unsigned* negative,
                            std::uint64_t* fractions) noexcept {
    const char* a = g.start[2 * k];
    const char* b = g.start[2 * k + 1];
    const std::size_t length_a = static_cast<std::size_t>(g.stop[2 * k] - a);
    const std::size_t length_b = static_cast<std::size_t>(g.stop[2 * k + 1] - b);
    const __mmask32 window_a = length_a >= 32 ? ~__mmask32{0} : (__mmask32{1} << length_a) - 1;
    const __mmask32 window_b = length_b >= 32 ? ~__mmask32{0} : (__mmask32{1} << length_b) - 1;
    const __m512i text =
        two_halves(_mm256_maskz_loadu_epi8(window_a, a), _mm256_maskz_loadu_epi8(window_b, b));
    const __m512i values = _mm512_sub_epi8(text, _mm512_set1_epi8('0'));
    const std::uint64_t non_digits = _mm512_cmpgt_epu8_mask(values, _mm512_set1_epi8(9));
    const std::uint64_t points = _mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('.'));
    const std::uint64_t zeros = _mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('0'));
    const std::uint64_t minus = _mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('-'));
    const half_shape sa = shape_of(
        length_a, static_cast<std::uint32_t>(non_digits), static_cast<std::uint32_t>(points),
        static_cast<std::uint32_t>(zeros), static_cast<std::uint32_t>(minus));
    const half_shape sb =
        shape_of(length_b, static_cast<std::uint32_t>(non_digits >> 32),
                 static_cast<std::uint32_t>(points >> 32), static_cast<std::uint32_t>(zeros >> 32),
                 static_cast<std::uint32_t>(minus >> 32));
    *fast |= (unsigned{sa.fast} | unsigned{sb.fast} << 1) << (2 * k);
    *negative |= ((static_cast<unsigned>(minus) & 1) | (static_cast<unsigned>(minus >> 31) & 2))
                 << (2 * k);
    *fractions |= (std::uint64_t{sa.fraction} | std::uint64_t{sb.fraction} << 8) << (16 * k);
    // Right-align each half's digits (vpermb over the whole vector: the high half's indices +32),
    // zeros above them.
    const __m512i index = _mm512_add_epi8(
        two_halves(
            _mm256_load_si256(reinterpret_cast<const __m256i*>(kDigitIndex.index[sa.fraction])),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(kDigitIndex.index[sb.fraction]))),
        two_halves(_mm256_set1_epi8(static_cast<char>(static_cast<int>(sa.length) - 32)),
                   _mm256_set1_epi8(static_cast<char>(sb.length))));
    const std::uint64_t digit_slots =
        (sa.fast ? ~std::uint64_t{0} << (32 - sa.digits) & 0xffffffffull : 0) |
        (sb.fast ? ~std::uint64_t{0} << (64 - sb.digits) : 0);
    const __m512i digits = _mm512_maskz_permutexvar_epi8(digit_slots, index, values);
    // Pairs, quads, eights: each lane's higher digits first in memory.
    const __m512i pairs = _mm512_maddubs_epi16(digits, _mm512_set1_epi16(0x010a));
    const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00010064));
    return _mm512_add_epi64(_mm512_mul_epu32(quads, _mm512_set1_epi64(10000)),
                            _mm512_srli_epi64(quads, 32));
}

inline group_values convert_group(const number_group& g) noexcept {
    unsigned fast = 0, negative = 0;
    std::uint64_t fractions = 0;
    const __m512i e0 = digit_groups(g, 0, &fast, &negative, &fractions);
    const __m512i e1 = digit_groups(g, 1, &fast, &negative, &fractions);
    const __m512i e2 = digit_groups(g, 2, &fast, &negative, &fractions);
    const __m512i e3 = digit_groups(g, 3, &fast, &negative, &fractions);
    // Transpose: the i-th 8-digit groups of the eight numbers into one vector each.
    const __m512i g12 = _mm512_set_epi64(14, 10, 6, 2, 13, 9, 5, 1);
    const __m512i g3 = _mm512_set_epi64(15, 11, 7, 3, 15, 11, 7, 3);
    const __m512i low4 = _mm512_set_epi64(11, 10, 9, 8, 3, 2, 1, 0);
    const __m512i high4 = _mm512_set_epi64(15, 14, 13, 12, 7, 6, 5, 4);
    const __m512i g12_01 = _mm512_permutex2var_epi64(e0, g12, e1);
    const __m512i g12_23 = _mm512_permutex2var_epi64(e2, g12, e3);
    const __m512i first = _mm512_permutex2var_epi64(g12_01, low4, g12_23);
    const __m512i second = _mm512_permutex2var_epi64(g12_01, high4, g12_23);
    const __m512i last = _mm512_permutex2var_epi64(_mm512_permutex2var_epi64(e0, g3, e1), low4,
                                                   _mm512_permutex2var_epi64(e2, g3, e3));
    // w = first * 10^16 + second * 10^8 + last, within 64 bits when first <= 1843.
    fast &= _mm512_cmple_epu64_mask(first, _mm512_set1_epi64(1843));
    const __m512i w = _mm512_add_epi64(
        _mm512_add_epi64(_mm512_mullo_epi64(first, _mm512_set1_epi64(10000000000000000ll)),
                         _mm512_mul_epu32(second, _mm512_set1_epi64(100000000))),
        last);
    // w / 10^f.
    const __m512i f = _mm512_cvtepu8_epi64(_mm_cvtsi64_si128(static_cast<long long>(fractions)));
    const __m512d pow_low =
        _mm512_permutex2var_pd(_mm512_load_pd(kPow10Double), f, _mm512_load_pd(kPow10Double + 8));
    const __m512d pow_high = _mm512_permutexvar_pd(f, _mm512_load_pd(kPow10Double + 16));
    const __m512d divisor =
        _mm512_mask_blend_pd(_mm512_cmpge_epu64_mask(f, _mm512_set1_epi64(16)), pow_low, pow_high);
    const __m512d quotient = _mm512_div_pd(_mm512_cvtepu64_pd(w), divisor);
    // w above 2^53 was rounded on conversion: keep the lanes whose quotient is more than 8 units
    // of the last place from a float32 midpoint (low 29 bits 2^28).
    const __m512i low29 =
        _mm512_and_si512(_mm512_castpd_si512(quotient), _mm512_set1_epi64(0x1fffffff));
    const __mmask8 near_midpoint = _mm512_cmple_epu64_mask(
        _mm512_sub_epi64(low29, _mm512_set1_epi64((1 << 28) - 8)), _mm512_set1_epi64(16));
    fast &= ~static_cast<unsigned>(
        _mm512_mask_cmpgt_epu64_mask(near_midpoint, w, _mm512_set1_epi64(1ll << 53)));
    const __m256i magnitude = _mm256_castps_si256(_mm512_cvtpd_ps(quotient));
    const __m256i signed_values =
        _mm256_mask_or_epi32(magnitude, static_cast<__mmask8>(negative), magnitude,
                             _mm256_set1_epi32(static_cast<int>(0x80000000u)));
    return group_values{_mm256_castsi256_ps(signed_values), fast & 0xffu};
}

inline number_row finished(const char* end, std::size_t count) noexcept {
    number_row row;
    row.end = end;
    row.count = count;
    return row;
}

number_row parse_number_row_avx512(const char* p, const char* end, float* out,
                                   std::size_t capacity) noexcept {
    const ieee_fp_environment ieee;
    separator_scanner separators(p, end);
    std::size_t count = 0;
    number_group g;
    for (;;) {
        g.start[0] = p;
        int n = 0;
        bool last = false;
        while (n < 8) {
            const char* at = separators.next();
            if (at == nullptr) break;
            g.stop[n] = at;
            g.start[++n] = at + 1 + (*at == ',' && end - at > 1 && at[1] == ' ');
            if (*at == ']') {
                last = true;
                break;
            }
        }
        if (n < 8) return detail::parse_number_row_scalar_from(p, end, out, capacity, count);
        const group_values v = convert_group(g);
        const std::size_t room = capacity > count ? capacity - count : 0;
        if (room >= 8) {
            _mm256_storeu_ps(out + count, v.values);
        } else if (room > 0) {
            _mm256_mask_storeu_ps(out + count, static_cast<__mmask8>((1u << room) - 1), v.values);
        }
        for (unsigned slow = ~v.fast & 0xffu; slow != 0; slow &= slow - 1) {
            const unsigned i = lowest_bit(slow);
            float value;
            const char* error_at;
            const char* expected;
            const char* next =
                detail::parse_one_float32(g.start[i], end, &value, &error_at, &expected);
            if (next != g.stop[i]) {
                return detail::parse_number_row_scalar_from(g.start[i], end, out, capacity,
                                                            count + i);
            }
            if (i < room) out[count + i] = value;
        }
        count += 8;
        if (last) return finished(g.start[8], count);
        p = g.start[8];
    }
}

}  // namespace

static_assert(compiled_with(kernel_for(simd_level::avx512).required),
              "number_parser_avx512.cpp's flags");

number_row_parser avx512_number_parser() noexcept { return parse_number_row_avx512; }

}  // namespace tensorb64

#else  // the stub

#include "kernels.hpp"

namespace tensorb64 {
number_row_parser avx512_number_parser() noexcept { return nullptr; }
}  // namespace tensorb64

#endif
