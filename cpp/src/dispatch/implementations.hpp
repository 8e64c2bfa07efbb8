// The kernels: one translation unit per instruction set, each compiled with that set's flags
// (cpp/CMakeLists.txt) and exporting its entry functions, all listed in kernel_table below, from
// which dispatch.cpp derives everything it knows about SIMD levels (names, order, what each needs).
// A level has three entries: the row encoder (base64 and raw bytes), the float-text block writer
// (JSON number text), the JSON number-row parser and the base64 group decoder; a level without a
// faster float-text writer, parser or decoder lists the scalar one.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dispatch/cpu_features.hpp"
#include "json/number_parser.hpp"
#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {

// A batch of rows to encode; outputs[r] receives row r (see encode_rows in the public API).
struct row_job {
    strided_rows source;
    element_format target;
    char* const* outputs;
    row_output output;
};

using encode_rows_fn = void (*)(const row_job& job) noexcept;

// Each returns its kernel's entry point, or nullptr where its translation unit compiled to a stub
// because this target does not build that kernel (the x86 kernels on aarch64, NEON on x86-64; see
// the top of each kernel_*.cpp). Every one exists on every architecture, so nothing here or in the
// table needs an #if.
encode_rows_fn scalar_kernel() noexcept;
encode_rows_fn avx2_kernel() noexcept;
encode_rows_fn avx512_kernel() noexcept;
encode_rows_fn neon_kernel() noexcept;

// A level's float-text block writers: exactly float_text.hpp's write_values_f32 / write_values_f64
// / write_values_orjson_f32 (the scalar ones, byte for byte: each value's text and a ',' after it;
// nullptr with *bad at the first NaN or infinity), within the same output bounds.
struct float_text_writers {
    char* (*f32)(const std::uint32_t* bits, std::size_t n, bool shortest, char* out,
                 std::size_t* bad) noexcept;
    char* (*f64)(const std::uint64_t* bits, std::size_t n, char* out, std::size_t* bad) noexcept;
    char* (*orjson_f32)(const std::uint32_t* bits, std::size_t n, char* out,
                        std::size_t* bad) noexcept;
};
using float_text_fn = const float_text_writers* (*)() noexcept;

// As the kernels: nullptr where the translation unit compiled to a stub (float_text_avx512.cpp
// builds where kernel_avx512.cpp does, with the same flags).
const float_text_writers* scalar_float_text() noexcept;
const float_text_writers* avx512_float_text() noexcept;

// A level's JSON number-row parser: exactly number_parser.hpp's parse_number_row_scalar (the
// same values, ends and errors). nullptr where the translation unit compiled to a stub.
using number_row_parser = detail::number_row (*)(const char* p, const char* end, float* out,
                                                 std::size_t capacity) noexcept;
using number_parser_fn = number_row_parser (*)() noexcept;
number_row_parser scalar_number_parser() noexcept;
number_row_parser avx512_number_parser() noexcept;

// A level's base64 group decoder: exactly decode.cpp's scalar one (`groups` groups of 4 characters
// of the standard alphabet to 3 bytes each; false if any character is outside it, '=' included, and
// then `out` holds unspecified bytes), faster. nullptr where the translation unit is a stub.
using decode_groups_fn = bool (*)(const char* text, std::size_t groups,
                                  unsigned char* out) noexcept;
decode_groups_fn scalar_base64_decoder() noexcept;
decode_groups_fn avx2_base64_decoder() noexcept;
decode_groups_fn avx512_base64_decoder() noexcept;

struct kernel_row {
    simd_level level;
    const char* name;       // to_string's result; what TENSORB64_SIMD and force_simd_level take
    cpu_features required;  // exactly what its compile flags let the compiler use (checked there)
    encode_rows_fn (*entry)() noexcept;
    float_text_fn float_text;
    number_parser_fn number_parser;
    decode_groups_fn (*base64_decoder)() noexcept;
};

constexpr cpu_features avx2_features =
    feature::avx | feature::avx2 | feature::f16c | feature::fma | feature::bmi2;

// Lowest level first: dispatch runs the last row this CPU can run whose kernel is compiled.
inline constexpr kernel_row kernel_table[] = {
    {simd_level::scalar, "scalar", 0, scalar_kernel, scalar_float_text, scalar_number_parser,
     scalar_base64_decoder},
    {simd_level::avx2, "avx2", avx2_features, avx2_kernel, scalar_float_text, scalar_number_parser,
     avx2_base64_decoder},
    {simd_level::avx512, "avx512",
     avx2_features | feature::avx512f | feature::avx512bw | feature::avx512vl | feature::avx512dq |
         feature::avx512vbmi,
     avx512_kernel, avx512_float_text, avx512_number_parser, avx512_base64_decoder},
    {simd_level::neon, "neon", feature::neon, neon_kernel, scalar_float_text, scalar_number_parser,
     scalar_base64_decoder},
};

// The table's row for `level` (every simd_level has one).
constexpr const kernel_row& kernel_for(simd_level level) {
    for (const kernel_row& row : kernel_table) {
        if (row.level == level) return row;
    }
    return kernel_table[0];
}

}  // namespace tensorb64
