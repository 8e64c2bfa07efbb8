// The core's tests: the response body's data entries and layouts.
#include "core_tests.hpp"

namespace core_tests {

// ---- the response body's data entries ----------------------------------------------------

// The entries as json.dumps writes them, from each row's reference base64, keys in `keys` order.
std::string reference_data(const std::vector<std::string>& texts, std::size_t first_index,
                           std::size_t keys = 0) {
    std::string out;
    for (std::size_t r = 0; r < texts.size(); ++r) {
        if (r != 0) out += ',';
        const std::string index = "\"index\":" + std::to_string(first_index + r);
        const std::string object = "\"object\":\"embedding\"";
        out += "{" + (keys == 1 ? index + "," + object : object + "," + index) +
               ",\"embedding\":\"" + texts[r] + "\"}";
    }
    return out;
}

// Writes the entries of `rows` x `n` float32 values (row r, element i: bits r * 1000003 + i)
// converted to `target`, checking the size, the returned end and the bytes past it.
std::string write_data(std::size_t rows, std::size_t n, std::size_t first_index,
                       tb::element_format target, unsigned threads, std::vector<std::string>* texts,
                       std::size_t keys = 0) {
    std::vector<std::uint64_t> values(rows * n);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = (i / (n ? n : 1)) * 1000003u + i * 2654435761u;
    const std::vector<unsigned char> bytes = serialize(values, 4, tb::host_byte_order);
    const tb::strided_rows source{
        bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4, le(tb::dtype::float32)};
    std::size_t size = 0;
    CHECK(tb::base64_data_size(rows, n, target.type, first_index, &size));
    constexpr std::size_t slack = 64;
    std::vector<char> buffer(size + slack, '\x7f');
    char* end = tb::write_base64_data(
        {source.data, rows, n, source.row_stride, 4, {tb::dtype::float32, tb::host_byte_order}},
        target, first_index, buffer.data(), threads, *both_layouts[keys]);
    CHECK(end == buffer.data() + size);
    bool untouched = true;
    for (std::size_t i = size; i < buffer.size(); ++i) untouched &= buffer[i] == '\x7f';
    CHECK(untouched);
    if (texts != nullptr) {
        *texts = rows == 0
                     ? std::vector<std::string>{}
                     : encode_strided(bytes.data(), rows, n, static_cast<std::ptrdiff_t>(4 * n), 4,
                                      {tb::dtype::float32, tb::host_byte_order}, target);
    }
    return std::string(buffer.data(), size);
}

// The envelope of each layout, an extra taking a field's place, "data" refused; entries written
// with a leading comma concatenating to the whole.
// head + "|" + tail, as write_body_envelope writes them at body_envelope_sizes.
std::string envelope(const tb::response_layout& layout, const tb::json_member* members,
                     std::size_t count) {
    std::size_t head = 0, tail = 0;
    tb::body_envelope_sizes(layout, members, count, &head, &tail);
    std::string text(head + 1 + tail, '|');
    tb::write_body_envelope(layout, members, count, &text[0], &text[head + 1]);
    return text;
}

void test_body_layout() {
    for (std::size_t i = 0; i < tb::response_layout_count; ++i) {
        const tb::response_layout& layout = tb::response_layouts[i];
        CHECK(tb::find_response_layout(layout.name) == &layout);
        bool each_once = true;
        for (tb::entry_key key :
             {tb::entry_key::object, tb::entry_key::index, tb::entry_key::embedding}) {
            int seen = 0;
            for (tb::entry_key k : layout.entry_keys) seen += k == key;
            each_once &= seen == 1;
        }
        CHECK(each_once);
        int data_fields = 0;
        for (std::size_t f = 0; f < layout.envelope_field_count; ++f)
            data_fields += layout.envelope_fields[f] == "data";
        CHECK(data_fields == 1);
    }
    CHECK(tb::find_response_layout("sglang ") == nullptr);
    const tb::response_layout& openai = *tb::find_response_layout("openai");
    const tb::response_layout& vllm = *tb::find_response_layout("vllm");
    const tb::json_member openai_members[] = {
        {"\"object\"", "\"list\""}, {"\"model\"", "\"m\""}, {"\"usage\"", "{\"prompt_tokens\":1}"}};
    CHECK_EQ_STR(envelope(openai, openai_members, 3),
                 "{\"object\":\"list\",\"data\":[|],\"model\":\"m\","
                 "\"usage\":{\"prompt_tokens\":1}}",
                 "openai");
    const tb::json_member with_extras[] = {openai_members[0],      openai_members[1],
                                           openai_members[2],      {"\"id\"", "7"},
                                           {"\"model\"", "\"n\""}, {"\"x\"", "[]"}};
    CHECK_EQ_STR(envelope(openai, with_extras, 6),
                 "{\"object\":\"list\",\"data\":[|],\"model\":\"n\","
                 "\"usage\":{\"prompt_tokens\":1},"
                 "\"id\":7,\"x\":[]}",
                 "openai with extras, one of them a field");
    // vLLM's fields given in another order still go to their places; an unknown one goes last.
    const tb::json_member vllm_members[] = {{"\"model\"", "\"m\""},     {"\"x\"", "1"},
                                            {"\"usage\"", "{}"},        {"\"created\"", "12"},
                                            {"\"object\"", "\"list\""}, {"\"id\"", "\"embd-1\""}};
    CHECK_EQ_STR(envelope(vllm, vllm_members, 6),
                 "{\"id\":\"embd-1\",\"object\":\"list\",\"created\":12,\"model\":\"m\","
                 "\"data\":[|],"
                 "\"usage\":{},\"x\":1}",
                 "vllm");
    // A field without a member is left out; with no members at all, "data" alone.
    CHECK_EQ_STR(envelope(vllm, vllm_members, 1), "{\"model\":\"m\",\"data\":[|]}",
                 "vllm, model alone");
    CHECK_EQ_STR(envelope(openai, nullptr, 0), "{\"data\":[|]}", "no members");
    const tb::json_member data_member[] = {openai_members[0], {"\"data\"", "[]"}};
    bool threw = false;
    try {
        envelope(openai, data_member, 2);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw);

    // Rows [0, 2) and [2, 5), the second with its leading comma, concatenate to rows [0, 5).
    std::vector<float> values(5 * 3);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i);
    const tb::strided_rows all{
        values.data(), 5, 3, 12, 4, {tb::dtype::float32, tb::host_byte_order}};
    for (const tb::response_layout* layout : both_layouts) {
        std::size_t whole_size = 0, first_size = 0, rest_size = 0;
        CHECK(tb::base64_data_size(5, 3, tb::dtype::float32, 0, &whole_size));
        CHECK(tb::base64_data_size(2, 3, tb::dtype::float32, 0, &first_size));
        CHECK(tb::base64_data_size(3, 3, tb::dtype::float32, 2, &rest_size, true));
        CHECK(first_size + rest_size == whole_size);
        std::string whole(whole_size, '\0'), parts(whole_size, '\0');
        tb::write_base64_data(all, le(tb::dtype::float32), 0, &whole[0], 1, *layout);
        char* end = tb::write_base64_data(tb::slice_rows(all, 0, 2), le(tb::dtype::float32), 0,
                                          &parts[0], 1, *layout);
        end = tb::write_base64_data(tb::slice_rows(all, 2, 3), le(tb::dtype::float32), 2, end, 1,
                                    *layout, true);
        CHECK(end == parts.data() + whole_size);
        CHECK_EQ_STR(parts, whole, "base64 entries with a leading comma");
        std::size_t bound = 0;
        CHECK(tb::float_data_bound(5, 3, tb::dtype::float32, tb::float_format::repr, 0, &bound));
        std::string float_whole(bound, '\0'), float_parts(2 * bound, '\0');
        char* whole_end = nullptr;
        char* parts_end = nullptr;
        CHECK(tb::write_float_data(all, tb::float_format::repr, 0, &float_whole[0], &whole_end, 1,
                                   *layout)
                  .finite);
        float_whole.resize(static_cast<std::size_t>(whole_end - float_whole.data()));
        CHECK(tb::write_float_data(tb::slice_rows(all, 0, 2), tb::float_format::repr, 0,
                                   &float_parts[0], &parts_end, 1, *layout)
                  .finite);
        CHECK(tb::write_float_data(tb::slice_rows(all, 2, 3), tb::float_format::repr, 2, parts_end,
                                   &parts_end, 2, *layout, true)
                  .finite);
        float_parts.resize(static_cast<std::size_t>(parts_end - float_parts.data()));
        CHECK_EQ_STR(float_parts, float_whole, "float entries with a leading comma");
    }
}

void test_response_body() {
    const tb::element_format f32 = le(tb::dtype::float32);
    std::vector<std::string> texts;
    // Indices of every digit count, and runs crossing each power of ten.
    std::vector<std::size_t> firsts = {0, 1, 7, 8, 9, 10, 98, 99, 100};
    for (std::size_t power = 10; power <= SIZE_MAX / 10; power *= 10) {
        firsts.push_back(power - 2);
        firsts.push_back(power);
    }
    firsts.push_back(SIZE_MAX / 10 * 10 - 1);  // crossing into 20 digits on 64-bit hosts
    firsts.push_back(SIZE_MAX - 4);            // the last index is SIZE_MAX
    for (std::size_t first : firsts) {
        for (std::size_t n :
             {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
            for (std::size_t keys = 0; keys < 2; ++keys) {
                const std::string got = write_data(5, n, first, f32, 1, &texts, keys);
                CHECK_EQ_STR(got, reference_data(texts, first, keys),
                             "data entries from index " + std::to_string(first));
            }
        }
    }
    // No rows: nothing at all; empty rows: empty strings.
    CHECK_EQ_STR(write_data(0, 384, 5, f32, 1, &texts), "", "no rows");
    CHECK_EQ_STR(write_data(3, 0, 0, f32, 1, &texts),
                 "{\"object\":\"embedding\",\"index\":0,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":1,\"embedding\":\"\"},"
                 "{\"object\":\"embedding\",\"index\":2,\"embedding\":\"\"}",
                 "empty rows");
    CHECK_EQ_STR(write_data(2, 0, 9, f32, 1, &texts, 1),
                 "{\"index\":9,\"object\":\"embedding\",\"embedding\":\"\"},"
                 "{\"index\":10,\"object\":\"embedding\",\"embedding\":\"\"}",
                 "empty rows, vLLM's key order");
    CHECK_EQ_STR(write_data(1, 1, 0, f32, 1, &texts), reference_data(texts, 0), "one value");
    // Conversions and byte orders, across the 768-element block boundary.
    for (tb::dtype to : {tb::dtype::float32, tb::dtype::float16, tb::dtype::bfloat16,
                         tb::dtype::float8_e4m3fn, tb::dtype::float8_e5m2}) {
        for (tb::byte_order order : both_orders) {
            for (std::size_t keys = 0; keys < 2; ++keys) {
                const std::string got = write_data(3, 1000, 41, {to, order}, 1, &texts, keys);
                CHECK_EQ_STR(got, reference_data(texts, 41, keys),
                             std::string("data entries as ") + name(to) + " " + name(order));
            }
        }
    }
    // Threads: 64 rows of 3072 float32 is 1 MiB of text, enough to be split.
    for (unsigned threads : {2u, 3u, 8u}) {
        CHECK_EQ_STR(write_data(64, 3072, 0, f32, threads, nullptr, 1),
                     write_data(64, 3072, 0, f32, 1, nullptr, 1),
                     "threads=" + std::to_string(threads));
    }
    // Exact sizes, and overflow refused.
    std::size_t size = 0;
    CHECK(tb::base64_data_size(0, SIZE_MAX, tb::dtype::float64, SIZE_MAX, &size) && size == 0);
    CHECK(tb::base64_data_size(1, 0, tb::dtype::float32, 0, &size) && size == 47);
    CHECK(tb::base64_data_size(2, 1, tb::dtype::float32, 9, &size) &&
          size == 2 * (46 + 8) + 1 + 2 + 1);  // wrappers, digits of 9 and 10, a comma
    CHECK(tb::base64_data_size(1, 0, tb::dtype::float32, SIZE_MAX, &size));
    size = 12345;
    CHECK(!tb::base64_data_size(2, 0, tb::dtype::float32, SIZE_MAX, &size) && size == 12345);
    CHECK(!tb::base64_data_size(1, SIZE_MAX / 2, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(SIZE_MAX / 4, 1, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(SIZE_MAX / 60, 0, tb::dtype::float32, 0, &size));
    CHECK(!tb::base64_data_size(2, (SIZE_MAX / 4 * 3 - 100) / 4, tb::dtype::float32, 0, &size));
    // A conversion the core cannot make is refused before anything is written.
    const unsigned char zeros[8] = {};
    char out[8] = {'\x7f'};
    bool threw = false;
    try {
        tb::write_base64_data({zeros, 1, 1, 8, 8, le(tb::dtype::float32)}, le(tb::dtype::float64),
                              0, out);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    CHECK(threw && out[0] == '\x7f');
    threw = false;
    try {  // 2 rows from index SIZE_MAX: the last index does not exist
        tb::write_base64_data({zeros, 2, 0, 0, 4, le(tb::dtype::float32)}, le(tb::dtype::float32),
                              SIZE_MAX, out);
    } catch (const std::length_error&) {
        threw = true;
    }
    CHECK(threw && out[0] == '\x7f');
}

}  // namespace core_tests
