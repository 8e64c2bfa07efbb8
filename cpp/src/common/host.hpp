// Byte swapping, portable across GCC, Clang and MSVC.
//
// Every header under cpp/src is included by each CPU level's translation units, which are
// compiled with that level's instruction-set flags. Everything here therefore has internal linkage
// (an anonymous namespace): a shared inline function compiled with AVX-512 flags could otherwise
// be the copy the linker keeps for baseline code, and crash an older CPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tensorb64/tensorb64.hpp"

#if defined(_MSC_VER) && !defined(__clang__)
#include <stdlib.h>
#endif

namespace tensorb64 {
namespace {

inline std::uint16_t byteswap(std::uint16_t v) noexcept {
    return static_cast<std::uint16_t>((v >> 8) | (v << 8));
}
inline std::uint32_t byteswap(std::uint32_t v) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
    return _byteswap_ulong(v);
#else
    return __builtin_bswap32(v);
#endif
}
inline std::uint64_t byteswap(std::uint64_t v) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
    return _byteswap_uint64(v);
#else
    return __builtin_bswap64(v);
#endif
}

// Reverses the bytes of each of `n` elements of `size` bytes, in place.
inline void swap_elements(unsigned char* data, std::size_t n, std::size_t size) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        unsigned char* e = data + i * size;
        for (std::size_t a = 0, b = size - 1; a < b; ++a, --b) {
            const unsigned char t = e[a];
            e[a] = e[b];
            e[b] = t;
        }
    }
}

}  // namespace
}  // namespace tensorb64
