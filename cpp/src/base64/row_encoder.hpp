// The one-pass row encoder (base64 text, or the converted bytes themselves), assembled from a
// level's building blocks (`Ops`, shaped like scalar_ops). Each level's encoder instantiates it
// with its own Ops, so the whole loop is compiled with that level's flags and has internal
// linkage.
//
// A row is encoded directly from the caller's memory when no conversion is needed. Otherwise it
// goes through in blocks of `block_elements`: gathered (strides, byte order) and widened to
// float32 bits, narrowed to the target type, byte-swapped if asked, and base64-encoded while
// still in L1. No full-size temporary is ever made.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/formats.hpp"
#include "common/host.hpp"
#include "common/scalar_ops.hpp"
#include "dispatch/implementation.hpp"

namespace tensorb64 {
namespace {

// 768 elements of 1, 2, 4 or 8 bytes are a whole number of 3-byte base64 groups, so every
// block but the last ends on a group boundary and the text of the blocks simply concatenates.
constexpr std::size_t block_elements = 768;
static_assert(block_elements % 3 == 0, "blocks must end on base64 group boundaries");

template <class Ops>
void encode_row(const unsigned char* src, const strided_rows& source, element_format target,
                row_output output, char* out) noexcept {
    const element_format from = source.format;
    const std::size_t n = source.row_length;
    const std::ptrdiff_t stride = source.element_stride;
    const std::size_t in_size = dtype_size(from.type);
    const std::size_t out_size = dtype_size(target.type);
    const bool contiguous = stride == static_cast<std::ptrdiff_t>(in_size);
    const bool same_type = from.type == target.type;
    const bool swap_bytes = same_type ? from.order != target.order : false;
    const bool as_base64 = output == row_output::base64;
    const std::uint16_t bf16_nan = bf16_nan_from(from.type);
    // Writes the next `size` converted bytes of the row and moves past them.
    const auto emit = [as_base64, &out](const unsigned char* bytes, std::size_t size) {
        if (as_base64) {
            Ops::base64(bytes, size, out);
            out += size / 3 * 4;  // exact for every block but the last, which ends the row
        } else if (size != 0) {   // an empty row may have no memory at all (memcpy of null is UB)
            std::memcpy(out, bytes, size);
            out += size;
        }
    };

    if (same_type && contiguous && (!swap_bytes || in_size == 1)) {
        emit(src, n * in_size);
        return;
    }

    alignas(64) unsigned char raw[block_elements * 8];
    alignas(64) std::uint32_t wide[block_elements];
    alignas(64) unsigned char narrow[block_elements * 4];
    for (std::size_t done = 0; done < n; done += block_elements) {
        const std::size_t k = std::min(block_elements, n - done);
        const unsigned char* block = src + static_cast<std::ptrdiff_t>(done) * stride;
        const unsigned char* bytes;
        if (same_type) {
            gather(block, k, stride, in_size, raw);
            if (swap_bytes) Ops::swap_bytes(raw, k, in_size);
            bytes = raw;
        } else {
            const unsigned char* elements = block;
            if (!contiguous || (from.order != host_byte_order && in_size > 1)) {
                gather(block, k, stride, in_size, raw);
                if (from.order != host_byte_order && in_size > 1) Ops::swap_bytes(raw, k, in_size);
                elements = raw;
            }
            // float32 text in host order: a level may widen and encode in registers.
            if (as_base64 && target.type == dtype::float32 && target.order == host_byte_order &&
                Ops::widen_base64(from.type, elements, k, out)) {
                out += k * 4 / 3 * 4;
                continue;
            }
            Ops::widen(from.type, elements, k, wide);
            unsigned char* converted = reinterpret_cast<unsigned char*>(wide);
            if (target.type != dtype::float32) {
                Ops::narrow(wide, k, target.type, bf16_nan, narrow);
                converted = narrow;
            }
            if (target.order != host_byte_order && out_size > 1)
                Ops::swap_bytes(converted, k, out_size);
            bytes = converted;
        }
        emit(bytes, k * out_size);
    }
}

template <class Ops>
void encode_rows_with(const row_job& job) noexcept {
    const strided_rows& source = job.source;
    for (std::size_t r = 0; r < source.rows; ++r) {
        encode_row<Ops>(row_address(source, r), source, job.target, job.output, job.outputs[r]);
    }
}

}  // namespace
}  // namespace tensorb64
