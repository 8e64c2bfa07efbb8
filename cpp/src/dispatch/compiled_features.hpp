// Internal, for the kernel translation units only: the CPU features the compiler may use in the
// including translation unit (its flags, as the predefined macros say), so that each kernel can
// check at compile time that its flags give every feature its table row requires (kernels.hpp).
#pragma once

#include "dispatch/cpu_features.hpp"

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
