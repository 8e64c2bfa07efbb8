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
//
// Each kernel in a file of its own, included here: float_text_lanes.hpp (the lane arithmetic they
// share), float_text_x8.hpp (the eight-lane Schubfach), float_text_templates.hpp (sixteen texts
// from a template), float_text_shortest_x16.hpp and float_text_repr_x16.hpp (the sixteen-lane
// writers).
#include "levels/compiled_features.hpp"
#if TENSORB64_COMPILES_AVX512
#include <immintrin.h>

#include "levels/avx512/avx512.hpp"
#include "levels/avx512/float_text_lanes.hpp"
#include "levels/avx512/float_text_repr_x16.hpp"
#include "levels/avx512/float_text_shortest_x16.hpp"
#include "levels/avx512/float_text_templates.hpp"
#include "levels/avx512/float_text_x8.hpp"

namespace tensorb64 {
namespace {

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

// The sixteen-lane writers (float_text_shortest_x16.hpp, float_text_repr_x16.hpp), one struct
// each: `fast` whether a group of sixteen magnitudes takes the sixteen-lane path, `digits` their
// digits there, `write` the texts from them (m of the values real), `other` a group that does not
// take it (written eight values at a time).

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
    write_values_f32_avx512, write_values_f64_avx512, write_values_orjson_f32_avx512,
    write_values_orjson_f64};

}  // namespace tensorb64

#endif
