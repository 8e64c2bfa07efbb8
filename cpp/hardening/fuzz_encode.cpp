// libFuzzer differential target. The first bytes of the input choose the formats, the element
// stride and the misalignment; the rest are the elements. Checks:
//   * every SIMD level this CPU has gives exactly the scalar level's text;
//   * the text is canonical base64 of the right length (a strict reference decoder accepts it);
//   * for identity encodings (same dtype in and out, any byte orders), decoding gives back the
//     input elements, byte-swapped when the orders differ;
//   * the input sits at the end of an exact-size heap block, so ASan catches any over-read.
#include <cstdio>

#include "harness.hpp"

using namespace hardening;

namespace {

const std::vector<format_pair>& pairs() {
    static const std::vector<format_pair> p = all_pairs();
    return p;
}

std::string encode_at(const unsigned char* data, std::size_t n, std::ptrdiff_t stride,
                      const format_pair& p) {
    const std::size_t length = encoded_length(n, p.to.type);
    exact_buffer out(length);
    char* outputs[] = {reinterpret_cast<char*>(out.data)};
    tb::encode_rows({data, 1, n, 0, stride, p.from}, p.to, outputs);
    return std::string(reinterpret_cast<char*>(out.data), length);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
    if (size < 3) return 0;
    const format_pair& p = pairs()[input[0] % pairs().size()];
    const unsigned stride_code = input[1] & 7;  // 0..3: stride 1..4 elements; 4..7: -1..-4
    const std::size_t misalign = input[2] & 15;
    const std::size_t esize = tb::dtype_size(p.from.type);
    const std::size_t n = (size - 3) / esize;
    const std::size_t step = (stride_code & 3) + 1;
    const bool backwards = stride_code & 4;
    const std::ptrdiff_t stride = static_cast<std::ptrdiff_t>(step * esize) * (backwards ? -1 : 1);

    // Lay the elements out with that stride in a block ending right after the last byte reached.
    const std::size_t span = n == 0 ? 0 : (n - 1) * step * esize + esize;
    exact_buffer block(misalign + span);
    std::memset(block.data, 0xEE, block.size);
    unsigned char* base = block.data + misalign;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t at = backwards ? (n - 1 - i) * step * esize : i * step * esize;
        std::memcpy(base + at, input + 3 + i * esize, esize);
    }
    const unsigned char* first = backwards && n > 0 ? base + (n - 1) * step * esize : base;

    const tb::simd_level initial = tb::active_simd_level();
    tb::force_simd_level(tb::simd_level::scalar);
    const std::string expected = encode_at(first, n, stride, p);
    for (tb::simd_level level : tb::available_simd_levels()) {
        if (level == tb::simd_level::scalar) continue;
        tb::force_simd_level(level);
        if (encode_at(first, n, stride, p) != expected) {
            std::fprintf(stderr, "%s != scalar: %s -> %s, n=%zu stride=%td misalign=%zu\n",
                         tb::to_string(level), tb::to_string(p.from.type), tb::to_string(p.to.type),
                         n, stride, misalign);
            std::abort();
        }
    }
    tb::force_simd_level(initial);

    std::vector<unsigned char> decoded;
    if (expected.size() != encoded_length(n, p.to.type) ||
        !strict_decode(expected.data(), expected.size(), &decoded) ||
        decoded.size() != n * tb::dtype_size(p.to.type)) {
        std::fprintf(stderr, "not canonical base64 of the right length\n");
        std::abort();
    }
    if (p.from.type == p.to.type) {
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t k = 0; k < esize; ++k) {
                const std::size_t from_k = p.from.order == p.to.order ? k : esize - 1 - k;
                if (decoded[i * esize + k] != input[3 + i * esize + from_k]) {
                    std::fprintf(stderr, "identity round trip differs at element %zu byte %zu\n", i,
                                 k);
                    std::abort();
                }
            }
        }
    }
    return 0;
}
