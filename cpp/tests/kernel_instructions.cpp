// The reading and writing kernels' instructions a value, counted under qemu with the insn_count
// plugin (benchmarks/aarch64/insn_count.c): each level this CPU has reads the same rows (N(0, 0.05)
// float32, float_row_bench's) as float32 and float64 from their shortest and repr texts, decodes
// their base64, and writes their float text with each of its five float-text writers (the float64
// writers on the values widened to doubles); each kernel's calls run between the plugin's markers,
// and the program prints which region is which. Under qemu-aarch64 it counts the neon and scalar
// levels; under qemu-x86_64 -cpu max (whose TCG emulates AVX2, not AVX-512) the avx2 and scalar
// ones.
//
//   qemu-aarch64 -d plugin -plugin insn_count.so[,blocks=8] kernel_instructions [ROWS DIM REPEAT]
//
// (default 16 1024 3). Natively it runs too, and counts nothing. Instruction counts are a proxy
// for time: they weigh every instruction alike and see no cache, memory or pipeline.
#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "dispatch/implementation.hpp"
#include "float_row_bench.hpp"
#include "float_text/float_text.hpp"
#include "tensorb64/tensorb64.hpp"

namespace {

// insn_count.c's markers: close() of two negative descriptors.
void mark(int descriptor) { (void)close(descriptor); }
constexpr int kStart = -1234567, kStop = -1234568;

// The region's label, then `repeat` calls between the markers (after one call outside them).
template <class call_type>
void count(const char* what, const char* level, std::size_t values, int repeat, call_type call) {
    call();
    std::printf("region: %s | %s | %zu values x %d calls\n", what, level, values, repeat);
    std::fflush(stdout);
    mark(kStart);
    for (int r = 0; r < repeat; ++r) call();
    mark(kStop);
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t rows = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 16;
    const std::size_t dim = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1024;
    const int repeat = argc > 3 ? std::atoi(argv[3]) : 3;
    const std::vector<std::uint32_t> bits = float_row_bench::random_rows(rows, dim);
    std::vector<std::string> texts[2];
    for (int shortest = 0; shortest < 2; ++shortest) {
        for (std::size_t r = 0; r < rows; ++r) {
            texts[shortest].push_back(
                float_row_bench::row_text(bits.data() + r * dim, dim, shortest));
        }
    }
    // The values' base64, whole groups only (the group decoder's input).
    std::string base64((rows * dim * 4 + 2) / 3 * 4, '\0');
    {
        const tensorb64::strided_rows all{
            bits.data(), 1, rows * dim,
            0,           4, {tensorb64::dtype::float32, tensorb64::host_byte_order}};
        char* const out = &base64[0];
        tensorb64::encode_rows(all, {tensorb64::dtype::float32, tensorb64::byte_order::little},
                               &out);
        base64.resize(rows * dim * 4 / 3 / 4 * 4);
    }
    std::vector<float> f32(dim);
    std::vector<double> f64(dim);
    std::vector<unsigned char> bytes(base64.size() / 4 * 3);
    // The float-text writers' output (a row at a time) and the values widened to doubles.
    std::vector<char> text(dim * (tensorb64::kOrjsonF64MaxBytes + 1));
    std::vector<std::uint64_t> wide(rows * dim);
    for (std::size_t i = 0; i < wide.size(); ++i)
        wide[i] = tensorb64::f32_bits_to_f64_bits(bits[i]);
    std::printf("kernel_instructions: %zu x %zu N(0, 0.05) float32\n", rows, dim);
    for (tensorb64::simd_level level : tensorb64::available_simd_levels()) {
        const tensorb64::implementation& k = tensorb64::implementation_for(level);
        for (int shortest = 1; shortest >= 0; --shortest) {
            const std::vector<std::string>& t = texts[shortest];
            // (Past the row's '[': the parsers start at its first number.)
            count(shortest ? "number rows to float32, shortest" : "number rows to float32, repr",
                  k.name, rows * dim, repeat, [&] {
                      for (const std::string& row : t)
                          k.parse_number_row(row.data() + 1, row.data() + row.size(), f32.data(),
                                             dim);
                  });
            count(shortest ? "number rows to float64, shortest" : "number rows to float64, repr",
                  k.name, rows * dim, repeat, [&] {
                      for (const std::string& row : t)
                          k.parse_number_row_double(row.data() + 1, row.data() + row.size(),
                                                    f64.data(), dim);
                  });
        }
        count("base64 groups decoded", k.name, rows * dim, repeat, [&] {
            if (!k.decode_base64_groups(base64.data(), base64.size() / 4, bytes.data()))
                std::abort();
        });
        const tensorb64::float_text_writers& w = *k.float_text;
        const auto each_row = [&](auto write) {
            return [&, write] {
                std::size_t bad = 0;
                for (std::size_t r = 0; r < rows; ++r) {
                    if (write(r * dim, text.data(), &bad) == nullptr) std::abort();
                }
            };
        };
        count("float text written, shortest", k.name, rows * dim, repeat,
              each_row([&](std::size_t at, char* out, std::size_t* bad) {
                  return w.f32(bits.data() + at, dim, true, out, bad);
              }));
        count("float text written, repr", k.name, rows * dim, repeat,
              each_row([&](std::size_t at, char* out, std::size_t* bad) {
                  return w.f32(bits.data() + at, dim, false, out, bad);
              }));
        count("float text written, orjson float32", k.name, rows * dim, repeat,
              each_row([&](std::size_t at, char* out, std::size_t* bad) {
                  return w.orjson_f32(bits.data() + at, dim, out, bad);
              }));
        count("float text written, float64 repr", k.name, rows * dim, repeat,
              each_row([&](std::size_t at, char* out, std::size_t* bad) {
                  return w.f64(wide.data() + at, dim, out, bad);
              }));
        count("float text written, orjson float64", k.name, rows * dim, repeat,
              each_row([&](std::size_t at, char* out, std::size_t* bad) {
                  return w.orjson_f64(wide.data() + at, dim, out, bad);
              }));
    }
    return 0;
}
