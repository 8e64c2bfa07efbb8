// Portable base64 encoder (RFC 4648, standard alphabet, '=' padding, no line breaks).
//
// A 12-bit lookup table yields two output characters per lookup, so 6 input bytes cost four
// loads from an 8 KiB table: about twice the speed of the textbook 6-bit loop. SIMD levels use
// it for their tails.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "base64/alphabet.hpp"
#include "common/host.hpp"

namespace tensorb64 {

// Character pairs for every 12-bit value, in output order. Plain data: sharing it between
// translation units compiled with different flags is safe (only code is not).
inline constexpr std::array<std::array<char, 2>, 4096> base64_pairs = [] {
    std::array<std::array<char, 2>, 4096> pairs{};
    for (unsigned i = 0; i < 4096; ++i)
        pairs[i] = {base64_alphabet[i >> 6], base64_alphabet[i & 63]};
    return pairs;
}();

namespace {

inline void put_pair(char* out, unsigned index) noexcept {
    std::memcpy(out, base64_pairs[index].data(), 2);
}

// Encodes `n` bytes into encoded_size(n) characters.
inline void base64_encode_scalar(const unsigned char* in, std::size_t n, char* out) noexcept {
    // 8-byte big-endian loads of which 6 bytes are used: stop while 8 are still readable.
    while (n >= 8) {
        std::uint64_t v;
        std::memcpy(&v, in, 8);
        if (host_byte_order == byte_order::little) v = byteswap(v);
        put_pair(out, static_cast<unsigned>(v >> 52));
        put_pair(out + 2, static_cast<unsigned>(v >> 40) & 0xfffu);
        put_pair(out + 4, static_cast<unsigned>(v >> 28) & 0xfffu);
        put_pair(out + 6, static_cast<unsigned>(v >> 16) & 0xfffu);
        in += 6;
        out += 8;
        n -= 6;
    }
    while (n >= 3) {
        const unsigned v = (unsigned{in[0]} << 16) | (unsigned{in[1]} << 8) | in[2];
        put_pair(out, v >> 12);
        put_pair(out + 2, v & 0xfffu);
        in += 3;
        out += 4;
        n -= 3;
    }
    if (n == 0) return;
    const unsigned v = (unsigned{in[0]} << 16) | (n == 2 ? unsigned{in[1]} << 8 : 0u);
    put_pair(out, v >> 12);
    out[2] = n == 2 ? base64_alphabet[(v >> 6) & 63] : '=';
    out[3] = '=';
}

}  // namespace
}  // namespace tensorb64
