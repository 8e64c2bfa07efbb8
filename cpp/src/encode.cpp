// The public encoding entry point: argument checks, and splitting a batch across threads.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dispatch.hpp"

namespace tensorb64 {
namespace {

// Below this much output per thread, starting a thread costs more than it saves.
constexpr std::size_t min_output_per_thread = 256 * 1024;

// The rows [first, first + count) of `job`, as a job of their own.
row_job slice_rows(const row_job& job, std::size_t first, std::size_t count) {
    row_job part = job;
    part.source.data = static_cast<const unsigned char*>(job.source.data) +
                       static_cast<std::ptrdiff_t>(first) * job.source.row_stride;
    part.source.rows = count;
    part.outputs = job.outputs + first;
    return part;
}

}  // namespace

const char* to_string(dtype type) noexcept {
    switch (type) {
        case dtype::float32: return "float32";
        case dtype::float16: return "float16";
        case dtype::bfloat16: return "bfloat16";
        case dtype::float64: return "float64";
        case dtype::float8_e4m3fn: return "float8_e4m3fn";
        case dtype::float8_e5m2: return "float8_e5m2";
    }
    return "unknown";
}

bool can_convert(dtype from, dtype to) noexcept {
    if (from == to) return true;
    const bool widenable = from == dtype::float32 || from == dtype::float16 ||
                           from == dtype::bfloat16 || from == dtype::float64;
    return widenable && to != dtype::float64;
}

bool encoded_size(std::size_t n_bytes, std::size_t* length) noexcept {
    const std::size_t groups = n_bytes / 3 + (n_bytes % 3 != 0);
    if (groups > SIZE_MAX / 4) return false;
    *length = groups * 4;
    return true;
}

void encode_rows(const strided_rows& source, element_format target, char* const* outputs,
                 unsigned threads, row_output output) {
    if (!can_convert(source.format.type, target.type)) {
        throw std::invalid_argument(std::string("cannot convert ") +
                                    to_string(source.format.type) + " to " +
                                    to_string(target.type));
    }
    const encode_rows_fn kernel = active_kernel();
    const row_job job{source, target, outputs, output};

    const std::size_t row_bytes = source.row_length * dtype_size(target.type);
    std::size_t row_text = 0;
    encoded_size(row_bytes, &row_text);
    const std::size_t total_output = (output == row_output::base64 ? row_text : row_bytes) * source.rows;
    const std::size_t workers = std::min<std::size_t>(
        {std::max(threads, 1u), source.rows, std::max<std::size_t>(total_output / min_output_per_thread, 1)});
    if (workers <= 1) {
        kernel(job);
        return;
    }

    // Contiguous runs of rows, one per worker; this thread takes the first.
    const std::size_t per_worker = (source.rows + workers - 1) / workers;
    std::vector<std::thread> helpers;
    helpers.reserve(workers - 1);
    for (std::size_t first = per_worker; first < source.rows; first += per_worker) {
        const row_job part = slice_rows(job, first, std::min(per_worker, source.rows - first));
        try {
            helpers.emplace_back([kernel, part] { kernel(part); });
        } catch (...) {  // std::system_error, or bad_alloc for the thread's state
            kernel(part);  // no thread to be had: do that share here
        }
    }
    kernel(slice_rows(job, 0, std::min(per_worker, source.rows)));
    for (std::thread& helper : helpers) helper.join();
}

}  // namespace tensorb64
