// Integer arithmetic shared by the float printer (float_text/) and the number parser (json/): the
// high half of a 64x64 -> 128-bit product, leading zero bits, powers of ten and decimal lengths.
// Internal linkage, as every header under cpp/src (see host.hpp).
#pragma once

#include <cstdint>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

namespace tensorb64 {
namespace {
namespace integer_math {

// TENSORB64_NO_INT128 forces the portable version (the tests build it that way too).
inline std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__) && !defined(TENSORB64_NO_INT128)
    __extension__ typedef unsigned __int128 u128;
    return static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
#elif defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_ARM64)) && \
    !defined(TENSORB64_NO_INT128)
    return __umulh(a, b);
#else
    const std::uint64_t a_lo = a & 0xffffffffu, a_hi = a >> 32;
    const std::uint64_t b_lo = b & 0xffffffffu, b_hi = b >> 32;
    const std::uint64_t lo_lo = a_lo * b_lo, hi_lo = a_hi * b_lo;
    const std::uint64_t lo_hi = a_lo * b_hi, hi_hi = a_hi * b_hi;
    const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xffffffffu) + lo_hi;
    return hi_hi + (hi_lo >> 32) + (cross >> 32);
#endif
}

// Leading zero bits of a nonzero value.
inline int leading_zeros(std::uint64_t v) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_clzll(v);
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64))
    unsigned long index;
    _BitScanReverse64(&index, v);
    return 63 - static_cast<int>(index);
#else
    int n = 0;
    while (!(v & (std::uint64_t{1} << 63))) {
        v <<= 1;
        ++n;
    }
    return n;
#endif
}

constexpr std::uint64_t kPow10[20] = {1ull,
                                      10ull,
                                      100ull,
                                      1000ull,
                                      10000ull,
                                      100000ull,
                                      1000000ull,
                                      10000000ull,
                                      100000000ull,
                                      1000000000ull,
                                      10000000000ull,
                                      100000000000ull,
                                      1000000000000ull,
                                      10000000000000ull,
                                      100000000000000ull,
                                      1000000000000000ull,
                                      10000000000000000ull,
                                      100000000000000000ull,
                                      1000000000000000000ull,
                                      10000000000000000000ull};

// Decimal digits of 0 < v < 10^19.
inline int decimal_length(std::uint64_t v) noexcept {
    const int approx = ((64 - leading_zeros(v)) * 1233) >> 12;  // 1233 / 4096 ~ log10(2)
    return approx + (v >= kPow10[approx]);
}

}  // namespace integer_math
}  // namespace
}  // namespace tensorb64
