// tensorb64: element arrays -> base64 text, converting and byte-ordering on the way, in one pass.
//
// This is the whole public C++ API. It knows nothing of Python; the binding and the C++ tests
// are its only callers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
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

// ---- decoding ------------------------------------------------------------------------------
//
// Strict base64 back to elements, for clients and tests. Strict means canonical: the standard
// alphabet only, a length that is a multiple of 4, '=' only as the last one or two characters
// (exactly as many as the last group needs), and zero bits past the data in the last data
// character. Every text this library (or any correct encoder) writes passes; every text that
// Python 3.13's `binascii.a2b_base64(s, strict_mode=True)` refuses is refused too.

// What was wrong with a text, if anything.
enum class decode_status : std::uint8_t {
    ok,
    bad_length,         // the length is not a multiple of 4 (offset: the length)
    bad_character,      // neither in the alphabet nor '=' (offset: where; character: it)
    bad_padding,        // '=' where none may be, or data after it (offset: the first such '=')
    trailing_bits,      // the last data character has non-zero bits past the data (offset: it)
    not_whole_values,   // the bytes are not a whole number of elements (offset: the byte count)
    wrong_output_size,  // the caller's output does not hold exactly the decoded elements
};

struct decode_result {
    decode_status status = decode_status::ok;
    std::size_t offset = 0;       // see decode_status
    unsigned char character = 0;  // the offending byte, for bad_character
    dtype stored = dtype::float32;  // the elements' type, for not_whole_values
};

// Says what was wrong, naming the offset ("bad character '!' (0x21) at offset 2"); "ok" if nothing.
std::string to_string(const decode_result& result);

// The first thing wrong with `text` as strict base64 holding elements of type `stored`, checking
// every character (status ok if nothing). In order: the first character neither in the alphabet
// nor '='; the first '=' that cannot be padding; the length; bits past the data; whole elements.
decode_result check_base64(const char* text, std::size_t length, dtype stored) noexcept;

// The number of elements of type `stored` that `text` decodes to, judged by its length and its
// trailing '=' alone (decode_base64 checks the rest as it goes). On failure returns what
// check_base64 does (a bad character before the end wins over a bad length).
decode_result decoded_elements(const char* text, std::size_t length, dtype stored,
                               std::size_t* elements) noexcept;

// Decodes `text` into `out`, which must hold exactly its decoded elements: the stored elements
// themselves, in host byte order (`out_bytes` = elements * dtype_size(stored.type)), or with
// `widen` their float32 values (`out_bytes` = elements * 4), converted as torch's
// `.to(torch.float32)` does, a block at a time (no temporary the size of the output). On an error
// `out` holds unspecified bytes.
decode_result decode_base64(const char* text, std::size_t length, element_format stored,
                            bool widen, void* out, std::size_t out_bytes) noexcept;

// Converts `bytes` bytes of stored elements (no base64: vLLM's binary body) into `out`, as
// decode_base64 does after decoding: not_whole_values or wrong_output_size on a size mismatch.
decode_result convert_elements(const void* raw, std::size_t bytes, element_format stored,
                               bool widen, void* out, std::size_t out_bytes) noexcept;

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
