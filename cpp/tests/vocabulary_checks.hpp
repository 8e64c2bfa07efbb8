// Every operation of a level's vector vocabulary (levels/vocabulary.hpp) against a scalar model of
// its contract, on random inputs and the edges each names. Included inside a level's namespace by
// that level's vocabulary_tests_<level>.cpp, which is compiled with the level's flags (as the
// generic kernels are); vocabulary_tests.cpp runs each level this CPU has.
//
// Needs, before the include: <cstdint>, <cstring>, <random>, the level's vocabulary.hpp and
// check.hpp.

// The level's checks; returns the number of failed comparisons (each failure also reported).
inline long check_vocabulary(const char* level) {
    long failed = 0;
    auto expect = [&](bool ok, const char* what, int line) {
        if (ok) {
            test_check::record_pass();
        } else {
            ++failed;
            test_check::report_failure(__FILE__, line, std::string(level) + ": " + what);
        }
    };
#define EXPECT(ok, what) expect((ok), (what), __LINE__)
    std::mt19937_64 rng(0x5eed);
    auto random_bytes = [&](unsigned char* p, int n, unsigned mod) {
        for (int i = 0; i < n; ++i) p[i] = static_cast<unsigned char>(rng() % mod);
    };
    auto bytes_of = [](text64 t, unsigned char* out) { store(out, t); };
    for (int round = 0; round < 2000; ++round) {
        alignas(64) unsigned char a[64], b[64], got[64], want[64];
        // Bytes near the classes the kernels look for: digits, '.', '-', ',', high bytes.
        const unsigned mod = round % 3 == 0 ? 256 : 64;
        random_bytes(a, 64, mod);
        random_bytes(b, 64, mod);
        if (round % 3 == 1) {
            for (int i = 0; i < 64; ++i) a[i] = static_cast<unsigned char>(a[i] % 16 + '*');
        }
        const text64 ta = load(a), tb = load(b);

        bytes_of(ta, got);
        EXPECT(std::memcmp(got, a, 64) == 0, "load/store");
        bytes_of(load_pieces(b + 48, a, b, a + 32), got);
        EXPECT(std::memcmp(got, b + 48, 16) == 0 && std::memcmp(got + 16, a, 16) == 0 &&
                   std::memcmp(got + 32, b, 16) == 0 && std::memcmp(got + 48, a + 32, 16) == 0,
               "load_pieces");
        bytes_of(load_halves(b + 32, a + 5), got);
        EXPECT(std::memcmp(got, b + 32, 32) == 0 && std::memcmp(got + 32, a + 5, 32) == 0,
               "load_halves");
        bytes_of(splat8(0x2c), got);
        EXPECT(std::all_of(got, got + 64, [](unsigned char c) { return c == 0x2c; }), "splat8");

        auto bytewise = [&](text64 t, unsigned char (*f)(unsigned char, unsigned char),
                            const char* what) {
            bytes_of(t, got);
            for (int i = 0; i < 64; ++i) want[i] = f(a[i], b[i]);
            EXPECT(std::memcmp(got, want, 64) == 0, what);
        };
        using u8 = unsigned char;
        bytewise(
            add8(ta, tb), [](u8 x, u8 y) { return static_cast<u8>(x + y); }, "add8");
        bytewise(
            sub8(ta, tb), [](u8 x, u8 y) { return static_cast<u8>(x - y); }, "sub8");
        bytewise(
            ta & tb, [](u8 x, u8 y) { return static_cast<u8>(x & y); }, "&");
        bytewise(
            ta | tb, [](u8 x, u8 y) { return static_cast<u8>(x | y); }, "|");
        bytewise(
            ta ^ tb, [](u8 x, u8 y) { return static_cast<u8>(x ^ y); }, "^");
        bytewise(
            and_not(ta, tb), [](u8 x, u8 y) { return static_cast<u8>(x & ~y); }, "and_not");

        const unsigned char c = a[rng() % 64];
        std::uint64_t eq = 0, le = 0, high = 0;
        for (int i = 0; i < 64; ++i) {
            eq |= std::uint64_t{a[i] == c} << i;
            le |= std::uint64_t{a[i] <= c} << i;
            high |= std::uint64_t{a[i] >= 0x80} << i;
        }
        EXPECT(eq_bits(ta, c) == eq, "eq_bits");
        {
            const std::uint64_t word = rng();
            bytes_of(splat_words(word), got);
            bool words_ok = true;
            for (int i = 0; i < 64; ++i)
                words_ok = words_ok && got[i] == (word >> (8 * (i % 8)) & 0xff);
            EXPECT(words_ok, "splat_words");
            bytes_of(less8(ta, tb), got);
            bool less_ok = true, greater_ok = true;
            for (int i = 0; i < 64; ++i) less_ok = less_ok && got[i] == (a[i] < b[i] ? 0xff : 0);
            bytes_of(greater8(ta, tb), got);
            for (int i = 0; i < 64; ++i)
                greater_ok = greater_ok && got[i] == (a[i] > b[i] ? 0xff : 0);
            EXPECT(less_ok, "less8");
            EXPECT(greater_ok, "greater8");
        }
        EXPECT(le_bits(ta, c) == le, "le_bits");
        EXPECT(high_bits(ta) == high, "high_bits");
        EXPECT(any_high_bit(ta) == (high != 0), "any_high_bit");
        alignas(64) unsigned char one_high[64] = {};
        one_high[rng() % 64] = static_cast<u8>(0x80 | rng());
        EXPECT(any_high_bit(load(one_high)), "any_high_bit (one byte)");
        EXPECT(!any_high_bit(splat8(0x7f)), "any_high_bit (none)");

        static const byte_table128 table128 = [] {
            byte_table128 t{};
            for (int i = 0; i < 128; ++i) t.bytes[i] = static_cast<u8>(i * 37 + 11);
            return t;
        }();
        alignas(64) unsigned char ascii[64];
        for (int i = 0; i < 64; ++i) {
            ascii[i] = static_cast<u8>(rng() % 128);
            want[i] = table128.bytes[ascii[i]];
        }
        bytes_of(lookup128(table128, load(ascii)), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "lookup128");

        // shuffle16: indices 0..15, or with the top bit set.
        alignas(64) unsigned char index[64];
        for (int i = 0; i < 64; ++i) {
            index[i] = static_cast<u8>(rng() % 4 == 0 ? 0x80 | rng() % 128 : rng() % 16);
            want[i] = index[i] & 0x80 ? 0 : a[16 * (i / 16) + index[i]];
        }
        bytes_of(shuffle16(ta, load(index)), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "shuffle16");
        for (int i = 0; i < 64; ++i) {
            index[i] = static_cast<u8>(rng() % 64);
            want[i] = a[index[i]];
        }
        bytes_of(permute64(ta, load(index)), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "permute64");

        const std::uint64_t bits = rng();
        alignas(64) unsigned char mask[64];
        for (int i = 0; i < 64; ++i) {
            mask[i] = bits >> i & 1 ? 0xff : 0;
            want[i] = mask[i] ? a[i] : b[i];
        }
        bytes_of(blend(load(mask), ta, tb), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "blend");
        bytes_of(bytes_of_bits(bits), got);
        EXPECT(std::memcmp(got, mask, 64) == 0, "bytes_of_bits");

        const unsigned k0 = static_cast<unsigned>(rng() % 33),
                       k1 = static_cast<unsigned>(rng() % 33);
        for (int i = 0; i < 64; ++i) want[i] = (i < 32 ? i < int(k0) : i - 32 < int(k1)) ? 0xff : 0;
        bytes_of(leading_ones_halves(k0, k1), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "leading_ones_halves");

        for (int i = 0; i < 64; ++i)
            want[i] = (i < 32 ? i < int(k0) : i - 32 < int(k1)) ? a[i] : b[i];
        bytes_of(blend_below(ta, tb, k0, k1), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "blend_below");
        for (int i = 0; i < 64; ++i) want[i] = (i < 32 ? i < int(k0) : i - 32 < int(k1)) ? 0 : a[i];
        bytes_of(zero_below(ta, k0, k1), got);
        EXPECT(std::memcmp(got, want, 64) == 0, "zero_below");

        alignas(64) unsigned char digits[64];
        random_bytes(digits, 64, 10);
        alignas(64) std::uint64_t words[8];
        store(words, digit_words(load(digits)));
        bool words_ok = true;
        for (int w = 0; w < 8; ++w) {
            std::uint64_t v = 0;
            for (int j = 0; j < 8; ++j) v = v * 10 + digits[8 * w + j];
            words_ok = words_ok && words[w] == v;
        }
        EXPECT(words_ok, "digit_words");

        alignas(64) std::uint64_t raw[8], lane[kLanes64];
        std::memcpy(raw, a, 64);
        store64(lane, even_words(ta));
        bool even_ok = true;
        for (int i = 0; i < 4; ++i) even_ok = even_ok && lane[i] == raw[2 * i];
        EXPECT(even_ok, "even_words");
        store64(lane, odd_words(ta));
        bool odd_ok = true;
        for (int i = 0; i < 4; ++i) odd_ok = odd_ok && lane[i] == raw[2 * i + 1];
        EXPECT(odd_ok, "odd_words");
        {
            constexpr int texts = kLanes64 / 2;
            text64 halves[texts];
            alignas(64) std::uint64_t words_of[texts][8];
            for (int t = 0; t < texts; ++t) {
                for (int w = 0; w < 8; ++w) words_of[t][w] = rng();
                halves[t] = load(words_of[t]);
            }
            u64x columns[4];
            half_columns(halves, columns);
            bool columns_ok = true;
            for (int i = 0; i < 4; ++i) {
                store64(lane, columns[i]);
                for (int n = 0; n < kLanes64; ++n) {
                    columns_ok = columns_ok && lane[n] == words_of[n / 2][4 * (n % 2) + i];
                }
            }
            EXPECT(columns_ok, "half_columns");
        }

        alignas(64) char packed[64 + 64];
        const std::size_t kept = compress_store(packed, ta, bits);
        std::size_t n = 0;
        bool compress_ok = true;
        for (int i = 0; i < 64; ++i) {
            if (bits >> i & 1) compress_ok = compress_ok && static_cast<u8>(packed[n++]) == a[i];
        }
        EXPECT(compress_ok && kept == n, "compress_store");
    }

    // ---- u64x and its neighbours ----
    constexpr int L = kLanes64;
    auto random_u64 = [&]() {
        switch (rng() % 4) {
            case 0: return rng() >> (rng() % 64);
            case 1: return rng() % 1000;
            case 2: return ~std::uint64_t{0} - rng() % 3;
            default: return rng();
        }
    };
    alignas(64) static const std::uint64_t table_u64[24] = {
        1,   2,   3,   5,    8,    13,   21,   34,    55,    89,    144,   233,
        377, 610, 987, 1597, 2584, 4181, 6765, 10946, 17711, 28657, 46368, 0xfedcba9876543210ull};
    alignas(64) static const double table_f64[24] = {
        0.5,  1.5,  2.5,  3.5,  4.5,  5.5,  6.5,  7.5,  8.5,  9.5,  10.5, 11.5,
        12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, -1.0};
    for (int round = 0; round < 2000; ++round) {
        std::uint64_t a[L], b[L], got[L], hi[L], lo[L];
        for (int i = 0; i < L; ++i) {
            a[i] = random_u64();
            b[i] = rng() % 8 == 0 ? a[i] : random_u64();
        }
        const u64x xa = load64(a), xb = load64(b);
        auto lanes = [&](u64x x, std::uint64_t (*f)(std::uint64_t, std::uint64_t),
                         const char* what) {
            store64(got, x);
            bool ok = true;
            for (int i = 0; i < L; ++i) ok = ok && got[i] == f(a[i], b[i]);
            EXPECT(ok, what);
        };
        using u64 = std::uint64_t;
        lanes(
            xa, [](u64 x, u64) { return x; }, "load64/store64");
        store64(got, splat64(a[0]));
        EXPECT(std::all_of(got, got + L, [&](u64 v) { return v == a[0]; }), "splat64");
        lanes(
            xa + xb, [](u64 x, u64 y) { return x + y; }, "+");
        lanes(
            xa - xb, [](u64 x, u64 y) { return x - y; }, "-");
        lanes(
            xa & xb, [](u64 x, u64 y) { return x & y; }, "&");
        lanes(
            xa | xb, [](u64 x, u64 y) { return x | y; }, "|");
        lanes(
            xa ^ xb, [](u64 x, u64 y) { return x ^ y; }, "^");
        lanes(
            shift_left<13>(xa), [](u64 x, u64) { return x << 13; }, "shift_left");
        lanes(
            shift_right<32>(xa), [](u64 x, u64) { return x >> 32; }, "shift_right");
        lanes(
            shift_left<63>(xa), [](u64 x, u64) { return x << 63; }, "shift_left 63");
        lanes(
            shift_right<1>(xa), [](u64 x, u64) { return x >> 1; }, "shift_right 1");
        std::uint64_t counts[L];
        for (int i = 0; i < L; ++i) counts[i] = rng() % 66;
        store64(got, shift_left_var(xa, load64(counts)));
        bool shift_ok = true;
        for (int i = 0; i < L; ++i)
            shift_ok = shift_ok && got[i] == (counts[i] >= 64 ? 0 : a[i] << counts[i]);
        EXPECT(shift_ok, "shift_left_var");
        store64(got, shift_right_var(xa, load64(counts)));
        shift_ok = true;
        for (int i = 0; i < L; ++i)
            shift_ok = shift_ok && got[i] == (counts[i] >= 64 ? 0 : a[i] >> counts[i]);
        EXPECT(shift_ok, "shift_right_var");
        lanes(
            mul_low32(xa, xb), [](u64 x, u64 y) { return (x & 0xffffffffu) * (y & 0xffffffffu); },
            "mul_low32");
        lanes(
            mul_low(xa, xb), [](u64 x, u64 y) { return x * y; }, "mul_low");
        auto high_of = [](u64 x, u64 y) {
            const u64 x0 = x & 0xffffffffu, x1 = x >> 32, y0 = y & 0xffffffffu, y1 = y >> 32;
            const u64 cross = (x0 * y0 >> 32) + (x1 * y0 & 0xffffffffu) + x0 * y1;
            return x1 * y1 + (x1 * y0 >> 32) + (cross >> 32);
        };
        lanes(mul_high(xa, xb), high_of, "mul_high");
        u64x xh, xl;
        mul_wide(xa, xb, &xh, &xl);
        store64(hi, xh);
        store64(lo, xl);
        bool wide_ok = true;
        for (int i = 0; i < L; ++i)
            wide_ok = wide_ok && hi[i] == high_of(a[i], b[i]) && lo[i] == a[i] * b[i];
        EXPECT(wide_ok, "mul_wide");

        unsigned want_eq = 0, want_greater = 0;
        for (int i = 0; i < L; ++i) {
            want_eq |= unsigned{a[i] == b[i]} << i;
            want_greater |= unsigned{a[i] > b[i]} << i;
        }
        EXPECT(mask_bits(eq(xa, xb)) == want_eq, "eq");
        EXPECT(mask_bits(greater(xa, xb)) == want_greater, "greater");
        EXPECT(mask_bits(eq(xa, xb) & greater(xa, xb)) == 0, "lane_mask &");
        EXPECT(mask_bits(eq(xa, xb) | greater(xa, xb)) == (want_eq | want_greater), "lane_mask |");
        EXPECT(mask_bits(and_not(greater(xa, xb), eq(xa, xb))) == want_greater,
               "lane_mask and_not");
        EXPECT(mask_bits(eq(xa, xb) ^ greater(xa, xb)) == (want_eq ^ want_greater), "lane_mask ^");
        const unsigned m = static_cast<unsigned>(rng() % (1u << L));
        EXPECT(mask_bits(mask_of_bits(m)) == m, "mask_of_bits");
        {
            alignas(64) unsigned char pieces[64];
            bytes_of(pieces_of(mask_of_bits(m)), pieces);
            bool pieces_ok = true;
            for (int i = 0; i < 64; ++i)
                pieces_ok = pieces_ok && pieces[i] == (m >> (i / 16) & 1 ? 0xff : 0);
            EXPECT(pieces_ok, "pieces_of");
        }
        store64(got, select(mask_of_bits(m), xa, xb));
        bool select_ok = true;
        for (int i = 0; i < L; ++i) select_ok = select_ok && got[i] == (m >> i & 1 ? a[i] : b[i]);
        EXPECT(select_ok, "select");

        {
            const std::uint64_t packed = rng();
            store64(got, widen_bytes(packed));
            bool widen_ok = true;
            for (int i = 0; i < L; ++i) widen_ok = widen_ok && got[i] == (packed >> (8 * i) & 0xff);
            EXPECT(widen_ok, "widen_bytes");
        }
        std::uint64_t index[L];
        for (int i = 0; i < L; ++i) index[i] = rng() % 24;
        store64(got, lookup24(table_u64, load64(index)));
        bool lookup_ok = true;
        for (int i = 0; i < L; ++i) lookup_ok = lookup_ok && got[i] == table_u64[index[i]];
        EXPECT(lookup_ok, "lookup24 (uint64_t)");
        double d[L];
        store64(d, lookup24(table_f64, load64(index)), L);
        bool lookup_f_ok = true;
        for (int i = 0; i < L; ++i) lookup_f_ok = lookup_f_ok && d[i] == table_f64[index[i]];
        EXPECT(lookup_f_ok, "lookup24 (double)");

        store64(d, to_f64(xa), L);
        bool convert_ok = true;
        for (int i = 0; i < L; ++i) convert_ok = convert_ok && d[i] == static_cast<double>(a[i]);
        EXPECT(convert_ok, "to_f64");
        std::uint64_t zero_lanes[L];
        for (int i = 0; i < L; ++i) zero_lanes[i] = rng() % 4 == 0 ? 0 : a[i];
        store64(got, leading_zeros(load64(zero_lanes)));
        bool zeros_ok = true;
        for (int i = 0; i < L; ++i) {
            int z = 0;
            while (z < 64 && !(zero_lanes[i] >> (63 - z) & 1)) ++z;
            zeros_ok = zeros_ok && got[i] == static_cast<u64>(z);
        }
        EXPECT(zeros_ok, "leading_zeros");

        // Doubles: division and narrowing, correctly rounded; the bits kept by as_bits/as_f64.
        double x[L], y[L], q[L];
        for (int i = 0; i < L; ++i) {
            std::uint64_t bits = (rng() >> 2) | 0x3000000000000000ull;
            std::memcpy(&x[i], &bits, 8);
            y[i] = static_cast<double>(rng() % 1000000 + 1) * 1e-3;
        }
        std::uint64_t xb_bits[L], yb_bits[L];
        std::memcpy(xb_bits, x, sizeof x);
        std::memcpy(yb_bits, y, sizeof y);
        store64(q, as_f64(load64(xb_bits)) / as_f64(load64(yb_bits)), L);
        bool div_ok = true;
        for (int i = 0; i < L; ++i) div_ok = div_ok && q[i] == x[i] / y[i];
        EXPECT(div_ok, "f64x /");
        {
            double signed_x[L];
            store64(signed_x, with_signs(as_f64(load64(xb_bits)), m), L);
            bool signs_ok = true;
            for (int i = 0; i < L; ++i)
                signs_ok = signs_ok && signed_x[i] == (m >> i & 1 ? -x[i] : x[i]);
            EXPECT(signs_ok, "with_signs");
        }
        store64(got, as_bits(as_f64(load64(xb_bits))));
        EXPECT(std::memcmp(got, xb_bits, sizeof got) == 0, "as_bits / as_f64");
        float f[L + 1];
        const std::size_t n = static_cast<std::size_t>(rng() % (L + 1));
        f[n] = -7.0f;
        store32(f, narrow(as_f64(load64(xb_bits))), n);
        bool narrow_ok = f[n] == -7.0f || n == L;
        for (std::size_t i = 0; i < n; ++i)
            narrow_ok = narrow_ok && f[i] == static_cast<float>(x[i]);
        EXPECT(narrow_ok, "narrow / store32");
        double partial[L + 1];
        partial[n] = -7.0;
        store64(partial, as_f64(load64(xb_bits)), n);
        bool partial_ok = partial[n] == -7.0 || n == L;
        for (std::size_t i = 0; i < n; ++i) partial_ok = partial_ok && partial[i] == x[i];
        EXPECT(partial_ok, "store64 (n lanes)");
        double selected[L];
        store64(selected, select(mask_of_bits(m), as_f64(load64(xb_bits)), as_f64(load64(yb_bits))),
                L);
        bool select_f_ok = true;
        for (int i = 0; i < L; ++i)
            select_f_ok = select_f_ok && selected[i] == (m >> i & 1 ? x[i] : y[i]);
        EXPECT(select_f_ok, "select (f64x)");

        // u32x.
        constexpr int L32 = 2 * L;
        std::uint32_t c32[L32], d32[L32], r32[L32];
        for (int i = 0; i < L32; ++i) {
            c32[i] = static_cast<std::uint32_t>(random_u64());
            d32[i] = rng() % 8 == 0 ? c32[i] : static_cast<std::uint32_t>(rng());
        }
        const u32x ca = load32(c32), cb = load32(d32);
        auto lanes32 = [&](u32x v, std::uint32_t (*fn)(std::uint32_t, std::uint32_t),
                           const char* what) {
            store32x(r32, v);
            bool ok = true;
            for (int i = 0; i < L32; ++i) ok = ok && r32[i] == fn(c32[i], d32[i]);
            EXPECT(ok, what);
        };
        using u32 = std::uint32_t;
        lanes32(
            splat32(7), [](u32, u32) { return u32{7}; }, "splat32");
        lanes32(
            ca + cb, [](u32 s, u32 t) { return s + t; }, "u32x +");
        lanes32(
            ca - cb, [](u32 s, u32 t) { return s - t; }, "u32x -");
        lanes32(
            ca & cb, [](u32 s, u32 t) { return s & t; }, "u32x &");
        lanes32(
            ca | cb, [](u32 s, u32 t) { return s | t; }, "u32x |");
        lanes32(
            shift_left32<7>(ca), [](u32 s, u32) { return s << 7; }, "shift_left32");
        lanes32(
            shift_right32<9>(ca), [](u32 s, u32) { return s >> 9; }, "shift_right32");
        lanes32(
            mul_lo32(ca, cb), [](u32 s, u32 t) { return s * t; }, "mul_lo32");
        lanes32(
            ca ^ cb, [](u32 s, u32 t) { return s ^ t; }, "u32x ^");
        lanes32(
            and_not(ca, cb), [](u32 s, u32 t) { return s & ~t; }, "u32x and_not");
        lanes32(
            shift_right_signed32<5>(ca),
            [](u32 s, u32) { return static_cast<u32>(static_cast<std::int32_t>(s) >> 5); },
            "shift_right_signed32");
        lanes32(
            mul_high32(ca, cb),
            [](u32 s, u32 t) { return static_cast<u32>((std::uint64_t{s} * t) >> 32); },
            "mul_high32");
        lanes32(
            mul_lo16(ca, cb),
            [](u32 s, u32 t) {
                return static_cast<u32>(((s & 0xffffu) * (t & 0xffffu)) & 0xffffu) |
                       ((((s >> 16) * (t >> 16)) & 0xffffu) << 16);
            },
            "mul_lo16");
        lanes32(
            shift_right16<3>(ca),
            [](u32 s, u32) { return ((s & 0xffffu) >> 3) | ((s >> 19) << 16); }, "shift_right16");
        // Masks: every combination of two masks, each lane's truth from the comparisons.
        auto lanes_of_mask = [&](mask32 m, bool (*fn)(u32, u32), const char* what) {
            store32x(r32, select32(m, splat32(1), splat32(0)));
            bool ok = true;
            for (int i = 0; i < L32; ++i) ok = ok && r32[i] == (fn(c32[i], d32[i]) ? 1u : 0u);
            const unsigned bits = mask_bits32(m);
            for (int i = 0; i < L32; ++i) ok = ok && ((bits >> i) & 1) == r32[i];
            ok = ok && (bits >> L32) == 0;
            ok = ok && any32(m) == (bits != 0) && all32(m) == (bits == (1u << L32) - 1);
            store32x(r32, where32(m, ca));
            for (int i = 0; i < L32; ++i) ok = ok && r32[i] == (fn(c32[i], d32[i]) ? c32[i] : 0u);
            EXPECT(ok, what);
        };
        lanes_of_mask(
            eq32(ca, cb), [](u32 s, u32 t) { return s == t; }, "eq32");
        lanes_of_mask(
            eq32(ca, ca), [](u32, u32) { return true; }, "eq32 (every lane)");
        lanes_of_mask(
            greater32(ca, cb), [](u32 s, u32 t) { return s > t; }, "greater32");
        lanes_of_mask(
            greater_signed32(ca, cb),
            [](u32 s, u32 t) {
                return static_cast<std::int32_t>(s) > static_cast<std::int32_t>(t);
            },
            "greater_signed32");
        const mask32 m1 = greater32(ca, cb), m2 = greater32(ca & splat32(0xff), splat32(0x7f));
        auto gt = [](u32 s, u32 t) { return s > t; };
        auto low_gt = [](u32 s) { return (s & 0xffu) > 0x7fu; };
        store32x(r32, select32(m1 & m2, splat32(1), splat32(0)));
        bool masks_ok = true;
        for (int i = 0; i < L32; ++i)
            masks_ok = masks_ok && r32[i] == u32{gt(c32[i], d32[i]) && low_gt(c32[i])};
        store32x(r32, select32(m1 | m2, splat32(1), splat32(0)));
        for (int i = 0; i < L32; ++i)
            masks_ok = masks_ok && r32[i] == u32{gt(c32[i], d32[i]) || low_gt(c32[i])};
        store32x(r32, select32(m1 ^ m2, splat32(1), splat32(0)));
        for (int i = 0; i < L32; ++i)
            masks_ok = masks_ok && r32[i] == u32{gt(c32[i], d32[i]) != low_gt(c32[i])};
        store32x(r32, select32(and_not(m1, m2), ca, cb));
        for (int i = 0; i < L32; ++i)
            masks_ok =
                masks_ok && r32[i] == (gt(c32[i], d32[i]) && !low_gt(c32[i]) ? c32[i] : d32[i]);
        EXPECT(masks_ok, "mask32 &, |, ^, and_not, select32");
        // Variable shifts: counts 0..40 (from 32 on, zero).
        std::uint32_t counts32[L32];
        for (int i = 0; i < L32; ++i) counts32[i] = static_cast<std::uint32_t>(rng() % 41);
        store32x(r32, shift_left32_var(ca, load32(counts32)));
        bool shift32_ok = true;
        for (int i = 0; i < L32; ++i)
            shift32_ok = shift32_ok && r32[i] == (counts32[i] >= 32 ? 0 : c32[i] << counts32[i]);
        EXPECT(shift32_ok, "shift_left32_var");
        store32x(r32, shift_right32_var(ca, load32(counts32)));
        shift32_ok = true;
        for (int i = 0; i < L32; ++i)
            shift32_ok = shift32_ok && r32[i] == (counts32[i] >= 32 ? 0 : c32[i] >> counts32[i]);
        EXPECT(shift32_ok, "shift_right32_var");
        // byte_length32 on lanes below 2^31, every power of two and its neighbours among them.
        std::uint32_t below31[L32];
        bool length_ok = true;
        for (int trial = 0; trial < 3; ++trial) {
            for (int i = 0; i < L32; ++i) {
                const int bit = static_cast<int>(rng() % 31);
                below31[i] = trial == 0   ? c32[i] & 0x7fffffffu
                             : trial == 1 ? (1u << bit) - static_cast<u32>(rng() % 2)
                                          : static_cast<u32>(rng() % 3);
            }
            store32x(r32, byte_length32(load32(below31)));
            for (int i = 0; i < L32; ++i) {
                u32 want = 0;
                for (u32 v = below31[i]; v != 0; v >>= 8) ++want;
                length_ok = length_ok && r32[i] == want;
            }
        }
        EXPECT(length_ok, "byte_length32");
        // byte_length64 on lanes whose bytes are below 128 (digits, say), with zero bytes anywhere.
        std::uint64_t digit_lanes[L];
        bool length64_ok = true;
        for (int trial = 0; trial < 4; ++trial) {
            for (int i = 0; i < L; ++i) {
                std::uint64_t v = 0;
                for (int b = 0; b < 8; ++b) {
                    if (rng() % 3 != 0)
                        v |= std::uint64_t(rng() % (trial == 0 ? 128 : 10)) << (8 * b);
                }
                digit_lanes[i] = trial == 3 ? v & (~std::uint64_t{0} >> (8 * (rng() % 9) % 64)) : v;
            }
            store64(got, byte_length64(load64(digit_lanes)));
            for (int i = 0; i < L; ++i) {
                std::uint64_t want = 0;
                for (std::uint64_t v = digit_lanes[i]; v != 0; v >>= 8) ++want;
                length64_ok = length64_ok && got[i] == want;
            }
        }
        EXPECT(length64_ok, "byte_length64");
        alignas(64) std::uint32_t table16[16];
        std::uint32_t index16[L32];
        for (std::uint32_t& t : table16) t = static_cast<std::uint32_t>(rng());
        for (int i = 0; i < L32; ++i) index16[i] = static_cast<std::uint32_t>(rng() % 16);
        store32x(r32, lookup16_32(table16, load32(index16)));
        bool lookup16_ok = true;
        for (int i = 0; i < L32; ++i) lookup16_ok = lookup16_ok && r32[i] == table16[index16[i]];
        EXPECT(lookup16_ok, "lookup16_32");
        // widen32, mul_wide32 and narrow32: the same order; zip32 and as_u32 / as_u64.
        u64x first, second, p_first, p_second, c_first, c_second;
        widen32(ca, &first, &second);
        widen32(cb, &c_first, &c_second);
        mul_wide32(ca, cb, &p_first, &p_second);
        std::uint64_t w1[L], w2[L], m_1[L], m_2[L];
        store64(w1, first);
        store64(w2, second);
        store64(m_1, mul_low32(first, c_first));
        store64(m_2, mul_low32(second, c_second));
        store64(hi, p_first);
        store64(lo, p_second);
        bool wide32_ok =
            std::memcmp(hi, m_1, sizeof hi) == 0 && std::memcmp(lo, m_2, sizeof lo) == 0;
        std::uint64_t seen = 0;  // each lane of ca once, zero-extended
        for (int i = 0; i < L; ++i) {
            wide32_ok = wide32_ok && (w1[i] >> 32) == 0 && (w2[i] >> 32) == 0;
            for (int j = 0; j < L32; ++j) {
                if (w1[i] == c32[j]) seen |= std::uint64_t{1} << j;
                if (w2[i] == c32[j]) seen |= std::uint64_t{1} << j;
            }
        }
        wide32_ok = wide32_ok && seen == (std::uint64_t{1} << L32) - 1;
        store32x(r32, narrow32(first, second));
        wide32_ok = wide32_ok && std::memcmp(r32, c32, sizeof r32) == 0;
        store32x(r32, narrow32(shift_left<32>(first) | shift_right<32>(p_first),
                               shift_left<32>(second) | shift_right<32>(p_second)));
        for (int i = 0; i < L32; ++i)
            wide32_ok =
                wide32_ok && r32[i] == static_cast<u32>((std::uint64_t{c32[i]} * d32[i]) >> 32);
        EXPECT(wide32_ok, "widen32, mul_wide32, narrow32");
        zip32(ca, cb, &first, &second);
        store64(w1, first);
        store64(w2, second);
        bool zip_ok = true;
        for (int i = 0; i < L; ++i) {
            zip_ok = zip_ok && w1[i] == (c32[i] | std::uint64_t{d32[i]} << 32) &&
                     w2[i] == (c32[L + i] | std::uint64_t{d32[L + i]} << 32);
        }
        EXPECT(zip_ok, "zip32");
        std::uint64_t zipped[2 * L];
        store_zip32(zipped, ca, cb);
        EXPECT(
            std::memcmp(zipped, w1, sizeof w1) == 0 && std::memcmp(zipped + L, w2, sizeof w2) == 0,
            "store_zip32");
        store32x(r32, unzip_low32(first, second));
        EXPECT(std::memcmp(r32, c32, sizeof r32) == 0, "unzip_low32");
        store64(w1, as_u64(ca));
        store32x(r32, as_u32(load64(w1)));
        bool as_ok = std::memcmp(r32, c32, sizeof r32) == 0;
        for (int i = 0; i < L; ++i)
            as_ok = as_ok && w1[i] == (c32[2 * i] | std::uint64_t{c32[2 * i + 1]} << 32);
        EXPECT(as_ok, "as_u64 / as_u32");
    }
#undef EXPECT
    return failed;
}
