// The avx512 level's own number-row paths (its number_parser_float32.cpp and _float64.cpp include
// this inside the level's namespace, after the generic skeleton, levels/generic/number_rows.hpp,
// whose parse_row reads what these leave): numbers eight at a time from 64-byte windows gathered
// by vpermb, which no other level has a cheap form of, in two layouts the row's first 64 bytes
// choose (the skeleton's rule, short_numbers).
//
//  * Short numbers (orjson's / vLLM's rows: at most 15 bytes, "," between): four to a vector, one
//    64-byte window per four, each number right-aligned in a 16-byte lane (parse_short_row).
//  * Long numbers (json.dumps's rows: ", " between, 17 significant digits): four to a vector, two
//    64-byte windows per four, each number's first 16 bytes left-aligned in a lane and the rest
//    checked to be digits (parse_long_row; float32 rows only).
//
// Both try each eight numbers as numbers below one first, -?0\.[0-9]+ (an embedding's values
// nearly always are), which need less work (below_one_quad_of), then as any number; each hands
// the row's rest to the skeleton's parse_row where it cannot go on.
//
// In each, the numbers' shapes -?(0|[1-9][0-9]*)\.[0-9]+ are checked several at once in 64-bit
// integers (a bit a byte); vpermb moves the bytes before the point one place right, which drops
// it, vpshufb and multiply-adds (vpmaddubsw, vpmaddwd, vpmuludq) make the digits an integer w, and
// the value is w / 10^f in double lanes, then vcvtpd2ps for float32 rows: double, then float32, as
// the reference. The division is exact and correctly rounded (Clinger's fast path) when w <= 2^53;
// where the digits were cut short (parse_long_row), a lane is kept only where both ends of the
// interval the text lies in give the same float32. Any number outside those shapes goes through
// the scalar parser, as in the skeleton.
//
// Needs, included before: <immintrin.h>, the level's vocabulary and the generic skeleton.

// The general paths' steps are kept out of the loops of numbers below one (their registers).
#if defined(__GNUC__) || defined(__clang__)
#define TENSORB64_PARSER_NOINLINE __attribute__((noinline))
#elif defined(_MSC_VER)
#define TENSORB64_PARSER_NOINLINE __declspec(noinline)
#else
#define TENSORB64_PARSER_NOINLINE
#endif

// vpshufb's table for a byte less '0': a digit's value, 0 for bytes with the top bit set (the
// sign, the point, bytes outside the text).
inline __m512i digit_table_zmm() noexcept {
    return _mm512_broadcast_i32x4(_mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0));
}

// ---- the any layout's groups, the skeleton's parse_row's (masked_read_any) ----
//
// Each number's window is read by a masked load of its text alone: nothing before the row is read,
// so a row's first numbers need no other window, and no window a byte earlier either: vpermb under
// the mask of the bytes up to the point moves them one place right, which drops the point.
// Measured against the skeleton's reading (numbers below one first; number_parser_bench, float64
// rows of json.dumps's texts, 64 x 3072, on the AMD EPYC build machine): 8.2 against 10.3-10.8 ns
// a number.

// The 32 bytes ending at `stop`, only those in `text` read (a masked load reads nothing else and
// faults on nothing else: the window may begin before the buffer).
inline __m256i window_ending_at(const char* stop, std::uint32_t text) noexcept {
    return _mm256_maskz_loadu_epi8(
        text, reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(stop) - 32));
}

// vpermb indices moving each byte of a half one place right (the first stays: never a digit).
struct shift_index_table {
    alignas(64) std::int8_t index[64];
};
constexpr shift_index_table make_shift_index() {
    shift_index_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::int8_t>(j % 32 == 0 ? j : j - 1);
    return t;
}
constexpr shift_index_table kShiftIndex = make_shift_index();

inline group_digits masked_read_any(const char*, const number_group& g) noexcept {
    unsigned fast = 0, negative = 0;
    std::uint64_t fractions = 0;
    text64 words[kGroup / 2];
    unrolled<kGroup / 2>([&](auto index) noexcept {
        constexpr int k = decltype(index)::value;
        constexpr int a = 2 * k, b = 2 * k + 1;
        const std::uint32_t text_a = text_bytes(g.start[a], g.stop[a]);
        const std::uint32_t text_b = text_bytes(g.start[b], g.stop[b]);
        const __m512i text =
            _mm512_inserti64x4(_mm512_castsi256_si512(window_ending_at(g.stop[a], text_a)),
                               window_ending_at(g.stop[b], text_b), 1);
        const __m512i values = _mm512_sub_epi8(text, _mm512_set1_epi8('0'));
        // A text's first byte: in it, or its separator (a text ends before `end`).
        const unsigned minus = unsigned{*g.start[a] == '-'} | unsigned{*g.start[b] == '-'} << 1;
        const pair_shape shape =
            shape_of(text_a | std::uint64_t{text_b} << 32,
                     _cvtmask64_u64(_mm512_cmple_epu8_mask(values, _mm512_set1_epi8(9))),
                     _cvtmask64_u64(_mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('.'))),
                     _cvtmask64_u64(_mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('0'))), minus);
        fast |= shape.fast << a;
        negative |= minus << a;
        fractions |= std::uint64_t{shape.fast & 1 ? 31 - shape.point[0] : 0} << (8 * a) |
                     std::uint64_t{shape.fast & 2 ? 31 - shape.point[1] : 0} << (8 * b);
        // Drop the point, then vpshufb zeroes what is not a digit (the sign, bytes outside the
        // text: their top bit is set once '0' is subtracted) and keeps the digits.
        const __m512i moved =
            _mm512_mask_permutexvar_epi8(values, _cvtu64_mask64(shape.through_point),
                                         _mm512_load_si512(kShiftIndex.index), values);
        words[k] = digit_words({_mm512_shuffle_epi8(digit_table_zmm(), moved)});
    });
    u64x column[4];
    half_columns(words, column);
    group_digits d;
    d.fast = fast & ~mask_bits(greater(column[1], splat64(1843)));
    d.negative = negative;
    d.w = mul_low(column[1], splat64(10000000000000000ull)) +
          mul_low32(column[2], splat64(100000000)) + column[3];
    d.f = widen_bytes(fractions);
    return d;
}

// ---- short numbers, four to a vector (orjson's / vLLM's rows: parse_short_row) ----
//
// Where numbers are at most 15 bytes with no space after the comma, four of them fit one vector,
// each right-aligned in a 16-byte lane, gathered from one 64-byte window by vpermb: no per-number
// load, length or mask is made in scalar code. The window starts at the first number; its first
// four commas (pdep selects each) say where the numbers end, the comma before each (or the
// window's start) where they begin (taking them from separators gathered ahead, as parse_row
// does, measured slower: 4.8 against 3.8 ns a number). The shape checks then run on four numbers
// at once in 64-bit integers (16 bits a number), and the value is exact: at most 14 digits
// (w < 2^53) and 10^f with f <= 13, so w / 10^f is the correctly rounded double (Clinger's fast
// path), then float32. A lane of another shape (an exponent, a space, a longer number, a ']' or an
// error) is parsed by the scalar parser, as in parse_row.

// What the shape checks of both four-lane paths share, on texts in 16-bit segments: `text` holds
// them (zeros elsewhere), `t` has a bit for each of their bytes, `first` for each one's first.
// The shape is -?(0|[1-9][0-9]*)\.[0-9]+ (each path adds its own limits).
struct lane_shape {
    __m512i values;               // the bytes less '0'
    std::uint64_t digits;         // '0'..'9'
    std::uint64_t sign;           // a text's leading '-'
    std::uint64_t point;          // its other non-digits: one, a '.', in a text of the shape
    std::uint64_t through_point;  // per segment, the bits up to its point (all, without one)
    // Nonzero in a segment whose text is not of the shape: a second non-digit; one that is not a
    // '.'; no digit before it; a leading zero before a digit. (No segment's subtraction borrows
    // from the next: each has bit 15 set.)
    std::uint64_t misfit;
};

inline lane_shape lane_shape_of(__m512i text, std::uint64_t t, std::uint64_t first) noexcept {
    lane_shape s;
    s.values = _mm512_sub_epi8(text, _mm512_set1_epi8('0'));
    s.digits = _cvtmask64_u64(_mm512_cmple_epu8_mask(s.values, _mm512_set1_epi8(9)));
    const std::uint64_t points =
        _cvtmask64_u64(_mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('.')));
    const std::uint64_t zeros = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('0')));
    const std::uint64_t minus = _cvtmask64_u64(_mm512_cmpeq_epi8_mask(text, _mm512_set1_epi8('-')));
    s.sign = first & minus;
    const std::uint64_t integer_start = (first & ~s.sign) | (s.sign << 1);
    s.point = t & ~s.digits & ~s.sign;
    const std::uint64_t point_or_top = s.point | kSegmentHigh;
    s.through_point = point_or_top ^ (point_or_top - kSegmentLow);
    s.misfit = (s.point & ~s.through_point) | (s.point & ~points) | ((s.point >> 1) & ~s.digits) |
               (zeros & integer_start & (s.digits >> 1));
    return s;
}

// Bit k: lane k has a point and no misfit.
inline unsigned fast_lanes(const lane_shape& s, std::uint64_t misfit) noexcept {
    return static_cast<unsigned>(
        _pext_u64(nonzero_segments(s.point) & ~nonzero_segments(misfit), kSegmentHigh));
}

// (lane_table, kLanePrevious and kLaneComma: the skeleton's.)
constexpr lane_table make_lane_offset() {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::int8_t>(j % 16 - 16);
    return t;
}
constexpr lane_table kLaneOffset = make_lane_offset();  // 16 bytes ending at the comma
// vpermb indices moving each byte of a 16-byte lane one place right (the first stays).
constexpr lane_table make_lane_shift() {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::int8_t>(j % 16 == 0 ? j : j - 1);
    return t;
}
constexpr lane_table kLaneShift = make_lane_shift();

// Per 16-byte lane, in both qwords: w | m << 56, where w is the lane's 16 digit values read as one
// decimal integer and m the sum of the lane's bytes of `marks` (the digits after the point, 1
// each, and the sign, 128).
inline __m512i packed_lanes(__m512i digit_values, __m512i marks) noexcept {
    const __m512i sums = _mm512_sad_epu8(marks, _mm512_setzero_si512());
    const __m512i pairs = _mm512_maddubs_epi16(digit_values, _mm512_set1_epi16(0x010a));
    const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00010064));
    const __m512i halves = _mm512_add_epi64(_mm512_mul_epu32(quads, _mm512_set1_epi64(10000)),
                                            _mm512_srli_epi64(quads, 32));
    const __m512i weighted = _mm512_add_epi64(
        _mm512_mul_epu32(halves,
                         _mm512_set_epi64(1, 100000000, 1, 100000000, 1, 100000000, 1, 100000000)),
        _mm512_slli_epi64(sums, 56));
    return _mm512_add_epi64(weighted, _mm512_shuffle_epi32(weighted, _MM_PERM_BADC));
}

// Four numbers of a window: per lane, w | (digits after the point + 128 * negative) << 56 in both
// qwords (packed_lanes), and which lanes took the fast path; the offsets of the commas.
struct short_quad {
    __m512i packed;
    unsigned fast;
    std::uint64_t positions;  // byte 0: 0xff (the window starts a number); byte k + 1: comma k
};

inline unsigned comma_at(const short_quad& q, int k) noexcept {
    return static_cast<unsigned>(q.positions >> (8 * k + 8)) & 0xffu;
}

// The four numbers from `base` (the first one's first byte; 64 bytes readable); false when the
// window holds fewer than four commas.
inline bool short_quad_at(const char* base, short_quad* q) noexcept {
    const __m512i window = _mm512_loadu_si512(base);
    const std::uint64_t commas =
        _cvtmask64_u64(_mm512_cmpeq_epi8_mask(window, _mm512_set1_epi8(',')));
    const std::uint64_t fourth = _pdep_u64(8, commas);
    if (fourth == 0) return false;
    q->positions = 0xffu | std::uint64_t{lowest_bit(commas)} << 8 |
                   std::uint64_t{lowest_bit(_pdep_u64(2, commas))} << 16 |
                   std::uint64_t{lowest_bit(_pdep_u64(4, commas))} << 24 |
                   std::uint64_t{lowest_bit(fourth)} << 32;
    const __m512i positions = _mm512_set1_epi64(static_cast<long long>(q->positions));
    const __m512i index =
        _mm512_add_epi8(_mm512_permutexvar_epi8(_mm512_load_si512(kLaneComma.index), positions),
                        _mm512_load_si512(kLaneOffset.index));
    // Text: the bytes after the previous comma (signed compares: the first lane's is -1, and its
    // window may reach before `base`: those indices are negative and not text).
    const __mmask64 in_text = _mm512_cmpgt_epi8_mask(
        index, _mm512_permutexvar_epi8(_mm512_load_si512(kLanePrevious.index), positions));
    const __m512i text = _mm512_maskz_permutexvar_epi8(in_text, index, window);
    // The shape, in at most 15 bytes (bit 0 of a segment is never text then, so no shift carries
    // one number's bits into the next's); the point not last.
    const std::uint64_t t = _cvtmask64_u64(in_text);
    const lane_shape shape = lane_shape_of(text, t, t & ~(t << 1));
    q->fast = fast_lanes(shape, shape.misfit | (shape.point & kSegmentHigh) | (t & kSegmentLow));
    // The digits after the point (1 each) and the sign (128), for packed_lanes.
    const __m512i marks = _mm512_mask_mov_epi8(
        _mm512_maskz_mov_epi8(_cvtu64_mask64(t & ~shape.through_point), _mm512_set1_epi8(1)),
        _cvtu64_mask64(shape.sign), _mm512_set1_epi8(static_cast<char>(0x80)));
    // Drop the point (as digit_groups).
    const __m512i moved =
        _mm512_mask_permutexvar_epi8(shape.values, _cvtu64_mask64(shape.through_point),
                                     _mm512_load_si512(kLaneShift.index), shape.values);
    q->packed = packed_lanes(_mm512_shuffle_epi8(digit_table_zmm(), moved), marks);
    return true;
}

// Eight numbers' packed lanes (packed_lanes) from two vectors' four each.
inline __m512i eight_packed(__m512i a, __m512i b) noexcept {
    return _mm512_permutex2var_epi64(a, _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0), b);
}

// The value of each packed lane (w < 2^53, at most 15 digits after the point), with `add` added to
// w: (-1)^negative * (w + add) / 10^f, the quotient correctly rounded to a double (the float64
// rows' value; packed_values: then to float32).
inline __m512d packed_quotients(__m512i packed, long long add) noexcept {
    const __m512i w = _mm512_add_epi64(_mm512_and_si512(packed, _mm512_set1_epi64((1ll << 56) - 1)),
                                       _mm512_set1_epi64(add));
    const __m512i f = _mm512_srli_epi64(packed, 56);  // (the sign bit, 7, is not an index bit)
    const __m512d divisor =
        _mm512_permutex2var_pd(_mm512_load_pd(kPow10Double), f, _mm512_load_pd(kPow10Double + 8));
    const __m512d quotient = _mm512_div_pd(_mm512_cvtepu64_pd(w), divisor);
    const __m512i negative = _mm512_and_si512(packed, _mm512_set1_epi64(1ll << 63));
    return _mm512_castsi512_pd(_mm512_or_si512(_mm512_castpd_si512(quotient), negative));
}

inline __m256 packed_values(__m512i packed, long long add) noexcept {
    return _mm512_cvtpd_ps(packed_quotients(packed, add));
}

// Eight doubles as a row of the type of `out` holds them: float32 rows their float32s.
inline f32x row_values(__m512d doubles, float*) noexcept { return {_mm512_cvtpd_ps(doubles)}; }
inline f64x row_values(__m512d doubles, double*) noexcept { return {doubles}; }

// ---- numbers below one: -?0\.[0-9]+ (both four-lane paths) ----
//
// A text that starts "0." or "-0." needs neither the point dropped nor its place counted: left-
// aligned in a 16-byte lane, its bytes read as one 16-digit decimal w (the sign, the 0 and the
// point read as 0 digits, the bytes after the text too) make its value w / 10^14 without a sign
// and w / 10^13 with one (the first digit after the point is the lane's third or fourth byte), and
// w < 10^14 < 2^53, so the quotient is the correctly rounded double (Clinger's fast path). The
// shape check is then a compare of each lane's first four bytes and one of where its non-digits
// are. Eight such numbers take about three quarters of the general paths' time (measured with
// number_parser_bench on the AMD EPYC build machine: 3.7 -> 2.8 ns a number in orjson's rows, 6.0
// -> 4.6-4.9 in json.dumps's). A step whose numbers are not all below one is read by the general
// path, as are the kGeneralSteps after it, in one call; rows of larger values still lose to the
// tries: N(0, 1) rows (a third of their values above one) measured 10-25% slower than before.

constexpr int kGeneralSteps = 16;  // steps read by the general path after a step not below one

// What four left-aligned texts read as numbers below one gave.
struct below_one_quad {
    __m512i lanes;      // per lane, in both qwords: its 16 bytes' digits read as one integer
    unsigned negative;  // bit k: lane k's text starts with '-'
    bool fits;          // every lane's text is -?0\.[0-9]+, no byte of it outside the lane
};

// The four texts `text` (left-aligned, zeros after them; `in_text`: their bytes), their bytes in
// `refused` counting as no digits (a lane that must fail has them among its first three bytes).
inline below_one_quad below_one_quad_of(__m512i text, __mmask64 in_text,
                                        __mmask64 refused) noexcept {
    const __m512i values = _mm512_sub_epi8(text, _mm512_set1_epi8('0'));
    const std::uint64_t digits =
        _cvtmask64_u64(_kandn_mask64(refused, _mm512_cmple_epu8_mask(values, _mm512_set1_epi8(9))));
    // Each lane's first four bytes against "0." and "-0.".
    const __m512i first = _mm512_maskz_mov_epi32(0x1111, text);
    const __mmask16 plain = _mm512_cmpeq_epi32_mask(
        _mm512_and_si512(first, _mm512_set1_epi32(0xffff)), _mm512_set1_epi32('0' | '.' << 8));
    const __mmask16 minus =
        _mm512_cmpeq_epi32_mask(_mm512_and_si512(first, _mm512_set1_epi32(0xffffff)),
                                _mm512_set1_epi32('-' | '0' << 8 | '.' << 16));
    const std::uint32_t starts = _cvtmask32_u32(_mm512_kunpackw(minus, plain));
    below_one_quad q;
    q.negative = static_cast<unsigned>(_pext_u64(starts, 0x11110000));
    const std::uint64_t plain_lanes = _pdep_u64(_pext_u64(starts, 0x1111), kSegmentLow);
    const std::uint64_t minus_lanes = _pdep_u64(q.negative, kSegmentLow);
    const std::uint64_t point = plain_lanes << 1 | minus_lanes << 2;
    // The non-digits are the sign and the point, and a digit follows the point (the bytes after a
    // text are no digits: they are zeros).
    q.fits = ((plain_lanes | minus_lanes) == kSegmentLow) &
             ((_cvtmask64_u64(in_text) & ~digits) == (point | minus_lanes)) &
             (((point << 1) & ~digits) == 0);
    const __m512i pairs = _mm512_maddubs_epi16(_mm512_shuffle_epi8(digit_table_zmm(), values),
                                               _mm512_set1_epi16(0x010a));
    const __m512i quads = _mm512_madd_epi16(pairs, _mm512_set1_epi32(0x00010064));
    const __m512i halves = _mm512_add_epi64(_mm512_mul_epu32(quads, _mm512_set1_epi64(10000)),
                                            _mm512_srli_epi64(quads, 32));
    const __m512i weighted = _mm512_mul_epu32(
        halves, _mm512_set_epi64(1, 100000000, 1, 100000000, 1, 100000000, 1, 100000000));
    q.lanes = _mm512_add_epi64(weighted, _mm512_shuffle_epi32(weighted, _MM_PERM_BADC));
    return q;
}

// Eight numbers below one (eight_packed lanes of below_one_quad), `add` added to each w:
// (-1)^negative * (w + add) / 10^(13 or 14), correctly rounded to a double (below_one_values: then
// to float32).
inline __m512d below_one_quotients(__m512i w, unsigned negative, long long add) noexcept {
    const __mmask8 signs = static_cast<__mmask8>(negative);
    const __m512d divisor = _mm512_mask_blend_pd(signs, _mm512_set1_pd(1e14), _mm512_set1_pd(1e13));
    const __m512i quotient = _mm512_castpd_si512(
        _mm512_div_pd(_mm512_cvtepu64_pd(_mm512_add_epi64(w, _mm512_set1_epi64(add))), divisor));
    return _mm512_castsi512_pd(
        _mm512_mask_or_epi64(quotient, signs, quotient, _mm512_set1_epi64(1ll << 63)));
}

inline __m256 below_one_values(__m512i w, unsigned negative, long long add) noexcept {
    return _mm512_cvtpd_ps(below_one_quotients(w, negative, add));
}

// (kLaneFromStart: the skeleton's.)

// The four numbers of the window at `base` (its first number's first byte; 64 bytes readable)
// read as numbers below one, left-aligned: a lane takes the 16 bytes from its number's first,
// those before its comma as text. False where the window holds fewer than four commas; else
// *fourth_comma: the offset of the comma after the fourth number.
inline bool short_below_one_at(const char* base, below_one_quad* q,
                               unsigned* fourth_comma) noexcept {
    const __m512i window = _mm512_loadu_si512(base);
    const std::uint64_t commas =
        _cvtmask64_u64(_mm512_cmpeq_epi8_mask(window, _mm512_set1_epi8(',')));
    const std::uint64_t fourth = _pdep_u64(8, commas);
    if (fourth == 0) return false;
    *fourth_comma = lowest_bit(fourth);
    // Byte 0: 0xff (the comma before the first number), byte k + 1: comma k.
    const std::uint64_t packed = 0xffu | std::uint64_t{lowest_bit(commas)} << 8 |
                                 std::uint64_t{lowest_bit(_pdep_u64(2, commas))} << 16 |
                                 std::uint64_t{lowest_bit(_pdep_u64(4, commas))} << 24 |
                                 std::uint64_t{*fourth_comma} << 32;
    const __m512i positions = _mm512_set1_epi64(static_cast<long long>(packed));
    const __m512i previous =
        _mm512_permutexvar_epi8(_mm512_load_si512(kLanePrevious.index), positions);
    const __m512i comma = _mm512_permutexvar_epi8(_mm512_load_si512(kLaneComma.index), positions);
    // (Positions are below 64 and lane bytes below 16: no index wraps; those past 63 are past
    // the comma, no text.)
    const __m512i index = _mm512_add_epi8(previous, _mm512_load_si512(kLaneFromStart.index));
    const __mmask64 in_text = _mm512_cmplt_epu8_mask(index, comma);
    // A text of more than 16 bytes (comma - previous > 17) has bytes past its lane.
    const __mmask64 too_long = _mm512_mask_cmpgt_epu8_mask(
        _cvtu64_mask64(kSegmentLow * 7), _mm512_sub_epi8(comma, previous), _mm512_set1_epi8(17));
    *q =
        below_one_quad_of(_mm512_maskz_permutexvar_epi8(in_text, index, window), in_text, too_long);
    return true;
}

// What a general step (short_step, long_step) did: read eight numbers, or stopped (fewer
// separators than it needs, or too few bytes left: the row's rest is parse_row's), or finished the
// row (a number that does not end at its separator: *row is the scalar parser's reading of the
// row's rest).
enum class step { taken, stopped, finished };

// Eight short numbers from *at by the general path (128 bytes are left): *at and *count past them
// where taken.
template <class T>
inline step short_step(const char** at, const char* end, T* out, std::size_t capacity,
                       std::size_t* count, number_row* row) noexcept {
    const char* const p = *at;
    short_quad a, b;
    if (!short_quad_at(p, &a)) return step::stopped;
    const char* const second = p + comma_at(a, 3) + 1;
    if (!short_quad_at(second, &b)) return step::stopped;
    const auto values = row_values(packed_quotients(eight_packed(a.packed, b.packed), 0), out);
    auto text = [&](unsigned i, const char** start, const char** stop) {
        const short_quad& q = i < 4 ? a : b;
        const char* const base = i < 4 ? p : second;
        const int k = static_cast<int>(i % 4);
        *start = base + (k == 0 ? 0 : comma_at(q, k - 1) + 1);
        *stop = base + comma_at(q, k);
    };
    if (!store_group(values, a.fast | b.fast << 4, text, end, out, capacity, *count, row)) {
        return step::finished;
    }
    *count += 8;
    *at = second + comma_at(b, 3) + 1;
    return step::taken;
}

template <class T>
using step_function = step (*)(const char** at, const char* end, T* out, std::size_t capacity,
                               std::size_t* count, number_row* row) noexcept;

// Up to kGeneralSteps steps of `read_step` while `left` bytes are: taken, or the step that was
// not. Out of line, so that the loops of numbers below one keep their registers, and a loop of
// its own, so that a row of other numbers pays one call per kGeneralSteps steps.
template <class T, step_function<T> read_step, std::ptrdiff_t left>
TENSORB64_PARSER_NOINLINE step general_steps(const char** at, const char* end, T* out,
                                             std::size_t capacity, std::size_t* count,
                                             number_row* row) noexcept {
    const char* p = *at;  // (locals, kept in registers)
    std::size_t n = *count;
    step s = step::taken;
    for (int i = 0; i < kGeneralSteps && end - p >= left && s == step::taken; ++i) {
        s = read_step(&p, end, out, capacity, &n, row);
    }
    *at = p;
    *count = n;
    return s;
}

// Rows of short numbers: eight at a time from two windows while 128 bytes are left and each
// window holds four commas, as numbers below one or by short_step, then parse_row for the rest.
// Float32 and float64 rows alike: the values are exact quotients (at most 15 digits).
template <class T>
number_row parse_short_row(const char* p, const char* end, T* out, std::size_t capacity) noexcept {
    const char* const row = p;
    std::size_t count = 0;
    {
        const ieee_fp_environment ieee;
        while (end - p >= 128) {  // the second window starts at most 64 bytes on
            {
                below_one_quad a, b;
                unsigned a_end, b_end;
                if (!short_below_one_at(p, &a, &a_end)) break;
                const char* const second = p + a_end + 1;
                if (!short_below_one_at(second, &b, &b_end)) break;
                if (a.fits && b.fits) {
                    store_values(row_values(below_one_quotients(eight_packed(a.lanes, b.lanes),
                                                                a.negative | b.negative << 4, 0),
                                            out),
                                 out, capacity, count);
                    count += 8;
                    p = second + b_end + 1;
                    continue;
                }
            }
            number_row row;
            const step s =
                general_steps<T, short_step<T>, 128>(&p, end, out, capacity, &count, &row);
            if (s == step::finished) return row;
            if (s == step::stopped) break;
        }
    }
    return parse_row<false, 6, T, masked_read_any>(row, p, end, out, capacity, count);
}

// ---- long numbers, four to a vector (json.dumps's rows: parse_long_row) ----
//
// A number of up to 32 bytes is read from its first 16 (its head, left-aligned in a 16-byte lane:
// at most 15 digits once the point is dropped, w < 2^53); the rest (its tail) must be digits,
// which lie below the last digit of the head. So the value lies in [w, w + 1) / 10^f, and where
// both ends give the same float32 (through their correctly rounded doubles: rounding is
// monotonic), that is the float32 of the text's own double; a head that is the whole text gives
// w / 10^f exactly. json.dumps's texts of float32 values have 17 significant digits: the head holds
// 13 of them (after "-0."), and both ends agree unless the value lies within about 10^-13 of a
// float32 midpoint. Two numbers come from each 64-byte window (from its first byte, or past a
// space, to its first comma; from past that comma and a space to the second), two windows to a
// vector.

// vpermb indices: each byte of lane k takes byte 2k + which (0: start, 1: end) of the windows'
// packed offsets.
constexpr lane_table make_lane_select(int which) {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::int8_t>(2 * (j / 16) + which);
    return t;
}
constexpr lane_table kLaneStart = make_lane_select(0);
constexpr lane_table kLaneEnd = make_lane_select(1);
constexpr lane_table make_lane_position() {
    lane_table t{};
    for (int j = 0; j < 64; ++j) t.index[j] = static_cast<std::int8_t>(j % 16);
    return t;
}
constexpr lane_table kLanePosition = make_lane_position();

// A window's two numbers: their texts [start, end) as offsets from its first byte, and the
// window's bytes.
struct window_texts {
    __m512i bytes;
    std::uint32_t offsets;  // bytes: start 0, end 0 (the first comma), start 1, end 1
    unsigned second_comma;
};

// The two numbers of the window at `base` (64 bytes: `bytes`, `commas` its commas' bits);
// false without two commas in it.
inline bool window_texts_of(const char* base, __m512i bytes, std::uint64_t commas,
                            window_texts* w) noexcept {
    w->bytes = bytes;
    const std::uint64_t second = _pdep_u64(2, commas);
    if (second == 0) return false;
    const unsigned first_comma = lowest_bit(commas);
    w->second_comma = lowest_bit(second);
    // A space as the window's first byte or after its first comma (read from memory: both are in
    // the window, before the second comma).
    const unsigned start_1 = first_comma + 1 + unsigned{base[first_comma + 1] == ' '};
    w->offsets =
        unsigned{base[0] == ' '} | first_comma << 8 | start_1 << 16 | w->second_comma << 24;
    return true;
}

// Four numbers' heads and tails (two windows' numbers: lanes 0 and 1 from a, 2 and 3 from b).
struct long_texts {
    __m512i head;
    __m512i tail;
    __mmask64 in_head;
    __mmask64 in_tail;
    __mmask64 bad_tail;  // a tail byte that is not a digit, or text past the tail
};

inline long_texts long_texts_of(const window_texts& a, const window_texts& b) noexcept {
    const __m512i offsets =
        _mm512_set1_epi64(static_cast<long long>(a.offsets | std::uint64_t{b.offsets} << 32));
    const __m512i start = _mm512_permutexvar_epi8(_mm512_load_si512(kLaneStart.index), offsets);
    const __m512i end = _mm512_permutexvar_epi8(_mm512_load_si512(kLaneEnd.index), offsets);
    const __m512i head_index = _mm512_add_epi8(start, _mm512_load_si512(kLanePosition.index));
    const __m512i tail_index = _mm512_add_epi8(head_index, _mm512_set1_epi8(16));
    constexpr __mmask64 first_two = 0x00000000ffffffffull;  // lanes 0 and 1: window a's
    // (Offsets are below 64 and lane positions below 16: the indices never wrap a byte.)
    long_texts x;
    x.in_head = _mm512_cmplt_epu8_mask(head_index, end);
    x.in_tail = _mm512_cmplt_epu8_mask(tail_index, end);
    x.head = _mm512_mask_permutexvar_epi8(
        _mm512_maskz_permutexvar_epi8(x.in_head & first_two, head_index, a.bytes),
        x.in_head & ~first_two, head_index, b.bytes);
    x.tail = _mm512_mask_permutexvar_epi8(
        _mm512_maskz_permutexvar_epi8(x.in_tail & first_two, tail_index, a.bytes),
        x.in_tail & ~first_two, tail_index, b.bytes);
    // A tail byte that is not a digit, or text past the tail (more than 32 bytes).
    x.bad_tail = _kor_mask64(
        _kandn_mask64(_mm512_cmple_epu8_mask(_mm512_sub_epi8(x.tail, _mm512_set1_epi8('0')),
                                             _mm512_set1_epi8(9)),
                      x.in_tail),
        _mm512_cmplt_epu8_mask(_mm512_add_epi8(tail_index, _mm512_set1_epi8(16)), end));
    return x;
}

// Four numbers below one: their heads as below_one_quad_of reads them, fitting where their tails
// are digits.
inline below_one_quad long_below_one(const long_texts& x) noexcept {
    below_one_quad q = below_one_quad_of(x.head, x.in_head, 0);
    q.fits = q.fits && _kortestz_mask64_u8(x.bad_tail, x.bad_tail) != 0;
    return q;
}

// Four numbers: packed_lanes' lanes, which took the fast path, and which were cut (a tail).
struct long_quad {
    __m512i packed;
    unsigned fast;
    unsigned cut;
};

inline long_quad long_quad_of(const long_texts& x) noexcept {
    const __m512i head = x.head;
    const __mmask64 in_head = x.in_head, in_tail = x.in_tail, bad_tail = x.bad_tail;
    // The shape of each head, from bit 0 of its segment: the point neither first nor last in the
    // head, and followed by a digit there (where the shift crosses into the next segment, that one
    // is refused too, which is only slower); a good tail.
    const std::uint64_t t = _cvtmask64_u64(in_head);
    const lane_shape shape = lane_shape_of(head, t, t & kSegmentLow);
    long_quad q;
    q.fast = fast_lanes(shape, shape.misfit | (shape.point & (kSegmentLow | kSegmentHigh)) |
                                   ((shape.point << 1) & ~shape.digits) | _cvtmask64_u64(bad_tail));
    q.cut =
        static_cast<unsigned>(_pext_u64(nonzero_segments(_cvtmask64_u64(in_tail)), kSegmentHigh));
    // Every place after the point counts, the text's and the zeros after it alike (they are
    // digits 0 of w).
    const __m512i marks = _mm512_mask_mov_epi8(
        _mm512_maskz_mov_epi8(_cvtu64_mask64(~shape.through_point), _mm512_set1_epi8(1)),
        _cvtu64_mask64(shape.sign), _mm512_set1_epi8(static_cast<char>(0x80)));
    // Drop the point: the bytes up to it move one place right; the lane's first byte, which
    // stays (and is now also in the second), is no digit of w.
    const __m512i moved =
        _mm512_mask_permutexvar_epi8(shape.values, _cvtu64_mask64(shape.through_point),
                                     _mm512_load_si512(kLaneShift.index), shape.values);
    q.packed = packed_lanes(
        _mm512_maskz_shuffle_epi8(_cvtu64_mask64(~kSegmentLow), digit_table_zmm(), moved), marks);
    return q;
}

// The four windows of eight long numbers from p (256 bytes readable): false where one holds fewer
// than two commas. base[4]: past the eighth number's comma. Each window starts past the one
// before's second comma, so a window's commas wait on the one before's: the commas of 128 bytes
// are found at once for two windows, the second's taken from them by a shift (its window starts
// at most 64 bytes on), which halves that wait.
inline bool long_windows(const char* p, window_texts w[4], const char* base[5]) noexcept {
    base[0] = p;
    for (int k = 0; k < 4; k += 2) {
        const __m512i low = _mm512_loadu_si512(base[k]);
        const __m512i high = _mm512_loadu_si512(base[k] + 64);
        const std::uint64_t low_commas =
            _cvtmask64_u64(_mm512_cmpeq_epi8_mask(low, _mm512_set1_epi8(',')));
        const std::uint64_t high_commas =
            _cvtmask64_u64(_mm512_cmpeq_epi8_mask(high, _mm512_set1_epi8(',')));
        if (!window_texts_of(base[k], low, low_commas, &w[k])) return false;
        const unsigned shift = w[k].second_comma + 1;  // 2..64
        base[k + 1] = base[k] + shift;
        const std::uint64_t next_commas =
            shift == 64 ? high_commas : low_commas >> shift | high_commas << (64 - shift);
        if (!window_texts_of(base[k + 1], _mm512_loadu_si512(base[k + 1]), next_commas, &w[k + 1]))
            return false;
        base[k + 2] = base[k + 1] + w[k + 1].second_comma + 1;
    }
    return true;
}

// Eight long numbers from *at by the general path (as short_step; 256 bytes left).
inline step long_step(const char** at, const char* end, float* out, std::size_t capacity,
                      std::size_t* count, number_row* row) noexcept {
    window_texts w[4];
    const char* base[5];
    if (!long_windows(*at, w, base)) return step::stopped;
    const long_quad a = long_quad_of(long_texts_of(w[0], w[1]));
    const long_quad b = long_quad_of(long_texts_of(w[2], w[3]));
    const __m512i packed = eight_packed(a.packed, b.packed);
    const f32x values{packed_values(packed, 0)};
    // A cut number's two ends must agree.
    const unsigned agree = _mm256_cmpeq_epi32_mask(_mm256_castps_si256(values.v),
                                                   _mm256_castps_si256(packed_values(packed, 1)));
    const unsigned fast = (a.fast | b.fast << 4) & (agree | ~(a.cut | b.cut << 4));
    auto text = [&](unsigned i, const char** start, const char** stop) {
        const std::uint32_t offsets = w[i / 2].offsets >> (16 * (i % 2));
        *start = base[i / 2] + (offsets & 0xffu);
        *stop = base[i / 2] + ((offsets >> 8) & 0xffu);
    };
    if (!store_group(values, fast, text, end, out, capacity, *count, row)) return step::finished;
    *count += 8;
    *at = base[4];
    return step::taken;
}

// Rows of long numbers: eight at a time from four windows while 256 bytes are left and each window
// holds two commas, as numbers below one or by long_step, then parse_row for the rest.
[[maybe_unused]] number_row parse_long_row(const char* p, const char* end, float* out,
                                           std::size_t capacity) noexcept {
    const char* const row = p;
    std::size_t count = 0;
    {
        const ieee_fp_environment ieee;
        while (end - p >= 256) {  // each window starts at most 64 bytes past the one before
            {
                window_texts w[4];
                const char* base[5];
                if (!long_windows(p, w, base)) break;
                const below_one_quad a = long_below_one(long_texts_of(w[0], w[1]));
                const below_one_quad b = long_below_one(long_texts_of(w[2], w[3]));
                if (a.fits && b.fits) {
                    // The values lie in [w, w + 1) / 10^k: both ends must agree.
                    const __m512i lanes = eight_packed(a.lanes, b.lanes);
                    const unsigned negative = a.negative | b.negative << 4;
                    const __m256 values = below_one_values(lanes, negative, 0);
                    if (_mm256_cmpeq_epi32_mask(
                            _mm256_castps_si256(values),
                            _mm256_castps_si256(below_one_values(lanes, negative, 1))) == 0xff) {
                        store_values(f32x{values}, out, capacity, count);
                        count += 8;
                        p = base[4];
                        continue;
                    }
                }
            }
            number_row row;
            const step s =
                general_steps<float, long_step, 256>(&p, end, out, capacity, &count, &row);
            if (s == step::finished) return row;
            if (s == step::stopped) break;
        }
    }
    return parse_row<false, 4, float, masked_read_any>(row, p, end, out, capacity, count);
}

#undef TENSORB64_PARSER_NOINLINE
