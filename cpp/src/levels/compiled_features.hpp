// Internal, for the files under levels/ only: which levels' code this translation unit compiles,
// and the CPU features the compiler may use in it (its flags, as the predefined macros say), so
// that each level's implementation.cpp checks at compile time that its flags give every feature it
// requires. A level's files compile their code under its TENSORB64_COMPILES_* and to nothing
// elsewhere; its implementation.cpp then names no functions (dispatch skips it).
#pragma once

#include "dispatch/cpu_features.hpp"

#if (defined(__x86_64__) || defined(_M_X64)) && defined(__AVX2__)
#define TENSORB64_COMPILES_AVX2 1
#else
#define TENSORB64_COMPILES_AVX2 0
#endif
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__AVX512F__)
#define TENSORB64_COMPILES_AVX512 1
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized and -Wuninitialized on their own
// _mm512_undefined_*() (GCC bug 105593, fixed in GCC 13); for every file of the level, which
// includes this before <immintrin.h>.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#else
#define TENSORB64_COMPILES_AVX512 0
#endif
// NEON is baseline on little-endian AArch64 (no flags); the NEON encoder assumes little-endian.
#if (defined(__aarch64__) || defined(_M_ARM64)) && !defined(__AARCH64EB__)
#define TENSORB64_COMPILES_NEON 1
#else
#define TENSORB64_COMPILES_NEON 0
#endif

namespace tensorb64 {
namespace {
// Internal linkage: each translation unit has its own. MSVC's /arch does not define a macro per
// feature, so there the check is skipped (compile_flags_known is false).
#if defined(__GNUC__) || defined(__clang__)
constexpr bool compile_flags_known = true;
#else
constexpr bool compile_flags_known = false;
#endif
constexpr cpu_features compiled_features = 0
#if defined(__AVX__)
                                           | feature::avx
#endif
#if defined(__AVX2__)
                                           | feature::avx2
#endif
#if defined(__F16C__)
                                           | feature::f16c
#endif
#if defined(__FMA__)
                                           | feature::fma
#endif
#if defined(__BMI2__)
                                           | feature::bmi2
#endif
#if defined(__AVX512F__)
                                           | feature::avx512f
#endif
#if defined(__AVX512BW__)
                                           | feature::avx512bw
#endif
#if defined(__AVX512VL__)
                                           | feature::avx512vl
#endif
#if defined(__AVX512DQ__)
                                           | feature::avx512dq
#endif
#if defined(__AVX512VBMI__)
                                           | feature::avx512vbmi
#endif
#if defined(__AVX512VBMI2__)
                                           | feature::avx512vbmi2
#endif
#if defined(__POPCNT__)
                                           | feature::popcnt
#endif
#if (defined(__aarch64__) || defined(_M_ARM64)) && !defined(__AARCH64EB__)
                                           | feature::neon
#endif
    ;

// Whether this translation unit was compiled with every feature in `required`.
constexpr bool compiled_with(cpu_features required) {
    return !compile_flags_known || (required & ~compiled_features) == 0;
}
}  // namespace

}  // namespace tensorb64
