// The base64 group decoder's skeleton (the implementation's decode_base64_groups), written once
// and instantiated by each SIMD level: included inside the level's namespace by its
// base64_decoder.cpp, after its vocabulary.hpp and the two steps that are the level's own:
//
//   bool sextets_of(const char* text, text64* values)   64 characters (16 groups) to their 6-bit
//       values, in whatever order of bytes store_bytes takes them; false if any character is
//       outside the alphabet ('=' and non-ASCII bytes included)
//   void store_bytes(text64 values, unsigned char* out)  those 16 groups' 48 bytes, written at out
//       (exactly 48: the next block's are written next)
//
// The loop takes 64 characters at a time and gives the rest (fewer than 16 groups) to the scalar
// decoder, which the answer then is for them: exactly decode_base64_groups_scalar's bytes and
// verdict (body_reader_tests compares every level's decoder with it).
//
// Needs, included before: <cstddef>, <cstdint>, base64/alphabet.hpp, dispatch/implementation.hpp.

// Each ASCII character's 6-bit value, 0x80 for one outside the alphabet ('=' included): the
// levels' lookup128 table (a non-ASCII byte is caught by its own top bit).
constexpr byte_table128 make_sextet_table() {
    byte_table128 t{};
    for (int c = 0; c < 128; ++c) {
        t.bytes[c] = base64_values[static_cast<unsigned>(c)] == base64_invalid
                         ? 0x80
                         : base64_values[static_cast<unsigned>(c)];
    }
    return t;
}
constexpr byte_table128 kSextets = make_sextet_table();

inline bool decode_groups(const char* text, std::size_t groups, unsigned char* out) noexcept {
    std::size_t g = 0;
    for (; g + 16 <= groups; g += 16, text += 64, out += 48) {
        text64 values;
        if (!sextets_of(text, &values)) return false;
        store_bytes(values, out);
    }
    return g == groups || decode_base64_groups_scalar(text, groups - g, out);
}
