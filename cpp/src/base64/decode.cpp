// Strict base64 decoding into a caller's output, widening to float32 on the way if asked.
//
// Whole groups go through the active level's group decoder (dispatch/implementation.hpp), which
// only detects that something is wrong; one rule (first_error) then decides what is refused and
// where.
//
// Strictness, compared with CPython 3.13's `binascii.a2b_base64(s, strict_mode=True)`
// (Modules/binascii.c): 3.13 refuses characters outside the alphabet ("Only base64 data is
// allowed"), leading padding, a '=' where a group has fewer than two data characters ("Excess
// padding not allowed": "abcd=", "AAAA===="), data after padding ("ab==AAAA", "ab==\n"),
// discontinuous padding ("ab=a"), one data character past a multiple of 4 and a group short of
// its padding ("Incorrect padding": "ab="). All of these are refused here, on every Python
// version (3.11 and 3.12 let excess padding through, 3.9 and 3.10 have no strict mode). This
// decoder also refuses non-zero bits past the data in the last data character ("AB==", which
// 3.13 accepts as b"\0"): no encoder writes them, and a text that passes decodes to bytes that
// re-encode to exactly that text.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base64/alphabet.hpp"
#include "common/host.hpp"
#include "common/scalar_ops.hpp"
#include "common/thread_pool.hpp"
#include "dispatch/dispatch.hpp"
#include "tensorb64/tensorb64.hpp"

namespace tensorb64 {
namespace {

inline unsigned char value_of(char c) noexcept {
    return base64_values[static_cast<unsigned char>(c)];
}

// Text decoded per block: a multiple of 4 characters whose bytes (3/4 of them) are a whole
// number of elements of every size (1, 2, 4, 8); with its widened float32 values, ~15 KiB of
// stack, which stays in L1.
constexpr std::size_t block_chars = 4096;
constexpr std::size_t block_bytes = block_chars / 4 * 3;

decode_result failure(decode_status status, std::size_t offset, unsigned char character = 0,
                      dtype stored = dtype::float32) noexcept {
    decode_result r;
    r.status = status;
    r.offset = offset;
    r.character = character;
    r.stored = stored;
    return r;
}

// The '=' that end a well-formed text of `length` characters (0, 1 or 2); -1 if its end is not
// well-formed (a length that is not a multiple of 4, "x=y" at the end).
int trailing_padding(const char* text, std::size_t length) noexcept {
    if (length % 4 != 0) return -1;
    if (length == 0 || text[length - 1] != '=') return 0;
    return text[length - 2] == '=' ? 2 : 1;
}

// The one definition of what is refused, in order: the first character that is neither in the
// alphabet nor '='; then the first '=' that cannot be padding (data follows it, or it would make
// a group of fewer than two data characters or more than four characters); then a length that is
// not a multiple of 4; then non-zero bits past the data; then a byte count that is not a whole
// number of elements.
decode_result first_error(const char* text, std::size_t length, dtype stored) noexcept {
    std::size_t first_pad = length;
    for (std::size_t i = 0; i < length; ++i) {
        const char c = text[i];
        if (c == '=') {
            first_pad = std::min(first_pad, i);
        } else if (value_of(c) == base64_invalid) {
            return failure(decode_status::bad_character, i, static_cast<unsigned char>(c));
        }
    }
    std::size_t pads = 0;
    if (first_pad < length) {
        pads = length - first_pad;
        for (std::size_t i = first_pad; i < length; ++i) {
            if (text[i] != '=') return failure(decode_status::bad_padding, first_pad);
        }
        if (first_pad % 4 < 2 || first_pad % 4 + pads > 4) {
            return failure(decode_status::bad_padding, first_pad);
        }
    }
    if (length % 4 != 0) return failure(decode_status::bad_length, length);
    if (pads != 0) {
        const std::size_t last = length - pads - 1;  // the last data character
        const unsigned spare = pads == 2 ? 0xfu : 0x3u;
        if (value_of(text[last]) & spare) return failure(decode_status::trailing_bits, last);
    }
    const std::size_t bytes = length / 4 * 3 - pads;
    if (bytes % dtype_size(stored) != 0) {
        return failure(decode_status::not_whole_values, bytes, 0, stored);
    }
    return {};
}

// Decodes the last group, which has `pads` (1 or 2) '=' in it, into 3 - pads bytes; false if it
// is not canonical (a character outside the alphabet, or non-zero bits past the data).
bool decode_padded_group(const char* text, int pads, unsigned char* out) noexcept {
    const unsigned a = value_of(text[0]), b = value_of(text[1]);
    const unsigned c = pads == 1 ? value_of(text[2]) : 0u;
    if ((a | b | c) & 0x80u) return false;
    const std::uint32_t v = (a << 18) | (b << 12) | (c << 6);
    if (v & (pads == 2 ? 0xffffu : 0xffu)) return false;  // bits past the data
    out[0] = static_cast<unsigned char>(v >> 16);
    if (pads == 1) out[1] = static_cast<unsigned char>(v >> 8);
    return true;
}

std::size_t output_size(std::size_t elements, dtype stored, bool widen) noexcept {
    return elements * (widen ? 4 : dtype_size(stored));
}

// Puts `n` stored elements, host-ordered in `raw`, into `out` as their float32 bits.
void widen_block(dtype stored, const unsigned char* raw, std::size_t n,
                 unsigned char* out) noexcept {
    std::uint32_t wide[block_bytes];  // n <= block_bytes (one-byte elements)
    scalar_ops::widen(stored, raw, n, wide);
    std::memcpy(out, wide, n * 4);  // memcpy: `out` may be unaligned
}

}  // namespace

// Decodes `groups` whole groups of 4 characters into 3 bytes each; false if any character is
// not in the alphabet ('=' included). The scalar level's decoder; the SIMD levels'
// (levels/avx2/, levels/avx512/) give the same bytes and verdict, faster.
bool decode_base64_groups_scalar(const char* text, std::size_t groups,
                                 unsigned char* out) noexcept {
    unsigned bad = 0;
    for (std::size_t g = 0; g < groups; ++g, text += 4, out += 3) {
        const unsigned a = value_of(text[0]), b = value_of(text[1]), c = value_of(text[2]),
                       d = value_of(text[3]);
        bad |= a | b | c | d;
        const std::uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
        out[0] = static_cast<unsigned char>(v >> 16);
        out[1] = static_cast<unsigned char>(v >> 8);
        out[2] = static_cast<unsigned char>(v);
    }
    return (bad & 0x80u) == 0;
}

std::string to_string(const decode_result& result) {
    const std::string at = " at offset " + std::to_string(result.offset);
    switch (result.status) {
        case decode_status::ok: return "ok";
        case decode_status::bad_length:
            return "invalid base64: length " + std::to_string(result.offset) +
                   " is not a multiple of 4";
        case decode_status::bad_character: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", result.character);
            const unsigned char c = result.character;
            const std::string shown =
                c > 0x20 && c < 0x7f
                    ? "'" + std::string(1, static_cast<char>(c)) + "' (" + hex + ")"
                    : std::string(hex);
            return "invalid base64: bad character " + shown + at +
                   " (the alphabet is A-Z, a-z, 0-9, '+' and '/', with '=' padding)";
        }
        case decode_status::bad_padding:
            return "invalid base64: bad padding" + at +
                   " ('=' may only end the text, once or twice, to fill its last group of 4)";
        case decode_status::trailing_bits:
            return "invalid base64: non-zero bits past the data in the character" + at +
                   " (not the canonical encoding)";
        case decode_status::not_whole_values:
            return "decoded length " + std::to_string(result.offset) +
                   " bytes is not a whole number of " + to_string(result.stored) + " values (" +
                   std::to_string(dtype_size(result.stored)) + " bytes each)";
        case decode_status::wrong_output_size:
            return "the output does not hold exactly the " + std::to_string(result.offset) +
                   " bytes of the decoded values";
    }
    return "unknown decode status";
}

decode_result check_base64(const char* text, std::size_t length, dtype stored) noexcept {
    return first_error(text, length, stored);
}

decode_result decoded_elements(const char* text, std::size_t length, dtype stored,
                               std::size_t* elements) noexcept {
    const int pads = trailing_padding(text, length);
    if (pads < 0) return first_error(text, length, stored);
    const std::size_t bytes = length / 4 * 3 - static_cast<std::size_t>(pads);
    if (bytes % dtype_size(stored) != 0) return first_error(text, length, stored);
    *elements = bytes / dtype_size(stored);
    return {};
}

decode_result decode_base64(const char* text, std::size_t length, element_format stored, bool widen,
                            void* out, std::size_t out_bytes) noexcept {
    std::size_t elements = 0;
    const decode_result sized = decoded_elements(text, length, stored.type, &elements);
    if (sized.status != decode_status::ok) return sized;
    if (out_bytes != output_size(elements, stored.type, widen)) {
        return failure(decode_status::wrong_output_size, output_size(elements, stored.type, widen));
    }
    const int pads = trailing_padding(text, length);
    const std::size_t size = dtype_size(stored.type);
    const bool swap = stored.order != host_byte_order && size > 1;
    const bool convert = widen && stored.type != dtype::float32;
    auto* destination = static_cast<unsigned char*>(out);
    unsigned char raw[block_bytes];
    const base64_group_decoder decode_groups = active_implementation().decode_base64_groups;

    for (std::size_t start = 0; start < length; start += block_chars) {
        const std::size_t chars = std::min(block_chars, length - start);
        const bool last = start + chars == length;
        const std::size_t whole = chars / 4 - (last && pads != 0 ? 1 : 0);
        // Without conversion the bytes go straight to their place in `out`.
        unsigned char* bytes = convert ? raw : destination;
        bool ok = decode_groups(text + start, whole, bytes);
        std::size_t n_bytes = whole * 3;
        if (last && pads != 0) {
            ok = ok && decode_padded_group(text + start + whole * 4, pads, bytes + n_bytes);
            n_bytes += 3 - static_cast<std::size_t>(pads);
        }
        if (!ok) return first_error(text, length, stored.type);
        const std::size_t n = n_bytes / size;  // whole: every block but the last is a multiple of 8
        if (swap) swap_elements(bytes, n, size);
        if (convert) {
            widen_block(stored.type, raw, n, destination);
            destination += n * 4;
        } else {
            destination += n_bytes;
        }
    }
    return {};
}

decode_result convert_elements(const void* raw, std::size_t bytes, element_format stored,
                               bool widen, void* out, std::size_t out_bytes) noexcept {
    const std::size_t size = dtype_size(stored.type);
    if (bytes % size != 0) return failure(decode_status::not_whole_values, bytes, 0, stored.type);
    const std::size_t elements = bytes / size;
    if (out_bytes != output_size(elements, stored.type, widen)) {
        return failure(decode_status::wrong_output_size, output_size(elements, stored.type, widen));
    }
    const bool swap = stored.order != host_byte_order && size > 1;
    const bool convert = widen && stored.type != dtype::float32;
    const auto* source = static_cast<const unsigned char*>(raw);
    auto* destination = static_cast<unsigned char*>(out);
    if (!convert) {
        if (bytes != 0) std::memcpy(destination, source, bytes);  // memcpy from null is UB
        if (swap) swap_elements(destination, elements, size);
        return {};
    }
    unsigned char block[block_bytes];
    for (std::size_t done = 0; done < bytes; done += block_bytes) {
        const std::size_t n_bytes = std::min(block_bytes, bytes - done);
        const std::size_t n = n_bytes / size;
        std::memcpy(block, source + done, n_bytes);
        if (swap) swap_elements(block, n, size);
        widen_block(stored.type, block, n, destination);
        destination += n * 4;
    }
    return {};
}

std::size_t decode_each(const decode_task* tasks, std::size_t count, bool base64, bool widen,
                        unsigned threads) {
    const std::size_t parts = row_parts(threads, count);
    std::vector<std::size_t> first_failed(parts, count);
    run_row_parts(count, parts, [&](std::size_t part, std::size_t first, std::size_t n) {
        for (std::size_t i = first; i < first + n; ++i) {
            const decode_task& t = tasks[i];
            const decode_result r =
                base64 ? decode_base64(t.text, t.length, t.stored, widen, t.out, t.out_bytes)
                       : convert_elements(t.text, t.length, t.stored, widen, t.out, t.out_bytes);
            if (r.status != decode_status::ok) {
                first_failed[part] = i;
                return;
            }
        }
    });
    return *std::min_element(first_failed.begin(), first_failed.end());
}

}  // namespace tensorb64
