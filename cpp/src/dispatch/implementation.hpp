// A CPU level's implementation: its name, the CPU features it requires and its five functions
// (the row encoder, the float-text block writers, the JSON number-row parsers to float32 and to
// float64, the base64 group decoder). Each folder under levels/ defines exactly one, in its
// implementation.cpp, compiled with that level's flags (cpp/CMakeLists.txt); `implementations`
// lists them, and dispatch.cpp derives everything it knows about levels (names, order, what each
// needs) from that list. A level without a faster function of its own names the scalar one.
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

// Encodes a batch of rows to base64 text or to the converted bytes themselves.
using row_encoder = void (*)(const row_job& job) noexcept;

// Float-text block writers: exactly float_text.hpp's write_values_f32 / write_values_f64 /
// write_values_orjson_f32 / write_values_orjson_f64 (the scalar ones, byte for byte: each value's
// text and a ',' after it; nullptr with *bad at the first NaN or infinity), within the same output
// bounds.
struct float_text_writers {
    char* (*f32)(const std::uint32_t* bits, std::size_t n, bool shortest, char* out,
                 std::size_t* bad) noexcept;
    char* (*f64)(const std::uint64_t* bits, std::size_t n, char* out, std::size_t* bad) noexcept;
    char* (*orjson_f32)(const std::uint32_t* bits, std::size_t n, char* out,
                        std::size_t* bad) noexcept;
    char* (*orjson_f64)(const std::uint64_t* bits, std::size_t n, char* out,
                        std::size_t* bad) noexcept;
};

// A JSON number-row parser: exactly number_parser.hpp's parse_number_row_scalar (the same
// values, ends and errors).
using number_row_parser = detail::number_row (*)(const char* p, const char* end, float* out,
                                                 std::size_t capacity) noexcept;

// The same to float64: exactly number_parser.hpp's parse_number_row_double_scalar.
using number_row_double_parser = detail::number_row (*)(const char* p, const char* end, double* out,
                                                        std::size_t capacity) noexcept;

// A base64 group decoder: `groups` groups of 4 characters of the standard alphabet to 3 bytes
// each; false if any character is outside it, '=' included, and then `out` holds unspecified
// bytes. Exactly decode_base64_groups_scalar's bytes and verdict.
using base64_group_decoder = bool (*)(const char* text, std::size_t groups,
                                      unsigned char* out) noexcept;

struct implementation {
    simd_level level;
    const char* name;       // to_string's result; what TENSORB64_SIMD and force_simd_level take
    cpu_features required;  // exactly what its compile flags let the compiler use (checked there)
    // Null, all five, where this target does not build the level (the x86 levels on AArch64, NEON
    // on x86-64, the x86 levels of a macOS universal2 build): levels/compiled_features.hpp says
    // where each level's code is compiled.
    row_encoder encode_rows = nullptr;
    const float_text_writers* float_text = nullptr;
    number_row_parser parse_number_row = nullptr;
    number_row_double_parser parse_number_row_double = nullptr;
    base64_group_decoder decode_base64_groups = nullptr;

    // Whether this build compiled the level's functions.
    constexpr bool built() const noexcept {
        return encode_rows != nullptr && float_text != nullptr && parse_number_row != nullptr &&
               parse_number_row_double != nullptr && decode_base64_groups != nullptr;
    }
};

// One per folder under levels/, defined on every target (built or not).
extern const implementation scalar_implementation;
extern const implementation avx2_implementation;
extern const implementation avx512_implementation;
extern const implementation neon_implementation;

// Lowest level first: dispatch runs the last one this CPU can run that this build compiled.
inline constexpr const implementation* implementations[] = {
    &scalar_implementation, &avx2_implementation, &avx512_implementation, &neon_implementation};

// The implementation of `level` (every simd_level has one).
inline const implementation& implementation_for(simd_level level) noexcept {
    for (const implementation* candidate : implementations) {
        if (candidate->level == level) return *candidate;
    }
    return scalar_implementation;
}

// The scalar level's base64 decoder (base64/decode.cpp), which the SIMD decoders finish with.
bool decode_base64_groups_scalar(const char* text, std::size_t groups, unsigned char* out) noexcept;

}  // namespace tensorb64
