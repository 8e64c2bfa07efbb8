// The core's tests: every SIMD level against scalar (the differential test), integer sources,
// rows of more dimensions, float rows, bytes output, a hostile FP environment, guard pages, the
// SIMD-level API.
#include "core_tests.hpp"

namespace core_tests {

// ---- random values with the edge cases each format has ------------------------------------

std::uint64_t random_bits(tb::dtype type, std::mt19937_64& rng) {
    const std::uint64_t r = rng();
    const unsigned pick = static_cast<unsigned>(rng() % 100);
    switch (type) {
        case tb::dtype::float32: {
            static const std::uint32_t specials[] = {
                0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001,
                0xffbfffff, 0x7fa5a5a5, 0x00000001, 0x807fffff, 0x00800000, 0x7f7fffff, 0xff7fffff,
                0x477fe000, 0x477ff000, 0x477fefff, 0x33000000, 0x33000001, 0x387fe000, 0x43e00000,
                0x43e80000, 0x43f00000, 0x47600000, 0x47700000, 0x3a800000, 0x37000000, 0x7f7f8000};
            if (pick < 25) return r & 0xffffffffu;
            if (pick < 40) return specials[r % (sizeof specials / sizeof specials[0])];
            const std::uint32_t sign = static_cast<std::uint32_t>(r >> 63) << 31;
            const std::uint32_t exponent = 127 - 30 + static_cast<std::uint32_t>((r >> 40) % 52);
            std::uint32_t mantissa = static_cast<std::uint32_t>(r) & 0x7fffff;
            if (pick >= 80) {  // exact rounding ties of one of the narrow formats
                static const std::uint32_t ties[] = {0x1000, 0x8000, 0x80000, 0x100000};
                const std::uint32_t tie = ties[(r >> 32) % 4];
                mantissa = (mantissa & ~((tie << 1) - 1)) | tie;
            }
            return sign | (exponent << 23) | mantissa;
        }
        case tb::dtype::float16:
        case tb::dtype::bfloat16: {
            static const std::uint16_t specials[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7c01, 0x7e00,
                                                     0xfdff, 0x0001, 0x03ff, 0x7bff, 0x7f80, 0xff81,
                                                     0x7fc0, 0xffff, 0x0080, 0x007f};
            if (pick < 20) return specials[r % (sizeof specials / sizeof specials[0])];
            return r & 0xffff;
        }
        case tb::dtype::float64: {
            static const std::uint64_t specials[] = {
                0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull,
                0xfff0000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000000ull,
                0x7ff4000020000000ull, 0x47efffffe0000000ull, 0x47effffff0000000ull,
                0x47efffffefffffffull, 0x36a0000000000000ull, 0x3690000000000000ull,
                0x3690000000000001ull, 0x380fffffe0000000ull, 0x3810000000000000ull,
                0x380fffffffffffffull, 0x0000000000000001ull, 0x800fffffffffffffull};
            if (pick < 15) return r;
            if (pick < 30) return specials[r % (sizeof specials / sizeof specials[0])];
            const std::uint64_t sign = (r >> 63) << 63;
            // Exponents from well below float32's subnormals to past its range.
            const std::uint64_t exponent = 1023 - 160 + (rng() % 300);
            std::uint64_t mantissa = r & 0xfffffffffffffull;
            if (pick >= 85) mantissa = (mantissa & ~0x3fffffffull) | 0x10000000ull;  // float32 tie
            return sign | (exponent << 52) | mantissa;
        }
        case tb::dtype::float8_e4m3fn:
        case tb::dtype::float8_e5m2: return r & 0xff;
        // Integers: every bit pattern is a value, and the edges are as likely as any other.
        case tb::dtype::int8:
        case tb::dtype::uint8: return r & 0xff;
        case tb::dtype::int16:
        case tb::dtype::uint16: return r & 0xffff;
        case tb::dtype::int32:
        case tb::dtype::uint32: return r & 0xffffffffu;
        case tb::dtype::int64:
        case tb::dtype::uint64: return r;
        case tb::dtype::bool8: return r & 1;
    }
    return 0;
}

std::vector<std::size_t> sampled_lengths() {
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 64; ++n) lengths.push_back(n);
    for (std::size_t edge : {96, 128, 192, 256, 384, 512, 767, 768, 1024, 1536, 2048}) {
        for (std::size_t n = edge - 3; n <= edge + 3 && n <= 2048; ++n) {
            if (n > 64) lengths.push_back(n);
        }
    }
    lengths.push_back(1000);
    lengths.push_back(1789);
    return lengths;
}

struct combo {
    tb::element_format from, to;
};

std::vector<combo> all_combos() {
    std::vector<combo> combos;
    for (tb::dtype from : all_dtypes) {
        for (tb::dtype to : all_dtypes) {
            if (!tb::is_output_type(to)) continue;
            for (tb::byte_order fo : both_orders) {
                for (tb::byte_order to_order : both_orders)
                    combos.push_back({{from, fo}, {to, to_order}});
            }
        }
    }
    return combos;
}

// Every available level against scalar: lengths as described at the top (all of them for the
// float32 identity when `full`), input misalignments 0..max_misalignment, output misaligned too.
void differential(const char* when, bool full, unsigned max_misalignment) {
    const std::vector<tb::simd_level> available = levels();
    if (available.size() < 2) {
        std::printf("  %s: only the scalar level here, nothing to compare\n", when);
        return;
    }
    level_guard guard;
    constexpr std::size_t max_n = 2048;
    const std::vector<std::size_t> sampled = sampled_lengths();
    std::vector<std::size_t> every(max_n + 1);
    for (std::size_t n = 0; n <= max_n; ++n) every[n] = n;

    std::vector<unsigned char> buffer(64 + 64 + max_n * 8 + 64);
    unsigned char* aligned =
        buffer.data() + (64 - reinterpret_cast<std::uintptr_t>(buffer.data()) % 64);
    std::vector<char> actual_out;
    long compared = 0;

    for (const combo& c : all_combos()) {
        std::mt19937_64 rng(1000 + static_cast<unsigned>(c.from.type) * 16 +
                            static_cast<unsigned>(c.to.type));
        std::vector<std::uint64_t> values(max_n);
        for (auto& v : values) v = random_bits(c.from.type, rng);
        const std::size_t size = tb::dtype_size(c.from.type);
        const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
        const bool identity =
            c.from.type == tb::dtype::float32 && c.to.type == tb::dtype::float32 &&
            c.from.order == tb::byte_order::little && c.to.order == tb::byte_order::little;
        const std::vector<std::size_t>& lengths = identity && full ? every : sampled;
        // The scalar text of each length (scalar does not care about alignment), then each
        // level at each misalignment. Levels are switched per combination, not per encoding:
        // switching runs cpuid, which is slow inside a virtual machine.
        std::vector<std::string> expected(lengths.size());
        tb::force_simd_level(tb::simd_level::scalar);
        for (std::size_t i = 0; i < lengths.size(); ++i) {
            std::size_t length = 0;
            tb::encoded_size(lengths[i] * tb::dtype_size(c.to.type), &length);
            expected[i].assign(length, '\0');
            char* out = &expected[i][0];
            tb::encode_rows(
                {bytes.data(), 1, lengths[i], 0, static_cast<std::ptrdiff_t>(size), c.from}, c.to,
                &out);
        }
        for (tb::simd_level level : available) {
            if (level == tb::simd_level::scalar) continue;
            tb::force_simd_level(level);
            for (unsigned misalignment = 0; misalignment <= max_misalignment; ++misalignment) {
                std::memcpy(aligned + misalignment, bytes.data(), bytes.size());
                const std::size_t out_offset = (misalignment * 7) % 64;
                for (std::size_t i = 0; i < lengths.size(); ++i) {
                    const std::size_t n = lengths[i], length = expected[i].size();
                    actual_out.assign(out_offset + length + 1, '\0');
                    char* out = actual_out.data() + out_offset;
                    tb::encode_rows({aligned + misalignment, 1, n, 0,
                                     static_cast<std::ptrdiff_t>(size), c.from},
                                    c.to, &out);
                    ++compared;
                    if (std::memcmp(out, expected[i].data(), length) == 0 && out[length] == '\0') {
                        test_check::record_pass();
                    } else {
                        report_failure(__FILE__, __LINE__,
                                       std::string(when) + ": " + tb::to_string(level) +
                                           " != scalar for " + name(c.from.type) + "/" +
                                           name(c.from.order) + " -> " + name(c.to.type) + "/" +
                                           name(c.to.order) + ", n=" + std::to_string(n) +
                                           ", misalignment " + std::to_string(misalignment));
                    }
                }
            }
        }
    }
    std::printf("  %s: %ld encodings compared with scalar\n", when, compared);
}

// Integers widen to float32 rounding to nearest even, in integer arithmetic: against goldens
// from numpy's astype(float32) (not the host's conversion: valgrind's emulation of it rounds
// 64-bit integers differently), at the ties and extremes.
template <class Int>
void check_integer_widening(const std::vector<Int>& values,
                            const std::vector<std::uint32_t>& goldens, tb::dtype type) {
    std::vector<unsigned char> bytes(values.size() * sizeof(Int));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    std::vector<unsigned char> expected;
    for (std::uint32_t g : goldens) {
        for (int k = 0; k < 4; ++k) expected.push_back(static_cast<unsigned char>(g >> (8 * k)));
    }
    CHECK_EQ_STR(encode(bytes, {type, tb::host_byte_order}, le(tb::dtype::float32)),
                 reference_base64(expected), tb::to_string(type));
}

void test_integer_sources() {
    using limits64 = std::numeric_limits<std::int64_t>;
    check_integer_widening<std::int64_t>(
        {0, 1, -1, (1LL << 24) + 1, (1LL << 24) + 3, (1LL << 24) + (1LL << 16) + 1, limits64::max(),
         limits64::min(), -((1LL << 40) + (1LL << 16) + 1)},
        {0x00000000u, 0x3f800000u, 0xbf800000u, 0x4b800000u, 0x4b800002u, 0x4b808000u, 0x5f000000u,
         0xdf000000u, 0xd3800001u},
        tb::dtype::int64);
    check_integer_widening<std::uint64_t>(
        {0, 1, ~0ull, (1ull << 63) + (1ull << 39) + 1, (1ull << 63) + (1ull << 39)},
        {0x00000000u, 0x3f800000u, 0x5f800000u, 0x5f000001u, 0x5f000000u}, tb::dtype::uint64);
    check_integer_widening<std::int32_t>(
        {0, -7, 2147483647, -2147483647 - 1, 16777217, 16777219},
        {0x00000000u, 0xc0e00000u, 0x4f000000u, 0xcf000000u, 0x4b800000u, 0x4b800002u},
        tb::dtype::int32);
    check_integer_widening<std::uint32_t>(
        {0, 4294967295u, 16777217u}, {0x00000000u, 0x4f800000u, 0x4b800000u}, tb::dtype::uint32);
    check_integer_widening<std::int16_t>({0, -32768, 32767},
                                         {0x00000000u, 0xc7000000u, 0x46fffe00u}, tb::dtype::int16);
    check_integer_widening<std::uint16_t>({0, 65535}, {0x00000000u, 0x477fff00u},
                                          tb::dtype::uint16);
    check_integer_widening<std::int8_t>({0, -128, 127}, {0x00000000u, 0xc3000000u, 0x42fe0000u},
                                        tb::dtype::int8);
    check_integer_widening<std::uint8_t>({0, 255}, {0x00000000u, 0x437f0000u}, tb::dtype::uint8);
    // bool: any non-zero byte is true, as torch and numpy read it.
    CHECK_EQ_STR(encode({0, 1, 2}, {tb::dtype::bool8, tb::host_byte_order}, le(tb::dtype::float32)),
                 reference_base64({0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f}), "bool");
}

// Rows indexed by several dimensions (a permuted 3-D array) equal the same rows copied out.
void test_multi_dimensional_rows() {
    // A [2][3][4] float32 array read as its permutation [3][2][4]: row (i, j) is source row (j, i).
    std::vector<float> data(24);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.5f - 3.0f;
    const std::size_t shape[] = {3, 2};
    const std::ptrdiff_t strides[] = {4 * 4, 12 * 4};
    tb::strided_rows rows{data.data(), 6, 4, 0, 4, {tb::dtype::float32, tb::host_byte_order}};
    rows.row_dims = 2;
    rows.row_shape = shape;
    rows.row_strides = strides;
    for (unsigned threads : {1u, 2u, 5u}) {
        std::vector<std::string> out(6, std::string(24, '\0'));
        std::vector<char*> outputs;
        for (auto& o : out) outputs.push_back(&o[0]);
        tb::encode_rows(rows, le(tb::dtype::float32), outputs.data(), threads);
        for (std::size_t i = 0; i < 3; ++i) {
            for (std::size_t j = 0; j < 2; ++j) {
                const float* row = data.data() + j * 12 + i * 4;
                std::vector<unsigned char> bytes(16);
                std::memcpy(bytes.data(), row, 16);
                if (tb::host_byte_order == tb::byte_order::big) {
                    for (std::size_t k = 0; k < 16; k += 4)
                        std::reverse(bytes.begin() + k, bytes.begin() + k + 4);
                }
                CHECK_EQ_STR(reference_base64(bytes), out[i * 2 + j], "N-D row");
            }
        }
    }
}

// Float rows: the same text whatever the thread count, and a NaN reported where it is.
void test_float_rows() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    const std::size_t n_rows = 9, n = 300;
    std::vector<float> data(n_rows * n);
    for (float& v : data) v = normal(rng);
    const tb::strided_rows rows{data.data(), n_rows,
                                n,           static_cast<std::ptrdiff_t>(n * 4),
                                4,           {tb::dtype::float32, tb::host_byte_order}};
    for (tb::float_format format : {tb::float_format::repr, tb::float_format::shortest}) {
        std::size_t bound = 0;
        CHECK(tb::float_data_bound(n_rows, n, tb::dtype::float32, format, 7, &bound));
        std::string texts[2];  // in each key order
        for (std::size_t keys = 0; keys < 2; ++keys) {
            std::string one(bound, '\0'), three(bound, '\0');
            char* end_one = nullptr;
            char* end_three = nullptr;
            const tb::response_layout& layout = *both_layouts[keys];
            CHECK(tb::write_float_data(rows, format, 7, &one[0], &end_one, 1, layout).finite);
            CHECK(tb::write_float_data(rows, format, 7, &three[0], &end_three, 3, layout).finite);
            one.resize(static_cast<std::size_t>(end_one - one.data()));
            three.resize(static_cast<std::size_t>(end_three - three.data()));
            CHECK_EQ_STR(one, three, "float data, threads 3 against 1");
            CHECK(one.back() == '}');
            texts[keys] = one;
        }
        CHECK(texts[0].rfind("{\"object\":\"embedding\",\"index\":7,\"embedding\":[", 0) == 0);
        // vLLM's order: the same entries, each with "index" moved before "object".
        const std::string openai_head = "{\"object\":\"embedding\",\"index\":";
        std::string moved = texts[0];
        for (std::size_t at = moved.find(openai_head); at != std::string::npos;
             at = moved.find(openai_head, at + 1)) {
            const std::size_t digits = at + openai_head.size();
            const std::size_t comma = moved.find(',', digits);
            moved.replace(at, comma + 1 - at,
                          "{\"index\":" + moved.substr(digits, comma - digits) +
                              ",\"object\":\"embedding\",");
        }
        CHECK(texts[1].rfind("{\"index\":7,\"object\":\"embedding\",\"embedding\":[", 0) == 0);
        CHECK_EQ_STR(texts[1], moved, "float data in vLLM's key order");
    }
    data[4 * n + 17] = std::numeric_limits<float>::quiet_NaN();
    std::vector<std::string> out(n_rows);
    std::vector<char*> outputs;
    std::vector<std::size_t> lengths(n_rows);
    std::size_t bound = 0;
    CHECK(tb::float_row_bound(n, tb::dtype::float32, tb::float_format::repr, &bound));
    for (auto& o : out) {
        o.assign(bound, '\0');
        outputs.push_back(&o[0]);
    }
    for (unsigned threads : {1u, 4u}) {
        const tb::float_text_result bad = tb::write_float_rows(
            rows, tb::float_format::repr, outputs.data(), lengths.data(), threads);
        CHECK(!bad.finite && bad.row == 4 && bad.column == 17);
    }
    const tb::float_text_result found = tb::find_non_finite(rows);
    CHECK(!found.finite && found.row == 4 && found.column == 17);
}

// Float rows through the public API at every SIMD level (TENSORB64_SIMD / force_simd_level switch
// the float-text writer too): the same text as the scalar level for float32, bfloat16, float16
// and float64 sources, strided views, rows of every length 0..70 and beyond a 512-value block, and
// a NaN or infinity reported at its column.
void test_float_rows_levels() {
    level_guard guard;
    std::mt19937_64 rng(12);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    const auto run = [](const tb::strided_rows& rows, tb::float_format format,
                        std::vector<std::string>* texts) {
        std::size_t bound = 0;
        CHECK(tb::float_row_bound(rows.row_length, rows.format.type, format, &bound));
        std::vector<std::string> out(rows.rows, std::string(bound + 16, '\x7f'));
        std::vector<char*> outputs;
        for (auto& o : out) outputs.push_back(&o[0]);
        std::vector<std::size_t> lengths(rows.rows);
        const tb::float_text_result result =
            tb::write_float_rows(rows, format, outputs.data(), lengths.data(), 1);
        for (std::size_t r = 0; r < rows.rows && result.finite; ++r) {
            bool untouched = true;
            for (std::size_t i = bound; i < out[r].size(); ++i) untouched &= out[r][i] == '\x7f';
            CHECK(untouched);
            out[r].resize(lengths[r]);
        }
        *texts = out;
        return result;
    };
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9},
          std::size_t{70}, std::size_t{511}, std::size_t{513}, std::size_t{1100}}) {
        const std::size_t n_rows = 3;
        std::vector<float> f32(n_rows * n * 2);
        for (std::size_t i = 0; i < f32.size(); ++i) {
            f32[i] =
                (i % 5 == 0)
                    ? static_cast<float>(std::ldexp(normal(rng), static_cast<int>(rng() % 80) - 40))
                    : normal(rng);
            if (i % 37 == 0) f32[i] = 0.0f;
            if (i % 41 == 1) {  // a subnormal, made from its bits (FTZ may be on)
                const std::uint32_t b = static_cast<std::uint32_t>(rng() & 0x807fffffu) | 1u;
                std::memcpy(&f32[i], &b, 4);
            }
        }
        // The same values widened (normal ones only: DAZ would flush a subnormal's conversion;
        // those are float64 subnormals here instead).
        std::vector<double> f64(f32.size());
        for (std::size_t i = 0; i < f32.size(); ++i) {
            std::uint32_t b;
            std::memcpy(&b, &f32[i], 4);
            if ((b & 0x7f800000u) != 0) {
                f64[i] = static_cast<double>(f32[i]);
            } else {
                const std::uint64_t tiny =
                    (std::uint64_t{b >> 31} << 63) | (rng() & 0xfffffffffffffull);
                std::memcpy(&f64[i], &tiny, 8);
            }
        }
        for (std::size_t i = 0; i < f64.size(); i += 3) {  // doubles with 53-bit significands
            const std::uint64_t b =
                (rng() & 0x800fffffffffffffull) | (std::uint64_t{1000 + rng() % 40} << 52);
            std::memcpy(&f64[i], &b, 8);
        }
        std::vector<std::uint16_t> halves(f32.size());
        for (auto& h : halves) h = static_cast<std::uint16_t>(rng() & 0x7bff);  // finite
        struct source {
            const void* data;
            tb::dtype type;
            std::size_t size;
        };
        const source sources[] = {{f32.data(), tb::dtype::float32, 4},
                                  {f64.data(), tb::dtype::float64, 8},
                                  {halves.data(), tb::dtype::float16, 2},
                                  {halves.data(), tb::dtype::bfloat16, 2}};
        for (const source& src : sources) {
            // Every other element of each row (a strided view).
            const tb::strided_rows rows{src.data,
                                        n_rows,
                                        n,
                                        static_cast<std::ptrdiff_t>(2 * n * src.size),
                                        static_cast<std::ptrdiff_t>(2 * src.size),
                                        {src.type, tb::host_byte_order}};
            for (tb::float_format format : {tb::float_format::repr, tb::float_format::shortest}) {
                std::vector<std::string> expected;
                tb::force_simd_level(tb::simd_level::scalar);
                CHECK(run(rows, format, &expected).finite);
                for (tb::simd_level level : levels()) {
                    tb::force_simd_level(level);
                    std::vector<std::string> got;
                    CHECK(run(rows, format, &got).finite);
                    for (std::size_t r = 0; r < n_rows; ++r)
                        CHECK_EQ_STR(got[r], expected[r], "float rows, every level equals scalar");
                }
            }
        }
        if (n == 0) continue;
        for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
            std::vector<float> bad = f32;
            bad[2 * (n + at)] = std::numeric_limits<float>::infinity();  // row 1, column at
            const tb::strided_rows rows{bad.data(), n_rows,
                                        n,          static_cast<std::ptrdiff_t>(8 * n),
                                        8,          {tb::dtype::float32, tb::host_byte_order}};
            for (tb::simd_level level : levels()) {
                tb::force_simd_level(level);
                for (tb::float_format format :
                     {tb::float_format::repr, tb::float_format::shortest}) {
                    std::vector<std::string> got;
                    const tb::float_text_result result = run(rows, format, &got);
                    CHECK(!result.finite && result.row == 1 && result.column == at);
                }
            }
        }
    }
}

// row_output::bytes writes exactly the bytes whose base64 row_output::base64 writes, at every
// level, for every conversion and byte order, across block boundaries, into rows laid end to end.
void test_bytes_output() {
    level_guard guard;
    const std::vector<std::size_t> lengths = {0, 1, 2, 3, 5, 47, 48, 49, 767, 768, 769, 1537};
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        for (const combo& c : all_combos()) {
            std::mt19937_64 rng(7 + static_cast<unsigned>(c.from.type) * 16 +
                                static_cast<unsigned>(c.to.type));
            for (std::size_t n : lengths) {
                std::vector<std::uint64_t> values(2 * n);
                for (auto& v : values) v = random_bits(c.from.type, rng);
                const std::size_t size = tb::dtype_size(c.from.type);
                const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
                const std::vector<std::string> text =
                    encode_strided(bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size),
                                   static_cast<std::ptrdiff_t>(size), c.from, c.to);
                const std::size_t row_bytes = n * tb::dtype_size(c.to.type);
                std::vector<unsigned char> body(2 * row_bytes + 64, 0x7f);
                char* outputs[2] = {reinterpret_cast<char*>(body.data()),
                                    reinterpret_cast<char*>(body.data() + row_bytes)};
                tb::encode_rows({bytes.data(), 2, n, static_cast<std::ptrdiff_t>(n * size),
                                 static_cast<std::ptrdiff_t>(size), c.from},
                                c.to, outputs, 1, tb::row_output::bytes);
                for (int r = 0; r < 2; ++r) {
                    const std::vector<unsigned char> row(body.begin() + r * row_bytes,
                                                         body.begin() + (r + 1) * row_bytes);
                    CHECK_EQ_STR(reference_base64(row), text[r], "bytes output");
                }
                bool untouched = true;
                for (std::size_t i = 2 * row_bytes; i < body.size(); ++i)
                    untouched &= body[i] == 0x7f;
                CHECK(untouched);
            }
        }
    }
}

// A hostile floating-point environment for the scope of the object: flush-to-zero,
// denormals-are-zero and rounding toward +infinity, as a process may have set them.
struct hostile_fp_environment {
#if defined(__x86_64__) || defined(_M_X64)
    static unsigned read() { return _mm_getcsr(); }
    static void write(unsigned v) { _mm_setcsr(v); }
    static constexpr unsigned hostile_bits = 0x8040u | 0x4000u;  // FTZ | DAZ | RC = upward
    unsigned saved = read();
#elif defined(__aarch64__) && defined(__GNUC__)
    static std::uint64_t read() {
        std::uint64_t v;
        __asm__ volatile("mrs %0, fpcr" : "=r"(v));
        return v;
    }
    static void write(std::uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
    static constexpr std::uint64_t hostile_bits =
        (1u << 24) | (1u << 19) | (1u << 22);  // FZ | FZ16 | RMode = +inf
    std::uint64_t saved = read();
#else
#endif
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
    // `hostile` is read back rather than assumed: valgrind keeps only the bits it emulates.
    decltype(read()) hostile = (write(saved | hostile_bits), read());
    ~hostile_fp_environment() { write(saved); }
    bool still_set() const { return read() == hostile; }
#endif
};

void test_hostile_fp_environment() {
#if defined(__x86_64__) || defined(_M_X64) || (defined(__aarch64__) && defined(__GNUC__))
    const hostile_fp_environment on;
    // The scalar code is integer-only, so it stays the reference even now.
    test_golden_conversions("golden under FTZ/DAZ, rounding upward");
    differential("differential under FTZ/DAZ, rounding upward", false, 7);
    test_float_rows_levels();  // float text: every level equals the integer-only scalar writer
    CHECK(on.still_set());     // the levels gave the caller back its floating-point environment
#else
    std::printf("  FP environment: no FTZ/rounding control known for this architecture, skipped\n");
#endif
}

#if defined(TENSORB64_TEST_GUARD_PAGES)
// A region whose end touches an inaccessible page: reading or writing one byte past the end faults.
struct guarded_region {
    std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    std::size_t size;
    unsigned char* base;
    explicit guarded_region(std::size_t bytes) {
        size = (bytes + page - 1) / page * page;
        base = static_cast<unsigned char*>(
            mmap(nullptr, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (base == MAP_FAILED) throw std::runtime_error("mmap failed");
        if (mprotect(base + size, page, PROT_NONE) != 0)
            throw std::runtime_error("mprotect failed");
    }
    ~guarded_region() { munmap(base, size + page); }
    unsigned char* end() const { return base + size; }
};

void test_no_access_past_the_ends() {
    level_guard guard;
    constexpr std::size_t max_n = 200;
    guarded_region input(max_n * 8), output(max_n * 8 * 2);
    std::mt19937_64 rng(99);
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        for (const combo& c : all_combos()) {
            const std::size_t size = tb::dtype_size(c.from.type);
            std::vector<std::uint64_t> values(max_n);
            for (auto& v : values) v = random_bits(c.from.type, rng);
            const std::vector<unsigned char> bytes = serialize(values, size, c.from.order);
            for (std::size_t n = 0; n <= max_n; ++n) {
                unsigned char* source = input.end() - n * size;
                std::memcpy(source, bytes.data(), n * size);
                std::size_t length = 0;
                tb::encoded_size(n * tb::dtype_size(c.to.type), &length);
                char* out = reinterpret_cast<char*>(output.end() - length);
                tb::encode_rows({source, 1, n, 0, static_cast<std::ptrdiff_t>(size), c.from}, c.to,
                                &out);
                // Reaching this line is the test: a read or write past either end would have
                // faulted. The text itself is checked by the differential test.
                CHECK(length == 0 || out[length - 1] != '\0');
            }
        }
    }
}
#endif

void test_simd_level_api() {
    const auto available = levels();
    CHECK(!available.empty() && available.front() == tb::simd_level::scalar);
    tb::simd_level parsed;
    CHECK(tb::parse_simd_level("scalar", &parsed) && parsed == tb::simd_level::scalar);
    CHECK(tb::parse_simd_level("avx512", &parsed) && parsed == tb::simd_level::avx512);
    CHECK(!tb::parse_simd_level("sse9", &parsed));
    for (tb::simd_level level :
         {tb::simd_level::avx2, tb::simd_level::avx512, tb::simd_level::neon}) {
        bool has = false;
        for (tb::simd_level a : available) has |= a == level;
        if (has) continue;
        bool threw = false;
        try {
            tb::force_simd_level(level);
        } catch (const std::invalid_argument& e) {
            threw = std::strstr(e.what(), "available: scalar") != nullptr;
        }
        CHECK(threw);
    }
    bool threw = false;
    char* out = nullptr;
    try {
        tb::encode_rows({nullptr, 0, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float64),
                        &out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);
    CHECK(tb::is_output_type(tb::dtype::float8_e4m3fn));
    CHECK(tb::is_output_type(tb::dtype::bfloat16));
    CHECK(!tb::is_output_type(tb::dtype::int32));  // integers are never written
    CHECK(!tb::is_output_type(tb::dtype::float64));
    std::size_t length = 0;
    CHECK(tb::encoded_size(4, &length) && length == 8);
    CHECK(!tb::encoded_size(SIZE_MAX, &length));
}

}  // namespace core_tests
