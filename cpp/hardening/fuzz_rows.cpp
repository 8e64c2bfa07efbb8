// libFuzzer target for batches of rows: odd row and element strides (negative, zero, overlapping),
// many rows, and threads > 1 against threads = 1. The first bytes choose the format pair, the
// shape, the strides (in elements) and the thread count; the rest fill the reachable memory,
// which is an exact-size heap block (ASan catches a read outside it). Zero and small row strides
// let a small input make batches large enough (256 KiB of text per thread) for the core to split.
#include <algorithm>
#include <cstdio>

#include "harness.hpp"

using namespace hardening;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* input, std::size_t size) {
    if (size < 8) return 0;
    static const std::vector<format_pair> pairs = all_pairs();
    const format_pair& p = pairs[input[0] % pairs.size()];
    const std::size_t rows = 1 + (input[1] | (input[2] & 0x0f) << 8);  // 1..4096
    const std::size_t n = (input[3] | (input[2] >> 4) << 8) % 1100;    // 0..1099
    const std::ptrdiff_t row_step =
        static_cast<std::int8_t>(input[4]) % 9;  // -8..8 elements (0: broadcast)
    const std::ptrdiff_t el_step = static_cast<std::int8_t>(input[5]) % 4;  // -3..3 elements
    const unsigned threads = 2 + input[6] % 7;                              // 2..8
    const std::size_t esize = tb::dtype_size(p.from.type);
    const std::uint8_t* fill = input + 7;
    const std::size_t fill_size = size - 7;

    // The byte offsets reached, relative to element [0][0].
    const std::ptrdiff_t down = static_cast<std::ptrdiff_t>(rows - 1) * row_step;
    const std::ptrdiff_t across = n == 0 ? 0 : static_cast<std::ptrdiff_t>(n - 1) * el_step;
    const std::ptrdiff_t low =
        (std::min<std::ptrdiff_t>(down, 0) + std::min<std::ptrdiff_t>(across, 0)) *
        static_cast<std::ptrdiff_t>(esize);
    const std::ptrdiff_t high =
        (std::max<std::ptrdiff_t>(down, 0) + std::max<std::ptrdiff_t>(across, 0) + 1) *
        static_cast<std::ptrdiff_t>(esize);
    const std::size_t span = static_cast<std::size_t>(high - low);
    // Bounded work per input (~0.3 M elements: still 1.6 MB of text, enough for 6 threads) keeps
    // the fuzzer at hundreds of inputs per second under ASan.
    if (span > (std::size_t{8} << 20) || rows * n > 300000) return 0;
    exact_buffer block(span);
    for (std::size_t i = 0; i < span; ++i) block.data[i] = fill[i % fill_size];
    const unsigned char* origin = block.data - low;

    const std::size_t length = encoded_length(n, p.to.type);
    const auto run = [&](unsigned t) {
        std::vector<exact_buffer*> outs;
        std::vector<char*> ptrs;
        for (std::size_t r = 0; r < rows; ++r) {
            outs.push_back(new exact_buffer(length));
            ptrs.push_back(reinterpret_cast<char*>(outs.back()->data));
        }
        tb::encode_rows({origin, rows, n, row_step * static_cast<std::ptrdiff_t>(esize),
                         el_step * static_cast<std::ptrdiff_t>(esize), p.from},
                        p.to, ptrs.data(), t);
        std::string all;
        all.reserve(rows * length);
        for (std::size_t r = 0; r < rows; ++r) {
            all.append(ptrs[r], length);
            delete outs[r];
        }
        return all;
    };
    const std::string one = run(1);
    if (run(threads) != one) {
        std::fprintf(stderr,
                     "threads=%u differs from threads=1: rows=%zu n=%zu row_step=%td el_step=%td\n",
                     threads, rows, n, row_step, el_step);
        std::abort();
    }
    // Row r must equal the same row encoded on its own.
    for (std::size_t r : {std::size_t{0}, rows / 2, rows - 1}) {
        exact_buffer out(length);
        char* ptr = reinterpret_cast<char*>(out.data);
        tb::encode_rows({origin + static_cast<std::ptrdiff_t>(r) * row_step *
                                      static_cast<std::ptrdiff_t>(esize),
                         1, n, 0, el_step * static_cast<std::ptrdiff_t>(esize), p.from},
                        p.to, &ptr);
        if (std::memcmp(out.data, one.data() + r * length, length) != 0) {
            std::fprintf(stderr, "row %zu of the batch differs from the row alone\n", r);
            std::abort();
        }
    }
    return 0;
}
