// Tests of the C++ core, through its public API only. Plain C++17, no framework: a failed CHECK
// prints where and what, and the program exits non-zero. Runs natively and, cross-compiled, under
// qemu (s390x: big-endian host; aarch64: the NEON level); see run_cross.sh.
//
// What is covered:
//   * RFC 4648 test vectors, and random bytes of every length 0..300 against a textbook encoder;
//   * float32 golden strings, both byte orders for source and target;
//   * golden conversions: every float16 bit pattern to float32 (against an independent arithmetic
//     reference), float32 -> float16/bfloat16/float8 and float64 -> float32 edge values (goldens
//     taken from torch 2.13's `.to()`);
//   * strides: negative, zero, odd and misaligned element strides, negative row strides, threads;
//   * the differential test: every SIMD level this CPU has equals scalar, for every source dtype x
//     target dtype x source byte order x target byte order, every input misalignment 0..63, with
//     random bits (NaN payloads, subnormals, infinities, rounding ties) from fixed seeds. All
//     lengths 0..2048 for the float32 -> float32 little-endian identity (the hot path); for the
//     other combinations, every length 0..64 plus lengths at and around the vector widths and the
//     768-element block boundaries up to 2048 (see sampled_lengths), to keep the run short;
//   * the same under flush-to-zero, denormals-are-zero and rounding upward (MXCSR on x86, FPCR on
//     aarch64), after which the caller's environment must be as it was;
//   * no read past the input and no write past the output (inputs and outputs that end at a
//     PROT_NONE page, on POSIX hosts), for every level, dtype pair and length 0..200;
//   * the SIMD-level API: unknown and unavailable levels are errors, never a crash;
//   * strict decoding: round trips across the block boundary, what is refused and where, both
//     byte orders, and widening of every float16 and float8 code (float8 against torch goldens).
//   * the response body's data entries: exact sizes (indices of every digit count, up to
//     SIZE_MAX; 0 rows; empty rows; overflow refused), the text against a reference written
//     here, nothing written past the size, threads > 1 equal to 1, conversions refused first.
//
// The tests are in core_*_tests.cpp, one subsystem a file; what they share is core_tests.hpp.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "core_tests.hpp"

using namespace core_tests;

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    std::printf("core_tests: levels available:");
    for (tb::simd_level level : levels()) std::printf(" %s", tb::to_string(level));
    std::printf("; active: %s%s\n", tb::to_string(tb::active_simd_level()),
                quick ? " (--quick)" : "");
    const auto timed = [](const char* what, auto&& test) {
        const auto start = std::chrono::steady_clock::now();
        test();
        const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
        std::printf("  %-28s %.2f s\n", what, took.count());
    };
    try {
        timed("simd level api", test_simd_level_api);
        timed("rfc 4648", test_rfc4648);
        timed("float32 goldens", test_float32_goldens);
        timed("golden conversions", [] { test_golden_conversions("golden"); });
        timed("strides", test_strides);
#if defined(TENSORB64_TEST_GUARD_PAGES)
        timed("no access past the ends", test_no_access_past_the_ends);
#endif
        timed("differential", [&] { differential("differential", !quick, quick ? 7 : 63); });
        timed("bytes output", test_bytes_output);
        timed("integer sources", test_integer_sources);
        timed("multi-dimensional rows", test_multi_dimensional_rows);
        timed("float rows", test_float_rows);
        timed("float rows, every level", test_float_rows_levels);
        timed("decode", test_decode);
        timed("under FTZ/DAZ, rounding upward", test_hostile_fp_environment);
        timed("response body data", test_response_body);
        timed("response body layouts", test_body_layout);
    } catch (const std::exception& e) {
        report_failure(__FILE__, __LINE__, std::string("exception: ") + e.what());
    }
    std::printf("core_tests: %ld passed, %ld failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
