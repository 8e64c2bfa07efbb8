// tensorb64: element arrays -> base64 text, converting and byte-ordering on the way, in one pass.
//
// This is the whole public C++ API. It knows nothing of Python; the binding and the C++ tests
// are its only callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tensorb64 {

enum class dtype : std::uint8_t {
    float32,
    float16,
    bfloat16,
    float64,
    float8_e4m3fn,  // torch.float8_e4m3fn: no infinities, saturates at +-448
    float8_e5m2,
};

enum class byte_order : std::uint8_t { little, big };

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
inline constexpr byte_order host_byte_order = byte_order::big;
#else
inline constexpr byte_order host_byte_order = byte_order::little;  // MSVC targets are all little
#endif

// How one element is stored: its type and the order of its bytes.
struct element_format {
    dtype type;
    byte_order order;
};

constexpr std::size_t dtype_size(dtype type) noexcept {
    switch (type) {
        case dtype::float64: return 8;
        case dtype::float32: return 4;
        case dtype::float16:
        case dtype::bfloat16: return 2;
        case dtype::float8_e4m3fn:
        case dtype::float8_e5m2: return 1;
    }
    return 0;
}

// The dtype's name, as torch spells it ("float32", "float8_e4m3fn", ...).
const char* to_string(dtype type) noexcept;

// Whether `encode_rows` can turn elements of type `from` into elements of type `to`.
// Any type encodes as itself (its bytes are copied, byte-swapped as asked); float32, float16,
// bfloat16 and float64 convert to every type but float64, exactly as torch's `.to()` does.
bool can_convert(dtype from, dtype to) noexcept;

// The length of the base64 text of `n_bytes` bytes (padding included). Returns false, leaving
// `length` untouched, when that length does not fit in a size_t.
bool encoded_size(std::size_t n_bytes, std::size_t* length) noexcept;

// A two-dimensional array of elements; strides are in bytes and may be negative or zero.
struct strided_rows {
    const void* data;  // address of element [0][0]
    std::size_t rows;
    std::size_t row_length;  // elements in each row
    std::ptrdiff_t row_stride;
    std::ptrdiff_t element_stride;
    element_format format;
};

// What encode_rows writes for each row.
enum class row_output : std::uint8_t {
    base64,  // the base64 text of the row's bytes: encoded_size(row bytes) chars
    bytes,   // the row's bytes themselves: row_length * dtype_size(target.type) of them
};

// Writes each row, converted to `target`, to outputs[row]: its base64 text (exactly
// encoded_size(row_length * dtype_size(target.type)) chars, no terminator) or, with
// row_output::bytes, the converted bytes themselves. `threads` > 1 splits large batches of rows
// across that many threads. Throws std::invalid_argument when !can_convert(source type, target).
void encode_rows(const strided_rows& source, element_format target, char* const* outputs,
                 unsigned threads = 1, row_output output = row_output::base64);

// ---- The /v1/embeddings response body ------------------------------------------------------
//
// The entries of a response's "data" array for base64 rows, comma-separated, without the
// brackets (the caller writes `[` and `]` with the rest of the envelope, so that batches of rows
// written separately concatenate with a comma between them):
//   {"object":"embedding","index":I,"embedding":"<base64 of row I>"},{"object":...}
// I runs from `first_index`; each row's text is what encode_rows writes for it. No rows: nothing.

// The exact length of those entries for `rows` rows of `row_length` elements converted to
// `target`, indices first_index .. first_index + rows - 1. Returns false, leaving `size`
// untouched, when that length (or the last index) does not fit in a size_t.
bool base64_data_size(std::size_t rows, std::size_t row_length, dtype target,
                      std::size_t first_index, std::size_t* size) noexcept;

// Writes those entries to `out`, which holds exactly base64_data_size(...) chars: lays out each
// row's wrapper, then has encode_rows (`threads` as there) fill each row's text in place.
// Returns the end of what it wrote. Throws, before writing anything, std::invalid_argument when
// !can_convert(source type, target type), std::length_error when base64_data_size would return
// false, std::bad_alloc if the table of row pointers cannot be allocated.
char* write_base64_data(const strided_rows& source, element_format target, std::size_t first_index,
                        char* out, unsigned threads = 1);

// ---- SIMD levels ---------------------------------------------------------------------------

enum class simd_level : std::uint8_t { scalar, avx2, avx512, neon };

const char* to_string(simd_level level) noexcept;
bool parse_simd_level(std::string_view name, simd_level* level) noexcept;

// The levels this CPU (and its OS) can run, lowest first.
std::vector<simd_level> available_simd_levels();

// The level in use. The first call picks the best one, or the one named by the environment
// variable TENSORB64_SIMD; it throws std::runtime_error if that names an unknown level or one
// this CPU lacks.
simd_level active_simd_level();

// Switches every later call to `level`; throws std::invalid_argument if this CPU lacks it.
void force_simd_level(simd_level level);

}  // namespace tensorb64
