// Bit-exact scalar conversions between float32 and the other element types.
//
// They reproduce torch 2.13's `.to()` on the CPU: round to nearest even everywhere, float16 and
// float8_e5m2 overflow to infinity, float8_e4m3fn saturates at +-448 (infinity included), and
// float64 narrows through float32 (torch rounds twice too). Integer arithmetic only, so that a
// process running with flush-to-zero or denormals-are-zero set still gets exact subnormals.
//
// NaNs: torch's NaN bit patterns depend on the code path it happens to take (its vectorised
// loop and its scalar tail disagree for float16 -> float32 and float64 -> bfloat16); these
// functions follow its vectorised path, which is what every bulk conversion sees:
//   to float32:  float16 NaNs are quieted (like F16C), bfloat16 NaNs are kept as they are,
//                float64 NaNs are quieted and keep the top of their payload (like cvtsd2ss);
//   to float16:  quieted, sign and top of payload kept (like F16C);
//   to bfloat16: 0xFFFF, except 0x7FC0 when the source is float16 or float8;
//   to float8:   sign | 0x7F.
#pragma once

#include <cstdint>

#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {
namespace {

// Shifts `v` right by `shift` bits (1..63), rounding to nearest, ties to even.
inline std::uint64_t shift_round_even(std::uint64_t v, unsigned shift) noexcept {
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    const std::uint64_t rest = v & ((half << 1) - 1);
    std::uint64_t q = v >> shift;
    if (rest > half || (rest == half && (q & 1))) ++q;
    return q;
}

// ---- widening to float32 bits ----

inline std::uint32_t f16_to_f32(std::uint16_t h) noexcept {
    const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
    std::uint32_t exponent = (h >> 10) & 0x1fu;
    std::uint32_t mantissa = h & 0x3ffu;
    if (exponent == 0x1f) {
        return sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x400000u : 0u);
    }
    if (exponent == 0) {
        if (mantissa == 0) return sign;
        exponent = 1;
        while (!(mantissa & 0x400u)) {  // normalise the subnormal
            mantissa <<= 1;
            --exponent;
        }
        mantissa &= 0x3ffu;
    }
    return sign | ((exponent + 112) << 23) | (mantissa << 13);
}

inline std::uint32_t bf16_to_f32(std::uint16_t b) noexcept { return std::uint32_t{b} << 16; }

// float8_e4m3fn: no infinities; S.1111.111 is NaN, which torch widens to sign | 0x7ff00000
// (c10's fp8e4m3fn_to_fp32_bits ORs an all-ones exponent into the widened bits of 0x7f).
inline std::uint32_t e4m3fn_to_f32(std::uint8_t c) noexcept {
    const std::uint32_t sign = std::uint32_t{c & 0x80u} << 24;
    std::uint32_t exponent = (c >> 3) & 0xfu;
    std::uint32_t mantissa = c & 0x7u;
    if ((c & 0x7fu) == 0x7fu) return sign | 0x7ff00000u;
    if (exponent == 0) {
        if (mantissa == 0) return sign;
        exponent = 1;
        while (!(mantissa & 0x8u)) {  // normalise the subnormal
            mantissa <<= 1;
            --exponent;
        }
        mantissa &= 0x7u;
    }
    return sign | ((exponent + 120) << 23) | (mantissa << 20);
}

// float8_e5m2 is float16 with its low byte cut off: torch widens it through float16, so NaNs are
// quieted and keep their payload, as f16_to_f32 does.
inline std::uint32_t e5m2_to_f32(std::uint8_t c) noexcept {
    return f16_to_f32(static_cast<std::uint16_t>(std::uint16_t{c} << 8));
}

inline std::uint32_t f64_to_f32(std::uint64_t d) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(d >> 32) & 0x80000000u;
    const std::uint64_t a = d & 0x7fffffffffffffffull;
    if (a > 0x7ff0000000000000ull) {
        return sign | 0x7fc00000u | (static_cast<std::uint32_t>(a >> 29) & 0x7fffffu);
    }
    // Half an ulp above FLT_MAX and up (a tie rounds to the even neighbour, infinity).
    if (a >= 0x47effffff0000000ull) return sign | 0x7f800000u;
    const int exponent = static_cast<int>(a >> 52) - 1023 + 127;
    if (exponent >= 1) {
        return sign | static_cast<std::uint32_t>(
                          shift_round_even(a - (std::uint64_t{1023 - 127} << 52), 29));
    }
    // float64 subnormals, and anything below half float32's smallest subnormal, become zero.
    const unsigned shift = static_cast<unsigned>(29 + 1 - exponent);
    if (a < (std::uint64_t{1} << 52) || shift > 63) return sign;
    const std::uint64_t mantissa = (a & 0xfffffffffffffull) | (std::uint64_t{1} << 52);
    return sign | static_cast<std::uint32_t>(shift_round_even(mantissa, shift));
}

// An integer's float32 bits, rounded to nearest even (as torch's and numpy's int -> float32
// casts round), in integer arithmetic so that no FP mode can change it.
template <class Int>
inline std::uint32_t integer_to_f32(Int value) noexcept {
    const bool negative = value < 0;
    // The magnitude, computed in unsigned arithmetic so that INT64_MIN has one too.
    const std::uint64_t magnitude = negative ? std::uint64_t{0} - static_cast<std::uint64_t>(value)
                                             : static_cast<std::uint64_t>(value);
    const std::uint32_t sign = negative ? 0x80000000u : 0u;
    if (magnitude == 0) return sign;
    int top = 63;  // the highest set bit
    while (!((magnitude >> top) & 1u)) --top;
    if (top <= 23) {  // exact: shift the leading 1 to bit 23
        const std::uint32_t mantissa = static_cast<std::uint32_t>(magnitude << (23 - top));
        return sign | (static_cast<std::uint32_t>(top + 127) << 23) | (mantissa & 0x7fffffu);
    }
    // 24 significant bits, rounded; a carry out of the mantissa moves into the exponent as it
    // should.
    const std::uint64_t rounded = shift_round_even(magnitude, static_cast<unsigned>(top - 23));
    return sign | ((static_cast<std::uint32_t>(top + 127) << 23) +
                   static_cast<std::uint32_t>(rounded) - 0x800000u);
}

// ---- narrowing from float32 bits ----

// float32 -> a small binary float with `E` exponent and `M` mantissa bits, magnitude only.
// Returns the rounded magnitude; values past the largest finite one come back unclamped
// (callers decide between infinity and saturation). `a` is finite: a < 0x7f800000.
template <unsigned E, unsigned M>
inline std::uint32_t round_magnitude(std::uint32_t a) noexcept {
    constexpr int bias = (1 << (E - 1)) - 1;
    constexpr unsigned drop = 23 - M;
    const int exponent = static_cast<int>(a >> 23) - 127 + bias;
    if (exponent >= 1) {
        return static_cast<std::uint32_t>(
            shift_round_even(a - (std::uint32_t{127 - bias} << 23), drop));
    }
    const unsigned shift = drop + static_cast<unsigned>(1 - exponent);
    if (shift > 25 || a < 0x00800000u) return 0;  // float32 subnormals are far below any of these
    const std::uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
    return static_cast<std::uint32_t>(shift_round_even(mantissa, shift));
}

inline std::uint16_t f32_to_f16(std::uint32_t f) noexcept {
    const std::uint32_t sign = (f >> 16) & 0x8000u;
    const std::uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a == 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u);
    const std::uint32_t m = round_magnitude<5, 10>(a);
    return static_cast<std::uint16_t>(sign | (m >= 0x7c00u ? 0x7c00u : m));
}

inline std::uint16_t f32_to_bf16(std::uint32_t f, std::uint16_t nan) noexcept {
    if ((f & 0x7fffffffu) > 0x7f800000u) return nan;
    // The carry out of the mantissa rounds FLT_MAX's neighbourhood up to infinity, as it should.
    return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

inline std::uint8_t f32_to_e4m3fn(std::uint32_t f) noexcept {
    const std::uint32_t sign = (f >> 24) & 0x80u;
    const std::uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);
    if (a == 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7eu);
    const std::uint32_t m = round_magnitude<4, 3>(a);
    return static_cast<std::uint8_t>(sign | (m > 0x7eu ? 0x7eu : m));  // 0x7f is NaN
}

inline std::uint8_t f32_to_e5m2(std::uint32_t f) noexcept {
    const std::uint32_t sign = (f >> 24) & 0x80u;
    const std::uint32_t a = f & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7fu);
    if (a == 0x7f800000u) return static_cast<std::uint8_t>(sign | 0x7cu);
    const std::uint32_t m = round_magnitude<5, 2>(a);
    return static_cast<std::uint8_t>(sign | (m >= 0x7cu ? 0x7cu : m));
}

// The bfloat16 NaN that torch produces from a NaN of `source` type.
inline std::uint16_t bf16_nan_from(dtype source) noexcept {
    const bool via_float16_path =
        source == dtype::float16 || source == dtype::float8_e4m3fn || source == dtype::float8_e5m2;
    return via_float16_path ? 0x7fc0 : 0xffff;
}

}  // namespace
}  // namespace tensorb64
