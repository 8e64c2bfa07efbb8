// Throughput of each kernel, in GB/s of input, beside a memcpy of the output size measured in
// the same run (the floor a one-pass encoder is compared with). Rows of 3072 elements (a common
// embedding width); float32 input and bfloat16 input of the same shape, float32 output.
//
//   kernel_bench [seconds per measurement, default 0.2]
//
// Built by run_cross.sh bench, or by CMake with TENSORB64_BUILD_TESTS=ON. A benchmark, not a
// test: the machines are shared and noisy, so compare ratios taken in one run.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace tb = tensorb64;

namespace {

using clock_type = std::chrono::steady_clock;

// Median seconds per call of `f`, over batches lasting about `budget` seconds in all.
template <class F>
double seconds_per_call(F&& f, double budget) {
    f();  // warm up (page faults, caches)
    std::size_t calls = 1;
    for (;;) {  // calls per batch: enough for about 1/15 of the budget
        const auto start = clock_type::now();
        for (std::size_t i = 0; i < calls; ++i) f();
        const double took = std::chrono::duration<double>(clock_type::now() - start).count();
        if (took > budget / 15 || calls > (1u << 24)) break;
        calls *= 2;
    }
    std::vector<double> samples;
    for (int b = 0; b < 11; ++b) {
        const auto start = clock_type::now();
        for (std::size_t i = 0; i < calls; ++i) f();
        samples.push_back(std::chrono::duration<double>(clock_type::now() - start).count() / calls);
    }
    std::nth_element(samples.begin(), samples.begin() + 5, samples.end());
    return samples[5];
}

volatile unsigned char sink;

}  // namespace

int main(int argc, char** argv) {
    const double budget = argc > 1 ? std::atof(argv[1]) : 0.2;
    constexpr std::size_t width = 3072;
    const std::size_t row_counts[] = {1, 15, 64, 1365};  // 12 KB, 184 KB, 786 KB, 16 MB of float32

    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.05f);  // embedding-like values
    std::printf(
        "kernel_bench: GB/s of input. memcpy: a copy of the output size, as GB/s of the float32 "
        "input it stands for;\n  vs memcpy: kernel time / memcpy time (bfloat16: against the same "
        "copy)\n");
    std::printf("%-8s %-9s %10s %12s %10s %12s %12s\n", "level", "input", "in bytes", "us/call",
                "GB/s", "memcpy GB/s", "vs memcpy");
    for (std::size_t rows : row_counts) {
        const std::size_t n = rows * width;
        std::vector<float> f32(n);
        for (float& v : f32) v = normal(rng);
        std::vector<unsigned short> bf16(n);
        for (std::size_t i = 0; i < n; ++i) {
            unsigned bits;
            std::memcpy(&bits, &f32[i], 4);
            bf16[i] = static_cast<unsigned short>(bits >> 16);
        }
        std::size_t row_chars = 0;
        tb::encoded_size(width * 4, &row_chars);
        std::vector<char> text(rows * row_chars);
        std::vector<char*> outputs(rows);
        for (std::size_t r = 0; r < rows; ++r) outputs[r] = text.data() + r * row_chars;

        // memcpy of the output size, from a buffer as large as the output, in the same run.
        std::vector<char> copy_source(text.size(), 'A');
        const double memcpy_s = seconds_per_call(
            [&] {
                std::memcpy(text.data(), copy_source.data(), text.size());
                sink = static_cast<unsigned char>(text[text.size() / 2]);
            },
            budget);

        for (tb::simd_level level : tb::available_simd_levels()) {
            tb::force_simd_level(level);
            struct input {
                const char* name;
                const void* data;
                tb::dtype type;
            };
            for (const input& in : {input{"float32", f32.data(), tb::dtype::float32},
                                    input{"bfloat16", bf16.data(), tb::dtype::bfloat16}}) {
                const std::size_t size = tb::dtype_size(in.type);
                const tb::strided_rows source{in.data,
                                              rows,
                                              width,
                                              static_cast<std::ptrdiff_t>(width * size),
                                              static_cast<std::ptrdiff_t>(size),
                                              {in.type, tb::byte_order::little}};
                const double s = seconds_per_call(
                    [&] {
                        tb::encode_rows(source, {tb::dtype::float32, tb::byte_order::little},
                                        outputs.data());
                        sink = static_cast<unsigned char>(text[text.size() / 2]);
                    },
                    budget);
                const double in_bytes = static_cast<double>(n * size);
                std::printf("%-8s %-9s %10.0f %12.2f %10.2f %12.2f %11.2fx\n", tb::to_string(level),
                            in.name, in_bytes, s * 1e6, in_bytes / s / 1e9,
                            static_cast<double>(n * 4) / memcpy_s / 1e9, s / memcpy_s);
            }
        }
    }
    return 0;
}
