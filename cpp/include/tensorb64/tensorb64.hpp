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

// Every element type the core reads; the ones marked "output" can also be written.
enum class dtype : std::uint8_t {
    float32,   // output
    float16,   // output
    bfloat16,  // output
    float64,
    float8_e4m3fn,  // output; torch.float8_e4m3fn: no infinities, saturates at +-448
    float8_e5m2,    // output
    int8,
    uint8,
    int16,
    uint16,
    int32,
    uint32,
    int64,
    uint64,
    bool8,  // one byte, 0 or 1 (numpy's and torch's bool)
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
        case dtype::float64:
        case dtype::int64:
        case dtype::uint64: return 8;
        case dtype::float32:
        case dtype::int32:
        case dtype::uint32: return 4;
        case dtype::float16:
        case dtype::bfloat16:
        case dtype::int16:
        case dtype::uint16: return 2;
        case dtype::float8_e4m3fn:
        case dtype::float8_e5m2:
        case dtype::int8:
        case dtype::uint8:
        case dtype::bool8: return 1;
    }
    return 0;
}

// Whether elements of this type can be written (the output types: float32, float16, bfloat16
// and both float8 formats). Every type converts to every output type exactly as torch's `.to()`
// does (integers and bool through float32, as torch converts them).
constexpr bool is_output_type(dtype type) noexcept {
    return type == dtype::float32 || type == dtype::float16 || type == dtype::bfloat16 ||
           type == dtype::float8_e4m3fn || type == dtype::float8_e5m2;
}

// The dtype's name, as torch spells it ("float32", "float8_e4m3fn", ...).
const char* to_string(dtype type) noexcept;

// The length of the base64 text of `n_bytes` bytes (padding included). Returns false, leaving
// `length` untouched, when that length does not fit in a size_t.
bool encoded_size(std::size_t n_bytes, std::size_t* length) noexcept;

// The most dimensions an array may have (numpy's limit).
inline constexpr std::size_t max_dims = 64;

// Rows of elements: every dimension of an array but the last indexes a row, the last one runs
// along it. Strides are in bytes and may be negative or zero.
struct strided_rows {
    const void* data;           // address of the first element of row 0
    std::size_t rows;           // how many rows to encode
    std::size_t row_length;     // elements in each row
    std::ptrdiff_t row_stride;  // bytes from one row to the next, when one dimension indexes rows
    std::ptrdiff_t element_stride;
    element_format format;
    // Rows indexed by several dimensions whose strides do not merge into one (a permuted N-D
    // array): row_dims > 1 sizes and byte strides, outermost first, rows in C order, and
    // row_stride unused. Row r is then the (first_row + r)-th row of that index space, so that a
    // range of rows needs no pointer arithmetic of its own.
    std::size_t row_dims = 1;
    const std::size_t* row_shape = nullptr;
    const std::ptrdiff_t* row_strides = nullptr;
    std::size_t first_row = 0;
};

// The address of row `r` of `source`.
inline const unsigned char* row_address(const strided_rows& source, std::size_t r) noexcept {
    const auto* base = static_cast<const unsigned char*>(source.data);
    if (source.row_dims <= 1) return base + static_cast<std::ptrdiff_t>(r) * source.row_stride;
    std::size_t index = source.first_row + r;
    std::ptrdiff_t offset = 0;
    for (std::size_t d = source.row_dims; d-- > 0;) {
        offset += static_cast<std::ptrdiff_t>(index % source.row_shape[d]) * source.row_strides[d];
        index /= source.row_shape[d];
    }
    return base + offset;
}

// Rows [first, first + count) of `source`, as rows of their own.
inline strided_rows slice_rows(const strided_rows& source, std::size_t first,
                               std::size_t count) noexcept {
    strided_rows part = source;
    if (source.row_dims <= 1) {
        part.data = row_address(source, first);
    } else {
        part.first_row += first;
    }
    part.rows = count;
    return part;
}

// What encode_rows writes for each row.
enum class row_output : std::uint8_t {
    base64,  // the base64 text of the row's bytes: encoded_size(row bytes) chars
    bytes,   // the row's bytes themselves: row_length * dtype_size(target.type) of them
};

// Writes each row, converted to `target`, to outputs[row]: its base64 text (exactly
// encoded_size(row_length * dtype_size(target.type)) chars, no terminator) or, with
// row_output::bytes, the converted bytes themselves. `threads` > 1 splits large batches of rows
// across that many threads of a pool kept for the process (no thread is started per call).
// Throws std::invalid_argument when target.type is not an output type (is_output_type).
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
    std::size_t offset = 0;         // see decode_status
    unsigned char character = 0;    // the offending byte, for bad_character
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
decode_result decode_base64(const char* text, std::size_t length, element_format stored, bool widen,
                            void* out, std::size_t out_bytes) noexcept;

// Converts `bytes` bytes of stored elements (no base64: vLLM's binary body) into `out`, as
// decode_base64 does after decoding: not_whole_values or wrong_output_size on a size mismatch.
decode_result convert_elements(const void* raw, std::size_t bytes, element_format stored,
                               bool widen, void* out, std::size_t out_bytes) noexcept;

// One text (or raw bytes) to decode into its own output, for decode_each.
struct decode_task {
    const char* text;  // base64 text, or with base64 = false raw stored bytes
    std::size_t length;
    element_format stored;
    void* out;
    std::size_t out_bytes;
};

// decode_base64 (base64) or convert_elements (!base64) of each of tasks[0, count), `threads`
// splitting them. Returns the number of the first task (lowest) that failed, or `count` when all
// succeeded (run that one alone for its result). After a failure the outputs of the tasks from
// it on are unspecified (a thread stops at its first failure); those before it are decoded.
std::size_t decode_each(const decode_task* tasks, std::size_t count, bool base64, bool widen,
                        unsigned threads);

// ---- Float text ----------------------------------------------------------------------------
//
// Rows as JSON arrays of numbers (`[v,v,...]`, no spaces), exactly as Python's json.dumps writes
// the row's `.to(torch.float32).tolist()` (float64 sources: the doubles themselves), in one of two
// modes:
enum class float_format : std::uint8_t {
    repr,      // repr() of each value as a double: what json.dumps(t.tolist()) writes today
    shortest,  // the fewest digits that read back to the same float32, laid out as repr lays them
               // out (float64 sources: as repr)
    orjson,    // what orjson writes for the row as a float32 numpy array (vLLM's float route):
               // the shortest digits in orjson's layout (1e-7, 0.000001, 1e+13); float64 sources:
               // what it writes for the doubles as Python floats
};

// Where a row could not be written: NaN and infinities have no JSON text.
struct float_text_result {
    bool finite;
    std::size_t row, column;  // the first non-finite value, when !finite
};

// The most bytes the text of one row of `row_length` values takes (brackets included), or false
// if that does not fit in a size_t.
bool float_row_bound(std::size_t row_length, dtype source, float_format format,
                     std::size_t* bytes) noexcept;

// Writes each row's text to outputs[r] (float_row_bound bytes each) and its length to lengths[r],
// `threads` splitting the rows. Stops at the first non-finite value and says where.
float_text_result write_float_rows(const strided_rows& source, float_format format,
                                   char* const* outputs, std::size_t* lengths,
                                   unsigned threads = 1);

// The first NaN or infinity of `source` as the float text writers see its values (float64
// sources as doubles, others as float32), if any: a check before streaming a body.
float_text_result find_non_finite(const strided_rows& source) noexcept;

// ---- The /v1/embeddings response body ------------------------------------------------------
//
// Each server's JSON body, as data: a response_layout names the keys of a data entry in the order
// the server writes them and the fields of its envelope in order, "data" (the entries) among them.
// Writing another server's body is another row of response_layouts, not another code path. Every
// layout's entries hold the same three keys rearranged ("object":"embedding", "index":I,
// "embedding":<row>), so every size and bound below holds for all of them.

enum class entry_key : std::uint8_t { object, index, embedding };
inline constexpr std::size_t entry_key_count = 3;

struct response_layout {
    const char* name;                         // what callers call it: "openai", "vllm", ...
    entry_key entry_keys[entry_key_count];    // a data entry's keys, in order
    const std::string_view* envelope_fields;  // the envelope's field names, in order, "data" among
    std::size_t envelope_field_count;         // them
};

// Every layout the core writes:
//   openai: {"object":"list","data":[{"object":"embedding","index":I,"embedding":...},...],
//            "model":...,"usage":...}  (OpenAI's own order; what Starlette's JSONResponse sends
//            for the dict a FastAPI server builds)
//   vllm:   {"id":...,"object":...,"created":...,"model":...,"data":[{"index":I,
//            "object":"embedding","embedding":...},...],"usage":...}  (vLLM's EmbeddingResponse
//            and EmbeddingResponseData, their fields in declaration order)
//   sglang: {"data":[{"embedding":...,"index":I,"object":"embedding"},...],"model":...,
//            "object":...,"usage":...}  (SGLang's EmbeddingResponse and EmbeddingObject, their
//            fields in declaration order, as its route sends them)
//   infinity: {"object":"list","data":[{"object":"embedding","embedding":...,"index":I},...],
//            "model":...,"usage":...,"id":...,"created":...}  (Infinity's OpenAIEmbeddingResult
//            and _EmbeddingObject, their fields in declaration order, as its route sends them)
// (A pointer to the table, not the array itself: the table is constexpr where it is defined, for
// its compile-time check, and MSVC refuses an array declared `extern const` here and defined
// `constexpr` there (C2370), as it gives a constexpr variable internal linkage unless
// /Zc:externConstexpr is on.)
extern const response_layout* const response_layouts;
extern const std::size_t response_layout_count;
inline const response_layout& openai_response_layout() noexcept { return response_layouts[0]; }

// The layout named `name`, or nullptr.
const response_layout* find_response_layout(std::string_view name) noexcept;

// A field of the envelope as JSON text: its key (quotes included, escaped as the server's
// serialiser escapes it) and its value.
struct json_member {
    std::string_view key, value;
};

// A body's envelope is the text before the data entries (up to and including `"data":[`), its
// head, and after them (from `]` on), its tail. Laid out from its members, in the order given:
// one whose key names a field of the layout (`"model"`) goes in that field's place (a later one
// for the same field replaces it, as a dict's update does), the others after the layout's last
// field, in their order; a field given no member is left out.

// The lengths of the head and the tail. Throws std::invalid_argument for a member whose key is
// `"data"` (the entries' place), std::length_error if a length does not fit in a size_t.
void body_envelope_sizes(const response_layout& layout, const json_member* members,
                         std::size_t member_count, std::size_t* head_size, std::size_t* tail_size);

// Writes the head to `head` and the tail to `tail` (body_envelope_sizes chars each).
void write_body_envelope(const response_layout& layout, const json_member* members,
                         std::size_t member_count, char* head, char* tail) noexcept;

// What a data entry's row is written as.
struct entry_format {
    bool base64;          // the base64 text of the row converted to `target`; else float text:
    dtype target;         //   (base64) the type the row is converted to
    float_format format;  //   (float text) its format
    dtype source;         //   (float text) the rows' type (float64 text is longer than float32's)
};

// The most bytes one data entry of a row of `row_length` values takes with its separating comma,
// in any layout, its index at most `last_index`: exact but for the index's digits for base64, a
// bound for float text. False, leaving `size` untouched, if that does not fit in a size_t.
bool data_entry_bound(std::size_t row_length, std::size_t last_index, const entry_format& format,
                      std::size_t* size) noexcept;

// The entries of a response's "data" array, comma-separated, without the brackets (the envelope
// holds `[` and `]`), each row's keys in its layout's order:
//   {"object":"embedding","index":I,"embedding":"<base64 of row I>"},{"object":...}
// I runs from `first_index`. With `leading_comma` they start with a `,`, so that the entries of
// rows [a, b) and [b, c), written separately, concatenate to those of [a, c). No rows: nothing
// (not even the comma).

// The exact length of the base64 entries of `rows` rows of `row_length` elements converted to
// `target`, indices first_index .. first_index + rows - 1, and their leading comma if asked.
// Returns false, leaving `size` untouched, when that length (or the last index) does not fit in
// a size_t.
bool base64_data_size(std::size_t rows, std::size_t row_length, dtype target,
                      std::size_t first_index, std::size_t* size,
                      bool leading_comma = false) noexcept;

// Writes those entries to `out`, which holds exactly base64_data_size(...) chars: lays out each
// row's entry (its keys in `layout`'s order), then has encode_rows (`threads` as there) fill each
// row's text in place. Returns the end of what it wrote. Throws, before writing anything,
// std::invalid_argument when !is_output_type(target.type), std::length_error when
// base64_data_size would return false, std::bad_alloc if the table of row pointers cannot be
// allocated.
char* write_base64_data(const strided_rows& source, element_format target, std::size_t first_index,
                        char* out, unsigned threads = 1,
                        const response_layout& layout = openai_response_layout(),
                        bool leading_comma = false);

// The most bytes the "data" entries of float rows take, a leading comma included (as
// base64_data_size, above, for base64).
bool float_data_bound(std::size_t rows, std::size_t row_length, dtype source, float_format format,
                      std::size_t first_index, std::size_t* size) noexcept;

// Writes those entries (`{"object":"embedding","index":I,"embedding":[...]}`, comma-separated, no
// brackets, a leading comma if asked; their keys in `layout`'s order) to `out`, which holds
// float_data_bound bytes, `threads` splitting the rows; *end is then the end of what was written.
// Stops at the first non-finite value and says where.
float_text_result write_float_data(const strided_rows& source, float_format format,
                                   std::size_t first_index, char* out, char** end,
                                   unsigned threads = 1,
                                   const response_layout& layout = openai_response_layout(),
                                   bool leading_comma = false);

// One chunk of a body streamed in chunks: head[head_begin, head_end), a `,` if leading_comma, the
// entries of rows [row_begin, row_end), tail[tail_begin, tail_end).
struct body_chunk {
    std::size_t head_begin, head_end, row_begin, row_end;
    bool leading_comma;
    std::size_t tail_begin, tail_end;
};

// What the chunks of a body are planned from: the envelope's sizes, the rows, a bound on one
// entry with its comma (data_entry_bound of the last index) and the chunk size asked for.
struct body_chunk_rule {
    std::size_t head_size, tail_size, rows, entry_bound, chunk_size;
};

// The chunks of a streamed body, one at a time: the first (previous == nullptr) or the one after
// `previous`; false after the last. Each chunk holds whole rows' entries, as many as fit in
// chunk_size at entry_bound each, the head joined to the first and the tail to the last where
// they fit; so every chunk is at most chunk_size bytes, except one holding a single row whose
// entry alone is larger. A head that does not fit beside one entry, and a tail that does not fit
// after the last rows, come in chunk_size pieces of their own; with no rows, head and tail are
// cut into chunk_size pieces together.
bool next_body_chunk(const body_chunk_rule& rule, const body_chunk* previous,
                     body_chunk* next) noexcept;

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
