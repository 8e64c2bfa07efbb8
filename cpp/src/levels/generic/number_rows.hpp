// The JSON number-row parsers' skeleton, written once over the vector vocabulary
// (levels/vocabulary.hpp) and instantiated by each SIMD level: included inside the level's
// namespace (tensorb64::avx2, ::avx512, ::neon) by its number-parser files, after its
// vocabulary.hpp, as simdjson's generic/ code is; every name here is then the level's own, built
// with its flags. What a level does better its own way (the avx512 level's windows of four
// numbers gathered by vpermb) stays in its folder and hands the row's rest to this.
//
// A row is read kLanes64 numbers at a time, to float32 or to float64 (the type of `out`):
//
//  * The row's separators (',' and the first ']') are gathered ahead, 64 bytes at a time
//    (separator_chunks): finding them apart from converting the numbers keeps the block loop's
//    hard-to-predict branches out of the long chains of the conversion, which then overlap from
//    group to group.
//  * Each number is the text between the separator before it (one byte past it, two after ", ")
//    and its own. Its digits are read from a window ending at its separator, in one of two
//    layouts, chosen once a row from the commas in its first 64 bytes (more than four: numbers of
//    at most 15 bytes, orjson's and vLLM's float32 rows; at most four: json.dumps's 17-digit
//    rows):
//      - short numbers (short_digits_of): four numbers to a text64, each the 16 bytes ending at
//        its separator; one shuffle16 a number, its control from a table by the point's place and
//        the first digit's, drops the point and the bytes before the digits. At most 14 digits:
//        w / 10^f is then exact for both row types (Clinger's fast path);
//      - any number (any_digits_of): two numbers to a text64, each the 32 bytes ending at its
//        separator; the bytes up to the point take those of the same window loaded a byte
//        earlier (which drops the point), the bytes before the digits are zeroed. At most 25
//        bytes (a sign, a point and 23 digits).
//    The shape -?(0|[1-9][0-9]*)\.[0-9]+ is checked on bit masks of several texts at once
//    (shape_of); digit_words and multiplies make the digits an integer w below 2^64, the digits
//    after the point f.
//  * float32 rows: w / 10^f in doubles, then float32 (double, then float32, as the reference);
//    above w = 2^53, where the conversion of w rounds, a lane is kept only where the quotient is
//    more than 8 units of its last place from a float32 midpoint (to_float32).
//  * float64 rows: Eisel-Lemire in integer lanes (to_float64, which says why a decided lane is
//    right); about 1 lane in 512 is left undecided.
//  * A number of another shape (exponents, integers, NaN, whitespace, errors, longer texts), an
//    undecided lane, and a row's first numbers whose window would begin before the row go through
//    the scalar parser: the number alone when it ends at its separator, otherwise the rest of the
//    row, so that values, ends and errors equal the scalar level's (number_parser_tests: every
//    level against the scalar one).
//
// The double arithmetic runs under ieee_fp_environment (round to nearest even, no FTZ/DAZ),
// whatever the caller's settings.
//
// Needs, included before: <algorithm>, <cstddef>, <cstdint>, <cstring>, <type_traits>, <utility>,
// common/fp_environment.hpp,
// json/number_parser.hpp, json/number_parser_pow10.hpp, the level's vocabulary.hpp.

using detail::number_row;

// f(std::integral_constant<int, i>{}) for i = 0, 1, ..., n - 1, written out: a group's loop over
// its text64s, whose registers must stay registers (GCC leaves such a loop rolled at -O2 and its
// array of vectors in memory: measured 12% slower on the avx512 level's float64 rows).
template <class function, int... i>
inline void each_index(function f, std::integer_sequence<int, i...>) noexcept {
    (f(std::integral_constant<int, i>{}), ...);
}
template <int n, class function>
inline void unrolled(function f) noexcept {
    each_index(f, std::make_integer_sequence<int, n>{});
}

// ---- the row's separators ----

// The ',' and ']' masks of a block of the row: its first min(left, 64) bytes (a last block short
// of 64 is copied into zeros first: no byte at or past `left` is read).
inline void block_masks(const char* block, std::size_t left, std::uint64_t* commas,
                        std::uint64_t* closes) noexcept {
    text64 bytes;
    if (left >= 64) {
        bytes = load(block);
    } else {
        alignas(64) char last[64] = {};
        std::memcpy(last, block, left);
        bytes = load(last);
    }
    *commas = eq_bits(bytes, ',');
    *closes = eq_bits(bytes, ']');
}

// The row's separators (',' and the first ']'), in order, as positions in a buffer, found a chunk
// at a time. `unrolled`: positions written per block whatever its count (see fill), a template
// argument so that the loop unrolls: 4 suits json.dumps's rows (at most 4 numbers of 15 or more
// bytes in 64), 6 orjson's (12 bytes a number).
template <int unrolled>
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
            // are not counted), then the rest one by one. (The block's address in a local: the
            // stores into stops_ could otherwise alias block_, read again after each.)
            const char* const block = block_;
            const char** at = stops_ + count;
            for (int i = 0; i < unrolled; ++i) {
                at[i] = block + lowest_bit(bits | std::uint64_t{1} << 63);
                bits &= bits - 1;
            }
            for (int i = unrolled; bits != 0; ++i) {
                at[i] = block + lowest_bit(bits);
                bits &= bits - 1;
            }
            count += n;
            block_ = block + 64;
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

// The row's layout, from the commas in its first 64 bytes (or all of it, if shorter): numbers of
// at most 15 bytes (orjson's and vLLM's float32 rows) where there are more than 4.
inline bool short_numbers(const char* p, const char* end) noexcept {
    std::uint64_t commas, closes;
    block_masks(p, static_cast<std::size_t>(end - p), &commas, &closes);
    return bit_count(commas) > 4;
}

// ---- a group's texts as integers ----

constexpr int kGroup = kLanes64;

// A group's texts: number i is [start[i], stop[i]), ending at its separator stop[i]. A number
// starts one byte past a ',' or, after ", " (Python's json.dumps layout), two.
struct number_group {
    const char* start[kGroup + 1];
    const char* stop[kGroup];
};

// Number i is w[i] / 10^f[i] (with its sign in bit i of `negative`) where bit i of `fast` is set,
// w[i] exact below 2^64.
struct group_digits {
    u64x w;
    u64x f;
    unsigned fast;
    unsigned negative;
};

// A row's first numbers have no window before them: theirs is read from these zeros (and not
// kept).
alignas(64) constexpr char kZeros[64] = {};

// Texts in 16-bit segments of a 64-bit mask (four numbers of at most 15 bytes, a bit a byte).
constexpr std::uint64_t kSegmentLow = 0x0001000100010001ull;   // bit 0 of each 16-bit segment
constexpr std::uint64_t kSegmentHigh = 0x8000800080008000ull;  // bit 15 of each

// Bit 15 of each 16-bit segment of x set where that segment is nonzero.
inline std::uint64_t nonzero_segments(std::uint64_t x) noexcept {
    return (((x & ~kSegmentHigh) + ~kSegmentHigh) | x) & kSegmentHigh;
}

// ---- any number: two to a text64 (any_digits_of) ----

// At most 25 bytes of text (a sign, a point and 23 digits, or 24 without a sign), so that the
// first 8 bytes of a 32-byte window hold no digit once the point is dropped.
constexpr std::size_t kMaxFastLength = 25;
// A number's window is the 32 bytes before its separator and the byte before them.
constexpr std::ptrdiff_t kWindow = 33;

// The top `length` bits of a 32-bit half: the text's bytes in a window ending at its separator;
// none when it is longer than the fast path takes.
inline std::uint32_t text_bytes(const char* start, const char* stop) noexcept {
    const std::size_t length = static_cast<std::size_t>(stop - start);
    return length <= kMaxFastLength ? static_cast<std::uint32_t>(~std::uint64_t{0} << (32 - length))
                                    : 0;
}

// The shape checks of two texts, each right-aligned in one 32-byte half of a window: bit j of
// each mask is byte j. Both halves at once in 64-bit integers: a text is at most 25 bytes, so no
// shift by one carries a text's bit into the other half (bits 0-6 and 32-38 are never text).
struct pair_shape {
    unsigned fast;      // bit h: half h is -?(0|[1-9][0-9]*)\.[0-9]+ with at most 22 digits
                        // after the point
    unsigned point[2];  // the point's byte in each half (31 where there is none)
    std::uint64_t through_point;  // the bytes up to each point, which move one byte right
};

// `text`: the texts' bytes; `negative`: bit h says half h's text starts with '-' (tested on the
// text's first byte in memory).
inline pair_shape shape_of(std::uint64_t text, std::uint64_t digits, std::uint64_t points,
                           std::uint64_t zeros, unsigned negative) noexcept {
    constexpr std::uint64_t low_bits = 0x0000000100000001ull;  // bit 0 of each half
    const std::uint64_t first = text & ~(text << 1);
    const std::uint64_t sign =
        first & ((negative & 1 ? 0xffffffffull : 0) | (negative & 2 ? 0xffffffff00000000ull : 0));
    const std::uint64_t integer_start = (first & ~sign) | (sign << 1);
    // The non-digits besides those: exactly one in each half, the point. The arithmetic below on
    // both halves is right only where half 0 has one (else its borrow crosses into half 1, which
    // is then refused too).
    const std::uint64_t point = text & ~digits & ~sign;
    // Each term nonzero in a half whose text is not of the shape: a second non-digit; one that is
    // not a '.'; no digit before it (the byte before a text is its separator, or a zero of
    // kZeros); a leading zero before a digit; the point last (bit 31: the text ends there) or more
    // than 22 digits after it (below bit 9).
    const std::uint64_t misfit =
        (point & (point - low_bits)) | (point & ~points) | ((point >> 1) & ~digits) |
        (zeros & integer_start & (digits >> 1)) | (point & 0x800001ff800001ffull);
    const std::uint32_t point_0 = static_cast<std::uint32_t>(point);
    const std::uint32_t point_1 = static_cast<std::uint32_t>(point >> 32);
    const bool fast_0 = static_cast<std::uint32_t>(misfit) == 0 && point_0 != 0;
    const bool fast_1 = (misfit >> 32) == 0 && point_1 != 0 && point_0 != 0;
    pair_shape s;
    s.fast = unsigned{fast_0} | unsigned{fast_1} << 1;
    s.point[0] = lowest_bit(point_0 | 0x80000000u);
    s.point[1] = lowest_bit(point_1 | 0x80000000u);
    s.through_point = point ^ (point - low_bits);  // it and the bits under it
    return s;
}

// The place of a text's first digit in its window once the point is dropped (it moves to
// 33 - length, past its sign); past the window (32) for a text the fast path does not take.
inline unsigned first_digit_at(std::uint32_t text, const char* start, const char* stop,
                               bool minus) noexcept {
    const unsigned length = static_cast<unsigned>(stop - start);
    return text == 0 || length < 3 ? 32u : 33 - length + unsigned{minus};
}

inline group_digits any_digits_of(const char* row, const number_group& g) noexcept {
    // (The stops ascend: where the first number's window is in the row, all are.)
    const bool all_inside = g.stop[0] - row >= kWindow;
    unsigned fast = 0, negative = 0;
    std::uint64_t fractions = 0;  // byte i: number i's digits after the point
    text64 words[kGroup / 2];
    unrolled<kGroup / 2>([&](auto index) noexcept {
        constexpr int k = decltype(index)::value;
        constexpr int a = 2 * k, b = 2 * k + 1;
        const bool inside_a = all_inside || g.stop[a] - row >= kWindow;
        const bool inside_b = all_inside || g.stop[b] - row >= kWindow;
        const char* const window_a = inside_a ? g.stop[a] - 32 : kZeros + 32;
        const char* const window_b = inside_b ? g.stop[b] - 32 : kZeros + 32;
        const std::uint32_t text_a = text_bytes(g.start[a], g.stop[a]);
        const std::uint32_t text_b = text_bytes(g.start[b], g.stop[b]);
        const text64 text = load_halves(window_a, window_b);
        const text64 values = sub8(text, splat8('0'));
        // A text's first byte: in it, or its separator (a text ends before `end`).
        const bool minus_a = *g.start[a] == '-', minus_b = *g.start[b] == '-';
        const pair_shape shape =
            shape_of(text_a | std::uint64_t{text_b} << 32, le_bits(values, 9), eq_bits(text, '.'),
                     eq_bits(text, '0'), unsigned{minus_a} | unsigned{minus_b} << 1);
        fast |= (shape.fast & (unsigned{inside_a} | unsigned{inside_b} << 1)) << a;
        negative |= (unsigned{minus_a} | unsigned{minus_b} << 1) << a;
        // (A slow lane's is 0: its point may be anywhere, and f indexes 24-entry tables.)
        fractions |= std::uint64_t{shape.fast & 1 ? 31 - shape.point[0] : 0} << (8 * a) |
                     std::uint64_t{shape.fast & 2 ? 31 - shape.point[1] : 0} << (8 * b);
        // Drop the point: the bytes up to it take the earlier window's (their left neighbours');
        // then zero the bytes before the text's first digit.
        const text64 moved = blend_below(sub8(load_halves(window_a - 1, window_b - 1), splat8('0')),
                                         values, shape.point[0] + 1, shape.point[1] + 1);
        words[k] =
            digit_words(zero_below(moved, first_digit_at(text_a, g.start[a], g.stop[a], minus_a),
                                   first_digit_at(text_b, g.start[b], g.stop[b], minus_b)));
    });
    // Each text's four 8-digit words, one a column: the first is zero (at most 24 digits).
    u64x column[4];
    half_columns(words, column);
    group_digits d;
    // w = (first * 10^8 + second) * 10^8 + last, within 64 bits when first <= 1843.
    d.fast = fast & ~mask_bits(greater(column[1], splat64(1843)));
    d.negative = negative;
    const u64x e8 = splat64(100000000);
    const u64x upper = mul_low32(column[1], e8) + column[2];  // below 2^38
    d.w = mul_low32(upper, e8) + shift_left<32>(mul_low32(shift_right<32>(upper), e8)) + column[3];
    d.f = widen_bytes(fractions);
    return d;
}

// ---- short numbers (at most 15 bytes), four to a text64 (short_digits_of) ----
//
// Each number's text is the 16 bytes ending at its separator, one a 16-byte piece; one shuffle16
// drops the point (the bytes up to it move one place right) and zeroes the bytes before the
// digits, its control from a table by the point's place and the first digit's. The shape checks
// run on four numbers at once in 64-bit masks (16 bits a number: with at most 15 bytes, bit 0 of a
// segment is never text, so no shift by one carries one number's bits into the next's). At most
// 14 digits: w < 10^14 < 2^53, so the conversions are exact and the quotient w / 10^f the
// correctly rounded double.

constexpr std::size_t kMaxShortLength = 15;
constexpr std::ptrdiff_t kShortWindow = 16;

// shuffle16 controls [point][first]: byte j takes byte j - 1 up to the point (at `point`) and
// byte j after it, and is zeroed before `first` (the first digit's place once the point is
// dropped; past 15, as a slow lane's may be, all zero).
struct short_controls {
    alignas(16) std::uint8_t control[16][19][16];
};
constexpr short_controls make_short_controls() {
    short_controls t{};
    for (int point = 0; point < 16; ++point) {
        for (int first = 0; first < 19; ++first) {
            for (int j = 0; j < 16; ++j) {
                t.control[point][first][j] = static_cast<std::uint8_t>(j < first    ? 0x80
                                                                       : j <= point ? j - 1
                                                                                    : j);
            }
        }
    }
    return t;
}
constexpr short_controls kShortControls = make_short_controls();

// The four numbers' bits from bit 15 of each segment (segment k: number k).
inline unsigned numbers_of(std::uint64_t segment_highs) noexcept {
    return static_cast<unsigned>((segment_highs >> 15 & 1) | (segment_highs >> 30 & 2) |
                                 (segment_highs >> 45 & 4) | (segment_highs >> 60 & 8));
}

template <int group = kGroup>  // (a template: instantiated only where a level uses it)
inline group_digits short_digits_of(const char* row, const number_group& g) noexcept {
    static_assert(group == 4, "the short layout reads a group from one text64");
    const char* window[4];
    unsigned length[4];
    std::uint64_t t = 0;
    // (The stops ascend: where the first number's window is in the row, all are.)
    const bool all_inside = g.stop[0] - row >= kShortWindow;
    unsigned inside = all_inside ? 0xfu : 0;
    for (int i = 0; i < 4; ++i) {
        const std::size_t n = static_cast<std::size_t>(g.stop[i] - g.start[i]);
        length[i] = n <= kMaxShortLength ? static_cast<unsigned>(n) : 0;
        if (all_inside) {
            window[i] = g.stop[i] - kShortWindow;
        } else {
            const bool in_row = g.stop[i] - row >= kShortWindow;
            inside |= unsigned{in_row} << i;
            window[i] = in_row ? g.stop[i] - kShortWindow : kZeros + kShortWindow;
        }
        t |= ((std::uint64_t{0xffff} << (16 - length[i])) & 0xffff) << (16 * i);
    }
    const text64 text = load_pieces(window[0], window[1], window[2], window[3]);
    const text64 values = sub8(text, splat8('0'));
    const std::uint64_t digits = le_bits(values, 9);
    const std::uint64_t points = eq_bits(text, '.');
    const std::uint64_t zeros = eq_bits(text, '0');
    const std::uint64_t minus = eq_bits(text, '-');
    // The shape: a text's first byte, its sign, the first byte of its integer part, its non-digits
    // besides the sign (one, a '.', in a text of the shape), the bits up to each segment's first
    // point.
    const std::uint64_t first = t & ~(t << 1);
    const std::uint64_t sign = first & minus;
    const std::uint64_t integer_start = (first & ~sign) | (sign << 1);
    const std::uint64_t point = t & ~digits & ~sign;
    const std::uint64_t point_or_top = point | kSegmentHigh;
    const std::uint64_t through_point = point_or_top ^ (point_or_top - kSegmentLow);
    // Nonzero in a segment whose text is not of the shape: a second non-digit; one that is not a
    // '.'; no digit before it; a leading zero before a digit; the point last.
    const std::uint64_t misfit = (point & ~through_point) | (point & ~points) |
                                 ((point >> 1) & ~digits) |
                                 (zeros & integer_start & (digits >> 1)) | (point & kSegmentHigh);
    group_digits d;
    d.fast = numbers_of(nonzero_segments(point) & ~nonzero_segments(misfit)) & inside;
    d.negative = numbers_of(nonzero_segments(sign));
    const std::uint8_t* control[4];
    std::uint64_t fractions = 0;
    for (int i = 0; i < 4; ++i) {
        // The point's place (15 where there is none: a slow lane, whose values are not kept).
        const unsigned at = lowest_bit((point >> (16 * i)) | 0x8000u);
        fractions |= std::uint64_t{15 - at} << (8 * i);
        // The first digit's place once the point is dropped: one past the text's first byte
        // (16 - length), two with a sign.
        control[i] = kShortControls.control[at][17 - length[i] + (d.negative >> i & 1)];
    }
    const text64 words =
        digit_words(shuffle16(values, load_pieces(control[0], control[1], control[2], control[3])));
    // Each piece's 16 digits: its first word times 10^8 and its second.
    d.w = mul_low32(even_words(words), splat64(100000000)) + odd_words(words);
    d.f = widen_bytes(fractions);
    return d;
}

// ---- numbers below one: -?0\.[0-9]+, in either layout ----
//
// An embedding's values nearly always are. Such a text needs neither its point found nor dropped:
// its bytes, right-aligned in the window ending at its separator, read as one decimal (the sign,
// the 0 and the point as 0 digits, the bytes before the text zeroed) make w, and f is its length
// less 2 or 3. The shape check is then each text's first bytes, read in memory, and its other
// bytes' being digits.

// shuffle16's table for a byte less '0': a digit's value; 0 for a byte with its top bit set (the
// sign, the point, a separator, a zero byte less '0').
struct digit_table_bytes {
    alignas(16) std::uint8_t bytes[16];
};
constexpr digit_table_bytes kDigitTable = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0}};

// Whether the text [start, stop) is "0." or "-0." (*minus) and one to 22 bytes more (10^22 is the
// largest power of ten kPow10Double holds exactly), in at most `longest` bytes; *after: how many
// more. Without a branch on the bytes (a sign is as likely as none, a branch on it mispredicted
// half the time): its first 4 bytes are read as one word, from the 4 bytes ending at `stop` (its
// separator) where the text is shorter, which are in the row as the text's window is.
inline bool below_one_text(const char* start, const char* stop, std::size_t longest, bool* minus,
                           std::size_t* after) noexcept {
    const std::size_t length = static_cast<std::size_t>(stop - start);
    std::uint32_t word;
    std::memcpy(&word, length >= 3 ? start : stop - 3, 4);
    *minus = (word & 0xffffffu) == ('-' | '0' << 8 | '.' << 16);
    const bool plain = (word & 0xffffu) == ('0' | '.' << 8);
    // One unsigned compare: length in [3 + minus, min(longest, 24 + minus)].
    *after = length - 2 - std::size_t{*minus};
    return (*minus | plain) &
           (*after - 1 <= std::min(longest - 2 - std::size_t{*minus}, std::size_t{22}) - 1);
}

// The group in the short layout (four numbers of at most 15 bytes, a 16-byte piece each) read as
// numbers below one: `fast` all ones where every text is of that shape (then each lane w exact,
// below 10^13), else 0 (then nothing else is set). The texts' bytes past their first two or three
// are checked in one bit mask a text64, their digits read through shuffle16's digit table.
template <int group = kGroup>  // (a template: instantiated only where a level uses it)
inline group_digits below_one_short_digits_of(const char* row, const number_group& g) noexcept {
    static_assert(group == 4, "the short layout reads a group from one text64");
    group_digits d;
    d.fast = 0;
    // (The stops ascend: where the first number's window is in the row, all are.)
    if (g.stop[0] - row < kShortWindow) return d;
    // The texts' bytes and first bytes in the text64's bit masks (a bit a byte), their signs and
    // digits after the point.
    unsigned negative = 0;
    std::uint64_t fractions = 0, text = 0, prefix = 0;
    bool all = true;
    for (int i = 0; i < kGroup; ++i) {
        bool minus;
        std::size_t after;
        const bool fits = below_one_text(g.start[i], g.stop[i], kMaxShortLength, &minus, &after);
        all &= fits;
        // (Kept in range where the text does not fit, and what follows is not used.)
        const std::size_t length = fits ? after + 2 + minus : 3;
        const unsigned first = 16 - static_cast<unsigned>(length);  // the text's first byte
        text |= ((std::uint64_t{0xffff} << first) & 0xffff) << (16 * i);
        prefix |= std::uint64_t{minus ? 7u : 3u} << (first + 16 * i);  // "-0." or "0."
        negative |= unsigned{minus} << i;
        fractions |= std::uint64_t{length - 2 - minus} << (8 * i);  // (after, where it fits)
    }
    if (!all) return d;
    const text64 bytes = load_pieces(g.stop[0] - kShortWindow, g.stop[1] - kShortWindow,
                                     g.stop[2] - kShortWindow, g.stop[3] - kShortWindow);
    const text64 values = sub8(bytes, splat8('0'));
    // Past its first two or three bytes, a text holds digits only.
    if ((text & ~prefix & ~le_bits(values, 9)) != 0) return d;
    const text64 table =
        load_pieces(kDigitTable.bytes, kDigitTable.bytes, kDigitTable.bytes, kDigitTable.bytes);
    const text64 words = digit_words(shuffle16(table, values) & bytes_of_bits(text));
    d.negative = negative;
    d.f = widen_bytes(fractions);
    // Each piece's 16 digits: its first word times 10^8 and its second (below 10^13).
    d.w = mul_low32(even_words(words), splat64(100000000)) + odd_words(words);
    d.fast = (1u << kGroup) - 1;
    return d;
}

// The group in the any layout (numbers of at most 25 bytes, two to a text64, a 32-byte half each)
// read as numbers below one: `fast` set where a text is of that shape and its w below 2^64 (then
// w exact), where every text is of that shape; else 0 (then nothing else is set). Each text's
// digits (its bytes past its first two or three) are the window's last `after` bytes: the bytes
// before them are zeroed (zero_below) and what is left must be digits, with no bit masks made
// a number (on NEON, where a bit mask costs 13 instructions and its bytes back 10, this is half
// the work).
inline group_digits below_one_any_digits_of(const char* row, const number_group& g) noexcept {
    group_digits d;
    d.fast = 0;
    // (The stops ascend: where the first number's window is in the row, all are.)
    if (g.stop[0] - row < 32) return d;
    unsigned negative = 0;
    std::uint64_t fractions = 0;
    unsigned first_digit[kGroup];  // the first digit's byte in its 32-byte window: 32 - after
    bool all = true;
    for (int i = 0; i < kGroup; ++i) {
        bool minus;
        std::size_t after;
        const bool fits = below_one_text(g.start[i], g.stop[i], kMaxFastLength, &minus, &after);
        all &= fits;
        first_digit[i] = fits ? 32 - static_cast<unsigned>(after) : 32;  // (1 <= after <= 22)
        negative |= unsigned{minus} << i;
        fractions |= std::uint64_t{fits ? after : 0} << (8 * i);
    }
    if (!all) return d;
    text64 words[kGroup / 2];
    text64 misfit = splat8(0);
    unrolled<kGroup / 2>([&](auto index) noexcept {
        constexpr int a = 2 * decltype(index)::value, b = a + 1;
        const text64 values = sub8(load_halves(g.stop[a] - 32, g.stop[b] - 32), splat8('0'));
        const text64 digits = zero_below(values, first_digit[a], first_digit[b]);
        misfit = misfit | greater8(digits, splat8(9));
        words[a / 2] = digit_words(digits);
    });
    if (any_high_bit(misfit)) return d;
    d.negative = negative;
    d.f = widen_bytes(fractions);
    // Each half's four words, one a column: the first is zero (at most 22 digits, from byte 10).
    u64x column[4];
    half_columns(words, column);
    // w = (first * 10^8 + second) * 10^8 + last, within 64 bits when first <= 1843.
    d.fast = ((1u << kGroup) - 1) & ~mask_bits(greater(column[1], splat64(1843)));
    const u64x e8 = splat64(100000000);
    const u64x upper = mul_low32(column[1], e8) + column[2];  // below 2^38
    d.w = mul_low32(upper, e8) + shift_left<32>(mul_low32(shift_right<32>(upper), e8)) + column[3];
    return d;
}

// ---- numbers below one, four gathered from one window (gathered_below_one) ----
//
// Where a row's numbers are short and below one (orjson's and vLLM's rows of an embedding), four of
// them are gathered from one 64-byte window by permute64, each left-aligned in a 16-byte piece:
// the window's first four commas (their places packed in a word, spread to the pieces by
// shuffle16) say where each begins and ends, so that no number needs a load, a length or a mask of
// its own in scalar code (the avx512 level's short path, over the vocabulary). A piece's 16 bytes
// then read as one decimal (the sign, the 0 and the point as 0 digits, the bytes past the text
// zeros) make w, and the value is w / 10^14, or w / 10^13 after a sign: exact (w < 10^14).

struct lane_table {
    alignas(64) std::uint8_t index[64];
};
// shuffle16 indices: each byte of piece k takes byte k + first of the packed places.
constexpr lane_table make_lane_broadcast(int first) {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::uint8_t>(j / 16 + first);
    return t;
}
constexpr lane_table kLanePrevious = make_lane_broadcast(0);  // the comma before number k
constexpr lane_table kLaneComma = make_lane_broadcast(1);     // number k's comma
// j + 1 for byte j of each piece: a number's bytes are its previous comma's place plus these.
constexpr lane_table make_lane_from_start() {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::uint8_t>(j % 16 + 1);
    return t;
}
constexpr lane_table kLaneFromStart = make_lane_from_start();
// Byte `at` of each piece (all ones).
constexpr lane_table make_piece_byte(int at) {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = j % 16 == at ? 0xff : 0;
    return t;
}
constexpr lane_table kPieceByte1 = make_piece_byte(1), kPieceByte2 = make_piece_byte(2),
                     kPieceByte3 = make_piece_byte(3);
constexpr lane_table make_piece_bytes_below(int end) {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = j % 16 < end ? 0xff : 0;
    return t;
}
constexpr lane_table kPieceBytesBelow2 = make_piece_bytes_below(2);

// The four numbers from `base` (the first one's first byte; 64 bytes readable), read as numbers
// below one of at most 16 bytes: false where the window holds fewer than four commas or a number
// of another shape (a ']', a space, a longer text, a value of one or more); else w and the signs,
// and *advance: from `base` to past the fourth number's comma.
template <int group = kGroup>  // (a template: instantiated only where a level uses it)
inline bool gathered_below_one(const char* base, u64x* w, unsigned* negative,
                               unsigned* advance) noexcept {
    static_assert(group == 4, "four numbers a group");
    const text64 window = load(base);
    std::uint64_t commas = eq_bits(window, ',');
    std::uint64_t places = 0xff;  // byte 0: the comma "before" the first number, at -1
    for (int k = 0; k < 4; ++k) {
        if (commas == 0) return false;
        places |= std::uint64_t{lowest_bit(commas)} << (8 * k + 8);
        commas &= commas - 1;
    }
    const text64 packed = splat_words(places);
    const text64 previous = shuffle16(packed, load(kLanePrevious.index));
    const text64 comma = shuffle16(packed, load(kLaneComma.index));
    const text64 index = add8(previous, load(kLaneFromStart.index));
    // (Places are below 64 and a piece's bytes below 16: no index that is text wraps; those past
    // 63 are past the comma, no text.)
    const text64 in_text = less8(index, comma);
    const text64 text = permute64(window, index) & in_text;
    // Each piece "0." or "-0." ...
    const u64x first = even_words(text);
    const lane_mask plain = eq(first & splat64(0xffff), splat64('0' | '.' << 8));
    const lane_mask minus = eq(first & splat64(0xffffff), splat64('-' | '0' << 8 | '.' << 16));
    if (mask_bits(plain | minus) != 0xfu) return false;
    // ... then at least one digit, digits only, and no byte past the piece (a text of more than 16
    // bytes: its comma more than 17 bytes past the one before).
    const text64 signs = pieces_of(minus);
    const text64 prefix = load(kPieceBytesBelow2.index) | (signs & load(kPieceByte2.index));
    const text64 first_digit = blend(signs, load(kPieceByte3.index), load(kPieceByte2.index));
    const text64 values = sub8(text, splat8('0'));
    const text64 bad = (and_not(in_text, prefix) & greater8(values, splat8(9))) |
                       and_not(first_digit, in_text) | greater8(sub8(comma, previous), splat8(17));
    if (any_high_bit(bad)) return false;
    const text64 table =
        load_pieces(kDigitTable.bytes, kDigitTable.bytes, kDigitTable.bytes, kDigitTable.bytes);
    const text64 words = digit_words(shuffle16(table, values));
    *w = mul_low32(even_words(words), splat64(100000000)) + odd_words(words);
    *negative = mask_bits(minus);
    *advance = static_cast<unsigned>(places >> 32) + 1;
    return true;
}

// ---- the values ----

// 10^22 is the largest power of ten a double holds exactly (the last entry repeats it).
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

// What converting a group gave: the values, and which of them took the fast path (bit i:
// number i's value is in lane i).
struct group_floats {
    f32x values;
    unsigned fast;
};
struct group_doubles {
    f64x values;
    unsigned fast;
};

// Float32 rows: w / 10^f, then float32. Where w is above 2^53 its conversion rounded: a lane is
// kept where the quotient is more than 8 units of its last place from a float32 midpoint (its
// low 29 bits 2^28), which the rounding of w (at most half a unit of w's last place, 2^-53 of w,
// scaled into the quotient's) cannot cross.
inline group_floats to_float32(const group_digits& d) noexcept {
    const f64x quotient = to_f64(d.w) / lookup24(kPow10Double, d.f);
    const u64x from_midpoint =
        (as_bits(quotient) & splat64(0x1fffffff)) - splat64((std::uint64_t{1} << 28) - 8);
    const lane_mask rounded =
        and_not(greater(d.w, splat64(std::uint64_t{1} << 53)), greater(from_midpoint, splat64(16)));
    return {narrow(with_signs(quotient, d.negative)), d.fast & ~mask_bits(rounded)};
}

// Float64 rows. A row's value is the double nearest w / 10^f itself, not a float32 of it, and
// json.dumps's and orjson's 17-digit texts have w above 2^53, where the division is not exact.
// Each lane runs Eisel-Lemire instead (number_parser.cpp's eisel_lemire and round_to_double; here
// q = -f in [-22, -1], so the double is normal) in 64-bit integer lanes: w normalised to n (top
// bit set), times the high 64 bits H of the 128-bit floor of 10^-f's mantissa, whose top 54 bits
// are rounded. The scalar parser adds n times the low 64 bits too; without them the product
// X = n * H is a floor of the true n * 10^-f (scaled) that lies in [X, X + 2^64): its high word is
// at most 1 short, 2 after the one-place shift when the top bit is clear. So a lane is decided
// where the 10 bits below the round bit are at most 0x3fd: those few units cannot carry into the
// round bit, and the value is not within them of a tie or of a double (a text on either has them
// 0x3fe or 0x3ff in X). The rest, about 1 lane in 512, go to the scalar parser, which decides
// them as it always does. Every decided lane is the correctly rounded double, as is the scalar
// parser's reading, so the two are equal.
inline group_doubles to_float64(const group_digits& d) noexcept {
    const u64x one = splat64(1);
    const lane_mask zero = eq(d.w, splat64(0));
    // (A zero lane's count is 64: its shift gives 0, and it is set apart.)
    const u64x leading = leading_zeros(d.w);
    u64x xh, xl;
    mul_wide(shift_left_var(d.w, leading), lookup24(kPow10High.high, d.f), &xh, &xl);
    // e = 64 - lz + floor(q log2 10), q = -f: floor(-f * 217706 / 2^16) = -ceil(f * 217706 /
    // 2^16); one less where the product's top bit is clear, which then moves up a place.
    const u64x ceil_log2 = shift_right<16>(mul_low32(d.f, splat64(217706)) + splat64(65535));
    const u64x top = shift_right<63>(xh);
    xh = select(greater(splat64(std::uint64_t{1} << 63), xh),
                shift_left<1>(xh) | shift_right<63>(xl), xh);
    const u64x e = splat64(63) - leading - ceil_log2 + top;
    // round_to_double for a normal result: the round bit is bit 10, which the up to 2 units
    // missing from the high word must not reach (above).
    const lane_mask undecided = greater(xh & splat64(0x3ff), splat64(0x3fd));
    const u64x m = shift_right<11>(xh) + (shift_right<10>(xh) & one);
    // m == 2^53 (rounded up) carries into the exponent field.
    const u64x magnitude =
        shift_left<52>(e + splat64(1023)) + (m - splat64(std::uint64_t{1} << 52));
    const u64x kept = select(zero, splat64(0), magnitude);
    return {with_signs(as_f64(kept), d.negative), d.fast & ~mask_bits(undecided)};
}

// The short path's values, w < 2^53 and f <= 14: w and 10^f are exact doubles, so the quotient is
// the correctly rounded double (Clinger's fast path), the float64 rows' value and the float32
// rows' double, for both row types.
inline f64x exact_quotients(const group_digits& d) noexcept {
    return with_signs(to_f64(d.w) / lookup24(kPow10Double, d.f), d.negative);
}

// A group's correctly rounded doubles as the row type holds them: float32 rows their float32s.
inline f32x convert_short_values(f64x quotients, float*) noexcept { return narrow(quotients); }
inline f64x convert_short_values(f64x quotients, double*) noexcept { return quotients; }

// How each row type converts a group read any way, and read as short numbers.
inline group_floats convert_any(const group_digits& d, float*) noexcept { return to_float32(d); }
inline group_doubles convert_any(const group_digits& d, double*) noexcept { return to_float64(d); }
inline group_floats convert_short(const group_digits& d, float*) noexcept {
    return {narrow(exact_quotients(d)), d.fast};
}
inline group_doubles convert_short(const group_digits& d, double*) noexcept {
    return {exact_quotients(d), d.fast};
}

// ---- the scalar parser's part ----

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
inline number_row scalar_from(const char* p, const char* end, float* out, std::size_t capacity,
                              std::size_t count) noexcept {
    return detail::parse_number_row_scalar_from(p, end, out, capacity, count);
}
inline number_row scalar_from(const char* p, const char* end, double* out, std::size_t capacity,
                              std::size_t count) noexcept {
    return detail::parse_number_row_double_scalar_from(p, end, out, capacity, count);
}

// After a group's values were written at out[count..] (those below `capacity`): each lane in
// `slow` read by the scalar parser from its text [start, stop) (text(i, &start, &stop)). False
// where a lane's number does not end at its stop: *row is then the scalar parser's reading of the
// row's rest from that number on.
template <class T, class lane_text>
inline bool read_slow_lanes(unsigned slow, lane_text text, const char* end, T* out,
                            std::size_t capacity, std::size_t count, number_row* row) noexcept {
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

// A group's values written at out[count..] (those below `capacity`).
inline void store_values(f32x values, float* out, std::size_t capacity,
                         std::size_t count) noexcept {
    store32(out + count, values, capacity > count ? capacity - count : 0);
}
inline void store_values(f64x values, double* out, std::size_t capacity,
                         std::size_t count) noexcept {
    store64(out + count, values, capacity > count ? capacity - count : 0);
}

// A group's values written, then each lane not in `fast` read by the scalar parser
// (read_slow_lanes): false where that finished the row (*row).
template <class T, class values_type, class lane_text>
inline bool store_group(values_type values, unsigned fast, lane_text text, const char* end, T* out,
                        std::size_t capacity, std::size_t count, number_row* row) noexcept {
    store_values(values, out, capacity, count);
    return read_slow_lanes(~fast & ((1u << kGroup) - 1), text, end, out, capacity, count, row);
}

// A row read to its ']': `end` just past it, `count` numbers.
inline number_row finished(const char* end, std::size_t count) noexcept {
    number_row row;
    row.end = end;
    row.count = count;
    return row;
}

// ---- the row ----

// A group in the any layout, read as numbers below one where all are, else the general way: the
// skeleton's reading, which a level may replace with its own (parse_row's `read_any_group`).
inline group_digits read_any(const char* row, const number_group& g) noexcept {
    const group_digits d = below_one_any_digits_of(row, g);
    return d.fast != 0 ? d : any_digits_of(row, g);
}

// The row from p (just past its '[' or a ','), `count` numbers already written before it, `row`
// its first byte; its numbers' digits taken as short ones (below one, or short_digits_of) or as
// any (`read_any_group`).
// With `paused_at`, it pauses after `pause_after` groups where the row goes on: *paused_at is then
// where (the next number), the result's count the numbers read, and nothing else is set.
template <bool short_path, int unrolled, class T,
          group_digits (*read_any_group)(const char*, const number_group&) noexcept = read_any>
number_row parse_row(const char* row, const char* p, const char* end, T* out, std::size_t capacity,
                     std::size_t count, std::size_t pause_after = 0,
                     const char** paused_at = nullptr) noexcept {
    const ieee_fp_environment ieee;
    separator_chunks<unrolled> separators(p, end);
    std::size_t found = 0;  // separators in the buffer, from the current number's on
    for (;;) {
        found = separators.fill(found);
        const char** stops = separators.stops();
        const std::size_t groups = found / kGroup;
        for (std::size_t k = 0; k < groups; ++k) {
            number_group g;
            g.start[0] = p;
            for (int i = 0; i < kGroup; ++i) {
                const char* at = stops[kGroup * k + i];
                g.stop[i] = at;
                // The byte after the separator, or the separator itself where the text ends there
                // (no branch: whether a ' ' follows is the row's layout, not the data's). (Only the
                // row's last separator is a ']', past which start[kGroup] is not used.)
                const char* next = at + (end - at > 1);
                g.start[i + 1] = at + 1 + (*next == ' ');
            }
            group_digits d;
            if constexpr (short_path) {
                // Numbers below one first; a group of others read the general way.
                d = below_one_short_digits_of(row, g);
                if (d.fast == 0) d = short_digits_of(row, g);
            } else {
                d = read_any_group(row, g);
            }
            const auto v = short_path ? convert_short(d, out) : convert_any(d, out);
            auto text = [&g](unsigned i, const char** start, const char** stop) {
                *start = g.start[i];
                *stop = g.stop[i];
            };
            number_row result;
            if (!store_group(v.values, v.fast, text, end, out, capacity, count, &result)) {
                return result;
            }
            count += kGroup;
            if (*g.stop[kGroup - 1] == ']') return finished(g.stop[kGroup - 1] + 1, count);
            p = g.start[kGroup];
            if (paused_at != nullptr && --pause_after == 0) {
                *paused_at = p;
                number_row paused;
                paused.count = count;
                return paused;
            }
        }
        // The numbers short of a group: the next chunk's first, or the scalar parser's where the
        // row's separators are all in (its last numbers, or an error).
        const std::size_t kept = found - kGroup * groups;
        if (separators.closed() || found < separator_chunks<unrolled>::chunk) {
            return scalar_from(p, end, out, capacity, count);
        }
        for (std::size_t i = 0; i < kept; ++i) stops[i] = stops[kGroup * groups + i];
        found = kept;
    }
}

// A row in the short layout from p (its first byte): four numbers a step gathered from a window
// while 64 bytes are left and they are below one; a step that is not read by the skeleton's
// parse_row, with the kGeneralGroups groups after it (a row of larger values pays one
// gathered step's try per kGeneralGroups groups), then gathered steps again; the row's last
// numbers by parse_row.
constexpr std::size_t kGeneralGroups = 8;

template <class T>
number_row parse_gathered_row(const char* p, const char* end, T* out,
                              std::size_t capacity) noexcept {
    const char* const row = p;
    std::size_t count = 0;
    while (end - p >= 64) {
        {
            const ieee_fp_environment ieee;
            const f64x plain_scale = as_f64(splat64(0x42d6bcc41e900000ull));  // 1e14
            const f64x minus_scale = as_f64(splat64(0x42a2309ce5400000ull));  // 1e13
            u64x w;
            unsigned negative, advance;
            while (end - p >= 64 && gathered_below_one(p, &w, &negative, &advance)) {
                const f64x quotient = with_signs(
                    to_f64(w) / select(mask_of_bits(negative), minus_scale, plain_scale), negative);
                store_values(convert_short_values(quotient, out), out, capacity, count);
                count += kGroup;
                p += advance;
            }
        }
        if (end - p < 64) break;
        const char* paused_at = nullptr;
        const number_row r =
            parse_row<true, 6>(row, p, end, out, capacity, count, kGeneralGroups, &paused_at);
        if (paused_at == nullptr) return r;
        count = r.count;
        p = paused_at;
    }
    return parse_row<true, 6>(row, p, end, out, capacity, count);
}

// A whole row (p just past its '['), in the layout its first 64 bytes show.
template <class T>
number_row parse_number_row_any_layout(const char* p, const char* end, T* out,
                                       std::size_t capacity) noexcept {
    return short_numbers(p, end) ? parse_gathered_row(p, end, out, capacity)
                                 : parse_row<false, 4>(p, p, end, out, capacity, 0);
}
