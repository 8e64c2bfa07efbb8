// The base64 alphabet (RFC 4648's standard one): the one table both directions are made from, the
// encoders' character pairs (base64_scalar.hpp) and SIMD lookups, and the decoder's values.
// Plain data: sharing it between translation units compiled with different flags is safe (only
// code is not; see host.hpp).
#pragma once

#include <array>

namespace tensorb64 {

inline constexpr char base64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// What base64_values holds for a byte that is not in the alphabet ('=' included).
inline constexpr unsigned char base64_invalid = 0xff;

// Each byte's 6-bit value in the alphabet, or base64_invalid.
inline constexpr std::array<unsigned char, 256> base64_values = [] {
    std::array<unsigned char, 256> values{};
    for (unsigned char& v : values) v = base64_invalid;
    for (unsigned i = 0; i < 64; ++i)
        values[static_cast<unsigned char>(base64_alphabet[i])] = static_cast<unsigned char>(i);
    return values;
}();

}  // namespace tensorb64
