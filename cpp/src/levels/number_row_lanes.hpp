// What the SIMD levels' JSON number-row parsers (levels/avx2/ and levels/avx512/ number_parser.cpp)
// share and is no instruction set's own: the separators gathered ahead of the conversion, the
// powers of ten, the scalar parser's readings of the lanes and rows the vector paths leave, in
// each of the two row types.
//
// Everything here has internal linkage (an unnamed namespace): each level's file compiles its own
// copy with its own flags, so that no copy built with AVX-512 can stand in for another level's.
#pragma once

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

#include <cstddef>
#include <cstdint>

#include "json/number_parser.hpp"
#include "json/number_parser_pow10.hpp"

namespace tensorb64 {
namespace {

// The index of the lowest set bit of a nonzero value (bsf: neither level requires BMI1).
inline unsigned lowest_bit(std::uint64_t v) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
    unsigned long index;
    _BitScanForward64(&index, v);
    return static_cast<unsigned>(index);
#else
    return static_cast<unsigned>(__builtin_ctzll(v));
#endif
}

// The number of set bits (SWAR: neither level requires POPCNT).
inline unsigned bit_count(std::uint64_t v) noexcept {
    v -= (v >> 1) & 0x5555555555555555ull;
    v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
    v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return static_cast<unsigned>((v * 0x0101010101010101ull) >> 56);
}

// Texts in 16-bit segments of a 64-bit mask (four numbers of at most 15 bytes, a bit a byte).
constexpr std::uint64_t kSegmentLow = 0x0001000100010001ull;   // bit 0 of each 16-bit segment
constexpr std::uint64_t kSegmentHigh = 0x8000800080008000ull;  // bit 15 of each

// Bit 15 of each 16-bit segment of x set where that segment is nonzero.
inline std::uint64_t nonzero_segments(std::uint64_t x) noexcept {
    return (((x & ~kSegmentHigh) + ~kSegmentHigh) | x) & kSegmentHigh;
}

// The row's separators (',' and the first ']'), in order, as positions in a buffer, found a chunk
// at a time from 64-byte blocks. Finding them apart from converting the numbers keeps the block
// loop's hard-to-predict branches out of the long chains of the conversion, which then overlap
// from group to group.
// `block_masks(block, left, &commas, &closes)`: the level's bit masks of ',' and ']' in the block's
// first min(left, 64) bytes (no byte at or past `left` read).
// `unrolled`: positions written per block whatever its count (see fill), a template argument so
// that the loop unrolls: 4 suits json.dumps's rows (at most 4 numbers of 15 or more bytes in 64),
// 6 orjson's (12 bytes a number).
template <int unrolled,
          void (*block_masks)(const char*, std::size_t, std::uint64_t*, std::uint64_t*) noexcept>
class separator_chunks {
public:
    static constexpr std::size_t chunk = 64;  // separators gathered before converting

    separator_chunks(const char* p, const char* end) noexcept : block_(p), end_(end) {}

    // Adds separators after the `count` kept at the front of stops() until there are at least
    // `chunk`, or the first ']' is in, or the text ends; returns how many there are now.
    std::size_t fill(std::size_t count) noexcept {
        while (count < chunk && !closed_ && block_ < end_) {
            std::uint64_t bits, closes;
            block_masks(block_, static_cast<std::size_t>(end_ - block_), &bits, &closes);
            if (closes != 0) {  // the row ends at its first ']'
                const std::uint64_t close = closes & (0 - closes);
                bits = (bits & (close - 1)) | close;
                closed_ = true;
            }
            const unsigned n = bit_count(bits);
            // `unrolled` positions written whatever the count (the extra ones, past the last bit,
            // are not counted), then the rest one by one.
            const char** at = stops_ + count;
            for (int i = 0; i < unrolled; ++i) {
                at[i] = block_ + lowest_bit(bits | std::uint64_t{1} << 63);
                bits &= bits - 1;
            }
            for (int i = unrolled; bits != 0; ++i) {
                at[i] = block_ + lowest_bit(bits);
                bits &= bits - 1;
            }
            count += n;
            block_ += 64;
        }
        return count;
    }

    const char** stops() noexcept { return stops_; }
    // Whether the separators found end with the row's ']'.
    bool closed() const noexcept { return closed_; }

private:
    const char* block_;
    const char* end_;
    bool closed_ = false;
    const char* stops_[chunk + 64 + unrolled];  // a block adds up to 64, `unrolled` at least
};

// 10^22 is the largest power of ten a double holds exactly (the last entry repeats it, for
// 8-lane table lookups).
alignas(64) constexpr double kPow10Double[24] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e22};

// The high 64 bits of the 128-bit floors of 10^-f's mantissa for f in [0, 24) (f = 0 unused: a
// fast text has a fraction), from the scalar parser's table: the float64 rows' Eisel-Lemire lanes.
struct pow10_high_table {
    alignas(64) std::uint64_t high[24];
};
constexpr pow10_high_table make_pow10_highs() {
    pow10_high_table t{};
    for (int f = 0; f < 24; ++f) t.high[f] = kPow10Mantissa[-f - kPow10QMin][0];
    return t;
}
constexpr pow10_high_table kPow10High = make_pow10_highs();

// Where the two row types differ outside the vectors: one number by the scalar parser, and the
// scalar parser's row loop from a number on.
inline const char* parse_one(const char* p, const char* end, float* out, const char** error_at,
                             const char** expected) noexcept {
    return detail::parse_one_float32(p, end, out, error_at, expected);
}
inline const char* parse_one(const char* p, const char* end, double* out, const char** error_at,
                             const char** expected) noexcept {
    return detail::parse_one_double(p, end, out, error_at, expected);
}
inline detail::number_row scalar_from(const char* p, const char* end, float* out,
                                      std::size_t capacity, std::size_t count) noexcept {
    return detail::parse_number_row_scalar_from(p, end, out, capacity, count);
}
inline detail::number_row scalar_from(const char* p, const char* end, double* out,
                                      std::size_t capacity, std::size_t count) noexcept {
    return detail::parse_number_row_double_scalar_from(p, end, out, capacity, count);
}

// After a group's values were written at out[count..] (those below `capacity`): each lane in
// `slow` read by the scalar parser from its text [start, stop) (text(i, &start, &stop)). False
// where a lane's number does not end at its stop: *row is then the scalar parser's reading of the
// row's rest from that number on.
template <class T, class lane_text>
inline bool read_slow_lanes(unsigned slow, lane_text text, const char* end, T* out,
                            std::size_t capacity, std::size_t count,
                            detail::number_row* row) noexcept {
    const std::size_t room = capacity > count ? capacity - count : 0;
    for (; slow != 0; slow &= slow - 1) {
        const unsigned i = lowest_bit(slow);
        const char* start;
        const char* stop;
        text(i, &start, &stop);
        T value;
        const char* error_at;
        const char* expected;
        if (parse_one(start, end, &value, &error_at, &expected) != stop) {
            *row = scalar_from(start, end, out, capacity, count + i);
            return false;
        }
        if (i < room) out[count + i] = value;
    }
    return true;
}

// A row read to its ']': `end` just past it, `count` numbers.
inline detail::number_row finished(const char* end, std::size_t count) noexcept {
    detail::number_row row;
    row.end = end;
    row.count = count;
    return row;
}

}  // namespace
}  // namespace tensorb64
