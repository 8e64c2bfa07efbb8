// Tests of the vector vocabulary (src/levels/vocabulary.hpp): every operation of each SIMD level
// this build compiled and this CPU runs, against a scalar model of its contract
// (vocabulary_checks.hpp, compiled once per level with that level's flags:
// vocabulary_tests_<level>.cpp). The kernels written over the vocabulary are tested on their own
// (number_parser_tests, core_tests); this names the operation that broke.
#include <cstdio>

#include "check.hpp"
#include "tensorb64/tensorb64.hpp"

long vocabulary_checks_avx2();
long vocabulary_checks_avx512();
long vocabulary_checks_neon();

int main() {
    struct level {
        tensorb64::simd_level id;
        long (*checks)();
    };
    const level levels[] = {{tensorb64::simd_level::avx2, vocabulary_checks_avx2},
                            {tensorb64::simd_level::avx512, vocabulary_checks_avx512},
                            {tensorb64::simd_level::neon, vocabulary_checks_neon}};
    int ran = 0;
    for (const level& l : levels) {
        bool available = false;
        for (tensorb64::simd_level a : tensorb64::available_simd_levels()) available |= a == l.id;
        if (!available) continue;  // not compiled here, or this CPU lacks it
        const long failed = l.checks();
        CHECK(failed == 0);
        std::printf("vocabulary %s: %ld failed\n", tensorb64::to_string(l.id), failed);
        ++ran;
    }
    std::printf("vocabulary levels run: %d\n", ran);
    std::printf("%ld passed, %ld failed\n", test_check::passed, test_check::failed);
    return test_check::failed == 0 ? 0 : 1;
}
