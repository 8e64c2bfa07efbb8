// Edge tests for the sanitizer and valgrind runs: every input and every output is a heap block of
// exactly its size, so an encoder that reads or writes one byte too far is caught by ASan (which
// tracks block sizes to the byte) or valgrind memcheck. Unlike core_tests (which uses guard pages,
// page-granular, and only the end of the input), this catches overruns at both ends of every block,
// at every misalignment, and also checks the text:
//   * every SIMD level equals scalar, for every source x target dtype x both byte orders, every
//     length 0..300, every input misalignment 0..15;
//   * identity encodings equal a textbook encoder, and strictly decode back to the input bytes;
//   * reversed (negative stride), doubled-stride and zero-stride rows equal the contiguous encoding
//     of the same elements, with the strided input's allocation covering only the bytes it reaches;
//   * batches of rows with threads = 1, 2, 4 give the same text.
// --quick: misalignments 0, 1, 7 and lengths 0..80 plus a sample up to 300 (for valgrind).
#include <cstdio>
#include <random>

#include "../tests/watchdog.hpp"
#include "harness.hpp"

using namespace hardening;

namespace {

long checks = 0, failures = 0;

void fail(const std::string& what) {
    if (++failures <= 25) std::fprintf(stderr, "FAILED: %s\n", what.c_str());
}

#define EXPECT(cond, what)       \
    do {                         \
        test_watchdog::beat();   \
        ++checks;                \
        if (!(cond)) fail(what); \
    } while (0)

std::string describe(const format_pair& p, std::size_t n, std::size_t mis, tb::simd_level level) {
    auto fmt = [](tb::element_format f) {
        return std::string(tb::to_string(f.type)) +
               (f.order == tb::byte_order::little ? "/le" : "/be");
    };
    return fmt(p.from) + " -> " + fmt(p.to) + " n=" + std::to_string(n) +
           " misalign=" + std::to_string(mis) + " level=" + tb::to_string(level);
}

// Encodes one row of `n` elements from `data` (stride in bytes) into an exact-size output block.
std::string encode_one(const void* data, std::size_t n, std::ptrdiff_t stride,
                       const format_pair& p) {
    const std::size_t length = encoded_length(n, p.to.type);
    exact_buffer out(length);
    char* outputs[] = {reinterpret_cast<char*>(out.data)};
    tb::encode_rows({data, 1, n, 0, stride, p.from}, p.to, outputs);
    return std::string(reinterpret_cast<char*>(out.data), length);
}

void test_lengths_and_misalignments(bool quick) {
    std::mt19937_64 rng(20240601);
    const std::vector<tb::simd_level> levels = tb::available_simd_levels();
    std::vector<std::size_t> lengths, misalignments;
    for (std::size_t n = 0; n <= 300; ++n)
        if (!quick || n <= 80 || n % 23 == 0 || n == 300) lengths.push_back(n);
    for (std::size_t m = 0; m < 16; ++m)
        if (!quick || m == 0 || m == 1 || m == 7) misalignments.push_back(m);

    for (const format_pair& p : all_pairs()) {
        const std::size_t size = tb::dtype_size(p.from.type);
        for (std::size_t n : lengths) {
            std::vector<unsigned char> bytes(n * size);
            for (auto& b : bytes) b = static_cast<unsigned char>(rng());
            tb::force_simd_level(tb::simd_level::scalar);
            const std::string expected =
                encode_one(bytes.data(), n, static_cast<std::ptrdiff_t>(size), p);
            EXPECT(expected.size() == encoded_length(n, p.to.type),
                   describe(p, n, 0, tb::simd_level::scalar));
            if (p.from.type == p.to.type) {
                // Identity: the text decodes to the input bytes, each element byte-swapped if
                // asked.
                std::vector<unsigned char> want = bytes;
                if (p.from.order != p.to.order)
                    for (std::size_t i = 0; i < n; ++i)
                        for (std::size_t k = 0; k < size / 2; ++k)
                            std::swap(want[i * size + k], want[i * size + size - 1 - k]);
                EXPECT(expected == textbook_base64(want.data(), want.size()),
                       "identity text " + describe(p, n, 0, tb::simd_level::scalar));
                std::vector<unsigned char> back;
                EXPECT(strict_decode(expected.data(), expected.size(), &back) && back == want,
                       "round trip " + describe(p, n, 0, tb::simd_level::scalar));
            }
            for (tb::simd_level level : levels) {
                tb::force_simd_level(level);
                for (std::size_t mis : misalignments) {
                    // The input ends at the very end of its block, starting `mis` bytes into it.
                    exact_buffer in(mis + bytes.size());
                    std::memset(in.data, 0xA5, mis);
                    if (!bytes.empty()) std::memcpy(in.data + mis, bytes.data(), bytes.size());
                    EXPECT(encode_one(in.data + mis, n, static_cast<std::ptrdiff_t>(size), p) ==
                               expected,
                           describe(p, n, mis, level));
                }
                if (n == 0) continue;
                // Reversed: elements read from the end of the block down to its start.
                exact_buffer rev(bytes.size());
                for (std::size_t i = 0; i < n; ++i)
                    std::memcpy(rev.data + (n - 1 - i) * size, bytes.data() + i * size, size);
                EXPECT(encode_one(rev.data + (n - 1) * size, n, -static_cast<std::ptrdiff_t>(size),
                                  p) == expected,
                       "reversed " + describe(p, n, 0, level));
                // Every other element: the block ends right after the last one read.
                exact_buffer spaced((2 * n - 1) * size);
                std::memset(spaced.data, 0x5A, spaced.size);
                for (std::size_t i = 0; i < n; ++i)
                    std::memcpy(spaced.data + 2 * i * size, bytes.data() + i * size, size);
                EXPECT(encode_one(spaced.data, n, static_cast<std::ptrdiff_t>(2 * size), p) ==
                           expected,
                       "stride 2 " + describe(p, n, 0, level));
                // Zero stride: one element, read n times.
                if (n <= 40) {
                    exact_buffer one(size);
                    std::memcpy(one.data, bytes.data(), size);
                    std::vector<unsigned char> repeated(n * size);
                    for (std::size_t i = 0; i < n; ++i)
                        std::memcpy(repeated.data() + i * size, bytes.data(), size);
                    tb::force_simd_level(tb::simd_level::scalar);
                    const std::string want =
                        encode_one(repeated.data(), n, static_cast<std::ptrdiff_t>(size), p);
                    tb::force_simd_level(level);
                    EXPECT(encode_one(one.data, n, 0, p) == want,
                           "stride 0 " + describe(p, n, 0, level));
                }
            }
        }
    }
}

// Many rows in exact-size blocks, split across threads; every split gives the same text.
void test_row_batches() {
    std::mt19937_64 rng(7);
    for (tb::simd_level level : tb::available_simd_levels()) {
        tb::force_simd_level(level);
        for (const format_pair& p : all_pairs()) {
            if (p.to.order == tb::byte_order::big && p.from.order == tb::byte_order::big) continue;
            const std::size_t size = tb::dtype_size(p.from.type);
            // Enough output that threads > 1 really splits (the core wants 256 KiB per thread).
            const std::size_t rows = 300, n = 1000 + rng() % 7;
            exact_buffer in(rows * n * size);
            for (std::size_t i = 0; i < in.size; ++i)
                in.data[i] = static_cast<unsigned char>(rng());
            const std::size_t length = encoded_length(n, p.to.type);
            std::vector<std::string> first;
            for (unsigned threads : {1u, 2u, 4u}) {
                std::vector<exact_buffer*> blocks;
                std::vector<char*> outputs;
                for (std::size_t r = 0; r < rows; ++r) {
                    blocks.push_back(new exact_buffer(length));
                    outputs.push_back(reinterpret_cast<char*>(blocks.back()->data));
                }
                // Rows bottom-up (negative row stride), so the last row read is at the block's
                // start.
                tb::encode_rows({in.data + (rows - 1) * n * size, rows, n,
                                 -static_cast<std::ptrdiff_t>(n * size),
                                 static_cast<std::ptrdiff_t>(size), p.from},
                                p.to, outputs.data(), threads);
                for (std::size_t r = 0; r < rows; ++r) {
                    std::string text(outputs[r], length);
                    if (threads == 1)
                        first.push_back(text);
                    else
                        EXPECT(text == first[r], "rows threads=" + std::to_string(threads) + " " +
                                                     describe(p, n, 0, level));
                    delete blocks[r];
                }
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const tb::simd_level initial = tb::active_simd_level();
    std::printf("edge_tests: levels:");
    for (tb::simd_level level : tb::available_simd_levels())
        std::printf(" %s", tb::to_string(level));
    std::printf("%s\n", quick ? " (--quick)" : "");
    test_lengths_and_misalignments(quick);
    test_row_batches();
    tb::force_simd_level(initial);
    std::printf("edge_tests: %ld checks, %ld failures\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
