// The public encoding entry point: argument checks, and splitting a batch across threads.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/thread_pool.hpp"
#include "dispatch/dispatch.hpp"

namespace tensorb64 {
namespace {

// Below this much output per thread, handing rows to another thread costs more than it saves.
constexpr std::size_t min_output_per_thread = 256 * 1024;

}  // namespace

const char* to_string(dtype type) noexcept {
    switch (type) {
        case dtype::float32: return "float32";
        case dtype::float16: return "float16";
        case dtype::bfloat16: return "bfloat16";
        case dtype::float64: return "float64";
        case dtype::float8_e4m3fn: return "float8_e4m3fn";
        case dtype::float8_e5m2: return "float8_e5m2";
        case dtype::int8: return "int8";
        case dtype::uint8: return "uint8";
        case dtype::int16: return "int16";
        case dtype::uint16: return "uint16";
        case dtype::int32: return "int32";
        case dtype::uint32: return "uint32";
        case dtype::int64: return "int64";
        case dtype::uint64: return "uint64";
        case dtype::bool8: return "bool";
    }
    return "unknown";
}

bool encoded_size(std::size_t n_bytes, std::size_t* length) noexcept {
    const std::size_t groups = n_bytes / 3 + (n_bytes % 3 != 0);
    if (groups > SIZE_MAX / 4) return false;
    *length = groups * 4;
    return true;
}

void encode_rows(const strided_rows& source, element_format target, char* const* outputs,
                 unsigned threads, row_output output) {
    if (!is_output_type(target.type)) {
        throw std::invalid_argument(std::string("cannot convert ") + to_string(source.format.type) +
                                    " to " + to_string(target.type));
    }
    const row_encoder encode = active_implementation().encode_rows;
    const std::size_t row_bytes = source.row_length * dtype_size(target.type);
    std::size_t row_text = 0;
    encoded_size(row_bytes, &row_text);
    const std::size_t total_output =
        (output == row_output::base64 ? row_text : row_bytes) * source.rows;
    const std::size_t parts = row_parts(
        threads, source.rows, std::max<std::size_t>(total_output / min_output_per_thread, 1));
    run_row_parts(source.rows, parts, [&](std::size_t, std::size_t first, std::size_t count) {
        encode(row_job{slice_rows(source, first, count), target, outputs + first, output});
    });
}

}  // namespace tensorb64
