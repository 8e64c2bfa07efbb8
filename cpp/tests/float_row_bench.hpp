// What the float-text reading benches (number_parser_bench, body_reader_bench) share: the rows
// they read (N(0, 0.05) float32, a fixed seed), each row's text as production writes it, the
// clock they time with, and the line that says what a run measured.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "tensorb64/tensorb64.hpp"

namespace float_row_bench {

// The run's first line: the rows, the rounds and the load average it ran at.
inline void print_setup(std::size_t rows, std::size_t dim, int rounds) {
    std::ifstream loadavg("/proc/loadavg");
    std::string load;
    std::getline(loadavg, load);
    std::printf(
        "%zu x %zu N(0, 0.05) float32, %d rounds interleaved, medians of thread CPU time; load: "
        "%s\n",
        rows, dim, rounds, load.c_str());
}

// rows x dim float32 bit patterns drawn from N(0, 0.05), the same on every run.
inline std::vector<std::uint32_t> random_rows(std::size_t rows, std::size_t dim) {
    std::mt19937_64 rng(42);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<std::uint32_t> bits(rows * dim);
    for (std::uint32_t& b : bits) {
        const float x = normal(rng);
        std::memcpy(&b, &x, 4);
    }
    return bits;
}

// One row's text as production writes it (write_float_rows: "[...]", json.dumps's ", " in repr).
inline std::string row_text(const std::uint32_t* bits, std::size_t dim, bool shortest) {
    const tensorb64::float_format format =
        shortest ? tensorb64::float_format::shortest : tensorb64::float_format::repr;
    const tensorb64::strided_rows row{
        bits, 1, dim, 0, 4, {tensorb64::dtype::float32, tensorb64::host_byte_order}};
    std::size_t bound = 0;
    std::vector<char> buffer;
    if (tensorb64::float_row_bound(dim, tensorb64::dtype::float32, format, &bound))
        buffer.resize(bound);
    char* out = buffer.data();
    std::size_t length = 0;
    if (buffer.empty() || !tensorb64::write_float_rows(row, format, &out, &length).finite) {
        std::fprintf(stderr, "a row could not be written\n");
        std::exit(1);
    }
    return std::string(out, length);
}

// This thread's CPU time: the build machine is shared, and time spent descheduled is not ours.
inline double thread_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace float_row_bench
