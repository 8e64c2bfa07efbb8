// Rows as JSON number text. Each row goes through in blocks held in L1, as in the base64 row
// encoder: gathered (strides, byte order) and widened to float32 bits (or, for float64 sources,
// kept as doubles), then written by the active level's float-text block writers
// (dispatch/implementation.hpp: the scalar level's are float_text.hpp's Schubfach).
//
// Baseline code: the widening is the scalar level's, since the digits cost many times more than
// the widening (~1 ns a value); the digits are where the SIMD levels differ.
#include "float_text/float_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "common/host.hpp"
#include "common/scalar_ops.hpp"
#include "common/thread_pool.hpp"
#include "dispatch/dispatch.hpp"
#include "float_text/float_text.hpp"

namespace tensorb64 {
namespace {

constexpr std::size_t block_elements = 512;

}  // namespace

std::size_t float_value_bound(dtype source, float_format format) noexcept {
    if (format == float_format::orjson)
        return (source == dtype::float64 ? kOrjsonF64MaxBytes : kOrjsonF32MaxBytes) + 1;
    const bool doubles = source == dtype::float64 || format == float_format::repr;
    return (doubles ? kReprMaxBytes : kShortestF32MaxBytes) + 1;  // and a comma
}

char* write_float_row(const strided_rows& source, std::size_t r, float_format format, char* out,
                      std::size_t* column) noexcept {
    const unsigned char* row = row_address(source, r);
    const dtype type = source.format.type;
    const std::size_t size = dtype_size(type);
    const bool swap = source.format.order != host_byte_order;
    const bool shortest = format == float_format::shortest && type != dtype::float64;
    const bool orjson = format == float_format::orjson;
    const float_text_writers& writers = *active_implementation().float_text;
    // The float32 values' writer and the doubles'.
    const auto write_f32 = [&](const std::uint32_t* bits, std::size_t n, char* at,
                               std::size_t* bad) {
        return orjson ? writers.orjson_f32(bits, n, at, bad)
                      : writers.f32(bits, n, shortest, at, bad);
    };
    const auto write_f64 = orjson ? writers.orjson_f64 : writers.f64;
    alignas(64) std::uint64_t doubles[block_elements];  // float64 sources; the other bytes' buffer
    unsigned char* const raw = reinterpret_cast<unsigned char*>(doubles);
    alignas(64) std::uint32_t wide[block_elements];
    *out++ = '[';
    for (std::size_t done = 0; done < source.row_length; done += block_elements) {
        const std::size_t k = std::min(block_elements, source.row_length - done);
        const unsigned char* block =
            row + static_cast<std::ptrdiff_t>(done) * source.element_stride;
        std::size_t bad = 0;
        if (type == dtype::float32 &&
            !swap) {  // float32 bits already: gathered straight into place
            gather(block, k, source.element_stride, 4, reinterpret_cast<unsigned char*>(wide));
            out = write_f32(wide, k, out, &bad);
        } else {
            gather(block, k, source.element_stride, size, raw);
            if (swap) swap_elements(raw, k, size);
            if (type == dtype::float64) {  // the doubles themselves
                out = write_f64(doubles, k, out, &bad);
            } else {
                scalar_ops::widen(type, raw, k, wide);  // float32 bits, exactly as torch widens
                out = write_f32(wide, k, out, &bad);
            }
        }
        if (out == nullptr) {
            *column = done + bad;
            return nullptr;
        }
    }
    if (source.row_length != 0) --out;  // the last comma becomes the bracket
    *out++ = ']';
    return out;
}

float_text_result find_non_finite(const strided_rows& source) noexcept {
    const dtype type = source.format.type;
    const std::size_t size = dtype_size(type);
    const bool swap = source.format.order != host_byte_order;
    alignas(64) unsigned char raw[block_elements * 8];
    alignas(64) std::uint32_t wide[block_elements];
    for (std::size_t r = 0; r < source.rows; ++r) {
        const unsigned char* row = row_address(source, r);
        for (std::size_t done = 0; done < source.row_length; done += block_elements) {
            const std::size_t k = std::min(block_elements, source.row_length - done);
            gather(row + static_cast<std::ptrdiff_t>(done) * source.element_stride, k,
                   source.element_stride, size, raw);
            if (swap) swap_elements(raw, k, size);
            for (std::size_t i = 0; i < k; ++i) {
                bool finite;
                if (type == dtype::float64) {
                    std::uint64_t bits;
                    std::memcpy(&bits, raw + i * 8, 8);
                    finite = (bits & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
                } else {
                    if (i == 0) scalar_ops::widen(type, raw, k, wide);
                    finite = (wide[i] & 0x7f800000u) != 0x7f800000u;
                }
                if (!finite) return {false, r, done + i};
            }
        }
    }
    return {true, 0, 0};
}

bool float_row_bound(std::size_t row_length, dtype source, float_format format,
                     std::size_t* bytes) noexcept {
    const std::size_t per_value = float_value_bound(source, format);
    if (row_length > (std::numeric_limits<std::size_t>::max() - 2) / per_value) return false;
    *bytes = 2 + row_length * per_value;
    return true;
}

float_text_result write_float_rows(const strided_rows& source, float_format format,
                                   char* const* outputs, std::size_t* lengths, unsigned threads) {
    const std::size_t parts = row_parts(threads, source.rows);
    std::vector<float_text_result> results(parts, float_text_result{true, 0, 0});
    run_row_parts(source.rows, parts, [&](std::size_t part, std::size_t first, std::size_t count) {
        for (std::size_t r = first; r < first + count; ++r) {
            std::size_t column = 0;
            char* end = write_float_row(source, r, format, outputs[r], &column);
            if (end == nullptr) {
                results[part] = {false, r, column};
                return;
            }
            lengths[r] = static_cast<std::size_t>(end - outputs[r]);
        }
    });
    for (const float_text_result& result : results) {
        if (!result.finite) return result;  // the lowest row that failed
    }
    return {true, 0, 0};
}

}  // namespace tensorb64
