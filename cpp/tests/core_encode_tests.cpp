// The core's tests: RFC 4648's vectors, float32 goldens, golden conversions, strides.
#include "core_tests.hpp"

namespace core_tests {

void test_rfc4648() {
    const char* vectors[][2] = {{"", ""},
                                {"f", "Zg=="},
                                {"fo", "Zm8="},
                                {"foo", "Zm9v"},
                                {"foob", "Zm9vYg=="},
                                {"fooba", "Zm9vYmE="},
                                {"foobar", "Zm9vYmFy"}};
    level_guard guard;
    std::mt19937_64 rng(4648);
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("rfc4648 ") + tb::to_string(level);
        for (auto& v : vectors) {
            const std::vector<unsigned char> bytes(v[0], v[0] + std::strlen(v[0]));
            // float8_e4m3fn to itself copies the raw bytes: the byte-level path.
            CHECK_EQ_STR(encode(bytes, le(tb::dtype::float8_e4m3fn), le(tb::dtype::float8_e4m3fn)),
                         v[1], ctx);
        }
        for (std::size_t n = 0; n <= 300; ++n) {
            std::vector<unsigned char> bytes(n);
            for (auto& b : bytes) b = static_cast<unsigned char>(rng());
            CHECK_EQ_STR(encode(bytes, le(tb::dtype::float8_e5m2), be(tb::dtype::float8_e5m2)),
                         reference_base64(bytes), ctx + " random bytes n=" + std::to_string(n));
        }
    }
}

void test_float32_goldens() {
    struct golden {
        std::vector<std::uint64_t> bits;
        const char* little;
        const char* big;
    };
    const golden goldens[] = {
        {{0x3f800000}, "AACAPw==", "P4AAAA=="},
        {{0x3f800000, 0x40000000}, "AACAPwAAAEA=", "P4AAAEAAAAA="},
        {{0x80000000}, "AAAAgA==", "gAAAAA=="},
        {{0x40490fdb}, "2w9JQA==", "QEkP2w=="},
        {{0x3f800000, 0xc0200000, 0x1}, "AACAPwAAIMABAAAA", "P4AAAMAgAAAAAAAB"},
        {{}, "", ""},
    };
    level_guard guard;
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("float32 golden ") + tb::to_string(level);
        for (const golden& g : goldens) {
            for (tb::byte_order source : both_orders) {
                const auto bytes = serialize(g.bits, 4, source);
                const tb::element_format from{tb::dtype::float32, source};
                CHECK_EQ_STR(encode(bytes, from, le(tb::dtype::float32)), g.little,
                             ctx + " to little");
                CHECK_EQ_STR(encode(bytes, from, be(tb::dtype::float32)), g.big, ctx + " to big");
            }
        }
    }
}

// f32 bits -> torch 2.13's float16, bfloat16, float8_e4m3fn, float8_e5m2 bits.
struct narrow_golden {
    std::uint32_t f32;
    std::uint16_t f16, bf16;
    std::uint8_t e4m3, e5m2;
};
const narrow_golden narrow_goldens[] = {
    {0x00000000u, 0x0000, 0x0000, 0x00, 0x00}, {0x80000000u, 0x8000, 0x8000, 0x80, 0x80},
    {0x3f800000u, 0x3c00, 0x3f80, 0x38, 0x3c}, {0xbf800000u, 0xbc00, 0xbf80, 0xb8, 0xbc},
    {0x7f800000u, 0x7c00, 0x7f80, 0x7e, 0x7c}, {0xff800000u, 0xfc00, 0xff80, 0xfe, 0xfc},
    {0x7fc00000u, 0x7e00, 0xffff, 0x7f, 0x7f}, {0xffc00000u, 0xfe00, 0xffff, 0xff, 0xff},
    {0x7f800001u, 0x7e00, 0xffff, 0x7f, 0x7f}, {0xff800001u, 0xfe00, 0xffff, 0xff, 0xff},
    {0x7fbfffffu, 0x7fff, 0xffff, 0x7f, 0x7f}, {0x7fffffffu, 0x7fff, 0xffff, 0x7f, 0x7f},
    {0xffffffffu, 0xffff, 0xffff, 0xff, 0xff}, {0x7fa00000u, 0x7f00, 0xffff, 0x7f, 0x7f},
    {0x7fffe000u, 0x7fff, 0xffff, 0x7f, 0x7f}, {0x7f802000u, 0x7e01, 0xffff, 0x7f, 0x7f},
    {0x00000001u, 0x0000, 0x0000, 0x00, 0x00}, {0x807fffffu, 0x8000, 0x8080, 0x80, 0x80},
    {0x00800000u, 0x0000, 0x0080, 0x00, 0x00}, {0x7f7fffffu, 0x7c00, 0x7f80, 0x7e, 0x7c},
    {0xff7fffffu, 0xfc00, 0xff80, 0xfe, 0xfc}, {0x477fe000u, 0x7bff, 0x4780, 0x7e, 0x7c},
    {0x477fefffu, 0x7bff, 0x4780, 0x7e, 0x7c}, {0x477ff000u, 0x7c00, 0x4780, 0x7e, 0x7c},
    {0x477ff001u, 0x7c00, 0x4780, 0x7e, 0x7c}, {0x47800000u, 0x7c00, 0x4780, 0x7e, 0x7c},
    {0xc77ff000u, 0xfc00, 0xc780, 0xfe, 0xfc}, {0x33800000u, 0x0001, 0x3380, 0x00, 0x00},
    {0x33000000u, 0x0000, 0x3300, 0x00, 0x00}, {0x33000001u, 0x0001, 0x3300, 0x00, 0x00},
    {0x33c00000u, 0x0002, 0x33c0, 0x00, 0x00}, {0x38800000u, 0x0400, 0x3880, 0x00, 0x04},
    {0x387fc000u, 0x03ff, 0x3880, 0x00, 0x04}, {0x387fe000u, 0x0400, 0x3880, 0x00, 0x04},
    {0x3f801000u, 0x3c00, 0x3f80, 0x38, 0x3c}, {0x3f803000u, 0x3c02, 0x3f80, 0x38, 0x3c},
    {0x3f801001u, 0x3c01, 0x3f80, 0x38, 0x3c}, {0x3f808000u, 0x3c04, 0x3f80, 0x38, 0x3c},
    {0x3f818000u, 0x3c0c, 0x3f82, 0x38, 0x3c}, {0x3f808001u, 0x3c04, 0x3f81, 0x38, 0x3c},
    {0x7f7f8000u, 0x7c00, 0x7f80, 0x7e, 0x7c}, {0x7f7f7fffu, 0x7c00, 0x7f7f, 0x7e, 0x7c},
    {0x00008000u, 0x0000, 0x0000, 0x00, 0x00}, {0x00018000u, 0x0000, 0x0002, 0x00, 0x00},
    {0x43e00000u, 0x5f00, 0x43e0, 0x7e, 0x5f}, {0x43e80000u, 0x5f40, 0x43e8, 0x7e, 0x5f},
    {0x43f00000u, 0x5f80, 0x43f0, 0x7e, 0x60}, {0x43f80000u, 0x5fc0, 0x43f8, 0x7e, 0x60},
    {0x44000000u, 0x6000, 0x4400, 0x7e, 0x60}, {0xc3f00000u, 0xdf80, 0xc3f0, 0xfe, 0xe0},
    {0x3b000000u, 0x1800, 0x3b00, 0x01, 0x18}, {0x3a800000u, 0x1400, 0x3a80, 0x00, 0x14},
    {0x3a800001u, 0x1400, 0x3a80, 0x01, 0x14}, {0x3c000000u, 0x2000, 0x3c00, 0x04, 0x20},
    {0x3b800000u, 0x1c00, 0x3b80, 0x02, 0x1c}, {0x3bc00000u, 0x1e00, 0x3bc0, 0x03, 0x1e},
    {0x47600000u, 0x7b00, 0x4760, 0x7e, 0x7b}, {0x47700000u, 0x7b80, 0x4770, 0x7e, 0x7c},
    {0x47800000u, 0x7c00, 0x4780, 0x7e, 0x7c}, {0x37800000u, 0x0100, 0x3780, 0x00, 0x01},
    {0x37000000u, 0x0080, 0x3700, 0x00, 0x00}, {0x37000001u, 0x0080, 0x3700, 0x00, 0x01},
    {0x38000000u, 0x0200, 0x3800, 0x00, 0x02}, {0x47680000u, 0x7b40, 0x4768, 0x7e, 0x7b},
    {0x476fffffu, 0x7b80, 0x4770, 0x7e, 0x7b}, {0x3eaaaaabu, 0x3555, 0x3eab, 0x2b, 0x35},
    {0x40490fdbu, 0x4248, 0x4049, 0x45, 0x42}, {0xc2f6e979u, 0xd7b7, 0xc2f7, 0xef, 0xd8},
};

// f64 bits -> torch 2.13's float32 bits.
const std::uint64_t f64_goldens[][2] = {
    {0x0000000000000000ull, 0x00000000u}, {0x8000000000000000ull, 0x80000000u},
    {0x3ff0000000000000ull, 0x3f800000u}, {0xbff0000000000000ull, 0xbf800000u},
    {0x7ff0000000000000ull, 0x7f800000u}, {0xfff0000000000000ull, 0xff800000u},
    {0x47efffffe0000000ull, 0x7f7fffffu}, {0x47effffff0000000ull, 0x7f800000u},
    {0x47efffffefffffffull, 0x7f7fffffu}, {0x47effffff0000001ull, 0x7f800000u},
    {0x48078287f49c4a1dull, 0x7f800000u}, {0xc8078287f49c4a1dull, 0xff800000u},
    {0x36a0000000000000ull, 0x00000001u}, {0x3690000000000000ull, 0x00000000u},
    {0x366244ce242c5561ull, 0x00000000u}, {0x380fffffc0000000ull, 0x007fffffu},
    {0x3810000000000000ull, 0x00800000u}, {0x380fffffe0000000ull, 0x00800000u},
    {0x0000000000000001ull, 0x00000000u}, {0x3ff0000010000000ull, 0x3f800000u},
    {0x3ff0000030000000ull, 0x3f800002u}, {0x3fb999999999999aull, 0x3dcccccdu},
    {0x37b5c72fb1552d83ull, 0x0002b8e6u}, {0x7ff0000000000001ull, 0x7fc00000u},
    {0xfff8000000000000ull, 0xffc00000u}, {0x7ff4000020000000ull, 0x7fe00001u},
    {0x7fffffffffffffffull, 0x7fffffffu}, {0x000fffffffffffffull, 0x00000000u},
    {0x8000000000000001ull, 0x80000000u},
};

void test_golden_conversions(const char* when) {
    level_guard guard;
    std::vector<std::uint64_t> f16_all, f32_of_f16;
    for (std::uint32_t h = 0; h < 65536; ++h) {
        f16_all.push_back(h);
        f32_of_f16.push_back(reference_f16_to_f32(static_cast<std::uint16_t>(h)));
    }
    std::vector<std::uint64_t> f32s, f16s, bf16s, e4m3s, e5m2s, f64s, f32_of_f64;
    for (const narrow_golden& g : narrow_goldens) {
        f32s.push_back(g.f32);
        f16s.push_back(g.f16);
        bf16s.push_back(g.bf16);
        e4m3s.push_back(g.e4m3);
        e5m2s.push_back(g.e5m2);
    }
    for (auto& g : f64_goldens) {
        f64s.push_back(g[0]);
        f32_of_f64.push_back(g[1]);
    }
    // Repeat each table so every value also lands in the vector loops, not just the tails.
    auto repeated = [](const std::vector<std::uint64_t>& v, int times) {
        std::vector<std::uint64_t> out;
        for (int i = 0; i < times; ++i) out.insert(out.end(), v.begin(), v.end());
        return out;
    };
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string(when) + " " + tb::to_string(level);
        for (tb::byte_order order : both_orders) {
            CHECK_EQ_STR(encode(serialize(f16_all, 2, order), {tb::dtype::float16, order},
                                le(tb::dtype::float32)),
                         reference_base64(serialize(f32_of_f16, 4, tb::byte_order::little)),
                         ctx + " every float16 -> float32");
            const auto source = serialize(repeated(f32s, 5), 4, order);
            const tb::element_format from{tb::dtype::float32, order};
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float16)),
                         reference_base64(serialize(repeated(f16s, 5), 2, tb::byte_order::little)),
                         ctx + " float32 -> float16");
            CHECK_EQ_STR(encode(source, from, be(tb::dtype::bfloat16)),
                         reference_base64(serialize(repeated(bf16s, 5), 2, tb::byte_order::big)),
                         ctx + " float32 -> bfloat16");
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float8_e4m3fn)),
                         reference_base64(serialize(repeated(e4m3s, 5), 1, tb::byte_order::little)),
                         ctx + " float32 -> float8_e4m3fn");
            CHECK_EQ_STR(encode(source, from, le(tb::dtype::float8_e5m2)),
                         reference_base64(serialize(repeated(e5m2s, 5), 1, tb::byte_order::little)),
                         ctx + " float32 -> float8_e5m2");
            CHECK_EQ_STR(
                encode(serialize(repeated(f64s, 5), 8, order), {tb::dtype::float64, order},
                       be(tb::dtype::float32)),
                reference_base64(serialize(repeated(f32_of_f64, 5), 4, tb::byte_order::big)),
                ctx + " float64 -> float32");
        }
        // bfloat16 widening is a shift that keeps NaNs as they are; float16 NaNs become 0x7fc0 in
        // bfloat16 (formats.hpp).
        CHECK_EQ_STR(encode(serialize({0x3f80, 0x7fa1, 0xffff, 0x0001}, 2, tb::byte_order::little),
                            le(tb::dtype::bfloat16), le(tb::dtype::float32)),
                     reference_base64(serialize({0x3f800000, 0x7fa10000, 0xffff0000, 0x00010000}, 4,
                                                tb::byte_order::little)),
                     ctx + " bfloat16 -> float32");
        CHECK_EQ_STR(
            encode(serialize({0x7c01, 0xfe00, 0x3c00}, 2, tb::byte_order::little),
                   le(tb::dtype::float16), le(tb::dtype::bfloat16)),
            reference_base64(serialize({0x7fc0, 0x7fc0, 0x3f80}, 2, tb::byte_order::little)),
            ctx + " float16 NaN -> bfloat16");
    }
}

void test_strides() {
    level_guard guard;
    std::mt19937_64 rng(77);
    const std::size_t n = 1000;
    std::vector<std::uint64_t> values(n);
    for (auto& v : values) v = rng() & 0xffffffffu;
    const std::string expected = reference_base64(serialize(values, 4, tb::byte_order::little));
    for (tb::simd_level level : levels()) {
        tb::force_simd_level(level);
        const std::string ctx = std::string("strides ") + tb::to_string(level);
        for (std::size_t gap : {0, 1, 3, 4}) {  // bytes between elements: odd ones misalign them
            const std::size_t step = 4 + gap;
            for (bool reversed : {false, true}) {
                std::vector<unsigned char> buffer(1 + n * step);
                for (std::size_t i = 0; i < n; ++i) {
                    std::vector<unsigned char> e;
                    put(e, values[reversed ? n - 1 - i : i], 4, tb::byte_order::little);
                    std::memcpy(buffer.data() + 1 + i * step, e.data(), 4);  // +1: misaligned
                }
                const unsigned char* first = buffer.data() + 1 + (reversed ? (n - 1) * step : 0);
                const std::ptrdiff_t stride = reversed ? -static_cast<std::ptrdiff_t>(step)
                                                       : static_cast<std::ptrdiff_t>(step);
                CHECK_EQ_STR(encode_strided(first, 1, n, 0, stride, le(tb::dtype::float32),
                                            le(tb::dtype::float32))[0],
                             expected, ctx + " stride " + std::to_string(stride));
                // Strided gathering on the conversion path too.
                const auto b = encode_strided(first, 1, n, 0, stride, le(tb::dtype::float32),
                                              le(tb::dtype::bfloat16))[0];
                CHECK(b.size() == (n * 2 + 2) / 3 * 4);
            }
        }
        // Zero element stride: one value repeated. Zero and negative row strides.
        const std::vector<unsigned char> one = serialize({0x3f800000}, 4, tb::byte_order::little);
        const std::string ones = reference_base64(
            serialize(std::vector<std::uint64_t>(n, 0x3f800000), 4, tb::byte_order::little));
        CHECK_EQ_STR(encode_strided(one.data(), 1, n, 0, 0, le(tb::dtype::float32),
                                    le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride");
        const std::vector<unsigned char> half = serialize({0x3c00}, 2, tb::byte_order::little);
        CHECK_EQ_STR(encode_strided(half.data(), 1, n, 0, 0, le(tb::dtype::float16),
                                    le(tb::dtype::float32))[0],
                     ones, ctx + " zero element stride, float16");
        const auto same =
            encode_strided(one.data(), 3, 1, 0, 4, le(tb::dtype::float32), le(tb::dtype::float32));
        CHECK(same.size() == 3 && same[0] == "AACAPw==" && same[2] == "AACAPw==");

        // Rows: a 64 x 300 float16 matrix read bottom-up (negative row stride), as 2 threads.
        const std::size_t rows = 64, cols = 300;
        std::vector<std::uint64_t> matrix(rows * cols);
        for (auto& v : matrix) v = rng() & 0x7bff;  // finite float16 values
        const auto bytes = serialize(matrix, 2, tb::byte_order::little);
        const unsigned char* last_row = bytes.data() + (rows - 1) * cols * 2;
        for (unsigned threads : {1u, 2u}) {
            const auto out =
                encode_strided(last_row, rows, cols, -static_cast<std::ptrdiff_t>(cols * 2), 2,
                               le(tb::dtype::float16), le(tb::dtype::float32), threads);
            bool all_equal = out.size() == rows;
            for (std::size_t r = 0; r < rows && all_equal; ++r) {
                std::vector<std::uint64_t> row;
                for (std::size_t c = 0; c < cols; ++c) {
                    row.push_back(reference_f16_to_f32(
                        static_cast<std::uint16_t>(matrix[(rows - 1 - r) * cols + c])));
                }
                all_equal = out[r] == reference_base64(serialize(row, 4, tb::byte_order::little));
            }
            CHECK(all_equal);
        }
        // A batch big enough that `threads` really splits it: every row must still be right.
        const std::size_t big_rows = 96, big_cols = 3072;
        std::vector<std::uint64_t> big(big_rows * big_cols);
        for (auto& v : big) v = rng() & 0xffffffffu;
        const auto big_bytes = serialize(big, 4, tb::byte_order::little);
        const auto single = encode_strided(big_bytes.data(), big_rows, big_cols, big_cols * 4, 4,
                                           le(tb::dtype::float32), be(tb::dtype::float16), 1);
        const auto split = encode_strided(big_bytes.data(), big_rows, big_cols, big_cols * 4, 4,
                                          le(tb::dtype::float32), be(tb::dtype::float16), 2);
        CHECK(single == split);
    }
}

}  // namespace core_tests
