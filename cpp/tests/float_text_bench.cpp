// Micro-benchmark of float text: ns per value and bytes per value writing JSON rows of
// N(0, 0.05) float32 values (B=64 rows of D=3072, like an embeddings batch), one thread: the row
// writer production runs (write_float_rows, the active level) and each SIMD level's float-text
// block writer (dispatch/implementation.hpp) this CPU runs, in the three formats (shortest, repr,
// orjson), against libstdc++'s
// std::to_chars (shortest, float and the value widened to double) doing the same rows. "check-first
// pass" is the scalar writer with the finiteness check as a pass of its own (compare with "level
// scalar"). Medians of interleaved runs, and the fastest run (the machine is shared: compare ratios
// within one run).
//   float_text_bench [REPEATS [FILTER]]   FILTER: only the contenders whose names contain it
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "dispatch/dispatch.hpp"
#include "dispatch/implementation.hpp"
#include "float_row_bench.hpp"
#include "float_text/float_text.hpp"

namespace tb = tensorb64;

namespace {

constexpr std::size_t kRows = 64;
constexpr std::size_t kDim = 3072;

struct contender {
    const char* name;
    std::function<std::size_t(const std::uint32_t*, char*)>
        run;  // one batch; returns bytes written
    std::vector<double> ns_per_value;
    std::size_t bytes = 0;
};

// The row writer with the finiteness check as a separate pass first (the alternative the row
// writer's comment weighs).
char* row_check_first(const std::uint32_t* bits, std::size_t n, char* out, std::size_t* bad) {
    std::uint32_t any = 0;
    for (std::size_t i = 0; i < n; ++i) any |= ((bits[i] & 0x7f800000u) == 0x7f800000u);
    if (any) {
        for (std::size_t i = 0; i < n; ++i)
            if ((bits[i] & 0x7f800000u) == 0x7f800000u) {
                *bad = i;
                return nullptr;
            }
    }
    *out++ = '[';
    for (std::size_t i = 0; i < n; ++i) {
        out = tb::write_shortest_f32(bits[i], out);
        *out++ = ',';
    }
    out[-1] = ']';
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::atoi(argv[1]) : 15;
    const std::vector<std::uint32_t> values = float_row_bench::random_rows(kRows, kDim);
    std::size_t row_bytes = 0;
    tb::float_row_bound(kDim, tb::dtype::float32, tb::float_format::repr, &row_bytes);
    std::vector<char> out(kRows * row_bytes + 64);

    const auto rows_with = [&](auto&& write_row) {
        return [&, write_row](const std::uint32_t* v, char* o) {
            char* const start = o;
            for (std::size_t r = 0; r < kRows; ++r) o = write_row(v + r * kDim, o);
            return static_cast<std::size_t>(o - start);
        };
    };
    // What production runs: write_float_rows over the batch, one thread, the active level.
    const auto production = [&](tb::float_format format) {
        return [format, row_bytes](const std::uint32_t* v, char* o) {
            std::vector<char*> outputs(kRows);
            std::vector<std::size_t> lengths(kRows);
            for (std::size_t r = 0; r < kRows; ++r) outputs[r] = o + r * row_bytes;
            const tb::strided_rows rows{v,        kRows, kDim,
                                        kDim * 4, 4,     {tb::dtype::float32, tb::host_byte_order}};
            tb::write_float_rows(rows, format, outputs.data(), lengths.data());
            std::size_t bytes = 0;
            for (const std::size_t length : lengths) bytes += length;
            return bytes;
        };
    };
    std::vector<contender> contenders;
    contenders.push_back({"write_float_rows shortest (active level)",
                          production(tb::float_format::shortest),
                          {},
                          0});
    contenders.push_back(
        {"write_float_rows repr (active level)", production(tb::float_format::repr), {}, 0});
    contenders.push_back(
        {"write_float_rows orjson (active level)", production(tb::float_format::orjson), {}, 0});
    contenders.push_back({"tensorb64 shortest, check-first pass",
                          rows_with([](const std::uint32_t* v, char* o) {
                              std::size_t bad;
                              return row_check_first(v, kDim, o, &bad);
                          }),
                          {},
                          0});
    contenders.push_back({"std::to_chars float (shortest)",
                          rows_with([](const std::uint32_t* v, char* o) {
                              *o++ = '[';
                              for (std::size_t i = 0; i < kDim; ++i) {
                                  float x;
                                  std::memcpy(&x, v + i, 4);
                                  o = std::to_chars(o, o + 32, x).ptr;
                                  *o++ = ',';
                              }
                              o[-1] = ']';
                              return o;
                          }),
                          {},
                          0});
    contenders.push_back({"std::to_chars double (shortest)",
                          rows_with([](const std::uint32_t* v, char* o) {
                              *o++ = '[';
                              for (std::size_t i = 0; i < kDim; ++i) {
                                  float x;
                                  std::memcpy(&x, v + i, 4);
                                  o = std::to_chars(o, o + 32, static_cast<double>(x)).ptr;
                                  *o++ = ',';
                              }
                              o[-1] = ']';
                              return o;
                          }),
                          {},
                          0});
    static std::vector<std::string> level_names;  // the contenders' names point into these
    level_names.reserve(16);
    for (const tb::simd_level level : tb::available_simd_levels()) {
        const tb::float_text_writers* w = tb::implementation_for(level).float_text;
        for (const char* format : {"shortest", "repr", "orjson"}) {
            level_names.push_back(std::string("level ") + tb::to_string(level) + " " + format);
            const bool orjson = format[0] == 'o', shortest = format[0] == 's';
            contenders.push_back({level_names.back().c_str(),
                                  rows_with([w, shortest, orjson](const std::uint32_t* v, char* o) {
                                      std::size_t bad;
                                      *o++ = '[';
                                      o = orjson ? w->orjson_f32(v, kDim, o, &bad)
                                                 : w->f32(v, kDim, shortest, o, &bad);
                                      o[-1] = ']';
                                      return o;
                                  }),
                                  {},
                                  0});
        }
    }
    if (argc > 2) {  // a filter, e.g. for a profiler
        std::vector<contender> kept;
        for (contender& c : contenders)
            if (std::strstr(c.name, argv[2]) != nullptr) kept.push_back(c);
        if (kept.empty()) return 2;
        contenders = kept;
    }
    for (int rep = 0; rep < repeats; ++rep) {
        for (contender& c : contenders) {
            const auto start = std::chrono::steady_clock::now();
            c.bytes = c.run(values.data(), out.data());
            const std::chrono::duration<double, std::nano> took =
                std::chrono::steady_clock::now() - start;
            c.ns_per_value.push_back(took.count() / static_cast<double>(values.size()));
        }
    }
    std::printf("float_text_bench: %zu x %zu float32 N(0, 0.05), %d interleaved repeats, medians\n",
                kRows, kDim, repeats);
    for (contender& c : contenders) std::sort(c.ns_per_value.begin(), c.ns_per_value.end());
    const auto median = [](const contender& c) {
        return c.ns_per_value[c.ns_per_value.size() / 2];
    };
    const bool all = argc <= 2;  // with a filter the to_chars columns are left out
    const double float_base = all ? median(contenders[4]) : 0;
    const double double_base = all ? median(contenders[5]) : 0;
    std::printf("  %-40s %10s %8s %12s %14s %15s\n", "", "ns/value", "min", "bytes/value",
                "to_chars float", "to_chars double");
    for (contender& c : contenders) {
        std::printf("  %-40s %10.2f %8.2f %12.2f %13.2fx %14.2fx\n", c.name, median(c),
                    c.ns_per_value.front(),
                    static_cast<double>(c.bytes) / static_cast<double>(values.size()),
                    float_base / median(c), double_base / median(c));
    }
    std::printf("  (bytes/value include the ',' after each value)\n");
    return 0;
}
