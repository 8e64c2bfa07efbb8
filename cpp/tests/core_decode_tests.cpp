// The core's tests: strict decoding.
#include "core_tests.hpp"

namespace core_tests {

// ---- decoding ------------------------------------------------------------------------------

// float32 bits of every float8 code, from torch 2.13: torch.arange(256, dtype=torch.uint8)
// .view(dtype).to(torch.float32) (e4m3fn NaNs widen to sign | 0x7ff00000, e5m2 NaNs are quieted).
const std::uint32_t e4m3fn_goldens[256] = {
    0x00000000u, 0x3b000000u, 0x3b800000u, 0x3bc00000u, 0x3c000000u, 0x3c200000u, 0x3c400000u,
    0x3c600000u, 0x3c800000u, 0x3c900000u, 0x3ca00000u, 0x3cb00000u, 0x3cc00000u, 0x3cd00000u,
    0x3ce00000u, 0x3cf00000u, 0x3d000000u, 0x3d100000u, 0x3d200000u, 0x3d300000u, 0x3d400000u,
    0x3d500000u, 0x3d600000u, 0x3d700000u, 0x3d800000u, 0x3d900000u, 0x3da00000u, 0x3db00000u,
    0x3dc00000u, 0x3dd00000u, 0x3de00000u, 0x3df00000u, 0x3e000000u, 0x3e100000u, 0x3e200000u,
    0x3e300000u, 0x3e400000u, 0x3e500000u, 0x3e600000u, 0x3e700000u, 0x3e800000u, 0x3e900000u,
    0x3ea00000u, 0x3eb00000u, 0x3ec00000u, 0x3ed00000u, 0x3ee00000u, 0x3ef00000u, 0x3f000000u,
    0x3f100000u, 0x3f200000u, 0x3f300000u, 0x3f400000u, 0x3f500000u, 0x3f600000u, 0x3f700000u,
    0x3f800000u, 0x3f900000u, 0x3fa00000u, 0x3fb00000u, 0x3fc00000u, 0x3fd00000u, 0x3fe00000u,
    0x3ff00000u, 0x40000000u, 0x40100000u, 0x40200000u, 0x40300000u, 0x40400000u, 0x40500000u,
    0x40600000u, 0x40700000u, 0x40800000u, 0x40900000u, 0x40a00000u, 0x40b00000u, 0x40c00000u,
    0x40d00000u, 0x40e00000u, 0x40f00000u, 0x41000000u, 0x41100000u, 0x41200000u, 0x41300000u,
    0x41400000u, 0x41500000u, 0x41600000u, 0x41700000u, 0x41800000u, 0x41900000u, 0x41a00000u,
    0x41b00000u, 0x41c00000u, 0x41d00000u, 0x41e00000u, 0x41f00000u, 0x42000000u, 0x42100000u,
    0x42200000u, 0x42300000u, 0x42400000u, 0x42500000u, 0x42600000u, 0x42700000u, 0x42800000u,
    0x42900000u, 0x42a00000u, 0x42b00000u, 0x42c00000u, 0x42d00000u, 0x42e00000u, 0x42f00000u,
    0x43000000u, 0x43100000u, 0x43200000u, 0x43300000u, 0x43400000u, 0x43500000u, 0x43600000u,
    0x43700000u, 0x43800000u, 0x43900000u, 0x43a00000u, 0x43b00000u, 0x43c00000u, 0x43d00000u,
    0x43e00000u, 0x7ff00000u, 0x80000000u, 0xbb000000u, 0xbb800000u, 0xbbc00000u, 0xbc000000u,
    0xbc200000u, 0xbc400000u, 0xbc600000u, 0xbc800000u, 0xbc900000u, 0xbca00000u, 0xbcb00000u,
    0xbcc00000u, 0xbcd00000u, 0xbce00000u, 0xbcf00000u, 0xbd000000u, 0xbd100000u, 0xbd200000u,
    0xbd300000u, 0xbd400000u, 0xbd500000u, 0xbd600000u, 0xbd700000u, 0xbd800000u, 0xbd900000u,
    0xbda00000u, 0xbdb00000u, 0xbdc00000u, 0xbdd00000u, 0xbde00000u, 0xbdf00000u, 0xbe000000u,
    0xbe100000u, 0xbe200000u, 0xbe300000u, 0xbe400000u, 0xbe500000u, 0xbe600000u, 0xbe700000u,
    0xbe800000u, 0xbe900000u, 0xbea00000u, 0xbeb00000u, 0xbec00000u, 0xbed00000u, 0xbee00000u,
    0xbef00000u, 0xbf000000u, 0xbf100000u, 0xbf200000u, 0xbf300000u, 0xbf400000u, 0xbf500000u,
    0xbf600000u, 0xbf700000u, 0xbf800000u, 0xbf900000u, 0xbfa00000u, 0xbfb00000u, 0xbfc00000u,
    0xbfd00000u, 0xbfe00000u, 0xbff00000u, 0xc0000000u, 0xc0100000u, 0xc0200000u, 0xc0300000u,
    0xc0400000u, 0xc0500000u, 0xc0600000u, 0xc0700000u, 0xc0800000u, 0xc0900000u, 0xc0a00000u,
    0xc0b00000u, 0xc0c00000u, 0xc0d00000u, 0xc0e00000u, 0xc0f00000u, 0xc1000000u, 0xc1100000u,
    0xc1200000u, 0xc1300000u, 0xc1400000u, 0xc1500000u, 0xc1600000u, 0xc1700000u, 0xc1800000u,
    0xc1900000u, 0xc1a00000u, 0xc1b00000u, 0xc1c00000u, 0xc1d00000u, 0xc1e00000u, 0xc1f00000u,
    0xc2000000u, 0xc2100000u, 0xc2200000u, 0xc2300000u, 0xc2400000u, 0xc2500000u, 0xc2600000u,
    0xc2700000u, 0xc2800000u, 0xc2900000u, 0xc2a00000u, 0xc2b00000u, 0xc2c00000u, 0xc2d00000u,
    0xc2e00000u, 0xc2f00000u, 0xc3000000u, 0xc3100000u, 0xc3200000u, 0xc3300000u, 0xc3400000u,
    0xc3500000u, 0xc3600000u, 0xc3700000u, 0xc3800000u, 0xc3900000u, 0xc3a00000u, 0xc3b00000u,
    0xc3c00000u, 0xc3d00000u, 0xc3e00000u, 0xfff00000u,
};
const std::uint32_t e5m2_goldens[256] = {
    0x00000000u, 0x37800000u, 0x38000000u, 0x38400000u, 0x38800000u, 0x38a00000u, 0x38c00000u,
    0x38e00000u, 0x39000000u, 0x39200000u, 0x39400000u, 0x39600000u, 0x39800000u, 0x39a00000u,
    0x39c00000u, 0x39e00000u, 0x3a000000u, 0x3a200000u, 0x3a400000u, 0x3a600000u, 0x3a800000u,
    0x3aa00000u, 0x3ac00000u, 0x3ae00000u, 0x3b000000u, 0x3b200000u, 0x3b400000u, 0x3b600000u,
    0x3b800000u, 0x3ba00000u, 0x3bc00000u, 0x3be00000u, 0x3c000000u, 0x3c200000u, 0x3c400000u,
    0x3c600000u, 0x3c800000u, 0x3ca00000u, 0x3cc00000u, 0x3ce00000u, 0x3d000000u, 0x3d200000u,
    0x3d400000u, 0x3d600000u, 0x3d800000u, 0x3da00000u, 0x3dc00000u, 0x3de00000u, 0x3e000000u,
    0x3e200000u, 0x3e400000u, 0x3e600000u, 0x3e800000u, 0x3ea00000u, 0x3ec00000u, 0x3ee00000u,
    0x3f000000u, 0x3f200000u, 0x3f400000u, 0x3f600000u, 0x3f800000u, 0x3fa00000u, 0x3fc00000u,
    0x3fe00000u, 0x40000000u, 0x40200000u, 0x40400000u, 0x40600000u, 0x40800000u, 0x40a00000u,
    0x40c00000u, 0x40e00000u, 0x41000000u, 0x41200000u, 0x41400000u, 0x41600000u, 0x41800000u,
    0x41a00000u, 0x41c00000u, 0x41e00000u, 0x42000000u, 0x42200000u, 0x42400000u, 0x42600000u,
    0x42800000u, 0x42a00000u, 0x42c00000u, 0x42e00000u, 0x43000000u, 0x43200000u, 0x43400000u,
    0x43600000u, 0x43800000u, 0x43a00000u, 0x43c00000u, 0x43e00000u, 0x44000000u, 0x44200000u,
    0x44400000u, 0x44600000u, 0x44800000u, 0x44a00000u, 0x44c00000u, 0x44e00000u, 0x45000000u,
    0x45200000u, 0x45400000u, 0x45600000u, 0x45800000u, 0x45a00000u, 0x45c00000u, 0x45e00000u,
    0x46000000u, 0x46200000u, 0x46400000u, 0x46600000u, 0x46800000u, 0x46a00000u, 0x46c00000u,
    0x46e00000u, 0x47000000u, 0x47200000u, 0x47400000u, 0x47600000u, 0x7f800000u, 0x7fe00000u,
    0x7fc00000u, 0x7fe00000u, 0x80000000u, 0xb7800000u, 0xb8000000u, 0xb8400000u, 0xb8800000u,
    0xb8a00000u, 0xb8c00000u, 0xb8e00000u, 0xb9000000u, 0xb9200000u, 0xb9400000u, 0xb9600000u,
    0xb9800000u, 0xb9a00000u, 0xb9c00000u, 0xb9e00000u, 0xba000000u, 0xba200000u, 0xba400000u,
    0xba600000u, 0xba800000u, 0xbaa00000u, 0xbac00000u, 0xbae00000u, 0xbb000000u, 0xbb200000u,
    0xbb400000u, 0xbb600000u, 0xbb800000u, 0xbba00000u, 0xbbc00000u, 0xbbe00000u, 0xbc000000u,
    0xbc200000u, 0xbc400000u, 0xbc600000u, 0xbc800000u, 0xbca00000u, 0xbcc00000u, 0xbce00000u,
    0xbd000000u, 0xbd200000u, 0xbd400000u, 0xbd600000u, 0xbd800000u, 0xbda00000u, 0xbdc00000u,
    0xbde00000u, 0xbe000000u, 0xbe200000u, 0xbe400000u, 0xbe600000u, 0xbe800000u, 0xbea00000u,
    0xbec00000u, 0xbee00000u, 0xbf000000u, 0xbf200000u, 0xbf400000u, 0xbf600000u, 0xbf800000u,
    0xbfa00000u, 0xbfc00000u, 0xbfe00000u, 0xc0000000u, 0xc0200000u, 0xc0400000u, 0xc0600000u,
    0xc0800000u, 0xc0a00000u, 0xc0c00000u, 0xc0e00000u, 0xc1000000u, 0xc1200000u, 0xc1400000u,
    0xc1600000u, 0xc1800000u, 0xc1a00000u, 0xc1c00000u, 0xc1e00000u, 0xc2000000u, 0xc2200000u,
    0xc2400000u, 0xc2600000u, 0xc2800000u, 0xc2a00000u, 0xc2c00000u, 0xc2e00000u, 0xc3000000u,
    0xc3200000u, 0xc3400000u, 0xc3600000u, 0xc3800000u, 0xc3a00000u, 0xc3c00000u, 0xc3e00000u,
    0xc4000000u, 0xc4200000u, 0xc4400000u, 0xc4600000u, 0xc4800000u, 0xc4a00000u, 0xc4c00000u,
    0xc4e00000u, 0xc5000000u, 0xc5200000u, 0xc5400000u, 0xc5600000u, 0xc5800000u, 0xc5a00000u,
    0xc5c00000u, 0xc5e00000u, 0xc6000000u, 0xc6200000u, 0xc6400000u, 0xc6600000u, 0xc6800000u,
    0xc6a00000u, 0xc6c00000u, 0xc6e00000u, 0xc7000000u, 0xc7200000u, 0xc7400000u, 0xc7600000u,
    0xff800000u, 0xffe00000u, 0xffc00000u, 0xffe00000u,
};

// Decodes `text` as `stored`; the status, and the output as bytes (empty on an error).
tb::decode_result decode_text(const std::string& text, tb::element_format stored, bool widen,
                              std::vector<unsigned char>* out) {
    std::size_t elements = 0;
    tb::decode_result r = tb::decoded_elements(text.data(), text.size(), stored.type, &elements);
    if (r.status != tb::decode_status::ok) return r;
    const std::size_t bytes = elements * (widen ? 4 : tb::dtype_size(stored.type));
    std::vector<unsigned char> buffer(bytes + 16, 0x5a);
    r = tb::decode_base64(text.data(), text.size(), stored, widen, buffer.data() + 1, bytes);
    bool untouched = buffer[0] == 0x5a;  // nothing written outside the output
    for (std::size_t i = bytes + 1; i < buffer.size(); ++i) untouched &= buffer[i] == 0x5a;
    CHECK(untouched);
    out->assign(buffer.begin() + 1, buffer.begin() + 1 + static_cast<std::ptrdiff_t>(bytes));
    return r;
}

// The host-order bytes of float32 bits (how decode leaves them).
std::vector<unsigned char> host_f32(const std::vector<std::uint64_t>& bits) {
    return serialize(bits, 4, tb::host_byte_order);
}

void test_decode() {
    const tb::element_format bytes_format = le(tb::dtype::float8_e4m3fn);
    // Round trips of every length 0..300 and across the block boundary (4096 characters).
    std::mt19937_64 rng(17);
    for (std::size_t n : {0, 1, 2, 3, 4, 5, 299, 300, 3071, 3072, 3073, 3074, 6144, 6145, 9000}) {
        std::vector<unsigned char> data(n), got;
        for (auto& b : data) b = static_cast<unsigned char>(rng());
        const tb::decode_result r = decode_text(reference_base64(data), bytes_format, false, &got);
        CHECK(r.status == tb::decode_status::ok);
        CHECK(got == data);
    }
    for (std::size_t n = 0; n <= 300; ++n) {
        std::vector<unsigned char> data(n), got;
        for (auto& b : data) b = static_cast<unsigned char>(rng());
        CHECK(decode_text(reference_base64(data), bytes_format, false, &got).status ==
              tb::decode_status::ok);
        CHECK(got == data);
    }

    // What is refused, and where (see decode.cpp for how this compares with CPython 3.13).
    using st = tb::decode_status;
    struct refusal {
        const char* text;
        st status;
        std::size_t offset;
    };
    const refusal refusals[] = {
        {"abcd=", st::bad_padding, 4},      {"abcd==", st::bad_padding, 4},
        {"AAAA====", st::bad_padding, 4},   {"ab==AAAA", st::bad_padding, 2},
        {"ab=a", st::bad_padding, 2},       {"AA=A", st::bad_padding, 2},
        {"=AAA", st::bad_padding, 0},       {"a===", st::bad_padding, 1},
        {"abc==", st::bad_padding, 3},      {"ab===", st::bad_padding, 2},
        {"AAAA AAA", st::bad_character, 4}, {"AAA\n", st::bad_character, 3},
        {"AA!A", st::bad_character, 2},     {"AAAA-_AA", st::bad_character, 4},
        {"ab==\n", st::bad_character, 4},   {"AAAAA", st::bad_length, 5},
        {"ab=", st::bad_length, 3},         {"Zg", st::bad_length, 2},
        {"AB==", st::trailing_bits, 1},     {"ab==", st::trailing_bits, 1},
        {"AAB=", st::trailing_bits, 2},     {"AAAAAAB=", st::trailing_bits, 6},
        {"AA!A=", st::bad_character, 2},  // a bad character wins over the length
    };
    for (const refusal& r : refusals) {
        std::vector<unsigned char> got;
        const tb::decode_result result = decode_text(r.text, bytes_format, false, &got);
        if (result.status != r.status || result.offset != r.offset) {
            report_failure(__FILE__, __LINE__,
                           std::string("decode of \"") + r.text + "\": " + tb::to_string(result));
        } else {
            test_check::record_pass();
        }
    }
    {
        std::vector<unsigned char> got;
        CHECK(decode_text("AA==", bytes_format, false, &got).status == st::ok && got.size() == 1);
        CHECK(decode_text("AAE=", bytes_format, false, &got).status == st::ok && got.size() == 2);
        // A bad character in the middle of a long text, past the first block.
        std::string text(8192, 'A');
        text[5000] = '*';
        const tb::decode_result r = decode_text(text, bytes_format, false, &got);
        CHECK(r.status == st::bad_character && r.offset == 5000 && r.character == '*');
        CHECK_EQ_STR(tb::to_string(r),
                     "invalid base64: bad character '*' (0x2a) at offset 5000 (the alphabet is "
                     "A-Z, a-z, 0-9, '+' and '/', with '=' padding)",
                     "bad character message");
        text[5000] = '=';
        CHECK(decode_text(text, bytes_format, false, &got).status == st::bad_padding);
        CHECK(decode_text("AAAAAAA=", le(tb::dtype::float32), false, &got).status ==
              st::not_whole_values);
        std::size_t elements = 0;
        CHECK_EQ_STR(
            tb::to_string(tb::decoded_elements("AAAA", 4, tb::dtype::float16, &elements)),
            "decoded length 3 bytes is not a whole number of float16 values (2 bytes each)",
            "not whole values message");
        unsigned char small[4];
        CHECK(tb::decode_base64("AAAAAA==", 8, bytes_format, false, small, 3).status ==
              st::wrong_output_size);
        CHECK(tb::decode_base64("AAAAAA==", 8, bytes_format, false, small, 4).status == st::ok);
        CHECK(tb::decode_base64(nullptr, 0, le(tb::dtype::float32), true, nullptr, 0).status ==
              st::ok);
    }

    // decode_each: every task decoded as alone, whatever the threads; the lowest failure named.
    {
        const std::string good = "AACAPwAAAEA=";  // 1.0f, 2.0f
        std::vector<std::string> texts(40, good);
        texts[9] = "AACAPwAAAE!=";
        texts[30] = "AACA";
        for (unsigned threads : {1U, 3U, 8U}) {
            std::vector<float> out(texts.size() * 2, -1.0f);
            std::vector<tb::decode_task> tasks;
            for (std::size_t i = 0; i < texts.size(); ++i)
                tasks.push_back({texts[i].data(), texts[i].size(), le(tb::dtype::float32),
                                 out.data() + 2 * i, 8});
            CHECK(tb::decode_each(tasks.data(), tasks.size(), true, false, threads) == 9);
            CHECK(out[0] == 1.0f && out[1] == 2.0f && out[16] == 1.0f && out[17] == 2.0f);
            tasks[9] = {good.data(), good.size(), le(tb::dtype::float32), out.data() + 18, 8};
            tasks[30] = {good.data(), good.size(), le(tb::dtype::float32), out.data() + 60, 8};
            CHECK(tb::decode_each(tasks.data(), tasks.size(), true, false, threads) ==
                  tasks.size());
            CHECK(out[18] == 1.0f && out[19] == 2.0f && out[60] == 1.0f && out[61] == 2.0f);
            CHECK(tb::decode_each(tasks.data(), 0, true, false, threads) == 0);
            const unsigned char raw[8] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
            tasks[5] = {reinterpret_cast<const char*>(raw), 8, le(tb::dtype::float32), out.data(),
                        8};
            tasks[6] = {reinterpret_cast<const char*>(raw), 7, le(tb::dtype::float32), out.data(),
                        8};
            CHECK(tb::decode_each(tasks.data() + 5, 2, false, false, threads) == 1);
        }
    }

    // Byte orders and widening, against independent references; the output is in host order.
    std::vector<std::uint64_t> f32_bits, f16_all, f16_wide, bf16_sample, bf16_wide, codes, e4_wide,
        e5_wide;
    for (int i = 0; i < 1000; ++i) f32_bits.push_back(static_cast<std::uint32_t>(rng()));
    for (std::uint32_t h = 0; h < 65536; ++h) {
        f16_all.push_back(h);
        f16_wide.push_back(reference_f16_to_f32(static_cast<std::uint16_t>(h)));
        bf16_sample.push_back(h);
        bf16_wide.push_back(std::uint64_t{h} << 16);
    }
    for (std::uint32_t c = 0; c < 256; ++c) {
        codes.push_back(c);
        e4_wide.push_back(e4m3fn_goldens[c]);
        e5_wide.push_back(e5m2_goldens[c]);
    }
    for (tb::byte_order order : both_orders) {
        const std::string ctx = std::string("decode ") + name(order);
        std::vector<unsigned char> got;
        const auto text_of = [&](const std::vector<std::uint64_t>& v, std::size_t size) {
            return reference_base64(serialize(v, size, order));
        };
        CHECK(decode_text(text_of(f32_bits, 4), {tb::dtype::float32, order}, false, &got).status ==
              st::ok);
        CHECK(got == host_f32(f32_bits));
        CHECK(decode_text(text_of(f32_bits, 4), {tb::dtype::float32, order}, true, &got).status ==
              st::ok);
        CHECK(got == host_f32(f32_bits));
        CHECK(decode_text(text_of(f16_all, 2), {tb::dtype::float16, order}, false, &got).status ==
              st::ok);
        CHECK(got == serialize(f16_all, 2, tb::host_byte_order));
        CHECK(decode_text(text_of(f16_all, 2), {tb::dtype::float16, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(f16_wide)),
                     ctx + " float16 -> float32");
        CHECK(
            decode_text(text_of(bf16_sample, 2), {tb::dtype::bfloat16, order}, true, &got).status ==
            st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(bf16_wide)),
                     ctx + " bfloat16 -> float32");
        // float8: every code, repeated across the block boundary
        std::vector<std::uint64_t> many, e4_many, e5_many;
        for (int i = 0; i < 20; ++i) {
            many.insert(many.end(), codes.begin(), codes.end());
            e4_many.insert(e4_many.end(), e4_wide.begin(), e4_wide.end());
            e5_many.insert(e5_many.end(), e5_wide.begin(), e5_wide.end());
        }
        CHECK(decode_text(text_of(many, 1), {tb::dtype::float8_e4m3fn, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(e4_many)),
                     ctx + " float8_e4m3fn -> float32");
        CHECK(decode_text(text_of(many, 1), {tb::dtype::float8_e5m2, order}, true, &got).status ==
              st::ok);
        CHECK_EQ_STR(reference_base64(got), reference_base64(host_f32(e5_many)),
                     ctx + " float8_e5m2 -> float32");

        // convert_elements: the same conversions from raw bytes (vLLM's binary body).
        const auto raw = serialize(f16_all, 2, order);
        std::vector<unsigned char> wide(f16_all.size() * 4);
        CHECK(tb::convert_elements(raw.data(), raw.size(), {tb::dtype::float16, order}, true,
                                   wide.data(), wide.size())
                  .status == st::ok);
        CHECK(wide == host_f32(f16_wide));
        std::vector<unsigned char> same(raw.size());
        CHECK(tb::convert_elements(raw.data(), raw.size(), {tb::dtype::float16, order}, false,
                                   same.data(), same.size())
                  .status == st::ok);
        CHECK(same == serialize(f16_all, 2, tb::host_byte_order));
        const auto raw8 = serialize(many, 1, order);
        std::vector<unsigned char> wide8(raw8.size() * 4);
        CHECK(tb::convert_elements(raw8.data(), raw8.size(), {tb::dtype::float8_e4m3fn, order},
                                   true, wide8.data(), wide8.size())
                  .status == st::ok);
        CHECK(wide8 == host_f32(e4_many));
        CHECK(tb::convert_elements(raw.data(), 3, {tb::dtype::float16, order}, true, wide.data(), 4)
                  .status == st::not_whole_values);
        CHECK(tb::convert_elements(raw.data(), 4, {tb::dtype::float16, order}, true, wide.data(), 4)
                  .status == st::wrong_output_size);
    }
}

}  // namespace core_tests
