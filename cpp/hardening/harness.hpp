// Shared by the hardening programs (edge_tests.cpp, fuzz_encode.cpp, fuzz_rows.cpp): exact-size
// heap buffers (so AddressSanitizer and valgrind catch one byte read or written too far), a
// textbook base64 encoder and a strict reference decoder, and the list of format pairs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace hardening {

namespace tb = tensorb64;

// A heap block of exactly `size` bytes (never 0: malloc(0) may return null), freed on scope exit.
struct exact_buffer {
    unsigned char* data;
    std::size_t size;
    explicit exact_buffer(std::size_t bytes)
        : data(static_cast<unsigned char*>(std::malloc(bytes ? bytes : 1))), size(bytes) {
        if (data == nullptr) std::abort();
    }
    exact_buffer(const exact_buffer&) = delete;
    exact_buffer& operator=(const exact_buffer&) = delete;
    ~exact_buffer() { std::free(data); }
    unsigned char* end() const { return data + size; }
};

inline std::string textbook_base64(const unsigned char* p, std::size_t n) {
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (std::size_t i = 0; i < n; i += 3) {
        const std::uint32_t a = p[i], b = i + 1 < n ? p[i + 1] : 0, c = i + 2 < n ? p[i + 2] : 0;
        const std::uint32_t w = a << 16 | b << 8 | c;
        out += alphabet[w >> 18 & 63];
        out += alphabet[w >> 12 & 63];
        out += i + 1 < n ? alphabet[w >> 6 & 63] : '=';
        out += i + 2 < n ? alphabet[w & 63] : '=';
    }
    return out;
}

// Strict RFC 4648 decoding (standard alphabet, '=' padding, zero pad bits); false if not canonical.
inline bool strict_decode(const char* s, std::size_t n, std::vector<unsigned char>* out) {
    out->clear();
    if (n % 4 != 0) return false;
    auto value = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        if (c == '+') return 62;
        if (c == '/') return 63;
        return -1;
    };
    for (std::size_t i = 0; i < n; i += 4) {
        const bool last = i + 4 == n;
        const int pad = last ? (s[i + 3] == '=') + (s[i + 2] == '=' && s[i + 3] == '=') : 0;
        int v[4] = {0, 0, 0, 0};
        for (int k = 0; k < 4 - pad; ++k) {
            v[k] = value(s[i + k]);
            if (v[k] < 0) return false;
        }
        const std::uint32_t w = std::uint32_t(v[0]) << 18 | std::uint32_t(v[1]) << 12 |
                                std::uint32_t(v[2]) << 6 | std::uint32_t(v[3]);
        out->push_back(static_cast<unsigned char>(w >> 16));
        if (pad < 2) out->push_back(static_cast<unsigned char>(w >> 8));
        if (pad < 1) out->push_back(static_cast<unsigned char>(w));
        if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff))) return false;  // pad bits set
    }
    return true;
}

inline constexpr tb::dtype all_dtypes[] = {tb::dtype::float32,       tb::dtype::float16,
                                           tb::dtype::bfloat16,      tb::dtype::float64,
                                           tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2};

struct format_pair {
    tb::element_format from, to;
};

// Every (source, target) the core accepts, in both byte orders on each side.
inline std::vector<format_pair> all_pairs() {
    std::vector<format_pair> pairs;
    for (tb::dtype from : all_dtypes)
        for (tb::dtype to : all_dtypes)
            if (tb::is_output_type(to))
                for (tb::byte_order fo : {tb::byte_order::little, tb::byte_order::big})
                    for (tb::byte_order to_order : {tb::byte_order::little, tb::byte_order::big})
                        pairs.push_back({{from, fo}, {to, to_order}});
    return pairs;
}

inline std::size_t encoded_length(std::size_t elements, tb::dtype to) {
    std::size_t length = 0;
    tb::encoded_size(elements * tb::dtype_size(to), &length);
    return length;
}

}  // namespace hardening
